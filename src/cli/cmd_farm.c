/* cmd_farm.c — `[mpirun -np N] enpu farm JOB [JOB...] [--store PATH] [--add-buckets
 * phase=P,batch=B,seq=S]... [--checkpoint-s SEC] [--lock-wait SEC] [--progress-s SEC]
 * [--results DIR] [--batch-s SEC] [--task-log PATH] [--quiet] [--capacity-factor F]
 * [--replace] [--worker-timeout SEC]`:
 * compile each job's whole grid into its HDF5 plan store with the farm module, all jobs
 * sharing the ranks. Every rank runs this command; only rank 0 prints. With several
 * jobs the exit status is the worst of theirs.
 *
 * Exit status: 0 all done; 1 finished but some tasks failed (recorded in the store), or
 * the farm broke while running, or a worker stayed silent past --worker-timeout (the
 * stores complete when the others could do its work); 2 usage or input error (nothing
 * written); 3 interrupted by SIGTERM/SIGINT/SIGUSR1 after a checkpoint — running the same
 * command again resumes (a signal after every task was done stops nothing: the run
 * finishes with 0 or 1); 4 the environment refused (disk full, I/O error, the store
 * locked by another writer): the published store is intact and the same command resumes
 * once that is fixed. A silent worker does not hide 3 or 4: the ranks are aborted with
 * them (abort_status), and 1 only replaces 0 or 1.
 * Under mpirun only SIGUSR1 gives 3: mpirun turns SIGTERM/SIGINT into its own exit 1
 * (the farm still syncs its journal and checkpoints in the second it is given). */
#include <stdlib.h>
#include <string.h>

#include "cli_internal.h"
#include "farm.h"

static int run(void *args);

typedef struct {
  farm_options o;
  cli_strings jobs;                   /* o.job_paths */
  farm_bucket_spec add[CLI_LIST_MAX]; /* o.add */
  cli_strings reuse;                  /* o.reuse */
  int json;
  int error_printed;    /* rank 0 printed the run's error (print_error) */
  const char *cache;    /* --cache DIR */
  int no_cache;         /* --no-opcache */
  char cache_dir[4096]; /* o.cache_dir, resolved (cli_cache_dir) */
} farm_args;

/* --add-buckets "phase=P,batch=B,seq=S" in any order, appended to the added buckets. */
/* --reuse STORE, appended. */
static int accept_reuse(const char *path, void *args, char *expected, size_t len) {
  farm_args *a = args;
  if (a->reuse.n == CLI_LIST_MAX) return cli_reject(expected, len, "at most %d stores", CLI_LIST_MAX);
  a->reuse.v[a->reuse.n++] = path;
  a->o.nreuse = a->reuse.n;
  return 0;
}

static int accept_bucket(const char *spec, void *args, char *expected, size_t len) {
  farm_args *a = args;
  farm_bucket_spec *b = &a->add[a->o.nadd];
  char buf[256];
  enpu_kv kv[3];
  enpu_err err = {0};
  int have = a->o.nadd < CLI_LIST_MAX && strlen(spec) < sizeof buf ? 0 : -1;
  snprintf(buf, sizeof buf, "%s", spec);
  const int n = have < 0 ? 0 : enpu_kv_split(buf, kv, 3, &err);
  if (n < 0) return cli_reject(expected, len, "phase=prefill|decode,batch=B,seq=S (%s)", err.msg);
  for (int k = 0; have >= 0 && k < n; k++) {
    const char *v = kv[k].value;
    if (!strcmp(kv[k].key, "phase") && config_phase_parse(v, &b->phase) == 0) have |= 1;
    else if (!strcmp(kv[k].key, "batch") && cli_parse_int(v, &b->batch) == 0 && b->batch > 0) have |= 2;
    else if (!strcmp(kv[k].key, "seq") && cli_parse_int(v, &b->seq) == 0 && b->seq > 0) have |= 4;
    else have = -1;
  }
  if (have == 7) return a->o.nadd++, 0;
  return cli_reject(expected, len, "phase=prefill|decode,batch=B,seq=S with positive B and S (at most %d buckets)",
                    CLI_LIST_MAX);
}

