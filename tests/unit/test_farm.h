/* test_farm.h — the farm's tests in other files than test_farm.c (which holds main):
 * test_farm_parts.c, the part records of split op searches and their merge;
 * test_farm_plan.c, the master's task graph and scheduling without MPI. */
#ifndef TEST_FARM_H
#define TEST_FARM_H

void test_part_codec(void **state);
void test_merge_parts(void **state);
void test_plan_demo(void **state);
void test_plan_added_buckets(void **state);
void test_sched_order_free(void **state);
void test_sweep_keys(void **state); /* test_farm_sweep.c: a sweep's chip variants in the keys */

#endif /* TEST_FARM_H */
