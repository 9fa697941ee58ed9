/* report_write.c — report.md, its data files, gnuplot scripts and PNGs for one store.
 *
 * Every figure is a pair <name>.dat + <name>.gp written next to <name>.png; the scripts
 * use relative file names, so `cd OUT && gnuplot <name>.gp` redraws a plot by hand.
 * Files go through report_io.c; the figures are queued (report_plots.c) and drawn in one
 * gnuplot at the end of the report call. report.md is written to a temporary name and
 * renamed once its figures are drawn, so a report that exists refers to plots that
 * exist. */
#include <errno.h>
#include <jansson.h>
#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "report.h"
#include "report_internal.h"

static const char *const slot_names[STORE_NENERGY] = {"SA", "VU", "SRAM", "HBM", "ICI", "FE", "other"};
static const char *const phase_names[2] = {"prefill", "decode"};

/* ---- Figure 11 ------------------------------------------------------------------- */

/* Distinct slacks of `phase` among the rows, ascending, into a malloc'd array. */
static int phase_slacks(const report_savings_row *rows, size_t n, int phase, double **out, size_t *ns) {
  *ns = 0;
  *out = enpu_calloc(n + 1, sizeof **out);
  if (!*out) return ENPU_ERR_NOMEM;
  for (size_t i = 0; i < n; i++) {
    if (rows[i].phase != phase) continue;
    size_t j = 0;
    while (j < *ns && (*out)[j] < rows[i].slack) j++;
    if (j < *ns && (*out)[j] == rows[i].slack) continue;
    memmove(*out + j + 1, *out + j, (*ns - j) * sizeof **out);
    (*out)[j] = rows[i].slack;
    (*ns)++;
  }
  return ENPU_OK;
}

static const report_savings_row *savings_at(const report_savings_row *rows, size_t n, const char *policy, int phase,
                                            double slack) {
  for (size_t i = 0; i < n; i++)
    if (rows[i].phase == phase && rows[i].slack == slack && !strcmp(rows[i].policy, policy)) return &rows[i];
  return NULL;
}

/* The three files of one phase's figure: <stem>_<phase>.dat, .gp and .png. */
typedef struct {
  char dat[64], gp[64], png[64];
} plot_files;

static void plot_files_name(plot_files *pf, const char *stem, int phase) {
  snprintf(pf->dat, sizeof pf->dat, "%s_%s.dat", stem, phase_names[phase]);
  snprintf(pf->gp, sizeof pf->gp, "%s_%s.gp", stem, phase_names[phase]);
  snprintf(pf->png, sizeof pf->png, "%s_%s.png", stem, phase_names[phase]);
}

/* Name the files of <stem>_<phase> and open its .dat. */
static int plot_begin(const report_ctx *r, const char *stem, int phase, plot_files *pf, FILE **f, enpu_err *err) {
  plot_files_name(pf, stem, phase);
  return report_file_open(r->dir, pf->dat, f, err);
}

/* The data written: close the .dat, open the .gp. */
static int plot_script(const report_ctx *r, const plot_files *pf, FILE **f, enpu_err *err) {
  ENPU_FORWARD(report_file_close(*f, r->dir, pf->dat, err));
  return report_file_open(r->dir, pf->gp, f, err);
}

/* The script written: close it and queue the .png (drawn at the end of the report). */
static int plot_draw(const report_ctx *r, const plot_files *pf, FILE *f, enpu_err *err) {
  ENPU_FORWARD(report_file_close(f, r->dir, pf->gp, err));
  return report_plots_add(r->plots, r->absdir, pf->gp, pf->png, err);
}

