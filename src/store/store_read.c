/* store_read.c — the one code path that reads a plan store: open the file, check its
 * format_version, load every table of every policy into memory and validate every index
 * and range once. planstore_open (the serving reader) and store_load (the farm and
 * `enpu store`) both call store_read; nothing else reads tables.
 *
 * Before a table is read, its layout is checked against the file (a crafted store must
 * not make HDF5 or this file allocate more than the file can justify): a 1-D compound of
 * at most STORE_MAX_RECORD_BYTES per row and UINT32_MAX rows; stored bytes within the
 * file size; contiguous, compact or chunked storage in the file itself (no virtual or
 * external data); chunks of at most STORE_MAX_CHUNK_BYTES; only shuffle and zstd
 * filters, zstd with its chunk-size bound equal to the real chunk size; the
 * uncompressed table at most STORE_MAX_ZSTD_RATIO times its stored bytes (1x without
 * zstd); and every chunk present, inside the file, with no filter skipped.
 *
 * Invariants after store_read succeeds (so lookups need no further checks):
 *  - every op/pareto/bucket/walk/plan index and [first, first+count) range read from the
 *    file lies inside its table (64-bit arithmetic, no overflow);
 *  - an op's Pareto points belong to it and are sorted by time; every bucket's ops are
 *    strictly increasing; replaying any bucket's whole walk is consistent
 *    (store_walk_replay accepts it), and its cumulative times are finite and
 *    non-decreasing;
 *  - when loaded, every plan_states row belongs to the plan whose range holds it, names
 *    an op of the table and a Pareto point of that op (or STORE_NO_INDEX);
 *  - `order` lists the buckets sorted by (phase, batch, seq) without duplicates;
 *  - strings read from the file are NUL-terminated. */
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <unistd.h>

#include "store_internal.h"

#define STORE_MAX_CHUNK_BYTES (4u << 20) /* the writer makes ~64 KiB chunks */
/* Uncompressed bytes per stored byte; real stores stay far below (see schemas/planstore.md). */
#define STORE_MAX_ZSTD_RATIO 4096
#define STORE_MAX_FILTER_VALUES 8
#define STORE_MIN_CHUNK_STORED 8               /* bytes: a zstd frame is longer */
#define STORE_CONVERT_BUFFER ((size_t)1 << 20) /* HDF5's default type conversion buffer */

#define BAD(...) enpu_errorf(err, ENPU_ERR_FORMAT, __VA_ARGS__)

/* ---- loading ------------------------------------------------------------------- */

/* Make every fixed string column of the rows NUL-terminated, whatever the file held. */
static void terminate_strings(store_table t, char *rows, size_t n) {
  const store_table_desc *d = &store_tables[t];
  for (size_t f = 0; f < d->nfields; f++) {
    if (d->fields[f].kind != STORE_F_STR) continue;
    for (size_t i = 0; i < n; i++) rows[i * d->record_bytes + d->fields[f].offset + d->fields[f].count - 1] = '\0';
  }
}

/* The filter pipeline of a chunked table: shuffle and zstd only, zstd bounded by the
 * real chunk size. *zstd says whether zstd is in it. */
static int check_filters(hid_t dcpl, uint64_t chunk_bytes, int *zstd, const char *what, enpu_err *err) {
  int nfilters = H5Pget_nfilters(dcpl);
  ENPU_RETURN_IF(nfilters < 0, err, ENPU_ERR_FORMAT, "%s: unreadable filter pipeline", what);
  *zstd = 0;
  for (int i = 0; i < nfilters; i++) {
    unsigned flags = 0, values[STORE_MAX_FILTER_VALUES] = {0};
    size_t nvalues = STORE_MAX_FILTER_VALUES;
    H5Z_filter_t id = H5Pget_filter2(dcpl, (unsigned)i, &flags, &nvalues, values, 0, NULL, NULL);
    if (id == H5Z_FILTER_SHUFFLE) continue;
    ENPU_RETURN_IF(id != STORE_ZSTD_FILTER_ID, err, ENPU_ERR_FORMAT,
                   "%s: filter %d is not shuffle (%d) or zstd (%d)", what, (int)id, H5Z_FILTER_SHUFFLE,
                   STORE_ZSTD_FILTER_ID);
    ENPU_RETURN_IF(nvalues < 2 || values[1] != chunk_bytes, err, ENPU_ERR_FORMAT,
                   "%s: zstd chunk bound %u is not the chunk size %llu bytes", what, nvalues < 2 ? 0u : values[1],
                   (unsigned long long)chunk_bytes);
    *zstd = 1;
  }
  return ENPU_OK;
}

/* Every chunk of a chunked table is in the file (the writer writes every row), went
 * through the whole filter pipeline (HDF5 copies a chunk whose index says "filters
 * skipped" as if it were chunk-sized), lies inside the file, and without filters holds
 * exactly one chunk. One index lookup per chunk, after the count is bounded by the
 * stored bytes (a stored chunk takes at least STORE_MIN_CHUNK_STORED bytes). */
