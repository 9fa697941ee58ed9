/* cost_sim.c — event-time executor of a VLIW kernel with per-domain clocks (§3.1).
 *
 * Every command gets times, not cycles stepped one by one:
 *   issue     the FE issues bundles in order, at least one FE period apart, and not
 *             before every source the FE scoreboard tracks has retired to it;
 *   dispatch  one FE cycle, then the FIFO into the unit's domain: fifo_sync_cycles of the
 *             unit's clock when the unit is in another domain (Eq. 1, receiving side);
 *   execute   start when the unit is free (and, for a shadow-register source, when the
 *             VU-local scoreboard has the value); busy for occ cycles, result after lat;
 *   retire    back across: fifo_sync_cycles of the FE clock when crossing.
 * With power gating, a core unit whose next command would start at least gate_min_ns
 * after it became free (and after it first worked) is gated for that gap and wakes on
 * demand: the command starts wake_ns later. The gap is measured before the wake-up, on
 * the schedule being gated.
 * All times are maxima and sums of non-negative delays that shrink as clocks speed up,
 * so the model is monotone: a faster clock never delays any event.
 *
 * Steady state: after each trip of the fully active body, the state relative to the
 * last issue time (register ready times, unit free times; anything already in the past
 * clamps to 0 because it can no longer delay anything) is compared with the state one
 * and two trips earlier. When it repeats, the loop is periodic from there on and the
 * remaining trips are added as whole periods: evaluation cost does not depend on the
 * trip count. That advance per trip is the loop's period: its throughput (Figure 7's
 * IPC), which cost_kernel_period_ns measures for any trip count. FIFOs are sized by
 * Eq. 2 for one command per cycle, so they never fill and are not modelled. */
#include <math.h>
#include <string.h>

#include "cost_internal.h"

#define SNAP_EXTRA 4 /* base issue time, stall, bundles, done: after the state values */
#define SNAP_TOL_NS 1e-6
#define MAX_STEADY_TRIPS 64 /* give up exact detection after this many steady trips */

static inline double dmax(double a, double b) { return a > b ? a : b; }

/* The trip command c works on in body execution j (stages lag by sw_depth − 1 trips),
 * or -1 when it is masked out (prologue, epilogue, copies beyond a partial last trip). */
static inline int64_t cmd_trip(const cost_kernel *k, const cost_cmd *c, int64_t j, int64_t trips, int last_copies) {
  int64_t trip = j - (int64_t)c->stage * (k->sw_depth - 1);
  if (trip < 0 || trip >= trips) return -1;
  return trip < trips - 1 || c->copy < last_copies ? trip : -1;
}

/* Register slot of register r for a trip: with a lag of L = sw_depth − 1 trips, L trips
 * of a value are live at once, so each register has L slots used in rotation (modulo
 * variable expansion, done by the compiler). */
static inline int reg_slot(const cost_kernel *k, int r, int64_t trip) {
  if (k->sw_depth <= 2) return r; /* one slot: no division in the executor's inner loop */
  const int lag = k->sw_depth - 1;
  return r * lag + (int)(trip % lag);
}

/* Source q of c waits on a value: it names one, and a loop-carried one has a previous
 * trip (the first trip's accumulator starts from a constant). */
static inline int src_live(const cost_cmd *c, int q, int64_t trip) {
  return c->src[q] >= 0 && trip >= c->src_prev[q];
}

