/* test_paper_numbers.c — the paper's stated numbers (paper_numbers_load): the shipped file
 * loads with every claim's query; a bad document is refused with file:line:column, the
 * JSON path and what was expected (an unknown or unused key of a query kind, a gain
 * without its base, a range given high first, a duplicate id, a slack in percent, a
 * "better" word on a claim without a bound). The position is found independently of the loader, by searching the
 * written text. */
#include "test_paper.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "paper.h"

static void test_shipped_numbers(void **state) {
  (void)state;
  paper_numbers *p = NULL;
  enpu_err err = {0};
  if (paper_numbers_load(ENPU_SOURCE_DIR "/jobs/paper/paper-numbers.json", &p, &err)) fail_msg("%s", err.msg);
  assert_true(p->nclaims >= 30);
  int numbered[6] = {0};
  for (int i = 0; i < p->nclaims; i++) {
    assert_true(p->claims[i].paper_lo <= p->claims[i].paper_hi);
    numbered[p->claims[i].claim]++;
  }
  for (int c = 1; c <= 5; c++) assert_true(numbered[c] > 0); /* every claim of §4's list has a row */
  const paper_claim *c0 = &p->claims[0];
  assert_string_equal(c0->id, "c1-prefill-0");
  assert_true(c0->paper_lo == 16.9 && c0->relation == '=' && c0->ours.kind == PAPER_SAVINGS);
  assert_string_equal(c0->ours.policy[0], "enpu-all");
  assert_int_equal(c0->ours.phase, CONFIG_PREFILL);
  assert_true(c0->ours.slack_sel == PAPER_SLACK_VALUE && c0->ours.slack == 0 && c0->ours.scale == 1);
  assert_int_equal(p->ntable7, 8);
  assert_int_equal(p->table7[0].npolicy, 3);
  assert_true(p->table7[0].op[1] == 15345 && p->table7[0].req[1] == 2881);
  assert_true(p->ntable5 > 0);
  /* the GA's compile time: the paper's lower bound, which a faster GA is no failure of */
  int faster = 0;
  for (int i = 0; i < p->nclaims; i++)
    if (!strcmp(p->claims[i].id, "c2-dvfsc-time"))
      faster = p->claims[i].relation == '>' && !strcmp(p->claims[i].better, "faster");
  assert_true(faster);
  assert_string_equal(c0->better, "");
  paper_numbers_free(p);
  paper_numbers_free(NULL);
}

/* The shipped file's text with `from` replaced once by `to`, written to a temporary file. */
static char *mutated(const char *from, const char *to, char *path, size_t cap) {
  FILE *f = fopen(ENPU_SOURCE_DIR "/jobs/paper/paper-numbers.json", "r");
  assert_non_null(f);
  static char text[1 << 17];
  const size_t n = fread(text, 1, sizeof text - 1, f);
  fclose(f);
  text[n] = '\0';
  char *at = strstr(text, from);
  assert_non_null(at);
  char *out = malloc(n + strlen(to) + 1);
  sprintf(out, "%.*s%s%s", (int)(at - text), text, to, at + strlen(from));
  snprintf(path, cap, "/tmp/enpu_test_paper_XXXXXX");
  const int fd = mkstemp(path);
  assert_true(fd >= 0);
  assert_int_equal(write(fd, out, strlen(out)), (ssize_t)strlen(out));
  close(fd);
  return out;
}

/* line:column of the first occurrence of needle in text (1-based), plus offset columns. */
static void where(const char *text, const char *needle, int offset, char *out, size_t cap) {
  const char *at = strstr(text, needle);
  assert_non_null(at);
  int line = 1, col = 1;
  for (const char *s = text; s < at; s++) line += *s == '\n', col = *s == '\n' ? 1 : col + 1;
  snprintf(out, cap, ":%d:%d: ", line, col + offset);
}

typedef struct {
  const char *name, *from, *to, *needle; /* needle: where the error must point */
  int offset;
  const char *path, *expect;
} bad_numbers;

static const bad_numbers bad[] = {
    {"unknown query key", "\"slack\": 0 }", "\"slack\": 0, \"slacks\": 1 }", "\"slacks\": 1", 0,
     "$.claims[0].ours.slacks", "unknown key 'slacks'"},
    {"key the kind does not read", "{ \"kind\": \"table7\", \"policy\": \"enpu-all\", \"level\": \"op\"",
     "{ \"kind\": \"table7\", \"policy\": \"enpu-all\", \"slack\": 0.2, \"level\": \"op\"", "\"slack\": 0.2", 0,
     "$.claims[6].ours.slack", "unknown key 'slack'"},
    {"gain without base", "\"base\": \"dvfs-c\", \"phase\": \"prefill\", \"slack\": \"mean\"",
     "\"phase\": \"prefill\", \"slack\": \"mean\"",
     "{ \"kind\": \"gain\", \"policy\": [\"enpu-c\", \"enpu-all\"], \"phase\"", 0, "$.claims[4].ours",
     "expected key \"base\""},
    {"range high first", "\"paper\": [8.4, 9.0]", "\"paper\": [9.0, 8.4]", "[9.0, 8.4]", 0, "$.claims[4].paper",
     "expected low <= high"},
    {"duplicate id", "\"id\": \"c1-decode-0\"", "\"id\": \"c1-prefill-0\"",
     "\"c1-prefill-0\", \"claim\": 1, \"figure\": \"11\", \"cite\": \"§4 (1); §1\",\n      \"what\": \"eNPU energy saving, decode",
     0, "$.claims[1].id", "unique id"},
    {"slack in percent", "\"slack\": 0.1 }", "\"slack\": 10.5 }", "10.5", 0, "$.claims[2].ours.slack",
     "expected a number in [0, 10]"},
    {"better without a bound", "\"paper\": 16.9, \"unit\": \"%\",",
     "\"paper\": 16.9, \"unit\": \"%\", \"better\": \"faster\",", "\"faster\"", 0, "$.claims[0].better",
     "needs a bound"},
    {"unknown kind", "\"kind\": \"overhead\"", "\"kind\": \"overheads\"", "\"overheads\"", 0,
     "$.claims[14].ours.kind", "expected one of"},
};

static void test_bad_numbers(void **state) {
  (void)state;
  for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
    char path[64], at[64], want[128];
    char *text = mutated(bad[i].from, bad[i].to, path, sizeof path);
    paper_numbers *p = NULL;
    enpu_err err = {0};
    const int rc = paper_numbers_load(path, &p, &err);
    where(text, bad[i].needle, bad[i].offset, at, sizeof at);
    snprintf(want, sizeof want, "%s%s%s", path, at, bad[i].path);
    if (rc >= 0 || strncmp(err.msg, want, strlen(want)) || !strstr(err.msg, bad[i].expect))
      fail_msg("%s: rc %d, got \"%s\", want \"%s...%s\"", bad[i].name, rc, err.msg, want, bad[i].expect);
    assert_null(p);
    unlink(path);
    free(text);
  }
}

TEST_PART(paper_numbers, cmocka_unit_test(test_shipped_numbers), cmocka_unit_test(test_bad_numbers));