static int check_chunks(hid_t ds, uint64_t rows, hsize_t chunk, uint64_t chunk_bytes, int filtered, uint64_t stored,
                        uint64_t file_bytes, const char *what, enpu_err *err) {
  uint64_t nchunks = rows / chunk + (rows % chunk != 0);
  ENPU_RETURN_IF(nchunks > stored / STORE_MIN_CHUNK_STORED, err, ENPU_ERR_FORMAT,
                 "%s: %llu chunks cannot be stored in %llu bytes", what, (unsigned long long)nchunks,
                 (unsigned long long)stored);
  for (hsize_t at = 0; at < rows; at += chunk) {
    unsigned mask = 0;
    haddr_t addr = HADDR_UNDEF;
    hsize_t size = 0;
    ENPU_RETURN_IF(H5Dget_chunk_info_by_coord(ds, &at, &mask, &addr, &size) < 0 || addr == HADDR_UNDEF, err,
                   ENPU_ERR_FORMAT, "%s: the chunk at row %llu is missing", what, (unsigned long long)at);
    ENPU_RETURN_IF(mask != 0 || size > file_bytes || (!filtered && size != chunk_bytes), err, ENPU_ERR_FORMAT,
                   "%s: the chunk at row %llu (%llu bytes, filter mask 0x%x) is not a whole filtered chunk", what,
                   (unsigned long long)at, (unsigned long long)size, mask);
  }
  return ENPU_OK;
}

/* The checks of the file comment, before anything is read: `rows` rows of `record_bytes`
 * in a file of `file_bytes`. */
static int check_layout(hid_t ds, uint64_t rows, size_t record_bytes, uint64_t file_bytes, const char *what,
                        enpu_err *err) {
  ENPU_RETURN_IF(record_bytes == 0 || record_bytes > STORE_MAX_RECORD_BYTES, err, ENPU_ERR_FORMAT,
                 "%s: rows of %zu bytes (limit %d)", what, record_bytes, STORE_MAX_RECORD_BYTES);
  uint64_t stored = H5Dget_storage_size(ds);
  ENPU_RETURN_IF(stored > file_bytes, err, ENPU_ERR_FORMAT, "%s: %llu stored bytes in a file of %llu", what,
                 (unsigned long long)stored, (unsigned long long)file_bytes);
  hid_t dcpl = H5Dget_create_plist(ds);
  ENPU_RETURN_IF(dcpl < 0, err, ENPU_ERR_FORMAT, "%s: unreadable storage properties", what);
  H5D_layout_t layout = H5Pget_layout(dcpl);
  int external = H5Pget_external_count(dcpl), nfilters = H5Pget_nfilters(dcpl), zstd = 0, rc = ENPU_OK;
  hsize_t chunk = 0;
  if (layout != H5D_CONTIGUOUS && layout != H5D_COMPACT && layout != H5D_CHUNKED)
    rc = BAD("%s: storage layout %d is not contiguous, compact or chunked", what, (int)layout);
  else if (external != 0) rc = BAD("%s: data stored outside the file", what);
  else if (layout == H5D_CHUNKED &&
           (H5Pget_chunk(dcpl, 1, &chunk) != 1 || chunk == 0 || chunk > STORE_MAX_CHUNK_BYTES / record_bytes))
    rc = BAD("%s: chunks of %llu rows of %zu bytes (limit %u bytes)", what, (unsigned long long)chunk, record_bytes,
             STORE_MAX_CHUNK_BYTES);
  else if (layout == H5D_CHUNKED) rc = check_filters(dcpl, chunk * record_bytes, &zstd, what, err);
  H5Pclose(dcpl);
  ENPU_FORWARD(rc);
  /* rows <= UINT32_MAX and record_bytes <= 4096: no overflow. */
  uint64_t table_bytes = rows * record_bytes, limit = zstd ? stored * STORE_MAX_ZSTD_RATIO : stored;
  ENPU_RETURN_IF(table_bytes > limit, err, ENPU_ERR_FORMAT,
                 "%s: %llu rows (%llu bytes) cannot come from %llu stored bytes", what, (unsigned long long)rows,
                 (unsigned long long)table_bytes, (unsigned long long)stored);
  if (layout != H5D_CHUNKED) return ENPU_OK;
  return check_chunks(ds, rows, chunk, chunk * record_bytes, nfilters > 0, stored, file_bytes, what, err);
}

int store_read_attr_u64(hid_t loc, const char *name, uint64_t *out, enpu_err *err) {
  hid_t attr = H5Aexists(loc, name) > 0 ? H5Aopen(loc, name, H5P_DEFAULT) : H5I_INVALID_HID;
  hid_t type = attr < 0 ? -1 : H5Aget_type(attr), space = attr < 0 ? -1 : H5Aget_space(attr);
  herr_t rc = (type < 0 || space < 0 || H5Tget_class(type) != H5T_INTEGER ||
               H5Sget_simple_extent_npoints(space) != 1)
                  ? -1
                  : H5Aread(attr, H5T_NATIVE_UINT64, out);
  if (space >= 0) H5Sclose(space);
  if (type >= 0) H5Tclose(type);
  if (attr >= 0) H5Aclose(attr);
  ENPU_RETURN_IF(rc < 0, err, ENPU_ERR_FORMAT, "missing or unreadable attribute %s (u64 expected)", name);
  return ENPU_OK;
}

