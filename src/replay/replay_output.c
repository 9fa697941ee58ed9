/* replay_output.c — a run's results as files: per-request CSV, per-window CSV and the
 * summary JSON across policies (savings against the nodvfs run of the same trace, three
 * ways: busy batches only, with idle, and per phase; and split into §4.8's peak hours
 * 14–20 h and the rest). Numbers are printed with enough digits to round-trip the
 * quantities compared by tests; NaN (not applicable) is an empty CSV field and JSON
 * null. Runs must share one horizon (replay_align_horizon), so that their energies are
 * comparable. */
#include <dirent.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "replay_internal.h"

json_t *replay_json_number(double x) { return isfinite(x) ? json_real(x) : json_null(); }

double replay_ratio(uint64_t part, uint64_t whole) { return whole ? (double)part / (double)whole : NAN; }

static json_t *phase_triple(double prefill, double decode, double total) {
  return json_pack("{s:o, s:o, s:o}", "prefill", replay_json_number(prefill), "decode", replay_json_number(decode),
                   "total", replay_json_number(total));
}

static const replay_result *find_nodvfs(const replay_result *const *runs, size_t n) {
  for (size_t i = 0; i < n; i++)
    if (config_policy_named(runs[i]->summary.policy, CONFIG_POLICY_NODVFS)) return runs[i];
  return NULL;
}

static double savings(double e, double base) { return base > 0 ? 1.0 - e / base : NAN; }

/* ---- peak / off-peak --------------------------------------------------------------- */

/* A run's windows of one period (§4.8: peak 14–20 h), summed. */
typedef struct {
  size_t windows;
  double hours;
  uint64_t finished, slo_met, ttft_met, tpot_met;
  double busy_nj[CONFIG_NPHASE], idle_nj[CONFIG_NPHASE], kv_nj;
  uint64_t batches[CONFIG_NPHASE], safeguard1[CONFIG_NPHASE], locked[CONFIG_NPHASE];
} period_sum;

static void sum_period(const replay_result *r, bool peak, period_sum *p) {
  memset(p, 0, sizeof *p);
  for (size_t i = 0; i < r->nwindows; i++) {
    const replay_window *w = &r->windows[i];
    if (replay_is_peak(r->summary.origin_tod_s + w->start_ns * 1e-9) != peak) continue;
    p->windows++;
    p->hours += w->length_ns / 3600e9;
    p->finished += w->finished, p->slo_met += w->slo_met, p->ttft_met += w->ttft_met, p->tpot_met += w->tpot_met;
    p->kv_nj += w->kv_energy_nj;
    for (int ph = 0; ph < CONFIG_NPHASE; ph++) {
      p->busy_nj[ph] += w->busy_energy_nj[ph], p->idle_nj[ph] += w->idle_energy_nj[ph];
      p->batches[ph] += w->batches[ph], p->safeguard1[ph] += w->safeguard1[ph], p->locked[ph] += w->locked[ph];
    }
  }
}

