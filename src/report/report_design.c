/* report_design.c — the report's design-space section: the figures of the paper's §4.4–§4.7
 * drawn from the policies a store holds (docs/policies.md, "Policy variants"):
 *   Figure 13  energy lost in the regulators vs slack, per policy;
 *   Figure 15  performance at 0 % slack per VU shadow register size (<base>@shadow=N);
 *   Figure 16  per-operator vs millisecond-epoch DVFS (dvfs-c, dvfs-c-ms, enpu-all, enpu-ms);
 *   Figure 17  eNPU with 3, 4 and 5 V/f domains (enpu-3dom, enpu-4dom, enpu-all);
 *   Figure 18  savings vs sequence length, per slack (the grid's buckets);
 *   Figure 21  none, PG only, DVFS only, PG + DVFS (nodvfs, pg, X, pg+X).
 * A figure whose policies the store lacks gets a one-line note instead.
 *
 * Every number is a mean over the ok buckets of a phase (Figure 18: of one sequence
 * length at the grid's smallest batch), computed from the plans table only. */
#include <jansson.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "report_internal.h"

static const char *const phase_name[2] = {"prefill", "decode"};
/* The y axis of every savings figure here: savings against the table's NoDVFS. */
#define SAVINGS_LABEL "energy savings vs " ENPU_POLICY_DISPLAY_NODVFS " (%)"

/* ---- aggregation ----------------------------------------------------------------- */

typedef double (*plan_metric)(const store_bucket_rec *b, const store_plan_rec *pl);

static double m_savings(const store_bucket_rec *b, const store_plan_rec *pl) {
  (void)b;
  return 100 * pl->savings_vs_nodvfs;
}

double report_regulator_loss_pct(const store_bucket_rec *b, const store_plan_rec *pl) {
  double l = 0;
  for (int c = 0; c < STORE_NSTATE; c++) l += pl->regulator_loss_nj[c];
  return 100 * l / b->e_nodvfs_nj;
}

double report_plan_overhead_pct(const store_plan_rec *pl) {
  return pl->budget == STORE_BUDGET_PAPER ? pl->paper_overhead_pct : pl->overhead_pct;
}

double report_plan_slowdown_pct(const store_bucket_rec *b, const store_plan_rec *pl) {
  const double t_ns = pl->budget == STORE_BUDGET_PAPER
                          ? pl->cp_time_ns + pl->paper_overhead_pct / 100 * b->t_nodvfs_ns
                          : pl->time_ns;
  return 100 * (t_ns - b->t_nodvfs_ns) / b->t_nodvfs_ns;
}

static double m_loss_share(const store_bucket_rec *b, const store_plan_rec *pl) {
  return pl->energy_nj > 0 ? report_regulator_loss_pct(b, pl) * b->e_nodvfs_nj / pl->energy_nj : NAN;
}

static double m_overhead(const store_bucket_rec *b, const store_plan_rec *pl) {
  (void)b;
  return pl->overhead_pct;
}

static double m_paper_overhead(const store_bucket_rec *b, const store_plan_rec *pl) {
  (void)b;
  return pl->paper_overhead_pct;
}

typedef struct {
  double mean, max;
  size_t n;
} stat;

/* `f` over the plans at `slack` of the ok buckets of `phase` (batch, seq: 0 = any). */
static stat metric(const store_policy_tables *p, int phase, double slack, int32_t batch, int32_t seq,
                   plan_metric f) {
  stat s = {0, -INFINITY, 0};
  for (size_t k = 0; p && k < p->nplans; k++) {
    const store_plan_rec *pl = &p->plans[k];
    const store_bucket_rec *b = &p->buckets[pl->bucket];
    if (b->status != STORE_BUCKET_OK || b->phase != phase || pl->slack != slack || (batch && b->batch != batch) ||
        (seq && b->seq != seq))
      continue;
    const double v = f(b, pl);
    s.mean += v, s.max = fmax(s.max, v), s.n++;
  }
  s.mean = s.n ? s.mean / (double)s.n : NAN;
  if (!s.n) s.max = NAN;
  return s;
}

