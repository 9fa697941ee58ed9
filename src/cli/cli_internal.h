/* cli_internal.h — the subcommands of `enpu` and the helpers they share (argument
 * parsing, JSON output). Each subcommand lives in cmd_<name>.c and returns the process
 * exit status: 0 ok, 1 the command failed (message already printed), 2 usage or input
 * error, 3 interrupted and resumable (farm), 4 the environment refused (no space, I/O
 * error, the store locked by another writer, no memory): nothing stored was lost and the
 * same command succeeds once that is fixed. */
#ifndef ENPU_CLI_INTERNAL_H
#define ENPU_CLI_INTERNAL_H

#include <jansson.h>
#include <math.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "config.h"
#include "farm.h"
#include "graph.h"
#include "jobinit.h"
#include "paper.h"
#include "replay.h"

typedef struct cli_spec cli_spec;
typedef struct cli_parsed cli_parsed;

typedef struct {
  const char *name;
  const char *summary;
  const cli_spec *const *specs; /* the command's spec, or one per sub-command ("store info"),
                                   with the command's own first if it has one; NULL-terminated */
} cli_command;

/* The subcommands, in the order `enpu --help` lists them (cli_commands.c). */
extern const cli_command cli_commands[];
extern const int cli_ncommands;
extern const cli_spec *const cli_buckets_specs[];
extern const cli_spec *const cli_graph_specs[];
extern const cli_spec *const cli_op_specs[];
extern const cli_spec *const cli_compile_specs[];
extern const cli_spec *const cli_farm_specs[];
extern const cli_spec *const cli_store_specs[];
extern const cli_spec *const cli_query_specs[];
extern const cli_spec *const cli_replay_specs[];
extern const cli_spec *const cli_report_specs[];
extern const cli_spec *const cli_validate_specs[];
extern const cli_spec *const cli_model_specs[];
extern const cli_spec *const cli_trace_specs[];
extern const cli_spec *const cli_cache_specs[];
extern const cli_spec *const cli_job_specs[];
extern const cli_spec *const cli_plan_specs[];

/* Run command c on argv (argv[0] its name, argv[1] the sub-command when it has them): the
 * spec chosen, the arguments parsed by it into a fresh struct, then its run.
 * @return the exit status. */
int cli_run(const cli_command *c, int argc, char **argv);

/* The command table of docs/commands.md: one row per command and sub-command, its synopsis from
 * the option table it parses with and its summary (`enpu --help --markdown`). */
void cli_commands_markdown(FILE *out);

/* `enpu --version` on out: version and git describe, store format, HDF5 and MPI.
 * @return 0. */
int cli_version(FILE *out);

/* `enpu farm`'s farm_options.finish_job (cmd_farm_finish.c): the job's summary.md and
 * validation; `options` is the run's farm_options. */
int cli_farm_finish_job(const farm_finished_job *f, void *options, enpu_err *err);

/* Where a command's result cache is (cmd_cache.c): none with `off` (--no-cache); else
 * `given` (--cache DIR); else $ENPU_CACHE (a directory; "1", "on" or "default": the
 * default one; "", "0" or "off": none); else none, or with fallback_default the default
 * ($XDG_CACHE_HOME/enpu, ~/.cache/enpu). @return 1 with out filled, 0 none, or an error. */
int cli_cache_dir(const char *given, int off, int fallback_default, char *out, size_t len, enpu_err *err);

enum { CLI_EXIT_OK = 0, CLI_EXIT_FAILED = 1, CLI_EXIT_USAGE = 2, CLI_EXIT_INTERRUPTED = 3, CLI_EXIT_ENV = 4 };

/* The exit status for an error code: CLI_EXIT_ENV for ENPU_ERR_ENV and ENPU_ERR_NOMEM,
 * CLI_EXIT_INTERRUPTED for ENPU_ERR_STOPPED, `otherwise` for the others. */
int cli_exit_status(int code, int otherwise);

/* The exit status of an error met reading a command's inputs (its files, what they name,
 * its option values): CLI_EXIT_INTERRUPTED for a stop signal (ENPU_ERR_STOPPED),
 * CLI_EXIT_ENV when the environment refused (ENPU_ERR_ENV, NOMEM),
 * CLI_EXIT_FAILED for a broken invariant or an infeasible request (INTERNAL,
 * INFEASIBLE), CLI_EXIT_USAGE for every other (a file that cannot be opened, is
 * malformed, out of range or of the wrong kind). */
