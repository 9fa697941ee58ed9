/* test_replay_gov.c — online governors and self-speculative decoding in the replay, on
 * the synthetic store's uniform policy (tests/integration/replay/synth_store.h: a pass at
 * state q takes T·34/q and E·(0.7 q/34 + 0.3·34/q), 1 % embedding, 98 % in 80 layers,
 * 1 % head): PELM's speed-up formula by hand, a governor pinned at peak equal to nodvfs
 * to the bit, a fixed state's times and energies from the table, speculation rounds from
 * the formulas, partial-depth passes, the DQN's determinism, save/load, and bad input.
 * Expected values come from the model's formulas, never from the replay's output. */
#include <unistd.h>

#include "test_replay.h"

static replay_result *run_job(ctx *c, const replay_job *job, const replay_trace *t) {
  replay_result *r = NULL;
  enpu_err err = {0};
  if (replay_run_job(c->ps, job, t, &c->setup, &r, &err) != 0) fail_msg("replay_run_job: %s", err.msg);
  return r;
}

static replay_governor governor(const char *name) {
  replay_governor g;
  enpu_err err = {0};
  if (replay_governor_parse(name, &g, &err) != 0) fail_msg("%s", err.msg);
  return g;
}

/* R = (n_ac × vd) / (ns × ex + vd) and n_ac = (1 − a^(ns+1)) / (1 − a), by hand. */
void test_spec_formulas(void **state) {
  (void)state;
  assert_near(replay_spec_speedup(2.5, 4, 20, 80), 200.0 / 160.0, 1e-15);
  assert_near(replay_spec_speedup(1, 0, 0, 80), 1, 0);        /* no draft: no speed-up */
  assert_near(replay_spec_speedup(3, 2, 16, 32), 1.5, 1e-15); /* 96 / 64 */
  assert_true(isnan(replay_spec_speedup(1, 0, 0, 0)));
  assert_near(replay_spec_tokens(0.5, 2), 1.75, 1e-15); /* 1 + 0.5 + 0.25 */
  assert_near(replay_spec_tokens(0, 4), 1, 0);
  assert_near(replay_spec_tokens(1, 4), 5, 0);
  assert_near(replay_spec_tokens(0.63, 4), (1 - pow(0.63, 5)) / 0.37, 1e-15);
  /* With the model's table: ex 20 has a = 0.63; a configuration needs a table depth. */
  ctx *c = *state;
  double a = 0;
  enpu_err err = {0};
  assert_int_equal(replay_spec_rate(c->model, 20, &a, &err), 0);
  assert_near(a, 0.63, 0);
  assert_int_equal(replay_spec_rate(c->model, 21, &a, &err), ENPU_ERR_NOT_FOUND);
  assert_non_null(strstr(err.msg, "it has 20, 40, 60"));
  const replay_spec bad[] = {{20, 0, 0}, {0, 4, 0}, {60, 2, 40}, {20, 99, 0}, {20, 2, 81}};
  for (size_t k = 0; k < sizeof bad / sizeof bad[0]; k++)
    assert_int_equal(replay_spec_check(c->model, &bad[k], &err), ENPU_ERR_INVALID);
  const replay_spec good = {20, 4, 60};
  assert_int_equal(replay_spec_check(c->model, &good, &err), 0);
}

/* A governor that always picks peak runs every batch at the uniform pass at peak, which
 * is the NoDVFS pass, and idles at NoDVFS's idle power: the same run to the bit. */
