/* test_validate.c — the validate module without a farm: the stratified sample on a
 * synthetic bucket table (every stratum represented, evenly, deterministically for a
 * seed, never an unusable bucket), and the re-simulation of stored plans on a real
 * bucket of jobs/demo.json (a nodvfs policy table built here from the cost model):
 * faithful plans pass, a plan whose stored time, energy or states were tampered with
 * fails with a message naming what differs. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "graph.h"
#include "search.h"
#include "validate.h"

/* ---------------------------------------------------------------------------------
 * Sampling */

static const int32_t BATCHES[] = {1, 2, 4, 8, 16, 32};
static const int32_t SEQS[] = {128, 256, 512, 1024, 2048, 4096};
#define NB 6
#define NS 6

/* Both phases × 6 batches × 6 seqs, ok with one plan each, plus one infeasible and one
 * failed bucket per phase that must never be sampled. */
static store_policy_tables *synthetic_tables(void) {
  store_policy_tables *t = calloc(1, sizeof *t);
  t->buckets = calloc(2 * NB * NS + 4, sizeof *t->buckets);
  snprintf(t->name, sizeof t->name, "enpu-all");
  for (int ph = 0; ph < 2; ph++) {
    for (int b = 0; b < NB; b++)
      for (int s = 0; s < NS; s++)
        t->buckets[t->nbuckets++] = (store_bucket_rec){
            .phase = (uint8_t)ph, .batch = BATCHES[b], .seq = SEQS[s], .plan_count = 1};
    t->buckets[t->nbuckets++] = (store_bucket_rec){
        .phase = (uint8_t)ph, .batch = 64, .seq = 8192, .status = STORE_BUCKET_INFEASIBLE_CAPACITY};
    t->buckets[t->nbuckets++] = (store_bucket_rec){
        .phase = (uint8_t)ph, .batch = 64, .seq = 128, .status = STORE_BUCKET_FAILED};
  }
  return t;
}

static void free_tables(store_policy_tables *t) {
  free(t->ops);
  free(t->pareto);
  free(t->buckets);
  free(t->bucket_ops);
  free(t->plans);
  free(t->plan_states);
  free(t);
}

static int index_of(const int32_t *v, int n, int32_t x) {
  for (int i = 0; i < n; i++)
    if (v[i] == x) return i;
  return -1;
}

/* Sample n and check: distinct, sorted, sampleable buckets, each in the stratum its
 * values say (two values per range out of six), and per stratum n/18 or n/18 + 1. */
static void check_sample(const store_policy_tables *t, int n, uint64_t seed, validate_pick *out, size_t *count) {
  enpu_err err = {0};
  assert_int_equal(validate_sample(t, n, seed, out, count, &err), 0);
  const size_t usable = 2 * NB * NS;
  assert_int_equal(*count, (size_t)n < usable ? (size_t)n : usable);
  size_t per[VALIDATE_NSTRATA] = {0};
  for (size_t i = 0; i < *count; i++) {
    const store_bucket_rec *b = &t->buckets[out[i].bucket];
    assert_int_equal(b->status, STORE_BUCKET_OK);
    if (i) assert_true(out[i].bucket > out[i - 1].bucket);
    const uint32_t want = ((uint32_t)b->phase * 3 + (uint32_t)index_of(BATCHES, NB, b->batch) / 2) * 3 +
                          (uint32_t)index_of(SEQS, NS, b->seq) / 2;
    assert_int_equal(out[i].stratum, want);
    per[out[i].stratum]++;
  }
  const size_t lo = *count / VALIDATE_NSTRATA, hi = lo + (*count % VALIDATE_NSTRATA != 0);
  for (int s = 0; s < VALIDATE_NSTRATA; s++) assert_true(per[s] >= lo && per[s] <= hi);
}

static void test_sample_stratified(void **state) {
  (void)state;
  store_policy_tables *t = synthetic_tables();
  validate_pick a[128];
  size_t na;
  check_sample(t, VALIDATE_NSTRATA, 1, a, &na); /* one per stratum */
  check_sample(t, 24, 1, a, &na);               /* 18 + 6: some strata twice */
  check_sample(t, 1000, 1, a, &na);             /* every usable bucket */
  check_sample(t, 5, 1, a, &na);                /* fewer than the strata: the first five */
  for (size_t i = 0; i < na; i++) assert_true(a[i].stratum < 5);
  char label[128];
  validate_stratum_label(t, 0, label, sizeof label);
  assert_string_equal(label, "prefill b1-2 s128-256");
  validate_stratum_label(t, VALIDATE_NSTRATA - 1, label, sizeof label);
  assert_string_equal(label, "decode b16-32 s2048-4096");
  enpu_err err = {0};
  assert_int_equal(validate_sample(t, 0, 1, a, &na, &err), ENPU_ERR_INVALID);
  free_tables(t);
}

