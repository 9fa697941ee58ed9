/* store_fixture.h — what the tests that put a synthetic plan store on disk share: a
 * scratch directory /tmp/<name>.XXXXXX holding <dir>/plans.h5 (removed whole at the
 * end), the writer loop that appends each policy's seven tables and commits, and a
 * double-precision assert_near.
 * Each test builds its own tables (their values are what it checks) and hands them here
 * as views; nothing is copied. Included by tests/unit/test_{store,report,replay,farm}.c
 * and, through tests/integration/replay/synth_store.h, tests/bench/bench_replay.c; all
 * functions are static inline so a file that uses only some of them stays warning-free. */
#ifndef STORE_FIXTURE_H
#define STORE_FIXTURE_H

#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "store.h"

/* cmocka 1.1 has only a float comparison; times and energies need double precision.
 * (A macro, so fail_msg comes from the cmocka.h of the test that uses it.) */
#define assert_near(a, b, eps)                                                                    \
  do {                                                                                            \
    double a_ = (a), b_ = (b);                                                                    \
    if (!(fabs(a_ - b_) <= (eps))) fail_msg("%.17g != %.17g (within %g)", a_, b_, (double)(eps)); \
  } while (0)

#define STORE_FIXTURE_DIR_LEN 64
#define STORE_FIXTURE_PATH_LEN 128

/* One policy's tables as written; a table with no rows (NULL, 0) is not written. */
typedef struct {
  const char *policy;
  const store_op_rec *ops;
  const store_pareto_rec *pareto;
  const store_bucket_rec *buckets;
  const store_bucket_op_rec *bops;
  const store_walk_rec *walk;
  const store_plan_rec *plans;
  const store_plan_state_rec *pstates;
  size_t nops, npareto, nbuckets, nbops, nwalk, nplans, npstates;
} store_fixture_policy;

/* The view, as policy `name`, of the tables held in t: any struct with the table and
 * count members above (a test's own tables, owned or fixed-size). */
#define STORE_FIXTURE_VIEW(name, t)                                                                             \
  ((store_fixture_policy){(name), (t).ops, (t).pareto, (t).buckets, (t).bops, (t).walk, (t).plans, (t).pstates, \
                          (t).nops, (t).npareto, (t).nbuckets, (t).nbops, (t).nwalk, (t).nplans, (t).npstates})

/* Take the lock of the store at `path` (no waiting) and start a writer for it; the
 * caller frees the writer, then releases the lock. @return 0 or the error (in err). */
static inline int store_fixture_writer(const char *path, const store_provenance *prov, int level, store_lock **lock,
                                       store_writer **w, enpu_err *err) {
  *w = NULL;
  int rc = store_lock_acquire(path, "store test fixture", 0, NULL, lock, err);
  if (rc == 0) rc = store_writer_create(*lock, prov, level, w, err);
  return rc;
}

/* Write and publish a store of n policies at zstd `level`.
 * @return 0 or the writer's error (in err). */
static inline int store_fixture_write(const char *path, const store_provenance *prov, int level,
                                      const store_fixture_policy *pols, size_t n, enpu_err *err) {
  store_writer *w = NULL;
  store_lock *lock = NULL;
  int rc = store_fixture_writer(path, prov, level, &lock, &w, err);
  for (size_t i = 0; rc == 0 && i < n; i++) {
    const store_fixture_policy *p = &pols[i];
    const struct {
      store_table table;
      const void *rows;
      size_t n;
    } tabs[] = {{STORE_T_OPS, p->ops, p->nops},
                {STORE_T_PARETO, p->pareto, p->npareto},
                {STORE_T_BUCKETS, p->buckets, p->nbuckets},
                {STORE_T_BUCKET_OPS, p->bops, p->nbops},
                {STORE_T_WALK, p->walk, p->nwalk},
                {STORE_T_PLANS, p->plans, p->nplans},
                {STORE_T_PLAN_STATES, p->pstates, p->npstates}};
    for (size_t k = 0; rc == 0 && k < sizeof tabs / sizeof tabs[0]; k++)
      rc = store_writer_append(w, p->policy, tabs[k].table, tabs[k].rows, tabs[k].n, err);
  }
  if (rc == 0) rc = store_writer_commit(w, err);
  store_writer_free(w);
  store_lock_release(lock);
  return rc;
}

/* Make the scratch directory /tmp/<name>.XXXXXX into dir and <dir>/plans.h5 into path.
 * @return 0, or -1 when the directory cannot be made. */
static inline int store_fixture_dir_make(const char *name, char dir[STORE_FIXTURE_DIR_LEN],
                                         char path[STORE_FIXTURE_PATH_LEN]) {
  snprintf(dir, STORE_FIXTURE_DIR_LEN, "/tmp/%s.XXXXXX", name);
  if (!mkdtemp(dir)) return -1;
  snprintf(path, STORE_FIXTURE_PATH_LEN, "%s/plans.h5", dir);
  return 0;
}

/* Remove the scratch directory and all in it. @return 0, or -1 when rm fails. */
static inline int store_fixture_dir_remove(const char *dir) {
  char cmd[STORE_FIXTURE_DIR_LEN + 16];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
  return system(cmd) == 0 ? 0 : -1;
}

#endif /* STORE_FIXTURE_H */
