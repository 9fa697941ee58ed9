/* test_config_sweep.c — architecture sweeps (config_sweep.c): a job's "sweep" section
 * becomes named chip variants (cross product or listed points), each policy once more per
 * point with names that round-trip; the table's values land in the variant's chip (the
 * state count at the same peak), op-level reuse only for parameters the op level does not
 * read; bad sections are refused with file:line:column, the JSON path and what was
 * expected (an unknown path lists the known ones). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "config.h"
#include "test_config.h"

/* A job on the shipped model, chip and cluster with `sweep` as its last member (the
 * section's text, or "" for none) and `extra` members before it; loaded into *out. */
static int load_sweep_job(const char *sweep, const char *extra, config_job **out, enpu_err *err, char *path,
                          size_t cap) {
  test_write_llama_job(path, cap, "sw", "\"nodvfs\", \"enpu-all\", \"uniform\"", "%s%s%s", extra,
                       *sweep ? ",\n  \"sweep\": " : "", sweep);
  return config_job_load(path, out, err);
}

static void test_cross_product(void **state) {
  (void)state;
  char path[256], name[CONFIG_NAME_LEN];
  config_job *job = NULL;
  enpu_err err = {0};
  if (load_sweep_job("{ \"vu.shadow_vregs\": [0, 2], \"ivr.step_ns\": [4, 400] }", "", &job, &err, path,
                     sizeof path))
    fail_msg("%s", err.msg);
  assert_int_equal(job->variant_count, 4);
  /* the first path varies slowest; names list the paths in table order */
  assert_string_equal(job->variants[0].name, "vu.shadow_vregs=0,ivr.step_ns=4");
  assert_string_equal(job->variants[3].name, "vu.shadow_vregs=2,ivr.step_ns=400");
  assert_int_equal(job->variants[1].chip.shadow_vregs, 0);
  assert_true(job->variants[1].chip.ivr_step_ns == 400);
  assert_true(job->variants[0].ops_differ); /* the shadow file is read by the op level */
  /* 3 policies, uniform without variants: 3 + 4 x 2 */
  assert_int_equal(job->policy_count, 3 + 4 * 2);
  for (int k = 0; k < job->policy_count; k++) {
    config_policy_spec back;
    assert_int_equal(config_job_policy_name(job, &job->policies[k], name), 0);
    assert_int_equal(config_job_policy_parse(job, name, &back), 0);
    assert_int_equal(config_policy_spec_code(&back), config_policy_spec_code(&job->policies[k]));
    config_policy_spec dec;
    assert_int_equal(config_policy_spec_decode(config_policy_spec_code(&job->policies[k]), &dec), 0);
    assert_int_equal(dec.variant, job->policies[k].variant);
    assert_true(job->policies[k].variant == 0 || job->policies[k].base != CONFIG_POLICY_UNIFORM);
  }
  assert_int_equal(config_job_policy_name(job, &job->policies[3], name), 0);
  assert_string_equal(name, "nodvfs:vu.shadow_vregs=0,ivr.step_ns=4");
  assert_string_equal(config_variant_of(name), "vu.shadow_vregs=0,ivr.step_ns=4");
  assert_null(config_variant_of("enpu-all"));
  /* a name of a point the job does not have, and the job-less parser, refuse */
  config_policy_spec spec;
  assert_true(config_job_policy_parse(job, "enpu-all:ivr.step_ns=5", &spec) < 0);
  assert_true(config_policy_spec_parse(name, &spec) < 0);
  /* each point's chip hash differs from the job chip's and the others' */
  for (int v = 0; v < job->variant_count; v++) {
    assert_true(job->variants[v].chip.hash != job->chip.hash);
    for (int w = 0; w < v; w++) assert_true(job->variants[v].chip.hash != job->variants[w].chip.hash);
  }
  assert_ptr_equal(config_job_chip(job, 0), &job->chip);
  assert_ptr_equal(config_job_chip(job, 2), &job->variants[1].chip);
  config_job_free(job);
  unlink(path);
}

static void test_listed_points(void **state) {
  (void)state;
  char path[256];
  config_job *job = NULL;
  enpu_err err = {0};
  if (load_sweep_job(
          "{ \"points\": [ { \"clock.states\": 4 }, { \"ivr.step_ns\": 40, \"gating.hbm.wake_ns\": 70 } ] }", "",
          &job, &err, path, sizeof path))
    fail_msg("%s", err.msg);
  assert_int_equal(job->variant_count, 2);
  const config_chip *c = &job->variants[0].chip;
  /* fewer states at the same peak: 1.7 GHz in 4 steps of 425 MHz */
  assert_int_equal(c->freq_states, 4);
  assert_true(c->freq_step_mhz == 425 && c->max_freq_ghz == job->chip.max_freq_ghz);
  assert_true(job->variants[0].ops_differ);
  /* the transition step and gating are read after the op level: reusable op results */
  assert_false(job->variants[1].ops_differ);
  assert_string_equal(job->variants[1].name, "ivr.step_ns=40,gating.hbm.wake_ns=70");
  assert_true(job->variants[1].chip.gating[CONFIG_HBM].wake_ns == 70);
  /* the job chip is untouched */
  assert_int_equal(job->chip.freq_states, 34);
  config_job_free(job);
  unlink(path);
}

