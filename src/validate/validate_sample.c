/* validate_sample.c — the stratified sample of a policy's buckets (validate.h): strata
 * by phase × batch range × seq range, a seeded hash order inside each stratum, and a
 * round-robin over strata so every stratum is represented before any gets a second one.
 *
 * Invariants: ranges split a phase's distinct values (not its buckets) into consecutive
 * runs, so a stratum's label is a contiguous range; picks are distinct buckets. */
#include <stdlib.h>
#include <string.h>

#include "validate.h"

/* The distinct values of the batch (a = 0) and seq (a = 1) columns of one phase's
 * sampleable buckets, sorted. */
typedef struct {
  int32_t *v[2];
  size_t n[2];
} phase_axes;

static int sampleable(const store_bucket_rec *b) {
  return b->status == STORE_BUCKET_OK && b->plan_count > 0 && b->phase < CONFIG_NPHASE;
}

static void axes_free(phase_axes *ax) {
  free(ax->v[0]);
  free(ax->v[1]);
}

static int axes_of(const store_policy_tables *t, int phase, phase_axes *ax) {
  memset(ax, 0, sizeof *ax);
  for (int a = 0; a < 2; a++) {
    ax->v[a] = enpu_calloc(t->nbuckets + 1, sizeof *ax->v[a]);
    if (!ax->v[a]) return ENPU_ERR_NOMEM;
    for (size_t i = 0; i < t->nbuckets; i++) {
      const store_bucket_rec *b = &t->buckets[i];
      if (sampleable(b) && b->phase == phase) ax->v[a][ax->n[a]++] = a ? b->seq : b->batch;
    }
    qsort(ax->v[a], ax->n[a], sizeof *ax->v[a], enpu_cmp_i32);
    size_t u = 0;
    for (size_t k = 0; k < ax->n[a]; k++)
      if (u == 0 || ax->v[a][k] != ax->v[a][u - 1]) ax->v[a][u++] = ax->v[a][k];
    ax->n[a] = u;
  }
  return 0;
}

/* Range of a value among n sorted distinct values: rank · R / n (R ranges, fewer when
 * n < R). */
static uint32_t range_of(const phase_axes *ax, int a, int32_t val) {
  const int32_t *hit = bsearch(&val, ax->v[a], ax->n[a], sizeof val, enpu_cmp_i32);
  const size_t rank = hit ? (size_t)(hit - ax->v[a]) : 0;
  return ax->n[a] ? (uint32_t)(rank * VALIDATE_RANGES / ax->n[a]) : 0;
}

/* ax: the axes of b's phase. */
static uint32_t stratum_of(const phase_axes *ax, const store_bucket_rec *b) {
  return ((uint32_t)b->phase * VALIDATE_RANGES + range_of(ax, 0, b->batch)) * VALIDATE_RANGES +
         range_of(ax, 1, b->seq);
}

typedef struct {
  uint64_t key;
  uint32_t bucket, stratum;
} cand;

static int cand_cmp(const void *pa, const void *pb) {
  const cand *a = pa, *b = pb;
  const int stratum = ENPU_ORDER(a->stratum, b->stratum), key = ENPU_ORDER(a->key, b->key);
  return stratum ? stratum : key ? key : ENPU_ORDER(a->bucket, b->bucket);
}

static int pick_cmp(const void *pa, const void *pb) {
  const validate_pick *a = pa, *b = pb;
  return (a->bucket > b->bucket) - (a->bucket < b->bucket);
}

int validate_sample(const store_policy_tables *t, int n, uint64_t seed, validate_pick *out, size_t *count,
                    enpu_err *err) {
  *count = 0;
  ENPU_RETURN_IF(n < 1, err, ENPU_ERR_INVALID, "sample size %d: expected at least 1", n);
  phase_axes axes[CONFIG_NPHASE] = {0};
  cand *c = enpu_calloc(t->nbuckets + 1, sizeof *c);
  int rc = c ? 0 : ENPU_ERR_NOMEM;
  for (int ph = 0; rc == 0 && ph < CONFIG_NPHASE; ph++) rc = axes_of(t, ph, &axes[ph]);
  if (rc < 0) {
    for (int ph = 0; ph < CONFIG_NPHASE; ph++) axes_free(&axes[ph]);
    free(c);
    return enpu_errorf(err, ENPU_ERR_NOMEM, "out of memory (sample of %zu buckets)", t->nbuckets);
  }
  size_t nc = 0;
  for (size_t i = 0; i < t->nbuckets; i++) {
    const store_bucket_rec *b = &t->buckets[i];
    if (!sampleable(b)) continue;
    enpu_hasher h;
    enpu_hasher_init(&h, seed);
    enpu_hasher_i64(&h, b->phase);
    enpu_hasher_i64(&h, b->batch);
    enpu_hasher_i64(&h, b->seq);
    c[nc++] = (cand){enpu_hasher_digest(&h), (uint32_t)i, stratum_of(&axes[b->phase], b)};
  }
  qsort(c, nc, sizeof *c, cand_cmp);
  /* first[s], end[s]: stratum s's run in c; next[s]: its next candidate. */
  size_t first[VALIDATE_NSTRATA] = {0}, end[VALIDATE_NSTRATA] = {0};
  for (size_t i = nc; i-- > 0;) first[c[i].stratum] = i;
  for (size_t i = 0; i < nc; i++) end[c[i].stratum] = i + 1;
  size_t taken = 0;
  for (int round = 0; taken < (size_t)n && taken < nc; round++)
    for (uint32_t s = 0; s < VALIDATE_NSTRATA && taken < (size_t)n; s++) {
      const size_t at = first[s] + (size_t)round;
      if (end[s] > first[s] && at < end[s]) out[taken++] = (validate_pick){c[at].bucket, s};
    }
  qsort(out, taken, sizeof *out, pick_cmp);
  *count = taken;
  for (int ph = 0; ph < CONFIG_NPHASE; ph++) axes_free(&axes[ph]);
  free(c);
  return 0;
}

void validate_stratum_label(const store_policy_tables *t, uint32_t stratum, char *buf, size_t cap) {
  const uint32_t phase = stratum / (VALIDATE_RANGES * VALIDATE_RANGES);
  int32_t lo[2] = {INT32_MAX, INT32_MAX}, hi[2] = {0, 0};
  phase_axes ax;
  const int rc = phase < CONFIG_NPHASE ? axes_of(t, (int)phase, &ax) : ENPU_ERR_INVALID;
  for (size_t i = 0; rc == 0 && i < t->nbuckets; i++) {
    const store_bucket_rec *b = &t->buckets[i];
    if (!sampleable(b) || b->phase != phase || stratum_of(&ax, b) != stratum) continue;
    const int32_t val[2] = {b->batch, b->seq};
    for (int a = 0; a < 2; a++) {
      if (val[a] < lo[a]) lo[a] = val[a];
      if (val[a] > hi[a]) hi[a] = val[a];
    }
  }
  if (phase < CONFIG_NPHASE) axes_free(&ax);
  const char *name = phase < CONFIG_NPHASE ? config_phase_name((config_phase)phase) : "?";
  if (lo[0] > hi[0]) snprintf(buf, cap, "%s (none)", name);
  else {
    char axis[2][32];
    for (int a = 0; a < 2; a++) {
      if (lo[a] == hi[a]) snprintf(axis[a], sizeof axis[a], "%d", lo[a]);
      else snprintf(axis[a], sizeof axis[a], "%d-%d", lo[a], hi[a]);
    }
    snprintf(buf, cap, "%s b%s s%s", name, axis[0], axis[1]);
  }
}
