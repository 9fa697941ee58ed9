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
 * fixture, never copied from the reader's output.
 * The module's tests are split by topic over test_store.c and test_store_*.c, one program
 * (test_store.h says which file holds what; main here runs them all). */
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
#include "test_util.h"

/* ---------------------------------------------------------------------------------
 * The synthetic store */

/* Point k of op i: slower and cheaper as k grows (a convex front). */
double pt_time(int i, int k) { return 100.0 * (i + 1) * (1.0 + 0.25 * k + 0.05 * k * k); }
double pt_energy(int i, int k) { return 1000.0 * (i + 1) * (1.0 - 0.2 * k); }

/* The walk every ok bucket takes: (op, point, instances); -1 instances = all of them. */
static const struct {
  int op, pt;
  long instances;
} walk_moves[] = {{0, 1, 1}, {1, 1, 1}, {1, 1, 1}, {0, 2, 1}, {2, 1, -1}, {1, 2, 2}};
#define NMOVES (sizeof walk_moves / sizeof walk_moves[0])
size_t walk_move_count(void) { return NMOVES; }

/* Instances of each op in bucket `row`. */
uint64_t multiplicity(int op, size_t row) { return op == 0 ? 1 : op == 1 ? 2 : row + 1; }

/* The walk of a bucket replayed by independent bookkeeping: its time and energy before
 * the first move, after each move, and counts[move][op][pt] instances after each. */
typedef struct {
  double t0, e0, cum_t[NMOVES], cum_e[NMOVES];
  uint64_t counts[NMOVES][NOPS][NPTS];
} walk_replay;

