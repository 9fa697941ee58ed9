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
#include <stdlib.h>
#include <string.h>

#include "cli_internal.h"
#include "config.h"
#include "cost.h"
#include "graph.h"
#include "grid.h"
#include "report.h"
#include "search.h"

static void usage(FILE *out) {
  fprintf(out,
          "usage: enpu compile JOB --phase prefill|decode --batch B --seq S\n"
          "                    [--policy NAME|all] [--request policy|walk|greedy|ga]\n"
          "                    [--budget strict|paper] [--transitions per-rail|chip-stall]\n"
          "                    [--lift] [--trim] [--domains 5|4|3] [--threads N]\n"
          "                    [--sample-ops N] [--json] [--vfset] [--slacks LIST]\n"
          "                    [--capacity-factor LIST [--out DIR]]\n"
          "\n"
          "Compile the DVFS plans of one bucket at the job's slacks: op-level Pareto search,\n"
          "request level, finalisation on the real operator order with V/f transitions.\n"
          "Budget at slack p (README, Budget modes): strict max(T_nodvfs, T_peak) + p * T_nodvfs\n"
          "on the plan's whole time; paper (1 + p) * T_nodvfs on its critical-path time, the\n"
          "rest (transitions, crossings) reported as overhead.\n"
          "\n"
          "  --phase, --batch, --seq   the bucket, as for `enpu graph`\n"
          "  --policy NAME  nodvfs, dvfs-c, dvfs-c-walk, dvfs-c-ms, enpu-c, enpu-all, enpu-ms,\n"
          "                 enpu-3dom, enpu-4dom, ideal (the exact op-level set by branch and\n"
          "                 bound), with pg+ (power gating) or @shadow=N (VU shadow\n"
          "                 registers), pg; or all (default: the job's policies)\n"
          "  --request M    policy (default: the GA for dvfs-c, the hull walk with LP bound for\n"
          "                 every other policy), walk, greedy (the paper's) or ga (DVFS-C's\n"
          "                 genetic algorithm: 1000 x 500, warm-started)\n"
          "  --budget B     strict or paper (default: the job's \"budget\", strict if absent)\n"
          "  --transitions T  per-rail (default: each moving rail delays only its components,\n"
          "                 inside the next op) or chip-stall (the whole chip waits for the\n"
          "                 slowest moving rail between ops)\n"
          "  --lift         transition-aware finalisation: also try the plan with V/f rails\n"
          "                 lifted to one voltage band (plans the store cannot record yet)\n"
          "  --trim         Algorithm 1 + the trim pass (lower one domain at a time from each\n"
          "                 Pareto point while time holds and energy does not grow)\n"
          "  --sample-ops N with --policy ideal: exhaustive enumeration on N sampled ops only\n"
          "                 (Algorithm 1 on the ideal pipeline for the others); prints the\n"
          "                 sampled ops' greedy-vs-exact energy gap\n"
          "  --domains D    eNPU V/f domains for enpu-c/enpu-all: 5 (default), 4 or 3\n"
          "  --threads N    threads of the exact or exhaustive op-level search (ideal), default 1\n"
          "  --json         print one JSON document on stdout instead of tables\n"
          "  --vfset        add every plan's vf.set stream (48-bit states + 6-bit mask)\n"
          "  --slacks LIST  comma-separated slacks (fractions) instead of the job's\n"
          "  --capacity-factor LIST  MoE expert load imbalance (paper §4.6, Figure 20): compile\n"
          "                 the bucket at each capacity factor (1 = balanced ... worst = E/k)\n"
          "                 and run the worst-case plans (eNPU's default provisioning) on each\n"
          "                 factor's load; prints savings vs NoDVFS of both per policy and slack\n"
          "  --out DIR      with --capacity-factor: write DIR/figure20.{md,dat,gp,png}\n"
          "  -h, --help     show this help\n");
}

