/* config_chip.h — the chip file (jobs/chips/<name>.json): V/f and regulator tables, gating,
 * power states.
 * Part of config.h (include that): the module's one public header gathers these. */
#ifndef ENPU_CONFIG_CHIP_H
#define ENPU_CONFIG_CHIP_H

#include "config_vocab.h"

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

int config_chip_load(const char *path, config_chip **out, enpu_err *err);
void config_chip_free(config_chip *chip);

/* Set one sweepable parameter of a chip, "path=value" (a sweep point's form; the value
 * checked as a sweep's is): how `enpu replay --chip-set` asks "what if wake took 10 ms".
 * @return 0, ENPU_ERR_INVALID (unknown path, listing the known ones; not a number),
 * ENPU_ERR_RANGE (out of the chip file's range). */
int config_chip_set(config_chip *chip, const char *assignment, enpu_err *err);

#endif /* ENPU_CONFIG_CHIP_H */
