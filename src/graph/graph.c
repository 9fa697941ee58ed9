/* graph.c — builds the per-chip operator list of one forward pass (see graph.h for the
 * modelling choices). A builder appends ops segment by segment; every op helper
 * derives FLOPs, vector ops and compulsory HBM/ICI bytes from its shape in one place,
 * so the same shape always gives the same numbers and the same signature.
 *
 * Invariants of a built graph: segments are contiguous, in execution order, cover
 * every op exactly once, and have repeat >= 1; every op has count >= 1 and its
 * multiplicity is its segment's repeat × count; totals are the sums of the op figures ×
 * multiplicity. */
#include "graph.h"

#include <math.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "graph_internal.h"

/* VU element operations per output element. They are estimates of the vector work of
 * each kind, kept here so the cost model sees consistent counts:
 * RMSNorm: square, accumulate, scale by rsqrt, multiply by the weight;
 * RoPE: x·cos, rotate(x)·sin, add;
 * SwiGLU: silu(g) = g·sigmoid(g) (exp, add, reciprocal, multiply), times up;
 * softmax per attention score: scale, running max, subtract, exp, accumulate;
 * router per expert logit: sigmoid/softmax (exp, add, divide), plus one compare per
 * chosen expert for the top-k selection. */
#define NORM_OPS_PER_ELEM 4.0
#define ROPE_OPS_PER_ELEM 3.0
#define SWIGLU_OPS_PER_ELEM 5.0
#define SOFTMAX_OPS_PER_SCORE 5.0
#define ROUTER_OPS_PER_LOGIT 3.0
/* Token ids read by the embedding gather (int32). */
#define TOKEN_ID_BYTES 4.0
/* Version of the signature recipe: bump when the hashed fields or their meaning change. */
#define GRAPH_SIGNATURE_SEED 0x6772617068763032ULL /* "graphv02": + host_bytes, no factor */

struct graph {
  graph_op *ops;
  size_t cap;
  int count;
  graph_segment segments[5];
  int segment_count;
  graph_totals totals;
  graph_info info;
};

typedef struct {
  graph *g;
  const config_model *model;
  int tp, ep;
  config_moe_experts experts;
  config_attn_impl attention; /* MLA as flash (one op) or as the reference's einsums */
  config_ici_model ici;       /* ring allreduces or the reference's collectives */
  int tp_n, etp_n;            /* ici neusim: torus axes of attention TP and expert TP */
  int64_t tp_dims[GRAPH_ICI_MAX_AXES], etp_dims[GRAPH_ICI_MAX_AXES];
  double dtype; /* bytes per element */
  double max_activation_bytes;
  bool window; /* building a window-limited layer (model sliding_window) */
} builder;

const char *graph_kind_name(graph_op_kind kind) {
  static const char *const names[GRAPH_NKIND] = {"matmul",      "attention",      "norm",      "rope",
                                                 "elementwise", "router",         "embedding", "allreduce",
                                                 "allgather",   "reduce_scatter", "alltoall",  "host_load"};
  return (unsigned)kind < GRAPH_NKIND ? names[kind] : "unknown";
}

static int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

/* GQA KV heads held by one chip: kv_heads/tp, or 1 replicated head when tp > kv_heads. */
static int64_t gqa_kv_heads_per_chip(const config_model *m, int tp) {
  return m->kv_heads >= tp ? m->kv_heads / tp : 1;
}

static uint64_t op_signature(const builder *bld, const graph_op *op) {
  const graph_shape *s = &op->shape;
  enpu_hasher hs;
  enpu_hasher_init(&hs, GRAPH_SIGNATURE_SEED);
  const int64_t fields[] = {op->kind, s->b,          s->m,           s->k,           s->n,
                            s->v,     s->kv_group,   s->causal,      s->kv_shared,   s->rhs_is_weight,
                            s->ranks, s->in_tensors, s->out_tensors, s->dtype_bytes, bld->tp,
                            bld->ep};
  for (size_t i = 0; i < sizeof fields / sizeof fields[0]; i++) enpu_hasher_i64(&hs, fields[i]);
  enpu_hasher_f64(&hs, s->vector_ops_per_elem);
  enpu_hasher_f64(&hs, op->host_bytes);
  if (s->ici_links > 0) { /* only the neusim collectives: the ring ops keep their signatures */
    enpu_hasher_f64(&hs, s->ici_links);
    enpu_hasher_i64(&hs, s->ici_overlap);
    enpu_hasher_f64(&hs, op->ici_bytes);
  }
  return enpu_hasher_digest(&hs);
}

/* Append `op` (figures filled by the caller); activation_bytes is its activation
 * working set, for the peak-footprint estimate. */
static int push(builder *bld, const char *name, graph_op op, double activation_bytes, enpu_err *err) {
  graph *g = bld->g;
  if (enpu_grow((void **)&g->ops, &g->cap, (size_t)g->count + 1, sizeof *g->ops) < 0)
    return enpu_errorf(err, ENPU_ERR_NOMEM, "out of memory building the operator graph");
  op.id = g->count;
  if (op.count < 1) op.count = 1;
  snprintf(op.name, sizeof op.name, "%s", name);
  op.shape.dtype_bytes = (int)bld->dtype;
  op.signature = op_signature(bld, &op);
  g->ops[g->count++] = op;
  if (activation_bytes > bld->max_activation_bytes) bld->max_activation_bytes = activation_bytes;
  return 0;
}

