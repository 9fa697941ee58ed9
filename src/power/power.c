/* power.c — per-component, per-state power tables and regulator efficiency built once from
 * a chip's V/f and IVR tables, and the energy functions that only look them up.
 *
 * Invariants after power_model_create: rows[c * (S+1) + s] holds the level, the rail's
 * voltage and the static and full-utilisation dynamic power (whole component) of
 * component c at state s in 0..S, split into the rail's part and the fixed-supply part;
 * eta[(c * (S+1) + s) * na + k] is the rail regulator's efficiency at that state's
 * voltage and the k-th activity of its grid (activities sorted ascending), fixed_eta[k]
 * the fixed regulator's. Nothing is written after create, so a model can be shared across
 * threads. The modelling choices are listed in power.h. */
#include "power.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* Relative tolerance for comparing levels: 34 × 0.05 GHz is 1.7000000000000002 in
 * binary, and must still be covered by a 1.7 GHz row. */
#define POWER_LEVEL_RTOL 1e-9

typedef struct {
  double level;                           /* GHz (SA/VU/SRAM) or GB/s (HBM/ICI) */
  double voltage_v;                       /* the component's DVFS rail (HBM/ICI: the controller) */
  double static_w;                        /* the rail's part, whole component */
  double dynamic_w;                       /* idem, utilisation 1, busy the whole time */
  double fixed_static_w, fixed_dynamic_w; /* HBM I/O + DRAM, ICI PHY: fixed regulator */
} power_row;

/* SA/VU/SRAM state s powered at a higher rail (a domain shared with a member that needs
 * more voltage at the same frequency): the state's level in each band of the component's
 * table. */
#define POWER_NRAILCOMP ((int)CONFIG_SRAM + 1)
#define POWER_MAXBANDS 16

typedef struct {
  double voltage_v, static_w, dynamic_w; /* whole component */
} power_rail_row;

/* A regulator efficiency grid: eff[k * nv + j] at activity act[k] and voltage volt[j]. */
typedef struct {
  int na, nv;
  double *act; /* one block with volt and eff */
  double *volt;
  double *eff;
} power_grid;

struct power_model {
  power_hbm_mode hbm_mode;
  power_regulator regulator;
  int peak_state;
  int count[CONFIG_NCOMP];
  bool on_dvfs[CONFIG_NCOMP]; /* the component's rail is on the DVFS IVR */
  double other_static_w, tdp_w;
  double step_mv, step_ns;
  power_grid dvfs, fixed; /* dvfs is empty (na 0) under POWER_REG_FIXED */
  power_row *rows;        /* CONFIG_NCOMP × (peak_state + 1); one block with the tables below */
  double *eta;            /* CONFIG_NCOMP × (peak_state + 1) × (its rail's grid).na */
  double *fixed_eta;      /* fixed.na: the fixed regulator at its (only) voltage */
  double *eta_pmax;       /* like eta: the row's best efficiency at its activities 0..k */
  double *fixed_eta_pmax; /* like fixed_eta */
  int nbands[POWER_NRAILCOMP];
  power_rail_row *rail; /* POWER_NRAILCOMP × (peak_state + 1) × POWER_MAXBANDS */
  bool has_gating;
  config_gating gating[CONFIG_NCOMP];
};

/* ---------------------------------------------------------------------------------
 * V/f tables: bands are maximal runs of rows with equal voltage (rows sorted by level,
 * voltage non-decreasing: checked by config at load). */

static int band_end(const config_vf_table *t, int first) {
  int i = first;
  while (i + 1 < t->count && t->points[i + 1].voltage_v == t->points[first].voltage_v) i++;
  return i;
}

static int covers(double top, double level) { return top >= level * (1.0 - POWER_LEVEL_RTOL); }

/* First row of the lowest band whose top covers `level`; the top band when none does
 * (HBM/ICI peaks a hair above the last row). */
static int band_for_level(const config_vf_table *t, double level) {
  int first = 0;
  for (;;) {
    int last = band_end(t, first);
    if (covers(t->points[last].level, level) || last + 1 >= t->count) return first;
    first = last + 1;
  }
}

static int top_band(const config_vf_table *t) {
  int first = 0;
  while (band_end(t, first) + 1 < t->count) first = band_end(t, first) + 1;
  return first;
}

