/* cmd_validate.c — `enpu validate STORE --trace T --cluster C [--sample N] [--seed S]
 * [--job JOB.json] [--out DIR] [--lock-wait SEC] [--json]`: re-simulate a stratified sample of the store's
 * plans, replay the trace with every policy, write the store's validation tables and
 * <out>/<job>/validation.md. The validate module does the work.
 *
 * Exit status: 0 every sampled plan passed; 1 a plan failed (the report says which) or a
 * file or the replay failed; 2 usage error; 3 a stop signal (SIGTERM, SIGINT, SIGUSR1)
 * came while it waited for the lock or validated: nothing was published, the store is
 * as it was; 4 the environment refused (cli_internal.h).
 * The store is rewritten under its writer lock (store_lock): with a farm on the same
 * store, whichever comes second waits for the first, up to STORE_LOCK_WAIT_S. The stop
 * signals are caught as the farm catches them (farm_signals_catch, from the command's
 * first moment), so none kills it: validate_run polls the flag. */
#include <stdlib.h>
#include <string.h>

#include "cli_internal.h"
#include "config.h"
#include "store.h"
#include "validate.h"

static int run(void *args);

typedef struct {
  const char *store, *trace, *cluster, *job, *out;
  int sample, json;
  uint64_t seed;
  double lock_wait_s;
} validate_cli;

/* clang-format off */
static const cli_opt opts[] = {
    {.name = "trace", .type = CLI_STRING, .at = offsetof(validate_cli, trace), .meta = "T", .flags = CLI_REQUIRED,
     .help = "trace CSV (e.g. jobs/traces/AzureLLMInferenceTrace_conv.csv)"},
    {.name = "cluster", .type = CLI_STRING, .at = offsetof(validate_cli, cluster), .meta = "C",
     .flags = CLI_REQUIRED, .help = "cluster file of the replay (e.g. jobs/clusters/llama3-70b.json)"},
    {.name = "sample", .type = CLI_INT, .at = offsetof(validate_cli, sample), .meta = "N",
     .range = CLI_CONFIG_RANGE("job", "$.validation.sample"), .help = "buckets per policy"},
    {.name = "seed", .type = CLI_U64, .at = offsetof(validate_cli, seed), .meta = "S",
     .range = CLI_AT_LEAST(0), .help = "seed of the sample"},
    {.name = "job", .type = CLI_STRING, .at = offsetof(validate_cli, job), .meta = "JOB",
     .help = "job to rebuild the graphs from (default: the job, model, chip and\n"
             "cluster documents stored in STORE, with the chip's power tables\n"
             "from the directory the cluster file's job references live in)"},
    {.name = "out", .type = CLI_STRING, .at = offsetof(validate_cli, out), .meta = "DIR",
     .help = "validation.md goes to DIR/<job>/ (default: beside the store)"},
    {.name = "lock-wait", .type = CLI_DOUBLE, .at = offsetof(validate_cli, lock_wait_s), .meta = "SEC",
     .range = CLI_RANGE(0, 1e9), .help = "wait up to SEC s for another writer of the store"},
    CLI_JSON_OPT(validate_cli, "the outcome"),
};
/* clang-format on */

static void init(void *args) {
  validate_cli *a = args;
  farm_signals_catch(); /* from here to the exit a stop signal is a flag validate_run polls */
  a->sample = VALIDATE_DEFAULT_SAMPLE, a->seed = 1, a->lock_wait_s = STORE_LOCK_WAIT_S;
}

/* clang-format off */
static const cli_spec spec = {.command = "validate", .run = run, .init = init,
                              CLI_STORE_ARG(validate_cli, store), CLI_OPTS(opts, validate_cli)};
/* clang-format on */
const cli_spec *const cli_validate_specs[] = {&spec, NULL};

