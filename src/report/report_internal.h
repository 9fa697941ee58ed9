/* report_internal.h — what the report's files share: the context of one report run, the
 * output-file helpers, the gnuplot runner, the queue of a report call's figures and the
 * replay section. Not installed. */
#ifndef ENPU_REPORT_INTERNAL_H
#define ENPU_REPORT_INTERNAL_H

#include <jansson.h>
#include <limits.h>
#include <stdio.h>

#include "report.h"

/* The figures of one report call (report_plots.c): each section queues its scripts, and
 * the top-level call draws them all in one gnuplot at its end (a gnuplot's start costs
 * more than a small figure). Opaque. */
typedef struct report_plots report_plots;

typedef struct {
  const store_contents *c;
  const config_job *job;         /* NULL: no Figure 19 */
  report_plots *plots;           /* the figures drawn at the end of the report call */
  const char *dir;               /* output directory as given */
  char absdir[PATH_MAX];         /* the same, absolute (gnuplot runs there) */
  report_bucket_key median[2];   /* per phase, the bucket of Figures 12 and 19 ... */
  enpu_err median_why[2];        /* ... when median_why[ph].code is 0, else why none */
  const report_overlay *overlay; /* reference values to draw, NULL: none */
  char model[CONFIG_NAME_LEN];   /* the store's model ("" when its model_json has none) */
} report_ctx;

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

/* Start `program` with argv (argv[0] is the program; NULL-terminated), stdin from
 * /dev/null, stdout and stderr to the open descriptor log_fd, and wait for it: *status
 * receives its wait status.
 * @return 0; ENPU_ERR_NOT_FOUND (program not on PATH), ENPU_ERR_RANGE (the arguments
 * are too long: E2BIG), ENPU_ERR_IO, ENPU_ERR_NOMEM. */
int report_spawn_gnuplot(const char *program, char *const argv[], int log_fd, int *status, enpu_err *err);

/* Run `program` on <absdir>/<script> in absdir (stdout/stderr appended to gnuplot.log)
 * and check that it wrote a non-empty <absdir>/<png>: one figure, one gnuplot.
 * @return 0; ENPU_ERR_NOT_FOUND (program not on PATH), ENPU_ERR_INTERNAL (gnuplot
 * failed or wrote no PNG; the message quotes its first line of output), ENPU_ERR_IO. */
int report_run_gnuplot(const char *program, const char *absdir, const char *script, const char *png, enpu_err *err);

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

/* Section 4: the design-space figures (13, 15, 16, 17, 18, 21) from the policies the
 * store holds (report_design.c). @return 0, or a file/gnuplot error. */
int report_design_section(const report_ctx *r, FILE *md, enpu_err *err);

/* Energy a plan lost in its regulators, all components, in % of the bucket's NoDVFS
 * energy (Figure 13's quantity). */
double report_regulator_loss_pct(const store_bucket_rec *b, const store_plan_rec *pl);

/* A plan's overhead and its time over NoDVFS, in % of T_nodvfs, in its budget mode's
 * world (README, Budget modes): a paper plan's overhead is the paper's (§4.4: V/f
 * transitions and the crossings' loop throughput loss, paper_overhead_pct) and its time the critical path
 * plus that; a strict plan's are its whole time's, what a serving runtime waits for. */
double report_plan_overhead_pct(const store_plan_rec *pl);
double report_plan_slowdown_pct(const store_bucket_rec *b, const store_plan_rec *pl);

/* Section 5 (Figure 22) from a replay output directory, or a note when dir is NULL.
 * @return 0; ENPU_ERR_IO (no windows_*.csv in dir), ENPU_ERR_PARSE (a CSV without the
 * expected columns or with a bad number, naming file, line and column). */
int report_replay_section(const report_ctx *r, FILE *md, const char *dir, enpu_err *err);

/* The values of `column` in a replay's windows_<policy>.csv, of the rows whose "peak"
 * column is `peak` (1 peak hours, 0 off-peak, -1 every row); empty cells are skipped.
 * *out is malloc'd. @return 0; ENPU_ERR_IO; ENPU_ERR_PARSE (no such column, a bad number,
 * naming file and line). */
int report_windows_column(const char *path, const char *column, int peak, double **out, int *n, enpu_err *err);

/* Section 5 (online governors vs the compiled plans) when the replay in dir has runs
 * with an "online" object; nothing otherwise.
 * @return 0; ENPU_ERR_IO / ENPU_ERR_PARSE for an actions_<run>.csv it cannot read. */
int report_governors_section(const report_ctx *r, FILE *md, const char *dir, enpu_err *err);

/* A replay's summary.json read (enpu_read_file: a regular file within its limit) and
 * parsed; NULL when it is missing or cannot be read or parsed (the sections say so). */
json_t *report_summary_json(const char *path);

/* The number at o.a (o.a.b when b is not NULL) of a JSON summary, NaN when absent. */
double report_jget(const json_t *o, const char *a, const char *b);

/* A markdown table of a replay summary's policies: the header lines, then row() for each
 * policy (it ends its line), then a blank line. */
void report_md_policy_table(FILE *md, const char *header, const json_t *pols,
                            void (*row)(FILE *md, const char *name, const json_t *p));
/* One cell: " <fmt of x * scale> |", or " – |" for a missing (non-finite) x. */
void report_md_cell(FILE *md, double x, double scale, const char *fmt);

/* Split one CSV line in place (CR removed); *nf receives the field count (at most cap). */
void report_split_csv(char *line, char **fields, size_t cap, size_t *nf);
/* Find each of names[0..count) in the header line of `path` (split in place): col[k] is
 * its field index. @return 0, or ENPU_ERR_PARSE naming the first column missing. */
int report_csv_header(const char *path, char *line, const char *const *names, int count, long *col, enpu_err *err);

/* An overlay's hooks (report_io.c): nothing when o (or the hook) is NULL. */
void report_overlay_context(const report_overlay *o, FILE *gp, const report_figure *f);
void report_overlay_slack(const report_overlay *o, FILE *gp, const report_figure *f, const char *dat);
void report_overlay_marks(const report_overlay *o, FILE *gp, const report_figure *f, const char *dat,
                          report_mark kind, const double *xs);

#endif /* ENPU_REPORT_INTERNAL_H */
