/* replay_sim.c — the discrete-event loop, admission, the prefill side and the plan
 * choice of the DVFS-aware scheduler (paper §3.4), one run per policy.
 *
 * Model (the decode side is in replay_decode.c, energy in replay_account.c, the event
 * heap and a batch's plan in replay_batch.c):
 *  - Admission: on arrival a request is checked against the store for both phases
 *    alone (prefill at its context, decode at its longest length). Beyond the largest
 *    seq bucket it is served all the same (replay_chunk.c): its prefill in chunks, its
 *    decode on the fallback. One that not even these can serve is "unservable": counted
 *    with the reason, never run, never given invented times. The others join one FCFS
 *    prefill queue shared by the prefill nodes; a chunked prefill runs alone.
 *  - SLOs: the class of its input length (TTFT) and total length (TPOT), Table 2. A
 *    request longer than the longest class gets that class's SLO scaled by the NoDVFS
 *    time of a single request at its length over that at the class's bound: the
 *    classes' SLOs are 5 × single-request latency (§2, Table 2), so the rule holds on.
 *  - Prefill batches, as a serving engine forms them (vLLM-style, padded): an idle node
 *    (awake ones first, then the lowest index) takes requests from the queue head while
 *    the batch stays within max_batch, a store bucket covers it, the padded bucket's
 *    tokens (bucket batch × bucket seq) stay within max_batch_tokens, and the padded
 *    batch's fastest plan still meets the TTFT deadline of every member that would meet
 *    it without the newcomer; else the request waits for the next node. The first
 *    request always runs.
 *  - Plans: T_target = min over the batch of the time left to its deadline (prefill:
 *    arrival + TTFT SLO − start). The store gives the plan for that exact target (the
 *    longest walk prefix within it). Below the fastest plan the fastest runs, "late".
 *  - Safeguard 1 (§3.4: the batch "will not directly cause any request in the queue to
 *    violate SLO"): the target is capped so that each of the first `safeguard1_scan`
 *    waiting requests could still start after this batch and finish at its own fastest
 *    plan alone before its deadline. A cap below the fastest plan runs the fastest
 *    ("safeguard1_fastest"), not counted late. Each queued request is checked as if it
 *    ran next (the paper's "directly"): a queue longer than the free nodes can serve in
 *    one round may still see its last requests miss.
 *  - Safeguard 2 (replay_account.c): while locked, every batch runs the fastest plan.
 *  - Beyond the paper (the cluster's safeguards, replay_switch.c): the queue-aware
 *    safeguard 1 bound at batch start and at every arrival, mid-batch switching, and
 *    the predictive cap on T_target.
 * Ties are broken by index and by event sequence number: the run is deterministic. */
#include <math.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "power.h"
#include "replay_internal.h"

/* ---- SLOs and admission ----------------------------------------------------------- */

/* Index of the first class covering `tokens`, or slo_count when longer than every one. */
static int class_of(const config_cluster *cl, int64_t tokens, bool decode) {
  for (int c = 0; c < cl->slo_count; c++)
    if (tokens <= (decode ? cl->slo[c].decode_max_tokens : cl->slo[c].prefill_max_tokens)) return c;
  return cl->slo_count;
}

/* The longest class's SLO scaled by NoDVFS single-request time at `tokens` (beyond the
 * grid: chunked or fallback, replay_chunk.c) over that at the class's bound; the SLO
 * itself when either is unknown. */
static double extrapolated_slo(const sim *s, int phase, int64_t tokens, int bound, double slo_ns) {
  planstore_plan at, ref;
  double at_ns = NAN;
  if (tokens <= INT32_MAX &&
      planstore_lookup(s->ps, s->policy, phase, 1, (int)tokens, INFINITY, &at, NULL) == ENPU_OK)
    at_ns = at.t_nodvfs_ns;
  else at_ns = replay_cover_nodvfs_ns(s, phase, tokens);
  if (!(at_ns > 0) || planstore_lookup(s->ps, s->policy, phase, 1, bound, INFINITY, &ref, NULL) != ENPU_OK ||
      !(ref.t_nodvfs_ns > 0))
    return slo_ns;
  return slo_ns * fmax(1.0, at_ns / ref.t_nodvfs_ns);
}

