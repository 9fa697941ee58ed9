/* test_graph_structure.c — MoE expert graphs, the fusion and attention options,
 * signatures, segments, bad input and the shipped jobs' graphs (the graph module's unit
 * tests, one program: test_graph.c runs these with its own; test_graph.h has what the
 * files share). */
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
#include "graph_internal.h"
#include "test_graph.h"

/* ---------------------------------------------------------------------------------
 * MoE experts as operators (all-resident, the paper's) on a small model counted by hand:
 * H 64, 3 layers (1 dense), GQA 4 heads / 2 KV heads of 16, E = 8 routed experts of
 * intermediate 32, k = 2, 1 shared expert; tp 1, ep 2, so a chip holds E/ep = 4 experts. */

static void check_segments(const graph *g);

static config_model small_moe(void) {
  return (config_model){.name = "small-moe",
                        .hidden = 64,
                        .layers = 3,
                        .vocab = 1000,
                        .dtype_bytes = 2,
                        .attention = CONFIG_ATTN_GQA,
                        .heads = 4,
                        .kv_heads = 2,
                        .head_dim = 16,
                        .ffn_intermediate = 128,
                        .moe = true,
                        .routed_experts = 8,
                        .shared_experts = 1,
                        .experts_per_token = 2,
                        .expert_intermediate = 32,
                        .first_dense_layers = 1};
}

/* The ops of the moe_layer segment whose name starts with `prefix`. */
static int count_ops(const graph *g, const char *prefix, int64_t *instances) {
  const graph_segment *seg = graph_segment_at(g, 2);
  assert_string_equal(seg->name, "moe_layer");
  int n = 0;
  *instances = 0;
  for (int i = seg->first_op; i < seg->first_op + seg->op_count; i++)
    if (!strncmp(graph_op_at(g, i)->name, prefix, strlen(prefix))) n++, *instances += graph_op_at(g, i)->count;
  return n;
}