/* The job: --job, or rebuilt from the store's attributes; *source says which. */
static int load_job(const validate_cli *a, config_job **job, char *source, size_t cap, enpu_err *err) {
  store_contents *c = NULL;
  ENPU_FORWARD(store_load(a->store, &c, err));
  int rc;
  if (a->job) {
    rc = config_job_load(a->job, job, err);
    if (rc == 0)
      snprintf(source, cap, "`%s` (--job; its hash %s the store's job_hash)", a->job,
               (*job)->hash == c->job_hash ? "equals" : "differs from");
    if (rc == 0 && (*job)->hash != c->job_hash)
      fprintf(stderr,
              "enpu validate: note: %s is not the job %s was compiled from (hash %016llx, "
              "store %016llx)\n",
              a->job, a->store, (unsigned long long)(*job)->hash, (unsigned long long)c->job_hash);
  } else {
    rc = validate_job_from_store(c, a->cluster, job, err);
    if (rc == 0)
      snprintf(source, cap,
               "rebuilt from the store's job, model, chip and cluster attributes "
               "(chip power tables beside `%s`; job hash equals the store's)",
               a->cluster);
  }
  store_contents_free(c);
  return rc;
}

/* DIR/<job>/validation.md with --out DIR, else validation.md beside the store. */
static int validation_md_path(const validate_cli *a, const config_job *job, char *out, size_t cap, enpu_err *err) {
  if (a->out) {
    ENPU_RETURN_IF(snprintf(out, cap, "%s/%s/validation.md", a->out, job->name) >= (int)cap, err, ENPU_ERR_RANGE,
                   "--out path too long: %s", a->out);
    return 0;
  }
  char store[CONFIG_PATH_LEN];
  ENPU_FORWARD(store_resolve_path(a->store, store, sizeof store, err));
  snprintf(out, cap, "%.*s/validation.md", (int)(strrchr(store, '/') - store), store);
  return 0;
}

static int print_json(const validate_outcome *o, const char *report, const char *source) {
  json_t *doc = json_pack("{s:s, s:I, s:I, s:I, s:I, s:I, s:f, s:f, s:f, s:s, s:s, s:s?}", "result",
                          o->failed ? "fail" : "pass", "policies", (json_int_t)o->policies, "buckets",
                          (json_int_t)o->buckets, "plans", (json_int_t)o->plans, "passed", (json_int_t)o->passed,
                          "failed", (json_int_t)o->failed, "resim_s", o->resim_s, "replay_s", o->replay_s,
                          "total_s", o->total_s, "report", report, "job", source, "first_failure",
                          o->first_failure[0] ? o->first_failure : NULL);
  if (!doc) return cli_fail("validate", "cannot build the JSON output");
  const int st = cli_print_json(doc);
  json_decref(doc);
  return st;
}

static int run(void *args) {
  validate_cli *a = args;
  enpu_err err = {0};
  config_job *job = NULL;
  config_cluster *cluster = NULL;
  char source[2 * CONFIG_PATH_LEN] = "", report[2 * CONFIG_PATH_LEN] = "";
  int rc = load_job(a, &job, source, sizeof source, &err);
  if (rc == 0) rc = config_cluster_load(a->cluster, &cluster, &err);
  validate_outcome o;
  if (rc == 0) rc = validation_md_path(a, job, report, sizeof report, &err);
  if (rc == 0) {
    validate_args va;
    validate_args_default(&va);
    va.store_path = a->store, va.trace_path = a->trace, va.job = job, va.job_source = source;
    va.cluster = cluster, va.report_path = report, va.sample = a->sample, va.seed = a->seed;
    va.log = a->json ? NULL : stderr, va.lock_wait_s = a->lock_wait_s, va.stop = farm_stop_flag();
    rc = validate_run(&va, &o, &err);
  }
  int status = 0;
  if (rc != 0) {
    cli_fail("validate", err.msg);
    status = cli_store_status(a->store, err.code);
  }
  if (rc == 0 && *farm_stop_flag())
    fprintf(stderr, "enpu validate: signal %d came after the store was published: the validation finished\n",
            (int)*farm_stop_flag());
  if (rc == 0) {
    if (a->json) {
      status = print_json(&o, report, source);
    } else {
      printf("%s: %zu plans in %zu buckets of %zu policies: %zu passed, %zu failed "
             "(re-simulation %.2f s, replay %.2f s, total %.2f s)\nreport: %s\n",
             o.failed ? "FAIL" : "PASS", o.plans, o.buckets, o.policies, o.passed, o.failed, o.resim_s, o.replay_s,
             o.total_s, report);
      if (o.failed) printf("first failure: %s\n", o.first_failure);
    }
    if (status == 0 && o.failed) status = 1;
  }
  config_cluster_free(cluster);
  config_job_free(job);
  return status;
}
