/* replay_setup.c — what a replay needs from the model, chip and cluster files: the model
 * (KV-cache bytes), DCN bandwidth, the power of an idle chip per policy (from the chip's
 * V/f tables through the power module), and the check that a store's plans were
 * compiled for this cluster's model, chip and nodes. */
#include <math.h>
#include <string.h>

#include "power.h"
#include "replay.h"
#include "store.h"

/* Static power of an awake chip whose scaled components sit at `low` and the rest at
 * peak: one second of every component busy 0 ns, at the regulator's efficiency for no
 * activity; `gated`, every component power-gated over that second (§4.7: what gating
 * keeps of its static power, power_gate_saved_w, taken off). */
static int idle_watts(const config_chip *chip, power_regulator reg, power_hbm_mode hbm, unsigned scaled, int low,
                      bool gated, double *watts, enpu_err *err) {
  power_model *pm = NULL;
  ENPU_FORWARD(power_model_create(chip, hbm, reg, &pm, err));
  const double one_s_ns = 1e9;
  const int peak = power_peak_state(pm);
  double total_nj = power_other_energy(pm, one_s_ns);
  int rc = low >= 1 && low <= peak ? ENPU_OK
                                   : enpu_errorf(err, ENPU_ERR_RANGE, "state %d outside 1..%d", low, peak);
  for (int c = 0; c < CONFIG_NCOMP && rc == ENPU_OK; c++) {
    power_energy_nj e;
    const int st = scaled >> c & 1u ? low : peak;
    rc = power_energy(pm, (config_component)c, st, 0.0, one_s_ns, 1.0, &e, err);
    total_nj += e.total_nj;
    if (gated && rc == ENPU_OK)
      total_nj -= power_gate_saved_w(pm, (config_component)c, st, power_voltage_v(pm, (config_component)c, st), 0.0,
                                     NULL) *
                  one_s_ns;
  }
  power_model_free(pm);
  if (rc == ENPU_OK) *watts = total_nj / one_s_ns;
  return rc;
}

int replay_idle_power_w(const config_chip *chip, config_policy policy, config_idle_mode mode, double *watts,
                        enpu_err *err) {
  /* What the policy scales and on which regulator: its row (power_policy.c). */
  const power_policy *ip = power_policy_of(policy);
  ENPU_RETURN_IF(!ip, err, ENPU_ERR_INVALID, "unknown policy %d", (int)policy);
  const bool parked = ip->regulator != POWER_REG_FIXED && mode != CONFIG_IDLE_PEAK;
  const bool gated = mode == CONFIG_IDLE_GATED;
  ENPU_RETURN_IF(gated && !chip->has_gating, err, ENPU_ERR_INVALID,
                 "idle mode gated needs the chip's \"gating\" section (%s has none)", chip->path);
  /* State 1 is the lowest clocked V/f state. */
  return parked ? idle_watts(chip, ip->regulator, ip->hbm, ip->scaled, 1, gated, watts, err)
                : idle_watts(chip, POWER_REG_FIXED, POWER_HBM_CTRL_ONLY, 0, chip->freq_states, gated, watts, err);
}

int replay_idle_power_state_w(const config_chip *chip, int state, double *watts, enpu_err *err) {
  return idle_watts(chip, POWER_REG_CHIPWIDE, POWER_HBM_CTRL_ONLY, POWER_ALL_COMPONENTS, state, false, watts, err);
}

/* The largest V/f move of a chip: every component from state 1 to the peak (rails on
 * their own IVRs move in parallel, so the delay is the longest one's), priced as the
 * chip at the peak state's idle power over that delay. */
