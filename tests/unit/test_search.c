/* test_search.c — the search module on synthetic cost functions whose answers follow
 * from their formulas (or from brute force written here), then on the real cost model.
 *
 * - Roofline evaluator: T = max_c a/s_c, E = P·T + δ·Σ s_c. Raising a strict subset of
 *   equal states leaves T unchanged, so Algorithm 1 can only raise every domain at once:
 *   it walks the diagonal s = 1..S, evaluating the start plus 2^d - 1 new candidates per
 *   step (no candidate repeats), i.e. 1 + (S-1)(2^d-1) evaluations, and ends at all-peak.
 *   On the diagonal E(s) = P·a/s + 5δ·s, so the Pareto set is {s >= argmin E}.
 * - Brute force: Pareto filters and request-level optima are recomputed here by
 *   enumeration, independently of the module's algorithms. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "search.h"
#include "search_internal.h"
#include "test_search.h"
#include "test_size.h"

#define JOB_PATH ENPU_SOURCE_DIR "/jobs/llama3-70b.json"

/* a and b within a relative tolerance. */
#define assert_near_rel(a, b, rel)                                     \
  do {                                                                 \
    const double a_ = (a), b_ = (b);                                   \
    if (!(fabs(a_ - b_) <= fmax(fabs(a_), fabs(b_)) * (rel)))          \
      fail_msg("%.17g != %.17g (relative %g)", a_, b_, (double)(rel)); \
  } while (0)

/* The layers a heavy case builds its graph with (graph_build_depth): the model's all, or
 * `small` of them at ENPU_TEST_SIZE=small (test_size.h), the same ops with fewer
 * instances; the request-level walks re-price the whole request at each step. */
static int case_layers(const config_job *job, int small) { return test_size_small() ? small : job->model.layers; }

/* ---------------------------------------------------------------------------------
 * Synthetic evaluators */

typedef struct {
  double a, p, delta;
  int64_t calls;
} roofline;

static int roofline_eval(void *user, const int s[CONFIG_NCOMP], double *t, double *e, enpu_err *err) {
  roofline *r = user;
  double tm = 0, sum = 0;
  for (int c = 0; c < CONFIG_NCOMP; c++) {
    if (r->a / s[c] > tm) tm = r->a / s[c];
    sum += s[c];
  }
  *t = tm;
  *e = r->p * tm + r->delta * sum;
  r->calls++;
  return 0;
}

static void test_domains(void **state) {
  search_domains d;
  enpu_err err = {0};
  assert_int_equal(search_domains_enpu(&d, 4, 34, SEARCH_OP_GREEDY, &err), 0);
  assert_int_equal(d.ndomains, 4);
  assert_int_equal(d.domain_of[CONFIG_SA], d.domain_of[CONFIG_VU]); /* {FE,SA,VU} */
  assert_int_not_equal(d.domain_of[CONFIG_SRAM], d.domain_of[CONFIG_SA]);
  assert_int_equal(search_domains_enpu(&d, 3, 34, SEARCH_OP_GREEDY, &err), 0);
  assert_int_equal(d.domain_of[CONFIG_SRAM], d.domain_of[CONFIG_SA]);
  assert_int_not_equal(d.domain_of[CONFIG_HBM], d.domain_of[CONFIG_ICI]);
  assert_int_equal(search_domains_dvfs_c(&d, 34, &err), 0);
  assert_int_equal(d.ndomains, 1);
  assert_int_equal(d.domain_of[CONFIG_HBM], -1);
  assert_int_equal(d.domain_of[CONFIG_ICI], -1);
  assert_int_equal(search_domains_enpu(&d, 2, 34, SEARCH_OP_GREEDY, &err), ENPU_ERR_INVALID);
  assert_int_equal(search_domains_enpu(&d, 5, 0, SEARCH_OP_GREEDY, &err), ENPU_ERR_INVALID);
}

static void test_algorithm1_roofline(void **state) {
  search_memo *memo;
  enpu_err err = {0};
  assert_int_equal(search_memo_create(&memo, &err), 0);
  const int S = 34;
  for (int d = 3; d <= 5; d++) {
    search_domains dom;
    assert_int_equal(search_domains_enpu(&dom, d, S, SEARCH_OP_GREEDY, &err), 0);
    roofline r = {1000.0, 1.0, 0.8, 0};
    void *users[1] = {&r};
    search_pareto p;
    assert_int_equal(search_op_pareto(memo, &dom, roofline_eval, users, 1, &p, &err), 0);
    assert_int_equal(p.evals, 1 + (S - 1) * ((1 << d) - 1));
    assert_int_equal(p.evals, r.calls); /* the all-peak plan was a memo hit */
    assert_int_equal(p.steps, S - 1);
    int best = 1; /* argmin of E(s) = a/s + 5δs on the diagonal */
    for (int s = 2; s <= S; s++)
      if (1000.0 / s + 4.0 * s < 1000.0 / best + 4.0 * best) best = s;
    assert_int_equal(p.count, S - best + 1);
    for (int i = 0; i < p.count; i++) {
      const int s = S - i; /* fastest first */
      for (int c = 0; c < CONFIG_NCOMP; c++) assert_int_equal(p.points[i].state[c], s);
      assert_true(fabs(p.points[i].time_ns - 1000.0 / s) < 1e-12);
    }
    search_pareto_free(&p);
  }
  search_memo_free(memo);
}

/* Separable: T = Σ a_c/s_c, E = P·T + Σ k_c·a_c·s_c. Every raise is faster, so the
 * descent ends at all-peak; the memo must never call the evaluator twice on a plan. */
#define SEP_PEAK 6
typedef struct {
  unsigned char seen[SEP_PEAK * SEP_PEAK * SEP_PEAK * SEP_PEAK * SEP_PEAK];
  int64_t calls, repeats;
} separable;

static int separable_eval(void *user, const int s[CONFIG_NCOMP], double *t, double *e, enpu_err *err) {
  static const double a[CONFIG_NCOMP] = {50, 20, 30, 40, 5};
  static const double k[CONFIG_NCOMP] = {0.02, 0.05, 0.01, 0.03, 0.04};
  separable *sp = user;
  int idx = 0;
  double tt = 0, ee = 0;
  for (int c = 0; c < CONFIG_NCOMP; c++) {
    idx = idx * SEP_PEAK + s[c] - 1;
    tt += a[c] / s[c];
    ee += k[c] * a[c] * s[c];
  }
  if (sp->seen[idx]++) sp->repeats++;
  sp->calls++;
  *t = tt;
  *e = 2.0 * tt + ee;
  return 0;
}

static void test_algorithm1_separable_memo(void **state) {
  search_memo *memo;
  enpu_err err = {0};
  assert_int_equal(search_memo_create(&memo, &err), 0);
  search_domains dom;
  assert_int_equal(search_domains_enpu(&dom, 5, SEP_PEAK, SEARCH_OP_GREEDY, &err), 0);
  separable *sp = calloc(1, sizeof *sp);
  void *users[1] = {sp};
  search_pareto p;
  assert_int_equal(search_op_pareto(memo, &dom, separable_eval, users, 1, &p, &err), 0);
  assert_int_equal(sp->repeats, 0);
  assert_int_equal(p.evals, sp->calls);
  /* Each step raises 1..5 of the 5·(S-1) unit raises needed to reach all-peak. */
  assert_true(p.steps >= SEP_PEAK - 1 && p.steps <= 5 * (SEP_PEAK - 1));
  assert_true(p.evals <= 2 + p.steps * 31);
  for (int c = 0; c < CONFIG_NCOMP; c++) assert_int_equal(p.points[0].state[c], SEP_PEAK);
  for (int i = 1; i < p.count; i++) {
    assert_true(p.points[i].time_ns > p.points[i - 1].time_ns);
    assert_true(p.points[i].energy_nj < p.points[i - 1].energy_nj);
  }
  /* A second operator through the same memo starts from scratch. */
  memset(sp, 0, sizeof *sp);
  search_pareto p2;
  assert_int_equal(search_op_pareto(memo, &dom, separable_eval, users, 1, &p2, &err), 0);
  assert_int_equal(p2.evals, p.evals);
  assert_int_equal(sp->calls, p.evals);
  search_pareto_free(&p);
  search_pareto_free(&p2);
  free(sp);
  search_memo_free(memo);
}

/* Coarse hashed values: many exact ties in time and energy. */
static int hashed_eval(void *user, const int s[CONFIG_NCOMP], double *t, double *e, enpu_err *err) {
  uint64_t h = 1469598103934665603ull;
  for (int c = 0; c < CONFIG_NCOMP; c++) h = (h ^ (uint64_t)s[c]) * 1099511628211ull;
  h ^= h >> 29;
  *t = 1.0 + (double)(h % 23);
  *e = 1.0 + (double)((h >> 20) % 19);
  return 0;
}

static int lex_less(const int *a, const int *b) {
  for (int c = 0; c < CONFIG_NCOMP; c++)
    if (a[c] != b[c]) return a[c] < b[c];
  return 0;
}