void test_governor_peak_is_nodvfs(void **state) {
  ctx *c = *state;
  replay_trace t = head_of(c->trace, 3000);
  replay_governor g = governor("fixed:34");
  const replay_job jobs[2] = {{.policy = "nodvfs"}, {.governor = &g}};
  replay_result *runs[2];
  enpu_err err = {0};
  assert_int_equal(replay_run_jobs(c->ps, jobs, 2, &t, &c->setup, 2, runs, &err), 0);
  const replay_summary *a = replay_result_summary(runs[0]), *b = replay_result_summary(runs[1]);
  assert_string_equal(b->policy, "fixed-34");
  assert_true(a->energy_nj == b->energy_nj && a->end_ns == b->end_ns);
  for (int ph = 0; ph < CONFIG_NPHASE; ph++)
    assert_true(a->phase[ph].busy_energy_nj == b->phase[ph].busy_energy_nj &&
                a->phase[ph].idle_energy_nj == b->phase[ph].idle_energy_nj &&
                a->phase[ph].batches == b->phase[ph].batches);
  const replay_request_result *qa = replay_result_requests(runs[0]), *qb = replay_result_requests(runs[1]);
  for (size_t i = 0; i < t.count; i++)
    if (qa[i].finish_ns != qb[i].finish_ns || qa[i].ttft_ns != qb[i].ttft_ns || qa[i].energy_nj != qb[i].energy_nj)
      fail_msg("request %zu differs: finish %.17g vs %.17g", i, qa[i].finish_ns, qb[i].finish_ns);
  assert_int_equal(a->slo_met, b->slo_met);
  assert_int_equal(replay_result_gov_summary(runs[1])->state_changes, 0);
  replay_result_free(runs[0]);
  replay_result_free(runs[1]);
}

/* One request at fixed state 17: its prefill takes T·34/17 and E·g(17) per chip; each
 * decode iteration likewise; idle nodes draw the idle power of state 17. */
void test_governor_fixed_state(void **state) {
  ctx *c = *state;
  replay_trace *t = parse_ok("TIMESTAMP,ContextTokens,GeneratedTokens\n2023-11-16 18:00:00,1000,3\n");
  replay_governor g = governor("fixed:17");
  const replay_job job = {.governor = &g};
  replay_result *r = run_job(c, &job, t);
  const replay_request_result *q = replay_result_requests(r);
  const double tp = synth_time_ns(STORE_PHASE_PREFILL, 1, 1024), td = synth_time_ns(STORE_PHASE_DECODE, 1, 1024);
  const double ep = synth_energy_nj(STORE_PHASE_PREFILL, 1, 1024),
               ed = synth_energy_nj(STORE_PHASE_DECODE, 1, 1024);
  assert_near(q[0].ttft_ns, tp * synth_uniform_time(17), 1e-3);
  const replay_summary *s = replay_result_summary(r);
  assert_near(s->phase[CONFIG_PREFILL].busy_energy_nj, 4 * ep * synth_uniform_energy(17), 1e-6 * ep);
  assert_near(s->phase[CONFIG_DECODE].busy_energy_nj, 2 * 4 * ed * synth_uniform_energy(17), 1e-6 * ed);
  assert_near(s->phase[CONFIG_DECODE].busy_node_ns, 2 * td * synth_uniform_time(17), 1e-3);
  /* Idle: every node but the busy one for the whole horizon at state 17's idle power. */
  const double idle_w = c->setup.idle_w_state[17];
  const double idle_node_ns = (24 * s->horizon_ns - s->phase[0].busy_node_ns) +
                              (8 * s->horizon_ns - s->phase[1].busy_node_ns);
  const double idle = idle_node_ns * 4 * idle_w;
  assert_near(s->phase[0].idle_energy_nj + s->phase[1].idle_energy_nj, idle, 1e-9 * idle);
  assert_true(idle_w < c->setup.idle_w_state[34]);
  replay_result_free(r);
  replay_trace_free(t);
}

/* Speculation at a fixed state: each member's token costs (ns·T(ex) + T_v(vd)) / n_ac, T(d)
 * a pass through d layers (embedding and head once, d of the 80 layers), T_v the
 * verification bucket of (ns + 1) × batch rows. */