static void test_moe_resident_experts_hand_count(void **state) {
  (void)state;
  const config_model m = small_moe();
  config_job *job = make_job(m, 1, 1, 2, 0.0);
  /* Prefill, 2 prompts of 16: T = 32 bucket tokens (16 through the chip's attention).
   * Worst case c = E/k = 4: the hot expert gets min(32, ceil(4·32·2/8)) = 32 tokens; the
   * other 7 experts share 32·2 − 32 = 32 routings, ceil(32/7) = 5 each. */
  graph *g = build(job, CONFIG_PREFILL, 2, 16);
  check_segments(g);
  const graph_segment *seg = graph_segment_at(g, 2);
  /* attention: norm, qkv, rope, kv write, flash, o_proj, residual (tp 1: no allreduce) = 7;
   * MoE: norm, router, top-k, dispatch, 4 projections × (hot, cold) = 8, combine,
   * shared gate/up/swiglu/down = 4, weighted sum, residual = 19. */
  assert_int_equal(seg->op_count, 26);
  int64_t inst;
  assert_int_equal(count_ops(g, "moe.expert", &inst), 8);
  assert_int_equal(inst, 4 * 4); /* 4 resident experts × 4 projections */
  const graph_op *hot = find_op(g, "moe_layer", "moe.expert0.gate");
  assert_int_equal(hot->count, 1);
  assert_int_equal(hot->shape.m, 32);
  assert_int_equal(hot->shape.k, 64);
  assert_int_equal(hot->shape.n, 32);
  const graph_op *cold = find_op(g, "moe_layer", "moe.expert1-3.gate");
  assert_int_equal(cold->count, 3);
  assert_int_equal(cold->multiplicity, 3 * (3 - 1)); /* 3 experts × 2 MoE layers */
  assert_int_equal(cold->shape.m, 5);
  const graph_op *down = find_op(g, "moe_layer", "moe.expert1-3.down");
  assert_int_equal(down->shape.m, 5);
  assert_int_equal(down->shape.k, 32);
  assert_int_equal(down->shape.n, 64);
  assert_int_equal(find_op(g, "moe_layer", "moe.expert1-3.swiglu")->shape.n, 32);
  /* Order: every expert's gate, then every up, SwiGLU, down. */
  assert_true(find_op(g, "moe_layer", "moe.expert1-3.gate")->id < find_op(g, "moe_layer", "moe.expert0.up")->id);
  /* The combine returns the 32 + 3·5 = 47 rows the chip's experts computed. */
  assert_true(find_op(g, "moe_layer", "moe.combine")->ici_bytes == 0.5 * 47 * 64 * 2);
  assert_true(find_op(g, "moe_layer", "moe.dispatch")->ici_bytes == 0.5 * 16 * 2 * 64 * 2);
  graph_free(g);

  /* Capacity factor 1 gives every expert the balanced ceil(32·2/8) = 8 tokens: the hot
   * and the cold ops are identical. */
  job->moe_capacity_factor = 1.0;
  g = build(job, CONFIG_PREFILL, 2, 16);
  assert_int_equal(graph_get_info(g)->moe.hot_tokens, 8);
  assert_int_equal(graph_get_info(g)->moe.cold_tokens, 8);
  assert_true(find_op(g, "moe_layer", "moe.expert0.gate")->signature ==
              find_op(g, "moe_layer", "moe.expert1-3.gate")->signature);
  graph_free(g);

  /* Decode of one request: every resident expert still runs (one padded row each) and
   * reads its weights; active-only runs the k = 2 experts the token picked. */
  job->moe_capacity_factor = 0;
  g = build(job, CONFIG_DECODE, 1, 100);
  assert_int_equal(find_op(g, "moe_layer", "moe.expert0.down")->shape.m, 1);
  assert_int_equal(find_op(g, "moe_layer", "moe.expert1-3.down")->shape.m, 1);
  double expert_weights = 0;
  for (int i = 0; i < graph_op_count(g); i++)
    if (!strncmp(graph_op_at(g, i)->name, "moe.expert", 10))
      expert_weights += graph_op_at(g, i)->weight_bytes * (double)graph_op_at(g, i)->multiplicity;
  assert_true(expert_weights == 2 /* layers */ * 4.0 * 3 * 64 * 32 * 2);
  graph_free(g);
  job->moe_experts = CONFIG_EXPERTS_ACTIVE_ONLY;
  g = build(job, CONFIG_DECODE, 1, 100);
  assert_int_equal(count_ops(g, "moe.expert", &inst), 4);
  assert_int_equal(find_op(g, "moe_layer", "moe.expert_gate")->shape.b, 2);
  graph_free(g);
  free(job);
}

/* Gate/up fusion is a model option: fused, each MLP has one [H, 2·inter] matmul. */
static void test_gate_up_fusion_option(void **state) {
  (void)state;
  config_model m = small_moe();
  config_job *split = make_job(m, 1, 1, 2, 0.0);
  m.ffn_fuse_gate_up = true;
  config_job *fused = make_job(m, 1, 1, 2, 0.0);
  graph *gs = build(split, CONFIG_PREFILL, 2, 16), *gf = build(fused, CONFIG_PREFILL, 2, 16);
  int64_t inst;
  assert_int_equal(count_ops(gf, "moe.expert", &inst), 6);
  assert_int_equal(inst, 4 * 3);
  assert_int_equal(find_op(gf, "moe_layer", "moe.expert0.gate_up")->shape.n, 64);
  assert_int_equal(find_op(gf, "dense_layer", "ffn.gate_up")->shape.n, 2 * 128);
  assert_int_equal(find_op(gs, "dense_layer", "ffn.gate")->shape.n, 128);
  assert_int_equal(find_op(gs, "dense_layer", "ffn.up")->shape.n, 128);
  assert_false(has_op(gs, "ffn.gate_up"));
  /* Same FLOPs and weights; the split MLP reads its input once more. */
  assert_true(graph_get_totals(gs)->flops == graph_get_totals(gf)->flops);
  assert_true(graph_get_totals(gs)->weight_bytes == graph_get_totals(gf)->weight_bytes);
  assert_true(graph_get_totals(gs)->hbm_read_bytes > graph_get_totals(gf)->hbm_read_bytes);
  assert_int_equal(graph_op_count(gs), graph_op_count(gf) + 1 /* dense */ + 2 /* experts */ + 1 /* shared */);
  graph_free(gs);
  graph_free(gf);
  free(split);
  free(fused);
}

