/* replay_switch.c — the scheduler's burst rules beyond the paper's safeguards
 * (config_safeguards): mid-batch plan switching and the predictive T_target cap.
 *
 * Switching ("switching" and "predictive"). The paper's safeguard 1 tests the queue
 * only when a batch starts (§3.4: a batch "will not directly cause any request in the
 * queue to violate SLO"), so a batch that started on a slow plan just before a burst
 * holds its node while the queue grows. A chip changes a rail's V/f per operator (the
 * plans are per-operator states), so the test runs again at every arrival that finds a
 * queue, over the whole queue: the first safeguard1_scan waiting requests drained in
 * order at their fastest plans onto the nodes as they free (replay_drain_bounds) must each
 * start in time for its deadline. A running prefill batch that ends after the bound its
 * node gets switches, at its next operator boundary, to the suffix of the slowest plan
 * of its bucket that ends within the bound — down to the fastest, when none does
 * (planstore_lookup_suffix, as a serving runtime would). A switch only ever speeds a
 * batch up. It is charged the chip's largest V/f move (replay_setup.switch_ns, _nj).
 * Decode is not switched: the scheduler picks a decode node's plan again at every
 * iteration (tens of ms), which is already a re-targeting at every operator group.
 * Progress inside a batch is measured in op instances, spread evenly over its time at
 * its current plan (the pricing planstore_lookup_suffix uses).
 *
 * Predictive ("predictive"). T_target is capped at the batch's fastest time × u_max / u,
 * u the prefill pool's utilisation predicted from recent arrivals and the work queued
 * (each request at its fastest single-request prefill), u_max = 1 − β / √nodes. The
 * arrivals are counted over two windows and the busier one taken: predictive_window_s
 * (default the shortest TTFT SLO) sees a burst within the time its tightest requests
 * have, predictive_hold_s (default the longest) remembers it for as long as a request
 * it queued may still be waiting, so a lull inside a burst does not slow batches the
 * next wave needs. Square-root
 * staffing (Halfin and Whitt, "Heavy-traffic limits for queues with many exponential
 * servers", Operations Research 29(3), 1981) keeps a pool of n servers in the regime
 * where waits stay short when its load leaves β·√n servers' headroom — a request
 * waits at all with probability 1 / (1 + β Φ(β) / φ(β)), and the default β makes that
 * safeguard 2's tolerated miss fraction (config_cluster.c); slowing batches by a factor
 * multiplies the pool's load by it, so the cap keeps the slowed load within that
 * margin. When u ≥ u_max the batch runs its fastest plan. */
#include <math.h>

#include "replay_internal.h"

/* ---- the predictive window ------------------------------------------------------- */

/* Drop the arrivals before now − window_s from a window's sum. */
static void predict_trim(sim *s, double window_s, size_t *head, double *sum) {
  const double from = s->now_ns - window_s * 1e9;
  while (*head < s->arrived && s->rq[*head].arrival_ns < from) *sum -= s->st[(*head)++].fast_prefill_ns;
  if (*head == s->arrived) *sum = 0; /* no drift from the subtractions */
}

void replay_predict_admitted(sim *s, int32_t i) {
  s->queued_fast_ns += s->st[i].fast_prefill_ns;
  s->recent_fast_ns += s->st[i].fast_prefill_ns;
  s->hold_fast_ns += s->st[i].fast_prefill_ns;
}

void replay_predict_dispatched(sim *s, size_t first, size_t count) {
  for (size_t k = first; k < first + count; k++) s->queued_fast_ns -= s->st[s->pq[k]].fast_prefill_ns;
  if (s->pq_head + count == s->pq_tail) s->queued_fast_ns = 0;
}

double replay_predictive_u_max(double beta, int prefill_nodes) { return 1.0 - beta / sqrt((double)prefill_nodes); }

double replay_predictive_cap_ns(sim *s, double fast_ns) {
  if (s->safeguards != CONFIG_SAFEGUARDS_PREDICTIVE) return INFINITY;
  const config_scheduler *sc = &s->cl->scheduler;
  predict_trim(s, sc->predictive_window_s, &s->rate_head, &s->recent_fast_ns);
  predict_trim(s, sc->predictive_hold_s, &s->hold_head, &s->hold_fast_ns);
  const double nodes = s->cl->node[CONFIG_PREFILL].nodes, queued = fmax(0.0, s->queued_fast_ns);
  const double u_max = replay_predictive_u_max(s->cl->scheduler.predictive_beta, s->cl->node[CONFIG_PREFILL].nodes);
  const double u = fmax((s->recent_fast_ns + queued) / (sc->predictive_window_s * 1e9),
                        (s->hold_fast_ns + queued) / (sc->predictive_hold_s * 1e9)) /
                   nodes;
  if (!(u > 0)) return INFINITY;
  return u >= u_max ? fast_ns : fast_ns * u_max / u;
}

double replay_predict_load(sim *s) {
  const config_scheduler *sc = &s->cl->scheduler;
  predict_trim(s, sc->predictive_window_s, &s->rate_head, &s->recent_fast_ns);
  predict_trim(s, sc->predictive_hold_s, &s->hold_head, &s->hold_fast_ns);
  const double queued = fmax(0.0, s->queued_fast_ns);
  return fmax((s->recent_fast_ns + queued) / (sc->predictive_window_s * 1e9),
              (s->hold_fast_ns + queued) / (sc->predictive_hold_s * 1e9));
}

/* ---- mid-batch switching ----------------------------------------------------------- */