static const store_policy_tables *policy(const store_contents *c, const char *name) {
  for (size_t i = 0; i < c->npolicies; i++)
    if (!strcmp(c->policies[i].name, name)) return &c->policies[i];
  return NULL;
}

/* The stored slacks (of the first policy), ascending. */
static size_t slacks_of(const store_contents *c, double *out, size_t cap) {
  size_t n = 0;
  const store_policy_tables *p = c->npolicies ? &c->policies[0] : NULL;
  for (size_t k = 0; p && k < p->nplans; k++) {
    const double s = p->plans[k].slack;
    size_t j = 0;
    while (j < n && out[j] < s) j++;
    if ((j < n && out[j] == s) || n == cap) continue;
    memmove(out + j + 1, out + j, (n - j) * sizeof *out);
    out[j] = s, n++;
  }
  return n;
}

/* ---- one line plot: a value per (x, series) ---------------------------------------- */

typedef struct {
  const char *stem, *title, *xlabel, *ylabel;
  int logx;
  size_t nx, ns;
  const double *x;           /* nx */
  const char *const *series; /* ns names */
  const double *y;           /* nx × ns, NaN: missing */
  const report_figure *fig;  /* what an overlay's values are drawn against, or NULL */
  const double *refs_x;      /* NULL: x is the slack; else fig->series[i] at refs_x[i] */
} line_plot;

static int draw(const report_ctx *r, const line_plot *lp, enpu_err *err) {
  char dat[80], gpn[80], png[80];
  snprintf(dat, sizeof dat, "%s.dat", lp->stem);
  snprintf(gpn, sizeof gpn, "%s.gp", lp->stem);
  snprintf(png, sizeof png, "%s.png", lp->stem);
  FILE *f = NULL;
  ENPU_FORWARD(report_file_open(r->dir, dat, &f, err));
  fprintf(f, "# %s\n# x", lp->title);
  for (size_t s = 0; s < lp->ns; s++) fprintf(f, " %s", lp->series[s]);
  fprintf(f, "\n");
  for (size_t i = 0; i < lp->nx; i++) {
    fprintf(f, "%.9g", lp->x[i]);
    for (size_t s = 0; s < lp->ns; s++) fprintf(f, " %.6f", lp->y[i * lp->ns + s]);
    fprintf(f, "\n");
  }
  ENPU_FORWARD(report_file_close(f, r->dir, dat, err));
  ENPU_FORWARD(report_file_open(r->dir, gpn, &f, err));
  report_gp_preamble(f, png, 520, lp->title);
  if (lp->fig) report_overlay_context(r->overlay, f, lp->fig);
  fprintf(f, "set xlabel '%s'\nset ylabel '%s'\nset key outside right top%s\n%s", lp->xlabel, lp->ylabel,
          lp->fig ? " samplen 2" : "", /* room for an overlay's longer entries */
          lp->logx  ? "set logscale x 2\n"
          : lp->fig ? "set offsets 0.3, 0.3, graph 0.05, graph 0.05\n" /* a reference line off the border */
                    : "set offsets 0.3, 0.3, 0, 0\n");
  fprintf(f, "plot");
  for (size_t s = 0; s < lp->ns; s++)
    fprintf(f, "%s '%s' using 1:%zu with linespoints lw 2 pt 7 title '%s'", s ? ", \\\n    " : " ", dat, 2 + s,
            lp->series[s]);
  if (lp->fig && lp->refs_x) report_overlay_marks(r->overlay, f, lp->fig, dat, REPORT_MARK_SLOWDOWN, lp->refs_x);
  else if (lp->fig) report_overlay_slack(r->overlay, f, lp->fig, dat);
  fprintf(f, "\n");
  ENPU_FORWARD(report_file_close(f, r->dir, gpn, err));
  return report_plots_add(r->plots, r->absdir, gpn, png, err);
}

