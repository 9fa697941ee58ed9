/* bench_request.c — the request level on Llama3-70B prefill (input 4096) and decode (KV
 * 4096 + 512), batch 1 (the paper's single request, §4.2), at 0/2/5/10/20 % slack:
 *  figure11: savings vs NoDVFS of nodvfs, dvfs-c, enpu-c, enpu-all (walk, the default),
 *            beside the numbers the paper's text gives for Figure 11;
 *  compare:  for dvfs-c and enpu-all, energy and request-level evaluations of the hull
 *            walk, the paper's plain greedy and the GA (1000 × 500, warm-started);
 *  transitions: the walk's plan before and after transition-aware finalisation (rail
 *            lifting + local search, search_options.transition_aware) per policy.
 * Usage: bench_request [figure11|compare|transitions]. Prints figures; never fails. */
#include <stdio.h>
#include <string.h>

#include "search.h"

static const double slacks[] = {0, 0.02, 0.05, 0.10, 0.20};
enum { NSLACK = 5 };

typedef struct {
  config_phase phase;
  int seq;
} bucket;
static const bucket buckets[] = {{CONFIG_PREFILL, 4096}, {CONFIG_DECODE, 4608}};

static int compile(search_ctx *sx, cost_ctx *cost, const graph *g, config_policy p,
                   search_req_method m, int aware, search_bucket_result *r, double *s,
                   enpu_err *err) {
  search_options o;
  search_options_default(&o);
  o.request = m;
  o.transition_aware = aware;
  const double t0 = enpu_now_s();
  const int rc = search_compile_bucket(sx, cost, g, p, slacks, NSLACK, &o, r, err);
  *s = enpu_now_s() - t0;
  return rc;
}

static int figure11(search_ctx *sx, cost_ctx *cost, const graph *g, config_phase ph,
                    enpu_err *err) {
  static const config_policy pols[] = {CONFIG_POLICY_NODVFS, CONFIG_POLICY_DVFS_C,
                                       CONFIG_POLICY_ENPU_C, CONFIG_POLICY_ENPU_ALL};
  double sav[4][NSLACK];
  for (int p = 0; p < 4; p++) {
    search_bucket_result r;
    double s;
    ENPU_FORWARD(compile(sx, cost, g, pols[p], SEARCH_REQ_WALK, 0, &r, &s, err));
    for (int k = 0; k < NSLACK; k++) sav[p][k] = r.plans[k].savings_vs_nodvfs;
    search_bucket_result_free(&r);
  }
  printf("| %s | slack | nodvfs | dvfs-c | enpu-c | enpu-all | enpu-all ≥ enpu-c ≥ dvfs-c |\n",
         config_phase_name(ph));
  printf("|---|---:|---:|---:|---:|---:|---|\n");
  for (int k = 0; k < NSLACK; k++)
    printf("| | %g %% | %.2f %% | %.2f %% | %.2f %% | %.2f %% | %s |\n", 100 * slacks[k],
           100 * sav[0][k], 100 * sav[1][k], 100 * sav[2][k], 100 * sav[3][k],
           sav[3][k] >= sav[2][k] - 1e-12 && sav[2][k] >= sav[1][k] - 1e-12 ? "yes" : "no");
  return 0;
}

static int compare(search_ctx *sx, cost_ctx *cost, const graph *g, config_phase ph,
                   enpu_err *err) {
  static const config_policy pols[] = {CONFIG_POLICY_DVFS_C, CONFIG_POLICY_ENPU_ALL};
  static const search_req_method ms[] = {SEARCH_REQ_WALK, SEARCH_REQ_GREEDY, SEARCH_REQ_GA};
  static const char *mname[] = {"walk", "greedy", "GA"};
  for (int p = 0; p < 2; p++) {
    search_bucket_result r[3];
    double s[3];
    for (int m = 0; m < 3; m++) ENPU_FORWARD(compile(sx, cost, g, pols[p], ms[m], 0, &r[m], &s[m], err));
    for (int k = 0; k < NSLACK; k++) {
      printf("| %s | %s | %g %% | %.4f |", config_phase_name(ph), config_policy_name(pols[p]),
             100 * slacks[k], r[0].plans[k].lower_bound_nj / 1e6);
      for (int m = 0; m < 3; m++)
        printf(" %.4f (%.2f %%) | %lld |", r[m].plans[k].energy_nj / 1e6,
               100 * r[m].plans[k].savings_vs_nodvfs, (long long)r[m].plans[k].request_evals);
      printf("\n");
    }
    for (int m = 0; m < 3; m++)
      printf("<!-- %s %s %s: request level + op level %.3f s for %d slacks -->\n",
             config_phase_name(ph), config_policy_name(pols[p]), mname[m], s[m], NSLACK);
    for (int m = 0; m < 3; m++) search_bucket_result_free(&r[m]);
  }
  return 0;
}

