/* test_config.h — the config module's tests in more than one file: test_config.c (jobs,
 * models, chips, clusters and main) and test_config_paper.c (the paper's numbers file). */
#ifndef TEST_CONFIG_H
#define TEST_CONFIG_H

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

extern const struct CMUnitTest config_paper_tests[];
extern const size_t config_paper_ntests;
extern const struct CMUnitTest config_sweep_tests[]; /* test_config_sweep.c */
extern const size_t config_sweep_ntests;

#endif /* TEST_CONFIG_H */
