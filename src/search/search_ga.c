/* search_ga.c — the genetic algorithm of the paper's DVFS-C baseline (§4.1, §4.3: population
 * 1000, 500 generations, warm-started from the previous slack), over one gene per request op
 * (a Pareto point index shared by that op's instances).
 *
 * Invariants: the generator is a local splitmix64 stream seeded from the parameters, so a
 * run is a pure function of its inputs; individual 0 of every generation is the best of
 * the previous one (elitism), so the best fitness never grows and the result is never
 * worse than the seed; a genome over budget has fitness above every genome within it. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "search_internal.h"

typedef struct {
  uint64_t s;
} rng;

static uint64_t splitmix_next(rng *r) {
  uint64_t z = (r->s += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

/* Uniform in 0..n-1 (1 <= n < 2^31) by a multiply instead of a division (the GA's hot
 * loop draws a few numbers per gene); the bias is below n / 2^32. */
static int rng_below(rng *r, int n) { return (int)(((splitmix_next(r) >> 32) * (uint64_t)n) >> 32); }

void search_ga_genome_cost(const search_req_op *ops, int nops, const int *genes, double *time_ns,
                           double *energy_nj) {
  double t = 0, e = 0;
  for (int i = 0; i < nops; i++) {
    const search_point *p = &ops[i].points[genes[i]];
    t += (double)ops[i].multiplicity * p->time_ns;
    e += (double)ops[i].multiplicity * p->energy_nj;
  }
  *time_ns = t;
  *energy_nj = e;
}

/* The problem in flat arrays for the hot loop: gene i's point k costs t[off[i] + k] ns and
 * e[off[i] + k] nJ (the point's time and energy × the gene's multiplicity). */
typedef struct {
  const search_req_op *ops;
  int n;
  int *off, *count;
  double *t, *e;
  double budget_ns, e_worst_nj, penalty_nj_per_ns;
  double log_keep; /* log(1 − 1/n): geometric skips between mutated genes */
} ga_problem;

/* Energy within budget; above every feasible energy (e_worst: each op at its dearest point,
 * point 0) plus a slope in the overrun otherwise, so selection still ranks infeasible
 * genomes by how far over they are. */
static double fitness_of(const ga_problem *pb, double t, double e) {
  return t <= pb->budget_ns ? e : pb->e_worst_nj + pb->penalty_nj_per_ns * (t - pb->budget_ns);
}

static double fitness(const ga_problem *pb, const int *genes) {
  double t = 0, e = 0;
  for (int i = 0; i < pb->n; i++) t += pb->t[pb->off[i] + genes[i]], e += pb->e[pb->off[i] + genes[i]];
  return fitness_of(pb, t, e);
}

/* Mutate gene i: a neighbouring point (half the time) or any point. */
static void mutate_gene(const ga_problem *pb, rng *r, int *genes, int i) {
  const int count = pb->count[i];
  if (count < 2) return;
  if (rng_below(r, 2)) {
    genes[i] = rng_below(r, count);
  } else {
    const int up = genes[i] + 1 < count && (genes[i] == 0 || rng_below(r, 2));
    genes[i] += up ? 1 : -1;
  }
}

/* Every gene independently with probability 1/rate_inv, drawn as geometric skips between
 * the genes hit (one draw per mutation instead of one per gene); *t, *e (may be NULL)
 * follow the mutated genes' costs. */
static void mutate(const ga_problem *pb, rng *r, int *genes, int rate_inv, double *t, double *e) {
  const double log_keep = rate_inv == pb->n ? pb->log_keep : log1p(-1.0 / rate_inv);
  for (int i = -1;;) {
    const double u = ((double)(splitmix_next(r) >> 11) + 1.0) * 0x1p-53; /* (0, 1] */
    const double skip = log_keep < 0 ? floor(log(u) / log_keep) : INFINITY;
    if (!(skip < (double)(pb->n - 1 - i))) return;
    i += 1 + (int)skip;
    const int before = pb->off[i] + genes[i];
    mutate_gene(pb, r, genes, i);
    if (!t) continue;
    const int after = pb->off[i] + genes[i];
    *t += pb->t[after] - pb->t[before];
    *e += pb->e[after] - pb->e[before];
  }
}

static int tournament(rng *r, const double *fit, int pop) {
  const int a = rng_below(r, pop), b = rng_below(r, pop);
  return fit[a] <= fit[b] ? a : b;
}

