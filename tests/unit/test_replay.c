/* test_replay.c — the cluster replay: trace parsing (bad rows name their line and
 * column, nonsense dates and spans are refused), shaping (rate, day, limits), idle power
 * per policy and mode, the store/cluster check; main. The runs are in
 * test_replay_runs.c, the governors in test_replay_gov.c. With --write-store PATH it only
 * writes the synthetic store. */
#include <unistd.h>

#include "test_replay.h"
#include "test_util.h"

const char *const all_policies[NPOL] = {"dvfs-c", "enpu-all", "nodvfs"};
const char *const store_policies[NPOL + 1] = {"dvfs-c", "enpu-all", "nodvfs", "uniform"};

static int setup(void **state) {
  ctx *c = calloc(1, sizeof *c);
  enpu_err err = {0};
  if (!c) return -1;
  if (store_fixture_dir_make("test_replay", c->dir, c->store) != 0) return -1;
  const int failed = synth_store_write(c->store, store_policies, NPOL + 1, &err) ||
                     planstore_open(c->store, &c->ps, &err) ||
                     config_cluster_load(CLUSTER_PATH, &c->cluster, &err) ||
                     config_model_load(MODEL_PATH, &c->model, &err) ||
                     config_chip_load(CHIP_PATH, &c->chip, &err) ||
                     replay_setup_init(&c->setup, c->cluster, c->model, c->chip, &err) ||
                     replay_trace_load(TRACE_PATH, false, &c->trace, &err);
  return test_setup_done(failed, &err, state, c);
}

static int teardown(void **state) {
  ctx *c = *state;
  planstore_close(c->ps);
  config_cluster_free(c->cluster);
  config_model_free(c->model);
  config_chip_free(c->chip);
  replay_trace_free(c->trace);
  int rc = store_fixture_dir_remove(c->dir);
  free(c);
  return rc;
}

/* ---- shared helpers ----------------------------------------------------------------- */

replay_trace head_of(const replay_trace *t, size_t n) {
  return (replay_trace){
      .requests = t->requests, .count = n < t->count ? n : t->count, .origin_tod_s = t->origin_tod_s};
}

replay_trace *parse_ok(const char *text) {
  replay_trace *t = NULL;
  enpu_err err = {0};
  if (replay_trace_parse(text, strlen(text), "t.csv", false, &t, &err) != 0) fail_msg("parse: %s", err.msg);
  return t;
}

replay_result *run(ctx *c, const char *policy, const replay_trace *t, const replay_setup *s) {
  replay_result *r = NULL;
  enpu_err err = {0};
  if (replay_run(c->ps, policy, t, s, &r, &err) != 0) fail_msg("replay_run %s: %s", policy, err.msg);
  return r;
}

void run_all(ctx *c, const replay_trace *t, const replay_setup *s, int threads, replay_result *runs[NPOL]) {
  enpu_err err = {0};
  if (replay_run_policies(c->ps, all_policies, NPOL, t, s, threads, runs, &err) != 0) fail_msg("%s", err.msg);
}

void free_all(replay_result *runs[NPOL]) {
  for (int k = 0; k < NPOL; k++) replay_result_free(runs[k]);
}

void setup_for(ctx *c, const config_cluster *cl, replay_setup *s) {
  enpu_err err = {0};
  if (replay_setup_init(s, cl, c->model, c->chip, &err) != 0) fail_msg("%s", err.msg);
}

void resized(ctx *c, config_cluster *cl, replay_setup *s, int prefill_nodes, int decode_nodes) {
  *cl = *c->cluster;
  if (prefill_nodes) cl->node[CONFIG_PREFILL].nodes = prefill_nodes;
  if (decode_nodes) cl->node[CONFIG_DECODE].nodes = decode_nodes;
  setup_for(c, cl, s);
}

double prefill_alone_ns(int context_tokens) {
  int seqs[64];
  const int n = synth_seqs(seqs);
  for (int k = 0; k < n; k++)
    if (seqs[k] >= context_tokens) return synth_time_ns(STORE_PHASE_PREFILL, 1, seqs[k]);
  return NAN;
}

/* ---------------------------------------------------------------------------------
 * Trace */

