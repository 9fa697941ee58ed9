/* synth_store.h — a synthetic plan store for replay tests and the replay benchmark,
 * written with the store writer through tests/unit/store_fixture.h. Included by tests/unit/test_replay.c and
 * tests/bench/bench_replay.c; all functions are static inline.
 *
 * The analytical model (Llama3-70B on a 4-chip TPUv5p node, roughly as results/
 * calibration.md measures it; times per forward pass, energies per chip):
 *   prefill  T(b, s) = 2 ms + 105 µs · b·s + 2 ns · b·s²           (compute-bound)
 *   decode   T(b, s) = 12.7 ms + 20 µs · b + 29 ns · b·s           (weights + KV reads)
 *   energy   E = T · 320 W (prefill), T · 250 W (decode)
 *   capacity a decode bucket is infeasible when b·s > 700,000 tokens (≈ 60 GB of KV per
 *            chip at 80 KB per token per chip)
 * Grid: prefill batch 1..32 (powers of two), decode batch 1,2,4,8,16,32,48,64,96,128,
 * 192,256; sequence buckets by the §3.4 rule (128-steps to 1024, step doubling at every
 * power of two) up to SYNTH_MAX_SEQ.
 * Policies: "nodvfs" (one point per op, empty walk: T, E); "enpu-all" and "dvfs-c": each
 * bucket has two ops (60 % / 40 % of the time and energy) with four Pareto points of
 * time × {1, 1.08, 1.2, 1.4} and energy × {0.86, 0.76, 0.70, 0.67} (enpu-all) or
 * energy × {0.95, 0.88, 0.83, 0.80} (dvfs-c); the walk moves op 0 then op 1 to each next
 * point in turn (6 steps), so its slowest plan takes 1.4 T.
 * "uniform" (the governors' table, schemas/planstore.md): per bucket three ops,
 * "embed:gather" (1 %, once), "dense_layer:layer" (98 %, 80 instances: Llama3-70B's
 * layers) and "head:lm" (1 %, once), each with SYNTH_STATES points; at state q a pass
 * takes T · 34/q and E · (0.7 q/34 + 0.3 · 34/q) (least energy near q = 22, 8.3 % below
 * E, as the real prefill table), all-peak exactly (T, E) like nodvfs; the walk moves the
 * three ops one state down per round. */
#ifndef SYNTH_STORE_H
#define SYNTH_STORE_H

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "store.h"
#include "../../unit/store_fixture.h"

#define SYNTH_MAX_SEQ 16384
#define SYNTH_NPTS 4
#define SYNTH_KV_CAP_TOKENS 700000.0

static const double synth_time_mult[SYNTH_NPTS] = {1.0, 1.08, 1.2, 1.4};
static const double synth_energy_enpu[SYNTH_NPTS] = {0.86, 0.76, 0.70, 0.67};
static const double synth_energy_dvfs[SYNTH_NPTS] = {0.95, 0.88, 0.83, 0.80};

static inline double synth_time_ns(int phase, int b, int s) {
  const double bs = (double)b * s;
  return phase == STORE_PHASE_PREFILL ? 2e6 + 1.05e5 * bs + 2.0 * bs * s : 12.7e6 + 2e4 * b + 29.0 * bs;
}

static inline double synth_energy_nj(int phase, int b, int s) {
  return synth_time_ns(phase, b, s) * (phase == STORE_PHASE_PREFILL ? 320.0 : 250.0);
}

/* The §3.4 sequence rule up to SYNTH_MAX_SEQ; returns the count written to out. */
static inline int synth_seqs(int *out) {
  int n = 0;
  for (int s = 128, step = 128; s <= SYNTH_MAX_SEQ; s += step) {
    out[n++] = s;
    if (s >= 1024 && (s & (s - 1)) == 0) step = s / 4; /* 1024 → 256-steps, 2048 → 512, ... */
  }
  return n;
}

typedef struct {
  store_op_rec *ops;
  store_pareto_rec *pareto;
  store_bucket_rec *buckets;
  store_bucket_op_rec *bops;
  store_walk_rec *walk;
  store_plan_rec *plans;
  store_plan_state_rec *pstates;
  size_t nops, npareto, nbuckets, nbops, nwalk, nplans, npstates;
} synth_tables;

static inline void synth_tables_free(synth_tables *t) {
  free(t->ops), free(t->pareto), free(t->buckets), free(t->bops), free(t->walk), free(t->plans), free(t->pstates);
}

