/* graph.h — per-chip operator graph of one LLM forward pass for one bucket:
 * (model, phase, batch, seq, parallelism, MoE options, capacity) → ordered operators with
 * shapes, FLOPs, HBM/ICI/host bytes, multiplicity and a content signature.
 *
 * Prefill covers the whole prompt of `batch` requests of `seq` tokens; decode covers
 * one iteration of `batch` requests whose KV length is `seq`. Every quantity is per
 * chip (after TP/EP sharding). Prefill attention is flash-style: no seq×seq tensor
 * touches HBM (except MLA under the job's "attention_impl": "einsum", below).
 *
 * Execution order is a list of segments, each a run of consecutive ops repeated
 * `repeat` times (embedding once; the dense layers L times; the LM head once), and an
 * op may stand for `count` identical instances that run back to back (the equally
 * loaded experts of an MoE layer), so the real operator order is: for each segment,
 * repeat × (for each of its ops in order, count × the op). An op's multiplicity is its
 * segment's repeat × its count; its instances are numbered layer-major (instance
 * r·count + c is copy c in repetition r).
 *
 * The signature hashes everything that determines an op's cost and Pareto set that
 * the graph knows (kind, shape, dtype, parallel context, host bytes); the chip and
 * cost-model parts are added by the callers that need them. It never hashes the op's
 * name, so identical ops in different places (dense and MoE layers, the equally loaded
 * experts of a layer) share it.
 *
 * Operator granularity (what counts as one operator; the paper's per-operator
 * statistics, Table 1 and Table 7, depend on it). The fusion rules, the same for every
 * model:
 * - fused: Q, K and V projections (GQA) into one matmul; the MLA low-rank projections
 *   each one matmul; flash attention (QK^T, softmax, PV) one operator, as is decode
 *   attention over the KV cache; SwiGLU's activation and the gate·up product one
 *   elementwise operator; RoPE on Q and K one operator; the router's softmax and top-k
 *   one operator; the gate-weighted sum of the expert outputs one operator.
 * - separate: every norm, residual add, KV-cache write, collective, the router matmul,
 *   each projection of the MLP, each expert (all-resident).
 * - model option "ffn.fuse_gate_up" (config.h): false (default) builds the gate and up
 *   projections of every SwiGLU MLP (dense FFN, shared and routed experts) as two
 *   matmuls, true as one [hidden, 2·inter] matmul. The default follows the authors'
 *   simulator, which builds them as separate operators (NeuSim at commit 45dbdc1,
 *   neusim/npusim/frontend/llm_ops_lib.py, create_ffn_matmul_llama: FFgate, FFup, their
 *   product, FFoutput), so our per-operator statistics count what the paper's count;
 *   fused saves one read of the MLP input and one operator's HBM latency per MLP (what a
 *   hand-fused kernel does): <= 0.1 ms per pass on the dense models, 3.9-14 ms (3-9 %)
 *   on DeepSeek, where every resident expert is an MLP (results/calibration.md).
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
 *   heads share the one latent), then v_up (× W_UV per head). With the job's
 *   "attention_impl": "einsum" (the paper's world: its simulator refuses flash attention
 *   for MLA) both phases run the absorbed einsums as separate matmuls, as that simulator
 *   lists them: q_absorb, scores_nope and scores_rope (each writing the tokens × heads ×
 *   KV scores to HBM), scores_latent (reading them back against the latent cache), v_up;
 *   no causal mask, no softmax operator.
 * - EP: the ep expert-parallel groups also split the requests of the bucket for the
 *   non-expert ops (DeepSeek-style attention data parallelism): a chip serves
 *   ceil(batch/ep) requests; when batch < ep the graph is that of a busy group. The
 *   routed experts see all bucket tokens: dispatch and combine are all-to-alls over the
 *   ep ranks. Without EP (ep = 1) there is no all-to-all.
 * - MoE experts (paper §3.4 "Support for custom operators"; token counts in grid.h,
 *   grid_moe_load, from the job's capacity factor; the graph is the busiest chip's):
 *     all-resident (the paper's, and the default): each of the chip's E/ep experts is
 *       its own MLP instance: expert 0 is the most loaded ("hot") one
 *       (moe.expert0.gate/up/swiglu/down), the other E/ep − 1 get the remaining
 *       routings evenly with at least one padded row (moe.expert1-<n>.*, one op of
 *       count E/ep − 1 per projection: the equally loaded experts are identical, so
 *       like the layers of a segment they are one op with a multiplicity, searched once
 *       and walked instance by instance). Every resident expert's weights are read each
 *       pass (static shapes, as XLA/TPU MoE kernels run). Order: projection by
 *       projection over all experts (every expert's gate, then every up, SwiGLU, down),
 *       as a grouped-matmul MoE kernel runs them.
 *     active-only: the experts that get tokens run as one batched MLP (moe.expert_*:
 *       b experts × [m, hidden] @ [hidden, n]); idle experts are skipped (dynamic
 *       shapes; the physically tighter number).
 *   Dispatch sends the chip's T·k token copies; the combine returns the rows its
 *   experts computed (grid_moe_load.token_slots).
 * - Router (matmul hidden → E, then top-k) and shared experts run on all T tokens; the
 *   router is replicated over TP, shared experts are TP-sharded like a dense FFN.
 * - Capacity "offload" (grid.h): every streaming layer (the MoE layers of an MoE model,
 *   every layer of a dense one) starts with host.weight_stream, a GRAPH_HOST_LOAD that
 *   brings its share of the non-resident weights over the host link into HBM
 *   (host_bytes = hbm_write_bytes); it is not overlapped with compute (the authors'
 *   simulator likewise models its PCIe swap as an operator of its own). The layer's ops
 *   then read those weights from HBM like any others.
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
 *   all-to-all (r−1)/r·payload, where payload is the full buffer on one chip.
 * - Job "ici_model": "neusim" (the paper's world, MLA models only): the TP allreduces
 *   become the collectives of the authors' simulator's DeepSeek layer (NeuSim 45dbdc1,
 *   neusim/npusim/frontend/llm_ops_lib.py): before attention attn.allgather_in of the
 *   full [T, hidden] per chip ("AllGatherMHA", create_multi_head_latent_attention), after
 *   it attn.allgather_kv (the latent, FP8) and attn.allgather_k_pe (FP32) ("sequence
 *   parallelism: allgather the kv and pe cache"), attn.reduce_scatter of [T, tp·hidden]
 *   and attn.allgather_out of its [T, hidden] result; around every FFN (create_ffn)
 *   ffn.allgather of [requests, hidden] and ffn.reduce_scatter of [T, hidden] over expert
 *   TP (tp·dp/ep chips). Attention TP gets all the chip's torus axes when only TP is
 *   used, expert parallelism one of them and expert TP the rest (run_sim_lib.py,
 *   map_parallelism_to_ici_axes_llm_moe); a degree is split over its axes and its
 *   volume staged per axis as graph_ici.c says; each op carries its links (2 per axis:
 *   NeuSim's ici_bw_GBps = 200 is "BW of two links") and ici_overlap (time = max of
 *   transfer and latency × steps, create_all_gather_op's "max(ceil(... / agg_bw),
 *   config.ici_latency_ns * (parallelism_degree - 1))"). HBM bytes: the tensors read and
 *   written. The MoE all-to-alls and the LM head's gather keep the ring model. */
