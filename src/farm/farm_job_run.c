/* farm_job_run.c — a job's results as they arrive (journal, state, parts merged into op
 * results, failures passed on to the buckets that need them), its checkpoints, its
 * scheduling cursor and the end of its run (summary.md, validation). The plan itself is
 * built by farm_job.c; the invariants are in farm_job_internal.h. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "farm_job_internal.h"
#include "validate.h"

#ifndef ENPU_TOOL_VERSION
#define ENPU_TOOL_VERSION "0.0.0"
#endif

/* ---------------------------------------------------------------------------------
 * Results and checkpoints */

/* Write the store; the journal then starts over with the parts of ops not merged yet,
 * which the store does not hold. */
static int checkpoint(farm_job *m, enpu_err *err) {
  const store_provenance prov = {
      .cost_model_hash = enpu_hash64(COST_MODEL_VERSION, strlen(COST_MODEL_VERSION), 0),
      .chip_hash = m->job->chip.hash, .model_hash = m->job->model.hash, .job_hash = m->job->hash,
      .tool_version = ENPU_TOOL_VERSION, .job_json = m->job->job_json,
      .model_json = m->job->model_json, .chip_json = m->job->chip_json,
      .cluster_json = m->job->cluster_json, .added_buckets_json = m->added_json};
  ENPU_FORWARD(farm_state_checkpoint(m->state, m->lock, &prov, m->wanted,
                                     m->job->policy_count, err));
  ENPU_FORWARD(farm_journal_reset(m->journal, err));
  farm_buf b = {0};
  int rc = 0;
  for (int i = 0; rc == 0 && i < m->nops; i++)
    for (int k = 0; rc == 0 && m->ops[i].status != T_KNOWN && m->ops[i].part_res && k < SEARCH_EXACT_PARTS; k++) {
      if (!m->ops[i].part_res[k].npoints) continue;
      b.len = 0;
      rc = farm_part_result_encode((uint32_t)k, &m->ops[i].part_res[k], &b, err);
      if (rc == 0) rc = farm_journal_append(m->journal, FARM_REC_PART, b.data, b.len, err);
    }
  farm_buf_free(&b);
  return rc == 0 ? farm_journal_sync(m->journal, err) : rc;
}

/* Journal a result and add it to the state (taking its arrays). */
static int keep_bucket(farm_job *m, farm_bucket_result *r, enpu_err *err) {
  farm_buf b = {0};
  int rc = farm_bucket_result_encode(r, &b, err);
  if (rc == 0) rc = farm_journal_append(m->journal, FARM_REC_BUCKET, b.data, b.len, err);
  if (rc == 0) rc = farm_state_add_bucket(m->state, r, err);
  farm_buf_free(&b);
  m->unsynced++;
  return rc;
}

static int fail_bucket(farm_job *m, int j, const char *message, enpu_err *err) {
  mtask *t = &m->bt[j];
  const mbucket *b = &m->buckets[t->bucket];
  if (t->status == T_TODO) m->est_done_s += t->est_s; /* a running one was counted */
  t->status = T_FAILED;
  m->sum->tasks_failed++;
  farm_bucket_result r = {.policy = t->policy};
  r.bucket = (store_bucket_rec){.phase = (uint8_t)b->phase, .status = STORE_BUCKET_FAILED,
                                .budget = (uint8_t)m->job->budget,
                                .batch = b->batch, .seq = b->seq, .input_hash = t->input_hash};
  snprintf(r.bucket.message, sizeof r.bucket.message, "%s", message);
  return keep_bucket(m, &r, err);
}

/* What waits on op i once it is known or failed (before the queue exists, nothing: the
 * queue counts what each bucket waits for from the ops' statuses). */
