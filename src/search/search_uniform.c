/* search_uniform.c — the `uniform` policy: one chip-wide V/f state for every component and
 * op (search_internal.h). Its op level evaluates each op at every state; its request
 * level records the rounds walk, whose k-th round boundary is the pass at state
 * peak − k, and per slack the cheapest state whose pass fits the budget — the static
 * chip-wide setting an offline tool would pick, beside the per-batch choice an online
 * governor makes from the same table.
 *
 * Invariants of a result: every plan is a whole number of rounds (walk_moves at a round
 * boundary), fits its budget, and costs no more than a smaller slack's plan or the
 * all-peak pass (round 0, which the NoDVFS pass equals: power.h, POWER_REG_CHIPWIDE). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "search_internal.h"

int search_uniform_sweep(cost_ctx *cost, const graph_op *op, const cost_pipeline *pipe, int peak,
                         search_pareto *out, enpu_err *err) {
  memset(out, 0, sizeof *out);
  ENPU_RETURN_IF(peak < 1, err, ENPU_ERR_INVALID, ENPU_POLICY_NAME_UNIFORM " sweep: %d states", peak);
  out->points = enpu_calloc((size_t)peak, sizeof *out->points);
  ENPU_RETURN_IF(!out->points, err, ENPU_ERR_NOMEM, "out of memory (" ENPU_POLICY_NAME_UNIFORM " sweep)");
  for (int k = 0; k < peak; k++) {
    cost_plan plan;
    for (int c = 0; c < CONFIG_NCOMP; c++) plan.state[c] = peak - k;
    cost_result r;
    const int rc = cost_eval(cost, op, &plan, pipe, &r, err);
    if (rc < 0) {
      enpu_err_prefix(err, "op %d (%s), " ENPU_POLICY_NAME_UNIFORM " state %d: ", op->id, op->name, peak - k);
      search_pareto_free(out);
      return rc;
    }
    search_point *p = &out->points[k];
    memcpy(p->state, plan.state, sizeof p->state);
    p->time_ns = r.time_ns;
    p->energy_nj = r.energy_total_nj;
  }
  out->count = peak;
  out->evals = peak;
  return 0;
}

/* Time and energy of the pass with every instance at point k (a uniform pass has no V/f
 * transition: its ops' sum, as the walk adds them). */
static void round_totals(const graph *g, const search_pareto *const *sets, int k, double *time_ns,
                         double *energy_nj) {
  double t = 0, e = 0;
  for (int i = 0; i < graph_op_count(g); i++) {
    const double m = (double)graph_op_at(g, i)->multiplicity;
    t += m * sets[i]->points[k].time_ns;
    e += m * sets[i]->points[k].energy_nj;
  }
  *time_ns = t;
  *energy_nj = e;
}

/* One slack's plan: round k of the walk (every instance at state peak − k). */
static int round_plan(int k, int peak, double time_ns, double energy_nj, int64_t instances, search_slack_plan *pl,
                      enpu_err *err) {
  pl->state = enpu_calloc((size_t)instances, sizeof *pl->state);
  ENPU_RETURN_IF(!pl->state, err, ENPU_ERR_NOMEM, "out of memory (" ENPU_POLICY_NAME_UNIFORM " plan)");
  pl->instances = instances;
  for (int64_t x = 0; x < instances; x++)
    for (int c = 0; c < CONFIG_NCOMP; c++) pl->state[x][c] = peak - k;
  pl->time_ns = pl->cp_time_ns = time_ns; /* the caller prices the critical path */
  pl->energy_nj = energy_nj;
  pl->lower_bound_nj = energy_nj;          /* one knob, every value tried: nothing to relax */
  pl->walk_moves = (int64_t)k * instances; /* a round moves every instance */
  return 0;
}

int search_uniform_bucket(const graph *g, const search_pareto *const *sets, int peak, const double *slacks,
                          int nslack, config_budget budget, search_bucket_result *out, enpu_err *err) {
  const int nops = graph_op_count(g);
  search_req_op *req = enpu_calloc((size_t)nops + 1, sizeof *req);
  double *t = enpu_calloc((size_t)peak + 1, sizeof *t), *e = enpu_calloc((size_t)peak + 1, sizeof *e);
  out->plans = enpu_calloc((size_t)nslack, sizeof *out->plans);
  int rc = req && t && e && out->plans
               ? 0
               : enpu_errorf(err, ENPU_ERR_NOMEM, "out of memory (" ENPU_POLICY_NAME_UNIFORM " bucket)");
  int64_t instances = 0;
  for (int i = 0; rc == 0 && i < nops; i++) {
    const graph_op *op = graph_op_at(g, i);
    if (!sets[i] || sets[i]->count != peak)
      rc = enpu_errorf(err, ENPU_ERR_INVALID, "op %d (%s): not a sweep of %d " ENPU_POLICY_NAME_UNIFORM " states",
                       i, op->name, peak);
    else req[i] = (search_req_op){sets[i]->points, sets[i]->count, op->multiplicity};
    instances += op->multiplicity;
  }
  if (rc == 0) rc = search_walk_rounds(req, nops, &out->walk, err);
  for (int k = 0; rc == 0 && k < peak; k++) round_totals(g, sets, k, &t[k], &e[k]);
  if (rc == 0) {
    out->nplans = nslack;
    out->walk_moves = search_walk_moves(out->walk);
  }
  out->budget = budget;
  for (int j = 0; rc == 0 && j < nslack; j++) {
    search_slack_plan *pl = &out->plans[j];
    pl->slack = slacks[j];
    pl->budget = budget;
    pl->budget_ns = search_budget_ns(budget, out->t_nodvfs_ns, out->t_peak_ns, slacks[j]);
    int best = 0; /* the all-peak pass fits every budget: it is the NoDVFS pass */
    for (int k = 1; k < peak; k++)
      if (t[k] <= pl->budget_ns && e[k] < e[best]) best = k;
    rc = round_plan(best, peak, t[best], e[best], instances, pl, err);
    pl->savings_vs_nodvfs = 1.0 - pl->energy_nj / out->e_nodvfs_nj;
    pl->request_evals = peak;
  }
  if (rc == 0) rc = search_check_invariants(out->plans, nslack, out->policy_peak_energy_nj, err);
  free(req);
  free(t);
  free(e);
  if (rc < 0) enpu_err_prefix(err, ENPU_POLICY_NAME_UNIFORM ": "); /* the caller frees out */
  return rc;
}
