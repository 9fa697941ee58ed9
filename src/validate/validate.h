/* validate.h — validation of a plan store (src/README.md): a stratified sample
 * of each policy's buckets, every stored plan of a sampled bucket re-simulated on the
 * real operator order with the full cost model and V/f transitions (search_plan_simulate)
 * and checked against its budget and its stored time and energy, the trace replay with
 * every policy of the store, the results written into the store's validation tables
 * (schemas/planstore.md) and a markdown report.
 *
 * Determinism: the sample depends only on the store's buckets and the seed (strata are
 * ordered, buckets inside a stratum are ordered by a seeded hash of their key), the
 * re-simulation and the replay draw nothing, so the same inputs give the same tables.
 *
 * Units: ns, nJ; tolerances are relative. */
#ifndef ENPU_VALIDATE_H
#define ENPU_VALIDATE_H

#include <signal.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "common.h"
#include "config.h"
#include "store.h"

#define VALIDATE_DEFAULT_SAMPLE 24
/* Relative: the re-simulation repeats the same arithmetic, so only summation order may
 * differ. */
#define VALIDATE_DEFAULT_TOLERANCE 1e-9

/* ---------------------------------------------------------------------------------
 * Stratified sample */

/* Strata: phase × batch range × seq range. A phase's distinct batch sizes (and sequence
 * lengths) are split into VALIDATE_RANGES ranges of consecutive values as equal in count
 * as possible (fewer when there are fewer values); stratum id = (phase · R + batch range)
 * · R + seq range. Only buckets compiled ok with at least one plan are sampled. */
#define VALIDATE_RANGES 3
#define VALIDATE_NSTRATA (CONFIG_NPHASE * VALIDATE_RANGES * VALIDATE_RANGES)

typedef struct {
  uint32_t bucket;  /* row of the policy's buckets table */
  uint32_t stratum; /* 0 .. VALIDATE_NSTRATA - 1 */
} validate_pick;

/* Up to n buckets of one policy: strata are visited in id order, taking in turn the next
 * bucket of each non-empty stratum (its buckets ordered by enpu_hash64 of (seed, phase,
 * batch, seq)), until n are taken or every bucket is; so each stratum gets n/S or
 * n/S + 1 buckets while it has them. out must hold min(n, t->nbuckets) picks; they come
 * back ordered by bucket row. @return 0, ENPU_ERR_INVALID (n < 1), ENPU_ERR_NOMEM. */
int validate_sample(const store_policy_tables *t, int n, uint64_t seed, validate_pick *out, size_t *count,
                    enpu_err *err);

/* "prefill b1-4 s1024-4096" ("b8" for a single value): the phase and the batch and seq
 * ranges of a stratum in this policy's buckets (the values its buckets span). */
void validate_stratum_label(const store_policy_tables *t, uint32_t stratum, char *buf, size_t cap);

/* ---------------------------------------------------------------------------------
 * Re-simulating stored plans */

typedef struct validate_ctx validate_ctx;

/* A context for one job (the graphs' model, parallelism and chip): search and cost
 * contexts, reused across buckets. The job must outlive it. */
int validate_ctx_create(const config_job *job, validate_ctx **out, enpu_err *err);
void validate_ctx_free(validate_ctx *v); /* NULL is a no-op */

/* Check every plan of bucket `bucket` of policy tables `t` (policy named by t->name):
 * rebuild the bucket's graph from the job, match the store's ops to the graph's ops (kind,
 * multiplicity, and the cost model reproducing the op's fastest Pareto point), place every
 * op instance by the plan's plan_states runs (an op shared by several graph ops numbers
 * their instances in graph order), check a walk-prefix plan's runs against the store's
 * walk replay (a step moves the lowest-numbered instances still at its source point),
 * re-simulate in the plan's budget mode, and compare (strict: time within the budget;
 * paper: critical-path time within it and the overhead as stored). out[i] receives plan i
 * of the bucket (cap must be >= its plan_count). A plan that fails gets pass = 0 and a
 * message; that is not an error.
 * @return 0; ENPU_ERR_RANGE (cap too small), ENPU_ERR_NOT_FOUND (unknown policy name),
 * ENPU_ERR_NOMEM. */
