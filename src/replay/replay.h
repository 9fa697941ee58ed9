/* replay.h — cluster replay of an LLM inference trace (paper §3.4, §4.8): a
 * discrete-event simulation of prefill/decode disaggregated nodes with continuous
 * batching, KV-cache transfer over DCN, SLO classes, idle chips, and the DVFS-aware
 * scheduler with its two safeguards (and, by the cluster's "safeguards", mid-batch plan
 * switching and a predictive T_target cap), driven by plans read from a plan store
 * (planstore.h); and a load sweep over request rates.
 *
 * Determinism: a run depends only on its inputs. The trace shaping (rate scaling, the
 * 24-hour day) draws from its own seeded generator; the simulation itself draws nothing
 * and breaks every tie by index, so the same inputs give bit-identical results, with
 * any number of threads.
 *
 * Energy of a run: busy (the plans of the batches run) + idle (node time outside
 * batches, at the cluster's idle power for the policy) + KV (bytes moved over DCN).
 * Of idle, the time asleep is sleep energy and the wake-ups transition energy (idle
 * mode sleep, or autoscaling: replay_fleet_params, replay_job_parse).
 * Runs of one trace are compared over one common horizon (replay_align_horizon): a
 * policy that finishes later is not charged idle time the others escape.
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

#define REPLAY_YEAR_MIN 1970
#define REPLAY_YEAR_MAX 2100
/* A trace covers at most a leap year: BurstGPT's releases hold two months each (its
 * README: BurstGPT_1.csv "the first 2 months", BurstGPT_2.csv "the second 2 months"); a
 * row farther off is a unit or date error. Arrival times then keep a few ns. */
#define REPLAY_SPAN_MAX_S (366.0 * 86400)
#define REPLAY_TOKENS_MAX 2097152 /* 2M tokens: twice the longest context of §3.4 */
/* A shaped trace: a week of Azure's busier service; a run holds ~180 bytes per request
 * and policy. */
#define REPLAY_REQUESTS_MAX 30000000

typedef struct {
  double arrival_ns;
  int32_t context_tokens;   /* >= 1 */
  int32_t generated_tokens; /* >= 1; the first comes out of prefill */
} replay_request;

typedef struct {
  replay_request *requests;
  size_t count;
  size_t skipped;                       /* bad rows skipped (skip_bad_rows only) */
  char first_skipped[ENPU_ERR_MSG_LEN]; /* message of the first skipped row, "" when none */
  double origin_tod_s;                  /* time of day of arrival 0, seconds after midnight (as written,
                                           UTC when the rows carry an offset; 0 for a shaped day) */
  int64_t origin_s;                     /* arrival 0's whole second since the epoch, as written (the
                                           offset kept, as origin_tod_s); a shaped day's midnight */
  double origin_frac_s;                 /* and its fraction of a second, [0, 1) */
  size_t unsorted;                      /* rows earlier than the row before them in the file */
  size_t first_unsorted_line;           /* the file line of the first of them, 0 when none */
} replay_trace;

/* Parse a trace from memory; `name` is used in messages (file:line:column: ...). A bad
 * row is an error naming its line and column and what was expected, unless
 * skip_bad_rows, which skips it and counts it. Blank lines are ignored. A year outside
 * [REPLAY_YEAR_MIN, REPLAY_YEAR_MAX] or a token count above REPLAY_TOKENS_MAX makes a
 * row bad. Rows spanning more than REPLAY_SPAN_MAX_S are an error of the trace (naming
 * the row farthest from the median), even with skip_bad_rows. Rows out of time order are
 * sorted (stable), and counted in `unsorted` with the first one's line for the caller
 * to report: a trace is a set of arrivals, but an unsorted file is worth a warning.
 * @return 0 and *out; ENPU_ERR_PARSE (syntax), ENPU_ERR_RANGE (a value out of range),
 * ENPU_ERR_INVALID (no data rows), ENPU_ERR_NOMEM. *out is NULL on failure. */
int replay_trace_parse(const char *text, size_t len, const char *name, bool skip_bad_rows, replay_trace **out,
                       enpu_err *err);
/* replay_trace_parse on a file's contents (ENPU_ERR_IO when it cannot be read). */
int replay_trace_load(const char *path, bool skip_bad_rows, replay_trace **out, enpu_err *err);
void replay_trace_free(replay_trace *t); /* NULL is a no-op */

/* One data row of the trace CSV (row[0..len), no newline) checked as replay_trace_parse
 * checks it, errors naming name:line:column: its time as whole seconds since the epoch
 * and the fraction, and its token counts into rq (arrival_ns untouched). */
int replay_trace_row(const char *row, size_t len, const char *name, size_t line, int64_t *whole_s, double *frac_s,
                     replay_request *rq, enpu_err *err);

/* `enpu trace convert`: a public trace format into the replay's CSV
 * (TIMESTAMP,ContextTokens,GeneratedTokens), every row written checked by
 * replay_trace_row. Formats:
 *  azure2023, azure2024  the replay's own columns (2024's timestamps carry +00:00),
 *                        rows passed through unchanged;
 *  burstgpt   either published layout, told apart by its header: the 6 columns of
 *             BurstGPT_1/_2 (Timestamp, Model, Request tokens, Response tokens, Total
 *             tokens, Log Type) or the 8 of BurstGPT_3 (Timestamp, Session ID, Elapsed
 *             time, Model, ...); Timestamp in s from the trace's start, context =
 *             Request tokens, generated = Response tokens;
 *  mooncake   JSON lines {"timestamp": ms from the start, "input_length",
 *             "output_length", "hash_ids"};
 *  csv        any CSV with a header; `map` names its columns:
 *             "time=COL,context=COL,generated=COL[,unit=s|ms|us|datetime]" (COL a header
 *             name or a 1-based index; unit s by default, datetime: the reader's format).
 * Relative times start at `start` ("YYYY-MM-DD HH:MM:SS", NULL: 1970-01-01 00:00:00). A bad
 * row is an error naming name:line:column, or with skip_bad_rows is counted (the first
 * one's message kept). Rows out of time order (a row earlier than the one before it) are
 * written sorted by time (stable), counted in `unsorted` with the first one's line, or
 * with `strict` refused (ENPU_ERR_PARSE naming that line): the replay would sort them
 * anyway, and a user should know the file was not in order.
 * @return 0 with *csv (malloc'd text), or an error. */
