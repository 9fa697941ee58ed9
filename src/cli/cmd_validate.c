/* cmd_validate.c — `enpu validate STORE --trace T --cluster C [--sample N] [--seed S]
 * [--job JOB.json] [--out DIR] [--lock-wait SEC] [--json]`: re-simulate a stratified sample of the store's
 * plans, replay the trace with every policy, write the store's validation tables and
 * <out>/<job>/validation.md. The validate module does the work.
 *
 * Exit status: 0 every sampled plan passed; 1 a plan failed (the report says which) or a
 * file or the replay failed; 2 usage error; 4 the environment refused (cli_internal.h).
 * The store is rewritten under its writer lock (store_lock): with a farm on the same
 * store, whichever comes second waits for the first, up to STORE_LOCK_WAIT_S. */
#include <stdlib.h>
#include <string.h>

#include "cli_internal.h"
#include "config.h"
#include "store.h"
#include "validate.h"

static void usage(FILE *out) {
  fprintf(out,
          "usage: enpu validate STORE --trace T --cluster C [--sample N] [--seed S]\n"
          "                     [--job JOB.json] [--out DIR] [--lock-wait SEC] [--json]\n"
          "\n"
          "Validate a plan store: a stratified sample of buckets per policy (strata: phase x\n"
          "batch range x seq range), every stored plan of a sampled bucket re-simulated on\n"
          "the real operator order with the full cost model and V/f transitions (time within\n"
          "the budget, time and energy equal to the stored ones), and the trace replayed with\n"
          "every policy. Results go into the store's validation tables (the rest of the store\n"
          "is unchanged) and into DIR/<job>/validation.md.\n"
          "\n"
          "  --trace T     trace CSV (e.g. jobs/traces/AzureLLMInferenceTrace_conv.csv)\n"
          "  --cluster C   cluster file of the replay (e.g. jobs/clusters/llama3-70b.json)\n"
          "  --sample N    buckets per policy (default %d)\n"
          "  --seed S      seed of the sample (default 1)\n"
          "  --job JOB     job to rebuild the graphs from (default: the job, model, chip and\n"
          "                cluster documents stored in STORE, with the chip's power tables\n"
          "                from the directory the cluster file's job references live in)\n"
          "  --out DIR     validation.md goes to DIR/<job>/ (default: beside the store)\n"
          "  --lock-wait SEC  wait up to SEC s for another writer of the store (default %.0f)\n"
          "  --json        print the outcome as one JSON document\n"
          "  -h, --help    show this help\n"
          "\n"
          "Exit status: 0 every sampled plan passed, 1 some failed or an error, 2 usage,\n"
          "4 the environment refused (disk full, I/O error, the store locked by a farm or\n"
          "another validation for longer than --lock-wait; the store is unchanged).\n",
          VALIDATE_DEFAULT_SAMPLE, STORE_LOCK_WAIT_S);
}

typedef struct {
  const char *store, *trace, *cluster, *job, *out;
  int sample, json;
  uint64_t seed;
  double lock_wait_s;
} validate_cli;

/* @return -1 to go on, or the exit status (0 after --help, 2 on a usage error). */
static int parse_args(int argc, char **argv, validate_cli *a) {
  for (int i = 1; i < argc; i++) {
    const char *s = argv[i];
    if (!strcmp(s, "--help") || !strcmp(s, "-h")) {
      usage(stdout);
      return 0;
    }
    if (!strcmp(s, "--json")) {
      a->json = 1;
      continue;
    }
    if (s[0] != '-') {
      if (a->store) return cli_usage_error("validate", usage, "more than one STORE ('%s')", s);
      a->store = s;
      continue;
    }
    const char **text = !strcmp(s, "--trace")     ? &a->trace
                        : !strcmp(s, "--cluster") ? &a->cluster
                        : !strcmp(s, "--job")     ? &a->job
                        : !strcmp(s, "--out")     ? &a->out
                                                  : NULL;
    const int is_sample = !strcmp(s, "--sample"), is_seed = !strcmp(s, "--seed"), is_wait = !strcmp(s, "--lock-wait");
    if (!text && !is_sample && !is_seed && !is_wait)
      return cli_usage_error("validate", usage, "unknown argument '%s'", s);
    if (i + 1 >= argc) return cli_usage_error("validate", usage, "option '%s' needs a value", s);
    const char *v = argv[++i];
    if (text) {
      *text = v;
    } else if (is_sample) {
      if (cli_parse_int(v, &a->sample) < 0 || a->sample < 1)
        return cli_usage_error("validate", usage, "--sample expects an integer >= 1, got '%s'", v);
    } else if (is_wait) {
      if (cli_parse_double(v, &a->lock_wait_s) < 0 || a->lock_wait_s < 0 || a->lock_wait_s > 1e9)
        return cli_usage_error("validate", usage, "--lock-wait expects seconds >= 0, got '%s'", v);
    } else if (cli_parse_u64(v, &a->seed) < 0) {
      return cli_usage_error("validate", usage, "--seed expects a non-negative integer, got '%s'", v);
    }
  }
  if (!a->store) return cli_usage_error("validate", usage, "missing STORE");
  if (!a->trace) return cli_usage_error("validate", usage, "missing --trace");
  if (!a->cluster) return cli_usage_error("validate", usage, "missing --cluster");
  return -1;
}

