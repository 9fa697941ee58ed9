/* config_job.c — job files (jobs/<name>.json): the bucket grid per phase, slacks, policies,
 * and the model/chip/cluster they reference (paths relative to the job file).
 *
 * Invariants after load: explicit axes and slacks strictly increase; policies are
 * distinct; each enabled phase has an effective parallelism whose product is the node's
 * chip count, whose TP divides the attention heads and FFN/expert widths and whose EP
 * divides the routed experts. Cross-file errors point at the file and key that set the
 * offending value (the job's override, or else the cluster's node). The referenced
 * documents stay open until the end so such errors can still be located. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "config_internal.h"

#define NKEYS(a) (sizeof(a) / sizeof((a)[0]))

static const char *const job_keys[] = {"name",     "model",          "chip",   "cluster",  "store",    "phases",
                                       "slacks",   "policies",       "budget", "moe",      "capacity", "validation",
                                       "epoch_ms", "attention_impl", "sweep",  "ici_model"};
static const char *const sweep_keys[] = {"policy", "shadow"};
static const char *const phase_keys[] = {"batch", "seq", "parallel"};
static const char *const rule_keys[] = {"rule", "max"};
static const char *const rule_names[] = {"paper"};
static const char *const moe_keys[] = {"capacity_factor", "experts"};
static const char *const validation_keys[] = {"trace", "sample", "seed"};

#define AXIS_EXPECTED "an array of positive integers or {\"rule\": \"paper\", \"max\": N}"

/* Element i of a list is not above element i-1: name both positions. */
static int fail_not_increasing(const config_doc *doc, const config_path *list, size_t i, double prev, double cur,
                               enpu_err *err) {
  config_path cp = CONFIG_INDEX(list, i), pp = CONFIG_INDEX(list, i - 1);
  char where[768];
  config_where(doc, &pp, where, sizeof where);
  return config_fail(doc, &cp, err, ENPU_ERR_RANGE,
                     "expected a strictly increasing list: more than %.10g (%s), got %.10g%s", prev, where, cur,
                     cur == prev ? " (a duplicate)" : "");
}

/* A non-empty, strictly increasing array at p into a calloc'd array (*values, owned by
 * the caller even on failure) of ints (integer) or doubles. */
static int increasing_list(const config_doc *doc, const config_path *p, const json_t *v, bool integer,
                           void **values, int *count, enpu_err *err) {
  size_t n;
  ENPU_FORWARD(config_array(doc, p, v, &n, err));
  *values = enpu_calloc(n, integer ? sizeof(int) : sizeof(double));
  if (!*values) return enpu_errorf(err, ENPU_ERR_NOMEM, "%s: out of memory", doc->file);
  int *ints = *values;
  double *nums = *values, prev = 0, x = 0;
  for (size_t i = 0; i < n; i++, prev = x) {
    config_path ep = CONFIG_INDEX(p, i);
    const json_t *e = json_array_get(v, i);
    ENPU_FORWARD(integer ? config_int(doc, &ep, e, &ints[i], err) : config_number(doc, &ep, e, &nums[i], err));
    x = integer ? ints[i] : nums[i];
    if (i > 0 && x <= prev) return fail_not_increasing(doc, p, i, prev, x, err);
    *count = (int)i + 1;
  }
  return ENPU_OK;
}

static int parse_axis(const config_doc *doc, const config_path *phase_path, const json_t *phase, const char *key,
                      config_axis *ax, enpu_err *err) {
  config_path p = CONFIG_KEY(phase_path, key);
  const json_t *v = json_object_get(phase, key);
  if (!v)
    return config_fail(doc, phase_path, err, ENPU_ERR_INVALID, "missing required key '%s' (expected %s)", key,
                       AXIS_EXPECTED);
  if (json_is_object(v)) {
    int rule;
    ENPU_FORWARD(config_object(doc, &p, v, rule_keys, NKEYS(rule_keys), err));
    config_path rp = CONFIG_KEY(&p, "rule");
    ENPU_FORWARD(config_enum(doc, &rp, json_object_get(v, "rule"), rule_names, 1, &rule, err));
    ax->rule = true;
    return config_get_int(doc, &p, v, "max", &ax->rule_max, err);
  }
  if (!json_is_array(v)) {
    char got[96];
    config_describe(v, got, sizeof got);
    return config_fail(doc, &p, err, ENPU_ERR_INVALID, "expected %s, got %s", AXIS_EXPECTED, got);
  }
  void *values = NULL;
  const int rc = increasing_list(doc, &p, v, true, &values, &ax->count, err);
  ax->values = values;
  return rc;
}