/* Add the next bucket row of t, (phase, b, s) with its no-DVFS time and energy; a decode
 * bucket whose KV cache exceeds SYNTH_KV_CAP_TOKENS is infeasible. @return whether the
 * bucket is feasible (the caller then adds its ops, walk and plans). */
static inline bool synth_bucket_start(synth_tables *t, int phase, int b, int s) {
  const uint32_t row = (uint32_t)t->nbuckets++;
  const double T = synth_time_ns(phase, b, s);
  t->buckets[row] = (store_bucket_rec){.phase = (uint8_t)phase,
                                       .batch = b,
                                       .seq = s,
                                       .t_nodvfs_ns = T,
                                       .t_peak_ns = T,
                                       .e_nodvfs_nj = synth_energy_nj(phase, b, s),
                                       .input_hash = row + 1};
  if (phase != STORE_PHASE_DECODE || (double)b * s <= SYNTH_KV_CAP_TOKENS) return true;
  t->buckets[row].status = STORE_BUCKET_INFEASIBLE_CAPACITY;
  return false;
}

/* One policy's tables. energy_mult NULL = nodvfs. */
static inline int synth_policy(synth_tables *t, const double *energy_mult) {
  static const int pbatch[] = {1, 2, 4, 8, 16, 32};
  static const int dbatch[] = {1, 2, 4, 8, 16, 32, 48, 64, 96, 128, 192, 256};
  int seqs[64];
  const int nseq = synth_seqs(seqs);
  const size_t maxb = (6 + 12) * (size_t)nseq;
  const int npts = energy_mult ? SYNTH_NPTS : 1, nsteps = 2 * (npts - 1);
  memset(t, 0, sizeof *t);
  t->ops = calloc(2 * maxb, sizeof *t->ops);
  t->pareto = calloc(2 * maxb * npts, sizeof *t->pareto);
  t->buckets = calloc(maxb, sizeof *t->buckets);
  t->bops = calloc(2 * maxb, sizeof *t->bops);
  t->walk = calloc(maxb * (nsteps + 1), sizeof *t->walk);
  t->plans = calloc(2 * maxb, sizeof *t->plans);
  t->pstates = calloc(4 * maxb, sizeof *t->pstates);
  if (!t->ops || !t->pareto || !t->buckets || !t->bops || !t->walk || !t->plans || !t->pstates) return -1;
  for (int phase = 0; phase < 2; phase++) {
    const int *bl = phase ? dbatch : pbatch, nb = phase ? 12 : 6;
    for (int bi = 0; bi < nb; bi++)
      for (int si = 0; si < nseq; si++) {
        const int b = bl[bi], s = seqs[si];
        const uint32_t row = (uint32_t)t->nbuckets;
        store_bucket_rec *bk = &t->buckets[row];
        const double T = synth_time_ns(phase, b, s), E = synth_energy_nj(phase, b, s);
        if (!synth_bucket_start(t, phase, b, s)) {
          snprintf(bk->message, sizeof bk->message, "KV cache of %d x %d tokens exceeds HBM", b, s);
          continue;
        }
        static const double share[2] = {0.6, 0.4};
        bk->ops_first = (uint32_t)t->nbops;
        bk->ops_count = 2;
        uint32_t first_pt[2];
        for (int k = 0; k < 2; k++) {
          const uint32_t op = (uint32_t)t->nops++;
          first_pt[k] = (uint32_t)t->npareto;
          t->ops[op] = (store_op_rec){.signature = ((uint64_t)row << 1) | (uint64_t)k,
                                      .kind = (uint32_t)k,
                                      .pareto_first = first_pt[k],
                                      .pareto_count = (uint32_t)npts,
                                      .evaluations = 1};
          snprintf(t->ops[op].name, sizeof t->ops[op].name, "%s%d", k ? "attn" : "matmul", (int)row);
          for (int q = 0; q < npts; q++) {
            store_pareto_rec *pt = &t->pareto[t->npareto++];
            *pt = (store_pareto_rec){.op = op,
                                     .time_ns = share[k] * T * synth_time_mult[q],
                                     .energy_nj = share[k] * E * (energy_mult ? energy_mult[q] : 1.0)};
            for (int c = 0; c < STORE_NSTATE; c++) pt->states[c] = (uint8_t)(34 - 4 * q);
            pt->energy_by_slot_nj[0] = pt->energy_nj;
          }
          t->bops[t->nbops++] = (store_bucket_op_rec){row, op, 1};
        }
        double time = T * synth_time_mult[0], energy = E * (energy_mult ? energy_mult[0] : 1.0);
        bk->walk_start_time_ns = time;
        bk->walk_start_energy_nj = energy;
        bk->walk_first = t->nwalk;
        bk->walk_count = (uint64_t)nsteps;
        double cum_t[2 * SYNTH_NPTS], cum_e[2 * SYNTH_NPTS];
        for (int st = 0; st < nsteps; st++) {
          const int k = st % 2, q = st / 2 + 1;
          time += share[k] * T * (synth_time_mult[q] - synth_time_mult[q - 1]);
          energy += share[k] * E * (energy_mult[q] - energy_mult[q - 1]);
          cum_t[st] = time, cum_e[st] = energy;
          t->walk[t->nwalk++] = (store_walk_rec){
              row, t->bops[bk->ops_first + k].op, first_pt[k] + (uint32_t)q, 1, time, energy};
        }
        bk->plan_first = (uint32_t)t->nplans;
        bk->plan_count = 2;
        for (int p = 0; p < 2; p++) {
          const double slack = 0.1 * p, budget = T + slack * T;
          int prefix = 0;
          while (prefix < nsteps && cum_t[prefix] <= budget) prefix++;
          store_plan_rec *pl = &t->plans[t->nplans];
          *pl = (store_plan_rec){.bucket = row,
                                 .slack = slack,
                                 .budget_ns = budget,
                                 .time_ns = prefix ? cum_t[prefix - 1] : bk->walk_start_time_ns,
                                 .energy_nj = prefix ? cum_e[prefix - 1] : bk->walk_start_energy_nj,
                                 .walk_prefix = (uint64_t)prefix,
                                 .states_first = t->npstates,
                                 .states_count = 2};
          pl->lower_bound_nj = pl->energy_nj;
          pl->savings_vs_nodvfs = 1 - pl->energy_nj / E;
          for (int k = 0; k < 2; k++) {
            const int q = (prefix + 1 - k) / 2; /* point of op k after `prefix` steps */
            store_plan_state_rec *ps = &t->pstates[t->npstates++];
            *ps = (store_plan_state_rec){.plan = (uint32_t)t->nplans,
                                         .op = t->bops[bk->ops_first + k].op,
                                         .pareto = first_pt[k] + (uint32_t)q,
                                         .instances = 1};
            for (int c = 0; c < STORE_NSTATE; c++) ps->states[c] = (uint8_t)(34 - 4 * q);
          }
          t->nplans++;
        }
      }
  }
  return 0;
}

