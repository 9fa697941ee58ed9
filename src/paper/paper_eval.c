/* paper_eval.c — our value of each claim of the paper's numbers file (paper.h, "The
 * paper's stated numbers"): a query names a kind, the policies, phase, slack and models, and
 * how the samples (one per model × policy × phase × slack it covers) are aggregated. Each
 * kind reads one output of the pipeline: the single-request stores (savings, gains,
 * overheads, slowdowns, saturation, chosen frequencies), the grid stores (sequence
 * trends), the compile outputs (Table 7, Figure 14), the farms' timings (core-hours), the
 * Figure 20 sweep, and the replays (summary.json, windows_<policy>.csv).
 *
 * Invariants: a sample that cannot be had makes the whole value missing (ok == 0, with the
 * first reason), so an aggregate never silently covers fewer models than it says. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "power.h"
#include "paper_internal.h"

typedef struct {
  double *v;
  int n, cap;
  paper_value miss; /* ok == 0 and a note once a sample was missing */
} samples;

static void add(samples *s, double v) {
  if (s->n == s->cap) {
    s->cap = s->cap ? 2 * s->cap : 16;
    double *nv = realloc(s->v, (size_t)s->cap * sizeof *nv);
    if (!nv) {
      snprintf(s->miss.note, sizeof s->miss.note, "out of memory");
      s->miss.ok = -1;
      return;
    }
    s->v = nv;
  }
  s->v[s->n++] = v;
}

static void missing(samples *s, const paper_value *why) {
  if (s->miss.ok == 0 && !s->miss.note[0]) s->miss = *why;
  s->miss.ok = -1;
}

static paper_value finish(samples *s, const paper_query *q) {
  if (s->n == 0 && s->miss.ok == 0 && (q->kind == PAPER_REPLAY || q->kind == PAPER_WINDOWS))
    snprintf(s->miss.note, sizeof s->miss.note, "no model has a replay named %s", q->run);
  paper_value out = {0};
  if (s->miss.ok < 0 || s->n == 0) {
    out = s->miss;
    out.ok = 0;
    if (!out.note[0]) snprintf(out.note, sizeof out.note, "no data");
  } else {
    double sum = 0, lo = INFINITY, hi = -INFINITY;
    for (int i = 0; i < s->n; i++) sum += s->v[i], lo = fmin(lo, s->v[i]), hi = fmax(hi, s->v[i]);
    out.ok = 1;
    out.lo = out.hi = q->agg == PAPER_AGG_MEAN ? sum / s->n : q->agg == PAPER_AGG_MAX ? hi : lo;
    if (q->agg == PAPER_AGG_RANGE) out.lo = lo, out.hi = hi;
    out.lo = q->scale * out.lo + q->offset, out.hi = q->scale * out.hi + q->offset;
    if (out.lo > out.hi) {
      const double t = out.lo;
      out.lo = out.hi, out.hi = t;
    }
  }
  free(s->v);
  return out;
}

static bool model_wanted(const paper_query *q, const char *name) {
  for (int i = 0; i < q->nmodels; i++)
    if (!strcmp(q->models[i], name)) return true;
  return q->nmodels == 0;
}

/* ---- single-request plans ---------------------------------------------------------- */

static const store_bucket_rec *request_bucket(paper_model *m, const store_policy_tables *p, int phase) {
  for (size_t b = 0; p && m->req_phase[phase] && b < p->nbuckets; b++) {
    const store_bucket_rec *r = &p->buckets[b];
    if (r->phase == phase && r->batch == m->req_batch[phase] && r->seq == m->req_seq[phase] &&
        r->status == STORE_BUCKET_OK)
      return r;
  }
  return NULL;
}

const store_plan_rec *paper_request_plan(paper_model *m, const paper_column *col, const char *policy, int phase,
                                         double slack, const store_bucket_rec **b, paper_value *v) {
  paper_run *run = paper_find_run(m, "request", col, v);
  if (!run) return NULL;
  const store_policy_tables *p = paper_policy(run->c, policy);
  const store_bucket_rec *bk = request_bucket(m, p, phase);
  if (!p || !bk) {
    snprintf(v->note, sizeof v->note, "%s: policy %s not compiled%s", m->name, policy,
             p                 ? " for this phase"
             : col->variant[0] ? " on this chip"
                               : " (not in this build's job)");
    v->not_in_variant = !p && col->variant[0];
    return NULL;
  }
  for (uint32_t k = bk->plan_first; k < bk->plan_first + bk->plan_count; k++)
    if (fabs(p->plans[k].slack - slack) < 1e-9) {
      *b = bk;
      return &p->plans[k];
    }
  snprintf(v->note, sizeof v->note, "%s: no %s plan at %g %% slack", m->name, policy, 100 * slack);
  return NULL;
}

