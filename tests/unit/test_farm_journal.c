/* test_farm_journal.c — the journal: append and replay, torn tails, flipped bytes, reset,
 * the job's identity, links refused
 * (the farm module's unit tests, one program: test_farm.c runs these with its own;
 * test_farm.h has what the files share). */
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
#include "store_fixture.h"
#include "test_farm.h"

typedef struct {
  int n;
  uint32_t kinds[16];
  farm_buf payloads[16];
  int fail_at; /* return an error at this record; -1 never */
} collected;

static int collect(void *user, uint32_t kind, const void *payload, size_t bytes, enpu_err *err) {
  collected *c = user;
  if (c->n == c->fail_at) return enpu_errorf(err, ENPU_ERR_INVALID, "stop here");
  assert_true(c->n < 16);
  c->kinds[c->n] = kind;
  farm_buf *b = &c->payloads[c->n++];
  b->data = malloc(bytes ? bytes : 1);
  assert_non_null(b->data);
  memcpy(b->data, payload, bytes);
  b->len = bytes;
  return 0;
}

static void collected_free(collected *c) {
  for (int i = 0; i < c->n; i++) farm_buf_free(&c->payloads[i]);
  c->n = 0;
}

/* Record i of the test journals: a bucket or an op result, encoded. */
farm_buf record_payload(int i, uint32_t *kind) {
  if (i % 2) {
    farm_op_result r = make_op(POLICY, 100 + (uint64_t)i);
    farm_buf b = encode_op(&r);
    farm_op_result_free(&r);
    *kind = FARM_REC_OP;
    return b;
  }
  farm_bucket_result r = make_bucket(POLICY, 1, 1 + i, 1024, keys3, 3, (uint64_t)i);
  farm_buf b = encode_bucket(&r);
  farm_bucket_result_free(&r);
  *kind = FARM_REC_BUCKET;
  return b;
}

void append_records(const char *path, int first, int n, int sync_each) {
  farm_journal *j = NULL;
  enpu_err err = {0};
  assert_int_equal(farm_journal_open(path, NULL, 0, &j, &err), 0);
  for (int i = first; i < first + n; i++) {
    uint32_t kind;
    farm_buf b = record_payload(i, &kind);
    assert_int_equal(farm_journal_append(j, kind, b.data, b.len, &err), 0);
    if (sync_each) assert_int_equal(farm_journal_sync(j, &err), 0);
    farm_buf_free(&b);
  }
  assert_int_equal(farm_journal_sync(j, &err), 0);
  farm_journal_free(j);
}

/* Replay and check that records [0, n) are exactly record_payload(0..n). */
/* The journal at path replays records first..first+n-1 of the test journals except
 * `missing` (-1: none), having skipped and dropped those many bytes. */
static void expect_records_skipping(const char *path, int n, int missing, int64_t skipped, int64_t dropped) {
  collected c = {.fail_at = -1};
  farm_journal_stats st;
  enpu_err err = {0};
  assert_int_equal(farm_journal_replay(path, collect, &c, &st, &err), 0);
  assert_int_equal(st.records, n);
  assert_int_equal(c.n, n);
  assert_int_equal(st.skipped_bytes, skipped);
  assert_int_equal(st.dropped_bytes, dropped);
  assert_int_equal(st.unreadable, 0);
  for (int i = 0; i < n; i++) {
    uint32_t kind;
    farm_buf b = record_payload(missing >= 0 && i >= missing ? i + 1 : i, &kind);
    assert_int_equal(c.kinds[i], kind);
    assert_same_bytes(&b, &c.payloads[i]);
    farm_buf_free(&b);
  }
  collected_free(&c);
}

static void expect_records(const char *path, int n, int64_t dropped) {
  expect_records_skipping(path, n, -1, 0, dropped);
}

long file_size(const char *path) {
  struct stat st;
  assert_int_equal(stat(path, &st), 0);
  return (long)st.st_size;
}

static void test_journal_append_replay(void **state) {
  const char *jpath = ((tmp_fixture *)*state)->journal;
  expect_records(jpath, 0, 0); /* missing file: nothing */
  append_records(jpath, 0, 4, 0);
  expect_records(jpath, 4, 0);
  append_records(jpath, 4, 2, 1); /* reopen appends after the existing records */
  expect_records(jpath, 6, 0);
  /* The callback's error stops the replay and is returned with the record named. */
  collected c = {.fail_at = 2};
  enpu_err err = {0};
  farm_journal_stats st;
  assert_int_equal(farm_journal_replay(jpath, collect, &c, &st, &err), ENPU_ERR_INVALID);
  assert_int_equal(c.n, 2);
  assert_non_null(strstr(err.msg, "record 2"));
  collected_free(&c);
}

