/* paper_tables.c — the paper's tables and the figures drawn across models:
 * Table 2 (our SLOs, 5× the single-request TTFT/TPOT, beside the paper's) and Table 3
 * (the nodes we replay), Table 5 (the chip parameters the paper lists, from the chip
 * file), Table 7 with Figure 14 (explored plans and compile seconds of one request per
 * model, phase and policy; core-hours of the grids), and Figure 11 per model (energy
 * saving, power saving and overhead against slack, per policy, in each budget mode).
 * The two figures' scripts are written and queued first (paper_plots), drawn with
 * the runs' figures, and the README's sections only link them.
 *
 * Invariants: every number of ours comes from a store, a compile/graph output or the
 * chip and cluster files the runs were compiled with; a cell without data says so. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "paper_internal.h"

static const char *const phase_names[CONFIG_NPHASE] = {"prefill", "decode"};

/* ---- Tables 2 and 3 ---------------------------------------------------------------- */

static double model_graph_ms(const paper_model *m, int ph, int seq) {
  for (int i = 0; i < m->ngraph; i++)
    if (m->graph[i].phase == ph && m->graph[i].seq == seq) return m->graph[i].time_ns / 1e6;
  return NAN;
}

static void table2_model(FILE *md, const paper_model *m, const config_cluster *cl) {
  for (int s = 0; s < cl->slo_count; s++) {
    const config_slo_class *c = &cl->slo[s];
    const double ttft = model_graph_ms(m, 0, c->prefill_max_tokens),
                 tpot = model_graph_ms(m, 1, c->decode_max_tokens);
    fprintf(md, "| %s | %s | %d | %.0f | %.0f | ×%.2f | %d | %.1f | %.1f | ×%.2f |\n", m->name, c->name,
            c->prefill_max_tokens, 5 * ttft, c->ttft_ms, 5 * ttft / c->ttft_ms, c->decode_max_tokens, 5 * tpot,
            c->tpot_ms, 5 * tpot / c->tpot_ms);
  }
}

int paper_md_table2(paper_ctx *x, FILE *md, enpu_err *err) {
  fprintf(
      md,
      "## 2. Tables 2 and 3: SLOs and nodes\n\n"
      "Table 2's SLOs are 5× the single-request TTFT/TPOT on the model's node (§2). Ours: 5× our " ENPU_POLICY_DISPLAY_NODVFS
      " time of one request at each class's length (`enpu graph --time`; prefill at the input length, "
      "decode one step at the total length), beside the paper's SLO, which the cluster files hold and "
      "the replay uses. The ratio is the calibration of our cost model (`results/calibration.md` "
      "decomposes every row outside ±25 %%).\n\n"
      "| model | class | prefill tokens | 5 × our TTFT (ms) | paper TTFT SLO (ms) | ratio | decode tokens "
      "| 5 × our TPOT (ms) | paper TPOT SLO (ms) | ratio |\n"
      "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|\n");
  for (int i = 0; i < x->nmodels; i++) {
    config_job *job = NULL;
    ENPU_FORWARD(config_job_load(x->models[i].job, &job, err));
    table2_model(md, &x->models[i], &job->cluster);
    config_job_free(job);
  }
  fprintf(md, "\nTable 3 (the nodes): our cluster files are the paper's Table 3, read by every farm (parallelism "
              "of each phase) and by the replay (node counts).\n\n| model | prefill nodes × chips (dp/tp/pp/ep) "
              "| decode nodes × chips (dp/tp/pp/ep) |\n|---|---|---|\n");
  for (int i = 0; i < x->nmodels; i++) {
    config_job *job = NULL;
    ENPU_FORWARD(config_job_load(x->models[i].job, &job, err));
    fprintf(md, "| %s |", x->models[i].name);
    for (int ph = 0; ph < CONFIG_NPHASE; ph++) {
      const config_node *n = &job->cluster.node[ph];
      fprintf(md, " %d × %d (%d/%d/%d/%d) |", n->nodes, n->chips, n->parallel.dp, n->parallel.tp, n->parallel.pp,
              n->parallel.ep);
    }
    fprintf(md, "\n");
    config_job_free(job);
  }
  fprintf(md, "\n");
  return ENPU_OK;
}