/* A sequence bucket the model cannot take (beyond its context limit) is refused where the
 * job states it: a plan for it would price a forward pass no deployment can run. */
static int check_context(const config_doc *doc, const config_path *phase_path, const config_axis *seq,
                         const config_model *m, enpu_err *err) {
  if (m->context_limit < 1) return ENPU_OK;
  config_path sp = CONFIG_KEY(phase_path, "seq");
  if (seq->rule) {
    if (seq->rule_max <= m->context_limit) return ENPU_OK;
    config_path mp = CONFIG_KEY(&sp, "max");
    return config_fail(doc, &mp, err, ENPU_ERR_RANGE,
                       "expected at most the model's context limit (%d tokens, %s), got %d", m->context_limit,
                       m->path, seq->rule_max);
  }
  for (int i = 0; i < seq->count; i++) {
    if (seq->values[i] <= m->context_limit) continue;
    config_path ip = CONFIG_INDEX(&sp, (size_t)i);
    return config_fail(
        doc, &ip, err, ENPU_ERR_RANGE,
        "sequence bucket beyond the model's context limit: expected at most %d tokens (context_limit "
        "of %s), got %d",
        m->context_limit, m->path, seq->values[i]);
  }
  return ENPU_OK;
}

/* Where a phase's parallelism came from, for locating divisibility errors. */
typedef struct {
  const config_doc *doc;
  config_path path; /* the parallel object */
} parallel_origin;

static int check_divides(const parallel_origin *o, const char *key, int degree, int size, const char *what,
                         const config_model *m, enpu_err *err) {
  if (size % degree == 0) return ENPU_OK;
  config_path kp = CONFIG_KEY(&o->path, key);
  return config_fail(o->doc, &kp, err, ENPU_ERR_RANGE, "expected a divisor of the model's %s (%d, %s), got %d",
                     what, size, m->path, degree);
}

static int check_parallel(const parallel_origin *o, const config_parallel *par, const config_model *m,
                          enpu_err *err) {
  ENPU_FORWARD(check_divides(o, "tp", par->tp, m->heads, "attention heads", m, err));
  ENPU_FORWARD(check_divides(o, "tp", par->tp, m->ffn_intermediate, "FFN intermediate size", m, err));
  if (!m->moe) {
    if (par->ep == 1) return ENPU_OK;
    config_path kp = CONFIG_KEY(&o->path, "ep");
    return config_fail(o->doc, &kp, err, ENPU_ERR_RANGE, "expected 1 for a model without experts (%s), got %d",
                       m->path, par->ep);
  }
  ENPU_FORWARD(check_divides(o, "tp", par->tp, m->expert_intermediate, "expert intermediate size", m, err));
  return check_divides(o, "ep", par->ep, m->routed_experts, "routed experts", m, err);
}

