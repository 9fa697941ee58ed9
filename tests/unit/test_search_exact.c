/* test_search_exact.c — the exact Pareto search (branch and bound, search_exact.c) against
 * the exhaustive enumeration as the oracle, on the real cost model at a reduced state
 * count (8 states per component, the chip's frequency range unchanged, 8^5 = 32,768
 * plans per op): every op kind (the host link's load too), both budget modes; the parts a
 * farm hands out merge into the same set with the same evaluation count; threads change
 * nothing; and the policy variants the exact search meets (a shadow register file of
 * another size, power gating). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "search.h"
#include "test_search.h"

#define REDUCED_STATES 8

static void assert_same_set(const search_pareto *a, const search_pareto *b, const char *what) {
  if (a->count != b->count) fail_msg("%s: %d points against %d", what, a->count, b->count);
  for (int i = 0; i < a->count; i++) /* fields, not bytes: search_point has padding */
    if (memcmp(a->points[i].state, b->points[i].state, sizeof a->points[i].state) ||
        a->points[i].time_ns != b->points[i].time_ns || a->points[i].energy_nj != b->points[i].energy_nj)
      fail_msg("%s: point %d differs (%.17g ns %.17g nJ against %.17g ns %.17g nJ)", what, i, a->points[i].time_ns,
               a->points[i].energy_nj, b->points[i].time_ns, b->points[i].energy_nj);
}

enum { NJOBS = 3, NGRAPHS = 2 * NJOBS };

/* One op of each kind from real graphs (Llama3-70B, DeepSeek-V3, and DeepSeek-V2 with its
 * weights offloaded over the host link, both phases); the collective no graph has
 * (reduce-scatter) is an all-reduce relabelled. */
static int ops_by_kind(config_job *jobs[NJOBS], graph *g[NGRAPHS], graph_op ops[GRAPH_NKIND]) {
  enpu_err err = {0};
  const char *paths[NJOBS] = {ENPU_SOURCE_DIR "/jobs/llama3-70b.json",
                              ENPU_SOURCE_DIR "/jobs/deepseek-v3-671b.json",
                              ENPU_SOURCE_DIR "/jobs/deepseek-v2-236b.json"};
  for (int j = 0; j < NJOBS; j++) {
    if (config_job_load(paths[j], &jobs[j], &err) < 0) fail_msg("%s", err.msg);
    if (j == 2) jobs[j]->capacity = CONFIG_CAPACITY_OFFLOAD;
    if (graph_build(jobs[j], CONFIG_PREFILL, 2, 1024, &g[2 * j], &err) < 0 ||
        graph_build(jobs[j], CONFIG_DECODE, 16, 4096, &g[2 * j + 1], &err) < 0)
      fail_msg("%s", err.msg);
  }
  int found[GRAPH_NKIND] = {0};
  for (int k = 0; k < NGRAPHS; k++)
    for (int i = 0; i < graph_op_count(g[k]); i++) {
      const graph_op *op = graph_op_at(g[k], i);
      if (!found[op->kind]) ops[op->kind] = *op, found[op->kind] = 1;
    }
  for (int kind = 0; kind < GRAPH_NKIND; kind++) {
    if (found[kind]) continue;
    if (kind != GRAPH_REDUCE_SCATTER || !found[GRAPH_ALLREDUCE])
      fail_msg("no op of kind %s to test", graph_kind_name((graph_op_kind)kind));
    ops[kind] = ops[GRAPH_ALLREDUCE];
    ops[kind].kind = (graph_op_kind)kind;
  }
  return GRAPH_NKIND;
}