/* MLA as the authors' simulator builds it ("attention_impl": "einsum", graph.h): DeepSeek-V2
 * on TP 4 (h = 128/4 = 32 heads per chip, C = kv_lora 512, R = rope 64, nope 128, v 128),
 * one request. Prefill of S tokens: q_absorb [S,128]@[128,512] per head, scores
 * [S·h, C]@[C, S] and [S·h, R]@[R, S] (each written to HBM: S·h·S·2 bytes), latent
 * [S·h, S]@[S, C] (the scores read back), v_up [S,512]@[512,128] per head; no flash
 * operator and no kv_b_proj, whose weights q_absorb and v_up hold instead. Decode: the
 * same with one query row per head. */
static void test_mla_einsum_option(void **state) {
  (void)state;
  const double S = 1024, h = 32, C = 512, R = 64, d = 2;
  config_job *flash = make_job(deepseek_v2(), 4, 1, 1, 0.0);
  config_job *eins = make_job(deepseek_v2(), 4, 1, 1, 0.0);
  eins->attention_impl = CONFIG_ATTN_IMPL_EINSUM;
  graph *gf = build(flash, CONFIG_PREFILL, 1, (int)S), *ge = build(eins, CONFIG_PREFILL, 1, (int)S);
  assert_false(has_op(ge, "attn.flash"));
  assert_false(has_op(ge, "attn.kv_b_proj"));
  const graph_op *qa = find_op(ge, "dense_layer", "attn.q_absorb");
  assert_true(qa->flops == 2 * h * S * 128 * C && qa->weight_bytes == h * 128 * C * d);
  const graph_op *sn = find_op(ge, "dense_layer", "attn.scores_nope");
  assert_true(sn->flops == 2 * S * h * C * S && sn->hbm_write_bytes == S * h * S * d);
  assert_true(sn->weight_bytes == 0 && sn->hbm_read_bytes == (S * h * C + C * S) * d);
  const graph_op *sr = find_op(ge, "dense_layer", "attn.scores_rope");
  assert_true(sr->flops == 2 * S * h * R * S && sr->hbm_write_bytes == S * h * S * d);
  const graph_op *sl = find_op(ge, "dense_layer", "attn.scores_latent");
  assert_true(sl->flops == 2 * S * h * S * C && sl->hbm_read_bytes == (S * h * S + S * C) * d);
  assert_true(sl->hbm_write_bytes == S * h * C * d);
  const graph_op *vu = find_op(ge, "dense_layer", "attn.v_up");
  assert_true(vu->flops == 2 * h * S * C * 128 && vu->weight_bytes == h * C * 128 * d);
  /* the same weights as the flash graph's kv_b_proj, every other op unchanged */
  assert_true(graph_get_totals(ge)->weight_bytes == graph_get_totals(gf)->weight_bytes);
  assert_int_equal(graph_op_count(ge), graph_op_count(gf) + 2 * 3 /* 5 ops for 2, in both layer kinds */);
  graph_free(gf);
  graph_free(ge);
  graph *gd = build(eins, CONFIG_DECODE, 1, (int)S);
  const graph_op *dn = find_op(gd, "dense_layer", "attn.scores_nope");
  assert_true(dn->shape.m == h && dn->shape.k == C && dn->shape.n == S && dn->hbm_write_bytes == h * S * d);
  assert_false(has_op(gd, "attn.decode_latent"));
  graph_free(gd);
  free(flash);
  free(eins);
}

