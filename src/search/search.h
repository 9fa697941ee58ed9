/* search.h — DVFS plan search (paper §3.3, src/README.md): per-operator Pareto sets of
 * (time, energy) over frequency states and their distance to the exact set, the
 * request-level walk over their lower convex hulls (one walk serves every slack and
 * carries an LP lower bound), the paper's plain greedy and DVFS-C genetic algorithm, plan
 * finalisation on the real operator order with V/f transitions, plan
 * invariants, the vf.set encoding, and the compilation of one bucket for one policy.
 *
 * Contract:
 *  - The op-level search sees an operator only through an evaluator callback
 *    (search_eval_fn), so it runs on synthetic cost functions in tests and on cost_eval
 *    in the farm. Evaluations are memoised per operator and counted.
 *  - A Pareto set is sorted by time (strictly increasing) with strictly decreasing energy;
 *    its first point is the fastest, and is never slower than the all-peak plan.
 *  - Walk moves are in instances: an op with multiplicity m moves one instance at a time;
 *    m identical moves are recorded as one step with a count, and any count-prefix of a
 *    step is a valid plan.
 *  - Budget modes (config_budget): the time an op-level Pareto set and the request level
 *    measure — search_point.time_ns — is the op's time in `strict` mode and its
 *    critical-path time (cost.h) in `paper` mode; energies are always the real ones.
 *    Finalisation prices every plan on the real operator order with its V/f
 *    transitions; a strict plan fits max(T_nodvfs, T_peak) + p·T_nodvfs with all of it,
 *    a paper plan fits (1 + p)·T_nodvfs with its critical-path time and reports the rest
 *    as its overhead.
 *  - Units of the request level: one per graph op (its layers are its instances), or for
 *    the epoch policies (dvfs-c-ms, enpu-ms) one per distinct millisecond epoch — one V/f
 *    setting for all its operators, its occurrences its instances (search_units). A
 *    Pareto set, a walk position and a GA gene belong to a unit.
 *  - Power gating (pg+ policies, §4.7): the DVFS plan is searched as for the policy
 *    without gating, then finalisation prices it with ReGate-style gating on its
 *    schedule (cost.h: inside ops; here: the idle intervals that span op boundaries) and
 *    keeps the cheaper of the gated and the plain plan that fits (search_slack_plan.gated).
 *  - Units: ns, nJ; states are integers 1..peak (0, gated, is never searched). */
#ifndef ENPU_SEARCH_H
#define ENPU_SEARCH_H

#include <stdint.h>

#include "common.h"
#include "config.h"
#include "cost.h"
#include "graph.h"
#include "power.h"

/* ---------------------------------------------------------------------------------
 * Domains: which components the op-level search moves, and together. */

typedef enum {
  SEARCH_OP_GREEDY = 0,     /* Algorithm 1 (gradient descent from the lowest states) */
  SEARCH_OP_EXHAUSTIVE = 1, /* every state combination of the searched domains: the
                               34-point sweep of dvfs-c (1 domain), 34^5 for `ideal` */
  SEARCH_OP_EXACT = 2       /* the exhaustive set by branch and bound over boxes of plans
                               (search_exact.c); exhaustive without a bound */
} search_op_method;

typedef struct {
  int ndomains;                /* searched domains d, 0..CONFIG_NCOMP (0: all-peak only) */
  int domain_of[CONFIG_NCOMP]; /* searched domain of each component, or -1: fixed at peak */
  int peak_state;              /* states 1..peak_state (chip->freq_states) */
  search_op_method method;
  int trim; /* greedy only (ours, not the paper's): after Algorithm 1, a small local search
               from each Pareto point (one domain down, hand-overs, pair moves, repaired
               hand-overs) accepting plans as fast and cheaper; see search_op.c */
} search_domains;

/* eNPU with 5, 4 ({SA,VU} one domain) or 3 ({SA,VU,SRAM} one domain) searched domains
 * (§4.6); `method` picks Algorithm 1 or the exhaustive search (`ideal`).
 * @return 0, or ENPU_ERR_INVALID for another count or a peak_state outside 1..255. */
