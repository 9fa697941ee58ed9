/* validate_run.c — a whole validation (validate.h): the sample and re-simulation per
 * policy, the replay of every policy on the trace, the store rewritten with its
 * validation tables, and the markdown report.
 *
 * Invariants: the store is rewritten only after everything was computed, from its own
 * loaded contents (store_load) through store_writer (temp file, fsync, rename): every
 * table but the validation ones and every content attribute is copied as read, so
 * `enpu store diff` against the previous store shows only the validation tables. A
 * failure before the commit leaves the store as it was. */
#define _XOPEN_SOURCE 700 /* realpath */
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "planstore.h"
#include "replay.h"
#include "validate.h"

void validate_args_default(validate_args *a) {
  *a = (validate_args){.sample = VALIDATE_DEFAULT_SAMPLE,
                       .seed = 1,
                       .tolerance = VALIDATE_DEFAULT_TOLERANCE,
                       .lock_wait_s = STORE_LOCK_WAIT_S};
}

/* Per policy of the store: the checked plans, the strata sampled, the replay. */
typedef struct {
  store_validation_rec *rows;
  size_t nrows, cap;
  size_t reused; /* of nrows: taken from the store (reuse_kept) */
  size_t picked[VALIDATE_NSTRATA], present[VALIDATE_NSTRATA];
  replay_result *replay;
  store_validation_replay_rec summary;
} policy_run;

static void runs_free(policy_run *r, size_t n) {
  for (size_t i = 0; r && i < n; i++) {
    free(r[i].rows);
    replay_result_free(r[i].replay);
  }
  free(r);
}

/* ENPU_ERR_STOPPED once the caller's stop flag is set, saying what the store is. */
static int stopped(const validate_args *a, enpu_err *err) {
  ENPU_RETURN_IF(a->stop && *a->stop, err, ENPU_ERR_STOPPED,
                 "stopped by signal %d during the validation of %s: nothing was published, the store is as it "
                 "was; rerun the same command",
                 (int)*a->stop, a->store_path);
  return ENPU_OK;
}

/* The test hook of validate_args.stop (ENPU_VALIDATE_TEST_HOLD=PHASE). */
static void validate_test_hold(const validate_args *a, const char *phase) {
  const char *v = getenv("ENPU_VALIDATE_TEST_HOLD");
  if (!a->stop || !v || strcmp(v, phase)) return;
  FILE *log = a->log ? a->log : stderr;
  fprintf(log, "validate: test hold at %s: waiting for a stop signal\n", phase);
  fflush(log);
  while (!*a->stop) nanosleep(&(struct timespec){0, 10000000L}, NULL);
}

/* The rows the store holds for bucket bi, when there is one per plan of it: @return the
 * first (rows of one bucket are consecutive, in plan order), or NULL. */
static const store_validation_rec *stored_rows(const store_policy_tables *t, uint32_t bi) {
  size_t n = 0;
  const store_validation_rec *v = store_policy_table(t, STORE_T_VALIDATION, &n);
  for (size_t k = 0; k < n; k++)
    if (v[k].bucket == bi)
      return k + t->buckets[bi].plan_count <= n && v[k + t->buckets[bi].plan_count - 1].bucket == bi ? &v[k] : NULL;
  return NULL;
}

/* Count the plan rows r->rows[r->nrows..+count) into out. */
static void count_rows(const store_policy_tables *t, const policy_run *r, uint32_t count, validate_outcome *out) {
  for (uint32_t p = 0; p < count; p++) {
    const store_validation_rec *o = &r->rows[r->nrows + p];
    out->plans++;
    if (o->pass) {
      out->passed++;
      continue;
    }
    out->failed++;
    if (!out->first_failure[0])
      snprintf(out->first_failure, sizeof out->first_failure, "%s %s batch %d seq %d slack %g: %s", t->name,
               config_phase_name((config_phase)o->phase), o->batch, o->seq, o->slack, o->message);
  }
}

