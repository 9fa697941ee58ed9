/* test_store_bundle.c — bucket bundles through a policy builder, and validation rows
 * carried across a rewrite (the store module's unit tests, one program: test_store.c
 * runs these with its own; test_store.h has what the files share). */
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
 * Bucket bundles: a policy builder assigns the rows, store_bucket_bundle_read gives the
 * bundles back (from the builder's tables and from the store written with them). */

/* Op i of the bundle tests: signature 100 (i + 1), i + 2 points, slower and cheaper. */
static void bundle_op(store_policy_builder *b, int i) {
  store_pareto_rec pts[8] = {{0}};
  for (int k = 0; k < i + 2; k++) {
    pts[k].time_ns = pt_time(i, k);
    pts[k].energy_nj = pt_energy(i, k);
    for (int c = 0; c < STORE_NSTATE; c++) pts[k].states[c] = (uint8_t)(20 - k - c);
  }
  store_op_rec o = {.signature = 100u * (uint64_t)(i + 1), .kind = (uint32_t)i, .evaluations = 7};
  snprintf(o.name, sizeof o.name, "layer.op%d", i);
  enpu_err err = {0};
  assert_int_equal(store_policy_builder_add_op(b, &o, pts, (uint32_t)(i + 2), &err), 0);
}

/* A bundle over ops 100 (2 instances) and 300 (1): a walk of three steps, two plans
 * (all-fastest, and the whole walk with one state that is no Pareto point). */
typedef struct {
  store_bucket_bundle b;
  store_bundle_op ops[2];
  store_walk_rec walk[3];
  store_plan_rec plans[2];
  store_plan_state_rec states[5];
} test_bundle;

static void make_bundle(test_bundle *t, int batch) {
  memset(t, 0, sizeof *t);
  t->ops[0] = (store_bundle_op){100, 2};
  t->ops[1] = (store_bundle_op){300, 1};
  t->walk[0] = (store_walk_rec){.op = 0, .pareto = 1, .instances = 1, .time_ns = 510, .energy_nj = 90};
  t->walk[1] = (store_walk_rec){.op = 0, .pareto = 1, .instances = 1, .time_ns = 520, .energy_nj = 80};
  t->walk[2] = (store_walk_rec){.op = 1, .pareto = 3, .instances = 1, .time_ns = 530, .energy_nj = 70};
  t->plans[0] = (store_plan_rec){
      .slack = 0, .time_ns = 500, .walk_prefix = 0, .states_first = 0, .states_count = 2};
  t->plans[1] = (store_plan_rec){
      .slack = 0.1, .time_ns = 530, .walk_prefix = 3, .states_first = 2, .states_count = 3};
  const store_plan_state_rec st[5] = {{.plan = 0, .op = 0, .pareto = 0, .instances = 2},
                                      {.plan = 0, .op = 1, .pareto = 0, .instances = 1},
                                      {.plan = 1, .op = 0, .pareto = 1, .instances = 1},
                                      {.plan = 1, .op = 0, .pareto = STORE_NO_INDEX, .instances = 1},
                                      {.plan = 1, .op = 1, .pareto = 3, .instances = 1}};
  memcpy(t->states, st, sizeof st);
  t->b = (store_bucket_bundle){.bucket = {.phase = STORE_PHASE_DECODE,
                                          .batch = batch,
                                          .seq = 2048,
                                          .input_hash = 77,
                                          .t_nodvfs_ns = 600,
                                          .walk_start_time_ns = 500},
                               .nops = 2,
                               .ops = t->ops,
                               .nwalk = 3,
                               .walk = t->walk,
                               .nplans = 2,
                               .plans = t->plans,
                               .nstates = 5,
                               .states = t->states};
  snprintf(t->b.bucket.message, sizeof t->b.bucket.message, "offloaded %d", batch);
}

static void assert_same_bundle(const store_bucket_bundle *x, const store_bucket_bundle *y) {
  assert_true(x->bucket.phase == y->bucket.phase && x->bucket.batch == y->bucket.batch &&
              x->bucket.seq == y->bucket.seq);
  assert_true(x->bucket.status == y->bucket.status && x->bucket.input_hash == y->bucket.input_hash);
  assert_true(x->bucket.t_nodvfs_ns == y->bucket.t_nodvfs_ns);
  assert_string_equal(x->bucket.message, y->bucket.message);
  assert_true(x->nops == y->nops && x->nwalk == y->nwalk && x->nplans == y->nplans && x->nstates == y->nstates);
  assert_memory_equal(x->ops, y->ops, x->nops * sizeof *x->ops);
  for (uint64_t i = 0; i < x->nwalk; i++) {
    const store_walk_rec *a = &x->walk[i], *b = &y->walk[i];
    assert_true(a->bucket == 0 && b->bucket == 0 && a->op == b->op && a->pareto == b->pareto);
    assert_true(a->instances == b->instances && a->time_ns == b->time_ns && a->energy_nj == b->energy_nj);
  }
  for (uint32_t i = 0; i < x->nplans; i++) {
    const store_plan_rec *a = &x->plans[i], *b = &y->plans[i];
    assert_true(a->bucket == 0 && b->bucket == 0 && a->slack == b->slack && a->time_ns == b->time_ns);
    assert_true(a->walk_prefix == b->walk_prefix && a->states_first == b->states_first &&
                a->states_count == b->states_count);
  }
  for (uint64_t i = 0; i < x->nstates; i++) {
    const store_plan_state_rec *a = &x->states[i], *b = &y->states[i];
    assert_true(a->plan == b->plan && a->op == b->op && a->pareto == b->pareto && a->instances == b->instances);
  }
}

/* Read bucket i of t and compare it with `want`. */
static void assert_reads_back(const store_policy_tables *t, uint32_t i, const store_bucket_bundle *want) {
  store_bucket_bundle got;
  enpu_err err = {0};
  assert_int_equal(store_bucket_bundle_read(t, i, &got, &err), 0);
  assert_same_bundle(&got, want);
  store_bucket_bundle_free(&got);
}

static void test_bundle_round_trip(void **state) {
  ctx *c = *state;
  enpu_err err = {0};
  store_policy_builder *b = NULL;
  assert_int_equal(store_policy_builder_create(POLICY, &b, &err), 0);
  for (int i = 0; i < 3; i++) bundle_op(b, i); /* signatures 100, 200, 300 */
  test_bundle x, y;
  make_bundle(&x, 8);
  make_bundle(&y, 16);
  y.b.nops = 1, y.ops[0] = (store_bundle_op){200, 3}; /* one op, no walk, an all-fastest plan */
  y.b.nwalk = 0, y.b.nplans = 1, y.b.nstates = 1;
  y.states[0] = (store_plan_state_rec){.plan = 0, .op = 0, .pareto = 0, .instances = 3};
  y.plans[0].states_count = 1;
  const store_bucket_bundle pending = {
      .bucket = {.phase = 0, .status = STORE_BUCKET_PENDING, .batch = 1, .seq = 64}};
  assert_int_equal(store_bucket_bundle_append(b, &x.b, &err), 1);
  assert_int_equal(store_bucket_bundle_append(b, &y.b, &err), 1);
  assert_int_equal(store_bucket_bundle_append(b, &pending, &err), 1);
  const store_policy_tables *t = store_policy_builder_tables(b);
  assert_string_equal(t->name, POLICY);
  assert_true(t->nops == 3 && t->npareto == 2 + 3 + 4 && t->nbuckets == 3);
  /* Rows are the next ones of every table, bucket after bucket, and point where they should. */
  assert_true(t->nbucket_ops == 3 && t->nwalk == 3 && t->nplans == 3 && t->nplan_states == 6);
  const store_bucket_rec *r = t->buckets;
  assert_true(r[0].ops_first == 0 && r[0].ops_count == 2 && r[0].walk_first == 0 && r[0].walk_count == 3);
  assert_true(r[1].ops_first == 2 && r[1].ops_count == 1 && r[1].walk_first == 3 && r[1].walk_count == 0);
  assert_true(r[0].plan_first == 0 && r[1].plan_first == 2 && r[2].plan_first == 3 && r[2].ops_first == 3);
  assert_true(t->bucket_ops[0].op == 0 && t->bucket_ops[1].op == 2 && t->bucket_ops[2].op == 1);
  assert_true(t->walk[2].bucket == 0 && t->walk[2].op == 2 && t->walk[2].pareto == t->ops[2].pareto_first + 3);
  assert_true(t->plans[2].bucket == 1 && t->plans[2].states_first == 5 && t->plan_states[5].plan == 2);
  assert_true(t->plan_states[3].pareto == STORE_NO_INDEX && t->pareto[t->ops[1].pareto_first].op == 1);
  assert_reads_back(t, 0, &x.b);
  assert_reads_back(t, 1, &y.b);
  assert_reads_back(t, 2, &pending);
  /* The same through a real store: the readers accept what the builder wrote. */
  char path[160];
  snprintf(path, sizeof path, "%s/bundles.h5", c->dir);
  store_writer *w = NULL;
  store_lock *lock = NULL;
  assert_int_equal(store_fixture_writer(path, &test_prov, 3, &lock, &w, &err), 0);
  assert_int_equal(store_writer_append_tables(w, t, &err), 0);
  assert_int_equal(store_writer_commit(w, &err), 0);
  store_writer_free(w);
  store_lock_release(lock);
  store_policy_builder_free(b);
  store_contents *s = NULL;
  assert_int_equal(store_load(path, &s, &err), 0);
  assert_int_equal(s->npolicies, 1);
  assert_reads_back(&s->policies[0], 0, &x.b);
  assert_reads_back(&s->policies[0], 1, &y.b);
  store_bucket_bundle none;
  assert_int_equal(store_bucket_bundle_read(&s->policies[0], 3, &none, &err), ENPU_ERR_FORMAT);
  store_contents_free(s);
}

/* Expect append to refuse the bundle with `code` and leave the tables as they were. */
static void expect_refused(store_policy_builder *b, const store_bucket_bundle *x, int code, const char *what) {
  enpu_err err = {0};
  const size_t nbuckets = store_policy_builder_tables(b)->nbuckets, nwalk = store_policy_builder_tables(b)->nwalk;
  const int rc = store_bucket_bundle_append(b, x, &err);
  if (rc != code) fail_msg("%s: append gave %d, expected %d", what, rc, code);
  assert_true(code == 0 || err.msg[0] != '\0');
  assert_int_equal(store_policy_builder_tables(b)->nbuckets, nbuckets);
  assert_int_equal(store_policy_builder_tables(b)->nwalk, nwalk);
}

/* Ways to spoil the bundle of make_bundle (over ops 200 and 300 of test_bundle_bad_input's
 * builder: three and four points). */
static void spoil_point(test_bundle *t) { t->walk[2].pareto = 4; }
static void spoil_step_back(test_bundle *t) { t->walk[1].pareto = 0; }
static void spoil_walk_op(test_bundle *t) { t->walk[2].op = 2; }
static void spoil_order(test_bundle *t) { t->ops[1].signature = 200; }
static void spoil_prefix(test_bundle *t) { t->plans[1].walk_prefix = 4; }
static void spoil_state_plan(test_bundle *t) { t->states[2].plan = 2; }
static void spoil_budget(test_bundle *t) { t->b.bucket.budget = STORE_BUDGET_PAPER; }
static void spoil_nothing(test_bundle *t) { (void)t; }

static void test_bundle_bad_input(void **state) {
  (void)state;
  enpu_err err = {0};
  store_policy_builder *b = NULL;
  assert_int_equal(store_policy_builder_create("a/b", &b, &err), ENPU_ERR_INVALID);
  assert_int_equal(store_policy_builder_create(POLICY, &b, &err), 0);
  bundle_op(b, 1); /* 200 */
  store_op_rec o = {.signature = 150};
  store_pareto_rec pt = {0};
  assert_int_equal(store_policy_builder_add_op(b, &o, &pt, 1, &err), ENPU_ERR_INVALID); /* below 200 */
  o.signature = 900;
  assert_int_equal(store_policy_builder_add_op(b, &o, &pt, 0, &err), ENPU_ERR_INVALID); /* no points */
  bundle_op(b, 2);                                                                      /* 300: four points */
  test_bundle x;
  make_bundle(&x, 8);
  expect_refused(b, &x.b, 0, "op 100 not in the builder");
  const struct {
    void (*spoil)(test_bundle *t);
    int code;
    const char *what;
  } cases[] = {{spoil_point, ENPU_ERR_FORMAT, "point past the op's four"},
               {spoil_step_back, ENPU_ERR_FORMAT, "a step back to the point left"},
               {spoil_walk_op, ENPU_ERR_FORMAT, "walk op past the bundle's ops"},
               {spoil_order, ENPU_ERR_FORMAT, "ops not ascending"},
               {spoil_prefix, ENPU_ERR_FORMAT, "walk prefix past the walk"},
               {spoil_state_plan, ENPU_ERR_FORMAT, "state of no plan"},
               {spoil_budget, ENPU_ERR_FORMAT, "plans in another budget mode than the bucket"},
               {spoil_nothing, 1, "the bundle as made: appended"}};
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    make_bundle(&x, 8);
    x.ops[0].signature = 200;
    cases[i].spoil(&x);
    if (cases[i].code <= 0) expect_refused(b, &x.b, cases[i].code, cases[i].what);
    else assert_int_equal(store_bucket_bundle_append(b, &x.b, &err), 1);
  }
  store_policy_builder_free(b);
  store_policy_builder_free(NULL);
  store_bucket_bundle_free(NULL);
}

