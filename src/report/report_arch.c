/* report_arch.c — `enpu report --sweep`: the architecture sweep of a store whose policies
 * were compiled on chip variants ("<policy>:<point>" groups, config.h). One line plot per
 * single-parameter sweep and one heat map per pair of parameters (savings vs NoDVFS per
 * policy and phase at the chosen slacks), a table of every point's savings, and the
 * break-even answers: the largest value at which eNPU-All keeps at least 90 % of the job
 * chip's saving, and the values at which it no longer beats DVFS-C.
 *
 * A saving is the mean of savings_vs_nodvfs over the ok buckets of a group at a slack
 * and phase (report_savings), each point against NoDVFS on its own chip. The job's chip
 * is a point of every sweep, at the value its chip file has (the store's chip_json). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "report_internal.h"

#define ARCH_MAX_PARAMS 8
#define ARCH_MAX_SLACKS 2
#define ARCH_MAX_BASES 3 /* policies per figure beside NoDVFS (x slacks x phases <= 8 series) */

/* One policy group: its policy without the point, and the point's values. */
typedef struct {
  const char *name;
  char base[STORE_NAME_LEN];
  int n;
  int param[ARCH_MAX_PARAMS];
  double value[ARCH_MAX_PARAMS];
} arch_group;

typedef struct {
  const store_contents *c;
  report_savings_row *rows;
  size_t nrows;
  arch_group *groups;
  size_t ngroups;
  const char *bases[ARCH_MAX_BASES + 1]; /* the compared policies (no nodvfs), NULL-ended */
  int nbases;
  const char *dvfs_c; /* dvfs-c, else dvfs-c-walk, else NULL */
  double slack[ARCH_MAX_SLACKS];
  int nslack;
  json_t *chip; /* the job chip's document */
  const char *dir;
  report_plots *plots; /* the figures, drawn when sweep.md is written */
  char absdir[PATH_MAX];
} arch_ctx;

/* The job chip's value of parameter i (its JSON path in the chip document). */
static double chip_value(const json_t *chip, int i) {
  char path[128];
  snprintf(path, sizeof path, "%s", config_sweep_param_path(i));
  const json_t *v = chip;
  for (char *save = NULL, *k = strtok_r(path, ".", &save); v && k; k = strtok_r(NULL, ".", &save))
    v = json_object_get(v, k);
  return json_is_number(v) ? json_number_value(v) : NAN;
}

_Static_assert(STORE_NAME_LEN == CONFIG_NAME_LEN, "a store's policy names are config's");

/* A policy group from its store name, through config's parsers of the name and the point. */
static int parse_group(const char *name, arch_group *g, enpu_err *err) {
  *g = (arch_group){.name = name};
  const char *point;
  ENPU_RETURN_IF(config_policy_point_split(name, g->base, &point) < 0, err, ENPU_ERR_FORMAT,
                 "policy group \"%s\": name too long", name);
  if (!point) return ENPU_OK;
  const int n = config_point_parse(point, g->param, g->value, ARCH_MAX_PARAMS, err);
  if (n < 0) {
    enpu_err_prefix(err, "policy group \"%s\": ", name);
    if (err) err->code = ENPU_ERR_FORMAT; /* a store's name, not the caller's input */
    return ENPU_ERR_FORMAT;
  }
  g->n = n;
  return ENPU_OK;
}

/* Mean saving (%) of a group at a phase and slack; NAN when it has no plan there. */
static double saving(const arch_ctx *a, const char *group, int phase, double slack) {
  for (size_t i = 0; group && i < a->nrows; i++) {
    const report_savings_row *r = &a->rows[i];
    if (r->phase == phase && fabs(r->slack - slack) < 1e-12 && !strcmp(r->policy, group)) return 100 * r->mean;
  }
  return NAN;
}

/* Group x's value of parameter i: its point's, else the job chip's. */
static double group_value(const arch_ctx *a, const arch_group *x, int i) {
  for (int k = 0; k < x->n; k++)
    if (x->param[k] == i) return x->value[k];
  return chip_value(a->chip, i);
}

/* Does group x lie on the slice through the job chip along params[0..np): every other
 * parameter of its point at the chip's value, and (need_all) every one of params in its
 * point? */