static int parse_phase(const config_doc *doc, const config_doc *cluster_doc, const config_path *phases_path,
                       const json_t *phases, config_phase ph, config_job *job, enpu_err *err) {
  const char *name = config_phase_names[ph];
  const json_t *v = json_object_get(phases, name);
  if (!v) return ENPU_OK;
  config_path pp = CONFIG_KEY(phases_path, name);
  config_phase_grid *g = &job->phase[ph];
  ENPU_FORWARD(config_object(doc, &pp, v, phase_keys, NKEYS(phase_keys), err));
  g->enabled = true;
  ENPU_FORWARD(parse_axis(doc, &pp, v, "batch", &g->batch, err));
  ENPU_FORWARD(parse_axis(doc, &pp, v, "seq", &g->seq, err));
  ENPU_FORWARD(check_context(doc, &pp, &g->seq, &job->model, err));
  const config_node *node = &job->cluster.node[ph];
  g->chips = node->chips;
  config_path cluster_root = CONFIG_ROOT, cluster_node = CONFIG_KEY(&cluster_root, name);
  parallel_origin o = {cluster_doc, CONFIG_KEY(&cluster_node, "parallel")};
  const json_t *override = json_object_get(v, "parallel");
  if (override) {
    o = (parallel_origin){doc, CONFIG_KEY(&pp, "parallel")};
    ENPU_FORWARD(config_parallel_parse(doc, &o.path, override, &g->parallel, err));
    ENPU_FORWARD(config_parallel_check_chips(doc, &o.path, &g->parallel, node->chips, err));
  } else {
    g->parallel = node->parallel;
  }
  return check_parallel(&o, &g->parallel, &job->model, err);
}

static int parse_slacks(const config_doc *doc, const config_path *root, config_job *job, enpu_err *err) {
  config_path sp = CONFIG_KEY(root, "slacks");
  void *values = NULL;
  const int rc = increasing_list(doc, &sp, json_object_get(doc->root, "slacks"), false, &values, &job->slack_count,
                                 err);
  job->slacks = values;
  return rc;
}

/* A policy the job may compile: a shadow size within the chip's registers, gating only
 * on a chip with gating parameters. */
static int check_policy(const config_doc *doc, const config_path *p, const config_job *job,
                        const config_policy_spec *spec, enpu_err *err) {
  if (spec->shadow_vregs > job->chip.vregs)
    return config_fail(doc, p, err, ENPU_ERR_RANGE,
                       "expected a shadow register file of at most the chip's %d vector "
                       "registers (%s), got %d",
                       job->chip.vregs, job->chip.path, spec->shadow_vregs);
  if (spec->gate && !job->chip.has_gating)
    return config_fail(doc, p, err, ENPU_ERR_INVALID,
                       "expected a policy without power gating: the chip %s has no \"gating\" "
                       "section",
                       job->chip.path);
  return ENPU_OK;
}

/* The policies being read: each one's position in the array (element, and the shadow
 * size's index for an expanded object, or -1), for a duplicate's message. */
typedef struct {
  const config_path *list;
  size_t elem[CONFIG_MAX_POLICIES];
  long size_index[CONFIG_MAX_POLICIES];
} policy_list;

static void policy_where(const config_doc *doc, const policy_list *pl, int k, char *buf, size_t cap) {
  config_path ep = CONFIG_INDEX(pl->list, pl->elem[k]);
  config_path sp = CONFIG_KEY(&ep, "shadow");
  config_path ip = CONFIG_INDEX(&sp, (size_t)(pl->size_index[k] < 0 ? 0 : pl->size_index[k]));
  config_where(doc, pl->size_index[k] < 0 ? &ep : &ip, buf, cap);
}

/* Append one policy (listed at p: element `elem`, shadow size `size_index`), refusing a
 * second listing of it. */
static int add_policy(const config_doc *doc, const config_path *p, policy_list *pl, size_t elem, long size_index,
                      config_job *job, const config_policy_spec *spec, enpu_err *err) {
  ENPU_FORWARD(check_policy(doc, p, job, spec, err));
  char name[CONFIG_NAME_LEN];
  config_policy_spec_name(spec, name);
  for (int j = 0; j < job->policy_count; j++)
    if (config_policy_spec_code(&job->policies[j]) == config_policy_spec_code(spec)) {
      char where[768];
      policy_where(doc, pl, j, where, sizeof where);
      return config_fail(doc, p, err, ENPU_ERR_INVALID, "expected each policy once, got \"%s\" again (first at %s)",
                         name, where);
    }
  if (job->policy_count == CONFIG_MAX_POLICIES)
    return config_fail(doc, p, err, ENPU_ERR_RANGE, "expected at most %d policies", CONFIG_MAX_POLICIES);
  pl->elem[job->policy_count] = elem;
  pl->size_index[job->policy_count] = size_index;
  job->policies[job->policy_count++] = *spec;
  return ENPU_OK;
}

