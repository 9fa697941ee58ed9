/* search_final.c — plan finalisation: a request-level plan (walk prefix or GA genome) priced
 * on the real operator order with its V/f transitions, fitted to its slack's budget in the
 * job's budget mode, optionally transition-aware (rail lifting, local search); and the
 * re-simulation `enpu validate` checks stored plans with.
 *
 * Pricing (search_req_total): every instance is evaluated by the cost model after the instance
 * before it — per-rail transitions inside the op (cost_eval_after, the default) — or
 * alone plus a whole-chip stall between the two (SEARCH_TRANS_CHIP_STALL); `ideal` has no
 * transitions. A small cache per graph op keeps the last evaluations, since consecutive
 * layers repeat their states. Fitting: strict mode takes a plan when its time with every
 * cost fits the budget, stepping back along the walk while transitions push it over;
 * paper mode takes the walk prefix, whose critical-path time fits by construction, and
 * reports time − critical path as the plan's overhead.
 *
 * Power gating (pg policies): a plan is also priced with the gating pipeline (cost.h:
 * intervals inside ops), and the idle intervals that span ops — a component's idle at
 * the end of one op, through ops where it has no work, to its idle at the start of the
 * next op it works in — are gated by the same rule; the op that ends such an interval
 * is priced again with the component woken on demand. Finalisation keeps the cheaper of
 * the plain and the gated plan that fit, so gating never makes a plan dearer. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "search_internal.h"

/* Plan times are summed in execution order; the walk and the references (T_nodvfs,
 * T_peak) summed the same op times in their own orders. */
#define FIT_RTOL 1e-9

int search_req_prepare(const search_ctx *s, config_policy policy, const search_options *opt, const graph *g,
                       policy_setup *ps, int64_t *instances, enpu_err *err) {
  ENPU_FORWARD(search_policy_setup(s, policy, opt, ps, err));
  return search_req_check_graph(g, instances, err);
}

request search_req_of_setup(const search_units *u, const policy_setup *ps, const search_options *opt,
                            cost_ctx *cost) {
  request rq = {.units = u, .offset = u->offset, .cost = cost, .model = opt->transitions, .budget = opt->budget};
  rq.pm = ps->pm, rq.transitions = ps->transitions, rq.dom = &ps->dom;
  rq.pipe = &ps->pipe, rq.gate_pipe = &ps->gate_pipe, rq.gating = ps->gating;
  rq.transition_aware = opt->transition_aware;
  return rq;
}

int search_req_init(request *rq, scratch *sc, const graph *g, int64_t instances, enpu_err *err) {
  const int nops = graph_op_count(g);
  ENPU_RETURN_IF(ENPU_CALLOC_PARTS(ENPU_PART(sc->op_of, (size_t)instances + 1),
                                   ENPU_PART(sc->cache, (size_t)nops * REQ_CACHE_WAYS + 1),
                                   ENPU_PART(sc->cache_next, (size_t)nops + 1)) < 0,
                 err, ENPU_ERR_NOMEM, "out of memory (request of %lld instances)", (long long)instances);
  search_each_instance(g, search_op_of_visit, sc->op_of);
  for (size_t k = 0; k < (size_t)nops * REQ_CACHE_WAYS; k++) sc->cache[k].state[0] = -1;
  rq->g = g;
  rq->instances = instances;
  rq->op_of = sc->op_of;
  rq->cache = sc->cache;
  rq->cache_next = sc->cache_next;
  return 0;
}

void search_states_by_walk(const search_units *u, const int (*exec)[CONFIG_NCOMP], int (*walk)[CONFIG_NCOMP]) {
  for (int64_t w = 0; w < u->instances; w++) memcpy(walk[w], exec[u->first_x[w]], sizeof walk[0]);
}

void search_scratch_free(scratch *sc) {
  free(sc->req);    /* owns pos, best_pos, peak_state, cand and lift (bucket_alloc) */
  free(sc->op_of);  /* owns cache and cache_next (search_req_init) */
  free(sc->ga_req); /* owns the other ga_ arrays (search_ga_genes_make) */
  search_walk_free(sc->hull);
  search_walk_free(sc->greedy);
}

