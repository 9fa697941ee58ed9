/* validate_plan.c — re-simulating the stored plans of one bucket (validate.h): the
 * bucket's graph rebuilt from the job, its units (graph ops, or an epoch policy's
 * epochs) rebuilt by the search, the store's ops matched to units, every unit instance
 * placed on the point its plan's runs give it (checked against the store's walk replay
 * for a walk-prefix plan), and search_plan_simulate on the real operator order with V/f
 * transitions and, for a gated plan, power gating; each plan checked against its own
 * budget mode (strict: its time fits; paper: its critical-path time fits and its
 * overhead comes out as stored) and its regulator loss reproduced.
 *
 * Invariants: the store has been validated by store_load (every index in range), so rows
 * index their tables safely; unit instances are numbered as search_walk_positions
 * numbers them (unit u's instance r is offset_u + r), which is the order the farm's walk
 * moved them in. A mismatch between store and rebuild fails the plans with a message; it
 * is never an error of the call. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "cost.h"
#include "graph.h"
#include "search.h"
#include "validate.h"

_Static_assert(STORE_NSTATE == CONFIG_NCOMP, "a stored plan has one state per component");

struct validate_ctx {
  const config_job *job;
  search_ctx *search;
  cost_ctx *cost;
};

int validate_ctx_create(const config_job *job, validate_ctx **out, enpu_err *err) {
  *out = NULL;
  validate_ctx *v = enpu_calloc(1, sizeof *v);
  ENPU_RETURN_IF(!v, err, ENPU_ERR_NOMEM, "out of memory (validation context)");
  v->job = job;
  int rc = search_ctx_create(&job->chip, &v->search, err);
  if (rc == 0) rc = cost_ctx_create(&job->chip, &v->cost, err);
  if (rc == 0) *out = v;
  else validate_ctx_free(v);
  return rc;
}

void validate_ctx_free(validate_ctx *v) {
  if (!v) return;
  search_ctx_free(v->search);
  cost_ctx_free(v->cost);
  free(v);
}

static int close_to(double a, double b, double tol) { return fabs(a - b) <= tol * fmax(fabs(a), fabs(b)); }

/* Per bucket: the graph, its units, which unit each store op stands for, and scratch. */
typedef struct {
  graph *g;
  search_units *u;
  int *key_of;   /* per unit: index into the bucket's store ops, or -1 (one block
                    with pos and state) */
  uint32_t *pos; /* per unit instance: pareto row, or STORE_NO_INDEX */
  int (*state)[CONFIG_NCOMP];
} bucket_map;

static void bucket_map_free(bucket_map *m) {
  graph_free(m->g);
  search_units_free(m->u);
  free(m->key_of); /* owns pos and state */
}

/* Do units i and j of m share one store op? Equal signatures do; the uniform policy keeps
 * each segment's ops apart (schemas/planstore.md). */
static int same_store_unit(config_policy policy, const bucket_map *m, int i, int j) {
  const search_unit *a = &m->u->unit[i], *b = &m->u->unit[j];
  return a->signature == b->signature && (!power_policy_of(policy)->ops_per_segment ||
                                          graph_op_at(m->g, a->op)->segment == graph_op_at(m->g, b->op)->segment);
}

/* Does unit `un` reproduce store op `so`'s fastest Pareto point under the policy?
 * (A point's time is the bucket's budget measure: the op's time or its critical path.) */
static int same_unit(validate_ctx *v, const config_policy_spec *policy, const search_options *opt,
                     const store_policy_tables *t, uint32_t so, const bucket_map *m, int un, double tol, int *same,
                     enpu_err *err) {
  const store_pareto_rec *p = &t->pareto[t->ops[so].pareto_first];
  int st[CONFIG_NCOMP];
  for (int c = 0; c < CONFIG_NCOMP; c++) st[c] = p->states[c];
  cost_result r;
  ENPU_FORWARD(search_unit_breakdown(v->search, v->cost, m->g, m->u, un, policy->base, opt, st, &r, err));
  const double t_op = opt->budget == CONFIG_BUDGET_PAPER ? r.cp_time_ns : r.time_ns;
  *same = close_to(t_op, p->time_ns, tol) && close_to(r.energy_total_nj, p->energy_nj, tol);
  return 0;
}

/* The checks of one re-simulated plan against its own budget mode, most telling first:
 * the budget formula, the budget (strict: time; paper: critical-path time), and the
 * stored time, energy, overhead and the paper's overhead. */
