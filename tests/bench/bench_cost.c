/* bench_cost.c — cost-model throughput: evaluations of (operator, random plan) per second
 * on one thread, per op kind and as the geometric mean over the operators of Llama3-70B
 * prefill 4096 and decode 4096 (batch 1, TP4), eNPU 5-domain pipeline.
 *  --after    every evaluation is cost_eval_after with the previous random plan as the
 *             op before (per-rail V/f transitions on every rail that moves), as the
 *             request level prices a plan;
 *  --evals N  exactly N evaluations per op instead of >= 20 ms (for instruction counts
 *             under callgrind, where wall time means nothing);
 *  --batch exhaustive  cost_eval_batch on batches as the exhaustive search sends them:
 *             one random (SA, VU, SRAM) triple with every HBM × ICI state (34^2 = 1,156
 *             plans), a new triple each batch, so every batch runs one new core kernel;
 *  --batch random  cost_eval_batch on batches of 256 random plans (every state uniform,
 *             as the single figure): the kernel cache rarely hits, this is the batch
 *             path's cost when plans share nothing.
 * Usage: bench_cost [JOB] [--json] [--after | --batch exhaustive|random] [--evals N].
 * Prints figures; never fails on speed. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cost.h"

#define MIN_SECONDS_PER_OP 0.02

static uint64_t rng_next(uint64_t *s) {
  *s ^= *s << 13;
  *s ^= *s >> 7;
  *s ^= *s << 17;
  return *s;
}

enum { BATCH_RANDOM = 256, BATCH_MAX = 256 * 256 };

/* One batch: a random triple × every HBM × ICI state (exhaustive order), or random plans. */
static int bench_batch(cost_ctx *ctx, const graph_op *op, const cost_pipeline *pl, int kind, int states, int n,
                       uint64_t *seed, cost_plan *plans, cost_brief *out, enpu_err *err) {
  int triple[3];
  for (int c = 0; c < 3; c++) triple[c] = 1 + (int)(rng_next(seed) % (uint64_t)states);
  for (int i = 0; i < n; i++) {
    for (int c = 0; c < CONFIG_NCOMP; c++)
      plans[i].state[c] = kind == 2 || c >= 3 ? 1 + (int)(rng_next(seed) % (uint64_t)states) : triple[c];
    if (kind == 1) {
      plans[i].state[CONFIG_HBM] = 1 + i % states;
      plans[i].state[CONFIG_ICI] = 1 + i / states % states;
    }
  }
  return cost_eval_batch(ctx, op, plans, n, pl, out, err);
}

