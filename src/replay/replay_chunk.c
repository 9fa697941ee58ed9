/* replay_chunk.c — requests beyond the store's bucket grid, so that no request is left
 * out of a run's accounting (admission in replay_sim.c, decode in replay_decode.c).
 *
 * Chunked prefill. A prefill longer than the largest compiled prefill seq bucket C runs
 * as k = ⌈L / C⌉ chunks on one prefill node, back to back, as serving engines run chunked
 * prefill: chunk j covers tokens [jC, jC + c_j) and attends to the KV of the chunks
 * before it, so its attention spans o_j + c_j keys (o_j = jC). The store holds plans
 * for self-contained prefills only (c_j queries over c_j keys), so a chunk is charged
 * its bucket's plan plus the attention to the o_j earlier keys, priced from the store's
 * own prefill buckets: a prefill's NoDVFS time grows as T(s) = d + a·s + q·s² (the
 * quadratic term is attention, which the paper's §4.6 names as what grows quadratically
 * in prefill busy time), q is the second divided difference of T over the three largest
 * compiled seq buckets (with two buckets, through the two with no fixed term; with one,
 * none), and a chunk of padded length c at offset o adds 2·q·c·o (its
 * c·o query-key pairs beyond its own causal block, at 2q per pair since s² work is
 * s²/2 causal pairs). Summed over the chunks this is exactly the quadratic term of the
 * whole prefill, q·L², so a chunked prefill costs what the extrapolated prefill costs
 * plus d per extra chunk (the per-pass weight reads and fixed overheads, which chunking
 * really repeats). The energy is priced the same way from the buckets' NoDVFS energy.
 * The added attention runs at the chunk's plan: its time and energy scale with the
 * plan's over the bucket's NoDVFS (an approximation: the extra attention is assumed to
 * slow and save as the chunk's pass does on average). Each chunk runs the plan of its
 * bucket for the same share of the batch's target (the target times the chunk's share
 * of the fastest total), so every chunk slows in the same proportion.
 *
 * Fallback decode. A decode iteration whose KV length exceeds the largest compiled
 * decode seq bucket runs at NoDVFS (no DVFS saving is claimed for it), its time and
 * energy extrapolated linearly in the KV length from the two largest compiled seq
 * buckets of the smallest batch bucket that holds the batch: decode reads the weights
 * once and every member's KV once per token, so a pass grows linearly with the length
 * (the paper's §2: decode is memory-bound). It is admitted only while the batch's KV
 * (members × length) stays within the most KV tokens a compiled bucket of the store
 * holds: the store's buckets beyond that were found not to fit the chips' HBM.
 *
 * Why not the cost model: replay sits beside cost in the module order (src/README.md)
 * and a store carries no graph of a bucket it did not compile; the store's own buckets
 * give the NoDVFS times on the same chip and model the plans came from. */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "replay_internal.h"

const char *const replay_by_names[REPLAY_NBY] = {"plan", "chunked", "fallback", "chunked+fallback"};

/* Insert seq into the descending list top[0..k) (0 = empty slot), once. */
static void keep_top(int32_t *top, int k, int32_t seq) {
  for (int i = 0; i < k; i++) {
    if (seq == top[i]) return;
    if (seq > top[i]) {
      memmove(&top[i + 1], &top[i], (size_t)(k - 1 - i) * sizeof *top);
      top[i] = seq;
      return;
    }
  }
}

/* The quadratic coefficient of y(x) through three points, x descending; 0 when below 0. */
static double quad_coefficient(const int32_t x[3], const double y[3]) {
  const double s01 = (y[0] - y[1]) / (x[0] - x[1]), s12 = (y[1] - y[2]) / (x[1] - x[2]);
  const double q = (s01 - s12) / (x[0] - x[2]);
  return q > 0 && isfinite(q) ? q : 0;
}

/* Through two points, with no fixed per-pass term (d = 0): T/s = a + q·s. */
static double quad_two_points(const int32_t x[2], const double y[2]) {
  const double q = (y[0] / x[0] - y[1] / x[1]) / (x[0] - x[1]);
  return q > 0 && isfinite(q) ? q : 0;
}

/* The prefill's quadratic term: from three buckets exact for d + a·s + q·s²; from two, with
 * d taken as 0 (a fixed per-pass term then lowers q: an underestimate); from one, none. */