static int op_settled(farm_job *m, int i, enpu_err *err) {
  const mop *o = &m->ops[i];
  if (!m->queued) return 0;
  for (int k = 0; k < o->dep_count; k++) {
    const int j = m->deps[o->dep_first + k];
    m->bt[j].waiting--;
    if (o->status == T_FAILED && m->bt[j].status == T_TODO) {
      char msg[STORE_MSG_LEN];
      snprintf(msg, sizeof msg, "op %.60s failed: %.80s",
               graph_op_at(m->buckets[o->bucket].g, o->op)->name, o->message);
      ENPU_FORWARD(fail_bucket(m, j, msg, err));
    }
  }
  return 0;
}

/* An op result into the state, journalled: as the frame it came in (a worker's), or
 * packed here when frame is NULL (a merge). */
static int op_known(farm_job *m, int i, farm_op_result *r, const farm_task_result *frame,
                    enpu_err *err) {
  mop *o = &m->ops[i];
  ENPU_RETURN_IF(r->policy != o->policy || r->key != o->key, err, ENPU_ERR_INTERNAL,
                 "op %d: a result for another key", i);
  if (frame) {
    ENPU_FORWARD(farm_journal_append_frame(m->journal, FARM_REC_OP, frame->frame, frame->bytes, err));
  } else {
    farm_buf b = {0};
    int rc = farm_op_result_encode(r, &b, err);
    if (rc == 0) rc = farm_journal_append(m->journal, FARM_REC_OP, b.data, b.len, err);
    farm_buf_free(&b);
    ENPU_FORWARD(rc);
  }
  m->unsynced++;
  ENPU_FORWARD(farm_state_add_op(m->state, r, err));
  o->status = T_KNOWN;
  return op_settled(m, i, err);
}

/* Merge a split op whose parts are all in (its op record goes to the journal). */
static int merge_op(farm_job *m, int i, enpu_err *err) {
  mop *o = &m->ops[i];
  farm_op_result r;
  ENPU_FORWARD(farm_merge_parts(o->part_res, SEARCH_EXACT_PARTS, &r, err));
  const int rc = op_known(m, i, &r, NULL, err);
  farm_op_result_free(&r);
  for (int k = 0; k < SEARCH_EXACT_PARTS; k++) farm_op_result_free(&o->part_res[k]);
  free(o->part_res);
  o->part_res = NULL;
  return rc;
}

int farm_job_merge_ready(farm_job *m, enpu_err *err) {
  for (int i = 0; i < m->nops; i++)
    if (m->ops[i].status != T_KNOWN && m->ops[i].parts_known == SEARCH_EXACT_PARTS)
      ENPU_FORWARD(merge_op(m, i, err));
  return 0;
}

/* A part result of the op (policy, key) that r names (from a worker or the journal):
 * kept (taking r's points) unless the op or that part is already known. */
int farm_job_keep_part(farm_job *m, uint32_t part, farm_op_result *r, enpu_err *err) {
  int i = farm_job_find_op(m, r->policy, r->key);
  if (i < 0 || m->ops[i].first_part < 0 || m->ops[i].status == T_KNOWN) return 0; /* stale */
  mop *o = &m->ops[i];
  ENPU_RETURN_IF(part >= SEARCH_EXACT_PARTS || r->npoints < 1, err, ENPU_ERR_FORMAT,
                 "op %016llx: part %u of %d with %u points", (unsigned long long)r->key, part,
                 SEARCH_EXACT_PARTS, r->npoints);
  if (!o->part_res) o->part_res = enpu_calloc(SEARCH_EXACT_PARTS, sizeof *o->part_res);
  ENPU_RETURN_IF(!o->part_res, err, ENPU_ERR_NOMEM, "out of memory (parts)");
  if (o->part_res[part].npoints) return 0;
  o->part_res[part] = *r;
  memset(r, 0, sizeof *r);
  o->parts_known++;
  m->parts[o->first_part + (int)part].status = T_KNOWN;
  return 0;
}

