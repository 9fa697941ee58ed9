/* cost_tile.c — tile level: the work an operator puts on each component of the chip,
 * independent of frequencies (paper §3.5, "request-level simulation").
 *
 *  SA    weight-stationary 128×128 tiles: a pass loads one weight tile (one vreg per
 *        cycle) and streams one M block of LHS rows through it, padded to whole vregs
 *        (sublanes); a pass costs max(rows, weight load) cycles, so decode (few rows)
 *        pays the padding and the weight load. Passes spread over the arrays.
 *  VU    the graph's element operations over rows padded to sublanes and columns to
 *        lanes, all VUs in parallel (vu_count × sublanes × lanes per cycle).
 *  SRAM  operand reads and result writes of the core loop plus the DMA traffic in and
 *        out, through all ports in parallel.
 *  HBM   the graph's bytes, moved in double-buffered blocks sized to SRAM.
 *  ICI   the graph's bytes per chip over the links of the torus axes the group spans
 *        (both directions of each), with a latency per step of the ring algorithm
 *        (LogGP-style: per step latency + bytes / link bandwidth). Under the job's
 *        "ici_model": "neusim" the graph gives the links (2 per axis the group is split
 *        over) and the time is the larger of the latency and the transfer, as the
 *        authors' simulator's collectives take it.
 *  host  a host load (offloaded weights) is a DMA from the host link straight into HBM:
 *        host bytes and the HBM write, no core work.
 * The core loop (SA/VU/SRAM) is cut into iterations of one pass per SA (matmul,
 * attention) or one vreg per VU (vector operators); each stage's total work is spread
 * evenly over the iterations. */
#include <math.h>
#include <string.h>

#include "cost_internal.h"

static double ceil_ratio(double a, double b) { return ceil(a / b); }
static double round_up(double a, double m) { return ceil(a / m) * m; }

/* SA work of `count` independent products [rows, kk] @ [kk, nn] of which a fraction
 * `frac` of the tiles is computed (causal masking skips the rest). */
typedef struct {
  double passes, cycles, macs_capacity;
} sa_work;

static sa_work sa_matmul(const config_chip *chip, double count, double rows, double kk, double nn, double frac,
                         int dtype) {
  sa_work w;
  double dim = chip->sa_dim;
  double wload = fmax(1, dim * dim * dtype / chip->vreg_bytes);
  double mblocks = ceil_ratio(rows, COST_SA_MBLOCK_ROWS);
  double rows_blk = round_up(ceil_ratio(rows, mblocks), chip->vu_sublanes);
  w.passes = ceil(count * ceil_ratio(kk, dim) * ceil_ratio(nn, dim) * mblocks * frac);
  w.cycles = ceil_ratio(w.passes, chip->sa_count) * fmax(rows_blk, wload);
  w.macs_capacity = w.cycles * chip->sa_count * dim * dim;
  return w;
}

static void add_stage(cost_tile *t, int unit, int chain, double cycles) {
  if (cycles <= 0) return;
  t->stage[t->nstage++] = (cost_stage){unit, chain, cycles, 0};
}

/* A VU stage whose steps `carried` (bit i: step i) are reductions' accumulators. */
static void add_reduction_stage(cost_tile *t, int chain, double cycles, unsigned carried) {
  add_stage(t, CONFIG_VU, chain, cycles);
  if (cycles > 0) t->stage[t->nstage - 1].carried = carried;
}

/* The accumulators among a vector operator's chain steps (vector_chain's order): the
 * norm's row sum, the router's max and sum. */
static unsigned vector_carried(const graph_op *op) {
  switch (op->kind) {
  case GRAPH_NORM: return 1u << 1;
  case GRAPH_ROUTER: return 1u << 0 | 1u << 3;
  default: return 0;
  }
}

/* VU chain length of the vector operators: the dependent operations per element. */
static int vector_chain(const graph_op *op) {
  switch (op->kind) {
  case GRAPH_NORM: return 4;   /* square, row sum, rsqrt, scale (γ fused) */
  case GRAPH_ROPE: return 3;   /* two products and a sum per pair */
  case GRAPH_ROUTER: return 6; /* max, sub, exp, sum, divide, top-k select */
  default: {
    double c = round(op->shape.vector_ops_per_elem);
    return (int)fmin(COST_MAX_CHAIN, fmax(1, c));
  }
  }
}

/* An op the model can price: a known kind, no negative dimension or work, host bytes
 * only on a chip with a host link. */
