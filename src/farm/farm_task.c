/* farm_task.c — what a farm task computes and how tasks and results travel as bytes:
 * the op key and bucket input hash, the task/result batch format, and the executor (one
 * per rank, over every job of the run) that runs an `op` task (Pareto search of one
 * signature plus each point's per-slot energy), a `part` task (one part of an op's exact
 * search, merged on the master by farm_merge_parts) or a `bucket` task (request walk and
 * slack plans from the Pareto sets sent with it; an epoch policy's bucket searches its
 * epochs itself). Results travel with their zstd frame (farm_zframe_pack).
 *
 * A bucket task's result becomes the store's records in farm_convert.c.
 *
 * Invariant: fixed-layout headers are copied with memcpy: both ends are the same binary. */
#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cost.h"
#include "farm_task_internal.h"

/* ---------------------------------------------------------------------------------
 * Keys */

uint64_t farm_bucket_input_hash(const config_job *job, const config_policy_spec *policy, const search_options *opt,
                                const graph *g) {
  enpu_hasher h;
  enpu_hasher_init(&h, 0);
  enpu_hasher_str(&h, "enpu-farm-bucket");
  enpu_hasher_i64(&h, config_policy_spec_code(policy));
  search_hash_options(&h, job, policy->variant, opt);
  for (int i = 0; i < graph_op_count(g); i++) {
    const graph_op *op = graph_op_at(g, i);
    enpu_hasher_i64(&h, (int64_t)search_op_key(job, policy, opt, op));
    enpu_hasher_i64(&h, op->multiplicity);
  }
  for (int s = 0; s < graph_segment_count(g); s++) {
    const graph_segment *seg = graph_segment_at(g, s);
    enpu_hasher_i64(&h, seg->first_op);
    enpu_hasher_i64(&h, seg->op_count);
    enpu_hasher_i64(&h, seg->repeat);
  }
  for (int k = 0; k < job->slack_count; k++) enpu_hasher_f64(&h, job->slacks[k]);
  char note[STORE_MSG_LEN]; /* the bucket's capacity note is part of its result */
  grid_memory_note(&graph_get_info(g)->memory, note, sizeof note);
  enpu_hasher_str(&h, note);
  return enpu_hasher_digest(&h);
}

/* ---------------------------------------------------------------------------------
 * Batch formats */

typedef struct {
  uint32_t kind, job, id, policy, nsets;
  int32_t phase, batch, seq, op_index, part;
  uint64_t key; /* op key, or the bucket's input hash */
} task_hdr;

typedef struct {
  uint32_t job, id, kind;
  double compute_s, cpu_s;
  uint64_t evaluations;
  uint64_t bytes;       /* of the frame that follows */
  uint64_t plain_bytes; /* of the record in it */
  char message[STORE_MSG_LEN];
} result_hdr;

static int buf_put(farm_buf *b, const void *p, size_t n, enpu_err *err) {
  ENPU_RETURN_IF(enpu_grow((void **)&b->data, &b->cap, b->len + n, 1) < 0, err, ENPU_ERR_NOMEM,
                 "out of memory (farm message of %zu bytes)", b->len + n);
  memcpy(b->data + b->len, p, n);
  b->len += n;
  return 0;
}

int farm_task_put_op(farm_buf *b, uint32_t job, uint32_t id, uint32_t policy, uint64_t key, config_phase phase,
                     int batch, int seq, int op_index, int part, enpu_err *err) {
  const task_hdr h = {
      part < 0 ? FARM_TASK_OP : FARM_TASK_PART, job, id, policy, 0, phase, batch, seq, op_index, part, key};
  return buf_put(b, &h, sizeof h, err);
}

