/* farm_plan.c — one job's task graph (farm_plan_internal.h): buckets and their graphs,
 * unique ops and their parts, bucket tasks and the edges between them, the wanted set,
 * what a state already holds, the queue. Pure code: the job and the state are handed in,
 * nothing is read or written here.
 *
 * Invariants: see farm_plan_internal.h. */
#include <jansson.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "farm_plan_internal.h"
#include "grid.h"

/* ---------------------------------------------------------------------------------
 * The plan: buckets, unique ops, parts, bucket tasks */

static int cmp_bucket(const void *pa, const void *pb) {
  const mbucket *a = pa, *b = pb;
  const int phase = ENPU_ORDER(a->phase, b->phase), batch = ENPU_ORDER(a->batch, b->batch);
  return phase ? phase : batch ? batch : ENPU_ORDER(a->seq, b->seq);
}

static int add_bucket(farm_plan *m, size_t *cap, config_phase phase, int batch, int seq, enpu_err *err) {
  ENPU_RETURN_IF(enpu_grow((void **)&m->buckets, cap, (size_t)m->nbuckets + 1, sizeof *m->buckets) < 0, err,
                 ENPU_ERR_NOMEM, "out of memory (buckets)");
  m->buckets[m->nbuckets++] = (mbucket){.phase = phase, .batch = batch, .seq = seq};
  return 0;
}

/* What the plan's buckets come from besides the grid. */
typedef struct {
  const farm_bucket_spec *add;
  int nadd;
  char **added_json; /* in: the previous store's added buckets; out: this plan's */
  const char *where; /* the store, in messages */
} bucket_inputs;

/* Added buckets: those recorded in the previous store, then --add-buckets. */
static int collect_added(farm_plan *m, size_t *cap, const bucket_inputs *in, enpu_err *err) {
  json_error_t je;
  json_t *arr = *in->added_json ? json_loads(*in->added_json, 0, &je) : json_array();
  ENPU_RETURN_IF(!json_is_array(arr), err, (json_decref(arr), ENPU_ERR_FORMAT),
                 "%s: attribute added_buckets_json is not a JSON array", in->where);
  size_t i;
  json_t *v;
  int rc = 0;
  json_array_foreach(arr, i, v) {
    const char *ph = NULL;
    int batch = 0, seq = 0;
    config_phase phase;
    if (json_unpack(v, "{s:s, s:i, s:i}", "phase", &ph, "batch", &batch, "seq", &seq) < 0 ||
        config_phase_parse(ph, &phase) < 0) {
      rc = enpu_errorf(err, ENPU_ERR_FORMAT, "%s: added_buckets_json[%zu] is not a bucket", in->where, i);
      break;
    }
    rc = add_bucket(m, cap, phase, batch, seq, err);
    if (rc < 0) break;
  }
  json_decref(arr);
  for (int k = 0; rc == 0 && k < in->nadd; k++)
    rc = add_bucket(m, cap, in->add[k].phase, in->add[k].batch, in->add[k].seq, err);
  return rc;
}

/* Added buckets [first, nbuckets) outside the grid, validated like the grid's. */
static int check_added(const farm_plan *m, const grid *gr, int first, enpu_err *err) {
  for (int i = first; i < m->nbuckets; i++) {
    const mbucket *b = &m->buckets[i];
    ENPU_RETURN_IF(!grid_get_phase(gr, b->phase), err, ENPU_ERR_INVALID,
                   "added bucket %s batch %d seq %d: the job does not compile the %s phase",
                   config_phase_name(b->phase), b->batch, b->seq, config_phase_name(b->phase));
    /* the ranges of a job's own buckets */
    const char *what = "batch";
    int rc = config_range_check("job", "$.phases.*.batch[]", b->batch, err);
    if (rc == 0) what = "seq", rc = config_range_check("job", "$.phases.*.seq[]", b->seq, err);
    if (rc < 0) {
      enpu_err_prefix(err, "added bucket %s batch %d seq %d: %s: ", config_phase_name(b->phase), b->batch, b->seq,
                      what);
      return rc;
    }
  }
  return 0;
}