#define SYNTH_STATES 34

static inline double synth_uniform_time(int q) { return (double)SYNTH_STATES / q; }
static inline double synth_uniform_energy(int q) { return 0.7 * q / SYNTH_STATES + 0.3 * (double)SYNTH_STATES / q; }

/* The uniform policy's tables (see the file comment). */
static inline int synth_uniform(synth_tables *t) {
  static const int pbatch[] = {1, 2, 4, 8, 16, 32};
  static const int dbatch[] = {1, 2, 4, 8, 16, 32, 48, 64, 96, 128, 192, 256};
  static const char *const names[3] = {"embed:gather", "dense_layer:layer", "head:lm"};
  static const double share[3] = {0.01, 0.98, 0.01};
  static const int mult[3] = {1, 80, 1};
  int seqs[64];
  const int nseq = synth_seqs(seqs);
  const size_t maxb = (6 + 12) * (size_t)nseq, rounds = SYNTH_STATES - 1;
  memset(t, 0, sizeof *t);
  t->ops = calloc(3 * maxb, sizeof *t->ops);
  t->pareto = calloc(3 * maxb * SYNTH_STATES, sizeof *t->pareto);
  t->buckets = calloc(maxb, sizeof *t->buckets);
  t->bops = calloc(3 * maxb, sizeof *t->bops);
  t->walk = calloc(maxb * 3 * rounds, sizeof *t->walk);
  if (!t->ops || !t->pareto || !t->buckets || !t->bops || !t->walk) return -1;
  for (int phase = 0; phase < 2; phase++)
    for (int bi = 0; bi < (phase ? 12 : 6); bi++)
      for (int si = 0; si < nseq; si++) {
        const int b = (phase ? dbatch : pbatch)[bi], sq = seqs[si];
        const uint32_t row = (uint32_t)t->nbuckets;
        const double T = synth_time_ns(phase, b, sq), E = synth_energy_nj(phase, b, sq);
        store_bucket_rec *bk = &t->buckets[row];
        if (!synth_bucket_start(t, phase, b, sq)) continue;
        bk->walk_start_time_ns = T;
        bk->walk_start_energy_nj = E;
        bk->ops_first = (uint32_t)t->nbops;
        bk->ops_count = 3;
        bk->walk_first = t->nwalk;
        bk->walk_count = 3 * rounds;
        uint32_t first[3];
        for (int k = 0; k < 3; k++) {
          const uint32_t op = (uint32_t)t->nops++;
          first[k] = (uint32_t)t->npareto;
          t->ops[op] = (store_op_rec){.signature = ((uint64_t)row << 2) | (uint64_t)k,
                                      .pareto_first = first[k],
                                      .pareto_count = SYNTH_STATES,
                                      .evaluations = SYNTH_STATES};
          snprintf(t->ops[op].name, sizeof t->ops[op].name, "%s", names[k]);
          for (int q = SYNTH_STATES; q >= 1; q--) {
            store_pareto_rec *pt = &t->pareto[t->npareto++];
            *pt = (store_pareto_rec){.op = op,
                                     .time_ns = share[k] * T * synth_uniform_time(q) / mult[k],
                                     .energy_nj = share[k] * E * synth_uniform_energy(q) / mult[k]};
            for (int c = 0; c < STORE_NSTATE; c++) pt->states[c] = (uint8_t)q;
          }
          t->bops[t->nbops++] = (store_bucket_op_rec){row, op, (uint64_t)mult[k]};
        }
        int at[3] = {0, 0, 0};
        for (size_t r = 1; r <= rounds; r++)
          for (int k = 0; k < 3; k++) {
            at[k] = (int)r;
            double time = 0, energy = 0;
            for (int j = 0; j < 3; j++) {
              time += mult[j] * t->pareto[first[j] + at[j]].time_ns;
              energy += mult[j] * t->pareto[first[j] + at[j]].energy_nj;
            }
            t->walk[t->nwalk++] = (store_walk_rec){
                row, t->bops[bk->ops_first + k].op, first[k] + (uint32_t)r, (uint64_t)mult[k], time, energy};
          }
      }
  return 0;
}

