/* test_graph.c — operator graphs checked against closed-form model arithmetic.
 *
 * Every expected value below is written from the model's published sizes (read from the
 * shipped jobs/models/ files, so they are stated once) and the modelling rules stated in
 * graph.h, never copied from the program's output. Notation: H hidden, L layers, V vocab, h heads,
 * kv KV heads, hd head dim, I FFN intermediate, d = 2 bytes (bf16), B batch, S seq.
 *
 * FLOPs: a matmul of a [1,k] row by a [k,n] weight costs 2kn, so the weight FLOPs per
 * token are 2 × (weights the token multiplies with). Attention adds, per layer, per
 * query head and per (query, key) pair, 2·(k + v) FLOPs (QK^T and PV). Causal prefill of
 * S tokens has S(S+1)/2 pairs per head, i.e. (S+1)/2 per token; decode has S pairs.
 * The module's tests are split by topic over test_graph.c and test_graph_*.c, one program
 * (test_graph.h says which file holds what; main here runs them all). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "config.h"
#include "graph.h"
#include "test_graph.h"

/* ---------------------------------------------------------------------------------
 * Models (their published configurations) and jobs */

config_model llama3_70b(void) { return test_shipped_model("llama3-70b"); }

static config_model llama31_405b(void) { return test_shipped_model("llama3.1-405b"); }

config_model deepseek_v2(void) { return test_shipped_model("deepseek-v2-236b"); }

config_model deepseek_v3(void) { return test_shipped_model("deepseek-v3-671b"); }

/* A heap job with both phases on parallelism (dp 1, tp, pp, ep). */
config_job *make_job(config_model model, int tp, int pp, int ep, double capacity) {
  config_job *job = calloc(1, sizeof *job);
  assert_non_null(job);
  snprintf(job->name, sizeof job->name, "%s", model.name);
  job->model = model;
  for (int p = 0; p < CONFIG_NPHASE; p++) {
    job->phase[p].enabled = true;
    job->phase[p].parallel = (config_parallel){.dp = 1, .tp = tp, .pp = pp, .ep = ep};
    job->phase[p].chips = tp * pp * ep;
  }
  job->moe_capacity_factor = capacity;
  return job;
}

graph *build(const config_job *job, config_phase phase, int batch, int seq) {
  graph *g = NULL;
  enpu_err err = {0};
  int rc = graph_build(job, phase, batch, seq, &g, &err);
  if (rc != 0) fail_msg("graph_build failed: %s", err.msg);
  assert_non_null(g);
  return g;
}

/* ---------------------------------------------------------------------------------
 * Helpers */

void assert_rel(double actual, double expected, double tolerance, const char *what) {
  const double rel = fabs(actual - expected) / fabs(expected);
  if (!(rel <= tolerance))
    fail_msg("%s: got %.6g, expected %.6g (off by %.3f %%, allowed %.3f %%)", what, actual, expected, 100.0 * rel,
             100.0 * tolerance);
}

/* Sum over ops of `kind` (GRAPH_NKIND: all ops) of flops × multiplicity. */
double flops_of(const graph *g, graph_op_kind kind) {
  double sum = 0.0;
  for (int i = 0; i < graph_op_count(g); i++) {
    const graph_op *op = graph_op_at(g, i);
    if (kind == GRAPH_NKIND || op->kind == kind) sum += op->flops * (double)op->multiplicity;
  }
  return sum;
}

/* The op called `name` in segment `segment`; fails the test when absent. */
const graph_op *find_op(const graph *g, const char *segment, const char *name) {
  for (int s = 0; s < graph_segment_count(g); s++) {
    const graph_segment *seg = graph_segment_at(g, s);
    if (strcmp(seg->name, segment)) continue;
    for (int i = seg->first_op; i < seg->first_op + seg->op_count; i++)
      if (!strcmp(graph_op_at(g, i)->name, name)) return graph_op_at(g, i);
  }
  fail_msg("no op %s in segment %s", name, segment);
  return NULL;
}

int has_op(const graph *g, const char *name) {
  for (int i = 0; i < graph_op_count(g); i++)
    if (!strcmp(graph_op_at(g, i)->name, name)) return 1;
  return 0;
}

/* Matrix weights of one GQA layer (q, k, v, o and the SwiGLU FFN). */
static double gqa_layer_params(const config_model *m) {
  const double H = m->hidden, hd = m->head_dim;
  return H * (m->heads + 2.0 * m->kv_heads) * hd + m->heads * hd * H + 3.0 * H * m->ffn_intermediate;
}

