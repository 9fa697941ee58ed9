/* test_models.h — the shipped model files (jobs/models/), loaded as the farm loads them:
 * unit fixtures take a model's values from its file instead of restating them, so a test
 * checks the code against the same numbers every command uses. Header-only. */
#ifndef TEST_MODELS_H
#define TEST_MODELS_H

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include <cmocka.h>

#include "config.h"

/* jobs/models/<name>.json, loaded (a flat struct: the copy owns nothing). */
static inline config_model test_shipped_model(const char *name) {
  char path[1024];
  snprintf(path, sizeof path, "%s/jobs/models/%s.json", ENPU_SOURCE_DIR, name);
  config_model *m = NULL;
  enpu_err err = {0};
  if (config_model_load(path, &m, &err) < 0) fail_msg("%s: %s", path, err.msg);
  const config_model out = *m;
  config_model_free(m);
  return out;
}

#endif /* TEST_MODELS_H */
