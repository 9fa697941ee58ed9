/* search_bucket.c — compiling one bucket for one policy, the search's top file: op-level
 * Pareto sets per distinct unit signature (search_policy.c compiles them), the reference
 * times, the request-level search over every slack (walk or GA), finalised by
 * search_final.c, and the plan invariants. It calls down into the module's other files;
 * none of them calls back into it.
 *
 * Invariants of a returned result: every plan fits its budget in its mode (strict: time
 * with transitions; paper: critical-path time), energy does not grow with slack, no plan
 * is worse than the policy's all-peak plan, and the lower bound (LP relaxation over the
 * same Pareto sets) is below every plan — checked by search_check_invariants before
 * returning. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "search_internal.h"

void search_bucket_result_free(search_bucket_result *r) {
  if (!r) return;
  for (int i = 0; i < r->nplans; i++) free(r->plans[i].state);
  for (int i = 0; r->unit_sets && r->units && i < r->units->count; i++) search_pareto_free(&r->unit_sets[i]);
  free(r->unit_sets);
  r->unit_sets = NULL;
  search_units_free(r->units);
  r->units = NULL;
  search_walk_free(r->walk);
  r->walk = NULL;
  free(r->plans);
  r->plans = NULL;
  r->nplans = 0;
}

static int bucket_sets(search_ctx *s, cost_ctx *cost, const graph *g, config_policy policy, search_units *u,
                       const search_pareto *const *sets, const double *slacks, int nslack,
                       const search_options *opt, search_bucket_result *out, enpu_err *err);

/* The start of a bucket's compilation: an empty result, the options (the defaults for
 * NULL), the request's units. */
static int bucket_units(search_ctx *s, cost_ctx *cost, const graph *g, config_policy policy,
                        const search_options **opt, search_options *defaults, search_bucket_result *out,
                        search_units **u, enpu_err *err) {
  memset(out, 0, sizeof *out);
  if (!*opt) search_options_default(defaults), *opt = defaults;
  return search_units_build(s, cost, g, policy, *opt, u, err);
}

/* What search_unit_compile_cached needs besides the unit (a search_set_fn's user). */
typedef struct {
  search_ctx *s;
  cost_ctx *cost;
  const graph *g;
  const search_units *u; /* the request's units, compiled one per signature */
  config_policy policy;
  const search_options *opt;
  unit_cache *cache; /* cost-model results the epochs share */
} unit_compile_user;

static int unit_set(void *user, int unit, int rank, int distinct, search_pareto *out, enpu_err *err) {
  (void)rank, (void)distinct;
  const unit_compile_user *c = user;
  return search_unit_compile_cached(c->s, c->cost, c->g, c->u, unit, c->policy, c->opt, c->cache, out, err);
}

/* The result keeps the sets, each unit its own copy of a shared one. */
static int keep_unit_sets(search_sets *sets, search_bucket_result *out, enpu_err *err) {
  for (int i = 0; i < sets->count; i++)
    if (sets->set_of[i] != &sets->sets[i]) {
      const search_pareto *shared = sets->set_of[i];
      sets->sets[i] = *shared;
      sets->sets[i].points = enpu_calloc((size_t)shared->count, sizeof *sets->sets[i].points);
      ENPU_RETURN_IF(!sets->sets[i].points, err, ENPU_ERR_NOMEM, "out of memory (op sets)");
      memcpy(sets->sets[i].points, shared->points, (size_t)shared->count * sizeof *shared->points);
    }
  out->unit_sets = sets->sets;
  sets->sets = NULL;
  return 0;
}

