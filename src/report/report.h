/* report.h — the report of a plan store (src/README.md): a markdown file with
 * tables and gnuplot PNG plots in the shape of the paper's figures:
 *   Figure 11  energy savings vs SLO slack per policy and phase (mean, min, max over
 *              the ok buckets);
 *   Figure 12  energy of a plan by component slot for representative buckets;
 *   Figure 19  chosen frequency state vs the component's utilisation at peak, per op
 *              (recomputed with the cost model: needs the job file);
 *   Figures 13, 15, 16, 17, 18, 21  the design space: regulator loss vs slack, shadow
 *              register sizes, epoch DVFS, domain counts, savings vs sequence length,
 *              power gating (from the policies the store holds);
 *   Figure 22  energy savings and SLO attainment per 5-minute window of a replay
 *              (`enpu replay --out`), peak (14–20 h) vs off-peak, safeguard shares;
 *   Figure 5   SLO-slack percentiles of the requests finished per window;
 * and the plot of a load sweep (`enpu replay --rates`). A caller may draw reference values
 * on the figures through a report_overlay (the paper wing, src/paper/, draws the paper's
 * stated numbers so); the report itself knows no reference.
 *
 * The aggregation functions work on a loaded store (store_load) and are pure: the same
 * store gives the same rows. report_write adds the files: data (*.dat) and gnuplot
 * scripts (*.gp) next to the PNGs, the figures of one call drawn together by one gnuplot
 * child process at its end (one gnuplot per figure when that one fails, to name the
 * script), report.md last.
 * Energies are per forward pass of a bucket (nJ in the rows, mJ in the report). */
#ifndef ENPU_REPORT_H
#define ENPU_REPORT_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "common.h"
#include "config.h"
#include "planstore.h"
#include "store.h"

/* ---------------------------------------------------------------------------------
 * Figure 11: savings vs slack */

typedef struct {
  char policy[STORE_NAME_LEN];
  int phase;                          /* STORE_PHASE_* */
  double slack;                       /* fraction of T_nodvfs */
  int budget;                         /* STORE_BUDGET_* the plans were compiled in (a row never mixes) */
  size_t buckets;                     /* ok buckets with a plan at this slack */
  double mean, min, max;              /* savings_vs_nodvfs over those plans (fractions) */
  double overhead_mean, overhead_max; /* the plans' overhead_pct (% of T_nodvfs): time
                                         beyond the critical path */
  double paper_overhead_mean, paper_overhead_max; /* their paper_overhead_pct: V/f
                                         transitions and crossings' loop throughput loss
                                         (§4.4), no fill/drain */
} report_savings_row;

/* One row per (policy, phase, slack, budget mode) present among the plans of ok buckets,
 * ordered by policy (store order), phase, slack, mode. *out is malloc'd (NULL when *n is 0).
 * @return 0, or ENPU_ERR_NOMEM. */
int report_savings(const store_contents *c, report_savings_row **out, size_t *n, enpu_err *err);

/* ---------------------------------------------------------------------------------
 * Capacity policy and MoE options of the compiled job */

typedef struct {
  char capacity[16]; /* "enforce", "offload" or "ignore" */
  char experts[16];  /* "all-resident" or "active-only" */
  char factor[24];   /* "worst" or the number */
  size_t over_hbm;   /* ok buckets of the first policy compiled over HBM (with a note) */
  size_t buckets;    /* buckets of the first policy */
} report_capacity_info;

/* From the store's job document (the loader's defaults for a key it lacks: a store
 * written before the key existed) and its bucket notes. */
void report_capacity(const store_contents *c, report_capacity_info *out);

/* ---------------------------------------------------------------------------------
 * Representative buckets */

typedef struct {
  int phase;
  int32_t batch, seq;
} report_bucket_key;

/* The representative bucket of `phase`: among the buckets that are ok in every policy of
 * the store, the median by NoDVFS time (first policy's t_nodvfs_ns; the lower median of
 * an even count; ties broken by batch, then seq).
 * @return 0; ENPU_ERR_NOT_FOUND when no bucket of the phase is ok in every policy;
 * ENPU_ERR_NOMEM. */
int report_pick_bucket(const store_contents *c, int phase, report_bucket_key *out, enpu_err *err);

/* ---------------------------------------------------------------------------------
 * Figure 12: energy by component */

typedef struct {
  char policy[STORE_NAME_LEN];
  report_bucket_key bucket;
  double slack;
  uint64_t walk_prefix;
  double slot_nj[STORE_NENERGY]; /* sum over the bucket's ops of instances at each of
                                    the op's points (lead and trail, from the plan's walk
                                    prefix) x that point's energy_by_slot_nj */
  double slots_total_nj;         /* the sum of slot_nj */
  double plan_energy_nj;         /* the plan record: real op order, V/f transitions */
  double e_nodvfs_nj;            /* the bucket's NoDVFS energy */
} report_breakdown_row;

