/* search_exact.c — the op-level searches that find the exact Pareto set: the exhaustive
 * enumeration and the branch and bound that gets the same set from far fewer plans; and
 * the op level's entry (search_op_search), which runs one of them or Algorithm 1
 * (search_op.c) by the domains' method.
 *
 * Both split their work into numbered jobs (exhaustive: runs of consecutive plans;
 * exact: the SEARCH_EXACT_PARTS parts) that threads take round robin, each thread into
 * its own front; the fronts are merged at the end. The front's tie rule makes the set
 * independent of the order and of the thread count, and evaluations are counted per
 * job, so they are too.
 *
 * Exhaustive: combination i of the d searched domains has digit k = the state − 1 of
 * domain d − 1 − k in base peak_state (the last domain fastest: HBM and ICI for the
 * five-domain search), so a run of peak² plans shares one (SA, VU, SRAM) triple and its
 * core kernel (cost_eval_batch).
 *
 * Exact (branch and bound): a box of plans (a state range per searched domain) is
 * dropped when a point already found is no slower than the box's time bound and
 * strictly cheaper than its energy bound (search_bound_fn): every plan of the box is then
 * dominated by that point, so none is in the exact set (dominance is transitive, and a
 * pruned plan is never needed to drop another: only evaluated points do that). Other
 * boxes are halved along their widest domain (the lowest on a tie), the upper half
 * searched first, down to single plans, which are bounded once more and then evaluated
 * in batches. The front starts from Algorithm 1's set (the seed). Every plan the
 * exhaustive search would keep is therefore evaluated and kept, and every other plan
 * evaluated is dropped by the front: the result is the exhaustive set, point for point. */
#include <limits.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "search_internal.h"

enum { EXH_RUN = 1024, EXACT_BATCH = 64 };

typedef struct job_set job_set;
typedef int (*job_fn)(const job_set *js, int job, void *user, search_front *f, int64_t *evals, enpu_err *err);

struct job_set {
  const search_domains *dom;
  const search_evaluator *ev;
  int part; /* exact: the one part to search, or -1 for all */
  job_fn run;
};

typedef struct {
  const job_set *js;
  void *user;
  int first, stride, njobs;
  atomic_int *stop;
  search_front f;
  int64_t evals;
  int rc;
  enpu_err err;
} job_thread;

static void *job_thread_run(void *arg) {
  job_thread *t = arg;
  for (int j = t->first; j < t->njobs && t->rc == 0; j += t->stride) {
    if (atomic_load_explicit(t->stop, memory_order_relaxed)) break;
    t->rc = t->js->run(t->js, j, t->user, &t->f, &t->evals, &t->err);
    if (t->rc < 0) atomic_store(t->stop, 1);
  }
  return NULL;
}

/* Run jobs 0..njobs-1 over nthreads threads (users[t] for thread t) into f. */
static int run_jobs(const job_set *js, int njobs, void *const *users, int nthreads, search_front *f,
                    search_pareto *out, enpu_err *err) {
  if (nthreads > njobs) nthreads = njobs > 0 ? njobs : 1;
  job_thread *th = enpu_calloc((size_t)nthreads, sizeof *th);
  pthread_t *tids = enpu_calloc((size_t)nthreads, sizeof *tids);
  atomic_int stop = 0;
  int rc = th && tids ? 0 : enpu_errorf(err, ENPU_ERR_NOMEM, "out of memory (search threads)");
  int started = 0;
  for (int t = 0; rc == 0 && t < nthreads; t++) {
    th[t] = (job_thread){.js = js, .user = users[t], .first = t, .stride = nthreads, .njobs = njobs, .stop = &stop};
    if (t == 0) continue; /* thread 0's share runs on the caller's thread */
    if (pthread_create(&tids[t], NULL, job_thread_run, &th[t]) != 0) {
      atomic_store(&stop, 1);
      rc = enpu_errorf(err, ENPU_ERR_NOMEM, "cannot start search thread %d", t);
      break;
    }
    started = t;
  }
  if (rc == 0) job_thread_run(&th[0]);
  for (int t = 1; t <= started; t++) pthread_join(tids[t], NULL);
  for (int t = 0; t < nthreads && rc == 0; t++) {
    out->evals += th[t].evals;
    if (th[t].rc < 0) {
      if (err) *err = th[t].err;
      rc = th[t].rc;
    }
    for (size_t i = 0; rc == 0 && i < th[t].f.n; i++)
      if (search_front_insert(f, &th[t].f.pts[i]) < 0)
        rc = enpu_errorf(err, ENPU_ERR_NOMEM, "out of memory (Pareto front)");
  }
  for (int t = 0; th && t < nthreads; t++) free(th[t].f.pts);
  free(th);
  free(tids);
  return rc;
}

