/* planstore.c — the plan store reader: load every table of every policy into memory,
 * validate every index and range once, then answer lookups from memory.
 *
 * Invariants after planstore_open succeeds (so lookups need no further checks):
 *  - every op/pareto/bucket/walk/plan index and [first, first+count) range read from the
 *    file lies inside its table (64-bit arithmetic, no overflow);
 *  - an op's Pareto points belong to it and are sorted by time; every bucket's ops are
 *    strictly increasing; replaying any bucket's whole walk is consistent (walk_replay
 *    accepts it), and its cumulative times are finite and non-decreasing;
 *  - `order` lists the buckets sorted by (phase, batch, seq) without duplicates;
 *  - strings read from the file are NUL-terminated. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "planstore.h"
#include "store_internal.h"

#define PLANSTORE_MAX_POLICIES 64

typedef struct {
  char name[STORE_NAME_LEN];
  store_op_rec *ops;
  store_pareto_rec *pareto;
  store_bucket_rec *buckets;
  store_bucket_op_rec *bops;
  store_walk_rec *walk;
  store_plan_rec *plans;
  size_t rows[STORE_NTABLE];
  uint32_t *order;            /* bucket rows sorted by (phase, batch, seq) */
  int32_t max_batch[2], max_seq[2];
} ps_policy;

struct planstore {
  ps_policy *policies;
  size_t npolicies;
};

/* ---- loading ------------------------------------------------------------------- */

static void *policy_table(ps_policy *p, store_table t) {
  switch (t) {
  case STORE_T_OPS: return p->ops;
  case STORE_T_PARETO: return p->pareto;
  case STORE_T_BUCKETS: return p->buckets;
  case STORE_T_BUCKET_OPS: return p->bops;
  case STORE_T_WALK: return p->walk;
  case STORE_T_PLANS: return p->plans;
  default: return NULL;
  }
}

static void policy_set_table(ps_policy *p, store_table t, void *rows) {
  switch (t) {
  case STORE_T_OPS: p->ops = rows; break;
  case STORE_T_PARETO: p->pareto = rows; break;
  case STORE_T_BUCKETS: p->buckets = rows; break;
  case STORE_T_BUCKET_OPS: p->bops = rows; break;
  case STORE_T_WALK: p->walk = rows; break;
  case STORE_T_PLANS: p->plans = rows; break;
  default: break; /* plan_states rows are counted, not loaded */
  }
}

/* Make every fixed string column of the rows NUL-terminated, whatever the file held. */
static void terminate_strings(store_table t, char *rows, size_t n) {
  const store_table_desc *d = &store_tables[t];
  for (size_t f = 0; f < d->nfields; f++) {
    if (d->fields[f].kind != STORE_F_STR) continue;
    for (size_t i = 0; i < n; i++) rows[i * d->record_bytes + d->fields[f].offset + d->fields[f].count - 1] = '\0';
  }
}

