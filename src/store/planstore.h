/* planstore.h — the plan store reader (libenpu_planstore), installed as
 * <enpu/planstore.h> for serving runtimes. No MPI, no other enpu module needed.
 *
 * Open a store once; every lookup after that works on memory (tables are loaded and
 * validated at open, buckets sorted for binary search), takes well under a microsecond
 * and never touches the file. Every index read from the file is bounds-checked at open:
 * a corrupt or crafted store fails planstore_open with ENPU_ERR_FORMAT and a message,
 * never a crash, and every table it loads must match the checksum written with it, so
 * a damaged store is an error naming the table, never a changed answer. Functions return
 * 0 or a negative ENPU_ERR_* code (enpu_err.h, installed beside this header) and fill the
 * optional enpu_err. A planstore handle is read-only after open: concurrent lookups from
 * several threads are safe. */
#ifndef ENPU_PLANSTORE_H
#define ENPU_PLANSTORE_H

#include <stddef.h>
#include <stdint.h>

#include "enpu_err.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The functions below are the whole ABI of libenpu_planstore: the library is compiled
 * with hidden visibility and exports only what carries PLANSTORE_API. */
#if defined(__GNUC__)
#define PLANSTORE_API __attribute__((visibility("default")))
#else
#define PLANSTORE_API
#endif

#define PLANSTORE_PREFILL 0
#define PLANSTORE_DECODE 1
#define PLANSTORE_NSTATE 5 /* frequency states of an op: SA, VU, SRAM, HBM, ICI */
/* Budget modes of a bucket (docs/policies.md, "Budget modes"): what its walk's times measure and
 * how a slack becomes a target. */
#define PLANSTORE_BUDGET_STRICT 0 /* op times with every cost; max(T_nodvfs, T_peak) + s·T_nodvfs */
#define PLANSTORE_BUDGET_PAPER 1  /* critical-path times; (1 + s)·T_nodvfs, overhead on top */

typedef struct planstore planstore;

/* The plan for one batch at one target time. */
typedef struct {
  uint32_t policy;          /* index of the policy (planstore_policy_name) */
  uint32_t bucket;          /* row of the policy's bucket table */
  int phase;                /* PLANSTORE_PREFILL / PLANSTORE_DECODE */
  int budget_mode;          /* PLANSTORE_BUDGET_*: what target_ns and time_ns measure */
  int32_t batch, seq;       /* the padded bucket */
  double t_nodvfs_ns;       /* NoDVFS time of the bucket */
  double t_peak_ns;         /* eNPU pipeline at all-peak */
  double e_nodvfs_nj;       /* NoDVFS energy of the bucket */
  double target_ns;         /* the target the plan was chosen for */
  uint64_t walk_prefix;     /* walk steps applied: the longest prefix with time <= target */
  uint64_t walk_steps;      /* the bucket's whole walk */
  double time_ns;           /* the walk prefix's time in the budget mode's measure (paper:
                               critical path; the pass takes that plus the overhead) */
  double energy_nj;         /* expected energy of one forward pass */
  double lower_bound_nj;    /* LP-relaxation bound on energy at target_ns */
  double savings_vs_nodvfs; /* 1 - energy_nj / e_nodvfs_nj */
  /* The stored plan compiled for this target, when there is one (a slack of the job):
   * its time on the real operator order with V/f transitions and its two overheads,
   * each named for the world it belongs to (docs/policies.md, "Budget modes"): overhead_pct, what
   * a runtime waits for, 100 · (time − critical path) / T_nodvfs; paper_overhead_pct,
   * §4.4's, 100 · (time − Σ instances alone on the paper's base pipeline) / T_nodvfs:
   * the V/f transitions and the crossings' loop-throughput loss, no fill/drain. NaN when
   * no stored plan has this target. */
  double plan_time_ns;
  double overhead_pct;
  double paper_overhead_pct;
  /* That stored plan's energy on the real operator order (with power gating for a pg
   * policy, whose walk energies are its DVFS plan's without); NaN as above. */
  double plan_energy_nj;
  const char *note; /* how the bucket stands with HBM: "" when it fits; else the
                       farm's note, "capacity ignored: ..." (the plan assumes the
                       model fits) or "offload: ..." (weights stream from the
                       host). Valid until planstore_close. */
} planstore_plan;

