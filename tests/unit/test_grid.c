/* test_grid.c — the §3.4 bucket rule, explicit axes, padding and the per-chip capacity
 * check, on the shipped model files (jobs/models/) and hand-built jobs, so the grid is
 * tested on the values the farm uses and independently of the job loader. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdlib.h>
#include <math.h>
#include <string.h>

#include "grid.h"
#include "test_models.h"

/* ---------------------------------------------------------------------------------
 * Inputs: the shipped model files (Llama-3-70B: GQA, SwiGLU, untied embeddings;
 * DeepSeek-V2: MLA and MoE), as every command loads them */

static void llama3_70b(config_model *m) { *m = test_shipped_model("llama3-70b"); }

static void deepseek_v2(config_model *m) { *m = test_shipped_model("deepseek-v2-236b"); }

static const double tpuv5p_hbm_bytes = 95e9;

static config_axis rule_axis(int max) {
  config_axis a = {.rule = true, .rule_max = max};
  return a;
}

/* A heap job (config_job is large) with both phases on a dp1/tp4/pp1/ep1 node, the
 * paper's batch rule to 256 and seq rule to 128K, 4 slacks and 3 policies. */
static config_job *make_job(void) {
  config_job *job = calloc(1, sizeof *job);
  assert_non_null(job);
  strcpy(job->name, "test");
  llama3_70b(&job->model);
  job->chip.hbm_bytes = tpuv5p_hbm_bytes;
  for (int ph = 0; ph < CONFIG_NPHASE; ph++) {
    job->phase[ph].enabled = true;
    job->phase[ph].batch = rule_axis(256);
    job->phase[ph].seq = rule_axis(131072);
    job->phase[ph].parallel = (config_parallel){.dp = 1, .tp = 4, .pp = 1, .ep = 1};
    job->phase[ph].chips = 4;
  }
  job->slack_count = 4;
  job->policy_count = 3;
  return job;
}

static void expand_rule(grid_axis_kind kind, int max, int **values, int *count) {
  config_axis a = rule_axis(max);
  enpu_err err = {0};
  assert_int_equal(grid_axis_expand(&a, kind, values, count, &err), 0);
  assert_non_null(*values);
}

/* ---------------------------------------------------------------------------------
 * Axis expansion */

static void test_batch_rule_paper(void **state) {
  (void)state;
  int *v, n;
  expand_rule(GRID_AXIS_BATCH, 256, &v, &n);
  /* 1, 2, 4, 8, 16 and the 15 multiples of 16 from 32 to 256. */
  assert_int_equal(n, 20);
  const int head[] = {1, 2, 4, 8, 16, 32, 48, 64};
  for (int i = 0; i < 8; i++) assert_int_equal(v[i], head[i]);
  for (int i = 5; i < n; i++) assert_int_equal(v[i], 16 * (i - 3));
  assert_int_equal(v[n - 1], 256);
  free(v);
}

/* In (2^k, 2^(k+1)] with 2^k >= 1024 the step is 2^k / 4 (256 to 2048, 512 to 4096...). */
static void assert_seq_rule_steps(const int *v, int n) {
  for (int i = 0; i < 8; i++) assert_int_equal(v[i], 128 * (i + 1));
  for (int i = 8; i < n; i++) {
    int below = 1024;
    while (below * 2 < v[i]) below *= 2;
    assert_int_equal(v[i] - v[i - 1], below / 4);
  }
}

static void test_seq_rule_counts(void **state) {
  (void)state;
  const int max[] = {131072, 524288, 1048576};
  const int expect[] = {36, 44, 48}; /* paper §3.4: the literal rule */
  for (int t = 0; t < 3; t++) {
    int *v, n;
    expand_rule(GRID_AXIS_SEQ, max[t], &v, &n);
    assert_int_equal(n, expect[t]);
    assert_int_equal(v[n - 1], max[t]);
    assert_seq_rule_steps(v, n);
    free(v);
  }
}

