/* test_common.c — error formatting, growable arrays, blocks of parallel arrays, paths,
 * file reading, mkdir -p, hashing, files published by rename and moved aside, key=value
 * option values. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common.h"

static void test_errorf_returns_code_and_formats(void **state) {
  (void)state;
  enpu_err err = {0};
  assert_int_equal(enpu_errorf(&err, ENPU_ERR_RANGE, "got %d", -4), ENPU_ERR_RANGE);
  assert_int_equal(err.code, ENPU_ERR_RANGE);
  assert_string_equal(err.msg, "got -4");
  enpu_err_prefix(&err, "%s: ", "job.json");
  assert_string_equal(err.msg, "job.json: got -4");
  assert_int_equal(enpu_errorf(NULL, ENPU_ERR_IO, "ignored"), ENPU_ERR_IO);
  assert_string_equal(enpu_strerror(ENPU_ERR_PARSE), "parse error");
  assert_string_equal(enpu_strerror(12345), "unknown error");
}

static void test_grow_keeps_contents(void **state) {
  (void)state;
  int *a = NULL;
  size_t cap = 0;
  for (int i = 0; i < 1000; i++) {
    assert_int_equal(enpu_grow((void **)&a, &cap, (size_t)i + 1, sizeof *a), 0);
    a[i] = i;
  }
  assert_true(cap >= 1000);
  for (int i = 0; i < 1000; i++) assert_int_equal(a[i], i);
  free(a);
  assert_null(enpu_calloc(SIZE_MAX / 2, 4));
}

/* Parts are zeroed, aligned for any type, disjoint, at least one element each; an
 * overflowing size changes no slot. */
static void test_calloc_parts(void **state) {
  (void)state;
  struct {
    char *tag;
    double *x;
    int64_t (*pair)[2];
    char *empty;
  } s = {0};
  assert_int_equal(
      ENPU_CALLOC_PARTS(ENPU_PART(s.tag, 3), ENPU_PART(s.x, 5), ENPU_PART(s.pair, 4), ENPU_PART(s.empty, 0)), 0);
  const char *parts[] = {s.tag, (char *)s.x, (char *)s.pair, s.empty};
  const size_t bytes[] = {3, 5 * sizeof(double), 4 * sizeof *s.pair, 1};
  for (int i = 0; i < 4; i++) {
    assert_int_equal((uintptr_t)parts[i] % _Alignof(max_align_t), 0);
    for (size_t b = 0; b < bytes[i]; b++) assert_int_equal(parts[i][b], 0);
    if (i) assert_true(parts[i] >= parts[i - 1] + bytes[i - 1]);
  }
  memset(s.tag, 'a', 3), memset(s.x, 0xff, 5 * sizeof(double)), memset(s.pair, 0xff, 4 * sizeof *s.pair);
  s.empty[0] = 'z';
  assert_int_equal(s.tag[2], 'a');
  free(s.tag);
  double *keep = NULL, *big = NULL;
  assert_int_equal(ENPU_CALLOC_PARTS(ENPU_PART(keep, 1), ENPU_PART(big, SIZE_MAX / 4)), ENPU_ERR_NOMEM);
  assert_null(keep);
  assert_null(big);
}

static void test_path_relative(void **state) {
  (void)state;
  char out[64];
  assert_int_equal(enpu_path_relative("jobs/demo.json", "models/a.json", out, sizeof out, NULL), 0);
  assert_string_equal(out, "jobs/models/a.json");
  assert_int_equal(enpu_path_relative("demo.json", "models/a.json", out, sizeof out, NULL), 0);
  assert_string_equal(out, "models/a.json");
  assert_int_equal(enpu_path_relative("jobs/demo.json", "/abs/a.json", out, sizeof out, NULL), 0);
  assert_string_equal(out, "/abs/a.json");
  char tiny[8];
  assert_int_equal(enpu_path_relative("jobs/demo.json", "models/a.json", tiny, sizeof tiny, NULL), ENPU_ERR_RANGE);
}