static int on_slice(const arch_ctx *a, const arch_group *x, const int *params, int np, int need_all) {
  int have = 0;
  for (int k = 0; k < x->n; k++) {
    int in = 0;
    for (int j = 0; j < np; j++) in |= x->param[k] == params[j];
    if (!in && x->value[k] != chip_value(a->chip, x->param[k])) return 0;
    have += in;
  }
  return !need_all || have == np;
}

/* The group of policy `base` at params[0..np) = values on the slice through the job chip
 * (a sweep point's before the job chip's own group, which is every slice's origin). */
static const char *group_at(const arch_ctx *a, const char *base, const int *params, const double *values, int np) {
  for (int own = 0; own < 2; own++)
    for (size_t g = 0; g < a->ngroups; g++) {
      const arch_group *x = &a->groups[g];
      if ((x->n == 0) != own || strcmp(x->base, base) || !on_slice(a, x, params, np, 0)) continue;
      int hit = 1;
      for (int k = 0; k < np && hit; k++) hit = group_value(a, x, params[k]) == values[k];
      if (hit) return x->name;
    }
  return NULL;
}

static int cmp_double(const void *x, const void *y) {
  const double a = *(const double *)x, b = *(const double *)y;
  return a < b ? -1 : a > b;
}

/* The sorted distinct values of params[k] on the slice through the job chip along
 * params[0..np) (one parameter: the job chip's value too; two: only points varying
 * both); *n of them (at most cap). */
static int axis_values(const arch_ctx *a, const int *params, int np, int k, double *out, int cap) {
  int n = 0;
  for (size_t g = 0; g < a->ngroups; g++) {
    const arch_group *x = &a->groups[g];
    if (!on_slice(a, x, params, np, np > 1) || (np > 1 && x->n == 0)) continue;
    const double v = group_value(a, x, params[k]);
    int seen = isnan(v);
    for (int j = 0; j < n && !seen; j++) seen = out[j] == v;
    if (!seen && n < cap) out[n++] = v;
  }
  qsort(out, (size_t)n, sizeof *out, cmp_double);
  return n;
}

static void axis_label(FILE *gp, const char *axis, int param) {
  fprintf(gp, "set %slabel '%s (%s)'\n", axis, config_sweep_param_path(param), config_sweep_param_unit(param));
}

/* ---------------------------------------------------------------------------------
 * One parameter: a line plot (a panel per phase) and the break-even rows */

static int line_dat(const arch_ctx *a, int param, const double *x, int nx, const char *name, enpu_err *err) {
  FILE *f = NULL;
  ENPU_FORWARD(report_file_open(a->dir, name, &f, err));
  fprintf(f, "# %s, then saving vs " ENPU_POLICY_DISPLAY_NODVFS " (%%) per phase, policy and slack\n",
          config_sweep_param_path(param));
  for (int i = 0; i < nx; i++) {
    fprintf(f, "%.10g", x[i]);
    for (int ph = 0; ph < 2; ph++)
      for (int b = 0; b < a->nbases; b++)
        for (int s = 0; s < a->nslack; s++)
          fprintf(f, " %.6f", saving(a, group_at(a, a->bases[b], &param, &x[i], 1), ph, a->slack[s]));
    fprintf(f, "\n");
  }
  return report_file_close(f, a->dir, name, err);
}

