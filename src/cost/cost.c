/* cost.c — the cost model's front door: contexts, the per-operator memo, pipelines
 * (domain maps), and cost_eval, which combines the instruction-level core kernel with
 * the DMA (HBM) and ICI engines and prices the result with the power model.
 *
 * Invariants: a memo entry (tile + kernels of every schedule variant) depends only on
 * the operator's content and the chip, never on a plan; entries are created on an
 * operator's first evaluation and never freed before the context. The memo index is an
 * open-addressing table at most half full, so lookups are short.
 *
 * Combining with the engines: DMA and ICI run asynchronously, double-buffered, in B
 * blocks. A three-stage pipeline (DMA in → core → ICI) over B blocks takes
 *   Σ_k (L_k + t_k / B) + (B − 1) · max_k (t_k) / B
 * with t_k a stage's total time and L_k its fixed lead-in (HBM latency). This is a max
 * of sums of monotone terms, so it keeps the model monotone in every clock. A host load
 * adds the host link as one more stage (host → HBM; its latency is a lead-in); the link
 * has no DVFS state, so its time is fixed, and its energy per byte (chip file) is
 * charged to the "other" slot as switching energy.
 *
 * A memo entry also holds the op's NoDVFS time and its components' largest own time at
 * peak, the two constants of the critical-path time (cost.h); they are computed by the
 * same timing code as any plan, so cp of the NoDVFS plan equals its time bit for bit. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "cost_internal.h"

/* Schedule variants: unroll 1/2/4 × software-pipeline depth 1/2/3. Depth 3 (each stage
 * two trips behind the one before) is what hides a long producer latency such as the SA
 * fill behind the next pass. */
static const int variant_unroll[COST_NVARIANT] = {1, 2, 4, 1, 2, 4, 1, 2, 4};
static const int variant_depth[COST_NVARIANT] = {1, 1, 1, 2, 2, 2, 3, 3, 3};

int cost_fifo_depth(double ti, double to) {
  double rt = 5 * ti + 5 * to; /* Eq. 1 */
  return (int)ceil(rt / fmax(ti, to) - 1e-12);
}

void cost_pipeline_nodvfs(cost_pipeline *p, const power_model *pm) {
  static const int map[COST_NUNIT] = {0, 0, 0, 1, 2, 0}; /* SA VU SRAM HBM ICI FE */
  p->kind = COST_PIPE_NODVFS;
  memcpy(p->domain, map, sizeof map);
  p->power = pm;
}

int cost_pipeline_enpu(cost_pipeline *p, int domains, const power_model *pm, enpu_err *err) {
  static const int map5[COST_NUNIT] = {1, 2, 3, 4, 5, 0};
  static const int map4[COST_NUNIT] = {0, 0, 3, 4, 5, 0};
  static const int map3[COST_NUNIT] = {0, 0, 0, 4, 5, 0};
  const int *map = domains == 5 ? map5 : domains == 4 ? map4 : domains == 3 ? map3 : NULL;
  ENPU_RETURN_IF(!map, err, ENPU_ERR_INVALID, "eNPU domain count %d: expected 3, 4 or 5",
                 domains);
  p->kind = COST_PIPE_ENPU;
  memcpy(p->domain, map, sizeof map5);
  p->power = pm;
  return 0;
}

void cost_pipeline_ideal(cost_pipeline *p, const power_model *pm) {
  static const int map[COST_NUNIT] = {1, 2, 3, 4, 5, 0};
  p->kind = COST_PIPE_IDEAL;
  memcpy(p->domain, map, sizeof map);
  p->power = pm;
}

