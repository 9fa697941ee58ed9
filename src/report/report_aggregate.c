/* report_aggregate.c — the numbers behind the report's tables and plots, computed from a
 * loaded store: savings per (policy, phase, slack), the representative bucket of a
 * phase, a plan's energy by component slot, and chosen states vs utilisation at peak.
 *
 * Where each op instance of a plan sits is read from the plan's plan_states runs (a walk
 * prefix's lead and trail points, or a GA plan's runs of layers); store_load has
 * validated every index of `store_contents` and that the runs cover every op's
 * instances, so rows index their tables safely. A run that is no Pareto point (rail
 * lifting, the all-peak fallback) is priced by its op's fastest point in the energy
 * breakdown: the store keeps per-slot energies of Pareto points only. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "report.h"
#include "report_internal.h"
#include "search.h"

/* Rows index a plan's states by config_component and its energies by power slot, the
 * layouts the farm stored them in. */
_Static_assert(STORE_NSTATE == CONFIG_NCOMP && STORE_NENERGY == POWER_NSLOT,
               "store records and the cost model's arrays must have the same layout");

/* ---- helpers ------------------------------------------------------------------- */

static int bucket_ok(const store_bucket_rec *b) { return b->status == STORE_BUCKET_OK && b->plan_count > 0; }

/* Row of bucket (phase, batch, seq) in policy p, or -1. */
static long bucket_row(const store_policy_tables *p, int phase, int32_t batch, int32_t seq) {
  for (size_t i = 0; i < p->nbuckets; i++)
    if (p->buckets[i].phase == phase && p->buckets[i].batch == batch && p->buckets[i].seq == seq) return (long)i;
  return -1;
}

static const store_policy_tables *policy_tables(const store_contents *c, const char *name) {
  for (size_t i = 0; i < c->npolicies; i++)
    if (!strcmp(c->policies[i].name, name)) return &c->policies[i];
  return NULL;
}

/* The op states of plan `pl` of bucket `b` from its runs, one entry per bucket op: its
 * first run as the lead, its last as the trail. */
static int plan_op_states(const store_policy_tables *p, const store_bucket_rec *b, const store_plan_rec *pl,
                          planstore_op_states **out, size_t *n, enpu_err *err) {
  *n = b->ops_count;
  *out = enpu_calloc(*n ? *n : 1, sizeof **out);
  ENPU_RETURN_IF(!*out, err, ENPU_ERR_NOMEM, "out of memory (op states)");
  uint32_t k = 0;
  for (uint64_t r = 0; r < pl->states_count; r++) {
    const store_plan_state_rec *ps = &p->plan_states[pl->states_first + r];
    while (k < b->ops_count && p->bucket_ops[b->ops_first + k].op != ps->op) k++;
    if (k == b->ops_count) break; /* store_load checked the order */
    planstore_op_states *o = &(*out)[k];
    const store_op_rec *op = &p->ops[ps->op];
    const uint32_t pt = ps->pareto == STORE_NO_INDEX ? op->pareto_first : ps->pareto;
    if (o->instances == 0) {
      *o = (planstore_op_states){.op = ps->op,
                                 .signature = op->signature,
                                 .name = op->name,
                                 .instances = p->bucket_ops[b->ops_first + k].multiplicity,
                                 .lead_instances = ps->instances,
                                 .lead_pareto = pt,
                                 .lead_time_ns = p->pareto[pt].time_ns};
      memcpy(o->lead_states, ps->states, PLANSTORE_NSTATE);
    }
    o->trail_pareto = pt;
    o->trail_time_ns = p->pareto[pt].time_ns;
    memcpy(o->trail_states, ps->states, PLANSTORE_NSTATE);
  }
  return 0;
}

/* ---- Figure 11 ----------------------------------------------------------------- */

static int savings_cmp(const void *a, const void *b) {
  const report_savings_row *x = a, *y = b;
  const int phase = ENPU_ORDER(x->phase, y->phase), slack = ENPU_ORDER(x->slack, y->slack);
  return phase ? phase : slack ? slack : ENPU_ORDER(x->budget, y->budget);
}

