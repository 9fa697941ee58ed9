/* farm.c — the farm's ranks (src/README.md): the master builds the task DAG from the job's
 * grid and what the previous store and the journal already hold, schedules op and bucket
 * tasks longest-first in batches, journals every result, checkpoints the store, reports
 * progress and handles SIGTERM/SIGINT/SIGUSR1; workers run task batches. The only file of the
 * project that talks MPI.
 *
 * Invariants:
 *  - Only results go into the store, and farm_state_checkpoint orders them by key, so the
 *    content never depends on -np, arrival order or resume; the master decides nothing
 *    from timing except which rank gets which batch.
 *  - A bucket task is dispatched only when every op it needs is known; the master sends
 *    those Pareto sets with it, so workers hold no state between batches but the job
 *    and a graph cache.
 *  - With N >= 2 ranks the master does not compute and never busy-waits: it polls with
 *    MPI_Iprobe and sleeps with a back-off of at most 10 ms (workers at most 2 ms).
 *  - Every result is in the journal before it counts as done; the journal is synced at
 *    least every second while results arrive, at once when a stop signal is seen, and
 *    reset only after a checkpoint.
 *  - The master holds the store's writer lock (store_lock) from before it reads the
 *    previous store until it exits; the store, journal and lock live at the store's
 *    resolved path. */
#include <errno.h>
#include <jansson.h>
#include <math.h>
#include <mpi.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <sys/file.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "farm.h"
#include "farm_task_internal.h"
#include "grid.h"
#include "validate.h"

#ifndef ENPU_TOOL_VERSION
#define ENPU_TOOL_VERSION "0.0.0"
#endif

enum { TAG_WORK = 1, TAG_RESULT = 2, TAG_STOP = 3, TAG_SETUP = 4 };

/* The one global of the farm: a signal handler can only reach static storage, and the
 * flag must be set asynchronously; everything else travels in the master/worker
 * structs. sig_atomic_t + volatile is what C guarantees for that. */
static volatile sig_atomic_t farm_signal_seen;

static void on_signal(int sig) { farm_signal_seen = sig; }

void farm_options_default(farm_options *o) {
  *o = (farm_options){.checkpoint_s = 60, .progress_s = 10, .lock_wait_s = STORE_LOCK_WAIT_S};
}

static void sleep_s(double s) {
  struct timespec ts = {(time_t)s, (long)((s - floor(s)) * 1e9)};
  nanosleep(&ts, NULL);
}

/* Wait for a message without spinning: MPI_Iprobe, then sleep with a doubling back-off. */
static void wait_message(MPI_Comm comm, int source, double max_sleep_s, MPI_Status *st) {
  double pause = 50e-6;
  for (;;) {
    int flag = 0;
    MPI_Iprobe(source, MPI_ANY_TAG, comm, &flag, st);
    if (flag) return;
    sleep_s(pause);
    pause = fmin(2 * pause, max_sleep_s);
  }
}

static int recv_bytes(MPI_Comm comm, const MPI_Status *st, farm_buf *b, enpu_err *err) {
  int n = 0;
  MPI_Get_count(st, MPI_BYTE, &n);
  ENPU_RETURN_IF(enpu_grow((void **)&b->data, &b->cap, (size_t)n + 1, 1) < 0, err,
                 ENPU_ERR_NOMEM, "out of memory (message of %d bytes)", n);
  MPI_Recv(b->data, n, MPI_BYTE, st->MPI_SOURCE, st->MPI_TAG, comm, MPI_STATUS_IGNORE);
  b->len = (size_t)n;
  return 0;
}

/* ---------------------------------------------------------------------------------
 * The master's plan: buckets, unique ops, bucket tasks */

enum { T_TODO = 0, T_RUNNING, T_KNOWN, T_FAILED };

typedef struct {
  config_phase phase;
  int batch, seq;
  int status; /* STORE_BUCKET_* before compilation: OK (graph built) or not compiled */
  char message[STORE_MSG_LEN];
  graph *g;
} mbucket;

typedef struct {
  uint32_t policy;
  uint64_t key;
  int bucket, op; /* representative graph op */
  double est_s;
  int status;
  char message[STORE_MSG_LEN];
  int dep_first, dep_count; /* bucket tasks needing it: deps[dep_first..] */
} mop;

typedef struct {
  uint32_t policy;
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
  farm_options o;
  MPI_Comm comm;
  int rank, size;
  config_job *job;
  search_options opt;
  char store_path[CONFIG_PATH_LEN], journal_path[CONFIG_PATH_LEN + 16];
  mbucket *buckets;
  int nbuckets;
  mop *ops;
  int nops;
  mtask *bt;
  int nbt;
  int *deps;
  farm_state *state;
  farm_journal *journal;
  store_lock *lock;                    /* the store's writer lock, held from setup to the end */
  char *added_json;
  uint64_t **wanted_keys;
  store_bucket_rec **wanted_buckets;
  farm_wanted wanted[CONFIG_NPOLICY];
  qentry *queue;
  int nqueue, qhead;
  int unsynced;
  double est_total_s, est_done_s;
  double sec_per_est[2], est_seen[2]; /* calibration of estimates: op, bucket */
  farm_exec *exec;                     /* single rank: the master computes */
  farm_summary *sum;
} master;

static uint32_t task_count(const master *m) { return (uint32_t)(m->nops + m->nbt); }
static int task_is_op(const master *m, uint32_t t) { return t < (uint32_t)m->nops; }
static int *task_status(master *m, uint32_t t) {
  return task_is_op(m, t) ? &m->ops[t].status : &m->bt[t - (uint32_t)m->nops].status;
}

static int cmp_bucket(const void *pa, const void *pb) {
  const mbucket *a = pa, *b = pb;
  if (a->phase != b->phase) return a->phase < b->phase ? -1 : 1;
  if (a->batch != b->batch) return a->batch < b->batch ? -1 : 1;
  return (a->seq > b->seq) - (a->seq < b->seq);
}

static int add_bucket(master *m, size_t *cap, config_phase phase, int batch, int seq,
                      enpu_err *err) {
  ENPU_RETURN_IF(enpu_grow((void **)&m->buckets, cap, (size_t)m->nbuckets + 1,
                           sizeof *m->buckets) < 0,
                 err, ENPU_ERR_NOMEM, "out of memory (buckets)");
  m->buckets[m->nbuckets++] = (mbucket){.phase = phase, .batch = batch, .seq = seq};
  return 0;
}

/* Added buckets: those recorded in the previous store, then --add-buckets. */
static int collect_added(master *m, size_t *cap, enpu_err *err) {
  json_error_t je;
  json_t *arr = m->added_json ? json_loads(m->added_json, 0, &je) : json_array();
  ENPU_RETURN_IF(!json_is_array(arr), err, (json_decref(arr), ENPU_ERR_FORMAT),
                 "%s: attribute added_buckets_json is not a JSON array", m->store_path);
  size_t i;
  json_t *v;
  int rc = 0;
  json_array_foreach(arr, i, v) {
    const char *ph = NULL;
    int batch = 0, seq = 0;
    config_phase phase;
    if (json_unpack(v, "{s:s, s:i, s:i}", "phase", &ph, "batch", &batch, "seq", &seq) < 0 ||
        config_phase_parse(ph, &phase) < 0) {
      rc = enpu_errorf(err, ENPU_ERR_FORMAT, "%s: added_buckets_json[%zu] is not a bucket",
                       m->store_path, i);
      break;
    }
    rc = add_bucket(m, cap, phase, batch, seq, err);
    if (rc < 0) break;
  }
  json_decref(arr);
  for (int k = 0; rc == 0 && k < m->o.nadd; k++)
    rc = add_bucket(m, cap, m->o.add[k].phase, m->o.add[k].batch, m->o.add[k].seq, err);
  return rc;
}