static int check_sampled_plans(validate_ctx *v, const validate_args *a, const store_policy_tables *t, policy_run *r,
                               validate_outcome *out, enpu_err *err) {
  validate_pick *picks = enpu_calloc((size_t)a->sample + 1, sizeof *picks);
  ENPU_RETURN_IF(!picks, err, ENPU_ERR_NOMEM, "out of memory (sample)");
  size_t n = 0;
  int rc = validate_sample(t, a->sample, a->seed, picks, &n, err);
  /* Every sampleable bucket once, for the per-stratum counts of the report. */
  validate_pick *all = rc == 0 ? enpu_calloc(t->nbuckets + 1, sizeof *all) : NULL;
  size_t nall = 0;
  if (rc == 0 && !all) rc = enpu_errorf(err, ENPU_ERR_NOMEM, "out of memory (strata)");
  if (rc == 0 && t->nbuckets) rc = validate_sample(t, (int)t->nbuckets, a->seed, all, &nall, err);
  for (size_t i = 0; rc == 0 && i < nall; i++) r->present[all[i].stratum]++;
  free(all);
  for (size_t i = 0; rc == 0 && i < n && (rc = stopped(a, err)) == 0; i++) {
    const store_bucket_rec *b = &t->buckets[picks[i].bucket];
    if (enpu_grow((void **)&r->rows, &r->cap, r->nrows + b->plan_count, sizeof *r->rows) < 0) {
      rc = enpu_errorf(err, ENPU_ERR_NOMEM, "out of memory (validation rows)");
      break;
    }
    const store_validation_rec *kept = a->reuse_kept ? stored_rows(t, picks[i].bucket) : NULL;
    if (kept) {
      memcpy(r->rows + r->nrows, kept, b->plan_count * sizeof *kept);
      for (uint32_t p = 0; p < b->plan_count; p++) r->rows[r->nrows + p].stratum = picks[i].stratum;
      out->reused_buckets++, r->reused += b->plan_count;
    } else
      rc = validate_bucket(v, t, picks[i].bucket, picks[i].stratum, a->tolerance, r->rows + r->nrows,
                           r->cap - r->nrows, err);
    if (rc < 0) break;
    r->picked[picks[i].stratum]++;
    count_rows(t, r, b->plan_count, out);
    r->nrows += b->plan_count;
    out->buckets++;
  }
  free(picks);
  if (rc < 0 && rc != ENPU_ERR_STOPPED) enpu_err_prefix(err, "policy %s: ", t->name);
  return rc;
}

static void summarise_replay(const validate_args *a, const char *trace, const replay_summary *s,
                             const replay_summary *base, store_validation_replay_rec *o) {
  const replay_phase_stats *p = &s->phase[CONFIG_PREFILL], *d = &s->phase[CONFIG_DECODE];
  *o = (store_validation_replay_rec){.requests = s->requests,
                                     .served = s->served,
                                     .slo_met = s->slo_met,
                                     .slo_attainment = s->slo_attainment,
                                     .energy_nj = s->energy_nj,
                                     .prefill_energy_nj = p->energy_nj,
                                     .decode_energy_nj = d->energy_nj,
                                     .savings_vs_nodvfs = base ? 1 - s->energy_nj / base->energy_nj : NAN,
                                     .ttft_p50_ns = s->ttft_p50_ns,
                                     .ttft_p99_ns = s->ttft_p99_ns,
                                     .tpot_p50_ns = s->tpot_p50_ns,
                                     .tpot_p99_ns = s->tpot_p99_ns,
                                     .batches = p->batches + d->batches,
                                     .slowed = p->slowed + d->slowed,
                                     .locked = p->locked + d->locked,
                                     .seed = a->seed,
                                     .sample = (uint32_t)a->sample,
                                     .tolerance = a->tolerance};
  snprintf(o->trace, sizeof o->trace, "%s", trace);
}

/* The trace as the store records it: relative to the (resolved) store's directory, so
 * the same validation gives the same store whatever the working directory and however
 * the paths were spelled; as given when it cannot be resolved. */
static void trace_label(const validate_args *a, char *out, size_t cap) {
  char trace[PATH_MAX], store[PATH_MAX];
  snprintf(out, cap, "%s", a->trace_path);
  if (!realpath(a->trace_path, trace) || store_resolve_path(a->store_path, store, sizeof store, NULL) < 0) return;
  *strrchr(store, '/') = '\0'; /* resolved paths are absolute: the store's directory */
  size_t common = 0;           /* where the directories the two paths share end (a '/' of trace) */
  for (size_t i = 0;; i++) {
    if ((store[i] == '\0' || store[i] == '/') && trace[i] == '/') common = i;
    if (!store[i] || store[i] != trace[i]) break;
  }
  size_t n = 0;
  for (const char *c = store + common; *c; c++) /* one ".." per directory left in the store's path */
    if (*c == '/' && n + 4 < cap) n += (size_t)snprintf(out + n, cap - n, "../");
  snprintf(out + n, cap - n, "%s", trace + common + 1);
}