/* ---- Table 5 --------------------------------------------------------------------------- */

int paper_md_table5(paper_ctx *x, FILE *md, enpu_err *err) {
  if (!x->numbers->ntable5 || !x->nmodels) return ENPU_OK;
  config_job *job = NULL;
  ENPU_FORWARD(config_job_load(x->models[0].job, &job, err));
  json_error_t je;
  json_t *chip = json_loads(job->chip_json, 0, &je);
  fprintf(md,
          "## 3. Table 5: the chip parameters of the area table\n\n"
          "The parameters of Table 5 (and Table 6) our chip file `%s` uses. The area itself is not modelled: "
          "the cost model charges the async FIFOs' crossings in time and the shadow registers in the VU's "
          "schedule, not in mm².\n\n| parameter | paper | ours (chip file) |\n|---|---:|---:|\n",
          job->chip.name);
  for (int i = 0; i < x->numbers->ntable5; i++) {
    const paper_t5 *t = &x->numbers->table5[i];
    char buf[64];
    snprintf(buf, sizeof buf, "%s", t->chip);
    const json_t *v = chip;
    char *save = NULL;
    for (char *k = strtok_r(buf, ".", &save); v && k; k = strtok_r(NULL, ".", &save)) v = json_object_get(v, k);
    fprintf(md, "| %s | %.0f | ", t->what, t->paper);
    if (json_is_number(v))
      fprintf(md, "%.0f%s |\n", json_number_value(v), json_number_value(v) == t->paper ? "" : " ✗");
    else fprintf(md, "*missing: no `%s` in the chip file* |\n", t->chip);
  }
  fprintf(md, "\n");
  json_decref(chip);
  config_job_free(job);
  return ENPU_OK;
}

/* ---- Table 7 and Figure 14 --------------------------------------------------------------- */

static const paper_t7 *table7_numbers(const paper_ctx *x, const char *model, int ph) {
  for (int i = 0; i < x->numbers->ntable7; i++)
    if (!strcmp(x->numbers->table7[i].model, model) && x->numbers->table7[i].phase == ph)
      return &x->numbers->table7[i];
  return NULL;
}

static void t7_cell(FILE *md, double ours, const paper_t7 *row, const char *policy, int req) {
  double paper = NAN;
  for (int k = 0; row && k < row->npolicy; k++)
    if (!strcmp(row->policy[k], policy)) paper = req ? row->req[k] : row->op[k];
  if (isnan(ours)) fprintf(md, " *not compiled* |");
  else fprintf(md, " %.0f |", ours);
  if (isnan(paper)) fprintf(md, " – |");
  else fprintf(md, " %.0f |", paper);
}

static const config_policy t7_ids[] = {CONFIG_POLICY_DVFS_C, CONFIG_POLICY_ENPU_ALL, CONFIG_POLICY_IDEAL};
#define T7_NAME(p) config_policy_name(t7_ids[p])

/* The paper's number of claim `id`, NaN when the numbers file has no such claim. */
static double paper_stated(const paper_ctx *x, const char *id) {
  for (int i = 0; i < x->numbers->nclaims; i++)
    if (!strcmp(x->numbers->claims[i].id, id)) return x->numbers->claims[i].paper_lo;
  return NAN;
}

/* The paper's bound `id` as a horizontal line in the key (nothing when it states none). */
static void paper_bound_line(FILE *f, const paper_ctx *x, const char *id, const char *what, int dt) {
  const double v = paper_stated(x, id);
  if (!isnan(v)) fprintf(f, ", %g with lines dt %d lw 1.5 lc rgb 'black' title 'paper: %s < %g s'", v, dt, what, v);
}