int paper_request_slacks(paper_model *m, const paper_column *col, double *out, int cap) {
  paper_value v = {0};
  paper_run *run = paper_find_run(m, "request", col, &v);
  const store_policy_tables *p = run && run->c->npolicies ? &run->c->policies[0] : NULL;
  int n = 0;
  for (int ph = 0; p && ph < CONFIG_NPHASE && !n; ph++) {
    const store_bucket_rec *b = request_bucket(m, p, ph);
    for (uint32_t k = 0; b && k < b->plan_count && n < cap; k++) out[n++] = p->plans[b->plan_first + k].slack;
  }
  return n;
}

/* The metric of one plan (kinds that read one plan per sample). */
static double plan_metric(paper_kind kind, const store_bucket_rec *b, const store_plan_rec *pl) {
  switch (kind) {
  case PAPER_OVERHEAD: return report_plan_overhead_pct(pl);
  case PAPER_SLOWDOWN: return report_plan_slowdown_pct(b, pl);
  case PAPER_LOSS_GROWTH: return report_regulator_loss_pct(b, pl);
  default: return 100 * pl->savings_vs_nodvfs;
  }
}

/* The slacks a query covers on model m: one value, or all stored ones. */
static int query_slacks(paper_model *m, const paper_query *q, const paper_column *col, double *out) {
  if (q->slack_sel == PAPER_SLACK_VALUE) {
    out[0] = q->slack;
    return 1;
  }
  const int n = paper_request_slacks(m, col, out, 32);
  if (q->slack_sel == PAPER_SLACK_MAX && n) {
    out[0] = out[n - 1];
    return 1;
  }
  return n;
}

/* savings, overhead, slowdown and gain: a sample per model × policy × phase (× slack for
 * "all"; "mean" averages the slacks into one sample). */
static void eval_plans(paper_ctx *x, const paper_query *q, const paper_column *col, samples *s) {
  for (int i = 0; i < x->nmodels; i++) {
    paper_model *m = &x->models[i];
    if (!model_wanted(q, m->name)) continue;
    double slacks[32];
    const int ns = query_slacks(m, q, col, slacks);
    paper_value why = {0};
    if (!ns) snprintf(why.note, sizeof why.note, "%s: no single-request store in %s mode", m->name, col->budget);
    if (!ns) missing(s, &why);
    for (int k = 0; k < q->npolicy; k++)
      for (int ph = 0; ph < CONFIG_NPHASE; ph++) {
        if ((q->phase >= 0 && ph != q->phase) || !m->req_phase[ph]) continue;
        double mean = 0;
        for (int j = 0; j < ns; j++) {
          const store_bucket_rec *b = NULL, *bb = NULL;
          const store_plan_rec *pl = paper_request_plan(m, col, q->policy[k], ph, slacks[j], &b, &why);
          const store_plan_rec *base = q->base[0] && pl
                                           ? paper_request_plan(m, col, q->base, ph, slacks[j], &bb, &why)
                                           : NULL;
          if (!pl || (q->base[0] && !base)) {
            missing(s, &why);
            continue;
          }
          double v = plan_metric(q->kind, b, pl);
          if (base) v -= plan_metric(q->kind, bb, base);
          if (q->slack_sel == PAPER_SLACK_MEAN) mean += v / ns;
          else add(s, v);
        }
        if (q->slack_sel == PAPER_SLACK_MEAN) add(s, mean);
      }
  }
}

/* Regulator loss at the largest stored slack minus at 0 (Figure 13): a sample per model ×
 * phase. */
