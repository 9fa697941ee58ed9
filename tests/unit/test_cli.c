/* test_cli.c — the option parser (cli_args.c) on a table of every type, and every
 * subcommand's real table: each option documented in its --help, and each checked value
 * refused with exit status 2 and a message naming the option and what it expected; the
 * reader's request limits, which `enpu query` checks, equal a job's. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli_internal.h"
#include "planstore.h"

/* ---- a table of every type ------------------------------------------------------ */

typedef struct {
  const char *path, *name;
  cli_strings extra;
  int flag, count, mode, batch, custom_calls;
  uint64_t seed;
  double seconds, slack;
  cli_numbers list, whole;
} t_args;

static const char *const modes[] = {"fast", "slow", "exact", NULL};

static int accept_name(const char *v, void *args, char *expected, size_t len) {
  return strncmp(v, "ok", 2) ? cli_reject(expected, len, "a name starting with ok") : 0;
}

static int accept_custom(const char *v, void *args, char *expected, size_t len) {
  ((t_args *)args)->custom_calls++;
  return strcmp(v, "bad") ? 0 : cli_reject(expected, len, "anything but bad");
}

/* clang-format off */
static const cli_opt t_opts[] = {
    {.name = "flag", .alias = 'f', .type = CLI_FLAG, .at = offsetof(t_args, flag), .help = "a flag"},
    {.name = "count", .type = CLI_INT, .at = offsetof(t_args, count), .meta = "N", .range = CLI_RANGE(1, 8),
     .help = "a count"},
    {.name = "seed", .type = CLI_U64, .at = offsetof(t_args, seed), .meta = "S", .range = CLI_AT_LEAST(0),
     .help = "a seed"},
    {.name = "seconds", .type = CLI_DOUBLE, .at = offsetof(t_args, seconds), .meta = "SEC", .range = CLI_ABOVE(0),
     .help = "a time\nover two lines"},
    {.name = "slack", .type = CLI_DOUBLE, .at = offsetof(t_args, slack), .meta = "X",
     .range = CLI_CONFIG_RANGE("job", "$.slacks[]"), .help = "a slack"},
    {.name = "batch", .type = CLI_INT, .at = offsetof(t_args, batch), .meta = "B",
     .range = CLI_CONFIG_RANGE("job", "$.phases.*.batch[]"), .flags = CLI_REQUIRED, .help = "a batch"},
    {.name = "mode", .type = CLI_ENUM, .at = offsetof(t_args, mode), .choices = modes, .help = "a mode"},
    {.name = "name", .type = CLI_STRING, .at = offsetof(t_args, name), .meta = "NAME", .accept = accept_name,
     .help = "a name"},
    {.name = "list", .type = CLI_LIST, .at = offsetof(t_args, list), .meta = "X,..", .range = CLI_ABOVE(0),
     .max_count = 3, .help = "numbers"},
    {.name = "whole", .type = CLI_LIST, .at = offsetof(t_args, whole), .meta = "A,B", .range = CLI_AT_LEAST(0),
     .flags = CLI_WHOLE, .min_count = 2, .max_count = 2, .help = "two integers"},
    {.name = "custom", .type = CLI_CUSTOM, .meta = "V", .accept = accept_custom, .help = "parsed by the command"},
};
/* clang-format on */

static void t_init(void *args) {
  t_args *a = args;
  a->count = 3, a->seconds = 60, a->seed = 7, a->slack = -1; /* -1: outside the range, "not given" */
}

static int t_check(const void *args, const cli_parsed *p, char *msg, size_t len) {
  const t_args *a = args;
  if (cli_has(p, "seed") && !a->flag) return cli_reject(msg, len, "--seed goes with --flag");
  return 0;
}

static const cli_spec t_spec = {
    .command = "test",
    .pos = {"PATH...", "path", 1, 3, offsetof(t_args, extra), "the paths"},
    .opts = t_opts,
    .nopts = sizeof t_opts / sizeof t_opts[0],
    .args_size = sizeof(t_args),
    .init = t_init,
    .check = t_check,
};

