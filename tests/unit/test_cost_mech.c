/* test_cost_mech.c — the pipeline mechanisms the overhead at 0 % slack depends on, each
 * against numbers worked out by hand: the VU shadow register file (§3.1, §4.5) with
 * reductions' accumulators (loop-carried VU→VU values, their allocation shortest
 * dependency distance first with a register per live range, and the executor's timing
 * of them; the tile level's accumulators; a fixed schedule's forwarded sets and crossing
 * stall over the register sweep; the sweep's monotonicity on real operators),
 * and the SA's systolic fill as part of its own time (the critical path).
 *
 * Timing set-up of the hand-built kernels: FE period 1 ns, VU period 2 ns (half the FE
 * clock, as Figure 7b/c), the async FIFO's five cycles of the receiving clock each way
 * (Eq. 1: 10 ns into the VU, 5 ns back), every VU command busy one VU cycle with a
 * one-cycle latency (2 ns). A period is measured as the extra time of 48 extra trips. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "cost_internal.h"
#include "test_cost.h"

static cost_timing half_vu_crossing(void) {
  cost_timing tm = {0};
  for (int u = 0; u < COST_NUNIT; u++) tm.period_ns[u] = 1;
  tm.period_ns[CONFIG_VU] = 2;
  tm.cross_in_ns[CONFIG_VU] = 5 * 2;
  tm.cross_out_ns[CONFIG_VU] = 5 * 1;
  return tm;
}

/* The kernel of one VU stage of `chain` steps with `carried` accumulator steps, at
 * unroll u (software-pipeline depth 1), `iters` iterations, shadow registers n; every
 * command's latency is then set to its occupancy (one cycle) as in the set-up above. */
static void vu_stage_kernel(const fixture *f, int chain, unsigned carried, int u, int64_t iters, int n,
                            cost_kernel *k) {
  cost_tile t = {0};
  t.nstage = 1;
  t.stage[0] = (cost_stage){CONFIG_VU, chain, (double)(iters * chain), carried};
  t.iters = iters;
  assert_int_equal(cost_kernel_build(f->chip, &t, u, 1, n, k, NULL), 0);
  for (int i = 0; i < k->ncmd; i++) {
    assert_true(fabs(k->cmd[i].occ_cycles - 1) < 1e-6);
    k->cmd[i].lat_cycles = 1;
  }
}

static cost_run kernel_run_at(const cost_kernel *k, const cost_timing *tm) {
  static cost_sim sim;
  cost_run r;
  cost_kernel_run(k, tm, &sim, &r);
  return r;
}

static double kernel_time(const cost_kernel *k) {
  const cost_timing tm = half_vu_crossing();
  return kernel_run_at(k, &tm).time_ns;
}

/* A trip's time and FE stall (the extra of 48 extra trips) under timing tm. */
static cost_run trip_at(const fixture *f, int chain, unsigned carried, int u, int n, const cost_timing *tm) {
  static cost_kernel k;
  vu_stage_kernel(f, chain, carried, u, 48 * u, n, &k);
  const cost_run a = kernel_run_at(&k, tm);
  vu_stage_kernel(f, chain, carried, u, 96 * u, n, &k);
  const cost_run b = kernel_run_at(&k, tm);
  return (cost_run){.time_ns = (b.time_ns - a.time_ns) / 48, .stall_ns = (b.stall_ns - a.stall_ns) / 48};
}

static double period(const fixture *f, int chain, unsigned carried, int u, int n) {
  const cost_timing tm = half_vu_crossing();
  return trip_at(f, chain, carried, u, n, &tm).time_ns;
}

static int forwarded(const cost_kernel *k) {
  int n = 0;
  for (int i = 0; i < k->ncmd; i++) n += k->cmd[i].src_fwd[0] + k->cmd[i].src_fwd[1];
  return n;
}

