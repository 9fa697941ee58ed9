/* replay_sim.c — the discrete-event cluster simulation and the DVFS-aware scheduler
 * (paper §3.4), one run per policy.
 *
 * Model:
 *  - Prefill: one FCFS queue (the trace order) shared by the prefill nodes. An idle node
 *    (lowest index first) takes the longest queue prefix that fits the batching limits
 *    (max_batch requests, max_batch_tokens context tokens; the first request always) and
 *    that a store bucket covers, padded to that bucket. A request no bucket covers alone
 *    is "uncovered": counted, never run, and never given invented times.
 *  - The first token comes out of prefill (TTFT = its batch's end − arrival). The KV
 *    cache then goes to a decode node over DCN: bytes = context × KV bytes per token, at
 *    min(prefill, decode chips) × DCN GB/s, one transfer at a time per prefill node's
 *    links (the decode side's links are not modelled as a bottleneck).
 *  - Decode: each request is routed on arrival to the decode node with the fewest
 *    requests (running + waiting; lowest index on ties) and waits in that node's FIFO.
 *    At every iteration boundary the node admits waiting requests FCFS while the batch
 *    stays within max_batch (and max_batch_tokens: one token each) and a bucket covers it
 *    at the longest total length any member will reach, so a batch never outgrows the
 *    HBM (the store marks buckets that do not fit). One iteration = one forward pass of
 *    the padded bucket (batch, longest current KV length); every member gains a token.
 *  - Plans: per batch, T_target = min over the batch of the time left to its deadline:
 *    prefill: arrival + TTFT SLO − now; decode: first token + TPOT SLO × (tokens so far)
 *    − now, capped at the TPOT SLO (a request ahead of schedule gets one SLO per
 *    iteration, no more). The store gives the plan for that exact target (the longest
 *    walk prefix within it); below the fastest plan the fastest runs and the batch is
 *    counted "late".
 *  - Safeguard 1: T_target is lowered so the next request(s) waiting for this node can
 *    still meet their deadline when run at their fastest after this batch: prefill, the
 *    batch the queue would form next; decode, the head of the node's waiting FIFO.
 *  - Safeguard 2, per phase: while more than 1 % of the requests that finished the phase
 *    in the last 5 minutes missed its SLO (TTFT for prefill, TPOT for decode), every
 *    batch of that phase runs the fastest plan.
 *  - Energy: a batch costs the plan's per-chip energy × the node's chips; idle node time
 *    costs idle_w_per_chip × chips over [0, end of run]. A request's energy is its equal
 *    share of every batch it ran in.
 * Ties are broken by index and by event sequence number: the run is deterministic. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "replay_internal.h"

#define SG2_WINDOW_NS 300e9 /* safeguard 2 looks at the last 5 minutes */
#define SG2_MISS_FRACTION 0.01

enum { EV_PREFILL_DONE = 0, EV_DECODE_READY = 1, EV_DECODE_DONE = 2 };

typedef struct {
  double time_ns;
  uint64_t seq;
  int kind;
  int32_t id; /* node (done events) or request (ready) */
} sim_event;

typedef struct {
  sim_event *v;
  size_t n, cap;
  uint64_t next_seq;
} event_heap;

static int ev_less(const sim_event *a, const sim_event *b) {
  return a->time_ns < b->time_ns || (a->time_ns == b->time_ns && a->seq < b->seq);
}

static int heap_push(event_heap *h, double time_ns, int kind, int32_t id, enpu_err *err) {
  if (enpu_grow((void **)&h->v, &h->cap, h->n + 1, sizeof *h->v) < 0)
    return enpu_errorf(err, ENPU_ERR_NOMEM, "out of memory (event queue)");
  size_t i = h->n++;
  sim_event e = {time_ns, h->next_seq++, kind, id};
  while (i > 0 && ev_less(&e, &h->v[(i - 1) / 2])) {
    h->v[i] = h->v[(i - 1) / 2];
    i = (i - 1) / 2;
  }
  h->v[i] = e;
  return ENPU_OK;
}

static sim_event heap_pop(event_heap *h) {
  sim_event top = h->v[0], last = h->v[--h->n];
  size_t i = 0;
  for (;;) {
    size_t c = 2 * i + 1;
    if (c >= h->n) break;
    if (c + 1 < h->n && ev_less(&h->v[c + 1], &h->v[c])) c++;
    if (!ev_less(&h->v[c], &last)) break;
    h->v[i] = h->v[c];
    i = c;
  }
  if (h->n) h->v[i] = last;
  return top;
}