/* A move takes instances from the earliest point that still has some. */
static void replay_here(size_t row, walk_replay *w) {
  uint64_t counts[NOPS][NPTS] = {{0}};
  double t = 0, e = 0;
  for (int i = 0; i < NOPS; i++) {
    counts[i][0] = multiplicity(i, row);
    t += counts[i][0] * pt_time(i, 0);
    e += counts[i][0] * pt_energy(i, 0);
  }
  w->t0 = t, w->e0 = e;
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
    w->cum_t[s] = t, w->cum_e[s] = e;
    memcpy(w->counts[s], counts, sizeof counts);
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

void make_fixture(fixture *f) {
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
    walk_replay w;
    replay_here(row, &w);
    b->walk_start_time_ns = w.t0;
    b->walk_start_energy_nj = w.e0;
    b->t_peak_ns = w.t0;
    b->t_nodvfs_ns = 1.05 * w.t0;
    b->e_nodvfs_nj = 1.2 * w.e0;
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
          (uint32_t)row, (uint32_t)op, (uint32_t)(op * NPTS + walk_moves[s].pt), n, w.cum_t[s], w.cum_e[s]};
    }
    b->plan_first = (uint32_t)f->nplans;
    b->plan_count = 2;
    for (int k = 0; k < 2; k++) {
      size_t prefix = k == 0 ? 0 : 3;
      store_plan_rec *pl = &f->plans[f->nplans];
      *pl = (store_plan_rec){.bucket = (uint32_t)row,
                             .slack = 0.05 * k,
                             .budget_ns = w.t0 * (1 + 0.05 * k),
                             .time_ns = prefix ? w.cum_t[prefix - 1] : w.t0,
                             .energy_nj = prefix ? w.cum_e[prefix - 1] : w.e0,
                             .walk_prefix = prefix,
                             .overhead_pct = 0.5 + k,
                             .paper_overhead_pct = 0.25 + 0.5 * k,
                             .states_first = f->npstates};
      pl->lower_bound_nj = pl->energy_nj;
      pl->savings_vs_nodvfs = 1 - pl->energy_nj / b->e_nodvfs_nj;
      /* Runs at the prefix: a move takes an op's lowest-numbered instances still at its
       * earliest point, so instance order is the furthest point first. */
      for (int i = 0; i < NOPS; i++)
        for (int q = NPTS - 1; q >= 0; q--) {
          uint64_t n = prefix ? w.counts[prefix - 1][i][q] : q == 0 ? multiplicity(i, row) : 0;
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

const store_provenance test_prov = {
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

int write_fixture(const char *path, const fixture *f, int level, enpu_err *err) {
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

static int setup(void **state) {
  ctx *c = calloc(1, sizeof *c);
  if (!c) return -1;
  if (store_fixture_dir_make("test_store", c->dir, c->path) != 0) return -1;
  make_fixture(&c->f);
  enpu_err err = {0};
  const int failed = write_fixture(c->path, &c->f, 3, &err) != 0 || planstore_open(c->path, &c->ps, &err) != 0;
  return test_setup_done(failed, &err, state, c);
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
  walk_replay w;
  replay_here(grid_row(PLANSTORE_PREFILL, 4, 512), &w);
  for (size_t s = 0; s < NMOVES; s++) {
    double prev_t = s ? w.cum_t[s - 1] : w.t0, prev_e = s ? w.cum_e[s - 1] : w.e0;
    const double targets[] = {w.cum_t[s], (prev_t + w.cum_t[s]) / 2};
    for (int k = 0; k < 2; k++) {
      planstore_plan plan;
      enpu_err err = {0};
      assert_int_equal(planstore_lookup(c->ps, POLICY, PLANSTORE_PREFILL, 4, 512, targets[k], &plan, &err), 0);
      if (k == 0) {
        assert_int_equal(plan.walk_prefix, s + 1);
        assert_near(plan.time_ns, w.cum_t[s], 1e-9);
        assert_near(plan.energy_nj, w.cum_e[s], 1e-9);
      } else if (w.cum_t[s] > prev_t) {
        assert_int_equal(plan.walk_prefix, s);
        assert_near(plan.energy_nj, prev_e, 1e-9);
        assert_near(plan.lower_bound_nj, (prev_e + w.cum_e[s]) / 2, 1e-6);
        assert_true(plan.lower_bound_nj <= plan.energy_nj);
      }
      assert_true(plan.time_ns <= targets[k]);
      assert_near(plan.savings_vs_nodvfs, 1 - plan.energy_nj / (1.2 * w.e0), 1e-12);
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
  walk_replay w;
  replay_here(grid_row(PLANSTORE_DECODE, 1, 1024), &w);
  const double slacks[] = {0, 0.02, 0.05, 0.10};
  for (size_t i = 0; i < 4; i++) {
    double budget = 1.05 * w.t0 + slacks[i] * 1.05 * w.t0; /* max(T_nodvfs, T_peak) + p·T_nodvfs */
    size_t want = 0;
    while (want < NMOVES && w.cum_t[want] <= budget) want++;
    planstore_plan plan;
    enpu_err err = {0};
    assert_int_equal(planstore_lookup_slack(c->ps, POLICY, PLANSTORE_DECODE, 1, 1024, slacks[i], &plan, &err), 0);
    assert_near(plan.target_ns, budget, 1e-6);
    assert_int_equal(plan.walk_prefix, want);
  }
}

/* A lookup at a stored plan's own target carries both of its overheads, each under its
 * own name (the runtime's and the paper's); any other target has none. */
static void test_stored_plan_overheads(void **state) {
  ctx *c = *state;
  const size_t row = grid_row(PLANSTORE_PREFILL, 4, 128);
  const store_bucket_rec *b = &c->f.buckets[row];
  planstore_plan plan;
  enpu_err err = {0};
  for (uint32_t k = 0; k < b->plan_count; k++) {
    const store_plan_rec *sp = &c->f.plans[b->plan_first + k];
    assert_int_equal(planstore_lookup(c->ps, POLICY, PLANSTORE_PREFILL, 4, 128, sp->budget_ns, &plan, &err), 0);
    assert_true(plan.overhead_pct == 0.5 + k && plan.paper_overhead_pct == 0.25 + 0.5 * k);
    assert_true(plan.plan_time_ns == sp->time_ns && plan.plan_energy_nj == sp->energy_nj);
  }
  assert_int_equal(planstore_lookup(c->ps, POLICY, PLANSTORE_PREFILL, 4, 128,
                                    1.01 * c->f.plans[b->plan_first].budget_ns, &plan, &err),
                   0);
  assert_true(isnan(plan.overhead_pct) && isnan(plan.paper_overhead_pct) && isnan(plan.plan_time_ns));
}

static void test_plan_states(void **state) {
  ctx *c = *state;
  size_t row = grid_row(PLANSTORE_PREFILL, 4, 128);
  walk_replay w;
  replay_here(row, &w);
  for (size_t s = 0; s < NMOVES; s++) {
    planstore_plan plan;
    enpu_err err = {0};
    assert_int_equal(planstore_lookup(c->ps, POLICY, PLANSTORE_PREFILL, 4, 128, w.cum_t[s], &plan, &err), 0);
    assert_int_equal(planstore_plan_op_count(c->ps, &plan), NOPS);
    planstore_op_states st[NOPS];
    size_t n = 0;
    assert_int_equal(planstore_plan_states(c->ps, &plan, st, 1, &n, &err), ENPU_ERR_RANGE);
    assert_int_equal(planstore_plan_states(c->ps, &plan, st, NOPS, &n, &err), 0);
    assert_int_equal(n, NOPS);
    double t = 0, e = 0;
    for (int i = 0; i < NOPS; i++) {
      uint64_t *have = w.counts[plan.walk_prefix - 1][i];
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
  assert_int_equal(planstore_lookup(c->ps, POLICY, PLANSTORE_PREFILL, 4, 128, w.cum_t[0], &plan, &err), 0);
  assert_int_equal(planstore_at_prefix(c->ps, &plan, 0, &at, &err), 0);
  assert_near(at.time_ns, w.t0, 0);
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
  walk_replay w;
  replay_here(row, &w);
  planstore_plan plan, rest, whole;
  enpu_err err = {0};
  assert_int_equal(planstore_lookup(c->ps, POLICY, PLANSTORE_PREFILL, 4, 128, w.cum_t[NMOVES - 1], &plan, &err), 0);
  const uint64_t n = planstore_plan_instance_count(c->ps, &plan);
  assert_int_equal(n, multiplicity(0, row) + multiplicity(1, row) + multiplicity(2, row));
  for (uint64_t k = 0; k < n; k++)
    for (size_t s = 0; s < NMOVES; s++) {
      const double share = (double)(n - k) / (double)n, target = w.cum_t[s] * share;
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
      cmocka_unit_test(test_stored_plan_overheads),
      cmocka_unit_test(test_plan_states),
      cmocka_unit_test(test_lookup_suffix),
  };
  const test_part parts[] = {{tests, sizeof tests / sizeof tests[0]},
                             {store_writer_tests, store_writer_ntests},
                             {store_load_tests, store_load_ntests},
                             {store_damaged_tests, store_damaged_ntests},
                             {store_bundle_tests, store_bundle_ntests}};
  return test_run_parts("store", parts, 5, setup, teardown);
}
