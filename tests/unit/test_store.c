/* test_store.c — the HDF5 plan store: write a small synthetic store (three ops with
 * three Pareto points each, a grid of buckets with walks and plans), read it back
 * through planstore.h, check padding, walk-prefix lookups and per-op states against an
 * independent replay done here, read it whole with store_load (every field equals what
 * was written) and compare stores with store_diff, check that zstd (filter 32015)
 * really compresses, that publication is atomic (never through a planted link), and
 * that truncated, bit-flipped and crafted stores (indices and storage layouts) give
 * clean errors from both readers.
 * With --write PATH it only writes the store (for the integration test).
 * Expected values are computed by this file's own bookkeeping from the
 * fixture, never copied from the reader's output. */
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

#define NOPS 3
#define NPTS 3
#define MAX_BUCKETS 8
#define MAX_STEPS 8
#define POLICY "enpu-all"

/* ---------------------------------------------------------------------------------
 * The synthetic store */

typedef struct {
  store_op_rec ops[NOPS];
  store_pareto_rec pareto[NOPS * NPTS];
  store_bucket_rec buckets[MAX_BUCKETS];
  store_bucket_op_rec bops[MAX_BUCKETS * NOPS];
  store_walk_rec walk[MAX_BUCKETS * MAX_STEPS];
  store_plan_rec plans[MAX_BUCKETS * 2];
  store_plan_state_rec pstates[MAX_BUCKETS * 2 * NOPS * NPTS];
  size_t nbuckets, nbops, nwalk, nplans, npstates;
} fixture;

/* Point k of op i: slower and cheaper as k grows (a convex front). */
static double pt_time(int i, int k) { return 100.0 * (i + 1) * (1.0 + 0.25 * k + 0.05 * k * k); }
static double pt_energy(int i, int k) { return 1000.0 * (i + 1) * (1.0 - 0.2 * k); }

/* The walk every ok bucket takes: (op, point, instances); -1 instances = all of them. */
static const struct {
  int op, pt;
  long instances;
} walk_moves[] = {{0, 1, 1}, {1, 1, 1}, {1, 1, 1}, {0, 2, 1}, {2, 1, -1}, {1, 2, 2}};
#define NMOVES (sizeof walk_moves / sizeof walk_moves[0])

/* Instances of each op in bucket `row`. */
static uint64_t multiplicity(int op, size_t row) { return op == 0 ? 1 : op == 1 ? 2 : row + 1; }

/* Independent bookkeeping: counts[op][pt] instances; a move takes instances from the
 * earliest point that still has some. Fills cumulative time/energy after each move. */
static void replay_here(size_t row, double *t0, double *e0, double cum_t[NMOVES], double cum_e[NMOVES],
                        uint64_t counts_after[NMOVES][NOPS][NPTS]) {
  uint64_t counts[NOPS][NPTS] = {{0}};
  double t = 0, e = 0;
  for (int i = 0; i < NOPS; i++) {
    counts[i][0] = multiplicity(i, row);
    t += counts[i][0] * pt_time(i, 0);
    e += counts[i][0] * pt_energy(i, 0);
  }
  *t0 = t, *e0 = e;
  for (size_t s = 0; s < NMOVES; s++) {
    int op = walk_moves[s].op, q = walk_moves[s].pt;
    uint64_t n = walk_moves[s].instances < 0 ? multiplicity(op, row) : (uint64_t)walk_moves[s].instances;
    for (uint64_t left = n; left > 0;) {
      int from = 0;
      while (counts[op][from] == 0) from++;
      uint64_t take = counts[op][from] < left ? counts[op][from] : left;
      counts[op][from] -= take, counts[op][q] += take, left -= take;
      t += take * (pt_time(op, q) - pt_time(op, from));
      e += take * (pt_energy(op, q) - pt_energy(op, from));
    }
    cum_t[s] = t, cum_e[s] = e;
    memcpy(counts_after[s], counts, sizeof counts);
  }
}

static const struct {
  uint8_t phase, status;
  int32_t batch, seq;
} grid[] = {
    /* deliberately not in (phase, batch, seq) order */
    {STORE_PHASE_DECODE, STORE_BUCKET_OK, 1, 1024},
    {STORE_PHASE_PREFILL, STORE_BUCKET_OK, 4, 512},
    {STORE_PHASE_PREFILL, STORE_BUCKET_OK, 1, 128},
    {STORE_PHASE_PREFILL, STORE_BUCKET_OK, 4, 128},
    {STORE_PHASE_PREFILL, STORE_BUCKET_OK, 1, 512},
    {STORE_PHASE_DECODE, STORE_BUCKET_INFEASIBLE_CAPACITY, 8, 1024},
    {STORE_PHASE_DECODE, STORE_BUCKET_FAILED, 8, 256},
};
#define NGRID (sizeof grid / sizeof grid[0])

static void make_fixture(fixture *f) {
  memset(f, 0, sizeof *f);
  for (int i = 0; i < NOPS; i++) {
    f->ops[i] = (store_op_rec){.signature = 0x1000u + (uint64_t)i,
                               .kind = (uint32_t)i,
                               .pareto_first = (uint32_t)(i * NPTS),
                               .pareto_count = NPTS,
                               .evaluations = 50};
    snprintf(f->ops[i].name, sizeof f->ops[i].name, "op%d", i);
    for (int k = 0; k < NPTS; k++) {
      store_pareto_rec *p = &f->pareto[i * NPTS + k];
      p->op = (uint32_t)i;
      for (int c = 0; c < STORE_NSTATE; c++) p->states[c] = (uint8_t)(34 - 3 * k - c);
      p->time_ns = pt_time(i, k);
      p->energy_nj = pt_energy(i, k);
      for (int c = 0; c < STORE_NENERGY; c++) p->energy_by_slot_nj[c] = p->energy_nj / STORE_NENERGY;
    }
  }
  for (size_t row = 0; row < NGRID; row++) {
    store_bucket_rec *b = &f->buckets[f->nbuckets++];
    *b = (store_bucket_rec){.phase = grid[row].phase,
                            .status = grid[row].status,
                            .batch = grid[row].batch,
                            .seq = grid[row].seq,
                            .input_hash = 0xfeed0000u + row};
    if (b->status != STORE_BUCKET_OK) {
      snprintf(b->message, sizeof b->message, "%s",
               b->status == STORE_BUCKET_FAILED ? "numerical trouble" : "KV cache exceeds HBM");
      continue;
    }
    double t0, e0, cum_t[NMOVES], cum_e[NMOVES];
    uint64_t counts[NMOVES][NOPS][NPTS];
    replay_here(row, &t0, &e0, cum_t, cum_e, counts);
    b->walk_start_time_ns = t0;
    b->walk_start_energy_nj = e0;
    b->t_peak_ns = t0;
    b->t_nodvfs_ns = 1.05 * t0;
    b->e_nodvfs_nj = 1.2 * e0;
    b->ops_first = (uint32_t)f->nbops;
    b->ops_count = NOPS;
    for (int i = 0; i < NOPS; i++)
      f->bops[f->nbops++] = (store_bucket_op_rec){(uint32_t)row, (uint32_t)i, multiplicity(i, row)};
    b->walk_first = f->nwalk;
    b->walk_count = NMOVES;
    for (size_t s = 0; s < NMOVES; s++) {
      int op = walk_moves[s].op;
      uint64_t n = walk_moves[s].instances < 0 ? multiplicity(op, row) : (uint64_t)walk_moves[s].instances;
      f->walk[f->nwalk++] = (store_walk_rec){
          (uint32_t)row, (uint32_t)op, (uint32_t)(op * NPTS + walk_moves[s].pt), n, cum_t[s], cum_e[s]};
    }
    b->plan_first = (uint32_t)f->nplans;
    b->plan_count = 2;
    for (int k = 0; k < 2; k++) {
      size_t prefix = k == 0 ? 0 : 3;
      store_plan_rec *pl = &f->plans[f->nplans];
      *pl = (store_plan_rec){.bucket = (uint32_t)row,
                             .slack = 0.05 * k,
                             .budget_ns = t0 * (1 + 0.05 * k),
                             .time_ns = prefix ? cum_t[prefix - 1] : t0,
                             .energy_nj = prefix ? cum_e[prefix - 1] : e0,
                             .walk_prefix = prefix,
                             .states_first = f->npstates};
      pl->lower_bound_nj = pl->energy_nj;
      pl->savings_vs_nodvfs = 1 - pl->energy_nj / b->e_nodvfs_nj;
      /* Runs at the prefix: a move takes an op's lowest-numbered instances still at its
       * earliest point, so instance order is the furthest point first. */
      for (int i = 0; i < NOPS; i++)
        for (int q = NPTS - 1; q >= 0; q--) {
          uint64_t n = prefix ? counts[prefix - 1][i][q] : q == 0 ? multiplicity(i, row) : 0;
          if (!n) continue;
          store_plan_state_rec *r = &f->pstates[f->npstates++];
          *r = (store_plan_state_rec){(uint32_t)f->nplans, (uint32_t)i, (uint32_t)(i * NPTS + q), {0}, n};
          memcpy(r->states, f->pareto[i * NPTS + q].states, STORE_NSTATE);
          pl->states_count++;
        }
      f->nplans++;
    }
  }
}