/* savings_<phase>.dat/.gp/.png: one line per policy, error bars from min to max. */
static int plot_savings(const report_ctx *r, const report_savings_row *rows, size_t n, int phase, int *drawn,
                        enpu_err *err) {
  *drawn = 0;
  double *slacks = NULL;
  size_t ns = 0;
  ENPU_RETURN_IF(phase_slacks(rows, n, phase, &slacks, &ns) < 0, err, ENPU_ERR_NOMEM, "out of memory");
  if (ns == 0) {
    free(slacks);
    return ENPU_OK;
  }
  char title[128];
  plot_files pf;
  FILE *f = NULL;
  int rc = plot_begin(r, "savings", phase, &pf, &f, err);
  if (rc == 0) {
    fprintf(f,
            "# %s: energy savings vs " ENPU_POLICY_DISPLAY_NODVFS
            " (%%) over the ok buckets, per policy: mean min max\n# slack_pct",
            phase_names[phase]);
    for (size_t p = 0; p < r->c->npolicies; p++)
      fprintf(f, " %s_mean %s_min %s_max", r->c->policies[p].name, r->c->policies[p].name, r->c->policies[p].name);
    fprintf(f, "\n");
    for (size_t s = 0; s < ns; s++) {
      fprintf(f, "%.6g", 100 * slacks[s]);
      for (size_t p = 0; p < r->c->npolicies; p++) {
        const report_savings_row *row = savings_at(rows, n, r->c->policies[p].name, phase, slacks[s]);
        if (row) fprintf(f, " %.6f %.6f %.6f", 100 * row->mean, 100 * row->min, 100 * row->max);
        else fprintf(f, " NaN NaN NaN");
      }
      fprintf(f, "\n");
    }
    rc = plot_script(r, &pf, &f, err);
  }
  if (rc == 0) {
    snprintf(title, sizeof title, "%s: energy savings vs SLO slack (mean over buckets, bars min..max)",
             phase_names[phase]);
    report_gp_preamble(f, pf.png, 560, title);
    size_t idx[REPORT_MAX_SERIES]; /* the headline policies; the table below has every one */
    const size_t np = report_headline_policies(r->c, 1, idx, REPORT_MAX_SERIES);
    const char *names[REPORT_MAX_SERIES];
    int cols[REPORT_MAX_SERIES];
    for (size_t i = 0; i < np; i++) names[i] = r->c->policies[idx[i]].name, cols[i] = 2 + 3 * (int)idx[i];
    const report_figure fig = {"11", phase, r->model, names, cols, np, false};
    report_overlay_context(r->overlay, f, &fig);
    fprintf(f,
            "set xlabel 'SLO slack (%% of T_nodvfs)'\nset ylabel 'energy savings vs " ENPU_POLICY_DISPLAY_NODVFS
            " (%%)'\n"
            "set key outside right top\nset offsets 0.3, 0.3, %s\nplot",
            r->overlay ? "graph 0.05, graph 0.05" : "0, 0"); /* a reference marker off the border */
    for (size_t i = 0; i < np; i++)
      fprintf(f, "%s '%s' using 1:%d:%d:%d with yerrorlines lw 2 pt 7 title '%s'", i ? ", \\\n    " : " ", pf.dat,
              cols[i], cols[i] + 1, cols[i] + 2, names[i]);
    report_overlay_slack(r->overlay, f, &fig, pf.dat);
    fprintf(f, "\n");
    rc = plot_draw(r, &pf, f, err);
  }
  free(slacks);
  *drawn = rc == 0;
  return rc;
}