int cost_ctx_create(const config_chip *chip, cost_ctx **out, enpu_err *err) {
  *out = NULL;
  ENPU_RETURN_IF(!chip || chip->sa_count < 1 || chip->sa_dim < 1 || chip->vu_count < 1 ||
                     chip->vu_sublanes < 1 || chip->vu_lanes < 1 || chip->vreg_bytes < 1 ||
                     chip->sram_ports < 1 || chip->sram_port_bytes_per_cycle < 1 ||
                     chip->sram_bytes <= 0 || chip->hbm_gbps <= 0 || chip->ici_links < 1 ||
                     chip->ici_link_gbps <= 0 || chip->freq_states < 1 ||
                     chip->freq_step_mhz <= 0 || chip->fifo_sync_cycles < 0 ||
                     chip->shadow_vregs < 0,
                 err, ENPU_ERR_INVALID, "cost model: chip parameters missing or not positive");
  cost_ctx *ctx = enpu_calloc(1, sizeof *ctx);
  ENPU_RETURN_IF(!ctx, err, ENPU_ERR_NOMEM, "cost model: out of memory");
  ctx->chip = *chip;
  memset(ctx->chip.vf, 0, sizeof ctx->chip.vf);
  memset(&ctx->chip.ivr_dvfs, 0, sizeof ctx->chip.ivr_dvfs);
  memset(&ctx->chip.ivr_fixed, 0, sizeof ctx->chip.ivr_fixed);
  memset(&ctx->chip.hbm_io, 0, sizeof ctx->chip.hbm_io);
  memset(&ctx->chip.hbm_dram, 0, sizeof ctx->chip.hbm_dram);
  *out = ctx;
  return 0;
}

void cost_ctx_free(cost_ctx *ctx) {
  if (!ctx) return;
  for (size_t i = 0; i < ctx->nentries; i++) free(ctx->entries[i]);
  free(ctx->entries);
  free(ctx->index);
  cost_core_cache_free(&ctx->cores);
  free(ctx);
}

void cost_ctx_stats(const cost_ctx *ctx, int64_t *ops_memoised, int64_t *allocations) {
  *ops_memoised = (int64_t)ctx->nentries;
  *allocations = ctx->allocations;
}

/* Content key of an operator: everything the tile level reads. */
static uint64_t op_key(const graph_op *op) {
  const graph_shape *s = &op->shape;
  enpu_hasher h;
  enpu_hasher_init(&h, 0x636f7374u);
  int64_t ints[] = {op->kind, s->b, s->m, s->k, s->n, s->v, s->kv_group, s->causal,
                    s->rhs_is_weight, s->ranks, s->in_tensors, s->out_tensors, s->dtype_bytes};
  double reals[] = {s->vector_ops_per_elem, op->flops, op->vector_ops, op->hbm_read_bytes,
                    op->hbm_write_bytes, op->ici_bytes, op->host_bytes};
  enpu_hasher_bytes(&h, ints, sizeof ints);
  enpu_hasher_bytes(&h, reals, sizeof reals);
  return enpu_hasher_digest(&h);
}

void cost_periods(const config_chip *chip, const int eff[COST_NUNIT], double period_ns[COST_NUNIT]) {
  for (int u = 0; u < COST_NUNIT; u++)
    period_ns[u] = eff[u] ? 1.0 / config_state_ghz(chip, eff[u]) : 0;
}

/* The core kernel at the effective states `eff`, its units in domains `domain` (a
 * crossing costs fifo_sync_cycles when `crossing` and the unit is not in the FE's
 * domain): each unit's clock period and the fastest schedule variant (§2.4, §3.3). It
 * reads only the SA, VU, SRAM and FE states: the kernel has no HBM or ICI command. */