static int parse_policy_name(const config_doc *doc, const config_path *p, const json_t *v, config_policy_spec *spec,
                             enpu_err *err) {
  char name[CONFIG_NAME_LEN];
  ENPU_FORWARD(config_string(doc, p, v, name, sizeof name, err));
  if (config_policy_spec_parse(name, spec) == ENPU_OK) return ENPU_OK;
  char with[256], without[64];
  config_policy_names_join(with, sizeof with, "|", true);
  config_policy_names_join(without, sizeof without, "\" or \"", false);
  return config_fail(doc, p, err, ENPU_ERR_INVALID,
                     "expected a policy ([" ENPU_POLICY_GATE_PREFIX "]<%s>[@shadow=N], \"" ENPU_POLICY_GATE_ALONE
                     "\" or \"%s\"), got \"%s\"",
                     with, without, name);
}

/* {"policy": NAME, "shadow": [sizes]} at element `elem`: NAME@shadow=N for each size. */
static int parse_sweep(const config_doc *doc, const config_path *ep, size_t elem, const json_t *v, policy_list *pl,
                       config_job *job, enpu_err *err) {
  ENPU_FORWARD(config_object(doc, ep, v, sweep_keys, NKEYS(sweep_keys), err));
  config_path np = CONFIG_KEY(ep, "policy"), sp = CONFIG_KEY(ep, "shadow");
  config_policy_spec spec;
  ENPU_FORWARD(parse_policy_name(doc, &np, json_object_get(v, "policy"), &spec, err));
  if (spec.shadow_vregs >= 0 || !config_policy_has_variants(spec.base)) {
    char without[64];
    config_policy_names_join(without, sizeof without, " or ", false);
    return config_fail(doc, &np, err, ENPU_ERR_INVALID,
                       "expected a policy without @shadow= (the sizes come from \"shadow\") "
                       "other than %s (no variants)",
                       without);
  }
  const json_t *sizes = json_object_get(v, "shadow");
  size_t n;
  ENPU_FORWARD(config_array(doc, &sp, sizes, &n, err));
  for (size_t i = 0; i < n; i++) {
    config_path ip = CONFIG_INDEX(&sp, i);
    ENPU_FORWARD(config_int(doc, &ip, json_array_get(sizes, i), &spec.shadow_vregs, err));
    ENPU_FORWARD(add_policy(doc, &ip, pl, elem, (long)i, job, &spec, err));
  }
  return ENPU_OK;
}

static int parse_policies(const config_doc *doc, const config_path *root, config_job *job, enpu_err *err) {
  config_path pp = CONFIG_KEY(root, "policies");
  const json_t *v = json_object_get(doc->root, "policies");
  size_t n;
  ENPU_FORWARD(config_array(doc, &pp, v, &n, err));
  policy_list pl = {.list = &pp};
  for (size_t i = 0; i < n; i++) {
    config_path ep = CONFIG_INDEX(&pp, i);
    const json_t *e = json_array_get(v, i);
    if (json_is_object(e)) {
      ENPU_FORWARD(parse_sweep(doc, &ep, i, e, &pl, job, err));
      continue;
    }
    config_policy_spec spec;
    ENPU_FORWARD(parse_policy_name(doc, &ep, e, &spec, err));
    ENPU_FORWARD(add_policy(doc, &ep, &pl, i, -1, job, &spec, err));
  }
  return ENPU_OK;
}

/* "epoch_ms": the epoch of dvfs-c-ms and enpu-ms (§4.6: "epochs (>= 5 milliseconds)"). */
static int parse_epoch(const config_doc *doc, const config_path *root, config_job *job, enpu_err *err) {
  job->epoch_ms = 5.0;
  return config_opt_number(doc, root, doc->root, "epoch_ms", &job->epoch_ms, err);
}

