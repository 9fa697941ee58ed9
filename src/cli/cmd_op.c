/* cmd_op.c — `enpu op JOB --phase P --batch B --seq S --op ID --plan SA,VU,SRAM,HBM,ICI
 * [--pipeline nodvfs|enpu|ideal|uniform] [--domains 5|4|3] [--shadow N] [--hbm ctrl-only|full] [--json]`:
 * one operator of a bucket's graph (ids as printed by `enpu graph`) under one DVFS plan,
 * through the cost model: time, per-unit busy time and utilisation, energy breakdown.
 * `enpu op ... --op ID --exhaustive [--threads N] [--json]` instead prints the op's exact
 * Pareto set (all 34^5 plans, the `ideal` policy's no-crossing pipeline) beside Algorithm
 * 1's on the same pipeline, with the energy gap at matched time and the hypervolume ratio.
 * The cost, power and search modules do the work; this file parses, checks and prints.
 *
 * Exit status: 0 ok; 1 the job, graph, op id, plan or evaluation was rejected (message
 * on stderr: an unknown op id names the valid range, a bad plan names the position);
 * 2 usage error. JSON field names are a contract for scripts. */
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "cli_internal.h"
#include "config.h"
#include "cost.h"
#include "graph.h"
#include "power.h"
#include "search.h"

static int run(void *args);

enum { PIPE_NODVFS, PIPE_ENPU, PIPE_IDEAL, PIPE_UNIFORM };
/* The pipelines of the policies of the same names (enpu: the eNPU policies'). */
static const char *const pipelines[] = {ENPU_POLICY_NAME_NODVFS, "enpu", ENPU_POLICY_NAME_IDEAL,
                                        ENPU_POLICY_NAME_UNIFORM, NULL};
enum { HBM_CTRL_ONLY, HBM_FULL };
static const char *const hbm_modes[] = {"ctrl-only", "full", NULL};

typedef struct {
  const char *path, *plan;
  cli_bucket b;
  int op, pipeline, domains, hbm, exhaustive, threads, json, shadow;
} op_args;

/* clang-format off */
static const cli_opt opts[] = {
    CLI_BUCKET_OPTS(op_args),
    {.name = "op", .type = CLI_INT, .at = offsetof(op_args, op), .meta = "ID", .range = CLI_RANGE(0, INT_MAX),
     .flags = CLI_REQUIRED, .help = "operator id in the graph"},
    {.name = "plan", .type = CLI_STRING, .at = offsetof(op_args, plan), .meta = "S,S,S,S,S",
     .help = "frequency states of SA, VU, SRAM, HBM, ICI: 0 (gated) to\n"
             "the chip's peak (34 on TPUv5p)"},
    {.name = "pipeline", .type = CLI_ENUM, .at = offsetof(op_args, pipeline), .choices = pipelines,
     .help = "enpu: async FIFOs between V/f domains;\n"
             ENPU_POLICY_NAME_NODVFS ": the original pipeline, fixed regulator, all-peak plan\n"
             "only; " ENPU_POLICY_NAME_UNIFORM ": the same pipeline on one chip-wide rail (the\n"
             ENPU_POLICY_NAME_UNIFORM " policy of online governors), all five states equal\n"
             "only; " ENPU_POLICY_NAME_IDEAL ": a clock per unit, crossing for free"},
    {.name = "domains", .type = CLI_INT, .at = offsetof(op_args, domains), .meta = "D", .range = CLI_RANGE(3, 5),
     .help = "eNPU V/f domains: 5 (every unit its own), 4 ({FE,SA,VU} share\n"
             "one) or 3 ({FE,SA,VU,SRAM} share one)"},
    {.name = "shadow", .type = CLI_INT, .at = offsetof(op_args, shadow), .meta = "N", .range = CLI_RANGE(0, 255),
     .help = "VU shadow registers of the pipeline (§4.5; default: the\n"
             "chip's)"},
    {.name = "hbm", .type = CLI_ENUM, .at = offsetof(op_args, hbm), .choices = hbm_modes,
     .help = "ctrl-only: only the memory controller scales; full: controller\n"
             "and I/O scale"},
    {.name = "exhaustive", .type = CLI_FLAG, .at = offsetof(op_args, exhaustive),
     .help = "instead of --plan: the exact Pareto set over all plans on the\n"
             "`" ENPU_POLICY_NAME_IDEAL "` pipeline (no crossing, full HBM scaling) beside\n"
             "Algorithm 1's, with the energy gap at matched time (minutes)"},
    {.name = "threads", .type = CLI_INT, .at = offsetof(op_args, threads), .meta = "N", .range = CLI_RANGE(1, 4096),
     .help = "threads of the exhaustive search"},
    CLI_JSON_OPT(op_args, "the result"),
};
/* clang-format on */

