/* test_cost_batch.c — the cost model's batch entry point (cost_eval_batch) bit for bit
 * against single evaluations, over every op kind and every pipeline a policy variant
 * builds (domain maps, shadow register files, power gating), and the box bounds
 * (cost_bound_box) against every plan of random boxes; bounds are refused where they
 * would not hold (shared domains, gating). */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "test_cost.h"

/* Plans with repeated (SA, VU, SRAM) triples, so a batch both runs and reuses kernels. */
static void random_plans(uint64_t *s, cost_plan *p, int n) {
  for (int i = 0; i < n; i++) {
    for (int c = 0; c < CONFIG_NCOMP; c++) p[i].state[c] = (int)rng_range(s, 1, 34);
    if (i > 0 && rng_next(s) % 3 == 0) memcpy(p[i].state, p[rng_next(s) % (uint64_t)i].state, 3 * sizeof(int));
  }
}

/* The pipelines a batch must honour: the domain maps, and the policy variants' shadow
 * register files and power gating (which batch evaluates whole, cost.h). */
enum { NPIPE = 10 };
static void batch_pipelines(const fixture *f, cost_pipeline pls[NPIPE]) {
  cost_pipeline_enpu(&pls[0], 5, f->pm_dvfs, NULL);
  cost_pipeline_enpu(&pls[1], 4, f->pm_dvfs, NULL);
  cost_pipeline_enpu(&pls[2], 3, f->pm_dvfs, NULL);
  cost_pipeline_ideal(&pls[3], f->pm_dvfs);
  cost_pipeline_nodvfs(&pls[4], f->pm_dvfs);
  pls[5] = pls[0], pls[5].shadow_vregs = 0;
  pls[6] = pls[3], pls[6].shadow_vregs = 2;
  pls[7] = pls[0], pls[7].gating = 1;
  pls[8] = pls[2], pls[8].gating = 1, pls[8].shadow_vregs = 0;
  pls[9] = pls[0]; /* the chip's shadow registers again, after the variants */
}

/* cost_eval_batch gives exactly what cost_eval gives, for every op kind and pipeline (one
 * op through every pipeline in turn, so the batch's kernel cache meets the same op under
 * other shadow register files and gating), and names the plan that fails. */
void test_batch_identical(void **state) {
  fixture *f = *state;
  cost_pipeline pls[NPIPE];
  batch_pipelines(f, pls);
  uint64_t s = 0x243f6a8885a308d3ull;
  enum { N = 96 };
  cost_plan plans[N];
  cost_brief out[N];
  for (int kind = 0; kind < GRAPH_NKIND; kind++)
    for (int trial = 0; trial < 3; trial++) {
      graph_op op = random_op(&s, kind);
      random_plans(&s, plans, N);
      for (int k = 0; k < NPIPE; k++) {
        assert_int_equal(cost_eval_batch(f->ctx, &op, plans, N, &pls[k], out, NULL), 0);
        for (int i = 0; i < N; i++) {
          cost_result r;
          assert_int_equal(cost_eval(f->ctx, &op, &plans[i], &pls[k], &r, NULL), 0);
          if (memcmp(&r.time_ns, &out[i].time_ns, sizeof(double)) ||
              memcmp(&r.cp_time_ns, &out[i].cp_time_ns, sizeof(double)) ||
              memcmp(&r.energy_total_nj, &out[i].energy_nj, sizeof(double)))
            fail_msg("%s pipeline %d plan %d: batch %.17g ns %.17g nJ, single %.17g ns %.17g nJ",
                     graph_kind_name(op.kind), k, i, out[i].time_ns, out[i].energy_nj, r.time_ns,
                     r.energy_total_nj);
        }
      }
    }
  graph_op op = matmul_op(64, 1024, 1024);
  plans[3].state[CONFIG_SA] = 35;
  enpu_err err = {0};
  assert_int_equal(cost_eval_batch(f->ctx, &op, plans, 8, &pls[0], out, &err), ENPU_ERR_RANGE);
  assert_non_null(strstr(err.msg, "plan 3 of the batch"));
  plans[3].state[CONFIG_SA] = 0; /* gated with work */
  assert_int_equal(cost_eval_batch(f->ctx, &op, plans, 8, &pls[0], out, &err), ENPU_ERR_RANGE);
  assert_non_null(strstr(err.msg, "clock-gated"));
  assert_int_equal(cost_eval_batch(f->ctx, &op, plans, 8, &pls[7], out, &err), ENPU_ERR_RANGE);
  assert_non_null(strstr(err.msg, "plan 3 of the batch"));
}