/* Dynamic power of one unit at `level` in the band starting at row `first`: linear in
 * the level through the origin (the power tables' README, jobs/chips/tpuv5p/README.md:
 * dynamic power "scales linearly with frequency"), anchored on the band's lowest row at
 * or above the level so every row is reproduced exactly; above the band's last row,
 * anchored on that row. */
static double band_dynamic_w(const config_vf_table *t, int first, double level) {
  if (level <= 0.0) return 0.0;
  int last = band_end(t, first);
  int p = last;
  for (int i = first; i <= last; i++) {
    if (t->points[i].level > 0.0 && covers(t->points[i].level, level)) {
      p = i;
      break;
    }
  }
  if (t->points[p].level <= 0.0) return 0.0; /* a band made only of the 0 GHz row */
  return level * t->points[p].dynamic_w / t->points[p].level;
}

static double state_level(const config_chip *chip, config_component c, int state) {
  double frac = (double)state / chip->freq_states;
  switch (c) {
  case CONFIG_HBM: return frac * chip->hbm_gbps;
  case CONFIG_ICI: return frac * chip->ici_links * chip->ici_link_gbps;
  default: return config_state_ghz(chip, state);
  }
}

/* A table's static and dynamic power at `level` in the band starting at row `first`. */
static void band_power(const config_vf_table *t, int first, double level, double *static_w, double *dynamic_w) {
  *static_w = t->points[first].static_w;
  *dynamic_w = band_dynamic_w(t, first, level);
}

/* HBM/ICI: the controller is the table less (1 − share) of its top band at the same level
 * (the PHY, fixed in the table); fails when the share leaves the controller negative. */
static int split_controller(const config_chip *chip, config_component c, int s, double share, power_row *r,
                            double *phy_static_w, double *phy_dynamic_w, enpu_err *err) {
  const config_vf_table *t = &chip->vf[c];
  double top_s, top_d;
  band_power(t, top_band(t), r->level, &top_s, &top_d);
  *phy_static_w = (1.0 - share) * top_s;
  *phy_dynamic_w = (1.0 - share) * top_d;
  r->static_w -= *phy_static_w;
  r->dynamic_w -= *phy_dynamic_w;
  ENPU_RETURN_IF(r->static_w < -1e-9 || r->dynamic_w < -1e-9, err, ENPU_ERR_RANGE,
                 "chip %s: %s controller share %g leaves negative controller power at state %d "
                 "(static %g W, dynamic %g W)",
                 chip->name, config_component_name(c), share, s, r->static_w, r->dynamic_w);
  r->static_w = fmax(r->static_w, 0.0);
  r->dynamic_w = fmax(r->dynamic_w, 0.0);
  return 0;
}

/* The HBM PHY's parts at the row's level: the DRAM core (one fixed voltage) and the I/O
 * link, at its top voltage unless the model scales it (HBM4-style full DVFS). */
static void hbm_phy(const power_model *pm, const config_chip *chip, power_row *r) {
  const config_vf_table *io = &chip->hbm_io, *dram = &chip->hbm_dram;
  double s_io, d_io, s_dram, d_dram;
  int io_band = pm->hbm_mode == POWER_HBM_FULL ? band_for_level(io, r->level) : top_band(io);
  band_power(io, io_band, r->level, &s_io, &d_io);
  band_power(dram, top_band(dram), r->level, &s_dram, &d_dram);
  r->fixed_static_w = s_io + s_dram;
  r->fixed_dynamic_w = d_io + d_dram;
}

/* Every band of an SA/VU/SRAM table at each state's level (the rail rows). */
static int fill_rail_rows(power_model *pm, const config_chip *chip, config_component c, enpu_err *err) {
  const config_vf_table *t = &chip->vf[c];
  int nb = 0;
  for (int first = 0; first < t->count; first = band_end(t, first) + 1) nb++;
  ENPU_RETURN_IF(nb > POWER_MAXBANDS, err, ENPU_ERR_RANGE,
                 "chip %s: the %s table has %d voltage bands, at most %d supported", chip->name,
                 config_component_name(c), nb, POWER_MAXBANDS);
  pm->nbands[c] = nb;
  for (int s = 0; s <= pm->peak_state; s++) {
    power_rail_row *r = &pm->rail[((size_t)c * (pm->peak_state + 1) + s) * POWER_MAXBANDS];
    const double level = state_level(chip, c, s);
    for (int b = 0, first = 0; b < nb; b++, first = band_end(t, first) + 1) {
      r[b].voltage_v = t->points[first].voltage_v;
      band_power(t, first, level, &r[b].static_w, &r[b].dynamic_w);
      r[b].static_w *= pm->count[c];
      r[b].dynamic_w *= pm->count[c];
    }
  }
  return 0;
}

