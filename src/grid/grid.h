/* grid.h — the bucket grid of a job (paper §3.4): expansion of
 * each phase's batch and sequence axes, the per-chip HBM capacity check of every
 * (batch, seq) bucket, totals, and padding of a runtime (batch, seq) to its bucket.
 *
 * A bucket is one compiled graph of one model instance (one DP replica): prefill
 * buckets cover `batch` prompts of `seq` input tokens; decode buckets cover one
 * iteration of `batch` requests whose total (KV) length is `seq`.
 *
 * Invariants of a grid: every enabled phase has strictly increasing, positive batch and
 * seq axes; its buckets are the full cross product, stored batch-major
 * (index = batch_index * seq_count + seq_index); the grid is immutable after
 * grid_create and is not tied to the job's lifetime (it copies what it needs). */
#ifndef ENPU_GRID_H
#define ENPU_GRID_H

#include <stddef.h>
#include <stdint.h>

#include "common.h"
#include "config.h"

/* ---------------------------------------------------------------------------------
 * Axis expansion (the §3.4 rule)
 *
 * batch: powers of two 1, 2, 4, 8, 16, then multiples of 16 (32, 48, ...) up to max.
 *        max 256 gives 20 sizes.
 * seq:   128-token steps up to 1024 (128, 256, ..., 1024), then the step doubles at
 *        each following power of two: 256-token steps up to 2048, 512-token steps up
 *        to 4096, 1024-token steps up to 8192, ... up to max. Every octave above 1024
 *        adds 4 buckets: 131072 / 524288 / 1048576 give 36 / 44 / 48 lengths.
 * The rule's values are kept while <= max; when max itself is not a rule value it is
 * appended as the last value, so every length (size) up to max has a covering bucket.
 * An explicit list (config_axis.rule == false) is used as given (it must be strictly
 * increasing and positive). */

typedef enum { GRID_AXIS_BATCH = 0, GRID_AXIS_SEQ = 1 } grid_axis_kind;

/* Expand `axis` into a new heap array *values (free() it) of *count entries.
 * @return 0, or ENPU_ERR_INVALID (max < 1, an explicit list that is empty, not
 *         positive or not strictly increasing) or ENPU_ERR_NOMEM; then *values is NULL. */
int grid_axis_expand(const config_axis *axis, grid_axis_kind kind, int **values, int *count, enpu_err *err);

/* ---------------------------------------------------------------------------------
 * Capacity check, per chip of the phase's node (all figures in bytes)
 *
 * With P = job->phase[phase].parallel, d = model dtype_bytes, N = params_total,
 * R = params_routed (routed-expert weights, 0 for dense models), and
 * r = ceil(batch / ep) requests per chip: the EP groups split the requests for the
 * non-expert layers (attention is data-parallel across EP groups, as in the graph
 * module) and the all-to-all dispatch brings every group's tokens to the experts.
 *
 *   weights     = (N - R)·d / (tp·pp) + R·d / (ep·tp·pp)
 *   kv          = r · config_model_kv_bytes(seq) / (pp · kv_shard)   (seq · kv_bytes_per_token
 *                 unless sliding-window layers cap theirs at the window)
 *                 kv_shard = min(tp, kv_heads) for GQA (K/V heads shard over TP and
 *                 are replicated beyond kv_heads); 1 for MLA (the compressed latent is
 *                 replicated on every TP rank). Prefill writes the KV of all `seq`
 *                 input tokens; decode holds the KV of `seq` total tokens.
 *   activations = t · hidden · d · GRID_ACT_HIDDEN_BUFFERS + largest intermediate,
 *                 t = tokens per chip = r·seq (prefill) or r (decode).
 *                 Inference keeps no activations across layers, so the working set
 *                 is one layer's: the hidden-wide buffers (residual stream, normed
 *                 input, block output; replicated across TP ranks) plus the widest
 *                 per-chip intermediate, the largest of
 *                   - attention projections: t · q_out_width / tp · d, with
 *                     GQA q_out_width = (heads + 2·kv_heads)·head_dim,
 *                     MLA q_out_width = heads·(qk_nope + qk_rope + v_head_dim)
 *                     (flash attention: no seq×seq tensor),
 *                   - dense FFN (gate + up): 2 · t · ffn_intermediate / tp · d,
 *                   - routed experts: s · (2·hidden + 2·expert_intermediate / tp) · d,
 *                     the dispatched tokens and their outputs awaiting the combine
 *                     (hidden-wide, not TP-sharded) plus gate + up, for s = the token
 *                     rows through this chip's experts (grid_moe_load.token_slots),
 *                   - shared experts (gate + up): 2 · t · shared · expert_inter / tp · d,
 *                   - logits of the last token of each request in fp32:
 *                     r · vocab / tp · 4.
 *   fits        ⇔ weights + kv + activations <= hbm_bytes (job->chip.hbm_bytes)
 * pp divides weights and KV (each stage holds its layers); activations are per stage
 * and not divided.
 *
 * What a bucket that does not fit becomes depends on the job's "capacity":
 *   enforce  infeasible (recorded, never compiled);
 *   ignore   compiled as if it fitted (the paper's simulator checks nothing); the
 *            store marks every plan of the job and notes the overflow on the bucket;
 *   offload  the weights that do not fit stream from host memory every forward pass
 *            over the chip's host link. They are spread evenly over the L streaming
 *            layers of the stage — the MoE layers' routed experts for an MoE model,
 *            every layer's weights for a dense one — each of which lands its share s in
 *            one HBM buffer of s bytes reused by every layer. With
 *              over = weights + kv + activations − hbm_bytes > 0:
 *              s = over / (L − 1),  offload = L · s,
 *            so the weights kept resident, weights − offload, are exactly what fits
 *            beside the KV cache, the activations and the buffer:
 *              hbm_bytes − kv − activations − s.
 *            Feasible ⇔ L ≥ 2 and s ≤ one layer's streamable weights on the chip
 *            (otherwise even streaming every layer cannot make room: infeasible). */

