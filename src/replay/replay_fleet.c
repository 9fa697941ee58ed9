/* replay_fleet.c — autoscaling of a run's prefill and decode pools (paper §4.8: "auto-
 * scaling to shrink the number of allocated NPU chips or putting idle chips into
 * sleep"), the reactive policy of replay_fleet_params (replay.h).
 *
 * Every node is awake at 0. A node the policy drains takes no new work (the prefill
 * dispatcher and the decode router skip it) and falls asleep when it is empty: a prefill
 * node when its batch ends, a decode node when its last member has left and no KV is on
 * its way (its KV is drained by decoding its requests out: nothing migrates, so nothing
 * crosses the DCN). A sleeping node draws the chip's deep sleep power; waking it costs
 * the chip's wake energy plus its awake idle power over the wake latency, both charged
 * as transition energy when the decision is made, and it takes work once awake.
 *
 * The demand signal is sampled at the control period, and its peak over the window is
 * kept per one-second bucket, so a decision costs O(nodes + queue), not O(window). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "replay_internal.h"

#define FLEET_BUCKET_NS 1e9

typedef struct {
  double *bucket_max;                    /* ring of the window's buckets: the peak demand sampled in each */
  size_t nbuckets, cur;                  /* cur: the bucket of cur_id */
  int64_t cur_id;                        /* floor(t / FLEET_BUCKET_NS) */
  double others_max;                     /* the peak of the ring's other buckets */
  double below_since_ns;                 /* the target has been below the awake count since (NAN: it is not) */
  size_t out_head, out_seen, out_missed; /* outcomes of the window in safeguard 2's arrays */
} fleet_pool;

struct replay_fleet_state {
  uint8_t *state;   /* per node (global numbering) */
  double *ready_ns; /* per node: when a woken node takes work (sim.fleet_ready_ns) */
  fleet_pool pool[CONFIG_NPHASE];
};

void replay_fleet_params_default(replay_fleet_params *p) {
  *p = (replay_fleet_params){.control_ms = 100,
                             .window_s = 60,
                             .hold_s = 120,
                             .headroom = 0.25,
                             .spare = 1,
                             .decode_fill = 0.5,
                             .attainment = 0.99,
                             .min_outcomes = 20};
}

static size_t nprefill(const sim *s) { return (size_t)s->cl->node[CONFIG_PREFILL].nodes; }
static int phase_of(const sim *s, size_t node) { return node < nprefill(s) ? CONFIG_PREFILL : CONFIG_DECODE; }
static size_t first_of(const sim *s, int phase) { return phase == CONFIG_PREFILL ? 0 : nprefill(s); }

static int check_params(const replay_fleet_params *p, enpu_err *err) {
  ENPU_RETURN_IF(!(p->control_ms > 0) || !(p->window_s > 0) || !(p->hold_s >= 0) || !(p->headroom >= 0) ||
                     p->spare < 0 || !(p->decode_fill > 0 && p->decode_fill <= 1) ||
                     !(p->attainment >= 0 && p->attainment <= 1) || p->min_outcomes < 1 ||
                     !isfinite(p->control_ms + p->window_s + p->hold_s + p->headroom),
                 err, ENPU_ERR_INVALID,
                 "autoscaling: control period, window > 0; hold, headroom, spare >= 0; decode fill in (0, 1]; "
                 "attainment in [0, 1]; at least one outcome");
  return ENPU_OK;
}