/* Outcomes of a phase in arrival order of the outcome: the safeguard 2 window. */
typedef struct {
  double *time_ns;
  uint8_t *missed;
  size_t head, n, missed_in_window;
} sg2_window;

typedef struct {
  bool busy;
  size_t first, count; /* the batch: requests [first, first+count) of the trace */
  double dcn_free_ns;
} prefill_node;

typedef struct {
  int32_t *members;
  size_t n, cap;
  int32_t *waiting; /* FIFO [whead, wn) */
  size_t whead, wn, wcap;
  bool busy;
  uint64_t iter;        /* iterations completed */
  double share_nj;      /* energy of one member, summed over the iterations so far */
  int64_t max_offset;   /* max over members of context + 1 − iter at join */
  int64_t max_final;    /* max over members of the longest total length it reaches */
  uint64_t next_finish; /* smallest iteration count at which a member is done */
  double min_k[CONFIG_MAX_SLO_CLASSES]; /* deadline of the next token = k + SLO × iter */
  size_t class_n[CONFIG_MAX_SLO_CLASSES];
} decode_node;

typedef struct {
  double t_first_ns; /* first token (end of prefill) */
  double k_ns;       /* decode deadline offset, see decode_node.min_k */
  double share_at_join_nj;
  int64_t offset;    /* KV length at an iteration = offset + node iter */
  uint64_t finish_iter;
  int32_t node;
} req_state;

typedef struct {
  const planstore *ps;
  const char *policy;
  const replay_setup *setup;
  const config_cluster *cl;
  const replay_request *rq;
  size_t nreq, arrived, head; /* prefill queue: requests [head, arrived) */
  double now_ns;
  event_heap heap;
  prefill_node *pnodes;
  int *assigned; /* dispatch_prefill's scratch: nodes given a batch */
  decode_node *dnodes;
  req_state *st;
  sg2_window sg2[REPLAY_NPHASE];
  int max_decode;
  replay_result *res;
  double *spare_ttft, *spare_tpot; /* percentile scratch */
} sim;

/* ---- windows and accounting -------------------------------------------------------- */

static int window_at(sim *s, double t_ns, replay_window **w, enpu_err *err) {
  size_t i = (size_t)(t_ns / REPLAY_WINDOW_NS);
  replay_result *r = s->res;
  if (i >= r->nwindows) {
    if (enpu_grow((void **)&r->windows, &r->windows_cap, i + 1, sizeof *r->windows) < 0)
      return enpu_errorf(err, ENPU_ERR_NOMEM, "out of memory (windows)");
    for (size_t k = r->nwindows; k <= i; k++)
      r->windows[k] = (replay_window){.start_ns = (double)k * REPLAY_WINDOW_NS, .length_ns = REPLAY_WINDOW_NS};
    r->nwindows = i + 1;
  }
  *w = &r->windows[i];
  return ENPU_OK;
}

/* Spread a batch [start, start+dur) and its energy over the windows it overlaps. */
static int account_batch(sim *s, int phase, double start_ns, double dur_ns, double energy_nj, bool locked,
                         enpu_err *err) {
  replay_window *w = NULL;
  ENPU_FORWARD(window_at(s, start_ns, &w, err));
  w->batches[phase]++;
  w->batches_locked[phase] += locked;
  for (double t = start_ns, end = start_ns + dur_ns; t < end;) {
    ENPU_FORWARD(window_at(s, t, &w, err));
    double piece = fmin(end, w->start_ns + REPLAY_WINDOW_NS) - t;
    if (piece <= 0) piece = end - t; /* rounding at a window edge: finish in this one */
    w->busy_node_ns[phase] += piece;
    w->energy_nj[phase] += energy_nj * piece / dur_ns;
    t += piece;
  }
  replay_phase_stats *ph = &s->res->summary.phase[phase];
  ph->busy_energy_nj += energy_nj;
  ph->busy_node_ns += dur_ns;
  ph->batches++;
  return ENPU_OK;
}

/* Each request adds at most one outcome per phase: the arrays hold nreq entries. */
static void sg2_push(sim *s, int phase, bool missed) {
  sg2_window *g = &s->sg2[phase];
  g->time_ns[g->n] = s->now_ns;
  g->missed[g->n++] = missed;
  g->missed_in_window += missed;
}

