/* replay_gov.c — online governors in the replay (replay.h): the control loop, what a
 * governor observes of a node, the ondemand, pid and fixed governors (the PELM agent is
 * in replay_pelm.c), how an action reaches the node (a running batch is re-timed, an
 * idle node's idle power changes), and the actions and speculation per window.
 *
 * Control loop: at every multiple of the control period every node's period closes —
 * its busy time, its energy (batches as they ran, idle time at its state's idle power),
 * its batches and how many of them were slower than their SLO target (the scheduler's
 * T_target: the time left to the tightest deadline) — and its governor decides. Decisions
 * of one instant are taken for the nodes in index order; the loop runs before any event
 * at the same time, so a run is deterministic.
 *
 * The governors:
 *  - ondemand (Linux cpufreq ondemand): load = busy share of the period; above
 *    up_threshold (80 %, the kernel's default) the peak state, else the lowest state whose
 *    frequency covers min + load × (max − min).
 *  - pid: velocity-form PI control of the node's SLO margin (min over its batches of
 *    1 − time / target; 1 for an idle period) toward a set point of 0.2, on a control
 *    variable u in [0, 1] (state = 1 + u × (peak − 1)): u −= Kp Δe + Ki e, Kp 0.3, Ki 0.15
 *    per period (a stable, moderately damped loop for a first-order plant; not tuned to
 *    this trace).
 *  - pelm: the DQN of replay_pelm.c on the observation below; reward
 *    −(energy share + w · late share) / (1 + w).
 *  - fixed: one state (and one speculative configuration) throughout.
 * Observation (REPLAY_PELM_NOBS values in about [0, 1]): phase, busy share, state / peak,
 * energy / (chips × TDP × period), late share, SLO margin, queue (prefill: waiting
 * requests per prefill node q/(q+4); decode: waiting and inbound w/(w+8)), occupancy
 * (decode: members / max batch; prefill: running), batches b/(b+4), and the node's
 * draft depth / layers, horizon / 8, verification depth / layers. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "replay_internal.h"

#define ONDEMAND_UP_THRESHOLD 0.8
#define PID_SETPOINT 0.2
#define PID_KP 0.3
#define PID_KI 0.15

static const char *const gov_names[REPLAY_NGOV] = {"ondemand", "pid", "pelm", "fixed"};

const char *replay_governor_name(int kind) { return kind >= 0 && kind < REPLAY_NGOV ? gov_names[kind] : "?"; }

int replay_governor_parse(const char *name, replay_governor *out, enpu_err *err) {
  *out = (replay_governor){.control_ms = 100, .learn = true};
  for (int k = 0; k < REPLAY_NGOV; k++)
    if (k != REPLAY_GOV_FIXED && !strcmp(name, gov_names[k])) {
      out->kind = k;
      return ENPU_OK;
    }
  if (!strcmp(name, "pelm-lossless")) {
    out->kind = REPLAY_GOV_PELM;
    out->lossless = true;
    return ENPU_OK;
  }
  char *end = NULL;
  if (!strncmp(name, "fixed:", 6)) {
    const long st = strtol(name + 6, &end, 10);
    if (end != name + 6 && !*end && st >= 1 && st <= REPLAY_MAX_STATE) {
      out->kind = REPLAY_GOV_FIXED;
      out->fixed_state = (int)st;
      return ENPU_OK;
    }
  }
  return enpu_errorf(err, ENPU_ERR_INVALID,
                     "unknown governor '%s' (ondemand, pid, pelm, pelm-lossless or fixed:S with S a V/f state)",
                     name);
}

/* ---- nodes --------------------------------------------------------------------------- */

static size_t nprefill(const sim *s) { return (size_t)s->cl->node[CONFIG_PREFILL].nodes; }
static size_t nnodes(const sim *s) { return nprefill(s) + (size_t)s->cl->node[CONFIG_DECODE].nodes; }
static int phase_of(const sim *s, size_t k) { return k < nprefill(s) ? CONFIG_PREFILL : CONFIG_DECODE; }

static node_batch *batch_of(sim *s, size_t k) {
  return k < nprefill(s) ? &s->pnodes[k].batch : &s->dnodes[k - nprefill(s)].batch;
}

static bool busy(const sim *s, size_t k) {
  return k < nprefill(s) ? s->pnodes[k].busy : s->dnodes[k - nprefill(s)].busy;
}

