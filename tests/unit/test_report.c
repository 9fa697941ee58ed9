/* test_report.c — the report's aggregation on stores written here with known values:
 * savings per (policy, phase, slack) over ok buckets only, the representative (median)
 * bucket among buckets ok in every policy, energy by component slot at a walk prefix
 * with instances split between two points, Figure 19's op matching against the real
 * cost model (demo job), a clear error when gnuplot cannot be run, and a report's
 * figures drawn in one gnuplot, or one gnuplot each when that one fails.
 * Expected values come from this file's formulas, never from the report's output. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "report.h"
#include "report_internal.h"
#include "test_report.h"
#include "search.h"
#include "store_fixture.h"
#include "test_util.h"

/* ---------------------------------------------------------------------------------
 * A policy's tables, filled by the helpers below */

typedef struct {
  const char *name;
  store_op_rec ops[64];
  store_pareto_rec pareto[128];
  store_bucket_rec buckets[8];
  store_bucket_op_rec bops[64];
  store_walk_rec walk[64];
  store_plan_rec plans[16];
  store_plan_state_rec pstates[64];
  size_t nops, npareto, nbuckets, nbops, nwalk, nplans, npstates;
} pol_fx;

static const store_provenance prov = {.cost_model_hash = 1,
                                      .chip_hash = 2,
                                      .model_hash = 3,
                                      .job_hash = 4,
                                      .tool_version = "test",
                                      .job_json = "{\"name\": \"report-unit\"}"};

static int write_store(const char *path, pol_fx *const *pols, size_t n) {
  store_fixture_policy views[2];
  enpu_err err = {0};
  if (n > sizeof views / sizeof views[0]) return -1;
  for (size_t i = 0; i < n; i++) {
    const pol_fx *p = pols[i];
    views[i] = STORE_FIXTURE_VIEW(p->name, *p);
  }
  int rc = store_fixture_write(path, &prov, 1, views, n, &err);
  if (rc) fprintf(stderr, "write_store: %s\n", err.msg);
  return rc;
}

/* ---------------------------------------------------------------------------------
 * Synthetic store: op 0 has 3 points, op 1 has 2; slot s of point k of op i costs
 * (i+1)(s+1)(10-3k) nJ and the point takes 100 (i+1)(1+0.5k) ns. Every ok bucket runs 4
 * instances of op 0 and 2 of op 1 and takes the same walk. */

static double pt_time(int i, int k) { return 100.0 * (i + 1) * (1 + 0.5 * k); }
static double slot_e(int i, int k, int s) { return (i + 1.0) * (s + 1.0) * (10.0 - 3.0 * k); }

static const struct {
  int op, from, to;
  uint64_t n;
} walk_steps[] = {{0, 0, 1, 3}, {0, 0, 1, 1}, {1, 0, 1, 2}, {0, 1, 2, 2}};
#define NSTEPS (sizeof walk_steps / sizeof walk_steps[0])
enum { MULT0 = 4, MULT1 = 2 };

static void add_ops(pol_fx *p) {
  const int npts[2] = {3, 2};
  for (int i = 0; i < 2; i++) {
    p->ops[i] = (store_op_rec){.signature = 100u + (uint64_t)i,
                               .kind = 0,
                               .pareto_first = (uint32_t)p->npareto,
                               .pareto_count = (uint32_t)npts[i],
                               .evaluations = 1};
    snprintf(p->ops[i].name, sizeof p->ops[i].name, "op%d", i);
    for (int k = 0; k < npts[i]; k++) {
      store_pareto_rec *pt = &p->pareto[p->npareto++];
      *pt = (store_pareto_rec){.op = (uint32_t)i, .time_ns = pt_time(i, k)};
      for (int s = 0; s < STORE_NENERGY; s++)
        pt->energy_by_slot_nj[s] = slot_e(i, k, s), pt->energy_nj += slot_e(i, k, s);
      for (int c = 0; c < STORE_NSTATE; c++) pt->states[c] = (uint8_t)(34 - 5 * k);
    }
  }
  p->nops = 2;
}

/* A bucket; ok buckets get the walk and plans at slack 0 (prefix 1) and 0.05 (prefix 4)
 * with the given savings. A failed bucket gets one plan (savings 0.99) that must be
 * ignored. */
