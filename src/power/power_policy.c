/* power_policy.c — the policy table: one const row per config_policy saying which
 * regulator and HBM model it is priced with, which components it scales, the domains of
 * its op-level search, its request-level search, whether it sets V/f per epoch, and the
 * farm's estimate of its op-level cost. Every module that asks what a policy means reads
 * this row (search setup, replay idle power, farm plan, report); the policy's code
 * (config_policy_spec_code) stays what tasks and the journal carry.
 *
 * What each policy scales, as the paper defines the designs (§4.1; power.h for the HBM
 * models and regulators): NoDVFS nothing; DVFS-C (either request level) the compute core
 * (SA, VU, SRAM) as one domain, HBM and ICI at peak on the fixed regulator; eNPU-C every
 * component, HBM controller only; eNPU-All (and Ideal) the HBM I/O too; uniform every
 * component on one chip-wide rail (the board regulator). The epoch variants (§4.6,
 * Figure 16) and the 3- and 4-domain variants (§4.6, Figure 17) scale what DVFS-C and
 * eNPU-All do. DVFS-C's request level is the paper's GA (§4.3); every other policy walks
 * the Pareto hull. */
#include "power.h"

#define COMPUTE POWER_COMPUTE_COMPONENTS
#define ALL POWER_ALL_COMPONENTS

/* Farm estimates (op-level evaluations per op, times peak^est_pow): NoDVFS two
 * evaluations; DVFS-C one per compute state and the peak; Algorithm 1 about peak steps
 * of 2^d - 1 candidates; Ideal's exact search about one kernel per state triple. */
static const power_policy rows[CONFIG_NPOLICY] = {
    [CONFIG_POLICY_NODVFS] = {POWER_REG_FIXED, POWER_HBM_CTRL_ONLY, 0, POWER_OPS_FIXED, 1, .est_evals = {2, 0}},
    [CONFIG_POLICY_DVFS_C] = {POWER_REG_DVFS_COMPUTE, POWER_HBM_CTRL_ONLY, COMPUTE, POWER_OPS_COMPUTE, 1,
                              .request_ga = true, .est_evals = {1, 1}, .est_pow = 1},
    [CONFIG_POLICY_DVFS_C_WALK] = {POWER_REG_DVFS_COMPUTE, POWER_HBM_CTRL_ONLY, COMPUTE, POWER_OPS_COMPUTE, 1,
                                   .est_evals = {1, 1}, .est_pow = 1},
    [CONFIG_POLICY_DVFS_C_MS] = {POWER_REG_DVFS_COMPUTE, POWER_HBM_CTRL_ONLY, COMPUTE, POWER_OPS_COMPUTE, 1,
                                 .request_ga = true, .epoch = true, .est_evals = {1, 1}, .est_pow = 1},
    [CONFIG_POLICY_ENPU_C] = {POWER_REG_DVFS, POWER_HBM_CTRL_ONLY, ALL, POWER_OPS_DOMAINS, 0, .est_evals = {0, 8},
                              .est_pow = 1},
    [CONFIG_POLICY_ENPU_ALL] = {POWER_REG_DVFS, POWER_HBM_FULL, ALL, POWER_OPS_DOMAINS, 0, .est_evals = {0, 8},
                                .est_pow = 1},
    [CONFIG_POLICY_ENPU_MS] = {POWER_REG_DVFS, POWER_HBM_FULL, ALL, POWER_OPS_DOMAINS, 5, .epoch = true,
                               .est_evals = {0, 8}, .est_pow = 1},
    [CONFIG_POLICY_ENPU_3DOM] = {POWER_REG_DVFS, POWER_HBM_FULL, ALL, POWER_OPS_DOMAINS, 3, .est_evals = {0, 8},
                                 .est_pow = 1},
    [CONFIG_POLICY_ENPU_4DOM] = {POWER_REG_DVFS, POWER_HBM_FULL, ALL, POWER_OPS_DOMAINS, 4, .est_evals = {0, 8},
                                 .est_pow = 1},
    [CONFIG_POLICY_IDEAL] = {POWER_REG_DVFS, POWER_HBM_FULL, ALL, POWER_OPS_IDEAL, 5, .est_evals = {0, 1},
                             .est_pow = 3},
    [CONFIG_POLICY_UNIFORM] = {POWER_REG_CHIPWIDE, POWER_HBM_CTRL_ONLY, ALL, POWER_OPS_CHIPWIDE, 1,
                               .ops_per_segment = true, .est_evals = {0, 8}, .est_pow = 1},
};

const power_policy *power_policy_of(config_policy p) { return (unsigned)p < CONFIG_NPOLICY ? &rows[p] : NULL; }