/* Read one table of a policy group; a missing dataset is an empty table. */
static int load_table(hid_t group, ps_policy *p, store_table t, enpu_err *err) {
  const char *name = store_tables[t].name;
  htri_t exists = H5Lexists(group, name, H5P_DEFAULT);
  ENPU_RETURN_IF(exists < 0, err, ENPU_ERR_FORMAT, "policy %s: cannot look up table %s", p->name, name);
  if (!exists) return ENPU_OK;
  hid_t ds = H5Dopen2(group, name, H5P_DEFAULT);
  ENPU_RETURN_IF(ds < 0, err, ENPU_ERR_FORMAT, "policy %s: %s is not a dataset", p->name, name);
  hid_t space = H5Dget_space(ds), ftype = H5Dget_type(ds);
  hsize_t dims = 0;
  int rank = space < 0 ? -1 : H5Sget_simple_extent_ndims(space);
  if (rank == 1) H5Sget_simple_extent_dims(space, &dims, NULL);
  int rc = ENPU_OK;
  if (rank != 1 || ftype < 0 || H5Tget_class(ftype) != H5T_COMPOUND)
    rc = enpu_errorf(err, ENPU_ERR_FORMAT, "policy %s: table %s is not a 1-D compound dataset", p->name, name);
  else if (dims > UINT32_MAX)
    rc = enpu_errorf(err, ENPU_ERR_FORMAT, "policy %s: table %s has %llu rows (limit %u)", p->name, name,
                     (unsigned long long)dims, UINT32_MAX);
  p->rows[t] = rc == ENPU_OK ? (size_t)dims : 0;
  if (rc == ENPU_OK && t != STORE_T_PLAN_STATES && dims > 0) {
    char *rows = enpu_calloc((size_t)dims, store_tables[t].record_bytes);
    hid_t mem = H5I_INVALID_HID;
    if (!rows) rc = enpu_errorf(err, ENPU_ERR_NOMEM, "policy %s: no memory for table %s", p->name, name);
    else rc = store_table_types(t, &mem, NULL, err);
    if (rc == ENPU_OK && H5Dread(ds, mem, H5S_ALL, H5S_ALL, H5P_DEFAULT, rows) < 0)
      rc = enpu_errorf(err, ENPU_ERR_FORMAT, "policy %s: cannot read table %s (corrupt, or its columns differ)",
                       p->name, name);
    if (mem >= 0) H5Tclose(mem);
    if (rc == ENPU_OK) terminate_strings(t, rows, (size_t)dims);
    if (rc == ENPU_OK) policy_set_table(p, t, rows);
    else free(rows);
  }
  if (ftype >= 0) H5Tclose(ftype);
  if (space >= 0) H5Sclose(space);
  H5Dclose(ds);
  return rc;
}

/* ---- validation ---------------------------------------------------------------- */

/* Is [first, first+count) inside a table of `rows` rows? */
static int range_ok(uint64_t first, uint64_t count, size_t rows) {
  return first <= rows && count <= rows - first;
}

#define BAD(...) enpu_errorf(err, ENPU_ERR_FORMAT, __VA_ARGS__)

static int validate_ops(const ps_policy *p, enpu_err *err) {
  for (size_t i = 0; i < p->rows[STORE_T_PARETO]; i++)
    if (p->pareto[i].op >= p->rows[STORE_T_OPS] || !isfinite(p->pareto[i].time_ns) ||
        !(p->pareto[i].time_ns >= 0) || !isfinite(p->pareto[i].energy_nj))
      return BAD("policy %s: pareto row %zu: op %u out of range or bad time/energy", p->name, i,
                 p->pareto[i].op);
  for (size_t i = 0; i < p->rows[STORE_T_OPS]; i++) {
    const store_op_rec *o = &p->ops[i];
    if (o->pareto_count == 0 || !range_ok(o->pareto_first, o->pareto_count, p->rows[STORE_T_PARETO]))
      return BAD("policy %s: op %zu: pareto range [%u, +%u) outside the %zu points", p->name, i,
                 o->pareto_first, o->pareto_count, p->rows[STORE_T_PARETO]);
    for (uint32_t k = 0; k < o->pareto_count; k++) {
      const store_pareto_rec *pt = &p->pareto[o->pareto_first + k];
      if (pt->op != i || (k > 0 && pt->time_ns < pt[-1].time_ns))
        return BAD("policy %s: op %zu: pareto point %u belongs to op %u or is out of time order", p->name, i,
                   o->pareto_first + k, pt->op);
    }
  }
  return ENPU_OK;
}

/* Position of `op` among the bucket's ops (binary search), or -1. */
static long bucket_op_pos(const ps_policy *p, const store_bucket_rec *b, uint32_t op) {
  size_t lo = 0, hi = b->ops_count;
  while (lo < hi) {
    size_t mid = lo + (hi - lo) / 2;
    uint32_t v = p->bops[b->ops_first + mid].op;
    if (v == op) return (long)mid;
    if (v < op) lo = mid + 1;
    else hi = mid;
  }
  return -1;
}