static int fill_rows(power_model *pm, const config_chip *chip, config_component c, enpu_err *err) {
  const config_vf_table *t = &chip->vf[c];
  ENPU_RETURN_IF(t->count <= 0 || t->points == NULL, err, ENPU_ERR_INVALID, "chip %s: the %s V/f table is empty",
                 chip->name, config_component_name(c));
  ENPU_RETURN_IF(c == CONFIG_HBM && (chip->hbm_io.count <= 0 || chip->hbm_dram.count <= 0), err, ENPU_ERR_INVALID,
                 "chip %s: the HBM I/O or DRAM table is empty", chip->name);
  for (int s = 0; s <= pm->peak_state; s++) {
    power_row *r = &pm->rows[c * (pm->peak_state + 1) + s];
    *r = (power_row){.level = state_level(chip, c, s)};
    /* Gated: the rail sits at the lowest voltage (band 0), static power still drawn. */
    int b = s == 0 ? 0 : band_for_level(t, r->level);
    r->voltage_v = t->points[b].voltage_v;
    band_power(t, b, r->level, &r->static_w, &r->dynamic_w);
    if (c == CONFIG_HBM || c == CONFIG_ICI) {
      double share = c == CONFIG_HBM ? chip->hbm_controller_share : chip->ici_controller_share;
      ENPU_FORWARD(split_controller(chip, c, s, share, r, &r->fixed_static_w, &r->fixed_dynamic_w, err));
      if (c == CONFIG_HBM) hbm_phy(pm, chip, r);
    }
    r->static_w *= pm->count[c];
    r->dynamic_w *= pm->count[c];
  }
  return (int)c < POWER_NRAILCOMP ? fill_rail_rows(pm, chip, c, err) : 0;
}

/* ---------------------------------------------------------------------------------
 * Regulator efficiency grid */

/* Sort and deduplicate v[0..n) in place; returns the number of distinct values. */
static int sort_unique(double *v, int n) {
  qsort(v, (size_t)n, sizeof *v, enpu_cmp_double);
  int m = 0;
  for (int i = 0; i < n; i++)
    if (m == 0 || v[i] != v[m - 1]) v[m++] = v[i];
  return m;
}

static int find_value(const double *v, int n, double x) {
  for (int i = 0; i < n; i++)
    if (v[i] == x) return i;
  return -1;
}

static void eta_grid_free(power_grid *g) { free(g->act); /* owns volt and eff */ }

/* Build the grid from the rows of `t` at scaling time `time_ns` (every row when
 * `any_time`: the fixed regulator has a single, nominal scaling time). */