void test_exact_equals_exhaustive(void **state) {
  (void)state;
  config_job *jobs[NJOBS];
  graph *g[NGRAPHS];
  graph_op ops[GRAPH_NKIND];
  const int nops = ops_by_kind(jobs, g, ops);
  config_chip chip = jobs[0]->chip; /* the same frequency range in 8 states */
  chip.freq_step_mhz = chip.freq_step_mhz * chip.freq_states / REDUCED_STATES;
  chip.freq_states = REDUCED_STATES;
  enpu_err err = {0};
  cost_ctx *cost, *cost2;
  search_ctx *sx;
  if (cost_ctx_create(&chip, &cost, &err) < 0 || cost_ctx_create(&chip, &cost2, &err) < 0 ||
      search_ctx_create(&chip, &sx, &err) < 0)
    fail_msg("%s", err.msg);
  const int64_t plans = 8 * 8 * 8 * 8 * 8;
  for (int budget = 0; budget < CONFIG_NBUDGET; budget++)
    for (int k = 0; k < nops; k++) {
      char what[96];
      snprintf(what, sizeof what, "%s (%s), %s", ops[k].name, graph_kind_name(ops[k].kind),
               config_budget_name((config_budget)budget));
      search_options o;
      search_options_default(&o);
      o.budget = (config_budget)budget;
      search_pareto ex, bb, bb3, parts[SEARCH_EXACT_PARTS], merged;
      o.ideal_method = SEARCH_OP_EXHAUSTIVE;
      if (search_op_compile(sx, cost, &ops[k], CONFIG_POLICY_IDEAL, &o, &ex, &err) < 0)
        fail_msg("%s: %s", what, err.msg);
      o.ideal_method = SEARCH_OP_EXACT;
      if (search_op_compile(sx, cost2, &ops[k], CONFIG_POLICY_IDEAL, &o, &bb, &err) < 0)
        fail_msg("%s: %s", what, err.msg);
      assert_int_equal(ex.evals, plans);
      assert_same_set(&ex, &bb, what);
      assert_true(bb.evals < plans / 2);
      o.threads = 3;
      assert_int_equal(search_op_compile(sx, cost, &ops[k], CONFIG_POLICY_IDEAL, &o, &bb3, &err), 0);
      assert_same_set(&bb, &bb3, what);
      assert_int_equal(bb3.evals, bb.evals);
      o.threads = 1;
      for (int p = SEARCH_EXACT_PARTS - 1; p >= 0; p--) /* any order */
        assert_int_equal(search_op_compile_part(sx, cost2, &ops[k], CONFIG_POLICY_IDEAL, &o, p, &parts[p], &err),
                         0);
      assert_int_equal(search_pareto_merge(parts, SEARCH_EXACT_PARTS, &merged, &err), 0);
      assert_same_set(&bb, &merged, what);
      assert_int_equal(merged.evals, bb.evals);
      print_message("%-40s %3d points, exact %6lld of %lld evaluations (%.1f %%)\n", what, bb.count,
                    (long long)bb.evals, (long long)plans, 100.0 * bb.evals / plans);
      for (int p = 0; p < SEARCH_EXACT_PARTS; p++) search_pareto_free(&parts[p]);
      search_pareto_free(&merged);
      search_pareto_free(&ex);
      search_pareto_free(&bb);
      search_pareto_free(&bb3);
    }
  search_pareto none;
  assert_int_equal(
      search_op_compile_part(sx, cost, &ops[0], CONFIG_POLICY_IDEAL, NULL, SEARCH_EXACT_PARTS, &none, &err),
      ENPU_ERR_INVALID);
  search_ctx_free(sx);
  cost_ctx_free(cost);
  cost_ctx_free(cost2);
  for (int k = 0; k < NGRAPHS; k++) graph_free(g[k]);
  for (int j = 0; j < NJOBS; j++) config_job_free(jobs[j]);
}

/* The policy variants over the exact search: a shadow register file of another size
 * (ideal@shadow=0: other kernels under the same bounds) gives the exhaustive set too, and
 * power gating (pg+ideal) leaves the op level as it is (gating prices finalised plans
 * only), so its set is ideal's, evaluation for evaluation. VU-heavy kinds, where the
 * register file matters, and a matmul; both budget modes. */
void test_exact_variants(void **state) {
  (void)state;
  config_job *jobs[NJOBS];
  graph *g[NGRAPHS];
  graph_op ops[GRAPH_NKIND];
  ops_by_kind(jobs, g, ops);
  config_chip chip = jobs[0]->chip;
  chip.freq_step_mhz = chip.freq_step_mhz * chip.freq_states / REDUCED_STATES;
  chip.freq_states = REDUCED_STATES;
  enpu_err err = {0};
  cost_ctx *cost;
  search_ctx *sx;
  if (cost_ctx_create(&chip, &cost, &err) < 0 || search_ctx_create(&chip, &sx, &err) < 0) fail_msg("%s", err.msg);
  const graph_op_kind kinds[] = {GRAPH_ATTENTION, GRAPH_NORM, GRAPH_ELEMENTWISE, GRAPH_MATMUL};
  for (int budget = 0; budget < CONFIG_NBUDGET; budget++)
    for (size_t k = 0; k < sizeof kinds / sizeof kinds[0]; k++) {
      const graph_op *op = &ops[kinds[k]];
      char what[96];
      snprintf(what, sizeof what, "%s (%s), %s, shadow 0", op->name, graph_kind_name(op->kind),
               config_budget_name((config_budget)budget));
      search_options o;
      search_options_default(&o);
      o.budget = (config_budget)budget;
      o.shadow_vregs = 0;
      search_pareto ex, bb, plain, gated;
      o.ideal_method = SEARCH_OP_EXHAUSTIVE;
      if (search_op_compile(sx, cost, op, CONFIG_POLICY_IDEAL, &o, &ex, &err) < 0)
        fail_msg("%s: %s", what, err.msg);
      o.ideal_method = SEARCH_OP_EXACT;
      if (search_op_compile(sx, cost, op, CONFIG_POLICY_IDEAL, &o, &bb, &err) < 0)
        fail_msg("%s: %s", what, err.msg);
      assert_same_set(&ex, &bb, what);
      o.shadow_vregs = -1;
      assert_int_equal(search_op_compile(sx, cost, op, CONFIG_POLICY_IDEAL, &o, &plain, &err), 0);
      o.gating = 1;
      assert_int_equal(search_op_compile(sx, cost, op, CONFIG_POLICY_IDEAL, &o, &gated, &err), 0);
      assert_same_set(&plain, &gated, "pg+ideal against ideal");
      assert_int_equal(gated.evals, plain.evals);
      search_pareto_free(&ex);
      search_pareto_free(&bb);
      search_pareto_free(&plain);
      search_pareto_free(&gated);
    }
  search_ctx_free(sx);
  cost_ctx_free(cost);
  for (int k = 0; k < NGRAPHS; k++) graph_free(g[k]);
  for (int j = 0; j < NJOBS; j++) config_job_free(jobs[j]);
}
