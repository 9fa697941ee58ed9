/* cmd_report.c — `enpu report STORE [--replay DIR] [--out DIR] [--job JOB.json]
 * [--slack PCT] [--gnuplot PROG]`: write report.md with tables and gnuplot PNG plots of a
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

static void usage(FILE *out) {
  fprintf(out,
          "usage: enpu report STORE [--replay DIR] [--out DIR] [--job JOB.json] [--slack PCT]\n"
          "                   [--gnuplot PROG]\n"
          "       enpu report paper --out DIR --numbers FILE MANIFEST... (see enpu report paper --help)\n"
          "\n"
          "Write DIR/report.md with tables and PNG plots (gnuplot) of plan store STORE:\n"
          "savings vs slack per policy and phase (Figure 11), energy by component of the\n"
          "median buckets (Figure 12), chosen frequency vs utilisation at peak (Figure 19,\n"
          "needs --job) and energy over time of a replay (Figure 22, needs --replay).\n"
          "Each plot's data (.dat) and gnuplot script (.gp) are written next to it.\n"
          "\n"
          "  --out DIR      output directory (default: results/<job name>/, the name from the\n"
          "                 store's job)\n"
          "  --replay DIR   a directory written by `enpu replay --out DIR`\n"
          "  --job JOB      the store's job file: Figure 19 recomputes utilisations with the\n"
          "                 cost model from it\n"
          "  --slack PCT    slack of the Figure 19 plans, in %% (closest stored; default the\n"
          "                 largest)\n"
          "  --gnuplot PROG gnuplot program (default: gnuplot on PATH)\n"
          "  -h, --help     show this help\n");
}

typedef struct {
  const char *store, *out, *replay, *job, *slack, *gnuplot;
} report_args;

/* @return -1 to go on, or the exit status (0 after --help, 2 on a usage error). */
static int parse_args(int argc, char **argv, report_args *a) {
  for (int i = 1; i < argc; i++) {
    const char *s = argv[i];
    if (!strcmp(s, "--help") || !strcmp(s, "-h")) {
      usage(stdout);
      return 0;
    }
    const char **val = !strcmp(s, "--out")       ? &a->out
                       : !strcmp(s, "--replay")  ? &a->replay
                       : !strcmp(s, "--job")     ? &a->job
                       : !strcmp(s, "--slack")   ? &a->slack
                       : !strcmp(s, "--gnuplot") ? &a->gnuplot
                                                 : NULL;
    if (val) {
      if (i + 1 >= argc) return cli_usage_error("report", usage, "option '%s' needs a value", s);
      *val = argv[++i];
    } else if (s[0] == '-' && s[1] != '\0') {
      return cli_usage_error("report", usage, "unknown option '%s'", s);
    } else if (a->store) {
      return cli_usage_error("report", usage, "more than one store ('%s')", s);
    } else {
      a->store = s;
    }
  }
  if (!a->store) return cli_usage_error("report", usage, "missing store");
  return -1;
}

static void usage_paper(FILE *out) {
  fprintf(out,
          "usage: enpu report paper --out DIR --numbers FILE MANIFEST... [--gnuplot PROG]\n"
          "\n"
          "Write DIR/README.md: the paper's evaluation from the pipeline's outputs (tools/paper.py,\n"
          "`make paper`), one MANIFEST (<model>/manifest.json) per model: the headline claims and\n"
          "Tables 2, 3, 5, 7 and Figures 5, 11-22, ours beside the paper's stated numbers (FILE,\n"
          "jobs/paper/paper-numbers.json) in both budget modes, and one report per store.\n"
          "\n"
          "  --out DIR       the output folder (the manifests' parent)\n"
          "  --numbers FILE  the paper's stated numbers\n"
          "  --gnuplot PROG  gnuplot program (default: gnuplot on PATH)\n"
          "  -h, --help      show this help\n");
}

/* `enpu report paper ...`. */
static int report_paper(int argc, char **argv) {
  report_paper_options o = {0};
  const char **manifests = calloc((size_t)argc, sizeof *manifests);
  if (!manifests) return cli_fail("report paper", "out of memory");
  int st = -1;
  for (int i = 2; i < argc && st < 0; i++) {
    const char *s = argv[i];
    const char **val = !strcmp(s, "--out") ? &o.out_dir : !strcmp(s, "--numbers") ? &o.numbers_path
                       : !strcmp(s, "--gnuplot") ? &o.gnuplot : NULL;
    if (!strcmp(s, "--help") || !strcmp(s, "-h")) usage_paper(stdout), st = 0;
    else if (val && i + 1 >= argc) st = cli_usage_error("report paper", usage_paper, "option '%s' needs a value", s);
    else if (val) *val = argv[++i];
    else if (s[0] == '-' && s[1]) st = cli_usage_error("report paper", usage_paper, "unknown option '%s'", s);
    else manifests[o.nmanifests++] = s;
  }
  if (st < 0 && (!o.out_dir || !o.numbers_path || !o.nmanifests))
    st = cli_usage_error("report paper", usage_paper, "needs --out, --numbers and at least one manifest");
  if (st < 0) {
    o.manifests = manifests;
    enpu_err err = {0};
    st = report_paper_write(&o, &err) < 0 ? cli_fail("report paper", err.msg) : 0;
    if (!st) printf("wrote %s/README.md\n", o.out_dir);
  }
  free(manifests);
  return st;
}

int cli_cmd_report(int argc, char **argv) {
  if (argc >= 2 && !strcmp(argv[1], "paper")) return report_paper(argc, argv);
  report_args a = {0};
  const int st = parse_args(argc, argv, &a);
  if (st >= 0) return st;
  report_options o = {.store_path = a.store, .out_dir = a.out, .replay_dir = a.replay, .gnuplot = a.gnuplot,
                      .freq_slack = -1};
  if (a.slack) {
    char *end = NULL;
    const double pct = strtod(a.slack, &end);
    if (end == a.slack || *end || !isfinite(pct) || pct < 0)
      return cli_usage_error("report", usage, "--slack expects a percentage >= 0, got '%s'", a.slack);
    o.freq_slack = pct / 100;
  }
  enpu_err err = {0};
  config_job *job = NULL;
  if (a.job && config_job_load(a.job, &job, &err) < 0) return cli_fail("report", err.msg);
  o.job = job;
  char *md = NULL;
  int status = 0;
  if (report_write(&o, &md, &err) < 0) status = cli_fail("report", err.msg);
  else printf("wrote %s\n", md);
  free(md);
  config_job_free(job);
  return status;
}
