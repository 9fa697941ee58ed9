/* search_op.c — operator-level search: domain descriptions, the evaluation memo,
 * Algorithm 1 (paper §3.3) and its optional trim pass, the Pareto front every op-level
 * search feeds, and the exact-vs-greedy gap. The exhaustive and exact searches and the
 * entry that picks one are search_exact.c's, which calls down into this file.
 *
 * Invariants: a front is sorted by time, strictly increasing, with strictly decreasing
 * energy; of two plans with equal time and energy the one with the lexicographically
 * smaller state vector is kept, so the front does not depend on insertion order (and the
 * exhaustive result not on the thread count). The memo holds the evaluations of the
 * current operator only: entries of earlier operators carry an older generation and
 * count as empty, so switching operators costs nothing. */
#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "search_internal.h"

/* ---------------------------------------------------------------------------------
 * Domains */

static int domains_check_peak(int peak_state, enpu_err *err) {
  ENPU_RETURN_IF(peak_state < 1 || peak_state > 255, err, ENPU_ERR_INVALID,
                 "peak state %d outside 1..255 (vf.set has 8 bits per domain)", peak_state);
  return 0;
}

/* Fill d: `ndomains` searched domains, component c in domain map[c] (-1: at peak). */
static int domains_set(search_domains *d, int ndomains, const int map[CONFIG_NCOMP], int peak_state,
                       search_op_method method, enpu_err *err) {
  ENPU_FORWARD(domains_check_peak(peak_state, err));
  d->ndomains = ndomains;
  memcpy(d->domain_of, map, sizeof d->domain_of);
  d->peak_state = peak_state;
  d->method = method;
  d->trim = 0;
  return 0;
}

int search_domains_enpu(search_domains *d, int ndomains, int peak_state, search_op_method method, enpu_err *err) {
  /* Component → domain per §4.6; SA, VU, SRAM, HBM, ICI order. */
  static const int map5[CONFIG_NCOMP] = {0, 1, 2, 3, 4};
  static const int map4[CONFIG_NCOMP] = {0, 0, 1, 2, 3};
  static const int map3[CONFIG_NCOMP] = {0, 0, 0, 1, 2};
  const int *map = ndomains == 5 ? map5 : ndomains == 4 ? map4 : ndomains == 3 ? map3 : NULL;
  ENPU_RETURN_IF(!map, err, ENPU_ERR_INVALID, "eNPU domain count %d: expected 5, 4 or 3", ndomains);
  return domains_set(d, ndomains, map, peak_state, method, err);
}

int search_domains_dvfs_c(search_domains *d, int peak_state, enpu_err *err) {
  static const int map[CONFIG_NCOMP] = {0, 0, 0, -1, -1};
  return domains_set(d, 1, map, peak_state, SEARCH_OP_EXHAUSTIVE, err);
}

int search_domains_nodvfs(search_domains *d, int peak_state, enpu_err *err) {
  static const int map[CONFIG_NCOMP] = {-1, -1, -1, -1, -1};
  /* One combination: the all-peak plan. */
  return domains_set(d, 0, map, peak_state, SEARCH_OP_EXHAUSTIVE, err);
}

int search_domains_validate(const search_domains *d, enpu_err *err) {
  ENPU_FORWARD(domains_check_peak(d->peak_state, err));
  ENPU_RETURN_IF(d->ndomains < 0 || d->ndomains > CONFIG_NCOMP, err, ENPU_ERR_INVALID,
                 "searched domain count %d outside 0..%d", d->ndomains, CONFIG_NCOMP);
  int used[CONFIG_NCOMP] = {0};
  for (int c = 0; c < CONFIG_NCOMP; c++) {
    const int k = d->domain_of[c];
    ENPU_RETURN_IF(k < -1 || k >= d->ndomains, err, ENPU_ERR_INVALID, "component %s in domain %d of %d",
                   config_component_name((config_component)c), k, d->ndomains);
    if (k >= 0) used[k] = 1;
  }
  for (int k = 0; k < d->ndomains; k++)
    ENPU_RETURN_IF(!used[k], err, ENPU_ERR_INVALID, "searched domain %d has no component", k);
  return 0;
}

