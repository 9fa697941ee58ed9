/* report_paper_md.c — the claims tables of the paper's README: per claim the paper's number
 * (or range, or bound) with its section, ours in each column (budget mode `paper`, the
 * comparable one; `strict`, what a runtime gets; each named sensitivity), the gap, and a
 * line naming the measured reason for every gap over 5 points; and the figure sections
 * that show per-run plots beside the claims of that figure.
 *
 * Invariants: gaps are ours − paper in the claim's unit; only percentages and points are
 * held to the 5-point rule (counts and seconds get a ratio); a bound ("<", ">") holds or
 * fails. A missing value prints why it is missing, never a number. */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "report_paper_internal.h"

#define MAX_COLUMNS 6

static bool is_points(const char *unit) { return !strcmp(unit, "%") || !strcmp(unit, "pts"); }

static void number(FILE *md, double v, const char *unit) {
  if (is_points(unit)) fprintf(md, "%.2f", v);
  else if (fabs(v) >= 1000) fprintf(md, "%.0f", v);
  else fprintf(md, "%.3g", v);
}

void paper_md_value(FILE *md, const paper_value *v, const char *unit) {
  if (!v->ok) {
    fprintf(md, "*missing: %s*", v->note);
    return;
  }
  if (v->lo != v->hi) fprintf(md, "[");
  number(md, v->lo, unit);
  if (v->lo != v->hi) fprintf(md, ", "), number(md, v->hi, unit), fprintf(md, "]");
  if (unit[0] && strcmp(unit, "pts")) fprintf(md, " %s", unit);
}

static void paper_number(FILE *md, const config_paper_claim *c) {
  const paper_value p = {.ok = 1, .lo = c->paper_lo, .hi = c->paper_hi};
  if (c->relation != '=') fprintf(md, "%c ", c->relation);
  paper_md_value(md, &p, c->unit);
}

/* Signed distance of ours from the paper's (interval to interval, 0 when they meet). */
typedef struct {
  double lo, hi; /* ours − paper at each end; equal when either side is one number */
  bool over, fails, ratio;
} gap_t;

static gap_t gap_of(const config_paper_claim *c, const paper_value *v) {
  gap_t g = {0};
  if (c->relation == '<') g.fails = !(v->hi < c->paper_lo);
  if (c->relation == '>') g.fails = !(v->lo > c->paper_lo);
  if (c->relation != '=') return g;
  if (!is_points(c->unit)) {
    g.ratio = true;
    g.lo = g.hi = (v->lo + v->hi) / (c->paper_lo + c->paper_hi);
    return g;
  }
  if (v->lo != v->hi && c->paper_lo != c->paper_hi) g.lo = v->lo - c->paper_lo, g.hi = v->hi - c->paper_hi;
  else if (v->lo != v->hi) g.lo = g.hi = c->paper_lo < v->lo ? v->lo - c->paper_lo : c->paper_lo > v->hi ? v->hi - c->paper_lo : 0;
  else g.lo = g.hi = v->lo < c->paper_lo ? v->lo - c->paper_lo : v->lo > c->paper_hi ? v->lo - c->paper_hi : 0;
  g.over = fmax(fabs(g.lo), fabs(g.hi)) > 5;
  return g;
}

static void gap_md(FILE *md, const config_paper_claim *c, const paper_value *v, gap_t g) {
  if (!v->ok) fprintf(md, "—");
  else if (c->relation != '=') fprintf(md, g.fails ? "**fails** ✗" : "holds");
  else if (g.ratio) fprintf(md, "×%.3g", g.lo);
  else if (g.lo != g.hi) fprintf(md, "%+.2f / %+.2f%s", g.lo, g.hi, g.over ? " ✗" : "");
  else fprintf(md, "%+.2f%s", g.lo, g.over ? " ✗" : "");
}

/* The columns: paper mode, strict mode, then paper mode on each sensitivity's chip. */
static int columns(const paper_ctx *x, paper_column *cols, char (*names)[96]) {
  const char *variants[MAX_COLUMNS];
  const int nv = paper_variants(x, variants, MAX_COLUMNS - 2);
  int n = 0;
  cols[n] = (paper_column){"paper", ""}, snprintf(names[n++], 96, "ours, `paper` mode");
  cols[n] = (paper_column){"strict", ""}, snprintf(names[n++], 96, "ours, `strict` mode");
  for (int i = 0; i < nv; i++)
    cols[n] = (paper_column){"paper", variants[i]}, snprintf(names[n++], 96, "ours, `paper` mode, chip `%s`",
                                                             variants[i]);
  return n;
}

