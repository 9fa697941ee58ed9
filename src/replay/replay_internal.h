/* replay_internal.h — the state of one run, shared by the simulation files
 * (replay_sim.c: events, admission, prefill; replay_decode.c: KV transfer and decode;
 * replay_account.c: windows, energy, safeguard 2, the summary) and the result the
 * output code reads. Private to src/replay.
 *
 * Node numbering: prefill nodes 0..P-1, decode nodes P..P+D-1 in every per-node array
 * of the result (idle_since_ns). */
#ifndef ENPU_REPLAY_INTERNAL_H
#define ENPU_REPLAY_INTERNAL_H

#include "replay.h"

struct replay_result {
  replay_summary summary;
  replay_request_result *requests; /* summary.requests entries, trace order; one block
                                      with idle_since_ns */
  replay_window *windows;
  size_t nwindows, windows_cap;
  const config_cluster *cluster;        /* class names, nodes, idle (owned by the caller) */
  double *idle_since_ns;                /* per node: idle from then to the horizon */
  const replay_request *trace_requests; /* identity of the trace (alignment check) */
  /* Governor runs: per node the idle power of its state and the end of the idle time
   * charged so far (a state change charges the idle time before it); NULL otherwise.
   * One block, owned by idle_w_node. */
  double *idle_w_node, *idle_mark_ns;
  replay_gov_window *gov_windows; /* nwindows entries when governed or speculative */
  size_t gov_windows_cap;
  double *gov_time_ns; /* per window: [phase] node time, then decode spec time */
  replay_gov_summary gov;
  /* The run's idle: awake idle power (summary.idle_w_per_chip), the mode, the power of a
   * sleeping chip, and under autoscaling per node when it fell asleep (INFINITY: awake;
   * owned by the result, read up to the common horizon). */
  double sleep_w;
  double *fleet_asleep_ns;
};

enum { EV_PREFILL_DONE = 0, EV_KV_DONE = 1, EV_DECODE_DONE = 2 };

typedef struct {
  double time_ns;
  uint64_t seq;
  uint64_t batch; /* done events: the batch (node_batch.id) they end */
  int kind;
  int32_t id; /* node (done events) or request (KV done) */
} sim_event;

typedef struct {
  sim_event *v;
  size_t n, cap;
  uint64_t next_seq;
} event_heap;

/* Outcomes in time order: the safeguard 2 window. Each request adds at most one
 * outcome to a window, so the arrays hold nreq entries. */
typedef struct {
  double *time_ns;
  uint8_t *missed;
  size_t head, n, missed_in_window;
  bool locked;             /* the decision, valid until ... */
  double decided_until_ns; /* ... the oldest outcome leaves the window (or a new one comes) */
} sg2_window;

/* The plan a batch runs and why (replay_choose_plan). */
typedef struct {
  planstore_plan pl;
  bool locked;          /* safeguard 2 held the chips at peak */
  bool safeguard1;      /* safeguard 1 gave it a less aggressive plan */
  bool composed_slowed; /* a chunked prefill (pl composed, walk_prefix 0) whose chunks run slowed */
} plan_choice;

/* What a batch of a governor node (or a speculative round) runs, so that its time and
 * energy can be priced at any V/f state (replay_uniform.c). */
typedef struct {
  int phase;
  planstore_plan base;   /* fastest plan of the batch's bucket (draft bucket of a round) */
  planstore_plan verify; /* a round's verification bucket */
  replay_spec spec;      /* exit_layers 0: no draft; verify_layers 0: full depth */
  double tokens;         /* expected tokens per member per round (1 without a draft) */
  /* A chunked prefill or a fallback decode iteration, priced as `base` scaled: its time
   * and energy over base's at NoDVFS (replay_chunk.c). 0: unscaled. */
  double scale_t, scale_e;
} gov_work;

/* The batch a node runs; committed to the accounts when it ends, since a governor's
 * state change mid-batch changes its end and energy. */