int report_savings(const store_contents *c, report_savings_row **out, size_t *n, enpu_err *err) {
  *out = NULL;
  *n = 0;
  report_savings_row *rows = NULL;
  size_t cap = 0, count = 0;
  for (size_t pi = 0; pi < c->npolicies; pi++) {
    const store_policy_tables *p = &c->policies[pi];
    const size_t first = count;
    for (size_t k = 0; k < p->nplans; k++) {
      const store_plan_rec *pl = &p->plans[k];
      const store_bucket_rec *b = &p->buckets[pl->bucket];
      if (b->status != STORE_BUCKET_OK) continue;
      size_t r = first;
      while (r < count &&
             !(rows[r].phase == b->phase && rows[r].slack == pl->slack && rows[r].budget == pl->budget))
        r++;
      if (r == count) {
        if (enpu_grow((void **)&rows, &cap, count + 1, sizeof *rows) < 0) {
          free(rows);
          return enpu_errorf(err, ENPU_ERR_NOMEM, "out of memory (savings rows)");
        }
        rows[count] = (report_savings_row){.phase = b->phase,
                                           .slack = pl->slack,
                                           .budget = pl->budget,
                                           .min = INFINITY,
                                           .max = -INFINITY,
                                           .overhead_max = -INFINITY,
                                           .paper_overhead_max = -INFINITY};
        snprintf(rows[count].policy, sizeof rows[count].policy, "%s", p->name);
        count++;
      }
      rows[r].buckets++;
      rows[r].mean += pl->savings_vs_nodvfs; /* a sum until divided below */
      rows[r].min = fmin(rows[r].min, pl->savings_vs_nodvfs);
      rows[r].max = fmax(rows[r].max, pl->savings_vs_nodvfs);
      rows[r].overhead_mean += pl->overhead_pct; /* a sum, as mean */
      rows[r].overhead_max = fmax(rows[r].overhead_max, pl->overhead_pct);
      rows[r].paper_overhead_mean += pl->paper_overhead_pct; /* a sum, as mean */
      rows[r].paper_overhead_max = fmax(rows[r].paper_overhead_max, pl->paper_overhead_pct);
    }
    for (size_t r = first; r < count; r++) {
      rows[r].mean /= (double)rows[r].buckets, rows[r].overhead_mean /= (double)rows[r].buckets;
      rows[r].paper_overhead_mean /= (double)rows[r].buckets;
    }
    qsort(rows + first, count - first, sizeof *rows, savings_cmp);
  }
  *out = rows;
  *n = count;
  return ENPU_OK;
}

/* ---- representative bucket ------------------------------------------------------ */

typedef struct {
  double t_nodvfs_ns;
  int32_t batch, seq;
} bucket_size;

static int size_cmp(const void *a, const void *b) {
  const bucket_size *x = a, *y = b;
  const int t = ENPU_ORDER(x->t_nodvfs_ns, y->t_nodvfs_ns), batch = ENPU_ORDER(x->batch, y->batch);
  return t ? t : batch ? batch : ENPU_ORDER(x->seq, y->seq);
}

void report_capacity(const store_contents *c, report_capacity_info *out) {
  *out = (report_capacity_info){"enforce", "all-resident", "worst", 0, 0};
  json_t *job = c->job_json ? json_loads(c->job_json, 0, NULL) : NULL;
  const json_t *moe = json_object_get(job, "moe"), *cf = json_object_get(moe, "capacity_factor");
  const json_t *cap = json_object_get(job, "capacity"), *ex = json_object_get(moe, "experts");
  if (json_is_string(cap)) snprintf(out->capacity, sizeof out->capacity, "%s", json_string_value(cap));
  if (json_is_string(ex)) snprintf(out->experts, sizeof out->experts, "%s", json_string_value(ex));
  if (json_is_number(cf)) snprintf(out->factor, sizeof out->factor, "%g", json_number_value(cf));
  json_decref(job);
  const store_policy_tables *p = c->npolicies ? &c->policies[0] : NULL;
  for (size_t i = 0; p && i < p->nbuckets; i++)
    out->over_hbm += p->buckets[i].status == STORE_BUCKET_OK && p->buckets[i].message[0];
  out->buckets = p ? p->nbuckets : 0;
}

int report_pick_bucket(const store_contents *c, int phase, report_bucket_key *out, enpu_err *err) {
  const char *phase_name = phase == STORE_PHASE_PREFILL ? "prefill" : "decode";
  ENPU_RETURN_IF(c->npolicies == 0, err, ENPU_ERR_NOT_FOUND, "the store has no policies");
  const store_policy_tables *p0 = &c->policies[0];
  bucket_size *cand = enpu_calloc(p0->nbuckets + 1, sizeof *cand);
  ENPU_RETURN_IF(!cand, err, ENPU_ERR_NOMEM, "out of memory (buckets)");
  size_t n = 0;
  for (size_t i = 0; i < p0->nbuckets; i++) {
    const store_bucket_rec *b = &p0->buckets[i];
    int everywhere = b->phase == phase && bucket_ok(b);
    for (size_t pi = 1; everywhere && pi < c->npolicies; pi++) {
      long row = bucket_row(&c->policies[pi], phase, b->batch, b->seq);
      everywhere = row >= 0 && bucket_ok(&c->policies[pi].buckets[row]);
    }
    if (everywhere) cand[n++] = (bucket_size){b->t_nodvfs_ns, b->batch, b->seq};
  }
  int rc = ENPU_OK;
  if (n == 0) {
    rc = enpu_errorf(err, ENPU_ERR_NOT_FOUND, "no %s bucket is compiled (ok) in every policy", phase_name);
  } else {
    qsort(cand, n, sizeof *cand, size_cmp);
    const bucket_size *m = &cand[(n - 1) / 2];
    *out = (report_bucket_key){.phase = phase, .batch = m->batch, .seq = m->seq};
  }
  free(cand);
  return rc;
}

