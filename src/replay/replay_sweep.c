/* replay_sweep.c — the load sweep: one trace replayed at several request rates with every
 * policy, reduced to what a capacity question needs per (rate, policy): SLO attainment,
 * savings against nodvfs (busy-only and with idle), pool utilisation, and the shares of
 * batches safeguards 1 and 2 touched, the share switched mid-way and what the switches
 * cost; and the two numbers a five-minute mean hides: the trace's peak arrivals in one
 * second and each policy's longest prefill queue. The capacity of a policy is the highest rate at
 * which it, and every lower rate tried, keeps REPLAY_CAPACITY_ATTAINMENT.
 *
 * Rates run one after another (each rate's policies side by side on threads); a rate's
 * runs are freed once reduced, so memory follows the largest rate, not the sum. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "replay_internal.h"

void replay_sweep_free(replay_sweep *s) {
  if (!s) return;
  free(s->rates); /* owns the other arrays (sweep_alloc) */
  free(s);
}

/* One rate's runs → its cells. */
static void reduce(replay_sweep *s, size_t ri, replay_result *const *runs) {
  const replay_summary *base = NULL;
  for (size_t p = 0; p < s->npolicies; p++)
    if (config_policy_named(s->policies[p], CONFIG_POLICY_NODVFS)) base = replay_result_summary(runs[p]);
  for (size_t p = 0; p < s->npolicies; p++) {
    const replay_summary *m = replay_result_summary(runs[p]);
    const replay_phase_stats *a = m->phase;
    replay_sweep_cell *c = &s->cells[ri * s->npolicies + p];
    const double busy = a[0].busy_energy_nj + a[1].busy_energy_nj;
    c->slo_attainment = m->slo_attainment;
    c->savings_busy = base ? 1 - busy / (base->phase[0].busy_energy_nj + base->phase[1].busy_energy_nj) : NAN;
    c->savings = base ? 1 - m->energy_nj / base->energy_nj : NAN;
    replay_utilisation(runs[p], c->util);
    replay_busiest_window(runs[p], c->util_busiest);
    const uint64_t batches = a[0].batches + a[1].batches;
    c->locked_share = replay_ratio(a[0].locked + a[1].locked, batches);
    c->safeguard1_share = replay_ratio(a[0].safeguard1 + a[1].safeguard1, batches);
    c->switched_share = replay_ratio(a[0].switched, a[0].batches); /* only prefill batches switch */
    c->switch_energy_share = busy > 0 ? (a[0].switch_nj + a[0].switch_extra_nj) / busy : NAN;
    c->peak_queue = m->peak_queue;
  }
}

static void set_capacity(replay_sweep *s) {
  for (size_t p = 0; p < s->npolicies; p++) {
    s->capacity[p] = 0;
    for (size_t r = 0; r < s->nrates; r++) {
      if (!(s->cells[r * s->npolicies + p].slo_attainment >= REPLAY_CAPACITY_ATTAINMENT)) break;
      s->capacity[p] = s->rates[r];
    }
  }
}

static int sweep_alloc(replay_sweep **out, const char *const *policies, size_t np, const double *rates, size_t nr,
                       enpu_err *err) {
  replay_sweep *s = calloc(1, sizeof *s);
  if (!s || ENPU_CALLOC_PARTS(ENPU_PART(s->rates, nr), ENPU_PART(s->requests, nr), ENPU_PART(s->policies, np),
                              ENPU_PART(s->peak_arrivals_per_s, nr), ENPU_PART(s->cells, nr * np),
                              ENPU_PART(s->capacity, np)) < 0) {
    free(s);
    return enpu_errorf(err, ENPU_ERR_NOMEM, "out of memory (sweep of %zu rates)", nr);
  }
  s->nrates = nr, s->npolicies = np;
  memcpy(s->rates, rates, nr * sizeof *rates);
  qsort(s->rates, nr, sizeof *s->rates, enpu_cmp_double);
  for (size_t p = 0; p < np; p++) snprintf(s->policies[p], sizeof s->policies[p], "%s", policies[p]);
  *out = s;
  return ENPU_OK;
}

