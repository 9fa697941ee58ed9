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

/* Encoded sizes (bytes). */
enum {
  OP_HEAD_BYTES = 4 + 8 + 4 + STORE_NAME_LEN + 8 + 4,
  POINT_BYTES = STORE_NSTATE + 8 * (2 + STORE_NENERGY),
  BUCKET_HEAD_BYTES = 4 + 1 + 1 + 1 + 8 + 4 + 4 + 5 * 8 + STORE_MSG_LEN,
  BUCKET_OP_BYTES = 8 + 8,
  WALK_BYTES = 4 + 4 + 8 + 8 + 8,
  PLAN_BYTES = 1 + 8 * 8 + 3 * 8 + 8 * STORE_NSTATE + 1 + 8,
  STATE_BYTES = 4 + 4 + 4 + STORE_NSTATE + 8
};

void farm_op_result_free(farm_op_result *r) {
  if (!r) return;
  free(r->points);
  memset(r, 0, sizeof *r);
}

void farm_bucket_result_free(farm_bucket_result *r) {
  if (!r) return;
  for (uint32_t i = 0; r->units && i < r->nunits; i++) farm_op_result_free(&r->units[i]);
  free(r->units);
  free(r->op_keys);
  free(r->multiplicity);
  free(r->walk);
  free(r->plans);
  free(r->states);
  memset(r, 0, sizeof *r);
}

void farm_buf_free(farm_buf *b) {
  if (!b) return;
  free(b->data);
  memset(b, 0, sizeof *b);
}

/* ---- writing ------------------------------------------------------------------- */

static unsigned char *put_u8(unsigned char *p, uint8_t v) {
  *p = v;
  return p + 1;
}

static unsigned char *put_u32(unsigned char *p, uint32_t v) {
  for (int i = 0; i < 4; i++) p[i] = (unsigned char)(v >> (8 * i));
  return p + 4;
}

static unsigned char *put_u64(unsigned char *p, uint64_t v) {
  for (int i = 0; i < 8; i++) p[i] = (unsigned char)(v >> (8 * i));
  return p + 8;
}

static unsigned char *put_f64(unsigned char *p, double v) {
  uint64_t bits;
  memcpy(&bits, &v, sizeof bits);
  return put_u64(p, bits);
}

/* A fixed-width string column: its text, then zeros (the canonical form decode wants);
 * the last byte is always a terminator. */