static void check_plan(const store_bucket_rec *b, const store_plan_rec *pl, const store_validation_rec *o,
                       const search_plan_totals *sim, double tol, char *msg, size_t cap) {
  const double sim_cp = sim->cp_time_ns;
  double loss_diff = 0;
  for (int c = 0; c < CONFIG_NCOMP; c++)
    loss_diff = fmax(loss_diff, fabs(sim->regulator_loss_nj[c] - pl->regulator_loss_nj[c]) -
                                    tol * fmax(fabs(sim->regulator_loss_nj[c]), 1.0));
  config_budget mode;
  if (config_budget_decode(pl->budget, &mode) < 0) {
    snprintf(msg, cap, "budget code %u is no budget mode", (unsigned)pl->budget);
    return;
  }
  const int paper = mode == CONFIG_BUDGET_PAPER;
  const double want = search_budget_ns(mode, b->t_nodvfs_ns, b->t_peak_ns, pl->slack);
  const double fit = paper ? sim_cp : o->sim_time_ns;
  const double overhead = 100.0 * (o->sim_time_ns - sim_cp) / b->t_nodvfs_ns;
  const double paper_overhead = 100.0 * (o->sim_time_ns - sim->paper_base_time_ns) / b->t_nodvfs_ns;
  if (!close_to(pl->budget_ns, want, tol))
    snprintf(msg, cap, "budget %.6g ns is not %s = %.6g ns", pl->budget_ns,
             paper ? "(1 + slack) x T_nodvfs" : "max(T_nodvfs, T_peak) + slack x T_nodvfs", want);
  else if (fit > pl->budget_ns * (1 + tol))
    snprintf(msg, cap, "re-simulated %s %.6g ns exceeds the budget %.6g ns", paper ? "critical-path time" : "time",
             fit, pl->budget_ns);
  else if (!close_to(o->sim_time_ns, pl->time_ns, tol))
    snprintf(msg, cap, "re-simulated time %.9g ns differs from the stored %.9g ns", o->sim_time_ns, pl->time_ns);
  else if (!close_to(o->sim_energy_nj, pl->energy_nj, tol))
    snprintf(msg, cap, "re-simulated energy %.9g nJ differs from the stored %.9g nJ", o->sim_energy_nj,
             pl->energy_nj);
  else if (!close_to(sim_cp, pl->cp_time_ns, tol) ||
           fabs(overhead - pl->overhead_pct) > tol * fmax(1.0, fabs(overhead)))
    snprintf(msg, cap,
             "re-simulated critical path %.9g ns / overhead %.6g %% differ from the "
             "stored %.9g ns / %.6g %%",
             sim_cp, overhead, pl->cp_time_ns, pl->overhead_pct);
  else if (fabs(paper_overhead - pl->paper_overhead_pct) > tol * fmax(1.0, fabs(paper_overhead)))
    snprintf(msg, cap, "re-simulated paper overhead %.6g %% differs from the stored %.6g %%", paper_overhead,
             pl->paper_overhead_pct);
  else if (loss_diff > 0)
    snprintf(msg, cap, "re-simulated regulator loss differs from the stored one by up to %.6g nJ", loss_diff);
}

/* Build the graph and its units and match ops. *why is set (and 0 returned) when the
 * store and the rebuild disagree. */
