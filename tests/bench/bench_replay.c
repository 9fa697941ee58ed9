/* bench_replay.c — replay speed against the targets of issue 6: the one-hour conv trace
 * with one policy (target <= 2 s) and the 24-hour day built from it (target <= 60 s), on
 * Table 3's Llama3-70B cluster with the synthetic store of
 * tests/integration/replay/synth_store.h (written to a temporary file first).
 * Usage: bench_replay [--policy NAME] [--json]. Prints figures; never fails on speed. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../integration/replay/synth_store.h"
#include "replay.h"

#define SRC(p) ENPU_SOURCE_DIR "/jobs/" p

typedef struct {
  const char *name;
  bool day;
  double target_s;
} bench_case;

static int fail(const enpu_err *err) {
  fprintf(stderr, "bench_replay: %s\n", err->msg);
  return 1;
}

int main(int argc, char **argv) {
  const char *policy = "enpu-all";
  int json = 0;
  for (int i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "--json")) json = 1;
    else if (!strcmp(argv[i], "--policy") && i + 1 < argc) policy = argv[++i];
    else {
      fprintf(stderr, "usage: bench_replay [--policy NAME] [--json]\n");
      return 2;
    }
  }
  static const char *const policies[] = {"nodvfs", "dvfs-c", "enpu-all"};
  char dir[STORE_FIXTURE_DIR_LEN], store[STORE_FIXTURE_PATH_LEN];
  if (store_fixture_dir_make("bench_replay", dir, store) != 0) return 1;
  enpu_err err = {0};
  planstore *ps = NULL;
  config_cluster *cl = NULL;
  config_model *model = NULL;
  config_chip *chip = NULL;
  replay_trace *trace = NULL;
  replay_setup setup;
  if (synth_store_write(store, policies, 3, &err) || planstore_open(store, &ps, &err) ||
      config_cluster_load(SRC("clusters/llama3-70b.json"), &cl, &err) ||
      config_model_load(SRC("models/llama3-70b.json"), &model, &err) || config_chip_load(SRC("chips/tpuv5p.json"), &chip, &err) ||
      replay_setup_init(&setup, cl, model, chip, &err) ||
      replay_trace_load(SRC("traces/AzureLLMInferenceTrace_conv.csv"), false, &trace, &err))
    return fail(&err);
  static const bench_case cases[] = {{"one hour (conv trace)", false, 2}, {"24-hour day", true, 60}};
  if (json) printf("{\"policy\": \"%s\", \"cases\": [", policy);
  else printf("%-22s %9s %12s %10s %10s %8s %9s\n", "replay", "requests", "iterations", "seconds", "target s", "SLO %",
              "req/s sim");
  for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
    replay_trace *t = NULL;
    replay_result *r = NULL;
    const replay_shape sh = {.rate = 1, .warp = 1, .day = cases[k].day, .seed = 1};
    const double t0 = enpu_now_s();
    if (replay_trace_shape(trace, &sh, &t, &err) || replay_run(ps, policy, t, &setup, &r, &err)) return fail(&err);
    const double secs = enpu_now_s() - t0;
    const replay_summary *s = replay_result_summary(r);
    const unsigned long long iters = (unsigned long long)(s->phase[0].batches + s->phase[1].batches);
    if (json)
      printf("%s{\"case\": \"%s\", \"requests\": %zu, \"batches\": %llu, \"seconds\": %.3f, \"target_s\": %g, "
             "\"slo_attainment\": %.6f}", k ? ", " : "", cases[k].name, t->count, iters, secs, cases[k].target_s,
             s->slo_attainment);
    else
      printf("%-22s %9zu %12llu %10.3f %10.0f %8.2f %9.0f\n", cases[k].name, t->count, iters, secs, cases[k].target_s,
             100 * s->slo_attainment, (double)t->count / secs);
    replay_result_free(r);
    replay_trace_free(t);
  }
  if (json) printf("]}\n");
  replay_trace_free(trace);
  config_chip_free(chip);
  config_model_free(model);
  config_cluster_free(cl);
  planstore_close(ps);
  return store_fixture_dir_remove(dir) == 0 ? 0 : 1;
}
