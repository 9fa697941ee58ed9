/* config_sweep.c — a job's architecture sweep: its "sweep" section read into named chip
 * variants, and the one table of the chip parameters a sweep may vary.
 *
 * A variant is the job's chip with some parameters set to other values. It is named by its
 * point, "path=value[,path=value...]" with the paths in table order and the values as
 * config_variant_value_text prints them, so one point has one name and one chip hash
 * (the base chip's hash mixed with the name: a point equal to the base chip still has a
 * hash of its own). Every policy of the job is compiled once per variant, under the name
 * "<policy>:<point>" (config.h).
 *
 * Invariants: every row of the table names a member of config_chip that the loader range
 * checks under the same JSON path (config_ranges.c), so a swept value obeys the range a
 * chip file's would; a variant shares the base chip's tables (it owns no memory); `ops`
 * of a row is true when the op-level search reads the parameter — a row with it false
 * may reuse the base chip's op-level Pareto sets, so it must be false only when the
 * parameter is read by the request level alone (the reason is given per row). */
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config_internal.h"

#define NKEYS(a) (sizeof(a) / sizeof((a)[0]))
#define MAX_POINT_PARAMS 8

/* One sweepable parameter. check (may be NULL) refuses values the range table allows but
 * the chip cannot take; set (NULL: store the value at offset) applies one. */
typedef struct sweep_param {
  const char *path; /* as a job's "sweep" spells it; the chip file's JSON path without "$." */
  const char *unit; /* of its values, for axes */
  bool is_int;
  size_t offset; /* of the double or int member of config_chip */
  bool ops;      /* the op-level search reads it */
  int (*check)(const config_chip *c, double v, char *why, size_t cap);
  void (*set)(config_chip *c, const struct sweep_param *p, double v);
} sweep_param;

/* The IVR's efficiency rows exist for the transition time (power.h reads the rows of the
 * chip's scaling_time_ns only). */
static int check_scaling_time(const config_chip *c, double v, char *why, size_t cap) {
  for (int i = 0; i < c->ivr_dvfs.count; i++)
    if (c->ivr_dvfs.points[i].scaling_time_ns == v) return ENPU_OK;
  snprintf(why, cap, "a scaling time the DVFS regulator table has rows for (tables.ivr_dvfs of %s)", c->path);
  return ENPU_ERR_RANGE;
}

/* §3.1: "the n shadow registers map to the first n architectural registers". */
static int check_shadow(const config_chip *c, double v, char *why, size_t cap) {
  if (v <= c->vregs) return ENPU_OK;
  snprintf(why, cap, "at most the chip's %d vector registers (vu.vregs)", c->vregs);
  return ENPU_ERR_RANGE;
}

static int check_gating(const config_chip *c, double v, char *why, size_t cap) {
  (void)v;
  if (c->has_gating) return ENPU_OK;
  snprintf(why, cap, "a chip with a \"gating\" section (%s has none)", c->path);
  return ENPU_ERR_INVALID;
}

static int check_deep_sleep(const config_chip *c, double v, char *why, size_t cap) {
  (void)v;
  if (c->has_deep_sleep) return ENPU_OK;
  snprintf(why, cap, "a chip with a \"power_states\" section (%s has none)", c->path);
  return ENPU_ERR_INVALID;
}

/* The V/f state count at the chip's peak frequency: states 1..N are peak·k/N, so that
 * fewer states mean coarser steps, not a lower peak (Table 6: "0 (clock-gated)–1.7 GHz,
 * 50 MHz steps" is N = 34 at 50 MHz). */
static void set_states(config_chip *c, const sweep_param *p, double v) {
  (void)p;
  const double peak_mhz = c->freq_states * c->freq_step_mhz;
  c->freq_states = (int)v;
  c->freq_step_mhz = peak_mhz / c->freq_states;
  c->max_freq_ghz = c->freq_states * c->freq_step_mhz / 1000.0;
}

#define CHIP_AT(member) offsetof(config_chip, member)
#define SLEEP_ROW(key, unit, member) \
  { "power_states.deep_sleep." key, unit, false, CHIP_AT(deep_sleep.member), false, check_deep_sleep, NULL }
#define GATING_ROW(comp, i, key, unit, member) \
  { "gating." comp "." key, unit, false, CHIP_AT(gating[i].member), false, check_gating, NULL }
