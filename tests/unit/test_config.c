/* test_config.c — loading and validation of job, model, chip and cluster files.
 *
 * Bad inputs are derived from a small valid document set (C strings below) written to a
 * fresh mkdtemp directory per case: each case edits one file, loads the job, and checks
 * the error code, the file, the line:column, the JSON path and the expectation in the
 * message. The expected line:column is found independently of the loader: by searching
 * the edited text for a needle that occurs exactly once. Positive tests load the shipped
 * jobs/ files and compare derived parameter counts with the published model sizes.
 * The module's tests are split by topic over test_config.c and test_config_*.c, one program
 * (test_config.h says which file holds what; main here runs them all). */
/* cmocka.h needs these four first */
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
 * The valid document set */

static const char JOB[] =
    "{\n"
    "  \"name\": \"small\",\n"
    "  \"model\": \"models/dense.json\",\n"
    "  \"chip\": \"chips/c.json\",\n"
    "  \"cluster\": \"clusters/dense.json\",\n"
    "  \"store\": \"out/plans.h5\",\n"
    "  \"phases\": {\n"
    "    \"prefill\": { \"batch\": [1, 2, 4, 8], \"seq\": { \"rule\": \"paper\", \"max\": 4096 } "
    "},\n"
    "    \"decode\": { \"batch\": { \"rule\": \"paper\", \"max\": 64 }, \"seq\": [1024, 2048],\n"
    "                \"parallel\": { \"dp\": 1, \"tp\": 4, \"pp\": 1, \"ep\": 1 } }\n"
    "  },\n"
    "  \"slacks\": [0, 0.02, 0.05, 0.1],\n"
    "  \"policies\": [\"nodvfs\", \"dvfs-c\", \"enpu-all\"],\n"
    "  \"moe\": { \"capacity_factor\": \"worst\" }\n"
    "}\n";

static const char JOB_MOE[] = "{\n"
                              "  \"name\": \"small-moe\",\n"
                              "  \"model\": \"models/moe.json\",\n"
                              "  \"chip\": \"chips/c.json\",\n"
                              "  \"cluster\": \"clusters/moe.json\",\n"
                              "  \"store\": \"/abs/plans.h5\",\n"
                              "  \"phases\": { \"prefill\": { \"batch\": [1, 2], \"seq\": [128, 256] } },\n"
                              "  \"slacks\": [0.05],\n"
                              "  \"policies\": [\"enpu-all\"],\n"
                              "  \"moe\": { \"capacity_factor\": 1.25 }\n"
                              "}\n";

static const char MODEL_DENSE[] =
    "{\n"
    "  \"name\": \"dense\",\n"
    "  \"hidden\": 256,\n"
    "  \"layers\": 4,\n"
    "  \"vocab\": 1000,\n"
    "  \"dtype_bytes\": 2,\n"
    "  \"attention\": { \"kind\": \"gqa\", \"heads\": 8, \"kv_heads\": 2, \"head_dim\": 32 },\n"
    "  \"ffn\": { \"intermediate\": 512 }\n"
    "}\n";

static const char MODEL_MOE[] =
    "{\n"
    "  \"name\": \"moe\",\n"
    "  \"hidden\": 256,\n"
    "  \"layers\": 4,\n"
    "  \"vocab\": 1000,\n"
    "  \"dtype_bytes\": 2,\n"
    "  \"attention\": { \"kind\": \"mla\", \"heads\": 8, \"q_lora_rank\": 64, \"kv_lora_rank\": "
    "32,\n"
    "                 \"qk_nope_head_dim\": 16, \"qk_rope_head_dim\": 8, \"v_head_dim\": 16 },\n"
    "  \"ffn\": { \"intermediate\": 512 },\n"
    "  \"moe\": { \"routed_experts\": 8, \"shared_experts\": 1, \"experts_per_token\": 2,\n"
    "           \"expert_intermediate\": 128, \"first_dense_layers\": 1 }\n"
    "}\n";

static const char CHIP[] =
    "{\n"
    "  \"name\": \"mini\",\n"
    "  \"tflops_bf16\": 10,\n"
    "  \"sa\": { \"count\": 2, \"dim\": 16 },\n"
    "  \"vu\": { \"count\": 2, \"sublanes\": 8, \"lanes\": 16, \"vregs\": 32,\n"
    "          \"shadow_vregs\": 4, \"vreg_bytes\": 512 },\n"
    "  \"sram\": { \"bytes\": 1048576, \"ports\": 2, \"port_bytes_per_cycle\": 64 },\n"
    "  \"hbm\": { \"bytes\": 1e9, \"gbps\": 100, \"latency_ns\": 500, \"controller_share\": 0.4 },\n"
    "  \"ici\": { \"topology\": \"torus3d\", \"links\": 2, \"link_gbps\": 10, \"latency_ns\": 1000,\n"
    "           \"controller_share\": 0.4 },\n"
    "  \"dcn\": { \"gbps\": 5 },\n"
    "  \"clock\": { \"step_mhz\": 500, \"states\": 4 },\n"
    "  \"ivr\": { \"vin_v\": 0.75, \"vout_min_v\": 0.45, \"vout_max_v\": 0.7,\n"
    "           \"step_mv\": 54, \"step_ns\": 4, \"scaling_time_ns\": 20 },\n"
    "  \"fifo_sync_cycles\": 5,\n"
    "  \"other_static_w\": 10,\n"
    "  \"tdp_w\": 100,\n"
    "  \"tables\": { \"sa\": \"c/sa.csv\", \"vu\": \"c/vu.csv\", \"sram\": \"c/sram.csv\",\n"
    "              \"hbm\": \"c/hbm.csv\", \"hbm_io\": \"c/hbm_io.csv\", \"hbm_dram\": \"c/hbm_dram.csv\",\n"
    "              \"ici\": \"c/ici.csv\",\n"
    "              \"ivr_dvfs\": \"c/ivr_dvfs.csv\", \"ivr_fixed\": \"c/ivr_fixed.csv\" }\n"
    "}\n";