/* The plot, then its image and its values as a markdown table (one row per x). */
static int draw_with_table(const report_ctx *r, FILE *md, const line_plot *lp, const char *x_head, enpu_err *err) {
  ENPU_FORWARD(draw(r, lp, err));
  fprintf(md, "![%s](%s.png)\n\n| %s |", lp->title, lp->stem, x_head);
  for (size_t s = 0; s < lp->ns; s++) fprintf(md, " %s |", lp->series[s]);
  fprintf(md, "\n|---:|");
  for (size_t s = 0; s < lp->ns; s++) fprintf(md, "---:|");
  fprintf(md, "\n");
  for (size_t i = 0; i < lp->nx; i++) {
    fprintf(md, "| %g |", lp->x[i]);
    for (size_t s = 0; s < lp->ns; s++)
      fprintf(md, isnan(lp->y[i * lp->ns + s]) ? " – |" : " %.3f |", lp->y[i * lp->ns + s]);
    fprintf(md, "\n");
  }
  fprintf(md, "\n");
  return ENPU_OK;
}

/* The paper's figure a slack figure's stem is (its stated values are drawn on it), NULL:
 * one whose quantity the paper states no value of (Figure 13's loss: only its growth). */
static const char *figure_of(const char *stem) {
  static const char *const map[][2] = {{"granularity", "16"}, {"domains", "17"}, {"gating", "21"}};
  for (size_t i = 0; i < sizeof map / sizeof *map; i++)
    if (!strcmp(stem, map[i][0])) return map[i][1];
  return NULL;
}

/* Figures whose x axis is the slack: series = policies, y = mean of `f`; plot and a
 * markdown table (one row per slack). */
static int by_slack(const report_ctx *r, FILE *md, const char *stem, const char *what, const char *const *names,
                    size_t np, int phase, plan_metric f, enpu_err *err) {
  double slacks[64], x[64], y[64 * 16];
  const size_t ns = slacks_of(r->c, slacks, 64);
  if (np > 16 || ns == 0) return ENPU_OK;
  for (size_t i = 0; i < ns; i++) {
    x[i] = 100 * slacks[i];
    for (size_t p = 0; p < np; p++) y[i * np + p] = metric(policy(r->c, names[p]), phase, slacks[i], 0, 0, f).mean;
  }
  char full_stem[64], title[160];
  snprintf(full_stem, sizeof full_stem, "%s_%s", stem, phase_name[phase]);
  snprintf(title, sizeof title, "%s: %s vs SLO slack (mean over buckets)", phase_name[phase], what);
  int cols[16];
  for (size_t p = 0; p < np; p++) cols[p] = 2 + (int)p;
  const report_figure fig = {figure_of(stem), phase, r->model, names, cols, np, true};
  const line_plot lp = {full_stem, title, "SLO slack (% of T_nodvfs)", what, 0, ns, np, x,
                        names,     y,     fig.figure ? &fig : NULL,    NULL};
  char head[64];
  snprintf(head, sizeof head, "%s: slack (%%)", phase_name[phase]);
  return draw_with_table(r, md, &lp, head, err);
}

/* The names among `want` the store holds (at most cap). */
static size_t present(const store_contents *c, const char *const *want, size_t nw, const char **out, size_t cap) {
  size_t n = 0;
  for (size_t i = 0; i < nw && n < cap; i++)
    if (policy(c, want[i])) out[n++] = want[i];
  return n;
}

static int both_phases(const report_ctx *r, FILE *md, const char *stem, const char *what, const char *const *names,
                       size_t np, plan_metric f, enpu_err *err) {
  for (int ph = 0; ph < 2; ph++) ENPU_FORWARD(by_slack(r, md, stem, what, names, np, ph, f, err));
  return ENPU_OK;
}

/* ---- Figure 13 ------------------------------------------------------------------- */