static void test_sample_deterministic(void **state) {
  (void)state;
  store_policy_tables *t = synthetic_tables();
  validate_pick a[64], b[64];
  size_t na, nb;
  check_sample(t, 24, 7, a, &na);
  check_sample(t, 24, 7, b, &nb);
  assert_int_equal(na, nb);
  assert_memory_equal(a, b, na * sizeof *a);
  /* Another seed picks other buckets inside the strata (but the same strata counts). */
  int differs = 0;
  for (uint64_t seed = 8; seed < 12 && !differs; seed++) {
    check_sample(t, 24, seed, b, &nb);
    differs = memcmp(a, b, na * sizeof *a) != 0;
  }
  assert_true(differs);
  free_tables(t);
}

/* ---------------------------------------------------------------------------------
 * Re-simulation */

typedef struct {
  config_job *job;
  store_policy_tables *t;
} plan_fixture;

/* A nodvfs policy table for prefill batch 1 seq 1024 of jobs/demo.json: one store op per
 * distinct signature with its all-peak point from the cost model, two plans (slack 0
 * and 0.05) that run everything at peak. */
static int setup_plans(void **state) {
  plan_fixture *fx = calloc(1, sizeof *fx);
  enpu_err err = {0};
  if (config_job_load(ENPU_SOURCE_DIR "/jobs/demo.json", &fx->job, &err)) fail_msg("%s", err.msg);
  graph *g = NULL;
  if (graph_build(fx->job, CONFIG_PREFILL, 1, 1024, &g, &err)) fail_msg("%s", err.msg);
  search_ctx *s = NULL;
  cost_ctx *cost = NULL;
  assert_int_equal(search_ctx_create(&fx->job->chip, &s, &err), 0);
  assert_int_equal(cost_ctx_create(&fx->job->chip, &cost, &err), 0);
  const int n = graph_op_count(g), peak = fx->job->chip.freq_states;
  store_policy_tables *t = calloc(1, sizeof *t);
  snprintf(t->name, sizeof t->name, "nodvfs");
  t->ops = calloc((size_t)n, sizeof *t->ops);
  t->pareto = calloc((size_t)n, sizeof *t->pareto);
  t->bucket_ops = calloc((size_t)n, sizeof *t->bucket_ops);
  t->buckets = calloc(1, sizeof *t->buckets);
  t->plans = calloc(2, sizeof *t->plans);
  t->plan_states = calloc(2 * (size_t)n, sizeof *t->plan_states);
  double time_ns = 0, energy_nj = 0, loss_nj[CONFIG_NCOMP] = {0};
  for (int i = 0; i < n; i++) {
    const graph_op *op = graph_op_at(g, i);
    int seen = 0;
    for (int j = 0; j < i && !seen; j++) seen = graph_op_at(g, j)->signature == op->signature;
    const int st[CONFIG_NCOMP] = {peak, peak, peak, peak, peak};
    cost_result r;
    if (search_op_breakdown(s, cost, op, CONFIG_POLICY_NODVFS, NULL, st, &r, &err)) fail_msg("%s", err.msg);
    time_ns += (double)op->multiplicity * r.time_ns;
    energy_nj += (double)op->multiplicity * r.energy_total_nj;
    for (int c = 0; c < CONFIG_NCOMP; c++) loss_nj[c] += (double)op->multiplicity * r.loss_nj[c];
    if (seen) {
      for (size_t k = 0; k < t->nops; k++)
        if (t->ops[k].signature == op->signature) t->bucket_ops[k].multiplicity += (uint64_t)op->multiplicity;
      continue;
    }
    const uint32_t k = (uint32_t)t->nops++;
    t->ops[k] = (store_op_rec){
        .signature = op->signature, .kind = (uint32_t)op->kind, .pareto_first = k, .pareto_count = 1};
    snprintf(t->ops[k].name, sizeof t->ops[k].name, "%s", op->name);
    t->pareto[t->npareto++] = (store_pareto_rec){
        .op = k,
        .time_ns = r.time_ns,
        .energy_nj = r.energy_total_nj,
        .states = {(uint8_t)peak, (uint8_t)peak, (uint8_t)peak, (uint8_t)peak, (uint8_t)peak}};
    t->bucket_ops[t->nbucket_ops++] = (store_bucket_op_rec){0, k, (uint64_t)op->multiplicity};
  }
  t->buckets[0] = (store_bucket_rec){.phase = STORE_PHASE_PREFILL,
                                     .batch = 1,
                                     .seq = 1024,
                                     .t_nodvfs_ns = time_ns,
                                     .t_peak_ns = time_ns,
                                     .e_nodvfs_nj = energy_nj,
                                     .ops_count = (uint32_t)t->nops,
                                     .plan_count = 2};
  t->nbuckets = 1;
  const double slacks[2] = {0, 0.05};
  for (uint32_t p = 0; p < 2; p++) {
    t->plans[p] = (store_plan_rec){.slack = slacks[p],
                                   .budget_ns = time_ns * (1 + slacks[p]),
                                   .time_ns = time_ns,
                                   .energy_nj = energy_nj,
                                   .cp_time_ns = time_ns, /* all-peak: its NoDVFS time */
                                   .states_first = t->nplan_states,
                                   .states_count = t->nops};
    memcpy(t->plans[p].regulator_loss_nj, loss_nj, sizeof loss_nj);
    for (uint32_t k = 0; k < t->nops; k++)
      t->plan_states[t->nplan_states++] = (store_plan_state_rec){p, k, k, {0}, t->bucket_ops[k].multiplicity};
    for (uint32_t k = 0; k < t->nops; k++)
      memcpy(t->plan_states[p * t->nops + k].states, t->pareto[k].states, STORE_NSTATE);
  }
  t->nplans = 2;
  fx->t = t;
  graph_free(g);
  search_ctx_free(s);
  cost_ctx_free(cost);
  *state = fx;
  return 0;
}