/* The grid plus added buckets, sorted and unique; capacity and graphs. The added ones
 * are recorded (sorted) in m->added_json for the store's provenance. */
static int build_buckets(master *m, enpu_err *err) {
  grid *gr;
  ENPU_FORWARD(grid_create(m->job, &gr, err));
  size_t cap = 0;
  int rc = 0;
  for (int p = 0; rc == 0 && p < CONFIG_NPHASE; p++) {
    const grid_phase *gp = grid_get_phase(gr, (config_phase)p);
    for (int b = 0; gp && rc == 0 && b < gp->bucket_count; b++)
      rc = add_bucket(m, &cap, (config_phase)p, gp->buckets[b].batch, gp->buckets[b].seq, err);
  }
  const int ngrid = m->nbuckets;
  if (rc == 0) rc = collect_added(m, &cap, err);
  json_t *added = json_array();
  if (rc == 0 && !added) rc = enpu_errorf(err, ENPU_ERR_NOMEM, "out of memory (JSON)");
  /* Added buckets outside the grid, validated like the grid's. */
  for (int i = ngrid; rc == 0 && i < m->nbuckets; i++) {
    mbucket *b = &m->buckets[i];
    const grid_phase *gp = grid_get_phase(gr, b->phase);
    if (!gp) {
      rc = enpu_errorf(err, ENPU_ERR_INVALID, "added bucket %s batch %d seq %d: the job does "
                       "not compile the %s phase", config_phase_name(b->phase), b->batch,
                       b->seq, config_phase_name(b->phase));
      break;
    }
    /* the ranges of a job's own buckets */
    const char *what = "batch";
    rc = config_range_check("job", "$.phases.*.batch[]", b->batch, err);
    if (rc == 0) what = "seq", rc = config_range_check("job", "$.phases.*.seq[]", b->seq, err);
    if (rc < 0) {
      enpu_err_prefix(err, "added bucket %s batch %d seq %d: %s: ", config_phase_name(b->phase), b->batch, b->seq,
                      what);
      break;
    }
  }
  if (rc == 0) {
    qsort(m->buckets, (size_t)m->nbuckets, sizeof *m->buckets, cmp_bucket);
    int n = 0;
    for (int i = 0; i < m->nbuckets; i++)
      if (n == 0 || cmp_bucket(&m->buckets[n - 1], &m->buckets[i]) != 0) m->buckets[n++] = m->buckets[i];
    m->nbuckets = n;
  }
  for (int i = 0; rc == 0 && i < m->nbuckets; i++) {
    mbucket *b = &m->buckets[i];
    const grid_phase *gp = grid_get_phase(gr, b->phase);
    int in_grid = 0;
    for (int k = 0; k < gp->bucket_count && !in_grid; k++)
      in_grid = gp->buckets[k].batch == b->batch && gp->buckets[k].seq == b->seq;
    if (!in_grid &&
        json_array_append_new(added, json_pack("{s:s, s:i, s:i}", "phase",
                                               config_phase_name(b->phase), "batch", b->batch,
                                               "seq", b->seq)) < 0)
      rc = enpu_errorf(err, ENPU_ERR_NOMEM, "out of memory (JSON)");
    const int fits = rc < 0 ? rc : grid_bucket_fits(m->job, b->phase, b->batch, b->seq, b->message,
                                                    sizeof b->message, err);
    if (fits < 0) {
      rc = fits;
      break;
    }
    if (!fits) {
      b->status = STORE_BUCKET_INFEASIBLE_CAPACITY;
      continue;
    }
    enpu_err gerr = {0};
    if (graph_build(m->job, b->phase, b->batch, b->seq, &b->g, &gerr) < 0) {
      b->status = STORE_BUCKET_FAILED;
      snprintf(b->message, sizeof b->message, "graph: %.150s", gerr.msg);
    }
  }
  free(m->added_json);
  m->added_json = NULL;
  if (rc == 0 && json_array_size(added) > 0) {
    m->added_json = json_dumps(added, JSON_COMPACT);
    if (!m->added_json) rc = enpu_errorf(err, ENPU_ERR_NOMEM, "out of memory (JSON)");
  }
  json_decref(added);
  grid_free(gr);
  return rc;
}

typedef struct {
  uint32_t policy;
  uint64_t key;
  int bucket, op;
} op_ref;

static int cmp_op_ref(const void *pa, const void *pb) {
  const op_ref *a = pa, *b = pb;
  if (a->policy != b->policy) return a->policy < b->policy ? -1 : 1;
  if (a->key != b->key) return a->key < b->key ? -1 : 1;
  if (a->bucket != b->bucket) return a->bucket < b->bucket ? -1 : 1;
  return (a->op > b->op) - (a->op < b->op);
}

/* Rough seconds per op-level evaluation and per plan instance; the master rescales them
 * with measured times, they only need the right order of magnitude. */
#define EST_EVAL_S 20e-6
#define EST_INSTANCE_S 0.3e-6
#define EST_GENE_S 2e-9

static double est_op_s(config_policy policy, int peak) {
  switch (policy) {
  case CONFIG_POLICY_NODVFS: return 2 * EST_EVAL_S;
  case CONFIG_POLICY_DVFS_C:
  case CONFIG_POLICY_DVFS_C_WALK: return (peak + 1) * EST_EVAL_S;
  case CONFIG_POLICY_IDEAL: return pow(peak, CONFIG_NCOMP) * EST_EVAL_S;
  default: return 8.0 * peak * EST_EVAL_S; /* Algorithm 1: ~peak steps of 2^d - 1 candidates */
  }
}

static int find_mop(const master *m, uint32_t policy, uint64_t key) {
  int lo = 0, hi = m->nops;
  while (lo < hi) {
    const int mid = (lo + hi) / 2;
    const mop *o = &m->ops[mid];
    if (o->policy < policy || (o->policy == policy && o->key < key)) lo = mid + 1;
    else hi = mid;
  }
  return lo < m->nops && m->ops[lo].policy == policy && m->ops[lo].key == key ? lo : -1;
}

static int cmp_int(const void *a, const void *b) {
  return (*(const int *)a > *(const int *)b) - (*(const int *)a < *(const int *)b);
}