static int fig13(const report_ctx *r, FILE *md, enpu_err *err) {
  fprintf(md, "### Energy lost in the regulators (Figure 13)\n\n"
              "Σ over components of each plan's `regulator_loss_nj` (energy its regulators lose, "
              "inside its energy), mean over the ok buckets, in two readings: in %% of the "
              "bucket's " ENPU_POLICY_DISPLAY_NODVFS " energy, and in %% of the plan's own energy. The DVFS IVR's "
              "efficiency falls with its output voltage and rises with its load (Table 6); §4.4 "
              "has the conversion overhead grow slightly as the plans throttle more (~1.5 %% for "
              "prefill). A plan that throttles more also spends less, so its loss can fall in "
              "the first reading while its share grows in the second.\n\n");
  const char *names[REPORT_MAX_SERIES]; /* the compared policies (NoDVFS loses none) */
  size_t idx[REPORT_MAX_SERIES];
  const size_t n = report_headline_policies(r->c, 0, idx, REPORT_MAX_SERIES);
  for (size_t i = 0; i < n; i++) names[i] = r->c->policies[idx[i]].name;
  ENPU_FORWARD(both_phases(r, md, "regulator_loss", "regulator loss (% of " ENPU_POLICY_DISPLAY_NODVFS " energy)",
                           names, n, report_regulator_loss_pct, err));
  return both_phases(r, md, "regulator_loss_share", "regulator loss (% of the plan energy)", names, n, m_loss_share,
                     err);
}

/* ---- Figure 15 ------------------------------------------------------------------- */

/* The chip's shadow register count from the store's chip_json, or -1. */
static int chip_shadow(const store_contents *c) {
  json_error_t je;
  json_t *doc = c->chip_json ? json_loads(c->chip_json, 0, &je) : NULL;
  const json_t *v = json_object_get(json_object_get(doc, "vu"), "shadow_vregs");
  const int n = json_is_integer(v) ? (int)json_integer_value(v) : -1;
  json_decref(doc);
  return n;
}

typedef struct {
  const char *name;
  int shadow;
} shadow_point;

static int cmp_shadow(const void *a, const void *b) {
  return ((const shadow_point *)a)->shadow - ((const shadow_point *)b)->shadow;
}

static int fig15(const report_ctx *r, FILE *md, enpu_err *err) {
  fprintf(md, "### VU shadow register file size at 0 %% slack (Figure 15)\n\n");
  shadow_point pts[32];
  size_t n = 0;
  char base[STORE_NAME_LEN] = "";
  for (size_t i = 0; i < r->c->npolicies && n < 31; i++) {
    const char *nm = r->c->policies[i].name, *at = strstr(nm, "@shadow=");
    if (!at || (base[0] && (strncmp(nm, base, strlen(base)) || nm + strlen(base) != at))) continue;
    if (!base[0]) snprintf(base, sizeof base, "%.*s", (int)(at - nm), nm);
    pts[n++] = (shadow_point){nm, atoi(at + strlen("@shadow="))};
  }
  const int own = chip_shadow(r->c);
  int have_own = 0; /* the chip's own size, as a variant */
  for (size_t i = 0; i < n; i++) have_own |= pts[i].shadow == own;
  if (n && own >= 0 && !have_own && policy(r->c, base)) pts[n++] = (shadow_point){policy(r->c, base)->name, own};
  if (n == 0) {
    fprintf(md, "Not shown: the store has no `<policy>@shadow=N` policies.\n\n");
    return ENPU_OK;
  }
  qsort(pts, n, sizeof *pts, cmp_shadow);
  fprintf(md,
          "%s with the VU shadow register file sizes the store holds (the chip's is %d). "
          "`slowdown` is the plan's time over " ENPU_POLICY_DISPLAY_NODVFS
          "'s at 0 %% slack (what Figure 15 plots) in the "
          "store's budget mode (paper: the critical path plus the paper's overhead), `overhead` its "
          "whole time beyond the critical path, `paper overhead` the V/f transitions and what domain "
          "crossings cost the loops' throughput (§4.4, Figure 7; without the pipeline fill/drain and "
          "warmup), all in %% of T_nodvfs.\n\n"
          "| shadow registers | policy | phase | buckets | mean slowdown (%%) | max (%%) | mean overhead (%%) "
          "| mean paper overhead (%%) |\n"
          "|---:|---|---|---:|---:|---:|---:|---:|\n",
          base, own);
  double x[32], y[64];
  const char *series[2] = {"prefill", "decode"};
  for (size_t i = 0; i < n; i++) {
    x[i] = pts[i].shadow;
    for (int ph = 0; ph < 2; ph++) {
      const store_policy_tables *p = policy(r->c, pts[i].name);
      const stat s = metric(p, ph, 0, 0, 0, report_plan_slowdown_pct), o = metric(p, ph, 0, 0, 0, m_overhead),
                 po = metric(p, ph, 0, 0, 0, m_paper_overhead);
      y[i * 2 + (size_t)ph] = s.mean;
      if (s.n)
        fprintf(md, "| %d | %s | %s | %zu | %.4f | %.4f | %.4f | %.4f |\n", pts[i].shadow, pts[i].name,
                phase_name[ph], s.n, s.mean, s.max, o.mean, po.mean);
    }
  }
  fprintf(md, "\n![Figure 15](shadow.png)\n\n");
  /* the paper's bounds name the policies (the base is the chip's own size) at their x */
  const char *names[33];
  double at[33];
  size_t nn = 0;
  for (size_t i = 0; i < n; i++) names[nn] = pts[i].name, at[nn++] = pts[i].shadow;
  if (own >= 0 && policy(r->c, base)) names[nn] = policy(r->c, base)->name, at[nn++] = own;
  const report_figure fig = {"15", -1, r->model, names, NULL, nn, false};
  const line_plot lp = {"shadow",
                        "slowdown at 0 % slack vs VU shadow registers (mean over buckets)",
                        "shadow vector registers (count)",
                        "time over " ENPU_POLICY_DISPLAY_NODVFS " (%)",
                        0,
                        n,
                        2,
                        x,
                        series,
                        y,
                        &fig,
                        at};
  return draw(r, &lp, err);
}