#define GATING_ROWS(comp, i)                                                                                      \
  GATING_ROW(comp, i, "gated_fraction", "fraction", gated_fraction),                                              \
      GATING_ROW(comp, i, "wake_ns", "ns", wake_ns), GATING_ROW(comp, i, "wake_energy_nj", "nJ", wake_energy_nj), \
      GATING_ROW(comp, i, "min_idle_ns", "ns", min_idle_ns)

/* The table, in canonical name order. `ops` false:
 *  - ivr.step_ns, ivr.step_mv: the V/f transition delay (Table 6, "IVR Transition Delay
 *    4 ns / 54 mV") is paid between operators; the op level prices one operator at one
 *    setting (§3.3: "For each operator, eNPU generates DVFS plans that closely estimate
 *    the Pareto frontier of energy-delay tradeoffs. Then, it iteratively picks an
 *    optimized DVFS plan from the Pareto frontier of each operator"), so the transitions
 *    enter at the request level and in finalisation only (search.h).
 *  - gating.*: power gating is applied to the schedule of the finalised DVFS plan
 *    (§4.7 combines DVFS "and power gating"; pg+X searches X's op level, docs/policies.md "Power
 *    gating").
 *  - power_states.*: no plan reads them; the replay's fleet does (config_chip_set). */
static const sweep_param params[] = {
    {"clock.states", "states", true, CHIP_AT(freq_states), true, NULL, set_states},
    {"vu.shadow_vregs", "registers", true, CHIP_AT(shadow_vregs), true, check_shadow, NULL},
    {"hbm.controller_share", "fraction", false, CHIP_AT(hbm_controller_share), true, NULL, NULL},
    {"ici.controller_share", "fraction", false, CHIP_AT(ici_controller_share), true, NULL, NULL},
    {"ivr.step_mv", "mV", false, CHIP_AT(ivr_step_mv), false, NULL, NULL},
    {"ivr.step_ns", "ns per step", false, CHIP_AT(ivr_step_ns), false, NULL, NULL},
    {"ivr.scaling_time_ns", "ns", false, CHIP_AT(ivr_scaling_time_ns), true, check_scaling_time, NULL},
    {"fifo_sync_cycles", "cycles", true, CHIP_AT(fifo_sync_cycles), true, NULL, NULL},
    GATING_ROWS("sa", CONFIG_SA),
    GATING_ROWS("vu", CONFIG_VU),
    GATING_ROWS("sram", CONFIG_SRAM),
    GATING_ROWS("hbm", CONFIG_HBM),
    GATING_ROWS("ici", CONFIG_ICI),
    SLEEP_ROW("w", "W", w),
    SLEEP_ROW("wake_ms", "ms", wake_ms),
    SLEEP_ROW("wake_energy_j", "J", wake_energy_j),
};
enum { NPARAMS = (int)NKEYS(params) };

int config_sweep_param_count(void) { return NPARAMS; }

const char *config_sweep_param_path(int i) { return i >= 0 && i < NPARAMS ? params[i].path : NULL; }

const char *config_sweep_param_unit(int i) { return i >= 0 && i < NPARAMS ? params[i].unit : NULL; }

int config_sweep_param_find(const char *path) {
  for (int i = 0; path && i < NPARAMS; i++)
    if (!strcmp(params[i].path, path)) return i;
  return -1;
}

/* "$.ivr.step_ns", or the range table's "$.gating.*.wake_ns" form for a gating row. */
static void range_path(const sweep_param *p, char *out, size_t cap) {
  if (!strncmp(p->path, "gating.", 7)) snprintf(out, cap, "$.gating.*%s", strchr(p->path + 7, '.'));
  else snprintf(out, cap, "$.%s", p->path);
}

/* Is v a value of parameter i on chip c? *why says what was expected when not. */
static int param_check(const config_chip *c, int i, double v, char *why, size_t cap) {
  const sweep_param *p = &params[i];
  char rp[96];
  range_path(p, rp, sizeof rp);
  enpu_err e = {0};
  int rc = config_range_check("chip", rp, v, &e);
  if (rc < 0) {
    snprintf(why, cap, "%.*s", (int)(cap > 1 ? cap - 1 : 0), e.msg);
    return rc;
  }
  if (p->is_int && v != floor(v)) {
    snprintf(why, cap, "expected an integer, got %.10g", v);
    return ENPU_ERR_INVALID;
  }
  char what[512] = "";
  rc = p->check ? p->check(c, v, what, sizeof what) : ENPU_OK;
  if (rc < 0) snprintf(why, cap, "expected %s, got %.10g", what, v);
  return rc;
}

