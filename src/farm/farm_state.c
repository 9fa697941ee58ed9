/* farm_state.c — the master's result state: every op and bucket result it knows (from
 * the previous store, the journal and the workers), and the checkpoint that turns the
 * wanted part of it into an HDF5 store.
 *
 * Invariants:
 *  - Two open-addressing maps own the results: ops keyed by (policy, key), buckets by
 *    (policy, phase, batch, seq); a newer result with the same key replaces the old one.
 *  - A checkpoint depends only on the results and the wanted lists, never on the order
 *    results arrived in: ops are written sorted by key, buckets by (phase, batch, seq),
 *    store rows are assigned while writing, and string columns are written zero-padded.
 *  - Loading a store converts its global rows back to the local indices of
 *    farm_internal.h (walk/plan-state op = index into the bucket's ascending op keys,
 *    pareto = point index within the op), so a loaded result equals the result that was
 *    checkpointed. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "farm_internal.h"

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
  uint64_t k = ((uint64_t)r->policy << 8 | r->bucket.phase) << 32 ^ (uint32_t)r->bucket.batch;
  return mix64(mix64(k) ^ (uint32_t)r->bucket.seq);
}

static int bucket_same(const void *a, const void *b) {
  const farm_bucket_result *x = a, *y = b;
  return x->policy == y->policy && x->bucket.phase == y->bucket.phase &&
         x->bucket.batch == y->bucket.batch && x->bucket.seq == y->bucket.seq;
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

static const void *map_find(const result_map *m, const void *probe) {
  return m->cap ? *map_slot(m, probe) : NULL;
}

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

const farm_bucket_result *farm_state_find_bucket(const farm_state *s, uint32_t policy,
                                                 int phase, int batch, int seq,
                                                 uint64_t input_hash) {
  farm_bucket_result probe = {.policy = policy,
                              .bucket = {.phase = (uint8_t)phase, .batch = batch, .seq = seq}};
  if (phase < 0 || phase > UINT8_MAX) return NULL;
  const farm_bucket_result *r = map_find(&s->buckets, &probe);
  return r && r->bucket.input_hash == input_hash ? r : NULL;
}

/* ---- loading a store ----------------------------------------------------------- */

/* store_load validated the tables (every row range inside its table, bucket ops in
 * ascending order, walks that replay, plan-state runs that cover their bucket's ops), so
 * loading only converts rows; what the store does not check (two ops of a bucket with one
 * key) is checked here. */

#define BAD(...) enpu_errorf(err, ENPU_ERR_FORMAT, __VA_ARGS__)

/* One op of a bucket while loading: its key, multiplicity and store row. */
typedef struct {
  uint64_t key, multiplicity;
  uint32_t row;
  uint32_t pos; /* position among the bucket's bucket_ops rows */
} load_op;

static int load_op_cmp(const void *a, const void *b) {
  const load_op *x = a, *y = b;
  return x->key < y->key ? -1 : x->key > y->key;
}

/* Local index of store op `row` in bucket b (its bucket_ops rows ascend by op), or -1. */
static long local_op(const store_policy_tables *t, const store_bucket_rec *b,
                     const uint32_t *local_of_pos, uint32_t row) {
  size_t lo = 0, hi = b->ops_count;
  while (lo < hi) {
    size_t mid = lo + (hi - lo) / 2;
    uint32_t v = t->bucket_ops[b->ops_first + mid].op;
    if (v == row) return local_of_pos[mid];
    if (v < row) lo = mid + 1;
    else hi = mid;
  }
  return -1;
}

/* Point index of Pareto row `pareto` within store op `row`, or -1. */
static long local_pareto(const store_policy_tables *t, uint32_t row, uint32_t pareto) {
  const store_op_rec *o = &t->ops[row];
  if (pareto < o->pareto_first || pareto - o->pareto_first >= o->pareto_count) return -1;
  return (long)(pareto - o->pareto_first);
}

