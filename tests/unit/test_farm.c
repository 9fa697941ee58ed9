/* test_farm.c — the farm's data layer without MPI: the result codec (round trips, every
 * truncation, out-of-range indices and counts), the journal (append/sync/replay, a torn
 * tail, a flipped byte, reset) and the result state (checkpoints that do not depend on
 * insertion order, load_store giving back the checkpointed results, stale buckets), and
 * (test_farm_plan.c) the master's task graph and scheduling.
 * Results are compared through their canonical encoding, which covers every field.
 *
 *   test_farm                 run the tests
 *   test_farm --write DIR     write fuzz seeds (seed.journal, seed.op, seed.bucket)
 *   test_farm --bench [N]     journal append+sync throughput for bucket-sized records
 *                             (compressed by the journal, or packed as workers send them)
 * The module's tests are split by topic over test_farm.c and test_farm_*.c, one program
 * (test_farm.h says which file holds what; main here runs them all). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "farm_internal.h"
#include "store_fixture.h"
#include "test_farm.h"

/* ---------------------------------------------------------------------------------
 * Fixtures */

farm_op_result make_op(uint32_t policy, uint64_t key) {
  farm_op_result r = {
      .policy = policy, .key = key, .kind = (uint32_t)(key % 3), .evaluations = 1000 + key % 97, .npoints = NPTS};
  snprintf(r.name, sizeof r.name, "layer.op%llu", (unsigned long long)(key % 1000));
  r.points = calloc(NPTS, sizeof *r.points);
  assert_non_null(r.points);
  for (int p = 0; p < NPTS; p++) {
    store_pareto_rec *pt = &r.points[p];
    for (int s = 0; s < STORE_NSTATE; s++) pt->states[s] = (uint8_t)(34 - 3 * p - s);
    pt->time_ns = 100.0 * (double)(key % 7 + 1) * (1.0 + 0.5 * p);
    pt->energy_nj = 1000.0 * (double)(key % 5 + 1) * (1.0 - 0.2 * p);
    for (int k = 0; k < STORE_NENERGY; k++) pt->energy_by_slot_nj[k] = pt->energy_nj / (k + 2);
  }
  return r;
}

/* A bucket over ascending keys[0..nops): per op a walk of three steps (one instance to
 * point 1, the rest to point 1, one instance to point 2), two plans with one state per
 * op (the second plan has one state that is not a Pareto point). */
farm_bucket_result make_bucket(uint32_t policy, int phase, int batch, int seq, const uint64_t *keys, uint32_t nops,
                               uint64_t input_hash) {
  farm_bucket_result r = {.policy = policy};
  store_bucket_bundle *u = &r.bundle;
  *u = (store_bucket_bundle){.nops = nops, .nwalk = 3ull * nops, .nplans = 2, .nstates = 2ull * nops};
  store_bucket_rec *b = &u->bucket;
  b->phase = (uint8_t)phase;
  b->batch = batch;
  b->seq = seq;
  b->input_hash = input_hash;
  b->t_nodvfs_ns = 1e6 + batch;
  b->t_peak_ns = 9e5;
  b->e_nodvfs_nj = 5e6 + seq;
  b->walk_start_time_ns = 8e5;
  b->walk_start_energy_nj = 4e6;
  u->ops = calloc(nops ? nops : 1, sizeof *u->ops);
  u->walk = calloc(u->nwalk ? u->nwalk : 1, sizeof *u->walk);
  u->plans = calloc(2, sizeof *u->plans);
  u->states = calloc(u->nstates ? u->nstates : 1, sizeof *u->states);
  assert_true(u->ops && u->walk && u->plans && u->states);
  double t = b->walk_start_time_ns, e = b->walk_start_energy_nj;
  for (uint32_t i = 0; i < nops; i++) {
    u->ops[i] = (store_bundle_op){keys[i], 2 + i};
    const struct {
      uint32_t pareto;
      uint64_t instances;
    } steps[3] = {{1, 1}, {1, 1 + i}, {2, 1}};
    for (int k = 0; k < 3; k++) {
      t += 10.0 * (k + 1);
      e -= 5.0 * (k + 1);
      u->walk[3 * i + k] = (store_walk_rec){
          .op = i, .pareto = steps[k].pareto, .instances = steps[k].instances, .time_ns = t, .energy_nj = e};
    }
  }
  for (uint32_t k = 0; k < 2; k++) {
    u->plans[k] = (store_plan_rec){.slack = 0.05 * (k + 1),
                                   .budget_ns = 1.05e6 + k,
                                   .time_ns = 1e6 + 100 * k,
                                   .energy_nj = 4e6 - k,
                                   .lower_bound_nj = 3.9e6,
                                   .savings_vs_nodvfs = 0.1 * (k + 1),
                                   .walk_prefix = k ? u->nwalk : 0,
                                   .states_first = k * nops,
                                   .states_count = nops};
    for (uint32_t i = 0; i < nops; i++) {
      store_plan_state_rec *st = &u->states[k * nops + i];
      st->plan = k;
      st->op = i;
      st->pareto = k == 0 ? 0 : i == 0 ? STORE_NO_INDEX : 2;
      st->instances = u->ops[i].multiplicity;
      for (int s = 0; s < STORE_NSTATE; s++) st->states[s] = (uint8_t)(10 + k + s);
    }
  }
  return r;
}