static int switch_cost(const config_chip *chip, double idle_peak_w, double *ns, double *nj, enpu_err *err) {
  power_model *pm = NULL;
  ENPU_FORWARD(power_model_create(chip, POWER_HBM_FULL, POWER_REG_DVFS, &pm, err));
  const int peak = power_peak_state(pm);
  double longest = 0, extra_nj = 0;
  for (int c = 0; c < CONFIG_NCOMP; c++) {
    const double t = power_transition_ns(pm, power_voltage_v(pm, (config_component)c, 1),
                                         power_voltage_v(pm, (config_component)c, peak));
    longest = t > longest ? t : longest;
    extra_nj += power_transition_energy(pm, (config_component)c, 1, peak);
  }
  power_model_free(pm);
  *ns = longest;
  *nj = idle_peak_w * longest + extra_nj; /* W × ns = nJ */
  return ENPU_OK;
}

int replay_setup_init(replay_setup *s, const config_cluster *cluster, const config_model *model,
                      const config_chip *chip, enpu_err *err) {
  ENPU_RETURN_IF(strcmp(cluster->model_name, model->name) != 0, err, ENPU_ERR_INVALID,
                 "cluster %s is for model '%s', but the model file %s is '%s'", cluster->path, cluster->model_name,
                 model->path, model->name);
  ENPU_RETURN_IF(chip->freq_states < 1 || chip->freq_states > REPLAY_MAX_STATE, err, ENPU_ERR_RANGE,
                 "chip %s: %d V/f states, the replay handles 1..%d", chip->name, chip->freq_states,
                 REPLAY_MAX_STATE);
  *s = (replay_setup){.cluster = cluster,
                      .model = model,
                      .dcn_gbps_per_chip = chip->dcn_gbps,
                      .peak_state = chip->freq_states,
                      .tdp_w = chip->tdp_w,
                      .safeguards = cluster->scheduler.safeguards};
  for (int p = 0; p < CONFIG_NPOLICY; p++)
    ENPU_FORWARD(replay_idle_power_w(chip, (config_policy)p, cluster->idle.mode, &s->idle_w_per_chip[p], err));
  for (int m = 0; m < CONFIG_NIDLE_MODE; m++)
    for (int p = 0; p < CONFIG_NPOLICY; p++) {
      if (m == CONFIG_IDLE_GATED && !chip->has_gating) s->idle_w_mode[m][p] = NAN; /* a run asking is refused */
      else
        ENPU_FORWARD(replay_idle_power_w(chip, (config_policy)p, (config_idle_mode)m, &s->idle_w_mode[m][p], err));
    }
  s->has_deep_sleep = chip->has_deep_sleep;
  s->sleep_w_per_chip = chip->deep_sleep.w;
  s->wake_ns = chip->deep_sleep.wake_ms * 1e6;
  s->wake_nj_per_chip = chip->deep_sleep.wake_energy_j * 1e9;
  replay_fleet_params_default(&s->fleet);
  for (int st = 1; st <= chip->freq_states; st++)
    ENPU_FORWARD(replay_idle_power_state_w(chip, st, &s->idle_w_state[st], err));
  return switch_cost(chip, s->idle_w_state[chip->freq_states], &s->switch_ns, &s->switch_nj_per_chip, err);
}

/* ---- does the store fit the cluster? ------------------------------------------------- */

static const char *json_name(const json_t *doc) { return json_string_value(json_object_get(doc, "name")); }

/* The parallelism the store compiled `phase` for: the job's override, else the node of
 * the store's cluster document. 0 (unknown) when the documents do not say. */
static config_parallel stored_parallel(const json_t *job, const json_t *cluster, const char *phase, int *chips) {
  const json_t *node = json_object_get(cluster, phase);
  const json_t *par = json_object_get(json_object_get(json_object_get(job, "phases"), phase), "parallel");
  if (!par) par = json_object_get(node, "parallel");
  config_parallel p = {0};
  p.dp = (int)json_integer_value(json_object_get(par, "dp"));
  p.tp = (int)json_integer_value(json_object_get(par, "tp"));
  p.pp = (int)json_integer_value(json_object_get(par, "pp"));
  p.ep = (int)json_integer_value(json_object_get(par, "ep"));
  *chips = p.dp * p.tp * p.pp * p.ep;
  return p;
}

