/* config_vocab.h — phases, components, policies and budget modes: the project's small closed
 * vocabularies, and the lengths of names and paths.
 * Part of config.h (include that): the module's one public header gathers these. */
#ifndef ENPU_CONFIG_VOCAB_H
#define ENPU_CONFIG_VOCAB_H

#include <stdbool.h>
#include <stdint.h>

#include "common.h"
#include "enpu_policy.h" /* the one table of policies */

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
 * The one table of policies is ENPU_POLICY_TABLE in common/enpu_policy.h (common, so the
 * plan store's reader can name policies too): one row each, in code order, with the
 * policy's name (part of the file formats and the store layout: never renamed), its
 * display name and whether it takes pg+ and @shadow= variants and sweep points. The enum,
 * the names, the parsers, the error and help texts are made from it, and
 * tests/integration/check_schemas.py holds the job schema's policy pattern against it.
 * What a policy means is its row in power/power_policy.c. */
#define CONFIG_POLICY_ENUM_(id, name, display, variants) CONFIG_POLICY_##id,
typedef enum { ENPU_POLICY_TABLE(CONFIG_POLICY_ENUM_) CONFIG_NPOLICY } config_policy;
#undef CONFIG_POLICY_ENUM_

/* Every policy's name, ", " after each: a string literal for help texts. */
#define CONFIG_POLICY_LIST_ITEM_(id, name, display, variants) name ", "
#define CONFIG_POLICY_NAMES_TEXT ENPU_POLICY_TABLE(CONFIG_POLICY_LIST_ITEM_)

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

#endif /* ENPU_CONFIG_VOCAB_H */
