/* search_walk.c — request-level search over the ops' Pareto sets: the walk along lower
 * convex hulls (src/README.md), the paper's plain greedy (§3.3), walk prefixes with the
 * LP-relaxation lower bound, and per-instance positions of a prefix.
 *
 * Why the hull walk is exact for its LP: choosing one Pareto point per op instance under
 * a time budget is a multiple-choice knapsack; its LP relaxation is solved by taking hull
 * segments in decreasing order of energy saved per added time, the last one fractionally.
 * Hull segment rates of one op strictly decrease, so sorting every op's segments by rate
 * gives a valid order of moves; all m instances of an op share a segment's rate and move
 * as one counted step. At every instance boundary the LP solution is integral, so the
 * walk is optimal there even against non-hull Pareto points.
 *
 * Invariants: steps have dtime_ns > 0 and denergy_nj < 0; cumulative time strictly
 * increases and energy strictly decreases along a walk; `exhausted` is 0 only when the
 * walk stopped at its time cap with moves left. The rounds walk of the uniform policy
 * (search_internal.h) is the exception: time only non-decreasing, energy either way, no
 * LP bound. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "search_internal.h"

struct search_walk {
  int nops;
  int64_t *mult;   /* per op */
  int64_t *offset; /* per op: first instance index */
  int64_t instances;
  double t0_ns, e0_nj;
  search_walk_step *steps;
  size_t nsteps, cap;
  int64_t moves;
  int exhausted;
};

void search_walk_free(search_walk *w) {
  if (!w) return;
  free(w->mult); /* owns offset */
  free(w->steps);
  free(w);
}

/* The end of a walk builder: hand the walk out, or free it on failure. @return rc. */
static int walk_finish(search_walk *w, int rc, search_walk **out) {
  if (rc == 0) *out = w;
  else search_walk_free(w);
  return rc;
}

/* The walk's start (every instance at point 0) and its per-op bookkeeping. `pareto`:
 * points must be a Pareto set (time up, energy down), else only in time order. */
static int walk_create(const search_req_op *ops, int nops, int pareto, search_walk **out, enpu_err *err) {
  *out = NULL;
  ENPU_RETURN_IF(nops < 1, err, ENPU_ERR_INVALID, "request with %d ops", nops);
  for (int i = 0; i < nops; i++) {
    ENPU_RETURN_IF(ops[i].count < 1 || !ops[i].points, err, ENPU_ERR_INVALID, "op %d has an empty Pareto set", i);
    ENPU_RETURN_IF(ops[i].multiplicity < 1, err, ENPU_ERR_INVALID, "op %d has multiplicity %lld", i,
                   (long long)ops[i].multiplicity);
    for (int k = 1; k < ops[i].count; k++)
      ENPU_RETURN_IF(pareto ? !(ops[i].points[k].time_ns > ops[i].points[k - 1].time_ns &&
                                ops[i].points[k].energy_nj < ops[i].points[k - 1].energy_nj)
                            : !(ops[i].points[k].time_ns >= ops[i].points[k - 1].time_ns),
                     err, ENPU_ERR_INVALID, "op %d: Pareto point %d out of order", i, k);
  }
  search_walk *w = enpu_calloc(1, sizeof *w);
  if (!w || ENPU_CALLOC_PARTS(ENPU_PART(w->mult, nops), ENPU_PART(w->offset, nops)) < 0) {
    free(w);
    return enpu_errorf(err, ENPU_ERR_NOMEM, "out of memory (walk)");
  }
  w->nops = nops;
  for (int i = 0; i < nops; i++) {
    w->mult[i] = ops[i].multiplicity;
    w->offset[i] = w->instances;
    w->instances += ops[i].multiplicity;
    w->t0_ns += (double)ops[i].multiplicity * ops[i].points[0].time_ns;
    w->e0_nj += (double)ops[i].multiplicity * ops[i].points[0].energy_nj;
  }
  *out = w;
  return 0;
}

/* Append `count` instance moves of op from → to; consecutive identical moves merge. */
static int walk_push(search_walk *w, const search_req_op *ops, int op, int from, int to, int64_t count,
                     enpu_err *err) {
  const search_point *a = &ops[op].points[from], *b = &ops[op].points[to];
  search_walk_step *last = w->nsteps ? &w->steps[w->nsteps - 1] : NULL;
  const double t = last ? last->time_ns : w->t0_ns, e = last ? last->energy_nj : w->e0_nj;
  const double dt = b->time_ns - a->time_ns, de = b->energy_nj - a->energy_nj;
  if (last && last->op == op && last->from == from && last->to == to) {
    last->count += count;
  } else {
    ENPU_RETURN_IF(enpu_grow((void **)&w->steps, &w->cap, w->nsteps + 1, sizeof *w->steps) < 0, err, ENPU_ERR_NOMEM,
                   "out of memory (walk of %zu steps)", w->nsteps);
    last = &w->steps[w->nsteps++];
    *last = (search_walk_step){op, from, to, count, dt, de, 0, 0, w->moves};
  }
  last->time_ns = t + (double)count * dt;
  last->energy_nj = e + (double)count * de;
  w->moves += count;
  return 0;
}

