/* cmd_replay.c — `enpu replay --store S --trace T --cluster C [--policy NAME|all]
 * [--seed N] [--rate X] [--warp W] [--day] [--skip-bad-rows] [--model M] [--chip F]
 * [--out DIR] [--json]`: replay a trace on the cluster with the plans of every policy in
 * the store (or one), print the summary and, with --out, write the per-request and
 * per-window CSVs and summary.json. The replay module does the work.
 *
 * Exit status: 0 ok; 1 a file or the replay failed; 2 usage error. */
#include <stdlib.h>
#include <string.h>

#include "cli_internal.h"
#include "config.h"
#include "planstore.h"
#include "replay.h"

static void usage(FILE *out) {
  fprintf(out,
          "usage: enpu replay --store S --trace T --cluster C [--policy NAME|all] [--seed N]\n"
          "                   [--rate X] [--warp W] [--day] [--skip-bad-rows]\n"
          "                   [--model M] [--chip F] [--out DIR] [--json]\n"
          "\n"
          "Replay an LLM inference trace (TIMESTAMP,ContextTokens,GeneratedTokens) on the\n"
          "cluster's prefill/decode nodes with continuous batching, KV transfer over DCN and\n"
          "the DVFS-aware scheduler (T_target per batch, safeguards 1 and 2), taking every\n"
          "batch's time and energy from the store's plans. Energy savings are against the\n"
          "store's nodvfs policy, replayed on the same trace.\n"
          "\n"
          "  --store S        plan store (HDF5)\n"
          "  --trace T        trace CSV (e.g. jobs/traces/AzureLLMInferenceTrace_conv.csv)\n"
          "  --cluster C      cluster file (nodes, SLO classes, batching), e.g.\n"
          "                   jobs/clusters/llama3-70b.json\n"
          "  --policy NAME    one policy of the store, or all (default)\n"
          "  --seed N         seed of the trace shaping (--rate, --day), default 1\n"
          "  --rate X         expected copies of each request (5 = five times the rate)\n"
          "  --warp W         multiply arrival times by W (0.5 = twice as fast)\n"
          "  --day            a 24-hour day from the trace with a diurnal rate curve\n"
          "                   (peak 14:00-20:00 at the trace's rate, 0.3x at 04:00)\n"
          "  --skip-bad-rows  skip malformed trace rows (counted) instead of failing\n"
          "  --model M        model file (default: ../models/<cluster's model>.json beside\n"
          "                   the cluster file): KV-cache bytes per token\n"
          "  --chip F         chip file (default: ../chips/tpuv5p.json beside the cluster\n"
          "                   file): DCN bandwidth and idle power\n"
          "  --out DIR        write requests_<policy>.csv, windows_<policy>.csv, summary.json\n"
          "  --json           print the summary as one JSON document\n"
          "  -h, --help       show this help\n");
}

typedef struct {
  const char *store, *trace, *cluster, *policy, *model, *chip, *out;
  uint64_t seed;
  double rate, warp;
  int day, skip_bad, json;
} replay_args;

/* @return -1 to go on, or the exit status (0 after --help, 2 on a usage error). */
static int parse_args(int argc, char **argv, replay_args *a) {
  for (int i = 1; i < argc; i++) {
    const char *s = argv[i];
    if (!strcmp(s, "--help") || !strcmp(s, "-h")) {
      usage(stdout);
      return 0;
    }
    int *flag = !strcmp(s, "--json")            ? &a->json
                : !strcmp(s, "--day")           ? &a->day
                : !strcmp(s, "--skip-bad-rows") ? &a->skip_bad
                                                : NULL;
    if (flag) {
      *flag = 1;
      continue;
    }
    const char **text = !strcmp(s, "--store")     ? &a->store
                        : !strcmp(s, "--trace")   ? &a->trace
                        : !strcmp(s, "--cluster") ? &a->cluster
                        : !strcmp(s, "--policy")  ? &a->policy
                        : !strcmp(s, "--model")   ? &a->model
                        : !strcmp(s, "--chip")    ? &a->chip
                        : !strcmp(s, "--out")     ? &a->out
                                                  : NULL;
    double *num = !strcmp(s, "--rate") ? &a->rate : !strcmp(s, "--warp") ? &a->warp : NULL;
    const int is_seed = !strcmp(s, "--seed");
    if (!text && !num && !is_seed) return cli_usage_error("replay", usage, "unknown argument '%s'", s);
    if (i + 1 >= argc) return cli_usage_error("replay", usage, "option '%s' needs a value", s);
    const char *v = argv[++i];
    if (text) {
      *text = v;
    } else if (num) {
      if (cli_parse_double(v, num) < 0 || (num == &a->rate ? *num < 0 : *num <= 0))
        return cli_usage_error("replay", usage, "%s expects a number %s, got '%s'", s,
                               num == &a->rate ? ">= 0" : "> 0", v);
    } else if (cli_parse_u64(v, &a->seed) < 0) {
      return cli_usage_error("replay", usage, "--seed expects a non-negative integer, got '%s'", v);
    }
  }
  if (!a->store) return cli_usage_error("replay", usage, "missing --store");
  if (!a->trace) return cli_usage_error("replay", usage, "missing --trace");
  if (!a->cluster) return cli_usage_error("replay", usage, "missing --cluster");
  return -1;
}