static int fit_prefill(sim *s, enpu_err *err) {
  replay_cover *c = &s->cover;
  const int n = c->pre_seq[2] ? 3 : c->pre_seq[1] ? 2 : 0;
  double t[3], e[3];
  for (int k = 0; k < n; k++) {
    planstore_plan pl;
    const int ok = replay_fastest_plan(s, CONFIG_PREFILL, c->pre_batch, c->pre_seq[k], &pl, NULL, err);
    if (ok <= 0) return ok < 0 ? ok : ENPU_OK;
    t[k] = pl.t_nodvfs_ns, e[k] = pl.e_nodvfs_nj;
  }
  c->pre_quad_t_ns = n == 3 ? quad_coefficient(c->pre_seq, t) : n == 2 ? quad_two_points(c->pre_seq, t) : 0;
  c->pre_quad_e_nj = n == 3 ? quad_coefficient(c->pre_seq, e) : n == 2 ? quad_two_points(c->pre_seq, e) : 0;
  return ENPU_OK;
}

/* Buckets come in (phase, batch, seq) order, so a decode batch's seqs ascend. */
static void note_bucket(replay_cover *c, const planstore_bucket *b) {
  c->kv_max_tokens = fmax(c->kv_max_tokens, (double)b->batch * b->seq);
  if (b->phase == CONFIG_PREFILL) {
    if (b->batch == c->pre_batch) keep_top(c->pre_seq, 3, b->seq);
    return;
  }
  if (b->seq > c->dec_seq_max) c->dec_seq_max = b->seq;
  if (c->ndec == 0 || c->dec_batch[c->ndec - 1] != b->batch) {
    c->dec_batch[c->ndec] = b->batch;
    c->dec_hi[c->ndec] = c->dec_lo[c->ndec] = 0;
    c->ndec++;
  }
  const size_t k = c->ndec - 1;
  c->dec_lo[k] = c->dec_hi[k];
  c->dec_hi[k] = b->seq;
}

int replay_cover_init(sim *s, enpu_err *err) {
  replay_cover *c = &s->cover;
  memset(c, 0, sizeof *c);
  const size_t n = planstore_bucket_count(s->ps, s->policy);
  ENPU_RETURN_IF(ENPU_CALLOC_PARTS(ENPU_PART(c->dec_batch, n + 1), ENPU_PART(c->dec_hi, n + 1),
                                   ENPU_PART(c->dec_lo, n + 1)) < 0,
                 err, ENPU_ERR_NOMEM, "out of memory (grid edges)");
  c->pre_batch = INT32_MAX;
  planstore_bucket b;
  for (size_t i = 0; i < n; i++) {
    ENPU_FORWARD(planstore_bucket_info(s->ps, s->policy, i, &b, err));
    if (b.status == PLANSTORE_BUCKET_OK && b.phase == CONFIG_PREFILL && b.batch < c->pre_batch)
      c->pre_batch = b.batch;
  }
  for (size_t i = 0; i < n; i++) {
    ENPU_FORWARD(planstore_bucket_info(s->ps, s->policy, i, &b, err));
    if (b.status == PLANSTORE_BUCKET_OK) note_bucket(c, &b);
  }
  return fit_prefill(s, err);
}

void replay_cover_free(sim *s) { free(s->cover.dec_batch); /* owns dec_hi, dec_lo */ }

/* ---- chunked prefill ------------------------------------------------------------------ */

/* The plan of `fast`'s bucket at target_ns, the fastest when the target is below it. */
static int bucket_at(const sim *s, const planstore_plan *fast, double target_ns, planstore_plan *pl,
                     enpu_err *err) {
  if (!(target_ns > fast->time_ns)) {
    *pl = *fast;
    return ENPU_OK;
  }
  const int rc = planstore_retarget(s->ps, fast, target_ns, pl, err);
  if (rc == ENPU_ERR_INFEASIBLE) *pl = *fast;
  return rc == ENPU_ERR_INFEASIBLE ? ENPU_OK : rc;
}

/* The composed plan of u full chunks at plan f and v tail chunks at plan t (u, v: chunk
 * passes' worth, the earlier keys' attention included; ue, ve the same for energy). */
