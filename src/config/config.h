/* config.h — job, model, chip and cluster descriptions: loaded from JSON (jansson),
 * validated once, with derived constant tables computed at load; const afterwards.
 *
 * Every input error names file:line:column, the JSON path ($.phases.prefill.batch[3])
 * and what was expected ("expected a positive integer, got -4"). Unknown keys are
 * errors. A job references its model/chip/cluster files by path relative to the job
 * file; a chip references its CSV power tables relative to the chip file.
 *
 * The JSON layout of each file is written next to its struct below and, formally, in
 * schemas/<kind>.schema.json. Units are in the key names. */
#ifndef ENPU_CONFIG_H
#define ENPU_CONFIG_H

#include <stdbool.h>
#include <stdint.h>

#include "common.h"

#define CONFIG_NAME_LEN 64
#define CONFIG_PATH_LEN 1024

/* ---------------------------------------------------------------------------------
 * Phases, components, policies: the small closed vocabularies of the project. */

typedef enum { CONFIG_PREFILL = 0, CONFIG_DECODE = 1, CONFIG_NPHASE = 2 } config_phase;

/* The five scalable components, in DVFS plan order (SA, VU, SRAM, HBM, ICI). The
 * frontend (FE) is not searched: it runs at max(f_SA, f_VU, f_SRAM). */
typedef enum {
  CONFIG_SA = 0,
  CONFIG_VU = 1,
  CONFIG_SRAM = 2,
  CONFIG_HBM = 3,
  CONFIG_ICI = 4,
  CONFIG_NCOMP = 5
} config_component;

/* dvfs-c is the paper's DVFS-C baseline (§4.1: compute domain only, the GA of §4.3 at
 * the request level); dvfs-c-walk is the same op-level sweep with the hull walk. uniform
 * is no DVFS plan: one chip-wide V/f state for every component and op, one plan per
 * state, the table online governors run batches from (search.h, replay.h).
 * dvfs-c-ms and enpu-ms are DVFS-C and eNPU-All with one V/f setting per millisecond
 * epoch instead of per operator (§4.6, Figure 16); enpu-3dom and enpu-4dom are eNPU-All
 * with 3 and 4 V/f domains (§4.6, Figure 17).
 *
 * The one table of policies: one row each, in code order (the code is part of every
 * farm key and journal record, so rows are only ever appended), with the policy's name
 * (part of the file formats and the store layout: never renamed) and whether it takes
 * pg+ and @shadow= variants and sweep points. The enum, the names, the parsers, the error
 * and help texts are made from it, and tests/integration/check_schemas.py holds the job
 * schema's policy pattern against it. What a policy means is its row in
 * power/power_policy.c. */
#define CONFIG_POLICY_TABLE(X)        \
  X(NODVFS, "nodvfs", true)           \
  X(DVFS_C, "dvfs-c", true)           \
  X(ENPU_C, "enpu-c", true)           \
  X(ENPU_ALL, "enpu-all", true)       \
  X(IDEAL, "ideal", true)             \
  X(DVFS_C_WALK, "dvfs-c-walk", true) \
  X(UNIFORM, "uniform", false)        \
  X(DVFS_C_MS, "dvfs-c-ms", true)     \
  X(ENPU_MS, "enpu-ms", true)         \
  X(ENPU_3DOM, "enpu-3dom", true)     \
  X(ENPU_4DOM, "enpu-4dom", true)

#define CONFIG_POLICY_ENUM_(id, name, variants) CONFIG_POLICY_##id,
typedef enum { CONFIG_POLICY_TABLE(CONFIG_POLICY_ENUM_) CONFIG_NPOLICY } config_policy;
#undef CONFIG_POLICY_ENUM_

/* Every policy's name, ", " after each: a string literal for help texts. */
#define CONFIG_POLICY_LIST_ITEM_(id, name, variants) name ", "
#define CONFIG_POLICY_NAMES_TEXT CONFIG_POLICY_TABLE(CONFIG_POLICY_LIST_ITEM_)

/* A policy as a job lists it and a store names it: a base policy, optionally with power
 * gating applied to the schedule its DVFS plan gives ("pg+<base>", §4.7; "pg" alone is
 * power gating without DVFS, pg+nodvfs) and a VU shadow register file of another size
 * than the chip's ("<base>@shadow=N", §4.5, Figure 15). One spelling per policy:
 * [pg+]<base>[@shadow=N], with "pg" for pg+nodvfs. */
typedef struct {
  config_policy base;
  bool gate;
  int shadow_vregs; /* 0..255, or -1: the chip's */
  int variant;      /* 0: the job's chip; k: the job's sweep point k (config_variant) */
} config_policy_spec;

