/* test_config_shipped.c — the shipped inputs: every job of jobs/ loads, model sizes
 * match the published ones, shipped chip and clusters, Hugging Face import (the config
 * module's unit tests, one program: test_config.c runs these with its own; test_config.h
 * has what the files share). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <glob.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "config.h"
#include "test_config.h"

/* ---------------------------------------------------------------------------------
 * Shipped inputs (jobs/): every job loads; model sizes match the published ones. */

static void test_shipped_jobs_load(void **state) {
  (void)state;
  glob_t g;
  if (glob(ENPU_SOURCE_DIR "/jobs/*.json", 0, NULL, &g) != 0) {
    print_message("    no shipped jobs under " ENPU_SOURCE_DIR "/jobs: skipped\n");
    skip();
  }
  for (size_t i = 0; i < g.gl_pathc; i++) {
    config_job *job = NULL;
    enpu_err err = {0};
    int rc = config_job_load(g.gl_pathv[i], &job, &err);
    if (rc) fail_msg("%s: %s", g.gl_pathv[i], err.msg);
    assert_true(job->phase[CONFIG_PREFILL].enabled || job->phase[CONFIG_DECODE].enabled);
    config_job_free(job);
  }
  print_message("    %zu shipped jobs loaded\n", g.gl_pathc);
  globfree(&g);
}

static config_model *shipped_model(const char *name) {
  char path[1024];
  snprintf(path, sizeof path, "%s/jobs/models/%s.json", ENPU_SOURCE_DIR, name);
  if (access(path, R_OK) != 0) {
    print_message("    %s missing: skipped\n", path);
    return NULL;
  }
  config_model *m = NULL;
  enpu_err err = {0};
  if (config_model_load(path, &m, &err)) fail_msg("%s", err.msg);
  print_message("    %s: total %.4g, active %.4g, routed %.4g, KV %.0f B/token\n", name, m->params_total,
                m->params_active, m->params_routed, m->kv_bytes_per_token);
  return m;
}

static void assert_within(double x, double ref, double rel) {
  if (fabs(x - ref) > rel * ref) fail_msg("%.6g not within %.2g%% of %.6g", x, rel * 100, ref);
}

static void test_published_model_sizes(void **state) {
  (void)state;
  config_model *l70 = shipped_model("llama3-70b"), *l405 = shipped_model("llama3.1-405b");
  config_model *v2 = shipped_model("deepseek-v2-236b"), *v3 = shipped_model("deepseek-v3-671b");
  if (!l70 || !l405 || !v2 || !v3) {
    config_model_free(l70);
    config_model_free(l405);
    config_model_free(v2);
    config_model_free(v3);
    skip();
  }
  /* Model cards: 70.6 B, 405.8 B (HF safetensors sizes); DeepSeek papers: 236 B / 21 B
   * active, 671 B (without the 14 B MTP module) / 37 B active. */
  assert_within(l70->params_total, 70.6e9, 0.01);
  assert_within(l405->params_total, 405.8e9, 0.01);
  assert_within(v2->params_total, 236e9, 0.01);
  assert_within(v3->params_total, 671e9, 0.01);
  /* "21 B" and "37 B" are given to two digits, so half a unit of the last digit is all
   * the precision they have: ±0.5 B. */
  assert_true(fabs(v2->params_active - 21e9) <= 0.5e9);
  assert_true(fabs(v3->params_active - 37e9) <= 0.5e9);
  /* A dense model's active weights are everything but the embedding table. */
  assert_true(fabs(l70->params_total - l70->params_active - (double)l70->vocab * l70->hidden) < 0.5);
  /* KV bytes per token, bf16: Llama3-70B 2 x 80 layers x 8 x 128 x 2 = 320 KiB;
   * DeepSeek-V3 61 x (512 + 64) x 2 = 70272 B */
  assert_true(l70->kv_bytes_per_token == 327680.0);
  assert_true(v3->kv_bytes_per_token == 70272.0);
  config_model_free(l70);
  config_model_free(l405);
  config_model_free(v2);
  config_model_free(v3);
}

/* An imported Hugging Face config loaded as a model file (config_model_import_hf). */
static config_model *imported_model(const char *name, const config_hf_options *o, char **notes) {
  char path[1024], out[64];
  snprintf(path, sizeof path, "%s/tests/fixtures/hf/%s.json", ENPU_SOURCE_DIR, name);
  char *json = NULL;
  enpu_err err = {0};
  if (config_model_import_hf(path, o, &json, notes, &err)) fail_msg("%s", err.msg);
  snprintf(out, sizeof out, "/tmp/enpu-test-import-%ld.json", (long)getpid());
  FILE *f = fopen(out, "w");
  assert_non_null(f);
  fputs(json, f);
  fclose(f);
  free(json);
  config_model *m = NULL;
  if (config_model_load(out, &m, &err)) fail_msg("%s", err.msg);
  remove(out);
  return m;
}

