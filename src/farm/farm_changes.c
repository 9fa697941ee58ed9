/* farm_changes.c — what changed since a store was farmed (farm_changes_find): the job,
 * model, chip and cluster documents its provenance keeps against the ones this farm
 * read, field by field, as JSON paths ("model.layers", "job.phases.decode.batch"); then
 * what the JSON cannot show, by hash: the chip's tables beside its file and the cost
 * model's version. The farm's summary prints them with the tasks recomputed. */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cost.h"
#include "farm_job_internal.h"

/* A value as compact JSON, cut to fit (NULL: "(none)"). */
static void show(const json_t *v, char out[FARM_CHANGE_VALUE_LEN]) {
  char *text = v ? json_dumps(v, JSON_COMPACT | JSON_ENCODE_ANY | JSON_SORT_KEYS | JSON_REAL_PRECISION(12)) : NULL;
  const char *t = text ? text : "(none)";
  if (strlen(t) < FARM_CHANGE_VALUE_LEN) snprintf(out, FARM_CHANGE_VALUE_LEN, "%s", t);
  else snprintf(out, FARM_CHANGE_VALUE_LEN, "%.*s...", FARM_CHANGE_VALUE_LEN - 4, t);
  free(text);
}

static void add_change(farm_summary *s, const char *path, const json_t *before, const json_t *now) {
  if (s->nchanges < FARM_CHANGES_MAX) {
    farm_change *c = &s->changes[s->nchanges];
    snprintf(c->path, sizeof c->path, "%s", path);
    show(before, c->before);
    show(now, c->now);
  }
  s->nchanges++;
}

/* An array of numbers and strings only: one field (slacks, axes), not one per element. */
static int scalar_array(const json_t *a) {
  size_t i;
  const json_t *v;
  json_array_foreach(a, i, v) if (json_is_object(v) || json_is_array(v)) return 0;
  return 1;
}

static void diff_value(const json_t *a, const json_t *b, const char *path, farm_summary *s);

/* Both objects: every key of either, a's first, in a's order, then b's new ones. */
static void diff_object(const json_t *a, const json_t *b, const char *path, farm_summary *s) {
  char sub[FARM_CHANGE_PATH_LEN];
  const char *key;
  const json_t *v;
  json_object_foreach((json_t *)a, key, v) {
    snprintf(sub, sizeof sub, "%s.%s", path, key);
    diff_value(v, json_object_get(b, key), sub, s);
  }
  json_object_foreach((json_t *)b, key, v) {
    if (json_object_get(a, key)) continue;
    snprintf(sub, sizeof sub, "%s.%s", path, key);
    diff_value(NULL, v, sub, s);
  }
}

static void diff_value(const json_t *a, const json_t *b, const char *path, farm_summary *s) {
  if (a && b && json_equal((json_t *)a, (json_t *)b)) return;
  if (json_is_object(a) && json_is_object(b)) return diff_object(a, b, path, s);
  if (json_is_array(a) && json_is_array(b) && json_array_size(a) == json_array_size(b) &&
      !(scalar_array(a) && scalar_array(b))) {
    char sub[FARM_CHANGE_PATH_LEN];
    for (size_t i = 0; i < json_array_size(a); i++) {
      snprintf(sub, sizeof sub, "%s[%zu]", path, i);
      diff_value(json_array_get(a, i), json_array_get(b, i), sub, s);
    }
    return;
  }
  add_change(s, path, a, b);
}

/* One document: the stored text against the current one (a store without it: nothing
 * to compare). */
static void diff_doc(const char *name, const char *before, const char *now, farm_summary *s) {
  if (!before || !now) return;
  json_t *a = json_loads(before, 0, NULL), *b = json_loads(now, 0, NULL);
  if (a && b) diff_value(a, b, name, s);
  json_decref(a);
  json_decref(b);
}

/* A hash that changed where no field shows it. */
static void diff_hash(const char *path, uint64_t before, uint64_t now, farm_summary *s) {
  if (before == now || before == 0) return;
  char a[24], b[24];
  snprintf(a, sizeof a, "\"%016llx\"", (unsigned long long)before);
  snprintf(b, sizeof b, "\"%016llx\"", (unsigned long long)now);
  json_t *ja = json_loads(a, JSON_DECODE_ANY, NULL), *jb = json_loads(b, JSON_DECODE_ANY, NULL);
  add_change(s, path, ja, jb);
  json_decref(ja);
  json_decref(jb);
}

int farm_changes_find(const store_contents *prev, const config_job *job, farm_summary *sum, enpu_err *err) {
  (void)err;
  sum->had_store = 1;
  diff_doc("job", prev->job_json, job->job_json, sum);
  diff_doc("model", prev->model_json, job->model_json, sum);
  const int before_chip = sum->nchanges;
  diff_doc("chip", prev->chip_json, job->chip_json, sum);
  if (sum->nchanges == before_chip)
    diff_hash("chip (tables beside the chip file)", prev->chip_hash, job->chip.hash, sum);
  diff_doc("cluster", prev->cluster_json, job->cluster_json, sum);
  diff_hash("cost model (COST_MODEL_VERSION)", prev->cost_model_hash,
            enpu_hash64(COST_MODEL_VERSION, strlen(COST_MODEL_VERSION), 0), sum);
  return 0;
}