/* Replay the first `prefix` walk steps of bucket `bi` into st[0..ops_count): the one
 * definition of what a walk prefix means, used to validate at open and to answer
 * planstore_plan_states. A step that moves instances to the op's lead point adds them
 * there; a step to a later point is allowed only when every instance is at the lead. */
static int walk_replay(const ps_policy *p, uint32_t bi, uint64_t prefix, planstore_op_states *st,
                       enpu_err *err) {
  const store_bucket_rec *b = &p->buckets[bi];
  for (uint32_t i = 0; i < b->ops_count; i++) {
    const store_bucket_op_rec *bo = &p->bops[b->ops_first + i];
    const store_op_rec *o = &p->ops[bo->op];
    st[i] = (planstore_op_states){.op = bo->op, .signature = o->signature, .name = o->name,
                                  .instances = bo->multiplicity, .lead_instances = bo->multiplicity,
                                  .lead_pareto = o->pareto_first, .trail_pareto = o->pareto_first};
  }
  for (uint64_t k = 0; k < prefix; k++) {
    const store_walk_rec *w = &p->walk[b->walk_first + k];
    long pos = bucket_op_pos(p, b, w->op);
    if (pos < 0) return BAD("policy %s: walk row %llu: op %u is not an op of bucket %u", p->name,
                            (unsigned long long)(b->walk_first + k), w->op, bi);
    planstore_op_states *s = &st[pos];
    const store_op_rec *o = &p->ops[w->op];
    if (w->pareto >= (uint64_t)o->pareto_first + o->pareto_count || w->pareto < s->lead_pareto ||
        w->instances == 0)
      return BAD("policy %s: walk row %llu: pareto %u outside op %u's remaining points, or no instances",
                 p->name, (unsigned long long)(b->walk_first + k), w->pareto, w->op);
    if (w->pareto == s->lead_pareto && s->lead_pareto != s->trail_pareto) {
      if (w->instances > s->instances - s->lead_instances)
        return BAD("policy %s: walk row %llu: moves more instances of op %u than it has", p->name,
                   (unsigned long long)(b->walk_first + k), w->op);
      s->lead_instances += w->instances;
    } else {
      if (s->lead_instances != s->instances || w->instances > s->instances || w->pareto == s->lead_pareto)
        return BAD("policy %s: walk row %llu: op %u moves on before all its instances moved", p->name,
                   (unsigned long long)(b->walk_first + k), w->op);
      s->trail_pareto = s->lead_pareto;
      s->lead_pareto = w->pareto;
      s->lead_instances = w->instances;
    }
  }
  for (uint32_t i = 0; i < b->ops_count; i++) {
    const store_pareto_rec *lead = &p->pareto[st[i].lead_pareto], *trail = &p->pareto[st[i].trail_pareto];
    memcpy(st[i].lead_states, lead->states, PLANSTORE_NSTATE);
    memcpy(st[i].trail_states, trail->states, PLANSTORE_NSTATE);
    st[i].lead_time_ns = lead->time_ns;
    st[i].trail_time_ns = trail->time_ns;
  }
  return ENPU_OK;
}

