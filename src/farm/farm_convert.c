/* farm_convert.c — a bucket task's search result as a store bucket bundle (store.h): the
 * bucket row, its slack plans, its walk and its plan-state runs.
 *
 * Invariants:
 *  - A bucket result's walk is the search walk with its steps split at every slack
 *    plan's instance-move count, so each plan is a whole-step prefix (plans.walk_prefix
 *    counts steps). Steps of units (graph ops or epochs) that share a key become steps of
 *    that key; the bundle is checked by the store's own rules (store_bucket_bundle_check:
 *    instances on at most a lead and a trail point), so the task fails rather than send a
 *    walk the reader would reject.
 *  - plan_states are runs: per plan, per distinct op of the bucket (bundle op order), one
 *    row per run of its instances (layer order) on one Pareto point — two at most for a
 *    walk prefix (lead, then trail), one per GA gene at most for a GA plan; states that
 *    are no Pareto point of the op (rail lifting, the all-peak fallback) have pareto
 *    STORE_NO_INDEX. A plan that is no walk prefix has walk_prefix STORE_NO_PREFIX. */
#include <stdlib.h>
#include <string.h>

#include "farm_task_internal.h"

/* The budget code a store row carries is config_budget_code's (config.h): the store's
 * and the serving reader's names for it must be the same numbers. */
_Static_assert(STORE_BUDGET_STRICT == PLANSTORE_BUDGET_STRICT && STORE_BUDGET_PAPER == PLANSTORE_BUDGET_PAPER &&
                   (int)CONFIG_BUDGET_STRICT == STORE_BUDGET_STRICT &&
                   (int)CONFIG_BUDGET_PAPER == STORE_BUDGET_PAPER && CONFIG_NBUDGET == 2,
               "a stored budget code is config_budget_code's");

static int cmp_i64(const void *a, const void *b) {
  const int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
  return (x > y) - (x < y);
}

/* The walk, split at the plans' move counts; plans[k].walk_prefix set. */
static int convert_walk(const farm_convert_in *in, store_bucket_bundle *r, enpu_err *err) {
  const search_walk *w = in->sr->walk;
  const int nsteps = search_walk_step_count(w);
  int64_t *cuts = enpu_calloc((size_t)in->sr->nplans + 1, sizeof *cuts);
  r->walk = enpu_calloc((size_t)nsteps + (size_t)in->sr->nplans + 1, sizeof *r->walk);
  ENPU_RETURN_IF(!cuts || !r->walk, err, (free(cuts), ENPU_ERR_NOMEM), "out of memory (walk)");
  int ncut = 0;
  for (int k = 0; k < in->sr->nplans; k++)
    if (in->sr->plans[k].walk_moves > 0) cuts[ncut++] = in->sr->plans[k].walk_moves;
  qsort(cuts, (size_t)ncut, sizeof *cuts, cmp_i64);
  int c = 0;
  for (int s = 0; s < nsteps; s++) {
    const search_walk_step *st = search_walk_step_at(w, s);
    const double t0 = st->time_ns - (double)st->count * st->dtime_ns;
    const double e0 = st->energy_nj - (double)st->count * st->denergy_nj;
    int64_t done = 0;
    while (done < st->count) {
      while (c < ncut && cuts[c] <= st->moves_before + done) c++;
      const int64_t end = c < ncut && cuts[c] < st->moves_before + st->count ? cuts[c] - st->moves_before
                                                                             : st->count;
      store_walk_rec *o = &r->walk[r->nwalk++];
      o->op = (uint32_t)in->key_of[st->op];
      o->pareto = (uint32_t)st->to;
      o->instances = (uint64_t)(end - done);
      o->time_ns = end == st->count ? st->time_ns : t0 + (double)end * st->dtime_ns;
      o->energy_nj = end == st->count ? st->energy_nj : e0 + (double)end * st->denergy_nj;
      done = end;
    }
  }
  free(cuts);
  /* Each plan's prefix in (split) steps: the steps whose moves all came before it. */
  for (uint32_t k = 0; k < r->nplans; k++) {
    const int64_t m = in->sr->plans[k].walk_moves;
    if (m < 0) {
      r->plans[k].walk_prefix = STORE_NO_PREFIX;
      continue;
    }
    int64_t moves = 0;
    uint64_t n = 0;
    while (m > 0 && n < r->nwalk && moves + (int64_t)r->walk[n].instances <= m)
      moves += (int64_t)r->walk[n++].instances;
    ENPU_RETURN_IF(m > 0 && moves != m, err, ENPU_ERR_INTERNAL, "plan %u: %lld walk moves fall inside a step", k,
                   (long long)m);
    r->plans[k].walk_prefix = n;
  }
  return 0;
}