/* ---------------------------------------------------------------------------------
 * Pricing */

static int same(const int *a, const int *b) { return !memcmp(a, b, CONFIG_NCOMP * sizeof *a); }

static void line_from(req_line *l, const cost_result *r) {
  l->time_ns = r->time_ns, l->cp_ns = r->cp_time_ns, l->energy_nj = r->energy_total_nj;
  memcpy(l->loss_nj, r->loss_nj, sizeof l->loss_nj);
  l->gates = 0;
  for (int c = 0; c < CONFIG_NCOMP; c++) l->gates += r->gates[c];
  l->idle_mask = r->idle_mask;
  memcpy(l->head_ns, r->head_idle_ns, sizeof l->head_ns);
  memcpy(l->tail_ns, r->tail_idle_ns, sizeof l->tail_ns);
  memcpy(l->saved_w, r->gate_saved_w, sizeof l->saved_w);
  memcpy(l->saved_loss_w, r->gate_saved_loss_w, sizeof l->saved_loss_w);
}

/* Instance x of `state` after instance x − 1 (per-rail transitions) in `mode` (req_line),
 * through the cache; alone on the paper's base pipeline in REQ_MODE_PAPER_BASE. */
static int inst_eval(const request *rq, const int (*state)[CONFIG_NCOMP], int64_t x, unsigned mode, req_line *out,
                     enpu_err *err) {
  const int i = rq->op_of[x];
  const int base = (mode & REQ_MODE_PAPER_BASE) != 0;
  const int after = !base && x > 0 && rq->transitions && rq->model == SEARCH_TRANS_PER_RAIL;
  req_line *lines = &rq->cache[(size_t)i * REQ_CACHE_WAYS];
  for (int k = 0; k < REQ_CACHE_WAYS; k++)
    if (lines[k].mode == mode && same(lines[k].state, state[x]) &&
        (after ? lines[k].prev[0] >= 0 && same(lines[k].prev, state[x - 1]) : lines[k].prev[0] < 0)) {
      *out = lines[k];
      return 0;
    }
  cost_plan prev, plan;
  memcpy(plan.state, state[x], sizeof plan.state);
  if (after) memcpy(prev.state, state[x - 1], sizeof prev.state);
  cost_pipeline paper;
  const cost_pipeline *pipe = mode & 1u ? rq->gate_pipe : rq->pipe;
  if (base) cost_pipeline_paper_base(pipe, &paper), pipe = &paper;
  cost_result r;
  ENPU_FORWARD(cost_eval_woken(rq->cost, graph_op_at(rq->g, i), after ? &prev : NULL, &plan,
                               (mode & ~REQ_MODE_PAPER_BASE) >> 1, pipe, &r, err));
  req_line *l = &lines[rq->cache_next[i]++ % REQ_CACHE_WAYS];
  memcpy(l->state, state[x], sizeof l->state);
  if (after) memcpy(l->prev, state[x - 1], sizeof l->prev);
  else l->prev[0] = -1;
  l->mode = mode;
  line_from(l, &r);
  *out = *l;
  return 0;
}

static int price_inst(const request *rq, const int (*state)[CONFIG_NCOMP], int64_t x, unsigned mode, req_line *out,
                      enpu_err *err) {
  return rq->price ? rq->price(rq->price_user, state, x, mode, out, err) : inst_eval(rq, state, x, mode, out, err);
}

/* Whole-chip stall between two instances (SEARCH_TRANS_CHIP_STALL): every rail moves in
 * parallel, the chip waits for the slowest (tn); each component pays its rail's extra
 * leakage and its static energy for tn, "other" static power runs for tn. */
