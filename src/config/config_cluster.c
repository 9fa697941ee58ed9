/* config_cluster.c — cluster files (jobs/clusters/<name>.json): prefill/decode nodes with their
 * parallelism (paper Table 3), the SLO length classes (Table 2), batching limits, and the
 * replay's optional idle, scheduler and DCN sections.
 * Invariants after load: every node's chips == dp*tp*pp*ep; SLO class bounds strictly
 * increase, so a length maps to the first class whose bound covers it; every optional
 * value holds its default when its key is absent. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "config_internal.h"

#define NKEYS(a) (sizeof(a) / sizeof((a)[0]))

static const char *const cluster_keys[] = {"name",     "model", "prefill",   "decode", "slo",
                                           "batching", "idle",  "scheduler", "dcn"};
static const char *const node_keys[] = {"nodes", "chips", "parallel"};
static const config_field node_fields[] = {CONFIG_INT_FIELD(config_node, "nodes", nodes),
                                           CONFIG_INT_FIELD(config_node, "chips", chips)};
static const config_field parallel_fields[] = {
    CONFIG_INT_FIELD(config_parallel, "dp", dp), CONFIG_INT_FIELD(config_parallel, "tp", tp),
    CONFIG_INT_FIELD(config_parallel, "pp", pp), CONFIG_INT_FIELD(config_parallel, "ep", ep)};
static const config_field slo_fields[] = {
    CONFIG_STRING_FIELD(config_slo_class, "name", name),
    CONFIG_INT_FIELD(config_slo_class, "prefill_max_tokens", prefill_max_tokens),
    CONFIG_INT_FIELD(config_slo_class, "decode_max_tokens", decode_max_tokens),
    CONFIG_NUMBER_FIELD(config_slo_class, "ttft_ms", ttft_ms),
    CONFIG_NUMBER_FIELD(config_slo_class, "tpot_ms", tpot_ms)};
static const config_field batching_fields[] = {
    CONFIG_INT_FIELD(config_cluster, "max_batch", max_batch),
    CONFIG_INT_FIELD(config_cluster, "max_batch_tokens", max_batch_tokens)};
static const char *const idle_keys[] = {"mode", "sleep_w", "wake_ms", "sleep_after_ms"};
static const char *const scheduler_keys[] = {"safeguard1_scan",          "safeguard2",     "safeguard2_window_s",
                                             "safeguard2_miss_fraction", "safeguards",     "predictive_window_s",
                                             "predictive_hold_s",        "predictive_beta"};
static const char *const dcn_keys[] = {"energy_pj_per_byte"};

#define SG1_SCAN_DEFAULT 128

int config_parallel_parse(const config_doc *doc, const config_path *p, const json_t *v, config_parallel *out,
                          enpu_err *err) {
  return config_fields(doc, p, v, parallel_fields, NKEYS(parallel_fields), out, err);
}

int config_parallel_check_chips(const config_doc *doc, const config_path *p, const config_parallel *par, int chips,
                                enpu_err *err) {
  long long product = (long long)par->dp * par->tp * par->pp * par->ep;
  if (product != chips)
    return config_fail(doc, p, err, ENPU_ERR_RANGE,
                       "expected dp*tp*pp*ep to equal the node's chips (%d), got %d*%d*%d*%d = %lld", chips,
                       par->dp, par->tp, par->pp, par->ep, product);
  return ENPU_OK;
}

static int parse_node(const config_doc *doc, const config_path *root, const char *key, config_node *node,
                      enpu_err *err) {
  config_path np = CONFIG_KEY(root, key);
  const json_t *n = json_object_get(doc->root, key);
  ENPU_FORWARD(config_object(doc, &np, n, node_keys, NKEYS(node_keys), err));
  ENPU_FORWARD(config_get_fields(doc, &np, n, node_fields, NKEYS(node_fields), node, err));
  config_path pp = CONFIG_KEY(&np, "parallel");
  ENPU_FORWARD(config_parallel_parse(doc, &pp, json_object_get(n, "parallel"), &node->parallel, err));
  return config_parallel_check_chips(doc, &pp, &node->parallel, node->chips, err);
}

/* A class bound must exceed the previous class's: classes are ordered by length. */
static int check_bound(const config_doc *doc, const config_path *sp, size_t i, const char *key, int prev, int cur,
                       enpu_err *err) {
  if (i == 0 || cur > prev) return ENPU_OK;
  config_path cp = CONFIG_INDEX(sp, i), kp = CONFIG_KEY(&cp, key);
  config_path pp = CONFIG_INDEX(sp, i - 1), pk = CONFIG_KEY(&pp, key);
  char where[768];
  config_where(doc, &pk, where, sizeof where);
  return config_fail(doc, &kp, err, ENPU_ERR_RANGE, "expected more than the previous class's %d (%s), got %d", prev,
                     where, cur);
}

