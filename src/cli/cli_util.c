/* cli_util.c — helpers shared by the subcommands: JSON output, errors, argument parsing. */
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli_internal.h"
#include "common.h"
#include "config.h"
#include "graph.h"
#include "planstore.h"
#include "store.h"

int cli_print_json(json_t *doc) {
  char *text = json_dumps(doc, JSON_INDENT(2) | JSON_REAL_PRECISION(12));
  if (!text) return cli_fail("json", "cannot serialise output");
  fputs(text, stdout);
  fputc('\n', stdout);
  free(text);
  return 0;
}

int cli_exit_status(int code, int otherwise) {
  if (code == ENPU_ERR_STOPPED) return CLI_EXIT_INTERRUPTED;
  return code == ENPU_ERR_ENV || code == ENPU_ERR_NOMEM ? CLI_EXIT_ENV : otherwise;
}

int cli_input_status(int code) {
  if (code == ENPU_ERR_STOPPED) return CLI_EXIT_INTERRUPTED;
  if (code == ENPU_ERR_ENV || code == ENPU_ERR_NOMEM) return CLI_EXIT_ENV;
  return code == ENPU_ERR_INTERNAL || code == ENPU_ERR_INFEASIBLE ? CLI_EXIT_FAILED : CLI_EXIT_USAGE;
}

int cli_store_status(const char *path, int code) {
  uint32_t version = 0;
  enpu_err probe = {0};
  if (code == ENPU_ERR_FORMAT) return store_probe(path, &version, &probe) == 0 ? CLI_EXIT_FAILED : CLI_EXIT_USAGE;
  return cli_input_status(code);
}

int cli_planstore_arg(int which, const char *v, double *out, char *expected, size_t len) {
  enpu_err err = {0};
  if (planstore_parse_arg(which, v, out, &err) == 0) return 0;
  const char *m = strncmp(err.msg, "expected ", 9) ? err.msg : err.msg + 9, *got = strstr(m, ", got '");
  snprintf(expected, len, "%.*s", got ? (int)(got - m) : (int)strlen(m), m);
  return -1;
}

int cli_fail(const char *cmd, const char *msg) {
  fprintf(stderr, "enpu %s: %s\n", cmd, msg);
  return 1;
}

int cli_split_keys(const char *list, char *buf, size_t cap, const char **keys, int max) {
  snprintf(buf, cap, "%s", list);
  int n = 0;
  for (char *save = NULL, *k = strtok_r(buf, ",", &save); k && n < max; k = strtok_r(NULL, ",", &save))
    keys[n++] = k;
  return n;
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

const char *const cli_phase_names[] = {[CONFIG_PREFILL] = "prefill", [CONFIG_DECODE] = "decode", NULL};

int cli_on_graph(const char *cmd, const char *path, const cli_bucket *b, cli_graph_fn fn, const void *args) {
  enpu_err err = {0};
  config_job *job = NULL;
  graph *g = NULL;
  int status;
  if (config_job_load(path, &job, &err) == 0 &&
      graph_build(job, (config_phase)b->phase, b->batch, b->seq, &g, &err) == 0) {
    status = fn(job, g, args);
  } else {
    cli_fail(cmd, err.msg);
    status = cli_input_status(err.code);
  }
  graph_free(g);
  config_job_free(job);
  return status;
}

int cli_write_text(const char *path, const char *text, enpu_err *err) {
  if (!path || !strcmp(path, "-")) {
    fputs(text, stdout);
    return fflush(stdout) ? enpu_errorf(err, enpu_errno_code(errno), "stdout: %s", strerror(errno)) : 0;
  }
  return enpu_file_write(path, text, strlen(text), 0, err); /* a reader never sees half a file */
}

int cli_load_paper_numbers(const char *path, paper_numbers **out, enpu_err *err) {
  *out = NULL;
  if (!path && access(CLI_PAPER_NUMBERS, R_OK) != 0) return 0;
  return paper_numbers_load(path ? path : CLI_PAPER_NUMBERS, out, err);
}
