/* farm_job.c — one job of a farm run on the master (farm_job_internal.h), the part that
 * touches files: its store lock, the previous store and the journal read back into the
 * result state, the plan built over them (farm_plan.c), checkpoints, and the job's end
 * (its bucket counts, then farm_options.finish_job: the caller's summary.md and
 * validation). Scheduling is farm_sched.c; no MPI here: farm.c moves the bytes.
 *
 * Invariants: see farm_job_internal.h. In short: only results go into the store, and
 * farm_state_checkpoint orders them by key, so the content never depends on the rank
 * count, arrival order or resume; an op's parts merge into the same op result whatever
 * order they arrive in (farm_merge_parts). */
#include <errno.h>
#include <jansson.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "farm_job_internal.h"

#ifndef ENPU_TOOL_VERSION
#define ENPU_TOOL_VERSION "0.0.0"
#endif

/* ---------------------------------------------------------------------------------
 * Setup: the store, the journal, the plan */

static int journal_record(void *user, uint32_t kind, const void *payload, size_t bytes, enpu_err *err) {
  farm_job *m = user;
  if (kind == FARM_REC_JOB) return 0; /* checked before (check_journal_identity) */
  if (kind == FARM_REC_PART) {
    farm_op_result r;
    uint32_t part;
    ENPU_FORWARD(farm_part_result_decode(payload, bytes, &part, &r, err));
    const int rc = farm_job_keep_part(m, part, &r, err);
    farm_op_result_free(&r);
    return rc;
  }
  if (kind == FARM_REC_OP) {
    farm_op_result r;
    ENPU_FORWARD(farm_op_result_decode(payload, bytes, &r, err));
    return farm_state_add_op(m->state, &r, err);
  }
  ENPU_RETURN_IF(kind != FARM_REC_BUCKET, err, ENPU_ERR_FORMAT, "%s: record of unknown kind %u", m->journal_path,
                 kind);
  farm_bucket_result r;
  ENPU_FORWARD(farm_bucket_result_decode(payload, bytes, &r, err));
  return farm_state_add_bucket(m->state, &r, err);
}

static void summary_counts(farm_job *m) {
  farm_summary *s = m->sum;
  s->npolicies = m->job->policy_count;
  for (int p = 0; p < m->job->policy_count; p++) {
    s->policies[p] = m->plan.code[p];
    config_job_policy_name(m->job, &m->job->policies[p], s->policy_names[p]);
    for (int i = 0; i < m->plan.nops; i++) s->unique_ops[p] += m->plan.ops[i].policy == m->plan.op_code[p];
    if (m->job->policies[p].variant == 0) continue;
    config_policy_spec op;
    config_policy_spec_decode(m->plan.op_code[p], &op);
    s->variant_ops += s->unique_ops[p];
    s->variant_reuse += op.variant == 0 ? s->unique_ops[p] : 0;
  }
  s->variants = m->job->variant_count;
}

/* One writer per store (store_lock): a second farm would write the same temporary file
 * and journal, `enpu validate` would publish an older snapshot over a checkpoint; and the
 * ranks of a farm whose mpirun was killed can outlive it for a while, which the lock's
 * wait covers. The store, its journal and the lock all live at the resolved path, so a
 * symbolic link to a store is the same store. */
static int lock_store(farm_job *m, const char *store, enpu_err *err) {
  const char *slash = strrchr(store, '/');
  if (slash && slash > store) {
    char dir[CONFIG_PATH_LEN];
    snprintf(dir, sizeof dir, "%.*s", (int)(slash - store), store);
    ENPU_FORWARD(enpu_mkdir_p(dir, err));
  }
  char command[2 * CONFIG_PATH_LEN];
  snprintf(command, sizeof command, "enpu farm %s", m->job_path);
  ENPU_FORWARD(store_lock_acquire_until(store, command, m->o.lock_wait_s, m->stop, m->o.quiet ? NULL : m->o.log,
                                        &m->lock, err));
  const char *resolved = store_lock_path(m->lock);
  ENPU_RETURN_IF(strlen(resolved) >= sizeof m->store_path, err, ENPU_ERR_RANGE,
                 "store path longer than %zu bytes: %s", sizeof m->store_path - 1, resolved);
  snprintf(m->store_path, sizeof m->store_path, "%s", resolved);
  ENPU_RETURN_IF(
      store_sibling_path(m->store_path, STORE_SIBLING_JOURNAL, m->journal_path, sizeof m->journal_path) < 0, err,
      ENPU_ERR_RANGE, "the journal's path beside %s is too long", m->store_path);
  return 0;
}