int search_compile_bucket(search_ctx *s, cost_ctx *cost, const graph *g, config_policy policy, const double *slacks,
                          int nslack, const search_options *opt, search_bucket_result *out, enpu_err *err) {
  search_units *u = NULL;
  search_options defaults;
  ENPU_FORWARD(bucket_units(s, cost, g, policy, &opt, &defaults, out, &u, err));
  uint64_t *signature = enpu_calloc((size_t)u->count + 1, sizeof *signature);
  unit_cache cache = {0};
  unit_compile_user c = {s, cost, g, u, policy, opt, &cache};
  search_sets sets = {0};
  int rc = signature ? 0 : enpu_errorf(err, ENPU_ERR_NOMEM, "out of memory (op sets)");
  for (int i = 0; rc == 0 && i < u->count; i++) signature[i] = u->unit[i].signature;
  if (rc == 0) rc = search_sets_compile(signature, u->count, unit_set, &c, &sets, err);
  search_unit_cache_free(&cache);
  free(signature);
  if (rc < 0) enpu_err_prefix(err, "%s: ", config_policy_name(policy));
  search_units *owned = u;
  if (rc == 0) {
    owned = NULL; /* the result takes the units, freed with it even on failure */
    rc = bucket_sets(s, cost, g, policy, u, sets.set_of, slacks, nslack, opt, out, err);
  }
  if (rc == 0) search_bucket_add_op_level(out, &sets);
  if (rc == 0) rc = keep_unit_sets(&sets, out, err);
  if (rc < 0) search_bucket_result_free(out);
  search_sets_free(&sets);
  search_units_free(owned);
  return rc;
}

/* The scratch and the result's plans of a bucket: per unit, per unit instance (walk
 * numbering) and per op instance (execution order). */
static int bucket_alloc(const graph *g, const search_units *u, int nslack, int peak, request *rq, scratch *sc,
                        search_bucket_result *out, enpu_err *err) {
  const size_t n = (size_t)u->op_instances, nw = (size_t)u->instances;
  const int parts = ENPU_CALLOC_PARTS(ENPU_PART(sc->req, (size_t)u->count + 1), ENPU_PART(sc->pos, nw + 1),
                                      ENPU_PART(sc->best_pos, nw + 1), ENPU_PART(sc->peak_state, n + 1),
                                      ENPU_PART(sc->cand, n + 1), ENPU_PART(sc->lift, n + 1));
  out->plans = enpu_calloc((size_t)nslack, sizeof *out->plans);
  ENPU_RETURN_IF(parts < 0 || !out->plans, err, ENPU_ERR_NOMEM, "out of memory (bucket of %lld instances)",
                 (long long)n);
  out->nplans = nslack;
  for (int k = 0; k < nslack; k++) {
    out->plans[k].state = enpu_calloc(n + 1, sizeof *out->plans[k].state);
    out->plans[k].instances = (int64_t)n;
    ENPU_RETURN_IF(!out->plans[k].state, err, ENPU_ERR_NOMEM, "out of memory (plans)");
  }
  for (size_t x = 0; x < n; x++)
    for (int c = 0; c < CONFIG_NCOMP; c++) sc->peak_state[x][c] = peak;
  return search_req_init(rq, sc, g, (int64_t)n, err);
}

/* Reference times: NoDVFS and the eNPU 5-domain pipeline at all-peak on the policy's
 * hardware (its shadow register file); not counted as search evaluations. */
static int bucket_reference(search_ctx *s, cost_ctx *cost, const graph *g, const policy_setup *ps,
                            search_bucket_result *out, enpu_err *err) {
  const int peak = s->chip->freq_states;
  cost_pipeline nodvfs, enpu5;
  cost_pipeline_nodvfs(&nodvfs, s->fixed);
  ENPU_FORWARD(cost_pipeline_enpu(&enpu5, 5, s->ctrl, err));
  enpu5.shadow_vregs = ps->pipe.shadow_vregs;
  for (int i = 0; i < graph_op_count(g); i++) {
    const graph_op *op = graph_op_at(g, i);
    const double m = (double)op->multiplicity;
    double t = 0, e = 0;
    ENPU_FORWARD(search_eval_peak(cost, op, &nodvfs, peak, &t, &e, err));
    out->t_nodvfs_ns += m * t, out->e_nodvfs_nj += m * e;
    ENPU_FORWARD(search_eval_peak(cost, op, &enpu5, peak, &t, &e, err));
    out->t_peak_ns += m * t;
  }
  return 0;
}

