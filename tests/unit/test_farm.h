/* test_farm.h — the farm's tests in other files than test_farm.c (which holds main,
 * the result builders and the checkpoint state's tests): test_farm_codec.c, the result
 * codec; test_farm_journal.c, the journal; test_farm_parts.c, the part records of split
 * op searches and their merge; test_farm_plan.c, the master's task graph and scheduling
 * without MPI. */
#ifndef TEST_FARM_H
#define TEST_FARM_H

#include "farm_internal.h"
#include "store_fixture.h"
#include "test_util.h"

#define NPTS 3
#define POLICY CONFIG_POLICY_ENPU_ALL
static const uint64_t keys3[3] = {11, 22, 33};

/* Results with NPTS Pareto points per op, and their encodings (test_farm.c). */
farm_op_result make_op(uint32_t policy, uint64_t key);
farm_bucket_result make_bucket(uint32_t policy, int phase, int batch, int seq, const uint64_t *keys, uint32_t nops,
                               uint64_t input_hash);
farm_bucket_result make_infeasible(uint32_t policy, int phase, int batch, int seq, uint64_t input_hash);
farm_buf encode_op(const farm_op_result *r);
farm_buf encode_bucket(const farm_bucket_result *r);
void assert_same_bytes(const farm_buf *a, const farm_buf *b);

/* A fresh folder with a store path and its journal path, per test. */
typedef struct {
  char dir[STORE_FIXTURE_DIR_LEN];
  char path[STORE_FIXTURE_PATH_LEN]; /* a store */
  char journal[160];                 /* its journal */
} tmp_fixture;
int tmp_setup(void **state);
int tmp_teardown(void **state);

/* Journal records (test_farm_journal.c): record i's payload and kind; append records
 * first..first+n-1 to the journal at path (fsync after each when sync_each). */
farm_buf record_payload(int i, uint32_t *kind);
void append_records(const char *path, int first, int n, int sync_each);
long file_size(const char *path);

extern const struct CMUnitTest farm_codec_tests[], farm_journal_tests[];
extern const size_t farm_codec_ntests, farm_journal_ntests;

void test_part_codec(void **state);
void test_merge_parts(void **state);
void test_plan_demo(void **state);
void test_plan_added_buckets(void **state);
void test_sched_order_free(void **state);
void test_sweep_keys(void **state); /* test_farm_sweep.c: a sweep's chip variants in the keys */

#endif /* TEST_FARM_H */