/* Policies × sweep points of one job (a sweep multiplies the job's policies). */
#define CONFIG_MAX_POLICIES 128
#define CONFIG_POLICY_GATE_PREFIX "pg+"
#define CONFIG_POLICY_GATE_ALONE "pg" /* pg+nodvfs's one spelling */

/* @return 0, or ENPU_ERR_NOT_FOUND for a name that is not a policy in its one spelling
 * (a name with a sweep point is a job's: config_job_policy_parse). */
int config_policy_spec_parse(const char *name, config_policy_spec *out);
/* The spelling of a policy (at most CONFIG_NAME_LEN bytes with the NUL). */
void config_policy_spec_name(const config_policy_spec *p, char out[CONFIG_NAME_LEN]);
/* A 32-bit code that identifies a policy (base, gate, shadow size, sweep point): what farm results
 * and journal records carry. config_policy_spec_decode inverts it.
 * @return 0, or ENPU_ERR_NOT_FOUND for a code no policy has. */
uint32_t config_policy_spec_code(const config_policy_spec *p);
int config_policy_spec_decode(uint32_t code, config_policy_spec *out);
/* The policy without power gating: its DVFS plan search is the same, so its op-level
 * Pareto sets are too. */
config_policy_spec config_policy_spec_ungated(const config_policy_spec *p);
/* The spelling of the policy of a code, or "policy-code-N" for a code no policy has. */
void config_policy_code_name(uint32_t code, char out[CONFIG_NAME_LEN]);
/* Whether a policy may carry pg+ and @shadow= variants and sweep points (uniform, a
 * table of chip-wide states, has none). What else a policy means is its row in power/power_policy.c. */
bool config_policy_has_variants(config_policy p);

/* How a job's slack becomes a budget (docs/policies.md "Budget modes", schemas/planstore.md):
 * strict: every cost of the plan (V/f transitions, domain crossings, pipeline fill) fits
 *   max(T_nodvfs, T_peak) + slack · T_nodvfs — the guarantee a serving runtime needs;
 * paper: the plan's critical-path time (cost.h) fits (1 + slack) · T_nodvfs, and the
 *   rest is reported as its overhead (paper §4.2, §4.4). */
typedef enum { CONFIG_BUDGET_STRICT = 0, CONFIG_BUDGET_PAPER = 1, CONFIG_NBUDGET = 2 } config_budget;
const char *config_budget_name(config_budget b); /* "strict", "paper" */
int config_budget_parse(const char *name, config_budget *out);
/* The one conversion between a budget mode and the u8 code a plan store records for it
 * (store.h STORE_BUDGET_*, planstore.h PLANSTORE_BUDGET_*: 0 strict, 1 paper);
 * farm_convert.c, which writes the codes, asserts at compile time that the three agree.
 * config_budget_decode: 0, or ENPU_ERR_RANGE for a code no mode has. */
uint8_t config_budget_code(config_budget b);
int config_budget_decode(unsigned code, config_budget *out);

const char *config_phase_name(config_phase p);         /* "prefill", "decode" */
const char *config_component_name(config_component c); /* "sa", "vu", "sram", "hbm", "ici" */
const char *config_policy_name(config_policy p);       /* "nodvfs", "dvfs-c", ... */
/* Is `name` exactly policy p's name (no variant, no sweep point)? How code outside the
 * policy table asks for one policy by name. */
bool config_policy_named(const char *name, config_policy p);
/* @return 0 and *out, or ENPU_ERR_NOT_FOUND for an unknown name. */
int config_phase_parse(const char *name, config_phase *out);

/* Is v within the documented range of the number at JSON path `path` of a `doc` file
 * ("job", "model", "chip", "cluster"), e.g. ("job", "$.slacks[]")? For numbers that
 * arrive by other ways than a file (command-line options, added buckets), so they obey
 * the same physical ranges (src/config/config_ranges.c).
 * @return 0, or ENPU_ERR_RANGE with "expected a number in [min, max] (what it is), got v";
 * ENPU_ERR_INTERNAL for a path without a range. */
int config_range_check(const char *doc, const char *path, double v, enpu_err *err);
/* The same range as text, "[min, max]" or "(min, max]" (an excluded minimum), for help
 * and messages that state it before any value is given.
 * @return 0, or ENPU_ERR_INTERNAL for a path without a range. */
int config_range_interval(const char *doc, const char *path, char *out, size_t len, enpu_err *err);
int config_policy_parse(const char *name, config_policy *out);

