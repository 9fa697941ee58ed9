/* jobinit.c — `enpu job init`'s work (jobinit.h states the rules): read the model (a
 * Hugging Face config is imported), the chip and the trace; derive the grid from the
 * trace; write a draft job and load it, so that every later figure is measured on the
 * files as config_job_load reads them; choose the parallelism, the SLO targets and the
 * node counts on it; write the final files and the summary. */
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "jobinit_internal.h"

#define JOBINIT_PEAK_WINDOW_NS 60e9 /* the busiest minute sizes the nodes */

void jobinit_options_default(jobinit_options *o) {
  memset(o, 0, sizeof *o);
  o->coverage = 0.999, o->bucket_budget = 64, o->max_batch = 32, o->headroom = 0.10;
  o->slo_scale = JOBINIT_SLO_SCALE, o->utilisation = 0.5, o->validation_sample = 16;
}

/* Is the file a Hugging Face config (architectures, model_type or text_config at its
 * root) rather than a model file? */
static bool is_hf_config(const char *text) {
  json_t *root = json_loads(text, 0, NULL);
  const bool hf = root && (json_object_get(root, "architectures") || json_object_get(root, "model_type") ||
                           json_object_get(root, "text_config"));
  json_decref(root);
  return hf;
}

static int read_model(jobinit_ctx *c, enpu_err *err) {
  char *text = NULL;
  size_t len = 0;
  ENPU_FORWARD(enpu_read_file(c->o->model_path, &text, &len, err));
  config_model *m = calloc(1, sizeof *m);
  int rc = m ? 0 : enpu_errorf(err, ENPU_ERR_NOMEM, "out of memory (model)");
  c->r->imported = rc == 0 && is_hf_config(text);
  if (rc == 0 && !c->r->imported && (c->o->dtype_bytes || c->o->nignore))
    rc = enpu_errorf(err, ENPU_ERR_INVALID,
                     "%s: --dtype-bytes and --ignore are the importer's options, for a Hugging Face config.json; "
                     "this is a model file (its dtype_bytes is in it)",
                     c->o->model_path);
  if (rc == 0 && c->r->imported) {
    char *notes = NULL;
    const config_hf_options ho = {
        .dtype_bytes = c->o->dtype_bytes, .ignore = c->o->ignore, .nignore = c->o->nignore, .model_out = m};
    rc = config_model_import_hf(c->o->model_path, &ho, &c->model_json, &notes, err);
    free(notes);
  } else if (rc == 0) {
    config_model *loaded = NULL;
    rc = config_model_load(c->o->model_path, &loaded, err);
    if (rc == 0) *m = *loaded, config_model_free(loaded), c->model_json = text, text = NULL;
  }
  if (rc == 0)
    snprintf(c->model_name, sizeof c->model_name, "%s", m->name), c->r->context_limit = m->context_limit,
                                                                  c->moe = m->moe;
  free(text);
  free(m);
  return rc;
}

static int cmp_i32(const void *a, const void *b) {
  const int32_t x = *(const int32_t *)a, y = *(const int32_t *)b;
  return (x > y) - (x < y);
}

static int read_trace(jobinit_ctx *c, enpu_err *err) {
  ENPU_FORWARD(replay_trace_load(c->o->trace_path, false, &c->trace, err));
  const size_t n = c->trace->count;
  c->ctx = malloc(n * sizeof *c->ctx), c->total = malloc(n * sizeof *c->total);
  ENPU_RETURN_IF(!c->ctx || !c->total, err, ENPU_ERR_NOMEM, "out of memory (trace of %zu requests)", n);
  size_t peak = 0;
  for (size_t i = 0, first = 0; i < n; i++) {
    const replay_request *q = &c->trace->requests[i];
    c->ctx[i] = q->context_tokens, c->total[i] = q->context_tokens + q->generated_tokens;
    while (q->arrival_ns - c->trace->requests[first].arrival_ns >= JOBINIT_PEAK_WINDOW_NS) first++;
    if (i + 1 - first > peak) peak = i + 1 - first;
  }
  qsort(c->ctx, n, sizeof *c->ctx, cmp_i32);
  qsort(c->total, n, sizeof *c->total, cmp_i32);
  c->r->requests = n;
  c->r->peak_rate_per_s = (double)peak / (JOBINIT_PEAK_WINDOW_NS / 1e9);
  return 0;
}

