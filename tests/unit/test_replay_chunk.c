/* test_replay_chunk.c — requests beyond the synthetic store's grid (largest seq bucket
 * 16,384 in both phases): chunked prefill, fallback decode, the unservable case, and the
 * per-class counts. Expected times are worked out by hand from the synthetic model
 * (tests/integration/replay/synth_store.h): prefill T(1, s) = 2 ms + 105 µs·s + 2 ns·s², so
 * the quadratic term the replay fits from the three largest buckets is q = 2 ns per
 * token², and a chunk of padded length c at offset o adds 2·q·c·o; decode T(1, s) =
 * 12.72 ms + 29 ns·s, linear, so the fallback's extrapolation is exact. */
#include "test_replay.h"

#define P STORE_PHASE_PREFILL
#define D STORE_PHASE_DECODE

static double tp(int s) { return synth_time_ns(P, 1, s); }

/* Three prefill-only requests a minute apart, each alone on the cluster. */
static const char *const chunk_trace = "TIMESTAMP,ContextTokens,GeneratedTokens\n"
                                       "2023-11-16 18:00:00,20000,1\n"  /* 16,384 + 3,616 (bucket 4,096) */
                                       "2023-11-16 18:01:00,32768,1\n"  /* 2 × 16,384, no padding */
                                       "2023-11-16 18:02:00,40000,1\n"; /* 2 × 16,384 + 7,232 (bucket 8,192) */

static void expected_chunked(double t[3]) {
  t[0] = tp(16384) + tp(4096) + 2 * 2.0 * 4096 * 16384.0; /* tail at offset 16,384 */
  t[1] = 2 * tp(16384) + 2 * 2.0 * 16384 * 16384.0;       /* second chunk at offset 16,384 */
  t[2] = 2 * tp(16384) + tp(8192) + 2 * 2.0 * 16384 * 16384.0 + 2 * 2.0 * 8192 * 32768.0;
}

void test_chunked_prefill(void **state) {
  ctx *c = *state;
  replay_trace *t = parse_ok(chunk_trace);
  double want[3];
  expected_chunked(want);
  /* The chunks' quadratic terms add up to the whole prefill's: chunking costs the
   * extrapolated prefill plus one pass's fixed 2 ms per extra chunk. */
  assert_near(want[1], 2e6 + 1.05e5 * 32768 + 2.0 * 32768.0 * 32768 + 2e6, 1e-3);
  for (int k = 0; k < 2; k++) {
    replay_result *r = run(c, k ? "enpu-all" : "nodvfs", t, &c->setup);
    const replay_request_result *q = replay_result_requests(r);
    const replay_summary *sm = replay_result_summary(r);
    /* enpu-all: the extrapolated TTFT SLO (4.4 s × the chunked time over T(1, 8192)) lets
     * every chunk run its slowest plan, 1.4 × and 0.67 × of its fastest. */
    const double slow = k ? synth_time_mult[SYNTH_NPTS - 1] : 1, em = k ? synth_energy_enpu[SYNTH_NPTS - 1] : 1;
    for (int i = 0; i < 3; i++) {
      assert_int_equal(q[i].status, REPLAY_DONE);
      assert_int_equal(q[i].served_by, REPLAY_BY_CHUNKED);
      assert_near(q[i].ttft_ns, slow * want[i], 1e-6 * want[i]);
      assert_near(q[i].energy_nj, 4 * em * 320 * want[i], 1e-6 * q[i].energy_nj); /* 4 chips, E = 320 W · T */
      assert_true(q[i].slo_extrapolated && q[i].slo_met);
    }
    assert_int_equal(sm->phase[CONFIG_PREFILL].chunked, 3);
    assert_int_equal(sm->phase[CONFIG_PREFILL].chunks, 2 + 2 + 3);
    assert_int_equal(sm->phase[CONFIG_PREFILL].padded_tokens, (16384 + 4096) + 32768 + (32768 + 8192));
    assert_int_equal(sm->phase[CONFIG_PREFILL].tokens, 20000 + 32768 + 40000);
    assert_int_equal(sm->served, 3);
    assert_int_equal(sm->chunked, 3);
    assert_int_equal(sm->unservable, 0);
    assert_near(sm->slo_attainment, 1, 0);
    replay_result_free(r);
  }
  replay_trace_free(t);
}

