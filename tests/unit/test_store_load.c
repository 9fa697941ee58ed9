/* test_store_load.c — store_load field by field and store_diff (the store module's unit
 * tests, one program: test_store.c runs these with its own; test_store.h has what the
 * files share). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <hdf5.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <zstd.h>
#include "planstore.h"
#include "store.h"
#include "store_fixture.h"
#include "test_store.h"

/* ---------------------------------------------------------------------------------
 * store_load: the whole store back, field by field */

static void check_ops(const store_op_rec *got, const store_op_rec *want, size_t n) {
  for (size_t i = 0; i < n; i++) {
    assert_int_equal(got[i].signature, want[i].signature);
    assert_int_equal(got[i].kind, want[i].kind);
    assert_int_equal(got[i].pareto_first, want[i].pareto_first);
    assert_int_equal(got[i].pareto_count, want[i].pareto_count);
    assert_int_equal(got[i].evaluations, want[i].evaluations);
    assert_string_equal(got[i].name, want[i].name);
  }
}

static void check_pareto(const store_pareto_rec *got, const store_pareto_rec *want, size_t n) {
  for (size_t i = 0; i < n; i++) {
    assert_int_equal(got[i].op, want[i].op);
    assert_memory_equal(got[i].states, want[i].states, STORE_NSTATE);
    assert_near(got[i].time_ns, want[i].time_ns, 0);
    assert_near(got[i].energy_nj, want[i].energy_nj, 0);
    for (int c = 0; c < STORE_NENERGY; c++)
      assert_near(got[i].energy_by_slot_nj[c], want[i].energy_by_slot_nj[c], 0);
  }
}

static void check_buckets(const store_bucket_rec *got, const store_bucket_rec *want, size_t n) {
  for (size_t i = 0; i < n; i++) {
    const store_bucket_rec *g = &got[i], *w = &want[i];
    assert_int_equal(g->phase, w->phase);
    assert_int_equal(g->status, w->status);
    assert_int_equal(g->input_hash, w->input_hash);
    assert_int_equal(g->batch, w->batch);
    assert_int_equal(g->seq, w->seq);
    assert_near(g->t_nodvfs_ns, w->t_nodvfs_ns, 0);
    assert_near(g->t_peak_ns, w->t_peak_ns, 0);
    assert_near(g->e_nodvfs_nj, w->e_nodvfs_nj, 0);
    assert_near(g->walk_start_time_ns, w->walk_start_time_ns, 0);
    assert_near(g->walk_start_energy_nj, w->walk_start_energy_nj, 0);
    assert_int_equal(g->ops_first, w->ops_first);
    assert_int_equal(g->ops_count, w->ops_count);
    assert_int_equal(g->walk_first, w->walk_first);
    assert_int_equal(g->walk_count, w->walk_count);
    assert_int_equal(g->plan_first, w->plan_first);
    assert_int_equal(g->plan_count, w->plan_count);
    assert_string_equal(g->message, w->message);
  }
}

static void check_rest(const store_policy_tables *p, const fixture *f) {
  for (size_t i = 0; i < f->nbops; i++) {
    assert_int_equal(p->bucket_ops[i].bucket, f->bops[i].bucket);
    assert_int_equal(p->bucket_ops[i].op, f->bops[i].op);
    assert_int_equal(p->bucket_ops[i].multiplicity, f->bops[i].multiplicity);
  }
  for (size_t i = 0; i < f->nwalk; i++) {
    const store_walk_rec *g = &p->walk[i], *w = &f->walk[i];
    assert_int_equal(g->bucket, w->bucket);
    assert_int_equal(g->op, w->op);
    assert_int_equal(g->pareto, w->pareto);
    assert_int_equal(g->instances, w->instances);
    assert_near(g->time_ns, w->time_ns, 0);
    assert_near(g->energy_nj, w->energy_nj, 0);
  }
  for (size_t i = 0; i < f->nplans; i++) {
    const store_plan_rec *g = &p->plans[i], *w = &f->plans[i];
    assert_int_equal(g->bucket, w->bucket);
    const double got[] = {g->slack,     g->budget_ns,      g->time_ns,
                          g->energy_nj, g->lower_bound_nj, g->savings_vs_nodvfs};
    const double want[] = {w->slack,     w->budget_ns,      w->time_ns,
                           w->energy_nj, w->lower_bound_nj, w->savings_vs_nodvfs};
    for (int k = 0; k < 6; k++) assert_near(got[k], want[k], 0);
    assert_int_equal(g->walk_prefix, w->walk_prefix);
    assert_int_equal(g->states_first, w->states_first);
    assert_int_equal(g->states_count, w->states_count);
  }
  for (size_t i = 0; i < f->npstates; i++) {
    assert_int_equal(p->plan_states[i].plan, f->pstates[i].plan);
    assert_int_equal(p->plan_states[i].op, f->pstates[i].op);
    assert_int_equal(p->plan_states[i].pareto, f->pstates[i].pareto);
    assert_memory_equal(p->plan_states[i].states, f->pstates[i].states, STORE_NSTATE);
  }
}