static void test_exhaustive_pareto_filter(void **state) {
  enum { PEAK = 9, N = PEAK * PEAK };
  search_domains dom = {2, {0, 1, -1, -1, -1}, PEAK, SEARCH_OP_EXHAUSTIVE, 0};
  search_point all[N];
  for (int i = 0; i < N; i++) {
    const int st[CONFIG_NCOMP] = {i % PEAK + 1, i / PEAK + 1, PEAK, PEAK, PEAK};
    memcpy(all[i].state, st, sizeof st);
    hashed_eval(NULL, st, &all[i].time_ns, &all[i].energy_nj, NULL);
  }
  /* Brute force: p survives unless some q is no slower and no dearer and either strictly
   * better somewhere or, on an exact tie, lexicographically smaller. */
  int keep[N], nkeep = 0;
  for (int i = 0; i < N; i++) {
    int dominated = 0;
    for (int j = 0; j < N && !dominated; j++) {
      if (i == j) continue;
      const search_point *p = &all[i], *q = &all[j];
      if (q->time_ns <= p->time_ns && q->energy_nj <= p->energy_nj &&
          (q->time_ns < p->time_ns || q->energy_nj < p->energy_nj || lex_less(q->state, p->state)))
        dominated = 1;
    }
    if (!dominated) keep[nkeep++] = i;
  }
  search_memo *memo;
  enpu_err err = {0};
  assert_int_equal(search_memo_create(&memo, &err), 0);
  void *users[3] = {NULL, NULL, NULL};
  search_pareto p1, p3;
  assert_int_equal(search_op_pareto(memo, &dom, hashed_eval, users, 1, &p1, &err), 0);
  assert_int_equal(search_op_pareto(memo, &dom, hashed_eval, users, 3, &p3, &err), 0);
  assert_int_equal(p1.evals, N);
  assert_int_equal(p3.evals, N);
  assert_int_equal(p1.count, nkeep);
  assert_int_equal(p3.count, nkeep);
  for (int i = 0; i < nkeep; i++) { /* fields, not bytes: search_point has padding */
    assert_memory_equal(p1.points[i].state, p3.points[i].state, sizeof p1.points[i].state);
    assert_true(p1.points[i].time_ns == p3.points[i].time_ns);
    assert_true(p1.points[i].energy_nj == p3.points[i].energy_nj);
  }
  for (int k = 0; k < nkeep; k++) { /* every kept point appears in the set */
    int found = 0;
    for (int i = 0; i < p1.count; i++)
      found |= !memcmp(p1.points[i].state, all[keep[k]].state, sizeof all[0].state);
    assert_true(found);
  }
  search_pareto_free(&p1);
  search_pareto_free(&p3);
  /* dvfs-c: one domain, 34-point sweep. */
  search_domains dc;
  assert_int_equal(search_domains_dvfs_c(&dc, 34, &err), 0);
  assert_int_equal(search_op_pareto(memo, &dc, hashed_eval, users, 1, &p1, &err), 0);
  assert_int_equal(p1.evals, 34);
  for (int i = 0; i < p1.count; i++) {
    assert_int_equal(p1.points[i].state[CONFIG_SA], p1.points[i].state[CONFIG_SRAM]);
    assert_int_equal(p1.points[i].state[CONFIG_HBM], 34);
  }
  search_pareto_free(&p1);
  /* nodvfs: the single all-peak plan. */
  assert_int_equal(search_domains_nodvfs(&dc, 34, &err), 0);
  assert_int_equal(search_op_pareto(memo, &dc, hashed_eval, users, 1, &p1, &err), 0);
  assert_int_equal(p1.evals, 1);
  assert_int_equal(p1.count, 1);
  search_pareto_free(&p1);
  search_memo_free(memo);
}

static int failing_eval(void *user, const int s[CONFIG_NCOMP], double *t, double *e, enpu_err *err) {
  return enpu_errorf(err, ENPU_ERR_RANGE, "synthetic failure");
}

static void test_eval_error(void **state) {
  search_memo *memo;
  enpu_err err = {0};
  assert_int_equal(search_memo_create(&memo, &err), 0);
  search_domains dom;
  assert_int_equal(search_domains_enpu(&dom, 5, 34, SEARCH_OP_GREEDY, &err), 0);
  void *users[2] = {NULL, NULL};
  search_pareto p;
  assert_int_equal(search_op_pareto(memo, &dom, failing_eval, users, 1, &p, &err), ENPU_ERR_RANGE);
  assert_null(p.points);
  dom.method = SEARCH_OP_EXHAUSTIVE;
  dom.peak_state = 3;
  assert_int_equal(search_op_pareto(memo, &dom, failing_eval, users, 2, &p, &err), ENPU_ERR_RANGE);
  assert_non_null(strstr(err.msg, "synthetic"));
  search_memo_free(memo);
}

/* ---------------------------------------------------------------------------------
 * Request level against brute force */

static uint64_t rng_next(uint64_t *s) {
  *s ^= *s << 13, *s ^= *s >> 7, *s ^= *s << 17;
  return *s;
}
static double rng_unit(uint64_t *s) { return (double)(rng_next(s) >> 11) / 9007199254740992.0; }

enum { WOPS = 3, WMAXP = 5 };
typedef struct {
  search_point pts[WOPS][WMAXP];
  search_req_op ops[WOPS];
  int inst_op[8]; /* op of each instance */
  int ninst;
} wproblem;

/* Random Pareto sets: random points filtered by brute force, sorted by time. */
static void wproblem_make(wproblem *w, uint64_t *rng) {
  static const int64_t mult[WOPS] = {1, 2, 2};
  w->ninst = 0;
  for (int i = 0; i < WOPS; i++) {
    search_point raw[8];
    for (int k = 0; k < 8; k++) {
      raw[k] = (search_point){{0}, 1 + 9 * rng_unit(rng), 1 + 9 * rng_unit(rng)};
      raw[k].state[0] = k;
    }
    int n = 0;
    for (int k = 0; k < 8; k++) {
      int dom = 0;
      for (int j = 0; j < 8; j++)
        dom |= j != k && raw[j].time_ns <= raw[k].time_ns && raw[j].energy_nj <= raw[k].energy_nj;
      if (!dom && n < WMAXP) w->pts[i][n++] = raw[k];
    }
    for (int a = 0; a < n; a++) /* insertion sort by time */
      for (int b = a; b > 0 && w->pts[i][b].time_ns < w->pts[i][b - 1].time_ns; b--) {
        search_point tmp = w->pts[i][b];
        w->pts[i][b] = w->pts[i][b - 1], w->pts[i][b - 1] = tmp;
      }
    w->ops[i] = (search_req_op){w->pts[i], n, mult[i]};
    for (int64_t r = 0; r < mult[i]; r++) w->inst_op[w->ninst++] = i;
  }
}

/* Minimum energy over every choice of one point per instance with time <= budget. */
static double brute_opt(const wproblem *w, double budget) {
  int choice[8] = {0};
  double best = INFINITY;
  for (;;) {
    double t = 0, e = 0;
    for (int x = 0; x < w->ninst; x++) {
      const search_point *p = &w->pts[w->inst_op[x]][choice[x]];
      t += p->time_ns, e += p->energy_nj;
    }
    if (t <= budget && e < best) best = e;
    int x = 0;
    while (x < w->ninst && ++choice[x] == w->ops[w->inst_op[x]].count) choice[x++] = 0;
    if (x == w->ninst) break;
  }
  return best;
}

static void test_walk_brute_force(void **state) {
  uint64_t rng = 0x9E3779B97F4A7C15ull;
  enpu_err err = {0};
  for (int trial = 0; trial < 40; trial++) {
    wproblem w;
    wproblem_make(&w, &rng);
    search_walk *walk;
    assert_int_equal(search_walk_build(w.ops, WOPS, INFINITY, &walk, &err), 0);
    const double t0 = search_walk_start_time_ns(walk);
    int pos[8];
    /* At every instance boundary the walk is optimal. */
    double tprev = t0;
    for (int s = 0; s < search_walk_step_count(walk); s++) {
      const search_walk_step *st = search_walk_step_at(walk, s);
      assert_true(st->dtime_ns > 0 && st->denergy_nj < 0);
      for (int64_t c = 0; c <= st->count; c++) {
        const double budget = (tprev + (double)c * st->dtime_ns) * (1 + 1e-12);
        search_prefix pf;
        assert_int_equal(search_walk_prefix(walk, budget, &pf, &err), 0);
        assert_int_equal(pf.moves, st->moves_before + c);
        const double opt = brute_opt(&w, budget);
        assert_true(fabs(pf.energy_nj - opt) < 1e-9 * opt);
        assert_true(pf.lower_bound_nj <= opt + 1e-9 * opt);
        /* The positions of the prefix add up to its time and energy. */
        assert_int_equal(search_walk_positions(walk, pf.moves, pos, &err), 0);
        double t = 0, e = 0;
        for (int x = 0; x < w.ninst; x++)
          t += w.pts[w.inst_op[x]][pos[x]].time_ns, e += w.pts[w.inst_op[x]][pos[x]].energy_nj;
        assert_true(fabs(t - pf.time_ns) < 1e-9 * t && fabs(e - pf.energy_nj) < 1e-9 * e);
      }
      tprev = st->time_ns;
    }
    /* Any budget: prefix feasible, bound below the optimum, plain greedy feasible. */
    for (int k = 0; k < 30; k++) {
      const double budget = t0 + rng_unit(&rng) * (tprev - t0) * 1.2;
      const double opt = brute_opt(&w, budget);
      search_prefix pf;
      assert_int_equal(search_walk_prefix(walk, budget, &pf, &err), 0);
      assert_true(pf.time_ns <= budget);
      assert_true(pf.energy_nj >= opt - 1e-9 * opt);
      assert_true(pf.lower_bound_nj <= opt + 1e-9 * opt);
      search_walk *g;
      assert_int_equal(search_greedy_build(w.ops, WOPS, budget, &g, &err), 0);
      const int ng = search_walk_step_count(g);
      const double gt = ng ? search_walk_step_at(g, ng - 1)->time_ns : t0;
      const double ge = ng ? search_walk_step_at(g, ng - 1)->energy_nj : search_walk_start_energy_nj(g);
      assert_true(gt <= budget);
      assert_true(ge >= opt - 1e-9 * opt);
      search_walk_free(g);
    }
    search_prefix pf;
    assert_int_equal(search_walk_prefix(walk, t0 * 0.5, &pf, &err), ENPU_ERR_INFEASIBLE);
    search_walk_free(walk);
  }
}

static void test_walk_cap_and_groups(void **state) {
  /* One op, three hull points, 10 instances: two counted steps of 10. */
  const search_point pts[3] = {{{0}, 1.0, 10.0}, {{0}, 2.0, 7.0}, {{0}, 4.0, 5.0}};
  const search_req_op op = {pts, 3, 10};
  enpu_err err = {0};
  search_walk *w;
  assert_int_equal(search_walk_build(&op, 1, INFINITY, &w, &err), 0);
  assert_int_equal(search_walk_step_count(w), 2);
  assert_int_equal(search_walk_step_at(w, 0)->count, 10);
  assert_int_equal(search_walk_moves(w), 20);
  search_prefix pf; /* budget 13.5: 3 instances moved, half of the 4th in the bound */
  assert_int_equal(search_walk_prefix(w, 13.5, &pf, &err), 0);
  assert_int_equal(pf.moves, 3);
  assert_true(fabs(pf.energy_nj - (100.0 - 9.0)) < 1e-12);
  assert_true(fabs(pf.lower_bound_nj - (100.0 - 10.5)) < 1e-12);
  search_walk_free(w);
  /* Capped at 12 ns: the first step (to 20 ns) is recorded, nothing after it. */
  assert_int_equal(search_walk_build(&op, 1, 12.0, &w, &err), 0);
  assert_int_equal(search_walk_step_count(w), 1);
  assert_int_equal(search_walk_prefix(w, 25.0, &pf, &err), ENPU_ERR_RANGE);
  assert_int_equal(search_walk_prefix(w, 20.0, &pf, &err), 0);
  search_walk_free(w);
  /* A collinear middle point is not a hull vertex. */
  const search_point line[3] = {{{0}, 1.0, 10.0}, {{0}, 2.0, 8.0}, {{0}, 3.0, 6.0}};
  const search_req_op lop = {line, 3, 1};
  assert_int_equal(search_walk_build(&lop, 1, INFINITY, &w, &err), 0);
  assert_int_equal(search_walk_step_count(w), 1);
  assert_int_equal(search_walk_step_at(w, 0)->to, 2);
  search_walk_free(w);
  const search_point bad[2] = {{{0}, 2.0, 10.0}, {{0}, 1.0, 8.0}};
  const search_req_op bop = {bad, 2, 1};
  assert_int_equal(search_walk_build(&bop, 1, INFINITY, &w, &err), ENPU_ERR_INVALID);
}