static int check_nodes(const char *store_path, const json_t *job, const json_t *stored, const config_cluster *cl,
                       enpu_err *err) {
  for (int ph = 0; ph < CONFIG_NPHASE; ph++) {
    int chips = 0;
    const config_parallel p = stored_parallel(job, stored, config_phase_name((config_phase)ph), &chips);
    const config_parallel *q = &cl->node[ph].parallel;
    if (chips == 0) continue; /* not compiled for this phase, or not recorded */
    ENPU_RETURN_IF(chips != cl->node[ph].chips || p.dp != q->dp || p.tp != q->tp || p.pp != q->pp || p.ep != q->ep,
                   err, ENPU_ERR_INVALID,
                   "store %s was compiled for %s nodes of %d chips (dp %d, tp %d, pp %d, ep %d), but cluster %s "
                   "has %d-chip %s nodes (dp %d, tp %d, pp %d, ep %d)",
                   store_path, config_phase_name((config_phase)ph), chips, p.dp, p.tp, p.pp, p.ep, cl->path,
                   cl->node[ph].chips, config_phase_name((config_phase)ph), q->dp, q->tp, q->pp, q->ep);
  }
  return ENPU_OK;
}

/* docs: the store's job, model, chip and cluster documents (NULL when absent). */
static int check_docs(const char *store_path, json_t *const docs[4], const config_cluster *cl,
                      const config_model *m, const config_chip *chip, enpu_err *err) {
  const char *model = json_name(docs[1]), *chip_name = json_name(docs[2]);
  ENPU_RETURN_IF(model && strcmp(model, cl->model_name) != 0, err, ENPU_ERR_INVALID,
                 "store %s was compiled for model '%s', but cluster %s is for model '%s': its plans do not "
                 "apply (replay the store of the cluster's model)",
                 store_path, model, cl->path, cl->model_name);
  /* the cluster's model, then the model given (validate --job's) */
  ENPU_RETURN_IF(model && strcmp(model, m->name) != 0, err, ENPU_ERR_INVALID,
                 "store %s was compiled for model '%s', but the model file %s is '%s': its plans do not apply",
                 store_path, model, m->path, m->name);
  ENPU_RETURN_IF(chip_name && strcmp(chip_name, chip->name) != 0, err, ENPU_ERR_INVALID,
                 "store %s was compiled for chip '%s', but the chip file %s is '%s'", store_path, chip_name,
                 chip->path, chip->name);
  return docs[3] ? check_nodes(store_path, docs[0], docs[3], cl, err) : ENPU_OK;
}

int replay_check_store(const char *store_path, const config_cluster *cluster, const config_model *model,
                       const config_chip *chip, char *warning, size_t cap, enpu_err *err) {
  if (warning && cap) warning[0] = '\0';
  store_contents *c = NULL;
  ENPU_FORWARD(store_load_provenance(store_path, &c, err));
  const char *texts[4] = {c->job_json, c->model_json, c->chip_json, c->cluster_json};
  json_t *docs[4] = {NULL};
  for (int k = 0; k < 4; k++) docs[k] = texts[k] ? json_loads(texts[k], 0, NULL) : NULL;
  int rc = check_docs(store_path, docs, cluster, model, chip, err);
  if (rc == ENPU_OK && warning && cap && docs[1] && docs[2] &&
      (c->model_hash != model->hash || c->chip_hash != chip->hash))
    snprintf(warning, cap,
             "store %s was compiled from another version of the %s file (%s): its plans may be stale; rerun the "
             "farm to update them",
             store_path, c->model_hash != model->hash ? "model" : "chip",
             c->model_hash != model->hash ? model->path : chip->path);
  for (int k = 0; k < 4; k++) json_decref(docs[k]);
  store_contents_free(c);
  return rc;
}