/* An infeasible bucket: status and message, nothing else. */
farm_bucket_result make_infeasible(uint32_t policy, int phase, int batch, int seq, uint64_t input_hash) {
  farm_bucket_result r = {.policy = policy};
  r.bundle.bucket = (store_bucket_rec){.phase = (uint8_t)phase,
                                       .status = STORE_BUCKET_INFEASIBLE_CAPACITY,
                                       .batch = batch,
                                       .seq = seq,
                                       .input_hash = input_hash};
  snprintf(r.bundle.bucket.message, sizeof r.bundle.bucket.message, "KV cache needs %d GiB, HBM has 96", batch);
  return r;
}

farm_buf encode_op(const farm_op_result *r) {
  farm_buf b = {0};
  enpu_err err = {0};
  assert_int_equal(farm_op_result_encode(r, &b, &err), 0);
  return b;
}

farm_buf encode_bucket(const farm_bucket_result *r) {
  farm_buf b = {0};
  enpu_err err = {0};
  assert_int_equal(farm_bucket_result_encode(r, &b, &err), 0);
  return b;
}

void assert_same_bytes(const farm_buf *a, const farm_buf *b) {
  assert_int_equal(a->len, b->len);
  assert_memory_equal(a->data, b->data, a->len);
}

/* assert_same_bytes of two encodings, which it frees. */
static void assert_same_encoding(farm_buf a, farm_buf b) {
  assert_same_bytes(&a, &b);
  farm_buf_free(&a);
  farm_buf_free(&b);
}

/* ---------------------------------------------------------------------------------
 * Journal */

int tmp_setup(void **state) {
  tmp_fixture *f = calloc(1, sizeof *f);
  if (!f) return -1;
  if (store_fixture_dir_make("test_farm", f->dir, f->path) != 0) return -1;
  snprintf(f->journal, sizeof f->journal, "%s.journal", f->path);
  *state = f;
  return 0;
}

int tmp_teardown(void **state) {
  tmp_fixture *f = *state;
  int rc = store_fixture_dir_remove(f->dir);
  free(f);
  return rc;
}

/* Replay callback: collects (kind, payload) pairs. */
/* ---------------------------------------------------------------------------------
 * State */

static const store_provenance prov = {.cost_model_hash = 1,
                                      .chip_hash = 2,
                                      .model_hash = 3,
                                      .job_hash = 4,
                                      .tool_version = "test",
                                      .added_buckets_json = "[{\"phase\":\"decode\",\"batch\":24,\"seq\":3000}]"};