static void test_read_missing_file_names_it(void **state) {
  (void)state;
  enpu_err err = {0};
  char *data = NULL;
  assert_int_equal(enpu_read_file("/nonexistent/x.json", &data, NULL, &err), ENPU_ERR_IO);
  assert_null(data);
  assert_non_null(strstr(err.msg, "/nonexistent/x.json"));
}

/* Only a regular file within the limit is read: a FIFO (no writer: it would block), a
 * device and a directory are refused as what they are, a file over the limit by size. */
static void test_read_refuses_what_is_no_input(void **state) {
  (void)state;
  char dir[] = "/tmp/enpu-read-XXXXXX", fifo[64], file[64];
  assert_non_null(mkdtemp(dir));
  snprintf(fifo, sizeof fifo, "%s/fifo", dir);
  snprintf(file, sizeof file, "%s/file", dir);
  assert_int_equal(mkfifo(fifo, 0600), 0);
  FILE *f = fopen(file, "w");
  assert_non_null(f);
  fputs("0123456789", f);
  fclose(f);
  const struct {
    const char *path, *says;
  } bad[] = {{fifo, "a FIFO"}, {"/dev/zero", "a character device"}, {dir, "a directory"}};
  enpu_err err = {0};
  char *data = NULL;
  size_t len = 0;
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    assert_int_equal(enpu_read_file(bad[i].path, &data, &len, &err), ENPU_ERR_INVALID);
    assert_null(data);
    assert_non_null(strstr(err.msg, bad[i].says));
  }
  assert_int_equal(enpu_read_file_max(file, 9, &data, &len, &err), ENPU_ERR_INVALID);
  assert_non_null(strstr(err.msg, "more than this input may hold"));
  assert_int_equal(enpu_read_file_max(file, 10, &data, &len, &err), ENPU_OK);
  assert_int_equal(len, 10);
  assert_string_equal(data, "0123456789");
  free(data);
  unlink(fifo);
  unlink(file);
  rmdir(dir);
}

static int is_dir(const char *path) {
  struct stat st;
  return stat(path, &st) == 0 && S_ISDIR(st.st_mode);
}

static void test_mkdir_p(void **state) {
  (void)state;
  char base[] = "/tmp/test_common.XXXXXX", path[256], cmd[300];
  enpu_err err = {0};
  assert_non_null(mkdtemp(base));
  /* parents made on the way; an existing tree and a trailing slash are fine */
  snprintf(path, sizeof path, "%s/a/b/c", base);
  assert_int_equal(enpu_mkdir_p(path, &err), 0);
  assert_true(is_dir(path));
  assert_int_equal(enpu_mkdir_p(path, &err), 0);
  snprintf(path, sizeof path, "%s/a/d/", base);
  assert_int_equal(enpu_mkdir_p(path, &err), 0);
  assert_true(is_dir(path));
  /* a file in the way: as the target, and as a parent (named in the message) */
  snprintf(path, sizeof path, "%s/file", base);
  FILE *f = fopen(path, "w");
  assert_non_null(f);
  fclose(f);
  assert_int_equal(enpu_mkdir_p(path, &err), ENPU_ERR_IO);
  assert_non_null(strstr(err.msg, "is not a directory"));
  snprintf(path, sizeof path, "%s/file/x", base);
  assert_int_equal(enpu_mkdir_p(path, &err), ENPU_ERR_IO);
  assert_non_null(strstr(err.msg, "cannot create directory"));
  assert_non_null(strstr(err.msg, path));
  assert_int_equal(enpu_mkdir_p("", &err), ENPU_ERR_INVALID);
  char *long_name = malloc(8192);
  assert_non_null(long_name);
  memset(long_name, 'x', 8191);
  long_name[8191] = '\0';
  assert_int_equal(enpu_mkdir_p(long_name, &err), ENPU_ERR_RANGE);
  free(long_name);
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", base);
  assert_int_equal(system(cmd), 0);
}

