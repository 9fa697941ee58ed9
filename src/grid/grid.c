/* grid.c — bucket expansion (§3.4 rule), per-chip capacity check and padding lookup.
 *
 * Invariants: a grid owns one heap block per array (axes and buckets of each enabled
 * phase); axes are strictly increasing and positive, so padding is a lower-bound binary
 * search on each axis; the formulas are the ones written in grid.h. */
#include "grid.h"

#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

struct grid {
  grid_phase phase[CONFIG_NPHASE];
  int *batch[CONFIG_NPHASE]; /* owned copies behind the const views */
  int *seq[CONFIG_NPHASE];
  grid_bucket *buckets[CONFIG_NPHASE];
  grid_totals totals;
};

/* ---------------------------------------------------------------------------------
 * Axis expansion */

/* Next value of the §3.4 rule after v (v itself a rule value). int64 so that stepping
 * past INT_MAX near a huge max cannot overflow. */
static int64_t rule_next(grid_axis_kind kind, int64_t v) {
  if (kind == GRID_AXIS_BATCH) return v < 16 ? 2 * v : v + 16;
  /* seq: step 128 up to 1024; in (2^k, 2^(k+1)] the step is 2^k / 4, so each octave
   * above 1024 has 4 buckets. */
  if (v < 1024) return v + 128;
  int64_t octave_start = 1024;
  while (octave_start * 2 <= v) octave_start *= 2;
  return v + octave_start / 4;
}

static int expand_rule(grid_axis_kind kind, int max, int **values, int *count, enpu_err *err) {
  int *out = NULL;
  size_t cap = 0;
  int n = 0;
  int64_t v = kind == GRID_AXIS_BATCH ? 1 : 128;
  for (; v <= max; v = rule_next(kind, v)) {
    if (enpu_grow((void **)&out, &cap, (size_t)n + 1, sizeof *out) < 0) goto nomem;
    out[n++] = (int)v;
  }
  /* A max between rule values still gets a bucket, so lengths up to max are covered. */
  if (n == 0 || out[n - 1] != max) {
    if (enpu_grow((void **)&out, &cap, (size_t)n + 1, sizeof *out) < 0) goto nomem;
    out[n++] = max;
  }
  *values = out;
  *count = n;
  return 0;
nomem:
  free(out);
  return enpu_errorf(err, ENPU_ERR_NOMEM, "out of memory expanding a bucket axis");
}

int grid_axis_expand(const config_axis *axis, grid_axis_kind kind, int **values, int *count, enpu_err *err) {
  const char *what = kind == GRID_AXIS_BATCH ? "batch" : "seq";
  *values = NULL;
  *count = 0;
  if (axis->rule) {
    ENPU_RETURN_IF(axis->rule_max < 1, err, ENPU_ERR_INVALID,
                   "%s axis: rule max must be a positive integer, got %d", what, axis->rule_max);
    return expand_rule(kind, axis->rule_max, values, count, err);
  }
  ENPU_RETURN_IF(axis->count < 1 || !axis->values, err, ENPU_ERR_INVALID, "%s axis: the explicit list is empty",
                 what);
  for (int i = 0; i < axis->count; i++) {
    ENPU_RETURN_IF(axis->values[i] < 1, err, ENPU_ERR_INVALID,
                   "%s axis: value [%d] must be a positive integer, got %d", what, i, axis->values[i]);
    ENPU_RETURN_IF(i > 0 && axis->values[i] <= axis->values[i - 1], err, ENPU_ERR_INVALID,
                   "%s axis: values must be strictly increasing, got %d after %d", what, axis->values[i],
                   axis->values[i - 1]);
  }
  int *out = enpu_calloc((size_t)axis->count, sizeof *out);
  ENPU_RETURN_IF(!out, err, ENPU_ERR_NOMEM, "out of memory expanding the %s axis", what);
  for (int i = 0; i < axis->count; i++) out[i] = axis->values[i];
  *values = out;
  *count = axis->count;
  return 0;
}

