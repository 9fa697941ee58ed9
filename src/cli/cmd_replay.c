/* cmd_replay.c — `enpu replay --store S (--trace T | --eval T) --cluster C [--policy NAME|all]
 * [--governors G,...] [--control-ms MS] [--spec EX,NS[,VD]] [--fleet F,..] [--fleet-params K=V,..]
 * [--chip-set P=V,..] [--train T [--epochs N]]
 * [--save-net F] [--load-net F] [--seed N] [--rate X | --rates X,Y,...] [--warp W] [--day]
 * [--safeguards paper|switching|predictive] [--skip-bad-rows] [--model M] [--chip F] [--threads N] [--out DIR
 * [--windows-only]]
 * [--json]`: replay a trace on the cluster with the plans of every policy in the store (or
 * one) and, beside them, online governors running the store's uniform table; print the
 * summary and, with --out, write the per-request and per-window CSVs, the governors'
 * actions per window and summary.json; with --rates, a load sweep (table, sweep.json and
 * a gnuplot plot). The replay module does the work.
 *
 * Exit status: 0 ok; 1 a file or the replay failed, or the store does not fit the
 * cluster; 2 usage error. */
#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli_internal.h"
#include "config.h"
#include "planstore.h"
#include "replay.h"
#include "report.h"

#define MAX_GOVERNORS 8
#define MAX_AGENTS 2

static int run(void *args);

typedef struct {
  const char *store, *trace, *cluster, *policy, *model, *chip, *out;
  const char *governors, *train, *eval, *save_net, *load_net;
  const char *fleet, *chip_set, *fleet_params;
  uint64_t seed, threads, epochs; /* threads 0: the online CPUs */
  double rate, warp, control_ms;
  cli_numbers rates, spec_list;
  replay_spec spec; /* --spec, from spec_list */
  int day, skip_bad, json, windows_only;
  int safeguards; /* config_safeguards; -1: the cluster file's */
} replay_args;

/* config_safeguards, in its order (config_safeguards_name of each). */
static const char *const safeguard_names[] = {"paper", "switching", "predictive", NULL};
_Static_assert(CONFIG_SAFEGUARDS_PAPER == 0 && CONFIG_SAFEGUARDS_SWITCHING == 1 &&
                   CONFIG_SAFEGUARDS_PREDICTIVE == 2 && CONFIG_NSAFEGUARDS == 3,
               "safeguard_names follows config_safeguards");