static void test_trace_parse(void **state) {
  ctx *c = *state;
  /* The shipped trace: every row (its README counts 19366), the first one at 0, at
   * 18:15:46.68059 in the day. */
  assert_int_equal(c->trace->count, 19366);
  assert_int_equal(c->trace->skipped, 0);
  assert_int_equal(c->trace->requests[0].context_tokens, 374);
  assert_near(c->trace->requests[0].arrival_ns, 0, 0);
  assert_near(c->trace->origin_tod_s, 18 * 3600 + 15 * 60 + 46.68059, 1e-6);
  replay_trace *t = parse_ok("TIMESTAMP,ContextTokens,GeneratedTokens\r\n"
                             "2023-11-16 18:15:50.5,10,2\r\n"
                             "2023-11-16 18:15:46.6805900,374,44\n"
                             "\n"
                             "2023-11-17 00:00:00+01:00,5,1\n" /* 23:00 UTC the day before */
                             "2023-11-16 18:15:50.5000000,20,3");
  assert_int_equal(t->count, 4);
  /* Sorted by time, stable for equal times, relative to the earliest row. */
  assert_near(t->requests[0].arrival_ns, 0, 1e-3);
  assert_int_equal(t->requests[0].context_tokens, 374);
  assert_near(t->requests[1].arrival_ns, 3.81941e9, 1e3);
  assert_int_equal(t->requests[1].context_tokens, 10);
  assert_int_equal(t->requests[2].context_tokens, 20);
  assert_near(t->requests[3].arrival_ns, (23 * 3600 - (18 * 3600 + 15 * 60 + 46.68059)) * 1e9, 1e3);
  assert_int_equal(t->requests[3].generated_tokens, 1);
  replay_trace_free(t);
  /* Four months, as BurstGPT's two releases concatenated: kept, to a few nanoseconds. */
  t = parse_ok(
      "TIMESTAMP,ContextTokens,GeneratedTokens\n2023-01-01 00:00:00,3,5\n2023-05-02 00:00:00.000000123,3,5\n");
  assert_int_equal(t->count, 2);
  assert_near(t->requests[1].arrival_ns, 121 * 86400e9 + 123, 4);
  replay_trace_free(t);
}

static void expect_parse_error(const char *text, bool skip, int code, const char *want) {
  replay_trace *t = (replay_trace *)&text; /* must be reset to NULL on failure */
  enpu_err err = {0};
  int rc = replay_trace_parse(text, strlen(text), "t.csv", skip, &t, &err);
  if (rc != code || !strstr(err.msg, want)) fail_msg("rc %d, message '%s', want %d '%s'", rc, err.msg, code, want);
  assert_null(t);
}

