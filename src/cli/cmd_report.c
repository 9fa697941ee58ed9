/* cmd_report.c — `enpu report STORE [--replay DIR] [--out DIR] [--job JOB.json]
 * [--slack PCT] [--gnuplot PROG]`: write report.md with tables and gnuplot PNG plots of a
 * plan store (and of a replay). The report module does the work; this file parses.
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

int cli_cmd_report(int argc, char **argv) {
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