/* Component states of a plan given the state of each searched domain. */
void search_domains_expand(const search_domains *d, const int dstate[CONFIG_NCOMP], int state[CONFIG_NCOMP]) {
  for (int c = 0; c < CONFIG_NCOMP; c++) state[c] = d->domain_of[c] < 0 ? d->peak_state : dstate[d->domain_of[c]];
}

/* ---------------------------------------------------------------------------------
 * Pareto front */

static int state_cmp(const int *a, const int *b) {
  for (int c = 0; c < CONFIG_NCOMP; c++)
    if (a[c] != b[c]) return a[c] < b[c] ? -1 : 1;
  return 0;
}

/* Insert p unless a point of the front dominates it; drop the points p dominates. */
int search_front_insert(search_front *f, const search_point *p) {
  size_t lo = 0, hi = f->n; /* lo: first point slower than p */
  while (lo < hi) {
    const size_t mid = (lo + hi) / 2;
    if (f->pts[mid].time_ns <= p->time_ns) lo = mid + 1;
    else hi = mid;
  }
  size_t ins = lo;
  if (lo > 0) {
    const search_point *q = &f->pts[lo - 1]; /* the cheapest point not slower than p */
    if (q->energy_nj < p->energy_nj) return 0;
    if (q->energy_nj == p->energy_nj && (q->time_ns < p->time_ns || state_cmp(q->state, p->state) <= 0)) return 0;
    if (q->time_ns == p->time_ns) ins = lo - 1; /* p replaces q */
  }
  size_t end = ins; /* points [ins, end) are dominated by p */
  while (end < f->n && f->pts[end].energy_nj >= p->energy_nj) end++;
  if (end == ins) {
    if (enpu_grow((void **)&f->pts, &f->cap, f->n + 1, sizeof *f->pts) < 0) return ENPU_ERR_NOMEM;
    memmove(&f->pts[ins + 1], &f->pts[ins], (f->n - ins) * sizeof *f->pts);
    f->n++;
  } else {
    memmove(&f->pts[ins + 1], &f->pts[end], (f->n - end) * sizeof *f->pts);
    f->n -= end - ins - 1;
  }
  f->pts[ins] = *p;
  return 0;
}

int search_front_dominates(const search_front *f, double time_ns, double energy_nj) {
  size_t lo = 0, hi = f->n; /* lo: the first point slower than time_ns */
  while (lo < hi) {
    const size_t mid = (lo + hi) / 2;
    if (f->pts[mid].time_ns <= time_ns) lo = mid + 1;
    else hi = mid;
  }
  return lo > 0 && f->pts[lo - 1].energy_nj < energy_nj;
}

static int front_insert_checked(search_front *f, const search_point *p, enpu_err *err) {
  ENPU_RETURN_IF(search_front_insert(f, p) < 0, err, ENPU_ERR_NOMEM, "out of memory (Pareto front)");
  return 0;
}

void search_pareto_free(search_pareto *p) {
  if (!p) return;
  free(p->points);
  p->points = NULL;
  p->count = 0;
}

/* ---------------------------------------------------------------------------------
 * Memo */

typedef struct {
  uint64_t key;
  uint32_t gen;
  double time_ns, energy_nj;
} memo_entry;

struct search_memo {
  memo_entry *slots;
  size_t cap; /* power of two */
  int shift;  /* 64 - log2(cap) */
  uint32_t gen;
};

int search_memo_create(search_memo **out, enpu_err *err) {
  *out = enpu_calloc(1, sizeof **out);
  ENPU_RETURN_IF(!*out, err, ENPU_ERR_NOMEM, "out of memory (search memo)");
  return 0;
}

void search_memo_free(search_memo *m) {
  if (!m) return;
  free(m->slots);
  free(m);
}