static int eta_grid_build(power_grid *g, const config_ivr_table *t, const char *what, bool any_time, double time_ns,
                          enpu_err *err) {
  int n = 0;
  for (int i = 0; i < t->count; i++)
    if (any_time || t->points[i].scaling_time_ns == time_ns) n++;
  ENPU_RETURN_IF(n == 0, err, ENPU_ERR_INVALID, "the %s regulator table has no rows at scaling_time_ns %g", what,
                 time_ns);
  ENPU_RETURN_IF(ENPU_CALLOC_PARTS(ENPU_PART(g->act, n), ENPU_PART(g->volt, n), ENPU_PART(g->eff, n)) < 0, err,
                 ENPU_ERR_NOMEM, "out of memory");
  int k = 0;
  for (int i = 0; i < t->count; i++) {
    if (!(any_time || t->points[i].scaling_time_ns == time_ns)) continue;
    g->act[k] = t->points[i].activity;
    g->volt[k] = t->points[i].voltage_v;
    k++;
  }
  g->na = sort_unique(g->act, n);
  g->nv = sort_unique(g->volt, n);
  ENPU_RETURN_IF(g->na * g->nv != n, err, ENPU_ERR_INVALID,
                 "the %s regulator table at scaling_time_ns %g is not a full grid: %d rows "
                 "for %d activities × %d voltages",
                 what, time_ns, n, g->na, g->nv);
  bool *seen = enpu_calloc((size_t)n, sizeof *seen);
  ENPU_RETURN_IF(!seen, err, ENPU_ERR_NOMEM, "out of memory");
  int rc = 0;
  for (int i = 0; i < t->count && rc == 0; i++) {
    const config_ivr_point *p = &t->points[i];
    if (!(any_time || p->scaling_time_ns == time_ns)) continue;
    int cell = find_value(g->act, g->na, p->activity) * g->nv + find_value(g->volt, g->nv, p->voltage_v);
    if (seen[cell])
      rc = enpu_errorf(err, ENPU_ERR_INVALID, "the %s regulator table repeats activity %g, voltage %g V", what,
                       p->activity, p->voltage_v);
    seen[cell] = true;
    g->eff[cell] = p->efficiency;
  }
  free(seen);
  return rc;
}

/* Index of the first of v[0..n) (ascending) at or above x, the last when none is: how the
 * tables' source rounds an activity or a voltage between two rows. */
static int snap_up(const double *v, int n, double x) {
  int i = 0;
  while (i < n - 1 && v[i] < x - 1e-12) i++;
  return i;
}

static double eta_grid_eval(const power_grid *g, double voltage_v, double activity) {
  return g->eff[snap_up(g->act, g->na, activity) * g->nv + snap_up(g->volt, g->nv, voltage_v)];
}

/* η of one precomputed row (η at each grid activity) at `activity`. */
static double row_eta(const power_grid *g, const double *eta_row, double activity) {
  return eta_row[snap_up(g->act, g->na, activity)];
}

static const power_grid *rail_grid(const power_model *pm, config_component c) {
  return pm->on_dvfs[c] ? &pm->dvfs : &pm->fixed;
}

static const double *eta_row_of(const power_model *pm, config_component c, int state) {
  /* Rows are laid out with the larger grid's stride so both regulators fit. */
  int na = pm->dvfs.na > pm->fixed.na ? pm->dvfs.na : pm->fixed.na;
  return &pm->eta[((size_t)c * (pm->peak_state + 1) + state) * (size_t)na];
}

/* ---------------------------------------------------------------------------------
 * Create / free */

static int check_args(const config_chip *chip, power_hbm_mode hbm_mode, power_regulator regulator, enpu_err *err) {
  ENPU_RETURN_IF(chip == NULL, err, ENPU_ERR_INVALID, "power_model_create: no chip");
  ENPU_RETURN_IF(hbm_mode != POWER_HBM_CTRL_ONLY && hbm_mode != POWER_HBM_FULL, err, ENPU_ERR_INVALID,
                 "power_model_create: unknown HBM mode %d", (int)hbm_mode);
  ENPU_RETURN_IF(regulator != POWER_REG_DVFS && regulator != POWER_REG_FIXED &&
                     regulator != POWER_REG_DVFS_COMPUTE && regulator != POWER_REG_CHIPWIDE,
                 err, ENPU_ERR_INVALID, "power_model_create: unknown regulator %d", (int)regulator);
  ENPU_RETURN_IF(chip->freq_states <= 0 || chip->ivr_step_mv <= 0.0, err, ENPU_ERR_RANGE,
                 "chip %s: freq_states %d and ivr step_mv %g must be positive", chip->name, chip->freq_states,
                 chip->ivr_step_mv);
  return 0;
}

