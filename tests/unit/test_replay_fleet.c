/* test_replay_fleet.c — the fleet of a run (replay_fleet.c): a prefill instance's
 * sleep/wake cycle and a decode instance's scale-down with its KV drained, each against
 * energies computed by hand from the policy's rules (replay.h, replay_fleet_params) and
 * the synthetic model; run names that carry a fleet; chip power states set by path. */
#include "test_replay.h"

/* The policy made easy to follow: decisions every 100 ms, a one-second window, one
 * second of hysteresis, the instances the demand needs and no more; a sleeping chip
 * draws 10 W, waking takes 50 ms and 1 J per chip. */
static void fleet_setup(ctx *c, config_cluster *cl, replay_setup *s, int prefill_nodes, int decode_nodes) {
  resized(c, cl, s, prefill_nodes, decode_nodes);
  s->fleet = (replay_fleet_params){.control_ms = 100,
                                   .window_s = 1,
                                   .hold_s = 1,
                                   .headroom = 0,
                                   .spare = 0,
                                   .decode_fill = 0.5,
                                   .attainment = 0,
                                   .min_outcomes = 1};
  s->sleep_w_per_chip = 10;
  s->wake_ns = 50e6;
  s->wake_nj_per_chip = 1e9;
}

/* Idle energy of a pool: awake idle time at the run's idle power, asleep time at 10 W,
 * and the wake-ups (1 J per chip and the awake idle power over 50 ms each). */
static double pool_idle_nj(const replay_summary *sm, const config_cluster *cl, int ph) {
  const replay_phase_stats *p = &sm->phase[ph];
  const double chips = cl->node[ph].chips, w = sm->idle_w_per_chip;
  const double awake_ns = cl->node[ph].nodes * sm->horizon_ns - p->busy_node_ns - p->asleep_node_ns -
                          p->wake_node_ns;
  return awake_ns * chips * w + p->asleep_node_ns * chips * 10 + (double)p->wakes * chips * (1e9 + w * 50e6);
}

/* Two prefill instances, one decode instance. r0 at 0 needs one prefill instance: at the
 * decision of 0.1 s the target (1) is below the awake count (2), and a second later
 * (hysteresis) instance 1, the highest idle one, sleeps: 1.1 s. At 30 s two prefills of
 * 10,000 tokens arrive: instance 0 takes r1, r2 cannot join it (20,000 tokens > 16,384)
 * and waits; at 30.1 s the demand is 1 busy + ⌈10,000 / 16,384⌉ = 2 instances, so
 * instance 1 wakes and takes r2 at 30.15 s. Asleep 29 s at 4 × 10 W: 1,160 J; its
 * wake-up 4 × (1 J + idle W × 50 ms). */
void test_fleet_sleep_wake(void **state) {
  ctx *c = *state;
  config_cluster cl;
  replay_setup s;
  fleet_setup(c, &cl, &s, 2, 1);
  const double t10k = prefill_alone_ns(10000);
  assert_true(t10k > 100e6 && prefill_alone_ns(100) < 100e6); /* the decisions see what the comment says */
  replay_trace *t = parse_ok("TIMESTAMP,ContextTokens,GeneratedTokens\n2023-11-16 18:00:00,100,2\n"
                             "2023-11-16 18:00:30,10000,2\n2023-11-16 18:00:30,10000,2\n");
  replay_result *r = run(c, "nodvfs+as", t, &s);
  const replay_summary *sm = replay_result_summary(r);
  const replay_request_result *q = replay_result_requests(r);
  const replay_phase_stats *p = &sm->phase[CONFIG_PREFILL];
  assert_string_equal(sm->policy, "nodvfs+as");
  assert_true(sm->autoscale);
  assert_int_equal(p->sleeps, 1);
  assert_int_equal(p->wakes, 1);
  assert_near(q[1].ttft_ns, t10k, 1e-3);
  assert_near(q[2].ttft_ns, 150e6 + t10k, 1e-3); /* woken at 30.1 s, awake at 30.15 s */
  assert_near(p->asleep_node_ns, 29e9, 1e-3);
  assert_near(p->sleep_energy_nj, 29.0 * 4 * 10 * 1e9, 1e-3);
  const double wake_nj = 4 * (1e9 + sm->idle_w_per_chip * 50e6);
  assert_near(p->transition_energy_nj, wake_nj, 1e-6);
  assert_near(p->wake_node_ns, 50e6, 0);
  assert_near(p->idle_energy_nj, pool_idle_nj(sm, &cl, CONFIG_PREFILL), 1e-6 * p->idle_energy_nj);
  /* the one decode instance always stays: nothing slept there */
  assert_int_equal(sm->phase[CONFIG_DECODE].sleeps, 0);
  assert_near(sm->phase[CONFIG_DECODE].sleep_energy_nj, 0, 0);
  /* the same run always on: busy energy equal (the same batches), idle energy higher */
  replay_result *on = run(c, "nodvfs", t, &s);
  const replay_summary *so = replay_result_summary(on);
  assert_near(so->phase[CONFIG_PREFILL].busy_energy_nj, p->busy_energy_nj, 1e-9 * p->busy_energy_nj);
  assert_true(so->phase[CONFIG_PREFILL].idle_energy_nj > p->idle_energy_nj);
  replay_result_free(on);
  replay_result_free(r);
  replay_trace_free(t);
}

