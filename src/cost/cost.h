/* cost.h — the operator cost model: (operator, DVFS plan, pipeline) → time, per-component
 * busy time and utilisation, and energy per component (src/README.md, "The cost model").
 *
 * Two levels (paper §3.5): the tile level turns an operator (graph.h) into work per
 * component (SA tile passes, VU element operations, SRAM traffic, HBM bytes in
 * double-buffered blocks, ICI collective steps); the instruction level turns that work
 * into a small VLIW kernel and executes it with per-domain clocks, async FIFO crossings
 * (Eq. 1), a frontend scoreboard and the VU shadow register file, trying a few schedule
 * variants (unroll, software-pipeline depth) and keeping the fastest.
 *
 * Contract:
 *  - A plan is five frequency states (SA, VU, SRAM, HBM, ICI), each 0..freq_states
 *    (0 = clock-gated). The frontend (FE) runs at max(SA, VU, SRAM). Components that share
 *    a V/f domain run at the highest state among them (FE counts with its own state).
 *  - A cost_ctx belongs to one thread. It memoises everything derived from an operator
 *    alone (tiling, kernel variants, shadow register allocation), keyed by a content hash
 *    of the operator; after an operator's first evaluation, cost_eval allocates nothing.
 *  - Without gating, raising the HBM or ICI state never increases the time, nor does a
 *    faster core kernel (the engines and the pipeline below are sums, products and maxima
 *    of monotone terms, in floating point too). The kernel's event model is monotone in
 *    the SA, VU and SRAM clocks, but its steady-state extrapolation (cost_sim.c) is not
 *    exactly: raising one of them can lengthen the extrapolated kernel (measured on
 *    Llama3-70B ops: by up to 1.4e-4 of the op time, in ~0.03 % of single-state raises).
 *    The critical-path time is monotone in every state. cost_bound_box relies on the
 *    monotone parts only.
 *  - Critical-path time (cp_time_ns): the op's NoDVFS time plus how much its slowest
 *    component's own time (SA/VU/SRAM work at their clocks, HBM latency and bytes at its
 *    bandwidth, ICI steps and bytes) grew over the all-peak plan. A component off the critical path
 *    can be slowed for free until it becomes the slowest; domain crossings, V/f
 *    transitions and the pipeline fill and drain they lengthen are not in it. This is
 *    the time the paper's budget constrains (§4.2, §4.4: slack as a performance
 *    degradation threshold, the rest reported as overhead); cp(all-peak) is exactly the
 *    NoDVFS time.
 *  - V/f transitions are per rail and inside the operator (§3.2: an asynchronous vf.set
 *    only blocks the target components): entering an op, each component whose rail
 *    changes voltage starts its own work only after its rail's delay (Table 6:
 *    4 ns / 54 mV; a shared domain moves by its highest member's voltage), and the op
 *    cannot end before delay_c + own_c + the downstream pipeline stages' last block
 *    (the DMA → core → ICI pipeline below), so it lasts max(T, that): a rail moves while
 *    its component waits for its first input, and the op is delayed only when a moving
 *    component is on the critical path. The moving rail's extra leakage is charged
 *    (power.h).
 *  - Power gating (a pipeline with `gating` on, §4.7 after ReGate): inside the op the
 *    model gates every idle interval power_gate_worth accepts and wakes the component on
 *    demand — the gaps between a core unit's commands in the executed kernel (its next
 *    command starts wake_ns later, and everything that waits for it too) and the gaps
 *    between DMA/core/ICI blocks (the stage takes wake_ns more per gated gap) — and
 *    reports each component's idle interval at the op's start and end (the whole op when
 *    it has no work), which the request level joins across ops (search.h). A component
 *    woken at the op's start (wake_mask of cost_eval_woken) starts its work wake_ns after
 *    its head interval.
 *  - Units: ns, nJ, bytes; states are integers. */
#ifndef ENPU_COST_H
#define ENPU_COST_H

#include <stdint.h>

#include "common.h"
#include "config.h"
#include "graph.h"
#include "power.h"

/* Version of the cost model's behaviour: part of every plan store op key, so changing
 * what cost_eval computes (bump this) makes the farm recompute every signature. */
#define COST_MODEL_VERSION "cost-6"

/* Units of the chip that own a clock: the five plan components (config_component order)
 * and the frontend. */
enum { COST_FE = CONFIG_NCOMP, COST_NUNIT = CONFIG_NCOMP + 1 };

typedef struct {
  int state[CONFIG_NCOMP]; /* SA, VU, SRAM, HBM, ICI; 0..chip->freq_states */
} cost_plan;

typedef enum {
  COST_PIPE_NODVFS = 0,    /* original pipeline: one core clock, sync FIFOs, no crossing */
  COST_PIPE_ENPU = 1,      /* async FIFOs between units in different domains (Eq. 1) */
  COST_PIPE_IDEAL = 2,     /* a clock per unit, crossing for free */
  COST_PIPE_PAPER_BASE = 3 /* eNPU less the crossing overhead the paper counts: loops run at
                              the crossing-free throughput, warmups still cross (cost.c,
                              paper_base); a reference for the paper's
                              overhead, not for search */
} cost_pipeline_kind;