static void add_bucket(pol_fx *p, int phase, int batch, int seq, int status, double t_nodvfs, double sav0,
                       double sav5) {
  const uint32_t row = (uint32_t)p->nbuckets++;
  store_bucket_rec *b = &p->buckets[row];
  *b = (store_bucket_rec){.phase = (uint8_t)phase,
                          .status = (uint8_t)status,
                          .batch = batch,
                          .seq = seq,
                          .t_nodvfs_ns = t_nodvfs,
                          .t_peak_ns = t_nodvfs,
                          .e_nodvfs_nj = 1000,
                          .plan_first = (uint32_t)p->nplans};
  if (status == STORE_BUCKET_FAILED) {
    p->plans[p->nplans++] = (store_plan_rec){.bucket = row, .slack = 0, .savings_vs_nodvfs = 0.99};
    b->plan_count = 1;
    return;
  }
  if (status != STORE_BUCKET_OK) return;
  b->ops_first = (uint32_t)p->nbops;
  b->ops_count = 2;
  p->bops[p->nbops++] = (store_bucket_op_rec){row, 0, MULT0};
  p->bops[p->nbops++] = (store_bucket_op_rec){row, 1, MULT1};
  double t = MULT0 * pt_time(0, 0) + MULT1 * pt_time(1, 0);
  b->walk_start_time_ns = t;
  b->walk_first = p->nwalk;
  b->walk_count = NSTEPS;
  const uint32_t first[2] = {0, 3};
  for (size_t k = 0; k < NSTEPS; k++) {
    t += walk_steps[k].n *
         (pt_time(walk_steps[k].op, walk_steps[k].to) - pt_time(walk_steps[k].op, walk_steps[k].from));
    p->walk[p->nwalk++] = (store_walk_rec){
        row, (uint32_t)walk_steps[k].op, first[walk_steps[k].op] + (uint32_t)walk_steps[k].to, walk_steps[k].n, t,
        0};
  }
  const double sav[2] = {sav0, sav5};
  const uint64_t prefix[2] = {1, 4};
  /* The prefixes' runs (op, point, instances): after step 1, 3 of op 0's 4 instances on
   * its point 1; after step 4, 2 on point 2 and 2 on point 1, op 1's 2 on its point 1. */
  static const struct {
    int op, pt;
    uint64_t n;
  } runs[2][3] = {{{0, 1, 3}, {0, 0, 1}, {1, 0, 2}}, {{0, 2, 2}, {0, 1, 2}, {1, 1, 2}}};
  for (int k = 0; k < 2; k++) {
    const uint32_t plan = (uint32_t)p->nplans;
    p->plans[p->nplans++] = (store_plan_rec){.bucket = row,
                                             .slack = 0.05 * k,
                                             .walk_prefix = prefix[k],
                                             .savings_vs_nodvfs = sav[k],
                                             .energy_nj = 1000 * (1 - sav[k]),
                                             .overhead_pct = sav[k] / 10,
                                             .states_first = p->npstates,
                                             .states_count = 3};
    for (int r = 0; r < 3; r++) {
      const uint32_t pt = first[runs[k][r].op] + (uint32_t)runs[k][r].pt;
      store_plan_state_rec *s = &p->pstates[p->npstates++];
      *s = (store_plan_state_rec){
          .plan = plan, .op = (uint32_t)runs[k][r].op, .pareto = pt, .instances = runs[k][r].n};
      memcpy(s->states, p->pareto[pt].states, STORE_NSTATE);
    }
  }
  b->plan_count = 2;
}

typedef struct {
  char dir[STORE_FIXTURE_DIR_LEN], path[STORE_FIXTURE_PATH_LEN];
  store_contents *c;
} ctx;

static pol_fx fx_enpu, fx_nodvfs;

static int setup(void **state) {
  ctx *c = calloc(1, sizeof *c);
  if (!c) return -1;
  if (store_fixture_dir_make("test_report", c->dir, c->path) != 0) return -1;
  fx_enpu = (pol_fx){.name = "enpu-all"};
  fx_nodvfs = (pol_fx){.name = "nodvfs"};
  add_ops(&fx_enpu);
  add_ops(&fx_nodvfs);
  add_bucket(&fx_enpu, STORE_PHASE_PREFILL, 1, 128, STORE_BUCKET_OK, 1000, 0.10, 0.15);
  add_bucket(&fx_enpu, STORE_PHASE_PREFILL, 1, 512, STORE_BUCKET_OK, 3000, 0.20, 0.25);
  add_bucket(&fx_enpu, STORE_PHASE_PREFILL, 4, 128, STORE_BUCKET_OK, 2000, 0.30, 0.50);
  add_bucket(&fx_enpu, STORE_PHASE_DECODE, 1, 1024, STORE_BUCKET_OK, 500, 0.05, 0.07);
  add_bucket(&fx_enpu, STORE_PHASE_DECODE, 8, 256, STORE_BUCKET_FAILED, 0, 0, 0);
  add_bucket(&fx_nodvfs, STORE_PHASE_PREFILL, 1, 128, STORE_BUCKET_OK, 1000, 0, 0);
  add_bucket(&fx_nodvfs, STORE_PHASE_PREFILL, 1, 512, STORE_BUCKET_OK, 3000, 0, 0);
  add_bucket(&fx_nodvfs, STORE_PHASE_PREFILL, 4, 128, STORE_BUCKET_INFEASIBLE_CAPACITY, 2000, 0, 0);
  add_bucket(&fx_nodvfs, STORE_PHASE_DECODE, 1, 1024, STORE_BUCKET_OK, 500, 0, 0);
  pol_fx *pols[] = {&fx_nodvfs, &fx_enpu};
  enpu_err err = {0};
  const int failed = write_store(c->path, pols, 2) || store_load(c->path, &c->c, &err);
  return test_setup_done(failed, &err, state, c);
}