/* Matrix weights of one MLA attention block: q_a, q_b, kv_a, kv_b, o. */
static double mla_params(const config_model *m) {
  const double H = m->hidden, h = m->heads, ql = m->q_lora_rank, lora = m->kv_lora_rank;
  const double nope = m->qk_nope_head_dim, rope = m->qk_rope_head_dim, v = m->v_head_dim;
  return H * ql + ql * h * (nope + rope) + H * (lora + rope) + lora * h * (nope + v) + h * v * H;
}

/* Active matrix weights per token of a DeepSeek model (LM head included, embedding
 * table excluded: it is a gather). */
static double deepseek_active_params(const config_model *m) {
  const double H = m->hidden, Ie = m->expert_intermediate;
  const int dense = m->first_dense_layers, moe = m->layers - dense;
  return m->layers * mla_params(m) + dense * 3.0 * H * m->ffn_intermediate +
         moe * (H * m->routed_experts + 3.0 * H * Ie * (m->experts_per_token + m->shared_experts)) + H * m->vocab;
}

/* ---------------------------------------------------------------------------------
 * Llama3-70B on TP4 */

static void test_llama70b_prefill_flops_weights_kv(void **state) {
  (void)state;
  const config_model m = llama3_70b();
  const int tp = 4, B = 1, S = 4096;
  config_job *job = make_job(m, tp, 1, 1, 0.0);
  graph *g = build(job, CONFIG_PREFILL, B, S);
  const double T = (double)B * S, H = m.hidden, V = m.vocab, hd = m.head_dim;

  /* FLOPs per token, whole model (= per chip × tp): 2 × (layer weights) + the LM head
   * for the last token of each request only (B of T tokens) + causal attention. */
  const double attention = m.layers * 2.0 * m.heads * (hd + hd) * (S + 1) / 2.0;
  const double expected = 2.0 * (m.layers * gqa_layer_params(&m) + H * V * B / T) + attention;
  const graph_totals *t = graph_get_totals(g);
  assert_rel(t->flops * tp / T, expected, 0.02, "llama70b prefill FLOPs/token");
  /* The looser form: 2 × active params (LM head for every token) + attention. */
  assert_rel(t->flops * tp / T, 2.0 * (m.layers * gqa_layer_params(&m) + H * V) + attention, 0.02,
             "llama70b prefill vs 2x active params + attention");
  assert_rel(flops_of(g, GRAPH_ATTENTION) * tp / T, attention, 1e-9, "attention FLOPs/token");

  /* Weights: every weight byte once per forward pass, sharded 1/tp (kv 8 >= tp 4). */
  const double weights = (m.layers * gqa_layer_params(&m) + H * V) * m.dtype_bytes / tp;
  assert_rel(t->weight_bytes, weights, 0.02, "llama70b weight bytes per chip");

  /* KV cache per token per chip: 2 (K, V) · L · kv/tp · hd · d, exactly. */
  const double kv_token = 2.0 * m.layers * (m.kv_heads / tp) * hd * m.dtype_bytes;
  assert_true(t->kv_cache_bytes == kv_token * B * S);
  const graph_op *w = find_op(g, "dense_layer", "attn.kv_cache_write");
  assert_true(w->hbm_write_bytes * (double)w->multiplicity == kv_token * T);

  /* Flash attention: no S×S tensor in HBM — bytes are Q, K, V read and O written. */
  const graph_op *fa = find_op(g, "dense_layer", "attn.flash");
  const double q_heads = m.heads / tp, kv_heads = m.kv_heads / tp;
  assert_int_equal(fa->shape.kv_group, m.heads / m.kv_heads);
  assert_int_equal(fa->shape.b, B * kv_heads);
  assert_true(fa->hbm_read_bytes == (q_heads + 2 * kv_heads) * T * hd * m.dtype_bytes);
  assert_true(fa->hbm_write_bytes == q_heads * T * hd * m.dtype_bytes);

  /* TP allreduce: payload T·H·d, ring sends 2(r-1)/r of it. */
  const graph_op *ar = find_op(g, "dense_layer", "attn.allreduce");
  assert_true(ar->ici_bytes == 2.0 * (tp - 1) / tp * T * H * m.dtype_bytes);
  /* LM head computes one row per request; the allgather collects B·V logits. */
  assert_int_equal(find_op(g, "head", "head.lm_head")->shape.m, B);
  assert_true(find_op(g, "head", "head.logits_allgather")->ici_bytes == (tp - 1.0) / tp * B * V * m.dtype_bytes);
  graph_free(g);
  free(job);
}