/* ---- Figures 16, 17, 21 ----------------------------------------------------------- */

static int fig_set(const report_ctx *r, FILE *md, const char *heading, const char *text, const char *stem,
                   const char *const *want, size_t nw, size_t need, enpu_err *err) {
  const char *names[8];
  const size_t n = present(r->c, want, nw, names, 8);
  fprintf(md, "### %s\n\n", heading);
  if (n < need) {
    fprintf(md, "Not shown: the store holds %zu of its policies (", n);
    for (size_t i = 0; i < nw; i++) fprintf(md, "%s`%s`", i ? ", " : "", want[i]);
    fprintf(md, ").\n\n");
    return ENPU_OK;
  }
  fprintf(md, "%s\n\n", text);
  return both_phases(r, md, stem, SAVINGS_LABEL, names, n, m_savings, err);
}

/* Figure 21: for the first pg+X the store holds with X: none, PG only, X, pg+X. */
static int fig21(const report_ctx *r, FILE *md, enpu_err *err) {
  const config_policy_spec pg_enpu_all = {.base = CONFIG_POLICY_ENPU_ALL, .gate = true, .shadow_vregs = -1};
  char pg_enpu_all_name[CONFIG_NAME_LEN];
  config_policy_spec_name(&pg_enpu_all, pg_enpu_all_name);
  const char *x = NULL, *pgx = pg_enpu_all_name;
  for (size_t i = 0; i < r->c->npolicies && !x; i++) {
    const char *nm = r->c->policies[i].name;
    config_policy_spec gated, plain;
    char plain_name[CONFIG_NAME_LEN];
    if (!strcmp(nm, ENPU_POLICY_GATE_ALONE) || config_policy_spec_parse(nm, &gated) < 0 || !gated.gate) continue;
    plain = config_policy_spec_ungated(&gated);
    config_policy_spec_name(&plain, plain_name);
    const store_policy_tables *t = policy(r->c, plain_name);
    if (t) x = t->name, pgx = nm;
  }
  const char *want[] = {config_policy_name(CONFIG_POLICY_NODVFS), ENPU_POLICY_GATE_ALONE,
                        x ? x : config_policy_name(CONFIG_POLICY_ENPU_ALL), pgx};
  return fig_set(r, md, "DVFS and power gating (Figure 21)",
                 "None (`" ENPU_POLICY_NAME_NODVFS "`), PG only (`" ENPU_POLICY_GATE_ALONE
                 "`: ReGate-style gating on the " ENPU_POLICY_DISPLAY_NODVFS " schedule), "
                 "DVFS only and PG + DVFS (the DVFS plan first, then gating on its schedule; "
                 "finalisation keeps the gated plan only when it fits and saves energy).",
                 "gating", want, 4, 3, err);
}

