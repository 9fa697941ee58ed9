/* report_replay.c — section 4 of the report (Figure 22): energy over time of a replay,
 * from the per-window CSVs (`windows_<policy>.csv`) and summary.json that
 * `enpu replay --out DIR` writes. Columns are found by their header names, so added
 * columns do not matter and a missing one is an error naming the file and column.
 * Windows of different policies are aligned by index: the runs replay the same trace, so
 * window i starts at the same time in every run (only the last one may be cut). */
#include <dirent.h>
#include <errno.h>
#include <jansson.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "report_internal.h"

#define REPLAY_MAX_POLICIES 16

/* The columns the figure needs, by header name. */
enum { COL_START, COL_LENGTH, COL_E_PREFILL, COL_E_DECODE, COL_SLO, NCOL };
static const char *const col_names[NCOL] = {"start_s", "length_s", "prefill_energy_j", "decode_energy_j",
                                            "slo_attainment"};

typedef struct {
  double hour;    /* window start, hours from the start of the run */
  double power_w; /* mean power of the window, both phases, whole cluster */
  double slo;     /* SLO attainment of the requests finished in the window, NaN if none */
} window_point;

typedef struct {
  char policy[64];
  window_point *w;
  size_t n;
} window_series;

/* Split one CSV line in place; *nf receives the field count (at most cap). */
static void split_csv(char *line, char **fields, size_t cap, size_t *nf) {
  *nf = 0;
  for (char *s = line; *nf < cap;) {
    fields[(*nf)++] = s;
    s = strchr(s, ',');
    if (!s) break;
    *s++ = '\0';
  }
}

static int parse_windows(const char *path, char *text, window_series *s, enpu_err *err) {
  char *fields[64];
  size_t nf = 0, cap = 0, line_no = 1;
  long col[NCOL];
  char *save = NULL, *line = strtok_r(text, "\n", &save);
  ENPU_RETURN_IF(!line, err, ENPU_ERR_PARSE, "%s:1: empty file, expected a header line", path);
  line[strcspn(line, "\r")] = '\0';
  split_csv(line, fields, 64, &nf);
  for (int k = 0; k < NCOL; k++) {
    col[k] = -1;
    for (size_t f = 0; f < nf; f++)
      if (!strcmp(fields[f], col_names[k])) col[k] = (long)f;
    ENPU_RETURN_IF(col[k] < 0, err, ENPU_ERR_PARSE, "%s:1: no column '%s' in the header", path, col_names[k]);
  }
  while ((line = strtok_r(NULL, "\n", &save))) {
    line_no++;
    line[strcspn(line, "\r")] = '\0';
    if (!*line) continue;
    split_csv(line, fields, 64, &nf);
    double v[NCOL];
    for (int k = 0; k < NCOL; k++) {
      char *end = NULL;
      ENPU_RETURN_IF((size_t)col[k] >= nf, err, ENPU_ERR_PARSE, "%s:%zu: %zu fields, column '%s' is field %ld",
                     path, line_no, nf, col_names[k], col[k] + 1);
      v[k] = strtod(fields[col[k]], &end);
      if (k == COL_SLO && !*fields[col[k]]) { /* empty: no request finished in the window */
        v[k] = NAN;
        continue;
      }
      ENPU_RETURN_IF(end == fields[col[k]] || *end || !isfinite(v[k]), err, ENPU_ERR_PARSE,
                     "%s:%zu: column '%s': expected a number, got '%s'", path, line_no, col_names[k],
                     fields[col[k]]);
    }
    ENPU_RETURN_IF(!(v[COL_LENGTH] > 0), err, ENPU_ERR_PARSE, "%s:%zu: length_s must be > 0", path, line_no);
    ENPU_RETURN_IF(enpu_grow((void **)&s->w, &cap, s->n + 1, sizeof *s->w) < 0, err, ENPU_ERR_NOMEM,
                   "out of memory (%s)", path);
    s->w[s->n++] = (window_point){v[COL_START] / 3600, (v[COL_E_PREFILL] + v[COL_E_DECODE]) / v[COL_LENGTH],
                                  v[COL_SLO]};
  }
  ENPU_RETURN_IF(s->n == 0, err, ENPU_ERR_PARSE, "%s: no window rows", path);
  return ENPU_OK;
}