/* η of every row at every activity of its rail's grid, and the fixed regulator's. */
static void fill_eta(power_model *pm) {
  const int na = pm->dvfs.na > pm->fixed.na ? pm->dvfs.na : pm->fixed.na;
  for (int c = 0; c < CONFIG_NCOMP; c++) {
    const power_grid *g = rail_grid(pm, (config_component)c);
    for (int s = 0; s <= pm->peak_state; s++) {
      double *row = &pm->eta[((size_t)c * (pm->peak_state + 1) + s) * (size_t)na];
      const double v = pm->rows[c * (pm->peak_state + 1) + s].voltage_v;
      for (int k = 0; k < g->na; k++) row[k] = eta_grid_eval(g, v, g->act[k]);
    }
  }
  for (int k = 0; k < pm->fixed.na; k++)
    pm->fixed_eta[k] = eta_grid_eval(&pm->fixed, pm->fixed.volt[pm->fixed.nv - 1], pm->fixed.act[k]);
  for (int k = 0; k < pm->fixed.na; k++)
    pm->fixed_eta_pmax[k] = fmax(k ? pm->fixed_eta_pmax[k - 1] : 0, pm->fixed_eta[k]);
  for (size_t i = 0; i < CONFIG_NCOMP * ((size_t)pm->peak_state + 1); i++)
    for (int k = 0; k < na; k++)
      pm->eta_pmax[i * na + k] = fmax(k ? pm->eta_pmax[i * na + k - 1] : 0, pm->eta[i * na + k]);
}

int power_model_create(const config_chip *chip, power_hbm_mode hbm_mode, power_regulator regulator,
                       power_model **out, enpu_err *err) {
  *out = NULL;
  ENPU_FORWARD(check_args(chip, hbm_mode, regulator, err));
  power_model *pm = enpu_calloc(1, sizeof *pm);
  ENPU_RETURN_IF(!pm, err, ENPU_ERR_NOMEM, "out of memory");
  pm->hbm_mode = hbm_mode;
  pm->regulator = regulator;
  pm->peak_state = chip->freq_states;
  for (int c = 0; c < CONFIG_NCOMP; c++) {
    pm->count[c] = 1;
    pm->on_dvfs[c] = regulator == POWER_REG_DVFS ||
                     (regulator == POWER_REG_DVFS_COMPUTE && c != CONFIG_HBM && c != CONFIG_ICI);
  }
  pm->count[CONFIG_SA] = chip->sa_count;
  pm->count[CONFIG_VU] = chip->vu_count;
  pm->other_static_w = chip->other_static_w;
  pm->tdp_w = chip->tdp_w;
  pm->step_mv = chip->ivr_step_mv;
  pm->step_ns = chip->ivr_step_ns;
  pm->has_gating = chip->has_gating;
  memcpy(pm->gating, chip->gating, sizeof pm->gating);

  size_t nstates = (size_t)pm->peak_state + 1;
  int rc = eta_grid_build(&pm->fixed, &chip->ivr_fixed, "fixed", true, 0.0, err);
  if (rc == 0 && regulator != POWER_REG_FIXED && regulator != POWER_REG_CHIPWIDE)
    rc = eta_grid_build(&pm->dvfs, &chip->ivr_dvfs, "DVFS", false, chip->ivr_scaling_time_ns, err);
  if (rc == 0) {
    size_t na = (size_t)(pm->dvfs.na > pm->fixed.na ? pm->dvfs.na : pm->fixed.na);
    if (ENPU_CALLOC_PARTS(ENPU_PART(pm->rows, CONFIG_NCOMP * nstates),
                          ENPU_PART(pm->eta, CONFIG_NCOMP * nstates * na), ENPU_PART(pm->fixed_eta, pm->fixed.na),
                          ENPU_PART(pm->eta_pmax, CONFIG_NCOMP * nstates * na),
                          ENPU_PART(pm->fixed_eta_pmax, pm->fixed.na),
                          ENPU_PART(pm->rail, POWER_NRAILCOMP * nstates * POWER_MAXBANDS)) < 0)
      rc = enpu_errorf(err, ENPU_ERR_NOMEM, "out of memory");
  }
  for (int c = 0; c < CONFIG_NCOMP && rc == 0; c++) rc = fill_rows(pm, chip, c, err);
  if (rc < 0) {
    enpu_err_prefix(err, "power model for chip %s: ", chip->name);
    power_model_free(pm);
    return rc;
  }
  fill_eta(pm);
  *out = pm;
  return 0;
}

void power_model_free(power_model *pm) {
  if (!pm) return;
  eta_grid_free(&pm->dvfs);
  eta_grid_free(&pm->fixed);
  free(pm->rows); /* owns the other tables */
  free(pm);
}

/* ---------------------------------------------------------------------------------
 * Lookups */

