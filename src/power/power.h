/* power.h — component power and energy of the NPU from the chip's V/f tables: voltage of a
 * frequency state, static and dynamic power per state, regulator efficiency, the energy
 * of one component over an operator, V/f transition delay and energy (src/README.md,
 * "The cost model").
 *
 * A power_model is built once from a loaded chip (config_chip) and is immutable after
 * power_model_create, so one model may be shared by any number of threads. Everything
 * that depends only on (component, state) is precomputed into tables at create time:
 * the energy functions are table lookups plus a few multiplications.
 *
 * States: 0 is clock-gated, 1..S (S = chip->freq_states, 34 on TPUv5p) are
 * state × freq_step_mhz for SA/VU/SRAM and state/S × peak bandwidth for HBM (hbm_gbps)
 * and ICI (ici_links × ici_link_gbps): the controller clock maps linearly to bandwidth.
 *
 * Modelling choices (the why is in power.c next to the code):
 *  - Voltage of a state: the lowest voltage band whose top level (GHz or GB/s) covers the
 *    state's level. A level above the table's last row (HBM: Table 6's 2765 GB/s vs a
 *    2755 GB/s row; ICI: 6 × 100 = 600 vs 599.57 GB/s) uses the top band.
 *  - Static power depends on the band (voltage) only. Dynamic power at full utilisation
 *    is linear in the level through the origin within a band: P = level × P_p/level_p,
 *    p the band's lowest row at or above the level (exact on every table row).
 *  - SA and VU rows are per unit: powers here are for the whole component
 *    (× sa_count, × vu_count).
 *  - Gated state 0: no dynamic power; static power at the lowest voltage.
 *  - A shared rail (DVFS-C's compute domain, eNPU with 3 or 4 domains) sits at the
 *    highest voltage any member needs at its frequency; a member below it is priced in
 *    its own table's band for that voltage at its frequency (linear through the origin
 *    within the band, as above), as the tables' source couples a shared domain.
 *  - HBM and ICI are split into a controller, which is the component's DVFS rail, and
 *    parts that keep their own supply (the chip's power data and its source:
 *    jobs/chips/tpuv5p/README.md). The `hbm` and `ici` tables give controller + PHY with
 *    only the controller scaling, the controller being controller_share of them at their
 *    top voltage (0.4, from the tables' source), so at any band V and level L
 *        MC(V, L) = P_table(V, L) − (1 − share) · P_table(V_top, L).
 *    ICI: the PHY, (1 − share) · P_table(V_top, L), never scales (the physical link is
 *    optical, paper §3.5). HBM: the PHY is the I/O link (table hbm_io) plus the DRAM
 *    core (table hbm_dram, fixed voltage: "limited extra saving … fixed DRAM core
 *    voltage", §4.2). POWER_HBM_CTRL_ONLY (eNPU-C, DVFS-C, NoDVFS) scales the controller
 *    only, the I/O stays at its top voltage; POWER_HBM_FULL (eNPU-All, ideal, HBM4-style)
 *    also moves the I/O to the voltage its table gives the controller's bandwidth. In
 *    both the I/O and DRAM power follow the bandwidth (linear at a fixed voltage).
 *  - Regulators (paper §4.1, Table 6): the DVFS IVR (chip->ivr_scaling_time_ns rows of
 *    ivr_dvfs) powers every rail a policy scales; the fixed-voltage regulator (ivr_fixed,
 *    89–92 % by activity) powers NoDVFS, the HBM/ICI controllers that DVFS-C leaves at
 *    peak (POWER_REG_DVFS_COMPUTE) and, always, the HBM I/O and DRAM and the ICI PHY.
 *    Efficiency η(V, activity) as the tables' source rounds it: the first table voltage
 *    at or above V (the highest when none is) and the first activity row at or above the
 *    activity (clamped to the last); activity = busy_ns / time_ns (0 when gated).
 *  - Frontend (FE): the tables have no FE curve. FE power is folded into the chip's
 *    "other" static power (other_static_w, the rest of the chip in the simulator the
 *    tables come from), so the FE slot of a breakdown is 0 by construction. This is
 *    conservative for DVFS: no saving is credited for slowing the FE.
 *  - "Other" static power is charged for the whole operator time at the wall
 *    (other_static_w is a chip-level figure, not divided by a regulator efficiency).
 *  - A component on the fixed regulator runs at its peak state only; the energy
 *    functions reject any other state.
 *  - Chip-wide V/f (POWER_REG_CHIPWIDE, the `uniform` policy of online governors): every
 *    component on one rail behind the NoDVFS board regulator, whose output voltage a
 *    governor sets every control period, as a GPU's DVFS does through its board
 *    regulator (PELM §3). The chip's data give that regulator's efficiency by activity
 *    at one voltage only (0.7 V), so the same efficiency is used at every state: its
 *    dependence on the output voltage is unknown. At the peak state this model and
 *    NoDVFS's are the same numbers.
 *
 * Units: time in ns, power in W, energy in nJ (W × ns), voltage in V. */