void config_variant_value_text(int i, double v, char *out, size_t cap) {
  if (i >= 0 && i < NPARAMS && params[i].is_int) snprintf(out, cap, "%d", (int)v);
  else snprintf(out, cap, "%.10g", v);
}

/* One point: values per parameter, NAN where the point keeps the chip's. */
typedef struct {
  double v[NPARAMS];
} sweep_point;

static int point_name(const sweep_point *pt, char *out, size_t cap) {
  size_t n = 0;
  out[0] = '\0';
  for (int i = 0; i < NPARAMS; i++) {
    if (isnan(pt->v[i])) continue;
    char val[48];
    config_variant_value_text(i, pt->v[i], val, sizeof val);
    const int w = snprintf(out + n, cap - n, "%s%s=%s", n ? "," : "", params[i].path, val);
    if (w < 0 || (size_t)w >= cap - n) return ENPU_ERR_RANGE;
    n += (size_t)w;
  }
  return ENPU_OK;
}

static void point_apply(const config_chip *base, const sweep_point *pt, config_variant *out) {
  out->chip = *base;
  out->ops_differ = false;
  for (int i = 0; i < NPARAMS; i++) {
    if (isnan(pt->v[i])) continue;
    const sweep_param *p = &params[i];
    if (p->set) p->set(&out->chip, p, pt->v[i]);
    else if (p->is_int) *(int *)((char *)&out->chip + p->offset) = (int)pt->v[i];
    else *(double *)((char *)&out->chip + p->offset) = pt->v[i];
    out->ops_differ = out->ops_differ || p->ops;
  }
  enpu_hasher h;
  enpu_hasher_init(&h, 0);
  enpu_hasher_str(&h, "enpu-chip-variant");
  enpu_hasher_i64(&h, (int64_t)base->hash);
  enpu_hasher_str(&h, out->name);
  out->chip.hash = enpu_hasher_digest(&h);
}

/* ---------------------------------------------------------------------------------
 * The job's "sweep" section */

/* The known paths, for an unknown one's message. */
static void known_paths(char *out, size_t cap) {
  size_t n = 0;
  out[0] = '\0';
  for (int i = 0; i < NPARAMS && n < cap; i++) {
    const int w = snprintf(out + n, cap - n, "%s%s", i ? ", " : "", params[i].path);
    if (w < 0) break;
    n += (size_t)w;
  }
}

static int param_at(const config_doc *doc, const config_path *kp, const char *key, int *out, enpu_err *err) {
  *out = config_sweep_param_find(key);
  if (*out >= 0) return ENPU_OK;
  char known[2048];
  known_paths(known, sizeof known);
  return config_fail(doc, kp, err, ENPU_ERR_INVALID, "expected a sweepable chip path (%s), got \"%s\"", known, key);
}

static int value_at(const config_doc *doc, const config_path *vp, const json_t *v, const config_chip *chip, int i,
                    double *out, enpu_err *err) {
  char why[1200], got[96];
  if (!json_is_number(v)) {
    config_describe(v, got, sizeof got);
    return config_fail(doc, vp, err, ENPU_ERR_INVALID, "expected a number for %s, got %s", params[i].path, got);
  }
  *out = json_number_value(v);
  const int rc = param_check(chip, i, *out, why, sizeof why);
  return rc < 0 ? config_fail(doc, vp, err, rc, "%s: %s", params[i].path, why) : ENPU_OK;
}

/* Add a point as the job's next variant (named, checked unique, applied). */
static int add_variant(const config_doc *doc, const config_path *where, config_job *job, const sweep_point *pt,
                       enpu_err *err) {
  if (job->variant_count == CONFIG_MAX_VARIANTS)
    return config_fail(doc, where, err, ENPU_ERR_RANGE, "expected at most %d sweep points", CONFIG_MAX_VARIANTS);
  config_variant *v = &job->variants[job->variant_count];
  if (point_name(pt, v->name, sizeof v->name) < 0)
    return config_fail(doc, where, err, ENPU_ERR_RANGE, "expected a point whose name fits %d bytes",
                       CONFIG_NAME_LEN - 1);
  for (int k = 0; k < job->variant_count; k++)
    if (!strcmp(job->variants[k].name, v->name))
      return config_fail(doc, where, err, ENPU_ERR_INVALID, "expected each sweep point once, got %s again",
                         v->name);
  point_apply(&job->chip, pt, v);
  job->variant_count++;
  return ENPU_OK;
}