static void test_canonical(void **state) {
  (void)state;
  char out[CONFIG_NAME_LEN];
  enpu_err err = {0};
  assert_int_equal(config_variant_canonical("ivr.step_ns=4e2,vu.shadow_vregs=2", out, &err), 0);
  assert_string_equal(out, "vu.shadow_vregs=2,ivr.step_ns=400");
  assert_true(config_variant_canonical("ivr.stepns=4", out, &err) < 0);
  assert_non_null(strstr(err.msg, "ivr.step_ns")); /* the known paths are listed */
  assert_true(config_variant_canonical("ivr.step_ns", out, &err) < 0);
  assert_true(config_variant_canonical("ivr.step_ns=x", out, &err) < 0);
  /* one table: every path found by name, none twice */
  const int n = config_sweep_param_count();
  assert_true(n >= 8);
  for (int i = 0; i < n; i++) assert_int_equal(config_sweep_param_find(config_sweep_param_path(i)), i);
  assert_null(config_sweep_param_path(n));
}

/* The one parser of "<policy>:<point>" and of a point's path=value pairs: a value that
 * is no number is refused (the sweep report once read it with an unchecked strtod). */
static void test_policy_point(void **state) {
  (void)state;
  char base[CONFIG_NAME_LEN], name[CONFIG_NAME_LEN];
  const char *point = NULL;
  assert_int_equal(config_policy_point_split("pg+enpu-all:ivr.step_ns=40", base, &point), 0);
  assert_string_equal(base, "pg+enpu-all");
  assert_string_equal(point, "ivr.step_ns=40");
  assert_int_equal(config_policy_point_join(base, point, name), 0);
  assert_string_equal(name, "pg+enpu-all:ivr.step_ns=40");
  assert_int_equal(config_policy_point_split("enpu-c", base, &point), 0);
  assert_null(point);
  assert_string_equal(base, "enpu-c");
  char longer[2 * CONFIG_NAME_LEN];
  memset(longer, 'a', sizeof longer - 1);
  longer[sizeof longer - 1] = '\0';
  assert_int_equal(config_policy_point_join("enpu-all", longer, name), ENPU_ERR_RANGE);
  assert_int_equal(config_policy_point_split(longer, base, &point), ENPU_ERR_RANGE);

  int param[4];
  double value[4];
  enpu_err err = {0};
  assert_int_equal(config_point_parse("ivr.step_ns=40,vu.shadow_vregs=2", param, value, 4, &err), 2);
  assert_int_equal(param[0], config_sweep_param_find("ivr.step_ns"));
  assert_true(value[0] == 40 && value[1] == 2);
  assert_int_equal(config_point_parse("ivr.step_ns=4x", param, value, 4, &err), ENPU_ERR_INVALID);
  assert_non_null(strstr(err.msg, "expected a number"));
  assert_int_equal(config_point_parse("ivr.step_ns=4,ivr.step_ns=5", param, value, 4, &err), ENPU_ERR_INVALID);
  assert_true(config_point_parse("ivr.stepns=4", param, value, 4, &err) < 0);
}

/* The line of the first occurrence of `needle` in the file at path (1-based). */
static int line_of(const char *path, const char *needle) {
  FILE *f = fopen(path, "r");
  assert_non_null(f);
  char buf[1024];
  int line = 0, hit = 0;
  while (!hit && fgets(buf, sizeof buf, f)) line++, hit = strstr(buf, needle) != NULL;
  fclose(f);
  return hit ? line : -1;
}

typedef struct {
  const char *sweep, *extra, *at; /* at: text on the line the error names */
  const char *expect;             /* in the message */
} bad_sweep;

static const bad_sweep bad_sweeps[] = {
    {"{ \"ivr.stepns\": [4] }", "", "ivr.stepns", "expected a sweepable chip path (clock.states, vu.shadow_vregs"},
    {"{ \"ivr.step_ns\": [4, -1] }", "", "ivr.step_ns", "$.sweep[\"ivr.step_ns\"][1]"},
    {"{ \"clock.states\": [4.5] }", "", "clock.states", "expected an integer"},
    {"{ \"vu.shadow_vregs\": [33] }", "", "vu.shadow_vregs", "at most the chip's 32 vector registers"},
    {"{ \"ivr.scaling_time_ns\": [7] }", "", "scaling_time_ns", "rows for"},
    {"{ \"points\": [ { \"ivr.step_ns\": 4 }, { \"ivr.step_ns\": 4.0 } ] }", "", "points",
     "expected each sweep point once"},
    {"{ \"points\": [ {} ] }", "", "points", "expected an object of chip path"},
    {"{ \"points\": [ { \"ivr.step_ns\": 4 } ], \"ivr.step_ns\": [4] }", "", "sweep", "not both"},
    {"{ \"ivr.step_ns\": [4] }", ",\n  \"validation\": { \"trace\": \"t.csv\" }", "sweep", "validation"},
    {"[4]", "", "sweep", "expected {\"<chip path>\""},
};

static void test_bad_sweeps(void **state) {
  (void)state;
  for (size_t i = 0; i < sizeof bad_sweeps / sizeof bad_sweeps[0]; i++) {
    const bad_sweep *b = &bad_sweeps[i];
    char path[256], where[320];
    config_job *job = NULL;
    enpu_err err = {0};
    const int rc = load_sweep_job(b->sweep, b->extra, &job, &err, path, sizeof path);
    if (rc == 0) fail_msg("sweep %s loaded", b->sweep);
    assert_null(job);
    snprintf(where, sizeof where, "%s:%d:", path, line_of(path, "\"sweep\""));
    if (!strstr(err.msg, where)) fail_msg("case %zu: '%s' does not name %s", i, err.msg, where);
    if (!strstr(err.msg, b->expect)) fail_msg("case %zu: '%s' does not say '%s'", i, err.msg, b->expect);
    unlink(path);
  }
}

TEST_PART(config_sweep, cmocka_unit_test(test_cross_product), cmocka_unit_test(test_listed_points),
          cmocka_unit_test(test_canonical), cmocka_unit_test(test_policy_point), cmocka_unit_test(test_bad_sweeps));
