/* report_governors.c — section 5 of the report: online governors beside the compiled
 * plans, from a replay directory (`enpu replay --governors ... --out DIR`): the actions
 * each governor took per 5-minute window (mean V/f state of each pool, the share of
 * decode time spent speculating and the mean draft depth, horizon and verification
 * depth), the learning curve of the PELM agent (mean reward of its decisions per window),
 * and the table "offline eNPU plans vs online governors" with, per governor and compiled
 * plan, where the governor beats the plan and where it loses, in numbers.
 *
 * Inputs: summary.json (runs with an "online" object are governed or speculative) and
 * actions_<run>.csv (columns found by their header names). */
#include <jansson.h>
#include <math.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "report_internal.h"

#define MAX_RUNS 16
enum { A_START, A_PREFILL, A_DECODE, A_SHARE, A_EXIT, A_DRAFT, A_VERIFY, A_REWARD, NA };
static const char *const a_names[NA] = {"start_s",     "prefill_state", "decode_state",  "spec_share",
                                        "exit_layers", "draft_tokens",  "verify_layers", "reward"};

typedef struct {
  char name[64];
  double (*v)[NA];
  size_t n;
} actions;

/* actions_<name>.csv of dir: every row's columns (empty cells NaN). */
static int load_actions(const char *dir, const char *name, actions *a, enpu_err *err) {
  char path[PATH_MAX], *text = NULL;
  size_t len = 0, cap = 0;
  snprintf(path, sizeof path, "%s/actions_%s.csv", dir, name);
  snprintf(a->name, sizeof a->name, "%s", name);
  ENPU_FORWARD(enpu_read_file_max(path, ENPU_TRACE_MAX_BYTES, &text, &len, err));
  char *save = NULL, *line = strtok_r(text, "\n", &save), *fields[32];
  long col[NA];
  size_t nf = 0, line_no = 1;
  int rc = line ? ENPU_OK : enpu_errorf(err, ENPU_ERR_PARSE, "%s:1: empty file, expected a header line", path);
  if (rc == ENPU_OK) rc = report_csv_header(path, line, a_names, NA, col, err);
  while (rc == ENPU_OK && (line = strtok_r(NULL, "\n", &save))) {
    line_no++;
    report_split_csv(line, fields, 32, &nf);
    if (enpu_grow((void **)&a->v, &cap, a->n + 1, sizeof *a->v) < 0) {
      rc = enpu_errorf(err, ENPU_ERR_NOMEM, "out of memory (%s)", path);
      break;
    }
    for (int k = 0; rc == ENPU_OK && k < NA; k++) {
      const char *f = (size_t)col[k] < nf ? fields[col[k]] : "";
      char *end = NULL;
      a->v[a->n][k] = *f ? strtod(f, &end) : NAN;
      if (*f && (end == f || *end))
        rc = enpu_errorf(err, ENPU_ERR_PARSE, "%s:%zu: column '%s': expected a number, got '%s'", path, line_no,
                         a_names[k], f);
    }
    a->n++;
  }
  free(text);
  return rc;
}

/* ---- plots ----------------------------------------------------------------------------- */

static int write_dat(const report_ctx *r, const actions *a, size_t n, double origin_h, enpu_err *err) {
  FILE *f = NULL;
  ENPU_FORWARD(report_file_open(r->dir, "governors.dat", &f, err));
  fprintf(f, "# per 5-minute window: hour of the day, then per run:");
  for (int k = 1; k < NA; k++) fprintf(f, " %s", a_names[k]);
  fprintf(f, "\n# runs:");
  for (size_t i = 0; i < n; i++) fprintf(f, " %s", a[i].name);
  fprintf(f, "\n");
  for (size_t w = 0; w < a[0].n; w++) {
    fprintf(f, "%.6f", origin_h + a[0].v[w][A_START] / 3600);
    for (size_t i = 0; i < n; i++)
      for (int k = 1; k < NA; k++) {
        double x = w < a[i].n ? a[i].v[w][k] : NAN;
        if (k == A_SHARE) x *= 100;
        fprintf(f, " %.6f", x);
      }
    fprintf(f, "\n");
  }
  return report_file_close(f, r->dir, "governors.dat", err);
}