power_hbm_mode power_model_hbm_mode(const power_model *pm) { return pm->hbm_mode; }
power_regulator power_model_regulator(const power_model *pm) { return pm->regulator; }
int power_peak_state(const power_model *pm) { return pm->peak_state; }

static const power_row *row_of(const power_model *pm, config_component c, int state) {
  return &pm->rows[(size_t)c * (pm->peak_state + 1) + state];
}

double power_level(const power_model *pm, config_component c, int state) { return row_of(pm, c, state)->level; }
double power_voltage_v(const power_model *pm, config_component c, int state) {
  return row_of(pm, c, state)->voltage_v;
}
double power_static_w(const power_model *pm, config_component c, int state) {
  const power_row *r = row_of(pm, c, state);
  return r->static_w + r->fixed_static_w;
}
double power_dynamic_w(const power_model *pm, config_component c, int state) {
  const power_row *r = row_of(pm, c, state);
  return r->dynamic_w + r->fixed_dynamic_w;
}
int power_unit_count(const power_model *pm, config_component c) { return pm->count[c]; }

double power_efficiency(const power_model *pm, double voltage_v, double activity) {
  const bool fixed = pm->regulator == POWER_REG_FIXED || pm->regulator == POWER_REG_CHIPWIDE;
  return eta_grid_eval(fixed ? &pm->fixed : &pm->dvfs, voltage_v, activity);
}

double power_fixed_efficiency(const power_model *pm, double activity) {
  return row_eta(&pm->fixed, pm->fixed_eta, activity);
}

/* ---------------------------------------------------------------------------------
 * Energy */

/* The rail row of c at `state` for a rail at rail_v (the first band at or above it), NULL
 * when rail_v is c's own voltage. */
static const power_rail_row *rail_row(const power_model *pm, config_component c, int state, double rail_v) {
  if (rail_v <= row_of(pm, c, state)->voltage_v + 1e-12 || (int)c >= POWER_NRAILCOMP) return NULL;
  const power_rail_row *r = &pm->rail[((size_t)c * (pm->peak_state + 1) + state) * POWER_MAXBANDS];
  int b = 0;
  while (b < pm->nbands[c] - 1 && r[b].voltage_v < rail_v - 1e-12) b++;
  return &r[b];
}

int power_energy(const power_model *pm, config_component c, int state, double busy_ns, double time_ns,
                 double utilization, power_energy_nj *e, enpu_err *err) {
  return power_energy_rail(pm, c, state, 0.0, busy_ns, time_ns, utilization, e, err);
}

int power_energy_rail(const power_model *pm, config_component c, int state, double rail_v, double busy_ns,
                      double time_ns, double utilization, power_energy_nj *e, enpu_err *err) {
  ENPU_RETURN_IF((unsigned)c >= CONFIG_NCOMP || state < 0 || state > pm->peak_state, err, ENPU_ERR_INVALID,
                 "power_energy: component %d state %d out of range", (int)c, state);
  ENPU_RETURN_IF(rail_v > row_of(pm, c, state)->voltage_v + 1e-12 && (int)c >= POWER_NRAILCOMP, err,
                 ENPU_ERR_INVALID, "power_energy: %s is never on a shared rail", config_component_name(c));
  ENPU_RETURN_IF(!pm->on_dvfs[c] && pm->regulator != POWER_REG_CHIPWIDE && state != pm->peak_state, err,
                 ENPU_ERR_INVALID,
                 "power_energy: %s at state %d on the fixed regulator (it runs at state %d "
                 "only)",
                 config_component_name(c), state, pm->peak_state);
  /* The relative slack lets a busy time computed as a sum of pieces equal the total. */
  ENPU_RETURN_IF(!(time_ns >= 0.0) || !(busy_ns >= 0.0) || busy_ns > time_ns * (1.0 + POWER_LEVEL_RTOL) ||
                     !(utilization >= 0.0 && utilization <= 1.0 + POWER_LEVEL_RTOL),
                 err, ENPU_ERR_INVALID,
                 "power_energy: %s needs 0 <= busy_ns (%g) <= time_ns (%g) and "
                 "utilization (%g) in [0, 1]",
                 config_component_name(c), busy_ns, time_ns, utilization);
  if (time_ns == 0.0) {
    *e = (power_energy_nj){0};
    return 0;
  }
  const power_row *r = row_of(pm, c, state);
  /* Activity seen by the regulators: the fraction of the operator the component
   * switches; a gated component does not switch whatever busy_ns says. */
  double activity = state == 0 ? 0.0 : fmin(busy_ns / time_ns, 1.0);
  double work_ns = busy_ns * utilization;
  const power_rail_row *hi = rail_row(pm, c, state, rail_v);
  const double eta = hi ? eta_grid_eval(rail_grid(pm, c), hi->voltage_v, activity)
                        : row_eta(rail_grid(pm, c), eta_row_of(pm, c, state), activity);
  const double dyn_w = hi ? hi->dynamic_w : r->dynamic_w, stat_w = hi ? hi->static_w : r->static_w;
  e->dynamic_nj = dyn_w * work_ns / eta;
  e->static_nj = stat_w * time_ns / eta;
  e->loss_nj = (e->dynamic_nj + e->static_nj) * (1.0 - eta);
  if (r->fixed_static_w > 0.0 || r->fixed_dynamic_w > 0.0) {
    double eta_fixed = row_eta(&pm->fixed, pm->fixed_eta, activity);
    const double d = r->fixed_dynamic_w * work_ns / eta_fixed;
    const double st = r->fixed_static_w * time_ns / eta_fixed;
    e->dynamic_nj += d;
    e->static_nj += st;
    e->loss_nj += (d + st) * (1.0 - eta_fixed);
  }
  e->total_nj = e->dynamic_nj + e->static_nj;
  return 0;
}