#ifndef ENPU_POWER_H
#define ENPU_POWER_H

#include "common.h"
#include "config.h"

typedef enum {
  POWER_HBM_CTRL_ONLY = 0, /* only the memory controller scales (nodvfs, dvfs-c, enpu-c) */
  POWER_HBM_FULL = 1       /* controller and I/O link scale (enpu-all, ideal) */
} power_hbm_mode;

typedef enum {
  POWER_REG_DVFS = 0,         /* every rail on the DVFS IVR (eNPU, ideal) */
  POWER_REG_FIXED = 1,        /* NoDVFS: every rail on the fixed regulator, peak states only */
  POWER_REG_DVFS_COMPUTE = 2, /* DVFS-C: SA, VU, SRAM on the DVFS IVR; the HBM and ICI
                                 controllers at peak on the fixed regulator */
  POWER_REG_CHIPWIDE = 3      /* one chip-wide rail on the NoDVFS board regulator whose
                                 output an online governor moves (a GPU's frequency): the
                                 fixed regulator's efficiency by activity at every state */
} power_regulator;

/* What a DVFS policy is, one row per config_policy (power_policy.c): the facts the
 * search, the replay, the farm and the report all read, kept in the lowest module they
 * all link. A new policy is a row here plus its search code (search_bucket.c setup). */
typedef enum {
  POWER_OPS_FIXED,   /* no DVFS: every component at peak, one domain */
  POWER_OPS_COMPUTE, /* one compute domain (SA, VU, SRAM) scales, HBM and ICI at peak */
  POWER_OPS_DOMAINS, /* per-component domains, Algorithm 1's greedy (§3.3) */
  POWER_OPS_IDEAL,   /* five domains, free transitions, the options' op method */
  POWER_OPS_CHIPWIDE /* one domain of all five components, every state */
} power_ops_kind;

typedef struct {
  power_regulator regulator; /* its rails' regulators */
  power_hbm_mode hbm;        /* which HBM parts scale */
  unsigned scaled;           /* bit c: component c leaves peak (c a config_component) */
  power_ops_kind ops;        /* the op-level search's domains */
  int domains;               /* POWER_OPS_DOMAINS/IDEAL: V/f domains, 0 = the options' count */
  bool request_ga;           /* the request level is the GA of §4.3, else the hull walk */
  bool epoch;                /* one V/f setting per millisecond epoch, not per op (§4.6) */
  bool ops_per_segment;      /* an op's instances are kept apart per graph segment */
  double est_evals[2];       /* farm cost estimate: est_evals[0] + est_evals[1] · peak^est_pow
                                op-level evaluations per op (only the order of magnitude counts) */
  int est_pow;
} power_policy;

/* The row of policy p; NULL for a value that is no policy. */
const power_policy *power_policy_of(config_policy p);
/* The component mask of scaled components that POWER_OPS_COMPUTE scales. */
#define POWER_COMPUTE_COMPONENTS ((1u << CONFIG_SA) | (1u << CONFIG_VU) | (1u << CONFIG_SRAM))
#define POWER_ALL_COMPONENTS ((1u << CONFIG_NCOMP) - 1)

/* Slots of an operator's energy breakdown, in report order: the five components
 * (config_component), then the frontend (always 0, see above) and "other". */
enum { POWER_SLOT_FE = CONFIG_NCOMP, POWER_SLOT_OTHER = CONFIG_NCOMP + 1, POWER_NSLOT };

/* Energy of one component over an interval, at the wall (regulator loss included in
 * both parts): total_nj = dynamic_nj + static_nj; loss_nj is the part of total_nj lost in
 * its regulators (Σ over parts of E_p · (1 − η_p), Figure 13). */