/* b × ([m,k] @ [k,n]); the rhs is a weight or an activation. */
static int add_matmul(builder *bld, const char *name, int64_t b, int64_t m, int64_t k, int64_t n,
                      bool rhs_is_weight, enpu_err *err) {
  const double d = bld->dtype;
  graph_op op = {.kind = GRAPH_MATMUL, .shape = {.b = b, .m = m, .k = k, .n = n, .rhs_is_weight = rhs_is_weight}};
  const double lhs = (double)b * m * k * d, rhs = (double)b * k * n * d, out = (double)b * m * n * d;
  op.flops = 2.0 * b * m * k * n;
  op.hbm_read_bytes = lhs + rhs;
  op.hbm_write_bytes = out;
  op.weight_bytes = rhs_is_weight ? rhs : 0.0;
  return push(bld, name, op, lhs + out + (rhs_is_weight ? 0.0 : rhs), err);
}

/* Vector-only ops over s.m rows of s.n elements: s.in_tensors tensors read,
 * s.out_tensors written, plus `extra_read` bytes (norm weight, RoPE table) of which
 * `weight` bytes are model weights. */
static int add_vector(builder *bld, const char *name, graph_op_kind kind, graph_shape s, double extra_read,
                      double weight, enpu_err *err) {
  const double d = bld->dtype, elems = (double)s.m * s.n;
  graph_op op = {.kind = kind, .shape = s};
  op.vector_ops = elems * s.vector_ops_per_elem;
  op.hbm_read_bytes = s.in_tensors * elems * d + extra_read;
  op.hbm_write_bytes = s.out_tensors * elems * d;
  op.weight_bytes = weight;
  return push(bld, name, op, (s.in_tensors + s.out_tensors) * elems * d, err);
}

static int add_elementwise(builder *bld, const char *name, int64_t m, int64_t n, int in, double ops_per_elem,
                           enpu_err *err) {
  graph_shape s = {.m = m, .n = n, .in_tensors = in, .out_tensors = 1, .vector_ops_per_elem = ops_per_elem};
  return add_vector(bld, name, GRAPH_ELEMENTWISE, s, 0.0, 0.0, err);
}

static int add_norm(builder *bld, const char *name, int64_t m, int64_t n, enpu_err *err) {
  const double w = (double)n * bld->dtype;
  graph_shape s = {.m = m, .n = n, .in_tensors = 1, .out_tensors = 1, .vector_ops_per_elem = NORM_OPS_PER_ELEM};
  return add_vector(bld, name, GRAPH_NORM, s, w, w, err);
}

/* RoPE over m rows of n elements, reading a cos/sin row of `table` elements per row. */
static int add_rope(builder *bld, int64_t m, int64_t n, int64_t table, enpu_err *err) {
  graph_shape s = {
      .m = m, .n = n, .k = table, .in_tensors = 1, .out_tensors = 1, .vector_ops_per_elem = ROPE_OPS_PER_ELEM};
  return add_vector(bld, "attn.rope", GRAPH_ROPE, s, (double)m * table * bld->dtype, 0.0, err);
}

typedef struct {
  int64_t b, kv_group, m, n, k, v;
  bool causal, kv_shared, kv_from_cache;
  int64_t kv_rows; /* K/V rows read from HBM per b when not n (a window's band streams them all) */
} attention_args;

/* Flash attention: per (request, kv head) b, kv_group query heads, m queries over n keys.
 * Causal prefill with m == n queries at the end of the keys: query i sees n - m + i + 1
 * keys, i.e. m·n − m(m−1)/2 scores per query head. */
static int add_attention(builder *bld, const char *name, attention_args a, enpu_err *err) {
  const double d = bld->dtype;
  const double scores = a.causal ? (double)a.m * a.n - (double)a.m * (a.m - 1) / 2.0 : (double)a.m * a.n;
  const double heads = (double)a.b * a.kv_group;
  graph_op op = {.kind = GRAPH_ATTENTION,
                 .shape = {.b = a.b,
                           .m = a.m,
                           .n = a.n,
                           .k = a.k,
                           .v = a.v,
                           .kv_group = (int)a.kv_group,
                           .causal = a.causal,
                           .kv_shared = a.kv_shared}};
  const double q = heads * a.m * a.k * d, o = heads * a.m * a.v * d;
  const double kv = (double)a.b * (a.kv_rows ? a.kv_rows : a.n) * (a.kv_shared ? a.k : a.k + a.v) * d;
  op.flops = 2.0 * heads * scores * (a.k + a.v);
  op.vector_ops = heads * (scores * SOFTMAX_OPS_PER_SCORE + (double)a.m * a.v);
  op.hbm_read_bytes = q + kv;
  op.hbm_write_bytes = o;
  return push(bld, name, op, q + o + (a.kv_from_cache ? 0.0 : kv), err);
}

static int add_router(builder *bld, int64_t m, int64_t experts, int64_t topk, enpu_err *err) {
  const double d = bld->dtype;
  graph_op op = {
      .kind = GRAPH_ROUTER,
      .shape = {.m = m, .n = experts, .k = topk, .vector_ops_per_elem = ROUTER_OPS_PER_LOGIT + (double)topk}};
  op.vector_ops = (double)m * experts * op.shape.vector_ops_per_elem;
  op.hbm_read_bytes = (double)m * experts * d;
  /* expert index (int32) and gate weight per chosen expert */
  op.hbm_write_bytes = (double)m * topk * (TOKEN_ID_BYTES + d);
  return push(bld, "moe.router_topk", op, op.hbm_read_bytes + op.hbm_write_bytes, err);
}

static int add_embed(builder *bld, int64_t m, int64_t n, enpu_err *err) {
  const double rows = (double)m * n * bld->dtype;
  graph_op op = {.kind = GRAPH_EMBED, .shape = {.m = m, .n = n}};
  op.hbm_read_bytes = rows + (double)m * TOKEN_ID_BYTES;
  op.hbm_write_bytes = rows;
  op.weight_bytes = rows;
  return push(bld, "embed.gather", op, rows, err);
}