int validate_bucket(validate_ctx *v, const store_policy_tables *t, uint32_t bucket, uint32_t stratum,
                    double tolerance, store_validation_rec *out, size_t cap, enpu_err *err);

/* ---------------------------------------------------------------------------------
 * A whole validation */

typedef struct {
  const char *store_path;
  const store_lock *lock; /* the store's writer lock when the caller holds it (the
                             farm); NULL: validate_run takes it for the whole run, */
  double lock_wait_s;     /* waiting this long for another writer */
  const char *trace_path;
  const config_job *job;         /* graphs, model and chip for the re-simulation/replay */
  const char *job_source;        /* where the job came from, for the report */
  const config_cluster *cluster; /* the replay's cluster */
  const char *report_path;       /* markdown written here (directories created); NULL: none */
  int sample;                    /* buckets per policy */
  uint64_t seed;
  double tolerance;
  FILE *log; /* progress notes; NULL: none */
  /* Take what the store already holds instead of computing it again (the farm, after a
   * rerun kept the rows of the plans it did not change): a sampled bucket's validation
   * rows when the store has them (rows in a store always describe its current plans),
   * and the replay when every policy's replay row is there with this run's trace, sample,
   * seed and tolerance. A validation with nothing left to do leaves the store as it is. */
  bool reuse_kept;
  /* A caller's stop-signal flag (enpu validate's; NULL: none, as in the farm, whose
   * validation comes after every task and finishes). Once it is nonzero the wait for the
   * lock ends, and so does the work at its next bucket, policy replay or before the
   * store is rewritten: ENPU_ERR_STOPPED naming the signal, the store as it was (the
   * validation publishes only at its end) and no report written. A signal after the
   * store was published stops nothing. With it, ENPU_VALIDATE_TEST_HOLD=PHASE (resim:
   * after the sampled plans were re-simulated; publish: before the store is rewritten;
   * report: after it, before the report) says "validate: test hold at PHASE" on the log
   * and waits for a stop signal, so that a test signals a known phase without racing. */
  const volatile sig_atomic_t *stop;
} validate_args;

typedef struct {
  size_t policies, buckets, plans, passed, failed;
  size_t reused_buckets; /* of `buckets`: rows taken from the store (reuse_kept) */
  bool reused_replay;    /* the replay rows taken from the store (reuse_kept) */
  bool unchanged;        /* everything was reused: the store was not rewritten */
  double resim_s, replay_s, total_s;
  char first_failure[ENPU_ERR_MSG_LEN]; /* "" when every plan passed */
} validate_outcome;

void validate_args_default(validate_args *a);

/* Sample, re-simulate, replay every policy of the store on the trace, then rewrite the
 * store with its validation tables replaced (store_load + store_writer: temp file, fsync,
 * rename; every other table and attribute is copied unchanged) and write the report.
 * Failing plans are an outcome (out->failed), not an error.
 * @return 0; or the error of a file that cannot be read or written (the store is then
 * unchanged), the replay's errors, ENPU_ERR_NOMEM. */
int validate_run(const validate_args *a, validate_outcome *out, enpu_err *err);

/* The job a store was compiled from, rebuilt from its attributes (job, model, chip and
 * cluster documents), which are written into a private temporary directory at the
 * job's relative paths and loaded; the chip's power tables, which the store does not
 * carry, are copied from the job's input directory: the directory in which
 * `cluster_path` sits at the job's cluster reference (jobs/ for jobs/clusters/x.json
 * referenced as "clusters/x.json"). The loaded job's hash must equal the store's
 * job_hash. The job's path and store_path name the removed temporary directory.
 * @return 0 and *out; ENPU_ERR_FORMAT (a document missing from the store),
 * ENPU_ERR_INVALID (the cluster file is not at the job's reference, or the hash differs:
 * the inputs are not the compiled ones), ENPU_ERR_IO, config errors. */
int validate_job_from_store(const store_contents *c, const char *cluster_path, config_job **out, enpu_err *err);

#endif /* ENPU_VALIDATE_H */