/* ---------------------------------------------------------------------------------
 * Capacity */

static double max2(double a, double b) { return a > b ? a : b; }

static int check_degrees(const config_parallel *p, config_phase phase, enpu_err *err) {
  ENPU_RETURN_IF(p->dp < 1 || p->tp < 1 || p->pp < 1 || p->ep < 1, err, ENPU_ERR_INVALID,
                 "%s: parallel degrees must be >= 1, got dp %d tp %d pp %d ep %d", config_phase_name(phase), p->dp,
                 p->tp, p->pp, p->ep);
  return 0;
}

double grid_capacity_factor(const config_job *job) {
  const config_model *m = &job->model;
  if (!m->moe) return 0;
  return job->moe_capacity_factor > 0 ? job->moe_capacity_factor : (double)m->routed_experts / m->experts_per_token;
}

static int64_t ceil_div64(int64_t a, int64_t b) { return (a + b - 1) / b; }
static int64_t min64(int64_t a, int64_t b) { return a < b ? a : b; }
static int64_t max64(int64_t a, int64_t b) { return a > b ? a : b; }

int grid_moe_load_of(const config_job *job, config_phase phase, int batch, int seq, grid_moe_load *out,
                     enpu_err *err) {
  *out = (grid_moe_load){0};
  ENPU_RETURN_IF(batch < 1 || seq < 1, err, ENPU_ERR_INVALID, "batch and seq must be >= 1, got batch %d seq %d",
                 batch, seq);
  const config_model *m = &job->model;
  const int ep = job->phase[phase].parallel.ep;
  ENPU_RETURN_IF(ep < 1, err, ENPU_ERR_INVALID, "ep must be >= 1, got %d", ep);
  if (!m->moe) return 0;
  const int64_t T = (int64_t)batch * (phase == CONFIG_PREFILL ? seq : 1);
  const int64_t k = m->experts_per_token, E = m->routed_experts, e_loc = E / ep;
  const double c = grid_capacity_factor(job);
  const double hot_real = c * (double)T * k / E; /* <= T since c <= E/k */
  out->tokens = T;
  out->experts_local = e_loc;
  out->hot_tokens = min64(T, max64(1, (int64_t)ceil(hot_real - 1e-9)));
  out->cold_experts = e_loc - 1;
  const double cold_real = E > 1 ? ((double)T * k - hot_real) / (double)(E - 1) : 0;
  out->cold_tokens = out->cold_experts > 0 ? max64(1, (int64_t)ceil(cold_real - 1e-9)) : 0;
  const int64_t pairs = T * min64(k, e_loc);
  out->active_experts = min64(e_loc, pairs);
  out->active_tokens = min64(min64(T, ceil_div64(pairs, out->active_experts)),
                             max64(1, (int64_t)ceil(hot_real - 1e-9)));
  out->token_slots = job->moe_experts == CONFIG_EXPERTS_ACTIVE_ONLY
                         ? out->active_experts * out->active_tokens
                         : out->hot_tokens + out->cold_experts * out->cold_tokens;
  return 0;
}

/* Widest per-chip intermediate tensor of one layer, in bytes (see grid.h): t tokens
 * on this chip, `slots` token rows through its routed experts, r requests on it. */
static double largest_intermediate_bytes(const config_model *m, const config_parallel *p, double t, double slots,
                                         double r) {
  double tp = p->tp;
  double attn_width = m->attention == CONFIG_ATTN_MLA
                          ? (double)m->heads * (m->qk_nope_head_dim + m->qk_rope_head_dim + m->v_head_dim)
                          : ((double)m->heads + 2.0 * m->kv_heads) * m->head_dim;
  double elems = t * attn_width / tp;
  elems = max2(elems, 2.0 * t * m->ffn_intermediate / tp);
  if (m->moe) {
    elems = max2(elems, slots * (2.0 * m->hidden + 2.0 * m->expert_intermediate / tp));
    elems = max2(elems, 2.0 * t * m->shared_experts * m->expert_intermediate / tp);
  }
  double logits_bytes = r * m->vocab / tp * 4.0; /* fp32 */
  return max2(elems * m->dtype_bytes, logits_bytes);
}

