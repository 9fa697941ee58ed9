/* store_bundle.c — bucket bundles (store.h): one bucket in indices of its own, checked by
 * one set of rules, read out of a loaded policy, and appended to a policy builder that
 * assigns the rows.
 *
 * Invariants:
 *  - Appending is the inverse of reading: a bundle appended after ops with the same
 *    points reads back equal (string columns zero-padded, ranges zeroed), whatever rows
 *    it was given.
 *  - The builder's ops ascend by signature (add_op refuses another order), so a bundle's
 *    ops find their rows by binary search and a bucket's bucket_ops rows ascend by op
 *    row, as the reader requires.
 *  - Nothing is appended from a bundle that does not pass store_bucket_bundle_check
 *    against its ops' point counts, or one of whose ops the builder lacks. */
#include <stdlib.h>
#include <string.h>

#include "store_internal.h"

#define BAD(...) enpu_errorf(err, ENPU_ERR_FORMAT, __VA_ARGS__)

void store_bucket_bundle_free(store_bucket_bundle *b) {
  if (!b) return;
  void *arrays[] = {b->ops, b->walk, b->plans, b->states};
  for (size_t i = 0; i < sizeof arrays / sizeof arrays[0]; i++) free(arrays[i]);
  memset(b, 0, sizeof *b);
}

/* ---- the rules ------------------------------------------------------------------- */

/* Is point `pareto` of local op `op` inside the bundle (npoints NULL: any point)? */
static int point_ok(const store_bucket_bundle *b, const uint32_t *npoints, uint32_t op, uint32_t pareto) {
  return op < b->nops && (!npoints || pareto < npoints[op]);
}

static int check_walk(const store_bucket_bundle *b, const uint32_t *npoints, enpu_err *err) {
  const store_bucket_rec *k = &b->bucket;
  store_walk_pos *pos = enpu_calloc(b->nops + 1, sizeof *pos);
  ENPU_RETURN_IF(!pos, err, ENPU_ERR_NOMEM, "bucket %u/%d/%d: no memory to check its walk", k->phase, k->batch,
                 k->seq);
  for (uint32_t i = 0; i < b->nops; i++)
    pos[i] = (store_walk_pos){0, 0, b->ops[i].multiplicity, b->ops[i].multiplicity};
  int rc = ENPU_OK;
  for (uint64_t s = 0; s < b->nwalk && rc == ENPU_OK; s++) {
    const store_walk_rec *w = &b->walk[s];
    if (!point_ok(b, npoints, w->op, w->pareto) || w->instances == 0)
      rc = BAD("bucket %u/%d/%d: walk step %llu: op %u or point %u outside the bundle's %u ops and their "
               "points, or no instances",
               k->phase, k->batch, k->seq, (unsigned long long)s, w->op, w->pareto, b->nops);
    else if (store_walk_step(&pos[w->op], w->pareto, w->instances) != STORE_WALK_OK)
      rc = BAD("bucket %u/%d/%d: walk step %llu of op %016llx breaks the lead/trail rule", k->phase, k->batch,
               k->seq, (unsigned long long)s, (unsigned long long)b->ops[w->op].signature);
  }
  free(pos);
  return rc;
}

