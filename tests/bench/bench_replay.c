/* bench_replay.c — replay speed against its targets, on Table 3's Llama3-70B cluster:
 *   the one-hour conv trace, one policy, one thread           (target <= 2 s);
 *   the 24-hour day built from it, every policy of the store  (target <= 15 s);
 *   the six-rate sweep 0.5,1,2,3,5,8 of the hour, every policy (target <= 10 s);
 *   the hour with the ondemand, pid and pelm governors beside every policy, the PELM
 *   agent learning online (its DQN decisions and training included; target <= 30 s).
 * The store is the synthetic one of tests/integration/replay/synth_store.h (written to
 * a temporary file first), or a real one with --store (e.g. results/llama3-70b/plans.h5,
 * four policies and the governors' uniform table). Wall time and the process's CPU time are printed: on a shared
 * machine the wall time of the threaded cases depends on the other load. Usage: bench_replay [--store S] [--policy
 * NAME] [--threads N] [--json]. Prints figures; never fails on speed. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "../integration/replay/synth_store.h"
#include "replay.h"

#define SRC(p) ENPU_SOURCE_DIR "/jobs/" p
#define MAX_POLICIES 8

typedef struct {
  planstore *ps;
  config_cluster *cl;
  config_model *model;
  config_chip *chip;
  replay_trace *trace;
  replay_setup setup;
  const char *policies[MAX_POLICIES];
  size_t npolicies;
  int threads, json;
  const char *policy;
} bench;

static int fail(const enpu_err *err) {
  fprintf(stderr, "bench_replay: %s\n", err->msg);
  return 1;
}

static double cpu_s(void) {
  struct timespec t;
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
  return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

static void report(const bench *b, int k, const char *name, size_t requests, unsigned long long batches,
                   double wall, double cpu, double target, double slo) {
  if (b->json)
    printf("%s{\"case\": \"%s\", \"requests\": %zu, \"batches\": %llu, \"seconds\": %.3f, \"cpu_seconds\": %.3f, "
           "\"target_s\": %g, \"slo_attainment\": %.6f}",
           k ? ", " : "", name, requests, batches, wall, cpu, target, slo);
  else printf("%-34s %9zu %12llu %8.2f %8.2f %8.0f %8.2f\n", name, requests, batches, wall, cpu, target, 100 * slo);
}

static unsigned long long batches_of(const replay_result *r) {
  const replay_summary *s = replay_result_summary(r);
  return (unsigned long long)(s->phase[0].batches + s->phase[1].batches);
}

/* The hour with one policy, then the day with every policy. */
static int bench_runs(bench *b) {
  enpu_err err = {0};
  for (int k = 0; k < 2; k++) {
    replay_trace *t = NULL;
    const replay_shape sh = {.rate = 1, .warp = 1, .day = k == 1, .seed = 1};
    replay_result *runs[MAX_POLICIES] = {0};
    const char *one[1] = {b->policy};
    const size_t n = k ? b->npolicies : 1;
    const double t0 = enpu_now_s(), c0 = cpu_s();
    if (replay_trace_shape(b->trace, &sh, &t, &err) ||
        replay_run_policies(b->ps, k ? b->policies : one, n, t, &b->setup, k ? b->threads : 1, runs, &err))
      return fail(&err);
    const double wall = enpu_now_s() - t0, cpu = cpu_s() - c0;
    unsigned long long batches = 0;
    for (size_t i = 0; i < n; i++) batches += batches_of(runs[i]);
    char name[96];
    if (k) snprintf(name, sizeof name, "24-hour day, %zu policies", n);
    else snprintf(name, sizeof name, "one hour (conv trace), %s", b->policy);
    report(b, k, name, t->count, batches, wall, cpu, k ? 15 : 2, replay_result_summary(runs[0])->slo_attainment);
    for (size_t i = 0; i < n; i++) replay_result_free(runs[i]);
    replay_trace_free(t);
  }
  return 0;
}

static int bench_sweep(bench *b) {
  static const double rates[] = {0.5, 1, 2, 3, 5, 8};
  const replay_shape base = {.rate = 1, .warp = 1, .seed = 1};
  replay_sweep *sw = NULL;
  enpu_err err = {0};
  const double t0 = enpu_now_s(), c0 = cpu_s();
  if (replay_sweep_run(b->ps, b->policies, b->npolicies, b->trace, &base, rates, 6, &b->setup, b->threads, &sw,
                       &err))
    return fail(&err);
  const double wall = enpu_now_s() - t0, cpu = cpu_s() - c0;
  size_t requests = 0;
  for (size_t r = 0; r < sw->nrates; r++) requests += sw->requests[r];
  char name[96];
  snprintf(name, sizeof name, "sweep 0.5..8 of the hour, %zu pol.", b->npolicies);
  report(b, 2, name, requests, 0, wall, cpu, 10, sw->cells[0].slo_attainment);
  replay_sweep_free(sw);
  return 0;
}