/* Make room for `evals` evaluations at load <= 1/2 and start a new operator. */
static int memo_begin(search_memo *m, int64_t evals, enpu_err *err) {
  size_t need = 64;
  int log2 = 6;
  while ((int64_t)need < 2 * evals) need <<= 1, log2++;
  if (need > m->cap) {
    memo_entry *s = enpu_calloc(need, sizeof *s);
    ENPU_RETURN_IF(!s, err, ENPU_ERR_NOMEM, "out of memory (search memo of %zu slots)", need);
    free(m->slots);
    m->slots = s;
    m->cap = need;
    m->shift = 64 - log2;
    m->gen = 0;
  }
  if (++m->gen == 0) { /* generation wrapped: really clear once every 2^32 operators */
    memset(m->slots, 0, m->cap * sizeof *m->slots);
    m->gen = 1;
  }
  return 0;
}

static uint64_t memo_key(const int state[CONFIG_NCOMP]) {
  uint64_t k = 0;
  for (int c = 0; c < CONFIG_NCOMP; c++) k = k << 8 | (uint64_t)state[c];
  return k;
}

/* The slot of `key`: its entry, or the empty slot where it belongs. */
static memo_entry *memo_slot(search_memo *m, uint64_t key) {
  size_t i = (size_t)((key * 0x9E3779B97F4A7C15ull) >> m->shift);
  for (;;) {
    memo_entry *e = &m->slots[i];
    if (e->gen != m->gen || e->key == key) return e;
    i = (i + 1) & (m->cap - 1);
  }
}

typedef struct {
  search_memo *memo;
  const search_domains *dom;
  const search_evaluator *ev;
  void *user;
  int64_t evals;
  search_front *all; /* every evaluation goes in too, when set (the exact search's seed) */
} greedy_run;

int search_memo_known(search_memo *m, const int state[CONFIG_NCOMP]) {
  return m->cap && memo_slot(m, memo_key(state))->gen == m->gen;
}

/* Double the memo when `entries` reach half of it, keeping the current operator's entries
 * (the trim pass can evaluate more plans than memo_begin planned for). */
static int memo_reserve(search_memo *m, int64_t entries, enpu_err *err) {
  if (2 * entries < (int64_t)m->cap) return 0;
  search_memo old = *m;
  m->slots = enpu_calloc(2 * old.cap, sizeof *m->slots);
  ENPU_RETURN_IF(!m->slots, err, (m->slots = old.slots, ENPU_ERR_NOMEM), "out of memory (search memo of %zu slots)",
                 2 * old.cap);
  m->cap = 2 * old.cap;
  m->shift = old.shift - 1;
  m->gen = 1;
  for (size_t i = 0; i < old.cap; i++)
    if (old.slots[i].gen == old.gen) {
      memo_entry *e = memo_slot(m, old.slots[i].key);
      *e = old.slots[i];
      e->gen = 1;
    }
  free(old.slots);
  return 0;
}

/* Evaluate up to GREEDY_BATCH plans (domain states) through the memo: the ones it lacks
 * in one batch (ev->batch, or one at a time), each counted once. */
enum { GREEDY_BATCH = 32 };

static int greedy_eval_many(greedy_run *g, const int (*dstate)[CONFIG_NCOMP], int n, search_point *p,
                            enpu_err *err) {
  int st[GREEDY_BATCH][CONFIG_NCOMP], nmiss = 0;
  double t[GREEDY_BATCH], e[GREEDY_BATCH];
  ENPU_FORWARD(memo_reserve(g->memo, g->evals + n, err));
  for (int i = 0; i < n; i++) {
    search_domains_expand(g->dom, dstate[i], p[i].state);
    int known = memo_slot(g->memo, memo_key(p[i].state))->gen == g->memo->gen;
    for (int k = 0; k < nmiss && !known; k++) known = !memcmp(st[k], p[i].state, sizeof st[k]);
    if (!known) memcpy(st[nmiss++], p[i].state, sizeof st[0]);
  }
  if (nmiss && g->ev->batch) ENPU_FORWARD(g->ev->batch(g->user, nmiss, (const int(*)[CONFIG_NCOMP])st, t, e, err));
  for (int k = 0; k < nmiss && !g->ev->batch; k++) ENPU_FORWARD(g->ev->eval(g->user, st[k], &t[k], &e[k], err));
  for (int k = 0; k < nmiss; k++) {
    *memo_slot(g->memo, memo_key(st[k])) = (memo_entry){memo_key(st[k]), g->memo->gen, t[k], e[k]};
    search_point q = {.time_ns = t[k], .energy_nj = e[k]};
    memcpy(q.state, st[k], sizeof q.state);
    if (g->all) ENPU_FORWARD(front_insert_checked(g->all, &q, err));
  }
  g->evals += nmiss;
  for (int i = 0; i < n; i++) {
    const memo_entry *m = memo_slot(g->memo, memo_key(p[i].state));
    p[i].time_ns = m->time_ns;
    p[i].energy_nj = m->energy_nj;
  }
  return 0;
}

