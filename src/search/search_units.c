/* search_units.c — the units of a request (search.h): one per graph op for a
 * per-operator policy, one per distinct epoch for an epoch policy (built in
 * search_epochs.c); their walk numbering; and the op level of one unit, which for an
 * epoch evaluates each plan as one V/f setting for all its operators through the cost
 * model.
 *
 * Invariants of a built search_units: offset[u + 1] − offset[u] is unit u's
 * multiplicity; walk numbers 0..instances−1 each name one unit instance
 * (unit_of_walk), whose op instances are consecutive in execution order from first_x;
 * walk_of maps every op instance to its unit instance, occurrences numbered in
 * execution order. */
#include <stdlib.h>
#include <string.h>

#include "search_internal.h"

/* A graph's op instances: each op's multiplicity its segment's repeat × its count. */
int search_req_check_graph(const graph *g, int64_t *instances, enpu_err *err) {
  *instances = 0;
  for (int si = 0; si < graph_segment_count(g); si++) {
    const graph_segment *seg = graph_segment_at(g, si);
    for (int i = seg->first_op; i < seg->first_op + seg->op_count; i++) {
      const graph_op *op = graph_op_at(g, i);
      ENPU_RETURN_IF(op->count < 1 || op->multiplicity != seg->repeat * op->count, err, ENPU_ERR_INVALID,
                     "op %d: multiplicity %lld is not its segment's repeat %lld × count %lld", i,
                     (long long)op->multiplicity, (long long)seg->repeat, (long long)op->count);
      *instances += op->multiplicity;
    }
  }
  return 0;
}

/* Every op instance in execution order with its walk index (ops grouped per segment). */
void search_each_instance(const graph *g, instance_visit *visit, void *ctx) {
  int64_t x = 0, offset = 0;
  for (int si = 0; si < graph_segment_count(g); si++) {
    const graph_segment *seg = graph_segment_at(g, si);
    for (int64_t r = 0; r < seg->repeat; r++)
      for (int i = seg->first_op, at = 0; i < seg->first_op + seg->op_count; i++) {
        const int64_t count = graph_op_at(g, i)->count;
        for (int64_t c = 0; c < count; c++, x++) visit(ctx, i, x, offset + at + r * count + c);
        at += (int)graph_op_at(g, i)->multiplicity;
      }
    for (int i = seg->first_op; i < seg->first_op + seg->op_count; i++) offset += graph_op_at(g, i)->multiplicity;
  }
}

void search_op_of_visit(void *ctx, int op, int64_t exec, int64_t walk) {
  (void)walk;
  ((int *)ctx)[exec] = op;
}

int search_units_alloc(int count, int members, int64_t op_instances, search_units **out, enpu_err *err) {
  search_units *u = enpu_calloc(1, sizeof *u);
  ENPU_RETURN_IF(!u, err, ENPU_ERR_NOMEM, "out of memory (units)");
  u->count = count;
  u->op_instances = op_instances;
  if (ENPU_CALLOC_PARTS(ENPU_PART(u->unit, (size_t)count + 1), ENPU_PART(u->member_op, (size_t)members + 1),
                        ENPU_PART(u->member_count, (size_t)members + 1), ENPU_PART(u->offset, (size_t)count + 1),
                        ENPU_PART(u->walk_of, (size_t)op_instances + 1)) < 0) {
    free(u);
    return enpu_errorf(err, ENPU_ERR_NOMEM, "out of memory (units of %lld op instances)", (long long)op_instances);
  }
  *out = u;
  return 0;
}

void search_units_free(search_units *u) {
  if (!u) return;
  free(u->unit);         /* owns member_op, member_count, offset and walk_of */
  free(u->unit_of_walk); /* owns first_x */
  free(u);
}