static void md_savings(FILE *md, const report_savings_row *rows, size_t n, const int drawn[2]) {
  fprintf(md, "## 1. Energy savings vs SLO slack (Figure 11)\n\n"
              "Per policy and phase, the energy saved against " ENPU_POLICY_DISPLAY_NODVFS
              " by the stored plan of every "
              "compiled bucket at each slack (mean over buckets, error bars from min to max). "
              "`budget` is the mode the plans were compiled in (docs/policies.md, Budget modes): strict fits "
              "the plan's whole time in max(T_nodvfs, T_peak) + slack · T_nodvfs; paper fits its "
              "critical-path time in (1 + slack) · T_nodvfs. `overhead` is the time beyond the "
              "critical path (V/f transitions, domain crossings and the pipeline fill/drain they "
              "lengthen), in %% of T_nodvfs: in paper mode the plans run that much past their budget. "
              "`paper overhead` is the paper's (§4.4): the transitions and what crossings cost the loops' "
              "throughput (Figure 7's IPC), as the authors' simulator times an op (its slowest component's "
              "time: no fill/drain, no warmup). The plots draw the compared policies (" ENPU_POLICY_DISPLAY_NODVFS
              ", " ENPU_POLICY_DISPLAY_DVFS_C ", " ENPU_POLICY_DISPLAY_ENPU_C ", " ENPU_POLICY_DISPLAY_ENPU_ALL
              ", " ENPU_POLICY_DISPLAY_IDEAL "); the design-space variants have their own figures "
              "(section 4) and every policy is in the table.\n\n");
  for (int ph = 0; ph < 2; ph++)
    if (drawn[ph]) fprintf(md, "![%s savings vs slack](savings_%s.png)\n\n", phase_names[ph], phase_names[ph]);
  fprintf(md, "| policy | phase | budget | slack (%%) | buckets | mean saving (%%) | min (%%) | max (%%) "
              "| mean overhead (%%) | max overhead (%%) | mean paper overhead (%%) | max paper overhead (%%) |\n"
              "|---|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n");
  for (size_t i = 0; i < n; i++)
    fprintf(md, "| %s | %s | %s | %g | %zu | %.4f | %.4f | %.4f | %.4f | %.4f | %.4f | %.4f |\n", rows[i].policy,
            phase_names[rows[i].phase], rows[i].budget == STORE_BUDGET_PAPER ? "paper" : "strict",
            100 * rows[i].slack, rows[i].buckets, 100 * rows[i].mean, 100 * rows[i].min, 100 * rows[i].max,
            rows[i].overhead_mean, rows[i].overhead_max, rows[i].paper_overhead_mean, rows[i].paper_overhead_max);
  if (n == 0) fprintf(md, "| – | – | – | – | 0 | – | – | – | – | – | – | – |\n");
  fprintf(md, "\n");
}

/* ---- Figure 12 ------------------------------------------------------------------- */

static int plot_breakdown(const report_ctx *r, const report_breakdown_row *rows, size_t n, int phase,
                          enpu_err *err) {
  char title[160];
  plot_files pf;
  FILE *f = NULL;
  ENPU_FORWARD(plot_begin(r, "breakdown", phase, &pf, &f, err));
  fprintf(f, "# %s bucket batch %d seq %d: energy per forward pass by component (mJ)\n# label", phase_names[phase],
          rows[0].bucket.batch, rows[0].bucket.seq);
  for (int s = 0; s < STORE_NENERGY; s++) fprintf(f, " %s", slot_names[s]);
  fprintf(f, "\n");
  size_t idx[REPORT_MAX_SERIES]; /* the compared policies' bars, in the paper's order; the table has all */
  const size_t np = report_headline_policies(r->c, 1, idx, REPORT_MAX_SERIES);
  for (size_t k = 0; k < np; k++)
    for (size_t i = 0; i < n; i++) {
      if (strcmp(r->c->policies[idx[k]].name, rows[i].policy)) continue;
      fprintf(f, "\"%s %g%%\"", rows[i].policy, 100 * rows[i].slack);
      for (int s = 0; s < STORE_NENERGY; s++) fprintf(f, " %.9g", rows[i].slot_nj[s] / 1e6);
      fprintf(f, "\n");
    }
  ENPU_FORWARD(plot_script(r, &pf, &f, err));
  snprintf(title, sizeof title, "%s, batch %d, seq %d: energy by component per policy and slack",
           phase_names[phase], rows[0].bucket.batch, rows[0].bucket.seq);
  report_gp_preamble(f, pf.png, 560, title);
  fprintf(f, "set style data histograms\nset style histogram rowstacked\nset style fill solid 0.85 border -1\n"
             "set boxwidth 0.75\nset bmargin 6\nset xtics rotate by -40 scale 0 font ',8'\n"
             "set ylabel 'energy per forward pass (mJ)'\n"
             "set yrange [0:*]\nset key outside right top\nplot");
  for (int s = 0; s < STORE_NENERGY; s++)
    fprintf(f, "%s '%s' using %d%s title '%s'", s ? ", \\\n    " : " ", pf.dat, 2 + s, s ? "" : ":xtic(1)",
            slot_names[s]);
  fprintf(f, "\n");
  return plot_draw(r, &pf, f, err);
}