static void test_llama70b_decode_flops_weights_kv(void **state) {
  (void)state;
  const config_model m = llama3_70b();
  const int tp = 4, B = 8, S = 4096;
  config_job *job = make_job(m, tp, 1, 1, 0.0);
  graph *g = build(job, CONFIG_DECODE, B, S);
  const double H = m.hidden, V = m.vocab, hd = m.head_dim;
  const graph_totals *t = graph_get_totals(g);

  /* One new token per request attending to S keys; the LM head runs for every token. */
  const double attention = m.layers * 2.0 * m.heads * (hd + hd) * S;
  const double expected = 2.0 * (m.layers * gqa_layer_params(&m) + H * V) + attention;
  assert_rel(t->flops * tp / B, expected, 0.02, "llama70b decode FLOPs/token");
  assert_rel(t->weight_bytes, (m.layers * gqa_layer_params(&m) + H * V) * m.dtype_bytes / tp, 0.02,
             "llama70b decode weight bytes per chip");

  /* Decode attention reads the whole KV cache of the bucket, per layer. */
  const double kv_token = 2.0 * m.layers * (m.kv_heads / tp) * hd * m.dtype_bytes;
  assert_true(t->kv_cache_bytes == kv_token * B * S);
  const graph_op *att = find_op(g, "dense_layer", "attn.decode");
  assert_int_equal(att->shape.m, 1);
  assert_int_equal(att->shape.n, S);
  assert_true(att->hbm_read_bytes * m.layers >= kv_token * B * S);
  graph_free(g);
  free(job);
}

/* ---------------------------------------------------------------------------------
 * Llama3.1-405B on TP64: 8 KV heads, each replicated on 8 chips */

static void test_llama405b_tp64_replicates_kv_heads(void **state) {
  (void)state;
  const config_model m = llama31_405b();
  const int tp = 64, B = 4, S = 2048;
  config_job *job = make_job(m, tp, 1, 1, 0.0);
  graph *g = build(job, CONFIG_DECODE, B, S);
  const double H = m.hidden, V = m.vocab, hd = m.head_dim, I = m.ffn_intermediate;
  const int q_local = m.heads / tp, kv_local = 1;

  const graph_op *qkv = find_op(g, "dense_layer", "attn.qkv_proj");
  assert_int_equal(qkv->shape.n, (q_local + 2 * kv_local) * m.head_dim);
  const graph_op *att = find_op(g, "dense_layer", "attn.decode");
  assert_int_equal(att->shape.kv_group, q_local / kv_local);
  assert_int_equal(att->shape.b, B * kv_local);

  const graph_totals *t = graph_get_totals(g);
  assert_true(t->kv_cache_bytes == 2.0 * m.layers * kv_local * hd * m.dtype_bytes * B * S);

  /* Per chip: q and o sharded, one full K and V head, FFN sharded, vocab sharded. */
  const double layer = H * q_local * hd + 2.0 * H * kv_local * hd + q_local * hd * H + 3.0 * H * I / tp;
  assert_rel(t->weight_bytes, (m.layers * layer + H * V / tp) * m.dtype_bytes, 0.02, "405b weight bytes per chip");
  const double attention = m.layers * 2.0 * q_local * (hd + hd) * S;
  assert_rel(t->flops / B, 2.0 * (m.layers * layer + H * V / tp) + attention, 0.02,
             "405b FLOPs per token per chip");
  graph_free(g);
  free(job);
}

/* ---------------------------------------------------------------------------------
 * DeepSeek: active parameters per token (one chip, capacity factor 1) */