static void set_slos(const sim *s, replay_request_result *q) {
  const config_cluster *cl = s->cl;
  const config_slo_class *last = &cl->slo[cl->slo_count - 1];
  const int64_t total = (int64_t)q->context_tokens + q->generated_tokens;
  const int tc = class_of(cl, q->context_tokens, false), dc = class_of(cl, total, true);
  q->ttft_class = (uint8_t)(tc < cl->slo_count ? tc : cl->slo_count - 1);
  q->tpot_class = (uint8_t)(dc < cl->slo_count ? dc : cl->slo_count - 1);
  q->ttft_slo_ns = cl->slo[q->ttft_class].ttft_ms * 1e6;
  q->tpot_slo_ns = cl->slo[q->tpot_class].tpot_ms * 1e6;
  q->slo_extrapolated = tc == cl->slo_count || dc == cl->slo_count;
  if (tc == cl->slo_count)
    q->ttft_slo_ns = extrapolated_slo(s, CONFIG_PREFILL, q->context_tokens, last->prefill_max_tokens,
                                      q->ttft_slo_ns);
  if (dc == cl->slo_count)
    q->tpot_slo_ns = extrapolated_slo(s, CONFIG_DECODE, total, last->decode_max_tokens, q->tpot_slo_ns);
}

static double ttft_deadline(const sim *s, int32_t i) {
  return s->res->requests[i].arrival_ns + s->res->requests[i].ttft_slo_ns;
}

/* Whether request i can be served, and its fastest prefill alone (*fast_ns): 1 yes, 0 no
 * (why says why), < 0 error. Marks a chunked prefill. */
static int servable(sim *s, int32_t i, double *fast_ns, enpu_err *why, enpu_err *err) {
  replay_request_result *q = &s->res->requests[i];
  planstore_plan pre, dec, base;
  int ok = replay_fastest_plan(s, CONFIG_PREFILL, 1, q->context_tokens, &pre, why, err);
  *fast_ns = pre.time_ns;
  if (ok == 0 && q->context_tokens > s->cover.pre_seq[0]) {
    replay_chunked ch;
    ok = replay_chunk_plan(s, q->context_tokens, -INFINITY, &ch, why, err);
    *fast_ns = ch.pl.time_ns;
    s->st[i].chunked = ok > 0;
    q->served_by |= ok > 0 ? REPLAY_BY_CHUNKED : 0;
  }
  if (ok <= 0 || q->generated_tokens == 1) return ok;
  const int64_t longest = (int64_t)q->context_tokens + q->generated_tokens - 1;
  ok = replay_cover_decode(s, 1, longest, false, &dec, &base, why, err);
  return ok < 0 ? ok : ok > 0;
}

/* Request i arrives: servable → the prefill queue; else counted unservable. */
static int admit(sim *s, int32_t i, enpu_err *err) {
  replay_request_result *q = &s->res->requests[i];
  replay_summary *sm = &s->res->summary;
  enpu_err why = {0};
  double fast_ns = 0;
  const int ok = servable(s, i, &fast_ns, &why, err);
  if (ok < 0) return ok;
  if (!ok) {
    q->status = REPLAY_UNSERVABLE;
    q->served_by = 0;
    sm->unservable++;
    if (!sm->unservable_example[0]) snprintf(sm->unservable_example, sizeof sm->unservable_example, "%s", why.msg);
    return ENPU_OK;
  }
  s->st[i].fast_prefill_ns = fast_ns;
  s->pq[s->pq_tail++] = i;
  replay_predict_admitted(s, i);
  return ENPU_OK;
}

/* ---- prefill ----------------------------------------------------------------------- */

/* The batch a node starting at start_ns takes from the queue head (rules above):
 * *count requests, *fast the fastest plan of its bucket. */