static void md_breakdown(FILE *md, const report_breakdown_row *rows, size_t n, int phase) {
  fprintf(md, "### %s: batch %d, seq %d\n\n![%s energy by component](breakdown_%s.png)\n\n", phase_names[phase],
          rows[0].bucket.batch, rows[0].bucket.seq, phase_names[phase], phase_names[phase]);
  fprintf(md, "| policy | slack (%%) | walk prefix |");
  for (int s = 0; s < STORE_NENERGY; s++) fprintf(md, " %s (mJ) |", slot_names[s]);
  fprintf(md, " Σ slots (mJ) | plan (mJ) | " ENPU_POLICY_DISPLAY_NODVFS " (mJ) | saving (%%) |\n|---|---:|---:|");
  for (int s = 0; s < STORE_NENERGY + 4; s++) fprintf(md, "---:|");
  fprintf(md, "\n");
  for (size_t i = 0; i < n; i++) {
    const report_breakdown_row *b = &rows[i];
    if (b->walk_prefix == STORE_NO_PREFIX) fprintf(md, "| %s | %g | — |", b->policy, 100 * b->slack);
    else fprintf(md, "| %s | %g | %llu |", b->policy, 100 * b->slack, (unsigned long long)b->walk_prefix);
    for (int s = 0; s < STORE_NENERGY; s++) fprintf(md, " %.6g |", b->slot_nj[s] / 1e6);
    fprintf(md, " %.6g | %.6g | %.6g | %.3f |\n", b->slots_total_nj / 1e6, b->plan_energy_nj / 1e6,
            b->e_nodvfs_nj / 1e6, b->e_nodvfs_nj > 0 ? 100 * (1 - b->plan_energy_nj / b->e_nodvfs_nj) : 0.0);
  }
  fprintf(md, "\n");
}

/* Does phase `ph` have a median bucket? If not, say why under a heading. */
static int has_median(const report_ctx *r, FILE *md, int ph) {
  if (r->median_why[ph].code == 0) return 1;
  fprintf(md, "### %s\n\nNot shown: %s.\n\n", phase_names[ph], r->median_why[ph].msg);
  return 0;
}

/* Figure 12 for both phases; a phase without a common ok bucket gets a note. */
static int section_breakdown(const report_ctx *r, FILE *md, enpu_err *err) {
  fprintf(md, "## 2. Energy by component (Figure 12)\n\n"
              "For the median bucket of each phase (by " ENPU_POLICY_DISPLAY_NODVFS
              " time, among buckets compiled in every "
              "policy), the energy of one forward pass by component: every op instance at the Pareto "
              "point its plan puts it on (the plan's walk prefix, or for a plan that is no walk "
              "prefix, `—`, e.g. " ENPU_POLICY_DISPLAY_DVFS_C
              "'s GA, its stored runs), times that point's per-component "
              "energy. `plan` is the stored plan energy on the real operator order; it differs "
              "from Σ slots by the V/f transitions between operators.\n\n"
              "The slots: SA, VU, SRAM, HBM and ICI are the five DVFS components (dynamic and "
              "leakage energy, their regulators' loss included); FE, the front end, is folded "
              "into `other` (its column stays 0); `other` is the rest of the chip, which no "
              "policy scales: the chip file's `other_static_w` (control, host interface, "
              "clocking, I/O) times the pass's time, plus the host link's energy per byte for "
              "weights a bucket streams from the host (capacity `offload`). It is the same "
              "power under every policy, so it grows with the time a plan takes and is the "
              "price of slack.\n\n");
  for (int ph = 0; ph < 2; ph++) {
    if (!has_median(r, md, ph)) continue;
    report_breakdown_row *rows = NULL;
    size_t n = 0;
    ENPU_FORWARD(report_breakdown(r->c, &r->median[ph], &rows, &n, err));
    int rc = plot_breakdown(r, rows, n, ph, err);
    if (rc == 0) md_breakdown(md, rows, n, ph);
    free(rows);
    ENPU_FORWARD(rc);
  }
  return ENPU_OK;
}