static int chip_stall(const power_model *pm, const int a[CONFIG_NCOMP], const int b[CONFIG_NCOMP], double *tn_ns,
                      req_cost *add, enpu_err *err) {
  double tn = 0;
  for (int c = 0; c < CONFIG_NCOMP; c++)
    tn = fmax(tn, power_transition_ns(pm, power_voltage_v(pm, (config_component)c, a[c]),
                                      power_voltage_v(pm, (config_component)c, b[c])));
  *tn_ns = tn;
  if (tn <= 0) return 0;
  add->time_ns += tn;
  add->energy_nj += power_other_energy(pm, tn);
  for (int c = 0; c < CONFIG_NCOMP; c++) {
    power_energy_nj pe;
    double loss;
    ENPU_FORWARD(power_energy(pm, (config_component)c, b[c], 0, tn, 1, &pe, err));
    add->energy_nj += pe.total_nj + power_transition_energy_loss(pm, (config_component)c, a[c], b[c], &loss);
    add->loss_nj[c] += pe.loss_nj + loss;
  }
  return 0;
}

static void req_cost_add(req_cost *acc, const req_line *l) {
  acc->time_ns += l->time_ns, acc->cp_ns += l->cp_ns, acc->energy_nj += l->energy_nj;
  for (int c = 0; c < CONFIG_NCOMP; c++) acc->loss_nj[c] += l->loss_nj[c];
  acc->gates += l->gates;
}

/* What instance x adds to a plain plan's totals: its time, critical path, energy and
 * regulator loss after instance x − 1, and the chip stall between them
 * (SEARCH_TRANS_CHIP_STALL). It depends on the states of instances x − 1 and x only. */
static int req_term(const request *rq, const int (*state)[CONFIG_NCOMP], int64_t x, req_cost *out, enpu_err *err) {
  req_line l;
  ENPU_FORWARD(price_inst(rq, state, x, 0u, &l, err));
  *out = (req_cost){0};
  req_cost_add(out, &l);
  if (x == 0 || !rq->transitions || rq->model != SEARCH_TRANS_CHIP_STALL) return 0;
  double tn;
  return chip_stall(rq->pm, state[x - 1], state[x], &tn, out, err);
}

/* A component's idle interval being gathered across ops: its length, the static energy
 * gating would keep from it, and the regulator loss in that. */
typedef struct {
  double ns, saved_nj, saved_loss_nj;
} idle_run;

static void run_add(idle_run *r, const req_line *l, int c, double ns) {
  r->ns += ns;
  r->saved_nj += l->saved_w[c] * ns;
  r->saved_loss_nj += l->saved_loss_w[c] * ns;
}

/* Close component c's run: gate it when worth it (its saving, one wake-up). @return 1
 * when gated (the component wakes entering the op that ends the run). */
static int run_close(const request *rq, int c, idle_run *r, req_cost *acc) {
  const config_component cc = (config_component)c;
  const int gate = power_gate_worth(rq->pm, cc, r->ns, r->saved_nj);
  if (gate) {
    acc->energy_nj -= r->saved_nj - power_gate_wake_nj(rq->pm, cc);
    acc->loss_nj[c] -= r->saved_loss_nj;
    acc->gates += 1;
  }
  *r = (idle_run){0};
  return gate;
}

/* The gated plan: every instance on the gating pipeline; each component's idle run from
 * its last work (the pass's start) to its next work is gated when worth it, and the op
 * that ends a gated run is priced again with the component woken entering it. Unlike the
 * plain plan's, an instance's share depends on the runs before it (no req_term). */
static int total_gated(const request *rq, const int (*state)[CONFIG_NCOMP], req_cost *acc, enpu_err *err) {
  idle_run run[CONFIG_NCOMP] = {{0}};
  for (int64_t x = 0; x < rq->instances; x++) {
    req_line l;
    ENPU_FORWARD(price_inst(rq, state, x, 1u, &l, err));
    unsigned wake = 0;
    for (int c = 0; c < CONFIG_NCOMP; c++) {
      run_add(&run[c], &l, c, l.head_ns[c]);
      if (!(l.idle_mask >> c & 1u) && run_close(rq, c, &run[c], acc)) wake |= 1u << c;
    }
    if (wake) ENPU_FORWARD(price_inst(rq, state, x, 1u | wake << 1, &l, err));
    req_cost_add(acc, &l);
    for (int c = 0; c < CONFIG_NCOMP; c++)
      if (!(l.idle_mask >> c & 1u)) run_add(&run[c], &l, c, l.tail_ns[c]);
  }
  for (int c = 0; c < CONFIG_NCOMP; c++) run_close(rq, c, &run[c], acc);
  return 0;
}