int cli_input_status(int code);

/* The same for a command that also reads the store at path: ENPU_ERR_FORMAT is a
 * damaged plan store or one of another format version (1), or a file that is no plan
 * store at all (store_probe; 2). */
int cli_store_status(const char *path, int code);

/* Print a JSON document on stdout (one document, trailing newline); 0 or 1. */
int cli_print_json(json_t *doc);

/* Under --json an error is a document too (cli_json.c): print
 * {"error": {"code": status, "message": message}} on stdout. */
void cli_json_error(int status, const char *message);
/* Run a command given --json: its stdout and stderr as they were, and when it exits
 * non-zero without having printed a document, the error document of the message it
 * printed last on stderr ("enpu <cmd>: ..."). @return run's status. */
int cli_json_run(const char *cmd, int (*run)(void *), void *args);

/* Write text to path ("-" or NULL: stdout) through a sibling temporary renamed over it.
 * @return 0, or a negative code with err naming the path. */
int cli_write_text(const char *path, const char *text, enpu_err *err);

/* The paper's stated numbers a report draws on its figures: `path`, or when it is NULL
 * CLI_PAPER_NUMBERS if that file exists (relative to the working directory, as the
 * repository's commands run), else none (*out NULL).
 * @return 0, or paper_numbers_load's error for a file that is given or exists. */
#define CLI_PAPER_NUMBERS "jobs/paper/paper-numbers.json"
int cli_load_paper_numbers(const char *path, paper_numbers **out, enpu_err *err);

/* A lookup argument's text (PLANSTORE_ARG_*) by the reader's rules, planstore_parse_arg,
 * the one parser of `enpu query`, `enpu report --slack` and the Python package: *out in
 * its unit (a slack as a fraction). An option's accept: 0, or -1 with `expected` the
 * reader's message less its "expected " and ", got '...'" (cli_parse_args adds them). */
int cli_planstore_arg(int which, const char *v, double *out, char *expected, size_t len);
/* The help of every --slack: one unit, one rule. */
#define CLI_SLACK_HELP                                                                  \
  "a fraction (0.05 = 5 %, at most 1), or a percent with its unit\n(5%, up to 1000%); " \
  "a bare number above 1 is refused"

/* Print "enpu <cmd>: <msg>" on stderr and return 1. */
int cli_fail(const char *cmd, const char *msg);

/* Parse a whole decimal int (no trailing characters, within int range); 0 or -1. */
int cli_parse_int(const char *s, int *out);

/* Parse a whole finite decimal number (no trailing characters); 0 or -1. */
int cli_parse_double(const char *s, double *out);

/* Parse a whole non-negative decimal integer within uint64_t (no sign, no trailing
 * characters); 0 or -1. */
int cli_parse_u64(const char *s, uint64_t *out);

/* ---------------------------------------------------------------------------------
 * The option parser (cli_args.c). A subcommand describes its arguments in a cli_spec:
 * one row per option (name, short alias, type, where the value goes in the command's
 * arguments struct, range, help), its positional arguments, a function giving the
 * defaults and one checking rules across options, and the function doing the work.
 * cli_run reads argv by it and runs the command; --help is printed from it. */

typedef enum {
  CLI_FLAG,   /* no value: the int field becomes 1 */
  CLI_INT,    /* int, within the range */
  CLI_U64,    /* uint64_t, within the range */
  CLI_DOUBLE, /* finite double, within the range */
  CLI_STRING, /* const char * (argv's), checked by accept when it is set */
  CLI_LIST,   /* cli_numbers: comma-separated numbers, each within the range */
  CLI_ENUM,   /* int: the index of the value in choices; -1 when not given */
  CLI_CUSTOM  /* accept parses the value and stores it */
} cli_type;

enum {
  CLI_REQUIRED = 1,   /* a usage error when absent */
  CLI_WHOLE = 2,      /* CLI_LIST: whole numbers */
  CLI_REPEATABLE = 4, /* CLI_CUSTOM: may be given several times (each adds a value); any
                         other option given twice is a usage error, never "the last wins" */
  CLI_WRAP = 8        /* help lines made from a table (config.h CONFIG_POLICY_NAMES_TEXT):
                         --help breaks them at spaces to its width */
};

