/* search_bucket.c — compiling one bucket for one policy: policy → domains, pipeline and
 * power model; the evaluator that wraps cost_eval; op-level Pareto sets per distinct op
 * signature; the request-level search (hull walk, the paper's greedy, or the GA over runs
 * of layers); finalisation on the real operator order with V/f transitions, optionally
 * transition-aware (rail lifting, local search); the plan invariants.
 *
 * Invariants of a returned result: every plan fits its budget with transitions included,
 * energy does not grow with slack, no plan is worse than the policy's all-peak plan, and
 * the lower bound (LP relaxation over the same Pareto sets) is below every plan — checked
 * by search_check_invariants before returning. Finalisation only ever picks among plans
 * that fit: a walk prefix (stepping back while transitions push it over) or the GA's plan,
 * their lifted or locally improved variants (transition-aware only), the all-peak plan
 * (no transitions), or the previous slack's plan. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "search.h"

struct search_ctx {
  const config_chip *chip;
  power_model *fixed; /* NoDVFS: fixed regulator, peak only */
  power_model *ctrl;  /* DVFS IVR, HBM controller only */
  power_model *full;  /* DVFS IVR, HBM controller + I/O */
  search_memo *memo;
};

void search_options_default(search_options *o) {
  *o = (search_options){.request = SEARCH_REQ_WALK, .enpu_domains = 5, .walk_cap_slack = 0.5,
                        .threads = 1, .ga = {1000, 500, 1}, .ga_groups = 8,
                        .ideal_method = SEARCH_OP_EXHAUSTIVE, .transition_aware = 0};
}

int search_ctx_create(const config_chip *chip, search_ctx **out, enpu_err *err) {
  search_ctx *s = enpu_calloc(1, sizeof *s);
  ENPU_RETURN_IF(!s, err, ENPU_ERR_NOMEM, "out of memory (search context)");
  s->chip = chip;
  int rc = power_model_create(chip, POWER_HBM_CTRL_ONLY, POWER_REG_FIXED, &s->fixed, err);
  if (rc == 0) rc = power_model_create(chip, POWER_HBM_CTRL_ONLY, POWER_REG_DVFS, &s->ctrl, err);
  if (rc == 0) rc = power_model_create(chip, POWER_HBM_FULL, POWER_REG_DVFS, &s->full, err);
  if (rc == 0) rc = search_memo_create(&s->memo, err);
  if (rc < 0) {
    search_ctx_free(s);
    return rc;
  }
  *out = s;
  return 0;
}

void search_ctx_free(search_ctx *s) {
  if (!s) return;
  power_model_free(s->fixed);
  power_model_free(s->ctrl);
  power_model_free(s->full);
  search_memo_free(s->memo);
  free(s);
}

void search_bucket_result_free(search_bucket_result *r) {
  if (!r) return;
  for (int i = 0; i < r->nplans; i++) free(r->plans[i].state);
  search_walk_free(r->walk);
  r->walk = NULL;
  free(r->plans);
  r->plans = NULL;
  r->nplans = 0;
}

/* ---------------------------------------------------------------------------------
 * Policy → search setup (DESIGN.md §1 policies table) */

typedef struct {
  search_domains dom;
  cost_pipeline pipe;
  const power_model *pm;
  int transitions; /* V/f transitions priced between ops (not for `ideal`) */
} policy_setup;

static int policy_setup_make(const search_ctx *s, config_policy policy, const search_options *o,
                             policy_setup *ps, enpu_err *err) {
  const int peak = s->chip->freq_states;
  ps->transitions = 1;
  switch (policy) {
  case CONFIG_POLICY_NODVFS:
    ps->pm = s->fixed;
    cost_pipeline_nodvfs(&ps->pipe, ps->pm);
    return search_domains_nodvfs(&ps->dom, peak, err);
  case CONFIG_POLICY_DVFS_C:
    ps->pm = s->ctrl;
    cost_pipeline_nodvfs(&ps->pipe, ps->pm); /* one core clock, no crossing inside */
    return search_domains_dvfs_c(&ps->dom, peak, err);
  case CONFIG_POLICY_ENPU_C:
  case CONFIG_POLICY_ENPU_ALL:
    ps->pm = policy == CONFIG_POLICY_ENPU_C ? s->ctrl : s->full;
    ENPU_FORWARD(cost_pipeline_enpu(&ps->pipe, o->enpu_domains, ps->pm, err));
    ENPU_FORWARD(search_domains_enpu(&ps->dom, o->enpu_domains, peak, SEARCH_OP_GREEDY, err));
    ps->dom.trim = o->op_trim;
    return 0;
  case CONFIG_POLICY_IDEAL:
    ps->pm = s->full;
    ps->transitions = 0;
    cost_pipeline_ideal(&ps->pipe, ps->pm);
    ENPU_FORWARD(search_domains_enpu(&ps->dom, 5, peak, o->ideal_method, err));
    ps->dom.trim = o->op_trim;
    return 0;
  default:
    return enpu_errorf(err, ENPU_ERR_INVALID, "unknown policy %d", (int)policy);
  }
}

/* ---------------------------------------------------------------------------------
 * The evaluator over cost_eval */

typedef struct {
  cost_ctx *cost;
  const graph_op *op;
  const cost_pipeline *pipe;
} cost_user;

static int cost_user_eval(void *user, const int state[CONFIG_NCOMP], double *time_ns,
                          double *energy_nj, enpu_err *err) {
  const cost_user *u = user;
  cost_plan plan;
  memcpy(plan.state, state, sizeof plan.state);
  cost_result r;
  ENPU_FORWARD(cost_eval(u->cost, u->op, &plan, u->pipe, &r, err));
  *time_ns = r.time_ns;
  *energy_nj = r.energy_total_nj;
  return 0;
}

static int eval_peak(cost_ctx *cost, const graph_op *op, const cost_pipeline *pipe, int peak,
                     double *time_ns, double *energy_nj, enpu_err *err) {
  const int state[CONFIG_NCOMP] = {peak, peak, peak, peak, peak};
  cost_user u = {cost, op, pipe};
  return cost_user_eval(&u, state, time_ns, energy_nj, err);
}