int farm_task_put_bucket(farm_buf *b, uint32_t job, uint32_t id, uint32_t policy, uint64_t input_hash,
                         config_phase phase, int batch, int seq, const farm_buf *const *sets, uint32_t nsets,
                         enpu_err *err) {
  const task_hdr h = {FARM_TASK_BUCKET, job, id, policy, nsets, phase, batch, seq, -1, -1, input_hash};
  ENPU_FORWARD(buf_put(b, &h, sizeof h, err));
  for (uint32_t i = 0; i < nsets; i++) {
    const uint64_t bytes = sets[i]->len;
    ENPU_FORWARD(buf_put(b, &bytes, sizeof bytes, err));
    ENPU_FORWARD(buf_put(b, sets[i]->data, sets[i]->len, err));
  }
  return 0;
}

/* A result: its header, the record, then the record's zstd frame (the master reads the
 * one and journals the other, so it neither packs nor unpacks). */
static int result_put(farm_buf *b, const result_hdr *h, const farm_buf *plain, const farm_buf *frame,
                      enpu_err *err) {
  ENPU_FORWARD(buf_put(b, h, sizeof *h, err));
  if (plain && plain->len) ENPU_FORWARD(buf_put(b, plain->data, plain->len, err));
  return frame && frame->len ? buf_put(b, frame->data, frame->len, err) : 0;
}

int farm_result_next(const void *data, size_t len, size_t *off, farm_task_result *r, enpu_err *err) {
  if (*off == len) return 0;
  result_hdr h;
  ENPU_RETURN_IF(len - *off < sizeof h, err, ENPU_ERR_FORMAT, "result batch: truncated header at byte %zu of %zu",
                 *off, len);
  memcpy(&h, (const unsigned char *)data + *off, sizeof h);
  *off += sizeof h;
  ENPU_RETURN_IF(h.kind > FARM_REC_PART || h.plain_bytes > len - *off || h.bytes > len - *off - h.plain_bytes, err,
                 ENPU_ERR_FORMAT, "result batch: record of kind %u and %llu + %llu bytes beyond the %zu-byte batch",
                 h.kind, (unsigned long long)h.plain_bytes, (unsigned long long)h.bytes, len);
  const unsigned char *at = (const unsigned char *)data + *off;
  *r = (farm_task_result){.job = h.job,
                          .id = h.id,
                          .kind = h.kind,
                          .compute_s = h.compute_s,
                          .cpu_s = h.cpu_s,
                          .evaluations = h.evaluations,
                          .payload = at,
                          .plain_bytes = h.plain_bytes,
                          .frame = at + h.plain_bytes,
                          .bytes = h.bytes};
  memcpy(r->message, h.message, sizeof r->message);
  r->message[sizeof r->message - 1] = '\0';
  *off += h.plain_bytes + h.bytes;
  return 1;
}

/* ---------------------------------------------------------------------------------
 * Executor */

enum { GRAPH_CACHE = 8 };

/* One job's executor. cost and search are the contexts of the current task's chip (the
 * job's, or a sweep point's: costs/searches by variant, made on first use). */
typedef struct {
  config_job *job;
  cost_ctx *cost;
  search_ctx *search;
  cost_ctx **costs;
  search_ctx **searches;
  struct {
    config_phase phase;
    int batch, seq;
    graph *g;
    uint64_t used;
  } cache[GRAPH_CACHE];
  uint64_t tick;
} exec_job;

struct farm_exec {
  farm_zframe *z; /* results travel packed, as the journal keeps them */
  farm_buf frame;
  int njobs;       /* set up so far */
  exec_job jobs[]; /* one allocation with the executor: freed with it */
};

static int exec_job_init(exec_job *x, config_files *inputs, const char *job_path, const char *capacity_factor,
                         enpu_err *err) {
  ENPU_FORWARD(config_job_load_from(inputs, job_path, &x->job, err));
  if (capacity_factor) ENPU_FORWARD(config_job_set_capacity_factor(x->job, capacity_factor, err));
  const size_t n = (size_t)x->job->variant_count + 1;
  x->costs = enpu_calloc(n, sizeof *x->costs);
  x->searches = enpu_calloc(n, sizeof *x->searches);
  ENPU_RETURN_IF(!x->costs || !x->searches, err, ENPU_ERR_NOMEM, "out of memory (farm executor)");
  ENPU_FORWARD(cost_ctx_create(&x->job->chip, &x->costs[0], err));
  ENPU_FORWARD(search_ctx_create(&x->job->chip, &x->searches[0], err));
  x->cost = x->costs[0], x->search = x->searches[0];
  return 0;
}