static int validate_bucket(const ps_policy *p, uint32_t bi, planstore_op_states *scratch, enpu_err *err) {
  const store_bucket_rec *b = &p->buckets[bi];
  if (b->phase > STORE_PHASE_DECODE || b->status > STORE_BUCKET_FAILED || b->batch < 1 || b->seq < 1)
    return BAD("policy %s: bucket %u: bad phase %u, status %u, batch %d or seq %d", p->name, bi, b->phase,
               b->status, b->batch, b->seq);
  if (!range_ok(b->ops_first, b->ops_count, p->rows[STORE_T_BUCKET_OPS]) ||
      !range_ok(b->walk_first, b->walk_count, p->rows[STORE_T_WALK]) ||
      !range_ok(b->plan_first, b->plan_count, p->rows[STORE_T_PLANS]))
    return BAD("policy %s: bucket %u: ops, walk or plan range outside its table", p->name, bi);
  if (!isfinite(b->t_nodvfs_ns) || !isfinite(b->t_peak_ns) || !isfinite(b->e_nodvfs_nj) ||
      !isfinite(b->walk_start_time_ns) || !isfinite(b->walk_start_energy_nj))
    return BAD("policy %s: bucket %u: non-finite time or energy", p->name, bi);
  for (uint32_t i = 0; i < b->ops_count; i++) {
    const store_bucket_op_rec *bo = &p->bops[b->ops_first + i];
    if (bo->bucket != bi || bo->op >= p->rows[STORE_T_OPS] || bo->multiplicity == 0 ||
        (i > 0 && bo->op <= bo[-1].op))
      return BAD("policy %s: bucket_ops row %u: wrong bucket, op %u out of range or order, or no instances",
                 p->name, b->ops_first + i, bo->op);
  }
  double t = b->walk_start_time_ns;
  for (uint64_t k = 0; k < b->walk_count; k++) {
    const store_walk_rec *w = &p->walk[b->walk_first + k];
    if (w->bucket != bi || !isfinite(w->time_ns) || !isfinite(w->energy_nj) || w->time_ns < t)
      return BAD("policy %s: walk row %llu: wrong bucket, or time not finite and non-decreasing", p->name,
                 (unsigned long long)(b->walk_first + k));
    t = w->time_ns;
  }
  for (uint32_t k = 0; k < b->plan_count; k++) {
    const store_plan_rec *pl = &p->plans[b->plan_first + k];
    if (pl->bucket != bi || pl->walk_prefix > b->walk_count ||
        !range_ok(pl->states_first, pl->states_count, p->rows[STORE_T_PLAN_STATES]))
      return BAD("policy %s: plan %u: wrong bucket, walk prefix or plan_states range out of range", p->name,
                 b->plan_first + k);
  }
  return walk_replay(p, bi, b->walk_count, scratch, err);
}

static int bucket_cmp(const store_bucket_rec *a, const store_bucket_rec *b) {
  if (a->phase != b->phase) return a->phase < b->phase ? -1 : 1;
  if (a->batch != b->batch) return a->batch < b->batch ? -1 : 1;
  if (a->seq != b->seq) return a->seq < b->seq ? -1 : 1;
  return 0;
}

/* qsort has no context pointer in C17, so the bucket index sorts (key, row) pairs. */
typedef struct {
  store_bucket_rec key;
  uint32_t row;
} bucket_key;

static int bucket_key_cmp(const void *a, const void *b) {
  const bucket_key *x = a, *y = b;
  return bucket_cmp(&x->key, &y->key);
}

static int index_buckets(ps_policy *p, enpu_err *err) {
  size_t n = p->rows[STORE_T_BUCKETS];
  bucket_key *keys = enpu_calloc(n, sizeof *keys);
  p->order = enpu_calloc(n, sizeof *p->order);
  if (!keys || !p->order) {
    free(keys);
    return enpu_errorf(err, ENPU_ERR_NOMEM, "policy %s: no memory for the bucket index", p->name);
  }
  for (size_t i = 0; i < n; i++) keys[i] = (bucket_key){p->buckets[i], (uint32_t)i};
  qsort(keys, n, sizeof *keys, bucket_key_cmp);
  int rc = ENPU_OK;
  for (size_t i = 0; i < n && rc == ENPU_OK; i++) {
    const store_bucket_rec *b = &keys[i].key;
    if (i > 0 && bucket_cmp(&keys[i - 1].key, b) == 0)
      rc = BAD("policy %s: bucket phase %u batch %d seq %d appears twice", p->name, b->phase, b->batch, b->seq);
    p->order[i] = keys[i].row;
    if (b->batch > p->max_batch[b->phase]) p->max_batch[b->phase] = b->batch;
    if (b->seq > p->max_seq[b->phase]) p->max_seq[b->phase] = b->seq;
  }
  free(keys);
  return rc;
}