static int form_prefill(sim *s, double start_ns, size_t *count, planstore_plan *fast, enpu_err *err) {
  const int32_t *q = &s->pq[s->pq_head];
  const size_t avail = s->pq_tail - s->pq_head;
  int len = s->rq[q[0]].context_tokens;
  *count = 1;
  if (s->st[q[0]].chunked) { /* runs alone, its chunks back to back */
    replay_chunked ch;
    const int rc = replay_chunk_plan(s, len, -INFINITY, &ch, NULL, err);
    *fast = ch.pl;
    if (rc <= 0)
      return rc < 0 ? rc : enpu_errorf(err, ENPU_ERR_INTERNAL, "admitted request %d lost its chunk buckets", q[0]);
    return ENPU_OK;
  }
  int ok = replay_fastest_plan(s, CONFIG_PREFILL, 1, len, fast, NULL, err);
  if (ok <= 0)
    return ok < 0 ? ok : enpu_errorf(err, ENPU_ERR_INTERNAL, "admitted request %d lost its bucket", q[0]);
  double tightest = ttft_deadline(s, q[0]) >= start_ns + fast->time_ns ? ttft_deadline(s, q[0]) : INFINITY;
  size_t n = 1;
  for (; n < avail && n < (size_t)s->cl->max_batch && !s->st[q[n]].chunked; n++) {
    const int len2 = s->rq[q[n]].context_tokens > len ? s->rq[q[n]].context_tokens : len;
    planstore_plan next = *fast;
    if ((int)n + 1 > fast->batch || len2 > fast->seq) { /* else the same bucket covers it */
      ok = replay_fastest_plan(s, CONFIG_PREFILL, (int)n + 1, len2, &next, NULL, err);
      if (ok < 0) return ok;
      if (!ok) break;
    }
    if ((int64_t)next.batch * next.seq > s->cl->max_batch_tokens) break;
    const double dj = ttft_deadline(s, q[n]);
    const double t = fmin(tightest, dj >= start_ns + fast->time_ns ? dj : INFINITY);
    if (t < start_ns + next.time_ns) break;
    tightest = t;
    *fast = next;
    len = len2;
  }
  *count = n;
  return ENPU_OK;
}

typedef struct {
  int node;
  double start_ns;
  planstore_plan fast;
} prefill_start;

/* A chunked prefill's batch (its one request `i`): the composed plan, or under a governor
 * the full chunk's pass at the node's state scaled to all the chunks. */
static int chunk_start(sim *s, const prefill_start *a, int32_t i, double target_ns, double cap_ns, enpu_err *err) {
  node_batch *b = &s->pnodes[a->node].batch;
  replay_chunked ch;
  const int ok = replay_chunk_plan(s, s->rq[i].context_tokens, -INFINITY, &ch, NULL, err);
  if (ok <= 0) return ok < 0 ? ok : enpu_errorf(err, ENPU_ERR_INTERNAL, "request %d lost its chunk buckets", i);
  replay_phase_stats *ph = &s->res->summary.phase[CONFIG_PREFILL];
  if (s->gov) {
    b->work = (gov_work){.phase = CONFIG_PREFILL,
                         .base = ch.base,
                         .tokens = 1,
                         .scale_t = ch.pl.t_nodvfs_ns / ch.base.t_nodvfs_ns,
                         .scale_e = ch.pl.e_nodvfs_nj / ch.base.e_nodvfs_nj};
    ENPU_FORWARD(replay_gov_choose(s, (size_t)a->node, target_ns, b, err));
    ph->chunked++;
    ph->chunks += (uint64_t)ch.chunks;
  } else {
    ENPU_FORWARD(replay_chunk_choose(s, s->rq[i].context_tokens, target_ns, cap_ns, &b->c, err));
    b->energy_nj = b->c.pl.energy_nj * s->cl->node[CONFIG_PREFILL].chips;
    ENPU_FORWARD(replay_switch_batch_init(s, b, err)); /* walk prefix 0: never switched */
  }
  ph->padded_tokens += ch.padded_tokens;
  if (ch.padded_tokens > ph->padded_max) ph->padded_max = ch.padded_tokens;
  ph->tokens += (uint64_t)s->rq[i].context_tokens;
  return replay_batch_start(s, CONFIG_PREFILL, a->node, b, err);
}