void cost_timing_core(const cost_ctx *ctx, const cost_entry *e, const int eff[COST_NUNIT],
                      const int domain[COST_NUNIT], int crossing, cost_sim *sim, op_timing *o) {
  const config_chip *chip = &ctx->chip;
  const cost_tile *t = &e->tile;
  cost_timing tm;
  double s = chip->fifo_sync_cycles;
  cost_periods(chip, eff, tm.period_ns);
  for (int u = 0; u < COST_NUNIT; u++) {
    int cross = crossing && domain[u] != domain[COST_FE];
    tm.cross_in_ns[u] = cross ? s * tm.period_ns[u] : 0;
    tm.cross_out_ns[u] = cross ? s * tm.period_ns[COST_FE] : 0;
  }
  memcpy(o->period_ns, tm.period_ns, sizeof o->period_ns);
  o->core = (cost_run){t->nstage > 0 ? INFINITY : 0, 0, 0};
  o->unroll = o->sw_depth = 0;
  for (int v = 0; t->nstage > 0 && v < COST_NVARIANT; v++) {
    if (!e->kernel_ok[v]) continue;
    cost_run r;
    cost_kernel_run(&e->kernel[v], &tm, sim, &r);
    if (r.time_ns < o->core.time_ns) {
      o->core = r;
      o->unroll = variant_unroll[v];
      o->sw_depth = variant_depth[v];
    }
  }
}

/* The DMA and ICI engines and the three-stage pipeline around a timed core (o->core):
 * bandwidth = state / states × peak; ICI: α–β sum per collective step. Every step is a
 * sum, product, quotient by a positive constant or max of non-negative terms, so the
 * result is monotone in o->core.time_ns and in the HBM and ICI states, in floating point
 * too (rounding to nearest is monotone). */
void cost_timing_engines(const cost_ctx *ctx, const cost_entry *e, const int eff[COST_NUNIT],
                         op_timing *o) {
  const config_chip *chip = &ctx->chip;
  const cost_tile *t = &e->tile;
  double frac_hbm = (double)eff[CONFIG_HBM] / chip->freq_states;
  double frac_ici = (double)eff[CONFIG_ICI] / chip->freq_states;
  double hbm_ns = t->hbm_bytes > 0 ? t->hbm_bytes / (chip->hbm_gbps * frac_hbm) : 0;
  o->ici_xfer_ns =
      t->ici_bytes > 0 ? t->ici_bytes / (t->ici_links * chip->ici_link_gbps * frac_ici) : 0;
  double ici_ns = o->ici_xfer_ns + t->ici_steps * chip->ici_latency_ns;
  double host_ns = t->host_bytes > 0 ? t->host_bytes / chip->host_gbps : 0;
  double blocks = fmax(1, fmax(t->hbm_blocks, t->ici_steps));
  double lead_ns = t->hbm_bytes > 0 ? chip->hbm_latency_ns : 0;
  double host_lead_ns = t->host_bytes > 0 ? chip->host_latency_ns : 0;
  double slowest = fmax(fmax(hbm_ns, host_ns), fmax(o->core.time_ns, ici_ns));
  o->time_ns = lead_ns + host_lead_ns + (hbm_ns + o->core.time_ns + ici_ns + host_ns) / blocks +
               (blocks - 1) * slowest / blocks;
  o->own_ns[CONFIG_SA] = t->sa_cycles * o->period_ns[CONFIG_SA];
  o->own_ns[CONFIG_VU] = t->vu_cycles * o->period_ns[CONFIG_VU];
  o->own_ns[CONFIG_SRAM] = t->sram_cycles * o->period_ns[CONFIG_SRAM];
  o->own_ns[CONFIG_HBM] = lead_ns + hbm_ns; /* its first request's latency is its own */
  o->own_ns[CONFIG_ICI] = ici_ns;
  for (int c = CONFIG_SA; c <= CONFIG_SRAM; c++) o->tail_ns[c] = ici_ns / blocks;
  o->tail_ns[CONFIG_HBM] = (o->core.time_ns + ici_ns) / blocks;
  o->tail_ns[CONFIG_ICI] = 0;
}

static void op_timing_run(cost_ctx *ctx, const cost_entry *e, const int eff[COST_NUNIT],
                          const int domain[COST_NUNIT], int crossing, op_timing *o) {
  cost_timing_core(ctx, e, eff, domain, crossing, &ctx->sim, o);
  cost_timing_engines(ctx, e, eff, o);
}

static double max_own(const double own[CONFIG_NCOMP]) {
  double m = 0;
  for (int c = 0; c < CONFIG_NCOMP; c++) m = fmax(m, own[c]);
  return m;
}