/* Offload (grid.h): the streaming layers of one stage and what one of them can stream. */
static void plan_offload(const config_job *job, const config_parallel *p, grid_memory *mem) {
  const config_model *m = &job->model;
  const double over = grid_memory_used_bytes(mem) - mem->hbm_bytes;
  if (job->capacity != CONFIG_CAPACITY_OFFLOAD || !(over > 0)) return;
  const double d = m->dtype_bytes, h = m->hidden;
  const int dense = m->moe ? m->first_dense_layers : m->layers;
  int64_t layers;
  double per_layer; /* streamable bytes of one streaming layer on this chip */
  if (m->moe) {
    layers = ceil_div64(m->layers - dense, p->pp);
    per_layer = (double)m->routed_experts / p->ep * 3.0 * h * m->expert_intermediate / p->tp * d;
  } else {
    layers = ceil_div64(m->layers, p->pp);
    per_layer = (m->params_layer_attention + 3.0 * h * m->ffn_intermediate) / p->tp * d;
  }
  if (layers < 2) return;
  const double s = over / (double)(layers - 1);
  if (s > per_layer) return;
  mem->offload_layers = layers;
  mem->offload_layer_bytes = s;
  mem->offload_bytes = s * (double)layers;
}

int grid_memory_per_chip(const config_job *job, config_phase phase, int batch, int seq, grid_memory *out,
                         enpu_err *err) {
  ENPU_RETURN_IF((int)phase < 0 || phase >= CONFIG_NPHASE, err, ENPU_ERR_INVALID, "unknown phase %d", (int)phase);
  ENPU_RETURN_IF(batch < 1 || seq < 1, err, ENPU_ERR_INVALID,
                 "%s bucket: batch and seq must be >= 1, got batch %d seq %d", config_phase_name(phase), batch,
                 seq);
  const config_parallel *p = &job->phase[phase].parallel;
  ENPU_FORWARD(check_degrees(p, phase, err));
  const config_model *m = &job->model;
  ENPU_RETURN_IF(m->dtype_bytes < 1, err, ENPU_ERR_INVALID, "model %s: dtype_bytes must be >= 1, got %d", m->name,
                 m->dtype_bytes);

  *out = (grid_memory){.capacity = job->capacity, .hbm_bytes = job->chip.hbm_bytes};
  double d = m->dtype_bytes;
  double dense = m->params_total - m->params_routed;
  out->weights_bytes = dense * d / ((double)p->tp * p->pp) + m->params_routed * d / ((double)p->ep * p->tp * p->pp);

  int kv_shard = 1;
  if (m->attention == CONFIG_ATTN_GQA) {
    ENPU_RETURN_IF(m->kv_heads < 1, err, ENPU_ERR_INVALID, "model %s: GQA needs kv_heads >= 1, got %d", m->name,
                   m->kv_heads);
    kv_shard = p->tp < m->kv_heads ? p->tp : m->kv_heads;
  }
  double r = (double)(((int64_t)batch + p->ep - 1) / p->ep); /* requests on this chip */
  out->kv_bytes = r * config_model_kv_bytes(m, seq) / ((double)p->pp * kv_shard);

  grid_moe_load load;
  ENPU_FORWARD(grid_moe_load_of(job, phase, batch, seq, &load, err));
  double per_request = phase == CONFIG_PREFILL ? (double)seq : 1.0;
  double t = r * per_request;
  out->activation_bytes = t * m->hidden * d * GRID_ACT_HIDDEN_BUFFERS +
                          largest_intermediate_bytes(m, p, t, (double)load.token_slots, r);
  plan_offload(job, p, out);
  return 0;
}

