/* bench_exhaustive.c — how close Algorithm 1's Pareto sets are to the exact ones
 * (results/search.md): for five ops of different kinds of Llama3-70B prefill 4096
 * (batch 1), the exhaustive search over all 34^5 plans and Algorithm 1, both on the
 * `ideal` pipeline (no crossing, HBM full), then the energy gap at matched time (max and
 * mean over the greedy points) and the hypervolume ratio, for Algorithm 1 as is and with
 * the trim pass (search_options.op_trim). The same numbers as `enpu op ... --exhaustive`.
 * Usage: bench_exhaustive [--threads N] [--ops ID,ID,...] [--json]. Minutes per op (the
 * default ops: matmul, attention, norm, elementwise, allreduce, allgather); never fails
 * on a gap. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "search.h"

/* Op ids of the Llama3-70B prefill graph (`enpu graph`): one per kind. */
enum { MAXOPS = 32 };

int main(int argc, char **argv) {
  int json = 0, threads = 2, op_ids[MAXOPS] = {2, 5, 1, 8, 7, 17}, nop = 6;
  for (int i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "--json")) json = 1;
    else if (!strcmp(argv[i], "--threads") && i + 1 < argc) threads = atoi(argv[++i]);
    else if (!strcmp(argv[i], "--ops") && i + 1 < argc) {
      char *p = argv[++i];
      for (nop = 0; *p && nop < MAXOPS; p += *p == ',') op_ids[nop++] = (int)strtol(p, &p, 10);
    } else {
      fprintf(stderr, "usage: bench_exhaustive [--threads N] [--ops ID,ID,...] [--json]\n");
      return 2;
    }
  }
  if (threads < 1) threads = 1;
  enpu_err err = {0};
  config_job *job = NULL;
  graph *g = NULL;
  cost_ctx *cost = NULL;
  search_ctx *sx = NULL;
  int rc = config_job_load(ENPU_SOURCE_DIR "/jobs/llama3-70b.json", &job, &err);
  if (!rc) rc = graph_build(job, CONFIG_PREFILL, 1, 4096, &g, &err);
  if (!rc) rc = cost_ctx_create(&job->chip, &cost, &err);
  if (!rc) rc = search_ctx_create(&job->chip, &sx, &err);
  if (json) printf("{\"threads\": %d, \"ops\": [", threads);
  else
    printf("%-4s %-16s %-11s %7s %10s %8s %7s %9s %8s %8s %9s %8s | %6s %9s %8s %9s %8s\n", "op", "name", "kind",
           "exact", "evals", "exact s", "greedy", "evals", "max gap", "mean gap", "worst pt", "HV ratio", "+trim",
           "evals", "max gap", "worst pt", "HV ratio");
  for (int k = 0; !rc && k < nop; k++) {
    if (op_ids[k] < 0 || op_ids[k] >= graph_op_count(g)) {
      rc = enpu_errorf(&err, ENPU_ERR_INVALID, "no op %d", op_ids[k]);
      break;
    }
    const graph_op *op = graph_op_at(g, op_ids[k]);
    search_options opt;
    search_options_default(&opt);
    opt.threads = threads;
    search_pareto ex = {0}, gr = {0}, tr = {0};
    search_gap gap, gt;
    const double t0 = enpu_now_s();
    rc = search_op_compile(sx, cost, op, CONFIG_POLICY_IDEAL, &opt, &ex, &err);
    const double ex_s = enpu_now_s() - t0;
    opt.ideal_method = SEARCH_OP_GREEDY;
    if (!rc) rc = search_op_compile(sx, cost, op, CONFIG_POLICY_IDEAL, &opt, &gr, &err);
    if (!rc) rc = search_pareto_gap(&ex, &gr, NULL, &gap, &err);
    opt.op_trim = 1;
    if (!rc) rc = search_op_compile(sx, cost, op, CONFIG_POLICY_IDEAL, &opt, &tr, &err);
    if (!rc) rc = search_pareto_gap(&ex, &tr, NULL, &gt, &err);
    if (!rc && json)
      printf("%s{\"op\": %d, \"name\": \"%s\", \"kind\": \"%s\", \"exact_points\": %d, "
             "\"exact_evals\": %lld, \"exact_s\": %.1f, \"greedy_points\": %d, "
             "\"greedy_evals\": %lld, \"max_gap\": %.6f, \"mean_gap\": %.6f, \"worst\": %d, "
             "\"hv_ratio\": %.6f, \"trim_points\": %d, \"trim_evals\": %lld, "
             "\"trim_max_gap\": %.6f, \"trim_mean_gap\": %.6f, \"trim_worst\": %d, "
             "\"trim_hv_ratio\": %.6f}",
             k ? ", " : "", op->id, op->name, graph_kind_name(op->kind), ex.count, (long long)ex.evals, ex_s,
             gr.count, (long long)gr.evals, gap.max_gap, gap.mean_gap, gap.worst, gap.hv_ratio, tr.count,
             (long long)tr.evals, gt.max_gap, gt.mean_gap, gt.worst, gt.hv_ratio);
    else if (!rc)
      printf("%-4d %-16s %-11s %7d %10lld %8.1f %7d %9lld %7.3f%% %7.3f%% %9d %8.5f | %6d %9lld "
             "%7.3f%% %9d %8.5f\n",
             op->id, op->name, graph_kind_name(op->kind), ex.count, (long long)ex.evals, ex_s, gr.count,
             (long long)gr.evals, 100 * gap.max_gap, 100 * gap.mean_gap, gap.worst, gap.hv_ratio, tr.count,
             (long long)tr.evals, 100 * gt.max_gap, gt.worst, gt.hv_ratio);
    fflush(stdout);
    search_pareto_free(&ex);
    search_pareto_free(&gr);
    search_pareto_free(&tr);
  }
  if (json) printf("]}\n");
  if (rc) fprintf(stderr, "bench_exhaustive: %s\n", err.msg);
  search_ctx_free(sx);
  cost_ctx_free(cost);
  graph_free(g);
  config_job_free(job);
  return rc ? 1 : 0;
}
