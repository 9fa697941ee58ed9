/* jobinit.h — from a model, a chip and a request trace to a job and a cluster file that
 * farm, validate and replay take as they are (`enpu job init`, `enpu plan`): the
 * parallelism from the chip's memory, the SLO classes from the trace's token percentiles
 * with the paper's targets, the bucket grid from the trace's lengths under a bucket budget.
 *
 * The rules (each figure is also in the summary jobinit_write_summary prints):
 *  - Lengths. A request's prefill length is its context tokens; its decode length is its
 *    total (context + generated), the KV a decode step reads at its last token (paper
 *    Table 2's caption: "for decode, we use total lengths").
 *  - Grid. Both phases share one batch axis, powers of two up to max_batch. Each phase's
 *    seq axis has at most floor(bucket_budget / batches) lengths, multiples of
 *    JOBINIT_SEQ_STEP, placed by dynamic programming to minimise the padded tokens of
 *    the trace's requests (jobinit_seq_axis); its largest length is the smallest step
 *    multiple such that at least `coverage` of the requests fit both phases' largest
 *    lengths (capped at the model's context limit). Padding waste = padded tokens /
 *    bucket tokens over the covered requests, one request per bucket.
 *  - Parallelism. Chip counts 1, 2, 4, ... (tp for a dense model; ep first, up to the
 *    routed experts, then tp for an MoE one), each degree dividing what config_job
 *    requires; the first whose every grid bucket, the largest included (max_batch
 *    requests at the grid's longest length: the trace's KV working set), fits the chip's
 *    HBM with at least `headroom` of it free, by grid_memory_per_chip (the farm's own
 *    capacity rule). The headroom of the largest bucket is stated.
 *  - SLO classes (paper §4.1, Table 2): class bounds at the trace's percentiles
 *    (default P33, P66, P100; nearest rank) of the prefill and decode lengths; TTFT and
 *    TPOT targets slo_scale (5) times the model's NoDVFS single-request latency on the
 *    chosen node (batch 1, prefill at the class's prefill bound, one decode step at its
 *    decode bound), each replaceable by the caller's value.
 *  - Nodes. From the busiest minute of the trace (arrivals λ per second): prefill nodes
 *    by square-root staffing, ceil(R + β·√R) for the offered load R = λ · mean NoDVFS
 *    TTFT (batch 1 at the request's padded bucket) and β the cluster's predictive_beta
 *    (a request waits with probability safeguard2_miss_fraction, 1 %: β ≈ 2.37), since
 *    TTFT targets leave short prompts little room to queue; decode nodes
 *    ceil(λ · mean (generated − 1) × NoDVFS step of a full batch at the padded total
 *    length / (max_batch · utilisation)), continuous batching absorbing the arrivals.
 *  - Safeguards. A prefill pool of at most β² nodes gets the switching safeguards: the
 *    predictive ones cap a batch's slow-down by 1 − β/√nodes, at or below 0 there, which
 *    would run every prefill batch at its fastest plan (jobinit_write.c). */
#ifndef ENPU_JOBINIT_H
#define ENPU_JOBINIT_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "common.h"
#include "config.h"

#define JOBINIT_SEQ_STEP 128
#define JOBINIT_MAX_AXIS 64
#define JOBINIT_SLO_SCALE 5.0 /* paper §4.1: 5x the single-request TTFT/TPOT */

typedef struct {
  const char *model_path; /* a Hugging Face config.json or a model file */
  const char *chip_path;
  const char *trace_path; /* the replay's CSV (enpu trace convert makes one) */
  const char *out_dir;    /* job.json, cluster.json, model.json, init.md go here */
  const char *name;       /* the job's name; NULL: the model's */
  double coverage;        /* fraction of requests inside the grid, (0, 1] */
  int bucket_budget;      /* buckets per phase (batch x seq), >= batches */
  int max_batch;          /* the batch axis' top, a power of two */
  double headroom;        /* HBM fraction left free by the largest bucket, [0, 1) */
  double slo_scale;       /* TTFT/TPOT targets as multiples of NoDVFS latency */
  double utilisation;     /* decode node sizing target, (0, 1] */
  int tp, ep;             /* 0: chosen by the rule */
  double percentiles[CONFIG_MAX_SLO_CLASSES];
  int npercentiles; /* 0: 33, 66, 100 */
  double ttft_ms[CONFIG_MAX_SLO_CLASSES], tpot_ms[CONFIG_MAX_SLO_CLASSES];
  int nttft, ntpot; /* overrides, one per class (0: the rule's) */
  int validation_sample;
  /* the importer's options, for a Hugging Face config.json (config_hf_options): bytes per
   * weight and activation (0: torch_dtype's), keys to drop although it does not know them */
  int dtype_bytes;
  const char *const *ignore;
  int nignore;
  /* asked between job init's steps and between the node sizing's replays: yes ends the
   * run with ENPU_ERR_STOPPED (enpu plan's Ctrl-C); zeroed: never */
  enpu_stop stop;
} jobinit_options;

/* The defaults above: coverage 0.999, budget 64, max_batch 32, headroom 0.10, scale 5,
 * utilisation 0.5, validation sample 16. */
void jobinit_options_default(jobinit_options *o);