/* Unique ops per policy (representative: first bucket, first op), bucket tasks. */
static int build_tasks(master *m, enpu_err *err) {
  size_t nref = 0;
  for (int b = 0; b < m->nbuckets; b++)
    if (m->buckets[b].g) nref += (size_t)graph_op_count(m->buckets[b].g);
  nref *= (size_t)m->job->policy_count;
  op_ref *refs = enpu_calloc(nref + 1, sizeof *refs);
  ENPU_RETURN_IF(!refs, err, ENPU_ERR_NOMEM, "out of memory (%zu op references)", nref);
  size_t n = 0;
  for (int p = 0; p < m->job->policy_count; p++)
    for (int b = 0; b < m->nbuckets; b++)
      for (int i = 0; m->buckets[b].g && i < graph_op_count(m->buckets[b].g); i++)
        refs[n++] = (op_ref){m->job->policies[p],
                             farm_op_key(m->job, m->job->policies[p], &m->opt,
                                         graph_op_at(m->buckets[b].g, i)),
                             b, i};
  qsort(refs, n, sizeof *refs, cmp_op_ref);
  m->ops = enpu_calloc(n + 1, sizeof *m->ops);
  int rc = m->ops ? 0 : enpu_errorf(err, ENPU_ERR_NOMEM, "out of memory (ops)");
  for (size_t i = 0; rc == 0 && i < n; i++) {
    if (m->nops && m->ops[m->nops - 1].policy == refs[i].policy && m->ops[m->nops - 1].key == refs[i].key)
      continue;
    m->ops[m->nops++] = (mop){.policy = refs[i].policy, .key = refs[i].key,
                              .bucket = refs[i].bucket, .op = refs[i].op,
                              .est_s = est_op_s((config_policy)refs[i].policy,
                                                m->job->chip.freq_states)};
  }
  free(refs);
  /* Bucket tasks: one per policy × compiled bucket. */
  m->bt = enpu_calloc((size_t)m->job->policy_count * (size_t)m->nbuckets + 1, sizeof *m->bt);
  if (rc == 0 && !m->bt) rc = enpu_errorf(err, ENPU_ERR_NOMEM, "out of memory (bucket tasks)");
  size_t ndeps = 0;
  for (int p = 0; rc == 0 && p < m->job->policy_count; p++) {
    const config_policy pol = m->job->policies[p];
    for (int b = 0; rc == 0 && b < m->nbuckets; b++) {
      const graph *g = m->buckets[b].g;
      if (!g) continue;
      mtask *t = &m->bt[m->nbt++];
      *t = (mtask){.policy = pol, .bucket = b,
                   .input_hash = farm_bucket_input_hash(m->job, pol, &m->opt, g)};
      t->ops = enpu_calloc((size_t)graph_op_count(g), sizeof *t->ops);
      if (!t->ops) {
        rc = enpu_errorf(err, ENPU_ERR_NOMEM, "out of memory (bucket task ops)");
        break;
      }
      int64_t instances = 0;
      for (int i = 0; i < graph_op_count(g); i++) {
        t->ops[i] = find_mop(m, pol, farm_op_key(m->job, pol, &m->opt, graph_op_at(g, i)));
        instances += graph_op_at(g, i)->multiplicity;
      }
      qsort(t->ops, (size_t)graph_op_count(g), sizeof *t->ops, cmp_int);
      for (int i = 0; i < graph_op_count(g); i++)
        if (t->nops == 0 || t->ops[t->nops - 1] != t->ops[i]) t->ops[t->nops++] = t->ops[i];
      ndeps += (size_t)t->nops;
      t->est_s = (double)instances * (2 * m->job->slack_count + 4) * EST_INSTANCE_S;
      if (pol == CONFIG_POLICY_DVFS_C) /* the GA: population × generations genomes a slack */
        t->est_s += (double)m->job->slack_count * m->opt.ga.population * m->opt.ga.generations *
                    graph_op_count(g) * m->opt.ga_groups * EST_GENE_S;
    }
  }
  /* Reverse edges op → bucket tasks (CSR). */
  m->deps = enpu_calloc(ndeps + 1, sizeof *m->deps);
  if (rc == 0 && !m->deps) rc = enpu_errorf(err, ENPU_ERR_NOMEM, "out of memory (task edges)");
  for (int j = 0; rc == 0 && j < m->nbt; j++)
    for (int k = 0; k < m->bt[j].nops; k++) m->ops[m->bt[j].ops[k]].dep_count++;
  int at = 0;
  for (int i = 0; rc == 0 && i < m->nops; i++) {
    m->ops[i].dep_first = at;
    at += m->ops[i].dep_count;
    m->ops[i].dep_count = 0;
  }
  for (int j = 0; rc == 0 && j < m->nbt; j++)
    for (int k = 0; k < m->bt[j].nops; k++) {
      mop *o = &m->ops[m->bt[j].ops[k]];
      m->deps[o->dep_first + o->dep_count++] = j;
    }
  return rc;
}

/* What the store should hold: per policy, its op keys and every bucket with its hash. */
static uint64_t uncompiled_hash(const mbucket *b, config_budget budget) {
  enpu_hasher h;
  enpu_hasher_init(&h, 0);
  enpu_hasher_str(&h, "enpu-farm-uncompiled");
  enpu_hasher_i64(&h, b->status);
  enpu_hasher_i64(&h, budget);
  enpu_hasher_str(&h, b->message);
  return enpu_hasher_digest(&h);
}

static int build_wanted(master *m, enpu_err *err) {
  const int np = m->job->policy_count;
  m->wanted_keys = enpu_calloc((size_t)np, sizeof *m->wanted_keys);
  m->wanted_buckets = enpu_calloc((size_t)np, sizeof *m->wanted_buckets);
  ENPU_RETURN_IF(!m->wanted_keys || !m->wanted_buckets, err, ENPU_ERR_NOMEM, "out of memory");
  int t = 0;
  for (int p = 0; p < np; p++) {
    const uint32_t pol = m->job->policies[p];
    farm_wanted *w = &m->wanted[p];
    *w = (farm_wanted){.policy = pol};
    m->wanted_keys[p] = enpu_calloc((size_t)m->nops + 1, sizeof **m->wanted_keys);
    m->wanted_buckets[p] = enpu_calloc((size_t)m->nbuckets + 1, sizeof **m->wanted_buckets);
    ENPU_RETURN_IF(!m->wanted_keys[p] || !m->wanted_buckets[p], err, ENPU_ERR_NOMEM, "out of memory");
    for (int i = 0; i < m->nops; i++)
      if (m->ops[i].policy == pol) m->wanted_keys[p][w->nops++] = m->ops[i].key;
    for (int b = 0; b < m->nbuckets; b++) {
      const mbucket *mb = &m->buckets[b];
      store_bucket_rec *r = &m->wanted_buckets[p][w->nbuckets++];
      const uint64_t h = mb->g ? m->bt[t++].input_hash : uncompiled_hash(mb, m->opt.budget);
      *r = (store_bucket_rec){.phase = (uint8_t)mb->phase, .budget = (uint8_t)m->opt.budget, .batch = mb->batch,
                              .seq = mb->seq, .input_hash = h};
    }
    w->op_keys = m->wanted_keys[p];
    w->buckets = m->wanted_buckets[p];
  }
  return 0;
}

/* Buckets that are not compiled (capacity, graph failure) are results made here. */
static int add_uncompiled(master *m, enpu_err *err) {
  for (int p = 0; p < m->job->policy_count; p++)
    for (int b = 0; b < m->nbuckets; b++) {
      const mbucket *mb = &m->buckets[b];
      if (mb->g) continue;
      farm_bucket_result r = {.policy = m->job->policies[p]};
      r.bucket = (store_bucket_rec){.phase = (uint8_t)mb->phase, .status = (uint8_t)mb->status,
                                    .budget = (uint8_t)m->opt.budget,
                                    .batch = mb->batch, .seq = mb->seq,
                                    .input_hash = uncompiled_hash(mb, m->opt.budget)};
      memcpy(r.bucket.message, mb->message, sizeof r.bucket.message);
      ENPU_FORWARD(farm_state_add_bucket(m->state, &r, err));
    }
  return 0;
}

