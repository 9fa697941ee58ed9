/* paper_numbers.c — the paper's stated numbers (jobs/paper/paper-numbers.json, paper.h "The
 * paper's stated numbers"): claims with their citation and the query that computes ours,
 * Table 7's explored plans and Table 5's chip parameters.
 * Invariants after load: every claim's paper_lo <= paper_hi; a query has exactly the keys
 * its kind reads (an unknown or unused key is an error, so a typo never silently changes
 * what is computed); ids are unique. */
#include <stdlib.h>
#include <string.h>

#include "config_internal.h" /* config's checked JSON reader: errors with file:line:column and path */
#include "paper.h"

#define NKEYS(a) (sizeof(a) / sizeof((a)[0]))

static const char *const paper_keys[] = {"paper", "claims", "table7", "table5"};
static const char *const claim_keys[] = {"id",       "claim", "figure", "cite", "what",  "paper",
                                         "relation", "unit",  "why",    "ours", "better"};
static const char *const t7_keys[] = {"model", "phase", "plans"};
static const char *const t7_plan_keys[] = {"policy", "op", "req"};
static const config_field claim_fields[] = {
    CONFIG_STRING_FIELD(paper_claim, "id", id), CONFIG_INT_FIELD(paper_claim, "claim", claim),
    CONFIG_STRING_FIELD(paper_claim, "figure", figure), CONFIG_STRING_FIELD(paper_claim, "cite", cite),
    CONFIG_STRING_FIELD(paper_claim, "what", what)};
static const config_field t5_fields[] = {CONFIG_STRING_FIELD(paper_t5, "what", what),
                                         CONFIG_NUMBER_FIELD(paper_t5, "paper", paper),
                                         CONFIG_STRING_FIELD(paper_t5, "chip", chip)};
static const char *const kind_names[PAPER_NKIND] = {
    "savings",   "gain",   "overhead",  "slowdown",   "loss_growth", "saturation", "seq_trend", "seq_spread",
    "freq_corr", "table7", "compile_s", "core_hours", "figure20",    "replay",     "windows"};
static const char *const agg_names[PAPER_NAGG] = {"mean", "range", "max", "min"};
static const char *const slack_names[PAPER_NSLACK_SEL] = {"", "mean", "all", "max"};
static const char *const level_names[PAPER_NLEVEL] = {"op", "req", "total"};
static const char *const hours_names[PAPER_NHOURS] = {"all", "peak", "off_peak"};
static const char *const f20_names[PAPER_NF20] = {"worst", "loss", "min_gain"};
static const char *const relation_names[] = {"=", "<", ">"};

/* The keys each kind's query may have besides "kind" (its common selectors first). */
#define SELECT "policy", "phase", "slack", "agg", "models", "scale", "offset"
static const char *const *const kind_keys[PAPER_NKIND] = {
    (const char *const[]){SELECT, NULL},
    (const char *const[]){SELECT, "base", NULL},
    (const char *const[]){SELECT, NULL},
    (const char *const[]){SELECT, NULL},
    (const char *const[]){SELECT, NULL},
    (const char *const[]){SELECT, NULL},
    (const char *const[]){SELECT, NULL},
    (const char *const[]){SELECT, NULL},
    (const char *const[]){SELECT, NULL},
    (const char *const[]){"policy", "phase", "agg", "models", "level", NULL},
    (const char *const[]){"policy", "phase", "agg", "models", "level", NULL},
    (const char *const[]){"agg", "models", NULL},
    (const char *const[]){"policy", "base", "factor", "metric", "phase", "models", NULL},
    (const char *const[]){"policy", "run", "paths", "agg", "scale", "offset", NULL},
    (const char *const[]){"policy", "run", "column", "hours", "agg", "scale", "offset", NULL},
};

static size_t count_keys(const char *const *keys) {
  size_t n = 0;
  while (keys[n]) n++;
  return n;
}