/* ---------------------------------------------------------------------------------
 * Model (jobs/models/<name>.json)
 *
 * { "name": "llama3-70b", "hidden": 8192, "layers": 80, "vocab": 128256,
 *   "dtype_bytes": 2,
 *   "attention": { "kind": "gqa", "heads": 64, "kv_heads": 8, "head_dim": 128 },
 *   "ffn": { "intermediate": 28672, "fuse_gate_up": false } }     (fuse_gate_up optional)
 * "tie_embeddings": true (optional, default false) shares the embedding table with the LM
 * head: the weights held count it once (the operators are the same).
 * MLA (DeepSeek):
 *   "attention": { "kind": "mla", "heads": 128, "q_lora_rank": 1536,
 *                  "kv_lora_rank": 512, "qk_nope_head_dim": 128,
 *                  "qk_rope_head_dim": 64, "v_head_dim": 128 },
 *   "ffn": { "intermediate": 12288 },          (dense layers)
 *   "moe": { "routed_experts": 160, "shared_experts": 2, "experts_per_token": 6,
 *            "expert_intermediate": 1536, "first_dense_layers": 1 }
 * q_lora_rank 0 means no low-rank query projection. "fuse_gate_up" (default false) builds
 * the gate and up projections of every SwiGLU MLP of the model (dense, shared and routed
 * experts) as one [hidden, 2·inter] matmul instead of two (graph.h, "Operator
 * granularity"). Checks: experts_per_token <= routed_experts, first_dense_layers < layers.
 * Optional, "context_limit": N (tokens; a job's seq bucket beyond it is refused at load),
 * and "sliding_window": { "size": 4096, "layers": 48 } (48 of the layers attend to the
 * last 4096 tokens only; dense GQA models).
 * Optional, self-speculative decoding (the replay's draft/verify passes, replay.h):
 *   "speculative": { "acceptance": [ { "exit_layers": 20, "rate": 0.63 }, ... ] }
 * one row per draft exit depth (strictly increasing, below layers): the probability that
 * the full model accepts a token drafted through the first exit_layers layers, given
 * the drafts before it were accepted. Without the section: exits at 1/4, 1/2 and 3/4 of
 * the layers with the default curve of config_spec_default_rate (jobs/README.md gives
 * its source). */

#define CONFIG_MAX_SPEC_EXITS 8

typedef struct {
  int exit_layers;
  double rate; /* 0..1 */
} config_spec_exit;

/* The default acceptance rate of a draft exiting after `fraction` of the layers:
 * piecewise linear through (0, 0), (1/4, 0.63) and (1, 1). */
double config_spec_default_rate(double fraction);

typedef enum { CONFIG_ATTN_GQA = 0, CONFIG_ATTN_MLA = 1 } config_attention_kind;

/* `enpu model import`: a Hugging Face transformers config.json as a model file. The
 * family comes from architectures[0], else model_type (llama, mistral, ministral3, qwen2,
 * qwen2_5_vl, qwen3, phi3, exaone4, olmo3, gemma2, gemma3_text, mixtral, qwen2_moe,
 * qwen3_moe, deepseek_v2, deepseek_v3; Kimi-K2's kimi_k2 by its class); a text_config
 * holds the language model of a vision-language release. Every key of the config is read,
 * checked for a value the graph expresses, or known not to change a forward pass's
 * operators; the architecture is checked first, then every unknown key not listed in
 * `ignore` is reported in one error. name: the model's (NULL: the file's stem, or its
 * folder's for config.json); dtype_bytes: 0 reads torch_dtype. @return 0 with *json the
 * model file's text (malloc'd; it passed config_model_parse) and *notes (malloc'd, may be
 * NULL) one line per term the graph approximates; ENPU_ERR_IO, _PARSE, _INVALID, _RANGE
 * naming file:line:column and the key. */
typedef struct config_model config_model;
typedef struct {
  const char *name;
  int dtype_bytes;
  const char *const *ignore;
  int nignore;
  config_model *model_out; /* when not NULL: the imported model as loaded (sizes derived) */
} config_hf_options;
int config_model_import_hf(const char *path, const config_hf_options *opt, char **json, char **notes,
                           enpu_err *err);

struct config_model {
  char name[CONFIG_NAME_LEN];
  char path[CONFIG_PATH_LEN];
  int hidden;
  int layers;
  int vocab;
  int dtype_bytes;
  config_attention_kind attention;
  int heads;
  int kv_heads; /* GQA only; MLA: equals heads (every head has its own K/V) */
  int head_dim; /* GQA only */
  int q_lora_rank, kv_lora_rank, qk_nope_head_dim, qk_rope_head_dim, v_head_dim; /* MLA */
  int ffn_intermediate;
  bool ffn_fuse_gate_up; /* gate and up as one matmul (default false: two, as NeuSim) */
  bool tie_embeddings;   /* embedding table and LM head are one matrix (default false) */
  bool moe;              /* true when the "moe" object is present */
  int routed_experts, shared_experts, experts_per_token, expert_intermediate, first_dense_layers;

