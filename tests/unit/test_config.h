/* test_config.h — the config module's tests in more than one file, one program:
 * test_config.c (the valid document set, its fixture, valid inputs, the bad-input runner
 * and main), test_config_bad_job.c and test_config_bad_docs.c (the bad-input table),
 * and test_config_shipped.c (jobs/ as shipped). */
#ifndef TEST_CONFIG_H
#define TEST_CONFIG_H

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>
#include <stdbool.h>

#include "test_util.h"

/* A temp dir holding the valid document set (NDOCS files), with optional edits to one
 * file (test_config.c): fixture_create(file, from, to, from2, to2) replaces `from` by
 * `to` (and from2 by to2) in `file`; NULL file: the set unedited. */
#define NDOCS 16
typedef struct {
  char dir[256];
  char *texts[NDOCS]; /* as written */
} fixture;
fixture *fixture_create(const char *file, const char *from, const char *to, const char *from2, const char *to2);
void fixture_free(fixture *fx);

/* One bad input: an edit of the valid document set and the error it must give
 * (test_config_bad_job.c, test_config_bad_docs.c; run by test_bad_input). */
typedef struct {
  const char *name;
  const char *load; /* the job loaded; NULL: job.json */
  const char *file; /* the file edited */
  const char *from, *to;
  const char *from2, *to2; /* optional second edit */
  int code;
  const char *err_file; /* the file the message names; NULL: the edited one */
  const char *needle;   /* where the error is; offset into the needle */
  int offset;
  const char *path; /* JSON path after the position; NULL for CSV and syntax errors */
  const char *expect;
  bool ends;           /* the message ends with expect (nothing printed after the value) */
  const char *needle2; /* a second position the message names (e.g. the earlier entry) */
  int offset2;
  const char *path2;
} bad_case;
extern const bad_case config_bad_job_cases[], config_bad_docs_cases[];
extern const size_t config_bad_job_ncases, config_bad_docs_ncases;
void test_bad_input(void **state); /* state: the bad_case */

extern const struct CMUnitTest config_shipped_tests[];
extern const size_t config_shipped_ntests;
extern const struct CMUnitTest config_sweep_tests[]; /* test_config_sweep.c */
extern const size_t config_sweep_ntests;

#endif /* TEST_CONFIG_H */