static int validate_policy(ps_policy *p, enpu_err *err) {
  ENPU_FORWARD(validate_ops(p, err));
  /* Scratch for replaying walks; a bucket whose ops range exceeds bucket_ops is rejected
   * by validate_bucket before its walk is replayed, so this bound is enough. */
  size_t max_ops = 1;
  for (size_t i = 0; i < p->rows[STORE_T_BUCKETS]; i++)
    if (p->buckets[i].ops_count > max_ops) max_ops = p->buckets[i].ops_count;
  if (max_ops > p->rows[STORE_T_BUCKET_OPS]) max_ops = p->rows[STORE_T_BUCKET_OPS] + 1;
  planstore_op_states *scratch = enpu_calloc(max_ops, sizeof *scratch);
  ENPU_RETURN_IF(!scratch, err, ENPU_ERR_NOMEM, "policy %s: out of memory", p->name);
  int rc = ENPU_OK;
  for (size_t i = 0; i < p->rows[STORE_T_BUCKETS] && rc == ENPU_OK; i++)
    rc = validate_bucket(p, (uint32_t)i, scratch, err);
  free(scratch);
  ENPU_FORWARD(rc);
  return index_buckets(p, err);
}

/* ---- open / close -------------------------------------------------------------- */

static int check_format_version(hid_t file, enpu_err *err) {
  htri_t exists = H5Aexists(file, STORE_ATTR_FORMAT_VERSION);
  ENPU_RETURN_IF(exists <= 0, err, ENPU_ERR_FORMAT, "not a plan store (no %s attribute)",
                 STORE_ATTR_FORMAT_VERSION);
  hid_t attr = H5Aopen(file, STORE_ATTR_FORMAT_VERSION, H5P_DEFAULT);
  hid_t type = attr < 0 ? -1 : H5Aget_type(attr), space = attr < 0 ? -1 : H5Aget_space(attr);
  unsigned version = 0;
  herr_t rc = (type < 0 || space < 0 || H5Tget_class(type) != H5T_INTEGER ||
               H5Sget_simple_extent_npoints(space) != 1)
                  ? -1
                  : H5Aread(attr, H5T_NATIVE_UINT, &version);
  if (space >= 0) H5Sclose(space);
  if (type >= 0) H5Tclose(type);
  if (attr >= 0) H5Aclose(attr);
  ENPU_RETURN_IF(rc < 0, err, ENPU_ERR_FORMAT, "unreadable %s attribute", STORE_ATTR_FORMAT_VERSION);
  ENPU_RETURN_IF(version != STORE_FORMAT_VERSION, err, ENPU_ERR_FORMAT,
                 "format_version %u, this reader reads %u", version, STORE_FORMAT_VERSION);
  return ENPU_OK;
}

static int load_policy(hid_t policies, hsize_t idx, ps_policy *p, enpu_err *err) {
  ssize_t len = H5Lget_name_by_idx(policies, ".", H5_INDEX_NAME, H5_ITER_INC, idx, p->name, sizeof p->name,
                                   H5P_DEFAULT);
  ENPU_RETURN_IF(len <= 0 || (size_t)len >= sizeof p->name, err, ENPU_ERR_FORMAT,
                 "policy %llu: missing or too long name", (unsigned long long)idx);
  hid_t g = H5Gopen2(policies, p->name, H5P_DEFAULT);
  ENPU_RETURN_IF(g < 0, err, ENPU_ERR_FORMAT, "policy %s is not a group", p->name);
  int rc = ENPU_OK;
  for (int t = 0; t < STORE_NTABLE && rc == ENPU_OK; t++) rc = load_table(g, p, (store_table)t, err);
  H5Gclose(g);
  ENPU_FORWARD(rc);
  return validate_policy(p, err);
}