static void test_seq_rule_boundaries(void **state) {
  (void)state;
  int *v, n;
  expand_rule(GRID_AXIS_SEQ, 8192, &v, &n);
  /* 8 + 4 + 4 + 4 */
  assert_int_equal(n, 20);
  assert_int_equal(v[0], 128);
  assert_int_equal(v[7], 1024);
  assert_int_equal(v[8], 1280);
  assert_int_equal(v[11], 2048);
  assert_int_equal(v[12], 2560);
  assert_int_equal(v[15], 4096);
  assert_int_equal(v[16], 5120);
  assert_int_equal(v[19], 8192);
  free(v);
}

static void test_rule_max_between_values_is_covered(void **state) {
  (void)state;
  int *v, n;
  expand_rule(GRID_AXIS_SEQ, 1000, &v, &n);
  assert_int_equal(n, 8); /* 128..896, then 1000 */
  assert_int_equal(v[6], 896);
  assert_int_equal(v[7], 1000);
  free(v);
  expand_rule(GRID_AXIS_SEQ, 64, &v, &n);
  assert_int_equal(n, 1);
  assert_int_equal(v[0], 64);
  free(v);
  expand_rule(GRID_AXIS_BATCH, 100, &v, &n);
  assert_int_equal(n, 11); /* 1 2 4 8 16 32 48 64 80 96 100 */
  assert_int_equal(v[9], 96);
  assert_int_equal(v[10], 100);
  free(v);
  expand_rule(GRID_AXIS_BATCH, 1, &v, &n);
  assert_int_equal(n, 1);
  assert_int_equal(v[0], 1);
  free(v);
}

static void test_explicit_lists_kept(void **state) {
  (void)state;
  int list[] = {3, 7, 1000, 5000};
  config_axis a = {.rule = false, .values = list, .count = 4};
  int *v, n;
  enpu_err err = {0};
  assert_int_equal(grid_axis_expand(&a, GRID_AXIS_SEQ, &v, &n, &err), 0);
  assert_int_equal(n, 4);
  assert_memory_equal(v, list, sizeof list);
  assert_ptr_not_equal(v, list); /* a copy: the grid does not borrow the job's arrays */
  free(v);
}

static void test_bad_axes_rejected(void **state) {
  (void)state;
  int *v = (int *)&v, n = -1;
  enpu_err err = {0};
  int unsorted[] = {1, 4, 4};
  config_axis a = {.rule = false, .values = unsorted, .count = 3};
  assert_int_equal(grid_axis_expand(&a, GRID_AXIS_BATCH, &v, &n, &err), ENPU_ERR_INVALID);
  assert_null(v);
  assert_non_null(strstr(err.msg, "strictly increasing"));
  int zero[] = {0, 4};
  a = (config_axis){.rule = false, .values = zero, .count = 2};
  assert_int_equal(grid_axis_expand(&a, GRID_AXIS_BATCH, &v, &n, &err), ENPU_ERR_INVALID);
  assert_non_null(strstr(err.msg, "got 0"));
  a = (config_axis){.rule = false, .values = NULL, .count = 0};
  assert_int_equal(grid_axis_expand(&a, GRID_AXIS_SEQ, &v, &n, &err), ENPU_ERR_INVALID);
  a = rule_axis(0);
  assert_int_equal(grid_axis_expand(&a, GRID_AXIS_SEQ, &v, &n, &err), ENPU_ERR_INVALID);
  assert_non_null(strstr(err.msg, "seq"));
}

/* ---------------------------------------------------------------------------------
 * Capacity */

