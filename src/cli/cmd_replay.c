/* cmd_replay.c — `enpu replay --store S (--trace T | --eval T) --cluster C [--policy NAME|all]
 * [--governors G,...] [--control-ms MS] [--spec EX,NS[,VD]] [--train T [--epochs N]]
 * [--save-net F] [--load-net F] [--seed N] [--rate X | --rates X,Y,...] [--warp W] [--day]
 * [--skip-bad-rows] [--model M] [--chip F] [--threads N] [--out DIR [--windows-only]]
 * [--json]`: replay a trace on the cluster with the plans of every policy in the store (or
 * one) and, beside them, online governors running the store's uniform table; print the
 * summary and, with --out, write the per-request and per-window CSVs, the governors'
 * actions per window and summary.json; with --rates, a load sweep (table, sweep.json and
 * a gnuplot plot). The replay module does the work.
 *
 * Exit status: 0 ok; 1 a file or the replay failed, or the store does not fit the
 * cluster; 2 usage error. */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli_internal.h"
#include "config.h"
#include "planstore.h"
#include "replay.h"
#include "report.h"

#define MAX_RATES 64

static void usage(FILE *out) {
  fprintf(out,
          "usage: enpu replay --store S (--trace T | --eval T) --cluster C [--policy NAME|all]\n"
          "                   [--governors G,...] [--control-ms MS] [--spec EX,NS[,VD]]\n"
          "                   [--train T [--epochs N]] [--save-net F] [--load-net F] [--seed N]\n"
          "                   [--rate X | --rates X,Y,...] [--warp W] [--day] [--skip-bad-rows]\n"
          "                   [--model M] [--chip F] [--threads N] [--out DIR [--windows-only]]\n"
          "                   [--json]\n"
          "\n"
          "Replay an LLM inference trace (TIMESTAMP,ContextTokens,GeneratedTokens) on the\n"
          "cluster's prefill/decode nodes with continuous batching, KV transfer over DCN, idle\n"
          "chips and the DVFS-aware scheduler (T_target per batch, safeguards 1 and 2), taking\n"
          "every batch's time and energy from the store's plans. Energy savings are against the\n"
          "store's nodvfs policy on the same trace, over one common horizon: busy batches only\n"
          "(what the paper's Figure 22 plots), with idle chips and KV transfers, and per phase.\n"
          "The store must have been compiled for the cluster's model, chip and nodes.\n"
          "\n"
          "  --store S        plan store (HDF5)\n"
          "  --trace T        trace CSV (e.g. jobs/traces/AzureLLMInferenceTrace_conv.csv)\n"
          "  --cluster C      cluster file (nodes, SLO classes, batching, idle, scheduler), e.g.\n"
          "                   jobs/clusters/llama3-70b.json\n"
          "  --policy NAME    one policy of the store, or all (default: every policy but uniform,\n"
          "                   the governors' table)\n"
          "  --governors G,.. online governors beside the policies, on the store's uniform policy\n"
          "                   (one chip-wide V/f state per control period): ondemand, pid, pelm\n"
          "                   (a DQN choosing the state and self-speculative decoding),\n"
          "                   pelm-lossless (its verification through every layer), fixed:S\n"
          "  --control-ms MS  control period of the governors (default 100, PELM's 10 Hz)\n"
          "  --spec EX,NS[,VD] self-speculative decoding, fixed: drafts through EX layers, NS\n"
          "                   drafts a round, verification through VD layers (default all); adds\n"
          "                   a <policy>+sd run per store policy, and applies to fixed:S\n"
          "  --train T        train the pelm governor on trace T first, then replay frozen\n"
          "  --epochs N       passes over the training trace (default 1)\n"
          "  --eval T         the trace to replay (the same as --trace)\n"
          "  --save-net F     save the pelm network (JSON) after the runs\n"
          "  --load-net F     start pelm from a saved network (frozen unless --train)\n"
          "  --seed N         seed of the trace shaping (--rate, --rates, --day) and of the pelm\n"
          "                   agent, default 1\n"
          "  --rate X         expected copies of each request (5 = five times the rate)\n"
          "  --rates X,Y,...  load sweep: the trace at each rate; SLO attainment, savings and\n"
          "                   utilisation per rate and policy, and each policy's capacity (the\n"
          "                   highest rate keeping >= 99 %% SLO attainment)\n"
          "  --warp W         multiply arrival times by W (0.5 = twice as fast)\n"
          "  --day            a 24-hour day from the trace with a diurnal rate curve\n"
          "                   (peak 14:00-20:00 at the trace's rate, 0.3x at 04:00)\n"
          "  --skip-bad-rows  skip malformed trace rows (counted) instead of failing\n"
          "  --model M        model file (default: ../models/<cluster's model>.json beside\n"
          "                   the cluster file): KV-cache bytes per token\n"
          "  --chip F         chip file (default: ../chips/tpuv5p.json beside the cluster\n"
          "                   file): DCN bandwidth and idle power\n"
          "  --threads N      policies replayed side by side (default: the online CPUs)\n"
          "  --out DIR        write requests_<policy>.csv, windows_<policy>.csv, summary.json,\n"
          "                   and for governors and +sd runs actions_<run>.csv (with --rates:\n"
          "                   sweep.json, sweep.dat/.gp/.png)\n"
          "  --windows-only   with --out, no requests_<policy>.csv (~150 bytes a request)\n"
          "  --json           print the summary (or the sweep) as one JSON document\n"
          "  -h, --help       show this help\n");
}