/* One accumulator (a row sum), one command per trip reading its own previous value.
 * Through the FE each trip waits for the last one's round trip: dispatch 1 + FIFO in 10
 * + latency 2 + FIFO back 5 = 18 ns. In a shadow register the VU-local scoreboard
 * passes it on: the VU's own rate, 2 ns (one command per VU cycle). */
void test_accumulator_round_trip(void **state) {
  fixture *f = *state;
  static cost_kernel k;
  vu_stage_kernel(f, 1, 1u, 1, 4, 0, &k);
  assert_int_equal(k.ncmd, 1);
  assert_int_equal(k.cmd[0].src[1], k.cmd[0].dst);
  assert_int_equal(k.cmd[0].src_prev[1], 1);
  assert_int_equal(forwarded(&k), 0);
  assert_true(fabs(period(f, 1, 1u, 1, 0) - 18) < 1e-9);
  vu_stage_kernel(f, 1, 1u, 1, 4, 1, &k);
  assert_int_equal(forwarded(&k), 1);
  assert_true(fabs(period(f, 1, 1u, 1, 1) - 2) < 1e-9);
  /* The first trip has no previous value to wait for: one command, one pass. */
  vu_stage_kernel(f, 1, 1u, 1, 1, 0, &k);
  assert_true(fabs(kernel_time(&k) - (1 + 10 + 2 + 5)) < 1e-9);
}

/* Two steps (a product, then its accumulation: the norm's square and row sum) at unroll
 * 4: body a0 a1 a2 a3 b0 b1 b2 b3, b_c reading a_c (distance 4) and its own previous
 * trip (distance 8, the whole body). Shortest distance first: the four a_c values come
 * first, live over [c, 4 + c), all overlapping at position 3, so they need four
 * registers; each accumulator is live over the whole body and needs one more.
 *   registers   0  1  2  4  6  8  32
 *   forwarded   0  1  2  4  6  8  8
 * Timing, by hand. With 8 every source is local, the FE never waits and the VU is the
 * limit: 8 commands × 2 ns = 16 ns a trip. With 4 the accumulators go through the FE:
 * b_c of trip j + 1 issues when b_c of trip j has retired (start + 2 + 5) and starts
 * 1 + 10 ns later, so a trip takes 7 + 11 = 18 ns; the a_c of the next trip fill the
 * VU meanwhile (they start at S + 8 … S + 14 when b0 started at S). */
void test_accumulators_need_registers(void **state) {
  fixture *f = *state;
  static cost_kernel k;
  static const int regs[] = {0, 1, 2, 4, 6, 8, 32}, fwd[] = {0, 1, 2, 4, 6, 8, 8};
  for (int i = 0; i < 7; i++) {
    vu_stage_kernel(f, 2, 1u << 1, 4, 64, regs[i], &k);
    assert_int_equal(k.ncmd, 8);
    if (forwarded(&k) != fwd[i])
      fail_msg("%d registers: %d forwarded, expected %d", regs[i], forwarded(&k), fwd[i]);
  }
  /* With 4, the chain values are the ones forwarded (distance 4 before 8). */
  vu_stage_kernel(f, 2, 1u << 1, 4, 64, 4, &k);
  for (int c = 0; c < 4; c++) {
    assert_int_equal(k.cmd[4 + c].src_fwd[0], 1);
    assert_int_equal(k.cmd[4 + c].src_fwd[1], 0);
  }
  double p8 = period(f, 2, 1u << 1, 4, 8), p4 = period(f, 2, 1u << 1, 4, 4);
  printf("accumulators at unroll 4: a trip takes %.3f ns with 8 registers, %.3f ns with 4\n", p8, p4);
  assert_true(fabs(p8 - 16) < 1e-9);
  assert_true(fabs(p4 - 18) < 1e-9);
  assert_true(fabs(period(f, 2, 1u << 1, 4, 32) - 16) < 1e-9);
  /* Fewer registers never help. */
  double last = INFINITY;
  for (int i = 0; i < 7; i++) {
    double p = period(f, 2, 1u << 1, 4, regs[i]);
    assert_true(p <= last + 1e-9);
    last = p;
  }
}

