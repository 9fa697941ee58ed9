/* jobinit_write.c — the files job init writes, as text laid out like the shipped jobs and
 * clusters (one bucket axis per line, one SLO class per line) so that they read and edit
 * by hand, and its summary (init.md). A file is rewritten only when its bytes change. */
#define _XOPEN_SOURCE 700 /* realpath */
#include <limits.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "jobinit_internal.h"

typedef struct {
  char *s;
  size_t len, cap;
  bool failed;
} text;

static void put(text *t, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void put(text *t, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  const int n = vsnprintf(NULL, 0, fmt, ap);
  va_end(ap);
  if (t->failed || n < 0 || enpu_grow((void **)&t->s, &t->cap, t->len + (size_t)n + 1, 1) < 0) {
    t->failed = true;
    return;
  }
  va_start(ap, fmt);
  vsnprintf(t->s + t->len, (size_t)n + 1, fmt, ap);
  va_end(ap);
  t->len += (size_t)n;
}

static void put_list(text *t, const int *v, int n) {
  put(t, "[");
  for (int i = 0; i < n; i++) put(t, "%s%d", i ? ", " : "", v[i]);
  put(t, "]");
}

static int text_finish(text *t, char **out, enpu_err *err) {
  if (t->failed) {
    free(t->s);
    return enpu_errorf(err, ENPU_ERR_NOMEM, "out of memory (job init's text)");
  }
  *out = t->s;
  return 0;
}

int jobinit_job_text(const jobinit_ctx *c, const char *cluster, char **out, enpu_err *err) {
  const jobinit_result *r = c->r;
  text t = {0};
  put(&t, "{\n  \"name\": \"%s\",\n  \"model\": \"model.json\",\n  \"chip\": \"%s\",\n", r->name, c->chip_rel);
  put(&t, "  \"cluster\": \"%s\",\n  \"store\": \"plans.h5\",\n  \"phases\": {\n", cluster);
  for (int ph = 0; ph < CONFIG_NPHASE; ph++) {
    put(&t, "    \"%s\": %s{ \"batch\": ", config_phase_name((config_phase)ph), ph ? " " : "");
    put_list(&t, r->batch, r->nbatch);
    put(&t, ",\n%*s\"seq\": ", 17, "");
    put_list(&t, r->seq[ph], r->nseq[ph]);
    put(&t, " }%s\n", ph + 1 < CONFIG_NPHASE ? "," : "");
  }
  put(&t, "  },\n  \"slacks\": [0, 0.02, 0.05, 0.10, 0.20, 0.30],\n"); /* the paper's (§4.1) */
  put(&t, "  \"policies\": [\"%s\", \"%s\", \"%s\", \"%s\"],\n", config_policy_name(CONFIG_POLICY_NODVFS),
      config_policy_name(CONFIG_POLICY_DVFS_C_WALK), config_policy_name(CONFIG_POLICY_ENPU_C),
      config_policy_name(CONFIG_POLICY_ENPU_ALL));
  if (c->moe) put(&t, "  \"moe\": { \"capacity_factor\": \"worst\", \"experts\": \"all-resident\" },\n");
  put(&t, "  \"capacity\": \"enforce\",\n");
  put(&t, "  \"validation\": { \"trace\": \"%s\", \"sample\": %d, \"seed\": 1 }\n}\n", c->trace_rel,
      c->o->validation_sample);
  return text_finish(&t, out, err);
}

static void put_node(text *t, const char *phase, int nodes, const jobinit_result *r, bool last) {
  put(t,
      "  \"%s\": %s{ \"nodes\": %d, \"chips\": %d, \"parallel\": { \"dp\": 1, \"tp\": %d, \"pp\": 1, \"ep\": %d } }%s\n",
      phase, phase[0] == 'd' ? " " : "", nodes, r->chips, r->parallel.tp, r->parallel.ep, last ? "" : ",");
}

/* A prefill pool of at most beta^2 nodes: the predictive safeguards' cap 1 - beta/sqrt(nodes)
 * (square-root staffing, replay_switch.c) is at or below 0 there, so they would hold every
 * prefill batch at its fastest plan (prefill saves nothing, or loses in the regulators).
 * Such a cluster gets the switching safeguards: the paper's safeguards 1 and 2 (§3.4), and a
 * running batch sped up when the queue needs it. */
static bool small_prefill_pool(const jobinit_result *r) {
  return replay_predictive_u_max(r->staffing_beta, r->nodes[CONFIG_PREFILL]) <= 0;
}

int jobinit_cluster_text(const jobinit_ctx *c, char **out, enpu_err *err) {
  const jobinit_result *r = c->r;
  text t = {0};
  put(&t, "{\n  \"name\": \"%s\",\n  \"model\": \"%s\",\n", r->name, c->model_name);
  put_node(&t, "prefill", r->nodes[CONFIG_PREFILL], r, false);
  put_node(&t, "decode", r->nodes[CONFIG_DECODE], r, false);
  put(&t, "  \"slo\": [\n");
  for (int k = 0; k < r->nslo; k++) {
    const config_slo_class *s = &r->slo[k];
    put(&t,
        "    { \"name\": \"%s\", \"prefill_max_tokens\": %d, \"decode_max_tokens\": %d, \"ttft_ms\": %.17g, "
        "\"tpot_ms\": %.17g }%s\n",
        s->name, s->prefill_max_tokens, s->decode_max_tokens, s->ttft_ms, s->tpot_ms, k + 1 < r->nslo ? "," : "");
  }
  const int top = r->seq[CONFIG_PREFILL][r->nseq[CONFIG_PREFILL] - 1];
  put(&t, "  ],\n  \"batching\": { \"max_batch\": %d, \"max_batch_tokens\": %d },\n", r->batch[r->nbatch - 1],
      top > 16384 ? top : 16384);
  if (small_prefill_pool(r))
    put(&t, "  \"scheduler\": { \"safeguards\": \"%s\" },\n", config_safeguards_name(CONFIG_SAFEGUARDS_SWITCHING));
  put(&t, "  \"idle\": { \"mode\": \"lowest-state\" }\n}\n");
  return text_finish(&t, out, err);
}

int jobinit_write_if_changed(const char *path, const char *body, enpu_err *err) {
  char *old = NULL;
  size_t len = 0;
  enpu_err ignored = {0};
  if (enpu_read_file(path, &old, &len, &ignored) == 0 && len == strlen(body) && memcmp(old, body, len) == 0) {
    free(old);
    return 0;
  }
  free(old);
  return enpu_file_write(path, body, strlen(body), 0, err);
}

int jobinit_relative(const char *from_dir, const char *to, char *out, size_t cap, enpu_err *err) {
  char a[PATH_MAX], b[PATH_MAX];
  ENPU_RETURN_IF(!realpath(from_dir, a), err, ENPU_ERR_IO, "%s: cannot resolve the directory", from_dir);
  ENPU_RETURN_IF(!realpath(to, b), err, ENPU_ERR_IO, "%s: no such file", to);
  size_t common = 0; /* length of the shared leading directories, up to a '/' */
  for (size_t i = 0; a[i] && a[i] == b[i]; i++)
    if (a[i] == '/') common = i;
  if (strncmp(a, b, strlen(a)) == 0 && b[strlen(a)] == '/') common = strlen(a); /* under from_dir */
  size_t n = 0;
  out[0] = 0;
  for (const char *p = a + common; *p; p++)
    if (*p == '/') n += (size_t)snprintf(out + n, n < cap ? cap - n : 0, "../");
  n += (size_t)snprintf(out + n, n < cap ? cap - n : 0, "%s", b + common + 1);
  ENPU_RETURN_IF(n >= cap, err, ENPU_ERR_RANGE, "path too long: %s relative to %s", to, from_dir);
  return 0;
}

static void summary_grid(const jobinit_options *o, const jobinit_result *r, FILE *f) {
  fprintf(f, "## Bucket grid\n\n");
  fprintf(f, "- batch (both phases): ");
  for (int i = 0; i < r->nbatch; i++) fprintf(f, "%s%d", i ? ", " : "", r->batch[i]);
  fprintf(f, "\n");
  for (int ph = 0; ph < CONFIG_NPHASE; ph++) {
    fprintf(f, "- %s seq (%s lengths): ", config_phase_name((config_phase)ph), ph ? "total" : "context");
    for (int i = 0; i < r->nseq[ph]; i++) fprintf(f, "%s%d", i ? ", " : "", r->seq[ph][i]);
    fprintf(f, "; padding waste %.1f %% of the bucket tokens\n", 100 * r->padding_waste[ph]);
  }
  fprintf(f,
          "- bucket budget %d per phase (each bucket is compiled once per policy: the farm's cost); %d x %d "
          "prefill and %d x %d decode buckets\n",
          o->bucket_budget, r->nbatch, r->nseq[0], r->nbatch, r->nseq[1]);
  fprintf(f,
          "- coverage: %.3f %% of the %zu requests fit both phases' largest buckets (asked: at least %.3f %%); "
          "%zu beyond them%s\n\n",
          100 * r->coverage, r->requests, 100 * o->coverage, r->outside,
          r->capped ? " (the grid stops at the model's context limit)" : "");
}

/* Which safeguards the cluster file names, and why (small_prefill_pool). */
static void safeguards_line(const jobinit_result *r, FILE *f) {
  if (small_prefill_pool(r))
    fprintf(f,
            "- safeguards: switching (the cluster's scheduler): on %d prefill node(s), at most beta^2 = %.1f, the "
            "predictive cap 1 - beta/sqrt(nodes) = %.2f would run every prefill batch at its fastest plan\n",
            r->nodes[CONFIG_PREFILL], r->staffing_beta * r->staffing_beta,
            replay_predictive_u_max(r->staffing_beta, r->nodes[CONFIG_PREFILL]));
  else fprintf(f, "- safeguards: the cluster default (predictive) on %d prefill nodes\n", r->nodes[CONFIG_PREFILL]);
}

static void summary_memory(const jobinit_options *o, const jobinit_result *r, FILE *f) {
  fprintf(f, "## Parallelism and memory\n\n");
  fprintf(f, "- node: %d chip(s), tp %d, ep %d (%s)\n", r->chips, r->parallel.tp, r->parallel.ep,
          r->parallel_given ? "given" : "the fewest chips whose largest buckets fit with the headroom asked");
  for (int ph = 0; ph < CONFIG_NPHASE; ph++)
    fprintf(f,
            "- %s, largest bucket per chip: weights %.2f GB + KV %.2f GB + activations %.2f GB of %.2f GB HBM: "
            "headroom %.1f %% (asked: at least %.0f %%)\n",
            config_phase_name((config_phase)ph), r->weights_bytes / 1e9, r->kv_bytes[ph] / 1e9,
            r->activation_bytes[ph] / 1e9, r->hbm_bytes / 1e9, 100 * r->headroom[ph], 100 * o->headroom);
  fprintf(
      f,
      "- nodes for the busiest minute's %.2f requests/s: %d prefill (square-root staffing, beta %.2f, of a mean " ENPU_POLICY_DISPLAY_NODVFS
      " TTFT of %.1f ms), %d decode (%.0f %% utilisation of batch %d, %.2f s of decode per request)\n",
      r->peak_rate_per_s, r->nodes[0], r->staffing_beta, r->mean_ttft_ms, r->nodes[1], 100 * o->utilisation,
      r->batch[r->nbatch - 1], r->mean_decode_s);
  safeguards_line(r, f);
  fprintf(f, "\n");
}

void jobinit_write_sizing(const jobinit_result *r, FILE *f) {
  if (!r->sized) return;
  fprintf(f, "# Nodes of %s measured after the farm (enpu plan)\n\n", r->name);
  fprintf(f,
          "- nodes measured after the farm (a replay of the trace on the store's " ENPU_POLICY_DISPLAY_NODVFS
          " plans, target %.1f %% of "
          "the requests within their TTFT and their TPOT): prefill %d -> %d (TTFT met by %.2f -> %.2f %%), "
          "decode %d -> %d (TPOT met by %.2f -> %.2f %%)%s\n",
          100 * r->size_target, r->rule_nodes[0], r->nodes[0], 100 * r->attainment_rule[0],
          100 * r->attainment_sized[0], r->rule_nodes[1], r->nodes[1], 100 * r->attainment_rule[1],
          100 * r->attainment_sized[1],
          r->size_capped ? "; stopped at the cap of 16 x the rule's count, short of the target" : "");
  for (int ph = 0; ph < CONFIG_NPHASE; ph++)
    if (r->sized && r->size_flat[ph] && r->attainment_sized[ph] < r->size_target)
      fprintf(f,
              "- %s: more nodes stopped helping short of the target: its misses are not queueing but the "
              "grid's padding (a coarse seq axis: raise --bucket-budget) or %s targets below the padded "
              "buckets' times (--slo-scale)\n",
              config_phase_name((config_phase)ph), ph == CONFIG_PREFILL ? "TTFT" : "TPOT");
  safeguards_line(r, f);
  fprintf(f, "\nThe measured cluster: %s (job init's own: %s).\n", r->sized_cluster_path, r->cluster_path);
}

void jobinit_write_summary(const jobinit_options *o, const jobinit_result *r, FILE *f) {
  fprintf(f, "# Job %s (enpu job init)\n\n", r->name);
  fprintf(f, "Model %s%s, chip %s, trace %s (%zu requests). Files: %s, %s, %s.\n\n", o->model_path,
          r->imported ? " (a Hugging Face config, imported)" : "", o->chip_path, o->trace_path, r->requests,
          r->job_path, r->cluster_path, r->model_path);
  summary_grid(o, r, f);
  summary_memory(o, r, f);
  fprintf(f, "## SLO classes\n\n");
  fprintf(f,
          "Rule (paper §4.1, Table 2): classes at the trace's percentiles of the input (prefill) and total "
          "(decode) lengths; each target %g x the model's " ENPU_POLICY_DISPLAY_NODVFS
          " single-request TTFT/TPOT on the node above "
          "(--slo-scale, --ttft-ms, --tpot-ms override it).\n\n",
          o->slo_scale);
  fprintf(f, "| class | prefill tokens | decode tokens | " ENPU_POLICY_DISPLAY_NODVFS
             " TTFT ms | TTFT ms | " ENPU_POLICY_DISPLAY_NODVFS " TPOT ms | TPOT ms |\n");
  fprintf(f, "|---|---:|---:|---:|---:|---:|---:|\n");
  for (int k = 0; k < r->nslo; k++) {
    const config_slo_class *s = &r->slo[k];
    fprintf(f, "| %s | %d | %d | %.2f | %g%s | %.3f | %g%s |\n", s->name, s->prefill_max_tokens,
            s->decode_max_tokens, r->nodvfs_ttft_ms[k], s->ttft_ms, r->ttft_given[k] ? " (given)" : "",
            r->nodvfs_tpot_ms[k], s->tpot_ms, r->tpot_given[k] ? " (given)" : "");
  }
}
