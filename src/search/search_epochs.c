/* search_epochs.c — the epochs of dvfs-c-ms and enpu-ms (§4.6): consecutive operators
 * merged into regions of at least epoch_ns of NoDVFS time, each run at one V/f setting.
 *
 * The merge follows the paper's artifact (NeuSim at commit 14f47dd,
 * `neusim/npusim/frontend/dvfs_region_merge.py`) on the real operator order: every op
 * instance is labelled by what bounds it at peak (enpu-ms: the component with the
 * largest own time, SA, VU, SRAM, HBM, ICI in that order on a tie; dvfs-c-ms: compute
 * (SA, VU or SRAM) or not); maximal runs of one label are the first regions; then, while
 * some region is shorter than epoch_ns, the shortest (the earliest of equals) merges
 * into its shorter neighbour (the left one of equals). Two departures from the artifact,
 * both so that an epoch is the paper's "≥ 5 milliseconds" on the chip (one transition
 * per epoch boundary): the artifact merges its deduplicated per-layer rows weighted by
 * their counts, here every layer's instances are merged in time; and the artifact then
 * relabels a merged region and joins every neighbour of its label, which on the real
 * operator order joins whole runs of layers with one bottleneck (Llama3-70B prefill
 * 4096: one 438 ms region for the whole pass) — here merging stops at epoch_ns.
 *
 * Invariants: regions stay contiguous and cover the pass; the heap holds every live
 * region's current (length, start) at least once (stale entries are skipped by their
 * version); epochs with the same member ops in the same order are one unit. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "search_internal.h"

typedef struct {
  int64_t first, last; /* op instances [first, last] */
  int prev, next;      /* neighbouring regions, -1 at the ends */
  int label, version, alive;
  double len_ns;
} region;

typedef struct {
  double len_ns;
  int64_t first;
  int id, version;
} heap_entry;

typedef struct {
  region *r;
  heap_entry *heap;
  size_t nheap;
} merge_state;

static int heap_less(const void *pa, const void *pb) {
  const heap_entry *a = pa, *b = pb;
  return a->len_ns < b->len_ns || (a->len_ns == b->len_ns && a->first < b->first);
}
_Static_assert(sizeof(heap_entry) <= ENPU_HEAP_MAX_ELEM, "an entry fits the heap's element");

static void region_heap_push(merge_state *m, int id) {
  const heap_entry e = {m->r[id].len_ns, m->r[id].first, id, m->r[id].version};
  enpu_heap_push(m->heap, &m->nheap, sizeof e, &e, heap_less);
}

static heap_entry region_heap_pop(merge_state *m) {
  heap_entry top;
  enpu_heap_pop(m->heap, &m->nheap, sizeof top, &top, heap_less);
  return top;
}

/* Merge region b (the right neighbour of a) into a; b dies. */
static void join(merge_state *m, int a, int b) {
  region *ra = &m->r[a], *rb = &m->r[b];
  ra->last = rb->last;
  ra->len_ns += rb->len_ns;
  ra->next = rb->next;
  if (rb->next >= 0) m->r[rb->next].prev = a;
  rb->alive = 0;
  ra->version++;
}

/* Merge the short region `id` into its shorter neighbour. */
static void merge_short(merge_state *m, int id) {
  const region *r = &m->r[id];
  int left = r->prev, right = r->next, into;
  if (left < 0) into = right;
  else if (right < 0) into = left;
  else into = m->r[left].len_ns <= m->r[right].len_ns ? left : right;
  const int a = into == left ? left : id;
  join(m, a, into == left ? id : right);
  region_heap_push(m, a);
}