typedef struct {
  uint64_t id; /* its done event's: a new one at every start and re-timing */
  plan_choice c;
  double start_ns, end_ns, energy_nj; /* energy of the whole node */
  double target_ns;                   /* governor runs: its SLO target (QoE signal) */
  size_t members;
  /* governor runs: state since mark_ns, work fraction and node energy done by then, and
   * the whole batch's time and node energy at that state; store-plan prefill batches the
   * same for their current plan (a mid-batch switch moves the mark, replay_switch.c) */
  gov_work work;
  int state;
  double mark_ns, done_frac, done_nj, unit_ns, unit_nj;
  uint64_t instances; /* op instances of a pass (switching runs; 0 when unknown) */
  bool switched;      /* switched mid-way at least once */
} node_batch;

typedef struct {
  bool busy;
  size_t first, count; /* the batch: prefill queue entries [first, first+count) */
  double dcn_free_ns;  /* egress link */
  node_batch batch;
} prefill_node;

/* The plan of a bucket for every target in [lo_ns, hi_ns]: the walk prefix of the
 * longest plan within a target is the same for all of them (its time is lo_ns, and hi_ns
 * was asked), so a decode node whose target stays put needs no new lookup. */
typedef struct {
  planstore_plan pl;
  double lo_ns, hi_ns;
  bool valid;
} plan_memo;

typedef struct {
  int32_t *members;
  size_t n, cap;
  int32_t *waiting; /* FIFO [whead, wn): KV arrived, not admitted yet */
  size_t whead, wn, wcap;
  int32_t *extra; /* members with extrapolated SLOs (not in the class aggregates) */
  size_t nextra, extra_cap;
  size_t inbound;                       /* KV transfers on their way here */
  bool busy;                            /* an iteration is running */
  double dcn_free_ns;                   /* ingress link */
  uint64_t iter;                        /* iterations completed */
  double share_nj;                      /* energy of one member, summed over the iterations so far */
  int64_t max_offset;                   /* max over members of context + 1 − iter at join */
  int64_t max_final;                    /* max over members of the longest total length it reaches */
  uint64_t next_finish;                 /* smallest iteration count at which a member is done */
  double min_k[CONFIG_MAX_SLO_CLASSES]; /* deadline of the next token = k + SLO × iter */
  size_t class_n[CONFIG_MAX_SLO_CLASSES];
  planstore_plan bucket; /* fastest plan of the bucket of (n, seq) while valid */
  bool bucket_valid;
  bool bucket_fallback;       /* bucket is the fallback beyond the grid (replay_cover_decode) */
  planstore_plan bucket_base; /* then: the compiled plan it extrapolates from */
  plan_memo memo;             /* the last plan of that bucket (reset with it) */
  node_batch batch;
} decode_node;

/* A node under a governor: its action and what it saw since the last decision. */
typedef struct {
  int state;        /* V/f state of its batches from now on */
  replay_spec spec; /* decode nodes */
  int action[REPLAY_PELM_NBRANCH];
  double obs[REPLAY_PELM_NOBS];
  bool has_obs;              /* obs/action: the PELM decision the next reward answers */
  double acc_ns;             /* period accrued up to */
  double busy_ns, energy_nj; /* busy node time and node energy of the period */
  uint64_t batches, late;    /* batches started, and those slower than their target */
  double margin;             /* min over them of 1 − time / target (1 without batches) */
  double pid_u, pid_prev;    /* pid: control 0..1 (state fraction), previous error */
} gov_node;

typedef struct {
  bool valid;
  double fixed_t, fixed_e;       /* embedding and head, per chip */
  double layer_t[2], layer_e[2]; /* one dense / one MoE layer */
} uniform_pass;

typedef struct {
  double t_first_ns; /* first token (end of prefill) */
  double k_ns;       /* decode deadline offset, see decode_node.min_k */
  double share_at_join_nj;
  double fast_prefill_ns; /* its fastest prefill alone (safeguard 1's estimate) */
  int64_t offset;         /* KV length at an iteration = offset + node iter */
  bool chunked;           /* its prefill runs in chunks (replay_chunk.c) */
  uint64_t finish_iter;
  int32_t node; /* decode node */
} req_state;

