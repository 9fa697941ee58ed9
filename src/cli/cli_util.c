/* cli_util.c — helpers shared by the subcommands: JSON output, errors, argument parsing. */
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>

#include "cli_internal.h"
#include "common.h"

int cli_print_json(json_t *doc) {
  char *text = json_dumps(doc, JSON_INDENT(2) | JSON_REAL_PRECISION(12));
  if (!text) return cli_fail("json", "cannot serialise output");
  fputs(text, stdout);
  fputc('\n', stdout);
  free(text);
  return 0;
}

int cli_exit_status(int code, int otherwise) {
  return code == ENPU_ERR_ENV || code == ENPU_ERR_NOMEM ? CLI_EXIT_ENV : otherwise;
}

int cli_fail(const char *cmd, const char *msg) {
  fprintf(stderr, "enpu %s: %s\n", cmd, msg);
  return 1;
}

int cli_parse_int(const char *s, int *out) {
  char *end = NULL;
  errno = 0;
  const long v = strtol(s, &end, 10);
  if (errno || end == s || *end || v < INT_MIN || v > INT_MAX) return -1;
  *out = (int)v;
  return 0;
}

int cli_parse_double(const char *s, double *out) {
  char *end = NULL;
  errno = 0;
  const double v = strtod(s, &end);
  if (errno || end == s || *end || !isfinite(v)) return -1;
  *out = v;
  return 0;
}

int cli_parse_u64(const char *s, uint64_t *out) {
  /* strtoull would wrap a leading '-' into a huge value; reject it up front */
  if (s[0] == '-') return -1;
  char *end = NULL;
  errno = 0;
  const unsigned long long v = strtoull(s, &end, 10);
  if (errno || end == s || *end) return -1;
  *out = (uint64_t)v;
  return 0;
}

int cli_usage_error(const char *cmd, void (*usage)(FILE *), const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  fprintf(stderr, "enpu %s: ", cmd);
  vfprintf(stderr, fmt, ap);
  fprintf(stderr, "\n");
  va_end(ap);
  usage(stderr);
  return 2;
}