static int teardown(void **state) {
  ctx *c = *state;
  store_contents_free(c->c);
  int rc = store_fixture_dir_remove(c->dir);
  free(c);
  return rc;
}

/* ---------------------------------------------------------------------------------
 * Figure 11, representative buckets, Figure 12 */

static void check_row(const report_savings_row *r, const char *policy, int phase, double slack, size_t n,
                      double mean, double min, double max) {
  assert_string_equal(r->policy, policy);
  assert_int_equal(r->phase, phase);
  assert_near(r->slack, slack, 0);
  assert_int_equal(r->buckets, n);
  assert_near(r->mean, mean, 1e-12);
  assert_near(r->min, min, 1e-12);
  assert_near(r->max, max, 1e-12);
  assert_int_equal(r->budget, STORE_BUDGET_STRICT);
  assert_near(r->overhead_max, max / 10, 1e-12); /* the fixture's overhead is saving / 10 */
  assert_near(r->overhead_mean, mean / 10, 1e-12);
}

static void test_savings(void **state) {
  ctx *c = *state;
  report_savings_row *rows = NULL;
  size_t n = 0;
  enpu_err err = {0};
  assert_int_equal(report_savings(c->c, &rows, &n, &err), 0);
  assert_int_equal(n, 8);
  /* store order: enpu-all before nodvfs; the failed decode bucket's 0.99 is left out */
  check_row(&rows[0], "enpu-all", STORE_PHASE_PREFILL, 0, 3, 0.2, 0.1, 0.3);
  check_row(&rows[1], "enpu-all", STORE_PHASE_PREFILL, 0.05, 3, 0.3, 0.15, 0.5);
  check_row(&rows[2], "enpu-all", STORE_PHASE_DECODE, 0, 1, 0.05, 0.05, 0.05);
  check_row(&rows[3], "enpu-all", STORE_PHASE_DECODE, 0.05, 1, 0.07, 0.07, 0.07);
  check_row(&rows[4], "nodvfs", STORE_PHASE_PREFILL, 0, 2, 0, 0, 0);
  check_row(&rows[7], "nodvfs", STORE_PHASE_DECODE, 0.05, 1, 0, 0, 0);
  free(rows);
}

/* Plans of one (policy, phase, slack) compiled in different budget modes are separate
 * rows, strict first, each with its own overhead. */
static void test_savings_budget_modes(void **state) {
  (void)state;
  store_bucket_rec b[2] = {{.phase = STORE_PHASE_DECODE, .status = STORE_BUCKET_OK, .budget = STORE_BUDGET_PAPER},
                           {.phase = STORE_PHASE_DECODE, .status = STORE_BUCKET_OK, .budget = STORE_BUDGET_STRICT}};
  store_plan_rec pl[3] = {
      {.bucket = 0, .slack = 0.1, .budget = STORE_BUDGET_PAPER, .savings_vs_nodvfs = 0.2, .overhead_pct = 0.5},
      {.bucket = 1, .slack = 0.1, .budget = STORE_BUDGET_STRICT, .savings_vs_nodvfs = 0.1, .overhead_pct = 0.25},
      {.bucket = 0, .slack = 0.1, .budget = STORE_BUDGET_PAPER, .savings_vs_nodvfs = 0.4, .overhead_pct = 1.5}};
  store_policy_tables p = {.name = "enpu-all", .buckets = b, .nbuckets = 2, .plans = pl, .nplans = 3};
  store_contents c = {.policies = &p, .npolicies = 1};
  report_savings_row *rows = NULL;
  size_t n = 0;
  enpu_err err = {0};
  assert_int_equal(report_savings(&c, &rows, &n, &err), 0);
  assert_int_equal(n, 2);
  assert_int_equal(rows[0].budget, STORE_BUDGET_STRICT);
  assert_int_equal(rows[0].buckets, 1);
  assert_near(rows[0].overhead_mean, 0.25, 1e-12);
  assert_int_equal(rows[1].budget, STORE_BUDGET_PAPER);
  assert_int_equal(rows[1].buckets, 2);
  assert_near(rows[1].mean, 0.3, 1e-12);
  assert_near(rows[1].overhead_mean, 1.0, 1e-12);
  assert_near(rows[1].overhead_max, 1.5, 1e-12);
  free(rows);
}