/* The authors' simulator's collectives ("ici_model": "neusim", graph.h; graph_ici.c).
 * Axis splits (smallest prime factors first, the rest onto the smallest axis): 16 on 3
 * axes = 4·2·2, 8 on 2 = 4·2, 4 on 3 = 2·2 (two factors, two axes), 32 on 3 = 4·4·2.
 * Staged volumes over 4·2·2: a reduce-scatter of E sends E + E/4 + E/8 = 1.375 E, an
 * all-gather of E per chip sends 16E + 4E + 2E = 22 E.
 * DeepSeek-V3 on TP 16 / EP 2 (the simulator: attention TP on all 3 axes; EP takes one
 * of them, so expert TP = 16/2 = 8 runs on 2 axes, 4·2), prefill of S = 1024 tokens, H =
 * 7168: attn.allgather_in sends 22 · S · H · 2 bytes over 6 links; the latent (FP8) 22 ·
 * S · 512, the rope key (FP32) 22 · S · 64 · 4; the reduce-scatter of [S, 16 H] 1.375 ·
 * S · H · 2; ffn.allgather of one request's [1, H] over 4·2: 8H + 2H = 10 H · 2 bytes;
 * ffn.reduce_scatter S·H/8 (1 + 1/4) · 2 bytes. No TP allreduce is left; the MoE
 * all-to-alls keep the ring model. */
static void test_neusim_collectives(void **state) {
  (void)state;
  int64_t d[GRAPH_ICI_MAX_AXES];
  assert_int_equal(graph_ici_split(16, 3, d), 3);
  assert_true(d[0] == 4 && d[1] == 2 && d[2] == 2);
  assert_true(graph_ici_split(8, 2, d) == 2 && d[0] == 4 && d[1] == 2);
  assert_true(graph_ici_split(4, 3, d) == 2 && d[0] == 2 && d[1] == 2);
  assert_true(graph_ici_split(32, 3, d) == 3 && d[0] == 4 && d[1] == 4 && d[2] == 2);
  assert_int_equal(graph_ici_split(16, 0, d), 0);
  assert_int_equal(graph_ici_split(1, 3, d), 0);
  const int64_t t16[] = {4, 2, 2};
  assert_true(graph_ici_rs_elems(1024, t16, 3) == 1024 + 256 + 128);
  assert_true(graph_ici_ag_elems(1024, t16, 3) == 22 * 1024);
  const double S = 1024, H = 7168;
  config_job *job = make_job(deepseek_v3(), 16, 1, 2, 0.0);
  job->chip.ici_links = 6;
  job->ici_model = CONFIG_ICI_NEUSIM;
  graph *g = build(job, CONFIG_PREFILL, 1, (int)S);
  assert_false(has_op(g, "attn.allreduce"));
  assert_false(has_op(g, "ffn.allreduce"));
  const graph_op *in = find_op(g, "moe_layer", "attn.allgather_in");
  assert_true(in->ici_bytes == 22 * S * H * 2 && in->shape.ranks == 16);
  assert_true(in->shape.ici_links == 6 && in->shape.ici_overlap == 1);
  assert_true(in->hbm_read_bytes == S * H * 2 && in->hbm_write_bytes == 16 * S * H * 2);
  assert_true(find_op(g, "moe_layer", "attn.allgather_kv")->ici_bytes == 22 * S * 512);
  assert_true(find_op(g, "moe_layer", "attn.allgather_k_pe")->ici_bytes == 22 * S * 64 * 4);
  assert_true(find_op(g, "moe_layer", "attn.reduce_scatter")->ici_bytes == 1.375 * S * H * 2);
  assert_true(find_op(g, "moe_layer", "attn.allgather_out")->signature == in->signature);
  const graph_op *fa = find_op(g, "dense_layer", "ffn.allgather");
  assert_true(fa->ici_bytes == 10 * H * 2 && fa->shape.ranks == 8 && fa->shape.ici_links == 4);
  assert_true(find_op(g, "moe_layer", "ffn.reduce_scatter")->ici_bytes == S * H / 8 * 1.25 * 2);
  const graph_op *a2a = find_op(g, "moe_layer", "moe.dispatch");
  assert_true(a2a->shape.ici_links == 0 && a2a->shape.ici_overlap == 0);
  graph_free(g);
  /* The default keeps the ring allreduces, whose signatures do not hash the new fields. */
  job->ici_model = CONFIG_ICI_RING;
  g = build(job, CONFIG_PREFILL, 1, (int)S);
  assert_true(has_op(g, "attn.allreduce") && !has_op(g, "attn.allgather_in"));
  assert_true(find_op(g, "moe_layer", "attn.allreduce")->shape.ici_links == 0);
  graph_free(g);
  free(job);
}