static int teardown_plans(void **state) {
  plan_fixture *fx = *state;
  free_tables(fx->t);
  config_job_free(fx->job);
  free(fx);
  return 0;
}

static void run_bucket(plan_fixture *fx, store_validation_rec out[2]) {
  validate_ctx *v = NULL;
  enpu_err err = {0};
  assert_int_equal(validate_ctx_create(fx->job, &v, &err), 0);
  assert_int_equal(validate_bucket(v, fx->t, 0, 3, VALIDATE_DEFAULT_TOLERANCE, out, 2, &err), 0);
  store_validation_rec small[1];
  assert_int_equal(validate_bucket(v, fx->t, 0, 3, VALIDATE_DEFAULT_TOLERANCE, small, 1, &err), ENPU_ERR_RANGE);
  validate_ctx_free(v);
  validate_ctx_free(NULL);
}

static void test_faithful_plans_pass(void **state) {
  plan_fixture *fx = *state;
  store_validation_rec out[2];
  run_bucket(fx, out);
  for (int p = 0; p < 2; p++) {
    if (!out[p].pass) fail_msg("plan %d: %s", p, out[p].message);
    assert_int_equal(out[p].plan, p);
    assert_int_equal(out[p].stratum, 3);
    assert_int_equal(out[p].batch, 1);
    assert_int_equal(out[p].seq, 1024);
    assert_true(out[p].sim_time_ns > 0 && out[p].sim_time_ns <= out[p].budget_ns);
    assert_float_equal(out[p].sim_energy_nj, out[p].stored_energy_nj, 1e-6 * out[p].stored_energy_nj);
    assert_string_equal(out[p].message, "");
  }
}

static void test_tampered_time_fails(void **state) {
  plan_fixture *fx = *state;
  fx->t->plans[1].time_ns *= 0.999;
  store_validation_rec out[2];
  run_bucket(fx, out);
  assert_true(out[0].pass);
  assert_false(out[1].pass);
  assert_non_null(strstr(out[1].message, "re-simulated time"));
  assert_non_null(strstr(out[1].message, "differs from the stored"));
}

static void test_tampered_energy_fails(void **state) {
  plan_fixture *fx = *state;
  fx->t->plans[0].energy_nj *= 0.99; /* a plan claiming savings it does not have */
  store_validation_rec out[2];
  run_bucket(fx, out);
  assert_false(out[0].pass);
  assert_non_null(strstr(out[0].message, "re-simulated energy"));
  assert_true(out[1].pass);
}

/* Figure 13's numbers are checked too: a plan whose regulator loss is not what the
 * re-simulation loses fails. */
static void test_tampered_loss_fails(void **state) {
  plan_fixture *fx = *state;
  fx->t->plans[1].regulator_loss_nj[CONFIG_SRAM] *= 1.01;
  store_validation_rec out[2];
  run_bucket(fx, out);
  assert_true(out[0].pass);
  assert_false(out[1].pass);
  assert_non_null(strstr(out[1].message, "regulator loss"));
}