/* Evaluate n plans (component states) and insert them into f. */
static int eval_insert(const search_evaluator *ev, void *user, int n, const int (*st)[CONFIG_NCOMP],
                       search_front *f, enpu_err *err) {
  double t[EXH_RUN], e[EXH_RUN];
  if (ev->batch) ENPU_FORWARD(ev->batch(user, n, st, t, e, err));
  for (int i = 0; i < n && !ev->batch; i++) ENPU_FORWARD(ev->eval(user, st[i], &t[i], &e[i], err));
  for (int i = 0; i < n; i++) {
    search_point p = {.time_ns = t[i], .energy_nj = e[i]};
    memcpy(p.state, st[i], sizeof p.state);
    ENPU_RETURN_IF(search_front_insert(f, &p) < 0, err, ENPU_ERR_NOMEM, "out of memory (Pareto front)");
  }
  return 0;
}

/* ---------------------------------------------------------------------------------
 * Exhaustive */

static int64_t plan_count(const search_domains *dom) {
  int64_t total = 1;
  for (int k = 0; k < dom->ndomains; k++) total *= dom->peak_state;
  return total;
}

static int exh_job(const job_set *js, int job, void *user, search_front *f, int64_t *evals, enpu_err *err) {
  const search_domains *dom = js->dom;
  const int d = dom->ndomains, peak = dom->peak_state;
  const int64_t total = plan_count(dom), first = (int64_t)job * EXH_RUN;
  const int n = (int)(total - first < EXH_RUN ? total - first : EXH_RUN);
  int(*st)[CONFIG_NCOMP] = malloc((size_t)n * sizeof *st);
  ENPU_RETURN_IF(!st, err, ENPU_ERR_NOMEM, "out of memory (exhaustive search)");
  for (int i = 0; i < n; i++) {
    int dstate[CONFIG_NCOMP] = {0};
    int64_t rest = first + i;
    for (int k = d - 1; k >= 0; k--) dstate[k] = (int)(rest % peak) + 1, rest /= peak;
    search_domains_expand(dom, dstate, st[i]);
  }
  const int rc = eval_insert(js->ev, user, n, (const int(*)[CONFIG_NCOMP])st, f, err);
  free(st);
  if (rc == 0) *evals += n;
  return rc;
}

int search_op_exhaustive(const search_domains *dom, const search_evaluator *ev, void *const *users, int nthreads,
                         search_front *f, search_pareto *out, enpu_err *err) {
  const int64_t total = plan_count(dom);
  ENPU_RETURN_IF((total + EXH_RUN - 1) / EXH_RUN > INT_MAX, err, ENPU_ERR_RANGE, "exhaustive search of %lld plans",
                 (long long)total);
  const job_set js = {dom, ev, -1, exh_job};
  return run_jobs(&js, (int)((total + EXH_RUN - 1) / EXH_RUN), users, nthreads, f, out, err);
}

/* ---------------------------------------------------------------------------------
 * Exact: branch and bound */

