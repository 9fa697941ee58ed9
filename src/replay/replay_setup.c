/* replay_setup.c — what a replay needs from the model, chip and cluster files: KV-cache
 * bytes per token, DCN bandwidth, and the power of an idle chip derived from the chip's
 * V/f power tables through the power module. */
#include <string.h>

#include "power.h"
#include "replay.h"

int replay_idle_power_w(const config_chip *chip, double *watts, enpu_err *err) {
  power_model *pm = NULL;
  ENPU_FORWARD(power_model_create(chip, POWER_HBM_CTRL_ONLY, POWER_REG_FIXED, &pm, err));
  /* One second of every component at its peak state, busy 0 ns: only static power, at
   * the regulator's efficiency for no activity. */
  const double one_s_ns = 1e9;
  const int peak = power_peak_state(pm);
  double total_nj = power_other_energy(pm, one_s_ns);
  int rc = ENPU_OK;
  for (int c = 0; c < CONFIG_NCOMP && rc == ENPU_OK; c++) {
    power_energy_nj e;
    rc = power_energy(pm, (config_component)c, peak, 0.0, one_s_ns, 1.0, &e, err);
    total_nj += e.total_nj;
  }
  power_model_free(pm);
  if (rc == ENPU_OK) *watts = total_nj / one_s_ns;
  return rc;
}

int replay_setup_init(replay_setup *s, const config_cluster *cluster, const config_model *model,
                      const config_chip *chip, enpu_err *err) {
  ENPU_RETURN_IF(strcmp(cluster->model_name, model->name) != 0, err, ENPU_ERR_INVALID,
                 "cluster %s is for model '%s', but the model file %s is '%s'", cluster->path,
                 cluster->model_name, model->path, model->name);
  *s = (replay_setup){.cluster = cluster, .kv_bytes_per_token = model->kv_bytes_per_token,
                      .dcn_gbps_per_chip = chip->dcn_gbps};
  return replay_idle_power_w(chip, &s->idle_w_per_chip, err);
}
