/* search_policy.c — the search's options and context, a policy's setup (its row of the
 * policy table, power/power_policy.c, as domains, pipeline, power model and request
 * level), the evaluator that wraps cost_eval (measuring the op's time in the budget
 * mode's sense), and one op's compilation (its Pareto set) and breakdown under a policy.
 * The bucket, unit, epoch and finalisation files call these; nothing here calls them. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "search_internal.h"

void search_options_default(search_options *o) {
  *o = (search_options){.request = SEARCH_REQ_POLICY,
                        .enpu_domains = 5,
                        .walk_cap_slack = 0.5,
                        .threads = 1,
                        .ga = {1000, 500, 1},
                        .ga_groups = 8,
                        .ideal_method = SEARCH_OP_EXACT,
                        .transition_aware = 0,
                        .budget = CONFIG_BUDGET_STRICT,
                        .transitions = SEARCH_TRANS_PER_RAIL,
                        .shadow_vregs = -1,
                        .gating = 0,
                        .epoch_ns = 5e6};
}

void search_options_set_policy(search_options *o, const config_policy_spec *p) {
  o->shadow_vregs = p->shadow_vregs;
  o->gating = p->gate;
}

void search_options_for_job(search_options *o, const config_job *job, const config_policy_spec *p) {
  search_options_default(o);
  o->budget = job->budget;
  o->epoch_ns = job->epoch_ms * 1e6;
  if (p) search_options_set_policy(o, p);
}

/* The context's power models: the member each goes to, its HBM mode and regulator. */
static const struct {
  size_t member;
  power_hbm_mode hbm;
  power_regulator regulator;
} ctx_models[] = {{offsetof(search_ctx, fixed), POWER_HBM_CTRL_ONLY, POWER_REG_FIXED},
                  {offsetof(search_ctx, ctrl), POWER_HBM_CTRL_ONLY, POWER_REG_DVFS},
                  {offsetof(search_ctx, full), POWER_HBM_FULL, POWER_REG_DVFS},
                  {offsetof(search_ctx, dvfs_c), POWER_HBM_CTRL_ONLY, POWER_REG_DVFS_COMPUTE},
                  {offsetof(search_ctx, chipwide), POWER_HBM_CTRL_ONLY, POWER_REG_CHIPWIDE}};
#define NCTX_MODELS (sizeof ctx_models / sizeof ctx_models[0])

static power_model **ctx_model(search_ctx *s, size_t k) {
  return (power_model **)((char *)s + ctx_models[k].member);
}

int search_ctx_create(const config_chip *chip, search_ctx **out, enpu_err *err) {
  search_ctx *s = enpu_calloc(1, sizeof *s);
  ENPU_RETURN_IF(!s, err, ENPU_ERR_NOMEM, "out of memory (search context)");
  s->chip = chip;
  int rc = 0;
  for (size_t k = 0; rc == 0 && k < NCTX_MODELS; k++)
    rc = power_model_create(chip, ctx_models[k].hbm, ctx_models[k].regulator, ctx_model(s, k), err);
  if (rc == 0) rc = search_memo_create(&s->memo, err);
  if (rc == 0) *out = s;
  else search_ctx_free(s);
  return rc;
}

void search_ctx_free(search_ctx *s) {
  if (!s) return;
  for (size_t k = 0; k < NCTX_MODELS; k++) power_model_free(*ctx_model(s, k));
  search_memo_free(s->memo);
  free(s);
}

/* ---------------------------------------------------------------------------------
 * Policy → search setup (paper §4.1, §4.6) */

/* The pipelines of a setup: the variant's shadow register file; a gating copy. */
static int setup_finish(const search_ctx *s, const search_options *o, policy_setup *ps, enpu_err *err) {
  ENPU_RETURN_IF(o->shadow_vregs > s->chip->vregs, err, ENPU_ERR_INVALID,
                 "a shadow register file of %d registers: the chip has %d vector registers", o->shadow_vregs,
                 s->chip->vregs);
  ENPU_RETURN_IF(o->gating && !power_gating_available(ps->pm), err, ENPU_ERR_INVALID,
                 "power gating: the chip %s has no gating parameters", s->chip->name);
  ENPU_RETURN_IF(o->gating && o->transitions != SEARCH_TRANS_PER_RAIL, err, ENPU_ERR_INVALID,
                 "power gating is priced with per-rail transitions only");
  ps->pipe.shadow_vregs = o->shadow_vregs < 0 ? -1 : o->shadow_vregs;
  ps->gate_pipe = ps->pipe;
  ps->gate_pipe.gating = 1;
  ps->gating = o->gating != 0;
  return 0;
}