/* 16,000 + 2,000 tokens: decode iterations at KV 16,001 .. 17,999; those up to 16,384 run
 * the bucket 16,384, the 1,615 beyond it the fallback at its own length. */
void test_fallback_decode(void **state) {
  ctx *c = *state;
  replay_trace *t = parse_ok("TIMESTAMP,ContextTokens,GeneratedTokens\n2023-11-16 18:00:00,16000,2000\n");
  double per_chip_nj = 384 * synth_energy_nj(D, 1, 16384);
  for (int s = 16385; s <= 17999; s++) per_chip_nj += 250 * (12.7e6 + 2e4 + 29.0 * s);
  const double chips = c->cluster->node[CONFIG_DECODE].chips;
  replay_result *r = run(c, "nodvfs", t, &c->setup);
  const replay_request_result *q = replay_result_requests(r);
  const replay_summary *sm = replay_result_summary(r);
  assert_int_equal(q[0].status, REPLAY_DONE);
  assert_int_equal(q[0].served_by, REPLAY_BY_FALLBACK);
  assert_true(isfinite(q[0].tpot_ns) && isfinite(q[0].finish_ns));
  assert_int_equal(sm->phase[CONFIG_DECODE].fallback, 1615);
  assert_int_equal(sm->phase[CONFIG_DECODE].batches, 1999);
  assert_near(sm->phase[CONFIG_DECODE].busy_energy_nj, chips * per_chip_nj, 1e-9 * chips * per_chip_nj);
  assert_int_equal(sm->fallback, 1);
  /* A DVFS policy claims nothing on the fallback: its iterations cost nodvfs's. */
  replay_result *e = run(c, "enpu-all", t, &c->setup);
  assert_int_equal(replay_result_summary(e)->phase[CONFIG_DECODE].fallback, 1615);
  assert_true(replay_result_summary(e)->phase[CONFIG_DECODE].busy_energy_nj >
              chips * (per_chip_nj - 384 * synth_energy_nj(D, 1, 16384)));
  replay_result_free(e);
  replay_result_free(r);
  replay_trace_free(t);
}

/* A governor prices chunks and fallback passes as the compiled pass scaled: at the peak
 * state the uniform pass is nodvfs's, so the times and energies are the same. */
void test_beyond_grid_governor(void **state) {
  ctx *c = *state;
  replay_trace *t = parse_ok("TIMESTAMP,ContextTokens,GeneratedTokens\n2023-11-16 18:00:00,40000,1\n"
                             "2023-11-16 18:02:00,16000,2000\n");
  replay_governor g;
  enpu_err err = {0};
  assert_int_equal(replay_governor_parse("fixed:34", &g, &err), 0);
  const replay_job job = {.governor = &g};
  replay_result *r = NULL, *n = run(c, "nodvfs", t, &c->setup);
  assert_int_equal(replay_run_job(c->ps, &job, t, &c->setup, &r, &err), 0);
  const replay_request_result *q = replay_result_requests(r), *qn = replay_result_requests(n);
  double want[3];
  expected_chunked(want);
  assert_near(q[0].ttft_ns, want[2], 1e-6 * want[2]);
  assert_near(q[1].tpot_ns, qn[1].tpot_ns, 1e-6 * qn[1].tpot_ns);
  const replay_summary *s = replay_result_summary(r), *sn = replay_result_summary(n);
  assert_int_equal(s->phase[CONFIG_DECODE].fallback, 1615);
  assert_near(s->phase[CONFIG_DECODE].busy_energy_nj, sn->phase[CONFIG_DECODE].busy_energy_nj,
              1e-6 * sn->phase[CONFIG_DECODE].busy_energy_nj);
  assert_int_equal(s->served, 2);
  replay_result_free(r);
  replay_result_free(n);
  replay_trace_free(t);
}

/* Every class's counts add up to its requests, and the classes to the trace; a request
 * whose KV exceeds every compiled bucket's (688,128 tokens: 48 × 14,336) is the one
 * unservable case, named with its reason and counted as a miss. */