static int run_trace_replays(const validate_args *a, const store_contents *c, policy_run *runs, enpu_err *err) {
  replay_setup setup;
  ENPU_FORWARD(replay_setup_init(&setup, a->cluster, &a->job->model, &a->job->chip, err));
  replay_trace *trace = NULL;
  ENPU_FORWARD(replay_trace_load(a->trace_path, false, &trace, err));
  if (trace->unsorted) /* a warning about the input: printed even when progress is not */
    fprintf(a->log ? a->log : stderr,
            "validate: warning: %zu rows of %s are earlier than the row before them (first: line %zu); replayed in "
            "time order\n",
            trace->unsorted, a->trace_path, trace->first_unsorted_line);
  planstore *ps = NULL;
  int rc = planstore_open(a->store_path, &ps, err);
  /* The uniform policy is no plan the scheduler picks by target but the table of online
   * governors: its replay is the ondemand governor's. */
  replay_governor ondemand;
  if (rc == 0) rc = replay_governor_parse("ondemand", &ondemand, err);
  for (size_t i = 0; rc == 0 && i < c->npolicies && (rc = stopped(a, err)) == 0; i++) {
    const bool uniform = config_policy_named(c->policies[i].name, CONFIG_POLICY_UNIFORM);
    const replay_job job = {.policy = uniform ? NULL : c->policies[i].name, .governor = uniform ? &ondemand : NULL};
    rc = replay_run_job(ps, &job, trace, &setup, &runs[i].replay, err);
    if (rc < 0) enpu_err_prefix(err, "replay of policy %s: ", c->policies[i].name);
  }
  /* Savings compare energies over one horizon: the latest end among the policies. */
  replay_result **aligned = rc == 0 ? enpu_calloc(c->npolicies ? c->npolicies : 1, sizeof *aligned) : NULL;
  if (rc == 0 && !aligned) rc = enpu_errorf(err, ENPU_ERR_NOMEM, "out of memory (replays)");
  for (size_t i = 0; rc == 0 && i < c->npolicies; i++) aligned[i] = runs[i].replay;
  if (rc == 0) rc = replay_align_horizon(aligned, c->npolicies, err);
  free(aligned);
  const replay_summary *base = NULL;
  for (size_t i = 0; rc == 0 && i < c->npolicies; i++)
    if (config_policy_named(c->policies[i].name, CONFIG_POLICY_NODVFS))
      base = replay_result_summary(runs[i].replay);
  char trace_as_stored[STORE_MSG_LEN];
  trace_label(a, trace_as_stored, sizeof trace_as_stored);
  for (size_t i = 0; rc == 0 && i < c->npolicies; i++)
    summarise_replay(a, trace_as_stored, replay_result_summary(runs[i].replay), base, &runs[i].summary);
  planstore_close(ps);
  replay_trace_free(trace);
  return rc;
}

/* What a replay depends on besides the plans, which the store's rows do not record: the
 * cluster file's and the trace's contents, as the line validation.md carries
 * ("- Replay inputs: cluster <hash>, trace <hash>"). */
static int inputs_line_of(const validate_args *a, char *out, size_t len, enpu_err *err) {
  char *trace = NULL;
  size_t n = 0;
  ENPU_FORWARD(enpu_read_file_max(a->trace_path, ENPU_TRACE_MAX_BYTES, &trace, &n, err));
  snprintf(out, len, "- Replay inputs: cluster %016llx, trace %016llx\n", (unsigned long long)a->cluster->hash,
           (unsigned long long)enpu_hash64(trace, n, 0));
  free(trace);
  return 0;
}

/* Does the report of the last validation (a->report_path) name these replay inputs? */
static bool same_replay_inputs(const validate_args *a, const char *line) {
  char *md = NULL;
  size_t n = 0;
  enpu_err ignored = {0};
  if (!a->report_path || enpu_read_file(a->report_path, &md, &n, &ignored) < 0) return false;
  const bool same = strstr(md, line) != NULL;
  free(md);
  return same;
}

/* reuse_kept: every policy's stored replay row into runs[i].summary when each has one
 * from a validation with a's trace, sample, seed and tolerance, and its report names the
 * same replay inputs (a cluster or trace edited under the same path changes no plan, so
 * the store kept the rows). @return whether it did. */
