/* jobinit_fit.c — the steps of job init that need the model on the chip: the chip count
 * whose largest buckets fit the HBM with the headroom asked for (by the grid module's
 * capacity rule, the one the farm enforces), and NoDVFS single-request latencies (the
 * cost model on the graph of one bucket, every component at peak, as `enpu graph --time`). */
#include <string.h>

#include "cost.h"
#include "graph.h"
#include "grid.h"
#include "jobinit_internal.h"
#include "power.h"

#define JOBINIT_MAX_CHIPS 64

static void set_parallel(config_job *job, config_parallel p) {
  for (int ph = 0; ph < CONFIG_NPHASE; ph++) {
    job->phase[ph].parallel = p, job->phase[ph].chips = p.tp * p.ep;
    job->cluster.node[ph].parallel = p, job->cluster.node[ph].chips = p.tp * p.ep;
  }
}

/* What config_job requires of a node's degrees (config_job.c, check_parallel). */
static bool degrees_valid(const config_model *m, config_parallel p) {
  if (m->heads % p.tp || m->ffn_intermediate % p.tp) return false;
  if (!m->moe) return p.ep == 1;
  return m->expert_intermediate % p.tp == 0 && m->routed_experts % p.ep == 0;
}

/* The degrees of n chips: tp = n for a dense model; for an MoE one ep the largest power of
 * two up to n dividing the routed experts, tp the rest. */
static config_parallel degrees_of(const config_model *m, int n) {
  config_parallel p = {.dp = 1, .tp = n, .pp = 1, .ep = 1};
  if (!m->moe) return p;
  while (p.ep * 2 <= n && m->routed_experts % (p.ep * 2) == 0) p.ep *= 2;
  p.tp = n / p.ep;
  return p;
}

/* The bucket whose memory bounds the phase: decode's largest; prefill's largest within
 * the batching's token limit (a larger one is never formed). */
static void largest_bucket(const jobinit_result *r, config_phase ph, int max_batch_tokens, int *batch, int *seq) {
  const int *s = r->seq[ph], ns = r->nseq[ph];
  *batch = r->batch[r->nbatch - 1], *seq = s[ns - 1];
  if (ph != CONFIG_PREFILL) return;
  double best = 0;
  for (int b = 0; b < r->nbatch; b++)
    for (int k = 0; k < ns; k++) {
      const double tokens = (double)r->batch[b] * s[k];
      if ((tokens <= max_batch_tokens || b == 0) && tokens > best) best = tokens, *batch = r->batch[b], *seq = s[k];
    }
}

/* Memory of both phases' bounding buckets under the job's current degrees into r;
 * @return 1 when both leave `headroom` free, 0 when not, or an error. */
static int measure(jobinit_ctx *c, enpu_err *err) {
  jobinit_result *r = c->r;
  int fits = 1;
  for (int ph = 0; ph < CONFIG_NPHASE; ph++) {
    int b = 0, s = 0;
    largest_bucket(r, (config_phase)ph, c->job->cluster.max_batch_tokens, &b, &s);
    grid_memory mem;
    ENPU_FORWARD(grid_memory_per_chip(c->job, (config_phase)ph, b, s, &mem, err));
    r->weights_bytes = mem.weights_bytes, r->kv_bytes[ph] = mem.kv_bytes;
    r->activation_bytes[ph] = mem.activation_bytes, r->hbm_bytes = mem.hbm_bytes;
    r->headroom[ph] = 1 - grid_memory_used_bytes(&mem) / mem.hbm_bytes;
    if (r->headroom[ph] < c->o->headroom) fits = 0;
  }
  return fits;
}

int jobinit_choose_parallel(jobinit_ctx *c, enpu_err *err) {
  const config_model *m = &c->job->model;
  jobinit_result *r = c->r;
  if (c->o->tp > 0 || c->o->ep > 0) {
    const config_parallel p = {
        .dp = 1, .tp = c->o->tp > 0 ? c->o->tp : 1, .pp = 1, .ep = c->o->ep > 0 ? c->o->ep : 1};
    ENPU_RETURN_IF(!degrees_valid(m, p), err, ENPU_ERR_INFEASIBLE,
                   "tp %d, ep %d: expected tp dividing the attention heads (%d) and FFN widths (%d%s) and ep "
                   "dividing the routed experts (%d; 1 for a dense model)",
                   p.tp, p.ep, m->heads, m->ffn_intermediate, m->moe ? " and the experts'" : "", m->routed_experts);
    set_parallel(c->job, p);
    r->parallel = p, r->chips = p.tp * p.ep, r->parallel_given = true;
    const int rc = measure(c, err);
    return rc < 0 ? rc : 0; /* the caller's choice stands; the summary states its headroom */
  }
  for (int n = 1; n <= JOBINIT_MAX_CHIPS; n *= 2) {
    const config_parallel p = degrees_of(m, n);
    if (!degrees_valid(m, p)) continue;
    set_parallel(c->job, p);
    const int rc = measure(c, err);
    if (rc < 0) return rc;
    r->parallel = p, r->chips = n;
    if (rc == 1) return 0;
  }
  return enpu_errorf(err, ENPU_ERR_INFEASIBLE,
                     "no node of up to %d chips holds the largest bucket (batch %d, seq %d) with %.0f %% of HBM "
                     "free; lower --max-batch or --coverage, or give --tp/--ep",
                     JOBINIT_MAX_CHIPS, r->batch[r->nbatch - 1], r->seq[CONFIG_DECODE][r->nseq[1] - 1],
                     100 * c->o->headroom);
}

int jobinit_nodvfs_ms(const config_job *job, config_phase phase, int batch, int seq, double *ms, enpu_err *err) {
  graph *g = NULL;
  power_model *pm = NULL;
  cost_ctx *ctx = NULL;
  cost_pipeline pl;
  cost_plan plan;
  for (int k = 0; k < CONFIG_NCOMP; k++) plan.state[k] = job->chip.freq_states;
  double t_ns = 0;
  int rc = graph_build(job, phase, batch, seq, &g, err);
  if (!rc) rc = power_model_create(&job->chip, POWER_HBM_CTRL_ONLY, POWER_REG_FIXED, &pm, err);
  if (!rc) rc = cost_ctx_create(&job->chip, &ctx, err);
  if (!rc) cost_pipeline_nodvfs(&pl, pm);
  for (int i = 0; !rc && i < graph_op_count(g); i++) {
    cost_result res;
    const graph_op *op = graph_op_at(g, i);
    rc = cost_eval(ctx, op, &plan, &pl, &res, err);
    t_ns += (double)op->multiplicity * res.time_ns;
  }
  cost_ctx_free(ctx);
  power_model_free(pm);
  graph_free(g);
  *ms = t_ns / 1e6;
  return rc;
}
