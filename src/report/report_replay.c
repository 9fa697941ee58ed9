/* report_replay.c — section 4 of the report: a replay over time, in the shape of the
 * paper's Figure 22 (per 5-minute window: SLO attainment of prefill and decode, energy
 * savings against nodvfs busy-only and with idle chips, per phase) and Figure 5 (SLO
 * slack percentiles of the requests finished per window), and the peak (14–20 h) vs
 * off-peak table (with a report_overlay's reference rows under it: the paper wing adds §4.8's)
 * — from the per-window CSVs
 * (`windows_<policy>.csv`) and summary.json that `enpu replay --out DIR` writes.
 * Columns are found by their header names, so added columns do not matter and a missing
 * one is an error naming the file and column. Windows of different policies are aligned
 * by index: the runs replay the same trace over one horizon, so window i starts at the
 * same time in every run. */
#include <dirent.h>
#include <errno.h>
#include <jansson.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "report_internal.h"

#define REPLAY_MAX_POLICIES 16
#define NSLACK 5

/* The columns the figures need, by header name; those after COL_FIRST_OPTIONAL may be
 * empty (nothing finished in the window). */
enum {
  COL_START,
  COL_LENGTH,
  COL_BUSY_P,
  COL_BUSY_D,
  COL_IDLE_P,
  COL_IDLE_D,
  COL_BATCH_P,
  COL_BATCH_D,
  COL_SG1_P,
  COL_SG1_D,
  COL_LOCK_P,
  COL_LOCK_D,
  COL_TTFT_ATT,
  COL_TPOT_ATT,
  COL_TTFT_SLACK,
  COL_TPOT_SLACK = COL_TTFT_SLACK + NSLACK,
  NCOL = COL_TPOT_SLACK + NSLACK
};
#define COL_FIRST_OPTIONAL COL_TTFT_ATT
/* clang-format off */
static const char *const col_names[NCOL] = {
    "start_s", "length_s", "prefill_busy_energy_j", "decode_busy_energy_j", "prefill_idle_energy_j",
    "decode_idle_energy_j", "prefill_batches", "decode_batches", "prefill_safeguard1", "decode_safeguard1",
    "prefill_locked", "decode_locked", "ttft_attainment", "tpot_attainment", "ttft_slack_p1", "ttft_slack_p25",
    "ttft_slack_mean", "ttft_slack_p75", "ttft_slack_p99", "tpot_slack_p1", "tpot_slack_p25", "tpot_slack_mean",
    "tpot_slack_p75", "tpot_slack_p99"};
/* clang-format on */

typedef struct {
  double v[NCOL];
} window_row;

typedef struct {
  char policy[64];
  window_row *w;
  size_t n;
} window_series;

void report_split_csv(char *line, char **fields, size_t cap, size_t *nf) {
  line[strcspn(line, "\r")] = '\0';
  *nf = 0;
  for (char *s = line; *nf < cap;) {
    fields[(*nf)++] = s;
    s = strchr(s, ',');
    if (!s) break;
    *s++ = '\0';
  }
}

int report_csv_header(const char *path, char *line, const char *const *names, int count, long *col, enpu_err *err) {
  char *fields[128];
  size_t nf = 0;
  report_split_csv(line, fields, 128, &nf);
  for (int k = 0; k < count; k++) {
    col[k] = -1;
    for (size_t f = 0; f < nf; f++)
      if (!strcmp(fields[f], names[k])) col[k] = (long)f;
    ENPU_RETURN_IF(col[k] < 0, err, ENPU_ERR_PARSE, "%s:1: no column '%s' in the header", path, names[k]);
  }
  return ENPU_OK;
}

static int parse_window_row(const char *path, size_t line_no, char *line, const long col[NCOL], window_row *row,
                            enpu_err *err) {
  char *fields[128];
  size_t nf = 0;
  report_split_csv(line, fields, 128, &nf);
  for (int k = 0; k < NCOL; k++) {
    ENPU_RETURN_IF((size_t)col[k] >= nf, err, ENPU_ERR_PARSE, "%s:%zu: %zu fields, column '%s' is field %ld", path,
                   line_no, nf, col_names[k], col[k] + 1);
    const char *f = fields[col[k]];
    char *end = NULL;
    row->v[k] = strtod(f, &end);
    if (k >= COL_FIRST_OPTIONAL && !*f) row->v[k] = NAN;
    else
      ENPU_RETURN_IF(end == f || *end || !isfinite(row->v[k]), err, ENPU_ERR_PARSE,
                     "%s:%zu: column '%s': expected a number, got '%s'", path, line_no, col_names[k], f);
  }
  ENPU_RETURN_IF(row->v[COL_LENGTH] < 0, err, ENPU_ERR_PARSE, "%s:%zu: length_s must be >= 0", path, line_no);
  return ENPU_OK;
}