typedef struct {
  double dynamic_nj;
  double static_nj;
  double total_nj;
  double loss_nj;
} power_energy_nj;

/* Energy of one operator on one chip. energy_nj is indexed by config_component for the
 * five components, then POWER_SLOT_FE and POWER_SLOT_OTHER. dynamic_nj/static_nj sum
 * the five components' parts (other counts as static); total_nj sums every slot. */
typedef struct {
  double energy_nj[POWER_NSLOT];
  double loss_nj[POWER_NSLOT]; /* regulator loss inside energy_nj (FE and other: 0) */
  double dynamic_nj;
  double static_nj;
  double total_nj;
} power_breakdown;

/* Chip power with every component at its peak state and fully utilised (activity 1,
 * utilisation 1), against the chip's TDP. component_w is at the wall (÷ η). */
typedef struct {
  double component_w[CONFIG_NCOMP];
  double other_w;
  double total_w;
  double tdp_w;
} power_peak;

typedef struct power_model power_model;

/* Build the per-component, per-state tables for `chip`. The model copies what it needs:
 * the chip may be freed afterwards. Fails with ENPU_ERR_INVALID / ENPU_ERR_RANGE when a
 * table is empty, the DVFS IVR table has no rows at chip->ivr_scaling_time_ns, a
 * regulator table's (activity, voltage) rows do not form a full grid, or a controller
 * share leaves negative controller power.
 * @return 0 and *out, or a negative ENPU_ERR_* with *out NULL and err filled. */
int power_model_create(const config_chip *chip, power_hbm_mode hbm_mode, power_regulator regulator,
                       power_model **out, enpu_err *err);
void power_model_free(power_model *pm); /* NULL is a no-op */

power_hbm_mode power_model_hbm_mode(const power_model *pm);
power_regulator power_model_regulator(const power_model *pm);
int power_peak_state(const power_model *pm); /* chip->freq_states (34) */

/* Per-state table lookups; state must be in 0..power_peak_state(pm) (not checked: these
 * are hot-path accessors; pass a valid state). Powers are for the whole component (every
 * part); the voltage is its DVFS rail's (for HBM and ICI, the controller's). */
double power_level(const power_model *pm, config_component c, int state); /* GHz or GB/s */
double power_voltage_v(const power_model *pm, config_component c, int state);
double power_static_w(const power_model *pm, config_component c, int state);
double power_dynamic_w(const power_model *pm, config_component c, int state); /* u = 1 */
int power_unit_count(const power_model *pm, config_component c);              /* 8 SA, 6 VU, else 1 */

/* Regulator efficiency (fraction in (0, 1]) at a voltage and activity, rounded as
 * described above: of the DVFS IVR when this model has one (every regulator but
 * POWER_REG_FIXED and POWER_REG_CHIPWIDE), else of the fixed regulator;
 * power_fixed_efficiency is always the fixed regulator's. */
double power_efficiency(const power_model *pm, double voltage_v, double activity);
double power_fixed_efficiency(const power_model *pm, double activity);

/* Energy of component c at `state` over an operator of time_ns during which it is busy
 * for busy_ns (0 <= busy_ns <= time_ns) with FLOP utilisation `utilization` in [0, 1]
 * (SA/VU; pass 1 for the others), summed over its parts p (the rail, and for HBM/ICI the
 * fixed-supply parts), each through its own regulator:
 *   E = Σ_p (P_dyn,p(state) · busy_ns · u + P_static,p(state) · time_ns) / η_p(V_p, busy/time)
 * @return 0, or ENPU_ERR_INVALID (bad component/state/times, or a non-peak state under
 * the fixed regulator) with err filled (err may be NULL). */
int power_energy(const power_model *pm, config_component c, int state, double busy_ns, double time_ns,
                 double utilization, power_energy_nj *e, enpu_err *err);

/* power_energy for a component whose rail is at rail_v (>= its own voltage at `state`:
 * a domain shared with a member needing more; <= its own: as power_energy). Only SA, VU
 * and SRAM may share a rail (ENPU_ERR_INVALID otherwise). */
int power_energy_rail(const power_model *pm, config_component c, int state, double rail_v, double busy_ns,
                      double time_ns, double utilization, power_energy_nj *e, enpu_err *err);