static void test_trace_bad_rows(void **state) {
  (void)state;
#define H "TIMESTAMP,ContextTokens,GeneratedTokens\n"
  static const struct {
    const char *text, *want;
    int code;
  } cases[] = {
      {"TIMESTAMP,ContextTokens\n", "t.csv:1:1: expected the header", ENPU_ERR_PARSE},
      {H "2023-11-16 18:15:46,1,1\n2023-11-16 18:15:4x,1,1\n", "t.csv:3:1: expected a timestamp", ENPU_ERR_PARSE},
      {H "2023-11-16 18:15:46.1,12,\n", "t.csv:2:26: expected a token count", ENPU_ERR_PARSE},
      {H "2023-11-16 18:15:46,0,5\n", "t.csv:2:21: expected a token count from 1", ENPU_ERR_RANGE},
      {H "2023-11-16 18:15:46,3,3000000\n", "t.csv:2:23: expected a token count from 1 to 2097152", ENPU_ERR_RANGE},
      {H "2023-02-30 18:15:46,3,5\n", "t.csv:2:1: expected a valid date", ENPU_ERR_RANGE},
      {H "2023-11-16 18:15:46,3,5\n9999-12-31 23:59:59,3,5\n", "t.csv:3:1: expected a year from 1970 to 2100",
       ENPU_ERR_RANGE},
      {H "2023-11-16 18:15:46,3,5,7\n", "t.csv:2:24: expected the end of the row", ENPU_ERR_PARSE},
      {H, "no data rows", ENPU_ERR_INVALID},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
    expect_parse_error(cases[i].text, false, cases[i].code, cases[i].want);
  /* Rows within the year range but 410 days apart: the odd row is named, even when bad
   * rows may be skipped (it is a trace, not a row, that is wrong). */
  static const char span[] = H "2023-11-16 18:00:00,3,5\n2023-11-16 18:00:01,3,5\n2024-12-30 18:00:00,3,5\n";
  expect_parse_error(span, true, ENPU_ERR_RANGE,
                     "t.csv:4:1: expected a timestamp within 366 days of the trace's "
                     "median row, got one 410.0 days after it");
  /* Skipping: two bad rows of four (one a year 9999), counted, the first one's message kept. */
  const char *text = H "2023-11-16 18:15:46,3,5\nbad\n9999-11-16 18:15:47,1,5\n2023-11-16 18:15:48,4,6\n";
#undef H
  replay_trace *t = NULL;
  enpu_err err = {0};
  assert_int_equal(replay_trace_parse(text, strlen(text), "t.csv", true, &t, &err), 0);
  assert_int_equal(t->count, 2);
  assert_int_equal(t->skipped, 2);
  assert_non_null(strstr(t->first_skipped, "t.csv:3:1:"));
  replay_trace_free(t);
  /* A missing file names itself. */
  assert_int_equal(replay_trace_load("/nonexistent/trace.csv", false, &t, &err), ENPU_ERR_IO);
  assert_non_null(strstr(err.msg, "/nonexistent/trace.csv"));
}

/* A burst: the requests of its window (or of each period's first seconds) come k times,
 * by the rate rule; the rest are kept as they are; bad bursts are refused. The trace
 * written back as CSV reads back to the same requests from the same origin. */
static void test_trace_burst(void **state) {
  ctx *c = *state;
  const replay_trace *in = c->trace;
  replay_trace *a = NULL, *b = NULL;
  enpu_err err = {0};
  const double start_s = 600, length_s = 120;
  size_t inside = 0;
  for (size_t i = 0; i < in->count; i++) {
    const double t = in->requests[i].arrival_ns / 1e9;
    inside += t >= start_s && t < start_s + length_s;
  }
  assert_true(inside > 10);
  replay_shape sh = {.rate = 1, .warp = 1, .seed = 5, .burst = {.k = 4, .start_s = start_s, .length_s = length_s}};
  assert_int_equal(replay_trace_shape(in, &sh, &a, &err), 0);
  assert_int_equal(a->count, in->count + 3 * inside);
  assert_true(a->origin_s == in->origin_s && a->origin_frac_s == in->origin_frac_s);
  size_t before = 0; /* requests before the window: untouched, one each */
  for (size_t i = 0; i < a->count && a->requests[i].arrival_ns < start_s * 1e9; i++) before++;
  size_t before_in = 0;
  for (size_t i = 0; i < in->count && in->requests[i].arrival_ns < start_s * 1e9; i++) before_in++;
  assert_int_equal(before, before_in);
  assert_memory_equal(a->requests, in->requests, before * sizeof *a->requests);
  /* on/off: 10 s of every 60 at k = 2 */
  sh.burst = (replay_burst){.k = 2, .length_s = 10, .period_s = 60};
  assert_int_equal(replay_trace_shape(in, &sh, &b, &err), 0);
  size_t on = 0;
  for (size_t i = 0; i < in->count; i++) on += fmod(in->requests[i].arrival_ns / 1e9, 60) < 10;
  assert_int_equal(b->count, in->count + on);
  replay_trace_free(b);
  /* written as CSV and read back: the same requests (to the CSV's 100 ns), same origin */
  char *csv = NULL;
  size_t len = 0;
  assert_int_equal(replay_trace_csv(a, &csv, &len, &err), 0);
  assert_int_equal(strlen(csv), len);
  assert_int_equal(replay_trace_parse(csv, len, "burst.csv", false, &b, &err), 0);
  assert_int_equal(b->count, a->count);
  assert_true(b->origin_s == a->origin_s);
  assert_near(b->origin_tod_s, a->origin_tod_s, 1e-6);
  for (size_t i = 0; i < a->count; i++) {
    assert_near(b->requests[i].arrival_ns, a->requests[i].arrival_ns, 200);
    assert_int_equal(b->requests[i].context_tokens, a->requests[i].context_tokens);
  }
  free(csv);
  replay_trace_free(a);
  replay_trace_free(b);
  const replay_burst bad[] = {{.k = 0.5, .length_s = 1},
                              {.k = 2, .length_s = 0},
                              {.k = 2, .start_s = -1, .length_s = 1},
                              {.k = 2, .length_s = 10, .period_s = 5},
                              {.k = NAN, .length_s = 1}};
  for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
    sh.burst = bad[i];
    assert_int_equal(replay_trace_shape(in, &sh, &a, &err), ENPU_ERR_INVALID);
    assert_non_null(strstr(err.msg, "burst"));
    assert_null(a);
  }
}

