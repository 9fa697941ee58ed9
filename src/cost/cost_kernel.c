/* cost_kernel.c — VLIW kernel generation from tile-level stages, and shadow register
 * allocation (§3.1, §3.3).
 *
 * A tile's core loop is a chain of stages (SRAM load → SA → VU … → SRAM store); stage k
 * is `chain` dependent commands, and its first command depends on the last command of
 * stage k−1 of the same iteration. A schedule variant is (unroll u, sw_depth d):
 *  - u copies of each iteration per trip, interleaved command by command, so a chain's
 *    consecutive commands are u commands apart (the ILP the compiler exposes);
 *  - d = 1 issues the stages of one trip in order; d ≥ 2 software-pipelines them: the
 *    body lists the stages last-first, each working d − 1 trips behind the stage before
 *    it, so a consumer reads the value its producer wrote d − 1 trips earlier.
 * Bundles pack consecutive commands of different units with no dependency between
 * them (one slot per unit). Every command writes its own register: the compiler
 * renames, so only true dependencies remain. A reduction's accumulator step (a stage's
 * `carried` bit) also reads its own register's value of the previous trip: each unroll
 * copy keeps a partial accumulator, so those values stay live across the loop's back
 * edge and hold a shadow register for the whole body when they are forwarded.
 *
 * Shadow registers (§3.1): a VU value read by later VU commands is a candidate; the
 * compiler allocates "priority ... based on dependency distance between each
 * producer-consumer command pair" and "prioritizes command pairs with shortest
 * dependency distances", so candidates go shortest first onto the first register free
 * over their live range. A larger file thus "maps more simultaneously live VU
 * dependencies to shadow registers" (§4.5): the accumulators (distance: a whole body of
 * VU commands) get registers only after the chains (distance: the unroll factor).
 *
 * Invariant: the occupancies of a stage's commands over all iterations add up to the
 * stage's tile-level cycles, so the kernel does exactly the tile level's work. */
#include <string.h>

#include "cost_internal.h"

static double pipe_cycles(const config_chip *chip, int unit) {
  switch (unit) {
  case CONFIG_SA: return chip->sa_dim; /* systolic fill before the first result row */
  case CONFIG_VU: return COST_VU_PIPE_CYCLES;
  default: return COST_SRAM_PIPE_CYCLES;
  }
}

int cost_kernel_build(const config_chip *chip, const cost_tile *tile, int unroll, int sw_depth, int n_shadow,
                      cost_kernel *k, enpu_err *err) {
  int base[COST_MAX_STAGES], total = 0;
  for (int s = 0; s < tile->nstage; s++) {
    base[s] = total * unroll;
    total += tile->stage[s].chain;
  }
  int lag = sw_depth > 1 ? sw_depth - 1 : 1;
  ENPU_RETURN_IF(total * unroll > COST_MAX_CMDS || total * unroll * lag > COST_MAX_REGS, err, ENPU_ERR_RANGE,
                 "kernel of %d commands × unroll %d × lag %d exceeds %d", total, unroll, lag, COST_MAX_CMDS);
  memset(k, 0, sizeof *k);
  k->unroll = unroll;
  k->sw_depth = sw_depth;
  k->nstage = tile->nstage;
  k->iters = tile->iters;
  k->nreg = total * unroll;
  k->nslot = k->nreg * lag;

  uint8_t in_bundle[COST_NUNIT] = {0};
  int bundle_first = 0;
  for (int o = 0; o < tile->nstage; o++) {
    int s = sw_depth == 1 ? o : tile->nstage - 1 - o;
    const cost_stage *st = &tile->stage[s];
    double occ = st->cycles / ((double)tile->iters * st->chain);
    double lat = occ + pipe_cycles(chip, st->unit);
    for (int step = 0; step < st->chain; step++) {
      for (int c = 0; c < unroll; c++) {
        cost_cmd *cmd = &k->cmd[k->ncmd];
        cmd->dst = (int16_t)(base[s] + step * unroll + c);
        if (step > 0) cmd->src[0] = (int16_t)(base[s] + (step - 1) * unroll + c);
        else if (s > 0) cmd->src[0] = (int16_t)(base[s - 1] + (tile->stage[s - 1].chain - 1) * unroll + c);
        else cmd->src[0] = -1;
        cmd->src[1] = -1;
        if (st->carried >> step & 1u) { /* the accumulator: its own previous-trip value */
          cmd->src[1] = cmd->dst;
          cmd->src_prev[1] = 1;
        }
        cmd->unit = (uint8_t)st->unit;
        cmd->stage = (uint8_t)s;
        cmd->copy = (uint8_t)c;
        cmd->occ_cycles = (float)occ;
        cmd->lat_cycles = (float)lat;
        /* A new bundle when the slot is taken or the source is produced in this bundle. */
        int dep_inside = 0;
        for (int x = bundle_first; x < k->ncmd; x++)
          if (k->cmd[x].dst == cmd->src[0]) dep_inside = 1;
        if (k->ncmd == 0 || in_bundle[st->unit] || dep_inside) {
          memset(in_bundle, 0, sizeof in_bundle);
          cmd->bundle_start = 1;
          bundle_first = k->ncmd;
        }
        in_bundle[st->unit] = 1;
        k->ncmd++;
      }
    }
  }
  cost_kernel_alloc_shadow(k, n_shadow);
  return 0;
}

