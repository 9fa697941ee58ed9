/* test_search_budget.c — budget modes and the baselines' domains (DVFS-C compute only,
 * eNPU-C keeps the HBM I/O, paper equals strict without overhead) (the search module's
 * unit tests, one program: test_search.c runs these with its own; test_search.h has what
 * the files share). */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>
#include "search.h"
#include "search_internal.h"
#include "test_search.h"
#include "test_size.h"

/* ---------------------------------------------------------------------------------
 * Budget modes and the baselines' domains */

/* DVFS-C scales the compute domain only (§4.1): on a real bucket, in both budget modes
 * and with both request levels (its GA and the dvfs-c-walk variant), no plan moves HBM or
 * ICI off peak; at all-peak its HBM and ICI are priced exactly as NoDVFS's (the fixed
 * regulator), its SA through the DVFS IVR. */
static void test_dvfs_c_compute_only(void **state) {
  (void)state;
  enpu_err err = {0};
  real_bucket rb;
  real_bucket_open(&rb);
  const double slacks[3] = {0, 0.05, 0.30};
  const int peak = rb.job->chip.freq_states;
  const config_policy pols[2] = {CONFIG_POLICY_DVFS_C, CONFIG_POLICY_DVFS_C_WALK};
  for (int b = 0; b < CONFIG_NBUDGET; b++)
    for (int p = 0; p < 2; p++) {
      search_options o;
      search_options_default(&o);
      o.ga = (search_ga_params){60, 20, 5};
      o.budget = (config_budget)b;
      search_bucket_result r;
      if (search_compile_bucket(rb.sx, rb.cost, rb.g, pols[p], slacks, 3, &o, &r, &err) < 0)
        fail_msg("%s", err.msg);
      int scaled = 0;
      for (int k = 0; k < 3; k++)
        for (int64_t x = 0; x < r.plans[k].instances; x++) {
          assert_int_equal(r.plans[k].state[x][CONFIG_HBM], peak);
          assert_int_equal(r.plans[k].state[x][CONFIG_ICI], peak);
          scaled |= r.plans[k].state[x][CONFIG_SA] < peak;
        }
      assert_true(scaled); /* decode leaves the compute domain room */
      assert_int_equal(r.plans[0].from_ga, p == 0 && r.plans[0].energy_nj < r.policy_peak_energy_nj);
      search_bucket_result_free(&r);
    }
  const int top[CONFIG_NCOMP] = {peak, peak, peak, peak, peak};
  const graph_op *op = graph_op_at(rb.g, 2);
  cost_result rn, rd;
  assert_int_equal(search_op_breakdown(rb.sx, rb.cost, op, CONFIG_POLICY_NODVFS, NULL, top, &rn, &err), 0);
  assert_int_equal(search_op_breakdown(rb.sx, rb.cost, op, CONFIG_POLICY_DVFS_C, NULL, top, &rd, &err), 0);
  assert_true(rd.time_ns == rn.time_ns);
  assert_true(rd.energy_nj[CONFIG_HBM] == rn.energy_nj[CONFIG_HBM]);
  assert_true(rd.energy_nj[CONFIG_ICI] == rn.energy_nj[CONFIG_ICI]);
  assert_true(rd.energy_nj[CONFIG_SA] > rn.energy_nj[CONFIG_SA]); /* DVFS IVR < fixed η */
  real_bucket_close(&rb);
}

/* eNPU-C scales the HBM controller only (§4.1, §4.2): with the controller below its
 * top, its HBM energy is the controller's plus the I/O link at its top voltage plus the
 * DRAM core (power_energy of a ctrl-only model, by hand), where eNPU-All's I/O follows
 * the bandwidth down and costs less; at peak both agree. */