static void init(void *args) {
  op_args *a = args;
  a->pipeline = PIPE_ENPU, a->hbm = HBM_CTRL_ONLY, a->domains = 5, a->threads = 1, a->shadow = -1;
}

static int check(const void *args, const cli_parsed *p, char *msg, size_t len) {
  const op_args *a = args;
  if (a->exhaustive && (a->plan || cli_has(p, "domains")))
    return cli_reject(msg, len,
                      "--exhaustive searches every plan on the " ENPU_POLICY_NAME_IDEAL " pipeline: drop --%s",
                      a->plan ? "plan" : "domains");
  if (cli_has(p, "threads") && !a->exhaustive)
    return cli_reject(msg, len, "--threads applies to --exhaustive only");
  if (!a->plan && !a->exhaustive) return cli_reject(msg, len, "missing --plan");
  if (cli_has(p, "domains") && a->pipeline != PIPE_ENPU)
    return cli_reject(msg, len, "--domains applies to --pipeline enpu only (got '%s')", pipelines[a->pipeline]);
  return 0;
}

/* clang-format off */
static const cli_spec spec = {.command = "op", .run = run, .init = init, .check = check,
                              CLI_JOB_ARG(op_args, path), CLI_OPTS(opts, op_args)};
/* clang-format on */
const cli_spec *const cli_op_specs[] = {&spec, NULL};

/* Parse "SA,VU,SRAM,HBM,ICI" into states 0..peak. @return 0, or -1 with msg naming the
 * 1-based position and component of the first bad entry. */
static int parse_plan(const char *text, int peak, cost_plan *plan, char *msg, size_t len) {
  const char *p = text;
  for (int c = 0; c < CONFIG_NCOMP; c++) {
    const char *name = config_component_name((config_component)c);
    const size_t n = strcspn(p, ",");
    char item[32];
    int v;
    if (n == 0 || n >= sizeof item) {
      snprintf(msg, len, "--plan '%s': position %d (%s) is %s: expected a state 0..%d", text, c + 1, name,
               n ? "too long" : "missing", peak);
      return -1;
    }
    memcpy(item, p, n);
    item[n] = '\0';
    if (cli_parse_int(item, &v) < 0 || v < 0 || v > peak) {
      snprintf(msg, len, "--plan '%s': position %d (%s) is '%s': expected a state 0..%d", text, c + 1, name, item,
               peak);
      return -1;
    }
    plan->state[c] = v;
    p += n;
    if (c + 1 < CONFIG_NCOMP && *p++ != ',') {
      snprintf(msg, len, "--plan '%s' has %d states: expected %d (SA,VU,SRAM,HBM,ICI)", text, c + 1, CONFIG_NCOMP);
      return -1;
    }
  }
  if (*p) {
    snprintf(msg, len, "--plan '%s' has more than %d states (SA,VU,SRAM,HBM,ICI)", text, CONFIG_NCOMP);
    return -1;
  }
  return 0;
}

static const char *unit_name(int u) {
  return u == COST_FE ? "fe" : u == POWER_SLOT_OTHER ? "other" : config_component_name((config_component)u);
}

/* ---------------------------------------------------------------------------------
 * Output */