static json_t *period_json(const period_sum *p, const period_sum *b) {
  const double busy = p->busy_nj[0] + p->busy_nj[1], all = busy + p->idle_nj[0] + p->idle_nj[1] + p->kv_nj;
  json_t *sav = json_null(), *busy_sav = json_null();
  if (b) {
    const double bbusy = b->busy_nj[0] + b->busy_nj[1], ball = bbusy + b->idle_nj[0] + b->idle_nj[1] + b->kv_nj;
    busy_sav = phase_triple(savings(p->busy_nj[0], b->busy_nj[0]), savings(p->busy_nj[1], b->busy_nj[1]),
                            savings(busy, bbusy));
    sav = phase_triple(savings(p->busy_nj[0] + p->idle_nj[0], b->busy_nj[0] + b->idle_nj[0]),
                       savings(p->busy_nj[1] + p->idle_nj[1], b->busy_nj[1] + b->idle_nj[1]), savings(all, ball));
  }
  return json_pack(
      "{s:I, s:o, s:I, s:o, s:o, s:o, s:o, s:o, s:o, s:o, s:o, s:o}", "windows", (json_int_t)p->windows, "hours",
      replay_json_number(p->hours), "finished", (json_int_t)p->finished, "slo_attainment",
      replay_json_number(replay_ratio(p->slo_met, p->finished)), "ttft_attainment",
      replay_json_number(replay_ratio(p->ttft_met, p->finished)), "tpot_attainment",
      replay_json_number(replay_ratio(p->tpot_met, p->finished)), "busy_energy_j",
      phase_triple(p->busy_nj[0] * 1e-9, p->busy_nj[1] * 1e-9, busy * 1e-9), "energy_j",
      phase_triple((p->busy_nj[0] + p->idle_nj[0]) * 1e-9, (p->busy_nj[1] + p->idle_nj[1]) * 1e-9, all * 1e-9),
      "busy_energy_savings", busy_sav, "energy_savings", sav, "safeguard1_share",
      phase_triple(replay_ratio(p->safeguard1[0], p->batches[0]), replay_ratio(p->safeguard1[1], p->batches[1]),
                   replay_ratio(p->safeguard1[0] + p->safeguard1[1], p->batches[0] + p->batches[1])),
      "locked_share",
      phase_triple(replay_ratio(p->locked[0], p->batches[0]), replay_ratio(p->locked[1], p->batches[1]),
                   replay_ratio(p->locked[0] + p->locked[1], p->batches[0] + p->batches[1])));
}

static json_t *periods_json(const replay_result *r, const replay_result *base) {
  json_t *o = json_object();
  for (int peak = 1; o && peak >= 0; peak--) {
    period_sum p, b;
    sum_period(r, peak, &p);
    if (base) sum_period(base, peak, &b);
    if (p.windows) json_object_set_new(o, peak ? "peak" : "off_peak", period_json(&p, base ? &b : NULL));
  }
  return o;
}

/* ---- the summary ------------------------------------------------------------------- */

static json_t *batches_json(const replay_summary *s) {
  json_t *b = json_object();
  for (int ph = 0; b && ph < CONFIG_NPHASE; ph++) {
    const replay_phase_stats *st = &s->phase[ph];
    json_object_set_new(
        b, ph ? "decode" : "prefill",
        json_pack("{s:I, s:I, s:I, s:I, s:I, s:I, s:I}", "total", (json_int_t)st->batches, "slowed",
                  (json_int_t)st->slowed, "slowest", (json_int_t)st->slowest, "safeguard1",
                  (json_int_t)st->safeguard1, "safeguard1_fastest", (json_int_t)st->safeguard1_fastest, "locked",
                  (json_int_t)st->locked, "late", (json_int_t)st->late));
    json_object_update_new(json_object_get(b, ph ? "decode" : "prefill"),
                           json_pack("{s:I, s:I, s:I, s:o, s:o}", "predictive", (json_int_t)st->predictive,
                                     "switched", (json_int_t)st->switched, "switches", (json_int_t)st->switches,
                                     "switch_energy_j", replay_json_number(st->switch_nj * 1e-9),
                                     "switch_extra_energy_j", replay_json_number(st->switch_extra_nj * 1e-9)));
  }
  return b;
}

static json_t *energy_json(const replay_summary *s) {
  const replay_phase_stats *p = &s->phase[CONFIG_PREFILL], *d = &s->phase[CONFIG_DECODE];
  return json_pack("{s:o, s:o, s:o, s:o}", "energy_j",
                   phase_triple(p->energy_nj * 1e-9, d->energy_nj * 1e-9, s->energy_nj * 1e-9), "busy_energy_j",
                   phase_triple(p->busy_energy_nj * 1e-9, d->busy_energy_nj * 1e-9,
                                (p->busy_energy_nj + d->busy_energy_nj) * 1e-9),
                   "idle_energy_j",
                   phase_triple(p->idle_energy_nj * 1e-9, d->idle_energy_nj * 1e-9,
                                (p->idle_energy_nj + d->idle_energy_nj) * 1e-9),
                   "kv_energy_j", replay_json_number(s->kv_energy_nj * 1e-9));
}