/* All `dims` rows of table t from ds (file type ftype) into a new array. */
static int read_rows(hid_t ds, hid_t ftype, store_table t, hsize_t dims, const char *what, char **out,
                     enpu_err *err) {
  char *rows = enpu_calloc((size_t)dims, store_tables[t].record_bytes);
  ENPU_RETURN_IF(!rows, err, ENPU_ERR_NOMEM, "%s: no memory for %llu rows", what, (unsigned long long)dims);
  hid_t mem = H5I_INVALID_HID;
  int rc = store_table_types(t, &mem, NULL, err);
  /* HDF5 clears its 1 MiB conversion and background buffers on every read: sized to
   * the table instead, opening a store of many small tables costs a tenth. */
  size_t row_bytes = store_tables[t].record_bytes > H5Tget_size(ftype) ? store_tables[t].record_bytes
                                                                       : H5Tget_size(ftype);
  size_t buffer = (size_t)dims < STORE_CONVERT_BUFFER / row_bytes ? (size_t)dims * row_bytes : STORE_CONVERT_BUFFER;
  hid_t dxpl = H5Pcreate(H5P_DATASET_XFER);
  if (rc == ENPU_OK && (dxpl < 0 || H5Pset_buffer(dxpl, buffer, NULL, NULL) < 0))
    rc = enpu_errorf(err, ENPU_ERR_INTERNAL, "%s: cannot set up the read", what);
  if (rc == ENPU_OK && H5Dread(ds, mem, H5S_ALL, H5S_ALL, dxpl, rows) < 0)
    rc = BAD("%s: cannot read it (corrupt, or its columns differ)", what);
  if (dxpl >= 0) H5Pclose(dxpl);
  if (mem >= 0) H5Tclose(mem);
  if (rc < 0) {
    free(rows);
    return rc;
  }
  terminate_strings(t, rows, (size_t)dims);
  *out = rows;
  return ENPU_OK;
}

/* The rows read are the rows written: the table's checksum attribute matches them. */
static int check_checksum(hid_t ds, store_table t, const void *rows, size_t n, const char *what, enpu_err *err) {
  uint64_t stored = 0, computed = 0;
  if (store_read_attr_u64(ds, STORE_ATTR_TABLE_CHECKSUM, &stored, err) < 0) {
    enpu_err_prefix(err, "%s: damaged: ", what);
    return ENPU_ERR_FORMAT;
  }
  ENPU_FORWARD(store_table_checksum(t, rows, n, &computed, err));
#ifdef FUZZING_BUILD_MODE_UNSAFE_FOR_PRODUCTION
  /* A fuzzer's mutation cannot update the checksum: compare nothing, so it reaches the
   * checks below, which a crafted store (whose author computes checksums) meets. */
  stored = computed;
#endif
  ENPU_RETURN_IF(stored != computed, err, ENPU_ERR_FORMAT,
                 "%s: damaged: checksum mismatch (stored %016llx, rows read %016llx)", what,
                 (unsigned long long)stored, (unsigned long long)computed);
  return ENPU_OK;
}

/* Read one table of a policy group; a missing dataset is an empty table. */
static int load_table(hid_t group, store_policy_tables *p, store_table t, int load_rows, uint64_t file_bytes,
                      enpu_err *err) {
  const char *name = store_tables[t].name;
  char what[STORE_NAME_LEN + 32];
  snprintf(what, sizeof what, "policy %s: table %s", p->name, name);
  htri_t exists = H5Lexists(group, name, H5P_DEFAULT);
  ENPU_RETURN_IF(exists < 0, err, ENPU_ERR_FORMAT, "%s: cannot look it up", what);
  if (!exists) return ENPU_OK;
  hid_t ds = H5Dopen2(group, name, H5P_DEFAULT);
  ENPU_RETURN_IF(ds < 0, err, ENPU_ERR_FORMAT, "%s is not a dataset", what);
  hid_t space = H5Dget_space(ds), ftype = H5Dget_type(ds);
  hsize_t dims = 0;
  int rank = space < 0 ? -1 : H5Sget_simple_extent_ndims(space);
  if (rank == 1) H5Sget_simple_extent_dims(space, &dims, NULL);
  int rc = ENPU_OK;
  if (rank != 1 || ftype < 0 || H5Tget_class(ftype) != H5T_COMPOUND)
    rc = BAD("%s is not a 1-D compound dataset", what);
  else if (dims > UINT32_MAX) rc = BAD("%s has %llu rows (limit %u)", what, (unsigned long long)dims, UINT32_MAX);
  else rc = check_layout(ds, dims, H5Tget_size(ftype), file_bytes, what, err);
  size_t *count = NULL;
  void **slot = store_table_slot(p, t, &count);
  *count = rc == ENPU_OK ? (size_t)dims : 0;
  char *rows = NULL;
  if (rc == ENPU_OK && load_rows && dims > 0) rc = read_rows(ds, ftype, t, dims, what, &rows, err);
  if (rc == ENPU_OK && load_rows) rc = check_checksum(ds, t, rows, (size_t)dims, what, err);
  if (rc == ENPU_OK) *slot = rows;
  else free(rows);
  if (ftype >= 0) H5Tclose(ftype);
  if (space >= 0) H5Sclose(space);
  H5Dclose(ds);
  return rc;
}

/* ---- validation ---------------------------------------------------------------- */

/* Is [first, first+count) inside a table of `rows` rows? */
static int in_table(uint64_t first, uint64_t count, size_t rows) { return first <= rows && count <= rows - first; }