static int parse_slo(const config_doc *doc, const config_path *root, config_cluster *c, enpu_err *err) {
  config_path sp = CONFIG_KEY(root, "slo");
  const json_t *slo = json_object_get(doc->root, "slo");
  size_t n;
  ENPU_FORWARD(config_array_max(doc, &sp, slo, CONFIG_MAX_SLO_CLASSES, "classes", &n, err));
  for (size_t i = 0; i < n; i++) {
    config_path ep = CONFIG_INDEX(&sp, i);
    const json_t *e = json_array_get(slo, i);
    config_slo_class *k = &c->slo[i];
    ENPU_FORWARD(config_fields(doc, &ep, e, slo_fields, NKEYS(slo_fields), k, err));
    const config_slo_class *prev = i ? &c->slo[i - 1] : k;
    ENPU_FORWARD(
        check_bound(doc, &sp, i, "prefill_max_tokens", prev->prefill_max_tokens, k->prefill_max_tokens, err));
    ENPU_FORWARD(check_bound(doc, &sp, i, "decode_max_tokens", prev->decode_max_tokens, k->decode_max_tokens, err));
  }
  c->slo_count = (int)n;
  return ENPU_OK;
}

/* "idle": the mode, and for "sleep" its power and latencies (ranges: config_ranges.c). */
static int parse_idle(const config_doc *doc, const config_path *root, config_cluster *c, enpu_err *err) {
  c->idle = (config_idle){.mode = CONFIG_IDLE_LOWEST_STATE};
  const json_t *v = json_object_get(doc->root, "idle");
  if (!v) return ENPU_OK;
  config_path ip = CONFIG_KEY(root, "idle"), mp = CONFIG_KEY(&ip, "mode");
  ENPU_FORWARD(config_object(doc, &ip, v, idle_keys, NKEYS(idle_keys), err));
  int mode = 0;
  ENPU_FORWARD(
      config_enum(doc, &mp, json_object_get(v, "mode"), config_idle_mode_names, CONFIG_NIDLE_MODE, &mode, err));
  c->idle.mode = (config_idle_mode)mode;
  const bool sleep = c->idle.mode == CONFIG_IDLE_SLEEP;
  static const char *const sleep_only[] = {"sleep_w", "wake_ms", "sleep_after_ms"};
  for (size_t k = 0; k < NKEYS(sleep_only); k++) {
    config_path kp = CONFIG_KEY(&ip, sleep_only[k]);
    if (!sleep && json_object_get(v, sleep_only[k]))
      return config_fail(doc, &kp, err, ENPU_ERR_INVALID, "expected no %s: only mode \"sleep\" has it",
                         sleep_only[k]);
  }
  if (!sleep) return ENPU_OK;
  ENPU_FORWARD(config_get_number(doc, &ip, v, "sleep_w", &c->idle.sleep_w, err));
  ENPU_FORWARD(config_get_number(doc, &ip, v, "wake_ms", &c->idle.wake_ms, err));
  return config_opt_number(doc, &ip, v, "sleep_after_ms", &c->idle.sleep_after_ms, err);
}

/* The predictive safeguard's default windows: a request of the tightest class must be
 * served within its TTFT SLO (Table 2), so the arrivals of that long are the ones it
 * competes with for the prefill nodes; one of the loosest class may wait its own. */
static double ttft_s(const config_cluster *c, bool longest) {
  double ms = longest ? 0 : INFINITY;
  for (int k = 0; k < c->slo_count; k++) ms = (c->slo[k].ttft_ms > ms) == longest ? c->slo[k].ttft_ms : ms;
  return isfinite(ms) && ms > 0 ? ms / 1e3 : 1.0;
}

/* The predictive safeguard's default margin: the β of square-root staffing at which the
 * Halfin–Whitt probability that a request waits at all, 1 / (1 + β Φ(β) / φ(β)), equals
 * the SLO misses safeguard 2 tolerates (Halfin and Whitt 1981; 1 % gives β ≈ 2.37). */
static double staffing_beta(double wait_probability) {
  if (!(wait_probability > 0)) return 100; /* the range's top: never slow a busy pool */
  double lo = 0, hi = 100;
  for (int k = 0; k < 100; k++) {
    const double b = (lo + hi) / 2, phi = exp(-b * b / 2) / sqrt(2 * acos(-1.0)),
                 cdf = 0.5 * (1 + erf(b / sqrt(2)));
    if (1 / (1 + b * cdf / phi) > wait_probability) lo = b;
    else hi = b;
  }
  return lo;
}

static int default_beta(config_cluster *c) {
  if (c->scheduler.predictive_beta < 0)
    c->scheduler.predictive_beta = staffing_beta(c->scheduler.safeguard2_miss_fraction);
  return ENPU_OK;
}

