/* replay_account.c — where a run's energy and outcomes go: five-minute windows, busy,
 * idle and KV energy, safeguard 2's window, and the summary at the end; the common
 * horizon of several runs.
 *
 * Energy (nJ = W × ns):
 *  - busy: a batch's plan energy per chip × the node's chips, spread over the windows
 *    it spans in proportion to time;
 *  - idle: per node, every instant outside its batches from 0 to the horizon, at the
 *    policy's awake idle power (replay_idle_power_w) — or, with idle mode "sleep", at
 *    the sleep power once the node has been idle sleep_after_ms; a sleeping node's next
 *    batch waits wake_ms, charged at awake idle power; under autoscaling, at the chip's
 *    deep sleep power from when the fleet put the node to sleep (replay_fleet.c charges
 *    its wake-ups). Of idle energy, the asleep part is sleep energy and the wake-ups'
 *    transition energy;
 *  - KV: bytes × the cluster's DCN energy per byte, where the transfer starts.
 * The horizon is the run's own end until replay_align_horizon moves every run of a
 * trace to the latest end among them: the nodes idle from their last batch to it.
 *
 * Safeguard 2 (§3.4): in "paper" mode one window of the requests finished in the last
 * safeguard2_window_s (their whole SLO); in "per-phase" mode one per phase (TTFT at
 * the end of prefill, TPOT at the end of decode). Locked while more than
 * safeguard2_miss_fraction of the window's outcomes missed. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "replay_internal.h"

/* ---- windows ------------------------------------------------------------------------- */

int replay_account_window(replay_result *r, double t_ns, replay_window **w, enpu_err *err) {
  const size_t i = (size_t)(t_ns / REPLAY_WINDOW_NS);
  if (i >= r->nwindows) {
    if (enpu_grow((void **)&r->windows, &r->windows_cap, i + 1, sizeof *r->windows) < 0)
      return enpu_errorf(err, ENPU_ERR_NOMEM, "out of memory (%zu windows)", i + 1);
    for (size_t k = r->nwindows; k <= i; k++) {
      replay_window *x = &r->windows[k];
      *x = (replay_window){.start_ns = (double)k * REPLAY_WINDOW_NS, .length_ns = REPLAY_WINDOW_NS};
      for (int q = 0; q < REPLAY_NSLACK; q++) x->ttft_slack[q] = x->tpot_slack[q] = NAN;
    }
    r->nwindows = i + 1;
  }
  *w = &r->windows[i];
  return ENPU_OK;
}

/* What a span of node time carries, in total over the span. */
typedef struct {
  double busy_energy_nj, idle_energy_nj, busy_ns, occupancy_ns;
} span_load;

static void add_share(replay_window *w, int phase, const span_load *l, double f) {
  w->busy_energy_nj[phase] += l->busy_energy_nj * f;
  w->idle_energy_nj[phase] += l->idle_energy_nj * f;
  w->busy_node_ns[phase] += l->busy_ns * f;
  w->occupancy_ns += l->occupancy_ns * f;
}

/* Spread a span [t0, t0+dur) over the windows it overlaps, in proportion to time. */
static int spread(replay_result *r, int phase, double t0, double dur, const span_load *l, enpu_err *err) {
  const size_t first = (size_t)(t0 / REPLAY_WINDOW_NS);
  if (first < r->nwindows && t0 + dur <= r->windows[first].start_ns + REPLAY_WINDOW_NS) {
    add_share(&r->windows[first], phase, l, 1.0); /* the common case: inside one window */
    return ENPU_OK;
  }
  for (double t = t0, end = t0 + dur; t < end;) {
    replay_window *w = NULL;
    ENPU_FORWARD(replay_account_window(r, t, &w, err));
    double piece = fmin(end, w->start_ns + REPLAY_WINDOW_NS) - t;
    if (piece <= 0) piece = end - t; /* rounding at a window edge: finish in this one */
    add_share(w, phase, l, piece / dur);
    t += piece;
  }
  return ENPU_OK;
}