static int check_ops(const store_policy_tables *p, enpu_err *err) {
  for (size_t i = 0; i < p->npareto; i++)
    if (p->pareto[i].op >= p->nops || !isfinite(p->pareto[i].time_ns) || !(p->pareto[i].time_ns >= 0) ||
        !isfinite(p->pareto[i].energy_nj))
      return BAD("policy %s: pareto row %zu: op %u out of range or bad time/energy", p->name, i, p->pareto[i].op);
  for (size_t i = 0; i < p->nops; i++) {
    const store_op_rec *o = &p->ops[i];
    if (o->pareto_count == 0 || !in_table(o->pareto_first, o->pareto_count, p->npareto))
      return BAD("policy %s: op %zu: pareto range [%u, +%u) outside the %zu points", p->name, i, o->pareto_first,
                 o->pareto_count, p->npareto);
    for (uint32_t k = 0; k < o->pareto_count; k++) {
      const store_pareto_rec *pt = &p->pareto[o->pareto_first + k];
      if (pt->op != i || (k > 0 && pt->time_ns < pt[-1].time_ns))
        return BAD("policy %s: op %zu: pareto point %u belongs to op %u or is out of time order", p->name, i,
                   o->pareto_first + k, pt->op);
    }
  }
  return ENPU_OK;
}

long store_bucket_op_pos(const store_policy_tables *p, const store_bucket_rec *b, uint32_t op) {
  size_t lo = 0, hi = b->ops_count;
  while (lo < hi) {
    size_t mid = lo + (hi - lo) / 2;
    uint32_t v = p->bucket_ops[b->ops_first + mid].op;
    if (v == op) return (long)mid;
    if (v < op) lo = mid + 1;
    else hi = mid;
  }
  return -1;
}

store_walk_status store_walk_step(store_walk_pos *p, uint32_t to, uint64_t moved) {
  if (to < p->lead || moved == 0) return STORE_WALK_BACKWARD;
  if (to == p->lead && p->lead != p->trail) {
    if (moved > p->instances - p->lead_instances) return STORE_WALK_OVERFLOW;
    p->lead_instances += moved;
    return STORE_WALK_OK;
  }
  if (p->lead_instances != p->instances || moved > p->instances || to == p->lead) return STORE_WALK_EARLY;
  p->trail = p->lead, p->lead = to, p->lead_instances = moved;
  return STORE_WALK_OK;
}

int store_walk_replay(const store_policy_tables *p, uint32_t bi, uint64_t prefix, planstore_op_states *st,
                      enpu_err *err) {
  const store_bucket_rec *b = &p->buckets[bi];
  for (uint32_t i = 0; i < b->ops_count; i++) {
    const store_bucket_op_rec *bo = &p->bucket_ops[b->ops_first + i];
    const store_op_rec *o = &p->ops[bo->op];
    st[i] = (planstore_op_states){.op = bo->op,
                                  .signature = o->signature,
                                  .name = o->name,
                                  .instances = bo->multiplicity,
                                  .lead_instances = bo->multiplicity,
                                  .lead_pareto = o->pareto_first,
                                  .trail_pareto = o->pareto_first};
  }
  for (uint64_t k = 0; k < prefix; k++) {
    const store_walk_rec *w = &p->walk[b->walk_first + k];
    long pos = store_bucket_op_pos(p, b, w->op);
    if (pos < 0)
      return BAD("policy %s: walk row %llu: op %u is not an op of bucket %u", p->name,
                 (unsigned long long)(b->walk_first + k), w->op, bi);
    planstore_op_states *s = &st[pos];
    const store_op_rec *o = &p->ops[w->op];
    store_walk_pos at = {s->lead_pareto, s->trail_pareto, s->lead_instances, s->instances};
    const store_walk_status step = w->pareto >= (uint64_t)o->pareto_first + o->pareto_count
                                       ? STORE_WALK_BACKWARD
                                       : store_walk_step(&at, w->pareto, w->instances);
    if (step == STORE_WALK_BACKWARD)
      return BAD("policy %s: walk row %llu: pareto %u outside op %u's remaining points, or no instances", p->name,
                 (unsigned long long)(b->walk_first + k), w->pareto, w->op);
    if (step == STORE_WALK_OVERFLOW)
      return BAD("policy %s: walk row %llu: moves more instances of op %u than it has", p->name,
                 (unsigned long long)(b->walk_first + k), w->op);
    if (step == STORE_WALK_EARLY)
      return BAD("policy %s: walk row %llu: op %u moves on before all its instances moved", p->name,
                 (unsigned long long)(b->walk_first + k), w->op);
    s->lead_pareto = at.lead, s->trail_pareto = at.trail, s->lead_instances = at.lead_instances;
  }
  for (uint32_t i = 0; i < b->ops_count; i++) {
    const store_pareto_rec *lead = &p->pareto[st[i].lead_pareto], *trail = &p->pareto[st[i].trail_pareto];
    memcpy(st[i].lead_states, lead->states, PLANSTORE_NSTATE);
    memcpy(st[i].trail_states, trail->states, PLANSTORE_NSTATE);
    st[i].lead_time_ns = lead->time_ns;
    st[i].trail_time_ns = trail->time_ns;
    st[i].lead_energy_nj = lead->energy_nj;
    st[i].trail_energy_nj = trail->energy_nj;
  }
  return ENPU_OK;
}