static int greedy_eval(greedy_run *g, const int dstate[CONFIG_NCOMP], search_point *p, enpu_err *err) {
  return greedy_eval_many(g, (const int(*)[CONFIG_NCOMP])dstate, 1, p, err);
}

/* ---------------------------------------------------------------------------------
 * Algorithm 1 */

/* The trim pass (search_domains.trim): Algorithm 1 only ever raises states, so a domain
 * raised early (e.g. SA, to speed up the frontend clock while SRAM was slow) stays high
 * after it stopped mattering. From each Pareto point, a small Pareto local search:
 * - single moves: lower one domain by one state while that keeps the time and does not
 *   cost energy, or hand a domain's state to another one (j takes k's state if higher, k
 *   drops to 1: the frontend clocks at max(SA, VU, SRAM), and an idle VU may clock it
 *   cheaper than an idle SA);
 * - pair moves, once no single move helps: one domain down by a, another up by b
 *   (a, b <= TRIM_PAIR_STEP), accepted when the time holds and energy strictly drops
 *   (a mix two states apart in two domains, which no single move crosses);
 * - repair, once neither helps: the slower but cheaper hand-over that saves the most per
 *   ns lost, raised back to the point's time by a few restricted Algorithm 1 steps
 *   (trim_repair). This is what closes the norm's gap (results/search.md): its VU-bound
 *   kernel wants SA to give the frontend clock to VU *and* VU and SRAM one state higher.
 * TRIM_PAIR_STEP = 1: on the ops of results/search.md §1, steps of 2 or 3 found nothing
 * more and cost 23 % / 60 % more evaluations (norm 1,639 → 2,011 / 2,619).
 * Every accepted plan weakly dominates the one before, and goes into the front. Moves are
 * tried in a fixed order and the first improvement is taken, so the result is
 * deterministic; every plan goes through the memo, so revisits are free. */
enum { TRIM_PAIR_STEP = 1 };

/* The first single move from ds (see op_trim) that improves cur; 1 if one was taken.
 * Otherwise `slow` gets the hand-over, cheaper than cur but slower, that saves the most
 * energy per ns lost (cur itself when there is none): trim_repair's starting plan. */
static int trim_single(greedy_run *g, int ds[CONFIG_NCOMP], search_point *cur, int slow_ds[CONFIG_NCOMP],
                       search_point *slow, enpu_err *err) {
  const int nd = g->dom->ndomains;
  *slow = *cur;
  double best_rate = 0;
  for (int mv = 0; mv < nd * nd; mv++) {
    const int k = mv % nd, j = mv / nd; /* j == k: lower k by one */
    if (ds[k] <= 1 || (j != k && ds[j] >= ds[k])) continue;
    int next[CONFIG_NCOMP];
    memcpy(next, ds, sizeof next);
    if (j == k) next[k]--;
    else next[j] = ds[k], next[k] = 1;
    search_point cand;
    ENPU_FORWARD(greedy_eval(g, next, &cand, err));
    /* A one-state lowering at equal energy is accepted too: idle units inside one
     * voltage band cost the same, and the saving waits at the band's bottom. Every
     * acceptance lowers the state sum or strictly lowers energy, so the search ends. */
    if (cand.time_ns <= cur->time_ns &&
        (j == k ? cand.energy_nj <= cur->energy_nj : cand.energy_nj < cur->energy_nj)) {
      *cur = cand;
      memcpy(ds, next, sizeof next);
      return 1;
    }
    /* Rejected with less energy means slower: keep the one saving most per ns lost. */
    const double rate = (cur->energy_nj - cand.energy_nj) / (cand.time_ns - cur->time_ns);
    if (j != k && cand.energy_nj < cur->energy_nj && rate > best_rate)
      best_rate = rate, *slow = cand, memcpy(slow_ds, next, sizeof next);
  }
  return 0;
}

