/* replay_pelm.c — the PELM governor's agent (PELM §3.4; replay.h): a branching deep
 * Q-network on FANN. The network is an MLP REPLAY_PELM_NOBS → 32 → 32 → Σ branch sizes
 * (tanh hidden units, linear outputs): its output layer is one linear head per action
 * branch side by side. Each branch's Q-values are learnt against its own target
 * r + γ · max_a Q̄_b(s', a), Q̄ the target network (Tavakoli et al.'s action branching
 * without a shared state value); prefill transitions train the V/f head only (the other
 * branches do nothing there).
 *
 * Why FANN: a maintained C library in Debian (libfann-dev) with incremental
 * backpropagation (fann_train: one SGD step per sample), which is what a DQN update is;
 * we only build the desired output vector (the TD target on the taken actions, the
 * network's own output elsewhere, so only taken actions carry an error; the error is
 * clipped to ±1, the gradient of the Huber loss).
 *
 * Determinism: weights are drawn from the agent's own generator (not FANN's rand()),
 * exploration and replay sampling too; FANN's arithmetic is sequential float, so the
 * same seed and inputs give bit-identical weights. */
#include <doublefann.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "replay_internal.h"

#define HIDDEN 32
static const int draft_choices[] = {0, 1, 2, 3, 4, 6, 8};
#define NDRAFT ((int)(sizeof draft_choices / sizeof draft_choices[0]))
#define MAX_OUT (REPLAY_MAX_STATE + 2 * CONFIG_MAX_SPEC_EXITS + 1 + NDRAFT)

struct replay_pelm {
  replay_pelm_params p;
  struct fann *net, *target;
  int size[REPLAY_PELM_NBRANCH], offset[REPLAY_PELM_NBRANCH], nout;
  int exits[CONFIG_MAX_SPEC_EXITS], verifies[CONFIG_MAX_SPEC_EXITS + 1];
  uint64_t rng;
  uint64_t updates;
  /* experience replay (ring) */
  fann_type (*obs)[REPLAY_PELM_NOBS], (*next)[REPLAY_PELM_NOBS];
  int (*act)[REPLAY_PELM_NBRANCH];
  double *reward;
  unsigned char *phase;
  int filled, head;
};

static uint64_t next_u64(uint64_t *x) { /* splitmix64 */
  uint64_t z = (*x += 0x9E3779B97F4A7C15ULL);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
  return z ^ (z >> 31);
}

static double uniform01(uint64_t *x) { return (double)(next_u64(x) >> 11) * 0x1.0p-53; }

void replay_pelm_params_default(replay_pelm_params *p) {
  *p = (replay_pelm_params){.seed = 1,
                            .qoe_weight = 4,
                            .gamma = 0.9,
                            .learning_rate = 0.01,
                            .epsilon_start = 1,
                            .epsilon_end = 0.05,
                            .epsilon_decay_s = 300,
                            .replay_capacity = 20000,
                            .batch = 32,
                            .train_every = 4,
                            .target_every = 250};
}

void replay_pelm_free(replay_pelm *a) {
  if (!a) return;
  if (a->net) fann_destroy(a->net);
  if (a->target) fann_destroy(a->target);
  free(a->obs); /* owns the rest of the replay buffer */
  free(a);
}

/* Branches for the model and chip: states; exit depths; verification depths (the exits
 * deeper than the shallowest one, then the full depth; the full depth alone when
 * lossless); horizons. */
static int branches(replay_pelm *a, const replay_setup *setup, enpu_err *err) {
  const config_model *m = setup->model;
  ENPU_RETURN_IF(!m || m->spec_exit_count < 1 || setup->peak_state < 2 || setup->peak_state > REPLAY_MAX_STATE, err,
                 ENPU_ERR_INVALID, "the PELM agent needs a model with draft exit depths and 2..%d V/f states",
                 REPLAY_MAX_STATE);
  a->size[0] = setup->peak_state;
  a->size[1] = m->spec_exit_count;
  a->size[2] = 0;
  for (int i = 0; i < m->spec_exit_count; i++) {
    a->exits[i] = m->spec_exits[i].exit_layers;
    if (i > 0 && !a->p.lossless) a->verifies[a->size[2]++] = a->exits[i];
  }
  a->verifies[a->size[2]++] = m->layers;
  a->size[3] = NDRAFT;
  a->nout = 0;
  for (int b = 0; b < REPLAY_PELM_NBRANCH; b++) {
    a->offset[b] = a->nout;
    a->nout += a->size[b];
  }
  return ENPU_OK;
}