/* One parse of the test table: the arguments, which were given, the message. */
typedef struct {
  t_args a;
  cli_parsed p;
  char msg[512];
} t_parse;

/* Parse `words` (the arguments after the program name, split at spaces; at most 30) by
 * the test table into *t. */
static int parse(t_parse *t, const char *words) {
  static char buf[512]; /* argv points into it: the parsed strings outlive the call */
  char *argv[32] = {"enpu-test"};
  int argc = 1;
  snprintf(buf, sizeof buf, "%s", words);
  for (char *save = NULL, *w = strtok_r(buf, " ", &save); w && argc < 32; w = strtok_r(NULL, " ", &save))
    argv[argc++] = w;
  t->msg[0] = '\0';
  return cli_parse_args(&t_spec, argc, argv, 1, &t->a, &t->p, t->msg, sizeof t->msg);
}

static void test_every_type_stored(void **state) {
  (void)state;
  t_parse t;
  const t_args *a = &t.a;
  assert_int_equal(parse(&t, "p1 -f --count 8 --seed 18446744073709551615 --seconds 0.5 --slack 0.1 --batch 65536 "
                             "--mode exact --name okay --list 1,2.5,3 --whole 4,0 --custom x p2"),
                   CLI_PARSED);
  assert_int_equal(a->extra.n, 2);
  assert_string_equal(a->extra.v[0], "p1");
  assert_string_equal(a->extra.v[1], "p2");
  assert_int_equal(a->flag, 1);
  assert_int_equal(a->count, 8);
  assert_true(a->seed == UINT64_MAX);
  assert_true(a->seconds == 0.5 && a->slack == 0.1);
  assert_int_equal(a->batch, 65536);
  assert_int_equal(a->mode, 2);
  assert_string_equal(a->name, "okay");
  assert_int_equal(a->list.n, 3);
  assert_true(a->list.v[0] == 1 && a->list.v[1] == 2.5 && a->list.v[2] == 3);
  assert_int_equal(a->whole.n, 2);
  assert_true(a->whole.v[0] == 4 && a->whole.v[1] == 0);
  assert_int_equal(a->custom_calls, 1);
  assert_true(cli_has(&t.p, "seed") && cli_has(&t.p, "custom") && !cli_has(&t.p, "no-such"));
}

static void test_defaults_and_not_given(void **state) {
  (void)state;
  t_parse t;
  const t_args *a = &t.a;
  assert_int_equal(parse(&t, "--batch 1 p"), CLI_PARSED);
  assert_int_equal(a->count, 3);
  assert_true(a->seconds == 60 && a->seed == 7 && a->slack == -1);
  assert_int_equal(a->mode, -1); /* an enum without a default: not given */
  assert_null(a->name);
  assert_int_equal(a->list.n, 0);
  assert_int_equal(a->flag, 0);
  assert_true(t.p.given == (UINT64_C(1) << 5)); /* only --batch */
}

/* Each case: the arguments after the program name (split at spaces), and what the
 * message must contain. */
static void test_usage_errors(void **state) {
  (void)state;
  static const struct {
    const char *args, *needle;
  } cases[] = {
      {"p --batch 1 --count x", "--count: expected an integer in [1, 8], got 'x'"},
      {"p --batch 1 --count 9", "--count: expected an integer in [1, 8], got '9'"},
      {"p --batch 1 --count 2.0", "--count: expected an integer"},
      {"p --batch 1 --seed -1", "--seed: expected an integer >= 0, got '-1'"},
      {"p --batch 1 --seconds 0", "--seconds: expected a number > 0, got '0'"},
      {"p --batch 1 --seconds inf", "--seconds: expected a number > 0"},
      {"p --batch 1 --slack 11", "--slack: expected a number in [0, 10], got '11'"},
      {"p --batch 0", "--batch: expected an integer in [1, 65536], got '0'"},
      {"p --batch 1 --mode quick", "--mode: expected fast, slow or exact, got 'quick'"},
      {"p --batch 1 --name bad", "--name: expected a name starting with ok, got 'bad'"},
      {"p --batch 1 --list 1,0", "--list: expected a comma-separated list of 1 to 3 numbers > 0"},
      {"p --batch 1 --list 1,2,3,4", "--list: expected a comma-separated list of 1 to 3"},
      {"p --batch 1 --list 1,,2", "--list: expected"},
      {"p --batch 1 --whole 1", "--whole: expected a comma-separated list of 2 to 2 integers >= 0"},
      {"p --batch 1 --whole 1,2.5", "--whole: expected"},
      {"p --batch 1 --custom bad", "--custom: expected anything but bad, got 'bad'"},
      {"p --batch 1 --unknown", "unknown option '--unknown'"},
      {"p --batch 1 -x", "unknown option '-x'"},
      {"p --batch", "option '--batch' needs a value"},
      {"p", "missing --batch"},
      {"--batch 1", "missing path"},
      {"a b c d --batch 1", "more than 3 paths ('d')"},
      {"p --batch 1 --seed 1", "--seed goes with --flag"},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    t_parse t;
    const int st = parse(&t, cases[i].args);
    if (st != CLI_USAGE || !strstr(t.msg, cases[i].needle))
      fail_msg("case %zu: status %d, message '%s', want '%s'", i, st, t.msg, cases[i].needle);
  }
}