/* The critical-path constants of a new entry: the NoDVFS timing at peak. */
static void entry_peak(cost_ctx *ctx, cost_entry *e) {
  int eff[COST_NUNIT], domain[COST_NUNIT] = {0};
  for (int u = 0; u < COST_NUNIT; u++) eff[u] = ctx->chip.freq_states;
  op_timing o;
  op_timing_run(ctx, e, eff, domain, 0, &o);
  e->t_nodvfs_ns = o.time_ns;
  e->own_peak_ns = max_own(o.own_ns);
}

static void index_insert(cost_ctx *ctx, uint64_t key, size_t entry) {
  size_t mask = ctx->cap_index - 1, i = key & mask;
  while (ctx->index[i]) i = (i + 1) & mask;
  ctx->index[i] = (int32_t)entry + 1;
}

static int memo_grow_index(cost_ctx *ctx, enpu_err *err) {
  size_t cap = ctx->cap_index ? ctx->cap_index * 2 : 64;
  int32_t *idx = enpu_calloc(cap, sizeof *idx);
  ENPU_RETURN_IF(!idx, err, ENPU_ERR_NOMEM, "cost model: out of memory (memo index)");
  ctx->allocations++;
  free(ctx->index);
  ctx->index = idx;
  ctx->cap_index = cap;
  for (size_t e = 0; e < ctx->nentries; e++) index_insert(ctx, ctx->entries[e]->key, e);
  return 0;
}

int cost_memo_get(cost_ctx *ctx, const graph_op *op, const cost_entry **out, enpu_err *err) {
  uint64_t key = op_key(op);
  if (ctx->cap_index) {
    size_t mask = ctx->cap_index - 1;
    for (size_t i = key & mask; ctx->index[i]; i = (i + 1) & mask) {
      const cost_entry *e = ctx->entries[ctx->index[i] - 1];
      if (e->key == key) {
        *out = e;
        return 0;
      }
    }
  }
  cost_entry *e = enpu_calloc(1, sizeof *e);
  ENPU_RETURN_IF(!e, err, ENPU_ERR_NOMEM, "cost model: out of memory (memo entry)");
  ctx->allocations++;
  e->key = key;
  int rc = cost_tile_op(&ctx->chip, op, &e->tile, err);
  int any = 0;
  for (int v = 0; rc == 0 && v < COST_NVARIANT; v++) {
    /* A variant too large for the kernel limits is simply not a candidate. */
    e->kernel_ok[v] = cost_kernel_build(&ctx->chip, &e->tile, variant_unroll[v],
                                        variant_depth[v], ctx->chip.shadow_vregs,
                                        &e->kernel[v], NULL) == 0;
    any |= e->kernel_ok[v];
  }
  if (rc == 0 && !any)
    rc = enpu_errorf(err, ENPU_ERR_INVALID, "op %d (%s): no schedule fits the kernel limits",
                     op->id, op->name);
  if (rc == 0) entry_peak(ctx, e);
  if (rc == 0 && ctx->nentries == ctx->cap_entries) {
    size_t before = ctx->cap_entries;
    rc = enpu_grow((void **)&ctx->entries, &ctx->cap_entries, ctx->nentries + 1,
                   sizeof *ctx->entries);
    if (rc) enpu_errorf(err, rc, "cost model: out of memory (memo)");
    else if (ctx->cap_entries != before) ctx->allocations++;
  }
  if (rc == 0 && 2 * (ctx->nentries + 1) > ctx->cap_index) rc = memo_grow_index(ctx, err);
  if (rc) {
    free(e);
    return rc;
  }
  ctx->entries[ctx->nentries] = e;
  index_insert(ctx, key, ctx->nentries);
  ctx->nentries++;
  *out = e;
  return 0;
}

/* Effective state of every unit: FE at max(SA, VU, SRAM); a domain at the highest state
 * of its members. */
