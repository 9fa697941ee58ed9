/* test_store.h — what test_store.c registers from the module's other test files. */
#ifndef TEST_STORE_H
#define TEST_STORE_H

/* test_store_leaks.c: damaged copies of the store at `store`, written in `dir`, opened by
 * every reader: errors, and no HDF5 object left open (nor at exit). */
void test_failed_opens_leak_nothing(const char *store, const char *dir);

#endif /* TEST_STORE_H */
