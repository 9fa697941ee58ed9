/* farm_codec.c — the byte encoding of op and bucket results, shared by MPI messages and
 * journal records, and the functions that free results.
 *
 * Invariants:
 *  - Little-endian, fixed-width fields, no padding: the bytes do not depend on the host
 *    or the compiler. Strings are written as their fixed-width column with every byte
 *    after the terminating NUL zero, so each result has exactly one encoding and
 *    decode(encode(r)) re-encodes to the same bytes.
 *  - Decoding trusts nothing: every count is bounded by the bytes that remain before
 *    anything is allocated (a crafted record cannot make it allocate more than a small
 *    multiple of its own size), every local index is checked against the result's own
 *    arrays, and a record must be consumed exactly. Any violation is ENPU_ERR_FORMAT
 *    and leaves the output empty. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "farm_internal.h"

/* The records' columns in encoding order (STORE_FIELD: kind and length from the C
 * member), one list for encoding and decoding both. Index columns that point into the
 * store's other tables (a point's op, a walk step's or plan's bucket) are not encoded. */
#define BUCKET(m) STORE_FIELD(store_bucket_rec, m)
#define PLAN(m) STORE_FIELD(store_plan_rec, m)
#define WALK(m) STORE_FIELD(store_walk_rec, m)
#define STATE(m) STORE_FIELD(store_plan_state_rec, m)
#define POINT(m) STORE_FIELD(store_pareto_rec, m)
#define OP(m) STORE_FIELD(store_bundle_op, m)
#define RESULT(m) STORE_FIELD(farm_op_result, m)

/* clang-format off */
static const store_field bucket_list[] = {
    BUCKET(phase), BUCKET(status), BUCKET(budget), BUCKET(input_hash), BUCKET(batch), BUCKET(seq),
    BUCKET(t_nodvfs_ns), BUCKET(t_peak_ns), BUCKET(e_nodvfs_nj), BUCKET(walk_start_time_ns),
    BUCKET(walk_start_energy_nj), BUCKET(message)};
static const store_field plan_list[] = {
    PLAN(budget), PLAN(slack), PLAN(budget_ns), PLAN(time_ns), PLAN(energy_nj), PLAN(cp_time_ns),
    PLAN(overhead_pct), PLAN(paper_overhead_pct), PLAN(lower_bound_nj), PLAN(savings_vs_nodvfs),
    PLAN(walk_prefix), PLAN(states_first), PLAN(states_count), PLAN(regulator_loss_nj), PLAN(gated), PLAN(gates)};
static const store_field walk_list[] = {WALK(op), WALK(pareto), WALK(instances), WALK(time_ns), WALK(energy_nj)};
static const store_field state_list[] = {STATE(plan), STATE(op), STATE(pareto), STATE(states), STATE(instances)};
static const store_field point_list[] = {POINT(states), POINT(time_ns), POINT(energy_nj), POINT(energy_by_slot_nj)};
static const store_field op_list[] = {OP(signature), OP(multiplicity)};
static const store_field result_list[] = {RESULT(policy), RESULT(key),         RESULT(kind),
                                          RESULT(name),   RESULT(evaluations), RESULT(npoints)};
/* clang-format on */

/* A record's columns and the size of its C struct (arrays of records step by it). */
typedef struct {
  const store_field *col;
  size_t n, size;
} columns;

/* clang-format off */
#define COLUMNS(list, rec) {list, sizeof list / sizeof list[0], sizeof(rec)}
/* clang-format on */
static const columns bucket_cols = COLUMNS(bucket_list, store_bucket_rec);
static const columns plan_cols = COLUMNS(plan_list, store_plan_rec);
static const columns walk_cols = COLUMNS(walk_list, store_walk_rec);
static const columns state_cols = COLUMNS(state_list, store_plan_state_rec);
static const columns point_cols = COLUMNS(point_list, store_pareto_rec);
static const columns op_cols = COLUMNS(op_list, store_bundle_op);
static const columns result_cols = COLUMNS(result_list, farm_op_result); /* then its points */