static int check_bucket(const store_policy_tables *p, uint32_t bi, planstore_op_states *scratch, enpu_err *err) {
  const store_bucket_rec *b = &p->buckets[bi];
  if (b->phase > STORE_PHASE_DECODE || b->status >= STORE_NBUCKET_STATUS || b->budget > STORE_BUDGET_PAPER ||
      b->batch < 1 || b->seq < 1)
    return BAD("policy %s: bucket %u: bad phase %u, status %u, budget mode %u, batch %d or seq %d", p->name, bi,
               b->phase, b->status, b->budget, b->batch, b->seq);
  if (b->status == STORE_BUCKET_PENDING && (b->ops_count || b->walk_count || b->plan_count))
    return BAD("policy %s: bucket %u: not compiled yet, but has ops, walk steps or plans", p->name, bi);
  if (!in_table(b->ops_first, b->ops_count, p->nbucket_ops) || !in_table(b->walk_first, b->walk_count, p->nwalk) ||
      !in_table(b->plan_first, b->plan_count, p->nplans))
    return BAD("policy %s: bucket %u: ops, walk or plan range outside its table", p->name, bi);
  if (!isfinite(b->t_nodvfs_ns) || !isfinite(b->t_peak_ns) || !isfinite(b->e_nodvfs_nj) ||
      !isfinite(b->walk_start_time_ns) || !isfinite(b->walk_start_energy_nj))
    return BAD("policy %s: bucket %u: non-finite time or energy", p->name, bi);
  for (uint32_t i = 0; i < b->ops_count; i++) {
    const store_bucket_op_rec *bo = &p->bucket_ops[b->ops_first + i];
    if (bo->bucket != bi || bo->op >= p->nops || bo->multiplicity == 0 || (i > 0 && bo->op <= bo[-1].op))
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
    if (pl->bucket != bi || (pl->walk_prefix > b->walk_count && pl->walk_prefix != STORE_NO_PREFIX) ||
        !in_table(pl->states_first, pl->states_count, p->nplan_states))
      return BAD("policy %s: plan %u: wrong bucket, walk prefix or plan_states range out of range", p->name,
                 b->plan_first + k);
    if (pl->budget != b->budget || !isfinite(pl->cp_time_ns) || !isfinite(pl->overhead_pct) ||
        !isfinite(pl->paper_overhead_pct))
      return BAD("policy %s: plan %u: budget mode %u differs from its bucket's %u, or non-finite critical path "
                 "or overhead",
                 p->name, b->plan_first + k, pl->budget, b->budget);
    int loss_ok = pl->gated <= 1 && isfinite(pl->gates) && pl->gates >= 0;
    for (int c = 0; c < STORE_NSTATE; c++)
      loss_ok &= isfinite(pl->regulator_loss_nj[c]) && pl->regulator_loss_nj[c] >= 0;
    if (!loss_ok)
      return BAD("policy %s: plan %u: regulator loss not finite and >= 0, gated not 0 or 1, or gate "
                 "count not finite and >= 0",
                 p->name, b->plan_first + k);
  }
  return store_walk_replay(p, bi, b->walk_count, scratch, err);
}

/* Loaded plan_states rows: each belongs to the plan whose range holds it; a plan's runs
 * follow its bucket's ops and cover each op's instances exactly. */
static int check_plan_states(const store_policy_tables *p, enpu_err *err) {
  for (size_t k = 0; k < p->nplans; k++) {
    const store_plan_rec *pl = &p->plans[k];
    const store_bucket_rec *b = &p->buckets[pl->bucket]; /* checked by check_bucket */
    uint32_t j = 0;                                      /* the bucket op the runs are at */
    uint64_t n = 0;                                      /* its instances covered so far */
    for (uint64_t i = 0; i < pl->states_count; i++) {
      const uint64_t row = pl->states_first + i;
      const store_plan_state_rec *s = &p->plan_states[row];
      const store_op_rec *o = s->op < p->nops ? &p->ops[s->op] : NULL;
      int point_ok = s->pareto == STORE_NO_INDEX ||
                     (o && s->pareto >= o->pareto_first && s->pareto - o->pareto_first < o->pareto_count);
      if (s->plan != k || !o || !point_ok || s->instances == 0)
        return BAD("policy %s: plan_states row %llu: wrong plan, op %u out of range, pareto %u not its point, or "
                   "no instances",
                   p->name, (unsigned long long)row, s->op, s->pareto);
      while (j < b->ops_count && p->bucket_ops[b->ops_first + j].op != s->op &&
             n == p->bucket_ops[b->ops_first + j].multiplicity)
        j++, n = 0;
      if (j == b->ops_count || p->bucket_ops[b->ops_first + j].op != s->op ||
          s->instances > p->bucket_ops[b->ops_first + j].multiplicity - n)
        return BAD(
            "policy %s: plan_states row %llu: op %u out of its bucket's order, or more instances than it has",
            p->name, (unsigned long long)row, s->op);
      n += s->instances;
    }
    if (b->ops_count && (j != b->ops_count - 1 || n != p->bucket_ops[b->ops_first + j].multiplicity))
      return BAD("policy %s: plan %zu: its plan_states runs do not cover every op's instances", p->name, k);
  }
  return ENPU_OK;
}

/* Validation rows point at a plan of their bucket (store_load; planstore_open loads none). */
static int check_validation_tables(const store_policy_tables *p, enpu_err *err) {
  for (size_t i = 0; i < p->nvalidation; i++) {
    const store_validation_rec *v = &p->validation[i];
    const store_bucket_rec *b = v->bucket < p->nbuckets ? &p->buckets[v->bucket] : NULL;
    if (!b || v->plan < b->plan_first || v->plan - b->plan_first >= b->plan_count)
      return BAD("policy %s: validation row %zu: bucket %u out of range or plan %u not its plan", p->name, i,
                 v->bucket, v->plan);
  }
  return ENPU_OK;
}