static int load_policy_ops(farm_state *s, const store_policy_tables *t, uint32_t policy,
                           enpu_err *err) {
  for (size_t i = 0; i < t->nops; i++) {
    const store_op_rec *o = &t->ops[i];
    farm_op_result r = {.policy = policy, .key = o->signature, .kind = o->kind,
                        .evaluations = o->evaluations, .npoints = o->pareto_count};
    memcpy(r.name, o->name, STORE_NAME_LEN);
    r.name[STORE_NAME_LEN - 1] = '\0';
    r.points = enpu_calloc(r.npoints, sizeof *r.points);
    ENPU_RETURN_IF(!r.points, err, ENPU_ERR_NOMEM, "farm: no memory to load op %zu", i);
    memcpy(r.points, &t->pareto[o->pareto_first], r.npoints * sizeof *r.points);
    for (uint32_t k = 0; k < r.npoints; k++) r.points[k].op = 0;
    ENPU_FORWARD(farm_state_add_op(s, &r, err));
  }
  return ENPU_OK;
}

/* Fill r's ops from bucket b's bucket_ops rows, sorted by key; local_of_pos[pos] gets the
 * local index of the bucket's pos-th row. */
static int load_bucket_ops(const store_policy_tables *t, size_t bi, farm_bucket_result *r,
                           uint32_t *local_of_pos, load_op *scratch, enpu_err *err) {
  const store_bucket_rec *b = &t->buckets[bi];
  for (uint32_t i = 0; i < b->ops_count; i++) {
    const store_bucket_op_rec *bo = &t->bucket_ops[b->ops_first + i];
    scratch[i] = (load_op){t->ops[bo->op].signature, bo->multiplicity, bo->op, i};
  }
  qsort(scratch, b->ops_count, sizeof *scratch, load_op_cmp);
  r->nops = b->ops_count;
  r->op_keys = enpu_calloc(r->nops, sizeof *r->op_keys);
  r->multiplicity = enpu_calloc(r->nops, sizeof *r->multiplicity);
  ENPU_RETURN_IF(!r->op_keys || !r->multiplicity, err, ENPU_ERR_NOMEM,
                 "farm: no memory to load bucket %zu", bi);
  for (uint32_t i = 0; i < r->nops; i++) {
    if (i > 0 && scratch[i].key == scratch[i - 1].key)
      return BAD("policy %s: bucket %zu has two ops with signature %016llx", t->name, bi,
                 (unsigned long long)scratch[i].key);
    r->op_keys[i] = scratch[i].key;
    r->multiplicity[i] = scratch[i].multiplicity;
    local_of_pos[scratch[i].pos] = i;
  }
  return ENPU_OK;
}

static int load_bucket_walk(const store_policy_tables *t, size_t bi, farm_bucket_result *r,
                            const uint32_t *local_of_pos, enpu_err *err) {
  const store_bucket_rec *b = &t->buckets[bi];
  r->nwalk = b->walk_count;
  r->walk = enpu_calloc(r->nwalk, sizeof *r->walk);
  ENPU_RETURN_IF(!r->walk, err, ENPU_ERR_NOMEM, "farm: no memory to load bucket %zu", bi);
  for (uint64_t k = 0; k < r->nwalk; k++) {
    store_walk_rec w = t->walk[b->walk_first + k];
    long op = w.op < t->nops ? local_op(t, b, local_of_pos, w.op) : -1;
    long pt = op < 0 ? -1 : local_pareto(t, w.op, w.pareto);
    if (pt < 0)
      return BAD("policy %s: walk row %llu: op %u or point %u is not in bucket %zu", t->name,
                 (unsigned long long)(b->walk_first + k), w.op, w.pareto, bi);
    w.bucket = 0;
    w.op = (uint32_t)op;
    w.pareto = (uint32_t)pt;
    r->walk[k] = w;
  }
  return ENPU_OK;
}