  /* Derived at load (counts, not bytes; whole model, not per chip). */
  double params_total;           /* embeddings + LM head (once when tied) + all layers, incl. norms */
  double params_active;          /* per token: dense + shared + experts_per_token routed */
  double params_routed;          /* all routed-expert weights (sharded by EP × TP); 0 if dense */
  double params_layer_attention; /* one layer's attention block and its two RMSNorms */
  /* KV-cache bytes per token, all layers, whole model: GQA 2*layers*kv_heads*head_dim*
   * dtype; MLA layers*(kv_lora_rank + qk_rope_head_dim)*dtype (compressed latent). A
   * sequence longer than a sliding window holds less: config_model_kv_bytes. */
  double kv_bytes_per_token;
  config_spec_exit spec_exits[CONFIG_MAX_SPEC_EXITS]; /* the file's, or the default */
  int spec_exit_count;
  bool spec_default; /* no "speculative" section: the default table */
  int context_limit; /* "context_limit": longest sequence the model takes, tokens; 0 = not stated */
  /* "sliding_window": { "size", "layers" }: window_layers of the layers attend to the
   * last window_size tokens only (0: every layer attends to the whole sequence) */
  int window_size, window_layers;
  uint64_t hash; /* content hash of the file */
};

/* ---------------------------------------------------------------------------------
 * Chip (jobs/chips/<name>.json), Table 6 of the paper
 *
 * { "name": "tpuv5p", "tflops_bf16": 459,
 *   "sa":   { "count": 8, "dim": 128 },
 *   "vu":   { "count": 6, "sublanes": 8, "lanes": 128, "vregs": 32,
 *             "shadow_vregs": 4, "vreg_bytes": 4096 },
 *   "sram": { "bytes": 134217728, "ports": 6, "port_bytes_per_cycle": 4096 },
 *   "hbm":  { "bytes": 95e9, "gbps": 2765, "latency_ns": 500, "controller_share": 0.4 },
 *   "ici":  { "topology": "torus3d", "links": 6, "link_gbps": 100, "latency_ns": 3330,
 *             "controller_share": 0.4 },
 *   "dcn":  { "gbps": 50 },
 *   "host": { "gbps": 32, "latency_ns": 400, "pj_per_byte": 15.44 },   optional host link
 *   "clock": { "step_mhz": 50, "states": 34 },
 *   "ivr":  { "vin_v": 0.75, "vout_min_v": 0.45, "vout_max_v": 0.7,
 *             "step_mv": 54, "step_ns": 4, "scaling_time_ns": 20 },
 *   "fifo_sync_cycles": 5,
 *   "other_static_w": 44.83, "tdp_w": 350,
 *   "gating": { "sa": { "gated_fraction": 0.03, "wake_ns": 5.88, "wake_energy_nj": 69.7,
 *                       "min_idle_ns": 11.76 }, "vu": ..., "sram": ..., "hbm": ...,
 *               "ici": ... },                                                    optional
 *   "tables": { "sa": "tpuv5p/sa_vf_power.csv", "vu": ..., "sram": ..., "hbm": ...,
 *               "hbm_io": ..., "hbm_dram": ..., "ici": ..., "ivr_dvfs": ...,
 *               "ivr_fixed": ... } }
 *
 * HBM and ICI power is split into parts (power.h): the `hbm` and `ici` tables give the
 * controller + PHY with only the controller scaling; controller_share is the
 * controller's share of them at their top voltage. The HBM PHY is then replaced by the
 * I/O link (`hbm_io`, its own voltage by bandwidth) and the DRAM core (`hbm_dram`,
 * fixed voltage); the ICI PHY stays at its top-voltage power. ici.latency_ns is the
 * latency of one step of a collective.
 *
 * CSV tables (header line, then rows; errors name file:line:column):
 *   V/f:  voltage_V, frequency_GHz | bandwidth_GBps, static_W, dynamic_W
 *   IVR:  scaling_time_ns, activity_factor, voltage_V, efficiency_pct
 * Checks at load: levels non-decreasing, voltages non-decreasing with level and, for the
 * tables on the chip's regulators (all but hbm_io, hbm_dram), within
 * [vout_min_v, vout_max_v], the top level covers the chip's peak (states*step for
 * SA/VU/SRAM; gbps for HBM; links*link_gbps for ICI... as the table defines), the
 * IVR table has the chosen scaling_time_ns, efficiencies in (0, 100]. */