/* How the chip runs an operator: the V/f domain of each unit (indexed by
 * config_component, then COST_FE), whether crossing a domain boundary costs time, and
 * the power model (regulator, HBM mode) that prices it. Build with the functions below. */
typedef struct {
  cost_pipeline_kind kind;
  int domain[COST_NUNIT];
  const power_model *power; /* not owned; must outlive every cost_eval using it */
  int shadow_vregs;         /* VU shadow registers: -1 the chip's, else 0..vregs (§4.5) */
  int gating;               /* power gating inside the op (the power model's parameters) */
} cost_pipeline;

/* The builders set shadow_vregs to -1 (the chip's) and gating to 0. */
/* NoDVFS: FE, SA, VU and SRAM share one clock; HBM and ICI keep their controllers'. */
void cost_pipeline_nodvfs(cost_pipeline *p, const power_model *pm);
/* eNPU with 5 domains (every unit its own, eNPU-All), 4 ({FE,SA,VU} one compute domain)
 * or 3 ({FE,SA,VU,SRAM} one core domain), §4.6.
 * @return 0, or ENPU_ERR_INVALID for another domain count. */
int cost_pipeline_enpu(cost_pipeline *p, int domains, const power_model *pm, enpu_err *err);
/* Ideal: a clock per unit and no crossing cost. */
void cost_pipeline_ideal(cost_pipeline *p, const power_model *pm);
/* `pl` with crossing a domain boundary free: the same domains (so the same clock drives
 * each unit), the ideal kind. What a plan's domain crossings cost is its time on `pl`
 * less its time on this. */
void cost_pipeline_crossing_free(const cost_pipeline *pl, cost_pipeline *out); /* out may be pl */
/* The pipeline the paper's overhead of a plan on `pl` is measured from (§4.4: "primarily
 * from V/f transition delays and domain-crossing overhead"; a plan's time less each op
 * alone on it): COST_PIPE_PAPER_BASE for an eNPU pipeline, crossing-free (ideal kind,
 * the same domains) for the others. */
void cost_pipeline_paper_base(const cost_pipeline *pl, cost_pipeline *out); /* out may be pl */

typedef struct {
  double time_ns;
  double busy_ns[COST_NUNIT];            /* SA, VU, SRAM, HBM, ICI, FE (issue cycles) */
  double utilization[COST_NUNIT];        /* busy_ns / time_ns */
  double flop_utilization[CONFIG_NCOMP]; /* useful work / capacity while busy (SA, VU) */
  double energy_nj[POWER_NSLOT];         /* sa, vu, sram, hbm, ici, fe, other */
  double energy_total_nj;
  double energy_dynamic_nj;     /* energy_total_nj split as power_breakdown does: switching */
  double energy_static_nj;      /* of the five components / their leakage plus "other" */
  double loss_nj[CONFIG_NCOMP]; /* regulator loss inside energy_nj (Figure 13) */
  /* Power gating (a gating pipeline; 0 otherwise): the intervals gated inside the op
   * (their time and count; energy_nj already saves them), each component's idle
   * interval at the op's start and end (head: the whole op for a component without
   * work) and what gating it would save per ns at the wall (and the loss in it). */
  double gated_ns[CONFIG_NCOMP];
  double gates[CONFIG_NCOMP];
  double head_idle_ns[CONFIG_NCOMP], tail_idle_ns[CONFIG_NCOMP];
  double gate_saved_w[CONFIG_NCOMP], gate_saved_loss_w[CONFIG_NCOMP];
  unsigned idle_mask;          /* components without work in the op (bit c) */
  double cp_time_ns;           /* critical-path time (see above) */
  double own_ns[CONFIG_NCOMP]; /* each component's own time (unclamped busy; SA with its
                                  systolic fill, HBM with its latency, ICI with its step
                                  latency): what cp and transitions use */
  double transition_ns;        /* how much the rail transitions lengthened the op */
  double fe_stall_ns;          /* FE waiting on its scoreboard (producers retiring to it) */
  double core_ns;              /* SA/VU/SRAM kernel alone, before overlap with DMA and ICI */
  int state[COST_NUNIT];       /* effective state of each unit after domain sharing */
  int unroll;                  /* chosen schedule variant */
  int sw_depth;
} cost_result;

typedef struct cost_ctx cost_ctx;

/* A context for `chip` (copied: the chip need not outlive the context).
 * @return 0 and *out, or ENPU_ERR_INVALID (chip parameters unusable) / ENPU_ERR_NOMEM. */
int cost_ctx_create(const config_chip *chip, cost_ctx **out, enpu_err *err);
void cost_ctx_free(cost_ctx *ctx); /* NULL is a no-op */