/* ---------------------------------------------------------------------------------
 * Validation rows across a rewrite: a store's rows are carried into a store rebuilt from
 * bundles exactly for the plans it holds unchanged, re-indexed. */

/* Policy POLICY of `bundles` (ops 100, 200, 300) published at `path`, with `nval`
 * validation rows and a replay row when `val` is given, and the rows `set` carries
 * (adding to *n). */
static void write_bundles(const char *path, const store_bucket_bundle *const *bundles, int nbundles,
                          const store_validation_rec *val, size_t nval, const store_validation_set *set,
                          store_validation_counts *n) {
  enpu_err err = {0};
  store_policy_builder *b = NULL;
  assert_int_equal(store_policy_builder_create(POLICY, &b, &err), 0);
  for (int i = 0; i < 3; i++) bundle_op(b, i);
  for (int i = 0; i < nbundles; i++) assert_int_equal(store_bucket_bundle_append(b, bundles[i], &err), 1);
  store_writer *w = NULL;
  store_lock *lock = NULL;
  assert_int_equal(store_fixture_writer(path, &test_prov, 3, &lock, &w, &err), 0);
  assert_int_equal(store_writer_append_tables(w, store_policy_builder_tables(b), &err), 0);
  const store_validation_replay_rec replay = {.requests = 10, .served = 9, .seed = 1, .sample = 2};
  if (val) assert_int_equal(store_writer_append(w, POLICY, STORE_T_VALIDATION, val, nval, &err), 0);
  if (val) assert_int_equal(store_writer_append(w, POLICY, STORE_T_VALIDATION_REPLAY, &replay, 1, &err), 0);
  assert_int_equal(store_validation_carry(set, w, store_policy_builder_tables(b), n, &err), 0);
  assert_int_equal(store_validation_carry_replay(set, w, n, &err), 0);
  assert_int_equal(store_writer_commit(w, &err), 0);
  store_writer_free(w);
  store_lock_release(lock);
  store_policy_builder_free(b);
}