static json_t *savings_json(const replay_summary *s, const replay_summary *b, bool busy_only) {
  if (!b) return json_null();
  const replay_phase_stats *p = s->phase, *q = b->phase;
  if (busy_only)
    return phase_triple(
        savings(p[0].busy_energy_nj, q[0].busy_energy_nj), savings(p[1].busy_energy_nj, q[1].busy_energy_nj),
        savings(p[0].busy_energy_nj + p[1].busy_energy_nj, q[0].busy_energy_nj + q[1].busy_energy_nj));
  return phase_triple(savings(p[0].energy_nj, q[0].energy_nj), savings(p[1].energy_nj, q[1].energy_nj),
                      savings(s->energy_nj, b->energy_nj));
}

/* How every request was served, per class, and what limits the savings: the slack the
 * classes had, the busy time at 0 % slack, the padding. */
static json_t *coverage_json(const replay_result *r) {
  const replay_summary *s = &r->summary;
  json_t *classes = json_array();
  for (int c = 0; classes && c < r->cluster->slo_count; c++) {
    const replay_class_stats *k = &s->classes[c];
    json_t *o = json_pack("{s:s, s:I, s:I}", "name", r->cluster->slo[c].name, "requests", (json_int_t)k->requests,
                          "unservable", (json_int_t)k->unservable);
    for (int b = 0; o && b < REPLAY_NBY; b++)
      json_object_set_new(o, replay_by_names[b], json_integer((json_int_t)k->by[b]));
    if (o)
      json_object_update_new(
          o, json_pack(
                 "{s:o, s:o, s:o}", "slo_attainment", replay_json_number(replay_ratio(k->slo_met, k->requests)),
                 "ttft_slack_mean", replay_json_number(k->ttft_n ? k->ttft_slack_sum / (double)k->ttft_n : NAN),
                 "tpot_slack_mean", replay_json_number(k->tpot_n ? k->tpot_slack_sum / (double)k->tpot_n : NAN)));
    json_array_append_new(classes, o);
  }
  const replay_phase_stats *p = &s->phase[CONFIG_PREFILL], *d = &s->phase[CONFIG_DECODE];
  return json_pack("{s:I, s:I, s:I, s:o, s:{s:o, s:o}, s:{s:o, s:o}, s:{s:I, s:I, s:I}}", "chunked",
                   (json_int_t)s->chunked, "fallback", (json_int_t)s->fallback, "fallback_own",
                   (json_int_t)s->fallback_own, "classes", classes, "fastest_time_share", "prefill",
                   replay_json_number(p->busy_node_ns > 0 ? p->fastest_node_ns / p->busy_node_ns : NAN), "decode",
                   replay_json_number(d->busy_node_ns > 0 ? d->fastest_node_ns / d->busy_node_ns : NAN), "padding",
                   "prefill", replay_json_number(p->tokens ? (double)p->padded_tokens / (double)p->tokens : NAN),
                   "decode", replay_json_number(d->tokens ? (double)d->padded_tokens / (double)d->tokens : NAN),
                   "beyond_grid_batches", "prefill_chunked", (json_int_t)p->chunked, "prefill_chunks",
                   (json_int_t)p->chunks, "decode_fallback", (json_int_t)d->fallback);
}

static json_t *fleet_pair(double prefill, double decode) {
  return json_pack("{s:o, s:o, s:o}", "prefill", replay_json_number(prefill), "decode", replay_json_number(decode),
                   "total", replay_json_number(prefill + decode));
}

/* TTFT and TPOT attainment per SLO class (TTFT by its class of input length, TPOT by its
 * class of total length; requests not served count as missed). */