/* ---- Figure 19 ------------------------------------------------------------------- */

/* The policy Figure 19 shows: enpu-all when present, else the last one (store order). */
static const char *freq_policy(const store_contents *c) {
  for (size_t i = 0; i < c->npolicies; i++)
    if (config_policy_named(c->policies[i].name, CONFIG_POLICY_ENPU_ALL)) return c->policies[i].name;
  return c->npolicies ? c->policies[c->npolicies - 1].name : NULL;
}

static int plot_freq(const report_ctx *r, const report_freq_row *rows, size_t n, int phase, const char *policy,
                     double slack, enpu_err *err) {
  char title[192];
  plot_files pf;
  FILE *f = NULL;
  ENPU_FORWARD(plot_begin(r, "freq_util", phase, &pf, &f, err));
  fprintf(f,
          "# %s, policy %s, slack %g%%: per op, utilisation at peak (%%) and chosen state / peak state\n"
          "# op util_sa util_vu util_sram util_hbm util_ici f_sa f_vu f_sram f_hbm f_ici\n",
          phase_names[phase], policy, 100 * slack);
  const double peak = r->job->chip.freq_states;
  for (size_t i = 0; i < n; i++) {
    if (!rows[i].matched) continue;
    fprintf(f, "\"%s\"", rows[i].op);
    for (int k = 0; k < STORE_NSTATE; k++) fprintf(f, " %.6f", 100 * rows[i].util_peak[k]);
    for (int k = 0; k < STORE_NSTATE; k++) fprintf(f, " %.6f", rows[i].state[k] / peak);
    fprintf(f, "\n");
  }
  ENPU_FORWARD(plot_script(r, &pf, &f, err));
  snprintf(title, sizeof title, "%s, batch %d, seq %d, %s at %g%% slack: chosen frequency vs utilisation at peak",
           phase_names[phase], rows[0].bucket.batch, rows[0].bucket.seq, policy, 100 * slack);
  report_gp_preamble(f, pf.png, 560, title);
  fprintf(f, "set xlabel 'utilisation at peak, " ENPU_POLICY_DISPLAY_NODVFS
             " (%% busy)'\nset ylabel 'chosen frequency (fraction of peak)'\n"
             "set xrange [0:100]\nset yrange [0:1.05]\nset key outside right top\nplot");
  for (int k = 0; k < STORE_NSTATE; k++)
    fprintf(f, "%s '%s' using %d:%d with points pt %d ps 1.4 title '%s'", k ? ", \\\n    " : " ", pf.dat, 2 + k,
            7 + k, 5 + 2 * k, slot_names[k]);
  fprintf(f, "\n");
  return plot_draw(r, &pf, f, err);
}

static size_t count_unmatched(const report_freq_row *rows, size_t n) {
  size_t unmatched = 0;
  for (size_t i = 0; i < n; i++) unmatched += !rows[i].matched;
  return unmatched;
}

