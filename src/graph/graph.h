/* graph.h — per-chip operator graph of one LLM forward pass for one bucket:
 * (model, phase, batch, seq, parallelism, MoE capacity) → ordered operators with
 * shapes, FLOPs, HBM/ICI bytes, multiplicity and a content signature.
 *
 * Prefill covers the whole prompt of `batch` requests of `seq` tokens; decode covers
 * one iteration of `batch` requests whose KV length is `seq`. Every quantity is per
 * chip (after TP/EP sharding). Prefill attention is flash-style: no seq×seq tensor
 * touches HBM.
 *
 * Execution order is a list of segments, each a run of consecutive ops repeated
 * `repeat` times (embedding once; the dense layers L times; the LM head once), so
 * the real operator order is: for each segment, repeat × (its ops in order). An op's
 * multiplicity equals its segment's repeat.
 *
 * The signature hashes everything that determines an op's cost and Pareto set that
 * the graph knows (kind, shape, dtype, parallel context, MoE capacity); the chip and
 * cost-model parts are added by the callers that need them. It never hashes the op's
 * name, so identical ops in different places (dense and MoE layers) share it; the
 * capacity factor enters only the ops whose shape depends on it (routed experts and
 * their combine).
 *
 * Modelling choices (per chip; T = tokens through the chip's non-expert ops):
 * - Tensor parallelism is Megatron-style: column-parallel QKV / gate-up, row-parallel
 *   o_proj / down, one TP allreduce (payload T·hidden·dtype) after attention and one
 *   after the FFN/MoE; activations between them are replicated on the TP ranks (norms,
 *   residual adds and RoPE run on all T tokens on every rank).
 * - GQA: KV heads per chip = kv_heads/tp, or 1 when tp > kv_heads (each KV head is then
 *   replicated on tp/kv_heads chips).
 * - MLA: q_a_proj, kv_a_proj and their norms are replicated on every TP rank (as vLLM
 *   and SGLang do), so is the latent KV cache (kv_lora + rope per token). Prefill
 *   expands K/V with kv_b_proj and runs flash attention with k = nope+rope,
 *   v = v_head_dim; decode uses weight absorption: q_absorb (per head q_nope × W_UK),
 *   attention over the latent (k = kv_lora+rope, v = kv_lora, kv_shared = 1, all local
 *   heads share the one latent), then v_up (× W_UV per head).
 * - EP: the ep expert-parallel groups also split the requests of the bucket for the
 *   non-expert ops (DeepSeek-style attention data parallelism): a chip serves
 *   ceil(batch/ep) requests; when batch < ep the graph is that of a busy group. The
 *   routed experts see all bucket tokens (T_all): dispatch and combine are all-to-alls
 *   over the ep ranks. Without EP (ep = 1) there is no all-to-all.
 * - Capacity (k = experts_per_token, E = routed_experts, E_loc = E/ep): a chip
 *   receives at most P = T_all·min(k, E_loc) token-expert pairs; experts that get no
 *   token are skipped, so it runs b = min(E_loc, P) experts with m tokens each:
 *     worst case (capacity factor 0): m = min(T_all, ceil(P / b));
 *     capacity factor cf > 0:         m = min(T_all, ceil(cf·T_all·k/E), ceil(P / b)).
 *   The routed expert matmuls are batched (b experts, [m, hidden] @ [hidden, n]).
 * - Router (matmul hidden → E, then top-k) and shared experts run on all T tokens; the
 *   router is replicated over TP, shared experts are TP-sharded like a dense FFN.
 * - Embedding: the table is replicated on every chip (no collective; each chip gathers
 *   its T rows). LM head: vocab sharded over TP, computed for one token per request
 *   (prefill: only the last prompt token, as serving does; decode: the new token), then
 *   an allgather of the logits over TP.
 * - Pipeline parallelism: the graph is one stage holding ceil(n/pp) layers of each kind
 *   plus the embedding and the LM head (a conservative stage); stage-to-stage sends are
 *   not modelled.
 * - HBM bytes are compulsory traffic: each operand read once, each result written once
 *   (flash attention reads Q, K, V once and writes O; decode attention reads the KV
 *   cache). Collectives read and write their payload; ici_bytes is what a chip sends
 *   with ring algorithms: allreduce 2(r−1)/r·payload, allgather, reduce-scatter and
 *   all-to-all (r−1)/r·payload, where payload is the full buffer on one chip. */
#ifndef ENPU_GRAPH_H
#define ENPU_GRAPH_H

#include <stdint.h>

#include "common.h"
#include "config.h"

/* Most operator instances (sum of multiplicities) one forward pass may have: graph_build
 * refuses more, because the searches allocate per instance. */
#define GRAPH_MAX_INSTANCES ((int64_t)1 << 22)