static int start_prefill(sim *s, const prefill_start *a, double cap_ns, enpu_err *err) {
  prefill_node *pn = &s->pnodes[a->node];
  double target = INFINITY;
  for (size_t k = pn->first; k < pn->first + pn->count; k++)
    target = fmin(target, ttft_deadline(s, s->pq[k]) - a->start_ns);
  node_batch *b = &pn->batch;
  b->start_ns = a->start_ns, b->members = pn->count; /* the rest is set below */
  const int32_t head = s->pq[pn->first];
  if (s->st[head].chunked) return chunk_start(s, a, head, target, cap_ns, err);
  if (s->gov) {
    b->work = (gov_work){.phase = CONFIG_PREFILL, .base = a->fast, .tokens = 1};
    ENPU_FORWARD(replay_gov_choose(s, (size_t)a->node, target, b, err));
  } else {
    const double pred_ns = replay_predictive_cap_ns(s, a->fast.time_ns);
    ENPU_FORWARD(replay_choose_plan(s, CONFIG_PREFILL, &a->fast, target, fmin(cap_ns, pred_ns), NULL, &b->c, err));
    s->res->summary.phase[CONFIG_PREFILL].predictive += b->c.safeguard1 && pred_ns < cap_ns;
    b->energy_nj = b->c.pl.energy_nj * s->cl->node[CONFIG_PREFILL].chips;
    ENPU_FORWARD(replay_switch_batch_init(s, b, err));
  }
  replay_phase_stats *ph = &s->res->summary.phase[CONFIG_PREFILL];
  const uint64_t padded = (uint64_t)b->c.pl.batch * (uint64_t)b->c.pl.seq;
  ph->padded_tokens += padded;
  if (padded > ph->padded_max) ph->padded_max = padded;
  for (size_t k = pn->first; k < pn->first + pn->count; k++) ph->tokens += (uint64_t)s->rq[s->pq[k]].context_tokens;
  return replay_batch_start(s, CONFIG_PREFILL, a->node, b, err);
}

/* Safeguard 1's bound on the end of a batch: each of the first waiting requests must
 * still be able to run alone at its fastest after it. */
static double prefill_cap_end(const sim *s) {
  double end = INFINITY;
  const size_t scan = (size_t)s->cl->scheduler.safeguard1_scan;
  for (size_t k = s->pq_head; k < s->pq_tail && k < s->pq_head + scan; k++)
    end = fmin(end, ttft_deadline(s, s->pq[k]) - s->st[s->pq[k]].fast_prefill_ns);
  return end;
}

/* Give idle prefill nodes (awake first) batches from the queue, then pick their plans
 * with the queue left behind them. */
static int dispatch_prefill(sim *s, enpu_err *err) {
  const int nodes = s->cl->node[CONFIG_PREFILL].nodes;
  prefill_start *started = (prefill_start *)s->assigned;
  int nstarted = 0;
  for (int pass = 0; pass < 2; pass++)
    for (int k = 0; k < nodes && s->pq_head < s->pq_tail; k++) {
      prefill_node *pn = &s->pnodes[k];
      if (pn->busy || !replay_fleet_accepts(s, (size_t)k) || replay_fleet_waits(s, (size_t)k) != (pass == 1))
        continue;
      prefill_start *a = &started[nstarted++];
      a->node = k;
      ENPU_FORWARD(replay_account_wake(s, CONFIG_PREFILL, (size_t)k, &a->start_ns, err));
      ENPU_FORWARD(form_prefill(s, a->start_ns, &pn->count, &a->fast, err));
      pn->first = s->pq_head;
      replay_predict_dispatched(s, pn->first, pn->count);
      s->pq_head += pn->count;
      pn->busy = true;
    }
  const double cap_end = prefill_cap_end(s);
  const bool drain = s->safeguards != CONFIG_SAFEGUARDS_PAPER && !s->gov && s->pq_head < s->pq_tail;
  for (int k = 0; drain && k < nstarted; k++) /* at their fastest until their plans are picked */
    s->pnodes[started[k].node].batch.end_ns = started[k].start_ns + started[k].fast.time_ns;
  if (drain) replay_drain_bounds(s);
  for (int k = 0; k < nstarted; k++) {
    const double end = drain ? fmin(cap_end, s->drain_bound_ns[started[k].node]) : cap_end;
    ENPU_FORWARD(start_prefill(s, &started[k], end - started[k].start_ns, err));
  }
  return ENPU_OK;
}

static int prefill_done(sim *s, int node, uint64_t batch, enpu_err *err) {
  prefill_node *pn = &s->pnodes[node];
  if (batch != pn->batch.id) return ENPU_OK; /* a state change moved its end */
  if (s->gov) replay_gov_batch_ended(s, (size_t)node, &pn->batch);
  ENPU_FORWARD(replay_account_batch(s, CONFIG_PREFILL, &pn->batch, err));
  const bool per_phase = s->cl->scheduler.safeguard2 == CONFIG_SG2_PER_PHASE;
  for (size_t k = pn->first; k < pn->first + pn->count; k++) {
    const int32_t i = s->pq[k];
    replay_request_result *q = &s->res->requests[i];
    q->energy_nj += pn->batch.energy_nj / (double)pn->count;
    q->ttft_ns = s->now_ns - q->arrival_ns;
    q->ttft_met = q->ttft_ns <= q->ttft_slo_ns;
    s->st[i].t_first_ns = s->now_ns;
    if (per_phase) replay_sg2_push(s, CONFIG_PREFILL, !q->ttft_met);
    if (q->generated_tokens == 1) {
      q->tpot_met = true;
      ENPU_FORWARD(replay_finish_request(s, i, err));
    } else {
      ENPU_FORWARD(replay_decode_route(s, (size_t)node, i, err));
    }
  }
  pn->busy = false;
  s->res->idle_since_ns[node] = s->now_ns;
  ENPU_FORWARD(replay_fleet_node_idle(s, (size_t)node, err));
  return dispatch_prefill(s, err);
}