/* Plans and their states; the states of all plans are gathered in plan order. */
static int load_bucket_plans(const store_policy_tables *t, size_t bi, farm_bucket_result *r,
                             const uint32_t *local_of_pos, enpu_err *err) {
  const store_bucket_rec *b = &t->buckets[bi];
  r->nplans = b->plan_count;
  r->plans = enpu_calloc(r->nplans, sizeof *r->plans);
  ENPU_RETURN_IF(!r->plans, err, ENPU_ERR_NOMEM, "farm: no memory to load bucket %zu", bi);
  r->nstates = 0;
  for (uint32_t k = 0; k < r->nplans; k++) r->nstates += t->plans[b->plan_first + k].states_count;
  r->states = enpu_calloc(r->nstates, sizeof *r->states);
  ENPU_RETURN_IF(!r->states, err, ENPU_ERR_NOMEM, "farm: no memory to load bucket %zu", bi);
  uint64_t at = 0;
  for (uint32_t k = 0; k < r->nplans; k++) {
    store_plan_rec pl = t->plans[b->plan_first + k];
    for (uint64_t i = 0; i < pl.states_count; i++) {
      store_plan_state_rec st = t->plan_states[pl.states_first + i];
      long op = st.op < t->nops ? local_op(t, b, local_of_pos, st.op) : -1;
      long pt = st.pareto == STORE_NO_INDEX ? 0 : op < 0 ? -1 : local_pareto(t, st.op, st.pareto);
      if (op < 0 || pt < 0)
        return BAD("policy %s: plan_states row %llu: op %u or point %u is not in bucket %zu",
                   t->name, (unsigned long long)(pl.states_first + i), st.op, st.pareto, bi);
      st.plan = k;
      st.op = (uint32_t)op;
      if (st.pareto != STORE_NO_INDEX) st.pareto = (uint32_t)pt;
      r->states[at + i] = st;
    }
    pl.bucket = 0;
    pl.states_first = at;
    r->plans[k] = pl;
    at += pl.states_count;
  }
  return ENPU_OK;
}

static int load_policy_buckets(farm_state *s, const store_policy_tables *t, uint32_t policy,
                               int64_t *buckets, enpu_err *err) {
  uint32_t max_ops = 0;
  for (size_t i = 0; i < t->nbuckets; i++)
    if (t->buckets[i].ops_count > max_ops) max_ops = t->buckets[i].ops_count;
  uint32_t *local_of_pos = enpu_calloc(max_ops, sizeof *local_of_pos);
  load_op *scratch = enpu_calloc(max_ops, sizeof *scratch);
  int rc = local_of_pos && scratch ? ENPU_OK
                                   : enpu_errorf(err, ENPU_ERR_NOMEM, "farm: no memory to load buckets");
  for (size_t i = 0; i < t->nbuckets && rc == ENPU_OK; i++) {
    if (t->buckets[i].status == STORE_BUCKET_PENDING) continue; /* a checkpoint's gap, not a result */
    farm_bucket_result r = {.policy = policy, .bucket = t->buckets[i]};
    store_bucket_rec *bk = &r.bucket;
    bk->ops_first = bk->ops_count = bk->plan_first = bk->plan_count = 0;
    bk->walk_first = bk->walk_count = 0;
    bk->message[STORE_MSG_LEN - 1] = '\0';
    rc = load_bucket_ops(t, i, &r, local_of_pos, scratch, err);
    if (rc == ENPU_OK) rc = load_bucket_walk(t, i, &r, local_of_pos, err);
    if (rc == ENPU_OK) rc = load_bucket_plans(t, i, &r, local_of_pos, err);
    if (rc == ENPU_OK) rc = farm_state_add_bucket(s, &r, err);
    else farm_bucket_result_free(&r);
    if (rc == ENPU_OK) (*buckets)++;
  }
  free(local_of_pos);
  free(scratch);
  return rc;
}