int store_bucket_bundle_check(const store_bucket_bundle *b, const uint32_t *npoints, enpu_err *err) {
  const store_bucket_rec *k = &b->bucket;
  for (uint32_t i = 0; i < b->nops; i++)
    if (b->ops[i].multiplicity == 0 || (i > 0 && b->ops[i].signature <= b->ops[i - 1].signature))
      return BAD("bucket %u/%d/%d: op %u has no instances or its signature is not ascending", k->phase, k->batch,
                 k->seq, i);
  for (uint32_t i = 0; i < b->nplans; i++) {
    const store_plan_rec *pl = &b->plans[i];
    if ((pl->walk_prefix > b->nwalk && pl->walk_prefix != STORE_NO_PREFIX) || pl->states_first > b->nstates ||
        pl->states_count > b->nstates - pl->states_first || pl->budget != k->budget)
      return BAD("bucket %u/%d/%d: plan %u: walk prefix %llu or states [%llu, +%llu) outside the %llu steps and "
                 "%llu states, or its budget mode is not the bucket's",
                 k->phase, k->batch, k->seq, i, (unsigned long long)pl->walk_prefix,
                 (unsigned long long)pl->states_first, (unsigned long long)pl->states_count,
                 (unsigned long long)b->nwalk, (unsigned long long)b->nstates);
  }
  for (uint64_t i = 0; i < b->nstates; i++) {
    const store_plan_state_rec *s = &b->states[i];
    if (s->plan >= b->nplans || s->instances == 0 ||
        !point_ok(b, s->pareto == STORE_NO_INDEX ? NULL : npoints, s->op, s->pareto))
      return BAD("bucket %u/%d/%d: plan state %llu: plan %u, op %u or point %u outside the bundle's %u plans, "
                 "%u ops and their points, or no instances",
                 k->phase, k->batch, k->seq, (unsigned long long)i, s->plan, s->op, s->pareto, b->nplans, b->nops);
  }
  return check_walk(b, npoints, err);
}

/* ---- reading --------------------------------------------------------------------- */

/* One op of the bucket being read: its signature, multiplicity and bucket_ops position. */
typedef struct {
  store_bundle_op op;
  uint32_t pos;
} read_op;

static int read_op_cmp(const void *a, const void *b) {
  const uint64_t x = ((const read_op *)a)->op.signature, y = ((const read_op *)b)->op.signature;
  return (x > y) - (x < y);
}

/* The bundle's ops, ascending by signature; local[pos] receives the local index of the
 * bucket's pos-th bucket_ops row. */
static int read_ops(const store_policy_tables *p, uint32_t bi, store_bucket_bundle *out, uint32_t *local,
                    enpu_err *err) {
  const store_bucket_rec *b = &p->buckets[bi];
  read_op *ops = enpu_calloc(b->ops_count + 1, sizeof *ops);
  out->ops = enpu_calloc(b->ops_count + 1, sizeof *out->ops);
  int rc = ops && out->ops
               ? ENPU_OK
               : enpu_errorf(err, ENPU_ERR_NOMEM, "policy %s: no memory to read bucket %u", p->name, bi);
  for (uint32_t i = 0; rc == ENPU_OK && i < b->ops_count; i++) {
    const store_bucket_op_rec *bo = &p->bucket_ops[b->ops_first + i];
    ops[i] = (read_op){{p->ops[bo->op].signature, bo->multiplicity}, i};
  }
  if (rc == ENPU_OK) qsort(ops, b->ops_count, sizeof *ops, read_op_cmp);
  for (uint32_t i = 0; rc == ENPU_OK && i < b->ops_count; i++) {
    if (i > 0 && ops[i].op.signature == ops[i - 1].op.signature)
      rc = BAD("policy %s: bucket %u has two ops with signature %016llx", p->name, bi,
               (unsigned long long)ops[i].op.signature);
    out->ops[i] = ops[i].op;
    local[ops[i].pos] = i;
  }
  out->nops = rc == ENPU_OK ? b->ops_count : 0;
  free(ops);
  return rc;
}

/* (op row, Pareto row) of the store as (local op, point within it), or -1 when the op is
 * not the bucket's or the point not the op's. */
static int local_point(const store_policy_tables *p, const store_bucket_rec *b, const uint32_t *local, uint32_t *op,
                       uint32_t *pareto) {
  const long pos = *op < p->nops ? store_bucket_op_pos(p, b, *op) : -1;
  if (pos < 0) return -1;
  const store_op_rec *o = &p->ops[*op];
  if (*pareto != STORE_NO_INDEX) {
    if (*pareto < o->pareto_first || *pareto - o->pareto_first >= o->pareto_count) return -1;
    *pareto -= o->pareto_first;
  }
  *op = local[pos];
  return 0;
}

