/* cost_batch.c — the cost model's batch entry point (one operator, many plans) and the
 * lower bounds over boxes of plans that the exact Pareto search prunes with.
 *
 * Sharing: without gating the core kernel reads only the SA, VU, SRAM and FE states
 * (cost_timing_core), so the context's core cache keeps one kernel result per state
 * quadruple of the last operator (memo entry: operator and shadow register count) and
 * pipeline; a batch (and the bounds) run a kernel only on a miss. Each plan then goes
 * through the same code as cost_eval — cost_timing_engines and cost_finish — so a batch
 * result equals a single evaluation bit for bit. A gating pipeline's kernel reads its
 * gating thresholds, which depend on every rail's voltage, and a paper-base pipeline runs
 * two schedules per plan: their plans go through cost_eval one by one, and they have no
 * bounds (cost.h).
 *
 * Invariants: a slot is valid when its generation equals the cache's; binding another
 * operator or pipeline starts a new generation (a real clear only when the 32-bit
 * generation wraps). The cache is indexed by the (SA, VU, SRAM) triple (directly when
 * every triple fits, hashed otherwise: a collision only evicts) and keyed by the four
 * states, so a pipeline whose FE shares a domain with HBM or ICI stays correct. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "cost_internal.h"

/* Slots of the core cache: every triple of a 34-state chip (35^3 = 42,875) fits. */
#define CORE_CACHE_SLOTS 65536u

void cost_core_cache_free(cost_core_cache *c) {
  free(c->slots);
  memset(c, 0, sizeof *c);
}

int64_t cost_ctx_kernel_runs(const cost_ctx *ctx) { return ctx->cores.kernel_runs; }

/* Bind the cache to an operator and a pipeline (a new generation when either changed). */
static int cache_bind(cost_ctx *ctx, const cost_entry *e, const cost_pipeline *pl, enpu_err *err) {
  cost_core_cache *c = &ctx->cores;
  if (!c->slots) {
    c->slots = enpu_calloc(CORE_CACHE_SLOTS, sizeof *c->slots);
    ENPU_RETURN_IF(!c->slots, err, ENPU_ERR_NOMEM, "cost model: out of memory (core cache)");
    ctx->allocations++;
    c->cap = CORE_CACHE_SLOTS;
    c->gen = 0;
  }
  const int crossing = pl->kind == COST_PIPE_ENPU;
  if (c->gen && c->entry == e && c->crossing == crossing && !memcmp(c->domain, pl->domain, sizeof c->domain))
    return 0;
  if (++c->gen == 0) {
    memset(c->slots, 0, c->cap * sizeof *c->slots);
    c->gen = 1;
  }
  c->entry = e;
  c->crossing = crossing;
  memcpy(c->domain, pl->domain, sizeof c->domain);
  return 0;
}

/* The slot of the core kernel at effective states eff, run on a miss. */
static const cost_core_slot *core_slot(cost_ctx *ctx, const int eff[COST_NUNIT]) {
  cost_core_cache *c = &ctx->cores;
  const int n = ctx->chip.freq_states + 1;
  const int64_t triple = ((int64_t)eff[CONFIG_SA] * n + eff[CONFIG_VU]) * n + eff[CONFIG_SRAM];
  const int32_t key = (int32_t)(triple * n + eff[COST_FE]);
  const size_t at = (int64_t)n * n * n <= (int64_t)c->cap
                        ? (size_t)triple
                        : (size_t)(((uint64_t)triple * 0x9E3779B97F4A7C15ull) >> 48) & (c->cap - 1);
  cost_core_slot *s = &c->slots[at];
  if (s->gen == c->gen && s->key == key) return s;
  op_timing o;
  cost_timing_core(ctx, c->entry, eff, c->domain, c->crossing, NULL, &ctx->sim, &o);
  c->kernel_runs++;
  *s = (cost_core_slot){
      c->gen, key, o.core.time_ns, o.core.stall_ns, o.core.bundles, (int8_t)o.unroll, (int8_t)o.sw_depth};
  return s;
}

/* The core kernel at effective states eff: o->core, unroll, sw_depth, the periods and
 * the (no) gated gaps, as cost_timing_core gives them without gating. */
static void core_get(cost_ctx *ctx, const int eff[COST_NUNIT], op_timing *o) {
  const cost_core_slot *s = core_slot(ctx, eff);
  cost_periods(&ctx->chip, eff, o->period_ns);
  o->core = (cost_run){.time_ns = s->time_ns, .stall_ns = s->stall_ns, .bundles = s->bundles};
  o->variant = -1; /* the slot keeps the schedule's shape, not its index */
  o->unroll = s->unroll;
  o->sw_depth = s->sw_depth;
  memset(o->gated_ns, 0, sizeof o->gated_ns);
  memset(o->gates, 0, sizeof o->gates);
}