static int parse_windows(const char *path, char *text, window_series *s, enpu_err *err) {
  size_t cap = 0, line_no = 1;
  long col[NCOL];
  char *save = NULL, *line = strtok_r(text, "\n", &save);
  ENPU_RETURN_IF(!line, err, ENPU_ERR_PARSE, "%s:1: empty file, expected a header line", path);
  ENPU_FORWARD(report_csv_header(path, line, col_names, NCOL, col, err));
  while ((line = strtok_r(NULL, "\n", &save))) {
    line_no++;
    line[strcspn(line, "\r")] = '\0';
    if (!*line) continue;
    window_row row;
    ENPU_FORWARD(parse_window_row(path, line_no, line, col, &row, err));
    ENPU_RETURN_IF(enpu_grow((void **)&s->w, &cap, s->n + 1, sizeof *s->w) < 0, err, ENPU_ERR_NOMEM,
                   "out of memory (%s)", path);
    s->w[s->n++] = row;
  }
  ENPU_RETURN_IF(s->n == 0, err, ENPU_ERR_PARSE, "%s: no window rows", path);
  return ENPU_OK;
}

/* The column of every window row (empty cells skipped) whose "peak" column is `peak`
 * (-1: every row): the numbers a claim about the replay's windows aggregates. */
static int column_values(const char *path, char *text, const char *column, int peak, double **out, int *n,
                         enpu_err *err) {
  char *save = NULL, *line = strtok_r(text, "\n", &save), *fields[128];
  size_t nf = 0, cap = 0, line_no = 1;
  ENPU_RETURN_IF(!line, err, ENPU_ERR_PARSE, "%s:1: empty file, expected a header line", path);
  line[strcspn(line, "\r")] = '\0';
  report_split_csv(line, fields, 128, &nf);
  long want = -1, peak_col = -1;
  for (size_t f = 0; f < nf; f++) {
    if (!strcmp(fields[f], column)) want = (long)f;
    if (!strcmp(fields[f], "peak")) peak_col = (long)f;
  }
  ENPU_RETURN_IF(want < 0 || peak_col < 0, err, ENPU_ERR_PARSE, "%s:1: no column '%s' (or 'peak') in the header",
                 path, want < 0 ? column : "peak");
  while ((line = strtok_r(NULL, "\n", &save))) {
    line_no++;
    line[strcspn(line, "\r")] = '\0';
    report_split_csv(line, fields, 128, &nf);
    if (!*line || (size_t)want >= nf || (size_t)peak_col >= nf) continue;
    if (peak >= 0 && atoi(fields[peak_col]) != peak) continue;
    char *end = NULL;
    const double v = strtod(fields[want], &end);
    if (!*fields[want]) continue;
    ENPU_RETURN_IF(*end || !isfinite(v), err, ENPU_ERR_PARSE, "%s:%zu: column '%s': expected a number", path,
                   line_no, column);
    ENPU_RETURN_IF(enpu_grow((void **)out, &cap, (size_t)*n + 1, sizeof **out) < 0, err, ENPU_ERR_NOMEM,
                   "out of memory (%s)", path);
    (*out)[(*n)++] = v;
  }
  return ENPU_OK;
}

int report_windows_column(const char *path, const char *column, int peak, double **out, int *n, enpu_err *err) {
  char *text = NULL;
  size_t len = 0;
  *out = NULL, *n = 0;
  int rc = enpu_read_file_max(path, ENPU_TRACE_MAX_BYTES, &text, &len, err);
  if (rc == 0) rc = column_values(path, text, column, peak, out, n, err);
  free(text);
  if (rc < 0) free(*out), *out = NULL, *n = 0;
  return rc;
}

