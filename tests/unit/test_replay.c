/* test_replay.c — the cluster replay: trace parsing (bad rows name their line and
 * column), shaping (rate, day), idle power, and runs on a synthetic store written here
 * with the analytical model of tests/integration/replay/synth_store.h: conservation
 * (every request once, tokens, energy = batches + idle), T_target and the plan chosen for
 * it, KV transfer time, safeguard 1 and 2, uncovered requests, determinism down to the
 * bytes of the output files. Expected values come from the model's formulas here, never
 * from the replay's own output. With --write-store PATH it only writes the store. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../integration/replay/synth_store.h"
#include "planstore.h"
#include "replay.h"

#define TRACE_PATH ENPU_SOURCE_DIR "/jobs/traces/AzureLLMInferenceTrace_conv.csv"
#define CLUSTER_PATH ENPU_SOURCE_DIR "/jobs/clusters/llama3-70b.json"
#define MODEL_PATH ENPU_SOURCE_DIR "/jobs/models/llama3-70b.json"
#define CHIP_PATH ENPU_SOURCE_DIR "/jobs/chips/tpuv5p.json"

static const char *const all_policies[] = {"dvfs-c", "enpu-all", "nodvfs"};

typedef struct {
  char dir[STORE_FIXTURE_DIR_LEN], store[STORE_FIXTURE_PATH_LEN];
  planstore *ps;
  config_cluster *cluster;
  config_model *model;
  config_chip *chip;
  replay_setup setup;
  replay_trace *trace; /* the conv trace */
} ctx;

