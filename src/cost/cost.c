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
 * charged to the "other" slot as switching energy. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "cost_internal.h"

/* Schedule variants: unroll 1/2/4 × software-pipeline depth 1/2/3. Depth 3 (each stage
 * two trips behind the one before) is what hides a long producer latency such as the SA
 * fill behind the next pass. */
static const int variant_unroll[COST_NVARIANT] = {1, 2, 4, 1, 2, 4, 1, 2, 4};
static const int variant_depth[COST_NVARIANT] = {1, 1, 1, 2, 2, 2, 3, 3, 3};

typedef struct {
  uint64_t key;
  cost_tile tile;
  cost_kernel kernel[COST_NVARIANT];
  uint8_t kernel_ok[COST_NVARIANT];
} cost_entry;

struct cost_ctx {
  config_chip chip; /* copy; its table pointers are not used */
  cost_entry **entries;
  size_t nentries, cap_entries;
  int32_t *index; /* entry number + 1, 0 = empty */
  size_t cap_index;
  int64_t allocations;
  cost_sim sim;
};

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
  *out = ctx;
  return 0;
}

void cost_ctx_free(cost_ctx *ctx) {
  if (!ctx) return;
  for (size_t i = 0; i < ctx->nentries; i++) free(ctx->entries[i]);
  free(ctx->entries);
  free(ctx->index);
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

static int memo_get(cost_ctx *ctx, const graph_op *op, const cost_entry **out, enpu_err *err) {
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
static void effective_states(const cost_plan *plan, const cost_pipeline *pl, int eff[]) {
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

int cost_eval(cost_ctx *ctx, const graph_op *op, const cost_plan *plan,
              const cost_pipeline *pl, cost_result *out, enpu_err *err) {
  const config_chip *chip = &ctx->chip;
  for (int c = 0; c < CONFIG_NCOMP; c++)
    ENPU_RETURN_IF(plan->state[c] < 0 || plan->state[c] > chip->freq_states, err,
                   ENPU_ERR_RANGE, "plan state of %s is %d: expected 0..%d",
                   config_component_name((config_component)c), plan->state[c],
                   chip->freq_states);
  const cost_entry *e = NULL;
  ENPU_FORWARD(memo_get(ctx, op, &e, err));
  const cost_tile *t = &e->tile;

  memset(out, 0, sizeof *out);
  effective_states(plan, pl, out->state);
  const double work[COST_NUNIT] = {t->sa_cycles, t->vu_cycles, t->sram_cycles, t->hbm_bytes,
                                   t->ici_bytes, t->sa_cycles + t->vu_cycles + t->sram_cycles};
  for (int u = 0; u < COST_NUNIT; u++)
    ENPU_RETURN_IF(work[u] > 0 && out->state[u] == 0, err, ENPU_ERR_RANGE,
                   "op %d (%s): %s is clock-gated but has work", op->id, op->name,
                   u == COST_FE ? "fe" : config_component_name((config_component)u));

  /* Clocks and crossings. HBM and ICI have no core commands: only their bandwidth. */
  cost_timing tm;
  int crossing = pl->kind == COST_PIPE_ENPU;
  double s = chip->fifo_sync_cycles;
  for (int u = 0; u < COST_NUNIT; u++)
    tm.period_ns[u] = out->state[u] ? 1.0 / config_state_ghz(chip, out->state[u]) : 0;
  for (int u = 0; u < COST_NUNIT; u++) {
    int cross = crossing && pl->domain[u] != pl->domain[COST_FE];
    tm.cross_in_ns[u] = cross ? s * tm.period_ns[u] : 0;
    tm.cross_out_ns[u] = cross ? s * tm.period_ns[COST_FE] : 0;
  }

  /* Core kernel: the fastest schedule variant for this plan (§2.4, §3.3). */
  cost_run best = {INFINITY, 0, 0};
  if (t->nstage > 0) {
    for (int v = 0; v < COST_NVARIANT; v++) {
      if (!e->kernel_ok[v]) continue;
      cost_run r;
      cost_kernel_run(&e->kernel[v], &tm, &ctx->sim, &r);
      if (r.time_ns < best.time_ns) {
        best = r;
        out->unroll = variant_unroll[v];
        out->sw_depth = variant_depth[v];
      }
    }
  } else {
    best.time_ns = 0;
  }
  out->core_ns = best.time_ns;
  out->fe_stall_ns = best.stall_ns;

  /* Engines: bandwidth = state / states × peak. */
  double frac_hbm = (double)out->state[CONFIG_HBM] / chip->freq_states;
  double frac_ici = (double)out->state[CONFIG_ICI] / chip->freq_states;
  double hbm_ns = t->hbm_bytes > 0 ? t->hbm_bytes / (chip->hbm_gbps * frac_hbm) : 0;
  double ici_xfer_ns =
      t->ici_bytes > 0 ? t->ici_bytes / (t->ici_links * chip->ici_link_gbps * frac_ici) : 0;
  double ici_ns = ici_xfer_ns + t->ici_steps * chip->ici_latency_ns;
  double host_ns = t->host_bytes > 0 ? t->host_bytes / chip->host_gbps : 0;
  double blocks = fmax(1, fmax(t->hbm_blocks, t->ici_steps));
  double lead_ns = (t->hbm_bytes > 0 ? chip->hbm_latency_ns : 0) +
                   (t->host_bytes > 0 ? chip->host_latency_ns : 0);
  double slowest = fmax(fmax(hbm_ns, host_ns), fmax(best.time_ns, ici_ns));
  out->time_ns = lead_ns + (hbm_ns + best.time_ns + ici_ns + host_ns) / blocks +
                 (blocks - 1) * slowest / blocks;

  out->busy_ns[CONFIG_SA] = t->sa_cycles * tm.period_ns[CONFIG_SA];
  out->busy_ns[CONFIG_VU] = t->vu_cycles * tm.period_ns[CONFIG_VU];
  out->busy_ns[CONFIG_SRAM] = t->sram_cycles * tm.period_ns[CONFIG_SRAM];
  out->busy_ns[CONFIG_HBM] = hbm_ns;
  out->busy_ns[CONFIG_ICI] = ici_xfer_ns;
  out->busy_ns[COST_FE] = best.bundles * tm.period_ns[COST_FE];
  for (int u = 0; u < COST_NUNIT; u++) {
    if (out->busy_ns[u] > out->time_ns) out->busy_ns[u] = out->time_ns;
    out->utilization[u] = out->time_ns > 0 ? out->busy_ns[u] / out->time_ns : 0;
  }
  for (int c = 0; c < CONFIG_NCOMP; c++) out->flop_utilization[c] = 1;
  out->flop_utilization[CONFIG_SA] = t->sa_util;
  out->flop_utilization[CONFIG_VU] = t->vu_util;

  power_breakdown pb;
  ENPU_FORWARD(power_op_energy(pl->power, out->state, out->busy_ns, out->flop_utilization,
                               out->time_ns, &pb, err));
  const double host_nj = t->host_bytes * chip->host_pj_per_byte / 1e3; /* link switching */
  memcpy(out->energy_nj, pb.energy_nj, sizeof out->energy_nj);
  out->energy_nj[POWER_SLOT_OTHER] += host_nj;
  out->energy_total_nj = pb.total_nj + host_nj;
  out->energy_dynamic_nj = pb.dynamic_nj + host_nj;
  out->energy_static_nj = pb.static_nj;
  return 0;
}