/* A VU value that later VU commands read: in the same body up to last_use, and in the
 * next trip (a loop-carried source) up to carried_use; distance is the shortest
 * dependency distance in VU commands over its readers. */
typedef struct {
  int producer, last_use, carried_use, distance;
} shadow_cand;

/* The candidate of VU command p's value, or distance < 0 when no VU command reads it. */
static shadow_cand shadow_candidate(const cost_kernel *k, const int *vu_pos, int nvu, int p) {
  const int16_t reg = k->cmd[p].dst;
  shadow_cand cd = {p, -1, -1, 1 << 30};
  for (int i = p + 1; i < k->ncmd; i++) {
    const cost_cmd *c = &k->cmd[i];
    for (int q = 0; q < 2 && c->unit == CONFIG_VU; q++)
      if (c->src[q] == reg && !c->src_prev[q]) {
        cd.last_use = i;
        if (vu_pos[i] - vu_pos[p] < cd.distance) cd.distance = vu_pos[i] - vu_pos[p];
      }
    if (c->dst == reg) break; /* overwritten: later readers see another value */
  }
  for (int i = 0; i <= p; i++) { /* readers of it in the next trip */
    const cost_cmd *c = &k->cmd[i];
    for (int q = 0; q < 2 && c->unit == CONFIG_VU; q++)
      if (c->src[q] == reg && c->src_prev[q]) {
        cd.carried_use = i;
        if (nvu - vu_pos[p] + vu_pos[i] < cd.distance) cd.distance = nvu - vu_pos[p] + vu_pos[i];
      }
  }
  if (cd.last_use < 0 && cd.carried_use < 0) cd.distance = -1;
  return cd;
}

/* The body positions a candidate's register is live at, as up to two half-open ranges:
 * [producer, last use), or, when it is carried, on to the end of the body and from its
 * start to the carried reader. @return the number of ranges. */
static int live_ranges(const shadow_cand *cd, int ncmd, int lo[2], int hi[2]) {
  lo[0] = cd->producer;
  hi[0] = cd->carried_use >= 0 ? ncmd : cd->last_use;
  lo[1] = 0;
  hi[1] = cd->carried_use >= 0 ? cd->carried_use : 0;
  return hi[1] > 0 ? 2 : 1;
}

void cost_kernel_alloc_shadow(cost_kernel *k, int n_shadow) {
  shadow_cand cand[COST_MAX_CMDS];
  int ncand = 0, nvu = 0;
  int vu_pos[COST_MAX_CMDS]; /* index among the body's VU commands */
  for (int i = 0; i < k->ncmd; i++) vu_pos[i] = k->cmd[i].unit == CONFIG_VU ? nvu++ : -1;

  for (int p = 0; p < k->ncmd; p++) {
    if (k->cmd[p].unit != CONFIG_VU || k->cmd[p].dst < 0) continue;
    shadow_cand cd = shadow_candidate(k, vu_pos, nvu, p);
    if (cd.distance >= 0) cand[ncand++] = cd;
  }
  /* Shortest dependency distance first: it would stall the FE longest (§3.1). */
  for (int i = 1; i < ncand; i++) {
    shadow_cand v = cand[i];
    int j = i - 1;
    while (j >= 0 && cand[j].distance > v.distance) {
      cand[j + 1] = cand[j];
      j--;
    }
    cand[j + 1] = v;
  }
  /* Live ranges per shadow register; the first register that is free over the range. */
  uint8_t busy[COST_MAX_CMDS][COST_MAX_CMDS];
  int nreg_used = n_shadow < COST_MAX_CMDS ? n_shadow : COST_MAX_CMDS;
  memset(busy, 0, sizeof busy);
  for (int x = 0; x < ncand; x++) {
    for (int r = 0; r < nreg_used; r++) {
      int lo[2], hi[2], free = 1;
      const int nr = live_ranges(&cand[x], k->ncmd, lo, hi);
      for (int g = 0; g < nr; g++)
        for (int t = lo[g]; t < hi[g] && free; t++) free = !busy[r][t];
      if (!free) continue;
      for (int g = 0; g < nr; g++)
        for (int t = lo[g]; t < hi[g]; t++) busy[r][t] = 1;
      const int16_t reg = k->cmd[cand[x].producer].dst;
      for (int i = 0; i < k->ncmd; i++) {
        cost_cmd *c = &k->cmd[i];
        if (c->unit != CONFIG_VU) continue;
        for (int q = 0; q < 2; q++) {
          const int in_body = !c->src_prev[q] && i > cand[x].producer && i <= cand[x].last_use;
          const int next_trip = c->src_prev[q] && i <= cand[x].carried_use;
          if (c->src[q] == reg && (in_body || next_trip)) c->src_fwd[q] = 1;
        }
      }
      break;
    }
  }
}