int replay_account_batch(sim *s, int phase, const node_batch *b, enpu_err *err) {
  replay_result *r = s->res;
  replay_phase_stats *ph = &r->summary.phase[phase];
  const double dur_ns = b->end_ns - b->start_ns, energy_nj = b->energy_nj;
  replay_window *w = NULL;
  ENPU_FORWARD(replay_account_window(r, b->start_ns, &w, err));
  w->batches[phase]++;
  w->locked[phase] += b->c.locked;
  w->safeguard1[phase] += b->c.safeguard1;
  const double occupancy = phase == CONFIG_DECODE ? (double)b->members * dur_ns : 0;
  const span_load l = {energy_nj, 0, dur_ns, occupancy};
  ENPU_FORWARD(spread(r, phase, b->start_ns, dur_ns, &l, err));
  ph->busy_energy_nj += energy_nj;
  ph->busy_node_ns += dur_ns;
  ph->occupancy_ns += occupancy;
  ph->batches++;
  /* No slack used: the fastest plan (a governor's peak state), as the batch ended. */
  const bool fastest = s->gov ? b->state >= s->setup->peak_state
                              : b->c.pl.walk_prefix == 0 && !b->c.composed_slowed;
  ph->fastest_node_ns += fastest ? dur_ns : 0;
  return ENPU_OK;
}

/* ---- idle, sleep, wake ------------------------------------------------------------- */

static int node_phase(const replay_result *r, size_t node) {
  return node < (size_t)r->cluster->node[CONFIG_PREFILL].nodes ? CONFIG_PREFILL : CONFIG_DECODE;
}

/* When an idle node falls asleep (INFINITY: never): after sleep_after_ms in idle mode
 * sleep, when autoscaling put it to sleep. */
static double sleep_at(const replay_result *r, size_t node) {
  const double fleet = r->fleet_asleep_ns ? r->fleet_asleep_ns[node] : INFINITY;
  const config_idle *idle = &r->cluster->idle;
  return r->summary.idle_mode == CONFIG_IDLE_SLEEP
             ? fmin(fleet, r->idle_since_ns[node] + idle->sleep_after_ms * 1e6)
             : fleet;
}

bool replay_node_asleep(const sim *s, size_t node) { return s->now_ns > sleep_at(s->res, node); }

double replay_idle_from(const replay_result *r, size_t node) {
  return r->idle_mark_ns ? fmax(r->idle_since_ns[node], r->idle_mark_ns[node]) : r->idle_since_ns[node];
}

/* Awake idle power of one chip of the node. */
static double idle_w(const replay_result *r, size_t node) {
  return r->idle_w_node ? r->idle_w_node[node] : r->summary.idle_w_per_chip;
}

int replay_account_idle(replay_result *r, int phase, size_t node, double from_ns, double to_ns, enpu_err *err) {
  if (!(to_ns > from_ns)) return ENPU_OK;
  const double chips = r->cluster->node[phase].chips;
  const double split = fmin(fmax(sleep_at(r, node), from_ns), to_ns);
  replay_phase_stats *ph = &r->summary.phase[phase];
  const double awake_nj = (split - from_ns) * idle_w(r, node) * chips;
  const double asleep_nj = (to_ns - split) * r->sleep_w * chips;
  if (split > from_ns)
    ENPU_FORWARD(spread(r, phase, from_ns, split - from_ns, &(span_load){0, awake_nj, 0, 0}, err));
  if (to_ns > split) ENPU_FORWARD(spread(r, phase, split, to_ns - split, &(span_load){0, asleep_nj, 0, 0}, err));
  ph->idle_energy_nj += awake_nj + asleep_nj;
  ph->sleep_energy_nj += asleep_nj;
  ph->asleep_node_ns += to_ns - split;
  return ENPU_OK;
}

int replay_account_wake(sim *s, int phase, size_t node, double *start_ns, enpu_err *err) {
  replay_result *r = s->res;
  const bool asleep = replay_node_asleep(s, node);
  ENPU_FORWARD(replay_account_idle(r, phase, node, replay_idle_from(r, node), s->now_ns, err));
  *start_ns = s->fleet_ready_ns ? fmax(s->now_ns, s->fleet_ready_ns[node]) : s->now_ns; /* woken: once awake */
  if (!asleep || !(s->wake_ns > 0)) return ENPU_OK;
  const double nj = s->wake_ns * idle_w(r, node) * r->cluster->node[phase].chips;
  ENPU_FORWARD(spread(r, phase, s->now_ns, s->wake_ns, &(span_load){0, nj, 0, 0}, err));
  r->summary.phase[phase].idle_energy_nj += nj;
  r->summary.phase[phase].transition_energy_nj += nj;
  r->summary.phase[phase].wake_node_ns += s->wake_ns;
  *start_ns += s->wake_ns;
  return ENPU_OK;
}

