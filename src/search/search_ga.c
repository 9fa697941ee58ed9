/* search_ga.c — the genetic algorithm of the paper's DVFS-C baseline (§4.1, §4.3: population
 * 1000, 500 generations, warm-started from the previous slack), over one gene per request op
 * (a Pareto point index shared by that op's instances).
 *
 * Invariants: the generator is a local splitmix64 stream seeded from the parameters, so a
 * run is a pure function of its inputs; individual 0 of every generation is the best of
 * the previous one (elitism), so the best fitness never grows and the result is never
 * worse than the seed; a genome over budget has fitness above every genome within it. */
#include <stdlib.h>
#include <string.h>

#include "search.h"

typedef struct {
  uint64_t s;
} rng;

static uint64_t rng_next(rng *r) {
  uint64_t z = (r->s += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

/* Uniform in 0..n-1 (1 <= n < 2^31) by a multiply instead of a division (the GA's hot
 * loop draws a few numbers per gene); the bias is below n / 2^32. */
static int rng_below(rng *r, int n) { return (int)(((rng_next(r) >> 32) * (uint64_t)n) >> 32); }

void search_ga_genome_cost(const search_req_op *ops, int nops, const int *genes,
                           double *time_ns, double *energy_nj) {
  double t = 0, e = 0;
  for (int i = 0; i < nops; i++) {
    const search_point *p = &ops[i].points[genes[i]];
    t += (double)ops[i].multiplicity * p->time_ns;
    e += (double)ops[i].multiplicity * p->energy_nj;
  }
  *time_ns = t;
  *energy_nj = e;
}

typedef struct {
  const search_req_op *ops;
  int n;
  double budget_ns, e_worst_nj, penalty_nj_per_ns;
} ga_problem;

/* Energy within budget; above every feasible energy (e_worst: each op at its dearest point,
 * point 0) plus a slope in the overrun otherwise, so selection still ranks infeasible
 * genomes by how far over they are. */
static double fitness(const ga_problem *pb, const int *genes) {
  double t, e;
  search_ga_genome_cost(pb->ops, pb->n, genes, &t, &e);
  return t <= pb->budget_ns ? e : pb->e_worst_nj + pb->penalty_nj_per_ns * (t - pb->budget_ns);
}

/* Per gene with probability 1/rate_inv: a neighbouring point (half the time) or any point. */
static void mutate(const ga_problem *pb, rng *r, int *genes, int rate_inv) {
  const uint64_t hit = UINT64_MAX / (uint64_t)rate_inv;
  for (int i = 0; i < pb->n; i++) {
    if (rng_next(r) > hit) continue;
    const int count = pb->ops[i].count;
    if (count < 2) continue;
    if (rng_below(r, 2)) {
      genes[i] = rng_below(r, count);
    } else {
      const int up = genes[i] + 1 < count && (genes[i] == 0 || rng_below(r, 2));
      genes[i] += up ? 1 : -1;
    }
  }
}

static int tournament(rng *r, const double *fit, int pop) {
  const int a = rng_below(r, pop), b = rng_below(r, pop);
  return fit[a] <= fit[b] ? a : b;
}

int search_ga_run(const search_req_op *ops, int nops, double budget_ns,
                  const search_ga_params *prm, const int *seed, int *best, int64_t *evals,
                  enpu_err *err) {
  *evals = 0;
  ENPU_RETURN_IF(nops < 1, err, ENPU_ERR_INVALID, "GA over %d genes", nops);
  ENPU_RETURN_IF(prm->population < 2 || prm->generations < 0, err, ENPU_ERR_INVALID,
                 "GA population %d (>= 2) or generations %d (>= 0)", prm->population,
                 prm->generations);
  ga_problem pb = {ops, nops, budget_ns, 0, 0};
  double t_fast = 0;
  for (int i = 0; i < nops; i++) {
    ENPU_RETURN_IF(ops[i].count < 1 || ops[i].multiplicity < 1, err, ENPU_ERR_INVALID,
                   "GA gene %d: %d points, multiplicity %lld", i, ops[i].count,
                   (long long)ops[i].multiplicity);
    ENPU_RETURN_IF(seed && (seed[i] < 0 || seed[i] >= ops[i].count), err, ENPU_ERR_INVALID,
                   "GA seed gene %d = %d outside 0..%d", i, seed ? seed[i] : 0,
                   ops[i].count - 1);
    pb.e_worst_nj += (double)ops[i].multiplicity * ops[i].points[0].energy_nj;
    t_fast += (double)ops[i].multiplicity * ops[i].points[0].time_ns;
  }
  pb.penalty_nj_per_ns = pb.e_worst_nj / (t_fast > 0 ? t_fast : 1.0);
  const int pop = prm->population;
  const size_t n = (size_t)nops;
  int *cur = enpu_calloc((size_t)pop * n, sizeof *cur);
  int *nxt = enpu_calloc((size_t)pop * n, sizeof *nxt);
  double *fit = enpu_calloc((size_t)pop, sizeof *fit);
  double *nfit = enpu_calloc((size_t)pop, sizeof *nfit);
  if (!cur || !nxt || !fit || !nfit) {
    free(cur), free(nxt), free(fit), free(nfit);
    return enpu_errorf(err, ENPU_ERR_NOMEM, "out of memory (GA population %d × %d)", pop, nops);
  }
  rng r = {prm->rng_seed ^ 0x5DEECE66Dull};
  for (int k = 0; k < pop; k++) {
    int *gk = cur + (size_t)k * n;
    if (k == 0 || k < pop / 2) {
      for (int i = 0; i < nops; i++) gk[i] = seed ? seed[i] : 0;
      if (k) mutate(&pb, &r, gk, 4); /* around the warm start: a quarter of the genes */
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
    for (int k = 1; k < pop; k++) {
      const int *a = cur + (size_t)tournament(&r, fit, pop) * n;
      const int *b = cur + (size_t)tournament(&r, fit, pop) * n;
      int *c = nxt + (size_t)k * n;
      uint64_t bits = 0; /* uniform crossover: one random bit per gene */
      for (int i = 0; i < nops; i++) {
        if (i % 64 == 0) bits = rng_next(&r);
        c[i] = bits >> (i % 64) & 1u ? a[i] : b[i];
      }
      mutate(&pb, &r, c, nops);
      nfit[k] = fitness(&pb, c);
    }
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
  return 0;
}