int search_domains_enpu(search_domains *d, int ndomains, int peak_state, search_op_method method, enpu_err *err);
/* dvfs-c: {SA,VU,SRAM} one domain swept over every state, HBM and ICI at peak. */
int search_domains_dvfs_c(search_domains *d, int peak_state, enpu_err *err);
/* nodvfs: nothing searched, the single all-peak plan. */
int search_domains_nodvfs(search_domains *d, int peak_state, enpu_err *err);

/* ---------------------------------------------------------------------------------
 * Operator level */

/* Evaluate one plan of one operator: time and total energy. Must be deterministic.
 * @return 0, or a negative ENPU_ERR_* with err filled (err may be NULL). */
typedef int (*search_eval_fn)(void *user, const int state[CONFIG_NCOMP], double *time_ns, double *energy_nj,
                              enpu_err *err);

/* Evaluate n plans of one operator at once: the same results as n calls of the
 * search_eval_fn it comes with (cost_eval_batch). */
typedef int (*search_eval_batch_fn)(void *user, int n, const int (*state)[CONFIG_NCOMP], double *time_ns,
                                    double *energy_nj, enpu_err *err);
/* Lower bounds over a box of plans (every component c at a state in lo[c]..hi[c]): no
 * plan of the box evaluates faster than *time_ns or cheaper than *energy_nj
 * (cost_bound_box, in the budget mode's time). */
typedef int (*search_bound_fn)(void *user, const int lo[CONFIG_NCOMP], const int hi[CONFIG_NCOMP], double *time_ns,
                               double *energy_nj, enpu_err *err);

typedef struct {
  search_eval_fn eval;        /* required */
  search_eval_batch_fn batch; /* NULL: one plan at a time */
  search_bound_fn bound;      /* NULL: SEARCH_OP_EXACT enumerates every plan */
} search_evaluator;

typedef struct {
  int state[CONFIG_NCOMP];
  double time_ns; /* the budget mode's measure: op time (strict), critical path (paper) */
  double energy_nj;
} search_point;

typedef struct {
  search_point *points; /* owned; sorted by time, energy strictly decreasing */
  int count;
  int64_t evals; /* distinct plans evaluated (memo misses) */
  int64_t steps; /* Algorithm 1 iterations (plans selected after the start) */
} search_pareto;

void search_pareto_free(search_pareto *p); /* frees p->points; NULL and empty are no-ops */

/* The exact op-level search is cut into SEARCH_EXACT_PARTS fixed parts (search_op_search),
 * each a farm sub-task (search_op_compile_part). */
enum { SEARCH_EXACT_PARTS = 8 };
/* The Pareto set of the union of n sets (each sorted as search_pareto is), with the same
 * tie rule: independent of the sets' order. evals sums theirs. */
int search_pareto_merge(const search_pareto *sets, int n, search_pareto *out, enpu_err *err);

/* How close an approximate Pareto set (Algorithm 1) is to the exact one (exhaustive, same
 * evaluator): for approximate point i, gap[i] = E_i / E*(T_i) - 1, E*(T) the exact
 * minimum energy at time <= T; and the ratio of the areas the two sets dominate up to the
 * reference point (1.1 × the largest time, 1.1 × the largest energy of either set), which
 * is <= 1 when `exact` really is exact. */
typedef struct {
  double max_gap, mean_gap; /* over the approximate points */
  int worst;                /* index of the approximate point with max_gap */
  double hv_ratio;          /* hypervolume(approx) / hypervolume(exact) */
} search_gap;

/* gap may be NULL (summary only), else it holds approx->count values.
 * @return 0, or ENPU_ERR_INVALID when a set is empty or an approximate point is faster
 * than every exact point (so `exact` cannot be exact). */
int search_pareto_gap(const search_pareto *exact, const search_pareto *approx, double *gap, search_gap *out,
                      enpu_err *err);

/* ---------------------------------------------------------------------------------
 * Request level: the walk over lower convex hulls, the plain greedy, and prefixes. */

typedef struct {
  const search_point *points; /* a Pareto set (search_pareto order) */
  int count;                  /* >= 1 */
  int64_t multiplicity;       /* instances of the op in one forward pass, >= 1 */
} search_req_op;

/* One recorded move: `count` instances of op `op` go from Pareto point `from` to `to`;
 * per instance the time grows by dtime_ns (> 0) and the energy changes by denergy_nj
 * (< 0). time_ns/energy_nj are the request totals after the whole step (no transitions);
 * moves_before counts the instance moves made before this step. */