static void test_pick_bucket(void **state) {
  ctx *c = *state;
  report_bucket_key k;
  enpu_err err = {0};
  /* (4,128) is infeasible under nodvfs, so the candidates are t=1000 and t=3000: the
   * lower median is (1,128) */
  assert_int_equal(report_pick_bucket(c->c, STORE_PHASE_PREFILL, &k, &err), 0);
  assert_int_equal(k.batch, 1);
  assert_int_equal(k.seq, 128);
  assert_int_equal(report_pick_bucket(c->c, STORE_PHASE_DECODE, &k, &err), 0);
  assert_int_equal(k.batch, 1);
  assert_int_equal(k.seq, 1024);
  store_contents none = {0};
  assert_int_equal(report_pick_bucket(&none, STORE_PHASE_DECODE, &k, &err), ENPU_ERR_NOT_FOUND);
}

static void test_breakdown(void **state) {
  ctx *c = *state;
  report_bucket_key key = {STORE_PHASE_PREFILL, 1, 128};
  report_breakdown_row *rows = NULL;
  size_t n = 0;
  enpu_err err = {0};
  assert_int_equal(report_breakdown(c->c, &key, &rows, &n, &err), 0);
  assert_int_equal(n, 4); /* two policies x two slacks */
  for (size_t r = 0; r < n; r++) {
    assert_string_equal(rows[r].policy, r < 2 ? "enpu-all" : "nodvfs");
    assert_near(rows[r].slack, r % 2 ? 0.05 : 0, 0);
    double total = 0;
    for (int s = 0; s < STORE_NENERGY; s++) {
      /* prefix 1: op 0 has 3 instances at point 1, 1 at point 0; op 1 both at point 0.
       * prefix 4: op 0 has 2 at point 2 (lead) and 2 at point 1; op 1 both at point 1. */
      double want = r % 2 == 0 ? 3 * slot_e(0, 1, s) + slot_e(0, 0, s) + 2 * slot_e(1, 0, s)
                               : 2 * slot_e(0, 2, s) + 2 * slot_e(0, 1, s) + 2 * slot_e(1, 1, s);
      assert_near(rows[r].slot_nj[s], want, 1e-9);
      total += want;
    }
    assert_near(rows[r].slots_total_nj, total, 1e-9);
    assert_near(rows[r].e_nodvfs_nj, 1000, 0);
  }
  assert_near(rows[1].plan_energy_nj, 1000 * (1 - 0.15), 1e-9);
  free(rows);
  report_bucket_key missing = {STORE_PHASE_DECODE, 8, 256}; /* failed everywhere */
  assert_int_equal(report_breakdown(c->c, &missing, &rows, &n, &err), ENPU_ERR_NOT_FOUND);
  assert_null(rows);
}

static void test_missing_gnuplot(void **state) {
  ctx *c = *state;
  char out[160];
  snprintf(out, sizeof out, "%s/out", c->dir);
  report_options o = {.store_path = c->path, .out_dir = out, .gnuplot = "/nonexistent/gnuplot", .freq_slack = -1};
  enpu_err err = {0};
  char *md = NULL;
  assert_int_equal(report_write(&o, &md, &err), ENPU_ERR_NOT_FOUND);
  assert_non_null(strstr(err.msg, "gnuplot"));
  assert_null(md);
  snprintf(out, sizeof out, "%s/out/report.md", c->dir);
  assert_int_equal(access(out, F_OK), -1); /* no report without its plots */
}

/* ---------------------------------------------------------------------------------
 * A report call's figures in one gnuplot (report_plots.c), through a wrapper that counts
 * the gnuplots started and runs the real one. */

static bool have_gnuplot(void) { return system("command -v gnuplot > /dev/null 2>&1") == 0; }

/* <dir>/<name> with `text`. */
static void put_file(const char *dir, const char *name, const char *text) {
  char path[512];
  snprintf(path, sizeof path, "%s/%s", dir, name);
  FILE *f = fopen(path, "w");
  assert_non_null(f);
  fputs(text, f);
  assert_int_equal(fclose(f), 0);
}

/* <dir>/gnuplot-counted into prog: a line in <dir>/starts per start, then gnuplot. */
static void counting_gnuplot(const char *dir, char *prog, size_t cap) {
  char text[512];
  snprintf(text, sizeof text, "#!/bin/sh\necho start >> '%s/starts'\nexec gnuplot \"$@\"\n", dir);
  put_file(dir, "gnuplot-counted", text);
  snprintf(prog, cap, "%s/gnuplot-counted", dir);
  assert_int_equal(chmod(prog, 0755), 0);
}

/* Lines of <dir>/starts (0 when absent), then the file removed. */
static int take_starts(const char *dir) {
  char path[512], line[64];
  snprintf(path, sizeof path, "%s/starts", dir);
  FILE *f = fopen(path, "r");
  int n = 0;
  while (f && fgets(line, sizeof line, f)) n++;
  if (f) fclose(f);
  remove(path);
  return n;
}