static void print_human(const config_job *job, const graph *g, const graph_op *op, const op_args *a,
                        const cost_plan *plan, const cost_result *r) {
  const graph_info *in = graph_get_info(g);
  printf("op %d (%s, %s) of %s %s, batch %d, seq %d; multiplicity %lld\n", op->id, op->name,
         graph_kind_name(op->kind), job->name, config_phase_name(in->phase), in->batch, in->seq,
         (long long)op->multiplicity);
  printf("pipeline %s", pipelines[a->pipeline]);
  if (a->pipeline == PIPE_ENPU) printf(" (%d domains)", a->domains);
  printf(", HBM %s; plan", hbm_modes[a->hbm]);
  for (int c = 0; c < CONFIG_NCOMP; c++) printf(" %s=%d", unit_name(c), plan->state[c]);
  printf("\ntime %.3f us (core kernel %.3f us, FE stalls %.3f us); schedule unroll %d, "
         "software-pipeline depth %d\n\n",
         r->time_ns / 1e3, r->core_ns / 1e3, r->fe_stall_ns / 1e3, r->unroll, r->sw_depth);
  printf("%-6s %5s %9s %11s %7s %9s %12s %7s\n", "unit", "state", "clock", "busy us", "util", "flop util",
         "energy uJ", "share");
  for (int u = 0; u < POWER_NSLOT; u++) {
    const double e = r->energy_nj[u];
    const double share = r->energy_total_nj > 0 ? 100 * e / r->energy_total_nj : 0;
    if (u == POWER_SLOT_OTHER) {
      printf("%-6s %5s %9s %11s %7s %9s %12.4f %6.1f%%\n", unit_name(u), "-", "-", "-", "-", "-", e / 1e3, share);
      continue;
    }
    char clock[16], flop[16];
    const int s = r->state[u];
    if (u == CONFIG_HBM || u == CONFIG_ICI) snprintf(clock, sizeof clock, "%d/%d bw", s, job->chip.freq_states);
    else snprintf(clock, sizeof clock, "%.2f GHz", config_state_ghz(&job->chip, s));
    if (u == CONFIG_SA || u == CONFIG_VU) snprintf(flop, sizeof flop, "%.1f%%", 100 * r->flop_utilization[u]);
    else snprintf(flop, sizeof flop, "-");
    printf("%-6s %5d %9s %11.3f %6.1f%% %9s %12.4f %6.1f%%\n", unit_name(u), s, clock, r->busy_ns[u] / 1e3,
           100 * r->utilization[u], flop, e / 1e3, share);
  }
  printf("\nenergy %.4f uJ (dynamic %.1f%%, static %.1f%%), average power %.1f W\n", r->energy_total_nj / 1e3,
         100 * r->energy_dynamic_nj / r->energy_total_nj, 100 * r->energy_static_nj / r->energy_total_nj,
         r->time_ns > 0 ? r->energy_total_nj / r->time_ns : 0);
}

/* An object {unit name: values[u]} for units first..last, as JSON integers when
 * as_int. NULL on allocation failure. */
static json_t *unit_object(const double *values, int first, int last, int as_int) {
  json_t *o = json_object();
  for (int u = first; o && u <= last; u++) {
    json_t *v = as_int ? json_integer((json_int_t)values[u]) : json_real(values[u]);
    if (json_object_set_new(o, unit_name(u), v) < 0) {
      json_decref(o);
      o = NULL;
    }
  }
  return o;
}