static void test_store_load_round_trip(void **state) {
  ctx *c = *state;
  store_contents *s = NULL;
  enpu_err err = {0};
  assert_int_equal(store_load(c->path, &s, &err), 0);
  assert_int_equal(s->format_version, STORE_FORMAT_VERSION);
  assert_int_equal(s->cost_model_hash, test_prov.cost_model_hash);
  assert_int_equal(s->chip_hash, test_prov.chip_hash);
  assert_int_equal(s->model_hash, test_prov.model_hash);
  assert_int_equal(s->job_hash, test_prov.job_hash);
  assert_string_equal(s->tool_version, test_prov.tool_version);
  assert_int_equal(strlen(s->created_utc), 20); /* YYYY-MM-DDTHH:MM:SSZ */
  assert_string_equal(s->job_json, test_prov.job_json);
  assert_string_equal(s->model_json, test_prov.model_json);
  assert_string_equal(s->chip_json, test_prov.chip_json);
  assert_string_equal(s->cluster_json, test_prov.cluster_json);
  assert_string_equal(s->added_buckets_json, test_prov.added_buckets_json);
  assert_int_equal(s->npolicies, 1);
  const store_policy_tables *p = &s->policies[0];
  assert_string_equal(p->name, POLICY);
  const fixture *f = &c->f;
  assert_int_equal(p->nops, NOPS);
  assert_int_equal(p->npareto, NOPS * NPTS);
  assert_int_equal(p->nbuckets, f->nbuckets);
  assert_int_equal(p->nbucket_ops, f->nbops);
  assert_int_equal(p->nwalk, f->nwalk);
  assert_int_equal(p->nplans, f->nplans);
  assert_int_equal(p->nplan_states, f->npstates);
  check_ops(p->ops, f->ops, NOPS);
  check_pareto(p->pareto, f->pareto, NOPS * NPTS);
  check_buckets(p->buckets, f->buckets, f->nbuckets);
  check_rest(p, f);
  store_contents_free(s);
  store_contents_free(NULL);

  /* Without --add-buckets the attribute is absent, and comes back as NULL. */
  char path[160];
  snprintf(path, sizeof path, "%s/no-added.h5", c->dir);
  store_writer *w = NULL;
  store_lock *lock = NULL;
  store_provenance prov = test_prov;
  prov.added_buckets_json = NULL;
  assert_int_equal(store_fixture_writer(path, &prov, 3, &lock, &w, &err), 0);
  assert_int_equal(store_writer_commit(w, &err), 0);
  store_writer_free(w);
  store_lock_release(lock);
  assert_int_equal(store_load(path, &s, &err), 0);
  assert_null(s->added_buckets_json);
  assert_int_equal(s->npolicies, 0);
  store_contents_free(s);
}

/* store_diff on the loaded fixture: a copy is identical (created_utc differs), and one
 * changed value is reported by key and row by row. */
typedef struct {
  store_diff_entry e[8];
  size_t n;
} diff_log;

static void log_diff(const store_diff_entry *d, void *user) {
  diff_log *log = user;
  if (log->n < 8) log->e[log->n++] = *d;
}

