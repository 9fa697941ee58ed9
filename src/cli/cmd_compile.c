/* cmd_compile.c — `enpu compile JOB --phase P --batch B --seq S [--policy NAME|all]
 * [--request policy|walk|greedy|ga] [--budget strict|paper] [--transitions per-rail|chip-stall]
 * [--lift] [--trim] [--domains 5|4|3] [--threads N] [--sample-ops N] [--json] [--vfset]`: compile
 * one bucket for one policy or all of the job's, at the job's slacks, and print per slack
 * the budget, time, energy, savings vs NoDVFS, lower bound and gap, evaluations and
 * search time; --vfset adds each plan's vf.set stream, checked by decoding and replaying
 * it. The search module does the work; this file parses and prints. JSON field names are
 * a contract for scripts.
 *
 * Exit status: 0 ok; 1 the job, graph or a compilation failed; 2 usage error. */
#include <inttypes.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "cli_internal.h"
#include "config.h"
#include "cost.h"
#include "graph.h"
#include "grid.h"
#include "planstore.h"
#include "report.h"
#include "search.h"

static int run(void *args);

typedef struct {
  const char *path, *policy, *factors, *out, *numbers;
  cli_bucket b;
  int request, budget, transitions, domains, threads, sample_ops;
  int json, vfset, lift, trim;
  cli_numbers slacks;
} compile_args;

/* clang-format off */
static const char *const requests[] = {[SEARCH_REQ_WALK] = "walk", [SEARCH_REQ_GREEDY] = "greedy",
                                       [SEARCH_REQ_GA] = "ga", [SEARCH_REQ_POLICY] = "policy", NULL};
static const char *const budgets[] = {[CONFIG_BUDGET_STRICT] = "strict", [CONFIG_BUDGET_PAPER] = "paper", NULL};
static const char *const transitions[] = {[SEARCH_TRANS_PER_RAIL] = "per-rail",
                                          [SEARCH_TRANS_CHIP_STALL] = "chip-stall", NULL};
/* clang-format on */

/* --policy: "all" or one policy's name. */
static int accept_policy(const char *v, void *args, char *expected, size_t len) {
  config_policy_spec p;
  if (!strcmp(v, "all") || config_policy_spec_parse(v, &p) == 0) return 0;
  return cli_reject(expected, len, "a policy name or all");
}

/* --slacks: each item as `enpu query --slack` reads it (planstore_parse_arg), so that a
 * bare 5 is refused rather than compiled at 500 %. */
static int accept_slacks(const char *v, void *args, char *expected, size_t len) {
  cli_numbers *list = &((compile_args *)args)->slacks;
  char item[64];
  list->n = 0;
  for (const char *p = v;; p++) {
    const size_t n = strcspn(p, ",");
    if (n == 0 || n >= sizeof item || list->n == CLI_LIST_MAX)
      return snprintf(expected, len, "a comma-separated list of at most %d slacks", CLI_LIST_MAX), -1;
    memcpy(item, p, n);
    item[n] = '\0';
    if (cli_planstore_arg(PLANSTORE_ARG_SLACK, item, &list->v[list->n++], expected, len) < 0) return -1;
    p += n;
    if (!*p) return 0;
  }
}