static int name_cmp(const void *a, const void *b) {
  return strcmp(((const window_series *)a)->policy, ((const window_series *)b)->policy);
}

/* Every windows_<policy>.csv of dir, sorted by policy name; when dir has a summary.json,
 * only its policies' (a rerun with fewer policies leaves older files behind). */
static int load_series(const char *dir, window_series *s, size_t *n, enpu_err *err) {
  *n = 0;
  char path[PATH_MAX];
  snprintf(path, sizeof path, "%s/summary.json", dir);
  json_t *doc = report_summary_json(path);
  const json_t *pols = json_object_get(doc, "policies");
  DIR *d = opendir(dir);
  if (!d) json_decref(doc);
  ENPU_RETURN_IF(!d, err, ENPU_ERR_IO, "replay directory %s: %s", dir, strerror(errno));
  int rc = ENPU_OK;
  for (struct dirent *e; rc == 0 && (e = readdir(d));) {
    const size_t len = strlen(e->d_name);
    if (len <= 12 || strncmp(e->d_name, "windows_", 8) || strcmp(e->d_name + len - 4, ".csv")) continue;
    if (*n == REPLAY_MAX_POLICIES) {
      rc = enpu_errorf(err, ENPU_ERR_RANGE, "%s: more than %d windows_*.csv files", dir, REPLAY_MAX_POLICIES);
      break;
    }
    window_series *w = &s[*n];
    *w = (window_series){0};
    snprintf(w->policy, sizeof w->policy, "%.*s", (int)(len - 12), e->d_name + 8);
    if (json_is_object(pols) && !json_object_get(pols, w->policy)) continue;
    (*n)++;
    char *text = NULL;
    size_t tlen = 0;
    snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
    rc = enpu_read_file_max(path, ENPU_TRACE_MAX_BYTES, &text, &tlen, err);
    if (rc == 0) rc = parse_windows(path, text, w, err);
    free(text);
  }
  closedir(d);
  json_decref(doc);
  if (rc == 0 && *n == 0) rc = enpu_errorf(err, ENPU_ERR_IO, "replay directory %s has no windows_*.csv", dir);
  if (rc == 0) qsort(s, *n, sizeof *s, name_cmp);
  return rc;
}

static long baseline_series(const window_series *s, size_t n) {
  for (size_t i = 0; i < n; i++)
    if (config_policy_named(s[i].policy, CONFIG_POLICY_NODVFS)) return (long)i;
  return -1;
}

static double saving(double e, double base) { return base > 0 ? 100 * (1 - e / base) : NAN; }

/* ---- Figure 22 ------------------------------------------------------------------------ */

/* Per policy: TTFT and TPOT attainment (%), savings busy-only and with idle, prefill
 * and decode (%): 6 columns. */
#define F22_COLS 6

static int write_fig22_dat(const report_ctx *r, const window_series *s, size_t n, long base, double origin_h,
                           enpu_err *err) {
  FILE *f = NULL;
  ENPU_FORWARD(report_file_open(r->dir, "replay_energy.dat", &f, err));
  fprintf(f, "# per 5-minute window: hour of the day, then per policy: TTFT and TPOT attainment (%%), savings vs"
             " " ENPU_POLICY_NAME_NODVFS " busy-only prefill/decode and with idle prefill/decode (%%)\n# hour");
  for (size_t i = 0; i < n; i++) fprintf(f, " %s(%d)", s[i].policy, F22_COLS);
  fprintf(f, "\n");
  for (size_t w = 0; w < s[0].n; w++) {
    fprintf(f, "%.6f", origin_h + s[0].w[w].v[COL_START] / 3600);
    for (size_t i = 0; i < n; i++) {
      const double *v = w < s[i].n ? s[i].w[w].v : NULL;
      const double *b = base >= 0 && w < s[base].n ? s[base].w[w].v : NULL;
      double out[F22_COLS] = {NAN, NAN, NAN, NAN, NAN, NAN};
      if (v) out[0] = 100 * v[COL_TTFT_ATT], out[1] = 100 * v[COL_TPOT_ATT];
      for (int ph = 0; v && b && ph < 2; ph++) {
        out[2 + ph] = saving(v[COL_BUSY_P + ph], b[COL_BUSY_P + ph]);
        out[4 + ph] = saving(v[COL_BUSY_P + ph] + v[COL_IDLE_P + ph], b[COL_BUSY_P + ph] + b[COL_IDLE_P + ph]);
      }
      for (int k = 0; k < F22_COLS; k++) fprintf(f, " %.6f", out[k]);
    }
    fprintf(f, "\n");
  }
  return report_file_close(f, r->dir, "replay_energy.dat", err);
}

