/* test_size.h — how big the unit tests' heaviest cases run. With ENPU_TEST_SIZE=small
 * (CTest sets it in a sanitizer build, `make check` sets it) they take the same code
 * paths on smaller inputs: a sanitizer checks memory errors and undefined behaviour,
 * which the size of a search does not change, and a developer's pre-commit run stays
 * short. Unset (the Release `make test`), they run full size. */
#ifndef TEST_SIZE_H
#define TEST_SIZE_H

#include <stdlib.h>
#include <string.h>

static inline int test_size_small(void) {
  const char *s = getenv("ENPU_TEST_SIZE");
  return s && !strcmp(s, "small");
}

#endif /* TEST_SIZE_H */
