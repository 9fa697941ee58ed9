/* test_search_gap.c — exact vs approximate Pareto sets (the gap), the trim pass, the GA
 * (the search module's unit tests, one program: test_search.c runs these with its own;
 * test_search.h has what the files share). */
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
 * Exact vs approximate Pareto sets, GA */

static void test_pareto_gap(void **state) {
  search_point ex[3] = {{{0}, 1, 10}, {{0}, 2, 6}, {{0}, 4, 3}};
  search_point ap[3] = {{{0}, 1, 11}, {{0}, 3, 6}, {{0}, 4, 3}};
  const search_pareto e = {ex, 3, 0, 0}, a = {ap, 3, 0, 0};
  double gap[3];
  search_gap sum;
  enpu_err err = {0};
  assert_int_equal(search_pareto_gap(&e, &a, gap, &sum, &err), 0);
  assert_true(fabs(gap[0] - 0.1) < 1e-12); /* 11 vs 10 at t = 1 */
  assert_true(fabs(gap[1]) < 1e-12);       /* 6 at t = 3 vs the exact 6 at t = 2 */
  assert_true(fabs(gap[2]) < 1e-12);
  assert_int_equal(sum.worst, 0);
  assert_true(fabs(sum.max_gap - 0.1) < 1e-12 && fabs(sum.mean_gap - 0.1 / 3) < 1e-12);
  /* Reference (4.4, 12.1): exact 2.1 + 12.2 + 3.64, approximate 2.2 + 6.1 + 3.64. */
  assert_true(fabs(sum.hv_ratio - 11.94 / 17.94) < 1e-9);
  assert_int_equal(search_pareto_gap(&e, &e, NULL, &sum, &err), 0);
  assert_true(sum.max_gap == 0 && fabs(sum.hv_ratio - 1) < 1e-12);
  /* An "approximate" point faster than every exact one: the exact set is not exact. */
  ap[0].time_ns = 0.5;
  assert_int_equal(search_pareto_gap(&e, &a, NULL, &sum, &err), ENPU_ERR_INVALID);
}

/* The trim pass on a real op where Algorithm 1 leaves a domain high for nothing: the
 * prefill RoPE, where the ascent raises a unit early that the faster plans no longer
 * need (up to about 4 % of their energy; `enpu op ... --exhaustive` shows the gap). The
 * fastest point's own descent (search_op.c) already gives it the trimmed energy; the
 * trim pass improves the slower points. */
static void test_trim(void **state) {
  enpu_err err = {0};
  config_job *job;
  if (config_job_load(JOB_PATH, &job, &err) < 0) fail_msg("%s", err.msg);
  graph *g;
  assert_int_equal(graph_build(job, CONFIG_PREFILL, 1, 4096, &g, &err), 0);
  const graph_op *op = NULL;
  for (int i = 0; i < graph_op_count(g) && !op; i++)
    if (!strcmp(graph_op_at(g, i)->name, "attn.rope")) op = graph_op_at(g, i);
  assert_non_null(op);
  cost_ctx *cost;
  assert_int_equal(cost_ctx_create(&job->chip, &cost, &err), 0);
  search_ctx *sx;
  assert_int_equal(search_ctx_create(&job->chip, &sx, &err), 0);
  search_options o;
  search_options_default(&o);
  o.ideal_method = SEARCH_OP_GREEDY;
  search_pareto plain, trimmed;
  assert_int_equal(search_op_compile(sx, cost, op, CONFIG_POLICY_IDEAL, &o, &plain, &err), 0);
  o.op_trim = 1;
  assert_int_equal(search_op_compile(sx, cost, op, CONFIG_POLICY_IDEAL, &o, &trimmed, &err), 0);
  assert_true(trimmed.evals > plain.evals);
  assert_true(trimmed.points[0].time_ns <= plain.points[0].time_ns);
  assert_true(fabs(trimmed.points[0].energy_nj - plain.points[0].energy_nj) <= 1e-9 * plain.points[0].energy_nj);
  for (int i = 0; i < plain.count; i++) {
    int covered = 0;
    for (int j = 0; j < trimmed.count && !covered; j++)
      covered = trimmed.points[j].time_ns <= plain.points[i].time_ns &&
                trimmed.points[j].energy_nj <= plain.points[i].energy_nj;
    assert_true(covered);
  }
  /* Against each other as "exact" and "approximate": the plain set is the worse one. */
  search_gap gp;
  assert_int_equal(search_pareto_gap(&trimmed, &plain, NULL, &gp, &err), 0);
  assert_true(gp.max_gap > 0.01 && gp.hv_ratio <= 1 + 1e-12);
  search_pareto_free(&plain);
  search_pareto_free(&trimmed);
  search_ctx_free(sx);
  cost_ctx_free(cost);
  graph_free(g);
  config_job_free(job);
}