static int match_bucket_ops(validate_ctx *v, const config_policy_spec *policy, const search_options *opt,
                            const store_policy_tables *t, const store_bucket_rec *b, double tol, bucket_map *m,
                            char *why, size_t why_cap, enpu_err *err) {
  enpu_err gerr = {0};
  if (graph_build(v->job, (config_phase)b->phase, b->batch, b->seq, &m->g, &gerr) < 0) {
    snprintf(why, why_cap, "graph: %.150s", gerr.msg);
    return 0;
  }
  ENPU_FORWARD(search_units_build(v->search, v->cost, m->g, policy->base, opt, &m->u, err));
  const search_units *u = m->u;
  ENPU_RETURN_IF(
      ENPU_CALLOC_PARTS(ENPU_PART(m->key_of, (size_t)u->count + 1), ENPU_PART(m->pos, (size_t)u->instances + 1),
                        ENPU_PART(m->state, (size_t)u->instances + 1)) < 0,
      err, ENPU_ERR_NOMEM, "out of memory (plan states)");
  for (int i = 0; i < u->count; i++) m->key_of[i] = -1;
  /* Units with equal signatures share one store op (the farm's key adds only the policy
   * and options to the signature, and the segment for uniform). Each store op takes the
   * first unmatched group of its kind and multiplicity that reproduces its fastest point. */
  for (uint32_t k = 0; k < b->ops_count; k++) {
    const store_bucket_op_rec *bo = &t->bucket_ops[b->ops_first + k];
    const store_op_rec *so = &t->ops[bo->op];
    int found = 0;
    for (int i = 0; i < u->count && !found; i++) {
      if (m->key_of[i] >= 0 || (uint32_t)u->unit[i].kind != so->kind) continue;
      uint64_t mult = 0;
      for (int j = i; j < u->count; j++)
        if (same_store_unit(policy->base, m, i, j)) mult += (uint64_t)u->unit[j].multiplicity;
      if (mult != bo->multiplicity) continue;
      ENPU_FORWARD(same_unit(v, policy, opt, t, bo->op, m, i, tol, &found, err));
      for (int j = i; found && j < u->count; j++)
        if (same_store_unit(policy->base, m, i, j)) m->key_of[j] = (int)k;
    }
    if (!found) {
      snprintf(why, why_cap, "store op %u (%s, %llu instances) matches no unit of the rebuilt graph", bo->op,
               so->name, (unsigned long long)bo->multiplicity);
      return 0;
    }
  }
  for (int i = 0; i < u->count; i++)
    if (m->key_of[i] < 0) {
      snprintf(why, why_cap, "unit %d (%s) has no store op", i, u->unit[i].name);
      return 0;
    }
  return 0;
}

/* The `n`-th instance of store op k (walk numbering: units in order, their instances in
 * order), or -1. */
static int64_t instance_of(const bucket_map *m, uint32_t k, uint64_t n) {
  for (int i = 0; i < m->u->count; i++) {
    if (m->key_of[i] != (int)k) continue;
    const uint64_t len = (uint64_t)(m->u->offset[i + 1] - m->u->offset[i]);
    if (n < len) return m->u->offset[i] + (int64_t)n;
    n -= len;
  }
  return -1;
}

/* Every instance of plan `pl` from its plan_states runs (each op's runs in instance
 * order): its Pareto row (or STORE_NO_INDEX) and its states. A row naming a Pareto point
 * must carry that point's states. */
static void apply_rows(const store_policy_tables *t, const store_bucket_rec *b, const store_plan_rec *pl,
                       bucket_map *m, char *why, size_t why_cap) {
  uint32_t k = 0;
  uint64_t n = 0; /* instances of bucket op k placed so far */
  for (uint64_t r = 0; r < pl->states_count && !why[0]; r++) {
    const store_plan_state_rec *ps = &t->plan_states[pl->states_first + r];
    while (k < b->ops_count && t->bucket_ops[b->ops_first + k].op != ps->op) k++, n = 0;
    const int same_states = ps->pareto == STORE_NO_INDEX ||
                            !memcmp(ps->states, t->pareto[ps->pareto].states, STORE_NSTATE);
    if (k == b->ops_count || !same_states) {
      snprintf(why, why_cap,
               "plan_states row %llu (op %u, point %u): not its bucket's op order, or states not "
               "its point's",
               (unsigned long long)(pl->states_first + r), ps->op, ps->pareto);
      break;
    }
    for (uint64_t c = 0; c < ps->instances; c++, n++) {
      const int64_t x = instance_of(m, k, n);
      if (x < 0) continue; /* the reader checked the runs against the multiplicities */
      m->pos[x] = ps->pareto;
      for (int q = 0; q < CONFIG_NCOMP; q++) m->state[x][q] = ps->states[q];
    }
  }
}

/* A walk-prefix plan's runs must put every instance where the store's own walk replay
 * does: of an op's instances (walk numbering) the first lead_instances at its lead point
 * (each walk step moves the lowest-numbered instances), the rest at its trail point. */