#define GRID_ACT_HIDDEN_BUFFERS 3

typedef struct {
  double weights_bytes;
  double kv_bytes;
  double activation_bytes;
  double hbm_bytes;           /* the chip's HBM capacity */
  config_capacity capacity;   /* the job's policy for a bucket that does not fit */
  double offload_bytes;       /* offload: weight bytes streamed per forward pass, else 0 */
  double offload_layer_bytes; /* s: streamed by each streaming layer */
  int64_t offload_layers;     /* L */
} grid_memory;

/* Per-chip memory of bucket (batch, seq) of `phase` in `job` (uses job->model,
 * job->chip.hbm_bytes, job->phase[phase].parallel, the job's MoE options and capacity).
 * @return 0, or ENPU_ERR_INVALID (batch or seq < 1, a parallel degree < 1). */
int grid_memory_per_chip(const config_job *job, config_phase phase, int batch, int seq, grid_memory *out,
                         enpu_err *err);

/* weights + kv + activations, in bytes (what the bucket needs with every weight
 * resident, whatever the capacity policy). */
double grid_memory_used_bytes(const grid_memory *mem);

/* Can the bucket be compiled under the job's capacity policy (it fits the chip's HBM, or
 * the policy is ignore, or offload can stream what does not fit; grid_memory_status)?
 * When it cannot, `why` receives "needs X GB per chip (weights, KV, activations), HBM
 * holds Y GB" (what the store keeps for it).
 * @return 1 can, 0 cannot, or grid_memory_per_chip's error. */
int grid_bucket_fits(const config_job *job, config_phase phase, int batch, int seq, char *why, size_t cap,
                     enpu_err *err);

/* ---------------------------------------------------------------------------------
 * MoE expert load on the busiest chip of a bucket (paper §3.4 "Support for custom
 * operators": the cost model takes an expert's worst-case token count from a capacity
 * factor). The token model is the authors' simulator's (NeuSim at commit 45dbdc1,
 * neusim/npusim/frontend/llm_ops_lib.py create_ffn_deepseek_moe and
 * neusim/configs/models/LLMConfig.py get_effective_expert_tokens).
 *
 * T = tokens of the whole bucket (batch·seq prefill, batch decode): the all-to-all may
 * bring every EP group's tokens to one chip's experts. k = experts_per_token,
 * E = routed_experts, E_loc = E/ep experts per chip, c = the capacity factor (worst case
 * E/k). The busiest chip holds the most loaded ("hot") expert.
 *  all-resident (static shapes, as XLA/TPU MoE kernels run): every one of the E_loc
 *    experts runs, each with a fixed token count:
 *      hot expert     hot  = min(T, max(1, ceil(c·T·k/E))) tokens,
 *      E_loc − 1 cold cold = max(1, ceil((T·k − c·T·k/E) / (E − 1))) tokens each: the
 *                     remaining routings spread evenly, at least one (padded) row, so a
 *                     decode step still reads every resident expert's weights.
 *    c = 1 gives every expert the balanced count ceil(T·k/E).
 *  active-only (dynamic shapes): experts without tokens are skipped; the chip gets at
 *    most P = T·min(k, E_loc) token-expert pairs and runs b = min(E_loc, P) experts,
 *    batched, with m = min(T, ceil(P / b), ceil(c·T·k/E)) tokens each. */