static void eval_loss_growth(paper_ctx *x, const paper_query *q, const paper_column *col, samples *s) {
  for (int i = 0; i < x->nmodels; i++) {
    paper_model *m = &x->models[i];
    if (!model_wanted(q, m->name)) continue;
    double slacks[32];
    const int ns = paper_request_slacks(m, col, slacks, 32);
    paper_value why = {0};
    snprintf(why.note, sizeof why.note, "%s: no single-request store in %s mode", m->name, col->budget);
    for (int ph = 0; ph < CONFIG_NPHASE; ph++) {
      if ((q->phase >= 0 && ph != q->phase) || !m->req_phase[ph]) continue;
      const store_bucket_rec *b0 = NULL, *b1 = NULL;
      const store_plan_rec *p0 = ns ? paper_request_plan(m, col, q->policy[0], ph, slacks[0], &b0, &why) : NULL;
      const store_plan_rec *p1 = p0 ? paper_request_plan(m, col, q->policy[0], ph, slacks[ns - 1], &b1, &why)
                                    : NULL;
      if (!p1) missing(s, &why);
      else add(s, plan_metric(q->kind, b1, p1) - plan_metric(q->kind, b0, p0));
    }
  }
}

/* The smallest stored slack whose saving is within 1 point of the largest saving. */
static void eval_saturation(paper_ctx *x, const paper_query *q, const paper_column *col, samples *s) {
  for (int i = 0; i < x->nmodels; i++) {
    paper_model *m = &x->models[i];
    if (!model_wanted(q, m->name)) continue;
    double slacks[32], sav[32], best = -INFINITY;
    const int ns = paper_request_slacks(m, col, slacks, 32);
    paper_value why = {0};
    for (int j = 0; j < ns; j++) {
      const store_bucket_rec *b = NULL;
      const store_plan_rec *pl = paper_request_plan(m, col, q->policy[0], q->phase, slacks[j], &b, &why);
      if (!pl) {
        missing(s, &why);
        return;
      }
      sav[j] = 100 * pl->savings_vs_nodvfs, best = fmax(best, sav[j]);
    }
    for (int j = 0; j < ns; j++)
      if (sav[j] >= best - 1) {
        add(s, 100 * slacks[j]);
        break;
      }
  }
}

/* ---- grid stores: savings against the sequence length at the smallest batch ------- */

static void eval_seq(paper_ctx *x, const paper_query *q, const paper_column *col, samples *s) {
  for (int i = 0; i < x->nmodels; i++) {
    paper_model *m = &x->models[i];
    if (!model_wanted(q, m->name)) continue;
    paper_value why = {0};
    paper_run *run = paper_find_run(m, "grid", col, &why);
    const store_policy_tables *p = run ? paper_policy(run->c, q->policy[0]) : NULL;
    if (run && !p) snprintf(why.note, sizeof why.note, "%s: grid has no policy %s", m->name, q->policy[0]);
    int32_t batch = INT32_MAX;
    for (size_t b = 0; p && b < p->nbuckets; b++)
      if (p->buckets[b].phase == q->phase && p->buckets[b].status == STORE_BUCKET_OK && p->buckets[b].batch < batch)
        batch = p->buckets[b].batch;
    double first = NAN, last = NAN, lo = INFINITY, hi = -INFINITY; /* buckets are sorted by seq */
    for (size_t b = 0; p && b < p->nbuckets; b++) {
      const store_bucket_rec *r = &p->buckets[b];
      if (r->phase != q->phase || r->status != STORE_BUCKET_OK || r->batch != batch) continue;
      for (uint32_t k = r->plan_first; k < r->plan_first + r->plan_count; k++)
        if (fabs(p->plans[k].slack - q->slack) < 1e-9) {
          const double v = 100 * p->plans[k].savings_vs_nodvfs;
          if (isnan(first)) first = v;
          last = v, lo = fmin(lo, v), hi = fmax(hi, v);
        }
    }
    if (isnan(first)) {
      if (!why.note[0]) snprintf(why.note, sizeof why.note, "%s: no grid plans at that slack", m->name);
      missing(s, &why);
    } else {
      add(s, q->kind == PAPER_SEQ_TREND ? last - first : hi - lo);
    }
  }
}

/* ---- Figure 19: chosen state against utilisation at peak --------------------------- */

static double pearson(const double *a, const double *b, int n) {
  double ma = 0, mb = 0, sab = 0, saa = 0, sbb = 0;
  for (int i = 0; i < n; i++) ma += a[i] / n, mb += b[i] / n;
  for (int i = 0; i < n; i++)
    sab += (a[i] - ma) * (b[i] - mb), saa += (a[i] - ma) * (a[i] - ma), sbb += (b[i] - mb) * (b[i] - mb);
  return saa > 0 && sbb > 0 ? sab / sqrt(saa * sbb) : NAN;
}

