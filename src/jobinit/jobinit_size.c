/* jobinit_size.c — the nodes measured once the store exists (jobinit_size_nodes): the
 * trace replayed on the store's NoDVFS plans, each pool grown while its outcome misses.
 * Each round writes the candidate cluster under a name of its own and loads it, so the
 * loaded cluster stays const and cluster.json changes only when the counts do. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "jobinit_internal.h"
#include "planstore.h"

typedef struct {
  config_model *model;
  config_chip *chip;
  planstore *ps;
  replay_trace *trace;
} size_inputs;

/* NoDVFS's share of requests meeting their TTFT and TPOT on the cluster of `text`. */
static int measure(const jobinit_ctx *c, const size_inputs *in, const char *text, double met[CONFIG_NPHASE],
                   enpu_err *err) {
  char path[CONFIG_PATH_LEN + 32];
  snprintf(path, sizeof path, "%s/cluster.sizing.json", c->o->out_dir); /* a name of its own */
  config_cluster *cl = NULL;
  replay_result *res = NULL;
  replay_setup setup;
  int rc = enpu_file_write(path, text, strlen(text), 0, err);
  if (!rc) rc = config_cluster_load(path, &cl, err);
  remove(path);
  if (!rc) rc = replay_setup_init(&setup, cl, in->model, in->chip, err);
  if (!rc) rc = replay_run(in->ps, config_policy_name(CONFIG_POLICY_NODVFS), in->trace, &setup, &res, err);
  if (!rc) {
    const replay_summary *s = replay_result_summary(res);
    const double n = s->requests ? (double)s->requests : 1.0;
    met[CONFIG_PREFILL] = (double)s->ttft_met / n;
    met[CONFIG_DECODE] = (double)s->tpot_met / n;
  }
  replay_result_free(res);
  config_cluster_free(cl);
  return rc;
}

/* Grow each missing pool by a quarter (at least a node) per round. A pool stops at the
 * cap, or when its last step helped less than JOBINIT_SIZE_MIN_GAIN: then its misses are
 * not queueing (a coarse grid's padding, or targets below the padded buckets' times),
 * and the step is taken back. */
static int grow(const jobinit_ctx *c, const size_inputs *in, double target, enpu_err *err) {
  jobinit_result *r = c->r;
  bool stepped[CONFIG_NPHASE] = {false}, done[CONFIG_NPHASE] = {false};
  int before[CONFIG_NPHASE] = {0};
  for (;;) {
    char *text = NULL;
    double met[CONFIG_NPHASE] = {0};
    ENPU_FORWARD(jobinit_cluster_text(c, &text, err));
    const int rc = measure(c, in, text, met, err);
    free(text);
    ENPU_FORWARD(rc);
    /* each round replays the whole trace: a stop waits for at most one */
    ENPU_RETURN_IF(enpu_stop_asked(&c->o->stop), err, ENPU_ERR_STOPPED,
                   "node sizing: stopped (a stop signal) after %s round", r->sized ? "a" : "the first");
    bool grew = false;
    for (int ph = 0; ph < CONFIG_NPHASE; ph++) {
      if (!r->sized) r->attainment_rule[ph] = r->attainment_sized[ph] = met[ph];
      if (stepped[ph] && met[ph] - r->attainment_sized[ph] < JOBINIT_SIZE_MIN_GAIN) {
        r->nodes[ph] = before[ph], r->size_flat[ph] = done[ph] = true; /* the step bought nothing */
      } else {
        r->attainment_sized[ph] = met[ph];
      }
      stepped[ph] = false;
      if (done[ph] || met[ph] >= target) continue;
      const int next = (int)fmax(r->nodes[ph] + 1.0, ceil(r->nodes[ph] * 1.25));
      if (next > JOBINIT_SIZE_MAX_FACTOR * r->rule_nodes[ph]) {
        r->size_capped = done[ph] = true;
        continue;
      }
      before[ph] = r->nodes[ph], r->nodes[ph] = next, stepped[ph] = grew = true;
    }
    r->sized = true;
    if (!grew) return 0;
  }
}

static int write_sized(const jobinit_ctx *c, const char *sized_dir, enpu_err *err) {
  jobinit_result *r = c->r;
  char md[CONFIG_PATH_LEN + 16], *text = NULL, *buf = NULL;
  size_t len = 0;
  ENPU_RETURN_IF(snprintf(r->sized_cluster_path, sizeof r->sized_cluster_path, "%s/cluster.json", sized_dir) >=
                         (int)sizeof r->sized_cluster_path ||
                     snprintf(md, sizeof md, "%s/sizing.md", sized_dir) >= (int)sizeof md,
                 err, ENPU_ERR_RANGE, "path too long: %s", sized_dir);
  ENPU_FORWARD(enpu_mkdir_p(sized_dir, err));
  FILE *f = open_memstream(&buf, &len);
  ENPU_RETURN_IF(!f, err, ENPU_ERR_NOMEM, "out of memory (sizing.md)");
  jobinit_write_sizing(r, f);
  fclose(f);
  int rc = jobinit_cluster_text(c, &text, err);
  if (!rc) rc = jobinit_write_if_changed(r->sized_cluster_path, text, err);
  if (!rc) rc = jobinit_write_if_changed(md, buf, err);
  free(text), free(buf);
  return rc;
}

int jobinit_size_nodes(const jobinit_options *o, jobinit_result *r, const char *store_path, double target,
                       const char *sized_dir, enpu_err *err) {
  ENPU_RETURN_IF(!(target > 0 && target <= 1), err, ENPU_ERR_INVALID, "job init: sizing target %g not in (0, 1]",
                 target);
  jobinit_ctx c = {.o = o, .r = r};
  size_inputs in = {0};
  r->sized = r->size_capped = false;
  r->size_target = target;
  memcpy(r->rule_nodes, r->nodes, sizeof r->rule_nodes);
  int rc = config_model_load(r->model_path, &in.model, err);
  if (!rc) snprintf(c.model_name, sizeof c.model_name, "%s", in.model->name);
  if (!rc) rc = config_chip_load(o->chip_path, &in.chip, err);
  if (!rc) rc = planstore_open_policy(store_path, config_policy_name(CONFIG_POLICY_NODVFS), &in.ps, err);
  if (!rc) rc = replay_trace_load(o->trace_path, false, &in.trace, err);
  if (!rc) rc = grow(&c, &in, target, err);
  if (!rc) rc = write_sized(&c, sized_dir, err);
  replay_trace_free(in.trace);
  planstore_close(in.ps);
  config_chip_free(in.chip);
  config_model_free(in.model);
  return rc;
}
