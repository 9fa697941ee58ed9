/* replay_uniform.c — what governors and speculative decoding price batches with: the
 * store's uniform policy (schemas/planstore.md: one pass per chip-wide state, reached
 * by a whole number of walk rounds; ops named by segment), passes through fewer layers
 * split from it, and the expected cost of a self-speculative round (replay.h).
 *
 * A pass through d layers is the uniform pass's embedding and head ops once plus, per
 * layer kept, one layer of its dense (then MoE) layer ops: the cost model's figures for
 * the graph of that depth (graph_build_depth has the same ops with those repeats). The
 * split of a bucket at a state is computed once (planstore_plan_states) and cached by
 * the bucket's row. It needs one pipeline stage per node (pp = 1): with pp > 1 a pass's
 * layers span stages the store does not model apart. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "replay_internal.h"

/* ---- the speculation arithmetic (PELM §3.1, Leviathan et al. 2023) -------------------- */

double replay_spec_speedup(double accepted, int draft_tokens, int exit_layers, int verify_layers) {
  const double denominator = (double)draft_tokens * exit_layers + verify_layers;
  return denominator > 0 ? accepted * verify_layers / denominator : NAN;
}

double replay_spec_tokens(double rate, int draft_tokens) {
  if (rate >= 1) return draft_tokens + 1.0;
  return (1 - pow(rate, draft_tokens + 1)) / (1 - rate);
}

int replay_spec_rate(const config_model *model, int exit_layers, double *rate, enpu_err *err) {
  char have[128] = "";
  for (int i = 0; i < model->spec_exit_count; i++) {
    if (model->spec_exits[i].exit_layers == exit_layers) {
      *rate = model->spec_exits[i].rate;
      return ENPU_OK;
    }
    const size_t used = strlen(have);
    snprintf(have + used, sizeof have - used, "%s%d", i ? ", " : "", model->spec_exits[i].exit_layers);
  }
  return enpu_errorf(err, ENPU_ERR_NOT_FOUND,
                     "model %s has no acceptance rate for a draft exit at layer %d (it has %s)", model->name,
                     exit_layers, have);
}

int replay_spec_check(const config_model *model, const replay_spec *spec, enpu_err *err) {
  const int vd = spec->verify_layers ? spec->verify_layers : model->layers;
  ENPU_RETURN_IF(spec->draft_tokens < 0 || spec->draft_tokens > REPLAY_SPEC_MAX_DRAFT, err, ENPU_ERR_INVALID,
                 "speculative horizon %d outside 0..%d", spec->draft_tokens, REPLAY_SPEC_MAX_DRAFT);
  ENPU_RETURN_IF(vd < 1 || vd > model->layers, err, ENPU_ERR_INVALID, "verification depth %d outside 1..%d layers",
                 vd, model->layers);
  ENPU_RETURN_IF((spec->exit_layers == 0) != (spec->draft_tokens == 0), err, ENPU_ERR_INVALID,
                 "a draft needs both an exit depth and a horizon (got exit %d, horizon %d)", spec->exit_layers,
                 spec->draft_tokens);
  if (spec->exit_layers == 0) return ENPU_OK;
  ENPU_RETURN_IF(spec->exit_layers >= vd, err, ENPU_ERR_INVALID,
                 "draft exit %d must be below the verification depth %d", spec->exit_layers, vd);
  double rate = 0;
  return replay_spec_rate(model, spec->exit_layers, &rate, err);
}

/* ---- the uniform table ------------------------------------------------------------- */

int replay_fastest_plan_of(const sim *s, const char *policy, int phase, int n, int seq, planstore_plan *pl,
                           enpu_err *err) {
  const int rc = planstore_lookup(s->ps, policy, phase, n, seq, -INFINITY, pl, NULL);
  if (rc == ENPU_OK || (rc == ENPU_ERR_INFEASIBLE && pl->batch > 0)) return 1;
  if (rc == ENPU_ERR_NOT_FOUND || rc == ENPU_ERR_INFEASIBLE) return 0;
  return planstore_lookup(s->ps, policy, phase, n, seq, -INFINITY, pl, err);
}