/* The tile level marks the reductions' accumulators: the norm's row sum, the router's
 * max and sum, flash attention's running max and sum and its running output; an
 * elementwise operator has none. */
void test_tile_accumulators(void **state) {
  fixture *f = *state;
  uint64_t s = 11;
  static const struct {
    int kind;
    unsigned carried[2]; /* of the first and second VU stage */
  } want[] = {{GRAPH_NORM, {1u << 1, 0}},
              {GRAPH_ROUTER, {1u << 0 | 1u << 3, 0}},
              {GRAPH_ATTENTION, {1u << 0 | 1u << 3, 1u << 0}},
              {GRAPH_ELEMENTWISE, {0, 0}}};
  for (size_t w = 0; w < sizeof want / sizeof want[0]; w++) {
    graph_op op = random_op(&s, want[w].kind);
    cost_tile t;
    assert_int_equal(cost_tile_op(f->chip, &op, &t, NULL), 0);
    int v = 0;
    for (int st = 0; st < t.nstage; st++) {
      if (t.stage[st].unit != CONFIG_VU) {
        assert_int_equal(t.stage[st].carried, 0);
        continue;
      }
      assert_true(v < 2);
      if (t.stage[st].carried != want[w].carried[v])
        fail_msg("%s VU stage %d: carried %#x, expected %#x", graph_kind_name(op.kind), v, t.stage[st].carried,
                 want[w].carried[v]);
      v++;
    }
    assert_true(v > 0);
  }
}

/* One schedule (the norm's product and row sum at unroll 4, as above), its register file
 * swept from 0 to 9: the crossing stall never rises. Why it holds: the allocation visits
 * the candidates in one priority order (distance, then position), whatever the file's
 * size, and puts each on the first register free over its live range. With N + 1
 * registers, registers 0 … N − 1 see the same candidates in the same order and so make
 * the same choices as with N; register N only takes candidates the N-register file
 * refused. So the forwarded set at N is a subset of the set at N + 1, and a forwarded
 * source only drops a wait: the FE no longer waits for the value's retirement (complete
 * + FIFO back) before issuing, the VU waits for the earlier completion instead. Every
 * event time is a max and sum of earlier ones, so none moves later.
 * By hand, per trip (set-up at the top; a_c at VU start S + 2c when the VU is the limit):
 *   0 registers: b_c issues when a_c has retired (S + 2c + 7) and starts 11 ns later,
 *     b0 at S + 18, b3 at S + 24, the VU free at S + 26: the next a0 (issued S + 14)
 *     starts there. 26 ns a trip, 8 bundles of 1 ns: 18 ns of FE stall.
 *   4 registers (the a_c forwarded): 18 ns a trip (above), 10 ns of stall.
 *   8 registers: the VU's 8 × 2 = 16 ns, no stall.
 * The same kernel with no crossing (the FIFOs at 0 ns) is VU-bound, 16 ns, at every
 * size: the crossings cost 10, 2 and 0 ns a trip. */