/* Peak 2 GHz = states 4 x 500 MHz; HBM peak 100 GB/s; ICI 2 links x 10 GB/s. */
static const char CSV_FREQ[] = "voltage_V,frequency_GHz,static_W,dynamic_W\n"
                               "0.45,0,0.5,0\n"
                               "0.5,1.0,0.5,1.5\n"
                               "0.7,2.0,0.7,3.5\n";
static const char CSV_HBM[] = "voltage_V,bandwidth_GBps,static_W,dynamic_W\n"
                              "0.45,0,2,0\n"
                              "0.7,100,3,4\n";
/* The HBM PHY's parts: I/O 0.7–0.9 V by bandwidth, DRAM core at a fixed 1.2 V (outside the
 * IVR's output band: they are the memory's own supplies). */
static const char CSV_HBM_IO[] = "voltage_V,bandwidth_GBps,static_W,dynamic_W\n"
                                 "0.7,0,0,0\n"
                                 "0.9,100,0,1\n";
static const char CSV_HBM_DRAM[] = "voltage_V,bandwidth_GBps,static_W,dynamic_W\n"
                                   "1.2,0,0.5,0\n"
                                   "1.2,100,0.5,1\n";
static const char CSV_ICI[] = "voltage_V,bandwidth_GBps,static_W,dynamic_W\r\n"
                              "0.45,0,1,0\r\n"
                              "0.7,20,1.5,2\r\n";
static const char CSV_IVR_DVFS[] = "scaling_time_ns,activity_factor,voltage_V,efficiency_pct\n"
                                   "2,0.0,0.45,60\n"
                                   "20,0.0,0.45,70\n"
                                   "20,1.0,0.7,90\n";
static const char CSV_IVR_FIXED[] = "scaling_time_ns,activity_factor,voltage_V,efficiency_pct\n"
                                    "0,0.0,0.7,67\n"
                                    "0,1.0,0.7,90\n";

static const char CLUSTER_DENSE[] =
    "{\n"
    "  \"name\": \"dense-cluster\",\n"
    "  \"model\": \"dense\",\n"
    "  \"prefill\": { \"nodes\": 2, \"chips\": 4, \"parallel\": { \"dp\": 1, \"tp\": 4, \"pp\": 1, "
    "\"ep\": 1 } },\n"
    "  \"decode\": { \"nodes\": 1, \"chips\": 4, \"parallel\": { \"dp\": 2, \"tp\": 2, \"pp\": 1, "
    "\"ep\": 1 } },\n"
    "  \"slo\": [\n"
    "    { \"name\": \"P50\", \"prefill_max_tokens\": 1000, \"decode_max_tokens\": 1100,\n"
    "      \"ttft_ms\": 500, \"tpot_ms\": 50 },\n"
    "    { \"name\": \"P100\", \"prefill_max_tokens\": 8000, \"decode_max_tokens\": 9000,\n"
    "      \"ttft_ms\": 4000, \"tpot_ms\": 100 }\n"
    "  ],\n"
    "  \"batching\": { \"max_batch\": 64, \"max_batch_tokens\": 8192 }\n"
    "}\n";

static const char CLUSTER_MOE[] =
    "{\n"
    "  \"name\": \"moe-cluster\",\n"
    "  \"model\": \"moe\",\n"
    "  \"prefill\": { \"nodes\": 2, \"chips\": 4, \"parallel\": { \"dp\": 1, \"tp\": 2, \"pp\": 1, "
    "\"ep\": 2 } },\n"
    "  \"decode\": { \"nodes\": 1, \"chips\": 4, \"parallel\": { \"dp\": 2, \"tp\": 2, \"pp\": 1, "
    "\"ep\": 1 } },\n"
    "  \"slo\": [ { \"name\": \"P100\", \"prefill_max_tokens\": 8000, \"decode_max_tokens\": "
    "9000,\n"
    "             \"ttft_ms\": 4000, \"tpot_ms\": 100 } ],\n"
    "  \"batching\": { \"max_batch\": 64, \"max_batch_tokens\": 8192 }\n"
    "}\n";