/* Frequency states of one op of a plan. The walk moves the instances of an op from one
 * Pareto point to the next, so at any prefix an op has `lead_instances` instances at
 * its lead point and the rest at its trail point (the same point when all moved). */
typedef struct {
  uint32_t op; /* row of the policy's op table */
  uint64_t signature;
  const char *name;        /* valid until planstore_close */
  uint64_t instances;      /* instances of the op in one forward pass */
  uint64_t lead_instances; /* 1..instances */
  uint32_t lead_pareto, trail_pareto;
  uint8_t lead_states[PLANSTORE_NSTATE], trail_states[PLANSTORE_NSTATE];
  double lead_time_ns, trail_time_ns; /* one instance at that point */
  double lead_energy_nj, trail_energy_nj;
} planstore_op_states;

/* Open and validate a store (registers the zstd filter in-process).
 * @return 0; ENPU_ERR_IO (cannot open), ENPU_ERR_FORMAT (not a plan store, wrong
 * format_version, corrupt or out-of-range contents), ENPU_ERR_NOMEM. *out is NULL on
 * failure. */
PLANSTORE_API int planstore_open(const char *path, planstore **out, enpu_err *err);
/* planstore_open of one policy only (NULL: the default policy, planstore_default_policy's
 * rule): the other policies' tables are not read, so a runtime serving one policy opens
 * faster. @return as planstore_open, or ENPU_ERR_NOT_FOUND when the store has no such
 * policy. */
PLANSTORE_API int planstore_open_policy(const char *path, const char *policy, planstore **out, enpu_err *err);
PLANSTORE_API void planstore_close(planstore *ps); /* NULL is a no-op */

PLANSTORE_API size_t planstore_policy_count(const planstore *ps);
/* NULL when out of range */
PLANSTORE_API const char *planstore_policy_name(const planstore *ps, size_t i);

/* The default policy: the one a NULL policy means in every function here, and the one
 * `enpu query` and the Python package answer with when none is given. It is the design a
 * store is farmed to evaluate, the eNPU, rather than whichever name sorts first (that is
 * dvfs-c-walk, a baseline). In order: enpu-all (the paper's eNPU); enpu-c (eNPU without
 * I/O-link scaling); the first name starting with "enpu" (a design-space variant); the
 * first that is not a reference (nodvfs, uniform); the first. Rules 1-4 skip a sweep
 * point's policies (their names hold PLANSTORE_VARIANT_SEP), which are asked for by name.
 * "First" is by name (strcmp). @return the index of the pick in names[0..n-1], or -1 when
 * n is 0 or names is NULL. */
PLANSTORE_API long planstore_default_policy_index(const char *const *names, size_t n);
/* The default policy of an open store (planstore_default_policy_index over its
 * policies; the only one for a store opened with planstore_open_policy); NULL when the
 * store holds no policy. Valid until planstore_close. */
PLANSTORE_API const char *planstore_default_policy(const planstore *ps);
#define PLANSTORE_VARIANT_SEP ':' /* "enpu-all:ivr.step_ns=400": a policy on a chip variant */

/* The plan of policy `policy` (NULL = the default policy) for a batch of
 * `batch` requests of `seq` tokens, padded up to the smallest covering bucket (smallest
 * batch >= batch with a sequence bucket >= seq, then the smallest such seq), for the
 * exact target time: the longest walk prefix whose time is <= target_ns.
 * @return 0;
 *   ENPU_ERR_NOT_FOUND: unknown policy, or no covering bucket (the message names the
 *     largest batch and seq of the phase), or the bucket's compilation failed, or it is
 *     not compiled yet (the store is a checkpoint of a running farm: the message says
 *     how many of the policy's buckets are);
 *   ENPU_ERR_INFEASIBLE: the bucket does not fit the chips (capacity), or target_ns is
 *     below the fastest plan — in that case *plan is still filled with the fastest plan
 *     (walk prefix 0), which a runtime may use when it prefers late to nothing;
 *   ENPU_ERR_INVALID: bad arguments. */
