/* cost_internal.h — the parts of the cost model shared by its files and by its unit
 * test: tile-level work, the VLIW kernel representation, kernel generation and the
 * event-time executor. Not installed, not for other modules.
 *
 * Invariants: a cost_tile and the kernels built from it depend on the operator and the
 * chip only (never on a plan), so they are memoised per operator. Commands carry their
 * occupancy and latency in cycles of the unit's own clock; the executor converts them
 * with the plan's periods, so one kernel serves every plan. */
#ifndef ENPU_COST_INTERNAL_H
#define ENPU_COST_INTERNAL_H

#include <stdint.h>

#include "cost.h"

/* Model assumptions (TPU-like; the paper gives none of these numbers):
 * VU ALU pipeline and SRAM access latencies beyond a command's occupancy, in cycles of
 * the unit. The SA adds its systolic fill (sa_dim cycles) instead. */
#define COST_VU_PIPE_CYCLES 4.0
#define COST_SRAM_PIPE_CYCLES 8.0
/* DMA blocks: double-buffered, at most a quarter of SRAM each (two blocks of input and
 * the output in flight), and cut into at least COST_DMA_MIN_BLOCKS blocks of at least
 * COST_DMA_MIN_BLOCK_BYTES so that the pipeline fill is a small part of the transfer. */
#define COST_DMA_MIN_BLOCKS 64.0
#define COST_DMA_MIN_BLOCK_BYTES (256.0 * 1024.0)
/* Rows of the LHS streamed through one SA weight tile per pass (an M block). */
#define COST_SA_MBLOCK_ROWS 512
/* ICI: chips along one torus axis (TPUv5p's 4×4×4 cube); a group spans
 * ceil(log_axis(ranks)) axes and uses both directions of each. */
#define COST_TORUS_AXIS 4

#define COST_MAX_STAGES 8
#define COST_MAX_CHAIN 6
#define COST_MAX_CMDS 96
#define COST_MAX_REGS 96
#define COST_NVARIANT 9
#define COST_NGATED 3 /* the core units the kernel gates: SA, VU, SRAM */

/* One pipeline stage of an operator's core loop: `chain` dependent commands on `unit`
 * (SA, VU or SRAM) doing `cycles` of that unit's work over the whole operator. */
typedef struct {
  int unit;
  int chain;
  double cycles;
} cost_stage;

/* Tile-level work of one operator: frequency-independent amounts per component. */
typedef struct {
  double sa_cycles;   /* SA wall cycles with all arrays in parallel, padding included */
  double vu_cycles;   /* VU wall cycles, all VUs in parallel */
  double sram_cycles; /* SRAM port cycles, all ports in parallel (DMA traffic included) */
  double hbm_bytes;   /* read + written */
  double hbm_blocks;  /* double-buffered DMA blocks */
  double ici_bytes;   /* bytes each chip sends */
  double ici_links;   /* links the collective uses in parallel */
  double ici_steps;   /* latency-bound steps of the collective algorithm */
  double host_bytes;  /* received over the host link (DMA straight into HBM) */
  double sa_util;     /* useful MACs / SA capacity while busy */
  double vu_util;     /* useful lanes / VU capacity while busy */
  int64_t iters;      /* core loop iterations */
  cost_stage stage[COST_MAX_STAGES];
  int nstage;
} cost_tile;

/* One command of a VLIW bundle. src_fwd marks a source read through the VU shadow
 * register file (VU→VU through one of the first shadow_vregs registers): the consumer
 * waits for the producer's completion in the VU domain, the FE does not stall. */
typedef struct {
  int16_t dst;           /* register written, -1 for none */
  int16_t src[2];        /* registers read, -1 for none */
  uint8_t src_fwd[2];
  uint8_t unit;          /* config_component executing it */
  uint8_t bundle_start;  /* 1 on the first command of a bundle */
  uint8_t stage;         /* pipeline stage, for prologue/epilogue masks */
  uint8_t copy;          /* unroll copy, for a partial last trip */
  float occ_cycles;      /* cycles the unit is busy */
  float lat_cycles;      /* cycles from start to result (>= occ_cycles) */
} cost_cmd;