/* The roofline with one planted plan off the diagonal: (19,21,20,20,20) runs as fast as
 * the diagonal's (20,...,20) for 0.5 nJ less (too little to dominate s = 19). Algorithm 1
 * walks the diagonal and never sees it (its candidates differ by at most one state);
 * single trim moves cannot reach it either (lowering one domain of a diagonal plan slows
 * it, and hand-overs need unequal states), but the pair move "SA down 1, VU up 1" can. */
static const int planted_state[CONFIG_NCOMP] = {19, 21, 20, 20, 20};

static int planted_eval(void *user, const int s[CONFIG_NCOMP], double *t, double *e, enpu_err *err) {
  ENPU_FORWARD(roofline_eval(user, s, t, e, err));
  const roofline *r = user;
  if (!memcmp(s, planted_state, sizeof planted_state)) /* the diagonal's s = 20, 0.5 nJ less */
    *t = r->a / 20, *e = r->p * *t + r->delta * 20 * CONFIG_NCOMP - 0.5;
  return 0;
}

static void test_trim_pair_moves(void **state) {
  search_memo *memo;
  enpu_err err = {0};
  assert_int_equal(search_memo_create(&memo, &err), 0);
  search_domains dom;
  assert_int_equal(search_domains_enpu(&dom, 5, 34, SEARCH_OP_GREEDY, &err), 0);
  search_pareto p[3];
  int64_t calls[3];
  for (int run = 0; run < 3; run++) {
    dom.trim = run > 0; /* run 2 repeats run 1: the result must not change */
    roofline r = {1000.0, 1.0, 0.8, 0};
    void *users[1] = {&r};
    assert_int_equal(search_op_pareto(memo, &dom, planted_eval, users, 1, &p[run], &err), 0);
    calls[run] = r.calls;
    assert_int_equal(p[run].evals, calls[run]); /* memoised: no plan evaluated twice */
  }
  /* Without the trim: the diagonal s = 34..16, s = 20 at index 14. */
  assert_int_equal(p[0].count, 19);
  for (int c = 0; c < CONFIG_NCOMP; c++) assert_int_equal(p[0].points[14].state[c], 20);
  /* With it: the planted plan replaces (20,...,20), nothing else changes. */
  assert_int_equal(p[1].count, 19);
  assert_memory_equal(p[1].points[14].state, planted_state, sizeof planted_state);
  assert_true(fabs(p[1].points[14].time_ns - 50.0) < 1e-12);
  assert_true(fabs(p[1].points[14].energy_nj - (p[0].points[14].energy_nj - 0.5)) < 1e-9);
  for (int i = 0; i < 19; i++)
    if (i != 14) assert_memory_equal(p[1].points[i].state, p[0].points[i].state, sizeof p[0].points[i].state);
  /* Bounded work: per Pareto point and accepted move (one here), at most 5 lowerings,
   * 20 hand-overs, 20 pair moves and 3 repair steps of 15 raises. */
  assert_true(calls[1] > calls[0]);
  assert_true(calls[1] - calls[0] <= (19 + 1) * (5 + 20 + 20 + 45));
  assert_int_equal(p[2].count, p[1].count);
  assert_int_equal(calls[2], calls[1]);
  assert_memory_equal(p[2].points, p[1].points, (size_t)p[1].count * sizeof *p[1].points);
  for (int run = 0; run < 3; run++) search_pareto_free(&p[run]);
  search_memo_free(memo);
}