/* ---------------------------------------------------------------------------------
 * Signatures, segments, pipeline stages, errors */

static void test_signatures(void **state) {
  (void)state;
  config_job *job = make_job(llama3_70b(), 4, 1, 1, 0.0);
  graph *a = build(job, CONFIG_DECODE, 8, 4096);
  graph *b = build(job, CONFIG_DECODE, 8, 8192);
  /* Identical ops share a signature regardless of name or place. */
  assert_true(find_op(a, "dense_layer", "attn.norm")->signature ==
              find_op(a, "dense_layer", "ffn.norm")->signature);
  assert_true(find_op(a, "dense_layer", "attn.allreduce")->signature ==
              find_op(a, "dense_layer", "ffn.allreduce")->signature);
  /* A decode bucket with a longer KV: only attention changes shape. */
  assert_true(find_op(a, "dense_layer", "attn.qkv_proj")->signature ==
              find_op(b, "dense_layer", "attn.qkv_proj")->signature);
  assert_true(find_op(a, "dense_layer", "attn.decode")->signature !=
              find_op(b, "dense_layer", "attn.decode")->signature);
  /* Different projections differ. */
  assert_true(find_op(a, "dense_layer", "attn.qkv_proj")->signature !=
              find_op(a, "dense_layer", "attn.o_proj")->signature);
  /* The parallel context is part of the signature. */
  config_job *job8 = make_job(llama3_70b(), 8, 1, 1, 0.0);
  graph *c = build(job8, CONFIG_DECODE, 8, 4096);
  assert_true(find_op(a, "dense_layer", "attn.norm")->signature !=
              find_op(c, "dense_layer", "attn.norm")->signature);
  graph_free(a);
  graph_free(b);
  graph_free(c);
  free(job);
  free(job8);
}

static void check_segments(const graph *g) {
  int next = 0;
  double flops = 0.0, hbm = 0.0;
  for (int s = 0; s < graph_segment_count(g); s++) {
    const graph_segment *seg = graph_segment_at(g, s);
    assert_int_equal(seg->first_op, next);
    assert_true(seg->op_count > 0 && seg->repeat >= 1);
    for (int i = seg->first_op; i < seg->first_op + seg->op_count; i++) {
      const graph_op *op = graph_op_at(g, i);
      assert_int_equal(op->id, i);
      assert_true(op->count >= 1);
      assert_int_equal(op->multiplicity, seg->repeat * op->count);
      flops += op->flops * (double)(seg->repeat * op->count);
      hbm += (op->hbm_read_bytes + op->hbm_write_bytes) * (double)(seg->repeat * op->count);
    }
    next += seg->op_count;
  }
  assert_int_equal(next, graph_op_count(g));
  assert_null(graph_op_at(g, next));
  assert_null(graph_segment_at(g, graph_segment_count(g)));
  const graph_totals *t = graph_get_totals(g);
  assert_rel(t->flops, flops, 1e-12, "segment FLOPs");
  assert_rel(t->hbm_read_bytes + t->hbm_write_bytes, hbm, 1e-12, "segment HBM bytes");
}