typedef enum {
  REPLAY_FORMAT_AZURE2023,
  REPLAY_FORMAT_AZURE2024,
  REPLAY_FORMAT_BURSTGPT,
  REPLAY_FORMAT_MOONCAKE,
  REPLAY_FORMAT_CSV,
  REPLAY_NFORMAT
} replay_format;
extern const char *const replay_format_names[REPLAY_NFORMAT + 1]; /* NULL-terminated */
typedef struct {
  replay_format format;
  const char *map;
  const char *start;
  bool skip_bad_rows;
  bool strict;    /* refuse rows out of time order instead of sorting them */
  enpu_stop stop; /* asked every REPLAY_CONVERT_STOP_ROWS lines: yes, ENPU_ERR_STOPPED */
} replay_convert_options;
#define REPLAY_CONVERT_STOP_ROWS 65536
typedef struct {
  size_t rows, skipped;
  char first_skipped[ENPU_ERR_MSG_LEN];
  size_t unsorted;            /* rows earlier than the row before them in the input */
  size_t first_unsorted_line; /* the input line of the first of them, 0 when none */
} replay_convert_counts;
int replay_trace_convert(const char *text, size_t len, const char *name, const replay_convert_options *o,
                         char **csv, replay_convert_counts *counts, enpu_err *err);

/* How to reshape a trace before replaying it.
 *  rate: expected copies of every request (1 = as recorded; 0.5 keeps each request with
 *    probability 0.5; 5 = five copies). Copies beyond the first arrive uniformly at
 *    random between the request and the next one, so the trace's shape is kept.
 *  warp: arrival times are multiplied by warp (0.5 = twice the rate in half the time).
 *  day: tile the trace (period = its span plus one mean inter-arrival gap) over 24 hours
 *    from midnight and thin it with the diurnal curve of replay_diurnal_factor; the
 *    trace itself is the peak rate (the shipped one was recorded 18:15–19:14, inside the
 *    peak hours 14–20).
 *  burst: the rate is multiplied by burst.k for the requests arriving inside a burst
 *    (`enpu trace burst`): [start_s, start_s + length_s) seconds after arrival 0, or,
 *    with period_s > 0, the first length_s of every period_s (on/off bursts). k = 0
 *    (a zeroed burst): none.
 * Order: day (if set), rate and burst, then warp. Deterministic for a seed. */
typedef struct {
  double k;        /* rate factor inside a burst: 0 none, else finite and >= 1 */
  double start_s;  /* a window's start after arrival 0 (period_s == 0) */
  double length_s; /* > 0: the window's length, or each period's burst */
  double period_s; /* > length_s: on/off bursts of length_s every period_s; 0: one window */
} replay_burst;

typedef struct {
  double rate;
  double warp;
  bool day;
  uint64_t seed;
  replay_burst burst;
} replay_shape;

/* Rate factor of the 24-hour day at a time of day (hours, 0 <= h < 24): 1 from 14:00 to
 * 20:00, 0.3 at 04:00, linear in between. */
double replay_diurnal_factor(double hour);

/* Peak hours of §4.8: 14:00 <= time of day < 20:00 (seconds after midnight, any value). */
bool replay_is_peak(double time_of_day_s);

/* The prefill pool's utilisation the predictive safeguard lets slowed batches reach, for
 * β (the cluster's predictive_beta) and its prefill nodes: 1 − β/√nodes (square-root
 * staffing, replay_switch.c). At or below 0 (nodes ≤ β², about 6 at the default β) every
 * prefill batch runs its fastest plan (job init gives such a pool the switching
 * safeguards). */
double replay_predictive_u_max(double beta, int prefill_nodes);

/* @return 0 and a new trace; ENPU_ERR_INVALID for rate < 0, warp <= 0, non-finite values
 * or a result without requests; ENPU_ERR_RANGE when the result would hold more than
 * REPLAY_REQUESTS_MAX requests; ENPU_ERR_NOMEM. */
int replay_trace_shape(const replay_trace *in, const replay_shape *shape, replay_trace **out, enpu_err *err);

/* ---------------------------------------------------------------------------------
 * Cluster set-up */

#define REPLAY_MAX_STATE 255 /* V/f states of a chip (config_chip.freq_states) */

/* Autoscaling (replay_fleet.c), a reactive policy per pool. Every control period it
 * samples each pool's demand in instances: prefill, its busy nodes plus the queued
 * context tokens over max_batch_tokens (rounded up); decode, its requests (running,
 * waiting, on their way) over fill × the largest batch (rounded up). The target is the
 * window's peak demand × (1 + headroom), plus spare, within [1, nodes]; and while the SLO
 * attainment of the outcomes of the last window (safeguard 2's outcomes: whole requests,
 * or per phase) is below `attainment`, one instance above the awake ones. Above the
 * awake count, draining instances are kept and sleeping ones woken at once; below it
 * for hold_s without a break (hysteresis), the surplus drains: no new work, and when
 * its last batch (decode: its last member, its KV drained by decoding it out) ends it
 * sleeps. A woken instance takes work wake_ns after the decision.
 * Predictive (+pas): the prefill pool's target is instead the larger of its demand now ×
 * (1 + headroom) and the square-root staffing of the load the burst safeguards predict
 * from recent arrivals (replay_switch.c), L + β√L with β the cluster's predictive_beta,
 * plus spare: it scales up as arrivals rise, before a queue forms, and forgets a peak
 * once the prediction's windows have passed. Decode stays reactive. */