static int transitions(search_ctx *sx, cost_ctx *cost, const graph *g, config_phase ph,
                       enpu_err *err) {
  static const config_policy pols[] = {CONFIG_POLICY_DVFS_C, CONFIG_POLICY_ENPU_C,
                                       CONFIG_POLICY_ENPU_ALL};
  for (int p = 0; p < 3; p++) {
    search_bucket_result a, b;
    double sa, sb;
    ENPU_FORWARD(compile(sx, cost, g, pols[p], SEARCH_REQ_WALK, 0, &a, &sa, err));
    const int rc = compile(sx, cost, g, pols[p], SEARCH_REQ_WALK, 1, &b, &sb, err);
    for (int k = 0; rc == 0 && k < NSLACK; k++)
      printf("| %s | %s | %g %% | %.4f (%.2f %%) | %.4f (%.2f %%) | %u | %lld | %lld |\n",
             config_phase_name(ph), config_policy_name(pols[p]), 100 * slacks[k],
             a.plans[k].energy_nj / 1e6, 100 * a.plans[k].savings_vs_nodvfs,
             b.plans[k].energy_nj / 1e6, 100 * b.plans[k].savings_vs_nodvfs,
             b.plans[k].lifted_mask, (long long)b.plans[k].polish_moves,
             (long long)b.plans[k].request_evals);
    if (rc == 0)
      printf("<!-- %s %s: %.3f s before, %.3f s after -->\n", config_phase_name(ph),
             config_policy_name(pols[p]), sa, sb);
    search_bucket_result_free(&a);
    search_bucket_result_free(&b);
    ENPU_FORWARD(rc);
  }
  return 0;
}

int main(int argc, char **argv) {
  const int fig = argc < 2 || !strcmp(argv[1], "figure11");
  const int tra = argc >= 2 && !strcmp(argv[1], "transitions");
  enpu_err err = {0};
  config_job *job = NULL;
  int rc = config_job_load(ENPU_SOURCE_DIR "/jobs/llama3-70b.json", &job, &err);
  if (tra && !rc)
    printf("| phase | policy | slack | before mJ (saving) | after mJ (saving) | lifted domains "
           "| local-search moves | request evals after |\n|---|---|---:|---:|---:|---:|---:|---:|\n");
  if (!fig && !tra && !rc)
    printf("| phase | policy | slack | LP bound mJ | walk mJ (saving) | walk evals | greedy mJ "
           "(saving) | greedy evals | GA mJ (saving) | GA evals |\n"
           "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|\n");
  for (size_t b = 0; !rc && b < sizeof buckets / sizeof buckets[0]; b++) {
    graph *g = NULL;
    cost_ctx *cost = NULL;
    search_ctx *sx = NULL;
    rc = graph_build(job, buckets[b].phase, 1, buckets[b].seq, &g, &err);
    if (!rc) rc = cost_ctx_create(&job->chip, &cost, &err);
    if (!rc) rc = search_ctx_create(&job->chip, &sx, &err);
    if (!rc) rc = fig   ? figure11(sx, cost, g, buckets[b].phase, &err)
                  : tra ? transitions(sx, cost, g, buckets[b].phase, &err)
                        : compare(sx, cost, g, buckets[b].phase, &err);
    fflush(stdout);
    search_ctx_free(sx);
    cost_ctx_free(cost);
    graph_free(g);
  }
  if (rc) fprintf(stderr, "bench_request: %s\n", err.msg);
  config_job_free(job);
  return rc ? 1 : 0;
}