/* The results of the state tests: ops 11..55 of POLICY (44 never computed), two of
 * NODVFS, four buckets of POLICY and one of NODVFS. */
enum { NRESULT = 11 };

static void add_result(farm_state *s, int i) {
  static const uint64_t keys_a[2] = {11, 22}, keys_b[3] = {22, 33, 55}, keys_c[2] = {33, 44};
  enpu_err err = {0};
  farm_op_result op;
  farm_bucket_result bk;
  switch (i) {
  case 0:
  case 1:
  case 2:
  case 3:
    op = make_op(POLICY, (uint64_t)(11 * (i + 1) + (i == 3) * 11)); /* 11 22 33 55 */
    assert_int_equal(farm_state_add_op(s, &op, &err), 0);
    assert_null(op.points);
    return;
  case 4:
  case 5:
    op = make_op(CONFIG_POLICY_NODVFS, 11 * (uint64_t)(i - 3));
    assert_int_equal(farm_state_add_op(s, &op, &err), 0);
    return;
  case 6: bk = make_bucket(POLICY, 1, 8, 2048, keys_a, 2, 100); break;
  case 7: bk = make_bucket(POLICY, 0, 1, 512, keys_b, 3, 200); break;
  case 8: bk = make_bucket(POLICY, 1, 1, 4096, keys_c, 2, 300); break; /* op 44 unknown */
  case 9: bk = make_infeasible(POLICY, 1, 256, 131072, 400); break;
  default: bk = make_bucket(CONFIG_POLICY_NODVFS, 1, 8, 2048, keys_a, 2, 500); break;
  }
  assert_int_equal(farm_state_add_bucket(s, &bk, &err), 0);
  assert_null(bk.bundle.walk);
}

static const uint64_t want_ops[] = {55, 11, 33, 22, 44, 11};
static const store_bucket_rec want_buckets[] = {
    {.phase = 1, .batch = 1, .seq = 4096, .input_hash = 300},
    {.phase = 1, .batch = 256, .seq = 131072, .input_hash = 400},
    {.phase = 1, .batch = 8, .seq = 2048, .input_hash = 100},
    {.phase = 0, .batch = 1, .seq = 512, .input_hash = 200},
    {.phase = 0, .batch = 2, .seq = 512, .input_hash = 250}, /* never computed */
};
static const uint64_t want_ops_nodvfs[] = {22, 11};
static const store_bucket_rec want_nodvfs[] = {{.phase = 1, .batch = 8, .seq = 2048, .input_hash = 500}};

static void checkpoint(const farm_state *s, const char *path, int reverse_policies) {
  /* clang-format off */
  farm_wanted w[2] = {
      {.policy = POLICY, .op_policy = POLICY, .op_keys = want_ops, .nops = 6,
       .buckets = want_buckets, .nbuckets = 5},
      {.policy = CONFIG_POLICY_NODVFS, .op_keys = want_ops_nodvfs, .nops = 2, .buckets = want_nodvfs,
       .nbuckets = 1}};
  /* clang-format on */
  if (reverse_policies) {
    farm_wanted t = w[0];
    w[0] = w[1];
    w[1] = t;
  }
  enpu_err err = {0};
  store_lock *lock = NULL;
  int rc = store_lock_acquire(path, "test_farm", 0, NULL, &lock, &err);
  if (rc == 0) rc = farm_state_checkpoint(s, lock, &prov, w, 2, NULL, &err);
  store_lock_release(lock);
  if (rc != 0) fail_msg("checkpoint: %s", err.msg);
}

static store_contents *load(const char *path) {
  store_contents *c = NULL;
  enpu_err err = {0};
  int rc = store_load(path, &c, &err);
  if (rc != 0) fail_msg("store_load: %s", err.msg);
  return c;
}