static int open_store(const char *path, planstore *ps, enpu_err *err) {
  ENPU_FORWARD(store_zstd_register(err));
  htri_t is_hdf5 = H5Fis_hdf5(path);
  ENPU_RETURN_IF(is_hdf5 < 0, err, ENPU_ERR_IO, "cannot open");
  ENPU_RETURN_IF(is_hdf5 == 0, err, ENPU_ERR_FORMAT, "not an HDF5 file");
  hid_t file = H5Fopen(path, H5F_ACC_RDONLY, H5P_DEFAULT);
  ENPU_RETURN_IF(file < 0, err, ENPU_ERR_FORMAT, "HDF5 cannot open it (truncated or corrupt)");
  int rc = check_format_version(file, err);
  hid_t policies = rc < 0 ? -1 : H5Gopen2(file, STORE_POLICIES_GROUP, H5P_DEFAULT);
  H5G_info_t info = {0};
  if (rc == ENPU_OK && (policies < 0 || H5Gget_info(policies, &info) < 0))
    rc = enpu_errorf(err, ENPU_ERR_FORMAT, "no readable /%s group", STORE_POLICIES_GROUP);
  else if (rc == ENPU_OK && info.nlinks > PLANSTORE_MAX_POLICIES)
    rc = enpu_errorf(err, ENPU_ERR_FORMAT, "%llu policies (limit %d)", (unsigned long long)info.nlinks,
                     PLANSTORE_MAX_POLICIES);
  if (rc == ENPU_OK && info.nlinks > 0) {
    ps->policies = enpu_calloc(info.nlinks, sizeof *ps->policies);
    if (!ps->policies) rc = enpu_errorf(err, ENPU_ERR_NOMEM, "out of memory");
  }
  for (hsize_t i = 0; rc == ENPU_OK && i < info.nlinks; i++) {
    ps->npolicies = (size_t)i + 1;
    rc = load_policy(policies, i, &ps->policies[i], err);
  }
  if (policies >= 0) H5Gclose(policies);
  H5Fclose(file);
  return rc;
}

int planstore_open(const char *path, planstore **out, enpu_err *err) {
  ENPU_RETURN_IF(!out, err, ENPU_ERR_INVALID, "planstore_open: no output handle");
  *out = NULL;
  ENPU_RETURN_IF(!path, err, ENPU_ERR_INVALID, "planstore_open: no path");
  planstore *ps = enpu_calloc(1, sizeof *ps);
  ENPU_RETURN_IF(!ps, err, ENPU_ERR_NOMEM, "out of memory opening %s", path);
  int rc = ENPU_OK;
  /* A crafted file is an expected input here: report it through err, not HDF5's stderr
   * error stack. */
  H5E_BEGIN_TRY { rc = open_store(path, ps, err); }
  H5E_END_TRY;
  if (rc < 0) {
    enpu_err_prefix(err, "plan store %s: ", path);
    planstore_close(ps);
    return rc;
  }
  *out = ps;
  return ENPU_OK;
}

void planstore_close(planstore *ps) {
  if (!ps) return;
  for (size_t i = 0; i < ps->npolicies; i++) {
    for (int t = 0; t < STORE_NTABLE; t++) free(policy_table(&ps->policies[i], (store_table)t));
    free(ps->policies[i].order);
  }
  free(ps->policies);
  free(ps);
}

size_t planstore_policy_count(const planstore *ps) { return ps ? ps->npolicies : 0; }

const char *planstore_policy_name(const planstore *ps, size_t i) {
  return ps && i < ps->npolicies ? ps->policies[i].name : NULL;
}

/* ---- lookups ------------------------------------------------------------------- */

