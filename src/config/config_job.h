/* config_job.h — the job file (jobs/<name>.json): grids, policies, validation, sweeps and
 * their variants; the set of input files a load reads (config_files).
 * Part of config.h (include that): the module's one public header gathers these. */
#ifndef ENPU_CONFIG_JOB_H
#define ENPU_CONFIG_JOB_H

#include "config_chip.h"
#include "config_cluster.h"
#include "config_model.h"

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

#endif /* ENPU_CONFIG_JOB_H */
