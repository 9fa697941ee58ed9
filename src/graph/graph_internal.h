/* graph_internal.h — helpers shared by the graph module's files (not part of its API). */
#ifndef ENPU_GRAPH_INTERNAL_H
#define ENPU_GRAPH_INTERNAL_H

#include <stdint.h>

#include "config.h"

/* Torus axes a parallel group can be split over (a 3D torus). */
#define GRAPH_ICI_MAX_AXES 3

/* `degree` split over at most `axes` torus axes as the authors' simulator splits it
 * (graph_ici.c); fills dims and returns how many axes it uses (0 for degree 1). */
int graph_ici_split(int64_t degree, int axes, int64_t dims[GRAPH_ICI_MAX_AXES]);
/* Chips in a group split over dims[0..n). */
int64_t graph_ici_ranks(const int64_t *dims, int n);
/* Elements a chip sends in a staged reduce-scatter of `elems` per chip over dims. */
double graph_ici_rs_elems(double elems, const int64_t *dims, int n);
/* Elements a chip sends in a staged all-gather whose input is `elems` per chip. */
double graph_ici_ag_elems(double elems, const int64_t *dims, int n);
/* The axes (count and sizes) the simulator splits attention tensor parallelism (tp chips)
 * and expert tensor parallelism (tp·dp/ep chips) over, on a chip with `chip_axes` torus
 * axes; a count of 0 means no collective. */
void graph_ici_groups(const config_parallel *p, int chip_axes, int *tp_n, int64_t tp_dims[GRAPH_ICI_MAX_AXES],
                      int *etp_n, int64_t etp_dims[GRAPH_ICI_MAX_AXES]);

#endif /* ENPU_GRAPH_INTERNAL_H */
