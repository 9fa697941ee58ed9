/* test_opcache.c — the result cache's entries (opcache.h): a stored payload comes back
 * byte for byte under its kind and key only; a damaged entry (a flipped byte, a torn
 * file) is reported damaged and removed, never returned; prune removes the least
 * recently used first (a hit counts as a use); verify counts and removes the damaged. */
#define _XOPEN_SOURCE 700
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "opcache.h"

typedef struct {
  char dir[64];
  opcache *c;
} fixture;

static int setup(void **state) {
  fixture *f = calloc(1, sizeof *f);
  snprintf(f->dir, sizeof f->dir, "/tmp/test_opcache.XXXXXX");
  if (!mkdtemp(f->dir)) return -1;
  enpu_err err = {0};
  if (opcache_open(f->dir, &f->c, &err) < 0) return -1;
  *state = f;
  return 0;
}

static int teardown(void **state) {
  fixture *f = *state;
  char cmd[128];
  snprintf(cmd, sizeof cmd, "rm -rf %s", f->dir);
  opcache_close(f->c);
  const int rc = system(cmd);
  free(f);
  return rc == 0 ? 0 : -1;
}

/* The file of (kind, key): the only file under the shard of its key. */
static void entry_file(const fixture *f, uint32_t kind, uint64_t key, char *out, size_t len) {
  snprintf(out, len, "%s/v1/%02x/%016llx-%u", f->dir, (unsigned)(key >> 56), (unsigned long long)key, kind);
}

static void test_roundtrip(void **state) {
  fixture *f = *state;
  enpu_err err = {0};
  const char payload[] = "pareto points";
  void *data = NULL;
  size_t bytes = 0;
  assert_int_equal(opcache_get(f->c, 1, 42, &data, &bytes, &err), OPCACHE_MISS);
  assert_int_equal(opcache_put(f->c, 1, 42, payload, sizeof payload, &err), 0);
  assert_int_equal(opcache_get(f->c, 1, 42, &data, &bytes, &err), OPCACHE_HIT);
  assert_int_equal(bytes, sizeof payload);
  assert_memory_equal(data, payload, sizeof payload);
  free(data);
  assert_int_equal(opcache_get(f->c, 2, 42, &data, &bytes, &err), OPCACHE_MISS); /* another kind */
  assert_int_equal(opcache_get(f->c, 1, 43, &data, &bytes, &err), OPCACHE_MISS); /* another key */
}

/* Damage `path`: flip its last byte (truncate: cut it in half). */
static void damage(const char *path, int truncate_it) {
  struct stat st;
  assert_int_equal(stat(path, &st), 0);
  if (truncate_it) {
    assert_int_equal(truncate(path, st.st_size / 2), 0);
    return;
  }
  FILE *fp = fopen(path, "r+b");
  assert_non_null(fp);
  fseek(fp, -1, SEEK_END);
  const int c = fgetc(fp);
  fseek(fp, -1, SEEK_END);
  fputc(c ^ 0x40, fp);
  fclose(fp);
}

static void test_damaged(void **state) {
  fixture *f = *state;
  enpu_err err = {0};
  char path[256];
  for (int truncate_it = 0; truncate_it < 2; truncate_it++) {
    const uint64_t key = 0xabcdef0123456789ull + (uint64_t)truncate_it;
    assert_int_equal(opcache_put(f->c, 1, key, "0123456789", 10, &err), 0);
    entry_file(f, 1, key, path, sizeof path);
    damage(path, truncate_it);
    void *data = (void *)1;
    size_t bytes = 1;
    assert_int_equal(opcache_get(f->c, 1, key, &data, &bytes, &err), OPCACHE_DAMAGED);
    assert_null(data);
    assert_int_equal(access(path, F_OK), -1); /* removed */
  }
  assert_int_equal(opcache_put(f->c, 1, 7, "x", 1, &err), 0);
  entry_file(f, 1, 7, path, sizeof path);
  damage(path, 0);
  opcache_scan s;
  assert_int_equal(opcache_verify(f->dir, &s, &err), 0);
  assert_int_equal(s.damaged, 1);
  assert_int_equal(s.entries, 0);
}

/* Entries 1, 2, 3 written in that order, each a second older than the next; a hit on
 * 1 makes it the newest: a prune to two entries' size removes 2 only. */
static void test_prune_lru(void **state) {
  fixture *f = *state;
  enpu_err err = {0};
  char path[256];
  for (uint64_t k = 1; k <= 3; k++) {
    assert_int_equal(opcache_put(f->c, 1, k, "abcdefgh", 8, &err), 0);
    entry_file(f, 1, k, path, sizeof path);
    const struct timespec t[2] = {{(time_t)(1000000 + k), 0}, {(time_t)(1000000 + k), 0}};
    assert_int_equal(utimensat(AT_FDCWD, path, t, 0), 0);
  }
  void *data;
  size_t bytes;
  assert_int_equal(opcache_get(f->c, 1, 1, &data, &bytes, &err), OPCACHE_HIT);
  free(data);
  opcache_scan s;
  assert_int_equal(opcache_stats(f->dir, &s, &err), 0);
  assert_int_equal(s.entries, 3);
  const int64_t each = s.entry_bytes / 3;
  assert_int_equal(opcache_prune(f->dir, 2 * each, &s, &err), 0);
  assert_int_equal(s.removed, 1);
  assert_int_equal(s.entries, 2);
  assert_int_equal(opcache_get(f->c, 1, 2, &data, &bytes, &err), OPCACHE_MISS);
  assert_int_equal(opcache_get(f->c, 1, 1, &data, &bytes, &err), OPCACHE_HIT);
  free(data);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test_setup_teardown(test_roundtrip, setup, teardown),
      cmocka_unit_test_setup_teardown(test_damaged, setup, teardown),
      cmocka_unit_test_setup_teardown(test_prune_lru, setup, teardown),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
