/* cmd_buckets.c — `enpu buckets JOB [--json]`: expand a job's bucket grid and show, per
 * phase, which (batch, seq) buckets fit the chips' HBM, with the totals the farm will
 * compile. The grid module does the work; this file parses arguments and prints.
 * JSON field names are a contract for scripts. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "cli_internal.h"
#include "config.h"
#include "grid.h"

static int run(void *args);

typedef struct {
  const char *path;
  int json;
} buckets_args;

static const cli_opt opts[] = {CLI_JSON_OPT(buckets_args, "the grid")};

/* clang-format off */
static const cli_spec spec = {.command = "buckets", .run = run,
                              CLI_JOB_ARG(buckets_args, path), CLI_OPTS(opts, buckets_args)};
/* clang-format on */
const cli_spec *const cli_buckets_specs[] = {&spec, NULL};

/* ---------------------------------------------------------------------------------
 * Human output */

static void print_phase(const grid_phase *v) {
  const grid_totals *t = &v->totals;
  const config_parallel *p = &v->parallel;
  printf("%s: %d batch sizes x %d sequence lengths = %lld buckets, %lld feasible, "
         "%lld infeasible (capacity)\n",
         config_phase_name(v->phase), v->batch_count, v->seq_count, (long long)t->buckets, (long long)t->feasible,
         (long long)t->infeasible_capacity);
  printf("  parallel dp %d tp %d pp %d ep %d; weights %.1f GB of %.1f GB HBM per chip\n", p->dp, p->tp, p->pp,
         p->ep, v->buckets[0].mem.weights_bytes / 1e9, v->buckets[0].mem.hbm_bytes / 1e9);
  const config_capacity cap = v->buckets[0].mem.capacity;
  printf("  per-chip HBM use in %% (x: weights + KV cache + activations exceed HBM%s)\n",
         cap == CONFIG_CAPACITY_IGNORE    ? "; capacity ignore: over 100 compiled as if it fitted"
         : cap == CONFIG_CAPACITY_OFFLOAD ? "; capacity offload: over 100 streams weights"
                                          : "");

  int width = 4;
  char label[32];
  int last_len = snprintf(label, sizeof label, "%d", v->batch[v->batch_count - 1]);
  if (last_len + 1 > width) width = last_len + 1;
  printf("  %11s", "seq \\ batch");
  for (int bi = 0; bi < v->batch_count; bi++) printf("%*d", width, v->batch[bi]);
  printf("\n");
  for (int si = 0; si < v->seq_count; si++) {
    printf("  %11d", v->seq[si]);
    for (int bi = 0; bi < v->batch_count; bi++) {
      const grid_bucket *b = &v->buckets[(size_t)bi * v->seq_count + si];
      if (b->status == GRID_FEASIBLE)
        printf("%*.0f", width, 100.0 * grid_memory_used_bytes(&b->mem) / b->mem.hbm_bytes);
      else printf("%*s", width, "x");
    }
    printf("\n");
  }
  printf("\n");
}

static void print_human(const config_job *job, const grid *g) {
  printf("job %s: model %s, chip %s\n\n", job->name, job->model.name, job->chip.name);
  for (int ph = 0; ph < CONFIG_NPHASE; ph++) {
    const grid_phase *v = grid_get_phase(g, (config_phase)ph);
    if (v) print_phase(v);
  }
  printf("slacks:");
  for (int i = 0; i < job->slack_count; i++) printf(" %g%%", 100.0 * job->slacks[i]);
  printf("\npolicies:");
  for (int i = 0; i < job->policy_count; i++) {
    char name[CONFIG_NAME_LEN];
    config_job_policy_name(job, &job->policies[i], name);
    printf(" %s", name);
  }
  const grid_totals *t = grid_get_totals(g);
  printf("\ntotals: %lld buckets, %lld feasible, %lld infeasible (capacity); %lld compilations "
         "(feasible buckets x %d slacks x %d policies)\n",
         (long long)t->buckets, (long long)t->feasible, (long long)t->infeasible_capacity,
         (long long)t->compilations, job->slack_count, job->policy_count);
}

/* ---------------------------------------------------------------------------------
 * JSON output. json_pack fails on a NULL "o" argument (a failed inner builder) and
 * releases the references it was given, so failures propagate up as NULL. */

static json_t *bytes_json(double bytes) { return json_integer((json_int_t)llround(bytes)); }

static json_t *buckets_int_array(const int *values, int n) {
  json_t *a = json_array();
  for (int i = 0; a && i < n; i++) {
    if (json_array_append_new(a, json_integer(values[i])) < 0) {
      json_decref(a);
      a = NULL;
    }
  }
  return a;
}