typedef struct {
  const char *file;
  const char *text;
} doc_t;

static const doc_t valid_docs[] = {
    {"job.json", JOB},
    {"moe_job.json", JOB_MOE},
    {"models/dense.json", MODEL_DENSE},
    {"models/moe.json", MODEL_MOE},
    {"chips/c.json", CHIP},
    {"chips/c/sa.csv", CSV_FREQ},
    {"chips/c/vu.csv", CSV_FREQ},
    {"chips/c/sram.csv", CSV_FREQ},
    {"chips/c/hbm.csv", CSV_HBM},
    {"chips/c/hbm_io.csv", CSV_HBM_IO},
    {"chips/c/hbm_dram.csv", CSV_HBM_DRAM},
    {"chips/c/ici.csv", CSV_ICI},
    {"chips/c/ivr_dvfs.csv", CSV_IVR_DVFS},
    {"chips/c/ivr_fixed.csv", CSV_IVR_FIXED},
    {"clusters/dense.json", CLUSTER_DENSE},
    {"clusters/moe.json", CLUSTER_MOE},
};
_Static_assert(sizeof valid_docs / sizeof valid_docs[0] == NDOCS,
               "NDOCS (test_config.h) counts the valid documents");
static const char *const dirs[] = {"models", "chips", "chips/c", "clusters"};
#define NDIRS (sizeof dirs / sizeof dirs[0])

/* ---------------------------------------------------------------------------------
 * Fixture: a temp dir holding the document set, with optional edits to one file. */

static int count_occurrences(const char *hay, const char *needle) {
  int n = 0;
  for (const char *p = strstr(hay, needle); p; p = strstr(p + 1, needle)) n++;
  return n;
}

/* text with `from` (which must occur exactly once) replaced by `to`; heap-allocated. */
static char *replace_once(const char *text, const char *from, const char *to) {
  assert_int_equal(count_occurrences(text, from), 1);
  const char *at = strstr(text, from);
  size_t n = strlen(text) - strlen(from) + strlen(to);
  char *out = malloc(n + 1);
  assert_non_null(out);
  size_t head = (size_t)(at - text);
  memcpy(out, text, head);
  strcpy(out + head, to);
  strcat(out, at + strlen(from));
  return out;
}

static void write_text(const char *path, const char *text) {
  FILE *f = fopen(path, "wb");
  assert_non_null(f);
  assert_int_equal(fwrite(text, 1, strlen(text), f), strlen(text));
  assert_int_equal(fclose(f), 0);
}

static void fixture_path(const fixture *fx, const char *file, char *out, size_t cap) {
  snprintf(out, cap, "%s/%s", fx->dir, file);
}

/* Write the set; `file` (may be NULL) gets up to two edits. */
fixture *fixture_create(const char *file, const char *from, const char *to, const char *from2, const char *to2) {
  fixture *fx = calloc(1, sizeof *fx);
  assert_non_null(fx);
  snprintf(fx->dir, sizeof fx->dir, "/tmp/test_config.XXXXXX");
  assert_non_null(mkdtemp(fx->dir));
  char path[512];
  for (size_t d = 0; d < NDIRS; d++) {
    fixture_path(fx, dirs[d], path, sizeof path);
    assert_int_equal(mkdir(path, 0700), 0);
  }
  bool edited = file == NULL;
  for (size_t i = 0; i < NDOCS; i++) {
    char *text = strdup(valid_docs[i].text);
    assert_non_null(text);
    if (file && strcmp(file, valid_docs[i].file) == 0) {
      char *t1 = replace_once(text, from, to);
      free(text);
      text = t1;
      if (from2) {
        t1 = replace_once(text, from2, to2);
        free(text);
        text = t1;
      }
      edited = true;
    }
    fixture_path(fx, valid_docs[i].file, path, sizeof path);
    write_text(path, text);
    fx->texts[i] = text;
  }
  assert_true(edited);
  return fx;
}

static const char *fixture_text(const fixture *fx, const char *file) {
  for (size_t i = 0; i < NDOCS; i++)
    if (strcmp(valid_docs[i].file, file) == 0) return fx->texts[i];
  fail_msg("no document %s", file);
  return NULL;
}

void fixture_free(fixture *fx) {
  char path[512];
  for (size_t i = 0; i < NDOCS; i++) {
    fixture_path(fx, valid_docs[i].file, path, sizeof path);
    assert_int_equal(unlink(path), 0);
    free(fx->texts[i]);
  }
  for (size_t d = NDIRS; d-- > 0;) {
    fixture_path(fx, dirs[d], path, sizeof path);
    assert_int_equal(rmdir(path), 0);
  }
  assert_int_equal(rmdir(fx->dir), 0);
  free(fx);
}

/* "dir/file:line:column: " of needle[offset] in that file's text, computed by counting
 * newlines and characters (UTF-8 continuation bytes do not start a column, as in jansson). */