/* Pareto set of one op; the exhaustive search gets a cost context per extra thread. */
static int op_pareto(search_ctx *s, cost_ctx *cost, const graph_op *op, const policy_setup *ps,
                     int threads, search_pareto *out, enpu_err *err) {
  if (ps->dom.method != SEARCH_OP_EXHAUSTIVE || ps->dom.ndomains == 0) threads = 1;
  cost_user *users = enpu_calloc((size_t)threads, sizeof *users);
  void **uptr = enpu_calloc((size_t)threads, sizeof *uptr);
  int rc = users && uptr ? 0 : enpu_errorf(err, ENPU_ERR_NOMEM, "out of memory (evaluators)");
  for (int t = 0; rc == 0 && t < threads; t++) {
    users[t] = (cost_user){t == 0 ? cost : NULL, op, &ps->pipe};
    if (t > 0) rc = cost_ctx_create(s->chip, &users[t].cost, err);
    uptr[t] = &users[t];
  }
  if (rc == 0) rc = search_op_pareto(s->memo, &ps->dom, cost_user_eval, uptr, threads, out, err);
  for (int t = 1; users && t < threads; t++) cost_ctx_free(users[t].cost);
  free(users);
  free(uptr);
  if (rc < 0) enpu_err_prefix(err, "op %d (%s): ", op->id, op->name);
  return rc;
}

/* ---------------------------------------------------------------------------------
 * Finalisation on the real operator order */

/* V/f transition between two consecutive instances: every rail moves in parallel, the
 * chip waits for the slowest (tn); each component pays its transition energy and its
 * static energy for the rest of tn, "other" static power runs for tn. */
static int transition(const power_model *pm, const int a[CONFIG_NCOMP], const int b[CONFIG_NCOMP],
                      double *tn_ns, double *en_nj, enpu_err *err) {
  double own[CONFIG_NCOMP], tn = 0;
  for (int c = 0; c < CONFIG_NCOMP; c++) {
    own[c] = power_transition_ns(pm, power_voltage_v(pm, (config_component)c, a[c]),
                                 power_voltage_v(pm, (config_component)c, b[c]));
    if (own[c] > tn) tn = own[c];
  }
  *tn_ns = tn;
  *en_nj = 0;
  if (tn <= 0) return 0;
  double en = power_other_energy(pm, tn);
  for (int c = 0; c < CONFIG_NCOMP; c++) {
    en += power_transition_energy(pm, (config_component)c, a[c], b[c]);
    if (tn - own[c] <= 0) continue;
    power_energy_nj pe;
    ENPU_FORWARD(power_energy(pm, (config_component)c, b[c], 0, tn - own[c], 1, &pe, err));
    en += pe.total_nj;
  }
  *en_nj = en;
  return 0;
}

typedef struct {
  const graph *g;
  const search_pareto *const *sets; /* per graph op */
  const int64_t *offset;            /* per graph op: first instance in walk numbering */
  int64_t instances;
  const power_model *pm;
  int transitions;
  cost_ctx *cost;                   /* rail lifting evaluates raised states */
  const cost_pipeline *pipe;
  const search_domains *dom;
  int transition_aware;
} request;

typedef struct {
  search_req_op *req;
  int64_t *offset;
  int *pos;
  int *best_pos; /* positions of the plan taken so far, when it is on the Pareto sets */
  int have_best;
  int (*peak_state)[CONFIG_NCOMP];
  int (*cand)[CONFIG_NCOMP];  /* a candidate plan's states, execution order */
  int (*lift)[CONFIG_NCOMP];  /* the same with rails lifted */
  double *inst_t, *inst_e;    /* per instance of `cand` */
  int *op_of;                 /* graph op of each instance (execution order) */
  int64_t *exec_of;           /* execution index of each instance (walk numbering) */
  search_req_op *ga_req;      /* GA genes (and polish units): runs of consecutive layers
                                 of one graph op */
  int *ga_op, *ga_first;      /* per gene: graph op, first layer */
  int *ga_genes, *ga_seed;
  int ga_n;
  int (*cache_state)[CONFIG_NCOMP]; /* per graph op: the last lifted state evaluated */
  double *cache_t, *cache_e;
  search_walk *hull, *greedy;
} scratch;

static void scratch_free(scratch *sc) {
  free(sc->req);
  free(sc->offset);
  free(sc->pos);
  free(sc->best_pos);
  free(sc->peak_state);
  free(sc->cand);
  free(sc->lift);
  free(sc->inst_t);
  free(sc->inst_e);
  free(sc->op_of);
  free(sc->exec_of);
  free(sc->ga_req);
  free(sc->ga_op);
  free(sc->ga_first);
  free(sc->ga_genes);
  free(sc->ga_seed);
  free(sc->cache_state);
  free(sc->cache_t);
  free(sc->cache_e);
  search_walk_free(sc->hull);
  search_walk_free(sc->greedy);
}

/* Time and energy of a plan given its states and the time and energy of each instance:
 * the ops' sum plus the transitions between consecutive instances. */
static int plan_total(const request *rq, const int (*state)[CONFIG_NCOMP], const double *it,
                      const double *ie, double *time_ns, double *energy_nj, enpu_err *err) {
  double t = 0, e = 0;
  for (int64_t x = 0; x < rq->instances; x++) {
    t += it[x];
    e += ie[x];
    if (x == 0 || !rq->transitions) continue;
    double tn, en;
    ENPU_FORWARD(transition(rq->pm, state[x - 1], state[x], &tn, &en, err));
    t += tn;
    e += en;
  }
  *time_ns = t;
  *energy_nj = e;
  return 0;
}

/* The plan that puts instance r of op i at point pos[offset_i + r], into sc->cand (states),
 * sc->inst_t/inst_e; its totals with transitions. */