int search_req_total(const request *rq, const int (*state)[CONFIG_NCOMP], int gated, req_cost *out, enpu_err *err) {
  *out = (req_cost){0};
  ENPU_RETURN_IF(gated && !rq->gating, err, ENPU_ERR_INTERNAL, "a gated plan of a policy without gating");
  if (gated) return total_gated(rq, state, out, err);
  for (int64_t x = 0; x < rq->instances; x++) {
    req_cost term;
    ENPU_FORWARD(req_term(rq, state, x, &term, err));
    out->time_ns += term.time_ns, out->cp_ns += term.cp_ns, out->energy_nj += term.energy_nj;
    for (int c = 0; c < CONFIG_NCOMP; c++) out->loss_nj[c] += term.loss_nj[c];
    out->gates += term.gates;
  }
  return 0;
}

int search_req_paper_base_time(const request *rq, const int (*state)[CONFIG_NCOMP], int gated, double *time_ns,
                               enpu_err *err) {
  ENPU_RETURN_IF(rq->price || !rq->cost, err, ENPU_ERR_INTERNAL, "the paper's base time needs the cost model");
  *time_ns = 0;
  for (int64_t x = 0; x < rq->instances; x++) {
    req_line l;
    ENPU_FORWARD(inst_eval(rq, state, x, REQ_MODE_PAPER_BASE | (gated ? 1u : 0u), &l, err));
    *time_ns += l.time_ns;
  }
  return 0;
}

/* The plan that puts unit instance w at point pos[w], into sc->cand (states, execution
 * order). */
static void fill_cand(const request *rq, scratch *sc, const int *pos) {
  const search_units *u = rq->units;
  for (int64_t x = 0; x < rq->instances; x++) {
    const int64_t w = u->walk_of[x];
    memcpy(sc->cand[x], rq->sets[u->unit_of_walk[w]]->points[pos[w]].state, sizeof sc->cand[x]);
  }
}

/* ---------------------------------------------------------------------------------
 * Fitting */

static int fits(const request *rq, const req_cost *c, double budget_ns) {
  return (rq->budget == CONFIG_BUDGET_PAPER ? c->cp_ns : c->time_ns) <= budget_ns * (1 + FIT_RTOL);
}

/* Take a candidate that fits and is cheaper than the plan so far. */
static int take_if_better(const request *rq, const int (*state)[CONFIG_NCOMP], const req_cost *c, int gated,
                          search_slack_plan *pl) {
  if (!fits(rq, c, pl->budget_ns) || c->energy_nj >= pl->energy_nj) return 0;
  pl->time_ns = c->time_ns, pl->cp_time_ns = c->cp_ns, pl->energy_nj = c->energy_nj;
  memcpy(pl->regulator_loss_nj, c->loss_nj, sizeof pl->regulator_loss_nj);
  pl->gated = gated;
  pl->gates = c->gates;
  memcpy(pl->state, state, (size_t)rq->instances * sizeof *pl->state);
  return 1;
}

/* Price sc->cand plain and (pg policies) gated and take_if_better what fits and is cheaper.
 * *fit_plain / *fit_gated (may be NULL) say whether each fits; @return whether the plain
 * one was taken (+2: the gated one). */
static int take_cand(const request *rq, scratch *sc, search_slack_plan *pl, req_cost *plain, int *fit_plain,
                     int *fit_gated, int *took, enpu_err *err) {
  const int(*cand)[CONFIG_NCOMP] = (const int(*)[CONFIG_NCOMP])sc->cand;
  *took = 0;
  ENPU_FORWARD(search_req_total(rq, cand, 0, plain, err));
  pl->request_evals++;
  if (fit_plain) *fit_plain = fits(rq, plain, pl->budget_ns);
  if (take_if_better(rq, cand, plain, 0, pl)) *took = 1;
  if (!rq->gating) return 0;
  req_cost gated;
  ENPU_FORWARD(search_req_total(rq, cand, 1, &gated, err));
  pl->request_evals++;
  if (fit_gated) *fit_gated = fits(rq, &gated, pl->budget_ns);
  if (take_if_better(rq, cand, &gated, 1, pl)) *took = 2;
  return 0;
}