/* A time in seconds into farm_options' field, in [0, hi] or (0, hi]. */
/* clang-format off */
#define SECONDS_OPT(name_, field, lo_open, hi, help_)                                             \
  {.name = name_, .type = CLI_DOUBLE, .at = offsetof(farm_args, o.field), .meta = "SEC",          \
   .range = {.min = 0, .max = (hi), .min_open = (lo_open)}, .help = help_}

static const cli_opt opts[] = {
    {.name = "store", .type = CLI_STRING, .at = offsetof(farm_args, o.store_path), .meta = "PATH",
     .help = "the store (default: the job's \"store\"); journal: PATH.journal\n(one job only)"},
    {.name = "add-buckets", .type = CLI_CUSTOM, .meta = "SPEC", .accept = accept_bucket, .flags = CLI_REPEATABLE,
     .help = "extra bucket, e.g. phase=decode,batch=24,seq=3000 (repeatable;\n"
             "kept in the store, so later runs keep compiling it; one job)"},
    {.name = "point", .type = CLI_INT, .at = offsetof(farm_args, o.point), .meta = "K",
     .range = CLI_RANGE(0, CONFIG_MAX_VARIANTS),
     .help = "only the policies on the job's sweep point K (0: its own chip;\n"
             "enpu buckets lists the points); one job"},
    {.name = "reuse", .type = CLI_CUSTOM, .meta = "STORE", .accept = accept_reuse, .flags = CLI_REPEATABLE,
     .help = "take the results of STORE (e.g. a --point run's) as known\n(repeatable; one job)"},
    SECONDS_OPT("checkpoint-s", checkpoint_s, true, 1e9,
                "rewrite the store every SEC seconds (longer when a rewrite takes\nmore than a tenth of that)"),
    SECONDS_OPT("lock-wait", lock_wait_s, false, 1e9,
                "wait up to SEC seconds for another writer of the store (a farm,\n"
                "enpu validate) to finish; then exit 4 naming it"),
    SECONDS_OPT("progress-s", progress_s, true, 1e9, "progress line interval when stderr is not a terminal"),
    SECONDS_OPT("worker-timeout", worker_timeout_s, false, 1e9,
                "a worker that holds a batch SEC seconds (or 10 x the longest\n"
                "batch so far, when longer) is silent: its tasks go to the others;\n"
                "still silent at the end, the job exits 1 with complete stores\n"
                "(batches take 5 ms to 0.3 s; 0: never)"),
    {.name = "results", .type = CLI_STRING, .at = offsetof(farm_args, o.results_dir), .meta = "DIR",
     .help = "summary.md goes to DIR/<job>/ (default: beside the store)"},
    SECONDS_OPT("batch-s", batch_s, false, 3600,
                "seconds of work in a task batch (0: one task; default: 5 to\n"
                "50 ms, at least 100 us a worker beyond 50 workers)"),
    {.name = "task-log", .type = CLI_STRING, .at = offsetof(farm_args, o.task_log), .meta = "PATH",
     .help = "a CSV line per task computed: job, kind (op, part, bucket),\n"
             "policy, wall and CPU seconds, evaluations, result bytes\n"
             "(plain, packed)"},
    {.name = "replace", .type = CLI_FLAG, .at = offsetof(farm_args, o.replace),
     .help = "reuse a store of another job (name, model, chip or cluster\nnames differ) for this one, discarding its plans"},
    {.name = "quiet", .type = CLI_FLAG, .at = offsetof(farm_args, o.quiet), .help = "no progress lines (warnings are still printed)"},
    {.name = "capacity-factor", .type = CLI_STRING, .at = offsetof(farm_args, o.capacity_factor), .meta = "F",
     .help = "the job's MoE capacity factor replaced (\"worst\" or 1..E/k):\n"
             "one store per factor sweeps it (give each its own --store);\n"
             "the store records the factor compiled"},
    {.name = "cache", .type = CLI_STRING, .at = offsetof(farm_args, cache), .meta = "DIR",
     .help = "the operator-result cache farms share (default: $ENPU_CACHE, a\n"
             "directory or 1 for ~/.cache/enpu; unset: no cache); see enpu cache"},
    {.name = "no-cache", .type = CLI_FLAG, .at = offsetof(farm_args, no_cache),
     .help = "no cache, whatever $ENPU_CACHE says"},
    CLI_JSON_OPT(farm_args, "the summaries"),
};
/* clang-format on */

