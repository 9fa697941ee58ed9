/* farm_sched.c — a job's scheduling (farm_job_internal.h): results as they arrive
 * (journalled, into the state, parts merged into op results, failures passed on to the
 * buckets that need them), what becomes ready, the queue's cursor and the estimates of
 * the work left. It reads and writes nothing but the journal and state it is handed; the
 * task graph is farm_plan.c's. */
#include <stdlib.h>
#include <string.h>

#include "farm_job_internal.h"

static int keep_bucket(farm_job *m, farm_bucket_result *r, enpu_err *err) {
  farm_buf b = {0};
  int rc = farm_bucket_result_encode(r, &b, err);
  if (rc == 0) rc = farm_journal_append(m->journal, FARM_REC_BUCKET, b.data, b.len, err);
  if (rc == 0) rc = farm_state_add_bucket(m->state, r, err);
  farm_buf_free(&b);
  m->sched.unsynced++;
  return rc;
}

static int fail_bucket(farm_job *m, int j, const char *message, enpu_err *err) {
  mtask *t = &m->plan.bt[j];
  const mbucket *b = &m->plan.buckets[t->bucket];
  if (t->status == T_TODO) m->sched.est_done_s += t->est_s; /* a running one was counted */
  t->status = T_FAILED;
  m->sum->tasks_failed++;
  farm_bucket_result r = {.policy = t->policy};
  r.bundle.bucket = (store_bucket_rec){.phase = (uint8_t)b->phase,
                                       .status = STORE_BUCKET_FAILED,
                                       .budget = config_budget_code(m->job->budget),
                                       .batch = b->batch,
                                       .seq = b->seq,
                                       .input_hash = t->input_hash};
  snprintf(r.bundle.bucket.message, sizeof r.bundle.bucket.message, "%s", message);
  return keep_bucket(m, &r, err);
}

/* What waits on op i once it is known or failed (before the queue exists, nothing: the
 * queue counts what each bucket waits for from the ops' statuses). */
static int op_settled(farm_job *m, int i, enpu_err *err) {
  const mop *o = &m->plan.ops[i];
  if (!m->sched.queued) return 0;
  for (int k = 0; k < o->dep_count; k++) {
    const int j = m->plan.deps[o->dep_first + k];
    m->plan.bt[j].waiting--;
    if (o->status == T_FAILED && m->plan.bt[j].status == T_TODO) {
      char msg[STORE_MSG_LEN];
      snprintf(msg, sizeof msg, "op %.60s failed: %.80s", graph_op_at(m->plan.buckets[o->bucket].g, o->op)->name,
               o->message);
      ENPU_FORWARD(fail_bucket(m, j, msg, err));
    }
  }
  return 0;
}

/* An op result into the state, journalled: as the frame it came in (a worker's), or
 * packed here when frame is NULL (a merge). */
static int op_known(farm_job *m, int i, farm_op_result *r, const farm_task_result *frame, enpu_err *err) {
  mop *o = &m->plan.ops[i];
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
  m->sched.unsynced++;
  ENPU_FORWARD(farm_cache_put_op(m, r, err)); /* before the state takes r's arrays */
  ENPU_FORWARD(farm_state_add_op(m->state, r, err));
  o->status = T_KNOWN;
  return op_settled(m, i, err);
}

/* Merge a split op whose parts are all in (its op record goes to the journal). */
static int merge_op(farm_job *m, int i, enpu_err *err) {
  mop *o = &m->plan.ops[i];
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
  for (int i = 0; i < m->plan.nops; i++)
    if (m->plan.ops[i].status != T_KNOWN && m->plan.ops[i].parts_known == SEARCH_EXACT_PARTS)
      ENPU_FORWARD(merge_op(m, i, err));
  return 0;
}

/* A part result of the op (policy, key) that r names (from a worker or the journal):
 * kept (taking r's points) unless the op or that part is already known. */
int farm_job_keep_part(farm_job *m, uint32_t part, farm_op_result *r, enpu_err *err) {
  int i = farm_plan_find_op(&m->plan, r->policy, r->key);
  if (i < 0 || m->plan.ops[i].first_part < 0 || m->plan.ops[i].status == T_KNOWN) return 0; /* stale */
  mop *o = &m->plan.ops[i];
  ENPU_RETURN_IF(part >= SEARCH_EXACT_PARTS || r->npoints < 1, err, ENPU_ERR_FORMAT,
                 "op %016llx: part %u of %d with %u points", (unsigned long long)r->key, part, SEARCH_EXACT_PARTS,
                 r->npoints);
  if (!o->part_res) o->part_res = enpu_calloc(SEARCH_EXACT_PARTS, sizeof *o->part_res);
  ENPU_RETURN_IF(!o->part_res, err, ENPU_ERR_NOMEM, "out of memory (parts)");
  if (o->part_res[part].npoints) return 0;
  o->part_res[part] = *r;
  memset(r, 0, sizeof *r);
  o->parts_known++;
  m->plan.parts[o->first_part + (int)part].status = T_KNOWN;
  return 0;
}