int replay_uniform_plan(sim *s, const planstore_plan *bucket, int state, planstore_plan *pl, enpu_err *err) {
  const int peak = s->setup->peak_state;
  ENPU_RETURN_IF(peak < 2 || bucket->walk_steps % (uint64_t)(peak - 1), err, ENPU_ERR_FORMAT,
                 "the store's " ENPU_POLICY_NAME_UNIFORM
                 " bucket batch %d seq %d has %llu walk steps, not rounds over %d states",
                 bucket->batch, bucket->seq, (unsigned long long)bucket->walk_steps, peak);
  const uint64_t per_round = bucket->walk_steps / (uint64_t)(peak - 1);
  return planstore_at_prefix(s->ps, bucket, (uint64_t)(peak - state) * per_round, pl, err);
}

/* Which part of a pass an op of the uniform policy belongs to, from its name. */
static int op_part(const char *name) {
  if (!strncmp(name, "dense_layer:", 12)) return 1;
  if (!strncmp(name, "moe_layer:", 10)) return 2;
  if (!strncmp(name, "window_layer:", 13)) return 3;
  return 0;
}

/* The split of `bucket`'s pass at `state` into embedding + head and one layer of each
 * kind, checking the walk's rounds put every op there. */
static int split_pass(sim *s, const planstore_plan *bucket, int state, uniform_pass *u, enpu_err *err) {
  planstore_plan pl;
  ENPU_FORWARD(replay_uniform_plan(s, bucket, state, &pl, err));
  const size_t nops = planstore_plan_op_count(s->ps, &pl);
  planstore_op_states *ops = enpu_calloc(nops ? nops : 1, sizeof *ops);
  ENPU_RETURN_IF(!ops, err, ENPU_ERR_NOMEM, "out of memory (" ENPU_POLICY_NAME_UNIFORM " ops)");
  size_t n = 0;
  int rc = planstore_plan_states(s->ps, &pl, ops, nops, &n, err);
  *u = (uniform_pass){.valid = true};
  /* A window-limited layer (model sliding_window) is one of the dense layers: the full
   * and the windowed ones' ops are spread over all of them, so a partial-depth pass takes
   * their average share (and their counts need not divide the dense layers). */
  const int layers[4] = {1, s->dense_layers, s->moe_layers, s->dense_layers};
  const bool windows = s->setup->model && s->setup->model->window_layers > 0;
  for (size_t i = 0; rc == ENPU_OK && i < n; i++) {
    const planstore_op_states *o = &ops[i];
    const int part = op_part(o->name);
    if (o->lead_instances != o->instances || o->lead_states[0] != state || layers[part] < 1 ||
        ((part == 2 || (part == 1 && !windows)) && o->instances % (uint64_t)layers[part])) {
      rc = enpu_errorf(err, ENPU_ERR_FORMAT,
                       ENPU_POLICY_NAME_UNIFORM
                       " bucket batch %d seq %d, op %s: %llu instances at state %d, not all at state %d or "
                       "not a multiple of the model's %d layers of its kind (one pipeline stage per node?)",
                       pl.batch, pl.seq, o->name, (unsigned long long)o->lead_instances, o->lead_states[0], state,
                       layers[part]);
      break;
    }
    const double per = (double)o->instances / layers[part];
    const int kind = part == 3 ? 0 : part - 1; /* window ops count with the dense layer's */
    double *t = part ? &u->layer_t[kind] : &u->fixed_t, *e = part ? &u->layer_e[kind] : &u->fixed_e;
    *t += per * o->lead_time_ns;
    *e += per * o->lead_energy_nj;
  }
  free(ops);
  return rc;
}