/* One plan of a batch under a pipeline without gating, its core kernel from the cache. */
static int batch_plan(cost_ctx *ctx, const graph_op *op, const cost_entry *e, const cost_plan *plan,
                      const cost_pipeline *pl, cost_result *r, enpu_err *err) {
  memset(r, 0, sizeof *r);
  cost_effective_states(plan, pl, r->state);
  ENPU_FORWARD(cost_check_gated(op, e, r->state, err));
  op_timing o;
  core_get(ctx, r->state, &o);
  cost_timing_engines(ctx, e, r->state, NULL, &o);
  return cost_finish(ctx, e, pl, &o, NULL, 0, r, err);
}

int cost_eval_batch(cost_ctx *ctx, const graph_op *op, const cost_plan *plans, int n, const cost_pipeline *pl,
                    cost_brief *out, enpu_err *err) {
  ENPU_RETURN_IF(n < 0, err, ENPU_ERR_INVALID, "cost batch of %d plans", n);
  for (int i = 0; i < n; i++)
    if (cost_check_states(&ctx->chip, &plans[i], err) < 0) {
      enpu_err_prefix(err, "plan %d of the batch: ", i);
      return ENPU_ERR_RANGE;
    }
  if (n == 0) return 0;
  const cost_entry *e = NULL;
  const int one_by_one = pl->gating || pl->kind == COST_PIPE_PAPER_BASE; /* no shared kernel */
  if (!one_by_one) {
    ENPU_FORWARD(cost_memo_get(ctx, op, cost_pipeline_shadow(ctx, pl), &e, err));
    ENPU_FORWARD(cache_bind(ctx, e, pl, err));
  }
  for (int i = 0; i < n; i++) {
    cost_result r;
    const int rc = one_by_one ? cost_eval(ctx, op, &plans[i], pl, &r, err)
                              : batch_plan(ctx, op, e, &plans[i], pl, &r, err);
    if (rc < 0) {
      enpu_err_prefix(err, "plan %d of the batch: ", i);
      return rc;
    }
    out[i] = (cost_brief){r.time_ns, r.cp_time_ns, r.energy_total_nj};
  }
  return 0;
}

/* ---------------------------------------------------------------------------------
 * Bounds over a box of plans */

/* The least core kernel time over the box's (SA, VU, SRAM) triples (FE at the triple's
 * max, as the box's pipelines have it), each through the cache; the last few boxes'
 * minima are remembered, since a search splitting HBM or ICI asks again. */
static double core_min(cost_ctx *ctx, const cost_plan *lo, const cost_plan *hi) {
  cost_core_cache *c = &ctx->cores;
  const int range[6] = {lo->state[CONFIG_SA], lo->state[CONFIG_VU], lo->state[CONFIG_SRAM],
                        hi->state[CONFIG_SA], hi->state[CONFIG_VU], hi->state[CONFIG_SRAM]};
  for (int k = 0; k < COST_RANGE_MEMO; k++)
    if (c->range[k].gen == c->gen && !memcmp(c->range[k].box, range, sizeof range)) return c->range[k].min_ns;
  double m = INFINITY;
  int eff[COST_NUNIT] = {0};
  for (int a = range[0]; a <= range[3]; a++)
    for (int v = range[1]; v <= range[4]; v++)
      for (int s = range[2]; s <= range[5]; s++) {
        eff[CONFIG_SA] = a, eff[CONFIG_VU] = v, eff[CONFIG_SRAM] = s;
        eff[COST_FE] = a > v ? (a > s ? a : s) : (v > s ? v : s);
        m = fmin(m, core_slot(ctx, eff)->time_ns);
      }
  c->range[c->range_next] = (cost_core_range){c->gen, {0}, m};
  memcpy(c->range[c->range_next].box, range, sizeof range);
  c->range_next = (c->range_next + 1) % COST_RANGE_MEMO;
  return m;
}

/* A lower bound of the core kernel over the box: the least kernel time over its triples
 * when there are at most CORE_SCAN_MAX of them (running the kernels the cache lacks),
 * else no unit's own work at hi's clocks can be beaten (the kernel executes every
 * command's occupancy on its unit, one after another: test_core_covers_unit_work), less
 * CORE_FLOOR_RTOL for the kernel's float occupancies (2^-24 relative each). */
#define CORE_SCAN_MAX 64
#define CORE_FLOOR_RTOL 1e-6
static double core_floor(cost_ctx *ctx, const cost_tile *t, const cost_plan *lo, const cost_plan *hi,
                         const double period_ns[COST_NUNIT]) {
  int64_t triples = 1;
  for (int c = CONFIG_SA; c <= CONFIG_SRAM; c++) triples *= hi->state[c] - lo->state[c] + 1;
  if (triples <= CORE_SCAN_MAX) return core_min(ctx, lo, hi);
  const double own = fmax(t->sa_cycles * period_ns[CONFIG_SA],
                          fmax(t->vu_cycles * period_ns[CONFIG_VU], t->sram_cycles * period_ns[CONFIG_SRAM]));
  return own * (1 - CORE_FLOOR_RTOL);
}