/* A part task's result: journalled as it came, kept, and the op merged when complete. */
static int take_part(farm_job *m, const farm_task_result *tr, enpu_err *err) {
  mpart *p = &m->plan.parts[farm_task_at(&m->plan, tr->id).index];
  farm_op_result r;
  uint32_t part;
  ENPU_FORWARD(farm_part_result_decode(tr->payload, tr->plain_bytes, &part, &r, err));
  int rc = part == (uint32_t)p->part && r.policy == m->plan.ops[p->op].policy && r.key == m->plan.ops[p->op].key
               ? 0
               : enpu_errorf(err, ENPU_ERR_INTERNAL, "task %u: part result for another op", tr->id);
  if (rc == 0) rc = farm_journal_append_frame(m->journal, FARM_REC_PART, tr->frame, tr->bytes, err);
  if (rc == 0) m->sched.unsynced++;
  if (rc == 0) rc = farm_job_keep_part(m, part, &r, err);
  p->status = T_KNOWN;
  farm_op_result_free(&r);
  if (rc == 0 && m->plan.ops[p->op].status != T_KNOWN && m->plan.ops[p->op].parts_known == SEARCH_EXACT_PARTS)
    rc = merge_op(m, p->op, err);
  return rc;
}

/* A failed op (or one of its parts): its buckets fail, its parts still to do are dropped
 * (failed), the results of those running are dropped when they come. */
static int fail_op(farm_job *m, int i, const char *message, enpu_err *err) {
  mop *o = &m->plan.ops[i];
  if (o->status == T_FAILED) return 0;
  o->status = T_FAILED;
  snprintf(o->message, sizeof o->message, "%s", message);
  for (int k = 0; o->first_part >= 0 && k < SEARCH_EXACT_PARTS; k++) {
    mpart *p = &m->plan.parts[o->first_part + k];
    if (p->status != T_TODO) continue;
    p->status = T_FAILED;
    m->sum->tasks_failed++;
    m->sched.est_done_s += o->est_s / SEARCH_EXACT_PARTS;
  }
  return op_settled(m, i, err);
}

void farm_job_log_to(farm_job *m, FILE *f) { m->task_log = f; }

/* The job policy a task's compute time counts for: a bucket task's; an op (or part)
 * task's first policy with its op level (pg+X's ops are X's when X is in the job). */
static int task_policy_slot(const farm_job *m, farm_task_ref r) {
  const uint32_t code = r.kind == K_BUCKET ? m->plan.bt[r.index].policy
                                           : m->plan.ops[farm_task_op(&m->plan, r)].policy;
  const uint32_t *codes = r.kind == K_BUCKET ? m->plan.code : m->plan.op_code;
  int p = 0;
  while (p + 1 < m->job->policy_count && codes[p] != code) p++;
  return p;
}

/* One line of the task log (farm_options.task_log). */
static void log_task(const farm_job *m, const farm_task_result *tr, int kind, int slot) {
  static const char *const kinds[] = {"op", "part", "bucket"};
  config_policy_spec spec = m->job->policies[slot];
  if (kind != K_BUCKET) config_policy_spec_decode(m->plan.op_code[slot], &spec);
  char name[CONFIG_NAME_LEN];
  config_job_policy_name(m->job, &spec, name);
  fprintf(m->task_log, "%s,%s,%s,%.9f,%.9f,%llu,%zu,%zu\n", m->job->name, kinds[kind], name, tr->compute_s,
          tr->cpu_s, (unsigned long long)tr->evaluations, tr->plain_bytes, tr->bytes);
}

/* A result must be of a running task, but for a requeued one (farm_job_requeue): the
 * first of its two results counts, taken as running even when it came before the task
 * was handed out again; a later one is a duplicate. @return 0 to take it, 1 a
 * duplicate, or ENPU_ERR_FORMAT. */