static void print_summaries(const farm_summary *sums, int njobs, void *args);

/* Rank 0's error, printed (and stderr flushed) before the ranks leave farm_run. */
static void print_error(const enpu_err *err, void *args) {
  farm_args *a = args;
  cli_fail("farm", err->msg);
  fflush(stderr);
  a->error_printed = 1;
}

/* The status every rank is aborted with when a worker is still silent at the end: the
 * one this command would have returned (an error's, 3 when a stop signal interrupted the
 * work), and 1 where that would have been 0 or 1 (a rank stayed silent). */
static int abort_status(int rc, int interrupted, void *args) {
  (void)args;
  if (rc < 0) return cli_exit_status(rc, CLI_EXIT_FAILED);
  return interrupted ? CLI_EXIT_INTERRUPTED : CLI_EXIT_FAILED;
}

static void init(void *args) {
  farm_args *a = args;
  /* The command's first moment: from here to the exit a stop signal never kills a rank
   * (farm_signals_catch); farm_run decides what it means in each phase. */
  farm_signals_catch();
  farm_options_default(&a->o);
  a->o.add = a->add;
  a->o.reuse = a->reuse.v;
  a->o.job_paths = a->jobs.v;
  a->o.print_summaries = print_summaries, a->o.print_error = print_error, a->o.print_user = a;
  a->o.abort_status = abort_status;
  a->o.finish_job = cli_farm_finish_job, a->o.finish_user = &a->o; /* summary.md, validation */
}

static int check(const void *args, const cli_parsed *p, char *msg, size_t len) {
  const farm_args *a = args;
  if (a->jobs.n > 1 && (a->o.store_path || a->o.nadd || a->o.point >= 0 || a->o.nreuse))
    return cli_reject(msg, len, "--store, --add-buckets, --point and --reuse take a single job");
  if (a->cache && a->no_cache) return cli_reject(msg, len, "--cache and --no-cache contradict each other");
  return 0;
}

/* clang-format off */
static const cli_spec spec = {.command = "farm", .run = run, .init = init, .check = check,
                              .pos = {"JOB...", "job file", 1, CLI_LIST_MAX, offsetof(farm_args, jobs)},
                              CLI_OPTS(opts, farm_args)};
/* clang-format on */
const cli_spec *const cli_farm_specs[] = {&spec, NULL};

static const char *const outcome_names[] = {
    [FARM_DONE] = "done", [FARM_FAILED] = "failed", [FARM_INTERRUPTED] = "interrupted"};

/* {policy name: values[p]} over the job's policies; NULL when out of memory. */
static json_t *per_policy(const farm_summary *s, const int64_t *counts, const double *seconds) {
  json_t *o = json_object();
  for (int p = 0; o && p < s->npolicies; p++) {
    const char *name = s->policy_names[p];
    json_t *v = counts ? json_integer(counts[p]) : json_real(seconds[p]);
    if (json_object_set_new(o, name, v) < 0) json_decref(o), o = NULL;
  }
  return o;
}

