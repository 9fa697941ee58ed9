/* farm_task.c — what a farm task computes and how tasks and results travel as bytes:
 * the op key and bucket input hash, the task/result batch format, and the executor that
 * runs an `op` task (Pareto search of one signature plus each point's per-slot energy)
 * or a `bucket` task (request walk and slack plans from the Pareto sets sent with it).
 *
 * Invariants:
 *  - A bucket result's walk is the search walk with its steps split at every slack
 *    plan's instance-move count, so each plan is a whole-step prefix (plans.walk_prefix
 *    counts steps). Steps of graph ops that share a key become steps of that key; the
 *    conversion replays them as the store reader does (instances on at most a lead and a
 *    trail point) and fails the task rather than write a walk the reader would reject.
 *  - plan_states are runs: per plan, per distinct op of the bucket (op_keys order), one
 *    row per run of its instances (layer order) on one Pareto point — two at most for a
 *    walk prefix (lead, then trail), one per GA gene at most for a GA plan; states that
 *    are no Pareto point of the op (rail lifting, the all-peak fallback) have pareto
 *    STORE_NO_INDEX. A plan that is no walk prefix has walk_prefix STORE_NO_PREFIX.
 *  - Fixed-layout headers are copied with memcpy: both ends are the same binary. */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cost.h"
#include "farm_task_internal.h"

/* ---------------------------------------------------------------------------------
 * Keys */

void farm_search_options(const config_job *job, search_options *opt) {
  search_options_default(opt);
  opt->budget = job->budget;
}

static void hash_options(enpu_hasher *h, const config_job *job, const search_options *opt) {
  enpu_hasher_i64(h, (int64_t)job->chip.hash);
  enpu_hasher_str(h, COST_MODEL_VERSION);
  /* Every option that changes a Pareto set or a plan (threads only change speed). */
  enpu_hasher_i64(h, opt->request);
  enpu_hasher_i64(h, opt->enpu_domains);
  enpu_hasher_f64(h, opt->walk_cap_slack);
  enpu_hasher_i64(h, opt->ga.population);
  enpu_hasher_i64(h, opt->ga.generations);
  enpu_hasher_i64(h, (int64_t)opt->ga.rng_seed);
  enpu_hasher_i64(h, opt->ga_groups);
  enpu_hasher_i64(h, opt->ideal_method);
  enpu_hasher_i64(h, opt->op_trim);
  enpu_hasher_i64(h, opt->transition_aware);
  enpu_hasher_i64(h, opt->budget);
  enpu_hasher_i64(h, opt->transitions);
}

uint64_t farm_op_key(const config_job *job, config_policy policy, const search_options *opt,
                     const graph_op *op) {
  enpu_hasher h;
  enpu_hasher_init(&h, 0);
  enpu_hasher_str(&h, "enpu-farm-op");
  enpu_hasher_i64(&h, (int64_t)op->signature);
  enpu_hasher_i64(&h, policy);
  /* uniform keeps an op's instances apart per segment (embedding, layer kinds, head), so
   * a reader can rebuild a pass of fewer layers from its ops (planstore.md). */
  if (policy == CONFIG_POLICY_UNIFORM) enpu_hasher_i64(&h, op->segment);
  hash_options(&h, job, opt);
  return enpu_hasher_digest(&h);
}