/* ---------------------------------------------------------------------------------
 * Invariants and vf.set */

static void test_invariants(void **state) {
  search_slack_plan p[2] = {
      {.slack = 0, .budget_ns = 100, .time_ns = 99, .energy_nj = 50, .lower_bound_nj = 45},
      {.slack = 0.1, .budget_ns = 110, .time_ns = 108, .energy_nj = 48, .lower_bound_nj = 44}};
  enpu_err err = {0};
  assert_int_equal(search_check_invariants(p, 2, 60, &err), 0);
  search_slack_plan q[2];
  memcpy(q, p, sizeof q);
  q[1].time_ns = 111; /* over budget */
  assert_int_equal(search_check_invariants(q, 2, 60, &err), ENPU_ERR_INTERNAL);
  memcpy(q, p, sizeof q);
  q[1].energy_nj = 51, q[1].lower_bound_nj = 40; /* energy grows with slack */
  assert_int_equal(search_check_invariants(q, 2, 60, &err), ENPU_ERR_INTERNAL);
  assert_int_equal(search_check_invariants(p, 2, 49, &err), ENPU_ERR_INTERNAL); /* > peak */
  memcpy(q, p, sizeof q);
  q[0].lower_bound_nj = 50.1; /* bound above energy */
  assert_int_equal(search_check_invariants(q, 2, 60, &err), ENPU_ERR_INTERNAL);
  assert_non_null(strstr(err.msg, "lower bound"));
}

static void test_vfset_round_trip(void **state) {
  uint64_t rng = 12345;
  enpu_err err = {0};
  for (int k = 0; k < 1000; k++) {
    int s[SEARCH_VF_NUNIT], back[SEARCH_VF_NUNIT];
    for (int u = 0; u < SEARCH_VF_NUNIT; u++) s[u] = (int)(rng_next(&rng) % 256);
    const unsigned mask = (unsigned)(rng_next(&rng) % 64);
    uint64_t word;
    unsigned m2;
    assert_int_equal(search_vfset_encode(s, mask, &word, &err), 0);
    assert_true(word >> 54 == 0);
    assert_int_equal(search_vfset_decode(word, back, &m2, &err), 0);
    assert_int_equal(m2, mask);
    for (int u = 0; u < SEARCH_VF_NUNIT; u++) assert_int_equal(back[u], mask >> u & 1 ? s[u] : -1);
  }
  /* Layout: FE in the lowest byte, ICI in bits 40..47, mask from bit 48. */
  const int s[SEARCH_VF_NUNIT] = {34, 1, 2, 3, 4, 5};
  uint64_t word;
  unsigned mask;
  int back[SEARCH_VF_NUNIT];
  assert_int_equal(search_vfset_encode(s, SEARCH_VF_MASK_ALL, &word, &err), 0);
  assert_true(word == (0x3Full << 48 | 5ull << 40 | 4ull << 32 | 3ull << 24 | 2ull << 16 | 1ull << 8 | 34ull));
  assert_int_equal(search_vfset_decode(word | 1ull << 60, back, &mask, &err), ENPU_ERR_FORMAT);
  assert_int_equal(search_vfset_decode(1ull << 48 | 7ull << 8, back, &mask, &err), ENPU_ERR_FORMAT);
  const int big[SEARCH_VF_NUNIT] = {256, 0, 0, 0, 0, 0};
  assert_int_equal(search_vfset_encode(big, 1, &word, &err), ENPU_ERR_RANGE);
  assert_int_equal(search_vfset_encode(s, 0x40, &word, &err), ENPU_ERR_RANGE);
}

static void test_vfset_stream(void **state) {
  enum { N = 200 };
  int plan[N][CONFIG_NCOMP];
  uint64_t rng = 777;
  for (int i = 0; i < N; i++)
    for (int c = 0; c < CONFIG_NCOMP; c++)
      plan[i][c] = i && rng_next(&rng) % 3 ? plan[i - 1][c] : 1 + (int)(rng_next(&rng) % 34);
  search_vfset_cmd cmds[N];
  int64_t n;
  enpu_err err = {0};
  assert_int_equal(search_vfset_stream((const int(*)[CONFIG_NCOMP])plan, N, cmds, &n, &err), 0);
  assert_true(n >= 1 && n <= N);
  assert_int_equal(cmds[0].instance, 0);
  assert_int_equal(cmds[0].word >> 48, SEARCH_VF_MASK_ALL);
  /* Replaying the decoded stream reproduces every instance's states, FE = max core. */
  int cur[SEARCH_VF_NUNIT] = {0};
  int64_t next = 0;
  for (int i = 0; i < N; i++) {
    if (next < n && cmds[next].instance == i) {
      int st[SEARCH_VF_NUNIT];
      unsigned mask;
      assert_int_equal(search_vfset_decode(cmds[next].word, st, &mask, &err), 0);
      assert_true(mask != 0);
      for (int u = 0; u < SEARCH_VF_NUNIT; u++)
        if (mask >> u & 1) cur[u] = st[u];
      next++;
    }
    for (int c = 0; c < CONFIG_NCOMP; c++) assert_int_equal(cur[1 + c], plan[i][c]);
    int fe = plan[i][0];
    if (plan[i][1] > fe) fe = plan[i][1];
    if (plan[i][2] > fe) fe = plan[i][2];
    assert_int_equal(cur[SEARCH_VF_FE], fe);
  }
  assert_int_equal(next, n);
  const int(*cplan)[CONFIG_NCOMP] = (const int(*)[CONFIG_NCOMP])plan;
  assert_int_equal(search_vfset_check(cplan, N, cmds, n, &err), 0);
  if (n > 1) { /* drop a command: the replay no longer matches */
    assert_int_equal(search_vfset_check(cplan, N, cmds, n - 1, &err), ENPU_ERR_FORMAT);
    /* SA set to a state the plan does not have there (x % 34 + 1 != x for x in 1..34). */
    const uint64_t sa = (uint64_t)(plan[cmds[1].instance][CONFIG_SA] % 34 + 1);
    cmds[1].word = (cmds[1].word & ~(0xFFull << 8)) | 1ull << 49 | sa << 8;
    assert_int_equal(search_vfset_check(cplan, N, cmds, n, &err), ENPU_ERR_FORMAT);
  }
}

/* ---------------------------------------------------------------------------------
 * The real cost model: Llama3-70B, enpu-all */

typedef struct {
  cost_ctx *cost;
  const graph_op *op;
  const cost_pipeline *pipe;
} real_user;

static int real_eval(void *user, const int s[CONFIG_NCOMP], double *t, double *e, enpu_err *err) {
  real_user *u = user;
  cost_plan plan;
  memcpy(plan.state, s, sizeof plan.state);
  cost_result r;
  ENPU_FORWARD(cost_eval(u->cost, u->op, &plan, u->pipe, &r, err));
  *t = r.time_ns, *e = r.energy_total_nj;
  return 0;
}

/* Ops that stand for several back-to-back instances (the cold experts of an MoE layer):
 * every plan re-simulated from its states (search_plan_simulate, the validator's path)
 * gives the time and energy the search reported, so the incremental step-back of the
 * finalisation and the execution order agree with a whole re-timing. Small size: the
 * first 5 of the 61 layers (3 dense, 2 MoE: the counted ops too). */
static void test_counted_ops_plans_resimulate(void **state) {
  (void)state;
  enpu_err err = {0};
  config_job *job;
  if (config_job_load(ENPU_SOURCE_DIR "/jobs/deepseek-v3-671b.json", &job, &err) < 0) fail_msg("%s", err.msg);
  graph *g;
  assert_int_equal(graph_build_depth(job, CONFIG_DECODE, 8, 1024, case_layers(job, 5), &g, &err), 0);
  int64_t instances = 0, counted = 0;
  for (int i = 0; i < graph_op_count(g); i++) {
    instances += graph_op_at(g, i)->multiplicity;
    counted += graph_op_at(g, i)->count > 1;
  }
  assert_true(counted >= 4); /* the cold experts' projections */
  cost_ctx *cost;
  search_ctx *sx;
  assert_int_equal(cost_ctx_create(&job->chip, &cost, &err), 0);
  assert_int_equal(search_ctx_create(&job->chip, &sx, &err), 0);
  const double slacks[3] = {0, 0.02, 0.05};
  int(*walk)[CONFIG_NCOMP] = calloc((size_t)instances, sizeof *walk);
  assert_non_null(walk);
  /* per-op units, epochs over counted ops, and gated plans */
  static const char *const names[] = {"enpu-all", "enpu-ms", "pg+enpu-all"};
  for (int n = 0; n < 3; n++) {
    config_policy_spec spec;
    assert_int_equal(config_policy_spec_parse(names[n], &spec), 0);
    search_options opt;
    search_options_for_job(&opt, job, &spec);
    search_bucket_result res;
    if (search_compile_bucket(sx, cost, g, spec.base, slacks, 3, &opt, &res, &err) < 0)
      fail_msg("%s: %s", names[n], err.msg);
    for (int k = 0; k < res.nplans; k++) {
      const search_slack_plan *pl = &res.plans[k];
      assert_int_equal(pl->instances, instances);
      search_states_by_walk(res.units, (const int(*)[CONFIG_NCOMP])pl->state, walk);
      search_plan_totals tot;
      assert_int_equal(search_plan_simulate(sx, cost, g, spec.base, &opt, (const int(*)[CONFIG_NCOMP])walk,
                                            pl->gated, &tot, &err),
                       0);
      if (fabs(tot.time_ns - pl->time_ns) > 1e-9 * tot.time_ns ||
          fabs(tot.energy_nj - pl->energy_nj) > 1e-9 * tot.energy_nj)
        fail_msg("%s slack %g: re-simulated %.6f ns %.6f nJ, plan %.6f ns %.6f nJ", names[n], pl->slack,
                 tot.time_ns, tot.energy_nj, pl->time_ns, pl->energy_nj);
    }
    search_bucket_result_free(&res);
  }
  free(walk);
  search_ctx_free(sx);
  cost_ctx_free(cost);
  graph_free(g);
  config_job_free(job);
}