/* Five ops of four Pareto points each (convex-ish, distinct rates), multiplicities 1..2. */
static void ga_ops(search_point pts[5][4], search_req_op ops[5]) {
  for (int i = 0; i < 5; i++) {
    for (int k = 0; k < 4; k++)
      pts[i][k] = (search_point){
          {0}, 10.0 + i + 3.0 * k + 0.1 * k * k * i, 100.0 - 7.0 * k * (i + 1) + 1.3 * k * k};
    ops[i] = (search_req_op){pts[i], 4, 1 + i % 2};
  }
}

static void test_ga(void **state) {
  search_point pts[5][4];
  search_req_op ops[5];
  ga_ops(pts, ops);
  double t_fast, e_fast;
  const int fast[5] = {0, 0, 0, 0, 0};
  search_ga_genome_cost(ops, 5, fast, &t_fast, &e_fast);
  const double budget = t_fast + 14.0;
  /* Brute force over the 4^5 genomes. */
  double best_e = INFINITY;
  for (int code = 0; code < 1024; code++) {
    int g[5];
    for (int i = 0, c = code; i < 5; i++, c /= 4) g[i] = c % 4;
    double t, e;
    search_ga_genome_cost(ops, 5, g, &t, &e);
    if (t <= budget && e < best_e) best_e = e;
  }
  const search_ga_params prm = {60, 40, 7};
  enpu_err err = {0};
  int a[5], b[5];
  int64_t ea, eb;
  assert_int_equal(search_ga_run(ops, 5, budget, &prm, NULL, a, &ea, &err), 0);
  assert_int_equal(search_ga_run(ops, 5, budget, &prm, NULL, b, &eb, &err), 0);
  assert_memory_equal(a, b, sizeof a); /* same seed, same plan */
  assert_int_equal(ea, eb);
  assert_int_equal(ea, 60 + 40 * 59);
  double t, e;
  search_ga_genome_cost(ops, 5, a, &t, &e);
  assert_true(t <= budget && e >= best_e - 1e-9);
  /* Warm start from a feasible but poor genome: never worse than it, even with no
   * generations at all, and with generations it reaches the optimum of this tiny space. */
  const int seed[5] = {1, 0, 0, 1, 0};
  double ts, es;
  search_ga_genome_cost(ops, 5, seed, &ts, &es);
  assert_true(ts <= budget);
  for (int gens = 0; gens <= 40; gens += 40) {
    const search_ga_params p2 = {60, gens, 99};
    assert_int_equal(search_ga_run(ops, 5, budget, &p2, seed, b, &eb, &err), 0);
    search_ga_genome_cost(ops, 5, b, &t, &e);
    assert_true(t <= budget && e <= es);
    if (gens) assert_true(fabs(e - best_e) < 1e-9);
  }
  /* Bad input. */
  const search_ga_params bad = {1, 10, 1};
  assert_int_equal(search_ga_run(ops, 5, budget, &bad, NULL, b, &eb, &err), ENPU_ERR_INVALID);
  const int wrong[5] = {0, 0, 4, 0, 0};
  assert_int_equal(search_ga_run(ops, 5, budget, &prm, wrong, b, &eb, &err), ENPU_ERR_INVALID);
}