static json_t *classes_json(const replay_result *r) {
  uint64_t n[2][CONFIG_MAX_SLO_CLASSES] = {{0}}, met[2][CONFIG_MAX_SLO_CLASSES] = {{0}};
  for (size_t i = 0; i < r->summary.requests; i++) {
    const replay_request_result *q = &r->requests[i];
    n[0][q->ttft_class]++;
    n[1][q->tpot_class]++;
    met[0][q->ttft_class] += q->status == REPLAY_DONE && q->ttft_met;
    met[1][q->tpot_class] += q->status == REPLAY_DONE && q->tpot_met;
  }
  json_t *o = json_object();
  for (int c = 0; o && c < r->cluster->slo_count; c++)
    json_object_set_new(
        o, r->cluster->slo[c].name,
        json_pack("{s:I, s:o, s:I, s:o}", "ttft_requests", (json_int_t)n[0][c], "ttft_attainment",
                  replay_json_number(replay_ratio(met[0][c], n[0][c])), "tpot_requests", (json_int_t)n[1][c],
                  "tpot_attainment", replay_json_number(replay_ratio(met[1][c], n[1][c]))));
  return o;
}

/* The run's fleet: idle mode, autoscaling, the energy split (busy, awake idle, sleep,
 * transition, KV), active-instance time, wakes and sleeps, TTFT and TPOT attainment per
 * SLO class. */
static json_t *fleet_json(const replay_result *r) {
  const replay_summary *s = &r->summary;
  const replay_phase_stats *p = &s->phase[CONFIG_PREFILL], *d = &s->phase[CONFIG_DECODE];
  double active_s[CONFIG_NPHASE];
  for (int ph = 0; ph < CONFIG_NPHASE; ph++)
    active_s[ph] = (r->cluster->node[ph].nodes * s->horizon_ns - s->phase[ph].asleep_node_ns) * 1e-9;
  const double awake_p = p->idle_energy_nj - p->sleep_energy_nj - p->transition_energy_nj,
               awake_d = d->idle_energy_nj - d->sleep_energy_nj - d->transition_energy_nj;
  return json_pack("{s:s, s:b, s:o, s:{s:o, s:o, s:o, s:o, s:o}, s:o, s:o, s:o, s:o}", "idle_mode",
                   config_idle_mode_name(s->idle_mode), "autoscale", s->autoscale, "sleep_w_per_chip",
                   replay_json_number(r->sleep_w), "energy_split_j", "busy",
                   fleet_pair(p->busy_energy_nj * 1e-9, d->busy_energy_nj * 1e-9), "idle",
                   fleet_pair(awake_p * 1e-9, awake_d * 1e-9), "sleep",
                   fleet_pair(p->sleep_energy_nj * 1e-9, d->sleep_energy_nj * 1e-9), "transition",
                   fleet_pair(p->transition_energy_nj * 1e-9, d->transition_energy_nj * 1e-9), "kv",
                   replay_json_number(s->kv_energy_nj * 1e-9), "active_instance_s",
                   fleet_pair(active_s[0], active_s[1]), "wakes", fleet_pair((double)p->wakes, (double)d->wakes),
                   "sleeps", fleet_pair((double)p->sleeps, (double)d->sleeps), "classes", classes_json(r));
}

