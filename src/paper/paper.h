/* paper.h — the paper reproduction's wing (src/README.md, "The paper wing"): the paper's
 * stated numbers (jobs/paper/paper-numbers.json), the overlay that draws them on the
 * report's figures, and `enpu report paper`, which writes results/paper/README.md from
 * the manifests the pipeline (src/paper/enpu_paper, `make paper`) writes. The product
 * (config, report, the plan store) knows nothing of this module; it sits above report
 * and below cli, and none of it is compiled into libenpu_planstore.
 *
 * Invariants: the numbers file is loaded once and then const; the overlay only appends
 * to the figures' scripts (the data files are the same with or without it); the README
 * has no timestamps, so the same inputs give the same bytes. */
#ifndef ENPU_PAPER_H
#define ENPU_PAPER_H

#include "common.h"
#include "config.h"
#include "report.h"

/* ---------------------------------------------------------------------------------
 * The paper's stated numbers (jobs/paper/paper-numbers.json, schemas/paper.schema.json),
 * read by `enpu report paper`: each claim is a number (or range) the paper states, where it
 * states it, and a query saying how our value is computed from the pipeline's outputs
 * (below, "The paper's evaluation"). Table 7's and Table 5's stated values too.
 *
 * { "paper": "title",
 *   "claims": [ { "id": "c1-prefill-0", "claim": 1, "figure": "11", "cite": "§4 (1)",
 *                 "what": "...", "paper": 16.9 | [lo, hi], "relation": "=" | "<" | ">",
 *                 "unit": "%", "why": "the measured reason a gap remains (optional)",
 *                 "ours": { "kind": "savings", "policy": "enpu-all" | [...], "base": "dvfs-c",
 *                           "phase": "prefill", "slack": 0.1 | "mean" | "all" | "max",
 *                           "agg": "mean" | "range" | "max" | "min", "models": [...],
 *                           "level": "op" | "req" | "total", "run": "day-12x",
 *                           "paths": ["periods.peak.busy_energy_savings.prefill"],
 *                           "column": "ttft_slack_p25", "hours": "all" | "peak" | "off_peak",
 *                           "factor": 1, "metric": "worst" | "loss" | "min_gain",
 *                           "scale": 100, "offset": 0 } } ],
 *   "table7": [ { "model": "llama3-70b", "phase": "prefill",
 *                 "plans": [ { "policy": "dvfs-c", "op": 578, "req": 2500000 }, ... ] } ],
 *   "table5": [ { "what": "...", "paper": 8, "chip": "sa.count" } ] } */

typedef enum {
  PAPER_SAVINGS = 0, /* 100 · savings vs NoDVFS of the single request */
  PAPER_GAIN,        /* savings(policy) − savings(base), points */
  PAPER_OVERHEAD,    /* the plan's overhead_pct */
  PAPER_SLOWDOWN,    /* 100 · (time − T_nodvfs) / T_nodvfs */
  PAPER_LOSS_GROWTH, /* regulator loss at the largest slack minus at 0, % of E_nodvfs */
  PAPER_SATURATION,  /* smallest slack within 1 point of the largest saving, % */
  PAPER_SEQ_TREND,   /* grid, smallest batch: saving at the longest − the shortest seq */
  PAPER_SEQ_SPREAD,  /* grid, smallest batch: largest − smallest saving over seqs */
  PAPER_FREQ_CORR,   /* correlation of chosen state and utilisation at peak (Fig. 19) */
  PAPER_TABLE7,      /* explored plans (enpu compile --json), level op or req */
  PAPER_COMPILE_S,   /* compile seconds of one request, level op, req or total */
  PAPER_CORE_HOURS,  /* core-hours of the grid farms (both budget modes) */
  PAPER_FIGURE20,    /* capacity-factor sweep (enpu compile --capacity-factor) */
  PAPER_REPLAY,      /* a number of a replay's summary.json */
  PAPER_WINDOWS,     /* a column of a replay's windows_<policy>.csv */
  PAPER_NKIND
} paper_kind;

typedef enum { PAPER_AGG_MEAN = 0, PAPER_AGG_RANGE, PAPER_AGG_MAX, PAPER_AGG_MIN, PAPER_NAGG } paper_agg;
typedef enum {
  PAPER_SLACK_VALUE = 0,
  PAPER_SLACK_MEAN,
  PAPER_SLACK_ALL,
  PAPER_SLACK_MAX,
  PAPER_NSLACK_SEL
} paper_slack_sel;
typedef enum { PAPER_LEVEL_OP = 0, PAPER_LEVEL_REQ, PAPER_LEVEL_TOTAL, PAPER_NLEVEL } paper_level;
typedef enum { PAPER_HOURS_ALL = 0, PAPER_HOURS_PEAK, PAPER_HOURS_OFF_PEAK, PAPER_NHOURS } paper_hours;
typedef enum { PAPER_F20_WORST = 0, PAPER_F20_LOSS, PAPER_F20_MIN_GAIN, PAPER_NF20 } paper_f20_metric;

