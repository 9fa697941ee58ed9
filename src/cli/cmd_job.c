/* cmd_job.c — `enpu job init MODEL --trace TRACE [--chip CHIP] [-o DIR]`: a job and a
 * cluster for a model and a trace (jobinit_run does the work by the rules jobinit.h
 * states; this file parses the options and prints the summary). `enpu plan` calls the
 * same parsing (cli_job_init_options) on its own arguments. */
#include <stdlib.h>
#include <string.h>

#include "cli_internal.h"
#include "jobinit.h"

static int init_run(void *args);

static void init_defaults(void *args) {
  cli_job_init_args *a = args;
  jobinit_options_default(&a->o);
  a->chip = CLI_DEFAULT_CHIP;
  a->from = -1;
}

/* clang-format off */
static const cli_opt init_opts[] = {
    {.name = "trace", .type = CLI_STRING, .at = offsetof(cli_job_init_args, trace), .meta = "TRACE.csv", .flags = CLI_REQUIRED,
     .help = "the request trace: the replay's CSV, or a published layout with --from"},
    CLI_JOB_INIT_OPTS(cli_job_init_args),
    {.name = "output", .alias = 'o', .type = CLI_STRING, .at = offsetof(cli_job_init_args, out), .meta = "DIR",
     .help = "write job.json, cluster.json, model.json and init.md here\n(default: runs/<name>)"},
    CLI_JSON_OPT(cli_job_init_args, "the files and the figures of the summary"),
};
static const cli_spec init_spec = {.command = "job init", .run = init_run, .init = init_defaults,
                                   .pos = {"MODEL", "model (Hugging Face config.json or model file)", 1, 1,
                                           offsetof(cli_job_init_args, model)},
                                   CLI_OPTS(init_opts, cli_job_init_args)};
/* clang-format on */
const cli_spec *const cli_job_specs[] = {&init_spec, NULL};

/* The name a model file gives when --name does not: its stem, or for config.json its
 * folder's (the importer's rule). */
static void model_stem(const char *path, char *out, size_t cap) {
  const char *base = strrchr(path, '/');
  base = base ? base + 1 : path;
  if (strcmp(base, "config.json") == 0 && base > path) {
    const char *end = base - 1, *start = end;
    while (start > path && start[-1] != '/') start--;
    snprintf(out, cap, "%.*s", (int)(end - start), start);
    return;
  }
  const char *dot = strrchr(base, '.');
  snprintf(out, cap, "%.*s", (int)(dot && dot > base ? dot - base : (long)strlen(base)), base);
}

int cli_job_init_options(cli_job_init_args *a, const char *runs, char *dir, size_t cap) {
  jobinit_options *o = &a->o;
  o->model_path = a->model, o->chip_path = a->chip, o->trace_path = a->trace, o->name = a->name;
  o->tp = a->tp, o->ep = a->ep;
  o->nignore = a->ignore ? cli_split_keys(a->ignore, a->ignore_buf, sizeof a->ignore_buf, a->ignore_keys,
                                          (int)(sizeof a->ignore_keys / sizeof *a->ignore_keys))
                         : 0;
  o->ignore = a->ignore_keys;
  o->npercentiles = a->percentiles.n, o->nttft = a->ttft.n, o->ntpot = a->tpot.n;
  if (a->percentiles.n > CONFIG_MAX_SLO_CLASSES || a->ttft.n > CONFIG_MAX_SLO_CLASSES ||
      a->tpot.n > CONFIG_MAX_SLO_CLASSES)
    return cli_fail("job init", "at most 8 SLO classes"), CLI_EXIT_USAGE;
  for (int k = 0; k < a->percentiles.n; k++) {
    o->percentiles[k] = a->percentiles.v[k];
    if (k && a->percentiles.v[k] <= a->percentiles.v[k - 1])
      return cli_fail("job init", "--percentiles: expected increasing values"), CLI_EXIT_USAGE;
  }
  const int classes = a->percentiles.n ? a->percentiles.n : 3;
  if ((a->ttft.n && a->ttft.n != classes) || (a->tpot.n && a->tpot.n != classes))
    return cli_fail("job init", "--ttft-ms and --tpot-ms: expected one value per SLO class"), CLI_EXIT_USAGE;
  for (int k = 0; k < a->ttft.n; k++) o->ttft_ms[k] = a->ttft.v[k];
  for (int k = 0; k < a->tpot.n; k++) o->tpot_ms[k] = a->tpot.v[k];
  if (a->out) snprintf(dir, cap, "%s", a->out);
  else {
    char stem[CONFIG_NAME_LEN];
    model_stem(a->model, stem, sizeof stem);
    snprintf(dir, cap, "%s/%s", runs, a->name ? a->name : stem);
  }
  o->out_dir = dir;
  return 0;
}