static void compose(planstore_plan *out, const planstore_plan *f, const planstore_plan *t, const double w[4]) {
  *out = *f;
  out->bucket = UINT32_MAX; /* no row of the store: no store call takes it */
  out->time_ns = w[0] * f->time_ns + w[1] * t->time_ns;
  out->energy_nj = w[2] * f->energy_nj + w[3] * t->energy_nj;
  out->t_nodvfs_ns = w[0] * f->t_nodvfs_ns + w[1] * t->t_nodvfs_ns;
  out->t_peak_ns = w[0] * f->t_peak_ns + w[1] * t->t_peak_ns;
  out->e_nodvfs_nj = w[2] * f->e_nodvfs_nj + w[3] * t->e_nodvfs_nj;
  out->lower_bound_nj = w[2] * f->lower_bound_nj + w[3] * t->lower_bound_nj;
  out->savings_vs_nodvfs = out->e_nodvfs_nj > 0 ? 1 - out->energy_nj / out->e_nodvfs_nj : NAN;
  out->walk_prefix = out->walk_steps = 0;
  out->plan_time_ns = out->overhead_pct = out->paper_overhead_pct = out->plan_energy_nj = NAN;
}

int replay_chunk_plan(const sim *s, int tokens, double target_ns, replay_chunked *out, enpu_err *why,
                      enpu_err *err) {
  const replay_cover *c = &s->cover;
  memset(out, 0, sizeof *out);
  if (c->pre_seq[0] == 0 || (double)tokens > c->kv_max_tokens) {
    if (why)
      enpu_errorf(why, ENPU_ERR_NOT_FOUND,
                  c->pre_seq[0] ? "prefill of %d tokens: its KV cache exceeds the largest compiled bucket's (%.0f "
                                  "tokens)"
                                : "prefill of %d tokens: no compiled prefill bucket to chunk it by",
                  tokens, c->kv_max_tokens);
    return 0;
  }
  const int C = c->pre_seq[0], k = (tokens + C - 1) / C, last = tokens - (k - 1) * C;
  planstore_plan full, tail;
  int ok = replay_fastest_plan(s, CONFIG_PREFILL, 1, C, &full, why, err);
  if (ok > 0) ok = replay_fastest_plan(s, CONFIG_PREFILL, 1, last, &tail, why, err);
  if (ok <= 0) return ok;
  /* Earlier keys: full chunk j (o = jC) adds 2q·full.seq·jC; Σ j over 0..k-2 = (k-1)(k-2)/2. */
  const double pairs_full = (double)full.seq * C * (double)(k - 1) * (k - 2);
  const double pairs_tail = 2.0 * tail.seq * (double)(k - 1) * C;
  const double w[4] = {(k - 1) + c->pre_quad_t_ns * pairs_full / full.t_nodvfs_ns,
                       1 + c->pre_quad_t_ns * pairs_tail / tail.t_nodvfs_ns,
                       (k - 1) + c->pre_quad_e_nj * pairs_full / full.e_nodvfs_nj,
                       1 + c->pre_quad_e_nj * pairs_tail / tail.e_nodvfs_nj};
  const double fastest_ns = w[0] * full.time_ns + w[1] * tail.time_ns;
  const double share = target_ns > fastest_ns ? target_ns / fastest_ns : 1; /* INFINITY: the slowest */
  planstore_plan pf = full, pt = tail;
  if (share > 1) {
    ENPU_FORWARD(bucket_at(s, &full, share * full.time_ns, &pf, err));
    ENPU_FORWARD(bucket_at(s, &tail, share * tail.time_ns, &pt, err));
  }
  compose(&out->pl, &pf, &pt, w);
  out->pl.target_ns = target_ns;
  out->base = full;
  out->chunks = k;
  out->padded_tokens = (uint64_t)(k - 1) * (uint64_t)full.batch * (uint64_t)full.seq +
                       (uint64_t)tail.batch * (uint64_t)tail.seq;
  out->slowed = pf.walk_prefix > 0 || pt.walk_prefix > 0;
  return 1;
}

int replay_chunk_choose(sim *s, int tokens, double target_ns, double cap_ns, plan_choice *c, enpu_err *err) {
  replay_phase_stats *ph = &s->res->summary.phase[CONFIG_PREFILL];
  replay_chunked fast, at;
  const int ok = replay_chunk_plan(s, tokens, -INFINITY, &fast, NULL, err);
  if (ok <= 0)
    return ok < 0 ? ok : enpu_errorf(err, ENPU_ERR_INTERNAL, "chunked prefill of %d lost its buckets", tokens);
  *c = (plan_choice){.pl = fast.pl, .locked = replay_sg2_locked(s, CONFIG_PREFILL)};
  const double eff = fmin(target_ns, cap_ns);
  if (c->locked) {
    ph->locked++;
  } else if (target_ns < fast.pl.time_ns) {
    ph->late++;
  } else {
    if (eff > fast.pl.time_ns) {
      ENPU_FORWARD(replay_chunk_plan(s, tokens, eff, &at, NULL, err));
      c->pl = at.pl;
      c->composed_slowed = at.slowed;
    }
    if (cap_ns < target_ns) {
      ENPU_FORWARD(replay_chunk_plan(s, tokens, target_ns, &at, NULL, err));
      c->safeguard1 = at.pl.time_ns > c->pl.time_ns;
      ph->safeguard1 += c->safeguard1;
      ph->safeguard1_fastest += c->safeguard1 && eff < fast.pl.time_ns;
    }
  }
  ph->slowed += c->composed_slowed;
  ph->chunked++;
  ph->chunks += (uint64_t)fast.chunks;
  return ENPU_OK;
}