/* The validation row of plan k of bundle x, at rows (bucket, plan). */
static store_validation_rec val_row(uint32_t bucket, uint32_t plan, const test_bundle *x, int k) {
  store_validation_rec v = {.bucket = bucket,
                            .plan = plan,
                            .phase = x->b.bucket.phase,
                            .pass = 1,
                            .batch = x->b.bucket.batch,
                            .seq = x->b.bucket.seq,
                            .slack = x->plans[k].slack,
                            .stored_time_ns = x->plans[k].time_ns,
                            .sim_time_ns = x->plans[k].time_ns};
  snprintf(v.message, sizeof v.message, "row %u", plan);
  return v;
}

/* Rewrite the store at `from` as `to` from `bundles`, carrying its rows; the counts, and
 * the new store loaded (store_load checks every row names a plan of its bucket). */
static store_validation_counts rewrite(const char *from, const char *to, const store_bucket_bundle *const *bundles,
                                       int nbundles, store_contents **out) {
  enpu_err err = {0};
  store_contents *c = NULL;
  store_validation_set *set = NULL;
  assert_int_equal(store_load(from, &c, &err), 0);
  assert_int_equal(store_validation_set_create(c, &set, &err), 0);
  store_contents_free(c);
  store_validation_counts n = {0};
  write_bundles(to, bundles, nbundles, NULL, 0, set, &n);
  store_validation_set_free(set);
  assert_int_equal(store_load(to, out, &err), 0);
  return n;
}