/* Safeguard 2: more than 1 % of the phase's outcomes in the last 5 minutes missed. */
static bool sg2_locked(sim *s, int phase) {
  sg2_window *g = &s->sg2[phase];
  while (g->head < g->n && g->time_ns[g->head] <= s->now_ns - SG2_WINDOW_NS)
    g->missed_in_window -= g->missed[g->head++];
  size_t total = g->n - g->head;
  return total > 0 && (double)g->missed_in_window > SG2_MISS_FRACTION * (double)total;
}

static int finish_request(sim *s, int32_t i, enpu_err *err) {
  replay_request_result *q = &s->res->requests[i];
  q->finish_ns = s->now_ns;
  q->slo_met = q->ttft_met && q->tpot_met;
  replay_window *w = NULL;
  ENPU_FORWARD(window_at(s, s->now_ns, &w, err));
  w->finished++;
  w->slo_met += q->slo_met;
  return ENPU_OK;
}

/* ---- plans ------------------------------------------------------------------------- */

/* Does a bucket cover `n` requests of length `seq` (and fit the chips)? `alone`: a
 * request on its own, whose "no" makes it uncovered (the first message is kept).
 * @return 1 yes, 0 no, < 0 error. */
static int covered(sim *s, int phase, int n, int seq, bool alone, enpu_err *err) {
  planstore_plan pl;
  enpu_err e = {0};
  int rc = planstore_lookup(s->ps, s->policy, phase, n, seq, INFINITY, &pl, &e);
  if (rc == ENPU_OK) return 1;
  if (rc != ENPU_ERR_NOT_FOUND && rc != ENPU_ERR_INFEASIBLE) {
    if (err) *err = e;
    return rc;
  }
  char *ex = s->res->summary.uncovered_example;
  if (alone && !ex[0]) snprintf(ex, sizeof s->res->summary.uncovered_example, "%s", e.msg);
  return 0;
}

/* The plan for a batch at a target (-INFINITY: the fastest). *late when the target is
 * below the fastest plan (which is then returned). */
static int plan_for(sim *s, int phase, int n, int seq, double target_ns, planstore_plan *pl, bool *late,
                    enpu_err *err) {
  memset(pl, 0, sizeof *pl);
  int rc = planstore_lookup(s->ps, s->policy, phase, n, seq, target_ns, pl, err);
  *late = rc == ENPU_ERR_INFEASIBLE && pl->batch > 0;
  if (rc == ENPU_OK || *late) return ENPU_OK;
  enpu_err_prefix(err, "%s batch of %d requests at %d tokens: ", phase ? "decode" : "prefill", n, seq);
  return rc;
}

static int class_of(const config_cluster *cl, int tokens, bool decode) {
  for (int c = 0; c < cl->slo_count; c++)
    if (tokens <= (decode ? cl->slo[c].decode_max_tokens : cl->slo[c].prefill_max_tokens)) return c;
  return cl->slo_count - 1; /* longer than the longest class: held to that class's SLO */
}

static double ttft_slo_ns(const sim *s, int32_t i) {
  return s->cl->slo[s->res->requests[i].ttft_class].ttft_ms * 1e6;
}
static double tpot_slo_ns(const sim *s, int32_t i) {
  return s->cl->slo[s->res->requests[i].tpot_class].tpot_ms * 1e6;
}

/* Safeguard bookkeeping shared by both phases: pick the plan for T_target, the cap of
 * safeguard 1 (INFINITY: none) and the lock of safeguard 2. */
static int choose_plan(sim *s, int phase, int n, int seq, double target_ns, double cap_ns, planstore_plan *pl,
                       bool *locked, enpu_err *err) {
  replay_phase_stats *ph = &s->res->summary.phase[phase];
  bool late = false;
  *locked = sg2_locked(s, phase);
  if (*locked) {
    ENPU_FORWARD(plan_for(s, phase, n, seq, -INFINITY, pl, &late, err));
    ph->locked++;
    late = false; /* locked to the fastest on purpose: not a scheduling miss */
  } else if (cap_ns < target_ns) {
    planstore_plan free_pl;
    bool free_late;
    ENPU_FORWARD(plan_for(s, phase, n, seq, target_ns, &free_pl, &free_late, err));
    ENPU_FORWARD(plan_for(s, phase, n, seq, cap_ns, pl, &late, err));
    ph->safeguard1 += pl->walk_prefix < free_pl.walk_prefix;
  } else {
    ENPU_FORWARD(plan_for(s, phase, n, seq, target_ns, pl, &late, err));
  }
  ph->late += late;
  ph->slowed += pl->walk_prefix > 0;
  return ENPU_OK;
}

/* ---- prefill ----------------------------------------------------------------------- */

/* The batch the queue would give from request `from`: *count requests (0 when the queue
 * is empty or its head is uncovered), longest context *seq. */