static void test_real_op_enpu_all(void **state) {
  enpu_err err = {0};
  config_job *job;
  if (config_job_load(JOB_PATH, &job, &err) < 0) fail_msg("%s", err.msg);
  graph *g;
  assert_int_equal(graph_build(job, CONFIG_PREFILL, 1, 4096, &g, &err), 0);
  cost_ctx *cost;
  assert_int_equal(cost_ctx_create(&job->chip, &cost, &err), 0);
  power_model *full, *fixed;
  assert_int_equal(power_model_create(&job->chip, POWER_HBM_FULL, POWER_REG_DVFS, &full, &err), 0);
  assert_int_equal(power_model_create(&job->chip, POWER_HBM_CTRL_ONLY, POWER_REG_FIXED, &fixed, &err), 0);
  cost_pipeline enpu, nodvfs;
  assert_int_equal(cost_pipeline_enpu(&enpu, 5, full, &err), 0);
  cost_pipeline_nodvfs(&nodvfs, fixed);
  const graph_op *op = NULL;
  for (int i = 0; i < graph_op_count(g) && !op; i++)
    if (graph_op_at(g, i)->kind == GRAPH_MATMUL && graph_op_at(g, i)->multiplicity > 1) op = graph_op_at(g, i);
  assert_non_null(op);
  search_memo *memo;
  assert_int_equal(search_memo_create(&memo, &err), 0);
  search_domains dom;
  assert_int_equal(search_domains_enpu(&dom, 5, job->chip.freq_states, SEARCH_OP_GREEDY, &err), 0);
  real_user u = {cost, op, &enpu};
  void *users[1] = {&u};
  search_pareto p;
  if (search_op_pareto(memo, &dom, real_eval, users, 1, &p, &err) < 0) fail_msg("%s", err.msg);
  assert_true(p.count >= 1 && p.evals > 1);
  assert_true(p.evals <= 5 * 34 * 31 + 2); /* the paper's worst case, + start and peak */
  const int pk = job->chip.freq_states;
  const int peak[CONFIG_NCOMP] = {pk, pk, pk, pk, pk};
  double t_peak = 0, e_peak = 0, t_nd = 0, e_nd = 0;
  assert_int_equal(real_eval(&u, peak, &t_peak, &e_peak, &err), 0);
  real_user un = {cost, op, &nodvfs};
  assert_int_equal(real_eval(&un, peak, &t_nd, &e_nd, &err), 0);
  assert_true(p.points[0].time_ns <= t_peak && p.points[0].energy_nj <= e_peak);
  const search_req_op rop = {p.points, p.count, 1};
  search_walk *w;
  assert_int_equal(search_walk_build(&rop, 1, INFINITY, &w, &err), 0);
  double savings[2];
  const double slack[2] = {0, 0.10};
  for (int k = 0; k < 2; k++) {
    search_prefix pf;
    assert_int_equal(search_walk_prefix(w, fmax(t_nd, t_peak) + slack[k] * t_nd, &pf, &err), 0);
    savings[k] = 1 - pf.energy_nj / e_nd;
  }
  print_message("op %s: %d Pareto points, %lld evals; savings %.1f%% at 0%%, %.1f%% at 10%%\n", op->name, p.count,
                (long long)p.evals, 100 * savings[0], 100 * savings[1]);
  assert_true(savings[1] >= savings[0]);
  search_walk_free(w);
  search_pareto_free(&p);

  /* The whole bucket through search_compile_bucket (decode, small): invariants hold. */
  graph *gd;
  assert_int_equal(graph_build(job, CONFIG_DECODE, 1, 1024, &gd, &err), 0);
  search_ctx *sx;
  assert_int_equal(search_ctx_create(&job->chip, &sx, &err), 0);
  const double slacks[3] = {0, 0.05, 0.10};
  const config_policy pols[4] = {CONFIG_POLICY_NODVFS, CONFIG_POLICY_DVFS_C, CONFIG_POLICY_ENPU_C,
                                 CONFIG_POLICY_ENPU_ALL};
  for (int k = 0; k < 4; k++) {
    search_bucket_result res;
    if (search_compile_bucket(sx, cost, gd, pols[k], slacks, 3, NULL, &res, &err) < 0) fail_msg("%s", err.msg);
    assert_int_equal(res.nplans, 3);
    for (int j = 0; j < 3; j++) {
      const search_slack_plan *pl = &res.plans[j];
      assert_true(pl->time_ns <= pl->budget_ns * (1 + 1e-9)); /* the search's fit tolerance */
      assert_true(pl->lower_bound_nj <= pl->energy_nj * (1 + 1e-9));
      if (pols[k] == CONFIG_POLICY_NODVFS) assert_true(fabs(pl->savings_vs_nodvfs) < 1e-12);
    }
    search_bucket_result_free(&res);
  }
  search_ctx_free(sx);
  graph_free(gd);
  search_memo_free(memo);
  power_model_free(full);
  power_model_free(fixed);
  cost_ctx_free(cost);
  graph_free(g);
  config_job_free(job);
}

/* ---------------------------------------------------------------------------------
 * Exact vs approximate Pareto sets, GA */

static void test_pareto_gap(void **state) {
  search_point ex[3] = {{{0}, 1, 10}, {{0}, 2, 6}, {{0}, 4, 3}};
  search_point ap[3] = {{{0}, 1, 11}, {{0}, 3, 6}, {{0}, 4, 3}};
  const search_pareto e = {ex, 3, 0, 0}, a = {ap, 3, 0, 0};
  double gap[3];
  search_gap sum;
  enpu_err err = {0};
  assert_int_equal(search_pareto_gap(&e, &a, gap, &sum, &err), 0);
  assert_true(fabs(gap[0] - 0.1) < 1e-12); /* 11 vs 10 at t = 1 */
  assert_true(fabs(gap[1]) < 1e-12);       /* 6 at t = 3 vs the exact 6 at t = 2 */
  assert_true(fabs(gap[2]) < 1e-12);
  assert_int_equal(sum.worst, 0);
  assert_true(fabs(sum.max_gap - 0.1) < 1e-12 && fabs(sum.mean_gap - 0.1 / 3) < 1e-12);
  /* Reference (4.4, 12.1): exact 2.1 + 12.2 + 3.64, approximate 2.2 + 6.1 + 3.64. */
  assert_true(fabs(sum.hv_ratio - 11.94 / 17.94) < 1e-9);
  assert_int_equal(search_pareto_gap(&e, &e, NULL, &sum, &err), 0);
  assert_true(sum.max_gap == 0 && fabs(sum.hv_ratio - 1) < 1e-12);
  /* An "approximate" point faster than every exact one: the exact set is not exact. */
  ap[0].time_ns = 0.5;
  assert_int_equal(search_pareto_gap(&e, &a, NULL, &sum, &err), ENPU_ERR_INVALID);
}

/* The trim pass on a real op where Algorithm 1 leaves a domain high for nothing: the
 * prefill RoPE, where the ascent raises a unit early that the faster plans no longer
 * need (up to about 4 % of their energy; `enpu op ... --exhaustive` shows the gap). The
 * fastest point's own descent (search_op.c) already gives it the trimmed energy; the
 * trim pass improves the slower points. */
static void test_trim(void **state) {
  enpu_err err = {0};
  config_job *job;
  if (config_job_load(JOB_PATH, &job, &err) < 0) fail_msg("%s", err.msg);
  graph *g;
  assert_int_equal(graph_build(job, CONFIG_PREFILL, 1, 4096, &g, &err), 0);
  const graph_op *op = NULL;
  for (int i = 0; i < graph_op_count(g) && !op; i++)
    if (!strcmp(graph_op_at(g, i)->name, "attn.rope")) op = graph_op_at(g, i);
  assert_non_null(op);
  cost_ctx *cost;
  assert_int_equal(cost_ctx_create(&job->chip, &cost, &err), 0);
  search_ctx *sx;
  assert_int_equal(search_ctx_create(&job->chip, &sx, &err), 0);
  search_options o;
  search_options_default(&o);
  o.ideal_method = SEARCH_OP_GREEDY;
  search_pareto plain, trimmed;
  assert_int_equal(search_op_compile(sx, cost, op, CONFIG_POLICY_IDEAL, &o, &plain, &err), 0);
  o.op_trim = 1;
  assert_int_equal(search_op_compile(sx, cost, op, CONFIG_POLICY_IDEAL, &o, &trimmed, &err), 0);
  assert_true(trimmed.evals > plain.evals);
  assert_true(trimmed.points[0].time_ns <= plain.points[0].time_ns);
  assert_true(fabs(trimmed.points[0].energy_nj - plain.points[0].energy_nj) <= 1e-9 * plain.points[0].energy_nj);
  for (int i = 0; i < plain.count; i++) {
    int covered = 0;
    for (int j = 0; j < trimmed.count && !covered; j++)
      covered = trimmed.points[j].time_ns <= plain.points[i].time_ns &&
                trimmed.points[j].energy_nj <= plain.points[i].energy_nj;
    assert_true(covered);
  }
  /* Against each other as "exact" and "approximate": the plain set is the worse one. */
  search_gap gp;
  assert_int_equal(search_pareto_gap(&trimmed, &plain, NULL, &gp, &err), 0);
  assert_true(gp.max_gap > 0.01 && gp.hv_ratio <= 1 + 1e-12);
  search_pareto_free(&plain);
  search_pareto_free(&trimmed);
  search_ctx_free(sx);
  cost_ctx_free(cost);
  graph_free(g);
  config_job_free(job);
}

/* The roofline with one planted plan off the diagonal: (19,21,20,20,20) runs as fast as
 * the diagonal's (20,...,20) for 0.5 nJ less (too little to dominate s = 19). Algorithm 1
 * walks the diagonal and never sees it (its candidates differ by at most one state);
 * single trim moves cannot reach it either (lowering one domain of a diagonal plan slows
 * it, and hand-overs need unequal states), but the pair move "SA down 1, VU up 1" can. */
