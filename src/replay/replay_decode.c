/* replay_decode.c — KV-cache transfer and the decode side of a run.
 *
 * Model:
 *  - Routing: at the end of its prefill a request goes to the decode node with the
 *    fewest requests (running + waiting + KV transfers on their way; lowest index on
 *    ties), chosen before the transfer, as a disaggregated engine picks the instance
 *    that pulls the cache (under autoscaling, among the nodes taking work, awake ones
 *    before waking ones).
 *  - KV transfer over DCN: bytes = context × KV bytes per token. Each node's DCN link
 *    carries one transfer at a time, at chips × DCN GB/s; a transfer holds both the
 *    prefill node's egress and the decode node's ingress at the slower of the two, so
 *    transfers into one decode node queue behind each other (decode-side contention).
 *    Energy: the cluster's DCN energy per byte.
 *  - Continuous batching: at every iteration boundary the node admits waiting requests
 *    FCFS while the batch stays within max_batch (and max_batch_tokens: one token each)
 *    and a bucket covers it at the longest total length any member will reach, so a
 *    batch never outgrows the HBM (the store marks buckets that do not fit). One
 *    iteration = one forward pass of the padded bucket (batch, longest current KV
 *    length); every member gains a token. Beyond the largest seq bucket the fallback
 *    (replay_chunk.c) stands in for the bucket: NoDVFS, extrapolated, counted per
 *    iteration and marked on every member it ran.
 *  - T_target: min over members of the time left to its next token's deadline, first
 *    token + TPOT SLO × (tokens so far), capped at one TPOT SLO (a request ahead of
 *    schedule gets one SLO per iteration, no more).
 *  - Safeguard 1: the target is capped so that each of the first `safeguard1_scan`
 *    waiting requests, admitted after this iteration, could still make its second
 *    token's deadline with one iteration at the fastest plan. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "replay_internal.h"

static size_t global_node(const sim *s, int node) {
  return (size_t)s->cl->node[CONFIG_PREFILL].nodes + (size_t)node;
}

static bool slo_in_class(const sim *s, int32_t i) {
  const replay_request_result *q = &s->res->requests[i];
  return q->tpot_slo_ns == s->cl->slo[q->tpot_class].tpot_ms * 1e6;
}

int replay_decode_route(sim *s, size_t pnode, int32_t i, enpu_err *err) {
  const int nodes = s->cl->node[CONFIG_DECODE].nodes;
  int best = -1; /* autoscaling: among the nodes taking work, awake ones first */
  for (int pass = 0; pass < 2 && best < 0; pass++)
    for (int k = 0; k < nodes; k++) {
      const size_t g = global_node(s, k);
      if (!replay_fleet_accepts(s, g) || (s->fleet && (replay_fleet_ready_ns(s, g) > s->now_ns) != pass)) continue;
      const decode_node *a = &s->dnodes[k], *b = &s->dnodes[best < 0 ? k : best];
      if (best < 0 || a->n + a->wn - a->whead + a->inbound < b->n + b->wn - b->whead + b->inbound) best = k;
    }
  if (best < 0) best = 0; /* the fleet keeps a node of each pool taking work */
  decode_node *dn = &s->dnodes[best];
  prefill_node *pn = &s->pnodes[pnode];
  replay_request_result *q = &s->res->requests[i];
  const double bytes = config_model_kv_bytes(s->setup->model, (double)q->context_tokens);
  const int chips = s->cl->node[CONFIG_PREFILL].chips < s->cl->node[CONFIG_DECODE].chips
                        ? s->cl->node[CONFIG_PREFILL].chips
                        : s->cl->node[CONFIG_DECODE].chips;
  const double start = fmax(s->now_ns, fmax(pn->dcn_free_ns, dn->dcn_free_ns));
  const double end = start + bytes / (s->setup->dcn_gbps_per_chip * chips); /* GB/s = bytes per ns */
  pn->dcn_free_ns = dn->dcn_free_ns = end;
  q->kv_transfer_ns = end - s->now_ns;
  s->res->summary.kv_bytes += bytes;
  ENPU_FORWARD(replay_account_kv(s, start, bytes, err));
  q->energy_nj += bytes * s->cl->dcn_energy_pj_per_byte * 1e-3;
  dn->inbound++;
  s->st[i].node = best;
  return replay_heap_push(&s->heap, end, EV_KV_DONE, i, 0, err);
}