typedef struct {
  double control_ms;  /* 100 */
  double window_s;    /* 60 */
  double hold_s;      /* 120 */
  double headroom;    /* 0.25 */
  int spare;          /* 1 */
  double decode_fill; /* 0.5 */
  double attainment;  /* 0.99 */
  int min_outcomes;   /* 20: fewer outcomes in the window say nothing about attainment */
} replay_fleet_params;
void replay_fleet_params_default(replay_fleet_params *p);

typedef struct {
  const config_cluster *cluster;          /* nodes, chips, SLO classes, batching, idle, scheduler
                                             (kept, not copied) */
  const config_model *model;              /* layers, KV bytes (config_model_kv_bytes) and the
                                             speculative acceptance table (kept) */
  double dcn_gbps_per_chip;               /* config_chip.dcn_gbps (Table 6: 50) */
  double idle_w_per_chip[CONFIG_NPOLICY]; /* an awake idle chip under each policy */
  int peak_state;                         /* config_chip.freq_states */
  double tdp_w;                           /* config_chip.tdp_w: scale of a governor's power reading */
  /* An awake idle chip whose every component sits at chip-wide state s (1..peak_state),
   * on the chip-wide rail of the uniform policy: what a governor's idle node draws. */
  double idle_w_state[REPLAY_MAX_STATE + 1];
  /* A mid-batch switch to a faster plan (config_safeguards): every rail of a chip moves
   * at once, charged as the largest move there is, each component from state 1 to the
   * peak: its delay (power_transition_ns) and the chip's energy over it at the peak
   * state's idle power (a rising rail adds no leakage, power_transition_energy). */
  double switch_ns;
  double switch_nj_per_chip;
  config_safeguards safeguards; /* the cluster's, or the caller's override */
  /* The fleet (replay_fleet.c): an awake idle chip under each idle mode and policy (the
   * sleep mode's entry is lowest-state's: its awake part), the chip's deep sleep, and
   * the autoscaling policy's parameters. */
  double idle_w_mode[CONFIG_NIDLE_MODE][CONFIG_NPOLICY];
  bool has_deep_sleep;       /* the chip file has "power_states" (autoscaling needs it) */
  double sleep_w_per_chip;   /* config_deep_sleep.w */
  double wake_ns;            /* config_deep_sleep.wake_ms */
  double wake_nj_per_chip;   /* config_deep_sleep.wake_energy_j */
  replay_fleet_params fleet; /* replay_fleet_params_default unless the caller sets them */
} replay_setup;

/* Power of an idle, awake chip under `policy` for the cluster's idle mode: every
 * component's static power at activity 0 plus the chip's other static power. At "peak"
 * (and for nodvfs always) every component is at its peak state behind the fixed
 * regulator. Otherwise the components the policy scales sit at their lowest V/f state
 * (state 1) behind the DVFS regulator, the rest at peak: dvfs-c scales the compute core
 * (SA, VU, SRAM as one domain), enpu-c every component with only the HBM controller
 * scaling, enpu-all and ideal the HBM I/O too (paper §4.1, Table 6; power.h).
 * @return 0, ENPU_ERR_INVALID for an unknown policy, or the power module's error. */
int replay_idle_power_w(const config_chip *chip, config_policy policy, config_idle_mode mode, double *watts,
                        enpu_err *err);
/* The same for every component at chip-wide state `state` (1..freq_states) on the
 * uniform policy's rail (power.h, POWER_REG_CHIPWIDE); at the peak state it is NoDVFS's.
 * @return 0, ENPU_ERR_RANGE for a state out of range, or the power module's error. */
int replay_idle_power_state_w(const config_chip *chip, int state, double *watts, enpu_err *err);

/* Fill a set-up from loaded files (KV bytes from the model, DCN from the chip, idle
 * power per policy from the chip's tables). @return 0 or an error (model/cluster
 * mismatch: ENPU_ERR_INVALID naming both). */
int replay_setup_init(replay_setup *s, const config_cluster *cluster, const config_model *model,
                      const config_chip *chip, enpu_err *err);

/* Check that the store at `store_path` was compiled for the cluster's model, the model
 * given (enpu validate --job's), and the chip and node parallelism given: its provenance
 * (model, chip and cluster documents) must name the same model and chip and the same
 * chips and dp/tp/pp/ep per node, or the plans mean nothing for this cluster. It reads
 * only the provenance, so a caller makes it before any work. A store without provenance documents
 * (hand-made) passes. When the names agree but the model or chip file's content hash
 * differs from the store's, `warning` (cap bytes, may be NULL) says so.
 * @return 0; ENPU_ERR_INVALID naming the mismatch; the store's errors. */
int replay_check_store(const char *store_path, const config_cluster *cluster, const config_model *model,
                       const config_chip *chip, char *warning, size_t cap, enpu_err *err);

/* ---------------------------------------------------------------------------------
 * Runs */

/* Phases are config_phase values throughout, and the replay hands them to
 * planstore_lookup as they are: the store's codes must be the same. */