/* A loop kernel: the body runs `trips` times; with sw_depth d > 1 each stage lags the
 * one before it by d − 1 trips (body in reverse stage order), and the prologue/epilogue
 * run the body with the stages not yet / no longer active masked out. */
typedef struct {
  cost_cmd cmd[COST_MAX_CMDS];
  int ncmd;
  int nreg;  /* registers named by the commands */
  int nslot; /* register slots: nreg × max(1, sw_depth − 1) (see cost_sim.c) */
  int nstage;
  int unroll;
  int sw_depth;
  int64_t iters; /* loop iterations (a trip covers `unroll` of them) */
} cost_kernel;

/* Per-unit timing of one evaluation: clock periods, crossing delays and, with power
 * gating, the shortest gap a core unit is gated for and its wake-up latency. */
typedef struct {
  double period_ns[COST_NUNIT];
  double cross_in_ns[COST_NUNIT];  /* FE → unit: sync cycles of the unit if crossing */
  double cross_out_ns[COST_NUNIT]; /* unit → FE: sync cycles of the FE if crossing */
  int gating;                       /* 0: gate_min_ns and wake_ns are not read */
  double gate_min_ns[COST_NGATED];  /* SA, VU, SRAM: INFINITY when never gated */
  double wake_ns[COST_NGATED];
} cost_timing;

/* Outcome of executing a kernel. */
typedef struct {
  double time_ns;  /* until every result has retired to the FE */
  double stall_ns; /* FE scoreboard stalls */
  double bundles;  /* bundles issued */
  double gated_ns[COST_NGATED], gates[COST_NGATED]; /* gaps gated, per core unit */
} cost_run;

/* Scratch of the executor, sized for COST_MAX_REGS; lives in the context. */
typedef struct {
  double reg_fe[COST_MAX_REGS];  /* when the FE scoreboard sees the value */
  double reg_loc[COST_MAX_REGS]; /* when the producing unit has it (shadow forwarding) */
  double unit_free[COST_NUNIT];
  double snap[3][COST_MAX_REGS * 2 + COST_NUNIT + 5 + 2 * COST_NGATED]; /* state + counters */
  double t_issue, stall_ns, done_ns, bundles;
  double gated_ns[COST_NGATED], gates[COST_NGATED];
  uint8_t used[COST_NGATED]; /* the unit has run a command (a gap needs a work before it) */
} cost_sim;

/* Tile an operator for the chip. @return 0, or ENPU_ERR_INVALID for a bad shape. */
int cost_tile_op(const config_chip *chip, const graph_op *op, cost_tile *out, enpu_err *err);

/* Build the kernel of a tile for a schedule variant and allocate the shadow registers
 * (n_shadow of them) by dependency distance, shortest first (§3.1).
 * @return 0, or ENPU_ERR_RANGE when the variant needs more than COST_MAX_CMDS commands. */
int cost_kernel_build(const config_chip *chip, const cost_tile *tile, int unroll, int sw_depth,
                      int n_shadow, cost_kernel *out, enpu_err *err);

/* Allocate shadow registers in a hand-built or generated kernel: VU→VU source operands,
 * by increasing dependency distance, onto n_shadow registers whose live ranges do not
 * overlap. Sets src_fwd. */
void cost_kernel_alloc_shadow(cost_kernel *k, int n_shadow);

/* Execute a kernel (generated or hand-written) with the given timing, extrapolating the
 * periodic steady state. The executor is exposed for the Figure 7 test. */
void cost_kernel_run(const cost_kernel *k, const cost_timing *tm, cost_sim *sim, cost_run *out);

#endif /* ENPU_COST_INTERNAL_H */