static bool reuse_replays(const validate_args *a, const store_contents *c, const char *inputs, policy_run *runs) {
  if (!same_replay_inputs(a, inputs)) return false;
  char trace_as_stored[STORE_MSG_LEN]; /* the rows hold the trace as trace_label spells it */
  trace_label(a, trace_as_stored, sizeof trace_as_stored);
  for (size_t i = 0; i < c->npolicies; i++) {
    size_t n = 0;
    const store_validation_replay_rec *s = store_policy_table(&c->policies[i], STORE_T_VALIDATION_REPLAY, &n);
    if (n != 1 || strcmp(s->trace, trace_as_stored) || s->sample != (uint32_t)a->sample || s->seed != a->seed ||
        s->tolerance != a->tolerance)
      return false;
  }
  for (size_t i = 0; i < c->npolicies; i++)
    memcpy(&runs[i].summary, store_policy_table(&c->policies[i], STORE_T_VALIDATION_REPLAY, &(size_t){0}),
           sizeof runs[i].summary);
  return true;
}

/* Are the validation tables computed the ones the store holds, byte for byte? */
static bool same_tables(const store_contents *c, const policy_run *runs) {
  for (size_t i = 0; i < c->npolicies; i++) {
    size_t n = 0, m = 0;
    const void *v = store_policy_table(&c->policies[i], STORE_T_VALIDATION, &n);
    const void *s = store_policy_table(&c->policies[i], STORE_T_VALIDATION_REPLAY, &m);
    if (n != runs[i].nrows || (n && memcmp(v, runs[i].rows, n * sizeof *runs[i].rows)) || m != 1 ||
        memcmp(s, &runs[i].summary, sizeof runs[i].summary))
      return false;
  }
  return true;
}

/* The store again, with the validation tables replaced. */
static int rewrite_store(const store_lock *lock, const store_contents *c, const policy_run *runs, enpu_err *err) {
  const store_provenance prov = {.cost_model_hash = c->cost_model_hash,
                                 .chip_hash = c->chip_hash,
                                 .model_hash = c->model_hash,
                                 .job_hash = c->job_hash,
                                 .tool_version = c->tool_version,
                                 .job_json = c->job_json,
                                 .model_json = c->model_json,
                                 .chip_json = c->chip_json,
                                 .cluster_json = c->cluster_json,
                                 .added_buckets_json = c->added_buckets_json};
  store_writer *w = NULL;
  ENPU_FORWARD(store_writer_create(lock, &prov, 0, &w, err));
  int rc = 0;
  for (size_t i = 0; rc == 0 && i < c->npolicies; i++) {
    const store_policy_tables *t = &c->policies[i];
    for (int k = 0; rc == 0 && k < STORE_NTABLE; k++) {
      const store_table tab = (store_table)k;
      size_t n = 0;
      const void *rows = store_policy_table(t, tab, &n);
      if (tab == STORE_T_VALIDATION) rows = runs[i].rows, n = runs[i].nrows;
      if (tab == STORE_T_VALIDATION_REPLAY) rows = &runs[i].summary, n = 1;
      rc = store_writer_append(w, t->name, tab, rows, n, err);
    }
  }
  if (rc == 0) rc = store_writer_commit(w, err);
  store_writer_free(w);
  return rc;
}

/* mkdir -p of the directory part of path. */
static int make_parent_dirs(const char *path, enpu_err *err) {
  char buf[CONFIG_PATH_LEN];
  ENPU_RETURN_IF(strlen(path) >= sizeof buf, err, ENPU_ERR_RANGE, "path too long: %s", path);
  snprintf(buf, sizeof buf, "%s", path);
  for (char *p = buf + 1; *p; p++) {
    if (*p != '/') continue;
    *p = 0;
    if (mkdir(buf, 0777) < 0 && errno != EEXIST)
      return enpu_errorf(err, ENPU_ERR_IO, "%s: %s", buf, strerror(errno));
    *p = '/';
  }
  return 0;
}