typedef struct {
  uint8_t lo[CONFIG_NCOMP], hi[CONFIG_NCOMP]; /* searched domain k: states lo[k]..hi[k] */
} xbox;

typedef struct {
  const job_set *js;
  void *user;
  search_memo *seed; /* Algorithm 1's evaluations: plans already through the front */
  search_front *f;
  xbox *stack;
  size_t nstack, cap;
  int pend[EXACT_BATCH][CONFIG_NCOMP];
  int npend;
  int64_t evals;
} xrun;

static int widest(const xbox *b, int d) {
  int w = 0;
  for (int k = 1; k < d; k++)
    if (b->hi[k] - b->lo[k] > b->hi[w] - b->lo[w]) w = k;
  return w;
}

/* Halve b along its widest domain: *b keeps the lower half, *up gets the upper one. */
static void halve(xbox *b, xbox *up, int d) {
  const int w = widest(b, d), mid = (b->lo[w] + b->hi[w]) / 2;
  *up = *b;
  b->hi[w] = (uint8_t)mid;
  up->lo[w] = (uint8_t)(mid + 1);
}

/* The box of part `part`: the root halved SEARCH_EXACT_PARTS = 2^3 ways; 0 when empty (a
 * domain too narrow to halve). */
static int part_box(const search_domains *dom, int part, xbox *b) {
  const int d = dom->ndomains;
  for (int k = 0; k < d; k++) b->lo[k] = 1, b->hi[k] = (uint8_t)dom->peak_state;
  for (int bit = SEARCH_EXACT_PARTS / 2; bit >= 1; bit /= 2) {
    if (b->hi[widest(b, d)] == b->lo[widest(b, d)]) return (part & (2 * bit - 1)) == 0;
    xbox up;
    halve(b, &up, d);
    if (part & bit) *b = up;
  }
  return 1;
}

static void comp_box(const search_domains *dom, const xbox *b, int lo[CONFIG_NCOMP], int hi[CONFIG_NCOMP]) {
  int dlo[CONFIG_NCOMP] = {0}, dhi[CONFIG_NCOMP] = {0};
  for (int k = 0; k < dom->ndomains; k++) dlo[k] = b->lo[k], dhi[k] = b->hi[k];
  search_domains_expand(dom, dlo, lo);
  search_domains_expand(dom, dhi, hi);
}

static int flush(xrun *x, enpu_err *err) {
  const int n = x->npend;
  x->npend = 0;
  x->evals += n;
  return n ? eval_insert(x->js->ev, x->user, n, (const int(*)[CONFIG_NCOMP])x->pend, x->f, err) : 0;
}

static int push_box(xrun *x, const xbox *b, enpu_err *err) {
  ENPU_RETURN_IF(enpu_grow((void **)&x->stack, &x->cap, x->nstack + 1, sizeof *x->stack) < 0, err, ENPU_ERR_NOMEM,
                 "out of memory (exact search)");
  x->stack[x->nstack++] = *b;
  return 0;
}

/* One box off the stack: pruned, split, or (a single plan) queued for evaluation. */
static int visit(xrun *x, const xbox *b, enpu_err *err) {
  const search_domains *dom = x->js->dom;
  int lo[CONFIG_NCOMP], hi[CONFIG_NCOMP];
  comp_box(dom, b, lo, hi);
  const int single = !memcmp(lo, hi, sizeof lo);
  if (single && search_memo_known(x->seed, lo)) return 0;
  double t_lb, e_lb;
  ENPU_FORWARD(x->js->ev->bound(x->user, lo, hi, &t_lb, &e_lb, err));
  if (search_front_dominates(x->f, t_lb, e_lb)) return 0;
  if (!single) {
    xbox low = *b, up;
    halve(&low, &up, dom->ndomains);
    ENPU_FORWARD(push_box(x, &low, err));
    return push_box(x, &up, err);
  }
  memcpy(x->pend[x->npend++], lo, sizeof lo);
  return x->npend == EXACT_BATCH ? flush(x, err) : 0;
}