int store_bucket_cmp(const store_bucket_rec *a, const store_bucket_rec *b) {
  if (a->phase != b->phase) return a->phase < b->phase ? -1 : 1;
  if (a->batch != b->batch) return a->batch < b->batch ? -1 : 1;
  if (a->seq != b->seq) return a->seq < b->seq ? -1 : 1;
  return 0;
}

/* qsort has no context pointer in C17, so an order sorts (key, row) pairs. */
typedef struct {
  uint64_t key;
  uint32_t row;
} row_key;

static int row_key_cmp(const void *a, const void *b) {
  const row_key *x = a, *y = b;
  if (x->key != y->key) return x->key < y->key ? -1 : 1;
  return (x->row > y->row) - (x->row < y->row);
}

int store_order_rows(const store_policy_tables *p, size_t n, uint64_t (*key)(const store_policy_tables *, size_t),
                     uint32_t **order, enpu_err *err) {
  row_key *keys = enpu_calloc(n + 1, sizeof *keys);
  *order = enpu_calloc(n + 1, sizeof **order);
  if (!keys || !*order) {
    free(keys);
    free(*order);
    *order = NULL;
    return enpu_errorf(err, ENPU_ERR_NOMEM, "policy %s: no memory for an index of %zu rows", p->name, n);
  }
  for (size_t i = 0; i < n; i++) keys[i] = (row_key){key(p, i), (uint32_t)i};
  qsort(keys, n, sizeof *keys, row_key_cmp);
  for (size_t i = 0; i < n; i++) (*order)[i] = keys[i].row;
  free(keys);
  return ENPU_OK;
}

uint64_t store_bucket_key(const store_policy_tables *p, size_t row) {
  const store_bucket_rec *b = &p->buckets[row];
  return (uint64_t)b->phase << 62 | (uint64_t)(uint32_t)b->batch << 31 | (uint32_t)b->seq;
}

static int index_buckets(store_policy *sp, enpu_err *err) {
  const store_policy_tables *p = &sp->t;
  ENPU_FORWARD(store_order_rows(p, p->nbuckets, store_bucket_key, &sp->order, err));
  for (size_t i = 0; i < p->nbuckets; i++) {
    const store_bucket_rec *b = &p->buckets[sp->order[i]];
    if (i > 0 && store_bucket_cmp(&p->buckets[sp->order[i - 1]], b) == 0)
      return BAD("policy %s: bucket phase %u batch %d seq %d appears twice", p->name, b->phase, b->batch, b->seq);
    if (b->batch > sp->max_batch[b->phase]) sp->max_batch[b->phase] = b->batch;
    sp->pending += b->status == STORE_BUCKET_PENDING;
    if (b->seq > sp->max_seq[b->phase]) sp->max_seq[b->phase] = b->seq;
  }
  return ENPU_OK;
}

static int check_policy_group(store_policy *sp, enpu_err *err) {
  const store_policy_tables *p = &sp->t;
  ENPU_FORWARD(check_ops(p, err));
  /* Scratch for replaying walks; a bucket whose ops range exceeds bucket_ops is rejected
   * by check_bucket before its walk is replayed, so this bound is enough. */
  size_t max_ops = 1;
  for (size_t i = 0; i < p->nbuckets; i++)
    if (p->buckets[i].ops_count > max_ops) max_ops = p->buckets[i].ops_count;
  if (max_ops > p->nbucket_ops) max_ops = p->nbucket_ops + 1;
  planstore_op_states *scratch = enpu_calloc(max_ops, sizeof *scratch);
  ENPU_RETURN_IF(!scratch, err, ENPU_ERR_NOMEM, "policy %s: out of memory", p->name);
  int rc = ENPU_OK;
  for (size_t i = 0; i < p->nbuckets && rc == ENPU_OK; i++) rc = check_bucket(p, (uint32_t)i, scratch, err);
  free(scratch);
  ENPU_FORWARD(rc);
  if (p->plan_states) ENPU_FORWARD(check_plan_states(p, err));
  if (p->validation) ENPU_FORWARD(check_validation_tables(p, err));
  return index_buckets(sp, err);
}

/* ---- open ---------------------------------------------------------------------- */

static int read_format_version(hid_t file, uint32_t *version, enpu_err *err) {
  htri_t exists = H5Aexists(file, STORE_ATTR_FORMAT_VERSION);
  ENPU_RETURN_IF(exists <= 0, err, ENPU_ERR_FORMAT, "not a plan store (no %s attribute)",
                 STORE_ATTR_FORMAT_VERSION);
  uint64_t v = 0;
  ENPU_FORWARD(store_read_attr_u64(file, STORE_ATTR_FORMAT_VERSION, &v, err));
  *version = v > UINT32_MAX ? UINT32_MAX : (uint32_t)v;
  return ENPU_OK;
}

static int check_format_version(hid_t file, enpu_err *err) {
  uint32_t version = 0;
  ENPU_FORWARD(read_format_version(file, &version, err));
  ENPU_RETURN_IF(version < STORE_FORMAT_VERSION, err, ENPU_ERR_FORMAT,
                 "format_version %u, written before this reader's format %u (%s): recompile it with this enpu "
                 "(`enpu farm` recomputes an older store)",
                 version, STORE_FORMAT_VERSION,
                 version < 2   ? "budget modes, per-rail V/f transitions, checksums, regulator loss"
                 : version < 3 ? "checksums, pending buckets, regulator loss"
                 : version < 4 ? "regulator loss and power gating per plan, policy variants"
                               : "the paper's overhead per plan");
  ENPU_RETURN_IF(version != STORE_FORMAT_VERSION, err, ENPU_ERR_FORMAT, "format_version %u, this reader reads %u",
                 version, STORE_FORMAT_VERSION);
  return ENPU_OK;
}