static const int planted_state[CONFIG_NCOMP] = {19, 21, 20, 20, 20};

static int planted_eval(void *user, const int s[CONFIG_NCOMP], double *t, double *e, enpu_err *err) {
  ENPU_FORWARD(roofline_eval(user, s, t, e, err));
  const roofline *r = user;
  if (!memcmp(s, planted_state, sizeof planted_state)) /* the diagonal's s = 20, 0.5 nJ less */
    *t = r->a / 20, *e = r->p * *t + r->delta * 20 * CONFIG_NCOMP - 0.5;
  return 0;
}

static void test_trim_pair_moves(void **state) {
  search_memo *memo;
  enpu_err err = {0};
  assert_int_equal(search_memo_create(&memo, &err), 0);
  search_domains dom;
  assert_int_equal(search_domains_enpu(&dom, 5, 34, SEARCH_OP_GREEDY, &err), 0);
  search_pareto p[3];
  int64_t calls[3];
  for (int run = 0; run < 3; run++) {
    dom.trim = run > 0; /* run 2 repeats run 1: the result must not change */
    roofline r = {1000.0, 1.0, 0.8, 0};
    void *users[1] = {&r};
    assert_int_equal(search_op_pareto(memo, &dom, planted_eval, users, 1, &p[run], &err), 0);
    calls[run] = r.calls;
    assert_int_equal(p[run].evals, calls[run]); /* memoised: no plan evaluated twice */
  }
  /* Without the trim: the diagonal s = 34..16, s = 20 at index 14. */
  assert_int_equal(p[0].count, 19);
  for (int c = 0; c < CONFIG_NCOMP; c++) assert_int_equal(p[0].points[14].state[c], 20);
  /* With it: the planted plan replaces (20,...,20), nothing else changes. */
  assert_int_equal(p[1].count, 19);
  assert_memory_equal(p[1].points[14].state, planted_state, sizeof planted_state);
  assert_true(fabs(p[1].points[14].time_ns - 50.0) < 1e-12);
  assert_true(fabs(p[1].points[14].energy_nj - (p[0].points[14].energy_nj - 0.5)) < 1e-9);
  for (int i = 0; i < 19; i++)
    if (i != 14) assert_memory_equal(p[1].points[i].state, p[0].points[i].state, sizeof p[0].points[i].state);
  /* Bounded work: per Pareto point and accepted move (one here), at most 5 lowerings,
   * 20 hand-overs, 20 pair moves and 3 repair steps of 15 raises. */
  assert_true(calls[1] > calls[0]);
  assert_true(calls[1] - calls[0] <= (19 + 1) * (5 + 20 + 20 + 45));
  assert_int_equal(p[2].count, p[1].count);
  assert_int_equal(calls[2], calls[1]);
  assert_memory_equal(p[2].points, p[1].points, (size_t)p[1].count * sizeof *p[1].points);
  for (int run = 0; run < 3; run++) search_pareto_free(&p[run]);
  search_memo_free(memo);
}

/* Five ops of four Pareto points each (convex-ish, distinct rates), multiplicities 1..2. */
static void ga_ops(search_point pts[5][4], search_req_op ops[5]) {
  for (int i = 0; i < 5; i++) {
    for (int k = 0; k < 4; k++)
      pts[i][k] = (search_point){
          {0}, 10.0 + i + 3.0 * k + 0.1 * k * k * i, 100.0 - 7.0 * k * (i + 1) + 1.3 * k * k};
    ops[i] = (search_req_op){pts[i], 4, 1 + i % 2};
  }
}

static void test_ga(void **state) {
  search_point pts[5][4];
  search_req_op ops[5];
  ga_ops(pts, ops);
  double t_fast, e_fast;
  const int fast[5] = {0, 0, 0, 0, 0};
  search_ga_genome_cost(ops, 5, fast, &t_fast, &e_fast);
  const double budget = t_fast + 14.0;
  /* Brute force over the 4^5 genomes. */
  double best_e = INFINITY;
  for (int code = 0; code < 1024; code++) {
    int g[5];
    for (int i = 0, c = code; i < 5; i++, c /= 4) g[i] = c % 4;
    double t, e;
    search_ga_genome_cost(ops, 5, g, &t, &e);
    if (t <= budget && e < best_e) best_e = e;
  }
  const search_ga_params prm = {60, 40, 7};
  enpu_err err = {0};
  int a[5], b[5];
  int64_t ea, eb;
  assert_int_equal(search_ga_run(ops, 5, budget, &prm, NULL, a, &ea, &err), 0);
  assert_int_equal(search_ga_run(ops, 5, budget, &prm, NULL, b, &eb, &err), 0);
  assert_memory_equal(a, b, sizeof a); /* same seed, same plan */
  assert_int_equal(ea, eb);
  assert_int_equal(ea, 60 + 40 * 59);
  double t, e;
  search_ga_genome_cost(ops, 5, a, &t, &e);
  assert_true(t <= budget && e >= best_e - 1e-9);
  /* Warm start from a feasible but poor genome: never worse than it, even with no
   * generations at all, and with generations it reaches the optimum of this tiny space. */
  const int seed[5] = {1, 0, 0, 1, 0};
  double ts, es;
  search_ga_genome_cost(ops, 5, seed, &ts, &es);
  assert_true(ts <= budget);
  for (int gens = 0; gens <= 40; gens += 40) {
    const search_ga_params p2 = {60, gens, 99};
    assert_int_equal(search_ga_run(ops, 5, budget, &p2, seed, b, &eb, &err), 0);
    search_ga_genome_cost(ops, 5, b, &t, &e);
    assert_true(t <= budget && e <= es);
    if (gens) assert_true(fabs(e - best_e) < 1e-9);
  }
  /* Bad input. */
  const search_ga_params bad = {1, 10, 1};
  assert_int_equal(search_ga_run(ops, 5, budget, &bad, NULL, b, &eb, &err), ENPU_ERR_INVALID);
  const int wrong[5] = {0, 0, 4, 0, 0};
  assert_int_equal(search_ga_run(ops, 5, budget, &prm, wrong, b, &eb, &err), ENPU_ERR_INVALID);
}

/* A real bucket (the job's decode, batch 1, KV 1024) with its cost and search contexts. */
typedef struct {
  config_job *job;
  graph *g;
  cost_ctx *cost;
  search_ctx *sx;
} real_bucket;

static void real_bucket_open(real_bucket *b) {
  enpu_err err = {0};
  if (config_job_load(JOB_PATH, &b->job, &err) < 0) fail_msg("%s", err.msg);
  assert_int_equal(graph_build(b->job, CONFIG_DECODE, 1, 1024, &b->g, &err), 0);
  assert_int_equal(cost_ctx_create(&b->job->chip, &b->cost, &err), 0);
  assert_int_equal(search_ctx_create(&b->job->chip, &b->sx, &err), 0);
}

static void real_bucket_close(real_bucket *b) {
  search_ctx_free(b->sx);
  cost_ctx_free(b->cost);
  graph_free(b->g);
  config_job_free(b->job);
}

/* The GA and rail lifting on a real bucket: plans fit, invariants hold (checked inside),
 * and lifting never makes a slack's plan dearer. */
static void test_real_bucket_ga_lift(void **state) {
  enpu_err err = {0};
  real_bucket rb;
  real_bucket_open(&rb);
  const double slacks[3] = {0, 0.02, 0.10};
  search_options o;
  search_options_default(&o);
  assert_int_equal(o.ga.population, 1000);
  assert_int_equal(o.ga.generations, 500);
  o.ga = (search_ga_params){80, 30, 3};
  o.request = SEARCH_REQ_GA;
  search_bucket_result r1, r2, w0, w1;
  if (search_compile_bucket(rb.sx, rb.cost, rb.g, CONFIG_POLICY_DVFS_C, slacks, 3, &o, &r1, &err) < 0)
    fail_msg("%s", err.msg);
  assert_int_equal(search_compile_bucket(rb.sx, rb.cost, rb.g, CONFIG_POLICY_DVFS_C, slacks, 3, &o, &r2, &err), 0);
  int any_ga = 0;
  for (int k = 0; k < 3; k++) {
    assert_true(r1.plans[k].energy_nj == r2.plans[k].energy_nj); /* deterministic */
    assert_true(r1.plans[k].time_ns <= r1.plans[k].budget_ns);
    assert_true(r1.plans[k].request_evals >= 80 + 30 * 79);
    any_ga |= r1.plans[k].from_ga;
    search_vfset_cmd *cmds = calloc((size_t)r1.plans[k].instances, sizeof *cmds);
    int64_t n;
    const int(*st)[CONFIG_NCOMP] = (const int(*)[CONFIG_NCOMP])r1.plans[k].state;
    assert_int_equal(search_vfset_stream(st, r1.plans[k].instances, cmds, &n, &err), 0);
    assert_int_equal(search_vfset_check(st, r1.plans[k].instances, cmds, n, &err), 0);
    free(cmds);
  }
  assert_true(any_ga);
  search_bucket_result_free(&r1);
  search_bucket_result_free(&r2);
  search_options_default(&o);
  assert_int_equal(search_compile_bucket(rb.sx, rb.cost, rb.g, CONFIG_POLICY_ENPU_ALL, slacks, 3, &o, &w0, &err),
                   0);
  o.transition_aware = 1;
  if (search_compile_bucket(rb.sx, rb.cost, rb.g, CONFIG_POLICY_ENPU_ALL, slacks, 3, &o, &w1, &err) < 0)
    fail_msg("%s", err.msg);
  for (int k = 0; k < 3; k++) {
    assert_true(w1.plans[k].energy_nj <= w0.plans[k].energy_nj);
    assert_true(w1.plans[k].request_evals > w0.plans[k].request_evals); /* lifts were tried */
    if (!w1.plans[k].lifted_mask && !w1.plans[k].polish_moves)
      assert_true(w1.plans[k].energy_nj == w0.plans[k].energy_nj);
  }
  search_bucket_result_free(&w0);
  search_bucket_result_free(&w1);
  real_bucket_close(&rb);
}

/* ---------------------------------------------------------------------------------
 * Budget modes and the baselines' domains */

/* DVFS-C scales the compute domain only (§4.1): on a real bucket, in both budget modes
 * and with both request levels (its GA and the dvfs-c-walk variant), no plan moves HBM or
 * ICI off peak; at all-peak its HBM and ICI are priced exactly as NoDVFS's (the fixed
 * regulator), its SA through the DVFS IVR. */
