/* test_paper_refs.c — the paper's stated values on a report figure (paper_refs.c): a claim
 * is drawn where its figure, policies, phase and model are the figure's, and nowhere else;
 * gains are drawn on the base policy's column. Read against the shipped numbers file. */
#include "test_paper.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "paper_internal.h"

#define NUMBERS ENPU_SOURCE_DIR "/jobs/paper/paper-numbers.json"

static paper_numbers *numbers(void) {
  paper_numbers *p = NULL;
  enpu_err err = {0};
  if (paper_numbers_load(NUMBERS, &p, &err)) fail_msg("%s", err.msg);
  return p;
}

/* What paper_refs_slack (at == NULL) or paper_refs_at appends to a plot command. */
static char *draw(const paper_refs_ctx *r, paper_kind kind, int metric) {
  char *text = NULL;
  size_t len = 0;
  FILE *f = open_memstream(&text, &len);
  assert_non_null(f);
  paper_refs_context(f, r);
  if (kind == PAPER_NKIND) paper_refs_slack(f, r, "d.dat");
  else paper_refs_at(f, r, "d.dat", kind, NULL, metric);
  fclose(f);
  return text;
}

static void test_figure11(void **state) {
  (void)state;
  paper_numbers *p = numbers();
  const char *pols[] = {"nodvfs", "dvfs-c", "enpu-c", "enpu-all"};
  const int cols[] = {2, 5, 8, 11};
  paper_refs_ctx r = {p, "11", CONFIG_PREFILL, "llama3-70b", pols, cols, 4, false};
  char *t = draw(&r, PAPER_NKIND, 0);
  assert_non_null(strstr(t, "# paper values: " NUMBERS " figure 11 phase prefill model llama3-70b"));
  assert_non_null(strstr(t, "using (0):(0 + 16.9)"));  /* c1-prefill-0 at 0 % */
  assert_non_null(strstr(t, "using (10):(0 + 22.9)")); /* c1-prefill-10, same key entry */
  assert_non_null(strstr(t, "title 'paper §4 (1): enpu-all, model mean'"));
  assert_non_null(strstr(t, "(0 + 12.8):(0 + 19.1) with filledcurves")); /* s42-dvfsc-prefill band */
  assert_null(strstr(t, "18.6"));                                        /* decode's */
  assert_null(strstr(t, "column("));                                     /* no gain on Figure 11 */
  free(t);
  /* the grids' dvfs-c-walk is not the paper's dvfs-c, and decode has its own values */
  pols[1] = "dvfs-c-walk";
  r.phase = CONFIG_DECODE;
  t = draw(&r, PAPER_NKIND, 0);
  assert_non_null(strstr(t, "using (0):(0 + 18.6)"));
  assert_null(strstr(t, "filledcurves"));
  free(t);
  r.numbers = NULL; /* no numbers: nothing, not even the context line */
  t = draw(&r, PAPER_NKIND, 0);
  assert_string_equal(t, "");
  free(t);
  paper_numbers_free(p);
}

static void test_gains(void **state) {
  (void)state;
  paper_numbers *p = numbers();
  const char *pols[] = {"dvfs-c", "dvfs-c-ms", "enpu-all", "enpu-ms"};
  const int cols[] = {2, 3, 4, 5};
  const paper_refs_ctx r = {p, "16", CONFIG_DECODE, "deepseek-v2-236b", pols, cols, 4, true};
  char *t = draw(&r, PAPER_NKIND, 0);
  /* c3-temporal: enpu-all is enpu-ms (column 5) + 0.6..6.3, in enpu-all's colour (3) */
  assert_non_null(strstr(t, "using 1:(column(5) + 0.6):(column(5) + 6.3) with filledcurves"));
  assert_non_null(strstr(t, "noborder lc 3 title 'paper §4.6: enpu-all = enpu-ms+0.6–6.3'"));
  /* c3-spatial: enpu-ms is dvfs-c-ms (column 3) + 4.4..9.6 */
  assert_non_null(strstr(t, "using 1:(column(3) + 4.4):(column(3) + 9.6)"));
  free(t);
  const char *some[] = {"dvfs-c", "enpu-all"}; /* without the bases nothing is drawn */
  const paper_refs_ctx s = {p, "16", CONFIG_DECODE, "deepseek-v2-236b", some, cols, 2, true};
  t = draw(&s, PAPER_NKIND, 0);
  assert_null(strstr(t, "paper §"));
  free(t);
  paper_numbers_free(p);
}

static void test_figure20(void **state) {
  (void)state;
  paper_numbers *p = numbers();
  const char *pols[] = {"dvfs-c-walk", "enpu-all"};
  paper_refs_ctx r = {p, "20", CONFIG_PREFILL, "deepseek-v3-671b", pols, NULL, 2, false};
  char *t = draw(&r, PAPER_FIGURE20, PAPER_F20_WORST);
  assert_non_null(strstr(t, "using (1):(0 + 22)"));
  /* beside the marker (the figure's key holds 8 series already) */
  assert_non_null(strstr(t, "paper §4.6: enpu-all worst-case plan, factor 1: 22 %\") with labels"));
  assert_null(strstr(t, " title '"));
  assert_null(strstr(t, "4.3"));
  free(t);
  t = draw(&r, PAPER_FIGURE20, PAPER_F20_LOSS);
  assert_non_null(strstr(t, "using (1):(0 + 4.3)"));
  free(t);
  r.model = "deepseek-v2-236b"; /* the paper's values are DeepSeek-V3's */
  t = draw(&r, PAPER_FIGURE20, PAPER_F20_WORST);
  assert_null(strstr(t, "paper §"));
  free(t);
  r.model = "deepseek-v3-671b", r.phase = CONFIG_DECODE;
  t = draw(&r, PAPER_FIGURE20, PAPER_F20_WORST);
  assert_null(strstr(t, "paper §"));
  free(t);
  paper_numbers_free(p);
}

TEST_PART(paper_refs, cmocka_unit_test(test_figure11), cmocka_unit_test(test_gains),
          cmocka_unit_test(test_figure20));