/* Start a slack's plan at the policy's all-peak plan (no transitions; its critical path
 * is the NoDVFS time), or its gated version when that fits and is cheaper. */
static void plan_peak(const request *rq, scratch *sc, const search_bucket_result *res, search_slack_plan *pl) {
  sc->have_best = 0;
  pl->walk_moves = -1;
  pl->lifted_mask = 0;
  pl->polish_moves = 0;
  pl->from_ga = 0;
  pl->time_ns = sc->peak_plain.time_ns;
  pl->cp_time_ns = res->t_nodvfs_ns;
  pl->energy_nj = sc->peak_plain.energy_nj;
  memcpy(pl->regulator_loss_nj, sc->peak_plain.loss_nj, sizeof pl->regulator_loss_nj);
  pl->gated = 0;
  pl->gates = 0;
  memcpy(pl->state, sc->peak_state, (size_t)rq->instances * sizeof *pl->state);
  if (rq->gating) take_if_better(rq, (const int(*)[CONFIG_NCOMP])sc->peak_state, &sc->peak_gated, 1, pl);
}

static int plan_fits(const request *rq, const search_slack_plan *pl, const search_bucket_result *res,
                     enpu_err *err) {
  const req_cost c = {.time_ns = pl->time_ns, .cp_ns = pl->cp_time_ns};
  ENPU_RETURN_IF(!fits(rq, &c, pl->budget_ns), err, ENPU_ERR_INFEASIBLE,
                 "slack %g: no plan fits the budget %.1f ns (all-peak takes %.1f ns)", pl->slack, pl->budget_ns,
                 res->policy_peak_time_ns);
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
        if (rq->dom->domain_of[c] == k) ok = power_voltage_v(rq->pm, (config_component)c, s) >= vmax[c] - 1e-12;
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
    req_cost c;
    ENPU_FORWARD(search_req_total(rq, (const int(*)[CONFIG_NCOMP])sc->lift, 0, &c, err));
    pl->request_evals++;
    if (take_if_better(rq, (const int(*)[CONFIG_NCOMP])sc->lift, &c, 0, pl))
      pl->lifted_mask = mask, pl->walk_moves = -1, sc->have_best = 0;
  }
  return 0;
}

/* Transition-aware local search on the real operator order, from the plan taken so far
 * when its instances sit on Pareto points (sc->best_pos): repeatedly apply the best of the
 * moves "shift every instance of one polish unit (a run of instances of one unit, as the
 * GA's genes) one Pareto point faster or slower" that keeps the plan within budget and
 * lowers its energy with transitions included, until none does (at most 64 moves). It
 * finds what the walk cannot see: moves that remove transitions, or that spend the time
 * a transition step-back left unused. Plain plans only. */
static int polish(const request *rq, scratch *sc, search_slack_plan *pl, enpu_err *err) {
  if (!sc->have_best || pl->gated) return 0;
  req_cost best = {.time_ns = pl->time_ns, .cp_ns = pl->cp_time_ns, .energy_nj = pl->energy_nj};
  memcpy(best.loss_nj, pl->regulator_loss_nj, sizeof best.loss_nj);
  for (int iter = 0; iter < 64; iter++) {
    int best_u = -1, best_d = 0;
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
        fill_cand(rq, sc, sc->best_pos);
        req_cost c;
        const int rc = search_req_total(rq, (const int(*)[CONFIG_NCOMP])sc->cand, 0, &c, err);
        for (int64_t r = 0; r < n; r++) p[r] -= sc->pos[r] ? d : 0;
        ENPU_FORWARD(rc);
        pl->request_evals++;
        if (fits(rq, &c, pl->budget_ns) && c.energy_nj < best.energy_nj) best_u = u, best_d = d, best = c;
      }
    }
    if (best_u < 0) break;
    int *p = sc->best_pos + rq->offset[sc->ga_op[best_u]] + sc->ga_first[best_u];
    const int top = sc->ga_req[best_u].count - 1;
    for (int64_t r = 0; r < sc->ga_req[best_u].multiplicity; r++)
      if (p[r] + best_d >= 0 && p[r] + best_d <= top) p[r] += best_d;
    pl->time_ns = best.time_ns, pl->cp_time_ns = best.cp_ns, pl->energy_nj = best.energy_nj;
    memcpy(pl->regulator_loss_nj, best.loss_nj, sizeof pl->regulator_loss_nj);
    pl->polish_moves++;
  }
  if (!pl->polish_moves) return 0;
  fill_cand(rq, sc, sc->best_pos);
  memcpy(pl->state, sc->cand, (size_t)rq->instances * sizeof *pl->state);
  pl->walk_moves = -1;
  return 0;
}

