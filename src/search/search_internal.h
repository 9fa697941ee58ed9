/* search_internal.h — what the search files share beyond search.h: the `uniform` policy
 * (search_uniform.c) and the walk it records (search_walk.c). Private to src/search.
 *
 * The uniform policy is no DVFS plan but the table an online governor runs from: every
 * component of every op at one chip-wide V/f state. Its "Pareto set" per op is every
 * state, fastest (peak) first — point k is state peak − k; dominated states are kept,
 * since a governor may pick any — and its walk moves round by round: round k moves every
 * op's instances (graph op order) from point k − 1 to point k, so the prefix of k whole
 * rounds is the plan at state peak − k. */
#ifndef ENPU_SEARCH_INTERNAL_H
#define ENPU_SEARCH_INTERNAL_H

#include "search.h"

/* The uniform op level: op under `pipe` at every state peak..1 (states of all five
 * components equal), in that order. @return 0, or the cost model's error, ENPU_ERR_NOMEM. */
int search_uniform_sweep(cost_ctx *cost, const graph_op *op, const cost_pipeline *pipe, int peak,
                         search_pareto *out, enpu_err *err);

/* The uniform request level of graph g given every op's sweep (sets[i] for graph op i):
 * the rounds walk, and per slack the state with the least energy among those whose pass
 * fits the budget (energy is not monotone in the state: static power). `out` comes with
 * policy, the reference times and the all-peak plan filled; the rest is filled here. A
 * uniform pass has no V/f transition (one state throughout), so a plan's time and energy
 * are its ops' sums.
 * @return 0, ENPU_ERR_INVALID (a set that is not a sweep of `peak` states),
 * ENPU_ERR_INTERNAL (invariants), ENPU_ERR_NOMEM. */
int search_uniform_bucket(const graph *g, const search_pareto *const *sets, int peak, const double *slacks,
                          int nslack, search_bucket_result *out, enpu_err *err);

/* The rounds walk (see the file comment) over ops whose points are time-ordered (not
 * necessarily a Pareto set: a step may cost energy, and the walk carries no LP bound).
 * @return 0, ENPU_ERR_INVALID (empty set, multiplicity < 1, points out of time order),
 * ENPU_ERR_NOMEM. */
int search_walk_rounds(const search_req_op *ops, int nops, search_walk **out, enpu_err *err);

#endif /* ENPU_SEARCH_INTERNAL_H */