/* Energy of the running batch from the period's accrual mark to `upto`. */
static void accrue(sim *s, size_t k, const node_batch *b, double upto) {
  gov_node *g = &s->gov[k];
  const double from = fmax(g->acc_ns, b->start_ns);
  if (upto > from) {
    g->busy_ns += upto - from;
    g->energy_nj += (upto - from) * b->unit_nj / b->unit_ns;
  }
  g->acc_ns = fmax(g->acc_ns, upto);
}

void replay_gov_batch_ended(sim *s, size_t node, const node_batch *b) { accrue(s, node, b, b->end_ns); }

/* A batch of duration dur_ns against its SLO target in the period's QoE counters. */
static void count_batch(gov_node *g, double dur_ns, double target_ns) {
  g->batches++;
  g->late += dur_ns > target_ns;
  g->margin = fmin(g->margin, target_ns > 0 ? 1 - dur_ns / target_ns : -1);
}

int replay_gov_choose(sim *s, size_t node, double target_ns, node_batch *b, enpu_err *err) {
  gov_node *g = &s->gov[node];
  b->state = g->state;
  ENPU_FORWARD(replay_uniform_plan(s, &b->work.base, b->state, &b->c.pl, err));
  ENPU_FORWARD(replay_gov_work_cost(s, &b->work, b->state, &b->unit_ns, &b->unit_nj, err));
  replay_phase_stats *ph = &s->res->summary.phase[b->work.phase];
  ph->slowed += b->state < s->setup->peak_state;
  ph->late += b->unit_ns > target_ns;
  b->target_ns = target_ns;
  count_batch(g, b->unit_ns, target_ns);
  return ENPU_OK;
}

/* The node's batch runs at `state` from now: the rest of its work at that state's pace.
 * A batch ending at this very instant is left alone (its end event is due now: the tick
 * runs before the events of its time). */
static int retime(sim *s, size_t k, int state, enpu_err *err) {
  node_batch *b = batch_of(s, k);
  if (b->end_ns <= s->now_ns) return ENPU_OK;
  const double frac = (s->now_ns - b->mark_ns) / b->unit_ns;
  b->done_frac += frac;
  b->done_nj += frac * b->unit_nj;
  b->state = state;
  b->mark_ns = s->now_ns;
  ENPU_FORWARD(replay_gov_work_cost(s, &b->work, state, &b->unit_ns, &b->unit_nj, err));
  const double left = fmax(0, 1 - b->done_frac);
  b->end_ns = s->now_ns + left * b->unit_ns;
  b->energy_nj = b->done_nj + left * b->unit_nj;
  const size_t np = nprefill(s);
  return replay_batch_push_done(s, phase_of(s, k), (int)(k < np ? k : k - np), b, err);
}

/* Apply a decision: a busy node's batch is re-timed, an idle node's idle time so far is
 * charged at the old state's power. */
static int apply_state(sim *s, size_t k, int state, enpu_err *err) {
  gov_node *g = &s->gov[k];
  if (state == g->state) return ENPU_OK;
  s->res->gov.state_changes++;
  replay_result *r = s->res;
  if (busy(s, k)) {
    ENPU_FORWARD(retime(s, k, state, err));
  } else {
    ENPU_FORWARD(replay_account_idle(r, phase_of(s, k), k, replay_idle_from(r, k), s->now_ns, err));
    r->idle_mark_ns[k] = s->now_ns;
  }
  g->state = state;
  if (s->cl->idle.mode != CONFIG_IDLE_PEAK) r->idle_w_node[k] = s->setup->idle_w_state[state];
  return ENPU_OK;
}

/* ---- observation, reward, decisions -------------------------------------------------- */

