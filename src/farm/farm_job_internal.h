/* farm_job_internal.h — one job of a farm run as the master sees it, in three parts:
 * farm_job.c (its files: store lock, previous store, journal, checkpoints, the end of the
 * run), farm_plan.c (its task graph, pure) and
 * farm_sched.c (scheduling: results as they arrive, settling what waits on them, the
 * queue's cursor). farm.c runs any number of jobs over one set of ranks through these
 * functions; nothing here talks MPI.
 *
 * Invariants:
 *  - The task graph's: see farm_plan_internal.h.
 *  - Part results of an op not yet merged live in the job and in the journal; a
 *    checkpoint (which resets the journal) writes them back to it, so a crash at any
 *    point loses at most the last second of them.
 *  - Every result is in the journal before it counts; the store's content depends only
 *    on the results (farm_state_checkpoint orders them), never on ranks or order. */
#ifndef ENPU_FARM_JOB_INTERNAL_H
#define ENPU_FARM_JOB_INTERNAL_H

#include "opcache.h"
#include "farm.h"
#include "farm_plan_internal.h"

typedef struct farm_job farm_job;

/* Load the job, lock its store, read the previous store and the journal, build the
 * buckets, tasks and queue. `index` is the job's place in the run (task batches carry
 * it); sum is filled as the run goes. store_path overrides the job's store (NULL: the
 * job's). A wait for the store's lock ends once *stop (the farm's stop flag) is set.
 * The job's files are read through `inputs` (which keeps their bytes for the workers).
 * results_cache (NULL: none, the run's) is consulted for what the store and the journal
 * lack (farm_cache.c) and filled as results arrive.
 * @return 0, or an input error (nothing written) / ENPU_ERR_IO etc. */
int farm_job_setup(const farm_options *o, config_files *inputs, const char *job_path, const char *store_path,
                   int index, const volatile sig_atomic_t *stop, opcache *results_cache, farm_summary *sum,
                   farm_job **out, enpu_err *err);
void farm_job_free(farm_job *j); /* releases the store lock; NULL no-op */

const char *farm_job_store(const farm_job *j); /* the resolved store path */

/* Scheduling, longest first: a cursor walks the job's queue; peek gives the estimated
 * seconds of the next ready task at or after it (-1: none), put appends that task to a
 * batch, marks it running, notes it in the cursor and moves on. */
typedef struct {
  int q;
  uint32_t task; /* the task the last put appended (its id in the batch) */
} farm_cursor;
void farm_job_cursor(farm_job *j, farm_cursor *c);
double farm_job_peek(const farm_job *j, farm_cursor *c);
int farm_job_put(farm_job *j, farm_cursor *c, farm_buf *batch, enpu_err *err);

/* Log every task result of this job to f (farm_options.task_log; NULL: none). */
void farm_job_log_to(farm_job *j, FILE *f);

/* Take one result of this job (journal it, update the state, settle what waits on it).
 * A result of a task farm_job_requeue handed out again may come twice (the silent rank
 * answering late, and the rank that took it over): the first one counts, a later one is
 * ignored (*dup set; dup may be NULL), so nothing is counted, journalled or stored
 * twice. */
int farm_job_take(farm_job *j, const farm_task_result *tr, int *dup, enpu_err *err);
/* A running task whose rank went silent goes back to the queue (at its place, longest
 * first) for another rank; its result is then taken from whichever rank answers first.
 * A task that is not running any more (its result came) is left as it is.
 * @return 0, or ENPU_ERR_NOMEM. */
int farm_job_requeue(farm_job *j, uint32_t task, enpu_err *err);

int farm_job_settled(const farm_job *j);  /* every task done or failed */
int farm_job_unsynced(const farm_job *j); /* results appended since the last sync */
int farm_job_sync(farm_job *j, enpu_err *err);
int farm_job_checkpoint(farm_job *j, enpu_err *err);
/* Estimated seconds of work left (calibrated by measured task times); the raw estimates
 * of the work done and of all of it (progress and ETA). */