/* Mark what the state already holds; @return how many tasks became known. */
static int64_t mark_known(master *m) {
  int64_t n = 0;
  for (int i = 0; i < m->nops; i++)
    if (m->ops[i].status != T_KNOWN && farm_state_find_op(m->state, m->ops[i].policy, m->ops[i].key))
      m->ops[i].status = T_KNOWN, n++;
  for (int j = 0; j < m->nbt; j++) {
    mtask *t = &m->bt[j];
    const mbucket *b = &m->buckets[t->bucket];
    const farm_bucket_result *r = farm_state_find_bucket(m->state, t->policy, b->phase, b->batch,
                                                         b->seq, t->input_hash);
    /* A failed bucket is retried: its failure may have been transient. */
    if (t->status != T_KNOWN && r && r->bucket.status == STORE_BUCKET_OK) t->status = T_KNOWN, n++;
  }
  return n;
}

static int replay_record(void *user, uint32_t kind, const void *payload, size_t bytes,
                         enpu_err *err) {
  master *m = user;
  if (kind == FARM_REC_OP) {
    farm_op_result r;
    ENPU_FORWARD(farm_op_result_decode(payload, bytes, &r, err));
    return farm_state_add_op(m->state, &r, err);
  }
  ENPU_RETURN_IF(kind != FARM_REC_BUCKET, err, ENPU_ERR_FORMAT, "%s: record of unknown kind %u",
                 m->journal_path, kind);
  farm_bucket_result r;
  ENPU_FORWARD(farm_bucket_result_decode(payload, bytes, &r, err));
  return farm_state_add_bucket(m->state, &r, err);
}

static int cmp_qentry(const void *pa, const void *pb) {
  const qentry *a = pa, *b = pb;
  if (a->est_s != b->est_s) return a->est_s > b->est_s ? -1 : 1;
  return (a->task > b->task) - (a->task < b->task);
}

/* The queue of tasks to run, longest first; bucket tasks wait for their ops. */
static int build_queue(master *m, enpu_err *err) {
  m->queue = enpu_calloc(task_count(m) + 1, sizeof *m->queue);
  ENPU_RETURN_IF(!m->queue, err, ENPU_ERR_NOMEM, "out of memory (task queue)");
  for (uint32_t t = 0; t < task_count(m); t++) {
    if (*task_status(m, t) == T_KNOWN) continue;
    const double est = task_is_op(m, t) ? m->ops[t].est_s : m->bt[t - (uint32_t)m->nops].est_s;
    m->queue[m->nqueue++] = (qentry){t, est};
    *(task_is_op(m, t) ? &m->sum->op_tasks : &m->sum->bucket_tasks) += 1;
    m->est_total_s += est;
  }
  for (int j = 0; j < m->nbt; j++)
    for (int k = 0; k < m->bt[j].nops; k++)
      m->bt[j].waiting += m->ops[m->bt[j].ops[k]].status != T_KNOWN;
  qsort(m->queue, (size_t)m->nqueue, sizeof *m->queue, cmp_qentry);
  m->sum->tasks_total = m->nqueue;
  return 0;
}

static void summary_counts(master *m) {
  farm_summary *s = m->sum;
  s->npolicies = m->job->policy_count;
  for (int p = 0; p < m->job->policy_count; p++) s->policies[p] = m->job->policies[p];
  for (int i = 0; i < m->nops; i++) s->unique_ops[m->ops[i].policy]++;
}

/* One writer per store (store_lock): a second farm would write the same temporary file
 * and journal, `enpu validate` would publish an older snapshot over a checkpoint; and the
 * ranks of a farm whose mpirun was killed can outlive it for a while, which the lock's
 * wait covers. The store, its journal and the lock all live at the resolved path, so a
 * symbolic link to a store is the same store. */
static int lock_store(master *m, const char *store, enpu_err *err) {
  const char *slash = strrchr(store, '/');
  if (slash && slash > store) {
    char dir[CONFIG_PATH_LEN];
    snprintf(dir, sizeof dir, "%.*s", (int)(slash - store), store);
    ENPU_FORWARD(enpu_mkdir_p(dir, err));
  }
  char command[2 * CONFIG_PATH_LEN];
  snprintf(command, sizeof command, "enpu farm %s", m->o.job_path);
  ENPU_FORWARD(store_lock_acquire(store, command, m->o.lock_wait_s, m->o.quiet ? NULL : m->o.log, &m->lock, err));
  const char *resolved = store_lock_path(m->lock);
  ENPU_RETURN_IF(strlen(resolved) >= sizeof m->store_path, err, ENPU_ERR_RANGE,
                 "store path longer than %zu bytes: %s", sizeof m->store_path - 1, resolved);
  snprintf(m->store_path, sizeof m->store_path, "%s", resolved);
  snprintf(m->journal_path, sizeof m->journal_path, "%s.journal", m->store_path);
  return 0;
}

/* The previous store's results. A damaged store, or one of another format version, is
 * recomputed (its content cannot be trusted; the next checkpoint replaces it); a file
 * that is no plan store at all is an input error, so that a mistyped --store never
 * overwrites someone's file. */
static int load_previous(master *m, enpu_err *err) {
  int64_t nops = 0, nbuckets = 0;
  int rc = farm_state_load_store(m->state, m->store_path, &nops, &nbuckets, &m->added_json, err);
  uint32_t version = 0;
  enpu_err probe = {0};
  if (rc != ENPU_ERR_FORMAT || store_probe(m->store_path, &version, &probe) < 0) return rc;
  if (!m->o.quiet)
    fprintf(m->o.log, "farm: warning: %s (format_version %u) cannot be reused, every result is recomputed: %s\n",
            m->store_path, version, err->msg);
  farm_state_free(m->state);
  m->state = NULL;
  return farm_state_create(&m->state, err);
}

/* The journal's results; what it could not give back is said (the farm recomputes it). */
static int replay_journal(master *m, enpu_err *err) {
  farm_journal_stats st;
  ENPU_FORWARD(farm_journal_replay(m->journal_path, replay_record, m, &st, err));
  if (m->o.quiet) return 0;
  if (st.unreadable)
    fprintf(m->o.log, "farm: warning: %s is not a farm journal (bad header): moved aside to %s.unreadable; "
                      "results since the last checkpoint are recomputed\n", m->journal_path, m->journal_path);
  if (st.skipped_bytes > 0)
    fprintf(m->o.log, "farm: warning: %s: skipped %lld damaged bytes between intact records (%lld replayed)\n",
            m->journal_path, (long long)st.skipped_bytes, (long long)st.records);
  if (st.dropped_bytes > 0)
    fprintf(m->o.log, "farm: %s: dropped a torn tail of %lld bytes after %lld records\n", m->journal_path,
            (long long)st.dropped_bytes, (long long)st.records);
  return 0;
}