/* A lower bound of power_energy for component c at `state` on its own rail, over any
 * operator at least time_ns long during which it is busy for at least busy_ns at an
 * activity (busy / time) of at most busy_ns / time_ns — a component busy for
 * min(own, T) in an op of time T >= time_ns is — summed over its parts:
 * (P_dyn · busy_ns · u + P_static · time_ns) / η, η its regulator's best efficiency at
 * any activity up to that one. Exact arithmetic; a caller comparing against computed
 * energies leaves room for rounding. */
double power_energy_floor(const power_model *pm, config_component c, int state, double busy_ns, double time_ns,
                          double utilization);

/* "Other" static chip power (other_static_w) over time_ns, in nJ. */
double power_other_energy(const power_model *pm, double time_ns);

/* Energy of one operator: power_energy_rail for each component with its state, rail
 * voltage (rail_v may be NULL: every component on its own rail), busy time and
 * utilisation (arrays indexed by config_component), FE (0) and other. */
int power_op_energy(const power_model *pm, const int state[CONFIG_NCOMP], const double *rail_v,
                    const double busy_ns[CONFIG_NCOMP], const double utilization[CONFIG_NCOMP], double time_ns,
                    power_breakdown *out, enpu_err *err);

/* V/f transition delay between two rail voltages: ceil(|ΔV| / ivr_step_mv) × ivr_step_ns
 * (Table 6: 4 ns per 54 mV step), 0 when the voltages are equal. */
double power_transition_ns(const power_model *pm, double v_from_v, double v_to_v);

/* Extra energy of component c's rail while it moves from state `from` to state `to`:
 * the rail leaks at the higher of the two voltages for the transition time
 * (power_transition_ns), where power_energy prices it at `to`'s, so the extra is
 * (P_static(V_hi) − P_static(to)) × t / η(V_hi, 0) — 0 when the rail rises. Charging the
 * rail capacitance (½C ΔV²) is not modelled: the tables give no capacitance. States as
 * for power_voltage_v. */
double power_transition_energy(const power_model *pm, config_component c, int from, int to);
/* The same, and (loss_nj, may be NULL) the regulator loss inside it. */
double power_transition_energy_loss(const power_model *pm, config_component c, int from, int to, double *loss_nj);

/* Power gating (§4.7, after ReGate; parameters from the chip's "gating" section).
 * A component idle for `idle_ns` in the schedule being gated is gated when
 * idle_ns >= min_idle_ns and gating saves energy; it wakes on demand, so its next work
 * starts wake_ns later and the interval in the gated schedule is I = idle_ns + wake_ns.
 * One gated interval saves saved_w · (I − wake_ns) − wake_energy_nj, where saved_w is
 * (1 − gated_fraction) × the component's gateable static power at the wall (SA, VU,
 * SRAM: all of it; HBM: the controller, its I/O link and DRAM core stay on; ICI:
 * controller and PHY) at its state, rail voltage and activity, as power_energy_rail
 * prices it. The wake-up energy is charged at the wall as given. */
bool power_gating_available(const power_model *pm); /* the chip has "gating" */
/* saved_w, and (loss_w) the regulator loss inside it. Arguments as power_energy_rail. */
double power_gate_saved_w(const power_model *pm, config_component c, int state, double rail_v, double activity,
                          double *loss_w);
double power_gate_wake_ns(const power_model *pm, config_component c);
double power_gate_wake_nj(const power_model *pm, config_component c);
/* Whether an idle interval of idle_ns (the schedule being gated) over which gating would
 * keep saved_nj of static energy (saved_w summed over it) is gated: idle_ns >= min_idle_ns
 * and saved_nj > wake_energy_nj. */
bool power_gate_worth(const power_model *pm, config_component c, double idle_ns, double saved_nj);
/* The shortest idle interval gated at a constant saved_w (INFINITY: none is). */
double power_gate_min_idle_ns(const power_model *pm, config_component c, double saved_w);
/* Net energy one gated interval of I ns (the gated schedule) saves:
 * saved_w · (I − wake_ns) − wake_energy_nj. */
double power_gate_saving_nj(const power_model *pm, config_component c, double saved_w, double interval_ns);

/* Peak chip power at full utilisation, per component and in total, beside the TDP. */
void power_peak_chip(const power_model *pm, power_peak *out);

#endif /* ENPU_POWER_H */