static void test_segments(void **state) {
  (void)state;
  config_job *llama = make_job(llama3_70b(), 4, 1, 1, 0.0);
  graph *g = build(llama, CONFIG_PREFILL, 2, 1024);
  check_segments(g);
  assert_int_equal(graph_segment_count(g), 3);
  assert_string_equal(graph_segment_at(g, 0)->name, "embed");
  assert_int_equal(graph_segment_at(g, 1)->repeat, 80);
  assert_string_equal(graph_segment_at(g, 2)->name, "head");
  graph_free(g);

  config_job *v3 = make_job(deepseek_v3(), 16, 1, 2, 0.0);
  g = build(v3, CONFIG_PREFILL, 2, 1024);
  check_segments(g);
  assert_int_equal(graph_segment_count(g), 4);
  assert_string_equal(graph_segment_at(g, 1)->name, "dense_layer");
  assert_int_equal(graph_segment_at(g, 1)->repeat, 3);
  assert_string_equal(graph_segment_at(g, 2)->name, "moe_layer");
  assert_int_equal(graph_segment_at(g, 2)->repeat, 61 - 3);
  graph_free(g);

  /* PP 2: a stage holds half of the layers and half of the KV cache. */
  config_job *pp = make_job(llama3_70b(), 4, 2, 1, 0.0);
  g = build(pp, CONFIG_DECODE, 4, 2048);
  graph *full = build(llama, CONFIG_DECODE, 4, 2048);
  check_segments(g);
  assert_int_equal(graph_segment_at(g, 1)->repeat, 40);
  assert_true(graph_get_totals(g)->kv_cache_bytes * 2 == graph_get_totals(full)->kv_cache_bytes);
  graph_free(g);
  graph_free(full);
  free(llama);
  free(v3);
  free(pp);
}

static void test_bad_input(void **state) {
  (void)state;
  config_job *job = make_job(llama3_70b(), 4, 1, 1, 0.0);
  static int sentinel;
  graph *g = (graph *)&sentinel; /* graph_build must reset *out to NULL on failure */
  enpu_err err = {0};
  assert_int_equal(graph_build(job, CONFIG_PREFILL, 0, 128, &g, &err), ENPU_ERR_RANGE);
  assert_null(g);
  assert_non_null(strstr(err.msg, "batch"));
  assert_int_equal(graph_build(job, CONFIG_DECODE, 1, 0, &g, &err), ENPU_ERR_RANGE);
  assert_non_null(strstr(err.msg, "seq"));
  job->phase[CONFIG_DECODE].enabled = false;
  assert_int_equal(graph_build(job, CONFIG_DECODE, 1, 128, &g, &err), ENPU_ERR_INVALID);
  job->phase[CONFIG_PREFILL].parallel.tp = 3; /* 64 heads */
  assert_int_equal(graph_build(job, CONFIG_PREFILL, 1, 128, &g, &err), ENPU_ERR_INVALID);
  assert_non_null(strstr(err.msg, "tp 3"));
  free(job);
  config_job *moe = make_job(deepseek_v2(), 4, 1, 3, 0.0); /* 160 experts */
  assert_int_equal(graph_build(moe, CONFIG_PREFILL, 1, 128, &g, &err), ENPU_ERR_INVALID);
  assert_non_null(strstr(err.msg, "ep 3"));
  free(moe);
  graph_free(NULL);
}

/* ---------------------------------------------------------------------------------
 * The shipped job files (jobs/NAME.json), loaded by the config module */

static config_job *load_job(const char *name) {
  char path[CONFIG_PATH_LEN];
  snprintf(path, sizeof path, "%s/jobs/%s.json", ENPU_SOURCE_DIR, name);
  config_job *job = NULL;
  enpu_err err = {0};
  if (config_job_load(path, &job, &err) != 0) fail_msg("loading %s: %s", path, err.msg);
  return job;
}