static void freq_corr_one(paper_model *m, const paper_column *col, const paper_query *q, int ph, samples *s) {
  paper_value why = {0};
  paper_run *run = paper_find_run(m, "request", col, &why);
  config_job *job = NULL;
  enpu_err err = {0};
  if (run && config_job_load(run->job, &job, &err) < 0) snprintf(why.note, sizeof why.note, "%.400s", err.msg);
  report_freq_row *rows = NULL;
  size_t n = 0;
  double used = 0;
  const report_bucket_key key = {.phase = ph, .batch = m->req_batch[ph], .seq = m->req_seq[ph]};
  if (job && report_freq_util(run->c, job, q->policy[0], &key, q->slack, &rows, &n, &used, &err) < 0)
    snprintf(why.note, sizeof why.note, "%s: %.400s", m->name, err.msg);
  double *a = calloc(n * STORE_NSTATE + 1, sizeof *a), *b = calloc(n * STORE_NSTATE + 1, sizeof *b);
  int k = 0;
  for (size_t i = 0; a && b && i < n; i++)
    for (int c = 0; c < STORE_NSTATE && rows[i].matched; c++, k++)
      a[k] = rows[i].state[c], b[k] = rows[i].util_peak[c];
  const double r = pearson(a, b, k);
  if (k > 2 && !isnan(r)) add(s, r);
  else {
    if (!why.note[0]) snprintf(why.note, sizeof why.note, "%s: no matched ops for Figure 19", m->name);
    missing(s, &why);
  }
  free(a), free(b), free(rows);
  config_job_free(job);
}

static void eval_freq_corr(paper_ctx *x, const paper_query *q, const paper_column *col, samples *s) {
  for (int i = 0; i < x->nmodels; i++)
    for (int ph = 0; ph < CONFIG_NPHASE; ph++)
      if (model_wanted(q, x->models[i].name) && x->models[i].req_phase[ph] && (q->phase < 0 || q->phase == ph))
        freq_corr_one(&x->models[i], col, q, ph, s);
}

/* ---- compile outputs: Table 7 and Figure 14 ------------------------------------------ */

static const json_t *compile_doc(const paper_model *m, const char *policy, int ph) {
  for (int i = 0; i < m->ncompile; i++)
    if (m->compile[i].phase == ph && !strcmp(m->compile[i].policy, policy))
      return json_object_get(json_object_get(m->compile[i].doc, "policies"), policy);
  return NULL;
}

/* Explored plans of one request: op level (unique ops' evaluations); request level at the
 * Table 7 slack, for the GA summed over the slacks up to it (it is warm-started from
 * each smaller slack, so reaching 20 % costs every generation before it). */
double paper_t7_value(const paper_model *m, const char *policy, int ph, paper_level level) {
  const json_t *p = compile_doc(m, policy, ph);
  if (!p) return NAN;
  if (level == PAPER_LEVEL_OP) return json_number_value(json_object_get(p, "op_evals"));
  config_policy_spec spec; /* the GA (its policy row's request level) is chained */
  const bool chained = config_policy_spec_parse(policy, &spec) == 0 && power_policy_of(spec.base)->request_ga;
  double req = 0;
  size_t i;
  json_t *sl;
  json_array_foreach(json_object_get(p, "slacks"), i, sl) {
    const double slack = json_number_value(json_object_get(sl, "slack"));
    const double evals = json_number_value(json_object_get(sl, "request_evals"));
    if (chained ? slack <= m->t7_slack + 1e-9 : fabs(slack - m->t7_slack) < 1e-9) req += evals;
  }
  return req;
}

/* Seconds of one request's compilation: the op level once, the request level over
 * every slack (search_s counts the shared op level in each). */
double paper_compile_s(const paper_model *m, const char *policy, int ph, paper_level level) {
  const json_t *p = compile_doc(m, policy, ph);
  if (!p) return NAN;
  const double op = json_number_value(json_object_get(p, "op_search_s"));
  double req = 0;
  size_t i;
  json_t *sl;
  json_array_foreach(json_object_get(p, "slacks"), i, sl)
      req += json_number_value(json_object_get(sl, "search_s")) - op;
  return level == PAPER_LEVEL_OP ? op : level == PAPER_LEVEL_REQ ? req : op + req;
}