static void test_llama_small_bucket_fits_tp4(void **state) {
  (void)state;
  config_job *job = make_job();
  grid_memory mem;
  enpu_err err = {0};
  assert_int_equal(grid_memory_per_chip(job, CONFIG_PREFILL, 1, 1024, &mem, &err), 0);
  /* 70.55 B bf16 parameters over 4 chips: about 35.3 GB each. */
  assert_true(job->model.params_total > 70.4e9 && job->model.params_total < 70.7e9);
  assert_float_equal(mem.weights_bytes, job->model.params_total * 2 / 4, 1.0);
  assert_float_equal(mem.hbm_bytes, tpuv5p_hbm_bytes, 0.0);
  assert_true(mem.activation_bytes > 0);
  assert_true(grid_memory_used_bytes(&mem) < tpuv5p_hbm_bytes);
  /* The same model does not fit one chip at all. */
  job->phase[CONFIG_PREFILL].parallel.tp = 1;
  assert_int_equal(grid_memory_per_chip(job, CONFIG_PREFILL, 1, 1024, &mem, &err), 0);
  assert_true(grid_memory_used_bytes(&mem) > tpuv5p_hbm_bytes);
  free(job);
}

static void test_huge_bucket_infeasible(void **state) {
  (void)state;
  config_job *job = make_job();
  grid_memory mem;
  enpu_err err = {0};
  /* Decode batch 256 at 128K: 33.5 M tokens × 80 KB of KV per chip ≈ 2.7 TB. */
  assert_int_equal(grid_memory_per_chip(job, CONFIG_DECODE, 256, 131072, &mem, &err), 0);
  assert_true(mem.kv_bytes > 2e12);
  assert_true(grid_memory_used_bytes(&mem) > mem.hbm_bytes);
  free(job);
}

static void test_kv_formula_gqa(void **state) {
  (void)state;
  config_job *job = make_job();
  grid_memory mem;
  enpu_err err = {0};
  /* K and V, 80 layers, 8 KV heads of 128 in bf16 = 327,680 B per token. */
  assert_float_equal(job->model.kv_bytes_per_token, 327680.0, 0.0);
  assert_int_equal(grid_memory_per_chip(job, CONFIG_DECODE, 3, 4096, &mem, &err), 0);
  assert_float_equal(mem.kv_bytes, 3.0 * 4096 * 327680 / 4, 0.5); /* 4 of 8 heads */
  /* TP 16 > 8 KV heads: each head is replicated twice, so only 8 shards. */
  job->phase[CONFIG_DECODE].parallel.tp = 16;
  assert_int_equal(grid_memory_per_chip(job, CONFIG_DECODE, 3, 4096, &mem, &err), 0);
  assert_float_equal(mem.kv_bytes, 3.0 * 4096 * 327680 / 8, 0.5);
  /* Pipeline stages split the layers and so the cache. */
  job->phase[CONFIG_DECODE].parallel = (config_parallel){.dp = 1, .tp = 2, .pp = 2, .ep = 1};
  assert_int_equal(grid_memory_per_chip(job, CONFIG_DECODE, 3, 4096, &mem, &err), 0);
  assert_float_equal(mem.kv_bytes, 3.0 * 4096 * 327680 / (2 * 2), 0.5);
  assert_float_equal(mem.weights_bytes, job->model.params_total * 2 / 4, 1.0);
  free(job);
}

/* Sliding-window layers keep only the window's keys and values: Llama-3-70B's shape with
 * 60 of its 80 layers limited to a 4,096-token window (as Gemma's or Mistral v0.1's
 * local layers are), at 32,768 tokens. */
static void test_kv_window_layers(void **state) {
  (void)state;
  config_job *job = make_job();
  job->model.window_layers = 60, job->model.window_size = 4096;
  const double per_layer_token = 327680.0 / 80; /* 4,096 B */
  assert_float_equal(config_model_kv_bytes(&job->model, 4096), 4096 * 327680.0, 0.0);
  assert_float_equal(config_model_kv_bytes(&job->model, 32768), per_layer_token * (20.0 * 32768 + 60.0 * 4096),
                     0.0); /* 2.5 GB, not 10.7 */
  grid_memory mem;
  enpu_err err = {0};
  assert_int_equal(grid_memory_per_chip(job, CONFIG_DECODE, 3, 32768, &mem, &err), 0);
  assert_float_equal(mem.kv_bytes, 3.0 * per_layer_token * (20.0 * 32768 + 60.0 * 4096) / 4, 0.5);
  free(job);
}