typedef struct {
  int op, from, to;
  int64_t count;
  double dtime_ns, denergy_nj;
  double time_ns, energy_nj;
  int64_t moves_before;
} search_walk_step;

typedef struct search_walk search_walk;

/* The walk: every op instance at its fastest point, then repeatedly the move along an
 * op's lower convex hull that saves the most energy per added time (all m instances of
 * an op share a hull segment's rate, so they move as one counted step), until the total
 * time (no transitions) reaches time_cap_ns or every hull is exhausted.
 * @return 0, or ENPU_ERR_INVALID (empty set, multiplicity < 1), ENPU_ERR_NOMEM. */
int search_walk_build(const search_req_op *ops, int nops, double time_cap_ns, search_walk **out, enpu_err *err);
/* The paper's plain greedy over Pareto points (no hull), for one budget: from the fastest
 * points, repeatedly move one instance to its op's next Pareto point with the best
 * energy saved per added time among the moves that still fit in budget_ns; stop when
 * none fits or saves energy. Recorded as a walk (consecutive identical moves merged). */
int search_greedy_build(const search_req_op *ops, int nops, double budget_ns, search_walk **out, enpu_err *err);
void search_walk_free(search_walk *w); /* NULL is a no-op */

/* Parameters of the paper's DVFS-C genetic algorithm (search_ga_run). */
typedef struct {
  int population, generations;
  uint64_t rng_seed;
} search_ga_params;

double search_walk_start_time_ns(const search_walk *w);
double search_walk_start_energy_nj(const search_walk *w);
int search_walk_step_count(const search_walk *w);
const search_walk_step *search_walk_step_at(const search_walk *w, int i);
int64_t search_walk_moves(const search_walk *w); /* instance moves in the whole walk */

/* The longest prefix of the walk within budget_ns, in instance moves, its time and energy
 * (no transitions), and the LP-relaxation lower bound on energy for that budget (the
 * prefix plus the fraction of the next instance move that still fits). The bound holds
 * for hull walks only (search_walk_build); on a plain greedy walk it is just the
 * interpolation and must not be used as a bound. */
typedef struct {
  int64_t moves;
  double time_ns, energy_nj, lower_bound_nj;
} search_prefix;

/* @return 0, ENPU_ERR_INFEASIBLE when even the start exceeds budget_ns, or
 * ENPU_ERR_RANGE when the walk was capped below budget_ns (its bound would be unknown). */
int search_walk_prefix(const search_walk *w, double budget_ns, search_prefix *out, enpu_err *err);

/* Point index of every instance after the first `moves` instance moves: pos[off_i + r]
 * for instance r of op i, off_i the sum of the multiplicities of ops 0..i-1. A step
 * moves the lowest-numbered instances still at its `from` point. */
int search_walk_positions(const search_walk *w, int64_t moves, int *pos, enpu_err *err);

/* ---------------------------------------------------------------------------------
 * Plans, invariants, vf.set */

/* One slack's compiled plan. */
typedef struct {
  double slack;
  config_budget budget;       /* the mode budget_ns was computed in */
  double budget_ns;           /* strict: max(T_nodvfs, T_peak) + slack·T_nodvfs;
                                 paper: (1 + slack)·T_nodvfs */
  double time_ns;             /* on the real operator order, transitions included */
  double energy_nj;           /* idem */
  double cp_time_ns;          /* the plan's critical-path time (sum over its ops) */
  double overhead_pct;        /* 100 · (time_ns − cp_time_ns) / T_nodvfs: transitions,
                                 crossings and the fill/drain they lengthen (what a
                                 serving runtime waits for) */
  double paper_overhead_pct;  /* the paper's overhead (§4.4: "primarily from V/f transition
                                 delays and domain-crossing overhead"): 100 · (time_ns −
                                 Σ each instance alone on the paper's base pipeline,
                                 cost_pipeline_paper_base) / T_nodvfs: the transitions and
                                 the crossings' steady-state (IPC) loss, without the
                                 fill/drain and the longer warmup crossings give it,
                                 which the authors' simulator does not time (an op lasts
                                 its slowest component's time) */
  double lower_bound_nj;      /* LP relaxation over the op-level Pareto sets */
  double savings_vs_nodvfs;   /* 1 - energy / E_nodvfs */
  int64_t op_evals;           /* op-level evaluations of the policy (shared by its slacks) */
  int64_t request_evals;      /* request-level plans visited: walk moves + finalisations */
  double search_s;            /* op-level search (shared) + this slack's request level */
  int64_t walk_moves;         /* instance moves of the chosen walk prefix (-1: all-peak) */
  int (*state)[CONFIG_NCOMP]; /* per op instance in execution order; owned by the result */
  int64_t instances;
  /* Ours, not the paper's: searched domains whose rails finalisation lifted (bit k: domain
   * k), local-search moves applied after the walk prefix or GA plan, and whether the plan
   * came from the GA. All 0: `state` is the walk prefix walk_moves (or all-peak). */
  unsigned lifted_mask;
  int64_t polish_moves;
  int from_ga;
  double regulator_loss_nj[CONFIG_NCOMP]; /* energy lost in regulators (Figure 13) */
  int gated;                              /* power gating applied (pg policies; the cheaper plan that fits) */
  double gates;                           /* gate events of the pass (inside and between ops) */
} search_slack_plan;

