/* test_paper.c — `enpu report paper`'s refusals: a manifest that is not what
 * the pipeline writes, or that names an output that is not there, is an error naming the
 * file and the JSON key, and nothing is written. (The README's numbers against the
 * stores: tests/integration/test_paper.py.) */
#include "test_paper.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "paper.h"

#define NUMBERS ENPU_SOURCE_DIR "/jobs/paper/paper-numbers.json"

/* Write `text` as <dir>/<name>; dir is made once per test. */
static void put(const char *dir, const char *name, const char *text, char *path, size_t cap) {
  snprintf(path, cap, "%s/%s", dir, name);
  FILE *f = fopen(path, "w");
  assert_non_null(f);
  fputs(text, f);
  fclose(f);
}

static const char *const GOOD_HEAD =
    "{\"model\": \"m\", \"job\": \"job.json\", \"request\": {\"prefill\": {\"batch\": 1, \"seq\": 64}},\n"
    " \"table7\": {\"slack\": 0.2, \"budget\": \"paper\"}, \"timings\": \"timings.json\",\n";

typedef struct {
  const char *name, *tail, *expect;
} bad_manifest;

static const bad_manifest cases[] = {
    {"no runs", "\"compile\": [], \"graph\": [], \"replays\": []}", "$.runs: expected an array"},
    {"run without a store",
     "\"runs\": [{\"name\": \"r\", \"kind\": \"grid\", \"budget\": \"paper\", \"variant\": null, \"job\": \"j\"}],"
     " \"compile\": [], \"graph\": [], \"replays\": []}",
     "$.runs[0].store: expected a string"},
    {"variant of the wrong type",
     "\"runs\": [{\"name\": \"r\", \"kind\": \"grid\", \"budget\": \"paper\", \"variant\": 3, \"store\": \"s\", "
     "\"job\": \"j\"}], \"compile\": [], \"graph\": [], \"replays\": []}",
     "$.runs[0]: expected \"variant\": a name or null"},
    {"compile output missing",
     "\"runs\": [], \"compile\": [{\"phase\": \"prefill\", \"policy\": \"enpu-all\", \"file\": \"nope.json\"}], "
     "\"graph\": [], \"replays\": []}",
     "nope.json"},
    {"graph of an unknown phase",
     "\"runs\": [], \"compile\": [], \"graph\": [{\"phase\": \"both\", \"seq\": 1, \"file\": \"g.json\"}], "
     "\"replays\": []}",
     "$.graph[0]: expected phase prefill or decode"},
};

static void test_bad_manifests(void **state) {
  (void)state;
  char dir[] = "/tmp/test_report_paper.XXXXXX";
  assert_non_null(mkdtemp(dir));
  char timings[256], out[300];
  put(dir, "timings.json", "{}", timings, sizeof timings);
  snprintf(out, sizeof out, "%s/out", dir);
  for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
    char text[2048], path[256];
    snprintf(text, sizeof text, "%s%s", GOOD_HEAD, cases[i].tail);
    put(dir, "manifest.json", text, path, sizeof path);
    const char *manifests[] = {path};
    const paper_options o = {.out_dir = out, .numbers_path = NUMBERS, .manifests = manifests, .nmanifests = 1};
    enpu_err err = {0};
    const int rc = paper_write(&o, &err);
    if (rc >= 0 || !strstr(err.msg, cases[i].expect) || (strstr(cases[i].expect, "$.") && !strstr(err.msg, path)))
      fail_msg("%s: rc %d, \"%s\" (want \"%s\")", cases[i].name, rc, err.msg, cases[i].expect);
    char readme[320];
    snprintf(readme, sizeof readme, "%s/README.md", out);
    assert_int_not_equal(access(readme, F_OK), 0); /* nothing written */
    unlink(path);
  }
  unlink(timings);
  rmdir(out);
  rmdir(dir);
}

static void test_no_manifest(void **state) {
  (void)state;
  const paper_options o = {.out_dir = "/tmp", .numbers_path = NUMBERS};
  enpu_err err = {0};
  assert_int_equal(paper_write(&o, &err), ENPU_ERR_INVALID);
  assert_non_null(strstr(err.msg, "manifest"));
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_bad_manifests),
      cmocka_unit_test(test_no_manifest),
  };
  return cmocka_run_group_tests_name("paper", tests, NULL, NULL) +
         _cmocka_run_group_tests("paper numbers", paper_numbers_tests, paper_numbers_ntests, NULL, NULL) +
         _cmocka_run_group_tests("paper refs", paper_refs_tests, paper_refs_ntests, NULL, NULL);
}