static int check_op(const config_chip *chip, const graph_op *op, enpu_err *err) {
  const graph_shape *sh = &op->shape;
  ENPU_RETURN_IF(op->kind < 0 || op->kind >= GRAPH_NKIND, err, ENPU_ERR_INVALID, "op %d: unknown kind %d", op->id,
                 (int)op->kind);
  ENPU_RETURN_IF(op->host_bytes > 0 && !(chip->host_gbps > 0), err, ENPU_ERR_INVALID,
                 "op %d (%s): %.0f bytes over the host link of a chip without one (no "
                 "\"host\" in %s)",
                 op->id, op->name, op->host_bytes, chip->path);
  ENPU_RETURN_IF(sh->b < 0 || sh->m < 0 || sh->k < 0 || sh->n < 0 || sh->v < 0, err, ENPU_ERR_INVALID,
                 "op %d (%s): negative dimension", op->id, op->name);
  ENPU_RETURN_IF(op->flops < 0 || op->vector_ops < 0 || op->hbm_read_bytes < 0 || op->hbm_write_bytes < 0 ||
                     op->ici_bytes < 0 || op->host_bytes < 0,
                 err, ENPU_ERR_INVALID, "op %d (%s): negative work", op->id, op->name);
  return 0;
}

/* One operator's geometry and what its core loop moves, filled step by step. */
typedef struct {
  const config_chip *chip;
  const graph_op *op;
  double b, m, k, n, v;    /* the shape (b at least 1) */
  int dtype;               /* bytes per element */
  double sram_bw;          /* bytes per cycle over all ports */
  double elems;            /* output rows × columns */
  double sram_rd, sram_wr; /* bytes the core loop reads / writes (DMA side included) */
  double sa_passes, macs_capacity;
} tile_work;

static tile_work tile_work_of(const config_chip *chip, const graph_op *op) {
  const graph_shape *sh = &op->shape;
  return (tile_work){
      .chip = chip,
      .op = op,
      .b = (double)(sh->b > 0 ? sh->b : 1),
      .m = (double)sh->m,
      .k = (double)sh->k,
      .n = (double)sh->n,
      .v = (double)sh->v,
      .dtype = sh->dtype_bytes > 0 ? sh->dtype_bytes : 2,
      .sram_bw = (double)chip->sram_ports * chip->sram_port_bytes_per_cycle,
      .sram_rd = op->hbm_write_bytes, /* DMA side */
      .sram_wr = op->hbm_read_bytes,
  };
}

/* VU: element operations over the padded rows × columns of the output. */
static void tile_vu(tile_work *w, cost_tile *t) {
  const config_chip *chip = w->chip;
  const graph_op *op = w->op;
  double lanes = (double)chip->vu_count * chip->vu_sublanes * chip->vu_lanes;
  int collective = op->kind >= GRAPH_ALLREDUCE;
  double rows = w->m * (op->kind == GRAPH_ATTENTION ? w->b * fmax(1, op->shape.kv_group) : w->b);
  w->elems = rows * w->n;
  double elems_pad = round_up(rows, chip->vu_sublanes) * round_up(w->n, chip->vu_lanes);
  double pad = w->elems > 0 && !collective ? elems_pad / w->elems : 1; /* payload is flat */
  t->vu_cycles = ceil(op->vector_ops * pad / lanes);
  t->vu_util = t->vu_cycles > 0 ? fmin(1, op->vector_ops / (t->vu_cycles * lanes)) : 0;
}

static void tile_matmul(tile_work *w, cost_tile *t) {
  const graph_shape *sh = &w->op->shape;
  double b = w->b, m = w->m, k = w->k, n = w->n;
  sa_work sa = sa_matmul(w->chip, b, m, k, n, 1, w->dtype);
  t->sa_cycles = sa.cycles;
  w->sa_passes = sa.passes;
  w->macs_capacity = sa.macs_capacity;
  w->sram_rd += b * m * k * w->dtype * ceil_ratio(n, w->chip->sa_dim) /* LHS once per N tile */
                + (sh->rhs_is_weight ? 1 : b) * k * n * w->dtype;
  w->sram_wr += b * m * n * w->dtype;
  add_stage(t, CONFIG_SRAM, 1, w->sram_rd / w->sram_bw);
  add_stage(t, CONFIG_SA, 1, t->sa_cycles);
  add_stage(t, CONFIG_VU, 1, t->vu_cycles);
  add_stage(t, CONFIG_SRAM, 1, w->sram_wr / w->sram_bw);
}

static void tile_attention(tile_work *w, cost_tile *t) {
  const graph_shape *sh = &w->op->shape;
  double b = w->b, m = w->m, k = w->k, n = w->n, v = w->v;
  double qrows = m * fmax(1, sh->kv_group);
  double frac = sh->causal && m > 1 ? 0.5 * (1 + 1 / ceil_ratio(n, w->chip->sa_dim)) : 1;
  sa_work qk = sa_matmul(w->chip, b, qrows, k, n, frac, w->dtype);
  sa_work pv = sa_matmul(w->chip, b, qrows, n, v, frac, w->dtype);
  t->sa_cycles = qk.cycles + pv.cycles;
  w->sa_passes = qk.passes + pv.passes;
  w->macs_capacity = qk.macs_capacity + pv.macs_capacity;
  double qblocks = ceil_ratio(qrows, COST_SA_MBLOCK_ROWS);
  w->sram_rd += b * (qrows * k + qblocks * n * (k + v)) * w->dtype;
  w->sram_wr += b * qrows * v * w->dtype;
  add_stage(t, CONFIG_SRAM, 1, w->sram_rd / w->sram_bw);
  add_stage(t, CONFIG_SA, 1, qk.cycles);
  /* max, subtract, exp, row sum: the running max and sum carried over the KV blocks */
  add_reduction_stage(t, 4, 0.8 * t->vu_cycles, 1u << 0 | 1u << 3);
  add_stage(t, CONFIG_SA, 1, pv.cycles);
  add_reduction_stage(t, 1, 0.2 * t->vu_cycles, 1u << 0); /* rescale the running output */
  add_stage(t, CONFIG_SRAM, 1, w->sram_wr / w->sram_bw);
}