/* Longest total length request i reaches in decode (KV of its last iteration). */
static int64_t final_length(const sim *s, int32_t i) {
  return (int64_t)s->rq[i].context_tokens + s->rq[i].generated_tokens - 1;
}

/* Append member i (its state set) and fold it into the node's aggregates. */
static void node_track(sim *s, decode_node *dn, int32_t i) {
  const req_state *r = &s->st[i];
  const int64_t final_len = final_length(s, i);
  if (dn->n == 0 || r->offset > dn->max_offset) dn->max_offset = r->offset;
  if (dn->n == 0 || final_len > dn->max_final) dn->max_final = final_len;
  if (dn->n == 0 || r->finish_iter < dn->next_finish) dn->next_finish = r->finish_iter;
  if (slo_in_class(s, i)) {
    const int c = s->res->requests[i].tpot_class;
    if (dn->class_n[c]++ == 0 || r->k_ns < dn->min_k[c]) dn->min_k[c] = r->k_ns;
  } else {
    dn->extra[dn->nextra++] = i;
  }
  dn->members[dn->n++] = i;
}

static void decode_join(sim *s, decode_node *dn, int32_t i) {
  req_state *r = &s->st[i];
  /* Token 1 came from prefill: at iteration count `it` the member holds
   * 1 + (it − iter) tokens and attends over context + that many. */
  r->offset = (int64_t)s->rq[i].context_tokens + 1 - (int64_t)dn->iter;
  r->finish_iter = dn->iter + (uint64_t)s->rq[i].generated_tokens - 1;
  r->k_ns = r->t_first_ns + s->res->requests[i].tpot_slo_ns * (1.0 - (double)dn->iter);
  r->share_at_join_nj = dn->share_nj;
  node_track(s, dn, i);
  dn->bucket_valid = false;
}

/* Admit waiting requests FCFS while a bucket covers the batch at its longest length. */
static int decode_admit(sim *s, decode_node *dn, enpu_err *err) {
  while (dn->whead < dn->wn && (int)dn->n < s->max_decode) {
    const int32_t i = dn->waiting[dn->whead];
    const int64_t final_len = final_length(s, i);
    const int64_t len = dn->n > 0 && dn->max_final > final_len ? dn->max_final : final_len;
    planstore_plan pl, base;
    int ok = replay_cover_decode(s, (int)dn->n + 1, len, false, &pl, &base, NULL, err);
    if (ok < 0) return ok;
    if (!ok && dn->n == 0)
      return enpu_errorf(err, ENPU_ERR_INTERNAL, "request %d was admitted but no decode bucket covers it", i);
    if (!ok) break; /* wait for room */
    dn->whead++;
    decode_join(s, dn, i);
  }
  return ENPU_OK;
}

/* min over members of the time from start_ns to their next token's deadline, at most
 * one TPOT SLO each. */
static double decode_target(const sim *s, const decode_node *dn, double start_ns) {
  double target = INFINITY;
  const double iter = (double)dn->iter;
  for (int c = 0; c < s->cl->slo_count; c++)
    if (dn->class_n[c]) {
      const double slo = s->cl->slo[c].tpot_ms * 1e6;
      target = fmin(target, fmin(slo, dn->min_k[c] + slo * iter - start_ns));
    }
  for (size_t k = 0; k < dn->nextra; k++) {
    const int32_t i = dn->extra[k];
    const double slo = s->res->requests[i].tpot_slo_ns;
    target = fmin(target, fmin(slo, s->st[i].k_ns + slo * iter - start_ns));
  }
  return target;
}

/* Safeguard 1: the latest end of this iteration that leaves each scanned waiting request
 * one fastest iteration before its second token's deadline. */
static double decode_cap_end(const sim *s, const decode_node *dn, double fast_ns) {
  double end = INFINITY;
  const size_t scan = (size_t)s->cl->scheduler.safeguard1_scan;
  for (size_t k = dn->whead; k < dn->wn && k < dn->whead + scan; k++) {
    const int32_t w = dn->waiting[k];
    end = fmin(end, s->st[w].t_first_ns + s->res->requests[w].tpot_slo_ns - fast_ns);
  }
  return end;
}