#ifndef ENPU_GRAPH_H
#define ENPU_GRAPH_H

#include <stdint.h>

#include "common.h"
#include "config.h"
#include "grid.h"

/* Most operator instances (sum of multiplicities) one forward pass may have: graph_build
 * refuses more, because the searches allocate per instance. */
#define GRAPH_MAX_INSTANCES ((int64_t)1 << 22)

typedef enum {
  GRAPH_MATMUL = 0,  /* b × ([m,k] @ [k,n]); rhs_is_weight: [k,n] comes from weights */
  GRAPH_ATTENTION,   /* flash attention: b = (requests × kv heads), each with
                        kv_group query heads sharing one K/V head; m = query tokens,
                        n = kv tokens, k = qk head dim, v = value head dim */
  GRAPH_NORM,        /* RMSNorm over m rows of n elements */
  GRAPH_ROPE,        /* rotary embedding over m rows of n elements; k = width of the
                        cos/sin table row read per token */
  GRAPH_ELEMENTWISE, /* m × n elements, vector_ops_per_elem, in/out tensors */
  GRAPH_ROUTER,      /* MoE gate: softmax/sigmoid + top-k over m rows of n experts;
                        k = experts chosen per row */
  GRAPH_EMBED,       /* gather of m rows of n elements from the embedding table */
  GRAPH_ALLREDUCE,   /* collectives: n bytes of payload per chip among `ranks` */
  GRAPH_ALLGATHER,
  GRAPH_REDUCE_SCATTER,
  GRAPH_ALLTOALL,
  GRAPH_HOST_LOAD, /* host_bytes from host memory over the host link into HBM */
  GRAPH_NKIND
} graph_op_kind;

const char *graph_kind_name(graph_op_kind kind); /* "matmul", "attention", ... */

