/* cli_internal.h — the subcommands of `enpu` and the helpers they share (argument
 * parsing, JSON output). Each subcommand lives in cmd_<name>.c and returns the process
 * exit status: 0 ok, 1 the command failed (message already printed), 2 usage or input
 * error, 3 interrupted and resumable (farm), 4 the environment refused (no space, I/O
 * error, the store locked by another writer, no memory): nothing stored was lost and the
 * same command succeeds once that is fixed. */
#ifndef ENPU_CLI_INTERNAL_H
#define ENPU_CLI_INTERNAL_H

#include <jansson.h>
#include <stdint.h>
#include <stdio.h>

#include "farm.h"

typedef struct {
  const char *name;
  int (*run)(int argc, char **argv); /* argv[0] is the subcommand name */
  const char *summary;
} cli_command;

int cli_cmd_buckets(int argc, char **argv);
int cli_cmd_graph(int argc, char **argv);
int cli_cmd_op(int argc, char **argv);
int cli_cmd_compile(int argc, char **argv);
int cli_cmd_farm(int argc, char **argv);
int cli_cmd_store(int argc, char **argv);
int cli_cmd_query(int argc, char **argv);
int cli_cmd_replay(int argc, char **argv);
int cli_cmd_report(int argc, char **argv);
int cli_cmd_validate(int argc, char **argv);

/* `enpu farm`'s farm_options.finish_job (cmd_farm_finish.c): the job's summary.md and
 * validation; `options` is the run's farm_options. */
int cli_farm_finish_job(const farm_finished_job *f, void *options, enpu_err *err);

enum { CLI_EXIT_OK = 0, CLI_EXIT_FAILED = 1, CLI_EXIT_USAGE = 2, CLI_EXIT_INTERRUPTED = 3, CLI_EXIT_ENV = 4 };

/* The exit status for an error code: CLI_EXIT_ENV for ENPU_ERR_ENV and ENPU_ERR_NOMEM,
 * `otherwise` for the others. */
int cli_exit_status(int code, int otherwise);

/* Print a JSON document on stdout (one document, trailing newline); 0 or 1. */
int cli_print_json(json_t *doc);

/* Print "enpu <cmd>: <msg>" on stderr and return 1. */
int cli_fail(const char *cmd, const char *msg);

/* Parse a whole decimal int (no trailing characters, within int range); 0 or -1. */
int cli_parse_int(const char *s, int *out);

/* Parse a whole finite decimal number (no trailing characters); 0 or -1. */
int cli_parse_double(const char *s, double *out);

/* Parse a whole non-negative decimal integer within uint64_t (no sign, no trailing
 * characters); 0 or -1. */
int cli_parse_u64(const char *s, uint64_t *out);

/* Print "enpu <cmd>: <message>" and the command's usage on stderr; @return 2. */
int cli_usage_error(const char *cmd, void (*usage)(FILE *), const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

#endif /* ENPU_CLI_INTERNAL_H */