static json_t *run_summary_json(const replay_result *r, const replay_result *base) {
  const replay_summary *s = &r->summary, *b = base ? &base->summary : NULL;
  const replay_phase_stats *p = &s->phase[CONFIG_PREFILL], *d = &s->phase[CONFIG_DECODE];
  const double req = (double)s->requests;
  double util[CONFIG_NPHASE];
  replay_utilisation(r, util);
  json_t *o = json_pack(
      "{s:I, s:I, s:I, s:o, s:I, s:o, s:o, s:o, s:o, s:o, s:o, s:o, s:o, s:o, s:o, s:o, s:o, s:o}", "requests",
      (json_int_t)s->requests, "served", (json_int_t)s->served, "unservable", (json_int_t)s->unservable,
      "unservable_example", s->unservable_example[0] ? json_string(s->unservable_example) : json_null(),
      "slo_extrapolated", (json_int_t)s->slo_extrapolated, "slo_attainment", replay_json_number(s->slo_attainment),
      "ttft_attainment", replay_json_number(req ? (double)s->ttft_met / req : NAN), "tpot_attainment",
      replay_json_number(req ? (double)s->tpot_met / req : NAN), "energy_savings", savings_json(s, b, false),
      "busy_energy_savings", savings_json(s, b, true), "utilisation",
      json_pack("{s:o, s:o}", "prefill", replay_json_number(util[0]), "decode", replay_json_number(util[1])),
      "idle_w_per_chip", replay_json_number(s->idle_w_per_chip), "ttft_ms",
      json_pack("{s:o, s:o}", "p50", replay_json_number(s->ttft_p50_ns * 1e-6), "p99",
                replay_json_number(s->ttft_p99_ns * 1e-6)),
      "tpot_ms",
      json_pack("{s:o, s:o}", "p50", replay_json_number(s->tpot_p50_ns * 1e-6), "p99",
                replay_json_number(s->tpot_p99_ns * 1e-6)),
      "batches", batches_json(s), "periods", periods_json(r, base), "kv_transfer",
      json_pack("{s:o, s:o, s:o}", "total_s", replay_json_number(s->kv_transfer_total_ns * 1e-9), "mean_ms",
                replay_json_number(s->kv_transfer_mean_ns * 1e-6), "bytes", replay_json_number(s->kv_bytes)),
      "end_s", replay_json_number(s->end_ns * 1e-9));
  json_t *tokens = json_pack("{s:I, s:I, s:I, s:I, s:I}", "prefill_run", (json_int_t)p->tokens, "prefill_padded",
                             (json_int_t)p->padded_tokens, "prefill_padded_max", (json_int_t)p->padded_max,
                             "decode_generated", (json_int_t)d->tokens, "decode_padded",
                             (json_int_t)d->padded_tokens);
  json_t *energy = energy_json(s);
  const replay_gov_summary *g = &r->gov;
  if (o)
    json_object_update_new(o, json_pack("{s:s, s:I}", "safeguards", config_safeguards_name(s->safeguards),
                                        "peak_queue", (json_int_t)s->peak_queue));
  if (o) json_object_update_new(o, coverage_json(r));
  if (o) json_object_set_new(o, "fleet", fleet_json(r));
  if (o && (g->governor || g->speculative))
    json_object_set_new(
        o, "online",
        json_pack("{s:b, s:I, s:I, s:I, s:o, s:I, s:o, s:o, s:I}", "governor", g->governor, "decisions",
                  (json_int_t)g->decisions, "state_changes", (json_int_t)g->state_changes, "spec_rounds",
                  (json_int_t)g->spec_rounds, "mean_tokens_per_round", replay_json_number(g->mean_tokens_per_round),
                  "lossy_tokens", (json_int_t)g->lossy_tokens, "reward_first10",
                  replay_json_number(g->reward_first10), "reward_last90", replay_json_number(g->reward_last90),
                  "updates", (json_int_t)g->updates));
  if (!o || !tokens || !energy || json_object_set_new(o, "tokens", tokens) < 0 ||
      json_object_update(o, energy) < 0) {
    json_decref(o);
    o = NULL;
  }
  json_decref(energy);
  return o;
}

int replay_summary_json(const replay_result *const *runs, size_t n, json_t **out, enpu_err *err) {
  *out = NULL;
  ENPU_RETURN_IF(n == 0, err, ENPU_ERR_INVALID, "replay summary: no runs");
  for (size_t i = 1; i < n; i++)
    ENPU_RETURN_IF(runs[i]->summary.horizon_ns != runs[0]->summary.horizon_ns, err, ENPU_ERR_INVALID,
                   "replay summary: runs %s and %s have different horizons (replay_align_horizon first)",
                   runs[0]->summary.policy, runs[i]->summary.policy);
  const replay_result *base = find_nodvfs(runs, n);
  const replay_summary *s0 = &runs[0]->summary;
  json_t *pol = json_object();
  for (size_t i = 0; pol && i < n; i++) {
    json_t *pj = run_summary_json(runs[i], base);
    if (!pj || json_object_set_new(pol, runs[i]->summary.policy, pj) < 0) {
      json_decref(pol);
      pol = NULL;
    }
  }
  const config_cluster *cl = runs[0]->cluster;
  json_t *doc = pol ? json_pack("{s:I, s:I, s:I, s:o, s:s, s:s, s:o, s:o, s:o}", "requests",
                                (json_int_t)s0->requests, "context_tokens", (json_int_t)s0->context_tokens,
                                "generated_tokens", (json_int_t)s0->generated_tokens, "baseline",
                                base ? json_string(config_policy_name(CONFIG_POLICY_NODVFS)) : json_null(),
                                "idle_mode", config_idle_mode_name(cl->idle.mode), "safeguard2",
                                config_safeguard2_name(cl->scheduler.safeguard2), "horizon_s",
                                replay_json_number(s0->horizon_ns * 1e-9), "origin_time_of_day_h",
                                replay_json_number(s0->origin_tod_s / 3600), "policies", pol)
                    : NULL;
  ENPU_RETURN_IF(!doc, err, ENPU_ERR_NOMEM, "out of memory (replay summary)");
  *out = doc;
  return ENPU_OK;
}

