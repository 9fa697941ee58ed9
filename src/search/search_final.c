/* search_final.c — plan finalisation: a request-level plan (walk prefix or GA genome) priced
 * on the real operator order with its V/f transitions, fitted to its slack's budget in the
 * job's budget mode, optionally transition-aware (rail lifting, local search); and the
 * re-simulation `enpu validate` checks stored plans with.
 *
 * Pricing (req_total): every instance is evaluated by the cost model after the instance
 * before it — per-rail transitions inside the op (cost_eval_after, the default) — or
 * alone plus a whole-chip stall between the two (SEARCH_TRANS_CHIP_STALL); `ideal` has no
 * transitions. A small cache per graph op keeps the last evaluations, since consecutive
 * layers repeat their states. Fitting: strict mode takes a plan when its time with every
 * cost fits the budget, stepping back along the walk while transitions push it over;
 * paper mode takes the walk prefix, whose critical-path time fits by construction, and
 * reports time − critical path as the plan's overhead. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "search_internal.h"

/* Critical-path sums are rebuilt in execution order; the walk summed them in its own. */
#define PAPER_FIT_RTOL 1e-9

int req_check_graph(const graph *g, int64_t *instances, enpu_err *err) {
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

int req_prepare(const search_ctx *s, config_policy policy, const search_options *opt,
                const graph *g, policy_setup *ps, int64_t *instances, enpu_err *err) {
  ENPU_FORWARD(search_policy_setup(s, policy, opt, ps, err));
  return req_check_graph(g, instances, err);
}

/* Visits graph g's instances in execution order (graph.h): visit(ctx, i, x, w) for the
 * instance of op i at execution index x, numbered w in the walk (copy c of op i in layer
 * r: w = offset_i + r·count + c, offset_i the sum of the multiplicities of ops 0..i-1).
 * Runs once per request set-up or stored plan, never in the search's inner loop. */
typedef void instance_visit(void *ctx, int op, int64_t exec, int64_t walk);

static void each_instance(const graph *g, instance_visit *visit, void *ctx) {
  int64_t x = 0, offset = 0;
  for (int si = 0; si < graph_segment_count(g); si++) {
    const graph_segment *seg = graph_segment_at(g, si);
    for (int64_t r = 0; r < seg->repeat; r++)
      for (int i = seg->first_op, at = 0; i < seg->first_op + seg->op_count; i++) {
        const int64_t count = graph_op_at(g, i)->count;
        for (int64_t c = 0; c < count; c++, x++) visit(ctx, i, x, offset + at + r * count + c);
        at += (int)graph_op_at(g, i)->multiplicity;
      }
    for (int i = seg->first_op; i < seg->first_op + seg->op_count; i++)
      offset += graph_op_at(g, i)->multiplicity;
  }
}

/* op_of[x], the graph op of execution index x; exec_of[w], the execution index of walk
 * instance w. */
static void order_visit(void *ctx, int op, int64_t exec, int64_t walk) {
  scratch *sc = ctx;
  sc->op_of[exec] = op;
  sc->exec_of[walk] = exec;
}

int req_init(request *rq, scratch *sc, const graph *g, int64_t instances, enpu_err *err) {
  const int nops = graph_op_count(g);
  sc->op_of = enpu_calloc((size_t)instances + 1, sizeof *sc->op_of);
  sc->exec_of = enpu_calloc((size_t)instances + 1, sizeof *sc->exec_of);
  sc->cache = enpu_calloc((size_t)nops * REQ_CACHE_WAYS + 1, sizeof *sc->cache);
  sc->cache_next = enpu_calloc((size_t)nops + 1, sizeof *sc->cache_next);
  ENPU_RETURN_IF(!sc->op_of || !sc->exec_of || !sc->cache || !sc->cache_next, err,
                 ENPU_ERR_NOMEM, "out of memory (request of %lld instances)",
                 (long long)instances);
  each_instance(g, order_visit, sc);
  for (size_t k = 0; k < (size_t)nops * REQ_CACHE_WAYS; k++) sc->cache[k].state[0] = -1;
  rq->g = g;
  rq->instances = instances;
  rq->op_of = sc->op_of;
  rq->exec_of = sc->exec_of;
  rq->cache = sc->cache;
  rq->cache_next = sc->cache_next;
  return 0;
}

struct states_copy {
  const int (*exec)[CONFIG_NCOMP];
  int (*walk)[CONFIG_NCOMP];
};

static void states_visit(void *ctx, int op, int64_t exec, int64_t walk) {
  (void)op;
  const struct states_copy *sc = ctx;
  memcpy(sc->walk[walk], sc->exec[exec], sizeof sc->walk[0]);
}

void search_states_by_walk(const graph *g, const int (*exec)[CONFIG_NCOMP],
                           int (*walk)[CONFIG_NCOMP]) {
  struct states_copy copy = {exec, walk};
  each_instance(g, states_visit, &copy);
}

void scratch_free(scratch *sc) {
  free(sc->req);
  free(sc->offset);
  free(sc->pos);
  free(sc->best_pos);
  free(sc->peak_state);
  free(sc->cand);
  free(sc->lift);
  free(sc->op_of);
  free(sc->exec_of);
  free(sc->ga_req);
  free(sc->ga_op);
  free(sc->ga_first);
  free(sc->ga_genes);
  free(sc->ga_seed);
  free(sc->cache);
  free(sc->cache_next);
  search_walk_free(sc->hull);
  search_walk_free(sc->greedy);
}

/* ---------------------------------------------------------------------------------
 * Pricing */

static int same(const int *a, const int *b) { return !memcmp(a, b, CONFIG_NCOMP * sizeof *a); }

/* Instance x of `state` after instance x − 1 (per-rail transitions), through the cache. */
static int inst_eval(const request *rq, const int (*state)[CONFIG_NCOMP], int64_t x,
                     req_line *out, enpu_err *err) {
  const int i = rq->op_of[x];
  const int after = x > 0 && rq->transitions && rq->model == SEARCH_TRANS_PER_RAIL;
  req_line *lines = &rq->cache[(size_t)i * REQ_CACHE_WAYS];
  for (int k = 0; k < REQ_CACHE_WAYS; k++)
    if (same(lines[k].state, state[x]) &&
        (after ? lines[k].prev[0] >= 0 && same(lines[k].prev, state[x - 1])
               : lines[k].prev[0] < 0)) {
      *out = lines[k];
      return 0;
    }
  cost_plan prev, plan;
  memcpy(plan.state, state[x], sizeof plan.state);
  if (after) memcpy(prev.state, state[x - 1], sizeof prev.state);
  cost_result r;
  ENPU_FORWARD(cost_eval_after(rq->cost, graph_op_at(rq->g, i), after ? &prev : NULL, &plan,
                               rq->pipe, &r, err));
  req_line *l = &lines[rq->cache_next[i]++ % REQ_CACHE_WAYS];
  memcpy(l->state, state[x], sizeof l->state);
  if (after) memcpy(l->prev, state[x - 1], sizeof l->prev);
  else l->prev[0] = -1;
  l->time_ns = r.time_ns, l->cp_ns = r.cp_time_ns, l->energy_nj = r.energy_total_nj;
  *out = *l;
  return 0;
}

/* Whole-chip stall between two instances (SEARCH_TRANS_CHIP_STALL): every rail moves in
 * parallel, the chip waits for the slowest (tn); each component pays its rail's extra
 * leakage and its static energy for tn, "other" static power runs for tn. */
static int chip_stall(const power_model *pm, const int a[CONFIG_NCOMP], const int b[CONFIG_NCOMP],
                      double *tn_ns, double *en_nj, enpu_err *err) {
  double tn = 0;
  for (int c = 0; c < CONFIG_NCOMP; c++)
    tn = fmax(tn, power_transition_ns(pm, power_voltage_v(pm, (config_component)c, a[c]),
                                      power_voltage_v(pm, (config_component)c, b[c])));
  *tn_ns = tn;
  *en_nj = 0;
  if (tn <= 0) return 0;
  double en = power_other_energy(pm, tn);
  for (int c = 0; c < CONFIG_NCOMP; c++) {
    power_energy_nj pe;
    ENPU_FORWARD(power_energy(pm, (config_component)c, b[c], 0, tn, 1, &pe, err));
    en += pe.total_nj + power_transition_energy(pm, (config_component)c, a[c], b[c]);
  }
  *en_nj = en;
  return 0;
}

/* What instance x adds to a plan's totals: its time, critical path and energy after
 * instance x − 1, and the chip stall between them (SEARCH_TRANS_CHIP_STALL). It depends
 * on the states of instances x − 1 and x only. */
static int req_term(const request *rq, const int (*state)[CONFIG_NCOMP], int64_t x,
                    req_line *out, enpu_err *err) {
  if (rq->price) ENPU_FORWARD(rq->price(rq->price_user, state, x, out, err));
  else ENPU_FORWARD(inst_eval(rq, state, x, out, err));
  if (x == 0 || !rq->transitions || rq->model != SEARCH_TRANS_CHIP_STALL) return 0;
  double tn, en;
  ENPU_FORWARD(chip_stall(rq->pm, state[x - 1], state[x], &tn, &en, err));
  out->time_ns += tn, out->energy_nj += en;
  return 0;
}

int req_total(const request *rq, const int (*state)[CONFIG_NCOMP], double *time_ns,
              double *cp_ns, double *energy_nj, enpu_err *err) {
  double t = 0, cp = 0, e = 0;
  for (int64_t x = 0; x < rq->instances; x++) {
    req_line l;
    ENPU_FORWARD(req_term(rq, state, x, &l, err));
    t += l.time_ns, cp += l.cp_ns, e += l.energy_nj;
  }
  *time_ns = t, *cp_ns = cp, *energy_nj = e;
  return 0;
}

/* The plan that puts the instance numbered w (walk numbering) at point pos[w], into
 * sc->cand (states, execution order); its totals. */
static int finalise(const request *rq, scratch *sc, const int *pos, double *t, double *cp,
                    double *e, enpu_err *err) {
  for (int i = 0; i < graph_op_count(rq->g); i++)
    for (int64_t w = rq->offset[i]; w < rq->offset[i] + graph_op_at(rq->g, i)->multiplicity; w++)
      memcpy(sc->cand[rq->exec_of[w]], rq->sets[i]->points[pos[w]].state, sizeof sc->cand[0]);
  return req_total(rq, (const int(*)[CONFIG_NCOMP])sc->cand, t, cp, e, err);
}

/* ---------------------------------------------------------------------------------
 * Fitting */

static int fits(const request *rq, double t, double cp, double budget_ns) {
  return rq->budget == CONFIG_BUDGET_PAPER ? cp <= budget_ns * (1 + PAPER_FIT_RTOL)
                                           : t <= budget_ns;
}

/* Take a candidate that fits and is cheaper than the plan so far. */
static int take_if_better(const request *rq, const int (*state)[CONFIG_NCOMP], double t, double cp,
                double e, search_slack_plan *pl) {
  if (!fits(rq, t, cp, pl->budget_ns) || e >= pl->energy_nj) return 0;
  pl->time_ns = t, pl->cp_time_ns = cp, pl->energy_nj = e;
  memcpy(pl->state, state, (size_t)rq->instances * sizeof *pl->state);
  return 1;
}

/* Start a slack's plan at the policy's all-peak plan (no transitions; its critical path
 * is the NoDVFS time). */
static void plan_peak(const request *rq, scratch *sc, const search_bucket_result *res,
                      search_slack_plan *pl) {
  sc->have_best = 0;
  pl->walk_moves = -1;
  pl->lifted_mask = 0;
  pl->polish_moves = 0;
  pl->from_ga = 0;
  pl->time_ns = res->policy_peak_time_ns;
  pl->cp_time_ns = res->t_nodvfs_ns;
  pl->energy_nj = res->policy_peak_energy_nj;
  memcpy(pl->state, sc->peak_state, (size_t)rq->instances * sizeof *pl->state);
}

static int plan_fits(const request *rq, const search_slack_plan *pl,
                     const search_bucket_result *res, enpu_err *err) {
  ENPU_RETURN_IF(!fits(rq, pl->time_ns, pl->cp_time_ns, pl->budget_ns), err,
                 ENPU_ERR_INFEASIBLE,
                 "slack %g: no plan fits the budget %.1f ns (all-peak takes %.1f ns)",
                 pl->slack, pl->budget_ns, res->policy_peak_time_ns);
  return 0;
}

/* ---------------------------------------------------------------------------------
 * Transition-aware finalisation */

/* Rail lifting: for every non-empty subset of the searched domains, raise each instance's
 * states in those domains to the lowest state whose voltages reach the highest ones the
 * domain uses anywhere in sc->cand, so those rails keep one voltage for the whole
 * request. Raising a state never slows an op, and a frequency change inside a voltage
 * band costs no transition; the price is the energy of the higher frequencies. Keeps the
 * cheapest lifted plan that fits. */
static int lift_rails(const request *rq, scratch *sc, search_slack_plan *pl, enpu_err *err) {
  const int d = rq->dom->ndomains, peak = rq->dom->peak_state;
  int floor_state[CONFIG_NCOMP] = {0}; /* per domain: the lifted rail's lowest state */
  for (int k = 0; k < d; k++) {
    double vmax[CONFIG_NCOMP] = {0};
    for (int64_t x = 0; x < rq->instances; x++)
      for (int c = 0; c < CONFIG_NCOMP; c++)
        if (rq->dom->domain_of[c] == k)
          vmax[c] = fmax(vmax[c], power_voltage_v(rq->pm, (config_component)c, sc->cand[x][c]));
    int s = 1;
    for (int ok = 0; s < peak && !ok; s += !ok) {
      ok = 1;
      for (int c = 0; c < CONFIG_NCOMP && ok; c++)
        if (rq->dom->domain_of[c] == k)
          ok = power_voltage_v(rq->pm, (config_component)c, s) >= vmax[c] - 1e-12;
    }
    floor_state[k] = s;
  }
  for (unsigned mask = 1; mask < (1u << d); mask++) {
    for (int64_t x = 0; x < rq->instances; x++)
      for (int c = 0; c < CONFIG_NCOMP; c++) {
        const int k = rq->dom->domain_of[c];
        const int st = sc->cand[x][c];
        sc->lift[x][c] = k >= 0 && (mask >> k & 1u) && st < floor_state[k] ? floor_state[k] : st;
      }
    double t, cp, e;
    ENPU_FORWARD(req_total(rq, (const int(*)[CONFIG_NCOMP])sc->lift, &t, &cp, &e, err));
    pl->request_evals++;
    if (take_if_better(rq, (const int(*)[CONFIG_NCOMP])sc->lift, t, cp, e, pl))
      pl->lifted_mask = mask, pl->walk_moves = -1, sc->have_best = 0;
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
static int polish(const request *rq, scratch *sc, search_slack_plan *pl, enpu_err *err) {
  if (!sc->have_best) return 0;
  for (int iter = 0; iter < 64; iter++) {
    int best_u = -1, best_d = 0;
    double best_t = pl->time_ns, best_cp = pl->cp_time_ns, best_e = pl->energy_nj;
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
        double t, cp, e;
        const int rc = finalise(rq, sc, sc->best_pos, &t, &cp, &e, err);
        for (int64_t r = 0; r < n; r++) p[r] -= sc->pos[r] ? d : 0;
        ENPU_FORWARD(rc);
        pl->request_evals++;
        if (fits(rq, t, cp, pl->budget_ns) && e < best_e)
          best_u = u, best_d = d, best_t = t, best_cp = cp, best_e = e;
      }
    }
    if (best_u < 0) break;
    int *p = sc->best_pos + rq->offset[sc->ga_op[best_u]] + sc->ga_first[best_u];
    const int top = sc->ga_req[best_u].count - 1;
    for (int64_t r = 0; r < sc->ga_req[best_u].multiplicity; r++)
      if (p[r] + best_d >= 0 && p[r] + best_d <= top) p[r] += best_d;
    pl->time_ns = best_t, pl->cp_time_ns = best_cp, pl->energy_nj = best_e;
    pl->polish_moves++;
  }
  if (!pl->polish_moves) return 0;
  double t, cp, e;
  ENPU_FORWARD(finalise(rq, sc, sc->best_pos, &t, &cp, &e, err));
  memcpy(pl->state, sc->cand, (size_t)rq->instances * sizeof *pl->state);
  pl->walk_moves = -1;
  return 0;
}

/* ---------------------------------------------------------------------------------
 * One slack */

/* Instances x and x + 1 of sc->cand, what a change of instance x's states can move:
 * their terms added to (sign +1) or taken from (−1) the totals. */
static int adjust(const request *rq, const scratch *sc, int64_t x, int sign, double *t,
                  double *cp, double *e, enpu_err *err) {
  for (int64_t y = x; y <= x + 1 && y < rq->instances; y++) {
    req_line l;
    ENPU_FORWARD(req_term(rq, (const int(*)[CONFIG_NCOMP])sc->cand, y, &l, err));
    *t += sign * l.time_ns, *cp += sign * l.cp_ns, *e += sign * l.energy_nj;
  }
  return 0;
}

/* Step the finalised plan in sc (positions sc->pos, states sc->cand, totals t, cp, e)
 * back by one instance move: undo move `move` of walk w, held by step *step (the caller
 * walks the steps backwards from the last). The walk moves the lowest-numbered instances
 * still at a step's `from` first, so an op's positions fall with the instance number and
 * the instance that move moved is the last one at the step's `to`. Only that instance's
 * term and the next one change (req_term): O(1) instead of a whole finalise. */
static int step_back(const request *rq, scratch *sc, const search_walk *w, int64_t move,
                     int *step, double *t, double *cp, double *e, enpu_err *err) {
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
  const int64_t x = rq->exec_of[rq->offset[st->op] + lo - 1];
  ENPU_FORWARD(adjust(rq, sc, x, -1, t, cp, e, err));
  memcpy(sc->cand[x], rq->sets[st->op]->points[st->from].state, sizeof sc->cand[x]);
  return adjust(rq, sc, x, +1, t, cp, e, err);
}

int plan_slack_walk(const request *rq, scratch *sc, const search_walk *w,
                    const search_bucket_result *res, search_slack_plan *pl, enpu_err *err) {
  search_prefix pf;
  ENPU_FORWARD(search_walk_prefix(w, pl->budget_ns, &pf, err));
  plan_peak(rq, sc, res, pl);
  pl->request_evals = pf.moves + 1;
  const int aware = rq->transition_aware && rq->transitions;
  /* The longest prefix that fits: step back one instance move at a time, incrementally
   * (step_back); a candidate is confirmed by a whole finalise. */
  int step = search_walk_step_count(w) - 1;
  double t, cp, e;
  ENPU_FORWARD(search_walk_positions(w, pf.moves, sc->pos, err));
  ENPU_FORWARD(finalise(rq, sc, sc->pos, &t, &cp, &e, err));
  for (int64_t m = pf.moves; m >= 0; m--) {
    if (m < pf.moves) ENPU_FORWARD(step_back(rq, sc, w, m, &step, &t, &cp, &e, err));
    pl->request_evals++;
    if (m == pf.moves && aware) ENPU_FORWARD(lift_rails(rq, sc, pl, err));
    /* Clearly over whatever the rounding of the running sums: next move. */
    if (!fits(rq, t * (1 - 1e-9), cp * (1 - 1e-9), pl->budget_ns)) continue;
    if (m < pf.moves) ENPU_FORWARD(finalise(rq, sc, sc->pos, &t, &cp, &e, err));
    if (!fits(rq, t, cp, pl->budget_ns)) continue;
    if (take_if_better(rq, (const int(*)[CONFIG_NCOMP])sc->cand, t, cp, e, pl)) {
      pl->walk_moves = m, pl->lifted_mask = 0;
      memcpy(sc->best_pos, sc->pos, (size_t)rq->instances * sizeof *sc->pos);
      sc->have_best = 1;
    }
    break;
  }
  if (aware) ENPU_FORWARD(polish(rq, sc, pl, err));
  return plan_fits(rq, pl, res, err);
}

int ga_genes_make(const graph *g, const search_pareto *const *sets, int groups, scratch *sc,
                  enpu_err *err) {
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
 * overruns (strict: transitions; paper: never, the genome's time is its critical path),
 * the GA again on the budget less the overrun (at most 3 times). */
int plan_slack_ga(const request *rq, scratch *sc, const search_options *opt, int first,
                  const search_bucket_result *res, search_slack_plan *pl, enpu_err *err) {
  plan_peak(rq, sc, res, pl);
  pl->request_evals = 0;
  const int aware = rq->transition_aware && rq->transitions;
  double ga_budget = pl->budget_ns;
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
    double t, cp, e;
    ENPU_FORWARD(finalise(rq, sc, sc->pos, &t, &cp, &e, err));
    if (aware) ENPU_FORWARD(lift_rails(rq, sc, pl, err));
    if (take_if_better(rq, (const int(*)[CONFIG_NCOMP])sc->cand, t, cp, e, pl)) {
      pl->lifted_mask = 0;
      memcpy(sc->best_pos, sc->pos, (size_t)rq->instances * sizeof *sc->pos);
      sc->have_best = 1;
    }
    if (fits(rq, t, cp, pl->budget_ns)) break;
    ga_budget -= (rq->budget == CONFIG_BUDGET_PAPER ? cp : t) - pl->budget_ns;
  }
  if (aware) ENPU_FORWARD(polish(rq, sc, pl, err));
  pl->from_ga = pl->energy_nj < res->policy_peak_energy_nj; /* not the all-peak fallback */
  return plan_fits(rq, pl, res, err);
}

/* ---------------------------------------------------------------------------------
 * Re-simulating a plan from its states (validation) */

int search_plan_simulate(search_ctx *s, cost_ctx *cost, const graph *g, config_policy policy,
                         const search_options *opt, const int (*state)[CONFIG_NCOMP],
                         double *time_ns, double *cp_time_ns, double *energy_nj,
                         enpu_err *err) {
  search_options defaults;
  if (!opt) search_options_default(&defaults), opt = &defaults;
  policy_setup ps;
  int64_t instances;
  ENPU_FORWARD(req_prepare(s, policy, opt, g, &ps, &instances, err));
  scratch sc = {0};
  request rq = {.pm = ps.pm, .transitions = ps.transitions, .model = opt->transitions,
                .budget = opt->budget, .cost = cost, .pipe = &ps.pipe, .dom = &ps.dom};
  int (*exec)[CONFIG_NCOMP] = enpu_calloc((size_t)instances + 1, sizeof *exec);
  int rc = exec ? req_init(&rq, &sc, g, instances, err)
                : enpu_errorf(err, ENPU_ERR_NOMEM, "out of memory (plan of %lld instances)",
                              (long long)instances);
  for (int64_t w = 0; rc == 0 && w < instances; w++)
    memcpy(exec[sc.exec_of[w]], state[w], sizeof exec[0]);
  double cp = 0;
  if (rc == 0)
    rc = req_total(&rq, (const int(*)[CONFIG_NCOMP])exec, time_ns, &cp, energy_nj, err);
  if (rc == 0 && cp_time_ns) *cp_time_ns = cp;
  free(exec);
  scratch_free(&sc);
  return rc;
}
