/* test_search_design.c — epochs, power gating, the design-space properties, the GA's
 * lift on a real bucket, uniform, set dedup (the search module's unit tests, one
 * program: test_search.c runs these with its own; test_search.h has what the files
 * share). */
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
 * Epochs, power gating, the design-space properties */

/* An epoch is one unit at one V/f setting: its Pareto points' time and energy are the
 * cost model's for each of its op instances at that setting, summed (checked here op
 * instance by op instance on the real operator order); its instances are consecutive
 * and at least the epoch long at NoDVFS; every enpu-ms plan gives one epoch one setting,
 * so its vf.set stream changes states at epoch boundaries only. */
static void test_epoch_units(void **state) {
  (void)state;
  enpu_err err = {0};
  real_bucket rb;
  real_bucket_open(&rb);
  graph_free(rb.g);
  /* 8 of the 80 layers at the small size: several epochs of >= 5 ms all the same. */
  assert_int_equal(graph_build_depth(rb.job, CONFIG_PREFILL, 1, 4096, case_layers(rb.job, 8), &rb.g, &err), 0);
  search_options opt;
  search_options_for_job(&opt, rb.job, NULL);
  search_units *u;
  assert_int_equal(search_units_build(rb.sx, rb.cost, rb.g, CONFIG_POLICY_ENPU_MS, &opt, &u, &err), 0);
  assert_true(u->count >= 1 && u->instances > 1);
  power_model *pm;
  assert_int_equal(power_model_create(&rb.job->chip, POWER_HBM_FULL, POWER_REG_DVFS, &pm, &err), 0);
  cost_pipeline pipe, nodvfs;
  assert_int_equal(cost_pipeline_enpu(&pipe, 5, pm, &err), 0);
  power_model *fixed;
  assert_int_equal(power_model_create(&rb.job->chip, POWER_HBM_CTRL_ONLY, POWER_REG_FIXED, &fixed, &err), 0);
  cost_pipeline_nodvfs(&nodvfs, fixed);
  const cost_plan peak = {{34, 34, 34, 34, 34}};
  const int64_t n = u->op_instances;
  int64_t *op_of = calloc((size_t)n, sizeof *op_of);
  for (int64_t x = 0, si = 0; si < graph_segment_count(rb.g); si++) {
    const graph_segment *seg = graph_segment_at(rb.g, (int)si);
    for (int64_t r = 0; r < seg->repeat; r++)
      for (int i = seg->first_op; i < seg->first_op + seg->op_count; i++) op_of[x++] = i;
  }
  for (int64_t w = 0; w < u->instances; w++) { /* consecutive, and >= 5 ms unless alone */
    const int64_t end = w + 1 < u->instances ? u->first_x[w + 1] : n;
    double t_nodvfs = 0;
    for (int64_t x = u->first_x[w]; x < end; x++) {
      assert_int_equal(u->walk_of[x], w);
      cost_result r;
      assert_int_equal(cost_eval(rb.cost, graph_op_at(rb.g, (int)op_of[x]), &peak, &nodvfs, &r, &err), 0);
      t_nodvfs += r.time_ns;
    }
    assert_true(t_nodvfs >= 5e6 || u->instances == 1);
  }
  for (int k = 0; k < u->count; k++) {
    search_pareto p;
    assert_int_equal(search_unit_compile(rb.sx, rb.cost, rb.g, u, k, CONFIG_POLICY_ENPU_MS, &opt, &p, &err), 0);
    const int64_t w = u->offset[k], end = w + 1 < u->instances ? u->first_x[w + 1] : n;
    for (int q = 0; q<p.count; q += p.count> 3 ? p.count / 3 : 1) {
      cost_plan plan;
      memcpy(plan.state, p.points[q].state, sizeof plan.state);
      double t = 0, e = 0;
      for (int64_t x = u->first_x[w]; x < end; x++) {
        cost_result r;
        assert_int_equal(cost_eval(rb.cost, graph_op_at(rb.g, (int)op_of[x]), &plan, &pipe, &r, &err), 0);
        t += r.time_ns, e += r.energy_total_nj;
      }
      assert_true(fabs(p.points[q].time_ns - t) <= 1e-9 * t);
      assert_true(fabs(p.points[q].energy_nj - e) <= 1e-9 * e);
      cost_result br;
      assert_int_equal(search_unit_breakdown(rb.sx, rb.cost, rb.g, u, k, CONFIG_POLICY_ENPU_MS, &opt,
                                             p.points[q].state, &br, &err),
                       0);
      assert_true(fabs(br.energy_total_nj - e) <= 1e-9 * e && fabs(br.time_ns - t) <= 1e-9 * t);
    }
    search_pareto_free(&p);
  }
  const double slacks[] = {0, 0.05};
  search_bucket_result res;
  assert_int_equal(search_compile_bucket(rb.sx, rb.cost, rb.g, CONFIG_POLICY_ENPU_MS, slacks, 2, &opt, &res, &err),
                   0);
  for (int k = 0; k < res.nplans; k++) {
    const search_slack_plan *pl = &res.plans[k];
    for (int64_t x = 1; x < n; x++)
      if (u->walk_of[x] == u->walk_of[x - 1])
        assert_memory_equal(pl->state[x], pl->state[x - 1], sizeof pl->state[x]);
    search_vfset_cmd *cmds = calloc((size_t)n, sizeof *cmds);
    int64_t ncmd;
    assert_int_equal(search_vfset_stream((const int(*)[CONFIG_NCOMP])pl->state, n, cmds, &ncmd, &err), 0);
    assert_true(ncmd >= 1 && ncmd <= u->instances);
    for (int64_t c = 0; c < ncmd; c++) assert_int_equal(u->first_x[u->walk_of[cmds[c].instance]], cmds[c].instance);
    free(cmds);
  }
  search_bucket_result_free(&res);
  free(op_of);
  power_model_free(pm);
  power_model_free(fixed);
  search_units_free(u);
  real_bucket_close(&rb);
}