/* A figure drawing <png> from x; `extra`: commands before the plot. */
static void put_figure(const char *dir, const char *gp, const char *png, const char *extra) {
  char text[512];
  snprintf(text, sizeof text, "set terminal pngcairo size 200,100\nset output '%s'\n%splot x\n", png, extra);
  put_file(dir, gp, text);
}

static off_t file_size(const char *dir, const char *name) {
  char path[512];
  snprintf(path, sizeof path, "%s/%s", dir, name);
  struct stat st;
  return stat(path, &st) == 0 ? st.st_size : -1;
}

/* The text of <dir>/<name> ("" when absent), malloc'd. */
static char *slurp(const char *dir, const char *name) {
  char path[512], *text = NULL;
  size_t len = 0;
  snprintf(path, sizeof path, "%s/%s", dir, name);
  return enpu_read_file(path, &text, &len, NULL) == 0 ? text : strdup("");
}

/* A queue of three figures (dirs[k]/stems[k].gp drawing stems[k].png) and a report
 * dir_md/r.md.tmp to publish as r.md (paths into md_tmp and md). */
static report_plots *queue3(const char *prog, const char *const dirs[3], const char *const stems[3],
                            const char *dir_md, char md_tmp[300], char md[300]) {
  char gp[64], png[64];
  report_plots *q = NULL;
  enpu_err err = {0};
  put_file(dir_md, "r.md.tmp", "report\n");
  snprintf(md_tmp, 300, "%s/r.md.tmp", dir_md);
  snprintf(md, 300, "%s/r.md", dir_md);
  assert_int_equal(report_plots_create(prog, &q, &err), 0);
  for (int k = 0; k < 3; k++) {
    snprintf(gp, sizeof gp, "%s.gp", stems[k]);
    snprintf(png, sizeof png, "%s.png", stems[k]);
    assert_int_equal(report_plots_add(q, dirs[k], gp, png, &err), 0);
  }
  assert_int_equal(report_plots_publish(q, md_tmp, md, &err), 0);
  return q;
}

/* Three figures in two directories (one with a quote in its name), one leaving a
 * multiplot open, two printing: one gnuplot draws them all, each directory's gnuplot.log
 * gets what its figures printed, and the queued file is published. */
static void test_plots_batch(void **state) {
  if (!have_gnuplot()) skip();
  ctx *c = *state;
  char prog[256], a[256], b[256], md[300], md_tmp[300];
  counting_gnuplot(c->dir, prog, sizeof prog);
  snprintf(a, sizeof a, "%s/batch-a", c->dir);
  snprintf(b, sizeof b, "%s/batch-it's", c->dir);
  assert_int_equal(mkdir(a, 0755), 0);
  assert_int_equal(mkdir(b, 0755), 0);
  put_figure(a, "one.gp", "one.png", "print 'one was here'\n");
  put_figure(a, "two.gp", "two.png", "set multiplot layout 1,2\nplot -x\n"); /* left open */
  put_figure(b, "three.gp", "three.png", "print 'three was here'\n");
  put_file(a, "one.png", "stale"); /* redrawn, not taken for drawn */
  enpu_err err = {0};
  report_plots *q = queue3(prog, (const char *const[]){a, a, b}, (const char *const[]){"one", "two", "three"}, a,
                           md_tmp, md);
  assert_int_equal(access(md, F_OK), -1); /* not before the figures are drawn */
  if (report_plots_draw(q, &err) != 0) fail_msg("%s", err.msg);
  assert_int_equal(take_starts(c->dir), 1);
  assert_true(file_size(a, "one.png") > (off_t)sizeof "stale");
  assert_true(file_size(a, "two.png") > 0);
  assert_true(file_size(b, "three.png") > 0);
  assert_int_equal(access(md, F_OK), 0);
  assert_int_equal(access(md_tmp, F_OK), -1);
  char *log_a = slurp(a, "gnuplot.log"), *log_b = slurp(b, "gnuplot.log");
  assert_non_null(strstr(log_a, "one was here"));
  assert_null(strstr(log_a, "three was here"));
  assert_non_null(strstr(log_b, "three was here"));
  assert_null(strstr(log_b, "one was here"));
  free(log_a);
  free(log_b);
  assert_int_equal(report_plots_draw(q, &err), 0); /* the queue is empty: nothing runs */
  assert_int_equal(take_starts(c->dir), 0);
  report_plots_free(q);
  assert_int_equal(access(md, F_OK), 0); /* published stays */
  report_plots_free(NULL);
}

/* A batch with a broken script: every figure is drawn again one gnuplot each, up to the
 * broken one, whose error names it, gnuplot's first line and the log; nothing is
 * published. A batch that exits 0 but leaves a PNG missing falls back the same way. */