static void check_deepseek_active(config_model m, double published, const char *what) {
  config_job *job = make_job(m, 1, 1, 1, 1.0);
  job->moe_experts = CONFIG_EXPERTS_ACTIVE_ONLY;
  /* Decode, one request: T = 1 token picks k experts, each of which runs 1 token. */
  graph *g = build(job, CONFIG_DECODE, 1, 4096);
  const graph_info *in = graph_get_info(g);
  assert_int_equal(in->moe.active_experts, m.experts_per_token);
  assert_int_equal(in->moe.active_tokens, 1);
  const double active = (flops_of(g, GRAPH_NKIND) - flops_of(g, GRAPH_ATTENTION)) / 2.0;
  assert_rel(active, published, 0.03, what);
  assert_rel(active, deepseek_active_params(&m), 0.005, "active params vs layer formula");
  /* MLA latent cache: layers · (kv_lora + rope) · d per token, exactly. */
  assert_true(in->kv_bytes_per_token == (double)m.layers * (m.kv_lora_rank + m.qk_rope_head_dim) * m.dtype_bytes);
  graph_free(g);

  /* Prefill of 4096 tokens: same weights per token, except that the LM head runs for
   * the last token only; routed experts hold ceil(T·k/E) tokens each. */
  const int S = 4096;
  g = build(job, CONFIG_PREFILL, 1, S);
  in = graph_get_info(g);
  const double per_expert = ceil((double)S * m.experts_per_token / m.routed_experts);
  assert_int_equal(in->moe.active_tokens, (int64_t)per_expert);
  const double prefill_active = (flops_of(g, GRAPH_NKIND) - flops_of(g, GRAPH_ATTENTION)) / 2.0 / S;
  const double routed_excess = (m.layers - m.first_dense_layers) * 3.0 * m.hidden * m.expert_intermediate *
                               (m.routed_experts * per_expert / S - m.experts_per_token);
  assert_rel(prefill_active,
             deepseek_active_params(&m) - (double)m.hidden * m.vocab * (1.0 - 1.0 / S) + routed_excess, 0.005,
             "prefill active params");
  const double h = m.heads, qk = m.qk_nope_head_dim + m.qk_rope_head_dim, v = m.v_head_dim;
  assert_rel(flops_of(g, GRAPH_ATTENTION) / S, m.layers * 2.0 * h * (qk + v) * (S + 1) / 2.0, 1e-9,
             "MLA prefill attention FLOPs/token");
  graph_free(g);
  free(job);
}

static void test_deepseek_v2_active_params(void **state) {
  (void)state;
  check_deepseek_active(deepseek_v2(), 21e9, "DeepSeek-V2 active params");
}

static void test_deepseek_v3_active_params(void **state) {
  (void)state;
  check_deepseek_active(deepseek_v3(), 37e9, "DeepSeek-V3 active params");
}

/* ---------------------------------------------------------------------------------
 * DeepSeek-V3 on its Table 3 node: TP16 × EP2 */

/* Per-chip matrix weights of DeepSeek-V3 when all E/ep local experts run: q_a, kv_a and
 * the router replicated on every TP rank, the rest sharded 1/tp, experts 1/ep. */
double v3_chip_weights(const config_model *m, int tp, int ep) {
  const double H = m->hidden, hl = (double)m->heads / tp, ql = m->q_lora_rank;
  const double lora = m->kv_lora_rank, nope = m->qk_nope_head_dim, rope = m->qk_rope_head_dim;
  const double v = m->v_head_dim, Ie = m->expert_intermediate;
  const int dense = m->first_dense_layers, moe = m->layers - dense;
  const double attn = H * ql + H * (lora + rope) + ql * hl * (nope + rope) + lora * hl * (nope + v) + hl * v * H;
  return m->layers * attn + dense * 3.0 * H * m->ffn_intermediate / tp +
         moe * (H * m->routed_experts + 3.0 * H * Ie * m->shared_experts / tp +
                (double)m->routed_experts / ep * 3.0 * H * Ie / tp) +
         H * m->vocab / tp;
}

