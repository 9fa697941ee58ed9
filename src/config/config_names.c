/* config_names.c — names of the closed vocabularies (phases, components, policies, budget
 * modes, MoE expert graphs, capacity policies, idle modes, safeguard-2 modes) and the
 * spelling of policy variants.
 * The strings are part of the file formats and the store layout: never rename them.
 * A policy variant's code packs base (bits 0..7), gate (bit 8) and shadow size + 1
 * (bits 9..17; 0 = the chip's): journal records carry it, so it never changes either. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config_internal.h"

const char *const config_phase_names[CONFIG_NPHASE] = {"prefill", "decode"};
static const char *const component_names[CONFIG_NCOMP] = {"sa", "vu", "sram", "hbm", "ici"};
#define POLICY_NAME_(id, name, display, variants) name,
#define POLICY_VARIANTS_(id, name, display, variants) variants,
const char *const config_policy_names[CONFIG_NPOLICY] = {ENPU_POLICY_TABLE(POLICY_NAME_)};
static const bool policy_variants[CONFIG_NPOLICY] = {ENPU_POLICY_TABLE(POLICY_VARIANTS_)};
_Static_assert(CONFIG_POLICY_UNIFORM == 6 && CONFIG_POLICY_ENPU_4DOM == 10,
               "policy codes are in farm keys and journals: the table only grows at its end");
const char *const config_budget_names[CONFIG_NBUDGET] = {"strict", "paper"};
const char *const config_idle_mode_names[CONFIG_NIDLE_MODE] = {"peak", "lowest-state", "sleep", "gated"};
const char *const config_safeguard2_names[CONFIG_NSG2] = {"paper", "per-phase"};
const char *const config_safeguards_names[CONFIG_NSAFEGUARDS] = {"paper", "switching", "predictive"};

const char *const config_moe_experts_names[CONFIG_NEXPERTS] = {"all-resident", "active-only"};
const char *const config_capacity_names[CONFIG_NCAPACITY] = {"enforce", "offload", "ignore"};
const char *const config_attn_impl_names[CONFIG_NATTN_IMPL] = {"flash", "einsum"};
const char *const config_ici_model_names[CONFIG_NICI_MODEL] = {"ring", "neusim"};

static int parse_name(const char *name, const char *const *names, int count, int *out) {
  for (int i = 0; name && i < count; i++)
    if (strcmp(name, names[i]) == 0) {
      *out = i;
      return ENPU_OK;
    }
  return ENPU_ERR_NOT_FOUND;
}

/* Each vocabulary's name function (its spelling, "?" outside it) and, for those read
 * from command lines, its parse function (ENPU_ERR_NOT_FOUND for an unknown name). */
#define NAME_OF(type, names, count, name_fn) \
  const char *name_fn(type v) { return (unsigned)v < (count) ? (names)[v] : "?"; }
#define NAME_AND_PARSE(type, names, count, name_fn, parse_fn) \
  NAME_OF(type, names, count, name_fn)                        \
  int parse_fn(const char *name, type *out) {                 \
    int i;                                                    \
    ENPU_FORWARD(parse_name(name, (names), (count), &i));     \
    *out = (type)i;                                           \
    return ENPU_OK;                                           \
  }

NAME_AND_PARSE(config_phase, config_phase_names, CONFIG_NPHASE, config_phase_name, config_phase_parse)
NAME_AND_PARSE(config_policy, config_policy_names, CONFIG_NPOLICY, config_policy_name, config_policy_parse)
NAME_AND_PARSE(config_capacity, config_capacity_names, CONFIG_NCAPACITY, config_capacity_name,
               config_capacity_parse)
NAME_AND_PARSE(config_budget, config_budget_names, CONFIG_NBUDGET, config_budget_name, config_budget_parse)

uint8_t config_budget_code(config_budget b) { return (uint8_t)b; }

int config_budget_decode(unsigned code, config_budget *out) {
  if (code >= CONFIG_NBUDGET) return ENPU_ERR_RANGE;
  *out = (config_budget)code;
  return ENPU_OK;
}
NAME_OF(config_component, component_names, CONFIG_NCOMP, config_component_name)
NAME_OF(config_moe_experts, config_moe_experts_names, CONFIG_NEXPERTS, config_moe_experts_name)
NAME_OF(config_attn_impl, config_attn_impl_names, CONFIG_NATTN_IMPL, config_attn_impl_name)
NAME_OF(config_ici_model, config_ici_model_names, CONFIG_NICI_MODEL, config_ici_model_name)
NAME_OF(config_idle_mode, config_idle_mode_names, CONFIG_NIDLE_MODE, config_idle_mode_name)
NAME_OF(config_safeguard2, config_safeguard2_names, CONFIG_NSG2, config_safeguard2_name)
NAME_OF(config_safeguards, config_safeguards_names, CONFIG_NSAFEGUARDS, config_safeguards_name)

int config_idle_mode_parse(const char *name) {
  for (int m = 0; name && m < CONFIG_NIDLE_MODE; m++)
    if (!strcmp(name, config_idle_mode_names[m])) return m;
  return -1;
}

int config_safeguards_parse(const char *name) {
  for (int m = 0; name && m < CONFIG_NSAFEGUARDS; m++)
    if (!strcmp(name, config_safeguards_names[m])) return m;
  return -1;
}

/* ---------------------------------------------------------------------------------
 * Policy variants */

#define SHADOW_SUFFIX "@shadow="
#define MAX_SHADOW 255