/* The store's grid edges a run serves beyond (replay_chunk.c), from the policy's buckets. */
typedef struct {
  int32_t pre_batch;        /* the smallest prefill batch bucket: a chunk's */
  int32_t pre_seq[3];       /* its largest compiled seq buckets, largest first (0: none) */
  double pre_quad_t_ns;     /* the prefill's quadratic term (ns per token²) from them, >= 0 */
  double pre_quad_e_nj;     /* ... and its energy's (nJ per token² per chip) */
  int32_t dec_seq_max;      /* the largest compiled decode seq bucket: the grid's edge */
  int32_t *dec_batch;       /* decode batch buckets, ascending, with their two largest */
  int32_t *dec_hi, *dec_lo; /* compiled seqs (dec_lo 0: only one) */
  size_t ndec;
  double kv_max_tokens; /* the most KV tokens (batch × seq) of a compiled bucket */
} replay_cover;

typedef struct {
  const planstore *ps;
  const char *policy;
  replay_cover cover;
  const replay_setup *setup;
  const config_cluster *cl;
  const replay_request *rq;
  size_t nreq, arrived;
  int32_t *pq; /* prefill queue [pq_head, pq_tail) of admitted requests */
  size_t pq_head, pq_tail;
  double now_ns;
  event_heap heap;
  uint64_t batch_ids;   /* node_batch.id of the last done event pushed */
  prefill_node *pnodes; /* one block with pq, assigned, dnodes, st, sg2 and scratch_* */
  int *assigned;        /* dispatch scratch: nodes given a batch */
  decode_node *dnodes;
  req_state *st;
  sg2_window sg2[CONFIG_NPHASE]; /* paper mode: [0] only */
  int max_decode;
  double wake_ns, sleep_after_ns;
  replay_result *res;
  double *scratch_a, *scratch_b; /* percentile scratch, nreq each */
  size_t *scratch_idx;
  /* Governor and speculative runs. */
  const replay_job *job;
  const char *uniform; /* "uniform" when the run needs the table, else NULL */
  gov_node *gov;       /* per node (prefill, then decode) for governor runs */
  double period_ns, next_tick_ns;
  uint64_t ticks;
  uniform_pass **ucache; /* per uniform bucket row: peak_state + 1 passes */
  size_t ucache_n;
  int dense_layers, moe_layers; /* of the model (partial-depth passes) */
  double reward_sum[2];         /* PELM: rewards of the first 10 % of the trace's span / the rest */
  uint64_t reward_n[2];
  double span_ns; /* last arrival (where 10 % of the run ends) */
  /* Switching and predictive safeguards (replay_switch.c). */
  config_safeguards safeguards; /* PAPER for governor runs */
  double queued_fast_ns;        /* Σ fastest single-request prefill of the queue */
  double recent_fast_ns;        /* the same over arrivals [rate_head, arrived) */
  size_t rate_head;             /* first arrival inside the predictive window */
  double hold_fast_ns;          /* ... and over [hold_head, arrived) */
  size_t hold_head;             /* first arrival inside the hold window */
  double *drain_free_ns;        /* per prefill node: replay_switch_prefill's scratch */
  double *drain_bound_ns, *drain_ahead_ns;
  /* Autoscaling (replay_fleet.c); NULL without. */
  struct replay_fleet_state *fleet;
  double fleet_next_ns;   /* the next control decision */
  double *fleet_ready_ns; /* per node: when a woken node takes work (owned by fleet) */
  uint8_t *fleet_state;   /* per node: REPLAY_FLEET_* (owned by fleet) */
} sim;

/* ---- replay_output.c ----------------------------------------------------------- */
json_t *replay_json_number(double x);               /* null when not finite */
double replay_ratio(uint64_t part, uint64_t whole); /* NaN when whole is 0 */

/* ---- replay_account.c ---------------------------------------------------------- */
int replay_account_window(replay_result *r, double t_ns, replay_window **w, enpu_err *err);
/* The batch that ended on one node: [start, end) of its node energy; `members` fill its
 * slots. */
int replay_account_batch(sim *s, int phase, const node_batch *b, enpu_err *err);
/* Where the node's uncharged idle time starts: its idle_since, or later when a governor
 * charged part of it at another state. */