/* Gating across ops at the request level, priced by hand: three synthetic ops of 1000 ns;
 * the VU works in ops 0 and 2 (idle 100 ns at the end of op 0 and 50 ns at the start of
 * op 2) and not at all in op 1, so its idle interval is 100 + 1000 + 50 = 1150 ns of the
 * schedule; gated, it saves saved_w × (I − wake) − wake energy with I = 1150 + wake (the
 * gated schedule: it wakes on demand), and op 2 is priced woken. A 10 ns interval (below
 * VU's 18.824 ns minimum) is never gated. */
typedef struct {
  double tail0, head1, head2, saved_w;
  int busy1;      /* the VU works in op 1 too */
  unsigned woken; /* wake masks op 1 and 2 were priced with */
} gate_price;

static int gate_price_fn(void *user, const int (*state)[CONFIG_NCOMP], int64_t x, unsigned mode, req_line *out,
                         enpu_err *err) {
  (void)state, (void)err;
  gate_price *gp = user;
  memset(out, 0, sizeof *out);
  out->time_ns = out->cp_ns = 1000;
  out->energy_nj = 5000;
  out->idle_mask = ((1u << CONFIG_NCOMP) - 1) & ~(1u << CONFIG_VU);
  if (x == 1 && !gp->busy1) out->idle_mask |= 1u << CONFIG_VU;
  for (int c = 0; c < CONFIG_NCOMP; c++) {
    out->saved_w[c] = c == CONFIG_VU ? gp->saved_w : 0;
    out->head_ns[c] = (out->idle_mask >> c & 1u) ? 1000 : 0;
  }
  if (x == 0) out->tail_ns[CONFIG_VU] = gp->tail0;
  if (x == 1 && gp->busy1) out->head_ns[CONFIG_VU] = gp->head1;
  if (x == 2) out->head_ns[CONFIG_VU] = gp->head2;
  if (x > 0) gp->woken |= mode >> 1;
  return 0;
}