static void position_of(const fixture *fx, const char *file, const char *needle, int offset, char *out,
                        size_t cap) {
  const char *text = fixture_text(fx, file);
  assert_int_equal(count_occurrences(text, needle), 1);
  size_t at = (size_t)(strstr(text, needle) - text) + (size_t)offset;
  int line = 1, col = 1;
  for (size_t i = 0; i < at; i++) {
    if (text[i] == '\n') {
      line++;
      col = 1;
    } else if (((unsigned char)text[i] & 0xC0) != 0x80) {
      col++;
    }
  }
  snprintf(out, cap, "%s/%s:%d:%d: ", fx->dir, file, line, col);
}

/* ---------------------------------------------------------------------------------
 * Bad inputs */

void test_bad_input(void **state) {
  const bad_case *c = *state;
  fixture *fx = fixture_create(c->file, c->from, c->to, c->from2, c->to2);
  char job[512], where[600];
  fixture_path(fx, c->load ? c->load : "job.json", job, sizeof job);
  config_job *out = (config_job *)1;
  enpu_err err = {0};
  int rc = config_job_load(job, &out, &err);
  print_message("    %s\n", err.msg);
  assert_int_equal(rc, c->code);
  assert_int_equal(err.code, c->code);
  assert_null(out);
  position_of(fx, c->err_file ? c->err_file : c->file, c->needle, c->offset, where, sizeof where);
  if (c->path) strcat(strcat(where, c->path), ": ");
  if (!strstr(err.msg, where)) fail_msg("expected '%s' in '%s'", where, err.msg);
  if (!strstr(err.msg, c->expect)) fail_msg("expected '%s' in '%s'", c->expect, err.msg);
  if (c->ends) assert_string_equal(err.msg + strlen(err.msg) - strlen(c->expect), c->expect);
  if (c->needle2) {
    position_of(fx, c->err_file ? c->err_file : c->file, c->needle2, c->offset2, where, sizeof where);
    char second[700];
    snprintf(second, sizeof second, "%s%s)", where, c->path2);
    if (!strstr(err.msg, second)) fail_msg("expected '%s' in '%s'", second, err.msg);
  }
  fixture_free(fx);
}

static void test_missing_job_file(void **state) {
  (void)state;
  config_job *out = NULL;
  enpu_err err = {0};
  assert_int_equal(config_job_load("/nonexistent/dir/job.json", &out, &err), ENPU_ERR_IO);
  assert_null(out);
  assert_non_null(strstr(err.msg, "/nonexistent/dir/job.json: cannot open"));
}

static void test_empty_file_is_syntax_error(void **state) {
  (void)state;
  fixture *fx = fixture_create("models/dense.json", MODEL_DENSE, "", NULL, NULL);
  char path[512];
  fixture_path(fx, "models/dense.json", path, sizeof path);
  config_model *m = NULL;
  enpu_err err = {0};
  assert_int_equal(config_model_load(path, &m, &err), ENPU_ERR_PARSE);
  assert_null(m);
  assert_non_null(strstr(err.msg, path));
  assert_non_null(strstr(err.msg, "syntax error"));
  fixture_free(fx);
}

/* ---------------------------------------------------------------------------------
 * Valid inputs */

/* Load job file `name` of the fixture, which must succeed. */
static config_job *load_ok(const fixture *fx, const char *name) {
  char path[512];
  fixture_path(fx, name, path, sizeof path);
  config_job *job = NULL;
  enpu_err err = {0};
  if (config_job_load(path, &job, &err)) fail_msg("%s: %s", name, err.msg);
  return job;
}

/* job.json of a new fixture with `member` (NULL: none) added after its moe section,
 * loaded (which must succeed); *fx is the fixture, for fixture_free. */
static config_job *load_job_with(fixture **fx, const char *member) {
  char to[512];
  snprintf(to, sizeof to, "\"moe\": { \"capacity_factor\": \"worst\" },\n  %s\n", member ? member : "");
  *fx = member ? fixture_create("job.json", "\"moe\": { \"capacity_factor\": \"worst\" }\n", to, NULL, NULL)
               : fixture_create(NULL, NULL, NULL, NULL, NULL);
  return load_ok(*fx, "job.json");
}