static const store_provenance test_prov = {
    .cost_model_hash = 11,
    .chip_hash = 22,
    .model_hash = 33,
    .job_hash = 44,
    .tool_version = "test",
    .job_json = "{\"name\": \"unit\"}",
    .model_json = "{\"m\": 1}",
    .chip_json = "{\"c\": 2}",
    .cluster_json = "{}",
    .added_buckets_json = "[{\"phase\": \"decode\", \"batch\": 24, \"seq\": 3000}]"};

static int write_fixture(const char *path, const fixture *f, int level, enpu_err *err) {
  const store_fixture_policy pol = {.policy = POLICY,
                                    .ops = f->ops,
                                    .pareto = f->pareto,
                                    .buckets = f->buckets,
                                    .bops = f->bops,
                                    .walk = f->walk,
                                    .plans = f->plans,
                                    .pstates = f->pstates,
                                    .nops = NOPS,
                                    .npareto = NOPS * NPTS,
                                    .nbuckets = f->nbuckets,
                                    .nbops = f->nbops,
                                    .nwalk = f->nwalk,
                                    .nplans = f->nplans,
                                    .npstates = f->npstates};
  return store_fixture_write(path, &test_prov, level, &pol, 1, err);
}

/* ---------------------------------------------------------------------------------
 * Fixture: a temporary directory with the written store */

typedef struct {
  char dir[STORE_FIXTURE_DIR_LEN];
  char path[STORE_FIXTURE_PATH_LEN];
  fixture f;
  planstore *ps;
} ctx;

static int setup(void **state) {
  ctx *c = calloc(1, sizeof *c);
  if (!c) return -1;
  if (store_fixture_dir_make("test_store", c->dir, c->path) != 0) return -1;
  make_fixture(&c->f);
  enpu_err err = {0};
  if (write_fixture(c->path, &c->f, 3, &err) != 0 || planstore_open(c->path, &c->ps, &err) != 0) {
    fprintf(stderr, "setup: %s\n", err.msg);
    return -1;
  }
  *state = c;
  return 0;
}

static int teardown(void **state) {
  ctx *c = *state;
  planstore_close(c->ps);
  int rc = store_fixture_dir_remove(c->dir);
  free(c);
  return rc;
}

/* ---------------------------------------------------------------------------------
 * Reading back and lookups */

static void test_policies(void **state) {
  ctx *c = *state;
  assert_int_equal(planstore_policy_count(c->ps), 1);
  assert_string_equal(planstore_policy_name(c->ps, 0), POLICY);
  assert_null(planstore_policy_name(c->ps, 1));
}

/* The bucket grid in (phase, batch, seq) order with each bucket's status, whatever the
 * order the farm wrote it in; errors for an unknown policy and an index past the end. */
static size_t grid_row(int phase, int batch, int seq);

static void test_bucket_grid(void **state) {
  ctx *c = *state;
  assert_int_equal(planstore_bucket_count(c->ps, NULL), NGRID);
  assert_int_equal(planstore_bucket_count(c->ps, "no-such-policy"), 0);
  planstore_bucket prev = {-1, 0, 0, 0};
  for (size_t i = 0; i < NGRID; i++) {
    planstore_bucket b;
    enpu_err err = {0};
    assert_int_equal(planstore_bucket_info(c->ps, POLICY, i, &b, &err), 0);
    assert_true(b.phase > prev.phase ||
                (b.phase == prev.phase && (b.batch > prev.batch || (b.batch == prev.batch && b.seq > prev.seq))));
    const size_t r = grid_row(b.phase, b.batch, b.seq);
    assert_int_equal(b.status, grid[r].status);
    prev = b;
  }
  planstore_bucket b;
  enpu_err err = {0};
  assert_int_equal(planstore_bucket_info(c->ps, POLICY, NGRID, &b, &err), ENPU_ERR_RANGE);
  assert_int_equal(planstore_bucket_info(c->ps, "no-such-policy", 0, &b, &err), ENPU_ERR_NOT_FOUND);
  assert_non_null(strstr(err.msg, "no-such-policy"));
}

/* Opening one policy: by name, the first by default, and a clear error for a name the
 * store does not have. */
static void test_open_policy(void **state) {
  ctx *c = *state;
  const char *names[] = {POLICY, NULL};
  for (size_t i = 0; i < 2; i++) {
    planstore *one = NULL;
    enpu_err err = {0};
    assert_int_equal(planstore_open_policy(c->path, names[i], &one, &err), 0);
    assert_int_equal(planstore_policy_count(one), 1);
    assert_string_equal(planstore_policy_name(one, 0), POLICY);
    planstore_plan a, b;
    assert_int_equal(planstore_lookup_slack(one, NULL, PLANSTORE_DECODE, 1, 1000, 0.05, &a, &err), 0);
    assert_int_equal(planstore_lookup_slack(c->ps, POLICY, PLANSTORE_DECODE, 1, 1000, 0.05, &b, &err), 0);
    assert_int_equal(a.walk_prefix, b.walk_prefix);
    assert_true(a.energy_nj == b.energy_nj);
    planstore_close(one);
  }
  planstore *none = NULL;
  enpu_err err = {0};
  assert_int_equal(planstore_open_policy(c->path, "no-such-policy", &none, &err), ENPU_ERR_NOT_FOUND);
  assert_null(none);
  assert_non_null(strstr(err.msg, "no-such-policy"));
}

/* The policy names without their tables: what the store holds, in name order; too little
 * room and a missing file are errors, not truncated lists. */
static void test_policy_names(void **state) {
  ctx *c = *state;
  char names[2][STORE_NAME_LEN];
  size_t n = 9;
  enpu_err err = {0};
  assert_int_equal(store_policy_names(c->path, names, 2, &n, &err), 0);
  assert_int_equal(n, 1);
  assert_string_equal(names[0], POLICY);
  assert_int_equal(store_policy_names(c->path, names, 0, &n, &err), ENPU_ERR_RANGE);
  assert_non_null(strstr(err.msg, "1 policies"));
  char missing[600];
  snprintf(missing, sizeof missing, "%s.missing", c->path);
  assert_true(store_policy_names(missing, names, 2, &n, &err) < 0);
  assert_int_equal(n, 0);
}

/* Row of the grid entry (phase, batch, seq). */
static size_t grid_row(int phase, int batch, int seq) {
  for (size_t r = 0; r < NGRID; r++)
    if (grid[r].phase == phase && grid[r].batch == batch && grid[r].seq == seq) return r;
  fail_msg("no grid row %d/%d/%d", phase, batch, seq);
  return 0;
}