static void eval_compile(paper_ctx *x, const paper_query *q, samples *s) {
  for (int i = 0; i < x->nmodels; i++) {
    paper_model *m = &x->models[i];
    if (!model_wanted(q, m->name)) continue;
    for (int ph = 0; ph < CONFIG_NPHASE; ph++) {
      if ((q->phase >= 0 && ph != q->phase) || !m->req_phase[ph]) continue;
      const double v = q->kind == PAPER_TABLE7 ? paper_t7_value(m, q->policy[0], ph, q->level)
                                               : paper_compile_s(m, q->policy[0], ph, q->level);
      paper_value why = {0};
      snprintf(why.note, sizeof why.note, "%s: no %s compile output (policy not in this build's job)", m->name,
               q->policy[0]);
      if (isnan(v)) missing(s, &why);
      else add(s, v);
    }
  }
}

/* Core-hours of a model's grid farms: the farms' core-seconds, every grid run, of the last
 * farm run that computed the whole grid (tools/paper.py keeps it as farm.full_grid while
 * the grid stores' content is unchanged; an incremental run's seconds cover only what it
 * recomputed, so they are no such figure). */
static void eval_core_hours(paper_ctx *x, const paper_query *q, samples *s) {
  for (int i = 0; i < x->nmodels; i++) {
    const paper_model *m = &x->models[i];
    if (!model_wanted(q, m->name)) continue;
    const json_t *farm = json_object_get(m->timings, "farm"), *full = json_object_get(farm, "full_grid");
    const json_t *jobs = json_object_get(full ? full : farm, "jobs");
    double core_s = 0;
    int found = 0, partial = 0;
    for (int r = 0; r < m->nruns; r++) {
      const json_t *j = json_object_get(jobs, m->runs[r].name);
      const char *cs = json_string_value(json_object_get(j, "core-seconds"));
      const char *reused = json_string_value(json_object_get(j, "reused"));
      if (strcmp(m->runs[r].kind, "grid") || !cs) continue;
      core_s += strtod(cs, NULL), found++;
      partial |= !reused || strncmp(reused, "0 from the store, 0 from the journal", 36) != 0;
    }
    paper_value why = {0};
    snprintf(why.note, sizeof why.note,
             partial
                 ? "%s: the last farm run was incremental (it reused results), so its core-seconds do not cover "
                   "the grid: rerun the farms from empty stores"
                 : "%s: no farm timings",
             m->name);
    if (found && !partial) add(s, core_s / 3600);
    else missing(s, &why);
  }
}

/* ---- Figure 20 ------------------------------------------------------------------------ */

/* Mean over slacks of `field` for policy at factor (0: any factor, min over factors of
 * the mean of policy − base), from the sweep's rows. */
static double f20_mean(const json_t *doc, const char *policy, double factor, const char *field) {
  double sum = 0;
  int n = 0;
  size_t i;
  json_t *r;
  json_array_foreach(json_object_get(doc, "rows"), i, r) {
    if (strcmp(
            json_string_value(json_object_get(r, "policy")) ? json_string_value(json_object_get(r, "policy")) : "",
            policy) ||
        fabs(json_number_value(json_object_get(r, "capacity_factor")) - factor) > 1e-9)
      continue;
    sum += json_number_value(json_object_get(r, field)), n++;
  }
  return n ? 100 * sum / n : NAN;
}

static void eval_figure20(paper_ctx *x, const paper_query *q, samples *s) {
  for (int i = 0; i < x->nmodels; i++) {
    const paper_model *m = &x->models[i];
    if (!m->figure20 || !model_wanted(q, m->name)) continue;
    const json_t *doc = m->figure20;
    double v = NAN;
    if (q->metric == PAPER_F20_WORST) v = f20_mean(doc, q->policy[0], q->factor, "savings_worst_case_plan");
    else if (q->metric == PAPER_F20_LOSS)
      v = f20_mean(doc, q->policy[0], q->factor, "savings") -
          f20_mean(doc, q->policy[0], q->factor, "savings_worst_case_plan");
    size_t k;
    json_t *r;
    json_array_foreach(json_object_get(doc, "rows"), k, r) if (q->metric == PAPER_F20_MIN_GAIN) {
      const double f = json_number_value(json_object_get(r, "capacity_factor"));
      const double g = f20_mean(doc, q->policy[0], f, "savings_worst_case_plan") -
                       f20_mean(doc, q->base, f, "savings_worst_case_plan");
      v = isnan(v) || g < v ? g : v;
    }
    paper_value why = {0};
    snprintf(why.note, sizeof why.note, "%s: the sweep has no %s rows", m->name, q->policy[0]);
    if (isnan(v)) missing(s, &why);
    else add(s, v);
  }
}