/* An integrity warning: on the log even when quiet, and in the job's summary. */
static void warn(farm_job *m, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void warn(farm_job *m, const char *fmt, ...) {
  char msg[ENPU_ERR_MSG_LEN + 2 * CONFIG_PATH_LEN];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  fprintf(m->o.log, "farm: warning: %s\n", msg);
  fflush(m->o.log);
  farm_summary *s = m->sum;
  if (s->nwarnings < FARM_WARNINGS_MAX)
    snprintf(s->warnings[s->nwarnings], FARM_WARNING_LEN, "%.*s", FARM_WARNING_LEN - 1, msg);
  s->nwarnings++;
}

/* A job's identity: what names the plans a store holds. Content (model sizes, chip
 * tables, slacks, buckets, policies) is not part of it, so a changed model or grid of
 * the same job is an incremental rerun; another job's name, or the same name on another
 * model, chip or cluster, is another job. */
typedef struct {
  char job[CONFIG_NAME_LEN], model[CONFIG_NAME_LEN], chip[CONFIG_NAME_LEN], cluster[CONFIG_NAME_LEN];
} job_identity;

/* The "name" of a stored JSON document ("?" when absent or unreadable). */
static void stored_name(const char *json, char out[CONFIG_NAME_LEN]) {
  json_t *doc = json ? json_loads(json, 0, NULL) : NULL;
  const char *name = json_string_value(json_object_get(doc, "name"));
  snprintf(out, CONFIG_NAME_LEN, "%s", name ? name : "?");
  json_decref(doc);
}

/* Stored names against the job's; a name the store lacks ("?") does not count. */
static int same_identity(const job_identity *had, const job_identity *want) {
  const char *h[] = {had->job, had->model, had->chip, had->cluster};
  const char *w[] = {want->job, want->model, want->chip, want->cluster};
  for (int i = 0; i < 4; i++)
    if (strcmp(h[i], "?") && strcmp(h[i], w[i])) return 0;
  return 1;
}

/* This farm's job. */
static void job_identity_of(const farm_job *m, job_identity *id) {
  snprintf(id->job, sizeof id->job, "%s", m->job->name);
  snprintf(id->model, sizeof id->model, "%s", m->job->model.name);
  snprintf(id->chip, sizeof id->chip, "%s", m->job->chip.name);
  snprintf(id->cluster, sizeof id->cluster, "%s", m->job->cluster.name);
}

/* Refuse the `work` of another job that `holder` holds (the store's plans, the journal's
 * unfinished work), unless --replace: then *replaced is set and a warning names it. */
static int refuse_other_job(farm_job *m, const job_identity *had, const char *holder, const char *work,
                            int *replaced, enpu_err *err) {
  job_identity want;
  job_identity_of(m, &want);
  *replaced = 0;
  if (same_identity(had, &want)) return 0;
  ENPU_RETURN_IF(!m->o.replace, err, ENPU_ERR_INVALID,
                 "refusing to farm job \"%s\" (model %s, chip %s, cluster %s; %s) into %s: %s holds the %s of job "
                 "\"%s\" (model %s, chip %s, cluster %s). Give this job its own --store, or --replace to discard "
                 "the other job's %s",
                 want.job, want.model, want.chip, want.cluster, m->job_path, m->store_path, holder, work, had->job,
                 had->model, had->chip, had->cluster, work);
  warn(m, "--replace: %s held the %s of job \"%s\" (model %s, chip %s, cluster %s); replaced by job \"%s\"'s",
       holder, work, had->job, had->model, had->chip, had->cluster, want.job);
  *replaced = 1;
  return 0;
}

/* Refuse a store compiled for another job, unless --replace: then its results are not
 * loaded (*replaced set) and the next checkpoint writes the new job over it. */
static int check_identity(farm_job *m, int *replaced, enpu_err *err) {
  *replaced = 0;
  store_contents *c = NULL;
  if (store_load_provenance(m->store_path, &c, err) < 0) return 0; /* load_previous judges the damage */
  job_identity had;
  stored_name(c->job_json, had.job), stored_name(c->model_json, had.model);
  stored_name(c->chip_json, had.chip), stored_name(c->cluster_json, had.cluster);
  int rc = refuse_other_job(m, &had, m->store_path, "plans", replaced, err);
  if (rc == 0 && !*replaced) rc = farm_changes_find(c, m->job, m->sum, err);
  store_contents_free(c);
  return rc;
}

/* The identity a journal starts with: {"job", "model", "chip", "cluster"} (malloc'd). */
static char *journal_identity_json(const farm_job *m) {
  job_identity id;
  job_identity_of(m, &id);
  json_t *doc = json_pack("{s:s, s:s, s:s, s:s}", "job", id.job, "model", id.model, "chip", id.chip, "cluster",
                          id.cluster);
  char *text = doc ? json_dumps(doc, JSON_COMPACT | JSON_SORT_KEYS) : NULL;
  json_decref(doc);
  return text;
}

/* A journal left by another job's farm (killed before its first checkpoint, or beside
 * another job's store) holds that job's unfinished work: refused as its store would be,
 * before anything is read or moved; with --replace it is removed (as a name), as is one
 * of another job that holds no work. A journal without an identity (version 3) is taken
 * as this job's, as a store without names is. */
static int check_journal_identity(farm_job *m, enpu_err *err) {
  farm_buf b = {0};
  int64_t work_bytes = 0;
  const int rc = farm_journal_identity(m->journal_path, &b, &work_bytes, err);
  json_t *doc = rc == 0 && b.len ? json_loadb((const char *)b.data, b.len, 0, NULL) : NULL;
  farm_buf_free(&b);
  if (!doc) return rc;
  job_identity had;
  const char *key[] = {"job", "model", "chip", "cluster"};
  char *field[] = {had.job, had.model, had.chip, had.cluster};
  for (int i = 0; i < 4; i++) {
    const char *v = json_string_value(json_object_get(doc, key[i]));
    snprintf(field[i], CONFIG_NAME_LEN, "%s", v ? v : "?");
  }
  json_decref(doc);
  job_identity want;
  job_identity_of(m, &want);
  int replaced = work_bytes == 0 && !same_identity(&had, &want);
  if (!replaced) ENPU_FORWARD(refuse_other_job(m, &had, m->journal_path, "unfinished work", &replaced, err));
  ENPU_RETURN_IF(replaced && unlink(m->journal_path) != 0, err, enpu_errno_code(errno), "cannot remove %s: %s",
                 m->journal_path, strerror(errno));
  return 0;
}

/* The previous store's results. A store of this job is reused. A plan store that is
 * damaged, or of another format version, is recomputed (its content cannot be trusted;
 * the next checkpoint replaces it). A file that is no readable plan store at all
 * (truncated, zeroed, garbage) where a farm has run (its journal is beside it) is moved
 * aside to `<store>.damaged-<n>`, never overwritten, and recomputed with what the
 * journal holds; without a journal it is no store of a farm, and an input error, so
 * that a mistyped --store never touches someone's file. */
static int load_previous(farm_job *m, enpu_err *err) {
  int replaced = 0;
  ENPU_FORWARD(check_identity(m, &replaced, err));
  ENPU_FORWARD(check_journal_identity(m, err)); /* after the store's refusal, before any move */
  if (replaced) return 0;
  int64_t nops = 0, nbuckets = 0;
  int rc = farm_state_load_job_store(m->state, m->job, m->store_path, &nops, &nbuckets, &m->added_json, err);
  uint32_t version = 0;
  enpu_err probe = {0};
  if (rc != ENPU_ERR_FORMAT) return rc;
  if (store_probe(m->store_path, &version, &probe) == 0) {
    warn(m, "%s (format_version %u) cannot be reused, every result is recomputed: %s", m->store_path, version,
         err->msg);
  } else {
    struct stat st; /* a farm leaves its journal beside the store; none: not a store of ours */
    ENPU_RETURN_IF(lstat(m->journal_path, &st) != 0 || !S_ISREG(st.st_mode), err, ENPU_ERR_FORMAT,
                   "%s, and no farm journal is beside it (%s), so no farm wrote it there: left as it is "
                   "(a mistyped --store?); move it away to compile a store at this path",
                   probe.msg, m->journal_path);
    char aside[CONFIG_PATH_LEN + 16];
    ENPU_FORWARD(enpu_file_move_aside(m->store_path, ".damaged", aside, sizeof aside, err));
    warn(m,
         "%s, not a plan store to reuse: moved it aside to %s; every result the journal does not hold is "
         "recomputed",
         probe.msg, aside);
  }
  farm_state_free(m->state);
  m->state = NULL;
  return farm_state_create(&m->state, err);
}

/* The journal's results; what it could not give back is said (the farm recomputes it). */
static int read_journal(farm_job *m, enpu_err *err) {
  farm_journal_stats st;
  ENPU_FORWARD(farm_journal_replay(m->journal_path, journal_record, m, &st, err));
  if (st.skipped_bytes > 0)
    warn(m, "%s: skipped %lld damaged bytes between intact records (%lld replayed)", m->journal_path,
         (long long)st.skipped_bytes, (long long)st.records);
  /* A torn tail is what a kill leaves: expected, a note. */
  if (m->o.quiet) return 0;
  if (st.dropped_bytes > 0)
    fprintf(m->o.log, "farm: %s: dropped a torn tail of %lld bytes after %lld records\n", m->journal_path,
            (long long)st.dropped_bytes, (long long)st.records);
  return 0;
}

/* The journal opened to append, starting with this job's identity; one that was no
 * journal was moved aside, which is said. */
static int open_journal(farm_job *m, enpu_err *err) {
  char *identity = journal_identity_json(m);
  ENPU_RETURN_IF(!identity, err, ENPU_ERR_NOMEM, "out of memory (journal identity)");
  const int rc = farm_journal_open(m->journal_path, identity, strlen(identity), &m->journal, err);
  free(identity);
  ENPU_FORWARD(rc);
  if (farm_journal_aside(m->journal))
    warn(m,
         "%s is not a farm journal (bad header): moved aside to %s; results since the last checkpoint are "
         "recomputed",
         m->journal_path, farm_journal_aside(m->journal));
  return 0;
}

/* The job's validation runs after every task: a trace it cannot read is found now,
 * before the first task, not after the whole farm. */
static int check_validation_input(const farm_job *m, enpu_err *err) {
  if (!m->job->validation.enabled) return 0;
  int fd;
  const int rc = enpu_open_input(m->job->validation.trace_path, ENPU_TRACE_MAX_BYTES, &fd, NULL, err);
  if (rc < 0) {
    enpu_err_prefix(err, "%s: validation trace: ", m->job_path);
    return rc == ENPU_ERR_ENV ? rc : ENPU_ERR_IO;
  }
  close(fd);
  return 0;
}

/* --point k: the job's policies on sweep point k only (their codes, and so their keys,
 * stay those of the whole job: a later run of the whole job reuses the results). */
static int keep_point(farm_job *m, enpu_err *err) {
  config_job *job = m->job;
  ENPU_RETURN_IF(m->o.point > job->variant_count, err, ENPU_ERR_INVALID,
                 "%s: --point %d: the job has %d sweep points (0: its own chip, 1..%d)", m->job_path, m->o.point,
                 job->variant_count, job->variant_count);
  int n = 0;
  for (int k = 0; k < job->policy_count; k++)
    if (job->policies[k].variant == m->o.point) job->policies[n++] = job->policies[k];
  job->policy_count = n;
  return ENPU_OK;
}

/* --reuse: the results of other stores of this job (a point's, by --point) as known. */
static int load_reused(farm_job *m, enpu_err *err) {
  for (int i = 0; i < m->o.nreuse; i++) {
    int64_t ops = 0, buckets = 0;
    ENPU_FORWARD(farm_state_load_job_store(m->state, m->job, m->o.reuse[i], &ops, &buckets, NULL, err));
    ENPU_RETURN_IF(ops + buckets == 0, err, ENPU_ERR_INVALID, "--reuse %s: no results in it (is it a store?)",
                   m->o.reuse[i]);
  }
  return ENPU_OK;
}

static int job_setup(farm_job *m, const char *store_path, enpu_err *err) {
  ENPU_FORWARD(config_job_load_from(m->inputs, m->job_path, &m->job, err));
  if (m->o.capacity_factor) ENPU_FORWARD(config_job_set_capacity_factor(m->job, m->o.capacity_factor, err));
  if (m->o.point >= 0) ENPU_FORWARD(keep_point(m, err));
  ENPU_FORWARD(check_validation_input(m, err));
  snprintf(m->sum->job, sizeof m->sum->job, "%s", m->job->name);
  ENPU_FORWARD(lock_store(m, store_path ? store_path : m->job->store_path, err));
  snprintf(m->sum->store_path, sizeof m->sum->store_path, "%s", m->store_path);
  ENPU_FORWARD(farm_state_create(&m->state, err));
  ENPU_FORWARD(load_previous(m, err));
  ENPU_FORWARD(load_reused(m, err));
  ENPU_FORWARD(farm_plan_build(&m->plan, m->job, m->o.add, m->o.nadd, &m->added_json, m->store_path, err));
  ENPU_FORWARD(farm_plan_add_uncompiled(&m->plan, m->state, err));
  m->sum->reused_store = farm_plan_mark_known(&m->plan, m->state);
  ENPU_FORWARD(read_journal(m, err));
  m->sum->reused_journal = farm_plan_mark_known(&m->plan, m->state);
  ENPU_FORWARD(open_journal(m, err));
  /* Ops whose last part the journal held but not their merge: merged now. Part-way ones
   * count their parts as reused. */
  for (int i = 0; i < m->plan.nops; i++)
    if (m->plan.ops[i].status != T_KNOWN) m->sum->reused_journal += m->plan.ops[i].parts_known;
  ENPU_FORWARD(farm_job_merge_ready(m, err));
  for (int i = 0; i < m->plan.nops; i++)
    m->sum->resumed_ops += m->plan.ops[i].status != T_KNOWN && m->plan.ops[i].parts_known > 0;
  ENPU_FORWARD(farm_cache_lookup(m, err));
  farm_plan_mark_known(&m->plan, m->state); /* the cache's hits, counted by farm_cache_lookup */
  ENPU_FORWARD(farm_plan_queue(&m->plan, m->sum, &m->sched.est_total_s, err));
  m->sched.queued = 1;
  summary_counts(m);
  return 0;
}

int farm_job_setup(const farm_options *o, config_files *inputs, const char *job_path, const char *store_path,
                   int index, const volatile sig_atomic_t *stop, opcache *results_cache, farm_summary *sum,
                   farm_job **out, enpu_err *err) {
  *out = NULL;
  farm_job *m = enpu_calloc(1, sizeof *m);
  ENPU_RETURN_IF(!m, err, ENPU_ERR_NOMEM, "out of memory (farm job)");
  *m = (farm_job){.o = *o,
                  .job_path = job_path,
                  .inputs = inputs,
                  .index = index,
                  .stop = stop,
                  .sum = sum,
                  .cache = results_cache};
  if (!m->o.log) m->o.log = stderr;
  const int rc = job_setup(m, store_path, err);
  if (rc == 0) *out = m;
  else farm_job_free(m);
  return rc;
}

void farm_job_free(farm_job *m) {
  if (!m) return;
  farm_plan_free(&m->plan);
  free(m->sched.reissued);
  free(m->added_json);
  farm_journal_free(m->journal);
  store_lock_release(m->lock);
  farm_state_free(m->state);
  config_job_free(m->job);
  free(m);
}

/* ---------------------------------------------------------------------------------
 * Results and checkpoints */

/* What the checkpoint did with the previous store's validation rows, said when it
 * changes (the first checkpoint, then only when a bucket recompiled drops more). */
static void note_validation(farm_job *m, const store_validation_counts *v) {
  farm_summary *s = m->sum;
  const int64_t now[4] = {(int64_t)v->kept, (int64_t)v->dropped, (int64_t)v->replay_kept,
                          (int64_t)v->replay_dropped};
  const int changed = now[0] != s->validation_kept || now[1] != s->validation_dropped || now[2] != s->replay_kept ||
                      now[3] != s->replay_dropped;
  s->validation_kept = now[0], s->validation_dropped = now[1], s->replay_kept = now[2], s->replay_dropped = now[3];
  if (!changed || m->o.quiet) return;
  fprintf(m->o.log,
          "farm: %s: validation: %lld rows kept, %lld dropped (their plans changed or are gone); replay: %lld rows "
          "kept, %lld dropped (%s)\n",
          m->store_path, (long long)now[0], (long long)now[1], (long long)now[2], (long long)now[3],
          now[3] ? "a replay uses every plan of every policy, and some changed" : "no plan changed");
}

/* Write the store; the journal then starts over with the parts of ops not merged yet,
 * which the store does not hold. */
static int checkpoint(farm_job *m, enpu_err *err) {
  const store_provenance prov = {.cost_model_hash = enpu_hash64(COST_MODEL_VERSION, strlen(COST_MODEL_VERSION), 0),
                                 .chip_hash = m->job->chip.hash,
                                 .model_hash = m->job->model.hash,
                                 .job_hash = m->job->hash,
                                 .tool_version = ENPU_TOOL_VERSION,
                                 .job_json = m->job->job_json,
                                 .model_json = m->job->model_json,
                                 .chip_json = m->job->chip_json,
                                 .cluster_json = m->job->cluster_json,
                                 .added_buckets_json = m->added_json};
  store_validation_counts v = {0};
  ENPU_FORWARD(farm_state_checkpoint(m->state, m->lock, &prov, m->plan.wanted, m->job->policy_count, &v, err));
  note_validation(m, &v);
  ENPU_FORWARD(farm_journal_reset(m->journal, err));
  farm_buf b = {0};
  int rc = 0;
  for (int i = 0; rc == 0 && i < m->plan.nops; i++)
    for (int k = 0;
         rc == 0 && m->plan.ops[i].status != T_KNOWN && m->plan.ops[i].part_res && k < SEARCH_EXACT_PARTS; k++) {
      if (!m->plan.ops[i].part_res[k].npoints) continue;
      b.len = 0;
      rc = farm_part_result_encode((uint32_t)k, &m->plan.ops[i].part_res[k], &b, err);
      if (rc == 0) rc = farm_journal_append(m->journal, FARM_REC_PART, b.data, b.len, err);
    }
  farm_buf_free(&b);
  return rc == 0 ? farm_journal_sync(m->journal, err) : rc;
}

/* Journal a result and add it to the state (taking its arrays). */
int farm_job_unsynced(const farm_job *m) { return m->sched.unsynced; }

int farm_job_sync(farm_job *m, enpu_err *err) {
  ENPU_FORWARD(farm_journal_sync(m->journal, err));
  m->sched.unsynced = 0;
  return 0;
}

int farm_job_checkpoint(farm_job *m, enpu_err *err) { return checkpoint(m, err); }

/* ---------------------------------------------------------------------------------
 * The end of a job's run */

static void count_buckets(farm_job *m) {
  farm_summary *s = m->sum;
  for (int p = 0; p < m->job->policy_count; p++)
    for (int b = 0; b < m->plan.nbuckets; b++) {
      const mbucket *mb = &m->plan.buckets[b];
      const farm_bucket_result *r = farm_state_find_bucket(m->state, m->plan.code[p], mb->phase, mb->batch, mb->seq,
                                                           m->plan.wanted_buckets[p][b].input_hash);
      const int status = r ? r->bundle.bucket.status : -1;
      if (status == STORE_BUCKET_OK) s->buckets_ok++;
      else if (status == STORE_BUCKET_INFEASIBLE_CAPACITY) s->buckets_infeasible++;
      else if (status == STORE_BUCKET_FAILED) s->buckets_failed++;
    }
}

int farm_job_finish(farm_job *m, enpu_err *err) {
  count_buckets(m);
  if (!m->o.finish_job) return 0;
  const farm_finished_job f = {
      .job = m->job, .job_path = m->job_path, .store_path = m->store_path, .lock = m->lock, .sum = m->sum};
  return m->o.finish_job(&f, m->o.finish_user, err);
}