/* A length rounded up to the step, within the model's context limit. */
static int seq_top(jobinit_ctx *c, int32_t len) {
  int top = (int)((len + JOBINIT_SEQ_STEP - 1) / JOBINIT_SEQ_STEP) * JOBINIT_SEQ_STEP;
  const int limit = c->r->context_limit / JOBINIT_SEQ_STEP * JOBINIT_SEQ_STEP;
  if (limit > 0 && top > limit) top = limit, c->r->capped = true;
  return top;
}

static size_t outside_of(const replay_trace *t, const int top[CONFIG_NPHASE]) {
  size_t out = 0;
  for (size_t i = 0; i < t->count; i++) {
    const replay_request *q = &t->requests[i];
    out += q->context_tokens > top[CONFIG_PREFILL] || q->context_tokens + q->generated_tokens > top[CONFIG_DECODE];
  }
  return out;
}

/* Both phases' largest lengths: the same percentile q of each, from the coverage asked
 * for up towards 100 until the requests inside both reach it. */
static void choose_tops(jobinit_ctx *c, int top[CONFIG_NPHASE]) {
  const size_t n = c->r->requests;
  double q = 100 * c->o->coverage;
  for (;;) {
    c->r->capped = false;
    top[CONFIG_PREFILL] = seq_top(c, jobinit_percentile(c->ctx, n, q));
    top[CONFIG_DECODE] = seq_top(c, jobinit_percentile(c->total, n, q));
    c->r->outside = outside_of(c->trace, top);
    c->r->coverage = 1 - (double)c->r->outside / (double)n;
    if ((double)c->r->outside <= (1 - c->o->coverage) * (double)n + 1e-9 || q >= 100) return; /* in counts: exact */
    q = 100 - q < 1e-3 ? 100 : q + (100 - q) / 2;
  }
}

static int make_grid(jobinit_ctx *c, enpu_err *err) {
  jobinit_result *r = c->r;
  r->nbatch = 0;
  for (int b = 1; b <= c->o->max_batch && r->nbatch < JOBINIT_MAX_AXIS; b *= 2) r->batch[r->nbatch++] = b;
  const int k = c->o->bucket_budget / r->nbatch;
  ENPU_RETURN_IF(k < 1, err, ENPU_ERR_INVALID,
                 "bucket budget %d: expected at least one seq length per phase, i.e. at least the %d batch sizes "
                 "up to max batch %d",
                 c->o->bucket_budget, r->nbatch, c->o->max_batch);
  int top[CONFIG_NPHASE];
  choose_tops(c, top);
  for (int ph = 0; ph < CONFIG_NPHASE; ph++) {
    const int32_t *len = ph == CONFIG_PREFILL ? c->ctx : c->total;
    ENPU_FORWARD(jobinit_seq_axis(len, r->requests, top[ph], JOBINIT_SEQ_STEP,
                                  k < JOBINIT_MAX_AXIS ? k : JOBINIT_MAX_AXIS, r->seq[ph], &r->nseq[ph], err));
    r->padding_waste[ph] = jobinit_padding_waste(len, r->requests, r->seq[ph], r->nseq[ph]);
  }
  return 0;
}

/* Class bounds at the trace's percentiles (strictly increasing: a repeated bound moves
 * one token up); targets left for slo_targets. */
static void slo_bounds(jobinit_ctx *c) {
  jobinit_result *r = c->r;
  static const double dflt[] = {33, 66, 100};
  const double *p = c->o->npercentiles ? c->o->percentiles : dflt;
  r->nslo = c->o->npercentiles ? c->o->npercentiles : 3;
  for (int k = 0; k < r->nslo; k++) {
    config_slo_class *s = &r->slo[k];
    snprintf(s->name, sizeof s->name, "P%g", p[k]);
    r->percentile[k] = p[k];
    s->prefill_max_tokens = jobinit_percentile(c->ctx, r->requests, p[k]);
    s->decode_max_tokens = jobinit_percentile(c->total, r->requests, p[k]);
    if (k && s->prefill_max_tokens <= r->slo[k - 1].prefill_max_tokens)
      s->prefill_max_tokens = r->slo[k - 1].prefill_max_tokens + 1;
    if (k && s->decode_max_tokens <= r->slo[k - 1].decode_max_tokens)
      s->decode_max_tokens = r->slo[k - 1].decode_max_tokens + 1;
    s->ttft_ms = s->tpot_ms = 1; /* the draft's; slo_targets sets them */
  }
}