/* {"points": [{path: value, ...}, ...]}: the listed points. */
static int parse_points(const config_doc *doc, const config_path *sp, const json_t *pts, config_job *job,
                        enpu_err *err) {
  config_path pp = CONFIG_KEY(sp, "points");
  size_t n;
  ENPU_FORWARD(config_array(doc, &pp, pts, &n, err));
  for (size_t e = 0; e < n; e++) {
    config_path ep = CONFIG_INDEX(&pp, e);
    const json_t *o = json_array_get(pts, e);
    if (!json_is_object(o) || json_object_size(o) == 0)
      return config_fail(doc, &ep, err, ENPU_ERR_INVALID, "expected an object of chip path: value");
    sweep_point pt;
    for (int i = 0; i < NPARAMS; i++) pt.v[i] = NAN;
    const char *key;
    const json_t *val;
    json_object_foreach((json_t *)o, key, val) {
      config_path kp = CONFIG_KEY(&ep, key);
      int i;
      ENPU_FORWARD(param_at(doc, &kp, key, &i, err));
      ENPU_FORWARD(value_at(doc, &kp, val, &job->chip, i, &pt.v[i], err));
    }
    ENPU_FORWARD(add_variant(doc, &ep, job, &pt, err));
  }
  return ENPU_OK;
}

/* {path: [values], ...}: the cross product, the first path varying slowest. */
static int parse_grid(const config_doc *doc, const config_path *sp, const json_t *s, config_job *job,
                      enpu_err *err) {
  int idx[MAX_POINT_PARAMS];
  const json_t *lists[MAX_POINT_PARAMS];
  size_t len[MAX_POINT_PARAMS], np = 0;
  const char *key;
  const json_t *val;
  json_object_foreach((json_t *)s, key, val) {
    config_path kp = CONFIG_KEY(sp, key);
    if (np == MAX_POINT_PARAMS)
      return config_fail(doc, &kp, err, ENPU_ERR_RANGE, "expected at most %d swept paths", MAX_POINT_PARAMS);
    ENPU_FORWARD(param_at(doc, &kp, key, &idx[np], err));
    ENPU_FORWARD(config_array(doc, &kp, val, &len[np], err));
    for (size_t e = 0; e < len[np]; e++) {
      config_path ep = CONFIG_INDEX(&kp, e);
      double v;
      ENPU_FORWARD(value_at(doc, &ep, json_array_get(val, e), &job->chip, idx[np], &v, err));
    }
    lists[np++] = val;
  }
  size_t total = 1;
  for (size_t k = 0; k < np; k++) total *= len[k];
  if (total > CONFIG_MAX_VARIANTS)
    return config_fail(doc, sp, err, ENPU_ERR_RANGE,
                       "expected at most %d sweep points, got %zu (the cross product)", CONFIG_MAX_VARIANTS, total);
  for (size_t t = 0; t < total; t++) {
    sweep_point pt;
    for (int i = 0; i < NPARAMS; i++) pt.v[i] = NAN;
    size_t rest = t;
    for (size_t k = np; k-- > 0;) {
      pt.v[idx[k]] = json_number_value(json_array_get(lists[k], rest % len[k]));
      rest /= len[k];
    }
    ENPU_FORWARD(add_variant(doc, sp, job, &pt, err));
  }
  return ENPU_OK;
}