static int finalise(const request *rq, scratch *sc, const int *pos, double *time_ns,
                    double *energy_nj, enpu_err *err) {
  int64_t x = 0;
  for (int si = 0; si < graph_segment_count(rq->g); si++) {
    const graph_segment *seg = graph_segment_at(rq->g, si);
    for (int64_t r = 0; r < seg->repeat; r++)
      for (int i = seg->first_op; i < seg->first_op + seg->op_count; i++) {
        const int64_t count = graph_op_at(rq->g, i)->count;
        for (int64_t c = 0; c < count; c++, x++) {
          const search_point *p = &rq->sets[i]->points[pos[rq->offset[i] + r * count + c]];
          memcpy(sc->cand[x], p->state, sizeof sc->cand[x]);
          sc->inst_t[x] = p->time_ns;
          sc->inst_e[x] = p->energy_nj;
        }
      }
  }
  return plan_total(rq, (const int(*)[CONFIG_NCOMP])sc->cand, sc->inst_t, sc->inst_e, time_ns,
                    energy_nj, err);
}

/* The transition into execution instance x of `state` (none for the first instance or
 * without transitions). */
static int edge(const request *rq, const int (*state)[CONFIG_NCOMP], int64_t x, double *tn,
                double *en, enpu_err *err) {
  *tn = *en = 0;
  if (x <= 0 || x >= rq->instances || !rq->transitions) return 0;
  return transition(rq->pm, state[x - 1], state[x], tn, en, err);
}

/* Step the finalised plan in sc (positions sc->pos, totals *t, *e) back by one instance
 * move: undo move `move` of walk w, held by step *step (the caller walks the steps
 * backwards from the last). The walk moves the lowest-numbered instances still at a
 * step's `from` first, so an op's positions fall with the instance number and the
 * instance that move moved is the last one at the step's `to`. Only that instance and
 * its two transitions change: O(1) instead of a whole finalise. */
static int step_back(const request *rq, scratch *sc, const search_walk *w, int64_t move,
                     int *step, double *t, double *e, enpu_err *err) {
  while (*step > 0 && search_walk_step_at(w, *step)->moves_before > move) (*step)--;
  const search_walk_step *st = search_walk_step_at(w, *step);
  int *p = sc->pos + rq->offset[st->op];
  int64_t lo = 0, hi = graph_op_at(rq->g, st->op)->multiplicity;
  while (lo < hi) {
    const int64_t mid = lo + (hi - lo) / 2;
    if (p[mid] >= st->to) lo = mid + 1;
    else hi = mid;
  }
  ENPU_RETURN_IF(lo == 0 || p[lo - 1] != st->to, err, ENPU_ERR_INTERNAL,
                 "walk move %lld: op %d has no instance at point %d", (long long)move, st->op,
                 st->to);
  p[lo - 1] = st->from;
  const int64_t x = sc->exec_of[rq->offset[st->op] + lo - 1];
  const int(*cand)[CONFIG_NCOMP] = (const int(*)[CONFIG_NCOMP])sc->cand;
  double tn[4], en[4];
  ENPU_FORWARD(edge(rq, cand, x, &tn[0], &en[0], err));
  ENPU_FORWARD(edge(rq, cand, x + 1, &tn[1], &en[1], err));
  const search_point *pt = &rq->sets[st->op]->points[st->from];
  *t -= sc->inst_t[x] + tn[0] + tn[1];
  *e -= sc->inst_e[x] + en[0] + en[1];
  memcpy(sc->cand[x], pt->state, sizeof sc->cand[x]);
  sc->inst_t[x] = pt->time_ns;
  sc->inst_e[x] = pt->energy_nj;
  ENPU_FORWARD(edge(rq, cand, x, &tn[2], &en[2], err));
  ENPU_FORWARD(edge(rq, cand, x + 1, &tn[3], &en[3], err));
  *t += sc->inst_t[x] + tn[2] + tn[3];
  *e += sc->inst_e[x] + en[2] + en[3];
  return 0;
}

/* Take a candidate that fits and is cheaper than the plan so far. */
static void take(const request *rq, const int (*state)[CONFIG_NCOMP], double t, double e,
                 double budget_ns, search_slack_plan *pl, int *taken) {
  *taken = 0;
  if (t > budget_ns || e >= pl->energy_nj) return;
  pl->time_ns = t;
  pl->energy_nj = e;
  memcpy(pl->state, state, (size_t)rq->instances * sizeof *pl->state);
  *taken = 1;
}

/* Rail lifting (transition-aware finalisation): for every non-empty subset of the searched
 * domains, raise each instance's states in those domains to the lowest state whose
 * voltages reach the highest ones the domain uses anywhere in sc->cand, so those rails
 * keep one voltage for the whole request. Raising a state never slows an op, and a
 * frequency change inside a voltage band costs no transition; the price is the energy of
 * the higher frequencies. Keeps the cheapest lifted plan that fits. */