/* One row per (policy, stored slack) of bucket `key`, policies in store order, slacks
 * ascending; a policy without that ok bucket has no rows. Each plan's plan_states runs
 * say where every instance is (a run that is no Pareto point counts its op's fastest
 * point's per-slot energies).
 * @return 0; ENPU_ERR_NOT_FOUND when no policy has the bucket ok; ENPU_ERR_NOMEM. */
int report_breakdown(const store_contents *c, const report_bucket_key *key, report_breakdown_row **out, size_t *n,
                     enpu_err *err);

/* ---------------------------------------------------------------------------------
 * Figure 19: chosen frequency vs utilisation at peak */

typedef struct {
  char op[STORE_NAME_LEN]; /* the store op's name */
  report_bucket_key bucket;
  uint64_t instances;
  uint8_t state[STORE_NSTATE];    /* lead point of the plan: SA, VU, SRAM, HBM, ICI */
  double util_peak[STORE_NSTATE]; /* busy/time of each component, NoDVFS at all-peak */
  int matched;                    /* 1: a graph op of the job's bucket has this name and,
                                     under the policy at `state`, the stored time (rel.
                                     1e-6); 0: no such op (utilisations are 0) */
} report_freq_row;

/* The ops of `policy`'s plan for bucket `key` at its stored slack closest to `slack`,
 * in op-table order, with utilisations recomputed from `job` (graph_build + cost model).
 * *slack_used receives that slack.
 * @return 0; ENPU_ERR_NOT_FOUND (no such policy/ok bucket/plan, or a policy name the
 * config does not know); the graph's or cost model's error; ENPU_ERR_NOMEM. */
int report_freq_util(const store_contents *c, const config_job *job, const char *policy,
                     const report_bucket_key *key, double slack, report_freq_row **out, size_t *n,
                     double *slack_used, enpu_err *err);

/* ---------------------------------------------------------------------------------
 * Overlays: reference values a caller draws on the figures (the paper wing's stated
 * numbers, src/paper/paper.h, are one). The report says what each figure that can carry
 * them shows and lets the overlay continue its gnuplot script; the data files are the
 * same with or without one, and the report never reads what the overlay draws. */

/* What a figure shows. */
typedef struct {
  const char *figure;        /* its number in the report's numbering ("11", "15", "20") */
  int phase;                 /* CONFIG_PREFILL / CONFIG_DECODE, -1: the figure has both */
  const char *model;         /* the store's model, NULL or "" when unknown */
  const char *const *series; /* the series drawn, series i in line colour i + 1 */
  const int *cols;           /* series i's column in the .dat (slack figures), or NULL */
  size_t nseries;
  bool gains; /* slack figures: values about the difference of two series apply too */
} report_figure;

/* Where a figure with a fixed-x panel wants markers. */
typedef enum {
  REPORT_MARK_SLOWDOWN = 0,   /* Figure 15: series i's slowdown, at x = xs[i] */
  REPORT_MARK_CAPACITY_WORST, /* Figure 20: the worst-case plans' saving by capacity factor */
  REPORT_MARK_CAPACITY_LOSS   /* Figure 20: the saving lost by worst-case provisioning */
} report_mark;

/* The tables of report.md an overlay may add rows to. */
typedef enum {
  REPORT_TABLE_REPLAY_PERIODS = 0 /* Section 5's peak and off-peak table: | hours | policy | SLO
                                     attainment | busy-only savings | with-idle savings |
                                     safeguard 1 share | locked share | (prefill / decode) */
} report_table;

typedef struct {
  void *ctx; /* handed to every hook */
  /* Comment lines at the top of a figure's script (before its settings). */
  void (*context)(void *ctx, FILE *gp, const report_figure *f);
  /* Continue a plot command whose x is the slack (%), one column per series. */
  void (*slack)(void *ctx, FILE *gp, const report_figure *f, const char *dat);
  /* Continue a plot command with markers of `kind` at fixed x (xs: REPORT_MARK_SLOWDOWN). */
  void (*marks)(void *ctx, FILE *gp, const report_figure *f, const char *dat, report_mark kind, const double *xs);
  /* report.md's list line saying where the values come from ("- ...\n"). */
  void (*note)(void *ctx, FILE *md);
  /* Reference rows at the end of a table of report.md (whole "| ... |\n" lines, the
   * table's columns). */
  void (*rows)(void *ctx, FILE *md, report_table table);
} report_overlay;

/* ---------------------------------------------------------------------------------
 * Figure 20: expert load imbalance (paper §4.6), from `enpu compile --capacity-factor` */