/* A string, or an array of up to PAPER_MAX_LIST strings, into names[]. */
static int name_list(const config_doc *doc, const config_path *p, const json_t *v, size_t cap,
                     char (*names)[CONFIG_NAME_LEN], int *n, enpu_err *err) {
  if (!json_is_array(v)) {
    *n = 1;
    return config_string(doc, p, v, names[0], CONFIG_NAME_LEN, err);
  }
  size_t count = 0;
  ENPU_FORWARD(config_array_max(doc, p, v, PAPER_MAX_LIST, "names", &count, err));
  for (size_t i = 0; i < count; i++) {
    config_path ip = CONFIG_INDEX(p, i);
    ENPU_FORWARD(config_string(doc, &ip, json_array_get(v, i), names[i], cap, err));
  }
  *n = (int)count;
  return ENPU_OK;
}

/* "slack": a number, or "mean" / "all" / "max". */
static int parse_slack(const config_doc *doc, const config_path *qp, const json_t *q, paper_query *o,
                       enpu_err *err) {
  const json_t *v = json_object_get(q, "slack");
  o->slack_sel = PAPER_SLACK_ALL;
  if (!v) return ENPU_OK;
  config_path kp = CONFIG_KEY(qp, "slack");
  if (json_is_number(v)) {
    o->slack_sel = PAPER_SLACK_VALUE;
    return config_number(doc, &kp, v, &o->slack, err);
  }
  int sel = 0;
  ENPU_FORWARD(config_enum(doc, &kp, v, slack_names + 1, PAPER_NSLACK_SEL - 1, &sel, err));
  o->slack_sel = (paper_slack_sel)(sel + 1);
  return ENPU_OK;
}

static int parse_lists(const config_doc *doc, const config_path *qp, const json_t *q, paper_query *o,
                       enpu_err *err) {
  const json_t *v;
  if ((v = json_object_get(q, "policy"))) {
    config_path kp = CONFIG_KEY(qp, "policy");
    ENPU_FORWARD(name_list(doc, &kp, v, CONFIG_NAME_LEN, o->policy, &o->npolicy, err));
  }
  if ((v = json_object_get(q, "models"))) {
    config_path kp = CONFIG_KEY(qp, "models");
    ENPU_FORWARD(name_list(doc, &kp, v, CONFIG_NAME_LEN, o->models, &o->nmodels, err));
  }
  if ((v = json_object_get(q, "paths"))) {
    config_path kp = CONFIG_KEY(qp, "paths");
    size_t count = 0;
    ENPU_FORWARD(config_array_max(doc, &kp, v, PAPER_MAX_LIST, "paths", &count, err));
    for (size_t i = 0; i < count; i++) {
      config_path ip = CONFIG_INDEX(&kp, i);
      ENPU_FORWARD(config_string(doc, &ip, json_array_get(v, i), o->paths[i], sizeof o->paths[i], err));
    }
    o->npaths = (int)count;
  }
  return ENPU_OK;
}

static int parse_strings(const config_doc *doc, const config_path *qp, const json_t *q, paper_query *o,
                         enpu_err *err) {
  ENPU_FORWARD(config_opt_string(doc, qp, q, "base", o->base, sizeof o->base, err));
  ENPU_FORWARD(config_opt_string(doc, qp, q, "run", o->run, sizeof o->run, err));
  ENPU_FORWARD(config_opt_string(doc, qp, q, "column", o->column, sizeof o->column, err));
  return config_opt_enum(doc, qp, q, "phase", config_phase_names, CONFIG_NPHASE, &o->phase, err);
}