int farm_state_load_store(farm_state *s, const char *path, int64_t *ops, int64_t *buckets,
                          char **added_json, enpu_err *err) {
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
    if (config_policy_spec_parse(t->name, &policy) != 0) {
      rc = BAD("unknown policy group \"%.64s\"", t->name);
      break;
    }
    const config_policy_spec op = config_policy_spec_ungated(&policy);
    rc = load_policy_ops(s, t, config_policy_spec_code(&op), err);
    nops += rc == ENPU_OK ? (int64_t)t->nops : 0;
    if (rc == ENPU_OK)
      rc = load_policy_buckets(s, t, config_policy_spec_code(&policy), &nbuckets, err);
  }
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

/* The seven tables of one policy, built in memory and appended at once. */
typedef struct {
  void *rows[STORE_NTABLE];
  size_t n[STORE_NTABLE], cap[STORE_NTABLE];
} ckpt_tables;

static const size_t row_bytes[STORE_NTABLE] = {
    [STORE_T_OPS] = sizeof(store_op_rec),           [STORE_T_PARETO] = sizeof(store_pareto_rec),
    [STORE_T_BUCKETS] = sizeof(store_bucket_rec),   [STORE_T_BUCKET_OPS] = sizeof(store_bucket_op_rec),
    [STORE_T_WALK] = sizeof(store_walk_rec),        [STORE_T_PLANS] = sizeof(store_plan_rec),
    [STORE_T_PLAN_STATES] = sizeof(store_plan_state_rec)};

/* A new zeroed row at the end of table t, or NULL (err filled). */
static void *push_row(ckpt_tables *tb, store_table t, enpu_err *err) {
  if (enpu_grow(&tb->rows[t], &tb->cap[t], tb->n[t] + 1, row_bytes[t]) < 0) {
    enpu_errorf(err, ENPU_ERR_NOMEM, "farm: no memory for checkpoint table rows");
    return NULL;
  }
  void *row = (char *)tb->rows[t] + tb->n[t]++ * row_bytes[t];
  memset(row, 0, row_bytes[t]);
  return row;
}

/* Copy a string column zero-padded, so the written bytes depend only on the text. */
static void copy_str(char *dst, const char *src, size_t width) {
  size_t n = strnlen(src, width - 1);
  memcpy(dst, src, n);
  memset(dst + n, 0, width - n);
}

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

/* The policy's known ops among the wanted ones, ascending by key. */
typedef struct {
  uint64_t *keys;
  const farm_op_result **ops;
  size_t n;
} known_ops;

/* Store row of op `key`, or -1 when it is not written. */
static long op_row(const known_ops *k, uint64_t key) {
  const uint64_t *hit = k->n ? bsearch(&key, k->keys, k->n, sizeof key, u64_cmp) : NULL;
  return hit ? (long)(hit - k->keys) : -1;
}

/* The op keys of a policy whose ops come with its buckets (an epoch policy): those of
 * its wanted buckets' known results. */
static int keys_of_buckets(const farm_state *s, const farm_wanted *wt, uint64_t **keys, size_t *n,
                           enpu_err *err) {
  size_t cap = 0;
  *keys = NULL, *n = 0;
  for (size_t i = 0; i < wt->nbuckets; i++) {
    const store_bucket_rec *wb = &wt->buckets[i];
    const farm_bucket_result *r =
        farm_state_find_bucket(s, wt->policy, wb->phase, wb->batch, wb->seq, wb->input_hash);
    if (!r) continue;
    ENPU_RETURN_IF(enpu_grow((void **)keys, &cap, *n + r->nops + 1, sizeof **keys) < 0, err,
                   ENPU_ERR_NOMEM, "farm: no memory for the epoch keys");
    memcpy(*keys + *n, r->op_keys, r->nops * sizeof **keys);
    *n += r->nops;
  }
  return ENPU_OK;
}