/* One panel: column k of the policies [lo, hi) of `dat` (but the base's when skip_base),
 * dashed when `dashed`; `more` continues the plot command. */
static void gp_series(FILE *f, const char *dat, const window_series *s, size_t lo, size_t hi, int group, int k,
                      long skip, const char *suffix, bool dashed, bool more) {
  for (size_t i = lo, drawn = 0; i < hi; i++)
    if ((long)i != skip)
      fprintf(f, "%s '%s' using 1:%zu with lines lw 2 lc %zu %s title '%s%s'",
              (more || drawn++) ? ", \\\n    " : " ", dat, 2 + (size_t)group * i + (size_t)k, i + 1,
              dashed ? "dt 2" : "", s[i].policy, suffix);
}

/* The lowest SLO attainment (%) of phase ph over every policy's windows; NAN when none. */
static double attainment_min_pct(const window_series *s, size_t n, int ph) {
  double lo = NAN;
  for (size_t i = 0; i < n; i++)
    for (size_t w = 0; w < s[i].n; w++) {
      const double v = 100 * s[i].w[w].v[ph ? COL_TPOT_ATT : COL_TTFT_ATT];
      if (isfinite(v) && !(v >= lo)) lo = v;
    }
  return lo;
}

/* The attainment panel's y axis: from a little under the lowest value to 100 %, so that
 * a dip of a tenth of a point shows; when every window is at 100 %, 0..105 % and the title
 * says so (gnuplot's own range for a flat series is 99..101 %, with a warning, and reads
 * as a variation that is not there). */
static void gp_attainment_axis(FILE *f, double lo_pct, const char **note) {
  *note = "";
  if (!isfinite(lo_pct)) return;
  if (lo_pct >= 100) {
    fprintf(f, "set yrange [0:105]\n");
    *note = ": 100 % in every window, every policy";
    return;
  }
  const double pad = fmax(0.05, 0.1 * (100 - lo_pct));
  fprintf(f, "set yrange [%.6g:%.6g]\n", lo_pct - pad, 100 + pad);
}

/* A panel per metric; with more policies than a panel can tell apart, a panel per metric
 * and share of them, stacked (side by side, the hour's ticks and the titles would not fit;
 * the busy savings only then: the tables have the savings with idle chips). */
static int plot_fig22(const report_ctx *r, const window_series *s, size_t n, long base, double origin_h,
                      enpu_err *err) {
  ENPU_FORWARD(write_fig22_dat(r, s, n, base, origin_h, err));
  FILE *f = NULL;
  ENPU_FORWARD(report_file_open(r->dir, "replay_energy.gp", &f, err));
  const int rows = base >= 0 ? 4 : 2;
  const size_t cols = (n + REPORT_MAX_SERIES - 1) / REPORT_MAX_SERIES, per = (n + cols - 1) / cols;
  const bool idle = 2 * (per - (base >= 0)) <= REPORT_MAX_SERIES; /* the savings panels skip the base */
  report_gp_preamble(f, "replay_energy.png", 280 * rows * (int)cols, "replay per 5-minute window (Figure 22)");
  fprintf(f,
          "set multiplot layout %zu,1\nset xlabel 'time of day (h)'\nset key outside right top\n"
          "set rmargin at screen 0.74\n", /* the time axes line up */
          (size_t)rows * cols);
  static const char *const phases[2] = {"prefill", "decode"};
  for (int ph = 0; ph < 2; ph++)
    for (size_t c = 0; c < cols; c++) {
      const char *note = "";
      gp_attainment_axis(f, attainment_min_pct(s, n, ph), &note);
      fprintf(f, "set title '%s SLO attainment (%s) of the requests finished in the window", phases[ph],
              ph ? "TPOT" : "TTFT");
      fputs(note, f);
      fprintf(f, "'\nset ylabel 'SLO attainment (%%)'\nplot");
      gp_series(f, "replay_energy.dat", s, c * per, c * per + per < n ? c * per + per : n, F22_COLS, ph, -1, "",
                false, false);
      fprintf(f, "\n");
    }
  fprintf(f, "set autoscale y\n");
  for (int ph = 0; base >= 0 && ph < 2; ph++)
    for (size_t c = 0; c < cols; c++) {
      const size_t lo = c * per, hi = lo + per < n ? lo + per : n;
      fprintf(f,
              "set title '%s energy savings vs " ENPU_POLICY_NAME_NODVFS
              " (solid: busy batches only%s)'\nset ylabel 'savings (%%)'\nplot",
              phases[ph], idle ? ", dashed: with idle chips" : "");
      gp_series(f, "replay_energy.dat", s, lo, hi, F22_COLS, 2 + ph, base, " busy", false, false);
      if (idle) gp_series(f, "replay_energy.dat", s, lo, hi, F22_COLS, 4 + ph, base, " with idle", true, true);
      fprintf(f, "\n");
    }
  fprintf(f, "unset multiplot\n");
  ENPU_FORWARD(report_file_close(f, r->dir, "replay_energy.gp", err));
  return report_plots_add(r->plots, r->absdir, "replay_energy.gp", "replay_energy.png", err);
}