/* ---- the run ----------------------------------------------------------------------- */

static void sim_free(sim *s) {
  free(s->heap.v);
  if (s->dnodes)
    for (int k = 0; k < s->cl->node[CONFIG_DECODE].nodes; k++) {
      free(s->dnodes[k].members);
      free(s->dnodes[k].waiting);
      free(s->dnodes[k].extra);
    }
  free(s->pnodes); /* owns the other per-node and per-request arrays */
  replay_gov_free(s);
  replay_uniform_cache_free(s);
  replay_cover_free(s);
  replay_fleet_free(s);
}

void replay_result_free(replay_result *r) {
  if (!r) return;
  free(r->requests); /* owns idle_since_ns */
  free(r->windows);
  free(r->idle_w_node); /* owns idle_mark_ns */
  free(r->gov_windows);
  free(r->gov_time_ns);
  free(r->fleet_asleep_ns);
  free(r);
}

_Static_assert(CONFIG_NPHASE == 2, "sim_init allocates one safeguard-2 window per phase");

static int sim_init(sim *s, replay_result *r, enpu_err *err) {
  const size_t n = s->nreq;
  const config_cluster *cl = s->cl;
  const size_t np = (size_t)cl->node[CONFIG_PREFILL].nodes, nd = (size_t)cl->node[CONFIG_DECODE].nodes;
  const int nomem = ENPU_CALLOC_PARTS(ENPU_PART(s->pnodes, np),
                                      {&s->assigned, np, sizeof(prefill_start)}, /* dispatch_prefill's scratch */
                                      ENPU_PART(s->dnodes, nd), ENPU_PART(s->st, n), ENPU_PART(s->pq, n),
                                      ENPU_PART(s->scratch_a, n), ENPU_PART(s->scratch_b, n),
                                      ENPU_PART(s->scratch_idx, n), ENPU_PART(s->sg2[CONFIG_PREFILL].time_ns, n),
                                      ENPU_PART(s->sg2[CONFIG_PREFILL].missed, n),
                                      ENPU_PART(s->sg2[CONFIG_DECODE].time_ns, n),
                                      ENPU_PART(s->sg2[CONFIG_DECODE].missed, n), ENPU_PART(s->drain_free_ns, np),
                                      ENPU_PART(s->drain_bound_ns, np), ENPU_PART(s->drain_ahead_ns, np)) < 0 ||
                    ENPU_CALLOC_PARTS(ENPU_PART(r->requests, n), ENPU_PART(r->idle_since_ns, np + nd)) < 0;
  ENPU_RETURN_IF(nomem, err, ENPU_ERR_NOMEM, "out of memory (replay of %zu requests)", n);
  ENPU_FORWARD(replay_cover_init(s, err)); /* extrapolated SLOs beyond the grid use it */
  for (size_t i = 0; i < n; i++) {
    const replay_request *q = &s->rq[i];
    r->requests[i] = (replay_request_result){.arrival_ns = q->arrival_ns,
                                             .ttft_ns = NAN,
                                             .tpot_ns = NAN,
                                             .finish_ns = NAN,
                                             .context_tokens = q->context_tokens,
                                             .generated_tokens = q->generated_tokens};
    set_slos(s, &r->requests[i]);
    r->summary.slo_extrapolated += r->requests[i].slo_extrapolated;
  }
  r->summary.requests = n;
  s->max_decode = cl->max_batch < cl->max_batch_tokens ? cl->max_batch : cl->max_batch_tokens;
  const bool sleep = r->summary.idle_mode == CONFIG_IDLE_SLEEP;
  s->wake_ns = sleep ? cl->idle.wake_ms * 1e6 : 0;
  s->sleep_after_ns = sleep ? cl->idle.sleep_after_ms * 1e6 : INFINITY;
  return ENPU_OK;
}