void test_governor_speculation(void **state) {
  ctx *c = *state;
  replay_trace *t = parse_ok("TIMESTAMP,ContextTokens,GeneratedTokens\n2023-11-16 18:00:00,1000,11\n");
  replay_governor g = governor("fixed:34");
  g.fixed_spec = (replay_spec){20, 4, 0};
  const replay_job job = {.governor = &g};
  replay_result *r = run_job(c, &job, t);
  const double n_ac = replay_spec_tokens(0.63, 4);
  /* Decode at KV 1000..1010: buckets (1, 1024) for the draft, 5 rows padded to (8, 1024)
   * for verification. */
  const double draft = synth_time_ns(STORE_PHASE_DECODE, 1, 1024) * (0.02 + 0.98 * 20 / 80);
  const double verify = synth_time_ns(STORE_PHASE_DECODE, 8, 1024);
  const double step = (4 * draft + verify) / n_ac;
  const replay_summary *s = replay_result_summary(r);
  assert_near(s->phase[CONFIG_DECODE].busy_node_ns, 10 * step, 1e-6 * step);
  const replay_gov_summary *gs = replay_result_gov_summary(r);
  assert_int_equal(gs->spec_rounds, 10);
  assert_near(gs->mean_tokens_per_round, n_ac, 1e-12);
  assert_int_equal(gs->lossy_tokens, 0);
  /* The same configuration with a store policy: nodvfs's plan (the uniform pass at peak)
   * priced the same way. */
  const replay_job sd = {.policy = "nodvfs", .spec = {20, 4, 0}};
  replay_result *r2 = run_job(c, &sd, t);
  assert_string_equal(replay_result_summary(r2)->policy, "nodvfs+sd");
  assert_near(replay_result_summary(r2)->phase[CONFIG_DECODE].busy_node_ns, 10 * step, 1e-6 * step);
  replay_result_free(r2);
  replay_result_free(r);
  replay_trace_free(t);
}

/* Governors on a real load: ondemand follows the load, every run conserves energy, the
 * control period is honoured (decisions = nodes × periods). */
void test_governors_run(void **state) {
  ctx *c = *state;
  replay_trace t = head_of(c->trace, 2000);
  replay_governor od = governor("ondemand"), pid = governor("pid");
  pid.control_ms = 250;
  const replay_job jobs[3] = {{.policy = "nodvfs"}, {.governor = &od}, {.governor = &pid}};
  replay_result *runs[3];
  enpu_err err = {0};
  assert_int_equal(replay_run_jobs(c->ps, jobs, 3, &t, &c->setup, 2, runs, &err), 0);
  for (int k = 1; k < 3; k++) {
    const replay_summary *s = replay_result_summary(runs[k]);
    const replay_gov_summary *g = replay_result_gov_summary(runs[k]);
    assert_int_equal(s->served, t.count);
    assert_true(g->state_changes > 0);
    const double period = k == 1 ? 100e6 : 250e6;
    /* A decision per node per period until the run's last event. */
    assert_int_equal(g->decisions, (uint64_t)floor(s->end_ns / period) * 32);
    size_t nw = 0;
    const replay_gov_window *w = replay_result_gov_windows(runs[k], &nw);
    assert_true(nw > 0 && w[0].state_mean[0] >= 1 && w[0].state_mean[0] <= 34);
    const replay_phase_stats *p = s->phase;
    assert_near(
        s->energy_nj,
        p[0].busy_energy_nj + p[0].idle_energy_nj + p[1].busy_energy_nj + p[1].idle_energy_nj + s->kv_energy_nj,
        1e-9 * s->energy_nj);
  }
  /* Parked idle nodes: ondemand's idle energy is below NoDVFS's. */
  const replay_summary *b = replay_result_summary(runs[0]), *o = replay_result_summary(runs[1]);
  assert_true(o->phase[0].idle_energy_nj < b->phase[0].idle_energy_nj);
  for (int k = 0; k < 3; k++) replay_result_free(runs[k]);
}