static void test_kv_and_weights_mla_moe(void **state) {
  (void)state;
  config_job *job = make_job();
  deepseek_v2(&job->model);
  job->phase[CONFIG_DECODE].parallel = (config_parallel){.dp = 1, .tp = 4, .pp = 1, .ep = 2};
  grid_memory mem;
  enpu_err err = {0};
  assert_int_equal(grid_memory_per_chip(job, CONFIG_DECODE, 8, 2048, &mem, &err), 0);
  /* Latent 512 + rope key 64, 60 layers, bf16 = 69,120 B per token, on every TP rank;
   * the 2 EP groups split the 8 requests. */
  assert_float_equal(mem.kv_bytes, 4.0 * 2048 * 69120, 0.5);
  /* An odd batch: one group holds the extra request. */
  assert_int_equal(grid_memory_per_chip(job, CONFIG_DECODE, 3, 2048, &mem, &err), 0);
  assert_float_equal(mem.kv_bytes, 2.0 * 2048 * 69120, 0.5);
  /* The dense part (about 16 B) over TP 4; the routed experts (about 220 B) over EP 2 × TP 4. */
  const config_model *m = &job->model;
  assert_float_equal(mem.weights_bytes, (m->params_total - m->params_routed) * 2 / 4 + m->params_routed * 2 / 8,
                     1.0);
  free(job);
}

static void test_activations(void **state) {
  (void)state;
  config_job *job = make_job();
  grid_memory a, b;
  enpu_err err = {0};
  /* Decode processes one token per request: its working set does not grow with seq. */
  assert_int_equal(grid_memory_per_chip(job, CONFIG_DECODE, 16, 1024, &a, &err), 0);
  assert_int_equal(grid_memory_per_chip(job, CONFIG_DECODE, 16, 131072, &b, &err), 0);
  assert_float_equal(a.activation_bytes, b.activation_bytes, 0.0);
  /* Prefill of 1 × 4096 tokens: 3 hidden buffers (4096·8192·2·3 = 201 MB) plus the
   * gate+up intermediate 2·4096·28672/4·2 = 117 MB, the widest one on TP 4. */
  assert_int_equal(grid_memory_per_chip(job, CONFIG_PREFILL, 1, 4096, &a, &err), 0);
  double hidden = 4096.0 * 8192 * 2 * GRID_ACT_HIDDEN_BUFFERS;
  double ffn = 2.0 * 4096 * 28672 / 4 * 2;
  assert_float_equal(a.activation_bytes, hidden + ffn, 1.0);
  /* DeepSeek-V2 on EP 2 × TP 4, one 4096-token prompt: the routed experts' working set
   * is the widest; per token-slot it holds the dispatched input and the output awaiting
   * the combine (2 × 5120) plus gate+up (2 × 1536 / 4) = 11008 elements. */
  deepseek_v2(&job->model);
  job->phase[CONFIG_PREFILL].parallel.ep = 2;
  double t = 4096, hidden_bufs = t * 5120 * 2 * GRID_ACT_HIDDEN_BUFFERS;
  /* All-resident, worst case (factor 0 = E/k): a rank holds 80 experts; the hot one gets
   * every token (4096), the 79 others ceil((4096·6 − 4096) / 159) = 129 each. */
  assert_int_equal(grid_memory_per_chip(job, CONFIG_PREFILL, 1, 4096, &a, &err), 0);
  assert_float_equal(a.activation_bytes, hidden_bufs + (4096.0 + 79 * 129) * 11008 * 2, 1.0);
  /* Capacity factor 1: every expert the balanced ceil(4096·6/160) = 154 tokens. */
  job->moe_capacity_factor = 1.0;
  assert_int_equal(grid_memory_per_chip(job, CONFIG_PREFILL, 1, 4096, &b, &err), 0);
  assert_float_equal(b.activation_bytes, hidden_bufs + 80.0 * 154 * 11008 * 2, 1.0);
  /* Active-only, worst case: all 6 routes of every token may land on the rank's 80
   * experts, ceil(6·4096/80) = 308 tokens each. */
  job->moe_capacity_factor = 0;
  job->moe_experts = CONFIG_EXPERTS_ACTIVE_ONLY;
  assert_int_equal(grid_memory_per_chip(job, CONFIG_PREFILL, 1, 4096, &b, &err), 0);
  assert_float_equal(b.activation_bytes, hidden_bufs + 80.0 * 308 * 11008 * 2, 1.0);
  free(job);
}

