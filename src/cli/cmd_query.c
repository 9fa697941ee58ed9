/* cmd_query.c — `enpu query STORE --phase P --batch B --seq S (--target-ms T | --slack X)
 * [--policy NAME] [--json] [--vfset]`: what a serving runtime asks the plan store, through
 * the same reader it links (planstore.h): the padded bucket and its budget mode, the walk
 * prefix for the exact target, expected time and energy, savings, the lower bound, the
 * stored plan's time with V/f transitions and its overhead when the target is a stored
 * slack's budget, and per-op frequency states (lead and trail point); --vfset adds each
 * op's vf.set words (all six units, FE = max(SA, VU, SRAM), encoded by the search module). JSON field names are a
 * contract for scripts; u64 signatures are hex strings (JSON integers are signed).
 *
 * Without --policy the store's default policy answers (planstore_default_policy_index:
 * its eNPU policy) and the output says which policy that was and that it was the default.
 *
 * Exit status: 0 ok (a target below the fastest plan: the fastest plan, with a warning on
 * stderr and in the JSON); 1 the store cannot be read, or no plan (no covering bucket, a
 * failed, infeasible or not yet compiled bucket), message on stderr; 2 usage error; 4 the
 * system failed reading the store (I/O error). */
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "cli_internal.h"
#include "planstore.h"
#include "search.h"
#include "store.h"

static int run(void *args);

typedef struct {
  const char *path, *policy, *variant;
  /* batch, seq, target and slack as given: the reader's planstore_parse_arg checks them,
   * by the rules the Python package's lookups use too (one set, nothing wraps) */
  const char *batch_text, *seq_text, *target_text, *slack_text;
  cli_bucket b; /* phase as parsed; batch and seq from their text (run) */
  int json, vfset;
  double target_ms, slack; /* from their text (run); NAN: not given */
} query_args;

/* An option's text by planstore_parse_arg's rules, at parse time (before the other
 * checks of the command line, as a typed option's range). */
static int accept_arg(int which, const char *v, char *expected, size_t len) {
  double x;
  return cli_planstore_arg(which, v, &x, expected, len);
}
#define QUERY_ACCEPT(name_, which_)                                         \
  static int name_(const char *v, void *args, char *expected, size_t len) { \
    (void)args;                                                             \
    return accept_arg(which_, v, expected, len);                            \
  }
QUERY_ACCEPT(accept_batch, PLANSTORE_ARG_BATCH)
QUERY_ACCEPT(accept_seq, PLANSTORE_ARG_SEQ)
QUERY_ACCEPT(accept_target, PLANSTORE_ARG_TARGET_MS)
QUERY_ACCEPT(accept_slack, PLANSTORE_ARG_SLACK)

/* The reader's limits in the help text, so that it cannot drift from them. */
#define QUERY_TEXT_(x) #x
#define QUERY_TEXT(x) QUERY_TEXT_(x)

/* clang-format off */
static const cli_opt opts[] = {
    {.name = "phase", .type = CLI_ENUM, .at = offsetof(query_args, b.phase), .choices = cli_phase_names,
     .flags = CLI_REQUIRED, .help = "the bucket's phase"},
    {.name = "batch", .type = CLI_STRING, .at = offsetof(query_args, batch_text), .meta = "B", .accept = accept_batch,
     .flags = CLI_REQUIRED, .help = "requests in the batch (1.." QUERY_TEXT(PLANSTORE_MAX_BATCH) ")"},
    {.name = "seq", .type = CLI_STRING, .at = offsetof(query_args, seq_text), .meta = "S", .accept = accept_seq,
     .flags = CLI_REQUIRED, .help = "prompt length (prefill) or KV length (decode) (1.." QUERY_TEXT(PLANSTORE_MAX_SEQ) ")"},
    {.name = "target-ms", .type = CLI_STRING, .at = offsetof(query_args, target_text), .meta = "T",
     .accept = accept_target,
     .help = "the target time of the batch, ms (> 0)"},
    {.name = "slack", .type = CLI_STRING, .at = offsetof(query_args, slack_text), .meta = "X",
     .accept = accept_slack,
     .help = "the target as a slack: " CLI_SLACK_HELP},
    {.name = "policy", .type = CLI_STRING, .at = offsetof(query_args, policy), .meta = "NAME",
     .help = "a policy of the store (default: " ENPU_POLICY_NAME_ENPU_ALL ", else " ENPU_POLICY_NAME_ENPU_C
             ", else the first\n" ENPU_POLICY_ENPU_PREFIX "* policy, else the first but " ENPU_POLICY_NAME_NODVFS
             " and " ENPU_POLICY_NAME_UNIFORM ", by name)"},
    {.name = "variant", .type = CLI_STRING, .at = offsetof(query_args, variant), .meta = "PATH=VALUE[,...]",
     .help = "the policy on a chip variant of the store's sweep (enpu store info lists\n"
             "them), e.g. ivr.step_ns=400; paths in any order"},
    CLI_JSON_OPT(query_args, "the plan"),
    {.name = "vfset", .type = CLI_FLAG, .at = offsetof(query_args, vfset),
     .help = "add the vf.set words of every op's lead and trail states"},
};
/* clang-format on */