static json_t *result_json(const config_job *job, const graph *g, const graph_op *op, const op_args *a,
                           const cost_plan *plan, const cost_result *r) {
  const graph_info *in = graph_get_info(g);
  double plan_d[CONFIG_NCOMP], state_d[COST_NUNIT];
  for (int c = 0; c < CONFIG_NCOMP; c++) plan_d[c] = plan->state[c];
  for (int u = 0; u < COST_NUNIT; u++) state_d[u] = r->state[u];
  json_t *doc = json_pack(
      "{s:s, s:s, s:s, s:i, s:i, s:{s:i, s:s, s:s, s:I}, s:s, s:s, s:o, s:o, s:f, s:f, "
      "s:f, s:i, s:i, s:o, s:o, s:o, s:f, s:f, s:f, s:o}",
      "job", job->name, "model", job->model.name, "phase", config_phase_name(in->phase), "batch", in->batch, "seq",
      in->seq, "op", "id", op->id, "name", op->name, "kind", graph_kind_name(op->kind), "multiplicity",
      (json_int_t)op->multiplicity, "pipeline", pipelines[a->pipeline], "hbm", hbm_modes[a->hbm], "plan",
      unit_object(plan_d, 0, CONFIG_NCOMP - 1, 1), "state", unit_object(state_d, 0, COST_FE, 1), "time_ns",
      r->time_ns, "core_ns", r->core_ns, "fe_stall_ns", r->fe_stall_ns, "unroll", r->unroll, "sw_depth",
      r->sw_depth, "busy_ns", unit_object(r->busy_ns, 0, COST_FE, 0), "utilization",
      unit_object(r->utilization, 0, COST_FE, 0), "flop_utilization",
      unit_object(r->flop_utilization, CONFIG_SA, CONFIG_VU, 0), "energy_nj", r->energy_total_nj,
      "energy_dynamic_nj", r->energy_dynamic_nj, "energy_static_nj", r->energy_static_nj, "energy_nj_by_component",
      unit_object(r->energy_nj, 0, POWER_NSLOT - 1, 0));
  if (doc && a->pipeline == PIPE_ENPU && json_object_set_new(doc, "domains", json_integer(a->domains)) < 0) {
    json_decref(doc);
    doc = NULL;
  }
  return doc;
}

/* ---------------------------------------------------------------------------------
 * --exhaustive: exact vs Algorithm 1 */

static json_t *pareto_json(const search_pareto *p, const double *gap, double search_s) {
  json_t *pts = json_array();
  for (int i = 0; pts && i < p->count; i++) {
    const search_point *q = &p->points[i];
    json_t *o = json_pack("{s:[i,i,i,i,i], s:f, s:f}", "state", q->state[0], q->state[1], q->state[2], q->state[3],
                          q->state[4], "time_ns", q->time_ns, "energy_nj", q->energy_nj);
    if (o && gap && json_object_set_new(o, "gap", json_real(gap[i])) < 0) json_decref(o), o = NULL;
    if (json_array_append_new(pts, o) < 0) json_decref(pts), pts = NULL;
  }
  return json_pack("{s:o, s:I, s:f}", "points", pts, "evals", (json_int_t)p->evals, "search_s", search_s);
}

static void print_point(const search_point *q) {
  printf("%2d,%2d,%2d,%2d,%2d %12.3f %13.4f", q->state[0], q->state[1], q->state[2], q->state[3], q->state[4],
         q->time_ns / 1e3, q->energy_nj / 1e3);
}

/* Both Pareto sets side by side, row i of each; the greedy side with its gap. */
static void print_exhaustive(const graph_op *op, const search_pareto *ex, const search_pareto *gr,
                             const double *gap, const search_gap *sum, double ex_s, double gr_s, int threads) {
  printf("op %d (%s, %s), multiplicity %lld; " ENPU_POLICY_NAME_IDEAL " pipeline (no crossing, HBM full)\n", op->id,
         op->name, graph_kind_name(op->kind), (long long)op->multiplicity);
  printf("exact: %d points, %lld plans in %.1f s on %d thread%s; Algorithm 1: %d points, "
         "%lld plans in %.4f s\n\n",
         ex->count, (long long)ex->evals, ex_s, threads, threads == 1 ? "" : "s", gr->count, (long long)gr->evals,
         gr_s);
  printf("%-14s %12s %13s | %-14s %12s %13s %8s\n", "exact plan", "time us", "energy uJ", "greedy plan", "time us",
         "energy uJ", "gap");
  const int rows = ex->count > gr->count ? ex->count : gr->count;
  for (int i = 0; i < rows; i++) {
    if (i < ex->count) print_point(&ex->points[i]);
    else printf("%-14s %12s %13s", "", "", "");
    printf(" | ");
    if (i < gr->count) {
      print_point(&gr->points[i]);
      printf(" %7.3f%%", 100 * gap[i]);
    }
    printf("\n");
  }
  printf("\nenergy gap at matched time: max %.3f%% (greedy point %d), mean %.3f%%; "
         "hypervolume ratio %.5f\n",
         100 * sum->max_gap, sum->worst, 100 * sum->mean_gap, sum->hv_ratio);
}