static int parse_scheduler(const config_doc *doc, const config_path *root, config_cluster *c, enpu_err *err) {
  c->scheduler = (config_scheduler){.safeguard1_scan = SG1_SCAN_DEFAULT,
                                    .safeguard2 = CONFIG_SG2_PAPER,
                                    .safeguard2_window_s = 300,
                                    .safeguard2_miss_fraction = 0.01,
                                    .safeguards = CONFIG_SAFEGUARDS_PREDICTIVE,
                                    .predictive_window_s = ttft_s(c, false),
                                    .predictive_hold_s = ttft_s(c, true),
                                    .predictive_beta = -1};
  const json_t *v = json_object_get(doc->root, "scheduler");
  if (!v) return default_beta(c);
  config_path sp = CONFIG_KEY(root, "scheduler");
  ENPU_FORWARD(config_object(doc, &sp, v, scheduler_keys, NKEYS(scheduler_keys), err));
  ENPU_FORWARD(config_opt_int(doc, &sp, v, "safeguard1_scan", &c->scheduler.safeguard1_scan, err));
  int mode = c->scheduler.safeguard2;
  ENPU_FORWARD(config_opt_enum(doc, &sp, v, "safeguard2", config_safeguard2_names, CONFIG_NSG2, &mode, err));
  c->scheduler.safeguard2 = (config_safeguard2)mode;
  ENPU_FORWARD(config_opt_number(doc, &sp, v, "safeguard2_window_s", &c->scheduler.safeguard2_window_s, err));
  ENPU_FORWARD(
      config_opt_number(doc, &sp, v, "safeguard2_miss_fraction", &c->scheduler.safeguard2_miss_fraction, err));
  mode = c->scheduler.safeguards;
  ENPU_FORWARD(config_opt_enum(doc, &sp, v, "safeguards", config_safeguards_names, CONFIG_NSAFEGUARDS, &mode, err));
  c->scheduler.safeguards = (config_safeguards)mode;
  ENPU_FORWARD(config_opt_number(doc, &sp, v, "predictive_window_s", &c->scheduler.predictive_window_s, err));
  ENPU_FORWARD(config_opt_number(doc, &sp, v, "predictive_hold_s", &c->scheduler.predictive_hold_s, err));
  ENPU_FORWARD(config_opt_number(doc, &sp, v, "predictive_beta", &c->scheduler.predictive_beta, err));
  return default_beta(c);
}

/* "dcn": energy of moving one byte of KV cache between nodes (both link ends). */
static int parse_dcn(const config_doc *doc, const config_path *root, config_cluster *c, enpu_err *err) {
  c->dcn_energy_pj_per_byte = 0;
  const json_t *v = json_object_get(doc->root, "dcn");
  if (!v) return ENPU_OK;
  config_path dp = CONFIG_KEY(root, "dcn");
  ENPU_FORWARD(config_object(doc, &dp, v, dcn_keys, NKEYS(dcn_keys), err));
  return config_get_number(doc, &dp, v, "energy_pj_per_byte", &c->dcn_energy_pj_per_byte, err);
}

int config_cluster_parse(const config_doc *doc, config_cluster *c, enpu_err *err) {
  config_path root = CONFIG_ROOT;
  ENPU_FORWARD(config_object(doc, &root, doc->root, cluster_keys, NKEYS(cluster_keys), err));
  snprintf(c->path, sizeof c->path, "%s", doc->file);
  ENPU_FORWARD(config_get_string(doc, &root, doc->root, "name", c->name, sizeof c->name, err));
  ENPU_FORWARD(config_get_string(doc, &root, doc->root, "model", c->model_name, sizeof c->model_name, err));
  for (int ph = 0; ph < CONFIG_NPHASE; ph++)
    ENPU_FORWARD(parse_node(doc, &root, config_phase_names[ph], &c->node[ph], err));
  ENPU_FORWARD(parse_slo(doc, &root, c, err));
  config_path bp = CONFIG_KEY(&root, "batching");
  const json_t *b = json_object_get(doc->root, "batching");
  ENPU_FORWARD(config_fields(doc, &bp, b, batching_fields, NKEYS(batching_fields), c, err));
  ENPU_FORWARD(parse_idle(doc, &root, c, err));
  ENPU_FORWARD(parse_scheduler(doc, &root, c, err));
  ENPU_FORWARD(parse_dcn(doc, &root, c, err));
  c->hash = enpu_hash64(doc->text, doc->len, 0);
  return ENPU_OK;
}

CONFIG_LOADER(config_cluster_load, config_cluster, "cluster", config_cluster_parse, NULL)

void config_cluster_free(config_cluster *cluster) { free(cluster); }