/* ---- files ------------------------------------------------------------------------- */

static void put_num(FILE *f, double x, double scale) {
  if (isfinite(x)) fprintf(f, ",%.10g", x * scale);
  else fputc(',', f);
}

static void write_requests(FILE *f, const replay_result *r) {
  static const char *const status[] = {"done", "unservable"};
  fprintf(f,
          "id,arrival_s,context_tokens,generated_tokens,status,served_by,ttft_class,tpot_class,slo_extrapolated,"
          "ttft_slo_ms,tpot_slo_ms,ttft_ms,tpot_ms,finish_s,kv_transfer_ms,energy_j,ttft_met,tpot_met,slo_met\n");
  for (size_t i = 0; i < r->summary.requests; i++) {
    const replay_request_result *q = &r->requests[i];
    fprintf(f, "%zu,%.10g,%d,%d,%s,%s,%s,%s,%d", i, q->arrival_ns * 1e-9, q->context_tokens, q->generated_tokens,
            status[q->status], q->status == REPLAY_DONE ? replay_by_names[q->served_by] : "",
            r->cluster->slo[q->ttft_class].name, r->cluster->slo[q->tpot_class].name, q->slo_extrapolated);
    put_num(f, q->ttft_slo_ns, 1e-6);
    put_num(f, q->tpot_slo_ns, 1e-6);
    put_num(f, q->ttft_ns, 1e-6);
    put_num(f, q->tpot_ns, 1e-6);
    put_num(f, q->finish_ns, 1e-9);
    put_num(f, q->kv_transfer_ns, 1e-6);
    put_num(f, q->energy_nj, 1e-9);
    fprintf(f, ",%d,%d,%d\n", q->ttft_met, q->tpot_met, q->slo_met);
  }
}

static const char *const slack_names[REPLAY_NSLACK] = {"p1", "p25", "mean", "p75", "p99"};

static void write_window_header(FILE *f) {
  fprintf(f, "start_s,length_s,time_of_day_h,peak,arrivals,finished,slo_met,slo_attainment,ttft_attainment,"
             "tpot_attainment,prefill_energy_j,decode_energy_j,prefill_busy_energy_j,decode_busy_energy_j,"
             "prefill_idle_energy_j,decode_idle_energy_j,kv_energy_j,prefill_busy,decode_occupancy,prefill_batches,"
             "decode_batches,prefill_safeguard1,decode_safeguard1,prefill_locked,decode_locked");
  for (int k = 0; k < 2; k++)
    for (int q = 0; q < REPLAY_NSLACK; q++) fprintf(f, ",%s_slack_%s", k ? "tpot" : "ttft", slack_names[q]);
  fputc('\n', f);
}