int replay_uniform_depth(sim *s, const planstore_plan *bucket, int state, int layers, double *time_ns,
                         double *energy_nj, enpu_err *err) {
  const int peak = s->setup->peak_state, total = s->dense_layers + s->moe_layers;
  ENPU_RETURN_IF(state < 1 || state > peak, err, ENPU_ERR_RANGE, "state %d outside 1..%d", state, peak);
  if (layers == 0 || layers == total) { /* the stored pass itself */
    planstore_plan pl;
    ENPU_FORWARD(replay_uniform_plan(s, bucket, state, &pl, err));
    *time_ns = pl.time_ns;
    *energy_nj = pl.energy_nj;
    return ENPU_OK;
  }
  const size_t row = bucket->bucket;
  if (row >= s->ucache_n) {
    size_t cap = s->ucache_n;
    ENPU_RETURN_IF(enpu_grow((void **)&s->ucache, &cap, row + 1, sizeof *s->ucache) < 0, err, ENPU_ERR_NOMEM,
                   "out of memory (" ENPU_POLICY_NAME_UNIFORM " cache)");
    memset(s->ucache + s->ucache_n, 0, (cap - s->ucache_n) * sizeof *s->ucache);
    s->ucache_n = cap;
  }
  if (!s->ucache[row]) s->ucache[row] = enpu_calloc((size_t)peak + 1, sizeof **s->ucache);
  ENPU_RETURN_IF(!s->ucache[row], err, ENPU_ERR_NOMEM, "out of memory (" ENPU_POLICY_NAME_UNIFORM " cache)");
  uniform_pass *u = &s->ucache[row][state];
  if (!u->valid) ENPU_FORWARD(split_pass(s, bucket, state, u, err));
  const int dense = layers < s->dense_layers ? layers : s->dense_layers, moe = layers - dense;
  *time_ns = u->fixed_t + dense * u->layer_t[0] + moe * u->layer_t[1];
  *energy_nj = u->fixed_e + dense * u->layer_e[0] + moe * u->layer_e[1];
  return ENPU_OK;
}

void replay_uniform_cache_free(sim *s) {
  for (size_t i = 0; i < s->ucache_n; i++) free(s->ucache[i]);
  free(s->ucache);
  s->ucache = NULL;
  s->ucache_n = 0;
}

/* ---- a decode iteration ------------------------------------------------------------- */

/* The draft and verification buckets of a round of n members at length seq: the KV grows
 * by up to ns within the round; 0 when the store has no bucket for them. */
static int round_buckets(const sim *s, const char *policy, int n, int seq, const replay_spec *sp,
                         planstore_plan *draft, planstore_plan *verify, enpu_err *err) {
  const int64_t len = (int64_t)seq + sp->draft_tokens, rows = (int64_t)n * (sp->draft_tokens + 1);
  if (len > INT32_MAX || rows > INT32_MAX) return 0;
  int ok = replay_fastest_plan_of(s, policy, CONFIG_DECODE, n, (int)len, draft, err);
  if (ok > 0) ok = replay_fastest_plan_of(s, policy, CONFIG_DECODE, (int)rows, (int)len, verify, err);
  return ok;
}

int replay_gov_decode_work(sim *s, const planstore_plan *base, int n, int seq, const replay_spec *spec, gov_work *w,
                           enpu_err *err) {
  *w = (gov_work){
      .phase = CONFIG_DECODE, .base = *base, .tokens = 1, .spec = {.verify_layers = spec->verify_layers}};
  if (spec->exit_layers == 0) return ENPU_OK;
  const int ok = round_buckets(s, config_policy_name(CONFIG_POLICY_UNIFORM), n, seq, spec, &w->base, &w->verify,
                               err);
  if (ok < 0) return ok;
  if (ok == 0) { /* no bucket for the round: plain decoding this iteration */
    w->base = *base;
    return ENPU_OK;
  }
  double rate = 0;
  ENPU_FORWARD(replay_spec_rate(s->setup->model, spec->exit_layers, &rate, err));
  w->spec = *spec;
  w->tokens = replay_spec_tokens(rate, spec->draft_tokens);
  return ENPU_OK;
}

int replay_gov_work_cost(sim *s, const gov_work *w, int state, double *time_ns, double *node_nj, enpu_err *err) {
  double t, e;
  if (w->spec.exit_layers == 0) {
    ENPU_FORWARD(replay_uniform_depth(s, &w->base, state, w->spec.verify_layers, &t, &e, err));
  } else {
    double td, ed, tv, ev;
    ENPU_FORWARD(replay_uniform_depth(s, &w->base, state, w->spec.exit_layers, &td, &ed, err));
    ENPU_FORWARD(replay_uniform_depth(s, &w->verify, state, w->spec.verify_layers, &tv, &ev, err));
    t = (w->spec.draft_tokens * td + tv) / w->tokens;
    e = (w->spec.draft_tokens * ed + ev) / w->tokens;
  }
  *time_ns = t * (w->scale_t > 0 ? w->scale_t : 1);
  *node_nj = e * (w->scale_e > 0 ? w->scale_e : 1) * s->cl->node[w->phase].chips;
  return ENPU_OK;
}