void test_class_counts(void **state) {
  ctx *c = *state;
  replay_trace *t = parse_ok("TIMESTAMP,ContextTokens,GeneratedTokens\n2023-11-16 18:00:00,100,4\n"
                             "2023-11-16 18:00:01,20000,4\n2023-11-16 18:00:02,16000,2000\n"
                             "2023-11-16 18:00:03,700000,1\n2023-11-16 18:00:04,3000,20\n");
  replay_result *r = run(c, "nodvfs", t, &c->setup);
  const replay_request_result *q = replay_result_requests(r);
  const replay_summary *sm = replay_result_summary(r);
  assert_int_equal(q[0].served_by, 0);
  assert_int_equal(q[1].served_by, REPLAY_BY_CHUNKED | REPLAY_BY_FALLBACK); /* 20,000 + 4: both phases beyond */
  assert_int_equal(q[2].served_by, REPLAY_BY_FALLBACK);
  assert_int_equal(q[3].status, REPLAY_UNSERVABLE);
  assert_true(isnan(q[3].ttft_ns) && q[3].energy_nj == 0 && !q[3].slo_met);
  assert_non_null(strstr(sm->unservable_example, "exceeds the largest compiled bucket's (688128 tokens)"));
  assert_int_equal(sm->served, 4);
  assert_int_equal(sm->unservable, 1);
  assert_int_equal(sm->fallback, 2);
  assert_int_equal(sm->fallback_own, 2); /* 20,003 and 17,999 tokens: both beyond 16,384 alone */
  uint64_t total = 0, by[REPLAY_NBY] = {0}, unserv = 0;
  for (int k = 0; k < c->cluster->slo_count; k++) {
    const replay_class_stats *cs = &sm->classes[k];
    uint64_t sum = cs->unservable;
    for (int b = 0; b < REPLAY_NBY; b++) sum += cs->by[b], by[b] += cs->by[b];
    assert_int_equal(sum, cs->requests);
    total += cs->requests, unserv += cs->unservable;
  }
  assert_int_equal(total, 5);
  assert_int_equal(by[0], 2);
  assert_int_equal(by[REPLAY_BY_CHUNKED], 0);
  assert_int_equal(by[REPLAY_BY_FALLBACK], 1);
  assert_int_equal(by[REPLAY_BY_CHUNKED | REPLAY_BY_FALLBACK], 1);
  assert_int_equal(unserv, 1);
  assert_near(sm->slo_attainment, (double)sm->slo_met / 5, 1e-12);
  replay_result_free(r);
  replay_trace_free(t);
}

/* A batch admitted for the fallback at its final length (33 × ~17,800 tokens fits the
 * 688,128-token limit) runs through lengths inside the grid whose padded bucket
 * (48 × 16,384) does not fit the HBM: those passes take the fallback too, rather than
 * failing the run. 800 long requests onto one decode node make such batches. */
void test_fallback_admitted_batch(void **state) {
  ctx *c = *state;
  config_cluster cl = *c->cluster;
  cl.node[CONFIG_DECODE].nodes = 1;
  replay_setup s;
  setup_for(c, &cl, &s);
  char *text = malloc(800 * 48 + 64);
  assert_non_null(text);
  size_t len = (size_t)sprintf(text, "TIMESTAMP,ContextTokens,GeneratedTokens\n");
  for (int i = 0; i < 800; i++)
    len += (size_t)sprintf(text + len, "2023-11-16 18:00:%02d.%03d0000,%d,2000\n", i / 100, (i % 100) * 10,
                           15800 + (i % 7) * 50);
  replay_trace *t = parse_ok(text);
  free(text);
  replay_result *r = run(c, "nodvfs", t, &s);
  const replay_summary *sm = replay_result_summary(r);
  assert_int_equal(sm->served, 800);
  assert_int_equal(sm->fallback, 800);
  assert_true(sm->phase[CONFIG_DECODE].fallback > sm->phase[CONFIG_DECODE].batches / 2);
  replay_result_free(r);
  replay_trace_free(t);
}