/* clang-format off */
#define COMPILE_FLAG(field, help_)                                                                 \
  {.name = #field, .type = CLI_FLAG, .at = offsetof(compile_args, field), .help = help_}

static const cli_opt opts[] = {
    CLI_BUCKET_OPTS(compile_args),
    {.name = "policy", .type = CLI_STRING, .at = offsetof(compile_args, policy), .meta = "NAME|all",
     .accept = accept_policy, .flags = CLI_WRAP,
     .help = CONFIG_POLICY_NAMES_TEXT "each but " ENPU_POLICY_NAME_UNIFORM " also with " ENPU_POLICY_GATE_PREFIX
             " (power gating) or @shadow=N (VU shadow registers), " ENPU_POLICY_GATE_ALONE "; or all (the job's "
             "policies); " ENPU_POLICY_NAME_IDEAL " is the exact op-level set by branch and bound"},
    {.name = "request", .type = CLI_ENUM, .at = offsetof(compile_args, request), .choices = requests,
     .help = "policy (the GA for " ENPU_POLICY_NAME_DVFS_C ", the hull walk with LP bound for every\n"
             "other policy), walk, greedy (the paper's) or ga (" ENPU_POLICY_DISPLAY_DVFS_C "'s genetic\n"
             "algorithm: 1000 x 500, warm-started)"},
    {.name = "budget", .type = CLI_ENUM, .at = offsetof(compile_args, budget), .choices = budgets,
     .help = "the budget mode (default: the job's \"budget\", strict if absent)"},
    {.name = "transitions", .type = CLI_ENUM, .at = offsetof(compile_args, transitions), .choices = transitions,
     .help = "per-rail: each moving rail delays only its components, inside the\n"
             "next op; chip-stall: the whole chip waits for the slowest moving\n"
             "rail between ops"},
    COMPILE_FLAG(lift, "transition-aware finalisation: also try the plan with V/f rails\n"
                       "lifted to one voltage band (plans the store cannot record yet)"),
    COMPILE_FLAG(trim, "Algorithm 1 + the trim pass (lower one domain at a time from each\n"
                       "Pareto point while time holds and energy does not grow)"),
    {.name = "domains", .type = CLI_INT, .at = offsetof(compile_args, domains), .meta = "D", .range = CLI_RANGE(3, 5),
     .help = "eNPU V/f domains for " ENPU_POLICY_NAME_ENPU_C "/" ENPU_POLICY_NAME_ENPU_ALL ": 5, 4 or 3"},
    {.name = "threads", .type = CLI_INT, .at = offsetof(compile_args, threads), .meta = "N",
     .range = CLI_RANGE(1, 4096), .help = "threads of the exact or exhaustive op-level search (" ENPU_POLICY_NAME_IDEAL ")"},
    {.name = "sample-ops", .type = CLI_INT, .at = offsetof(compile_args, sample_ops), .meta = "N",
     .range = CLI_RANGE(1, INT_MAX),
     .help = "with --policy " ENPU_POLICY_NAME_IDEAL ": exhaustive enumeration on N sampled ops only\n"
             "(Algorithm 1 on the " ENPU_POLICY_NAME_IDEAL " pipeline for the others); prints the\n"
             "sampled ops' greedy-vs-exact energy gap"},
    CLI_JSON_OPT(compile_args, "the plans"),
    COMPILE_FLAG(vfset, "add every plan's vf.set stream (48-bit states + 6-bit mask)"),
    {.name = "slacks", .type = CLI_CUSTOM, .meta = "LIST", .accept = accept_slacks,
     .help = "increasing slacks instead of the job's, comma-separated, each\n" CLI_SLACK_HELP},
    {.name = "capacity-factor", .type = CLI_STRING, .at = offsetof(compile_args, factors), .meta = "LIST",
     .help = "MoE expert load imbalance (paper §4.6, Figure 20): compile\n"
             "the bucket at each capacity factor (1 = balanced ... worst = E/k)\n"
             "and run the worst-case plans (eNPU's default provisioning) on each\n"
             "factor's load; prints savings vs " ENPU_POLICY_DISPLAY_NODVFS " of both per policy and slack"},
    {.name = "out", .type = CLI_STRING, .at = offsetof(compile_args, out), .meta = "DIR",
     .help = "with --capacity-factor: write DIR/figure20.{md,dat,gp,png}"},
    {.name = "numbers", .type = CLI_STRING, .at = offsetof(compile_args, numbers), .meta = "FILE",
     .help = "with --out: the paper's stated numbers, drawn on Figure 20 for its\nmodel and phase "
             "(default: " CLI_PAPER_NUMBERS "\nwhen it exists)"},
};
/* clang-format on */

static void init(void *args) {
  compile_args *a = args;
  a->policy = "all", a->request = SEARCH_REQ_POLICY, a->transitions = SEARCH_TRANS_PER_RAIL;
  a->domains = 5, a->threads = 1;
}

static int check(const void *args, const cli_parsed *p, char *msg, size_t len) {
  const compile_args *a = args;
  if (a->sample_ops && !config_policy_named(a->policy, CONFIG_POLICY_IDEAL))
    return cli_reject(msg, len, "--sample-ops goes with --policy " ENPU_POLICY_NAME_IDEAL);
  if (a->out && !a->factors) return cli_reject(msg, len, "--out goes with --capacity-factor");
  if (a->numbers && !a->out) return cli_reject(msg, len, "--numbers goes with --out");
  for (int k = 1; k < a->slacks.n; k++)
    if (!(a->slacks.v[k] > a->slacks.v[k - 1]))
      return cli_reject(msg, len, "--slacks: expected increasing fractions");
  return 0;
}

/* clang-format off */
static const cli_spec spec = {.command = "compile", .run = run, .init = init, .check = check,
                              CLI_JOB_ARG(compile_args, path), CLI_OPTS(opts, compile_args)};
/* clang-format on */
const cli_spec *const cli_compile_specs[] = {&spec, NULL};

/* ---------------------------------------------------------------------------------
 * vf.set streams */

typedef struct {
  search_vfset_cmd *cmds;
  int64_t count;
} vf_stream;

static int make_stream(const search_slack_plan *pl, vf_stream *vs, enpu_err *err) {
  vs->cmds = calloc((size_t)pl->instances, sizeof *vs->cmds);
  ENPU_RETURN_IF(!vs->cmds, err, ENPU_ERR_NOMEM, "out of memory (vf.set stream)");
  const int(*st)[CONFIG_NCOMP] = (const int(*)[CONFIG_NCOMP])pl->state;
  ENPU_FORWARD(search_vfset_stream(st, pl->instances, vs->cmds, &vs->count, err));
  return search_vfset_check(st, pl->instances, vs->cmds, vs->count, err);
}

/* ---------------------------------------------------------------------------------
 * Output */

static double bound_gap(const search_slack_plan *pl) {
  return pl->energy_nj > 0 ? 1.0 - pl->lower_bound_nj / pl->energy_nj : 0.0;
}

static double loss_of(const search_slack_plan *pl) {
  double l = 0;
  for (int c = 0; c < CONFIG_NCOMP; c++) l += pl->regulator_loss_nj[c];
  return l;
}

static int print_human(const char *name, const search_bucket_result *r, int vfset, enpu_err *err) {
  printf("\n%s: T_nodvfs %.3f ms, T_peak %.3f ms, E_nodvfs %.3f mJ; all-peak %.3f ms "
         "%.3f mJ; %d ops searched, %" PRId64 " op evals in %.3f s, walk %" PRId64 " moves\n",
         name, r->t_nodvfs_ns / 1e6, r->t_peak_ns / 1e6, r->e_nodvfs_nj / 1e6, r->policy_peak_time_ns / 1e6,
         r->policy_peak_energy_nj / 1e6, r->unique_ops, r->op_evals, r->op_search_s, r->walk_moves);
  printf("%7s %11s %11s %11s %9s %9s %12s %8s %12s %7s %9s %9s %9s %11s %5s\n", "slack", "budget ms", "time ms",
         "crit. ms", "overhead", "paper ovh", "energy mJ", "saving", "bound mJ", "gap", "op evals", "req evals",
         "search s", "reg loss mJ", "gated");
  for (int k = 0; k < r->nplans; k++) {
    const search_slack_plan *pl = &r->plans[k];
    printf("%6.1f%% %11.4f %11.4f %11.4f %8.3f%% %8.3f%% %12.4f %7.2f%% %12.4f %6.2f%% %9" PRId64 " %9" PRId64
           " %9.3f %11.4f %5s\n",
           100 * pl->slack, pl->budget_ns / 1e6, pl->time_ns / 1e6, pl->cp_time_ns / 1e6, pl->overhead_pct,
           pl->paper_overhead_pct, pl->energy_nj / 1e6, 100 * pl->savings_vs_nodvfs, pl->lower_bound_nj / 1e6,
           100 * bound_gap(pl), pl->op_evals, pl->request_evals, pl->search_s, loss_of(pl) / 1e6,
           pl->gated ? "yes" : "no");
  }
  for (int k = 0; vfset && k < r->nplans; k++) {
    vf_stream vs = {0};
    const int rc = make_stream(&r->plans[k], &vs, err);
    if (rc == 0) {
      printf("vf.set at slack %g%%: %" PRId64 " commands over %" PRId64 " op instances (decode + replay ok)\n",
             100 * r->plans[k].slack, vs.count, r->plans[k].instances);
      for (int64_t c = 0; c < vs.count; c++)
        printf("  @%-6" PRId64 " vf.set 0x%014" PRIx64 "\n", vs.cmds[c].instance, vs.cmds[c].word);
    }
    free(vs.cmds);
    if (rc < 0) return rc;
  }
  return 0;
}

static json_t *slack_json(const search_slack_plan *pl, int vfset, enpu_err *err) {
  json_t *o = json_pack("{s:f, s:f, s:f, s:f, s:f, s:f, s:f, s:f, s:f, s:f, s:I, s:I, s:f}", "slack", pl->slack,
                        "budget_ns", pl->budget_ns, "time_ns", pl->time_ns, "cp_time_ns", pl->cp_time_ns,
                        "overhead_pct", pl->overhead_pct, "paper_overhead_pct", pl->paper_overhead_pct, "energy_nj",
                        pl->energy_nj, "lower_bound_nj", pl->lower_bound_nj, "savings_vs_nodvfs",
                        pl->savings_vs_nodvfs, "gap", bound_gap(pl), "op_evals", (json_int_t)pl->op_evals,
                        "request_evals", (json_int_t)pl->request_evals, "search_s", pl->search_s);
  json_t *loss = json_array();
  for (int c = 0; loss && c < CONFIG_NCOMP; c++)
    if (json_array_append_new(loss, json_real(pl->regulator_loss_nj[c])) < 0) json_decref(loss), loss = NULL;
  if (!o || !loss || json_object_set_new(o, "regulator_loss_nj", loss) < 0 ||
      json_object_set_new(o, "gated", json_boolean(pl->gated)) < 0 ||
      json_object_set_new(o, "gates", json_real(pl->gates)) < 0) {
    if (!o) json_decref(loss);
    json_decref(o);
    return NULL;
  }
  if (!vfset) return o;
  vf_stream vs = {0};
  json_t *arr = make_stream(pl, &vs, err) == 0 ? json_array() : NULL;
  for (int64_t c = 0; arr && c < vs.count; c++) {
    json_t *cmd = json_pack("{s:I, s:I}", "instance", (json_int_t)vs.cmds[c].instance, "word",
                            (json_int_t)vs.cmds[c].word);
    if (json_array_append_new(arr, cmd) < 0) json_decref(arr), arr = NULL;
  }
  free(vs.cmds);
  if (!arr || json_object_set_new(o, "vfset", arr) < 0) {
    json_decref(o);
    return NULL;
  }
  return o;
}

static json_t *policy_plans_json(const search_bucket_result *r, int vfset, enpu_err *err) {
  json_t *slacks = json_array();
  for (int k = 0; slacks && k < r->nplans; k++)
    if (json_array_append_new(slacks, slack_json(&r->plans[k], vfset, err)) < 0) json_decref(slacks), slacks = NULL;
  return json_pack("{s:o, s:f, s:f, s:f, s:f, s:f, s:i, s:I, s:f, s:I}", "slacks", slacks, "t_nodvfs_ns",
                   r->t_nodvfs_ns, "e_nodvfs_nj", r->e_nodvfs_nj, "t_peak_ns", r->t_peak_ns, "peak_time_ns",
                   r->policy_peak_time_ns, "peak_energy_nj", r->policy_peak_energy_nj, "unique_ops", r->unique_ops,
                   "op_evals", (json_int_t)r->op_evals, "op_search_s", r->op_search_s, "walk_moves",
                   (json_int_t)r->walk_moves);
}

/* ---------------------------------------------------------------------------------
 * --policy ideal --sample-ops N */

/* What sampled_set needs besides the op (a search_set_fn's user). */
typedef struct {
  search_ctx *sx;
  cost_ctx *cost;
  const graph *g;
  const search_options *opt; /* Algorithm 1's or the exhaustive method is set per op */
  int n;                     /* ops to sample (at most the distinct ones) */
  FILE *log;                 /* the sampled ops' gaps */
} sampled_user;

/* One distinct op's set: Algorithm 1, or the exhaustive set with its gap to Algorithm 1's
 * when it is the first distinct op at or after k·distinct/n for some k < n. */
static int sampled_set(void *user, int i, int rank, int distinct, search_pareto *out, enpu_err *err) {
  const sampled_user *c = user;
  const int n = c->n < distinct ? c->n : distinct;
  int sampled = 0;
  for (int k = 0; k < n && !sampled; k++) sampled = rank == (int)((int64_t)k * distinct / n);
  search_options o = *c->opt;
  o.ideal_method = SEARCH_OP_GREEDY;
  const graph_op *op = graph_op_at(c->g, i);
  if (!sampled) return search_op_compile(c->sx, c->cost, op, CONFIG_POLICY_IDEAL, &o, out, err);
  search_pareto greedy = {0};
  int rc = search_op_compile(c->sx, c->cost, op, CONFIG_POLICY_IDEAL, &o, &greedy, err);
  o.ideal_method = SEARCH_OP_EXHAUSTIVE;
  const double t0 = enpu_now_s();
  if (rc == 0) rc = search_op_compile(c->sx, c->cost, op, CONFIG_POLICY_IDEAL, &o, out, err);
  search_gap gap;
  if (rc == 0) rc = search_pareto_gap(out, &greedy, NULL, &gap, err);
  if (rc == 0)
    fprintf(c->log,
            ENPU_POLICY_NAME_IDEAL ": op %d (%s) exhaustive: %d points, %" PRId64 " plans, %.1f s; "
                                   "greedy gap max %.3f%% mean %.3f%%, hypervolume ratio %.5f\n",
            i, op->name, out->count, out->evals, enpu_now_s() - t0, 100 * gap.max_gap, 100 * gap.mean_gap,
            gap.hv_ratio);
  search_pareto_free(&greedy);
  return rc;
}

/* `ideal` with the exhaustive op-level search on n of the distinct ops only (evenly spaced
 * over them in graph order) and Algorithm 1 on the ideal pipeline for the rest; prints
 * (stderr under --json) each sampled op's greedy-vs-exact gap; then the request level. */
static int compile_sampled(search_ctx *sx, cost_ctx *cost, const graph *g, const config_job *job,
                           const search_options *opt, int n, int json, search_bucket_result *out, enpu_err *err) {
  const int nops = graph_op_count(g);
  uint64_t *signature = calloc((size_t)nops + 1, sizeof *signature);
  if (!signature) return enpu_errorf(err, ENPU_ERR_NOMEM, "out of memory");
  for (int i = 0; i < nops; i++) signature[i] = graph_op_at(g, i)->signature;
  sampled_user c = {sx, cost, g, opt, n, json ? stderr : stdout};
  search_sets sets = {0};
  int rc = search_sets_compile(signature, nops, sampled_set, &c, &sets, err);
  if (rc == 0)
    rc = search_compile_bucket_sets(sx, cost, g, CONFIG_POLICY_IDEAL, sets.set_of, job->slacks, job->slack_count,
                                    opt, out, err);
  if (rc == 0) search_bucket_add_op_level(out, &sets);
  search_sets_free(&sets);
  free(signature);
  return rc;
}

/* ---------------------------------------------------------------------------------
 * --slacks and --capacity-factor (expert load imbalance, Figure 20) */

#define MAX_LIST 32

/* Split a comma-separated list in place into at most MAX_LIST items; @return the count,
 * or -1 when empty or too long. */
static int split_list(char *s, char **item) {
  int n = 0;
  for (char *save = NULL, *t = strtok_r(s, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
    if (n == MAX_LIST) return -1;
    item[n++] = t;
  }
  return n ? n : -1;
}

/* Replace the job's slacks with --slacks (checked: increasing, within the range). */
static int set_slacks(config_job *job, const cli_numbers *slacks, enpu_err *err) {
  double *v = calloc((size_t)slacks->n, sizeof *v);
  ENPU_RETURN_IF(!v, err, ENPU_ERR_NOMEM, "out of memory");
  memcpy(v, slacks->v, (size_t)slacks->n * sizeof *v);
  free(job->slacks);
  job->slacks = v;
  job->slack_count = slacks->n;
  return 0;
}

typedef struct {
  search_ctx *sx;
  cost_ctx *cost;
  const search_options *opt;
  const config_policy_spec *pol;
  int npol;
  config_phase phase;
  int batch, seq;
} sweep_ctx;

/* The bucket at capacity factor `factor`: its graph and every policy's plans. */
static int sweep_compile(config_job *job, const sweep_ctx *c, const char *factor, graph **g,
                         search_bucket_result *out, enpu_err *err) {
  ENPU_FORWARD(config_job_set_capacity_factor(job, factor, err));
  ENPU_FORWARD(graph_build(job, c->phase, c->batch, c->seq, g, err));
  for (int p = 0; p < c->npol; p++) {
    search_options popt = *c->opt;
    search_options_set_policy(&popt, &c->pol[p]);
    ENPU_FORWARD(search_compile_bucket(c->sx, c->cost, *g, c->pol[p].base, job->slacks, job->slack_count, &popt,
                                       &out[p], err));
  }
  return 0;
}

/* Rows of one factor: the plans made for it and the worst-case plans run on its graph
 * (an epoch policy's on this factor's epochs, each at its first operator's states). */
static int sweep_rows(const config_job *job, const sweep_ctx *c, const graph *g, const search_bucket_result *cur,
                      const search_bucket_result *worst, report_imbalance_row *rows, enpu_err *err) {
  const double factor = grid_capacity_factor(job);
  for (int p = 0; p < c->npol; p++)
    for (int k = 0; k < job->slack_count; k++) {
      const search_slack_plan *pw = &worst[p].plans[k];
      ENPU_RETURN_IF(pw->instances != cur[p].plans[k].instances, err, ENPU_ERR_INTERNAL,
                     "factor %g: %lld op instances, the worst case has %lld", factor,
                     (long long)cur[p].plans[k].instances, (long long)pw->instances);
      int(*walk)[CONFIG_NCOMP] = calloc((size_t)pw->instances, sizeof *walk);
      ENPU_RETURN_IF(!walk, err, ENPU_ERR_NOMEM, "out of memory (plan states)");
      search_states_by_walk(cur[p].units, (const int(*)[CONFIG_NCOMP])pw->state, walk);
      search_options popt = *c->opt;
      search_options_set_policy(&popt, &c->pol[p]);
      search_plan_totals tot;
      const int rc = search_plan_simulate(c->sx, c->cost, g, c->pol[p].base, &popt,
                                          (const int(*)[CONFIG_NCOMP])walk, pw->gated, &tot, err);
      free(walk);
      ENPU_FORWARD(rc);
      const double e = tot.energy_nj;
      report_imbalance_row *r = &rows[p * job->slack_count + k];
      *r = (report_imbalance_row){.capacity_factor = factor,
                                  .slack = job->slacks[k],
                                  .savings = cur[p].plans[k].savings_vs_nodvfs,
                                  .savings_worst = 1.0 - e / cur[p].e_nodvfs_nj};
      config_policy_spec_name(&c->pol[p], r->policy);
    }
  return 0;
}

static int sweep_print(const compile_args *a, const config_job *job, const report_imbalance_row *rows, size_t n) {
  json_t *arr = a->json ? json_array() : NULL;
  if (!a->json)
    printf("job %s: %s, batch %d, seq %d; savings vs " ENPU_POLICY_DISPLAY_NODVFS
           " at each expert capacity factor\n"
           "%8s %-9s %7s %14s %16s %11s\n",
           job->name, cli_phase_names[a->b.phase], a->b.batch, a->b.seq, "factor", "policy", "slack",
           "plan for load", "worst-case plan", "difference");
  for (size_t i = 0; i < n; i++) {
    const report_imbalance_row *r = &rows[i];
    if (!a->json) {
      printf("%8g %-9s %6.1f%% %13.2f%% %15.2f%% %10.2f%%\n", r->capacity_factor, r->policy, 100 * r->slack,
             100 * r->savings, 100 * r->savings_worst, 100 * (r->savings - r->savings_worst));
      continue;
    }
    json_t *o = json_pack("{s:s, s:f, s:f, s:f, s:f}", "policy", r->policy, "capacity_factor", r->capacity_factor,
                          "slack", r->slack, "savings", r->savings, "savings_worst_case_plan", r->savings_worst);
    if (!o || json_array_append_new(arr, o) < 0) json_decref(arr), arr = NULL;
  }
  if (!a->json) return 0;
  json_t *doc = arr ? json_pack("{s:s, s:s, s:i, s:i, s:o}", "job", job->name, "phase", cli_phase_names[a->b.phase],
                                "batch", a->b.batch, "seq", a->b.seq, "rows", arr)
                    : NULL;
  const int rc = doc ? cli_print_json(doc) : cli_fail("compile", "cannot build JSON output");
  json_decref(doc);
  return rc;
}

/* --capacity-factor: the worst case first (the reference plans), then every factor. */
static int compile_sweep(config_job *job, const compile_args *a, const sweep_ctx *c, enpu_err *err) {
  char buf[1024], *fac[MAX_LIST];
  snprintf(buf, sizeof buf, "%s", a->factors);
  const int nf = split_list(buf, fac);
  ENPU_RETURN_IF(nf < 0, err, ENPU_ERR_INVALID, "--capacity-factor: expected 1 to %d factors", MAX_LIST);
  const size_t per = (size_t)c->npol * (size_t)job->slack_count;
  report_imbalance_row *rows = calloc((size_t)nf * per, sizeof *rows);
  search_bucket_result worst[CONFIG_MAX_POLICIES] = {{0}}, cur[CONFIG_MAX_POLICIES] = {{0}};
  graph *gw = NULL;
  int rc = rows ? sweep_compile(job, c, "worst", &gw, worst, err)
                : enpu_errorf(err, ENPU_ERR_NOMEM, "out of memory");
  for (int f = 0; rc == 0 && f < nf; f++) {
    graph *g = NULL;
    rc = sweep_compile(job, c, fac[f], &g, cur, err);
    if (rc == 0) rc = sweep_rows(job, c, g, cur, worst, rows + (size_t)f * per, err);
    for (int p = 0; p < c->npol; p++) search_bucket_result_free(&cur[p]);
    graph_free(g);
  }
  if (rc == 0 && sweep_print(a, job, rows, (size_t)nf * per) != 0)
    rc = enpu_errorf(err, ENPU_ERR_IO, "cannot print the results");
  char title[160];
  snprintf(title, sizeof title, "%s %s batch %d seq %d", job->name, cli_phase_names[a->b.phase], a->b.batch,
           a->b.seq);
  paper_numbers *numbers = NULL;
  if (rc == 0 && a->out) rc = cli_load_paper_numbers(a->numbers, &numbers, err);
  const report_overlay overlay = paper_overlay(numbers);
  const report_imbalance_refs paper = {numbers ? &overlay : NULL, job->model.name, a->b.phase};
  if (rc == 0 && a->out) rc = report_write_imbalance(a->out, NULL, title, &paper, rows, (size_t)nf * per, err);
  paper_numbers_free(numbers);
  for (int p = 0; p < c->npol; p++) search_bucket_result_free(&worst[p]);
  graph_free(gw);
  free(rows);
  return rc;
}

/* ---------------------------------------------------------------------------------
 * Main */

/* The search options the command line asks for. */
static void compile_options(const compile_args *a, const config_job *job, search_options *opt) {
  search_options_for_job(opt, job, NULL);
  opt->request = a->request;
  opt->budget = a->budget >= 0 ? (config_budget)a->budget : job->budget;
  opt->transitions = a->transitions;
  opt->transition_aware = a->lift;
  opt->op_trim = a->trim;
  opt->enpu_domains = a->domains;
  opt->threads = a->threads;
}

/* One policy's bucket (its ops sampled for --sample-ops). */
static int compile_one(search_ctx *sx, cost_ctx *cost, const graph *g, const config_job *job, const compile_args *a,
                       const search_options *opt, const config_policy_spec *p, search_bucket_result *r,
                       enpu_err *err) {
  search_options popt = *opt;
  search_options_set_policy(&popt, p);
  return a->sample_ops ? compile_sampled(sx, cost, g, job, &popt, a->sample_ops, a->json, r, err)
                       : search_compile_bucket(sx, cost, g, p->base, job->slacks, job->slack_count, &popt, r, err);
}

static int run(void *args) {
  compile_args *a = args;
  const config_phase phase = (config_phase)a->b.phase;
  config_policy_spec one = {.shadow_vregs = -1};                           /* read only when one policy is asked */
  if (strcmp(a->policy, "all")) config_policy_spec_parse(a->policy, &one); /* accept_policy checked it */

  enpu_err err = {0};
  config_job *job = NULL;
  graph *g = NULL;
  cost_ctx *cost = NULL;
  search_ctx *sx = NULL;
  json_t *doc = NULL, *pols = NULL;
  int status = 0;
  char why[256] = "";
  int fits = 1;
  if (config_job_load(a->path, &job, &err) < 0 || (a->slacks.n && set_slacks(job, &a->slacks, &err) < 0) ||
      (fits = grid_bucket_fits(job, phase, a->b.batch, a->b.seq, why, sizeof why, &err)) < 0 ||
      (!fits && enpu_errorf(&err, ENPU_ERR_INFEASIBLE,
                            "%s batch %d seq %d does not fit the chips: %s (the "
                            "farm stores it as infeasible)",
                            cli_phase_names[phase], a->b.batch, a->b.seq, why) < 0) ||
      graph_build(job, phase, a->b.batch, a->b.seq, &g, &err) < 0 || cost_ctx_create(&job->chip, &cost, &err) < 0 ||
      search_ctx_create(&job->chip, &sx, &err) < 0) {
    cli_fail("compile", err.msg);
    status = cli_input_status(err.code);
    goto done;
  }
  search_options opt;
  compile_options(a, job, &opt);
  const config_policy_spec *list = strcmp(a->policy, "all") ? &one : job->policies;
  int npol = 0; /* all: the job chip's policies, listed first (a sweep point's compile on
                  another chip: enpu farm) */
  while (npol < job->policy_count && job->policies[npol].variant == 0) npol++;
  if (strcmp(a->policy, "all")) npol = 1;
  if (a->factors) {
    const sweep_ctx c = {sx, cost, &opt, list, npol, phase, a->b.batch, a->b.seq};
    if (compile_sweep(job, a, &c, &err) < 0) status = cli_fail("compile", err.msg);
    goto done;
  }
  if (a->json) {
    pols = json_object();
    doc = json_pack("{s:s, s:s, s:i, s:i, s:s, s:O}", "job", job->name, "phase", config_phase_name(phase), "batch",
                    a->b.batch, "seq", a->b.seq, "budget", config_budget_name(opt.budget), "policies", pols);
  } else {
    printf("job %s: %s, batch %d, seq %d, %d ops; %s budget, slacks", job->name, config_phase_name(phase),
           a->b.batch, a->b.seq, graph_op_count(g), config_budget_name(opt.budget));
    for (int k = 0; k < job->slack_count; k++) printf(" %g%%", 100 * job->slacks[k]);
    printf("\n");
  }
  for (int p = 0; p < npol && status == 0; p++) {
    search_bucket_result r;
    char name[CONFIG_NAME_LEN];
    config_policy_spec_name(&list[p], name);
    if (compile_one(sx, cost, g, job, a, &opt, &list[p], &r, &err) < 0) {
      status = cli_fail("compile", err.msg);
      break;
    }
    if (a->json) {
      json_t *pj = policy_plans_json(&r, a->vfset, &err);
      if (!pj || json_object_set_new(pols, name, pj) < 0)
        status = cli_fail("compile", err.code ? err.msg : "cannot build JSON output");
    } else if (print_human(name, &r, a->vfset, &err) < 0) {
      status = cli_fail("compile", err.msg);
    }
    search_bucket_result_free(&r);
  }
  if (status == 0 && a->json) status = doc ? cli_print_json(doc) : cli_fail("compile", "JSON");
done:
  json_decref(doc);
  json_decref(pols);
  search_ctx_free(sx);
  cost_ctx_free(cost);
  graph_free(g);
  config_job_free(job);
  return status;
}