/* One job's summary as JSON but its warnings; NULL when out of memory. */
static json_t *summary_core_json(const farm_summary *s) {
  return json_pack(
      "{s:s, s:s, s:s, s:i, s:{s:I, s:I, s:I}, s:o, s:{s:I, s:I, s:I, s:I, s:I, s:I}, "
      "s:{s:I, s:I, s:I}, s:I, s:{s:I, s:I, s:I, s:I}, s:I, s:f, s:f, s:o, s:f, s:f, s:f, s:I, s:i}",
      "job", s->job, "store", s->store_path, "outcome", outcome_names[s->outcome], "ranks", s->ranks, "buckets",
      "ok", (json_int_t)s->buckets_ok, "infeasible_capacity", (json_int_t)s->buckets_infeasible, "failed",
      (json_int_t)s->buckets_failed, "unique_ops", per_policy(s, s->unique_ops, NULL), "tasks", "total",
      (json_int_t)s->tasks_total, "op", (json_int_t)s->op_tasks, "bucket", (json_int_t)s->bucket_tasks, "part",
      (json_int_t)s->part_tasks, "done", (json_int_t)s->tasks_done, "failed", (json_int_t)s->tasks_failed, "reused",
      "store", (json_int_t)s->reused_store, "journal", (json_int_t)s->reused_journal, "resumed_ops",
      (json_int_t)s->resumed_ops, "recomputed", (json_int_t)s->recomputed, "validation", "kept",
      (json_int_t)s->validation_kept, "dropped", (json_int_t)s->validation_dropped, "replay_kept",
      (json_int_t)s->replay_kept, "replay_dropped", (json_int_t)s->replay_dropped, "evaluations",
      (json_int_t)s->evaluations, "core_s", s->core_s, "cpu_s", s->cpu_s, "policy_cpu_s",
      per_policy(s, NULL, s->policy_cpu_s), "wall_s", s->wall_s, "master_cpu_s", s->master_cpu_s, "master_rss_mb",
      s->master_rss_mb, "batches", (json_int_t)s->batches, "jobs", s->jobs);
}

/* The job's warnings, as printed (the first FARM_WARNINGS_MAX, then how many more). */
static json_t *warnings_json(const farm_summary *s) {
  json_t *a = json_array();
  for (int k = 0; a && k < s->nwarnings && k < FARM_WARNINGS_MAX; k++)
    if (json_array_append_new(a, json_string(s->warnings[k])) < 0) json_decref(a), a = NULL;
  char more[64];
  snprintf(more, sizeof more, "%d more warnings", s->nwarnings - FARM_WARNINGS_MAX);
  if (a && s->nwarnings > FARM_WARNINGS_MAX && json_array_append_new(a, json_string(more)) < 0)
    json_decref(a), a = NULL;
  return a;
}

/* The cache's counters (null: no cache). */
static json_t *summary_cache_json(const farm_summary *s) {
  if (!s->cache_used) return json_null();
  return json_pack("{s:I, s:I, s:I, s:I, s:I}", "hits_op", (json_int_t)s->cache_hits_op, "hits_bucket",
                   (json_int_t)s->cache_hits_bucket, "misses", (json_int_t)s->cache_misses, "damaged",
                   (json_int_t)s->cache_damaged, "stored", (json_int_t)s->cache_stored);
}

/* What changed since the store was farmed (null: there was no store): the fields, how
 * many there are (the first FARM_CHANGES_MAX listed) and the tasks recomputed. */
static json_t *changes_json(const farm_summary *s) {
  if (!s->had_store) return json_null();
  json_t *fields = json_array();
  for (int k = 0; fields && k < s->nchanges && k < FARM_CHANGES_MAX; k++) {
    const farm_change *c = &s->changes[k];
    if (json_array_append_new(
            fields, json_pack("{s:s, s:s, s:s}", "path", c->path, "before", c->before, "now", c->now)) < 0)
      json_decref(fields), fields = NULL;
  }
  if (!fields) return NULL;
  return json_pack("{s:o, s:i, s:{s:I, s:I, s:I}}", "fields", fields, "count", s->nchanges, "recomputed", "op",
                   (json_int_t)s->op_tasks, "bucket", (json_int_t)s->bucket_tasks, "part",
                   (json_int_t)s->part_tasks);
}

