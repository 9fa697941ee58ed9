/* bench_exact.c — the exact Pareto search (branch and bound) against the exhaustive
 * enumeration of all 34^5 = 45,435,424 plans, on full-size ops sampled from the model
 * jobs: one op of each kind from each of Llama3-70B prefill 1 × 4096 and decode 16 × 4096
 * and DeepSeek-V3 prefill 2 × 1024 and decode 64 × 4096 (distinct signatures), on the
 * `ideal` pipeline in the given budget mode. Per op: whether the two sets are identical
 * (states, times, energies), the exact search's plan evaluations (against 45,435,424),
 * its core kernel runs (the cost model's triple cache misses, against 39,304 triples),
 * and both searches' CPU seconds on one thread; then the median over op kinds of the
 * evaluation share. Both searches use the cost model's batch path; each op starts from a
 * fresh cost context, so neither reuses the other's kernels.
 * Usage: bench_exact [--budget strict|paper] [--max N] [--no-exhaustive] [--json].
 * Minutes (about 15 s per op for the exhaustive side); never fails on a figure, exits 1
 * when a set differs. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "search.h"

enum { MAXOPS = 64 };

static double cpu_s(void) { return (double)clock() / CLOCKS_PER_SEC; }

static int same_set(const search_pareto *a, const search_pareto *b) {
  if (a->count != b->count) return 0;
  for (int i = 0; i < a->count; i++)
    if (memcmp(a->points[i].state, b->points[i].state, sizeof a->points[i].state) ||
        a->points[i].time_ns != b->points[i].time_ns || a->points[i].energy_nj != b->points[i].energy_nj)
      return 0;
  return 1;
}

typedef struct {
  graph_op op;
  const config_chip *chip;
} sample;

/* One op per kind per graph, distinct signatures, in graph order. */
static int collect(config_job *jobs[2], graph *g[4], sample *out, int max, enpu_err *err) {
  static const char *paths[2] = {ENPU_SOURCE_DIR "/jobs/llama3-70b.json",
                                 ENPU_SOURCE_DIR "/jobs/deepseek-v3-671b.json"};
  static const int shape[4][3] = {
      {CONFIG_PREFILL, 1, 4096}, {CONFIG_DECODE, 16, 4096}, {CONFIG_PREFILL, 2, 1024}, {CONFIG_DECODE, 64, 4096}};
  int n = 0;
  for (int k = 0; k < 4; k++) {
    if (k % 2 == 0) ENPU_FORWARD(config_job_load(paths[k / 2], &jobs[k / 2], err));
    ENPU_FORWARD(graph_build(jobs[k / 2], (config_phase)shape[k][0], shape[k][1], shape[k][2], &g[k], err));
    int seen[GRAPH_NKIND] = {0};
    for (int i = 0; i < graph_op_count(g[k]) && n < max; i++) {
      const graph_op *op = graph_op_at(g[k], i);
      int dup = seen[op->kind];
      for (int j = 0; j < n && !dup; j++) dup = out[j].op.signature == op->signature;
      if (dup) continue;
      seen[op->kind] = 1;
      out[n++] = (sample){*op, &jobs[k / 2]->chip};
    }
  }
  return n;
}

