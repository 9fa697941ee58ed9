/* replay_batch.c — what the prefill side (replay_sim.c), the decode side
 * (replay_decode.c), the governors (replay_gov.c) and mid-batch switching
 * (replay_switch.c) share: the event heap (ordered by time, then by sequence number, so
 * equal times keep their push order and the run is deterministic), a batch's fastest plan
 * and its plan for a target time (the DVFS-aware choice of §3.4, with safeguard 2's lock
 * and safeguard 1's cap), and a batch's start and completion event. Nothing here calls
 * back into those files. */
#include <math.h>
#include <string.h>

#include "replay_internal.h"

/* ---- events --------------------------------------------------------------------- */

static int ev_less(const void *pa, const void *pb) {
  const sim_event *a = pa, *b = pb;
  return a->time_ns < b->time_ns || (a->time_ns == b->time_ns && a->seq < b->seq);
}
_Static_assert(sizeof(sim_event) <= ENPU_HEAP_MAX_ELEM, "an event fits the heap's element");

int replay_heap_push(event_heap *h, double time_ns, int kind, int32_t id, uint64_t batch, enpu_err *err) {
  if (enpu_grow((void **)&h->v, &h->cap, h->n + 1, sizeof *h->v) < 0)
    return enpu_errorf(err, ENPU_ERR_NOMEM, "out of memory (event queue)");
  const sim_event e = {time_ns, h->next_seq++, batch, kind, id};
  enpu_heap_push(h->v, &h->n, sizeof e, &e, ev_less);
  return ENPU_OK;
}

sim_event replay_heap_pop(event_heap *h) {
  sim_event top;
  enpu_heap_pop(h->v, &h->n, sizeof top, &top, ev_less);
  return top;
}

/* ---- plans ---------------------------------------------------------------------- */

int replay_fastest_plan(const sim *s, int phase, int n, int seq, planstore_plan *pl, enpu_err *why, enpu_err *err) {
  memset(pl, 0, sizeof *pl);
  /* Below every plan: INFEASIBLE with the fastest plan filled (no message formatted). */
  int rc = planstore_lookup(s->ps, s->policy, phase, n, seq, -INFINITY, pl, NULL);
  if ((rc == ENPU_ERR_INFEASIBLE && pl->batch > 0) || rc == ENPU_OK) return 1;
  planstore_plan none;
  if (rc == ENPU_ERR_NOT_FOUND || rc == ENPU_ERR_INFEASIBLE) {
    if (why) planstore_lookup(s->ps, s->policy, phase, n, seq, INFINITY, &none, why);
    memset(pl, 0, sizeof *pl);
    return 0;
  }
  rc = planstore_lookup(s->ps, s->policy, phase, n, seq, -INFINITY, &none, err);
  enpu_err_prefix(err, "%s batch of %d requests at %d tokens: ", phase ? "decode" : "prefill", n, seq);
  return rc;
}

/* The plan of `fast`'s bucket at target_ns (>= its fastest time), through the memo. */
static int plan_at(sim *s, const planstore_plan *fast, double target_ns, plan_memo *memo, planstore_plan *pl,
                   enpu_err *err) {
  if (memo && memo->valid && target_ns >= memo->lo_ns && target_ns <= memo->hi_ns) {
    *pl = memo->pl;
    return ENPU_OK;
  }
  ENPU_FORWARD(planstore_retarget(s->ps, fast, target_ns, pl, err));
  if (memo) {
    const bool same = memo->valid && memo->pl.walk_prefix == pl->walk_prefix;
    *memo = (plan_memo){*pl, pl->time_ns, same ? fmax(memo->hi_ns, target_ns) : target_ns, true};
  }
  return ENPU_OK;
}

int replay_choose_plan(sim *s, int phase, const planstore_plan *fast, double target_ns, double cap_ns,
                       plan_memo *memo, plan_choice *c, enpu_err *err) {
  replay_phase_stats *ph = &s->res->summary.phase[phase];
  *c = (plan_choice){.pl = *fast, .locked = replay_sg2_locked(s, phase)};
  if (c->locked) {
    ph->locked++;
  } else if (target_ns < fast->time_ns) {
    ph->late++;
  } else {
    const double eff = fmin(target_ns, cap_ns);
    if (eff >= fast->time_ns) ENPU_FORWARD(plan_at(s, fast, eff, memo, &c->pl, err));
    if (cap_ns < target_ns) {
      planstore_plan free_pl;
      ENPU_FORWARD(plan_at(s, fast, target_ns, memo, &free_pl, err));
      c->safeguard1 = c->pl.walk_prefix < free_pl.walk_prefix;
      ph->safeguard1 += c->safeguard1;
      ph->safeguard1_fastest += c->safeguard1 && eff < fast->time_ns;
    }
  }
  ph->slowed += c->pl.walk_prefix > 0;
  ph->slowest += c->pl.walk_prefix > 0 && c->pl.walk_prefix == c->pl.walk_steps;
  return ENPU_OK;
}

int replay_batch_start(sim *s, int phase, int node, node_batch *b, enpu_err *err) {
  if (s->gov) { /* replay_gov_choose priced it at the node's state */
    b->mark_ns = b->start_ns;
    b->done_frac = b->done_nj = 0;
    b->end_ns = b->start_ns + b->unit_ns;
    b->energy_nj = b->unit_nj;
  } else {
    b->end_ns = b->start_ns + b->c.pl.time_ns;
  }
  return replay_batch_push_done(s, phase, node, b, err);
}

int replay_batch_push_done(sim *s, int phase, int node, node_batch *b, enpu_err *err) {
  b->id = ++s->batch_ids;
  return replay_heap_push(&s->heap, b->end_ns, phase == CONFIG_PREFILL ? EV_PREFILL_DONE : EV_DECODE_DONE, node,
                          b->id, err);
}