static void test_validation_carry(void **state) {
  ctx *c = *state;
  char a[160], b[160], d[160];
  snprintf(a, sizeof a, "%s/val_a.h5", c->dir);
  snprintf(b, sizeof b, "%s/val_b.h5", c->dir);
  snprintf(d, sizeof d, "%s/val_d.h5", c->dir);
  test_bundle x, y, z;
  make_bundle(&x, 8);
  make_bundle(&y, 16);
  make_bundle(&z, 4);
  const store_validation_rec val[3] = {val_row(1, 3, &y, 1), val_row(0, 0, &x, 0), val_row(0, 1, &x, 1)};
  const store_bucket_bundle *same[2] = {&x.b, &y.b};
  write_bundles(a, same, 2, val, 3, NULL, &(store_validation_counts){0});
  enpu_err err = {0};
  store_contents *ca = NULL, *cb = NULL;
  assert_int_equal(store_load(a, &ca, &err), 0);
  /* Nothing changed: every row, the replay row too, comes back as it was. */
  store_validation_counts n = rewrite(a, b, same, 2, &cb);
  assert_true(n.kept == 3 && n.dropped == 0 && n.replay_kept == 1 && n.replay_dropped == 0);
  uint64_t ha = 0, hb = 0;
  assert_int_equal(store_content_hash(ca, &ha, &err), 0);
  assert_int_equal(store_content_hash(cb, &hb, &err), 0);
  assert_true(ha == hb && cb->policies[0].nvalidation == 3 && cb->policies[0].nvalidation_replay == 1);
  store_contents_free(cb);
  /* A bucket added before both (rows move), y recompiled (another input hash), x's second
   * plan changed: only x's first plan keeps its row, re-indexed; the replay row goes. */
  y.b.bucket.input_hash = 78;
  x.plans[1].energy_nj = 1;
  const store_bucket_bundle *changed[3] = {&z.b, &x.b, &y.b};
  n = rewrite(a, d, changed, 3, &cb);
  assert_true(n.kept == 1 && n.dropped == 2 && n.replay_kept == 0 && n.replay_dropped == 1);
  const store_policy_tables *t = &cb->policies[0];
  assert_true(t->nvalidation == 1 && t->nvalidation_replay == 0);
  const store_validation_rec *got = &t->validation[0], *was = &ca->policies[0].validation[1];
  assert_true(got->bucket == 1 && got->plan == 2); /* z's bucket and its two plans come first */
  assert_true(t->buckets[1].batch == 8 && t->plans[2].bucket == 1 && t->plans[2].time_ns == got->stored_time_ns);
  assert_true(got->batch == was->batch && got->seq == was->seq && got->slack == was->slack &&
              got->sim_time_ns == was->sim_time_ns && got->pass == was->pass);
  assert_string_equal(got->message, "row 0");
  store_contents_free(cb);
  store_contents_free(ca);
}

TEST_PART(store_bundle, cmocka_unit_test(test_bundle_round_trip), cmocka_unit_test(test_bundle_bad_input),
          cmocka_unit_test(test_validation_carry));