static void test_exact_hit_and_padding(void **state) {
  ctx *c = *state;
  const struct {
    int phase, batch, seq, want_batch, want_seq;
  } cases[] = {
      {PLANSTORE_PREFILL, 1, 128, 1, 128}, {PLANSTORE_PREFILL, 1, 129, 1, 512},
      {PLANSTORE_PREFILL, 2, 1, 4, 128},   {PLANSTORE_PREFILL, 3, 500, 4, 512},
      {PLANSTORE_PREFILL, 4, 512, 4, 512}, {PLANSTORE_DECODE, 1, 1000, 1, 1024},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    planstore_plan plan;
    enpu_err err = {0};
    int rc = planstore_lookup(c->ps, POLICY, cases[i].phase, cases[i].batch, cases[i].seq, INFINITY, &plan, &err);
    assert_int_equal(rc, 0);
    assert_int_equal(plan.batch, cases[i].want_batch);
    assert_int_equal(plan.seq, cases[i].want_seq);
    size_t row = grid_row(cases[i].phase, plan.batch, plan.seq);
    assert_int_equal(plan.bucket, row);
    assert_int_equal(plan.walk_prefix, NMOVES); /* an unlimited target takes the whole walk */
    assert_near(plan.time_ns, c->f.walk[c->f.buckets[row].walk_first + NMOVES - 1].time_ns, 1e-9);
  }
}

static void test_beyond_largest_and_bad_buckets(void **state) {
  ctx *c = *state;
  planstore_plan plan;
  enpu_err err = {0};
  assert_int_equal(planstore_lookup(c->ps, POLICY, PLANSTORE_PREFILL, 5, 128, 1e9, &plan, &err),
                   ENPU_ERR_NOT_FOUND);
  assert_non_null(strstr(err.msg, "largest batch is 4"));
  assert_non_null(strstr(err.msg, "largest seq 512"));
  assert_int_equal(planstore_lookup(c->ps, POLICY, PLANSTORE_DECODE, 1, 2000, 1e9, &plan, &err),
                   ENPU_ERR_NOT_FOUND);
  assert_non_null(strstr(err.msg, "largest batch is 8"));
  /* batch 2 seq 300 pads to decode b8 s1024 (b8 s256 is too short): capacity */
  assert_int_equal(planstore_lookup(c->ps, POLICY, PLANSTORE_DECODE, 2, 300, 1e9, &plan, &err),
                   ENPU_ERR_INFEASIBLE);
  assert_non_null(strstr(err.msg, "KV cache exceeds HBM"));
  assert_int_equal(planstore_lookup(c->ps, POLICY, PLANSTORE_DECODE, 2, 200, 1e9, &plan, &err), ENPU_ERR_NOT_FOUND);
  assert_non_null(strstr(err.msg, "numerical trouble"));
  assert_int_equal(planstore_lookup(c->ps, "dvfs-c", PLANSTORE_DECODE, 1, 1, 1e9, &plan, &err), ENPU_ERR_NOT_FOUND);
  assert_int_equal(planstore_lookup(c->ps, POLICY, 2, 1, 1, 1e9, &plan, &err), ENPU_ERR_INVALID);
  assert_int_equal(planstore_lookup(c->ps, POLICY, PLANSTORE_DECODE, 0, 1, 1e9, &plan, &err), ENPU_ERR_INVALID);
  /* NULL policy = the first policy by name */
  assert_int_equal(planstore_lookup(c->ps, NULL, PLANSTORE_DECODE, 1, 1, 1e12, &plan, &err), 0);
}

/* Every target between, at and around the walk's cumulative times picks the longest
 * prefix whose time is <= target; the lower bound interpolates inside the next step. */
static void test_walk_prefix_targets(void **state) {
  ctx *c = *state;
  size_t row = grid_row(PLANSTORE_PREFILL, 4, 512);
  double t0, e0, cum_t[NMOVES], cum_e[NMOVES];
  uint64_t counts[NMOVES][NOPS][NPTS];
  replay_here(row, &t0, &e0, cum_t, cum_e, counts);
  for (size_t s = 0; s < NMOVES; s++) {
    double prev_t = s ? cum_t[s - 1] : t0, prev_e = s ? cum_e[s - 1] : e0;
    const double targets[] = {cum_t[s], (prev_t + cum_t[s]) / 2};
    for (int k = 0; k < 2; k++) {
      planstore_plan plan;
      enpu_err err = {0};
      assert_int_equal(planstore_lookup(c->ps, POLICY, PLANSTORE_PREFILL, 4, 512, targets[k], &plan, &err), 0);
      if (k == 0) {
        assert_int_equal(plan.walk_prefix, s + 1);
        assert_near(plan.time_ns, cum_t[s], 1e-9);
        assert_near(plan.energy_nj, cum_e[s], 1e-9);
      } else if (cum_t[s] > prev_t) {
        assert_int_equal(plan.walk_prefix, s);
        assert_near(plan.energy_nj, prev_e, 1e-9);
        assert_near(plan.lower_bound_nj, (prev_e + cum_e[s]) / 2, 1e-6);
        assert_true(plan.lower_bound_nj <= plan.energy_nj);
      }
      assert_true(plan.time_ns <= targets[k]);
      assert_near(plan.savings_vs_nodvfs, 1 - plan.energy_nj / (1.2 * e0), 1e-12);
    }
  }
}

/* Below the fastest plan: ENPU_ERR_INFEASIBLE, and the fastest plan is still returned. */
static void test_target_below_fastest(void **state) {
  ctx *c = *state;
  size_t row = grid_row(PLANSTORE_PREFILL, 1, 128);
  planstore_plan plan;
  enpu_err err = {0};
  double fastest = c->f.buckets[row].walk_start_time_ns;
  assert_int_equal(planstore_lookup(c->ps, POLICY, PLANSTORE_PREFILL, 1, 128, fastest - 1, &plan, &err),
                   ENPU_ERR_INFEASIBLE);
  assert_non_null(strstr(err.msg, "below the fastest plan"));
  assert_int_equal(plan.walk_prefix, 0);
  assert_near(plan.time_ns, fastest, 0);
  assert_near(plan.energy_nj, c->f.buckets[row].walk_start_energy_nj, 0);
  assert_int_equal(planstore_lookup(c->ps, POLICY, PLANSTORE_PREFILL, 1, 128, fastest, &plan, &err), 0);
  assert_int_equal(plan.walk_prefix, 0);
}

static void test_lookup_slack(void **state) {
  ctx *c = *state;
  size_t row = grid_row(PLANSTORE_DECODE, 1, 1024);
  double t0, e0, cum_t[NMOVES], cum_e[NMOVES];
  uint64_t counts[NMOVES][NOPS][NPTS];
  replay_here(row, &t0, &e0, cum_t, cum_e, counts);
  const double slacks[] = {0, 0.02, 0.05, 0.10};
  for (size_t i = 0; i < 4; i++) {
    double budget = 1.05 * t0 + slacks[i] * 1.05 * t0; /* max(T_nodvfs, T_peak) + p·T_nodvfs */
    size_t want = 0;
    while (want < NMOVES && cum_t[want] <= budget) want++;
    planstore_plan plan;
    enpu_err err = {0};
    assert_int_equal(planstore_lookup_slack(c->ps, POLICY, PLANSTORE_DECODE, 1, 1024, slacks[i], &plan, &err), 0);
    assert_near(plan.target_ns, budget, 1e-6);
    assert_int_equal(plan.walk_prefix, want);
  }
}