static int run_exhaustive(const config_job *job, const graph *g, const op_args *a) {
  const graph_op *op = graph_op_at(g, a->op);
  enpu_err err = {0};
  search_ctx *sx = NULL;
  cost_ctx *cost = NULL;
  search_pareto ex = {0}, gr = {0}, tr = {0};
  double *gap = NULL, ex_s = 0, gr_s = 0;
  search_gap sum, tsum;
  search_options opt;
  search_options_default(&opt);
  opt.threads = a->threads;
  opt.ideal_method = SEARCH_OP_EXHAUSTIVE; /* the oracle: every plan, not the bound's shortcut */
  int rc = search_ctx_create(&job->chip, &sx, &err);
  if (!rc) rc = cost_ctx_create(&job->chip, &cost, &err);
  if (!rc) {
    const double t0 = enpu_now_s();
    rc = search_op_compile(sx, cost, op, CONFIG_POLICY_IDEAL, &opt, &ex, &err);
    ex_s = enpu_now_s() - t0;
  }
  if (!rc) {
    opt.ideal_method = SEARCH_OP_GREEDY;
    const double t0 = enpu_now_s();
    rc = search_op_compile(sx, cost, op, CONFIG_POLICY_IDEAL, &opt, &gr, &err);
    gr_s = enpu_now_s() - t0;
  }
  if (!rc && !(gap = calloc((size_t)gr.count, sizeof *gap)))
    rc = enpu_errorf(&err, ENPU_ERR_NOMEM, "out of memory (gaps)");
  if (!rc) rc = search_pareto_gap(&ex, &gr, gap, &sum, &err);
  opt.op_trim = 1; /* Algorithm 1 + the trim pass, summarised beside */
  if (!rc) rc = search_op_compile(sx, cost, op, CONFIG_POLICY_IDEAL, &opt, &tr, &err);
  if (!rc) rc = search_pareto_gap(&ex, &tr, NULL, &tsum, &err);
  int status = 0;
  if (rc) {
    status = cli_fail("op", err.msg);
  } else if (a->json) {
    const graph_info *in = graph_get_info(g);
    json_t *doc = json_pack(
        "{s:s, s:s, s:i, s:i, s:{s:i, s:s, s:s, s:I}, s:s, s:i, s:o, s:o, s:f, s:f, s:i, s:f, "
        "s:{s:i, s:I, s:f, s:f, s:f}}",
        "job", job->name, "phase", config_phase_name(in->phase), "batch", in->batch, "seq", in->seq, "op", "id",
        op->id, "name", op->name, "kind", graph_kind_name(op->kind), "multiplicity", (json_int_t)op->multiplicity,
        "pipeline", ENPU_POLICY_NAME_IDEAL, "threads", a->threads, "exact", pareto_json(&ex, NULL, ex_s), "greedy",
        pareto_json(&gr, gap, gr_s), "max_gap", sum.max_gap, "mean_gap", sum.mean_gap, "worst", sum.worst,
        "hv_ratio", sum.hv_ratio, "trim", "points", tr.count, "evals", (json_int_t)tr.evals, "max_gap",
        tsum.max_gap, "mean_gap", tsum.mean_gap, "hv_ratio", tsum.hv_ratio);
    status = doc ? cli_print_json(doc) : cli_fail("op", "out of memory building the JSON");
    json_decref(doc);
  } else {
    print_exhaustive(op, &ex, &gr, gap, &sum, ex_s, gr_s, a->threads);
    printf("with the trim pass after Algorithm 1: %d points, %lld plans; gap max %.3f%%, mean "
           "%.3f%%; hypervolume ratio %.5f\n",
           tr.count, (long long)tr.evals, 100 * tsum.max_gap, 100 * tsum.mean_gap, tsum.hv_ratio);
  }
  free(gap);
  search_pareto_free(&ex);
  search_pareto_free(&gr);
  search_pareto_free(&tr);
  cost_ctx_free(cost);
  search_ctx_free(sx);
  return status;
}