static int lift_rails(const request *rq, scratch *sc, double budget_ns, search_slack_plan *pl,
                      enpu_err *err) {
  const int d = rq->dom->ndomains, peak = rq->dom->peak_state;
  int floor_state[CONFIG_NCOMP] = {0}; /* per domain: the lifted rail's lowest state */
  for (int k = 0; k < d; k++) {
    double vmax[CONFIG_NCOMP] = {0};
    for (int64_t x = 0; x < rq->instances; x++)
      for (int c = 0; c < CONFIG_NCOMP; c++)
        if (rq->dom->domain_of[c] == k)
          vmax[c] = fmax(vmax[c], power_voltage_v(rq->pm, (config_component)c, sc->cand[x][c]));
    int s = 1;
    for (; s < peak; s++) {
      int ok = 1;
      for (int c = 0; c < CONFIG_NCOMP && ok; c++)
        if (rq->dom->domain_of[c] == k)
          ok = power_voltage_v(rq->pm, (config_component)c, s) >= vmax[c] - 1e-12;
      if (ok) break;
    }
    floor_state[k] = s;
  }
  const int nops = graph_op_count(rq->g);
  for (int i = 0; i < nops; i++) sc->cache_state[i][0] = -1;
  double *lt = sc->inst_t + rq->instances, *le = sc->inst_e + rq->instances;
  for (unsigned mask = 1; mask < (1u << d); mask++) {
    for (int64_t x = 0; x < rq->instances; x++) {
      int changed = 0;
      for (int c = 0; c < CONFIG_NCOMP; c++) {
        const int k = rq->dom->domain_of[c];
        int st = sc->cand[x][c];
        if (k >= 0 && (mask >> k & 1u) && st < floor_state[k]) st = floor_state[k], changed = 1;
        sc->lift[x][c] = st;
      }
      lt[x] = sc->inst_t[x], le[x] = sc->inst_e[x];
      if (!changed) continue;
      const int i = sc->op_of[x];
      if (memcmp(sc->cache_state[i], sc->lift[x], sizeof sc->lift[x])) {
        cost_user u = {rq->cost, graph_op_at(rq->g, i), rq->pipe};
        ENPU_FORWARD(cost_user_eval(&u, sc->lift[x], &sc->cache_t[i], &sc->cache_e[i], err));
        memcpy(sc->cache_state[i], sc->lift[x], sizeof sc->lift[x]);
      }
      lt[x] = sc->cache_t[i], le[x] = sc->cache_e[i];
    }
    double t, e;
    int taken;
    ENPU_FORWARD(plan_total(rq, (const int(*)[CONFIG_NCOMP])sc->lift, lt, le, &t, &e, err));
    pl->request_evals++;
    take(rq, (const int(*)[CONFIG_NCOMP])sc->lift, t, e, budget_ns, pl, &taken);
    if (taken) pl->lifted_mask = mask, pl->walk_moves = -1, sc->have_best = 0;
  }
  return 0;
}

/* Transition-aware local search on the real operator order, from the plan taken so far
 * when its instances sit on Pareto points (sc->best_pos): repeatedly apply the best of the
 * moves "shift every instance of one polish unit (a run of layers of one op, as the GA's
 * genes) one Pareto point faster or slower" that keeps the plan within budget and lowers
 * its energy with transitions included, until none does (at most 64 moves). It finds
 * what the walk cannot see: moves that remove transitions, or that spend the time a
 * transition step-back left unused. */
static int polish(const request *rq, scratch *sc, double budget_ns, search_slack_plan *pl,
                  enpu_err *err) {
  if (!sc->have_best) return 0;
  for (int iter = 0; iter < 64; iter++) {
    int best_u = -1, best_d = 0;
    double best_t = pl->time_ns, best_e = pl->energy_nj;
    for (int u = 0; u < sc->ga_n; u++) {
      int *p = sc->best_pos + rq->offset[sc->ga_op[u]] + sc->ga_first[u];
      const int64_t n = sc->ga_req[u].multiplicity;
      const int top = sc->ga_req[u].count - 1;
      for (int d = -1; d <= 1; d += 2) {
        int changed = 0;
        for (int64_t r = 0; r < n; r++) changed |= p[r] + d >= 0 && p[r] + d <= top;
        if (!changed) continue;
        for (int64_t r = 0; r < n; r++)
          if (p[r] + d >= 0 && p[r] + d <= top) p[r] += d, sc->pos[r] = 1;
          else sc->pos[r] = 0; /* sc->pos: which instances moved, to undo */
        double t, e;
        const int rc = finalise(rq, sc, sc->best_pos, &t, &e, err);
        for (int64_t r = 0; r < n; r++) p[r] -= sc->pos[r] ? d : 0;
        ENPU_FORWARD(rc);
        pl->request_evals++;
        if (t <= budget_ns && e < best_e) best_u = u, best_d = d, best_t = t, best_e = e;
      }
    }
    if (best_u < 0) break;
    int *p = sc->best_pos + rq->offset[sc->ga_op[best_u]] + sc->ga_first[best_u];
    const int top = sc->ga_req[best_u].count - 1;
    for (int64_t r = 0; r < sc->ga_req[best_u].multiplicity; r++)
      if (p[r] + best_d >= 0 && p[r] + best_d <= top) p[r] += best_d;
    pl->time_ns = best_t;
    pl->energy_nj = best_e;
    pl->polish_moves++;
  }
  if (!pl->polish_moves) return 0;
  double t, e;
  ENPU_FORWARD(finalise(rq, sc, sc->best_pos, &t, &e, err));
  memcpy(pl->state, sc->cand, (size_t)rq->instances * sizeof *pl->state);
  pl->walk_moves = -1;
  return 0;
}

/* ---------------------------------------------------------------------------------
 * One bucket, one policy */

static int check_graph(const graph *g, int64_t *instances, enpu_err *err) {
  *instances = 0;
  for (int si = 0; si < graph_segment_count(g); si++) {
    const graph_segment *seg = graph_segment_at(g, si);
    for (int i = seg->first_op; i < seg->first_op + seg->op_count; i++) {
      const graph_op *op = graph_op_at(g, i);
      ENPU_RETURN_IF(op->count < 1 || op->multiplicity != seg->repeat * op->count, err,
                     ENPU_ERR_INVALID,
                     "op %d: multiplicity %lld is not its segment's repeat %lld × count %lld", i,
                     (long long)op->multiplicity, (long long)seg->repeat, (long long)op->count);
      *instances += op->multiplicity;
    }
  }
  return 0;
}

/* Execution order of the instances (graph.h): op_of[x], the graph op of execution index
 * x, and exec_of[w], the execution index of the instance numbered w in the walk
 * (instance r·count + c of op i is w = offset[i] + r·count + c). */
static void exec_order(const graph *g, const int64_t *offset, int *op_of, int64_t *exec_of) {
  int64_t x = 0;
  for (int si = 0; si < graph_segment_count(g); si++) {
    const graph_segment *seg = graph_segment_at(g, si);
    for (int64_t r = 0; r < seg->repeat; r++)
      for (int i = seg->first_op; i < seg->first_op + seg->op_count; i++) {
        const int64_t count = graph_op_at(g, i)->count;
        for (int64_t c = 0; c < count; c++, x++) {
          op_of[x] = i;
          exec_of[offset[i] + r * count + c] = x;
        }
      }
  }
}