int replay_sweep_run(const planstore *ps, const char *const *policies, size_t npolicies, const replay_trace *raw,
                     const replay_shape *base, const double *rates, size_t nrates, const replay_setup *setup,
                     int threads, replay_sweep **out, enpu_err *err) {
  *out = NULL;
  ENPU_RETURN_IF(nrates == 0 || npolicies == 0, err, ENPU_ERR_INVALID, "sweep: no rate or no policy");
  for (size_t r = 0; r < nrates; r++)
    ENPU_RETURN_IF(!(rates[r] > 0) || !isfinite(rates[r]), err, ENPU_ERR_INVALID,
                   "sweep: rate %g must be a finite number > 0", rates[r]);
  replay_sweep *s = NULL;
  ENPU_FORWARD(sweep_alloc(&s, policies, npolicies, rates, nrates, err));
  replay_result **runs = enpu_calloc(npolicies, sizeof *runs);
  int rc = runs ? ENPU_OK : enpu_errorf(err, ENPU_ERR_NOMEM, "out of memory (sweep runs)");
  for (size_t r = 0; rc == ENPU_OK && r < nrates; r++) {
    replay_shape sh = *base;
    sh.rate = s->rates[r];
    replay_trace *t = NULL;
    rc = replay_trace_shape(raw, &sh, &t, err);
    if (rc == ENPU_OK) rc = replay_run_policies(ps, policies, npolicies, t, setup, threads, runs, err);
    if (rc == ENPU_OK) {
      s->requests[r] = t->count;
      s->peak_arrivals_per_s[r] = replay_trace_peak_per_s(t);
      reduce(s, r, runs);
      for (size_t p = 0; p < npolicies; p++) replay_result_free(runs[p]);
    } else {
      enpu_err_prefix(err, "rate %g: ", s->rates[r]);
    }
    replay_trace_free(t);
  }
  free(runs);
  if (rc != ENPU_OK) {
    replay_sweep_free(s);
    return rc;
  }
  set_capacity(s);
  *out = s;
  return ENPU_OK;
}

/* One policy's series: each field of its cells, in rate order. */
static json_t *policy_series(const replay_sweep *s, size_t p) {
  static const char *const names[] = {"slo_attainment",      "savings_busy",        "savings",
                                      "util_prefill",        "util_decode",         "util_prefill_busiest",
                                      "util_decode_busiest", "locked_share",        "safeguard1_share",
                                      "switched_share",      "switch_energy_share", "peak_queue"};
  json_t *o = json_object();
  for (size_t f = 0; o && f < sizeof names / sizeof names[0]; f++) {
    json_t *a = json_array();
    for (size_t r = 0; a && r < s->nrates; r++) {
      const replay_sweep_cell *c = &s->cells[r * s->npolicies + p];
      const double v[] = {
          c->slo_attainment,      c->savings_busy,      c->savings,      c->util[0],          c->util[1],
          c->util_busiest[0],     c->util_busiest[1],   c->locked_share, c->safeguard1_share, c->switched_share,
          c->switch_energy_share, (double)c->peak_queue};
      json_array_append_new(a, replay_json_number(v[f]));
    }
    if (!a || json_object_set_new(o, names[f], a) < 0) {
      json_decref(o);
      return NULL;
    }
  }
  if (o) json_object_set_new(o, "capacity_rate", replay_json_number(s->capacity[p]));
  return o;
}

int replay_sweep_json(const replay_sweep *s, json_t **out, enpu_err *err) {
  json_t *rates = json_array(), *req = json_array(), *pol = json_object(), *peak = json_array();
  for (size_t r = 0; rates && req && peak && r < s->nrates; r++) {
    json_array_append_new(rates, json_real(s->rates[r]));
    json_array_append_new(req, json_integer((json_int_t)s->requests[r]));
    json_array_append_new(peak, json_real(s->peak_arrivals_per_s[r]));
  }
  for (size_t p = 0; pol && p < s->npolicies; p++) {
    json_t *o = policy_series(s, p);
    if (!o || json_object_set_new(pol, s->policies[p], o) < 0) {
      json_decref(pol);
      pol = NULL;
    }
  }
  json_t *doc = rates && req && pol && peak
                    ? json_pack("{s:o, s:o, s:o, s:f, s:o}", "rates", rates, "requests", req, "peak_arrivals_per_s",
                                peak, "capacity_attainment", REPLAY_CAPACITY_ATTAINMENT, "policies", pol)
                    : NULL;
  if (!doc) {
    if (!(rates && req && pol && peak)) json_decref(rates), json_decref(req), json_decref(pol), json_decref(peak);
    return enpu_errorf(err, ENPU_ERR_NOMEM, "out of memory (sweep summary)");
  }
  *out = doc;
  return ENPU_OK;
}