static void test_hf_import(void **state) {
  (void)state;
  config_model *l70 = shipped_model("llama3-70b");
  if (!l70) skip();
  char *notes = NULL;
  const config_hf_options named = {.name = "llama3-70b"};
  config_model *m = imported_model("llama3-70b", &named, &notes);
  assert_string_equal(m->name, "llama3-70b");
  assert_true(m->params_total == l70->params_total && m->params_active == l70->params_active);
  assert_true(m->kv_bytes_per_token == l70->kv_bytes_per_token && m->spec_default);
  assert_non_null(strstr(notes, "speculative"));
  free(notes);
  config_model_free(m);
  config_model_free(l70);
  /* Llama-3.2-1B ties its embeddings: 1.24 B weights (model card), the table counted once;
   * its head_dim (64) is read, not derived. */
  m = imported_model("llama3.2-1b", NULL, NULL);
  assert_true(m->tie_embeddings);
  assert_int_equal(m->head_dim, 64);
  assert_within(m->params_total, 1.236e9, 0.01);
  assert_true(fabs(m->params_total - m->params_active) < 0.5); /* no separate table */
  config_model_free(m);
  /* The dtype override wins over torch_dtype; the name defaults to the file's stem. */
  const config_hf_options fp8 = {.dtype_bytes = 1};
  m = imported_model("qwen3-235b-a22b", &fp8, NULL);
  assert_int_equal(m->dtype_bytes, 1);
  assert_string_equal(m->name, "qwen3-235b-a22b");
  assert_int_equal(m->routed_experts, 128);
  assert_int_equal(m->experts_per_token, 8);
  config_model_free(m);
}

static void test_shipped_chip(void **state) {
  (void)state;
  const char *path = ENPU_SOURCE_DIR "/jobs/chips/tpuv5p.json";
  if (access(path, R_OK) != 0) {
    print_message("    %s missing: skipped\n", path);
    skip();
  }
  config_chip *chip = NULL;
  enpu_err err = {0};
  if (config_chip_load(path, &chip, &err)) fail_msg("%s", err.msg);
  assert_true(config_state_ghz(chip, 34) == 1.7);
  assert_true(config_state_ghz(chip, 0) == 0.0);
  assert_true(isnan(config_state_ghz(chip, 35)));
  assert_true(chip->max_freq_ghz == 1.7);
  for (int k = 0; k < CONFIG_NCOMP; k++) assert_true(chip->vf[k].count > 1);
  assert_true(chip->ivr_fixed.count > 0);
  config_chip_free(chip);
  config_chip_free(NULL);
}

static void test_shipped_clusters(void **state) {
  (void)state;
  glob_t g;
  if (glob(ENPU_SOURCE_DIR "/jobs/clusters/*.json", 0, NULL, &g) != 0) skip();
  for (size_t i = 0; i < g.gl_pathc; i++) {
    config_cluster *c = NULL;
    enpu_err err = {0};
    if (config_cluster_load(g.gl_pathv[i], &c, &err)) fail_msg("%s", err.msg);
    for (int ph = 0; ph < CONFIG_NPHASE; ph++) {
      const config_parallel *p = &c->node[ph].parallel;
      assert_int_equal(p->dp * p->tp * p->pp * p->ep, c->node[ph].chips);
    }
    /* The replay's sections are spelled out in every shipped cluster. */
    assert_int_equal(c->idle.mode, CONFIG_IDLE_LOWEST_STATE);
    assert_int_equal(c->scheduler.safeguard1_scan, 128);
    assert_int_equal(c->scheduler.safeguard2, CONFIG_SG2_PAPER);
    assert_true(c->dcn_energy_pj_per_byte == 480);
    config_cluster_free(c);
  }
  config_cluster_free(NULL);
  globfree(&g);
}

/* A cluster without the optional sections gets their defaults; a sleep section its
 * three numbers. */