static int figure14_plot(paper_ctx *x, enpu_err *err) {
  const char *dir = x->o->out_dir;
  FILE *f = NULL;
  ENPU_FORWARD(report_file_open(dir, "figure14.dat", &f, err));
  fprintf(f, "# seconds to compile one request (all slacks): label op_s req_s, per policy\n");
  for (int i = 0; i < x->nmodels; i++)
    for (int ph = 0; ph < CONFIG_NPHASE; ph++)
      for (size_t p = 0; p < sizeof t7_ids / sizeof *t7_ids; p++) {
        const double op = paper_compile_s(&x->models[i], T7_NAME(p), ph, PAPER_LEVEL_OP);
        const double rq = paper_compile_s(&x->models[i], T7_NAME(p), ph, PAPER_LEVEL_REQ);
        if (!isnan(op))
          fprintf(f, "\"%s %s %s\" %.6g %.6g\n", x->models[i].name, phase_names[ph], T7_NAME(p), fmax(op, 1e-4),
                  fmax(rq, 1e-4));
      }
  ENPU_FORWARD(report_file_close(f, dir, "figure14.dat", err));
  ENPU_FORWARD(report_file_open(dir, "figure14.gp", &f, err));
  report_gp_preamble(f, "figure14.png", 760, "Figure 14: compile time of one request on this machine (one core)");
  fprintf(f, "set style data histograms\nset style histogram clustered gap 1\nset style fill solid 0.8 border -1\n"
             "set boxwidth 0.7\nset logscale y\nset yrange [1e-4:1e5]\nset ylabel 'compile time (s, log)'\n"
             "set xtics rotate by -45 font ',8'\nset bmargin 13\nset key outside right top\n"
             "plot 'figure14.dat' using 2:xtic(1) title 'operator level', '' using 3 title 'request level'");
  paper_bound_line(f, x, "c2-op-time", "operator level", 2);
  paper_bound_line(f, x, "c2-request-time", "one request", 3);
  fprintf(f, "\n");
  ENPU_FORWARD(report_file_close(f, dir, "figure14.gp", err));
  return report_plots_add(x->plots, x->absdir, "figure14.gp", "figure14.png", err);
}

int paper_md_table7(paper_ctx *x, FILE *md, enpu_err *err) {
  fprintf(md,
          "## 4. Table 7 and Figure 14: the search and its cost\n\n"
          "Explored plans of one request at %.0f %% slack in the budget mode `%s` (`enpu compile --json`): "
          "operator level = the evaluations of the unique operators' Pareto searches; request level = "
          "the walk's moves and finalisations at that slack, for " ENPU_POLICY_DISPLAY_DVFS_C
          "'s GA generations × population "
          "summed over the slacks up to it (it is warm-started from each). " ENPU_POLICY_DISPLAY_IDEAL
          " is the exact Pareto set "
          "(the paper enumerates 34^5 ≈ 45 M plans per operator).\n\n| model | phase |",
          x->nmodels ? 100 * x->models[0].t7_slack : 0, x->nmodels ? x->models[0].t7_budget : "");
  for (size_t p = 0; p < 3; p++) fprintf(md, " %s op | paper | %s req | paper |", T7_NAME(p), T7_NAME(p));
  fprintf(md, "\n|---|---|");
  for (size_t p = 0; p < 3; p++) fprintf(md, "---:|---:|---:|---:|");
  fprintf(md, "\n");
  for (int i = 0; i < x->nmodels; i++)
    for (int ph = 0; ph < CONFIG_NPHASE; ph++) {
      if (!x->models[i].req_phase[ph]) continue;
      const paper_t7 *row = table7_numbers(x, x->models[i].name, ph);
      fprintf(md, "| %s | %s |", x->models[i].name, phase_names[ph]);
      for (size_t p = 0; p < 3; p++) {
        t7_cell(md, paper_t7_value(&x->models[i], T7_NAME(p), ph, PAPER_LEVEL_OP), row, T7_NAME(p), 0);
        t7_cell(md, paper_t7_value(&x->models[i], T7_NAME(p), ph, PAPER_LEVEL_REQ), row, T7_NAME(p), 1);
      }
      fprintf(md, "\n");
    }
  fprintf(md, "\nFigure 14: the compile seconds of the same requests on this machine, one core (the paper: 24 Xeon "
              "cores), operator level and request level over every slack.\n\n");
  paper_md_image(x, md, "figure14.png", "Figure 14");
  ENPU_FORWARD(paper_md_claims(x, md, "7", err));
  return paper_md_claims(x, md, "14", err);
}