double grid_memory_used_bytes(const grid_memory *mem) {
  return mem->weights_bytes + mem->kv_bytes + mem->activation_bytes;
}

grid_status grid_memory_status(const grid_memory *mem) {
  if (grid_memory_used_bytes(mem) <= mem->hbm_bytes || mem->capacity == CONFIG_CAPACITY_IGNORE)
    return GRID_FEASIBLE;
  return mem->offload_bytes > 0 ? GRID_FEASIBLE : GRID_INFEASIBLE_CAPACITY;
}

void grid_memory_note(const grid_memory *mem, char *buf, size_t cap) {
  const double used = grid_memory_used_bytes(mem);
  if (cap) buf[0] = '\0';
  if (used <= mem->hbm_bytes) return;
  const char *what = mem->capacity == CONFIG_CAPACITY_IGNORE ? "capacity ignored: needs"
                     : mem->offload_bytes > 0                ? "offload: needs"
                                                             : "needs";
  int n = snprintf(buf, cap,
                   "%s %.1f GB per chip (weights %.1f, KV %.1f, activations %.1f), "
                   "HBM holds %.1f GB",
                   what, used / 1e9, mem->weights_bytes / 1e9, mem->kv_bytes / 1e9, mem->activation_bytes / 1e9,
                   mem->hbm_bytes / 1e9);
  if (mem->offload_bytes > 0 && n > 0 && (size_t)n < cap)
    snprintf(buf + n, cap - (size_t)n, "; streams %.2f GB per pass from the host", mem->offload_bytes / 1e9);
}

int grid_bucket_fits(const config_job *job, config_phase phase, int batch, int seq, char *why, size_t cap,
                     enpu_err *err) {
  grid_memory mem;
  ENPU_FORWARD(grid_memory_per_chip(job, phase, batch, seq, &mem, err));
  if (grid_memory_status(&mem) == GRID_FEASIBLE) return 1;
  grid_memory_note(&mem, why, cap);
  return 0;
}

/* ---------------------------------------------------------------------------------
 * Grid */

static int build_phase(grid *g, const config_job *job, config_phase ph, enpu_err *err) {
  const config_phase_grid *pg = &job->phase[ph];
  grid_phase *view = &g->phase[ph];
  view->phase = ph;
  view->parallel = pg->parallel;

  int rc = grid_axis_expand(&pg->batch, GRID_AXIS_BATCH, &g->batch[ph], &view->batch_count, err);
  if (rc == 0) rc = grid_axis_expand(&pg->seq, GRID_AXIS_SEQ, &g->seq[ph], &view->seq_count, err);
  if (rc < 0) {
    enpu_err_prefix(err, "%s: ", config_phase_name(ph));
    return rc;
  }
  view->batch = g->batch[ph];
  view->seq = g->seq[ph];

  size_t n = (size_t)view->batch_count * (size_t)view->seq_count;
  ENPU_RETURN_IF(n > INT_MAX, err, ENPU_ERR_INVALID, "%s: %zu buckets is too many", config_phase_name(ph), n);
  g->buckets[ph] = enpu_calloc(n, sizeof *g->buckets[ph]);
  ENPU_RETURN_IF(!g->buckets[ph], err, ENPU_ERR_NOMEM, "out of memory for %zu %s buckets", n,
                 config_phase_name(ph));
  view->buckets = g->buckets[ph];
  view->bucket_count = (int)n;

  grid_totals *t = &view->totals;
  for (int bi = 0; bi < view->batch_count; bi++) {
    for (int si = 0; si < view->seq_count; si++) {
      grid_bucket *b = &g->buckets[ph][(size_t)bi * view->seq_count + si];
      b->batch = view->batch[bi];
      b->seq = view->seq[si];
      ENPU_FORWARD(grid_memory_per_chip(job, ph, b->batch, b->seq, &b->mem, err));
      b->status = grid_memory_status(&b->mem);
      t->buckets++;
      if (b->status == GRID_FEASIBLE) t->feasible++;
      else t->infeasible_capacity++;
    }
  }
  t->compilations = t->feasible * job->slack_count * job->policy_count;
  return 0;
}