/* The capacity factors model m accepts, [r->min, *max], and how to say so: the range
 * table's, or up to E/k when smaller (above E/k the most loaded expert would get more than
 * every token of the bucket). */
static void capacity_factor_bounds(const config_model *m, const config_range *r, double *max, char *expected,
                                   size_t cap) {
  const double worst = m->moe ? (double)m->routed_experts / m->experts_per_token : r->max;
  *max = worst < r->max ? worst : r->max;
  if (worst < r->max)
    snprintf(expected, cap,
             "\"worst\" or a number in [%g, %.4g] (routed_experts / "
             "experts_per_token of %s)",
             r->min, worst, m->path);
  else snprintf(expected, cap, "\"worst\" or a number in [%g, %g] (%s)", r->min, r->max, r->why);
}

/* "worst" (0) or a number within capacity_factor_bounds. */
static int parse_capacity_factor(const config_doc *doc, const config_path *mp, const json_t *v, config_job *job,
                                 enpu_err *err) {
  config_path cp = CONFIG_KEY(mp, "capacity_factor");
  const json_t *cf = json_object_get(v, "capacity_factor");
  if (!cf || (json_is_string(cf) && strcmp(json_string_value(cf), "worst") == 0)) return ENPU_OK;
  const config_range *r = NULL;
  ENPU_FORWARD(config_range_of(doc, &cp, &r, err));
  double hi;
  char expected[CONFIG_PATH_LEN + 128], got[96];
  capacity_factor_bounds(&job->model, r, &hi, expected, sizeof expected);
  if (json_is_number(cf) && json_number_value(cf) >= r->min && json_number_value(cf) <= hi) {
    job->moe_capacity_factor = json_number_value(cf);
    return ENPU_OK;
  }
  config_describe(cf, got, sizeof got);
  return config_fail(doc, &cp, err, json_is_number(cf) ? ENPU_ERR_RANGE : ENPU_ERR_INVALID, "expected %s, got %s",
                     expected, got);
}

/* "budget": "strict" | "paper" (config.h), strict when absent. */
static int parse_budget(const config_doc *doc, const config_path *root, config_job *job, enpu_err *err) {
  int b = CONFIG_BUDGET_STRICT;
  ENPU_FORWARD(config_opt_enum(doc, root, doc->root, "budget", config_budget_names, CONFIG_NBUDGET, &b, err));
  job->budget = (config_budget)b;
  return ENPU_OK;
}

static int parse_moe(const config_doc *doc, const config_path *root, config_job *job, enpu_err *err) {
  const json_t *v = json_object_get(doc->root, "moe");
  job->moe_capacity_factor = 0; /* worst case unless the job says otherwise */
  job->moe_experts = CONFIG_EXPERTS_ALL_RESIDENT;
  if (!v) return ENPU_OK;
  config_path mp = CONFIG_KEY(root, "moe");
  ENPU_FORWARD(config_object(doc, &mp, v, moe_keys, NKEYS(moe_keys), err));
  ENPU_FORWARD(parse_capacity_factor(doc, &mp, v, job, err));
  int e = job->moe_experts;
  ENPU_FORWARD(config_opt_enum(doc, &mp, v, "experts", config_moe_experts_names, CONFIG_NEXPERTS, &e, err));
  job->moe_experts = (config_moe_experts)e;
  return ENPU_OK;
}

/* "capacity": enforce (default) | offload | ignore; offload needs the chip's host link. */
static int parse_capacity(const config_doc *doc, const config_path *root, config_job *job, enpu_err *err) {
  int c = CONFIG_CAPACITY_ENFORCE;
  ENPU_FORWARD(config_opt_enum(doc, root, doc->root, "capacity", config_capacity_names, CONFIG_NCAPACITY, &c, err));
  job->capacity = (config_capacity)c;
  config_path cp = CONFIG_KEY(root, "capacity");
  if (job->capacity == CONFIG_CAPACITY_OFFLOAD && !(job->chip.host_gbps > 0))
    return config_fail(doc, &cp, err, ENPU_ERR_INVALID,
                       "expected a chip with a \"host\" link to offload weights over, got %s "
                       "without one",
                       job->chip.path);
  return ENPU_OK;
}