static void test_trace_shape(void **state) {
  ctx *c = *state;
  replay_trace *a = NULL, *b = NULL, *d = NULL;
  enpu_err err = {0};
  /* Integer rate: exactly that many copies, each within its gap; the origin kept. */
  replay_shape sh = {.rate = 3, .warp = 1, .seed = 7};
  assert_int_equal(replay_trace_shape(c->trace, &sh, &a, &err), 0);
  assert_int_equal(a->count, 3 * c->trace->count);
  assert_true(a->requests[a->count - 1].arrival_ns <= c->trace->requests[c->trace->count - 1].arrival_ns * 1.001);
  assert_near(a->origin_tod_s, c->trace->origin_tod_s, 0);
  replay_trace_free(a);
  /* Fractional rate: about half, deterministic for a seed, different for another. */
  sh.rate = 0.5;
  assert_int_equal(replay_trace_shape(c->trace, &sh, &a, &err), 0);
  assert_int_equal(replay_trace_shape(c->trace, &sh, &b, &err), 0);
  assert_int_equal(a->count, b->count);
  assert_memory_equal(a->requests, b->requests, a->count * sizeof *a->requests);
  assert_in_range(a->count, c->trace->count / 2 - 300, c->trace->count / 2 + 300);
  sh.seed = 8;
  replay_trace_free(b);
  assert_int_equal(replay_trace_shape(c->trace, &sh, &b, &err), 0);
  assert_true(a->count != b->count || memcmp(a->requests, b->requests, a->count * sizeof *a->requests) != 0);
  replay_trace_free(a);
  replay_trace_free(b);
  /* Warp scales times. */
  sh = (replay_shape){.rate = 1, .warp = 0.25, .seed = 1};
  assert_int_equal(replay_trace_shape(c->trace, &sh, &a, &err), 0);
  assert_near(a->requests[a->count - 1].arrival_ns, 0.25 * c->trace->requests[c->trace->count - 1].arrival_ns, 1);
  replay_trace_free(a);
  /* Day: 24 hours from midnight, the peak hour at the trace's rate, 04:00 at 0.3 of it. */
  sh = (replay_shape){.rate = 1, .warp = 1, .day = true, .seed = 3};
  assert_int_equal(replay_trace_shape(c->trace, &sh, &d, &err), 0);
  assert_near(d->origin_tod_s, 0, 0);
  size_t per_hour[24] = {0};
  for (size_t i = 0; i < d->count; i++) {
    double h = d->requests[i].arrival_ns / 3600e9;
    assert_true(h >= 0 && h < 24);
    per_hour[(int)h]++;
  }
  const double trace_rate_per_h = (double)c->trace->count * 3600e9 /
                                  (c->trace->requests[c->trace->count - 1].arrival_ns *
                                   (1 + 1.0 / (c->trace->count - 1)));
  assert_in_range(per_hour[16], (size_t)(0.9 * trace_rate_per_h), (size_t)(1.1 * trace_rate_per_h));
  const double at4 = (replay_diurnal_factor(4) + replay_diurnal_factor(5)) / 2; /* mean over 04:00-05:00 */
  assert_in_range(per_hour[4], (size_t)(0.85 * at4 * trace_rate_per_h), (size_t)(1.15 * at4 * trace_rate_per_h));
  replay_trace_free(d);
  /* Bad shapes; a rate that would make billions of requests is refused before any
   * allocation. */
  sh = (replay_shape){.rate = -1, .warp = 1};
  assert_int_equal(replay_trace_shape(c->trace, &sh, &a, &err), ENPU_ERR_INVALID);
  sh = (replay_shape){.rate = 1, .warp = 0};
  assert_int_equal(replay_trace_shape(c->trace, &sh, &a, &err), ENPU_ERR_INVALID);
  sh = (replay_shape){.rate = 1e9, .warp = 1};
  assert_int_equal(replay_trace_shape(c->trace, &sh, &a, &err), ENPU_ERR_RANGE);
  assert_non_null(strstr(err.msg, "more than the 30000000"));
  assert_null(a);
}

static void test_diurnal(void **state) {
  (void)state;
  assert_near(replay_diurnal_factor(14), 1, 0);
  assert_near(replay_diurnal_factor(17.5), 1, 0);
  assert_near(replay_diurnal_factor(20), 1, 0);
  assert_near(replay_diurnal_factor(4), 0.3, 1e-12);
  assert_near(replay_diurnal_factor(9), 0.65, 1e-12);
  assert_near(replay_diurnal_factor(0), 1 - 0.7 * 4 / 8, 1e-12);
  assert_true(replay_diurnal_factor(23.99) < replay_diurnal_factor(21));
  /* Peak hours: [14:00, 20:00), any day. */
  assert_false(replay_is_peak(14 * 3600 - 1));
  assert_true(replay_is_peak(14 * 3600));
  assert_true(replay_is_peak(19 * 3600 + 3599));
  assert_false(replay_is_peak(20 * 3600));
  assert_true(replay_is_peak(86400 + 15 * 3600));
}