double farm_job_left_s(const farm_job *j);
void farm_job_estimates(const farm_job *j, double *done, double *total);

/* The end of the job's run: bucket counts, then farm_options.finish_job. */
int farm_job_finish(farm_job *j, enpu_err *err);

/* ---------------------------------------------------------------------------------
 * Inside a job: what farm_job.c and farm_sched.c share */

/* The scheduling room's state: where the queue stands, what is done, how long tasks
 * really take. */
typedef struct {
  int qhead;    /* queue entries before it are not to do any more */
  int queued;   /* the queue is built (buckets count what they wait for) */
  int unsynced; /* results appended to the journal since the last sync */
  double est_total_s, est_done_s;
  double sec_per_est[2], est_seen[2]; /* calibration of estimates: op and part, bucket */
  unsigned char *reissued;            /* per task id: requeued once (farm_job_requeue);
                                         NULL until a task is */
} farm_sched;

/* The job: its inputs and files (farm_job.c), its task graph (farm_plan.c) and where
 * its scheduling stands (farm_sched.c). */
struct farm_job {
  farm_options o;
  const char *job_path;
  config_files *inputs; /* the master's: what the job's files held when it read them */
  int index;
  config_job *job;
  char store_path[CONFIG_PATH_LEN], journal_path[CONFIG_PATH_LEN + 16];
  store_lock *lock;                  /* the store's writer lock, held from setup to the end */
  const volatile sig_atomic_t *stop; /* the farm's stop flag, read while waiting for the lock */
  farm_state *state;
  farm_journal *journal;
  char *added_json; /* the added buckets, the store's provenance */
  FILE *task_log;
  farm_summary *sum;
  farm_plan plan;
  farm_sched sched;
  opcache *cache;     /* the run's result cache, or NULL */
  int cache_readonly; /* a write failed: only read from then on */
};

/* A part result (from the journal or a worker) of a split op that is not known yet:
 * kept, taking r's points. */
int farm_job_keep_part(farm_job *m, uint32_t part, farm_op_result *r, enpu_err *err);
/* Merge every split op whose parts are all in. */
int farm_job_merge_ready(farm_job *m, enpu_err *err);

/* The cache (farm_cache.c): every task the state does not know looked up, the hits
 * added to the state (farm_plan_mark_known then takes them as known); an op result and
 * a compiled bucket result (its codec record) stored as they arrive. */
int farm_cache_lookup(farm_job *m, enpu_err *err);
/* What a lookup asks for: an op result (FARM_CACHE_OP: policy, op_key) or a compiled
 * bucket (FARM_CACHE_BUCKET: policy, phase, batch, seq, input_hash). */
enum { FARM_CACHE_OP = 1, FARM_CACHE_BUCKET = 2 };
typedef struct {
  uint32_t kind, policy;
  uint64_t op_key;
  int phase, batch, seq;
  uint64_t input_hash;
} farm_cache_want;
/* A cache entry decoded: the op's or the bucket's result, by the want's kind. */
typedef struct {
  farm_op_result op;
  farm_bucket_result bucket;
} farm_cache_entry;
/* An entry's bytes decoded into out->op or out->bucket (by want->kind) when its fields
 * are the ones asked for (a bucket's status OK too): 0, free that result after; else -1
 * (damaged: another result under the key, or another codec's), nothing to free. */
int farm_cache_decode(const void *data, size_t bytes, const farm_cache_want *want, farm_cache_entry *out);
int farm_cache_put_op(farm_job *m, const farm_op_result *r, enpu_err *err);
void farm_cache_put_bucket(farm_job *m, const farm_bucket_result *r, const void *record, size_t bytes);

/* What changed since the previous store was farmed (farm_changes.c): its provenance
 * against the job's inputs, field by field, into sum->changes. */
int farm_changes_find(const store_contents *prev, const config_job *job, farm_summary *sum, enpu_err *err);

#endif /* ENPU_FARM_JOB_INTERNAL_H */
