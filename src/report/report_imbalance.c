/* report_imbalance.c — Figure 20 (paper §4.6, "MoE expert load imbalance"): savings vs
 * NoDVFS at each expert capacity factor, for plans made for that factor (the paper's
 * "ideal provisioning that perfectly predicts the load imbalance") and for the
 * worst-case plans eNPU compiles by default, run on that factor's load.
 *
 * Invariants: the rows come from one bucket; per (policy, factor) the mean, min and max
 * are over the slacks given (the paper's curve and shaded 0–max threshold band); a panel
 * draws at most REPORT_MAX_SERIES series, so the plans for the load, the worst-case plans
 * and their difference are three panels; the files use relative names so `cd DIR && gnuplot figure20.gp` redraws
 * the plot. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "report_internal.h"

/* Per (policy, factor): statistics over the slacks. */
typedef struct {
  char policy[STORE_NAME_LEN];
  double factor;
  double mean, min, max;                   /* plans made for the factor */
  double worst_mean, worst_min, worst_max; /* worst-case plans on the factor's load */
  int n;
} imbalance_point;

static int cmp_row(const void *pa, const void *pb) {
  const report_imbalance_row *a = pa, *b = pb;
  const int c = strcmp(a->policy, b->policy), cf = ENPU_ORDER(a->capacity_factor, b->capacity_factor);
  return c ? c : cf ? cf : ENPU_ORDER(a->slack, b->slack);
}

/* Rows sorted by policy, factor, slack → points (one per policy and factor). */
static size_t make_points(report_imbalance_row *rows, size_t n, imbalance_point *pts) {
  qsort(rows, n, sizeof *rows, cmp_row);
  size_t np = 0;
  for (size_t i = 0; i < n; i++) {
    const report_imbalance_row *r = &rows[i];
    imbalance_point *p = np ? &pts[np - 1] : NULL;
    if (!p || strcmp(p->policy, r->policy) || p->factor != r->capacity_factor) {
      p = &pts[np++];
      *p = (imbalance_point){.factor = r->capacity_factor,
                             .min = INFINITY,
                             .max = -INFINITY,
                             .worst_min = INFINITY,
                             .worst_max = -INFINITY};
      snprintf(p->policy, sizeof p->policy, "%s", r->policy);
    }
    p->mean += r->savings, p->worst_mean += r->savings_worst, p->n++;
    p->min = fmin(p->min, r->savings), p->max = fmax(p->max, r->savings);
    p->worst_min = fmin(p->worst_min, r->savings_worst);
    p->worst_max = fmax(p->worst_max, r->savings_worst);
  }
  for (size_t i = 0; i < np; i++) pts[i].mean /= pts[i].n, pts[i].worst_mean /= pts[i].n;
  return np;
}

/* figure20.dat: one gnuplot data block per policy (separated by two blank lines). */
static int write_dat(const char *dir, const imbalance_point *pts, size_t np, enpu_err *err) {
  FILE *f;
  ENPU_FORWARD(report_file_open(dir, "figure20.dat", &f, err));
  fprintf(f, "# factor mean%% min%% max%% worst_mean%% worst_min%% worst_max%% difference%%\n");
  for (size_t i = 0; i < np; i++) {
    if (i > 0 && strcmp(pts[i].policy, pts[i - 1].policy)) fprintf(f, "\n\n");
    if (i == 0 || strcmp(pts[i].policy, pts[i - 1].policy)) fprintf(f, "# %s\n", pts[i].policy);
    const imbalance_point *p = &pts[i];
    fprintf(f, "%g %.4f %.4f %.4f %.4f %.4f %.4f %.4f\n", p->factor, 100 * p->mean, 100 * p->min, 100 * p->max,
            100 * p->worst_mean, 100 * p->worst_min, 100 * p->worst_max, 100 * (p->mean - p->worst_mean));
  }
  return report_file_close(f, dir, "figure20.dat", err);
}

/* The three panels, stacked: plans for the true load (their band: min..max over the
 * slacks, when the panel keeps at most REPORT_MAX_SERIES elements with it), the worst-case
 * plans on that load, and the difference; one colour per policy throughout. */