typedef struct {
  char name[CONFIG_NAME_LEN];
  char job_path[CONFIG_PATH_LEN], cluster_path[CONFIG_PATH_LEN], model_path[CONFIG_PATH_LEN];
  char summary_path[CONFIG_PATH_LEN];
  /* trace */
  size_t requests;
  double peak_rate_per_s;
  /* grid */
  int batch[JOBINIT_MAX_AXIS], nbatch;
  int seq[CONFIG_NPHASE][JOBINIT_MAX_AXIS], nseq[CONFIG_NPHASE];
  double coverage;                     /* fraction of the requests inside both phases' grids */
  size_t outside;                      /* requests beyond them */
  double padding_waste[CONFIG_NPHASE]; /* padded / bucket tokens of the covered requests */
  int context_limit;                   /* the model's (0: none); caps the grid */
  bool capped;                         /* a largest length stopped at it */
  /* parallelism and memory of the largest bucket per phase */
  config_parallel parallel;
  int chips;
  double weights_bytes, kv_bytes[CONFIG_NPHASE], activation_bytes[CONFIG_NPHASE], hbm_bytes;
  double headroom[CONFIG_NPHASE]; /* free HBM fraction of the phase's largest bucket */
  bool parallel_given;
  /* SLO classes */
  config_slo_class slo[CONFIG_MAX_SLO_CLASSES];
  double percentile[CONFIG_MAX_SLO_CLASSES];
  double nodvfs_ttft_ms[CONFIG_MAX_SLO_CLASSES], nodvfs_tpot_ms[CONFIG_MAX_SLO_CLASSES];
  bool ttft_given[CONFIG_MAX_SLO_CLASSES], tpot_given[CONFIG_MAX_SLO_CLASSES];
  int nslo;
  /* nodes */
  int nodes[CONFIG_NPHASE];
  double mean_ttft_ms, mean_decode_s;
  double staffing_beta;
  bool imported; /* the model was a Hugging Face config */
  /* nodes measured after the farm (jobinit_size_nodes): the rule's counts, and the share
   * of the trace's requests that meet their TTFT (prefill) and TPOT (decode) on NoDVFS
   * plans with the rule's nodes and with the final ones */
  bool sized, size_capped;
  bool size_flat[CONFIG_NPHASE]; /* more nodes stopped helping the pool: not queueing */
  int rule_nodes[CONFIG_NPHASE];
  double size_target, attainment_rule[CONFIG_NPHASE], attainment_sized[CONFIG_NPHASE];
  char sized_cluster_path[CONFIG_PATH_LEN + 32];
} jobinit_result;

/* Read the model, chip and trace, choose as the rules say, and write out_dir/job.json,
 * cluster.json, model.json and init.md (the summary), each only when its bytes change
 * (so a rerun leaves them, and what reads them, as they were). Every file passes
 * config_job_load. @return 0, or ENPU_ERR_IO, _PARSE, _INVALID, _RANGE (inputs),
 * ENPU_ERR_INFEASIBLE (no chip count up to 64 fits, or a given tp/ep does not),
 * ENPU_ERR_NOMEM, with err saying which. */
int jobinit_run(const jobinit_options *o, jobinit_result *r, enpu_err *err);

/* After the farm compiled the job into store_path: the node rules above are queueing
 * estimates from the busiest minute, blind to a heavy tail of long prompts (short ones
 * wait behind them), so the trace is replayed on the store's NoDVFS plans and a pool
 * whose outcome (prefill: TTFT, decode: TPOT) is met by fewer than `target` of the
 * requests grows (by a quarter, at least one node) until it is, up to
 * JOBINIT_SIZE_MAX_FACTOR times the rule's count (then r->size_capped), or until a step
 * gains less than JOBINIT_SIZE_MIN_GAIN (taken back; r->size_flat: the misses are not
 * queueing but the grid's padding or targets below the padded buckets' times). NoDVFS
 * is the reference: where it misses, safeguard 2 locks the chips at peak and DVFS has no
 * slack to spend. Job init's own files stay as they are (the farm reads them): the
 * measured cluster is sized_dir/cluster.json (r->sized_cluster_path) and the account
 * sized_dir/sizing.md (jobinit_write_sizing), each written only when its bytes change.
 * @return 0, or the store's, the trace's or the replay's error. */
#define JOBINIT_SIZE_MAX_FACTOR 16
#define JOBINIT_SIZE_TARGET 0.99    /* the share safeguard 2 needs met: it locks above 1 % missed */
#define JOBINIT_SIZE_MIN_GAIN 0.001 /* a step that gains less (0.1 point) is not a queueing cure */
int jobinit_size_nodes(const jobinit_options *o, jobinit_result *r, const char *store_path, double target,
                       const char *sized_dir, enpu_err *err);
/* What the sizing measured and chose (Markdown); nothing when r->sized is false. */
void jobinit_write_sizing(const jobinit_result *r, FILE *out);

/* The summary (Markdown): what was chosen and why, with the headroom, coverage, padding
 * waste and the SLO rule's citation. */
void jobinit_write_summary(const jobinit_options *o, const jobinit_result *r, FILE *out);

/* ---------------------------------------------------------------------------------
 * The rules' arithmetic (jobinit_trace.c), public for the unit test. */

/* Nearest-rank percentile p (0 < p <= 100) of n >= 1 sorted values: the value at rank
 * ceil(p/100 · n). */
int32_t jobinit_percentile(const int32_t *sorted, size_t n, double p);

/* At most k seq bucket lengths, multiples of step, the last exactly top (a multiple of
 * step), minimising the padded tokens sum(bucket(x) - x) of the sorted lengths x <= top
 * (those above top are ignored). *count may be below k when fewer lengths suffice (each
 * extra one would pad nothing less). @return 0, ENPU_ERR_INVALID (k < 1, top not a
 * positive multiple of step), ENPU_ERR_NOMEM. */
int jobinit_seq_axis(const int32_t *sorted, size_t n, int top, int step, int k, int *out, int *count,
                     enpu_err *err);

/* Padded tokens / bucket tokens of the sorted lengths x <= axis[count-1], each padded to
 * the smallest axis value >= x (0 when none is covered). */
double jobinit_padding_waste(const int32_t *sorted, size_t n, const int *axis, int count);

#endif /* ENPU_JOBINIT_H */
