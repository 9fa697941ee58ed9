/* config_ranges.c — the physical range of every number an input file may hold, in one
 * table. The typed getters (config_int, config_number) look the value's JSON path up
 * here, so a loader cannot read a number without a documented range; a number without a
 * row is an internal error that names the row to add. The JSON Schemas state the same
 * ranges (`minimum`/`exclusiveMinimum`/`maximum`), and tests/integration/check_schemas.py
 * reads this table (one row per line, as below) and fails when a schema disagrees.
 *
 * Adding a numeric key: one row here, the same bounds in its schema. Paths are the
 * JSON paths of config_where with every array index written `[]`; `*` stands for any one
 * object key. "power table" rows are the CSV columns of a chip's tables, by header name.
 *
 * The bounds are physical, not tight: far beyond any model, chip or cluster built so far,
 * and small enough that every derived size (tokens x hidden x bytes, instances per pass,
 * frequency states in a u8 column) stays far from overflow. */
#include <stdio.h>
#include <string.h>

#include "config_internal.h"

static const config_range ranges[] = {
    /* doc, path, min, max, min excluded, why */
    {"model", "$.hidden", 1, 1048576, false, "model width; 2^20, 64x the largest models"},
    {"model", "$.layers", 1, 4096, false, "transformer layers; 30x the deepest models"},
    {"model", "$.vocab", 1, 16777216, false, "vocabulary entries, 2^24"},
    {"model", "$.dtype_bytes", 1, 4, false, "bytes per weight/activation element: 1, 2 or 4"},
    {"model", "$.attention.heads", 1, 4096, false, "query heads"},
    {"model", "$.attention.kv_heads", 1, 4096, false, "key/value heads (GQA)"},
    {"model", "$.attention.head_dim", 1, 4096, false, "per-head width (GQA)"},
    {"model", "$.attention.q_lora_rank", 0, 65536, false, "MLA query rank; 0: no low-rank query"},
    {"model", "$.attention.kv_lora_rank", 1, 65536, false, "MLA latent width"},
    {"model", "$.attention.qk_nope_head_dim", 1, 4096, false, "MLA per-head query/key width"},
    {"model", "$.attention.qk_rope_head_dim", 1, 4096, false, "MLA rotary width"},
    {"model", "$.attention.v_head_dim", 1, 4096, false, "MLA per-head value width"},
    {"model", "$.ffn.intermediate", 1, 4194304, false, "dense FFN width, 2^22"},
    {"model", "$.moe.routed_experts", 1, 65536, false, "routed experts per MoE layer"},
    {"model", "$.moe.shared_experts", 0, 1024, false, "shared experts per MoE layer"},
    {"model", "$.moe.experts_per_token", 1, 1024, false, "routed experts a token visits"},
    {"model", "$.moe.expert_intermediate", 1, 4194304, false, "expert FFN width, 2^22"},
    {"model", "$.moe.first_dense_layers", 0, 4096, false, "dense layers before the MoE ones"},
    {"model", "$.context_limit", 1, 16777216, false,
     "longest sequence the model takes (its position limit), tokens"},
    {"model", "$.sliding_window.size", 1, 16777216, false, "tokens a window-limited layer attends to"},
    {"model", "$.sliding_window.layers", 0, 4096, false, "layers whose attention is window-limited"},
    {"model", "$.speculative.acceptance[].exit_layers", 1, 4096, false, "draft exit depth (self-speculation)"},
    {"model", "$.speculative.acceptance[].rate", 0, 1, false, "probability that a drafted token is accepted"},
    {"job", "$.phases.*.batch[]", 1, 65536, false, "requests in a batch bucket"},
    {"job", "$.phases.*.batch.max", 1, 65536, false, "largest batch bucket of the paper's rule"},
    {"job", "$.phases.*.seq[]", 1, 16777216, false, "tokens per request, 16M context"},
    {"job", "$.phases.*.seq.max", 1, 16777216, false, "largest sequence bucket of the paper's rule"},
    {"job", "$.phases.*.parallel.dp", 1, 65536, false, "data-parallel degree"},
    {"job", "$.phases.*.parallel.tp", 1, 65536, false, "tensor-parallel degree"},
    {"job", "$.phases.*.parallel.pp", 1, 65536, false, "pipeline-parallel degree"},
    {"job", "$.phases.*.parallel.ep", 1, 65536, false, "expert-parallel degree"},
    {"job", "$.slacks[]", 0, 10, false,
     "SLO slack as a fraction of the " ENPU_POLICY_DISPLAY_NODVFS " time, 10 = 1000 %"},
    {"job", "$.moe.capacity_factor", 1, 1024, false, "expert capacity factor"},
    {"job", "$.validation.sample", 1, 1000000, false, "buckets per policy to re-simulate"},
    {"job", "$.validation.seed", 0, 2147483647, false, "seed of the sample"},
    {"job", "$.epoch_ms", 0, 1e6, true, "epoch of the millisecond-epoch policies, ms; at most 1000 s"},
    {"job", "$.policies[].shadow[]", 0, 255, false,
     "VU shadow register sizes of a sweep; the chip's vregs bound them too"},
    {"cluster", "$.*.nodes", 1, 65536, false, "prefill or decode nodes"},
    {"cluster", "$.*.chips", 1, 65536, false, "chips per node"},
    {"cluster", "$.*.parallel.dp", 1, 65536, false, "data-parallel degree"},
    {"cluster", "$.*.parallel.tp", 1, 65536, false, "tensor-parallel degree"},
    {"cluster", "$.*.parallel.pp", 1, 65536, false, "pipeline-parallel degree"},
    {"cluster", "$.*.parallel.ep", 1, 65536, false, "expert-parallel degree"},
    {"cluster", "$.slo[].prefill_max_tokens", 1, 16777216, false, "prompt length bound of an SLO class"},
    {"cluster", "$.slo[].decode_max_tokens", 1, 16777216, false, "output length bound of an SLO class"},
    {"cluster", "$.slo[].ttft_ms", 0, 86400000, true, "time to first token target; at most a day"},
    {"cluster", "$.slo[].tpot_ms", 0, 3600000, true, "time per output token target; at most an hour"},
    {"cluster", "$.batching.max_batch", 1, 65536, false, "requests in one batch"},
    {"cluster", "$.batching.max_batch_tokens", 1, 16777216, false, "tokens in one prefill batch"},
    {"cluster", "$.idle.sleep_w", 0, 1000, false, "power of a sleeping chip, W"},
    {"cluster", "$.idle.wake_ms", 0, 3600000, false, "time to wake a sleeping node, at most an hour"},
    {"cluster", "$.idle.sleep_after_ms", 0, 3600000, false, "idle time before a node sleeps, at most an hour"},
    {"cluster", "$.scheduler.safeguard1_scan", 1, 100000, false, "waiting requests safeguard 1 checks per queue"},
    {"cluster", "$.scheduler.safeguard2_window_s", 0, 86400, true, "safeguard 2's window, at most a day"},
    {"cluster", "$.scheduler.safeguard2_miss_fraction", 0, 1, false, "SLO misses that lock the chips at peak"},
    {"cluster", "$.scheduler.predictive_window_s", 0, 3600, true, "the predictive safeguard's rate window"},
    {"cluster", "$.scheduler.predictive_hold_s", 0, 3600, true, "the predictive safeguard's hold window"},
    {"cluster", "$.scheduler.predictive_beta", 0, 100, false, "the square-root staffing margin"},
    {"cluster", "$.dcn.energy_pj_per_byte", 0, 1000000, false, "KV transfer energy per byte, both ends, pJ"},
    {"chip", "$.tflops_bf16", 0, 1000000, true, "peak bf16 TFLOP/s"},
    {"chip", "$.sa.count", 1, 1024, false, "systolic arrays"},
    {"chip", "$.sa.dim", 1, 4096, false, "systolic array side"},
    {"chip", "$.vu.count", 1, 1024, false, "vector units"},
    {"chip", "$.vu.sublanes", 1, 1024, false, "vector sublanes"},
    {"chip", "$.vu.lanes", 1, 4096, false, "vector lanes"},
    {"chip", "$.vu.vregs", 1, 4096, false, "vector registers"},
    {"chip", "$.vu.shadow_vregs", 0, 4096, false, "shadow registers; 0 disables VU-local forwarding"},
    {"chip", "$.vu.vreg_bytes", 1, 1048576, false, "bytes per vector register"},
    {"chip", "$.sram.bytes", 0, 1e12, true, "on-chip SRAM bytes, 1 TB"},
    {"chip", "$.sram.ports", 1, 1024, false, "SRAM ports"},
    {"chip", "$.sram.port_bytes_per_cycle", 1, 1048576, false, "bytes per port per cycle"},
    {"chip", "$.hbm.bytes", 0, 1e15, true, "HBM bytes per chip, 1 PB"},
    {"chip", "$.hbm.gbps", 0, 1000000, true, "HBM bandwidth, GB/s"},
    {"chip", "$.hbm.latency_ns", 0, 1000000, false, "HBM access latency, ns"},
    {"chip", "$.hbm.controller_share", 0, 1, true, "memory controller's share of the HBM table's power"},
    {"chip", "$.ici.links", 1, 1024, false, "ICI links per chip"},
    {"chip", "$.ici.link_gbps", 0, 1000000, true, "ICI bandwidth per link, GB/s"},
    {"chip", "$.ici.latency_ns", 0, 1e9, false, "ICI latency per collective step, ns"},
    {"chip", "$.ici.controller_share", 0, 1, true, "ICI controller's share of the ICI table's power"},
    {"chip", "$.dcn.gbps", 0, 1000000, true, "data-centre network bandwidth, GB/s"},
    {"chip", "$.host.gbps", 0, 1000000, true, "host link (PCIe) bandwidth, GB/s"},
    {"chip", "$.host.latency_ns", 0, 1e9, false, "host link latency per transfer, ns"},
    {"chip", "$.host.pj_per_byte", 0, 1000000, false, "host link energy per byte, pJ"},
    {"chip", "$.clock.step_mhz", 0, 10000, true, "frequency step, MHz"},
    {"chip", "$.clock.states", 1, 255, false, "frequency states; the plan store keeps them as u8"},
    {"chip", "$.ivr.vin_v", 0, 10, true, "regulator input voltage, V"},
    {"chip", "$.ivr.vout_min_v", 0, 10, true, "lowest output voltage, V"},
    {"chip", "$.ivr.vout_max_v", 0, 10, true, "highest output voltage, V"},
    {"chip", "$.ivr.step_mv", 0, 10000, true, "voltage step, mV"},
    {"chip", "$.ivr.step_ns", 0, 1000000, true, "time per voltage step, ns"},
    {"chip", "$.ivr.scaling_time_ns", 0, 1e9, true, "regulator scaling time, ns"},
    {"chip", "$.fifo_sync_cycles", 0, 1000000, false, "clock-domain crossing cycles per direction"},
    {"chip", "$.other_static_w", 0, 100000, false, "static power outside the domains, W"},
    {"chip", "$.tdp_w", 0, 100000, true, "thermal design power, W"},
    {"chip", "$.gating.*.gated_fraction", 0, 1, false, "static power left while gated, fraction"},
    {"chip", "$.gating.*.wake_ns", 0, 1e9, false, "wake-up latency of a gated component, ns"},
    {"chip", "$.gating.*.wake_energy_nj", 0, 1e12, false, "energy of one wake-up, nJ"},
    {"chip", "$.gating.*.min_idle_ns", 0, 1e12, false, "shortest idle interval ever gated, ns"},
    {"chip", "$.power_states.deep_sleep.w", 0, 100000, false, "power of a chip in deep sleep, W"},
    {"chip", "$.power_states.deep_sleep.wake_ms", 0, 3600000, false, "deep sleep to first work, ms (an hour)"},
    {"chip", "$.power_states.deep_sleep.wake_energy_j", 0, 1e9, false, "energy of one wake-up, J"},
    {"paper", "$.claims[].claim", 0, 5, false, "numbered claim of the paper's §4 list; 0: a §4.x number"},
    {"paper", "$.claims[].paper", -1e12, 1e12, false, "a number the paper states"},
    {"paper", "$.claims[].paper[]", -1e12, 1e12, false, "a range the paper states"},
    {"paper", "$.claims[].ours.slack", 0, 10, false,
     "SLO slack as a fraction of the " ENPU_POLICY_DISPLAY_NODVFS " time"},
    {"paper", "$.claims[].ours.factor", 1, 1024, false, "expert capacity factor"},
    {"paper", "$.claims[].ours.scale", -1e6, 1e6, false, "factor applied to our value (100: a fraction in %)"},
    {"paper", "$.claims[].ours.offset", -1e6, 1e6, false, "added to our value after the scale"},
    {"paper", "$.table7[].plans[].op", 0, 1e12, false, "operator-level plans explored (Table 7)"},
    {"paper", "$.table7[].plans[].req", 0, 1e12, false, "request-level plans explored (Table 7)"},
    {"paper", "$.table5[].paper", 0, 1e12, false, "a chip parameter (Table 5)"},
    {"power table", "voltage_V", 0, 10, true, "supply voltage, V"},
    {"power table", "frequency_GHz", 0, 100, false, "clock frequency, GHz"},
    {"power table", "bandwidth_GBps", 0, 1000000, false, "bandwidth, GB/s"},
    {"power table", "static_W", 0, 100000, false, "static power, W"},
    {"power table", "dynamic_W", 0, 100000, false, "dynamic power, W"},
    {"power table", "scaling_time_ns", 0, 1e9, false, "regulator scaling time, ns"},
    {"power table", "activity_factor", 0, 1, false, "fraction of cycles the load is active"},
    {"power table", "efficiency_pct", 0, 100, true, "regulator efficiency, %"},
};