static int check_params(const replay_pelm_params *p, enpu_err *err) {
  ENPU_RETURN_IF(!(p->qoe_weight >= 0) || !(p->gamma >= 0 && p->gamma < 1) || !(p->learning_rate > 0) ||
                     !(p->epsilon_start >= 0 && p->epsilon_start <= 1) ||
                     !(p->epsilon_end >= 0 && p->epsilon_end <= p->epsilon_start) || !(p->epsilon_decay_s >= 0) ||
                     p->replay_capacity < 1 || p->batch < 1 || p->train_every < 1 || p->target_every < 1,
                 err, ENPU_ERR_INVALID,
                 "PELM parameters: need qoe_weight >= 0, 0 <= gamma < 1, learning_rate > 0, 0 <= epsilon_end <= "
                 "epsilon_start <= 1, epsilon_decay_s >= 0, and positive replay_capacity, batch, train_every, "
                 "target_every");
  return ENPU_OK;
}

/* The network with FANN's settings for a DQN (weights to be set by the caller). */
static int make_net(replay_pelm *a, enpu_err *err) {
  a->net = fann_create_standard(4, REPLAY_PELM_NOBS, HIDDEN, HIDDEN, a->nout);
  ENPU_RETURN_IF(!a->net, err, ENPU_ERR_NOMEM, "out of memory (FANN network)");
  fann_set_error_log((struct fann_error *)a->net, NULL);
  fann_set_activation_function_hidden(a->net, FANN_SIGMOID_SYMMETRIC);
  fann_set_activation_steepness_hidden(a->net, 1.0);
  fann_set_activation_function_output(a->net, FANN_LINEAR);
  fann_set_activation_steepness_output(a->net, 1.0);
  fann_set_train_error_function(a->net, FANN_ERRORFUNC_LINEAR);
  fann_set_learning_rate(a->net, (float)a->p.learning_rate);
  fann_set_learning_momentum(a->net, 0);
  const size_t cap = (size_t)a->p.replay_capacity;
  ENPU_RETURN_IF(ENPU_CALLOC_PARTS(ENPU_PART(a->obs, cap), ENPU_PART(a->next, cap), ENPU_PART(a->act, cap),
                                   ENPU_PART(a->reward, cap), ENPU_PART(a->phase, cap)) < 0,
                 err, ENPU_ERR_NOMEM, "out of memory (replay buffer of %zu)", cap);
  return ENPU_OK;
}

/* Set every weight from w (connection order) and copy the target network. */
static int set_weights(replay_pelm *a, const double *w, enpu_err *err) {
  const unsigned n = fann_get_total_connections(a->net);
  struct fann_connection *c = enpu_calloc(n, sizeof *c);
  ENPU_RETURN_IF(!c, err, ENPU_ERR_NOMEM, "out of memory (weights)");
  fann_get_connection_array(a->net, c);
  for (unsigned i = 0; i < n; i++) c[i].weight = (fann_type)w[i];
  fann_set_weight_array(a->net, c, n);
  free(c);
  if (a->target) fann_destroy(a->target);
  a->target = fann_copy(a->net);
  ENPU_RETURN_IF(!a->target, err, ENPU_ERR_NOMEM, "out of memory (target network)");
  return ENPU_OK;
}