/* What each kind cannot do without. */
static int check_required(const config_doc *doc, const config_path *qp, const paper_query *o, enpu_err *err) {
  const bool needs_policy = o->kind != PAPER_CORE_HOURS;
  const bool needs_base = o->kind == PAPER_GAIN || (o->kind == PAPER_FIGURE20 && o->metric == PAPER_F20_MIN_GAIN);
  const char *missing = needs_policy && !o->npolicy                                                      ? "policy"
                        : needs_base && !o->base[0]                                                      ? "base"
                        : (o->kind == PAPER_REPLAY || o->kind == PAPER_WINDOWS) && !o->run[0]            ? "run"
                        : o->kind == PAPER_REPLAY && !o->npaths                                          ? "paths"
                        : o->kind == PAPER_WINDOWS && !o->column[0]                                      ? "column"
                        : o->kind == PAPER_FIGURE20 && o->factor == 0 && o->metric != PAPER_F20_MIN_GAIN ? "factor"
                                                                                                         : NULL;
  if (missing)
    return config_fail(doc, qp, err, ENPU_ERR_INVALID, "expected key \"%s\" for kind \"%s\"", missing,
                       kind_names[o->kind]);
  return ENPU_OK;
}

static int parse_query(const config_doc *doc, const config_path *qp, const json_t *q, paper_query *o,
                       enpu_err *err) {
  *o = (paper_query){.phase = -1, .scale = 1, .agg = PAPER_AGG_MEAN, .level = PAPER_LEVEL_TOTAL};
  if (!json_is_object(q)) return config_fail(doc, qp, err, ENPU_ERR_INVALID, "expected an object");
  config_path kp = CONFIG_KEY(qp, "kind");
  int kind = 0;
  ENPU_FORWARD(config_enum(doc, &kp, json_object_get(q, "kind"), kind_names, PAPER_NKIND, &kind, err));
  o->kind = (paper_kind)kind;
  const char *allowed[16] = {"kind"};
  const size_t n = count_keys(kind_keys[kind]);
  memcpy(allowed + 1, kind_keys[kind], n * sizeof *allowed);
  ENPU_FORWARD(config_object(doc, qp, q, allowed, n + 1, err));
  ENPU_FORWARD(parse_lists(doc, qp, q, o, err));
  ENPU_FORWARD(parse_strings(doc, qp, q, o, err));
  ENPU_FORWARD(parse_slack(doc, qp, q, o, err));
  int agg = o->agg, level = o->level, hours = o->hours, metric = o->metric;
  ENPU_FORWARD(config_opt_enum(doc, qp, q, "agg", agg_names, PAPER_NAGG, &agg, err));
  ENPU_FORWARD(config_opt_enum(doc, qp, q, "level", level_names, PAPER_NLEVEL, &level, err));
  ENPU_FORWARD(config_opt_enum(doc, qp, q, "hours", hours_names, PAPER_NHOURS, &hours, err));
  ENPU_FORWARD(config_opt_enum(doc, qp, q, "metric", f20_names, PAPER_NF20, &metric, err));
  o->agg = (paper_agg)agg, o->level = (paper_level)level, o->hours = (paper_hours)hours;
  o->metric = (paper_f20_metric)metric;
  ENPU_FORWARD(config_opt_number(doc, qp, q, "factor", &o->factor, err));
  ENPU_FORWARD(config_opt_number(doc, qp, q, "scale", &o->scale, err));
  ENPU_FORWARD(config_opt_number(doc, qp, q, "offset", &o->offset, err));
  return check_required(doc, qp, o, err);
}

/* "paper": a number, or [lo, hi] with lo <= hi. */
static int parse_paper_value(const config_doc *doc, const config_path *cp, const json_t *c, paper_claim *out,
                             enpu_err *err) {
  config_path vp = CONFIG_KEY(cp, "paper");
  const json_t *v = json_object_get(c, "paper");
  if (!json_is_array(v)) {
    ENPU_FORWARD(config_number(doc, &vp, v, &out->paper_lo, err));
    out->paper_hi = out->paper_lo;
    return ENPU_OK;
  }
  if (json_array_size(v) != 2)
    return config_fail(doc, &vp, err, ENPU_ERR_INVALID, "expected a number or [low, high]");
  config_path lo = CONFIG_INDEX(&vp, 0), hi = CONFIG_INDEX(&vp, 1);
  ENPU_FORWARD(config_number(doc, &lo, json_array_get(v, 0), &out->paper_lo, err));
  ENPU_FORWARD(config_number(doc, &hi, json_array_get(v, 1), &out->paper_hi, err));
  if (out->paper_hi < out->paper_lo) return config_fail(doc, &vp, err, ENPU_ERR_RANGE, "expected low <= high");
  return ENPU_OK;
}