static void check_prefix(const store_policy_tables *t, uint32_t bucket, const store_plan_rec *pl,
                         const bucket_map *m, planstore_op_states *st, char *why, size_t why_cap) {
  if (pl->walk_prefix == STORE_NO_PREFIX) return;
  enpu_err e = {0};
  if (store_walk_replay(t, bucket, pl->walk_prefix, st, &e) < 0) {
    snprintf(why, why_cap, "walk prefix %llu: %.120s", (unsigned long long)pl->walk_prefix, e.msg);
    return;
  }
  for (uint32_t k = 0; k < t->buckets[bucket].ops_count && !why[0]; k++)
    for (uint64_t n = 0; n < st[k].instances; n++) {
      const int64_t x = instance_of(m, k, n);
      const uint32_t want = n < st[k].lead_instances ? st[k].lead_pareto : st[k].trail_pareto;
      if (x >= 0 && m->pos[x] != want) {
        snprintf(why, why_cap, "plan_states row of op %u puts instance %llu on point %u, walk prefix %llu on %u",
                 st[k].op, (unsigned long long)n, m->pos[x], (unsigned long long)pl->walk_prefix, want);
        break;
      }
    }
}

int validate_bucket(validate_ctx *v, const store_policy_tables *t, uint32_t bucket, uint32_t stratum,
                    double tolerance, store_validation_rec *out, size_t cap, enpu_err *err) {
  const store_bucket_rec *b = &t->buckets[bucket];
  ENPU_RETURN_IF(b->plan_count > cap, err, ENPU_ERR_RANGE, "bucket %u has %u plans, room for %zu", bucket,
                 b->plan_count, cap);
  config_policy_spec policy;
  ENPU_RETURN_IF(config_variant_of(t->name), err, ENPU_ERR_INVALID,
                 "policy '%s' is compiled on a sweep point's chip: validation re-simulates the job chip's "
                 "policies only",
                 t->name);
  ENPU_RETURN_IF(config_policy_spec_parse(t->name, &policy) < 0, err, ENPU_ERR_NOT_FOUND,
                 "unknown policy '%s' in the store", t->name);
  search_options opt;
  search_options_for_job(&opt, v->job, &policy);
  ENPU_RETURN_IF(config_budget_decode(b->budget, &opt.budget) < 0, err, ENPU_ERR_INVALID,
                 "bucket %u: budget code %u is no budget mode", bucket, (unsigned)b->budget);
  char why[STORE_MSG_LEN] = "";
  bucket_map m = {0};
  planstore_op_states *st = enpu_calloc((size_t)b->ops_count + 1, sizeof *st);
  int rc = st ? 0 : enpu_errorf(err, ENPU_ERR_NOMEM, "out of memory (bucket ops)");
  if (rc == 0) rc = match_bucket_ops(v, &policy, &opt, t, b, tolerance, &m, why, sizeof why, err);
  for (uint32_t p = 0; rc == 0 && p < b->plan_count; p++) {
    const store_plan_rec *pl = &t->plans[b->plan_first + p];
    store_validation_rec *o = &out[p];
    *o = (store_validation_rec){.bucket = bucket,
                                .plan = b->plan_first + p,
                                .stratum = stratum,
                                .phase = b->phase,
                                .batch = b->batch,
                                .seq = b->seq,
                                .slack = pl->slack,
                                .budget_ns = pl->budget_ns,
                                .stored_time_ns = pl->time_ns,
                                .stored_energy_nj = pl->energy_nj,
                                .sim_time_ns = NAN,
                                .sim_energy_nj = NAN};
    char msg[STORE_MSG_LEN] = "";
    snprintf(msg, sizeof msg, "%s", why);
    if (!msg[0]) apply_rows(t, b, pl, &m, msg, sizeof msg);
    if (!msg[0]) check_prefix(t, bucket, pl, &m, st, msg, sizeof msg);
    search_plan_totals sim = {0};
    if (!msg[0] && pl->gated && !policy.gate)
      snprintf(msg, sizeof msg, "a gated plan in policy %s, which does not gate", t->name);
    if (!msg[0]) {
      enpu_err serr = {0};
      if (search_plan_simulate(v->search, v->cost, m.g, policy.base, &opt, (const int(*)[CONFIG_NCOMP])m.state,
                               pl->gated, &sim, &serr) < 0)
        snprintf(msg, sizeof msg, "re-simulation: %.140s", serr.msg);
      o->sim_time_ns = sim.time_ns, o->sim_energy_nj = sim.energy_nj;
    }
    if (!msg[0]) check_plan(b, pl, o, &sim, tolerance, msg, sizeof msg);
    o->pass = !msg[0];
    memcpy(o->message, msg, sizeof o->message);
  }
  bucket_map_free(&m);
  free(st);
  return rc;
}