/* Uniform in ±1/sqrt(fan-in) of the receiving neuron (LeCun), from the agent's generator. */
static int init_weights(replay_pelm *a, enpu_err *err) {
  const unsigned n = fann_get_total_connections(a->net), neurons = fann_get_total_neurons(a->net);
  struct fann_connection *c = enpu_calloc(n, sizeof *c);
  unsigned *fan_in = enpu_calloc(neurons + 1, sizeof *fan_in);
  double *w = enpu_calloc(n, sizeof *w);
  int rc = c && fan_in && w ? ENPU_OK : enpu_errorf(err, ENPU_ERR_NOMEM, "out of memory (weights)");
  if (rc == ENPU_OK) {
    fann_get_connection_array(a->net, c);
    for (unsigned i = 0; i < n; i++) fan_in[c[i].to_neuron]++;
    for (unsigned i = 0; i < n; i++) w[i] = (2 * uniform01(&a->rng) - 1) / sqrt((double)fan_in[c[i].to_neuron]);
    rc = set_weights(a, w, err);
  }
  free(c), free(fan_in), free(w);
  return rc;
}

int replay_pelm_create(const replay_pelm_params *p, const replay_setup *setup, replay_pelm **out, enpu_err *err) {
  *out = NULL;
  ENPU_FORWARD(check_params(p, err));
  replay_pelm *a = enpu_calloc(1, sizeof *a);
  ENPU_RETURN_IF(!a, err, ENPU_ERR_NOMEM, "out of memory (PELM agent)");
  a->p = *p;
  a->rng = p->seed;
  int rc = branches(a, setup, err);
  if (rc == ENPU_OK) rc = make_net(a, err);
  if (rc == ENPU_OK) rc = init_weights(a, err);
  if (rc != ENPU_OK) {
    replay_pelm_free(a);
    return rc;
  }
  *out = a;
  return ENPU_OK;
}

/* ---- acting and learning ----------------------------------------------------------- */

static void to_input(const double obs[REPLAY_PELM_NOBS], fann_type in[REPLAY_PELM_NOBS]) {
  for (int i = 0; i < REPLAY_PELM_NOBS; i++) in[i] = (fann_type)obs[i];
}

static int argmax(const fann_type *q, int n) {
  int best = 0;
  for (int i = 1; i < n; i++)
    if (q[i] > q[best]) best = i;
  return best;
}

void replay_pelm_greedy(replay_pelm *a, const double obs[REPLAY_PELM_NOBS], int action[REPLAY_PELM_NBRANCH]) {
  fann_type in[REPLAY_PELM_NOBS];
  to_input(obs, in);
  const fann_type *q = fann_run(a->net, in);
  for (int b = 0; b < REPLAY_PELM_NBRANCH; b++) action[b] = argmax(q + a->offset[b], a->size[b]);
}

void replay_pelm_act(replay_pelm *a, const double obs[REPLAY_PELM_NOBS], bool explore, double t_ns,
                     int action[REPLAY_PELM_NBRANCH]) {
  replay_pelm_greedy(a, obs, action);
  if (!explore) return;
  const replay_pelm_params *p = &a->p;
  const double f = p->epsilon_decay_s > 0 ? fmin(1, t_ns * 1e-9 / p->epsilon_decay_s) : 1;
  const double eps = p->epsilon_start + f * (p->epsilon_end - p->epsilon_start);
  for (int b = 0; b < REPLAY_PELM_NBRANCH; b++)
    if (uniform01(&a->rng) < eps) action[b] = (int)(next_u64(&a->rng) % (uint64_t)a->size[b]);
}

void replay_pelm_remember(replay_pelm *a, const double *obs, const int *action, double reward, const double *next,
                          int phase) {
  const int i = a->head;
  to_input(obs, a->obs[i]);
  to_input(next, a->next[i]);
  memcpy(a->act[i], action, sizeof a->act[i]);
  a->reward[i] = reward;
  a->phase[i] = (unsigned char)phase;
  a->head = (a->head + 1) % a->p.replay_capacity;
  if (a->filled < a->p.replay_capacity) a->filled++;
}

