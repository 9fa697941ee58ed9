/* report_paper_internal.h — what the files of `enpu report paper` share: the pipeline's
 * outputs per model as its manifest.json lists them (tools/paper.py writes it), loaded
 * once; a computed value with the reason it could not be computed; the claim evaluator
 * and the README's sections. Not installed.
 *
 * Invariants: a model's stores are loaded on first use and kept (store_contents) until
 * paper_ctx_free; a value that cannot be computed (a policy the build did not compile, a
 * stage that did not run) is a paper_value with ok == 0 and a note saying which, never
 * a number. */
#ifndef ENPU_REPORT_PAPER_INTERNAL_H
#define ENPU_REPORT_PAPER_INTERNAL_H

#include <limits.h>
#include <stdbool.h>
#include <stdio.h>

#include "report_internal.h"

#define PAPER_MAX_RUNS 24
#define PAPER_MAX_FILES 32

typedef struct {
  char name[CONFIG_NAME_LEN];    /* e.g. request-paper-artifact-ivr */
  char kind[16];                 /* "grid" or "request" */
  char budget[16];               /* "strict" or "paper" */
  char variant[CONFIG_NAME_LEN]; /* "" or the sensitivity's name */
  char store[PATH_MAX], job[PATH_MAX];
  store_contents *c; /* NULL until loaded */
  int load_rc;       /* 0, or why it cannot be loaded (load_err) */
  enpu_err load_err;
} paper_run;

typedef struct {
  int phase;
  char policy[CONFIG_NAME_LEN];
  json_t *doc; /* `enpu compile --json` output */
} paper_compile;

typedef struct {
  int phase, seq;
  double time_ns; /* NoDVFS time of one request (`enpu graph --time`) */
} paper_graph;

typedef struct {
  char run[CONFIG_NAME_LEN], name[CONFIG_NAME_LEN], dir[PATH_MAX];
  json_t *summary; /* summary.json of `enpu replay --out` */
} paper_replay;

typedef struct {
  char name[CONFIG_NAME_LEN];
  char dir[PATH_MAX], job[PATH_MAX]; /* the model's folder and its paper job file */
  bool req_phase[CONFIG_NPHASE];
  int req_batch[CONFIG_NPHASE], req_seq[CONFIG_NPHASE];
  double t7_slack;
  char t7_budget[16];
  paper_run runs[PAPER_MAX_RUNS];
  int nruns;
  paper_compile compile[PAPER_MAX_FILES];
  int ncompile;
  paper_graph graph[PAPER_MAX_FILES];
  int ngraph;
  char figure20_dir[PATH_MAX]; /* "" when the model has no Figure 20 */
  json_t *figure20;
  paper_replay replays[PAPER_MAX_FILES];
  int nreplays;
  json_t *timings;                                  /* timings.json */
  char decompose[PAPER_MAX_FILES][CONFIG_NAME_LEN]; /* measured decompositions: <name>.md */
  int ndecompose;
} paper_model;

/* One of our numbers: a value or a range; ok == 0 with a note when it cannot be had. */
typedef struct {
  int ok;
  int not_in_variant; /* missing because a sensitivity chip's run compiles fewer policies */
  double lo, hi;
  char note[480];
} paper_value;

#define PAPER_MAX_COLUMNS 6

typedef struct {
  const report_paper_options *o;
  config_paper *numbers;
  paper_model *models;
  int nmodels;
  char absdir[PATH_MAX]; /* out_dir, absolute (gnuplot runs there) */
  report_plots *plots;   /* every figure of the call: the runs' and the README's */
  paper_value *values;   /* [claim][column], filled by report_paper_claim_value */
  bool *known;
} paper_ctx;

/* The columns a claim is computed in: the stores of a budget mode, on the shipped chip or
 * a named sensitivity's. */
typedef struct {
  const char *budget;  /* "paper" or "strict" */
  const char *variant; /* "" or a sensitivity name */
} paper_column;

/* ---- report_paper_load.c: the pipeline's outputs --------------------------------- */

/* Load a manifest into m (m zeroed by the caller; stores load on first use). */
int report_paper_load_manifest(const char *file, paper_model *m, enpu_err *err);

/* The run of model m with this kind, budget and variant, its store loaded; NULL with
 * v->note set when there is none or it cannot be read. */