/* Capacity policies on DeepSeek-V2's 4-chip TP4 node (117.9 GB of weights per chip):
 * enforce refuses, ignore compiles as is, offload streams exactly what does not fit. */
static void test_capacity_policies(void **state) {
  (void)state;
  config_job *job = make_job();
  deepseek_v2(&job->model);
  grid_memory mem;
  enpu_err err = {0};
  char note[256];
  assert_int_equal(grid_memory_per_chip(job, CONFIG_DECODE, 1, 1024, &mem, &err), 0);
  assert_float_equal(mem.weights_bytes, job->model.params_total * 2 / 4, 1.0); /* 236 B over TP 4 */
  assert_true(grid_memory_used_bytes(&mem) > mem.hbm_bytes);
  assert_int_equal(grid_memory_status(&mem), GRID_INFEASIBLE_CAPACITY);
  assert_true(mem.offload_bytes == 0);
  grid_memory_note(&mem, note, sizeof note);
  assert_non_null(strstr(note, "needs 117.9 GB per chip (weights 117.9, KV 0.1, activations 0.0)"));

  job->capacity = CONFIG_CAPACITY_IGNORE;
  assert_int_equal(grid_memory_per_chip(job, CONFIG_DECODE, 1, 1024, &mem, &err), 0);
  assert_int_equal(grid_memory_status(&mem), GRID_FEASIBLE);
  assert_true(mem.offload_bytes == 0);
  grid_memory_note(&mem, note, sizeof note);
  assert_non_null(strstr(note, "capacity ignored: needs 117.9"));

  /* Offload: the 59 MoE layers stream their routed experts' share s into one s-byte
   * buffer; what stays resident is what fits beside KV, activations and the buffer. */
  job->capacity = CONFIG_CAPACITY_OFFLOAD;
  assert_int_equal(grid_memory_per_chip(job, CONFIG_DECODE, 1, 1024, &mem, &err), 0);
  assert_int_equal(grid_memory_status(&mem), GRID_FEASIBLE);
  assert_int_equal(mem.offload_layers, 59);
  const double fits = mem.hbm_bytes - mem.kv_bytes - mem.activation_bytes - mem.offload_layer_bytes;
  /* In double (cmocka's assert_float_equal compares floats, 2 KiB apart at 23 GB). */
  assert_true(fabs(mem.offload_bytes - (mem.weights_bytes - fits)) < 1.0);
  assert_true(fabs(mem.offload_bytes - 59 * mem.offload_layer_bytes) < 1.0);
  assert_true(mem.offload_layer_bytes <= 160 * 3.0 * 5120 * 1536 / 4 * 2); /* one layer's experts */
  grid_memory_note(&mem, note, sizeof note);
  assert_non_null(strstr(note, "streams"));
  /* A bucket whose KV cache alone overflows cannot be saved by streaming weights. */
  assert_int_equal(grid_memory_per_chip(job, CONFIG_DECODE, 256, 131072, &mem, &err), 0);
  assert_int_equal(grid_memory_status(&mem), GRID_INFEASIBLE_CAPACITY);
  assert_true(mem.offload_bytes == 0);
  /* A bucket that fits streams nothing. */
  job->chip.hbm_bytes = 200e9;
  assert_int_equal(grid_memory_per_chip(job, CONFIG_DECODE, 1, 1024, &mem, &err), 0);
  assert_true(mem.offload_bytes == 0);
  grid_memory_note(&mem, note, sizeof note);
  assert_string_equal(note, "");

  /* A dense model streams every layer's weights (80 layers of Llama-3-70B on TP4). */
  llama3_70b(&job->model);
  job->chip.hbm_bytes = 20e9;
  assert_int_equal(grid_memory_per_chip(job, CONFIG_DECODE, 1, 1024, &mem, &err), 0);
  assert_int_equal(mem.offload_layers, 80);
  assert_float_equal(mem.offload_bytes,
                     mem.weights_bytes - (20e9 - mem.kv_bytes - mem.activation_bytes - mem.offload_layer_bytes),
                     1e-3);
  free(job);
}