/* The first pair move from ds (k down by a, j up by b) that improves cur; 1 if taken. */
static int trim_pair(greedy_run *g, int ds[CONFIG_NCOMP], search_point *cur, enpu_err *err) {
  const int nd = g->dom->ndomains, peak = g->dom->peak_state;
  for (int k = 0; k < nd; k++)
    for (int j = 0; j < nd; j++)
      for (int a = 1; j != k && a <= TRIM_PAIR_STEP && ds[k] - a >= 1; a++)
        for (int b = 1; b <= TRIM_PAIR_STEP && ds[j] + b <= peak; b++) {
          int next[CONFIG_NCOMP];
          memcpy(next, ds, sizeof next);
          next[k] -= a;
          next[j] += b;
          search_point cand;
          ENPU_FORWARD(greedy_eval(g, next, &cand, err));
          if (cand.time_ns <= cur->time_ns && cand.energy_nj < cur->energy_nj) {
            *cur = cand;
            memcpy(ds, next, sizeof next);
            return 1;
          }
        }
  return 0;
}

/* Repair a slower but cheaper hand-over (slow, slow_ds) back to cur's time: up to
 * TRIM_REPAIR_STEPS steps of Algorithm 1 restricted to raising one or two domains by one
 * state (best ΔE/|ΔT| among faster candidates), accepted as soon as a plan is as fast as
 * cur and cheaper. It reaches what needs three domains at once, e.g. the norm's
 * (31,25,11,·,·) → (1,32,12,·,·): SA hands the frontend clock to VU, then VU and SRAM
 * each go one state higher. 1 if taken, 0 if not. */
enum { TRIM_REPAIR_STEPS = 3 };

static int trim_repair(greedy_run *g, int ds[CONFIG_NCOMP], search_point *cur, const int slow_ds[CONFIG_NCOMP],
                       const search_point *slow, enpu_err *err) {
  const int nd = g->dom->ndomains, peak = g->dom->peak_state;
  int at[CONFIG_NCOMP];
  memcpy(at, slow_ds, sizeof at);
  search_point pa = *slow;
  for (int step = 0; step < TRIM_REPAIR_STEPS && pa.energy_nj < cur->energy_nj; step++) {
    int best[CONFIG_NCOMP], found = 0;
    double best_grad = 0;
    search_point bp = pa;
    for (int k = 0; k < nd; k++)
      for (int j = k; j < nd; j++) { /* j == k: raise k alone */
        if (at[k] >= peak || at[j] >= peak) continue;
        int next[CONFIG_NCOMP];
        memcpy(next, at, sizeof next);
        next[k]++;
        if (j != k) next[j]++;
        search_point cand;
        ENPU_FORWARD(greedy_eval(g, next, &cand, err));
        if (cand.time_ns <= cur->time_ns && cand.energy_nj < cur->energy_nj) {
          *cur = cand;
          memcpy(ds, next, sizeof next);
          return 1;
        }
        const double dt = cand.time_ns - pa.time_ns;
        if (dt >= 0) continue;
        const double grad = (cand.energy_nj - pa.energy_nj) / -dt;
        if (!found || grad < best_grad) found = 1, best_grad = grad, bp = cand, memcpy(best, next, sizeof best);
      }
    if (!found) break;
    pa = bp;
    memcpy(at, best, sizeof at);
  }
  return 0;
}