/* ---- replays ---------------------------------------------------------------------------- */

static const json_t *dotted(const json_t *o, const char *path) {
  char buf[128];
  snprintf(buf, sizeof buf, "%s", path);
  char *save = NULL;
  for (char *t = strtok_r(buf, ".", &save); o && t; t = strtok_r(NULL, ".", &save)) o = json_object_get(o, t);
  return o;
}

static const paper_replay *column_replay(paper_model *m, const paper_query *q, const paper_column *col,
                                         paper_value *why) {
  char run[CONFIG_NAME_LEN];
  snprintf(run, sizeof run, "grid-%s", col->budget);
  const paper_replay *r = paper_find_replay(m, run, q->run);
  if (!r) snprintf(why->note, sizeof why->note, "%s: no replay %s of %s", m->name, q->run, run);
  return r;
}

static void eval_replay(paper_ctx *x, const paper_query *q, const paper_column *col, samples *s) {
  for (int i = 0; i < x->nmodels; i++) {
    paper_model *m = &x->models[i];
    paper_value why = {0};
    const paper_replay *r = column_replay(m, q, col, &why);
    if (!r) continue; /* the replay model only */
    const json_t *pol = json_object_get(json_object_get(r->summary, "policies"), q->policy[0]);
    for (int k = 0; k < q->npaths; k++) {
      const json_t *v = dotted(pol, q->paths[k]);
      snprintf(why.note, sizeof why.note, "%s: replay %s has no %s.%s", m->name, r->name, q->policy[0],
               q->paths[k]);
      if (json_is_number(v)) add(s, json_number_value(v));
      else missing(s, &why);
    }
  }
}

static void eval_windows(paper_ctx *x, const paper_query *q, const paper_column *col, samples *s) {
  for (int i = 0; i < x->nmodels; i++) {
    paper_model *m = &x->models[i];
    paper_value why = {0};
    const paper_replay *r = column_replay(m, q, col, &why);
    if (!r) continue;
    char path[PATH_MAX + 96];
    snprintf(path, sizeof path, "%s/windows_%s.csv", r->dir, q->policy[0]);
    double *v = NULL;
    int n = 0;
    enpu_err err = {0};
    const int peak = q->hours == PAPER_HOURS_PEAK ? 1 : q->hours == PAPER_HOURS_OFF_PEAK ? 0 : -1;
    if (report_windows_column(path, q->column, peak, &v, &n, &err) < 0) {
      snprintf(why.note, sizeof why.note, "%.400s", err.msg);
      missing(s, &why);
    }
    for (int k = 0; k < n; k++) add(s, v[k]);
    free(v);
  }
}

/* ---- dispatch ----------------------------------------------------------------------------- */

bool paper_query_has_column(const paper_query *q, const paper_column *col) {
  switch (q->kind) {
  case PAPER_TABLE7:
  case PAPER_COMPILE_S:
  case PAPER_CORE_HOURS:
  case PAPER_FIGURE20: return !col->variant[0] && !strcmp(col->budget, "paper");
  case PAPER_REPLAY:
  case PAPER_WINDOWS:
  case PAPER_SEQ_TREND:
  case PAPER_SEQ_SPREAD: return !col->variant[0];
  default: return true;
  }
}

paper_value paper_eval(paper_ctx *x, const paper_query *q, const paper_column *col) {
  samples s = {0};
  switch (q->kind) {
  case PAPER_SAVINGS:
  case PAPER_GAIN:
  case PAPER_OVERHEAD:
  case PAPER_SLOWDOWN: eval_plans(x, q, col, &s); break;
  case PAPER_SATURATION: eval_saturation(x, q, col, &s); break;
  case PAPER_SEQ_TREND:
  case PAPER_SEQ_SPREAD: eval_seq(x, q, col, &s); break;
  case PAPER_FREQ_CORR: eval_freq_corr(x, q, col, &s); break;
  case PAPER_TABLE7:
  case PAPER_COMPILE_S: eval_compile(x, q, &s); break;
  case PAPER_CORE_HOURS: eval_core_hours(x, q, &s); break;
  case PAPER_FIGURE20: eval_figure20(x, q, &s); break;
  case PAPER_REPLAY: eval_replay(x, q, col, &s); break;
  case PAPER_WINDOWS: eval_windows(x, q, col, &s); break;
  case PAPER_LOSS_GROWTH: eval_loss_growth(x, q, col, &s); break;
  default: break;
  }
  return finish(&s, q);
}
