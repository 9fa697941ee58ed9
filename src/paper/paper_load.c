/* paper_load.c — the inputs of `enpu report paper`: a model's manifest.json
 * (written by tools/paper.py) checked field by field into a paper_model, and the lookups
 * every README section makes in it (a run by kind, budget and variant, its store loaded
 * on first use; a replay; a stored policy; the variants of every model). The sections
 * (paper_eval.c, _md.c, _tables.c, _figures.c) and report_paper.c call these;
 * nothing here calls a section. */
#include <stdlib.h>
#include <string.h>

#include "paper_internal.h"

/* ---- the manifest ---------------------------------------------------------------- */

typedef struct {
  const char *file; /* the manifest, for messages */
  char dir[PATH_MAX];
} mctx;

static int bad(const mctx *mc, const char *where, const char *what, enpu_err *err) {
  return enpu_errorf(err, ENPU_ERR_FORMAT, "%s: %s: expected %s (a manifest written by tools/paper.py)", mc->file,
                     where, what);
}

static int member_str(const mctx *mc, const json_t *o, const char *where, const char *key, char *out, size_t cap,
                      enpu_err *err) {
  const char *s = json_string_value(json_object_get(o, key));
  char at[160];
  snprintf(at, sizeof at, "%s.%s", where, key);
  if (!s || strlen(s) >= cap) return bad(mc, at, "a string", err);
  snprintf(out, cap, "%s", s);
  return ENPU_OK;
}

/* key's string, a path relative to the manifest's folder, made relative to the cwd. */
static int get_path(const mctx *mc, const json_t *o, const char *where, const char *key, char *out, size_t cap,
                    enpu_err *err) {
  char rel[PATH_MAX];
  ENPU_FORWARD(member_str(mc, o, where, key, rel, sizeof rel, err));
  if ((rel[0] == '/' ? snprintf(out, cap, "%s", rel) : snprintf(out, cap, "%s/%s", mc->dir, rel)) >= (int)cap)
    return enpu_errorf(err, ENPU_ERR_RANGE, "%s: %s.%s: path too long", mc->file, where, key);
  return ENPU_OK;
}

static int get_phase(const mctx *mc, const json_t *o, const char *where, int *out, enpu_err *err) {
  char name[16];
  config_phase ph;
  ENPU_FORWARD(member_str(mc, o, where, "phase", name, sizeof name, err));
  if (config_phase_parse(name, &ph) < 0) return bad(mc, where, "phase prefill or decode", err);
  *out = (int)ph;
  return ENPU_OK;
}

static int load_json_file(const char *path, json_t **out, enpu_err *err) {
  json_error_t je;
  char *text = NULL;
  size_t len = 0;
  ENPU_FORWARD(enpu_read_file(path, &text, &len, err));
  *out = json_loadb(text, len, 0, &je);
  free(text);
  ENPU_RETURN_IF(!*out, err, ENPU_ERR_PARSE, "%s:%d:%d: %s", path, je.line, je.column, je.text);
  return ENPU_OK;
}

/* fn on each element of the manifest's array `key` (absent: none), at most PAPER_MAX_FILES. */
typedef int (*element_fn)(const mctx *mc, const json_t *e, const char *at, paper_model *m, enpu_err *err);

static int each(const mctx *mc, const json_t *doc, const char *key, paper_model *m, element_fn fn, enpu_err *err) {
  const json_t *a = json_object_get(doc, key);
  char at[64];
  snprintf(at, sizeof at, "$.%s", key);
  if (!a && !strcmp(key, "decompose")) return ENPU_OK;
  if (!json_is_array(a) || json_array_size(a) > PAPER_MAX_FILES) return bad(mc, at, "an array", err);
  size_t i;
  json_t *e;
  json_array_foreach(a, i, e) {
    snprintf(at, sizeof at, "$.%s[%zu]", key, i);
    ENPU_FORWARD(fn(mc, e, at, m, err));
  }
  return ENPU_OK;
}