/* ---- Figure 11 per model --------------------------------------------------------------- */

/* Figure 11 as the paper lays it out: per phase (columns) energy saving, power saving and
 * overhead (rows), each a group of bars per slack for the compared policies (NoDVFS,
 * DVFS-C, eNPU-C, eNPU-All, Ideal); the design-space variants are in Figures 15-17 and 21.
 * figure11_<model>_<budget>.dat: per phase a block, per slack a row: the slack, then per
 * drawn policy energy saving, power saving, overhead (%); blocks 2 and 3 hold the paper's
 * stated savings per phase (x at the policy's bar, y). */
typedef struct {
  size_t idx[REPORT_MAX_SERIES]; /* indices into the store's policies */
  size_t n;
  double slacks[32];
  int ns;
} f11_data;

/* The bar of policy k in slack group s, in gnuplot's clustered histogram coordinates:
 * group s is centred at s and its n bars (gap 1) are 1 / (n + 1) wide each. */
static double f11_bar_x(const f11_data *d, int s, size_t k) {
  return s + ((double)k - (d->n - 1) / 2.0) / (d->n + 1);
}

/* The paper's stated single-model-independent savings of one policy at one slack (§4 (1):
 * means over the four models), as a marker on that policy's bar in every model's figure. */
static void f11_paper_points(FILE *f, const paper_ctx *x, const store_contents *c, const f11_data *d, int ph) {
  fprintf(f, "# paper's stated energy saving, %s: x y\n", phase_names[ph]);
  int n = 0;
  for (int i = 0; i < x->numbers->nclaims; i++) {
    const paper_claim *cl = &x->numbers->claims[i];
    const paper_query *q = &cl->ours;
    if (strcmp(cl->figure, "11") || q->kind != PAPER_SAVINGS || q->npolicy != 1 || q->phase != ph ||
        q->slack_sel != PAPER_SLACK_VALUE || cl->paper_lo != cl->paper_hi)
      continue;
    for (size_t k = 0; k < d->n; k++)
      for (int s = 0; s < d->ns; s++)
        if (!strcmp(c->policies[d->idx[k]].name, q->policy[0]) && fabs(d->slacks[s] - q->slack) < 1e-9) {
          fprintf(f, "%.4f %.4f\n", f11_bar_x(d, s, k), cl->paper_lo);
          n++;
        }
  }
  if (!n) fprintf(f, "NaN NaN\n"); /* gnuplot needs a point; NaN draws none */
  fprintf(f, "\n\n");
}

/* @return 1 written, 0 no such store, or an error. */
static int f11_dat(paper_ctx *x, paper_model *m, const paper_column *col, const char *dat, f11_data *d,
                   enpu_err *err) {
  paper_value why = {0};
  paper_run *run = paper_find_run(m, "request", col, &why);
  if (!run) return 0;
  d->ns = paper_request_slacks(m, col, d->slacks, 32);
  d->n = report_headline_policies(run->c, 1, d->idx, 5);
  FILE *f = NULL;
  ENPU_FORWARD(report_file_open(x->o->out_dir, dat, &f, err));
  fprintf(f, "# %s, %s mode: per phase, per policy: energy saving, power saving, overhead (%%)\n", m->name,
          col->budget);
  for (int ph = 0; ph < CONFIG_NPHASE; ph++) {
    fprintf(f, "# phase %s\n# slack", phase_names[ph]);
    for (size_t k = 0; k < d->n; k++) fprintf(f, " %s", run->c->policies[d->idx[k]].name);
    fprintf(f, "\n");
    for (int s = 0; s < d->ns; s++) {
      fprintf(f, "%g", 100 * d->slacks[s]);
      for (size_t k = 0; k < d->n; k++) {
        const store_bucket_rec *b = NULL;
        const store_plan_rec *pl = paper_request_plan(m, col, run->c->policies[d->idx[k]].name, ph, d->slacks[s],
                                                      &b, &why);
        if (!pl) fprintf(f, " NaN NaN NaN");
        else
          fprintf(f, " %.4f %.4f %.4f", 100 * pl->savings_vs_nodvfs,
                  100 * (1 - (pl->energy_nj / pl->time_ns) / (b->e_nodvfs_nj / b->t_nodvfs_ns)),
                  report_plan_overhead_pct(pl));
      }
      fprintf(f, "\n");
    }
    fprintf(f, "\n\n");
  }
  for (int ph = 0; ph < CONFIG_NPHASE; ph++) f11_paper_points(f, x, run->c, d, ph);
  ENPU_FORWARD(report_file_close(f, x->o->out_dir, dat, err));
  return 1;
}