#define SAME_TABLE(a, b, field, count)                                                            \
  do {                                                                                            \
    assert_int_equal((a)->count, (b)->count);                                                     \
    if ((a)->count) assert_memory_equal((a)->field, (b)->field, (a)->count * sizeof *(a)->field); \
  } while (0)

static void test_state_order_independent(void **state) {
  tmp_fixture *f = *state;
  char path_b[160];
  snprintf(path_b, sizeof path_b, "%s/other.h5", f->dir);
  farm_state *s1 = NULL, *s2 = NULL;
  enpu_err err = {0};
  assert_int_equal(farm_state_create(&s1, &err), 0);
  assert_int_equal(farm_state_create(&s2, &err), 0);
  for (int i = 0; i < NRESULT; i++) add_result(s1, i);
  /* Reverse order, with some results delivered twice (a replay after a restart). */
  for (int i = NRESULT - 1; i >= 0; i--) add_result(s2, i);
  for (int i = 0; i < NRESULT; i += 3) add_result(s2, i);
  checkpoint(s1, f->path, 0);
  checkpoint(s2, path_b, 1);
  store_contents *a = load(f->path), *b = load(path_b);
  assert_int_equal(a->npolicies, 2);
  assert_int_equal(b->npolicies, 2);
  assert_string_equal(a->added_buckets_json, prov.added_buckets_json);
  for (size_t p = 0; p < a->npolicies; p++) {
    const store_policy_tables *x = &a->policies[p], *y = &b->policies[p];
    assert_string_equal(x->name, y->name);
    SAME_TABLE(x, y, ops, nops);
    SAME_TABLE(x, y, pareto, npareto);
    SAME_TABLE(x, y, buckets, nbuckets);
    SAME_TABLE(x, y, bucket_ops, nbucket_ops);
    SAME_TABLE(x, y, walk, nwalk);
    SAME_TABLE(x, y, plans, nplans);
    SAME_TABLE(x, y, plan_states, nplan_states);
  }
  /* What was written: enpu-all has the four known wanted ops in key order, five buckets in
   * (phase, batch, seq) order: the never-computed one and the one with unknown op 44 are
   * pending rows with their wanted input hash and nothing else; the infeasible one has
   * no ops and keeps its message. */
  const store_policy_tables *t = NULL;
  for (size_t p = 0; p < a->npolicies; p++)
    if (strcmp(a->policies[p].name, config_policy_name(POLICY)) == 0) t = &a->policies[p];
  assert_non_null(t);
  assert_int_equal(t->nops, 4);
  for (size_t i = 1; i < t->nops; i++) assert_true(t->ops[i - 1].signature < t->ops[i].signature);
  assert_int_equal(t->npareto, 4 * NPTS);
  assert_int_equal(t->nbuckets, 5);
  assert_true(t->buckets[0].phase == 0 && t->buckets[0].seq == 512 && t->buckets[0].status == STORE_BUCKET_OK);
  assert_true(t->buckets[1].batch == 2 && t->buckets[1].status == STORE_BUCKET_PENDING);
  assert_true(t->buckets[1].input_hash == 250 && t->buckets[1].ops_count == 0 && t->buckets[1].plan_count == 0);
  assert_true(t->buckets[2].seq == 4096 && t->buckets[2].status == STORE_BUCKET_PENDING);
  assert_true(t->buckets[3].phase == 1 && t->buckets[3].batch == 8);
  assert_int_equal(t->buckets[4].status, STORE_BUCKET_INFEASIBLE_CAPACITY);
  assert_int_equal(t->buckets[4].ops_count, 0);
  assert_non_null(strstr(t->buckets[4].message, "KV cache needs 256 GiB"));
  assert_int_equal(t->nbucket_ops, 3 + 2);
  assert_int_equal(t->nwalk, 3 * (3 + 2));
  assert_int_equal(t->nplan_states, 2 * (3 + 2));
  /* Global rows: bucket 3's first walk step moves op 11 (row 0) to its point 1. */
  const store_walk_rec *w = &t->walk[t->buckets[3].walk_first];
  assert_int_equal(w->op, 0);
  assert_int_equal(w->pareto, t->ops[0].pareto_first + 1);
  store_contents_free(a);
  store_contents_free(b);
  farm_state_free(s1);
  farm_state_free(s2);
  farm_state_free(NULL);
}