static void test_dvfs_c_compute_only(void **state) {
  (void)state;
  enpu_err err = {0};
  real_bucket rb;
  real_bucket_open(&rb);
  const double slacks[3] = {0, 0.05, 0.30};
  const int peak = rb.job->chip.freq_states;
  const config_policy pols[2] = {CONFIG_POLICY_DVFS_C, CONFIG_POLICY_DVFS_C_WALK};
  for (int b = 0; b < CONFIG_NBUDGET; b++)
    for (int p = 0; p < 2; p++) {
      search_options o;
      search_options_default(&o);
      o.ga = (search_ga_params){60, 20, 5};
      o.budget = (config_budget)b;
      search_bucket_result r;
      if (search_compile_bucket(rb.sx, rb.cost, rb.g, pols[p], slacks, 3, &o, &r, &err) < 0)
        fail_msg("%s", err.msg);
      int scaled = 0;
      for (int k = 0; k < 3; k++)
        for (int64_t x = 0; x < r.plans[k].instances; x++) {
          assert_int_equal(r.plans[k].state[x][CONFIG_HBM], peak);
          assert_int_equal(r.plans[k].state[x][CONFIG_ICI], peak);
          scaled |= r.plans[k].state[x][CONFIG_SA] < peak;
        }
      assert_true(scaled); /* decode leaves the compute domain room */
      assert_int_equal(r.plans[0].from_ga, p == 0 && r.plans[0].energy_nj < r.policy_peak_energy_nj);
      search_bucket_result_free(&r);
    }
  const int top[CONFIG_NCOMP] = {peak, peak, peak, peak, peak};
  const graph_op *op = graph_op_at(rb.g, 2);
  cost_result rn, rd;
  assert_int_equal(search_op_breakdown(rb.sx, rb.cost, op, CONFIG_POLICY_NODVFS, NULL, top, &rn, &err), 0);
  assert_int_equal(search_op_breakdown(rb.sx, rb.cost, op, CONFIG_POLICY_DVFS_C, NULL, top, &rd, &err), 0);
  assert_true(rd.time_ns == rn.time_ns);
  assert_true(rd.energy_nj[CONFIG_HBM] == rn.energy_nj[CONFIG_HBM]);
  assert_true(rd.energy_nj[CONFIG_ICI] == rn.energy_nj[CONFIG_ICI]);
  assert_true(rd.energy_nj[CONFIG_SA] > rn.energy_nj[CONFIG_SA]); /* DVFS IVR < fixed η */
  real_bucket_close(&rb);
}

/* eNPU-C scales the HBM controller only (§4.1, §4.2): with the controller below its
 * top, its HBM energy is the controller's plus the I/O link at its top voltage plus the
 * DRAM core (power_energy of a ctrl-only model, by hand), where eNPU-All's I/O follows
 * the bandwidth down and costs less; at peak both agree. */
static void test_enpu_c_keeps_hbm_io(void **state) {
  (void)state;
  enpu_err err = {0};
  real_bucket rb;
  real_bucket_open(&rb);
  power_model *ctrl;
  assert_int_equal(power_model_create(&rb.job->chip, POWER_HBM_CTRL_ONLY, POWER_REG_DVFS, &ctrl, &err), 0);
  const graph_op *op = graph_op_at(rb.g, 2); /* the QKV projection: HBM-bound at batch 1 */
  const int peak = rb.job->chip.freq_states;
  for (int h = 12; h <= peak; h += peak - 12) {
    const int st[CONFIG_NCOMP] = {peak, peak, peak, h, peak};
    cost_result rc, ra;
    assert_int_equal(search_op_breakdown(rb.sx, rb.cost, op, CONFIG_POLICY_ENPU_C, NULL, st, &rc, &err), 0);
    assert_int_equal(search_op_breakdown(rb.sx, rb.cost, op, CONFIG_POLICY_ENPU_ALL, NULL, st, &ra, &err), 0);
    power_energy_nj e;
    assert_int_equal(power_energy(ctrl, CONFIG_HBM, h, rc.busy_ns[CONFIG_HBM], rc.time_ns, 1, &e, &err), 0);
    assert_true(fabs(rc.energy_nj[CONFIG_HBM] - e.total_nj) <= 1e-9 * e.total_nj);
    if (h < peak) assert_true(ra.energy_nj[CONFIG_HBM] < rc.energy_nj[CONFIG_HBM]);
    else assert_true(ra.energy_nj[CONFIG_HBM] == rc.energy_nj[CONFIG_HBM]);
  }
  power_model_free(ctrl);
  real_bucket_close(&rb);
}

/* Synthetic operators for finalisation: op i's point k has states (k+1, ...), a time that
 * is its critical-path time too, and no transition cost; `overhead` adds that fraction
 * of each op's time to its run time (what crossings and transitions would). */
typedef struct {
  const request *rq;
  double overhead;
} synth_price;

static int synth_price_fn(void *user, const int (*state)[CONFIG_NCOMP], int64_t x, unsigned mode, req_line *out,
                          enpu_err *err) {
  (void)err, (void)mode;
  memset(out, 0, sizeof *out);
  const synth_price *sp = user;
  const search_pareto *set = sp->rq->sets[sp->rq->op_of[x]];
  const search_point *p = &set->points[state[x][CONFIG_SA] - 1];
  out->cp_ns = p->time_ns;
  out->time_ns = p->time_ns * (1 + sp->overhead);
  out->energy_nj = p->energy_nj;
  return 0;
}

/* paper and strict differ only by the overhead: with transitions, crossings and fill
 * free (the op's time is its critical path), the two modes take identical plans at the
 * same budget; with an overhead, strict steps back along the walk to fit its time and
 * paper keeps the prefix, reporting the overhead. */
static void test_paper_equals_strict_without_overhead(void **state) {
  (void)state;
  enpu_err err = {0};
  config_job *job;
  if (config_job_load(ENPU_SOURCE_DIR "/jobs/demo.json", &job, &err) < 0) fail_msg("%s", err.msg);
  graph *g;
  assert_int_equal(graph_build(job, CONFIG_PREFILL, 1, 1024, &g, &err), 0);
  const int nops = graph_op_count(g);
  int64_t n = 0;
  assert_int_equal(req_check_graph(g, &n, &err), 0);
  search_pareto *sets = calloc((size_t)nops, sizeof *sets);
  const search_pareto **by_op = calloc((size_t)nops, sizeof *by_op);
  scratch sc = {0};
  search_units *u;
  assert_int_equal(units_of_ops(g, &u, &err), 0);
  sc.req = calloc((size_t)nops, sizeof *sc.req);
  sc.pos = calloc((size_t)n, sizeof *sc.pos);
  sc.best_pos = calloc((size_t)n, sizeof *sc.best_pos);
  sc.peak_state = calloc((size_t)n, sizeof *sc.peak_state);
  sc.cand = calloc((size_t)n, sizeof *sc.cand);
  search_bucket_result res = {0};
  for (int i = 0; i < nops; i++) {
    sets[i].count = 4;
    sets[i].points = calloc(4, sizeof *sets[i].points);
    for (int k = 0; k < 4; k++) {
      search_point *p = &sets[i].points[k];
      for (int c = 0; c < CONFIG_NCOMP; c++) p->state[c] = 4;
      p->state[CONFIG_SA] = k + 1;
      p->time_ns = 1000.0 * (i + 1) * (1 + 0.1 * k * k);
      p->energy_nj = 500.0 * (i + 2) / (1 + 0.3 * k);
    }
    by_op[i] = &sets[i];
    sc.req[i] = (search_req_op){sets[i].points, 4, graph_op_at(g, i)->multiplicity};
    res.t_nodvfs_ns += (double)graph_op_at(g, i)->multiplicity * sets[i].points[0].time_ns;
    res.policy_peak_energy_nj += (double)graph_op_at(g, i)->multiplicity * 2 * sets[i].points[0].energy_nj;
  }
  res.policy_peak_time_ns = res.t_nodvfs_ns;
  sc.peak_plain = (req_cost){
      .time_ns = res.policy_peak_time_ns, .cp_ns = res.t_nodvfs_ns, .energy_nj = res.policy_peak_energy_nj};
  for (int64_t x = 0; x < n; x++)
    for (int c = 0; c < CONFIG_NCOMP; c++) sc.peak_state[x][c] = 4;
  search_walk *w;
  assert_int_equal(search_walk_build(sc.req, nops, 2 * res.t_nodvfs_ns, &w, &err), 0);
  request rq = {.units = u, .sets = by_op, .offset = u->offset, .transitions = 1};
  assert_int_equal(req_init(&rq, &sc, g, n, &err), 0);
  synth_price sp = {&rq, 0};
  rq.price = synth_price_fn, rq.price_user = &sp;
  for (int with_overhead = 0; with_overhead < 2; with_overhead++) {
    sp.overhead = with_overhead ? 0.02 : 0;
    search_slack_plan pl[2];
    memset(pl, 0, sizeof pl);
    for (int b = 0; b < CONFIG_NBUDGET; b++) {
      rq.budget = (config_budget)b;
      pl[b].budget_ns = 1.05 * res.t_nodvfs_ns; /* one budget for both modes */
      pl[b].state = calloc((size_t)n, sizeof *pl[b].state);
      if (plan_slack_walk(&rq, &sc, w, &res, &pl[b], &err) < 0) fail_msg("%s", err.msg);
    }
    const int same = pl[0].walk_moves == pl[1].walk_moves &&
                     !memcmp(pl[0].state, pl[1].state, (size_t)n * sizeof *pl[0].state);
    assert_true(pl[1].cp_time_ns <= pl[1].budget_ns * (1 + 1e-9));
    if (!with_overhead) {
      assert_true(same && pl[0].walk_moves > 0);
      assert_true(pl[0].time_ns == pl[1].time_ns && pl[0].energy_nj == pl[1].energy_nj);
      assert_true(pl[1].time_ns == pl[1].cp_time_ns);
    } else {
      assert_true(pl[0].time_ns <= pl[0].budget_ns && pl[1].time_ns > pl[1].budget_ns);
      assert_true(pl[0].walk_moves < pl[1].walk_moves && pl[1].energy_nj < pl[0].energy_nj);
    }
    free(pl[0].state);
    free(pl[1].state);
  }
  search_walk_free(w);
  scratch_free(&sc);
  search_units_free(u);
  for (int i = 0; i < nops; i++) free(sets[i].points);
  free(sets);
  free(by_op);
  graph_free(g);
  config_job_free(job);
}