#define MAX_GOVERNORS 8
#define MAX_AGENTS 2

typedef struct {
  const char *store, *trace, *cluster, *policy, *model, *chip, *out;
  const char *governors, *train, *eval, *save_net, *load_net;
  uint64_t seed, threads, epochs;
  double rate, warp, control_ms;
  double rates[MAX_RATES];
  size_t nrates;
  replay_spec spec;
  int day, skip_bad, json, rate_given, windows_only, spec_given;
} replay_args;

/* --spec EX,NS[,VD] */
static int parse_spec(const char *v, replay_args *a) {
  int f[3] = {0, 0, 0}, n = 0;
  char buf[128];
  snprintf(buf, sizeof buf, "%s", v);
  for (char *save = NULL, *tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save))
    if (n == 3 || cli_parse_int(tok, &f[n++]) < 0 || f[n - 1] < 0)
      return cli_usage_error("replay", usage, "--spec expects EX,NS[,VD] (integers >= 0), got '%s'", v);
  if (n < 2) return cli_usage_error("replay", usage, "--spec expects EX,NS[,VD], got '%s'", v);
  a->spec = (replay_spec){f[0], f[1], f[2]};
  a->spec_given = 1;
  return -1;
}

static int parse_rates(const char *v, replay_args *a) {
  char buf[1024];
  snprintf(buf, sizeof buf, "%s", v);
  a->nrates = 0;
  for (char *save = NULL, *tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
    if (a->nrates == MAX_RATES) return cli_usage_error("replay", usage, "--rates takes at most %d rates", MAX_RATES);
    double *r = &a->rates[a->nrates++];
    if (cli_parse_double(tok, r) < 0 || !(*r > 0))
      return cli_usage_error("replay", usage, "--rates expects numbers > 0 separated by commas, got '%s'", tok);
  }
  return a->nrates ? -1 : cli_usage_error("replay", usage, "--rates expects at least one rate");
}