PLANSTORE_API int planstore_lookup(const planstore *ps, const char *policy, int phase, int batch, int seq,
                                   double target_ns, planstore_plan *plan, enpu_err *err);

/* planstore_lookup at the bucket's slack budget (slack as a fraction, 0..PLANSTORE_MAX_SLACK;
 * ENPU_ERR_INVALID outside): strict buckets target max(t_nodvfs_ns, t_peak_ns) +
 * slack * t_nodvfs_ns, paper buckets (1 + slack) * t_nodvfs_ns. */
PLANSTORE_API int planstore_lookup_slack(const planstore *ps, const char *policy, int phase, int batch, int seq,
                                         double slack, planstore_plan *plan, enpu_err *err);

/* The largest request a lookup takes: a job's largest batch and sequence bucket and its
 * largest slack (src/config/config_ranges.c holds the same bounds for jobs; unit_cli
 * checks they agree), so no store holds a bucket or a slack beyond them. */
#define PLANSTORE_MAX_BATCH 65536
#define PLANSTORE_MAX_SEQ 16777216
#define PLANSTORE_MAX_SLACK 10.0 /* a fraction: 1000 % */

/* The arguments of a lookup as a person writes them, for planstore_parse_arg. */
#define PLANSTORE_ARG_BATCH 0 /* an integer in 1..PLANSTORE_MAX_BATCH */
#define PLANSTORE_ARG_SEQ 1   /* an integer in 1..PLANSTORE_MAX_SEQ */
#define PLANSTORE_ARG_SLACK                                                                   \
  2                               /* a fraction in 0..1 ("0.05"), or a percent with its unit  \
                                     ("5%", up to "1000%"): a bare number above 1 is refused, \
                                     as "5" meant as 5 % would silently be 500 % */
#define PLANSTORE_ARG_TARGET_MS 3 /* a time in ms, > 0 and finite in ns */

/* One lookup argument from its text (decimal, as a command line or a script's repr gives
 * it), checked with the one set of rules `enpu query` and the Python package both use:
 * nothing wraps (an integer beyond its range is refused, never reduced), NaN and the
 * infinities are refused, and so is trailing text. *value is the argument in the unit
 * of planstore_lookup_slack / planstore_lookup's callers (a slack as a fraction, a
 * target in ms). @return 0; ENPU_ERR_INVALID with a message saying what was expected
 * ("expected an integer in [1, 65536], got '4294967304'"), which callers prefix with
 * the argument's name; *value is untouched on failure. */
PLANSTORE_API int planstore_parse_arg(int which, const char *text, double *value, enpu_err *err);

/* The plan of the same bucket as `bucket_plan` (any plan planstore_lookup returned from
 * this store, ENPU_ERR_INFEASIBLE ones included) for another target: what
 * planstore_lookup gives for every (batch, seq) padded to that bucket, without
 * searching the buckets again (a runtime that keeps a batch's bucket while its
 * sequence grows). @return as planstore_lookup; ENPU_ERR_INVALID for a plan that does
 * not come from this store. */
PLANSTORE_API int planstore_retarget(const planstore *ps, const planstore_plan *bucket_plan, double target_ns,
                                     planstore_plan *plan, enpu_err *err);

/* The plan of the same bucket as `bucket_plan` after the first `walk_prefix` steps of its
 * walk, whatever their time (target_ns is set to the plan's time): a runtime that knows
 * the walk's layout picks a plan by position, e.g. the `uniform` policy's pass at one
 * chip-wide state (schemas/planstore.md). The lower bound is the plan's energy.
 * @return 0; ENPU_ERR_RANGE for a prefix beyond the walk; ENPU_ERR_INVALID for a plan
 * that does not come from this store. */