static void test_state_load_round_trip(void **state) {
  tmp_fixture *f = *state;
  farm_state *s = NULL, *back = NULL;
  enpu_err err = {0};
  assert_int_equal(farm_state_create(&s, &err), 0);
  for (int i = 0; i < NRESULT; i++) add_result(s, i);
  checkpoint(s, f->path, 0);
  assert_int_equal(farm_state_create(&back, &err), 0);
  int64_t nops = 0, nbuckets = 0;
  char *added = NULL;
  int rc = farm_state_load_store(back, f->path, &nops, &nbuckets, &added, &err);
  if (rc != 0) fail_msg("load_store: %s", err.msg);
  assert_int_equal(nops, 4 + 2);
  assert_int_equal(nbuckets, 3 + 1);
  assert_non_null(added);
  assert_string_equal(added, prov.added_buckets_json);
  free(added);
  /* Every written result comes back equal (same canonical encoding). */
  const uint64_t ops[] = {11, 22, 33, 55};
  for (size_t i = 0; i < 4; i++) {
    const farm_op_result *x = farm_state_find_op(s, POLICY, ops[i]), *y = farm_state_find_op(back, POLICY, ops[i]);
    assert_non_null(x);
    assert_non_null(y);
    assert_same_encoding(encode_op(x), encode_op(y));
  }
  for (size_t i = 0; i < 4; i++) {
    const store_bucket_rec *wb = &want_buckets[i == 0 ? 3 : i];
    const farm_bucket_result *x = farm_state_find_bucket(s, POLICY, wb->phase, wb->batch, wb->seq, wb->input_hash);
    const farm_bucket_result *y = farm_state_find_bucket(back, POLICY, wb->phase, wb->batch, wb->seq,
                                                         wb->input_hash);
    assert_non_null(x);
    assert_non_null(y);
    assert_same_encoding(encode_bucket(x), encode_bucket(y));
  }
  /* Skipped results are not in the store; a stale input hash is not found. */
  assert_null(farm_state_find_bucket(back, POLICY, 1, 1, 4096, 300));
  assert_non_null(farm_state_find_bucket(back, POLICY, 1, 8, 2048, 100));
  assert_null(farm_state_find_bucket(back, POLICY, 1, 8, 2048, 101));
  assert_null(farm_state_find_bucket(back, POLICY, 7, 8, 2048, 100));
  assert_null(farm_state_find_op(back, POLICY, 44));
  assert_null(farm_state_find_op(back, CONFIG_POLICY_DVFS_C, 11));
  assert_non_null(farm_state_find_bucket(back, CONFIG_POLICY_NODVFS, 1, 8, 2048, 500));
  /* A checkpoint of the loaded state has the same tables as the first one. */
  char again[160];
  snprintf(again, sizeof again, "%s/again.h5", f->dir);
  checkpoint(back, again, 0);
  store_contents *a = load(f->path), *b = load(again);
  for (size_t p = 0; p < a->npolicies; p++) {
    SAME_TABLE(&a->policies[p], &b->policies[p], walk, nwalk);
    SAME_TABLE(&a->policies[p], &b->policies[p], plan_states, nplan_states);
    SAME_TABLE(&a->policies[p], &b->policies[p], buckets, nbuckets);
  }
  store_contents_free(a);
  store_contents_free(b);
  /* A missing store loads nothing; a file that is not a store is an error. */
  char missing[160];
  snprintf(missing, sizeof missing, "%s/none.h5", f->dir);
  assert_int_equal(farm_state_load_store(back, missing, &nops, &nbuckets, &added, &err), 0);
  assert_true(nops == 0 && nbuckets == 0 && added == NULL);
  FILE *fp = fopen(missing, "w");
  assert_non_null(fp);
  fputs("not hdf5\n", fp);
  fclose(fp);
  assert_true(farm_state_load_store(back, missing, &nops, &nbuckets, &added, &err) < 0);
  assert_non_null(strstr(err.msg, missing));
  farm_state_free(s);
  farm_state_free(back);
}

