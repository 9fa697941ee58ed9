/* test_cost.h — what the cost model's tests share across files: test_cost.c (which holds
 * main, the fixture and the hand-built operators), test_cost_batch.c (the batch entry
 * point and the box bounds) and test_cost_mech.c (reductions' accumulators in the VU shadow
 * register file, the SA's fill in its own time, the authors' simulator's collective
 * timing). */
#ifndef TEST_COST_H
#define TEST_COST_H

#include <stdint.h>

#include "cost.h"

typedef struct {
  config_chip *chip;
  power_model *pm_dvfs, *pm_fixed;
  cost_ctx *ctx;
} fixture;

cost_plan peak(const fixture *f);                    /* every component at its peak */
graph_op matmul_op(int64_t m, int64_t k, int64_t n); /* a weight matmul, bf16 */
uint64_t rng_next(uint64_t *s);                      /* xorshift64 */
int64_t rng_range(uint64_t *s, int64_t lo, int64_t hi);
graph_op random_op(uint64_t *s, int kind); /* an op of graph_op_kind `kind` */
cost_pipeline enpu5(const fixture *f);     /* eNPU-All on the DVFS power model */

void test_batch_identical(void **state);
void test_bound_box(void **state);
void test_accumulator_round_trip(void **state);
void test_accumulators_need_registers(void **state);
void test_tile_accumulators(void **state);
void test_sweep_fixed_schedule(void **state);
void test_sweep_on_operators(void **state);
void test_sa_fill_in_own_time(void **state);
void test_neusim_collective_overlap(void **state);

#endif /* TEST_COST_H */