/* Plan invariants (src/README.md) over the slacks of one policy in increasing order:
 * time (strict) or critical-path time (paper) <= budget, energy non-increasing as slack
 * grows, energy <= peak_energy_nj (the policy's all-peak plan), lower bound <= energy
 * (plain plans: the bound is over the Pareto sets, which gating can go below). Relative
 * tolerance 1e-9.
 * @return 0, or ENPU_ERR_INTERNAL naming the slack and the broken invariant. */
int search_check_invariants(const search_slack_plan *plans, int n, double peak_energy_nj, enpu_err *err);

/* vf.set, register variant (paper §3.2): states of the six clocked units
 * in the order FE, SA, VU, SRAM, HBM, ICI, 8 bits each in bits 0..47 (FE lowest), and the
 * mask of changed units in bits 48..53 (bit 48 + u for unit u). Fields of units outside
 * the mask are 0. */
enum { SEARCH_VF_FE = 0, SEARCH_VF_NUNIT = 6 };
#define SEARCH_VF_MASK_ALL 0x3Fu

/* @return 0, or ENPU_ERR_RANGE for a state outside 0..255 or a mask beyond 6 bits. */
int search_vfset_encode(const int state[SEARCH_VF_NUNIT], unsigned mask, uint64_t *word, enpu_err *err);
/* @return 0, or ENPU_ERR_FORMAT for bits above 53 or a non-zero field outside the mask.
 * Fields outside the mask come back as -1 (unchanged). */
int search_vfset_decode(uint64_t word, int state[SEARCH_VF_NUNIT], unsigned *mask, enpu_err *err);

typedef struct {
  int64_t instance; /* the op instance (execution order) the command precedes */
  uint64_t word;
} search_vfset_cmd;

/* The vf.set stream of a plan: one command before the first instance (every unit) and
 * one at each later boundary where any unit's state changes (FE = max of SA, VU, SRAM).
 * out must hold `instances` commands; *count receives how many were written. */
int search_vfset_stream(const int (*state)[CONFIG_NCOMP], int64_t instances, search_vfset_cmd *out, int64_t *count,
                        enpu_err *err);

/* Decode a stream and replay it over `instances` instances: every command must decode,
 * commands must be in increasing instance order starting at 0 with every unit set, and
 * the replayed units must equal the plan's (FE = max of SA, VU, SRAM).
 * @return 0, or ENPU_ERR_FORMAT naming the first mismatch. */
int search_vfset_check(const int (*state)[CONFIG_NCOMP], int64_t instances, const search_vfset_cmd *cmds,
                       int64_t count, enpu_err *err);

/* ---------------------------------------------------------------------------------
 * Compiling one bucket for one policy */

typedef enum {
  SEARCH_REQ_WALK = 0,   /* hull walk + LP bound */
  SEARCH_REQ_GREEDY = 1, /* the paper's greedy over Pareto points, one run per slack */
  SEARCH_REQ_GA = 2,     /* the paper's DVFS-C genetic algorithm, warm-started per slack */
  SEARCH_REQ_POLICY = 3  /* default: the policy's own — the GA for dvfs-c (§4.3), the
                            walk for every other policy (dvfs-c-walk included) */
} search_req_method;