static void test_small_job_loads(void **state) {
  (void)state;
  fixture *fx = fixture_create(NULL, NULL, NULL, NULL, NULL);
  char want[600];
  config_job *job = load_ok(fx, "job.json");
  assert_string_equal(job->name, "small");
  snprintf(want, sizeof want, "%s/out/plans.h5", fx->dir);
  assert_string_equal(job->store_path, want);
  snprintf(want, sizeof want, "%s/models/dense.json", fx->dir);
  assert_string_equal(job->model.path, want);
  const config_phase_grid *pre = &job->phase[CONFIG_PREFILL], *dec = &job->phase[CONFIG_DECODE];
  assert_true(pre->enabled && dec->enabled);
  assert_false(pre->batch.rule);
  assert_int_equal(pre->batch.count, 4);
  assert_int_equal(pre->batch.values[3], 8);
  assert_true(pre->seq.rule);
  assert_int_equal(pre->seq.rule_max, 4096);
  assert_true(dec->batch.rule);
  assert_int_equal(dec->batch.rule_max, 64);
  assert_int_equal(dec->seq.values[1], 2048);
  /* prefill inherits the cluster node (1/4/1/1); decode overrides the cluster's 2/2/1/1 */
  assert_int_equal(pre->parallel.tp, 4);
  assert_int_equal(pre->parallel.dp, 1);
  assert_int_equal(dec->parallel.tp, 4);
  assert_int_equal(dec->parallel.dp, 1);
  assert_int_equal(dec->chips, 4);
  assert_int_equal(job->slack_count, 4);
  assert_true(job->slacks[1] == 0.02);
  assert_int_equal(job->policy_count, 3);
  assert_int_equal(job->policies[2].base, CONFIG_POLICY_ENPU_ALL);
  assert_false(job->policies[2].gate);
  assert_int_equal(job->policies[2].shadow_vregs, -1);
  assert_true(job->epoch_ms == 5.0);
  assert_true(job->moe_capacity_factor == 0);
  assert_int_equal(job->cluster.slo_count, 2);
  assert_int_equal(job->cluster.slo[1].decode_max_tokens, 9000);
  /* chip tables as in the file, efficiency converted from percent */
  assert_int_equal(job->chip.vf[CONFIG_SA].count, 3);
  assert_true(job->chip.vf[CONFIG_ICI].points[1].level == 20);
  assert_int_equal(job->chip.ivr_dvfs.count, 3);
  assert_true(fabs(job->chip.ivr_dvfs.points[2].efficiency - 0.9) < 1e-12);
  assert_true(job->chip.max_freq_ghz == 2.0);
  assert_true(config_state_ghz(&job->chip, 1) == 0.5);
  /* GQA KV: 2 (K,V) x 4 layers x 2 kv_heads x 32 head_dim x 2 bytes */
  assert_true(job->model.kv_bytes_per_token == 2.0 * 4 * 2 * 32 * 2);
  assert_true(job->model.params_routed == 0);
  /* raw documents kept verbatim for provenance */
  assert_string_equal(job->job_json, JOB);
  assert_string_equal(job->model_json, MODEL_DENSE);
  assert_string_equal(job->chip_json, CHIP);
  assert_string_equal(job->cluster_json, CLUSTER_DENSE);
  assert_true(job->hash != 0 && job->chip.hash != 0);
  config_job_free(job);
  config_job_free(NULL);
  fixture_free(fx);
}

/* The optional validation section: absent → disabled; present → trace resolved against
 * the job file, sample and seed as given (defaults 24 and 1). */
static void test_validation_section(void **state) {
  (void)state;
  char want[600];
  fixture *fx;
  config_job *job = load_job_with(&fx, NULL);
  assert_false(job->validation.enabled);
  config_job_free(job);
  fixture_free(fx);
  job = load_job_with(&fx, "\"validation\": { \"trace\": \"traces/t.csv\", \"sample\": 16, \"seed\": 7 }");
  assert_true(job->validation.enabled);
  snprintf(want, sizeof want, "%s/traces/t.csv", fx->dir);
  assert_string_equal(job->validation.trace_path, want);
  assert_int_equal(job->validation.sample, 16);
  assert_int_equal(job->validation.seed, 7);
  assert_int_equal(job->budget, CONFIG_BUDGET_STRICT);           /* the default */
  assert_int_equal(job->attention_impl, CONFIG_ATTN_IMPL_FLASH); /* the default */
  config_job_free(job);
  fixture_free(fx);
  job = load_job_with(&fx, "\"budget\": \"paper\"");
  assert_int_equal(job->budget, CONFIG_BUDGET_PAPER);
  assert_string_equal(config_budget_name(job->budget), "paper");
  /* The stored code round-trips; a code no mode has is refused. */
  config_budget back = CONFIG_BUDGET_STRICT;
  assert_int_equal(config_budget_decode(config_budget_code(job->budget), &back), 0);
  assert_int_equal(back, CONFIG_BUDGET_PAPER);
  assert_int_equal(config_budget_decode(CONFIG_NBUDGET, &back), ENPU_ERR_RANGE);
  config_job_free(job);
  fixture_free(fx);
  job = load_job_with(&fx, "\"attention_impl\": \"einsum\"");
  assert_int_equal(job->attention_impl, CONFIG_ATTN_IMPL_EINSUM);
  assert_string_equal(config_attn_impl_name(job->attention_impl), "einsum");
  config_job_free(job);
  fixture_free(fx);
}

/* The unedited document set: the state of the tests that only read it. */
static int plain_setup(void **state) {
  *state = fixture_create(NULL, NULL, NULL, NULL, NULL);
  return 0;
}

static int plain_teardown(void **state) {
  fixture_free(*state);
  return 0;
}