/* The label of every graph op at peak and its NoDVFS time. */
static int op_labels(search_ctx *s, cost_ctx *cost, const graph *g, int binary, int *label, double *t_ns,
                     enpu_err *err) {
  cost_pipeline nodvfs;
  cost_pipeline_nodvfs(&nodvfs, s->fixed);
  cost_plan peak;
  for (int c = 0; c < CONFIG_NCOMP; c++) peak.state[c] = s->chip->freq_states;
  for (int i = 0; i < graph_op_count(g); i++) {
    cost_result r;
    ENPU_FORWARD(cost_eval(cost, graph_op_at(g, i), &peak, &nodvfs, &r, err));
    int best = 0;
    for (int c = 1; c < CONFIG_NCOMP; c++)
      if (r.own_ns[c] > r.own_ns[best]) best = c;
    label[i] = binary ? best > CONFIG_SRAM : best;
    t_ns[i] = r.time_ns;
  }
  return 0;
}

/* The first regions: maximal runs of one label, in execution order (op_of). */
static int first_regions(merge_state *m, const int *op_of, int64_t n, const int *label, const double *t_ns) {
  int nr = 0;
  for (int64_t x = 0; x < n; x++) {
    const int i = op_of[x], l = label[i];
    if (nr == 0 || m->r[nr - 1].label != l) {
      m->r[nr] = (region){.first = x, .prev = nr - 1, .next = -1, .label = l, .alive = 1};
      if (nr > 0) m->r[nr - 1].next = nr;
      nr++;
    }
    region *r = &m->r[nr - 1];
    r->last = x;
    r->len_ns += t_ns[i];
  }
  return nr;
}

/* Regions of at least epoch_ns (or the whole pass); *first_region the leftmost. */
static int merge_regions(merge_state *m, int nr, double epoch_ns) {
  for (int id = 0; id < nr; id++) region_heap_push(m, id);
  while (m->nheap > 0) {
    const heap_entry e = region_heap_pop(m);
    const region *r = &m->r[e.id];
    if (!r->alive || r->version != e.version) continue;
    if (r->len_ns >= epoch_ns || (r->prev < 0 && r->next < 0)) break;
    merge_short(m, e.id);
  }
  int first = 0;
  while (!m->r[first].alive) first++;
  while (m->r[first].prev >= 0) first = m->r[first].prev;
  return first;
}

static uint64_t epoch_signature(const graph *g, const int *op_of, const region *r) {
  enpu_hasher h;
  enpu_hasher_init(&h, 0x65706f6368u);
  for (int64_t x = r->first; x <= r->last; x++) enpu_hasher_i64(&h, (int64_t)graph_op_at(g, op_of[x])->signature);
  return enpu_hasher_digest(&h);
}

/* Whether two regions run the same ops in the same order. */
static int same_ops(const graph *g, const int *op_of, const region *a, const region *b) {
  if (a->last - a->first != b->last - b->first) return 0;
  for (int64_t k = 0; k <= a->last - a->first; k++)
    if (graph_op_at(g, op_of[a->first + k])->signature != graph_op_at(g, op_of[b->first + k])->signature) return 0;
  return 1;
}

/* Units from the epochs: distinct ones, their members (graph op, instances) and walk
 * numbers. */