static void init(void *args) {
  query_args *a = args;
  a->target_ms = a->slack = NAN;
}

/* One argument from its text by the reader's rules (NAN when not given). */
static int query_arg(int which, const char *name, const char *text, double *out, char *msg, size_t len) {
  enpu_err err = {0};
  *out = NAN;
  if (text && planstore_parse_arg(which, text, out, &err) < 0)
    return cli_reject(msg, len, "--%s: %s", name, err.msg);
  return 0;
}

/* The request's numbers from their text into r (batch, seq, target and slack). */
static int query_request(const query_args *a, query_args *r, char *msg, size_t len) {
  double batch = NAN, seq = NAN;
  if (!a->target_text == !a->slack_text) return cli_reject(msg, len, "give exactly one of --target-ms and --slack");
  int rc = query_arg(PLANSTORE_ARG_BATCH, "batch", a->batch_text, &batch, msg, len);
  if (!rc) rc = query_arg(PLANSTORE_ARG_SEQ, "seq", a->seq_text, &seq, msg, len);
  if (!rc) rc = query_arg(PLANSTORE_ARG_TARGET_MS, "target-ms", a->target_text, &r->target_ms, msg, len);
  if (!rc) rc = query_arg(PLANSTORE_ARG_SLACK, "slack", a->slack_text, &r->slack, msg, len);
  if (!rc) r->b.batch = (int)batch, r->b.seq = (int)seq;
  return rc;
}

static int check(const void *args, const cli_parsed *p, char *msg, size_t len) {
  query_args parsed = *(const query_args *)args;
  return query_request(args, &parsed, msg, len);
}

/* clang-format off */
static const cli_spec spec = {.command = "query", .run = run, .init = init, .check = check,
                              CLI_STORE_ARG(query_args, path), CLI_OPTS(opts, query_args)};
/* clang-format on */
const cli_spec *const cli_query_specs[] = {&spec, NULL};

_Static_assert(PLANSTORE_VARIANT_SEP == CONFIG_VARIANT_SEP,
               "the reader knows a sweep point's names as config does");

/* The policy a query without --policy answers with: the reader's default policy
 * (planstore_default_policy_index, the one rule the C library and the Python package
 * follow too), picked from the store's names without reading its tables. */
static int default_policy(const char *path, char *out, enpu_err *err) {
  enum { MAX_POLICIES = 256 };
  char(*names)[STORE_NAME_LEN] = calloc(MAX_POLICIES, STORE_NAME_LEN);
  const char **ptrs = calloc(MAX_POLICIES, sizeof *ptrs);
  size_t n = 0;
  int rc = names && ptrs ? store_policy_names(path, names, MAX_POLICIES, &n, err)
                         : enpu_errorf(err, ENPU_ERR_NOMEM, "out of memory");
  for (size_t i = 0; rc == ENPU_OK && i < n; i++) ptrs[i] = names[i];
  const long pick = rc == ENPU_OK ? planstore_default_policy_index(ptrs, n) : -1;
  if (pick >= 0) snprintf(out, STORE_NAME_LEN, "%s", names[pick]);
  else if (rc == ENPU_OK) rc = enpu_errorf(err, ENPU_ERR_NOT_FOUND, "plan store %s holds no policy", path);
  free(ptrs);
  free(names);
  return rc;
}