static int form_prefill(sim *s, size_t from, size_t *count, int *seq, enpu_err *err) {
  const int max_n = s->cl->max_batch;
  long tokens = 0;
  *count = 0;
  *seq = 0;
  for (size_t i = from; i < s->arrived && (int)*count < max_n; i++) {
    const int ctx = s->rq[i].context_tokens, len = ctx > *seq ? ctx : *seq;
    if (*count > 0 && tokens + ctx > s->cl->max_batch_tokens) break;
    int ok = covered(s, REPLAY_PREFILL, (int)*count + 1, len, false, err);
    if (ok < 0) return ok;
    if (!ok) break;
    (*count)++;
    *seq = len;
    tokens += ctx;
  }
  return ENPU_OK;
}

/* Drop uncovered requests at the head of the queue. */
static int skip_uncovered(sim *s, enpu_err *err) {
  while (s->head < s->arrived) {
    int ok = covered(s, REPLAY_PREFILL, 1, s->rq[s->head].context_tokens, true, err);
    if (ok < 0) return ok;
    if (ok) break;
    s->res->requests[s->head].status = REPLAY_UNCOVERED_PREFILL;
    s->res->summary.uncovered++;
    s->head++;
  }
  return ENPU_OK;
}

static int start_prefill(sim *s, int node, double cap_ns, enpu_err *err) {
  prefill_node *pn = &s->pnodes[node];
  double target = INFINITY;
  int seq = 0;
  for (size_t i = pn->first; i < pn->first + pn->count; i++) {
    target = fmin(target, s->rq[i].arrival_ns + ttft_slo_ns(s, (int32_t)i) - s->now_ns);
    if (s->rq[i].context_tokens > seq) seq = s->rq[i].context_tokens;
  }
  planstore_plan pl;
  bool locked;
  ENPU_FORWARD(choose_plan(s, REPLAY_PREFILL, (int)pn->count, seq, target, cap_ns, &pl, &locked, err));
  const double energy = pl.energy_nj * s->cl->node[CONFIG_PREFILL].chips;
  ENPU_FORWARD(account_batch(s, REPLAY_PREFILL, s->now_ns, pl.time_ns, energy, locked, err));
  replay_phase_stats *ph = &s->res->summary.phase[REPLAY_PREFILL];
  ph->padded_tokens += (uint64_t)pl.batch * (uint64_t)pl.seq;
  for (size_t i = pn->first; i < pn->first + pn->count; i++) {
    s->res->requests[i].energy_nj += energy / (double)pn->count;
    ph->tokens += (uint64_t)s->rq[i].context_tokens;
  }
  pn->busy = true;
  return heap_push(&s->heap, s->now_ns + pl.time_ns, EV_PREFILL_DONE, node, err);
}

/* Give every idle prefill node a batch; safeguard 1 protects the batch that would come
 * next from the queue left after all of them. */
static int dispatch_prefill(sim *s, enpu_err *err) {
  const int nodes = s->cl->node[CONFIG_PREFILL].nodes;
  int *assigned = s->assigned, nstarted = 0;
  int rc = ENPU_OK;
  for (int k = 0; k < nodes && rc == ENPU_OK; k++) {
    prefill_node *pn = &s->pnodes[k];
    if (pn->busy) continue;
    rc = skip_uncovered(s, err);
    if (rc != ENPU_OK || s->head >= s->arrived) break;
    int seq;
    rc = form_prefill(s, s->head, &pn->count, &seq, err);
    pn->first = s->head;
    s->head += pn->count;
    assigned[nstarted++] = k;
  }
  double cap = INFINITY;
  if (rc == ENPU_OK && nstarted > 0) rc = skip_uncovered(s, err);
  if (rc == ENPU_OK && nstarted > 0 && s->head < s->arrived) {
    size_t n;
    int seq;
    rc = form_prefill(s, s->head, &n, &seq, err);
    if (rc == ENPU_OK && n > 0) {
      planstore_plan fast;
      bool late;
      rc = plan_for(s, REPLAY_PREFILL, (int)n, seq, -INFINITY, &fast, &late, err);
      for (size_t i = s->head; rc == ENPU_OK && i < s->head + n; i++)
        cap = fmin(cap, s->rq[i].arrival_ns + ttft_slo_ns(s, (int32_t)i) - s->now_ns - fast.time_ns);
    }
  }
  for (int k = 0; rc == ENPU_OK && k < nstarted; k++) rc = start_prefill(s, assigned[k], cap, err);
  return rc;
}

