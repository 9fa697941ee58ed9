/* farm_plan_internal.h — the farm's task graph for one job (farm_plan.c), pure code: the
 * grid plus added buckets and their graphs, the unique op signatures per policy (each
 * split into part tasks when its op-level search is `ideal`'s exact one), the bucket
 * tasks that wait for their ops, what the store should hold (the wanted set), what a
 * result state already holds, and the queue. It reads nothing but the job and the state
 * it is handed, writes nothing, talks no MPI; scheduling (farm_sched.c) moves the tasks'
 * statuses on.
 *
 * Invariants:
 *  - Policies are their codes (config_policy_spec_code); an op task's is its policy
 *    without gating (search_op_policy), so pg+X shares X's op tasks; an epoch policy
 *    (dvfs-c-ms, enpu-ms) has no op tasks: its bucket task searches its epochs.
 *  - Task ids are per job: [0, nops) op tasks, then the part tasks of the ops whose
 *    exact search is split (`ideal`: SEARCH_EXACT_PARTS each), then bucket tasks;
 *    farm_task_at is the one place that turns an id into a kind and an index. A split op
 *    is never dispatched itself: it becomes known when its last part arrives and the
 *    parts are merged (farm_merge_parts).
 *  - ops are sorted by (policy, key), a bucket task's ops ascending, buckets by (phase,
 *    batch, seq) and unique: the plan depends only on the job and the added buckets. */
#ifndef ENPU_FARM_PLAN_INTERNAL_H
#define ENPU_FARM_PLAN_INTERNAL_H

#include "farm.h"
#include "farm_task_internal.h"
#include "graph.h"
#include "store.h"

enum { T_TODO = 0, T_RUNNING, T_KNOWN, T_FAILED };

typedef struct {
  config_phase phase;
  int batch, seq;
  int status; /* STORE_BUCKET_* before compilation: OK (graph built) or not compiled */
  char message[STORE_MSG_LEN];
  graph *g;
} mbucket;

typedef struct {
  uint32_t policy; /* code, without gating (search_op_policy) */
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

typedef struct {
  /* inputs, per job policy */
  const config_job *job;
  search_options opt[CONFIG_MAX_POLICIES];
  uint32_t code[CONFIG_MAX_POLICIES], op_code[CONFIG_MAX_POLICIES];
  /* the graph */
  mbucket *buckets;
  int nbuckets;
  mop *ops;
  int nops;
  mpart *parts;
  int nparts;
  mtask *bt;
  int nbt;
  int *deps;
  /* what the store should hold */
  uint64_t **wanted_keys;
  store_bucket_rec **wanted_buckets;
  farm_wanted wanted[CONFIG_MAX_POLICIES];
  /* tasks to run, longest first */
  qentry *queue;
  int nqueue;
} farm_plan;

/* The plan of job (which must outlive it): buckets (the grid, the buckets recorded in
 * *added_json — a previous store's — and `add`), their graphs, tasks and the wanted set.
 * *added_json becomes this plan's added buckets (NULL: none). where names the store in
 * messages. @return 0, or an input error. */
int farm_plan_build(farm_plan *p, const config_job *job, const farm_bucket_spec *add, int nadd, char **added_json,
                    const char *where, enpu_err *err);
void farm_plan_free(farm_plan *p); /* members; a zeroed plan is a no-op */

/* Buckets that are not compiled (capacity, graph failure): their results, made here. */
int farm_plan_add_uncompiled(const farm_plan *p, farm_state *state, enpu_err *err);
/* Mark the tasks the state already holds known; @return how many became known. */
int64_t farm_plan_mark_known(farm_plan *p, const farm_state *state);
/* The queue of tasks to run (not known, not a split op), longest first; counts them into
 * sum (tasks_total, op/part/bucket tasks) and their estimates into *est_total_s; bucket
 * tasks count the ops they wait for. */
int farm_plan_queue(farm_plan *p, farm_summary *sum, double *est_total_s, enpu_err *err);
/* The op task of (policy, key), or -1. */
int farm_plan_find_op(const farm_plan *p, uint32_t policy, uint64_t key);

/* Task ids: ops, then parts, then bucket tasks. */
enum { K_OP, K_PART, K_BUCKET };
typedef struct {
  int kind, index; /* index into ops, parts or bt */
} farm_task_ref;

static inline uint32_t farm_task_count(const farm_plan *p) { return (uint32_t)(p->nops + p->nparts + p->nbt); }
static inline farm_task_ref farm_task_at(const farm_plan *p, uint32_t t) {
  const uint32_t nops = (uint32_t)p->nops, nparts = (uint32_t)p->nparts;
  if (t < nops) return (farm_task_ref){K_OP, (int)t};
  if (t < nops + nparts) return (farm_task_ref){K_PART, (int)(t - nops)};
  return (farm_task_ref){K_BUCKET, (int)(t - nops - nparts)};
}
/* The op an op or part task searches. */
static inline int farm_task_op(const farm_plan *p, farm_task_ref r) {
  return r.kind == K_OP ? r.index : p->parts[r.index].op;
}
static inline const int *farm_task_state(const farm_plan *p, farm_task_ref r) {
  switch (r.kind) {
  case K_OP: return &p->ops[r.index].status;
  case K_PART: return &p->parts[r.index].status;
  default: return &p->bt[r.index].status;
  }
}
static inline int *farm_task_status(farm_plan *p, farm_task_ref r) { return (int *)farm_task_state(p, r); }
/* A task's estimate: a part is its share of the op's. */
static inline double farm_task_est(const farm_plan *p, farm_task_ref r) {
  switch (r.kind) {
  case K_OP: return p->ops[r.index].est_s;
  case K_PART: return p->ops[p->parts[r.index].op].est_s / SEARCH_EXACT_PARTS;
  default: return p->bt[r.index].est_s;
  }
}

#endif /* ENPU_FARM_PLAN_INTERNAL_H */
