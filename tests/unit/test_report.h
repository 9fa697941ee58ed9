/* test_report.h — the report module's tests (test_report.c: one store's report and main;
 * the paper's report and its values on figures are the paper wing's, test_paper*.c). */
#ifndef TEST_REPORT_H
#define TEST_REPORT_H

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#endif /* TEST_REPORT_H */