double power_energy_floor(const power_model *pm, config_component c, int state, double busy_ns, double time_ns,
                          double utilization) {
  const power_row *r = row_of(pm, c, state);
  const double work_ns = busy_ns * utilization;
  /* The highest activity any such operator can have, a hair up for rounding; every
   * activity at or below it snaps to one of the grid's first k + 1 rows. */
  const double activity = state == 0 || time_ns <= 0 ? 0 : fmin(busy_ns / time_ns * (1 + 1e-9), 1);
  const power_grid *g = rail_grid(pm, c);
  const double *pmax = eta_row_of(pm, c, state) - pm->eta + pm->eta_pmax;
  double e = (r->dynamic_w * work_ns + r->static_w * time_ns) / pmax[snap_up(g->act, g->na, activity)];
  if (r->fixed_static_w > 0.0 || r->fixed_dynamic_w > 0.0)
    e += (r->fixed_dynamic_w * work_ns + r->fixed_static_w * time_ns) /
         pm->fixed_eta_pmax[snap_up(pm->fixed.act, pm->fixed.na, activity)];
  return e;
}

/* ---------------------------------------------------------------------------------
 * Power gating */

bool power_gating_available(const power_model *pm) { return pm->has_gating; }

double power_gate_saved_w(const power_model *pm, config_component c, int state, double rail_v, double activity,
                          double *loss_w) {
  const power_row *r = row_of(pm, c, state);
  const power_rail_row *hi = rail_row(pm, c, state, rail_v);
  const double a = state == 0 ? 0.0 : fmin(activity, 1.0);
  const double eta = hi ? eta_grid_eval(rail_grid(pm, c), hi->voltage_v, a)
                        : row_eta(rail_grid(pm, c), eta_row_of(pm, c, state), a);
  const double keep = 1.0 - pm->gating[c].gated_fraction;
  double wall = keep * (hi ? hi->static_w : r->static_w) / eta;
  double loss = wall * (1.0 - eta);
  if (c == CONFIG_ICI) { /* the PHY is gated with the controller (HBM keeps its I/O, DRAM) */
    const double eta_fixed = row_eta(&pm->fixed, pm->fixed_eta, a);
    const double phy = keep * r->fixed_static_w / eta_fixed;
    wall += phy;
    loss += phy * (1.0 - eta_fixed);
  }
  if (loss_w) *loss_w = loss;
  return wall;
}

double power_gate_wake_ns(const power_model *pm, config_component c) { return pm->gating[c].wake_ns; }

double power_gate_wake_nj(const power_model *pm, config_component c) { return pm->gating[c].wake_energy_nj; }