#define CLI_LIST_MAX 64
typedef struct {
  double v[CLI_LIST_MAX];
  int n;
} cli_numbers;
typedef struct {
  const char *v[CLI_LIST_MAX];
  int n;
} cli_strings;

/* A number's range: a row of the input files' range table (config_range_check) where the
 * option sets a value a job or cluster file could hold, or the option's own bounds; all
 * zero for none. */
typedef struct {
  const char *doc, *path;
  double min, max;
  bool min_open;
} cli_range;
/* clang-format off */
#define CLI_CONFIG_RANGE(doc_, path_) {.doc = (doc_), .path = (path_)}
#define CLI_RANGE(lo, hi) {.min = (lo), .max = (hi)}
#define CLI_AT_LEAST(lo) {.min = (lo), .max = INFINITY}
#define CLI_ABOVE(lo) {.min = (lo), .max = INFINITY, .min_open = true}
/* clang-format on */

typedef struct {
  const char *name; /* long name without the dashes */
  char alias;       /* short alias (-x), or 0 */
  cli_type type;
  size_t at;        /* offsetof the field in the command's arguments struct */
  const char *meta; /* the value in help ("SEC"); an enum's default is its choices */
  const char *help; /* lines separated by '\n'; range and default are appended */
  cli_range range;
  const char *const *choices; /* CLI_ENUM: NULL-terminated */
  unsigned flags;
  int min_count, max_count; /* CLI_LIST: elements (0: 1 and CLI_LIST_MAX) */
  /* CLI_STRING: is v acceptable? CLI_CUSTOM: parse and store v. 0, or -1 with
   * `expected` saying what was expected. */
  int (*accept)(const char *v, void *args, char *expected, size_t len);
} cli_opt;

/* Positional arguments: min..max of them, into a const char * (max 1) or cli_strings. */
typedef struct {
  const char *meta; /* as in the synopsis: "JOB", "JOB...", "A B" */
  const char *what; /* in messages: "job file" */
  int min, max;
  size_t at;
  const char *help;
} cli_positional;

struct cli_spec {
  /* The command's work on the parsed arguments; @return the exit status. */
  int (*run)(void *args);
  const char *command; /* "compile", "store info"; its text is commands.md's "## compile" */
  cli_positional pos;
  const cli_opt *opts;
  int nopts;                /* at most 64 */
  size_t args_size;         /* of the arguments struct */
  void (*init)(void *args); /* the defaults (after zeroing); NULL: all zero */
  /* Rules across options: 0, or -1 with msg filled (a usage error). */
  int (*check)(const void *args, const cli_parsed *p, char *msg, size_t len);
};

struct cli_parsed {
  const cli_spec *spec;
  uint64_t given; /* bit k: opts[k] was given */
};

enum { CLI_PARSED = -1, CLI_HELP = 0, CLI_USAGE = 2 };

/* "prefill", "decode", NULL: the choices of --phase, index = config_phase. */
extern const char *const cli_phase_names[];

/* A bucket as the command line gives it. */
typedef struct {
  int phase; /* config_phase */
  int batch, seq;
} cli_bucket;

/* The rows of a bucket (--phase, --batch, --seq) into the cli_bucket field b of the
 * arguments struct T (graph, op, compile, query). (clang-format 14 takes a macro's
 * initializers for a block and misindents the second one.) */
/* clang-format off */
#define CLI_BUCKET_OPTS(T)                                                                         \
  {.name = "phase", .type = CLI_ENUM, .at = offsetof(T, b.phase), .choices = cli_phase_names,      \
   .flags = CLI_REQUIRED, .help = "the bucket's phase"},                                           \
  {.name = "batch", .type = CLI_INT, .at = offsetof(T, b.batch), .meta = "B",                      \
   .range = CLI_CONFIG_RANGE("job", "$.phases.*.batch[]"), .flags = CLI_REQUIRED,                 \
   .help = "requests in the batch"},                                                               \
  {.name = "seq", .type = CLI_INT, .at = offsetof(T, b.seq), .meta = "S",                          \
   .range = CLI_CONFIG_RANGE("job", "$.phases.*.seq[]"), .flags = CLI_REQUIRED,                   \
   .help = "prompt length (prefill) or KV length (decode)"}
/* clang-format on */

/* The one positional argument of most commands, a job file or a store, into the const
 * char * field f of the arguments struct T. */