static int setup(void **state) {
  ctx *c = calloc(1, sizeof *c);
  enpu_err err = {0};
  if (!c) return -1;
  if (store_fixture_dir_make("test_replay", c->dir, c->store) != 0) return -1;
  if (synth_store_write(c->store, all_policies, 3, &err) || planstore_open(c->store, &c->ps, &err) ||
      config_cluster_load(CLUSTER_PATH, &c->cluster, &err) || config_model_load(MODEL_PATH, &c->model, &err) ||
      config_chip_load(CHIP_PATH, &c->chip, &err) ||
      replay_setup_init(&c->setup, c->cluster, c->model, c->chip, &err) ||
      replay_trace_load(TRACE_PATH, false, &c->trace, &err)) {
    fprintf(stderr, "setup: %s\n", err.msg);
    return -1;
  }
  *state = c;
  return 0;
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

/* The first n requests of the conv trace (a view: no copy of the requests). */
static replay_trace head_of(const replay_trace *t, size_t n) {
  return (replay_trace){.requests = t->requests, .count = n < t->count ? n : t->count};
}

static replay_trace *parse_ok(const char *text) {
  replay_trace *t = NULL;
  enpu_err err = {0};
  if (replay_trace_parse(text, strlen(text), "t.csv", false, &t, &err) != 0) fail_msg("parse: %s", err.msg);
  return t;
}

/* ---------------------------------------------------------------------------------
 * Trace */

static void test_trace_parse(void **state) {
  ctx *c = *state;
  /* The shipped trace: every row (its README counts 19366), the first one at 0. */
  assert_int_equal(c->trace->count, 19366);
  assert_int_equal(c->trace->skipped, 0);
  assert_int_equal(c->trace->requests[0].context_tokens, 374);
  assert_near(c->trace->requests[0].arrival_ns, 0, 0);
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
}

static void test_trace_bad_rows(void **state) {
  (void)state;
  static const struct {
    const char *text, *want;
    int code;
  } cases[] = {
      {"TIMESTAMP,ContextTokens\n", "t.csv:1:1: expected the header", ENPU_ERR_PARSE},
      {"TIMESTAMP,ContextTokens,GeneratedTokens\n2023-11-16 18:15:46,1,1\n2023-11-16 18:15:4x,1,1\n",
       "t.csv:3:1: expected a timestamp", ENPU_ERR_PARSE},
      {"TIMESTAMP,ContextTokens,GeneratedTokens\n2023-11-16 18:15:46.1,12,\n", "t.csv:2:26: expected a token count",
       ENPU_ERR_PARSE},
      {"TIMESTAMP,ContextTokens,GeneratedTokens\n2023-11-16 18:15:46,0,5\n", "t.csv:2:21: expected a token count from 1",
       ENPU_ERR_RANGE},
      {"TIMESTAMP,ContextTokens,GeneratedTokens\n2023-02-30 18:15:46,3,5\n", "t.csv:2:1: expected a valid date",
       ENPU_ERR_RANGE},
      {"TIMESTAMP,ContextTokens,GeneratedTokens\n2023-11-16 18:15:46,3,5,7\n", "t.csv:2:24: expected the end of the row",
       ENPU_ERR_PARSE},
      {"TIMESTAMP,ContextTokens,GeneratedTokens\n", "no data rows", ENPU_ERR_INVALID},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    replay_trace *t = (replay_trace *)&cases; /* must be reset to NULL on failure */
    enpu_err err = {0};
    int rc = replay_trace_parse(cases[i].text, strlen(cases[i].text), "t.csv", false, &t, &err);
    if (rc != cases[i].code || !strstr(err.msg, cases[i].want))
      fail_msg("case %zu: rc %d, message '%s', want %d '%s'", i, rc, err.msg, cases[i].code, cases[i].want);
    assert_null(t);
  }
  /* Skipping: two bad rows of four, counted, the first one's message kept. */
  const char *text = "TIMESTAMP,ContextTokens,GeneratedTokens\n2023-11-16 18:15:46,3,5\nbad\n"
                     "2023-11-16 18:15:47,-1,5\n2023-11-16 18:15:48,4,6\n";
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

static void test_trace_shape(void **state) {
  ctx *c = *state;
  replay_trace *a = NULL, *b = NULL, *d = NULL;
  enpu_err err = {0};
  /* Integer rate: exactly that many copies, each within its gap. */
  replay_shape sh = {.rate = 3, .warp = 1, .seed = 7};
  assert_int_equal(replay_trace_shape(c->trace, &sh, &a, &err), 0);
  assert_int_equal(a->count, 3 * c->trace->count);
  assert_true(a->requests[a->count - 1].arrival_ns <= c->trace->requests[c->trace->count - 1].arrival_ns * 1.001);
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
  /* Day: 24 hours, the peak hour at the trace's rate, 04:00 at 0.3 of it. */
  sh = (replay_shape){.rate = 1, .warp = 1, .day = true, .seed = 3};
  assert_int_equal(replay_trace_shape(c->trace, &sh, &d, &err), 0);
  size_t per_hour[24] = {0};
  for (size_t i = 0; i < d->count; i++) {
    double h = d->requests[i].arrival_ns / 3600e9;
    assert_true(h >= 0 && h < 24);
    per_hour[(int)h]++;
  }
  const double trace_rate_per_h = (double)c->trace->count * 3600e9 /
                                  (c->trace->requests[c->trace->count - 1].arrival_ns * (1 + 1.0 / (c->trace->count - 1)));
  assert_in_range(per_hour[16], (size_t)(0.9 * trace_rate_per_h), (size_t)(1.1 * trace_rate_per_h));
  const double at4 = (replay_diurnal_factor(4) + replay_diurnal_factor(5)) / 2; /* mean over 04:00-05:00 */
  assert_in_range(per_hour[4], (size_t)(0.85 * at4 * trace_rate_per_h), (size_t)(1.15 * at4 * trace_rate_per_h));
  replay_trace_free(d);
  /* Bad shapes. */
  sh = (replay_shape){.rate = -1, .warp = 1};
  assert_int_equal(replay_trace_shape(c->trace, &sh, &a, &err), ENPU_ERR_INVALID);
  sh = (replay_shape){.rate = 1, .warp = 0};
  assert_int_equal(replay_trace_shape(c->trace, &sh, &a, &err), ENPU_ERR_INVALID);
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
}

static void test_idle_power(void **state) {
  ctx *c = *state;
  double w = 0;
  enpu_err err = {0};
  assert_int_equal(replay_idle_power_w(c->chip, &w, &err), 0);
  assert_true(w > c->chip->other_static_w);
  assert_true(w < 0.5 * c->chip->tdp_w);
  assert_near(c->setup.idle_w_per_chip, w, 0);
  /* A cluster for another model is refused. */
  config_cluster other = *c->cluster;
  snprintf(other.model_name, sizeof other.model_name, "llama3.1-405b");
  replay_setup s;
  assert_int_equal(replay_setup_init(&s, &other, c->model, c->chip, &err), ENPU_ERR_INVALID);
  assert_non_null(strstr(err.msg, "llama3.1-405b"));
}

/* ---------------------------------------------------------------------------------
 * Runs */

static replay_result *run(ctx *c, const char *policy, const replay_trace *t, const replay_setup *s) {
  replay_result *r = NULL;
  enpu_err err = {0};
  if (replay_run(c->ps, policy, t, s, &r, &err) != 0) fail_msg("replay_run %s: %s", policy, err.msg);
  return r;
}

static void check_conservation(const replay_result *r, const replay_trace *t, const replay_setup *s) {
  const replay_summary *sm = replay_result_summary(r);
  const replay_request_result *q = replay_result_requests(r);
  assert_int_equal(sm->requests, t->count);
  uint64_t ctx_tokens = 0, gen_tokens = 0, served = 0;
  double req_energy = 0, last = 0;
  for (size_t i = 0; i < t->count; i++) {
    assert_int_equal(q[i].status, REPLAY_DONE);
    served++;
    ctx_tokens += (uint64_t)t->requests[i].context_tokens;
    gen_tokens += (uint64_t)t->requests[i].generated_tokens;
    assert_true(q[i].ttft_ns > 0);
    assert_true(q[i].finish_ns >= q[i].arrival_ns + q[i].ttft_ns - 1e-3);
    if (q[i].generated_tokens > 1)
      assert_near(q[i].finish_ns, q[i].arrival_ns + q[i].ttft_ns + q[i].tpot_ns * (q[i].generated_tokens - 1),
                  1e-6 * q[i].finish_ns);
    req_energy += q[i].energy_nj;
    last = fmax(last, q[i].finish_ns);
  }
  assert_int_equal(sm->served, served);
  /* Tokens: prefill ran every context token once; decode made every token but the first. */
  assert_int_equal(sm->phase[REPLAY_PREFILL].tokens, ctx_tokens);
  assert_int_equal(sm->phase[REPLAY_DECODE].tokens + served, gen_tokens);
  /* Energy: requests share exactly the batches; total = batches + idle. */
  const double busy = sm->phase[0].busy_energy_nj + sm->phase[1].busy_energy_nj;
  assert_near(req_energy, busy, 1e-9 * busy);
  assert_near(sm->end_ns, last, 0);
  double total = 0, win_total = 0;
  for (int ph = 0; ph < REPLAY_NPHASE; ph++) {
    const replay_phase_stats *p = &sm->phase[ph];
    const config_node *node = &s->cluster->node[ph];
    const double idle = ((double)node->nodes * sm->end_ns - p->busy_node_ns) * node->chips * s->idle_w_per_chip;
    assert_true(p->busy_node_ns <= (double)node->nodes * sm->end_ns);
    assert_near(p->idle_energy_nj, idle, 1e-9 * idle);
    assert_near(p->energy_nj, p->busy_energy_nj + p->idle_energy_nj, 1e-9 * p->energy_nj);
    total += p->energy_nj;
  }
  assert_near(sm->energy_nj, total, 1e-9 * total);
  size_t nw = 0;
  const replay_window *w = replay_result_windows(r, &nw);
  uint64_t arrivals = 0, finished = 0;
  for (size_t k = 0; k < nw; k++) {
    win_total += w[k].energy_nj[0] + w[k].energy_nj[1];
    arrivals += w[k].arrivals;
    finished += w[k].finished;
  }
  assert_int_equal(nw, (size_t)(sm->end_ns / REPLAY_WINDOW_NS) + 1);
  assert_int_equal(arrivals, t->count);
  assert_int_equal(finished, served);
  assert_near(win_total, total, 1e-9 * total);
}

static void test_conservation_table3(void **state) {
  ctx *c = *state;
  replay_trace t = head_of(c->trace, 3000);
  replay_result *base = run(c, "nodvfs", &t, &c->setup);
  replay_result *enpu = run(c, "enpu-all", &t, &c->setup);
  check_conservation(base, &t, &c->setup);
  check_conservation(enpu, &t, &c->setup);
  const replay_summary *b = replay_result_summary(base), *e = replay_result_summary(enpu);
  /* NoDVFS never slows; eNPU does, saves energy in both phases, and keeps the SLOs at
   * this load on Table 3's nodes. */
  assert_int_equal(b->phase[0].slowed + b->phase[1].slowed, 0);
  assert_true(e->phase[0].slowed > 0 && e->phase[1].slowed > 0);
  for (int ph = 0; ph < REPLAY_NPHASE; ph++) assert_true(e->phase[ph].busy_energy_nj < b->phase[ph].busy_energy_nj);
  assert_true(b->slo_attainment >= 0.99);
  assert_true(e->slo_attainment >= 0.99);
  assert_int_equal(b->phase[0].locked + b->phase[1].locked, 0);
  /* KV transfer: context × KV bytes at 4 chips × 50 GB/s, for every request with decode. */
  const replay_request_result *q = replay_result_requests(base);
  double bytes = 0;
  for (size_t i = 0; i < t.count; i++)
    if (t.requests[i].generated_tokens > 1) {
      bytes += t.requests[i].context_tokens * c->model->kv_bytes_per_token;
      const double alone_ns = t.requests[i].context_tokens * c->model->kv_bytes_per_token / 200.0;
      if (!(q[i].kv_transfer_ns >= alone_ns - 1e-3)) /* more when its link was busy; 1e-3 ns: rounding at t ~ 1e12 ns */
        fail_msg("request %zu: KV transfer %.17g ns < %.17g ns", i, q[i].kv_transfer_ns, alone_ns);
    }
  assert_near(b->kv_bytes, bytes, 1e-9 * bytes);
  replay_result_free(base);
  replay_result_free(enpu);
}

/* One request alone: its prefill runs the slowest plan within its TTFT SLO, each decode
 * iteration the slowest within the TPOT SLO; times follow the model exactly. */
static void test_single_request(void **state) {
  ctx *c = *state;
  replay_trace *t = parse_ok("TIMESTAMP,ContextTokens,GeneratedTokens\n2023-11-16 18:00:00,1000,3\n");
  const double tp = synth_time_ns(STORE_PHASE_PREFILL, 1, 1024);
  const double td = synth_time_ns(STORE_PHASE_DECODE, 1, 1024);
  const double kv_ns = 1000 * c->model->kv_bytes_per_token / (4 * 50.0);
  for (int k = 0; k < 2; k++) {
    replay_result *r = run(c, k ? "enpu-all" : "nodvfs", t, &c->setup);
    const replay_request_result *q = replay_result_requests(r);
    const double slow = k ? synth_time_mult[SYNTH_NPTS - 1] : 1.0;
    assert_true(tp * slow < 725e6 && td * slow < 91e6); /* the slowest plan fits both SLOs */
    assert_near(q[0].ttft_ns, tp * slow, 1e-3);
    assert_near(q[0].kv_transfer_ns, kv_ns, 1e-6);
    assert_near(q[0].tpot_ns, (kv_ns + 2 * td * slow) / 2, 1e-3);
    assert_true(q[0].slo_met);
    const double e_expect = 4 * (synth_energy_nj(STORE_PHASE_PREFILL, 1, 1024) * (k ? synth_energy_enpu[SYNTH_NPTS - 1] : 1) +
                                 2 * synth_energy_nj(STORE_PHASE_DECODE, 1, 1024) * (k ? synth_energy_enpu[SYNTH_NPTS - 1] : 1));
    assert_near(q[0].energy_nj, e_expect, 1e-6 * e_expect);
    replay_result_free(r);
  }
  replay_trace_free(t);
}

/* Safeguard 1: one prefill node taking one request at a time, a 400 ms TTFT SLO. r0
 * runs alone (slowest plan); when r1 starts, r2 waits behind it, so r1's plan is capped
 * to leave r2 its fastest plan before its deadline. */
static void test_safeguard1(void **state) {
  ctx *c = *state;
  config_cluster cl = *c->cluster;
  cl.node[CONFIG_PREFILL].nodes = 1;
  cl.max_batch = 1;
  for (int k = 0; k < cl.slo_count; k++) cl.slo[k].ttft_ms = 400;
  replay_setup s = c->setup;
  s.cluster = &cl;
  replay_trace *t = parse_ok("TIMESTAMP,ContextTokens,GeneratedTokens\n2023-11-16 18:00:00.000,1000,2\n"
                             "2023-11-16 18:00:00.001,1000,2\n2023-11-16 18:00:00.002,1000,2\n");
  replay_result *r = run(c, "enpu-all", t, &s);
  const replay_request_result *q = replay_result_requests(r);
  const replay_summary *sm = replay_result_summary(r);
  const double tp = synth_time_ns(STORE_PHASE_PREFILL, 1, 1024);
  const double r0_end = tp * synth_time_mult[SYNTH_NPTS - 1];
  assert_near(q[0].ttft_ns, r0_end, 1e-3);
  const double cap = 2e6 + 400e6 - r0_end - tp; /* r2's deadline − now − its fastest plan */
  const double r1_run = q[1].ttft_ns + 1e6 - r0_end;
  assert_true(r1_run <= cap + 1e-3);
  assert_true(r1_run > tp); /* still slowed, only less */
  assert_int_equal(sm->phase[REPLAY_PREFILL].safeguard1, 1);
  for (int i = 0; i < 3; i++) assert_true(q[i].ttft_met);
  replay_result_free(r);
  replay_trace_free(t);
}

/* Safeguard 2 and overload: 5x the rate on a cluster too small for it. */
static void test_safeguard2(void **state) {
  ctx *c = *state;
  config_cluster cl = *c->cluster;
  cl.node[CONFIG_PREFILL].nodes = 3;
  cl.node[CONFIG_DECODE].nodes = 1;
  replay_setup s = c->setup;
  s.cluster = &cl;
  replay_trace head = head_of(c->trace, 1500), *t = NULL;
  replay_shape sh = {.rate = 5, .warp = 1, .seed = 1};
  enpu_err err = {0};
  assert_int_equal(replay_trace_shape(&head, &sh, &t, &err), 0);
  replay_result *r = run(c, "enpu-all", t, &s);
  const replay_summary *sm = replay_result_summary(r);
  check_conservation(r, t, &s);
  assert_true(sm->slo_attainment < 0.99);
  assert_true(sm->phase[REPLAY_PREFILL].locked > 0);
  size_t nw = 0;
  const replay_window *w = replay_result_windows(r, &nw);
  uint64_t locked = 0;
  for (size_t k = 0; k < nw; k++) locked += w[k].batches_locked[REPLAY_PREFILL];
  assert_int_equal(locked, sm->phase[REPLAY_PREFILL].locked);
  replay_result_free(r);
  replay_trace_free(t);
}

static void test_uncovered(void **state) {
  ctx *c = *state;
  replay_trace *t = parse_ok("TIMESTAMP,ContextTokens,GeneratedTokens\n2023-11-16 18:00:00,100,4\n"
                             "2023-11-16 18:00:01,20000,4\n2023-11-16 18:00:02,16000,2000\n");
  replay_result *r = run(c, "nodvfs", t, &c->setup);
  const replay_request_result *q = replay_result_requests(r);
  const replay_summary *sm = replay_result_summary(r);
  assert_int_equal(q[0].status, REPLAY_DONE);
  assert_int_equal(q[1].status, REPLAY_UNCOVERED_PREFILL); /* longer than any prefill bucket */
  assert_true(isnan(q[1].ttft_ns));
  assert_int_equal(q[2].status, REPLAY_UNCOVERED_DECODE); /* 18,000 total tokens: no decode bucket */
  assert_true(q[2].ttft_ns > 0 && !q[2].slo_met);
  assert_int_equal(sm->uncovered, 2);
  assert_int_equal(sm->served, 1);
  assert_near(sm->slo_attainment, 1.0 / 3, 1e-12);
  assert_non_null(strstr(sm->uncovered_example, "no prefill bucket covers"));
  replay_result_free(r);
  replay_trace_free(t);
  /* An unknown policy is refused before anything runs. */
  replay_result *none = NULL;
  enpu_err err = {0};
  assert_int_equal(replay_run(c->ps, "ideal", c->trace, &c->setup, &none, &err), ENPU_ERR_NOT_FOUND);
  assert_null(none);
}

static int slurp_equal(const char *a, const char *b) {
  char *x = NULL, *y = NULL;
  size_t nx = 0, ny = 0;
  enpu_err err = {0};
  int same = enpu_read_file(a, &x, &nx, &err) == 0 && enpu_read_file(b, &y, &ny, &err) == 0 && nx == ny && nx > 0 &&
             memcmp(x, y, nx) == 0;
  free(x);
  free(y);
  return same;
}

static void test_determinism_and_outputs(void **state) {
  ctx *c = *state;
  replay_trace head = head_of(c->trace, 2000), *t = NULL;
  replay_shape sh = {.rate = 1.5, .warp = 1, .seed = 42};
  enpu_err err = {0};
  assert_int_equal(replay_trace_shape(&head, &sh, &t, &err), 0);
  char dirs[2][128];
  for (int k = 0; k < 2; k++) {
    replay_result *runs[3];
    for (int p = 0; p < 3; p++) runs[p] = run(c, all_policies[p], t, &c->setup);
    snprintf(dirs[k], sizeof dirs[k], "%s/out%d/nested", c->dir, k);
    if (replay_write_outputs(dirs[k], (const replay_result *const *)runs, 3, &err) != 0) fail_msg("%s", err.msg);
    json_t *doc = NULL;
    assert_int_equal(replay_summary_json((const replay_result *const *)runs, 3, &doc, &err), 0);
    json_t *pol = json_object_get(doc, "policies");
    assert_int_equal(json_object_size(pol), 3);
    json_t *ea = json_object_get(json_object_get(pol, "enpu-all"), "energy_savings");
    json_t *dc = json_object_get(json_object_get(pol, "dvfs-c"), "energy_savings");
    json_t *nd = json_object_get(json_object_get(pol, "nodvfs"), "energy_savings");
    /* eNPU saves more than DVFS-C, which saves more than nothing. */
    assert_true(json_real_value(json_object_get(ea, "total")) > json_real_value(json_object_get(dc, "total")));
    assert_true(json_real_value(json_object_get(dc, "decode")) > 0);
    assert_near(json_real_value(json_object_get(nd, "total")), 0, 0);
    assert_int_equal(json_integer_value(json_object_get(doc, "requests")), t->count);
    json_decref(doc);
    for (int p = 0; p < 3; p++) replay_result_free(runs[p]);
  }
  static const char *const files[] = {"summary.json", "requests_enpu-all.csv", "windows_enpu-all.csv",
                                      "requests_nodvfs.csv", "windows_dvfs-c.csv"};
  for (size_t f = 0; f < sizeof files / sizeof files[0]; f++) {
    char a[256], b[256];
    snprintf(a, sizeof a, "%s/%s", dirs[0], files[f]);
    snprintf(b, sizeof b, "%s/%s", dirs[1], files[f]);
    if (!slurp_equal(a, b)) fail_msg("%s differs between two runs (or is missing)", files[f]);
  }
  /* The request CSV has a header and one row per request. */
  char path[256], *text = NULL;
  size_t len = 0, lines = 0;
  snprintf(path, sizeof path, "%s/requests_nodvfs.csv", dirs[0]);
  assert_int_equal(enpu_read_file(path, &text, &len, &err), 0);
  for (size_t i = 0; i < len; i++) lines += text[i] == '\n';
  assert_int_equal(lines, t->count + 1);
  free(text);
  /* An output directory that cannot be made is an error naming it. */
  replay_result *one = run(c, "nodvfs", t, &c->setup);
  assert_int_equal(replay_write_outputs("/proc/no/such", (const replay_result *const *)&one, 1, &err), ENPU_ERR_IO);
  assert_non_null(strstr(err.msg, "/proc/no"));
  replay_result_free(one);
  replay_trace_free(t);
}

int main(int argc, char **argv) {
  if (argc == 3 && !strcmp(argv[1], "--write-store")) {
    enpu_err err = {0};
    if (synth_store_write(argv[2], all_policies, 3, &err) != 0) {
      fprintf(stderr, "test_replay: %s\n", err.msg);
      return 1;
    }
    return 0;
  }
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_trace_parse),
      cmocka_unit_test(test_trace_bad_rows),
      cmocka_unit_test(test_trace_shape),
      cmocka_unit_test(test_diurnal),
      cmocka_unit_test(test_idle_power),
      cmocka_unit_test(test_conservation_table3),
      cmocka_unit_test(test_single_request),
      cmocka_unit_test(test_safeguard1),
      cmocka_unit_test(test_safeguard2),
      cmocka_unit_test(test_uncovered),
      cmocka_unit_test(test_determinism_and_outputs),
  };
  return cmocka_run_group_tests(tests, setup, teardown);
}
