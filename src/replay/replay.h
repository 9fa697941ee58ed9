/* replay.h — cluster replay of an LLM inference trace (DESIGN.md §8, paper §3.4, §4.8):
 * a discrete-event simulation of prefill/decode disaggregated nodes with continuous
 * batching, KV-cache transfer over DCN, SLO classes, and the DVFS-aware scheduler with
 * its two safeguards, driven by plans read from a plan store (planstore.h).
 *
 * Determinism: a run depends only on its inputs. The trace shaping (rate scaling, the
 * 24-hour day) draws from its own seeded generator; the simulation itself draws nothing
 * and breaks every tie by index, so the same inputs give bit-identical results.
 *
 * Units: time in ns, energy in nJ, power in W; token counts are plain integers. */
#ifndef ENPU_REPLAY_H
#define ENPU_REPLAY_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common.h"
#include "config.h"
#include "planstore.h"

/* ---------------------------------------------------------------------------------
 * Trace: Azure LLM inference CSV (`TIMESTAMP,ContextTokens,GeneratedTokens`,
 * timestamps `YYYY-MM-DD HH:MM:SS[.f…][+HH:MM]`). Arrivals are relative to the earliest
 * row and sorted (stable for equal times). */

typedef struct {
  double arrival_ns;
  int32_t context_tokens;   /* >= 1 */
  int32_t generated_tokens; /* >= 1; the first comes out of prefill */
} replay_request;

typedef struct {
  replay_request *requests;
  size_t count;
  size_t skipped;         /* bad rows skipped (skip_bad_rows only) */
  char first_skipped[ENPU_ERR_MSG_LEN]; /* message of the first skipped row, "" when none */
} replay_trace;

/* Parse a trace from memory; `name` is used in messages (file:line:column: ...). A bad
 * row is an error naming its line and column and what was expected, unless
 * skip_bad_rows, which skips it and counts it. Blank lines are ignored.
 * @return 0 and *out; ENPU_ERR_PARSE (syntax), ENPU_ERR_RANGE (a count < 1 or too large),
 * ENPU_ERR_INVALID (no data rows), ENPU_ERR_NOMEM. *out is NULL on failure. */
int replay_trace_parse(const char *text, size_t len, const char *name, bool skip_bad_rows,
                       replay_trace **out, enpu_err *err);
/* replay_trace_parse on a file's contents (ENPU_ERR_IO when it cannot be read). */
int replay_trace_load(const char *path, bool skip_bad_rows, replay_trace **out, enpu_err *err);
void replay_trace_free(replay_trace *t); /* NULL is a no-op */

/* How to reshape a trace before replaying it.
 *  rate: expected copies of every request (1 = as recorded; 0.5 keeps each request with
 *    probability 0.5; 5 = five copies). Copies beyond the first arrive uniformly at
 *    random between the request and the next one, so the trace's shape is kept.
 *  warp: arrival times are multiplied by warp (0.5 = twice the rate in half the time).
 *  day: tile the trace (period = its span plus one mean inter-arrival gap) over 24 hours
 *    and thin it with the diurnal curve of replay_diurnal_factor; the trace itself is the
 *    peak rate (it was recorded 18:15–19:14, inside the peak hours 14–20).
 * Order: day (if set), rate, then warp. Deterministic for a seed. */
typedef struct {
  double rate;
  double warp;
  bool day;
  uint64_t seed;
} replay_shape;

/* Rate factor of the 24-hour day at a time of day (hours, 0 <= h < 24): 1 from 14:00 to
 * 20:00, 0.3 at 04:00, linear in between. */
double replay_diurnal_factor(double hour);

/* @return 0 and a new trace; ENPU_ERR_INVALID for rate < 0, warp <= 0, non-finite values
 * or a result without requests; ENPU_ERR_NOMEM. */
int replay_trace_shape(const replay_trace *in, const replay_shape *shape, replay_trace **out,
                       enpu_err *err);

/* ---------------------------------------------------------------------------------
 * Cluster set-up and runs */

typedef struct {
  const config_cluster *cluster; /* nodes, chips, SLO classes, batching (kept, not copied) */
  double kv_bytes_per_token;     /* whole model (config_model.kv_bytes_per_token) */
  double dcn_gbps_per_chip;      /* config_chip.dcn_gbps (Table 6: 50) */
  double idle_w_per_chip;        /* replay_idle_power_w */
} replay_setup;

/* Power of an idle chip: every component's static power at the peak state through the
 * fixed regulator at activity 0, plus the chip's other static power. An idle chip keeps
 * its rails at the NoDVFS voltage (the paper does not sleep idle chips, §4.8) and does no
 * switching; the same figure is charged under every policy.
 * @return 0, or the power module's error. */
int replay_idle_power_w(const config_chip *chip, double *watts, enpu_err *err);

/* Fill a set-up from loaded files (KV bytes from the model, DCN from the chip, idle
 * power from the chip's tables). @return 0 or an error (model/cluster mismatch:
 * ENPU_ERR_INVALID naming both). */
int replay_setup_init(replay_setup *s, const config_cluster *cluster, const config_model *model,
                      const config_chip *chip, enpu_err *err);

enum { REPLAY_PREFILL = 0, REPLAY_DECODE = 1, REPLAY_NPHASE = 2 };

/* What happened to a request. */
enum {
  REPLAY_DONE = 0,             /* served */
  REPLAY_UNCOVERED_PREFILL = 1, /* no store bucket covers it alone in prefill: not run */
  REPLAY_UNCOVERED_DECODE = 2   /* prefilled, but no decode bucket covers it alone */
};