static json_t *phase_json(const grid_phase *v) {
  json_t *buckets = json_array();
  for (int i = 0; buckets && i < v->bucket_count; i++) {
    const grid_bucket *b = &v->buckets[i];
    json_t *o = json_pack("{s:i, s:i, s:b, s:o, s:o, s:o, s:b, s:o}", "batch", b->batch, "seq", b->seq, "feasible",
                          b->status == GRID_FEASIBLE, "weights_bytes", bytes_json(b->mem.weights_bytes), "kv_bytes",
                          bytes_json(b->mem.kv_bytes), "activation_bytes", bytes_json(b->mem.activation_bytes),
                          "fits", grid_memory_used_bytes(&b->mem) <= b->mem.hbm_bytes, "offload_bytes",
                          bytes_json(b->mem.offload_bytes));
    if (json_array_append_new(buckets, o) < 0) {
      json_decref(buckets);
      buckets = NULL;
    }
  }
  const config_parallel *p = &v->parallel;
  const grid_totals *t = &v->totals;
  return json_pack("{s:o, s:o, s:o, s:I, s:I, s:I, s:{s:i, s:i, s:i, s:i}, s:o}", "batch",
                   buckets_int_array(v->batch, v->batch_count), "seq", buckets_int_array(v->seq, v->seq_count),
                   "buckets", buckets, "feasible", (json_int_t)t->feasible, "infeasible_capacity",
                   (json_int_t)t->infeasible_capacity, "compilations", (json_int_t)t->compilations, "parallel",
                   "dp", p->dp, "tp", p->tp, "pp", p->pp, "ep", p->ep, "hbm_bytes",
                   bytes_json(v->buckets[0].mem.hbm_bytes));
}

static json_t *job_json(const config_job *job, const grid *g) {
  json_t *phases = json_object();
  for (int ph = 0; phases && ph < CONFIG_NPHASE; ph++) {
    const grid_phase *v = grid_get_phase(g, (config_phase)ph);
    if (v && json_object_set_new(phases, config_phase_name(v->phase), phase_json(v)) < 0) {
      json_decref(phases);
      phases = NULL;
    }
  }
  json_t *slacks = json_array();
  for (int i = 0; slacks && i < job->slack_count; i++) {
    if (json_array_append_new(slacks, json_real(job->slacks[i])) < 0) {
      json_decref(slacks);
      slacks = NULL;
    }
  }
  json_t *policies = json_array();
  for (int i = 0; policies && i < job->policy_count; i++) {
    char name[CONFIG_NAME_LEN];
    config_job_policy_name(job, &job->policies[i], name);
    if (json_array_append_new(policies, json_string(name)) < 0) {
      json_decref(policies);
      policies = NULL;
    }
  }
  json_t *points = json_array(); /* the sweep's points, 1.. (enpu farm --point K) */
  for (int v = 0; points && v < job->variant_count; v++)
    if (json_array_append_new(points, json_string(job->variants[v].name)) < 0) json_decref(points), points = NULL;
  const grid_totals *t = grid_get_totals(g);
  return json_pack("{s:s, s:s, s:o, s:o, s:o, s:o, s:{s:I, s:I, s:I, s:I}}", "job", job->name, "capacity",
                   config_capacity_name(job->capacity), "phases", phases, "slacks", slacks, "policies", policies,
                   "sweep_points", points, "totals", "buckets", (json_int_t)t->buckets, "feasible",
                   (json_int_t)t->feasible, "infeasible_capacity", (json_int_t)t->infeasible_capacity,
                   "compilations", (json_int_t)t->compilations);
}

/* ---------------------------------------------------------------------------------
 * Entry point */

static int run(void *args) {
  buckets_args *a = args;
  enpu_err err = {0};
  config_job *job = NULL;
  if (config_job_load(a->path, &job, &err) < 0) return cli_fail("buckets", err.msg), cli_input_status(err.code);
  grid *g = NULL;
  if (grid_create(job, &g, &err) < 0) {
    config_job_free(job);
    cli_fail("buckets", err.msg);
    return cli_input_status(err.code);
  }

  int rc = 0;
  if (a->json) {
    json_t *doc = job_json(job, g);
    rc = doc ? cli_print_json(doc) : cli_fail("buckets", "out of memory building the JSON");
    json_decref(doc);
  } else {
    print_human(job, g);
  }
  grid_free(g);
  config_job_free(job);
  return rc;
}