static void test_plan_states(void **state) {
  ctx *c = *state;
  size_t row = grid_row(PLANSTORE_PREFILL, 4, 128);
  double t0, e0, cum_t[NMOVES], cum_e[NMOVES];
  uint64_t counts[NMOVES][NOPS][NPTS];
  replay_here(row, &t0, &e0, cum_t, cum_e, counts);
  for (size_t s = 0; s < NMOVES; s++) {
    planstore_plan plan;
    enpu_err err = {0};
    assert_int_equal(planstore_lookup(c->ps, POLICY, PLANSTORE_PREFILL, 4, 128, cum_t[s], &plan, &err), 0);
    assert_int_equal(planstore_plan_op_count(c->ps, &plan), NOPS);
    planstore_op_states st[NOPS];
    size_t n = 0;
    assert_int_equal(planstore_plan_states(c->ps, &plan, st, 1, &n, &err), ENPU_ERR_RANGE);
    assert_int_equal(planstore_plan_states(c->ps, &plan, st, NOPS, &n, &err), 0);
    assert_int_equal(n, NOPS);
    double t = 0, e = 0;
    for (int i = 0; i < NOPS; i++) {
      uint64_t *have = counts[plan.walk_prefix - 1][i];
      int lead = st[i].lead_pareto - i * NPTS, trail = st[i].trail_pareto - i * NPTS;
      assert_int_equal(st[i].op, i);
      assert_string_equal(st[i].name, c->f.ops[i].name);
      assert_int_equal(st[i].instances, multiplicity(i, row));
      assert_int_equal(have[lead], st[i].lead_instances);
      if (trail != lead) assert_int_equal(have[trail], st[i].instances - st[i].lead_instances);
      assert_memory_equal(st[i].lead_states, c->f.pareto[st[i].lead_pareto].states, PLANSTORE_NSTATE);
      t += st[i].lead_instances * st[i].lead_time_ns +
           (st[i].instances - st[i].lead_instances) * st[i].trail_time_ns;
      e += st[i].lead_instances * st[i].lead_energy_nj +
           (st[i].instances - st[i].lead_instances) * st[i].trail_energy_nj;
      assert_near(st[i].lead_energy_nj, c->f.pareto[st[i].lead_pareto].energy_nj, 0);
    }
    assert_near(t, plan.time_ns, 1e-6); /* the states add up to the plan's time and energy */
    assert_near(e, plan.energy_nj, 1e-6);
    /* The same plan by position: planstore_at_prefix. */
    planstore_plan at;
    assert_int_equal(planstore_at_prefix(c->ps, &plan, plan.walk_prefix, &at, &err), 0);
    assert_int_equal(at.walk_prefix, plan.walk_prefix);
    assert_near(at.time_ns, plan.time_ns, 0);
    assert_near(at.energy_nj, plan.energy_nj, 0);
    assert_near(at.lower_bound_nj, at.energy_nj, 0);
  }
  planstore_plan plan, at;
  enpu_err err = {0};
  assert_int_equal(planstore_lookup(c->ps, POLICY, PLANSTORE_PREFILL, 4, 128, cum_t[0], &plan, &err), 0);
  assert_int_equal(planstore_at_prefix(c->ps, &plan, 0, &at, &err), 0);
  assert_near(at.time_ns, t0, 0);
  assert_int_equal(planstore_at_prefix(c->ps, &plan, NMOVES + 1, &at, &err), ENPU_ERR_RANGE);
  assert_non_null(strstr(err.msg, "beyond the"));
  plan.policy = 99;
  assert_int_equal(planstore_at_prefix(c->ps, &plan, 0, &at, &err), ENPU_ERR_INVALID);
}

/* planstore_lookup_suffix: the rest of a pass from op instance k of n, priced as the share
 * (n − k) / n of every walk prefix, answers what a whole-pass lookup at target × n / (n − k)
 * answers, scaled; from 0 it is planstore_retarget; an empty suffix takes nothing. */
static void test_lookup_suffix(void **state) {
  ctx *c = *state;
  const size_t row = grid_row(PLANSTORE_PREFILL, 4, 128);
  double t0, e0, cum_t[NMOVES], cum_e[NMOVES];
  uint64_t counts[NMOVES][NOPS][NPTS];
  replay_here(row, &t0, &e0, cum_t, cum_e, counts);
  planstore_plan plan, rest, whole;
  enpu_err err = {0};
  assert_int_equal(planstore_lookup(c->ps, POLICY, PLANSTORE_PREFILL, 4, 128, cum_t[NMOVES - 1], &plan, &err), 0);
  const uint64_t n = planstore_plan_instance_count(c->ps, &plan);
  assert_int_equal(n, multiplicity(0, row) + multiplicity(1, row) + multiplicity(2, row));
  for (uint64_t k = 0; k < n; k++)
    for (size_t s = 0; s < NMOVES; s++) {
      const double share = (double)(n - k) / (double)n, target = cum_t[s] * share;
      assert_int_equal(planstore_lookup_suffix(c->ps, &plan, k, target, &rest, &err), 0);
      assert_int_equal(planstore_retarget(c->ps, &plan, target / share, &whole, &err), 0);
      assert_int_equal(rest.walk_prefix, whole.walk_prefix);
      assert_true(rest.time_ns <= target * (1 + 1e-12));
      assert_near(rest.time_ns, whole.time_ns * share, 1e-9 * whole.time_ns);
      assert_near(rest.energy_nj, whole.energy_nj * share, 1e-9 * whole.energy_nj);
      assert_true(rest.target_ns == target && isnan(rest.plan_time_ns));
    }
  /* Below the fastest suffix: the fastest, flagged; an empty suffix fits any target. */
  assert_int_equal(planstore_lookup_suffix(c->ps, &plan, n / 2, 1.0, &rest, &err), ENPU_ERR_INFEASIBLE);
  assert_int_equal(rest.walk_prefix, 0);
  assert_non_null(strstr(err.msg, "fastest suffix"));
  assert_int_equal(planstore_lookup_suffix(c->ps, &plan, n, 0, &rest, NULL), 0);
  assert_true(rest.time_ns == 0 && rest.energy_nj == 0);
  assert_int_equal(planstore_lookup_suffix(c->ps, &plan, n + 1, 1e30, &rest, &err), ENPU_ERR_RANGE);
  assert_int_equal(planstore_lookup_suffix(c->ps, &plan, 0, NAN, &rest, &err), ENPU_ERR_INVALID);
  plan.policy = 99;
  assert_int_equal(planstore_lookup_suffix(c->ps, &plan, 0, 1e30, &rest, &err), ENPU_ERR_INVALID);
  assert_int_equal(planstore_plan_instance_count(c->ps, &plan), 0);
}

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

/* ---------------------------------------------------------------------------------
 * zstd, sizes, publication */

static void test_zstd_filter_in_pipeline(void **state) {
  ctx *c = *state;
  hid_t file = H5Fopen(c->path, H5F_ACC_RDONLY, H5P_DEFAULT);
  assert_true(file >= 0);
  hid_t ds = H5Dopen2(file, "/policies/" POLICY "/pareto", H5P_DEFAULT);
  assert_true(ds >= 0);
  hid_t dcpl = H5Dget_create_plist(ds);
  unsigned flags = 0, values[4] = {0};
  size_t nvalues = 4;
  assert_true(H5Pget_filter_by_id2(dcpl, STORE_ZSTD_FILTER_ID, &flags, &nvalues, values, 0, NULL, NULL) >= 0);
  assert_int_equal(values[0], 3); /* the level the fixture asked for */
  assert_int_equal(nvalues, 2);
  hsize_t chunk = 0;
  assert_int_equal(H5Pget_chunk(dcpl, 1, &chunk), 1);
  hid_t type = H5Dget_type(ds);
  assert_int_equal(values[1], chunk * H5Tget_size(type)); /* the decompression bound */
  assert_true(H5Pget_filter_by_id2(dcpl, H5Z_FILTER_SHUFFLE, &flags, &nvalues, values, 0, NULL, NULL) >= 0);
  unsigned attr = 0;
  hid_t a = H5Aopen(file, "format_version", H5P_DEFAULT);
  assert_true(H5Aread(a, H5T_NATIVE_UINT, &attr) >= 0);
  assert_int_equal(attr, STORE_FORMAT_VERSION);
  H5Aclose(a);
  H5Tclose(type);
  H5Pclose(dcpl);
  H5Dclose(ds);
  H5Fclose(file);
}