/* The vf.set word of one op state set: a one-instance stream sets every unit once. */
static int vfset_word(const uint8_t states[PLANSTORE_NSTATE], uint64_t *word, enpu_err *err) {
  int st[1][CONFIG_NCOMP];
  for (int c = 0; c < CONFIG_NCOMP; c++) st[0][c] = states[c];
  search_vfset_cmd cmd;
  int64_t count = 0;
  ENPU_FORWARD(search_vfset_stream((const int(*)[CONFIG_NCOMP])st, 1, &cmd, &count, err));
  ENPU_RETURN_IF(count != 1, err, ENPU_ERR_INTERNAL, "vf.set: %lld commands for one instance", (long long)count);
  *word = cmd.word;
  return 0;
}

static json_t *states_json(const uint8_t states[PLANSTORE_NSTATE]) {
  json_t *a = json_array();
  for (int c = 0; a && c < PLANSTORE_NSTATE; c++)
    if (json_array_append_new(a, json_integer(states[c])) < 0) json_decref(a), a = NULL;
  return a;
}

static json_t *op_json(const planstore_op_states *s, int vfset, enpu_err *err) {
  char sig[24];
  snprintf(sig, sizeof sig, "0x%016" PRIx64, s->signature);
  json_t *o = json_pack("{s:I, s:s, s:s, s:I, s:I, s:I, s:I, s:o, s:o, s:f, s:f}", "op", (json_int_t)s->op,
                        "signature", sig, "name", s->name, "instances", (json_int_t)s->instances, "lead_instances",
                        (json_int_t)s->lead_instances, "lead_pareto", (json_int_t)s->lead_pareto, "trail_pareto",
                        (json_int_t)s->trail_pareto, "lead_states", states_json(s->lead_states), "trail_states",
                        states_json(s->trail_states), "lead_time_ns", s->lead_time_ns, "trail_time_ns",
                        s->trail_time_ns);
  if (!o || !vfset) return o;
  uint64_t lead = 0, trail = 0;
  if (vfset_word(s->lead_states, &lead, err) < 0 || vfset_word(s->trail_states, &trail, err) < 0 ||
      json_object_set_new(o, "lead_vfset", json_integer((json_int_t)lead)) < 0 ||
      json_object_set_new(o, "trail_vfset", json_integer((json_int_t)trail)) < 0) {
    json_decref(o);
    return NULL;
  }
  return o;
}

/* Who answered and how: the policy's name, whether it was the default, and the warning
 * of a target below the fastest plan (NULL when none). */
typedef struct {
  const char *policy;
  int by_default;
  const char *warning;
} query_answer;

/* A value the store leaves NaN where it has none (no stored plan, no slack): JSON null. */
static json_t *real_or_null(double v) { return isnan(v) ? json_null() : json_real(v); }