static int write_gp(const char *dir, const char *title, const report_figure *fig, const report_overlay *overlay,
                    enpu_err *err) {
  FILE *gp;
  ENPU_FORWARD(report_file_open(dir, "figure20.gp", &gp, err));
  report_gp_preamble(gp, "figure20.png", 1080, ""); /* stacked: each panel the width, its key beside it */
  report_overlay_context(overlay, gp, fig);
  fprintf(gp,
          "set multiplot layout 3,1 title '%s'\nset logscale x 2\nset lmargin 12\nset rmargin at screen 0.72\n"
          "set xlabel 'expert capacity factor (x the mean expert load)'\n",
          title);
  const int bands = 2 * fig->nseries <= REPORT_MAX_SERIES;
  fprintf(gp,
          "set key outside right top font ',8'\nset style fill transparent solid 0.15 noborder\n"
          "set ylabel 'energy saving vs " ENPU_POLICY_DISPLAY_NODVFS
          " (%%)'\nset title 'plans for the true load%s' font ',9'\nplot ",
          bands ? " (band: min..max over slacks)" : "");
  for (size_t b = 0; b < fig->nseries; b++) {
    if (bands)
      fprintf(gp, "%s'figure20.dat' index %zu using 1:3:4 with filledcurves lc %zu notitle", b ? ", " : "", b,
              b + 1);
    fprintf(gp, "%s'figure20.dat' index %zu using 1:2 with linespoints lc %zu title '%s'", b || bands ? ", " : "",
            b, b + 1, fig->series[b]);
  }
  fprintf(gp, "\nset ylabel 'energy saving vs " ENPU_POLICY_DISPLAY_NODVFS " (%%)'\n"
              "set title 'worst-case plans run on the true load (mean over slacks)' font ',9'\nplot ");
  for (size_t b = 0; b < fig->nseries; b++)
    fprintf(gp, "%s'figure20.dat' index %zu using 1:5 with linespoints dt 2 lc %zu title '%s'", b ? ", " : "", b,
            b + 1, fig->series[b]);
  report_overlay_marks(overlay, gp, fig, "figure20.dat", REPORT_MARK_CAPACITY_WORST, NULL);
  fprintf(gp, "\nset ylabel 'saving lost by worst-case provisioning (points)'\n"
              "set title 'plan for the true load minus worst-case plan (mean over slacks)' font ',9'\nplot ");
  for (size_t b = 0; b < fig->nseries; b++)
    fprintf(gp, "%s'figure20.dat' index %zu using 1:8 with linespoints lc %zu notitle", b ? ", " : "", b, b + 1);
  report_overlay_marks(overlay, gp, fig, "figure20.dat", REPORT_MARK_CAPACITY_LOSS, NULL);
  fprintf(gp, "\nunset multiplot\n");
  return report_file_close(gp, dir, "figure20.gp", err);
}

static int write_md(const char *dir, const char *title, const imbalance_point *pts, size_t np, enpu_err *err) {
  FILE *md;
  ENPU_FORWARD(report_file_open(dir, "figure20.md", &md, err));
  fprintf(md,
          "# Figure 20: expert load imbalance — %s\n\n![Figure 20](figure20.png)\n\n"
          "Savings vs " ENPU_POLICY_DISPLAY_NODVFS " (at the same load) by expert capacity factor: mean over the "
          "slacks, min..max in brackets. \"For the load\": plans compiled for that factor "
          "(ideal provisioning); \"worst-case plan\": the plans compiled for the worst case "
          "(the default) run on that load. Data: `figure20.dat`.\n\n"
          "| policy | capacity factor | for the load | worst-case plan | difference (points) |\n"
          "|---|---:|---:|---:|---:|\n",
          title);
  for (size_t i = 0; i < np; i++) {
    const imbalance_point *p = &pts[i];
    fprintf(md, "| %s | %g | %.2f %% [%.2f, %.2f] | %.2f %% [%.2f, %.2f] | %.2f |\n", p->policy, p->factor,
            100 * p->mean, 100 * p->min, 100 * p->max, 100 * p->worst_mean, 100 * p->worst_min, 100 * p->worst_max,
            100 * (p->mean - p->worst_mean));
  }
  return report_file_close(md, dir, "figure20.md", err);
}

int report_write_imbalance(const char *dir, const char *gnuplot, const char *title,
                           const report_imbalance_refs *paper, const report_imbalance_row *rows, size_t n,
                           enpu_err *err) {
  ENPU_RETURN_IF(n == 0, err, ENPU_ERR_INVALID, "figure 20: no rows");
  report_imbalance_row *sorted = malloc(n * sizeof *sorted);
  imbalance_point *pts = calloc(n, sizeof *pts);
  int rc = sorted && pts ? 0 : enpu_errorf(err, ENPU_ERR_NOMEM, "out of memory (figure 20)");
  size_t np = 0;
  if (rc == 0) {
    memcpy(sorted, rows, n * sizeof *rows);
    np = make_points(sorted, n, pts);
  }
  char absdir[PATH_MAX];
  if (rc == 0) rc = enpu_mkdir_p(dir, err);
  if (rc == 0) rc = report_absolute_dir(dir, absdir, sizeof absdir, err);
  if (rc == 0) rc = write_dat(dir, pts, np, err);
  const char *names[CONFIG_MAX_POLICIES]; /* the policies drawn: block i of the .dat is names[i] */
  size_t nn = 0;
  for (size_t i = 0; i < np && nn < CONFIG_MAX_POLICIES; i++)
    if (!nn || strcmp(names[nn - 1], pts[i].policy)) names[nn++] = pts[i].policy;
  const report_figure fig = {"20", paper ? paper->phase : -1, paper ? paper->model : NULL, names, NULL, nn, false};
  if (rc == 0) rc = write_gp(dir, title, &fig, paper ? paper->overlay : NULL, err);
  if (rc == 0) rc = report_run_gnuplot(gnuplot ? gnuplot : "gnuplot", absdir, "figure20.gp", "figure20.png", err);
  if (rc == 0) rc = write_md(dir, title, pts, np, err);
  free(sorted);
  free(pts);
  return rc;
}