void cost_effective_states(const cost_plan *plan, const cost_pipeline *pl, int eff[COST_NUNIT]) {
  int nominal[COST_NUNIT];
  for (int c = 0; c < CONFIG_NCOMP; c++) nominal[c] = plan->state[c];
  nominal[COST_FE] = plan->state[CONFIG_SA];
  if (plan->state[CONFIG_VU] > nominal[COST_FE]) nominal[COST_FE] = plan->state[CONFIG_VU];
  if (plan->state[CONFIG_SRAM] > nominal[COST_FE]) nominal[COST_FE] = plan->state[CONFIG_SRAM];
  for (int u = 0; u < COST_NUNIT; u++) {
    eff[u] = nominal[u];
    for (int w = 0; w < COST_NUNIT; w++)
      if (pl->domain[w] == pl->domain[u] && nominal[w] > eff[u]) eff[u] = nominal[w];
  }
}

int cost_check_states(const config_chip *chip, const cost_plan *plan, enpu_err *err) {
  for (int c = 0; c < CONFIG_NCOMP; c++)
    ENPU_RETURN_IF(plan->state[c] < 0 || plan->state[c] > chip->freq_states, err,
                   ENPU_ERR_RANGE, "plan state of %s is %d: expected 0..%d",
                   config_component_name((config_component)c), plan->state[c],
                   chip->freq_states);
  return 0;
}

/* The voltage of each component's rail: a domain sits at its highest member's voltage. */
static void rail_voltages(const cost_pipeline *pl, const int eff[COST_NUNIT],
                          double rail_v[CONFIG_NCOMP]) {
  for (int c = 0; c < CONFIG_NCOMP; c++) {
    rail_v[c] = 0;
    for (int w = 0; w < CONFIG_NCOMP; w++)
      if (pl->domain[w] == pl->domain[c])
        rail_v[c] = fmax(rail_v[c], power_voltage_v(pl->power, (config_component)w, eff[w]));
  }
}

/* Per-rail transition delays entering an op planned `eff` after one planned `prev_eff`:
 * every member of a domain waits for its rail. */
static void rail_delays(const cost_pipeline *pl, const int prev_eff[COST_NUNIT],
                        const int eff[COST_NUNIT], double delay_ns[CONFIG_NCOMP]) {
  double v0[CONFIG_NCOMP], v1[CONFIG_NCOMP];
  rail_voltages(pl, prev_eff, v0);
  rail_voltages(pl, eff, v1);
  for (int c = 0; c < CONFIG_NCOMP; c++) delay_ns[c] = power_transition_ns(pl->power, v0[c], v1[c]);
}

/* Energy of the timed op at out->time_ns, plus the moving rails' extra leakage. */
static int price(const cost_pipeline *pl, const cost_tile *t, const int *prev_eff,
                 double host_nj, cost_result *out, enpu_err *err) {
  for (int c = 0; c < CONFIG_NCOMP; c++) out->flop_utilization[c] = 1;
  out->flop_utilization[CONFIG_SA] = t->sa_util;
  out->flop_utilization[CONFIG_VU] = t->vu_util;
  double rail_v[CONFIG_NCOMP];
  rail_voltages(pl, out->state, rail_v);
  power_breakdown pb;
  ENPU_FORWARD(power_op_energy(pl->power, out->state, rail_v, out->busy_ns,
                               out->flop_utilization, out->time_ns, &pb, err));
  for (int c = 0; prev_eff && c < CONFIG_NCOMP; c++) {
    double extra = power_transition_energy(pl->power, (config_component)c, prev_eff[c],
                                           out->state[c]);
    pb.energy_nj[c] += extra;
    pb.static_nj += extra;
    pb.total_nj += extra;
  }
  memcpy(out->energy_nj, pb.energy_nj, sizeof out->energy_nj);
  out->energy_nj[POWER_SLOT_OTHER] += host_nj; /* the host link's switching */
  out->energy_total_nj = pb.total_nj + host_nj;
  out->energy_dynamic_nj = pb.dynamic_nj + host_nj;
  out->energy_static_nj = pb.static_nj;
  return 0;
}