/* A part task's result: journalled as it came, kept, and the op merged when complete. */
static int take_part(farm_job *m, const farm_task_result *tr, enpu_err *err) {
  mpart *p = task_part(m, tr->id);
  farm_op_result r;
  uint32_t part;
  ENPU_FORWARD(farm_part_result_decode(tr->payload, tr->plain_bytes, &part, &r, err));
  int rc = part == (uint32_t)p->part && r.policy == m->ops[p->op].policy && r.key == m->ops[p->op].key
               ? 0
               : enpu_errorf(err, ENPU_ERR_INTERNAL, "task %u: part result for another op", tr->id);
  if (rc == 0) rc = farm_journal_append_frame(m->journal, FARM_REC_PART, tr->frame, tr->bytes, err);
  if (rc == 0) m->unsynced++;
  if (rc == 0) rc = farm_job_keep_part(m, part, &r, err);
  p->status = T_KNOWN;
  farm_op_result_free(&r);
  if (rc == 0 && m->ops[p->op].status != T_KNOWN && m->ops[p->op].parts_known == SEARCH_EXACT_PARTS)
    rc = merge_op(m, p->op, err);
  return rc;
}

/* A failed op (or one of its parts): its buckets fail, its parts still to do are dropped
 * (failed), the results of those running are dropped when they come. */
static int fail_op(farm_job *m, int i, const char *message, enpu_err *err) {
  mop *o = &m->ops[i];
  if (o->status == T_FAILED) return 0;
  o->status = T_FAILED;
  snprintf(o->message, sizeof o->message, "%s", message);
  for (int k = 0; o->first_part >= 0 && k < SEARCH_EXACT_PARTS; k++) {
    mpart *p = &m->parts[o->first_part + k];
    if (p->status != T_TODO) continue;
    p->status = T_FAILED;
    m->sum->tasks_failed++;
    m->est_done_s += o->est_s / SEARCH_EXACT_PARTS;
  }
  return op_settled(m, i, err);
}

void farm_job_log_to(farm_job *m, FILE *f) { m->task_log = f; }

/* The job policy a task's compute time counts for: a bucket task's; an op (or part)
 * task's first policy with its op level (pg+X's ops are X's when X is in the job). */
static int task_policy_slot(farm_job *m, uint32_t t) {
  const int kind = task_kind(m, t);
  const uint32_t code = kind == K_BUCKET ? task_bucket(m, t)->policy
                                         : m->ops[kind == K_OP ? (int)t : task_part(m, t)->op].policy;
  const uint32_t *codes = kind == K_BUCKET ? m->code : m->op_code;
  int p = 0;
  while (p + 1 < m->job->policy_count && codes[p] != code) p++;
  return p;
}

/* One line of the task log (farm_options.task_log). */
static void log_task(farm_job *m, const farm_task_result *tr, int slot) {
  static const char *const kinds[] = {"op", "part", "bucket"};
  const int kind = task_kind(m, tr->id);
  config_policy_spec spec = m->job->policies[slot];
  if (kind != K_BUCKET) spec = config_policy_spec_ungated(&spec);
  char name[CONFIG_NAME_LEN];
  config_policy_spec_name(&spec, name);
  fprintf(m->task_log, "%s,%s,%s,%.9f,%.9f,%llu,%zu,%zu\n", m->job->name, kinds[kind], name,
          tr->compute_s, tr->cpu_s, (unsigned long long)tr->evaluations, tr->plain_bytes,
          tr->bytes);
}