/* Encoded bytes of one record. */
static size_t record_bytes(const columns *c) {
  static const size_t width[] = {[STORE_F_U8] = 1,  [STORE_F_U32] = 4, [STORE_F_I32] = 4,
                                 [STORE_F_U64] = 8, [STORE_F_F64] = 8, [STORE_F_STR] = 1};
  size_t bytes = 0;
  for (size_t i = 0; i < c->n; i++) bytes += width[c->col[i].kind] * c->col[i].count;
  return bytes;
}

void farm_op_result_free(farm_op_result *r) {
  if (!r) return;
  free(r->points);
  memset(r, 0, sizeof *r);
}

void farm_bucket_result_free(farm_bucket_result *r) {
  if (!r) return;
  for (uint32_t i = 0; r->units && i < r->nunits; i++) farm_op_result_free(&r->units[i]);
  free(r->units);
  store_bucket_bundle_free(&r->bundle);
  memset(r, 0, sizeof *r);
}

void farm_buf_free(farm_buf *b) {
  if (!b) return;
  free(b->data);
  memset(b, 0, sizeof *b);
}

/* ---- writing ------------------------------------------------------------------- */

static unsigned char *put_u32(unsigned char *p, uint32_t v) {
  enpu_put_le32(p, v);
  return p + 4;
}

static unsigned char *put_u64(unsigned char *p, uint64_t v) {
  enpu_put_le64(p, v);
  return p + 8;
}

/* A fixed-width string column: its text, then zeros (the canonical form decode wants);
 * the last byte is always a terminator. */
static unsigned char *put_str(unsigned char *p, const char *s, size_t width) {
  size_t n = strnlen(s, width - 1);
  memcpy(p, s, n);
  memset(p + n, 0, width - n);
  return p + width;
}

/* One column value (element k of an array column) as bytes. */
static unsigned char *put_value(unsigned char *p, const store_field *f, const char *at, size_t k) {
  uint32_t u32;
  uint64_t u64;
  switch (f->kind) {
  case STORE_F_U8: *p = (unsigned char)at[k]; return p + 1;
  case STORE_F_U32:
  case STORE_F_I32: memcpy(&u32, at + 4 * k, 4); return put_u32(p, u32);
  case STORE_F_U64:
  case STORE_F_F64: memcpy(&u64, at + 8 * k, 8); return put_u64(p, u64);
  case STORE_F_STR: break;
  }
  return p;
}

/* n records of columns c from rec, encoded at p. */
static unsigned char *put_records(unsigned char *p, const columns *c, const void *rec, uint64_t n) {
  for (uint64_t r = 0; r < n; r++)
    for (size_t i = 0; i < c->n; i++) {
      const store_field *f = &c->col[i];
      const char *at = (const char *)rec + r * c->size + f->offset;
      if (f->kind == STORE_F_STR) p = put_str(p, at, f->count);
      for (size_t k = 0; f->kind != STORE_F_STR && k < f->count; k++) p = put_value(p, f, at, k);
    }
  return p;
}

/* Make room for `bytes` more bytes at the end of b. @return where they go, or NULL. */
static unsigned char *buf_reserve(farm_buf *b, size_t bytes, enpu_err *err) {
  if (bytes > SIZE_MAX - b->len || enpu_grow((void **)&b->data, &b->cap, b->len + bytes, 1) < 0) {
    enpu_errorf(err, ENPU_ERR_NOMEM, "farm: no memory to encode a %zu-byte result", bytes);
    return NULL;
  }
  unsigned char *p = b->data + b->len;
  b->len += bytes;
  return p;
}

/* n records of columns c added to *total, failing on overflow. */
static int add_size(size_t *total, uint64_t n, const columns *c) {
  const size_t each = record_bytes(c);
  if (n > (SIZE_MAX - *total) / each) return -1;
  *total += (size_t)n * each;
  return 0;
}

int farm_op_result_encode(const farm_op_result *r, farm_buf *b, enpu_err *err) {
  size_t bytes = 0;
  if (add_size(&bytes, 1, &result_cols) < 0 || add_size(&bytes, r->npoints, &point_cols) < 0)
    return enpu_errorf(err, ENPU_ERR_NOMEM, "farm: op result of %u points is too large", r->npoints);
  unsigned char *p = buf_reserve(b, bytes, err);
  if (!p) return ENPU_ERR_NOMEM;
  put_records(put_records(p, &result_cols, r, 1), &point_cols, r->points, r->npoints);
  return ENPU_OK;
}