void test_sweep_fixed_schedule(void **state) {
  fixture *f = *state;
  static cost_kernel small, big;
  const cost_timing cross = half_vu_crossing();
  cost_timing none = cross;
  memset(none.cross_in_ns, 0, sizeof none.cross_in_ns);
  memset(none.cross_out_ns, 0, sizeof none.cross_out_ns);
  static const struct {
    int regs;
    double time_ns, stall_ns;
  } want[] = {{0, 26, 18}, {4, 18, 10}, {8, 16, 0}};
  for (size_t w = 0; w < sizeof want / sizeof want[0]; w++) {
    const cost_run r = trip_at(f, 2, 1u << 1, 4, want[w].regs, &cross);
    if (fabs(r.time_ns - want[w].time_ns) > 1e-9 || fabs(r.stall_ns - want[w].stall_ns) > 1e-9)
      fail_msg("%d registers: a trip %.3f ns with %.3f ns of stall, expected %.0f and %.0f", want[w].regs,
               r.time_ns, r.stall_ns, want[w].time_ns, want[w].stall_ns);
  }
  double last_stall = INFINITY, last_cross = INFINITY;
  for (int n = 0; n <= 9; n++) {
    vu_stage_kernel(f, 2, 1u << 1, 4, 64, n, &small);
    vu_stage_kernel(f, 2, 1u << 1, 4, 64, n + 1, &big);
    for (int i = 0; i < small.ncmd; i++)
      for (int q = 0; q < 2; q++)
        if (small.cmd[i].src_fwd[q] && !big.cmd[i].src_fwd[q])
          fail_msg("command %d source %d: forwarded with %d registers, not with %d", i, q, n, n + 1);
    const cost_run c = trip_at(f, 2, 1u << 1, 4, n, &cross), z = trip_at(f, 2, 1u << 1, 4, n, &none);
    assert_true(fabs(z.time_ns - 16) < 1e-9);
    if (c.stall_ns > last_stall + 1e-9 || c.time_ns - z.time_ns > last_cross + 1e-9)
      fail_msg("%d registers: stall %.3f ns, crossings %.3f ns a trip; more than with %d", n, c.stall_ns,
               c.time_ns - z.time_ns, n - 1);
    last_stall = c.stall_ns, last_cross = c.time_ns - z.time_ns;
  }
}

/* On real operators at random plans of the 5-domain pipeline, adding shadow registers
 * never slows an operator (a larger file forwards a superset of the values: first fit
 * keeps every earlier choice), and beyond 4 it does speed some up: the reductions'
 * accumulators are what the chip's 4 registers leave to the FE. */
void test_sweep_on_operators(void **state) {
  fixture *f = *state;
  static const int regs[] = {0, 1, 2, 4, 8, 16, 32};
  static const int kinds[] = {GRAPH_NORM, GRAPH_ROUTER, GRAPH_ATTENTION, GRAPH_ELEMENTWISE, GRAPH_MATMUL};
  uint64_t s = 0xacc;
  int faster_beyond_4 = 0;
  for (int trial = 0; trial < 150; trial++) {
    graph_op op = random_op(&s, kinds[trial % 5]);
    cost_plan p;
    for (int c = 0; c < CONFIG_NCOMP; c++) p.state[c] = (int)rng_range(&s, 1, 34);
    double last = INFINITY, at4 = 0;
    for (int i = 0; i < 7; i++) {
      cost_pipeline pl = enpu5(f);
      pl.shadow_vregs = regs[i];
      cost_result r;
      assert_int_equal(cost_eval(f->ctx, &op, &p, &pl, &r, NULL), 0);
      if (r.time_ns > last * (1 + 1e-12))
        fail_msg("%s: %d registers %.6f ns > %d registers %.6f ns", graph_kind_name(op.kind), regs[i], r.time_ns,
                 regs[i - 1], last);
      if (regs[i] == 4) at4 = r.time_ns;
      if (regs[i] == 32) faster_beyond_4 += r.time_ns < at4 * (1 - 1e-9);
      last = r.time_ns;
    }
  }
  printf("operators faster with 32 shadow registers than with 4: %d of 150\n", faster_beyond_4);
  assert_true(faster_beyond_4 > 0);
}

/* A 512 × 1024 × 1024 weight matmul on the chip (8 arrays of 128 × 128, 4 KiB vregs):
 * one M block of 512 rows, 8 × 8 = 64 passes, 8 per array, each max(512 rows, 8-cycle
 * weight load) = 512 cycles: 4096 SA cycles, plus the 128-cycle systolic fill of the
 * last pass in its own time, not in its busy time. The SA is the slowest component at
 * peak (HBM: 4 MiB at 2765 GB/s + 500 ns = 2017 ns < 4224 / 1.7 = 2485 ns), so halving
 * its clock lengthens the critical path by 4224 × (1 / 0.85 − 1 / 1.7) ns, the fill
 * included. */