/* ---- Figure 5 ---------------------------------------------------------------------------- */

static int plot_fig5(const report_ctx *r, const window_series *b, double origin_h, enpu_err *err) {
  FILE *f = NULL;
  ENPU_FORWARD(report_file_open(r->dir, "replay_slack.dat", &f, err));
  fprintf(f,
          "# %s, per 5-minute window: hour of the day, TTFT slack P1 P25 mean P75 P99, TPOT slack P1 P25 mean"
          " P75 P99 (%% of the SLO: (SLO - latency) / SLO)\n",
          b->policy);
  for (size_t w = 0; w < b->n; w++) {
    fprintf(f, "%.6f", origin_h + b->w[w].v[COL_START] / 3600);
    for (int k = 0; k < 2 * NSLACK; k++) fprintf(f, " %.6f", 100 * b->w[w].v[COL_TTFT_SLACK + k]);
    fprintf(f, "\n");
  }
  ENPU_FORWARD(report_file_close(f, r->dir, "replay_slack.dat", err));
  ENPU_FORWARD(report_file_open(r->dir, "replay_slack.gp", &f, err));
  report_gp_preamble(f, "replay_slack.png", 600, "SLO slack per 5-minute window (Figure 5)");
  fprintf(f, "set multiplot layout 2,1\nset xlabel 'time of day (h)'\nset ylabel 'SLO slack (%%)'\n"
             "set key outside right top\n");
  static const char *const stat[NSLACK] = {"P1", "P25", "mean", "P75", "P99"};
  for (int ph = 0; ph < 2; ph++) {
    fprintf(f, "set title '%s slack of the requests finished in the window (%s)'\nplot", ph ? "TPOT" : "TTFT",
            b->policy);
    for (int k = 0; k < NSLACK; k++)
      fprintf(f, "%s 'replay_slack.dat' using 1:%d with lines lw 2 title '%s'", k ? ", \\\n    " : " ",
              2 + NSLACK * ph + k, stat[k]);
    fprintf(f, "\n");
  }
  fprintf(f, "unset multiplot\n");
  ENPU_FORWARD(report_file_close(f, r->dir, "replay_slack.gp", err));
  return report_plots_add(r->plots, r->absdir, "replay_slack.gp", "replay_slack.png", err);
}

/* ---- tables from summary.json --------------------------------------------------------- */

json_t *report_summary_json(const char *path) {
  char *text = NULL;
  size_t len = 0;
  if (enpu_read_file(path, &text, &len, NULL) < 0) return NULL;
  json_t *doc = json_loadb(text, len, 0, NULL);
  free(text);
  return doc;
}

double report_jget(const json_t *o, const char *a, const char *b) {
  const json_t *v = b ? json_object_get(json_object_get(o, a), b) : json_object_get(o, a);
  return json_is_number(v) ? json_number_value(v) : NAN;
}

void report_md_cell(FILE *md, double x, double scale, const char *fmt) {
  if (isfinite(x)) {
    fputc(' ', md);
    fprintf(md, fmt, x * scale);
    fprintf(md, " |");
  } else {
    fprintf(md, " – |");
  }
}