static void test_deepseek_v3_tp16_ep2(void **state) {
  (void)state;
  const config_model m = deepseek_v3();
  const int tp = 16, ep = 2, B = 64, S = 4096;
  config_job *worst = make_job(m, tp, 1, ep, 0.0);
  config_job *balanced = make_job(m, tp, 1, ep, 1.0);
  worst->moe_experts = balanced->moe_experts = CONFIG_EXPERTS_ACTIVE_ONLY;
  graph *gw = build(worst, CONFIG_DECODE, B, S);
  graph *gb = build(balanced, CONFIG_DECODE, B, S);

  /* 64 tokens × 8 experts = 512 token-expert pairs; 128 local experts. Balanced (cf 1):
   * ceil(64·8/256) = 2 tokens per expert; worst case: all 512 pairs land on this chip's
   * 128 experts, 4 each. Requests split over the 2 EP groups: 32 tokens per chip. */
  const graph_info *in = graph_get_info(gb);
  assert_int_equal(in->chip_tokens, B / ep);
  assert_int_equal(in->moe.active_experts, m.routed_experts / ep);
  assert_int_equal(in->moe.active_tokens, 2);
  assert_int_equal(graph_get_info(gw)->moe.active_tokens, 4);

  /* Per-chip FLOPs: replicated q_a/kv_a/router over the chip's 32 tokens, sharded rest,
   * experts b·m tokens, LM head 32 rows, absorbed-MLA decode attention. */
  const double H = m.hidden, Tl = in->chip_tokens, hl = (double)m.heads / tp;
  const double Ie = m.expert_intermediate, lora = m.kv_lora_rank, rope = m.qk_rope_head_dim;
  const int moe = m.layers - m.first_dense_layers;
  const double routed_all = (double)m.routed_experts / ep * 3.0 * H * Ie / tp; /* all local */
  const double token_weights = v3_chip_weights(&m, tp, ep) - moe * routed_all;
  const double experts = moe * (double)in->moe.active_experts * in->moe.active_tokens * 3.0 * H * Ie / tp;
  const double attention = m.layers * 2.0 * hl * Tl * S * ((lora + rope) + lora);
  assert_rel(graph_get_totals(gb)->flops, 2.0 * (Tl * token_weights + experts) + attention, 0.01,
             "V3 per-chip FLOPs");
  assert_rel(graph_get_totals(gb)->weight_bytes, v3_chip_weights(&m, tp, ep) * m.dtype_bytes, 0.01,
             "V3 per-chip weight bytes");
  /* The latent cache is replicated over TP: layers·(kv_lora+rope)·d per token, for the
   * chip's B/ep requests. */
  assert_true(graph_get_totals(gb)->kv_cache_bytes ==
              (double)m.layers * (lora + rope) * m.dtype_bytes * (B / ep) * S);

  /* EP all-to-all: dispatch sends the chip's token copies, (ep-1)/ep leave the chip;
   * combine returns what the local experts computed. */
  const graph_op *dispatch = find_op(gb, "moe_layer", "moe.dispatch");
  assert_int_equal(dispatch->kind, GRAPH_ALLTOALL);
  assert_true(dispatch->ici_bytes == (ep - 1.0) / ep * Tl * m.experts_per_token * H * m.dtype_bytes);
  const graph_op *combine = find_op(gw, "moe_layer", "moe.combine");
  assert_true(combine->ici_bytes == (ep - 1.0) / ep * (m.routed_experts / ep) * 4.0 * H * m.dtype_bytes);

  /* Worst case costs more expert FLOPs than balanced, attention is identical. */
  assert_true(graph_get_totals(gw)->flops > graph_get_totals(gb)->flops);
  assert_true(find_op(gw, "moe_layer", "attn.decode_latent")->signature ==
              find_op(gb, "moe_layer", "attn.decode_latent")->signature);
  assert_true(find_op(gw, "moe_layer", "moe.expert_gate")->signature !=
              find_op(gb, "moe_layer", "moe.expert_gate")->signature);
  graph_free(gw);
  graph_free(gb);
  free(worst);
  free(balanced);
}

/* Active-only: without EP there is no all-to-all; a tiny decode batch runs only the
 * experts its tokens can reach (worst case: B·k pairs over at most B·k experts). */
static void test_moe_small_batch_and_no_ep(void **state) {
  (void)state;
  const config_model m = deepseek_v2();
  config_job *job = make_job(m, 4, 1, 1, 0.0);
  job->moe_experts = CONFIG_EXPERTS_ACTIVE_ONLY;
  graph *g = build(job, CONFIG_DECODE, 2, 1024);
  assert_false(has_op(g, "moe.dispatch"));
  assert_false(has_op(g, "moe.combine"));
  const graph_op *up = find_op(g, "moe_layer", "moe.expert_up");
  assert_int_equal(up->shape.b, 2 * m.experts_per_token);
  assert_int_equal(up->shape.m, 1);
  assert_int_equal(up->shape.n, m.expert_intermediate / 4);
  graph_free(g);
  free(job);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_llama70b_prefill_flops_weights_kv),
      cmocka_unit_test(test_llama70b_decode_flops_weights_kv),
      cmocka_unit_test(test_llama405b_tp64_replicates_kv_heads),
      cmocka_unit_test(test_deepseek_v2_active_params),
      cmocka_unit_test(test_deepseek_v3_active_params),
      cmocka_unit_test(test_deepseek_v3_tp16_ep2),
      cmocka_unit_test(test_moe_small_batch_and_no_ep),
  };
  const test_part parts[] = {{tests, sizeof tests / sizeof tests[0]},
                             {graph_structure_tests, graph_structure_ntests}};
  return test_run_parts("graph", parts, 2, NULL, NULL);
}