/* A collective over `ranks` chips on a payload of `payload_bytes` per chip (the full
 * buffer); nothing to do on one rank. */
static int add_collective(builder *bld, const char *name, graph_op_kind kind, int ranks, double payload_bytes,
                          enpu_err *err) {
  if (ranks <= 1) return 0;
  const double share = (double)(ranks - 1) / ranks;
  graph_op op = {.kind = kind, .shape = {.n = (int64_t)payload_bytes, .ranks = ranks}};
  op.hbm_read_bytes = payload_bytes;
  op.hbm_write_bytes = payload_bytes;
  switch (kind) {
  case GRAPH_ALLREDUCE:
    op.ici_bytes = 2.0 * share * payload_bytes;
    op.vector_ops = share * payload_bytes / bld->dtype; /* the reduce-scatter half adds */
    break;
  case GRAPH_REDUCE_SCATTER:
    op.ici_bytes = share * payload_bytes;
    op.vector_ops = share * payload_bytes / bld->dtype;
    op.hbm_write_bytes = payload_bytes / ranks;
    break;
  case GRAPH_ALLGATHER:
    op.ici_bytes = share * payload_bytes;
    op.hbm_read_bytes = payload_bytes / ranks;
    break;
  default: /* GRAPH_ALLTOALL */ op.ici_bytes = share * payload_bytes; break;
  }
  return push(bld, name, op, op.hbm_read_bytes + op.hbm_write_bytes, err);
}

/* A collective as the authors' simulator times it ("ici_model": "neusim", graph.h):
 * `sent_elems` sent per chip over the n torus axes `dims` (2 links each), latency and
 * transfer overlapped; a reduce-scatter adds each sent element ranks − 1 times. */
static int add_neusim_collective(builder *bld, const char *name, graph_op_kind kind, const int64_t *dims, int n,
                                 double sent_elems, double elem_bytes, double in_bytes, double out_bytes,
                                 enpu_err *err) {
  const int64_t ranks = graph_ici_ranks(dims, n);
  if (ranks <= 1) return 0;
  graph_op op = {.kind = kind,
                 .shape = {.n = (int64_t)out_bytes, .ranks = (int)ranks, .ici_links = 2.0 * n, .ici_overlap = 1}};
  op.ici_bytes = sent_elems * elem_bytes;
  op.hbm_read_bytes = in_bytes;
  op.hbm_write_bytes = out_bytes;
  if (kind == GRAPH_REDUCE_SCATTER) op.vector_ops = sent_elems * (double)(ranks - 1);
  return push(bld, name, op, in_bytes + out_bytes, err);
}

/* An all-gather of `elems` per chip over the attention TP axes (the simulator passes the
 * full [T, hidden] as each chip's input, so the result is tp × that). */
static int add_neusim_gather(builder *bld, const char *name, double elems, double elem_bytes, enpu_err *err) {
  const double in_bytes = elems * elem_bytes;
  return add_neusim_collective(bld, name, GRAPH_ALLGATHER, bld->tp_dims, bld->tp_n,
                               graph_ici_ag_elems(elems, bld->tp_dims, bld->tp_n), elem_bytes, in_bytes,
                               in_bytes * bld->tp, err);
}

/* After MLA's o_proj, as create_multi_head_latent_attention builds it: the latent (FP8)
 * and rope key (FP32) all-gathers of its sequence parallelism, the reduce-scatter of the
 * [T, tp·hidden] output and the all-gather of its [T, hidden] result. */
static int add_neusim_attn_tail(builder *bld, const graph_info *in, enpu_err *err) {
  const config_model *m = bld->model;
  const double T = (double)in->chip_tokens, th = T * m->hidden;
  ENPU_FORWARD(add_neusim_gather(bld, "attn.allgather_kv", T * m->kv_lora_rank, 1.0, err));
  ENPU_FORWARD(add_neusim_gather(bld, "attn.allgather_k_pe", T * m->qk_rope_head_dim, 4.0, err));
  ENPU_FORWARD(add_neusim_collective(bld, "attn.reduce_scatter", GRAPH_REDUCE_SCATTER, bld->tp_dims, bld->tp_n,
                                     graph_ici_rs_elems(th, bld->tp_dims, bld->tp_n), bld->dtype,
                                     th * bld->tp * bld->dtype, th * bld->dtype, err));
  return add_neusim_gather(bld, "attn.allgather_out", th, bld->dtype, err);
}

/* The FFN's collectives as create_ffn builds them, over the expert-TP axes: an all-gather
 * of [requests, hidden] before it, a reduce-scatter of [T, hidden] after it. */
static int add_neusim_ffn(builder *bld, const graph_info *in, bool after, enpu_err *err) {
  const double h = bld->model->hidden, d = bld->dtype;
  const double etp = (double)graph_ici_ranks(bld->etp_dims, bld->etp_n);
  if (!after) {
    const double e = (double)in->chip_requests * h;
    return add_neusim_collective(bld, "ffn.allgather", GRAPH_ALLGATHER, bld->etp_dims, bld->etp_n,
                                 graph_ici_ag_elems(e, bld->etp_dims, bld->etp_n), d, e * d, e * d * etp, err);
  }
  const double th = (double)in->chip_tokens * h;
  return add_neusim_collective(bld, "ffn.reduce_scatter", GRAPH_REDUCE_SCATTER, bld->etp_dims, bld->etp_n,
                               graph_ici_rs_elems(ceil(th / etp), bld->etp_dims, bld->etp_n), d, th * d,
                               th * d / etp, err);
}