void report_md_policy_table(FILE *md, const char *header, const json_t *pols,
                            void (*row)(FILE *md, const char *name, const json_t *p)) {
  fputs(header, md);
  const char *name;
  json_t *p;
  json_object_foreach((json_t *)pols, name, p) row(md, name, p);
  fprintf(md, "\n");
}

static void summary_row(FILE *md, const char *name, const json_t *p) {
  fprintf(md, "| %s | %lld | %.3f | %.1f |", name, (long long)json_integer_value(json_object_get(p, "requests")),
          100 * report_jget(p, "slo_attainment", NULL), report_jget(p, "energy_j", "total"));
  static const char *const sav[2] = {"energy_savings", "busy_energy_savings"}, *const parts[3] = {
                                                                                   "total", "prefill", "decode"};
  for (int s = 0; s < 2; s++)
    for (int k = 0; k < 3; k++) {
      const double v = report_jget(p, sav[s], parts[k]);
      if (isfinite(v)) fprintf(md, "%s%.2f", k ? " / " : " ", 100 * v);
      else fprintf(md, "%s–", k ? " / " : " ");
      if (k == 2) fprintf(md, " |");
    }
  static const char *const counts[] = {"slowed", "safeguard1", "locked"};
  const json_t *b = json_object_get(p, "batches");
  for (int k = 0; k < 3; k++)
    fprintf(md, " %lld |",
            (long long)(json_integer_value(json_object_get(json_object_get(b, "prefill"), counts[k])) +
                        json_integer_value(json_object_get(json_object_get(b, "decode"), counts[k]))));
  fprintf(md, "\n");
}

static void md_periods(FILE *md, const json_t *pols, const report_overlay *overlay) {
  fprintf(
      md,
      "Peak (14–20 h of the day, windows by their start) and off-peak hours; savings against " ENPU_POLICY_NAME_NODVFS
      " over "
      "the same windows. The paper's simulator counts no idle energy, so its numbers compare with the "
      "busy-only column.\n\n"
      "| hours | policy | SLO attainment (%%) | busy-only savings prefill / decode (%%) | with-idle "
      "savings prefill / decode (%%) | safeguard 1 share of batches prefill / decode (%%) | locked share "
      "prefill / decode (%%) |\n|---|---|---:|---:|---:|---:|---:|\n");
  static const char *const periods[2] = {"peak", "off_peak"}, *const label[2] = {"peak 14–20 h", "off-peak"};
  for (int k = 0; k < 2; k++) {
    const char *name;
    json_t *p;
    json_object_foreach((json_t *)pols, name, p) {
      const json_t *per = json_object_get(json_object_get(p, "periods"), periods[k]);
      if (!per) continue;
      fprintf(md, "| %s | %s |", label[k], name);
      report_md_cell(md, report_jget(per, "slo_attainment", NULL), 100, "%.2f");
      static const char *const pairs[4] = {"busy_energy_savings", "energy_savings", "safeguard1_share",
                                           "locked_share"};
      for (int q = 0; q < 4; q++) {
        const double a = report_jget(per, pairs[q], "prefill"), b = report_jget(per, pairs[q], "decode");
        if (isfinite(a) && isfinite(b)) fprintf(md, " %.2f / %.2f |", 100 * a, 100 * b);
        else fprintf(md, " – |");
      }
      fprintf(md, "\n");
    }
  }
  if (overlay && overlay->rows) overlay->rows(overlay->ctx, md, REPORT_TABLE_REPLAY_PERIODS);
  fprintf(md, "\n");
}

static long long jint(const json_t *o, const char *key) {
  return (long long)json_integer_value(json_object_get(o, key));
}

/* Per policy and SLO class: how its requests were served (the counts add up to the
 * class's requests), and what its savings could draw on. */