static int check_running(farm_job *m, uint32_t id, enpu_err *err) {
  farm_plan *p = &m->plan;
  ENPU_RETURN_IF(id >= farm_task_count(p), err, ENPU_ERR_FORMAT, "a result for task %u of %u", id,
                 farm_task_count(p));
  int *status = farm_task_status(p, farm_task_at(p, id));
  if (*status == T_RUNNING) return 0;
  ENPU_RETURN_IF(!m->sched.reissued || !m->sched.reissued[id], err, ENPU_ERR_FORMAT,
                 "a result for task %u, which is not running", id);
  if (*status != T_TODO) return 1;
  *status = T_RUNNING;
  return 0;
}

int farm_job_requeue(farm_job *m, uint32_t task, enpu_err *err) {
  farm_plan *p = &m->plan;
  ENPU_RETURN_IF(task >= farm_task_count(p), err, ENPU_ERR_INTERNAL, "requeue of task %u of %u", task,
                 farm_task_count(p));
  int *status = farm_task_status(p, farm_task_at(p, task));
  if (*status != T_RUNNING) return 0;
  if (!m->sched.reissued) m->sched.reissued = enpu_calloc(farm_task_count(p), 1);
  ENPU_RETURN_IF(!m->sched.reissued, err, ENPU_ERR_NOMEM, "out of memory (requeued tasks)");
  m->sched.reissued[task] = 1;
  *status = T_TODO;
  m->sched.qhead = 0; /* the cursor walks to its place in the queue again */
  return 0;
}

int farm_job_take(farm_job *m, const farm_task_result *tr, int *dup, enpu_err *err) {
  farm_plan *p = &m->plan;
  const int seen = check_running(m, tr->id, err);
  if (dup) *dup = seen == 1;
  if (seen != 0) return seen < 0 ? seen : 0;
  const farm_task_ref t = farm_task_at(p, tr->id);
  const int kind = t.kind;
  const double est = farm_task_est(p, t);
  const int slot = task_policy_slot(m, t);
  if (m->task_log) log_task(m, tr, kind, slot);
  m->sched.est_done_s += est;
  m->sched.sec_per_est[kind == K_BUCKET] += tr->compute_s;
  m->sched.est_seen[kind == K_BUCKET] += est;
  m->sum->core_s += tr->compute_s;
  m->sum->cpu_s += tr->cpu_s;
  m->sum->policy_cpu_s[slot] += tr->cpu_s;
  m->sum->evaluations += (int64_t)tr->evaluations;
  if (tr->kind == FARM_RES_FAILED) {
    if (kind == K_BUCKET) return fail_bucket(m, t.index, tr->message, err);
    m->sum->tasks_failed++;
    *farm_task_status(p, t) = T_FAILED;
    return fail_op(m, farm_task_op(p, t), tr->message, err);
  }
  static const uint32_t want[] = {FARM_REC_OP, FARM_REC_PART, FARM_REC_BUCKET};
  ENPU_RETURN_IF(tr->kind != want[kind], err, ENPU_ERR_FORMAT, "task %u: result of the wrong kind %u", tr->id,
                 tr->kind);
  m->sum->tasks_done++;
  m->sum->recomputed++;
  if (kind == K_PART) {
    if (p->ops[farm_task_op(p, t)].status == T_FAILED) {
      *farm_task_status(p, t) = T_KNOWN; /* its op failed already: nothing to merge */
      return 0;
    }
    return take_part(m, tr, err);
  }
  if (kind == K_OP) {
    farm_op_result r;
    ENPU_FORWARD(farm_op_result_decode(tr->payload, tr->plain_bytes, &r, err));
    int rc = op_known(m, t.index, &r, tr, err);
    farm_op_result_free(&r);
    farm_buf *rec = &p->ops[t.index].record;
    rec->len = 0;
    if (rc == 0 && enpu_grow((void **)&rec->data, &rec->cap, tr->plain_bytes, 1) < 0)
      rc = enpu_errorf(err, ENPU_ERR_NOMEM, "out of memory (op record)");
    if (rc == 0) memcpy(rec->data, tr->payload, tr->plain_bytes), rec->len = tr->plain_bytes;
    return rc;
  }
  ENPU_FORWARD(farm_journal_append_frame(m->journal, tr->kind, tr->frame, tr->bytes, err));
  m->sched.unsynced++;
  farm_bucket_result r;
  ENPU_FORWARD(farm_bucket_result_decode(tr->payload, tr->plain_bytes, &r, err));
  p->bt[t.index].status = T_KNOWN;
  farm_cache_put_bucket(m, &r, tr->payload, tr->plain_bytes);
  const int rc = farm_state_add_bucket(m->state, &r, err);
  farm_bucket_result_free(&r);
  return rc;
}