static void test_plots_fallback(void **state) {
  if (!have_gnuplot()) skip();
  ctx *c = *state;
  char prog[256], a[256], md[300], md_tmp[300], want[640];
  counting_gnuplot(c->dir, prog, sizeof prog);
  snprintf(a, sizeof a, "%s/fallback", c->dir);
  assert_int_equal(mkdir(a, 0755), 0);
  put_figure(a, "good.gp", "good.png", "");
  put_file(a, "broken.gp", "set terminal pngcairo size 200,100\nset output 'broken.png'\nplot nosuch(x)\n");
  put_figure(a, "late.gp", "late.png", "");
  put_file(a, "gnuplot.log", "Warning: a line from an earlier run\n"); /* the error quotes this run's */
  enpu_err err = {0};
  report_plots *q = queue3(prog, (const char *const[]){a, a, a}, (const char *const[]){"good", "broken", "late"}, a,
                           md_tmp, md);
  assert_int_equal(report_plots_draw(q, &err), ENPU_ERR_INTERNAL);
  snprintf(want, sizeof want, "gnuplot failed on %s/broken.gp (status 1): ", a);
  assert_non_null(strstr(err.msg, want));
  assert_non_null(strstr(err.msg, "nosuch"));
  assert_null(strstr(err.msg, "earlier run"));
  snprintf(want, sizeof want, "(see %s/gnuplot.log)", a);
  assert_non_null(strstr(err.msg, want));
  assert_int_equal(take_starts(c->dir), 3); /* the batch, good.gp alone, broken.gp alone */
  assert_true(file_size(a, "good.png") > 0);
  report_plots_free(q);
  assert_int_equal(access(md, F_OK), -1);
  assert_int_equal(access(md_tmp, F_OK), -1); /* not published: removed */

  /* gnuplot exits 0 but writes another file than the queued PNG */
  put_figure(a, "misnamed.gp", "elsewhere.png", "");
  assert_int_equal(report_plots_create(prog, &q, &err), 0);
  assert_int_equal(report_plots_add(q, a, "good.gp", "good.png", &err), 0);
  assert_int_equal(report_plots_add(q, a, "misnamed.gp", "misnamed.png", &err), 0);
  assert_int_equal(report_plots_draw(q, &err), ENPU_ERR_INTERNAL);
  snprintf(want, sizeof want, "gnuplot ran %s/misnamed.gp but wrote no %s/misnamed.png", a, a);
  assert_non_null(strstr(err.msg, want));
  assert_int_equal(take_starts(c->dir), 3);
  report_plots_free(q);
}

/* A whole report's figures: one gnuplot. */
static void test_report_one_gnuplot(void **state) {
  if (!have_gnuplot()) skip();
  ctx *c = *state;
  char prog[256], out[256];
  counting_gnuplot(c->dir, prog, sizeof prog);
  snprintf(out, sizeof out, "%s/one-gnuplot", c->dir);
  report_options o = {.store_path = c->path, .out_dir = out, .gnuplot = prog, .freq_slack = -1};
  enpu_err err = {0};
  char *md = NULL;
  if (report_write(&o, &md, &err) != 0) fail_msg("%s", err.msg);
  assert_int_equal(access(md, F_OK), 0);
  free(md);
  assert_true(file_size(out, "savings_prefill.png") > 0);
  assert_true(file_size(out, "breakdown_decode.png") > 0);
  assert_int_equal(take_starts(c->dir), 1);
}

/* ---------------------------------------------------------------------------------
 * Figure 19 on the demo job: a store whose ops are the graph's, with times from the
 * cost model, plus one op no graph op has. */