int farm_part_result_encode(uint32_t part, const farm_op_result *r, farm_buf *b, enpu_err *err) {
  unsigned char *p = buf_reserve(b, 4, err);
  if (!p) return ENPU_ERR_NOMEM;
  put_u32(p, part);
  return farm_op_result_encode(r, b, err);
}

int farm_bucket_result_encode(const farm_bucket_result *r, farm_buf *b, enpu_err *err) {
  const store_bucket_bundle *u = &r->bundle;
  size_t bytes = 4 + 4 + 8 + 4 + 8 + 4;
  if (add_size(&bytes, 1, &bucket_cols) < 0 || add_size(&bytes, u->nops, &op_cols) < 0 ||
      add_size(&bytes, u->nwalk, &walk_cols) < 0 || add_size(&bytes, u->nplans, &plan_cols) < 0 ||
      add_size(&bytes, u->nstates, &state_cols) < 0)
    return enpu_errorf(err, ENPU_ERR_NOMEM, "farm: bucket result is too large to encode");
  unsigned char *p = buf_reserve(b, bytes, err);
  if (!p) return ENPU_ERR_NOMEM;
  p = put_u32(p, r->policy);
  p = put_records(p, &bucket_cols, &u->bucket, 1);
  p = put_records(put_u32(p, u->nops), &op_cols, u->ops, u->nops);
  p = put_records(put_u64(p, u->nwalk), &walk_cols, u->walk, u->nwalk);
  p = put_records(put_u32(p, u->nplans), &plan_cols, u->plans, u->nplans);
  p = put_records(put_u64(p, u->nstates), &state_cols, u->states, u->nstates);
  put_u32(p, r->nunits);
  for (uint32_t i = 0; i < r->nunits; i++) ENPU_FORWARD(farm_op_result_encode(&r->units[i], b, err));
  return ENPU_OK;
}

/* ---- reading ------------------------------------------------------------------- */

/* A cursor over untrusted bytes: a read past the end sets `short_read` and yields
 * zeros, so a section is read straight through and checked once at its end. */
typedef struct {
  const unsigned char *p;
  size_t left;
  int short_read;
} reader;

static const unsigned char *take(reader *rd, size_t n) {
  static const unsigned char zeros[STORE_MSG_LEN]; /* read-only: no mutable state */
  if (rd->short_read || n > rd->left) {
    rd->short_read = 1;
    return zeros;
  }
  const unsigned char *p = rd->p;
  rd->p += n;
  rd->left -= n;
  return p;
}

static uint32_t get_u32(reader *rd) { return enpu_get_le32(take(rd, 4)); }

static uint64_t get_u64(reader *rd) { return enpu_get_le64(take(rd, 8)); }

/* A fixed-width string column in canonical form (text, NUL, zeros). @return 0 or -1. */
static int get_str(reader *rd, char *out, size_t width) {
  const unsigned char *p = take(rd, width);
  memcpy(out, p, width);
  size_t n = strnlen(out, width);
  if (n == width) return -1;
  for (size_t i = n; i < width; i++)
    if (out[i] != 0) return -1;
  return 0;
}

/* One column value (element k of an array column) from the bytes. */
static void get_value(reader *rd, const store_field *f, char *at, size_t k) {
  uint32_t u32;
  uint64_t u64;
  switch (f->kind) {
  case STORE_F_U8: at[k] = (char)*take(rd, 1); return;
  case STORE_F_U32:
  case STORE_F_I32: u32 = get_u32(rd), memcpy(at + 4 * k, &u32, 4); return;
  case STORE_F_U64:
  case STORE_F_F64: u64 = get_u64(rd), memcpy(at + 8 * k, &u64, 8); return;
  case STORE_F_STR: return;
  }
}

/* n records of columns c into rec. @return 0, or -1 when a string is not canonical. */
static int get_records(reader *rd, const columns *c, void *rec, uint64_t n) {
  int bad = 0;
  for (uint64_t r = 0; r < n; r++)
    for (size_t i = 0; i < c->n; i++) {
      const store_field *f = &c->col[i];
      char *at = (char *)rec + r * c->size + f->offset;
      if (f->kind == STORE_F_STR) bad |= get_str(rd, at, f->count);
      for (size_t k = 0; f->kind != STORE_F_STR && k < f->count; k++) get_value(rd, f, at, k);
    }
  return bad ? -1 : 0;
}