_Static_assert(CONFIG_PREFILL == PLANSTORE_PREFILL && CONFIG_DECODE == PLANSTORE_DECODE && CONFIG_NPHASE == 2,
               "config_phase and the plan store's phase codes must agree");

/* What happened to a request. Every request the store can serve at all is run: within
 * the bucket grid on its compiled plans, a prefill longer than the largest seq bucket as
 * chunked prefill, a decode longer than the largest seq bucket on the fallback (its
 * NoDVFS time and energy extrapolated from the store's largest decode buckets;
 * replay_chunk.c). A request even that cannot serve (its KV cache beyond every compiled
 * bucket's, or its bucket failed or not compiled yet) is "unservable": counted, named
 * with a reason (replay_summary.unservable_example), never run, a miss in the SLO
 * attainment. Decided at admission, for both phases. */
enum {
  REPLAY_DONE = 0,      /* served */
  REPLAY_UNSERVABLE = 1 /* no plan, chunk or fallback can serve it: not run */
};

/* How a served request was served (replay_request_result.served_by, bits): 0 = compiled
 * plans only; its prefill ran in chunks; at least one of its decode iterations ran on the
 * fallback (its own length, or a batch-mate's, beyond the largest decode seq bucket). */
enum { REPLAY_BY_CHUNKED = 1, REPLAY_BY_FALLBACK = 2, REPLAY_NBY = 4 };
extern const char *const replay_by_names[REPLAY_NBY]; /* "plan", "chunked", "fallback", "chunked+fallback" */

typedef struct {
  double arrival_ns;
  double ttft_ns;                  /* arrival → end of its prefill batch (first token); NaN if not run */
  double tpot_ns;                  /* (last token − first token) / (generated − 1); NaN if generated
                                      is 1 or not served */
  double finish_ns;                /* last token; NaN if not served */
  double kv_transfer_ns;           /* end of prefill → KV cache on its decode node (0 without decode) */
  double energy_nj;                /* equal share of every batch it ran in + its KV transfer */
  double ttft_slo_ns, tpot_slo_ns; /* its SLOs (class, or extrapolated) */
  int32_t context_tokens, generated_tokens;
  uint8_t status;        /* REPLAY_DONE / REPLAY_UNSERVABLE */
  uint8_t served_by;     /* REPLAY_BY_* bits (0: compiled plans only) */
  uint8_t ttft_class;    /* SLO class index by input length */
  uint8_t tpot_class;    /* SLO class index by total length */
  bool slo_extrapolated; /* longer than the longest class: SLOs scaled from it */
  bool ttft_met, tpot_met, slo_met;
} replay_request_result;

/* Five-minute window [start_ns, start_ns + REPLAY_WINDOW_NS); the last one is cut at the
 * horizon. Batch energy and busy time are split over windows in proportion to time,
 * idle energy likewise per node; a KV transfer's energy is charged where it starts. */
#define REPLAY_WINDOW_NS 300e9
#define REPLAY_NSLACK 5 /* SLO-slack statistics (Figure 5): P1, P25, mean, P75, P99 */
typedef struct {
  double start_ns, length_ns;
  uint64_t arrivals;
  uint64_t finished, slo_met, ttft_met, tpot_met; /* served requests whose last token is here */
  double busy_energy_nj[CONFIG_NPHASE], idle_energy_nj[CONFIG_NPHASE], kv_energy_nj;
  double busy_node_ns[CONFIG_NPHASE]; /* node-time running batches */
  double occupancy_ns;                /* decode: Σ members × iteration time */
  uint64_t batches[CONFIG_NPHASE], safeguard1[CONFIG_NPHASE], locked[CONFIG_NPHASE];
  /* (SLO − latency) / SLO of the requests finished here: TTFT, and TPOT (generated > 1);
   * NaN when none. */
  double ttft_slack[REPLAY_NSLACK], tpot_slack[REPLAY_NSLACK];
} replay_window;

typedef struct {
  double busy_energy_nj, idle_energy_nj, energy_nj; /* energy = busy + idle */
  double busy_node_ns;                              /* node-time running batches */
  double asleep_node_ns;                            /* node-time asleep (idle mode sleep) */
  double wake_node_ns;                              /* node-time waking up */
  double sleep_energy_nj;                           /* of idle_energy_nj: asleep */
  double transition_energy_nj;                      /* of idle_energy_nj: waking up */
  uint64_t wakes, sleeps;                           /* autoscaling: instances woken / put to sleep */
  double occupancy_ns;                              /* decode: Σ members × iteration time */
  uint64_t batches;                                 /* prefill batches / decode iterations */
  uint64_t slowed;                                  /* ran a plan slower than the fastest (walk prefix > 0) */
  uint64_t slowest;                                 /* ran the slowest plan of its bucket (the whole walk) */
  uint64_t safeguard1;                              /* given a less aggressive plan by safeguard 1 */
  uint64_t safeguard1_fastest;                      /* ... down to the fastest (its own target allowed slower) */
  uint64_t locked;                                  /* run while safeguard 2 locked the chips to peak */
  uint64_t late;                                    /* its own T_target below the fastest plan: ran the fastest */
  uint64_t tokens;                                  /* prefill: context tokens run; decode: tokens generated */
  uint64_t padded_tokens;                           /* bucket batch × seq (prefill) / bucket batch (decode) */
  uint64_t padded_max;                              /* the largest of one batch */
  uint64_t predictive;                              /* of safeguard1: the predictive cap bound it */
  uint64_t switched;                                /* switched to a faster plan mid-way (once or more) */
  uint64_t switches;                                /* switches in all */
  uint64_t chunked;                                 /* prefill: batches run as chunked prefill */
  uint64_t chunks;                                  /* prefill: their chunks */
  uint64_t fallback;                                /* decode: iterations run on the fallback */
  double fastest_node_ns;                           /* node-time of batches at their fastest plan
                                                       (no slack used: 0 % slack) */
  double switch_nj;                                 /* their V/f transitions (node energy) */
  double switch_extra_nj;                           /* the faster suffixes' energy over the suffixes
                                                       they replaced */
} replay_phase_stats;