static void md_freq(FILE *md, const report_freq_row *rows, size_t n, int phase, double slack) {
  const size_t unmatched = count_unmatched(rows, n);
  fprintf(md, "### %s: batch %d, seq %d, slack %g %%\n\n", phase_names[phase], rows[0].bucket.batch,
          rows[0].bucket.seq, 100 * slack);
  if (unmatched < n)
    fprintf(md, "![%s frequency vs utilisation](freq_util_%s.png)\n\n", phase_names[phase], phase_names[phase]);
  if (unmatched)
    fprintf(md,
            "%zu of %zu ops could not be matched to an op of the job's graph with the stored time (a "
            "different job, chip or cost model than the store's?); they are not plotted.\n\n",
            unmatched, n);
  fprintf(md, "| op | instances | util SA (%%) | util VU (%%) | util SRAM (%%) | util HBM (%%) | util ICI (%%) | "
              "state SA | state VU | state SRAM | state HBM | state ICI |\n|---|---:|---:|---:|---:|---:|---:|"
              "---:|---:|---:|---:|---:|\n");
  for (size_t i = 0; i < n; i++) {
    fprintf(md, "| %s | %llu |", rows[i].op, (unsigned long long)rows[i].instances);
    for (int k = 0; k < STORE_NSTATE; k++)
      rows[i].matched ? fprintf(md, " %.1f |", 100 * rows[i].util_peak[k]) : fprintf(md, " – |");
    for (int k = 0; k < STORE_NSTATE; k++) fprintf(md, " %u |", rows[i].state[k]);
    fprintf(md, "\n");
  }
  fprintf(md, "\n");
}

static int section_freq(const report_ctx *r, FILE *md, double want_slack, enpu_err *err) {
  const char *policy = freq_policy(r->c);
  fprintf(md,
          "## 3. Chosen frequency vs utilisation at peak (Figure 19)\n\n"
          "For each op of the median buckets, the frequency state the %s plan chose for each "
          "component (as a fraction of the peak state) against that component's busy fraction when "
          "the op runs at peak without DVFS, recomputed with the cost model from the job file.\n\n",
          policy ? policy : "(none)");
  if (!r->job) {
    fprintf(md, "Not shown: it needs the job file (`enpu report STORE --job JOB.json`), because the chip's "
                "power tables are files the store does not hold.\n\n");
    return ENPU_OK;
  }
  if (r->job->hash != r->c->job_hash)
    fprintf(md,
            "Note: the job file's hash (0x%016llx) differs from the store's job_hash (0x%016llx); ops are "
            "matched by name and by the stored time, so only ops that still cost the same are shown.\n\n",
            (unsigned long long)r->job->hash, (unsigned long long)r->c->job_hash);
  for (int ph = 0; ph < 2 && policy; ph++) {
    if (!has_median(r, md, ph)) continue;
    report_freq_row *rows = NULL;
    size_t n = 0;
    double slack = 0;
    ENPU_FORWARD(report_freq_util(r->c, r->job, policy, &r->median[ph], want_slack, &rows, &n, &slack, err));
    /* nothing to plot when no op matched (gnuplot refuses a plot without points) */
    int rc = n > count_unmatched(rows, n) ? plot_freq(r, rows, n, ph, policy, slack, err) : 0;
    if (rc == 0 && n) md_freq(md, rows, n, ph, slack);
    free(rows);
    ENPU_FORWARD(rc);
  }
  return ENPU_OK;
}

/* ---- the report ------------------------------------------------------------------ */

/* The job name from the store's job_json; only [A-Za-z0-9._-], not starting with '.',
 * because it becomes a directory name. */
static int job_name(const store_contents *c, char *out, size_t len, enpu_err *err) {
  json_error_t jerr;
  json_t *doc = c->job_json ? json_loads(c->job_json, 0, &jerr) : NULL;
  const char *name = json_string_value(json_object_get(doc, "name"));
  int rc = ENPU_OK;
  if (!name || !*name || name[0] == '.' ||
      strspn(name, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
                   "0123456789._-") != strlen(name))
    rc = enpu_errorf(err, ENPU_ERR_FORMAT, "the store's job_json has no usable \"name\" (give --out DIR)");
  else if (snprintf(out, len, "%s", name) >= (int)len) rc = enpu_errorf(err, ENPU_ERR_RANGE, "job name too long");
  json_decref(doc);
  return rc;
}