/* A trained agent: twice the same seed gives the same weights; another seed other ones. */
static replay_pelm *trained(ctx *c, uint64_t seed, const replay_trace *t) {
  replay_pelm_params p;
  replay_pelm_params_default(&p);
  p.seed = seed;
  replay_pelm *a = NULL;
  enpu_err err = {0};
  if (replay_pelm_create(&p, &c->setup, &a, &err) != 0) fail_msg("%s", err.msg);
  replay_governor g = governor("pelm");
  g.pelm = a;
  const replay_job job = {.governor = &g};
  replay_result *r = run_job(c, &job, t);
  assert_true(replay_pelm_updates(a) > 0);
  assert_true(replay_result_gov_summary(r)->updates == replay_pelm_updates(a));
  replay_result_free(r);
  return a;
}

void test_pelm_deterministic(void **state) {
  ctx *c = *state;
  replay_trace t = head_of(c->trace, 800);
  replay_pelm *a = trained(c, 7, &t), *b = trained(c, 7, &t), *d = trained(c, 8, &t);
  size_t n = 0, m = 0;
  replay_pelm_weights(a, NULL, 0, &n);
  assert_int_equal(n, (size_t)(REPLAY_PELM_NOBS * 32 + 32 + 32 * 32 + 32 + 33 * (34 + 3 + 3 + 7)));
  double *wa = calloc(n, sizeof *wa), *wb = calloc(n, sizeof *wb), *wd = calloc(n, sizeof *wd);
  replay_pelm_weights(a, wa, n, &m);
  replay_pelm_weights(b, wb, n, &m);
  replay_pelm_weights(d, wd, n, &m);
  assert_memory_equal(wa, wb, n * sizeof *wa);
  assert_true(memcmp(wa, wd, n * sizeof *wa) != 0);
  free(wa), free(wb), free(wd);
  replay_pelm_free(a), replay_pelm_free(b), replay_pelm_free(d);
  /* pelm-lossless: one verification action (the full depth), so no token is lossy. */
  replay_pelm_params p;
  replay_pelm_params_default(&p);
  p.lossless = true;
  replay_pelm *l = NULL;
  enpu_err err = {0};
  assert_int_equal(replay_pelm_create(&p, &c->setup, &l, &err), 0);
  replay_pelm_weights(l, NULL, 0, &n);
  assert_int_equal(n, (size_t)(REPLAY_PELM_NOBS * 32 + 32 + 32 * 32 + 32 + 33 * (34 + 3 + 1 + 7)));
  replay_governor g = governor("pelm-lossless");
  assert_true(g.lossless);
  g.pelm = l;
  const replay_job job = {.governor = &g};
  replay_result *r = run_job(c, &job, &t);
  assert_string_equal(replay_result_summary(r)->policy, "pelm-lossless");
  assert_true(replay_result_gov_summary(r)->spec_rounds > 0);
  assert_int_equal(replay_result_gov_summary(r)->lossy_tokens, 0);
  replay_result_free(r);
  replay_pelm_free(l);
}

/* Saved and loaded: the same weights, the same greedy actions; a bad file is refused with
 * its path. */