static void test_state_checkpoint_rejects(void **state) {
  tmp_fixture *f = *state;
  farm_state *s = NULL;
  enpu_err err = {0};
  assert_int_equal(farm_state_create(&s, &err), 0);
  for (int i = 0; i < NRESULT; i++) add_result(s, i);
  /* A bucket whose walk points past its op's Pareto set is refused, not written. */
  farm_bucket_result bad = make_bucket(POLICY, 1, 16, 2048, keys3, 3, 600);
  bad.bundle.walk[0].pareto = NPTS;
  assert_int_equal(farm_state_add_bucket(s, &bad, &err), 0);
  store_bucket_rec wb = {.phase = 1, .batch = 16, .seq = 2048, .input_hash = 600};
  farm_wanted w = {
      .policy = POLICY, .op_policy = POLICY, .op_keys = want_ops, .nops = 6, .buckets = &wb, .nbuckets = 1};
  store_lock *lock = NULL;
  assert_int_equal(store_lock_acquire(f->path, "test_farm", 0, NULL, &lock, &err), 0);
  assert_int_equal(farm_state_checkpoint(s, lock, &prov, &w, 1, NULL, &err), ENPU_ERR_FORMAT);
  assert_non_null(strstr(err.msg, "1/16/2048"));
  assert_int_equal(access(f->path, F_OK), -1); /* nothing published */
  /* The same policy twice, or a bucket wanted twice, is the caller's bug. */
  farm_wanted twice[2] = {w, w};
  assert_int_equal(farm_state_checkpoint(s, lock, &prov, twice, 2, NULL, &err), ENPU_ERR_INVALID);
  store_bucket_rec dup[2] = {want_buckets[2], want_buckets[2]};
  w.buckets = dup;
  w.nbuckets = 2;
  assert_int_equal(farm_state_checkpoint(s, lock, &prov, &w, 1, NULL, &err), ENPU_ERR_INVALID);
  store_lock_release(lock);
  farm_state_free(s);
}

/* ---------------------------------------------------------------------------------
 * Fuzz seeds and the journal benchmark */

static int write_file(const char *path, const void *data, size_t n) {
  FILE *fp = fopen(path, "wb");
  if (!fp) return -1;
  size_t put = fwrite(data, 1, n, fp);
  return fclose(fp) == 0 && put == n ? 0 : -1;
}

static int write_seeds(const char *dir) {
  char path[512];
  snprintf(path, sizeof path, "%s/seed.journal", dir);
  unlink(path);
  append_records(path, 0, 3, 0);
  uint32_t kind;
  farm_buf op = record_payload(1, &kind), bucket = record_payload(0, &kind);
  snprintf(path, sizeof path, "%s/seed.op", dir);
  int rc = write_file(path, op.data, op.len);
  snprintf(path, sizeof path, "%s/seed.bucket", dir);
  if (rc == 0) rc = write_file(path, bucket.data, bucket.len);
  farm_buf_free(&op);
  farm_buf_free(&bucket);
  return rc == 0 ? 0 : 1;
}

/* A bucket result of a decode graph's size: 40 distinct ops, 120 walk steps, two plans of
 * 40 per-op states (about 6 KB encoded). */