static int parse_claim(const config_doc *doc, const config_path *cp, const json_t *c, paper_claim *out,
                       enpu_err *err) {
  ENPU_FORWARD(config_object(doc, cp, c, claim_keys, NKEYS(claim_keys), err));
  ENPU_FORWARD(config_get_fields(doc, cp, c, claim_fields, NKEYS(claim_fields), out, err));
  ENPU_FORWARD(parse_paper_value(doc, cp, c, out, err));
  out->relation = '=';
  int rel = 0;
  ENPU_FORWARD(config_opt_enum(doc, cp, c, "relation", relation_names, (int)NKEYS(relation_names), &rel, err));
  out->relation = relation_names[rel][0];
  if (json_object_get(c, "unit")) {
    config_path up = CONFIG_KEY(cp, "unit");
    const char *u = json_string_value(json_object_get(c, "unit"));
    if (!u || strlen(u) >= sizeof out->unit)
      return config_fail(doc, &up, err, ENPU_ERR_INVALID, "expected a unit of at most %zu bytes",
                         sizeof out->unit - 1);
    strcpy(out->unit, u);
  }
  ENPU_FORWARD(config_opt_string(doc, cp, c, "why", out->why, sizeof out->why, err));
  ENPU_FORWARD(config_opt_string(doc, cp, c, "better", out->better, sizeof out->better, err));
  if (out->better[0] && out->relation == '=') {
    config_path bp = CONFIG_KEY(cp, "better");
    return config_fail(doc, &bp, err, ENPU_ERR_INVALID, "\"better\" needs a bound (\"relation\": \"<\" or \">\")");
  }
  config_path qp = CONFIG_KEY(cp, "ours");
  return parse_query(doc, &qp, json_object_get(c, "ours"), &out->ours, err);
}

/* A Table 7 row: "model", "phase", "plans": [{"policy", "op", "req"}, ...]. */
static int parse_t7(const config_doc *doc, const config_path *rp, const json_t *r, paper_t7 *out, enpu_err *err) {
  ENPU_FORWARD(config_object(doc, rp, r, t7_keys, NKEYS(t7_keys), err));
  ENPU_FORWARD(config_get_string(doc, rp, r, "model", out->model, sizeof out->model, err));
  config_path php = CONFIG_KEY(rp, "phase"), pp = CONFIG_KEY(rp, "plans");
  ENPU_FORWARD(
      config_enum(doc, &php, json_object_get(r, "phase"), config_phase_names, CONFIG_NPHASE, &out->phase, err));
  const json_t *plans = json_object_get(r, "plans");
  size_t n = 0;
  ENPU_FORWARD(config_array_max(doc, &pp, plans, PAPER_T7_POLICIES, "policies", &n, err));
  for (size_t k = 0; k < n; k++) {
    config_path ep = CONFIG_INDEX(&pp, k);
    const json_t *e = json_array_get(plans, k);
    ENPU_FORWARD(config_object(doc, &ep, e, t7_plan_keys, NKEYS(t7_plan_keys), err));
    ENPU_FORWARD(config_get_string(doc, &ep, e, "policy", out->policy[k], sizeof out->policy[k], err));
    ENPU_FORWARD(config_get_number(doc, &ep, e, "op", &out->op[k], err));
    ENPU_FORWARD(config_get_number(doc, &ep, e, "req", &out->req[k], err));
  }
  out->npolicy = (int)n;
  return ENPU_OK;
}