static bool figure_has(const char *figure, const config_paper_claim *c) { return !figure || !strcmp(figure, c->figure); }

static void claim_row(paper_ctx *x, FILE *md, const config_paper_claim *c, const paper_column *cols, int ncols,
                      bool *over) {
  if (c->claim) fprintf(md, "| (%d) | %s (%s) | ", c->claim, c->what, c->cite);
  else fprintf(md, "| | %s (%s) | ", c->what, c->cite);
  paper_number(md, c);
  *over = false;
  for (int k = 0; k < ncols; k++) {
    fprintf(md, " | ");
    if (!paper_query_has_column(&c->ours, &cols[k])) {
      fprintf(md, "— | —");
      continue;
    }
    const paper_value v = paper_eval(x, &c->ours, &cols[k]);
    const gap_t g = gap_of(c, &v);
    paper_md_value(md, &v, c->unit);
    fprintf(md, " | ");
    gap_md(md, c, &v, g);
    *over = *over || (v.ok && (g.over || g.fails));
  }
  fprintf(md, " | `%s` |\n", c->id);
}

int paper_md_claims(paper_ctx *x, FILE *md, const char *figure, enpu_err *err) {
  (void)err;
  paper_column cols[MAX_COLUMNS];
  char names[MAX_COLUMNS][96];
  const int ncols = columns(x, cols, names);
  fprintf(md, "| # | stated by the paper (section) | paper |");
  for (int k = 0; k < ncols; k++) fprintf(md, " %s | gap |", names[k]);
  fprintf(md, " id |\n|---|---|---:|");
  for (int k = 0; k < ncols; k++) fprintf(md, "---:|---:|");
  fprintf(md, "---|\n");
  const config_paper *p = x->numbers;
  bool *over = calloc((size_t)p->nclaims + 1, sizeof *over);
  for (int i = 0; i < p->nclaims; i++)
    if (figure_has(figure, &p->claims[i])) claim_row(x, md, &p->claims[i], cols, ncols, &over[i]);
  fprintf(md, "\nGap: ours − paper (in points for percentages; ×: our value over the paper's for counts and "
              "times); ✗: more than 5 points apart, or a stated bound that fails. *missing*: the pipeline has "
              "no such output in this build (the note says which).\n\n");
  for (int i = 0; over && i < p->nclaims; i++) {
    if (!over[i] || !figure_has(figure, &p->claims[i])) continue;
    const config_paper_claim *c = &p->claims[i];
    fprintf(md, "- `%s`: %s\n", c->id, c->why[0] ? c->why : "no measured decomposition of this gap yet");
  }
  fprintf(md, "\n");
  free(over);
  return ENPU_OK;
}

/* ---- figure sections --------------------------------------------------------------- */

/* An image of the output folder, or a note when the pipeline did not draw it. */
void paper_md_image(paper_ctx *x, FILE *md, const char *rel, const char *alt) {
  char path[PATH_MAX * 2];
  snprintf(path, sizeof path, "%s/%s", x->o->out_dir, rel);
  if (access(path, R_OK) == 0) fprintf(md, "![%s](%s)\n\n", alt, rel);
  else fprintf(md, "*missing: `%s` (not drawn in this build)*\n\n", rel);
}

/* The section of a figure: heading, text, the per-run images and the figure's claims. */
int paper_md_figure(paper_ctx *x, FILE *md, const char *figure, const char *heading, const char *text,
                    const char *const *images, int nimages, enpu_err *err) {
  fprintf(md, "## %s\n\n%s\n\n", heading, text);
  for (int i = 0; i < nimages; i++) paper_md_image(x, md, images[i], images[i]);
  bool any = false;
  for (int i = 0; i < x->numbers->nclaims; i++) any = any || !strcmp(x->numbers->claims[i].figure, figure);
  return any ? paper_md_claims(x, md, figure, err) : ENPU_OK;
}