/* MoE load (grid_moe_load_of): capacity factor 1 gives every expert the balanced
 * ceil(T·k/E); the worst case (E/k) one expert every token. */
static void test_moe_load(void **state) {
  (void)state;
  config_job *job = make_job();
  deepseek_v2(&job->model);
  grid_moe_load l;
  enpu_err err = {0};
  job->moe_capacity_factor = 1.0;
  assert_int_equal(grid_moe_load_of(job, CONFIG_PREFILL, 2, 1000, &l, &err), 0);
  assert_int_equal(l.tokens, 2000);
  assert_int_equal(l.experts_local, 160);
  assert_int_equal(l.hot_tokens, 75); /* ceil(2000·6/160) */
  assert_int_equal(l.cold_tokens, 75);
  assert_int_equal(l.cold_experts, 159);
  assert_true(grid_capacity_factor(job) == 1.0);
  job->moe_capacity_factor = 0; /* worst: E/k = 160/6 */
  assert_true(fabs(grid_capacity_factor(job) - 160.0 / 6) < 1e-12);
  assert_int_equal(grid_moe_load_of(job, CONFIG_PREFILL, 2, 1000, &l, &err), 0);
  assert_int_equal(l.hot_tokens, 2000);
  assert_int_equal(l.cold_tokens, 63); /* ceil((12000 - 2000) / 159) */
  assert_int_equal(l.token_slots, 2000 + 159 * 63);
  /* Decode of one request: every resident expert still gets a (padded) row. */
  assert_int_equal(grid_moe_load_of(job, CONFIG_DECODE, 1, 1000, &l, &err), 0);
  assert_int_equal(l.hot_tokens, 1);
  assert_int_equal(l.cold_tokens, 1);
  assert_int_equal(l.active_experts, 6);
  assert_int_equal(l.active_tokens, 1);
  free(job);
}

static void test_memory_rejects_bad_input(void **state) {
  (void)state;
  config_job *job = make_job();
  grid_memory mem;
  enpu_err err = {0};
  assert_int_equal(grid_memory_per_chip(job, CONFIG_DECODE, 0, 128, &mem, &err), ENPU_ERR_INVALID);
  job->phase[CONFIG_DECODE].parallel.tp = 0;
  assert_int_equal(grid_memory_per_chip(job, CONFIG_DECODE, 1, 128, &mem, &err), ENPU_ERR_INVALID);
  assert_non_null(strstr(err.msg, "tp 0"));
  free(job);
}

/* ---------------------------------------------------------------------------------
 * The grid */