int replay_pelm_train(replay_pelm *a, enpu_err *err) {
  if (a->filled < a->p.batch) return ENPU_OK;
  fann_type desired[MAX_OUT], target_max[REPLAY_PELM_NBRANCH];
  for (int k = 0; k < a->p.batch; k++) {
    const int i = (int)(next_u64(&a->rng) % (uint64_t)a->filled);
    const fann_type *qn = fann_run(a->target, a->next[i]);
    for (int b = 0; b < REPLAY_PELM_NBRANCH; b++)
      target_max[b] = qn[a->offset[b] + argmax(qn + a->offset[b], a->size[b])];
    memcpy(desired, fann_run(a->net, a->obs[i]), (size_t)a->nout * sizeof *desired);
    const int branches_used = a->phase[i] == CONFIG_PREFILL ? 1 : REPLAY_PELM_NBRANCH;
    for (int b = 0; b < branches_used; b++) {
      fann_type *q = &desired[a->offset[b] + a->act[i][b]];
      const double y = a->reward[i] + a->p.gamma * target_max[b];
      *q += (fann_type)fmax(-1, fmin(1, y - *q));
    }
    fann_train(a->net, a->obs[i], desired);
  }
  ENPU_RETURN_IF(fann_get_errno((struct fann_error *)a->net) != FANN_E_NO_ERROR, err, ENPU_ERR_INTERNAL,
                 "FANN training failed: %s", fann_get_errstr((struct fann_error *)a->net));
  if (++a->updates % (uint64_t)a->p.target_every == 0) {
    fann_destroy(a->target);
    a->target = fann_copy(a->net);
    ENPU_RETURN_IF(!a->target, err, ENPU_ERR_NOMEM, "out of memory (target network)");
  }
  return ENPU_OK;
}

int replay_pelm_branch_size(const replay_pelm *a, int branch) { return a->size[branch]; }
int replay_pelm_exit_of(const replay_pelm *a, int index) { return a->exits[index]; }
int replay_pelm_verify_of(const replay_pelm *a, int index) { return a->verifies[index]; }
int replay_pelm_draft_of(const replay_pelm *a, int index) { return draft_choices[index]; }
double replay_pelm_qoe_weight(const replay_pelm *a) { return a->p.qoe_weight; }
int replay_pelm_train_every(const replay_pelm *a) { return a->p.train_every; }
uint64_t replay_pelm_updates(const replay_pelm *a) { return a->updates; }

void replay_pelm_weights(const replay_pelm *a, double *w, size_t cap, size_t *n) {
  const unsigned total = fann_get_total_connections(a->net);
  *n = total;
  struct fann_connection *c = enpu_calloc(total, sizeof *c);
  if (!c) {
    *n = 0;
    return;
  }
  fann_get_connection_array(a->net, c);
  for (size_t i = 0; i < total && i < cap; i++) w[i] = c[i].weight;
  free(c);
}

/* ---- saving and loading (schemas/pelm-net.schema.json) --------------------------------- */

#define NET_FORMAT "enpu-pelm-net"
#define NET_VERSION 1

static json_t *ints_json(const int *v, int n) {
  json_t *a = json_array();
  for (int i = 0; a && i < n; i++) json_array_append_new(a, json_integer(v[i]));
  return a;
}

static json_t *params_json(const replay_pelm_params *p) {
  return json_pack("{s:I, s:f, s:f, s:f, s:f, s:f, s:f, s:i, s:i, s:i, s:i, s:b}", "seed", (json_int_t)p->seed,
                   "qoe_weight", p->qoe_weight, "gamma", p->gamma, "learning_rate", p->learning_rate,
                   "epsilon_start", p->epsilon_start, "epsilon_end", p->epsilon_end, "epsilon_decay_s",
                   p->epsilon_decay_s, "replay_capacity", p->replay_capacity, "batch", p->batch, "train_every",
                   p->train_every, "target_every", p->target_every, "lossless", p->lossless);
}

