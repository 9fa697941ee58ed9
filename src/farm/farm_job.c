/* farm_job.c — one job of a farm run on the master (farm_job_internal.h): the grid plus
 * added buckets and their graphs, the unique op signatures per policy (each split into
 * part tasks when its op-level search is `ideal`'s exact one), the bucket tasks that
 * wait for their ops, what the previous store and the journal already hold, the queue
 * (longest first), results (journal, state, merging parts), checkpoints and the job's
 * end (summary.md, validation). No MPI here: farm.c moves the bytes.
 *
 * Invariants: see farm_job_internal.h. In short: only results go into the store, and
 * farm_state_checkpoint orders them by key, so the content never depends on the rank
 * count, arrival order or resume; an op's parts merge into the same op result whatever
 * order they arrive in (farm_merge_parts). */
#include <errno.h>
#include <jansson.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "farm_job_internal.h"
#include "grid.h"
#include "validate.h"

#ifndef ENPU_TOOL_VERSION
#define ENPU_TOOL_VERSION "0.0.0"
#endif

/* ---------------------------------------------------------------------------------
 * The plan: buckets, unique ops, parts, bucket tasks */

static int cmp_bucket(const void *pa, const void *pb) {
  const mbucket *a = pa, *b = pb;
  if (a->phase != b->phase) return a->phase < b->phase ? -1 : 1;
  if (a->batch != b->batch) return a->batch < b->batch ? -1 : 1;
  return (a->seq > b->seq) - (a->seq < b->seq);
}

static int add_bucket(farm_job *m, size_t *cap, config_phase phase, int batch, int seq,
                      enpu_err *err) {
  ENPU_RETURN_IF(enpu_grow((void **)&m->buckets, cap, (size_t)m->nbuckets + 1,
                           sizeof *m->buckets) < 0,
                 err, ENPU_ERR_NOMEM, "out of memory (buckets)");
  m->buckets[m->nbuckets++] = (mbucket){.phase = phase, .batch = batch, .seq = seq};
  return 0;
}

/* Added buckets: those recorded in the previous store, then --add-buckets. */
static int collect_added(farm_job *m, size_t *cap, enpu_err *err) {
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
static int build_buckets(farm_job *m, enpu_err *err) {
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
  case CONFIG_POLICY_DVFS_C_WALK:
  case CONFIG_POLICY_DVFS_C_MS: return (peak + 1) * EST_EVAL_S;
  case CONFIG_POLICY_IDEAL: return pow(peak, 3) * EST_EVAL_S; /* exact: ~one kernel a triple */
  default: return 8.0 * peak * EST_EVAL_S; /* Algorithm 1: ~peak steps of 2^d - 1 candidates */
  }
}

