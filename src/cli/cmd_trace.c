/* cmd_trace.c — `enpu trace convert --from FORMAT IN -o OUT.csv`: a public request trace
 * (Azure 2023/2024, BurstGPT, Mooncake, a mapped CSV) as the replay's CSV
 * (replay_trace_convert does the work; this file parses options, writes, and reports). */
#include <stdlib.h>

#include "cli_internal.h"
#include "replay.h"

typedef struct {
  const char *in, *out, *map, *start;
  int from, skip_bad_rows, strict, json;
} convert_args;

static int convert_run(void *args);
static void convert_init(void *args) { ((convert_args *)args)->from = -1; }

static const cli_opt convert_opts[] = {
    {.name = "from",
     .type = CLI_ENUM,
     .at = offsetof(convert_args, from),
     .choices = replay_format_names,
     .flags = CLI_REQUIRED,
     .help = "the input's format"},
    {.name = "output",
     .alias = 'o',
     .type = CLI_STRING,
     .at = offsetof(convert_args, out),
     .meta = "OUT.csv",
     .flags = CLI_REQUIRED,
     .help = "the converted trace (\"-\": stdout)"},
    {.name = "map",
     .type = CLI_STRING,
     .at = offsetof(convert_args, map),
     .meta = "SPEC",
     .help = "--from csv: time=COL,context=COL,generated=COL[,unit=s|ms|us|datetime]\n(COL a header name or a "
             "1-based index)"},
    {.name = "start",
     .type = CLI_STRING,
     .at = offsetof(convert_args, start),
     .meta = "DATETIME",
     .help = "the date and time of relative time 0 (burstgpt, mooncake, csv in\ns/ms/us): YYYY-MM-DD HH:MM:SS "
             "(default 1970-01-01 00:00:00)"},
    {.name = "skip-bad-rows",
     .type = CLI_FLAG,
     .at = offsetof(convert_args, skip_bad_rows),
     .help = "skip and count malformed rows instead of failing on the first"},
    {.name = "strict",
     .type = CLI_FLAG,
     .at = offsetof(convert_args, strict),
     .help = "refuse rows out of time order (exit 2) instead of writing them\nsorted with a warning"},
    CLI_JSON_OPT(convert_args, "the counts {\"output\", \"rows\", \"skipped\", \"first_skipped\",\n\"unsorted\", "
                               "\"first_unsorted_line\"}"),
};

/* clang-format off */
static const cli_spec convert_spec = {.command = "trace convert", .run = convert_run, .init = convert_init,
                                      .pos = {"IN", "trace file", 1, 1, offsetof(convert_args, in)},
                                      CLI_OPTS(convert_opts, convert_args)};
/* clang-format on */
const cli_spec *const cli_trace_specs[] = {&convert_spec, NULL};

static int convert_run(void *args) {
  const convert_args *a = args;
  enpu_err err = {0};
  char *text = NULL, *csv = NULL;
  size_t len = 0;
  if (enpu_read_file_max(a->in, ENPU_TRACE_MAX_BYTES, &text, &len, &err) < 0) {
    cli_fail("trace convert", err.msg);
    return cli_exit_status(err.code, CLI_EXIT_USAGE);
  }
  const replay_convert_options o = {.format = (replay_format)a->from,
                                    .map = a->map,
                                    .start = a->start,
                                    .skip_bad_rows = a->skip_bad_rows,
                                    .strict = a->strict};
  replay_convert_counts n;
  int rc = replay_trace_convert(text, len, a->in, &o, &csv, &n, &err);
  free(text);
  if (rc == 0) rc = cli_write_text(a->out, csv, &err);
  free(csv);
  if (rc < 0) {
    cli_fail("trace convert", err.msg);
    return cli_exit_status(rc, CLI_EXIT_USAGE);
  }
  if (n.unsorted)
    fprintf(stderr,
            "enpu trace convert: warning: %zu rows of %s are earlier than the row before them (first: line %zu); "
            "written sorted by time (--strict refuses them)\n",
            n.unsorted, a->in, n.first_unsorted_line);
  if (a->json) {
    json_t *doc = json_pack("{s:s, s:I, s:I, s:s, s:I, s:I}", "output", a->out, "rows", (json_int_t)n.rows,
                            "skipped", (json_int_t)n.skipped, "first_skipped", n.first_skipped, "unsorted",
                            (json_int_t)n.unsorted, "first_unsorted_line", (json_int_t)n.first_unsorted_line);
    rc = doc ? cli_print_json(doc) : cli_fail("trace convert", "out of memory (JSON output)");
    json_decref(doc);
    return rc;
  }
  fprintf(stderr, "enpu trace convert: %zu rows written to %s, %zu bad rows skipped%s%s%s\n", n.rows, a->out,
          n.skipped, n.skipped ? " (first: " : "", n.skipped ? n.first_skipped : "", n.skipped ? ")" : "");
  return CLI_EXIT_OK;
}