static void test_freq_util(void **state) {
  ctx *c = *state;
  enpu_err err = {0};
  config_job *job = NULL;
  graph *g = NULL;
  cost_ctx *cost = NULL;
  search_ctx *sx = NULL;
  assert_int_equal(config_job_load(ENPU_SOURCE_DIR "/jobs/demo.json", &job, &err), 0);
  assert_int_equal(graph_build(job, CONFIG_DECODE, 8, 2048, &g, &err), 0);
  assert_int_equal(cost_ctx_create(&job->chip, &cost, &err), 0);
  assert_int_equal(search_ctx_create(&job->chip, &sx, &err), 0);
  const int peak = job->chip.freq_states;
  const int low[CONFIG_NCOMP] = {peak / 2, peak / 3, peak - 4, peak, peak};
  int top[CONFIG_NCOMP];
  for (int k = 0; k < CONFIG_NCOMP; k++) top[k] = peak;

  static pol_fx p;
  p = (pol_fx){.name = "enpu-all"};
  double util[64][CONFIG_NCOMP];
  store_bucket_rec *b = &p.buckets[p.nbuckets++];
  *b = (store_bucket_rec){.phase = STORE_PHASE_DECODE,
                          .status = STORE_BUCKET_OK,
                          .batch = 8,
                          .seq = 2048,
                          .t_nodvfs_ns = 1,
                          .t_peak_ns = 1,
                          .e_nodvfs_nj = 1};
  double t = 0;
  /* each op under the key a farm files it under, the identity the report matches by */
  config_policy_spec spec;
  assert_int_equal(config_policy_spec_parse("enpu-all", &spec), 0);
  search_options opt;
  search_options_for_job(&opt, job, &spec);
  for (int j = 0; j < graph_op_count(g); j++) {
    const graph_op *op = graph_op_at(g, j);
    const uint64_t key = search_op_key(job, &spec, &opt, op);
    int seen = 0;
    for (size_t i = 0; i < p.nops; i++) seen |= p.ops[i].signature == key;
    if (seen) continue;
    assert_true(p.nops < 63);
    const size_t i = p.nops++;
    p.ops[i] = (store_op_rec){
        .signature = key, .kind = (uint32_t)op->kind, .pareto_first = (uint32_t)p.npareto, .pareto_count = 2};
    snprintf(p.ops[i].name, sizeof p.ops[i].name, "%s", op->name);
    for (int k = 0; k < 2; k++) {
      cost_result r;
      assert_int_equal(search_op_breakdown(sx, cost, op, CONFIG_POLICY_ENPU_ALL, NULL, k ? low : top, &r, &err), 0);
      store_pareto_rec *pt = &p.pareto[p.npareto++];
      *pt = (store_pareto_rec){.op = (uint32_t)i, .time_ns = r.time_ns, .energy_nj = r.energy_total_nj};
      for (int s = 0; s < CONFIG_NCOMP; s++) pt->states[s] = (uint8_t)(k ? low : top)[s];
      if (k == 0) t += (double)op->multiplicity * r.time_ns;
    }
    cost_result pk;
    assert_int_equal(search_op_breakdown(sx, cost, op, CONFIG_POLICY_NODVFS, NULL, top, &pk, &err), 0);
    memcpy(util[i], pk.utilization, sizeof util[i]);
    p.bops[p.nbops++] = (store_bucket_op_rec){0, (uint32_t)i, (uint64_t)op->multiplicity};
  }
  /* an op the graph does not have: a key no graph op has */
  const size_t bogus = p.nops++;
  p.ops[bogus] = (store_op_rec){.signature = 1,
                                .kind = GRAPH_MATMUL,
                                .pareto_first = (uint32_t)p.npareto,
                                .pareto_count = 1,
                                .name = "no.such.op"};
  p.pareto[p.npareto++] = (store_pareto_rec){.op = (uint32_t)bogus, .time_ns = 1234, .states = {1, 1, 1, 1, 1}};
  p.bops[p.nbops++] = (store_bucket_op_rec){0, (uint32_t)bogus, 1};
  t += 1234;
  b->walk_start_time_ns = t;
  b->ops_count = (uint32_t)p.nbops;
  /* every real op moves all its instances to its slower point */
  for (size_t i = 0; i < bogus; i++) {
    const store_pareto_rec *a = &p.pareto[p.ops[i].pareto_first];
    t += (double)p.bops[i].multiplicity * (a[1].time_ns - a[0].time_ns);
    p.walk[p.nwalk++] = (store_walk_rec){0, (uint32_t)i, p.ops[i].pareto_first + 1, p.bops[i].multiplicity, t, 0};
  }
  b->walk_count = p.nwalk;
  p.plans[p.nplans++] = (store_plan_rec){.bucket = 0, .slack = 0.02, .walk_prefix = 0};
  p.plans[p.nplans++] = (store_plan_rec){.bucket = 0, .slack = 0.3, .walk_prefix = p.nwalk};
  b->plan_count = 2;
  for (uint32_t k = 0; k < 2; k++) { /* the runs: every op on its fastest / slower point */
    p.plans[k].states_first = p.npstates, p.plans[k].states_count = p.nbops;
    for (size_t i = 0; i < p.nbops; i++) {
      const uint32_t pt = p.ops[i].pareto_first + (k && i < bogus ? 1 : 0);
      store_plan_state_rec *st = &p.pstates[p.npstates++];
      *st = (store_plan_state_rec){.plan = k, .op = (uint32_t)i, .pareto = pt, .instances = p.bops[i].multiplicity};
      memcpy(st->states, p.pareto[pt].states, STORE_NSTATE);
    }
  }

  char path[160];
  snprintf(path, sizeof path, "%s/freq.h5", c->dir);
  pol_fx *pols[] = {&p};
  assert_int_equal(write_store(path, pols, 1), 0);
  store_contents *sc = NULL;
  assert_int_equal(store_load(path, &sc, &err), 0);
  report_bucket_key key = {STORE_PHASE_DECODE, 8, 2048};
  report_freq_row *rows = NULL;
  size_t n = 0;
  double used = -1;
  /* slack 25 %: the closest stored slack is 30 %, the plan with every op slowed */
  assert_int_equal(report_freq_util(sc, job, "enpu-all", &key, 0.25, &rows, &n, &used, &err), 0);
  assert_near(used, 0.3, 0);
  assert_int_equal(n, p.nops);
  double busiest = 0;
  for (size_t i = 0; i < bogus; i++) {
    assert_string_equal(rows[i].op, p.ops[i].name);
    assert_int_equal(rows[i].matched, 1);
    assert_int_equal(rows[i].instances, p.bops[i].multiplicity);
    for (int k = 0; k < CONFIG_NCOMP; k++) {
      assert_int_equal(rows[i].state[k], low[k]);
      assert_near(rows[i].util_peak[k], util[i][k], 1e-12);
      assert_true(rows[i].util_peak[k] >= 0 && rows[i].util_peak[k] <= 1 + 1e-9);
      busiest = fmax(busiest, rows[i].util_peak[k]);
    }
  }
  assert_true(busiest > 0.5); /* every op keeps some component busy at peak */
  assert_int_equal(rows[bogus].matched, 0);
  free(rows);
  /* slack 0 %: the closest is 2 %, walk prefix 0: every op at its fastest (peak) point */
  assert_int_equal(report_freq_util(sc, job, "enpu-all", &key, 0, &rows, &n, &used, &err), 0);
  assert_near(used, 0.02, 0);
  for (size_t i = 0; i < bogus; i++) {
    assert_int_equal(rows[i].matched, 1);
    assert_int_equal(rows[i].state[0], peak);
  }
  free(rows);
  assert_int_equal(report_freq_util(sc, job, "dvfs-c", &key, 0, &rows, &n, &used, &err), ENPU_ERR_NOT_FOUND);
  assert_int_equal(report_freq_util(sc, job, "bogus", &key, 0, &rows, &n, &used, &err), ENPU_ERR_NOT_FOUND);

  store_contents_free(sc);
  search_ctx_free(sx);
  cost_ctx_free(cost);
  graph_free(g);
  config_job_free(job);
}

