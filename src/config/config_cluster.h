/* config_cluster.h — the cluster file (jobs/clusters/<name>.json): nodes, SLO classes, batching,
 * idle power, the scheduler's safeguards.
 * Part of config.h (include that): the module's one public header gathers these. */
#ifndef ENPU_CONFIG_CLUSTER_H
#define ENPU_CONFIG_CLUSTER_H

#include "config_vocab.h"

/* ---------------------------------------------------------------------------------
 * Cluster (jobs/clusters/<name>.json), Tables 2 and 3 of the paper
 *
 * { "name": "llama3-70b", "model": "llama3-70b",
 *   "prefill": { "nodes": 24, "chips": 4, "parallel": { "dp": 1, "tp": 4, "pp": 1, "ep": 1 } },
 *   "decode":  { "nodes": 8,  "chips": 4, "parallel": { "dp": 1, "tp": 4, "pp": 1, "ep": 1 } },
 *   "slo": [ { "name": "P33",  "prefill_max_tokens": 1291, "decode_max_tokens": 1313,
 *              "ttft_ms": 725,  "tpot_ms": 91 }, ... ],       (sorted, last is P100)
 *   "batching": { "max_batch": 256, "max_batch_tokens": 16384 },
 *   "idle": { "mode": "lowest-state" },                                        optional
 *   "scheduler": { "safeguard1_scan": 128, "safeguard2": "paper",              optional
 *                  "safeguard2_window_s": 300, "safeguard2_miss_fraction": 0.01,
 *                  "safeguards": "predictive", "predictive_window_s": (shortest TTFT SLO),
 *                  "predictive_hold_s": (longest TTFT SLO),
 *                  "predictive_beta": (from safeguard2_miss_fraction) },
 *   "dcn": { "energy_pj_per_byte": 480 } }                                      optional
 * Checks: chips == dp*tp*pp*ep; class bounds strictly increasing; "sleep" needs
 * sleep_w and wake_ms. Defaults: idle lowest-state, the scheduler values shown, DCN
 * energy 0 (KV transfers cost time only). */

typedef struct {
  int dp, tp, pp, ep;
} config_parallel;

typedef struct {
  int nodes;
  int chips;
  config_parallel parallel;
} config_node;

#define CONFIG_MAX_SLO_CLASSES 8

typedef struct {
  char name[CONFIG_NAME_LEN];
  int prefill_max_tokens; /* class covers input lengths up to this */
  int decode_max_tokens;  /* class covers total (KV) lengths up to this */
  double ttft_ms;
  double tpot_ms;
} config_slo_class;

/* What an idle node's chips draw (the replay's idle energy):
 *  peak          every policy at NoDVFS's idle power (components at the peak state,
 *                static power only, fixed regulator): idle energy cancels in savings;
 *  lowest-state  a DVFS policy parks the components it scales at their lowest V/f
 *                state (NoDVFS stays at peak);
 *  sleep         as lowest-state while awake; after sleep_after_ms idle a node sleeps at
 *                sleep_w per chip and its next batch waits wake_ms;
 *  gated         as lowest-state, and every component power-gated (§4.7, the chip's
 *                "gating": its gateable static power down to gated_fraction); a node's
 *                idle time is ms long, far above every min_idle_ns, and the ns wake-ups
 *                are not charged. */
typedef enum {
  CONFIG_IDLE_PEAK = 0,
  CONFIG_IDLE_LOWEST_STATE = 1,
  CONFIG_IDLE_SLEEP = 2,
  CONFIG_IDLE_GATED = 3,
  CONFIG_NIDLE_MODE = 4
} config_idle_mode;

typedef struct {
  config_idle_mode mode;
  double sleep_w;        /* per chip, asleep */
  double wake_ms;        /* a sleeping node's wake-up latency */
  double sleep_after_ms; /* idle time before a node sleeps */
} config_idle;

/* Safeguard 2 (paper §3.4): "paper" locks every chip while more than miss_fraction of
 * the requests finished in the last window missed their SLO; "per-phase" locks a
 * phase while more than that fraction of the phase's outcomes (TTFT at the end of
 * prefill, TPOT at the end of decode) missed. */
typedef enum { CONFIG_SG2_PAPER = 0, CONFIG_SG2_PER_PHASE = 1, CONFIG_NSG2 = 2 } config_safeguard2;

const char *config_idle_mode_name(config_idle_mode m); /* "peak", "lowest-state", "sleep", "gated" */
/* The mode of a name; -1 when none. */
int config_idle_mode_parse(const char *name);
const char *config_safeguard2_name(config_safeguard2 m); /* "paper", "per-phase" */

/* Which safeguards the replay's scheduler runs (replay_sim.c states the rules):
 *  paper       §3.4's two, safeguard 1 tested when a batch starts;
 *  switching   the same, and safeguard 1's test at every arrival: a running prefill
 *              batch that would keep the queue from its deadlines switches, at its next
 *              operator boundary, to the suffix of a faster plan of its bucket;
 *  predictive  switching, and T_target capped so that the pool's utilisation predicted
 *              from the last predictive_window_s of arrivals and the queued work, times
 *              the batch's slow-down, stays within 1 − predictive_beta / √(prefill nodes)
 *              (the busier of the two windows predictive_window_s and _hold_s)
 *              (square-root staffing, Halfin and Whitt 1981). */
typedef enum {
  CONFIG_SAFEGUARDS_PAPER = 0,
  CONFIG_SAFEGUARDS_SWITCHING = 1,
  CONFIG_SAFEGUARDS_PREDICTIVE = 2,
  CONFIG_NSAFEGUARDS = 3
} config_safeguards;
const char *config_safeguards_name(config_safeguards m); /* "paper", "switching", "predictive" */
/* The mode of a name; -1 when none. */
int config_safeguards_parse(const char *name);

typedef struct {
  int safeguard1_scan; /* waiting requests safeguard 1 checks per queue */
  config_safeguard2 safeguard2;
  double safeguard2_window_s;
  double safeguard2_miss_fraction;
  config_safeguards safeguards;
  double predictive_window_s; /* arrivals counted for the rate (default: the shortest TTFT SLO) */
  double predictive_hold_s;   /* and over this longer window (default: the longest TTFT SLO) */
  double predictive_beta;     /* square-root staffing margin (default: its Halfin–Whitt wait
                                 probability is safeguard2_miss_fraction, 2.37 at 1 %) */
} config_scheduler;

typedef struct {
  char name[CONFIG_NAME_LEN];
  char path[CONFIG_PATH_LEN];
  char model_name[CONFIG_NAME_LEN];
  config_node node[CONFIG_NPHASE];
  config_slo_class slo[CONFIG_MAX_SLO_CLASSES];
  int slo_count;
  int max_batch;
  int max_batch_tokens;
  config_idle idle;
  config_scheduler scheduler;
  double dcn_energy_pj_per_byte; /* KV-cache transfer over DCN, both link ends */
  uint64_t hash;
} config_cluster;

int config_cluster_load(const char *path, config_cluster **out, enpu_err *err);
void config_cluster_free(config_cluster *cluster);

#endif /* ENPU_CONFIG_CLUSTER_H */