PLANSTORE_API int planstore_at_prefix(const planstore *ps, const planstore_plan *bucket_plan, uint64_t walk_prefix,
                                      planstore_plan *plan, enpu_err *err);

/* Op instances of one forward pass of the plan's bucket (the sum of its ops'
 * multiplicities): the positions 0..n that planstore_lookup_suffix takes. 0 for a plan
 * that does not come from this store. */
PLANSTORE_API uint64_t planstore_plan_instance_count(const planstore *ps, const planstore_plan *plan);

/* Mid-batch re-targeting: the plan of the same bucket as `bucket_plan` for the op
 * instances first_instance..n-1 of its pass (n = planstore_plan_instance_count) that
 * finishes within target_ns — the longest walk prefix whose suffix takes <= target_ns.
 * A suffix is priced as the share (n − first_instance) / n of the whole pass's time and
 * energy at that prefix: exact when every op's instances are spread evenly along the
 * pass, as a model's repeated layers spread theirs (the embedding and head, once per
 * pass, are where it approximates). On return time_ns, energy_nj and lower_bound_nj are
 * the suffix's, target_ns is the target, and walk_prefix names the plan whose per-op
 * states the suffix runs (planstore_plan_states); plan_time_ns, overhead_pct,
 * paper_overhead_pct and plan_energy_nj are NaN. A runtime that switches to it charges its own V/f transitions
 * (take their time off target_ns). Memory only, like planstore_retarget.
 * @return 0; ENPU_ERR_INFEASIBLE when even the fastest suffix takes longer than target_ns
 * (*plan is then the fastest, walk prefix 0; no message is formatted when err is NULL);
 * ENPU_ERR_RANGE for first_instance > n; ENPU_ERR_INVALID for a plan that does not come
 * from this store or a NaN target. */
PLANSTORE_API int planstore_lookup_suffix(const planstore *ps, const planstore_plan *bucket_plan,
                                          uint64_t first_instance, double target_ns, planstore_plan *plan,
                                          enpu_err *err);

/* Number of distinct ops of the plan's bucket (the size planstore_plan_states needs). */
PLANSTORE_API size_t planstore_plan_op_count(const planstore *ps, const planstore_plan *plan);

/* Per-op frequency states implied by the plan's walk prefix, in op-table order.
 * @return 0, or ENPU_ERR_RANGE when cap < planstore_plan_op_count (nothing written),
 * ENPU_ERR_INVALID for a plan that does not come from this store. */
PLANSTORE_API int planstore_plan_states(const planstore *ps, const planstore_plan *plan, planstore_op_states *out,
                                        size_t cap, size_t *n, enpu_err *err);

/* One bucket of a policy's grid: its key and how it stands (a runtime or a tool walking
 * the whole grid, e.g. to check every answer). */
#define PLANSTORE_BUCKET_OK 0
#define PLANSTORE_BUCKET_INFEASIBLE_CAPACITY 1 /* does not fit the chips */
#define PLANSTORE_BUCKET_FAILED 2              /* its compilation failed */
#define PLANSTORE_BUCKET_PENDING 3             /* not compiled yet (a running farm's checkpoint) */
typedef struct {
  int phase;          /* PLANSTORE_PREFILL / PLANSTORE_DECODE */
  int32_t batch, seq; /* the bucket's key */
  int status;         /* PLANSTORE_BUCKET_* */
} planstore_bucket;

/* Number of buckets of policy `policy` (NULL: the default policy); 0 for an unknown
 * policy. */
PLANSTORE_API size_t planstore_bucket_count(const planstore *ps, const char *policy);
/* The i-th bucket of the policy in (phase, batch, seq) order.
 * @return 0; ENPU_ERR_NOT_FOUND for an unknown policy; ENPU_ERR_RANGE for i beyond
 * planstore_bucket_count; ENPU_ERR_INVALID for bad arguments. */
PLANSTORE_API int planstore_bucket_info(const planstore *ps, const char *policy, size_t i, planstore_bucket *out,
                                        enpu_err *err);

#ifdef __cplusplus
}
#endif

#endif /* ENPU_PLANSTORE_H */