void search_states_by_walk(const graph *g, const int (*exec)[CONFIG_NCOMP],
                           int (*walk)[CONFIG_NCOMP]) {
  int64_t offset = 0, x = 0;
  for (int si = 0; si < graph_segment_count(g); si++) {
    const graph_segment *seg = graph_segment_at(g, si);
    const int64_t first = offset; /* walk index of the segment's first op */
    for (int i = seg->first_op; i < seg->first_op + seg->op_count; i++)
      offset += graph_op_at(g, i)->multiplicity;
    for (int64_t r = 0; r < seg->repeat; r++)
      for (int i = seg->first_op, at = 0; i < seg->first_op + seg->op_count; i++) {
        const int64_t count = graph_op_at(g, i)->count;
        for (int64_t c = 0; c < count; c++, x++)
          memcpy(walk[first + at + r * count + c], exec[x], sizeof walk[0]);
        at += (int)graph_op_at(g, i)->multiplicity;
      }
  }
}

/* Start a slack's plan at the policy's all-peak plan (no transitions). */
static void plan_peak(const request *rq, scratch *sc, const search_bucket_result *res,
                      search_slack_plan *pl) {
  sc->have_best = 0;
  pl->walk_moves = -1;
  pl->lifted_mask = 0;
  pl->polish_moves = 0;
  pl->from_ga = 0;
  pl->time_ns = res->policy_peak_time_ns;
  pl->energy_nj = res->policy_peak_energy_nj;
  memcpy(pl->state, sc->peak_state, (size_t)rq->instances * sizeof *pl->state);
}

static int plan_fits(const search_slack_plan *pl, const search_bucket_result *res,
                     double budget_ns, enpu_err *err) {
  ENPU_RETURN_IF(res->policy_peak_time_ns > budget_ns && pl->time_ns > budget_ns, err,
                 ENPU_ERR_INFEASIBLE,
                 "slack %g: no plan fits the budget %.1f ns (all-peak takes %.1f ns)",
                 pl->slack, budget_ns, res->policy_peak_time_ns);
  return 0;
}

/* Plan of one slack from a walk: the prefix within the budget, and with rail lifting its
 * lifted variants; stepping back along the walk while transitions push it over; the
 * all-peak plan if it is cheaper or nothing else fits. */
static int plan_slack(const request *rq, scratch *sc, const search_walk *w, double budget_ns,
                      const search_bucket_result *res, search_slack_plan *pl, enpu_err *err) {
  search_prefix pf;
  ENPU_FORWARD(search_walk_prefix(w, budget_ns, &pf, err));
  pl->request_evals = pf.moves + 1;
  plan_peak(rq, sc, res, pl);
  /* The longest prefix that fits with transitions: step back one instance move at a
   * time (incrementally, step_back), and confirm a candidate with a whole finalise. */
  int step = search_walk_step_count(w) - 1;
  double t = 0, e = 0;
  ENPU_FORWARD(search_walk_positions(w, pf.moves, sc->pos, err));
  ENPU_FORWARD(finalise(rq, sc, sc->pos, &t, &e, err));
  for (int64_t m = pf.moves; m >= 0; m--) {
    int taken;
    if (m < pf.moves) ENPU_FORWARD(step_back(rq, sc, w, m, &step, &t, &e, err));
    pl->request_evals++;
    if (m == pf.moves && rq->transition_aware && rq->transitions)
      ENPU_FORWARD(lift_rails(rq, sc, budget_ns, pl, err));
    if (t > budget_ns * (1 + 1e-9)) continue; /* clearly over, whatever the rounding */
    if (m < pf.moves) ENPU_FORWARD(finalise(rq, sc, sc->pos, &t, &e, err));
    if (t > budget_ns) continue;
    take(rq, (const int(*)[CONFIG_NCOMP])sc->cand, t, e, budget_ns, pl, &taken);
    if (taken) {
      pl->walk_moves = m, pl->lifted_mask = 0;
      memcpy(sc->best_pos, sc->pos, (size_t)rq->instances * sizeof *sc->pos);
      sc->have_best = 1;
    }
    break;
  }
  if (rq->transition_aware && rq->transitions) ENPU_FORWARD(polish(rq, sc, budget_ns, pl, err));
  return plan_fits(pl, res, budget_ns, err);
}

/* The GA's genes: each graph op's instances split into at most `groups` runs of
 * consecutive layers, one gene per run (so repeated layers keep some granularity while
 * the genome stays short: ~100 genes for an 80-layer model). */
static int ga_genes_make(const graph *g, const search_pareto *const *sets, int groups,
                         scratch *sc, enpu_err *err) {
  const int nops = graph_op_count(g);
  int n = 0;
  for (int i = 0; i < nops; i++) {
    const int64_t m = graph_op_at(g, i)->multiplicity;
    n += (int)(m < groups ? m : groups);
  }
  sc->ga_req = enpu_calloc((size_t)n, sizeof *sc->ga_req);
  sc->ga_op = enpu_calloc((size_t)n, sizeof *sc->ga_op);
  sc->ga_first = enpu_calloc((size_t)n + 1, sizeof *sc->ga_first);
  sc->ga_genes = enpu_calloc((size_t)n, sizeof *sc->ga_genes);
  sc->ga_seed = enpu_calloc((size_t)n, sizeof *sc->ga_seed);
  ENPU_RETURN_IF(!sc->ga_req || !sc->ga_op || !sc->ga_first || !sc->ga_genes || !sc->ga_seed,
                 err, ENPU_ERR_NOMEM, "out of memory (GA genes)");
  n = 0;
  for (int i = 0; i < nops; i++) {
    const int64_t m = graph_op_at(g, i)->multiplicity;
    const int64_t G = m < groups ? m : groups;
    for (int64_t j = 0; j < G; j++, n++) {
      const int64_t lo = j * m / G, hi = (j + 1) * m / G;
      sc->ga_req[n] = (search_req_op){sets[i]->points, sets[i]->count, hi - lo};
      sc->ga_op[n] = i;
      sc->ga_first[n] = (int)lo;
    }
  }
  sc->ga_n = n;
  return 0;
}