int main(int argc, char **argv) {
  int json = 0, max = MAXOPS, exhaustive = 1;
  config_budget budget = CONFIG_BUDGET_STRICT;
  for (int i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "--json")) json = 1;
    else if (!strcmp(argv[i], "--no-exhaustive")) exhaustive = 0;
    else if (!strcmp(argv[i], "--max") && i + 1 < argc) max = atoi(argv[++i]);
    else if (!strcmp(argv[i], "--budget") && i + 1 < argc && config_budget_parse(argv[++i], &budget) == 0) continue;
    else {
      fprintf(stderr, "usage: bench_exact [--budget strict|paper] [--max N] [--no-exhaustive] [--json]\n");
      return 2;
    }
  }
  if (max < 1 || max > MAXOPS) max = MAXOPS;
  enpu_err err = {0};
  config_job *jobs[2] = {NULL, NULL};
  graph *g[4] = {NULL};
  sample ops[MAXOPS];
  int n = collect(jobs, g, ops, max, &err), rc = n < 0 ? n : 0, differ = 0;
  double share_by_kind[GRAPH_NKIND][MAXOPS];
  int nkind[GRAPH_NKIND] = {0};
  if (json && rc == 0) printf("{\"budget\": \"%s\", \"ops\": [", config_budget_name(budget));
  else if (rc == 0)
    printf("%-24s %-14s %6s %10s %9s %8s %9s %9s %s\n", "op", "kind", "points", "exact evals", "share", "kernels",
           "exact s", "exhaust s", "same");
  for (int k = 0; rc == 0 && k < n; k++) {
    cost_ctx *cost = NULL;
    search_ctx *sx = NULL;
    search_pareto ex = {0}, bb = {0};
    search_options o;
    search_options_default(&o);
    o.budget = budget;
    rc = cost_ctx_create(ops[k].chip, &cost, &err);
    if (rc == 0) rc = search_ctx_create(ops[k].chip, &sx, &err);
    const double t0 = cpu_s();
    if (rc == 0) rc = search_op_compile(sx, cost, &ops[k].op, CONFIG_POLICY_IDEAL, &o, &bb, &err);
    const double exact_s = cpu_s() - t0;
    const int64_t kernels = rc == 0 ? cost_ctx_kernel_runs(cost) : 0;
    cost_ctx_free(cost);
    cost = NULL;
    double ex_s = 0;
    if (rc == 0 && exhaustive) {
      o.ideal_method = SEARCH_OP_EXHAUSTIVE;
      rc = cost_ctx_create(ops[k].chip, &cost, &err);
      const double t1 = cpu_s();
      if (rc == 0) rc = search_op_compile(sx, cost, &ops[k].op, CONFIG_POLICY_IDEAL, &o, &ex, &err);
      ex_s = cpu_s() - t1;
    }
    const int same = !exhaustive || (rc == 0 && same_set(&ex, &bb));
    differ |= !same;
    const double share = 100.0 * (double)bb.evals / 45435424.0;
    if (rc == 0) share_by_kind[ops[k].op.kind][nkind[ops[k].op.kind]++] = share;
    if (rc == 0 && json)
      printf("%s{\"op\": \"%s\", \"kind\": \"%s\", \"points\": %d, \"exact_evals\": %lld, "
             "\"share_pct\": %.4f, \"kernel_runs\": %lld, \"exact_cpu_s\": %.2f, "
             "\"exhaustive_cpu_s\": %.2f, \"same\": %s}",
             k ? ", " : "", ops[k].op.name, graph_kind_name(ops[k].op.kind), bb.count, (long long)bb.evals, share,
             (long long)kernels, exact_s, ex_s, same ? "true" : "false");
    else if (rc == 0)
      printf("%-24s %-14s %6d %10lld %8.3f%% %8lld %9.2f %9.2f %s\n", ops[k].op.name,
             graph_kind_name(ops[k].op.kind), bb.count, (long long)bb.evals, share, (long long)kernels, exact_s,
             ex_s,
             !exhaustive ? "-"
             : same      ? "yes"
                         : "NO");
    fflush(stdout);
    search_pareto_free(&ex);
    search_pareto_free(&bb);
    cost_ctx_free(cost);
    search_ctx_free(sx);
  }
  /* Median over kinds of each kind's mean share. */
  double kinds[GRAPH_NKIND];
  int nk = 0;
  for (int kind = 0; kind < GRAPH_NKIND; kind++) {
    if (!nkind[kind]) continue;
    double s = 0;
    for (int i = 0; i < nkind[kind]; i++) s += share_by_kind[kind][i];
    kinds[nk++] = s / nkind[kind];
  }
  for (int i = 1; i < nk; i++)
    for (int j = i; j > 0 && kinds[j] < kinds[j - 1]; j--) {
      const double t = kinds[j];
      kinds[j] = kinds[j - 1], kinds[j - 1] = t;
    }
  const double median = nk ? (nk % 2 ? kinds[nk / 2] : (kinds[nk / 2 - 1] + kinds[nk / 2]) / 2) : 0;
  if (rc == 0 && json) printf("], \"median_kind_share_pct\": %.4f}\n", median);
  else if (rc == 0) printf("median over %d op kinds of the exact search's share: %.3f %%\n", nk, median);
  if (rc < 0) fprintf(stderr, "bench_exact: %s\n", err.msg);
  for (int k = 0; k < 4; k++) graph_free(g[k]);
  config_job_free(jobs[0]);
  config_job_free(jobs[1]);
  return rc < 0 || differ ? 1 : 0;
}
