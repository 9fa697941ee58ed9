/* test_farm_codec.c — the result codec: op and bucket records round trip, truncations,
 * bad indices (the farm module's unit tests, one program: test_farm.c runs these with
 * its own; test_farm.h has what the files share). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "farm_internal.h"
#include "farm_job_internal.h"
#include "store_fixture.h"
#include "test_farm.h"

/* ---------------------------------------------------------------------------------
 * Codec */

static void test_codec_op_round_trip(void **state) {
  farm_op_result r = make_op(POLICY, 12345), d;
  farm_buf b = encode_op(&r);
  enpu_err err = {0};
  assert_int_equal(farm_op_result_decode(b.data, b.len, &d, &err), 0);
  assert_int_equal(d.policy, POLICY);
  assert_true(d.key == 12345);
  assert_string_equal(d.name, r.name);
  assert_int_equal(d.npoints, NPTS);
  for (int p = 0; p < NPTS; p++) {
    assert_memory_equal(d.points[p].states, r.points[p].states, STORE_NSTATE);
    assert_true(d.points[p].time_ns == r.points[p].time_ns);
    assert_true(d.points[p].energy_by_slot_nj[6] == r.points[p].energy_by_slot_nj[6]);
  }
  farm_buf again = encode_op(&d);
  assert_same_bytes(&b, &again);
  farm_buf_free(&again);
  farm_buf_free(&b);
  farm_op_result_free(&d);
  farm_op_result_free(&r);
  farm_op_result_free(NULL);
  farm_buf_free(NULL);
}

static void test_codec_bucket_round_trip(void **state) {
  farm_bucket_result r = make_bucket(POLICY, STORE_PHASE_DECODE, 8, 2048, keys3, 3, 77), d;
  farm_buf b = encode_bucket(&r);
  enpu_err err = {0};
  assert_int_equal(farm_bucket_result_decode(b.data, b.len, &d, &err), 0);
  const store_bucket_bundle *u = &d.bundle;
  assert_int_equal(u->nops, 3);
  assert_true(u->nwalk == 9 && u->nplans == 2 && u->nstates == 6);
  assert_true(u->bucket.input_hash == 77 && u->bucket.batch == 8 && u->bucket.seq == 2048);
  assert_true(u->ops[2].signature == 33 && u->ops[2].multiplicity == 4);
  assert_true(u->walk[8].pareto == 2 && u->walk[4].instances == 2);
  assert_true(u->plans[1].walk_prefix == 9 && u->plans[1].states_first == 3);
  assert_int_equal(u->states[3].pareto, STORE_NO_INDEX);
  farm_buf again = encode_bucket(&d);
  assert_same_bytes(&b, &again);
  farm_buf_free(&again);
  farm_bucket_result_free(&d);
  /* An infeasible bucket (no ops) keeps its status and message. */
  farm_bucket_result inf = make_infeasible(POLICY, 0, 64, 131072, 5);
  farm_buf bi = encode_bucket(&inf);
  assert_int_equal(farm_bucket_result_decode(bi.data, bi.len, &d, &err), 0);
  assert_int_equal(d.bundle.bucket.status, STORE_BUCKET_INFEASIBLE_CAPACITY);
  assert_string_equal(d.bundle.bucket.message, inf.bundle.bucket.message);
  assert_int_equal(d.bundle.nops, 0);
  farm_bucket_result_free(&d);
  farm_bucket_result_free(&inf);
  farm_buf_free(&bi);
  farm_buf_free(&b);
  farm_bucket_result_free(&r);
}

/* The cache's rule: an entry is a hit only when its decoded fields are the ones asked
 * for. An entry under request A's key whose content is request B's (a key collision, or
 * a file written in its place) is damaged, whatever the key says. */