static int emit_ops(const farm_state *s, const farm_wanted *wt, known_ops *k, ckpt_tables *tb,
                    enpu_err *err) {
  uint64_t *from_buckets = NULL;
  size_t nkeys = wt->nops;
  if (!wt->op_keys) ENPU_FORWARD(keys_of_buckets(s, wt, &from_buckets, &nkeys, err));
  k->keys = enpu_calloc(nkeys + 1, sizeof *k->keys);
  k->ops = enpu_calloc(nkeys + 1, sizeof *k->ops);
  if (!k->keys || !k->ops) free(from_buckets);
  ENPU_RETURN_IF(!k->keys || !k->ops, err, ENPU_ERR_NOMEM, "farm: no memory for the op index");
  if (nkeys) memcpy(k->keys, wt->op_keys ? wt->op_keys : from_buckets, nkeys * sizeof *k->keys);
  free(from_buckets);
  qsort(k->keys, nkeys, sizeof *k->keys, u64_cmp);
  k->n = 0;
  for (size_t i = 0; i < nkeys; i++) {
    const farm_op_result *r = farm_state_find_op(s, wt->op_policy, k->keys[i]);
    if (!r || (k->n > 0 && k->keys[k->n - 1] == k->keys[i])) continue;
    ENPU_RETURN_IF((uint64_t)tb->n[STORE_T_PARETO] + r->npoints > UINT32_MAX, err, ENPU_ERR_RANGE,
                   "farm: more than 2^32 Pareto points in policy %u", wt->policy);
    store_op_rec *o = push_row(tb, STORE_T_OPS, err);
    if (!o) return ENPU_ERR_NOMEM;
    *o = (store_op_rec){.signature = r->key, .kind = r->kind, .evaluations = r->evaluations,
                        .pareto_first = (uint32_t)tb->n[STORE_T_PARETO], .pareto_count = r->npoints};
    copy_str(o->name, r->name, STORE_NAME_LEN);
    for (uint32_t p = 0; p < r->npoints; p++) {
      store_pareto_rec *pt = push_row(tb, STORE_T_PARETO, err);
      if (!pt) return ENPU_ERR_NOMEM;
      *pt = r->points[p];
      pt->op = (uint32_t)k->n;
    }
    k->keys[k->n] = k->keys[i];
    k->ops[k->n++] = r;
  }
  return ENPU_OK;
}

/* Map bucket r's ops to store rows (rows[] sized r->nops). @return 1 when every op is
 * written, 0 when one is not (the bucket is skipped), ENPU_ERR_FORMAT when the result's
 * indices do not fit its ops' Pareto sets. */
static int map_bucket(const known_ops *k, const farm_bucket_result *r, uint32_t *rows,
                      enpu_err *err) {
  for (uint32_t i = 0; i < r->nops; i++) {
    long row = op_row(k, r->op_keys[i]);
    if (row < 0) return 0;
    rows[i] = (uint32_t)row;
  }
  const store_bucket_rec *b = &r->bucket;
  for (uint64_t i = 0; i < r->nwalk; i++) {
    const store_walk_rec *w = &r->walk[i];
    if (w->op >= r->nops || w->pareto >= k->ops[rows[w->op]]->npoints)
      return BAD("farm: bucket %u/%d/%d: walk step %llu points outside its ops' Pareto sets",
                 b->phase, b->batch, b->seq, (unsigned long long)i);
  }
  for (uint32_t i = 0; i < r->nplans; i++) {
    const store_plan_rec *pl = &r->plans[i];
    if (pl->states_first > r->nstates || pl->states_count > r->nstates - pl->states_first)
      return BAD("farm: bucket %u/%d/%d: plan %u's states outside the result", b->phase, b->batch,
                 b->seq, i);
  }
  for (uint64_t i = 0; i < r->nstates; i++) {
    const store_plan_state_rec *st = &r->states[i];
    if (st->plan >= r->nplans || st->op >= r->nops ||
        (st->pareto != STORE_NO_INDEX && st->pareto >= k->ops[rows[st->op]]->npoints))
      return BAD("farm: bucket %u/%d/%d: plan state %llu points outside the result's plans, ops "
                 "or Pareto sets", b->phase, b->batch, b->seq, (unsigned long long)i);
  }
  return 1;
}

