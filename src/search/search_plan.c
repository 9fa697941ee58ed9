/* search_plan.c — a slack's budget in each budget mode; what a compiled plan must
 * satisfy before it leaves the search
 * (src/README.md, "Plan invariants") and how it is emitted: the vf.set register
 * encoding and stream (paper §3.2).
 *
 * vf.set word: bits 8u..8u+7 hold the state of unit u (FE, SA, VU, SRAM, HBM, ICI),
 * bits 48..53 the mask of units the command changes; fields outside the mask are 0 so
 * that a word has exactly one encoding. */
#include <math.h>

#include "search.h"

_Static_assert((int)SEARCH_VF_NUNIT == (int)COST_NUNIT, "vf.set has one field per clocked unit");

#define INV_RTOL 1e-9

double search_budget_ns(config_budget budget, double t_nodvfs_ns, double t_peak_ns, double slack) {
  return enpu_budget_ns(budget == CONFIG_BUDGET_PAPER, t_nodvfs_ns, t_peak_ns, slack);
}

static int le_tol(double a, double b) { return a <= b + INV_RTOL * fmax(fabs(a), fabs(b)); }

int search_check_invariants(const search_slack_plan *plans, int n, double peak_energy_nj, enpu_err *err) {
  for (int i = 0; i < n; i++) {
    const search_slack_plan *p = &plans[i];
    const int paper = p->budget == CONFIG_BUDGET_PAPER;
    const double t = paper ? p->cp_time_ns : p->time_ns;
    ENPU_RETURN_IF(!le_tol(t, p->budget_ns), err, ENPU_ERR_INTERNAL,
                   "slack %g: plan %s %.3f ns exceeds the budget %.3f ns", p->slack,
                   paper ? "critical-path time" : "time", t, p->budget_ns);
    ENPU_RETURN_IF(!le_tol(p->energy_nj, peak_energy_nj), err, ENPU_ERR_INTERNAL,
                   "slack %g: plan energy %.3f nJ above the all-peak plan's %.3f nJ", p->slack, p->energy_nj,
                   peak_energy_nj);
    /* The bound is over the plain Pareto sets: gating can go below it. */
    ENPU_RETURN_IF(!p->gated && !le_tol(p->lower_bound_nj, p->energy_nj), err, ENPU_ERR_INTERNAL,
                   "slack %g: lower bound %.3f nJ above the plan's energy %.3f nJ", p->slack, p->lower_bound_nj,
                   p->energy_nj);
    if (i == 0) continue;
    ENPU_RETURN_IF(!(p->slack > plans[i - 1].slack), err, ENPU_ERR_INTERNAL, "slacks not increasing: %g after %g",
                   p->slack, plans[i - 1].slack);
    ENPU_RETURN_IF(!le_tol(p->energy_nj, plans[i - 1].energy_nj), err, ENPU_ERR_INTERNAL,
                   "slack %g: energy %.3f nJ above slack %g's %.3f nJ", p->slack, p->energy_nj, plans[i - 1].slack,
                   plans[i - 1].energy_nj);
  }
  return 0;
}

int search_vfset_encode(const int state[SEARCH_VF_NUNIT], unsigned mask, uint64_t *word, enpu_err *err) {
  ENPU_RETURN_IF(mask & ~SEARCH_VF_MASK_ALL, err, ENPU_ERR_RANGE, "vf.set mask 0x%x beyond 6 units", mask);
  uint64_t w = (uint64_t)mask << 48;
  for (int u = 0; u < SEARCH_VF_NUNIT; u++) {
    if (!(mask >> u & 1u)) continue;
    ENPU_RETURN_IF(state[u] < 0 || state[u] > 255, err, ENPU_ERR_RANGE, "vf.set state %d of unit %d outside 0..255",
                   state[u], u);
    w |= (uint64_t)state[u] << (8 * u);
  }
  *word = w;
  return 0;
}