typedef struct {
  int64_t tokens;        /* T */
  int64_t experts_local; /* E_loc */
  int64_t hot_tokens;    /* all-resident */
  int64_t cold_experts;  /* E_loc − 1 */
  int64_t cold_tokens;
  int64_t active_experts; /* active-only: b */
  int64_t active_tokens;  /* active-only: m */
  int64_t token_slots;    /* token rows through the chip's routed experts in the job's mode */
} grid_moe_load;

/* The load of bucket (batch, seq) of `phase` (all zero for a dense model).
 * @return 0, or ENPU_ERR_INVALID (batch or seq < 1, ep < 1). */
int grid_moe_load_of(const config_job *job, config_phase phase, int batch, int seq, grid_moe_load *out,
                     enpu_err *err);

/* The capacity factor in use: the job's, or E/k for "worst" (0 for a dense model). */
double grid_capacity_factor(const config_job *job);

/* ---------------------------------------------------------------------------------
 * The grid */

typedef enum { GRID_FEASIBLE = 0, GRID_INFEASIBLE_CAPACITY = 1 } grid_status;

/* A bucket's status under mem->capacity (see "Capacity check" above). */
grid_status grid_memory_status(const grid_memory *mem);

/* One line on how a bucket stands with HBM, for the store's bucket message: why it is
 * infeasible, how much it streams (offload), or that it overflows HBM (ignore); "" when
 * it fits. */
void grid_memory_note(const grid_memory *mem, char *buf, size_t cap);

typedef struct {
  int batch;
  int seq;
  grid_status status;
  grid_memory mem; /* per chip */
} grid_bucket;

/* Counts over a phase or over the whole grid.
 *   buckets             = |batch axis| × |seq axis| (summed over enabled phases)
 *   feasible            = buckets compiled: those that fit HBM, plus under "offload"
 *                         those that can stream, under "ignore" all
 *   infeasible_capacity = buckets - feasible (recorded, never compiled)
 *   compilations        = feasible × slack_count × policy_count: the number of
 *                         (phase, bucket, slack, policy) plans the job produces. The
 *                         paper's 1728/2112/2304 (§3.4) are buckets × 4 slacks of one
 *                         phase and policy, without a capacity check. */
typedef struct {
  int64_t buckets;
  int64_t feasible;
  int64_t infeasible_capacity;
  int64_t compilations;
} grid_totals;

/* Read-only view of one enabled phase; the arrays are owned by the grid. */
typedef struct {
  config_phase phase;
  const int *batch;
  int batch_count;
  const int *seq;
  int seq_count;
  const grid_bucket *buckets; /* batch-major, batch_count × seq_count */
  int bucket_count;
  config_parallel parallel;
  grid_totals totals;
} grid_phase;

typedef struct grid grid;

/* Expand every enabled phase of `job` and check each bucket's capacity.
 * @return 0, or ENPU_ERR_INVALID (bad axis, bad parallelism, no enabled phase) or
 *         ENPU_ERR_NOMEM; on failure *out is NULL and nothing is left allocated. */
int grid_create(const config_job *job, grid **out, enpu_err *err);
void grid_free(grid *g); /* NULL is a no-op */

/* The view of `phase`, or NULL when the job does not compile that phase. */
const grid_phase *grid_get_phase(const grid *g, config_phase phase);
const grid_totals *grid_get_totals(const grid *g);

/* Pad a runtime batch to its bucket: the smallest batch >= `batch` and the smallest
 * seq >= `seq` of `phase` (O(log n)). *out points into the grid.
 * @return 0 when that bucket is feasible;
 *         ENPU_ERR_INFEASIBLE when it does not fit HBM (*out is still set: every other
 *           covering bucket is at least as large, so none fits);
 *         ENPU_ERR_NOT_FOUND when no bucket covers (batch, seq) — the message names the
 *           largest bucket — or the phase is not in the job (*out is NULL);
 *         ENPU_ERR_INVALID for batch or seq < 1. */
int grid_pad(const grid *g, config_phase phase, int batch, int seq, const grid_bucket **out, enpu_err *err);

#endif /* ENPU_GRID_H */
