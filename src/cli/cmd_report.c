/* cmd_report.c — `enpu report STORE [--replay DIR] [--out DIR] [--job JOB.json]
 * [--slack X] [--gnuplot PROG] [--numbers FILE]`: write report.md with tables and gnuplot PNG plots of a
 * plan store (and of a replay); `enpu report paper --out DIR --numbers FILE MANIFEST...`:
 * the README of the paper's evaluation (tools/paper.py runs it). The report module does
 * the work; this file parses.
 *
 * Exit status: 0 ok; 1 the store, job, replay or gnuplot failed; 2 usage error. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "cli_internal.h"
#include "config.h"
#include "report.h"
#include "planstore.h"
#include "store.h"

static int run(void *args);
static int run_paper(void *args);

typedef struct {
  const char *store, *out, *replay, *job, *gnuplot, *numbers;
  double slack; /* a fraction; -1: the largest stored */
  int json, sweep;
} report_args;

/* --slack as `enpu query` reads it (planstore_parse_arg): a fraction, or "5%". */
static int accept_slack(const char *v, void *args, char *expected, size_t len) {
  return cli_planstore_arg(PLANSTORE_ARG_SLACK, v, &((report_args *)args)->slack, expected, len);
}

/* clang-format off */
#define GNUPLOT_OPT(T, field)                                                                      \
  {.name = "gnuplot", .type = CLI_STRING, .at = offsetof(T, field), .meta = "PROG",                \
   .help = "gnuplot program (default: gnuplot on PATH)"}

static const cli_opt opts[] = {
    {.name = "out", .type = CLI_STRING, .at = offsetof(report_args, out), .meta = "DIR",
     .help = "output directory (default: results/<job name>/, the name from the\nstore's job)"},
    {.name = "replay", .type = CLI_STRING, .at = offsetof(report_args, replay), .meta = "DIR",
     .help = "a directory written by `enpu replay --out DIR`"},
    {.name = "job", .type = CLI_STRING, .at = offsetof(report_args, job), .meta = "JOB",
     .help = "the store's job file: Figure 19 recomputes utilisations with the\ncost model from it"},
    {.name = "slack", .type = CLI_CUSTOM, .meta = "X", .accept = accept_slack,
     .help = "slack of the Figure 19 plans (closest stored; default the largest):\n" CLI_SLACK_HELP},
    {.name = "sweep", .type = CLI_FLAG, .at = offsetof(report_args, sweep),
     .help = "the store's chip sweep instead (DIR/sweep.md, default DIR: sweep/\nbeside the store): "
             "savings against each swept chip parameter\nat --slack (default: the smallest and largest)"},
    GNUPLOT_OPT(report_args, gnuplot),
    {.name = "numbers", .type = CLI_STRING, .at = offsetof(report_args, numbers), .meta = "FILE",
     .help = "the paper's stated numbers, drawn on the figures they are about\n(default: "
             CLI_PAPER_NUMBERS " when it exists)"},
    CLI_JSON_OPT(report_args, "the files written"),
};
/* clang-format on */

static void init(void *args) { ((report_args *)args)->slack = -1; }

typedef struct {
  paper_options o;
  cli_strings manifests;
  int json;
} paper_args;

/* clang-format off */
static const cli_opt paper_opts[] = {
    {.name = "out", .type = CLI_STRING, .at = offsetof(paper_args, o.out_dir), .meta = "DIR",
     .flags = CLI_REQUIRED, .help = "the output folder (the manifests' parent)"},
    {.name = "numbers", .type = CLI_STRING, .at = offsetof(paper_args, o.numbers_path), .meta = "FILE",
     .flags = CLI_REQUIRED, .help = "the paper's stated numbers"},
    GNUPLOT_OPT(paper_args, o.gnuplot),
    CLI_JSON_OPT(paper_args, "the files written"),
};

static const cli_spec spec = {.command = "report", .run = run, .init = init,
                              CLI_STORE_ARG(report_args, store), CLI_OPTS(opts, report_args)};