/* The job: --job, or rebuilt from the store's attributes; *source says which. */
static int load_job(const validate_cli *a, config_job **job, char *source, size_t cap,
                    enpu_err *err) {
  store_contents *c = NULL;
  ENPU_FORWARD(store_load(a->store, &c, err));
  int rc;
  if (a->job) {
    rc = config_job_load(a->job, job, err);
    if (rc == 0)
      snprintf(source, cap, "`%s` (--job; its hash %s the store's job_hash)", a->job,
               (*job)->hash == c->job_hash ? "equals" : "differs from");
    if (rc == 0 && (*job)->hash != c->job_hash)
      fprintf(stderr, "enpu validate: note: %s is not the job %s was compiled from (hash %016llx, "
                      "store %016llx)\n",
              a->job, a->store, (unsigned long long)(*job)->hash, (unsigned long long)c->job_hash);
  } else {
    rc = validate_job_from_store(c, a->cluster, job, err);
    if (rc == 0)
      snprintf(source, cap, "rebuilt from the store's job, model, chip and cluster attributes "
                            "(chip power tables beside `%s`; job hash equals the store's)",
               a->cluster);
  }
  store_contents_free(c);
  return rc;
}

/* DIR/<job>/validation.md with --out DIR, else validation.md beside the store. */
static int report_path(const validate_cli *a, const config_job *job, char *out, size_t cap, enpu_err *err) {
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
  json_t *doc = json_pack("{s:s, s:I, s:I, s:I, s:I, s:I, s:f, s:f, s:f, s:s, s:s, s:s?}",
                          "result", o->failed ? "fail" : "pass", "policies", (json_int_t)o->policies,
                          "buckets", (json_int_t)o->buckets, "plans", (json_int_t)o->plans,
                          "passed", (json_int_t)o->passed, "failed", (json_int_t)o->failed,
                          "resim_s", o->resim_s, "replay_s", o->replay_s, "total_s", o->total_s,
                          "report", report, "job", source, "first_failure",
                          o->first_failure[0] ? o->first_failure : NULL);
  if (!doc) return cli_fail("validate", "cannot build the JSON output");
  const int st = cli_print_json(doc);
  json_decref(doc);
  return st;
}

int cli_cmd_validate(int argc, char **argv) {
  validate_cli a = {.sample = VALIDATE_DEFAULT_SAMPLE, .seed = 1, .lock_wait_s = STORE_LOCK_WAIT_S};
  const int st = parse_args(argc, argv, &a);
  if (st >= 0) return st;
  enpu_err err = {0};
  config_job *job = NULL;
  config_cluster *cluster = NULL;
  char source[2 * CONFIG_PATH_LEN] = "", report[2 * CONFIG_PATH_LEN] = "";
  int rc = load_job(&a, &job, source, sizeof source, &err);
  if (rc == 0) rc = config_cluster_load(a.cluster, &cluster, &err);
  validate_outcome o;
  if (rc == 0) rc = report_path(&a, job, report, sizeof report, &err);
  if (rc == 0) {
    validate_args va;
    validate_args_default(&va);
    va.store_path = a.store, va.trace_path = a.trace, va.job = job, va.job_source = source;
    va.cluster = cluster, va.report_path = report, va.sample = a.sample, va.seed = a.seed;
    va.log = a.json ? NULL : stderr, va.lock_wait_s = a.lock_wait_s;
    rc = validate_run(&va, &o, &err);
  }
  int status = rc == 0 ? 0 : cli_exit_status(err.code, cli_fail("validate", err.msg));
  if (rc == 0) {
    if (a.json) {
      status = print_json(&o, report, source);
    } else {
      printf("%s: %zu plans in %zu buckets of %zu policies: %zu passed, %zu failed "
             "(re-simulation %.2f s, replay %.2f s, total %.2f s)\nreport: %s\n",
             o.failed ? "FAIL" : "PASS", o.plans, o.buckets, o.policies, o.passed, o.failed,
             o.resim_s, o.replay_s, o.total_s, report);
      if (o.failed) printf("first failure: %s\n", o.first_failure);
    }
    if (status == 0 && o.failed) status = 1;
  }
  config_cluster_free(cluster);
  config_job_free(job);
  return status;
}