/* "ici_model": "ring" (default) | "neusim" (config.h); the latter builds the layers as the
 * authors' simulator's DeepSeek generator does, so it needs an MLA model. */
static int parse_ici_model(const config_doc *doc, const config_path *root, config_job *job, enpu_err *err) {
  int m = CONFIG_ICI_RING;
  ENPU_FORWARD(
      config_opt_enum(doc, root, doc->root, "ici_model", config_ici_model_names, CONFIG_NICI_MODEL, &m, err));
  job->ici_model = (config_ici_model)m;
  config_path cp = CONFIG_KEY(root, "ici_model");
  if (job->ici_model == CONFIG_ICI_NEUSIM && job->model.attention != CONFIG_ATTN_MLA)
    return config_fail(doc, &cp, err, ENPU_ERR_INVALID,
                       "expected \"ring\" for model '%s' (\"neusim\" builds the authors' simulator's "
                       "DeepSeek layers, MLA models only), got \"neusim\"",
                       job->model.name);
  return ENPU_OK;
}

static int parse_validation(const config_doc *doc, const config_path *root, config_job *job, enpu_err *err) {
  const json_t *v = json_object_get(doc->root, "validation");
  config_validation *val = &job->validation;
  *val = (config_validation){.sample = 24, .seed = 1};
  if (!v) return ENPU_OK;
  config_path vp = CONFIG_KEY(root, "validation");
  ENPU_FORWARD(config_object(doc, &vp, v, validation_keys, NKEYS(validation_keys), err));
  char rel[CONFIG_PATH_LEN];
  ENPU_FORWARD(config_get_string(doc, &vp, v, "trace", rel, sizeof rel, err));
  if (enpu_path_relative(doc->file, rel, val->trace_path, sizeof val->trace_path, NULL) < 0) {
    config_path tp = CONFIG_KEY(&vp, "trace");
    return config_fail(doc, &tp, err, ENPU_ERR_RANGE, "expected a shorter path, got \"%s\"", rel);
  }
  ENPU_FORWARD(config_opt_int(doc, &vp, v, "sample", &val->sample, err));
  int seed = 1;
  ENPU_FORWARD(config_opt_int(doc, &vp, v, "seed", &seed, err));
  val->seed = (uint64_t)seed;
  val->enabled = true;
  return ENPU_OK;
}

/* Open the file that job member `key` names, relative to the job file. A file that
 * cannot be read is reported at that member; errors inside it name the file itself. */
static int open_ref(const config_doc *doc, const config_path *root, const char *key, config_doc *ref,
                    enpu_err *err) { /* key names the kind too */
  char rel[CONFIG_PATH_LEN], path[CONFIG_PATH_LEN];
  config_path kp = CONFIG_KEY(root, key);
  ENPU_FORWARD(config_get_string(doc, root, doc->root, key, rel, sizeof rel, err));
  if (enpu_path_relative(doc->file, rel, path, sizeof path, NULL) < 0)
    return config_fail(doc, &kp, err, ENPU_ERR_RANGE, "expected a shorter path, got \"%s\"", rel);
  int rc = config_doc_open(ref, doc->files, path, key, err);
  if (rc == ENPU_ERR_IO) {
    char where[768];
    config_where(doc, &kp, where, sizeof where);
    enpu_err_prefix(err, "%s: ", where);
  }
  return rc;
}

/* The job's name becomes a directory name (results/<job>/): letters, digits, '.', '_'
 * and '-', starting with a letter or digit, so it can neither climb out of the results
 * directory ("..", "a/b") nor look like an option. */