static void test_enpu_c_keeps_hbm_io(void **state) {
  (void)state;
  enpu_err err = {0};
  real_bucket rb;
  real_bucket_open(&rb);
  power_model *ctrl;
  assert_int_equal(power_model_create(&rb.job->chip, POWER_HBM_CTRL_ONLY, POWER_REG_DVFS, &ctrl, &err), 0);
  const graph_op *op = graph_op_at(rb.g, 2); /* the QKV projection: HBM-bound at batch 1 */
  const int peak = rb.job->chip.freq_states;
  for (int h = 12; h <= peak; h += peak - 12) {
    const int st[CONFIG_NCOMP] = {peak, peak, peak, h, peak};
    cost_result rc, ra;
    assert_int_equal(search_op_breakdown(rb.sx, rb.cost, op, CONFIG_POLICY_ENPU_C, NULL, st, &rc, &err), 0);
    assert_int_equal(search_op_breakdown(rb.sx, rb.cost, op, CONFIG_POLICY_ENPU_ALL, NULL, st, &ra, &err), 0);
    power_energy_nj e;
    assert_int_equal(power_energy(ctrl, CONFIG_HBM, h, rc.busy_ns[CONFIG_HBM], rc.time_ns, 1, &e, &err), 0);
    assert_true(fabs(rc.energy_nj[CONFIG_HBM] - e.total_nj) <= 1e-9 * e.total_nj);
    if (h < peak) assert_true(ra.energy_nj[CONFIG_HBM] < rc.energy_nj[CONFIG_HBM]);
    else assert_true(ra.energy_nj[CONFIG_HBM] == rc.energy_nj[CONFIG_HBM]);
  }
  power_model_free(ctrl);
  real_bucket_close(&rb);
}

/* Synthetic operators for finalisation: op i's point k has states (k+1, ...), a time that
 * is its critical-path time too, and no transition cost; `overhead` adds that fraction
 * of each op's time to its run time (what crossings and transitions would). */
typedef struct {
  const request *rq;
  double overhead;
} synth_price;

static int synth_price_fn(void *user, const int (*state)[CONFIG_NCOMP], int64_t x, unsigned mode, req_line *out,
                          enpu_err *err) {
  (void)err, (void)mode;
  memset(out, 0, sizeof *out);
  const synth_price *sp = user;
  const search_pareto *set = sp->rq->sets[sp->rq->op_of[x]];
  const search_point *p = &set->points[state[x][CONFIG_SA] - 1];
  out->cp_ns = p->time_ns;
  out->time_ns = p->time_ns * (1 + sp->overhead);
  out->energy_nj = p->energy_nj;
  return 0;
}

/* paper and strict differ only by the overhead: with transitions, crossings and fill
 * free (the op's time is its critical path), the two modes take identical plans at the
 * same budget; with an overhead, strict steps back along the walk to fit its time and
 * paper keeps the prefix, reporting the overhead. */