void config_policy_spec_name(const config_policy_spec *p, char out[CONFIG_NAME_LEN]) {
  const char *base = config_policy_name(p->base);
  int n;
  if (p->gate && p->base == CONFIG_POLICY_NODVFS) n = snprintf(out, CONFIG_NAME_LEN, ENPU_POLICY_GATE_ALONE);
  else n = snprintf(out, CONFIG_NAME_LEN, "%s%s", p->gate ? ENPU_POLICY_GATE_PREFIX : "", base);
  if (p->shadow_vregs >= 0 && n > 0 && n < CONFIG_NAME_LEN)
    n += snprintf(out + n, (size_t)(CONFIG_NAME_LEN - n), SHADOW_SUFFIX "%d", p->shadow_vregs);
  /* a sweep point's name is the job's (config_job_policy_name); without the job the
   * point's number, which no parser accepts */
  if (p->variant > 0 && n > 0 && n < CONFIG_NAME_LEN)
    snprintf(out + n, (size_t)(CONFIG_NAME_LEN - n), "%c#%d", CONFIG_VARIANT_SEP, p->variant);
}

/* Parse a name in any spelling; config_policy_spec_parse then insists on the one. */
static int parse_any(const char *name, config_policy_spec *out) {
  *out = (config_policy_spec){.base = CONFIG_POLICY_NODVFS, .shadow_vregs = -1};
  char buf[CONFIG_NAME_LEN];
  if (!name || strlen(name) >= sizeof buf) return ENPU_ERR_NOT_FOUND;
  memcpy(buf, name, strlen(name) + 1);
  char *at = strstr(buf, SHADOW_SUFFIX);
  if (at) {
    const char *digits = at + strlen(SHADOW_SUFFIX);
    char *end = NULL;
    const long v = strtol(digits, &end, 10);
    if (!*digits || *digits == '-' || *digits == '+' || *end || v > MAX_SHADOW) return ENPU_ERR_NOT_FOUND;
    out->shadow_vregs = (int)v;
    *at = '\0';
  }
  const char *base = buf;
  if (strcmp(buf, ENPU_POLICY_GATE_ALONE) == 0) {
    out->gate = true;
    return ENPU_OK;
  }
  if (strncmp(buf, ENPU_POLICY_GATE_PREFIX, strlen(ENPU_POLICY_GATE_PREFIX)) == 0) {
    out->gate = true;
    base += strlen(ENPU_POLICY_GATE_PREFIX);
  }
  ENPU_FORWARD(config_policy_parse(base, &out->base));
  /* uniform is the online governors' table, not a DVFS plan: it has no variants */
  return !config_policy_has_variants(out->base) && (out->gate || out->shadow_vregs >= 0) ? ENPU_ERR_NOT_FOUND
                                                                                         : ENPU_OK;
}

int config_policy_spec_parse(const char *name, config_policy_spec *out) {
  ENPU_FORWARD(parse_any(name, out));
  char canonical[CONFIG_NAME_LEN];
  config_policy_spec_name(out, canonical);
  return strcmp(canonical, name) == 0 ? ENPU_OK : ENPU_ERR_NOT_FOUND;
}

/* bits 0-7 base, 8 gate, 9-17 shadow size + 1, 18-31 sweep point (0: the job's chip) */
uint32_t config_policy_spec_code(const config_policy_spec *p) {
  return (uint32_t)p->base | (uint32_t)p->gate << 8 | (uint32_t)(p->shadow_vregs + 1) << 9 |
         (uint32_t)p->variant << 18;
}

int config_policy_spec_decode(uint32_t code, config_policy_spec *out) {
  const uint32_t base = code & 0xFFu, shadow1 = code >> 9 & 0x1FFu, variant = code >> 18;
  if (base >= CONFIG_NPOLICY || shadow1 > MAX_SHADOW + 1 || variant > CONFIG_MAX_VARIANTS ||
      (!config_policy_has_variants((config_policy)base) && code != base))
    return ENPU_ERR_NOT_FOUND;
  *out = (config_policy_spec){.base = (config_policy)base,
                              .gate = (code >> 8 & 1u) != 0,
                              .shadow_vregs = (int)shadow1 - 1,
                              .variant = (int)variant};
  return ENPU_OK;
}

void config_policy_code_name(uint32_t code, char out[CONFIG_NAME_LEN]) {
  config_policy_spec spec;
  if (config_policy_spec_decode(code, &spec) == ENPU_OK) config_policy_spec_name(&spec, out);
  else snprintf(out, CONFIG_NAME_LEN, "policy-code-%u", (unsigned)code);
}

bool config_policy_named(const char *name, config_policy p) {
  return name && (unsigned)p < CONFIG_NPOLICY && !strcmp(name, config_policy_names[p]);
}

bool config_policy_has_variants(config_policy p) { return (unsigned)p < CONFIG_NPOLICY && policy_variants[p]; }

size_t config_policy_names_join(char *out, size_t len, const char *sep, bool variants) {
  size_t n = 0;
  if (len) out[0] = '\0';
  for (int p = 0; p < CONFIG_NPOLICY; p++) {
    if (policy_variants[p] != variants) continue;
    const int w = snprintf(out + n, len - n, "%s%s", n ? sep : "", config_policy_names[p]);
    if (w < 0 || (size_t)w >= len - n) return len;
    n += (size_t)w;
  }
  return n;
}

config_policy_spec config_policy_spec_ungated(const config_policy_spec *p) {
  config_policy_spec q = *p;
  q.gate = false;
  return q;
}