/* Per SLO class (the TTFT class: by input length): how its requests were served, and
 * the SLO slack of the served ones, (SLO − latency) / SLO summed (the mean is the slack a
 * policy had left; nodvfs's is the slack there is to spend). */
typedef struct {
  uint64_t requests;
  uint64_t by[REPLAY_NBY]; /* served, per REPLAY_BY_* combination */
  uint64_t unservable;
  uint64_t slo_met;
  double ttft_slack_sum, tpot_slack_sum;
  uint64_t ttft_n, tpot_n; /* served requests; those with generated > 1 */
} replay_class_stats;

typedef struct {
  char policy[64];
  uint64_t requests, served, unservable, slo_extrapolated;
  uint64_t chunked, fallback; /* served requests with the REPLAY_BY_* bit */
  uint64_t fallback_own;      /* ... of the fallback ones, those whose own longest decode
                                 length is beyond the grid (the rest rode a batch-mate's) */
  replay_class_stats classes[CONFIG_MAX_SLO_CLASSES];
  uint64_t ttft_met, tpot_met, slo_met;
  double slo_attainment;  /* slo_met / requests (unservable ones count as missed) */
  double end_ns;          /* this run's last event */
  double horizon_ns;      /* idle energy is charged over [0, horizon): end_ns, or the
                             common horizon after replay_align_horizon */
  double origin_tod_s;    /* the trace's time of day at 0 */
  double idle_w_per_chip; /* awake idle power of this policy */
  replay_phase_stats phase[CONFIG_NPHASE];
  double kv_energy_nj;
  double energy_nj;                                          /* both phases (busy + idle) + KV */
  double ttft_p50_ns, ttft_p99_ns, tpot_p50_ns, tpot_p99_ns; /* over served requests */
  double kv_transfer_total_ns, kv_transfer_mean_ns, kv_bytes;
  uint64_t context_tokens, generated_tokens; /* of the trace */
  uint64_t peak_queue;                       /* the longest the prefill queue grew */
  config_safeguards safeguards;              /* the run's (governor runs: paper, unused) */
  config_idle_mode idle_mode;                /* the run's (the cluster's unless its job set one) */
  bool autoscale;                            /* the fleet followed load */
  char unservable_example[ENPU_ERR_MSG_LEN]; /* why the first unservable request is */
} replay_summary;

typedef struct replay_result replay_result;

/* Replay `trace` on the cluster with the plans of `policy` (a policy name of the store
 * and of config_policy), idle energy charged to the run's own end.
 * @return 0 and *out; ENPU_ERR_NOT_FOUND (unknown policy), ENPU_ERR_INVALID (bad set-up),
 * the store's errors other than "no bucket covers this request" (counted as
 * unservable), ENPU_ERR_NOMEM. */
int replay_run(const planstore *ps, const char *policy, const replay_trace *trace, const replay_setup *setup,
               replay_result **out, enpu_err *err);
void replay_result_free(replay_result *r); /* NULL is a no-op */

/* Charge every run of one trace over the same horizon: the latest end_ns of them (idle
 * energy and windows extended). @return 0; ENPU_ERR_INVALID for runs of different
 * traces; ENPU_ERR_NOMEM. */
int replay_align_horizon(replay_result *const *runs, size_t n, enpu_err *err);

/* replay_run of each named policy on up to `threads` threads (>= 1), then
 * replay_align_horizon. runs[i] is policies[i]'s run; on failure none is returned and
 * err names the policy. */
int replay_run_policies(const planstore *ps, const char *const *policies, size_t n, const replay_trace *trace,
                        const replay_setup *setup, int threads, replay_result **runs, enpu_err *err);

const replay_summary *replay_result_summary(const replay_result *r);
/* Per request, in trace order (replay_result_summary(r)->requests entries). */
const replay_request_result *replay_result_requests(const replay_result *r);
const replay_window *replay_result_windows(const replay_result *r, size_t *count);

/* Pool utilisation over the horizon: prefill, the node-time running batches; decode,
 * the batch slots filled (Σ members × iteration time / (nodes × max batch × horizon)):
 * continuous batching keeps a decode node running while it holds a single request, so
 * its busy time says nothing about load. */
void replay_utilisation(const replay_result *r, double util[CONFIG_NPHASE]);
/* The same per five-minute window, the busiest full window of each pool (a bursty trace
 * can saturate a pool for minutes while its mean looks light); 0 without a full window. */
void replay_busiest_window(const replay_result *r, double util[CONFIG_NPHASE]);