static void test_paper_equals_strict_without_overhead(void **state) {
  (void)state;
  enpu_err err = {0};
  config_job *job;
  if (config_job_load(ENPU_SOURCE_DIR "/jobs/demo.json", &job, &err) < 0) fail_msg("%s", err.msg);
  graph *g;
  assert_int_equal(graph_build(job, CONFIG_PREFILL, 1, 1024, &g, &err), 0);
  const int nops = graph_op_count(g);
  int64_t n = 0;
  assert_int_equal(search_req_check_graph(g, &n, &err), 0);
  search_pareto *sets = calloc((size_t)nops, sizeof *sets);
  const search_pareto **by_op = calloc((size_t)nops, sizeof *by_op);
  scratch sc = {0};
  search_units *u;
  assert_int_equal(search_units_of_ops(g, &u, &err), 0);
  /* One block owned by req, as the search allocates it (search_scratch_free frees req). */
  assert_int_equal(ENPU_CALLOC_PARTS(ENPU_PART(sc.req, (size_t)nops), ENPU_PART(sc.pos, (size_t)n),
                                     ENPU_PART(sc.best_pos, (size_t)n), ENPU_PART(sc.peak_state, (size_t)n),
                                     ENPU_PART(sc.cand, (size_t)n)),
                   0);
  search_bucket_result res = {0};
  for (int i = 0; i < nops; i++) {
    sets[i].count = 4;
    sets[i].points = calloc(4, sizeof *sets[i].points);
    for (int k = 0; k < 4; k++) {
      search_point *p = &sets[i].points[k];
      for (int c = 0; c < CONFIG_NCOMP; c++) p->state[c] = 4;
      p->state[CONFIG_SA] = k + 1;
      p->time_ns = 1000.0 * (i + 1) * (1 + 0.1 * k * k);
      p->energy_nj = 500.0 * (i + 2) / (1 + 0.3 * k);
    }
    by_op[i] = &sets[i];
    sc.req[i] = (search_req_op){sets[i].points, 4, graph_op_at(g, i)->multiplicity};
    res.t_nodvfs_ns += (double)graph_op_at(g, i)->multiplicity * sets[i].points[0].time_ns;
    res.policy_peak_energy_nj += (double)graph_op_at(g, i)->multiplicity * 2 * sets[i].points[0].energy_nj;
  }
  res.policy_peak_time_ns = res.t_nodvfs_ns;
  sc.peak_plain = (req_cost){
      .time_ns = res.policy_peak_time_ns, .cp_ns = res.t_nodvfs_ns, .energy_nj = res.policy_peak_energy_nj};
  for (int64_t x = 0; x < n; x++)
    for (int c = 0; c < CONFIG_NCOMP; c++) sc.peak_state[x][c] = 4;
  search_walk *w;
  assert_int_equal(search_walk_build(sc.req, nops, 2 * res.t_nodvfs_ns, &w, &err), 0);
  request rq = {.units = u, .sets = by_op, .offset = u->offset, .transitions = 1};
  assert_int_equal(search_req_init(&rq, &sc, g, n, &err), 0);
  synth_price sp = {&rq, 0};
  rq.price = synth_price_fn, rq.price_user = &sp;
  for (int with_overhead = 0; with_overhead < 2; with_overhead++) {
    sp.overhead = with_overhead ? 0.02 : 0;
    search_slack_plan pl[2];
    memset(pl, 0, sizeof pl);
    for (int b = 0; b < CONFIG_NBUDGET; b++) {
      rq.budget = (config_budget)b;
      pl[b].budget_ns = 1.05 * res.t_nodvfs_ns; /* one budget for both modes */
      pl[b].state = calloc((size_t)n, sizeof *pl[b].state);
      if (search_plan_slack_walk(&rq, &sc, w, &res, &pl[b], &err) < 0) fail_msg("%s", err.msg);
    }
    const int same = pl[0].walk_moves == pl[1].walk_moves &&
                     !memcmp(pl[0].state, pl[1].state, (size_t)n * sizeof *pl[0].state);
    assert_true(pl[1].cp_time_ns <= pl[1].budget_ns * (1 + 1e-9));
    if (!with_overhead) {
      assert_true(same && pl[0].walk_moves > 0);
      assert_true(pl[0].time_ns == pl[1].time_ns && pl[0].energy_nj == pl[1].energy_nj);
      assert_true(pl[1].time_ns == pl[1].cp_time_ns);
    } else {
      assert_true(pl[0].time_ns <= pl[0].budget_ns && pl[1].time_ns > pl[1].budget_ns);
      assert_true(pl[0].walk_moves < pl[1].walk_moves && pl[1].energy_nj < pl[0].energy_nj);
    }
    free(pl[0].state);
    free(pl[1].state);
  }
  search_walk_free(w);
  search_scratch_free(&sc);
  search_units_free(u);
  for (int i = 0; i < nops; i++) free(sets[i].points);
  free(sets);
  free(by_op);
  graph_free(g);
  config_job_free(job);
}

/* The paper's overhead (paper_overhead_pct, §4.4: V/f transitions and domain crossings)
 * is the plan's time less each instance alone on the paper's base pipeline (crossings
 * cost only their steady-state throughput there, cost_pipeline_paper_base), summed here
 * independently of the compiler (the decomposition's path, search_op_paper_base). That
 * base lies between each instance alone on the plan's pipeline with crossing free
 * (search_op_crossing_free: its domains, so its clocks) and alone on the pipeline itself,
 * so the paper's overhead lies between the plan's transitions (time − Σ alone) and its
 * transitions and whole crossings (time − Σ crossing-free), for 5, 4 and 3 domains. For
 * eNPU-All the crossing-free pipeline is `ideal`'s, instance by instance; with 3 domains
 * FE, SA, VU and SRAM share one clock and nothing crosses, so the two bounds meet. It is
 * 0 exactly for the two policies without transitions or crossings, NoDVFS and `ideal`,
 * whose whole overhead is the pipeline fill/drain alone (> 0 on a slowed plan). */