static void observe(const sim *s, size_t k, const gov_node *g, double obs[REPLAY_PELM_NOBS]) {
  const int ph = phase_of(s, k);
  const double period = s->period_ns, peak = s->setup->peak_state, layers = s->setup->model->layers;
  const double chips = s->cl->node[ph].chips;
  double queue, occupancy;
  if (ph == CONFIG_PREFILL) {
    const double q = (double)(s->pq_tail - s->pq_head) / (double)nprefill(s);
    queue = q / (q + 4);
    occupancy = busy(s, k);
  } else {
    const decode_node *dn = &s->dnodes[k - nprefill(s)];
    const double w = (double)(dn->wn - dn->whead + dn->inbound);
    queue = w / (w + 8);
    occupancy = (double)dn->n / s->max_decode;
  }
  const double b = (double)g->batches;
  obs[0] = ph;
  obs[1] = g->busy_ns / period;
  obs[2] = g->state / peak;
  obs[3] = g->energy_nj / (chips * s->setup->tdp_w * period);
  obs[4] = b > 0 ? (double)g->late / b : 0;
  obs[5] = fmax(-1, fmin(1, g->margin));
  obs[6] = queue;
  obs[7] = occupancy;
  obs[8] = b / (b + 4);
  obs[9] = g->spec.exit_layers / layers;
  obs[10] = g->spec.draft_tokens / 8.0;
  obs[11] = (g->spec.verify_layers ? g->spec.verify_layers : layers) / layers;
}

static int ondemand_state(const sim *s, const gov_node *g) {
  const int peak = s->setup->peak_state;
  const double load = g->busy_ns / s->period_ns;
  if (load > ONDEMAND_UP_THRESHOLD) return peak;
  return (int)fmin(peak, ceil(1 + load * (peak - 1)));
}

static int pid_state(const sim *s, gov_node *g) {
  const double e = (g->batches ? fmax(-1, g->margin) : 1) - PID_SETPOINT;
  g->pid_u = fmax(0, fmin(1, g->pid_u - PID_KP * (e - g->pid_prev) - PID_KI * e));
  g->pid_prev = e;
  return 1 + (int)lround(g->pid_u * (s->setup->peak_state - 1));
}

/* The PELM agent's decision for node k, remembering the transition the reward closes. */
static void pelm_decide(sim *s, size_t k, gov_node *g, const double obs[REPLAY_PELM_NOBS], double reward) {
  replay_pelm *a = s->job->governor->pelm;
  const bool learn = s->job->governor->learn;
  if (g->has_obs && learn) replay_pelm_remember(a, g->obs, g->action, reward, obs, phase_of(s, k));
  replay_pelm_act(a, obs, learn, s->now_ns, g->action);
  memcpy(g->obs, obs, sizeof g->obs);
  g->has_obs = true;
  if (phase_of(s, k) == CONFIG_PREFILL) return;
  const int ns = replay_pelm_draft_of(a, g->action[3]);
  const int ex = ns ? replay_pelm_exit_of(a, g->action[1]) : 0, vd = replay_pelm_verify_of(a, g->action[2]);
  g->spec = (replay_spec){ex, ns, vd > ex ? vd : 0};
}

/* One node's decision at the end of its period; *reward is what the agent was paid. */
static int decide(sim *s, size_t k, double *reward, enpu_err *err) {
  gov_node *g = &s->gov[k];
  const replay_governor *gv = s->job->governor;
  const int ph = phase_of(s, k);
  const double idle_ns = fmax(0, s->period_ns - g->busy_ns);
  g->energy_nj += idle_ns * s->res->idle_w_node[k] * s->cl->node[ph].chips;
  double obs[REPLAY_PELM_NOBS];
  observe(s, k, g, obs);
  int state = g->state;
  *reward = NAN;
  switch (gv->kind) {
  case REPLAY_GOV_ONDEMAND: state = ondemand_state(s, g); break;
  case REPLAY_GOV_PID: state = pid_state(s, g); break;
  case REPLAY_GOV_FIXED: state = gv->fixed_state; break;
  default: {
    const double w = replay_pelm_qoe_weight(gv->pelm);
    *reward = -(obs[3] + w * obs[4]) / (1 + w);
    pelm_decide(s, k, g, obs, *reward);
    state = g->action[0] + 1;
  }
  }
  g->busy_ns = g->energy_nj = 0;
  g->batches = g->late = 0;
  g->margin = 1;
  return apply_state(s, k, state, err);
}

/* ---- windows ------------------------------------------------------------------------- */

enum { GT_PREFILL = 0, GT_DECODE = 1, GT_ITER = 2, GT_SPEC = 3, GT_N = 4 };