/* walk_of holds each op instance's unit, occ its occurrence: make them walk numbers. */
static int units_number(search_units *u, const int64_t *occ, enpu_err *err) {
  for (int k = 0; k < u->count; k++) u->offset[k + 1] = u->offset[k] + u->unit[k].multiplicity;
  u->instances = u->offset[u->count];
  ENPU_RETURN_IF(ENPU_CALLOC_PARTS(ENPU_PART(u->unit_of_walk, (size_t)u->instances + 1),
                                   ENPU_PART(u->first_x, (size_t)u->instances + 1)) < 0,
                 err, ENPU_ERR_NOMEM, "out of memory (units)");
  for (int64_t w = 0; w < u->instances; w++) u->first_x[w] = -1;
  for (int64_t x = 0; x < u->op_instances; x++) {
    const int k = (int)u->walk_of[x];
    ENPU_RETURN_IF(k < 0 || k >= u->count || occ[x] < 0 || occ[x] >= u->unit[k].multiplicity, err,
                   ENPU_ERR_INTERNAL, "op instance %lld: unit %d occurrence %lld", (long long)x, k,
                   (long long)occ[x]);
    const int64_t w = u->offset[k] + occ[x];
    u->walk_of[x] = w;
    u->unit_of_walk[w] = k;
    if (u->first_x[w] < 0) u->first_x[w] = x;
  }
  return 0;
}

int search_units_finish(search_units *u, enpu_err *err) {
  int64_t *occ = enpu_calloc((size_t)u->op_instances + 1, sizeof *occ);
  int64_t *seen = enpu_calloc((size_t)u->count + 1, sizeof *seen);
  int rc = occ && seen ? 0 : enpu_errorf(err, ENPU_ERR_NOMEM, "out of memory (units)");
  /* An occurrence starts where an op instance follows one of another unit instance: the
   * builders mark each unit instance's first op instance with walk_of = unit, and its
   * other op instances with unit + count (a continuation). */
  for (int64_t x = 0; rc == 0 && x < u->op_instances; x++) {
    int64_t k = u->walk_of[x];
    const int cont = k >= u->count;
    if (cont) k -= u->count;
    if (!cont) seen[k]++;
    u->walk_of[x] = k;
    occ[x] = seen[k] - 1;
  }
  if (rc == 0) rc = units_number(u, occ, err);
  free(occ);
  free(seen);
  return rc;
}

static void unit_visit(void *ctx, int op, int64_t exec, int64_t walk) {
  (void)walk;
  ((int64_t *)ctx)[exec] = op;
}

int search_units_of_ops(const graph *g, search_units **out, enpu_err *err) {
  int64_t instances;
  ENPU_FORWARD(search_req_check_graph(g, &instances, err));
  const int nops = graph_op_count(g);
  search_units *u;
  ENPU_FORWARD(search_units_alloc(nops, nops, instances, &u, err));
  for (int i = 0; i < nops; i++) {
    const graph_op *op = graph_op_at(g, i);
    search_unit *un = &u->unit[i];
    *un = (search_unit){.signature = op->signature,
                        .multiplicity = op->multiplicity,
                        .kind = (int)op->kind,
                        .op = i,
                        .member_first = i,
                        .member_count = 1};
    snprintf(un->name, sizeof un->name, "%s", op->name);
    u->member_op[i] = i;
    u->member_count[i] = 1;
  }
  search_each_instance(g, unit_visit, u->walk_of); /* every op instance starts an occurrence */
  const int rc = search_units_finish(u, err);
  if (rc < 0) search_units_free(u);
  else *out = u;
  return rc;
}

/* ---------------------------------------------------------------------------------
 * The op level of a unit */

/* The cost model's time, critical path and energy of (graph op, plan) for the epochs of
 * one compilation, which share their operators (every layer runs the same ones): an
 * open-addressing table at most half full, key = op + 1 in the high bits, the five
 * states in the low 40. */
typedef struct search_op_line {
  uint64_t key;
  double time_ns, cp_ns, energy_nj;
} op_line;

static uint64_t line_key(int op, const int state[CONFIG_NCOMP]) {
  uint64_t k = (uint64_t)op + 1;
  for (int c = 0; c < CONFIG_NCOMP; c++) k = k << 8 | (uint64_t)state[c];
  return k;
}