static void write_windows(FILE *f, const replay_result *r) {
  const config_cluster *cl = r->cluster;
  const int slots = cl->max_batch < cl->max_batch_tokens ? cl->max_batch : cl->max_batch_tokens;
  write_window_header(f);
  for (size_t i = 0; i < r->nwindows; i++) {
    const replay_window *w = &r->windows[i];
    const double tod = fmod(r->summary.origin_tod_s + w->start_ns * 1e-9, 86400.0);
    fprintf(f, "%.10g,%.10g,%.6f,%d,%llu,%llu,%llu", w->start_ns * 1e-9, w->length_ns * 1e-9, tod / 3600,
            replay_is_peak(tod), (unsigned long long)w->arrivals, (unsigned long long)w->finished,
            (unsigned long long)w->slo_met);
    put_num(f, replay_ratio(w->slo_met, w->finished), 1);
    put_num(f, replay_ratio(w->ttft_met, w->finished), 1);
    put_num(f, replay_ratio(w->tpot_met, w->finished), 1);
    for (int ph = 0; ph < CONFIG_NPHASE; ph++) put_num(f, w->busy_energy_nj[ph] + w->idle_energy_nj[ph], 1e-9);
    for (int ph = 0; ph < CONFIG_NPHASE; ph++) put_num(f, w->busy_energy_nj[ph], 1e-9);
    for (int ph = 0; ph < CONFIG_NPHASE; ph++) put_num(f, w->idle_energy_nj[ph], 1e-9);
    put_num(f, w->kv_energy_nj, 1e-9);
    const double len = w->length_ns > 0 ? w->length_ns : NAN;
    put_num(f, w->busy_node_ns[CONFIG_PREFILL] / (cl->node[CONFIG_PREFILL].nodes * len), 1);
    put_num(f, w->occupancy_ns / ((double)cl->node[CONFIG_DECODE].nodes * slots * len), 1);
    fprintf(f, ",%llu,%llu,%llu,%llu,%llu,%llu", (unsigned long long)w->batches[0],
            (unsigned long long)w->batches[1], (unsigned long long)w->safeguard1[0],
            (unsigned long long)w->safeguard1[1], (unsigned long long)w->locked[0],
            (unsigned long long)w->locked[1]);
    for (int q = 0; q < REPLAY_NSLACK; q++) put_num(f, w->ttft_slack[q], 1);
    for (int q = 0; q < REPLAY_NSLACK; q++) put_num(f, w->tpot_slack[q], 1);
    fputc('\n', f);
  }
}

/* coverage.csv: per policy and SLO class, how its requests were served (the counts add
 * up to its requests) and the slack of the served ones. */
static int write_coverage(const char *dir, const replay_result *const *runs, size_t n, enpu_err *err) {
  char path[1200];
  snprintf(path, sizeof path, "%s/coverage.csv", dir);
  FILE *f = NULL;
  ENPU_FORWARD(enpu_file_create(path, &f, err));
  fprintf(f, "policy,class,requests,plan,chunked,fallback,chunked+fallback,unservable,slo_attainment,"
             "ttft_slack_mean,tpot_slack_mean\n");
  for (size_t i = 0; i < n; i++)
    for (int c = 0; c < runs[i]->cluster->slo_count; c++) {
      const replay_class_stats *k = &runs[i]->summary.classes[c];
      fprintf(f, "%s,%s,%llu", runs[i]->summary.policy, runs[i]->cluster->slo[c].name,
              (unsigned long long)k->requests);
      for (int b = 0; b < REPLAY_NBY; b++) fprintf(f, ",%llu", (unsigned long long)k->by[b]);
      fprintf(f, ",%llu", (unsigned long long)k->unservable);
      put_num(f, replay_ratio(k->slo_met, k->requests), 1);
      put_num(f, k->ttft_n ? k->ttft_slack_sum / (double)k->ttft_n : NAN, 1);
      put_num(f, k->tpot_n ? k->tpot_slack_sum / (double)k->tpot_n : NAN, 1);
      fputc('\n', f);
    }
  return enpu_file_publish(f, path, 0, err);
}

/* What a governor (or a fixed speculative configuration) did per window. */
static void write_actions(FILE *f, const replay_result *r) {
  size_t n = 0;
  const replay_gov_window *g = replay_result_gov_windows(r, &n);
  fprintf(
      f, "start_s,prefill_state,decode_state,spec_share,exit_layers,draft_tokens,verify_layers,reward,decisions\n");
  for (size_t i = 0; i < n; i++) {
    fprintf(f, "%.10g", r->windows[i].start_ns * 1e-9);
    put_num(f, g[i].state_mean[CONFIG_PREFILL], 1);
    put_num(f, g[i].state_mean[CONFIG_DECODE], 1);
    put_num(f, g[i].spec_share, 1);
    put_num(f, g[i].exit_mean, 1);
    put_num(f, g[i].draft_mean, 1);
    put_num(f, g[i].verify_mean, 1);
    put_num(f, g[i].reward_mean, 1);
    fprintf(f, ",%llu\n", (unsigned long long)g[i].decisions);
  }
}