/* One option with a value. @return -1 to go on, or the exit status of a usage error. */
static int parse_value(const char *s, const char *v, replay_args *a) {
  const char **text = !strcmp(s, "--store")     ? &a->store
                      : !strcmp(s, "--trace")   ? &a->trace
                      : !strcmp(s, "--cluster") ? &a->cluster
                      : !strcmp(s, "--policy")  ? &a->policy
                      : !strcmp(s, "--model")   ? &a->model
                      : !strcmp(s, "--chip")    ? &a->chip
                      : !strcmp(s, "--out")     ? &a->out
                      : !strcmp(s, "--governors") ? &a->governors
                      : !strcmp(s, "--train")     ? &a->train
                      : !strcmp(s, "--eval")      ? &a->eval
                      : !strcmp(s, "--save-net")  ? &a->save_net
                      : !strcmp(s, "--load-net")  ? &a->load_net
                                                  : NULL;
  if (text) {
    *text = v;
    return -1;
  }
  if (!strcmp(s, "--rates")) return parse_rates(v, a);
  if (!strcmp(s, "--spec")) return parse_spec(v, a);
  if (!strcmp(s, "--control-ms")) {
    if (cli_parse_double(v, &a->control_ms) < 0 || !(a->control_ms > 0))
      return cli_usage_error("replay", usage, "--control-ms expects a number > 0, got '%s'", v);
    return -1;
  }
  if (!strcmp(s, "--rate") || !strcmp(s, "--warp")) {
    double *num = !strcmp(s, "--rate") ? &a->rate : &a->warp;
    a->rate_given |= num == &a->rate;
    if (cli_parse_double(v, num) < 0 || (num == &a->rate ? *num < 0 : *num <= 0))
      return cli_usage_error("replay", usage, "%s expects a number %s, got '%s'", s, num == &a->rate ? ">= 0" : "> 0",
                             v);
    return -1;
  }
  uint64_t *u = !strcmp(s, "--seed") ? &a->seed : !strcmp(s, "--epochs") ? &a->epochs : &a->threads;
  if (cli_parse_u64(v, u) < 0 || (u != &a->seed && (*u < 1 || *u > 256)))
    return cli_usage_error("replay", usage, "%s expects %s, got '%s'", s,
                           u == &a->seed ? "a non-negative integer" : "an integer from 1 to 256", v);
  return -1;
}

/* @return -1 to go on, or the exit status (0 after --help, 2 on a usage error). */
static int parse_args(int argc, char **argv, replay_args *a) {
  static const char *const valued[] = {"--store",    "--trace",      "--cluster", "--policy", "--model",
                                       "--chip",     "--out",        "--rate",    "--rates",  "--warp",
                                       "--seed",     "--threads",    "--governors", "--control-ms", "--spec",
                                       "--train",    "--epochs",     "--eval",    "--save-net", "--load-net"};
  for (int i = 1; i < argc; i++) {
    const char *s = argv[i];
    if (!strcmp(s, "--help") || !strcmp(s, "-h")) {
      usage(stdout);
      return 0;
    }
    int *flag = !strcmp(s, "--json")            ? &a->json
                : !strcmp(s, "--day")           ? &a->day
                : !strcmp(s, "--skip-bad-rows") ? &a->skip_bad
                : !strcmp(s, "--windows-only")  ? &a->windows_only
                                                : NULL;
    if (flag) {
      *flag = 1;
      continue;
    }
    bool known = false;
    for (size_t k = 0; k < sizeof valued / sizeof valued[0]; k++) known |= !strcmp(s, valued[k]);
    if (!known) return cli_usage_error("replay", usage, "unknown argument '%s'", s);
    if (i + 1 >= argc) return cli_usage_error("replay", usage, "option '%s' needs a value", s);
    const int st = parse_value(s, argv[++i], a);
    if (st >= 0) return st;
  }
  if (!a->store) return cli_usage_error("replay", usage, "missing --store");
  if (a->trace && a->eval) return cli_usage_error("replay", usage, "give --trace or --eval, not both");
  if (!a->trace) a->trace = a->eval;
  if (!a->trace) return cli_usage_error("replay", usage, "missing --trace");
  if (!a->cluster) return cli_usage_error("replay", usage, "missing --cluster");
  if (a->nrates && a->rate_given) return cli_usage_error("replay", usage, "give --rate or --rates, not both");
  if (a->nrates && (a->governors || a->spec_given))
    return cli_usage_error("replay", usage, "--governors and --spec replay one rate, not a --rates sweep");
  char names[512];
  snprintf(names, sizeof names, "%s", a->governors ? a->governors : "");
  for (char *save = NULL, *tok = strtok_r(names, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
    replay_governor g;
    enpu_err err = {0};
    if (replay_governor_parse(tok, &g, &err) != ENPU_OK) return cli_usage_error("replay", usage, "%s", err.msg);
  }
  const bool pelm = a->governors && strstr(a->governors, "pelm");
  if ((a->train || a->save_net || a->load_net) && !pelm)
    return cli_usage_error("replay", usage, "--train, --save-net and --load-net need the pelm governor");
  return -1;
}

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
  replay_job *jobs;    /* the store policies, their +sd runs, the governors */
  size_t njobs;
  replay_result **runs; /* per job */
  replay_sweep *sweep;
} replay_inputs;

