/* farm_state.c — the master's result state: every op and bucket result it knows (from
 * the previous store, the journal and the workers), and the checkpoint that turns the
 * wanted part of it into an HDF5 store.
 *
 * Invariants:
 *  - Two open-addressing maps own the results: ops keyed by (policy, key), buckets by
 *    (policy, phase, batch, seq); a newer result with the same key replaces the old one.
 *  - A checkpoint depends only on the results and the wanted lists, never on the order
 *    results arrived in: ops are written sorted by key, buckets by (phase, batch, seq);
 *    the store's policy builder assigns the rows and zero-pads string columns.
 *  - Loading a store reads each bucket back as the bundle it was appended as
 *    (store_bucket_bundle_read), so a loaded result equals the result that was
 *    checkpointed. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "farm_internal.h"
#include "farm_task_internal.h"

/* ---- maps ---------------------------------------------------------------------- */

/* An open-addressing table (linear probing, power-of-two capacity, at most half full) of
 * owned result pointers; `hash` and `same` read only the key fields, so a stack result
 * with just those filled serves as a probe. */
typedef struct {
  void **slots;
  size_t cap, n;
  uint64_t (*hash)(const void *result);
  int (*same)(const void *a, const void *b);
  void (*release)(void *result);
} result_map;

static uint64_t mix64(uint64_t x) { /* splitmix64's finaliser */
  x ^= x >> 30;
  x *= 0xbf58476d1ce4e5b9ull;
  x ^= x >> 27;
  x *= 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

static uint64_t op_hash(const void *p) {
  const farm_op_result *r = p;
  return mix64(r->key ^ mix64(r->policy));
}

static int op_same(const void *a, const void *b) {
  const farm_op_result *x = a, *y = b;
  return x->policy == y->policy && x->key == y->key;
}

static void op_release(void *p) {
  farm_op_result_free(p);
  free(p);
}

static uint64_t bucket_hash(const void *p) {
  const farm_bucket_result *r = p;
  const store_bucket_rec *b = &r->bundle.bucket;
  uint64_t k = ((uint64_t)r->policy << 8 | b->phase) << 32 ^ (uint32_t)b->batch;
  return mix64(mix64(k) ^ (uint32_t)b->seq);
}

static int bucket_same(const void *a, const void *b) {
  const farm_bucket_result *x = a, *y = b;
  const store_bucket_rec *bx = &x->bundle.bucket, *by = &y->bundle.bucket;
  return x->policy == y->policy && bx->phase == by->phase && bx->batch == by->batch && bx->seq == by->seq;
}

static void bucket_release(void *p) {
  farm_bucket_result_free(p);
  free(p);
}

/* The slot holding a result with probe's key, or the empty slot where it would go. */
static void **map_slot(const result_map *m, const void *probe) {
  size_t mask = m->cap - 1;
  for (size_t i = (size_t)m->hash(probe) & mask;; i = (i + 1) & mask)
    if (!m->slots[i] || m->same(m->slots[i], probe)) return &m->slots[i];
}

static const void *map_find(const result_map *m, const void *probe) { return m->cap ? *map_slot(m, probe) : NULL; }

/* Insert or replace; the map owns `result` afterwards, even on failure (it is freed). */
static int map_put(result_map *m, void *result, enpu_err *err) {
  if (2 * (m->n + 1) > m->cap) {
    size_t cap = m->cap ? 2 * m->cap : 64;
    void **old = m->slots;
    size_t old_cap = m->cap;
    m->slots = enpu_calloc(cap, sizeof *m->slots);
    if (!m->slots) {
      m->slots = old;
      m->release(result);
      return enpu_errorf(err, ENPU_ERR_NOMEM, "farm: no memory for %zu results", m->n + 1);
    }
    m->cap = cap;
    for (size_t i = 0; i < old_cap; i++)
      if (old[i]) *map_slot(m, old[i]) = old[i];
    free(old);
  }
  void **slot = map_slot(m, result);
  if (*slot) m->release(*slot);
  else m->n++;
  *slot = result;
  return ENPU_OK;
}

static void map_free(result_map *m) {
  for (size_t i = 0; i < m->cap; i++)
    if (m->slots[i]) m->release(m->slots[i]);
  free(m->slots);
}

struct farm_state {
  result_map ops, buckets;
  store_validation_set *validated; /* the loaded store's validation rows, or NULL */
};

int farm_state_create(farm_state **out, enpu_err *err) {
  *out = calloc(1, sizeof **out);
  ENPU_RETURN_IF(!*out, err, ENPU_ERR_NOMEM, "farm: no memory for the result state");
  (*out)->ops = (result_map){.hash = op_hash, .same = op_same, .release = op_release};
  (*out)->buckets = (result_map){.hash = bucket_hash, .same = bucket_same, .release = bucket_release};
  return ENPU_OK;
}

void farm_state_free(farm_state *s) {
  if (!s) return;
  map_free(&s->ops);
  map_free(&s->buckets);
  store_validation_set_free(s->validated);
  free(s);
}

int farm_state_add_op(farm_state *s, farm_op_result *r, enpu_err *err) {
  farm_op_result *own = malloc(sizeof *own);
  ENPU_RETURN_IF(!own, err, ENPU_ERR_NOMEM, "farm: no memory for an op result");
  *own = *r;
  memset(r, 0, sizeof *r);
  return map_put(&s->ops, own, err);
}

int farm_state_add_bucket(farm_state *s, farm_bucket_result *r, enpu_err *err) {
  int rc = ENPU_OK;
  for (uint32_t i = 0; i < r->nunits && rc == ENPU_OK; i++) rc = farm_state_add_op(s, &r->units[i], err);
  for (uint32_t i = 0; i < r->nunits; i++) farm_op_result_free(&r->units[i]);
  free(r->units);
  r->units = NULL, r->nunits = 0;
  farm_bucket_result *own = rc == ENPU_OK ? malloc(sizeof *own) : NULL;
  if (rc == ENPU_OK && !own) rc = enpu_errorf(err, ENPU_ERR_NOMEM, "farm: no memory for a bucket result");
  if (rc != ENPU_OK) {
    farm_bucket_result_free(r);
    return rc;
  }
  *own = *r;
  memset(r, 0, sizeof *r);
  return map_put(&s->buckets, own, err);
}

const farm_op_result *farm_state_find_op(const farm_state *s, uint32_t policy, uint64_t key) {
  farm_op_result probe = {.policy = policy, .key = key};
  return map_find(&s->ops, &probe);
}

const farm_bucket_result *farm_state_find_bucket(const farm_state *s, uint32_t policy, int phase, int batch,
                                                 int seq, uint64_t input_hash) {
  farm_bucket_result probe = {.policy = policy,
                              .bundle.bucket = {.phase = (uint8_t)phase, .batch = batch, .seq = seq}};
  if (phase < 0 || phase > UINT8_MAX) return NULL;
  const farm_bucket_result *r = map_find(&s->buckets, &probe);
  return r && r->bundle.bucket.input_hash == input_hash ? r : NULL;
}

/* ---- loading a store ----------------------------------------------------------- */

static int load_policy_ops(farm_state *s, const store_policy_tables *t, uint32_t policy, enpu_err *err) {
  for (size_t i = 0; i < t->nops; i++) {
    const store_op_rec *o = &t->ops[i];
    farm_op_result r = {.policy = policy,
                        .key = o->signature,
                        .kind = o->kind,
                        .evaluations = o->evaluations,
                        .npoints = o->pareto_count};
    memcpy(r.name, o->name, STORE_NAME_LEN);
    r.points = enpu_calloc(r.npoints, sizeof *r.points);
    ENPU_RETURN_IF(!r.points, err, ENPU_ERR_NOMEM, "farm: no memory to load op %zu", i);
    memcpy(r.points, &t->pareto[o->pareto_first], r.npoints * sizeof *r.points);
    for (uint32_t k = 0; k < r.npoints; k++) r.points[k].op = 0;
    ENPU_FORWARD(farm_state_add_op(s, &r, err));
  }
  return ENPU_OK;
}

/* Every compiled bucket of the policy as a result (a pending one is a checkpoint's gap). */
static int load_policy_buckets(farm_state *s, const store_policy_tables *t, uint32_t policy, int64_t *buckets,
                               enpu_err *err) {
  for (size_t i = 0; i < t->nbuckets; i++) {
    if (t->buckets[i].status == STORE_BUCKET_PENDING) continue;
    farm_bucket_result r = {.policy = policy};
    ENPU_FORWARD(store_bucket_bundle_read(t, (uint32_t)i, &r.bundle, err));
    ENPU_FORWARD(farm_state_add_bucket(s, &r, err));
    (*buckets)++;
  }
  return ENPU_OK;
}

/* The store's validation rows, for the checkpoints to carry (none: no set). */
static int load_validation(farm_state *s, const store_contents *c, enpu_err *err) {
  size_t rows = 0;
  for (size_t p = 0; p < c->npolicies; p++) rows += c->policies[p].nvalidation + c->policies[p].nvalidation_replay;
  store_validation_set_free(s->validated);
  s->validated = NULL;
  return rows ? store_validation_set_create(c, &s->validated, err) : ENPU_OK;
}

int farm_state_load_store(farm_state *s, const char *path, int64_t *ops, int64_t *buckets, char **added_json,
                          enpu_err *err) {
  return farm_state_load_job_store(s, NULL, path, ops, buckets, added_json, err);
}

int farm_state_load_job_store(farm_state *s, const config_job *job, const char *path, int64_t *ops,
                              int64_t *buckets, char **added_json, enpu_err *err) {
  int64_t nops = 0, nbuckets = 0;
  if (ops) *ops = 0;
  if (buckets) *buckets = 0;
  if (added_json) *added_json = NULL;
  struct stat st;
  if (stat(path, &st) != 0 && errno == ENOENT) return ENPU_OK;
  store_contents *c = NULL;
  ENPU_FORWARD(store_load(path, &c, err));
  int rc = ENPU_OK;
  for (size_t p = 0; p < c->npolicies && rc == ENPU_OK; p++) {
    const store_policy_tables *t = &c->policies[p];
    config_policy_spec policy;
    if (config_job_policy_parse(job, t->name, &policy) != 0) {
      /* a sweep point the job no longer has: like a policy it no longer lists, its
       * results are not wanted, and the next checkpoint leaves them out */
      if (config_variant_of(t->name)) continue;
      rc = enpu_errorf(err, ENPU_ERR_FORMAT, "unknown policy group \"%.64s\"", t->name);
      break;
    }
    rc = load_policy_ops(s, t, search_op_policy(job, &policy), err);
    nops += rc == ENPU_OK ? (int64_t)t->nops : 0;
    if (rc == ENPU_OK) rc = load_policy_buckets(s, t, config_policy_spec_code(&policy), &nbuckets, err);
  }
  if (rc == ENPU_OK) rc = load_validation(s, c, err);
  if (rc == ENPU_OK && added_json) {
    *added_json = c->added_buckets_json;
    c->added_buckets_json = NULL;
  }
  store_contents_free(c);
  if (rc != ENPU_OK) {
    enpu_err_prefix(err, "%s: ", path);
    return rc;
  }
  if (ops) *ops = nops;
  if (buckets) *buckets = nbuckets;
  return ENPU_OK;
}

/* ---- checkpoint ---------------------------------------------------------------- */

static int u64_cmp(const void *a, const void *b) {
  uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
  return x < y ? -1 : x > y;
}

static int wanted_bucket_cmp(const void *a, const void *b) {
  const store_bucket_rec *x = a, *y = b;
  if (x->phase != y->phase) return x->phase < y->phase ? -1 : 1;
  if (x->batch != y->batch) return x->batch < y->batch ? -1 : 1;
  return x->seq < y->seq ? -1 : x->seq > y->seq;
}

/* The op keys the policy wants, sorted (with repeats): its grid's, or for a policy whose
 * ops come with its buckets (an epoch policy) those of its wanted buckets' known results. */
static int wanted_keys(const farm_state *s, const farm_wanted *wt, uint64_t **keys, size_t *n, enpu_err *err) {
  size_t cap = wt->nops + 1;
  *keys = enpu_calloc(cap, sizeof **keys);
  ENPU_RETURN_IF(!*keys, err, ENPU_ERR_NOMEM, "farm: no memory for the op index");
  *n = wt->op_keys ? wt->nops : 0;
  if (*n) memcpy(*keys, wt->op_keys, *n * sizeof **keys);
  for (size_t i = 0; !wt->op_keys && i < wt->nbuckets; i++) {
    const store_bucket_rec *wb = &wt->buckets[i];
    const farm_bucket_result *r = farm_state_find_bucket(s, wt->policy, wb->phase, wb->batch, wb->seq,
                                                         wb->input_hash);
    if (!r) continue;
    ENPU_RETURN_IF(enpu_grow((void **)keys, &cap, *n + r->bundle.nops + 1, sizeof **keys) < 0, err, ENPU_ERR_NOMEM,
                   "farm: no memory for the epoch keys");
    for (uint32_t k = 0; k < r->bundle.nops; k++) (*keys)[(*n)++] = r->bundle.ops[k].signature;
  }
  qsort(*keys, *n, sizeof **keys, u64_cmp);
  return ENPU_OK;
}

/* The policy's wanted, known ops, ascending by key. */
static int build_ops(const farm_state *s, const farm_wanted *wt, store_policy_builder *b, enpu_err *err) {
  uint64_t *keys = NULL;
  size_t n = 0;
  int rc = wanted_keys(s, wt, &keys, &n, err);
  for (size_t i = 0; i < n && rc == ENPU_OK; i++) {
    const farm_op_result *r = farm_state_find_op(s, wt->op_policy, keys[i]);
    if (!r || (i > 0 && keys[i - 1] == keys[i])) continue;
    store_op_rec o = {.signature = r->key, .kind = r->kind, .evaluations = r->evaluations};
    memcpy(o.name, r->name, STORE_NAME_LEN);
    rc = store_policy_builder_add_op(b, &o, r->points, r->npoints, err);
  }
  free(keys);
  return rc;
}

/* Build the tables of one wanted policy: its ops, then its buckets by (phase, batch, seq),
 * each a known result whose ops are all written, or a pending row. */
static int build_policy(const farm_state *s, const farm_wanted *wt, store_policy_builder *b, enpu_err *err) {
  store_bucket_rec *want = enpu_calloc(wt->nbuckets + 1, sizeof *want);
  int rc = want ? build_ops(s, wt, b, err)
                : enpu_errorf(err, ENPU_ERR_NOMEM, "farm: no memory for the bucket list");
  if (rc == ENPU_OK) {
    if (wt->nbuckets) memcpy(want, wt->buckets, wt->nbuckets * sizeof *want);
    qsort(want, wt->nbuckets, sizeof *want, wanted_bucket_cmp);
  }
  for (size_t i = 0; i < wt->nbuckets && rc == ENPU_OK; i++) {
    const store_bucket_rec *wb = &want[i];
    if (i > 0 && wanted_bucket_cmp(&want[i - 1], wb) == 0) {
      rc = enpu_errorf(err, ENPU_ERR_INVALID, "farm: bucket %u/%d/%d is wanted twice in policy %u", wb->phase,
                       wb->batch, wb->seq, wt->policy);
      break;
    }
    const farm_bucket_result *r = farm_state_find_bucket(s, wt->policy, wb->phase, wb->batch, wb->seq,
                                                         wb->input_hash);
    rc = r ? store_bucket_bundle_append(b, &r->bundle, err) : 0;
    if (rc == 0) { /* not compiled yet: its key and the hash it is wanted with */
      const store_bucket_bundle pending = {.bucket = {.phase = wb->phase,
                                                      .status = STORE_BUCKET_PENDING,
                                                      .budget = wb->budget,
                                                      .batch = wb->batch,
                                                      .seq = wb->seq,
                                                      .input_hash = wb->input_hash}};
      rc = store_bucket_bundle_append(b, &pending, err);
    }
    if (rc > 0) rc = ENPU_OK;
  }
  free(want);
  return rc;
}

static int wanted_policy_cmp(const void *a, const void *b) {
  const uint32_t x = (*(const farm_wanted *const *)a)->policy;
  const uint32_t y = (*(const farm_wanted *const *)b)->policy;
  return x < y ? -1 : x > y;
}

int farm_state_checkpoint(const farm_state *s, const store_lock *lock, const store_provenance *prov,
                          const farm_wanted *wanted, int nwanted, store_validation_counts *validation,
                          enpu_err *err) {
  /* Policies are written in code order, whatever order the caller lists them in. */
  ENPU_RETURN_IF(nwanted < 0 || nwanted > CONFIG_MAX_POLICIES, err, ENPU_ERR_INVALID,
                 "farm: checkpoint of %s: %d policies", store_lock_path(lock), nwanted);
  const farm_wanted *by_policy[CONFIG_MAX_POLICIES];
  config_policy_spec spec;
  for (int i = 0; i < nwanted; i++) {
    ENPU_RETURN_IF(config_policy_spec_decode(wanted[i].policy, &spec) < 0, err, ENPU_ERR_INVALID,
                   "farm: checkpoint of %s: policy %u unknown", store_lock_path(lock), wanted[i].policy);
    by_policy[i] = &wanted[i];
  }
  qsort(by_policy, (size_t)nwanted, sizeof *by_policy, wanted_policy_cmp);
  for (int i = 1; i < nwanted; i++)
    ENPU_RETURN_IF(by_policy[i]->policy == by_policy[i - 1]->policy, err, ENPU_ERR_INVALID,
                   "farm: checkpoint of %s: policy %u listed twice", store_lock_path(lock), by_policy[i]->policy);
  store_writer *w = NULL;
  ENPU_FORWARD(store_writer_create(lock, prov, 0, &w, err));
  int rc = ENPU_OK;
  store_validation_counts counts = {0};
  for (int p = 0; p < nwanted && rc == ENPU_OK; p++) {
    char name[CONFIG_NAME_LEN]; /* the job's name of it; a caller without a job: the code's */
    config_policy_spec_decode(by_policy[p]->policy, &spec);
    if (by_policy[p]->name[0]) snprintf(name, sizeof name, "%s", by_policy[p]->name);
    else config_policy_spec_name(&spec, name);
    store_policy_builder *b = NULL;
    rc = store_policy_builder_create(name, &b, err);
    if (rc == ENPU_OK) rc = build_policy(s, by_policy[p], b, err);
    if (rc == ENPU_OK) rc = store_writer_append_tables(w, store_policy_builder_tables(b), err);
    if (rc == ENPU_OK) rc = store_validation_carry(s->validated, w, store_policy_builder_tables(b), &counts, err);
    store_policy_builder_free(b);
  }
  if (rc == ENPU_OK) rc = store_validation_carry_replay(s->validated, w, &counts, err);
  if (rc == ENPU_OK) rc = store_writer_commit(w, err);
  store_writer_free(w);
  if (rc == ENPU_OK && validation) *validation = counts;
  return rc;
}