/* ---------------------------------------------------------------------------------
 * Scheduling */

/* Seconds of work a task of estimate `est` takes, by the measured ratio. */
static double task_s(const farm_job *m, uint32_t t, double est) {
  const int k = farm_task_at(&m->plan, t).kind == K_BUCKET;
  return m->sched.est_seen[k] > 0 ? est * m->sched.sec_per_est[k] / m->sched.est_seen[k] : est;
}

static int task_ready(const farm_plan *p, uint32_t t) {
  const farm_task_ref r = farm_task_at(p, t);
  if (r.kind != K_BUCKET) return *farm_task_state(p, r) == T_TODO;
  return p->bt[r.index].status == T_TODO && p->bt[r.index].waiting == 0;
}

/* Op i's encoded result, what bucket tasks carry: the bytes a worker sent, or encoded
 * once from the state (a result from the store, the journal or a merge). */
static int op_record(farm_job *m, int i, enpu_err *err) {
  mop *o = &m->plan.ops[i];
  if (o->record.len) return 0;
  const farm_op_result *r = farm_state_find_op(m->state, o->policy, o->key);
  ENPU_RETURN_IF(!r, err, ENPU_ERR_INTERNAL, "op %d: unknown when a bucket needs it", i);
  return farm_op_result_encode(r, &o->record, err);
}

void farm_job_cursor(farm_job *m, farm_cursor *c) {
  const farm_plan *p = &m->plan;
  while (m->sched.qhead < p->nqueue &&
         *farm_task_state(p, farm_task_at(p, p->queue[m->sched.qhead].task)) != T_TODO)
    m->sched.qhead++;
  c->q = m->sched.qhead;
}

double farm_job_peek(const farm_job *m, farm_cursor *c) {
  while (c->q < m->plan.nqueue && !task_ready(&m->plan, m->plan.queue[c->q].task)) c->q++;
  return c->q < m->plan.nqueue ? task_s(m, m->plan.queue[c->q].task, m->plan.queue[c->q].est_s) : -1;
}

int farm_job_put(farm_job *m, farm_cursor *c, farm_buf *out, enpu_err *err) {
  ENPU_RETURN_IF(farm_job_peek(m, c) < 0, err, ENPU_ERR_INTERNAL, "no task is ready");
  const uint32_t t = m->plan.queue[c->q++].task, job = (uint32_t)m->index;
  c->task = t;
  const farm_task_ref r = farm_task_at(&m->plan, t);
  if (r.kind != K_BUCKET) {
    const int part = r.kind == K_PART ? m->plan.parts[r.index].part : -1;
    const mop *o = &m->plan.ops[farm_task_op(&m->plan, r)];
    const mbucket *b = &m->plan.buckets[o->bucket];
    ENPU_FORWARD(farm_task_put_op(out, job, t, o->policy, o->key, b->phase, b->batch, b->seq, o->op, part, err));
  } else {
    const mtask *bt = &m->plan.bt[r.index];
    const mbucket *b = &m->plan.buckets[bt->bucket];
    const farm_buf **sets = enpu_calloc((size_t)bt->nops + 1, sizeof *sets);
    ENPU_RETURN_IF(!sets, err, ENPU_ERR_NOMEM, "out of memory (task sets)");
    int rc = 0;
    for (int k = 0; rc == 0 && k < bt->nops; k++) {
      rc = op_record(m, bt->ops[k], err);
      sets[k] = &m->plan.ops[bt->ops[k]].record;
    }
    if (rc == 0)
      rc = farm_task_put_bucket(out, job, t, bt->policy, bt->input_hash, b->phase, b->batch, b->seq, sets,
                                (uint32_t)bt->nops, err);
    free(sets);
    ENPU_FORWARD(rc);
  }
  *farm_task_status(&m->plan, r) = T_RUNNING;
  return 0;
}

int farm_job_settled(const farm_job *m) { return m->sum->tasks_done + m->sum->tasks_failed == m->sum->tasks_total; }

double farm_job_left_s(const farm_job *m) {
  const double seen = m->sched.est_seen[0] + m->sched.est_seen[1];
  const double scale = seen > 0 ? (m->sched.sec_per_est[0] + m->sched.sec_per_est[1]) / seen : 1;
  return (m->sched.est_total_s - m->sched.est_done_s) * scale;
}

void farm_job_estimates(const farm_job *m, double *done, double *total) {
  *done = m->sched.est_done_s;
  *total = m->sched.est_total_s;
}

const char *farm_job_store(const farm_job *m) { return m->store_path; }