/* One prefill instance, two decode instances. r0 and r1 arrive together and go to
 * decode instances 0 and 1 (fewest requests, lowest index): the demand is
 * ⌈2 / (256 × 0.5)⌉ = 1 instance, so at 1.1 s the least loaded awake instance, the
 * highest on a tie, drains: instance 1, holding r1's KV. It takes no new request (r2 at
 * 5 s goes to instance 0) and sleeps when r1 finishes: its KV leaves by decoding, not
 * over the DCN, so the KV bytes are the always-on run's. Asleep from r1's finish to the
 * horizon at 4 × 10 W. */
void test_fleet_decode_drain(void **state) {
  ctx *c = *state;
  config_cluster cl;
  replay_setup s;
  fleet_setup(c, &cl, &s, 1, 2);
  replay_trace *t = parse_ok("TIMESTAMP,ContextTokens,GeneratedTokens\n2023-11-16 18:00:00,500,1500\n"
                             "2023-11-16 18:00:00,500,600\n2023-11-16 18:00:05,500,100\n");
  replay_result *r = run(c, "enpu-all@gated+as", t, &s), *on = run(c, "enpu-all@gated", t, &s);
  const replay_summary *sm = replay_result_summary(r), *so = replay_result_summary(on);
  const replay_request_result *q = replay_result_requests(r), *qo = replay_result_requests(on);
  const replay_phase_stats *d = &sm->phase[CONFIG_DECODE];
  assert_int_equal(sm->idle_mode, CONFIG_IDLE_GATED);
  assert_near(sm->idle_w_per_chip, s.idle_w_mode[CONFIG_IDLE_GATED][CONFIG_POLICY_ENPU_ALL], 0);
  assert_true(q[1].finish_ns > 1.1e9); /* r1 still decodes when its instance drains */
  assert_int_equal(d->sleeps, 1);
  assert_int_equal(d->wakes, 0);
  assert_near(d->asleep_node_ns, sm->horizon_ns - q[1].finish_ns, 1e-3);
  assert_near(d->sleep_energy_nj, (sm->horizon_ns - q[1].finish_ns) * 4 * 10, 1e-6 * d->sleep_energy_nj);
  assert_near(d->idle_energy_nj, pool_idle_nj(sm, &cl, CONFIG_DECODE), 1e-6 * d->idle_energy_nj);
  /* r2 joined r0 on instance 0: the drained instance took nothing new */
  assert_true(q[2].finish_ns < q[1].finish_ns || q[1].finish_ns < q[2].arrival_ns + q[2].ttft_ns);
  assert_near(sm->kv_bytes, so->kv_bytes, 0);
  assert_near(sm->kv_energy_nj, so->kv_energy_nj, 0);
  for (int i = 0; i < 3; i++) assert_true(q[i].status == REPLAY_DONE && qo[i].status == REPLAY_DONE);
  assert_true(d->idle_energy_nj < so->phase[CONFIG_DECODE].idle_energy_nj);
  replay_result_free(on);
  replay_result_free(r);
  replay_trace_free(t);
}