/* `bytes` of weights from host memory over the host link, landing in HBM. */
static int add_host_load(builder *bld, const char *name, double bytes, enpu_err *err) {
  graph_op op = {.kind = GRAPH_HOST_LOAD, .shape = {.n = (int64_t)ceil(bytes)}};
  op.host_bytes = (double)op.shape.n;
  op.hbm_write_bytes = op.host_bytes;
  return push(bld, name, op, 0.0, err);
}

/* Close the segment that started at op `first` and give its ops their multiplicity. */
static void end_segment(graph *g, const char *name, int first, int64_t repeat) {
  graph_segment *s = &g->segments[g->segment_count++];
  snprintf(s->name, sizeof s->name, "%s", name);
  s->first_op = first;
  s->op_count = g->count - first;
  s->repeat = repeat;
  for (int i = first; i < g->count; i++) {
    g->ops[i].multiplicity = repeat * g->ops[i].count;
    g->ops[i].segment = g->segment_count - 1;
  }
}

/* ---------------------------------------------------------------------------------
 * Layer bodies */

/* A window-limited layer's prefill past its first `size` queries (whose causal attention
 * is the flash op before): each later query sees exactly the last `size` keys, so the
 * scores are (seq - size) x size, non-causal; its K/V stream covers the whole sequence.
 * With the flash op: seq·size − size(size−1)/2 scores, the window's bound. */
static int add_window_band(builder *bld, const graph_info *in, attention_args a, enpu_err *err) {
  a.m = in->seq - a.n;
  a.causal = false;
  a.kv_rows = in->seq;
  return add_attention(bld, "attn.window_band", a, err);
}

static int add_gqa_attention(builder *bld, const graph_info *in, enpu_err *err) {
  const config_model *m = bld->model;
  const int64_t T = in->chip_tokens, hd = m->head_dim;
  const int64_t q_heads = m->heads / bld->tp;
  const int64_t kv_heads = gqa_kv_heads_per_chip(m, bld->tp);
  ENPU_FORWARD(add_norm(bld, "attn.norm", T, m->hidden, err));
  ENPU_FORWARD(add_matmul(bld, "attn.qkv_proj", 1, T, m->hidden, (q_heads + 2 * kv_heads) * hd, true, err));
  ENPU_FORWARD(add_rope(bld, T, (q_heads + kv_heads) * hd, hd, err));
  /* K and V rows copied into the cache: a DMA, no vector work */
  ENPU_FORWARD(add_elementwise(bld, "attn.kv_cache_write", T, 2 * kv_heads * hd, 1, 0.0, err));
  const bool prefill = in->phase == CONFIG_PREFILL;
  const int64_t n = bld->window ? m->window_size : in->seq; /* keys a query sees at most */
  attention_args a = {.b = in->chip_requests * kv_heads,
                      .kv_group = q_heads / kv_heads,
                      .m = prefill ? n : 1,
                      .n = n,
                      .k = hd,
                      .v = hd,
                      .causal = prefill,
                      .kv_from_cache = !prefill};
  ENPU_FORWARD(add_attention(bld, prefill ? "attn.flash" : "attn.decode", a, err));
  if (prefill && bld->window) ENPU_FORWARD(add_window_band(bld, in, a, err));
  return add_matmul(bld, "attn.o_proj", 1, T, q_heads * hd, m->hidden, true, err);
}

/* MLA's attention core as the authors' simulator builds it (NeuSim 45dbdc1,
 * neusim/npusim/frontend/llm_ops_lib.py, create_multi_head_latent_attention, which
 * refuses flash attention for MLA): weight absorption in both phases, each einsum its own
 * operator, so the scores [tokens × heads × kv] are written to HBM twice (nope and rope
 * parts) and read back for the product with the latent cache; no causal mask and no
 * softmax operator (the reference lists none). Weights: wkv_b's two halves, per head. */
static int add_mla_einsums(builder *bld, const graph_info *in, int64_t heads, enpu_err *err) {
  const config_model *m = bld->model;
  const int64_t T = in->chip_tokens, kv = in->seq, lora = m->kv_lora_rank;
  const int64_t q_rows = (in->phase == CONFIG_PREFILL ? in->seq : 1) * heads; /* per request */
  ENPU_FORWARD(add_matmul(bld, "attn.q_absorb", heads, T, m->qk_nope_head_dim, lora, true, err));
  ENPU_FORWARD(add_matmul(bld, "attn.scores_nope", in->chip_requests, q_rows, lora, kv, false, err));
  ENPU_FORWARD(add_matmul(bld, "attn.scores_rope", in->chip_requests, q_rows, m->qk_rope_head_dim, kv, false, err));
  ENPU_FORWARD(add_matmul(bld, "attn.scores_latent", in->chip_requests, q_rows, kv, lora, false, err));
  return add_matmul(bld, "attn.v_up", heads, T, lora, m->v_head_dim, true, err);
}