static int read_walk(const store_policy_tables *p, uint32_t bi, store_bucket_bundle *out, const uint32_t *local,
                     enpu_err *err) {
  const store_bucket_rec *b = &p->buckets[bi];
  out->walk = enpu_calloc(b->walk_count + 1, sizeof *out->walk);
  ENPU_RETURN_IF(!out->walk, err, ENPU_ERR_NOMEM, "policy %s: no memory to read bucket %u", p->name, bi);
  for (out->nwalk = 0; out->nwalk < b->walk_count; out->nwalk++) {
    store_walk_rec w = p->walk[b->walk_first + out->nwalk];
    if (w.pareto == STORE_NO_INDEX || local_point(p, b, local, &w.op, &w.pareto) < 0)
      return BAD("policy %s: walk row %llu: op or point not of bucket %u", p->name,
                 (unsigned long long)(b->walk_first + out->nwalk), bi);
    w.bucket = 0;
    out->walk[out->nwalk] = w;
  }
  return ENPU_OK;
}

/* Plans, and the states of all plans gathered in plan order. */
static int read_plans(const store_policy_tables *p, uint32_t bi, store_bucket_bundle *out, const uint32_t *local,
                      enpu_err *err) {
  const store_bucket_rec *b = &p->buckets[bi];
  uint64_t nstates = 0;
  for (uint32_t k = 0; k < b->plan_count; k++) nstates += p->plans[b->plan_first + k].states_count;
  out->plans = enpu_calloc(b->plan_count + 1, sizeof *out->plans);
  out->states = enpu_calloc(nstates + 1, sizeof *out->states);
  ENPU_RETURN_IF(!out->plans || !out->states, err, ENPU_ERR_NOMEM, "policy %s: no memory to read bucket %u",
                 p->name, bi);
  for (; out->nplans < b->plan_count; out->nplans++) {
    store_plan_rec pl = p->plans[b->plan_first + out->nplans];
    for (uint64_t i = 0; i < pl.states_count; i++) {
      store_plan_state_rec st = p->plan_states[pl.states_first + i];
      if (local_point(p, b, local, &st.op, &st.pareto) < 0)
        return BAD("policy %s: plan_states row %llu: op or point not of bucket %u", p->name,
                   (unsigned long long)(pl.states_first + i), bi);
      st.plan = out->nplans;
      out->states[out->nstates + i] = st;
    }
    pl.bucket = 0;
    pl.states_first = out->nstates;
    out->plans[out->nplans] = pl;
    out->nstates += pl.states_count;
  }
  return ENPU_OK;
}

int store_bucket_bundle_read(const store_policy_tables *p, uint32_t bi, store_bucket_bundle *out, enpu_err *err) {
  memset(out, 0, sizeof *out);
  ENPU_RETURN_IF(bi >= p->nbuckets, err, ENPU_ERR_FORMAT, "policy %s: no bucket %u", p->name, bi);
  ENPU_RETURN_IF(p->nplan_states && !p->plan_states, err, ENPU_ERR_INVALID,
                 "policy %s: plan_states not loaded (store_load loads them)", p->name);
  const store_bucket_rec *b = &p->buckets[bi];
  out->bucket = *b;
  store_bucket_rec *k = &out->bucket;
  k->ops_first = k->ops_count = k->plan_first = k->plan_count = 0;
  k->walk_first = k->walk_count = 0;
  k->message[STORE_MSG_LEN - 1] = '\0';
  uint32_t *local = enpu_calloc(b->ops_count + 1, sizeof *local);
  int rc = local ? read_ops(p, bi, out, local, err)
                 : enpu_errorf(err, ENPU_ERR_NOMEM, "policy %s: no memory to read bucket %u", p->name, bi);
  if (rc == ENPU_OK) rc = read_walk(p, bi, out, local, err);
  if (rc == ENPU_OK) rc = read_plans(p, bi, out, local, err);
  free(local);
  if (rc < 0) store_bucket_bundle_free(out);
  return rc;
}

/* ---- building -------------------------------------------------------------------- */

struct store_policy_builder {
  store_policy_tables t;
  size_t cap[STORE_NTABLE];
  uint32_t *rows; /* scratch: a bundle's op rows, then their point counts */
  size_t rows_cap;
};