/* Names carry the fleet; bad ones say what is wrong. Chip power states set by path. */
void test_fleet_names(void **state) {
  ctx *c = *state;
  replay_job j;
  char base[64];
  enpu_err err = {0};
  assert_int_equal(replay_job_parse("enpu-all@gated+as", &j, base, sizeof base, &err), 0);
  assert_string_equal(j.policy, "enpu-all");
  assert_true(j.idle_set && j.idle_mode == CONFIG_IDLE_GATED && j.autoscale);
  assert_int_equal(replay_job_parse("nodvfs+as", &j, base, sizeof base, &err), 0);
  assert_true(!j.idle_set && j.autoscale && !j.predictive);
  assert_int_equal(replay_job_parse("enpu-all@lowest-state+pas", &j, base, sizeof base, &err), 0);
  assert_string_equal(j.policy, "enpu-all");
  assert_true(j.idle_set && j.idle_mode == CONFIG_IDLE_LOWEST_STATE && j.autoscale && j.predictive);
  /* A policy's own "@shadow=N" variant is its name, not an idle mode */
  assert_int_equal(replay_job_parse("enpu-all@shadow=0", &j, base, sizeof base, &err), 0);
  assert_string_equal(j.policy, "enpu-all@shadow=0");
  assert_true(!j.idle_set && !j.autoscale);
  assert_int_equal(replay_job_parse("enpu-all@shadow=8@gated+as", &j, base, sizeof base, &err), 0);
  assert_string_equal(j.policy, "enpu-all@shadow=8");
  assert_true(j.idle_set && j.idle_mode == CONFIG_IDLE_GATED && j.autoscale);
  assert_int_equal(replay_job_parse("nodvfs@nap", &j, base, sizeof base, &err), ENPU_ERR_INVALID);
  assert_non_null(strstr(err.msg, "nap"));
  assert_int_equal(replay_job_parse("nodvfs@sleep+as", &j, base, sizeof base, &err), ENPU_ERR_INVALID);
  config_chip chip = *c->chip;
  assert_int_equal(config_chip_set(&chip, "power_states.deep_sleep.wake_ms=100", &err), 0);
  assert_near(chip.deep_sleep.wake_ms, 100, 0);
  assert_int_equal(config_chip_set(&chip, "power_states.deep_sleep.w=-1", &err), ENPU_ERR_RANGE);
  assert_int_equal(config_chip_set(&chip, "power_states.nap.w=1", &err), ENPU_ERR_INVALID);
  /* autoscaling needs the chip's deep sleep, gated idle its gating: refused, saying so */
  replay_setup bare = c->setup;
  bare.has_deep_sleep = false;
  bare.idle_w_mode[CONFIG_IDLE_GATED][CONFIG_POLICY_NODVFS] = NAN;
  replay_trace *t = parse_ok("TIMESTAMP,ContextTokens,GeneratedTokens\n2023-11-16 18:00:00,100,2\n");
  replay_result *r = NULL;
  assert_int_equal(replay_run(c->ps, "nodvfs+as", t, &bare, &r, &err), ENPU_ERR_INVALID);
  assert_non_null(strstr(err.msg, "power_states"));
  assert_int_equal(replay_run(c->ps, "nodvfs@gated", t, &bare, &r, &err), ENPU_ERR_INVALID);
  assert_non_null(strstr(err.msg, "gating"));
  assert_null(r);
  replay_trace_free(t);
  /* the shipped chip's states, ordered as their physics: peak > lowest V/f > gated > deep sleep */
  const replay_setup *s = &c->setup;
  const int ea = CONFIG_POLICY_ENPU_ALL;
  assert_true(s->has_deep_sleep);
  assert_true(s->idle_w_mode[CONFIG_IDLE_PEAK][ea] > s->idle_w_mode[CONFIG_IDLE_LOWEST_STATE][ea]);
  assert_true(s->idle_w_mode[CONFIG_IDLE_LOWEST_STATE][ea] > s->idle_w_mode[CONFIG_IDLE_GATED][ea]);
  assert_true(s->idle_w_mode[CONFIG_IDLE_GATED][ea] > s->sleep_w_per_chip);
  assert_near(s->wake_ns, c->chip->deep_sleep.wake_ms * 1e6, 0);
}