static unsigned char *put_str(unsigned char *p, const char *s, size_t width) {
  size_t n = strnlen(s, width - 1);
  memcpy(p, s, n);
  memset(p + n, 0, width - n);
  return p + width;
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

/* n elements of `each` bytes added to *total, failing on overflow. */
static int add_size(size_t *total, uint64_t n, size_t each) {
  if (n > (SIZE_MAX - *total) / each) return -1;
  *total += (size_t)n * each;
  return 0;
}

int farm_op_result_encode(const farm_op_result *r, farm_buf *b, enpu_err *err) {
  size_t bytes = OP_HEAD_BYTES;
  if (add_size(&bytes, r->npoints, POINT_BYTES) < 0)
    return enpu_errorf(err, ENPU_ERR_NOMEM, "farm: op result of %u points is too large", r->npoints);
  unsigned char *p = buf_reserve(b, bytes, err);
  if (!p) return ENPU_ERR_NOMEM;
  p = put_u32(p, r->policy);
  p = put_u64(p, r->key);
  p = put_u32(p, r->kind);
  p = put_str(p, r->name, STORE_NAME_LEN);
  p = put_u64(p, r->evaluations);
  p = put_u32(p, r->npoints);
  for (uint32_t i = 0; i < r->npoints; i++) {
    const store_pareto_rec *pt = &r->points[i];
    memcpy(p, pt->states, STORE_NSTATE);
    p += STORE_NSTATE;
    p = put_f64(p, pt->time_ns);
    p = put_f64(p, pt->energy_nj);
    for (int k = 0; k < STORE_NENERGY; k++) p = put_f64(p, pt->energy_by_slot_nj[k]);
  }
  return ENPU_OK;
}

int farm_part_result_encode(uint32_t part, const farm_op_result *r, farm_buf *b, enpu_err *err) {
  unsigned char *p = buf_reserve(b, 4, err);
  if (!p) return ENPU_ERR_NOMEM;
  put_u32(p, part);
  return farm_op_result_encode(r, b, err);
}

int farm_bucket_result_encode(const farm_bucket_result *r, farm_buf *b, enpu_err *err) {
  size_t bytes = BUCKET_HEAD_BYTES + 4 + 8 + 4 + 8 + 4;
  if (add_size(&bytes, r->nops, BUCKET_OP_BYTES) < 0 || add_size(&bytes, r->nwalk, WALK_BYTES) < 0 ||
      add_size(&bytes, r->nplans, PLAN_BYTES) < 0 || add_size(&bytes, r->nstates, STATE_BYTES) < 0)
    return enpu_errorf(err, ENPU_ERR_NOMEM, "farm: bucket result is too large to encode");
  unsigned char *p = buf_reserve(b, bytes, err);
  if (!p) return ENPU_ERR_NOMEM;
  const store_bucket_rec *bk = &r->bucket;
  p = put_u32(p, r->policy);
  p = put_u8(p, bk->phase);
  p = put_u8(p, bk->status);
  p = put_u8(p, bk->budget);
  p = put_u64(p, bk->input_hash);
  p = put_u32(p, (uint32_t)bk->batch);
  p = put_u32(p, (uint32_t)bk->seq);
  p = put_f64(p, bk->t_nodvfs_ns);
  p = put_f64(p, bk->t_peak_ns);
  p = put_f64(p, bk->e_nodvfs_nj);
  p = put_f64(p, bk->walk_start_time_ns);
  p = put_f64(p, bk->walk_start_energy_nj);
  p = put_str(p, bk->message, STORE_MSG_LEN);
  p = put_u32(p, r->nops);
  for (uint32_t i = 0; i < r->nops; i++) {
    p = put_u64(p, r->op_keys[i]);
    p = put_u64(p, r->multiplicity[i]);
  }
  p = put_u64(p, r->nwalk);
  for (uint64_t i = 0; i < r->nwalk; i++) {
    const store_walk_rec *w = &r->walk[i];
    p = put_u32(p, w->op);
    p = put_u32(p, w->pareto);
    p = put_u64(p, w->instances);
    p = put_f64(p, w->time_ns);
    p = put_f64(p, w->energy_nj);
  }
  p = put_u32(p, r->nplans);
  for (uint32_t i = 0; i < r->nplans; i++) {
    const store_plan_rec *pl = &r->plans[i];
    p = put_u8(p, pl->budget);
    p = put_f64(p, pl->slack);
    p = put_f64(p, pl->budget_ns);
    p = put_f64(p, pl->time_ns);
    p = put_f64(p, pl->energy_nj);
    p = put_f64(p, pl->cp_time_ns);
    p = put_f64(p, pl->overhead_pct);
    p = put_f64(p, pl->lower_bound_nj);
    p = put_f64(p, pl->savings_vs_nodvfs);
    p = put_u64(p, pl->walk_prefix);
    p = put_u64(p, pl->states_first);
    p = put_u64(p, pl->states_count);
    for (int c = 0; c < STORE_NSTATE; c++) p = put_f64(p, pl->regulator_loss_nj[c]);
    p = put_u8(p, pl->gated);
    p = put_f64(p, pl->gates);
  }
  p = put_u64(p, r->nstates);
  for (uint64_t i = 0; i < r->nstates; i++) {
    const store_plan_state_rec *s = &r->states[i];
    p = put_u32(p, s->plan);
    p = put_u32(p, s->op);
    p = put_u32(p, s->pareto);
    memcpy(p, s->states, STORE_NSTATE);
    p += STORE_NSTATE;
    p = put_u64(p, s->instances);
  }
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

static uint8_t get_u8(reader *rd) { return *take(rd, 1); }

static uint32_t get_u32(reader *rd) {
  const unsigned char *p = take(rd, 4);
  uint32_t v = 0;
  for (int i = 0; i < 4; i++) v |= (uint32_t)p[i] << (8 * i);
  return v;
}

static uint64_t get_u64(reader *rd) {
  const unsigned char *p = take(rd, 8);
  uint64_t v = 0;
  for (int i = 0; i < 8; i++) v |= (uint64_t)p[i] << (8 * i);
  return v;
}

static double get_f64(reader *rd) {
  uint64_t bits = get_u64(rd);
  double v;
  memcpy(&v, &bits, sizeof v);
  return v;
}

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

/* Allocate n elements of `size` bytes for a section whose encoding takes `each` bytes
 * per element, after checking that the remaining bytes can hold them. @return 0 or the
 * error (FORMAT: the count is a lie; NOMEM). */
static int alloc_section(reader *rd, uint64_t n, size_t each, size_t size, void **out,
                         const char *what, enpu_err *err) {
  *out = NULL;
  if (rd->short_read || n > rd->left / each)
    return enpu_errorf(err, ENPU_ERR_FORMAT,
                       "farm: result record claims %llu %s but only %zu bytes remain",
                       (unsigned long long)n, what, rd->left);
  if (n == 0) return ENPU_OK;
  *out = enpu_calloc((size_t)n, size);
  ENPU_RETURN_IF(!*out, err, ENPU_ERR_NOMEM, "farm: no memory for %llu %s",
                 (unsigned long long)n, what);
  return ENPU_OK;
}

#define BAD(...) enpu_errorf(err, ENPU_ERR_FORMAT, "farm: " __VA_ARGS__)

static int policy_ok(uint32_t code) {
  config_policy_spec spec;
  return config_policy_spec_decode(code, &spec) == ENPU_OK;
}

static int decode_op(reader *rd, farm_op_result *r, enpu_err *err) {
  r->policy = get_u32(rd);
  r->key = get_u64(rd);
  r->kind = get_u32(rd);
  int name_bad = get_str(rd, r->name, STORE_NAME_LEN);
  r->evaluations = get_u64(rd);
  r->npoints = get_u32(rd);
  if (rd->short_read) return BAD("op result truncated in its header");
  if (!policy_ok(r->policy) || name_bad || r->npoints == 0)
    return BAD("op result %016llx: policy %u out of range, name not a terminated string, or no "
               "Pareto points", (unsigned long long)r->key, r->policy);
  ENPU_FORWARD(alloc_section(rd, r->npoints, POINT_BYTES, sizeof *r->points, (void **)&r->points,
                             "Pareto points", err));
  for (uint32_t i = 0; i < r->npoints; i++) {
    store_pareto_rec *pt = &r->points[i];
    memcpy(pt->states, take(rd, STORE_NSTATE), STORE_NSTATE);
    pt->time_ns = get_f64(rd);
    pt->energy_nj = get_f64(rd);
    for (int k = 0; k < STORE_NENERGY; k++) pt->energy_by_slot_nj[k] = get_f64(rd);
    if (!isfinite(pt->time_ns) || !(pt->time_ns >= 0) || !isfinite(pt->energy_nj) ||
        (i > 0 && pt->time_ns < pt[-1].time_ns))
      return BAD("op result %016llx: Pareto point %u has a bad time/energy or is out of time "
                 "order", (unsigned long long)r->key, i);
  }
  return ENPU_OK;
}

static int decode_bucket_head(reader *rd, farm_bucket_result *r, enpu_err *err) {
  store_bucket_rec *bk = &r->bucket;
  r->policy = get_u32(rd);
  bk->phase = get_u8(rd);
  bk->status = get_u8(rd);
  bk->budget = get_u8(rd);
  bk->input_hash = get_u64(rd);
  bk->batch = (int32_t)get_u32(rd);
  bk->seq = (int32_t)get_u32(rd);
  bk->t_nodvfs_ns = get_f64(rd);
  bk->t_peak_ns = get_f64(rd);
  bk->e_nodvfs_nj = get_f64(rd);
  bk->walk_start_time_ns = get_f64(rd);
  bk->walk_start_energy_nj = get_f64(rd);
  int msg_bad = get_str(rd, bk->message, STORE_MSG_LEN);
  if (rd->short_read) return BAD("bucket result truncated in its header");
  if (!policy_ok(r->policy) || bk->phase > STORE_PHASE_DECODE ||
      bk->status > STORE_BUCKET_FAILED || bk->budget > STORE_BUDGET_PAPER || bk->batch < 1 ||
      bk->seq < 1 || msg_bad)
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
  const config_policy_spec op = config_policy_spec_ungated(&spec);
  if (n != r->nops)
    return BAD("bucket result: %u epoch op results for %u ops", n, r->nops);
  ENPU_FORWARD(alloc_section(rd, n, OP_HEAD_BYTES, sizeof *r->units, (void **)&r->units,
                             "epoch op results", err));
  while (r->nunits < n) {
    farm_op_result *u = &r->units[r->nunits];
    const int rc = decode_op(rd, u, err);
    if (rc < 0) {
      farm_op_result_free(u);
      return rc;
    }
    if (u->key != r->op_keys[r->nunits++] || u->policy != config_policy_spec_code(&op))
      return BAD("bucket result: epoch op result %u has key %016llx or policy %u, not the "
                 "bucket's", r->nunits - 1, (unsigned long long)u->key, u->policy);
  }
  return ENPU_OK;
}

static int decode_bucket(reader *rd, farm_bucket_result *r, enpu_err *err) {
  ENPU_FORWARD(decode_bucket_head(rd, r, err));
  const store_bucket_rec *bk = &r->bucket;
  r->nops = get_u32(rd);
  ENPU_FORWARD(alloc_section(rd, r->nops, BUCKET_OP_BYTES, sizeof *r->op_keys,
                             (void **)&r->op_keys, "bucket ops", err));
  ENPU_FORWARD(alloc_section(rd, r->nops, BUCKET_OP_BYTES, sizeof *r->multiplicity,
                             (void **)&r->multiplicity, "bucket ops", err));
  for (uint32_t i = 0; i < r->nops; i++) {
    r->op_keys[i] = get_u64(rd);
    r->multiplicity[i] = get_u64(rd);
    if (r->multiplicity[i] == 0 || (i > 0 && r->op_keys[i] <= r->op_keys[i - 1]))
      return BAD("bucket %u/%d/%d: op %u has no instances or its key is not ascending", bk->phase,
                 bk->batch, bk->seq, i);
  }
  r->nwalk = get_u64(rd);
  ENPU_FORWARD(alloc_section(rd, r->nwalk, WALK_BYTES, sizeof *r->walk, (void **)&r->walk,
                             "walk steps", err));
  for (uint64_t i = 0; i < r->nwalk; i++) {
    store_walk_rec *w = &r->walk[i];
    w->op = get_u32(rd);
    w->pareto = get_u32(rd);
    w->instances = get_u64(rd);
    w->time_ns = get_f64(rd);
    w->energy_nj = get_f64(rd);
    if (w->op >= r->nops || w->instances == 0)
      return BAD("bucket %u/%d/%d: walk step %llu: op %u outside its %u ops, or no instances",
                 bk->phase, bk->batch, bk->seq, (unsigned long long)i, w->op, r->nops);
  }
  r->nplans = get_u32(rd);
  ENPU_FORWARD(alloc_section(rd, r->nplans, PLAN_BYTES, sizeof *r->plans, (void **)&r->plans,
                             "plans", err));
  for (uint32_t i = 0; i < r->nplans; i++) {
    store_plan_rec *pl = &r->plans[i];
    pl->budget = get_u8(rd);
    pl->slack = get_f64(rd);
    pl->budget_ns = get_f64(rd);
    pl->time_ns = get_f64(rd);
    pl->energy_nj = get_f64(rd);
    pl->cp_time_ns = get_f64(rd);
    pl->overhead_pct = get_f64(rd);
    pl->lower_bound_nj = get_f64(rd);
    pl->savings_vs_nodvfs = get_f64(rd);
    pl->walk_prefix = get_u64(rd);
    pl->states_first = get_u64(rd);
    pl->states_count = get_u64(rd);
    for (int c = 0; c < STORE_NSTATE; c++) pl->regulator_loss_nj[c] = get_f64(rd);
    pl->gated = get_u8(rd);
    pl->gates = get_f64(rd);
  }
  r->nstates = get_u64(rd);
  ENPU_FORWARD(alloc_section(rd, r->nstates, STATE_BYTES, sizeof *r->states, (void **)&r->states,
                             "plan states", err));
  for (uint32_t i = 0; i < r->nplans; i++) {
    const store_plan_rec *pl = &r->plans[i];
    if ((pl->walk_prefix > r->nwalk && pl->walk_prefix != STORE_NO_PREFIX) ||
        pl->states_first > r->nstates ||
        pl->states_count > r->nstates - pl->states_first || pl->budget != bk->budget)
      return BAD("bucket %u/%d/%d: plan %u: walk prefix %llu or states [%llu, +%llu) outside the "
                 "%llu steps and %llu states, or its budget mode is not the bucket's",
                 bk->phase, bk->batch, bk->seq, i,
                 (unsigned long long)pl->walk_prefix, (unsigned long long)pl->states_first,
                 (unsigned long long)pl->states_count, (unsigned long long)r->nwalk,
                 (unsigned long long)r->nstates);
  }
  for (uint64_t i = 0; i < r->nstates; i++) {
    store_plan_state_rec *s = &r->states[i];
    s->plan = get_u32(rd);
    s->op = get_u32(rd);
    s->pareto = get_u32(rd);
    memcpy(s->states, take(rd, STORE_NSTATE), STORE_NSTATE);
    s->instances = get_u64(rd);
    if (s->plan >= r->nplans || s->op >= r->nops || s->instances == 0)
      return BAD("bucket %u/%d/%d: plan state %llu: plan %u or op %u outside the result's %u "
                 "plans and %u ops, or no instances", bk->phase, bk->batch, bk->seq,
                 (unsigned long long)i, s->plan, s->op, r->nplans, r->nops);
  }
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

int farm_bucket_result_decode(const void *data, size_t bytes, farm_bucket_result *r,
                              enpu_err *err) {
  memset(r, 0, sizeof *r);
  return decode_all(data, bytes, r, decode_bucket_any, empty_bucket, "bucket result", err);
}

int farm_part_result_decode(const void *data, size_t bytes, uint32_t *part, farm_op_result *r,
                            enpu_err *err) {
  memset(r, 0, sizeof *r);
  ENPU_RETURN_IF(!data || bytes < 4, err, ENPU_ERR_FORMAT, "part record of %zu bytes", bytes);
  reader rd = {.p = data, .left = bytes};
  *part = get_u32(&rd);
  ENPU_RETURN_IF(*part >= FARM_MAX_PARTS, err, ENPU_ERR_FORMAT, "part record: part %u of at most %u",
                 *part, FARM_MAX_PARTS);
  return farm_op_result_decode((const unsigned char *)data + 4, bytes - 4, r, err);
}