double replay_idle_from(const replay_result *r, size_t node);
/* Idle energy of node `node` over [from, to): awake, or asleep past its sleep time. */
int replay_account_idle(replay_result *r, int phase, size_t node, double from_ns, double to_ns, enpu_err *err);
/* Node `node` (idle) takes work at s->now_ns: its idle time is charged and *start_ns
 * receives when the work can start (after a wake-up when it slept). */
int replay_account_wake(sim *s, int phase, size_t node, double *start_ns, enpu_err *err);
int replay_account_kv(sim *s, double start_ns, double bytes, enpu_err *err);
/* A wake-up of node energy nj over [from, from + dur): idle energy, of it transition
 * energy, and waking node time. */
int replay_account_transition(replay_result *r, int phase, double from_ns, double dur_ns, double nj, enpu_err *err);
bool replay_node_asleep(const sim *s, size_t node);
void replay_sg2_push(sim *s, int window, bool missed);
bool replay_sg2_locked(sim *s, int phase);
int replay_finish_request(sim *s, int32_t i, enpu_err *err);
int replay_finish_run(sim *s, enpu_err *err);

/* ---- replay_batch.c ------------------------------------------------------------ */
int replay_heap_push(event_heap *h, double time_ns, int kind, int32_t id, uint64_t batch, enpu_err *err);
sim_event replay_heap_pop(event_heap *h); /* the earliest event; h not empty */
/* Push the done event of node `node`'s batch b at b->end_ns, under a new b->id. */
int replay_batch_push_done(sim *s, int phase, int node, node_batch *b, enpu_err *err);
/* The fastest plan of the bucket covering (n, seq): 1 covered, 0 not (`why`, may be
 * NULL, gets the store's message), < 0 error. */
int replay_fastest_plan(const sim *s, int phase, int n, int seq, planstore_plan *pl, enpu_err *why, enpu_err *err);
/* Pick and count the plan of a batch whose fastest plan is `fast`, for its own target
 * and safeguard 1's cap (INFINITY: none), safeguard 2 consulted. */
int replay_choose_plan(sim *s, int phase, const planstore_plan *fast, double target_ns, double cap_ns,
                       plan_memo *memo, plan_choice *c, enpu_err *err);

/* Start node `node`'s batch b (its c, start, energy, members set; end from c.pl.time_ns
 * or, under a governor, from its work at the node's state) and push its done event. */
int replay_batch_start(sim *s, int phase, int node, node_batch *b, enpu_err *err);

/* ---- replay_switch.c ------------------------------------------------------------- */
/* Request i was admitted (queued) at s->now_ns: the predictive window and the queue's work. */
void replay_predict_admitted(sim *s, int32_t i);
/* The prefill load predicted from recent arrivals and the queued work, in busy nodes
 * (each request at its fastest single-request prefill; the busier of the predictive
 * window and the hold window): what the predictive T_target cap and the predictive
 * autoscaler read. */
double replay_predict_load(sim *s);
/* The queue's requests [first, first + count) left for a node. */
void replay_predict_dispatched(sim *s, size_t first, size_t count);
/* The predictive cap on a prefill batch's time whose fastest plan takes fast_ns (INFINITY
 * unless the run is predictive). */
double replay_predictive_cap_ns(sim *s, double fast_ns);
/* A store-plan prefill batch starts: the marks a later switch needs. */
int replay_switch_batch_init(sim *s, node_batch *b, enpu_err *err);
/* The queue drained at its fastest plans onto the prefill nodes as they free: the latest
 * end each node's running batch may have (drain_bound_ns; INFINITY when none binds). */
void replay_drain_bounds(sim *s);
/* Safeguard 1's test at an arrival: running prefill batches that would keep the queue
 * from its deadlines switch to the suffix of a faster plan (switching runs). */
int replay_switch_prefill(sim *s, enpu_err *err);

/* ---- replay_decode.c ----------------------------------------------------------- */
/* Route request i (prefilled on prefill node `pnode`) to a decode node and start its
 * KV transfer. */
int replay_decode_route(sim *s, size_t pnode, int32_t i, enpu_err *err);
int replay_decode_kv_done(sim *s, int32_t i, enpu_err *err);
/* The done event of batch `batch` of decode node `node` (ignored when a re-timing made
 * it stale). */