#define PAPER_MAX_LIST 8

typedef struct {
  paper_kind kind;
  char policy[PAPER_MAX_LIST][CONFIG_NAME_LEN]; /* samples are taken over each */
  int npolicy;
  char base[CONFIG_NAME_LEN]; /* gain, figure20 min_gain: "" when absent */
  int phase;                  /* config_phase, or -1: both phases */
  paper_slack_sel slack_sel;
  double slack;                                 /* PAPER_SLACK_VALUE: the fraction */
  paper_agg agg;                                /* over models x policies (x slacks for "all") */
  char models[PAPER_MAX_LIST][CONFIG_NAME_LEN]; /* 0 = every model */
  int nmodels;
  paper_level level;
  char run[CONFIG_NAME_LEN];       /* replay run name (replay, windows) */
  char paths[PAPER_MAX_LIST][128]; /* replay: dotted paths below the policy's object */
  int npaths;
  char column[64]; /* windows */
  paper_hours hours;
  double factor; /* figure20: capacity factor */
  paper_f20_metric metric;
  double scale, offset; /* value = scale · x + offset (defaults 1 and 0) */
} paper_query;

typedef struct {
  char id[48], cite[96], figure[8], unit[8];
  char what[320], why[640];  /* why: "" when absent */
  int claim;                 /* 1..5: the numbered claim of §4; 0: a §4.x number */
  double paper_lo, paper_hi; /* equal for a single number */
  char relation;             /* '=', '<' (paper: "below"), '>' (paper: "above") */
  char better[16];           /* "": a bound that does not hold fails; else the word printed
                                instead (e.g. "faster"): ours is past the bound on the side
                                that is no disagreement, and the row is not ✗ */
  paper_query ours;
} paper_claim;

#define PAPER_T7_POLICIES 4
typedef struct {
  char model[CONFIG_NAME_LEN];
  int phase;
  char policy[PAPER_T7_POLICIES][CONFIG_NAME_LEN];
  double op[PAPER_T7_POLICIES], req[PAPER_T7_POLICIES];
  int npolicy;
} paper_t7;

typedef struct {
  char what[96];
  double paper;
  char chip[64]; /* dotted path into the chip file */
} paper_t5;

typedef struct {
  char path[CONFIG_PATH_LEN];
  char title[256];
  paper_claim *claims;
  int nclaims;
  paper_t7 *table7;
  int ntable7;
  paper_t5 *table5;
  int ntable5;
} paper_numbers;

int paper_numbers_load(const char *path, paper_numbers **out, enpu_err *err);
void paper_numbers_free(paper_numbers *p); /* NULL is a no-op */

/* The report overlay that draws numbers' claims on the figures they are about (a claim
 * only on a figure of its number, kind, policies, phase and model: paper_refs.c), and
 * names the file in report.md. `numbers` must outlive the overlay; NULL draws nothing. */
report_overlay paper_overlay(const paper_numbers *numbers);

/* ---------------------------------------------------------------------------------
 * The paper's evaluation (`enpu report paper`, the pipeline's last stage) */

typedef struct {
  const char *out_dir;          /* README.md, the figures, and per run <model>/<run>/report.md */
  const char *numbers_path;     /* the paper's stated numbers (paper_numbers_load) */
  const char *const *manifests; /* <model>/manifest.json per model, in the README's order
                                   (schemas/paper-manifest.schema.json) */
  int nmanifests;
  const char *gnuplot; /* NULL: "gnuplot" from PATH */
} paper_options;

/* Write <out_dir>/README.md: the headline claims and every table and figure of the
 * paper's §4 (numbered as the paper's), ours beside the paper's stated numbers with the
 * gap, both budget modes and each named sensitivity; per run a report_write report. No
 * timestamps: the same inputs give the same bytes.
 * @return 0; ENPU_ERR_PARSE/FORMAT for a manifest or an output it names that is not what
 * the pipeline writes (the message names the file and key); the numbers file's errors;
 * store and gnuplot errors as report_write. A claim whose data is missing is a marked
 * row, not an error. */
int paper_write(const paper_options *o, enpu_err *err);

#endif /* ENPU_PAPER_H */
