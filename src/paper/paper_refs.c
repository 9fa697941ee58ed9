/* paper_refs.c — the paper's stated values (paper_numbers, jobs/paper/paper-numbers.json)
 * drawn on a report figure as reference markers, lines or bands titled "paper §x.y: ...".
 *
 * Invariants: a claim is drawn only on a figure of its own number ("figure"), of a kind that
 * figure plots (savings and gains on a slack axis, slowdown on Figure 15, the capacity sweep
 * of Figure 20), when every policy it names is one the figure draws, its phase is the
 * figure's and its model list (when it has one) holds the store's model; anything else is
 * not drawn. The markers read only the figure's own .dat (a gain is drawn on top of its
 * base's column), so the data files are the same with or without them. A "# paper
 * values:" comment in the script says what the figure is, for tools/figcheck.py, which
 * checks the markers against the same file independently. */
#include <math.h>
#include <string.h>

#include "paper_internal.h"

/* The claim's most specific section: the first "§4.x" of its citation, else its first. */
static void section(const paper_claim *cl, char *out, size_t len) {
  const char *s = strstr(cl->cite, "§4.");
  if (!s) s = cl->cite;
  size_t n = strcspn(s, ";");
  const char *q = strstr(s, " ('"); /* a quoted phrase after the section */
  if (q && (size_t)(q - s) < n) n = (size_t)(q - s);
  while (n && s[n - 1] == ' ') n--;
  snprintf(out, len, "%.*s", (int)n, s);
}

static bool has_name(const paper_refs_ctx *r, const char *name, size_t *at) {
  for (size_t i = 0; i < r->nseries; i++)
    if (!strcmp(r->series[i], name)) return *at = i, true;
  return false;
}

static bool model_ok(const paper_query *q, const char *model) {
  for (int i = 0; i < q->nmodels; i++)
    if (model && !strcmp(q->models[i], model)) return true;
  return q->nmodels == 0;
}

/* Does claim `cl` of kind `kind` belong on this figure? *p receives its policy's series
 * index, *b its base's (gains). */
static bool applies(const paper_refs_ctx *r, const paper_claim *cl, paper_kind kind, size_t *p, size_t *b) {
  const paper_query *q = &cl->ours;
  if (strcmp(cl->figure, r->figure) || q->kind != kind || q->npolicy != 1 || !model_ok(q, r->model)) return false;
  if (q->phase >= 0 && r->phase >= 0 && q->phase != r->phase) return false;
  if (!has_name(r, q->policy[0], p)) return false;
  if (kind == PAPER_GAIN) return q->slack_sel != PAPER_SLACK_MAX && has_name(r, q->base, b);
  return true;
}

void paper_refs_context(FILE *gp, const paper_refs_ctx *r) {
  if (!r->numbers) return;
  fprintf(gp, "# paper values: %s figure %s phase %s model %s policies ", r->numbers->path, r->figure,
          r->phase < 0 ? "both"
          : r->phase   ? "decode"
                       : "prefill",
          r->model && *r->model ? r->model : "-");
  for (size_t i = 0; i < r->nseries; i++) fprintf(gp, "%s%s", i ? "," : "", r->series[i]);
  fprintf(gp, "\n");
}

/* The key title of a claim's marker; "" (notitle) when an earlier marker has the same. */
static void title(const paper_claim *cl, const char *what, char seen[][256], int *nseen, char *out, size_t len) {
  char sec[64], t[256];
  section(cl, sec, sizeof sec);
  snprintf(t, sizeof t, "paper %s: %s", sec, what);
  for (int i = 0; i < *nseen; i++)
    if (!strcmp(seen[i], t)) {
      snprintf(out, len, "notitle");
      return;
    }
  if (*nseen < REPORT_MAX_SERIES) snprintf(seen[(*nseen)++], sizeof seen[0], "%s", t);
  snprintf(out, len, "title '%s'", t);
}

static const char *agg_note(const paper_claim *cl) {
  if (cl->relation == '<') return " (below)";
  if (cl->relation == '>') return " (above)";
  if (cl->ours.nmodels) return "";
  static const char *const notes[PAPER_NAGG] = {", model mean", ", range", ", up to", ", min"};
  return notes[cl->ours.agg];
}

static int point_type(char relation) { return relation == '<' ? 11 : relation == '>' ? 9 : 13; }

/* A value or a range at one x: a marker (with an error bar over a range). `y` is a gnuplot
 * expression of the value's offset (0, or a base column) the claim's numbers add to. */