static void test_gating_request_by_hand(void **state) {
  (void)state;
  enpu_err err = {0};
  config_chip *chip;
  assert_int_equal(config_chip_load(ENPU_SOURCE_DIR "/jobs/chips/tpuv5p.json", &chip, &err), 0);
  power_model *pm;
  assert_int_equal(power_model_create(chip, POWER_HBM_FULL, POWER_REG_DVFS, &pm, &err), 0);
  int st[3][CONFIG_NCOMP] = {{34, 34, 34, 34, 34}, {34, 34, 34, 34, 34}, {34, 34, 34, 34, 34}};
  gate_price gp = {.tail0 = 100, .head2 = 50, .saved_w = 2.0};
  request rq = {.instances = 3, .pm = pm, .gating = 1, .price = gate_price_fn, .price_user = &gp};
  req_cost plain, gated;
  assert_int_equal(search_req_total(&rq, (const int(*)[CONFIG_NCOMP])st, 0, &plain, &err), 0);
  assert_int_equal(search_req_total(&rq, (const int(*)[CONFIG_NCOMP])st, 1, &gated, &err), 0);
  const double wake = power_gate_wake_ns(pm, CONFIG_VU), interval = 1150 + wake;
  const double want = gp.saved_w * (interval - wake) - power_gate_wake_nj(pm, CONFIG_VU);
  assert_true(fabs((plain.energy_nj - gated.energy_nj) - want) < 1e-9);
  assert_true(fabs(want - power_gate_saving_nj(pm, CONFIG_VU, gp.saved_w, interval)) < 1e-9);
  assert_true(gated.gates == 1 && gp.woken == 1u << CONFIG_VU);
  /* Intervals of 10 and 5 ns (the VU works in every op): below the 18.824 ns minimum,
   * never gated whatever they would save, nobody woken. */
  gate_price short_gp = {.tail0 = 5, .head1 = 5, .head2 = 5, .saved_w = 1e6, .busy1 = 1};
  rq.price_user = &short_gp;
  assert_int_equal(search_req_total(&rq, (const int(*)[CONFIG_NCOMP])st, 0, &plain, &err), 0);
  assert_int_equal(search_req_total(&rq, (const int(*)[CONFIG_NCOMP])st, 1, &gated, &err), 0);
  assert_true(gated.energy_nj == plain.energy_nj && gated.gates == 0 && short_gp.woken == 0);
  power_model_free(pm);
  config_chip_free(chip);
}

/* Finer control can mimic coarser (enpu-all <= enpu-ms), and gating never makes a plan
 * dearer (pg+enpu-all <= enpu-all), for every slack of a few real buckets in both budget
 * modes (2 of the 80 layers at the small size); a failure names the bucket and the slack. */
static void test_design_space_properties(void **state) {
  (void)state;
  enpu_err err = {0};
  real_bucket rb;
  real_bucket_open(&rb);
  const struct {
    config_phase phase;
    int batch, seq;
  } buckets[] = {{CONFIG_PREFILL, 1, 1024}, {CONFIG_DECODE, 8, 4096}, {CONFIG_DECODE, 64, 2048}};
  const double slacks[] = {0, 0.02, 0.1, 0.3};
  const config_policy_spec pg = {CONFIG_POLICY_ENPU_ALL, true, -1, 0};
  for (size_t b = 0; b < sizeof buckets / sizeof buckets[0]; b++) {
    graph *g;
    assert_int_equal(graph_build_depth(rb.job, buckets[b].phase, buckets[b].batch, buckets[b].seq,
                                       case_layers(rb.job, 2), &g, &err),
                     0);
    for (int mode = 0; mode < CONFIG_NBUDGET; mode++) {
      search_options opt, gopt;
      search_options_for_job(&opt, rb.job, NULL);
      opt.budget = (config_budget)mode;
      gopt = opt;
      search_options_set_policy(&gopt, &pg);
      search_bucket_result all, ms, gated;
      assert_int_equal(
          search_compile_bucket(rb.sx, rb.cost, g, CONFIG_POLICY_ENPU_ALL, slacks, 4, &opt, &all, &err), 0);
      assert_int_equal(search_compile_bucket(rb.sx, rb.cost, g, CONFIG_POLICY_ENPU_MS, slacks, 4, &opt, &ms, &err),
                       0);
      assert_int_equal(
          search_compile_bucket(rb.sx, rb.cost, g, CONFIG_POLICY_ENPU_ALL, slacks, 4, &gopt, &gated, &err), 0);
      for (int k = 0; k < 4; k++) {
        const char *what = all.plans[k].energy_nj > ms.plans[k].energy_nj * (1 + 1e-9) ? "enpu-all > enpu-ms"
                           : gated.plans[k].energy_nj > all.plans[k].energy_nj * (1 + 1e-9)
                               ? "pg+enpu-all > enpu-all"
                               : NULL;
        if (what)
          fail_msg("%s: %s batch %d seq %d, %s budget, slack %g: %.6g / %.6g / %.6g nJ", what,
                   config_phase_name(buckets[b].phase), buckets[b].batch, buckets[b].seq,
                   config_budget_name((config_budget)mode), slacks[k], all.plans[k].energy_nj,
                   ms.plans[k].energy_nj, gated.plans[k].energy_nj);
      }
      search_bucket_result_free(&all);
      search_bucket_result_free(&ms);
      search_bucket_result_free(&gated);
    }
    graph_free(g);
  }
  real_bucket_close(&rb);
}