static int line_plot(const arch_ctx *a, int param, const double *x, int nx, FILE *md, enpu_err *err) {
  char dat[160], gpn[160], png[160];
  snprintf(dat, sizeof dat, "sweep_%s.dat", config_sweep_param_path(param));
  snprintf(gpn, sizeof gpn, "sweep_%s.gp", config_sweep_param_path(param));
  snprintf(png, sizeof png, "sweep_%s.png", config_sweep_param_path(param));
  ENPU_FORWARD(line_dat(a, param, x, nx, dat, err));
  FILE *gp = NULL;
  ENPU_FORWARD(report_file_open(a->dir, gpn, &gp, err));
  char title[160];
  snprintf(title, sizeof title, "chip sweep: %s", config_sweep_param_path(param));
  report_gp_preamble(gp, png, 900, title);
  fprintf(gp, "set multiplot layout 2,1\nset key outside right top\nset rmargin at screen 0.72\nset grid\n");
  if (nx > 1 && x[0] > 0 && x[nx - 1] / x[0] >= 100) fprintf(gp, "set logscale x 10\n");
  axis_label(gp, "x", param);
  fprintf(gp, "set ylabel 'saving vs " ENPU_POLICY_DISPLAY_NODVFS " (%%)'\n");
  for (int ph = 0; ph < 2; ph++) {
    fprintf(gp, "set title '%s'\nplot", ph ? "decode" : "prefill");
    int col = 2 + ph * a->nbases * a->nslack, drawn = 0;
    for (int b = 0; b < a->nbases; b++)
      for (int s = 0; s < a->nslack; s++, col++)
        fprintf(gp, "%s '%s' using 1:%d with linespoints lw 2 title '%s, %g %% slack'",
                drawn++ ? ", \\\n    " : " ", dat, col, a->bases[b], 100 * a->slack[s]);
    fprintf(gp, "\n");
  }
  fprintf(gp, "unset multiplot\n");
  ENPU_FORWARD(report_file_close(gp, a->dir, gpn, err));
  ENPU_FORWARD(report_plots_add(a->plots, a->absdir, gpn, png, err));
  fprintf(md, "\n![%s](%s)\n", title, png);
  return ENPU_OK;
}

/* The break-even answers of one sweep, one row per phase and slack. */
static void break_even(const arch_ctx *a, int param, const double *x, int nx, FILE *md) {
  const double own = chip_value(a->chip, param);
  for (int ph = 0; ph < 2; ph++)
    for (int s = 0; s < a->nslack; s++) {
      const double base = saving(a, group_at(a, config_policy_name(CONFIG_POLICY_ENPU_ALL), &param, &own, 1), ph,
                                 a->slack[s]);
      char keeps[96] = "—", stops[256] = "";
      double lo = NAN, hi = NAN;
      size_t used = 0;
      for (int i = 0; i < nx; i++) {
        const double e = saving(a, group_at(a, config_policy_name(CONFIG_POLICY_ENPU_ALL), &param, &x[i], 1), ph,
                                a->slack[s]);
        const double d = saving(a, group_at(a, a->dvfs_c, &param, &x[i], 1), ph, a->slack[s]);
        if (base > 0 && e >= 0.9 * base) hi = x[i], lo = isnan(lo) ? x[i] : lo;
        if (!isnan(e) && !isnan(d) && e <= d && used < sizeof stops - 24)
          used += (size_t)snprintf(stops + used, sizeof stops - used, "%s%.10g", used ? ", " : "", x[i]);
      }
      if (!(base > 0)) snprintf(keeps, sizeof keeps, "no saving on the job chip");
      else if (!isnan(hi)) snprintf(keeps, sizeof keeps, "%.10g (smallest: %.10g)", hi, lo);
      fprintf(md, "| %s | %s | %g %% | %.2f %% | %s | %s |\n", config_sweep_param_path(param),
              ph ? "decode" : "prefill", 100 * a->slack[s], base, keeps,
              !a->dvfs_c ? "no " ENPU_POLICY_DISPLAY_DVFS_C " in the store"
              : used     ? stops
                         : "none: it beats " ENPU_POLICY_DISPLAY_DVFS_C " at every value");
    }
}

/* ---------------------------------------------------------------------------------
 * Two parameters: a heat map per policy and phase, at the largest chosen slack */

static int heat_dat(const arch_ctx *a, const int *pq, const double *x, int nx, const double *y, int ny,
                    const char *name, enpu_err *err) {
  FILE *f = NULL;
  ENPU_FORWARD(report_file_open(a->dir, name, &f, err));
  fprintf(f,
          "# index of %s, index of %s, then saving vs " ENPU_POLICY_DISPLAY_NODVFS " (%%) per phase and policy\n",
          config_sweep_param_path(pq[0]), config_sweep_param_path(pq[1]));
  for (int j = 0; j < ny; j++) {
    for (int i = 0; i < nx; i++) {
      const double v[2] = {x[i], y[j]};
      fprintf(f, "%d %d", i, j);
      for (int ph = 0; ph < 2; ph++)
        for (int b = 0; b < a->nbases; b++)
          fprintf(f, " %.6f", saving(a, group_at(a, a->bases[b], pq, v, 2), ph, a->slack[a->nslack - 1]));
      fprintf(f, "\n");
    }
    fprintf(f, "\n");
  }
  return report_file_close(f, a->dir, name, err);
}