static int name_cmp(const void *a, const void *b) {
  return strcmp(((const window_series *)a)->policy, ((const window_series *)b)->policy);
}

/* Every windows_<policy>.csv of dir, sorted by policy name. */
static int load_series(const char *dir, window_series *s, size_t *n, enpu_err *err) {
  *n = 0;
  DIR *d = opendir(dir);
  ENPU_RETURN_IF(!d, err, ENPU_ERR_IO, "replay directory %s: %s", dir, strerror(errno));
  int rc = ENPU_OK;
  for (struct dirent *e; rc == 0 && (e = readdir(d));) {
    const size_t len = strlen(e->d_name);
    if (len <= 12 || strncmp(e->d_name, "windows_", 8) || strcmp(e->d_name + len - 4, ".csv")) continue;
    if (*n == REPLAY_MAX_POLICIES) {
      rc = enpu_errorf(err, ENPU_ERR_RANGE, "%s: more than %d windows_*.csv files", dir, REPLAY_MAX_POLICIES);
      break;
    }
    window_series *w = &s[(*n)++];
    *w = (window_series){0};
    snprintf(w->policy, sizeof w->policy, "%.*s", (int)(len - 12), e->d_name + 8);
    char path[PATH_MAX], *text = NULL;
    size_t tlen = 0;
    snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
    rc = enpu_read_file(path, &text, &tlen, err);
    if (rc == 0) rc = parse_windows(path, text, w, err);
    free(text);
  }
  closedir(d);
  if (rc == 0 && *n == 0) rc = enpu_errorf(err, ENPU_ERR_IO, "replay directory %s has no windows_*.csv", dir);
  if (rc == 0) qsort(s, *n, sizeof *s, name_cmp);
  return rc;
}

/* One gnuplot panel: column `col` (of each policy's 3 columns) of every policy but
 * `skip` (-1: none). */
static void gp_panel(FILE *f, const window_series *s, size_t n, int col, long skip, const char *title,
                     const char *ylabel) {
  fprintf(f, "set title '%s'\nset ylabel '%s'\nplot", title, ylabel);
  for (size_t i = 0, k = 0; i < n; i++)
    if ((long)i != skip)
      fprintf(f, "%s 'replay_energy.dat' using 1:%zu with lines lw 2 title '%s'", k++ ? ", \\\n    " : " ",
              2 + 3 * i + (size_t)col, s[i].policy);
  fprintf(f, "\n");
}

static int plot_replay(const report_ctx *r, const window_series *s, size_t n, enpu_err *err) {
  long base = -1; /* the nodvfs series, the reference of the savings panel */
  size_t rows = 0;
  for (size_t i = 0; i < n; i++) {
    if (!strcmp(s[i].policy, "nodvfs")) base = (long)i;
    if (s[i].n > rows) rows = s[i].n;
  }
  FILE *f = NULL;
  ENPU_FORWARD(report_file_open(r->dir, "replay_energy.dat", &f, err));
  fprintf(f, "# per 5-minute window: hour, then per policy: mean cluster power (kW), energy saving vs nodvfs (%%),"
             " SLO attainment (%%)\n# hour");
  for (size_t i = 0; i < n; i++) fprintf(f, " %s_kw %s_saving %s_slo", s[i].policy, s[i].policy, s[i].policy);
  fprintf(f, "\n");
  for (size_t w = 0; w < rows; w++) {
    const window_series *hs = s;
    while (hs->n <= w) hs++; /* some series has row w: rows is the largest n */
    fprintf(f, "%.6f", hs->w[w].hour);
    for (size_t i = 0; i < n; i++) {
      const window_point *p = w < s[i].n ? &s[i].w[w] : NULL;
      const window_point *b = base >= 0 && w < s[base].n ? &s[base].w[w] : NULL;
      const double saving = p && b && b->power_w > 0 ? 100 * (1 - p->power_w / b->power_w) : NAN;
      fprintf(f, " %.6f %.6f %.6f", p ? p->power_w / 1e3 : NAN, saving, p ? 100 * p->slo : NAN);
    }
    fprintf(f, "\n");
  }
  ENPU_FORWARD(report_file_close(f, r->dir, "replay_energy.dat", err));
  ENPU_FORWARD(report_file_open(r->dir, "replay_energy.gp", &f, err));
  const int panels = base >= 0 ? 3 : 2;
  report_gp_preamble(f, "replay_energy.png", 300 * panels, "replay");
  fprintf(f, "set multiplot layout %d,1\nset xlabel 'time (hours from the start of the trace)'\n"
             "set key outside right top\n", panels);
  gp_panel(f, s, n, 0, -1, "mean cluster power per 5-minute window", "power (kW)");
  if (base >= 0) gp_panel(f, s, n, 1, base, "energy savings vs nodvfs per window", "energy savings (%)");
  gp_panel(f, s, n, 2, -1, "SLO attainment of the requests finished in the window", "SLO attainment (%)");
  fprintf(f, "unset multiplot\n");
  ENPU_FORWARD(report_file_close(f, r->dir, "replay_energy.gp", err));
  return report_run_gnuplot(r->gnuplot, r->absdir, "replay_energy.gp", "replay_energy.png", err);
}