/* The model's name from the store's model_json ("" when it has none): the paper's values
 * for one model are drawn only on that model's figures. */
static void model_of_store(const store_contents *c, char *out, size_t len) {
  json_error_t jerr;
  json_t *doc = c->model_json ? json_loads(c->model_json, 0, &jerr) : NULL;
  const char *name = json_string_value(json_object_get(doc, "name"));
  snprintf(out, len, "%s", name ? name : "");
  json_decref(doc);
}

static void md_header(FILE *md, const report_ctx *r, const char *name, const char *store_path) {
  char now[32];
  time_t t = time(NULL);
  struct tm tm;
  strftime(now, sizeof now, "%Y-%m-%dT%H:%M:%SZ", gmtime_r(&t, &tm));
  const store_contents *c = r->c;
  fprintf(md, "# Plan store report: %s\n\n", name);
  fprintf(md, "- Store: `%s` (format %u, written by enpu %s at %s)\n", store_path, c->format_version,
          c->tool_version && *c->tool_version ? c->tool_version : "?",
          c->created_utc && *c->created_utc ? c->created_utc : "?");
  fprintf(md, "- Hashes: cost model `%016llx`, chip `%016llx`, model `%016llx`, job `%016llx`\n",
          (unsigned long long)c->cost_model_hash, (unsigned long long)c->chip_hash,
          (unsigned long long)c->model_hash, (unsigned long long)c->job_hash);
  report_capacity_info ci;
  report_capacity(c, &ci);
  fprintf(md, "- Capacity `%s`", ci.capacity);
  if (ci.over_hbm)
    fprintf(md,
            ": %zu of %zu buckets were compiled although they exceed a chip's HBM (%s; "
            "every such plan carries the note)",
            ci.over_hbm, ci.buckets,
            strcmp(ci.capacity, "offload") ? "as if they fitted" : "weights stream from the host");
  fprintf(md, "; MoE experts `%s`, capacity factor `%s`\n", ci.experts, ci.factor);
  fprintf(md, "- Report written %s by `enpu report`; energies are per forward pass of a bucket.\n", now);
  if (r->overlay && r->overlay->note) r->overlay->note(r->overlay->ctx, md);
  fprintf(md, "\n");
  fprintf(md, "| policy | ops | buckets ok | infeasible (capacity) | failed | plans |\n"
              "|---|---:|---:|---:|---:|---:|\n");
  for (size_t i = 0; i < c->npolicies; i++) {
    const store_policy_tables *p = &c->policies[i];
    size_t st[3] = {0};
    for (size_t b = 0; b < p->nbuckets; b++)
      if (p->buckets[b].status < 3) st[p->buckets[b].status]++;
    fprintf(md, "| %s | %zu | %zu | %zu | %zu | %zu |\n", p->name, p->nops, st[0], st[1], st[2], p->nplans);
  }
  fprintf(md, "\n");
}