static void write_markdown(FILE *f, const validate_args *a, const store_contents *c, const policy_run *runs,
                           const validate_outcome *out, const char *inputs) {
  fprintf(f, "# Validation of `%s` (job %s)\n\n", a->store_path, a->job->name);
  fprintf(f, "- Job: %s\n- Trace: `%s`; cluster: %s (%d prefill + %d decode nodes)\n",
          a->job_source ? a->job_source : a->job->path, a->trace_path, a->cluster->name,
          a->cluster->node[CONFIG_PREFILL].nodes, a->cluster->node[CONFIG_DECODE].nodes);
  fprintf(f,
          "- Sample: up to %d buckets per policy, seed %llu, strata phase x batch range x "
          "seq range (%d ranges each); every stored slack of a sampled bucket is checked\n",
          a->sample, (unsigned long long)a->seed, VALIDATE_RANGES);
  fprintf(f,
          "- Check: each plan re-simulated on the real operator order with the full cost "
          "model and V/f transitions; pass when the re-simulated time is within the budget "
          "and time and energy equal the stored values within a relative %g\n",
          a->tolerance);
  fprintf(f,
          "- Result: **%s** — %zu plans in %zu buckets of %zu policies: %zu passed, "
          "%zu failed\n",
          out->failed ? "FAIL" : "PASS", out->plans, out->buckets, out->policies, out->passed, out->failed);
  if (out->reused_buckets || out->reused_replay)
    fprintf(f,
            "- Reused from the store (a farm rerun kept them: their plans did not change): the rows of %zu of "
            "the %zu buckets%s\n",
            out->reused_buckets, out->buckets, out->reused_replay ? " and the replay" : "");
  fprintf(f, "%s\n", inputs);
  fprintf(f, "## Sample per stratum\n\n| policy | stratum | buckets | sampled |\n|---|---|---:|---:|\n");
  for (size_t i = 0; i < c->npolicies; i++)
    for (uint32_t s = 0; s < VALIDATE_NSTRATA; s++) {
      if (!runs[i].present[s]) continue;
      char label[128];
      validate_stratum_label(&c->policies[i], s, label, sizeof label);
      fprintf(f, "| %s | %s | %zu | %zu |\n", c->policies[i].name, label, runs[i].present[s], runs[i].picked[s]);
    }
  fprintf(f, "\n## Re-simulated plans\n\nTimes in ms, energies in mJ (one forward pass).\n\n"
             "| policy | phase | batch | seq | slack | budget | stored time | re-sim time | "
             "stored energy | re-sim energy | result |\n"
             "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---|\n");
  for (size_t i = 0; i < c->npolicies; i++)
    for (size_t k = 0; k < runs[i].nrows; k++) {
      const store_validation_rec *o = &runs[i].rows[k];
      fprintf(f, "| %s | %s | %d | %d | %g | %.6f | %.6f | %.6f | %.6f | %.6f | %s%s%s |\n", c->policies[i].name,
              config_phase_name((config_phase)o->phase), o->batch, o->seq, o->slack, o->budget_ns * 1e-6,
              o->stored_time_ns * 1e-6, o->sim_time_ns * 1e-6, o->stored_energy_nj * 1e-6, o->sim_energy_nj * 1e-6,
              o->pass ? "pass" : "FAIL", o->pass ? "" : ": ", o->message);
    }
  fprintf(f,
          "\n## Replay of the trace per policy\n\n%llu requests. Energy over the whole "
          "replay (busy + idle chips); savings vs " ENPU_POLICY_NAME_NODVFS " on the same trace.\n\n"
          "| policy | served | SLO attainment | energy (kJ) | savings vs " ENPU_POLICY_NAME_NODVFS " | "
          "TTFT p50 / p99 (ms) | TPOT p50 / p99 (ms) | batches | slowed | locked |\n"
          "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n",
          c->npolicies ? (unsigned long long)runs[0].summary.requests : 0ull);
  for (size_t i = 0; i < c->npolicies; i++) {
    const store_validation_replay_rec *s = &runs[i].summary;
    fprintf(f, "| %s | %llu | %.2f %% | %.1f | %.2f %% | %.1f / %.1f | %.1f / %.1f | %llu | %llu | %llu |\n",
            c->policies[i].name, (unsigned long long)s->served, 100 * s->slo_attainment, s->energy_nj * 1e-12,
            100 * s->savings_vs_nodvfs, s->ttft_p50_ns * 1e-6, s->ttft_p99_ns * 1e-6, s->tpot_p50_ns * 1e-6,
            s->tpot_p99_ns * 1e-6, (unsigned long long)s->batches, (unsigned long long)s->slowed,
            (unsigned long long)s->locked);
  }
  if (out->failed) fprintf(f, "\nFirst failure: %s\n", out->first_failure);
}

