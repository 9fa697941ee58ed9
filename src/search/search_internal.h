/* search_internal.h — what the bucket compiler (search_bucket.c) and plan finalisation
 * (search_final.c) share: the policy setup, the request being finalised and its scratch;
 * and the `uniform` policy (search_uniform.c) with the walk it records (search_walk.c).
 * Not for other modules.
 *
 * Invariants: a request's per-instance arrays are in real execution order (segment by
 * segment, layer by layer, each op's `count` copies back to back); a plan's Pareto
 * positions (pos[]) are in the walk numbering of its units (search_units: unit u's
 * instances at offset[u] .. offset[u] + multiplicity − 1 in execution order, so a graph
 * op's are layer-major: instance r·count + c is copy c in layer r). Every plan a
 * request prices goes through search_req_total, so the compiler, finalisation and validation
 * (search_plan_simulate) price a plan the same way, bit for bit. */
#ifndef ENPU_SEARCH_INTERNAL_H
#define ENPU_SEARCH_INTERNAL_H

#include "search.h"

/* ---------------------------------------------------------------------------------
 * The op level's memo and searches, and the GA: what search_bucket.c, search_units.c and
 * search_final.c build on (the public entry points are search_op_compile and
 * search_compile_bucket). */

/* Scratch for the op-level search: the evaluation memo (open addressing, keyed by the
 * five states), reused across operators so a search allocates only its result. One per
 * thread. */
typedef struct search_memo search_memo;
int search_memo_create(search_memo **out, enpu_err *err);
void search_memo_free(search_memo *m); /* NULL is a no-op */

/* Pareto set of one operator under `dom`. Greedy: Algorithm 1 from the lowest state of
 * every searched domain; each step evaluates the up to 2^d - 1 candidates that raise a
 * non-empty subset of the domains below peak by one state and moves to the one with the
 * smallest ΔE/|ΔT| among those with ΔT < 0 (lowering both makes ΔE/|ΔT| negative, so such
 * a candidate beats every one that costs energy); it stops when no candidate is faster
 * or every domain is at peak. The all-peak plan is evaluated too (a memo hit when the
 * descent reaches it), so the fastest Pareto point is never slower than all-peak.
 * Exhaustive: every combination, split over `nthreads` threads, users[t] for thread t
 * (the greedy uses users[0] only). Components outside the searched domains stay at peak.
 * On success *out owns its points; on failure *out is empty.
 * @return 0, or the evaluator's error, ENPU_ERR_INVALID (bad domains), ENPU_ERR_NOMEM. */
int search_op_pareto(search_memo *memo, const search_domains *dom, search_eval_fn eval, void *const *users,
                     int nthreads, search_pareto *out, enpu_err *err);

/* search_op_pareto with a batch evaluator and a bound (search_evaluator), and for
 * SEARCH_OP_EXACT one part of the search: the plan space is cut into SEARCH_EXACT_PARTS
 * fixed boxes (halving the widest searched domain, the lowest first on a tie); part k
 * searches box k alone from the same seed (Algorithm 1's set), and its set holds every
 * exact point of its box plus seed points nothing evaluated dominated. part < 0: every
 * part, over `nthreads` threads, merged (the exact set). Evaluations are counted per
 * part and summed, so they depend on neither the thread count nor the order.
 * @return as search_op_pareto; ENPU_ERR_INVALID for a part outside the range. */
int search_op_search(search_memo *memo, const search_domains *dom, const search_evaluator *ev, void *const *users,
                     int nthreads, int part, search_pareto *out, enpu_err *err);

/* The genetic algorithm of the paper's DVFS-C baseline (§4.3, after ascend_dvfs): a genome
 * holds one gene per search_req_op (a Pareto point index shared by all its instances);
 * fitness = energy + a penalty for time over budget_ns (no transitions), so any genome
 * over budget is worse than every one within it. Population `population`, `generations`
 * generations of binary tournament selection, uniform crossover, per-gene mutation
 * (probability 1/ngenes: a neighbouring point or a random one) and one elite. The first
 * individual is `seed` (a previous slack's best, warm start) or, when NULL, every gene at
 * its fastest point; the rest are mutations of it (half) and random genomes (half).
 * Deterministic for a given rng_seed. best[] receives the best genome (never worse than
 * the seed: the elite survives); *evals the genomes evaluated.
 * @return 0, ENPU_ERR_INVALID (bad ops or parameters), ENPU_ERR_NOMEM. */
int search_ga_run(const search_req_op *ops, int nops, double budget_ns, const search_ga_params *prm,
                  const int *seed, int *best, int64_t *evals, enpu_err *err);
