/* farm_job_internal.h — one job of a farm run as the master sees it (farm_job.c): its
 * grid, graphs, task DAG, result state, store lock, journal, checkpoints, the task queue
 * and the end of the run (summary.md, the job's validation). farm.c runs any number of
 * jobs over one set of ranks through these functions; nothing here talks MPI.
 *
 * Invariants:
 *  - Policies are their codes (config_policy_spec_code); an op task's is its policy
 *    without gating (farm_op_policy), so pg+X shares X's op tasks; an epoch policy
 *    (dvfs-c-ms, enpu-ms) has no op tasks: its bucket task searches its epochs.
 *  - Task ids are per job: [0, nops) op tasks, then the part tasks of the ops whose
 *    exact search is split (`ideal`: SEARCH_EXACT_PARTS each), then bucket tasks. A
 *    split op is never dispatched itself: it becomes known when its last part arrives
 *    and the parts are merged (farm_merge_parts), journalled as an op record.
 *  - Part results of an op not yet merged live in the job and in the journal; a
 *    checkpoint (which resets the journal) writes them back to it, so a crash at any
 *    point loses at most the last second of them.
 *  - Every result is in the journal before it counts; the store's content depends only
 *    on the results (farm_state_checkpoint orders them), never on ranks or order. */
#ifndef ENPU_FARM_JOB_INTERNAL_H
#define ENPU_FARM_JOB_INTERNAL_H

#include "farm.h"
#include "farm_task_internal.h"
#include "graph.h"
#include "store.h"

typedef struct farm_job farm_job;

/* Load the job, lock its store, read the previous store and the journal, build the
 * buckets, tasks and queue. `index` is the job's place in the run (task batches carry
 * it); sum is filled as the run goes. store_path overrides the job's store (NULL: the
 * job's). @return 0, or an input error (nothing written) / ENPU_ERR_IO etc. */
int farm_job_setup(const farm_options *o, const char *job_path, const char *store_path,
                   int index, farm_summary *sum, farm_job **out, enpu_err *err);
void farm_job_free(farm_job *j); /* releases the store lock; NULL no-op */

const char *farm_job_store(const farm_job *j); /* the resolved store path */

/* Scheduling, longest first: a cursor walks the job's queue; peek gives the estimated
 * seconds of the next ready task at or after it (-1: none), put appends that task to a
 * batch, marks it running and moves on. */
typedef struct {
  int q;
} farm_cursor;
void farm_job_cursor(farm_job *j, farm_cursor *c);
double farm_job_peek(const farm_job *j, farm_cursor *c);
int farm_job_put(farm_job *j, farm_cursor *c, farm_buf *batch, enpu_err *err);

/* Log every task result of this job to f (farm_options.task_log; NULL: none). */
void farm_job_log_to(farm_job *j, FILE *f);

/* Take one result of this job (journal it, update the state, settle what waits on it). */
int farm_job_take(farm_job *j, const farm_task_result *tr, enpu_err *err);

int farm_job_settled(const farm_job *j);  /* every task done or failed */
int farm_job_unsynced(const farm_job *j); /* results appended since the last sync */
int farm_job_sync(farm_job *j, enpu_err *err);
int farm_job_checkpoint(farm_job *j, enpu_err *err);
/* Estimated seconds of work left (calibrated by measured task times); the raw estimates
 * of the work done and of all of it (progress and ETA). */
double farm_job_left_s(const farm_job *j);
void farm_job_estimates(const farm_job *j, double *done, double *total);

/* The end of the job's run: bucket counts, summary.md, and (unless interrupted) its
 * validation section. */
int farm_job_finish(farm_job *j, enpu_err *err);

/* ---------------------------------------------------------------------------------
 * Inside a job: what farm_job.c and farm_job_run.c share */

enum { T_TODO = 0, T_RUNNING, T_KNOWN, T_FAILED };

typedef struct {
  config_phase phase;
  int batch, seq;
  int status; /* STORE_BUCKET_* before compilation: OK (graph built) or not compiled */
  char message[STORE_MSG_LEN];
  graph *g;
} mbucket;