/* First position in `order` whose bucket is >= (phase, batch, seq). */
static size_t lower_bound(const ps_policy *p, int phase, int32_t batch, int32_t seq) {
  store_bucket_rec key = {.phase = (uint8_t)phase, .batch = batch, .seq = seq};
  size_t lo = 0, hi = p->rows[STORE_T_BUCKETS];
  while (lo < hi) {
    size_t mid = lo + (hi - lo) / 2;
    if (bucket_cmp(&p->buckets[p->order[mid]], &key) < 0) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

/* The smallest covering bucket: the first batch >= batch that has a seq >= seq. */
static long find_bucket(const ps_policy *p, int phase, int batch, int seq) {
  size_t n = p->rows[STORE_T_BUCKETS];
  size_t pos = lower_bound(p, phase, batch, 0);
  while (pos < n && p->buckets[p->order[pos]].phase == phase) {
    int32_t b = p->buckets[p->order[pos]].batch;
    size_t hit = lower_bound(p, phase, b, seq);
    if (hit < n && p->buckets[p->order[hit]].phase == phase && p->buckets[p->order[hit]].batch == b)
      return (long)p->order[hit];
    pos = b == INT32_MAX ? n : lower_bound(p, phase, b + 1, 0);
  }
  return -1;
}

static const ps_policy *find_policy(const planstore *ps, const char *policy, uint32_t *index) {
  for (size_t i = 0; i < ps->npolicies; i++)
    if (!policy || strcmp(ps->policies[i].name, policy) == 0) {
      *index = (uint32_t)i;
      return &ps->policies[i];
    }
  return NULL;
}

static int lookup_bucket(const planstore *ps, const char *policy, int phase, int batch, int seq,
                         const ps_policy **pol, planstore_plan *plan, enpu_err *err) {
  ENPU_RETURN_IF(!ps || !plan, err, ENPU_ERR_INVALID, "planstore_lookup: no store or plan");
  ENPU_RETURN_IF(phase != PLANSTORE_PREFILL && phase != PLANSTORE_DECODE, err, ENPU_ERR_INVALID,
                 "bad phase %d", phase);
  ENPU_RETURN_IF(batch < 1 || seq < 1, err, ENPU_ERR_INVALID, "batch %d and seq %d must be >= 1", batch, seq);
  uint32_t pi = 0;
  const ps_policy *p = find_policy(ps, policy, &pi);
  ENPU_RETURN_IF(!p, err, ENPU_ERR_NOT_FOUND, "no policy '%s' in the store", policy ? policy : "(any)");
  const char *phase_name = phase == PLANSTORE_PREFILL ? "prefill" : "decode";
  long bi = find_bucket(p, phase, batch, seq);
  ENPU_RETURN_IF(bi < 0 && p->max_batch[phase] == 0, err, ENPU_ERR_NOT_FOUND, "policy %s has no %s buckets",
                 p->name, phase_name);
  ENPU_RETURN_IF(bi < 0, err, ENPU_ERR_NOT_FOUND,
                 "no %s bucket covers batch %d seq %d in policy %s: the largest batch is %d, the largest seq %d",
                 phase_name, batch, seq, p->name, p->max_batch[phase], p->max_seq[phase]);
  const store_bucket_rec *b = &p->buckets[bi];
  ENPU_RETURN_IF(b->status == STORE_BUCKET_INFEASIBLE_CAPACITY, err, ENPU_ERR_INFEASIBLE,
                 "%s bucket batch %d seq %d does not fit the chips: %s", phase_name, b->batch, b->seq, b->message);
  ENPU_RETURN_IF(b->status == STORE_BUCKET_FAILED, err, ENPU_ERR_NOT_FOUND,
                 "%s bucket batch %d seq %d failed to compile: %s", phase_name, b->batch, b->seq, b->message);
  *plan = (planstore_plan){.policy = pi, .bucket = (uint32_t)bi, .phase = phase, .batch = b->batch,
                           .seq = b->seq, .t_nodvfs_ns = b->t_nodvfs_ns, .t_peak_ns = b->t_peak_ns,
                           .e_nodvfs_nj = b->e_nodvfs_nj, .walk_steps = b->walk_count};
  *pol = p;
  return ENPU_OK;
}

int planstore_lookup(const planstore *ps, const char *policy, int phase, int batch, int seq,
                     double target_ns, planstore_plan *plan, enpu_err *err) {
  const ps_policy *p = NULL;
  ENPU_FORWARD(lookup_bucket(ps, policy, phase, batch, seq, &p, plan, err));
  ENPU_RETURN_IF(isnan(target_ns), err, ENPU_ERR_INVALID, "target time is NaN");
  const store_bucket_rec *b = &p->buckets[plan->bucket];
  const store_walk_rec *walk = p->walk ? &p->walk[b->walk_first] : NULL;
  /* Longest prefix with time <= target: cumulative times are non-decreasing. */
  uint64_t lo = 0, hi = b->walk_count;
  while (lo < hi) {
    uint64_t mid = lo + (hi - lo) / 2;
    if (walk[mid].time_ns <= target_ns) lo = mid + 1;
    else hi = mid;
  }
  plan->target_ns = target_ns;
  plan->walk_prefix = lo;
  plan->time_ns = lo ? walk[lo - 1].time_ns : b->walk_start_time_ns;
  plan->energy_nj = lo ? walk[lo - 1].energy_nj : b->walk_start_energy_nj;
  plan->savings_vs_nodvfs = b->e_nodvfs_nj > 0 ? 1.0 - plan->energy_nj / b->e_nodvfs_nj : 0.0;
  /* The walk follows lower convex hulls, so the LP relaxation at the target moves the
   * next step only partly: linear interpolation inside that step. */
  plan->lower_bound_nj = plan->energy_nj;
  if (lo < b->walk_count && target_ns > plan->time_ns) {
    double f = (target_ns - plan->time_ns) / (walk[lo].time_ns - plan->time_ns);
    plan->lower_bound_nj = plan->energy_nj + f * (walk[lo].energy_nj - plan->energy_nj);
  }
  ENPU_RETURN_IF(target_ns < b->walk_start_time_ns, err, ENPU_ERR_INFEASIBLE,
                 "target %.0f ns is below the fastest plan of bucket batch %d seq %d (%.0f ns); "
                 "the fastest plan is returned",
                 target_ns, b->batch, b->seq, b->walk_start_time_ns);
  return ENPU_OK;
}

int planstore_lookup_slack(const planstore *ps, const char *policy, int phase, int batch, int seq,
                           double slack, planstore_plan *plan, enpu_err *err) {
  const ps_policy *p = NULL;
  ENPU_FORWARD(lookup_bucket(ps, policy, phase, batch, seq, &p, plan, err));
  ENPU_RETURN_IF(!(slack >= 0) || !isfinite(slack), err, ENPU_ERR_INVALID, "slack %g must be >= 0", slack);
  double base = fmax(plan->t_nodvfs_ns, plan->t_peak_ns);
  return planstore_lookup(ps, policy, phase, batch, seq, base + slack * plan->t_nodvfs_ns, plan, err);
}

/* The policy and bucket of a plan, if the plan can come from this store. */
static const ps_policy *plan_policy(const planstore *ps, const planstore_plan *plan) {
  if (!ps || !plan || plan->policy >= ps->npolicies) return NULL;
  const ps_policy *p = &ps->policies[plan->policy];
  if (plan->bucket >= p->rows[STORE_T_BUCKETS] || plan->walk_prefix > p->buckets[plan->bucket].walk_count)
    return NULL;
  return p;
}

size_t planstore_plan_op_count(const planstore *ps, const planstore_plan *plan) {
  const ps_policy *p = plan_policy(ps, plan);
  return p ? p->buckets[plan->bucket].ops_count : 0;
}

int planstore_plan_states(const planstore *ps, const planstore_plan *plan, planstore_op_states *out,
                          size_t cap, size_t *n, enpu_err *err) {
  const ps_policy *p = plan_policy(ps, plan);
  ENPU_RETURN_IF(!p || !n, err, ENPU_ERR_INVALID, "planstore_plan_states: plan is not from this store");
  size_t need = p->buckets[plan->bucket].ops_count;
  *n = need;
  ENPU_RETURN_IF(cap < need || (need && !out), err, ENPU_ERR_RANGE,
                 "planstore_plan_states: the bucket has %zu ops, room for %zu", need, cap);
  return walk_replay(p, plan->bucket, plan->walk_prefix, out, err);
}