/* ---------------------------------------------------------------------------------
 * One slack */

/* Op instances x0..x1 + 1 of sc->cand, what a change of instances x0..x1's states can
 * move: their terms added to (sign +1) or taken from (−1) the plain totals *run. */
static int adjust(const request *rq, const scratch *sc, int64_t x0, int64_t x1, int sign, req_cost *run,
                  enpu_err *err) {
  for (int64_t y = x0; y <= x1 + 1 && y < rq->instances; y++) {
    req_cost l;
    ENPU_FORWARD(req_term(rq, (const int(*)[CONFIG_NCOMP])sc->cand, y, &l, err));
    run->time_ns += sign * l.time_ns, run->cp_ns += sign * l.cp_ns;
    run->energy_nj += sign * l.energy_nj;
  }
  return 0;
}

/* Step the plan in sc (positions sc->pos, states sc->cand, plain totals *run) back by one
 * instance move: undo move `move` of walk w, held by step *step (the caller walks the
 * steps backwards from the last). The walk moves the lowest-numbered instances still at
 * a step's `from` first, so a unit's positions fall with the instance number and the
 * instance that move moved is the last one at the step's `to`. Only that unit instance's
 * op instances' terms and the next one change (req_term): O(1) for an op, O(epoch) for
 * an epoch, instead of a whole pricing. */
static int step_back(const request *rq, scratch *sc, const search_walk *w, int64_t move, int *step, req_cost *run,
                     enpu_err *err) {
  const search_units *u = rq->units;
  while (*step > 0 && search_walk_step_at(w, *step)->moves_before > move) (*step)--;
  const search_walk_step *st = search_walk_step_at(w, *step);
  int *p = sc->pos + rq->offset[st->op];
  int64_t lo = 0, hi = u->unit[st->op].multiplicity;
  while (lo < hi) {
    const int64_t mid = lo + (hi - lo) / 2;
    if (p[mid] >= st->to) lo = mid + 1;
    else hi = mid;
  }
  ENPU_RETURN_IF(lo == 0 || p[lo - 1] != st->to, err, ENPU_ERR_INTERNAL,
                 "walk move %lld: unit %d has no instance at point %d", (long long)move, st->op, st->to);
  p[lo - 1] = st->from;
  const int64_t wn = rq->offset[st->op] + lo - 1, x0 = u->first_x[wn];
  int64_t x1 = x0;
  while (x1 + 1 < rq->instances && u->walk_of[x1 + 1] == wn) x1++;
  ENPU_FORWARD(adjust(rq, sc, x0, x1, -1, run, err));
  for (int64_t x = x0; x <= x1; x++)
    memcpy(sc->cand[x], rq->sets[st->op]->points[st->from].state, sizeof sc->cand[x]);
  return adjust(rq, sc, x0, x1, +1, run, err);
}

/* Walk prefix m, its states in sc->cand, its running plain totals *run (`confirm`: priced
 * again whole, since running sums round): take_if_better the plain plan when it fits and is
 * cheaper, and (pg) the gated one likewise, each until it has fitted once. */