int search_walk_rounds(const search_req_op *ops, int nops, search_walk **out, enpu_err *err) {
  search_walk *w;
  ENPU_FORWARD(walk_create(ops, nops, 0, &w, err));
  int rounds = 0;
  for (int i = 0; i < nops; i++)
    if (ops[i].count - 1 > rounds) rounds = ops[i].count - 1;
  int rc = 0;
  for (int k = 1; rc == 0 && k <= rounds; k++)
    for (int i = 0; rc == 0 && i < nops; i++)
      if (k < ops[i].count) rc = walk_push(w, ops, i, k - 1, k, ops[i].multiplicity, err);
  w->exhausted = 1;
  return walk_finish(w, rc, out);
}

/* ---------------------------------------------------------------------------------
 * Hull walk */

typedef struct {
  int op, j; /* segment j of op's hull */
  int from, to;
  double rate; /* energy saved per added time */
} hull_seg;

static int seg_cmp(const void *pa, const void *pb) {
  const hull_seg *a = pa, *b = pb;
  if (a->rate != b->rate) return a->rate > b->rate ? -1 : 1;
  if (a->op != b->op) return a->op < b->op ? -1 : 1;
  return (a->j > b->j) - (a->j < b->j);
}

/* Lower convex hull of a Pareto set (indices into it), collinear points dropped. */
static int lower_hull(const search_point *p, int n, int *h) {
  int len = 0;
  for (int i = 0; i < n; i++) {
    while (len >= 2) {
      const search_point *o = &p[h[len - 2]], *a = &p[h[len - 1]];
      const double cross = (a->time_ns - o->time_ns) * (p[i].energy_nj - o->energy_nj) -
                           (a->energy_nj - o->energy_nj) * (p[i].time_ns - o->time_ns);
      if (cross > 0) break;
      len--;
    }
    h[len++] = i;
  }
  return len;
}

int search_walk_build(const search_req_op *ops, int nops, double time_cap_ns, search_walk **out, enpu_err *err) {
  search_walk *w;
  ENPU_FORWARD(walk_create(ops, nops, 1, &w, err));
  size_t nseg = 0;
  int maxn = 0;
  for (int i = 0; i < nops; i++) {
    nseg += (size_t)ops[i].count - 1;
    if (ops[i].count > maxn) maxn = ops[i].count;
  }
  hull_seg *segs = enpu_calloc(nseg ? nseg : 1, sizeof *segs);
  int *h = enpu_calloc((size_t)maxn, sizeof *h);
  int rc = 0;
  if (!segs || !h) {
    rc = enpu_errorf(err, ENPU_ERR_NOMEM, "out of memory (hulls)");
    goto done;
  }
  nseg = 0;
  for (int i = 0; i < nops; i++) {
    const search_point *p = ops[i].points;
    const int len = lower_hull(p, ops[i].count, h);
    for (int j = 0; j + 1 < len; j++) {
      const search_point *a = &p[h[j]], *b = &p[h[j + 1]];
      segs[nseg++] = (hull_seg){i, j, h[j], h[j + 1], (a->energy_nj - b->energy_nj) / (b->time_ns - a->time_ns)};
    }
  }
  qsort(segs, nseg, sizeof *segs, seg_cmp);
  w->exhausted = 1;
  for (size_t s = 0; s < nseg && rc == 0; s++) {
    const double t = w->nsteps ? w->steps[w->nsteps - 1].time_ns : w->t0_ns;
    if (t >= time_cap_ns) {
      w->exhausted = 0;
      break;
    }
    rc = walk_push(w, ops, segs[s].op, segs[s].from, segs[s].to, ops[segs[s].op].multiplicity, err);
  }
done:
  free(segs);
  free(h);
  return walk_finish(w, rc, out);
}

/* ---------------------------------------------------------------------------------
 * Plain greedy over Pareto points */

typedef struct {
  int64_t *hist; /* instances at each Pareto point */
  int best;      /* point index whose next move is the op's best that fits, or -1 */
  double rate;
} greedy_op;

static void greedy_refresh(greedy_op *g, const search_req_op *op, double slack_ns) {
  g->best = -1;
  for (int k = 0; k + 1 < op->count; k++) {
    if (!g->hist[k]) continue;
    const double dt = op->points[k + 1].time_ns - op->points[k].time_ns;
    const double de = op->points[k + 1].energy_nj - op->points[k].energy_nj;
    if (dt > slack_ns || de >= 0) continue;
    if (g->best < 0 || -de / dt > g->rate) g->best = k, g->rate = -de / dt;
  }
}