/* ---- fallback decode ------------------------------------------------------------------ */

/* pl: `hi`'s bucket extrapolated to `seq` along the line through lo and hi, at NoDVFS. */
static void extrapolate(planstore_plan *pl, const planstore_plan *lo, const planstore_plan *hi, int64_t seq) {
  const double dx = (double)(seq - hi->seq), run = (double)(hi->seq - lo->seq);
  *pl = *hi;
  pl->bucket = UINT32_MAX; /* no row of the store */
  pl->seq = (int32_t)seq;
  pl->t_nodvfs_ns = hi->t_nodvfs_ns + dx * fmax(0, (hi->t_nodvfs_ns - lo->t_nodvfs_ns) / run);
  pl->e_nodvfs_nj = hi->e_nodvfs_nj + dx * fmax(0, (hi->e_nodvfs_nj - lo->e_nodvfs_nj) / run);
  pl->time_ns = pl->t_peak_ns = pl->target_ns = pl->t_nodvfs_ns;
  pl->energy_nj = pl->lower_bound_nj = pl->e_nodvfs_nj;
  pl->savings_vs_nodvfs = 0;
  pl->walk_prefix = pl->walk_steps = 0;
  pl->plan_time_ns = pl->overhead_pct = pl->paper_overhead_pct = pl->plan_energy_nj = NAN;
}

int replay_cover_decode(const sim *s, int n, int64_t seq, bool admitted, planstore_plan *pl, planstore_plan *base,
                        enpu_err *why, enpu_err *err) {
  const replay_cover *c = &s->cover;
  if (seq <= c->dec_seq_max) {
    const int ok = replay_fastest_plan(s, CONFIG_DECODE, n, (int)seq, pl, why, err);
    if (ok > 0) *base = *pl;
    if (ok != 0 || !admitted) return ok;
    /* A batch admitted for the fallback at its final length, still short of it: the
     * bucket that pads it may not fit the HBM although the batch's own KV does. */
  }
  if ((double)n * (double)seq > c->kv_max_tokens || seq > INT32_MAX) {
    if (why)
      enpu_errorf(
          why, ENPU_ERR_NOT_FOUND,
          "decode batch of %d at %lld tokens: its KV cache exceeds the largest compiled bucket's (%.0f tokens)", n,
          (long long)seq, c->kv_max_tokens);
    return 0;
  }
  for (size_t k = 0; k < c->ndec; k++) {
    if (c->dec_batch[k] < n || c->dec_lo[k] == 0) continue;
    planstore_plan lo, hi;
    int ok = replay_fastest_plan(s, CONFIG_DECODE, c->dec_batch[k], c->dec_lo[k], &lo, NULL, err);
    if (ok > 0) ok = replay_fastest_plan(s, CONFIG_DECODE, c->dec_batch[k], c->dec_hi[k], &hi, NULL, err);
    if (ok < 0) return ok;
    if (ok == 0 || hi.seq <= lo.seq) continue;
    extrapolate(pl, &lo, &hi, seq);
    *base = hi;
    return 2;
  }
  if (why)
    enpu_errorf(why, ENPU_ERR_NOT_FOUND,
                "decode batch of %d at %lld tokens: no compiled decode batch bucket of %d or more with two seq "
                "buckets to extrapolate from",
                n, (long long)seq, n);
  return 0;
}

double replay_cover_nodvfs_ns(const sim *s, int phase, int64_t tokens) {
  enpu_err quiet = {0};
  if (phase == CONFIG_PREFILL) {
    replay_chunked ch;
    if (tokens <= s->cover.pre_seq[0] || tokens > INT32_MAX) return NAN;
    return replay_chunk_plan(s, (int)tokens, -INFINITY, &ch, NULL, &quiet) > 0 ? ch.pl.t_nodvfs_ns : NAN;
  }
  planstore_plan pl, base;
  return replay_cover_decode(s, 1, tokens, false, &pl, &base, NULL, &quiet) == 2 ? pl.t_nodvfs_ns : NAN;
}