static int master_setup(master *m, enpu_err *err) {
  ENPU_FORWARD(config_job_load(m->o.job_path, &m->job, err));
  if (m->o.capacity_factor) ENPU_FORWARD(config_job_set_capacity_factor(m->job, m->o.capacity_factor, err));
  farm_search_options(m->job, &m->opt);
  snprintf(m->sum->job, sizeof m->sum->job, "%s", m->job->name);
  ENPU_FORWARD(lock_store(m, m->o.store_path ? m->o.store_path : m->job->store_path, err));
  snprintf(m->sum->store_path, sizeof m->sum->store_path, "%s", m->store_path);
  ENPU_FORWARD(farm_state_create(&m->state, err));
  ENPU_FORWARD(load_previous(m, err));
  ENPU_FORWARD(build_buckets(m, err));
  ENPU_FORWARD(build_tasks(m, err));
  ENPU_FORWARD(build_wanted(m, err));
  ENPU_FORWARD(add_uncompiled(m, err));
  m->sum->reused_store = mark_known(m);
  ENPU_FORWARD(replay_journal(m, err));
  m->sum->reused_journal = mark_known(m);
  ENPU_FORWARD(farm_journal_open(m->journal_path, &m->journal, err));
  ENPU_FORWARD(build_queue(m, err));
  summary_counts(m);
  return 0;
}

static void master_free(master *m) {
  for (int b = 0; m->buckets && b < m->nbuckets; b++) graph_free(m->buckets[b].g);
  for (int j = 0; m->bt && j < m->nbt; j++) free(m->bt[j].ops);
  for (int p = 0; m->job && p < m->job->policy_count; p++) {
    if (m->wanted_keys) free(m->wanted_keys[p]);
    if (m->wanted_buckets) free(m->wanted_buckets[p]);
  }
  free(m->wanted_keys);
  free(m->wanted_buckets);
  free(m->buckets);
  free(m->ops);
  free(m->bt);
  free(m->deps);
  free(m->queue);
  free(m->added_json);
  farm_journal_free(m->journal);
  store_lock_release(m->lock);
  farm_state_free(m->state);
  farm_exec_free(m->exec);
  config_job_free(m->job);
}

/* ---------------------------------------------------------------------------------
 * Results, checkpoints, progress */

static int checkpoint(master *m, enpu_err *err) {
  const store_provenance prov = {
      .cost_model_hash = enpu_hash64(COST_MODEL_VERSION, strlen(COST_MODEL_VERSION), 0),
      .chip_hash = m->job->chip.hash, .model_hash = m->job->model.hash, .job_hash = m->job->hash,
      .tool_version = ENPU_TOOL_VERSION, .job_json = m->job->job_json,
      .model_json = m->job->model_json, .chip_json = m->job->chip_json,
      .cluster_json = m->job->cluster_json, .added_buckets_json = m->added_json};
  ENPU_FORWARD(farm_state_checkpoint(m->state, m->lock, &prov, m->wanted,
                                     m->job->policy_count, err));
  return farm_journal_reset(m->journal, err);
}

/* Journal a result and add it to the state (taking its arrays). */
static int keep_bucket(master *m, farm_bucket_result *r, enpu_err *err) {
  farm_buf b = {0};
  int rc = farm_bucket_result_encode(r, &b, err);
  if (rc == 0) rc = farm_journal_append(m->journal, FARM_REC_BUCKET, b.data, b.len, err);
  if (rc == 0) rc = farm_state_add_bucket(m->state, r, err);
  farm_buf_free(&b);
  m->unsynced++;
  return rc;
}

static int fail_bucket(master *m, int j, const char *message, enpu_err *err) {
  mtask *t = &m->bt[j];
  const mbucket *b = &m->buckets[t->bucket];
  if (t->status == T_TODO) m->est_done_s += t->est_s; /* a running one was counted */
  t->status = T_FAILED;
  m->sum->tasks_failed++;
  farm_bucket_result r = {.policy = t->policy};
  r.bucket = (store_bucket_rec){.phase = (uint8_t)b->phase, .status = STORE_BUCKET_FAILED,
                                .budget = (uint8_t)m->opt.budget,
                                .batch = b->batch, .seq = b->seq, .input_hash = t->input_hash};
  snprintf(r.bucket.message, sizeof r.bucket.message, "%s", message);
  return keep_bucket(m, &r, err);
}

static int op_settled(master *m, int i, enpu_err *err) {
  const mop *o = &m->ops[i];
  for (int k = 0; k < o->dep_count; k++) {
    const int j = m->deps[o->dep_first + k];
    m->bt[j].waiting--;
    if (o->status == T_FAILED && m->bt[j].status == T_TODO) {
      char msg[STORE_MSG_LEN];
      snprintf(msg, sizeof msg, "op %.60s failed: %.80s",
               graph_op_at(m->buckets[o->bucket].g, o->op)->name, o->message);
      ENPU_FORWARD(fail_bucket(m, j, msg, err));
    }
  }
  return 0;
}

static int take_result(master *m, const farm_task_result *tr, enpu_err *err) {
  ENPU_RETURN_IF(tr->id >= task_count(m) || *task_status(m, tr->id) != T_RUNNING, err,
                 ENPU_ERR_FORMAT, "a result for task %u, which is not running", tr->id);
  const int is_op = task_is_op(m, tr->id);
  const double est = is_op ? m->ops[tr->id].est_s : m->bt[tr->id - (uint32_t)m->nops].est_s;
  m->est_done_s += est;
  m->sec_per_est[!is_op] += tr->compute_s;
  m->est_seen[!is_op] += est;
  m->sum->core_s += tr->compute_s;
  m->sum->evaluations += (int64_t)tr->evaluations;
  if (tr->kind == FARM_RES_FAILED) {
    if (!is_op) return fail_bucket(m, (int)(tr->id - (uint32_t)m->nops), tr->message, err);
    mop *o = &m->ops[tr->id];
    o->status = T_FAILED;
    snprintf(o->message, sizeof o->message, "%s", tr->message);
    m->sum->tasks_failed++;
    return op_settled(m, (int)tr->id, err);
  }
  m->sum->tasks_done++;
  ENPU_RETURN_IF(tr->kind != (is_op ? FARM_REC_OP : FARM_REC_BUCKET), err, ENPU_ERR_FORMAT,
                 "task %u: result of the wrong kind %u", tr->id, tr->kind);
  ENPU_FORWARD(farm_journal_append(m->journal, tr->kind, tr->payload, tr->bytes, err));
  m->unsynced++;
  m->sum->recomputed++;
  if (is_op) {
    farm_op_result r;
    ENPU_FORWARD(farm_op_result_decode(tr->payload, tr->bytes, &r, err));
    const int ok = r.policy == m->ops[tr->id].policy && r.key == m->ops[tr->id].key;
    if (ok) ENPU_FORWARD(farm_state_add_op(m->state, &r, err));
    farm_op_result_free(&r);
    ENPU_RETURN_IF(!ok, err, ENPU_ERR_INTERNAL, "task %u: op result for another key", tr->id);
    m->ops[tr->id].status = T_KNOWN;
    return op_settled(m, (int)tr->id, err);
  }
  farm_bucket_result r;
  ENPU_FORWARD(farm_bucket_result_decode(tr->payload, tr->bytes, &r, err));
  m->bt[tr->id - (uint32_t)m->nops].status = T_KNOWN;
  const int rc = farm_state_add_bucket(m->state, &r, err);
  farm_bucket_result_free(&r);
  return rc;
}

static int take_results(master *m, const farm_buf *b, enpu_err *err) {
  size_t off = 0;
  farm_task_result tr;
  int rc;
  while ((rc = farm_result_next(b->data, b->len, &off, &tr, err)) == 1)
    ENPU_FORWARD(take_result(m, &tr, err));
  return rc;
}

/* Seconds of work a task of estimate `est` takes, by the measured ratio. */
static double task_s(const master *m, uint32_t t, double est) {
  const int k = !task_is_op(m, t);
  return m->est_seen[k] > 0 ? est * m->sec_per_est[k] / m->est_seen[k] : est;
}