/* How V/f transitions between consecutive operators are priced. */
typedef enum {
  SEARCH_TRANS_PER_RAIL = 0,  /* default: each moving rail delays only its components, inside
                                 the next op (cost_eval_after, paper §3.2) */
  SEARCH_TRANS_CHIP_STALL = 1 /* the whole chip stalls for the slowest moving rail between
                                 the two ops (a synchronous vf.set on every domain) */
} search_transitions;

typedef struct {
  search_req_method request;
  int enpu_domains;      /* 5 (default), 4 or 3 for enpu-c / enpu-all */
  double walk_cap_slack; /* walk continues to this slack at least (default 0.5) */
  int threads;           /* exhaustive op-level search (`ideal`) */
  /* Ours, not the paper's: the GA's parameters (defaults: the paper's 1000 × 500, seed 1)
   * and its genome granularity: the instances of one graph op (its repeated layers) are
   * split into at most ga_groups runs of consecutive layers, one gene each (default 8). */
  search_ga_params ga;
  int ga_groups;
  /* `ideal`'s op-level method: the exact set by branch and bound (default), by exhaustive
   * enumeration (the same set), or Algorithm 1 on the ideal pipeline (the greedy side of
   * an exact-vs-greedy comparison, or the unsampled ops). */
  search_op_method ideal_method;
  /* Algorithm 1 + the trim pass (search_domains.trim) for enpu-c, enpu-all and `ideal`'s
   * greedy side; off by default (the paper's Algorithm 1 as is). */
  int op_trim;
  /* Transition-aware finalisation (rail lifting + local search), off by default: its
   * plans are not walk prefixes, which is all the plan store records (a plan with
   * lifted_mask, polish_moves or from_ga set has walk_moves -1 and only `state` says what
   * it is). See search_compile_bucket. */
  int transition_aware;
  config_budget budget;           /* strict (default) or paper */
  search_transitions transitions; /* per-rail (default) or the whole-chip stall */
  /* Policy variants (config_policy_spec): the VU shadow register file of the policy's
   * pipeline (-1: the chip's, §4.5) and power gating of the finalised plan (§4.7). */
  int shadow_vregs;
  int gating;
  double epoch_ns; /* epoch of dvfs-c-ms and enpu-ms (default 5 ms, §4.6) */
} search_options;

void search_options_default(search_options *o);
/* The options of a policy variant: shadow_vregs and gating from the spec. */
void search_options_set_policy(search_options *o, const config_policy_spec *p);
/* The options a job compiles a policy with (the farm's, and what validation re-simulates
 * with): the defaults, the job's budget mode and epoch, the policy's variant (p may be
 * NULL: the plain defaults of the job). */
void search_options_for_job(search_options *o, const config_job *job, const config_policy_spec *p);

/* ---------------------------------------------------------------------------------
 * Units of a request */

enum { SEARCH_UNIT_EPOCH = 1000 }; /* search_unit.kind of an epoch (not a graph_op_kind) */

typedef struct {
  uint64_t signature;             /* the graph op's, or a hash of the epoch's members in order */
  int64_t multiplicity;           /* instances in a pass */
  int kind;                       /* graph_op_kind, or SEARCH_UNIT_EPOCH */
  int op;                         /* its graph op (an epoch: its first member) */
  int member_first, member_count; /* its members: member_op/member_count[first..] */
  char name[64];
} search_unit;

typedef struct {
  int count;
  search_unit *unit;     /* one block with member_op, member_count, offset, walk_of */
  int *member_op;        /* per member: graph op */
  int64_t *member_count; /* per member: instances of it in one instance of the unit */
  int64_t instances;     /* unit instances of a pass: walk numbers 0..instances-1 */
  int64_t *offset;       /* per unit (count + 1): its first walk number */
  int *unit_of_walk;     /* per walk number: its unit (one block with first_x) */
  int64_t *first_x;      /* per walk number: the execution index of its first op */
  int64_t op_instances;  /* op instances of a pass (execution order) */
  int64_t *walk_of;      /* per op instance: its unit instance's walk number */
} search_units;

/* Search context: the chip's power models (fixed regulator; DVFS IVR with HBM ctrl-only
 * and full; DVFS-C's compute-only IVR) and the op-level memo. One per thread; the chip must outlive it (the
 * exhaustive search creates a cost context per extra thread from it). */