/* Allocate n elements of `size` bytes for a section whose encoding takes `each` bytes
 * per element, after checking that the remaining bytes can hold them. @return 0 or the
 * error (FORMAT: the count is a lie; NOMEM). */
static int alloc_section(reader *rd, uint64_t n, size_t each, size_t size, void **out, const char *what,
                         enpu_err *err) {
  *out = NULL;
  if (rd->short_read || n > rd->left / each)
    return enpu_errorf(err, ENPU_ERR_FORMAT, "farm: result record claims %llu %s but only %zu bytes remain",
                       (unsigned long long)n, what, rd->left);
  if (n == 0) return ENPU_OK;
  *out = enpu_calloc((size_t)n, size);
  ENPU_RETURN_IF(!*out, err, ENPU_ERR_NOMEM, "farm: no memory for %llu %s", (unsigned long long)n, what);
  return ENPU_OK;
}

/* A section: its count (u32 or u64 as encoded), its records allocated and read. */
static int get_section(reader *rd, int wide, const columns *c, void **out, uint64_t *n, const char *what,
                       enpu_err *err) {
  *n = wide ? get_u64(rd) : get_u32(rd);
  ENPU_FORWARD(alloc_section(rd, *n, record_bytes(c), c->size, out, what, err));
  get_records(rd, c, *out, *n); /* no strings: cannot fail */
  return ENPU_OK;
}

#define BAD(...) enpu_errorf(err, ENPU_ERR_FORMAT, "farm: " __VA_ARGS__)

static int policy_ok(uint32_t code) {
  config_policy_spec spec;
  return config_policy_spec_decode(code, &spec) == ENPU_OK;
}

static int decode_op(reader *rd, farm_op_result *r, enpu_err *err) {
  const int name_bad = get_records(rd, &result_cols, r, 1);
  if (rd->short_read) return BAD("op result truncated in its header");
  if (!policy_ok(r->policy) || name_bad || r->npoints == 0)
    return BAD("op result %016llx: policy %u out of range, name not a terminated string, or no "
               "Pareto points",
               (unsigned long long)r->key, r->policy);
  ENPU_FORWARD(alloc_section(rd, r->npoints, record_bytes(&point_cols), point_cols.size, (void **)&r->points,
                             "Pareto points", err));
  get_records(rd, &point_cols, r->points, r->npoints);
  for (uint32_t i = 0; i < r->npoints; i++) {
    const store_pareto_rec *pt = &r->points[i];
    if (!isfinite(pt->time_ns) || !(pt->time_ns >= 0) || !isfinite(pt->energy_nj) ||
        (i > 0 && pt->time_ns < pt[-1].time_ns))
      return BAD("op result %016llx: Pareto point %u has a bad time/energy or is out of time "
                 "order",
                 (unsigned long long)r->key, i);
  }
  return ENPU_OK;
}

static int decode_bucket_head(reader *rd, farm_bucket_result *r, enpu_err *err) {
  store_bucket_rec *bk = &r->bundle.bucket;
  r->policy = get_u32(rd);
  int msg_bad = get_records(rd, &bucket_cols, bk, 1);
  if (rd->short_read) return BAD("bucket result truncated in its header");
  if (!policy_ok(r->policy) || bk->phase > STORE_PHASE_DECODE || bk->status > STORE_BUCKET_FAILED ||
      bk->budget > STORE_BUDGET_PAPER || bk->batch < 1 || bk->seq < 1 || msg_bad)
    return BAD("bucket result: policy %u, phase %u, status %u, budget mode %u, batch %d or seq %d "
               "out of range, or message not a terminated string",
               r->policy, bk->phase, bk->status, bk->budget, bk->batch, bk->seq);
  return ENPU_OK;
}
/* An epoch policy's op results: none, or one per op key, in key order, under the
 * bucket's policy without gating. */
