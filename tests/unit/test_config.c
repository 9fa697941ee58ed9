/* test_config.c — loading and validation of job, model, chip and cluster files.
 *
 * Bad inputs are derived from a small valid document set (C strings below) written to a
 * fresh mkdtemp directory per case: each case edits one file, loads the job, and checks
 * the error code, the file, the line:column, the JSON path and the expectation in the
 * message. The expected line:column is found independently of the loader: by searching
 * the edited text for a needle that occurs exactly once. Positive tests load the shipped
 * jobs/ files and compare derived parameter counts with the published model sizes. */
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
#define NDOCS (sizeof valid_docs / sizeof valid_docs[0])
static const char *const dirs[] = {"models", "chips", "chips/c", "clusters"};
#define NDIRS (sizeof dirs / sizeof dirs[0])

/* ---------------------------------------------------------------------------------
 * Fixture: a temp dir holding the document set, with optional edits to one file. */

typedef struct {
  char dir[256];
  char *texts[NDOCS]; /* as written */
} fixture;

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
static fixture *fixture_create(const char *file, const char *from, const char *to, const char *from2,
                               const char *to2) {
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

static void fixture_free(fixture *fx) {
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

static const bad_case bad_cases[] = {
    {.name = "syntax error (missing comma)",
     .file = "job.json",
     .from = "\"chips/c.json\",",
     .to = "\"chips/c.json\"",
     .code = ENPU_ERR_PARSE,
     /* jansson reports the end of the token it did not expect */
     .needle = "\"cluster\"",
     .offset = 8,
     .expect = "syntax error: '}' expected near '\"cluster\"'"},
    {.name = "wrong type (store is a number)",
     .file = "job.json",
     .from = "\"out/plans.h5\"",
     .to = "42",
     .code = ENPU_ERR_INVALID,
     .needle = "42",
     .path = "$.store",
     .expect = "expected a non-empty string of at most 1023 bytes, got 42"},
    {.name = "out of range (negative hidden)",
     .file = "models/dense.json",
     .from = "\"hidden\": 256",
     .to = "\"hidden\": -4",
     .code = ENPU_ERR_RANGE,
     .needle = "-4",
     .path = "$.hidden",
     .expect = "expected an integer in [1, 1048576] (model width; 2^20, 64x the largest models), got -4"},
    {.name = "integer expected, real given",
     .file = "models/dense.json",
     .from = "\"layers\": 4",
     .to = "\"layers\": 4.5",
     .code = ENPU_ERR_INVALID,
     .needle = "4.5",
     .path = "$.layers",
     .expect = "expected an integer in [1, 4096] (transformer layers; 30x the deepest models), got 4.5"},
    {.name = "unknown key (typo)",
     .file = "job.json",
     .from = "\"slacks\":",
     .to = "\"slaks\":",
     .code = ENPU_ERR_INVALID,
     .needle = "\"slaks\"",
     .path = "$.slaks",
     .expect = "unknown key 'slaks'; expected one of: name, model, chip, cluster, store, phases, "
               "slacks, policies, budget, moe"},
    {.name = "missing key (tp)",
     .file = "clusters/dense.json",
     .from = "\"dp\": 1, \"tp\": 4, ",
     .to = "\"dp\": 1, ",
     .code = ENPU_ERR_INVALID,
     .needle = "{ \"dp\": 1, \"pp\"",
     .path = "$.prefill.parallel",
     .expect = "missing required key 'tp' (expected an integer in [1, 65536])"},
    {.name = "unsorted batch list",
     .file = "job.json",
     .from = "[1, 2, 4, 8]",
     .to = "[1, 4, 2, 8]",
     .code = ENPU_ERR_RANGE,
     .needle = "2, 8]",
     .path = "$.phases.prefill.batch[2]",
     .expect = "expected a strictly increasing list: more than 4 (",
     .needle2 = "4, 2, 8]",
     .path2 = "$.phases.prefill.batch[1]"},
    {.name = "duplicate batch entry",
     .file = "job.json",
     .from = "[1, 2, 4, 8]",
     .to = "[1, 2, 2, 8]",
     .code = ENPU_ERR_RANGE,
     .needle = "2, 8]",
     .path = "$.phases.prefill.batch[2]",
     .expect = "got 2 (a duplicate)",
     .needle2 = "2, 2, 8]",
     .path2 = "$.phases.prefill.batch[1]"},
    {.name = "unsorted seq list behind an escaped key",
     .file = "job.json",
     .from = "\"phases\": {",
     .to = "\"ph\\u0061ses\": {",
     .from2 = "[1024, 2048]",
     .to2 = "[2048, 1024]",
     .code = ENPU_ERR_RANGE,
     .needle = "1024]",
     .path = "$.phases.decode.seq[1]",
     .expect = "more than 2048 (",
     .needle2 = "2048, 1024]",
     .path2 = "$.phases.decode.seq[0]"},
    {.name = "zero frequency step",
     .file = "chips/c.json",
     .from = "\"step_mhz\": 500",
     .to = "\"step_mhz\": 0",
     .code = ENPU_ERR_RANGE,
     .needle = "0, \"states\"",
     .path = "$.clock.step_mhz",
     .expect = "expected a number in (0, 10000] (frequency step, MHz), got 0"},
    {.name = "slack < 0",
     .file = "job.json",
     .from = "[0, 0.02",
     .to = "[-0.05, 0.02",
     .code = ENPU_ERR_RANGE,
     .needle = "-0.05",
     .path = "$.slacks[0]",
     .expect = "expected a number in [0, 10] (SLO slack as a fraction of the NoDVFS time, 10 = 1000 %), got -0.05",
     .ends = true},
    {.name = "slack > 10",
     .file = "job.json",
     .from = "0.05, 0.1]",
     .to = "0.05, 12]",
     .code = ENPU_ERR_RANGE,
     .needle = "12]",
     .path = "$.slacks[3]",
     .expect = "expected a number in [0, 10] (SLO slack as a fraction of the NoDVFS time, 10 = 1000 %), got 12"},
    {.name = "unsorted slacks",
     .file = "job.json",
     .from = "[0, 0.02, 0.05",
     .to = "[0, 0.05, 0.02",
     .code = ENPU_ERR_RANGE,
     .needle = "0.02, 0.1]",
     .path = "$.slacks[2]",
     .expect = "more than 0.05 (",
     .needle2 = "0.05, 0.02",
     .path2 = "$.slacks[1]"},
    {.name = "TP not dividing heads (set by the cluster)",
     .file = "models/dense.json",
     .from = "\"heads\": 8, \"kv_heads\": 2",
     .to = "\"heads\": 10, \"kv_heads\": 2",
     .code = ENPU_ERR_RANGE,
     .err_file = "clusters/dense.json",
     .needle = "\"tp\": 4",
     .offset = 6,
     .path = "$.prefill.parallel.tp",
     .expect = "expected a divisor of the model's attention heads (10"},
    {.name = "TP not dividing the FFN (set by the job)",
     .file = "models/dense.json",
     .from = "\"intermediate\": 512",
     .to = "\"intermediate\": 514",
     .code = ENPU_ERR_RANGE,
     .err_file = "clusters/dense.json",
     .needle = "\"tp\": 4",
     .offset = 6,
     .path = "$.prefill.parallel.tp",
     .expect = "FFN intermediate size (514"},
    {.name = "EP not dividing routed experts",
     .load = "moe_job.json",
     .file = "models/moe.json",
     .from = "\"routed_experts\": 8",
     .to = "\"routed_experts\": 7",
     .code = ENPU_ERR_RANGE,
     .err_file = "clusters/moe.json",
     .needle = "\"ep\": 2",
     .offset = 6,
     .path = "$.prefill.parallel.ep",
     .expect = "expected a divisor of the model's routed experts (7"},
    {.name = "chips != dp*tp*pp*ep",
     .file = "clusters/dense.json",
     .from = "\"nodes\": 2, \"chips\": 4",
     .to = "\"nodes\": 2, \"chips\": 8",
     .code = ENPU_ERR_RANGE,
     .needle = "{ \"dp\": 1, \"tp\": 4",
     .path = "$.prefill.parallel",
     .expect = "expected dp*tp*pp*ep to equal the node's chips (8), got 1*4*1*1 = 4"},
    {.name = "phase override not multiplying to the node's chips",
     .file = "job.json",
     .from = "{ \"dp\": 1, \"tp\": 4",
     .to = "{ \"dp\": 2, \"tp\": 4",
     .code = ENPU_ERR_RANGE,
     .needle = "{ \"dp\": 2",
     .path = "$.phases.decode.parallel",
     .expect = "expected dp*tp*pp*ep to equal the node's chips (4), got 2*4*1*1 = 8"},
    {.name = "bad policy name",
     .file = "job.json",
     .from = "\"dvfs-c\"",
     .to = "\"dvfs-x\"",
     .code = ENPU_ERR_INVALID,
     .needle = "\"dvfs-x\"",
     .path = "$.policies[1]",
     .expect = "expected a policy ([pg+]<nodvfs|dvfs-c|enpu-c|enpu-all|ideal|dvfs-c-walk|"
               "dvfs-c-ms|enpu-ms|enpu-3dom|enpu-4dom>[@shadow=N], \"pg\" or \"uniform\"), got "
               "\"dvfs-x\""},
    {.name = "a variant of uniform",
     .file = "job.json",
     .from = "\"nodvfs\", \"dvfs-c\"",
     .to = "\"nodvfs\", \"pg+uniform\"",
     .code = ENPU_ERR_INVALID,
     .needle = "\"pg+uniform\"",
     .path = "$.policies[1]",
     .expect = "got \"pg+uniform\""},
    {.name = "policy in another spelling",
     .file = "job.json",
     .from = "\"nodvfs\", \"dvfs-c\"",
     .to = "\"nodvfs\", \"pg+nodvfs\"",
     .code = ENPU_ERR_INVALID,
     .needle = "\"pg+nodvfs\"",
     .path = "$.policies[1]",
     .expect = "got \"pg+nodvfs\""},
    {.name = "shadow registers beyond the chip's",
     .file = "job.json",
     .from = "\"nodvfs\", \"dvfs-c\"",
     .to = "\"nodvfs\", \"enpu-all@shadow=33\"",
     .code = ENPU_ERR_RANGE,
     .needle = "\"enpu-all@shadow=33\"",
     .path = "$.policies[1]",
     .expect = "expected a shadow register file of at most the chip's 32 vector registers"},
    {.name = "power gating on a chip without gating",
     .file = "job.json",
     .from = "\"nodvfs\", \"dvfs-c\"",
     .to = "\"nodvfs\", \"pg+enpu-all\"",
     .code = ENPU_ERR_INVALID,
     .needle = "\"pg+enpu-all\"",
     .path = "$.policies[1]",
     .expect = "has no \"gating\" section"},
    {.name = "shadow sweep repeats a size",
     .file = "job.json",
     .from = "\"nodvfs\", \"dvfs-c\", \"enpu-all\"]",
     .to = "\"nodvfs\", \"dvfs-c\", { \"policy\": \"enpu-all\", \"shadow\": [0, 2, 0] }]",
     .code = ENPU_ERR_INVALID,
     .needle = "0] }",
     .path = "$.policies[2].shadow[2]",
     .expect = "got \"enpu-all@shadow=0\" again (first at ",
     .needle2 = "0, 2, 0]",
     .path2 = "$.policies[2].shadow[0]"},
    {.name = "shadow sweep of a named size",
     .file = "job.json",
     .from = "\"enpu-all\"]",
     .to = "{ \"policy\": \"enpu-all@shadow=2\", \"shadow\": [0] }]",
     .code = ENPU_ERR_INVALID,
     .needle = "\"enpu-all@shadow=2\"",
     .path = "$.policies[2].policy",
     .expect = "expected a policy without @shadow="},
    {.name = "zero epoch",
     .file = "job.json",
     .from = "\"moe\": { \"capacity_factor\": \"worst\" }\n",
     .to = "\"moe\": { \"capacity_factor\": \"worst\" },\n  \"epoch_ms\": 0\n",
     .code = ENPU_ERR_RANGE,
     .needle = "0\n",
     .path = "$.epoch_ms",
     .expect = "got 0"},
    {.name = "bad budget mode",
     .file = "job.json",
     .from = "\"moe\": { \"capacity_factor\": \"worst\" }\n",
     .to = "\"moe\": { \"capacity_factor\": \"worst\" },\n  \"budget\": \"lax\"\n",
     .code = ENPU_ERR_INVALID,
     .needle = "\"lax\"",
     .path = "$.budget",
     .expect = "expected one of: strict, paper, got \"lax\""},
    {.name = "bad attention implementation",
     .file = "job.json",
     .from = "\"moe\": { \"capacity_factor\": \"worst\" }\n",
     .to = "\"moe\": { \"capacity_factor\": \"worst\" },\n  \"attention_impl\": \"naive\"\n",
     .code = ENPU_ERR_INVALID,
     .needle = "\"naive\"",
     .path = "$.attention_impl",
     .expect = "expected one of: flash, einsum, got \"naive\""},
    {.name = "duplicate policy",
     .file = "job.json",
     .from = "\"enpu-all\"]",
     .to = "\"nodvfs\"]",
     .code = ENPU_ERR_INVALID,
     .needle = "\"nodvfs\"]",
     .path = "$.policies[2]",
     .expect = "got \"nodvfs\" again (first at ",
     .needle2 = "\"nodvfs\", \"dvfs-c\"",
     .path2 = "$.policies[0]"},
    {.name = "bad CSV number",
     .file = "chips/c/sa.csv",
     .from = "0.5,1.0,0.5,1.5",
     .to = "0.5,1.O,0.5,1.5",
     .code = ENPU_ERR_PARSE,
     .needle = "1.O",
     .expect = "frequency_GHz: expected a finite number, got '1.O'"},
    {.name = "CSV wrong column count",
     .file = "chips/c/hbm.csv",
     .from = "0.7,100,3,4",
     .to = "0.7,100,3",
     .code = ENPU_ERR_PARSE,
     .needle = "0.7,100,3",
     .offset = 9,
     .expect = "expected 4 columns, got 3"},
    {.name = "non-monotone CSV level",
     .file = "chips/c/sram.csv",
     .from = "0.7,2.0,0.7,3.5",
     .to = "0.7,0.8,0.7,3.5",
     .code = ENPU_ERR_RANGE,
     .needle = "0.8,0.7",
     .expect = "frequency_GHz: expected levels non-decreasing: at least 1 "
               "(line 3), got 0.8"},
    {.name = "CSV voltage out of band",
     .file = "chips/c/vu.csv",
     .from = "0.7,2.0,0.7,3.5",
     .to = "0.8,2.0,0.7,3.5",
     .code = ENPU_ERR_RANGE,
     .needle = "0.8,2.0",
     .expect = "voltage_V: expected a voltage in [0.45, 0.7]"},
    {.name = "HBM DRAM voltage below zero",
     .file = "chips/c/hbm_dram.csv",
     .from = "1.2,100,0.5,1",
     .to = "-1.2,100,0.5,1",
     .code = ENPU_ERR_RANGE,
     .needle = "-1.2,100",
     .expect = "voltage_V: expected a number in (0, 10] (supply voltage, V), got -1.2"},
    {.name = "controller share above 1",
     .file = "chips/c.json",
     .from = "\"controller_share\": 0.4 },\n  \"ici\"",
     .to = "\"controller_share\": 1.5 },\n  \"ici\"",
     .code = ENPU_ERR_RANGE,
     .needle = "1.5 },",
     .path = "$.hbm.controller_share",
     .expect = "1.5"},
    {.name = "CSV header mismatch",
     .file = "chips/c/ivr_fixed.csv",
     .from = "activity_factor",
     .to = "activity",
     .code = ENPU_ERR_PARSE,
     .needle = "activity,",
     .expect = "expected header column 'activity_factor', got 'activity'"},
    {.name = "table top below the peak",
     .file = "chips/c.json",
     .from = "\"gbps\": 100",
     .to = "\"gbps\": 200",
     .code = ENPU_ERR_RANGE,
     .err_file = "chips/c/hbm.csv",
     .needle = "100,3,4",
     .expect = "expected the top level to cover the chip's peak 200"},
    {.name = "IVR table lacks the scaling time",
     .file = "chips/c.json",
     .from = "\"scaling_time_ns\": 20",
     .to = "\"scaling_time_ns\": 30",
     .code = ENPU_ERR_RANGE,
     .needle = "30 }",
     .path = "$.ivr.scaling_time_ns",
     .expect = "expected a scaling time present in"},
    {.name = "missing CSV table",
     .file = "chips/c.json",
     .from = "\"c/vu.csv\"",
     .to = "\"c/nope.csv\"",
     .code = ENPU_ERR_IO,
     .needle = "\"c/nope.csv\"",
     .path = "$.tables.vu",
     .expect = "c/nope.csv: cannot open"},
    {.name = "unknown attention kind",
     .file = "models/dense.json",
     .from = "\"kind\": \"gqa\"",
     .to = "\"kind\": \"mha\"",
     .code = ENPU_ERR_INVALID,
     .needle = "\"mha\"",
     .path = "$.attention.kind",
     .expect = "expected one of: gqa, mla, got \"mha\""},
    {.name = "MLA field on a GQA model",
     .file = "models/dense.json",
     .from = "\"head_dim\": 32 }",
     .to = "\"head_dim\": 32, \"q_lora_rank\": 64 }",
     .code = ENPU_ERR_INVALID,
     .needle = "\"q_lora_rank\"",
     .path = "$.attention.q_lora_rank",
     .expect = "unknown key 'q_lora_rank'; expected one of: kind, heads, kv_heads, head_dim"},
    {.name = "heads not divisible by kv_heads",
     .file = "models/dense.json",
     .from = "\"kv_heads\": 2",
     .to = "\"kv_heads\": 3",
     .code = ENPU_ERR_RANGE,
     .needle = "3, \"head_dim\"",
     .path = "$.attention.kv_heads",
     .expect = "expected a divisor of heads (8), got 3"},
    {.name = "acceptance rate above 1",
     .file = "models/dense.json",
     .from = "\"ffn\": { \"intermediate\": 512 }",
     .to = "\"ffn\": { \"intermediate\": 512 },\n  \"speculative\": { \"acceptance\": [ { \"exit_layers\": 1, "
           "\"rate\": 0.6 }, { \"exit_layers\": 2, \"rate\": 1.5 } ] }",
     .code = ENPU_ERR_RANGE,
     .needle = "1.5",
     .path = "$.speculative.acceptance[1].rate",
     .expect = "expected a number in [0, 1] (probability that a drafted token is accepted), got 1.5"},
    {.name = "negative acceptance rate",
     .file = "models/dense.json",
     .from = "\"ffn\": { \"intermediate\": 512 }",
     .to = "\"ffn\": { \"intermediate\": 512 },\n  \"speculative\": { \"acceptance\": [ { \"exit_layers\": 2, "
           "\"rate\": -0.1 } ] }",
     .code = ENPU_ERR_RANGE,
     .needle = "-0.1",
     .path = "$.speculative.acceptance[0].rate",
     .expect = "expected a number in [0, 1] (probability that a drafted token is accepted), got -0.1"},
    {.name = "exit depth at the full depth",
     .file = "models/dense.json",
     .from = "\"ffn\": { \"intermediate\": 512 }",
     .to = "\"ffn\": { \"intermediate\": 512 },\n  \"speculative\": { \"acceptance\": [ { \"exit_layers\": 4, "
           "\"rate\": 0.9 } ] }",
     .code = ENPU_ERR_RANGE,
     .needle = "4, \"rate\"",
     .path = "$.speculative.acceptance[0].exit_layers",
     .expect = "expected a depth below layers (4), above the previous row's, got 4"},
    {.name = "dtype_bytes not 1, 2 or 4",
     .file = "models/dense.json",
     .from = "\"dtype_bytes\": 2",
     .to = "\"dtype_bytes\": 3",
     .code = ENPU_ERR_RANGE,
     .needle = "3,",
     .path = "$.dtype_bytes",
     .expect = "expected 1, 2 or 4, got 3"},
    {.name = "bad capacity factor",
     .file = "job.json",
     .from = "\"worst\"",
     .to = "0.5",
     .code = ENPU_ERR_RANGE,
     .needle = "0.5 }",
     .path = "$.moe.capacity_factor",
     .expect = "expected \"worst\" or a number in [1, 1024] (expert capacity factor), got 0.5"},
    {.name = "MoE capacity factor below 1",
     .load = "moe_job.json",
     .file = "moe_job.json",
     .from = "1.25",
     .to = "0.5",
     .code = ENPU_ERR_RANGE,
     .needle = "0.5 }",
     .path = "$.moe.capacity_factor",
     .expect = "expected \"worst\" or a number in [1, 4] (routed_experts / experts_per_token of"},
    {.name = "MoE capacity factor above E/k (every token on one expert)",
     .load = "moe_job.json",
     .file = "moe_job.json",
     .from = "1.25",
     .to = "4.5",
     .code = ENPU_ERR_RANGE,
     .needle = "4.5 }",
     .path = "$.moe.capacity_factor",
     .expect = "models/moe.json), got 4.5",
     .ends = true},
    {.name = "MoE capacity factor not a number",
     .load = "moe_job.json",
     .file = "moe_job.json",
     .from = "1.25",
     .to = "\"high\"",
     .code = ENPU_ERR_INVALID,
     .needle = "\"high\"",
     .path = "$.moe.capacity_factor",
     .expect = "got \"high\"",
     .ends = true},
    {.name = "MoE expert graph unknown",
     .load = "moe_job.json",
     .file = "moe_job.json",
     .from = "\"capacity_factor\": 1.25 }",
     .to = "\"capacity_factor\": 1.25, \"experts\": \"resident\" }",
     .code = ENPU_ERR_INVALID,
     .needle = "\"resident\"",
     .path = "$.moe.experts",
     .expect = "expected one of: all-resident, active-only, got \"resident\""},
    {.name = "capacity policy unknown",
     .file = "job.json",
     .from = "\"moe\": { \"capacity_factor\": \"worst\" }\n",
     .to = "\"moe\": { \"capacity_factor\": \"worst\" },\n  \"capacity\": \"swap\"\n",
     .code = ENPU_ERR_INVALID,
     .needle = "\"swap\"",
     .path = "$.capacity",
     .expect = "expected one of: enforce, offload, ignore, got \"swap\""},
    {.name = "capacity offload on a chip without a host link",
     .file = "job.json",
     .from = "\"moe\": { \"capacity_factor\": \"worst\" }\n",
     .to = "\"moe\": { \"capacity_factor\": \"worst\" },\n  \"capacity\": \"offload\"\n",
     .code = ENPU_ERR_INVALID,
     .needle = "\"offload\"",
     .path = "$.capacity",
     .expect = "expected a chip with a \"host\" link to offload weights over, got "},
    {.name = "expert counts: more experts per token than routed experts",
     .load = "moe_job.json",
     .file = "models/moe.json",
     .from = "\"experts_per_token\": 2",
     .to = "\"experts_per_token\": 9",
     .code = ENPU_ERR_RANGE,
     .needle = "9,",
     .path = "$.moe.experts_per_token",
     .expect = "expected at most routed_experts (8), got 9"},
    {.name = "expert counts: no MoE layer left after the dense ones",
     .load = "moe_job.json",
     .file = "models/moe.json",
     .from = "\"first_dense_layers\": 1",
     .to = "\"first_dense_layers\": 4",
     .code = ENPU_ERR_RANGE,
     .needle = "4 }",
     .path = "$.moe.first_dense_layers",
     .expect = "expected fewer than layers (4) so that some layer is MoE, got 4"},
    {.name = "gate/up fusion not a boolean",
     .file = "models/dense.json",
     .from = "\"intermediate\": 512 }",
     .to = "\"intermediate\": 512, \"fuse_gate_up\": 1 }",
     .code = ENPU_ERR_INVALID,
     .needle = "1 }",
     .path = "$.ffn.fuse_gate_up",
     .expect = "expected true or false, got 1"},
    {.name = "host link with a negative bandwidth",
     .file = "chips/c.json",
     .from = "\"dcn\": { \"gbps\": 5 },",
     .to = "\"dcn\": { \"gbps\": 5 }, \"host\": { \"gbps\": -32, \"latency_ns\": 400, "
           "\"pj_per_byte\": 15 },",
     .code = ENPU_ERR_RANGE,
     .needle = "-32",
     .path = "$.host.gbps",
     .expect = "got -32"},
    {.name = "bucket rule not 'paper'",
     .file = "job.json",
     .from = "\"rule\": \"paper\", \"max\": 4096",
     .to = "\"rule\": \"linear\", \"max\": 4096",
     .code = ENPU_ERR_INVALID,
     .needle = "\"linear\"",
     .path = "$.phases.prefill.seq.rule",
     .expect = "expected one of: paper, got \"linear\""},
    {.name = "bucket rule max 0",
     .file = "job.json",
     .from = "\"max\": 4096",
     .to = "\"max\": 0",
     .code = ENPU_ERR_RANGE,
     .needle = "0 } },",
     .path = "$.phases.prefill.seq.max",
     .expect = "), got 0"},
    {.name = "relative path to a missing model",
     .file = "job.json",
     .from = "\"models/dense.json\"",
     .to = "\"models/nope.json\"",
     .code = ENPU_ERR_IO,
     .needle = "\"models/nope.json\"",
     .path = "$.model",
     .expect = "models/nope.json: cannot open"},
    {.name = "SLO class bounds not increasing",
     .file = "clusters/dense.json",
     .from = "\"prefill_max_tokens\": 8000",
     .to = "\"prefill_max_tokens\": 1000",
     .code = ENPU_ERR_RANGE,
     .needle = "1000, \"decode_max_tokens\": 9000",
     .path = "$.slo[1].prefill_max_tokens",
     .expect = "expected more than the previous class's 1000 (",
     .needle2 = "1000, \"decode_max_tokens\": 1100",
     .path2 = "$.slo[0].prefill_max_tokens"},
    {.name = "zero batch limit after the SLO array",
     .file = "clusters/dense.json",
     .from = "\"max_batch\": 64",
     .to = "\"max_batch\": 0",
     .code = ENPU_ERR_RANGE,
     .needle = "0, \"max_batch_tokens\"",
     .path = "$.batching.max_batch",
     .expect = "), got 0"},
    {.name = "cluster for another model",
     .file = "clusters/dense.json",
     .from = "\"model\": \"dense\"",
     .to = "\"model\": \"other\"",
     .code = ENPU_ERR_INVALID,
     .err_file = "job.json",
     .needle = "\"clusters/dense.json\"",
     .path = "$.cluster",
     .expect = "expected a cluster for model \"dense\""},
    {.name = "expert parallelism on a dense model",
     .file = "job.json",
     .from = "\"tp\": 4, \"pp\": 1, \"ep\": 1",
     .to = "\"tp\": 2, \"pp\": 1, \"ep\": 2",
     .code = ENPU_ERR_RANGE,
     .needle = "2 } }",
     .path = "$.phases.decode.parallel.ep",
     .expect = "expected 1 for a model without experts"},
    {.name = "unknown key after an empty object",
     .file = "job.json",
     .from = "\"phases\": {\n    \"prefill\"",
     .to = "\"phases\": {}, \"x\": {\n    \"prefill\"",
     .from2 = "\"x\": {",
     .to2 = "\"unused\": {",
     .code = ENPU_ERR_INVALID,
     .needle = "\"unused\"",
     .path = "$.unused",
     .expect = "unknown key 'unused'"},
    {.name = "columns count characters, not bytes",
     .file = "job.json",
     .from = "\"out/plans.h5\",",
     .to = "\"out/pl\xc3\xa4ns.h5\", \"x\": 1,",
     .code = ENPU_ERR_INVALID,
     .needle = "\"x\"",
     .path = "$.x",
     .expect = "unknown key 'x'"},
    {.name = "no phase",
     .file = "job.json",
     .from = "    \"prefill\": { \"batch\": [1, 2, 4, 8], \"seq\": { \"rule\": \"paper\", \"max\": "
             "4096 } },\n"
             "    \"decode\": { \"batch\": { \"rule\": \"paper\", \"max\": 64 }, \"seq\": [1024, "
             "2048],\n"
             "                \"parallel\": { \"dp\": 1, \"tp\": 4, \"pp\": 1, \"ep\": 1 } }\n",
     .to = "",
     .code = ENPU_ERR_INVALID,
     .needle = "\"phases\": {",
     .offset = 10,
     .path = "$.phases",
     .expect = "expected at least one of: prefill, decode"},
    {.name = "validation sample below 1",
     .file = "job.json",
     .from = "\"moe\": { \"capacity_factor\": \"worst\" }\n",
     .to = "\"moe\": { \"capacity_factor\": \"worst\" },\n"
           "  \"validation\": { \"trace\": \"t.csv\", \"sample\": 0 }\n",
     .code = ENPU_ERR_RANGE,
     .needle = "0 }",
     .path = "$.validation.sample",
     .expect = "), got 0",
     .ends = true},
    /* Numbers past their physical range (config_ranges.c) and names that would leave the
     * results directory: each used to load and fail much later, or never. */
    {.name = "2^31-1 layers",
     .file = "models/dense.json",
     .from = "\"layers\": 4",
     .to = "\"layers\": 2147483647",
     .code = ENPU_ERR_RANGE,
     .needle = "2147483647",
     .path = "$.layers",
     .expect = "expected an integer in [1, 4096] (transformer layers; 30x the deepest models), got 2147483647"},
    {.name = "head_dim 1e9",
     .file = "models/dense.json",
     .from = "\"head_dim\": 32",
     .to = "\"head_dim\": 1000000000",
     .code = ENPU_ERR_RANGE,
     .needle = "1000000000",
     .path = "$.attention.head_dim",
     .expect = "expected an integer in [1, 4096]"},
    {.name = "1e9 decode nodes",
     .load = "job.json",
     .file = "clusters/dense.json",
     .from = "\"decode\": { \"nodes\": 1,",
     .to = "\"decode\": { \"nodes\": 1e9,",
     .code = ENPU_ERR_INVALID,
     .needle = "1e9",
     .path = "$.decode.nodes",
     .expect = "expected an integer in [1, 65536] (prefill or decode nodes), got 1000000000"},
    {.name = "1e308 W in a power table",
     .file = "chips/c/sa.csv",
     .from = "0.5,1.0,0.5,1.5",
     .to = "0.5,1.0,0.5,1e308",
     .code = ENPU_ERR_RANGE,
     .needle = "1e308",
     .expect = "dynamic_W: expected a number in [0, 100000] (dynamic power, W), got 1e+308"},
    {.name = "more frequency states than a u8 holds",
     .file = "chips/c.json",
     .from = "\"states\": 4",
     .to = "\"states\": 256",
     .code = ENPU_ERR_RANGE,
     .needle = "256",
     .path = "$.clock.states",
     .expect = "expected an integer in [1, 255]"},
    {.name = "job name climbing out of the results directory",
     .file = "job.json",
     .from = "\"name\": \"small\"",
     .to = "\"name\": \"../../../PWNED\"",
     .code = ENPU_ERR_INVALID,
     .needle = "\"../../../PWNED\"",
     .path = "$.name",
     .expect = "expected a plain name"},
    {.name = "job name with a slash",
     .file = "job.json",
     .from = "\"name\": \"small\"",
     .to = "\"name\": \"a/b\"",
     .code = ENPU_ERR_INVALID,
     .needle = "\"a/b\"",
     .path = "$.name",
     .expect = "got \"a/b\""},
    {.name = "idle sleep without a wake-up latency",
     .file = "clusters/dense.json",
     .from = "\"max_batch_tokens\": 8192 }\n",
     .to = "\"max_batch_tokens\": 8192 },\n  \"idle\": { \"mode\": \"sleep\", \"sleep_w\": 5 }\n",
     .code = ENPU_ERR_INVALID,
     .needle = "{ \"mode\": \"sleep\"",
     .path = "$.idle",
     .expect = "missing required key 'wake_ms'"},
    {.name = "sleep power without sleep",
     .file = "clusters/dense.json",
     .from = "\"max_batch_tokens\": 8192 }\n",
     .to = "\"max_batch_tokens\": 8192 },\n  \"idle\": { \"mode\": \"peak\", \"sleep_w\": 5 }\n",
     .code = ENPU_ERR_INVALID,
     .needle = "5 }",
     .path = "$.idle.sleep_w",
     .expect = "expected no sleep_w: only mode \"sleep\" has it"},
    {.name = "unknown safeguard 2 mode",
     .file = "clusters/dense.json",
     .from = "\"max_batch_tokens\": 8192 }\n",
     .to = "\"max_batch_tokens\": 8192 },\n  \"scheduler\": { \"safeguard2\": \"off\" }\n",
     .code = ENPU_ERR_INVALID,
     .needle = "\"off\"",
     .path = "$.scheduler.safeguard2",
     .expect = "expected one of: paper, per-phase, got \"off\""},
    {.name = "unknown safeguards",
     .file = "clusters/dense.json",
     .from = "\"max_batch_tokens\": 8192 }\n",
     .to = "\"max_batch_tokens\": 8192 },\n  \"scheduler\": { \"safeguards\": \"burst\" }\n",
     .code = ENPU_ERR_INVALID,
     .needle = "\"burst\"",
     .path = "$.scheduler.safeguards",
     .expect = "expected one of: paper, switching, predictive, got \"burst\""},
    {.name = "predictive window of no time",
     .file = "clusters/dense.json",
     .from = "\"max_batch_tokens\": 8192 }\n",
     .to = "\"max_batch_tokens\": 8192 },\n  \"scheduler\": { \"predictive_window_s\": 0.0 }\n",
     .code = ENPU_ERR_RANGE,
     .needle = "0.0 }",
     .path = "$.scheduler.predictive_window_s",
     .expect = "expected a number in (0, 3600] (the predictive safeguard's rate window), got 0"},
    {.name = "safeguard 1 scanning nothing",
     .file = "clusters/dense.json",
     .from = "\"max_batch_tokens\": 8192 }\n",
     .to = "\"max_batch_tokens\": 8192 },\n  \"scheduler\": { \"safeguard1_scan\": 0 }\n",
     .code = ENPU_ERR_RANGE,
     .needle = "\"safeguard1_scan\": 0",
     .offset = 19,
     .path = "$.scheduler.safeguard1_scan",
     .expect = "expected an integer in [1, 100000] (waiting requests safeguard 1 checks per queue), got 0"},
    {.name = "negative DCN energy",
     .file = "clusters/dense.json",
     .from = "\"max_batch_tokens\": 8192 }\n",
     .to = "\"max_batch_tokens\": 8192 },\n  \"dcn\": { \"energy_pj_per_byte\": -1 }\n",
     .code = ENPU_ERR_RANGE,
     .needle = "-1 }",
     .path = "$.dcn.energy_pj_per_byte",
     .expect = "expected a number in [0, 1000000] (KV transfer energy per byte, both ends, pJ), got -1"},
};
#define NBAD (sizeof bad_cases / sizeof bad_cases[0])

static void test_bad_input(void **state) {
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

static void test_small_job_loads(void **state) {
  (void)state;
  fixture *fx = fixture_create(NULL, NULL, NULL, NULL, NULL);
  char path[512], want[600];
  fixture_path(fx, "job.json", path, sizeof path);
  config_job *job = NULL;
  enpu_err err = {0};
  int rc = config_job_load(path, &job, &err);
  if (rc) fail_msg("%s", err.msg);
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
  fixture *fx = fixture_create(NULL, NULL, NULL, NULL, NULL);
  char path[512], want[600];
  fixture_path(fx, "job.json", path, sizeof path);
  config_job *job = NULL;
  enpu_err err = {0};
  if (config_job_load(path, &job, &err)) fail_msg("%s", err.msg);
  assert_false(job->validation.enabled);
  config_job_free(job);
  fixture_free(fx);
  fx = fixture_create("job.json", "\"moe\": { \"capacity_factor\": \"worst\" }\n",
                      "\"moe\": { \"capacity_factor\": \"worst\" },\n"
                      "  \"validation\": { \"trace\": \"traces/t.csv\", \"sample\": 16, \"seed\": 7 }\n",
                      NULL, NULL);
  fixture_path(fx, "job.json", path, sizeof path);
  if (config_job_load(path, &job, &err)) fail_msg("%s", err.msg);
  assert_true(job->validation.enabled);
  snprintf(want, sizeof want, "%s/traces/t.csv", fx->dir);
  assert_string_equal(job->validation.trace_path, want);
  assert_int_equal(job->validation.sample, 16);
  assert_int_equal(job->validation.seed, 7);
  assert_int_equal(job->budget, CONFIG_BUDGET_STRICT);           /* the default */
  assert_int_equal(job->attention_impl, CONFIG_ATTN_IMPL_FLASH); /* the default */
  config_job_free(job);
  fixture_free(fx);
  fx = fixture_create("job.json", "\"moe\": { \"capacity_factor\": \"worst\" }\n",
                      "\"moe\": { \"capacity_factor\": \"worst\" },\n  \"budget\": \"paper\"\n", NULL, NULL);
  fixture_path(fx, "job.json", path, sizeof path);
  if (config_job_load(path, &job, &err)) fail_msg("%s", err.msg);
  assert_int_equal(job->budget, CONFIG_BUDGET_PAPER);
  assert_string_equal(config_budget_name(job->budget), "paper");
  config_job_free(job);
  fixture_free(fx);
  fx = fixture_create("job.json", "\"moe\": { \"capacity_factor\": \"worst\" }\n",
                      "\"moe\": { \"capacity_factor\": \"worst\" },\n  \"attention_impl\": \"einsum\"\n", NULL,
                      NULL);
  fixture_path(fx, "job.json", path, sizeof path);
  if (config_job_load(path, &job, &err)) fail_msg("%s", err.msg);
  assert_int_equal(job->attention_impl, CONFIG_ATTN_IMPL_EINSUM);
  assert_string_equal(config_attn_impl_name(job->attention_impl), "einsum");
  config_job_free(job);
  fixture_free(fx);
}

/* Load job file `name` of the fixture, which must succeed. */
static config_job *load_ok(const fixture *fx, const char *name) {
  char path[512];
  fixture_path(fx, name, path, sizeof path);
  config_job *job = NULL;
  enpu_err err = {0};
  if (config_job_load(path, &job, &err)) fail_msg("%s: %s", name, err.msg);
  return job;
}

static void test_moe_job_loads(void **state) {
  (void)state;
  fixture *fx = fixture_create(NULL, NULL, NULL, NULL, NULL);
  config_job *job = load_ok(fx, "moe_job.json");
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
  fixture_free(fx);
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
  (void)state;
  fixture *fx = fixture_create(NULL, NULL, NULL, NULL, NULL);
  config_job *job = load_ok(fx, "moe_job.json");
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
  fixture_free(fx);
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
  assert_true(config_policy_is_epoch(CONFIG_POLICY_ENPU_MS) && !config_policy_is_epoch(CONFIG_POLICY_ENPU_ALL));
}

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
  assert_true(fabs(l70->params_total - l70->params_active - 128256.0 * 8192) < 0.5);
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

int main(void) {
  static const struct CMUnitTest fixed[] = {
      cmocka_unit_test(test_missing_job_file),      cmocka_unit_test(test_empty_file_is_syntax_error),
      cmocka_unit_test(test_small_job_loads),       cmocka_unit_test(test_moe_job_loads),
      cmocka_unit_test(test_capacity_settings),     cmocka_unit_test(test_capacity_factor_override),
      cmocka_unit_test(test_hash_covers_tables),    cmocka_unit_test(test_names),
      cmocka_unit_test(test_spec_acceptance),       cmocka_unit_test(test_shipped_jobs_load),
      cmocka_unit_test(test_published_model_sizes), cmocka_unit_test(test_shipped_chip),
      cmocka_unit_test(test_shipped_clusters),      cmocka_unit_test(test_cluster_defaults),
      cmocka_unit_test(test_validation_section),    cmocka_unit_test(test_hf_import),
  };
  enum { NFIXED = sizeof fixed / sizeof fixed[0] };
  struct CMUnitTest tests[NFIXED + NBAD + 8 + 8];
  memcpy(tests, fixed, sizeof fixed);
  for (size_t i = 0; i < NBAD; i++)
    tests[NFIXED + i] = (struct CMUnitTest){
        .name = bad_cases[i].name, .test_func = test_bad_input, .initial_state = (void *)&bad_cases[i]};
  for (size_t i = 0; i < config_paper_ntests && i < 8; i++) tests[NFIXED + NBAD + i] = config_paper_tests[i];
  const size_t nsweep = config_sweep_ntests < 8 ? config_sweep_ntests : 8;
  for (size_t i = 0; i < nsweep; i++) tests[NFIXED + NBAD + config_paper_ntests + i] = config_sweep_tests[i];
  return _cmocka_run_group_tests("config", tests, NFIXED + NBAD + config_paper_ntests + nsweep, NULL, NULL);
}