int store_policy_builder_create(const char *policy, store_policy_builder **out, enpu_err *err) {
  *out = NULL;
  ENPU_RETURN_IF(!policy || !policy[0] || strlen(policy) >= STORE_NAME_LEN || strchr(policy, '/'), err,
                 ENPU_ERR_INVALID, "store: bad policy name '%.64s'", policy ? policy : "");
  store_policy_builder *b = enpu_calloc(1, sizeof *b);
  ENPU_RETURN_IF(!b, err, ENPU_ERR_NOMEM, "store: no memory for the tables of policy %s", policy);
  memcpy(b->t.name, policy, strlen(policy) + 1);
  *out = b;
  return ENPU_OK;
}

void store_policy_builder_free(store_policy_builder *b) {
  if (!b) return;
  store_policy_tables_free(&b->t);
  free(b->rows);
  free(b);
}

const store_policy_tables *store_policy_builder_tables(const store_policy_builder *b) { return &b->t; }

/* n more rows at the end of table t, for the caller to fill whole (records are copied
 * in; the checksum and the file see only their columns, never padding).
 * @return 0 or ENPU_ERR_NOMEM. */
static int push_rows(store_policy_builder *b, store_table t, size_t n, enpu_err *err) {
  size_t *rows = NULL;
  void **slot = store_table_slot(&b->t, t, &rows);
  ENPU_RETURN_IF(enpu_grow(slot, &b->cap[t], *rows + n, store_tables[t].record_bytes) < 0, err, ENPU_ERR_NOMEM,
                 "store: no memory for %zu rows of table %s", *rows + n, store_tables[t].name);
  *rows += n;
  return ENPU_OK;
}

/* A string column copied zero-padded, so the bytes written depend only on the text. */
static void copy_str(char *dst, const char *src, size_t width) {
  size_t n = strnlen(src, width - 1);
  memcpy(dst, src, n);
  memset(dst + n, 0, width - n);
}

int store_policy_builder_add_op(store_policy_builder *b, const store_op_rec *op, const store_pareto_rec *points,
                                uint32_t npoints, enpu_err *err) {
  const store_policy_tables *t = &b->t;
  ENPU_RETURN_IF(npoints == 0 || (t->nops && op->signature <= t->ops[t->nops - 1].signature), err, ENPU_ERR_INVALID,
                 "store: policy %s: op %016llx has no points or is not above the last", t->name,
                 (unsigned long long)op->signature);
  ENPU_RETURN_IF((uint64_t)t->nops + 1 > UINT32_MAX || (uint64_t)t->npareto + npoints > UINT32_MAX, err,
                 ENPU_ERR_RANGE, "store: policy %s: more than 2^32 ops or Pareto points", t->name);
  const uint32_t row = (uint32_t)t->nops, first = (uint32_t)t->npareto;
  ENPU_FORWARD(push_rows(b, STORE_T_OPS, 1, err));
  ENPU_FORWARD(push_rows(b, STORE_T_PARETO, npoints, err));
  store_op_rec *o = &b->t.ops[row];
  store_pareto_rec *pts = &b->t.pareto[first];
  *o = *op;
  copy_str(o->name, op->name, STORE_NAME_LEN);
  o->pareto_first = first;
  o->pareto_count = npoints;
  memcpy(pts, points, npoints * sizeof *pts);
  for (uint32_t i = 0; i < npoints; i++) pts[i].op = row;
  return ENPU_OK;
}

/* The op rows of the bundle's ops into b->rows[0..nops) and their point counts into
 * b->rows[nops..2 nops). @return 1, 0 when an op is not in the builder, or NOMEM. */
static int map_ops(store_policy_builder *b, const store_bucket_bundle *bundle, enpu_err *err) {
  ENPU_RETURN_IF(enpu_grow((void **)&b->rows, &b->rows_cap, 2 * (size_t)bundle->nops + 1, sizeof *b->rows) < 0, err,
                 ENPU_ERR_NOMEM, "store: no memory to map a bucket's ops");
  const store_policy_tables *t = &b->t;
  for (uint32_t i = 0; i < bundle->nops; i++) {
    size_t lo = 0, hi = t->nops;
    while (lo < hi) { /* the builder's ops ascend by signature */
      size_t mid = lo + (hi - lo) / 2;
      if (t->ops[mid].signature < bundle->ops[i].signature) lo = mid + 1;
      else hi = mid;
    }
    if (lo == t->nops || t->ops[lo].signature != bundle->ops[i].signature) return 0;
    b->rows[i] = (uint32_t)lo;
    b->rows[bundle->nops + i] = t->ops[lo].pareto_count;
  }
  return 1;
}

