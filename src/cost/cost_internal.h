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
 * (SA, VU or SRAM) doing `cycles` of that unit's work over the whole operator. Bit i of
 * `carried` marks step i as a reduction's accumulator (a row max or sum, flash
 * attention's running output): its command also reads its own result of the previous
 * trip, a loop-carried VU→VU dependency (§2.4: "elementwise or reduction operators on
 * the VU"). */
typedef struct {
  int unit;
  int chain;
  double cycles;
  unsigned carried;
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
  int ici_overlap;    /* 1: steps' latency overlaps the transfer (max), 0: adds to it */
  double host_bytes;  /* received over the host link (DMA straight into HBM) */
  double sa_util;     /* useful MACs / SA capacity while busy */
  double vu_util;     /* useful lanes / VU capacity while busy */
  int64_t iters;      /* core loop iterations */
  cost_stage stage[COST_MAX_STAGES];
  int nstage;
} cost_tile;

/* One command of a VLIW bundle. src_fwd marks a source read through the VU shadow
 * register file (VU→VU through one of the first shadow_vregs registers): the consumer
 * waits for the producer's completion in the VU domain, the FE does not stall.
 * src_prev marks a loop-carried source: the value the register held for the previous
 * trip (none in the first trip). */
typedef struct {
  int16_t dst;    /* register written, -1 for none */
  int16_t src[2]; /* registers read, -1 for none */
  uint8_t src_fwd[2];
  uint8_t src_prev[2];
  uint8_t unit;         /* config_component executing it */
  uint8_t bundle_start; /* 1 on the first command of a bundle */
  uint8_t stage;        /* pipeline stage, for prologue/epilogue masks */
  uint8_t copy;         /* unroll copy, for a partial last trip */
  float occ_cycles;     /* cycles the unit is busy */
  float lat_cycles;     /* cycles from start to result (>= occ_cycles) */
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
  int gating;                      /* 0: gate_min_ns and wake_ns are not read */
  double gate_min_ns[COST_NGATED]; /* SA, VU, SRAM: INFINITY when never gated */
  double wake_ns[COST_NGATED];
} cost_timing;

/* Outcome of executing a kernel. */
typedef struct {
  double time_ns;                                   /* until every result has retired to the FE */
  double stall_ns;                                  /* FE scoreboard stalls */
  double bundles;                                   /* bundles issued */
  double gated_ns[COST_NGATED], gates[COST_NGATED]; /* gaps gated, per core unit */
  double period_ns; /* steady-state time per trip; NAN if the loop is too short to settle */
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

/* The SA's systolic fill in cycles, counted in its own time (cost.c). */
double cost_sa_fill_cycles(const config_chip *chip, const cost_tile *t);

/* Tile an operator for the chip. @return 0, or ENPU_ERR_INVALID for a bad shape. */
int cost_tile_op(const config_chip *chip, const graph_op *op, cost_tile *out, enpu_err *err);

/* Build the kernel of a tile for a schedule variant and allocate the shadow registers
 * (n_shadow of them) by dependency distance, shortest first (§3.1).
 * @return 0, or ENPU_ERR_RANGE when the variant needs more than COST_MAX_CMDS commands. */
int cost_kernel_build(const config_chip *chip, const cost_tile *tile, int unroll, int sw_depth, int n_shadow,
                      cost_kernel *out, enpu_err *err);

/* Allocate shadow registers in a hand-built or generated kernel: VU→VU source operands,
 * by increasing dependency distance, onto n_shadow registers whose live ranges do not
 * overlap. Sets src_fwd. */
void cost_kernel_alloc_shadow(cost_kernel *k, int n_shadow);

/* Execute a kernel (generated or hand-written) with the given timing, extrapolating the
 * periodic steady state. The executor is exposed for the Figure 7 test. */
void cost_kernel_run(const cost_kernel *k, const cost_timing *tm, cost_sim *sim, cost_run *out);

/* The kernel's steady-state time per iteration (a trip over its unroll) with the given
 * timing, whatever its own trip count: it runs the body until the period shows. */
double cost_kernel_period_ns(const cost_kernel *k, const cost_timing *tm, cost_sim *sim);

/* ---------------------------------------------------------------------------------
 * The memo, one evaluation's timing, the context (shared by cost.c and cost_batch.c) */

typedef struct {
  uint64_t key;
  int shadow; /* shadow registers the kernels were allocated with */
  cost_tile tile;
  cost_kernel kernel[COST_NVARIANT];
  uint8_t kernel_ok[COST_NVARIANT];
  double t_nodvfs_ns; /* all-peak, one core clock, no crossing */
  double own_peak_ns; /* largest component own time at peak */
} cost_entry;

/* Timing of one plan: the core kernel's fastest variant, the engines, their pipeline.
 * With gating, gated_ns/gates hold the intervals gated inside the op (kernel gaps and
 * block gaps) and head_ns the idle before each component's first work. */
typedef struct {
  double time_ns;
  double own_ns[CONFIG_NCOMP];
  double ici_xfer_ns;
  double tail_ns[CONFIG_NCOMP]; /* after a component's last work: its pipeline stages
                                   downstream, for their last block */
  double head_ns[CONFIG_NCOMP];
  double gated_ns[CONFIG_NCOMP], gates[CONFIG_NCOMP];
  cost_run core;
  int variant; /* the core's schedule variant (index into cost_entry.kernel), -1: none */
  int unroll, sw_depth;
  double period_ns[COST_NUNIT];
} op_timing;

/* Power gating's thresholds at one plan's states (a gating pipeline): the shortest gap
 * each component is gated for (INFINITY: never) and its wake-up latency. */
typedef struct {
  double min_ns[CONFIG_NCOMP];
  double wake_ns[CONFIG_NCOMP];
} cost_gate_limits;

/* The batch path's core cache (cost_batch.c): the core kernel of one operator under one
 * pipeline without gating for each (SA, VU, SRAM) state triple it has met, the only
 * states the kernel then reads. A slot is valid when its generation is the cache's; a
 * new operator (or shadow register count: another memo entry) or pipeline starts a new
 * generation. A slot keeps what cost_run holds without gating (its gated gaps are 0). */
typedef struct {
  uint32_t gen;
  int32_t key; /* SA, VU, SRAM and FE states */
  double time_ns, stall_ns, bundles;
  int8_t unroll, sw_depth;
} cost_core_slot;

/* The least core time over a box of triples (SA, VU, SRAM lo, then hi), remembered. */
enum { COST_RANGE_MEMO = 16 };
typedef struct {
  uint32_t gen;
  int box[6];
  double min_ns;
} cost_core_range;

typedef struct {
  const cost_entry *entry; /* the operator the slots belong to */
  int domain[COST_NUNIT];
  int crossing;
  uint32_t gen;
  cost_core_slot *slots;
  size_t cap;          /* power of two */
  int64_t kernel_runs; /* core kernels run by the batch path (cache misses) */
  cost_core_range range[COST_RANGE_MEMO];
  int range_next;
} cost_core_cache;

struct cost_ctx {
  config_chip chip; /* copy; its table pointers are not used */
  cost_entry **entries;
  size_t nentries, cap_entries;
  int32_t *index; /* entry number + 1, 0 = empty */
  size_t cap_index;
  int64_t allocations;
  cost_sim sim;
  cost_core_cache cores;
};

/* The memo entry of an operator with kernels for `shadow` registers, built on its first
 * use (cost.c); cost_pipeline_shadow gives a pipeline's count. */
int cost_memo_get(cost_ctx *ctx, const graph_op *op, int shadow, const cost_entry **out, enpu_err *err);
/* The shadow register count of a pipeline (the chip's when it says -1). */
int cost_pipeline_shadow(const cost_ctx *ctx, const cost_pipeline *pl);
int cost_check_states(const config_chip *chip, const cost_plan *plan, enpu_err *err);
/* Effective state of every unit: FE at max(SA, VU, SRAM); a domain at its highest member. */
void cost_effective_states(const cost_plan *plan, const cost_pipeline *pl, int eff[COST_NUNIT]);
/* ENPU_ERR_RANGE when a unit with work is clock-gated (state 0). */
int cost_check_gated(const graph_op *op, const cost_entry *e, const int eff[COST_NUNIT], enpu_err *err);
/* Clock period of every unit at its effective state (0 when gated). */
void cost_periods(const config_chip *chip, const int eff[COST_NUNIT], double period_ns[COST_NUNIT]);
/* The two halves of one plan's timing: the core kernel (periods, fastest variant, the
 * gaps gated inside it), then the engines and the pipeline around it (every other field
 * of o). gate: the thresholds of a gating pipeline at eff, NULL without gating. */
void cost_timing_core(const cost_ctx *ctx, const cost_entry *e, const int eff[COST_NUNIT],
                      const int domain[COST_NUNIT], int crossing, const cost_gate_limits *gate, cost_sim *sim,
                      op_timing *o);
void cost_timing_engines(const cost_ctx *ctx, const cost_entry *e, const int eff[COST_NUNIT],
                         const cost_gate_limits *gate, op_timing *o);
/* Fill the rest of a result whose state[] is set (memset first) from its timing: times,
 * busy, utilisation, transitions after `prev` (NULL: none) and wake-ups of wake_mask,
 * gating outputs (a gating pipeline), energy. */
int cost_finish(const cost_ctx *ctx, const cost_entry *e, const cost_pipeline *pl, const op_timing *o,
                const cost_plan *prev, unsigned wake_mask, cost_result *out, enpu_err *err);
/* Free the batch path's cache (cost_ctx_free). */
void cost_core_cache_free(cost_core_cache *c);

#endif /* ENPU_COST_INTERNAL_H */
