/* replay_output.c — a run's results as files: per-request CSV, per-window CSV and the
 * summary JSON across policies (energy savings against the nodvfs run of the same
 * trace). Numbers are printed with enough digits to round-trip the quantities compared
 * by tests; NaN (not applicable) is an empty CSV field and JSON null. */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "replay_internal.h"

static json_t *jnum(double x) { return isfinite(x) ? json_real(x) : json_null(); }

static json_t *phase_pair(double prefill, double decode, double total) {
  return json_pack("{s:o, s:o, s:o}", "prefill", jnum(prefill), "decode", jnum(decode), "total", jnum(total));
}

static const replay_result *find_nodvfs(const replay_result *const *runs, size_t n) {
  for (size_t i = 0; i < n; i++)
    if (!strcmp(runs[i]->summary.policy, "nodvfs")) return runs[i];
  return NULL;
}

static double savings(double e, double base) { return base > 0 ? 1.0 - e / base : NAN; }

static json_t *policy_json(const replay_summary *s, const replay_summary *base) {
  const replay_phase_stats *p = &s->phase[REPLAY_PREFILL], *d = &s->phase[REPLAY_DECODE];
  const double req = (double)s->requests;
  json_t *batches = json_object();
  for (int ph = 0; ph < REPLAY_NPHASE; ph++) {
    const replay_phase_stats *st = &s->phase[ph];
    json_object_set_new(batches, ph ? "decode" : "prefill",
                        json_pack("{s:I, s:I, s:I, s:I, s:I}", "total", (json_int_t)st->batches, "slowed",
                                  (json_int_t)st->slowed, "safeguard1", (json_int_t)st->safeguard1, "locked",
                                  (json_int_t)st->locked, "late", (json_int_t)st->late));
  }
  json_t *sav = json_null();
  if (base)
    sav = phase_pair(savings(p->energy_nj, base->phase[REPLAY_PREFILL].energy_nj),
                     savings(d->energy_nj, base->phase[REPLAY_DECODE].energy_nj), savings(s->energy_nj, base->energy_nj));
  json_t *busy_sav = json_null();
  if (base)
    busy_sav = phase_pair(savings(p->busy_energy_nj, base->phase[REPLAY_PREFILL].busy_energy_nj),
                          savings(d->busy_energy_nj, base->phase[REPLAY_DECODE].busy_energy_nj),
                          savings(p->busy_energy_nj + d->busy_energy_nj,
                                  base->phase[REPLAY_PREFILL].busy_energy_nj + base->phase[REPLAY_DECODE].busy_energy_nj));
  return json_pack(
      "{s:I, s:I, s:I, s:o, s:o, s:o, s:o, s:o, s:o, s:o, s:o, s:o, s:o, s:o, s:o, s:o, s:o, s:o}",
      "requests", (json_int_t)s->requests, "served", (json_int_t)s->served, "uncovered", (json_int_t)s->uncovered,
      "uncovered_example", s->uncovered_example[0] ? json_string(s->uncovered_example) : json_null(),
      "slo_attainment", jnum(s->slo_attainment), "ttft_attainment", jnum(req ? (double)s->ttft_met / req : NAN),
      "tpot_attainment", jnum(req ? (double)s->tpot_met / req : NAN), "energy_j",
      phase_pair(p->energy_nj * 1e-9, d->energy_nj * 1e-9, s->energy_nj * 1e-9), "busy_energy_j",
      phase_pair(p->busy_energy_nj * 1e-9, d->busy_energy_nj * 1e-9, (p->busy_energy_nj + d->busy_energy_nj) * 1e-9),
      "idle_energy_j",
      phase_pair(p->idle_energy_nj * 1e-9, d->idle_energy_nj * 1e-9, (p->idle_energy_nj + d->idle_energy_nj) * 1e-9),
      "energy_savings", sav, "busy_energy_savings", busy_sav, "ttft_ms",
      json_pack("{s:o, s:o}", "p50", jnum(s->ttft_p50_ns * 1e-6), "p99", jnum(s->ttft_p99_ns * 1e-6)), "tpot_ms",
      json_pack("{s:o, s:o}", "p50", jnum(s->tpot_p50_ns * 1e-6), "p99", jnum(s->tpot_p99_ns * 1e-6)), "batches",
      batches, "kv_transfer",
      json_pack("{s:o, s:o, s:o}", "total_s", jnum(s->kv_transfer_total_ns * 1e-9), "mean_ms",
                jnum(s->kv_transfer_mean_ns * 1e-6), "bytes", jnum(s->kv_bytes)),
      "tokens",
      json_pack("{s:I, s:I, s:I, s:I}", "prefill_run", (json_int_t)p->tokens, "prefill_padded",
                (json_int_t)p->padded_tokens, "decode_generated", (json_int_t)d->tokens, "decode_padded",
                (json_int_t)d->padded_tokens),
      "end_s", jnum(s->end_ns * 1e-9));
}

