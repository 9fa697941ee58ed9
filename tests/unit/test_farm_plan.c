/* test_farm_plan.c — the master's task graph and scheduling without MPI: the plan of the
 * demo job (task ids, the op → bucket edges, the wanted set, the queue longest first,
 * added buckets recorded and checked), and a whole farm run in this process
 * (farm_job_* driven by farm_exec_batch, what a worker runs) whose store must not depend
 * on the order results are taken in: bucket tasks become ready only when their ops are
 * known, and a run taking each batch's results backwards writes the same store. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "farm_job_internal.h"
#include "store_fixture.h"
#include "test_farm.h"

#define DEMO_JOB ENPU_SOURCE_DIR "/jobs/demo.json"

static config_job *load_demo(void) {
  config_job *job = NULL;
  enpu_err err = {0};
  if (config_job_load(DEMO_JOB, &job, &err) < 0) fail_msg("%s", err.msg);
  return job;
}

/* Every id maps to one task, kinds in id order, and back: ops, parts, buckets. */
static void check_task_ids(const farm_plan *p) {
  int seen[3] = {0};
  int last_kind = K_OP;
  for (uint32_t t = 0; t < farm_task_count(p); t++) {
    const farm_task_ref r = farm_task_at(p, t);
    assert_true(r.kind >= last_kind);
    last_kind = r.kind;
    assert_int_equal(r.index, seen[r.kind]++);
  }
  assert_int_equal(seen[K_OP], p->nops);
  assert_int_equal(seen[K_PART], p->nparts);
  assert_int_equal(seen[K_BUCKET], p->nbt);
}

/* Ops unique and sorted; each bucket task's ops ascending, each edge both ways. */
static void check_edges(const farm_plan *p) {
  for (int i = 1; i < p->nops; i++)
    assert_true(p->ops[i - 1].policy < p->ops[i].policy ||
                (p->ops[i - 1].policy == p->ops[i].policy && p->ops[i - 1].key < p->ops[i].key));
  int64_t edges = 0;
  for (int j = 0; j < p->nbt; j++) {
    const mtask *t = &p->bt[j];
    assert_true(t->nops > 0);
    for (int k = 0; k < t->nops; k++) {
      assert_true(k == 0 || t->ops[k - 1] < t->ops[k]);
      const mop *o = &p->ops[t->ops[k]];
      assert_int_equal(o->policy, t->op_policy);
      int found = 0;
      for (int d = 0; d < o->dep_count; d++) found |= p->deps[o->dep_first + d] == j;
      assert_true(found);
    }
    edges += t->nops;
  }
  int64_t back = 0;
  for (int i = 0; i < p->nops; i++) back += p->ops[i].dep_count;
  assert_int_equal(back, edges);
}

void test_plan_demo(void **state) {
  (void)state;
  config_job *job = load_demo();
  farm_plan p = {0};
  char *added = NULL;
  enpu_err err = {0};
  assert_int_equal(farm_plan_build(&p, job, NULL, 0, &added, "store", &err), 0);
  assert_null(added); /* every bucket is the grid's */
  assert_int_equal(p.nbuckets, 8);
  assert_int_equal(p.nbt, job->policy_count * p.nbuckets); /* every demo bucket fits */
  assert_int_equal(p.nparts, 0);                           /* no `ideal`: nothing split */
  check_task_ids(&p);
  check_edges(&p);
  for (int k = 0; k < job->policy_count; k++) {
    assert_int_equal(p.wanted[k].nbuckets, (size_t)p.nbuckets);
    assert_int_equal(p.wanted[k].policy, p.code[k]);
  }
  farm_state *st;
  assert_int_equal(farm_state_create(&st, &err), 0);
  assert_int_equal(farm_plan_mark_known(&p, st), 0); /* an empty state knows nothing */
  farm_summary sum = {0};
  double est_total = 0;
  assert_int_equal(farm_plan_queue(&p, &sum, &est_total, &err), 0);
  assert_int_equal(p.nqueue, p.nops + p.nbt);
  assert_int_equal(sum.tasks_total, p.nqueue);
  assert_int_equal(sum.op_tasks, p.nops);
  assert_int_equal(sum.bucket_tasks, p.nbt);
  assert_true(est_total > 0);
  for (int q = 1; q < p.nqueue; q++) assert_true(p.queue[q - 1].est_s >= p.queue[q].est_s);
  for (int j = 0; j < p.nbt; j++) assert_int_equal(p.bt[j].waiting, p.bt[j].nops);
  farm_state_free(st);
  farm_plan_free(&p);
  config_job_free(job);
}