int replay_fleet_init(sim *s, enpu_err *err) {
  const replay_setup *su = s->setup;
  ENPU_RETURN_IF(!su->has_deep_sleep, err, ENPU_ERR_INVALID,
                 "autoscaling puts instances into the chip's deep sleep: the chip file needs \"power_states\"");
  ENPU_FORWARD(check_params(&su->fleet, err));
  const size_t n = nprefill(s) + (size_t)s->cl->node[CONFIG_DECODE].nodes;
  const size_t nb = (size_t)ceil(su->fleet.window_s * 1e9 / FLEET_BUCKET_NS);
  struct replay_fleet_state *f = calloc(1, sizeof *f);
  if (f) s->fleet = f;
  const int nomem = !f ||
                    ENPU_CALLOC_PARTS(ENPU_PART(f->state, n), ENPU_PART(f->ready_ns, n),
                                      ENPU_PART(f->pool[0].bucket_max, nb),
                                      ENPU_PART(f->pool[1].bucket_max, nb)) < 0 ||
                    !(s->res->fleet_asleep_ns = malloc(n * sizeof *s->res->fleet_asleep_ns));
  ENPU_RETURN_IF(nomem, err, ENPU_ERR_NOMEM, "out of memory (autoscaling of %zu nodes)", n);
  for (size_t k = 0; k < n; k++) s->res->fleet_asleep_ns[k] = INFINITY;
  s->fleet_ready_ns = f->ready_ns;
  s->fleet_state = f->state;
  for (int ph = 0; ph < CONFIG_NPHASE; ph++) {
    f->pool[ph].nbuckets = nb;
    f->pool[ph].below_since_ns = NAN;
  }
  s->fleet_next_ns = su->fleet.control_ms * 1e6;
  return ENPU_OK;
}

void replay_fleet_free(sim *s) {
  struct replay_fleet_state *f = s->fleet;
  if (!f) return;
  free(f->state); /* owns the other blocks */
  free(f);
  s->fleet = NULL;
  s->fleet_ready_ns = NULL;
  s->fleet_state = NULL;
}

bool replay_fleet_accepts(const sim *s, size_t node) {
  return !s->fleet || s->fleet->state[node] == REPLAY_FLEET_ACTIVE;
}

double replay_fleet_ready_ns(const sim *s, size_t node) { return s->fleet ? s->fleet->ready_ns[node] : 0; }

bool replay_fleet_waits(const sim *s, size_t node) {
  return replay_node_asleep(s, node) || replay_fleet_ready_ns(s, node) > s->now_ns;
}

/* ---- a node's moves ------------------------------------------------------------------ */

static bool node_empty(const sim *s, size_t node) {
  if (phase_of(s, node) == CONFIG_PREFILL) return !s->pnodes[node].busy;
  const decode_node *dn = &s->dnodes[node - nprefill(s)];
  return !dn->busy && dn->n == 0 && dn->wn == dn->whead && dn->inbound == 0;
}

static void fall_asleep(sim *s, size_t node) {
  s->fleet->state[node] = REPLAY_FLEET_ASLEEP;
  s->res->fleet_asleep_ns[node] = fmax(s->now_ns, s->res->idle_since_ns[node]);
  s->res->summary.phase[phase_of(s, node)].sleeps++;
}

int replay_fleet_node_idle(sim *s, size_t node, enpu_err *err) {
  (void)err;
  if (s->fleet && s->fleet->state[node] == REPLAY_FLEET_DRAINING && node_empty(s, node)) fall_asleep(s, node);
  return ENPU_OK;
}

/* Wake a sleeping node now: its idle time so far charged (awake, then asleep), then the
 * wake-up, and it is awake and idle from then on. */
static int wake(sim *s, size_t node, enpu_err *err) {
  replay_result *r = s->res;
  const int ph = phase_of(s, node);
  const double chips = s->cl->node[ph].chips, wake_ns = s->setup->wake_ns;
  ENPU_FORWARD(replay_account_idle(r, ph, node, replay_idle_from(r, node), s->now_ns, err));
  const double nj = chips * (s->setup->wake_nj_per_chip + r->summary.idle_w_per_chip * wake_ns);
  ENPU_FORWARD(replay_account_transition(r, ph, s->now_ns, wake_ns, nj, err));
  r->fleet_asleep_ns[node] = INFINITY;
  r->idle_since_ns[node] = s->now_ns + wake_ns;
  s->fleet->ready_ns[node] = s->now_ns + wake_ns;
  s->fleet->state[node] = REPLAY_FLEET_ACTIVE;
  r->summary.phase[ph].wakes++;
  return ENPU_OK;
}