/* A sweep group whose point holds a value that is no number is refused by the sweep
 * report (config_point_parse), not read as the number its digits begin with. */
static void test_arch_bad_point(void **state) {
  ctx *c = *state;
  static pol_fx bad;
  bad = fx_enpu;
  bad.name = "enpu-all:ivr.step_ns=4x";
  pol_fx *pols[] = {&fx_enpu, &bad};
  char path[160], out[160];
  snprintf(path, sizeof path, "%s/arch.h5", c->dir);
  snprintf(out, sizeof out, "%s/arch", c->dir);
  assert_int_equal(write_store(path, pols, 2), 0);
  const report_arch_options o = {.store_path = path, .out_dir = out, .slack = -1};
  enpu_err err = {0};
  assert_int_equal(report_arch_write(&o, NULL, &err), ENPU_ERR_FORMAT);
  assert_non_null(strstr(err.msg, "ivr.step_ns: expected a number, got \"4x\""));
}

/* The plan-store reader ships without config, so it spells the names of its default
 * rule (planstore.h: enpu-all, enpu-c, an enpu*, any but the references) itself; here
 * they are held against the policy table. */
static void test_default_policy_names(void **state) {
  (void)state;
  const char *names[CONFIG_NPOLICY];
  for (int p = 0; p < CONFIG_NPOLICY; p++) names[p] = config_policy_name((config_policy)p);
  assert_int_equal(planstore_default_policy_index(names, CONFIG_NPOLICY), CONFIG_POLICY_ENPU_ALL);
  names[CONFIG_POLICY_ENPU_ALL] = config_policy_name(CONFIG_POLICY_NODVFS);
  assert_int_equal(planstore_default_policy_index(names, CONFIG_NPOLICY), CONFIG_POLICY_ENPU_C);
  const char *refs[] = {config_policy_name(CONFIG_POLICY_UNIFORM), config_policy_name(CONFIG_POLICY_NODVFS),
                        config_policy_name(CONFIG_POLICY_IDEAL)};
  assert_int_equal(planstore_default_policy_index(refs, 3), 2); /* nodvfs and uniform are references */
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_savings),
      cmocka_unit_test(test_default_policy_names),
      cmocka_unit_test(test_arch_bad_point),
      cmocka_unit_test(test_savings_budget_modes),
      cmocka_unit_test(test_pick_bucket),
      cmocka_unit_test(test_breakdown),
      cmocka_unit_test(test_freq_util),
      cmocka_unit_test(test_missing_gnuplot),
      cmocka_unit_test(test_plots_batch),
      cmocka_unit_test(test_plots_fallback),
      cmocka_unit_test(test_report_one_gnuplot),
  };
  return cmocka_run_group_tests(tests, setup, teardown);
}
