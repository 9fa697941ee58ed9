/* paper_internal.h — what the files of `enpu report paper` share: the pipeline's
 * outputs per model as its manifest.json lists them (tools/paper.py writes it), loaded
 * once; a computed value with the reason it could not be computed; the claim evaluator
 * and the README's sections. Not installed.
 *
 * Invariants: a model's stores are loaded on first use and kept (store_contents) until
 * paper_ctx_free; a value that cannot be computed (a policy the build did not compile, a
 * stage that did not run) is a paper_value with ok == 0 and a note saying which, never
 * a number. */
#ifndef ENPU_PAPER_INTERNAL_H
#define ENPU_PAPER_INTERNAL_H

#include <limits.h>
#include <stdbool.h>
#include <stdio.h>

#include "paper.h"

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
  const paper_options *o;
  paper_numbers *numbers;
  report_overlay overlay; /* numbers drawn on every run's figures */
  paper_model *models;
  int nmodels;
  char absdir[PATH_MAX]; /* out_dir, absolute (gnuplot runs there) */
  report_plots *plots;   /* every figure of the call: the runs' and the README's */
  paper_value *values;   /* [claim][column], filled by paper_claim_value */
  bool *known;
} paper_ctx;

/* The columns a claim is computed in: the stores of a budget mode, on the shipped chip or
 * a named sensitivity's. */
typedef struct {
  const char *budget;  /* "paper" or "strict" */
  const char *variant; /* "" or a sensitivity name */
} paper_column;

/* ---- paper_load.c: the pipeline's outputs --------------------------------- */

/* Load a manifest into m (m zeroed by the caller; stores load on first use). */
int paper_load_manifest(const char *file, paper_model *m, enpu_err *err);

/* The run of model m with this kind, budget and variant, its store loaded; NULL with
 * v->note set when there is none or it cannot be read. */
paper_run *paper_find_run(paper_model *m, const char *kind, const paper_column *col, paper_value *v);
const paper_replay *paper_find_replay(const paper_model *m, const char *run, const char *name);
const paper_replay *paper_find_replay_of(const paper_model *m, const char *run); /* its first */
const store_policy_tables *paper_policy(const store_contents *c, const char *name);
/* Variant names the models' runs use, in first-seen order (at most cap). */
int paper_variants(const paper_ctx *x, const char **out, int cap);

/* ---- paper_eval.c: claims ------------------------------------------------- */

/* Our value of claim q in column col (see paper_column), over the models it names. */
paper_value paper_eval(paper_ctx *x, const paper_query *q, const paper_column *col);
/* The claim's value in column k of paper_columns (computed once, then kept). */
const paper_value *paper_claim_value(paper_ctx *x, int claim, int k);
/* The report's columns: `paper` mode, `strict` mode, then `paper` mode on each
 * sensitivity's chip; names[k] is the column's heading. @return how many. */
int paper_columns(const paper_ctx *x, paper_column *cols, char (*names)[96]);
/* Does column col apply to q's kind (a kind that reads no store of that mode: no)? */
bool paper_query_has_column(const paper_query *q, const paper_column *col);

/* The plan of `policy` at `slack` on model m's single request (`phase`) in col's store;
 * NULL with v->note set when there is none. *b receives its bucket. */
const store_plan_rec *paper_request_plan(paper_model *m, const paper_column *col, const char *policy, int phase,
                                         double slack, const store_bucket_rec **b, paper_value *v);
/* The stored slacks of the request store's first policy, ascending (at most cap). */
int paper_request_slacks(paper_model *m, const paper_column *col, double *out, int cap);

/* Table 7: explored plans of model m's single request (`level` op or req), NaN when the
 * policy was not compiled. Figure 14: its compile seconds (op, req or total). */
double paper_t7_value(const paper_model *m, const char *policy, int ph, paper_level level);
double paper_compile_s(const paper_model *m, const char *policy, int ph, paper_level level);

/* ---- paper_md.c: the README's sections ------------------------------------ */

/* How the numbers were made (budget modes, the GA on the single request and the walk on
 * the grids with their measured difference and cost, the sensitivities) and which claims
 * this build cannot compute. */
void paper_md_method(paper_ctx *x, FILE *md);

/* "16.9", "[12.8, 19.1]"; a missing value as its note in italics. */
void paper_md_value(FILE *md, const paper_value *v, const char *unit);
/* The claims table of figure `figure` (NULL: every claim), then one line per claim with a
 * gap over 5 points. */
int paper_md_claims(paper_ctx *x, FILE *md, const char *figure, enpu_err *err);
/* An image under the output folder (rel), or a note that the pipeline did not draw it. */
void paper_md_image(paper_ctx *x, FILE *md, const char *rel, const char *alt);
/* A figure's section: heading, text, images (paths under the output folder) and the
 * claims tagged with `figure`. */
int paper_md_figure(paper_ctx *x, FILE *md, const char *figure, const char *heading, const char *text,
                    const char *const *images, int nimages, enpu_err *err);
int paper_md_table2(paper_ctx *x, FILE *md, enpu_err *err);
int paper_md_table5(paper_ctx *x, FILE *md, enpu_err *err);
int paper_md_table7(paper_ctx *x, FILE *md, enpu_err *err); /* and Figure 14 */
int paper_md_figure11(paper_ctx *x, FILE *md, enpu_err *err);
/* The README's own figures (Figure 14, each model's Figure 11 per budget mode): their
 * .dat and .gp written and queued on x->plots, drawn before README.md is written (which
 * links only the images that exist). */
int paper_plots(paper_ctx *x, enpu_err *err);
/* The figures drawn per run: 12, 13, 15–21, 22 and 5 (paper_figures.c). */
int paper_md_figures(paper_ctx *x, FILE *md, enpu_err *err);

/* ---- paper_refs.c: the paper's stated values on a figure ------------------------ */

/* What a figure shows, to find the claims of the paper drawn on it. */
typedef struct {
  const paper_numbers *numbers; /* NULL: nothing is drawn */
  const char *figure;           /* the paper's figure number ("11") */
  int phase;                    /* CONFIG_PREFILL / CONFIG_DECODE, -1: the figure has both */
  const char *model;            /* the store's model, NULL or "": claims naming models do not apply */
  const char *const *series;    /* the policies the figure draws (series i: line colour i + 1) */
  const int *cols;              /* series i's column in the .dat (slack figures: gains start there) */
  size_t nseries;
  bool gains; /* slack figures: draw gains too (those whose quantity is the difference of two
                 of their policies: Figures 16, 17, 21; Figure 11's are in the paper report) */
} paper_refs_ctx;

/* The "# paper values:" comment line that says what the figure shows (tools/figcheck.py
 * checks the markers from it); nothing without numbers. */
void paper_refs_context(FILE *gp, const paper_refs_ctx *r);

/* Continue a plot command of a figure with the slack (%) as x and one column per series:
 * the figure's savings claims (a marker at a slack, a line or band over every slack) and
 * gains (the same on top of the base policy's column). */
void paper_refs_slack(FILE *gp, const paper_refs_ctx *r, const char *dat);

/* Continue a plot command with markers at fixed x: claims of `kind` (PAPER_SLOWDOWN:
 * series i at xs[i]; PAPER_FIGURE20: at the claim's capacity factor, those of `metric`
 * only). */
void paper_refs_at(FILE *gp, const paper_refs_ctx *r, const char *dat, paper_kind kind, const double *xs,
                   int metric);

#endif /* ENPU_PAPER_INTERNAL_H */
