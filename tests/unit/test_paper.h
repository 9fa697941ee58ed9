/* test_paper.h — the paper wing's tests, one program: test_paper.c (`enpu report paper`'s
 * refusals, the overlay on a report, and main), test_paper_numbers.c (the paper's numbers
 * file) and test_paper_refs.c (the paper's values on a figure). */
#ifndef TEST_PAPER_H
#define TEST_PAPER_H

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "test_util.h"

extern const struct CMUnitTest paper_numbers_tests[];
extern const size_t paper_numbers_ntests;
extern const struct CMUnitTest paper_refs_tests[];
extern const size_t paper_refs_ntests;

#endif /* TEST_PAPER_H */