int replay_pelm_save(const replay_pelm *a, const char *path, enpu_err *err) {
  size_t n = 0;
  replay_pelm_weights(a, NULL, 0, &n);
  double *w = enpu_calloc(n ? n : 1, sizeof *w);
  ENPU_RETURN_IF(!w, err, ENPU_ERR_NOMEM, "out of memory (weights)");
  replay_pelm_weights(a, w, n, &n);
  json_t *weights = json_array();
  for (size_t i = 0; weights && i < n; i++) json_array_append_new(weights, json_real(w[i]));
  free(w);
  const int layers[4] = {REPLAY_PELM_NOBS, HIDDEN, HIDDEN, a->nout};
  json_t *doc = json_pack("{s:s, s:i, s:o, s:{s:i, s:o, s:o, s:o}, s:o, s:I, s:o}", "format", NET_FORMAT, "version",
                          NET_VERSION, "layers", ints_json(layers, 4), "branches", "states", a->size[0],
                          "exit_layers", ints_json(a->exits, a->size[1]), "verify_layers",
                          ints_json(a->verifies, a->size[2]), "draft_tokens", ints_json(draft_choices, NDRAFT),
                          "params", params_json(&a->p), "updates", (json_int_t)a->updates, "weights", weights);
  ENPU_RETURN_IF(!doc, err, ENPU_ERR_NOMEM, "out of memory (network document)");
  const int rc = json_dump_file(doc, path, JSON_INDENT(1) | JSON_REAL_PRECISION(17));
  json_decref(doc);
  ENPU_RETURN_IF(rc != 0, err, ENPU_ERR_IO, "cannot write %s", path);
  return ENPU_OK;
}

/* An integer array at `key` equal to want[0..n). */
static int same_ints(const json_t *v, const int *want, int n) {
  if (!json_is_array(v) || json_array_size(v) != (size_t)n) return 0;
  for (int i = 0; i < n; i++)
    if (!json_is_integer(json_array_get(v, (size_t)i)) ||
        json_integer_value(json_array_get(v, (size_t)i)) != want[i])
      return 0;
  return 1;
}

static int load_params(const json_t *o, const char *path, replay_pelm_params *p, enpu_err *err) {
  static const char *const keys[] = {"seed",          "qoe_weight",  "gamma",           "learning_rate",
                                     "epsilon_start", "epsilon_end", "epsilon_decay_s", "replay_capacity",
                                     "batch",         "train_every", "target_every"};
  ENPU_RETURN_IF(!json_is_object(o) || json_object_size(o) != sizeof keys / sizeof keys[0] + 1 ||
                     !json_is_boolean(json_object_get(o, "lossless")),
                 err, ENPU_ERR_FORMAT,
                 "%s: $.params: expected an object with exactly the keys seed, qoe_weight, gamma, learning_rate, "
                 "epsilon_start, epsilon_end, epsilon_decay_s, replay_capacity, batch, train_every, target_every "
                 "and lossless (a boolean)",
                 path);
  double v[sizeof keys / sizeof keys[0]];
  for (size_t i = 0; i < sizeof keys / sizeof keys[0]; i++) {
    const json_t *x = json_object_get(o, keys[i]);
    ENPU_RETURN_IF(!json_is_number(x) || (i == 0 && !json_is_integer(x)), err, ENPU_ERR_FORMAT,
                   "%s: $.params.%s: expected a number%s", path, keys[i], i == 0 ? " (an integer)" : "");
    v[i] = json_number_value(x);
  }
  *p = (replay_pelm_params){(uint64_t)json_integer_value(json_object_get(o, "seed")),
                            v[1],
                            v[2],
                            v[3],
                            v[4],
                            v[5],
                            v[6],
                            (int)v[7],
                            (int)v[8],
                            (int)v[9],
                            (int)v[10],
                            json_is_true(json_object_get(o, "lossless"))};
  enpu_err why = {0};
  ENPU_RETURN_IF(check_params(p, &why) != ENPU_OK, err, ENPU_ERR_FORMAT, "%s: $.params: %s", path, why.msg);
  return ENPU_OK;
}