/* The fastest plan of the batch's bucket at KV length seq (cached while the members
 * stay and seq stays within the bucket). */
static int decode_fastest_bucket(sim *s, decode_node *dn, int seq, enpu_err *err) {
  if (dn->bucket_valid && seq <= dn->bucket.seq) return ENPU_OK;
  int ok = replay_cover_decode(s, (int)dn->n, seq, true, &dn->bucket, &dn->bucket_base, NULL, err);
  if (ok < 0) return ok;
  ENPU_RETURN_IF(!ok, err, ENPU_ERR_INTERNAL, "decode batch of %zu at %d tokens lost its bucket", dn->n, seq);
  dn->bucket_fallback = ok == 2; /* its seq is seq itself: looked up again next iteration */
  dn->bucket_valid = true;
  dn->memo.valid = false;
  return ENPU_OK;
}

/* The plan of a store policy's iteration (with the run's fixed speculative configuration
 * when it has one: the target is per token, the plan the base bucket's). */
/* A fallback iteration: NoDVFS, no plan to choose; its members marked. */
static void fallback_iteration(sim *s, decode_node *dn, node_batch *b) {
  replay_phase_stats *ph = &s->res->summary.phase[CONFIG_DECODE];
  b->c = (plan_choice){.pl = dn->bucket, .locked = replay_sg2_locked(s, CONFIG_DECODE)};
  b->work = (gov_work){.phase = CONFIG_DECODE, .base = dn->bucket_base, .tokens = 1}; /* no speculation */
  ph->locked += b->c.locked;
  ph->fallback++;
  b->energy_nj = b->c.pl.energy_nj * s->cl->node[CONFIG_DECODE].chips;
  for (size_t k = 0; k < dn->n; k++) s->res->requests[dn->members[k]].served_by |= REPLAY_BY_FALLBACK;
}

static int plan_iteration(sim *s, decode_node *dn, int seq, double start, node_batch *b, enpu_err *err) {
  const double chips = s->cl->node[CONFIG_DECODE].chips;
  if (dn->bucket_fallback) {
    fallback_iteration(s, dn, b);
    return ENPU_OK;
  }
  double ratio = 1;
  const bool spec = s->job && s->job->spec.exit_layers + s->job->spec.verify_layers > 0;
  if (spec) ENPU_FORWARD(replay_spec_store_ratio(s, &dn->bucket, (int)dn->n, seq, &ratio, err));
  const double cap = decode_cap_end(s, dn, dn->bucket.time_ns * ratio) - start;
  ENPU_FORWARD(replay_choose_plan(s, CONFIG_DECODE, &dn->bucket, decode_target(s, dn, start) / ratio, cap / ratio,
                                  &dn->memo, &b->c, err));
  b->energy_nj = b->c.pl.energy_nj * chips;
  if (!spec) return ENPU_OK;
  double t, e;
  ENPU_FORWARD(replay_spec_store_step(s, &dn->bucket, &b->c, (int)dn->n, seq, &t, &e, &b->work, err));
  b->c.pl.time_ns = t;
  b->energy_nj = e * chips;
  return ENPU_OK;
}