static void test_grid_totals_and_monotone_capacity(void **state) {
  (void)state;
  config_job *job = make_job();
  grid *g;
  enpu_err err = {0};
  assert_int_equal(grid_create(job, &g, &err), 0);
  int64_t sum_feasible = 0;
  for (int ph = 0; ph < CONFIG_NPHASE; ph++) {
    const grid_phase *v = grid_get_phase(g, (config_phase)ph);
    assert_non_null(v);
    assert_int_equal(v->batch_count, 20);
    assert_int_equal(v->seq_count, 36);
    assert_int_equal(v->bucket_count, 720);
    assert_int_equal(v->totals.buckets, 720);
    int64_t feasible = 0;
    for (int bi = 0; bi < v->batch_count; bi++) {
      for (int si = 0; si < v->seq_count; si++) {
        const grid_bucket *b = &v->buckets[bi * v->seq_count + si];
        assert_int_equal(b->batch, v->batch[bi]);
        assert_int_equal(b->seq, v->seq[si]);
        assert_int_equal(b->status == GRID_FEASIBLE, grid_memory_used_bytes(&b->mem) <= tpuv5p_hbm_bytes);
        feasible += b->status == GRID_FEASIBLE;
        /* More tokens never need less memory, so infeasibility propagates. */
        if (si > 0) assert_true(grid_memory_used_bytes(&b->mem) >= grid_memory_used_bytes(&b[-1].mem));
        if (bi > 0) assert_true(grid_memory_used_bytes(&b->mem) >= grid_memory_used_bytes(&b[-v->seq_count].mem));
      }
    }
    assert_int_equal(v->totals.feasible, feasible);
    assert_int_equal(v->totals.infeasible_capacity, 720 - feasible);
    assert_int_equal(v->totals.compilations, feasible * 4 * 3);
    assert_true(feasible > 0 && feasible < 720); /* the corner buckets cannot fit */
    assert_int_equal(v->buckets[0].status, GRID_FEASIBLE);
    assert_int_equal(v->buckets[719].status, GRID_INFEASIBLE_CAPACITY);
    sum_feasible += feasible;
  }
  const grid_totals *t = grid_get_totals(g);
  assert_int_equal(t->buckets, 1440);
  assert_int_equal(t->feasible, sum_feasible);
  assert_int_equal(t->infeasible_capacity, 1440 - sum_feasible);
  assert_int_equal(t->compilations, sum_feasible * 12);
  grid_free(g);
  grid_free(NULL);
  free(job);
}

static void test_grid_disabled_phase_and_errors(void **state) {
  (void)state;
  config_job *job = make_job();
  grid *g = (grid *)job;
  enpu_err err = {0};
  job->phase[CONFIG_PREFILL].enabled = false;
  assert_int_equal(grid_create(job, &g, &err), 0);
  assert_null(grid_get_phase(g, CONFIG_PREFILL));
  assert_non_null(grid_get_phase(g, CONFIG_DECODE));
  assert_int_equal(grid_get_totals(g)->buckets, 720);
  const grid_bucket *b = (const grid_bucket *)g;
  assert_int_equal(grid_pad(g, CONFIG_PREFILL, 1, 128, &b, &err), ENPU_ERR_NOT_FOUND);
  assert_null(b);
  assert_non_null(strstr(err.msg, "prefill"));
  grid_free(g);

  job->phase[CONFIG_DECODE].enabled = false;
  assert_int_equal(grid_create(job, &g, &err), ENPU_ERR_INVALID);
  assert_null(g);

  job->phase[CONFIG_DECODE].enabled = true;
  int bad[] = {8, 4};
  job->phase[CONFIG_DECODE].seq = (config_axis){.rule = false, .values = bad, .count = 2};
  assert_int_equal(grid_create(job, &g, &err), ENPU_ERR_INVALID);
  assert_null(g);
  assert_non_null(strstr(err.msg, "decode: seq axis"));
  free(job);
}