/* ---- a store policy with a fixed configuration --------------------------------------- */

/* Share of a full pass's time and energy that a pass through `layers` layers takes, from
 * the uniform pass of the same bucket at the peak state. */
static int depth_share(sim *s, const planstore_plan *policy_plan, int layers, double *t_share, double *e_share,
                       enpu_err *err) {
  planstore_plan u;
  const int ok = replay_fastest_plan_of(s, config_policy_name(CONFIG_POLICY_UNIFORM), CONFIG_DECODE,
                                        policy_plan->batch, policy_plan->seq, &u, err);
  if (ok < 0) return ok;
  ENPU_RETURN_IF(ok == 0, err, ENPU_ERR_NOT_FOUND,
                 "the " ENPU_POLICY_NAME_UNIFORM " policy has no decode bucket for batch %d seq %d",
                 policy_plan->batch, policy_plan->seq);
  double tf, ef, td, ed;
  const int peak = s->setup->peak_state;
  ENPU_FORWARD(replay_uniform_depth(s, &u, peak, 0, &tf, &ef, err));
  ENPU_FORWARD(replay_uniform_depth(s, &u, peak, layers, &td, &ed, err));
  *t_share = td / tf;
  *e_share = ed / ef;
  return ENPU_OK;
}

/* Fastest time and energy of a round's passes, per token (store policy s->policy). */
typedef struct {
  planstore_plan draft, verify;
  double tokens, t_fast, e_fast; /* per token, at the fastest plans */
  double td, ed, tv, ev;         /* depth shares of the draft and verification passes */
  bool plain;                    /* no bucket for the round: a plain iteration */
} store_round;

static int round_from_store(sim *s, const planstore_plan *fast, int n, int seq, store_round *r, enpu_err *err) {
  const replay_spec *sp = &s->job->spec;
  memset(r, 0, sizeof *r);
  const int ok = sp->exit_layers ? round_buckets(s, s->policy, n, seq, sp, &r->draft, &r->verify, err) : 1;
  if (ok < 0) return ok;
  r->plain = ok == 0;
  if (r->plain || sp->exit_layers == 0) r->draft = r->verify = *fast;
  double rate = 1;
  if (!r->plain && sp->exit_layers) ENPU_FORWARD(replay_spec_rate(s->setup->model, sp->exit_layers, &rate, err));
  const int ns = r->plain ? 0 : sp->draft_tokens;
  r->tokens = replay_spec_tokens(rate, ns);
  r->td = r->ed = 0;
  if (ns) ENPU_FORWARD(depth_share(s, &r->draft, sp->exit_layers, &r->td, &r->ed, err));
  ENPU_FORWARD(depth_share(s, &r->verify, sp->verify_layers, &r->tv, &r->ev, err));
  r->t_fast = (ns * r->draft.time_ns * r->td + r->verify.time_ns * r->tv) / r->tokens;
  r->e_fast = (ns * r->draft.energy_nj * r->ed + r->verify.energy_nj * r->ev) / r->tokens;
  return ENPU_OK;
}

int replay_spec_store_ratio(sim *s, const planstore_plan *fast, int n, int seq, double *ratio, enpu_err *err) {
  store_round r;
  ENPU_FORWARD(round_from_store(s, fast, n, seq, &r, err));
  *ratio = r.t_fast / fast->time_ns;
  return ENPU_OK;
}

int replay_spec_store_step(sim *s, const planstore_plan *fast, const plan_choice *c, int n, int seq,
                           double *time_ns, double *energy_nj, gov_work *w, enpu_err *err) {
  store_round r;
  ENPU_FORWARD(round_from_store(s, fast, n, seq, &r, err));
  *w = (gov_work){.phase = CONFIG_DECODE, .tokens = r.tokens, .spec = s->job->spec};
  if (r.plain) w->spec.exit_layers = w->spec.draft_tokens = 0;
  /* The plan's slow-down and savings on the batch's bucket, applied to the round. */
  *time_ns = r.t_fast * (c->pl.time_ns / fast->time_ns);
  *energy_nj = r.e_fast * (c->pl.energy_nj / fast->energy_nj);
  return ENPU_OK;
}