static int sim_loop(sim *s, enpu_err *err) {
  while (s->arrived < s->nreq || s->heap.n > 0) {
    const double ta = s->arrived < s->nreq ? s->rq[s->arrived].arrival_ns : INFINITY;
    const double next = s->heap.n > 0 ? fmin(s->heap.v[0].time_ns, ta) : ta;
    if (s->gov && s->next_tick_ns <= next) { /* decisions before what happens then */
      ENPU_FORWARD(replay_gov_ticks_until(s, next, err));
      continue;
    }
    if (s->fleet && s->fleet_next_ns <= next) {
      ENPU_FORWARD(replay_fleet_ticks_until(s, s->fleet_next_ns, err));    /* one decision */
      if (s->pq_head < s->pq_tail) ENPU_FORWARD(dispatch_prefill(s, err)); /* onto nodes it woke or kept */
      continue;
    }
    if (s->heap.n > 0 && s->heap.v[0].time_ns <= ta) {
      sim_event e = replay_heap_pop(&s->heap);
      s->now_ns = e.time_ns;
      int rc = e.kind == EV_PREFILL_DONE  ? prefill_done(s, e.id, e.batch, err)
               : e.kind == EV_DECODE_DONE ? replay_decode_done(s, e.id, e.batch, err)
                                          : replay_decode_kv_done(s, e.id, err);
      ENPU_FORWARD(rc);
      continue;
    }
    s->now_ns = ta;
    replay_window *w = NULL;
    ENPU_FORWARD(replay_account_window(s->res, ta, &w, err));
    w->arrivals++;
    ENPU_FORWARD(admit(s, (int32_t)s->arrived++, err));
    if (s->pq_head < s->pq_tail) ENPU_FORWARD(dispatch_prefill(s, err));
    const uint64_t queued = s->pq_tail - s->pq_head;
    if (queued > s->res->summary.peak_queue) s->res->summary.peak_queue = queued;
    if (queued) ENPU_FORWARD(replay_switch_prefill(s, err));
  }
  return ENPU_OK;
}

static bool has_policy(const planstore *ps, const char *policy) {
  for (size_t i = 0; i < planstore_policy_count(ps); i++)
    if (!strcmp(planstore_policy_name(ps, i), policy)) return true;
  return false;
}

static bool job_speculates(const replay_job *job) {
  return !job->governor && job->spec.exit_layers + job->spec.verify_layers > 0;
}

/* The store policy the job's batches come from, checked; *pol its idle-power index. */
static int check_run(const planstore *ps, const replay_job *job, const replay_trace *trace,
                     const replay_setup *setup, config_policy *pol, enpu_err *err) {
  ENPU_RETURN_IF(!ps || !job || (!job->policy && !job->governor) || !trace || !setup || !setup->cluster, err,
                 ENPU_ERR_INVALID, "replay_run: missing store, policy or governor, trace or set-up");
  const config_cluster *cl = setup->cluster;
  const char *policy = job->governor ? config_policy_name(CONFIG_POLICY_UNIFORM) : job->policy;
  ENPU_RETURN_IF(!has_policy(ps, policy) && job->governor, err, ENPU_ERR_NOT_FOUND,
                 "governors run the store's " ENPU_POLICY_NAME_UNIFORM
                 " policy, which this store lacks (add \"" ENPU_POLICY_NAME_UNIFORM
                 "\" to the job's policies and rerun the farm)");
  ENPU_RETURN_IF(!has_policy(ps, policy), err, ENPU_ERR_NOT_FOUND, "no policy '%s' in the store", policy);
  ENPU_RETURN_IF(job_speculates(job) && !has_policy(ps, config_policy_name(CONFIG_POLICY_UNIFORM)), err,
                 ENPU_ERR_NOT_FOUND,
                 "speculative decoding prices partial-depth passes with the store's " ENPU_POLICY_NAME_UNIFORM
                 " policy, which this store lacks (add \"" ENPU_POLICY_NAME_UNIFORM
                 "\" to the job's policies and rerun the farm)");
  config_policy_spec spec;
  ENPU_RETURN_IF(config_variant_of(policy), err, ENPU_ERR_INVALID,
                 "policy '%s' is compiled on a sweep point's chip: the replay runs the job chip's policies",
                 policy);
  ENPU_RETURN_IF(config_policy_spec_parse(policy, &spec) != ENPU_OK, err, ENPU_ERR_NOT_FOUND,
                 "policy '%s' of the store is not one the replay knows the idle power of", policy);
  *pol = spec.base; /* a variant idles as its base policy does */
  ENPU_RETURN_IF(!job->governor && power_policy_of(*pol)->ops == POWER_OPS_CHIPWIDE, err, ENPU_ERR_INVALID,
                 ENPU_POLICY_NAME_UNIFORM
                 " is the table of online governors (one plan per chip-wide state), not a DVFS plan the "
                 "scheduler can pick by target: run it with a governor (fixed:S for one state)");
  ENPU_RETURN_IF(cl->slo_count < 1 || cl->max_batch < 1 || cl->max_batch_tokens < 1, err, ENPU_ERR_INVALID,
                 "cluster %s: needs SLO classes and batching limits", cl->name);
  ENPU_RETURN_IF(!setup->model || !(setup->dcn_gbps_per_chip > 0) || !(setup->idle_w_per_chip[*pol] >= 0), err,
                 ENPU_ERR_INVALID, "replay set-up: needs the model, DCN bandwidth > 0 and idle power >= 0");
  ENPU_FORWARD(replay_fleet_check(job, setup, *pol, err));
  if (job_speculates(job)) {
    ENPU_FORWARD(replay_spec_check(setup->model, &job->spec, err));
  }
  return ENPU_OK;
}