/* Append records 0..n-1 one at a time, each synced; ends[i] is the journal's size once
 * record i is in. */
static void append_each(const char *jpath, int n, long ends[]) {
  for (int i = 0; i < n; i++) {
    append_records(jpath, i, 1, 1);
    ends[i] = file_size(jpath);
  }
}

static void test_journal_torn_tail(void **state) {
  const char *jpath = ((tmp_fixture *)*state)->journal;
  long ends[3];
  append_each(jpath, 3, ends);
  const long two = ends[1], three = ends[2];
  assert_true(three > two + 16);
  /* Cut the third record at every kind of place: inside its header, inside its payload,
   * one byte short. */
  const long cuts[] = {two + 3, two + 16, two + (three - two) / 2, three - 1};
  for (size_t k = 0; k < sizeof cuts / sizeof cuts[0]; k++) {
    assert_int_equal(truncate(jpath, cuts[k]), 0);
    expect_records(jpath, 2, cuts[k] - two);
    /* open truncates the torn tail; the next record follows the intact ones */
    append_records(jpath, 2, 1, 0);
    assert_int_equal(file_size(jpath), three);
    expect_records(jpath, 3, 0);
  }
  /* A journal torn inside its own header (a crash right after creation). */
  assert_int_equal(truncate(jpath, 5), 0);
  expect_records(jpath, 0, 5);
  append_records(jpath, 0, 1, 0);
  expect_records(jpath, 1, 0);
}

static void flip_byte(const char *path, long at) {
  FILE *fp = fopen(path, "r+b");
  assert_non_null(fp);
  assert_int_equal(fseek(fp, at, SEEK_SET), 0);
  int c = fgetc(fp);
  assert_true(c != EOF);
  assert_int_equal(fseek(fp, at, SEEK_SET), 0);
  assert_int_equal(fputc(c ^ 0x20, fp), c ^ 0x20);
  assert_int_equal(fclose(fp), 0);
}

static void test_journal_flipped_byte(void **state) {
  const char *jpath = ((tmp_fixture *)*state)->journal;
  long ends[4];
  append_each(jpath, 4, ends);
  const long one = ends[0], two = ends[1], three = ends[2], all = ends[3];
  /* A byte of the second record's payload, then of its kind, then of its length: that
   * record is skipped, the two after it still replay. */
  const long where[] = {one + 16 + 5, one, one + 4};
  for (size_t k = 0; k < sizeof where / sizeof where[0]; k++) {
    flip_byte(jpath, where[k]);
    expect_records_skipping(jpath, 3, 1, two - one, 0);
    flip_byte(jpath, where[k]);
    expect_records(jpath, 4, 0);
  }
  /* The last record damaged is a tail that cannot be told from a torn one. */
  flip_byte(jpath, all - 3);
  expect_records(jpath, 3, all - three);
  flip_byte(jpath, all - 3);
  /* A bad header: nothing replays, and open moves the file aside and starts afresh. */
  flip_byte(jpath, 2);
  farm_journal_stats st;
  enpu_err err = {0};
  assert_int_equal(farm_journal_replay(jpath, collect, &(collected){.fail_at = -1}, &st, &err), 0);
  assert_true(st.unreadable && st.records == 0 && st.dropped_bytes == 0);
  farm_journal *j = NULL;
  assert_int_equal(farm_journal_open(jpath, NULL, 0, &j, &err), 0);
  char aside[200];
  snprintf(aside, sizeof aside, "%s.unreadable-1", jpath);
  assert_string_equal(farm_journal_aside(j), aside);
  farm_journal_free(j);
  assert_int_equal(file_size(aside), all);
  expect_records(jpath, 0, 0);
  /* A second unreadable journal goes beside the first, which stays as it was. */
  flip_byte(jpath, 2);
  assert_int_equal(farm_journal_open(jpath, NULL, 0, &j, &err), 0);
  snprintf(aside, sizeof aside, "%s.unreadable-2", jpath);
  assert_string_equal(farm_journal_aside(j), aside);
  farm_journal_free(j);
  assert_int_equal(file_size(aside), 16);
  unlink(aside);
  snprintf(aside, sizeof aside, "%s.unreadable-1", jpath);
  assert_int_equal(file_size(aside), all);
  unlink(aside);
}