/* ---------------------------------------------------------------------------------
 * Set-up */

static void test_idle_power(void **state) {
  ctx *c = *state;
  double w[CONFIG_NPOLICY], peak[CONFIG_NPOLICY];
  enpu_err err = {0};
  for (int p = 0; p < CONFIG_NPOLICY; p++) {
    assert_int_equal(replay_idle_power_w(c->chip, (config_policy)p, CONFIG_IDLE_LOWEST_STATE, &w[p], &err), 0);
    assert_int_equal(replay_idle_power_w(c->chip, (config_policy)p, CONFIG_IDLE_PEAK, &peak[p], &err), 0);
    assert_true(w[p] > c->chip->other_static_w && w[p] < 0.5 * c->chip->tdp_w);
    assert_near(peak[p], peak[CONFIG_POLICY_NODVFS], 0); /* peak: the same for every policy */
    assert_near(c->setup.idle_w_per_chip[p], w[p], 0);   /* the shipped cluster: lowest-state */
  }
  /* NoDVFS cannot park anything; the more a policy scales, the less its idle chip draws. */
  assert_near(w[CONFIG_POLICY_NODVFS], peak[CONFIG_POLICY_NODVFS], 0);
  assert_true(w[CONFIG_POLICY_DVFS_C] < w[CONFIG_POLICY_NODVFS]);
  assert_near(w[CONFIG_POLICY_DVFS_C_WALK], w[CONFIG_POLICY_DVFS_C], 0);
  assert_true(w[CONFIG_POLICY_ENPU_C] < w[CONFIG_POLICY_DVFS_C]);
  /* The HBM I/O link has no static power in the chip's data (jobs/chips/tpuv5p/README.md):
   * parking it as well saves nothing on an idle chip. */
  assert_true(w[CONFIG_POLICY_ENPU_ALL] <= w[CONFIG_POLICY_ENPU_C]);
  assert_near(w[CONFIG_POLICY_IDEAL], w[CONFIG_POLICY_ENPU_ALL], 0);
  assert_int_equal(replay_idle_power_w(c->chip, CONFIG_NPOLICY, CONFIG_IDLE_PEAK, &w[0], &err), ENPU_ERR_INVALID);
  /* A cluster for another model is refused. */
  config_cluster other = *c->cluster;
  snprintf(other.model_name, sizeof other.model_name, "llama3.1-405b");
  replay_setup s;
  assert_int_equal(replay_setup_init(&s, &other, c->model, c->chip, &err), ENPU_ERR_INVALID);
  assert_non_null(strstr(err.msg, "llama3.1-405b"));
}

/* A store whose provenance names a model, a chip and 4-chip TP4 nodes. */
static void write_prov_store(ctx *c, const char *path, uint64_t model_hash) {
  static const char cluster_json[] =
      "{\"prefill\": {\"chips\": 4, \"parallel\": {\"dp\": 1, \"tp\": 4, \"pp\": 1, \"ep\": 1}},"
      " \"decode\": {\"chips\": 4, \"parallel\": {\"dp\": 1, \"tp\": 4, \"pp\": 1, \"ep\": 1}}}";
  const store_provenance prov = {.tool_version = "synthetic",
                                 .job_json = "{\"name\": \"x\", \"phases\": {}}",
                                 .model_json = "{\"name\": \"llama3-70b\"}",
                                 .chip_json = "{\"name\": \"tpuv5p\"}",
                                 .cluster_json = cluster_json,
                                 .model_hash = model_hash,
                                 .chip_hash = c->chip->hash};
  enpu_err err = {0};
  if (synth_store_write_prov(path, &prov, all_policies, 1, &err) != 0) fail_msg("%s", err.msg);
}