static int prefill_done(sim *s, int node, enpu_err *err) {
  prefill_node *pn = &s->pnodes[node];
  const double kv_gbps = s->setup->dcn_gbps_per_chip *
                         fmin(s->cl->node[CONFIG_PREFILL].chips, s->cl->node[CONFIG_DECODE].chips);
  for (size_t i = pn->first; i < pn->first + pn->count; i++) {
    replay_request_result *q = &s->res->requests[i];
    q->ttft_ns = s->now_ns - q->arrival_ns;
    q->ttft_met = q->ttft_ns <= ttft_slo_ns(s, (int32_t)i);
    s->st[i].t_first_ns = s->now_ns;
    sg2_push(s, REPLAY_PREFILL, !q->ttft_met);
    if (q->generated_tokens == 1) {
      q->tpot_met = true;
      q->status = REPLAY_DONE;
      ENPU_FORWARD(finish_request(s, (int32_t)i, err));
      continue;
    }
    /* GB/s is bytes per ns. */
    const double bytes = (double)q->context_tokens * s->setup->kv_bytes_per_token;
    const double start = fmax(s->now_ns, pn->dcn_free_ns);
    pn->dcn_free_ns = start + bytes / kv_gbps;
    q->kv_transfer_ns = pn->dcn_free_ns - s->now_ns;
    s->res->summary.kv_bytes += bytes;
    ENPU_FORWARD(heap_push(&s->heap, pn->dcn_free_ns, EV_DECODE_READY, (int32_t)i, err));
  }
  pn->busy = false;
  return dispatch_prefill(s, err);
}

/* ---- decode ------------------------------------------------------------------------ */

/* Longest total length request i reaches in decode (KV of its last iteration). */
static int64_t final_length(const sim *s, int32_t i) {
  return (int64_t)s->rq[i].context_tokens + s->rq[i].generated_tokens - 1;
}

/* Append member i (its state set) and fold it into the node's aggregates. */
static void node_track(sim *s, decode_node *dn, int32_t i) {
  const req_state *r = &s->st[i];
  const int c = s->res->requests[i].tpot_class;
  const int64_t final_len = final_length(s, i);
  if (dn->n == 0 || r->offset > dn->max_offset) dn->max_offset = r->offset;
  if (dn->n == 0 || final_len > dn->max_final) dn->max_final = final_len;
  if (dn->n == 0 || r->finish_iter < dn->next_finish) dn->next_finish = r->finish_iter;
  if (dn->class_n[c]++ == 0 || r->k_ns < dn->min_k[c]) dn->min_k[c] = r->k_ns;
  dn->members[dn->n++] = i;
}

static void decode_join(sim *s, decode_node *dn, int32_t i) {
  req_state *r = &s->st[i];
  const replay_request *q = &s->rq[i];
  /* Token 1 came from prefill: at iteration count `it` the member holds
   * 1 + (it − iter) tokens and attends over context + that many. */
  r->offset = (int64_t)q->context_tokens + 1 - (int64_t)dn->iter;
  r->finish_iter = dn->iter + (uint64_t)q->generated_tokens - 1;
  r->k_ns = r->t_first_ns + tpot_slo_ns(s, i) * (1.0 - (double)dn->iter);
  r->share_at_join_nj = dn->share_nj;
  node_track(s, dn, i);
}

/* Admit waiting requests FCFS while a bucket covers the batch at its longest length. */
static int decode_admit(sim *s, decode_node *dn, enpu_err *err) {
  while (dn->whead < dn->wn && (int)dn->n < s->max_decode) {
    const int32_t i = dn->waiting[dn->whead];
    const int64_t final_len = final_length(s, i);
    const int64_t len = dn->n > 0 && dn->max_final > final_len ? dn->max_final : final_len;
    int ok = covered(s, REPLAY_DECODE, (int)dn->n + 1, (int)len, dn->n == 0, err);
    if (ok < 0) return ok;
    if (!ok && dn->n > 0) break; /* wait for room */
    dn->whead++;
    if (!ok) { /* does not fit even alone */
      s->res->requests[i].status = REPLAY_UNCOVERED_DECODE;
      s->res->summary.uncovered++;
      continue;
    }
    decode_join(s, dn, i);
  }
  return ENPU_OK;
}