/* Plan of one slack by the GA, warm-started from sc->ga_seed (the previous slack's best;
 * updated): GA, finalisation with transitions (and rail lifting), and while the plan
 * overruns, the GA again on the budget less the overrun (at most 3 times). */
static int plan_slack_ga(const request *rq, scratch *sc, const search_options *opt, int first,
                         double budget_ns, const search_bucket_result *res,
                         search_slack_plan *pl, enpu_err *err) {
  plan_peak(rq, sc, res, pl);
  pl->request_evals = 0;
  double ga_budget = budget_ns;
  for (int round = 0; round < 4; round++) {
    int64_t evals;
    ENPU_FORWARD(search_ga_run(sc->ga_req, sc->ga_n, ga_budget, &opt->ga,
                               first && round == 0 ? NULL : sc->ga_seed, sc->ga_genes, &evals,
                               err));
    pl->request_evals += evals + 1;
    memcpy(sc->ga_seed, sc->ga_genes, (size_t)sc->ga_n * sizeof *sc->ga_seed);
    for (int n = 0; n < sc->ga_n; n++) {
      const int i = sc->ga_op[n];
      for (int64_t r = 0; r < sc->ga_req[n].multiplicity; r++)
        sc->pos[rq->offset[i] + sc->ga_first[n] + r] = sc->ga_genes[n];
    }
    double t, e;
    int taken;
    ENPU_FORWARD(finalise(rq, sc, sc->pos, &t, &e, err));
    if (rq->transition_aware && rq->transitions)
      ENPU_FORWARD(lift_rails(rq, sc, budget_ns, pl, err));
    take(rq, (const int(*)[CONFIG_NCOMP])sc->cand, t, e, budget_ns, pl, &taken);
    if (taken) {
      pl->lifted_mask = 0;
      memcpy(sc->best_pos, sc->pos, (size_t)rq->instances * sizeof *sc->pos);
      sc->have_best = 1;
    }
    if (t <= budget_ns) break;
    ga_budget -= t - budget_ns;
  }
  if (rq->transition_aware && rq->transitions) ENPU_FORWARD(polish(rq, sc, budget_ns, pl, err));
  pl->from_ga = pl->energy_nj < res->policy_peak_energy_nj; /* not the all-peak fallback */
  return plan_fits(pl, res, budget_ns, err);
}

int search_op_compile(search_ctx *s, cost_ctx *cost, const graph_op *op, config_policy policy,
                      const search_options *opt, search_pareto *out, enpu_err *err) {
  memset(out, 0, sizeof *out);
  search_options defaults;
  if (!opt) search_options_default(&defaults), opt = &defaults;
  ENPU_RETURN_IF(opt->threads < 1, err, ENPU_ERR_INVALID, "bad search options (threads %d)",
                 opt->threads);
  policy_setup ps;
  ENPU_FORWARD(policy_setup_make(s, policy, opt, &ps, err));
  return op_pareto(s, cost, op, &ps, opt->threads, out, err);
}

int search_op_breakdown(search_ctx *s, cost_ctx *cost, const graph_op *op, config_policy policy,
                        const search_options *opt, const int state[CONFIG_NCOMP],
                        cost_result *out, enpu_err *err) {
  search_options defaults;
  if (!opt) search_options_default(&defaults), opt = &defaults;
  policy_setup ps;
  ENPU_FORWARD(policy_setup_make(s, policy, opt, &ps, err));
  cost_plan plan;
  memcpy(plan.state, state, sizeof plan.state);
  return cost_eval(cost, op, &plan, &ps.pipe, out, err);
}

int search_compile_bucket(search_ctx *s, cost_ctx *cost, const graph *g, config_policy policy,
                          const double *slacks, int nslack, const search_options *opt,
                          search_bucket_result *out, enpu_err *err) {
  memset(out, 0, sizeof *out);
  search_options defaults;
  if (!opt) search_options_default(&defaults), opt = &defaults;
  const int nops = graph_op_count(g);
  search_pareto *sets = enpu_calloc((size_t)nops + 1, sizeof *sets);
  const search_pareto **set_of = enpu_calloc((size_t)nops + 1, sizeof *set_of);
  int rc = sets && set_of ? 0 : enpu_errorf(err, ENPU_ERR_NOMEM, "out of memory (op sets)");
  int64_t op_evals = 0;
  int unique = 0;
  const double t_op0 = enpu_now_s();
  for (int i = 0; rc == 0 && i < nops; i++) {
    const graph_op *op = graph_op_at(g, i);
    for (int j = 0; j < i && !set_of[i]; j++)
      if (graph_op_at(g, j)->signature == op->signature) set_of[i] = set_of[j];
    if (set_of[i]) continue;
    rc = search_op_compile(s, cost, op, policy, opt, &sets[i], err);
    set_of[i] = &sets[i];
    op_evals += sets[i].evals;
    unique++;
  }
  const double op_s = enpu_now_s() - t_op0;
  if (rc < 0) enpu_err_prefix(err, "%s: ", config_policy_name(policy));
  if (rc == 0) rc = search_compile_bucket_sets(s, cost, g, policy, set_of, slacks, nslack, opt, out, err);
  if (rc == 0) {
    out->op_evals = op_evals;
    out->unique_ops = unique;
    out->op_search_s = op_s;
    for (int k = 0; k < out->nplans; k++) {
      out->plans[k].op_evals = op_evals;
      out->plans[k].search_s += op_s;
    }
  }
  for (int i = 0; sets && i < nops; i++) search_pareto_free(&sets[i]);
  free(sets);
  free(set_of);
  return rc;
}