static void heat_tics(FILE *gp, const char *axis, const double *v, int n) {
  fprintf(gp, "set %stics (", axis);
  for (int i = 0; i < n; i++) fprintf(gp, "%s'%.6g' %d", i ? ", " : "", v[i], i);
  fprintf(gp, ")\nset %srange [-0.5:%d.5]\n", axis, n - 1);
}

/* The heat maps' numbers for the first compared policy: a table per phase, rows the
 * second parameter, columns the first. */
static void heat_table(const arch_ctx *a, const int *pq, const double *x, int nx, const double *y, int ny,
                       FILE *md) {
  for (int ph = 0; ph < 2; ph++) {
    fprintf(md, "\n%s saving vs " ENPU_POLICY_DISPLAY_NODVFS " (%%), %s, %g %% slack\n\n| %s \\ %s |", a->bases[0],
            ph ? "decode" : "prefill", 100 * a->slack[a->nslack - 1], config_sweep_param_path(pq[1]),
            config_sweep_param_path(pq[0]));
    for (int i = 0; i < nx; i++) fprintf(md, " %.6g |", x[i]);
    fprintf(md, "\n|---|");
    for (int i = 0; i < nx; i++) fprintf(md, "---|");
    for (int j = 0; j < ny; j++) {
      fprintf(md, "\n| %.6g |", y[j]);
      for (int i = 0; i < nx; i++) {
        const double v[2] = {x[i], y[j]};
        report_md_cell(md, saving(a, group_at(a, a->bases[0], pq, v, 2), ph, a->slack[a->nslack - 1]), 1, "%.2f");
      }
    }
    fprintf(md, "\n");
  }
}

static int heat_map(const arch_ctx *a, const int *pq, const double *x, int nx, const double *y, int ny, FILE *md,
                    enpu_err *err) {
  char stem[128], dat[160], gpn[160], png[160];
  snprintf(stem, sizeof stem, "sweep_%s_x_%s", config_sweep_param_path(pq[0]), config_sweep_param_path(pq[1]));
  snprintf(dat, sizeof dat, "%s.dat", stem), snprintf(gpn, sizeof gpn, "%s.gp", stem);
  snprintf(png, sizeof png, "%s.png", stem);
  ENPU_FORWARD(heat_dat(a, pq, x, nx, y, ny, dat, err));
  FILE *gp = NULL;
  ENPU_FORWARD(report_file_open(a->dir, gpn, &gp, err));
  char title[200];
  snprintf(title, sizeof title, "chip sweep: %s x %s, %g %% slack", config_sweep_param_path(pq[0]),
           config_sweep_param_path(pq[1]), 100 * a->slack[a->nslack - 1]);
  report_gp_preamble(gp, png, 420 * 2, title);
  fprintf(gp, "set multiplot layout 2,%d\nunset key\n", a->nbases);
  heat_tics(gp, "x", x, nx), heat_tics(gp, "y", y, ny);
  axis_label(gp, "x", pq[0]), axis_label(gp, "y", pq[1]);
  /* The colour bar's label on the last column only: side by side, a plot's colour-bar
   * label and its right neighbour's y label would meet between them, as close as the
   * colour bar's tick labels are wide. */
  for (int ph = 0; ph < 2; ph++)
    for (int b = 0; b < a->nbases; b++) {
      fprintf(gp, b == a->nbases - 1 ? "set cblabel 'saving vs " ENPU_POLICY_DISPLAY_NODVFS " (%%)'\n"
                                     : "unset cblabel\n");
      fprintf(gp, "set title '%s, %s'\nplot '%s' using 1:2:%d with image\n", a->bases[b], ph ? "decode" : "prefill",
              dat, 3 + ph * a->nbases + b);
    }
  fprintf(gp, "unset multiplot\n");
  ENPU_FORWARD(report_file_close(gp, a->dir, gpn, err));
  ENPU_FORWARD(report_plots_add(a->plots, a->absdir, gpn, png, err));
  fprintf(md, "\n![%s](%s)\n", title, png);
  heat_table(a, pq, x, nx, y, ny, md);
  return ENPU_OK;
}