static int setup_base(const search_ctx *s, config_policy policy, const search_options *o, policy_setup *ps,
                      enpu_err *err);

int search_policy_setup(const search_ctx *s, config_policy policy, const search_options *o, policy_setup *ps,
                        enpu_err *err) {
  ENPU_FORWARD(setup_base(s, policy, o, ps, err));
  return setup_finish(s, o, ps, err);
}

/* The context's power model of a row's regulator and HBM model. */
static power_model *ctx_model_of(const search_ctx *s, const power_policy *row) {
  for (size_t k = 0; k < NCTX_MODELS; k++)
    if (ctx_models[k].regulator == row->regulator && ctx_models[k].hbm == row->hbm)
      return *(power_model *const *)((const char *)s + ctx_models[k].member);
  return NULL;
}

/* The policy's row (power_policy.c) as domains, pipeline, power model and request level. */
static int setup_base(const search_ctx *s, config_policy policy, const search_options *o, policy_setup *ps,
                      enpu_err *err) {
  const int peak = s->chip->freq_states;
  const power_policy *row = power_policy_of(policy);
  ENPU_RETURN_IF(!row, err, ENPU_ERR_INVALID, "unknown policy %d", (int)policy);
  ps->pm = ctx_model_of(s, row);
  ENPU_RETURN_IF(!ps->pm, err, ENPU_ERR_INTERNAL, "policy %s: no power model of its regulator",
                 config_policy_name(policy));
  ps->ops = row->ops;
  ps->transitions = row->ops != POWER_OPS_IDEAL;
  ps->request = o->request == SEARCH_REQ_POLICY ? (row->request_ga ? SEARCH_REQ_GA : SEARCH_REQ_WALK) : o->request;
  const int d = row->domains ? row->domains : o->enpu_domains;
  switch (row->ops) {
  case POWER_OPS_FIXED: cost_pipeline_nodvfs(&ps->pipe, ps->pm); return search_domains_nodvfs(&ps->dom, peak, err);
  case POWER_OPS_COMPUTE: /* one core clock, no crossing inside */
    cost_pipeline_nodvfs(&ps->pipe, ps->pm);
    return search_domains_dvfs_c(&ps->dom, peak, err);
  case POWER_OPS_DOMAINS:
    ENPU_FORWARD(cost_pipeline_enpu(&ps->pipe, d, ps->pm, err));
    ENPU_FORWARD(search_domains_enpu(&ps->dom, d, peak, SEARCH_OP_GREEDY, err));
    ps->dom.trim = o->op_trim;
    return 0;
  case POWER_OPS_IDEAL:
    cost_pipeline_ideal(&ps->pipe, ps->pm);
    ENPU_FORWARD(search_domains_enpu(&ps->dom, d, peak, o->ideal_method, err));
    ps->dom.trim = o->op_trim;
    return 0;
  case POWER_OPS_CHIPWIDE: /* every state (search_uniform.c) */
    cost_pipeline_nodvfs(&ps->pipe, ps->pm);
    ps->dom = (search_domains){.ndomains = 1, .peak_state = peak, .method = SEARCH_OP_EXHAUSTIVE};
    return 0;
  }
  return enpu_errorf(err, ENPU_ERR_INVALID, "unknown policy %d", (int)policy);
}

/* ---------------------------------------------------------------------------------
 * The evaluator over cost_eval */

/* The op's time is its critical-path time in paper mode (cost.h), its time otherwise. */
typedef struct {
  cost_ctx *cost;
  const graph_op *op;
  const cost_pipeline *pipe;
  config_budget budget;
} cost_user;