typedef struct {
  double voltage_v;
  double level; /* GHz for SA/VU/SRAM, GB/s for HBM/ICI (the CSV's second column) */
  double static_w;
  double dynamic_w;
} config_vf_point;

typedef struct {
  config_vf_point *points; /* sorted by level, as in the file */
  int count;
} config_vf_table;

typedef struct {
  double scaling_time_ns;
  double activity; /* 0..1 */
  double voltage_v;
  double efficiency; /* fraction 0..1 (the CSV has percent) */
} config_ivr_point;

typedef struct {
  config_ivr_point *points;
  int count;
} config_ivr_table;

/* Power gating of one component (§4.7 follows ReGate; the chip README gives each
 * value's source): gated, the component's gateable static power (HBM: the controller
 * only, the I/O and DRAM core stay on) drops to gated_fraction of itself; waking it
 * takes wake_ns before its next work and wake_energy_nj; an idle interval shorter than
 * min_idle_ns is never gated. */
typedef struct {
  double gated_fraction; /* 0..1 */
  double wake_ns;
  double wake_energy_nj; /* at the wall */
  double min_idle_ns;
} config_gating;

/* The chip's power states beside its V/f tables (the replay's fleet, replay.h): an idle
 * chip at its peak clock and at its lowest V/f point come from the tables, a power-gated
 * idle chip from "gating"; the optional "power_states" section adds deep sleep:
 *   "power_states": { "deep_sleep": { "w": 9.0, "wake_ms": 2970, "wake_energy_j": 1.467 } }
 * w: what a sleeping chip draws; wake_ms: from the wake command to its first work;
 * wake_energy_j: the wake-up's own energy at the wall, beyond the awake idle power the
 * chip draws while it wakes. The chip README gives each value's source. */
typedef struct {
  double w;
  double wake_ms;
  double wake_energy_j;
} config_deep_sleep;

typedef struct {
  char name[CONFIG_NAME_LEN];
  char path[CONFIG_PATH_LEN];
  double tflops_bf16;
  int sa_count, sa_dim;
  int vu_count, vu_sublanes, vu_lanes, vregs, shadow_vregs, vreg_bytes;
  double sram_bytes;
  int sram_ports, sram_port_bytes_per_cycle;
  double hbm_bytes, hbm_gbps, hbm_latency_ns, hbm_controller_share;
  char ici_topology[CONFIG_NAME_LEN];
  int ici_links;
  double ici_link_gbps, ici_latency_ns, ici_controller_share;
  double dcn_gbps;
  /* Host link (PCIe) that streams offloaded weights (job "capacity": "offload"); all 0
   * when the chip file has no "host" object. */
  double host_gbps, host_latency_ns, host_pj_per_byte;
  double freq_step_mhz;
  int freq_states; /* states 1..freq_states are step..states*step MHz; 0 = gated */
  double ivr_vin_v, ivr_vout_min_v, ivr_vout_max_v;
  double ivr_step_mv, ivr_step_ns, ivr_scaling_time_ns;
  int fifo_sync_cycles;
  double other_static_w, tdp_w;
  config_vf_table vf[CONFIG_NCOMP];
  config_vf_table hbm_io, hbm_dram; /* the HBM PHY's parts (bandwidth levels) */
  config_ivr_table ivr_dvfs, ivr_fixed;
  bool has_gating; /* the "gating" section is present (pg policies need it) */
  config_gating gating[CONFIG_NCOMP];
  bool has_deep_sleep; /* the "power_states" section is present (autoscaling needs it) */
  config_deep_sleep deep_sleep;

  /* Derived at load. */
  double max_freq_ghz; /* freq_states * freq_step_mhz / 1000 */
  uint64_t hash;       /* chip JSON + every table's bytes */
} config_chip;

/* Frequency of a state in GHz (0 for the gated state 0). */
double config_state_ghz(const config_chip *chip, int state);

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