static int check_plain_name(const config_doc *doc, const config_path *root, const char *name, enpu_err *err) {
  bool ok = (name[0] >= 'a' && name[0] <= 'z') || (name[0] >= 'A' && name[0] <= 'Z') ||
            (name[0] >= '0' && name[0] <= '9');
  for (const char *c = name; ok && *c; c++)
    ok = strchr("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-", *c) != NULL;
  if (ok) return ENPU_OK;
  config_path np = CONFIG_KEY(root, "name");
  return config_fail(doc, &np, err, ENPU_ERR_INVALID,
                     "expected a plain name (letters, digits, '.', '_', '-', starting with a letter or digit; it "
                     "names the results directory), got \"%s\"",
                     name);
}

/* The job's text plus the hashes of what it references. */
static uint64_t job_hash(const config_job *job, const char *text, size_t len) {
  enpu_hasher hs;
  enpu_hasher_init(&hs, 0);
  enpu_hasher_bytes(&hs, text, len);
  enpu_hasher_i64(&hs, (int64_t)job->model.hash);
  enpu_hasher_i64(&hs, (int64_t)job->chip.hash);
  enpu_hasher_i64(&hs, (int64_t)job->cluster.hash);
  return enpu_hasher_digest(&hs);
}

static int parse_job(const config_doc *doc, config_doc refs[3], config_job *job, enpu_err *err) {
  config_path root = CONFIG_ROOT;
  const json_t *o = doc->root;
  ENPU_FORWARD(config_object(doc, &root, o, job_keys, NKEYS(job_keys), err));
  snprintf(job->path, sizeof job->path, "%s", doc->file);
  ENPU_FORWARD(config_get_string(doc, &root, o, "name", job->name, sizeof job->name, err));
  ENPU_FORWARD(check_plain_name(doc, &root, job->name, err));
  char store[CONFIG_PATH_LEN];
  ENPU_FORWARD(config_get_string(doc, &root, o, "store", store, sizeof store, err));
  if (enpu_path_relative(doc->file, store, job->store_path, sizeof job->store_path, NULL) < 0) {
    config_path sp = CONFIG_KEY(&root, "store");
    return config_fail(doc, &sp, err, ENPU_ERR_RANGE, "expected a shorter path, got \"%s\"", store);
  }
  ENPU_FORWARD(open_ref(doc, &root, "model", &refs[0], err));
  ENPU_FORWARD(config_model_parse(&refs[0], &job->model, err));
  ENPU_FORWARD(open_ref(doc, &root, "chip", &refs[1], err));
  ENPU_FORWARD(config_chip_parse(&refs[1], &job->chip, err));
  ENPU_FORWARD(open_ref(doc, &root, "cluster", &refs[2], err));
  ENPU_FORWARD(config_cluster_parse(&refs[2], &job->cluster, err));
  if (strcmp(job->cluster.model_name, job->model.name) != 0) {
    config_path cp = CONFIG_KEY(&root, "cluster");
    return config_fail(doc, &cp, err, ENPU_ERR_INVALID,
                       "expected a cluster for model \"%s\" (%s), got one for \"%s\" (%s)", job->model.name,
                       job->model.path, job->cluster.model_name, job->cluster.path);
  }
  config_path pp = CONFIG_KEY(&root, "phases");
  const json_t *phases = json_object_get(o, "phases");
  ENPU_FORWARD(config_object(doc, &pp, phases, config_phase_names, CONFIG_NPHASE, err));
  if (json_object_size(phases) == 0)
    return config_fail(doc, &pp, err, ENPU_ERR_INVALID,
                       "expected at least one of: prefill, decode, got an empty object");
  for (int ph = 0; ph < CONFIG_NPHASE; ph++)
    ENPU_FORWARD(parse_phase(doc, &refs[2], &pp, phases, (config_phase)ph, job, err));
  ENPU_FORWARD(parse_slacks(doc, &root, job, err));
  ENPU_FORWARD(parse_policies(doc, &root, job, err));
  ENPU_FORWARD(parse_epoch(doc, &root, job, err));
  ENPU_FORWARD(parse_budget(doc, &root, job, err));
  ENPU_FORWARD(parse_moe(doc, &root, job, err));
  ENPU_FORWARD(parse_capacity(doc, &root, job, err));
  int impl = CONFIG_ATTN_IMPL_FLASH;
  ENPU_FORWARD(config_opt_enum(doc, &root, doc->root, "attention_impl", config_attn_impl_names, CONFIG_NATTN_IMPL,
                               &impl, err));
  job->attention_impl = (config_attn_impl)impl;
  ENPU_FORWARD(parse_ici_model(doc, &root, job, err));
  ENPU_FORWARD(parse_validation(doc, &root, job, err));
  ENPU_FORWARD(config_sweep_parse(doc, &root, job, err));
  job->hash = job_hash(job, doc->text, doc->len);
  return ENPU_OK;
}