static long file_bytes(const char *path) {
  struct stat st;
  return stat(path, &st) == 0 ? (long)st.st_size : -1;
}

/* A big, regular walk table (what real stores are made of) compresses well. */
static void test_compression_shrinks(void **state) {
  ctx *c = *state;
  enum { ROWS = 20000 };
  store_walk_rec *rows = calloc(ROWS, sizeof *rows);
  assert_non_null(rows);
  for (size_t i = 0; i < ROWS; i++)
    rows[i] = (store_walk_rec){(uint32_t)(i / 200),    (uint32_t)(i % 37),    (uint32_t)(i % 37) * 3 + 1, 1,
                               1e6 + 10.0 * (double)i, 5e6 - 20.0 * (double)i};
  long bytes[2];
  for (int k = 0; k < 2; k++) {
    char path[160];
    snprintf(path, sizeof path, "%s/size%d.h5", c->dir, k);
    store_writer *w = NULL;
    store_lock *lock = NULL;
    enpu_err err = {0};
    assert_int_equal(store_fixture_writer(path, &test_prov, k == 0 ? -1 : 3, &lock, &w, &err), 0);
    assert_int_equal(store_writer_append(w, POLICY, STORE_T_WALK, rows, ROWS, &err), 0);
    assert_int_equal(store_writer_commit(w, &err), 0);
    store_writer_free(w);
    store_lock_release(lock);
    bytes[k] = file_bytes(path);
  }
  free(rows);
  print_message("walk table of %d rows: %ld bytes uncompressed, %ld with shuffle+zstd (%.1fx)\n", ROWS, bytes[0],
                bytes[1], (double)bytes[0] / (double)bytes[1]);
  assert_true(bytes[0] > (long)(ROWS * sizeof(store_walk_rec)) / 2);
  assert_true(bytes[1] * 3 < bytes[0]);
}

/* Nothing appears on disk before commit (the file is built in memory); a reader holding
 * the old file keeps it. */
static void test_atomic_publication(void **state) {
  ctx *c = *state;
  char path[160], tmp[170];
  snprintf(path, sizeof path, "%s/atomic.h5", c->dir);
  snprintf(tmp, sizeof tmp, "%s.tmp", path);
  enpu_err err = {0};
  fixture *old = calloc(1, sizeof *old);
  assert_non_null(old);
  make_fixture(old);
  assert_int_equal(write_fixture(path, old, 3, &err), 0);
  hid_t held = H5Fopen(path, H5F_ACC_RDONLY, H5P_DEFAULT);
  assert_true(held >= 0);

  store_writer *w = NULL;
  store_lock *lock = NULL;
  store_provenance prov = test_prov;
  prov.job_hash = 99;
  assert_int_equal(store_fixture_writer(path, &prov, 3, &lock, &w, &err), 0);
  assert_int_equal(file_bytes(tmp), -1);
  assert_int_equal(store_writer_append(w, POLICY, STORE_T_OPS, old->ops, 1, &err), 0);
  assert_int_equal(file_bytes(tmp), -1);
  assert_int_equal(store_writer_commit(w, &err), 0);
  store_writer_free(w);
  assert_int_equal(file_bytes(tmp), -1);

  uint64_t hash = 0;
  hid_t a = H5Aopen(held, "job_hash", H5P_DEFAULT);
  assert_true(H5Aread(a, H5T_NATIVE_UINT64, &hash) >= 0);
  H5Aclose(a);
  assert_int_equal(hash, 44); /* the old file, still readable through the old handle */
  hid_t ds = H5Dopen2(held, "/policies/" POLICY "/walk", H5P_DEFAULT);
  assert_true(ds >= 0);
  H5Dclose(ds);
  H5Fclose(held);
  hid_t now = H5Fopen(path, H5F_ACC_RDONLY, H5P_DEFAULT);
  a = H5Aopen(now, "job_hash", H5P_DEFAULT);
  assert_true(H5Aread(a, H5T_NATIVE_UINT64, &hash) >= 0);
  H5Aclose(a);
  H5Fclose(now);
  assert_int_equal(hash, 99);

  /* An abandoned writer leaves no temporary file and does not touch the store. */
  assert_int_equal(store_writer_create(lock, &prov, 3, &w, &err), 0);
  store_writer_free(w);
  store_lock_release(lock);
  assert_int_equal(file_bytes(tmp), -1);
  assert_true(file_bytes(path) > 0);
  free(old);
}

static void test_writer_rejects_bad_input(void **state) {
  ctx *c = *state;
  char path[160];
  snprintf(path, sizeof path, "%s/bad.h5", c->dir);
  store_writer *w = NULL;
  store_lock *lock = NULL;
  enpu_err err = {0};
  assert_int_equal(store_fixture_writer(path, &test_prov, 3, &lock, &w, &err), 0);
  assert_int_equal(store_writer_append(w, "a/b", STORE_T_OPS, c->f.ops, 1, &err), ENPU_ERR_INVALID);
  assert_int_equal(store_writer_append(w, "", STORE_T_OPS, c->f.ops, 1, &err), ENPU_ERR_INVALID);
  assert_int_equal(store_writer_append(w, POLICY, STORE_NTABLE, c->f.ops, 1, &err), ENPU_ERR_INVALID);
  store_writer_free(w);
  store_lock_release(lock);
  assert_int_equal(store_lock_acquire("/nonexistent-dir/x.h5", "test", 0, NULL, &lock, &err), ENPU_ERR_IO);
  assert_null(lock);
}

/* The text of a small file ("" when it cannot be read). */
static void read_small(const char *path, char *out, size_t cap) {
  FILE *f = fopen(path, "r");
  size_t n = f ? fread(out, 1, cap - 1, f) : 0;
  out[n] = '\0';
  if (f) fclose(f);
}

/* Links beside the store are never written through: a symbolic link at .lock is refused
 * when locking, one planted at .tmp after the lock was taken is refused at commit (the
 * link and its target stay as they were, nothing is published), and a store with a
 * second hard link is refused. */
static void test_writer_refuses_links(void **state) {
  ctx *c = *state;
  char path[160], side[192], victim[192], other[192], text[64];
  snprintf(path, sizeof path, "%s/links.h5", c->dir);
  snprintf(victim, sizeof victim, "%s/victim.txt", c->dir);
  FILE *f = fopen(victim, "w");
  assert_non_null(f);
  fputs("victim\n", f);
  fclose(f);
  store_lock *lock = NULL;
  store_writer *w = NULL;
  enpu_err err = {0};
  snprintf(side, sizeof side, "%s.lock", path);
  assert_int_equal(symlink(victim, side), 0);
  assert_int_equal(store_lock_acquire(path, "test", 0, NULL, &lock, &err), ENPU_ERR_INVALID);
  assert_non_null(strstr(err.msg, "symbolic link"));
  assert_null(lock);
  assert_int_equal(unlink(side), 0);

  assert_int_equal(store_fixture_writer(path, &test_prov, 3, &lock, &w, &err), 0);
  snprintf(side, sizeof side, "%s.tmp", path);
  assert_int_equal(symlink(victim, side), 0);
  assert_int_equal(store_writer_commit(w, &err), ENPU_ERR_INVALID);
  assert_non_null(strstr(err.msg, "symbolic link"));
  store_writer_free(w);
  struct stat st;
  assert_int_equal(lstat(side, &st), 0);
  assert_true(S_ISLNK(st.st_mode));
  read_small(victim, text, sizeof text);
  assert_string_equal(text, "victim\n");
  assert_int_equal(file_bytes(path), -1);
  assert_int_equal(unlink(side), 0);
  assert_int_equal(store_writer_create(lock, &test_prov, 3, &w, &err), 0);
  assert_int_equal(store_writer_commit(w, &err), 0);
  store_writer_free(w);
  store_lock_release(lock);

  snprintf(other, sizeof other, "%s/links-other-name.h5", c->dir);
  assert_int_equal(link(path, other), 0);
  assert_int_equal(store_lock_acquire(path, "test", 0, NULL, &lock, &err), ENPU_ERR_INVALID);
  assert_non_null(strstr(err.msg, "2 hard links"));
  assert_null(lock);
  assert_int_equal(unlink(other), 0);
  assert_int_equal(store_lock_acquire(path, "test", 0, NULL, &lock, &err), 0);
  store_lock_release(lock);
}