static int add_mla_attention(builder *bld, const graph_info *in, enpu_err *err) {
  const config_model *m = bld->model;
  const int64_t T = in->chip_tokens, heads = m->heads / bld->tp;
  const int64_t nope = m->qk_nope_head_dim, rope = m->qk_rope_head_dim, vd = m->v_head_dim;
  const int64_t lora = m->kv_lora_rank, qk = nope + rope;
  ENPU_FORWARD(add_norm(bld, "attn.norm", T, m->hidden, err));
  if (m->q_lora_rank > 0) {
    ENPU_FORWARD(add_matmul(bld, "attn.q_a_proj", 1, T, m->hidden, m->q_lora_rank, true, err));
    ENPU_FORWARD(add_norm(bld, "attn.q_norm", T, m->q_lora_rank, err));
    ENPU_FORWARD(add_matmul(bld, "attn.q_b_proj", 1, T, m->q_lora_rank, heads * qk, true, err));
  } else {
    ENPU_FORWARD(add_matmul(bld, "attn.q_proj", 1, T, m->hidden, heads * qk, true, err));
  }
  ENPU_FORWARD(add_matmul(bld, "attn.kv_a_proj", 1, T, m->hidden, lora + rope, true, err));
  ENPU_FORWARD(add_norm(bld, "attn.kv_norm", T, lora, err));
  ENPU_FORWARD(add_rope(bld, T, (heads + 1) * rope, rope, err));
  ENPU_FORWARD(add_elementwise(bld, "attn.kv_cache_write", T, lora + rope, 1, 0.0, err));
  if (bld->attention == CONFIG_ATTN_IMPL_EINSUM) {
    ENPU_FORWARD(add_mla_einsums(bld, in, heads, err));
  } else if (in->phase == CONFIG_PREFILL) {
    ENPU_FORWARD(add_matmul(bld, "attn.kv_b_proj", 1, T, lora, heads * (nope + vd), true, err));
    attention_args a = {.b = in->chip_requests * heads,
                        .kv_group = 1,
                        .m = in->seq,
                        .n = in->seq,
                        .k = qk,
                        .v = vd,
                        .causal = true};
    ENPU_FORWARD(add_attention(bld, "attn.flash", a, err));
  } else {
    ENPU_FORWARD(add_matmul(bld, "attn.q_absorb", heads, T, nope, lora, true, err));
    attention_args a = {.b = in->chip_requests,
                        .kv_group = heads,
                        .m = 1,
                        .n = in->seq,
                        .k = lora + rope,
                        .v = lora,
                        .kv_shared = true,
                        .kv_from_cache = true};
    ENPU_FORWARD(add_attention(bld, "attn.decode_latent", a, err));
    ENPU_FORWARD(add_matmul(bld, "attn.v_up", heads, T, lora, vd, true, err));
  }
  return add_matmul(bld, "attn.o_proj", 1, T, heads * vd, m->hidden, true, err);
}

/* One SwiGLU MLP over m tokens of each of `experts` batched experts (1: a dense FFN or
 * a single expert): the gate and up projections (one matmul when the model fuses them,
 * graph.h), SwiGLU, down; op names are `prefix` + "gate_up" or "gate"/"up", "swiglu",
 * "down". */
static int add_swiglu_mlp(builder *bld, const char *prefix, int64_t experts, int64_t m, int64_t inter,
                          enpu_err *err) {
  const int64_t hidden = bld->model->hidden;
  char name[64];
  if (bld->model->ffn_fuse_gate_up) {
    snprintf(name, sizeof name, "%sgate_up", prefix);
    ENPU_FORWARD(add_matmul(bld, name, experts, m, hidden, 2 * inter, true, err));
  } else {
    snprintf(name, sizeof name, "%sgate", prefix);
    ENPU_FORWARD(add_matmul(bld, name, experts, m, hidden, inter, true, err));
    snprintf(name, sizeof name, "%sup", prefix);
    ENPU_FORWARD(add_matmul(bld, name, experts, m, hidden, inter, true, err));
  }
  snprintf(name, sizeof name, "%sswiglu", prefix);
  ENPU_FORWARD(add_elementwise(bld, name, experts * m, inter, 2, SWIGLU_OPS_PER_ELEM, err));
  snprintf(name, sizeof name, "%sdown", prefix);
  return add_matmul(bld, name, experts, m, inter, hidden, true, err);
}

static int add_residual(builder *bld, const char *name, int64_t T, enpu_err *err) {
  return add_elementwise(bld, name, T, bld->model->hidden, 2, 1.0, err);
}

/* The TP collective after attention or after the FFN: a ring allreduce, or the
 * reference's reduce-scatter and gathers under "ici_model": "neusim". */
static int add_tp_allreduce(builder *bld, const graph_info *in, bool ffn, enpu_err *err) {
  if (bld->ici == CONFIG_ICI_NEUSIM)
    return ffn ? add_neusim_ffn(bld, in, true, err) : add_neusim_attn_tail(bld, in, err);
  return add_collective(bld, ffn ? "ffn.allreduce" : "attn.allreduce", GRAPH_ALLREDUCE, bld->tp,
                        (double)in->chip_tokens * bld->model->hidden * bld->dtype, err);
}

/* One projection ("gate_up", "gate", "up", "swiglu" or "down") of one expert of m tokens. */
static int add_expert_projection(builder *bld, const char *name, const char *proj, int64_t m, int64_t inter,
                                 enpu_err *err) {
  const int64_t hidden = bld->model->hidden;
  if (!strcmp(proj, "swiglu")) return add_elementwise(bld, name, m, inter, 2, SWIGLU_OPS_PER_ELEM, err);
  if (!strcmp(proj, "down")) return add_matmul(bld, name, 1, m, inter, hidden, true, err);
  const int64_t n = strcmp(proj, "gate_up") ? inter : 2 * inter;
  return add_matmul(bld, name, 1, m, hidden, n, true, err);
}

/* All-resident experts (graph.h, "MoE experts"), projection by projection: the hot
 * expert's op, then one op standing for the cold experts (count = their number). */