typedef struct {
  char policy[STORE_NAME_LEN];
  double capacity_factor; /* the true load: 1 = balanced ... E/k = every token on one expert */
  double slack;
  double savings;       /* the plan compiled for this load (ideal provisioning) */
  double savings_worst; /* the plan compiled for the worst case, run on this load */
} report_imbalance_row;

/* What Figure 20 shows, for an overlay (report_overlay) to draw its reference values on. */
typedef struct {
  const report_overlay *overlay; /* NULL: none drawn */
  const char *model;             /* the job's model name */
  int phase;                     /* the bucket's CONFIG_PREFILL / CONFIG_DECODE */
} report_imbalance_refs;

/* Write <dir>/figure20.md, figure20.dat, figure20.gp and figure20.png (creating dir):
 * per policy, savings vs NoDVFS against the capacity factor (mean over the slacks,
 * min..max as the paper's shaded 0–max slack band) for the plans made for each factor
 * and for the worst-case plans, and their difference, with an overlay's reference values
 * (`paper` may be NULL). `title` names the bucket; rows in any order.
 * @return 0, ENPU_ERR_IO, ENPU_ERR_NOT_FOUND/INTERNAL from gnuplot. */
int report_write_imbalance(const char *dir, const char *gnuplot, const char *title,
                           const report_imbalance_refs *paper, const report_imbalance_row *rows, size_t n,
                           enpu_err *err);

/* ---------------------------------------------------------------------------------
 * The whole report */

typedef struct {
  const char *store_path;
  const char *out_dir;           /* NULL: results/<job name>/ (the name in the store's job_json) */
  const char *replay_dir;        /* NULL: no Figure 22 */
  const config_job *job;         /* NULL: Figure 19 is skipped with a note */
  const char *gnuplot;           /* program to run, NULL: "gnuplot" from PATH */
  double freq_slack;             /* slack for Figure 19 (closest stored one); < 0: the largest */
  const report_overlay *overlay; /* reference values drawn on the figures they are about
                                    (NULL: none) */
} report_options;

/* Write <out_dir>/report.md, the PNGs and their .dat/.gp files (creating out_dir and its
 * parents). *md_path (may be NULL) receives the report's path (malloc'd).
 * @return 0; ENPU_ERR_IO/FORMAT from the store; ENPU_ERR_NOT_FOUND when gnuplot cannot
 * be run; ENPU_ERR_INTERNAL when gnuplot fails on a script (its message is quoted);
 * ENPU_ERR_PARSE for a replay CSV without the expected columns; ENPU_ERR_IO. */
int report_write(const report_options *o, char **md_path, enpu_err *err);

/* ---------------------------------------------------------------------------------
 * Drawing: the files, gnuplot scripts and figure queue every report section writes
 * with, and the rules its figures share; public so a writer above this module (the
 * paper wing) draws its figures the same way and in the same gnuplot. */

/* The figures of one report call (report_plots.c): each section queues its scripts, and
 * the top-level call draws them all in one gnuplot at its end (a gnuplot's start costs
 * more than a small figure). Opaque. */
typedef struct report_plots report_plots;

/* `dir` made absolute against the working directory, into out[len].
 * @return 0, ENPU_ERR_IO, ENPU_ERR_RANGE (too long). */
int report_absolute_dir(const char *dir, char *out, size_t len, enpu_err *err);

/* Open <dir>/<name> for writing (a new temporary file, enpu_file_create) / close it
 * checking every write and rename it over <dir>/<name> / close and remove it unpublished.
 * @return 0, or ENPU_ERR_IO (_ENV, _RANGE) naming the file. */
int report_file_open(const char *dir, const char *name, FILE **f, enpu_err *err);
int report_file_close(FILE *f, const char *dir, const char *name, enpu_err *err);
void report_file_discard(FILE *f, const char *dir, const char *name);

/* The first lines of every gnuplot script: the PNG terminal (960 x height pixels), `png`
 * as output, a title. */
void report_gp_preamble(FILE *gp, const char *png, int height, const char *title);

/* An empty queue whose figures `program` draws (NULL: "gnuplot" from PATH; copied).
 * @return 0, ENPU_ERR_NOMEM. */
int report_plots_create(const char *program, report_plots **out, enpu_err *err);
/* Free q (NULL: nothing). A file queued by report_plots_publish and not yet renamed is
 * removed: a report whose figures were not drawn is not published. */
void report_plots_free(report_plots *q);
/* Queue <absdir>/<script> (absdir absolute; script and png relative to it), which draws
 * <absdir>/<png>. @return 0, ENPU_ERR_NOMEM. */
int report_plots_add(report_plots *q, const char *absdir, const char *script, const char *png, enpu_err *err);
/* Rename `from` to `to` once every figure queued is drawn (report.md written to a
 * temporary name). @return 0, ENPU_ERR_NOMEM. */