static int take_prefix(const request *rq, scratch *sc, int64_t m, int confirm, req_cost *run, int *found_plain,
                       int *found_gated, search_slack_plan *pl, enpu_err *err) {
  const int(*cand)[CONFIG_NCOMP] = (const int(*)[CONFIG_NCOMP])sc->cand;
  int took = 0;
  if (!*found_plain) {
    if (confirm) ENPU_FORWARD(search_req_total(rq, cand, 0, run, err));
    *found_plain = fits(rq, run, pl->budget_ns);
    took |= take_if_better(rq, cand, run, 0, pl);
  }
  if (!*found_gated) {
    req_cost gated;
    ENPU_FORWARD(search_req_total(rq, cand, 1, &gated, err));
    pl->request_evals++;
    *found_gated = fits(rq, &gated, pl->budget_ns);
    took |= take_if_better(rq, cand, &gated, 1, pl);
  }
  if (took) {
    pl->walk_moves = m, pl->lifted_mask = 0;
    memcpy(sc->best_pos, sc->pos, (size_t)rq->units->instances * sizeof *sc->pos);
    sc->have_best = 1;
  }
  return 0;
}

int search_plan_slack_walk(const request *rq, scratch *sc, const search_walk *w, const search_bucket_result *res,
                           search_slack_plan *pl, enpu_err *err) {
  search_prefix pf;
  ENPU_FORWARD(search_walk_prefix(w, pl->budget_ns, &pf, err));
  plan_peak(rq, sc, res, pl);
  pl->request_evals = pf.moves + 1;
  const int aware = rq->transition_aware && rq->transitions;
  /* The longest prefix whose plain plan fits and (pg) the longest whose gated one does
   * (gating never makes a plan faster): step back one instance move at a time,
   * incrementally on the plain totals (step_back). */
  int step = search_walk_step_count(w) - 1;
  req_cost run;
  ENPU_FORWARD(search_walk_positions(w, pf.moves, sc->pos, err));
  fill_cand(rq, sc, sc->pos);
  ENPU_FORWARD(search_req_total(rq, (const int(*)[CONFIG_NCOMP])sc->cand, 0, &run, err));
  int found_plain = 0, found_gated = !rq->gating;
  for (int64_t m = pf.moves; m >= 0 && !(found_plain && found_gated); m--) {
    if (m < pf.moves) ENPU_FORWARD(step_back(rq, sc, w, m, &step, &run, err));
    pl->request_evals++;
    if (m == pf.moves && aware) ENPU_FORWARD(lift_rails(rq, sc, pl, err));
    /* Clearly over whatever the rounding of the running sums: next move. */
    const req_cost clear = {.time_ns = run.time_ns * (1 - 1e-9), .cp_ns = run.cp_ns * (1 - 1e-9)};
    if (!fits(rq, &clear, pl->budget_ns)) continue;
    ENPU_FORWARD(take_prefix(rq, sc, m, m < pf.moves, &run, &found_plain, &found_gated, pl, err));
  }
  if (aware) ENPU_FORWARD(polish(rq, sc, pl, err));
  return plan_fits(rq, pl, res, err);
}