/* The whole of a small file, or "" when it cannot be read. */
static const char *slurp(const char *path, char *buf, size_t cap) {
  FILE *f = fopen(path, "r");
  size_t n = f ? fread(buf, 1, cap - 1, f) : 0;
  if (f) fclose(f);
  buf[n] = '\0';
  return buf;
}

/* A symbolic link and a hard link planted at the final name and at its .tmp, and a stale
 * .tmp: each is replaced as a name, the targets keep their content, the published file
 * is a plain file of one name with the new content and no .tmp is left; a discarded file
 * leaves nothing; a log is appended to only as a plain file of one name; a write that
 * cannot publish (a directory at the name) removes its temporary. */
static void test_file_publish_never_through_links(void **state) {
  (void)state;
  char base[] = "/tmp/test_common.XXXXXX", path[256], tmp[270], victim[256], side[256], buf[64], cmd[300];
  enpu_err err = {0};
  struct stat st;
  assert_non_null(mkdtemp(base));
  snprintf(path, sizeof path, "%s/out.md", base);
  snprintf(tmp, sizeof tmp, "%s.tmp", path);
  snprintf(victim, sizeof victim, "%s/victim", base);
  snprintf(side, sizeof side, "%s/other-name", base);
  for (int plant = 0; plant < 5; plant++) {
    assert_int_equal(enpu_file_write(victim, "victim\n", 7, 0, &err), 0);
    unlink(side);
    if (plant == 0) assert_int_equal(symlink(victim, path), 0);
    if (plant == 1) assert_int_equal(link(victim, path), 0);
    if (plant == 2) assert_int_equal(symlink(victim, tmp), 0);
    if (plant == 3) assert_int_equal(link(victim, tmp), 0);
    if (plant == 4) assert_int_equal(enpu_file_write(side, "stale", 5, 0, &err) || rename(side, tmp), 0);
    FILE *f = NULL;
    assert_int_equal(enpu_file_create(path, &f, &err), 0);
    fprintf(f, "new %d\n", plant);
    assert_int_equal(enpu_file_publish(f, path, plant % 2 ? ENPU_FILE_DURABLE : 0, &err), 0);
    assert_string_equal(slurp(victim, buf, sizeof buf), "victim\n");
    assert_int_equal(lstat(path, &st), 0);
    assert_true(S_ISREG(st.st_mode) && st.st_nlink == 1);
    snprintf(cmd, sizeof cmd, "new %d\n", plant);
    assert_string_equal(slurp(path, buf, sizeof buf), cmd);
    assert_int_equal(lstat(tmp, &st), -1);
    assert_int_equal(lstat(victim, &st), 0);
    assert_int_equal(st.st_nlink, 1);
    unlink(path);
  }
  FILE *f = NULL;
  assert_int_equal(enpu_file_create(path, &f, &err), 0);
  enpu_file_discard(f, path);
  assert_int_equal(lstat(path, &st), -1);
  assert_int_equal(lstat(tmp, &st), -1);
  /* a log is appended to only as a plain file of one name */
  int fd = enpu_file_append(path, &err);
  assert_true(fd >= 0 && write(fd, "a", 1) == 1 && close(fd) == 0);
  fd = enpu_file_append(path, &err);
  assert_true(fd >= 0 && write(fd, "b", 1) == 1 && close(fd) == 0);
  assert_string_equal(slurp(path, buf, sizeof buf), "ab");
  assert_int_equal(link(path, side), 0);
  assert_int_equal(enpu_file_append(path, &err), ENPU_ERR_INVALID);
  assert_int_equal(unlink(path) | symlink(side, path), 0);
  assert_int_equal(enpu_file_append(path, &err), ENPU_ERR_INVALID);
  assert_non_null(strstr(err.msg, "symbolic link"));
  assert_string_equal(slurp(side, buf, sizeof buf), "ab");
  assert_int_equal(unlink(path), 0);
  assert_int_equal(mkdir(path, 0700), 0);
  assert_int_equal(enpu_file_write(path, "x", 1, 0, &err), ENPU_ERR_IO);
  assert_non_null(strstr(err.msg, path));
  assert_int_equal(lstat(tmp, &st), -1);
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", base);
  assert_int_equal(system(cmd), 0);
}