/* Every policy once more per variant, each name within CONFIG_NAME_LEN. */
static int expand_policies(const config_doc *doc, const config_path *sp, config_job *job, enpu_err *err) {
  const int nbase = job->policy_count;
  for (int v = 1; v <= job->variant_count; v++)
    for (int k = 0; k < nbase; k++) {
      config_policy_spec spec = job->policies[k];
      if (!config_policy_has_variants(spec.base)) continue; /* the governors' table: none */
      spec.variant = v;
      char name[CONFIG_NAME_LEN];
      if (config_job_policy_name(job, &spec, name) < 0)
        return config_fail(doc, sp, err, ENPU_ERR_RANGE,
                           "expected policy names within %d bytes: \"%s:%s\" is longer", CONFIG_NAME_LEN - 1, name,
                           job->variants[v - 1].name);
      if (job->policy_count == CONFIG_MAX_POLICIES)
        return config_fail(doc, sp, err, ENPU_ERR_RANGE,
                           "expected at most %d policies x sweep points, got %d policies and %d points",
                           CONFIG_MAX_POLICIES, nbase, job->variant_count);
      job->policies[job->policy_count++] = spec;
    }
  return ENPU_OK;
}

int config_sweep_parse(const config_doc *doc, const config_path *root, config_job *job, enpu_err *err) {
  const json_t *s = json_object_get(doc->root, "sweep");
  if (!s) return ENPU_OK;
  config_path sp = CONFIG_KEY(root, "sweep");
  /* validation re-simulates plans and replays the trace on the job's chip */
  if (job->validation.enabled)
    return config_fail(doc, &sp, err, ENPU_ERR_INVALID,
                       "expected no \"validation\" section beside a sweep (enpu validate checks plans of the "
                       "job's own chip only)");
  if (!json_is_object(s) || json_object_size(s) == 0)
    return config_fail(
        doc, &sp, err, ENPU_ERR_INVALID,
        "expected {\"<chip path>\": [values], ...} or {\"points\": [{\"<chip path>\": value, ...}]}");
  job->variants = enpu_calloc(CONFIG_MAX_VARIANTS, sizeof *job->variants);
  if (!job->variants) return enpu_errorf(err, ENPU_ERR_NOMEM, "out of memory (sweep)");
  const json_t *pts = json_object_get(s, "points");
  if (pts && json_object_size(s) != 1)
    return config_fail(doc, &sp, err, ENPU_ERR_INVALID,
                       "expected either \"points\" alone or chip paths with value lists, not both");
  ENPU_FORWARD(pts ? parse_points(doc, &sp, pts, job, err) : parse_grid(doc, &sp, s, job, err));
  return expand_policies(doc, &sp, job, err);
}

/* ---------------------------------------------------------------------------------
 * Names */

const config_chip *config_job_chip(const config_job *job, int variant) {
  return variant > 0 && variant <= job->variant_count ? &job->variants[variant - 1].chip : &job->chip;
}

int config_policy_point_join(const char *policy, const char *point, char out[CONFIG_NAME_LEN]) {
  const int w = point && *point ? snprintf(out, CONFIG_NAME_LEN, "%s%c%s", policy, CONFIG_VARIANT_SEP, point)
                                : snprintf(out, CONFIG_NAME_LEN, "%s", policy);
  return w >= 0 && w < CONFIG_NAME_LEN ? ENPU_OK : ENPU_ERR_RANGE;
}

int config_policy_point_split(const char *name, char base[CONFIG_NAME_LEN], const char **point) {
  *point = config_variant_of(name);
  const size_t n = *point ? (size_t)(*point - 1 - name) : strlen(name);
  base[0] = '\0';
  if (n >= CONFIG_NAME_LEN) return ENPU_ERR_RANGE;
  memcpy(base, name, n);
  base[n] = '\0';
  return ENPU_OK;
}

int config_job_policy_name(const config_job *job, const config_policy_spec *p, char out[CONFIG_NAME_LEN]) {
  config_policy_spec base = *p;
  base.variant = 0;
  config_policy_spec_name(&base, out);
  if (p->variant <= 0) return ENPU_OK;
  if (p->variant > job->variant_count) return ENPU_ERR_NOT_FOUND;
  char name[CONFIG_NAME_LEN];
  memcpy(name, out, CONFIG_NAME_LEN);
  if (config_policy_point_join(name, job->variants[p->variant - 1].name, out) == ENPU_OK) return ENPU_OK;
  memcpy(out, name, CONFIG_NAME_LEN); /* the policy alone, as before the point */
  return ENPU_ERR_RANGE;
}