/* Busy time of component c at state s before the clamp to the op time (cost_finish). */
static double busy_at(const cost_ctx *ctx, const cost_tile *t, config_component c, int s) {
  const config_chip *chip = &ctx->chip;
  const double frac = (double)s / chip->freq_states;
  switch (c) {
  case CONFIG_SA: return t->sa_cycles * (1.0 / config_state_ghz(chip, s));
  case CONFIG_VU: return t->vu_cycles * (1.0 / config_state_ghz(chip, s));
  case CONFIG_SRAM: return t->sram_cycles * (1.0 / config_state_ghz(chip, s));
  case CONFIG_HBM: /* own time less the first request's latency, as cost_finish has it */
    return t->hbm_bytes > 0 ? (chip->hbm_latency_ns + t->hbm_bytes / (chip->hbm_gbps * frac)) - chip->hbm_latency_ns
                            : 0;
  default: return t->ici_bytes > 0 ? t->ici_bytes / (t->ici_links * chip->ici_link_gbps * frac) : 0;
  }
}

static int check_box(const cost_ctx *ctx, const cost_plan *lo, const cost_plan *hi, const cost_pipeline *pl,
                     enpu_err *err) {
  for (int c = 0; c < CONFIG_NCOMP; c++)
    ENPU_RETURN_IF(lo->state[c] < 1 || lo->state[c] > hi->state[c] || hi->state[c] > ctx->chip.freq_states, err,
                   ENPU_ERR_RANGE, "plan box: %s states %d..%d, expected 1 <= lo <= hi <= %d",
                   config_component_name((config_component)c), lo->state[c], hi->state[c], ctx->chip.freq_states);
  for (int u = 0; u < COST_NUNIT; u++)
    for (int w = 0; w < u; w++)
      ENPU_RETURN_IF(pl->domain[u] == pl->domain[w], err, ENPU_ERR_INVALID,
                     "plan box bounds need every unit in its own domain (units %d and %d share)", w, u);
  ENPU_RETURN_IF(pl->kind == COST_PIPE_PAPER_BASE, err, ENPU_ERR_INVALID,
                 "plan box bounds are for the search's pipelines, not the paper's overhead base");
  ENPU_RETURN_IF(pl->gating, err, ENPU_ERR_INVALID,
                 "plan box bounds do not hold under power gating (it saves static energy)");
  return 0;
}

int cost_bound_box(cost_ctx *ctx, const graph_op *op, const cost_plan *lo, const cost_plan *hi,
                   const cost_pipeline *pl, cost_brief *lb, enpu_err *err) {
  ENPU_FORWARD(check_box(ctx, lo, hi, pl, err));
  const cost_entry *e = NULL;
  ENPU_FORWARD(cost_memo_get(ctx, op, cost_pipeline_shadow(ctx, pl), &e, err));
  ENPU_FORWARD(cache_bind(ctx, e, pl, err));
  const cost_tile *t = &e->tile;
  /* Time: the engines at hi around the least core of the box (both monotone). */
  int eff[COST_NUNIT];
  cost_effective_states(hi, pl, eff);
  op_timing o = {.variant = -1};
  cost_periods(&ctx->chip, eff, o.period_ns);
  o.core = (cost_run){.time_ns = t->nstage > 0 ? core_floor(ctx, t, lo, hi, o.period_ns) : 0};
  cost_timing_engines(ctx, e, eff, NULL, &o);
  double own_max = 0;
  for (int c = 0; c < CONFIG_NCOMP; c++) own_max = fmax(own_max, o.own_ns[c]);
  lb->time_ns = o.time_ns;
  lb->cp_time_ns = e->t_nodvfs_ns + (own_max - e->own_peak_ns);
  /* Energy: each component at its cheapest state for the least time. */
  const double util[CONFIG_NCOMP] = {t->sa_util, t->vu_util, 1, 1, 1};
  double energy = power_other_energy(pl->power, o.time_ns) +
                  t->host_bytes * ctx->chip.host_pj_per_byte / 1e3; /* as cost_finish */
  for (int c = 0; c < CONFIG_NCOMP; c++) {
    double best = INFINITY;
    for (int s = lo->state[c]; s <= hi->state[c]; s++) {
      const double busy = fmin(busy_at(ctx, t, (config_component)c, s), o.time_ns);
      best = fmin(best, power_energy_floor(pl->power, (config_component)c, s, busy, o.time_ns, util[c]));
    }
    energy += best;
  }
  lb->energy_nj = energy * (1 - COST_BOUND_RTOL);
  return 0;
}