/* A node's load, for picking which ones drain: prefill busy or not, decode its requests. */
static double node_load(const sim *s, size_t node) {
  if (phase_of(s, node) == CONFIG_PREFILL) return s->pnodes[node].busy;
  const decode_node *dn = &s->dnodes[node - nprefill(s)];
  return (double)(dn->n + dn->wn - dn->whead + dn->inbound);
}

/* Raise the pool's awake count by k: draining nodes kept first (free), then sleeping
 * ones woken (lowest index first). */
static int scale_up(sim *s, int ph, int k, enpu_err *err) {
  const size_t first = first_of(s, ph), last = first + (size_t)s->cl->node[ph].nodes;
  for (int want = REPLAY_FLEET_DRAINING; want <= REPLAY_FLEET_ASLEEP; want++)
    for (size_t n = first; n < last && k > 0; n++) {
      if (s->fleet->state[n] != want) continue;
      if (want == REPLAY_FLEET_DRAINING) s->fleet->state[n] = REPLAY_FLEET_ACTIVE;
      else ENPU_FORWARD(wake(s, n, err));
      k--;
    }
  return ENPU_OK;
}

/* Lower it by k: the least loaded awake nodes drain (highest index on ties, so routing,
 * which prefers low indices, keeps its nodes), never one still waking up; the empty
 * ones fall asleep at once. */
static int scale_down(sim *s, int ph, int k, enpu_err *err) {
  const size_t first = first_of(s, ph), last = first + (size_t)s->cl->node[ph].nodes;
  for (; k > 0; k--) {
    size_t pick = last;
    for (size_t n = last; n-- > first;) {
      if (s->fleet->state[n] != REPLAY_FLEET_ACTIVE || s->fleet->ready_ns[n] > s->now_ns) continue;
      if (pick == last || node_load(s, n) < node_load(s, pick)) pick = n;
    }
    if (pick == last) break;
    s->fleet->state[pick] = REPLAY_FLEET_DRAINING;
    ENPU_FORWARD(replay_fleet_node_idle(s, pick, err));
  }
  return ENPU_OK;
}

/* ---- the policy ---------------------------------------------------------------------- */

/* The pool's demand now, in instances (replay_fleet_params). */
static double demand(const sim *s, int ph) {
  if (ph == CONFIG_PREFILL) {
    double busy = 0, tokens = 0;
    for (size_t n = 0; n < nprefill(s); n++) busy += s->pnodes[n].busy;
    for (size_t k = s->pq_head; k < s->pq_tail; k++) tokens += s->rq[s->pq[k]].context_tokens;
    return busy + ceil(tokens / s->cl->max_batch_tokens);
  }
  double requests = 0;
  for (int n = 0; n < s->cl->node[CONFIG_DECODE].nodes; n++) requests += node_load(s, nprefill(s) + (size_t)n);
  return ceil(requests / (s->max_decode * s->setup->fleet.decode_fill));
}

/* Record the sample in the window's ring; the window's peak. */
static double window_peak(fleet_pool *p, double t_ns, double sample) {
  const int64_t id = (int64_t)floor(t_ns / FLEET_BUCKET_NS);
  if (id != p->cur_id) {
    const int64_t steps = id - p->cur_id;
    for (int64_t k = 0; k < steps && k < (int64_t)p->nbuckets; k++) {
      p->cur = (p->cur + 1) % p->nbuckets;
      p->bucket_max[p->cur] = 0;
    }
    p->cur_id = id;
    p->others_max = 0;
    for (size_t b = 0; b < p->nbuckets; b++)
      if (b != p->cur) p->others_max = fmax(p->others_max, p->bucket_max[b]);
  }
  p->bucket_max[p->cur] = fmax(p->bucket_max[p->cur], sample);
  return fmax(p->others_max, p->bucket_max[p->cur]);
}

/* Whether the window's outcomes (safeguard 2's, whole requests or this phase's) say the
 * SLO is being missed. */