static int decode_units(reader *rd, farm_bucket_result *r, enpu_err *err) {
  const uint32_t n = get_u32(rd);
  if (rd->short_read || n == 0) return rd->short_read ? BAD("bucket result truncated") : ENPU_OK;
  config_policy_spec spec;
  config_policy_spec_decode(r->policy, &spec); /* checked with the header */
  config_policy_spec op = config_policy_spec_ungated(&spec), base_op = op;
  base_op.variant = 0; /* a sweep point may keep them under the job chip's (search_op_policy) */
  if (n != r->bundle.nops) return BAD("bucket result: %u epoch op results for %u ops", n, r->bundle.nops);
  ENPU_FORWARD(alloc_section(rd, n, record_bytes(&result_cols), sizeof *r->units, (void **)&r->units,
                             "epoch op results", err));
  while (r->nunits < n) {
    farm_op_result *u = &r->units[r->nunits];
    const int rc = decode_op(rd, u, err);
    if (rc < 0) {
      farm_op_result_free(u);
      return rc;
    }
    if (u->key != r->bundle.ops[r->nunits++].signature ||
        (u->policy != config_policy_spec_code(&op) && u->policy != config_policy_spec_code(&base_op)))
      return BAD("bucket result: epoch op result %u has key %016llx or policy %u, not the "
                 "bucket's",
                 r->nunits - 1, (unsigned long long)u->key, u->policy);
  }
  return ENPU_OK;
}

static int decode_bucket(reader *rd, farm_bucket_result *r, enpu_err *err) {
  ENPU_FORWARD(decode_bucket_head(rd, r, err));
  store_bucket_bundle *u = &r->bundle;
  uint64_t n = 0;
  ENPU_FORWARD(get_section(rd, 0, &op_cols, (void **)&u->ops, &n, "bucket ops", err));
  u->nops = (uint32_t)n;
  ENPU_FORWARD(get_section(rd, 1, &walk_cols, (void **)&u->walk, &u->nwalk, "walk steps", err));
  ENPU_FORWARD(get_section(rd, 0, &plan_cols, (void **)&u->plans, &n, "plans", err));
  u->nplans = (uint32_t)n;
  ENPU_FORWARD(get_section(rd, 1, &state_cols, (void **)&u->states, &u->nstates, "plan states", err));
  ENPU_FORWARD(store_bucket_bundle_check(u, NULL, err));
  return decode_units(rd, r, err);
}

/* Run a decoder over exactly `bytes` bytes; on failure the result is emptied. */
static int decode_all(const void *data, size_t bytes, void *r, int (*decode)(reader *, void *, enpu_err *),
                      void (*empty)(void *), const char *what, enpu_err *err) {
  reader rd = {.p = data, .left = data ? bytes : 0};
  int rc = decode(&rd, r, err);
  if (rc == ENPU_OK && rd.short_read) rc = BAD("%s record truncated", what);
  if (rc == ENPU_OK && rd.left != 0) rc = BAD("%s record has %zu trailing bytes", what, rd.left);
  if (rc != ENPU_OK) empty(r);
  return rc;
}

static int decode_op_any(reader *rd, void *r, enpu_err *err) { return decode_op(rd, r, err); }
static int decode_bucket_any(reader *rd, void *r, enpu_err *err) { return decode_bucket(rd, r, err); }
static void empty_op(void *r) { farm_op_result_free(r); }
static void empty_bucket(void *r) { farm_bucket_result_free(r); }

int farm_op_result_decode(const void *data, size_t bytes, farm_op_result *r, enpu_err *err) {
  memset(r, 0, sizeof *r);
  return decode_all(data, bytes, r, decode_op_any, empty_op, "op result", err);
}

int farm_bucket_result_decode(const void *data, size_t bytes, farm_bucket_result *r, enpu_err *err) {
  memset(r, 0, sizeof *r);
  return decode_all(data, bytes, r, decode_bucket_any, empty_bucket, "bucket result", err);
}

int farm_part_result_decode(const void *data, size_t bytes, uint32_t *part, farm_op_result *r, enpu_err *err) {
  memset(r, 0, sizeof *r);
  ENPU_RETURN_IF(!data || bytes < 4, err, ENPU_ERR_FORMAT, "part record of %zu bytes", bytes);
  reader rd = {.p = data, .left = bytes};
  *part = get_u32(&rd);
  ENPU_RETURN_IF(*part >= FARM_MAX_PARTS, err, ENPU_ERR_FORMAT, "part record: part %u of at most %u", *part,
                 FARM_MAX_PARTS);
  return farm_op_result_decode((const unsigned char *)data + 4, bytes - 4, r, err);
}