static farm_buf bench_record(void) {
  uint64_t keys[40];
  for (int i = 0; i < 40; i++) keys[i] = 1000003ull * (uint64_t)(i + 1);
  farm_bucket_result r = make_bucket(POLICY, 1, 64, 8192, keys, 40, 42);
  farm_buf b = encode_bucket(&r);
  farm_bucket_result_free(&r);
  return b;
}

static int bench(int n) {
  char path[] = "/tmp/test_farm_bench.XXXXXX";
  int fd = mkstemp(path);
  if (fd < 0) return 1;
  close(fd);
  unlink(path);
  farm_buf rec = bench_record();
  enpu_err err = {0};
  const struct {
    const char *what;
    int sync_every, packed;
  } modes[] = {{"sync after every record", 1, 0},
               {"sync every 100 records", 100, 0},
               {"frames packed by the workers, sync every 100 records", 100, 1}};
  farm_zframe *z = NULL;
  farm_buf frame = {0};
  if (farm_zframe_create(&z, &err) != 0 || farm_zframe_pack(z, rec.data, rec.len, &frame, &err) != 0) return 1;
  for (size_t m = 0; m < sizeof modes / sizeof modes[0]; m++) {
    farm_journal *j = NULL;
    if (farm_journal_open(path, NULL, 0, &j, &err) != 0) return 1;
    double t0 = enpu_now_s();
    for (int i = 0; i < n; i++) {
      if ((modes[m].packed ? farm_journal_append_frame(j, FARM_REC_BUCKET, frame.data, frame.len, &err)
                           : farm_journal_append(j, FARM_REC_BUCKET, rec.data, rec.len, &err)) != 0)
        return 1;
      if ((i + 1) % modes[m].sync_every == 0 && farm_journal_sync(j, &err) != 0) return 1;
    }
    if (farm_journal_sync(j, &err) != 0) return 1;
    double dt = enpu_now_s() - t0;
    long disk = file_size(path);
    farm_journal_free(j);
    farm_journal_stats st;
    double t1 = enpu_now_s();
    if (farm_journal_replay(path, NULL, NULL, &st, &err) != 0 || st.records != n) return 1;
    double replay = enpu_now_s() - t1;
    printf("journal, %s: %d records of %zu bytes in %.3f s: %.0f records/s, %.1f MB/s "
           "(payload), %.1f MB on disk (zstd x%.1f); replay %.0f records/s\n",
           modes[m].what, n, rec.len, dt, n / dt, n * (double)rec.len / dt / 1e6, disk / 1e6,
           n * (double)rec.len / (double)disk, n / replay);
    unlink(path);
  }
  farm_zframe_free(z);
  farm_buf_free(&frame);
  farm_buf_free(&rec);
  return 0;
}

int main(int argc, char **argv) {
  if (argc == 3 && strcmp(argv[1], "--write") == 0) return write_seeds(argv[2]);
  if (argc >= 2 && strcmp(argv[1], "--bench") == 0) return bench(argc > 2 ? atoi(argv[2]) : 2000);
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_part_codec),
      cmocka_unit_test(test_merge_parts),
      cmocka_unit_test(test_plan_demo),
      cmocka_unit_test(test_plan_added_buckets),
      cmocka_unit_test(test_sched_order_free),
      cmocka_unit_test(test_sweep_keys),
      cmocka_unit_test_setup_teardown(test_state_order_independent, tmp_setup, tmp_teardown),
      cmocka_unit_test_setup_teardown(test_state_load_round_trip, tmp_setup, tmp_teardown),
      cmocka_unit_test_setup_teardown(test_state_checkpoint_rejects, tmp_setup, tmp_teardown),
  };
  const test_part parts[] = {{farm_codec_tests, farm_codec_ntests},
                             {tests, sizeof tests / sizeof tests[0]},
                             {farm_journal_tests, farm_journal_ntests}};
  return test_run_parts("farm", parts, 3, NULL, NULL);
}