/* The uniform policy: every op at one chip-wide state. Each round of its walk ends at
 * the pass the cost model gives at that state (evaluated here op by op on the NoDVFS
 * pipeline with the chip-wide regulator), the all-peak pass is NoDVFS's, each slack's
 * plan is the cheapest state within its budget (brute force), and a pass through the
 * first d layers (graph_build_depth) is the embedding and head plus d layers' ops. */
static void test_uniform(void **state) {
  (void)state;
  enpu_err err = {0};
  config_job *job;
  if (config_job_load(JOB_PATH, &job, &err) < 0) fail_msg("%s", err.msg);
  graph *g, *g20, *none;
  assert_int_equal(graph_build(job, CONFIG_DECODE, 8, 2048, &g, &err), 0);
  assert_int_equal(graph_build_depth(job, CONFIG_DECODE, 8, 2048, 81, &none, &err), ENPU_ERR_RANGE);
  assert_null(none);
  assert_int_equal(graph_build_depth(job, CONFIG_DECODE, 8, 2048, 20, &g20, &err), 0);
  cost_ctx *cost;
  search_ctx *sx;
  power_model *cw;
  assert_int_equal(cost_ctx_create(&job->chip, &cost, &err), 0);
  assert_int_equal(search_ctx_create(&job->chip, &sx, &err), 0);
  assert_int_equal(power_model_create(&job->chip, POWER_HBM_CTRL_ONLY, POWER_REG_CHIPWIDE, &cw, &err), 0);
  cost_pipeline pipe;
  cost_pipeline_nodvfs(&pipe, cw);
  const int peak = job->chip.freq_states;
  /* The pass at every state and the 20-layer pass, from the cost model directly. */
  double t[64] = {0}, e[64] = {0}, t20 = 0, e20 = 0, layer_t = 0, fixed_t = 0;
  for (int st = 1; st <= peak; st++)
    for (int i = 0; i < graph_op_count(g); i++) {
      const graph_op *op = graph_op_at(g, i);
      cost_plan plan = {{st, st, st, st, st}};
      cost_result r;
      assert_int_equal(cost_eval(cost, op, &plan, &pipe, &r, &err), 0);
      t[st] += op->multiplicity * r.time_ns;
      e[st] += op->multiplicity * r.energy_total_nj;
      if (st != 17) continue;
      *(op->multiplicity == 80 ? &layer_t : &fixed_t) += (double)op->multiplicity * r.time_ns;
      const graph_op *op20 = graph_op_at(g20, i);
      assert_true(op20->signature == op->signature && op20->multiplicity == (op->multiplicity == 80 ? 20 : 1));
      t20 += op20->multiplicity * r.time_ns;
      e20 += op20->multiplicity * r.energy_total_nj;
    }
  assert_near_rel(t20, fixed_t + layer_t / 4, 1e-12);
  assert_true(e20 > 0);
  const double slacks[3] = {0, 0.5, 3};
  search_bucket_result u;
  assert_int_equal(search_compile_bucket(sx, cost, g, CONFIG_POLICY_UNIFORM, slacks, 3, NULL, &u, &err), 0);
  assert_true(u.policy_peak_time_ns == u.t_nodvfs_ns && u.policy_peak_energy_nj == u.e_nodvfs_nj);
  const int nops = graph_op_count(g);
  assert_int_equal(search_walk_step_count(u.walk), (peak - 1) * nops);
  for (int k = 1; k < peak; k++) {
    const search_walk_step *end = search_walk_step_at(u.walk, k * nops - 1);
    assert_near_rel(end->time_ns, t[peak - k], 1e-12);
    assert_near_rel(end->energy_nj, e[peak - k], 1e-12);
  }
  for (int j = 0; j < 3; j++) {
    const search_slack_plan *pl = &u.plans[j];
    int best = peak;
    for (int st = peak - 1; st >= 1; st--)
      if (t[st] <= pl->budget_ns && e[st] < e[best]) best = st;
    assert_near_rel(pl->energy_nj, e[best], 1e-12);
    assert_int_equal(pl->walk_moves, (int64_t)(peak - best) * pl->instances);
    for (int64_t x = 0; x < pl->instances; x++) assert_int_equal(pl->state[x][CONFIG_HBM], best);
    double loss = 0; /* the board regulator's loss, stored with every plan */
    for (int c = 0; c < CONFIG_NCOMP; c++) loss += pl->regulator_loss_nj[c];
    assert_true(loss > 0 && loss < pl->energy_nj);
  }
  /* Chip-wide DVFS saves nothing on this memory-bound decode pass: the HBM slows too. */
  for (int st = 1; st < peak; st++) assert_true(e[st] > e[peak]);
  search_bucket_result_free(&u);
  power_model_free(cw);
  search_ctx_free(sx);
  cost_ctx_free(cost);
  graph_free(g);
  graph_free(g20);
  config_job_free(job);
}