static int decode_start(sim *s, int node, enpu_err *err) {
  decode_node *dn = &s->dnodes[node];
  ENPU_FORWARD(decode_admit(s, dn, err));
  if (dn->n == 0) {
    dn->busy = false;
    return ENPU_OK;
  }
  double target = INFINITY;
  for (int c = 0; c < s->cl->slo_count; c++)
    if (dn->class_n[c]) {
      const double slo = s->cl->slo[c].tpot_ms * 1e6;
      target = fmin(target, fmin(slo, dn->min_k[c] + slo * (double)dn->iter - s->now_ns));
    }
  const int seq = (int)(dn->max_offset + (int64_t)dn->iter);
  double cap = INFINITY;
  if (dn->whead < dn->wn) {
    planstore_plan fast;
    bool late;
    ENPU_FORWARD(plan_for(s, REPLAY_DECODE, (int)dn->n, seq, -INFINITY, &fast, &late, err));
    const int32_t w = dn->waiting[dn->whead];
    cap = s->st[w].t_first_ns + tpot_slo_ns(s, w) - s->now_ns - fast.time_ns;
  }
  planstore_plan pl;
  bool locked;
  ENPU_FORWARD(choose_plan(s, REPLAY_DECODE, (int)dn->n, seq, target, cap, &pl, &locked, err));
  const double energy = pl.energy_nj * s->cl->node[CONFIG_DECODE].chips;
  ENPU_FORWARD(account_batch(s, REPLAY_DECODE, s->now_ns, pl.time_ns, energy, locked, err));
  replay_phase_stats *ph = &s->res->summary.phase[REPLAY_DECODE];
  ph->tokens += dn->n;
  ph->padded_tokens += (uint64_t)pl.batch;
  dn->share_nj += energy / (double)dn->n;
  dn->busy = true;
  return heap_push(&s->heap, s->now_ns + pl.time_ns, EV_DECODE_DONE, node, err);
}

/* Members whose last token this iteration made leave; the node's aggregates are rebuilt
 * from those who stay. */
static int decode_done(sim *s, int node, enpu_err *err) {
  decode_node *dn = &s->dnodes[node];
  dn->iter++;
  if (dn->iter >= dn->next_finish) {
    size_t keep = 0;
    int32_t *m = dn->members;
    for (size_t k = 0; k < dn->n; k++) {
      const int32_t i = m[k];
      if (s->st[i].finish_iter > dn->iter) {
        m[keep++] = i;
        continue;
      }
      replay_request_result *q = &s->res->requests[i];
      q->energy_nj += dn->share_nj - s->st[i].share_at_join_nj;
      q->tpot_ns = (s->now_ns - s->st[i].t_first_ns) / (double)(q->generated_tokens - 1);
      q->tpot_met = q->tpot_ns <= tpot_slo_ns(s, i);
      q->status = REPLAY_DONE;
      sg2_push(s, REPLAY_DECODE, !q->tpot_met);
      ENPU_FORWARD(finish_request(s, i, err));
    }
    /* Rebuild in place: node_track writes slot dn->n <= k before reading slot k. */
    dn->n = 0;
    memset(dn->class_n, 0, sizeof dn->class_n);
    for (size_t k = 0; k < keep; k++) node_track(s, dn, m[k]);
  }
  return decode_start(s, node, err);
}

static int decode_ready(sim *s, int32_t i, enpu_err *err) {
  int best = 0;
  const int nodes = s->cl->node[CONFIG_DECODE].nodes;
  for (int k = 1; k < nodes; k++) {
    const decode_node *a = &s->dnodes[k], *b = &s->dnodes[best];
    if (a->n + a->wn - a->whead < b->n + b->wn - b->whead) best = k;
  }
  decode_node *dn = &s->dnodes[best];
  if (dn->whead == dn->wn) dn->whead = dn->wn = 0; /* reuse the FIFO's space when empty */
  if (enpu_grow((void **)&dn->waiting, &dn->wcap, dn->wn + 1, sizeof *dn->waiting) < 0 ||
      enpu_grow((void **)&dn->members, &dn->cap, dn->n + dn->wn - dn->whead + 1, sizeof *dn->members) < 0)
    return enpu_errorf(err, ENPU_ERR_NOMEM, "out of memory (decode queue)");
  dn->waiting[dn->wn++] = i;
  s->st[i].node = best;
  return dn->busy ? ENPU_OK : decode_start(s, best, err);
}

/* ---- the run ----------------------------------------------------------------------- */