static void test_cache_entry_fields(void **state) {
  (void)state;
  farm_op_result op = make_op(POLICY, 12345);
  farm_cache_entry d;
  farm_buf b = encode_op(&op);
  farm_cache_want want = {.kind = FARM_CACHE_OP, .policy = POLICY, .op_key = 12345};
  assert_int_equal(farm_cache_decode(b.data, b.len, &want, &d), 0);
  assert_true(d.op.key == 12345);
  farm_op_result_free(&d.op);
  want.op_key = 12346; /* stored under another op's key */
  assert_int_equal(farm_cache_decode(b.data, b.len, &want, &d), -1);
  want.op_key = 12345, want.policy = POLICY + 1;
  assert_int_equal(farm_cache_decode(b.data, b.len, &want, &d), -1);
  want.kind = FARM_CACHE_BUCKET; /* an op's bytes asked as a bucket */
  assert_int_equal(farm_cache_decode(b.data, b.len, &want, &d), -1);
  farm_buf_free(&b);
  farm_op_result_free(&op);

  farm_bucket_result bk = make_bucket(POLICY, STORE_PHASE_DECODE, 8, 2048, keys3, 3, 77);
  farm_buf bb = encode_bucket(&bk);
  const farm_cache_want asked = {.kind = FARM_CACHE_BUCKET,
                                 .policy = POLICY,
                                 .phase = STORE_PHASE_DECODE,
                                 .batch = 8,
                                 .seq = 2048,
                                 .input_hash = 77};
  assert_int_equal(farm_cache_decode(bb.data, bb.len, &asked, &d), 0);
  farm_bucket_result_free(&d.bucket);
  farm_cache_want other[5];
  for (int i = 0; i < 5; i++) other[i] = asked;
  other[0].policy++, other[1].phase = STORE_PHASE_PREFILL, other[2].batch = 16, other[3].seq = 4096;
  other[4].input_hash = 78;
  for (int i = 0; i < 5; i++) assert_int_equal(farm_cache_decode(bb.data, bb.len, &other[i], &d), -1);
  farm_buf_free(&bb);
  farm_bucket_result_free(&bk);

  /* a failed bucket is never a hit, even with every field asked */
  farm_bucket_result inf = make_infeasible(POLICY, STORE_PHASE_DECODE, 8, 2048, 77);
  farm_buf bi = encode_bucket(&inf);
  assert_int_equal(farm_cache_decode(bi.data, bi.len, &asked, &d), -1);
  farm_buf_free(&bi);
  farm_bucket_result_free(&inf);
}

static int is_empty(const void *p, size_t n) {
  const unsigned char *c = p;
  for (size_t i = 0; i < n; i++)
    if (c[i]) return 0;
  return 1;
}

static void test_codec_truncations(void **state) {
  farm_op_result op = make_op(POLICY, 99);
  farm_bucket_result bk = make_bucket(POLICY, 0, 4, 512, keys3, 3, 1);
  farm_buf bo = encode_op(&op), bb = encode_bucket(&bk);
  enpu_err err = {0};
  for (size_t n = 0; n < bo.len; n++) {
    farm_op_result d;
    assert_int_equal(farm_op_result_decode(bo.data, n, &d, &err), ENPU_ERR_FORMAT);
    assert_true(is_empty(&d, sizeof d));
  }
  for (size_t n = 0; n < bb.len; n++) {
    farm_bucket_result d;
    assert_int_equal(farm_bucket_result_decode(bb.data, n, &d, &err), ENPU_ERR_FORMAT);
    assert_true(is_empty(&d, sizeof d));
  }
  /* One trailing byte is an error too, and says so. */
  bo.data = realloc(bo.data, bo.len + 1);
  assert_non_null(bo.data);
  bo.data[bo.len] = 0;
  farm_op_result d;
  assert_int_equal(farm_op_result_decode(bo.data, bo.len + 1, &d, &err), ENPU_ERR_FORMAT);
  assert_non_null(strstr(err.msg, "trailing"));
  /* An op record decoded as a bucket record fails cleanly. */
  farm_bucket_result wrong;
  assert_int_equal(farm_bucket_result_decode(bo.data, bo.len, &wrong, &err), ENPU_ERR_FORMAT);
  farm_buf_free(&bo);
  farm_buf_free(&bb);
  farm_op_result_free(&op);
  farm_bucket_result_free(&bk);
}

/* Encode a modified op (or, with op NULL, bucket) and check that decoding refuses it
 * with a message. */
static void expect_refused(const farm_op_result *op, const farm_bucket_result *bucket, const char *what) {
  farm_buf b = op ? encode_op(op) : encode_bucket(bucket);
  farm_op_result od;
  farm_bucket_result bd;
  enpu_err err = {0};
  int rc = op ? farm_op_result_decode(b.data, b.len, &od, &err)
              : farm_bucket_result_decode(b.data, b.len, &bd, &err);
  if (rc != ENPU_ERR_FORMAT) fail_msg("%s: decode gave %d, expected ENPU_ERR_FORMAT", what, rc);
  assert_true(err.msg[0] != '\0');
  farm_buf_free(&b);
}