static int decode_start(sim *s, int node, bool from_idle, enpu_err *err) {
  decode_node *dn = &s->dnodes[node];
  ENPU_FORWARD(decode_admit(s, dn, err));
  if (dn->n == 0) {
    if (!from_idle) s->res->idle_since_ns[global_node(s, node)] = s->now_ns;
    dn->busy = false;
    return replay_fleet_node_idle(s, global_node(s, node), err);
  }
  double start = s->now_ns;
  if (from_idle) ENPU_FORWARD(replay_account_wake(s, CONFIG_DECODE, global_node(s, node), &start, err));
  const int seq = (int)(dn->max_offset + (int64_t)dn->iter);
  ENPU_FORWARD(decode_fastest_bucket(s, dn, seq, err));
  node_batch *b = &dn->batch;
  b->start_ns = start, b->members = dn->n; /* the rest is set below: a batch per iteration */
  if (s->gov && dn->bucket_fallback) {     /* plain decoding of the base bucket, scaled */
    const replay_spec plain = {0};
    ENPU_FORWARD(replay_gov_decode_work(s, &dn->bucket_base, (int)dn->n, seq, &plain, &b->work, err));
    b->work.scale_t = dn->bucket.t_nodvfs_ns / dn->bucket_base.t_nodvfs_ns;
    b->work.scale_e = dn->bucket.e_nodvfs_nj / dn->bucket_base.e_nodvfs_nj;
    ENPU_FORWARD(replay_gov_choose(s, global_node(s, node), decode_target(s, dn, start), b, err));
    s->res->summary.phase[CONFIG_DECODE].fallback++;
    for (size_t k = 0; k < dn->n; k++) s->res->requests[dn->members[k]].served_by |= REPLAY_BY_FALLBACK;
  } else if (s->gov) {
    ENPU_FORWARD(
        replay_gov_decode_work(s, &dn->bucket, (int)dn->n, seq, &s->gov[global_node(s, node)].spec, &b->work, err));
    ENPU_FORWARD(replay_gov_choose(s, global_node(s, node), decode_target(s, dn, start), b, err));
  } else {
    ENPU_FORWARD(plan_iteration(s, dn, seq, start, b, err));
  }
  replay_phase_stats *ph = &s->res->summary.phase[CONFIG_DECODE];
  ph->tokens += dn->n;
  ph->padded_tokens += (uint64_t)b->c.pl.batch;
  if ((uint64_t)b->c.pl.batch > ph->padded_max) ph->padded_max = (uint64_t)b->c.pl.batch;
  dn->busy = true;
  return replay_batch_start(s, CONFIG_DECODE, node, b, err);
}

int replay_decode_kv_done(sim *s, int32_t i, enpu_err *err) {
  const int node = s->st[i].node;
  decode_node *dn = &s->dnodes[node];
  dn->inbound--;
  if (dn->whead == dn->wn) dn->whead = dn->wn = 0; /* reuse the FIFO's space when empty */
  if (enpu_grow((void **)&dn->waiting, &dn->wcap, dn->wn + 1, sizeof *dn->waiting) < 0 ||
      enpu_grow((void **)&dn->members, &dn->cap, dn->n + dn->wn - dn->whead + 1, sizeof *dn->members) < 0 ||
      enpu_grow((void **)&dn->extra, &dn->extra_cap, dn->n + dn->wn - dn->whead + 1, sizeof *dn->extra) < 0)
    return enpu_errorf(err, ENPU_ERR_NOMEM, "out of memory (decode queue)");
  dn->waiting[dn->wn++] = i;
  return dn->busy ? ENPU_OK : decode_start(s, node, true, err);
}

/* Members whose last token this iteration made leave; the node's aggregates are rebuilt
 * from those who stay. */
int replay_decode_done(sim *s, int node, uint64_t batch, enpu_err *err) {
  decode_node *dn = &s->dnodes[node];
  if (batch != dn->batch.id) return ENPU_OK; /* a state change moved its end */
  if (s->gov) replay_gov_batch_ended(s, global_node(s, node), &dn->batch);
  ENPU_FORWARD(replay_account_batch(s, CONFIG_DECODE, &dn->batch, err));
  if (s->uniform) replay_spec_count(s, &dn->batch, dn->n);
  dn->share_nj += dn->batch.energy_nj / (double)dn->n;
  const bool per_phase = s->cl->scheduler.safeguard2 == CONFIG_SG2_PER_PHASE;
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
      q->tpot_met = q->tpot_ns <= q->tpot_slo_ns;
      if (per_phase) replay_sg2_push(s, CONFIG_DECODE, !q->tpot_met);
      ENPU_FORWARD(replay_finish_request(s, i, err));
    }
    /* Rebuild in place: node_track writes slot dn->n <= k before reading slot k. */
    dn->n = dn->nextra = 0;
    memset(dn->class_n, 0, sizeof dn->class_n);
    for (size_t k = 0; k < keep; k++) node_track(s, dn, m[k]);
    dn->bucket_valid = false;
  }
  return decode_start(s, node, false, err);
}