static void run_body(const cost_kernel *k, const cost_timing *tm, cost_sim *s, int64_t j, int64_t trips,
                     int last_copies) {
  const double t_fe = tm->period_ns[COST_FE];
  int i = 0;
  while (i < k->ncmd) {
    int end = i + 1;
    while (end < k->ncmd && !k->cmd[end].bundle_start) end++;
    /* Issue time of the bundle: in order, and after the FE-visible sources. */
    double earliest = s->t_issue + t_fe, t = earliest;
    int any = 0;
    for (int x = i; x < end; x++) {
      const cost_cmd *c = &k->cmd[x];
      int64_t trip = cmd_trip(k, c, j, trips, last_copies);
      if (trip < 0) continue;
      any = 1;
      for (int q = 0; q < 2; q++)
        if (src_live(c, q, trip) && !c->src_fwd[q])
          t = dmax(t, s->reg_fe[reg_slot(k, c->src[q], trip - c->src_prev[q])]);
    }
    if (any) {
      s->stall_ns += t - earliest;
      s->t_issue = t;
      s->bundles += 1;
      for (int x = i; x < end; x++) {
        const cost_cmd *c = &k->cmd[x];
        int64_t trip = cmd_trip(k, c, j, trips, last_copies);
        if (trip < 0) continue;
        int u = c->unit;
        double tu = tm->period_ns[u];
        double start = dmax(t + t_fe + tm->cross_in_ns[u], s->unit_free[u]);
        for (int q = 0; q < 2; q++)
          if (src_live(c, q, trip) && c->src_fwd[q])
            start = dmax(start, s->reg_loc[reg_slot(k, c->src[q], trip - c->src_prev[q])]);
        if (tm->gating && u < COST_NGATED) {
          const double gap = start - s->unit_free[u];
          if (s->used[u] && gap >= tm->gate_min_ns[u]) {
            s->gated_ns[u] += gap;
            s->gates[u] += 1;
            start += tm->wake_ns[u];
          }
          s->used[u] = 1;
        }
        double complete = start + c->lat_cycles * tu;
        double retired = complete + tm->cross_out_ns[u];
        s->unit_free[u] = start + c->occ_cycles * tu;
        if (c->dst >= 0) {
          int d = reg_slot(k, c->dst, trip);
          s->reg_loc[d] = complete;
          s->reg_fe[d] = retired;
        }
        s->done_ns = dmax(s->done_ns, retired);
      }
    }
    i = end;
  }
}

static void snapshot(const cost_kernel *k, const cost_sim *s, double *out) {
  double base = s->t_issue;
  int n = 0;
  for (int r = 0; r < k->nslot; r++) {
    out[n++] = dmax(s->reg_fe[r] - base, 0);
    out[n++] = dmax(s->reg_loc[r] - base, 0);
  }
  for (int u = 0; u < COST_NUNIT; u++) out[n++] = dmax(s->unit_free[u] - base, 0);
  out[n++] = dmax(s->done_ns - base, 0);
  out[n++] = base;
  out[n++] = s->stall_ns;
  out[n++] = s->bundles;
  for (int u = 0; u < COST_NGATED; u++) {
    out[n++] = s->gated_ns[u];
    out[n++] = s->gates[u];
  }
  out[n] = 0;
}

static int snap_len(const cost_kernel *k) { return 2 * k->nslot + COST_NUNIT + 1; }

static int snap_equal(const double *a, const double *b, int len) {
  for (int i = 0; i < len; i++)
    if (fabs(a[i] - b[i]) > SNAP_TOL_NS) return 0;
  return 1;
}

/* Advance every absolute time by `shift_ns`: the state `whole` periods later. */
static void shift_state(const cost_kernel *k, cost_sim *s, double shift_ns) {
  for (int r = 0; r < k->nslot; r++) {
    s->reg_fe[r] += shift_ns;
    s->reg_loc[r] += shift_ns;
  }
  for (int u = 0; u < COST_NUNIT; u++) s->unit_free[u] += shift_ns;
  s->t_issue += shift_ns;
  s->done_ns += shift_ns;
}

/* How far one period moves the loop: the issue time's advance, or more when a unit's
 * backlog grew over the period (its free time ran ahead of the issue time). An exactly
 * periodic state has no growth; a loop that never repeats exactly (MAX_STEADY_TRIPS:
 * two units with nearly equal but unequal rates at different clocks) is limited by its
 * slowest unit, whose backlog grows every trip, and extrapolating by the issue time
 * alone would let the kernel end before that unit's work is done. */
static double period_advance(const cost_kernel *k, const double *cur, const double *prev, int len) {
  double growth = 0;
  for (int u = 0; u < COST_NUNIT; u++) growth = dmax(growth, cur[2 * k->nslot + u] - prev[2 * k->nslot + u]);
  return cur[len] - prev[len] + growth;
}