int search_compile_bucket_sets(search_ctx *s, cost_ctx *cost, const graph *g,
                               config_policy policy, const search_pareto *const *sets,
                               const double *slacks, int nslack, const search_options *opt,
                               search_bucket_result *out, enpu_err *err) {
  memset(out, 0, sizeof *out);
  out->policy = policy;
  search_options defaults;
  if (!opt) search_options_default(&defaults), opt = &defaults;
  ENPU_RETURN_IF(nslack < 1, err, ENPU_ERR_INVALID, "no slacks to compile");
  for (int k = 0; k < nslack; k++)
    ENPU_RETURN_IF(!(slacks[k] >= 0) || (k && !(slacks[k] > slacks[k - 1])), err,
                   ENPU_ERR_INVALID, "slacks must be >= 0 and increasing (slack %d: %g)", k,
                   slacks[k]);
  ENPU_RETURN_IF(opt->threads < 1 || !(opt->walk_cap_slack >= 0) ||
                     (opt->request == SEARCH_REQ_GA && opt->ga_groups < 1),
                 err, ENPU_ERR_INVALID,
                 "bad search options (threads %d, walk cap slack %g, GA groups %d)",
                 opt->threads, opt->walk_cap_slack, opt->ga_groups);
  policy_setup ps;
  ENPU_FORWARD(policy_setup_make(s, policy, opt, &ps, err));
  int64_t instances;
  ENPU_FORWARD(check_graph(g, &instances, err));
  const int nops = graph_op_count(g), peak = s->chip->freq_states;
  cost_pipeline nodvfs, enpu5;
  cost_pipeline_nodvfs(&nodvfs, s->fixed);
  ENPU_FORWARD(cost_pipeline_enpu(&enpu5, 5, s->ctrl, err));

  scratch sc = {0};
  sc.req = enpu_calloc((size_t)nops, sizeof *sc.req);
  sc.offset = enpu_calloc((size_t)nops, sizeof *sc.offset);
  sc.pos = enpu_calloc((size_t)instances, sizeof *sc.pos);
  sc.best_pos = enpu_calloc((size_t)instances, sizeof *sc.best_pos);
  sc.peak_state = enpu_calloc((size_t)instances, sizeof *sc.peak_state);
  sc.cand = enpu_calloc((size_t)instances, sizeof *sc.cand);
  sc.lift = enpu_calloc((size_t)instances, sizeof *sc.lift);
  sc.inst_t = enpu_calloc(2 * (size_t)instances, sizeof *sc.inst_t); /* + lifted */
  sc.inst_e = enpu_calloc(2 * (size_t)instances, sizeof *sc.inst_e);
  sc.op_of = enpu_calloc((size_t)instances, sizeof *sc.op_of);
  sc.exec_of = enpu_calloc((size_t)instances, sizeof *sc.exec_of);
  sc.cache_state = enpu_calloc((size_t)nops, sizeof *sc.cache_state);
  sc.cache_t = enpu_calloc((size_t)nops, sizeof *sc.cache_t);
  sc.cache_e = enpu_calloc((size_t)nops, sizeof *sc.cache_e);
  out->plans = enpu_calloc((size_t)nslack, sizeof *out->plans);
  int rc = sc.req && sc.offset && sc.pos && sc.best_pos && sc.peak_state && sc.cand && sc.lift && sc.inst_t &&
                   sc.inst_e && sc.op_of && sc.exec_of && sc.cache_state && sc.cache_t &&
                   sc.cache_e &&
                   out->plans
               ? 0
               : enpu_errorf(err, ENPU_ERR_NOMEM, "out of memory (bucket of %lld instances)",
                             (long long)instances);
  if (rc == 0) out->nplans = nslack;
  for (int k = 0; rc == 0 && k < nslack; k++) {
    out->plans[k].state = enpu_calloc((size_t)instances, sizeof *out->plans[k].state);
    out->plans[k].instances = instances;
    if (!out->plans[k].state) rc = enpu_errorf(err, ENPU_ERR_NOMEM, "out of memory (plans)");
  }
  for (int64_t x = 0; rc == 0 && x < instances; x++)
    for (int c = 0; c < CONFIG_NCOMP; c++) sc.peak_state[x][c] = peak;

  /* Reference times and the policy's all-peak plan (not counted as search evaluations). */
  for (int i = 0; rc == 0 && i < nops; i++) {
    const graph_op *op = graph_op_at(g, i);
    const double m = (double)op->multiplicity;
    double t = 0, e = 0;
    rc = eval_peak(cost, op, &nodvfs, peak, &t, &e, err);
    out->t_nodvfs_ns += m * t, out->e_nodvfs_nj += m * e;
    if (rc == 0) rc = eval_peak(cost, op, &enpu5, peak, &t, &e, err);
    out->t_peak_ns += m * t;
    if (rc == 0) rc = eval_peak(cost, op, &ps.pipe, peak, &t, &e, err);
    out->policy_peak_time_ns += m * t, out->policy_peak_energy_nj += m * e;
  }

  /* The op-level Pareto sets, one per graph op (shared between equal signatures). */
  int64_t inst = 0;
  for (int i = 0; rc == 0 && i < nops; i++) {
    const graph_op *op = graph_op_at(g, i);
    if (!sets[i] || sets[i]->count < 1) {
      rc = enpu_errorf(err, ENPU_ERR_INVALID, "op %d (%s): no Pareto set", i, op->name);
      break;
    }
    sc.req[i] = (search_req_op){sets[i]->points, sets[i]->count, op->multiplicity};
    sc.offset[i] = inst;
    inst += op->multiplicity;
  }
  if (rc == 0) exec_order(g, sc.offset, sc.op_of, sc.exec_of);

  /* Request level. */
  const double t_walk0 = enpu_now_s();
  const double base_ns = fmax(out->t_nodvfs_ns, out->t_peak_ns);
  const double cap_ns =
      base_ns + fmax(opt->walk_cap_slack, slacks[nslack - 1]) * out->t_nodvfs_ns;
  if (rc == 0) rc = search_walk_build(sc.req, nops, cap_ns, &sc.hull, err);
  if (rc == 0) out->walk_moves = search_walk_moves(sc.hull);
  out->walk = sc.hull; /* the result owns the walk (the store records it) */
  sc.hull = NULL;
  const double walk_s = enpu_now_s() - t_walk0;
  const request rq = {g, sets, sc.offset, instances, ps.pm, ps.transitions, cost, &ps.pipe,
                      &ps.dom, opt->transition_aware};
  if (rc == 0 && (opt->request == SEARCH_REQ_GA || opt->transition_aware))
    rc = ga_genes_make(g, sets, opt->ga_groups, &sc, err);
  for (int k = 0; rc == 0 && k < nslack; k++) {
    const double t0 = enpu_now_s();
    search_slack_plan *pl = &out->plans[k];
    pl->slack = slacks[k];
    pl->budget_ns = base_ns + slacks[k] * out->t_nodvfs_ns;
    search_prefix bound;
    rc = search_walk_prefix(out->walk, pl->budget_ns, &bound, err);
    if (rc < 0) break;
    pl->lower_bound_nj = bound.lower_bound_nj;
    const search_walk *w = out->walk;
    if (opt->request == SEARCH_REQ_GREEDY) {
      search_walk_free(sc.greedy);
      sc.greedy = NULL;
      rc = search_greedy_build(sc.req, nops, pl->budget_ns, &sc.greedy, err);
      w = sc.greedy;
    }
    if (rc == 0 && opt->request == SEARCH_REQ_GA)
      rc = plan_slack_ga(&rq, &sc, opt, k == 0, pl->budget_ns, out, pl, err);
    else if (rc == 0)
      rc = plan_slack(&rq, &sc, w, pl->budget_ns, out, pl, err);
    if (rc == 0 && k > 0 && pl->energy_nj > out->plans[k - 1].energy_nj) {
      /* Transitions made this prefix dearer than the smaller slack's plan, which fits. */
      const search_slack_plan *prev = &out->plans[k - 1];
      pl->time_ns = prev->time_ns;
      pl->energy_nj = prev->energy_nj;
      pl->walk_moves = prev->walk_moves;
      pl->lifted_mask = prev->lifted_mask;
      pl->polish_moves = prev->polish_moves;
      pl->from_ga = prev->from_ga;
      memcpy(pl->state, prev->state, (size_t)instances * sizeof *pl->state);
    }
    pl->savings_vs_nodvfs = 1.0 - pl->energy_nj / out->e_nodvfs_nj;
    pl->search_s = walk_s + (enpu_now_s() - t0);
  }
  if (rc == 0)
    rc = search_check_invariants(out->plans, nslack, out->policy_peak_energy_nj, err);
  scratch_free(&sc);
  if (rc < 0) {
    enpu_err_prefix(err, "%s: ", config_policy_name(policy));
    search_bucket_result_free(out);
  }
  return rc;
}