void test_pelm_save_load(void **state) {
  ctx *c = *state;
  replay_trace t = head_of(c->trace, 500);
  replay_pelm *a = trained(c, 3, &t), *b = NULL;
  char path[STORE_FIXTURE_PATH_LEN + 16];
  snprintf(path, sizeof path, "%s/net.json", c->dir);
  enpu_err err = {0};
  assert_int_equal(replay_pelm_save(a, path, &err), 0);
  assert_int_equal(replay_pelm_load(path, &c->setup, &b, &err), 0);
  uint64_t rng = 1;
  for (int k = 0; k < 200; k++) {
    double obs[REPLAY_PELM_NOBS];
    for (int i = 0; i < REPLAY_PELM_NOBS; i++) {
      rng = rng * 6364136223846793005ULL + 1;
      obs[i] = (double)(rng >> 40) / (1 << 24);
    }
    int x[REPLAY_PELM_NBRANCH], y[REPLAY_PELM_NBRANCH];
    replay_pelm_greedy(a, obs, x);
    replay_pelm_greedy(b, obs, y);
    assert_memory_equal(x, y, sizeof x);
  }
  assert_int_equal(replay_pelm_updates(b), replay_pelm_updates(a));
  /* A network for another chip (other state count) is refused. */
  replay_setup other = c->setup;
  other.peak_state = 20;
  replay_pelm *x = NULL;
  assert_int_equal(replay_pelm_load(path, &other, &x, &err), ENPU_ERR_INVALID);
  assert_non_null(strstr(err.msg, "$.layers"));
  FILE *f = fopen(path, "w");
  fputs("{\"format\": \"enpu-pelm-net\",\n \"version\": 1,,}", f);
  fclose(f);
  assert_int_equal(replay_pelm_load(path, &c->setup, &x, &err), ENPU_ERR_PARSE);
  assert_non_null(strstr(err.msg, "net.json:2:"));
  unlink(path);
  replay_pelm_free(a), replay_pelm_free(b);
}

/* Bad input: an unknown governor, a control period <= 0, a state the chip does not have,
 * a store without the uniform policy. */
void test_governor_bad_input(void **state) {
  ctx *c = *state;
  replay_governor g;
  enpu_err err = {0};
  assert_int_equal(replay_governor_parse("schedutil", &g, &err), ENPU_ERR_INVALID);
  assert_non_null(strstr(err.msg, "unknown governor 'schedutil' (ondemand, pid, pelm, pelm-lossless or fixed:S"));
  assert_int_equal(replay_governor_parse("fixed:x", &g, &err), ENPU_ERR_INVALID);
  replay_trace t = head_of(c->trace, 10);
  replay_result *r = NULL;
  g = governor("ondemand");
  g.control_ms = 0;
  const replay_job job = {.governor = &g};
  assert_int_equal(replay_run_job(c->ps, &job, &t, &c->setup, &r, &err), ENPU_ERR_INVALID);
  assert_non_null(strstr(err.msg, "control period 0 ms: must be > 0"));
  g.control_ms = -5;
  assert_int_equal(replay_run_job(c->ps, &job, &t, &c->setup, &r, &err), ENPU_ERR_INVALID);
  g = governor("fixed:40");
  assert_int_equal(replay_run_job(c->ps, &job, &t, &c->setup, &r, &err), ENPU_ERR_INVALID);
  assert_non_null(strstr(err.msg, "fixed state 40 outside the chip's 1..34"));
  /* uniform is not a plan the scheduler picks by target. */
  const replay_job u = {.policy = "uniform"};
  assert_int_equal(replay_run_job(c->ps, &u, &t, &c->setup, &r, &err), ENPU_ERR_INVALID);
  assert_null(r);
  /* A store without the table. */
  char path[STORE_FIXTURE_PATH_LEN + 16];
  snprintf(path, sizeof path, "%s/no-uniform.h5", c->dir);
  assert_int_equal(synth_store_write(path, all_policies, NPOL, &err), 0);
  planstore *ps = NULL;
  assert_int_equal(planstore_open(path, &ps, &err), 0);
  g = governor("ondemand");
  assert_int_equal(replay_run_job(ps, &job, &t, &c->setup, &r, &err), ENPU_ERR_NOT_FOUND);
  assert_non_null(strstr(err.msg, "add \"uniform\" to the job's policies"));
  const replay_job sd = {.policy = "nodvfs", .spec = {20, 4, 0}};
  assert_int_equal(replay_run_job(ps, &sd, &t, &c->setup, &r, &err), ENPU_ERR_NOT_FOUND);
  planstore_close(ps);
  unlink(path);
}