/* The Pareto point of `set` with these states, or STORE_NO_INDEX. */
static uint32_t point_of(const search_pareto *set, const int state[CONFIG_NCOMP]) {
  for (int q = 0; q < set->count; q++)
    if (!memcmp(set->points[q].state, state, sizeof set->points[q].state)) return (uint32_t)q;
  return STORE_NO_INDEX;
}

/* Append instance `st` of key i to plan k's runs (a new row unless it extends the last). */
static void push_run(store_bucket_bundle *r, uint32_t k, uint32_t i, const search_pareto *set,
                     const int st[CONFIG_NCOMP]) {
  uint8_t st8[STORE_NSTATE];
  for (int c = 0; c < STORE_NSTATE; c++) st8[c] = (uint8_t)st[c];
  const uint32_t pt = point_of(set, st);
  store_plan_state_rec *last = r->nstates ? &r->states[r->nstates - 1] : NULL;
  if (last && last->plan == k && last->op == i && last->pareto == pt && !memcmp(last->states, st8, STORE_NSTATE)) {
    last->instances++;
    return;
  }
  store_plan_state_rec *o = &r->states[r->nstates++];
  *o = (store_plan_state_rec){.plan = k, .op = i, .pareto = pt, .instances = 1};
  memcpy(o->states, st8, STORE_NSTATE);
}

/* Plan states of every plan (see the file comment), from each plan's per-instance states. */
static int convert_states(const farm_convert_in *in, store_bucket_bundle *r, enpu_err *err) {
  const search_units *u = in->sr->units;
  uint64_t runs = 0;
  for (int k = 0; k < in->sr->nplans; k++) runs += (uint64_t)in->sr->plans[k].instances;
  r->states = enpu_calloc(runs + 1, sizeof *r->states);
  ENPU_RETURN_IF(!r->states, err, ENPU_ERR_NOMEM, "out of memory (states)");
  for (uint32_t k = 0; k < r->nplans; k++) {
    const search_slack_plan *sp = &in->sr->plans[k];
    r->plans[k].states_first = r->nstates;
    for (uint32_t key = 0; key < r->nops; key++)
      for (int i = 0; i < u->count; i++) {
        if ((uint32_t)in->key_of[i] != key) continue;
        for (int64_t w = u->offset[i]; w < u->offset[i + 1]; w++)
          push_run(r, k, key, &in->sets[key], sp->state[u->first_x[w]]);
      }
    r->plans[k].states_count = r->nstates - r->plans[k].states_first;
  }
  return 0;
}

int farm_convert_bucket(const farm_convert_in *in, store_bucket_bundle *r, enpu_err *err) {
  const search_bucket_result *sr = in->sr;
  store_bucket_rec *b = &r->bucket;
  b->phase = (uint8_t)in->phase, b->status = STORE_BUCKET_OK, b->input_hash = in->input_hash;
  b->budget = config_budget_code(sr->budget);
  b->batch = in->batch, b->seq = in->seq;
  /* A compiled bucket that does not fit HBM (capacity offload or ignore) says so. */
  grid_memory_note(&graph_get_info(in->g)->memory, b->message, sizeof b->message);
  b->t_nodvfs_ns = sr->t_nodvfs_ns, b->t_peak_ns = sr->t_peak_ns, b->e_nodvfs_nj = sr->e_nodvfs_nj;
  b->walk_start_time_ns = search_walk_start_time_ns(sr->walk);
  b->walk_start_energy_nj = search_walk_start_energy_nj(sr->walk);
  r->nplans = (uint32_t)sr->nplans;
  r->plans = enpu_calloc((size_t)sr->nplans, sizeof *r->plans);
  ENPU_RETURN_IF(!r->plans, err, ENPU_ERR_NOMEM, "out of memory (plans)");
  for (int k = 0; k < sr->nplans; k++) {
    const search_slack_plan *p = &sr->plans[k];
    r->plans[k] = (store_plan_rec){.budget = config_budget_code(p->budget),
                                   .slack = p->slack,
                                   .budget_ns = p->budget_ns,
                                   .time_ns = p->time_ns,
                                   .energy_nj = p->energy_nj,
                                   .cp_time_ns = p->cp_time_ns,
                                   .overhead_pct = p->overhead_pct,
                                   .paper_overhead_pct = p->paper_overhead_pct,
                                   .lower_bound_nj = p->lower_bound_nj,
                                   .savings_vs_nodvfs = p->savings_vs_nodvfs,
                                   .gated = (uint8_t)p->gated,
                                   .gates = p->gates};
    memcpy(r->plans[k].regulator_loss_nj, p->regulator_loss_nj, sizeof r->plans[k].regulator_loss_nj);
  }
  ENPU_FORWARD(convert_walk(in, r, err));
  ENPU_FORWARD(convert_states(in, r, err));
  return store_bucket_bundle_check(r, NULL, err);
}