int replay_account_transition(replay_result *r, int phase, double from_ns, double dur_ns, double nj,
                              enpu_err *err) {
  replay_phase_stats *ph = &r->summary.phase[phase];
  if (dur_ns > 0) ENPU_FORWARD(spread(r, phase, from_ns, dur_ns, &(span_load){0, nj, 0, 0}, err));
  else {
    replay_window *w = NULL;
    ENPU_FORWARD(replay_account_window(r, from_ns, &w, err));
    w->idle_energy_nj[phase] += nj;
  }
  ph->idle_energy_nj += nj;
  ph->transition_energy_nj += nj;
  ph->wake_node_ns += dur_ns;
  return ENPU_OK;
}

int replay_account_kv(sim *s, double start_ns, double bytes, enpu_err *err) {
  const double nj = bytes * s->cl->dcn_energy_pj_per_byte * 1e-3;
  replay_window *w = NULL;
  ENPU_FORWARD(replay_account_window(s->res, start_ns, &w, err));
  w->kv_energy_nj += nj;
  s->res->summary.kv_energy_nj += nj;
  return ENPU_OK;
}

/* ---- safeguard 2 --------------------------------------------------------------------- */

void replay_sg2_push(sim *s, int window, bool missed) {
  sg2_window *g = &s->sg2[window];
  g->time_ns[g->n] = s->now_ns;
  g->missed[g->n++] = missed;
  g->missed_in_window += missed;
  g->decided_until_ns = -INFINITY;
}

/* The decision only changes when an outcome comes in or the oldest one leaves the
 * window, so it is kept until then (batches ask it at every decode iteration). */
bool replay_sg2_locked(sim *s, int phase) {
  const config_scheduler *sc = &s->cl->scheduler;
  sg2_window *g = &s->sg2[sc->safeguard2 == CONFIG_SG2_PAPER ? 0 : phase];
  if (s->now_ns < g->decided_until_ns) return g->locked;
  const double window_ns = sc->safeguard2_window_s * 1e9;
  while (g->head < g->n && g->time_ns[g->head] <= s->now_ns - window_ns)
    g->missed_in_window -= g->missed[g->head++];
  const size_t total = g->n - g->head;
  g->locked = total > 0 && (double)g->missed_in_window > sc->safeguard2_miss_fraction * (double)total;
  g->decided_until_ns = total > 0 ? g->time_ns[g->head] + window_ns : INFINITY;
  return g->locked;
}

int replay_finish_request(sim *s, int32_t i, enpu_err *err) {
  replay_request_result *q = &s->res->requests[i];
  q->finish_ns = s->now_ns;
  q->status = REPLAY_DONE;
  q->slo_met = q->ttft_met && q->tpot_met;
  if (s->cl->scheduler.safeguard2 == CONFIG_SG2_PAPER) replay_sg2_push(s, 0, !q->slo_met);
  replay_window *w = NULL;
  ENPU_FORWARD(replay_account_window(s->res, s->now_ns, &w, err));
  w->finished++;
  w->slo_met += q->slo_met;
  w->ttft_met += q->ttft_met;
  w->tpot_met += q->tpot_met;
  return ENPU_OK;
}

/* ---- the end of a run ------------------------------------------------------------------ */

/* Nearest-rank percentile of sorted v[0..n). */
static double percentile(const double *v, size_t n, double p) {
  if (n == 0) return NAN;
  size_t k = (size_t)ceil(p * (double)n);
  return v[k > 0 ? k - 1 : 0];
}

/* P1, P25, mean, P75, P99 of v[0..n) (sorted here); NaN without values. */
static void slack_stats(double *v, size_t n, double out[REPLAY_NSLACK]) {
  qsort(v, n, sizeof *v, enpu_cmp_double);
  double sum = 0;
  for (size_t k = 0; k < n; k++) sum += v[k];
  out[0] = percentile(v, n, 0.01);
  out[1] = percentile(v, n, 0.25);
  out[2] = n ? sum / (double)n : NAN;
  out[3] = percentile(v, n, 0.75);
  out[4] = percentile(v, n, 0.99);
}