static void test_shipped_llama70b(void **state) {
  (void)state;
  config_job *job = load_job("llama3-70b");
  const config_model *m = &job->model;
  const int tp = job->phase[CONFIG_PREFILL].parallel.tp, B = 1, S = 4096;
  graph *g = build(job, CONFIG_PREFILL, B, S);
  const double H = m->hidden, V = m->vocab, T = (double)B * S;
  /* params_active counts the LM head for every token; prefill computes it for B rows. */
  const double attention = m->layers * 2.0 * m->heads * 2.0 * m->head_dim * (S + 1) / 2.0;
  assert_rel(graph_get_totals(g)->flops * tp / T, 2.0 * (m->params_active - H * V * (1.0 - B / T)) + attention,
             0.02, "shipped llama70b FLOPs/token");
  assert_rel(graph_get_totals(g)->weight_bytes, (m->params_total - H * V) * m->dtype_bytes / tp, 0.02,
             "shipped llama70b weight bytes per chip");
  assert_true(graph_get_info(g)->kv_bytes_per_token == m->kv_bytes_per_token / tp);
  graph_free(g);
  config_job_free(job);
}

/* The bucket's resident KV cache with sliding-window layers: a window layer keeps the
 * window's tokens, the others every token of the bucket (the capacity check's rule). */
static void test_kv_cache_window_layers(void **state) {
  (void)state;
  config_job *job = load_job("llama3-70b");
  job->model.window_layers = 60, job->model.window_size = 4096;
  const int tp = job->phase[CONFIG_DECODE].parallel.tp, B = 8, S = 16384;
  graph *g = build(job, CONFIG_DECODE, B, S);
  assert_rel(graph_get_totals(g)->kv_cache_bytes, B * config_model_kv_bytes(&job->model, S) / tp, 1e-12,
             "windowed KV per chip");
  graph_free(g);
  g = build(job, CONFIG_DECODE, B, 4096); /* within the window: every layer keeps all */
  assert_rel(graph_get_totals(g)->kv_cache_bytes, B * 4096.0 * job->model.kv_bytes_per_token / tp, 1e-12,
             "KV per chip within the window");
  graph_free(g);
  config_job_free(job);
}

static void test_shipped_deepseek_v3(void **state) {
  (void)state;
  config_job *job = load_job("deepseek-v3-671b");
  const config_model *m = &job->model;
  const config_parallel *p = &job->phase[CONFIG_DECODE].parallel;
  graph *g = build(job, CONFIG_DECODE, 256, 4096);
  assert_rel(graph_get_totals(g)->weight_bytes, v3_chip_weights(m, p->tp, p->ep) * m->dtype_bytes, 0.01,
             "shipped V3 weight bytes per chip");
  assert_true(graph_get_info(g)->kv_bytes_per_token == m->kv_bytes_per_token);
  graph_free(g);

  /* The same model on one chip at capacity factor 1: active params from the graph. */
  config_job one = *job; /* shallow copy: only scalars change, never freed */
  one.phase[CONFIG_DECODE].parallel = (config_parallel){.dp = 1, .tp = 1, .pp = 1, .ep = 1};
  one.moe_capacity_factor = 1.0;
  one.moe_experts = CONFIG_EXPERTS_ACTIVE_ONLY;
  g = build(&one, CONFIG_DECODE, 1, 4096);
  const double active = (flops_of(g, GRAPH_NKIND) - flops_of(g, GRAPH_ATTENTION)) / 2.0;
  assert_rel(active, 37e9, 0.03, "shipped V3 active params");
  assert_rel(active, m->params_active, 0.01, "shipped V3 active params vs config");
  graph_free(g);
  config_job_free(job);
}

TEST_PART(graph_structure, cmocka_unit_test(test_moe_resident_experts_hand_count),
          cmocka_unit_test(test_gate_up_fusion_option), cmocka_unit_test(test_mla_einsum_option),
          cmocka_unit_test(test_neusim_collectives), cmocka_unit_test(test_signatures),
          cmocka_unit_test(test_segments), cmocka_unit_test(test_bad_input),
          cmocka_unit_test(test_shipped_llama70b), cmocka_unit_test(test_kv_cache_window_layers),
          cmocka_unit_test(test_shipped_deepseek_v3));