int search_ga_genes_make(const search_units *u, const search_pareto *const *sets, int groups, scratch *sc,
                         enpu_err *err) {
  int n = 0;
  for (int i = 0; i < u->count; i++) {
    const int64_t m = u->unit[i].multiplicity;
    n += (int)(m < groups ? m : groups);
  }
  const size_t genes = (size_t)n + 1;
  ENPU_RETURN_IF(
      ENPU_CALLOC_PARTS(ENPU_PART(sc->ga_req, genes), ENPU_PART(sc->ga_op, genes), ENPU_PART(sc->ga_first, genes),
                        ENPU_PART(sc->ga_genes, genes), ENPU_PART(sc->ga_seed, genes)) < 0,
      err, ENPU_ERR_NOMEM, "out of memory (GA genes)");
  n = 0;
  for (int i = 0; i < u->count; i++) {
    const int64_t m = u->unit[i].multiplicity;
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
int search_plan_slack_ga(const request *rq, scratch *sc, const search_options *opt, int first,
                         const search_bucket_result *res, search_slack_plan *pl, enpu_err *err) {
  plan_peak(rq, sc, res, pl);
  pl->request_evals = 0;
  const int aware = rq->transition_aware && rq->transitions;
  double ga_budget = pl->budget_ns;
  for (int round = 0; round < 4; round++) {
    int64_t evals;
    ENPU_FORWARD(search_ga_run(sc->ga_req, sc->ga_n, ga_budget, &opt->ga, first && round == 0 ? NULL : sc->ga_seed,
                               sc->ga_genes, &evals, err));
    pl->request_evals += evals;
    memcpy(sc->ga_seed, sc->ga_genes, (size_t)sc->ga_n * sizeof *sc->ga_seed);
    for (int n = 0; n < sc->ga_n; n++) {
      const int i = sc->ga_op[n];
      for (int64_t r = 0; r < sc->ga_req[n].multiplicity; r++)
        sc->pos[rq->offset[i] + sc->ga_first[n] + r] = sc->ga_genes[n];
    }
    fill_cand(rq, sc, sc->pos);
    req_cost plain;
    int fit_plain = 0, took = 0;
    ENPU_FORWARD(take_cand(rq, sc, pl, &plain, &fit_plain, NULL, &took, err));
    if (aware) ENPU_FORWARD(lift_rails(rq, sc, pl, err));
    if (took) {
      pl->lifted_mask = 0;
      memcpy(sc->best_pos, sc->pos, (size_t)rq->units->instances * sizeof *sc->pos);
      sc->have_best = 1;
    }
    if (fit_plain) break;
    ga_budget -= (rq->budget == CONFIG_BUDGET_PAPER ? plain.cp_ns : plain.time_ns) - pl->budget_ns;
  }
  if (aware) ENPU_FORWARD(polish(rq, sc, pl, err));
  pl->from_ga = pl->energy_nj < res->policy_peak_energy_nj; /* not the all-peak fallback */
  return plan_fits(rq, pl, res, err);
}

/* ---------------------------------------------------------------------------------
 * Re-simulating a plan from its states (validation) */

int search_plan_simulate(search_ctx *s, cost_ctx *cost, const graph *g, config_policy policy,
                         const search_options *opt, const int (*state)[CONFIG_NCOMP], int gated,
                         search_plan_totals *out, enpu_err *err) {
  search_options defaults;
  if (!opt) search_options_default(&defaults), opt = &defaults;
  policy_setup ps;
  int64_t instances;
  ENPU_FORWARD(search_req_prepare(s, policy, opt, g, &ps, &instances, err));
  search_units *u = NULL;
  ENPU_FORWARD(search_units_build(s, cost, g, policy, opt, &u, err));
  scratch sc = {0};
  request rq = search_req_of_setup(u, &ps, opt, cost);
  rq.gating = ps.gating || gated;
  rq.transition_aware = false;
  int(*exec)[CONFIG_NCOMP] = enpu_calloc((size_t)instances + 1, sizeof *exec);
  int rc = exec ? search_req_init(&rq, &sc, g, instances, err)
                : enpu_errorf(err, ENPU_ERR_NOMEM,
                              "out of memory (plan of %lld "
                              "instances)",
                              (long long)instances);
  for (int64_t x = 0; rc == 0 && x < instances; x++) memcpy(exec[x], state[u->walk_of[x]], sizeof exec[x]);
  req_cost c;
  if (rc == 0) rc = search_req_total(&rq, (const int(*)[CONFIG_NCOMP])exec, gated, &c, err);
  double base_ns = 0;
  if (rc == 0) rc = search_req_paper_base_time(&rq, (const int(*)[CONFIG_NCOMP])exec, gated, &base_ns, err);
  if (rc == 0) {
    *out = (search_plan_totals){.time_ns = c.time_ns,
                                .cp_time_ns = c.cp_ns,
                                .energy_nj = c.energy_nj,
                                .paper_base_time_ns = base_ns,
                                .gates = c.gates};
    memcpy(out->regulator_loss_nj, c.loss_nj, sizeof out->regulator_loss_nj);
  }
  free(exec);
  search_scratch_free(&sc);
  search_units_free(u);
  return rc;
}