/* Make the contexts of sweep point `variant` (0: the job's chip) current. */
static int exec_use_variant(exec_job *x, int variant, enpu_err *err) {
  ENPU_RETURN_IF(variant < 0 || variant > x->job->variant_count, err, ENPU_ERR_FORMAT,
                 "task: sweep point %d of a job with %d", variant, x->job->variant_count);
  const config_chip *chip = config_job_chip(x->job, variant);
  if (!x->costs[variant]) ENPU_FORWARD(cost_ctx_create(chip, &x->costs[variant], err));
  if (!x->searches[variant]) ENPU_FORWARD(search_ctx_create(chip, &x->searches[variant], err));
  x->cost = x->costs[variant], x->search = x->searches[variant];
  return 0;
}

int farm_exec_create(config_files *inputs, const char *const *job_paths, int njobs, const char *capacity_factor,
                     farm_exec **out, enpu_err *err) {
  ENPU_RETURN_IF(njobs < 0 || njobs > INT_MAX / (int)sizeof(exec_job), err, ENPU_ERR_INVALID,
                 "farm executor: %d jobs", njobs);
  farm_exec *x = enpu_calloc(1, sizeof *x + (size_t)njobs * sizeof x->jobs[0]);
  ENPU_RETURN_IF(!x, err, ENPU_ERR_NOMEM, "out of memory (farm executor)");
  int rc = farm_zframe_create(&x->z, err);
  for (; rc == 0 && x->njobs < njobs; x->njobs++)
    rc = exec_job_init(&x->jobs[x->njobs], inputs, job_paths[x->njobs], capacity_factor, err);
  if (rc == 0) *out = x;
  else farm_exec_free(x);
  return rc;
}

void farm_exec_free(farm_exec *x) {
  if (!x) return;
  for (int j = 0; j < x->njobs; j++) { /* a job that failed half-way too */
    exec_job *e = &x->jobs[j];
    for (int i = 0; i < GRAPH_CACHE; i++) graph_free(e->cache[i].g);
    for (int v = 0; e->job && v <= e->job->variant_count; v++) {
      if (e->searches) search_ctx_free(e->searches[v]);
      if (e->costs) cost_ctx_free(e->costs[v]);
    }
    free(e->searches);
    free(e->costs);
    config_job_free(e->job);
  }
  farm_zframe_free(x->z);
  farm_buf_free(&x->frame);
  free(x);
}

/* The graph of a bucket, built once and kept while it is among the last used. */
static int exec_graph(exec_job *x, config_phase phase, int batch, int seq, const graph **out, enpu_err *err) {
  int slot = 0;
  for (int i = 0; i < GRAPH_CACHE; i++) {
    if (x->cache[i].g && x->cache[i].phase == phase && x->cache[i].batch == batch && x->cache[i].seq == seq) {
      x->cache[i].used = ++x->tick;
      *out = x->cache[i].g;
      return 0;
    }
    if (x->cache[i].used < x->cache[slot].used) slot = i;
  }
  graph *g;
  ENPU_FORWARD(graph_build(x->job, phase, batch, seq, &g, err));
  graph_free(x->cache[slot].g);
  x->cache[slot].phase = phase, x->cache[slot].batch = batch, x->cache[slot].seq = seq;
  x->cache[slot].g = g;
  x->cache[slot].used = ++x->tick;
  *out = g;
  return 0;
}

/* A task's policy and the options the farm compiles it with. */
static int task_policy(exec_job *x, const task_hdr *t, config_policy_spec *spec, search_options *opt,
                       enpu_err *err) {
  ENPU_RETURN_IF(config_policy_spec_decode(t->policy, spec) < 0, err, ENPU_ERR_FORMAT,
                 "task: unknown policy code %u", t->policy);
  search_options_for_job(opt, x->job, spec);
  return exec_use_variant(x, spec->variant, err);
}