static int eval_with_cost(void *user, const int state[CONFIG_NCOMP], double *time_ns, double *energy_nj,
                          enpu_err *err) {
  const cost_user *u = user;
  cost_plan plan;
  memcpy(plan.state, state, sizeof plan.state);
  cost_result r;
  ENPU_FORWARD(cost_eval(u->cost, u->op, &plan, u->pipe, &r, err));
  *time_ns = u->budget == CONFIG_BUDGET_PAPER ? r.cp_time_ns : r.time_ns;
  *energy_nj = r.energy_total_nj;
  return 0;
}

/* Plans of one batch the evaluator hands the cost model at a time. */
enum { COST_USER_BATCH = 256 };

static int eval_batch_with_cost(void *user, int n, const int (*state)[CONFIG_NCOMP], double *time_ns,
                                double *energy_nj, enpu_err *err) {
  const cost_user *u = user;
  cost_plan plans[COST_USER_BATCH];
  cost_brief r[COST_USER_BATCH];
  for (int at = 0; at < n; at += COST_USER_BATCH) {
    const int k = n - at < COST_USER_BATCH ? n - at : COST_USER_BATCH;
    memcpy(plans, state + at, (size_t)k * sizeof *plans);
    ENPU_FORWARD(cost_eval_batch(u->cost, u->op, plans, k, u->pipe, r, err));
    for (int i = 0; i < k; i++) {
      time_ns[at + i] = u->budget == CONFIG_BUDGET_PAPER ? r[i].cp_time_ns : r[i].time_ns;
      energy_nj[at + i] = r[i].energy_nj;
    }
  }
  return 0;
}

static int bound_with_cost(void *user, const int lo[CONFIG_NCOMP], const int hi[CONFIG_NCOMP], double *time_ns,
                           double *energy_nj, enpu_err *err) {
  const cost_user *u = user;
  cost_plan a, b;
  memcpy(a.state, lo, sizeof a.state);
  memcpy(b.state, hi, sizeof b.state);
  cost_brief lb;
  ENPU_FORWARD(cost_bound_box(u->cost, u->op, &a, &b, u->pipe, &lb, err));
  *time_ns = u->budget == CONFIG_BUDGET_PAPER ? lb.cp_time_ns : lb.time_ns;
  *energy_nj = lb.energy_nj;
  return 0;
}

int search_eval_peak(cost_ctx *cost, const graph_op *op, const cost_pipeline *pipe, int peak, double *time_ns,
                     double *energy_nj, enpu_err *err) {
  const int state[CONFIG_NCOMP] = {peak, peak, peak, peak, peak};
  cost_user u = {cost, op, pipe, CONFIG_BUDGET_STRICT};
  return eval_with_cost(&u, state, time_ns, energy_nj, err);
}

/* Pareto set of one op (or one part of the exact search); the exhaustive and exact
 * searches get a cost context per extra thread. The cost model's batch entry point
 * evaluates, and its box bounds prune the exact search when the pipeline has them
 * (every unit in its own domain, no gating: cost.h). */
static int op_pareto(search_ctx *s, cost_ctx *cost, const graph_op *op, const policy_setup *ps, int threads,
                     config_budget budget, int part, search_pareto *out, enpu_err *err) {
  if (ps->dom.method == SEARCH_OP_GREEDY || ps->dom.ndomains == 0) threads = 1;
  int own_domains = 1;
  for (int u = 0; u < COST_NUNIT; u++)
    for (int w = 0; w < u; w++) own_domains &= ps->pipe.domain[u] != ps->pipe.domain[w];
  const search_evaluator ev = {eval_with_cost, eval_batch_with_cost,
                               own_domains && !ps->pipe.gating ? bound_with_cost : NULL};
  cost_user *users = enpu_calloc((size_t)threads, sizeof *users);
  void **uptr = enpu_calloc((size_t)threads, sizeof *uptr);
  int rc = users && uptr ? 0 : enpu_errorf(err, ENPU_ERR_NOMEM, "out of memory (evaluators)");
  for (int t = 0; rc == 0 && t < threads; t++) {
    users[t] = (cost_user){t == 0 ? cost : NULL, op, &ps->pipe, budget};
    if (t > 0) rc = cost_ctx_create(s->chip, &users[t].cost, err);
    uptr[t] = &users[t];
  }
  if (rc == 0) rc = search_op_search(s->memo, &ps->dom, &ev, uptr, threads, part, out, err);
  for (int t = 1; users && t < threads; t++) cost_ctx_free(users[t].cost);
  free(users);
  free(uptr);
  if (rc < 0) enpu_err_prefix(err, "op %d (%s): ", op->id, op->name);
  return rc;
}