/* ---- Figure 12 ----------------------------------------------------------------- */

static int breakdown_slack_cmp(const void *a, const void *b) {
  const report_breakdown_row *x = a, *y = b;
  return x->slack < y->slack ? -1 : x->slack > y->slack;
}

/* Slot energies of one plan: every instance of every op at its lead or trail point. */
static void plan_slots(const store_policy_tables *p, const store_plan_rec *pl, report_breakdown_row *row) {
  for (uint64_t r = 0; r < pl->states_count; r++) {
    const store_plan_state_rec *ps = &p->plan_states[pl->states_first + r];
    const uint32_t pt = ps->pareto == STORE_NO_INDEX ? p->ops[ps->op].pareto_first : ps->pareto;
    for (int s = 0; s < STORE_NENERGY; s++)
      row->slot_nj[s] += (double)ps->instances * p->pareto[pt].energy_by_slot_nj[s];
  }
  for (int s = 0; s < STORE_NENERGY; s++) row->slots_total_nj += row->slot_nj[s];
}

int report_breakdown(const store_contents *c, const report_bucket_key *key, report_breakdown_row **out, size_t *n,
                     enpu_err *err) {
  *out = NULL;
  *n = 0;
  size_t cap = 0, count = 0;
  report_breakdown_row *rows = NULL;
  int rc = ENPU_OK;
  for (size_t pi = 0; pi < c->npolicies && rc == ENPU_OK; pi++) {
    const store_policy_tables *p = &c->policies[pi];
    long bi = bucket_row(p, key->phase, key->batch, key->seq);
    if (bi < 0 || !bucket_ok(&p->buckets[bi])) continue;
    const store_bucket_rec *b = &p->buckets[bi];
    const size_t first = count;
    for (uint32_t k = 0; k < b->plan_count && rc == ENPU_OK; k++) {
      const store_plan_rec *pl = &p->plans[b->plan_first + k];
      if (enpu_grow((void **)&rows, &cap, count + 1, sizeof *rows) < 0) {
        rc = enpu_errorf(err, ENPU_ERR_NOMEM, "out of memory (breakdown rows)");
        break;
      }
      report_breakdown_row *r = &rows[count];
      *r = (report_breakdown_row){.bucket = *key,
                                  .slack = pl->slack,
                                  .walk_prefix = pl->walk_prefix,
                                  .plan_energy_nj = pl->energy_nj,
                                  .e_nodvfs_nj = b->e_nodvfs_nj};
      snprintf(r->policy, sizeof r->policy, "%s", p->name);
      plan_slots(p, pl, r);
      count++;
    }
    qsort(rows + first, count - first, sizeof *rows, breakdown_slack_cmp);
  }
  if (rc == ENPU_OK && count == 0)
    rc = enpu_errorf(err, ENPU_ERR_NOT_FOUND, "no policy has the %s bucket batch %d seq %d compiled",
                     key->phase == STORE_PHASE_PREFILL ? "prefill" : "decode", key->batch, key->seq);
  if (rc < 0) {
    free(rows);
    return rc;
  }
  *out = rows;
  *n = count;
  return ENPU_OK;
}

/* ---- Figure 19 ----------------------------------------------------------------- */

/* The plan of bucket row bi whose slack is closest to `want` (want < 0: the largest). */
static const store_plan_rec *closest_plan(const store_policy_tables *p, const store_bucket_rec *b, double want) {
  const store_plan_rec *best = NULL;
  for (uint32_t k = 0; k < b->plan_count; k++) {
    const store_plan_rec *pl = &p->plans[b->plan_first + k];
    if (!best || (want < 0 ? pl->slack > best->slack : fabs(pl->slack - want) < fabs(best->slack - want)))
      best = pl;
  }
  return best;
}

typedef struct {
  search_ctx *search;
  cost_ctx *cost;
  search_options opt;
  const config_job *job;
  config_policy_spec spec;
  int peak[CONFIG_NCOMP];
} freq_ctx;