typedef struct {
  const char *path, *phase, *policy, *request, *budget, *transitions, *slacks, *factors, *out;
  int batch, seq, domains, threads, sample_ops;
  int have_batch, have_seq, json, vfset, lift, trim;
} compile_args;

/* @return -1 to go on, or the exit status (0 after --help, 2 on a usage error). */
static int parse_args(int argc, char **argv, compile_args *a) {
  for (int i = 1; i < argc; i++) {
    const char *s = argv[i];
    if (!strcmp(s, "--help") || !strcmp(s, "-h")) {
      usage(stdout);
      return 0;
    }
    if (!strcmp(s, "--json") || !strcmp(s, "--vfset") || !strcmp(s, "--lift") ||
        !strcmp(s, "--trim")) {
      *(s[2] == 'j' ? &a->json : s[2] == 'v' ? &a->vfset : s[2] == 'l' ? &a->lift : &a->trim) = 1;
      continue;
    }
    const char **text = !strcmp(s, "--phase")             ? &a->phase
                        : !strcmp(s, "--policy")          ? &a->policy
                        : !strcmp(s, "--request")         ? &a->request
                        : !strcmp(s, "--budget")          ? &a->budget
                        : !strcmp(s, "--transitions")     ? &a->transitions
                        : !strcmp(s, "--slacks")          ? &a->slacks
                        : !strcmp(s, "--capacity-factor") ? &a->factors
                        : !strcmp(s, "--out")             ? &a->out
                                                          : NULL;
    int *num = !strcmp(s, "--batch")     ? &a->batch
               : !strcmp(s, "--seq")     ? &a->seq
               : !strcmp(s, "--domains") ? &a->domains
               : !strcmp(s, "--threads") ? &a->threads
               : !strcmp(s, "--sample-ops") ? &a->sample_ops
                                         : NULL;
    if (text || num) {
      if (i + 1 >= argc) return cli_usage_error("compile", usage, "option '%s' needs a value", s);
      const char *v = argv[++i];
      if (text) {
        *text = v;
      } else if (cli_parse_int(v, num) < 0) {
        return cli_usage_error("compile", usage, "%s expects an integer, got '%s'", s, v);
      } else {
        a->have_batch |= num == &a->batch;
        a->have_seq |= num == &a->seq;
      }
    } else if (s[0] == '-' && s[1] != '\0') {
      return cli_usage_error("compile", usage, "unknown option '%s'", s);
    } else if (a->path) {
      return cli_usage_error("compile", usage, "more than one job file ('%s')", s);
    } else {
      a->path = s;
    }
  }
  if (!a->path) return cli_usage_error("compile", usage, "missing job file");
  if (!a->phase) return cli_usage_error("compile", usage, "missing --phase");
  if (!a->have_batch) return cli_usage_error("compile", usage, "missing --batch");
  if (!a->have_seq) return cli_usage_error("compile", usage, "missing --seq");
  if (strcmp(a->request, "policy") && strcmp(a->request, "walk") && strcmp(a->request, "greedy") &&
      strcmp(a->request, "ga"))
    return cli_usage_error("compile", usage, "--request expects policy, walk, greedy or ga, got '%s'",
                           a->request);
  config_budget b;
  if (a->budget && config_budget_parse(a->budget, &b) < 0)
    return cli_usage_error("compile", usage, "--budget expects strict or paper, got '%s'", a->budget);
  if (a->transitions && strcmp(a->transitions, "per-rail") && strcmp(a->transitions, "chip-stall"))
    return cli_usage_error("compile", usage, "--transitions expects per-rail or chip-stall, got '%s'",
                           a->transitions);
  if (a->sample_ops < 0 || (a->sample_ops && strcmp(a->policy, "ideal")))
    return cli_usage_error("compile", usage, "--sample-ops expects N >= 1 with --policy ideal");
  if (a->domains < 3 || a->domains > 5)
    return cli_usage_error("compile", usage, "--domains expects 5, 4 or 3, got %d", a->domains);
  if (a->threads < 1)
    return cli_usage_error("compile", usage, "--threads expects a positive integer, got %d",
                           a->threads);
  if (a->out && !a->factors)
    return cli_usage_error("compile", usage, "--out goes with --capacity-factor");
  return -1;
}

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