/* Append bucket r (already mapped to op rows by map_bucket) and its rows to the tables. */
static int emit_bucket(const farm_bucket_result *r, const uint32_t *rows, ckpt_tables *tb,
                       enpu_err *err) {
  const store_op_rec *ops = tb->rows[STORE_T_OPS];
  ENPU_RETURN_IF((uint64_t)tb->n[STORE_T_BUCKETS] + 1 > UINT32_MAX ||
                     (uint64_t)tb->n[STORE_T_BUCKET_OPS] + r->nops > UINT32_MAX ||
                     (uint64_t)tb->n[STORE_T_PLANS] + r->nplans > UINT32_MAX,
                 err, ENPU_ERR_RANGE, "farm: more than 2^32 buckets, bucket ops or plans");
  uint32_t bi = (uint32_t)tb->n[STORE_T_BUCKETS];
  uint32_t plan_base = (uint32_t)tb->n[STORE_T_PLANS];
  uint64_t states_base = tb->n[STORE_T_PLAN_STATES];
  store_bucket_rec *b = push_row(tb, STORE_T_BUCKETS, err);
  if (!b) return ENPU_ERR_NOMEM;
  *b = r->bucket;
  copy_str(b->message, r->bucket.message, STORE_MSG_LEN);
  b->ops_first = (uint32_t)tb->n[STORE_T_BUCKET_OPS];
  b->ops_count = r->nops;
  b->walk_first = tb->n[STORE_T_WALK];
  b->walk_count = r->nwalk;
  b->plan_first = plan_base;
  b->plan_count = r->nplans;
  for (uint32_t i = 0; i < r->nops; i++) {
    store_bucket_op_rec *bo = push_row(tb, STORE_T_BUCKET_OPS, err);
    if (!bo) return ENPU_ERR_NOMEM;
    *bo = (store_bucket_op_rec){.bucket = bi, .op = rows[i], .multiplicity = r->multiplicity[i]};
  }
  for (uint64_t i = 0; i < r->nwalk; i++) {
    store_walk_rec *w = push_row(tb, STORE_T_WALK, err);
    if (!w) return ENPU_ERR_NOMEM;
    *w = r->walk[i];
    w->bucket = bi;
    w->op = rows[r->walk[i].op];
    w->pareto += ops[w->op].pareto_first;
  }
  for (uint32_t i = 0; i < r->nplans; i++) {
    store_plan_rec *pl = push_row(tb, STORE_T_PLANS, err);
    if (!pl) return ENPU_ERR_NOMEM;
    *pl = r->plans[i];
    pl->bucket = bi;
    pl->states_first += states_base;
  }
  for (uint64_t i = 0; i < r->nstates; i++) {
    store_plan_state_rec *st = push_row(tb, STORE_T_PLAN_STATES, err);
    if (!st) return ENPU_ERR_NOMEM;
    *st = r->states[i];
    st->plan = plan_base + r->states[i].plan;
    st->op = rows[r->states[i].op];
    if (st->pareto != STORE_NO_INDEX)
      st->pareto += ops[st->op].pareto_first;
  }
  return ENPU_OK;
}