/* Paper §4.1: 5x the single-request TTFT/TPOT on the node (NoDVFS), whole ms up. */
static int slo_targets(jobinit_ctx *c, enpu_err *err) {
  jobinit_result *r = c->r;
  for (int k = 0; k < r->nslo; k++) {
    config_slo_class *s = &r->slo[k];
    ENPU_FORWARD(jobinit_nodvfs_ms(c->job, CONFIG_PREFILL, 1, s->prefill_max_tokens, &r->nodvfs_ttft_ms[k], err));
    ENPU_FORWARD(jobinit_nodvfs_ms(c->job, CONFIG_DECODE, 1, s->decode_max_tokens, &r->nodvfs_tpot_ms[k], err));
    r->ttft_given[k] = k < c->o->nttft, r->tpot_given[k] = k < c->o->ntpot;
    s->ttft_ms = r->ttft_given[k] ? c->o->ttft_ms[k] : ceil(c->o->slo_scale * r->nodvfs_ttft_ms[k]);
    s->tpot_ms = r->tpot_given[k] ? c->o->tpot_ms[k] : ceil(c->o->slo_scale * r->nodvfs_tpot_ms[k]);
  }
  return 0;
}

/* The NoDVFS time of the bucket a length pads to (the largest beyond the grid). */
static double at_bucket(const jobinit_ctx *c, config_phase ph, int32_t len) {
  int i = 0;
  while (i + 1 < c->r->nseq[ph] && c->r->seq[ph][i] < len) i++;
  return c->bucket_ms[ph][i];
}

static int size_nodes(jobinit_ctx *c, enpu_err *err) {
  jobinit_result *r = c->r;
  const int b = r->batch[r->nbatch - 1];
  for (int ph = 0; ph < CONFIG_NPHASE; ph++)
    for (int i = 0; i < r->nseq[ph]; i++)
      ENPU_FORWARD(jobinit_nodvfs_ms(c->job, (config_phase)ph, ph == CONFIG_PREFILL ? 1 : b, r->seq[ph][i],
                                     &c->bucket_ms[ph][i], err));
  double ttft = 0, decode = 0;
  for (size_t i = 0; i < c->trace->count; i++) {
    const replay_request *q = &c->trace->requests[i];
    ttft += at_bucket(c, CONFIG_PREFILL, q->context_tokens);
    decode += (q->generated_tokens - 1) * at_bucket(c, CONFIG_DECODE, q->context_tokens + q->generated_tokens);
  }
  r->mean_ttft_ms = ttft / (double)c->trace->count;
  r->mean_decode_s = decode / (double)c->trace->count / 1e3;
  const double u = c->o->utilisation, lambda = r->peak_rate_per_s;
  /* prefill: square-root staffing, the load plus beta sqrt(load), beta the cluster's own
   * (a request waits with the probability of the SLO misses safeguard 2 tolerates) */
  const double load = lambda * r->mean_ttft_ms / 1e3, beta = c->job->cluster.scheduler.predictive_beta;
  r->staffing_beta = beta;
  r->nodes[CONFIG_PREFILL] = (int)ceil(load + beta * sqrt(load));
  r->nodes[CONFIG_DECODE] = (int)ceil(lambda * r->mean_decode_s / (b * u));
  for (int ph = 0; ph < CONFIG_NPHASE; ph++) r->nodes[ph] = r->nodes[ph] < 1 ? 1 : r->nodes[ph];
  return 0;
}

static int write_files(jobinit_ctx *c, enpu_err *err) {
  char *job = NULL, *cluster = NULL;
  int rc = jobinit_write_if_changed(c->r->model_path, c->model_json, err);
  if (!rc) rc = jobinit_job_text(c, "cluster.json", &job, err);
  if (!rc) rc = jobinit_cluster_text(c, &cluster, err);
  if (!rc) rc = jobinit_write_if_changed(c->r->cluster_path, cluster, err);
  if (!rc) rc = jobinit_write_if_changed(c->r->job_path, job, err);
  free(job);
  free(cluster);
  return rc;
}

/* The draft (placeholder SLO targets and nodes, one chip) beside the final files under
 * names of its own, loaded and removed: the final files change only when their bytes do,
 * so the store a farm made from them stays up to date. */