typedef struct search_ctx search_ctx;
int search_ctx_create(const config_chip *chip, search_ctx **out, enpu_err *err);
void search_ctx_free(search_ctx *s); /* NULL is a no-op */

typedef struct {
  config_policy policy;
  double t_nodvfs_ns, e_nodvfs_nj;                   /* NoDVFS forward pass */
  double t_peak_ns;                                  /* eNPU (5-domain) pipeline at all-peak */
  config_budget budget;                              /* the mode every plan was compiled in */
  double policy_peak_time_ns, policy_peak_energy_nj; /* the policy's all-peak plan */
  int64_t op_evals;
  int unique_ops; /* ops searched (distinct signatures) */
  double op_search_s;
  int64_t walk_moves;       /* instance moves in the walk (hull walk only) */
  search_slack_plan *plans; /* one per slack, in the given (increasing) order */
  int nplans;
  search_walk *walk;        /* the hull walk over the units (owned) */
  search_units *units;      /* the request's units (owned) */
  search_pareto *unit_sets; /* per unit, when the bucket compiled them itself
                               (search_compile_bucket); NULL otherwise (owned) */
} search_bucket_result;

void search_bucket_result_free(search_bucket_result *r); /* frees members; NULL no-op */

/* The op level of one policy for one op: its Pareto set under the policy's domains and
 * pipeline (what the farm's `op` task computes once per signature). The memo of `s` is
 * reused, so one search_ctx serves one thread.
 * @return 0, or the cost model's error, ENPU_ERR_INVALID, ENPU_ERR_NOMEM. */
int search_op_compile(search_ctx *s, cost_ctx *cost, const graph_op *op, config_policy policy,
                      const search_options *opt, search_pareto *out, enpu_err *err);

/* One part (0..SEARCH_EXACT_PARTS − 1) of the op level when the policy's op-level method
 * is SEARCH_OP_EXACT (`ideal`'s default), what a farm sub-task computes; part −1, or any
 * other method, is search_op_compile. Merging the parts' sets (search_pareto_merge)
 * gives search_op_compile's set. */
int search_op_compile_part(search_ctx *s, cost_ctx *cost, const graph_op *op, config_policy policy,
                           const search_options *opt, int part, search_pareto *out, enpu_err *err);

/* The full cost result (per-slot energies, utilisations) of one plan of one op under the
 * policy's pipeline and power model: the breakdown behind a Pareto point. */
int search_op_breakdown(search_ctx *s, cost_ctx *cost, const graph_op *op, config_policy policy,
                        const search_options *opt, const int state[CONFIG_NCOMP], cost_result *out, enpu_err *err);
/* The same on the paper's base of the policy's pipeline (cost_pipeline_paper_base; the
 * pipeline without gating, as search_op_breakdown): an ungated instance's share of what
 * a plan's paper_overhead_pct is measured from. */
int search_op_paper_base(search_ctx *s, cost_ctx *cost, const graph_op *op, config_policy policy,
                         const search_options *opt, const int state[CONFIG_NCOMP], cost_result *out, enpu_err *err);
/* The same on the policy's pipeline with crossing free (cost_pipeline_crossing_free; its
 * domains, so its clocks): the plan's time less this is what its domain crossings cost. */
int search_op_crossing_free(search_ctx *s, cost_ctx *cost, const graph_op *op, config_policy policy,
                            const search_options *opt, const int state[CONFIG_NCOMP], cost_result *out,
                            enpu_err *err);
/* The same as search_op_breakdown for the op run right after an op planned `prev` (NULL: as
 * search_op_breakdown): per-rail transitions included as the request level prices them
 * (cost_eval_after; none for a policy without transitions). */
int search_op_breakdown_after(search_ctx *s, cost_ctx *cost, const graph_op *op, config_policy policy,
                              const search_options *opt, const int prev[CONFIG_NCOMP],
                              const int state[CONFIG_NCOMP], cost_result *out, enpu_err *err);

