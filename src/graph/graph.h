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
 * cost-model parts are added by the callers that need them. */
#ifndef ENPU_GRAPH_H
#define ENPU_GRAPH_H

#include <stdint.h>

#include "common.h"
#include "config.h"

typedef enum {
  GRAPH_MATMUL = 0,      /* b × ([m,k] @ [k,n]); rhs_is_weight: [k,n] comes from weights */
  GRAPH_ATTENTION,       /* flash attention: b = (requests × kv heads), each with
                            kv_group query heads sharing one K/V head; m = query tokens,
                            n = kv tokens, k = qk head dim, v = value head dim */
  GRAPH_NORM,            /* RMSNorm over m rows of n elements */
  GRAPH_ROPE,            /* rotary embedding over m rows of n elements */
  GRAPH_ELEMENTWISE,     /* m × n elements, vector_ops_per_elem, in/out tensors */
  GRAPH_ROUTER,          /* MoE gate: softmax/sigmoid + top-k over m rows of n experts */
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
  int first_op;  /* index of the first op of the segment */
  int op_count;
  int64_t repeat;
} graph_segment;

typedef struct {
  double flops, vector_ops, hbm_read_bytes, hbm_write_bytes, weight_bytes, ici_bytes;
  double kv_cache_bytes; /* KV cache resident for this bucket, per chip */
  double activation_bytes; /* peak activation footprint, per chip */
} graph_totals;           /* sums over ops × multiplicity, per chip */

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

#endif /* ENPU_GRAPH_H */