static void inputs_free(replay_inputs *in) {
  for (size_t i = 0; in->runs && i < in->njobs; i++) replay_result_free(in->runs[i]);
  free(in->runs);
  free(in->jobs);
  for (size_t i = 0; i < in->npelm; i++) replay_pelm_free(in->pelm[i]);
  free(in->policies);
  replay_sweep_free(in->sweep);
  planstore_close(in->ps);
  replay_trace_free(in->trace);
  replay_trace_free(in->raw);
  config_chip_free(in->chip);
  config_model_free(in->model);
  config_cluster_free(in->cluster);
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
  return replay_setup_init(&in->setup, in->cluster, in->model, in->chip, err);
}

/* The store's policies to run: all, or the one named. */
static int pick_policies(const replay_args *a, replay_inputs *in, enpu_err *err) {
  const size_t np = planstore_policy_count(in->ps);
  in->policies = calloc(np ? np : 1, sizeof *in->policies);
  ENPU_RETURN_IF(!in->policies, err, ENPU_ERR_NOMEM, "out of memory");
  for (size_t i = 0; i < np; i++) {
    const char *name = planstore_policy_name(in->ps, i);
    if ((!strcmp(a->policy, "all") && strcmp(name, "uniform")) || !strcmp(a->policy, name))
      in->policies[in->npolicies++] = name;
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
    if (a->spec_given) g->fixed_spec = a->spec;
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
  const size_t n = in->npolicies * (a->spec_given ? 2 : 1) + in->ngovs;
  in->jobs = calloc(n, sizeof *in->jobs);
  in->runs = calloc(n, sizeof *in->runs);
  ENPU_RETURN_IF(!in->jobs || !in->runs, err, ENPU_ERR_NOMEM, "out of memory");
  for (size_t i = 0; i < in->npolicies; i++) in->jobs[in->njobs++] = (replay_job){.policy = in->policies[i]};
  for (size_t i = 0; a->spec_given && i < in->npolicies; i++)
    in->jobs[in->njobs++] = (replay_job){.policy = in->policies[i], .spec = a->spec};
  for (size_t i = 0; i < in->ngovs; i++) in->jobs[in->njobs++] = (replay_job){.governor = &in->govs[i]};
  return ENPU_OK;
}

/* --train: the pelm governor learns on the training trace (shaped as the replayed one),
 * epoch after epoch; the replay then runs it frozen. */
static int train_pelm(const replay_args *a, replay_inputs *in, enpu_err *err) {
  replay_governor *g = NULL;
  for (size_t i = 0; i < in->ngovs; i++)
    if (in->govs[i].kind == REPLAY_GOV_PELM) g = &in->govs[i];
  replay_trace *raw = NULL, *t = NULL;
  const replay_shape shape = {.rate = a->rate, .warp = a->warp, .day = a->day, .seed = a->seed};
  int rc = replay_trace_load(a->train, a->skip_bad, &raw, err);
  if (rc == ENPU_OK) rc = replay_trace_shape(raw, &shape, &t, err);
  const replay_job job = {.governor = g};
  for (uint64_t e = 0; rc == ENPU_OK && e < a->epochs; e++) {
    replay_result *r = NULL;
    g->learn = true;
    rc = replay_run_job(in->ps, &job, t, &in->setup, &r, err);
    if (rc != ENPU_OK) break;
    const replay_summary *s = replay_result_summary(r);
    const replay_gov_summary *gs = replay_result_gov_summary(r);
    fprintf(stderr, "enpu replay: %s training epoch %llu/%llu on %s: SLO %.2f %%, energy %.1f MJ, mean reward %.4f "
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
  ENPU_FORWARD(replay_trace_load(a->trace, a->skip_bad, &in->raw, err));
  if (in->raw->skipped)
    fprintf(stderr, "enpu replay: skipped %zu bad rows of %s (first: %s)\n", in->raw->skipped, a->trace,
            in->raw->first_skipped);
  if (!a->nrates) {
    const replay_shape shape = {.rate = a->rate, .warp = a->warp, .day = a->day, .seed = a->seed};
    ENPU_FORWARD(replay_trace_shape(in->raw, &shape, &in->trace, err));
  }
  ENPU_FORWARD(planstore_open(a->store, &in->ps, err));
  ENPU_FORWARD(pick_policies(a, in, err));
  ENPU_FORWARD(pick_governors(a, in, err));
  ENPU_FORWARD(make_jobs(a, in, err));
  return a->train ? train_pelm(a, in, err) : ENPU_OK;
}

/* ---- one rate: the table ------------------------------------------------------------ */

static const replay_summary *find_base(const replay_inputs *in) {
  for (size_t i = 0; i < in->njobs; i++)
    if (!strcmp(replay_result_summary(in->runs[i])->policy, "nodvfs")) return replay_result_summary(in->runs[i]);
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
  printf("%-14s %7llu %5llu %7.2f %8.1f %8.1f %7.1f %7.1f %7s %7s %7s %7s %7s %7s %6.2f %6.2f %5llu\n", s->policy,
         (unsigned long long)s->served, (unsigned long long)s->uncovered, 100 * s->slo_attainment,
         s->ttft_p50_ns * 1e-6,
         s->ttft_p99_ns * 1e-6, s->tpot_p50_ns * 1e-6, s->tpot_p99_ns * 1e-6, c[0], c[1], c[2], c[3], c[4], c[5],
         batches ? 100 * (double)(p[0].safeguard1 + p[1].safeguard1) / batches : 0,
         batches ? 100 * (double)(p[0].locked + p[1].locked) / batches : 0,
         (unsigned long long)(p[0].late + p[1].late));
}

static void print_table(const replay_inputs *in) {
  const replay_summary *base = find_base(in), *s0 = replay_result_summary(in->runs[0]);
  printf("%zu requests (%s cluster: %d prefill + %d decode nodes; idle %s; safeguard 2 %s; horizon %.1f s)\n\n",
         in->trace->count, in->cluster->name, in->cluster->node[CONFIG_PREFILL].nodes,
         in->cluster->node[CONFIG_DECODE].nodes, config_idle_mode_name(in->cluster->idle.mode),
         config_safeguard2_name(in->cluster->scheduler.safeguard2), s0->horizon_ns * 1e-9);
  printf("%-14s %7s %5s %7s %8s %8s %7s %7s %23s %23s %6s %6s %5s\n", "", "", "", "", "TTFT ms", "", "TPOT ms", "",
         "busy-only savings %", "with-idle savings %", "", "", "");
  printf("%-14s %7s %5s %7s %8s %8s %7s %7s %7s %7s %7s %7s %7s %7s %6s %6s %5s\n", "policy", "served", "uncov",
         "SLO %", "p50", "p99", "p50", "p99", "prefill", "decode", "all", "prefill", "decode", "all", "sg1 %",
         "lock %", "late");
  for (size_t i = 0; i < in->njobs; i++) print_row(replay_result_summary(in->runs[i]), base);
  printf("\nbusy-only: the batches' energy (the paper's simulator counts no idle energy); with idle:\n"
         "plus idle chips and KV transfers over DCN. sg1 %%: batches given a less aggressive plan by\n"
         "safeguard 1; lock %%: batches run while safeguard 2 held the chips at peak; late: batches\n"
         "whose own target was below their fastest plan (governors: slower than their target).\n"
         "--json or --out for peak/off-peak hours.\n");
  bool header = false;
  for (size_t i = 0; i < in->njobs; i++) {
    const replay_gov_summary *g = replay_result_gov_summary(in->runs[i]);
    if (!g->governor && !g->speculative) continue;
    if (!header)
      printf("\n%-14s %9s %8s %9s %10s %11s %13s %13s\n", "online", "decisions", "changes", "sd rounds",
             "tokens/rnd", "lossy tok", "reward 10%", "reward rest");
    header = true;
    printf("%-14s %9llu %8llu %9llu %10.3f %11llu %13.4f %13.4f\n", replay_result_summary(in->runs[i])->policy,
           (unsigned long long)g->decisions, (unsigned long long)g->state_changes, (unsigned long long)g->spec_rounds,
           g->mean_tokens_per_round, (unsigned long long)g->lossy_tokens, g->reward_first10, g->reward_last90);
  }
}

static int run_one(const replay_args *a, replay_inputs *in, int threads, enpu_err *err) {
  ENPU_FORWARD(replay_run_jobs(in->ps, in->jobs, in->njobs, in->trace, &in->setup, threads, in->runs, err));
  if (a->save_net) ENPU_FORWARD(replay_pelm_save(in->pelm[0], a->save_net, err));
  if (a->out)
    ENPU_FORWARD(replay_write_outputs(a->out, (const replay_result *const *)in->runs, in->njobs, !a->windows_only,
                                      err));
  for (size_t i = 0; i < in->njobs; i++) {
    const replay_summary *s = replay_result_summary(in->runs[i]);
    if (s->uncovered)
      fprintf(stderr, "enpu replay: policy %s: %llu requests not covered by any bucket (first: %s)\n", s->policy,
              (unsigned long long)s->uncovered, s->uncovered_example);
  }
  if (!a->json) {
    print_table(in);
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
  printf("%8s %9s %-9s %7s %9s %9s %15s %15s %6s %6s\n", "rate", "requests", "policy", "SLO %", "save busy",
         "save idle", "prefill % (max)", "decode % (max)", "sg1 %", "lock %");
  for (size_t r = 0; r < s->nrates; r++)
    for (size_t p = 0; p < s->npolicies; p++) {
      const replay_sweep_cell *c = &s->cells[r * s->npolicies + p];
      printf("%8g %9zu %-9s %7.2f %9.2f %9.2f %7.2f (%5.1f) %7.2f (%5.1f) %6.2f %6.2f\n", s->rates[r], s->requests[r],
             s->policies[p], 100 * c->slo_attainment, 100 * c->savings_busy, 100 * c->savings, 100 * c->util[0],
             100 * c->util_busiest[0], 100 * c->util[1], 100 * c->util_busiest[1], 100 * c->safeguard1_share,
             100 * c->locked_share);
    }
  printf("\nprefill %%: prefill node-time busy; decode %%: decode batch slots filled (mean members /\n"
         "max batch); over the run, and (max) in the busiest 5-minute window. Capacity, the highest\n"
         "rate with >= %.0f %% SLO attainment there and below:\n",
         100 * REPLAY_CAPACITY_ATTAINMENT);
  for (size_t p = 0; p < s->npolicies; p++)
    printf("  %-9s %s%g\n", s->policies[p], s->capacity[p] > 0 ? "" : "none of the rates tried, ", s->capacity[p]);
}

static int run_sweep(const replay_args *a, replay_inputs *in, int threads, enpu_err *err) {
  const replay_shape base = {.rate = 1, .warp = a->warp, .day = a->day, .seed = a->seed};
  ENPU_FORWARD(replay_sweep_run(in->ps, in->policies, in->npolicies, in->raw, &base, a->rates, a->nrates, &in->setup,
                                threads, &in->sweep, err));
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

int cli_cmd_replay(int argc, char **argv) {
  replay_args a = {.policy = "all", .seed = 1, .rate = 1.0, .warp = 1.0, .control_ms = 100, .epochs = 1};
  int st = parse_args(argc, argv, &a);
  if (st >= 0) return st;
  const long cpus = sysconf(_SC_NPROCESSORS_ONLN);
  const int threads = a.threads ? (int)a.threads : cpus > 0 ? (int)cpus : 1;
  replay_inputs in = {0};
  enpu_err err = {0};
  int rc = load_inputs(&a, &in, &err);
  if (rc == ENPU_OK) rc = a.nrates ? run_sweep(&a, &in, threads, &err) : run_one(&a, &in, threads, &err);
  const int status = rc == ENPU_OK ? 0 : rc == ENPU_ERR_IO && !err.msg[0] ? 1 : cli_fail("replay", err.msg);
  inputs_free(&in);
  return status;
}