/* Time and energy of a genome (every instance of op i at point genes[i]). */
void search_ga_genome_cost(const search_req_op *ops, int nops, const int *genes, double *time_ns,
                           double *energy_nj);

struct search_ctx {
  const config_chip *chip;
  power_model *fixed;    /* NoDVFS: fixed regulator, peak only */
  power_model *ctrl;     /* DVFS IVR, HBM controller only (enpu-c) */
  power_model *full;     /* DVFS IVR, HBM controller + I/O (enpu-all, ideal) */
  power_model *dvfs_c;   /* DVFS IVR for SA/VU/SRAM, HBM and ICI at peak on the fixed one */
  power_model *chipwide; /* uniform: one chip-wide rail on the NoDVFS regulator */
  search_memo *memo;
};

/* ---------------------------------------------------------------------------------
 * The op level's pieces shared by search_op.c and search_exact.c */

/* A Pareto front under construction (search_pareto's order and tie rule). */
typedef struct {
  search_point *pts;
  size_t n, cap;
} search_front;

/* Insert p unless a point dominates it; drop the points it dominates. 0 or ENPU_ERR_NOMEM. */
int search_front_insert(search_front *f, const search_point *p);
/* 1 when a point of f is no slower than time_ns and strictly cheaper than energy_nj. */
int search_front_dominates(const search_front *f, double time_ns, double energy_nj);
/* Component states of a plan given the state of each searched domain. */
/* 0, or ENPU_ERR_INVALID for domains no op-level search can run (search_op.c). */
int search_domains_validate(const search_domains *d, enpu_err *err);
void search_domains_expand(const search_domains *d, const int dstate[CONFIG_NCOMP], int state[CONFIG_NCOMP]);
/* 1 when the memo holds an evaluation of these component states (current operator). */
int search_memo_known(search_memo *m, const int state[CONFIG_NCOMP]);
/* The three op-level methods, each into f; out->evals (and steps) counted. Algorithm 1
 * puts its path into f, and every plan it evaluates when every_eval is set. */
int search_op_greedy(search_memo *memo, const search_domains *dom, const search_evaluator *ev, void *user,
                     search_front *f, int every_eval, search_pareto *out, enpu_err *err);
int search_op_exhaustive(const search_domains *dom, const search_evaluator *ev, void *const *users, int nthreads,
                         search_front *f, search_pareto *out, enpu_err *err);
int search_op_exact(const search_domains *dom, const search_evaluator *ev, void *const *users, int nthreads,
                    int part, search_front *f, search_pareto *out, enpu_err *err);

/* search_policy.c: the all-peak plan's time and energy of one op (strict measure). */
int search_eval_peak(cost_ctx *cost, const graph_op *op, const cost_pipeline *pipe, int peak, double *time_ns,
                     double *energy_nj, enpu_err *err);

/* Policy → search setup (paper §4.1, §4.6; src/README.md). gate_pipe is pipe with power
 * gating on (pg policies price their plans with it too). */
typedef struct {
  search_domains dom;
  cost_pipeline pipe, gate_pipe;
  const power_model *pm;
  int transitions;           /* V/f transitions priced between ops (not for `ideal`) */
  int gating;                /* pg policy */
  search_req_method request; /* the request level actually used */
  power_ops_kind ops;        /* the policy row's (power_policy_of) */
} policy_setup;

int search_policy_setup(const search_ctx *s, config_policy policy, const search_options *o, policy_setup *ps,
                        enpu_err *err);

/* An evaluation cache line: one op's plan after a given previous plan, plain (mode 0) or
 * gated (mode bit 0; bits 1..5: the components woken entering it), or alone on the paper's
 * base of either pipeline (REQ_MODE_PAPER_BASE, search_req_paper_base_time). The gated
 * lines carry what the request level's gating of inter-op intervals needs (cost.h). */
#define REQ_MODE_PAPER_BASE (1u << 7)
typedef struct {
  int prev[CONFIG_NCOMP], state[CONFIG_NCOMP]; /* prev[0] == -1: no previous op */
  unsigned mode;
  double time_ns, cp_ns, energy_nj;
  double loss_nj[CONFIG_NCOMP];
  double gates;
  unsigned idle_mask;
  double head_ns[CONFIG_NCOMP], tail_ns[CONFIG_NCOMP];
  double saved_w[CONFIG_NCOMP], saved_loss_w[CONFIG_NCOMP];
} req_line;