static bool attainment_low(sim *s, int ph, fleet_pool *p) {
  const sg2_window *g = &s->sg2[s->cl->scheduler.safeguard2 == CONFIG_SG2_PAPER ? 0 : ph];
  const replay_fleet_params *fp = &s->setup->fleet;
  for (; p->out_seen < g->n; p->out_seen++) p->out_missed += g->missed[p->out_seen];
  const double from = s->now_ns - fp->window_s * 1e9;
  for (; p->out_head < p->out_seen && g->time_ns[p->out_head] <= from; p->out_head++)
    p->out_missed -= g->missed[p->out_head];
  const size_t n = p->out_seen - p->out_head;
  return n >= (size_t)fp->min_outcomes && (double)(n - p->out_missed) < fp->attainment * (double)n;
}

static int decide(sim *s, int ph, enpu_err *err) {
  const replay_fleet_params *fp = &s->setup->fleet;
  fleet_pool *p = &s->fleet->pool[ph];
  const int nodes = s->cl->node[ph].nodes;
  int awake = 0;
  for (size_t n = first_of(s, ph); n < first_of(s, ph) + (size_t)nodes; n++)
    awake += s->fleet->state[n] == REPLAY_FLEET_ACTIVE;
  const double now = demand(s, ph), peak = window_peak(p, s->now_ns, now);
  const bool low = attainment_low(s, ph, p);
  double want = peak * (1 + fp->headroom);
  if (s->job->predictive && ph == CONFIG_PREFILL) {
    const double load = replay_predict_load(s);
    want = fmax(now * (1 + fp->headroom), load + s->cl->scheduler.predictive_beta * sqrt(load));
  }
  int target = (int)ceil(want - 1e-9) + fp->spare * (low ? 2 : 1);
  target = target < 1 ? 1 : target > nodes ? nodes : target;
  if (target > awake) {
    p->below_since_ns = NAN;
    return scale_up(s, ph, target - awake, err);
  }
  if (target == awake || low) {
    p->below_since_ns = NAN;
    return ENPU_OK;
  }
  if (isnan(p->below_since_ns)) p->below_since_ns = s->now_ns;
  if (s->now_ns - p->below_since_ns < fp->hold_s * 1e9) return ENPU_OK;
  p->below_since_ns = NAN;
  return scale_down(s, ph, awake - target, err);
}

int replay_fleet_ticks_until(sim *s, double t_ns, enpu_err *err) {
  while (s->fleet_next_ns <= t_ns) {
    s->now_ns = s->fleet_next_ns;
    for (int ph = 0; ph < CONFIG_NPHASE; ph++) ENPU_FORWARD(decide(s, ph, err));
    s->fleet_next_ns += s->setup->fleet.control_ms * 1e6;
  }
  return ENPU_OK;
}

/* ---- run names --------------------------------------------------------------------- */

int replay_job_parse(const char *name, replay_job *job, char *base, size_t cap, enpu_err *err) {
  *job = (replay_job){0};
  const size_t len = strlen(name);
  const bool pas = len > 4 && !strcmp(name + len - 4, "+pas");
  const bool as = pas || (len > 3 && !strcmp(name + len - 3, "+as"));
  const size_t tail = pas ? 4 : as ? 3 : 0;
  /* The idle mode follows the last '@'; a policy's own variant "@shadow=N" has a '=',
   * and stays part of the policy's name (enpu-all@shadow=8@gated+as). */
  const char *at = strrchr(name, '@');
  if (at && memchr(at, '=', (size_t)(name + len - tail - at))) at = NULL;
  const size_t base_len = at ? (size_t)(at - name) : len - tail;
  ENPU_RETURN_IF(base_len == 0 || base_len >= cap, err, ENPU_ERR_INVALID,
                 "run name '%s': no policy before its fleet", name);
  memcpy(base, name, base_len);
  base[base_len] = '\0';
  job->policy = base;
  job->autoscale = as;
  job->predictive = pas;
  if (!at) return ENPU_OK;
  char mode[32];
  const size_t mlen = len - base_len - 1 - tail;
  ENPU_RETURN_IF(mlen >= sizeof mode, err, ENPU_ERR_INVALID, "run name '%s': unknown idle mode", name);
  memcpy(mode, at + 1, mlen);
  mode[mlen] = '\0';
  const int m = config_idle_mode_parse(mode);
  ENPU_RETURN_IF(m < 0, err, ENPU_ERR_INVALID,
                 "run name '%s': idle mode '%s' is not one of peak, lowest-state, gated, sleep", name, mode);
  ENPU_RETURN_IF(m == CONFIG_IDLE_SLEEP && as, err, ENPU_ERR_INVALID,
                 "run name '%s': autoscaling puts instances to sleep itself: compose it with peak, lowest-state "
                 "or gated",
                 name);
  job->idle_set = true;
  job->idle_mode = m;
  return ENPU_OK;
}