int main(int argc, char **argv) {
  const char *job_path = ENPU_SOURCE_DIR "/jobs/llama3-70b.json";
  int json = 0, after = 0, batch = 0; /* batch: 1 exhaustive, 2 random */
  long fixed = 0;
  for (int i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "--json")) json = 1;
    else if (!strcmp(argv[i], "--after")) after = 1;
    else if (!strcmp(argv[i], "--evals") && i + 1 < argc) fixed = atol(argv[++i]);
    else if (!strcmp(argv[i], "--batch") && i + 1 < argc) {
      i++;
      batch = !strcmp(argv[i], "exhaustive") ? 1 : !strcmp(argv[i], "random") ? 2 : -1;
      if (batch < 0) {
        fprintf(stderr, "usage: bench_cost [JOB] [--json] [--after | --batch exhaustive|random] [--evals N]\n");
        return 2;
      }
    } else job_path = argv[i];
  }
  enpu_err err = {0};
  config_job *job = NULL;
  power_model *pm = NULL;
  cost_ctx *ctx = NULL;
  graph *g[2] = {NULL, NULL};
  cost_pipeline pl;
  int rc = config_job_load(job_path, &job, &err);
  if (!rc) rc = power_model_create(&job->chip, POWER_HBM_FULL, POWER_REG_DVFS, &pm, &err);
  if (!rc) rc = cost_ctx_create(&job->chip, &ctx, &err);
  if (!rc) rc = cost_pipeline_enpu(&pl, 5, pm, &err);
  if (!rc) rc = graph_build(job, CONFIG_PREFILL, 1, 4096, &g[0], &err);
  if (!rc) rc = graph_build(job, CONFIG_DECODE, 1, 4096, &g[1], &err);

  double kind_log_sum[GRAPH_NKIND] = {0};
  int kind_ops[GRAPH_NKIND] = {0};
  double log_sum = 0;
  int nops = 0;
  uint64_t seed = 0x2545f4914f6cdd1dull;
  int states = rc ? 0 : job->chip.freq_states;
  cost_plan *plans = calloc(BATCH_MAX, sizeof *plans);
  cost_brief *briefs = calloc(BATCH_MAX, sizeof *briefs);
  if (!rc && (!plans || !briefs || states * states > BATCH_MAX))
    rc = enpu_errorf(&err, ENPU_ERR_NOMEM, "batch buffers");
  for (int gi = 0; !rc && gi < 2; gi++) {
    for (int i = 0; !rc && i < graph_op_count(g[gi]); i++) {
      const graph_op *op = graph_op_at(g[gi], i);
      cost_result r;
      cost_plan p, prev;
      for (int c = 0; c < CONFIG_NCOMP; c++) p.state[c] = states;
      rc = cost_eval(ctx, op, &p, &pl, &r, &err); /* first evaluation: memoise */
      int64_t evals = 0;
      double t0 = enpu_now_s(), dt = 0;
      while (!rc && batch && (fixed ? evals < fixed : dt < MIN_SECONDS_PER_OP)) {
        int n = batch == 1 ? states * states : BATCH_RANDOM;
        if (fixed && evals + n > fixed) n = (int)(fixed - evals);
        rc = bench_batch(ctx, op, &pl, batch, states, n, &seed, plans, briefs, &err);
        evals += n;
        dt = enpu_now_s() - t0;
      }
      while (!rc && !batch && (fixed ? evals < fixed : dt < MIN_SECONDS_PER_OP)) {
        for (int k = 0; k < 256 && !rc && (!fixed || evals < fixed); k++, evals++) {
          prev = p;
          for (int c = 0; c < CONFIG_NCOMP; c++) p.state[c] = 1 + (int)(rng_next(&seed) % (uint64_t)states);
          rc = after ? cost_eval_after(ctx, op, &prev, &p, &pl, &r, &err) : cost_eval(ctx, op, &p, &pl, &r, &err);
        }
        dt = enpu_now_s() - t0;
      }
      if (rc) break;
      double rate = evals / dt;
      kind_log_sum[op->kind] += log(rate);
      kind_ops[op->kind]++;
      log_sum += log(rate);
      nops++;
    }
  }
  if (rc) {
    fprintf(stderr, "bench_cost: %s\n", err.msg);
  } else if (json) {
    printf("{\"evals_per_s\": %.0f, \"by_kind\": {", exp(log_sum / nops));
    const char *sep = "";
    for (int k = 0; k < GRAPH_NKIND; k++) {
      if (!kind_ops[k]) continue;
      printf("%s\"%s\": %.0f", sep, graph_kind_name((graph_op_kind)k), exp(kind_log_sum[k] / kind_ops[k]));
      sep = ", ";
    }
    printf("}}\n");
  } else {
    printf("%s throughput, one thread, %d ops of %s (prefill 4096 + decode 4096, b=1)\n",
           batch == 1   ? "cost_eval_batch (exhaustive-order batches of 1,156 plans)"
           : batch == 2 ? "cost_eval_batch (batches of 256 random plans)"
           : after      ? "cost_eval_after (per-rail transitions)"
                        : "cost_eval",
           nops, job->name);
    for (int k = 0; k < GRAPH_NKIND; k++)
      if (kind_ops[k])
        printf("  %-15s %3d ops  %10.0f evals/s\n", graph_kind_name((graph_op_kind)k), kind_ops[k],
               exp(kind_log_sum[k] / kind_ops[k]));
    printf("  geometric mean          %10.0f evals/s\n", exp(log_sum / nops));
  }
  free(plans);
  free(briefs);
  graph_free(g[0]);
  graph_free(g[1]);
  cost_ctx_free(ctx);
  power_model_free(pm);
  config_job_free(job);
  return rc ? 1 : 0;
}