static void test_help_option(void **state) {
  (void)state;
  t_parse t;
  assert_int_equal(parse(&t, "--help"), CLI_HELP);
  assert_int_equal(parse(&t, "p -h --count x"), CLI_HELP);
  /* in order: an error before --help is the error */
  assert_int_equal(parse(&t, "--count x --help"), CLI_USAGE);
}

static char *help_text(const cli_spec *s) {
  char *text = NULL;
  size_t len = 0;
  FILE *f = open_memstream(&text, &len);
  assert_non_null(f);
  cli_help(s, f);
  fclose(f);
  return text;
}

static void test_help_text(void **state) {
  (void)state;
  char *h = help_text(&t_spec);
  static const char *const want[] = {
      "usage: enpu test PATH... --batch B [--flag] [--count N]",
      "  PATH...             the paths\n",
      "  -f, --flag          a flag\n",
      "  --count N           a count (in [1, 8]; default 3)\n",
      "  --seconds SEC       a time\n                      over two lines (> 0; default 60)\n",
      "  --slack X           a slack (in [0, 10])\n",
      "  --batch B           a batch (required; in [1, 65536])\n",
      "  --mode fast|slow|exact\n                      a mode\n",
      "  --seed S            a seed (>= 0; default 7)\n",
      "  -h, --help          show this help\n",
  };
  for (size_t i = 0; i < sizeof want / sizeof want[0]; i++)
    if (!strstr(h, want[i])) fail_msg("help lacks '%s':\n%s", want[i], h);
  free(h);
}

/* ---- the subcommands' tables ----------------------------------------------------- */

static bool has_range(const cli_opt *o) { return o->range.doc || o->range.min < o->range.max; }

/* A value that the row must refuse: not a number, not a choice, a list element outside
 * the range, or NULL when the row takes any text. */
static const char *bad_value(const cli_opt *o) {
  switch (o->type) {
  case CLI_INT:
  case CLI_U64:
  case CLI_DOUBLE: return "nan-x";
  case CLI_ENUM: return "no-such-choice";
  case CLI_LIST: return "1,x";
  default: return NULL;
  }
}

/* A number just outside the range, or NULL when the range has no finite side to pass. */
static const char *outside(const cli_opt *o, char *buf, size_t len) {
  if (o->range.doc || !has_range(o) || o->type == CLI_LIST) return NULL;
  const double v = o->range.min_open ? o->range.min : o->range.min - 1;
  if (o->type == CLI_U64 && v < 0) return NULL;
  snprintf(buf, len, "%.17g", v);
  return buf;
}