static int print_json(const query_args *a, const query_answer *ans, const planstore_plan *pl,
                      const planstore_op_states *st, size_t n, enpu_err *err) {
  json_t *ops = json_array();
  for (size_t i = 0; ops && i < n; i++)
    if (json_array_append_new(ops, op_json(&st[i], a->vfset, err)) < 0) json_decref(ops), ops = NULL;
  json_t *doc = json_pack(
      "{s:s, s:s, s:s, s:s, s:{s:i, s:i}, s:{s:i, s:i, s:I}, s:f, s:o, s:I, s:I, s:f, s:f, s:f, s:f, s:o, s:o, "
      "s:o, s:o, s:f, s:f, s:f, s:o, s:s}",
      "store", a->path, "policy", ans->policy, "phase", cli_phase_names[a->b.phase], "budget",
      pl->budget_mode == PLANSTORE_BUDGET_PAPER ? "paper" : "strict", "request", "batch", a->b.batch, "seq",
      a->b.seq, "bucket", "batch", pl->batch, "seq", pl->seq, "row", (json_int_t)pl->bucket, "target_ns",
      pl->target_ns, "slack", real_or_null(a->slack), "walk_prefix", (json_int_t)pl->walk_prefix, "walk_steps",
      (json_int_t)pl->walk_steps, "time_ns", pl->time_ns, "energy_nj", pl->energy_nj, "lower_bound_nj",
      pl->lower_bound_nj, "savings_vs_nodvfs", pl->savings_vs_nodvfs, "plan_time_ns",
      real_or_null(pl->plan_time_ns), "overhead_pct", real_or_null(pl->overhead_pct), "paper_overhead_pct",
      real_or_null(pl->paper_overhead_pct), "plan_energy_nj", real_or_null(pl->plan_energy_nj), "t_nodvfs_ns",
      pl->t_nodvfs_ns, "t_peak_ns", pl->t_peak_ns, "e_nodvfs_nj", pl->e_nodvfs_nj, "ops", ops, "capacity_note",
      pl->note ? pl->note : "");
  if (doc && (json_object_set_new(doc, "policy_from", json_string(ans->by_default ? "default" : "--policy")) < 0 ||
              json_object_set_new(doc, "warning", ans->warning ? json_string(ans->warning) : json_null()) < 0))
    json_decref(doc), doc = NULL;
  if (!doc) return cli_fail("query", err->code ? err->msg : "cannot build JSON output");
  int rc = cli_print_json(doc);
  json_decref(doc);
  return rc;
}

static void print_states(const uint8_t s[PLANSTORE_NSTATE]) {
  printf("%2u %2u %2u %2u %2u", s[0], s[1], s[2], s[3], s[4]);
}

static int print_human(const query_args *a, const query_answer *ans, const planstore_plan *pl,
                       const planstore_op_states *st, size_t n, enpu_err *err) {
  const int paper = pl->budget_mode == PLANSTORE_BUDGET_PAPER;
  printf("policy %s%s, %s bucket batch %d seq %d (request batch %d seq %d), budget mode %s\n", ans->policy,
         ans->by_default ? " (the store's eNPU policy, the default; --policy picks another)" : "",
         cli_phase_names[a->b.phase], pl->batch, pl->seq, a->b.batch, a->b.seq, paper ? "paper" : "strict");
  printf("target %.6f ms", pl->target_ns / 1e6);
  if (!isnan(a->slack)) printf(" (slack %g%%)", 100 * a->slack);
  printf(": walk prefix %" PRIu64 " of %" PRIu64 " steps\n", pl->walk_prefix, pl->walk_steps);
  printf("%s %.6f ms, energy %.6f mJ, lower bound %.6f mJ, savings %.2f%% vs " ENPU_POLICY_DISPLAY_NODVFS "\n",
         paper ? "critical-path time" : "time", pl->time_ns / 1e6, pl->energy_nj / 1e6, pl->lower_bound_nj / 1e6,
         100 * pl->savings_vs_nodvfs);
  if (!isnan(pl->overhead_pct))
    printf("stored plan for this target: %.6f ms with V/f transitions, %.6f mJ, overhead %.3f%% "
           "of T_nodvfs (runtime), %.3f%% (paper, §4.4: transitions and loop throughput)\n",
           pl->plan_time_ns / 1e6, pl->plan_energy_nj / 1e6, pl->overhead_pct, pl->paper_overhead_pct);
  else printf("overhead: no stored plan has this target (the job's slacks have one each)\n");
  printf("T_nodvfs %.6f ms, T_peak %.6f ms, E_nodvfs %.6f mJ\n", pl->t_nodvfs_ns / 1e6, pl->t_peak_ns / 1e6,
         pl->e_nodvfs_nj / 1e6);
  if (pl->note && pl->note[0]) printf("capacity: %s\n", pl->note);
  printf("\n%-28s %9s %9s  %-14s  %-14s%s\n", "op (SA VU SRAM HBM ICI)", "instances", "at lead", "lead states",
         "trail states", a->vfset ? "  lead vf.set       trail vf.set" : "");
  for (size_t i = 0; i < n; i++) {
    printf("%-28.28s %9" PRIu64 " %9" PRIu64 "  ", st[i].name, st[i].instances, st[i].lead_instances);
    print_states(st[i].lead_states);
    printf("  ");
    print_states(st[i].trail_states);
    if (a->vfset) {
      uint64_t lead = 0, trail = 0;
      if (vfset_word(st[i].lead_states, &lead, err) < 0 || vfset_word(st[i].trail_states, &trail, err) < 0)
        return cli_fail("query", err->msg);
      printf("  0x%014" PRIx64 "  0x%014" PRIx64, lead, trail);
    }
    printf("\n");
  }
  return 0;
}

