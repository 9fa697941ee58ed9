/* test_replay.h — what the replay's unit tests share: the fixture (a synthetic store with
 * the analytical model of tests/integration/replay/synth_store.h, Table 3's Llama3-70B
 * cluster, the conv trace) and small helpers. test_replay.c holds the trace, set-up and
 * store-check tests and main; test_replay_runs.c the runs. Expected values come from
 * the model's formulas, never from the replay's own output. */
#ifndef TEST_REPLAY_H
#define TEST_REPLAY_H

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../integration/replay/synth_store.h"
#include "planstore.h"
#include "replay.h"

#define TRACE_PATH ENPU_SOURCE_DIR "/jobs/traces/AzureLLMInferenceTrace_conv.csv"
#define CLUSTER_PATH ENPU_SOURCE_DIR "/jobs/clusters/llama3-70b.json"
#define MODEL_PATH ENPU_SOURCE_DIR "/jobs/models/llama3-70b.json"
#define CHIP_PATH ENPU_SOURCE_DIR "/jobs/chips/tpuv5p.json"
#define NPOL 3

extern const char *const all_policies[NPOL];       /* dvfs-c, enpu-all, nodvfs */
extern const char *const store_policies[NPOL + 1]; /* and uniform (the fixture's store) */

typedef struct {
  char dir[STORE_FIXTURE_DIR_LEN], store[STORE_FIXTURE_PATH_LEN];
  planstore *ps;
  config_cluster *cluster;
  config_model *model;
  config_chip *chip;
  replay_setup setup;
  replay_trace *trace; /* the conv trace */
} ctx;

/* The first n requests of a trace (a view: no copy). */
replay_trace head_of(const replay_trace *t, size_t n);
replay_trace *parse_ok(const char *text);
/* One policy, its own horizon. */
replay_result *run(ctx *c, const char *policy, const replay_trace *t, const replay_setup *s);
/* Every policy of all_policies, aligned (runs[k] is all_policies[k]'s). */
void run_all(ctx *c, const replay_trace *t, const replay_setup *s, int threads, replay_result *runs[NPOL]);
void free_all(replay_result *runs[NPOL]);
/* A set-up for a changed copy of the fixture's cluster (idle powers for its mode). */
void setup_for(ctx *c, const config_cluster *cl, replay_setup *s);
/* The fixture's cluster with other node counts (0: the fixture's), into *cl, and its set-up. */
void resized(ctx *c, config_cluster *cl, replay_setup *s, int prefill_nodes, int decode_nodes);
/* The scheduler's per-request view: T(1, bucket of seq) of the synthetic model. */
double prefill_alone_ns(int context_tokens);

/* test_replay_runs.c */
void test_conservation_table3(void **state);
void test_single_request(void **state);
void test_common_horizon(void **state);
void test_prefill_batches_padded(void **state);
void test_safeguard1(void **state);
void test_safeguard1_below_fastest(void **state);
void test_safeguard1_scans_queue(void **state);
void test_safeguard2(void **state);
void test_unknown_policy(void **state);
void test_slo_extrapolated(void **state);
void test_sleep(void **state);
/* test_replay_fleet.c */
void test_fleet_sleep_wake(void **state);
void test_fleet_decode_drain(void **state);
void test_fleet_names(void **state);
void test_kv_contention(void **state);
void test_window_slack(void **state);
void test_determinism_and_outputs(void **state);
void test_sweep(void **state);
void test_switch_burst(void **state);
void test_predictive_cap(void **state);

/* test_replay_chunk.c */
void test_chunked_prefill(void **state);
void test_fallback_decode(void **state);
void test_beyond_grid_governor(void **state);
void test_class_counts(void **state);
void test_fallback_admitted_batch(void **state);

/* test_replay_gov.c */
void test_spec_formulas(void **state);
void test_governor_peak_is_nodvfs(void **state);
void test_governor_fixed_state(void **state);
void test_governor_speculation(void **state);
void test_governors_run(void **state);
void test_pelm_deterministic(void **state);
void test_pelm_save_load(void **state);
void test_governor_bad_input(void **state);

/* test_replay_convert.c */
void test_convert_formats(void **state);
void test_convert_order(void **state);
void test_convert_bad_input(void **state);

#endif /* TEST_REPLAY_H */