static void test_moe_job_loads(void **state) {
  config_job *job = load_ok(*state, "moe_job.json");
  assert_string_equal(job->store_path, "/abs/plans.h5");
  assert_false(job->phase[CONFIG_DECODE].enabled);
  assert_int_equal(job->phase[CONFIG_PREFILL].parallel.ep, 2);
  assert_true(job->moe_capacity_factor == 1.25);
  const config_model *m = &job->model;
  assert_true(m->moe);
  assert_int_equal(m->attention, CONFIG_ATTN_MLA);
  assert_int_equal(m->kv_heads, m->heads);
  /* MLA caches the latent and the rope key: 4 layers x (32 + 8) x 2 bytes */
  assert_true(m->kv_bytes_per_token == 4.0 * (32 + 8) * 2);
  /* 3 MoE layers x 8 experts x 3 x 256 x 128 */
  assert_true(m->params_routed == 3.0 * 8 * 3 * 256 * 128);
  /* active = total - embedding table - the routed experts a token does not use */
  double unused = 3.0 * (8 - 2) * 3 * 256 * 128;
  assert_true(fabs(m->params_total - 1000.0 * 256 - unused - m->params_active) < 0.5);
  config_job_free(job);
}

/* The three capacity settings and both MoE expert graphs are accepted; offload needs a
 * chip with a host link, whose figures are loaded. */
static void test_capacity_settings(void **state) {
  (void)state;
  static const char *const caps[] = {"enforce", "offload", "ignore"};
  for (int c = 0; c < CONFIG_NCAPACITY; c++) {
    char to[160];
    snprintf(to, sizeof to, "\"moe\": { \"capacity_factor\": 2, \"experts\": \"%s\" },\n  \"capacity\": \"%s\"\n",
             c == 1 ? "active-only" : "all-resident", caps[c]);
    fixture *fx = fixture_create("chips/c.json", "\"dcn\": { \"gbps\": 5 },",
                                 "\"dcn\": { \"gbps\": 5 }, \"host\": { \"gbps\": 32, "
                                 "\"latency_ns\": 400, \"pj_per_byte\": 15.44 },",
                                 NULL, NULL);
    char path[512];
    fixture_path(fx, "job.json", path, sizeof path);
    char *text = replace_once(JOB, "\"moe\": { \"capacity_factor\": \"worst\" }\n", to);
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    assert_int_equal(fputs(text, f) >= 0 && fclose(f) == 0, 1);
    free(text);
    config_job *job = load_ok(fx, "job.json");
    assert_int_equal(job->capacity, (config_capacity)c);
    assert_string_equal(config_capacity_name(job->capacity), caps[c]);
    assert_int_equal(job->moe_experts, c == 1 ? CONFIG_EXPERTS_ACTIVE_ONLY : CONFIG_EXPERTS_ALL_RESIDENT);
    assert_true(job->moe_capacity_factor == 2);
    assert_true(job->chip.host_gbps == 32 && job->chip.host_latency_ns == 400 &&
                job->chip.host_pj_per_byte == 15.44);
    config_job_free(job);
    fixture_free(fx);
  }
}

/* The capacity factor override of a sweep: bounded like the key, recorded in job_json. */
static void test_capacity_factor_override(void **state) {
  config_job *job = load_ok(*state, "moe_job.json");
  enpu_err err = {0};
  const uint64_t h = job->hash;
  assert_int_equal(config_job_set_capacity_factor(job, "3", &err), 0);
  assert_true(job->moe_capacity_factor == 3 && job->hash != h);
  assert_non_null(strstr(job->job_json, "\"capacity_factor\": 3"));
  assert_int_equal(config_job_set_capacity_factor(job, "worst", &err), 0);
  assert_true(job->moe_capacity_factor == 0);
  assert_non_null(strstr(job->job_json, "\"capacity_factor\": \"worst\""));
  assert_int_equal(config_job_set_capacity_factor(job, "0.5", &err), ENPU_ERR_RANGE);
  assert_non_null(strstr(err.msg, "[1, 4]"));
  assert_int_equal(config_job_set_capacity_factor(job, "5", &err), ENPU_ERR_RANGE);
  assert_int_equal(config_job_set_capacity_factor(job, "2x", &err), ENPU_ERR_INVALID);
  assert_true(job->moe_capacity_factor == 0); /* a rejected value changes nothing */
  config_job_free(job);
}

static uint64_t job_hash(const char *path) {
  config_job *job = NULL;
  enpu_err err = {0};
  int rc = config_job_load(path, &job, &err);
  if (rc) fail_msg("%s", err.msg);
  uint64_t h = job->hash;
  config_job_free(job);
  return h;
}

/* The job hash covers the chip's power tables, not just the documents' text. */
static void test_hash_covers_tables(void **state) {
  (void)state;
  fixture *a = fixture_create(NULL, NULL, NULL, NULL, NULL);
  fixture *b = fixture_create("chips/c/ivr_fixed.csv", "0,1.0,0.7,90", "0,1.0,0.7,91", NULL, NULL);
  fixture *c = fixture_create(NULL, NULL, NULL, NULL, NULL);
  char pa[512], pb[512], pc[512];
  fixture_path(a, "job.json", pa, sizeof pa);
  fixture_path(b, "job.json", pb, sizeof pb);
  fixture_path(c, "job.json", pc, sizeof pc);
  assert_true(job_hash(pa) == job_hash(pc));
  assert_true(job_hash(pa) != job_hash(pb));
  fixture_free(a);
  fixture_free(b);
  fixture_free(c);
}