/* Check the inputs and build the flat problem. */
static int ga_problem_make(const search_req_op *ops, int nops, double budget_ns, const search_ga_params *prm,
                           const int *seed, ga_problem *pb, enpu_err *err) {
  ENPU_RETURN_IF(nops < 1, err, ENPU_ERR_INVALID, "GA over %d genes", nops);
  ENPU_RETURN_IF(prm->population < 2 || prm->generations < 0, err, ENPU_ERR_INVALID,
                 "GA population %d (>= 2) or generations %d (>= 0)", prm->population, prm->generations);
  *pb = (ga_problem){
      .ops = ops, .n = nops, .budget_ns = budget_ns, .log_keep = nops > 1 ? log1p(-1.0 / nops) : -INFINITY};
  int total = 0;
  for (int i = 0; i < nops; i++) {
    ENPU_RETURN_IF(ops[i].count < 1 || ops[i].multiplicity < 1, err, ENPU_ERR_INVALID,
                   "GA gene %d: %d points, multiplicity %lld", i, ops[i].count, (long long)ops[i].multiplicity);
    ENPU_RETURN_IF(seed && (seed[i] < 0 || seed[i] >= ops[i].count), err, ENPU_ERR_INVALID,
                   "GA seed gene %d = %d outside 0..%d", i, seed ? seed[i] : 0, ops[i].count - 1);
    total += ops[i].count;
  }
  pb->off = enpu_calloc((size_t)nops, sizeof *pb->off);
  pb->count = enpu_calloc((size_t)nops, sizeof *pb->count);
  pb->t = enpu_calloc((size_t)total, sizeof *pb->t);
  pb->e = enpu_calloc((size_t)total, sizeof *pb->e);
  ENPU_RETURN_IF(!pb->off || !pb->count || !pb->t || !pb->e, err, ENPU_ERR_NOMEM, "out of memory (GA of %d genes)",
                 nops);
  double t_fast = 0;
  for (int i = 0, at = 0; i < nops; i++) {
    const double m = (double)ops[i].multiplicity;
    pb->off[i] = at, pb->count[i] = ops[i].count;
    for (int k = 0; k < ops[i].count; k++, at++)
      pb->t[at] = m * ops[i].points[k].time_ns, pb->e[at] = m * ops[i].points[k].energy_nj;
    pb->e_worst_nj += pb->e[pb->off[i]];
    t_fast += pb->t[pb->off[i]];
  }
  pb->penalty_nj_per_ns = pb->e_worst_nj / (t_fast > 0 ? t_fast : 1.0);
  return 0;
}

static void ga_problem_free(ga_problem *pb) { free(pb->off), free(pb->count), free(pb->t), free(pb->e); }

/* One child of a generation: uniform crossover of two tournament winners (one random bit
 * per gene) with its cost summed on the way, then mutation (about one gene per child,
 * whose cost difference is applied). */
static double ga_child(const ga_problem *pb, rng *r, const int *cur, const double *fit, int pop, int *c) {
  const size_t n = (size_t)pb->n;
  const int *a = cur + (size_t)tournament(r, fit, pop) * n;
  const int *b = cur + (size_t)tournament(r, fit, pop) * n;
  const int *off = pb->off;
  const double *pt = pb->t, *pe = pb->e;
  double t = 0, e = 0;
  for (int base = 0; base < pb->n; base += 64) {
    const uint64_t bits = splitmix_next(r);
    const int end = base + 64 < pb->n ? base + 64 : pb->n;
    for (int i = base; i < end; i++) { /* branch-free: the bits are random */
      const int take_a = -(int)(bits >> (i - base) & 1u);
      const int g = b[i] ^ ((a[i] ^ b[i]) & take_a);
      c[i] = g;
      t += pt[off[i] + g];
      e += pe[off[i] + g];
    }
  }
  mutate(pb, r, c, pb->n, &t, &e);
  return fitness_of(pb, t, e);
}

int search_ga_run(const search_req_op *ops, int nops, double budget_ns, const search_ga_params *prm,
                  const int *seed, int *best, int64_t *evals, enpu_err *err) {
  *evals = 0;
  ga_problem pb = {0};
  int rc = ga_problem_make(ops, nops, budget_ns, prm, seed, &pb, err);
  const int pop = prm->population;
  const size_t n = (size_t)nops;
  int *cur = rc ? NULL : enpu_calloc((size_t)pop * n, sizeof *cur);
  int *nxt = rc ? NULL : enpu_calloc((size_t)pop * n, sizeof *nxt);
  double *fit = rc ? NULL : enpu_calloc((size_t)pop, sizeof *fit);
  double *nfit = rc ? NULL : enpu_calloc((size_t)pop, sizeof *nfit);
  if (rc == 0 && (!cur || !nxt || !fit || !nfit))
    rc = enpu_errorf(err, ENPU_ERR_NOMEM, "out of memory (GA population %d × %d)", pop, nops);
  if (rc < 0) {
    free(cur), free(nxt), free(fit), free(nfit);
    ga_problem_free(&pb);
    return rc;
  }
  rng r = {prm->rng_seed ^ 0x5DEECE66Dull};
  for (int k = 0; k < pop; k++) {
    int *gk = cur + (size_t)k * n;
    if (k == 0 || k < pop / 2) {
      for (int i = 0; i < nops; i++) gk[i] = seed ? seed[i] : 0;
      if (k) mutate(&pb, &r, gk, 4, NULL, NULL); /* around the warm start: a quarter of the genes */
    } else {
      for (int i = 0; i < nops; i++) gk[i] = rng_below(&r, ops[i].count);
    }
    fit[k] = fitness(&pb, gk);
  }
  *evals = pop;
  for (int gen = 0; gen < prm->generations; gen++) {
    int el = 0;
    for (int k = 1; k < pop; k++)
      if (fit[k] < fit[el]) el = k;
    memcpy(nxt, cur + (size_t)el * n, n * sizeof *nxt);
    nfit[0] = fit[el];
    for (int k = 1; k < pop; k++) nfit[k] = ga_child(&pb, &r, cur, fit, pop, nxt + (size_t)k * n);
    *evals += pop - 1;
    int *ts = cur;
    cur = nxt, nxt = ts;
    double *tf = fit;
    fit = nfit, nfit = tf;
  }
  int el = 0;
  for (int k = 1; k < pop; k++)
    if (fit[k] < fit[el]) el = k;
  memcpy(best, cur + (size_t)el * n, n * sizeof *best);
  free(cur), free(nxt), free(fit), free(nfit);
  ga_problem_free(&pb);
  return 0;
}