/* The uniform policy (search_uniform.c), its all-peak pass summed over the ops (one state
 * throughout: no transition), and each plan's critical path, overhead and regulator loss,
 * its ops' at its state: one state has no transition, but an op's time can still exceed
 * its critical path (what the cost model charges beside it), and validation re-simulates
 * both. */
static int bucket_uniform(search_ctx *s, cost_ctx *cost, const graph *g, const policy_setup *ps,
                          const search_pareto *const *sets, const double *slacks, int nslack, config_budget budget,
                          search_bucket_result *out, enpu_err *err) {
  const int peak = s->chip->freq_states;
  ENPU_FORWARD(bucket_reference(s, cost, g, ps, out, err));
  for (int i = 0; i < graph_op_count(g); i++) {
    const double m = (double)graph_op_at(g, i)->multiplicity;
    double t, e;
    ENPU_FORWARD(search_eval_peak(cost, graph_op_at(g, i), &ps->pipe, peak, &t, &e, err));
    out->policy_peak_time_ns += m * t, out->policy_peak_energy_nj += m * e;
  }
  ENPU_FORWARD(search_uniform_bucket(g, sets, peak, slacks, nslack, budget, out, err));
  cost_pipeline base; /* what the paper's overhead is measured from */
  cost_pipeline_paper_base(&ps->pipe, &base);
  for (int k = 0; k < out->nplans; k++) {
    search_slack_plan *pl = &out->plans[k];
    cost_plan plan;
    memcpy(plan.state, pl->state[0], sizeof plan.state);
    double cp_ns = 0, base_ns = 0;
    for (int i = 0; i < graph_op_count(g); i++) {
      cost_result r, z;
      const double m = (double)graph_op_at(g, i)->multiplicity;
      ENPU_FORWARD(cost_eval(cost, graph_op_at(g, i), &plan, &ps->pipe, &r, err));
      ENPU_FORWARD(cost_eval(cost, graph_op_at(g, i), &plan, &base, &z, err));
      cp_ns += m * r.cp_time_ns, base_ns += m * z.time_ns;
      for (int c = 0; c < CONFIG_NCOMP; c++) pl->regulator_loss_nj[c] += m * r.loss_nj[c];
    }
    pl->cp_time_ns = cp_ns;
    pl->overhead_pct = 100.0 * (pl->time_ns - cp_ns) / out->t_nodvfs_ns;
    pl->paper_overhead_pct = 100.0 * (pl->time_ns - base_ns) / out->t_nodvfs_ns;
  }
  return 0;
}

/* The policy's all-peak plan on the real operator order, plain and (pg) gated. */
static int bucket_peak_plan(const request *rq, scratch *sc, search_bucket_result *out, enpu_err *err) {
  const int(*peak)[CONFIG_NCOMP] = (const int(*)[CONFIG_NCOMP])sc->peak_state;
  ENPU_FORWARD(search_req_total(rq, peak, 0, &sc->peak_plain, err));
  if (rq->gating) ENPU_FORWARD(search_req_total(rq, peak, 1, &sc->peak_gated, err));
  out->policy_peak_time_ns = sc->peak_plain.time_ns;
  out->policy_peak_energy_nj = sc->peak_plain.energy_nj;
  return 0;
}

/* One slack's plan (the walk, the paper's greedy or the GA; never dearer than the
 * previous slack's plan, which fits too), its bound, savings and overhead. */
