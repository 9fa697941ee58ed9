/* jobinit_trace.c — the arithmetic of job init's rules on a trace's lengths: nearest-rank
 * percentiles, the seq axis that pads the trace least under a bucket count, and the
 * padding waste of an axis. Pure functions of sorted arrays (the unit test checks them
 * on hand-computed cases). */
#include <math.h>
#include <stdlib.h>

#include "jobinit.h"

/* Candidate lengths beyond this many are coarsened (a multiple of the step), so the
 * dynamic programme stays O(k · cand²) within a second for a million-token context. */
#define JOBINIT_MAX_CANDIDATES 2048

int32_t jobinit_percentile(const int32_t *sorted, size_t n, double p) {
  size_t rank = (size_t)ceil(p / 100.0 * (double)n - 1e-9); /* 99.9 % of 1000 is rank 999, not 1000 */
  if (rank < 1) rank = 1;
  if (rank > n) rank = n;
  return sorted[rank - 1];
}

double jobinit_padding_waste(const int32_t *sorted, size_t n, const int *axis, int count) {
  double padded = 0, total = 0;
  int b = 0;
  for (size_t i = 0; i < n && count > 0; i++) {
    while (b < count && axis[b] < sorted[i]) b++;
    if (b == count) break;
    padded += axis[b] - sorted[i], total += axis[b];
  }
  return total > 0 ? padded / total : 0;
}

/* The candidate lengths: multiples of step (coarsened to at most JOBINIT_MAX_CANDIDATES),
 * the last one top. @return how many. */
static int candidates(int top, int step, int *cand) {
  const int j = top / step;
  const int g = j > JOBINIT_MAX_CANDIDATES ? (j + JOBINIT_MAX_CANDIDATES - 1) / JOBINIT_MAX_CANDIDATES : 1;
  int c = 0;
  for (int v = step * g; v < top; v += step * g) cand[c++] = v;
  cand[c++] = top;
  return c;
}

/* Per candidate cell (cand[j-1], cand[j]]: prefix counts and sums of the lengths in
 * cells 1..j (index 0 is the empty prefix). */
static void cell_prefix(const int32_t *sorted, size_t n, const int *cand, int nc, double *cnt, double *sum) {
  cnt[0] = sum[0] = 0;
  size_t i = 0;
  for (int j = 1; j <= nc; j++) {
    cnt[j] = cnt[j - 1], sum[j] = sum[j - 1];
    for (; i < n && sorted[i] <= cand[j - 1]; i++) cnt[j] += 1, sum[j] += sorted[i];
  }
}

int jobinit_seq_axis(const int32_t *sorted, size_t n, int top, int step, int k, int *out, int *count,
                     enpu_err *err) {
  ENPU_RETURN_IF(k < 1 || step < 1 || top < step || top % step, err, ENPU_ERR_INVALID,
                 "seq axis: expected k >= 1 and a top that is a positive multiple of %d, got k %d, top %d", step, k,
                 top);
  int *cand = malloc(sizeof *cand * (JOBINIT_MAX_CANDIDATES + 2));
  const int nc = cand ? candidates(top, step, cand) : 0;
  if (k > nc) k = nc;
  const size_t w = (size_t)nc + 1;
  double *cnt = calloc(w, sizeof *cnt), *sum = calloc(w, sizeof *sum), *f = calloc(w * (size_t)(k + 1), sizeof *f);
  int *from = calloc(w * (size_t)(k + 1), sizeof *from);
  if (!cand || !cnt || !sum || !f || !from) {
    free(cand), free(cnt), free(sum), free(f), free(from);
    return enpu_errorf(err, ENPU_ERR_NOMEM, "out of memory (seq axis of %d candidates)", nc);
  }
  cell_prefix(sorted, n, cand, nc, cnt, sum);
  /* f[m][j]: least padding of the lengths in cells 1..j with m buckets, the last at cand[j-1] */
  for (size_t x = 0; x < w * (size_t)(k + 1); x++) f[x] = INFINITY;
  f[0] = 0;
  for (int m = 1; m <= k; m++)
    for (int j = 1; j <= nc; j++)
      for (int i = 0; i < j; i++) {
        const double prev = f[(size_t)(m - 1) * w + (size_t)i];
        const double c = prev + cand[j - 1] * (cnt[j] - cnt[i]) - (sum[j] - sum[i]);
        if (c < f[(size_t)m * w + (size_t)j]) f[(size_t)m * w + (size_t)j] = c, from[(size_t)m * w + (size_t)j] = i;
      }
  int best = 1; /* the fewest buckets with the least padding */
  for (int m = 2; m <= k; m++)
    if (f[(size_t)m * w + (size_t)nc] < f[(size_t)best * w + (size_t)nc]) best = m;
  *count = best;
  for (int m = best, j = nc; m >= 1; j = from[(size_t)m * w + (size_t)j], m--) out[m - 1] = cand[j - 1];
  free(cand), free(cnt), free(sum), free(f), free(from);
  return 0;
}
