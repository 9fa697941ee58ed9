/* test_search.c — the search module on synthetic cost functions whose answers follow
 * from their formulas (or from brute force written here), then on the real cost model.
 *
 * - Roofline evaluator: T = max_c a/s_c, E = P·T + δ·Σ s_c. Raising a strict subset of
 *   equal states leaves T unchanged, so Algorithm 1 can only raise every domain at once:
 *   it walks the diagonal s = 1..S, evaluating the start plus 2^d - 1 new candidates per
 *   step (no candidate repeats), i.e. 1 + (S-1)(2^d-1) evaluations, and ends at all-peak.
 *   On the diagonal E(s) = P·a/s + 5δ·s, so the Pareto set is {s >= argmin E}.
 * - Brute force: Pareto filters and request-level optima are recomputed here by
 *   enumeration, independently of the module's algorithms.
 * The module's tests are split by topic over test_search.c and test_search_*.c, one program
 * (test_search.h says which file holds what; main here runs them all). */
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

int case_layers(const config_job *job, int small) { return test_size_small() ? small : job->model.layers; }

/* ---------------------------------------------------------------------------------
 * Synthetic evaluators */

int roofline_eval(void *user, const int s[CONFIG_NCOMP], double *t, double *e, enpu_err *err) {
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
      cmocka_unit_test(test_exact_equals_exhaustive),
      cmocka_unit_test(test_exact_variants),
      cmocka_unit_test(test_finer_mimics_coarser),
  };
  const test_part parts[] = {{tests, sizeof tests / sizeof tests[0]},
                             {search_gap_tests, search_gap_ntests},
                             {search_design_tests, search_design_ntests},
                             {search_budget_tests, search_budget_ntests}};
  return test_run_parts("search", parts, 4, NULL, NULL);
}