/* ---------------------------------------------------------------------------------
 * Job (jobs/<name>.json)
 *
 * { "name": "llama3-70b",
 *   "model": "models/llama3-70b.json", "chip": "chips/tpuv5p.json",
 *   "cluster": "clusters/llama3-70b.json",
 *   "store": "../results/llama3-70b/plans.h5",             (relative to the job file)
 *   "phases": {
 *     "prefill": { "batch": [1, 2, 4, 8, 16, 32, 64, 128],          explicit list
 *                  "seq": { "rule": "paper", "max": 131072 } },     or the §3.4 rule
 *     "decode":  { "batch": { "rule": "paper", "max": 256 },
 *                  "seq": [1024, 2048, 4096],
 *                  "parallel": { "dp": 1, "tp": 4, "pp": 1, "ep": 1 } } },  optional
 *   "slacks": [0, 0.02, 0.05, 0.10],                         fractions, sorted, unique
 *   "policies": ["nodvfs", "dvfs-c", "enpu-all", "pg+enpu-all",
 *                { "policy": "enpu-all", "shadow": [0, 2, 8] }],   one variant per size
 *   "epoch_ms": 5,                       epoch of dvfs-c-ms and enpu-ms (optional, 5)
 *   "budget": "strict",                        or "paper" (optional, default strict)
 *   "moe": { "capacity_factor": "worst",                     or a number in [1, E/k]
 *            "experts": "all-resident" },                    or "active-only"
 *   "capacity": "enforce"                                    or "offload" / "ignore"
 * }
 * A policy object expands to "<policy>@shadow=N" for each size N (0..vu.vregs of the
 * chip); a shadow size in a name must be in that range too. pg policies need a chip with
 * a "gating" section.
 * A phase may be omitted (not compiled). Explicit lists must be strictly increasing
 * positive integers. A phase's parallelism defaults to the cluster node's; an override
 * must multiply to the node's chip count. TP must divide attention heads and FFN
 * sizes; EP must divide routed experts.
 *
 * MoE (paper §3.4 "Support for custom operators", §4.1, §4.6): the capacity factor c
 * sets the token count of the most loaded expert, ceil(c · T · k / E) of a bucket's T
 * tokens (1 = perfectly balanced; "worst" = E/k, every token on one expert: the paper's
 * default). "experts": "all-resident" (default, the paper's) builds every expert held by
 * a chip as its own operator with a static token count; "active-only" batches the
 * experts that get tokens and skips the rest (graph.h, "MoE experts").
 * "capacity" (default "enforce"): a bucket whose weights + KV cache + activations exceed
 * a chip's HBM is not compiled; "offload" streams the weights that do not fit from host
 * memory every forward pass over the chip's host link (an operator of the graph);
 * "ignore" compiles it as if it fitted and the store marks every plan so (grid.h). */

typedef enum {
  CONFIG_EXPERTS_ALL_RESIDENT = 0, /* every resident expert an operator (the paper's) */
  CONFIG_EXPERTS_ACTIVE_ONLY = 1,  /* only experts that get tokens, batched */
  CONFIG_NEXPERTS = 2
} config_moe_experts;

typedef enum {
  CONFIG_CAPACITY_ENFORCE = 0,
  CONFIG_CAPACITY_OFFLOAD = 1,
  CONFIG_CAPACITY_IGNORE = 2,
  CONFIG_NCAPACITY = 3
} config_capacity;

const char *config_moe_experts_name(config_moe_experts e); /* "all-resident", ... */
/* How MLA attention is built (job key "attention_impl"): "flash" (default, a serving
 * stack's: one fused operator, no seq×seq tensor in HBM) or "einsum" (the authors'
 * simulator's: the absorbed einsums as separate matmuls, the scores through HBM). */
typedef enum { CONFIG_ATTN_IMPL_FLASH = 0, CONFIG_ATTN_IMPL_EINSUM = 1, CONFIG_NATTN_IMPL = 2 } config_attn_impl;
const char *config_attn_impl_name(config_attn_impl a); /* "flash", "einsum" */
/* How the collectives of a layer are built and timed (job key "ici_model"): "ring"
 * (default: one TP allreduce after attention and one after the FFN, ring volumes over the
 * links of the torus axes the group spans, latency + transfer per step) or "neusim" (the
 * authors' simulator's DeepSeek layer: sequence-parallel all-gathers and reduce-scatters
 * with its staged per-axis volumes over 200 GB/s per axis, max(transfer, latency);
 * MLA models only, graph.h). */
typedef enum { CONFIG_ICI_RING = 0, CONFIG_ICI_NEUSIM = 1, CONFIG_NICI_MODEL = 2 } config_ici_model;
const char *config_ici_model_name(config_ici_model m); /* "ring", "neusim" */
const char *config_capacity_name(config_capacity c);   /* "enforce", ... */
int config_capacity_parse(const char *name, config_capacity *out);

typedef struct {
  bool rule; /* true: expand with the §3.4 rule up to rule_max */
  int rule_max;
  int *values; /* explicit list (rule == false), strictly increasing */
  int count;
} config_axis;