int report_plots_publish(report_plots *q, const char *from, const char *to, enpu_err *err);
/* Draw every queued figure in one gnuplot, each from its directory as its script runs
 * alone, gnuplot's output appended to each figure's <absdir>/gnuplot.log; when that
 * gnuplot fails or leaves a PNG missing or empty, draw them one gnuplot each
 * (report_run_gnuplot: the error names the script that fails). Then rename what was
 * queued to publish. The figures are taken off the queue, drawn or not.
 * @return 0; report_run_gnuplot's errors; ENPU_ERR_IO (a log or rename); ENPU_ERR_NOMEM. */
int report_plots_draw(report_plots *q, enpu_err *err);

/* report_write with its figures queued on `plots`, not drawn, and report.md queued to
 * publish: the caller draws them (`enpu report paper` draws every run's in one gnuplot).
 * o->gnuplot is not read: the queue has its program. Errors as report_write's. */
int report_write_queued(const report_options *o, report_plots *plots, char **md_path, enpu_err *err);

/* At most this many series in one panel of any figure: beyond it a reader cannot tell
 * the lines apart; the variants of the design space have their own figures. */
#define REPORT_MAX_SERIES 8

/* The policies a headline panel compares, into idx[0..max) as indices of c->policies:
 * the paper's compared policies the store holds (NoDVFS when with_nodvfs, DVFS-C or,
 * without its GA, its walk, eNPU-C, eNPU-All, Ideal), in that order; a store with fewer than two of them
 * gets its first policies instead, so a custom job still draws something.
 * @return how many. */
size_t report_headline_policies(const store_contents *c, int with_nodvfs, size_t *idx, size_t max);

/* Energy a plan lost in its regulators, all components, in % of the bucket's NoDVFS
 * energy (Figure 13's quantity). */
double report_regulator_loss_pct(const store_bucket_rec *b, const store_plan_rec *pl);

/* A plan's overhead and its time over NoDVFS, in % of T_nodvfs, in its budget mode's
 * world (docs/policies.md, Budget modes): a paper plan's overhead is the paper's (§4.4: V/f
 * transitions and the crossings' loop throughput loss, paper_overhead_pct) and its time the critical path
 * plus that; a strict plan's are its whole time's, what a serving runtime waits for. */
double report_plan_overhead_pct(const store_plan_rec *pl);
double report_plan_slowdown_pct(const store_bucket_rec *b, const store_plan_rec *pl);

/* The values of `column` in a replay's windows_<policy>.csv, of the rows whose "peak"
 * column is `peak` (1 peak hours, 0 off-peak, -1 every row); empty cells are skipped.
 * *out is malloc'd. @return 0; ENPU_ERR_IO; ENPU_ERR_PARSE (no such column, a bad number,
 * naming file and line). */
int report_windows_column(const char *path, const char *column, int peak, double **out, int *n, enpu_err *err);

/* ---------------------------------------------------------------------------------
 * Architecture sweep (`enpu report STORE --sweep`, report_arch.c): a store whose policies
 * were compiled on chip variants (a job's "sweep" section, config.h) */

typedef struct {
  const char *store_path;
  const char *out_dir; /* created with its parents */
  const char *gnuplot; /* NULL: "gnuplot" from PATH */
  double slack;        /* fraction, the closest stored; < 0: the smallest and the largest */
} report_arch_options;

/* <out_dir>/sweep.md: per single-parameter sweep a table and a line plot of the savings
 * per policy, phase and chosen slack against the value, per pair a heat map per policy
 * and phase (the largest chosen slack), and the break-even table (the largest value at
 * which eNPU-All keeps >= 90 % of its saving on the job's chip; the values at which it
 * does not beat DVFS-C). *md_path (may be NULL) receives the file's path (malloc'd).
 * @return 0; errors as report_write; ENPU_ERR_FORMAT for a group name that is no
 * policy:point; ENPU_ERR_NOT_FOUND for a store without a compared policy. */
int report_arch_write(const report_arch_options *o, char **md_path, enpu_err *err);

/* ---------------------------------------------------------------------------------
 * Load sweep (`enpu replay --rates ... --out DIR`) */

/* DIR/sweep.dat, sweep.gp and sweep.png (SLO attainment, savings busy-only and with
 * idle, and pool utilisation against the request rate, per policy) from the document of
 * replay_sweep_json. `gnuplot` as in report_options (NULL: from PATH).
 * @return 0; ENPU_ERR_FORMAT for a document without its arrays; gnuplot's and file
 * errors as report_write. */
int report_sweep(const char *dir, const json_t *sweep, const char *gnuplot, enpu_err *err);

#endif /* ENPU_REPORT_H */
