/* cmd_trace.c — `enpu trace convert --from FORMAT IN -o OUT.csv`: a public request trace
 * (Azure 2023/2024, BurstGPT, Mooncake, a mapped CSV) as the replay's CSV
 * (replay_trace_convert does the work); `enpu trace burst IN (--window S,L,K | --onoff
 * ON,OFF,K) -o OUT.csv`: the trace with a burst, shaped by the replay's own rule
 * (replay_trace_shape), and `enpu trace burst IN --peak`: its peak arrivals per second.
 * This file parses options, writes, and reports. */
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
typedef struct {
  const char *in, *out;
  cli_numbers window, onoff;
  uint64_t seed;
  int peak, json;
} burst_args;

static int burst_run(void *args);
static void burst_init(void *args) { ((burst_args *)args)->seed = 1; }

static const cli_opt burst_opts[] = {
    {.name = "window",
     .type = CLI_LIST,
     .at = offsetof(burst_args, window),
     .meta = "START_S,LENGTH_S,K",
     .range = CLI_AT_LEAST(0),
     .min_count = 3,
     .max_count = 3,
     .help = "the requests arriving in the LENGTH_S seconds from START_S after\nthe first come K times (K >= 1)"},
    {.name = "onoff",
     .type = CLI_LIST,
     .at = offsetof(burst_args, onoff),
     .meta = "ON_S,OFF_S,K",
     .range = CLI_AT_LEAST(0),
     .min_count = 3,
     .max_count = 3,
     .help = "every ON_S + OFF_S seconds, the requests of its first ON_S come K\ntimes (K >= 1)"},
    {.name = "peak",
     .type = CLI_FLAG,
     .at = offsetof(burst_args, peak),
     .help = "print the trace's peak arrivals over one-second windows instead"},
    {.name = "seed",
     .type = CLI_U64,
     .at = offsetof(burst_args, seed),
     .meta = "N",
     .range = CLI_AT_LEAST(0),
     .help = "seed of the copies' draws"},
    {.name = "output",
     .alias = 'o',
     .type = CLI_STRING,
     .at = offsetof(burst_args, out),
     .meta = "OUT.csv",
     .help = "the shaped trace (\"-\": stdout)"},
    CLI_JSON_OPT(burst_args, "{\"output\", \"rows\", \"peak_arrivals_per_s\"}"),
};

static int burst_check(const void *args, const cli_parsed *p, char *msg, size_t len) {
  (void)p;
  const burst_args *a = args;
  const int shapes = (a->window.n > 0) + (a->onoff.n > 0);
  if (a->peak ? shapes > 0 || a->out : shapes != 1)
    return cli_reject(msg, len, "expected one of --window or --onoff (with -o OUT.csv), or --peak");
  if (!a->peak && !a->out) return cli_reject(msg, len, "--window and --onoff write a trace: give -o OUT.csv");
  const cli_numbers *w = a->window.n ? &a->window : &a->onoff;
  if (shapes && (!(w->v[1] > 0) || !(w->v[2] >= 1)))
    return cli_reject(
        msg, len,
        a->window.n ? "--window: expected LENGTH_S > 0 and K >= 1" : "--onoff: expected OFF_S > 0 and K >= 1");
  if (a->onoff.n && !(a->onoff.v[0] > 0)) return cli_reject(msg, len, "--onoff: expected ON_S > 0");
  return 0;
}

/* clang-format off */
static const cli_spec burst_spec = {.command = "trace burst", .run = burst_run, .init = burst_init,
                                    .check = burst_check,
                                    .pos = {"IN", "trace file", 1, 1, offsetof(burst_args, in)},
                                    CLI_OPTS(burst_opts, burst_args)};
/* clang-format on */
const cli_spec *const cli_trace_specs[] = {&convert_spec, &burst_spec, NULL};

/* The burst the options describe, on the replay's shaping (rate 1, no warp). */
static replay_shape burst_shape(const burst_args *a) {
  replay_shape sh = {.rate = 1, .warp = 1, .seed = a->seed};
  if (a->window.n)
    sh.burst = (replay_burst){.k = a->window.v[2], .start_s = a->window.v[0], .length_s = a->window.v[1]};
  else
    sh.burst = (replay_burst){
        .k = a->onoff.v[2], .length_s = a->onoff.v[0], .period_s = a->onoff.v[0] + a->onoff.v[1]};
  return sh;
}

static int burst_print(const burst_args *a, size_t rows, double peak) {
  if (a->json) {
    json_t *doc = json_pack("{s:s?, s:I, s:f}", "output", a->out, "rows", (json_int_t)rows, "peak_arrivals_per_s",
                            peak);
    const int rc = doc ? cli_print_json(doc) : cli_fail("trace burst", "out of memory (JSON output)");
    json_decref(doc);
    return rc;
  }
  if (a->peak) printf("peak %.0f arrivals/s; %zu rows\n", peak, rows);
  else fprintf(stderr, "enpu trace burst: %zu rows written to %s, peak %.0f arrivals/s\n", rows, a->out, peak);
  return CLI_EXIT_OK;
}

static int burst_run(void *args) {
  const burst_args *a = args;
  enpu_err err = {0};
  replay_trace *in = NULL, *out = NULL;
  char *csv = NULL;
  size_t len = 0;
  int rc = replay_trace_load(a->in, false, &in, &err);
  if (rc == 0 && !a->peak) {
    const replay_shape sh = burst_shape(a);
    rc = replay_trace_shape(in, &sh, &out, &err);
    if (rc == 0) rc = replay_trace_csv(out, &csv, &len, &err);
    if (rc == 0) rc = cli_write_text(a->out, csv, &err);
  }
  const replay_trace *t = out ? out : in;
  const int status = rc < 0 ? (cli_fail("trace burst", err.msg), cli_exit_status(rc, CLI_EXIT_USAGE))
                            : burst_print(a, t->count, replay_trace_peak_per_s(t));
  free(csv);
  replay_trace_free(out);
  replay_trace_free(in);
  return status;
}

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