static void test_check_store(void **state) {
  ctx *c = *state;
  char path[STORE_FIXTURE_PATH_LEN + 16], warning[ENPU_ERR_MSG_LEN];
  snprintf(path, sizeof path, "%s/prov.h5", c->dir);
  enpu_err err = {0};
  /* Hand-made (no documents): passes. Matching documents and hashes: passes quietly. */
  assert_int_equal(replay_check_store(c->store, c->cluster, c->model, c->chip, warning, sizeof warning, &err), 0);
  write_prov_store(c, path, c->model->hash);
  assert_int_equal(replay_check_store(path, c->cluster, c->model, c->chip, warning, sizeof warning, &err), 0);
  assert_string_equal(warning, "");
  /* Another model's cluster. */
  config_cluster other = *c->cluster;
  snprintf(other.model_name, sizeof other.model_name, "deepseek-v3-671b");
  assert_int_equal(replay_check_store(path, &other, c->model, c->chip, NULL, 0, &err), ENPU_ERR_INVALID);
  assert_non_null(strstr(err.msg, "compiled for model 'llama3-70b', but cluster"));
  assert_non_null(strstr(err.msg, "'deepseek-v3-671b'"));
  /* Nodes of another parallelism. */
  other = *c->cluster;
  other.node[CONFIG_DECODE].chips = 8;
  other.node[CONFIG_DECODE].parallel.tp = 8;
  assert_int_equal(replay_check_store(path, &other, c->model, c->chip, NULL, 0, &err), ENPU_ERR_INVALID);
  assert_non_null(strstr(err.msg, "compiled for decode nodes of 4 chips (dp 1, tp 4, pp 1, ep 1)"));
  /* The same model name from another version of its file: a warning, not an error. */
  write_prov_store(c, path, c->model->hash + 1);
  assert_int_equal(replay_check_store(path, c->cluster, c->model, c->chip, warning, sizeof warning, &err), 0);
  assert_non_null(strstr(warning, "another version of the model file"));
  /* Not a store. */
  assert_int_equal(replay_check_store(CLUSTER_PATH, c->cluster, c->model, c->chip, NULL, 0, &err), ENPU_ERR_FORMAT);
}

int main(int argc, char **argv) {
  if (argc == 3 && !strcmp(argv[1], "--write-store")) {
    enpu_err err = {0};
    if (synth_store_write(argv[2], store_policies, NPOL + 1, &err) != 0) {
      fprintf(stderr, "test_replay: %s\n", err.msg);
      return 1;
    }
    return 0;
  }
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_trace_parse),
      cmocka_unit_test(test_trace_bad_rows),
      cmocka_unit_test(test_trace_shape),
      cmocka_unit_test(test_trace_burst),
      cmocka_unit_test(test_convert_formats),
      cmocka_unit_test(test_convert_order),
      cmocka_unit_test(test_convert_bad_input),
      cmocka_unit_test(test_diurnal),
      cmocka_unit_test(test_idle_power),
      cmocka_unit_test(test_check_store),
      cmocka_unit_test(test_conservation_table3),
      cmocka_unit_test(test_single_request),
      cmocka_unit_test(test_common_horizon),
      cmocka_unit_test(test_prefill_batches_padded),
      cmocka_unit_test(test_safeguard1),
      cmocka_unit_test(test_safeguard1_below_fastest),
      cmocka_unit_test(test_safeguard1_scans_queue),
      cmocka_unit_test(test_safeguard2),
      cmocka_unit_test(test_unknown_policy),
      cmocka_unit_test(test_chunked_prefill),
      cmocka_unit_test(test_fallback_decode),
      cmocka_unit_test(test_beyond_grid_governor),
      cmocka_unit_test(test_class_counts),
      cmocka_unit_test(test_fallback_admitted_batch),
      cmocka_unit_test(test_slo_extrapolated),
      cmocka_unit_test(test_sleep),
      cmocka_unit_test(test_fleet_sleep_wake),
      cmocka_unit_test(test_fleet_decode_drain),
      cmocka_unit_test(test_fleet_names),
      cmocka_unit_test(test_kv_contention),
      cmocka_unit_test(test_window_slack),
      cmocka_unit_test(test_determinism_and_outputs),
      cmocka_unit_test(test_sweep),
      cmocka_unit_test(test_switch_burst),
      cmocka_unit_test(test_predictive_cap),
      cmocka_unit_test(test_spec_formulas),
      cmocka_unit_test(test_governor_peak_is_nodvfs),
      cmocka_unit_test(test_governor_fixed_state),
      cmocka_unit_test(test_governor_speculation),
      cmocka_unit_test(test_governors_run),
      cmocka_unit_test(test_pelm_deterministic),
      cmocka_unit_test(test_pelm_save_load),
      cmocka_unit_test(test_governor_bad_input),
  };
  return cmocka_run_group_tests(tests, setup, teardown);
}