static const cli_spec paper_spec = {
    .command = "report paper", .run = run_paper, CLI_OPTS(paper_opts, paper_args),
    .pos = {"MANIFEST...", "manifest", 1, CLI_LIST_MAX, offsetof(paper_args, manifests)}};
/* clang-format on */
const cli_spec *const cli_report_specs[] = {&spec, &paper_spec, NULL};

/* What was written, as one JSON document ({"report": path} or {"readme": path}). */
static int print_written(const char *key, const char *path) {
  json_t *doc = json_pack("{s:s}", key, path);
  const int rc = doc ? cli_print_json(doc) : cli_fail("report", "cannot build JSON output");
  json_decref(doc);
  return rc;
}

/* What a report's write (rc) ends in: its error, or the markdown it wrote (md, freed
 * here) said as a line or, with --json, as {"report": md}. */
static int say_written(int rc, char *md, int json, const enpu_err *err) {
  int status = 0;
  if (rc < 0) status = cli_fail("report", err->msg);
  else if (json) status = print_written("report", md);
  else printf("wrote %s\n", md);
  free(md);
  return status;
}

/* `enpu report paper ...`. */
static int run_paper(void *args) {
  paper_args *a = args;
  a->o.manifests = a->manifests.v;
  a->o.nmanifests = a->manifests.n;
  enpu_err err = {0};
  if (paper_write(&a->o, &err) < 0) return cli_fail("report paper", err.msg);
  char readme[2 * CONFIG_PATH_LEN];
  snprintf(readme, sizeof readme, "%s/README.md", a->o.out_dir);
  if (a->json) return print_written("readme", readme);
  printf("wrote %s\n", readme);
  return 0;
}

/* `enpu report STORE --sweep`: report_arch_write into --out, else sweep/ beside the store. */
static int run_sweep(const report_args *a) {
  char dir[CONFIG_PATH_LEN + 8];
  const char *slash = strrchr(a->store, '/');
  if (a->out) snprintf(dir, sizeof dir, "%s", a->out);
  else if (slash) snprintf(dir, sizeof dir, "%.*s/sweep", (int)(slash - a->store), a->store);
  else snprintf(dir, sizeof dir, "sweep");
  const report_arch_options o = {.store_path = a->store, .out_dir = dir, .gnuplot = a->gnuplot, .slack = a->slack};
  enpu_err err = {0};
  uint32_t version = 0;
  if (store_probe(a->store, &version, &err) < 0) return cli_fail("report", err.msg), cli_input_status(err.code);
  char *md = NULL;
  const int rc = report_arch_write(&o, &md, &err);
  return say_written(rc, md, a->json, &err);
}

static int run(void *args) {
  const report_args *a = args;
  if (a->sweep) return run_sweep(a);
  report_options o = {.store_path = a->store,
                      .out_dir = a->out,
                      .replay_dir = a->replay,
                      .gnuplot = a->gnuplot,
                      .freq_slack = a->slack};
  enpu_err err = {0};
  config_job *job = NULL;
  if (a->job && config_job_load(a->job, &job, &err) < 0)
    return cli_fail("report", err.msg), cli_input_status(err.code);
  o.job = job;
  paper_numbers *numbers = NULL;
  uint32_t version = 0; /* no such file, or none a plan store: bad input, not a failure */
  if (cli_load_paper_numbers(a->numbers, &numbers, &err) < 0 || store_probe(a->store, &version, &err) < 0) {
    paper_numbers_free(numbers);
    config_job_free(job);
    return cli_fail("report", err.msg), cli_input_status(err.code);
  }
  const report_overlay overlay = paper_overlay(numbers);
  o.overlay = numbers ? &overlay : NULL;
  char *md = NULL;
  const int rc = report_write(&o, &md, &err);
  const int status = say_written(rc, md, a->json, &err);
  paper_numbers_free(numbers);
  config_job_free(job);
  return status;
}