int replay_decode_done(sim *s, int node, uint64_t batch, enpu_err *err);

/* ---- replay_uniform.c ---------------------------------------------------------- */
/* The fastest plan of the bucket covering (n, seq) in `policy`: as replay_fastest_plan. */
int replay_fastest_plan_of(const sim *s, const char *policy, int phase, int n, int seq, planstore_plan *pl,
                           enpu_err *err);
/* The uniform plan of `bucket`'s bucket at chip-wide `state`. */
int replay_uniform_plan(sim *s, const planstore_plan *bucket, int state, planstore_plan *pl, enpu_err *err);
/* Time and energy per chip of one pass through `layers` layers (0: all) of the uniform
 * `bucket` at `state`. */
int replay_uniform_depth(sim *s, const planstore_plan *bucket, int state, int layers, double *time_ns,
                         double *energy_nj, enpu_err *err);
/* The work of a governor decode iteration of n members at KV length seq under `spec`
 * (base = fastest uniform plan of (n, seq)): a round when speculating and its buckets
 * exist, else plain decoding. */
int replay_gov_decode_work(sim *s, const planstore_plan *base, int n, int seq, const replay_spec *spec, gov_work *w,
                           enpu_err *err);
/* Time and node energy of the whole of `w` at `state` (one token per member). */
int replay_gov_work_cost(sim *s, const gov_work *w, int state, double *time_ns, double *node_nj, enpu_err *err);
/* A store policy's decode iteration with the run's fixed speculative configuration: the
 * plan the scheduler picked for the base bucket (c), turned into a token step. */
int replay_spec_store_step(sim *s, const planstore_plan *fast, const plan_choice *c, int n, int seq,
                           double *time_ns, double *energy_nj, gov_work *w, enpu_err *err);
/* The per-token fastest time of that step over the base bucket's fastest time (>= 0), so
 * the scheduler's per-token target becomes a target for the base plan. */
int replay_spec_store_ratio(sim *s, const planstore_plan *fast, int n, int seq, double *ratio, enpu_err *err);
void replay_uniform_cache_free(sim *s);

/* ---- replay_chunk.c -------------------------------------------------------------- */
/* The grid edges of s->policy into s->cover. */
int replay_cover_init(sim *s, enpu_err *err);
void replay_cover_free(sim *s);
/* A chunked prefill of `tokens` context tokens, each chunk at the plan of its bucket for
 * an equal share of target_ns (-INFINITY: the fastest). */
typedef struct {
  planstore_plan pl;   /* composed: time, energy, NoDVFS time and energy summed; batch and
                          seq the full chunk's bucket; walk_prefix 0 (no one walk) */
  planstore_plan base; /* the full chunk's compiled fastest plan (governors price it) */
  int chunks;
  uint64_t padded_tokens; /* Σ chunk buckets' batch × seq */
  bool slowed;            /* a chunk runs a walk prefix > 0 */
} replay_chunked;
/* @return 1 and *out, 0 when the store has no chunk bucket (why set), < 0 error. */
int replay_chunk_plan(const sim *s, int tokens, double target_ns, replay_chunked *out, enpu_err *why,
                      enpu_err *err);
/* A chunked prefill batch's plan for its target under the safeguards' cap (as
 * replay_choose_plan; counted the same way). */
int replay_chunk_choose(sim *s, int tokens, double target_ns, double cap_ns, plan_choice *c, enpu_err *err);
/* The decode plan of (n, seq): 1 the store's (pl = base), 2 the fallback (seq beyond the
 * largest decode seq bucket: pl at NoDVFS extrapolated from base, a compiled bucket of
 * batch >= n), 0 none (why set when not NULL), < 0 error. `admitted`: the batch is
 * running (its KV at its final length fits), so a length inside the grid whose padded
 * bucket does not fit the HBM takes the fallback too, rather than none. */
int replay_cover_decode(const sim *s, int n, int64_t seq, bool admitted, planstore_plan *pl, planstore_plan *base,
                        enpu_err *why, enpu_err *err);
