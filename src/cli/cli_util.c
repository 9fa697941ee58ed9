/* cli_util.c — output helpers shared by the subcommands. */
#include <stdlib.h>

#include "cli_internal.h"

int cli_print_json(json_t *doc) {
  char *text = json_dumps(doc, JSON_INDENT(2) | JSON_REAL_PRECISION(12));
  if (!text) return cli_fail("json", "cannot serialise output");
  fputs(text, stdout);
  fputc('\n', stdout);
  free(text);
  return 0;
}

int cli_fail(const char *cmd, const char *msg) {
  fprintf(stderr, "enpu %s: %s\n", cmd, msg);
  return 1;
}