/* Figure 5: the slack of the requests finished in each window. Requests are grouped by
 * window with a counting sort (scratch_idx), then each group's slacks are sorted. */
static void window_slacks(sim *s) {
  replay_result *r = s->res;
  size_t *start = calloc(r->nwindows + 1, sizeof *start);
  if (!start) return; /* the statistics stay NaN: no memory for them, nothing else lost */
  for (size_t i = 0; i < s->nreq; i++)
    if (r->requests[i].status == REPLAY_DONE) start[(size_t)(r->requests[i].finish_ns / REPLAY_WINDOW_NS) + 1]++;
  for (size_t w = 0; w < r->nwindows; w++) start[w + 1] += start[w];
  for (size_t i = 0; i < s->nreq; i++)
    if (r->requests[i].status == REPLAY_DONE)
      s->scratch_idx[start[(size_t)(r->requests[i].finish_ns / REPLAY_WINDOW_NS)]++] = i;
  for (size_t w = 0, first = 0; w < r->nwindows; first = start[w++]) { /* start[w] is now group w's end */
    size_t nt = 0, np = 0;
    for (size_t k = first; k < start[w]; k++) {
      const replay_request_result *q = &r->requests[s->scratch_idx[k]];
      s->scratch_a[nt++] = (q->ttft_slo_ns - q->ttft_ns) / q->ttft_slo_ns;
      if (q->generated_tokens > 1) s->scratch_b[np++] = (q->tpot_slo_ns - q->tpot_ns) / q->tpot_slo_ns;
    }
    slack_stats(s->scratch_a, nt, r->windows[w].ttft_slack);
    slack_stats(s->scratch_b, np, r->windows[w].tpot_slack);
  }
  free(start);
}

/* Idle energy of every node up to horizon H, windows to H, the energy totals. */
static int extend_horizon(replay_result *r, double h_ns, enpu_err *err) {
  const size_t np = (size_t)r->cluster->node[CONFIG_PREFILL].nodes,
               nd = (size_t)r->cluster->node[CONFIG_DECODE].nodes;
  for (size_t k = 0; k < np + nd; k++)
    ENPU_FORWARD(replay_account_idle(r, node_phase(r, k), k, fmax(replay_idle_from(r, k), r->summary.horizon_ns),
                                     h_ns, err));
  replay_window *w = NULL;
  ENPU_FORWARD(replay_account_window(r, h_ns, &w, err));
  for (size_t k = 0; k < r->nwindows; k++)
    r->windows[k].length_ns = fmax(0, fmin(REPLAY_WINDOW_NS, h_ns - r->windows[k].start_ns));
  replay_summary *sm = &r->summary;
  sm->horizon_ns = h_ns;
  sm->energy_nj = sm->kv_energy_nj;
  for (int ph = 0; ph < CONFIG_NPHASE; ph++) {
    sm->phase[ph].energy_nj = sm->phase[ph].busy_energy_nj + sm->phase[ph].idle_energy_nj;
    sm->energy_nj += sm->phase[ph].energy_nj;
  }
  return ENPU_OK;
}

/* Request q in its class's counts and slack sums (replay_class_stats). */
static void count_class(const sim *s, replay_summary *sm, const replay_request_result *q) {
  replay_class_stats *c = &sm->classes[q->ttft_class];
  c->requests++;
  if (q->status != REPLAY_DONE) {
    c->unservable++;
    return;
  }
  c->by[q->served_by]++;
  sm->chunked += (q->served_by & REPLAY_BY_CHUNKED) != 0;
  sm->fallback += (q->served_by & REPLAY_BY_FALLBACK) != 0;
  sm->fallback_own += q->generated_tokens > 1 &&
                      (int64_t)q->context_tokens + q->generated_tokens - 1 > s->cover.dec_seq_max;
  c->slo_met += q->slo_met;
  c->ttft_slack_sum += (q->ttft_slo_ns - q->ttft_ns) / q->ttft_slo_ns;
  c->ttft_n++;
  if (q->generated_tokens > 1) {
    c->tpot_slack_sum += (q->tpot_slo_ns - q->tpot_ns) / q->tpot_slo_ns;
    c->tpot_n++;
  }
}