/* What a plan costs (search_req_total). */
typedef struct {
  double time_ns, cp_ns, energy_nj;
  double loss_nj[CONFIG_NCOMP];
  double gates;
} req_cost;

enum { REQ_CACHE_WAYS = 4 };

/* Pricing of instance x of a plan (`state`, execution order) after instance x − 1 in
 * `mode` (req_line): the cost model by default (inst_eval in search_final.c); a unit
 * test may substitute another to run finalisation on operators of its own making. */
typedef int (*req_price_fn)(void *user, const int (*state)[CONFIG_NCOMP], int64_t x, unsigned mode, req_line *out,
                            enpu_err *err);

typedef struct {
  const graph *g;
  const search_units *units;
  const search_pareto *const *sets; /* per unit (NULL when only simulating) */
  const int64_t *offset;            /* per unit: first instance in walk numbering */
  int64_t instances;                /* op instances (execution order) */
  const power_model *pm;
  int transitions;
  search_transitions model;
  config_budget budget;
  cost_ctx *cost;
  const cost_pipeline *pipe, *gate_pipe;
  int gating; /* pg policy: price plans gated too */
  const search_domains *dom;
  int transition_aware;
  const int *op_of;   /* graph op of each instance (execution order) */
  req_price_fn price; /* NULL: the cost model */
  void *price_user;
  req_line *cache; /* per graph op, REQ_CACHE_WAYS lines, used round robin */
  int *cache_next;
} request;

/* Scratch of one bucket's request level. */
typedef struct {
  search_req_op *req; /* per unit; one block with pos, best_pos, peak_state, cand, lift */
  int *pos;           /* per unit instance (walk numbering) */
  int *best_pos;      /* positions of the plan taken so far, when it is on the Pareto sets */
  int have_best;
  int (*peak_state)[CONFIG_NCOMP];
  int (*cand)[CONFIG_NCOMP]; /* a candidate plan's states, execution order */
  int (*lift)[CONFIG_NCOMP]; /* the same with rails lifted */
  int *op_of;                /* graph op of each instance (execution order) */
  search_req_op *ga_req;     /* GA genes (and polish units): runs of consecutive
                                instances of one unit */
  int *ga_op, *ga_first;     /* per gene: unit, first instance */
  int *ga_genes, *ga_seed;
  int ga_n;
  req_line *cache;
  int *cache_next;
  search_walk *hull, *greedy;
  req_cost peak_plain, peak_gated; /* the policy's all-peak plan */
} scratch;

/* Every op's multiplicity is its segment's repeat × its count; *instances: op instances
 * of a pass. */
int search_req_check_graph(const graph *g, int64_t *instances, enpu_err *err);
/* The policy's setup and the graph check, what every request over graph g starts with. */
int search_req_prepare(const search_ctx *s, config_policy policy, const search_options *opt, const graph *g,
                       policy_setup *ps, int64_t *instances, enpu_err *err);
/* A request over units u priced by the setup ps and the options' transitions and budget
 * (no Pareto sets: the caller adds them when it searches). */
request search_req_of_setup(const search_units *u, const policy_setup *ps, const search_options *opt,
                            cost_ctx *cost);

/* Visits graph g's instances in execution order (graph.h): visit(ctx, i, x, w) for the
 * instance of op i at execution index x, numbered w among op i's (copy c of op i in layer
 * r: w = offset_i + r·count + c, offset_i the sum of the multiplicities of ops 0..i-1).
 * Runs once per request set-up, unit set or stored plan, never in the search's inner
 * loop. */
typedef void instance_visit(void *ctx, int op, int64_t exec, int64_t walk);
void search_each_instance(const graph *g, instance_visit *visit, void *ctx);
/* The visit that fills ctx, an int op_of[], with the graph op of each execution index. */
void search_op_of_visit(void *ctx, int op, int64_t exec, int64_t walk);

/* Allocate the execution-order arrays of a request over graph g (op_of, the cache). */
int search_req_init(request *rq, scratch *sc, const graph *g, int64_t instances, enpu_err *err);
void search_scratch_free(scratch *sc);

/* Time (transitions included), critical-path time, energy and regulator loss of the plan
 * `state` (execution order), plain or with power gating (gated: rq->gating only). */
int search_req_total(const request *rq, const int (*state)[CONFIG_NCOMP], int gated, req_cost *out, enpu_err *err);
/* The plan's time with what the paper counts as overhead taken out (its V/f transitions
 * and the crossings' throughput loss): each instance alone (no predecessor) on the paper's
 * base of the pipeline it runs on (gate_pipe when gated; cost_pipeline_paper_base),
 * summed. The cost model only (rq->price unset). */
