/* cmd_farm.c — `[mpirun -np N] enpu farm JOB [--store PATH] [--add-buckets
 * phase=P,batch=B,seq=S]... [--checkpoint-s SEC] [--lock-wait SEC] [--progress-s SEC]
 * [--results DIR] [--quiet] [--capacity-factor F]`: compile the job's whole grid into its HDF5 plan store with the farm module.
 * Every rank runs this command; only rank 0 prints.
 *
 * Exit status: 0 all done; 1 finished but some tasks failed (recorded in the store), or
 * the farm broke while running; 2 usage or input error (nothing written); 3 interrupted
 * by SIGTERM/SIGINT/SIGUSR1 after a checkpoint — running the same command again resumes;
 * 4 the environment refused (disk full, I/O error, the store locked by another writer):
 * the published store is intact and the same command resumes once that is fixed.
 * Under mpirun only SIGUSR1 gives 3: mpirun turns SIGTERM/SIGINT into its own exit 1
 * (the farm still syncs its journal and checkpoints in the second it is given). */
#include <stdlib.h>
#include <string.h>

#include "cli_internal.h"
#include "farm.h"

static int run(void *args);

typedef struct {
  farm_options o;
  farm_bucket_spec add[CLI_LIST_MAX]; /* o.add */
  int json;
} farm_args;

/* --add-buckets "phase=P,batch=B,seq=S" in any order, appended to the added buckets. */
static int accept_bucket(const char *spec, void *args, char *expected, size_t len) {
  farm_args *a = args;
  farm_bucket_spec *b = &a->add[a->o.nadd];
  char buf[256];
  int have = a->o.nadd < CLI_LIST_MAX && strlen(spec) < sizeof buf ? 0 : -1;
  snprintf(buf, sizeof buf, "%s", spec);
  for (char *save = NULL, *kv = strtok_r(buf, ",", &save); have >= 0 && kv; kv = strtok_r(NULL, ",", &save)) {
    char *eq = strchr(kv, '=');
    if (eq) *eq = '\0';
    const char *v = eq ? eq + 1 : "";
    if (eq && !strcmp(kv, "phase") && config_phase_parse(v, &b->phase) == 0) have |= 1;
    else if (eq && !strcmp(kv, "batch") && cli_parse_int(v, &b->batch) == 0 && b->batch > 0) have |= 2;
    else if (eq && !strcmp(kv, "seq") && cli_parse_int(v, &b->seq) == 0 && b->seq > 0) have |= 4;
    else have = -1;
  }
  if (have == 7) return a->o.nadd++, 0;
  return cli_reject(expected, len, "phase=prefill|decode,batch=B,seq=S with positive B and S (at most %d buckets)",
                    CLI_LIST_MAX);
}

#define SECONDS(lo_open, hi) {.min = 0, .max = (hi), .min_open = (lo_open)}

static const cli_opt opts[] = {
    {.name = "store", .type = CLI_STRING, .at = offsetof(farm_args, o.store_path), .meta = "PATH",
     .help = "the store (default: the job's \"store\"); journal: PATH.journal"},
    {.name = "add-buckets", .type = CLI_CUSTOM, .meta = "SPEC", .accept = accept_bucket,
     .help = "extra bucket, e.g. phase=decode,batch=24,seq=3000 (repeatable;\n"
             "kept in the store, so later runs keep compiling it)"},
    {.name = "checkpoint-s", .type = CLI_DOUBLE, .at = offsetof(farm_args, o.checkpoint_s), .meta = "SEC",
     .range = SECONDS(true, 1e9), .help = "rewrite the store every SEC seconds"},
    {.name = "lock-wait", .type = CLI_DOUBLE, .at = offsetof(farm_args, o.lock_wait_s), .meta = "SEC",
     .range = SECONDS(false, 1e9),
     .help = "wait up to SEC seconds for another writer of the store (a farm,\n"
             "enpu validate) to finish; then exit 4 naming it"},
    {.name = "progress-s", .type = CLI_DOUBLE, .at = offsetof(farm_args, o.progress_s), .meta = "SEC",
     .range = SECONDS(true, 1e9), .help = "progress line interval when stderr is not a terminal"},
    {.name = "results", .type = CLI_STRING, .at = offsetof(farm_args, o.results_dir), .meta = "DIR",
     .help = "summary.md goes to DIR/<job>/ (default: beside the store)"},
    {.name = "quiet", .type = CLI_FLAG, .at = offsetof(farm_args, o.quiet), .help = "no progress lines"},
    {.name = "capacity-factor", .type = CLI_STRING, .at = offsetof(farm_args, o.capacity_factor), .meta = "F",
     .help = "the job's MoE capacity factor replaced (\"worst\" or 1..E/k):\n"
             "one store per factor sweeps it (give each its own --store);\n"
             "the store records the factor compiled"},
    CLI_JSON_OPT(farm_args, "the summary"),
};