/* ---------------------------------------------------------------------------------
 * Re-simulating a plan from its states (validation) */

int search_plan_simulate(search_ctx *s, cost_ctx *cost, const graph *g, config_policy policy,
                         const search_options *opt, const int (*state)[CONFIG_NCOMP],
                         double *time_ns, double *energy_nj, enpu_err *err) {
  search_options defaults;
  if (!opt) search_options_default(&defaults), opt = &defaults;
  policy_setup ps;
  ENPU_FORWARD(policy_setup_make(s, policy, opt, &ps, err));
  int64_t instances;
  ENPU_FORWARD(check_graph(g, &instances, err));
  const int nops = graph_op_count(g);
  int64_t *offset = enpu_calloc((size_t)nops + 1, sizeof *offset);
  int (*exec)[CONFIG_NCOMP] = enpu_calloc((size_t)instances + 1, sizeof *exec);
  double *it = enpu_calloc((size_t)instances + 1, sizeof *it);
  double *ie = enpu_calloc((size_t)instances + 1, sizeof *ie);
  int rc = offset && exec && it && ie
               ? 0
               : enpu_errorf(err, ENPU_ERR_NOMEM, "out of memory (plan of %lld instances)",
                             (long long)instances);
  for (int i = 1; rc == 0 && i <= nops; i++)
    offset[i] = offset[i - 1] + graph_op_at(g, i - 1)->multiplicity;
  /* Walk numbering → execution order; an op's instances mostly repeat its states, so
   * the op's last evaluation (last[i]: its execution index) is reused when they do. */
  int64_t x = 0, *last = enpu_calloc((size_t)nops + 1, sizeof *last);
  if (rc == 0 && !last) rc = enpu_errorf(err, ENPU_ERR_NOMEM, "out of memory (plan)");
  for (int si = 0; rc == 0 && si < graph_segment_count(g); si++) {
    const graph_segment *seg = graph_segment_at(g, si);
    for (int64_t r = 0; rc == 0 && r < seg->repeat; r++)
      for (int i = seg->first_op; rc == 0 && i < seg->first_op + seg->op_count; i++) {
        const int64_t count = graph_op_at(g, i)->count;
        for (int64_t c = 0; rc == 0 && c < count; c++, x++) {
          const int *st = state[offset[i] + r * count + c];
          memcpy(exec[x], st, sizeof exec[x]);
          const int64_t prev = last[i] - 1;
          last[i] = x + 1;
          if (prev >= 0 && !memcmp(exec[prev], st, sizeof exec[x])) {
            it[x] = it[prev], ie[x] = ie[prev];
            continue;
          }
          cost_user u = {cost, graph_op_at(g, i), &ps.pipe};
          rc = cost_user_eval(&u, st, &it[x], &ie[x], err);
          if (rc < 0) enpu_err_prefix(err, "op %d (%s), layer %lld: ", i,
                                      graph_op_at(g, i)->name, (long long)r);
        }
      }
  }
  free(last);
  const request rq = {.g = g, .instances = instances, .pm = ps.pm, .transitions = ps.transitions};
  if (rc == 0) rc = plan_total(&rq, (const int(*)[CONFIG_NCOMP])exec, it, ie, time_ns, energy_nj, err);
  free(offset);
  free(exec);
  free(it);
  free(ie);
  return rc;
}