/* ---------------------------------------------------------------------------------
 * The document */

static void savings_table(const arch_ctx *a, int param, const double *x, int nx, FILE *md) {
  fprintf(md, "\n| %s (%s) |", config_sweep_param_path(param), config_sweep_param_unit(param));
  for (int ph = 0; ph < 2; ph++)
    for (int b = 0; b < a->nbases; b++)
      for (int s = 0; s < a->nslack; s++)
        fprintf(md, " %s %s, %g %% |", a->bases[b], ph ? "decode" : "prefill", 100 * a->slack[s]);
  fprintf(md, "\n|---|");
  for (int k = 0; k < 2 * a->nbases * a->nslack; k++) fprintf(md, "---|");
  const double own = chip_value(a->chip, param);
  for (int i = 0; i < nx; i++) {
    fprintf(md, "\n| %.10g%s |", x[i], x[i] == own ? " (job chip)" : "");
    for (int ph = 0; ph < 2; ph++)
      for (int b = 0; b < a->nbases; b++)
        for (int s = 0; s < a->nslack; s++)
          report_md_cell(md, saving(a, group_at(a, a->bases[b], &param, &x[i], 1), ph, a->slack[s]), 1, "%.2f");
  }
  fprintf(md, "\n");
}

/* Every single-parameter sweep (first) and every pair, each once. */
static int sweeps(const arch_ctx *a, FILE *md, enpu_err *err) {
  enum { MAXV = CONFIG_MAX_VARIANTS + 1 };
  double x[MAXV], y[MAXV];
  fprintf(
      md,
      "\n## Break-even\n\n| parameter | phase | slack | " ENPU_POLICY_DISPLAY_ENPU_ALL
      " saving on the job chip | largest value keeping >= 90 %% of it | values where " ENPU_POLICY_DISPLAY_ENPU_ALL
      " does not beat " ENPU_POLICY_DISPLAY_DVFS_C " |\n|---|---|---|---|---|---|\n");
  for (int p = 0; p < config_sweep_param_count(); p++) {
    const int nx = axis_values(a, &p, 1, 0, x, MAXV);
    if (nx > 1) break_even(a, p, x, nx, md);
  }
  for (int p = 0; p < config_sweep_param_count(); p++) {
    const int nx = axis_values(a, &p, 1, 0, x, MAXV);
    if (nx < 2) continue;
    fprintf(md, "\n## %s\n", config_sweep_param_path(p));
    savings_table(a, p, x, nx, md);
    ENPU_FORWARD(line_plot(a, p, x, nx, md, err));
  }
  for (int p = 0; p < config_sweep_param_count(); p++)
    for (int q = p + 1; q < config_sweep_param_count(); q++) {
      const int pq[2] = {p, q};
      const int nx = axis_values(a, pq, 2, 0, x, MAXV), ny = axis_values(a, pq, 2, 1, y, MAXV);
      if (nx < 1 || ny < 1) continue;
      fprintf(md, "\n## %s x %s\n", config_sweep_param_path(p), config_sweep_param_path(q));
      ENPU_FORWARD(heat_map(a, pq, x, nx, y, ny, md, err));
    }
  return ENPU_OK;
}

/* The compared policies of the job chip's groups: eNPU-All, DVFS-C (its GA, else its
 * walk), eNPU-C, then the others but NoDVFS and uniform, at most ARCH_MAX_BASES. */
static void pick_bases(arch_ctx *a) {
  static const config_policy order[] = {CONFIG_POLICY_ENPU_ALL, CONFIG_POLICY_DVFS_C, CONFIG_POLICY_DVFS_C_WALK,
                                        CONFIG_POLICY_ENPU_C};
  for (size_t k = 0; k < sizeof order / sizeof order[0] + 1; k++)
    for (size_t g = 0; g < a->ngroups && a->nbases < ARCH_MAX_BASES; g++) {
      const arch_group *x = &a->groups[g];
      int dup = x->n != 0 || config_policy_named(x->base, CONFIG_POLICY_NODVFS) ||
                config_policy_named(x->base, CONFIG_POLICY_UNIFORM);
      for (int b = 0; b < a->nbases && !dup; b++) dup = !strcmp(a->bases[b], x->base);
      if (config_policy_named(x->base, CONFIG_POLICY_DVFS_C_WALK) && a->dvfs_c)
        dup = 1; /* the GA's stands for DVFS-C */
      if (dup || (k < 4 && !config_policy_named(x->base, order[k]))) continue;
      a->bases[a->nbases++] = x->base;
      if (config_policy_named(x->base, CONFIG_POLICY_DVFS_C) ||
          config_policy_named(x->base, CONFIG_POLICY_DVFS_C_WALK))
        a->dvfs_c = x->base;
    }
}