int grid_create(const config_job *job, grid **out, enpu_err *err) {
  *out = NULL;
  grid *g = enpu_calloc(1, sizeof *g);
  ENPU_RETURN_IF(!g, err, ENPU_ERR_NOMEM, "out of memory for the bucket grid");
  int enabled = 0;
  for (int ph = 0; ph < CONFIG_NPHASE; ph++) {
    if (!job->phase[ph].enabled) continue;
    enabled++;
    int rc = build_phase(g, job, (config_phase)ph, err);
    if (rc < 0) {
      grid_free(g);
      return rc;
    }
    const grid_totals *t = &g->phase[ph].totals;
    g->totals.buckets += t->buckets;
    g->totals.feasible += t->feasible;
    g->totals.infeasible_capacity += t->infeasible_capacity;
    g->totals.compilations += t->compilations;
  }
  if (enabled == 0) {
    grid_free(g);
    return enpu_errorf(err, ENPU_ERR_INVALID, "job %s compiles no phase", job->name);
  }
  *out = g;
  return 0;
}

void grid_free(grid *g) {
  if (!g) return;
  for (int ph = 0; ph < CONFIG_NPHASE; ph++) {
    free(g->batch[ph]);
    free(g->seq[ph]);
    free(g->buckets[ph]);
  }
  free(g);
}

const grid_phase *grid_get_phase(const grid *g, config_phase phase) {
  if ((int)phase < 0 || phase >= CONFIG_NPHASE || !g->buckets[phase]) return NULL;
  return &g->phase[phase];
}

const grid_totals *grid_get_totals(const grid *g) { return &g->totals; }

/* Index of the first value >= x in the strictly increasing a[0..n), or n. */
static int first_at_least(const int *a, int n, int x) {
  int lo = 0, hi = n;
  while (lo < hi) {
    int mid = lo + (hi - lo) / 2;
    if (a[mid] < x) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

int grid_pad(const grid *g, config_phase phase, int batch, int seq, const grid_bucket **out, enpu_err *err) {
  *out = NULL;
  const grid_phase *v = grid_get_phase(g, phase);
  ENPU_RETURN_IF(!v, err, ENPU_ERR_NOT_FOUND, "phase %s is not in the job's grid",
                 (int)phase >= 0 && phase < CONFIG_NPHASE ? config_phase_name(phase) : "?");
  const char *name = config_phase_name(phase);
  ENPU_RETURN_IF(batch < 1 || seq < 1, err, ENPU_ERR_INVALID, "%s: batch and seq must be >= 1, got batch %d seq %d",
                 name, batch, seq);
  int bi = first_at_least(v->batch, v->batch_count, batch);
  int si = first_at_least(v->seq, v->seq_count, seq);
  ENPU_RETURN_IF(bi == v->batch_count || si == v->seq_count, err, ENPU_ERR_NOT_FOUND,
                 "%s: no bucket covers batch %d seq %d; the largest bucket is batch %d seq %d", name, batch, seq,
                 v->batch[v->batch_count - 1], v->seq[v->seq_count - 1]);
  const grid_bucket *b = &v->buckets[(size_t)bi * v->seq_count + si];
  *out = b;
  ENPU_RETURN_IF(b->status != GRID_FEASIBLE, err, ENPU_ERR_INFEASIBLE,
                 "%s: batch %d seq %d pads to bucket batch %d seq %d, which does not fit HBM "
                 "(%.1f GB needed per chip, %.1f GB available)",
                 name, batch, seq, b->batch, b->seq, grid_memory_used_bytes(&b->mem) / 1e9, b->mem.hbm_bytes / 1e9);
  return 0;
}