/* The op result of one unit's Pareto set: each point's per-slot energy from the cost
 * model (units NULL: `unit` is a graph op). */
static int set_result(exec_job *x, const graph *g, const search_units *units, int unit,
                      const config_policy_spec *spec, const search_options *opt, const search_pareto *p,
                      uint64_t key, farm_op_result *r, enpu_err *err) {
  const graph_op *op = graph_op_at(g, units ? units->unit[unit].op : unit);
  *r = (farm_op_result){.policy = search_op_policy(x->job, spec),
                        .key = key,
                        .kind = units ? (uint32_t)units->unit[unit].kind : (uint32_t)op->kind,
                        .evaluations = (uint64_t)p->evals,
                        .npoints = (uint32_t)p->count};
  if (power_policy_of(spec->base)->ops_per_segment)
    snprintf(r->name, sizeof r->name, "%.20s:%.42s", graph_segment_at(g, op->segment)->name, op->name);
  else snprintf(r->name, sizeof r->name, "%s", units ? units->unit[unit].name : op->name);
  r->points = enpu_calloc((size_t)p->count + 1, sizeof *r->points);
  ENPU_RETURN_IF(!r->points, err, ENPU_ERR_NOMEM, "out of memory (Pareto points)");
  for (int i = 0; i < p->count; i++) {
    store_pareto_rec *q = &r->points[i];
    cost_result cr;
    if (units)
      ENPU_FORWARD(
          search_unit_breakdown(x->search, x->cost, g, units, unit, spec->base, opt, p->points[i].state, &cr, err));
    else ENPU_FORWARD(search_op_breakdown(x->search, x->cost, op, spec->base, opt, p->points[i].state, &cr, err));
    for (int c = 0; c < STORE_NSTATE; c++) q->states[c] = (uint8_t)p->points[i].state[c];
    q->time_ns = p->points[i].time_ns;
    q->energy_nj = p->points[i].energy_nj;
    for (int k = 0; k < STORE_NENERGY; k++) q->energy_by_slot_nj[k] = cr.energy_nj[k];
  }
  return 0;
}

/* An op task, or one part of its exact search (a part record). */
static int run_op(exec_job *x, const task_hdr *t, farm_buf *rec, uint64_t *evals, enpu_err *err) {
  const graph *g;
  ENPU_FORWARD(exec_graph(x, (config_phase)t->phase, t->batch, t->seq, &g, err));
  ENPU_RETURN_IF(t->op_index < 0 || t->op_index >= graph_op_count(g), err, ENPU_ERR_FORMAT,
                 "op task: op %d outside the graph's %d ops", t->op_index, graph_op_count(g));
  const graph_op *op = graph_op_at(g, t->op_index);
  config_policy_spec spec;
  search_options opt;
  ENPU_FORWARD(task_policy(x, t, &spec, &opt, err));
  ENPU_RETURN_IF(search_op_key(x->job, &spec, &opt, op) != t->key, err, ENPU_ERR_INVALID,
                 "op %s: its key differs from the master's (did the job change?)", op->name);
  ENPU_RETURN_IF(t->kind == FARM_TASK_PART && (t->part < 0 || t->part >= SEARCH_EXACT_PARTS), err, ENPU_ERR_FORMAT,
                 "part task: part %d of %d", t->part, SEARCH_EXACT_PARTS);
  search_pareto p;
  ENPU_FORWARD(search_op_compile_part(x->search, x->cost, op, spec.base, &opt,
                                      t->kind == FARM_TASK_PART ? t->part : -1, &p, err));
  farm_op_result r;
  int rc = set_result(x, g, NULL, t->op_index, &spec, &opt, &p, t->key, &r, err);
  if (rc == 0)
    rc = t->kind == FARM_TASK_PART ? farm_part_result_encode((uint32_t)t->part, &r, rec, err)
                                   : farm_op_result_encode(&r, rec, err);
  *evals = r.evaluations;
  search_pareto_free(&p);
  farm_op_result_free(&r);
  return rc;
}