typedef enum {
  GRAPH_MATMUL = 0,      /* b × ([m,k] @ [k,n]); rhs_is_weight: [k,n] comes from weights */
  GRAPH_ATTENTION,       /* flash attention: b = (requests × kv heads), each with
                            kv_group query heads sharing one K/V head; m = query tokens,
                            n = kv tokens, k = qk head dim, v = value head dim */
  GRAPH_NORM,            /* RMSNorm over m rows of n elements */
  GRAPH_ROPE,            /* rotary embedding over m rows of n elements; k = width of the
                            cos/sin table row read per token */
  GRAPH_ELEMENTWISE,     /* m × n elements, vector_ops_per_elem, in/out tensors */
  GRAPH_ROUTER,          /* MoE gate: softmax/sigmoid + top-k over m rows of n experts;
                            k = experts chosen per row */
  GRAPH_EMBED,           /* gather of m rows of n elements from the embedding table */
  GRAPH_ALLREDUCE,       /* collectives: n bytes of payload per chip among `ranks` */
  GRAPH_ALLGATHER,
  GRAPH_REDUCE_SCATTER,
  GRAPH_ALLTOALL,
  GRAPH_NKIND
} graph_op_kind;

const char *graph_kind_name(graph_op_kind kind); /* "matmul", "attention", ... */

typedef struct {
  int64_t b, m, k, n, v;
  int kv_group;           /* attention: query heads per K/V head (GQA; MLA absorbed) */
  int causal;             /* attention: 1 for causal prefill */
  int kv_shared;          /* attention: 1 when V is the first v columns of K (absorbed MLA
                             latent), so K/V bytes are read once */
  int rhs_is_weight;      /* matmul: the [k,n] operand is a weight in HBM */
  int ranks;              /* collectives: chips in the group */
  int in_tensors, out_tensors; /* elementwise: tensors read / written */
  double vector_ops_per_elem;  /* VU ops per output element (elementwise/norm/rope/router) */
  int dtype_bytes;
} graph_shape;

typedef struct {
  int id;             /* index in the graph, as printed by `enpu graph` */
  char name[64];      /* e.g. "attn.qkv_proj", "moe.expert_up" */
  graph_op_kind kind;
  graph_shape shape;
  double flops;           /* matrix FLOPs (2·m·k·n per matmul), per chip */
  double vector_ops;      /* VU element operations, per chip */
  double hbm_read_bytes;  /* weights + activations + KV read from HBM, per chip */
  double hbm_write_bytes; /* activations + KV written to HBM, per chip */
  double weight_bytes;    /* the part of hbm_read_bytes that is model weights */
  double ici_bytes;       /* bytes each chip sends over ICI */
  int64_t multiplicity;   /* how many times the op runs in the forward pass */
  uint64_t signature;
} graph_op;

typedef struct {
  char name[32]; /* "embed", "dense_layer", "moe_layer", "head" */
  int first_op;  /* index of the first op of the segment */
  int op_count;
  int64_t repeat;
} graph_segment;

typedef struct {
  double flops, vector_ops, hbm_read_bytes, hbm_write_bytes, weight_bytes, ici_bytes;
  double kv_cache_bytes; /* KV cache resident for this bucket, per chip */
  double activation_bytes; /* peak activation footprint, per chip: the residual stream
                              (T·hidden·dtype) plus the largest activation working set
                              (inputs + outputs, without weights and KV cache) of any op */
} graph_totals;           /* sums over ops × multiplicity, per chip */

/* The bucket and the token counts the graph was built with. */
typedef struct {
  config_phase phase;
  int batch, seq;
  config_parallel parallel;
  int64_t tokens;         /* bucket tokens: batch·seq (prefill) or batch (decode) */
  int64_t chip_requests;  /* requests through this chip's non-expert ops: ceil(batch/ep) */
  int64_t chip_tokens;    /* T: chip_requests·seq (prefill) or chip_requests (decode) */
  int64_t dense_layers;   /* layers of each kind held by this chip (one pipeline stage) */
  int64_t moe_layers;
  int64_t experts_active; /* MoE: routed experts run on this chip (b), 0 if dense */
  int64_t expert_tokens;  /* MoE: tokens per active expert (m), 0 if dense */
  double kv_bytes_per_token; /* KV cache per token per chip, all layers of the stage */
} graph_info;

typedef struct graph graph;

/* Build the graph of one bucket of `job` (model, phase parallelism, MoE capacity).
 * @return 0, or ENPU_ERR_INVALID/RANGE with a message (e.g. batch < 1). */
int graph_build(const config_job *job, config_phase phase, int batch, int seq, graph **out,
                enpu_err *err);
void graph_free(graph *g);

int graph_op_count(const graph *g);
const graph_op *graph_op_at(const graph *g, int id);
int graph_segment_count(const graph *g);
const graph_segment *graph_segment_at(const graph *g, int i);
const graph_totals *graph_get_totals(const graph *g);
const graph_info *graph_get_info(const graph *g);

#endif /* ENPU_GRAPH_H */
