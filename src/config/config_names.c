/* config_names.c — names of the closed vocabularies (phases, components, policies, budget
 * modes, MoE expert graphs, capacity policies, idle modes, safeguard-2 modes).
 * The strings are part of the file formats and the store layout: never rename them. */
#include <string.h>

#include "config_internal.h"

const char *const config_phase_names[CONFIG_NPHASE] = {"prefill", "decode"};
static const char *const component_names[CONFIG_NCOMP] = {"sa", "vu", "sram", "hbm", "ici"};
const char *const config_policy_names[CONFIG_NPOLICY] = {"nodvfs", "dvfs-c", "enpu-c", "enpu-all",
                                                         "ideal",  "dvfs-c-walk", "uniform"};
const char *const config_budget_names[CONFIG_NBUDGET] = {"strict", "paper"};
const char *const config_idle_mode_names[CONFIG_NIDLE_MODE] = {"peak", "lowest-state", "sleep"};
const char *const config_safeguard2_names[CONFIG_NSG2] = {"paper", "per-phase"};

const char *const config_moe_experts_names[CONFIG_NEXPERTS] = {"all-resident", "active-only"};
const char *const config_capacity_names[CONFIG_NCAPACITY] = {"enforce", "offload", "ignore"};

const char *config_phase_name(config_phase p) {
  return (unsigned)p < CONFIG_NPHASE ? config_phase_names[p] : "?";
}

const char *config_component_name(config_component c) {
  return (unsigned)c < CONFIG_NCOMP ? component_names[c] : "?";
}

const char *config_policy_name(config_policy p) {
  return (unsigned)p < CONFIG_NPOLICY ? config_policy_names[p] : "?";
}

const char *config_moe_experts_name(config_moe_experts e) {
  return (unsigned)e < CONFIG_NEXPERTS ? config_moe_experts_names[e] : "?";
}

const char *config_capacity_name(config_capacity c) {
  return (unsigned)c < CONFIG_NCAPACITY ? config_capacity_names[c] : "?";
}

const char *config_budget_name(config_budget b) {
  return (unsigned)b < CONFIG_NBUDGET ? config_budget_names[b] : "?";
}

const char *config_idle_mode_name(config_idle_mode m) {
  return (unsigned)m < CONFIG_NIDLE_MODE ? config_idle_mode_names[m] : "?";
}

const char *config_safeguard2_name(config_safeguard2 m) {
  return (unsigned)m < CONFIG_NSG2 ? config_safeguard2_names[m] : "?";
}

static int parse_name(const char *name, const char *const *names, int count, int *out) {
  for (int i = 0; name && i < count; i++)
    if (strcmp(name, names[i]) == 0) {
      *out = i;
      return ENPU_OK;
    }
  return ENPU_ERR_NOT_FOUND;
}

int config_phase_parse(const char *name, config_phase *out) {
  int i;
  ENPU_FORWARD(parse_name(name, config_phase_names, CONFIG_NPHASE, &i));
  *out = (config_phase)i;
  return ENPU_OK;
}

int config_policy_parse(const char *name, config_policy *out) {
  int i;
  ENPU_FORWARD(parse_name(name, config_policy_names, CONFIG_NPOLICY, &i));
  *out = (config_policy)i;
  return ENPU_OK;
}

int config_capacity_parse(const char *name, config_capacity *out) {
  int i;
  ENPU_FORWARD(parse_name(name, config_capacity_names, CONFIG_NCAPACITY, &i));
  *out = (config_capacity)i;
  return ENPU_OK;
}

int config_budget_parse(const char *name, config_budget *out) {
  int i;
  ENPU_FORWARD(parse_name(name, config_budget_names, CONFIG_NBUDGET, &i));
  *out = (config_budget)i;
  return ENPU_OK;
}