/* The grid plus added buckets, sorted and unique. */
static int collect_buckets(farm_plan *m, const grid *gr, const bucket_inputs *in, enpu_err *err) {
  size_t cap = 0;
  for (int p = 0; p < CONFIG_NPHASE; p++) {
    const grid_phase *gp = grid_get_phase(gr, (config_phase)p);
    for (int b = 0; gp && b < gp->bucket_count; b++)
      ENPU_FORWARD(add_bucket(m, &cap, (config_phase)p, gp->buckets[b].batch, gp->buckets[b].seq, err));
  }
  const int ngrid = m->nbuckets;
  ENPU_FORWARD(collect_added(m, &cap, in, err));
  ENPU_FORWARD(check_added(m, gr, ngrid, err));
  qsort(m->buckets, (size_t)m->nbuckets, sizeof *m->buckets, cmp_bucket);
  int n = 0;
  for (int i = 0; i < m->nbuckets; i++)
    if (n == 0 || cmp_bucket(&m->buckets[n - 1], &m->buckets[i]) != 0) m->buckets[n++] = m->buckets[i];
  m->nbuckets = n;
  return 0;
}

/* Bucket b's capacity and graph (a bucket that does not fit or whose graph fails is a
 * result, not an error); a bucket outside the grid is appended to `added`. */
static int compile_bucket(farm_plan *m, const grid *gr, mbucket *b, json_t *added, enpu_err *err) {
  const grid_phase *gp = grid_get_phase(gr, b->phase);
  int in_grid = 0;
  for (int k = 0; k < gp->bucket_count && !in_grid; k++)
    in_grid = gp->buckets[k].batch == b->batch && gp->buckets[k].seq == b->seq;
  ENPU_RETURN_IF(
      !in_grid && json_array_append_new(added, json_pack("{s:s, s:i, s:i}", "phase", config_phase_name(b->phase),
                                                         "batch", b->batch, "seq", b->seq)) < 0,
      err, ENPU_ERR_NOMEM, "out of memory (JSON)");
  const int fits = grid_bucket_fits(m->job, b->phase, b->batch, b->seq, b->message, sizeof b->message, err);
  ENPU_FORWARD(fits);
  if (!fits) {
    b->status = STORE_BUCKET_INFEASIBLE_CAPACITY;
    return 0;
  }
  enpu_err gerr = {0};
  if (graph_build(m->job, b->phase, b->batch, b->seq, &b->g, &gerr) < 0) {
    b->status = STORE_BUCKET_FAILED;
    snprintf(b->message, sizeof b->message, "graph: %.150s", gerr.msg);
  }
  return 0;
}

/* The grid plus added buckets, sorted and unique; capacity and graphs. The added ones
 * are recorded (sorted) in *in->added_json for the store's provenance. */