/* Find the graph op behind store op `sop` by the identity the store keeps, its key
 * (search_op_key: what the farm filed it under), and fill the row's utilisations at peak.
 * An epoch (an epoch policy's unit) is no graph op: its row stays unmatched. */
static int match_op(freq_ctx *fc, const graph *g, const store_op_rec *sop, report_freq_row *row, enpu_err *err) {
  for (int j = 0; j < graph_op_count(g) && !row->matched; j++) {
    const graph_op *op = graph_op_at(g, j);
    if (search_op_key(fc->job, &fc->spec, &fc->opt, op) != sop->signature) continue;
    cost_result peak;
    ENPU_FORWARD(
        search_op_breakdown(fc->search, fc->cost, op, CONFIG_POLICY_NODVFS, &fc->opt, fc->peak, &peak, err));
    for (int k = 0; k < CONFIG_NCOMP; k++) row->util_peak[k] = peak.utilization[k];
    row->matched = 1;
  }
  return ENPU_OK;
}

int report_freq_util(const store_contents *c, const config_job *job, const char *policy,
                     const report_bucket_key *key, double slack, report_freq_row **out, size_t *n,
                     double *slack_used, enpu_err *err) {
  *out = NULL;
  *n = 0;
  freq_ctx fc = {.job = job};
  ENPU_RETURN_IF(config_policy_spec_parse(policy, &fc.spec) < 0, err, ENPU_ERR_NOT_FOUND,
                 "policy %s is not one the cost model knows", policy);
  const store_policy_tables *p = policy_tables(c, policy);
  ENPU_RETURN_IF(!p, err, ENPU_ERR_NOT_FOUND, "the store has no policy %s", policy);
  long bi = bucket_row(p, key->phase, key->batch, key->seq);
  ENPU_RETURN_IF(bi < 0 || !bucket_ok(&p->buckets[bi]), err, ENPU_ERR_NOT_FOUND,
                 "policy %s has no compiled bucket batch %d seq %d", policy, key->batch, key->seq);
  const store_plan_rec *pl = closest_plan(p, &p->buckets[bi], slack);
  *slack_used = pl->slack;
  planstore_op_states *st = NULL;
  size_t nst = 0;
  graph *g = NULL;
  report_freq_row *rows = NULL;
  int rc = plan_op_states(p, &p->buckets[bi], pl, &st, &nst, err);
  if (rc == 0) rc = graph_build(job, (config_phase)key->phase, key->batch, key->seq, &g, err);
  if (rc == 0) rc = cost_ctx_create(&job->chip, &fc.cost, err);
  if (rc == 0) rc = search_ctx_create(&job->chip, &fc.search, err);
  if (rc == 0 && !(rows = enpu_calloc(nst ? nst : 1, sizeof *rows)))
    rc = enpu_errorf(err, ENPU_ERR_NOMEM, "out of memory (frequency rows)");
  search_options_for_job(&fc.opt, job, &fc.spec);
  for (int k = 0; k < CONFIG_NCOMP; k++) fc.peak[k] = job->chip.freq_states;
  for (size_t i = 0; rc == 0 && i < nst; i++) {
    report_freq_row *r = &rows[i];
    *r = (report_freq_row){.bucket = *key, .instances = st[i].instances};
    snprintf(r->op, sizeof r->op, "%s", st[i].name);
    memcpy(r->state, st[i].lead_states, sizeof r->state);
    rc = match_op(&fc, g, &p->ops[st[i].op], r, err);
  }
  search_ctx_free(fc.search);
  cost_ctx_free(fc.cost);
  graph_free(g);
  free(st);
  if (rc < 0) {
    free(rows);
    return rc;
  }
  *out = rows;
  *n = nst;
  return ENPU_OK;
}

size_t report_headline_policies(const store_contents *c, int with_nodvfs, size_t *idx, size_t max) {
  static const config_policy headline[] = {CONFIG_POLICY_NODVFS, CONFIG_POLICY_DVFS_C,   CONFIG_POLICY_DVFS_C_WALK,
                                           CONFIG_POLICY_ENPU_C, CONFIG_POLICY_ENPU_ALL, CONFIG_POLICY_IDEAL};
  size_t n = 0;
  for (size_t h = with_nodvfs ? 0 : 1; h < sizeof headline / sizeof *headline; h++)
    for (size_t p = 0; p < c->npolicies && n < max; p++)
      if (config_policy_named(c->policies[p].name, headline[h]) &&
          (h != 2 || !n ||
           !config_policy_named(c->policies[idx[n - 1]].name, CONFIG_POLICY_DVFS_C))) /* the walk: when no GA */
        idx[n++] = p;
  if (n >= 2) return n;
  for (n = 0; n < c->npolicies && n < max; n++) idx[n] = n;
  return n;
}