/* The summary table from summary.json, when the directory has one. */
static void md_summary(FILE *md, const char *dir) {
  char path[PATH_MAX];
  snprintf(path, sizeof path, "%s/summary.json", dir);
  json_error_t jerr;
  json_t *doc = json_load_file(path, 0, &jerr);
  json_t *pols = json_object_get(doc, "policies");
  if (!json_is_object(pols)) {
    fprintf(md, "No summary table: %s is missing or has no \"policies\" object.\n\n", path);
    json_decref(doc);
    return;
  }
  fprintf(md, "| policy | requests | SLO attainment (%%) | energy (J) | saving vs nodvfs: total / prefill / "
              "decode (%%) | batches slowed | lowered by safeguard 1 | locked to peak (safeguard 2) |\n"
              "|---|---:|---:|---:|---:|---:|---:|---:|\n");
  const char *name;
  json_t *p;
  json_object_foreach(pols, name, p) {
    json_t *sav = json_object_get(p, "energy_savings"), *b = json_object_get(p, "batches");
    fprintf(md, "| %s | %lld | %.3f | %.1f |", name, (long long)json_integer_value(json_object_get(p, "requests")),
            100 * json_number_value(json_object_get(p, "slo_attainment")),
            json_number_value(json_object_get(json_object_get(p, "energy_j"), "total")));
    static const char *const parts[] = {"total", "prefill", "decode"};
    for (int k = 0; k < 3; k++) {
      json_t *v = json_object_get(sav, parts[k]);
      if (json_is_number(v)) fprintf(md, "%s%.3f", k ? " / " : " ", 100 * json_number_value(v));
      else fprintf(md, "%s–", k ? " / " : " ");
    }
    static const char *const counts[] = {"slowed", "safeguard1", "locked"};
    for (int k = 0; k < 3; k++)
      fprintf(md, " | %lld",
              (long long)(json_integer_value(json_object_get(json_object_get(b, "prefill"), counts[k])) +
                          json_integer_value(json_object_get(json_object_get(b, "decode"), counts[k]))));
    fprintf(md, " |\n");
  }
  fprintf(md, "\n");
  json_decref(doc);
}

int report_replay_section(const report_ctx *r, FILE *md, const char *dir, enpu_err *err) {
  fprintf(md, "## 4. Replay: energy over time (Figure 22)\n\n");
  if (!dir) {
    fprintf(md, "Not shown: no replay given (`enpu report STORE --replay DIR`, DIR from "
                "`enpu replay --out DIR`).\n\n");
    return ENPU_OK;
  }
  window_series s[REPLAY_MAX_POLICIES];
  size_t n = 0;
  int rc = load_series(dir, s, &n, err);
  if (rc == 0) rc = plot_replay(r, s, n, err);
  if (rc == 0) {
    fprintf(md, "Per 5-minute window of the replay in `%s`: mean cluster power of every policy run, each "
                "policy's energy saving against nodvfs in the same window, and SLO attainment.\n\n"
                "![replay energy](replay_energy.png)\n\n",
            dir);
    md_summary(md, dir);
  }
  for (size_t i = 0; i < n; i++) free(s[i].w);
  return rc;
}