/* ---------------------------------------------------------------------------------
 * Epochs, power gating, the design-space properties */

/* An epoch is one unit at one V/f setting: its Pareto points' time and energy are the
 * cost model's for each of its op instances at that setting, summed (checked here op
 * instance by op instance on the real operator order); its instances are consecutive
 * and at least the epoch long at NoDVFS; every enpu-ms plan gives one epoch one setting,
 * so its vf.set stream changes states at epoch boundaries only. */
static void test_epoch_units(void **state) {
  (void)state;
  enpu_err err = {0};
  real_bucket rb;
  real_bucket_open(&rb);
  graph_free(rb.g);
  assert_int_equal(graph_build(rb.job, CONFIG_PREFILL, 1, 4096, &rb.g, &err), 0);
  search_options opt;
  search_options_for_job(&opt, rb.job, NULL);
  search_units *u;
  assert_int_equal(search_units_build(rb.sx, rb.cost, rb.g, CONFIG_POLICY_ENPU_MS, &opt, &u, &err), 0);
  assert_true(u->count >= 1 && u->instances > 1);
  power_model *pm;
  assert_int_equal(power_model_create(&rb.job->chip, POWER_HBM_FULL, POWER_REG_DVFS, &pm, &err), 0);
  cost_pipeline pipe, nodvfs;
  assert_int_equal(cost_pipeline_enpu(&pipe, 5, pm, &err), 0);
  power_model *fixed;
  assert_int_equal(power_model_create(&rb.job->chip, POWER_HBM_CTRL_ONLY, POWER_REG_FIXED, &fixed, &err), 0);
  cost_pipeline_nodvfs(&nodvfs, fixed);
  const cost_plan peak = {{34, 34, 34, 34, 34}};
  const int64_t n = u->op_instances;
  int64_t *op_of = calloc((size_t)n, sizeof *op_of);
  for (int64_t x = 0, si = 0; si < graph_segment_count(rb.g); si++) {
    const graph_segment *seg = graph_segment_at(rb.g, (int)si);
    for (int64_t r = 0; r < seg->repeat; r++)
      for (int i = seg->first_op; i < seg->first_op + seg->op_count; i++) op_of[x++] = i;
  }
  for (int64_t w = 0; w < u->instances; w++) { /* consecutive, and >= 5 ms unless alone */
    const int64_t end = w + 1 < u->instances ? u->first_x[w + 1] : n;
    double t_nodvfs = 0;
    for (int64_t x = u->first_x[w]; x < end; x++) {
      assert_int_equal(u->walk_of[x], w);
      cost_result r;
      assert_int_equal(cost_eval(rb.cost, graph_op_at(rb.g, (int)op_of[x]), &peak, &nodvfs, &r, &err), 0);
      t_nodvfs += r.time_ns;
    }
    assert_true(t_nodvfs >= 5e6 || u->instances == 1);
  }
  for (int k = 0; k < u->count; k++) {
    search_pareto p;
    assert_int_equal(search_unit_compile(rb.sx, rb.cost, rb.g, u, k, CONFIG_POLICY_ENPU_MS, &opt, &p, &err), 0);
    const int64_t w = u->offset[k], end = w + 1 < u->instances ? u->first_x[w + 1] : n;
    for (int q = 0; q<p.count; q += p.count> 3 ? p.count / 3 : 1) {
      cost_plan plan;
      memcpy(plan.state, p.points[q].state, sizeof plan.state);
      double t = 0, e = 0;
      for (int64_t x = u->first_x[w]; x < end; x++) {
        cost_result r;
        assert_int_equal(cost_eval(rb.cost, graph_op_at(rb.g, (int)op_of[x]), &plan, &pipe, &r, &err), 0);
        t += r.time_ns, e += r.energy_total_nj;
      }
      assert_true(fabs(p.points[q].time_ns - t) <= 1e-9 * t);
      assert_true(fabs(p.points[q].energy_nj - e) <= 1e-9 * e);
      cost_result br;
      assert_int_equal(search_unit_breakdown(rb.sx, rb.cost, rb.g, u, k, CONFIG_POLICY_ENPU_MS, &opt,
                                             p.points[q].state, &br, &err),
                       0);
      assert_true(fabs(br.energy_total_nj - e) <= 1e-9 * e && fabs(br.time_ns - t) <= 1e-9 * t);
    }
    search_pareto_free(&p);
  }
  const double slacks[] = {0, 0.05};
  search_bucket_result res;
  assert_int_equal(search_compile_bucket(rb.sx, rb.cost, rb.g, CONFIG_POLICY_ENPU_MS, slacks, 2, &opt, &res, &err),
                   0);
  for (int k = 0; k < res.nplans; k++) {
    const search_slack_plan *pl = &res.plans[k];
    for (int64_t x = 1; x < n; x++)
      if (u->walk_of[x] == u->walk_of[x - 1])
        assert_memory_equal(pl->state[x], pl->state[x - 1], sizeof pl->state[x]);
    search_vfset_cmd *cmds = calloc((size_t)n, sizeof *cmds);
    int64_t ncmd;
    assert_int_equal(search_vfset_stream((const int(*)[CONFIG_NCOMP])pl->state, n, cmds, &ncmd, &err), 0);
    assert_true(ncmd >= 1 && ncmd <= u->instances);
    for (int64_t c = 0; c < ncmd; c++) assert_int_equal(u->first_x[u->walk_of[cmds[c].instance]], cmds[c].instance);
    free(cmds);
  }
  search_bucket_result_free(&res);
  free(op_of);
  power_model_free(pm);
  power_model_free(fixed);
  search_units_free(u);
  real_bucket_close(&rb);
}

/* Gating across ops at the request level, priced by hand: three synthetic ops of 1000 ns;
 * the VU works in ops 0 and 2 (idle 100 ns at the end of op 0 and 50 ns at the start of
 * op 2) and not at all in op 1, so its idle interval is 100 + 1000 + 50 = 1150 ns of the
 * schedule; gated, it saves saved_w × (I − wake) − wake energy with I = 1150 + wake (the
 * gated schedule: it wakes on demand), and op 2 is priced woken. A 10 ns interval (below
 * VU's 18.824 ns minimum) is never gated. */
typedef struct {
  double tail0, head1, head2, saved_w;
  int busy1;      /* the VU works in op 1 too */
  unsigned woken; /* wake masks op 1 and 2 were priced with */
} gate_price;

static int gate_price_fn(void *user, const int (*state)[CONFIG_NCOMP], int64_t x, unsigned mode, req_line *out,
                         enpu_err *err) {
  (void)state, (void)err;
  gate_price *gp = user;
  memset(out, 0, sizeof *out);
  out->time_ns = out->cp_ns = 1000;
  out->energy_nj = 5000;
  out->idle_mask = ((1u << CONFIG_NCOMP) - 1) & ~(1u << CONFIG_VU);
  if (x == 1 && !gp->busy1) out->idle_mask |= 1u << CONFIG_VU;
  for (int c = 0; c < CONFIG_NCOMP; c++) {
    out->saved_w[c] = c == CONFIG_VU ? gp->saved_w : 0;
    out->head_ns[c] = (out->idle_mask >> c & 1u) ? 1000 : 0;
  }
  if (x == 0) out->tail_ns[CONFIG_VU] = gp->tail0;
  if (x == 1 && gp->busy1) out->head_ns[CONFIG_VU] = gp->head1;
  if (x == 2) out->head_ns[CONFIG_VU] = gp->head2;
  if (x > 0) gp->woken |= mode >> 1;
  return 0;
}

static void test_gating_request_by_hand(void **state) {
  (void)state;
  enpu_err err = {0};
  config_chip *chip;
  assert_int_equal(config_chip_load(ENPU_SOURCE_DIR "/jobs/chips/tpuv5p.json", &chip, &err), 0);
  power_model *pm;
  assert_int_equal(power_model_create(chip, POWER_HBM_FULL, POWER_REG_DVFS, &pm, &err), 0);
  int st[3][CONFIG_NCOMP] = {{34, 34, 34, 34, 34}, {34, 34, 34, 34, 34}, {34, 34, 34, 34, 34}};
  gate_price gp = {.tail0 = 100, .head2 = 50, .saved_w = 2.0};
  request rq = {.instances = 3, .pm = pm, .gating = 1, .price = gate_price_fn, .price_user = &gp};
  req_cost plain, gated;
  assert_int_equal(req_total(&rq, (const int(*)[CONFIG_NCOMP])st, 0, &plain, &err), 0);
  assert_int_equal(req_total(&rq, (const int(*)[CONFIG_NCOMP])st, 1, &gated, &err), 0);
  const double wake = power_gate_wake_ns(pm, CONFIG_VU), interval = 1150 + wake;
  const double want = gp.saved_w * (interval - wake) - power_gate_wake_nj(pm, CONFIG_VU);
  assert_true(fabs((plain.energy_nj - gated.energy_nj) - want) < 1e-9);
  assert_true(fabs(want - power_gate_saving_nj(pm, CONFIG_VU, gp.saved_w, interval)) < 1e-9);
  assert_true(gated.gates == 1 && gp.woken == 1u << CONFIG_VU);
  /* Intervals of 10 and 5 ns (the VU works in every op): below the 18.824 ns minimum,
   * never gated whatever they would save, nobody woken. */
  gate_price short_gp = {.tail0 = 5, .head1 = 5, .head2 = 5, .saved_w = 1e6, .busy1 = 1};
  rq.price_user = &short_gp;
  assert_int_equal(req_total(&rq, (const int(*)[CONFIG_NCOMP])st, 0, &plain, &err), 0);
  assert_int_equal(req_total(&rq, (const int(*)[CONFIG_NCOMP])st, 1, &gated, &err), 0);
  assert_true(gated.energy_nj == plain.energy_nj && gated.gates == 0 && short_gp.woken == 0);
  power_model_free(pm);
  config_chip_free(chip);
}

/* Finer control can mimic coarser (enpu-all <= enpu-ms), and gating never makes a plan
 * dearer (pg+enpu-all <= enpu-all), for every slack of a few real buckets in both budget
 * modes (8 of the 80 layers at the small size); a failure names the bucket and the slack. */
