/* test_report.h — the report module's tests in more than one file: test_report.c (one
 * store's report and main), test_report_paper.c (`enpu report paper`) and
 * test_report_refs.c (the paper's values on a figure). */
#ifndef TEST_REPORT_H
#define TEST_REPORT_H

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

extern const struct CMUnitTest report_paper_tests[];
extern const size_t report_paper_ntests;
extern const struct CMUnitTest report_refs_tests[];
extern const size_t report_refs_ntests;

#endif /* TEST_REPORT_H */