/* ---------------------------------------------------------------------------------
 * Online governors and self-speculative decoding (PELM §3)
 *
 * Beside the store's offline plans, a run can give every node to an online governor:
 * every control period (default 100 ms, PELM's 10 Hz) it reads each node's state over
 * the period that ended and picks an action — a chip-wide V/f state (every component at
 * one state, PELM's GPU frequency) and, on decode nodes, a self-speculative decoding
 * configuration — that holds until its next decision. Batches run the store's `uniform`
 * policy (one plan per state per bucket, on the chip's cost and power model; the farm
 * compiles it like any policy), so a governor run uses nothing but the store reader. A
 * state change reaches a running batch at once: the rest of its work runs at the new
 * state (its remaining time and energy scale with the new state's pass); an idle node
 * draws the idle power of its state (replay_setup.idle_w_state; "peak" idle mode:
 * NoDVFS's). Governor runs keep the engine (batch formation, routing, KV transfers) and
 * have no safeguards: the governor alone decides.
 *
 * Self-speculative decoding (PELM §3.1, LayerSkip): a decode iteration becomes a round of
 * `draft_tokens` (ns) draft passes through the first `exit_layers` (ex) layers and one
 * verification pass through `verify_layers` (vd) layers of the ns + 1 positions of every
 * member (the decode bucket of batch × (ns + 1) requests at the batch's length: exact for
 * weights and FLOPs, an upper bound on attention reads). With acceptance rate a(ex) from
 * the model file, a round yields n_ac = (1 − a^(ns+1)) / (1 − a) tokens per member in
 * expectation (Leviathan et al. 2023), counting the verifier's own; the replay runs the
 * expectation (every member gains one token per n_ac-th of a round: per-request variance
 * is not modelled). A pass through d layers is the embedding and head plus d layers of
 * the uniform plan's ops (the graph of that depth, graph_build_depth). vd below the
 * model's layers changes the output distribution (PELM's variable depth): runs count
 * those tokens (lossy_tokens); KV entries a shallower pass skipped are not recomputed
 * (PELM's HQCache reload is not charged). ns = 0 is plain decoding at depth vd.
 * With a store policy, a fixed configuration runs the policy's plan for the round: the
 * batch's bucket plan the scheduler picks for the round's per-token target, its slow-down
 * and savings applied to the draft and verification passes, whose depth scaling comes
 * from the uniform policy at the peak state (an approximation: it assumes the plan slows
 * a pass's embedding and head as much as its layers). */

enum { REPLAY_GOV_ONDEMAND = 0, REPLAY_GOV_PID = 1, REPLAY_GOV_PELM = 2, REPLAY_GOV_FIXED = 3, REPLAY_NGOV = 4 };

typedef struct {
  int exit_layers;   /* ex, 1..layers−1; 0 = no draft (plain decoding) */
  int draft_tokens;  /* ns, 0..REPLAY_SPEC_MAX_DRAFT */
  int verify_layers; /* vd, ex < vd <= layers; 0 = the model's layers */
} replay_spec;

#define REPLAY_SPEC_MAX_DRAFT 16

/* PELM's speed-up of a speculation round over decoding at depth vd, in layers run:
 * R = (n_ac × vd) / (ns × ex + vd). NaN for a non-positive denominator. */
double replay_spec_speedup(double accepted, int draft_tokens, int exit_layers, int verify_layers);
/* Expected tokens of a round, n_ac = (1 − a^(ns+1)) / (1 − a) (ns + 1 at a = 1). */
double replay_spec_tokens(double rate, int draft_tokens);
/* The acceptance rate of drafts exiting after `exit_layers` (a row of the model's table).
 * @return 0, or ENPU_ERR_NOT_FOUND naming the depths the table has. */
int replay_spec_rate(const config_model *model, int exit_layers, double *rate, enpu_err *err);
/* Check a configuration against the model (ex a table depth, ex < vd <= layers, ns in
 * range; ex = 0 needs ns = 0). @return 0 or ENPU_ERR_INVALID saying what is wrong. */
int replay_spec_check(const config_model *model, const replay_spec *spec, enpu_err *err);

/* The PELM agent: a branching deep Q-network (PELM §3.4: an MLP of two hidden layers of
 * 32, one linear output head per action branch — V/f state, draft exit depth,
 * verification depth, speculative horizon), ε-greedy exploration, experience replay and
 * a target network, trained online with FANN (incremental backpropagation). Reward: the
 * negative weighted objective of PELM's Eq. 2 — energy of the period over the node's
 * TDP energy, plus qoe_weight × the share of its batches that missed their SLO target
 * (no thermal model here, so no thermal term). Deterministic for a seed. */
typedef struct replay_pelm replay_pelm;

typedef struct {
  uint64_t seed;                     /* weights, exploration, replay sampling */
  double qoe_weight;                 /* 4 */
  double gamma;                      /* 0.9 */
  double learning_rate;              /* 0.01 (FANN's incremental SGD) */
  double epsilon_start, epsilon_end; /* 1 → 0.05 */
  double epsilon_decay_s;            /* over the first 300 s of a training run (trace time) */
  int replay_capacity;               /* 20000 transitions */
  int batch;                         /* 32 per update */
  int train_every;                   /* an update every 4 control periods */
  int target_every;                  /* target network copied every 250 updates */
  bool lossless;                     /* verification always through every layer (the verification
                                        branch has one action): outputs stay the model's */
} replay_pelm_params;

void replay_pelm_params_default(replay_pelm_params *p);
/* A new agent for the model and chip of `setup` (its branches: setup->peak_state states;
 * the model's exit depths; verification at those deeper than the shallowest exit and the
 * full depth; horizons 0, 1, 2, 3, 4, 6, 8). @return 0, ENPU_ERR_INVALID (bad
 * parameters), ENPU_ERR_NOMEM. */
int replay_pelm_create(const replay_pelm_params *p, const replay_setup *setup, replay_pelm **out, enpu_err *err);
void replay_pelm_free(replay_pelm *a); /* NULL is a no-op */
/* Save as JSON (schemas/pelm-net.schema.json: branches, parameters, every weight) /
 * load; a loaded agent acts as the saved one did (identical weights). Loading checks the
 * branches against `setup` (a network trained for another chip or model is refused).
 * @return 0, ENPU_ERR_IO, ENPU_ERR_PARSE (file:line:column of the syntax error),
 * ENPU_ERR_FORMAT (the file, the JSON path and what was expected), ENPU_ERR_INVALID
 * (branches differ), ENPU_ERR_NOMEM. */