int config_job_load(const char *path, config_job **out, enpu_err *err) {
  return config_job_load_from(NULL, path, out, err);
}

int config_job_load_from(config_files *fs, const char *path, config_job **out, enpu_err *err) {
  *out = NULL;
  config_job *job = enpu_calloc(1, sizeof *job);
  if (!job) return enpu_errorf(err, ENPU_ERR_NOMEM, "%s: out of memory", path);
  config_doc doc, refs[3];
  memset(refs, 0, sizeof refs);
  int rc = config_doc_open(&doc, fs, path, "job", err);
  if (rc == ENPU_OK) {
    rc = parse_job(&doc, refs, job, err);
    job->job_json = config_doc_take_text(&doc);
    job->model_json = config_doc_take_text(&refs[0]);
    job->chip_json = config_doc_take_text(&refs[1]);
    job->cluster_json = config_doc_take_text(&refs[2]);
  }
  config_doc_close(&doc);
  for (int i = 0; i < 3; i++) config_doc_close(&refs[i]);
  if (rc < 0) {
    config_job_free(job);
    return rc;
  }
  *out = job;
  return ENPU_OK;
}

void config_job_free(config_job *job) {
  if (!job) return;
  for (int ph = 0; ph < CONFIG_NPHASE; ph++) {
    free(job->phase[ph].batch.values);
    free(job->phase[ph].seq.values);
  }
  free(job->slacks);
  free(job->variants); /* they share the chip's tables */
  config_chip_clear(&job->chip);
  free(job->job_json);
  free(job->model_json);
  free(job->chip_json);
  free(job->cluster_json);
  free(job);
}

int config_job_set_capacity_factor(config_job *job, const char *value, enpu_err *err) {
  double cf = 0;
  char *end = NULL;
  if (strcmp(value, "worst") != 0) {
    cf = strtod(value, &end);
    ENPU_RETURN_IF(end == value || *end != '\0', err, ENPU_ERR_INVALID,
                   "capacity factor: expected \"worst\" or a number, got '%s'", value);
    const config_range *r = config_range_find("job", "$.moe.capacity_factor");
    double hi;
    char expected[CONFIG_PATH_LEN + 128];
    capacity_factor_bounds(&job->model, r, &hi, expected, sizeof expected);
    ENPU_RETURN_IF(!(cf >= r->min && cf <= hi), err, ENPU_ERR_RANGE, "capacity factor: expected %s, got %s",
                   expected, value);
  }
  /* The job document as stored for provenance says what was compiled. */
  json_error_t jerr;
  json_t *doc = json_loads(job->job_json, 0, &jerr), *moe = json_object_get(doc, "moe");
  if (doc && !moe && json_object_set_new(doc, "moe", moe = json_object()) < 0) moe = NULL;
  char *text = moe && json_object_set_new(moe, "capacity_factor", cf > 0 ? json_real(cf) : json_string("worst")) ==
                           0
                   ? json_dumps(doc, JSON_INDENT(2) | JSON_PRESERVE_ORDER)
                   : NULL;
  json_decref(doc);
  ENPU_RETURN_IF(!text, err, ENPU_ERR_NOMEM, "%s: cannot rewrite the job document", job->path);
  free(job->job_json);
  job->job_json = text;
  job->moe_capacity_factor = cf;
  job->hash = job_hash(job, text, strlen(text));
  return ENPU_OK;
}