/* The chip's power states are read (config_deep_sleep) but left out of the chip hash (no
 * plan reads them), so a chip file that gains them keeps its stores' provenance; the
 * rest of the file still counts. */
static void test_hash_leaves_power_states(void **state) {
  (void)state;
  const char *from = "  \"tables\": {";
  fixture *a = fixture_create(NULL, NULL, NULL, NULL, NULL);
  fixture *b = fixture_create("chips/c.json", from,
                              "  \"power_states\": { \"deep_sleep\": { \"w\": 9, \"wake_ms\": 2969,\n"
                              "    \"wake_energy_j\": 1.467 } },\n  \"tables\": {",
                              NULL, NULL);
  fixture *c = fixture_create("chips/c.json", from,
                              "  \"power_states\": { \"deep_sleep\": { \"w\": 20, \"wake_ms\": 5, "
                              "\"wake_energy_j\": 0 } },\n  \"tables\": {",
                              "\"tdp_w\": 100", "\"tdp_w\": 101");
  char pa[512], pb[512], pc[512];
  fixture_path(a, "job.json", pa, sizeof pa);
  fixture_path(b, "job.json", pb, sizeof pb);
  fixture_path(c, "job.json", pc, sizeof pc);
  assert_true(job_hash(pa) == job_hash(pb));
  assert_true(job_hash(pa) != job_hash(pc)); /* tdp_w still counts */
  fixture_path(b, "chips/c.json", pb, sizeof pb);
  config_chip *chip = NULL;
  enpu_err err = {0};
  assert_int_equal(config_chip_load(pb, &chip, &err), 0);
  assert_true(chip->has_deep_sleep && chip->deep_sleep.w == 9 && chip->deep_sleep.wake_ms == 2969 &&
              chip->deep_sleep.wake_energy_j == 1.467);
  config_chip_free(chip);
  fixture_free(a);
  fixture_free(b);
  fixture_free(c);
}

/* The acceptance table: the file's rows, or exits at 1/4, 1/2, 3/4 of the layers on the
 * default curve through (1/4, 0.63) and (1, 1). */
static void test_spec_acceptance(void **state) {
  (void)state;
  assert_true(config_spec_default_rate(0.25) == 0.63);
  assert_true(fabs(config_spec_default_rate(0.5) - (0.63 + 0.37 / 3)) < 1e-12);
  assert_true(fabs(config_spec_default_rate(0.125) - 0.315) < 1e-12);
  assert_true(config_spec_default_rate(1) == 1 && config_spec_default_rate(0) == 0);
  fixture *fx = fixture_create(NULL, NULL, NULL, NULL, NULL);
  enpu_err err = {0};
  char path[512];
  snprintf(path, sizeof path, "%s/models/dense.json", fx->dir);
  config_model *m = NULL;
  assert_int_equal(config_model_load(path, &m, &err), 0);
  assert_true(m->spec_default);
  assert_int_equal(m->spec_exit_count, 3); /* 4 layers: exits 1, 2, 3 */
  assert_int_equal(m->spec_exits[0].exit_layers, 1);
  assert_int_equal(m->spec_exits[2].exit_layers, 3);
  assert_true(fabs(m->spec_exits[1].rate - config_spec_default_rate(0.5)) < 1e-15);
  config_model_free(m);
  fixture_free(fx);
}

static void test_names(void **state) {
  (void)state;
  for (int p = 0; p < CONFIG_NPOLICY; p++) {
    config_policy back;
    assert_int_equal(config_policy_parse(config_policy_name((config_policy)p), &back), 0);
    assert_int_equal(back, p);
  }
  config_phase ph;
  assert_int_equal(config_phase_parse("decode", &ph), 0);
  assert_int_equal(ph, CONFIG_DECODE);
  assert_int_equal(config_phase_parse("Decode", &ph), ENPU_ERR_NOT_FOUND);
  config_policy pol;
  assert_int_equal(config_policy_parse("enpu", &pol), ENPU_ERR_NOT_FOUND);
  assert_string_equal(config_policy_name(CONFIG_POLICY_DVFS_C), "dvfs-c");
  assert_string_equal(config_component_name(CONFIG_SRAM), "sram");
  assert_string_equal(config_phase_name(CONFIG_PREFILL), "prefill");
  /* Policy variants: one spelling each, and a code that round-trips. */
  const char *const names[] = {"pg",          "pg+enpu-all", "enpu-all@shadow=0", "pg+dvfs-c-ms@shadow=32",
                               "pg@shadow=2", "enpu-3dom",   "dvfs-c-walk"};
  for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
    config_policy_spec sp, back;
    char again[CONFIG_NAME_LEN];
    assert_int_equal(config_policy_spec_parse(names[i], &sp), 0);
    config_policy_spec_name(&sp, again);
    assert_string_equal(again, names[i]);
    assert_int_equal(config_policy_spec_decode(config_policy_spec_code(&sp), &back), 0);
    assert_true(back.base == sp.base && back.gate == sp.gate && back.shadow_vregs == sp.shadow_vregs);
  }
  config_policy_spec sp;
  assert_int_equal(config_policy_spec_parse("pg+enpu-all@shadow=4", &sp), 0);
  assert_true(sp.base == CONFIG_POLICY_ENPU_ALL && sp.gate && sp.shadow_vregs == 4);
  assert_int_equal(config_policy_spec_parse("pg+ideal", &sp), 0);
  assert_true(config_policy_spec_ungated(&sp).gate == false);
  const char *const bad[] = {
      "pg+nodvfs",           "pg+pg", "enpu-all@shadow=",  "enpu-all@shadow=-1", "enpu-all@shadow=04",
      "enpu-all@shadow=256", "PG",    "enpu-all@shadow=2x"};
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
    assert_int_equal(config_policy_spec_parse(bad[i], &sp), ENPU_ERR_NOT_FOUND);
  assert_int_equal(config_policy_spec_decode(0xFFu, &sp), ENPU_ERR_NOT_FOUND);
  assert_true(config_policy_has_variants(CONFIG_POLICY_ENPU_MS) &&
              !config_policy_has_variants(CONFIG_POLICY_UNIFORM));
}