int farm_job_take(farm_job *m, const farm_task_result *tr, enpu_err *err) {
  ENPU_RETURN_IF(tr->id >= task_count(m) || *task_status(m, tr->id) != T_RUNNING, err,
                 ENPU_ERR_FORMAT, "a result for task %u, which is not running", tr->id);
  const int kind = task_kind(m, tr->id);
  const double est = task_est(m, tr->id);
  const int slot = task_policy_slot(m, tr->id);
  if (m->task_log) log_task(m, tr, slot);
  m->est_done_s += est;
  m->sec_per_est[kind == K_BUCKET] += tr->compute_s;
  m->est_seen[kind == K_BUCKET] += est;
  m->sum->core_s += tr->compute_s;
  m->sum->cpu_s += tr->cpu_s;
  m->sum->policy_cpu_s[slot] += tr->cpu_s;
  m->sum->evaluations += (int64_t)tr->evaluations;
  if (tr->kind == FARM_RES_FAILED) {
    if (kind == K_BUCKET) return fail_bucket(m, (int)(task_bucket(m, tr->id) - m->bt), tr->message, err);
    m->sum->tasks_failed++;
    *task_status(m, tr->id) = T_FAILED;
    return fail_op(m, kind == K_OP ? (int)tr->id : task_part(m, tr->id)->op, tr->message, err);
  }
  static const uint32_t want[] = {FARM_REC_OP, FARM_REC_PART, FARM_REC_BUCKET};
  ENPU_RETURN_IF(tr->kind != want[kind], err, ENPU_ERR_FORMAT,
                 "task %u: result of the wrong kind %u", tr->id, tr->kind);
  m->sum->tasks_done++;
  m->sum->recomputed++;
  if (kind == K_PART) {
    if (m->ops[task_part(m, tr->id)->op].status == T_FAILED) {
      *task_status(m, tr->id) = T_KNOWN; /* its op failed already: nothing to merge */
      return 0;
    }
    return take_part(m, tr, err);
  }
  if (kind == K_OP) {
    farm_op_result r;
    ENPU_FORWARD(farm_op_result_decode(tr->payload, tr->plain_bytes, &r, err));
    int rc = op_known(m, (int)tr->id, &r, tr, err);
    farm_op_result_free(&r);
    farm_buf *rec = &m->ops[tr->id].record;
    rec->len = 0;
    if (rc == 0 && enpu_grow((void **)&rec->data, &rec->cap, tr->plain_bytes, 1) < 0)
      rc = enpu_errorf(err, ENPU_ERR_NOMEM, "out of memory (op record)");
    if (rc == 0) memcpy(rec->data, tr->payload, tr->plain_bytes), rec->len = tr->plain_bytes;
    return rc;
  }
  ENPU_FORWARD(farm_journal_append_frame(m->journal, tr->kind, tr->frame, tr->bytes, err));
  m->unsynced++;
  farm_bucket_result r;
  ENPU_FORWARD(farm_bucket_result_decode(tr->payload, tr->plain_bytes, &r, err));
  task_bucket(m, tr->id)->status = T_KNOWN;
  const int rc = farm_state_add_bucket(m->state, &r, err);
  farm_bucket_result_free(&r);
  return rc;
}

/* ---------------------------------------------------------------------------------
 * Scheduling */

/* Seconds of work a task of estimate `est` takes, by the measured ratio. */
static double task_s(const farm_job *m, uint32_t t, double est) {
  const int k = task_kind(m, t) == K_BUCKET;
  return m->est_seen[k] > 0 ? est * m->sec_per_est[k] / m->est_seen[k] : est;
}

static int task_ready(farm_job *m, uint32_t t) {
  if (task_kind(m, t) != K_BUCKET) return *task_status(m, t) == T_TODO;
  const mtask *b = task_bucket(m, t);
  return b->status == T_TODO && b->waiting == 0;
}

/* Op i's encoded result, what bucket tasks carry: the bytes a worker sent, or encoded
 * once from the state (a result from the store, the journal or a merge). */
static int op_record(farm_job *m, int i, enpu_err *err) {
  mop *o = &m->ops[i];
  if (o->record.len) return 0;
  const farm_op_result *r = farm_state_find_op(m->state, o->policy, o->key);
  ENPU_RETURN_IF(!r, err, ENPU_ERR_INTERNAL, "op %d: unknown when a bucket needs it", i);
  return farm_op_result_encode(r, &o->record, err);
}

