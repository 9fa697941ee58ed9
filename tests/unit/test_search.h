/* test_search.h — the search module's tests in other files than test_search.c (which
 * holds main): test_search_exact.c, the exact Pareto search against the exhaustive one
 * (and under the policy variants); test_search_domains.c, the domain counts against each
 * other. */
#ifndef TEST_SEARCH_H
#define TEST_SEARCH_H

void test_exact_equals_exhaustive(void **state);
void test_exact_variants(void **state);
void test_finer_mimics_coarser(void **state);

#endif /* TEST_SEARCH_H */
