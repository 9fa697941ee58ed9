/* test_util.h — what every cmocka program of tests/unit shares: a group's tests gathered
 * from several files (a module's tests split by topic run as one program, one CTest
 * entry), and the end of a group setup that loaded its fixture (print why it failed, or
 * hand the fixture to the tests). Header-only: each program includes it once per file. */
#ifndef TEST_UTIL_H
#define TEST_UTIL_H

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "common.h"

/* One file's tests: its array and its count. */
typedef struct {
  const struct CMUnitTest *tests;
  size_t count;
} test_part;

/* Define one file's part of a group: the array NAME_tests of the tests given and its
 * count NAME_ntests (the module's test header declares both). */
#define TEST_PART(name, ...)                              \
  const struct CMUnitTest name##_tests[] = {__VA_ARGS__}; \
  const size_t name##_ntests = sizeof name##_tests / sizeof name##_tests[0]

/* Run the tests of every part as one group `name`, in order, with the group's setup
 * and teardown (NULL: none). @return cmocka's: the number of failed tests. */
static inline int test_run_parts(const char *name, const test_part *parts, size_t nparts, CMFixtureFunction setup,
                                 CMFixtureFunction teardown) {
  size_t n = 0;
  for (size_t p = 0; p < nparts; p++) n += parts[p].count;
  struct CMUnitTest *all = calloc(n + 1, sizeof *all);
  if (!all) return fprintf(stderr, "%s: out of memory\n", name), 1;
  n = 0;
  for (size_t p = 0; p < nparts; p++) {
    memcpy(all + n, parts[p].tests, parts[p].count * sizeof *all);
    n += parts[p].count;
  }
  const int failed = _cmocka_run_group_tests(name, all, n, setup, teardown);
  free(all);
  return failed;
}

/* The end of a group setup: rc != 0 prints "setup: <why>" and fails the group; else the
 * tests get `loaded` (the fixture) as their state. */
static inline int test_setup_done(int rc, const enpu_err *err, void **state, void *loaded) {
  if (rc != 0) {
    fprintf(stderr, "setup: %s\n", err->msg);
    return -1;
  }
  *state = loaded;
  return 0;
}

/* Write /tmp/enpu-test-NAME-PID.json (its path into path), a
 * job NAME on the shipped Llama3-70B model, TPUv5p chip and cluster (ENPU_SOURCE_DIR),
 * store NAME.h5, decode batch 8 at seq 2048, slacks 0 and 0.05, the policies listed
 * (JSON strings, comma-separated), then tail_fmt (further members, each after ",\n  ")
 * and the closing brace. One member a line, so tests may assert on line numbers. */
static inline void test_write_llama_job(char *path, size_t cap, const char *name, const char *policies,
                                        const char *tail_fmt, ...) __attribute__((format(printf, 5, 6)));
static inline void test_write_llama_job(char *path, size_t cap, const char *name, const char *policies,
                                        const char *tail_fmt, ...) {
  snprintf(path, cap, "/tmp/enpu-test-%s-%d.json", name, (int)getpid());
  FILE *f = fopen(path, "w");
  assert_non_null(f);
  fprintf(f,
          "{\n  \"name\": \"%s\",\n  \"model\": \"%s/jobs/models/llama3-70b.json\",\n"
          "  \"chip\": \"%s/jobs/chips/tpuv5p.json\",\n  \"cluster\": \"%s/jobs/clusters/llama3-70b.json\",\n"
          "  \"store\": \"%s.h5\",\n  \"phases\": { \"decode\": { \"batch\": [8], \"seq\": [2048] } },\n"
          "  \"slacks\": [0, 0.05],\n  \"policies\": [%s]",
          name, ENPU_SOURCE_DIR, ENPU_SOURCE_DIR, ENPU_SOURCE_DIR, name, policies);
  va_list ap;
  va_start(ap, tail_fmt);
  vfprintf(f, tail_fmt, ap);
  va_end(ap);
  fprintf(f, "\n}\n");
  assert_int_equal(fclose(f), 0);
}

#endif /* TEST_UTIL_H */