static void test_cluster_defaults(void **state) {
  (void)state;
  fixture *fx = fixture_create(NULL, NULL, NULL, NULL, NULL);
  char path[512];
  snprintf(path, sizeof path, "%s/clusters/dense.json", fx->dir);
  config_cluster *c = NULL;
  enpu_err err = {0};
  if (config_cluster_load(path, &c, &err)) fail_msg("%s", err.msg);
  assert_int_equal(c->idle.mode, CONFIG_IDLE_LOWEST_STATE);
  assert_int_equal(c->scheduler.safeguard1_scan, 128);
  assert_int_equal(c->scheduler.safeguard2, CONFIG_SG2_PAPER);
  assert_true(c->scheduler.safeguard2_window_s == 300 && c->scheduler.safeguard2_miss_fraction == 0.01);
  assert_true(c->dcn_energy_pj_per_byte == 0);
  /* Predictive safeguards by default; windows from the SLO classes' shortest and longest
   * TTFT; β whose Halfin–Whitt wait probability 1 / (1 + β Φ(β) / φ(β)) is the 1 % miss
   * fraction. */
  assert_int_equal(c->scheduler.safeguards, CONFIG_SAFEGUARDS_PREDICTIVE);
  double lo = INFINITY, hi = 0;
  for (int k = 0; k < c->slo_count; k++)
    lo = fmin(lo, c->slo[k].ttft_ms / 1e3), hi = fmax(hi, c->slo[k].ttft_ms / 1e3);
  assert_true(c->scheduler.predictive_window_s == lo && c->scheduler.predictive_hold_s == hi);
  const double b = c->scheduler.predictive_beta;
  const double wait = 1 / (1 + b * 0.5 * (1 + erf(b / sqrt(2))) / (exp(-b * b / 2) / sqrt(2 * acos(-1.0))));
  assert_true(fabs(wait - 0.01) < 1e-9);
  assert_true(b > 2.3 && b < 2.4);
  config_cluster_free(c);
  FILE *f = fopen(path, "w");
  assert_non_null(f);
  fputs(
      "{ \"name\": \"s\", \"model\": \"dense\",\n"
      "  \"prefill\": { \"nodes\": 1, \"chips\": 1, \"parallel\": { \"dp\": 1, \"tp\": 1, \"pp\": 1, \"ep\": 1 } },\n"
      "  \"decode\": { \"nodes\": 1, \"chips\": 1, \"parallel\": { \"dp\": 1, \"tp\": 1, \"pp\": 1, \"ep\": 1 } },\n"
      "  \"slo\": [ { \"name\": \"P100\", \"prefill_max_tokens\": 8, \"decode_max_tokens\": 9, \"ttft_ms\": 1, "
      "\"tpot_ms\": 1 } ],\n"
      "  \"batching\": { \"max_batch\": 1, \"max_batch_tokens\": 8 },\n"
      "  \"idle\": { \"mode\": \"sleep\", \"sleep_w\": 7.5, \"wake_ms\": 20, \"sleep_after_ms\": 1000 },\n"
      "  \"scheduler\": { \"safeguard2\": \"per-phase\", \"safeguard1_scan\": 100, \"safeguards\": \"paper\",\n"
      "                 \"predictive_window_s\": 2, \"predictive_beta\": 1 } }\n",
      f);
  fclose(f);
  if (config_cluster_load(path, &c, &err)) fail_msg("%s", err.msg);
  assert_int_equal(c->idle.mode, CONFIG_IDLE_SLEEP);
  assert_true(c->idle.sleep_w == 7.5 && c->idle.wake_ms == 20 && c->idle.sleep_after_ms == 1000);
  assert_int_equal(c->scheduler.safeguard2, CONFIG_SG2_PER_PHASE);
  assert_int_equal(c->scheduler.safeguard1_scan, 100);
  assert_int_equal(c->scheduler.safeguards, CONFIG_SAFEGUARDS_PAPER);
  assert_true(c->scheduler.predictive_window_s == 2 && c->scheduler.predictive_hold_s == 0.001);
  assert_true(c->scheduler.predictive_beta == 1);
  assert_int_equal(config_safeguards_parse("switching"), CONFIG_SAFEGUARDS_SWITCHING);
  assert_int_equal(config_safeguards_parse("off"), -1);
  assert_string_equal(config_safeguards_name(CONFIG_SAFEGUARDS_PREDICTIVE), "predictive");
  config_cluster_free(c);
  fixture_free(fx);
}

TEST_PART(config_shipped, cmocka_unit_test(test_shipped_jobs_load), cmocka_unit_test(test_published_model_sizes),
          cmocka_unit_test(test_shipped_chip), cmocka_unit_test(test_shipped_clusters),
          cmocka_unit_test(test_cluster_defaults), cmocka_unit_test(test_hf_import));
