/* report_sweep.c — the plot of a load sweep: per policy, SLO attainment, energy savings
 * against nodvfs (busy-only and with idle) and pool utilisation against the request
 * rate, from the JSON document replay_sweep_json makes (the report module reads replay
 * results as documents and files, never through the replay's structs). */
#include <math.h>
#include <string.h>

#include "report_internal.h"

#define SWEEP_FIELDS 7
static const char *const fields[SWEEP_FIELDS] = {"slo_attainment",     "savings_busy", "savings",
                                                 "util_prefill",       "util_decode",  "util_prefill_busiest",
                                                 "util_decode_busiest"};

static double num_at(const json_t *series, size_t i) {
  const json_t *v = json_array_get(series, i);
  return json_is_number(v) ? json_number_value(v) : NAN;
}

static int write_dat(const char *dir, const json_t *sweep, enpu_err *err) {
  const json_t *rates = json_object_get(sweep, "rates"), *pols = json_object_get(sweep, "policies");
  ENPU_RETURN_IF(!json_is_array(rates) || !json_is_object(pols), err, ENPU_ERR_FORMAT,
                 "sweep document without \"rates\" and \"policies\"");
  FILE *f = NULL;
  ENPU_FORWARD(report_file_open(dir, "sweep.dat", &f, err));
  fprintf(f, "# load sweep: rate, then per policy (%%): SLO attainment, savings busy-only, savings with idle,"
             " prefill busy, decode slots filled, the same two in the busiest 5-minute window\n# rate");
  const char *name;
  const json_t *p;
  json_object_foreach((json_t *)pols, name, p) fprintf(f, " %s(%d)", name, SWEEP_FIELDS);
  fprintf(f, "\n");
  for (size_t r = 0; r < json_array_size(rates); r++) {
    fprintf(f, "%g", num_at(rates, r));
    json_object_foreach((json_t *)pols, name, p) {
      for (int k = 0; k < SWEEP_FIELDS; k++) fprintf(f, " %.6f", 100 * num_at(json_object_get(p, fields[k]), r));
    }
    fprintf(f, "\n");
  }
  return report_file_close(f, dir, "sweep.dat", err);
}

/* One panel: field k of every policy (but nodvfs when `skip_base`). */
static void gp_panel(FILE *f, const json_t *pols, int k, bool skip_base, const char *title, const char *ylabel) {
  fprintf(f, "set title '%s'\nset ylabel '%s'\nplot", title, ylabel);
  const char *name;
  const json_t *p;
  size_t i = 0, drawn = 0;
  json_object_foreach((json_t *)pols, name, p) {
    if (!(skip_base && config_policy_named(name, CONFIG_POLICY_NODVFS)))
      fprintf(f, "%s 'sweep.dat' using 1:%zu with linespoints lw 2 title '%s'", drawn++ ? ", \\\n    " : " ",
              2 + SWEEP_FIELDS * i + (size_t)k, name);
    i++;
  }
  if (!drawn) fprintf(f, " NaN notitle");
  fprintf(f, "\n");
}

int report_sweep(const char *dir, const json_t *sweep, const char *gnuplot, enpu_err *err) {
  char absdir[PATH_MAX];
  ENPU_FORWARD(report_absolute_dir(dir, absdir, sizeof absdir, err));
  ENPU_FORWARD(write_dat(dir, sweep, err));
  const json_t *pols = json_object_get(sweep, "policies");
  FILE *f = NULL;
  ENPU_FORWARD(report_file_open(dir, "sweep.gp", &f, err));
  report_gp_preamble(f, "sweep.png", 1200, "load sweep");
  /* one right margin for every panel: the stacked rate axes line up whatever each key's width */
  fprintf(f, "set multiplot layout 4,1\nset xlabel 'request rate (x the trace)'\nset logscale x 2\n"
             "set key outside right top\nset rmargin at screen 0.70\n");
  gp_panel(f, pols, 0, false, "SLO attainment", "SLO attainment (%)");
  gp_panel(f, pols, 1, true, "energy savings vs " ENPU_POLICY_NAME_NODVFS ", busy batches only", "savings (%)");
  gp_panel(f, pols, 2, true, "energy savings vs " ENPU_POLICY_NAME_NODVFS ", with idle chips and KV transfers",
           "savings (%)");
  /* Utilisation hardly depends on the policy: nodvfs's (or the first policy's). */
  size_t i = 0, base = 0;
  const char *name;
  const json_t *p;
  json_object_foreach((json_t *)pols, name, p) {
    if (config_policy_named(name, CONFIG_POLICY_NODVFS)) base = i;
    i++;
  }
  static const char *const what[4] = {"prefill busy", "decode slots filled", "prefill busy, busiest window",
                                      "decode slots, busiest window"};
  fprintf(f, "set title 'pool utilisation'\nset ylabel 'utilisation (%%)'\nplot");
  for (int k = 0; k < 4; k++)
    fprintf(f, "%s 'sweep.dat' using 1:%zu with linespoints lw 2 %s title '%s'", k ? ", \\\n    " : " ",
            2 + SWEEP_FIELDS * base + 3 + (size_t)k, k < 2 ? "" : "dt 2", what[k]);
  fprintf(f, "\nunset multiplot\n");
  ENPU_FORWARD(report_file_close(f, dir, "sweep.gp", err));
  return report_run_gnuplot(gnuplot ? gnuplot : "gnuplot", absdir, "sweep.gp", "sweep.png", err);
}