uint64_t farm_bucket_input_hash(const config_job *job, config_policy policy,
                                const search_options *opt, const graph *g) {
  enpu_hasher h;
  enpu_hasher_init(&h, 0);
  enpu_hasher_str(&h, "enpu-farm-bucket");
  enpu_hasher_i64(&h, policy);
  hash_options(&h, job, opt);
  for (int i = 0; i < graph_op_count(g); i++) {
    const graph_op *op = graph_op_at(g, i);
    enpu_hasher_i64(&h, (int64_t)farm_op_key(job, policy, opt, op));
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

int farm_task_put_op(farm_buf *b, uint32_t job, uint32_t id, config_policy policy, uint64_t key,
                     config_phase phase, int batch, int seq, int op_index, int part,
                     enpu_err *err) {
  const task_hdr h = {part < 0 ? FARM_TASK_OP : FARM_TASK_PART, job, id, policy, 0, phase, batch,
                      seq, op_index, part, key};
  return buf_put(b, &h, sizeof h, err);
}

int farm_task_put_bucket(farm_buf *b, uint32_t job, uint32_t id, config_policy policy,
                         uint64_t input_hash, config_phase phase, int batch, int seq,
                         const farm_buf *const *sets, uint32_t nsets, enpu_err *err) {
  const task_hdr h = {FARM_TASK_BUCKET, job, id, policy, nsets, phase, batch, seq, -1, -1,
                      input_hash};
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
static int result_put(farm_buf *b, const result_hdr *h, const farm_buf *plain,
                      const farm_buf *frame, enpu_err *err) {
  ENPU_FORWARD(buf_put(b, h, sizeof *h, err));
  if (plain && plain->len) ENPU_FORWARD(buf_put(b, plain->data, plain->len, err));
  return frame && frame->len ? buf_put(b, frame->data, frame->len, err) : 0;
}

int farm_result_next(const void *data, size_t len, size_t *off, farm_task_result *r,
                     enpu_err *err) {
  if (*off == len) return 0;
  result_hdr h;
  ENPU_RETURN_IF(len - *off < sizeof h, err, ENPU_ERR_FORMAT,
                 "result batch: truncated header at byte %zu of %zu", *off, len);
  memcpy(&h, (const unsigned char *)data + *off, sizeof h);
  *off += sizeof h;
  ENPU_RETURN_IF(h.kind > FARM_REC_PART || h.plain_bytes > len - *off ||
                     h.bytes > len - *off - h.plain_bytes,
                 err, ENPU_ERR_FORMAT,
                 "result batch: record of kind %u and %llu + %llu bytes beyond the %zu-byte batch",
                 h.kind, (unsigned long long)h.plain_bytes, (unsigned long long)h.bytes, len);
  const unsigned char *at = (const unsigned char *)data + *off;
  *r = (farm_task_result){.job = h.job, .id = h.id, .kind = h.kind, .compute_s = h.compute_s,
                          .cpu_s = h.cpu_s, .evaluations = h.evaluations, .payload = at,
                          .plain_bytes = h.plain_bytes, .frame = at + h.plain_bytes,
                          .bytes = h.bytes};
  memcpy(r->message, h.message, sizeof r->message);
  r->message[sizeof r->message - 1] = '\0';
  *off += h.plain_bytes + h.bytes;
  return 1;
}

/* ---------------------------------------------------------------------------------
 * Executor */

enum { GRAPH_CACHE = 8 };

/* One job's executor. */
typedef struct {
  config_job *job;
  cost_ctx *cost;
  search_ctx *search;
  search_options opt;
  struct {
    config_phase phase;
    int batch, seq;
    graph *g;
    uint64_t used;
  } cache[GRAPH_CACHE];
  uint64_t tick;
} exec_job;

struct farm_exec {
  exec_job *jobs;
  int njobs;
  farm_zframe *z;  /* results travel packed, as the journal keeps them */
  farm_buf frame;
};

static int exec_job_init(exec_job *x, const char *job_path, const char *capacity_factor,
                         enpu_err *err) {
  ENPU_FORWARD(config_job_load(job_path, &x->job, err));
  if (capacity_factor) ENPU_FORWARD(config_job_set_capacity_factor(x->job, capacity_factor, err));
  farm_search_options(x->job, &x->opt);
  ENPU_FORWARD(cost_ctx_create(&x->job->chip, &x->cost, err));
  return search_ctx_create(&x->job->chip, &x->search, err);
}

int farm_exec_create(const char *const *job_paths, int njobs, const char *capacity_factor,
                     farm_exec **out, enpu_err *err) {
  farm_exec *x = enpu_calloc(1, sizeof *x);
  ENPU_RETURN_IF(!x, err, ENPU_ERR_NOMEM, "out of memory (farm executor)");
  x->jobs = enpu_calloc((size_t)njobs + 1, sizeof *x->jobs);
  int rc = x->jobs ? farm_zframe_create(&x->z, err)
                   : enpu_errorf(err, ENPU_ERR_NOMEM, "out of memory (farm executor)");
  while (rc == 0 && x->njobs < njobs) {
    rc = exec_job_init(&x->jobs[x->njobs], job_paths[x->njobs], capacity_factor, err);
    x->njobs++;
  }
  if (rc < 0) {
    farm_exec_free(x);
    return rc;
  }
  *out = x;
  return 0;
}

void farm_exec_free(farm_exec *x) {
  if (!x) return;
  for (int j = 0; x->jobs && j < x->njobs; j++) { /* a job that failed half-way too */
    exec_job *e = &x->jobs[j];
    for (int i = 0; i < GRAPH_CACHE; i++) graph_free(e->cache[i].g);
    search_ctx_free(e->search);
    cost_ctx_free(e->cost);
    config_job_free(e->job);
  }
  free(x->jobs);
  farm_zframe_free(x->z);
  farm_buf_free(&x->frame);
  free(x);
}

/* The graph of a bucket, built once and kept while it is among the last used. */
static int exec_graph(exec_job *x, config_phase phase, int batch, int seq, const graph **out,
                      enpu_err *err) {
  int slot = 0;
  for (int i = 0; i < GRAPH_CACHE; i++) {
    if (x->cache[i].g && x->cache[i].phase == phase && x->cache[i].batch == batch &&
        x->cache[i].seq == seq) {
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

/* An op task, or one part of its exact search (a part record). */
static int run_op(exec_job *x, const task_hdr *t, farm_buf *rec, uint64_t *evals,
                  enpu_err *err) {
  const graph *g;
  ENPU_FORWARD(exec_graph(x, (config_phase)t->phase, t->batch, t->seq, &g, err));
  ENPU_RETURN_IF(t->op_index < 0 || t->op_index >= graph_op_count(g), err, ENPU_ERR_FORMAT,
                 "op task: op %d outside the graph's %d ops", t->op_index, graph_op_count(g));
  const graph_op *op = graph_op_at(g, t->op_index);
  const config_policy policy = (config_policy)t->policy;
  ENPU_RETURN_IF(farm_op_key(x->job, policy, &x->opt, op) != t->key, err, ENPU_ERR_INVALID,
                 "op %s: its key differs from the master's (did the job change?)", op->name);
  ENPU_RETURN_IF(t->kind == FARM_TASK_PART && (t->part < 0 || t->part >= SEARCH_EXACT_PARTS), err,
                 ENPU_ERR_FORMAT, "part task: part %d of %d", t->part, SEARCH_EXACT_PARTS);
  search_pareto p;
  ENPU_FORWARD(search_op_compile_part(x->search, x->cost, op, policy, &x->opt,
                                      t->kind == FARM_TASK_PART ? t->part : -1, &p, err));
  farm_op_result r = {.policy = t->policy, .key = t->key, .kind = op->kind,
                      .evaluations = (uint64_t)p.evals, .npoints = (uint32_t)p.count};
  if (policy == CONFIG_POLICY_UNIFORM)
    snprintf(r.name, sizeof r.name, "%.20s:%.42s", graph_segment_at(g, op->segment)->name, op->name);
  else
    snprintf(r.name, sizeof r.name, "%s", op->name);
  r.points = enpu_calloc((size_t)p.count, sizeof *r.points);
  int rc = r.points ? 0 : enpu_errorf(err, ENPU_ERR_NOMEM, "out of memory (Pareto points)");
  for (int i = 0; rc == 0 && i < p.count; i++) {
    store_pareto_rec *q = &r.points[i];
    cost_result cr;
    rc = search_op_breakdown(x->search, x->cost, op, policy, &x->opt, p.points[i].state, &cr, err);
    for (int c = 0; c < STORE_NSTATE; c++) q->states[c] = (uint8_t)p.points[i].state[c];
    q->time_ns = p.points[i].time_ns;
    q->energy_nj = p.points[i].energy_nj;
    for (int s = 0; s < STORE_NENERGY; s++) q->energy_by_slot_nj[s] = cr.energy_nj[s];
  }
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

/* ---------------------------------------------------------------------------------
 * Bucket: search result → farm_bucket_result */

typedef struct {
  uint32_t lead, trail;
  uint64_t lead_instances;
} op_pos;

/* Apply one walk step to an op's position as the store reader does; 0 or -1 when the
 * reader would reject the step. */
static int pos_step(op_pos *p, uint64_t instances, uint32_t to, uint64_t mult) {
  if (to == p->lead && p->lead != p->trail) {
    if (instances > mult - p->lead_instances) return -1;
    p->lead_instances += instances;
    return 0;
  }
  if (p->lead_instances != mult || to <= p->lead || instances > mult) return -1;
  p->trail = p->lead, p->lead = to, p->lead_instances = instances;
  return 0;
}

typedef struct {
  const search_bucket_result *sr;
  const search_pareto *sets; /* per key */
  const int *key_of;         /* per graph op */
  const graph *g;
} convert_in;

static int cmp_i64(const void *a, const void *b) {
  const int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
  return (x > y) - (x < y);
}

/* The walk, split at the plans' move counts; plans[k].walk_prefix set. */
static int convert_walk(const convert_in *in, farm_bucket_result *r, enpu_err *err) {
  const search_walk *w = in->sr->walk;
  const int nsteps = search_walk_step_count(w);
  int64_t *cuts = enpu_calloc((size_t)in->sr->nplans + 1, sizeof *cuts);
  r->walk = enpu_calloc((size_t)nsteps + (size_t)in->sr->nplans + 1, sizeof *r->walk);
  ENPU_RETURN_IF(!cuts || !r->walk, err, (free(cuts), ENPU_ERR_NOMEM), "out of memory (walk)");
  int ncut = 0;
  for (int k = 0; k < in->sr->nplans; k++)
    if (in->sr->plans[k].walk_moves > 0) cuts[ncut++] = in->sr->plans[k].walk_moves;
  qsort(cuts, (size_t)ncut, sizeof *cuts, cmp_i64);
  int c = 0;
  for (int s = 0; s < nsteps; s++) {
    const search_walk_step *st = search_walk_step_at(w, s);
    const double t0 = st->time_ns - (double)st->count * st->dtime_ns;
    const double e0 = st->energy_nj - (double)st->count * st->denergy_nj;
    int64_t done = 0;
    while (done < st->count) {
      while (c < ncut && cuts[c] <= st->moves_before + done) c++;
      const int64_t end = c < ncut && cuts[c] < st->moves_before + st->count
                              ? cuts[c] - st->moves_before
                              : st->count;
      store_walk_rec *o = &r->walk[r->nwalk++];
      o->op = (uint32_t)in->key_of[st->op];
      o->pareto = (uint32_t)st->to;
      o->instances = (uint64_t)(end - done);
      o->time_ns = end == st->count ? st->time_ns : t0 + (double)end * st->dtime_ns;
      o->energy_nj = end == st->count ? st->energy_nj : e0 + (double)end * st->denergy_nj;
      done = end;
    }
  }
  free(cuts);
  /* Each plan's prefix in (split) steps: the steps whose moves all came before it. */
  for (uint32_t k = 0; k < r->nplans; k++) {
    const int64_t m = in->sr->plans[k].walk_moves;
    if (m < 0) {
      r->plans[k].walk_prefix = STORE_NO_PREFIX;
      continue;
    }
    int64_t moves = 0;
    uint64_t n = 0;
    while (m > 0 && n < r->nwalk && moves + (int64_t)r->walk[n].instances <= m)
      moves += (int64_t)r->walk[n++].instances;
    ENPU_RETURN_IF(m > 0 && moves != m, err, ENPU_ERR_INTERNAL,
                   "plan %u: %lld walk moves fall inside a step", k, (long long)m);
    r->plans[k].walk_prefix = n;
  }
  return 0;
}

/* The whole walk replayed as the store reader replays it (lead/trail moves per key). */
static int check_walk_rule(const farm_bucket_result *r, enpu_err *err) {
  op_pos *pos = enpu_calloc(r->nops + 1, sizeof *pos);
  ENPU_RETURN_IF(!pos, err, ENPU_ERR_NOMEM, "out of memory (walk check)");
  for (uint32_t i = 0; i < r->nops; i++) pos[i] = (op_pos){0, 0, r->multiplicity[i]};
  int rc = 0;
  for (uint64_t s = 0; s < r->nwalk && rc == 0; s++) {
    const store_walk_rec *w = &r->walk[s];
    if (pos_step(&pos[w->op], w->instances, w->pareto, r->multiplicity[w->op]) < 0)
      rc = enpu_errorf(err, ENPU_ERR_INTERNAL,
                       "walk step %llu of op key %016llx cannot be stored as lead/trail moves",
                       (unsigned long long)s, (unsigned long long)r->op_keys[w->op]);
  }
  free(pos);
  return rc;
}

/* The Pareto point of `set` with these states, or STORE_NO_INDEX. */
static uint32_t point_of(const search_pareto *set, const int state[CONFIG_NCOMP]) {
  for (int q = 0; q < set->count; q++)
    if (!memcmp(set->points[q].state, state, sizeof set->points[q].state)) return (uint32_t)q;
  return STORE_NO_INDEX;
}

/* Append instance `st` of key i to plan k's runs (a new row unless it extends the last). */
static void push_run(farm_bucket_result *r, uint32_t k, uint32_t i, const search_pareto *set,
                     const int st[CONFIG_NCOMP]) {
  uint8_t st8[STORE_NSTATE];
  for (int c = 0; c < STORE_NSTATE; c++) st8[c] = (uint8_t)st[c];
  const uint32_t pt = point_of(set, st);
  store_plan_state_rec *last = r->nstates ? &r->states[r->nstates - 1] : NULL;
  if (last && last->plan == k && last->op == i && last->pareto == pt &&
      !memcmp(last->states, st8, STORE_NSTATE)) {
    last->instances++;
    return;
  }
  store_plan_state_rec *o = &r->states[r->nstates++];
  *o = (store_plan_state_rec){.plan = k, .op = i, .pareto = pt, .instances = 1};
  memcpy(o->states, st8, STORE_NSTATE);
}

/* Plan states of every plan (see the file comment), from each plan's per-instance states;
 * and the reader's walk rule checked on the whole walk. */
static int convert_states(const convert_in *in, farm_bucket_result *r, enpu_err *err) {
  ENPU_FORWARD(check_walk_rule(r, err));
  const graph *g = in->g;
  const int nops = graph_op_count(g);
  const int64_t instances = in->sr->nplans ? in->sr->plans[0].instances : 0;
  int(*walk)[CONFIG_NCOMP] = enpu_calloc((size_t)instances + 1, sizeof *walk);
  int64_t *offset = enpu_calloc((size_t)nops + 1, sizeof *offset); /* op i's first instance */
  uint64_t runs = 0;
  for (int k = 0; k < in->sr->nplans; k++) runs += (uint64_t)in->sr->plans[k].instances;
  r->states = enpu_calloc(runs + 1, sizeof *r->states);
  ENPU_RETURN_IF(!walk || !offset || !r->states, err, (free(walk), free(offset), ENPU_ERR_NOMEM),
                 "out of memory (states)");
  for (int i = 1; i <= nops; i++) offset[i] = offset[i - 1] + graph_op_at(g, i - 1)->multiplicity;
  for (uint32_t k = 0; k < r->nplans; k++) {
    /* Instance l of op i (layer-major: layer · count + copy) as the walk numbers it. */
    search_states_by_walk(g, (const int(*)[CONFIG_NCOMP])in->sr->plans[k].state, walk);
    r->plans[k].states_first = r->nstates;
    for (uint32_t key = 0; key < r->nops; key++)
      for (int i = 0; i < nops; i++)
        for (int64_t l = 0; (uint32_t)in->key_of[i] == key && l < offset[i + 1] - offset[i]; l++)
          push_run(r, k, key, &in->sets[key], walk[offset[i] + l]);
    r->plans[k].states_count = r->nstates - r->plans[k].states_first;
  }
  free(walk);
  free(offset);
  return 0;
}

static int convert_bucket(const convert_in *in, const task_hdr *t, farm_bucket_result *r,
                          enpu_err *err) {
  const search_bucket_result *sr = in->sr;
  r->policy = t->policy;
  store_bucket_rec *b = &r->bucket;
  b->phase = (uint8_t)t->phase, b->status = STORE_BUCKET_OK, b->input_hash = t->key;
  b->budget = (uint8_t)sr->budget;
  b->batch = t->batch, b->seq = t->seq;
  /* A compiled bucket that does not fit HBM (capacity offload or ignore) says so. */
  grid_memory_note(&graph_get_info(in->g)->memory, b->message, sizeof b->message);
  b->t_nodvfs_ns = sr->t_nodvfs_ns, b->t_peak_ns = sr->t_peak_ns, b->e_nodvfs_nj = sr->e_nodvfs_nj;
  b->walk_start_time_ns = search_walk_start_time_ns(sr->walk);
  b->walk_start_energy_nj = search_walk_start_energy_nj(sr->walk);
  r->nplans = (uint32_t)sr->nplans;
  r->plans = enpu_calloc((size_t)sr->nplans, sizeof *r->plans);
  ENPU_RETURN_IF(!r->plans, err, ENPU_ERR_NOMEM, "out of memory (plans)");
  for (int k = 0; k < sr->nplans; k++) {
    const search_slack_plan *p = &sr->plans[k];
    r->plans[k] = (store_plan_rec){.budget = (uint8_t)p->budget, .slack = p->slack,
                                   .budget_ns = p->budget_ns, .time_ns = p->time_ns,
                                   .energy_nj = p->energy_nj, .cp_time_ns = p->cp_time_ns,
                                   .overhead_pct = p->overhead_pct,
                                   .lower_bound_nj = p->lower_bound_nj,
                                   .savings_vs_nodvfs = p->savings_vs_nodvfs};
  }
  ENPU_FORWARD(convert_walk(in, r, err));
  return convert_states(in, r, err);
}

static int cmp_u64(const void *a, const void *b) {
  const uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
  return (x > y) - (x < y);
}

static long key_index(const uint64_t *keys, size_t n, uint64_t key) {
  const uint64_t *p = bsearch(&key, keys, n, sizeof *keys, cmp_u64);
  return p ? (long)(p - keys) : -1;
}

typedef struct {
  farm_op_result *res; /* decoded sets sent with the task */
  search_pareto *sets; /* per bucket key */
  int *key_of;         /* per graph op */
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
static int decode_sets(const task_hdr *t, const unsigned char *p, size_t len, size_t *used,
                       bucket_scratch *s, enpu_err *err) {
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

static int run_bucket(exec_job *x, const task_hdr *t, bucket_scratch *s, farm_buf *rec,
                      enpu_err *err) {
  const graph *g;
  ENPU_FORWARD(exec_graph(x, (config_phase)t->phase, t->batch, t->seq, &g, err));
  const config_policy policy = (config_policy)t->policy;
  ENPU_RETURN_IF(farm_bucket_input_hash(x->job, policy, &x->opt, g) != t->key, err,
                 ENPU_ERR_INVALID, "its input hash differs from the master's (did the job change?)");
  const int nops = graph_op_count(g);
  farm_bucket_result r = {0};
  r.op_keys = enpu_calloc((size_t)nops, sizeof *r.op_keys);
  r.multiplicity = enpu_calloc((size_t)nops, sizeof *r.multiplicity);
  s->key_of = enpu_calloc((size_t)nops, sizeof *s->key_of);
  const search_pareto **by_op = enpu_calloc((size_t)nops, sizeof *by_op);
  int rc = r.op_keys && r.multiplicity && s->key_of && by_op
               ? 0
               : enpu_errorf(err, ENPU_ERR_NOMEM, "out of memory (bucket ops)");
  for (int i = 0; rc == 0 && i < nops; i++)
    r.op_keys[i] = farm_op_key(x->job, policy, &x->opt, graph_op_at(g, i));
  if (rc == 0) {
    qsort(r.op_keys, (size_t)nops, sizeof *r.op_keys, cmp_u64);
    for (int i = 0; i < nops; i++)
      if (r.nops == 0 || r.op_keys[r.nops - 1] != r.op_keys[i]) r.op_keys[r.nops++] = r.op_keys[i];
    s->sets = enpu_calloc(r.nops, sizeof *s->sets);
    s->nsets = s->sets ? r.nops : 0;
    if (!s->sets) rc = enpu_errorf(err, ENPU_ERR_NOMEM, "out of memory (bucket sets)");
  }
  /* Each key's Pareto set from the ones sent (sorted by key, like op_keys). */
  for (uint32_t k = 0; rc == 0 && k < r.nops; k++) {
    uint32_t j = 0;
    while (j < s->nres && s->res[j].key != r.op_keys[k]) j++;
    if (j == s->nres) {
      rc = enpu_errorf(err, ENPU_ERR_FORMAT, "bucket task: no Pareto set for op key %016llx",
                       (unsigned long long)r.op_keys[k]);
      break;
    }
    const farm_op_result *o = &s->res[j];
    s->sets[k].points = enpu_calloc(o->npoints, sizeof *s->sets[k].points);
    if (!s->sets[k].points) {
      rc = enpu_errorf(err, ENPU_ERR_NOMEM, "out of memory (Pareto set)");
      break;
    }
    s->sets[k].count = (int)o->npoints;
    for (uint32_t q = 0; q < o->npoints; q++) {
      search_point *sp = &s->sets[k].points[q];
      for (int c = 0; c < CONFIG_NCOMP; c++) sp->state[c] = o->points[q].states[c];
      sp->time_ns = o->points[q].time_ns;
      sp->energy_nj = o->points[q].energy_nj;
    }
  }
  for (int i = 0; rc == 0 && i < nops; i++) {
    const graph_op *op = graph_op_at(g, i);
    s->key_of[i] = (int)key_index(r.op_keys, r.nops, farm_op_key(x->job, policy, &x->opt, op));
    r.multiplicity[s->key_of[i]] += (uint64_t)op->multiplicity;
    by_op[i] = &s->sets[s->key_of[i]];
  }
  search_bucket_result sr = {0};
  if (rc == 0)
    rc = search_compile_bucket_sets(x->search, x->cost, g, policy, by_op, x->job->slacks,
                                    x->job->slack_count, &x->opt, &sr, err);
  if (rc == 0) {
    const convert_in in = {&sr, s->sets, s->key_of, g};
    rc = convert_bucket(&in, t, &r, err);
  }
  if (rc == 0) rc = farm_bucket_result_encode(&r, rec, err);
  search_bucket_result_free(&sr);
  farm_bucket_result_free(&r);
  free(by_op);
  return rc;
}

/* CPU seconds of this thread: a task's own cost, whatever else shares the core. */
static double thread_cpu_s(void) {
  struct timespec ts;
  return clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts) == 0 ? (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec : 0;
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
    if (t.kind < FARM_TASK_OP || t.kind > FARM_TASK_PART || t.policy >= CONFIG_NPOLICY ||
        (t.phase != CONFIG_PREFILL && t.phase != CONFIG_DECODE) || t.job >= (uint32_t)x->njobs) {
      rc = enpu_errorf(err, ENPU_ERR_FORMAT,
                       "task batch: bad task (kind %u, policy %u, phase %d, job %u of %d)", t.kind,
                       t.policy, t.phase, t.job, x->njobs);
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
    h.kind = trc < 0 ? FARM_RES_FAILED : rec_kind[t.kind];
    if (trc == 0) trc = farm_zframe_pack(x->z, rec.data, rec.len, &x->frame, &terr);
    if (trc < 0) h.kind = FARM_RES_FAILED;
    h.plain_bytes = trc < 0 ? 0 : rec.len;
    h.bytes = trc < 0 ? 0 : x->frame.len;
    if (trc < 0) snprintf(h.message, sizeof h.message, "%.*s", (int)sizeof h.message - 1, terr.msg);
    rc = trc < 0 ? result_put(out, &h, NULL, NULL, err) : result_put(out, &h, &rec, &x->frame, err);
  }
  farm_buf_free(&rec);
  return rc;
}