static void coverage_rows(FILE *md, const char *name, const json_t *p) {
  const json_t *classes = json_object_get(p, "classes");
  size_t i;
  json_t *c;
  json_array_foreach(classes, i, c) {
    fprintf(md, "| %s | %s | %lld | %lld | %lld | %lld | %lld | %lld |", i ? "" : name,
            json_string_value(json_object_get(c, "name")), jint(c, "requests"), jint(c, "plan"), jint(c, "chunked"),
            jint(c, "fallback"), jint(c, "chunked+fallback"), jint(c, "unservable"));
    report_md_cell(md, report_jget(c, "slo_attainment", NULL), 100, "%.2f");
    report_md_cell(md, report_jget(c, "ttft_slack_mean", NULL), 100, "%.1f");
    report_md_cell(md, report_jget(c, "tpot_slack_mean", NULL), 100, "%.1f");
    if (i == 0) {
      report_md_cell(md, report_jget(p, "fastest_time_share", "prefill"), 100, "%.1f");
      report_md_cell(md, report_jget(p, "fastest_time_share", "decode"), 100, "%.1f");
      report_md_cell(md, report_jget(p, "padding", "prefill"), 1, "%.3f");
      report_md_cell(md, report_jget(p, "padding", "decode"), 1, "%.3f");
    } else {
      fprintf(md, " | | | |");
    }
    fprintf(md, "\n");
  }
}

static void md_coverage(FILE *md, const json_t *pols) {
  long long unservable = 0;
  const char *name;
  json_t *p;
  json_object_foreach((json_t *)pols, name, p) unservable += jint(p, "unservable");
  fprintf(
      md,
      "Every request is in the SLO attainment and the energy. Per SLO class (by input length): served on "
      "compiled plans only (plan), its prefill beyond the largest seq bucket run in chunks (chunked), a decode "
      "pass beyond the largest seq bucket run at " ENPU_POLICY_DISPLAY_NODVFS
      " on the extrapolated fallback (fallback; a short "
      "request batched with a long one rides its passes), or both; unservable requests (KV beyond every "
      "compiled bucket's) are not run and count as misses: %lld here. Why savings differ between traces: the "
      "mean SLO slack left per class (" ENPU_POLICY_NAME_NODVFS
      "'s row is the slack there is to spend), the share of busy time "
      "at the fastest plan (0 %% slack used: no saving there; safeguard 2's locks and the fallback count "
      "here), and the padding (padded tokens per token run; decode: per token generated).\n\n"
      "| policy | class | requests | plan | chunked | fallback | both | unservable | SLO attainment (%%) | "
      "TTFT slack (%%) | TPOT slack (%%) | busy time at 0 %% slack prefill (%%) | decode (%%) | padding prefill "
      "| padding decode |\n|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n",
      unservable);
  json_object_foreach((json_t *)pols, name, p) coverage_rows(md, name, p);
  fprintf(md, "\n");
}

/* One step of a fleet split: the run, its energy, what it saves over the run before. */
static void fleet_step(FILE *md, const char *step, const char *run, const json_t *pols, double base_j,
                       double *prev_j) {
  const json_t *p = json_object_get(pols, run);
  const double e = report_jget(p, "energy_j", "total");
  fprintf(md, "| %s | `%s` | %.1f | %.1f | %.3f |\n", step, run, e * 1e-6, 100 * (*prev_j - e) / base_j,
          100 * report_jget(p, "slo_attainment", NULL));
  *prev_j = e;
}

/* The total saving of a policy with its fleet (enpu replay --fleet: runs X, X@M and
 * X@M+as beside nodvfs) split into what the plans, the idle mode and autoscaling each
 * add, in that order (docs/fleet.md; tools/fleet_split.py gives the other order too). */