static int load_run(const mctx *mc, const json_t *r, const char *at, paper_model *m, enpu_err *err) {
  ENPU_RETURN_IF(m->nruns == PAPER_MAX_RUNS, err, ENPU_ERR_RANGE, "%s: more than %d runs", mc->file,
                 PAPER_MAX_RUNS);
  paper_run *run = &m->runs[m->nruns++];
  const json_t *v = json_object_get(r, "variant");
  ENPU_FORWARD(member_str(mc, r, at, "name", run->name, sizeof run->name, err));
  ENPU_FORWARD(member_str(mc, r, at, "kind", run->kind, sizeof run->kind, err));
  ENPU_FORWARD(member_str(mc, r, at, "budget", run->budget, sizeof run->budget, err));
  if (json_is_string(v)) ENPU_FORWARD(member_str(mc, r, at, "variant", run->variant, sizeof run->variant, err));
  else if (!json_is_null(v)) return bad(mc, at, "\"variant\": a name or null", err);
  ENPU_FORWARD(get_path(mc, r, at, "store", run->store, sizeof run->store, err));
  return get_path(mc, r, at, "job", run->job, sizeof run->job, err);
}

static int load_compile(const mctx *mc, const json_t *r, const char *at, paper_model *m, enpu_err *err) {
  paper_compile *c = &m->compile[m->ncompile++];
  char file[PATH_MAX];
  ENPU_FORWARD(get_phase(mc, r, at, &c->phase, err));
  ENPU_FORWARD(member_str(mc, r, at, "policy", c->policy, sizeof c->policy, err));
  ENPU_FORWARD(get_path(mc, r, at, "file", file, sizeof file, err));
  return load_json_file(file, &c->doc, err);
}

static int load_graph(const mctx *mc, const json_t *r, const char *at, paper_model *m, enpu_err *err) {
  paper_graph *g = &m->graph[m->ngraph++];
  char file[PATH_MAX];
  ENPU_FORWARD(get_phase(mc, r, at, &g->phase, err));
  ENPU_FORWARD(get_path(mc, r, at, "file", file, sizeof file, err));
  json_t *doc = NULL;
  ENPU_FORWARD(load_json_file(file, &doc, err));
  const json_t *t = json_object_get(doc, "time_ns"), *s = json_object_get(doc, "seq");
  const bool ok = json_is_number(t) && json_is_integer(s);
  g->time_ns = json_number_value(t), g->seq = (int)json_integer_value(s);
  json_decref(doc);
  ENPU_RETURN_IF(!ok, err, ENPU_ERR_FORMAT, "%s: expected \"seq\" and \"time_ns\" (tools/paper.py's graph stage)",
                 file);
  return ENPU_OK;
}

static int load_replay(const mctx *mc, const json_t *r, const char *at, paper_model *m, enpu_err *err) {
  paper_replay *p = &m->replays[m->nreplays++];
  char file[PATH_MAX + 16];
  ENPU_FORWARD(member_str(mc, r, at, "run", p->run, sizeof p->run, err));
  ENPU_FORWARD(member_str(mc, r, at, "name", p->name, sizeof p->name, err));
  ENPU_FORWARD(get_path(mc, r, at, "dir", p->dir, sizeof p->dir, err));
  snprintf(file, sizeof file, "%s/summary.json", p->dir);
  return load_json_file(file, &p->summary, err);
}

/* A measured decomposition: kept by name (the files are linked, not read). */
static int load_decompose(const mctx *mc, const json_t *r, const char *at, paper_model *m, enpu_err *err) {
  ENPU_FORWARD(member_str(mc, r, at, "name", m->decompose[m->ndecompose], CONFIG_NAME_LEN, err));
  m->ndecompose++;
  return ENPU_OK;
}

static int load_request(const mctx *mc, const json_t *doc, paper_model *m, enpu_err *err) {
  const json_t *req = json_object_get(doc, "request"), *t7 = json_object_get(doc, "table7");
  for (int ph = 0; ph < CONFIG_NPHASE; ph++) {
    const json_t *b = json_object_get(req, config_phase_name((config_phase)ph));
    if (!b) continue;
    const json_t *batch = json_object_get(b, "batch"), *seq = json_object_get(b, "seq");
    if (!json_is_integer(batch) || !json_is_integer(seq))
      return bad(mc, "$.request", "{batch, seq} per phase", err);
    m->req_phase[ph] = true;
    m->req_batch[ph] = (int)json_integer_value(batch), m->req_seq[ph] = (int)json_integer_value(seq);
  }
  if (!json_is_number(json_object_get(t7, "slack"))) return bad(mc, "$.table7.slack", "a number", err);
  m->t7_slack = json_number_value(json_object_get(t7, "slack"));
  return member_str(mc, t7, "$.table7", "budget", m->t7_budget, sizeof m->t7_budget, err);
}