typedef struct {
  int64_t b, m, k, n, v;
  int kv_group;                /* attention: query heads per K/V head (GQA; MLA absorbed) */
  int causal;                  /* attention: 1 for causal prefill */
  int kv_shared;               /* attention: 1 when V is the first v columns of K (absorbed MLA
                                  latent), so K/V bytes are read once */
  int rhs_is_weight;           /* matmul: the [k,n] operand is a weight in HBM */
  int ranks;                   /* collectives: chips in the group */
  double ici_links;            /* collectives under "ici_model": "neusim": links in parallel
                                  (2 per torus axis the group is split over); 0 = the ring
                                  model's (the links of the axes the group spans) */
  int ici_overlap;             /* collectives, neusim: 1 = latency and transfer overlap
                                  (time = max of the two, not their sum) */
  int in_tensors, out_tensors; /* elementwise: tensors read / written */
  double vector_ops_per_elem;  /* VU ops per output element (elementwise/norm/rope/router) */
  int dtype_bytes;
} graph_shape;

typedef struct {
  int id;        /* index in the graph, as printed by `enpu graph` */
  char name[64]; /* e.g. "attn.qkv_proj", "moe.expert_up" */
  graph_op_kind kind;
  graph_shape shape;
  double flops;           /* matrix FLOPs (2·m·k·n per matmul), per chip */
  double vector_ops;      /* VU element operations, per chip */
  double hbm_read_bytes;  /* weights + activations + KV read from HBM, per chip */
  double hbm_write_bytes; /* activations + KV written to HBM, per chip */
  double weight_bytes;    /* the part of hbm_read_bytes that is model weights */
  double ici_bytes;       /* bytes each chip sends over ICI */
  double host_bytes;      /* bytes the chip receives over its host link */
  int64_t count;          /* identical instances run back to back per segment pass, >= 1 */
  int64_t multiplicity;   /* how many times the op runs in the forward pass: repeat·count */
  uint64_t signature;
  int segment; /* index of its segment (graph_segment_at) */
} graph_op;

typedef struct {
  char name[32]; /* "embed", "dense_layer", "window_layer", "moe_layer", "head" */
  int first_op;  /* index of the first op of the segment */
  int op_count;
  int64_t repeat;
} graph_segment;

typedef struct {
  double flops, vector_ops, hbm_read_bytes, hbm_write_bytes, weight_bytes, ici_bytes, host_bytes;
  double kv_cache_bytes;   /* KV cache resident for this bucket, per chip */
  double activation_bytes; /* peak activation footprint, per chip: the residual stream
                              (T·hidden·dtype) plus the largest activation working set
                              (inputs + outputs, without weights and KV cache) of any op */
} graph_totals;            /* sums over ops × multiplicity, per chip */

/* The bucket and the token counts the graph was built with. */
typedef struct {
  config_phase phase;
  int batch, seq;
  config_parallel parallel;
  int64_t tokens;        /* bucket tokens: batch·seq (prefill) or batch (decode) */
  int64_t chip_requests; /* requests through this chip's non-expert ops: ceil(batch/ep) */
  int64_t chip_tokens;   /* T: chip_requests·seq (prefill) or chip_requests (decode) */
  int64_t dense_layers;  /* layers of each kind held by this chip (one pipeline stage) */
  int64_t moe_layers;
  int64_t window_layers;     /* dense layers whose attention is window-limited (the model's
                                sliding_window, when the bucket's seq exceeds its size; else 0
                                and they count as dense_layers) */
  grid_moe_load moe;         /* MoE expert load of this chip (all zero if dense) */
  grid_memory memory;        /* per-chip memory and the capacity offload (grid.h) */
  double kv_bytes_per_token; /* KV cache per token per chip, all layers of the stage */
} graph_info;

typedef struct graph graph;

/* Build the graph of one bucket of `job` (model, phase parallelism, MoE options,
 * capacity). A bucket that is infeasible under the job's capacity policy still builds
 * (as if it fitted, without an offload): callers that compile check grid_memory_status.
 * @return 0, or ENPU_ERR_INVALID/RANGE with a message (e.g. batch < 1). */
int graph_build(const config_job *job, config_phase phase, int batch, int seq, graph **out, enpu_err *err);
/* graph_build of a partial-depth pass: the embedding, the model's first `layers` layers
 * (dense ones first, as the model stacks them) and the LM head — the draft or
 * verification pass of self-speculative decoding (an early exit). The ops are those of
 * the full graph; only the layer segments' repeats (and the KV bytes per token, of those
 * layers only) change. layers == model layers is graph_build.
 * @return as graph_build; ENPU_ERR_RANGE for layers outside 1..model layers. */
int graph_build_depth(const config_job *job, config_phase phase, int batch, int seq, int layers, graph **out,
                      enpu_err *err);
void graph_free(graph *g);

int graph_op_count(const graph *g);
const graph_op *graph_op_at(const graph *g, int id);
int graph_segment_count(const graph *g);
const graph_segment *graph_segment_at(const graph *g, int i);
const graph_totals *graph_get_totals(const graph *g);
const graph_info *graph_get_info(const graph *g);

#endif /* ENPU_GRAPH_H */