static int exact_job(const job_set *js, int job, void *user, search_front *f, int64_t *evals, enpu_err *err) {
  const int part = js->part >= 0 ? js->part : job;
  xbox root;
  if (!part_box(js->dom, part, &root)) return 0;
  search_front own = {0}; /* this part's alone, so its pruning is the same on any thread */
  xrun x = {.js = js, .user = user, .f = &own};
  search_pareto seeded = {0};
  int rc = search_memo_create(&x.seed, err);
  if (rc == 0) rc = search_op_greedy(x.seed, js->dom, js->ev, user, &own, 1, &seeded, err);
  x.evals = seeded.evals;
  if (rc == 0) rc = push_box(&x, &root, err);
  while (rc == 0 && x.nstack > 0) {
    const xbox b = x.stack[--x.nstack];
    rc = visit(&x, &b, err);
  }
  if (rc == 0) rc = flush(&x, err);
  for (size_t i = 0; rc == 0 && i < own.n; i++)
    if (search_front_insert(f, &own.pts[i]) < 0)
      rc = enpu_errorf(err, ENPU_ERR_NOMEM, "out of memory (Pareto front)");
  free(own.pts);
  *evals += x.evals;
  free(x.stack);
  search_memo_free(x.seed);
  return rc;
}

int search_op_exact(const search_domains *dom, const search_evaluator *ev, void *const *users, int nthreads,
                    int part, search_front *f, search_pareto *out, enpu_err *err) {
  ENPU_RETURN_IF(dom->ndomains < 1 || dom->peak_state > UINT8_MAX, err, ENPU_ERR_INVALID,
                 "exact search: %d domains of %d states", dom->ndomains, dom->peak_state);
  const job_set js = {dom, ev, part, exact_job};
  return run_jobs(&js, part >= 0 ? 1 : SEARCH_EXACT_PARTS, users, nthreads, f, out, err);
}

/* ---------------------------------------------------------------------------------
 * Entry */

int search_op_search(search_memo *memo, const search_domains *dom, const search_evaluator *ev, void *const *users,
                     int nthreads, int part, search_pareto *out, enpu_err *err) {
  memset(out, 0, sizeof *out);
  ENPU_FORWARD(search_domains_validate(dom, err));
  ENPU_RETURN_IF(nthreads < 1, err, ENPU_ERR_INVALID, "thread count %d < 1", nthreads);
  ENPU_RETURN_IF(part >= SEARCH_EXACT_PARTS, err, ENPU_ERR_INVALID, "exact search part %d outside 0..%d", part,
                 SEARCH_EXACT_PARTS - 1);
  search_front f = {0};
  int rc;
  if (dom->method == SEARCH_OP_GREEDY && dom->ndomains > 0)
    rc = search_op_greedy(memo, dom, ev, users[0], &f, 0, out, err);
  else if (dom->method == SEARCH_OP_EXACT && ev->bound && dom->ndomains > 0)
    rc = search_op_exact(dom, ev, users, nthreads, part, &f, out, err);
  else rc = search_op_exhaustive(dom, ev, users, nthreads, &f, out, err);
  if (rc < 0 || f.n > INT_MAX) {
    free(f.pts);
    memset(out, 0, sizeof *out);
    return rc < 0 ? rc : enpu_errorf(err, ENPU_ERR_RANGE, "Pareto set of %zu points", f.n);
  }
  out->points = f.pts;
  out->count = (int)f.n;
  return 0;
}

int search_op_pareto(search_memo *memo, const search_domains *dom, search_eval_fn eval, void *const *users,
                     int nthreads, search_pareto *out, enpu_err *err) {
  const search_evaluator ev = {eval, NULL, NULL};
  return search_op_search(memo, dom, &ev, users, nthreads, -1, out, err);
}