typedef struct {
  bool enabled;
  config_axis batch;
  config_axis seq;
  config_parallel parallel; /* effective: override or the cluster node's */
  int chips;                /* chips per node for this phase */
} config_phase_grid;

/* The job's optional "validation" section: `enpu farm` validates the store at the end of
 * a run (`enpu validate` with the job's cluster).
 *   "validation": { "trace": "traces/conv.csv",   (relative to the job file)
 *                   "sample": 24,                 buckets per policy (default 24)
 *                   "seed": 1 }                   seed of the sample (default 1) */
typedef struct {
  bool enabled;
  char trace_path[CONFIG_PATH_LEN]; /* resolved relative to the job file */
  int sample;                       /* >= 1 */
  uint64_t seed;
} config_validation;

/* One point of a job's architecture sweep (config_sweep.c): the job's chip with some
 * parameters at other values. name is the point, "path=value[,path=value...]" (paths in
 * the sweep table's order); its policies are named "<policy>:<name>". chip shares the
 * job chip's tables; its hash is the job chip's mixed with the name. ops_differ: a
 * value the op-level search reads (otherwise the variant's op-level Pareto sets are the
 * job chip's, and the farm reuses them). */
#define CONFIG_MAX_VARIANTS 64
#define CONFIG_VARIANT_SEP ':'
typedef struct {
  char name[CONFIG_NAME_LEN];
  config_chip chip;
  bool ops_differ;
} config_variant;

typedef struct {
  char name[CONFIG_NAME_LEN];
  char path[CONFIG_PATH_LEN];
  char store_path[CONFIG_PATH_LEN]; /* resolved relative to the job file */
  config_model model;
  config_chip chip;
  config_cluster cluster;
  config_phase_grid phase[CONFIG_NPHASE];
  double *slacks;
  int slack_count;
  config_policy_spec policies[CONFIG_MAX_POLICIES]; /* distinct, in the job's order */
  int policy_count;
  double epoch_ms;            /* "epoch_ms" (> 0, default 5) */
  config_budget budget;       /* "budget": "strict" (default) or "paper" */
  double moe_capacity_factor; /* 0 = worst case (E/k: every token may hit one expert) */
  config_moe_experts moe_experts;
  config_capacity capacity;
  config_attn_impl attention_impl; /* "attention_impl": MLA as flash (default) or einsums */
  config_ici_model ici_model;      /* "ici_model": ring (default) or the authors' simulator's */
  config_validation validation;    /* enabled only when the job has the section */
  config_variant *variants;        /* the "sweep" section's points (NULL: none) */
  int variant_count;

  /* The raw documents, kept for provenance (store attributes). */
  char *job_json, *model_json, *chip_json, *cluster_json;
  uint64_t hash; /* job document + the hashes of what it references */
} config_job;

/* Load and validate. On failure *out is NULL and err names file:line:column, the JSON
 * path and what was expected; nothing is left allocated. */
int config_job_load(const char *path, config_job **out, enpu_err *err);

/* The input files loads read, by the path they name them with (config_files.c). A set
 * that is not sealed reads a file it lacks from disk and keeps its bytes; a sealed one
 * (or one unpacked) serves only what it holds, so a farm's workers load the bytes rank
 * 0 read and need no file system of their own. _free(NULL) is a no-op. */
typedef struct config_files config_files;
int config_files_create(config_files **out, enpu_err *err);
void config_files_free(config_files *fs);
void config_files_seal(config_files *fs);
size_t config_files_count(const config_files *fs);
/* The bytes of `path` (a heap copy, NUL-terminated; free() it); fs NULL reads the disk.
 * @return 0, ENPU_ERR_IO (cannot read, or a sealed set lacks it), ENPU_ERR_NOMEM. */
int config_files_read(config_files *fs, const char *path, char **data, size_t *len, enpu_err *err);
/* One heap buffer holding every file (free() it), and the set it unpacks to (sealed).
 * @return 0, ENPU_ERR_NOMEM, or ENPU_ERR_FORMAT for a buffer that is not a packed set. */
int config_files_pack(const config_files *fs, char **buf, size_t *len, enpu_err *err);
int config_files_unpack(const char *buf, size_t len, config_files **out, enpu_err *err);
/* config_job_load reading every file through `fs` (NULL: the disk). */
int config_job_load_from(config_files *fs, const char *path, config_job **out, enpu_err *err);
void config_job_free(config_job *job);