/* The units of a request over graph g under a policy (search_units above): the graph's
 * ops, or for an epoch policy its epochs. Epochs (§4.6: "merge consecutive
 * sub-millisecond operators into epochs (>= 5 milliseconds)"), after the region merge of
 * the paper's artifact (NeuSim at commit 14f47dd,
 * `neusim/npusim/frontend/dvfs_region_merge.py`) on the
 * real operator order: each op instance is labelled by its bottleneck at peak (enpu-ms:
 * the component with the largest own time; dvfs-c-ms: compute-bound or not); runs of one
 * label start as regions; then, while a region is shorter than opt->epoch_ns of NoDVFS
 * time, the shortest (the earliest of equals) merges into its shorter neighbour (the left
 * of equals), takes the label with the most time in it, and joins neighbours of its
 * label. Deterministic: compile and validation rebuild the same units.
 * @return 0, or the cost model's error, ENPU_ERR_INVALID (bad graph), ENPU_ERR_NOMEM. */
int search_units_build(search_ctx *s, cost_ctx *cost, const graph *g, config_policy policy,
                       const search_options *opt, search_units **out, enpu_err *err);
void search_units_free(search_units *u); /* NULL is a no-op */

/* The op level of one unit: search_op_compile for a graph op; for an epoch, the same
 * search with each plan evaluated as one V/f setting for all its operators — the cost
 * model's time (or critical path) and energy of every member instance at that setting,
 * summed (no transition inside an epoch). */
int search_unit_compile(search_ctx *s, cost_ctx *cost, const graph *g, const search_units *u, int unit,
                        config_policy policy, const search_options *opt, search_pareto *out, enpu_err *err);
/* The cost result of one unit instance at one plan: an op's search_op_breakdown; an
 * epoch's members' times, energies (per slot) and losses summed. */
int search_unit_breakdown(search_ctx *s, cost_ctx *cost, const graph *g, const search_units *u, int unit,
                          config_policy policy, const search_options *opt, const int state[CONFIG_NCOMP],
                          cost_result *out, enpu_err *err);

/* The op level of a bucket, one Pareto set per distinct signature: `count` items (a
 * request's units, or graph ops) with their signatures; compile(user, item, rank,
 * distinct, &set) runs once per signature, on its first item in order (rank: 0-based
 * among the distinct signatures, `distinct` of them), and every item's set_of points at
 * its signature's set. On failure the sets compiled so far stay for search_sets_free. */
typedef int (*search_set_fn)(void *user, int item, int rank, int distinct, search_pareto *out, enpu_err *err);
typedef struct {
  int count, distinct;
  search_pareto *sets;          /* per item; the first item of each signature's (owned) */
  const search_pareto **set_of; /* per item: its signature's set */
  int64_t evals;                /* summed over the distinct sets */
  double search_s;              /* wall time of the compilations */
} search_sets;

/* @return 0, compile's error, or ENPU_ERR_NOMEM. */
int search_sets_compile(const uint64_t *signature, int count, search_set_fn compile, void *user, search_sets *out,
                        enpu_err *err);
void search_sets_free(search_sets *s); /* frees members; NULL is a no-op */
/* A result search_compile_bucket_sets compiled from `sets` takes their op-level figures:
 * op_evals, unique_ops, op_search_s, and each plan's op_evals and search_s. */
void search_bucket_add_op_level(search_bucket_result *r, const search_sets *sets);

/* The request level of one bucket given its units' Pareto sets (sets[u] for unit u of
 * search_units_build — graph op u for a per-operator policy — computed by
 * search_unit_compile for the same policy and options; equal signatures may share a
 * set): reference times, the walk, each slack's finalised plan, the invariants.
 * op_evals/unique_ops/op_search_s are left 0 (the caller did the op level).
 * @return as search_compile_bucket. */
int search_compile_bucket_sets(search_ctx *s, cost_ctx *cost, const graph *g, config_policy policy,
                               const search_pareto *const *sets, const double *slacks, int nslack,
                               const search_options *opt, search_bucket_result *out, enpu_err *err);