int replay_pelm_save(const replay_pelm *a, const char *path, enpu_err *err);
int replay_pelm_load(const char *path, const replay_setup *setup, replay_pelm **out, enpu_err *err);
/* Every weight of the online network, in FANN's connection order (*n of them; up to cap
 * copied). */
void replay_pelm_weights(const replay_pelm *a, double *w, size_t cap, size_t *n);
#define REPLAY_PELM_NOBS 12
#define REPLAY_PELM_NBRANCH 4
/* The greedy action for an observation: one index per branch. */
void replay_pelm_greedy(replay_pelm *a, const double obs[REPLAY_PELM_NOBS], int action[REPLAY_PELM_NBRANCH]);
/* Training updates made so far. */
uint64_t replay_pelm_updates(const replay_pelm *a);

typedef struct {
  int kind;               /* REPLAY_GOV_* */
  double control_ms;      /* > 0 (default 100) */
  int fixed_state;        /* REPLAY_GOV_FIXED: the state, 1..peak */
  replay_spec fixed_spec; /* REPLAY_GOV_FIXED: decode nodes' configuration */
  replay_pelm *pelm;      /* REPLAY_GOV_PELM: the agent (not owned; one run at a time) */
  bool learn;             /* REPLAY_GOV_PELM: train and explore (else greedy, frozen) */
  bool lossless;          /* REPLAY_GOV_PELM: named pelm-lossless (its agent's
                             replay_pelm_params.lossless) */
} replay_governor;

const char *replay_governor_name(int kind); /* "ondemand", "pid", "pelm", "fixed" */
/* "ondemand", "pid", "pelm", "pelm-lossless" or "fixed:S" (S a state). @return 0, or
 * ENPU_ERR_INVALID naming the governors there are. */
int replay_governor_parse(const char *name, replay_governor *out, enpu_err *err);

/* One run of a trace: a store policy (optionally with a fixed self-speculative
 * configuration) or a governor. */
typedef struct {
  const char *policy;              /* store policy; NULL for a governor run */
  const replay_governor *governor; /* or the governor */
  replay_spec spec;                /* store policy: fixed configuration (exit_layers 0: none) */
  bool idle_set;                   /* idle_mode replaces the cluster's for this run */
  int idle_mode;                   /* config_idle_mode */
  bool autoscale;                  /* the fleet follows load (replay_fleet_params) */
  bool predictive;                 /* autoscale, the prefill pool sized by the predicted load */
} replay_job;

/* A run's name may carry its fleet: "<policy>[@<idle mode>][+as|+pas]"
 * ("enpu-all@gated+as": enpu-all's plans, power-gated idle, autoscaling; +pas: the
 * predictive autoscaler). Parse one into a job whose policy
 * points into base (cap bytes). @return 0, ENPU_ERR_INVALID (an unknown idle mode,
 * "sleep" with +as: autoscaling has its own sleep). */
int replay_job_parse(const char *name, replay_job *job, char *base, size_t cap, enpu_err *err);

/* replay_run of one job. Its run is named after the policy ("enpu-all", "+sd" appended
 * with a speculative configuration) or the governor.
 * @return as replay_run; ENPU_ERR_NOT_FOUND when the store has no uniform policy and the
 * job needs it (governors, speculative decoding); ENPU_ERR_INVALID for a bad governor
 * or configuration (control period <= 0, a state out of range, a configuration the model
 * does not allow). */
int replay_run_job(const planstore *ps, const replay_job *job, const replay_trace *trace, const replay_setup *setup,
                   replay_result **out, enpu_err *err);
/* replay_run_job of each job on up to `threads` threads, then replay_align_horizon. */
int replay_run_jobs(const planstore *ps, const replay_job *jobs, size_t n, const replay_trace *trace,
                    const replay_setup *setup, int threads, replay_result **runs, enpu_err *err);

/* What a governor did, per five-minute window (same windows as replay_result_windows):
 * the time-weighted mean V/f state of each pool, on decode nodes the share of node time
 * with speculation on and the mean draft depth, horizon and verification depth while on,
 * and the mean reward of the PELM agent's decisions (NaN for other governors). */
typedef struct {
  double state_mean[CONFIG_NPHASE];
  double spec_share;
  double exit_mean, draft_mean, verify_mean;
  double reward_mean;
  uint64_t decisions;
} replay_gov_window;

/* NULL for runs without a governor or speculation (*count 0). */
const replay_gov_window *replay_result_gov_windows(const replay_result *r, size_t *count);

/* Speculation and governor totals of a run (all 0 without). */
typedef struct {
  bool governor, speculative;
  uint64_t decisions, state_changes;
  uint64_t spec_rounds;  /* decode iterations run as speculation rounds */
  uint64_t lossy_tokens; /* tokens verified below the model's depth */
  double mean_tokens_per_round;
  double reward_first10, reward_last90; /* PELM: mean reward over the first 10 % of the
                                           run's decisions and over the rest */
  uint64_t updates;                     /* PELM training updates */
} replay_gov_summary;
const replay_gov_summary *replay_result_gov_summary(const replay_result *r);

/* ---------------------------------------------------------------------------------
 * Outputs */