/* Set the unsigned integer of `size` bytes (1, 4 or 8) at field to v. */
static void set_uint(void *field, size_t size, uint64_t v) {
  if (size == 1) *(uint8_t *)field = (uint8_t)v;
  else if (size == 4) *(uint32_t *)field = (uint32_t)v;
  else if (size == 8) *(uint64_t *)field = v;
  else fail_msg("set_uint: %zu bytes", size);
}

static void test_codec_bad_indices(void **state) {
  farm_bucket_result r = make_bucket(POLICY, 1, 2, 64, keys3, 3, 9);
  store_bucket_bundle *u = &r.bundle;
  /* One field at a time set to a bad value, then back to the bucket's own. */
  const struct {
    const char *what;
    void *field;
    size_t size;
    uint64_t bad;
  } edits[] = {
      {"walk op == nops", &u->walk[4].op, sizeof u->walk[4].op, 3},
      {"walk step back to a point left", &u->walk[5].pareto, sizeof u->walk[5].pareto, 0},
      {"state plan == nplans", &u->states[5].plan, sizeof u->states[5].plan, 2},
      {"state op out of range", &u->states[0].op, sizeof u->states[0].op, 7},
      {"plan states past the end", &u->plans[1].states_first, sizeof u->plans[1].states_first, 4}, /* 4 + 3 > 6 */
      {"walk prefix past the walk", &u->plans[0].walk_prefix, sizeof u->plans[0].walk_prefix, 10},
      {"op keys not ascending", &u->ops[1].signature, sizeof u->ops[1].signature, 11},
      {"zero multiplicity", &u->ops[0].multiplicity, sizeof u->ops[0].multiplicity, 0},
      {"phase out of range", &u->bucket.phase, sizeof u->bucket.phase, 2},
  };
  for (size_t e = 0; e < sizeof edits / sizeof edits[0]; e++) {
    unsigned char own[8];
    memcpy(own, edits[e].field, edits[e].size);
    set_uint(edits[e].field, edits[e].size, edits[e].bad);
    expect_refused(NULL, &r, edits[e].what);
    memcpy(edits[e].field, own, edits[e].size);
  }
  u->bucket.message[STORE_MSG_LEN - 1] = 'x'; /* the encoder terminates it: still decodes */
  farm_buf ok = encode_bucket(&r);
  farm_bucket_result d;
  enpu_err err = {0};
  assert_int_equal(farm_bucket_result_decode(ok.data, ok.len, &d, &err), 0);
  farm_bucket_result_free(&d);

  /* Huge counts are refused before anything is allocated: patch nwalk (after the
   * 222-byte head, the u32 op count and 3 ops of 16 bytes) and nstates (the last u64
   * before the states). */
  size_t nwalk_at = 222 + 4 + 3 * 16;
  memset(ok.data + nwalk_at, 0xff, 8);
  assert_int_equal(farm_bucket_result_decode(ok.data, ok.len, &d, &err), ENPU_ERR_FORMAT);
  assert_non_null(strstr(err.msg, "walk steps"));
  farm_buf_free(&ok);
  farm_bucket_result_free(&r);

  /* Ops: a name without a terminator, padding that is not zero, points out of time
   * order, no points at all, a policy out of range. */
  farm_op_result op = make_op(POLICY, 5);
  farm_buf bo = encode_op(&op);
  farm_op_result od;
  size_t name_at = 4 + 8 + 4;
  bo.data[name_at + STORE_NAME_LEN - 1] = 'x';
  assert_int_equal(farm_op_result_decode(bo.data, bo.len, &od, &err), ENPU_ERR_FORMAT);
  bo.data[name_at + STORE_NAME_LEN - 1] = 0;
  bo.data[name_at + STORE_NAME_LEN - 2] = 'y';
  assert_int_equal(farm_op_result_decode(bo.data, bo.len, &od, &err), ENPU_ERR_FORMAT);
  farm_buf_free(&bo);
  double t = op.points[1].time_ns;
  op.points[1].time_ns = op.points[0].time_ns - 1;
  expect_refused(&op, NULL, "points out of time order");
  op.points[1].time_ns = t;
  op.npoints = 0;
  expect_refused(&op, NULL, "no points");
  op.npoints = NPTS;
  op.policy = CONFIG_NPOLICY;
  expect_refused(&op, NULL, "policy out of range");
  farm_op_result_free(&op);
}

TEST_PART(farm_codec, cmocka_unit_test(test_codec_op_round_trip), cmocka_unit_test(test_codec_bucket_round_trip),
          cmocka_unit_test(test_codec_truncations), cmocka_unit_test(test_codec_bad_indices),
          cmocka_unit_test(test_cache_entry_fields));
