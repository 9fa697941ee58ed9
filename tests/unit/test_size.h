/* test_size.h — how big the unit tests' heaviest cases run. By default they take the
 * same code paths on smaller inputs (a few layers of the model instead of all): the
 * properties they check do not depend on the layer count, a sanitizer finds the same
 * memory errors, and the whole suite keeps within its time bound on two cores.
 * ENPU_TEST_SIZE=full runs them on the whole model (`make test-full`, minutes of CPU). */
#ifndef TEST_SIZE_H
#define TEST_SIZE_H

#include <stdlib.h>
#include <string.h>

static inline int test_size_small(void) {
  const char *s = getenv("ENPU_TEST_SIZE");
  return !(s && !strcmp(s, "full"));
}

#endif /* TEST_SIZE_H */