void farm_job_cursor(farm_job *m, farm_cursor *c) {
  while (m->qhead < m->nqueue && *task_status(m, m->queue[m->qhead].task) != T_TODO) m->qhead++;
  c->q = m->qhead;
}

double farm_job_peek(const farm_job *cm, farm_cursor *c) {
  farm_job *m = (farm_job *)cm; /* task_status has no const form */
  while (c->q < m->nqueue && !task_ready(m, m->queue[c->q].task)) c->q++;
  return c->q < m->nqueue ? task_s(m, m->queue[c->q].task, m->queue[c->q].est_s) : -1;
}

int farm_job_put(farm_job *m, farm_cursor *c, farm_buf *out, enpu_err *err) {
  ENPU_RETURN_IF(farm_job_peek(m, c) < 0, err, ENPU_ERR_INTERNAL, "no task is ready");
  const uint32_t t = m->queue[c->q++].task, job = (uint32_t)m->index;
  if (task_kind(m, t) != K_BUCKET) {
    const int part = task_kind(m, t) == K_PART ? task_part(m, t)->part : -1;
    const mop *o = &m->ops[part < 0 ? (int)t : task_part(m, t)->op];
    const mbucket *b = &m->buckets[o->bucket];
    ENPU_FORWARD(farm_task_put_op(out, job, t, o->policy, o->key, b->phase, b->batch, b->seq,
                                  o->op, part, err));
  } else {
    const mtask *bt = task_bucket(m, t);
    const mbucket *b = &m->buckets[bt->bucket];
    const farm_buf **sets = enpu_calloc((size_t)bt->nops + 1, sizeof *sets);
    ENPU_RETURN_IF(!sets, err, ENPU_ERR_NOMEM, "out of memory (task sets)");
    int rc = 0;
    for (int k = 0; rc == 0 && k < bt->nops; k++) {
      rc = op_record(m, bt->ops[k], err);
      sets[k] = &m->ops[bt->ops[k]].record;
    }
    if (rc == 0)
      rc = farm_task_put_bucket(out, job, t, bt->policy, bt->input_hash, b->phase, b->batch,
                                b->seq, sets, (uint32_t)bt->nops, err);
    free(sets);
    ENPU_FORWARD(rc);
  }
  *task_status(m, t) = T_RUNNING;
  return 0;
}

int farm_job_settled(const farm_job *m) {
  return m->sum->tasks_done + m->sum->tasks_failed == m->sum->tasks_total;
}

int farm_job_unsynced(const farm_job *m) { return m->unsynced; }

int farm_job_sync(farm_job *m, enpu_err *err) {
  ENPU_FORWARD(farm_journal_sync(m->journal, err));
  m->unsynced = 0;
  return 0;
}

int farm_job_checkpoint(farm_job *m, enpu_err *err) { return checkpoint(m, err); }

double farm_job_left_s(const farm_job *m) {
  const double seen = m->est_seen[0] + m->est_seen[1];
  const double scale = seen > 0 ? (m->sec_per_est[0] + m->sec_per_est[1]) / seen : 1;
  return (m->est_total_s - m->est_done_s) * scale;
}

void farm_job_estimates(const farm_job *m, double *done, double *total) {
  *done = m->est_done_s;
  *total = m->est_total_s;
}

const char *farm_job_store(const farm_job *m) { return m->store_path; }

/* ---------------------------------------------------------------------------------
 * The end of a job's run */

/* Where a result file of this run goes: DIR/<job>/NAME with --results DIR, else NAME
 * beside the store (the job name is a plain name: config_job_load checks it). The
 * directory is created. */