/* ---------------------------------------------------------------------------------
 * Parts: an op's exact search in SEARCH_EXACT_PARTS sub-tasks */

static void rec_point(const store_pareto_rec *q, search_point *p) {
  for (int c = 0; c < CONFIG_NCOMP; c++) p->state[c] = q->states[c];
  p->time_ns = q->time_ns;
  p->energy_nj = q->energy_nj;
}

int farm_merge_parts(const farm_op_result *parts, int n, farm_op_result *out, enpu_err *err) {
  memset(out, 0, sizeof *out);
  search_pareto *sets = enpu_calloc((size_t)n + 1, sizeof *sets), merged = {0};
  int rc = sets ? 0 : enpu_errorf(err, ENPU_ERR_NOMEM, "out of memory (parts)");
  for (int k = 0; rc == 0 && k < n; k++) {
    sets[k].points = enpu_calloc((size_t)parts[k].npoints + 1, sizeof *sets[k].points);
    if (!sets[k].points) rc = enpu_errorf(err, ENPU_ERR_NOMEM, "out of memory (parts)");
    for (uint32_t i = 0; rc == 0 && i < parts[k].npoints; i++) rec_point(&parts[k].points[i], &sets[k].points[i]);
    sets[k].count = (int)parts[k].npoints;
    sets[k].evals = (int64_t)parts[k].evaluations;
  }
  if (rc == 0) rc = search_pareto_merge(sets, n, &merged, err);
  if (rc == 0) {
    *out = parts[0];
    out->evaluations = (uint64_t)merged.evals;
    out->npoints = (uint32_t)merged.count;
    out->points = enpu_calloc((size_t)merged.count + 1, sizeof *out->points);
    if (!out->points) rc = enpu_errorf(err, ENPU_ERR_NOMEM, "out of memory (merged set)");
  }
  /* Each merged point with the record (per-slot energies) of a part that has it. */
  for (int i = 0; rc == 0 && i < merged.count; i++) {
    const store_pareto_rec *found = NULL;
    for (int k = 0; k < n && !found; k++)
      for (uint32_t j = 0; j < parts[k].npoints && !found; j++) {
        search_point q;
        rec_point(&parts[k].points[j], &q);
        if (!memcmp(q.state, merged.points[i].state, sizeof q.state)) found = &parts[k].points[j];
      }
    out->points[i] = *found;
  }
  for (int k = 0; sets && k < n; k++) free(sets[k].points);
  free(sets);
  search_pareto_free(&merged);
  if (rc < 0) farm_op_result_free(out);
  return rc;
}

static int cmp_u64(const void *a, const void *b) {
  const uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
  return (x > y) - (x < y);
}

/* Index of the bundle op with signature `key` (ops ascending; the signature is an op's
 * first member, so cmp_u64 compares the key with it), or -1. */
static long key_index(const store_bundle_op *ops, size_t n, uint64_t key) {
  const store_bundle_op *p = bsearch(&key, ops, n, sizeof *ops, cmp_u64);
  return p ? (long)(p - ops) : -1;
}

typedef struct {
  farm_op_result *res; /* decoded sets sent with the task */
  search_pareto *sets; /* per bucket key */
  int *key_of;         /* per unit */
  uint32_t nres, nsets;
} bucket_scratch;

static void bucket_scratch_free(bucket_scratch *s) {
  for (uint32_t i = 0; s->res && i < s->nres; i++) farm_op_result_free(&s->res[i]);
  for (uint32_t i = 0; s->sets && i < s->nsets; i++) free(s->sets[i].points);
  free(s->res);
  free(s->sets);
  free(s->key_of);
}