/* Moving aside takes the first free number and never replaces a file. */
static void test_file_move_aside_numbers(void **state) {
  (void)state;
  char base[] = "/tmp/test_common.XXXXXX", path[256], aside[300], buf[16], cmd[300];
  enpu_err err = {0};
  assert_non_null(mkdtemp(base));
  snprintf(path, sizeof path, "%s/j", base);
  for (int i = 1; i <= 3; i++) {
    char text[8];
    snprintf(text, sizeof text, "%d", i);
    assert_int_equal(enpu_file_write(path, text, strlen(text), 0, &err), 0);
    if (i == 2) { /* a gap is filled, a taken name skipped */
      snprintf(aside, sizeof aside, "%s.bad-1", path);
      unlink(aside);
    }
    assert_int_equal(enpu_file_move_aside(path, ".bad", aside, sizeof aside, &err), 0);
    snprintf(cmd, sizeof cmd, "%s.bad-%d", path, i == 3 ? 2 : 1);
    assert_string_equal(aside, cmd);
    assert_string_equal(slurp(aside, buf, sizeof buf), text);
    assert_int_equal(access(path, F_OK), -1);
  }
  assert_int_equal(enpu_file_move_aside(path, ".bad", aside, sizeof aside, &err), ENPU_ERR_IO);
  assert_int_equal(enpu_file_move_aside(path, ".bad", aside, 8, &err), ENPU_ERR_RANGE);
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", base);
  assert_int_equal(system(cmd), 0);
}

static void test_hasher_is_field_sensitive(void **state) {
  (void)state;
  enpu_hasher a, b;
  enpu_hasher_init(&a, 0);
  enpu_hasher_init(&b, 0);
  enpu_hasher_str(&a, "ab");
  enpu_hasher_str(&a, "c");
  enpu_hasher_str(&b, "a");
  enpu_hasher_str(&b, "bc");
  assert_true(enpu_hasher_digest(&a) != enpu_hasher_digest(&b));
  enpu_hasher_init(&a, 0);
  enpu_hasher_init(&b, 0);
  enpu_hasher_f64(&a, 0.0);
  enpu_hasher_f64(&b, -0.0);
  assert_true(enpu_hasher_digest(&a) == enpu_hasher_digest(&b));
  assert_true(enpu_hash64("x", 1, 0) == enpu_hash64("x", 1, 0));
  assert_true(enpu_hash64("x", 1, 0) != enpu_hash64("y", 1, 0));
}

/* The byte order of every binary record: least significant byte first, whatever the host. */
static void test_little_endian(void **state) {
  (void)state;
  unsigned char b[8];
  enpu_put_le32(b, 0x01020304u);
  assert_int_equal(b[0], 0x04);
  assert_int_equal(b[3], 0x01);
  assert_int_equal(enpu_get_le32(b), 0x01020304u);
  enpu_put_le64(b, 0x0102030405060708ull);
  assert_int_equal(b[0], 0x08);
  assert_int_equal(b[7], 0x01);
  assert_true(enpu_get_le64(b) == 0x0102030405060708ull);
}

/* An element: {key, push number}; the push number breaks ties. */
static int pair_less(const void *pa, const void *pb) {
  const double *a = pa, *b = pb;
  return a[0] < b[0] || (a[0] == b[0] && a[1] < b[1]);
}

/* The least of the n pairs in ref, removed from it (a heap's answer, found by a scan). */
static void ref_take_least(double (*ref)[2], size_t *n, double out[2]) {
  size_t k = 0;
  for (size_t i = 1; i < *n; i++)
    if (pair_less(ref[i], ref[k])) k = i;
  memcpy(out, ref[k], sizeof ref[k]);
  memmove(ref + k, ref + k + 1, (*n - k - 1) * sizeof *ref);
  (*n)--;
}