/* Whether path's file system refuses file locks (flock: ENOSYS and kin), as some NFS and
 * Lustre mounts do: why HDF5 could not open a readable file. */
static bool no_file_locks(const char *path) {
  const int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) return false;
  const bool none = flock(fd, LOCK_SH | LOCK_NB) != 0 &&
                    (errno == ENOSYS || errno == EOPNOTSUPP || errno == ENOLCK);
  close(fd);
  return none;
}

/* Open `path` read-only as an HDF5 file, with the system's reason when it cannot be read.
 * Call inside H5E_BEGIN_TRY. */
static int open_hdf5(const char *path, hid_t *file, enpu_err *err) {
  *file = H5I_INVALID_HID;
  /* a regular file (HDF5 would wait on a FIFO); the caller prefixes the path, so this
   * message goes without it */
  int fd;
  enpu_err why = {0};
  if (enpu_open_input(path, SIZE_MAX, &fd, NULL, &why) < 0)
    return enpu_errorf(err, why.code, "%s", why.msg + strlen(path) + 2);
  close(fd);
  htri_t is_hdf5 = H5Fis_hdf5(path);
  ENPU_RETURN_IF(is_hdf5 < 0, err, ENPU_ERR_IO, "cannot open");
  ENPU_RETURN_IF(is_hdf5 == 0, err, ENPU_ERR_FORMAT, "not a plan store (not an HDF5 file)");
  *file = store_h5_open_readonly(path);
  ENPU_RETURN_IF(*file < 0 && no_file_locks(path), err, ENPU_ERR_ENV,
                 "HDF5 cannot lock it: this file system has no file locks (flock: %s) and HDF5_USE_FILE_LOCKING "
                 "asks for them; set HDF5_USE_FILE_LOCKING=FALSE (or BEST_EFFORT): a store needs no HDF5 lock "
                 "(readers open published stores, writers exclude each other with <store>.lock)",
                 strerror(ENOSYS));
  ENPU_RETURN_IF(*file < 0, err, ENPU_ERR_FORMAT, "HDF5 cannot open it (truncated or corrupt)");
  return ENPU_OK;
}

/* HDF5's own file lock, best effort (as HDF5_USE_FILE_LOCKING=BEST_EFFORT): taken where
 * the file system has locks, skipped where it answers ENOSYS (some NFS and Lustre
 * mounts), which would otherwise make every read of a store there fail. Nothing here
 * depends on it: a reader opens a published store, which no one writes in place (a
 * writer renames a new file over it), and writers exclude each other with
 * `<store>.lock` (store_lock.c). */
hid_t store_h5_open_readonly(const char *path) {
  const hid_t fapl = H5Pcreate(H5P_FILE_ACCESS);
  if (fapl < 0) return H5I_INVALID_HID;
  const hid_t file = H5Pset_file_locking(fapl, 1, 1) < 0 ? H5I_INVALID_HID : H5Fopen(path, H5F_ACC_RDONLY, fapl);
  H5Pclose(fapl);
  return file;
}

void store_hdf5_quiet(void) { H5Eset_auto2(H5E_DEFAULT, NULL, NULL); }

int store_probe(const char *path, uint32_t *format_version, enpu_err *err) {
  int rc = ENPU_OK;
  H5E_BEGIN_TRY {
    hid_t file;
    rc = open_hdf5(path, &file, err);
    if (rc == ENPU_OK) rc = read_format_version(file, format_version, err);
    if (file >= 0) H5Fclose(file);
  }
  H5E_END_TRY;
  if (rc < 0) enpu_err_prefix(err, "%s: ", path);
  return rc;
}

/* The name of policy number idx (name order) into name[STORE_NAME_LEN]. */
static int policy_name(hid_t policies, hsize_t idx, char *name, enpu_err *err) {
  ssize_t len = H5Lget_name_by_idx(policies, ".", H5_INDEX_NAME, H5_ITER_INC, idx, name, STORE_NAME_LEN,
                                   H5P_DEFAULT);
  ENPU_RETURN_IF(len <= 0 || (size_t)len >= STORE_NAME_LEN, err, ENPU_ERR_FORMAT,
                 "policy %llu: missing or too long name", (unsigned long long)idx);
  return ENPU_OK;
}

static int load_policy(hid_t policies, hsize_t idx, store_policy *sp, int with_plan_states, uint64_t file_bytes,
                       enpu_err *err) {
  store_policy_tables *p = &sp->t;
  ENPU_FORWARD(policy_name(policies, idx, p->name, err));
  hid_t g = H5Gopen2(policies, p->name, H5P_DEFAULT);
  ENPU_RETURN_IF(g < 0, err, ENPU_ERR_FORMAT, "policy %s is not a group", p->name);
  int rc = ENPU_OK;
  for (int t = 0; t < STORE_NTABLE && rc == ENPU_OK; t++)
    rc = load_table(g, p, (store_table)t, t < STORE_T_PLAN_STATES || with_plan_states, file_bytes, err);
  H5Gclose(g);
  ENPU_FORWARD(rc);
  return check_policy_group(sp, err);
}

/* Policies to load: all (all != 0), else the one named `name` (NULL: the first). */
typedef struct {
  int all;
  const char *name;
} policy_filter;

/* The /policies group into *policies (to close when >= 0, also on failure) and its info;
 * more than `limit` policies is error `code`. */