#define CLI_JOB_ARG(T, f) .pos = {"JOB", "job file", 1, 1, offsetof(T, f)}
#define CLI_STORE_ARG(T, f) .pos = {"STORE", "store file", 1, 1, offsetof(T, f)}

/* The options and the arguments struct T of a spec. */
#define CLI_OPTS(opts_, T) .opts = (opts_), .nopts = (int)(sizeof(opts_) / sizeof(opts_)[0]), .args_size = sizeof(T)

/* What a command does with a job and the graph of one of its buckets: its exit status. */
typedef int (*cli_graph_fn)(const config_job *job, const graph *g, const void *args);

/* Run fn on the job at path and the graph of its bucket b, loaded and built here and freed
 * after. @return fn's status, or the exit status (cli_input_status) of a job or graph that
 * would not load, after printing the error. */
int cli_on_graph(const char *cmd, const char *path, const cli_bucket *b, cli_graph_fn fn, const void *args);

/* The --json row into the int field json of T. */
/* clang-format off */
#define CLI_JSON_OPT(T, what)                                                                      \
  {.name = "json", .type = CLI_FLAG, .at = offsetof(T, json),                                      \
   .help = "print " what " as one JSON document on stdout"}
/* clang-format on */

/* Parse argv[first..argc) by s into args (zeroed, then s->init). @return CLI_PARSED to go
 * on, CLI_HELP after --help or -h, CLI_USAGE with msg saying which argument and what was
 * expected. Prints nothing. */
int cli_parse_args(const cli_spec *s, int argc, char **argv, int first, void *args, cli_parsed *p, char *msg,
                   size_t len);

/* The section "## <s->command>" of commands.md: *about the text before the options, *exit
 * its last paragraph when it starts "Exit status" (else empty), both not NUL-terminated,
 * with their lengths. @return 0, or -1 when commands.md has no such section. */
int cli_help_section(const cli_spec *s, const char **about, int *about_len, const char **exit, int *exit_len);

/* Was the option `name` given? */
bool cli_has(const cli_parsed *p, const char *name);