static void check_spec(const cli_spec *s) {
  const char *about, *exit;
  int about_len, exit_len;
  if (cli_help_section(s, &about, &about_len, &exit, &exit_len) < 0 || about_len < 20)
    fail_msg("commands.md has no section \"## %s\" with its text", s->command);
  if (!exit_len) fail_msg("commands.md: the section of %s does not end with its exit status", s->command);
  char *h = help_text(s);
  assert_true(s->nopts <= 64);
  assert_true(s->pos.max <= 1 || s->pos.max <= CLI_LIST_MAX);
  void *args = calloc(1, s->args_size);
  assert_non_null(args);
  for (int k = 0; k < s->nopts; k++) {
    const cli_opt *o = &s->opts[k];
    char name[96], buf[64], msg[512];
    snprintf(name, sizeof name, "--%s", o->name);
    if (!strstr(h, name)) fail_msg("enpu %s --help does not name %s:\n%s", s->command, name, h);
    if (!o->help || !o->help[0]) fail_msg("enpu %s %s has no help", s->command, name);
    for (int j = 0; j < k; j++)
      if (!strcmp(s->opts[j].name, o->name)) fail_msg("enpu %s: %s twice", s->command, name);
    const bool numeric = o->type == CLI_INT || o->type == CLI_U64 || o->type == CLI_DOUBLE || o->type == CLI_LIST;
    if (numeric && !has_range(o)) fail_msg("enpu %s %s has no range", s->command, name);
    if (o->type == CLI_ENUM && (!o->choices || !o->choices[0]))
      fail_msg("enpu %s %s: no choices", s->command, name);
    if (o->type == CLI_CUSTOM && !o->accept) fail_msg("enpu %s %s: custom without accept", s->command, name);
    const char *bad[2] = {bad_value(o), outside(o, buf, sizeof buf)};
    for (int b = 0; b < 2; b++) {
      if (!bad[b]) continue;
      char *argv[] = {(char *)s->command, name, (char *)bad[b]};
      cli_parsed p;
      const int st = cli_parse_args(s, 3, argv, 1, args, &p, msg, sizeof msg);
      char want[128];
      snprintf(want, sizeof want, "%s: expected ", name);
      if (st != CLI_USAGE || !strstr(msg, want) || !strstr(msg, bad[b]))
        fail_msg("enpu %s %s %s: status %d, message '%s'", s->command, name, bad[b], st, msg);
    }
  }
  free(args);
  free(h);
}

static void test_every_subcommand_table(void **state) {
  (void)state;
  int nspecs = 0;
  for (int c = 0; c < cli_ncommands; c++)
    for (int k = 0; cli_commands[c].specs[k]; k++, nspecs++) check_spec(cli_commands[c].specs[k]);
  assert_true(nspecs >= cli_ncommands);
}

/* planstore.h's limits (planstore_parse_arg, so enpu query and the Python package) are a
 * job's (config_ranges.c): a lookup refuses no request a store can hold, and a store
 * holds no bucket or slack beyond what a lookup takes. */
static void test_planstore_limits_are_the_jobs(void **state) {
  (void)state;
  enpu_err err = {0};
  const struct {
    const char *path;
    double max;
  } rows[] = {{"$.phases.*.batch[]", PLANSTORE_MAX_BATCH},
              {"$.phases.*.seq[]", PLANSTORE_MAX_SEQ},
              {"$.slacks[]", PLANSTORE_MAX_SLACK}};
  for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
    assert_int_equal(config_range_check("job", rows[i].path, rows[i].max, &err), 0);
    assert_int_not_equal(config_range_check("job", rows[i].path, nextafter(rows[i].max, INFINITY), &err), 0);
  }
  double v = 0;
  assert_int_equal(planstore_parse_arg(PLANSTORE_ARG_SLACK, "1000%", &v, &err), 0);
  assert_true(v == PLANSTORE_MAX_SLACK);
  assert_int_equal(planstore_parse_arg(PLANSTORE_ARG_BATCH, "65536", &v, &err), 0);
  assert_int_equal(planstore_parse_arg(PLANSTORE_ARG_BATCH, "65537", &v, &err), ENPU_ERR_INVALID);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_every_type_stored),
      cmocka_unit_test(test_defaults_and_not_given),
      cmocka_unit_test(test_usage_errors),
      cmocka_unit_test(test_help_option),
      cmocka_unit_test(test_help_text),
      cmocka_unit_test(test_every_subcommand_table),
      cmocka_unit_test(test_planstore_limits_are_the_jobs),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