static void test_store_diff(void **state) {
  ctx *c = *state;
  char path[160];
  snprintf(path, sizeof path, "%s/diff.h5", c->dir);
  fixture *f = calloc(1, sizeof *f);
  assert_non_null(f);
  make_fixture(f);
  enpu_err err = {0};
  store_contents *a = NULL, *b = NULL;
  diff_log log = {.n = 0};
  size_t count = 99;
  assert_int_equal(write_fixture(path, f, 1, &err), 0); /* another level: other bytes, same content */
  assert_int_equal(store_load(c->path, &a, &err), 0);
  assert_int_equal(store_load(path, &b, &err), 0);
  assert_int_equal(store_diff(a, b, log_diff, &log, &count, &err), 0);
  assert_int_equal(count, 0);
  store_contents_free(b);

  f->walk[f->buckets[3].walk_first + 2].energy_nj += 1; /* bucket row 3: prefill b4 s128 */
  f->ops[1].evaluations = 51;
  assert_int_equal(write_fixture(path, f, 3, &err), 0);
  assert_int_equal(store_load(path, &b, &err), 0);
  assert_int_equal(store_diff(a, b, log_diff, &log, &count, &err), 0);
  assert_int_equal(count, 4);
  assert_int_equal(log.e[0].what, STORE_DIFF_BUCKET);
  assert_int_equal(log.e[0].kind, STORE_DIFF_CHANGED);
  assert_int_equal(log.e[0].phase, STORE_PHASE_PREFILL);
  assert_int_equal(log.e[0].batch, 4);
  assert_int_equal(log.e[0].seq, 128);
  assert_string_equal(log.e[0].fields, "walk");
  assert_int_equal(log.e[1].what, STORE_DIFF_OP);
  assert_int_equal(log.e[1].signature, 0x1001);
  assert_string_equal(log.e[1].fields, "evaluations");
  assert_int_equal(log.e[2].what, STORE_DIFF_TABLE);
  assert_int_equal(log.e[2].table, STORE_T_OPS);
  assert_int_equal(log.e[2].first_row, 1);
  assert_int_equal(log.e[3].table, STORE_T_WALK);
  assert_int_equal(log.e[3].first_row, f->buckets[3].walk_first + 2);
  assert_int_equal(log.e[3].rows_differ, 1);
  store_contents_free(b);

  /* A bucket only in B, and a policy only in B. */
  make_fixture(f);
  f->buckets[6].seq = 4096; /* decode b8 s256 (failed) becomes b8 s4096 */
  store_writer *w = NULL;
  assert_int_equal(write_fixture(path, f, 3, &err), 0);
  assert_int_equal(store_load(path, &b, &err), 0);
  log.n = 0;
  assert_int_equal(store_diff(a, b, log_diff, &log, &count, &err), 0);
  assert_int_equal(count, 3); /* removed s256, added s4096, buckets row 6 */
  assert_int_equal(log.e[0].kind, STORE_DIFF_REMOVED);
  assert_int_equal(log.e[0].seq, 256);
  assert_int_equal(log.e[1].kind, STORE_DIFF_ADDED);
  assert_int_equal(log.e[1].seq, 4096);
  assert_int_equal(log.e[2].table, STORE_T_BUCKETS);
  store_contents_free(b);
  store_lock *lock = NULL;
  assert_int_equal(store_fixture_writer(path, &test_prov, 3, &lock, &w, &err), 0);
  assert_int_equal(store_writer_append(w, "dvfs-c", STORE_T_OPS, f->ops, 0, &err), 0);
  assert_int_equal(store_writer_commit(w, &err), 0);
  store_writer_free(w);
  store_lock_release(lock);
  assert_int_equal(store_load(path, &b, &err), 0);
  log.n = 0;
  assert_int_equal(store_diff(b, a, log_diff, &log, &count, &err), 0);
  assert_int_equal(count, 1);
  assert_int_equal(log.e[0].what, STORE_DIFF_POLICY);
  assert_int_equal(log.e[0].kind, STORE_DIFF_ADDED);
  assert_string_equal(log.e[0].policy, POLICY);
  store_contents_free(b);
  store_contents_free(a);
  free(f);
}

TEST_PART(store_load, cmocka_unit_test(test_store_load_round_trip), cmocka_unit_test(test_store_diff));