static int bucket_slack(const request *rq, scratch *sc, const policy_setup *ps, const search_options *opt, int k,
                        search_bucket_result *out, enpu_err *err) {
  search_slack_plan *pl = &out->plans[k];
  search_prefix bound;
  ENPU_FORWARD(search_walk_prefix(out->walk, pl->budget_ns, &bound, err));
  pl->lower_bound_nj = bound.lower_bound_nj;
  const search_walk *w = out->walk;
  if (ps->request == SEARCH_REQ_GREEDY) {
    search_walk_free(sc->greedy);
    sc->greedy = NULL;
    ENPU_FORWARD(search_greedy_build(sc->req, rq->units->count, pl->budget_ns, &sc->greedy, err));
    w = sc->greedy;
  }
  if (ps->request == SEARCH_REQ_GA) ENPU_FORWARD(search_plan_slack_ga(rq, sc, opt, k == 0, out, pl, err));
  else ENPU_FORWARD(search_plan_slack_walk(rq, sc, w, out, pl, err));
  if (k > 0 && pl->energy_nj > out->plans[k - 1].energy_nj) {
    /* Transitions made this plan dearer than the smaller slack's plan, which fits. */
    const search_slack_plan *prev = &out->plans[k - 1];
    int(*state)[CONFIG_NCOMP] = pl->state;
    const double slack = pl->slack, budget_ns = pl->budget_ns, bound_nj = pl->lower_bound_nj;
    const int64_t evals = pl->request_evals;
    *pl = *prev;
    pl->state = state, pl->slack = slack, pl->budget_ns = budget_ns;
    pl->lower_bound_nj = bound_nj, pl->request_evals = evals;
    memcpy(pl->state, prev->state, (size_t)rq->instances * sizeof *pl->state);
  }
  pl->savings_vs_nodvfs = 1.0 - pl->energy_nj / out->e_nodvfs_nj;
  pl->overhead_pct = 100.0 * (pl->time_ns - pl->cp_time_ns) / out->t_nodvfs_ns;
  double base_ns;
  ENPU_FORWARD(search_req_paper_base_time(rq, (const int(*)[CONFIG_NCOMP])pl->state, pl->gated, &base_ns, err));
  pl->paper_overhead_pct = 100.0 * (pl->time_ns - base_ns) / out->t_nodvfs_ns;
  return 0;
}

static int check_options(const double *slacks, int nslack, const search_options *opt, enpu_err *err) {
  ENPU_RETURN_IF(nslack < 1, err, ENPU_ERR_INVALID, "no slacks to compile");
  for (int k = 0; k < nslack; k++)
    ENPU_RETURN_IF(!(slacks[k] >= 0) || (k && !(slacks[k] > slacks[k - 1])), err, ENPU_ERR_INVALID,
                   "slacks must be >= 0 and increasing (slack %d: %g)", k, slacks[k]);
  ENPU_RETURN_IF(opt->threads < 1 || !(opt->walk_cap_slack >= 0) || opt->ga_groups < 1 ||
                     (unsigned)opt->budget >= CONFIG_NBUDGET ||
                     (opt->transitions != SEARCH_TRANS_PER_RAIL && opt->transitions != SEARCH_TRANS_CHIP_STALL),
                 err, ENPU_ERR_INVALID,
                 "bad search options (threads %d, walk cap slack %g, GA groups %d, budget %d, "
                 "transitions %d)",
                 opt->threads, opt->walk_cap_slack, opt->ga_groups, (int)opt->budget, (int)opt->transitions);
  return 0;
}

/* The request level's view of each unit: its Pareto set and multiplicity. */
static int bucket_req_ops(const search_units *u, const search_pareto *const *sets, scratch *sc, enpu_err *err) {
  for (int i = 0; i < u->count; i++) {
    ENPU_RETURN_IF(!sets[i] || sets[i]->count < 1, err, ENPU_ERR_INVALID, "unit %d (%s): no Pareto set", i,
                   u->unit[i].name);
    sc->req[i] = (search_req_op){sets[i]->points, sets[i]->count, u->unit[i].multiplicity};
  }
  return 0;
}

/* The hull walk, up to the largest slack's budget or the walk cap's; the result owns it
 * (the store records it). */