int cost_check_gated(const graph_op *op, const cost_entry *e, const int eff[COST_NUNIT],
                     enpu_err *err) {
  const cost_tile *t = &e->tile;
  const double work[COST_NUNIT] = {t->sa_cycles, t->vu_cycles, t->sram_cycles, t->hbm_bytes,
                                   t->ici_bytes, t->sa_cycles + t->vu_cycles + t->sram_cycles};
  for (int u = 0; u < COST_NUNIT; u++)
    ENPU_RETURN_IF(work[u] > 0 && eff[u] == 0, err, ENPU_ERR_RANGE,
                   "op %d (%s): %s is clock-gated but has work", op->id, op->name,
                   u == COST_FE ? "fe" : config_component_name((config_component)u));
  return 0;
}

int cost_finish(const cost_ctx *ctx, const cost_entry *e, const cost_pipeline *pl,
                const op_timing *o, const cost_plan *prev, cost_result *out, enpu_err *err) {
  out->core_ns = o->core.time_ns;
  out->fe_stall_ns = o->core.stall_ns;
  out->unroll = o->unroll;
  out->sw_depth = o->sw_depth;
  memcpy(out->own_ns, o->own_ns, sizeof out->own_ns);
  out->cp_time_ns = e->t_nodvfs_ns + (max_own(o->own_ns) - e->own_peak_ns);
  out->time_ns = o->time_ns;
  int prev_eff[COST_NUNIT];
  if (prev) {
    cost_effective_states(prev, pl, prev_eff);
    double delay[CONFIG_NCOMP];
    rail_delays(pl, prev_eff, out->state, delay);
    for (int c = 0; c < CONFIG_NCOMP; c++)
      if (o->own_ns[c] > 0)
        out->time_ns = fmax(out->time_ns, delay[c] + o->own_ns[c] + o->tail_ns[c]);
    out->transition_ns = out->time_ns - o->time_ns;
  }

  for (int c = 0; c < CONFIG_NCOMP; c++) out->busy_ns[c] = o->own_ns[c];
  out->busy_ns[CONFIG_HBM] -= o->own_ns[CONFIG_HBM] > 0 ? ctx->chip.hbm_latency_ns : 0;
  out->busy_ns[CONFIG_ICI] = o->ici_xfer_ns; /* the links switch only while they transfer */
  out->busy_ns[COST_FE] = o->core.bundles * o->period_ns[COST_FE];
  for (int u = 0; u < COST_NUNIT; u++) {
    if (out->busy_ns[u] > out->time_ns) out->busy_ns[u] = out->time_ns;
    out->utilization[u] = out->time_ns > 0 ? out->busy_ns[u] / out->time_ns : 0;
  }
  return price(pl, &e->tile, prev ? prev_eff : NULL,
               e->tile.host_bytes * ctx->chip.host_pj_per_byte / 1e3, out, err);
}

int cost_eval_after(cost_ctx *ctx, const graph_op *op, const cost_plan *prev,
                    const cost_plan *plan, const cost_pipeline *pl, cost_result *out,
                    enpu_err *err) {
  ENPU_FORWARD(cost_check_states(&ctx->chip, plan, err));
  if (prev) ENPU_FORWARD(cost_check_states(&ctx->chip, prev, err));
  const cost_entry *e = NULL;
  ENPU_FORWARD(cost_memo_get(ctx, op, &e, err));
  memset(out, 0, sizeof *out);
  cost_effective_states(plan, pl, out->state);
  ENPU_FORWARD(cost_check_gated(op, e, out->state, err));
  op_timing o;
  op_timing_run(ctx, e, out->state, pl->domain, pl->kind == COST_PIPE_ENPU, &o);
  return cost_finish(ctx, e, pl, &o, prev, out, err);
}

int cost_eval(cost_ctx *ctx, const graph_op *op, const cost_plan *plan,
              const cost_pipeline *pl, cost_result *out, enpu_err *err) {
  return cost_eval_after(ctx, op, NULL, plan, pl, out, err);
}