static int fail_err(const enpu_err *e) { return cli_fail("replay", e->msg); }

typedef struct {
  config_cluster *cluster;
  config_model *model;
  config_chip *chip;
  replay_trace *trace;
  planstore *ps;
  replay_result **runs; /* one per policy of the store */
  size_t nruns;
} replay_inputs;

static void inputs_free(replay_inputs *in) {
  for (size_t i = 0; i < in->nruns; i++) replay_result_free(in->runs[i]);
  free(in->runs);
  planstore_close(in->ps);
  replay_trace_free(in->trace);
  config_chip_free(in->chip);
  config_model_free(in->model);
  config_cluster_free(in->cluster);
}

/* Model and chip files default to the project layout beside the cluster file. */
static int load_inputs(const replay_args *a, replay_inputs *in, enpu_err *err) {
  ENPU_FORWARD(config_cluster_load(a->cluster, &in->cluster, err));
  char path[CONFIG_PATH_LEN], rel[CONFIG_PATH_LEN];
  snprintf(rel, sizeof rel, "../models/%s.json", in->cluster->model_name);
  if (!a->model) ENPU_FORWARD(enpu_path_relative(a->cluster, rel, path, sizeof path, err));
  ENPU_FORWARD(config_model_load(a->model ? a->model : path, &in->model, err));
  if (!a->chip) ENPU_FORWARD(enpu_path_relative(a->cluster, "../chips/tpuv5p.json", path, sizeof path, err));
  ENPU_FORWARD(config_chip_load(a->chip ? a->chip : path, &in->chip, err));
  replay_trace *raw = NULL;
  ENPU_FORWARD(replay_trace_load(a->trace, a->skip_bad, &raw, err));
  if (raw->skipped)
    fprintf(stderr, "enpu replay: skipped %zu bad rows of %s (first: %s)\n", raw->skipped, a->trace,
            raw->first_skipped);
  const replay_shape shape = {.rate = a->rate, .warp = a->warp, .day = a->day, .seed = a->seed};
  int rc = replay_trace_shape(raw, &shape, &in->trace, err);
  replay_trace_free(raw);
  ENPU_FORWARD(rc);
  ENPU_FORWARD(planstore_open(a->store, &in->ps, err));
  return ENPU_OK;
}

/* The savings column: percent saved against the nodvfs energy, or "-" where there is no
 * nodvfs run in this replay (or it used no energy) to compare with. */
static void savings_cell(char *out, size_t len, double energy_nj, const replay_summary *base, int phase) {
  const double base_nj = base ? base->phase[phase].energy_nj : 0;
  if (base_nj > 0) snprintf(out, len, "%.2f", 100 * (1 - energy_nj / base_nj));
  else snprintf(out, len, "-");
}