static int parse_t5(const config_doc *doc, const config_path *rp, const json_t *r, paper_t5 *out, enpu_err *err) {
  return config_fields(doc, rp, r, t5_fields, NKEYS(t5_fields), out, err);
}

/* An optional array of rows parsed by `row` into a calloc'd array of `size`-byte items. */
static int parse_rows(const config_doc *doc, const config_path *root, const char *key, size_t size,
                      int (*row)(const config_doc *, const config_path *, const json_t *, void *, enpu_err *),
                      void **out, int *count, enpu_err *err) {
  const json_t *a = json_object_get(doc->root, key);
  if (!a) return ENPU_OK;
  config_path ap = CONFIG_KEY(root, key);
  size_t n = 0;
  ENPU_FORWARD(config_array(doc, &ap, a, &n, err));
  *out = enpu_calloc(n, size);
  ENPU_RETURN_IF(!*out, err, ENPU_ERR_NOMEM, "%s: out of memory", doc->file);
  for (size_t i = 0; i < n; i++) {
    config_path ip = CONFIG_INDEX(&ap, i);
    ENPU_FORWARD(row(doc, &ip, json_array_get(a, i), (char *)*out + i * size, err));
    *count = (int)i + 1;
  }
  return ENPU_OK;
}

static int claim_row(const config_doc *d, const config_path *p, const json_t *v, void *o, enpu_err *e) {
  return parse_claim(d, p, v, o, e);
}

/* Claims, each id once. */
static int parse_claims(const config_doc *doc, const config_path *root, paper_numbers *p, enpu_err *err) {
  if (!json_object_get(doc->root, "claims")) {
    config_path ap = CONFIG_KEY(root, "claims");
    return config_array(doc, &ap, NULL, NULL, err); /* reports the missing key */
  }
  ENPU_FORWARD(
      parse_rows(doc, root, "claims", sizeof *p->claims, claim_row, (void **)&p->claims, &p->nclaims, err));
  for (int i = 0; i < p->nclaims; i++)
    for (int j = 0; j < i; j++)
      if (!strcmp(p->claims[j].id, p->claims[i].id)) {
        config_path ap = CONFIG_KEY(root, "claims"), cp = CONFIG_INDEX(&ap, (size_t)i), ip = CONFIG_KEY(&cp, "id");
        return config_fail(doc, &ip, err, ENPU_ERR_INVALID, "expected a unique id, \"%s\" is also claims[%d]",
                           p->claims[i].id, j);
      }
  return ENPU_OK;
}

static int t7_row(const config_doc *d, const config_path *p, const json_t *v, void *o, enpu_err *e) {
  return parse_t7(d, p, v, o, e);
}

static int t5_row(const config_doc *d, const config_path *p, const json_t *v, void *o, enpu_err *e) {
  return parse_t5(d, p, v, o, e);
}

static int parse_paper(const config_doc *doc, void *out, enpu_err *err) {
  paper_numbers *p = out;
  config_path root = CONFIG_ROOT;
  ENPU_FORWARD(config_object(doc, &root, doc->root, paper_keys, NKEYS(paper_keys), err));
  snprintf(p->path, sizeof p->path, "%s", doc->file);
  ENPU_FORWARD(config_get_string(doc, &root, doc->root, "paper", p->title, sizeof p->title, err));
  ENPU_FORWARD(parse_claims(doc, &root, p, err));
  ENPU_FORWARD(parse_rows(doc, &root, "table7", sizeof *p->table7, t7_row, (void **)&p->table7, &p->ntable7, err));
  return parse_rows(doc, &root, "table5", sizeof *p->table5, t5_row, (void **)&p->table5, &p->ntable5, err);
}

static void clear_paper(void *obj) {
  paper_numbers *p = obj;
  free(p->claims);
  free(p->table7);
  free(p->table5);
}

CONFIG_LOADER(paper_numbers_load, paper_numbers, "paper", parse_paper, clear_paper)

void paper_numbers_free(paper_numbers *p) {
  if (!p) return;
  clear_paper(p);
  free(p);
}