static int load_draft(jobinit_ctx *c, enpu_err *err) {
  char job_path[CONFIG_PATH_LEN + 16], cluster_path[CONFIG_PATH_LEN + 16];
  snprintf(job_path, sizeof job_path, "%s/job.draft.json", c->o->out_dir);
  snprintf(cluster_path, sizeof cluster_path, "%s/cluster.draft.json", c->o->out_dir);
  char *job = NULL, *cluster = NULL;
  int rc = jobinit_write_if_changed(c->r->model_path, c->model_json, err);
  if (!rc) rc = jobinit_job_text(c, "cluster.draft.json", &job, err);
  if (!rc) rc = jobinit_cluster_text(c, &cluster, err);
  if (!rc) rc = enpu_file_write(cluster_path, cluster, strlen(cluster), 0, err);
  if (!rc) rc = enpu_file_write(job_path, job, strlen(job), 0, err);
  if (!rc) rc = config_job_load(job_path, &c->job, err);
  remove(job_path), remove(cluster_path);
  free(job);
  free(cluster);
  return rc;
}

static int set_paths(jobinit_ctx *c, enpu_err *err) {
  jobinit_result *r = c->r;
  const char *d = c->o->out_dir;
  snprintf(r->name, sizeof r->name, "%s", c->o->name ? c->o->name : c->model_name);
  ENPU_FORWARD(enpu_mkdir_p(d, err));
  ENPU_FORWARD(jobinit_relative(d, c->o->chip_path, c->chip_rel, sizeof c->chip_rel, err));
  ENPU_FORWARD(jobinit_relative(d, c->o->trace_path, c->trace_rel, sizeof c->trace_rel, err));
  const int n = snprintf(r->job_path, sizeof r->job_path, "%s/job.json", d) +
                snprintf(r->cluster_path, sizeof r->cluster_path, "%s/cluster.json", d) +
                snprintf(r->model_path, sizeof r->model_path, "%s/model.json", d) +
                snprintf(r->summary_path, sizeof r->summary_path, "%s/init.md", d);
  ENPU_RETURN_IF(strlen(d) + 16 >= CONFIG_PATH_LEN || n <= 0, err, ENPU_ERR_RANGE, "path too long: %s", d);
  return 0;
}

static int write_summary_file(const jobinit_ctx *c, enpu_err *err) {
  char *buf = NULL;
  size_t len = 0;
  FILE *f = open_memstream(&buf, &len);
  ENPU_RETURN_IF(!f, err, ENPU_ERR_NOMEM, "out of memory (summary)");
  jobinit_write_summary(c->o, c->r, f);
  fclose(f);
  const int rc = jobinit_write_if_changed(c->r->summary_path, buf, err);
  free(buf);
  return rc;
}

/* Between two steps: did the caller ask to stop? */
/* The grid, its SLO bounds and a one-chip start: what load_draft measures. */
static int step_grid(jobinit_ctx *c, enpu_err *err) {
  ENPU_FORWARD(set_paths(c, err));
  ENPU_FORWARD(make_grid(c, err));
  slo_bounds(c);
  c->r->parallel = (config_parallel){1, 1, 1, 1}, c->r->chips = 1, c->r->nodes[0] = c->r->nodes[1] = 1;
  return 0;
}

/* The files, then the job loaded back (what was written loads) and the summary. */
static int step_write(jobinit_ctx *c, enpu_err *err) {
  ENPU_FORWARD(write_files(c, err));
  config_job_free(c->job), c->job = NULL;
  ENPU_FORWARD(config_job_load(c->r->job_path, &c->job, err));
  return write_summary_file(c, err);
}

/* Job init's steps in order; a stop asked for (c->o->stop) is taken between two. */
static int run_steps(jobinit_ctx *c, enpu_err *err) {
  static int (*const steps[])(jobinit_ctx *, enpu_err *) = {
      read_model, read_trace, step_grid, load_draft, jobinit_choose_parallel, slo_targets, size_nodes, step_write};
  for (size_t i = 0; i < sizeof steps / sizeof *steps; i++) {
    ENPU_RETURN_IF(i > 0 && enpu_stop_asked(&c->o->stop), err, ENPU_ERR_STOPPED,
                   "job init: stopped (a stop signal)");
    ENPU_FORWARD(steps[i](c, err));
  }
  return 0;
}

int jobinit_run(const jobinit_options *o, jobinit_result *r, enpu_err *err) {
  memset(r, 0, sizeof *r);
  ENPU_RETURN_IF(!(o->coverage > 0 && o->coverage <= 1) || o->max_batch < 1 || !(o->utilisation > 0) ||
                     !(o->headroom >= 0 && o->headroom < 1) || !(o->slo_scale > 0),
                 err, ENPU_ERR_INVALID, "job init: an option out of its range");
  jobinit_ctx c = {.o = o, .r = r};
  const int rc = run_steps(&c, err);
  config_job_free(c.job);
  replay_trace_free(c.trace);
  free(c.ctx), free(c.total), free(c.model_json);
  return rc;
}