int config_job_policy_parse(const config_job *job, const char *name, config_policy_spec *out) {
  char base[CONFIG_NAME_LEN];
  const char *point;
  if (!name || config_policy_point_split(name, base, &point) < 0) return ENPU_ERR_NOT_FOUND;
  ENPU_FORWARD(config_policy_spec_parse(base, out));
  if (!point) return ENPU_OK;
  for (int v = 0; job && v < job->variant_count; v++)
    if (!strcmp(job->variants[v].name, point)) {
      out->variant = v + 1;
      return ENPU_OK;
    }
  return ENPU_ERR_NOT_FOUND;
}

int config_point_parse(const char *point, int *param, double *value, int max, enpu_err *err) {
  char buf[256];
  ENPU_RETURN_IF(!point || strlen(point) >= sizeof buf || !*point, err, ENPU_ERR_INVALID,
                 "expected path=value[,path=value...], got \"%s\"", point ? point : "");
  memcpy(buf, point, strlen(point) + 1);
  enpu_kv kv[NPARAMS];
  const int n = enpu_kv_split(buf, kv, max < NPARAMS ? max : NPARAMS, err);
  ENPU_FORWARD(n);
  for (int k = 0; k < n; k++) {
    param[k] = config_sweep_param_find(kv[k].key);
    if (param[k] < 0) {
      char known[2048];
      known_paths(known, sizeof known);
      return enpu_errorf(err, ENPU_ERR_INVALID, "expected a sweepable chip path (%s), got \"%s\"", known,
                         kv[k].key);
    }
    char *end = NULL;
    value[k] = strtod(kv[k].value, &end);
    ENPU_RETURN_IF(end == kv[k].value || *end || !isfinite(value[k]), err, ENPU_ERR_INVALID,
                   "%s: expected a number, got \"%s\"", kv[k].key, kv[k].value);
    for (int j = 0; j < k; j++)
      ENPU_RETURN_IF(param[j] == param[k], err, ENPU_ERR_INVALID, "%s given twice: it takes one value", kv[k].key);
  }
  return n;
}

int config_variant_canonical(const char *point, char out[CONFIG_NAME_LEN], enpu_err *err) {
  int param[NPARAMS];
  double value[NPARAMS];
  const int n = config_point_parse(point, param, value, NPARAMS, err);
  ENPU_FORWARD(n);
  sweep_point pt;
  for (int i = 0; i < NPARAMS; i++) pt.v[i] = NAN;
  for (int k = 0; k < n; k++) pt.v[param[k]] = value[k];
  ENPU_RETURN_IF(point_name(&pt, out, CONFIG_NAME_LEN) < 0, err, ENPU_ERR_RANGE, "variant \"%s\" is too long",
                 point);
  return ENPU_OK;
}

int config_chip_set(config_chip *chip, const char *assignment, enpu_err *err) {
  char buf[256];
  ENPU_RETURN_IF(!assignment || strlen(assignment) >= sizeof buf || !strchr(assignment, '='), err, ENPU_ERR_INVALID,
                 "expected path=value, got \"%s\"", assignment ? assignment : "");
  memcpy(buf, assignment, strlen(assignment) + 1);
  char *value = strchr(buf, '=');
  *value++ = '\0';
  const int i = config_sweep_param_find(buf);
  if (i < 0) {
    char known[2048];
    known_paths(known, sizeof known);
    return enpu_errorf(err, ENPU_ERR_INVALID, "expected a sweepable chip path (%s), got \"%s\"", known, buf);
  }
  char *end = NULL;
  const double v = strtod(value, &end);
  ENPU_RETURN_IF(end == value || *end || !isfinite(v), err, ENPU_ERR_INVALID, "%s: expected a number, got \"%s\"",
                 buf, value);
  char why[1200];
  const int rc = param_check(chip, i, v, why, sizeof why);
  ENPU_RETURN_IF(rc < 0, err, rc, "%s: %s", buf, why);
  sweep_point pt;
  for (int k = 0; k < NPARAMS; k++) pt.v[k] = NAN;
  pt.v[i] = v;
  config_variant var = {0};
  snprintf(var.name, sizeof var.name, "%s", assignment);
  point_apply(chip, &pt, &var);
  *chip = var.chip;
  return ENPU_OK;
}

const char *config_variant_of(const char *policy_name) {
  const char *sep = policy_name ? strchr(policy_name, CONFIG_VARIANT_SEP) : NULL;
  return sep ? sep + 1 : NULL;
}
