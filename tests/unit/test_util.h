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

#include <cmocka.h>

#include "common.h"

/* One file's tests: its array and its count. */
typedef struct {
  const struct CMUnitTest *tests;
  size_t count;
} test_part;

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

#endif /* TEST_UTIL_H */
