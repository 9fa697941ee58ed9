/* test_farm_parts.c — an `ideal` op's exact search in part tasks: the part record's
 * codec (round trip, a part index out of range refused) and farm_merge_parts, whose
 * merged op result must not depend on the order the parts arrive in, must keep each
 * point's per-slot energies from the part that found it and must drop dominated points.
 * Expected sets are written out here from the points' definitions. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdlib.h>
#include <string.h>

#include "farm_task_internal.h"
#include "test_farm.h"

/* A part's set: points (time, energy) with states s..s+4 and slot energies energy / (k+2)
 * + tag, so the part a merged point came from shows in its slots. */
static farm_op_result part_set(const double (*te)[2], int n, int state0, double tag) {
  farm_op_result r = {
      .policy = CONFIG_POLICY_IDEAL, .key = 77, .kind = 1, .evaluations = 100, .npoints = (uint32_t)n};
  strcpy(r.name, "attn.flash");
  r.points = calloc((size_t)n, sizeof *r.points);
  assert_non_null(r.points);
  for (int i = 0; i < n; i++) {
    for (int c = 0; c < STORE_NSTATE; c++) r.points[i].states[c] = (uint8_t)(state0 + i + c);
    r.points[i].time_ns = te[i][0];
    r.points[i].energy_nj = te[i][1];
    for (int k = 0; k < STORE_NENERGY; k++) r.points[i].energy_by_slot_nj[k] = te[i][1] / (k + 2) + tag;
  }
  return r;
}

void test_part_codec(void **state) {
  (void)state;
  const double te[2][2] = {{10, 50}, {20, 30}};
  farm_op_result r = part_set(te, 2, 3, 0), d;
  farm_buf b = {0}, again = {0};
  enpu_err err = {0};
  assert_int_equal(farm_part_result_encode(5, &r, &b, &err), 0);
  uint32_t part = 99;
  assert_int_equal(farm_part_result_decode(b.data, b.len, &part, &d, &err), 0);
  assert_int_equal(part, 5);
  assert_int_equal(farm_part_result_encode(part, &d, &again, &err), 0);
  assert_int_equal(again.len, b.len);
  assert_memory_equal(again.data, b.data, b.len);
  b.data[0] = (unsigned char)FARM_MAX_PARTS; /* part index out of range */
  farm_op_result bad;
  assert_int_equal(farm_part_result_decode(b.data, b.len, &part, &bad, &err), ENPU_ERR_FORMAT);
  assert_int_equal(farm_part_result_decode(b.data, 3, &part, &bad, &err), ENPU_ERR_FORMAT);
  farm_op_result_free(&r);
  farm_op_result_free(&d);
  farm_buf_free(&b);
  farm_buf_free(&again);
}

void test_merge_parts(void **state) {
  (void)state;
  /* Part 0: (10, 50), (30, 20); part 1: (20, 30), (40, 25) — dominated by (30, 20);
   * part 2: (5, 90), (30, 20) again with other states — the tie keeps the smaller states. */
  const double p0[2][2] = {{10, 50}, {30, 20}}, p1[2][2] = {{20, 30}, {40, 25}}, p2[2][2] = {{5, 90}, {30, 20}};
  farm_op_result parts[3] = {part_set(p0, 2, 10, 1000), part_set(p1, 2, 20, 2000), part_set(p2, 2, 5, 3000)};
  farm_op_result shuffled[3] = {parts[2], parts[0], parts[1]}, a, b;
  enpu_err err = {0};
  assert_int_equal(farm_merge_parts(parts, 3, &a, &err), 0);
  assert_int_equal(farm_merge_parts(shuffled, 3, &b, &err), 0);
  farm_buf ea = {0}, eb = {0};
  assert_int_equal(farm_op_result_encode(&a, &ea, &err), 0);
  assert_int_equal(farm_op_result_encode(&b, &eb, &err), 0);
  assert_int_equal(ea.len, eb.len);
  assert_memory_equal(ea.data, eb.data, ea.len);
  assert_int_equal(a.evaluations, 300);
  assert_int_equal(a.npoints, 4); /* (5, 90), (10, 50), (20, 30), (30, 20) */
  const double want[4][3] = {{5, 90, 3000}, {10, 50, 1000}, {20, 30, 2000}, {30, 20, 3000}};
  for (int i = 0; i < 4; i++) {
    assert_true(a.points[i].time_ns == want[i][0] && a.points[i].energy_nj == want[i][1]);
    assert_true(a.points[i].energy_by_slot_nj[0] == want[i][1] / 2 + want[i][2]);
  }
  assert_int_equal(a.points[3].states[0], 6); /* part 2's (30, 20): states 6.., not 11.. */
  for (int k = 0; k < 3; k++) farm_op_result_free(&parts[k]);
  farm_op_result_free(&a);
  farm_op_result_free(&b);
  farm_buf_free(&ea);
  farm_buf_free(&eb);
}
