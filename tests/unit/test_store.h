/* test_store.h — the store module's tests in several files, one program (test_store.c
 * holds the synthetic store, the fixture, the lookup tests and main):
 * test_store_writer.c (zstd, sizes, publication), test_store_load.c (store_load,
 * store_diff), test_store_damaged.c (corrupt and crafted stores),
 * test_store_bundle.c (bucket bundles, validation carry) and test_store_leaks.c. */
#ifndef TEST_STORE_H
#define TEST_STORE_H

#include "planstore.h"
#include "store.h"
#include "store_fixture.h"
#include "test_util.h"

#define NOPS 3
#define NPTS 3
#define MAX_BUCKETS 8
#define MAX_STEPS 8
#define POLICY "enpu-all"

/* The synthetic store: NOPS ops of NPTS Pareto points, a grid of buckets with walks,
 * plans and plan states, one policy. */
typedef struct {
  store_op_rec ops[NOPS];
  store_pareto_rec pareto[NOPS * NPTS];
  store_bucket_rec buckets[MAX_BUCKETS];
  store_bucket_op_rec bops[MAX_BUCKETS * NOPS];
  store_walk_rec walk[MAX_BUCKETS * MAX_STEPS];
  store_plan_rec plans[MAX_BUCKETS * 2];
  store_plan_state_rec pstates[MAX_BUCKETS * 2 * NOPS * NPTS];
  size_t nbuckets, nbops, nwalk, nplans, npstates;
} fixture;

/* The group's state: a temporary directory with the synthetic store written and open. */
typedef struct {
  char dir[STORE_FIXTURE_DIR_LEN];
  char path[STORE_FIXTURE_PATH_LEN];
  fixture f;
  planstore *ps;
} ctx;

extern const store_provenance test_prov;
/* Point k of op i (time, energy); instances of op in bucket `row`; the walk's moves. */
double pt_time(int i, int k);
double pt_energy(int i, int k);
uint64_t multiplicity(int op, size_t row);
size_t walk_move_count(void);
void make_fixture(fixture *f);
int write_fixture(const char *path, const fixture *f, int level, enpu_err *err);
long file_bytes(const char *path);
/* Write the synthetic store at path with zstd level `level` (--write). */
int write_only(const char *path, int level);

/* test_store_leaks.c: damaged copies of the store at `store`, written in `dir`, opened by
 * every reader: errors, and no HDF5 object left open (nor at exit). */
void test_failed_opens_leak_nothing(const char *store, const char *dir);
/* test_store_leaks.c: a process with HDF5's printing at its default, opening damaged
 * copies through planstore_open, prints nothing (no HDF5 dump at exit). */
void test_damaged_opens_print_nothing_at_exit(const char *store, const char *dir);

extern const struct CMUnitTest store_writer_tests[], store_load_tests[], store_damaged_tests[],
    store_bundle_tests[];
extern const size_t store_writer_ntests, store_load_ntests, store_damaged_ntests, store_bundle_ntests;

#endif /* TEST_STORE_H */