static int add_resident_experts(builder *bld, const grid_moe_load *l, int64_t inter, enpu_err *err) {
  static const char *const fused[] = {"gate_up", "swiglu", "down"};
  static const char *const split[] = {"gate", "up", "swiglu", "down"};
  const bool fuse = bld->model->ffn_fuse_gate_up;
  const char *const *proj = fuse ? fused : split;
  const int nproj = fuse ? 3 : 4;
  char name[64];
  for (int p = 0; p < nproj; p++) {
    snprintf(name, sizeof name, "moe.expert0.%s", proj[p]);
    ENPU_FORWARD(add_expert_projection(bld, name, proj[p], l->hot_tokens, inter, err));
    if (l->cold_experts == 0) continue;
    snprintf(name, sizeof name, "moe.expert1-%lld.%s", (long long)l->cold_experts, proj[p]);
    ENPU_FORWARD(add_expert_projection(bld, name, proj[p], l->cold_tokens, inter, err));
    bld->g->ops[bld->g->count - 1].count = l->cold_experts;
  }
  return 0;
}

/* The routed experts of the chip (graph.h, "MoE experts"). */
static int add_routed_experts(builder *bld, const grid_moe_load *l, enpu_err *err) {
  const int64_t inter = bld->model->expert_intermediate / bld->tp;
  if (bld->experts == CONFIG_EXPERTS_ACTIVE_ONLY)
    return add_swiglu_mlp(bld, "moe.expert_", l->active_experts, l->active_tokens, inter, err);
  return add_resident_experts(bld, l, inter, err);
}

static int add_moe(builder *bld, const graph_info *in, enpu_err *err) {
  const config_model *m = bld->model;
  const int64_t T = in->chip_tokens, k = m->experts_per_token, hidden = m->hidden;
  const double d = bld->dtype;
  ENPU_FORWARD(add_norm(bld, "ffn.norm", T, hidden, err));
  ENPU_FORWARD(add_matmul(bld, "moe.router", 1, T, hidden, m->routed_experts, true, err));
  ENPU_FORWARD(add_router(bld, T, m->routed_experts, k, err));
  ENPU_FORWARD(add_collective(bld, "moe.dispatch", GRAPH_ALLTOALL, bld->ep, (double)T * k * hidden * d, err));
  ENPU_FORWARD(add_routed_experts(bld, &in->moe, err));
  ENPU_FORWARD(
      add_collective(bld, "moe.combine", GRAPH_ALLTOALL, bld->ep, (double)in->moe.token_slots * hidden * d, err));
  if (m->shared_experts > 0)
    ENPU_FORWARD(add_swiglu_mlp(bld, "moe.shared_", 1, T,
                                (int64_t)m->shared_experts * m->expert_intermediate / bld->tp, err));
  /* gate-weighted sum of the k routed outputs (+ the shared output) per token */
  const int in_tensors = (int)k + (m->shared_experts > 0);
  ENPU_FORWARD(add_elementwise(bld, "moe.weighted_sum", T, hidden, in_tensors, 2.0 * in_tensors, err));
  ENPU_FORWARD(add_tp_allreduce(bld, in, true, err));
  return add_residual(bld, "ffn.residual", T, err);
}

static int add_layer(builder *bld, const graph_info *in, bool moe, enpu_err *err) {
  const int64_t T = in->chip_tokens;
  /* Offload: the streaming layers (grid.h) first bring their share of the weights in. */
  if (in->memory.offload_bytes > 0 && moe == bld->model->moe)
    ENPU_FORWARD(add_host_load(bld, "host.weight_stream", in->memory.offload_layer_bytes, err));
  const bool neusim = bld->ici == CONFIG_ICI_NEUSIM;
  if (neusim)
    ENPU_FORWARD(add_neusim_gather(bld, "attn.allgather_in", (double)T * bld->model->hidden, bld->dtype, err));
  if (bld->model->attention == CONFIG_ATTN_MLA) ENPU_FORWARD(add_mla_attention(bld, in, err));
  else ENPU_FORWARD(add_gqa_attention(bld, in, err));
  ENPU_FORWARD(add_tp_allreduce(bld, in, false, err));
  ENPU_FORWARD(add_residual(bld, "attn.residual", T, err));
  if (neusim) ENPU_FORWARD(add_neusim_ffn(bld, in, false, err));
  if (moe) return add_moe(bld, in, err);
  ENPU_FORWARD(add_norm(bld, "ffn.norm", T, bld->model->hidden, err));
  ENPU_FORWARD(add_swiglu_mlp(bld, "ffn.", 1, T, bld->model->ffn_intermediate / bld->tp, err));
  ENPU_FORWARD(add_tp_allreduce(bld, in, true, err));
  return add_residual(bld, "ffn.residual", T, err);
}

static int add_head(builder *bld, const graph_info *in, enpu_err *err) {
  const config_model *m = bld->model;
  const int64_t rows = in->chip_requests, vocab = ceil_div(m->vocab, bld->tp);
  ENPU_FORWARD(add_norm(bld, "head.final_norm", in->chip_tokens, m->hidden, err));
  ENPU_FORWARD(add_matmul(bld, "head.lm_head", 1, rows, m->hidden, vocab, true, err));
  return add_collective(bld, "head.logits_allgather", GRAPH_ALLGATHER, bld->tp,
                        (double)rows * m->vocab * bld->dtype, err);
}

/* ---------------------------------------------------------------------------------
 * Validation and bucket arithmetic */