static void mark(FILE *gp, const char *dat, const char *x, const char *sel, const char *y, const paper_claim *cl,
                 const char *t) {
  if (cl->paper_lo == cl->paper_hi)
    fprintf(gp, ", \\\n    '%s'%s using %s:(%s + %g) with points pt %d ps 2 lc rgb 'black' %s", dat, sel, x, y,
            cl->paper_lo, point_type(cl->relation), t);
  else
    fprintf(gp,
            ", \\\n    '%s'%s using %s:(%s + %g):(%s + %g):(%s + %g) with yerrorbars pt %d ps 1.5 lw 2 "
            "lc rgb 'black' %s",
            dat, sel, x, y, (cl->paper_lo + cl->paper_hi) / 2, y, cl->paper_lo, y, cl->paper_hi,
            point_type(cl->relation), t);
}

/* A value or a range over every slack: a dashed line, or a band in the colour of the
 * policy it is about. */
static void across(FILE *gp, const char *dat, const char *y, const paper_claim *cl, size_t colour, const char *t) {
  if (cl->paper_lo == cl->paper_hi)
    fprintf(gp, ", \\\n    '%s' using 1:(%s + %g) with lines dt 2 lw 2 lc %zu %s", dat, y, cl->paper_lo, colour + 1,
            t);
  else
    fprintf(gp,
            ", \\\n    '%s' using 1:(%s + %g):(%s + %g) with filledcurves fs transparent solid 0.18 noborder "
            "lc %zu %s",
            dat, y, cl->paper_lo, y, cl->paper_hi, colour + 1, t);
}

void paper_refs_slack(FILE *gp, const paper_refs_ctx *r, const char *dat) {
  char seen[REPORT_MAX_SERIES][256], t[300], what[200], y[32], x[64], sel[64];
  int nseen = 0;
  for (int i = 0; r->numbers && i < r->numbers->nclaims; i++) {
    const paper_claim *cl = &r->numbers->claims[i];
    const paper_query *q = &cl->ours;
    size_t p = 0, b = 0;
    const bool gain = r->gains && applies(r, cl, PAPER_GAIN, &p, &b);
    if (!gain && !applies(r, cl, PAPER_SAVINGS, &p, &b)) continue;
    if (nseen + r->nseries >= REPORT_MAX_SERIES) break; /* the key holds at most 8 */
    if (gain) {
      char amount[48] = "";
      if (cl->paper_lo != cl->paper_hi) snprintf(amount, sizeof amount, "+%g–%g", cl->paper_lo, cl->paper_hi);
      else if (cl->paper_lo != 0) snprintf(amount, sizeof amount, "+%g", cl->paper_lo);
      snprintf(what, sizeof what, "%s %c %s%s", q->policy[0], cl->relation, q->base, amount);
      snprintf(y, sizeof y, "column(%d)", r->cols[b]);
    } else if (q->slack_sel != PAPER_SLACK_VALUE) { /* a line or band: its numbers in the key */
      char v[48];
      if (cl->paper_lo != cl->paper_hi) snprintf(v, sizeof v, "%g–%g %s", cl->paper_lo, cl->paper_hi, cl->unit);
      else snprintf(v, sizeof v, "%g %s", cl->paper_lo, cl->unit);
      snprintf(what, sizeof what, "%s%s %s", q->policy[0], q->agg == PAPER_AGG_MAX ? " up to" : "", v);
      snprintf(y, sizeof y, "0");
    } else {
      snprintf(what, sizeof what, "%s%s", q->policy[0], agg_note(cl));
      snprintf(y, sizeof y, "0");
    }
    title(cl, what, seen, &nseen, t, sizeof t);
    if (q->slack_sel != PAPER_SLACK_VALUE) {
      across(gp, dat, y, cl, p, t);
      continue;
    }
    if (gain) /* the base's value at that slack: the rows of other slacks draw nothing */
      snprintf(x, sizeof x, "(abs($1 - %g) < 1e-6 ? $1 : NaN)", 100 * q->slack), sel[0] = '\0';
    else snprintf(x, sizeof x, "(%g)", 100 * q->slack), snprintf(sel, sizeof sel, " index 0 every ::0::0");
    mark(gp, dat, x, sel, y, cl, t);
  }
}