void test_plan_added_buckets(void **state) {
  (void)state;
  config_job *job = load_demo();
  enpu_err err = {0};
  /* One bucket outside the grid, given twice (once as a previous store's): kept once,
   * and recorded for the store. */
  const farm_bucket_spec add[] = {{CONFIG_DECODE, 16, 2048}};
  char *added = strdup("[{\"phase\":\"decode\",\"batch\":16,\"seq\":2048}]");
  farm_plan p = {0};
  assert_int_equal(farm_plan_build(&p, job, add, 1, &added, "store", &err), 0);
  assert_int_equal(p.nbuckets, 9);
  assert_non_null(added);
  assert_string_equal(added, "[{\"phase\":\"decode\",\"batch\":16,\"seq\":2048}]");
  check_task_ids(&p);
  check_edges(&p);
  farm_plan_free(&p);
  free(added);
  /* A bucket outside the job's ranges, and a previous store's record that is no bucket. */
  const farm_bucket_spec bad[] = {{CONFIG_DECODE, 0, 2048}};
  farm_plan q = {0};
  added = NULL;
  assert_true(farm_plan_build(&q, job, bad, 1, &added, "store", &err) < 0);
  assert_non_null(strstr(err.msg, "added bucket decode batch 0"));
  farm_plan_free(&q);
  farm_plan r = {0};
  added = strdup("[{\"phase\":\"decode\"}]");
  assert_int_equal(farm_plan_build(&r, job, NULL, 0, &added, "the.h5", &err), ENPU_ERR_FORMAT);
  assert_non_null(strstr(err.msg, "the.h5: added_buckets_json[0]"));
  farm_plan_free(&r);
  free(added);
  config_job_free(job);
}

/* A batch handed out again, as when its rank goes silent (farm_job_requeue): its tasks
 * put into a second batch, the first batch's results taken (they count), then the
 * second's (every one a duplicate, ignored). */
static void requeue_and_take(farm_job *j, farm_exec *x, const uint32_t *ids, int n, farm_task_result *trs) {
  enpu_err err = {0};
  for (int i = 0; i < n; i++) assert_int_equal(farm_job_requeue(j, ids[i], &err), 0);
  farm_buf again = {0}, results = {0};
  farm_cursor c;
  farm_job_cursor(j, &c);
  int m = 0;
  for (; farm_job_peek(j, &c) >= 0; m++) assert_int_equal(farm_job_put(j, &c, &again, &err), 0);
  assert_int_equal(m, n);
  const int64_t done = j->sum->tasks_done;
  for (int i = 0; i < n; i++) {
    int dup = -1;
    if (farm_job_take(j, &trs[i], &dup, &err) < 0) fail_msg("%s", err.msg);
    assert_int_equal(dup, 0);
  }
  assert_int_equal(j->sum->tasks_done, done + n);
  assert_int_equal(farm_exec_batch(x, again.data, again.len, &results, &err), 0);
  size_t off = 0;
  farm_task_result tr;
  while (farm_result_next(results.data, results.len, &off, &tr, &err) == 1) {
    int dup = -1;
    if (farm_job_take(j, &tr, &dup, &err) < 0) fail_msg("%s", err.msg);
    assert_int_equal(dup, 1);
  }
  assert_int_equal(j->sum->tasks_done, done + n);
  farm_buf_free(&again);
  farm_buf_free(&results);
}

/* Run the demo job in this process into `store`: batches of every ready task, their
 * results taken forwards or backwards, or (requeue) each batch handed out twice
 * (requeue_and_take). Checks that a bucket task is handed out only once its ops are
 * known. */