static int check_inputs(const config_job *job, config_phase phase, int batch, int seq, enpu_err *err) {
  ENPU_RETURN_IF(!job, err, ENPU_ERR_INVALID, "no job");
  ENPU_RETURN_IF((unsigned)phase >= CONFIG_NPHASE, err, ENPU_ERR_INVALID, "unknown phase %d", (int)phase);
  ENPU_RETURN_IF(!job->phase[phase].enabled, err, ENPU_ERR_INVALID, "job '%s' has no %s phase", job->name,
                 config_phase_name(phase));
  if (config_range_check("job", "$.phases.*.batch[]", batch, err) < 0 ||
      config_range_check("job", "$.phases.*.seq[]", seq, err) < 0) {
    enpu_err_prefix(err, "bucket batch %d seq %d: ", batch, seq);
    return ENPU_ERR_RANGE;
  }
  const config_parallel *p = &job->phase[phase].parallel;
  ENPU_RETURN_IF(p->dp < 1 || p->tp < 1 || p->pp < 1 || p->ep < 1, err, ENPU_ERR_INVALID,
                 "parallel degrees must be >= 1, got dp %d tp %d pp %d ep %d", p->dp, p->tp, p->pp, p->ep);
  const config_model *m = &job->model;
  ENPU_RETURN_IF(m->hidden < 1 || m->layers < 1 || m->vocab < 1 || m->dtype_bytes < 1 || m->heads < 1, err,
                 ENPU_ERR_INVALID, "model '%s' has a non-positive size", m->name);
  ENPU_RETURN_IF(m->heads % p->tp, err, ENPU_ERR_INVALID, "tp %d does not divide %d attention heads", p->tp,
                 m->heads);
  if (m->attention == CONFIG_ATTN_GQA) {
    ENPU_RETURN_IF(m->kv_heads < 1 || m->head_dim < 1 || m->heads % m->kv_heads, err, ENPU_ERR_INVALID,
                   "bad GQA heads %d / kv heads %d / head dim %d", m->heads, m->kv_heads, m->head_dim);
    ENPU_RETURN_IF(m->kv_heads % p->tp && p->tp % m->kv_heads, err, ENPU_ERR_INVALID,
                   "tp %d and %d kv heads: one must divide the other", p->tp, m->kv_heads);
  } else {
    ENPU_RETURN_IF(m->kv_lora_rank < 1 || m->qk_nope_head_dim < 1 || m->qk_rope_head_dim < 1 || m->v_head_dim < 1 ||
                       m->q_lora_rank < 0,
                   err, ENPU_ERR_INVALID, "bad MLA dimensions in model '%s'", m->name);
  }
  const bool dense_layers = !m->moe || m->first_dense_layers > 0;
  ENPU_RETURN_IF(dense_layers && (m->ffn_intermediate < 1 || m->ffn_intermediate % p->tp), err, ENPU_ERR_INVALID,
                 "tp %d does not divide FFN intermediate %d", p->tp, m->ffn_intermediate);
  if (m->moe) {
    ENPU_RETURN_IF(m->routed_experts < 1 || m->routed_experts % p->ep, err, ENPU_ERR_INVALID,
                   "ep %d does not divide %d routed experts", p->ep, m->routed_experts);
    ENPU_RETURN_IF(m->experts_per_token < 1 || m->shared_experts < 0 || m->expert_intermediate < 1 ||
                       m->expert_intermediate % p->tp || m->first_dense_layers < 0 ||
                       m->first_dense_layers > m->layers,
                   err, ENPU_ERR_INVALID,
                   "bad MoE sizes in model '%s' (tp %d must divide expert "
                   "intermediate %d)",
                   m->name, p->tp, m->expert_intermediate);
  } else {
    ENPU_RETURN_IF(p->ep != 1, err, ENPU_ERR_INVALID, "ep %d on the dense model '%s'", p->ep, m->name);
  }
  ENPU_RETURN_IF(!(job->moe_capacity_factor == 0 || job->moe_capacity_factor >= 1), err, ENPU_ERR_INVALID,
                 "capacity factor must be >= 1 (0 = worst case), got %g", job->moe_capacity_factor);
  return 0;
}

/* Token counts, layer counts (of the first `depth` layers), KV bytes per token, expert
 * load and memory of the bucket. */
static int bucket_info(const config_job *job, config_phase phase, int batch, int seq, int depth, graph_info *in,
                       enpu_err *err) {
  const config_model *m = &job->model;
  const config_parallel *p = &job->phase[phase].parallel;
  const int64_t per_request = phase == CONFIG_PREFILL ? seq : 1;
  *in = (graph_info){.phase = phase, .batch = batch, .seq = seq, .parallel = *p};
  in->tokens = (int64_t)batch * per_request;
  in->chip_requests = ceil_div(batch, p->ep);
  in->chip_tokens = in->chip_requests * per_request;
  const int64_t all_dense = m->moe ? m->first_dense_layers : m->layers;
  const int64_t dense = all_dense < depth ? all_dense : depth;
  /* Window-limited layers differ only when the sequence outgrows the window; among the
   * first `depth` layers, their share of the model's. */
  int64_t windowed = 0;
  if (!m->moe && m->window_layers > 0 && seq > m->window_size)
    windowed = llround((double)dense * m->window_layers / m->layers);
  in->dense_layers = ceil_div(dense - windowed, p->pp);
  in->window_layers = ceil_div(windowed, p->pp);
  in->moe_layers = ceil_div(depth - dense, p->pp);
  const int64_t layers = in->dense_layers + in->window_layers + in->moe_layers;
  const double d = m->dtype_bytes;
  if (m->attention == CONFIG_ATTN_MLA)
    in->kv_bytes_per_token = (double)layers * (m->kv_lora_rank + m->qk_rope_head_dim) * d;
  else in->kv_bytes_per_token = 2.0 * layers * gqa_kv_heads_per_chip(m, p->tp) * m->head_dim * d;
  ENPU_FORWARD(grid_moe_load_of(job, phase, batch, seq, &in->moe, err));
  return grid_memory_per_chip(job, phase, batch, seq, &in->memory, err);
}