/* The summary of runs of one trace (aligned, see replay_align_horizon) as a JSON
 * object: { "requests", "baseline", "idle_mode", "safeguard2", "horizon_s",
 *   "policies": { NAME: { "requests", "served", "unservable", "unservable_example",
 *   "chunked", "fallback", "fallback_own" (its own length beyond the grid), "classes": [{ "name", "requests",
 * "plan", "chunked", "fallback", "chunked+fallback", "unservable", "slo_attainment", "ttft_slack_mean",
 *   "tpot_slack_mean" }] (every class's counts add up to its requests),
 *   "fastest_time_share": {prefill, decode} (busy node time at the fastest plan: 0 %
 *   slack used), "padding": {prefill, decode} (padded tokens / tokens run),
 *   "beyond_grid_batches": {prefill_chunked, prefill_chunks, decode_fallback},
 *   "slo_attainment",
 *   "ttft_attainment", "tpot_attainment", "energy_j" / "busy_energy_j" /
 *   "idle_energy_j": {prefill, decode, total}, "kv_energy_j", "energy_savings" (with
 *   idle; total includes KV) and "busy_energy_savings" {prefill, decode, total} (vs
 *   nodvfs; null without a nodvfs run), "utilisation", "ttft_ms"/"tpot_ms": {p50, p99},
 *   "batches": {prefill: {total, slowed, slowest, safeguard1, safeguard1_fastest, locked, late},
 *   decode: {...}}, "periods": {"peak", "off_peak"}: per §4.8's hours (windows by
 *   their start's time of day), "kv_transfer", "tokens", "fleet": {"idle_mode",
 *   "autoscale", "sleep_w_per_chip", "energy_split_j": {busy, idle (awake), sleep,
 *   transition: {prefill, decode, total}, kv} (adding up to energy_j.total),
 *   "active_instance_s", "wakes", "sleeps": {prefill, decode, total}, "classes": {CLASS:
 *   {ttft_requests, ttft_attainment, tpot_requests, tpot_attainment}}}, ... } } }
 * @return 0; ENPU_ERR_INVALID when the runs' horizons differ; ENPU_ERR_NOMEM. */
int replay_summary_json(const replay_result *const *runs, size_t n, json_t **out, enpu_err *err);

/* Write under `dir` (created if missing): windows_<policy>.csv for every run (and
 * requests_<policy>.csv when per_request: ~150 bytes a request), coverage.csv (per
 * policy and SLO class: requests served by plan, chunked, fallback, both, unservable,
 * the attainment and mean slack), and summary.json (replay_summary_json).
 * @return 0, ENPU_ERR_IO naming the file, or replay_summary_json's errors. */
int replay_write_outputs(const char *dir, const replay_result *const *runs, size_t n, bool per_request,
                         enpu_err *err);

/* ---------------------------------------------------------------------------------
 * Load sweep: the trace replayed at several rates */

#define REPLAY_CAPACITY_ATTAINMENT 0.99

typedef struct {
  double slo_attainment;
  double savings_busy, savings;          /* vs nodvfs at the same rate; NaN without nodvfs */
  double util[CONFIG_NPHASE];            /* replay_utilisation */
  double util_busiest[CONFIG_NPHASE];    /* replay_busiest_window */
  double locked_share, safeguard1_share; /* of all batches */
  double switched_share;                 /* of prefill batches, switched mid-way */
  double switch_energy_share;            /* prefill switches' transitions and faster suffixes over the
                                            busy energy of both phases */
  uint64_t peak_queue;                   /* replay_summary.peak_queue */
} replay_sweep_cell;

typedef struct {
  size_t nrates, npolicies;
  double *rates;               /* ascending */
  size_t *requests;            /* per rate */
  double *peak_arrivals_per_s; /* per rate: the most arrivals in one second of the shaped trace */
  char (*policies)[64];
  replay_sweep_cell *cells; /* [rate * npolicies + policy] */
  double *capacity;         /* per policy: the highest rate whose attainment and
                               every lower rate's is >= 99 %; 0 when none */
} replay_sweep;

/* The most arrivals of `t` within one second [k, k + 1) s after its first. */
double replay_trace_peak_per_s(const replay_trace *t);

/* The trace as the replay's CSV (TIMESTAMP,ContextTokens,GeneratedTokens; times from
 * origin_s, 100 ns resolution), in *csv (malloc'd, NUL-terminated) of *len bytes; what
 * replay_trace_parse reads back to the same requests (arrivals to 100 ns).
 * @return 0, ENPU_ERR_NOMEM. */
int replay_trace_csv(const replay_trace *t, char **csv, size_t *len, enpu_err *err);

/* Shape `raw` at each rate (`base` gives seed, warp and day; its rate is replaced),
 * replay every policy on it and aggregate. Rates must be > 0; they are sorted.
 * @return 0 and *out; the shaping's and the runs' errors (naming the rate). */
int replay_sweep_run(const planstore *ps, const char *const *policies, size_t npolicies, const replay_trace *raw,
                     const replay_shape *base, const double *rates, size_t nrates, const replay_setup *setup,
                     int threads, replay_sweep **out, enpu_err *err);
void replay_sweep_free(replay_sweep *s); /* NULL is a no-op */

/* { "rates": [...], "requests": [...], "peak_arrivals_per_s": [...], "policies": { NAME: {
 *   "slo_attainment": [...], "savings_busy", "savings", "util_prefill", "util_decode",
 *   "util_prefill_busiest", "util_decode_busiest", "locked_share", "safeguard1_share",
 *   "switched_share", "switch_energy_share", "peak_queue": [...], "capacity_rate" } } }
 * (NaN as null). */
int replay_sweep_json(const replay_sweep *s, json_t **out, enpu_err *err);

#endif /* ENPU_REPLAY_H */