static int bucket_walk(const search_units *u, scratch *sc, double last_slack, const search_options *opt,
                       search_bucket_result *out, enpu_err *err) {
  const double cap_ns = search_budget_ns(opt->budget, out->t_nodvfs_ns, out->t_peak_ns,
                                         fmax(opt->walk_cap_slack, last_slack));
  const int rc = search_walk_build(sc->req, u->count, cap_ns, &sc->hull, err);
  if (rc == 0) out->walk_moves = search_walk_moves(sc->hull);
  out->walk = sc->hull;
  sc->hull = NULL;
  return rc;
}

/* search_compile_bucket_sets over units `u`, which the result takes. */
static int bucket_sets(search_ctx *s, cost_ctx *cost, const graph *g, config_policy policy, search_units *u,
                       const search_pareto *const *sets, const double *slacks, int nslack,
                       const search_options *opt, search_bucket_result *out, enpu_err *err) {
  memset(out, 0, sizeof *out);
  out->policy = policy;
  out->units = u;
  out->budget = opt->budget;
  policy_setup ps;
  int64_t instances;
  int rc = check_options(slacks, nslack, opt, err);
  if (rc == 0) rc = search_req_prepare(s, policy, opt, g, &ps, &instances, err);
  if (rc == 0 && ps.ops == POWER_OPS_CHIPWIDE) {
    rc = bucket_uniform(s, cost, g, &ps, sets, slacks, nslack, opt->budget, out, err);
    if (rc < 0) search_bucket_result_free(out);
    return rc;
  }
  scratch sc = {0};
  request rq = search_req_of_setup(u, &ps, opt, cost);
  rq.sets = sets;
  if (rc == 0) rc = bucket_alloc(g, u, nslack, s->chip->freq_states, &rq, &sc, out, err);
  if (rc == 0) rc = bucket_reference(s, cost, g, &ps, out, err);
  if (rc == 0) rc = bucket_peak_plan(&rq, &sc, out, err);
  if (rc == 0) rc = bucket_req_ops(u, sets, &sc, err);
  /* Request level: one walk serves every slack (and bounds it). */
  const double t_walk0 = enpu_now_s();
  if (rc == 0) rc = bucket_walk(u, &sc, slacks[nslack - 1], opt, out, err);
  const double walk_s = enpu_now_s() - t_walk0;
  if (rc == 0 && (ps.request == SEARCH_REQ_GA || opt->transition_aware))
    rc = search_ga_genes_make(u, sets, opt->ga_groups, &sc, err);
  for (int k = 0; rc == 0 && k < nslack; k++) {
    const double t0 = enpu_now_s();
    search_slack_plan *pl = &out->plans[k];
    pl->slack = slacks[k];
    pl->budget = opt->budget;
    pl->budget_ns = search_budget_ns(opt->budget, out->t_nodvfs_ns, out->t_peak_ns, slacks[k]);
    rc = bucket_slack(&rq, &sc, &ps, opt, k, out, err);
    pl->search_s = walk_s + (enpu_now_s() - t0);
  }
  if (rc == 0) rc = search_check_invariants(out->plans, nslack, out->policy_peak_energy_nj, err);
  search_scratch_free(&sc);
  if (rc < 0) {
    enpu_err_prefix(err, "%s: ", config_policy_name(policy));
    search_bucket_result_free(out);
  }
  return rc;
}

int search_compile_bucket_sets(search_ctx *s, cost_ctx *cost, const graph *g, config_policy policy,
                               const search_pareto *const *sets, const double *slacks, int nslack,
                               const search_options *opt, search_bucket_result *out, enpu_err *err) {
  search_units *u = NULL;
  search_options defaults;
  ENPU_FORWARD(bucket_units(s, cost, g, policy, &opt, &defaults, out, &u, err));
  return bucket_sets(s, cost, g, policy, u, sets, slacks, nslack, opt, out, err);
}