/* clang-format off */
#define PATH_OPT(field, meta_, help_)                                                              \
  {.name = #field, .type = CLI_STRING, .at = offsetof(replay_args, field), .meta = meta_, .help = help_}

static const cli_opt opts[] = {
    {.name = "store", .type = CLI_STRING, .at = offsetof(replay_args, store), .meta = "S", .flags = CLI_REQUIRED,
     .help = "plan store (HDF5)"},
    PATH_OPT(trace, "T", "trace CSV (e.g. jobs/traces/AzureLLMInferenceTrace_conv.csv)"),
    PATH_OPT(eval, "T", "the trace to replay (the same as --trace)"),
    {.name = "cluster", .type = CLI_STRING, .at = offsetof(replay_args, cluster), .meta = "C", .flags = CLI_REQUIRED,
     .help = "cluster file (nodes, SLO classes, batching, idle, scheduler), e.g.\njobs/clusters/llama3-70b.json"},
    {.name = "policy", .type = CLI_STRING, .at = offsetof(replay_args, policy), .meta = "NAME,..|all",
     .help = "policies of the store, or all (every policy but " ENPU_POLICY_NAME_UNIFORM ", the\ngovernors' table)"},
    PATH_OPT(governors, "G,..",
             "online governors beside the policies, on the store's " ENPU_POLICY_NAME_UNIFORM " policy\n"
             "(one chip-wide V/f state per control period): ondemand, pid, pelm\n"
             "(a DQN choosing the state and self-speculative decoding),\n"
             "pelm-lossless (its verification through every layer), fixed:S"),
    {.name = "control-ms", .type = CLI_DOUBLE, .at = offsetof(replay_args, control_ms), .meta = "MS",
     .range = CLI_ABOVE(0), .help = "control period of the governors (PELM's 10 Hz)"},
    {.name = "spec", .type = CLI_LIST, .at = offsetof(replay_args, spec_list), .meta = "EX,NS[,VD]",
     .range = CLI_AT_LEAST(0), .flags = CLI_WHOLE, .min_count = 2, .max_count = 3,
     .help = "self-speculative decoding, fixed: drafts through EX layers, NS\n"
             "drafts a round, verification through VD layers (default all); adds\n"
             "a <policy>+sd run per store policy, and applies to fixed:S"},
    PATH_OPT(fleet, "F,..",
             "the fleet beside each policy's run: per F, a run <policy>@<idle>\n"
             "(idle mode peak, lowest-state or gated instead of the cluster's),\n"
             "<policy>+as (autoscaling, idle instances in the chip's deep sleep;\n"
             "+pas: prefill sized by the predicted load) or both,\n"
             "<policy>@gated+as; F is '@gated', '+as', '+pas' or '@gated+as'"),
    {.name = "fleet-params", .type = CLI_STRING, .at = offsetof(replay_args, fleet_params), .meta = "K=V,..",
     .help = "autoscaling's parameters: control_ms, window_s, hold_s,\nheadroom, spare, decode_fill, attainment, "
             "min_outcomes"},
    {.name = "chip-set", .type = CLI_STRING, .at = offsetof(replay_args, chip_set), .meta = "P=V,..",
     .help = "set sweepable chip parameters for this replay, e.g.\n"
             "power_states.deep_sleep.wake_ms=100 (enpu replay --help lists none:\n"
             "see docs/fleet.md)"},
    PATH_OPT(train, "T", "train the pelm governor on trace T first, then replay frozen"),
    {.name = "epochs", .type = CLI_U64, .at = offsetof(replay_args, epochs), .meta = "N", .range = CLI_RANGE(1, 256),
     .help = "passes over the training trace"},
    {.name = "save-net", .type = CLI_STRING, .at = offsetof(replay_args, save_net), .meta = "F",
     .help = "save the pelm network (JSON) after the runs"},
    {.name = "load-net", .type = CLI_STRING, .at = offsetof(replay_args, load_net), .meta = "F",
     .help = "start pelm from a saved network (frozen unless --train)"},
    {.name = "seed", .type = CLI_U64, .at = offsetof(replay_args, seed), .meta = "N", .range = CLI_AT_LEAST(0),
     .help = "seed of the trace shaping (--rate, --rates, --day) and of the pelm\nagent"},
    {.name = "rate", .type = CLI_DOUBLE, .at = offsetof(replay_args, rate), .meta = "X", .range = CLI_AT_LEAST(0),
     .help = "expected copies of each request (5 = five times the rate)"},
    {.name = "rates", .type = CLI_LIST, .at = offsetof(replay_args, rates), .meta = "X,Y,...", .range = CLI_ABOVE(0),
     .help = "load sweep: the trace at each rate; SLO attainment, savings and\n"
             "utilisation per rate and policy, and each policy's capacity (the\n"
             "highest rate keeping >= 99 % SLO attainment)"},
    {.name = "warp", .type = CLI_DOUBLE, .at = offsetof(replay_args, warp), .meta = "W", .range = CLI_ABOVE(0),
     .help = "multiply arrival times by W (0.5 = twice as fast)"},
    {.name = "day", .type = CLI_FLAG, .at = offsetof(replay_args, day),
     .help = "a 24-hour day from the trace with a diurnal rate curve\n"
             "(peak 14:00-20:00 at the trace's rate, 0.3x at 04:00)"},
    {.name = "safeguards", .type = CLI_ENUM, .at = offsetof(replay_args, safeguards), .choices = safeguard_names,
     .help = "the scheduler's safeguards instead of the cluster file's: the\n"
             "paper's two; switching (also mid-batch plan switching at arrivals);\n"
             "predictive (switching and a T_target from recent arrivals)"},
    {.name = "skip-bad-rows", .type = CLI_FLAG, .at = offsetof(replay_args, skip_bad),
     .help = "skip malformed trace rows (counted) instead of failing"},
    PATH_OPT(model, "M",
             "model file (default: ../models/<cluster's model>.json beside\n"
             "the cluster file): KV-cache bytes per token"),
    PATH_OPT(chip, "F",
             "chip file (default: ../chips/tpuv5p.json beside the cluster\n"
             "file): DCN bandwidth and idle power"),
    {.name = "threads", .type = CLI_U64, .at = offsetof(replay_args, threads), .meta = "N", .range = CLI_RANGE(1, 256),
     .help = "policies replayed side by side (default: the online CPUs)"},
    PATH_OPT(out, "DIR",
             "write requests_<policy>.csv, windows_<policy>.csv, summary.json,\n"
             "and for governors and +sd runs actions_<run>.csv (with --rates:\n"
             "sweep.json, sweep.dat/.gp/.png)"),
    {.name = "windows-only", .type = CLI_FLAG, .at = offsetof(replay_args, windows_only),
     .help = "with --out, no requests_<policy>.csv (~150 bytes a request)"},
    CLI_JSON_OPT(replay_args, "the summary (or the sweep)"),
};
/* clang-format on */

static void init(void *args) {
  replay_args *a = args;
  a->policy = "all", a->seed = 1, a->rate = 1.0, a->warp = 1.0, a->control_ms = 100, a->epochs = 1;
}

/* Every governor of --governors is known. */
static int check_governors(const char *list, char *msg, size_t len) {
  char names[512];
  snprintf(names, sizeof names, "%s", list ? list : "");
  for (char *save = NULL, *tok = strtok_r(names, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
    replay_governor g;
    enpu_err err = {0};
    if (replay_governor_parse(tok, &g, &err) != ENPU_OK) return cli_reject(msg, len, "%s", err.msg);
  }
  return 0;
}

static int check(const void *args, const cli_parsed *p, char *msg, size_t len) {
  const replay_args *a = args;
  if (a->trace && a->eval) return cli_reject(msg, len, "give --trace or --eval, not both");
  if (!a->trace && !a->eval) return cli_reject(msg, len, "missing --trace");
  if (a->rates.n && cli_has(p, "rate")) return cli_reject(msg, len, "give --rate or --rates, not both");
  if (a->rates.n && (a->governors || a->spec_list.n))
    return cli_reject(msg, len, "--governors and --spec replay one rate, not a --rates sweep");
  if (check_governors(a->governors, msg, len) < 0) return -1;
  const bool pelm = a->governors && strstr(a->governors, "pelm");
  if ((a->train || a->save_net || a->load_net) && !pelm)
    return cli_reject(msg, len, "--train, --save-net and --load-net need the pelm governor");
  return 0;
}

/* clang-format off */
static const cli_spec spec = {.command = "replay", .run = run, .init = init, .check = check,
                              CLI_OPTS(opts, replay_args)};
/* clang-format on */
const cli_spec *const cli_replay_specs[] = {&spec, NULL};

typedef struct {
  config_cluster *cluster;
  config_model *model;
  config_chip *chip;
  replay_trace *raw;   /* as read */
  replay_trace *trace; /* shaped (not with --rates) */
  planstore *ps;
  replay_setup setup;
  const char **policies;
  size_t npolicies;
  replay_governor govs[MAX_GOVERNORS];
  size_t ngovs;
  replay_pelm *pelm[MAX_AGENTS]; /* one per pelm governor */
  size_t npelm;
  replay_job *jobs; /* the store policies, their +sd runs, the governors */
  size_t njobs;
  replay_result **runs; /* per job */
  replay_sweep *sweep;
  char (*fleet_names)[64]; /* --fleet's run names */
} replay_inputs;

static void inputs_free(replay_inputs *in) {
  for (size_t i = 0; in->runs && i < in->njobs; i++) replay_result_free(in->runs[i]);
  free(in->runs);
  free(in->jobs);
  for (size_t i = 0; i < in->npelm; i++) replay_pelm_free(in->pelm[i]);
  free(in->policies);
  free(in->fleet_names);
  replay_sweep_free(in->sweep);
  planstore_close(in->ps);
  replay_trace_free(in->trace);
  replay_trace_free(in->raw);
  config_chip_free(in->chip);
  config_model_free(in->model);
  config_cluster_free(in->cluster);
}

/* --chip-set: each path=value applied to the loaded chip. */
static int chip_set(const char *list, config_chip *chip, enpu_err *err) {
  char buf[1024];
  snprintf(buf, sizeof buf, "%s", list ? list : "");
  for (char *save = NULL, *tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save))
    ENPU_FORWARD(config_chip_set(chip, tok, err));
  return ENPU_OK;
}

/* --fleet-params: key=value pairs into the autoscaling parameters. */
static int fleet_params(const char *list, replay_fleet_params *p, enpu_err *err) {
  char buf[512];
  snprintf(buf, sizeof buf, "%s", list ? list : "");
  if (!buf[0]) return ENPU_OK;
  enpu_kv kv[16];
  const int n = enpu_kv_split(buf, kv, 16, err);
  ENPU_FORWARD(n);
  const struct {
    const char *key;
    double *real;
    int *count; /* a whole number */
  } params[] = {{"control_ms", &p->control_ms, NULL}, {"window_s", &p->window_s, NULL},
                {"hold_s", &p->hold_s, NULL},         {"headroom", &p->headroom, NULL},
                {"spare", NULL, &p->spare},           {"decode_fill", &p->decode_fill, NULL},
                {"attainment", &p->attainment, NULL}, {"min_outcomes", NULL, &p->min_outcomes}};
  const int nparams = (int)(sizeof params / sizeof *params);
  for (int k = 0; k < n; k++) {
    int i = 0;
    while (i < nparams && strcmp(kv[k].key, params[i].key)) i++;
    char *end = NULL;
    const double v = i < nparams ? strtod(kv[k].value, &end) : 0;
    ENPU_RETURN_IF(i == nparams || end == kv[k].value || *end || !isfinite(v) ||
                       (params[i].count && (v != floor(v) || fabs(v) > INT_MAX)),
                   err, ENPU_ERR_INVALID,
                   "--fleet-params: expected %s=<number> (control_ms, window_s, hold_s, headroom, decode_fill, "
                   "attainment; spare and min_outcomes whole numbers)",
                   kv[k].key);
    if (params[i].real) *params[i].real = v;
    else *params[i].count = (int)v;
  }
  return ENPU_OK;
}

/* --fleet: every picked policy once more per fleet, "<policy><fleet>". */
static int add_fleets(const replay_args *a, replay_inputs *in, enpu_err *err) {
  if (!a->fleet) return ENPU_OK;
  char buf[256];
  snprintf(buf, sizeof buf, "%s", a->fleet);
  size_t nf = 0;
  char *fleets[16];
  for (char *save = NULL, *tok = strtok_r(buf, ",", &save); tok && nf < 16; tok = strtok_r(NULL, ",", &save))
    fleets[nf++] = tok;
  const size_t n = in->npolicies;
  const char **names = realloc(in->policies, (n * (nf + 1) + 1) * sizeof *names);
  ENPU_RETURN_IF(!names, err, ENPU_ERR_NOMEM, "out of memory");
  in->policies = names;
  in->fleet_names = calloc(n * nf + 1, sizeof *in->fleet_names);
  ENPU_RETURN_IF(!in->fleet_names, err, ENPU_ERR_NOMEM, "out of memory");
  for (size_t f = 0; f < nf; f++)
    for (size_t i = 0; i < n; i++) {
      char *name = in->fleet_names[f * n + i], base[64];
      snprintf(name, 64, "%s%s", names[i], fleets[f]);
      replay_job check;
      ENPU_FORWARD(replay_job_parse(name, &check, base, sizeof base, err));
      ENPU_RETURN_IF(!check.idle_set && !check.autoscale, err, ENPU_ERR_INVALID,
                     "--fleet %s: expected @<idle mode>, +as or +pas, or both", fleets[f]);
      in->policies[in->npolicies++] = name;
    }
  return ENPU_OK;
}

/* Model and chip files default to the project layout beside the cluster file. */
static int load_configs(const replay_args *a, replay_inputs *in, enpu_err *err) {
  ENPU_FORWARD(config_cluster_load(a->cluster, &in->cluster, err));
  char path[CONFIG_PATH_LEN], rel[CONFIG_PATH_LEN];
  snprintf(rel, sizeof rel, "../models/%s.json", in->cluster->model_name);
  if (!a->model) ENPU_FORWARD(enpu_path_relative(a->cluster, rel, path, sizeof path, err));
  ENPU_FORWARD(config_model_load(a->model ? a->model : path, &in->model, err));
  if (!a->chip) ENPU_FORWARD(enpu_path_relative(a->cluster, "../chips/tpuv5p.json", path, sizeof path, err));
  ENPU_FORWARD(config_chip_load(a->chip ? a->chip : path, &in->chip, err));
  ENPU_FORWARD(chip_set(a->chip_set, in->chip, err));
  ENPU_FORWARD(replay_setup_init(&in->setup, in->cluster, in->model, in->chip, err));
  ENPU_FORWARD(fleet_params(a->fleet_params, &in->setup.fleet, err));
  if (a->safeguards >= 0) in->setup.safeguards = (config_safeguards)a->safeguards;
  return ENPU_OK;
}

/* Whether name is one of the comma-separated list. */
static bool listed(const char *list, const char *name) {
  const size_t n = strlen(name);
  for (const char *p = list; p && *p; p = strchr(p, ',') ? strchr(p, ',') + 1 : NULL)
    if (!strncmp(p, name, n) && (p[n] == ',' || p[n] == '\0')) return true;
  return false;
}

/* The store's policies to run: all, or the ones named. */
static int pick_policies(const replay_args *a, replay_inputs *in, enpu_err *err) {
  const size_t np = planstore_policy_count(in->ps);
  in->policies = calloc(np ? np : 1, sizeof *in->policies);
  ENPU_RETURN_IF(!in->policies, err, ENPU_ERR_NOMEM, "out of memory");
  for (size_t i = 0; i < np; i++) {
    const char *name = planstore_policy_name(in->ps, i);
    /* a sweep point's policies price their plans on another chip than the cluster's */
    const bool all = !strcmp(a->policy, "all") && !config_policy_named(name, CONFIG_POLICY_UNIFORM) &&
                     !config_variant_of(name);
    if (all || listed(a->policy, name)) in->policies[in->npolicies++] = name;
  }
  ENPU_RETURN_IF(in->npolicies == 0, err, ENPU_ERR_NOT_FOUND, "no policy '%s' in %s", a->policy, a->store);
  return ENPU_OK;
}

/* --governors: each parsed, the pelm agent made (or loaded). */
static int pick_governors(const replay_args *a, replay_inputs *in, enpu_err *err) {
  if (!a->governors) return ENPU_OK;
  char buf[512];
  snprintf(buf, sizeof buf, "%s", a->governors);
  for (char *save = NULL, *tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
    ENPU_RETURN_IF(in->ngovs == MAX_GOVERNORS, err, ENPU_ERR_INVALID, "at most %d governors", MAX_GOVERNORS);
    replay_governor *g = &in->govs[in->ngovs++];
    ENPU_FORWARD(replay_governor_parse(tok, g, err));
    g->control_ms = a->control_ms;
    if (a->spec_list.n) g->fixed_spec = a->spec;
    if (g->kind != REPLAY_GOV_PELM) continue;
    ENPU_RETURN_IF(in->npelm == MAX_AGENTS || (in->npelm && (a->load_net || a->save_net || a->train)), err,
                   ENPU_ERR_INVALID, "one PELM governor at a time%s",
                   in->npelm == MAX_AGENTS ? "" : " with --train, --save-net or --load-net");
    replay_pelm **agent = &in->pelm[in->npelm++];
    if (a->load_net) {
      ENPU_FORWARD(replay_pelm_load(a->load_net, &in->setup, agent, err));
    } else {
      replay_pelm_params p;
      replay_pelm_params_default(&p);
      p.seed = a->seed;
      p.lossless = g->lossless;
      ENPU_FORWARD(replay_pelm_create(&p, &in->setup, agent, err));
    }
    g->pelm = *agent;
    g->learn = !a->load_net || a->train;
  }
  return ENPU_OK;
}

/* The runs: every store policy, its +sd run with --spec, every governor. */
static int make_jobs(const replay_args *a, replay_inputs *in, enpu_err *err) {
  const size_t n = in->npolicies * (a->spec_list.n ? 2 : 1) + in->ngovs;
  in->jobs = calloc(n, sizeof *in->jobs);
  in->runs = calloc(n, sizeof *in->runs);
  ENPU_RETURN_IF(!in->jobs || !in->runs, err, ENPU_ERR_NOMEM, "out of memory");
  for (size_t i = 0; i < in->npolicies; i++) in->jobs[in->njobs++] = (replay_job){.policy = in->policies[i]};
  for (size_t i = 0; a->spec_list.n && i < in->npolicies; i++)
    in->jobs[in->njobs++] = (replay_job){.policy = in->policies[i], .spec = a->spec};
  for (size_t i = 0; i < in->ngovs; i++) in->jobs[in->njobs++] = (replay_job){.governor = &in->govs[i]};
  return ENPU_OK;
}

/* --train: the pelm governor learns on the training trace (shaped as the replayed one),
 * epoch after epoch; the replay then runs it frozen. */
/* A trace out of time order is replayed sorted, never silently. */
static void warn_unsorted(const char *path, const replay_trace *t) {
  if (t->unsorted)
    fprintf(stderr,
            "enpu replay: warning: %zu rows of %s are earlier than the row before them (first: line %zu); "
            "replayed in time order\n",
            t->unsorted, path, t->first_unsorted_line);
}

static int train_pelm(const replay_args *a, replay_inputs *in, enpu_err *err) {
  replay_governor *g = NULL;
  for (size_t i = 0; i < in->ngovs; i++)
    if (in->govs[i].kind == REPLAY_GOV_PELM) g = &in->govs[i];
  replay_trace *raw = NULL, *t = NULL;
  const replay_shape shape = {.rate = a->rate, .warp = a->warp, .day = a->day, .seed = a->seed};
  int rc = replay_trace_load(a->train, a->skip_bad, &raw, err);
  if (rc == ENPU_OK) warn_unsorted(a->train, raw);
  if (rc == ENPU_OK) rc = replay_trace_shape(raw, &shape, &t, err);
  const replay_job job = {.governor = g};
  for (uint64_t e = 0; rc == ENPU_OK && e < a->epochs; e++) {
    replay_result *r = NULL;
    g->learn = true;
    rc = replay_run_job(in->ps, &job, t, &in->setup, &r, err);
    if (rc != ENPU_OK) break;
    const replay_summary *s = replay_result_summary(r);
    const replay_gov_summary *gs = replay_result_gov_summary(r);
    fprintf(stderr,
            "enpu replay: %s training epoch %llu/%llu on %s: SLO %.2f %%, energy %.1f MJ, mean reward %.4f "
            "(first 10 %%) -> %.4f (rest), %llu updates\n",
            s->policy, (unsigned long long)e + 1, (unsigned long long)a->epochs, a->train, 100 * s->slo_attainment,
            s->energy_nj * 1e-15, gs->reward_first10, gs->reward_last90, (unsigned long long)gs->updates);
    replay_result_free(r);
  }
  g->learn = false;
  replay_trace_free(t);
  replay_trace_free(raw);
  if (rc != ENPU_OK) enpu_err_prefix(err, "training on %s: ", a->train);
  return rc;
}

static int load_inputs(const replay_args *a, replay_inputs *in, enpu_err *err) {
  ENPU_FORWARD(load_configs(a, in, err));
  char warning[ENPU_ERR_MSG_LEN];
  ENPU_FORWARD(replay_check_store(a->store, in->cluster, in->model, in->chip, warning, sizeof warning, err));
  if (warning[0]) fprintf(stderr, "enpu replay: warning: %s\n", warning);
  const double beta = in->cluster->scheduler.predictive_beta,
               u_max = replay_predictive_u_max(beta, in->cluster->node[CONFIG_PREFILL].nodes);
  if (in->setup.safeguards == CONFIG_SAFEGUARDS_PREDICTIVE && u_max <= 0)
    fprintf(stderr,
            "enpu replay: note: predictive safeguards on %d prefill nodes: square-root staffing leaves such a pool "
            "no headroom (1 - beta/sqrt(nodes) = %.2f at beta %.2f), so every prefill batch runs its fastest "
            "plan and prefill saves nothing; --safeguards switching lets prefill spend its TTFT slack (safeguard 1 "
            "still guards the queue), as does a pool of more than beta^2 = %.1f nodes\n",
            in->cluster->node[CONFIG_PREFILL].nodes, u_max, beta, beta * beta);
  ENPU_FORWARD(replay_trace_load(a->trace, a->skip_bad, &in->raw, err));
  if (in->raw->skipped)
    fprintf(stderr, "enpu replay: skipped %zu bad rows of %s (first: %s)\n", in->raw->skipped, a->trace,
            in->raw->first_skipped);
  warn_unsorted(a->trace, in->raw);
  if (!a->rates.n) {
    const replay_shape shape = {.rate = a->rate, .warp = a->warp, .day = a->day, .seed = a->seed};
    ENPU_FORWARD(replay_trace_shape(in->raw, &shape, &in->trace, err));
  }
  ENPU_FORWARD(planstore_open(a->store, &in->ps, err));
  ENPU_FORWARD(pick_policies(a, in, err));
  ENPU_FORWARD(add_fleets(a, in, err));
  ENPU_FORWARD(pick_governors(a, in, err));
  ENPU_FORWARD(make_jobs(a, in, err));
  return a->train ? train_pelm(a, in, err) : ENPU_OK;
}

/* ---- one rate: the table ------------------------------------------------------------ */

static const replay_summary *nodvfs_baseline(const replay_inputs *in) {
  for (size_t i = 0; i < in->njobs; i++)
    if (config_policy_named(replay_result_summary(in->runs[i])->policy, CONFIG_POLICY_NODVFS))
      return replay_result_summary(in->runs[i]);
  return NULL;
}

/* Percent saved against the base, or "-" where there is nothing to compare with. */
static void pct_cell(char *out, size_t len, double e, double base) {
  if (base > 0) snprintf(out, len, "%.2f", 100 * (1 - e / base));
  else snprintf(out, len, "-");
}

static void print_row(const replay_summary *s, const replay_summary *b) {
  const replay_phase_stats *p = s->phase, *q = b ? b->phase : NULL;
  char c[6][32];
  pct_cell(c[0], 32, p[0].busy_energy_nj, q ? q[0].busy_energy_nj : 0);
  pct_cell(c[1], 32, p[1].busy_energy_nj, q ? q[1].busy_energy_nj : 0);
  pct_cell(c[2], 32, p[0].busy_energy_nj + p[1].busy_energy_nj, q ? q[0].busy_energy_nj + q[1].busy_energy_nj : 0);
  pct_cell(c[3], 32, p[0].energy_nj, q ? q[0].energy_nj : 0);
  pct_cell(c[4], 32, p[1].energy_nj, q ? q[1].energy_nj : 0);
  pct_cell(c[5], 32, s->energy_nj, b ? b->energy_nj : 0);
  const double batches = (double)(p[0].batches + p[1].batches);
  printf("%-14s %7llu %5llu %7.2f %8.1f %8.1f %7.1f %7.1f %7s %7s %7s %7s %7s %7s %6.2f %6.2f %5llu %6.2f\n",
         s->policy, (unsigned long long)s->served, (unsigned long long)s->unservable, 100 * s->slo_attainment,
         s->ttft_p50_ns * 1e-6, s->ttft_p99_ns * 1e-6, s->tpot_p50_ns * 1e-6, s->tpot_p99_ns * 1e-6, c[0], c[1],
         c[2], c[3], c[4], c[5], batches ? 100 * (double)(p[0].safeguard1 + p[1].safeguard1) / batches : 0,
         batches ? 100 * (double)(p[0].locked + p[1].locked) / batches : 0,
         (unsigned long long)(p[0].late + p[1].late),
         p[0].batches ? 100 * (double)p[0].switched / p[0].batches : 0);
}

/* Per class, how its requests were served (the counts add up to its requests), and what
 * limits the savings: each class's mean slack, the busy time at 0 % slack, the padding. */
static void print_coverage(const replay_inputs *in) {
  const config_cluster *cl = in->cluster;
  printf("\n%-14s %-10s %8s %8s %8s %8s %8s %6s %7s %7s %8s %8s %7s %7s\n", "coverage", "class", "requests", "plan",
         "chunked", "fallback", "both", "unsrv", "SLO %", "slack", "", "at 0 %", "padding", "");
  printf("%-14s %-10s %8s %8s %8s %8s %8s %6s %7s %7s %8s %8s %7s %7s\n", "policy", "", "", "", "", "", "", "", "",
         "TTFT", "TPOT", "pf/dec", "pf", "dec");
  for (size_t i = 0; i < in->njobs; i++) {
    const replay_summary *s = replay_result_summary(in->runs[i]);
    const replay_phase_stats *p = &s->phase[CONFIG_PREFILL], *d = &s->phase[CONFIG_DECODE];
    for (int c = 0; c < cl->slo_count; c++) {
      const replay_class_stats *k = &s->classes[c];
      char at0[32] = "", pad[2][16] = {"", ""};
      if (c == 0) {
        snprintf(at0, sizeof at0, "%.0f/%.0f", p->busy_node_ns > 0 ? 100 * p->fastest_node_ns / p->busy_node_ns : 0,
                 d->busy_node_ns > 0 ? 100 * d->fastest_node_ns / d->busy_node_ns : 0);
        snprintf(pad[0], 16, "%.3f", p->tokens ? (double)p->padded_tokens / (double)p->tokens : 0);
        snprintf(pad[1], 16, "%.3f", d->tokens ? (double)d->padded_tokens / (double)d->tokens : 0);
      }
      char num[3][16] = {"-", "-", "-"}; /* "-": no request to average over */
      if (k->requests) snprintf(num[0], 16, "%.2f", 100.0 * (double)k->slo_met / (double)k->requests);
      if (k->ttft_n) snprintf(num[1], 16, "%.3f", k->ttft_slack_sum / (double)k->ttft_n);
      if (k->tpot_n) snprintf(num[2], 16, "%.3f", k->tpot_slack_sum / (double)k->tpot_n);
      printf("%-14s %-10s %8llu %8llu %8llu %8llu %8llu %6llu %7s %7s %8s %8s %7s %7s\n", c ? "" : s->policy,
             cl->slo[c].name, (unsigned long long)k->requests, (unsigned long long)k->by[0],
             (unsigned long long)k->by[REPLAY_BY_CHUNKED], (unsigned long long)k->by[REPLAY_BY_FALLBACK],
             (unsigned long long)k->by[REPLAY_BY_CHUNKED | REPLAY_BY_FALLBACK], (unsigned long long)k->unservable,
             num[0], num[1], num[2], at0, pad[0], pad[1]);
    }
  }
  printf("\nplan: every pass on a compiled plan; chunked: prefill longer than the largest seq bucket run\n"
         "in chunks; fallback: a decode pass beyond the largest seq bucket at " ENPU_POLICY_DISPLAY_NODVFS
         ", extrapolated; both:\n"
         "chunked and fallback. Class by input length. slack: mean (SLO - latency) / SLO of the served\n"
         "requests (" ENPU_POLICY_NAME_NODVFS
         "'s is the slack there is to spend); at 0 %%: %% of busy time at the fastest plan;\n"
         "padding: padded tokens / tokens run.\n");
}

static void print_table(const replay_inputs *in) {
  const replay_summary *base = nodvfs_baseline(in), *s0 = replay_result_summary(in->runs[0]);
  printf("%zu requests (%s cluster: %d prefill + %d decode nodes; idle %s; safeguards %s, safeguard 2 %s; "
         "horizon %.1f s)\n\n",
         in->trace->count, in->cluster->name, in->cluster->node[CONFIG_PREFILL].nodes,
         in->cluster->node[CONFIG_DECODE].nodes, config_idle_mode_name(in->cluster->idle.mode),
         config_safeguards_name(in->setup.safeguards), config_safeguard2_name(in->cluster->scheduler.safeguard2),
         s0->horizon_ns * 1e-9);
  printf("%-14s %7s %5s %7s %8s %8s %7s %7s %23s %23s %6s %6s %5s\n", "", "", "", "", "TTFT ms", "", "TPOT ms", "",
         "busy-only savings %", "with-idle savings %", "", "", "");
  printf("%-14s %7s %5s %7s %8s %8s %7s %7s %7s %7s %7s %7s %7s %7s %6s %6s %5s %6s\n", "policy", "served", "unsrv",
         "SLO %", "p50", "p99", "p50", "p99", "prefill", "decode", "all", "prefill", "decode", "all", "sg1 %",
         "lock %", "late", "sw %");
  for (size_t i = 0; i < in->njobs; i++) print_row(replay_result_summary(in->runs[i]), base);
  printf("\nbusy-only: the batches' energy (the paper's simulator counts no idle energy); with idle:\n"
         "plus idle chips and KV transfers over DCN. sg1 %%: batches given a less aggressive plan by\n"
         "safeguard 1; lock %%: batches run while safeguard 2 held the chips at peak; late: batches\n"
         "whose own target was below their fastest plan (governors: slower than their target); sw %%:\n"
         "prefill batches switched mid-way to a faster plan (safeguards switching, predictive).\n"
         "--json or --out for peak/off-peak hours.\n");
  print_coverage(in);
  bool header = false;
  for (size_t i = 0; i < in->njobs; i++) {
    const replay_gov_summary *g = replay_result_gov_summary(in->runs[i]);
    if (!g->governor && !g->speculative) continue;
    if (!header)
      printf("\n%-14s %9s %8s %9s %10s %11s %13s %13s\n", "online", "decisions", "changes", "sd rounds",
             "tokens/rnd", "lossy tok", "reward 10%", "reward rest");
    header = true;
    printf("%-14s %9llu %8llu %9llu %10.3f %11llu %13.4f %13.4f\n", replay_result_summary(in->runs[i])->policy,
           (unsigned long long)g->decisions, (unsigned long long)g->state_changes,
           (unsigned long long)g->spec_rounds, g->mean_tokens_per_round, (unsigned long long)g->lossy_tokens,
           g->reward_first10, g->reward_last90);
  }
}

/* --fleet: where each run's energy went, its SLO and its active instances. */
static void print_fleet(const replay_inputs *in) {
  const replay_summary *base = nodvfs_baseline(in);
  printf("\n%-22s %7s %7s %7s %9s %9s %9s %9s %9s %7s %9s %9s %6s\n", "fleet", "SLO %", "TTFT %", "TPOT %",
         "busy MJ", "idle MJ", "sleep MJ", "trans MJ", "total MJ", "save %", "P inst-h", "D inst-h", "wakes");
  for (size_t i = 0; i < in->njobs; i++) {
    const replay_summary *s = replay_result_summary(in->runs[i]);
    const replay_phase_stats *p = s->phase;
    double busy = 0, idle = 0, sleep = 0, trans = 0, active[CONFIG_NPHASE];
    for (int ph = 0; ph < CONFIG_NPHASE; ph++) {
      busy += p[ph].busy_energy_nj, sleep += p[ph].sleep_energy_nj, trans += p[ph].transition_energy_nj;
      idle += p[ph].idle_energy_nj - p[ph].sleep_energy_nj - p[ph].transition_energy_nj;
      active[ph] = (in->cluster->node[ph].nodes * s->horizon_ns - p[ph].asleep_node_ns) * 1e-9 / 3600;
    }
    char save[32];
    pct_cell(save, sizeof save, s->energy_nj, base ? base->energy_nj : 0);
    const double req = s->requests ? (double)s->requests : 1;
    printf("%-22s %7.2f %7.2f %7.2f %9.3f %9.3f %9.3f %9.3f %9.3f %7s %9.2f %9.2f %6llu\n", s->policy,
           100 * s->slo_attainment, 100 * s->ttft_met / req, 100 * s->tpot_met / req, busy * 1e-15, idle * 1e-15,
           sleep * 1e-15, trans * 1e-15, s->energy_nj * 1e-15, save, active[0], active[1],
           (unsigned long long)(p[0].wakes + p[1].wakes));
  }
  printf("\nidle: awake idle chips; sleep: instances autoscaling put to sleep (the chip's deep sleep);\n"
         "trans: their wake-ups; total adds KV transfers; save: against " ENPU_POLICY_NAME_NODVFS " (always on);\n"
         "inst-h: instance-hours awake. Per SLO class: --json or --out (\"fleet\").\n");
}

static int run_one(const replay_args *a, replay_inputs *in, int threads, enpu_err *err) {
  ENPU_FORWARD(replay_run_jobs(in->ps, in->jobs, in->njobs, in->trace, &in->setup, threads, in->runs, err));
  if (a->save_net) ENPU_FORWARD(replay_pelm_save(in->pelm[0], a->save_net, err));
  if (a->out)
    ENPU_FORWARD(
        replay_write_outputs(a->out, (const replay_result *const *)in->runs, in->njobs, !a->windows_only, err));
  for (size_t i = 0; i < in->njobs; i++) {
    const replay_summary *s = replay_result_summary(in->runs[i]);
    if (s->unservable)
      fprintf(stderr,
              "enpu replay: policy %s: %llu requests unservable, not run and counted as SLO misses (first: %s)\n",
              s->policy, (unsigned long long)s->unservable, s->unservable_example);
  }
  if (!a->json) {
    print_table(in);
    if (in->fleet_names) print_fleet(in);
    return ENPU_OK;
  }
  json_t *doc = NULL;
  ENPU_FORWARD(replay_summary_json((const replay_result *const *)in->runs, in->njobs, &doc, err));
  const int printed = cli_print_json(doc);
  json_decref(doc);
  return printed == 0 ? ENPU_OK : ENPU_ERR_IO;
}

/* ---- --rates: the sweep ---------------------------------------------------------------- */

static void print_sweep(const replay_sweep *s) {
  printf("%8s %9s %6s %-9s %7s %9s %9s %15s %15s %6s %6s %6s %6s\n", "rate", "requests", "peak/s", "policy",
         "SLO %", "save busy", "save idle", "prefill % (max)", "decode % (max)", "sg1 %", "lock %", "sw %",
         "queue");
  for (size_t r = 0; r < s->nrates; r++)
    for (size_t p = 0; p < s->npolicies; p++) {
      const replay_sweep_cell *c = &s->cells[r * s->npolicies + p];
      printf("%8g %9zu %6.0f %-9s %7.2f %9.2f %9.2f %7.2f (%5.1f) %7.2f (%5.1f) %6.2f %6.2f %6.2f %6llu\n",
             s->rates[r], s->requests[r], s->peak_arrivals_per_s[r], s->policies[p], 100 * c->slo_attainment,
             100 * c->savings_busy, 100 * c->savings, 100 * c->util[0], 100 * c->util_busiest[0], 100 * c->util[1],
             100 * c->util_busiest[1], 100 * c->safeguard1_share, 100 * c->locked_share, 100 * c->switched_share,
             (unsigned long long)c->peak_queue);
    }
  printf("\npeak/s: the most arrivals in one second; queue: the longest prefill queue; sw %%: batches\n"
         "switched mid-way. prefill %%: prefill node-time busy; decode %%: decode batch slots filled\n"
         "(mean members / max batch); over the run, and (max) in the busiest 5-minute window.\n"
         "Capacity, the highest rate with >= %.0f %% SLO attainment there and below:\n",
         100 * REPLAY_CAPACITY_ATTAINMENT);
  for (size_t p = 0; p < s->npolicies; p++)
    printf("  %-9s %s%g\n", s->policies[p], s->capacity[p] > 0 ? "" : "none of the rates tried, ", s->capacity[p]);
}

static int run_sweep(const replay_args *a, replay_inputs *in, int threads, enpu_err *err) {
  const replay_shape base = {.rate = 1, .warp = a->warp, .day = a->day, .seed = a->seed};
  ENPU_FORWARD(replay_sweep_run(in->ps, in->policies, in->npolicies, in->raw, &base, a->rates.v, (size_t)a->rates.n,
                                &in->setup, threads, &in->sweep, err));
  json_t *doc = NULL;
  ENPU_FORWARD(replay_sweep_json(in->sweep, &doc, err));
  int rc = a->out ? enpu_mkdir_p(a->out, err) : ENPU_OK;
  if (rc == ENPU_OK && a->out) {
    char path[CONFIG_PATH_LEN];
    snprintf(path, sizeof path, "%s/sweep.json", a->out);
    rc = json_dump_file(doc, path, JSON_INDENT(2) | JSON_REAL_PRECISION(12)) == 0
             ? report_sweep(a->out, doc, NULL, err)
             : enpu_errorf(err, ENPU_ERR_IO, "cannot write %s", path);
  }
  if (rc == ENPU_OK && a->json && cli_print_json(doc) != 0) rc = ENPU_ERR_IO;
  else if (rc == ENPU_OK && !a->json) print_sweep(in->sweep);
  json_decref(doc);
  return rc;
}

static int run(void *args) {
  replay_args *a = args;
  if (!a->trace) a->trace = a->eval;
  const double *sp = a->spec_list.v;
  a->spec = (replay_spec){(int)sp[0], (int)sp[1], a->spec_list.n > 2 ? (int)sp[2] : 0};
  const long cpus = sysconf(_SC_NPROCESSORS_ONLN);
  const int threads = a->threads ? (int)a->threads : cpus > 0 ? (int)cpus : 1;
  replay_inputs in = {0};
  enpu_err err = {0};
  int rc = load_inputs(a, &in, &err), status = 0;
  if (rc != ENPU_OK) {
    cli_fail("replay", err.msg);
    status = cli_store_status(a->store, rc);
  } else {
    rc = a->rates.n ? run_sweep(a, &in, threads, &err) : run_one(a, &in, threads, &err);
    status = rc == ENPU_OK ? 0 : rc == ENPU_ERR_IO && !err.msg[0] ? 1 : cli_fail("replay", err.msg);
  }
  inputs_free(&in);
  return status;
}