int replay_summary_json(const replay_result *const *runs, size_t n, json_t **out, enpu_err *err) {
  *out = NULL;
  ENPU_RETURN_IF(n == 0, err, ENPU_ERR_INVALID, "replay summary: no runs");
  const replay_result *base = find_nodvfs(runs, n);
  const replay_summary *s0 = &runs[0]->summary;
  json_t *pol = json_object();
  for (size_t i = 0; pol && i < n; i++) {
    json_t *pj = policy_json(&runs[i]->summary, base ? &base->summary : NULL);
    if (!pj || json_object_set_new(pol, runs[i]->summary.policy, pj) < 0) {
      json_decref(pol);
      pol = NULL;
    }
  }
  json_t *doc = pol ? json_pack("{s:I, s:I, s:I, s:o, s:o}", "requests", (json_int_t)s0->requests,
                                "context_tokens", (json_int_t)s0->context_tokens, "generated_tokens",
                                (json_int_t)s0->generated_tokens, "baseline", base ? json_string("nodvfs") : json_null(),
                                "policies", pol)
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
  static const char *const status[] = {"done", "uncovered-prefill", "uncovered-decode"};
  fprintf(f, "id,arrival_s,context_tokens,generated_tokens,status,ttft_class,tpot_class,ttft_ms,tpot_ms,"
             "finish_s,kv_transfer_ms,energy_j,ttft_met,tpot_met,slo_met\n");
  for (size_t i = 0; i < r->summary.requests; i++) {
    const replay_request_result *q = &r->requests[i];
    fprintf(f, "%zu,%.10g,%d,%d,%s,%s,%s", i, q->arrival_ns * 1e-9, q->context_tokens, q->generated_tokens,
            status[q->status], r->cluster->slo[q->ttft_class].name, r->cluster->slo[q->tpot_class].name);
    put_num(f, q->ttft_ns, 1e-6);
    put_num(f, q->tpot_ns, 1e-6);
    put_num(f, q->finish_ns, 1e-9);
    put_num(f, q->kv_transfer_ns, 1e-6);
    put_num(f, q->energy_nj, 1e-9);
    fprintf(f, ",%d,%d,%d\n", q->ttft_met, q->tpot_met, q->slo_met);
  }
}

static void write_windows(FILE *f, const replay_result *r) {
  fprintf(f, "start_s,length_s,arrivals,finished,slo_met,slo_attainment,prefill_energy_j,decode_energy_j,"
             "prefill_busy,decode_busy,prefill_batches,decode_batches,prefill_locked,decode_locked\n");
  for (size_t i = 0; i < r->nwindows; i++) {
    const replay_window *w = &r->windows[i];
    fprintf(f, "%.10g,%.10g,%llu,%llu,%llu", w->start_ns * 1e-9, w->length_ns * 1e-9,
            (unsigned long long)w->arrivals, (unsigned long long)w->finished, (unsigned long long)w->slo_met);
    put_num(f, w->finished ? (double)w->slo_met / (double)w->finished : NAN, 1);
    put_num(f, w->energy_nj[REPLAY_PREFILL], 1e-9);
    put_num(f, w->energy_nj[REPLAY_DECODE], 1e-9);
    for (int ph = 0; ph < REPLAY_NPHASE; ph++)
      put_num(f, w->length_ns > 0 ? w->busy_node_ns[ph] / (r->cluster->node[ph].nodes * w->length_ns) : NAN, 1);
    fprintf(f, ",%llu,%llu,%llu,%llu\n", (unsigned long long)w->batches[REPLAY_PREFILL],
            (unsigned long long)w->batches[REPLAY_DECODE], (unsigned long long)w->batches_locked[REPLAY_PREFILL],
            (unsigned long long)w->batches_locked[REPLAY_DECODE]);
  }
}

static int write_file(const char *dir, const char *name, const char *policy, const replay_result *r,
                      void (*write)(FILE *, const replay_result *), const char *text, enpu_err *err) {
  char path[1200];
  ENPU_RETURN_IF(policy && strchr(policy, '/'), err, ENPU_ERR_INVALID, "policy name '%s' cannot name a file",
                 policy);
  if (policy) snprintf(path, sizeof path, "%s/%s_%s.csv", dir, name, policy);
  else snprintf(path, sizeof path, "%s/%s", dir, name);
  FILE *f = fopen(path, "w");
  ENPU_RETURN_IF(!f, err, ENPU_ERR_IO, "cannot write %s: %s", path, strerror(errno));
  if (write) write(f, r);
  else fputs(text, f);
  const int bad = ferror(f);
  ENPU_RETURN_IF(fclose(f) != 0 || bad, err, ENPU_ERR_IO, "error writing %s", path);
  return ENPU_OK;
}

int replay_write_outputs(const char *dir, const replay_result *const *runs, size_t n, enpu_err *err) {
  ENPU_FORWARD(enpu_mkdir_p(dir, err));
  for (size_t i = 0; i < n; i++) {
    ENPU_FORWARD(write_file(dir, "requests", runs[i]->summary.policy, runs[i], write_requests, NULL, err));
    ENPU_FORWARD(write_file(dir, "windows", runs[i]->summary.policy, runs[i], write_windows, NULL, err));
  }
  json_t *doc = NULL;
  ENPU_FORWARD(replay_summary_json(runs, n, &doc, err));
  char *text = json_dumps(doc, JSON_INDENT(2) | JSON_REAL_PRECISION(12));
  json_decref(doc);
  ENPU_RETURN_IF(!text, err, ENPU_ERR_NOMEM, "out of memory (summary text)");
  size_t len = strlen(text);
  char *nl = realloc(text, len + 2);
  if (nl) {
    text = nl;
    memcpy(text + len, "\n", 2);
  }
  int rc = write_file(dir, "summary.json", NULL, NULL, NULL, text, err);
  free(text);
  return rc;
}