static void print_table(const replay_inputs *in) {
  const replay_summary *base = NULL;
  for (size_t i = 0; i < in->nruns; i++)
    if (!strcmp(replay_result_summary(in->runs[i])->policy, "nodvfs")) base = replay_result_summary(in->runs[i]);
  printf("%zu requests (%s cluster: %d prefill + %d decode nodes)\n\n", in->trace->count, in->cluster->name,
         in->cluster->node[CONFIG_PREFILL].nodes, in->cluster->node[CONFIG_DECODE].nodes);
  printf("%-9s %7s %5s %7s %8s %8s %7s %7s %10s %10s %8s %8s %9s %9s\n", "policy", "served", "uncov", "SLO %",
         "TTFT p50", "TTFT p99", "TPOT50", "TPOT99", "prefill kJ", "decode kJ", "save P %", "save D %",
         "slowed/sg1", "locked");
  for (size_t i = 0; i < in->nruns; i++) {
    const replay_summary *s = replay_result_summary(in->runs[i]);
    const replay_phase_stats *p = &s->phase[REPLAY_PREFILL], *d = &s->phase[REPLAY_DECODE];
    char sp[32], sd[32];
    savings_cell(sp, sizeof sp, p->energy_nj, base, REPLAY_PREFILL);
    savings_cell(sd, sizeof sd, d->energy_nj, base, REPLAY_DECODE);
    printf("%-9s %7llu %5llu %7.2f %8.1f %8.1f %7.1f %7.1f %10.1f %10.1f %8s %8s %4llu/%-4llu %4llu/%-4llu\n",
           s->policy, (unsigned long long)s->served, (unsigned long long)s->uncovered, 100 * s->slo_attainment,
           s->ttft_p50_ns * 1e-6, s->ttft_p99_ns * 1e-6, s->tpot_p50_ns * 1e-6, s->tpot_p99_ns * 1e-6,
           p->energy_nj * 1e-12, d->energy_nj * 1e-12, sp, sd, (unsigned long long)(p->slowed + d->slowed),
           (unsigned long long)(p->safeguard1 + d->safeguard1), (unsigned long long)p->locked,
           (unsigned long long)d->locked);
  }
  printf("\nTTFT/TPOT in ms; savings vs nodvfs incl. idle power; slowed/sg1: batches on a slower plan /\n"
         "lowered by safeguard 1; locked: prefill/decode batches locked to peak by safeguard 2.\n");
}

int cli_cmd_replay(int argc, char **argv) {
  replay_args a = {.policy = "all", .seed = 1, .rate = 1.0, .warp = 1.0};
  int st = parse_args(argc, argv, &a);
  if (st >= 0) return st;
  replay_inputs in = {0};
  enpu_err err = {0};
  replay_setup setup;
  int rc = load_inputs(&a, &in, &err);
  if (rc == ENPU_OK) rc = replay_setup_init(&setup, in.cluster, in.model, in.chip, &err);
  const size_t np = in.ps ? planstore_policy_count(in.ps) : 0;
  if (rc == ENPU_OK && !(in.runs = calloc(np ? np : 1, sizeof *in.runs)))
    rc = enpu_errorf(&err, ENPU_ERR_NOMEM, "out of memory");
  for (size_t i = 0; rc == ENPU_OK && i < np; i++) {
    const char *name = planstore_policy_name(in.ps, i);
    if (strcmp(a.policy, "all") && strcmp(a.policy, name)) continue;
    rc = replay_run(in.ps, name, in.trace, &setup, &in.runs[in.nruns], &err);
    if (rc == ENPU_OK) in.nruns++;
    else enpu_err_prefix(&err, "policy %s: ", name);
  }
  if (rc == ENPU_OK && in.nruns == 0)
    rc = enpu_errorf(&err, ENPU_ERR_NOT_FOUND, "no policy '%s' in %s", a.policy, a.store);
  if (rc == ENPU_OK && a.out)
    rc = replay_write_outputs(a.out, (const replay_result *const *)in.runs, in.nruns, &err);
  json_t *doc = NULL;
  if (rc == ENPU_OK && a.json) rc = replay_summary_json((const replay_result *const *)in.runs, in.nruns, &doc, &err);
  int status = rc == ENPU_OK ? 0 : fail_err(&err);
  if (status == 0) {
    for (size_t i = 0; i < in.nruns; i++) {
      const replay_summary *s = replay_result_summary(in.runs[i]);
      if (s->uncovered)
        fprintf(stderr, "enpu replay: policy %s: %llu requests not covered by any bucket (first: %s)\n", s->policy,
                (unsigned long long)s->uncovered, s->uncovered_example);
    }
    if (doc) status = cli_print_json(doc);
    else print_table(&in);
  }
  json_decref(doc);
  inputs_free(&in);
  return status;
}