bool power_gate_worth(const power_model *pm, config_component c, double idle_ns, double saved_nj) {
  return pm->has_gating && idle_ns >= pm->gating[c].min_idle_ns && saved_nj > pm->gating[c].wake_energy_nj;
}

double power_gate_min_idle_ns(const power_model *pm, config_component c, double saved_w) {
  if (!pm->has_gating || !(saved_w > 0.0)) return INFINITY;
  const double pays = nextafter(pm->gating[c].wake_energy_nj / saved_w, INFINITY);
  return fmax(pm->gating[c].min_idle_ns, pays);
}

double power_gate_saving_nj(const power_model *pm, config_component c, double saved_w, double interval_ns) {
  return saved_w * (interval_ns - pm->gating[c].wake_ns) - pm->gating[c].wake_energy_nj;
}

double power_other_energy(const power_model *pm, double time_ns) { return pm->other_static_w * time_ns; }

int power_op_energy(const power_model *pm, const int state[CONFIG_NCOMP], const double *rail_v,
                    const double busy_ns[CONFIG_NCOMP], const double utilization[CONFIG_NCOMP], double time_ns,
                    power_breakdown *out, enpu_err *err) {
  *out = (power_breakdown){0};
  for (int c = 0; c < CONFIG_NCOMP; c++) {
    power_energy_nj e = {0};
    ENPU_FORWARD(power_energy_rail(pm, (config_component)c, state[c], rail_v ? rail_v[c] : 0.0, busy_ns[c], time_ns,
                                   utilization[c], &e, err));
    out->energy_nj[c] = e.total_nj;
    out->loss_nj[c] = e.loss_nj;
    out->dynamic_nj += e.dynamic_nj;
    out->static_nj += e.static_nj;
  }
  out->energy_nj[POWER_SLOT_FE] = 0.0; /* folded into "other": see power.h */
  out->energy_nj[POWER_SLOT_OTHER] = power_other_energy(pm, time_ns);
  out->static_nj += out->energy_nj[POWER_SLOT_OTHER];
  out->total_nj = out->dynamic_nj + out->static_nj;
  return 0;
}

/* ---------------------------------------------------------------------------------
 * Transitions and peak */

double power_transition_ns(const power_model *pm, double v_from_v, double v_to_v) {
  double dv_mv = fabs(v_to_v - v_from_v) * 1000.0;
  /* The tolerance keeps a whole number of steps (0.108 V = 2 × 54 mV) from rounding up. */
  double steps = ceil(dv_mv / pm->step_mv - 1e-9);
  return steps > 0.0 ? steps * pm->step_ns : 0.0;
}

double power_transition_energy(const power_model *pm, config_component c, int from, int to) {
  return power_transition_energy_loss(pm, c, from, to, NULL);
}

double power_transition_energy_loss(const power_model *pm, config_component c, int from, int to, double *loss_nj) {
  const power_row *a = row_of(pm, c, from), *b = row_of(pm, c, to);
  if (loss_nj) *loss_nj = 0.0;
  if (a->voltage_v <= b->voltage_v) return 0.0; /* rising: leaks at `to`'s voltage already */
  double t_ns = power_transition_ns(pm, a->voltage_v, b->voltage_v);
  double eta = row_eta(rail_grid(pm, c), eta_row_of(pm, c, from), 0.0);
  const double wall = (a->static_w - b->static_w) * t_ns / eta;
  if (loss_nj) *loss_nj = wall * (1.0 - eta);
  return wall;
}

void power_peak_chip(const power_model *pm, power_peak *out) {
  *out = (power_peak){0};
  int s = pm->peak_state;
  for (int c = 0; c < CONFIG_NCOMP; c++) {
    const power_row *r = row_of(pm, (config_component)c, s);
    out->component_w[c] = (r->static_w + r->dynamic_w) / row_eta(rail_grid(pm, (config_component)c),
                                                                 eta_row_of(pm, (config_component)c, s), 1.0) +
                          (r->fixed_static_w + r->fixed_dynamic_w) / power_fixed_efficiency(pm, 1.0);
    out->total_w += out->component_w[c];
  }
  out->other_w = pm->other_static_w;
  out->total_w += out->other_w;
  out->tdp_w = pm->tdp_w;
}