/* NoDVFS time of one request alone at `tokens` beyond the grid (chunked prefill, fallback
 * decode); NaN when there is none. */
double replay_cover_nodvfs_ns(const sim *s, int phase, int64_t tokens);

/* ---- replay_gov.c ---------------------------------------------------------------- */
int replay_gov_init(sim *s, enpu_err *err);
void replay_gov_free(sim *s);
/* Every control period ending at or before t_ns. */
int replay_gov_ticks_until(sim *s, double t_ns, enpu_err *err);
/* A governor node's batch b (work set): its plan at the node's state (b->c, b->state),
 * and the period's counters against its target (QoE signal). */
int replay_gov_choose(sim *s, size_t node, double target_ns, node_batch *b, enpu_err *err);
/* A governor node's batch ended (batch_ends_now): its energy up to now into the period. */
void replay_gov_batch_ended(sim *s, size_t node, const node_batch *b);
/* Speculation totals and the actions per window, for a decode iteration of n members that
 * ended (governor and speculative runs). */
void replay_spec_count(sim *s, const node_batch *b, size_t n);
int replay_gov_finish(sim *s, enpu_err *err);

/* A node under autoscaling: taking work, draining (no new work, asleep once empty), asleep. */
enum { REPLAY_FLEET_ACTIVE = 0, REPLAY_FLEET_DRAINING = 1, REPLAY_FLEET_ASLEEP = 2 };

/* ---- replay_fleet.c --------------------------------------------------------------- */
/* The job with the fleet its policy's name carries (replay_job_parse; base holds the
 * policy), or a copy when the name carries none. */
int replay_job_resolve(const replay_job *in, replay_job *out, char *base, size_t cap, enpu_err *err);
/* Whether the set-up can run the job's fleet (idle mode, autoscaling): ENPU_ERR_INVALID
 * saying why not. */
int replay_fleet_check(const replay_job *job, const replay_setup *setup, config_policy pol, enpu_err *err);
/* The run's idle: its mode, awake idle power and sleep power, autoscaling or not. */
void replay_fleet_run_idle(replay_result *r, const replay_job *job, const replay_setup *setup, config_policy pol);
int replay_fleet_init(sim *s, enpu_err *err);
/* s->job->autoscale: the state, every node awake */
void replay_fleet_free(sim *s);
/* Every control decision at or before t_ns. */
int replay_fleet_ticks_until(sim *s, double t_ns, enpu_err *err);
/* Node (global numbering) takes new work: always without autoscaling; with it, unless it
 * drains or sleeps. */
bool replay_fleet_accepts(const sim *s, size_t node);
/* Work given to the node now would wait: it sleeps (idle mode sleep) or is waking up. */
bool replay_fleet_waits(const sim *s, size_t node);
/* When a waking node can start work (0 when it is not waking). */
double replay_fleet_ready_ns(const sim *s, size_t node);
/* The node has just become idle: a draining one with nothing left falls asleep. */
int replay_fleet_node_idle(sim *s, size_t node, enpu_err *err);

/* ---- replay_pelm.c --------------------------------------------------------------- */
/* The agent's action for obs (ε-greedy when learning, at trace time t_ns). */
void replay_pelm_act(replay_pelm *a, const double obs[REPLAY_PELM_NOBS], bool explore, double t_ns,
                     int action[REPLAY_PELM_NBRANCH]);
/* Remember a transition (prev obs and action, reward, obs after). */
void replay_pelm_remember(replay_pelm *a, const double *obs, const int *action, double reward, const double *next,
                          int phase);
/* One training update (when the buffer holds a batch). */
int replay_pelm_train(replay_pelm *a, enpu_err *err);
/* Branch sizes and the action an index means. */
int replay_pelm_branch_size(const replay_pelm *a, int branch);
int replay_pelm_exit_of(const replay_pelm *a, int index); /* 0 for "no draft" is ns = 0 */
int replay_pelm_verify_of(const replay_pelm *a, int index);
int replay_pelm_draft_of(const replay_pelm *a, int index);
double replay_pelm_qoe_weight(const replay_pelm *a);
int replay_pelm_train_every(const replay_pelm *a);

#endif /* ENPU_REPLAY_INTERNAL_H */