int replay_finish_run(sim *s, enpu_err *err) {
  replay_result *r = s->res;
  replay_summary *sm = &r->summary;
  size_t nt = 0, np = 0;
  for (size_t i = 0; i < s->nreq; i++) {
    const replay_request_result *q = &r->requests[i];
    sm->context_tokens += (uint64_t)q->context_tokens;
    sm->generated_tokens += (uint64_t)q->generated_tokens;
    count_class(s, sm, q);
    if (q->status != REPLAY_DONE) continue;
    sm->served++;
    sm->ttft_met += q->ttft_met;
    sm->tpot_met += q->tpot_met;
    sm->slo_met += q->slo_met;
    s->scratch_a[nt++] = q->ttft_ns;
    if (q->generated_tokens > 1) {
      s->scratch_b[np++] = q->tpot_ns;
      sm->kv_transfer_total_ns += q->kv_transfer_ns;
    }
  }
  sm->slo_attainment = sm->requests ? (double)sm->slo_met / (double)sm->requests : 0;
  qsort(s->scratch_a, nt, sizeof(double), enpu_cmp_double);
  qsort(s->scratch_b, np, sizeof(double), enpu_cmp_double);
  sm->ttft_p50_ns = percentile(s->scratch_a, nt, 0.50);
  sm->ttft_p99_ns = percentile(s->scratch_a, nt, 0.99);
  sm->tpot_p50_ns = percentile(s->scratch_b, np, 0.50);
  sm->tpot_p99_ns = percentile(s->scratch_b, np, 0.99);
  sm->kv_transfer_mean_ns = np ? sm->kv_transfer_total_ns / (double)np : 0;
  sm->end_ns = s->now_ns;
  ENPU_FORWARD(extend_horizon(r, sm->end_ns, err));
  window_slacks(s);
  return ENPU_OK;
}

int replay_align_horizon(replay_result *const *runs, size_t n, enpu_err *err) {
  double h = 0;
  for (size_t i = 0; i < n; i++) {
    ENPU_RETURN_IF(runs[i]->trace_requests != runs[0]->trace_requests ||
                       runs[i]->summary.requests != runs[0]->summary.requests,
                   err, ENPU_ERR_INVALID, "replay: runs %s and %s replayed different traces",
                   runs[0]->summary.policy, runs[i]->summary.policy);
    h = fmax(h, runs[i]->summary.horizon_ns);
  }
  for (size_t i = 0; i < n; i++) ENPU_FORWARD(extend_horizon(runs[i], h, err));
  return ENPU_OK;
}

/* Utilisation of busy node-time / decode slot-time over `span_ns`. */
static void utilisation(const config_cluster *cl, double busy_prefill_ns, double occupancy_ns, double span_ns,
                        double util[CONFIG_NPHASE]) {
  const int slots = cl->max_batch < cl->max_batch_tokens ? cl->max_batch : cl->max_batch_tokens;
  util[CONFIG_PREFILL] = span_ns > 0 ? busy_prefill_ns / (cl->node[CONFIG_PREFILL].nodes * span_ns) : 0;
  util[CONFIG_DECODE] = span_ns > 0 ? occupancy_ns / ((double)cl->node[CONFIG_DECODE].nodes * slots * span_ns) : 0;
}

void replay_utilisation(const replay_result *r, double util[CONFIG_NPHASE]) {
  utilisation(r->cluster, r->summary.phase[CONFIG_PREFILL].busy_node_ns,
              r->summary.phase[CONFIG_DECODE].occupancy_ns, r->summary.horizon_ns, util);
}

void replay_busiest_window(const replay_result *r, double util[CONFIG_NPHASE]) {
  util[0] = util[1] = 0;
  for (size_t k = 0; k < r->nwindows; k++) {
    const replay_window *w = &r->windows[k];
    if (w->length_ns < REPLAY_WINDOW_NS) continue; /* the cut last window */
    double u[CONFIG_NPHASE];
    utilisation(r->cluster, w->busy_node_ns[CONFIG_PREFILL], w->occupancy_ns, w->length_ns, u);
    for (int ph = 0; ph < CONFIG_NPHASE; ph++) util[ph] = fmax(util[ph], u[ph]);
  }
}