static op_line *cache_slot(const unit_cache *uc, uint64_t key) {
  size_t i = (size_t)(key * 0x9E3779B97F4A7C15ull) & (uc->cap - 1);
  while (uc->lines[i].key && uc->lines[i].key != key) i = (i + 1) & (uc->cap - 1);
  return &uc->lines[i];
}

static int cache_grow(unit_cache *uc, enpu_err *err) {
  if (2 * (uc->n + 1) <= uc->cap) return 0;
  unit_cache big = {enpu_calloc(uc->cap ? 2 * uc->cap : 4096, sizeof *big.lines), uc->cap ? 2 * uc->cap : 4096,
                    uc->n};
  ENPU_RETURN_IF(!big.lines, err, ENPU_ERR_NOMEM, "out of memory (epoch cost cache)");
  for (size_t i = 0; i < uc->cap; i++)
    if (uc->lines[i].key) *cache_slot(&big, uc->lines[i].key) = uc->lines[i];
  free(uc->lines);
  *uc = big;
  return 0;
}

void search_unit_cache_free(unit_cache *uc) {
  free(uc->lines);
  *uc = (unit_cache){0};
}

/* One V/f setting for every member of an epoch: the cost model per member op, times its
 * instances in the epoch (time in the budget mode's measure). */
typedef struct {
  cost_ctx *cost;
  const graph *g;
  const search_units *u;
  int unit;
  const cost_pipeline *pipe;
  config_budget budget;
  unit_cache *cache;
} epoch_user;

static int epoch_eval(void *user, const int state[CONFIG_NCOMP], double *time_ns, double *energy_nj,
                      enpu_err *err) {
  const epoch_user *e = user;
  const search_unit *un = &e->u->unit[e->unit];
  cost_plan plan;
  memcpy(plan.state, state, sizeof plan.state);
  double t = 0, en = 0;
  for (int m = un->member_first; m < un->member_first + un->member_count; m++) {
    const int op = e->u->member_op[m];
    ENPU_FORWARD(cache_grow(e->cache, err));
    op_line *l = cache_slot(e->cache, line_key(op, state));
    if (!l->key) {
      cost_result r;
      ENPU_FORWARD(cost_eval(e->cost, graph_op_at(e->g, op), &plan, e->pipe, &r, err));
      *l = (op_line){line_key(op, state), r.time_ns, r.cp_time_ns, r.energy_total_nj};
      e->cache->n++;
    }
    const double n = (double)e->u->member_count[m];
    t += n * (e->budget == CONFIG_BUDGET_PAPER ? l->cp_ns : l->time_ns);
    en += n * l->energy_nj;
  }
  *time_ns = t, *energy_nj = en;
  return 0;
}

int search_unit_compile_cached(search_ctx *s, cost_ctx *cost, const graph *g, const search_units *u, int unit,
                               config_policy policy, const search_options *opt, unit_cache *cache,
                               search_pareto *out, enpu_err *err) {
  memset(out, 0, sizeof *out);
  ENPU_RETURN_IF(unit < 0 || unit >= u->count, err, ENPU_ERR_INVALID, "unit %d of %d", unit, u->count);
  const search_unit *un = &u->unit[unit];
  if (un->kind != SEARCH_UNIT_EPOCH)
    return search_op_compile(s, cost, graph_op_at(g, un->op), policy, opt, out, err);
  search_options defaults;
  if (!opt) search_options_default(&defaults), opt = &defaults;
  policy_setup ps;
  ENPU_FORWARD(search_policy_setup(s, policy, opt, &ps, err));
  epoch_user eu = {cost, g, u, unit, &ps.pipe, opt->budget, cache};
  void *users[1] = {&eu};
  const int rc = search_op_pareto(s->memo, &ps.dom, epoch_eval, users, 1, out, err);
  if (rc < 0) enpu_err_prefix(err, "%s: ", un->name);
  return rc;
}

int search_unit_compile(search_ctx *s, cost_ctx *cost, const graph *g, const search_units *u, int unit,
                        config_policy policy, const search_options *opt, search_pareto *out, enpu_err *err) {
  unit_cache cache = {0};
  const int rc = search_unit_compile_cached(s, cost, g, u, unit, policy, opt, &cache, out, err);
  search_unit_cache_free(&cache);
  return rc;
}