/* The bundle's rows, its ops mapped by b->rows (map_ops). */
static int append_rows(store_policy_builder *b, const store_bucket_bundle *bundle, enpu_err *err) {
  store_policy_tables *t = &b->t;
  const uint32_t bi = (uint32_t)t->nbuckets, plan_base = (uint32_t)t->nplans;
  const uint32_t ops_base = (uint32_t)t->nbucket_ops;
  const uint64_t walk_base = t->nwalk, states_base = t->nplan_states;
  static const store_table tables[] = {STORE_T_BUCKETS, STORE_T_BUCKET_OPS, STORE_T_WALK, STORE_T_PLANS,
                                       STORE_T_PLAN_STATES};
  const uint64_t n[] = {1, bundle->nops, bundle->nwalk, bundle->nplans, bundle->nstates};
  for (int i = 0; i < 5; i++) ENPU_FORWARD(push_rows(b, tables[i], (size_t)n[i], err));
  store_bucket_rec *bk = &t->buckets[bi];
  *bk = bundle->bucket;
  copy_str(bk->message, bundle->bucket.message, STORE_MSG_LEN);
  bk->ops_first = ops_base, bk->ops_count = bundle->nops;
  bk->walk_first = walk_base, bk->walk_count = bundle->nwalk;
  bk->plan_first = plan_base, bk->plan_count = bundle->nplans;
  const store_op_rec *ops = t->ops;
  for (uint32_t i = 0; i < bundle->nops; i++)
    t->bucket_ops[ops_base + i] = (store_bucket_op_rec){
        .bucket = bi, .op = b->rows[i], .multiplicity = bundle->ops[i].multiplicity};
  for (uint64_t i = 0; i < bundle->nwalk; i++) {
    store_walk_rec *w = &t->walk[walk_base + i];
    *w = bundle->walk[i];
    w->bucket = bi;
    w->op = b->rows[bundle->walk[i].op];
    w->pareto += ops[w->op].pareto_first;
  }
  for (uint32_t i = 0; i < bundle->nplans; i++) {
    store_plan_rec *pl = &t->plans[plan_base + i];
    *pl = bundle->plans[i];
    pl->bucket = bi;
    pl->states_first += states_base;
  }
  for (uint64_t i = 0; i < bundle->nstates; i++) {
    store_plan_state_rec *st = &t->plan_states[states_base + i];
    *st = bundle->states[i];
    st->plan += plan_base;
    st->op = b->rows[bundle->states[i].op];
    if (st->pareto != STORE_NO_INDEX) st->pareto += ops[st->op].pareto_first;
  }
  return 1;
}

int store_bucket_bundle_append(store_policy_builder *b, const store_bucket_bundle *bundle, enpu_err *err) {
  const store_policy_tables *t = &b->t;
  const int mapped = map_ops(b, bundle, err);
  if (mapped <= 0) return mapped;
  ENPU_FORWARD(store_bucket_bundle_check(bundle, b->rows + bundle->nops, err));
  ENPU_RETURN_IF((uint64_t)t->nbuckets + 1 > UINT32_MAX || (uint64_t)t->nbucket_ops + bundle->nops > UINT32_MAX ||
                     (uint64_t)t->nplans + bundle->nplans > UINT32_MAX,
                 err, ENPU_ERR_RANGE, "store: policy %s: more than 2^32 buckets, bucket ops or plans", t->name);
  return append_rows(b, bundle, err);
}

int store_writer_append_tables(store_writer *w, const store_policy_tables *t, enpu_err *err) {
  for (int i = 0; i < STORE_NTABLE; i++) {
    size_t n = 0;
    const void *rows = store_policy_table(t, (store_table)i, &n);
    ENPU_FORWARD(store_writer_append(w, t->name, (store_table)i, rows, n, err));
  }
  return ENPU_OK;
}