static void compute_totals(graph *g, const builder *bld) {
  graph_totals *t = &g->totals;
  *t = (graph_totals){0};
  for (int i = 0; i < g->count; i++) {
    const graph_op *op = &g->ops[i];
    const double mult = (double)op->multiplicity;
    t->flops += op->flops * mult;
    t->vector_ops += op->vector_ops * mult;
    t->hbm_read_bytes += op->hbm_read_bytes * mult;
    t->hbm_write_bytes += op->hbm_write_bytes * mult;
    t->weight_bytes += op->weight_bytes * mult;
    t->ici_bytes += op->ici_bytes * mult;
    t->host_bytes += op->host_bytes * mult;
  }
  const graph_info *in = &g->info;
  /* A window-limited layer (built only when seq exceeds the window) keeps the window's
   * tokens, every other layer all seq of them. */
  const int64_t layers = in->dense_layers + in->window_layers + in->moe_layers;
  const int64_t kept = in->window_layers > 0 ? bld->model->window_size : in->seq;
  t->kv_cache_bytes = (double)in->chip_requests * in->kv_bytes_per_token / (double)layers *
                      ((double)(layers - in->window_layers) * in->seq + (double)in->window_layers * kept);
  t->activation_bytes = (double)in->chip_tokens * bld->model->hidden * bld->dtype + bld->max_activation_bytes;
}

static int build(builder *bld, enpu_err *err) {
  graph *g = bld->g;
  const graph_info *in = &g->info;
  int first = g->count;
  ENPU_FORWARD(add_embed(bld, in->chip_tokens, bld->model->hidden, err));
  end_segment(g, "embed", first, 1);
  if (in->dense_layers > 0) {
    first = g->count;
    ENPU_FORWARD(add_layer(bld, in, false, err));
    end_segment(g, "dense_layer", first, in->dense_layers);
  }
  if (in->window_layers > 0) {
    first = g->count;
    bld->window = true;
    ENPU_FORWARD(add_layer(bld, in, false, err));
    bld->window = false;
    end_segment(g, "window_layer", first, in->window_layers);
  }
  if (in->moe_layers > 0) {
    first = g->count;
    ENPU_FORWARD(add_layer(bld, in, true, err));
    end_segment(g, "moe_layer", first, in->moe_layers);
  }
  first = g->count;
  ENPU_FORWARD(add_head(bld, in, err));
  end_segment(g, "head", first, 1);
  compute_totals(g, bld);
  return 0;
}

int graph_build_depth(const config_job *job, config_phase phase, int batch, int seq, int layers, graph **out,
                      enpu_err *err) {
  ENPU_RETURN_IF(!out, err, ENPU_ERR_INVALID, "no output pointer");
  *out = NULL;
  ENPU_FORWARD(check_inputs(job, phase, batch, seq, err));
  ENPU_RETURN_IF(layers < 1 || layers > job->model.layers, err, ENPU_ERR_RANGE,
                 "depth %d outside 1..%d layers of model '%s'", layers, job->model.layers, job->model.name);
  graph *g = enpu_calloc(1, sizeof *g);
  ENPU_RETURN_IF(!g, err, ENPU_ERR_NOMEM, "out of memory building the operator graph");
  const config_parallel *p = &job->phase[phase].parallel;
  builder bld = {.g = g,
                 .model = &job->model,
                 .tp = p->tp,
                 .ep = p->ep,
                 .experts = job->moe_experts,
                 .attention = job->attention_impl,
                 .ici = job->ici_model,
                 .dtype = job->model.dtype_bytes};
  if (bld.ici == CONFIG_ICI_NEUSIM)
    graph_ici_groups(p, job->chip.ici_links / 2, &bld.tp_n, bld.tp_dims, &bld.etp_n, bld.etp_dims);
  int rc = bucket_info(job, phase, batch, seq, layers, &g->info, err);
  if (rc == 0) rc = build(&bld, err);
  /* Searches and re-simulations allocate per op instance of a pass (multiplicity counts
   * every repeat and every counted copy): bound the count before they do (real models
   * have thousands to tens of thousands). */
  int64_t instances = 0;
  for (int i = 0; rc == 0 && i < g->count; i++) instances += g->ops[i].multiplicity;
  if (rc == 0 && instances > GRAPH_MAX_INSTANCES)
    rc = enpu_errorf(err, ENPU_ERR_RANGE,
                     "%s batch %d seq %d: %lld operator instances per forward pass (limit %lld)",
                     config_phase_name(phase), batch, seq, (long long)instances, (long long)GRAPH_MAX_INSTANCES);
  if (rc < 0) {
    graph_free(g);
    return rc;
  }
  *out = g;
  return 0;
}

int graph_build(const config_job *job, config_phase phase, int batch, int seq, graph **out, enpu_err *err) {
  return graph_build_depth(job, phase, batch, seq, job ? job->model.layers : 1, out, err);
}

void graph_free(graph *g) {
  if (!g) return;
  free(g->ops);
  free(g);
}

int graph_op_count(const graph *g) { return g->count; }
const graph_op *graph_op_at(const graph *g, int id) { return id >= 0 && id < g->count ? &g->ops[id] : NULL; }

int graph_segment_count(const graph *g) { return g->segment_count; }
const graph_segment *graph_segment_at(const graph *g, int i) {
  return i >= 0 && i < g->segment_count ? &g->segments[i] : NULL;
}

const graph_totals *graph_get_totals(const graph *g) { return &g->totals; }
const graph_info *graph_get_info(const graph *g) { return &g->info; }