static int task_ready(const master *m, uint32_t t) {
  if (task_is_op(m, t)) return m->ops[t].status == T_TODO;
  const mtask *b = &m->bt[t - (uint32_t)m->nops];
  return b->status == T_TODO && b->waiting == 0;
}

/* Fill a batch of ready tasks, longest first, until it holds target_s of work.
 * @return tasks in the batch (0: nothing ready). */
static int make_batch(master *m, double target_s, farm_buf *out, enpu_err *err) {
  out->len = 0;
  while (m->qhead < m->nqueue && *task_status(m, m->queue[m->qhead].task) != T_TODO) m->qhead++;
  int n = 0;
  double s = 0;
  for (int q = m->qhead; q < m->nqueue && (n == 0 || s < target_s) && n < 256; q++) {
    const uint32_t t = m->queue[q].task;
    if (!task_ready(m, t)) continue;
    if (task_is_op(m, t)) {
      const mop *o = &m->ops[t];
      const mbucket *b = &m->buckets[o->bucket];
      ENPU_FORWARD(farm_task_put_op(out, t, (config_policy)o->policy, o->key, b->phase, b->batch,
                                    b->seq, o->op, err));
    } else {
      const mtask *bt = &m->bt[t - (uint32_t)m->nops];
      const mbucket *b = &m->buckets[bt->bucket];
      const farm_op_result **sets = enpu_calloc((size_t)bt->nops + 1, sizeof *sets);
      ENPU_RETURN_IF(!sets, err, ENPU_ERR_NOMEM, "out of memory (task sets)");
      int rc = 0;
      for (int k = 0; rc == 0 && k < bt->nops; k++) {
        sets[k] = farm_state_find_op(m->state, bt->policy, m->ops[bt->ops[k]].key);
        if (!sets[k]) rc = enpu_errorf(err, ENPU_ERR_INTERNAL, "bucket task %u: op %d unknown", t, k);
      }
      if (rc == 0)
        rc = farm_task_put_bucket(out, t, (config_policy)bt->policy, bt->input_hash, b->phase,
                                  b->batch, b->seq, sets, (uint32_t)bt->nops, err);
      free(sets);
      ENPU_FORWARD(rc);
    }
    *task_status(m, t) = T_RUNNING;
    s += task_s(m, t, m->queue[q].est_s);
    n++;
  }
  return n;
}

static void fmt_hms(double s, char *out, size_t n) {
  const long t = s > 0 && s < 1e9 ? (long)(s + 0.5) : 0;
  snprintf(out, n, "%ld:%02ld:%02ld", t / 3600, t / 60 % 60, t % 60);
}

static void progress(const master *m, double elapsed, int live, int final) {
  if (m->o.quiet) return;
  const int64_t total = m->sum->tasks_total;
  const int64_t done = m->sum->tasks_done + m->sum->tasks_failed;
  const double frac = m->est_total_s > 0 ? m->est_done_s / m->est_total_s : 1;
  char eta[32];
  fmt_hms(frac > 0 ? elapsed * (1 - frac) / frac : 0, eta, sizeof eta);
  const double rate = elapsed > 0 ? (double)m->sum->evaluations / elapsed : 0;
  fprintf(m->o.log, "%sfarm: %lld/%lld tasks (%.1f%%), %.1fk evals/s, ETA %s%s",
          live ? "\r" : "", (long long)done, (long long)total,
          total ? 100.0 * (double)done / (double)total : 100.0, rate / 1e3, eta,
          live ? (final ? "\033[K\n" : "\033[K") : "\n");
  fflush(m->o.log);
}

typedef struct {
  double start, last_sync, last_ckpt, last_progress;
  int live;
} clocks;

/* Periodic duties of the master's loop: journal sync, checkpoint, progress. */
static int duties(master *m, clocks *c, enpu_err *err) {
  const double now = enpu_now_s();
  if (m->unsynced && (now - c->last_sync >= 1.0 || farm_signal_seen)) {
    ENPU_FORWARD(farm_journal_sync(m->journal, err));
    m->unsynced = 0;
    c->last_sync = now;
  }
  if (now - c->last_ckpt >= m->o.checkpoint_s) {
    ENPU_FORWARD(checkpoint(m, err));
    c->last_ckpt = enpu_now_s();
  }
  if (now - c->last_progress >= (c->live ? 0.5 : m->o.progress_s)) {
    progress(m, now - c->start, c->live, 0);
    c->last_progress = now;
  }
  return 0;
}

static int all_settled(const master *m) {
  return m->sum->tasks_done + m->sum->tasks_failed == m->sum->tasks_total;
}

/* The master's loop with workers: keep every idle worker fed, take results. */
static int master_loop_mpi(master *m, clocks *c, enpu_err *err) {
  const int nworkers = m->size - 1;
  /* Batches queued at each worker: two, so a worker finds its next batch waiting while
   * the master sleeps between polls. Sends are non-blocking: a worker may be sending
   * its result (a rendezvous for large messages) while the master sends it more work.
   * Batch k of worker w uses buffer 2w + k % 2; when it is refilled, the batch that used
   * it before has been answered, so waiting on its send returns at once. */
  int *busy = enpu_calloc((size_t)m->size, sizeof *busy);
  int *sent = enpu_calloc((size_t)m->size, sizeof *sent);
  farm_buf *out = enpu_calloc(2 * (size_t)m->size, sizeof *out), in = {0};
  MPI_Request *req = enpu_calloc(2 * (size_t)m->size, sizeof *req);
  for (int k = 0; req && k < 2 * m->size; k++) req[k] = MPI_REQUEST_NULL;
  int rc = busy && sent && out && req ? 0 : enpu_errorf(err, ENPU_ERR_NOMEM, "out of memory");
  double pause = 50e-6;
  while (rc == 0) {
    const int stopping = farm_signal_seen != 0;
    /* First slots first, so the longest tasks spread over the workers. */
    for (int slot = 0, n = 1; !stopping && rc == 0 && n > 0 && slot < 2; slot++) {
      for (int w = 1; rc == 0 && w < m->size; w++) {
        if (busy[w] > slot) continue;
        /* A few ms of work or more per message, less near the end so that every worker
         * still gets some. */
        const double seen = m->est_seen[0] + m->est_seen[1];
        const double scale = seen > 0 ? (m->sec_per_est[0] + m->sec_per_est[1]) / seen : 1;
        const double left_s = (m->est_total_s - m->est_done_s) * scale;
        const double target = fmax(0.005, fmin(0.05, left_s / (4.0 * nworkers)));
        const int k = 2 * w + sent[w] % 2;
        MPI_Wait(&req[k], MPI_STATUS_IGNORE);
        n = make_batch(m, target, &out[k], err);
        if (n < 0) rc = n;
        if (n <= 0) break;
        MPI_Isend(out[k].data, (int)out[k].len, MPI_BYTE, w, TAG_WORK, m->comm, &req[k]);
        busy[w]++;
        sent[w]++;
      }
    }
    if (rc < 0) break;
    int any = 0;
    for (int w = 1; w < m->size; w++) any |= busy[w];
    if (!any && (stopping || all_settled(m))) break;
    if (!any && !stopping) {
      rc = enpu_errorf(err, ENPU_ERR_INTERNAL, "no task is ready and none is running");
      break;
    }
    int flag = 0;
    MPI_Status st;
    MPI_Iprobe(MPI_ANY_SOURCE, TAG_RESULT, m->comm, &flag, &st);
    if (flag) {
      rc = recv_bytes(m->comm, &st, &in, err);
      if (rc == 0) rc = take_results(m, &in, err);
      busy[st.MPI_SOURCE]--;
      pause = 50e-6;
    } else {
      sleep_s(pause);
      pause = fmin(2 * pause, 0.010);
    }
    if (rc == 0) rc = duties(m, c, err);
  }
  /* After an error, take the batches still running so every worker reaches TAG_STOP. */
  for (int w = 1; w < m->size; w++) {
    for (; busy[w] > 0; busy[w]--) {
      MPI_Status st;
      wait_message(m->comm, w, 0.010, &st);
      enpu_err ignored;
      recv_bytes(m->comm, &st, &in, &ignored);
    }
  }
  for (int k = 0; req && k < 2 * m->size; k++) MPI_Wait(&req[k], MPI_STATUS_IGNORE);
  for (int k = 0; out && k < 2 * m->size; k++) farm_buf_free(&out[k]);
  free(busy);
  free(sent);
  free(out);
  free(req);
  farm_buf_free(&in);
  return rc;
}