int cli_job_init_trace(cli_job_init_args *a, const char *cmd) {
  if (a->from < 0) return 0;
  enpu_err err = {0};
  char *text = NULL, *csv = NULL, *old = NULL;
  size_t len = 0, old_len = 0;
  snprintf(a->converted, sizeof a->converted, "%s/trace.csv", a->o.out_dir);
  const replay_convert_options o = {.format = (replay_format)a->from, .stop = a->o.stop};
  replay_convert_counts n;
  int rc = enpu_mkdir_p(a->o.out_dir, &err);
  if (!rc) rc = enpu_read_file_max(a->trace, ENPU_TRACE_MAX_BYTES, &text, &len, &err);
  if (!rc) rc = replay_trace_convert(text, len, a->trace, &o, &csv, &n, &err);
  enpu_err ignored = {0};
  const bool same = !rc && enpu_read_file_max(a->converted, ENPU_TRACE_MAX_BYTES, &old, &old_len, &ignored) == 0 &&
                    old_len == strlen(csv) && memcmp(old, csv, old_len) == 0;
  if (!rc && !same) rc = enpu_file_write(a->converted, csv, strlen(csv), 0, &err);
  free(text), free(csv), free(old);
  if (rc < 0) return cli_fail(cmd, err.msg), cli_input_status(err.code);
  if (n.unsorted)
    fprintf(stderr, "enpu %s: warning: %zu rows of %s are earlier than the row before them; converted sorted\n",
            cmd, n.unsorted, a->trace);
  fprintf(stderr, "enpu %s: %s converted from %s: %zu requests\n", cmd, a->converted, replay_format_names[a->from],
          n.rows);
  a->o.trace_path = a->trace = a->converted;
  return 0;
}

static json_t *result_json(const jobinit_result *r) {
  json_t *slo = json_array();
  for (int k = 0; k < r->nslo; k++)
    json_array_append_new(
        slo, json_pack("{s:s, s:i, s:i, s:f, s:f, s:f, s:f}", "name", r->slo[k].name, "prefill_max_tokens",
                       r->slo[k].prefill_max_tokens, "decode_max_tokens", r->slo[k].decode_max_tokens, "ttft_ms",
                       r->slo[k].ttft_ms, "tpot_ms", r->slo[k].tpot_ms, "nodvfs_ttft_ms", r->nodvfs_ttft_ms[k],
                       "nodvfs_tpot_ms", r->nodvfs_tpot_ms[k]));
  return json_pack("{s:s, s:s, s:s, s:s, s:s, s:I, s:f, s:I, s:{s:f, s:f}, s:i, s:i, s:i, s:{s:f, s:f}, s:o, "
                   "s:{s:i, s:i}}",
                   "name", r->name, "job", r->job_path, "cluster", r->cluster_path, "model", r->model_path,
                   "summary", r->summary_path, "requests", (json_int_t)r->requests, "coverage", r->coverage,
                   "outside", (json_int_t)r->outside, "padding_waste", "prefill", r->padding_waste[0], "decode",
                   r->padding_waste[1], "chips", r->chips, "tp", r->parallel.tp, "ep", r->parallel.ep, "headroom",
                   "prefill", r->headroom[0], "decode", r->headroom[1], "slo", slo, "nodes", "prefill", r->nodes[0],
                   "decode", r->nodes[1]);
}

int cli_job_init_print(const cli_job_init_args *a, const jobinit_result *r, FILE *out) {
  if (a->json) {
    json_t *doc = result_json(r);
    const int rc = doc ? cli_print_json(doc) : cli_fail("job init", "out of memory (JSON output)");
    json_decref(doc);
    return rc;
  }
  jobinit_write_summary(&a->o, r, out);
  return CLI_EXIT_OK;
}

static int init_run(void *args) {
  cli_job_init_args *a = args;
  char dir[CONFIG_PATH_LEN];
  int rc = cli_job_init_options(a, "runs", dir, sizeof dir);
  if (!rc) rc = cli_job_init_trace(a, "job init");
  if (rc) return rc;
  jobinit_result *r = calloc(1, sizeof *r);
  if (!r) return cli_fail("job init", "out of memory"), CLI_EXIT_ENV;
  enpu_err err = {0};
  if (jobinit_run(&a->o, r, &err) < 0) {
    cli_fail("job init", err.msg);
    free(r);
    return err.code == ENPU_ERR_INFEASIBLE ? CLI_EXIT_FAILED : cli_input_status(err.code);
  }
  rc = cli_job_init_print(a, r, stdout);
  free(r);
  return rc;
}
