/* bench_cost.c — cost-model throughput: evaluations of (operator, random plan) per second
 * on one thread, per op kind and as the geometric mean over the operators of Llama3-70B
 * prefill 4096 and decode 4096 (batch 1, TP4), eNPU 5-domain pipeline.
 *  --after    every evaluation is cost_eval_after with the previous random plan as the
 *             op before (per-rail V/f transitions on every rail that moves), as the
 *             request level prices a plan;
 *  --evals N  exactly N evaluations per op instead of >= 20 ms (for instruction counts
 *             under callgrind, where wall time means nothing).
 * Usage: bench_cost [JOB] [--json] [--after] [--evals N]. Prints figures; never fails on
 * speed. */
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

int main(int argc, char **argv) {
  const char *job_path = ENPU_SOURCE_DIR "/jobs/llama3-70b.json";
  int json = 0, after = 0;
  long fixed = 0;
  for (int i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "--json")) json = 1;
    else if (!strcmp(argv[i], "--after")) after = 1;
    else if (!strcmp(argv[i], "--evals") && i + 1 < argc) fixed = atol(argv[++i]);
    else job_path = argv[i];
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
  for (int gi = 0; !rc && gi < 2; gi++) {
    for (int i = 0; !rc && i < graph_op_count(g[gi]); i++) {
      const graph_op *op = graph_op_at(g[gi], i);
      cost_result r;
      cost_plan p, prev;
      for (int c = 0; c < CONFIG_NCOMP; c++) p.state[c] = states;
      rc = cost_eval(ctx, op, &p, &pl, &r, &err); /* first evaluation: memoise */
      int64_t evals = 0;
      double t0 = enpu_now_s(), dt = 0;
      while (!rc && (fixed ? evals < fixed : dt < MIN_SECONDS_PER_OP)) {
        for (int k = 0; k < 256 && !rc && (!fixed || evals < fixed); k++, evals++) {
          prev = p;
          for (int c = 0; c < CONFIG_NCOMP; c++)
            p.state[c] = 1 + (int)(rng_next(&seed) % (uint64_t)states);
          rc = after ? cost_eval_after(ctx, op, &prev, &p, &pl, &r, &err)
                     : cost_eval(ctx, op, &p, &pl, &r, &err);
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
      printf("%s\"%s\": %.0f", sep, graph_kind_name((graph_op_kind)k),
             exp(kind_log_sum[k] / kind_ops[k]));
      sep = ", ";
    }
    printf("}}\n");
  } else {
    printf("%s throughput, one thread, %d ops of %s (prefill 4096 + decode 4096, b=1)\n",
           after ? "cost_eval_after (per-rail transitions)" : "cost_eval", nops, job->name);
    for (int k = 0; k < GRAPH_NKIND; k++)
      if (kind_ops[k])
        printf("  %-15s %3d ops  %10.0f evals/s\n", graph_kind_name((graph_op_kind)k),
               kind_ops[k], exp(kind_log_sum[k] / kind_ops[k]));
    printf("  geometric mean          %10.0f evals/s\n", exp(log_sum / nops));
  }
  graph_free(g[0]);
  graph_free(g[1]);
  cost_ctx_free(ctx);
  power_model_free(pm);
  config_job_free(job);
  return rc ? 1 : 0;
}