/* One rank: the master runs each task itself, checking the stop flag in between. */
static int master_loop_inline(master *m, clocks *c, enpu_err *err) {
  farm_buf out = {0}, in = {0};
  int rc = 0;
  while (rc == 0 && !farm_signal_seen && !all_settled(m)) {
    const int n = make_batch(m, 0, &out, err);
    if (n <= 0) {
      rc = n < 0 ? n : enpu_errorf(err, ENPU_ERR_INTERNAL, "no task is ready");
      break;
    }
    in.len = 0;
    rc = farm_exec_batch(m->exec, out.data, out.len, &in, err);
    if (rc == 0) rc = take_results(m, &in, err);
    if (rc == 0) rc = duties(m, c, err);
  }
  farm_buf_free(&out);
  farm_buf_free(&in);
  return rc;
}

/* CPU seconds (user + system) this process has used: the master's own cost. */
static double process_cpu_s(void) {
  struct rusage ru;
  if (getrusage(RUSAGE_SELF, &ru) != 0) return 0;
  return (double)ru.ru_utime.tv_sec + 1e-6 * (double)ru.ru_utime.tv_usec +
         (double)ru.ru_stime.tv_sec + 1e-6 * (double)ru.ru_stime.tv_usec;
}

/* Where a result file of this run goes: DIR/<job>/NAME with --results DIR, else NAME
 * beside the store (the job name is a plain name: config_job_load checks it). The
 * directory is created. */
static int result_path(const master *m, const char *name, char *out, size_t cap, enpu_err *err) {
  char dir[CONFIG_PATH_LEN + CONFIG_NAME_LEN + 8];
  if (m->o.results_dir) snprintf(dir, sizeof dir, "%s/%s", m->o.results_dir, m->job->name);
  else snprintf(dir, sizeof dir, "%.*s", (int)(strrchr(m->store_path, '/') - m->store_path), m->store_path);
  ENPU_FORWARD(enpu_mkdir_p(dir[0] ? dir : "/", err));
  ENPU_RETURN_IF(snprintf(out, cap, "%s/%s", dir, name) >= (int)cap, err, ENPU_ERR_RANGE, "path too long: %s/%s",
                 dir, name);
  return 0;
}

static int write_summary_md(const master *m, enpu_err *err) {
  char path[CONFIG_PATH_LEN + CONFIG_NAME_LEN + 32];
  ENPU_FORWARD(result_path(m, "summary.md", path, sizeof path, err));
  FILE *f = fopen(path, "w");
  ENPU_RETURN_IF(!f, err, enpu_errno_code(errno), "cannot write %s: %s", path, strerror(errno));
  farm_summary_print(m->sum, f);
  const int bad = ferror(f);
  ENPU_RETURN_IF(fclose(f) != 0 || bad, err, enpu_errno_code(errno), "cannot write %s: %s", path, strerror(errno));
  return 0;
}

/* The job's `validation` section: `enpu validate` on the final store with the job's
 * cluster (rank 0, after the last checkpoint). A failing plan or a validation that cannot
 * run is an error of the farm; the store then stays the final checkpoint (validate_run
 * rewrites it only after everything succeeded). */
static int validate_store(const master *m, enpu_err *err) {
  const config_validation *val = &m->job->validation;
  if (!val->enabled || m->sum->outcome == FARM_INTERRUPTED) return 0;
  char report[CONFIG_PATH_LEN + CONFIG_NAME_LEN + 32];
  ENPU_FORWARD(result_path(m, "validation.md", report, sizeof report, err));
  validate_args a;
  validate_args_default(&a);
  a.store_path = m->store_path, a.lock = m->lock, a.trace_path = val->trace_path, a.job = m->job;
  a.job_source = m->o.job_path, a.cluster = &m->job->cluster, a.report_path = report;
  a.sample = val->sample, a.seed = val->seed, a.log = m->o.quiet ? NULL : m->o.log;
  validate_outcome out;
  int rc = validate_run(&a, &out, err);
  if (rc < 0) {
    enpu_err_prefix(err, "validation: ");
    return rc;
  }
  if (!m->o.quiet)
    fprintf(m->o.log, "farm: validation: %zu of %zu sampled plans passed (%.2f s), %s\n", out.passed,
            out.plans, out.total_s, report);
  ENPU_RETURN_IF(out.failed, err, ENPU_ERR_INTERNAL,
                 "validation: %zu of %zu sampled plans failed (see %s); first: %s", out.failed,
                 out.plans, report, out.first_failure);
  return 0;
}

static void count_buckets(master *m) {
  farm_summary *s = m->sum;
  for (int p = 0; p < m->job->policy_count; p++)
    for (int b = 0; b < m->nbuckets; b++) {
      const mbucket *mb = &m->buckets[b];
      const farm_bucket_result *r =
          farm_state_find_bucket(m->state, m->job->policies[p], mb->phase, mb->batch, mb->seq,
                                 m->wanted_buckets[p][b].input_hash);
      const int status = r ? r->bucket.status : -1;
      if (status == STORE_BUCKET_OK) s->buckets_ok++;
      else if (status == STORE_BUCKET_INFEASIBLE_CAPACITY) s->buckets_infeasible++;
      else if (status == STORE_BUCKET_FAILED) s->buckets_failed++;
    }
}

static int stop_workers(const master *m, int outcome) {
  for (int w = 1; w < m->size; w++) MPI_Send(&outcome, 1, MPI_INT, w, TAG_STOP, m->comm);
  return 0;
}

/* Every rank that computes has loaded the job (workers load it themselves): all go on,
 * or all stop with the first failure. */
static int executors_ready(MPI_Comm comm, int rc, enpu_err *err) {
  int worst = rc;
  MPI_Allreduce(&rc, &worst, 1, MPI_INT, MPI_MIN, comm);
  if (worst < 0 && rc == 0)
    return enpu_errorf(err, worst, "a rank could not load the job (see its message)");
  return worst;
}