static void test_pad(void **state) {
  (void)state;
  config_job *job = make_job();
  grid *g;
  const grid_bucket *b;
  enpu_err err = {0};
  assert_int_equal(grid_create(job, &g, &err), 0);
  /* Exact hit. */
  assert_int_equal(grid_pad(g, CONFIG_PREFILL, 16, 2048, &b, &err), 0);
  assert_int_equal(b->batch, 16);
  assert_int_equal(b->seq, 2048);
  /* Round up the batch only, the seq only, and both (across the 1024 and 16 steps). */
  assert_int_equal(grid_pad(g, CONFIG_PREFILL, 3, 2048, &b, &err), 0);
  assert_int_equal(b->batch, 4);
  assert_int_equal(b->seq, 2048);
  assert_int_equal(grid_pad(g, CONFIG_PREFILL, 16, 1025, &b, &err), 0);
  assert_int_equal(b->batch, 16);
  assert_int_equal(b->seq, 1280);
  assert_int_equal(grid_pad(g, CONFIG_DECODE, 17, 1, &b, &err), 0);
  assert_int_equal(b->batch, 32);
  assert_int_equal(b->seq, 128);
  assert_int_equal(grid_pad(g, CONFIG_DECODE, 1, 2049, &b, &err), 0);
  assert_int_equal(b->seq, 2560);
  /* Beyond the largest bucket in either axis: the message names it. */
  assert_int_equal(grid_pad(g, CONFIG_DECODE, 257, 128, &b, &err), ENPU_ERR_NOT_FOUND);
  assert_null(b);
  assert_non_null(strstr(err.msg, "largest bucket is batch 256 seq 131072"));
  assert_int_equal(grid_pad(g, CONFIG_PREFILL, 1, 131073, &b, &err), ENPU_ERR_NOT_FOUND);
  assert_non_null(strstr(err.msg, "batch 256 seq 131072"));
  /* A covering bucket that does not fit HBM is reported, and still returned. */
  assert_int_equal(grid_pad(g, CONFIG_DECODE, 200, 100000, &b, &err), ENPU_ERR_INFEASIBLE);
  assert_non_null(b);
  assert_int_equal(b->batch, 208);
  assert_int_equal(b->seq, 114688);
  assert_int_equal(b->status, GRID_INFEASIBLE_CAPACITY);
  assert_int_equal(grid_pad(g, CONFIG_DECODE, 0, 128, &b, &err), ENPU_ERR_INVALID);
  grid_free(g);
  free(job);
}

static void test_pad_explicit_grid(void **state) {
  (void)state;
  config_job *job = make_job();
  int batches[] = {1, 8, 64}, seqs[] = {1000, 3000};
  job->phase[CONFIG_PREFILL].enabled = false;
  job->phase[CONFIG_DECODE].batch = (config_axis){.values = batches, .count = 3};
  job->phase[CONFIG_DECODE].seq = (config_axis){.values = seqs, .count = 2};
  grid *g;
  const grid_bucket *b;
  enpu_err err = {0};
  assert_int_equal(grid_create(job, &g, &err), 0);
  assert_int_equal(grid_get_phase(g, CONFIG_DECODE)->bucket_count, 6);
  assert_int_equal(grid_pad(g, CONFIG_DECODE, 2, 1001, &b, &err), 0);
  assert_int_equal(b->batch, 8);
  assert_int_equal(b->seq, 3000);
  assert_int_equal(grid_pad(g, CONFIG_DECODE, 9, 3001, &b, &err), ENPU_ERR_NOT_FOUND);
  assert_non_null(strstr(err.msg, "batch 64 seq 3000"));
  grid_free(g);
  free(job);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_batch_rule_paper),
      cmocka_unit_test(test_seq_rule_counts),
      cmocka_unit_test(test_seq_rule_boundaries),
      cmocka_unit_test(test_rule_max_between_values_is_covered),
      cmocka_unit_test(test_explicit_lists_kept),
      cmocka_unit_test(test_bad_axes_rejected),
      cmocka_unit_test(test_llama_small_bucket_fits_tp4),
      cmocka_unit_test(test_huge_bucket_infeasible),
      cmocka_unit_test(test_kv_formula_gqa),
      cmocka_unit_test(test_kv_window_layers),
      cmocka_unit_test(test_kv_and_weights_mla_moe),
      cmocka_unit_test(test_activations),
      cmocka_unit_test(test_capacity_policies),
      cmocka_unit_test(test_moe_load),
      cmocka_unit_test(test_memory_rejects_bad_input),
      cmocka_unit_test(test_grid_totals_and_monotone_capacity),
      cmocka_unit_test(test_grid_disabled_phase_and_errors),
      cmocka_unit_test(test_pad),
      cmocka_unit_test(test_pad_explicit_grid),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