int paper_load_manifest(const char *file, paper_model *m, enpu_err *err) {
  mctx mc = {.file = file};
  const char *slash = strrchr(file, '/');
  snprintf(mc.dir, sizeof mc.dir, "%.*s", slash ? (int)(slash - file) : 1, slash ? file : ".");
  snprintf(m->dir, sizeof m->dir, "%s", mc.dir);
  json_t *doc = NULL;
  ENPU_FORWARD(load_json_file(file, &doc, err));
  int rc = member_str(&mc, doc, "$", "model", m->name, sizeof m->name, err);
  if (!rc) rc = get_path(&mc, doc, "$", "job", m->job, sizeof m->job, err);
  if (!rc) rc = load_request(&mc, doc, m, err);
  if (!rc) rc = each(&mc, doc, "runs", m, load_run, err);
  if (!rc) rc = each(&mc, doc, "compile", m, load_compile, err);
  if (!rc) rc = each(&mc, doc, "graph", m, load_graph, err);
  if (!rc) rc = each(&mc, doc, "replays", m, load_replay, err);
  if (!rc) rc = each(&mc, doc, "decompose", m, load_decompose, err);
  const json_t *f20 = json_object_get(doc, "figure20");
  char file20[PATH_MAX];
  if (!rc && json_is_object(f20)) rc = get_path(&mc, f20, "$.figure20", "dir", m->figure20_dir, PATH_MAX, err);
  if (!rc && json_is_object(f20)) rc = get_path(&mc, f20, "$.figure20", "json", file20, sizeof file20, err);
  if (!rc && json_is_object(f20)) rc = load_json_file(file20, &m->figure20, err);
  char timings[PATH_MAX];
  if (!rc) rc = get_path(&mc, doc, "$", "timings", timings, sizeof timings, err);
  if (!rc) rc = load_json_file(timings, &m->timings, err);
  json_decref(doc);
  return rc;
}

/* ---- lookups --------------------------------------------------------------------- */

paper_run *paper_find_run(paper_model *m, const char *kind, const paper_column *col, paper_value *v) {
  for (int i = 0; i < m->nruns; i++) {
    paper_run *r = &m->runs[i];
    if (strcmp(r->kind, kind) || strcmp(r->budget, col->budget) || strcmp(r->variant, col->variant)) continue;
    if (!r->c && !r->load_rc) r->load_rc = store_load(r->store, &r->c, &r->load_err);
    if (r->load_rc < 0) {
      snprintf(v->note, sizeof v->note, "%s/%s: %.340s", m->name, r->name, r->load_err.msg); /* note: 480 - names */
      return NULL;
    }
    return r;
  }
  snprintf(v->note, sizeof v->note, "%s: no %s run in %s mode%s%s", m->name, kind, col->budget,
           col->variant[0] ? " on " : "", col->variant);
  return NULL;
}

const paper_replay *paper_find_replay(const paper_model *m, const char *run, const char *name) {
  for (int i = 0; i < m->nreplays; i++)
    if (!strcmp(m->replays[i].run, run) && !strcmp(m->replays[i].name, name)) return &m->replays[i];
  return NULL;
}

const paper_replay *paper_find_replay_of(const paper_model *m, const char *run) {
  for (int i = 0; i < m->nreplays; i++)
    if (!strcmp(m->replays[i].run, run)) return &m->replays[i];
  return NULL;
}

const store_policy_tables *paper_policy(const store_contents *c, const char *name) {
  for (size_t i = 0; c && i < c->npolicies; i++)
    if (!strcmp(c->policies[i].name, name)) return &c->policies[i];
  return NULL;
}

int paper_variants(const paper_ctx *x, const char **out, int cap) {
  int n = 0;
  for (int i = 0; i < x->nmodels; i++)
    for (int r = 0; r < x->models[i].nruns; r++) {
      const char *v = x->models[i].runs[r].variant;
      bool seen = !v[0];
      for (int k = 0; k < n && !seen; k++) seen = !strcmp(out[k], v);
      if (!seen && n < cap) out[n++] = v;
    }
  return n;
}