/* ---------------------------------------------------------------------------------
 * Entry point */

/* Evaluate the op of `a` on a loaded job and graph; print; @return the exit status. */
static int evaluate(const config_job *job, const graph *g, const void *args) {
  const op_args *a = args;
  char msg[256];
  const int nops = graph_op_count(g);
  if (a->op < 0 || a->op >= nops) {
    snprintf(msg, sizeof msg, "op %d does not exist: this graph has ops 0..%d", a->op, nops - 1);
    return cli_fail("op", msg), CLI_EXIT_USAGE;
  }
  if (a->exhaustive) return run_exhaustive(job, g, a);
  const int peak = job->chip.freq_states;
  cost_plan plan;
  if (parse_plan(a->plan, peak, &plan, msg, sizeof msg) < 0) return cli_fail("op", msg), CLI_EXIT_USAGE;
  const int nodvfs = a->pipeline == PIPE_NODVFS, uniform = a->pipeline == PIPE_UNIFORM;
  for (int c = 1; uniform && c < CONFIG_NCOMP; c++)
    if (plan.state[c] != plan.state[0]) {
      snprintf(msg, sizeof msg,
               "--pipeline " ENPU_POLICY_NAME_UNIFORM
               " runs every component at one state: --plan %d,%d,%d,%d,%d has %s at %d",
               plan.state[0], plan.state[0], plan.state[0], plan.state[0], plan.state[0], unit_name(c),
               plan.state[c]);
      return cli_fail("op", msg), CLI_EXIT_USAGE;
    }
  for (int c = 0; nodvfs && c < CONFIG_NCOMP; c++) {
    if (plan.state[c] != peak) {
      snprintf(msg, sizeof msg,
               "--pipeline " ENPU_POLICY_NAME_NODVFS " has no DVFS: every component runs at its peak state, so "
               "--plan must be %d,%d,%d,%d,%d (%s is %d)",
               peak, peak, peak, peak, peak, unit_name(c), plan.state[c]);
      return cli_fail("op", msg), CLI_EXIT_USAGE;
    }
  }

  enpu_err err = {0};
  power_model *pm = NULL;
  cost_ctx *ctx = NULL;
  cost_pipeline pl;
  cost_result r;
  int rc = power_model_create(&job->chip, a->hbm == HBM_FULL ? POWER_HBM_FULL : POWER_HBM_CTRL_ONLY,
                              nodvfs    ? POWER_REG_FIXED
                              : uniform ? POWER_REG_CHIPWIDE
                                        : POWER_REG_DVFS,
                              &pm, &err);
  if (!rc) rc = cost_ctx_create(&job->chip, &ctx, &err);
  if (!rc) {
    if (nodvfs || uniform) cost_pipeline_nodvfs(&pl, pm);
    else if (a->pipeline == PIPE_IDEAL) cost_pipeline_ideal(&pl, pm);
    else rc = cost_pipeline_enpu(&pl, a->domains, pm, &err);
  }
  if (!rc && a->shadow > job->chip.vregs)
    rc = enpu_errorf(&err, ENPU_ERR_RANGE, "--shadow %d: the chip has %d vector registers", a->shadow,
                     job->chip.vregs);
  pl.shadow_vregs = a->shadow;
  if (!rc) rc = cost_eval(ctx, graph_op_at(g, a->op), &plan, &pl, &r, &err);
  int status = 0;
  if (rc) {
    status = cli_fail("op", err.msg);
  } else if (a->json) {
    json_t *doc = result_json(job, g, graph_op_at(g, a->op), a, &plan, &r);
    status = doc ? cli_print_json(doc) : cli_fail("op", "out of memory building the JSON");
    json_decref(doc);
  } else {
    print_human(job, g, graph_op_at(g, a->op), a, &plan, &r);
  }
  cost_ctx_free(ctx);
  power_model_free(pm);
  return status;
}

static int run(void *args) {
  const op_args *a = args;
  return cli_on_graph("op", a->path, &a->b, evaluate, a);
}