static int write_validation_md(const validate_args *a, const store_contents *c, const policy_run *runs,
                               const validate_outcome *out, const char *inputs, enpu_err *err) {
  ENPU_FORWARD(make_parent_dirs(a->report_path, err));
  FILE *f = NULL;
  ENPU_FORWARD(enpu_file_create(a->report_path, &f, err));
  write_markdown(f, a, c, runs, out, inputs);
  return enpu_file_publish(f, a->report_path, 0, err);
}

/* validate_run with the store's lock held. */
static int run_locked(const validate_args *a, const store_lock *lock, validate_outcome *out, enpu_err *err) {
  const double t0 = enpu_now_s();
  store_contents *c = NULL;
  ENPU_FORWARD(store_load(store_lock_path(lock), &c, err));
  validate_ctx *v = NULL;
  policy_run *runs = enpu_calloc(c->npolicies + 1, sizeof *runs);
  int rc = runs ? validate_ctx_create(a->job, &v, err)
                : enpu_errorf(err, ENPU_ERR_NOMEM, "out of memory (policies)");
  out->policies = c->npolicies;
  for (size_t i = 0; rc == 0 && i < c->npolicies; i++) {
    rc = check_sampled_plans(v, a, &c->policies[i], &runs[i], out, err);
    if (rc == 0 && a->log)
      fprintf(a->log, "validate: %s: %zu plans re-simulated, %zu taken from the store\n", c->policies[i].name,
              runs[i].nrows - runs[i].reused, runs[i].reused);
  }
  out->resim_s = enpu_now_s() - t0;
  if (rc == 0) validate_test_hold(a, "resim");
  if (rc == 0) rc = stopped(a, err);
  char inputs[128] = "";
  if (rc == 0) rc = inputs_line_of(a, inputs, sizeof inputs, err);
  if (rc == 0) out->reused_replay = a->reuse_kept && reuse_replays(a, c, inputs, runs);
  if (rc == 0 && !out->reused_replay) rc = run_trace_replays(a, c, runs, err);
  out->replay_s = enpu_now_s() - t0 - out->resim_s;
  if (rc == 0) out->unchanged = out->reused_replay && out->reused_buckets == out->buckets && same_tables(c, runs);
  if (rc == 0) validate_test_hold(a, "publish");
  if (rc == 0) rc = stopped(a, err); /* the last moment the store is as it was */
  if (rc == 0 && !out->unchanged) rc = rewrite_store(lock, c, runs, err);
  if (rc == 0) validate_test_hold(a, "report");
  if (rc == 0 && a->report_path) rc = write_validation_md(a, c, runs, out, inputs, err);
  out->total_s = enpu_now_s() - t0;
  validate_ctx_free(v);
  runs_free(runs, c->npolicies);
  store_contents_free(c);
  return rc;
}

int validate_run(const validate_args *a, validate_outcome *out, enpu_err *err) {
  memset(out, 0, sizeof *out);
  ENPU_RETURN_IF(a->sample < 1 || !(a->tolerance >= 0), err, ENPU_ERR_INVALID,
                 "bad validation options (sample %d, tolerance %g)", a->sample, a->tolerance);
  /* The provenance check `enpu replay` makes: a cluster of other node parallelism,
   * chips, model or chip would replay plans that mean nothing for it and write rows
   * that say they passed. */
  char warning[ENPU_ERR_MSG_LEN];
  ENPU_FORWARD(
      replay_check_store(a->store_path, a->cluster, &a->job->model, &a->job->chip, warning, sizeof warning, err));
  if (warning[0] && a->log) fprintf(a->log, "validate: warning: %s\n", warning);
  /* a trace that cannot be read (missing, no regular file, too large) is found now, not
   * after the re-simulation */
  int fd;
  ENPU_FORWARD(enpu_open_input(a->trace_path, ENPU_TRACE_MAX_BYTES, &fd, NULL, err));
  close(fd);
  if (a->lock) return run_locked(a, a->lock, out, err);
  /* The store is read, re-simulated and rewritten under one lock: a farm checkpointing
   * in between would otherwise be overwritten with the older contents read here. */
  char command[CONFIG_PATH_LEN + 32];
  snprintf(command, sizeof command, "enpu validate %s", a->store_path);
  store_lock *lock = NULL;
  ENPU_FORWARD(store_lock_acquire_until(a->store_path, command, a->lock_wait_s, a->stop, a->log, &lock, err));
  const int rc = run_locked(a, lock, out, err);
  store_lock_release(lock);
  return rc;
}