static void test_journal_reset(void **state) {
  const char *jpath = ((tmp_fixture *)*state)->journal;
  farm_journal *j = NULL;
  enpu_err err = {0};
  assert_int_equal(farm_journal_open(jpath, NULL, 0, &j, &err), 0);
  for (int i = 0; i < 3; i++) {
    uint32_t kind;
    farm_buf b = record_payload(i, &kind);
    assert_int_equal(farm_journal_append(j, kind, b.data, b.len, &err), 0);
    farm_buf_free(&b);
  }
  assert_int_equal(farm_journal_sync(j, &err), 0);
  uint32_t kind;
  farm_buf b = record_payload(3, &kind);
  assert_int_equal(farm_journal_append(j, kind, b.data, b.len, &err), 0); /* still buffered */
  assert_int_equal(farm_journal_reset(j, &err), 0);
  assert_int_equal(file_size(jpath), 16);
  assert_int_equal(farm_journal_sync(j, &err), 0); /* the buffered record went with the reset */
  expect_records(jpath, 0, 0);
  b.len = 0;
  farm_buf_free(&b);
  b = record_payload(0, &kind);
  assert_int_equal(farm_journal_append(j, kind, b.data, b.len, &err), 0);
  assert_int_equal(farm_journal_sync(j, &err), 0);
  expect_records(jpath, 1, 0);
  farm_buf_free(&b);
  farm_journal_free(j);
  farm_journal_free(NULL);
}

/* The identity starts a new journal and a reset one, is replayed as the first record and
 * read back alone; a journal without one (made without) has none; a symbolic link and a
 * file of two names are refused, their targets untouched. */
static void test_journal_identity_and_links(void **state) {
  const char *jpath = ((tmp_fixture *)*state)->journal;
  static const char id[] = "{\"job\":\"a\"}";
  farm_journal *j = NULL;
  enpu_err err = {0};
  farm_buf got = {0};
  int64_t after = -1;
  assert_int_equal(farm_journal_identity(jpath, &got, &after, &err), 0); /* no journal yet */
  assert_int_equal(got.len + after, 0);
  assert_int_equal(farm_journal_open(jpath, id, strlen(id), &j, &err), 0);
  assert_null(farm_journal_aside(j));
  uint32_t kind;
  farm_buf b = record_payload(0, &kind);
  assert_int_equal(farm_journal_append(j, kind, b.data, b.len, &err), 0);
  assert_int_equal(farm_journal_sync(j, &err), 0);
  assert_int_equal(farm_journal_identity(jpath, &got, &after, &err), 0);
  assert_true(got.len == strlen(id) && after > 0); /* work follows */
  collected c = {.fail_at = -1};
  farm_journal_stats st;
  assert_int_equal(farm_journal_replay(jpath, collect, &c, &st, &err), 0);
  assert_int_equal(c.n, 2);
  assert_int_equal(c.kinds[0], FARM_REC_JOB);
  assert_int_equal(c.kinds[1], kind);
  collected_free(&c);
  assert_int_equal(farm_journal_reset(j, &err), 0);
  assert_int_equal(farm_journal_sync(j, &err), 0);
  farm_journal_free(j);
  assert_int_equal(farm_journal_identity(jpath, &got, &after, &err), 0);
  assert_int_equal(got.len, strlen(id));
  assert_memory_equal(got.data, id, got.len);
  assert_int_equal(after, 0); /* the reset left the identity alone */
  unlink(jpath);
  assert_int_equal(farm_journal_open(jpath, NULL, 0, &j, &err), 0);
  farm_journal_free(j);
  assert_int_equal(farm_journal_identity(jpath, &got, &after, &err), 0);
  assert_int_equal(got.len, 0);
  char other[300];
  snprintf(other, sizeof other, "%s.other", jpath);
  assert_int_equal(link(jpath, other), 0);
  assert_int_equal(farm_journal_open(jpath, id, strlen(id), &j, &err), ENPU_ERR_INVALID);
  assert_non_null(strstr(err.msg, "hard links"));
  unlink(jpath);
  assert_int_equal(symlink(other, jpath), 0);
  assert_int_equal(farm_journal_open(jpath, id, strlen(id), &j, &err), ENPU_ERR_INVALID);
  assert_int_equal(file_size(other), 16);
  unlink(jpath);
  unlink(other);
  farm_buf_free(&got);
  farm_buf_free(&b);
}

TEST_PART(farm_journal, cmocka_unit_test_setup_teardown(test_journal_append_replay, tmp_setup, tmp_teardown),
          cmocka_unit_test_setup_teardown(test_journal_torn_tail, tmp_setup, tmp_teardown),
          cmocka_unit_test_setup_teardown(test_journal_flipped_byte, tmp_setup, tmp_teardown),
          cmocka_unit_test_setup_teardown(test_journal_reset, tmp_setup, tmp_teardown),
          cmocka_unit_test_setup_teardown(test_journal_identity_and_links, tmp_setup, tmp_teardown));