static void md_fleet(FILE *md, const json_t *pols) {
  const double base_j = report_jget(json_object_get(pols, config_policy_name(CONFIG_POLICY_NODVFS)), "energy_j",
                                    "total");
  if (!(base_j > 0)) return;
  bool header = false;
  const char *name;
  json_t *p;
  json_object_foreach((json_t *)pols, name, p) {
    const json_t *fleet = json_object_get(p, "fleet");
    const char *mode = json_string_value(json_object_get(fleet, "idle_mode"));
    const size_t len = strlen(name);
    if (!mode || len < 4 || strcmp(name + len - 3, "+as") || !strchr(name, '@')) continue;
    char base[128], idle[128];
    snprintf(base, sizeof base, "%.*s", (int)(strchr(name, '@') - name), name);
    snprintf(idle, sizeof idle, "%.*s", (int)(len - 3), name);
    if (!json_object_get(pols, base) || !json_object_get(pols, idle)) continue;
    if (!header)
      fprintf(md,
              "The total saving against " ENPU_POLICY_NAME_NODVFS
              " always on, split into the compiled plans, the idle mode and "
              "autoscaling, each step's run adding one to the one before:\n\n| step | run | energy (MJ) | "
              "step saves (%% of " ENPU_POLICY_NAME_NODVFS ") | SLO attainment (%%) |\n|---|---|---:|---:|---:|\n");
    header = true;
    double prev_j = base_j;
    char label[160];
    fleet_step(md, "plans", base, pols, base_j, &prev_j);
    snprintf(label, sizeof label, "idle mode %s", mode);
    fleet_step(md, label, idle, pols, base_j, &prev_j);
    fleet_step(md, "autoscaling", name, pols, base_j, &prev_j);
    fprintf(md, "| total | `%s` | %.1f | %.1f | |\n", name, prev_j * 1e-6, 100 * (base_j - prev_j) / base_j);
  }
  if (header) fprintf(md, "\n");
}

/* Tables from summary.json, when the directory has one; *origin_h its time of day. */
static void md_tables(FILE *md, const char *dir, double *origin_h, const report_overlay *overlay) {
  char path[PATH_MAX];
  snprintf(path, sizeof path, "%s/summary.json", dir);
  json_t *doc = report_summary_json(path);
  json_t *pols = json_object_get(doc, "policies");
  *origin_h = isfinite(report_jget(doc, "origin_time_of_day_h", NULL))
                  ? report_jget(doc, "origin_time_of_day_h", NULL)
                  : 0;
  if (!json_is_object(pols)) {
    fprintf(md, "No summary tables: %s is missing or has no \"policies\" object.\n\n", path);
  } else {
    report_md_policy_table(md,
                           "| policy | requests | SLO attainment (%) | energy (J) | savings with idle: total / "
                           "prefill / decode (%) | busy-only savings: total / prefill / decode (%) | batches "
                           "slowed | given a less aggressive plan by safeguard 1 | locked to peak (safeguard 2) |\n"
                           "|---|---:|---:|---:|---:|---:|---:|---:|---:|\n",
                           pols, summary_row);
    md_periods(md, pols, overlay);
    md_coverage(md, pols);
    md_fleet(md, pols);
  }
  json_decref(doc);
}

int report_replay_section(const report_ctx *r, FILE *md, const char *dir, enpu_err *err) {
  fprintf(md, "## 5. Replay: energy and SLOs over time (Figures 22 and 5)\n\n");
  if (!dir) {
    fprintf(md, "Not shown: no replay given (`enpu report STORE --replay DIR`, DIR from "
                "`enpu replay --out DIR`).\n\n");
    return ENPU_OK;
  }
  window_series s[REPLAY_MAX_POLICIES];
  size_t n = 0;
  int rc = load_series(dir, s, &n, err);
  double origin_h = 0;
  char *tables = NULL;
  size_t tables_len = 0;
  FILE *tf = rc == 0 ? open_memstream(&tables, &tables_len) : NULL;
  if (rc == 0 && !tf) rc = enpu_errorf(err, ENPU_ERR_NOMEM, "out of memory (replay tables)");
  if (tf) md_tables(tf, dir, &origin_h, r->overlay), fclose(tf);
  const long base = rc == 0 ? baseline_series(s, n) : -1;
  if (rc == 0) rc = plot_fig22(r, s, n, base, origin_h, err);
  if (rc == 0) rc = plot_fig5(r, &s[base >= 0 ? base : 0], origin_h, err);
  if (rc == 0)
    fprintf(md,
            "The replay in `%s`, per 5-minute window: SLO attainment per phase of every policy, and each "
            "policy's energy savings against " ENPU_POLICY_NAME_NODVFS
            " in the same window, busy batches only and with idle chips "
            "(Figure 22); the SLO slack of the requests finished in each window (Figure 5, %s).\n\n"
            "![replay per window](replay_energy.png)\n\n![SLO slack per window](replay_slack.png)\n\n%s",
            dir, s[base >= 0 ? base : 0].policy, tables ? tables : "");
  free(tables);
  for (size_t i = 0; i < n; i++) free(s[i].w);
  return rc;
}