int farm_job_find_op(const farm_job *m, uint32_t policy, uint64_t key) {
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

/* Whether the op-level search of op policy `code` is split into parts: `ideal`'s exact
 * search (any variant: a shadow register file keeps its own ops; pg+ideal shares
 * ideal's), with the options of the first job policy keeping its ops under that code. */
static int op_split(const farm_job *m, uint32_t code) {
  config_policy_spec spec;
  if (config_policy_spec_decode(code, &spec) < 0 || spec.base != CONFIG_POLICY_IDEAL) return 0;
  for (int p = 0; p < m->job->policy_count; p++)
    if (m->op_code[p] == code) return m->opt[p].ideal_method == SEARCH_OP_EXACT;
  return 0;
}

/* The part tasks of every op whose op-level search the farm splits (op_split,
 * search_op_compile_part). */
static int build_parts(farm_job *m, enpu_err *err) {
  int split = 0;
  for (int i = 0; i < m->nops; i++) {
    m->ops[i].first_part = -1;
    split += op_split(m, m->ops[i].policy);
  }
  m->parts = enpu_calloc((size_t)split * SEARCH_EXACT_PARTS + 1, sizeof *m->parts);
  ENPU_RETURN_IF(!m->parts, err, ENPU_ERR_NOMEM, "out of memory (part tasks)");
  for (int i = 0; i < m->nops; i++) {
    if (!op_split(m, m->ops[i].policy)) continue;
    m->ops[i].first_part = m->nparts;
    for (int k = 0; k < SEARCH_EXACT_PARTS; k++) m->parts[m->nparts++] = (mpart){i, k, T_TODO};
  }
  return 0;
}

/* Seconds a bucket task of policy p over graph g takes (the right order of magnitude):
 * its plans' instances, the GA's genomes, an epoch policy's own op level. */
static double est_bucket_s(const farm_job *m, int p, const graph *g) {
  const config_policy base = m->job->policies[p].base;
  int64_t instances = 0;
  for (int i = 0; i < graph_op_count(g); i++) instances += graph_op_at(g, i)->multiplicity;
  double est = (double)instances * (2 * m->job->slack_count + 4) * EST_INSTANCE_S;
  if (m->job->policies[p].gate) est *= 2; /* plans priced plain and gated */
  if (base == CONFIG_POLICY_DVFS_C || base == CONFIG_POLICY_DVFS_C_MS)
    est += (double)m->job->slack_count * m->opt[p].ga.population * m->opt[p].ga.generations *
           graph_op_count(g) * m->opt[p].ga_groups * EST_GENE_S;
  if (config_policy_is_epoch(base))
    est += 4.0 * graph_op_count(g) * est_op_s(base, m->job->chip.freq_states);
  return est;
}

/* The bucket task of policy p (job slot) over bucket b; *ndeps grows by its ops. */
static int add_bucket_task(farm_job *m, int p, int b, size_t *ndeps, enpu_err *err) {
  const graph *g = m->buckets[b].g;
  const config_policy_spec *spec = &m->job->policies[p];
  mtask *t = &m->bt[m->nbt++];
  *t = (mtask){.policy = m->code[p], .op_policy = m->op_code[p], .bucket = b,
               .input_hash = farm_bucket_input_hash(m->job, spec, &m->opt[p], g),
               .est_s = est_bucket_s(m, p, g)};
  t->ops = enpu_calloc((size_t)graph_op_count(g) + 1, sizeof *t->ops);
  ENPU_RETURN_IF(!t->ops, err, ENPU_ERR_NOMEM, "out of memory (bucket task ops)");
  if (config_policy_is_epoch(spec->base)) return 0; /* its task searches its epochs */
  for (int i = 0; i < graph_op_count(g); i++)
    t->ops[i] = farm_job_find_op(m, m->op_code[p],
                                 farm_op_key(m->job, spec, &m->opt[p], graph_op_at(g, i)));
  qsort(t->ops, (size_t)graph_op_count(g), sizeof *t->ops, cmp_int);
  for (int i = 0; i < graph_op_count(g); i++)
    if (t->nops == 0 || t->ops[t->nops - 1] != t->ops[i]) t->ops[t->nops++] = t->ops[i];
  *ndeps += (size_t)t->nops;
  return 0;
}

/* The unique ops of every op policy (representative: first bucket, first op; pg+X
 * shares X's; epoch policies have none), sorted by (policy, key). */
static int build_ops(farm_job *m, enpu_err *err) {
  size_t nref = 0;
  for (int b = 0; b < m->nbuckets; b++)
    if (m->buckets[b].g) nref += (size_t)graph_op_count(m->buckets[b].g);
  nref *= (size_t)m->job->policy_count;
  op_ref *refs = enpu_calloc(nref + 1, sizeof *refs);
  ENPU_RETURN_IF(!refs, err, ENPU_ERR_NOMEM, "out of memory (%zu op references)", nref);
  size_t n = 0;
  for (int p = 0; p < m->job->policy_count; p++) {
    const config_policy_spec *spec = &m->job->policies[p];
    if (config_policy_is_epoch(spec->base)) continue;
    for (int b = 0; b < m->nbuckets; b++)
      for (int i = 0; m->buckets[b].g && i < graph_op_count(m->buckets[b].g); i++)
        refs[n++] = (op_ref){m->op_code[p],
                             farm_op_key(m->job, spec, &m->opt[p], graph_op_at(m->buckets[b].g, i)),
                             b, i};
  }
  qsort(refs, n, sizeof *refs, cmp_op_ref);
  m->ops = enpu_calloc(n + 1, sizeof *m->ops);
  int rc = m->ops ? 0 : enpu_errorf(err, ENPU_ERR_NOMEM, "out of memory (ops)");
  for (size_t i = 0; rc == 0 && i < n; i++) {
    if (m->nops && m->ops[m->nops - 1].policy == refs[i].policy && m->ops[m->nops - 1].key == refs[i].key)
      continue;
    config_policy_spec spec;
    config_policy_spec_decode(refs[i].policy, &spec);
    m->ops[m->nops++] = (mop){.policy = refs[i].policy, .key = refs[i].key,
                              .bucket = refs[i].bucket, .op = refs[i].op,
                              .est_s = est_op_s(spec.base, m->job->chip.freq_states)};
  }
  free(refs);
  return rc;
}

/* Unique ops and their parts, bucket tasks (one per policy × compiled bucket), the
 * edges between them. */
static int build_tasks(farm_job *m, enpu_err *err) {
  int rc = build_ops(m, err);
  if (rc == 0) rc = build_parts(m, err);
  m->bt = enpu_calloc((size_t)m->job->policy_count * (size_t)m->nbuckets + 1, sizeof *m->bt);
  if (rc == 0 && !m->bt) rc = enpu_errorf(err, ENPU_ERR_NOMEM, "out of memory (bucket tasks)");
  size_t ndeps = 0;
  for (int p = 0; rc == 0 && p < m->job->policy_count; p++)
    for (int b = 0; rc == 0 && b < m->nbuckets; b++)
      if (m->buckets[b].g) rc = add_bucket_task(m, p, b, &ndeps, err);
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

static int build_wanted(farm_job *m, enpu_err *err) {
  const int np = m->job->policy_count;
  m->wanted_keys = enpu_calloc((size_t)np, sizeof *m->wanted_keys);
  m->wanted_buckets = enpu_calloc((size_t)np, sizeof *m->wanted_buckets);
  ENPU_RETURN_IF(!m->wanted_keys || !m->wanted_buckets, err, ENPU_ERR_NOMEM, "out of memory");
  int t = 0;
  for (int p = 0; p < np; p++) {
    const uint32_t pol = m->op_code[p];
    farm_wanted *w = &m->wanted[p];
    *w = (farm_wanted){.policy = m->code[p], .op_policy = pol};
    m->wanted_keys[p] = enpu_calloc((size_t)m->nops + 1, sizeof **m->wanted_keys);
    m->wanted_buckets[p] = enpu_calloc((size_t)m->nbuckets + 1, sizeof **m->wanted_buckets);
    ENPU_RETURN_IF(!m->wanted_keys[p] || !m->wanted_buckets[p], err, ENPU_ERR_NOMEM, "out of memory");
    for (int i = 0; i < m->nops; i++)
      if (m->ops[i].policy == pol) m->wanted_keys[p][w->nops++] = m->ops[i].key;
    for (int b = 0; b < m->nbuckets; b++) {
      const mbucket *mb = &m->buckets[b];
      store_bucket_rec *r = &m->wanted_buckets[p][w->nbuckets++];
      const uint64_t h = mb->g ? m->bt[t++].input_hash : uncompiled_hash(mb, m->job->budget);
      *r = (store_bucket_rec){.phase = (uint8_t)mb->phase, .budget = (uint8_t)m->job->budget, .batch = mb->batch,
                              .seq = mb->seq, .input_hash = h};
    }
    w->op_keys = config_policy_is_epoch(m->job->policies[p].base) ? NULL : m->wanted_keys[p];
    w->buckets = m->wanted_buckets[p];
  }
  return 0;
}

/* Buckets that are not compiled (capacity, graph failure) are results made here. */
static int add_uncompiled(farm_job *m, enpu_err *err) {
  for (int p = 0; p < m->job->policy_count; p++)
    for (int b = 0; b < m->nbuckets; b++) {
      const mbucket *mb = &m->buckets[b];
      if (mb->g) continue;
      farm_bucket_result r = {.policy = m->code[p]};
      r.bucket = (store_bucket_rec){.phase = (uint8_t)mb->phase, .status = (uint8_t)mb->status,
                                    .budget = (uint8_t)m->job->budget,
                                    .batch = mb->batch, .seq = mb->seq,
                                    .input_hash = uncompiled_hash(mb, m->job->budget)};
      memcpy(r.bucket.message, mb->message, sizeof r.bucket.message);
      ENPU_FORWARD(farm_state_add_bucket(m->state, &r, err));
    }
  return 0;
}

/* Mark what the state already holds; @return how many tasks became known. */
static int64_t mark_known(farm_job *m) {
  int64_t n = 0;
  for (int i = 0; i < m->nops; i++) {
    mop *o = &m->ops[i];
    if (o->status == T_KNOWN || !farm_state_find_op(m->state, o->policy, o->key)) continue;
    o->status = T_KNOWN, n++;
    for (int k = 0; o->first_part >= 0 && k < SEARCH_EXACT_PARTS; k++)
      m->parts[o->first_part + k].status = T_KNOWN; /* not needed any more: not counted */
  }
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
  farm_job *m = user;
  if (kind == FARM_REC_PART) {
    farm_op_result r;
    uint32_t part;
    ENPU_FORWARD(farm_part_result_decode(payload, bytes, &part, &r, err));
    const int rc = farm_job_keep_part(m, part, &r, err);
    farm_op_result_free(&r);
    return rc;
  }
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
static int build_queue(farm_job *m, enpu_err *err) {
  m->queue = enpu_calloc(task_count(m) + 1, sizeof *m->queue);
  ENPU_RETURN_IF(!m->queue, err, ENPU_ERR_NOMEM, "out of memory (task queue)");
  for (uint32_t t = 0; t < task_count(m); t++) {
    const int kind = task_kind(m, t);
    if (*task_status(m, t) == T_KNOWN || (kind == K_OP && m->ops[t].first_part >= 0)) continue;
    const double est = task_est(m, t);
    m->queue[m->nqueue++] = (qentry){t, est};
    *(kind == K_OP ? &m->sum->op_tasks : kind == K_PART ? &m->sum->part_tasks : &m->sum->bucket_tasks) += 1;
    m->est_total_s += est;
  }
  for (int j = 0; j < m->nbt; j++)
    for (int k = 0; k < m->bt[j].nops; k++)
      m->bt[j].waiting += m->ops[m->bt[j].ops[k]].status != T_KNOWN;
  qsort(m->queue, (size_t)m->nqueue, sizeof *m->queue, cmp_qentry);
  m->sum->tasks_total = m->nqueue;
  m->queued = 1;
  return 0;
}

static void summary_counts(farm_job *m) {
  farm_summary *s = m->sum;
  s->npolicies = m->job->policy_count;
  for (int p = 0; p < m->job->policy_count; p++) {
    s->policies[p] = m->code[p];
    for (int i = 0; i < m->nops; i++) s->unique_ops[p] += m->ops[i].policy == m->op_code[p];
  }
}

/* One writer per store (store_lock): a second farm would write the same temporary file
 * and journal, `enpu validate` would publish an older snapshot over a checkpoint; and the
 * ranks of a farm whose mpirun was killed can outlive it for a while, which the lock's
 * wait covers. The store, its journal and the lock all live at the resolved path, so a
 * symbolic link to a store is the same store. */
static int lock_store(farm_job *m, const char *store, enpu_err *err) {
  const char *slash = strrchr(store, '/');
  if (slash && slash > store) {
    char dir[CONFIG_PATH_LEN];
    snprintf(dir, sizeof dir, "%.*s", (int)(slash - store), store);
    ENPU_FORWARD(enpu_mkdir_p(dir, err));
  }
  char command[2 * CONFIG_PATH_LEN];
  snprintf(command, sizeof command, "enpu farm %s", m->job_path);
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
static int load_previous(farm_job *m, enpu_err *err) {
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
static int replay_journal(farm_job *m, enpu_err *err) {
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

static int job_setup(farm_job *m, const char *store_path, enpu_err *err) {
  ENPU_FORWARD(config_job_load(m->job_path, &m->job, err));
  if (m->o.capacity_factor) ENPU_FORWARD(config_job_set_capacity_factor(m->job, m->o.capacity_factor, err));
  for (int p = 0; p < m->job->policy_count; p++) {
    search_options_for_job(&m->opt[p], m->job, &m->job->policies[p]);
    m->code[p] = config_policy_spec_code(&m->job->policies[p]);
    m->op_code[p] = farm_op_policy(&m->job->policies[p]);
  }
  snprintf(m->sum->job, sizeof m->sum->job, "%s", m->job->name);
  ENPU_FORWARD(lock_store(m, store_path ? store_path : m->job->store_path, err));
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
  /* Ops whose last part the journal held but not their merge: merged now. Part-way ones
   * count their parts as reused. */
  for (int i = 0; i < m->nops; i++)
    if (m->ops[i].status != T_KNOWN) m->sum->reused_journal += m->ops[i].parts_known;
  ENPU_FORWARD(farm_job_merge_ready(m, err));
  for (int i = 0; i < m->nops; i++)
    m->sum->resumed_ops += m->ops[i].status != T_KNOWN && m->ops[i].parts_known > 0;
  ENPU_FORWARD(build_queue(m, err));
  summary_counts(m);
  return 0;
}

int farm_job_setup(const farm_options *o, const char *job_path, const char *store_path,
                   int index, farm_summary *sum, farm_job **out, enpu_err *err) {
  *out = NULL;
  farm_job *m = enpu_calloc(1, sizeof *m);
  ENPU_RETURN_IF(!m, err, ENPU_ERR_NOMEM, "out of memory (farm job)");
  *m = (farm_job){.o = *o, .job_path = job_path, .index = index, .sum = sum};
  if (!m->o.log) m->o.log = stderr;
  const int rc = job_setup(m, store_path, err);
  if (rc < 0) {
    farm_job_free(m);
    return rc;
  }
  *out = m;
  return 0;
}

void farm_job_free(farm_job *m) {
  if (!m) return;
  for (int i = 0; m->ops && i < m->nops; i++)
    for (int k = 0; m->ops[i].part_res && k < SEARCH_EXACT_PARTS; k++)
      farm_op_result_free(&m->ops[i].part_res[k]);
  for (int i = 0; m->ops && i < m->nops; i++) free(m->ops[i].part_res), farm_buf_free(&m->ops[i].record);
  free(m->parts);
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
  config_job_free(m->job);
  free(m);
}