static int result_path(const farm_job *m, const char *name, char *out, size_t cap, enpu_err *err) {
  char dir[CONFIG_PATH_LEN + CONFIG_NAME_LEN + 8];
  if (m->o.results_dir) snprintf(dir, sizeof dir, "%s/%s", m->o.results_dir, m->job->name);
  else snprintf(dir, sizeof dir, "%.*s", (int)(strrchr(m->store_path, '/') - m->store_path), m->store_path);
  ENPU_FORWARD(enpu_mkdir_p(dir[0] ? dir : "/", err));
  ENPU_RETURN_IF(snprintf(out, cap, "%s/%s", dir, name) >= (int)cap, err, ENPU_ERR_RANGE, "path too long: %s/%s",
                 dir, name);
  return 0;
}

static int write_summary_md(const farm_job *m, enpu_err *err) {
  char path[CONFIG_PATH_LEN + CONFIG_NAME_LEN + 32];
  ENPU_FORWARD(result_path(m, "summary.md", path, sizeof path, err));
  FILE *f = fopen(path, "w");
  ENPU_RETURN_IF(!f, err, enpu_errno_code(errno), "cannot write %s: %s", path, strerror(errno));
  farm_summary_print(m->sum, f);
  const int bad = ferror(f);
  ENPU_RETURN_IF(fclose(f) != 0 || bad, err, enpu_errno_code(errno), "cannot write %s: %s", path, strerror(errno));
  return 0;
}

/* The job's `validation` section: `enpu validate` on the final store with the job's
 * cluster (rank 0, after the last checkpoint). A failing plan or a validation that cannot
 * run is an error of the farm; the store then stays the final checkpoint (validate_run
 * rewrites it only after everything succeeded). */
static int validate_store(const farm_job *m, enpu_err *err) {
  const config_validation *val = &m->job->validation;
  if (!val->enabled || m->sum->outcome == FARM_INTERRUPTED) return 0;
  char report[CONFIG_PATH_LEN + CONFIG_NAME_LEN + 32];
  ENPU_FORWARD(result_path(m, "validation.md", report, sizeof report, err));
  validate_args a;
  validate_args_default(&a);
  a.store_path = m->store_path, a.lock = m->lock, a.trace_path = val->trace_path, a.job = m->job;
  a.job_source = m->job_path, a.cluster = &m->job->cluster, a.report_path = report;
  a.sample = val->sample, a.seed = val->seed, a.log = m->o.quiet ? NULL : m->o.log;
  validate_outcome out;
  int rc = validate_run(&a, &out, err);
  if (rc < 0) {
    enpu_err_prefix(err, "validation: ");
    return rc;
  }
  if (!m->o.quiet)
    fprintf(m->o.log, "farm: validation: %zu of %zu sampled plans passed (%.2f s), %s\n", out.passed,
            out.plans, out.total_s, report);
  ENPU_RETURN_IF(out.failed, err, ENPU_ERR_INTERNAL,
                 "validation: %zu of %zu sampled plans failed (see %s); first: %s", out.failed,
                 out.plans, report, out.first_failure);
  return 0;
}

static void count_buckets(farm_job *m) {
  farm_summary *s = m->sum;
  for (int p = 0; p < m->job->policy_count; p++)
    for (int b = 0; b < m->nbuckets; b++) {
      const mbucket *mb = &m->buckets[b];
      const farm_bucket_result *r =
          farm_state_find_bucket(m->state, m->code[p], mb->phase, mb->batch, mb->seq,
                                 m->wanted_buckets[p][b].input_hash);
      const int status = r ? r->bucket.status : -1;
      if (status == STORE_BUCKET_OK) s->buckets_ok++;
      else if (status == STORE_BUCKET_INFEASIBLE_CAPACITY) s->buckets_infeasible++;
      else if (status == STORE_BUCKET_FAILED) s->buckets_failed++;
    }
}

int farm_job_finish(farm_job *m, enpu_err *err) {
  count_buckets(m);
  ENPU_FORWARD(write_summary_md(m, err));
  return validate_store(m, err);
}