static int gov_window(replay_result *r, double t_ns, replay_gov_window **w, double **time_ns, enpu_err *err) {
  const size_t i = (size_t)(t_ns / REPLAY_WINDOW_NS);
  if (i >= r->gov_windows_cap) {
    size_t cap = r->gov_windows_cap, cap2 = r->gov_windows_cap * GT_N;
    ENPU_RETURN_IF(enpu_grow((void **)&r->gov_windows, &cap, i + 1, sizeof *r->gov_windows) < 0 ||
                       enpu_grow((void **)&r->gov_time_ns, &cap2, cap * GT_N, sizeof *r->gov_time_ns) < 0,
                   err, ENPU_ERR_NOMEM, "out of memory (governor windows)");
    memset(r->gov_windows + r->gov_windows_cap, 0, (cap - r->gov_windows_cap) * sizeof *r->gov_windows);
    memset(r->gov_time_ns + r->gov_windows_cap * GT_N, 0,
           (cap - r->gov_windows_cap) * GT_N * sizeof *r->gov_time_ns);
    r->gov_windows_cap = cap;
  }
  *w = &r->gov_windows[i];
  *time_ns = &r->gov_time_ns[i * GT_N];
  return ENPU_OK;
}

void replay_spec_count(sim *s, const node_batch *b, size_t n) {
  replay_gov_summary *gs = &s->res->gov;
  const replay_spec *sp = &b->work.spec;
  const double dur = b->end_ns - b->start_ns, layers = s->setup->model->layers;
  if (sp->exit_layers) gs->spec_rounds++;
  if (sp->exit_layers) gs->mean_tokens_per_round += b->work.tokens;
  if (sp->verify_layers && sp->verify_layers < layers) gs->lossy_tokens += n;
  replay_gov_window *w = NULL;
  double *t = NULL;
  if (gov_window(s->res, b->start_ns, &w, &t, NULL) < 0) return; /* the per-window view only */
  t[GT_ITER] += dur;
  if (!sp->exit_layers) return;
  t[GT_SPEC] += dur;
  w->exit_mean += sp->exit_layers * dur;
  w->draft_mean += sp->draft_tokens * dur;
  w->verify_mean += (sp->verify_layers ? sp->verify_layers : layers) * dur;
}

/* ---- the loop -------------------------------------------------------------------------- */

static int tick(sim *s, enpu_err *err) {
  replay_gov_window *w = NULL;
  double *t = NULL;
  ENPU_FORWARD(gov_window(s->res, s->now_ns - s->period_ns, &w, &t, err));
  for (size_t k = 0; k < nnodes(s); k++) {
    const node_batch *b = batch_of(s, k);
    if (busy(s, k)) accrue(s, k, b, s->now_ns);
    /* A batch running since before the period counts in it too, as it now stands. */
    if (busy(s, k) && b->start_ns < s->now_ns - s->period_ns)
      count_batch(&s->gov[k], b->end_ns - b->start_ns, b->target_ns);
    const int ph = phase_of(s, k);
    w->state_mean[ph] += s->gov[k].state * s->period_ns;
    t[ph] += s->period_ns;
    double reward;
    ENPU_FORWARD(decide(s, k, &reward, err));
    s->res->gov.decisions++;
    if (isnan(reward)) continue;
    w->reward_mean += reward;
    w->decisions++;
    const int late = s->now_ns > 0.1 * s->span_ns;
    s->reward_sum[late] += reward;
    s->reward_n[late]++;
  }
  const replay_governor *gv = s->job->governor;
  if (gv->kind == REPLAY_GOV_PELM && gv->learn && ++s->ticks % (uint64_t)replay_pelm_train_every(gv->pelm) == 0)
    ENPU_FORWARD(replay_pelm_train(gv->pelm, err));
  return ENPU_OK;
}

int replay_gov_ticks_until(sim *s, double t_ns, enpu_err *err) {
  while (s->next_tick_ns <= t_ns) {
    s->now_ns = s->next_tick_ns;
    ENPU_FORWARD(tick(s, err));
    s->next_tick_ns += s->period_ns;
  }
  return ENPU_OK;
}