/* One panel: column k of each run (its title suffix). A column no run has a value in
 * (runs that never speculate) is an empty panel saying so: gnuplot cannot autoscale it. */
static void gp_panel(FILE *f, const actions *a, size_t n, int k, const char *title, const char *ylabel) {
  fprintf(f, "set title '%s'\nset ylabel '%s'\n", title, ylabel);
  bool any = false;
  for (size_t i = 0; i < n; i++)
    for (size_t w = 0; w < a[i].n && !any; w++) any = isfinite(a[i].v[w][k]);
  if (!any) {
    fprintf(f, "set label 1 'no run has a value' at graph 0.5,0.5 center\n"
               "plot [GPVAL_X_MIN:GPVAL_X_MAX][0:1] NaN notitle\nunset label 1\n");
    return;
  }
  fprintf(f, "plot");
  for (size_t i = 0; i < n; i++)
    fprintf(f, "%s 'governors.dat' using 1:%zu with lines lw 2 lc %zu title '%s'", i ? ", \\\n    " : " ",
            2 + i * (NA - 1) + (size_t)(k - 1), i + 1, a[i].name);
  fprintf(f, "\n");
}

/* Close <stem>.gp and queue <stem>.png (drawn at the end of the report). */
static int run_plot(const report_ctx *r, FILE *f, const char *stem, enpu_err *err) {
  char gp[64], png[64];
  snprintf(gp, sizeof gp, "%s.gp", stem);
  snprintf(png, sizeof png, "%s.png", stem);
  ENPU_FORWARD(report_file_close(f, r->dir, gp, err));
  return report_plots_add(r->plots, r->absdir, gp, png, err);
}

static int plot_actions(const report_ctx *r, const actions *a, size_t n, enpu_err *err) {
  FILE *f = NULL;
  ENPU_FORWARD(report_file_open(r->dir, "governors_actions.gp", &f, err));
  report_gp_preamble(f, "governors_actions.png", 1100, "online governors: actions per 5-minute window");
  fprintf(f, "set multiplot layout 4,1\nset xlabel 'time of day (h)'\nset key outside right top\n"
             "set rmargin at screen 0.8\n"); /* the panels' time axes line up, keyed or not */
  gp_panel(f, a, n, A_PREFILL, "prefill nodes: mean chip-wide V/f state (time-weighted)", "V/f state (index)");
  gp_panel(f, a, n, A_DECODE, "decode nodes: mean chip-wide V/f state (time-weighted)", "V/f state (index)");
  gp_panel(f, a, n, A_SHARE, "decode time spent in speculation rounds", "share (%)");
  gp_panel(f, a, n, A_EXIT, "mean draft exit depth while speculating", "depth (layers)");
  fprintf(f, "unset multiplot\n");
  return run_plot(r, f, "governors_actions", err);
}

/* The learning curve of the runs that learn (a reward per window); *drawn 0 when none does. */
static int plot_learning(const report_ctx *r, const actions *a, size_t n, int *drawn, enpu_err *err) {
  *drawn = 0;
  for (size_t i = 0; i < n; i++)
    for (size_t w = 0; w < a[i].n; w++) *drawn |= isfinite(a[i].v[w][A_REWARD]);
  if (!*drawn) return ENPU_OK;
  FILE *f = NULL;
  ENPU_FORWARD(report_file_open(r->dir, "governors_learning.gp", &f, err));
  report_gp_preamble(f, "governors_learning.png", 420, "PELM learning curve");
  fprintf(
      f,
      "set xlabel 'time of day (h)'\nset ylabel 'mean reward per decision (dimensionless)'\nset key outside right top\n"
      "set title 'reward = -(energy share of TDP + w x late share) / (1 + w), per 5-minute window'\nplot");
  for (size_t i = 0, k = 0; i < n; i++) {
    bool any = false;
    for (size_t w = 0; w < a[i].n; w++) any |= isfinite(a[i].v[w][A_REWARD]);
    if (any)
      fprintf(f, "%s 'governors.dat' using 1:%zu with linespoints lw 2 lc %zu title '%s'", k++ ? ", \\\n    " : " ",
              2 + i * (NA - 1) + (A_REWARD - 1), i + 1, a[i].name);
  }
  fprintf(f, "\n");
  return run_plot(r, f, "governors_learning", err);
}