/* Does `path` match `pattern`, where `*` in the pattern stands for one object key (a run
 * of characters up to the next '.' or '[')? */
static bool path_matches(const char *pattern, const char *path) {
  for (;; pattern++, path++) {
    if (*pattern == '*') {
      size_t key = strcspn(path, ".[");
      return key > 0 && path_matches(pattern + 1, path + key);
    }
    if (*pattern != *path) return false;
    if (!*pattern) return true;
  }
}

const config_range *config_range_find(const char *doc, const char *path) {
  for (size_t i = 0; i < sizeof ranges / sizeof ranges[0]; i++)
    if (!strcmp(ranges[i].doc, doc) && path_matches(ranges[i].path, path)) return &ranges[i];
  return NULL;
}

int config_range_interval(const char *doc, const char *path, char *out, size_t len, enpu_err *err) {
  const config_range *r = config_range_find(doc, path);
  ENPU_RETURN_IF(!r, err, ENPU_ERR_INTERNAL, "no documented range for %s %s", doc, path);
  snprintf(out, len, "%c%.15g, %.15g]", r->min_open ? '(' : '[', r->min, r->max);
  return ENPU_OK;
}

int config_range_check(const char *doc, const char *path, double v, enpu_err *err) {
  char interval[80];
  ENPU_FORWARD(config_range_interval(doc, path, interval, sizeof interval, err));
  const config_range *r = config_range_find(doc, path);
  if ((r->min_open ? v > r->min : v >= r->min) && v <= r->max) return ENPU_OK;
  return enpu_errorf(err, ENPU_ERR_RANGE, "expected a number in %s (%s), got %.15g", interval, r->why, v);
}