/* ---- Figure 18 ------------------------------------------------------------------- */

/* The distinct seqs of `phase` at `batch` among p's ok buckets, ascending. */
static size_t seqs_of(const store_policy_tables *p, int phase, int32_t batch, int32_t *out, size_t cap) {
  size_t n = 0;
  for (size_t b = 0; b < p->nbuckets && n < cap; b++) {
    const store_bucket_rec *k = &p->buckets[b];
    if (k->status != STORE_BUCKET_OK || k->phase != phase || k->batch != batch) continue;
    size_t j = 0;
    while (j < n && out[j] != k->seq) j++;
    if (j == n) out[n++] = k->seq;
  }
  qsort(out, n, sizeof *out, enpu_cmp_i32);
  return n;
}

/* Series that lie on top of each other drawn once, labelled with every name they stand
 * for ("slack 2%, 5%, 10% (identical)"): y is nq rows of *ns columns, compacted in place.
 * Identical: every point within 1e-9 relative (or both NaN). */
static void merge_identical(size_t nq, size_t *ns, char (*names)[96], double *y) {
  size_t kept = 0, members[16] = {0};
  for (size_t s = 0; s < *ns; s++) {
    size_t u = 0;
    for (; u < kept; u++) {
      bool same = true;
      for (size_t q = 0; q < nq && same; q++) {
        const double a = y[q * *ns + s], b = y[q * *ns + u];
        same = (isnan(a) && isnan(b)) || fabs(a - b) <= 1e-9 * fmax(1.0, fmax(fabs(a), fabs(b)));
      }
      if (same) break;
    }
    if (u < kept) { /* "slack 2%" + " 5%": the unit once, the names in order */
      const size_t len = strlen(names[u]);
      snprintf(names[u] + len, sizeof names[u] - len, ", %s", names[s] + strlen("slack "));
      members[u]++;
      continue;
    }
    if (kept != s) {
      memcpy(names[kept], names[s], sizeof names[kept]);
      for (size_t q = 0; q < nq; q++) y[q * *ns + kept] = y[q * *ns + s];
    }
    members[kept++] = 1;
  }
  for (size_t u = 0; u < kept; u++)
    if (members[u] > 1) {
      const size_t len = strlen(names[u]);
      snprintf(names[u] + len, sizeof names[u] - len, " (identical)");
    }
  for (size_t q = 0; q < nq; q++) /* the rows to kept columns each */
    for (size_t u = 0; u < kept; u++) y[q * kept + u] = y[q * *ns + u];
  *ns = kept;
}

static int fig18_phase(const report_ctx *r, FILE *md, const store_policy_tables *p, int ph, enpu_err *err) {
  int32_t batch = INT32_MAX, seqs[64];
  for (size_t b = 0; b < p->nbuckets; b++)
    if (p->buckets[b].status == STORE_BUCKET_OK && p->buckets[b].phase == ph && p->buckets[b].batch < batch)
      batch = p->buckets[b].batch;
  const size_t nq = batch == INT32_MAX ? 0 : seqs_of(p, ph, batch, seqs, 64);
  double slacks[16], x[64], y[64 * 16];
  size_t ns = slacks_of(r->c, slacks, 16);
  if (nq < 2 || ns == 0) return ENPU_OK;
  char names[16][96];
  const char *series[16];
  for (size_t s = 0; s < ns; s++) snprintf(names[s], sizeof names[s], "slack %g%%", 100 * slacks[s]);
  for (size_t q = 0; q < nq; q++) {
    x[q] = seqs[q];
    for (size_t s = 0; s < ns; s++) y[q * ns + s] = metric(p, ph, slacks[s], batch, seqs[q], m_savings).mean;
  }
  merge_identical(nq, &ns, names, y);
  for (size_t s = 0; s < ns; s++) series[s] = names[s];
  char stem[32], title[160];
  snprintf(stem, sizeof stem, "seq_%s", phase_name[ph]);
  snprintf(title, sizeof title, "%s, %s, batch %d: energy savings vs sequence length", phase_name[ph], p->name,
           batch);
  const line_plot lp = {stem, title, "sequence length (tokens)", SAVINGS_LABEL, 1, nq, ns, x, series, y,
                        NULL, NULL};
  char head[32];
  snprintf(head, sizeof head, "%s seq", phase_name[ph]);
  return draw_with_table(r, md, &lp, head, err);
}