/* Override the job's MoE capacity factor with `value` ("worst" or a number in [1, E/k],
 * as the job key): a sweep of the factor (paper §4.6, Figure 20) compiles one job at
 * several factors. job_json and hash are rewritten so the store records what was
 * compiled. @return 0, ENPU_ERR_INVALID (not a number), ENPU_ERR_RANGE, ENPU_ERR_NOMEM. */
int config_job_set_capacity_factor(config_job *job, const char *value, enpu_err *err);

/* Architecture sweeps (config_sweep.c). A job's optional "sweep" section:
 *   "sweep": { "ivr.step_ns": [4, 40, 400], "vu.shadow_vregs": [0, 4] }   cross product
 *   "sweep": { "points": [ { "ivr.step_ns": 0.4, "ivr.scaling_time_ns": 2 }, ... ] }
 * Every policy but uniform is compiled on the job's chip and once per point (policy
 * k·(points + 1) ...: the job's list, then the list again per point, spec.variant set).
 * The sweepable paths are one table: config_sweep_param_count/_path list them. */
int config_sweep_param_count(void);
const char *config_sweep_param_path(int i);    /* NULL out of range */
const char *config_sweep_param_unit(int i);    /* of its values ("ns", "states"); NULL out of range */
int config_sweep_param_find(const char *path); /* index, or -1 */
/* A value of parameter i as a point's name spells it. */
void config_variant_value_text(int i, double v, char *out, size_t cap);
/* The chip of a policy's variant (0 or out of range: the job's). */
const config_chip *config_job_chip(const config_job *job, int variant);
/* A policy's name in the job's store: config_policy_spec_name, then ":<point>" for a
 * variant. @return 0, ENPU_ERR_NOT_FOUND (no such variant), ENPU_ERR_RANGE (too long). */
int config_job_policy_name(const config_job *job, const config_policy_spec *p, char out[CONFIG_NAME_LEN]);
/* The inverse; ENPU_ERR_NOT_FOUND for a name that is not a policy of this job's points. */
int config_job_policy_parse(const config_job *job, const char *name, config_policy_spec *out);
/* "path=value[,...]" in any order and number spelling → the point's name (what
 * `enpu query --variant` looks up). @return 0, ENPU_ERR_INVALID naming the bad part
 * (an unknown path lists the known ones; a path given twice, enpu_kv_split),
 * ENPU_ERR_RANGE. */
int config_variant_canonical(const char *point, char out[CONFIG_NAME_LEN], enpu_err *err);
/* Set one sweepable parameter of a chip, "path=value" (a sweep point's form; the value
 * checked as a sweep's is): how `enpu replay --chip-set` asks "what if wake took 10 ms".
 * @return 0, ENPU_ERR_INVALID (unknown path, listing the known ones; not a number),
 * ENPU_ERR_RANGE (out of the chip file's range). */
int config_chip_set(config_chip *chip, const char *assignment, enpu_err *err);
/* The point of a store policy name ("enpu-all:ivr.step_ns=40" → "ivr.step_ns=40"), NULL
 * for a policy of the job's own chip. */
const char *config_variant_of(const char *policy_name);
/* The one parser and builder of the "<policy>:<point>" grammar. split: the policy part of
 * `name` into base and its point into *point (NULL without one); join: the name of
 * `policy` on `point` (NULL or "": the policy alone).
 * @return 0, or ENPU_ERR_RANGE when it does not fit in CONFIG_NAME_LEN bytes. */
int config_policy_point_split(const char *name, char base[CONFIG_NAME_LEN], const char **point);
int config_policy_point_join(const char *policy, const char *point, char out[CONFIG_NAME_LEN]);
/* The one parser of a point's "path=value[,path=value...]": each sweepable parameter
 * (config_sweep_param_find) and its value, at most `max`, values checked as numbers.
 * @return the count, or ENPU_ERR_INVALID naming the bad part (an unknown path lists the
 * known ones; a path given twice; a value that is not a finite number). */
int config_point_parse(const char *point, int *param, double *value, int max, enpu_err *err);

int config_model_load(const char *path, config_model **out, enpu_err *err);

/* KV-cache bytes of one sequence of `tokens` tokens, whole model: a window-limited layer
 * keeps only the last window_size tokens' keys and values (what it can attend to), every
 * other layer keeps them all. tokens <= window_size: tokens x kv_bytes_per_token. */
double config_model_kv_bytes(const config_model *m, double tokens);
void config_model_free(config_model *model);

int config_chip_load(const char *path, config_chip **out, enpu_err *err);
void config_chip_free(config_chip *chip);

int config_cluster_load(const char *path, config_cluster **out, enpu_err *err);
void config_cluster_free(config_cluster *cluster);

#endif /* ENPU_CONFIG_H */