void test_sa_fill_in_own_time(void **state) {
  fixture *f = *state;
  graph_op op = matmul_op(512, 1024, 1024);
  cost_pipeline pl = enpu5(f);
  cost_plan p = peak(f);
  cost_result a, b;
  assert_int_equal(cost_eval(f->ctx, &op, &p, &pl, &a, NULL), 0);
  assert_true(fabs(a.own_ns[CONFIG_SA] - 4224 / 1.7) < 1e-6);
  assert_true(fabs(a.busy_ns[CONFIG_SA] - 4096 / 1.7) < 1e-6);
  assert_true(a.own_ns[CONFIG_HBM] < a.own_ns[CONFIG_SA]);
  assert_true(a.core_ns >= a.own_ns[CONFIG_SA]); /* the kernel has the fill too */
  p.state[CONFIG_SA] = 17;
  assert_int_equal(cost_eval(f->ctx, &op, &p, &pl, &b, NULL), 0);
  assert_true(fabs(b.own_ns[CONFIG_SA] - 4224 / 0.85) < 1e-6);
  assert_true(fabs((b.cp_time_ns - a.cp_time_ns) - 4224 * (1 / 0.85 - 1 / 1.7)) < 1e-6);
  cost_pipeline nd;
  cost_pipeline_nodvfs(&nd, f->pm_fixed);
  cost_result n;
  p = peak(f);
  assert_int_equal(cost_eval(f->ctx, &op, &p, &nd, &n, NULL), 0);
  assert_true(n.cp_time_ns == n.time_ns); /* the critical path is anchored at NoDVFS */
}

/* The authors' simulator's collective timing ("ici_model": "neusim", graph.h): an
 * all-gather over 16 chips split into 3 torus axes (6 links of the shipped chip, 100 GB/s
 * each, Table 6), 15 steps of 3330 ns. Its time is the larger of transfer and latency:
 * 407,171,072 bytes (22 × 1291 × 7168 × 2) take 407171072 / 600 = 678,618.45 ns > 15 ×
 * 3330 = 49,950 ns; 1 MB takes 1e6 / 600 = 1,666.7 ns < 49,950 ns. The ring model (no
 * overlap) adds the two. */
void test_neusim_collective_overlap(void **state) {
  fixture *f = *state;
  assert_true(f->chip->ici_links == 6 && f->chip->ici_link_gbps == 100 && f->chip->ici_latency_ns == 3330);
  graph_op op = {.kind = GRAPH_ALLGATHER, .name = "attn.allgather_in"};
  op.shape = (graph_shape){.b = 1, .m = 1, .n = 1, .ranks = 16, .ici_links = 6, .ici_overlap = 1, .dtype_bytes = 2};
  cost_pipeline nd;
  cost_pipeline_nodvfs(&nd, f->pm_fixed);
  cost_plan p = peak(f);
  cost_result r;
  op.ici_bytes = 407171072.0;
  assert_int_equal(cost_eval(f->ctx, &op, &p, &nd, &r, NULL), 0);
  assert_true(fabs(r.own_ns[CONFIG_ICI] - 407171072.0 / 600) < 1e-6);
  assert_true(r.time_ns >= r.own_ns[CONFIG_ICI]);
  op.ici_bytes = 1e6;
  assert_int_equal(cost_eval(f->ctx, &op, &p, &nd, &r, NULL), 0);
  assert_true(fabs(r.own_ns[CONFIG_ICI] - 15 * 3330.0) < 1e-6);
  op.shape.ici_overlap = 0;
  assert_int_equal(cost_eval(f->ctx, &op, &p, &nd, &r, NULL), 0);
  assert_true(fabs(r.own_ns[CONFIG_ICI] - (15 * 3330.0 + 1e6 / 600)) < 1e-6);
}