static void tile_collective(tile_work *w, cost_tile *t) {
  const graph_op *op = w->op;
  double p = op->shape.ranks > 1 ? op->shape.ranks : 1;
  double axes = p > 1 ? fmin(3, ceil(log(p) / log(COST_TORUS_AXIS) - 1e-9)) : 0;
  t->ici_links = fmax(1, fmin(w->chip->ici_links, 2 * axes));
  if (op->shape.ici_links > 0) t->ici_links = op->shape.ici_links; /* "ici_model": "neusim" (graph.h) */
  t->ici_overlap = op->shape.ici_overlap;
  t->ici_steps = (op->kind == GRAPH_ALLREDUCE ? 2 : 1) * (p - 1);
  t->ici_bytes = p > 1 ? op->ici_bytes : 0;
  w->sram_rd += t->ici_bytes;
  w->sram_wr += t->ici_bytes;
  add_stage(t, CONFIG_SRAM, 1, w->sram_rd / w->sram_bw);
  add_stage(t, CONFIG_VU, 1, t->vu_cycles);
  add_stage(t, CONFIG_SRAM, 1, w->sram_wr / w->sram_bw);
}

/* Vector operators and the embedding gather. */
static void tile_vector(tile_work *w, cost_tile *t) {
  const graph_op *op = w->op;
  double bytes = w->elems * w->dtype;
  int elementwise = op->kind == GRAPH_ELEMENTWISE;
  w->sram_rd += bytes * (elementwise ? fmax(1, op->shape.in_tensors) : 1);
  w->sram_wr += bytes * (elementwise ? fmax(1, op->shape.out_tensors) : 1);
  add_stage(t, CONFIG_SRAM, 1, w->sram_rd / w->sram_bw);
  add_reduction_stage(t, vector_chain(op), t->vu_cycles, vector_carried(op));
  add_stage(t, CONFIG_SRAM, 1, w->sram_wr / w->sram_bw);
}

/* SRAM cycles, SA utilisation, HBM blocks and the core loop's iterations: one pass per
 * SA, else one vreg per VU per chain command (or one SRAM cycle of all ports). */
static void tile_totals(const tile_work *w, cost_tile *t) {
  const config_chip *chip = w->chip;
  t->sram_cycles = (w->sram_rd + w->sram_wr) / w->sram_bw;
  t->sa_util = w->macs_capacity > 0 ? fmin(1, w->op->flops / 2 / w->macs_capacity) : 0;
  if (t->hbm_bytes > 0)
    t->hbm_blocks = fmax(ceil_ratio(t->hbm_bytes, chip->sram_bytes / 4),
                         fmin(COST_DMA_MIN_BLOCKS, ceil_ratio(t->hbm_bytes, COST_DMA_MIN_BLOCK_BYTES)));
  int vu_chain = 0;
  for (int s = 0; s < t->nstage; s++)
    if (t->stage[s].unit == CONFIG_VU) vu_chain += t->stage[s].chain;
  if (w->sa_passes > 0) t->iters = (int64_t)ceil_ratio(w->sa_passes, chip->sa_count);
  else if (vu_chain > 0) t->iters = (int64_t)ceil_ratio(t->vu_cycles, vu_chain);
  else t->iters = (int64_t)ceil(t->sram_cycles);
  if (t->iters < 1) t->iters = 1;
}

int cost_tile_op(const config_chip *chip, const graph_op *op, cost_tile *t, enpu_err *err) {
  ENPU_FORWARD(check_op(chip, op, err));
  memset(t, 0, sizeof *t);
  tile_work w = tile_work_of(chip, op);
  tile_vu(&w, t);
  t->hbm_bytes = op->hbm_read_bytes + op->hbm_write_bytes;
  switch (op->kind) {
  case GRAPH_MATMUL: tile_matmul(&w, t); break;
  case GRAPH_ATTENTION: tile_attention(&w, t); break;
  case GRAPH_HOST_LOAD:
    t->host_bytes = op->host_bytes;
    w.sram_rd = w.sram_wr = 0; /* the DMA bypasses SRAM */
    break;
  case GRAPH_ALLREDUCE:
  case GRAPH_ALLGATHER:
  case GRAPH_REDUCE_SCATTER:
  case GRAPH_ALLTOALL: tile_collective(&w, t); break;
  default: tile_vector(&w, t); break;
  }
  tile_totals(&w, t);
  return 0;
}