static int op_trim(greedy_run *g, search_front *f, enpu_err *err) {
  const search_domains *dom = g->dom;
  const size_t n = f->n;
  search_point *start = enpu_calloc(n ? n : 1, sizeof *start);
  ENPU_RETURN_IF(!start, err, ENPU_ERR_NOMEM, "out of memory (trim)");
  memcpy(start, f->pts, n * sizeof *start);
  int rc = 0;
  for (size_t i = 0; i < n && rc == 0; i++) {
    search_point cur = start[i];
    int ds[CONFIG_NCOMP] = {0};
    for (int c = 0; c < CONFIG_NCOMP; c++)
      if (dom->domain_of[c] >= 0) ds[dom->domain_of[c]] = cur.state[c];
    for (;;) {
      int slow_ds[CONFIG_NCOMP];
      search_point slow;
      int moved = trim_single(g, ds, &cur, slow_ds, &slow, err);
      if (moved == 0) moved = trim_pair(g, ds, &cur, err);
      if (moved == 0 && slow.energy_nj < cur.energy_nj) moved = trim_repair(g, ds, &cur, slow_ds, &slow, err);
      if (moved <= 0) {
        rc = moved;
        break;
      }
      if ((rc = front_insert_checked(f, &cur, err)) < 0) break;
    }
  }
  free(start);
  return rc;
}

/* Algorithm 1 ends its ascent at the first plan as fast as it gets, with every domain it
 * raised on the way still raised; from that fastest point, the trim pass's single moves
 * (lower one domain, or hand its state to another) while the time holds and the energy
 * does not grow. Without it an epoch of ops at one setting (enpu-ms) can find a fastest
 * plan cheaper than its ops' own fastest points, which per-operator control must
 * never miss (finer control can mimic coarser). Cheap: a few single moves per op. */
static int descend_fastest(greedy_run *g, search_front *f, enpu_err *err) {
  if (f->n == 0) return 0;
  search_point cur = f->pts[0];
  int ds[CONFIG_NCOMP] = {0};
  for (int c = 0; c < CONFIG_NCOMP; c++)
    if (g->dom->domain_of[c] >= 0) ds[g->dom->domain_of[c]] = cur.state[c];
  for (;;) {
    int slow_ds[CONFIG_NCOMP];
    search_point slow;
    const int moved = trim_single(g, ds, &cur, slow_ds, &slow, err);
    if (moved <= 0) return moved;
    ENPU_FORWARD(front_insert_checked(f, &cur, err));
  }
}

int search_op_greedy(search_memo *memo, const search_domains *dom, const search_evaluator *ev, void *user,
                     search_front *f, int every_eval, search_pareto *out, enpu_err *err) {
  const int d = dom->ndomains, peak = dom->peak_state;
  /* Worst case: one domain raised per step, 2^d - 1 candidates each, + start and peak. */
  ENPU_FORWARD(memo_begin(memo, (int64_t)d * peak * ((1 << d) - 1) + 2, err));
  greedy_run g = {memo, dom, ev, user, 0, every_eval ? f : NULL};
  int cur[CONFIG_NCOMP], top[CONFIG_NCOMP];
  for (int k = 0; k < CONFIG_NCOMP; k++) cur[k] = 1, top[k] = peak;
  search_point pc;
  ENPU_FORWARD(greedy_eval(&g, cur, &pc, err));
  ENPU_FORWARD(front_insert_checked(f, &pc, err));
  for (;;) {
    unsigned below = 0; /* domains that can still be raised */
    for (int k = 0; k < d; k++)
      if (cur[k] < peak) below |= 1u << k;
    if (!below) break;
    double best_grad = 0;
    int best_mask = 0, nc = 0, masks[GREEDY_BATCH], cand[GREEDY_BATCH][CONFIG_NCOMP];
    search_point best = pc, pts[GREEDY_BATCH];
    for (unsigned mask = 1; mask < (1u << d); mask++) { /* the candidates, one batch */
      if (mask & ~below) continue;
      masks[nc] = (int)mask;
      for (int k = 0; k < CONFIG_NCOMP; k++) cand[nc][k] = cur[k] + (k < d && (mask >> k & 1u));
      nc++;
    }
    ENPU_FORWARD(greedy_eval_many(&g, (const int(*)[CONFIG_NCOMP])cand, nc, pts, err));
    for (int i = 0; i < nc; i++) {
      const unsigned mask = (unsigned)masks[i];
      const search_point pn = pts[i];
      const double dt = pn.time_ns - pc.time_ns, de = pn.energy_nj - pc.energy_nj;
      if (dt >= 0) continue;
      const double grad = de / -dt;
      if (!best_mask || grad < best_grad) best_grad = grad, best_mask = (int)mask, best = pn;
    }
    if (!best_mask) break;
    for (int k = 0; k < d; k++) cur[k] += best_mask >> k & 1;
    pc = best;
    out->steps++;
    ENPU_FORWARD(front_insert_checked(f, &pc, err));
  }
  search_point pp; /* the all-peak plan: a memo hit when the descent got there */
  ENPU_FORWARD(greedy_eval(&g, top, &pp, err));
  ENPU_FORWARD(front_insert_checked(f, &pp, err));
  if (dom->trim) ENPU_FORWARD(op_trim(&g, f, err));
  else ENPU_FORWARD(descend_fastest(&g, f, err));
  out->evals = g.evals;
  return 0;
}