/* Every plan of a box is at least its bounds, with the chip's shadow register file and
 * others (the kernels differ, the critical-path constants do not); a one-plan box bounds
 * its time exactly. */
void test_bound_box(void **state) {
  fixture *f = *state;
  cost_pipeline pls[4];
  cost_pipeline_enpu(&pls[0], 5, f->pm_dvfs, NULL);
  cost_pipeline_ideal(&pls[1], f->pm_dvfs);
  pls[2] = pls[1], pls[2].shadow_vregs = 0; /* ideal@shadow=0 */
  pls[3] = pls[0], pls[3].shadow_vregs = 2;
  uint64_t s = 0x13198a2e03707344ull;
  int64_t plans = 0;
  for (int kind = 0; kind < GRAPH_NKIND; kind++)
    for (int trial = 0; trial < 6; trial++) {
      graph_op op = random_op(&s, kind);
      const cost_pipeline *pl = &pls[trial % 4];
      cost_plan lo, hi;
      for (int c = 0; c < CONFIG_NCOMP; c++) {
        lo.state[c] = (int)rng_range(&s, 1, 34);
        hi.state[c] = (int)rng_range(&s, lo.state[c], lo.state[c] + 2 > 34 ? 34 : lo.state[c] + 2);
      }
      cost_brief lb;
      assert_int_equal(cost_bound_box(f->ctx, &op, &lo, &hi, pl, &lb, NULL), 0);
      cost_plan p = lo;
      for (;;) { /* every plan of the box, odometer order */
        cost_result r;
        assert_int_equal(cost_eval(f->ctx, &op, &p, pl, &r, NULL), 0);
        assert_true(r.time_ns >= lb.time_ns && r.cp_time_ns >= lb.cp_time_ns);
        if (r.energy_total_nj < lb.energy_nj)
          fail_msg("%s: energy %.17g below its box's bound %.17g", graph_kind_name(op.kind), r.energy_total_nj,
                   lb.energy_nj);
        plans++;
        int c = 0;
        while (c < CONFIG_NCOMP && p.state[c] == hi.state[c]) p.state[c] = lo.state[c], c++;
        if (c == CONFIG_NCOMP) break;
        p.state[c]++;
      }
      cost_result r;
      assert_int_equal(cost_bound_box(f->ctx, &op, &hi, &hi, pl, &lb, NULL), 0);
      assert_int_equal(cost_eval(f->ctx, &op, &hi, pl, &r, NULL), 0);
      assert_true(lb.time_ns == r.time_ns && lb.cp_time_ns == r.cp_time_ns);
      assert_true(lb.energy_nj > 0.5 * r.energy_total_nj);
    }
  assert_true(plans > 1000);
  cost_pipeline shared, gated = pls[1];
  cost_pipeline_enpu(&shared, 4, f->pm_dvfs, NULL);
  graph_op op = matmul_op(64, 1024, 1024);
  cost_plan p = peak(f);
  cost_brief lb;
  assert_int_equal(cost_bound_box(f->ctx, &op, &p, &p, &shared, &lb, NULL), ENPU_ERR_INVALID);
  /* gating saves static energy below the bound's floor: no bounds under it */
  gated.gating = 1;
  assert_int_equal(cost_bound_box(f->ctx, &op, &p, &p, &gated, &lb, NULL), ENPU_ERR_INVALID);
}
