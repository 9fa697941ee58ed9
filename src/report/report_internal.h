/* report_internal.h — what the report's files share: the context of one report run, the
 * gnuplot runner and the sections. Not installed. (The output-file helpers, the figure
 * queue and the figures' shared rules are in report.h, "Drawing": the paper wing draws
 * with them too.) */
#ifndef ENPU_REPORT_INTERNAL_H
#define ENPU_REPORT_INTERNAL_H

#include <jansson.h>
#include <limits.h>
#include <stdio.h>

#include "report.h"

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

/* Section 4: the design-space figures (13, 15, 16, 17, 18, 21) from the policies the
 * store holds (report_design.c). @return 0, or a file/gnuplot error. */
int report_design_section(const report_ctx *r, FILE *md, enpu_err *err);

/* Section 5 (Figure 22) from a replay output directory, or a note when dir is NULL.
 * @return 0; ENPU_ERR_IO (no windows_*.csv in dir), ENPU_ERR_PARSE (a CSV without the
 * expected columns or with a bad number, naming file, line and column). */
int report_replay_section(const report_ctx *r, FILE *md, const char *dir, enpu_err *err);

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