int search_req_paper_base_time(const request *rq, const int (*state)[CONFIG_NCOMP], int gated, double *time_ns,
                               enpu_err *err);

/* Units of a per-operator request: one per graph op (search_units_build's default). */
int search_units_of_ops(const graph *g, search_units **out, enpu_err *err);
/* The epochs of an epoch policy (search_epochs.c). */
int search_units_of_epochs(search_ctx *s, cost_ctx *cost, const graph *g, config_policy policy, double epoch_ns,
                           search_units **out, enpu_err *err);
/* Cost-model results of (graph op, plan) shared by the epochs of one compilation
 * (search_units.c): starts empty ({0}) and grows on its first use. */
typedef struct {
  struct search_op_line *lines;
  size_t cap, n; /* cap: a power of two */
} unit_cache;
void search_unit_cache_free(unit_cache *uc); /* frees the lines; empty again */
/* search_unit_compile with the compilation's cache (one pipeline and chip). */
int search_unit_compile_cached(search_ctx *s, cost_ctx *cost, const graph *g, const search_units *u, int unit,
                               config_policy policy, const search_options *opt, unit_cache *cache,
                               search_pareto *out, enpu_err *err);

/* Allocate a units struct for `count` units, `members` members and the given instances;
 * the caller fills it (search_units_finish derives offset, unit_of_walk and first_x from
 * walk_of). */
int search_units_alloc(int count, int members, int64_t op_instances, search_units **out, enpu_err *err);
int search_units_finish(search_units *u, enpu_err *err);

/* The slack's plan from a walk (prefix within budget, stepping back in strict mode; rail
 * lifting and local search when transition-aware), or from the GA; the all-peak plan
 * when nothing cheaper fits. pl->budget_ns, slack and budget are set by the caller. */
int search_plan_slack_walk(const request *rq, scratch *sc, const search_walk *w, const search_bucket_result *res,
                           search_slack_plan *pl, enpu_err *err);
int search_plan_slack_ga(const request *rq, scratch *sc, const search_options *opt, int first,
                         const search_bucket_result *res, search_slack_plan *pl, enpu_err *err);
/* The GA's genes: each unit's instances cut into at most `groups` runs. */
int search_ga_genes_make(const search_units *u, const search_pareto *const *sets, int groups, scratch *sc,
                         enpu_err *err);

/* ---------------------------------------------------------------------------------
 * The uniform policy: no DVFS plan but the table an online governor runs from, every
 * component of every op at one chip-wide V/f state. Its "Pareto set" per op is every
 * state, fastest (peak) first — point k is state peak − k; dominated states are kept,
 * since a governor may pick any — and its walk moves round by round: round k moves every
 * op's instances (graph op order) from point k − 1 to point k, so the prefix of k whole
 * rounds is the plan at state peak − k. */

/* The uniform op level: op under `pipe` at every state peak..1 (states of all five
 * components equal), in that order. @return 0, or the cost model's error, ENPU_ERR_NOMEM. */
int search_uniform_sweep(cost_ctx *cost, const graph_op *op, const cost_pipeline *pipe, int peak,
                         search_pareto *out, enpu_err *err);

/* The uniform request level of graph g given every op's sweep (sets[i] for graph op i):
 * the rounds walk, and per slack the state with the least energy among those whose pass
 * fits the budget in `budget` mode (energy is not monotone in the state: static power). `out` comes with
 * policy, the reference times and the all-peak plan filled; the rest is filled here. A
 * uniform pass has no V/f transition (one state throughout), so a plan's time and energy
 * are its ops' sums.
 * @return 0, ENPU_ERR_INVALID (a set that is not a sweep of `peak` states),
 * ENPU_ERR_INTERNAL (invariants), ENPU_ERR_NOMEM; on failure the caller frees `out`. */
int search_uniform_bucket(const graph *g, const search_pareto *const *sets, int peak, const double *slacks,
                          int nslack, config_budget budget, search_bucket_result *out, enpu_err *err);

/* The rounds walk (see above) over ops whose points are time-ordered (not necessarily a
 * Pareto set: a step may cost energy, and the walk carries no LP bound).
 * @return 0, ENPU_ERR_INVALID (empty set, multiplicity < 1, points out of time order),
 * ENPU_ERR_NOMEM. */
int search_walk_rounds(const search_req_op *ops, int nops, search_walk **out, enpu_err *err);

#endif /* ENPU_SEARCH_INTERNAL_H */