/* A job loaded through a recording set, packed, unpacked and loaded again from the
 * sealed set alone (a farm worker's load) is the same job; a sealed set never reads the
 * disk, and a cut buffer is an error, never a crash. */
static void test_files_serve_a_load(void **state) {
  (void)state;
  const char *path = ENPU_SOURCE_DIR "/jobs/demo.json";
  config_files *rec = NULL, *got = NULL;
  config_job *a = NULL, *b = NULL;
  enpu_err err = {0};
  assert_int_equal(config_files_create(&rec, &err), 0);
  if (config_job_load_from(rec, path, &a, &err) < 0) fail_msg("%s", err.msg);
  assert_true(config_files_count(rec) >= 5); /* job, model, chip, cluster, power tables */
  config_files_seal(rec);
  char *buf = NULL;
  size_t len = 0;
  assert_int_equal(config_files_pack(rec, &buf, &len, &err), 0);
  assert_int_equal(config_files_unpack(buf, len, &got, &err), 0);
  assert_int_equal(config_files_count(got), config_files_count(rec));
  if (config_job_load_from(got, path, &b, &err) < 0) fail_msg("%s", err.msg);
  assert_true(a->hash == b->hash);
  assert_string_equal(a->model_json, b->model_json);
  config_job *c = (config_job *)1;
  assert_int_equal(config_job_load_from(got, ENPU_SOURCE_DIR "/jobs/llama3-70b.json", &c, &err), ENPU_ERR_IO);
  assert_null(c);
  assert_non_null(strstr(err.msg, "not among the input files"));
  for (size_t cut = 0; cut < len; cut += 1 + cut / 8) {
    config_files *part = (config_files *)1;
    assert_int_equal(config_files_unpack(buf, cut, &part, &err), ENPU_ERR_FORMAT);
    assert_null(part);
  }
  free(buf);
  config_job_free(a);
  config_job_free(b);
  config_files_free(rec);
  config_files_free(got);
  config_files_free(NULL);
}

int main(void) {
  static const struct CMUnitTest fixed[] = {
      cmocka_unit_test(test_missing_job_file),
      cmocka_unit_test(test_empty_file_is_syntax_error),
      cmocka_unit_test(test_small_job_loads),
      cmocka_unit_test_setup_teardown(test_moe_job_loads, plain_setup, plain_teardown),
      cmocka_unit_test(test_capacity_settings),
      cmocka_unit_test_setup_teardown(test_capacity_factor_override, plain_setup, plain_teardown),
      cmocka_unit_test(test_hash_covers_tables),
      cmocka_unit_test(test_names),
      cmocka_unit_test(test_hash_leaves_power_states),
      cmocka_unit_test(test_spec_acceptance),
      cmocka_unit_test(test_validation_section),
      cmocka_unit_test(test_files_serve_a_load),
  };
  const size_t nbad = config_bad_job_ncases + config_bad_docs_ncases;
  struct CMUnitTest *bad = calloc(nbad + 1, sizeof *bad);
  if (!bad) return 1;
  for (size_t i = 0; i < nbad; i++) {
    const bad_case *c = i < config_bad_job_ncases ? &config_bad_job_cases[i]
                                                  : &config_bad_docs_cases[i - config_bad_job_ncases];
    bad[i] = (struct CMUnitTest){.name = c->name, .test_func = test_bad_input, .initial_state = (void *)c};
  }
  const test_part parts[] = {{fixed, sizeof fixed / sizeof fixed[0]},
                             {config_shipped_tests, config_shipped_ntests},
                             {bad, nbad},
                             {config_sweep_tests, config_sweep_ntests}};
  const int failed = test_run_parts("config", parts, 4, NULL, NULL);
  free(bad);
  return failed;
}