int replay_switch_batch_init(sim *s, node_batch *b, enpu_err *err) {
  b->mark_ns = b->start_ns;
  b->done_frac = b->done_nj = 0;
  b->unit_ns = b->c.pl.time_ns;
  b->unit_nj = b->energy_nj;
  b->switched = false;
  b->instances = 0;
  if (s->safeguards == CONFIG_SAFEGUARDS_PAPER || b->c.pl.walk_prefix == 0) return ENPU_OK;
  b->instances = planstore_plan_instance_count(s->ps, &b->c.pl);
  ENPU_RETURN_IF(b->instances == 0, err, ENPU_ERR_INTERNAL, "prefill plan of bucket batch %d seq %d has no ops",
                 b->c.pl.batch, b->c.pl.seq);
  return ENPU_OK;
}

/* Switch node `node`'s batch b to the slowest suffix that ends by end_ns (the fastest
 * when none does), if that is faster than its plan. */
static int switch_batch(sim *s, int node, node_batch *b, double end_ns, enpu_err *err) {
  const double n = (double)b->instances;
  const double progress = b->done_frac + fmax(0.0, s->now_ns - b->mark_ns) / b->unit_ns;
  const uint64_t k = (uint64_t)ceil(fmin(1.0, progress) * n - 1e-9); /* next operator boundary */
  if (k >= b->instances) return ENPU_OK;
  const double fk = fmax(b->done_frac, (double)k / n);
  const double at_ns = b->mark_ns + (fk - b->done_frac) * b->unit_ns;
  planstore_plan rest;
  const int rc = planstore_lookup_suffix(s->ps, &b->c.pl, k, end_ns - at_ns - s->setup->switch_ns, &rest, NULL);
  if (rc != ENPU_OK && rc != ENPU_ERR_INFEASIBLE)
    return planstore_lookup_suffix(s->ps, &b->c.pl, k, end_ns - at_ns, &rest, err);
  if (rest.walk_prefix >= b->c.pl.walk_prefix) return ENPU_OK; /* nothing faster to switch to */
  const double chips = s->cl->node[CONFIG_PREFILL].chips;
  const double switch_nj = s->setup->switch_nj_per_chip * chips, rest_nj = rest.energy_nj * chips;
  replay_phase_stats *ph = &s->res->summary.phase[CONFIG_PREFILL];
  ph->switched += !b->switched;
  ph->switches++;
  ph->switch_nj += switch_nj;
  ph->switch_extra_nj += rest_nj - (1 - fk) * b->unit_nj;
  b->switched = true;
  b->done_nj += (fk - b->done_frac) * b->unit_nj + switch_nj;
  b->done_frac = fk;
  b->mark_ns = at_ns + s->setup->switch_ns;
  b->unit_ns = rest.time_ns / (1 - fk);
  b->unit_nj = rest_nj / (1 - fk);
  b->c.pl.walk_prefix = rest.walk_prefix;
  b->end_ns = b->mark_ns + rest.time_ns;
  b->energy_nj = b->done_nj + rest_nj;
  return replay_batch_push_done(s, CONFIG_PREFILL, node, b, err);
}

/* The queue drained at its fastest plans: each of the first safeguard1_scan waiting
 * requests in order, alone, on the node that frees first (after the batch it runs and
 * the waiting requests already given to it). A request must start by its deadline minus
 * its fastest plan, so its node's running batch must end by that minus the queued work
 * ahead of it there: drain_bound_ns per node (INFINITY when nothing binds). Alone is
 * safeguard 1's estimate; batching only serves the queue sooner. */
void replay_drain_bounds(sim *s) {
  const int nodes = s->cl->node[CONFIG_PREFILL].nodes;
  double *free_ns = s->drain_free_ns, *bound = s->drain_bound_ns;
  for (int k = 0; k < nodes; k++) {
    const prefill_node *pn = &s->pnodes[k];
    free_ns[k] = pn->busy ? pn->batch.end_ns : s->now_ns + (replay_node_asleep(s, (size_t)k) ? s->wake_ns : 0);
    if (s->fleet_state) /* autoscaling: a node taking no new work never frees for the queue, a waking one
                           once awake */
      free_ns[k] = s->fleet_state[k] != REPLAY_FLEET_ACTIVE ? INFINITY : fmax(free_ns[k], s->fleet_ready_ns[k]);
    bound[k] = INFINITY;
  }
  double *ahead = s->drain_ahead_ns; /* queued work given to each node so far */
  for (int k = 0; k < nodes; k++) ahead[k] = 0;
  const size_t scan = (size_t)s->cl->scheduler.safeguard1_scan;
  for (size_t q = s->pq_head; q < s->pq_tail && q < s->pq_head + scan; q++) {
    int m = 0;
    for (int k = 1; k < nodes; k++) m = free_ns[k] + ahead[k] < free_ns[m] + ahead[m] ? k : m;
    const int32_t i = s->pq[q];
    const double fast = s->st[i].fast_prefill_ns;
    bound[m] = fmin(bound[m], s->res->requests[i].arrival_ns + s->res->requests[i].ttft_slo_ns - fast - ahead[m]);
    ahead[m] += fast;
  }
}

int replay_switch_prefill(sim *s, enpu_err *err) {
  if (s->safeguards == CONFIG_SAFEGUARDS_PAPER || s->gov) return ENPU_OK;
  replay_drain_bounds(s);
  for (int k = 0; k < s->cl->node[CONFIG_PREFILL].nodes; k++) {
    node_batch *b = &s->pnodes[k].batch;
    if (s->pnodes[k].busy && b->instances && b->c.pl.walk_prefix > 0 && b->end_ns > s->drain_bound_ns[k])
      ENPU_FORWARD(switch_batch(s, k, b, s->drain_bound_ns[k], err));
  }
  return ENPU_OK;
}