static void run_in_process(const char *store, int backwards, int requeue) {
  farm_options o;
  farm_options_default(&o);
  const char *paths[] = {DEMO_JOB};
  o.job_paths = paths, o.njobs = 1, o.quiet = 1;
  farm_summary sum = {0};
  farm_job *j = NULL;
  farm_exec *x = NULL;
  enpu_err err = {0};
  if (farm_job_setup(&o, NULL, DEMO_JOB, store, 0, NULL, NULL, &sum, &j, &err) < 0) fail_msg("%s", err.msg);
  assert_int_equal(farm_exec_create(NULL, paths, 1, NULL, &x, &err), 0);
  farm_buf tasks = {0}, results = {0};
  farm_task_result *trs = calloc((size_t)farm_task_count(&j->plan), sizeof *trs);
  uint32_t *ids = calloc((size_t)farm_task_count(&j->plan), sizeof *ids);
  assert_non_null(trs);
  assert_non_null(ids);
  while (!farm_job_settled(j)) {
    farm_cursor c;
    farm_job_cursor(j, &c);
    tasks.len = results.len = 0;
    int n = 0;
    for (; farm_job_peek(j, &c) >= 0; n++) {
      const farm_task_ref r = farm_task_at(&j->plan, j->plan.queue[c.q].task);
      if (r.kind == K_BUCKET)
        for (int k = 0; k < j->plan.bt[r.index].nops; k++)
          assert_int_equal(j->plan.ops[j->plan.bt[r.index].ops[k]].status, T_KNOWN);
      assert_int_equal(farm_job_put(j, &c, &tasks, &err), 0);
      ids[n] = c.task;
    }
    assert_true(n > 0);
    assert_int_equal(farm_exec_batch(x, tasks.data, tasks.len, &results, &err), 0);
    size_t off = 0;
    int got = 0;
    while (farm_result_next(results.data, results.len, &off, &trs[got], &err) == 1) got++;
    assert_int_equal(got, n);
    if (requeue) {
      requeue_and_take(j, x, ids, n, trs);
      continue;
    }
    for (int i = 0; i < got; i++)
      if (farm_job_take(j, &trs[backwards ? got - 1 - i : i], NULL, &err) < 0) fail_msg("%s", err.msg);
  }
  assert_int_equal(sum.tasks_failed, 0);
  assert_int_equal(sum.tasks_done, sum.tasks_total);
  assert_int_equal(farm_job_sync(j, &err), 0);
  assert_int_equal(farm_job_checkpoint(j, &err), 0);
  free(trs);
  free(ids);
  farm_buf_free(&tasks);
  farm_buf_free(&results);
  farm_exec_free(x);
  farm_job_free(j);
}

/* The same store whatever the order results come in, and when every batch is handed
 * out twice (a silent rank's, farm.c): duplicates change nothing. */
void test_sched_order_free(void **state) {
  (void)state;
  char dir[STORE_FIXTURE_DIR_LEN], a[STORE_FIXTURE_PATH_LEN], b[STORE_FIXTURE_DIR_LEN + 8],
      c[STORE_FIXTURE_DIR_LEN + 8];
  assert_int_equal(store_fixture_dir_make("test_farm_plan", dir, a), 0);
  snprintf(b, sizeof b, "%s/b.h5", dir);
  snprintf(c, sizeof c, "%s/c.h5", dir);
  run_in_process(a, 0, 0);
  run_in_process(b, 1, 0);
  run_in_process(c, 0, 1);
  store_contents *ca = NULL, *cb = NULL, *cc = NULL;
  enpu_err err = {0};
  assert_int_equal(store_load(a, &ca, &err), 0);
  assert_int_equal(store_load(b, &cb, &err), 0);
  assert_int_equal(store_load(c, &cc, &err), 0);
  size_t ndiff = 1;
  assert_int_equal(store_diff(ca, cb, NULL, NULL, &ndiff, &err), 0);
  assert_int_equal(ndiff, 0);
  ndiff = 1;
  assert_int_equal(store_diff(ca, cc, NULL, NULL, &ndiff, &err), 0);
  assert_int_equal(ndiff, 0);
  assert_int_equal(ca->npolicies, 4);
  store_contents_free(ca);
  store_contents_free(cb);
  store_contents_free(cc);
  assert_int_equal(store_fixture_dir_remove(dir), 0);
}
