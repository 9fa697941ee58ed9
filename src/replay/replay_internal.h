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
  replay_request_result *requests; /* summary.requests entries, trace order */
  replay_window *windows;
  size_t nwindows, windows_cap;
  const config_cluster *cluster;   /* class names, nodes, idle (owned by the caller) */
  double *idle_since_ns;           /* per node: idle from then to the horizon */
  const replay_request *trace_requests; /* identity of the trace (alignment check) */
};

enum { EV_PREFILL_DONE = 0, EV_KV_DONE = 1, EV_DECODE_DONE = 2 };

typedef struct {
  double time_ns;
  uint64_t seq;
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
  bool locked;            /* the decision, valid until ... */
  double decided_until_ns; /* ... the oldest outcome leaves the window (or a new one comes) */
} sg2_window;

typedef struct {
  bool busy;
  size_t first, count;   /* the batch: prefill queue entries [first, first+count) */
  double dcn_free_ns;    /* egress link */
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
  int32_t *waiting;      /* FIFO [whead, wn): KV arrived, not admitted yet */
  size_t whead, wn, wcap;
  int32_t *extra;        /* members with extrapolated SLOs (not in the class aggregates) */
  size_t nextra, extra_cap;
  size_t inbound;        /* KV transfers on their way here */
  bool busy;             /* an iteration is running */
  double dcn_free_ns;    /* ingress link */
  uint64_t iter;         /* iterations completed */
  double share_nj;       /* energy of one member, summed over the iterations so far */
  int64_t max_offset;    /* max over members of context + 1 − iter at join */
  int64_t max_final;     /* max over members of the longest total length it reaches */
  uint64_t next_finish;  /* smallest iteration count at which a member is done */
  double min_k[CONFIG_MAX_SLO_CLASSES]; /* deadline of the next token = k + SLO × iter */
  size_t class_n[CONFIG_MAX_SLO_CLASSES];
  planstore_plan bucket; /* fastest plan of the bucket of (n, seq) while valid */
  bool bucket_valid;
  plan_memo memo;        /* the last plan of that bucket (reset with it) */
} decode_node;

typedef struct {
  double t_first_ns;     /* first token (end of prefill) */
  double k_ns;           /* decode deadline offset, see decode_node.min_k */
  double share_at_join_nj;
  double fast_prefill_ns; /* its fastest prefill alone (safeguard 1's estimate) */
  int64_t offset;        /* KV length at an iteration = offset + node iter */
  uint64_t finish_iter;
  int32_t node;          /* decode node */
} req_state;

typedef struct {
  const planstore *ps;
  const char *policy;
  const replay_setup *setup;
  const config_cluster *cl;
  const replay_request *rq;
  size_t nreq, arrived;
  int32_t *pq;           /* prefill queue [pq_head, pq_tail) of admitted requests */
  size_t pq_head, pq_tail;
  double now_ns;
  event_heap heap;
  prefill_node *pnodes;
  int *assigned;         /* dispatch scratch: nodes given a batch */
  decode_node *dnodes;
  req_state *st;
  sg2_window sg2[REPLAY_NPHASE]; /* paper mode: [0] only */
  int max_decode;
  double wake_ns, sleep_after_ns;
  replay_result *res;
  double *scratch_a, *scratch_b; /* percentile scratch, nreq each */
  size_t *scratch_idx;
} sim;

/* ---- replay_output.c ----------------------------------------------------------- */
json_t *replay_json_number(double x);           /* null when not finite */
double replay_ratio(uint64_t part, uint64_t whole); /* NaN when whole is 0 */

/* ---- replay_account.c ---------------------------------------------------------- */
int account_window(replay_result *r, double t_ns, replay_window **w, enpu_err *err);
/* The plan a batch runs and why (choose_plan). */
typedef struct {
  planstore_plan pl;
  bool locked;     /* safeguard 2 held the chips at peak */
  bool safeguard1; /* safeguard 1 gave it a less aggressive plan */
} plan_choice;

/* A batch [start, start+dur) of `energy_nj` on one node; `members` fill its slots. */
int account_batch(sim *s, int phase, const plan_choice *c, double start_ns, double energy_nj, size_t members,
                  enpu_err *err);
/* Idle energy of node `node` over [from, to): awake, or asleep past its sleep time. */
int account_idle(replay_result *r, int phase, size_t node, double from_ns, double to_ns, enpu_err *err);
/* Node `node` (idle) takes work at s->now_ns: its idle time is charged and *start_ns
 * receives when the work can start (after a wake-up when it slept). */
int account_wake(sim *s, int phase, size_t node, double *start_ns, enpu_err *err);
int account_kv(sim *s, double start_ns, double bytes, enpu_err *err);
bool node_asleep(const sim *s, size_t node);
void sg2_push(sim *s, int window, bool missed);
bool sg2_locked(sim *s, int phase);
int finish_request(sim *s, int32_t i, enpu_err *err);
int finish_run(sim *s, enpu_err *err);

/* ---- replay_sim.c -------------------------------------------------------------- */
int heap_push(event_heap *h, double time_ns, int kind, int32_t id, enpu_err *err);
/* The fastest plan of the bucket covering (n, seq): 1 covered, 0 not (`why`, may be
 * NULL, gets the store's message), < 0 error. */
int fastest_plan(const sim *s, int phase, int n, int seq, planstore_plan *pl, enpu_err *why, enpu_err *err);
/* Pick and count the plan of a batch whose fastest plan is `fast`, for its own target
 * and safeguard 1's cap (INFINITY: none), safeguard 2 consulted. */
int choose_plan(sim *s, int phase, const planstore_plan *fast, double target_ns, double cap_ns, plan_memo *memo,
                plan_choice *c, enpu_err *err);

/* ---- replay_decode.c ----------------------------------------------------------- */
/* Route request i (prefilled on prefill node `pnode`) to a decode node and start its
 * KV transfer. */
int decode_route(sim *s, size_t pnode, int32_t i, enpu_err *err);
int decode_kv_done(sim *s, int32_t i, enpu_err *err);
int decode_done(sim *s, int node, enpu_err *err);

#endif /* ENPU_REPLAY_INTERNAL_H */