static double gap_of(const search_slack_plan *pl) {
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
         name, r->t_nodvfs_ns / 1e6, r->t_peak_ns / 1e6,
         r->e_nodvfs_nj / 1e6, r->policy_peak_time_ns / 1e6, r->policy_peak_energy_nj / 1e6,
         r->unique_ops, r->op_evals, r->op_search_s, r->walk_moves);
  printf("%7s %11s %11s %11s %9s %12s %8s %12s %7s %9s %9s %9s %11s %5s\n", "slack", "budget ms",
         "time ms", "crit. ms", "overhead", "energy mJ", "saving", "bound mJ", "gap", "op evals",
         "req evals", "search s", "reg loss mJ", "gated");
  for (int k = 0; k < r->nplans; k++) {
    const search_slack_plan *pl = &r->plans[k];
    printf("%6.1f%% %11.4f %11.4f %11.4f %8.3f%% %12.4f %7.2f%% %12.4f %6.2f%% %9" PRId64
           " %9" PRId64 " %9.3f %11.4f %5s\n",
           100 * pl->slack, pl->budget_ns / 1e6, pl->time_ns / 1e6, pl->cp_time_ns / 1e6,
           pl->overhead_pct, pl->energy_nj / 1e6,
           100 * pl->savings_vs_nodvfs, pl->lower_bound_nj / 1e6, 100 * gap_of(pl),
           pl->op_evals, pl->request_evals, pl->search_s, loss_of(pl) / 1e6, pl->gated ? "yes" : "no");
  }
  for (int k = 0; vfset && k < r->nplans; k++) {
    vf_stream vs = {0};
    const int rc = make_stream(&r->plans[k], &vs, err);
    if (rc == 0) {
      printf("vf.set at slack %g%%: %" PRId64 " commands over %" PRId64
             " op instances (decode + replay ok)\n",
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
  json_t *o = json_pack("{s:f, s:f, s:f, s:f, s:f, s:f, s:f, s:f, s:f, s:I, s:I, s:f}", "slack",
                        pl->slack, "budget_ns", pl->budget_ns, "time_ns", pl->time_ns,
                        "cp_time_ns", pl->cp_time_ns, "overhead_pct", pl->overhead_pct, "energy_nj",
                        pl->energy_nj, "lower_bound_nj", pl->lower_bound_nj,
                        "savings_vs_nodvfs", pl->savings_vs_nodvfs, "gap", gap_of(pl),
                        "op_evals", (json_int_t)pl->op_evals, "request_evals",
                        (json_int_t)pl->request_evals, "search_s", pl->search_s);
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

static json_t *policy_json(const search_bucket_result *r, int vfset, enpu_err *err) {
  json_t *slacks = json_array();
  for (int k = 0; slacks && k < r->nplans; k++)
    if (json_array_append_new(slacks, slack_json(&r->plans[k], vfset, err)) < 0)
      json_decref(slacks), slacks = NULL;
  return json_pack("{s:o, s:f, s:f, s:f, s:f, s:f, s:i, s:I, s:f, s:I}", "slacks", slacks,
                   "t_nodvfs_ns", r->t_nodvfs_ns, "e_nodvfs_nj", r->e_nodvfs_nj, "t_peak_ns",
                   r->t_peak_ns, "peak_time_ns", r->policy_peak_time_ns, "peak_energy_nj",
                   r->policy_peak_energy_nj, "unique_ops", r->unique_ops, "op_evals",
                   (json_int_t)r->op_evals, "op_search_s", r->op_search_s, "walk_moves",
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
static int sampled_set(void *user, int i, int rank, int distinct, search_pareto *out,
                       enpu_err *err) {
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
    fprintf(c->log, "ideal: op %d (%s) exhaustive: %d points, %" PRId64 " plans, %.1f s; "
            "greedy gap max %.3f%% mean %.3f%%, hypervolume ratio %.5f\n", i, op->name,
            out->count, out->evals, enpu_now_s() - t0, 100 * gap.max_gap, 100 * gap.mean_gap,
            gap.hv_ratio);
  search_pareto_free(&greedy);
  return rc;
}

/* `ideal` with the exhaustive op-level search on n of the distinct ops only (evenly spaced
 * over them in graph order) and Algorithm 1 on the ideal pipeline for the rest; prints
 * (stderr under --json) each sampled op's greedy-vs-exact gap; then the request level. */
static int compile_sampled(search_ctx *sx, cost_ctx *cost, const graph *g, const config_job *job,
                           const search_options *opt, int n, int json,
                           search_bucket_result *out, enpu_err *err) {
  const int nops = graph_op_count(g);
  uint64_t *signature = calloc((size_t)nops + 1, sizeof *signature);
  if (!signature) return enpu_errorf(err, ENPU_ERR_NOMEM, "out of memory");
  for (int i = 0; i < nops; i++) signature[i] = graph_op_at(g, i)->signature;
  sampled_user c = {sx, cost, g, opt, n, json ? stderr : stdout};
  search_sets sets = {0};
  int rc = search_sets_compile(signature, nops, sampled_set, &c, &sets, err);
  if (rc == 0)
    rc = search_compile_bucket_sets(sx, cost, g, CONFIG_POLICY_IDEAL, sets.set_of, job->slacks,
                                    job->slack_count, opt, out, err);
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

/* Replace the job's slacks with `list` (increasing fractions >= 0). */
static int set_slacks(config_job *job, const char *list, enpu_err *err) {
  char buf[1024], *item[MAX_LIST];
  snprintf(buf, sizeof buf, "%s", list);
  const int n = split_list(buf, item);
  double *v = n > 0 ? calloc((size_t)n, sizeof *v) : NULL;
  ENPU_RETURN_IF(!v, err, ENPU_ERR_INVALID, "--slacks: expected 1 to %d fractions, got '%s'",
                 MAX_LIST, list);
  for (int k = 0; k < n; k++)
    if (cli_parse_double(item[k], &v[k]) < 0 || !(v[k] >= 0) || (k && !(v[k] > v[k - 1]))) {
      free(v);
      return enpu_errorf(err, ENPU_ERR_INVALID,
                         "--slacks: expected increasing fractions >= 0, got '%s'", list);
    }
  free(job->slacks);
  job->slacks = v;
  job->slack_count = n;
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
    ENPU_FORWARD(search_compile_bucket(c->sx, c->cost, *g, c->pol[p].base, job->slacks,
                                       job->slack_count, &popt, &out[p], err));
  }
  return 0;
}

/* Rows of one factor: the plans made for it and the worst-case plans run on its graph
 * (an epoch policy's on this factor's epochs, each at its first operator's states). */
static int sweep_rows(const config_job *job, const sweep_ctx *c, const graph *g,
                      const search_bucket_result *cur, const search_bucket_result *worst,
                      report_imbalance_row *rows, enpu_err *err) {
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
      *r = (report_imbalance_row){.capacity_factor = factor, .slack = job->slacks[k],
                                  .savings = cur[p].plans[k].savings_vs_nodvfs,
                                  .savings_worst = 1.0 - e / cur[p].e_nodvfs_nj};
      config_policy_spec_name(&c->pol[p], r->policy);
    }
  return 0;
}

static int sweep_print(const compile_args *a, const config_job *job,
                       const report_imbalance_row *rows, size_t n) {
  json_t *arr = a->json ? json_array() : NULL;
  if (!a->json)
    printf("job %s: %s, batch %d, seq %d; savings vs NoDVFS at each expert capacity factor\n"
           "%8s %-9s %7s %14s %16s %11s\n", job->name, a->phase, a->batch, a->seq, "factor",
           "policy", "slack", "plan for load", "worst-case plan", "difference");
  for (size_t i = 0; i < n; i++) {
    const report_imbalance_row *r = &rows[i];
    if (!a->json) {
      printf("%8g %-9s %6.1f%% %13.2f%% %15.2f%% %10.2f%%\n", r->capacity_factor, r->policy,
             100 * r->slack, 100 * r->savings, 100 * r->savings_worst,
             100 * (r->savings - r->savings_worst));
      continue;
    }
    json_t *o = json_pack("{s:s, s:f, s:f, s:f, s:f}", "policy", r->policy, "capacity_factor",
                          r->capacity_factor, "slack", r->slack, "savings", r->savings,
                          "savings_worst_case_plan", r->savings_worst);
    if (!o || json_array_append_new(arr, o) < 0) json_decref(arr), arr = NULL;
  }
  if (!a->json) return 0;
  json_t *doc = arr ? json_pack("{s:s, s:s, s:i, s:i, s:o}", "job", job->name, "phase", a->phase,
                                "batch", a->batch, "seq", a->seq, "rows", arr)
                    : NULL;
  const int rc = doc ? cli_print_json(doc) : cli_fail("compile", "cannot build JSON output");
  json_decref(doc);
  return rc;
}

/* --capacity-factor: the worst case first (the reference plans), then every factor. */
static int compile_sweep(config_job *job, const compile_args *a, const sweep_ctx *c,
                         enpu_err *err) {
  char buf[1024], *fac[MAX_LIST];
  snprintf(buf, sizeof buf, "%s", a->factors);
  const int nf = split_list(buf, fac);
  ENPU_RETURN_IF(nf < 0, err, ENPU_ERR_INVALID, "--capacity-factor: expected 1 to %d factors",
                 MAX_LIST);
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
  snprintf(title, sizeof title, "%s %s batch %d seq %d", job->name, a->phase, a->batch, a->seq);
  if (rc == 0 && a->out) rc = report_write_imbalance(a->out, NULL, title, rows, (size_t)nf * per, err);
  for (int p = 0; p < c->npol; p++) search_bucket_result_free(&worst[p]);
  graph_free(gw);
  free(rows);
  return rc;
}

/* ---------------------------------------------------------------------------------
 * Main */

/* The search options the command line asks for (parse_args checked the names). */
static void compile_options(const compile_args *a, const config_job *job, search_options *opt) {
  search_options_for_job(opt, job, NULL);
  opt->request = !strcmp(a->request, "greedy") ? SEARCH_REQ_GREEDY
                 : !strcmp(a->request, "ga")   ? SEARCH_REQ_GA
                 : !strcmp(a->request, "walk") ? SEARCH_REQ_WALK
                                               : SEARCH_REQ_POLICY;
  opt->budget = job->budget;
  if (a->budget) config_budget_parse(a->budget, &opt->budget);
  if (a->transitions && !strcmp(a->transitions, "chip-stall")) opt->transitions = SEARCH_TRANS_CHIP_STALL;
  opt->transition_aware = a->lift;
  opt->op_trim = a->trim;
  opt->enpu_domains = a->domains;
  opt->threads = a->threads;
}

/* One policy's bucket (its ops sampled for --sample-ops). */
static int compile_one(search_ctx *sx, cost_ctx *cost, const graph *g, const config_job *job,
                       const compile_args *a, const search_options *opt,
                       const config_policy_spec *p, search_bucket_result *r, enpu_err *err) {
  search_options popt = *opt;
  search_options_set_policy(&popt, p);
  return a->sample_ops ? compile_sampled(sx, cost, g, job, &popt, a->sample_ops, a->json, r, err)
                       : search_compile_bucket(sx, cost, g, p->base, job->slacks, job->slack_count,
                                               &popt, r, err);
}

int cli_cmd_compile(int argc, char **argv) {
  compile_args a = {.policy = "all", .request = "policy", .domains = 5, .threads = 1};
  const int st = parse_args(argc, argv, &a);
  if (st >= 0) return st;
  config_phase phase;
  if (config_phase_parse(a.phase, &phase) < 0)
    return cli_usage_error("compile", usage, "--phase expects prefill or decode, got '%s'",
                           a.phase);
  config_policy_spec one = {.base = CONFIG_POLICY_NODVFS, .shadow_vregs = -1};
  if (strcmp(a.policy, "all") && config_policy_spec_parse(a.policy, &one) < 0)
    return cli_usage_error("compile", usage, "unknown --policy '%s'", a.policy);

  enpu_err err = {0};
  config_job *job = NULL;
  graph *g = NULL;
  cost_ctx *cost = NULL;
  search_ctx *sx = NULL;
  json_t *doc = NULL, *pols = NULL;
  int status = 0;
  char why[256] = "";
  int fits = 1;
  if (config_job_load(a.path, &job, &err) < 0 ||
      (a.slacks && set_slacks(job, a.slacks, &err) < 0) ||
      (fits = grid_bucket_fits(job, phase, a.batch, a.seq, why, sizeof why, &err)) < 0 ||
      (!fits && enpu_errorf(&err, ENPU_ERR_INFEASIBLE, "%s batch %d seq %d does not fit the chips: %s (the "
                            "farm stores it as infeasible)", a.phase, a.batch, a.seq, why) < 0) ||
      graph_build(job, phase, a.batch, a.seq, &g, &err) < 0 ||
      cost_ctx_create(&job->chip, &cost, &err) < 0 || search_ctx_create(&job->chip, &sx, &err) < 0) {
    status = cli_fail("compile", err.msg);
    goto done;
  }
  search_options opt;
  compile_options(&a, job, &opt);
  const config_policy_spec *list = strcmp(a.policy, "all") ? &one : job->policies;
  const int npol = strcmp(a.policy, "all") ? 1 : job->policy_count;
  if (a.factors) {
    const sweep_ctx c = {sx, cost, &opt, list, npol, phase, a.batch, a.seq};
    if (compile_sweep(job, &a, &c, &err) < 0) status = cli_fail("compile", err.msg);
    goto done;
  }
  if (a.json) {
    pols = json_object();
    doc = json_pack("{s:s, s:s, s:i, s:i, s:s, s:O}", "job", job->name, "phase",
                    config_phase_name(phase), "batch", a.batch, "seq", a.seq, "budget",
                    config_budget_name(opt.budget), "policies", pols);
  } else {
    printf("job %s: %s, batch %d, seq %d, %d ops; %s budget, slacks", job->name,
           config_phase_name(phase), a.batch, a.seq, graph_op_count(g), config_budget_name(opt.budget));
    for (int k = 0; k < job->slack_count; k++) printf(" %g%%", 100 * job->slacks[k]);
    printf("\n");
  }
  for (int p = 0; p < npol && status == 0; p++) {
    search_bucket_result r;
    char name[CONFIG_NAME_LEN];
    config_policy_spec_name(&list[p], name);
    if (compile_one(sx, cost, g, job, &a, &opt, &list[p], &r, &err) < 0) {
      status = cli_fail("compile", err.msg);
      break;
    }
    if (a.json) {
      json_t *pj = policy_json(&r, a.vfset, &err);
      if (!pj || json_object_set_new(pols, name, pj) < 0)
        status = cli_fail("compile", err.code ? err.msg : "cannot build JSON output");
    } else if (print_human(name, &r, a.vfset, &err) < 0) {
      status = cli_fail("compile", err.msg);
    }
    search_bucket_result_free(&r);
  }
  if (status == 0 && a.json) status = doc ? cli_print_json(doc) : cli_fail("compile", "JSON");
done:
  json_decref(doc);
  json_decref(pols);
  search_ctx_free(sx);
  cost_ctx_free(cost);
  graph_free(g);
  config_job_free(job);
  return status;
}