static void test_tampered_budget_fails(void **state) {
  plan_fixture *fx = *state;
  /* A budget tighter than the plan, consistent with a smaller T_nodvfs: the formula holds,
   * the re-simulated time does not fit. */
  fx->t->buckets[0].t_nodvfs_ns *= 0.9;
  fx->t->buckets[0].t_peak_ns *= 0.9;
  for (int p = 0; p < 2; p++)
    fx->t->plans[p].budget_ns = fx->t->buckets[0].t_nodvfs_ns * (1 + fx->t->plans[p].slack);
  store_validation_rec out[2];
  run_bucket(fx, out);
  for (int p = 0; p < 2; p++) {
    assert_false(out[p].pass);
    assert_non_null(strstr(out[p].message, "exceeds the budget"));
  }
}

static void test_tampered_states_fail(void **state) {
  plan_fixture *fx = *state;
  fx->t->plan_states[fx->t->plans[1].states_first].states[0] = 3; /* not its Pareto point's */
  store_validation_rec out[2];
  run_bucket(fx, out);
  assert_true(out[0].pass);
  assert_false(out[1].pass);
  assert_non_null(strstr(out[1].message, "plan_states row"));
}

/* The same plans stored under the paper's budget: (1 + slack)·T_nodvfs constrains their
 * critical-path time, and the stored overhead must come out of the re-simulation. */
static void paper_mode(plan_fixture *fx) {
  fx->t->buckets[0].budget = STORE_BUDGET_PAPER;
  for (int p = 0; p < 2; p++) {
    store_plan_rec *pl = &fx->t->plans[p];
    pl->budget = STORE_BUDGET_PAPER;
    pl->budget_ns = (1 + pl->slack) * fx->t->buckets[0].t_nodvfs_ns;
  }
}

static void test_paper_plans_pass(void **state) {
  plan_fixture *fx = *state;
  paper_mode(fx);
  store_validation_rec out[2];
  run_bucket(fx, out);
  for (int p = 0; p < 2; p++)
    if (!out[p].pass) fail_msg("plan %d: %s", p, out[p].message);
}

static void test_paper_overhead_tampered_fails(void **state) {
  plan_fixture *fx = *state;
  paper_mode(fx);
  fx->t->plans[1].overhead_pct = 0.5; /* a NoDVFS plan has none */
  fx->t->plans[0].budget_ns = fmax(fx->t->buckets[0].t_nodvfs_ns, fx->t->buckets[0].t_peak_ns) +
                              1e-3 * fx->t->buckets[0].t_nodvfs_ns; /* not the paper formula */
  store_validation_rec out[2];
  run_bucket(fx, out);
  assert_false(out[0].pass);
  assert_non_null(strstr(out[0].message, "(1 + slack) x T_nodvfs"));
  assert_false(out[1].pass);
  assert_non_null(strstr(out[1].message, "overhead"));
}

/* The paper's overhead (transitions and crossings) is re-simulated too: a stored value
 * 0.3 points off fails, naming it. */
static void test_paper_overhead_pct_tampered_fails(void **state) {
  plan_fixture *fx = *state;
  fx->t->plans[0].paper_overhead_pct += 0.3;
  store_validation_rec out[2];
  run_bucket(fx, out);
  assert_false(out[0].pass);
  assert_non_null(strstr(out[0].message, "re-simulated paper overhead"));
  assert_true(out[1].pass);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_sample_stratified),
      cmocka_unit_test(test_sample_deterministic),
      cmocka_unit_test_setup_teardown(test_faithful_plans_pass, setup_plans, teardown_plans),
      cmocka_unit_test_setup_teardown(test_tampered_time_fails, setup_plans, teardown_plans),
      cmocka_unit_test_setup_teardown(test_tampered_energy_fails, setup_plans, teardown_plans),
      cmocka_unit_test_setup_teardown(test_tampered_loss_fails, setup_plans, teardown_plans),
      cmocka_unit_test_setup_teardown(test_tampered_budget_fails, setup_plans, teardown_plans),
      cmocka_unit_test_setup_teardown(test_tampered_states_fail, setup_plans, teardown_plans),
      cmocka_unit_test_setup_teardown(test_paper_plans_pass, setup_plans, teardown_plans),
      cmocka_unit_test_setup_teardown(test_paper_overhead_tampered_fails, setup_plans, teardown_plans),
      cmocka_unit_test_setup_teardown(test_paper_overhead_pct_tampered_fails, setup_plans, teardown_plans),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