/* For a spec's check: fill msg and @return -1. */
int cli_reject(char *msg, size_t len, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

/* Split list ("a,b,c") into at most max keys pointing into buf (a copy of it). @return
 * the count. */
int cli_split_keys(const char *list, char *buf, size_t cap, const char **keys, int max);

/* The help of s: synopsis, the command's section of commands.md, one entry per option
 * with its range and default, the section's exit status paragraph. */
void cli_help(const cli_spec *s, FILE *out);

/* ---------------------------------------------------------------------------------
 * `enpu job init` and `enpu plan` (cmd_job.c, cmd_plan.c): the same options of the rules. */

#define CLI_DEFAULT_CHIP "jobs/chips/tpuv5p.json"

typedef struct {
  const char *model, *chip, *trace, *out, *name, *ignore;
  int tp, ep, json, from; /* from: a replay_format, -1 the replay's CSV */
  cli_numbers percentiles, ttft, tpot;
  char ignore_buf[1024]; /* --ignore's keys, split into ignore_keys (o.ignore) */
  const char *ignore_keys[64];
  char converted[CONFIG_PATH_LEN + 16]; /* the trace converted by --from */
  jobinit_options o; /* coverage, budget, max batch, headroom, scale, utilisation: set by the rows */
} cli_job_init_args;

/* The rows of job init's rules into the cli_job_init_args field of T (which is T itself
 * for job init and T.init for plan). */
/* clang-format off */
#define CLI_JOB_INIT_OPTS_AT(T, f)                                                                   \
  {.name = "from", .type = CLI_ENUM, .at = offsetof(T, f from), .choices = replay_format_names,    \
   .help = "the trace's published format, converted into DIR/trace.csv as\n`enpu trace convert --from` does (default: the replay's CSV)"}, \
  {.name = "chip", .type = CLI_STRING, .at = offsetof(T, f chip), .meta = "CHIP.json",               \
   .help = "the chip file"},                                          \
  {.name = "name", .type = CLI_STRING, .at = offsetof(T, f name), .meta = "NAME",                    \
   .help = "the job's name (default: the model's)"},                                                 \
  {.name = "coverage", .type = CLI_DOUBLE, .at = offsetof(T, f o.coverage), .meta = "F",            \
   .range = CLI_RANGE(0.5, 1), .help = "fraction of the trace's requests the grid must hold"}, \
  {.name = "bucket-budget", .type = CLI_INT, .at = offsetof(T, f o.bucket_budget), .meta = "N",     \
   .range = CLI_RANGE(1, 4096), .help = "buckets per phase, the compile cost"},        \
  {.name = "max-batch", .type = CLI_INT, .at = offsetof(T, f o.max_batch), .meta = "B",             \
   .range = CLI_CONFIG_RANGE("cluster", "$.batching.max_batch"),                                     \
   .help = "the batch axis' top: 1, 2, 4, ... up to B"},                               \
  {.name = "headroom", .type = CLI_DOUBLE, .at = offsetof(T, f o.headroom), .meta = "F",            \
   .range = CLI_RANGE(0, 0.9), .help = "HBM fraction the largest bucket leaves free"}, \
  {.name = "tp", .type = CLI_INT, .at = offsetof(T, f tp), .meta = "N",                              \
   .range = CLI_CONFIG_RANGE("cluster", "$.*.parallel.tp"), .help = "tensor parallelism (default: by the memory rule)"}, \
  {.name = "ep", .type = CLI_INT, .at = offsetof(T, f ep), .meta = "N",                              \
   .range = CLI_CONFIG_RANGE("cluster", "$.*.parallel.ep"), .help = "expert parallelism (default: by the memory rule)"}, \
  {.name = "percentiles", .type = CLI_LIST, .at = offsetof(T, f percentiles), .meta = "P,P,...",    \
   .range = {.min = 0, .max = 100, .min_open = true}, .max_count = 8,                               \
   .help = "the SLO classes' length percentiles, increasing, at most 100\n(default 33,66,100: paper Table 2)"}, \
  {.name = "slo-scale", .type = CLI_DOUBLE, .at = offsetof(T, f o.slo_scale), .meta = "X",          \
   .range = CLI_RANGE(1, 1000), .help = "targets as X times the " ENPU_POLICY_DISPLAY_NODVFS " single-request latency\n(paper §4.1: 5)"}, \
  {.name = "ttft-ms", .type = CLI_LIST, .at = offsetof(T, f ttft), .meta = "MS,...",                 \
   .range = CLI_CONFIG_RANGE("cluster", "$.slo[].ttft_ms"), .max_count = 8,                          \
   .help = "TTFT targets, one per class (default: the rule's)"},                                      \
  {.name = "tpot-ms", .type = CLI_LIST, .at = offsetof(T, f tpot), .meta = "MS,...",                 \
   .range = CLI_CONFIG_RANGE("cluster", "$.slo[].tpot_ms"), .max_count = 8,                          \
   .help = "TPOT targets, one per class (default: the rule's)"},                                      \
  {.name = "utilisation", .type = CLI_DOUBLE, .at = offsetof(T, f o.utilisation), .meta = "F",      \
   .range = CLI_RANGE(0.05, 1), .help = "decode nodes' utilisation at the busiest minute"},           \
  {.name = "dtype-bytes", .type = CLI_INT, .at = offsetof(T, f o.dtype_bytes), .meta = "N",         \
   .range = CLI_RANGE(1, 4), .help = "a config.json's bytes per weight and activation, as\n`enpu model import --dtype-bytes` (default: from torch_dtype)"}, \
  {.name = "ignore", .type = CLI_STRING, .at = offsetof(T, f ignore), .meta = "KEY[,KEY...]",       \
   .help = "config.json keys to drop although the importer does not know\nthem, as `enpu model import --ignore`"}
#define CLI_JOB_INIT_OPTS(T) CLI_JOB_INIT_OPTS_AT(T, )
/* clang-format on */

/* The jobinit_options of parsed arguments, the output directory in dir (-o, else
 * runs/<name>). @return 0, or an exit status after printing the error. */
int cli_job_init_options(cli_job_init_args *a, const char *runs, char *dir, size_t cap);
/* With --from, the trace converted into dir/trace.csv (rewritten only when its bytes
 * change) and taken as the job's. @return 0, or an exit status after printing the error. */
int cli_job_init_trace(cli_job_init_args *a, const char *cmd);
/* The summary (or with --json the document) of a finished job init. */
int cli_job_init_print(const cli_job_init_args *a, const jobinit_result *r, FILE *out);

#endif /* ENPU_CLI_INTERNAL_H */