/* Decode the sets sent with a bucket task (the batch bytes after its header). */
static int decode_sets(const task_hdr *t, const unsigned char *p, size_t len, size_t *used, bucket_scratch *s,
                       enpu_err *err) {
  s->res = enpu_calloc((size_t)t->nsets + 1, sizeof *s->res);
  ENPU_RETURN_IF(!s->res, err, ENPU_ERR_NOMEM, "out of memory (task sets)");
  size_t off = 0;
  for (; s->nres < t->nsets; s->nres++) {
    uint64_t bytes;
    ENPU_RETURN_IF(len - off < sizeof bytes, err, ENPU_ERR_FORMAT, "bucket task: truncated sets");
    memcpy(&bytes, p + off, sizeof bytes);
    off += sizeof bytes;
    ENPU_RETURN_IF(bytes > len - off, err, ENPU_ERR_FORMAT, "bucket task: set beyond the batch");
    ENPU_FORWARD(farm_op_result_decode(p + off, bytes, &s->res[s->nres], err));
    off += bytes;
  }
  *used = off;
  return 0;
}

/* The bucket's distinct keys (ascending) from its units' keys, each key's instances, and
 * every unit's key index (s->key_of); room for one Pareto set per key. */
static int bucket_keys(const uint64_t *unit_keys, const int64_t *mult, int n, store_bucket_bundle *u,
                       bucket_scratch *s, enpu_err *err) {
  u->ops = enpu_calloc((size_t)n + 1, sizeof *u->ops);
  s->key_of = enpu_calloc((size_t)n + 1, sizeof *s->key_of);
  ENPU_RETURN_IF(!u->ops || !s->key_of, err, ENPU_ERR_NOMEM, "out of memory (bucket ops)");
  for (int i = 0; i < n; i++) u->ops[i].signature = unit_keys[i];
  qsort(u->ops, (size_t)n, sizeof *u->ops, cmp_u64);
  for (int i = 0; i < n; i++)
    if (u->nops == 0 || u->ops[u->nops - 1].signature != u->ops[i].signature) u->ops[u->nops++] = u->ops[i];
  for (int i = 0; i < n; i++) {
    s->key_of[i] = (int)key_index(u->ops, u->nops, unit_keys[i]);
    u->ops[s->key_of[i]].multiplicity += (uint64_t)mult[i];
  }
  s->sets = enpu_calloc(u->nops + 1, sizeof *s->sets);
  ENPU_RETURN_IF(!s->sets, err, ENPU_ERR_NOMEM, "out of memory (bucket sets)");
  s->nsets = u->nops;
  return 0;
}

/* A copy of a Pareto set's points into s->sets[k]. */
static int set_copy(bucket_scratch *s, uint32_t k, const search_point *pts, int n, enpu_err *err) {
  s->sets[k].points = enpu_calloc((size_t)n + 1, sizeof *s->sets[k].points);
  ENPU_RETURN_IF(!s->sets[k].points, err, ENPU_ERR_NOMEM, "out of memory (Pareto set)");
  memcpy(s->sets[k].points, pts, (size_t)n * sizeof *pts);
  s->sets[k].count = n;
  return 0;
}