/* ---------------------------------------------------------------------------------
 * Merging and comparing Pareto sets */

int search_pareto_merge(const search_pareto *sets, int n, search_pareto *out, enpu_err *err) {
  memset(out, 0, sizeof *out);
  search_front f = {0};
  int rc = 0;
  for (int k = 0; k < n && rc == 0; k++) {
    out->evals += sets[k].evals;
    out->steps += sets[k].steps;
    for (int i = 0; i < sets[k].count && rc == 0; i++) rc = front_insert_checked(&f, &sets[k].points[i], err);
  }
  if (rc < 0) {
    free(f.pts);
    memset(out, 0, sizeof *out);
    return rc;
  }
  out->points = f.pts;
  out->count = (int)f.n;
  return 0;
}

/* ---------------------------------------------------------------------------------
 * Exact vs approximate Pareto sets */

/* Area dominated by a Pareto set (time-sorted, energy decreasing) up to (ref_t, ref_e). */
static double hypervolume(const search_pareto *p, double ref_t, double ref_e) {
  double hv = 0;
  for (int i = 0; i < p->count; i++) {
    const double t_next = i + 1 < p->count ? p->points[i + 1].time_ns : ref_t;
    hv += (t_next - p->points[i].time_ns) * (ref_e - p->points[i].energy_nj);
  }
  return hv;
}

int search_pareto_gap(const search_pareto *exact, const search_pareto *approx, double *gap, search_gap *out,
                      enpu_err *err) {
  ENPU_RETURN_IF(exact->count < 1 || approx->count < 1, err, ENPU_ERR_INVALID,
                 "empty Pareto set (exact %d points, approximate %d)", exact->count, approx->count);
  *out = (search_gap){0};
  double ref_t = 0, ref_e = 0, sum = 0;
  int j = 0; /* exact points [0, j) are not slower than the current approximate point */
  for (int i = 0; i < approx->count; i++) {
    const search_point *a = &approx->points[i];
    while (j < exact->count && exact->points[j].time_ns <= a->time_ns) j++;
    ENPU_RETURN_IF(j == 0, err, ENPU_ERR_INVALID, "approximate point %d (%.3f ns) is faster than every exact point",
                   i, a->time_ns);
    const double g = a->energy_nj / exact->points[j - 1].energy_nj - 1.0;
    if (gap) gap[i] = g;
    sum += g;
    if (i == 0 || g > out->max_gap) out->max_gap = g, out->worst = i;
  }
  out->mean_gap = sum / approx->count;
  const search_pareto *sets[2] = {exact, approx};
  for (int k = 0; k < 2; k++)
    for (int i = 0; i < sets[k]->count; i++) {
      ref_t = fmax(ref_t, 1.1 * sets[k]->points[i].time_ns);
      ref_e = fmax(ref_e, 1.1 * sets[k]->points[i].energy_nj);
    }
  const double hv_exact = hypervolume(exact, ref_t, ref_e);
  out->hv_ratio = hv_exact > 0 ? hypervolume(approx, ref_t, ref_e) / hv_exact : 1.0;
  return 0;
}