static int bench_governors(bench *b) {
  static const char *const names[3] = {"ondemand", "pid", "pelm"};
  replay_job jobs[MAX_POLICIES + 3];
  replay_governor gov[3];
  replay_result *runs[MAX_POLICIES + 3] = {0};
  replay_pelm *agent = NULL;
  replay_pelm_params p;
  replay_pelm_params_default(&p);
  enpu_err err = {0};
  size_t n = 0;
  for (size_t i = 0; i < b->npolicies; i++) jobs[n++] = (replay_job){.policy = b->policies[i]};
  const double t0 = enpu_now_s(), c0 = cpu_s();
  if (replay_pelm_create(&p, &b->setup, &agent, &err)) return fail(&err);
  for (int k = 0; k < 3; k++) {
    if (replay_governor_parse(names[k], &gov[k], &err)) return fail(&err);
    gov[k].pelm = agent;
    jobs[n++] = (replay_job){.governor = &gov[k]};
  }
  if (replay_run_jobs(b->ps, jobs, n, b->trace, &b->setup, b->threads, runs, &err)) return fail(&err);
  const double wall = enpu_now_s() - t0, cpu = cpu_s() - c0;
  unsigned long long batches = 0;
  for (size_t i = 0; i < n; i++) batches += batches_of(runs[i]);
  char name[96];
  snprintf(name, sizeof name, "hour, 3 governors + %zu policies", b->npolicies);
  report(b, 3, name, b->trace->count, batches, wall, cpu, 30, replay_result_summary(runs[n - 1])->slo_attainment);
  for (size_t i = 0; i < n; i++) replay_result_free(runs[i]);
  replay_pelm_free(agent);
  return 0;
}

static int parse(int argc, char **argv, bench *b, const char **store) {
  for (int i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "--json")) b->json = 1;
    else if (!strcmp(argv[i], "--policy") && i + 1 < argc) b->policy = argv[++i];
    else if (!strcmp(argv[i], "--store") && i + 1 < argc) *store = argv[++i];
    else if (!strcmp(argv[i], "--threads") && i + 1 < argc) b->threads = atoi(argv[++i]);
    else return -1;
  }
  return b->threads >= 1 ? 0 : -1;
}

int main(int argc, char **argv) {
  const long cpus = sysconf(_SC_NPROCESSORS_ONLN);
  bench b = {.threads = cpus > 0 ? (int)cpus : 1, .policy = "enpu-all"};
  const char *store = NULL;
  if (parse(argc, argv, &b, &store) < 0) {
    fprintf(stderr, "usage: bench_replay [--store S] [--policy NAME] [--threads N] [--json]\n");
    return 2;
  }
  static const char *const synth[] = {"nodvfs", "dvfs-c", "enpu-all", "uniform"};
  char dir[STORE_FIXTURE_DIR_LEN], path[STORE_FIXTURE_PATH_LEN];
  enpu_err err = {0};
  if (!store && (store_fixture_dir_make("bench_replay", dir, path) != 0 || synth_store_write(path, synth, 4, &err)))
    return fail(&err);
  if (planstore_open(store ? store : path, &b.ps, &err) ||
      config_cluster_load(SRC("clusters/llama3-70b.json"), &b.cl, &err) ||
      config_model_load(SRC("models/llama3-70b.json"), &b.model, &err) ||
      config_chip_load(SRC("chips/tpuv5p.json"), &b.chip, &err) ||
      replay_setup_init(&b.setup, b.cl, b.model, b.chip, &err) ||
      replay_trace_load(SRC("traces/AzureLLMInferenceTrace_conv.csv"), false, &b.trace, &err))
    return fail(&err);
  bool uniform = false; /* the governors' table, not a policy the scheduler runs */
  for (size_t i = 0; i < planstore_policy_count(b.ps) && b.npolicies < MAX_POLICIES; i++) {
    const char *name = planstore_policy_name(b.ps, i);
    if (!strcmp(name, "uniform")) uniform = true;
    else b.policies[b.npolicies++] = name;
  }
  if (b.json) printf("{\"store\": \"%s\", \"threads\": %d, \"cases\": [", store ? store : "synthetic", b.threads);
  else
    printf("%-34s %9s %12s %8s %8s %8s %8s\n", "replay", "requests", "batches", "wall s", "CPU s", "target",
           "SLO %");
  int rc = bench_runs(&b);
  if (rc == 0) rc = bench_sweep(&b);
  if (rc == 0 && uniform) rc = bench_governors(&b);
  if (b.json) printf("]}\n");
  replay_trace_free(b.trace);
  config_chip_free(b.chip);
  config_model_free(b.model);
  config_cluster_free(b.cl);
  planstore_close(b.ps);
  if (!store && store_fixture_dir_remove(dir) != 0) return 1;
  return rc;
}