static int cmp_double(const void *a, const void *b) {
  const double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

/* Nearest-rank percentile of sorted v[0..n). */
static double percentile(const double *v, size_t n, double p) {
  if (n == 0) return NAN;
  size_t k = (size_t)ceil(p * (double)n);
  return v[k > 0 ? k - 1 : 0];
}

static void finish_summary(sim *s) {
  replay_result *r = s->res;
  replay_summary *sm = &r->summary;
  size_t nt = 0, np = 0;
  for (size_t i = 0; i < s->nreq; i++) {
    const replay_request_result *q = &r->requests[i];
    sm->context_tokens += (uint64_t)q->context_tokens;
    sm->generated_tokens += (uint64_t)q->generated_tokens;
    if (q->status != REPLAY_DONE) continue;
    sm->served++;
    sm->ttft_met += q->ttft_met;
    sm->tpot_met += q->tpot_met;
    sm->slo_met += q->slo_met;
    s->spare_ttft[nt++] = q->ttft_ns;
    if (q->generated_tokens > 1) {
      s->spare_tpot[np++] = q->tpot_ns;
      sm->kv_transfer_total_ns += q->kv_transfer_ns;
    }
  }
  sm->slo_attainment = sm->requests ? (double)sm->slo_met / (double)sm->requests : 0;
  qsort(s->spare_ttft, nt, sizeof(double), cmp_double);
  qsort(s->spare_tpot, np, sizeof(double), cmp_double);
  sm->ttft_p50_ns = percentile(s->spare_ttft, nt, 0.50);
  sm->ttft_p99_ns = percentile(s->spare_ttft, nt, 0.99);
  sm->tpot_p50_ns = percentile(s->spare_tpot, np, 0.50);
  sm->tpot_p99_ns = percentile(s->spare_tpot, np, 0.99);
  sm->kv_transfer_mean_ns = np ? sm->kv_transfer_total_ns / (double)np : 0;
  /* Idle energy: node time not spent in batches, per window and in total. */
  sm->end_ns = s->now_ns;
  if (r->nwindows > 0) {
    replay_window *last = &r->windows[r->nwindows - 1];
    last->length_ns = sm->end_ns - last->start_ns;
  }
  sm->energy_nj = 0;
  for (int ph = 0; ph < REPLAY_NPHASE; ph++) {
    const config_node *node = &s->cl->node[ph];
    const double idle_w = s->setup->idle_w_per_chip * node->chips;
    replay_phase_stats *st = &sm->phase[ph];
    st->idle_energy_nj = ((double)node->nodes * sm->end_ns - st->busy_node_ns) * idle_w;
    st->energy_nj = st->busy_energy_nj + st->idle_energy_nj;
    sm->energy_nj += st->energy_nj;
    for (size_t w = 0; w < r->nwindows; w++) {
      replay_window *win = &r->windows[w];
      win->energy_nj[ph] += ((double)node->nodes * win->length_ns - win->busy_node_ns[ph]) * idle_w;
    }
  }
}

static void sim_free(sim *s) {
  free(s->heap.v);
  free(s->pnodes);
  free(s->assigned);
  if (s->dnodes)
    for (int k = 0; k < s->cl->node[CONFIG_DECODE].nodes; k++) {
      free(s->dnodes[k].members);
      free(s->dnodes[k].waiting);
    }
  free(s->dnodes);
  free(s->st);
  for (int ph = 0; ph < REPLAY_NPHASE; ph++) {
    free(s->sg2[ph].time_ns);
    free(s->sg2[ph].missed);
  }
  free(s->spare_ttft);
  free(s->spare_tpot);
}

void replay_result_free(replay_result *r) {
  if (!r) return;
  free(r->requests);
  free(r->windows);
  free(r);
}

static int sim_init(sim *s, replay_result *r, enpu_err *err) {
  const size_t n = s->nreq;
  const config_cluster *cl = s->cl;
  s->pnodes = enpu_calloc((size_t)cl->node[CONFIG_PREFILL].nodes, sizeof *s->pnodes);
  s->assigned = enpu_calloc((size_t)cl->node[CONFIG_PREFILL].nodes, sizeof *s->assigned);
  s->dnodes = enpu_calloc((size_t)cl->node[CONFIG_DECODE].nodes, sizeof *s->dnodes);
  s->st = enpu_calloc(n, sizeof *s->st);
  s->spare_ttft = enpu_calloc(n, sizeof(double));
  s->spare_tpot = enpu_calloc(n, sizeof(double));
  r->requests = enpu_calloc(n, sizeof *r->requests);
  bool ok = s->pnodes && s->assigned && s->dnodes && s->st && s->spare_ttft && s->spare_tpot && r->requests;
  for (int ph = 0; ph < REPLAY_NPHASE; ph++) {
    s->sg2[ph].time_ns = enpu_calloc(n, sizeof(double));
    s->sg2[ph].missed = enpu_calloc(n, 1);
    ok = ok && s->sg2[ph].time_ns && s->sg2[ph].missed;
  }
  ENPU_RETURN_IF(!ok, err, ENPU_ERR_NOMEM, "out of memory (replay of %zu requests)", n);
  for (size_t i = 0; i < n; i++) {
    const replay_request *q = &s->rq[i];
    r->requests[i] = (replay_request_result){
        .arrival_ns = q->arrival_ns, .ttft_ns = NAN, .tpot_ns = NAN, .finish_ns = NAN,
        .context_tokens = q->context_tokens, .generated_tokens = q->generated_tokens,
        .status = REPLAY_UNCOVERED_PREFILL, /* until it runs */
        .ttft_class = (uint8_t)class_of(cl, q->context_tokens, false),
        .tpot_class = (uint8_t)class_of(cl, q->context_tokens + q->generated_tokens, true)};
  }
  r->summary.requests = n;
  s->max_decode = cl->max_batch < cl->max_batch_tokens ? cl->max_batch : cl->max_batch_tokens;
  return ENPU_OK;
}

static int sim_loop(sim *s, enpu_err *err) {
  while (s->arrived < s->nreq || s->heap.n > 0) {
    const double ta = s->arrived < s->nreq ? s->rq[s->arrived].arrival_ns : INFINITY;
    if (s->heap.n > 0 && s->heap.v[0].time_ns <= ta) {
      sim_event e = heap_pop(&s->heap);
      s->now_ns = e.time_ns;
      int rc = e.kind == EV_PREFILL_DONE  ? prefill_done(s, e.id, err)
               : e.kind == EV_DECODE_DONE ? decode_done(s, e.id, err)
                                          : decode_ready(s, e.id, err);
      ENPU_FORWARD(rc);
      continue;
    }
    s->now_ns = ta;
    replay_window *w = NULL;
    ENPU_FORWARD(window_at(s, ta, &w, err));
    w->arrivals++;
    s->arrived++;
    ENPU_FORWARD(dispatch_prefill(s, err));
  }
  return ENPU_OK;
}

int replay_run(const planstore *ps, const char *policy, const replay_trace *trace,
               const replay_setup *setup, replay_result **out, enpu_err *err) {
  *out = NULL;
  ENPU_RETURN_IF(!ps || !policy || !trace || !setup || !setup->cluster, err, ENPU_ERR_INVALID,
                 "replay_run: missing store, policy, trace or set-up");
  const config_cluster *cl = setup->cluster;
  bool known = false;
  for (size_t i = 0; i < planstore_policy_count(ps); i++) known |= !strcmp(planstore_policy_name(ps, i), policy);
  ENPU_RETURN_IF(!known, err, ENPU_ERR_NOT_FOUND, "no policy '%s' in the store", policy);
  ENPU_RETURN_IF(cl->slo_count < 1 || cl->max_batch < 1 || cl->max_batch_tokens < 1, err, ENPU_ERR_INVALID,
                 "cluster %s: needs SLO classes and batching limits", cl->name);
  ENPU_RETURN_IF(!(setup->kv_bytes_per_token >= 0) || !(setup->dcn_gbps_per_chip > 0) ||
                     !(setup->idle_w_per_chip >= 0),
                 err, ENPU_ERR_INVALID, "replay set-up: KV bytes, DCN bandwidth and idle power must be >= 0 (> 0 DCN)");
  replay_result *r = calloc(1, sizeof *r);
  ENPU_RETURN_IF(!r, err, ENPU_ERR_NOMEM, "out of memory (replay result)");
  snprintf(r->summary.policy, sizeof r->summary.policy, "%s", policy);
  r->cluster = cl;
  sim s = {.ps = ps, .policy = policy, .setup = setup, .cl = cl, .rq = trace->requests, .nreq = trace->count,
           .res = r};
  int rc = sim_init(&s, r, err);
  if (rc == ENPU_OK) rc = sim_loop(&s, err);
  if (rc == ENPU_OK) finish_summary(&s);
  sim_free(&s);
  if (rc != ENPU_OK) {
    replay_result_free(r);
    return rc;
  }
  *out = r;
  return ENPU_OK;
}

const replay_summary *replay_result_summary(const replay_result *r) { return &r->summary; }
const replay_request_result *replay_result_requests(const replay_result *r) { return r->requests; }
const replay_window *replay_result_windows(const replay_result *r, size_t *count) {
  *count = r->nwindows;
  return r->windows;
}