/* ---------------------------------------------------------------------------------
 * Corrupt and crafted stores */

/* Both readers (planstore_open and store_load share one code path) refuse the file. */
static void expect_open_fails(const char *path, int code, const char *needle) {
  planstore *ps = NULL;
  enpu_err err = {0};
  int rc = planstore_open(path, &ps, &err);
  if (rc != code || (needle && !strstr(err.msg, needle)))
    fail_msg("open %s: rc %d (want %d), message '%s' (want '%s')", path, rc, code, err.msg, needle ? needle : "");
  assert_null(ps);
  assert_true(strlen(err.msg) > 0);
  store_contents *s = NULL;
  enpu_err lerr = {0};
  rc = store_load(path, &s, &lerr);
  if (rc != code || (needle && !strstr(lerr.msg, needle)))
    fail_msg("store_load %s: rc %d (want %d), message '%s' (want '%s')", path, rc, code, lerr.msg,
             needle ? needle : "");
  assert_null(s);
}

/* Write the fixture, after `mutate` broke one index, to <dir>/crafted.h5. */
static void write_crafted(const ctx *c, void (*mutate)(fixture *), char path[160]) {
  fixture *f = calloc(1, sizeof *f);
  assert_non_null(f);
  make_fixture(f);
  mutate(f);
  snprintf(path, 160, "%s/crafted.h5", c->dir);
  enpu_err err = {0};
  assert_int_equal(write_fixture(path, f, 3, &err), 0);
  free(f);
}

/* Both readers must refuse the crafted store. */
static void crafted(ctx *c, void (*mutate)(fixture *), const char *needle) {
  char path[160];
  write_crafted(c, mutate, path);
  expect_open_fails(path, ENPU_ERR_FORMAT, needle);
}

static void m_pareto_range(fixture *f) { f->ops[2].pareto_first = 8; }
static void m_pareto_owner(fixture *f) { f->pareto[4].op = 2; }
static void m_pareto_op(fixture *f) { f->pareto[0].op = 1000000; }
static void m_walk_range(fixture *f) { f->buckets[1].walk_first = f->nwalk - 2; }
static void m_walk_count(fixture *f) { f->buckets[0].walk_count = UINT64_MAX; }
static void m_ops_count(fixture *f) { f->buckets[0].ops_count = UINT32_MAX; }
static void m_walk_op(fixture *f) { f->walk[0].op = 7; }
static void m_walk_pareto(fixture *f) { f->walk[0].pareto = 5; } /* a point of op 1 */
static void m_walk_backwards(fixture *f) { f->walk[3].pareto = 0; }
static void m_walk_too_many(fixture *f) { f->walk[2].instances = 3; }
static void m_walk_time(fixture *f) { f->walk[2].time_ns = f->walk[1].time_ns - 1; }
static void m_walk_bucket(fixture *f) { f->walk[0].bucket = 1; }
static void m_bops_order(fixture *f) { f->bops[1].op = 0; }
static void m_bops_op(fixture *f) { f->bops[2].op = 3; }
static void m_plan_prefix(fixture *f) { f->plans[0].walk_prefix = NMOVES + 1; }
static void m_plan_states(fixture *f) { f->plans[1].states_first = f->npstates; }
static void m_phase(fixture *f) { f->buckets[0].phase = 2; }
static void m_duplicate(fixture *f) { f->buckets[1].batch = 1, f->buckets[1].seq = 128; }
static void m_nan(fixture *f) { f->buckets[0].t_nodvfs_ns = NAN; }
static void m_pstate_plan(fixture *f) { f->pstates[4].plan = 0; }
static void m_pstate_op(fixture *f) { f->pstates[0].op = NOPS; }
static void m_pstate_pareto(fixture *f) { f->pstates[1].pareto = 0; } /* a point of op 0, row of op 1 */

/* plan_states rows are loaded (and checked) by store_load only: planstore_open, which
 * never reads them, still opens such a store. */
static void crafted_plan_states(ctx *c, void (*mutate)(fixture *), const char *needle) {
  char path[160];
  write_crafted(c, mutate, path);
  enpu_err err = {0};
  store_contents *s = NULL;
  assert_int_equal(store_load(path, &s, &err), ENPU_ERR_FORMAT);
  assert_non_null(strstr(err.msg, needle));
  assert_null(s);
  planstore *ps = NULL;
  assert_int_equal(planstore_open(path, &ps, &err), 0);
  planstore_close(ps);
}

static void test_crafted_indices(void **state) {
  ctx *c = *state;
  crafted(c, m_pareto_range, "pareto range");
  crafted(c, m_pareto_owner, "belongs to op");
  crafted(c, m_pareto_op, "op 1000000 out of range");
  crafted(c, m_walk_range, "range outside");
  crafted(c, m_walk_count, "range outside");
  crafted(c, m_ops_count, "range outside");
  crafted(c, m_walk_op, "is not an op of bucket");
  crafted(c, m_walk_pareto, "outside op 0");
  crafted(c, m_walk_backwards, "outside op 0");
  crafted(c, m_walk_too_many, "more instances");
  crafted(c, m_walk_time, "non-decreasing");
  crafted(c, m_walk_bucket, "wrong bucket");
  crafted(c, m_bops_order, "order");
  crafted(c, m_bops_op, "out of range");
  crafted(c, m_plan_prefix, "walk prefix");
  crafted(c, m_plan_states, "plan_states range");
  crafted(c, m_phase, "bad phase");
  crafted(c, m_duplicate, "appears twice");
  crafted(c, m_nan, "non-finite");
  crafted_plan_states(c, m_pstate_plan, "plan_states row 4: wrong plan");
  crafted_plan_states(c, m_pstate_op, "plan_states row 0");
  crafted_plan_states(c, m_pstate_pareto, "pareto 0 not its point");
}

/* ---------------------------------------------------------------------------------
 * Crafted layouts: checked before anything is read, so no size in the file makes the
 * reader (or HDF5 for it) allocate more than the file justifies. */

typedef enum {
  L_HUGE_CHUNK,
  L_DEFLATE,
  L_UNBACKED_ROWS,
  L_ZSTD_BOUND,
  L_EXTERNAL,
  L_SKIPPED_FILTER, /* a chunk whose index says zstd was skipped (HDF5 would overrun it) */
  L_SHORT_FRAME     /* a zstd frame of fewer bytes than the chunk */
} layout_case;

/* Replace /policies/enpu-all/walk of a fresh fixture store by an empty dataset of the
 * same type whose storage is crafted as `lc` says (the checks come before any read). */