static int run_master(master *m, enpu_err *err) {
  clocks c = {.start = enpu_now_s(), .live = isatty(fileno(m->o.log))};
  int rc = master_setup(m, err);
  enpu_err sent = {rc, ""};
  if (rc < 0) sent = *err;
  /* Workers wait for the setup's outcome; on failure they stop with the same error. */
  MPI_Bcast(&sent, (int)sizeof sent, MPI_BYTE, 0, m->comm);
  if (rc < 0) {
    m->sum->input_error = 1;
    return rc;
  }
  if (m->size == 1) rc = farm_exec_create(m->o.job_path, m->o.capacity_factor, &m->exec, err);
  ENPU_FORWARD(executors_ready(m->comm, rc, err));
  c.last_sync = c.last_ckpt = c.last_progress = enpu_now_s();
  rc = m->size > 1 ? master_loop_mpi(m, &c, err) : master_loop_inline(m, &c, err);
  if (rc == 0) rc = farm_journal_sync(m->journal, err);
  if (rc == 0) rc = checkpoint(m, err);
  const int finished = rc == 0 && all_settled(m);
  m->sum->outcome = !finished            ? FARM_INTERRUPTED
                    : m->sum->tasks_failed ? FARM_FAILED
                                           : FARM_DONE;
  stop_workers(m, rc < 0 ? rc : (int)m->sum->outcome);
  if (rc < 0) return rc;
  progress(m, enpu_now_s() - c.start, c.live, 1);
  count_buckets(m);
  m->sum->wall_s = enpu_now_s() - c.start;
  m->sum->master_cpu_s = process_cpu_s();
  ENPU_FORWARD(write_summary_md(m, err));
  return validate_store(m, err);
}

/* ---------------------------------------------------------------------------------
 * Worker */

static int run_worker(const farm_options *o, MPI_Comm comm, farm_summary *sum, enpu_err *err) {
  enpu_err setup;
  MPI_Bcast(&setup, (int)sizeof setup, MPI_BYTE, 0, comm);
  if (setup.code < 0) {
    *err = setup;
    sum->input_error = 1;
    return setup.code;
  }
  farm_exec *x = NULL;
  int rc = executors_ready(comm, farm_exec_create(o->job_path, o->capacity_factor, &x, err), err);
  if (rc < 0) return rc;
  farm_buf in = {0}, out = {0};
  for (;;) {
    MPI_Status st;
    wait_message(comm, 0, 0.002, &st);
    if (st.MPI_TAG == TAG_STOP) {
      int outcome;
      MPI_Recv(&outcome, 1, MPI_INT, 0, TAG_STOP, comm, MPI_STATUS_IGNORE);
      if (outcome < 0) rc = enpu_errorf(err, outcome, "the master stopped on an error");
      else sum->outcome = (farm_outcome)outcome;
      break;
    }
    rc = recv_bytes(comm, &st, &in, err);
    out.len = 0;
    if (rc == 0) rc = farm_exec_batch(x, in.data, in.len, &out, err);
    if (rc < 0) {
      /* A batch this binary cannot read is a bug; the master would wait for it forever. */
      fprintf(o->log ? o->log : stderr, "farm: rank %d: %s\n", sum->rank, err->msg);
      MPI_Abort(comm, 1);
    }
    MPI_Send(out.data, (int)out.len, MPI_BYTE, 0, TAG_RESULT, comm);
  }
  farm_exec_free(x);
  farm_buf_free(&in);
  farm_buf_free(&out);
  return rc;
}

/* ---------------------------------------------------------------------------------
 * Entry */

int farm_run(const farm_options *opt, farm_summary *sum, enpu_err *err) {
  memset(sum, 0, sizeof *sum);
  int inited = 0, own = 0;
  MPI_Initialized(&inited);
  if (!inited) {
    ENPU_RETURN_IF(MPI_Init(NULL, NULL) != MPI_SUCCESS, err, ENPU_ERR_INTERNAL,
                   "MPI_Init failed");
    own = 1;
  }
  master m = {.o = *opt, .sum = sum};
  if (!m.o.log) m.o.log = stderr;
  MPI_Comm_dup(MPI_COMM_WORLD, &m.comm);
  MPI_Comm_rank(m.comm, &m.rank);
  MPI_Comm_size(m.comm, &m.size);
  sum->rank = m.rank;
  sum->ranks = m.size;
  /* SIGUSR1 is what Slurm's warning and mpirun forward; SIGTERM and SIGINT come from a
   * scheduler, a user or srun. mpirun does not forward SIGTERM/SIGINT: it sends the
   * ranks SIGTERM itself and SIGKILL a second later (Open MPI 4.1's
   * odls_base_sigkill_timeout), so the master syncs its journal as soon as it sees a
   * signal and checkpoints right after. */
  static const int stop_signals[] = {SIGTERM, SIGINT, SIGUSR1};
  enum { NSTOP = sizeof stop_signals / sizeof stop_signals[0] };
  struct sigaction sa = {.sa_handler = on_signal}, old[NSTOP];
  sigemptyset(&sa.sa_mask);
  farm_signal_seen = 0;
  for (int i = 0; i < NSTOP; i++) sigaction(stop_signals[i], &sa, &old[i]);
  const int rc = m.rank == 0 ? run_master(&m, err) : run_worker(&m.o, m.comm, sum, err);
  /* Workers leave only when rank 0 is done with its summary and validation: a worker
   * exiting with status 3 first would make mpirun kill rank 0 mid-way. */
  MPI_Barrier(m.comm);
  if (m.rank == 0) master_free(&m);
  for (int i = 0; i < NSTOP; i++) sigaction(stop_signals[i], &old[i], NULL);
  MPI_Comm_free(&m.comm);
  if (own) MPI_Finalize();
  return rc;
}

void farm_summary_print(const farm_summary *s, FILE *out) {
  static const char *outcome[] = {"done", "finished with failures", "", "interrupted (resumable)"};
  fprintf(out, "# Farm summary: %s\n\n", s->job);
  fprintf(out, "| | |\n|---|---|\n");
  fprintf(out, "| outcome | %s |\n", outcome[s->outcome]);
  fprintf(out, "| store | %s |\n", s->store_path);
  fprintf(out, "| ranks | %d |\n", s->ranks);
  fprintf(out, "| buckets (x policies) | %lld ok, %lld infeasible (capacity), %lld failed |\n",
          (long long)s->buckets_ok, (long long)s->buckets_infeasible, (long long)s->buckets_failed);
  fprintf(out, "| unique op signatures |");
  for (int p = 0; p < s->npolicies; p++)
    fprintf(out, "%s %s %lld", p ? "," : "", config_policy_name((config_policy)s->policies[p]),
            (long long)s->unique_ops[s->policies[p]]);
  fprintf(out, " |\n");
  fprintf(out, "| tasks | %lld to do (%lld op, %lld bucket), %lld done, %lld failed |\n",
          (long long)s->tasks_total, (long long)s->op_tasks, (long long)s->bucket_tasks,
          (long long)s->tasks_done, (long long)s->tasks_failed);
  fprintf(out, "| reused | %lld from the store, %lld from the journal |\n",
          (long long)s->reused_store, (long long)s->reused_journal);
  fprintf(out, "| recomputed | %lld |\n", (long long)s->recomputed);
  fprintf(out, "| evaluations | %lld |\n", (long long)s->evaluations);
  fprintf(out, "| core-seconds | %.2f |\n", s->core_s);
  fprintf(out, "| wall time | %.2f s |\n", s->wall_s);
  fprintf(out, "| master CPU | %.2f s (%.1f %% of one core) |\n", s->master_cpu_s,
          s->wall_s > 0 ? 100.0 * s->master_cpu_s / s->wall_s : 0.0);
}