/* One execution of k over `iters` iterations (k->iters for the kernel as built). */
static void kernel_exec(const cost_kernel *k, int64_t iters, const cost_timing *tm, cost_sim *s, cost_run *out) {
  int64_t trips = (iters + k->unroll - 1) / k->unroll;
  int last_copies = (int)(iters - (trips - 1) * k->unroll);
  int64_t lag = (int64_t)(k->nstage - 1) * (k->sw_depth - 1);
  int64_t execs = trips + lag;
  /* Trips whose body is fully active and not the partial last one. */
  int64_t steady_lo = lag, steady_hi = trips - 2;

  memset(s->reg_fe, 0, sizeof(double) * (size_t)k->nslot);
  memset(s->reg_loc, 0, sizeof(double) * (size_t)k->nslot);
  memset(s->unit_free, 0, sizeof s->unit_free);
  s->t_issue = -tm->period_ns[COST_FE];
  s->stall_ns = s->done_ns = s->bundles = 0;
  memset(s->gated_ns, 0, sizeof s->gated_ns);
  memset(s->gates, 0, sizeof s->gates);
  memset(s->used, 0, sizeof s->used);

  int len = snap_len(k), nsnap = 0, extrapolated = 0;
  out->period_ns = NAN;
  for (int64_t j = 0; j < execs; j++) {
    run_body(k, tm, s, j, trips, last_copies);
    if (extrapolated || j < steady_lo || j > steady_hi) continue;
    double *cur = s->snap[nsnap % 3];
    snapshot(k, s, cur);
    nsnap++;
    int cyc = 0;
    if (nsnap >= 2 && snap_equal(cur, s->snap[(nsnap - 2) % 3], len)) cyc = 1;
    else if (nsnap >= 3 && snap_equal(cur, s->snap[(nsnap - 3) % 3], len)) cyc = 2;
    else if (nsnap >= MAX_STEADY_TRIPS) cyc = 1; /* not exactly periodic: use the last trip */
    if (!cyc) continue;
    const double *prev = s->snap[(nsnap - 1 - cyc) % 3];
    const double advance_ns = period_advance(k, cur, prev, len);
    out->period_ns = advance_ns / cyc;
    int64_t periods = (steady_hi - j) / cyc;
    if (periods > 0) {
      shift_state(k, s, (double)periods * advance_ns);
      s->stall_ns += (double)periods * (cur[len + 1] - prev[len + 1]);
      s->bundles += (double)periods * (cur[len + 2] - prev[len + 2]);
      for (int u = 0; u < COST_NGATED; u++) {
        s->gated_ns[u] += (double)periods * (cur[len + 3 + 2 * u] - prev[len + 3 + 2 * u]);
        s->gates[u] += (double)periods * (cur[len + 4 + 2 * u] - prev[len + 4 + 2 * u]);
      }
      j += periods * cyc;
    }
    extrapolated = 1;
  }
  double end = s->done_ns;
  for (int u = 0; u < COST_NUNIT; u++) end = dmax(end, s->unit_free[u]);
  out->time_ns = end;
  out->stall_ns = s->stall_ns;
  out->bundles = s->bundles;
  memcpy(out->gated_ns, s->gated_ns, sizeof out->gated_ns);
  memcpy(out->gates, s->gates, sizeof out->gates);
}

void cost_kernel_run(const cost_kernel *k, const cost_timing *tm, cost_sim *s, cost_run *out) {
  kernel_exec(k, k->iters, tm, s, out);
}

double cost_kernel_period_ns(const cost_kernel *k, const cost_timing *tm, cost_sim *s) {
  /* The prologue's trips, then enough steady ones that the period is found or declared */
  const int64_t trips = (int64_t)(k->nstage - 1) * (k->sw_depth - 1) + MAX_STEADY_TRIPS + 3;
  cost_run r;
  kernel_exec(k, trips * k->unroll, tm, s, &r);
  return r.period_ns / k->unroll;
}