int replay_gov_init(sim *s, enpu_err *err) {
  const config_model *m = s->setup->model;
  ENPU_RETURN_IF(!m || s->setup->peak_state < 2 || s->setup->peak_state > REPLAY_MAX_STATE, err, ENPU_ERR_INVALID,
                 "governors and speculative decoding need the model and 2..%d V/f states in the set-up",
                 REPLAY_MAX_STATE);
  s->dense_layers = m->moe ? m->first_dense_layers : m->layers;
  s->moe_layers = m->layers - s->dense_layers;
  s->res->gov.speculative = !s->job->governor;
  s->span_ns = s->nreq ? s->rq[s->nreq - 1].arrival_ns : 0;
  const replay_governor *gv = s->job->governor;
  if (!gv) return ENPU_OK;
  ENPU_RETURN_IF(!(gv->control_ms > 0) || !isfinite(gv->control_ms), err, ENPU_ERR_INVALID,
                 "control period %g ms: must be > 0", gv->control_ms);
  ENPU_RETURN_IF(gv->kind == REPLAY_GOV_FIXED && (gv->fixed_state < 1 || gv->fixed_state > s->setup->peak_state),
                 err, ENPU_ERR_INVALID, "fixed state %d outside the chip's 1..%d", gv->fixed_state,
                 s->setup->peak_state);
  ENPU_RETURN_IF(gv->kind == REPLAY_GOV_PELM && !gv->pelm, err, ENPU_ERR_INVALID,
                 "the pelm governor needs an agent");
  if (gv->kind == REPLAY_GOV_FIXED) ENPU_FORWARD(replay_spec_check(m, &gv->fixed_spec, err));
  const size_t n = nnodes(s);
  s->gov = enpu_calloc(n, sizeof *s->gov);
  ENPU_RETURN_IF(
      !s->gov || ENPU_CALLOC_PARTS(ENPU_PART(s->res->idle_w_node, n), ENPU_PART(s->res->idle_mark_ns, n)) < 0, err,
      ENPU_ERR_NOMEM, "out of memory (governor nodes)");
  const int peak = s->setup->peak_state;
  for (size_t k = 0; k < n; k++) {
    gov_node *g = &s->gov[k];
    g->state = gv->kind == REPLAY_GOV_FIXED ? gv->fixed_state : peak;
    if (gv->kind == REPLAY_GOV_FIXED && phase_of(s, k) == CONFIG_DECODE) g->spec = gv->fixed_spec;
    g->pid_u = 1;
    g->margin = 1;
    s->res->idle_w_node[k] = s->setup->idle_w_state[s->cl->idle.mode == CONFIG_IDLE_PEAK ? peak : g->state];
  }
  s->res->gov.governor = true;
  s->period_ns = gv->control_ms * 1e6;
  s->next_tick_ns = s->period_ns;
  return ENPU_OK;
}

void replay_gov_free(sim *s) {
  free(s->gov);
  s->gov = NULL;
}

int replay_gov_finish(sim *s, enpu_err *err) {
  replay_result *r = s->res;
  replay_gov_summary *gs = &r->gov;
  if (gs->spec_rounds) gs->mean_tokens_per_round /= (double)gs->spec_rounds;
  gs->reward_first10 = s->reward_n[0] ? s->reward_sum[0] / (double)s->reward_n[0] : NAN;
  gs->reward_last90 = s->reward_n[1] ? s->reward_sum[1] / (double)s->reward_n[1] : NAN;
  const replay_governor *gv = s->job->governor;
  if (gv && gv->kind == REPLAY_GOV_PELM) gs->updates = replay_pelm_updates(gv->pelm);
  for (size_t i = 0; i < r->gov_windows_cap; i++) {
    replay_gov_window *w = &r->gov_windows[i];
    const double *t = &r->gov_time_ns[i * GT_N];
    for (int ph = 0; ph < CONFIG_NPHASE; ph++) w->state_mean[ph] = t[ph] > 0 ? w->state_mean[ph] / t[ph] : NAN;
    w->spec_share = t[GT_ITER] > 0 ? t[GT_SPEC] / t[GT_ITER] : NAN;
    w->exit_mean = t[GT_SPEC] > 0 ? w->exit_mean / t[GT_SPEC] : NAN;
    w->draft_mean = t[GT_SPEC] > 0 ? w->draft_mean / t[GT_SPEC] : NAN;
    w->verify_mean = t[GT_SPEC] > 0 ? w->verify_mean / t[GT_SPEC] : NAN;
    w->reward_mean = w->decisions ? w->reward_mean / (double)w->decisions : NAN;
  }
  (void)err;
  return ENPU_OK;
}

const replay_gov_window *replay_result_gov_windows(const replay_result *r, size_t *count) {
  *count = r->gov_windows ? (r->gov_windows_cap < r->nwindows ? r->gov_windows_cap : r->nwindows) : 0;
  return r->gov_windows;
}

const replay_gov_summary *replay_result_gov_summary(const replay_result *r) { return &r->gov; }