/* The document's branches against the agent's (from the set-up). */
static int check_branches(const replay_pelm *a, const json_t *doc, const char *path, enpu_err *err) {
  const json_t *b = json_object_get(doc, "branches");
  const int layers[4] = {REPLAY_PELM_NOBS, HIDDEN, HIDDEN, a->nout};
  ENPU_RETURN_IF(!same_ints(json_object_get(doc, "layers"), layers, 4), err, ENPU_ERR_INVALID,
                 "%s: $.layers: expected [%d, %d, %d, %d] for this chip and model", path, layers[0], layers[1],
                 layers[2], layers[3]);
  ENPU_RETURN_IF(!json_is_object(b) || json_integer_value(json_object_get(b, "states")) != a->size[0] ||
                     !same_ints(json_object_get(b, "exit_layers"), a->exits, a->size[1]) ||
                     !same_ints(json_object_get(b, "verify_layers"), a->verifies, a->size[2]) ||
                     !same_ints(json_object_get(b, "draft_tokens"), draft_choices, NDRAFT),
                 err, ENPU_ERR_INVALID,
                 "%s: $.branches: the network was trained for other actions (%d states, exits and verification "
                 "depths of another model?)",
                 path, a->size[0]);
  return ENPU_OK;
}

static int load_doc(replay_pelm *a, const json_t *doc, const char *path, const replay_setup *setup, enpu_err *err) {
  ENPU_RETURN_IF(!json_is_object(doc) || !json_is_string(json_object_get(doc, "format")) ||
                     strcmp(json_string_value(json_object_get(doc, "format")), NET_FORMAT) ||
                     json_integer_value(json_object_get(doc, "version")) != NET_VERSION,
                 err, ENPU_ERR_FORMAT, "%s: $.format: expected \"%s\" version %d", path, NET_FORMAT, NET_VERSION);
  ENPU_FORWARD(load_params(json_object_get(doc, "params"), path, &a->p, err));
  a->rng = a->p.seed;
  ENPU_FORWARD(branches(a, setup, err));
  ENPU_FORWARD(check_branches(a, doc, path, err));
  const json_t *upd = json_object_get(doc, "updates");
  ENPU_RETURN_IF(!json_is_integer(upd) || json_integer_value(upd) < 0, err, ENPU_ERR_FORMAT,
                 "%s: $.updates: expected an integer >= 0", path);
  a->updates = (uint64_t)json_integer_value(upd);
  ENPU_FORWARD(make_net(a, err));
  const json_t *wj = json_object_get(doc, "weights");
  const size_t n = fann_get_total_connections(a->net);
  ENPU_RETURN_IF(!json_is_array(wj) || json_array_size(wj) != n, err, ENPU_ERR_FORMAT,
                 "%s: $.weights: expected an array of %zu numbers", path, n);
  double *w = enpu_calloc(n, sizeof *w);
  ENPU_RETURN_IF(!w, err, ENPU_ERR_NOMEM, "out of memory (weights)");
  for (size_t i = 0; i < n; i++) {
    const json_t *x = json_array_get(wj, i);
    w[i] = json_number_value(x);
    if (!json_is_number(x) || !isfinite(w[i])) {
      free(w);
      return enpu_errorf(err, ENPU_ERR_FORMAT, "%s: $.weights[%zu]: expected a finite number", path, i);
    }
  }
  const int rc = set_weights(a, w, err);
  free(w);
  return rc;
}

int replay_pelm_load(const char *path, const replay_setup *setup, replay_pelm **out, enpu_err *err) {
  *out = NULL;
  json_error_t je;
  char *text = NULL;
  size_t len = 0;
  ENPU_FORWARD(enpu_read_file(path, &text, &len, err));
  json_t *doc = json_loadb(text, len, JSON_REJECT_DUPLICATES, &je);
  free(text);
  ENPU_RETURN_IF(!doc, err, ENPU_ERR_PARSE, "%s:%d:%d: %s", path, je.line, je.column, je.text);
  replay_pelm *a = enpu_calloc(1, sizeof *a);
  int rc = a ? load_doc(a, doc, path, setup, err) : enpu_errorf(err, ENPU_ERR_NOMEM, "out of memory (PELM agent)");
  json_decref(doc);
  if (rc != ENPU_OK) {
    replay_pelm_free(a);
    return rc;
  }
  *out = a;
  return ENPU_OK;
}