/* A real bucket (the job's decode, batch 1, KV 1024) with its cost and search contexts. */
void real_bucket_open(real_bucket *b) {
  enpu_err err = {0};
  if (config_job_load(JOB_PATH, &b->job, &err) < 0) fail_msg("%s", err.msg);
  assert_int_equal(graph_build(b->job, CONFIG_DECODE, 1, 1024, &b->g, &err), 0);
  assert_int_equal(cost_ctx_create(&b->job->chip, &b->cost, &err), 0);
  assert_int_equal(search_ctx_create(&b->job->chip, &b->sx, &err), 0);
}

void real_bucket_close(real_bucket *b) {
  search_ctx_free(b->sx);
  cost_ctx_free(b->cost);
  graph_free(b->g);
  config_job_free(b->job);
}

/* The GA and rail lifting on a real bucket: plans fit, invariants hold (checked inside),
 * and lifting never makes a slack's plan dearer. */
static void test_real_bucket_ga_lift(void **state) {
  enpu_err err = {0};
  real_bucket rb;
  real_bucket_open(&rb);
  const double slacks[3] = {0, 0.02, 0.10};
  search_options o;
  search_options_default(&o);
  assert_int_equal(o.ga.population, 1000);
  assert_int_equal(o.ga.generations, 500);
  o.ga = (search_ga_params){80, 30, 3};
  o.request = SEARCH_REQ_GA;
  search_bucket_result r1, r2, w0, w1;
  if (search_compile_bucket(rb.sx, rb.cost, rb.g, CONFIG_POLICY_DVFS_C, slacks, 3, &o, &r1, &err) < 0)
    fail_msg("%s", err.msg);
  assert_int_equal(search_compile_bucket(rb.sx, rb.cost, rb.g, CONFIG_POLICY_DVFS_C, slacks, 3, &o, &r2, &err), 0);
  int any_ga = 0;
  for (int k = 0; k < 3; k++) {
    assert_true(r1.plans[k].energy_nj == r2.plans[k].energy_nj); /* deterministic */
    assert_true(r1.plans[k].time_ns <= r1.plans[k].budget_ns);
    assert_true(r1.plans[k].request_evals >= 80 + 30 * 79);
    any_ga |= r1.plans[k].from_ga;
    search_vfset_cmd *cmds = calloc((size_t)r1.plans[k].instances, sizeof *cmds);
    int64_t n;
    const int(*st)[CONFIG_NCOMP] = (const int(*)[CONFIG_NCOMP])r1.plans[k].state;
    assert_int_equal(search_vfset_stream(st, r1.plans[k].instances, cmds, &n, &err), 0);
    assert_int_equal(search_vfset_check(st, r1.plans[k].instances, cmds, n, &err), 0);
    free(cmds);
  }
  assert_true(any_ga);
  search_bucket_result_free(&r1);
  search_bucket_result_free(&r2);
  search_options_default(&o);
  assert_int_equal(search_compile_bucket(rb.sx, rb.cost, rb.g, CONFIG_POLICY_ENPU_ALL, slacks, 3, &o, &w0, &err),
                   0);
  o.transition_aware = 1;
  if (search_compile_bucket(rb.sx, rb.cost, rb.g, CONFIG_POLICY_ENPU_ALL, slacks, 3, &o, &w1, &err) < 0)
    fail_msg("%s", err.msg);
  for (int k = 0; k < 3; k++) {
    assert_true(w1.plans[k].energy_nj <= w0.plans[k].energy_nj);
    assert_true(w1.plans[k].request_evals > w0.plans[k].request_evals); /* lifts were tried */
    if (!w1.plans[k].lifted_mask && !w1.plans[k].polish_moves)
      assert_true(w1.plans[k].energy_nj == w0.plans[k].energy_nj);
  }
  search_bucket_result_free(&w0);
  search_bucket_result_free(&w1);
  real_bucket_close(&rb);
}

TEST_PART(search_gap, cmocka_unit_test(test_pareto_gap), cmocka_unit_test(test_trim),
          cmocka_unit_test(test_trim_pair_moves), cmocka_unit_test(test_ga),
          cmocka_unit_test(test_real_bucket_ga_lift));