static void run_name(const replay_job *job, char *out, size_t cap) {
  if (job->governor && job->governor->kind == REPLAY_GOV_FIXED)
    snprintf(out, cap, "fixed-%d", job->governor->fixed_state);
  else if (job->governor)
    snprintf(out, cap, "%s%s", replay_governor_name(job->governor->kind),
             job->governor->lossless ? "-lossless" : "");
  else
    snprintf(out, cap, "%s%s%s%s%s", job->policy, job->idle_set ? "@" : "",
             job->idle_set ? config_idle_mode_name((config_idle_mode)job->idle_mode) : "",
             job->predictive  ? "+pas"
             : job->autoscale ? "+as"
                              : "",
             job_speculates(job) ? "+sd" : "");
}

int replay_run_job(const planstore *ps, const replay_job *job, const replay_trace *trace, const replay_setup *setup,
                   replay_result **out, enpu_err *err) {
  *out = NULL;
  char base[64];
  replay_job fleet_job; /* the job with the fleet its name carries ("enpu-all@gated+as") */
  ENPU_FORWARD(replay_job_resolve(job, &fleet_job, base, sizeof base, err));
  job = &fleet_job;
  config_policy pol = CONFIG_NPOLICY; /* none until check_run names it */
  ENPU_FORWARD(check_run(ps, job, trace, setup, &pol, err));
  replay_result *r = calloc(1, sizeof *r);
  ENPU_RETURN_IF(!r, err, ENPU_ERR_NOMEM, "out of memory (replay result)");
  run_name(job, r->summary.policy, sizeof r->summary.policy);
  r->summary.origin_tod_s = trace->origin_tod_s;
  replay_fleet_run_idle(r, job, setup, pol);
  r->cluster = setup->cluster;
  r->trace_requests = trace->requests;
  const bool uniform = job->governor || job_speculates(job);
  sim s = {.ps = ps,
           .policy = job->governor ? config_policy_name(CONFIG_POLICY_UNIFORM) : job->policy,
           .setup = setup,
           .cl = setup->cluster,
           .rq = trace->requests,
           .nreq = trace->count,
           .res = r,
           .job = job,
           .uniform = uniform ? config_policy_name(CONFIG_POLICY_UNIFORM) : NULL,
           .safeguards = job->governor ? CONFIG_SAFEGUARDS_PAPER : setup->safeguards};
  r->summary.safeguards = s.safeguards;
  int rc = sim_init(&s, r, err);
  if (rc == ENPU_OK && uniform) rc = replay_gov_init(&s, err);
  if (rc == ENPU_OK && job->autoscale) rc = replay_fleet_init(&s, err);
  if (rc == ENPU_OK) rc = sim_loop(&s, err);
  if (rc == ENPU_OK && uniform) rc = replay_gov_finish(&s, err);
  if (rc == ENPU_OK) rc = replay_finish_run(&s, err);
  sim_free(&s);
  if (rc != ENPU_OK) {
    replay_result_free(r);
    return rc;
  }
  *out = r;
  return ENPU_OK;
}