/* Evaluate one operator under one plan and pipeline.
 * @return 0 and *out, or ENPU_ERR_RANGE (a state outside 0..freq_states, or a unit with
 * work whose state is 0: a gated unit never finishes), ENPU_ERR_INVALID (bad shape, or
 * the power model rejects the states, e.g. non-peak under the fixed regulator),
 * ENPU_ERR_NOMEM (first evaluation of an operator only). */
int cost_eval(cost_ctx *ctx, const graph_op *op, const cost_plan *plan, const cost_pipeline *pipeline,
              cost_result *out, enpu_err *err);
/* The operator run right after an operator planned `prev` (NULL: no transition, as
 * cost_eval): every rail whose voltage changes from prev's plan to this one delays its
 * components (see above) and charges its transition energy. time_ns and energy include
 * them; cp_time_ns does not. Errors as cost_eval (prev's states are checked too). */
int cost_eval_after(cost_ctx *ctx, const graph_op *op, const cost_plan *prev, const cost_plan *plan,
                    const cost_pipeline *pipeline, cost_result *out, enpu_err *err);

/* cost_eval_after for an op where the components in wake_mask (bit c) were gated before
 * it and wake on demand: each starts its first work wake_ns (power.h) after its head
 * idle interval. */
int cost_eval_woken(cost_ctx *ctx, const graph_op *op, const cost_plan *prev, const cost_plan *plan,
                    unsigned wake_mask, const cost_pipeline *pipeline, cost_result *out, enpu_err *err);

/* What a search reads of one evaluation (cost_result's time_ns, cp_time_ns and
 * energy_total_nj). */
typedef struct {
  double time_ns;
  double cp_time_ns;
  double energy_nj;
} cost_brief;

/* Evaluate one operator under n plans (no transition before them): out[i] holds exactly
 * what cost_eval gives plans[i], bit for bit. The batch looks the operator up once and
 * runs the core kernel once per (SA, VU, SRAM) state triple, the only states it reads:
 * the context keeps the kernels of the last operator and pipeline a batch or bound met
 * (about 2 MB), so plans that share a triple — within a batch or across batches of one
 * search — share its kernel; the engines and the pricing run per plan. The pipeline's
 * shadow register count selects the kernels as in cost_eval. Under a gating pipeline
 * the kernel's gating thresholds read every rail's voltage, and a paper-base pipeline
 * runs two schedules per plan, so each plan is evaluated whole as cost_eval does (the
 * same results, no sharing).
 * @return 0, or cost_eval's error for the first plan that has one (named by its index;
 * out is then unspecified). */
int cost_eval_batch(cost_ctx *ctx, const graph_op *op, const cost_plan *plans, int n, const cost_pipeline *pipeline,
                    cost_brief *out, enpu_err *err);

/* Lower bounds over a box of plans: for every plan p with lo.state[c] <= p.state[c] <=
 * hi.state[c] (1 <= lo <= hi <= freq_states), cost_eval(p) has time_ns >= lb->time_ns,
 * cp_time_ns >= lb->cp_time_ns and energy_total_nj >= lb->energy_nj. Neither relies on
 * the op time being monotone in the core clocks (the kernel's steady-state extrapolation
 * is not exactly: see the contract above): the time bound takes the least core kernel
 * time over the box's (SA, VU, SRAM) triples (running the kernels it has not met yet)
 * through the engines at hi, which are monotone; the critical-path bound is cp at hi
 * (monotone); the energy bound prices each component at its cheapest state in the box
 * for that least time, each regulator at its best efficiency (power_energy_floor),
 * less a relative COST_BOUND_RTOL for rounding. The pipeline must keep the five
 * components and the FE in six domains (eNPU-All, ideal), so that no plan state lifts
 * another unit's, and must not gate: gating saves static energy below the floor priced
 * here and its wake-ups lengthen the time. The pipeline's shadow register count selects
 * the kernels as in cost_eval; the regulator loss is inside the energies bounded.
 * @return 0, ENPU_ERR_RANGE (states), ENPU_ERR_INVALID (shared domains, a gating
 * pipeline), ENPU_ERR_NOMEM. */
#define COST_BOUND_RTOL 1e-12
int cost_bound_box(cost_ctx *ctx, const graph_op *op, const cost_plan *lo, const cost_plan *hi,
                   const cost_pipeline *pipeline, cost_brief *lb, enpu_err *err);

/* Core kernels the batch path and the bounds have run (their cache misses) since creation. */
int64_t cost_ctx_kernel_runs(const cost_ctx *ctx);

/* Memo statistics: operators memoised and allocations made since creation (an
 * allocation happens only on an operator's first evaluation or when the memo grows). */
void cost_ctx_stats(const cost_ctx *ctx, int64_t *ops_memoised, int64_t *allocations);

/* Minimum depth of an async FIFO between domains of periods ti and to (Eq. 2):
 * ceil((5·ti + 5·to) / max(ti, to)); 10 when ti == to. Periods in any common unit. */
int cost_fifo_depth(double ti, double to);

#endif /* ENPU_COST_H */