typedef struct {
  uint32_t policy; /* code, without gating (farm_op_policy) */
  uint64_t key;
  int bucket, op; /* representative graph op */
  double est_s;
  int status;
  char message[STORE_MSG_LEN];
  int dep_first, dep_count; /* bucket tasks needing it: deps[dep_first..] */
  int first_part;           /* its part tasks (parts[first_part..]), -1: not split */
  int parts_known;
  farm_op_result *part_res; /* SEARCH_EXACT_PARTS results as they arrive (npoints 0: none) */
  farm_buf record;          /* its result encoded, once a bucket task needed it */
} mop;

/* One part of a split op's exact search. */
typedef struct {
  int op, part;
  int status;
} mpart;

typedef struct {
  uint32_t policy, op_policy; /* codes: the policy, and the one its ops are kept under */
  int bucket;
  uint64_t input_hash;
  int *ops; /* mop indices, ascending (so by key) */
  int nops;
  int waiting; /* ops not yet known */
  double est_s;
  int status;
} mtask;

typedef struct {
  uint32_t task;
  double est_s;
} qentry;

/* The job (farm_job.c builds it, farm_job_run.c runs it). */
struct farm_job {
  farm_options o;
  const char *job_path;
  int index;
  config_job *job;
  search_options opt[CONFIG_MAX_POLICIES]; /* per job policy */
  uint32_t code[CONFIG_MAX_POLICIES], op_code[CONFIG_MAX_POLICIES];
  char store_path[CONFIG_PATH_LEN], journal_path[CONFIG_PATH_LEN + 16];
  mbucket *buckets;
  int nbuckets;
  mop *ops;
  int nops;
  mpart *parts;
  int nparts;
  mtask *bt;
  int nbt;
  int *deps;
  farm_state *state;
  farm_journal *journal;
  store_lock *lock;                    /* the store's writer lock, held from setup to the end */
  char *added_json;
  uint64_t **wanted_keys;
  store_bucket_rec **wanted_buckets;
  farm_wanted wanted[CONFIG_MAX_POLICIES];
  qentry *queue;
  int nqueue, qhead;
  int unsynced;
  double est_total_s, est_done_s;
  double sec_per_est[2], est_seen[2]; /* calibration of estimates: op and part, bucket */
  int queued;                          /* the queue is built (buckets count what they wait for) */
  FILE *task_log;
  farm_summary *sum;
};

/* Task ids: ops, then parts, then bucket tasks. */
enum { K_OP, K_PART, K_BUCKET };
static inline uint32_t task_count(const farm_job *m) { return (uint32_t)(m->nops + m->nparts + m->nbt); }
static inline int task_kind(const farm_job *m, uint32_t t) {
  return t < (uint32_t)m->nops ? K_OP : t < (uint32_t)(m->nops + m->nparts) ? K_PART : K_BUCKET;
}
static inline mpart *task_part(farm_job *m, uint32_t t) { return &m->parts[t - (uint32_t)m->nops]; }
static inline mtask *task_bucket(farm_job *m, uint32_t t) { return &m->bt[t - (uint32_t)(m->nops + m->nparts)]; }
static inline int *task_status(farm_job *m, uint32_t t) {
  switch (task_kind(m, t)) {
  case K_OP: return &m->ops[t].status;
  case K_PART: return &task_part(m, t)->status;
  default: return &task_bucket(m, t)->status;
  }
}

/* A task's estimate: a part is its share of the op's. */
static inline double task_est(farm_job *m, uint32_t t) {
  switch (task_kind(m, t)) {
  case K_OP: return m->ops[t].est_s;
  case K_PART: return m->ops[task_part(m, t)->op].est_s / SEARCH_EXACT_PARTS;
  default: return task_bucket(m, t)->est_s;
  }
}

/* The op task of (policy, key), or -1. */
int farm_job_find_op(const farm_job *m, uint32_t policy, uint64_t key);
/* A part result (from the journal or a worker) of a split op that is not known yet:
 * kept, taking r's points. */
int farm_job_keep_part(farm_job *m, uint32_t part, farm_op_result *r, enpu_err *err);
/* Merge every split op whose parts are all in. */
int farm_job_merge_ready(farm_job *m, enpu_err *err);

#endif /* ENPU_FARM_JOB_INTERNAL_H */