/* ---- tables --------------------------------------------------------------------------- */

static void compare_row(FILE *md, const char *name, const json_t *p) {
  const json_t *on = json_object_get(p, "online");
  const bool gov = json_is_true(json_object_get(on, "governor"));
  fprintf(md, "| %s | %s |", name, gov ? "online governor" : on ? "offline plan + speculation" : "offline plan");
  report_md_cell(md, report_jget(p, "energy_j", "total"), 1e-6, "%.3f");
  const double s[3] = {report_jget(p, "energy_savings", "total"), report_jget(p, "energy_savings", "prefill"),
                       report_jget(p, "energy_savings", "decode")};
  if (isfinite(s[0])) fprintf(md, " %.2f / %.2f / %.2f |", 100 * s[0], 100 * s[1], 100 * s[2]);
  else fprintf(md, " – |");
  report_md_cell(md, report_jget(p, "busy_energy_savings", "total"), 100, "%.2f");
  report_md_cell(md, report_jget(p, "slo_attainment", NULL), 100, "%.3f");
  fprintf(md, " %.1f / %.1f | %.1f / %.1f |", report_jget(p, "ttft_ms", "p50"), report_jget(p, "ttft_ms", "p99"),
          report_jget(p, "tpot_ms", "p50"), report_jget(p, "tpot_ms", "p99"));
  const double tokens = report_jget(on, "mean_tokens_per_round", NULL),
               lossy = report_jget(on, "lossy_tokens", NULL);
  report_md_cell(md, tokens > 0 ? tokens : NAN, 1, "%.3f");
  const double decoded = report_jget(p, "tokens", "decode_generated");
  if (isfinite(lossy) && decoded > 0) fprintf(md, " %.0f (%.1f %%) |", lossy, 100 * lossy / decoded);
  else fprintf(md, " – |");
  fprintf(md, "\n");
}

/* What to compare: a value and whether lower is better. */
typedef struct {
  const char *label, *key, *part;
  double scale;
  const char *unit;
  bool lower_better;
} metric;

static const metric metrics[] = {
    {"energy with idle", "energy_j", "total", 1e-6, "MJ", true},
    {"prefill busy energy", "busy_energy_j", "prefill", 1e-6, "MJ", true},
    {"decode busy energy", "busy_energy_j", "decode", 1e-6, "MJ", true},
    {"idle energy", "idle_energy_j", "total", 1e-6, "MJ", true},
    {"SLO attainment", "slo_attainment", NULL, 100, "%", false},
    {"TTFT p99", "ttft_ms", "p99", 1, "ms", true},
    {"TPOT p99", "tpot_ms", "p99", 1, "ms", true},
};
#define NMETRIC (sizeof metrics / sizeof metrics[0])

/* "beats it on ... ; loses on ..." for governor g against plan p. */
static void md_verdict(FILE *md, const char *gname, const json_t *g, const char *pname, const json_t *p) {
  fprintf(md, "- **%s vs %s**:", gname, pname);
  for (int pass = 0; pass < 2; pass++) {
    int listed = 0;
    for (size_t k = 0; k < NMETRIC; k++) {
      const metric *m = &metrics[k];
      const double a = report_jget(g, m->key, m->part) * m->scale, b = report_jget(p, m->key, m->part) * m->scale;
      if (!isfinite(a) || !isfinite(b) || a == b) continue;
      const bool better = m->lower_better ? a < b : a > b;
      if (better != (pass == 0)) continue;
      fprintf(md, "%s %s %.3g %s vs %.3g (%+.1f %%)",
              listed++ ? ","
              : pass   ? "; loses on"
                       : " beats it on",
              m->label, a, m->unit, b, b != 0 ? 100 * (a - b) / fabs(b) : NAN);
    }
    if (!listed) fprintf(md, "%s", pass ? "; loses on nothing measured" : " beats it on nothing measured");
  }
  fprintf(md, ".\n");
}