/* The heap gives its elements back least first, interleaved pushes and pops included
 * (each pop between pushes is the least of what is in at that time, as a scan of a
 * plain copy finds it), and a tie broken in less (here by push order) comes out in that
 * order. A pop from an empty heap, or of an element above ENPU_HEAP_MAX_ELEM bytes,
 * is refused and changes nothing. */
static void test_heap_orders(void **state) {
  (void)state;
  double v[64][2], ref[64][2], top[2], want[2], prev[2] = {-1, -1};
  size_t n = 0, nref = 0;
  uint64_t x = 7;
  for (int i = 0; i < 40; i++) {
    x = x * 6364136223846793005ull + 1442695040888963407ull;
    const double e[2] = {(double)(x >> 60), i}; /* 16 keys: many ties */
    enpu_heap_push(v, &n, sizeof e, e, pair_less);
    memcpy(ref[nref++], e, sizeof e);
    if (i % 5 == 4) {
      assert_int_equal(enpu_heap_pop(v, &n, sizeof top, top, pair_less), 0);
      ref_take_least(ref, &nref, want);
      assert_memory_equal(top, want, sizeof top);
    }
  }
  assert_int_equal(n, 32);
  while (n > 0) {
    assert_int_equal(enpu_heap_pop(v, &n, sizeof top, top, pair_less), 0);
    assert_true(pair_less(prev, top));
    memcpy(prev, top, sizeof prev);
  }
  assert_int_equal(enpu_heap_pop(v, &n, sizeof top, top, pair_less), ENPU_ERR_INVALID);
  unsigned char big[2][ENPU_HEAP_MAX_ELEM + 1] = {{1}, {2}}, out[ENPU_HEAP_MAX_ELEM + 1] = {0};
  n = 2;
  assert_int_equal(enpu_heap_pop(big, &n, sizeof out, out, pair_less), ENPU_ERR_INVALID);
  assert_int_equal(n, 2);
  assert_int_equal(out[0], 0);
}

/* The one key=value parser: pairs in order, and every malformed value refused with what
 * was wrong; a key given twice names the key whatever the pair limit. */
static void test_kv_split(void **state) {
  (void)state;
  enpu_kv kv[3];
  enpu_err err = {0};
  char ok[] = "phase=decode,batch=8,seq=";
  assert_int_equal(enpu_kv_split(ok, kv, 3, &err), 3);
  assert_string_equal(kv[0].key, "phase");
  assert_string_equal(kv[0].value, "decode");
  assert_string_equal(kv[2].key, "seq");
  assert_string_equal(kv[2].value, "");
  char twice[] = "phase=decode,batch=8,seq=3000,seq=5000";
  assert_int_equal(enpu_kv_split(twice, kv, 3, &err), ENPU_ERR_INVALID);
  assert_non_null(strstr(err.msg, "'seq' given twice"));
  const char *bad[] = {"a=1,,b=2", "a=1,b", "=1", "", "a=1,b=2,c=3,d=4"};
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    char text[64];
    snprintf(text, sizeof text, "%s", bad[i]);
    assert_int_equal(enpu_kv_split(text, kv, 3, &err), ENPU_ERR_INVALID);
  }
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_errorf_returns_code_and_formats),
      cmocka_unit_test(test_grow_keeps_contents),
      cmocka_unit_test(test_calloc_parts),
      cmocka_unit_test(test_path_relative),
      cmocka_unit_test(test_read_missing_file_names_it),
      cmocka_unit_test(test_read_refuses_what_is_no_input),
      cmocka_unit_test(test_mkdir_p),
      cmocka_unit_test(test_hasher_is_field_sensitive),
      cmocka_unit_test(test_file_publish_never_through_links),
      cmocka_unit_test(test_file_move_aside_numbers),
      cmocka_unit_test(test_kv_split),
      cmocka_unit_test(test_little_endian),
      cmocka_unit_test(test_heap_orders),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