static int epoch_units(const graph *g, const int *op_of, int64_t n, const region *r, const int *order, int ne,
                       search_units **out, enpu_err *err) {
  int *unit_of = enpu_calloc((size_t)ne + 1, sizeof *unit_of);
  int *rep = enpu_calloc((size_t)ne + 1, sizeof *rep); /* per unit: a representative epoch */
  ENPU_RETURN_IF(!unit_of || !rep, err, (free(unit_of), free(rep), ENPU_ERR_NOMEM), "out of memory (epochs)");
  int nu = 0, members = 0;
  for (int e = 0; e < ne; e++) {
    int u = 0;
    while (u < nu && !same_ops(g, op_of, &r[order[rep[u]]], &r[order[e]])) u++;
    if (u == nu) rep[nu++] = e;
    unit_of[e] = u;
  }
  for (int u = 0; u < nu; u++) members += (int)(r[order[rep[u]]].last - r[order[rep[u]]].first + 1);
  search_units *un = NULL;
  int rc = search_units_alloc(nu, members, n, &un, err);
  for (int u = 0, mfirst = 0; rc == 0 && u < nu; u++) {
    const region *e = &r[order[rep[u]]];
    search_unit *su = &un->unit[u];
    *su = (search_unit){.signature = epoch_signature(g, op_of, e),
                        .kind = SEARCH_UNIT_EPOCH,
                        .op = op_of[e->first],
                        .member_first = mfirst};
    snprintf(su->name, sizeof su->name, "epoch:%.40s+%lld", graph_op_at(g, op_of[e->first])->name,
             (long long)(e->last - e->first));
    for (int64_t x = e->first; x <= e->last; x++) { /* members: each graph op once */
      int k = su->member_first;
      while (k < su->member_first + su->member_count && un->member_op[k] != op_of[x]) k++;
      if (k == su->member_first + su->member_count) un->member_op[k] = op_of[x], su->member_count++;
      un->member_count[k]++;
    }
    mfirst += su->member_count;
  }
  for (int e = 0; rc == 0 && e < ne; e++) {
    un->unit[unit_of[e]].multiplicity++;
    for (int64_t x = r[order[e]].first; x <= r[order[e]].last; x++)
      un->walk_of[x] = unit_of[e] + (x == r[order[e]].first ? 0 : nu);
  }
  if (rc == 0) rc = search_units_finish(un, err);
  free(unit_of);
  free(rep);
  if (rc < 0) search_units_free(un);
  else *out = un;
  return rc;
}

int search_units_of_epochs(search_ctx *s, cost_ctx *cost, const graph *g, config_policy policy, double epoch_ns,
                           search_units **out, enpu_err *err) {
  int64_t n;
  ENPU_FORWARD(search_req_check_graph(g, &n, err));
  const int nops = graph_op_count(g);
  merge_state m = {0};
  const int binary = power_policy_of(policy)->ops == POWER_OPS_COMPUTE; /* one compute domain */
  int *label = enpu_calloc((size_t)nops + 1, sizeof *label);
  double *t_ns = enpu_calloc((size_t)nops + 1, sizeof *t_ns);
  int *op_of = enpu_calloc((size_t)n + 1, sizeof *op_of);
  int *order = enpu_calloc((size_t)n + 1, sizeof *order);
  m.r = enpu_calloc((size_t)n + 1, sizeof *m.r);
  m.heap = enpu_calloc(2 * (size_t)n + 2, sizeof *m.heap); /* one push per region and merge */
  int rc = label && t_ns && op_of && order && m.r && m.heap
               ? op_labels(s, cost, g, binary, label, t_ns, err)
               : enpu_errorf(err, ENPU_ERR_NOMEM, "out of memory (epochs of %lld ops)", (long long)n);
  if (rc == 0) search_each_instance(g, search_op_of_visit, op_of);
  if (rc == 0 && n > 0) {
    const int nr = first_regions(&m, op_of, n, label, t_ns);
    int ne = 0;
    for (int id = merge_regions(&m, nr, epoch_ns); id >= 0; id = m.r[id].next) order[ne++] = id;
    rc = epoch_units(g, op_of, n, m.r, order, ne, out, err);
  }
  free(label);
  free(t_ns);
  free(op_of);
  free(order);
  free(m.r);
  free(m.heap);
  return rc;
}

/* The units of a bucket: one per graph op, or (epoch policies, their policy row) the
 * epochs above. Here rather than in search_units.c so that the unit files call one way. */
int search_units_build(search_ctx *s, cost_ctx *cost, const graph *g, config_policy policy,
                       const search_options *opt, search_units **out, enpu_err *err) {
  *out = NULL;
  search_options defaults;
  if (!opt) search_options_default(&defaults), opt = &defaults;
  const power_policy *row = power_policy_of(policy);
  ENPU_RETURN_IF(!row, err, ENPU_ERR_INVALID, "unknown policy %d", (int)policy);
  if (!row->epoch) return search_units_of_ops(g, out, err);
  ENPU_RETURN_IF(!(opt->epoch_ns > 0), err, ENPU_ERR_INVALID, "epoch of %g ns: expected > 0", opt->epoch_ns);
  return search_units_of_epochs(s, cost, g, policy, opt->epoch_ns, out, err);
}