/* Write the store with the named policies ("nodvfs", "dvfs-c", "enpu-all", "uniform") and the
 * given provenance. @return 0 or the writer's error. */
static inline int synth_store_write_prov(const char *path, const store_provenance *prov,
                                         const char *const *policies, size_t npolicies, enpu_err *err) {
  synth_tables *t = calloc(npolicies ? npolicies : 1, sizeof *t);
  store_fixture_policy *views = calloc(npolicies ? npolicies : 1, sizeof *views);
  int rc = t && views ? 0 : -1;
  for (size_t i = 0; rc == 0 && i < npolicies; i++) {
    const double *em = !strcmp(policies[i], "enpu-all") ? synth_energy_enpu
                       : !strcmp(policies[i], "dvfs-c") ? synth_energy_dvfs
                                                        : NULL;
    rc = !strcmp(policies[i], "uniform") ? synth_uniform(&t[i]) : synth_policy(&t[i], em);
    views[i] = STORE_FIXTURE_VIEW(policies[i], t[i]);
  }
  if (rc != 0) rc = enpu_errorf(err, ENPU_ERR_NOMEM, "out of memory (synthetic store)");
  else rc = store_fixture_write(path, prov, 1, views, npolicies, err);
  for (size_t i = 0; t && i < npolicies; i++) synth_tables_free(&t[i]);
  free(t);
  free(views);
  return rc;
}

/* The store without model, chip or cluster documents: a hand-made store that any
 * cluster may replay. */
static inline int synth_store_write(const char *path, const char *const *policies, size_t npolicies,
                                    enpu_err *err) {
  static const store_provenance prov = {.tool_version = "synthetic", .job_json = "{\"name\": \"synthetic\"}"};
  return synth_store_write_prov(path, &prov, policies, npolicies, err);
}

#endif /* SYNTH_STORE_H */