static void craft_walk_layout(const ctx *c, const char *path, layout_case lc) {
  enpu_err err = {0};
  assert_int_equal(write_fixture(path, &c->f, 3, &err), 0);
  hid_t file = H5Fopen(path, H5F_ACC_RDWR, H5P_DEFAULT);
  hid_t g = H5Gopen2(file, "/policies/" POLICY, H5P_DEFAULT);
  hid_t old = H5Dopen2(g, "walk", H5P_DEFAULT);
  hid_t type = H5Dget_type(old);
  H5Dclose(old);
  assert_true(H5Ldelete(g, "walk", H5P_DEFAULT) >= 0);
  hsize_t rows = c->f.nwalk, chunk = 16, unlimited = H5S_UNLIMITED;
  hid_t dcpl = H5Pcreate(H5P_DATASET_CREATE);
  if (lc == L_HUGE_CHUNK) chunk = 1u << 20;
  if (lc != L_EXTERNAL) assert_true(H5Pset_chunk(dcpl, 1, &chunk) >= 0);
  if (lc == L_DEFLATE) assert_true(H5Pset_deflate(dcpl, 1) >= 0);
  if (lc == L_SKIPPED_FILTER || lc == L_SHORT_FRAME) {
    const unsigned level = 3;
    assert_true(H5Pset_shuffle(dcpl) >= 0);
    assert_true(H5Pset_filter(dcpl, 32015, H5Z_FLAG_MANDATORY, 1, &level) >= 0);
  }
  if (lc == L_ZSTD_BOUND) {
    /* With the filter unregistered its set_local cannot correct the bound: the file
     * claims 2 GiB chunks (optional filter, so HDF5 writes the chunks unfiltered). */
    assert_true(H5Zunregister(32015) >= 0);
    const unsigned values[2] = {3, 1u << 31};
    assert_true(H5Pset_filter(dcpl, 32015, H5Z_FLAG_OPTIONAL, 2, values) >= 0);
  }
  if (lc == L_EXTERNAL) {
    char ext[180];
    snprintf(ext, sizeof ext, "%s.ext", path);
    assert_true(H5Pset_external(dcpl, ext, 0, rows * H5Tget_size(type)) >= 0);
  }
  hid_t space = H5Screate_simple(1, &rows, lc == L_EXTERNAL ? NULL : &unlimited);
  hid_t ds = H5Dcreate2(g, "walk", type, space, H5P_DEFAULT, dcpl, H5P_DEFAULT);
  assert_true(ds >= 0);
  if (lc == L_UNBACKED_ROWS) { /* 100 million rows, none of them written */
    hsize_t many = 100000000;
    assert_true(H5Dset_extent(ds, &many) >= 0);
  }
  if (lc == L_SKIPPED_FILTER || lc == L_SHORT_FRAME) { /* both chunks written raw */
    unsigned char frame[64] = {0}, zeros[24] = {0};
    size_t bytes = ZSTD_compress(frame, sizeof frame, zeros, sizeof zeros, 3);
    assert_false(ZSTD_isError(bytes));
    for (hsize_t at = 0; at < rows; at += chunk)
      assert_true(H5Dwrite_chunk(ds, H5P_DEFAULT, lc == L_SKIPPED_FILTER ? 2u : 0u, &at, bytes, frame) >= 0);
  }
  H5Dclose(ds);
  H5Sclose(space);
  H5Pclose(dcpl);
  H5Tclose(type);
  H5Gclose(g);
  H5Fclose(file);
}

static void test_crafted_layouts(void **state) {
  ctx *c = *state;
  char path[160];
  snprintf(path, sizeof path, "%s/layout.h5", c->dir);
  const struct {
    layout_case lc;
    const char *needle;
  } cases[] = {
      {L_HUGE_CHUNK, "table walk: chunks of 1048576 rows"},
      {L_DEFLATE, "table walk: filter 1 is not shuffle"},
      {L_UNBACKED_ROWS, "table walk: 100000000 rows"},
      {L_ZSTD_BOUND, "table walk: zstd chunk bound 2147483648 is not the chunk size"},
      {L_EXTERNAL, "table walk: data stored outside the file"},
      {L_SKIPPED_FILTER, "table walk: the chunk at row 0"},
      {L_SHORT_FRAME, "table walk: cannot read it"},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    craft_walk_layout(c, path, cases[i].lc);
    expect_open_fails(path, ENPU_ERR_FORMAT, cases[i].needle);
  }
}

static void test_not_a_store(void **state) {
  ctx *c = *state;
  char path[160];
  snprintf(path, sizeof path, "%s/text.h5", c->dir);
  FILE *fp = fopen(path, "w");
  assert_non_null(fp);
  fputs("not hdf5 at all\n", fp);
  fclose(fp);
  expect_open_fails(path, ENPU_ERR_FORMAT, "not an HDF5 file");
  expect_open_fails("/nonexistent/plans.h5", ENPU_ERR_IO, "cannot open");
  /* A valid HDF5 file without the store's attribute. */
  snprintf(path, sizeof path, "%s/plain.h5", c->dir);
  hid_t f = H5Fcreate(path, H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT);
  assert_true(f >= 0);
  H5Fclose(f);
  expect_open_fails(path, ENPU_ERR_FORMAT, "not a plan store");
  /* The right attribute with a future version. */
  f = H5Fopen(path, H5F_ACC_RDWR, H5P_DEFAULT);
  hid_t sp = H5Screate(H5S_SCALAR);
  hid_t a = H5Acreate2(f, "format_version", H5T_STD_U32LE, sp, H5P_DEFAULT, H5P_DEFAULT);
  unsigned v = STORE_FORMAT_VERSION + 1;
  H5Awrite(a, H5T_NATIVE_UINT, &v);
  H5Aclose(a);
  H5Sclose(sp);
  H5Fclose(f);
  expect_open_fails(path, ENPU_ERR_FORMAT, "format_version");
  /* An older version (format 1, before budget modes): refused, naming both versions and
   * what to do. */
  f = H5Fopen(path, H5F_ACC_RDWR, H5P_DEFAULT);
  a = H5Aopen(f, "format_version", H5P_DEFAULT);
  v = STORE_FORMAT_VERSION - 1;
  H5Awrite(a, H5T_NATIVE_UINT, &v);
  H5Aclose(a);
  H5Fclose(f);
  char want[96];
  snprintf(want, sizeof want, "format_version %u, written before this reader's format %u", v, STORE_FORMAT_VERSION);
  expect_open_fails(path, ENPU_ERR_FORMAT, want);
  expect_open_fails(path, ENPU_ERR_FORMAT, "recompile it");
}

static int copy_file(const char *from, const char *to, long keep_bytes, long flip_at) {
  FILE *in = fopen(from, "rb"), *out = fopen(to, "wb");
  if (!in || !out) return -1;
  int ch;
  for (long i = 0; (ch = fgetc(in)) != EOF && (keep_bytes < 0 || i < keep_bytes); i++)
    fputc(i == flip_at ? ch ^ 0xff : ch, out);
  fclose(in);
  return fclose(out);
}

static void test_truncated(void **state) {
  ctx *c = *state;
  char path[160];
  snprintf(path, sizeof path, "%s/truncated.h5", c->dir);
  long size = file_bytes(c->path);
  const double fractions[] = {0.0, 0.01, 0.25, 0.5, 0.9, 0.99};
  for (size_t i = 0; i < sizeof fractions / sizeof fractions[0]; i++) {
    assert_int_equal(copy_file(c->path, path, (long)(size * fractions[i]), -1), 0);
    planstore *ps = NULL;
    enpu_err err = {0};
    int rc = planstore_open(path, &ps, &err);
    assert_true(rc == ENPU_ERR_FORMAT || rc == ENPU_ERR_IO);
    assert_null(ps);
    assert_non_null(strstr(err.msg, path));
  }
}

/* Flipped bytes anywhere: the open either fails cleanly or yields a store that still
 * answers lookups (a flip in unused space); store_load likewise; neither ever crashes
 * (ASan build). The loop runs in a child process that leaves with _exit: HDF5 1.10.8
 * leaks internal memory after an object header fails its checksum, which would
 * otherwise fail LeakSanitizer for the whole program; the parent stays leak-checked. */