int search_sets_compile(const uint64_t *signature, int count, search_set_fn compile, void *user, search_sets *out,
                        enpu_err *err) {
  *out = (search_sets){.count = count};
  out->sets = enpu_calloc((size_t)count + 1, sizeof *out->sets);
  out->set_of = enpu_calloc((size_t)count + 1, sizeof *out->set_of);
  ENPU_RETURN_IF(!out->sets || !out->set_of, err, ENPU_ERR_NOMEM, "out of memory (op sets)");
  for (int i = 0; i < count; i++) {
    for (int j = 0; j < i && !out->set_of[i]; j++)
      if (signature[j] == signature[i]) out->set_of[i] = out->set_of[j];
    if (!out->set_of[i]) out->set_of[i] = &out->sets[i], out->distinct++;
  }
  const double t0 = enpu_now_s();
  int rc = 0;
  for (int i = 0, rank = 0; rc == 0 && i < count; i++) {
    if (out->set_of[i] != &out->sets[i]) continue;
    rc = compile(user, i, rank++, out->distinct, &out->sets[i], err);
    out->evals += out->sets[i].evals;
  }
  out->search_s = enpu_now_s() - t0;
  return rc;
}

void search_sets_free(search_sets *s) {
  if (!s) return;
  for (int i = 0; s->sets && i < s->count; i++) search_pareto_free(&s->sets[i]);
  free(s->sets);
  free(s->set_of);
  *s = (search_sets){0};
}

void search_bucket_add_op_level(search_bucket_result *r, const search_sets *sets) {
  r->op_evals = sets->evals;
  r->unique_ops = sets->distinct;
  r->op_search_s = sets->search_s;
  for (int k = 0; k < r->nplans; k++) {
    r->plans[k].op_evals = sets->evals;
    r->plans[k].search_s += sets->search_s;
  }
}

/* acc += n × r over what a unit's cost is made of. */
static void result_add(cost_result *acc, const cost_result *r, double n) {
  acc->time_ns += n * r->time_ns;
  acc->cp_time_ns += n * r->cp_time_ns;
  acc->energy_total_nj += n * r->energy_total_nj;
  acc->energy_dynamic_nj += n * r->energy_dynamic_nj;
  acc->energy_static_nj += n * r->energy_static_nj;
  for (int k = 0; k < POWER_NSLOT; k++) acc->energy_nj[k] += n * r->energy_nj[k];
  for (int c = 0; c < CONFIG_NCOMP; c++) {
    acc->loss_nj[c] += n * r->loss_nj[c];
    acc->busy_ns[c] += n * r->busy_ns[c];
  }
}

int search_unit_breakdown(search_ctx *s, cost_ctx *cost, const graph *g, const search_units *u, int unit,
                          config_policy policy, const search_options *opt, const int state[CONFIG_NCOMP],
                          cost_result *out, enpu_err *err) {
  ENPU_RETURN_IF(unit < 0 || unit >= u->count, err, ENPU_ERR_INVALID, "unit %d of %d", unit, u->count);
  const search_unit *un = &u->unit[unit];
  if (un->kind != SEARCH_UNIT_EPOCH)
    return search_op_breakdown(s, cost, graph_op_at(g, un->op), policy, opt, state, out, err);
  memset(out, 0, sizeof *out);
  for (int m = un->member_first; m < un->member_first + un->member_count; m++) {
    cost_result r;
    ENPU_FORWARD(search_op_breakdown(s, cost, graph_op_at(g, u->member_op[m]), policy, opt, state, &r, err));
    result_add(out, &r, (double)u->member_count[m]);
  }
  for (int c = 0; c < CONFIG_NCOMP; c++)
    out->utilization[c] = out->time_ns > 0 ? out->busy_ns[c] / out->time_ns : 0;
  memcpy(out->state, state, sizeof(int) * CONFIG_NCOMP);
  return 0;
}