static void pick_slacks(arch_ctx *a, double want) {
  double lo = INFINITY, hi = -INFINITY, near = NAN;
  for (size_t i = 0; i < a->nrows; i++) {
    const double s = a->rows[i].slack;
    lo = s < lo ? s : lo, hi = s > hi ? s : hi;
    if (want >= 0 && (isnan(near) || fabs(s - want) < fabs(near - want))) near = s;
  }
  a->nslack = 0;
  if (want >= 0 && !isnan(near)) a->slack[a->nslack++] = near;
  else if (a->nrows) {
    a->slack[a->nslack++] = lo;
    if (hi > lo) a->slack[a->nslack++] = hi;
  }
}

static int arch_setup(arch_ctx *a, const report_arch_options *o, enpu_err *err) {
  ENPU_FORWARD(report_savings(a->c, &a->rows, &a->nrows, err));
  a->groups = enpu_calloc(a->c->npolicies + 1, sizeof *a->groups);
  ENPU_RETURN_IF(!a->groups, err, ENPU_ERR_NOMEM, "out of memory (sweep report)");
  for (size_t i = 0; i < a->c->npolicies; i++)
    ENPU_FORWARD(parse_group(a->c->policies[i].name, &a->groups[a->ngroups++], err));
  a->chip = a->c->chip_json ? json_loads(a->c->chip_json, 0, NULL) : NULL;
  ENPU_RETURN_IF(!a->chip, err, ENPU_ERR_FORMAT, "the store keeps no readable chip document");
  pick_bases(a);
  pick_slacks(a, o->slack);
  ENPU_RETURN_IF(a->nbases == 0 || a->nslack == 0, err, ENPU_ERR_NOT_FOUND,
                 "the store has no compiled policy beside " ENPU_POLICY_DISPLAY_NODVFS " on the job's chip");
  return ENPU_OK;
}

int report_arch_write(const report_arch_options *o, char **md_path, enpu_err *err) {
  arch_ctx a = {.dir = o->out_dir};
  store_contents *c = NULL;
  FILE *md = NULL;
  int rc = report_plots_create(o->gnuplot, &a.plots, err);
  if (rc == 0) rc = store_load(o->store_path, &c, err);
  a.c = c;
  if (rc == 0) rc = arch_setup(&a, o, err);
  if (rc == 0) rc = enpu_mkdir_p(o->out_dir, err);
  if (rc == 0) rc = report_absolute_dir(o->out_dir, a.absdir, sizeof a.absdir, err);
  if (rc == 0) rc = report_file_open(o->out_dir, "sweep.md", &md, err);
  if (rc == 0) {
    fprintf(md,
            "# Chip sweep of %s\n\nSavings vs " ENPU_POLICY_DISPLAY_NODVFS
            " on the same chip variant, the mean over the ok buckets "
            "of each phase (%%); the job's chip is the point at its own value.\n",
            o->store_path);
    rc = sweeps(&a, md, err);
    const int crc = report_file_close(md, o->out_dir, "sweep.md", rc == 0 ? err : &(enpu_err){0});
    rc = rc ? rc : crc;
  }
  if (rc == 0) rc = report_plots_draw(a.plots, err);
  if (rc == 0 && md_path) {
    const size_t n = strlen(o->out_dir) + 16;
    *md_path = malloc(n);
    if (*md_path) snprintf(*md_path, n, "%s/sweep.md", o->out_dir);
  }
  report_plots_free(a.plots);
  json_decref(a.chip);
  free(a.groups);
  free(a.rows);
  store_contents_free(c);
  return rc;
}