/* ---------------------------------------------------------------------------------
 * One op, one policy */

int search_op_compile(search_ctx *s, cost_ctx *cost, const graph_op *op, config_policy policy,
                      const search_options *opt, search_pareto *out, enpu_err *err) {
  return search_op_compile_part(s, cost, op, policy, opt, -1, out, err);
}

int search_op_compile_part(search_ctx *s, cost_ctx *cost, const graph_op *op, config_policy policy,
                           const search_options *opt, int part, search_pareto *out, enpu_err *err) {
  memset(out, 0, sizeof *out);
  search_options defaults;
  if (!opt) search_options_default(&defaults), opt = &defaults;
  ENPU_RETURN_IF(opt->threads < 1, err, ENPU_ERR_INVALID, "bad search options (threads %d)", opt->threads);
  policy_setup ps;
  ENPU_FORWARD(search_policy_setup(s, policy, opt, &ps, err));
  if (ps.ops == POWER_OPS_CHIPWIDE) return search_uniform_sweep(cost, op, &ps.pipe, ps.dom.peak_state, out, err);
  return op_pareto(s, cost, op, &ps, opt->threads, opt->budget, part, out, err);
}

/* Which pipeline op_breakdown runs an op on: the policy's, or one of its references. */
typedef enum { ON_PIPELINE, ON_PAPER_BASE, ON_CROSSING_FREE } breakdown_on;

/* One plan of one op on the policy's pipeline after `prev` (NULL: alone), or alone on a
 * reference of that pipeline (`on`): the breakdowns below. */
static int op_breakdown(search_ctx *s, cost_ctx *cost, const graph_op *op, config_policy policy,
                        const search_options *opt, const int prev[CONFIG_NCOMP], const int state[CONFIG_NCOMP],
                        breakdown_on on, cost_result *out, enpu_err *err) {
  search_options defaults;
  if (!opt) search_options_default(&defaults), opt = &defaults;
  policy_setup ps;
  ENPU_FORWARD(search_policy_setup(s, policy, opt, &ps, err));
  if (on == ON_PAPER_BASE) cost_pipeline_paper_base(&ps.pipe, &ps.pipe);
  if (on == ON_CROSSING_FREE) cost_pipeline_crossing_free(&ps.pipe, &ps.pipe);
  cost_plan plan, before;
  memcpy(plan.state, state, sizeof plan.state);
  const int after = prev && ps.transitions && opt->transitions == SEARCH_TRANS_PER_RAIL;
  if (after) memcpy(before.state, prev, sizeof before.state);
  return cost_eval_after(cost, op, after ? &before : NULL, &plan, &ps.pipe, out, err);
}

int search_op_breakdown_after(search_ctx *s, cost_ctx *cost, const graph_op *op, config_policy policy,
                              const search_options *opt, const int prev[CONFIG_NCOMP],
                              const int state[CONFIG_NCOMP], cost_result *out, enpu_err *err) {
  return op_breakdown(s, cost, op, policy, opt, prev, state, ON_PIPELINE, out, err);
}

int search_op_breakdown(search_ctx *s, cost_ctx *cost, const graph_op *op, config_policy policy,
                        const search_options *opt, const int state[CONFIG_NCOMP], cost_result *out, enpu_err *err) {
  return op_breakdown(s, cost, op, policy, opt, NULL, state, ON_PIPELINE, out, err);
}

int search_op_paper_base(search_ctx *s, cost_ctx *cost, const graph_op *op, config_policy policy,
                         const search_options *opt, const int state[CONFIG_NCOMP], cost_result *out,
                         enpu_err *err) {
  return op_breakdown(s, cost, op, policy, opt, NULL, state, ON_PAPER_BASE, out, err);
}

int search_op_crossing_free(search_ctx *s, cost_ctx *cost, const graph_op *op, config_policy policy,
                            const search_options *opt, const int state[CONFIG_NCOMP], cost_result *out,
                            enpu_err *err) {
  return op_breakdown(s, cost, op, policy, opt, NULL, state, ON_CROSSING_FREE, out, err);
}