static void md_verdicts(FILE *md, const json_t *pols) {
  const char *gn, *pn;
  json_t *g, *p;
  json_object_foreach((json_t *)pols, gn, g) {
    const json_t *on = json_object_get(g, "online");
    if (!json_is_true(json_object_get(on, "governor"))) continue;
    json_object_foreach((json_t *)pols, pn, p) {
      if (json_object_get(p, "online") || config_policy_named(pn, CONFIG_POLICY_NODVFS)) continue;
      md_verdict(md, gn, g, pn, p);
    }
    const double r0 = report_jget(on, "reward_first10", NULL), r1 = report_jget(on, "reward_last90", NULL);
    if (isfinite(r0) && isfinite(r1))
      fprintf(md,
              "- **%s learning**: mean reward %.4f over its first 10 %% of the run, %.4f over the rest (%s by "
              "%.1f %%; %.0f training updates).\n",
              gn, r0, r1, r1 > r0 ? "better" : "worse", 100 * fabs((r1 - r0) / r0),
              report_jget(on, "updates", NULL));
  }
  fprintf(md, "\n");
}

int report_governors_section(const report_ctx *r, FILE *md, const char *dir, enpu_err *err) {
  if (!dir) return ENPU_OK;
  char path[PATH_MAX];
  snprintf(path, sizeof path, "%s/summary.json", dir);
  json_t *doc = report_summary_json(path);
  const json_t *pols = json_object_get(doc, "policies");
  actions a[MAX_RUNS];
  size_t n = 0;
  int rc = ENPU_OK, learning = 0;
  const char *name;
  json_t *p;
  json_object_foreach((json_t *)pols, name, p) if (rc == ENPU_OK && json_object_get(p, "online") && n < MAX_RUNS) {
    a[n] = (actions){0};
    rc = load_actions(dir, name, &a[n++], err);
  }
  if (rc == ENPU_OK && n > 0) {
    const double origin_h = report_jget(doc, "origin_time_of_day_h", NULL);
    rc = write_dat(r, a, n, isfinite(origin_h) ? origin_h : 0, err);
    if (rc == ENPU_OK) rc = plot_actions(r, a, n, err);
    if (rc == ENPU_OK) rc = plot_learning(r, a, n, &learning, err);
  }
  if (rc == ENPU_OK && n > 0) {
    fprintf(md,
            "## 5. Offline eNPU plans vs online governors\n\n"
            "Governors run the store's `" ENPU_POLICY_NAME_UNIFORM
            "` table (one chip-wide V/f state per node and control period); "
            "`+sd` runs add a fixed self-speculative configuration to a compiled plan. Actions per window%s:"
            "\n\n![actions](governors_actions.png)\n\n%s",
            learning ? " and the PELM agent's learning curve" : "",
            learning ? "![learning curve](governors_learning.png)\n\n" : "");
    report_md_policy_table(
        md,
        "| run | kind | energy with idle (MJ) | savings with idle total / prefill / decode (%) | "
        "busy-only savings (%) | SLO attainment (%) | TTFT p50 / p99 (ms) | TPOT p50 / p99 (ms) "
        "| tokens per speculation round | tokens verified below full depth (share of decode "
        "tokens) |\n|---|---|---:|---:|---:|---:|---:|---:|---:|---:|\n",
        pols, compare_row);
    md_verdicts(md, pols);
  }
  for (size_t i = 0; i < n; i++) free(a[i].v);
  json_decref(doc);
  return rc;
}