/* A wanted bucket without a result yet: its key and the hash it is wanted with. */
static int emit_pending(const store_bucket_rec *wb, ckpt_tables *tb, enpu_err *err) {
  ENPU_RETURN_IF((uint64_t)tb->n[STORE_T_BUCKETS] + 1 > UINT32_MAX, err, ENPU_ERR_RANGE,
                 "farm: more than 2^32 buckets");
  store_bucket_rec *b = push_row(tb, STORE_T_BUCKETS, err);
  if (!b) return ENPU_ERR_NOMEM;
  *b = (store_bucket_rec){.phase = wb->phase, .status = STORE_BUCKET_PENDING, .budget = wb->budget, .batch = wb->batch,
                          .seq = wb->seq, .input_hash = wb->input_hash,
                          .ops_first = (uint32_t)tb->n[STORE_T_BUCKET_OPS], .walk_first = tb->n[STORE_T_WALK],
                          .plan_first = (uint32_t)tb->n[STORE_T_PLANS]};
  return ENPU_OK;
}

/* Build the tables of one wanted policy into tb (emptied first). */
static int build_policy(const farm_state *s, const farm_wanted *wt, ckpt_tables *tb,
                        enpu_err *err) {
  for (int t = 0; t < STORE_NTABLE; t++) tb->n[t] = 0;
  known_ops k = {0};
  store_bucket_rec *want = enpu_calloc(wt->nbuckets, sizeof *want);
  uint32_t *rows = NULL;
  size_t rows_cap = 0;
  int rc = want ? emit_ops(s, wt, &k, tb, err)
                : enpu_errorf(err, ENPU_ERR_NOMEM, "farm: no memory for the bucket list");
  if (rc == ENPU_OK) {
    if (wt->nbuckets) memcpy(want, wt->buckets, wt->nbuckets * sizeof *want);
    qsort(want, wt->nbuckets, sizeof *want, wanted_bucket_cmp);
  }
  for (size_t i = 0; i < wt->nbuckets && rc == ENPU_OK; i++) {
    const store_bucket_rec *wb = &want[i];
    if (i > 0 && wanted_bucket_cmp(&want[i - 1], wb) == 0) {
      rc = enpu_errorf(err, ENPU_ERR_INVALID, "farm: bucket %u/%d/%d is wanted twice in policy %u",
                       wb->phase, wb->batch, wb->seq, wt->policy);
      break;
    }
    const farm_bucket_result *r =
        farm_state_find_bucket(s, wt->policy, wb->phase, wb->batch, wb->seq, wb->input_hash);
    if (r && enpu_grow((void **)&rows, &rows_cap, r->nops, sizeof *rows) < 0) {
      rc = enpu_errorf(err, ENPU_ERR_NOMEM, "farm: no memory to map a bucket's ops");
      break;
    }
    rc = r ? map_bucket(&k, r, rows, err) : 0;
    if (rc > 0) rc = emit_bucket(r, rows, tb, err);
    else if (rc == 0) rc = emit_pending(wb, tb, err);
  }
  free(rows);
  free(want);
  free(k.keys);
  free(k.ops);
  return rc;
}

static int wanted_policy_cmp(const void *a, const void *b) {
  const uint32_t x = (*(const farm_wanted *const *)a)->policy;
  const uint32_t y = (*(const farm_wanted *const *)b)->policy;
  return x < y ? -1 : x > y;
}

int farm_state_checkpoint(const farm_state *s, const store_lock *lock, const store_provenance *prov,
                          const farm_wanted *wanted, int nwanted, enpu_err *err) {
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
  ckpt_tables tb = {0};
  int rc = ENPU_OK;
  for (int p = 0; p < nwanted && rc == ENPU_OK; p++) {
    char name[CONFIG_NAME_LEN];
    config_policy_spec_decode(by_policy[p]->policy, &spec);
    config_policy_spec_name(&spec, name);
    rc = build_policy(s, by_policy[p], &tb, err);
    for (int t = 0; t < STORE_NTABLE && rc == ENPU_OK; t++)
      rc = store_writer_append(w, name, (store_table)t, tb.rows[t], tb.n[t], err);
  }
  for (int t = 0; t < STORE_NTABLE; t++) free(tb.rows[t]);
  if (rc == ENPU_OK) rc = store_writer_commit(w, err);
  store_writer_free(w);
  return rc;
}
