/* test_farm.h — the farm's tests in other files than test_farm.c (which holds main):
 * test_farm_parts.c, the part records of split op searches and their merge. */
#ifndef TEST_FARM_H
#define TEST_FARM_H

void test_part_codec(void **state);
void test_merge_parts(void **state);

#endif /* TEST_FARM_H */