paper_run *report_paper_find_run(paper_model *m, const char *kind, const paper_column *col, paper_value *v);
const paper_replay *report_paper_find_replay(const paper_model *m, const char *run, const char *name);
const paper_replay *report_paper_find_replay_of(const paper_model *m, const char *run); /* its first */
const store_policy_tables *report_paper_policy(const store_contents *c, const char *name);
/* Variant names the models' runs use, in first-seen order (at most cap). */
int report_paper_variants(const paper_ctx *x, const char **out, int cap);

/* ---- report_paper_eval.c: claims ------------------------------------------------- */

/* Our value of claim q in column col (see paper_column), over the models it names. */
paper_value report_paper_eval(paper_ctx *x, const config_paper_query *q, const paper_column *col);
/* The claim's value in column k of report_paper_columns (computed once, then kept). */
const paper_value *report_paper_claim_value(paper_ctx *x, int claim, int k);
/* The report's columns: `paper` mode, `strict` mode, then `paper` mode on each
 * sensitivity's chip; names[k] is the column's heading. @return how many. */
int report_paper_columns(const paper_ctx *x, paper_column *cols, char (*names)[96]);
/* Does column col apply to q's kind (a kind that reads no store of that mode: no)? */
bool report_paper_query_has_column(const config_paper_query *q, const paper_column *col);

/* The plan of `policy` at `slack` on model m's single request (`phase`) in col's store;
 * NULL with v->note set when there is none. *b receives its bucket. */
const store_plan_rec *report_paper_request_plan(paper_model *m, const paper_column *col, const char *policy,
                                                int phase, double slack, const store_bucket_rec **b,
                                                paper_value *v);
/* The stored slacks of the request store's first policy, ascending (at most cap). */
int report_paper_request_slacks(paper_model *m, const paper_column *col, double *out, int cap);

/* Table 7: explored plans of model m's single request (`level` op or req), NaN when the
 * policy was not compiled. Figure 14: its compile seconds (op, req or total). */
double report_paper_t7_value(const paper_model *m, const char *policy, int ph, config_level level);
double report_paper_compile_s(const paper_model *m, const char *policy, int ph, config_level level);

/* ---- report_paper_md.c: the README's sections ------------------------------------ */

/* How the numbers were made (budget modes, the GA on the single request and the walk on
 * the grids with their measured difference and cost, the sensitivities) and which claims
 * this build cannot compute. */
void report_paper_md_method(paper_ctx *x, FILE *md);

/* "16.9", "[12.8, 19.1]"; a missing value as its note in italics. */
void report_paper_md_value(FILE *md, const paper_value *v, const char *unit);
/* The claims table of figure `figure` (NULL: every claim), then one line per claim with a
 * gap over 5 points. */
int report_paper_md_claims(paper_ctx *x, FILE *md, const char *figure, enpu_err *err);
/* An image under the output folder (rel), or a note that the pipeline did not draw it. */
void report_paper_md_image(paper_ctx *x, FILE *md, const char *rel, const char *alt);
/* A figure's section: heading, text, images (paths under the output folder) and the
 * claims tagged with `figure`. */
int report_paper_md_figure(paper_ctx *x, FILE *md, const char *figure, const char *heading, const char *text,
                           const char *const *images, int nimages, enpu_err *err);
int report_paper_md_table2(paper_ctx *x, FILE *md, enpu_err *err);
int report_paper_md_table5(paper_ctx *x, FILE *md, enpu_err *err);
int report_paper_md_table7(paper_ctx *x, FILE *md, enpu_err *err); /* and Figure 14 */
int report_paper_md_figure11(paper_ctx *x, FILE *md, enpu_err *err);
/* The README's own figures (Figure 14, each model's Figure 11 per budget mode): their
 * .dat and .gp written and queued on x->plots, drawn before README.md is written (which
 * links only the images that exist). */
int report_paper_plots(paper_ctx *x, enpu_err *err);
/* The figures drawn per run: 12, 13, 15–21, 22 and 5 (report_paper_figures.c). */
int report_paper_md_figures(paper_ctx *x, FILE *md, enpu_err *err);

#endif /* ENPU_REPORT_PAPER_INTERNAL_H */