int replay_job_resolve(const replay_job *in, replay_job *out, char *base, size_t cap, enpu_err *err) {
  *out = *in;
  const char *name = in->policy;
  const size_t len = name ? strlen(name) : 0;
  if (!name || in->governor ||
      (!strchr(name, '@') && !(len > 3 && !strcmp(name + len - 3, "+as")) &&
       !(len > 4 && !strcmp(name + len - 4, "+pas"))))
    return ENPU_OK;
  replay_job parsed;
  ENPU_FORWARD(replay_job_parse(name, &parsed, base, cap, err));
  out->policy = parsed.policy;
  out->idle_set = parsed.idle_set;
  out->idle_mode = parsed.idle_mode;
  out->autoscale = parsed.autoscale;
  out->predictive = parsed.predictive;
  return ENPU_OK;
}

int replay_fleet_check(const replay_job *job, const replay_setup *setup, config_policy pol, enpu_err *err) {
  ENPU_RETURN_IF(job->autoscale && job->governor, err, ENPU_ERR_INVALID,
                 "autoscaling runs beside the store's policies, not under a governor");
  ENPU_RETURN_IF(job->idle_set && (job->idle_mode < 0 || job->idle_mode >= CONFIG_NIDLE_MODE), err,
                 ENPU_ERR_INVALID, "idle mode %d out of range", job->idle_mode);
  const int mode = job->idle_set ? job->idle_mode : (int)setup->cluster->idle.mode;
  ENPU_RETURN_IF(job->autoscale && mode == CONFIG_IDLE_SLEEP, err, ENPU_ERR_INVALID,
                 "autoscaling puts instances to sleep itself: compose it with idle mode peak, lowest-state or "
                 "gated, not the cluster's sleep");
  ENPU_RETURN_IF(job->idle_set && !(setup->idle_w_mode[mode][pol] >= 0), err, ENPU_ERR_INVALID,
                 "idle mode %s: the chip has no power for it (gated needs the chip's \"gating\")",
                 config_idle_mode_name((config_idle_mode)mode));
  ENPU_RETURN_IF(job->idle_set && mode == CONFIG_IDLE_SLEEP && setup->cluster->idle.mode != CONFIG_IDLE_SLEEP, err,
                 ENPU_ERR_INVALID, "idle mode sleep takes its power and wake-up from the cluster file's \"idle\"");
  ENPU_RETURN_IF(job->autoscale && !setup->has_deep_sleep, err, ENPU_ERR_INVALID,
                 "autoscaling puts instances into the chip's deep sleep: the chip file needs \"power_states\"");
  return ENPU_OK;
}

void replay_fleet_run_idle(replay_result *r, const replay_job *job, const replay_setup *setup, config_policy pol) {
  replay_summary *sm = &r->summary;
  sm->idle_mode = job->idle_set ? (config_idle_mode)job->idle_mode : setup->cluster->idle.mode;
  sm->idle_w_per_chip = job->idle_set ? setup->idle_w_mode[sm->idle_mode][pol] : setup->idle_w_per_chip[pol];
  sm->autoscale = job->autoscale;
  r->sleep_w = job->autoscale ? setup->sleep_w_per_chip : setup->cluster->idle.sleep_w;
}