int search_greedy_build(const search_req_op *ops, int nops, double budget_ns, search_walk **out, enpu_err *err) {
  search_walk *w;
  ENPU_FORWARD(walk_create(ops, nops, 1, &w, err));
  w->exhausted = 1;
  int64_t npoints = 0;
  for (int i = 0; i < nops; i++) npoints += ops[i].count;
  greedy_op *g = enpu_calloc((size_t)nops, sizeof *g);
  int64_t *hist = enpu_calloc((size_t)npoints, sizeof *hist);
  int rc = 0;
  if (!g || !hist) {
    rc = enpu_errorf(err, ENPU_ERR_NOMEM, "out of memory (greedy)");
    goto done;
  }
  double t = w->t0_ns;
  for (int i = 0, at = 0; i < nops; at += ops[i].count, i++) {
    g[i].hist = hist + at;
    g[i].hist[0] = ops[i].multiplicity;
    greedy_refresh(&g[i], &ops[i], budget_ns - t);
  }
  for (;;) {
    int bi = -1;
    for (int i = 0; i < nops; i++) {
      if (g[i].best < 0) continue;
      const search_point *p = ops[i].points;
      /* A move that no longer fits never will (time only grows): look again. */
      if (t + (p[g[i].best + 1].time_ns - p[g[i].best].time_ns) > budget_ns)
        greedy_refresh(&g[i], &ops[i], budget_ns - t);
      if (g[i].best >= 0 && (bi < 0 || g[i].rate > g[bi].rate)) bi = i;
    }
    if (bi < 0) break;
    const int k = g[bi].best;
    rc = walk_push(w, ops, bi, k, k + 1, 1, err);
    if (rc < 0) break;
    g[bi].hist[k]--;
    g[bi].hist[k + 1]++;
    t = w->steps[w->nsteps - 1].time_ns;
    greedy_refresh(&g[bi], &ops[bi], budget_ns - t);
  }
done:
  free(g);
  free(hist);
  return walk_finish(w, rc, out);
}

/* ---------------------------------------------------------------------------------
 * Queries */

double search_walk_start_time_ns(const search_walk *w) { return w->t0_ns; }
double search_walk_start_energy_nj(const search_walk *w) { return w->e0_nj; }
int search_walk_step_count(const search_walk *w) { return (int)w->nsteps; }
const search_walk_step *search_walk_step_at(const search_walk *w, int i) {
  return i >= 0 && (size_t)i < w->nsteps ? &w->steps[i] : NULL;
}
int64_t search_walk_moves(const search_walk *w) { return w->moves; }

int search_walk_prefix(const search_walk *w, double budget_ns, search_prefix *out, enpu_err *err) {
  /* The start and a budget made of the same op times summed in another order (an
   * epoch's members, the all-peak reference) may differ in their last bits. */
  ENPU_RETURN_IF(budget_ns < w->t0_ns * (1 - 1e-12), err, ENPU_ERR_INFEASIBLE,
                 "budget %.1f ns below the fastest plan's %.1f ns", budget_ns, w->t0_ns);
  size_t lo = 0, hi = w->nsteps; /* lo: steps that fit entirely */
  while (lo < hi) {
    const size_t mid = (lo + hi) / 2;
    if (w->steps[mid].time_ns <= budget_ns) lo = mid + 1;
    else hi = mid;
  }
  const search_walk_step *done = lo ? &w->steps[lo - 1] : NULL;
  out->moves = done ? done->moves_before + done->count : 0;
  out->time_ns = done ? done->time_ns : w->t0_ns;
  out->energy_nj = done ? done->energy_nj : w->e0_nj;
  if (lo == w->nsteps) {
    ENPU_RETURN_IF(!w->exhausted && budget_ns > out->time_ns, err, ENPU_ERR_RANGE,
                   "budget %.1f ns beyond the walk's cap (%.1f ns)", budget_ns, out->time_ns);
    out->lower_bound_nj = out->energy_nj;
    return 0;
  }
  const search_walk_step *next = &w->steps[lo];
  int64_t c = (int64_t)floor((budget_ns - out->time_ns) / next->dtime_ns);
  if (c >= next->count) c = next->count - 1; /* rounding: the whole step did not fit */
  if (c < 0) c = 0;
  out->moves += c;
  out->time_ns += (double)c * next->dtime_ns;
  out->energy_nj += (double)c * next->denergy_nj;
  const double frac = fmin(1.0, fmax(0.0, (budget_ns - out->time_ns) / next->dtime_ns));
  out->lower_bound_nj = out->energy_nj + frac * next->denergy_nj;
  return 0;
}

int search_walk_positions(const search_walk *w, int64_t moves, int *pos, enpu_err *err) {
  ENPU_RETURN_IF(moves < 0 || moves > w->moves, err, ENPU_ERR_RANGE, "walk prefix of %lld moves outside 0..%lld",
                 (long long)moves, (long long)w->moves);
  memset(pos, 0, (size_t)w->instances * sizeof *pos);
  for (size_t s = 0; s < w->nsteps && moves > 0; s++) {
    const search_walk_step *st = &w->steps[s];
    int64_t k = st->count < moves ? st->count : moves;
    moves -= k;
    int *p = pos + w->offset[st->op];
    for (int64_t r = 0; r < w->mult[st->op] && k > 0; r++)
      if (p[r] == st->from) p[r] = st->to, k--;
    ENPU_RETURN_IF(k > 0, err, ENPU_ERR_INTERNAL,
                   "walk step %zu moves instances of op %d "
                   "that are not at point %d",
                   s, st->op, st->from);
  }
  return 0;
}