static void f11_panel(FILE *f, const store_contents *c, const f11_data *d, const char *dat, int ph, int k) {
  static const char *const metric[3] = {"energy saving (%)", "power saving (%)", "overhead (% of T_nodvfs)"};
  /* one key for the figure, a row under its title (the multiplot's margins leave it room):
   * the bars keep their colours in every panel */
  fprintf(f, "set ylabel '%s'\nset title '%s: %s'\n%s\n%s\nplot", metric[k], phase_names[ph], metric[k],
          k == 2 ? "set xlabel 'SLO slack (%)'" : "unset xlabel",
          k == 0 && ph == 0 ? "set key horizontal at screen 0.5, 0.95 center top font ',10' samplen 2 width 1"
                            : "unset key");
  for (size_t p = 0; p < d->n; p++)
    fprintf(f, "%s '%s' index %d using %zu%s title '%s'", p ? "," : "", dat, ph, 2 + 3 * p + k,
            p ? "" : ":xtic(sprintf('%g %%', $1))", c->policies[d->idx[p]].name);
  if (k == 0)
    fprintf(f,
            ", '%s' index %d using 1:2 with points pt 9 ps 1.6 lc rgb 'black' "
            "title 'paper'",
            dat, 2 + ph);
  fprintf(f, "\n");
}

static int f11_plot(paper_ctx *x, paper_model *m, const paper_column *col, enpu_err *err) {
  char dat[160], gp[160], png[160], title[160];
  snprintf(dat, sizeof dat, "figure11_%s_%s.dat", m->name, col->budget);
  snprintf(gp, sizeof gp, "figure11_%s_%s.gp", m->name, col->budget);
  snprintf(png, sizeof png, "figure11_%s_%s.png", m->name, col->budget);
  f11_data d = {0};
  const int rc = f11_dat(x, m, col, dat, &d, err);
  if (rc <= 0) return rc;
  paper_value why = {0};
  const store_contents *c = paper_find_run(m, "request", col, &why)->c;
  FILE *f = NULL;
  ENPU_FORWARD(report_file_open(x->o->out_dir, gp, &f, err));
  snprintf(title, sizeof title, "Figure 11: %s, one request, budget mode %s", m->name, col->budget);
  report_gp_preamble(f, png, 1000, title);
  fprintf(f,
          "unset title\nset multiplot layout 3,2 title '%s' margins 0.08, 0.98, 0.06, 0.87 spacing 0.1, 0.08\n"
          "set style data histograms\nset style histogram clustered gap 1\nset style fill solid 0.85 border -1\n"
          "set grid ytics\n",
          title);
  for (int k = 0; k < 3; k++)
    for (int ph = 0; ph < CONFIG_NPHASE; ph++) f11_panel(f, c, &d, dat, ph, k);
  fprintf(f, "unset multiplot\n");
  ENPU_FORWARD(report_file_close(f, x->o->out_dir, gp, err));
  ENPU_FORWARD(report_plots_add(x->plots, x->absdir, gp, png, err));
  return 1;
}

/* The savings table of one model: slack rows, a column per compared policy (and the
 * walk the grids use), "paper / strict". */