static int write_file(const char *dir, const char *name, const char *policy, const replay_result *r,
                      void (*write)(FILE *, const replay_result *), const char *text, enpu_err *err) {
  char path[1200];
  ENPU_RETURN_IF(policy && strchr(policy, '/'), err, ENPU_ERR_INVALID, "policy name '%s' cannot name a file",
                 policy);
  if (policy) snprintf(path, sizeof path, "%s/%s_%s.csv", dir, name, policy);
  else snprintf(path, sizeof path, "%s/%s", dir, name);
  FILE *f = NULL;
  ENPU_FORWARD(enpu_file_create(path, &f, err));
  if (write) write(f, r);
  else fputs(text, f);
  return enpu_file_publish(f, path, 0, err);
}

/* A replay's directory holds one run's files: a CSV of a policy (or of per-request rows)
 * from an earlier run with other options would otherwise sit beside the new summary and
 * read as part of it. Only names this writer makes are removed. */
static int remove_stale_csvs(const char *dir, enpu_err *err) {
  static const char *const prefixes[] = {"requests_", "windows_", "actions_"};
  DIR *d = opendir(dir);
  ENPU_RETURN_IF(!d, err, ENPU_ERR_IO, "cannot list %s: %s", dir, strerror(errno));
  int rc = ENPU_OK;
  for (struct dirent *e; rc == ENPU_OK && (e = readdir(d));) {
    const size_t len = strlen(e->d_name);
    if (len < 4 || strcmp(e->d_name + len - 4, ".csv") != 0) continue;
    for (size_t k = 0; k < sizeof prefixes / sizeof *prefixes; k++) {
      if (strncmp(e->d_name, prefixes[k], strlen(prefixes[k])) != 0) continue;
      char path[1200];
      snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
      if (remove(path) != 0 && errno != ENOENT)
        rc = enpu_errorf(err, ENPU_ERR_IO, "cannot remove the stale %s: %s", path, strerror(errno));
      break;
    }
  }
  closedir(d);
  return rc;
}

int replay_write_outputs(const char *dir, const replay_result *const *runs, size_t n, bool per_request,
                         enpu_err *err) {
  json_t *doc = NULL;
  ENPU_FORWARD(replay_summary_json(runs, n, &doc, err));
  char *text = json_dumps(doc, JSON_INDENT(2) | JSON_REAL_PRECISION(12));
  json_decref(doc);
  ENPU_RETURN_IF(!text, err, ENPU_ERR_NOMEM, "out of memory (summary text)");
  int rc = enpu_mkdir_p(dir, err);
  if (rc == ENPU_OK) rc = remove_stale_csvs(dir, err);
  for (size_t i = 0; rc == ENPU_OK && i < n; i++) {
    if (per_request) rc = write_file(dir, "requests", runs[i]->summary.policy, runs[i], write_requests, NULL, err);
    if (rc == ENPU_OK) rc = write_file(dir, "windows", runs[i]->summary.policy, runs[i], write_windows, NULL, err);
    if (rc == ENPU_OK && (runs[i]->gov.governor || runs[i]->gov.speculative))
      rc = write_file(dir, "actions", runs[i]->summary.policy, runs[i], write_actions, NULL, err);
  }
  size_t len = strlen(text);
  char *nl = realloc(text, len + 2);
  if (nl) {
    text = nl;
    memcpy(text + len, "\n", 2);
  }
  if (rc == ENPU_OK) rc = write_coverage(dir, runs, n, err);
  if (rc == ENPU_OK) rc = write_file(dir, "summary.json", NULL, NULL, NULL, text, err);
  free(text);
  return rc;
}
