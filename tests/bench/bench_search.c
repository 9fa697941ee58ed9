/* bench_search.c — DVFS search cost in the shape of the paper's Table 7: op-level plans
 * explored (distinct ops), request-level plans visited, op-level search time per op, and
 * the whole single-bucket compile time, for Llama3-70B and DeepSeek-V3 prefill (input
 * 4096) and decode (KV 4096 + 512), batch 1, 20 % slack, dvfs-c and enpu-all.
 * Usage: bench_search [--json]. Prints figures; never fails on speed. */
#include <stdio.h>
#include <string.h>

#include "search.h"

typedef struct {
  const char *job;
  config_phase phase;
  int seq;
  double paper_op[2]; /* Table 7: DVFS-C, eNPU-All op-level plans */
  const char *paper_req[2];
} bench_case;

static const bench_case cases[] = {
    {"llama3-70b", CONFIG_PREFILL, 4096, {578, 15345}, {"2.5M", "2881"}},
    {"llama3-70b", CONFIG_DECODE, 4608, {714, 19561}, {"2.5M", "1"}},
    {"deepseek-v3-671b", CONFIG_PREFILL, 4096, {1394, 37944}, {"2.5M", "27451"}},
    {"deepseek-v3-671b", CONFIG_DECODE, 4608, {1394, 36890}, {"2.5M", "1"}},
};

int main(int argc, char **argv) {
  const int json = argc > 1 && !strcmp(argv[1], "--json");
  const config_policy pols[2] = {CONFIG_POLICY_DVFS_C, CONFIG_POLICY_ENPU_ALL};
  const double slack = 0.20;
  if (json) printf("{\"cases\": [");
  else
    printf("%-17s %-7s %-8s %6s %9s %10s %9s %8s %9s %10s %10s\n", "model", "phase", "policy", "ops", "op evals",
           "paper op", "req evals", "paper req", "evals/op", "ms/op", "compile s");
  int first = 1;
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    const bench_case *bc = &cases[i];
    char path[512];
    snprintf(path, sizeof path, "%s/jobs/%s.json", ENPU_SOURCE_DIR, bc->job);
    enpu_err err = {0};
    config_job *job = NULL;
    graph *g = NULL;
    cost_ctx *cost = NULL;
    search_ctx *sx = NULL;
    int rc = config_job_load(path, &job, &err);
    if (!rc) rc = graph_build(job, bc->phase, 1, bc->seq, &g, &err);
    if (!rc) rc = cost_ctx_create(&job->chip, &cost, &err);
    if (!rc) rc = search_ctx_create(&job->chip, &sx, &err);
    for (int p = 0; !rc && p < 2; p++) {
      search_bucket_result r;
      const double t0 = enpu_now_s();
      rc = search_compile_bucket(sx, cost, g, pols[p], &slack, 1, NULL, &r, &err);
      if (rc) break;
      const double total_s = enpu_now_s() - t0;
      const double per_op_ms = 1e3 * r.op_search_s / r.unique_ops;
      const double evals_per_op = (double)r.op_evals / r.unique_ops;
      if (json)
        printf("%s{\"model\": \"%s\", \"phase\": \"%s\", \"policy\": \"%s\", \"ops\": %d, "
               "\"op_evals\": %lld, \"request_evals\": %lld, \"op_search_ms_per_op\": %.3f, "
               "\"evals_per_op\": %.1f, \"compile_s\": %.3f, \"savings\": %.4f}",
               first ? "" : ", ", bc->job, config_phase_name(bc->phase), config_policy_name(pols[p]), r.unique_ops,
               (long long)r.op_evals, (long long)r.plans[0].request_evals, per_op_ms, evals_per_op, total_s,
               r.plans[0].savings_vs_nodvfs);
      else
        printf("%-17s %-7s %-8s %6d %9lld %10.0f %9lld %8s %9.1f %10.3f %10.3f\n", bc->job,
               config_phase_name(bc->phase), config_policy_name(pols[p]), r.unique_ops, (long long)r.op_evals,
               bc->paper_op[p], (long long)r.plans[0].request_evals, bc->paper_req[p], evals_per_op, per_op_ms,
               total_s);
      first = 0;
      search_bucket_result_free(&r);
    }
    if (rc) fprintf(stderr, "bench_search: %s %s: %s\n", bc->job, config_phase_name(bc->phase), err.msg);
    search_ctx_free(sx);
    cost_ctx_free(cost);
    graph_free(g);
    config_job_free(job);
  }
  if (json) printf("]}\n");
  return 0;
}