static void init(void *args) {
  farm_args *a = args;
  farm_options_default(&a->o);
  a->o.add = a->add;
}

static const cli_spec spec = {.command = "farm", .run = run, .init = init,
                              CLI_JOB_ARG(farm_args, o.job_path), CLI_OPTS(opts, farm_args)};
const cli_spec *const cli_farm_specs[] = {&spec, NULL};

static const char *const outcome_names[] = {[FARM_DONE] = "done", [FARM_FAILED] = "failed",
                                            [FARM_INTERRUPTED] = "interrupted"};

/* One job's summary as JSON; NULL when out of memory. */
static json_t *summary_json(const farm_summary *s) {
  json_t *ops = json_object();
  for (int p = 0; ops && p < s->npolicies; p++)
    if (json_object_set_new(ops, config_policy_name((config_policy)s->policies[p]),
                            json_integer(s->unique_ops[s->policies[p]])) < 0)
      json_decref(ops), ops = NULL;
  return json_pack("{s:s, s:s, s:s, s:i, s:{s:I, s:I, s:I}, s:o, s:{s:I, s:I, s:I, s:I, s:I}, s:{s:I, s:I}, "
                   "s:I, s:I, s:f, s:f, s:f}",
                   "job", s->job, "store", s->store_path, "outcome", outcome_names[s->outcome], "ranks", s->ranks,
                   "buckets", "ok", (json_int_t)s->buckets_ok, "infeasible_capacity",
                   (json_int_t)s->buckets_infeasible, "failed", (json_int_t)s->buckets_failed, "unique_ops", ops,
                   "tasks", "total", (json_int_t)s->tasks_total, "op", (json_int_t)s->op_tasks, "bucket",
                   (json_int_t)s->bucket_tasks, "done", (json_int_t)s->tasks_done, "failed",
                   (json_int_t)s->tasks_failed, "reused", "store", (json_int_t)s->reused_store, "journal",
                   (json_int_t)s->reused_journal, "recomputed", (json_int_t)s->recomputed, "evaluations",
                   (json_int_t)s->evaluations, "core_s", s->core_s, "wall_s", s->wall_s, "master_cpu_s",
                   s->master_cpu_s);
}

/* The summaries of the run (rank 0): Markdown, or {"outcome", "jobs": [...]} with --json. */
static int print_summaries(const farm_summary *sums, int njobs, int outcome, int json) {
  for (int j = 0; !json && j < njobs; j++) {
    printf("\n");
    farm_summary_print(&sums[j], stdout);
  }
  if (!json) return fflush(stdout), 0;
  json_t *jobs = json_array();
  for (int j = 0; jobs && j < njobs; j++)
    if (json_array_append_new(jobs, summary_json(&sums[j])) < 0) json_decref(jobs), jobs = NULL;
  json_t *doc = json_pack("{s:s, s:o}", "outcome", outcome_names[outcome], "jobs", jobs);
  const int rc = doc ? cli_print_json(doc) : cli_fail("farm", "cannot build JSON output");
  json_decref(doc);
  fflush(stdout);
  return rc;
}

static int run(void *args) {
  farm_args *a = args;
  farm_summary sum;
  enpu_err err = {0};
  if (farm_run(&a->o, &sum, &err) < 0) {
    if (sum.rank == 0) cli_fail("farm", err.msg);
    return cli_exit_status(err.code, sum.input_error ? CLI_EXIT_USAGE : CLI_EXIT_FAILED);
  }
  if (sum.rank == 0 && print_summaries(&sum, 1, (int)sum.outcome, a->json) != 0) return CLI_EXIT_FAILED;
  return (int)sum.outcome;
}