static int write_report(report_ctx *r, const report_options *o, const char *name, enpu_err *err) {
  report_savings_row *sav = NULL;
  size_t nsav = 0;
  int drawn[2] = {0, 0};
  ENPU_FORWARD(report_savings(r->c, &sav, &nsav, err));
  int rc = ENPU_OK;
  for (int ph = 0; ph < 2 && rc == 0; ph++) rc = plot_savings(r, sav, nsav, ph, &drawn[ph], err);
  /* report.md goes to a temporary name, renamed when every figure is drawn: a report.md
   * that exists is complete and its plots exist. */
  FILE *md = NULL;
  if (rc == 0) rc = report_file_open(r->dir, "report.md.tmp", &md, err);
  if (rc == 0) {
    md_header(md, r, name, o->store_path);
    md_savings(md, sav, nsav, drawn);
    rc = section_breakdown(r, md, err);
    if (rc == 0) rc = section_freq(r, md, o->freq_slack, err);
    if (rc == 0) rc = report_design_section(r, md, err);
    if (rc == 0) rc = report_replay_section(r, md, o->replay_dir, err);
    if (rc == 0) rc = report_governors_section(r, md, o->replay_dir, err);
    const int crc = report_file_close(md, r->dir, "report.md.tmp", rc == 0 ? err : NULL);
    if (rc == 0) rc = crc;
  }
  free(sav);
  char tmp[PATH_MAX], final[PATH_MAX];
  snprintf(tmp, sizeof tmp, "%s/report.md.tmp", r->dir);
  snprintf(final, sizeof final, "%s/report.md", r->dir);
  if (rc == 0) rc = report_plots_publish(r->plots, tmp, final, err);
  if (rc < 0) remove(tmp);
  return rc;
}

int report_write_queued(const report_options *o, report_plots *plots, char **md_path, enpu_err *err) {
  if (md_path) *md_path = NULL;
  ENPU_RETURN_IF(!o || !o->store_path, err, ENPU_ERR_INVALID, "report_write: no store");
  report_ctx r = {.job = o->job, .plots = plots};
  store_contents *c = NULL;
  char name[STORE_NAME_LEN] = "", dir[PATH_MAX];
  int rc = store_load(o->store_path, &c, err);
  if (rc == 0 && job_name(c, name, sizeof name, o->out_dir ? NULL : err) < 0 && !o->out_dir) rc = ENPU_ERR_FORMAT;
  if (rc == 0 && !name[0]) snprintf(name, sizeof name, "(unnamed job)");
  if (rc == 0 && (o->out_dir ? snprintf(dir, sizeof dir, "%s", o->out_dir)
                             : snprintf(dir, sizeof dir, "results/%s", name)) >= (int)sizeof dir)
    rc = enpu_errorf(err, ENPU_ERR_RANGE, "output directory name too long");
  if (rc == 0) rc = enpu_mkdir_p(dir, err);
  if (rc == 0) rc = report_absolute_dir(dir, r.absdir, sizeof r.absdir, err);
  if (rc == 0) {
    r.c = c, r.dir = dir, r.overlay = o->overlay;
    model_of_store(c, r.model, sizeof r.model);
    for (int ph = 0; ph < 2 && rc == 0; ph++) /* "no such bucket" is a note in the report */
      if (report_pick_bucket(c, ph, &r.median[ph], &r.median_why[ph]) == ENPU_ERR_NOMEM)
        rc = enpu_errorf(err, ENPU_ERR_NOMEM, "out of memory");
  }
  if (rc == 0) rc = write_report(&r, o, name, err);
  if (rc == 0 && md_path) {
    size_t len = strlen(dir) + sizeof "/report.md";
    *md_path = malloc(len);
    if (*md_path) snprintf(*md_path, len, "%s/report.md", dir);
    else rc = enpu_errorf(err, ENPU_ERR_NOMEM, "out of memory");
  }
  store_contents_free(c);
  return rc;
}

int report_write(const report_options *o, char **md_path, enpu_err *err) {
  if (md_path) *md_path = NULL;
  ENPU_RETURN_IF(!o || !o->store_path, err, ENPU_ERR_INVALID, "report_write: no store");
  report_plots *plots = NULL;
  int rc = report_plots_create(o->gnuplot, &plots, err);
  if (rc == 0) rc = report_write_queued(o, plots, md_path, err);
  if (rc == 0) rc = report_plots_draw(plots, err);
  report_plots_free(plots);
  if (rc < 0 && md_path) {
    free(*md_path);
    *md_path = NULL;
  }
  return rc;
}