void paper_refs_at(FILE *gp, const paper_refs_ctx *r, const char *dat, paper_kind kind, const double *xs,
                   int metric) {
  char seen[REPORT_MAX_SERIES][256], t[300], what[200], x[64];
  int nseen = 0;
  for (int i = 0; r->numbers && i < r->numbers->nclaims; i++) {
    const paper_claim *cl = &r->numbers->claims[i];
    size_t p = 0, b = 0;
    if (!applies(r, cl, kind, &p, &b) || (kind == PAPER_FIGURE20 && (int)cl->ours.metric != metric)) continue;
    if (kind == PAPER_FIGURE20) { /* its key is full: the text beside the marker */
      char sec[64];
      section(cl, sec, sizeof sec);
      snprintf(x, sizeof x, "(%g)", cl->ours.factor);
      mark(gp, dat, x, " index 0 every ::0::0", "0", cl, "notitle");
      fprintf(gp,
              ", \\\n    '%s' index 0 every ::0::0 using %s:(%g):(\"    paper %s: %s %s, factor %g: %g %s\") with "
              "labels left font ',9' notitle",
              dat, x, cl->paper_lo, sec, r->series[p],
              metric == PAPER_F20_WORST ? "worst-case plan" : "saving lost", cl->ours.factor, cl->paper_lo,
              cl->unit);
      continue;
    }
    if (cl->relation != '=') /* a bound: its number in the key */
      snprintf(what, sizeof what, "%s %s %g %s", r->series[p], cl->relation == '<' ? "below" : "above",
               cl->paper_lo, cl->unit);
    else snprintf(what, sizeof what, "%s%s", r->series[p], agg_note(cl));
    snprintf(x, sizeof x, "(%g)", xs[p]);
    title(cl, what, seen, &nseen, t, sizeof t);
    mark(gp, dat, x, " index 0 every ::0::0", "0", cl, t);
  }
}

/* ---- the overlay: the report's figures described as paper_refs_ctx ------------------ */

static paper_refs_ctx refs_of(void *ctx, const report_figure *f) {
  return (paper_refs_ctx){ctx, f->figure, f->phase, f->model, f->series, f->cols, f->nseries, f->gains};
}

static void overlay_context(void *ctx, FILE *gp, const report_figure *f) {
  const paper_refs_ctx r = refs_of(ctx, f);
  paper_refs_context(gp, &r);
}

static void overlay_slack(void *ctx, FILE *gp, const report_figure *f, const char *dat) {
  const paper_refs_ctx r = refs_of(ctx, f);
  paper_refs_slack(gp, &r, dat);
}

static void overlay_marks(void *ctx, FILE *gp, const report_figure *f, const char *dat, report_mark kind,
                          const double *xs) {
  const paper_refs_ctx r = refs_of(ctx, f);
  if (kind == REPORT_MARK_SLOWDOWN) paper_refs_at(gp, &r, dat, PAPER_SLOWDOWN, xs, 0);
  else
    paper_refs_at(gp, &r, dat, PAPER_FIGURE20, xs,
                  kind == REPORT_MARK_CAPACITY_WORST ? PAPER_F20_WORST : PAPER_F20_LOSS);
}

static void overlay_note(void *ctx, FILE *md) {
  const paper_numbers *p = ctx;
  fprintf(md,
          "- The paper's stated values on the figures (keys `paper §x.y`, where the paper states one for the "
          "figure's policies, phase and model) are from `%s`.\n",
          p->path);
}

/* The paper's §4.8 numbers under the replay's peak and off-peak table (prefill / decode;
 * the peak shares are eNPU-All's). */
static void overlay_rows(void *ctx, FILE *md, report_table table) {
  (void)ctx;
  if (table != REPORT_TABLE_REPLAY_PERIODS) return;
  fprintf(md, "| paper §4.8, off-peak | " ENPU_POLICY_NAME_DVFS_C " | – | 25.8 / 33.0 | – | – | – |\n"
              "| paper §4.8, off-peak | " ENPU_POLICY_NAME_ENPU_ALL " | – | 33.0 / 42.0 | – | – | – |\n"
              "| paper §4.8, peak 14–20 h | " ENPU_POLICY_NAME_DVFS_C " | – | 23.3 / 28.1 | – | – | – |\n"
              "| paper §4.8, peak 14–20 h | " ENPU_POLICY_NAME_ENPU_ALL
              " | – | 29.7 / 35.2 | – | 12 / 10 | 2.3 / 1.1 |\n");
}

report_overlay paper_overlay(const paper_numbers *numbers) {
  if (!numbers) return (report_overlay){0};
  return (report_overlay){(void *)numbers, overlay_context, overlay_slack,
                          overlay_marks,   overlay_note,    overlay_rows};
}