/* A per-operator policy: the request level over the Pareto sets sent with the task. */
static int bucket_of_ops(exec_job *x, const config_policy_spec *spec, const search_options *opt, const graph *g,
                         bucket_scratch *s, farm_bucket_result *r, search_bucket_result *sr, enpu_err *err) {
  const int nops = graph_op_count(g);
  uint64_t *keys = enpu_calloc((size_t)nops + 1, sizeof *keys);
  int64_t *mult = enpu_calloc((size_t)nops + 1, sizeof *mult);
  const search_pareto **by_op = enpu_calloc((size_t)nops + 1, sizeof *by_op);
  int rc = keys && mult && by_op ? 0 : enpu_errorf(err, ENPU_ERR_NOMEM, "out of memory (bucket ops)");
  for (int i = 0; rc == 0 && i < nops; i++) {
    keys[i] = search_op_key(x->job, spec, opt, graph_op_at(g, i));
    mult[i] = graph_op_at(g, i)->multiplicity;
  }
  if (rc == 0) rc = bucket_keys(keys, mult, nops, &r->bundle, s, err);
  /* Each key's Pareto set from the ones sent (sorted by key, like the bundle's ops). */
  for (uint32_t k = 0; rc == 0 && k < r->bundle.nops; k++) {
    const uint64_t key = r->bundle.ops[k].signature;
    uint32_t j = 0;
    while (j < s->nres && s->res[j].key != key) j++;
    if (j == s->nres) {
      rc = enpu_errorf(err, ENPU_ERR_FORMAT, "bucket task: no Pareto set for op key %016llx",
                       (unsigned long long)key);
      break;
    }
    const farm_op_result *o = &s->res[j];
    search_point *pts = enpu_calloc((size_t)o->npoints + 1, sizeof *pts);
    rc = pts ? 0 : enpu_errorf(err, ENPU_ERR_NOMEM, "out of memory (Pareto set)");
    for (uint32_t q = 0; rc == 0 && q < o->npoints; q++) {
      for (int c = 0; c < CONFIG_NCOMP; c++) pts[q].state[c] = o->points[q].states[c];
      pts[q].time_ns = o->points[q].time_ns;
      pts[q].energy_nj = o->points[q].energy_nj;
    }
    if (rc == 0) rc = set_copy(s, k, pts, (int)o->npoints, err);
    free(pts);
  }
  for (int i = 0; rc == 0 && i < nops; i++) by_op[i] = &s->sets[s->key_of[i]];
  if (rc == 0)
    rc = search_compile_bucket_sets(x->search, x->cost, g, spec->base, by_op, x->job->slacks, x->job->slack_count,
                                    opt, sr, err);
  free(keys);
  free(mult);
  free(by_op);
  return rc;
}

/* An epoch policy: the whole bucket (epochs, their Pareto sets, the request level); the
 * result carries each distinct epoch's op result. */
static int bucket_of_epochs(exec_job *x, const config_policy_spec *spec, const search_options *opt, const graph *g,
                            bucket_scratch *s, farm_bucket_result *r, search_bucket_result *sr, enpu_err *err) {
  ENPU_FORWARD(
      search_compile_bucket(x->search, x->cost, g, spec->base, x->job->slacks, x->job->slack_count, opt, sr, err));
  const search_units *u = sr->units;
  uint64_t *keys = enpu_calloc((size_t)u->count + 1, sizeof *keys);
  int64_t *mult = enpu_calloc((size_t)u->count + 1, sizeof *mult);
  int rc = keys && mult ? 0 : enpu_errorf(err, ENPU_ERR_NOMEM, "out of memory (epochs)");
  for (int i = 0; rc == 0 && i < u->count; i++) {
    keys[i] = search_unit_key(x->job, spec, opt, "enpu-farm-epoch", u->unit[i].signature, -1);
    mult[i] = u->unit[i].multiplicity;
  }
  if (rc == 0) rc = bucket_keys(keys, mult, u->count, &r->bundle, s, err);
  r->units = rc == 0 ? enpu_calloc((size_t)r->bundle.nops + 1, sizeof *r->units) : NULL;
  if (rc == 0 && !r->units) rc = enpu_errorf(err, ENPU_ERR_NOMEM, "out of memory (epochs)");
  for (int i = 0; rc == 0 && i < u->count; i++) {
    const uint32_t k = (uint32_t)s->key_of[i];
    if (s->sets[k].points) continue; /* an epoch seen before */
    const search_pareto *p = &sr->unit_sets[i];
    rc = set_copy(s, k, p->points, p->count, err);
    if (rc == 0) rc = set_result(x, g, u, i, spec, opt, p, r->bundle.ops[k].signature, &r->units[k], err);
    if (rc == 0) r->nunits++;
  }
  free(keys);
  free(mult);
  return rc;
}