static void f11_table(FILE *md, paper_model *m) {
  const paper_column pc = {"paper", ""}, sc = {"strict", ""};
  paper_value why = {0};
  paper_run *run = paper_find_run(m, "request", &pc, &why);
  double slacks[32];
  const int ns = run ? paper_request_slacks(m, &pc, slacks, 32) : 0;
  size_t idx[REPORT_MAX_SERIES], np = run ? report_headline_policies(run->c, 0, idx, REPORT_MAX_SERIES - 1) : 0;
  for (size_t p = 0; run && p < run->c->npolicies; p++)
    if (config_policy_named(run->c->policies[p].name, CONFIG_POLICY_DVFS_C_WALK) &&
        (!np || !config_policy_named(run->c->policies[idx[np - 1]].name, CONFIG_POLICY_DVFS_C_WALK)))
      idx[np++] = p;
  for (int ph = 0; run && ph < CONFIG_NPHASE; ph++) {
    fprintf(md, "| %s %s, slack |", m->name, phase_names[ph]);
    for (size_t p = 0; p < np; p++) fprintf(md, " %s |", run->c->policies[idx[p]].name);
    fprintf(md, "\n|---|");
    for (size_t p = 0; p < np; p++) fprintf(md, "---:|");
    fprintf(md, "\n");
    for (int s = 0; s < ns; s++) {
      fprintf(md, "| %g %% |", 100 * slacks[s]);
      for (size_t p = 0; p < np; p++) {
        const char *name = run->c->policies[idx[p]].name;
        const store_bucket_rec *b = NULL;
        const store_plan_rec *a = paper_request_plan(m, &pc, name, ph, slacks[s], &b, &why);
        const store_plan_rec *z = paper_request_plan(m, &sc, name, ph, slacks[s], &b, &why);
        if (a) fprintf(md, " %.2f", 100 * a->savings_vs_nodvfs);
        else fprintf(md, " –");
        if (z) fprintf(md, " / %.2f |", 100 * z->savings_vs_nodvfs);
        else fprintf(md, " / – |");
      }
      fprintf(md, "\n");
    }
    fprintf(md, "\n");
  }
}

static const char *const f11_budgets[2] = {"paper", "strict"};

int paper_plots(paper_ctx *x, enpu_err *err) {
  ENPU_FORWARD(figure14_plot(x, err));
  for (int i = 0; i < x->nmodels; i++)
    for (int b = 0; b < 2; b++) {
      const paper_column col = {f11_budgets[b], ""};
      ENPU_FORWARD(f11_plot(x, &x->models[i], &col, err));
    }
  return ENPU_OK;
}

int paper_md_figure11(paper_ctx *x, FILE *md, enpu_err *err) {
  fprintf(md, "## 5. Figure 11: energy saving, power saving and overhead of one request against slack\n\n"
              "Each model's single request (§4.1: 4096/512; prefill at 4096 tokens, decode the last step at 4608) "
              "in both budget modes; `" ENPU_POLICY_NAME_DVFS_C
              "` is the paper's GA, `" ENPU_POLICY_NAME_DVFS_C_WALK "` the same baseline with our hull "
              "walk (what the grids and the replay use). The figures draw, as the paper does, a group of bars "
              "per slack for " ENPU_POLICY_DISPLAY_NODVFS ", " ENPU_POLICY_DISPLAY_DVFS_C
              ", " ENPU_POLICY_DISPLAY_ENPU_C ", " ENPU_POLICY_DISPLAY_ENPU_ALL " and " ENPU_POLICY_DISPLAY_IDEAL
              " (▲ `paper`: the paper's stated " ENPU_POLICY_DISPLAY_ENPU_ALL " saving, "
              "a mean over the four models); the design-space variants are in Figures 15–17 and 21. "
              "Tables: energy saving (%%), `paper` / `strict` mode.\n\n");
  for (int i = 0; i < x->nmodels; i++) {
    fprintf(md, "### %s\n\n", x->models[i].name);
    for (int b = 0; b < 2; b++) {
      char png[160];
      snprintf(png, sizeof png, "figure11_%s_%s.png", x->models[i].name, f11_budgets[b]);
      paper_md_image(x, md, png, png);
    }
    f11_table(md, &x->models[i]);
  }
  return paper_md_claims(x, md, "11", err);
}