/* One job's summary as JSON; NULL when out of memory. */
static json_t *summary_json(const farm_summary *s) {
  json_t *j = summary_core_json(s);
  if (j && json_object_set_new(j, "warnings", warnings_json(s)) < 0) json_decref(j), j = NULL;
  json_t *sweep = json_pack("{s:i, s:I, s:I}", "variants", s->variants, "op_searches", (json_int_t)s->variant_ops,
                            "reused", (json_int_t)s->variant_reuse);
  if (j && json_object_set_new(j, "sweep", sweep) < 0) json_decref(j), j = NULL;
  if (j && json_object_set_new(j, "cache", summary_cache_json(s)) < 0) json_decref(j), j = NULL;
  if (j && json_object_set_new(j, "changes", changes_json(s)) < 0) json_decref(j), j = NULL;
  if (j && json_object_set_new(j, "duplicates", json_integer((json_int_t)s->duplicates)) < 0)
    json_decref(j), j = NULL;
  return j;
}

/* Rank 0, before the ranks leave farm_run: every job's Markdown summary, or with --json
 * {"outcome": the worst, "jobs": [summary, ...]}. */
static void print_summaries(const farm_summary *sums, int njobs, void *args) {
  const farm_args *a = args;
  json_t *jobs = a->json ? json_array() : NULL;
  int worst = FARM_DONE;
  for (int j = 0; j < njobs; j++) {
    worst = (int)sums[j].outcome > worst ? (int)sums[j].outcome : worst;
    if (!a->json) printf("\n"), farm_summary_print(&sums[j], stdout);
    else if (jobs && json_array_append_new(jobs, summary_json(&sums[j])) < 0) json_decref(jobs), jobs = NULL;
  }
  json_t *doc = a->json && jobs ? json_pack("{s:s, s:o}", "outcome", outcome_names[worst], "jobs", jobs) : NULL;
  if (a->json && !(doc && cli_print_json(doc) == 0)) cli_fail("farm", "cannot build JSON output");
  json_decref(doc);
  fflush(stdout);
}

/* ENPU_CACHE_MAX_BYTES, or 4 GiB. */
#define CACHE_MAX_BYTES_DEFAULT ((int64_t)4 << 30)
static int64_t env_cache_max_bytes(void) {
  const char *v = getenv("ENPU_CACHE_MAX_BYTES");
  uint64_t n = 0;
  return v && cli_parse_u64(v, &n) == 0 && n <= INT64_MAX ? (int64_t)n : CACHE_MAX_BYTES_DEFAULT;
}

static int run(void *args) {
  farm_args *a = args;
  a->o.njobs = a->jobs.n;
  farm_summary sums[CLI_LIST_MAX];
  enpu_err err = {0};
  const int cached = cli_cache_dir(a->cache, a->no_cache, 0, a->cache_dir, sizeof a->cache_dir, &err);
  if (cached < 0) return cli_fail("farm", err.msg), CLI_EXIT_USAGE;
  a->o.cache_dir = cached ? a->cache_dir : NULL;
  a->o.cache_max_bytes = env_cache_max_bytes();
  if (farm_run(&a->o, sums, &err) < 0) {
    if (sums[0].rank == 0 && !a->error_printed) cli_fail("farm", err.msg);
    return cli_exit_status(err.code, sums[0].input_error ? CLI_EXIT_USAGE : CLI_EXIT_FAILED);
  }
  int st = 0; /* rank 0 printed the summaries (print_summaries) */
  for (int j = 0; j < a->o.njobs; j++) st = (int)sums[j].outcome > st ? (int)sums[j].outcome : st;
  return st;
}