static int run_bucket(exec_job *x, const task_hdr *t, bucket_scratch *s, farm_buf *rec, enpu_err *err) {
  const graph *g;
  ENPU_FORWARD(exec_graph(x, (config_phase)t->phase, t->batch, t->seq, &g, err));
  config_policy_spec spec;
  search_options opt;
  ENPU_FORWARD(task_policy(x, t, &spec, &opt, err));
  ENPU_RETURN_IF(farm_bucket_input_hash(x->job, &spec, &opt, g) != t->key, err, ENPU_ERR_INVALID,
                 "its input hash differs from the master's (did the job change?)");
  farm_bucket_result r = {.policy = t->policy};
  search_bucket_result sr = {0};
  int rc = power_policy_of(spec.base)->epoch ? bucket_of_epochs(x, &spec, &opt, g, s, &r, &sr, err)
                                             : bucket_of_ops(x, &spec, &opt, g, s, &r, &sr, err);
  if (rc == 0) {
    const farm_convert_in in = {&sr, s->sets, s->key_of, g, t->phase, t->batch, t->seq, t->key};
    rc = farm_convert_bucket(&in, &r.bundle, err);
  }
  if (rc == 0) rc = farm_bucket_result_encode(&r, rec, err);
  search_bucket_result_free(&sr);
  farm_bucket_result_free(&r);
  return rc;
}

/* CPU seconds of the calling thread: a task's cost on a shared machine, where its wall
 * time also counts the other processes. */
static double thread_cpu_s(void) {
  struct timespec ts;
  return clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts) == 0 ? (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec : 0.0;
}

int farm_exec_batch(farm_exec *x, const void *tasks, size_t bytes, farm_buf *out, enpu_err *err) {
  const unsigned char *p = tasks;
  size_t off = 0;
  farm_buf rec = {0};
  int rc = 0;
  while (rc == 0 && off < bytes) {
    task_hdr t;
    if (bytes - off < sizeof t) {
      rc = enpu_errorf(err, ENPU_ERR_FORMAT, "task batch: truncated at byte %zu of %zu", off, bytes);
      break;
    }
    memcpy(&t, p + off, sizeof t);
    off += sizeof t;
    config_policy_spec spec;
    if (t.kind < FARM_TASK_OP || t.kind > FARM_TASK_PART || config_policy_spec_decode(t.policy, &spec) < 0 ||
        (t.phase != CONFIG_PREFILL && t.phase != CONFIG_DECODE) || t.job >= (uint32_t)x->njobs) {
      rc = enpu_errorf(err, ENPU_ERR_FORMAT, "task batch: bad task (kind %u, policy %u, phase %d, job %u of %d)",
                       t.kind, t.policy, t.phase, t.job, x->njobs);
      break;
    }
    exec_job *xj = &x->jobs[t.job];
    bucket_scratch sc = {0};
    size_t used = 0;
    if (t.kind == FARM_TASK_BUCKET) {
      rc = decode_sets(&t, p + off, bytes - off, &used, &sc, err);
      off += used;
    }
    enpu_err terr = {0};
    result_hdr h = {.job = t.job, .id = t.id};
    rec.len = 0;
    const double t0 = enpu_now_s(), c0 = thread_cpu_s();
    int trc = 0;
    if (rc == 0)
      trc = t.kind == FARM_TASK_BUCKET ? run_bucket(xj, &t, &sc, &rec, &terr)
                                       : run_op(xj, &t, &rec, &h.evaluations, &terr);
    h.compute_s = enpu_now_s() - t0;
    h.cpu_s = thread_cpu_s() - c0;
    bucket_scratch_free(&sc);
    if (rc < 0) break;
    static const uint32_t rec_kind[] = {0, FARM_REC_OP, FARM_REC_BUCKET, FARM_REC_PART};
    if (trc == 0) trc = farm_zframe_pack(x->z, rec.data, rec.len, &x->frame, &terr);
    h.kind = trc < 0 ? FARM_RES_FAILED : rec_kind[t.kind];
    h.plain_bytes = trc < 0 ? 0 : rec.len;
    h.bytes = trc < 0 ? 0 : x->frame.len;
    if (trc < 0) snprintf(h.message, sizeof h.message, "%.*s", (int)sizeof h.message - 1, terr.msg);
    rc = trc < 0 ? result_put(out, &h, NULL, NULL, err) : result_put(out, &h, &rec, &x->frame, err);
  }
  farm_buf_free(&rec);
  return rc;
}