/* search_sets_compile: one compilation per distinct signature, on its first item in
 * order, ranks 0.. among the distinct ones; every item points at its signature's set. */
typedef struct {
  int calls, item[8], rank[8], distinct;
} sets_log;

static int sets_log_compile(void *user, int item, int rank, int distinct, search_pareto *out, enpu_err *err) {
  (void)err;
  sets_log *l = user;
  l->item[l->calls] = item, l->rank[l->calls++] = rank, l->distinct = distinct;
  out->points = calloc(1, sizeof *out->points);
  out->count = 1;
  out->points[0].time_ns = item;
  out->evals = 10 + item;
  return 0;
}

static void test_sets_compile_dedup(void **state) {
  (void)state;
  const uint64_t sig[6] = {7, 9, 7, 3, 9, 7};
  sets_log l = {0};
  search_sets sets;
  enpu_err err = {0};
  assert_int_equal(search_sets_compile(sig, 6, sets_log_compile, &l, &sets, &err), 0);
  assert_int_equal(l.calls, 3);
  assert_int_equal(sets.distinct, 3);
  const int first[3] = {0, 1, 3};
  for (int k = 0; k < 3; k++) {
    assert_int_equal(l.item[k], first[k]);
    assert_int_equal(l.rank[k], k);
  }
  assert_int_equal(l.distinct, 3);
  const int owner[6] = {0, 1, 0, 3, 1, 0};
  for (int i = 0; i < 6; i++) assert_ptr_equal(sets.set_of[i], &sets.sets[owner[i]]);
  assert_int_equal(sets.evals, 10 + 11 + 13);
  search_sets_free(&sets);
  search_sets_free(NULL);
}

TEST_PART(search_design, cmocka_unit_test(test_epoch_units), cmocka_unit_test(test_gating_request_by_hand),
          cmocka_unit_test(test_design_space_properties), cmocka_unit_test(test_uniform),
          cmocka_unit_test(test_sets_compile_dedup));