int search_vfset_decode(uint64_t word, int state[SEARCH_VF_NUNIT], unsigned *mask, enpu_err *err) {
  ENPU_RETURN_IF(word >> 54, err, ENPU_ERR_FORMAT, "vf.set word 0x%016llx has bits above 53",
                 (unsigned long long)word);
  *mask = (unsigned)(word >> 48);
  for (int u = 0; u < SEARCH_VF_NUNIT; u++) {
    const int field = (int)(word >> (8 * u) & 0xFFu);
    const int on = (int)(*mask >> u & 1u);
    ENPU_RETURN_IF(!on && field, err, ENPU_ERR_FORMAT,
                   "vf.set word 0x%016llx: unit %d outside the mask has state %d", (unsigned long long)word, u,
                   field);
    state[u] = on ? field : -1;
  }
  return 0;
}

/* The six clocked units of one instance's plan: FE runs at max(SA, VU, SRAM). */
static void vf_units(const int s[CONFIG_NCOMP], int u[SEARCH_VF_NUNIT]) {
  int fe = s[CONFIG_SA];
  if (s[CONFIG_VU] > fe) fe = s[CONFIG_VU];
  if (s[CONFIG_SRAM] > fe) fe = s[CONFIG_SRAM];
  u[SEARCH_VF_FE] = fe;
  for (int c = 0; c < CONFIG_NCOMP; c++) u[1 + c] = s[c];
}

int search_vfset_stream(const int (*state)[CONFIG_NCOMP], int64_t instances, search_vfset_cmd *out, int64_t *count,
                        enpu_err *err) {
  int prev[SEARCH_VF_NUNIT] = {-1, -1, -1, -1, -1, -1};
  *count = 0;
  for (int64_t i = 0; i < instances; i++) {
    int cur[SEARCH_VF_NUNIT];
    vf_units(state[i], cur);
    unsigned mask = 0;
    for (int u = 0; u < SEARCH_VF_NUNIT; u++)
      if (cur[u] != prev[u]) mask |= 1u << u;
    if (!mask) continue;
    ENPU_FORWARD(search_vfset_encode(cur, mask, &out[*count].word, err));
    out[*count].instance = i;
    ++*count;
    for (int u = 0; u < SEARCH_VF_NUNIT; u++) prev[u] = cur[u];
  }
  return 0;
}

int search_vfset_check(const int (*state)[CONFIG_NCOMP], int64_t instances, const search_vfset_cmd *cmds,
                       int64_t count, enpu_err *err) {
  int cur[SEARCH_VF_NUNIT] = {-1, -1, -1, -1, -1, -1};
  int64_t next = 0;
  for (int64_t i = 0; i < instances; i++) {
    for (; next < count && cmds[next].instance <= i; next++) {
      ENPU_RETURN_IF(cmds[next].instance < i, err, ENPU_ERR_FORMAT,
                     "vf.set command %lld for instance %lld is out of order", (long long)next,
                     (long long)cmds[next].instance);
      int st[SEARCH_VF_NUNIT];
      unsigned mask;
      ENPU_FORWARD(search_vfset_decode(cmds[next].word, st, &mask, err));
      for (int u = 0; u < SEARCH_VF_NUNIT; u++)
        if (mask >> u & 1u) cur[u] = st[u];
    }
    int want[SEARCH_VF_NUNIT];
    vf_units(state[i], want);
    for (int u = 0; u < SEARCH_VF_NUNIT; u++)
      ENPU_RETURN_IF(cur[u] != want[u], err, ENPU_ERR_FORMAT,
                     "vf.set replay: instance %lld unit %d at state %d, plan says %d", (long long)i, u, cur[u],
                     want[u]);
  }
  ENPU_RETURN_IF(next != count, err, ENPU_ERR_FORMAT, "vf.set stream has %lld commands past the last instance",
                 (long long)(count - next));
  return 0;
}