typedef struct {
  double arrival_ns;
  double ttft_ns;        /* arrival → end of its prefill batch (first token); NaN if not run */
  double tpot_ns;        /* (last token − first token) / (generated − 1); NaN if generated
                            is 1 or not served */
  double finish_ns;      /* last token; NaN if not served */
  double kv_transfer_ns; /* KV-cache transfer time over DCN (0 when there is no decode) */
  double energy_nj;      /* its share of the batches it ran in (equal split per batch) */
  int32_t context_tokens, generated_tokens;
  uint8_t status;        /* REPLAY_DONE / REPLAY_UNCOVERED_* */
  uint8_t ttft_class;    /* SLO class index by input length */
  uint8_t tpot_class;    /* SLO class index by total length */
  bool ttft_met, tpot_met, slo_met;
} replay_request_result;

/* Five-minute window [start_ns, start_ns + REPLAY_WINDOW_NS); the last one is cut at the
 * end of the run. Batch energy and busy time are split over windows in proportion to
 * time; idle energy is charged per window for the node time not busy. */
#define REPLAY_WINDOW_NS 300e9
typedef struct {
  double start_ns, length_ns;
  uint64_t arrivals, finished, slo_met; /* finished: served requests whose last token is here */
  double energy_nj[REPLAY_NPHASE];      /* busy + idle */
  double busy_node_ns[REPLAY_NPHASE];   /* node-time spent running batches */
  uint64_t batches[REPLAY_NPHASE], batches_locked[REPLAY_NPHASE];
} replay_window;

typedef struct {
  double busy_energy_nj, idle_energy_nj, energy_nj; /* energy = busy + idle */
  double busy_node_ns;    /* node-time running batches */
  uint64_t batches;       /* prefill batches / decode iterations */
  uint64_t slowed;        /* ran a plan slower than the fastest (walk prefix > 0) */
  uint64_t safeguard1;    /* T_target lowered by safeguard 1 to protect a queued request */
  uint64_t locked;        /* locked to the fastest plan by safeguard 2 */
  uint64_t late;          /* T_target below the fastest plan: ran the fastest, late */
  uint64_t tokens;        /* prefill: context tokens run; decode: tokens generated */
  uint64_t padded_tokens; /* batch × seq of the buckets run (prefill) / batch (decode) */
} replay_phase_stats;

typedef struct {
  char policy[64];
  uint64_t requests, served, uncovered;
  uint64_t ttft_met, tpot_met, slo_met;
  double slo_attainment;  /* slo_met / requests (uncovered count as missed) */
  double end_ns;          /* the last event: the horizon for idle energy */
  replay_phase_stats phase[REPLAY_NPHASE];
  double energy_nj;       /* both phases */
  double ttft_p50_ns, ttft_p99_ns, tpot_p50_ns, tpot_p99_ns; /* over served requests */
  double kv_transfer_total_ns, kv_transfer_mean_ns, kv_bytes;
  uint64_t context_tokens, generated_tokens; /* of the trace */
  char uncovered_example[ENPU_ERR_MSG_LEN];  /* the store's message for the first one */
} replay_summary;

typedef struct replay_result replay_result;

/* Replay `trace` on the cluster with the plans of `policy` (a policy name of the store).
 * Fails (nothing returned) when a lookup fails in a way that is not "no bucket covers this
 * request alone" (which is counted as uncovered), e.g. a store whose decode buckets do
 * not cover the lengths a running batch reaches.
 * @return 0 and *out; ENPU_ERR_NOT_FOUND (unknown policy), ENPU_ERR_INVALID (bad set-up),
 * the store's errors, ENPU_ERR_NOMEM. */
int replay_run(const planstore *ps, const char *policy, const replay_trace *trace,
               const replay_setup *setup, replay_result **out, enpu_err *err);
void replay_result_free(replay_result *r); /* NULL is a no-op */

const replay_summary *replay_result_summary(const replay_result *r);
/* Per request, in trace order (replay_result_summary(r)->requests entries). */
const replay_request_result *replay_result_requests(const replay_result *r);
const replay_window *replay_result_windows(const replay_result *r, size_t *count);

/* ---------------------------------------------------------------------------------
 * Outputs */

/* The summary of one or more runs on the same trace as a JSON object:
 * { "requests", "policies": { NAME: { "requests", "served", "uncovered", "slo_attainment",
 *   "ttft_attainment", "tpot_attainment", "energy_j": {prefill, decode, total},
 *   "idle_energy_j": {...}, "energy_savings": {prefill, decode, total} (vs nodvfs; null
 *   without a nodvfs run), "ttft_ms"/"tpot_ms": {p50, p99}, "batches": {prefill: {total,
 *   slowed, safeguard1, locked, late}, decode: {...}}, "kv_transfer": {...}, ... } } }
 * @return 0, ENPU_ERR_NOMEM. */
int replay_summary_json(const replay_result *const *runs, size_t n, json_t **out, enpu_err *err);

/* Write under `dir` (created if missing): requests_<policy>.csv, windows_<policy>.csv
 * for every run, and summary.json (replay_summary_json).
 * @return 0, ENPU_ERR_IO naming the file. */
int replay_write_outputs(const char *dir, const replay_result *const *runs, size_t n,
                         enpu_err *err);

#endif /* ENPU_REPLAY_H */