static int build_buckets(farm_plan *m, const bucket_inputs *in, enpu_err *err) {
  grid *gr;
  ENPU_FORWARD(grid_create(m->job, &gr, err));
  int rc = collect_buckets(m, gr, in, err);
  json_t *added = json_array();
  if (rc == 0 && !added) rc = enpu_errorf(err, ENPU_ERR_NOMEM, "out of memory (JSON)");
  for (int i = 0; rc == 0 && i < m->nbuckets; i++) rc = compile_bucket(m, gr, &m->buckets[i], added, err);
  free(*in->added_json);
  *in->added_json = NULL;
  if (rc == 0 && json_array_size(added) > 0) {
    *in->added_json = json_dumps(added, JSON_COMPACT);
    if (!*in->added_json) rc = enpu_errorf(err, ENPU_ERR_NOMEM, "out of memory (JSON)");
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
  const int policy = ENPU_ORDER(a->policy, b->policy), key = ENPU_ORDER(a->key, b->key),
            bucket = ENPU_ORDER(a->bucket, b->bucket);
  return policy ? policy : key ? key : bucket ? bucket : ENPU_ORDER(a->op, b->op);
}

/* Rough seconds per op-level evaluation and per plan instance; the master rescales them
 * with measured times, they only need the right order of magnitude. */
#define EST_EVAL_S 20e-6
#define EST_INSTANCE_S 0.3e-6
#define EST_GENE_S 2e-9

/* The policy row's estimate of op-level evaluations per op (power_policy.c). */
static double est_op_s(config_policy policy, int peak) {
  const power_policy *row = power_policy_of(policy);
  return (row->est_evals[0] + row->est_evals[1] * pow(peak, row->est_pow)) * EST_EVAL_S;
}

int farm_plan_find_op(const farm_plan *m, uint32_t policy, uint64_t key) {
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
static int op_split(const farm_plan *m, uint32_t code) {
  config_policy_spec spec;
  if (config_policy_spec_decode(code, &spec) < 0 || power_policy_of(spec.base)->ops != POWER_OPS_IDEAL) return 0;
  for (int p = 0; p < m->job->policy_count; p++)
    if (m->op_code[p] == code) return m->opt[p].ideal_method == SEARCH_OP_EXACT;
  return 0;
}

/* The part tasks of every op whose op-level search the farm splits (op_split,
 * search_op_compile_part). */
static int build_parts(farm_plan *m, enpu_err *err) {
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
static double est_bucket_s(const farm_plan *m, int p, const graph *g) {
  const config_policy base = m->job->policies[p].base;
  int64_t instances = 0;
  for (int i = 0; i < graph_op_count(g); i++) instances += graph_op_at(g, i)->multiplicity;
  double est = (double)instances * (2 * m->job->slack_count + 4) * EST_INSTANCE_S;
  if (m->job->policies[p].gate) est *= 2; /* plans priced plain and gated */
  if (power_policy_of(base)->request_ga)
    est += (double)m->job->slack_count * m->opt[p].ga.population * m->opt[p].ga.generations * graph_op_count(g) *
           m->opt[p].ga_groups * EST_GENE_S;
  if (power_policy_of(base)->epoch) est += 4.0 * graph_op_count(g) * est_op_s(base, m->job->chip.freq_states);
  return est;
}

/* The bucket task of policy p (job slot) over bucket b; *ndeps grows by its ops. */
static int add_bucket_task(farm_plan *m, int p, int b, size_t *ndeps, enpu_err *err) {
  const graph *g = m->buckets[b].g;
  const config_policy_spec *spec = &m->job->policies[p];
  mtask *t = &m->bt[m->nbt++];
  *t = (mtask){.policy = m->code[p],
               .op_policy = m->op_code[p],
               .bucket = b,
               .input_hash = farm_bucket_input_hash(m->job, spec, &m->opt[p], g),
               .est_s = est_bucket_s(m, p, g)};
  t->ops = enpu_calloc((size_t)graph_op_count(g) + 1, sizeof *t->ops);
  ENPU_RETURN_IF(!t->ops, err, ENPU_ERR_NOMEM, "out of memory (bucket task ops)");
  if (power_policy_of(spec->base)->epoch) return 0; /* its task searches its epochs */
  for (int i = 0; i < graph_op_count(g); i++)
    t->ops[i] = farm_plan_find_op(m, m->op_code[p], search_op_key(m->job, spec, &m->opt[p], graph_op_at(g, i)));
  qsort(t->ops, (size_t)graph_op_count(g), sizeof *t->ops, cmp_int);
  for (int i = 0; i < graph_op_count(g); i++)
    if (t->nops == 0 || t->ops[t->nops - 1] != t->ops[i]) t->ops[t->nops++] = t->ops[i];
  *ndeps += (size_t)t->nops;
  return 0;
}

/* The unique ops of every op policy (representative: first bucket, first op; pg+X
 * shares X's; epoch policies have none), sorted by (policy, key). */
static int build_ops(farm_plan *m, enpu_err *err) {
  size_t nref = 0;
  for (int b = 0; b < m->nbuckets; b++)
    if (m->buckets[b].g) nref += (size_t)graph_op_count(m->buckets[b].g);
  nref *= (size_t)m->job->policy_count;
  op_ref *refs = enpu_calloc(nref + 1, sizeof *refs);
  ENPU_RETURN_IF(!refs, err, ENPU_ERR_NOMEM, "out of memory (%zu op references)", nref);
  size_t n = 0;
  for (int p = 0; p < m->job->policy_count; p++) {
    const config_policy_spec *spec = &m->job->policies[p];
    if (power_policy_of(spec->base)->epoch) continue;
    for (int b = 0; b < m->nbuckets; b++)
      for (int i = 0; m->buckets[b].g && i < graph_op_count(m->buckets[b].g); i++)
        refs[n++] = (op_ref){m->op_code[p],
                             search_op_key(m->job, spec, &m->opt[p], graph_op_at(m->buckets[b].g, i)), b, i};
  }
  qsort(refs, n, sizeof *refs, cmp_op_ref);
  m->ops = enpu_calloc(n + 1, sizeof *m->ops);
  int rc = m->ops ? 0 : enpu_errorf(err, ENPU_ERR_NOMEM, "out of memory (ops)");
  for (size_t i = 0; rc == 0 && i < n; i++) {
    if (m->nops && m->ops[m->nops - 1].policy == refs[i].policy && m->ops[m->nops - 1].key == refs[i].key) continue;
    config_policy_spec spec;
    config_policy_spec_decode(refs[i].policy, &spec);
    m->ops[m->nops++] = (mop){.policy = refs[i].policy,
                              .key = refs[i].key,
                              .bucket = refs[i].bucket,
                              .op = refs[i].op,
                              .est_s = est_op_s(spec.base, m->job->chip.freq_states)};
  }
  free(refs);
  return rc;
}

/* Unique ops and their parts, bucket tasks (one per policy × compiled bucket), the
 * edges between them. */
static int build_tasks(farm_plan *m, enpu_err *err) {
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

static int build_wanted(farm_plan *m, enpu_err *err) {
  const int np = m->job->policy_count;
  ENPU_RETURN_IF(ENPU_CALLOC_PARTS(ENPU_PART(m->wanted_keys, np), ENPU_PART(m->wanted_buckets, np)) < 0, err,
                 ENPU_ERR_NOMEM, "out of memory");
  int t = 0;
  for (int p = 0; p < np; p++) {
    const uint32_t pol = m->op_code[p];
    farm_wanted *w = &m->wanted[p];
    *w = (farm_wanted){.policy = m->code[p], .op_policy = pol};
    config_job_policy_name(m->job, &m->job->policies[p], w->name);
    m->wanted_keys[p] = enpu_calloc((size_t)m->nops + 1, sizeof **m->wanted_keys);
    m->wanted_buckets[p] = enpu_calloc((size_t)m->nbuckets + 1, sizeof **m->wanted_buckets);
    ENPU_RETURN_IF(!m->wanted_keys[p] || !m->wanted_buckets[p], err, ENPU_ERR_NOMEM, "out of memory");
    for (int i = 0; i < m->nops; i++)
      if (m->ops[i].policy == pol) m->wanted_keys[p][w->nops++] = m->ops[i].key;
    for (int b = 0; b < m->nbuckets; b++) {
      const mbucket *mb = &m->buckets[b];
      store_bucket_rec *r = &m->wanted_buckets[p][w->nbuckets++];
      const uint64_t h = mb->g ? m->bt[t++].input_hash : uncompiled_hash(mb, m->job->budget);
      *r = (store_bucket_rec){.phase = (uint8_t)mb->phase,
                              .budget = config_budget_code(m->job->budget),
                              .batch = mb->batch,
                              .seq = mb->seq,
                              .input_hash = h};
    }
    w->op_keys = power_policy_of(m->job->policies[p].base)->epoch ? NULL : m->wanted_keys[p];
    w->buckets = m->wanted_buckets[p];
  }
  return 0;
}

int farm_plan_add_uncompiled(const farm_plan *m, farm_state *state, enpu_err *err) {
  for (int p = 0; p < m->job->policy_count; p++)
    for (int b = 0; b < m->nbuckets; b++) {
      const mbucket *mb = &m->buckets[b];
      if (mb->g) continue;
      farm_bucket_result r = {.policy = m->code[p]};
      r.bundle.bucket = (store_bucket_rec){.phase = (uint8_t)mb->phase,
                                           .status = (uint8_t)mb->status,
                                           .budget = config_budget_code(m->job->budget),
                                           .batch = mb->batch,
                                           .seq = mb->seq,
                                           .input_hash = uncompiled_hash(mb, m->job->budget)};
      memcpy(r.bundle.bucket.message, mb->message, sizeof r.bundle.bucket.message);
      ENPU_FORWARD(farm_state_add_bucket(state, &r, err));
    }
  return 0;
}

int64_t farm_plan_mark_known(farm_plan *m, const farm_state *state) {
  int64_t n = 0;
  for (int i = 0; i < m->nops; i++) {
    mop *o = &m->ops[i];
    if (o->status == T_KNOWN || !farm_state_find_op(state, o->policy, o->key)) continue;
    o->status = T_KNOWN, n++;
    for (int k = 0; o->first_part >= 0 && k < SEARCH_EXACT_PARTS; k++)
      m->parts[o->first_part + k].status = T_KNOWN; /* not needed any more: not counted */
  }
  for (int j = 0; j < m->nbt; j++) {
    mtask *t = &m->bt[j];
    const mbucket *b = &m->buckets[t->bucket];
    const farm_bucket_result *r = farm_state_find_bucket(state, t->policy, b->phase, b->batch, b->seq,
                                                         t->input_hash);
    /* A failed bucket is retried: its failure may have been transient. */
    if (t->status != T_KNOWN && r && r->bundle.bucket.status == STORE_BUCKET_OK) t->status = T_KNOWN, n++;
  }
  return n;
}

static int cmp_qentry(const void *pa, const void *pb) {
  const qentry *a = pa, *b = pb;
  const int longer_first = ENPU_ORDER(b->est_s, a->est_s);
  return longer_first ? longer_first : ENPU_ORDER(a->task, b->task);
}

int farm_plan_queue(farm_plan *m, farm_summary *sum, double *est_total_s, enpu_err *err) {
  m->queue = enpu_calloc(farm_task_count(m) + 1, sizeof *m->queue);
  ENPU_RETURN_IF(!m->queue, err, ENPU_ERR_NOMEM, "out of memory (task queue)");
  for (uint32_t t = 0; t < farm_task_count(m); t++) {
    const farm_task_ref r = farm_task_at(m, t);
    if (*farm_task_status(m, r) == T_KNOWN || (r.kind == K_OP && m->ops[r.index].first_part >= 0)) continue;
    const double est = farm_task_est(m, r);
    m->queue[m->nqueue++] = (qentry){t, est};
    *(r.kind == K_OP ? &sum->op_tasks : r.kind == K_PART ? &sum->part_tasks : &sum->bucket_tasks) += 1;
    *est_total_s += est;
  }
  for (int j = 0; j < m->nbt; j++)
    for (int k = 0; k < m->bt[j].nops; k++) m->bt[j].waiting += m->ops[m->bt[j].ops[k]].status != T_KNOWN;
  qsort(m->queue, (size_t)m->nqueue, sizeof *m->queue, cmp_qentry);
  sum->tasks_total = m->nqueue;
  return 0;
}

int farm_plan_build(farm_plan *p, const config_job *job, const farm_bucket_spec *add, int nadd, char **added_json,
                    const char *where, enpu_err *err) {
  p->job = job;
  for (int k = 0; k < job->policy_count; k++) {
    search_options_for_job(&p->opt[k], job, &job->policies[k]);
    p->code[k] = config_policy_spec_code(&job->policies[k]);
    p->op_code[k] = search_op_policy(job, &job->policies[k]);
  }
  const bucket_inputs in = {add, nadd, added_json, where};
  ENPU_FORWARD(build_buckets(p, &in, err));
  ENPU_FORWARD(build_tasks(p, err));
  return build_wanted(p, err);
}

/* Each array after what its elements own. */
void farm_plan_free(farm_plan *m) {
  for (int i = 0; m->ops && i < m->nops; i++) {
    for (int k = 0; m->ops[i].part_res && k < SEARCH_EXACT_PARTS; k++) farm_op_result_free(&m->ops[i].part_res[k]);
    free(m->ops[i].part_res);
    farm_buf_free(&m->ops[i].record);
  }
  free(m->ops);
  free(m->parts);
  for (int b = 0; m->buckets && b < m->nbuckets; b++) graph_free(m->buckets[b].g);
  free(m->buckets);
  for (int j = 0; m->bt && j < m->nbt; j++) free(m->bt[j].ops);
  free(m->bt);
  free(m->deps);
  for (int p = 0; m->job && m->wanted_keys && p < m->job->policy_count; p++) {
    free(m->wanted_keys[p]);
    free(m->wanted_buckets[p]);
  }
  free(m->wanted_keys); /* owns wanted_buckets */
  free(m->queue);
}