static void test_paper_overhead(void **state) {
  (void)state;
  enpu_err err = {0};
  real_bucket rb;
  real_bucket_open(&rb);
  const double slacks[2] = {0, 0.10};
  const config_policy pols[5] = {CONFIG_POLICY_NODVFS, CONFIG_POLICY_IDEAL, CONFIG_POLICY_ENPU_ALL,
                                 CONFIG_POLICY_ENPU_4DOM, CONFIG_POLICY_ENPU_3DOM};
  for (int p = 0; p < 5; p++) {
    const int enpu = pols[p] != CONFIG_POLICY_NODVFS && pols[p] != CONFIG_POLICY_IDEAL;
    search_options o;
    search_options_default(&o);
    o.budget = CONFIG_BUDGET_PAPER;
    search_bucket_result r;
    if (search_compile_bucket(rb.sx, rb.cost, rb.g, pols[p], slacks, 2, &o, &r, &err) < 0) fail_msg("%s", err.msg);
    for (int k = 0; k < 2; k++) {
      const search_slack_plan *pl = &r.plans[k];
      double free_ns = 0, alone_ns = 0, base_ns = 0;
      int64_t x = 0;
      for (int si = 0; si < graph_segment_count(rb.g); si++) {
        const graph_segment *seg = graph_segment_at(rb.g, si);
        for (int64_t rep = 0; rep < seg->repeat; rep++)
          for (int i = seg->first_op; i < seg->first_op + seg->op_count; i++)
            for (int64_t c = 0; c < graph_op_at(rb.g, i)->count; c++, x++) {
              cost_result z, a, b, id;
              const graph_op *op = graph_op_at(rb.g, i);
              if (search_op_crossing_free(rb.sx, rb.cost, op, pols[p], &o, pl->state[x], &z, &err) < 0 ||
                  search_op_breakdown(rb.sx, rb.cost, op, pols[p], &o, pl->state[x], &a, &err) < 0 ||
                  search_op_paper_base(rb.sx, rb.cost, op, pols[p], &o, pl->state[x], &b, &err) < 0)
                fail_msg("%s", err.msg);
              if (pols[p] == CONFIG_POLICY_ENPU_ALL) {
                assert_int_equal(
                    search_op_breakdown(rb.sx, rb.cost, op, CONFIG_POLICY_IDEAL, &o, pl->state[x], &id, &err), 0);
                assert_true(z.time_ns == id.time_ns);
              }
              free_ns += z.time_ns, alone_ns += a.time_ns, base_ns += b.time_ns;
            }
      }
      assert_int_equal(x, pl->instances);
      const double most = 100 * (pl->time_ns - free_ns) / r.t_nodvfs_ns;
      const double least = 100 * (pl->time_ns - alone_ns) / r.t_nodvfs_ns;
      const double tol = 1e-9 * fmax(1, fabs(most));
      const double want = 100 * (pl->time_ns - base_ns) / r.t_nodvfs_ns;
      assert_true(fabs(pl->paper_overhead_pct - want) <= tol);
      assert_true(pl->paper_overhead_pct >= least - tol && pl->paper_overhead_pct <= most + tol);
      assert_true(pl->paper_overhead_pct >= -1e-12 && pl->paper_overhead_pct <= pl->overhead_pct + 1e-12);
      if (!enpu) assert_true(pl->paper_overhead_pct == 0 && fabs(most) <= tol);
      if (pols[p] == CONFIG_POLICY_IDEAL && k == 1) assert_true(pl->overhead_pct > 0); /* fill/drain */
      if (pols[p] == CONFIG_POLICY_ENPU_3DOM) assert_true(fabs(most - least) <= tol);  /* one core clock */
      else if (enpu) assert_true(pl->paper_overhead_pct > least + tol);                /* FIFO crossings */
    }
    search_bucket_result_free(&r);
  }
  real_bucket_close(&rb);
}

TEST_PART(search_budget, cmocka_unit_test(test_dvfs_c_compute_only), cmocka_unit_test(test_enpu_c_keeps_hbm_io),
          cmocka_unit_test(test_paper_equals_strict_without_overhead), cmocka_unit_test(test_paper_overhead));