static int flip_loop(const char *src, const char *path, int counts[2]) {
  long size = file_bytes(src);
  for (long at = 0; at < size; at += size / 300 + 1) {
    if (copy_file(src, path, -1, at) != 0) return 1;
    planstore *ps = NULL;
    enpu_err err = {0};
    int rc = planstore_open(path, &ps, &err);
    if (rc == 0) {
      planstore_plan plan;
      rc = planstore_lookup(ps, NULL, PLANSTORE_PREFILL, 1, 1, 1e9, &plan, &err);
      planstore_close(ps);
      if (rc > 0) return 2;
      counts[1]++;
    } else {
      if ((rc != ENPU_ERR_FORMAT && rc != ENPU_ERR_IO) || ps || !err.msg[0]) return 3;
      counts[0]++;
    }
    store_contents *s = NULL;
    rc = store_load(path, &s, &err);
    store_contents_free(s);
    if (rc != 0 && rc != ENPU_ERR_FORMAT && rc != ENPU_ERR_IO) return 4;
  }
  return 0;
}

static void test_flipped_bytes(void **state) {
  ctx *c = *state;
  char path[160];
  snprintf(path, sizeof path, "%s/flipped.h5", c->dir);
  int fds[2];
  assert_int_equal(pipe(fds), 0);
  pid_t pid = fork();
  assert_true(pid >= 0);
  if (pid == 0) {
    int counts[2] = {0, 0};
    int rc = flip_loop(c->path, path, counts);
    ssize_t wrote = write(fds[1], counts, sizeof counts);
    _exit(rc != 0 || wrote != (ssize_t)sizeof counts ? 10 + rc : 0);
  }
  close(fds[1]);
  int counts[2] = {0, 0}, status = 0;
  ssize_t got = read(fds[0], counts, sizeof counts);
  close(fds[0]);
  assert_int_equal(waitpid(pid, &status, 0), pid);
  assert_true(WIFEXITED(status)); /* not killed by a signal */
  assert_int_equal(WEXITSTATUS(status), 0);
  assert_int_equal(got, sizeof counts);
  print_message("flipped bytes: %d opens failed cleanly, %d flips were harmless\n", counts[0], counts[1]);
  assert_true(counts[0] > 0);
}

static void test_damaged_opens_leak_nothing(void **state) {
  const ctx *c = *state;
  test_failed_opens_leak_nothing(c->path, c->dir);
}

/* Not a timed test: prints the median lookup time over many lookups. */
static void test_lookup_speed_report(void **state) {
  ctx *c = *state;
  enum { ROUNDS = 201, PER_ROUND = 1000 };
  double *ns = calloc(ROUNDS, sizeof *ns);
  assert_non_null(ns);
  double sink = 0;
  for (int r = 0; r < ROUNDS; r++) {
    struct timespec a, b;
    clock_gettime(CLOCK_MONOTONIC, &a);
    for (int i = 0; i < PER_ROUND; i++) {
      planstore_plan plan;
      int rc = planstore_lookup(c->ps, POLICY, PLANSTORE_PREFILL, 1 + i % 4, 100 + i % 400, 1000.0 + i % 2000,
                                &plan, NULL);
      sink += rc == 0 ? plan.energy_nj : 0;
    }
    clock_gettime(CLOCK_MONOTONIC, &b);
    ns[r] = ((double)(b.tv_sec - a.tv_sec) * 1e9 + (double)(b.tv_nsec - a.tv_nsec)) / PER_ROUND;
  }
  qsort(ns, ROUNDS, sizeof *ns, enpu_cmp_double);
  print_message("planstore_lookup: median %.1f ns per lookup (%d rounds of %d)\n", ns[ROUNDS / 2], ROUNDS,
                PER_ROUND);
  assert_true(sink > 0);
  free(ns);
}

/* `test_store --write PATH [LEVEL]` writes the fixture store and exits: the integration
 * test reads it with h5dump, h5py and the installed library. */
static int write_only(const char *path, int level) {
  fixture *f = calloc(1, sizeof *f);
  enpu_err err = {0};
  if (!f) return 1;
  make_fixture(f);
  int rc = write_fixture(path, f, level, &err);
  if (rc) fprintf(stderr, "test_store: %s\n", err.msg);
  free(f);
  return rc ? 1 : 0;
}

/* store_walk_step: instances join the lead; the walk moves on only once all reached it. */
static void test_walk_step_rule(void **state) {
  (void)state;
  store_walk_pos p = {.lead = 0, .trail = 0, .lead_instances = 4, .instances = 4};
  assert_int_equal(store_walk_step(&p, 2, 1), STORE_WALK_OK); /* 1 of 4 to point 2 */
  assert_int_equal(p.lead, 2);
  assert_int_equal(p.trail, 0);
  assert_int_equal(store_walk_step(&p, 3, 1), STORE_WALK_EARLY);
  assert_int_equal(store_walk_step(&p, 2, 4), STORE_WALK_OVERFLOW);
  assert_int_equal(store_walk_step(&p, 1, 1), STORE_WALK_BACKWARD);
  assert_int_equal(store_walk_step(&p, 2, 0), STORE_WALK_BACKWARD);
  assert_int_equal(p.lead_instances, 1); /* the rejected steps left it */
  assert_int_equal(store_walk_step(&p, 2, 3), STORE_WALK_OK);
  assert_int_equal(p.lead_instances, 4);
  assert_int_equal(store_walk_step(&p, 2, 1), STORE_WALK_OVERFLOW); /* all there already */
  assert_int_equal(store_walk_step(&p, 5, 4), STORE_WALK_OK);
  assert_int_equal(p.trail, 2);
  assert_int_equal(p.lead, 5);
}

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

int main(int argc, char **argv) {
  if (argc >= 3 && strcmp(argv[1], "--write") == 0) return write_only(argv[2], argc > 3 ? atoi(argv[3]) : 3);
  /* Expected failures (corrupt files, a missing directory) need no HDF5 error stacks on
   * stderr; this also silences HDF5 1.10.8's exit-time "infinite loop closing library"
   * notice, which follows any object header that failed its checksum (an internal
   * free-list leak in HDF5, not an open identifier: the reader closes all of them). */
  H5Eset_auto2(H5E_DEFAULT, NULL, NULL);
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_policies),
      cmocka_unit_test(test_bucket_grid),
      cmocka_unit_test(test_open_policy),
      cmocka_unit_test(test_policy_names),
      cmocka_unit_test(test_exact_hit_and_padding),
      cmocka_unit_test(test_beyond_largest_and_bad_buckets),
      cmocka_unit_test(test_walk_prefix_targets),
      cmocka_unit_test(test_target_below_fastest),
      cmocka_unit_test(test_lookup_slack),
      cmocka_unit_test(test_plan_states),
      cmocka_unit_test(test_lookup_suffix),
      cmocka_unit_test(test_zstd_filter_in_pipeline),
      cmocka_unit_test(test_compression_shrinks),
      cmocka_unit_test(test_atomic_publication),
      cmocka_unit_test(test_writer_rejects_bad_input),
      cmocka_unit_test(test_writer_refuses_links),
      cmocka_unit_test(test_store_load_round_trip),
      cmocka_unit_test(test_store_diff),
      cmocka_unit_test(test_crafted_indices),
      cmocka_unit_test(test_crafted_layouts),
      cmocka_unit_test(test_not_a_store),
      cmocka_unit_test(test_truncated),
      cmocka_unit_test(test_flipped_bytes),
      cmocka_unit_test(test_damaged_opens_leak_nothing),
      cmocka_unit_test(test_lookup_speed_report),
      cmocka_unit_test(test_walk_step_rule),
      cmocka_unit_test(test_bundle_round_trip),
      cmocka_unit_test(test_bundle_bad_input),
      cmocka_unit_test(test_validation_carry),
  };
  return cmocka_run_group_tests(tests, setup, teardown);
}