int replay_run(const planstore *ps, const char *policy, const replay_trace *trace, const replay_setup *setup,
               replay_result **out, enpu_err *err) {
  const replay_job job = {.policy = policy};
  return replay_run_job(ps, &job, trace, setup, out, err);
}

/* ---- several policies on threads ---------------------------------------------------- */

typedef struct {
  const planstore *ps;
  const replay_job *jobs;
  size_t n, first, stride;
  const replay_trace *trace;
  const replay_setup *setup;
  replay_result **runs;
  int *rc;
  enpu_err *errs;
} run_batch;

/* Runs jobs first, first + stride, ...: the assignment, not the timing, decides which
 * thread runs what, and every run is independent. */
static void *policy_thread(void *arg) {
  const run_batch *j = arg;
  for (size_t i = j->first; i < j->n; i += j->stride)
    j->rc[i] = replay_run_job(j->ps, &j->jobs[i], j->trace, j->setup, &j->runs[i], &j->errs[i]);
  return NULL;
}

int replay_run_jobs(const planstore *ps, const replay_job *jobs, size_t n, const replay_trace *trace,
                    const replay_setup *setup, int threads, replay_result **runs, enpu_err *err) {
  ENPU_RETURN_IF(n == 0 || threads < 1, err, ENPU_ERR_INVALID, "replay: no policy or no thread to run");
  for (size_t i = 0; i < n; i++) runs[i] = NULL;
  const size_t nt = (size_t)threads < n ? (size_t)threads : n;
  int *rc = enpu_calloc(n, sizeof *rc);
  enpu_err *errs = enpu_calloc(n, sizeof *errs);
  run_batch *batches = enpu_calloc(nt, sizeof *batches);
  pthread_t *tids = enpu_calloc(nt, sizeof *tids);
  int status = rc && errs && batches && tids ? ENPU_OK
                                             : enpu_errorf(err, ENPU_ERR_NOMEM, "out of memory (replay jobs)");
  size_t started = 0;
  for (size_t t = 0; status == ENPU_OK && t < nt; t++) {
    batches[t] = (run_batch){ps, jobs, n, t, nt, trace, setup, runs, rc, errs};
    if (t > 0 && pthread_create(&tids[t], NULL, policy_thread, &batches[t]) != 0) break; /* its share runs below */
    started = t + 1;
  }
  if (status == ENPU_OK) policy_thread(&batches[0]);
  for (size_t t = 1; t < started; t++) pthread_join(tids[t], NULL);
  for (size_t t = started; status == ENPU_OK && t < nt; t++) policy_thread(&batches[t]);
  for (size_t i = 0; status == ENPU_OK && i < n; i++)
    if (rc[i] != ENPU_OK) {
      if (err) *err = errs[i];
      char name[64];
      run_name(&jobs[i], name, sizeof name);
      enpu_err_prefix(err, "%s %s: ", jobs[i].governor ? "governor" : "policy", name);
      status = rc[i];
    }
  if (status == ENPU_OK) status = replay_align_horizon(runs, n, err);
  for (size_t i = 0; status != ENPU_OK && i < n; i++) {
    replay_result_free(runs[i]);
    runs[i] = NULL;
  }
  free(rc), free(errs), free(batches), free(tids);
  return status;
}

int replay_run_policies(const planstore *ps, const char *const *policies, size_t n, const replay_trace *trace,
                        const replay_setup *setup, int threads, replay_result **runs, enpu_err *err) {
  replay_job *jobs = enpu_calloc(n ? n : 1, sizeof *jobs);
  ENPU_RETURN_IF(!jobs, err, ENPU_ERR_NOMEM, "out of memory (replay jobs)");
  for (size_t i = 0; i < n; i++) jobs[i] = (replay_job){.policy = policies[i]};
  const int rc = replay_run_jobs(ps, jobs, n, trace, setup, threads, runs, err);
  free(jobs);
  return rc;
}

const replay_summary *replay_result_summary(const replay_result *r) { return &r->summary; }
const replay_request_result *replay_result_requests(const replay_result *r) { return r->requests; }
const replay_window *replay_result_windows(const replay_result *r, size_t *count) {
  *count = r->nwindows;
  return r->windows;
}