/* Compile one bucket (graph g) for one policy at the given slacks (increasing, >= 0):
 * budgets T_budget(p) = max(T_nodvfs, T_peak) + p·T_nodvfs (strict) or
 * (1 + p)·T_nodvfs (paper), op-level Pareto sets per distinct op signature, the
 * request-level search, finalisation on the real operator order (V/f transitions per
 * opt->transitions between consecutive ops whose voltages differ; none for `ideal`),
 * stepping back along the walk until the plan fits (strict; a paper plan's walk prefix
 * fits by construction), and the plan invariants. With opt->transition_aware, finalisation also (1) tries the walk
 * prefix (or GA/greedy plan) with rails lifted — for every subset of the searched domains, each instance's state in
 * a lifted domain is raised to the lowest state of the highest voltage band that domain uses in the plan, so its
 * rail never changes voltage (frequency changes within a band cost no transition) — and keeps the cheapest
 * candidate that fits; (2) improves the plan taken by a local search on the real order with transitions priced:
 * shift one run of layers of one op by one Pareto point while that lowers the energy and fits. `cost` is the
 * caller's per-thread cost context.
 * @return 0, or the cost model's error, ENPU_ERR_INVALID (bad slacks/options),
 * ENPU_ERR_INTERNAL (an invariant broke), ENPU_ERR_NOMEM. */
int search_compile_bucket(search_ctx *s, cost_ctx *cost, const graph *g, config_policy policy, const double *slacks,
                          int nslack, const search_options *opt, search_bucket_result *out, enpu_err *err);

/* What a plan costs on the real operator order; paper_base_time_ns: each instance alone on
 * the paper's base pipeline (time_ns − paper_base_time_ns is the paper's overhead,
 * search_slack_plan). */
typedef struct {
  double time_ns, cp_time_ns, energy_nj, paper_base_time_ns;
  double regulator_loss_nj[CONFIG_NCOMP];
  double gates;
} search_plan_totals;

/* Re-simulate a plan from its states alone (what `enpu validate` checks a stored plan
 * with): every op instance evaluated by the cost model under the policy's pipeline and
 * power model, in the real operator order, with the V/f transitions between consecutive
 * instances that finalisation prices (none for `ideal`) and, when `gated`, power gating
 * — the same totals finalisation computes. state[w] holds the states of unit instance w
 * in walk numbering (search_units: graph op i's layer r is offset_i + r; an epoch's
 * occurrence k is its offset + k).
 * @return 0, or the cost model's error naming the op and layer, ENPU_ERR_INVALID (bad
 * graph or policy), ENPU_ERR_NOMEM. */
int search_plan_simulate(search_ctx *s, cost_ctx *cost, const graph *g, config_policy policy,
                         const search_options *opt, const int (*state)[CONFIG_NCOMP], int gated,
                         search_plan_totals *out, enpu_err *err);

/* The identity of compiled units (search_key.c): what a store's ops.signature holds and
 * what farm results and the result cache are keyed by. They depend only on the job's
 * content (graph op signature, chip tables, cost-model version, policy, search options),
 * never on paths, ranks or time: equal keys give bit-identical results.
 *  search_hash_options: every option that changes a Pareto set or a plan, with the chip of
 *    sweep point `variant`, into h;
 *  search_op_policy: the code a policy's op results are kept under: the policy without
 *    power gating (its op level is the same), and on the job's own chip when its sweep
 *    point changes nothing the op level reads (config_variant.ops_differ);
 *  search_unit_key: a unit's key from its signature (`what` names the kind of unit; with
 *    its segment when segment >= 0);
 *  search_op_key: a graph op's key under a policy. */
void search_hash_options(enpu_hasher *h, const config_job *job, int variant, const search_options *opt);
uint32_t search_op_policy(const config_job *job, const config_policy_spec *policy);
uint64_t search_unit_key(const config_job *job, const config_policy_spec *policy, const search_options *opt,
                         const char *what, uint64_t signature, int segment);
uint64_t search_op_key(const config_job *job, const config_policy_spec *policy, const search_options *opt,
                       const graph_op *op);

/* The budget of a slack in a mode: strict max(t_nodvfs, t_peak) + slack·t_nodvfs, paper
 * (1 + slack)·t_nodvfs. */
double search_budget_ns(config_budget budget, double t_nodvfs_ns, double t_peak_ns, double slack);

/* A plan's states in execution order (search_slack_plan.state) rearranged into the walk
 * numbering of units u (search_units_build; a unit instance takes its first op
 * instance's states), as search_plan_simulate takes them. */
void search_states_by_walk(const search_units *u, const int (*exec)[CONFIG_NCOMP], int (*walk)[CONFIG_NCOMP]);

#endif /* ENPU_SEARCH_H */