static int open_policies(hid_t file, size_t limit, int code, hid_t *policies, H5G_info_t *info, enpu_err *err) {
  *policies = H5Gopen2(file, STORE_POLICIES_GROUP, H5P_DEFAULT);
  ENPU_RETURN_IF(*policies < 0 || H5Gget_info(*policies, info) < 0, err, ENPU_ERR_FORMAT, "no readable /%s group",
                 STORE_POLICIES_GROUP);
  ENPU_RETURN_IF(info->nlinks > limit, err, code, "%llu policies (limit %zu)", (unsigned long long)info->nlinks,
                 limit);
  return ENPU_OK;
}

static int read_policies(hid_t file, int with_plan_states, const policy_filter *f, store_policy **out, size_t *n,
                         enpu_err *err) {
  hsize_t file_bytes = 0;
  ENPU_RETURN_IF(H5Fget_filesize(file, &file_bytes) < 0, err, ENPU_ERR_FORMAT, "cannot tell the file size");
  hid_t policies = H5I_INVALID_HID;
  H5G_info_t info = {0};
  int rc = open_policies(file, STORE_MAX_POLICIES, ENPU_ERR_FORMAT, &policies, &info, err);
  if (rc == ENPU_OK && info.nlinks > 0) {
    *out = enpu_calloc(info.nlinks, sizeof **out);
    if (!*out) rc = enpu_errorf(err, ENPU_ERR_NOMEM, "out of memory");
  }
  hsize_t wanted = info.nlinks; /* the one policy a filter picks */
  for (hsize_t i = 0; rc == ENPU_OK && !f->all && i < info.nlinks && wanted == info.nlinks; i++) {
    char name[STORE_NAME_LEN];
    rc = policy_name(policies, i, name, err);
    if (rc == ENPU_OK && (!f->name || strcmp(name, f->name) == 0)) wanted = i;
  }
  if (rc == ENPU_OK && !f->all && wanted == info.nlinks)
    rc = enpu_errorf(err, ENPU_ERR_NOT_FOUND, "no policy '%s' in the store", f->name ? f->name : "");
  for (hsize_t i = 0; rc == ENPU_OK && i < info.nlinks; i++) {
    if (!f->all && i != wanted) continue;
    rc = load_policy(policies, i, &(*out)[*n], with_plan_states, file_bytes, err);
    ++*n;
  }
  if (policies >= 0) H5Gclose(policies);
  return rc;
}

int store_policy_names(const char *path, char (*names)[STORE_NAME_LEN], size_t cap, size_t *n, enpu_err *err) {
  *n = 0;
  int rc = ENPU_OK;
  H5E_BEGIN_TRY {
    hid_t file = H5I_INVALID_HID, policies = H5I_INVALID_HID;
    H5G_info_t info = {0};
    rc = store_file_open(path, &file, err);
    if (rc == ENPU_OK) rc = open_policies(file, cap, ENPU_ERR_RANGE, &policies, &info, err);
    for (hsize_t i = 0; rc == ENPU_OK && i < info.nlinks; i++, ++*n) rc = policy_name(policies, i, names[i], err);
    if (policies >= 0) H5Gclose(policies);
    if (file >= 0) H5Fclose(file);
  }
  H5E_END_TRY;
  if (rc < 0) enpu_err_prefix(err, "plan store %s: ", path);
  return rc;
}

int store_file_open(const char *path, hid_t *file, enpu_err *err) {
  *file = H5I_INVALID_HID;
  ENPU_FORWARD(store_zstd_register(err));
  hid_t f = H5I_INVALID_HID;
  ENPU_FORWARD(open_hdf5(path, &f, err));
  int rc = check_format_version(f, err);
  if (rc < 0) H5Fclose(f);
  else *file = f;
  return rc;
}

static int read_store(const char *path, int with_plan_states, const policy_filter *f, hid_t *file_out,
                      store_policy **out, size_t *n, enpu_err *err) {
  *out = NULL;
  *n = 0;
  if (file_out) *file_out = H5I_INVALID_HID;
  hid_t file = H5I_INVALID_HID;
  ENPU_FORWARD(store_file_open(path, &file, err));
  int rc = read_policies(file, with_plan_states, f, out, n, err);
  if (rc < 0 || !file_out) H5Fclose(file);
  if (rc < 0) {
    store_policies_free(*out, *n);
    *out = NULL;
    *n = 0;
    return rc;
  }
  if (file_out) *file_out = file;
  return ENPU_OK;
}

int store_read(const char *path, int with_plan_states, hid_t *file_out, store_policy **out, size_t *n,
               enpu_err *err) {
  const policy_filter all = {1, NULL};
  return read_store(path, with_plan_states, &all, file_out, out, n, err);
}

int store_read_policy(const char *path, const char *policy, store_policy **out, size_t *n, enpu_err *err) {
  const policy_filter one = {0, policy};
  return read_store(path, 0, &one, NULL, out, n, err);
}

void store_policy_tables_free(store_policy_tables *p) {
  for (int t = 0; t < STORE_NTABLE; t++) {
    size_t *rows = NULL;
    void **slot = store_table_slot(p, (store_table)t, &rows);
    free(*slot);
    *slot = NULL;
    *rows = 0;
  }
}

void store_policies_free(store_policy *p, size_t n) {
  if (!p) return;
  for (size_t i = 0; i < n; i++) {
    store_policy_tables_free(&p[i].t);
    free(p[i].order);
  }
  free(p);
}