static int fig18(const report_ctx *r, FILE *md, enpu_err *err) {
  const char *want[] = {config_policy_name(CONFIG_POLICY_ENPU_ALL), config_policy_name(CONFIG_POLICY_ENPU_C)};
  const char *names[2];
  const size_t n = present(r->c, want, 2, names, 2);
  json_error_t je;
  json_t *model = r->c->model_json ? json_loads(r->c->model_json, 0, &je) : NULL;
  const char *mname = json_string_value(json_object_get(model, "name"));
  fprintf(md, "### Savings vs sequence length (Figure 18)\n\n");
  if (n == 0)
    fprintf(md, "Not shown: the store has neither `" ENPU_POLICY_NAME_ENPU_ALL "` nor `" ENPU_POLICY_NAME_ENPU_C
                "`.\n\n");
  else
    fprintf(md,
            "Model %s, policy %s: per sequence length of the grid, the savings of the bucket at the "
            "grid's smallest batch (one request), per slack. One store holds one model: the "
            "report of each model's store gives its curve.\n\n",
            mname ? mname : "?", names[0]);
  json_decref(model);
  for (int ph = 0; ph < 2 && n; ph++) ENPU_FORWARD(fig18_phase(r, md, policy(r->c, names[0]), ph, err));
  return ENPU_OK;
}

/* ---- the section ------------------------------------------------------------------ */

int report_design_section(const report_ctx *r, FILE *md, enpu_err *err) {
  fprintf(md, "## 4. The design space (Figures 13, 15, 16, 17, 18, 21)\n\n"
              "From the policies the store holds (docs/policies.md, \"Policy variants\"); means over the ok "
              "buckets of each phase.\n\n");
  ENPU_FORWARD(fig13(r, md, err));
  ENPU_FORWARD(fig15(r, md, err));
  const char *const gran[] = {config_policy_name(CONFIG_POLICY_DVFS_C), config_policy_name(CONFIG_POLICY_DVFS_C_MS),
                              config_policy_name(CONFIG_POLICY_ENPU_ALL),
                              config_policy_name(CONFIG_POLICY_ENPU_MS)};
  ENPU_FORWARD(fig_set(r, md, "Temporal and spatial DVFS granularity (Figure 16)",
                       "Per-operator DVFS (`" ENPU_POLICY_NAME_DVFS_C "`, `" ENPU_POLICY_NAME_ENPU_ALL
                       "`) against one V/f setting per "
                       "millisecond epoch (`" ENPU_POLICY_NAME_DVFS_C_MS "`, `" ENPU_POLICY_NAME_ENPU_MS
                       "`: operators merged into epochs of at "
                       "least the job's `epoch_ms` of " ENPU_POLICY_DISPLAY_NODVFS " time, §4.6).",
                       "granularity", gran, 4, 2, err));
  const char *const doms[] = {config_policy_name(CONFIG_POLICY_ENPU_3DOM),
                              config_policy_name(CONFIG_POLICY_ENPU_4DOM),
                              config_policy_name(CONFIG_POLICY_ENPU_ALL)};
  ENPU_FORWARD(fig_set(r, md, "V/f domain count (Figure 17)",
                       "eNPU with 3 domains (FE, SA, VU, SRAM one core domain; HBM; ICI), 4 (FE, SA, VU "
                       "one compute domain; SRAM; HBM; ICI) and 5 (`" ENPU_POLICY_NAME_ENPU_ALL "`).",
                       "domains", doms, 3, 2, err));
  ENPU_FORWARD(fig18(r, md, err));
  return fig21(r, md, err);
}