static void test_design_space_properties(void **state) {
  (void)state;
  enpu_err err = {0};
  real_bucket rb;
  real_bucket_open(&rb);
  const struct {
    config_phase phase;
    int batch, seq;
  } buckets[] = {{CONFIG_PREFILL, 1, 1024}, {CONFIG_DECODE, 8, 4096}, {CONFIG_DECODE, 64, 2048}};
  const double slacks[] = {0, 0.02, 0.1, 0.3};
  const config_policy_spec pg = {CONFIG_POLICY_ENPU_ALL, true, -1};
  for (size_t b = 0; b < sizeof buckets / sizeof buckets[0]; b++) {
    graph *g;
    assert_int_equal(graph_build_depth(rb.job, buckets[b].phase, buckets[b].batch, buckets[b].seq,
                                       case_layers(rb.job, 8), &g, &err),
                     0);
    for (int mode = 0; mode < CONFIG_NBUDGET; mode++) {
      search_options opt, gopt;
      search_options_for_job(&opt, rb.job, NULL);
      opt.budget = (config_budget)mode;
      gopt = opt;
      search_options_set_policy(&gopt, &pg);
      search_bucket_result all, ms, gated;
      assert_int_equal(
          search_compile_bucket(rb.sx, rb.cost, g, CONFIG_POLICY_ENPU_ALL, slacks, 4, &opt, &all, &err), 0);
      assert_int_equal(search_compile_bucket(rb.sx, rb.cost, g, CONFIG_POLICY_ENPU_MS, slacks, 4, &opt, &ms, &err),
                       0);
      assert_int_equal(
          search_compile_bucket(rb.sx, rb.cost, g, CONFIG_POLICY_ENPU_ALL, slacks, 4, &gopt, &gated, &err), 0);
      for (int k = 0; k < 4; k++) {
        const char *what = all.plans[k].energy_nj > ms.plans[k].energy_nj * (1 + 1e-9) ? "enpu-all > enpu-ms"
                           : gated.plans[k].energy_nj > all.plans[k].energy_nj * (1 + 1e-9)
                               ? "pg+enpu-all > enpu-all"
                               : NULL;
        if (what)
          fail_msg("%s: %s batch %d seq %d, %s budget, slack %g: %.6g / %.6g / %.6g nJ", what,
                   config_phase_name(buckets[b].phase), buckets[b].batch, buckets[b].seq,
                   config_budget_name((config_budget)mode), slacks[k], all.plans[k].energy_nj,
                   ms.plans[k].energy_nj, gated.plans[k].energy_nj);
      }
      search_bucket_result_free(&all);
      search_bucket_result_free(&ms);
      search_bucket_result_free(&gated);
    }
    graph_free(g);
  }
  real_bucket_close(&rb);
}

/* The uniform policy: every op at one chip-wide state. Each round of its walk ends at
 * the pass the cost model gives at that state (evaluated here op by op on the NoDVFS
 * pipeline with the chip-wide regulator), the all-peak pass is NoDVFS's, each slack's
 * plan is the cheapest state within its budget (brute force), and a pass through the
 * first d layers (graph_build_depth) is the embedding and head plus d layers' ops. */
static void test_uniform(void **state) {
  (void)state;
  enpu_err err = {0};
  config_job *job;
  if (config_job_load(JOB_PATH, &job, &err) < 0) fail_msg("%s", err.msg);
  graph *g, *g20, *none;
  assert_int_equal(graph_build(job, CONFIG_DECODE, 8, 2048, &g, &err), 0);
  assert_int_equal(graph_build_depth(job, CONFIG_DECODE, 8, 2048, 81, &none, &err), ENPU_ERR_RANGE);
  assert_null(none);
  assert_int_equal(graph_build_depth(job, CONFIG_DECODE, 8, 2048, 20, &g20, &err), 0);
  cost_ctx *cost;
  search_ctx *sx;
  power_model *cw;
  assert_int_equal(cost_ctx_create(&job->chip, &cost, &err), 0);
  assert_int_equal(search_ctx_create(&job->chip, &sx, &err), 0);
  assert_int_equal(power_model_create(&job->chip, POWER_HBM_CTRL_ONLY, POWER_REG_CHIPWIDE, &cw, &err), 0);
  cost_pipeline pipe;
  cost_pipeline_nodvfs(&pipe, cw);
  const int peak = job->chip.freq_states;
  /* The pass at every state and the 20-layer pass, from the cost model directly. */
  double t[64] = {0}, e[64] = {0}, t20 = 0, e20 = 0, layer_t = 0, fixed_t = 0;
  for (int st = 1; st <= peak; st++)
    for (int i = 0; i < graph_op_count(g); i++) {
      const graph_op *op = graph_op_at(g, i);
      cost_plan plan = {{st, st, st, st, st}};
      cost_result r;
      assert_int_equal(cost_eval(cost, op, &plan, &pipe, &r, &err), 0);
      t[st] += op->multiplicity * r.time_ns;
      e[st] += op->multiplicity * r.energy_total_nj;
      if (st != 17) continue;
      *(op->multiplicity == 80 ? &layer_t : &fixed_t) += (double)op->multiplicity * r.time_ns;
      const graph_op *op20 = graph_op_at(g20, i);
      assert_true(op20->signature == op->signature && op20->multiplicity == (op->multiplicity == 80 ? 20 : 1));
      t20 += op20->multiplicity * r.time_ns;
      e20 += op20->multiplicity * r.energy_total_nj;
    }
  assert_near_rel(t20, fixed_t + layer_t / 4, 1e-12);
  assert_true(e20 > 0);
  const double slacks[3] = {0, 0.5, 3};
  search_bucket_result u;
  assert_int_equal(search_compile_bucket(sx, cost, g, CONFIG_POLICY_UNIFORM, slacks, 3, NULL, &u, &err), 0);
  assert_true(u.policy_peak_time_ns == u.t_nodvfs_ns && u.policy_peak_energy_nj == u.e_nodvfs_nj);
  const int nops = graph_op_count(g);
  assert_int_equal(search_walk_step_count(u.walk), (peak - 1) * nops);
  for (int k = 1; k < peak; k++) {
    const search_walk_step *end = search_walk_step_at(u.walk, k * nops - 1);
    assert_near_rel(end->time_ns, t[peak - k], 1e-12);
    assert_near_rel(end->energy_nj, e[peak - k], 1e-12);
  }
  for (int j = 0; j < 3; j++) {
    const search_slack_plan *pl = &u.plans[j];
    int best = peak;
    for (int st = peak - 1; st >= 1; st--)
      if (t[st] <= pl->budget_ns && e[st] < e[best]) best = st;
    assert_near_rel(pl->energy_nj, e[best], 1e-12);
    assert_int_equal(pl->walk_moves, (int64_t)(peak - best) * pl->instances);
    for (int64_t x = 0; x < pl->instances; x++) assert_int_equal(pl->state[x][CONFIG_HBM], best);
    double loss = 0; /* the board regulator's loss, stored with every plan */
    for (int c = 0; c < CONFIG_NCOMP; c++) loss += pl->regulator_loss_nj[c];
    assert_true(loss > 0 && loss < pl->energy_nj);
  }
  /* Chip-wide DVFS saves nothing on this memory-bound decode pass: the HBM slows too. */
  for (int st = 1; st < peak; st++) assert_true(e[st] > e[peak]);
  search_bucket_result_free(&u);
  power_model_free(cw);
  search_ctx_free(sx);
  cost_ctx_free(cost);
  graph_free(g);
  graph_free(g20);
  config_job_free(job);
}

/* search_sets_compile: one compilation per distinct signature, on its first item in
 * order, ranks 0.. among the distinct ones; every item points at its signature's set. */
typedef struct {
  int calls, item[8], rank[8], distinct;
} sets_log;

static int sets_log_compile(void *user, int item, int rank, int distinct, search_pareto *out, enpu_err *err) {
  (void)err;
  sets_log *l = user;
  l->item[l->calls] = item, l->rank[l->calls++] = rank, l->distinct = distinct;
  out->points = calloc(1, sizeof *out->points);
  out->count = 1;
  out->points[0].time_ns = item;
  out->evals = 10 + item;
  return 0;
}

static void test_sets_compile_dedup(void **state) {
  (void)state;
  const uint64_t sig[6] = {7, 9, 7, 3, 9, 7};
  sets_log l = {0};
  search_sets sets;
  enpu_err err = {0};
  assert_int_equal(search_sets_compile(sig, 6, sets_log_compile, &l, &sets, &err), 0);
  assert_int_equal(l.calls, 3);
  assert_int_equal(sets.distinct, 3);
  const int first[3] = {0, 1, 3};
  for (int k = 0; k < 3; k++) {
    assert_int_equal(l.item[k], first[k]);
    assert_int_equal(l.rank[k], k);
  }
  assert_int_equal(l.distinct, 3);
  const int owner[6] = {0, 1, 0, 3, 1, 0};
  for (int i = 0; i < 6; i++) assert_ptr_equal(sets.set_of[i], &sets.sets[owner[i]]);
  assert_int_equal(sets.evals, 10 + 11 + 13);
  search_sets_free(&sets);
  search_sets_free(NULL);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_domains),
      cmocka_unit_test(test_algorithm1_roofline),
      cmocka_unit_test(test_algorithm1_separable_memo),
      cmocka_unit_test(test_exhaustive_pareto_filter),
      cmocka_unit_test(test_eval_error),
      cmocka_unit_test(test_walk_brute_force),
      cmocka_unit_test(test_walk_cap_and_groups),
      cmocka_unit_test(test_invariants),
      cmocka_unit_test(test_vfset_round_trip),
      cmocka_unit_test(test_vfset_stream),
      cmocka_unit_test(test_real_op_enpu_all),
      cmocka_unit_test(test_counted_ops_plans_resimulate),
      cmocka_unit_test(test_pareto_gap),
      cmocka_unit_test(test_trim),
      cmocka_unit_test(test_trim_pair_moves),
      cmocka_unit_test(test_ga),
      cmocka_unit_test(test_epoch_units),
      cmocka_unit_test(test_gating_request_by_hand),
      cmocka_unit_test(test_design_space_properties),
      cmocka_unit_test(test_real_bucket_ga_lift),
      cmocka_unit_test(test_dvfs_c_compute_only),
      cmocka_unit_test(test_enpu_c_keeps_hbm_io),
      cmocka_unit_test(test_paper_equals_strict_without_overhead),
      cmocka_unit_test(test_exact_equals_exhaustive),
      cmocka_unit_test(test_exact_variants),
      cmocka_unit_test(test_finer_mimics_coarser),
      cmocka_unit_test(test_uniform),
      cmocka_unit_test(test_sets_compile_dedup),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
