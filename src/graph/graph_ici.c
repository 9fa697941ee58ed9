/* graph_ici.c — the authors' simulator's collective arithmetic (job "ici_model":
 * "neusim"; NeuSim at commit 45dbdc1), kept apart from the builder so it can be checked
 * by hand: how a parallel degree is split over torus axes and how many elements a chip
 * sends per collective. Pure functions of their arguments.
 *
 * Sources (neusim/…, 45dbdc1):
 *  - npusim/frontend/util.py, split_parallelism_degree: "initialize axes to the smallest
 *    prime factors of @p_degree. Then, distribute the remaining factors to the axes"
 *    (each remaining factor multiplies the currently smallest axis); fewer prime factors
 *    than axes leave fewer axes.
 *  - npusim/frontend/llm_ops_lib.py, compute_reduce_scatter_elem_per_chip: "for dim_size
 *    in dim_sizes: tot_elem += cur_stage_elem; cur_stage_elem = ceil(cur_stage_elem /
 *    dim_size)"; compute_all_gather_elem_per_chip: the same on "elem_per_chip *
 *    int(np.prod(dim_sizes))"; compute_all_reduce_elem_per_chip: "2 *" the former.
 *  - npusim/frontend/run_sim_lib.py, map_parallelism_to_ici_axes_llm and _llm_moe: which
 *    of the chip's torus axes tensor and expert parallelism use. */
#include "graph_internal.h"

#include <math.h>

int graph_ici_split(int64_t degree, int axes, int64_t dims[GRAPH_ICI_MAX_AXES]) {
  int64_t factors[64];
  int nf = 0;
  for (int64_t f = 2, n = degree; n > 1 && nf < 64;) {
    if (f * f > n) f = n;
    if (n % f == 0) factors[nf++] = f, n /= f;
    else f += f == 2 ? 1 : 2;
  }
  if (axes > GRAPH_ICI_MAX_AXES) axes = GRAPH_ICI_MAX_AXES;
  if (axes < 1) return 0; /* no axis to split over */
  int n = nf < axes ? nf : axes;
  for (int i = 0; i < n; i++) dims[i] = factors[i];
  for (int i = n; i < nf; i++) {
    int min = 0;
    for (int a = 1; a < n; a++)
      if (dims[a] < dims[min]) min = a;
    dims[min] *= factors[i];
  }
  return n;
}

int64_t graph_ici_ranks(const int64_t *dims, int n) {
  int64_t ranks = 1;
  for (int i = 0; i < n; i++) ranks *= dims[i];
  return ranks;
}

double graph_ici_rs_elems(double elems, const int64_t *dims, int n) {
  double total = 0, cur = elems;
  for (int i = 0; i < n; i++) {
    total += cur;
    cur = ceil(cur / (double)dims[i]);
  }
  return total;
}

double graph_ici_ag_elems(double elems, const int64_t *dims, int n) {
  double prod = 1;
  for (int i = 0; i < n; i++) prod *= (double)dims[i];
  return graph_ici_rs_elems(elems * prod, dims, n);
}

static void ici_axes(const config_parallel *p, int chip_axes, int *tp_axes, int *etp_axes) {
  const int tp = p->tp > 1, dp = p->dp > 1, pp = p->pp > 1;
  int t = tp, d = dp;
  if (tp + dp + pp == 1) t = tp ? chip_axes : 0, d = dp ? chip_axes : 0;
  else if (tp + dp + pp == 2) t = tp ? chip_axes - 1 : 0, d = dp ? (tp ? 1 : chip_axes - 1) : 0;
  const int e = t + d;
  int ep_axes = 0;
  if (e == 1) ep_axes = p->ep > 1;
  else if (e > 1) ep_axes = p->ep < p->dp * p->tp ? p->ep > 1 : e;
  *tp_axes = t;
  *etp_axes = e - ep_axes;
}

void graph_ici_groups(const config_parallel *p, int chip_axes, int *tp_n, int64_t tp_dims[GRAPH_ICI_MAX_AXES],
                      int *etp_n, int64_t etp_dims[GRAPH_ICI_MAX_AXES]) {
  int tp_axes, etp_axes;
  ici_axes(p, chip_axes, &tp_axes, &etp_axes);
  *tp_n = tp_axes > 0 ? graph_ici_split(p->tp, tp_axes, tp_dims) : 0;
  *etp_n = etp_axes > 0 ? graph_ici_split((int64_t)p->dp * p->tp / p->ep, etp_axes, etp_dims) : 0;
}