/* --variant: the policy (--policy's, else the default) on that sweep point, as the
 * store names it (config_job_policy_name). */
static int variant_policy(const query_args *a, char out[STORE_NAME_LEN], enpu_err *err) {
  char point[CONFIG_NAME_LEN], base[STORE_NAME_LEN];
  ENPU_RETURN_IF(a->policy && config_variant_of(a->policy), err, ENPU_ERR_INVALID,
                 "--variant with a --policy that names a sweep point already (%s)", a->policy);
  const int rc = config_variant_canonical(a->variant, point, err);
  if (rc < 0) {
    enpu_err_prefix(err, "--variant: ");
    return rc;
  }
  if (a->policy) snprintf(base, sizeof base, "%s", a->policy);
  else ENPU_FORWARD(default_policy(a->path, base, err));
  ENPU_RETURN_IF(config_policy_point_join(base, point, out) < 0, err, ENPU_ERR_RANGE,
                 "policy %s on variant %s: name too long", base, point);
  return ENPU_OK;
}

static int run(void *args) {
  query_args *a = args;
  char msg[ENPU_ERR_MSG_LEN];
  if (query_request(a, a, msg, sizeof msg) < 0) { /* check() passed: cannot fail */
    cli_fail("query", msg);
    return 2;
  }
  const int phase = a->b.phase == CONFIG_PREFILL ? PLANSTORE_PREFILL : PLANSTORE_DECODE;
  enpu_err err = {0};
  planstore *ps = NULL;
  planstore_op_states *states = NULL;
  int status = 0;
  char chosen[STORE_NAME_LEN] = "";
  query_answer ans = {.policy = a->policy, .by_default = !a->policy};
  if (a->variant && variant_policy(a, chosen, &err) < 0) {
    cli_fail("query", err.msg);
    status = 2;
    goto done;
  }
  if ((!a->policy && !a->variant && default_policy(a->path, chosen, &err) < 0) ||
      planstore_open_policy(a->path, a->policy && !a->variant ? a->policy : chosen, &ps, &err) < 0) {
    cli_fail("query", err.msg);
    status = cli_store_status(a->path, err.code);
    goto done;
  }
  if (!a->policy || a->variant) ans.policy = chosen;
  planstore_plan plan = {.target_ns = NAN};
  const cli_bucket *b = &a->b;
  const int rc = !isnan(a->slack)
                     ? planstore_lookup_slack(ps, ans.policy, phase, b->batch, b->seq, a->slack, &plan, &err)
                     : planstore_lookup(ps, ans.policy, phase, b->batch, b->seq, a->target_ms * 1e6, &plan, &err);
  /* Below the fastest plan the reader still fills the plan (the fastest): a caller asking
   * for a time gets the best the store has, told it is late. */
  const bool late = rc == ENPU_ERR_INFEASIBLE && !isnan(plan.target_ns);
  if (late) fprintf(stderr, "enpu query: warning: %s\n", err.msg), ans.warning = err.msg;
  if (rc < 0 && !late) {
    status = cli_fail("query", err.msg);
    goto done;
  }
  size_t n = planstore_plan_op_count(ps, &plan);
  states = calloc(n ? n : 1, sizeof *states);
  if (!states || planstore_plan_states(ps, &plan, states, n, &n, &err) < 0) {
    status = cli_fail("query", states ? err.msg : "out of memory");
    goto done;
  }
  status = a->json ? print_json(a, &ans, &plan, states, n, &err) : print_human(a, &ans, &plan, states, n, &err);
done:
  free(states);
  planstore_close(ps);
  return status;
}
