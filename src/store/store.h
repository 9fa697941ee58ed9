/* store.h — the HDF5 plan store, writer side: one plain record struct per table of
 * schemas/planstore.md, provenance, and a writer that publishes the store atomically.
 * The reader API is planstore.h (installed as <enpu/planstore.h>).
 *
 * Invariants of a store (checked by both readers, see store_read.c):
 *  - one group per policy, /policies/<name>/, holding the tables below;
 *  - every index stored in a record points into a table of the same policy and is
 *    < that table's row count; every [first, first+count) range lies inside its table;
 *  - an op's Pareto points are contiguous, ordered by time_ns ascending (the first one
 *    is the fastest), and a walk only moves an op to a later (slower, cheaper) point;
 *  - a bucket's walk steps are contiguous, with non-decreasing cumulative time_ns;
 *  - a bucket's ops (bucket_ops rows) are contiguous with strictly increasing op index.
 * The writer does not reorder anything: the farm fills the records in this shape. */
#ifndef ENPU_STORE_H
#define ENPU_STORE_H

#include <signal.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "common.h"
#include "planstore.h"

/* 2: buckets and plans carry their budget mode, plans their critical-path time and
 * overhead (the cost model's transitions and budgets changed with them).
 * 3: a checksum per table and over the root attributes, pending buckets in checkpoints.
 * 4: plans carry their regulator loss per component and their power gating; policy
 * groups may be policy variants (pg+, @shadow=) and epoch policies, whose ops are epochs
 * (kind STORE_OP_KIND_EPOCH).
 * 5: plans carry the paper's overhead (paper_overhead_pct) beside the runtime's. */
#define STORE_FORMAT_VERSION 5u
#define STORE_NSTATE PLANSTORE_NSTATE /* frequency states per plan: SA, VU, SRAM, HBM, ICI */
#define STORE_NENERGY 7               /* energy slots: SA, VU, SRAM, HBM, ICI, FE, other */
#define STORE_NAME_LEN 64             /* fixed string columns (op and policy names) */
#define STORE_MSG_LEN 160             /* bucket status message */
#define STORE_ZSTD_FILTER_ID 32015    /* the registered Zstandard HDF5 filter */
#define STORE_NO_INDEX UINT32_MAX     /* plan_states row that is not a Pareto point */
/* plans.walk_prefix of a plan that is no walk prefix (the GA's, a rail-lifted one, the
 * all-peak fallback). */
#define STORE_NO_PREFIX UINT64_MAX

/* Phases and bucket status, as stored (u8 columns). Phases are the reader API's codes
 * (which the modules that also see config.h assert equal to config_phase). */
enum { STORE_PHASE_PREFILL = PLANSTORE_PREFILL, STORE_PHASE_DECODE = PLANSTORE_DECODE };
enum {
  STORE_BUCKET_OK = 0,
  STORE_BUCKET_INFEASIBLE_CAPACITY = 1,
  STORE_BUCKET_FAILED = 2,
  STORE_BUCKET_PENDING = 3, /* wanted, not compiled yet: a checkpoint of an unfinished farm;
                               no ops, walk or plans */
  STORE_NBUCKET_STATUS
};
/* Budget modes, as stored (u8 columns): the reader API's codes, asserted equal to
 * config_budget where both are seen. */
enum { STORE_BUDGET_STRICT = PLANSTORE_BUDGET_STRICT, STORE_BUDGET_PAPER = PLANSTORE_BUDGET_PAPER };

/* ops.kind of an epoch of dvfs-c-ms / enpu-ms: several operators at one V/f setting. */
#define STORE_OP_KIND_EPOCH 1000u

/* ops: one row per unique operator signature of the policy (an epoch policy: per unique
 * epoch). */
typedef struct {
  uint64_t signature;
  uint32_t kind;             /* graph_op_kind */
  uint32_t pareto_first;     /* this op's Pareto points: [first, first+count) */
  uint32_t pareto_count;     /* >= 1 */
  uint64_t evaluations;      /* (op, plan) evaluations the search spent on it */
  char name[STORE_NAME_LEN]; /* e.g. "attn.qkv_proj" (one of the names it had) */
} store_op_rec;

/* pareto: one Pareto point of one op (time and energy of one instance). */
typedef struct {
  uint32_t op; /* index into ops */
  uint8_t states[STORE_NSTATE];
  double time_ns;
  double energy_nj;
  double energy_by_slot_nj[STORE_NENERGY];
} store_pareto_rec;

/* buckets: one compiled (or not) bucket of the grid. */
typedef struct {
  uint8_t phase;       /* STORE_PHASE_* */
  uint8_t status;      /* STORE_BUCKET_* */
  uint8_t budget;      /* STORE_BUDGET_*: what the walk's times and the plans'
                          budgets measure (strict: op time; paper: critical path) */
  uint64_t input_hash; /* hash of everything the bucket's plans depend on (its
                          ops' signatures and multiplicities, slacks, options):
                          a rerun re-walks the bucket only when it changes */
  int32_t batch;
  int32_t seq;
  double t_nodvfs_ns;        /* NoDVFS time of one forward pass */
  double t_peak_ns;          /* eNPU pipeline at all-peak */
  double e_nodvfs_nj;        /* NoDVFS energy of one forward pass */
  double walk_start_time_ns; /* every op at its fastest point: the walk's prefix 0 */
  double walk_start_energy_nj;
  uint32_t ops_first, ops_count;   /* bucket_ops range */
  uint64_t walk_first, walk_count; /* walk range */
  uint32_t plan_first, plan_count; /* plans range (one per stored slack) */
  char message[STORE_MSG_LEN];     /* why a bucket is infeasible/failed; on an ok bucket
                                      over HBM, its capacity note (offload/ignore); "" when
                                      it fits */
} store_bucket_rec;

/* bucket_ops: the ops of one bucket and how many instances of each run in a pass. */
typedef struct {
  uint32_t bucket;
  uint32_t op;           /* index into ops; strictly increasing within a bucket */
  uint64_t multiplicity; /* >= 1 */
} store_bucket_op_rec;

/* walk: one step of a bucket's request-level walk: `instances` instances of `op` move
 * to Pareto point `pareto`; the cumulative columns hold the totals after the step (time
 * in the bucket's budget measure, like the Pareto points'). */
typedef struct {
  uint32_t bucket;
  uint32_t op;        /* index into ops (an op of this bucket) */
  uint32_t pareto;    /* new Pareto point, inside the op's range */
  uint64_t instances; /* >= 1 */
  double time_ns;     /* cumulative after this step */
  double energy_nj;
} store_walk_rec;

/* plans: the finalised plan of one bucket at one stored slack (a walk prefix,
 * re-timed on the real operator order with transition costs). */
typedef struct {
  uint32_t bucket;
  uint8_t budget;   /* STORE_BUDGET_*, its bucket's */
  double slack;     /* fraction of T_nodvfs, e.g. 0.05 */
  double budget_ns; /* strict: max(T_nodvfs, T_peak) + slack·T_nodvfs;
                       paper: (1 + slack)·T_nodvfs */
  double time_ns;   /* with V/f transitions, domain crossings, pipeline fill */
  double energy_nj;
  double cp_time_ns;         /* critical-path time (what a paper budget constrains) */
  double overhead_pct;       /* 100 · (time_ns − cp_time_ns) / t_nodvfs_ns */
  double paper_overhead_pct; /* the paper's (§4.4): V/f transitions and the crossings' loop
                                throughput loss, without the fill/drain in overhead_pct
                                (search.h) */
  double lower_bound_nj;
  double savings_vs_nodvfs;               /* 1 - energy_nj / e_nodvfs_nj */
  uint64_t walk_prefix;                   /* steps of the bucket's walk applied, or STORE_NO_PREFIX */
  uint64_t states_first, states_count;    /* plan_states range */
  double regulator_loss_nj[STORE_NSTATE]; /* energy lost in the regulators, per component
                                             (SA, VU, SRAM, HBM, ICI), inside energy_nj */
  uint8_t gated;                          /* 1: priced with power gating (pg policies) */
  double gates;                           /* gate events of the pass */
} store_plan_rec;

/* plan_states: the plan's ops as runs of instances. A plan's rows follow its bucket's ops
 * (bucket_ops order); an op's rows follow its instances (layer order; graph ops that
 * share the store op one after the other) and their `instances` add up to its
 * multiplicity. A walk-prefix plan has at most two runs per op (lead, then trail). */
typedef struct {
  uint32_t plan;   /* index into plans */
  uint32_t op;     /* index into ops */
  uint32_t pareto; /* Pareto point used, or STORE_NO_INDEX */
  uint8_t states[STORE_NSTATE];
  uint64_t instances; /* >= 1: the run's length */
} store_plan_state_rec;

/* validation: one re-simulated plan of a bucket sampled by `enpu validate` (validate.h),
 * in sample order; replaced as a whole by each validation. */
typedef struct {
  uint32_t bucket;  /* index into buckets */
  uint32_t plan;    /* index into plans (a plan of that bucket) */
  uint32_t stratum; /* sample stratum: (phase · 3 + batch range) · 3 + seq range */
  uint8_t phase;    /* the bucket's key, for readers of this table alone */
  uint8_t pass;     /* 1: every check held */
  int32_t batch, seq;
  double slack, budget_ns;
  double stored_time_ns, stored_energy_nj; /* the plans row */
  double sim_time_ns, sim_energy_nj;       /* re-simulated; NaN when it could not run */
  char message[STORE_MSG_LEN];             /* why it failed; "" when it passed */
} store_validation_rec;

/* validation_replay: the trace replay of the policy run by the last validation (one row). */
typedef struct {
  uint64_t requests, served, slo_met;
  double slo_attainment;                                 /* slo_met / requests */
  double energy_nj, prefill_energy_nj, decode_energy_nj; /* busy + idle chips */
  double savings_vs_nodvfs; /* 1 - energy / nodvfs's energy on the trace; NaN without nodvfs */
  double ttft_p50_ns, ttft_p99_ns, tpot_p50_ns, tpot_p99_ns;
  uint64_t batches, slowed, locked; /* both phases: run, on a slower plan, locked to peak */
  uint64_t seed;                    /* of the sample */
  uint32_t sample;                  /* buckets per policy asked for */
  double tolerance;                 /* relative, of the time and energy comparison */
  char trace[STORE_MSG_LEN];        /* the trace file, relative to the store's directory */
} store_validation_replay_rec;

/* Provenance, stored as root attributes. Hashes are enpu_hash64 of the inputs. */
typedef struct {
  uint64_t cost_model_hash, chip_hash, model_hash, job_hash;
  const char *tool_version;                                     /* e.g. "0.1.0" */
  const char *job_json, *model_json, *chip_json, *cluster_json; /* may be NULL */
  const char *added_buckets_json; /* buckets added with `enpu farm --add-buckets`: a JSON
                                     array of {"phase","batch","seq"}; may be NULL */
} store_provenance;

/* A column of a record: the C member it is, and how it is laid out (a scalar or an array
 * of `count` numbers, or a string of `count` bytes). STORE_FIELD derives the kind and
 * count from the member's C type (uint8_t, uint32_t, int32_t, uint64_t, double, an array
 * of one of them, or char[N]), so a column cannot disagree with its struct, and any other
 * type does not compile. The store's tables (store_schema.c) and the farm's result codec
 * describe their records with it. */
typedef enum { STORE_F_U8, STORE_F_U32, STORE_F_I32, STORE_F_U64, STORE_F_F64, STORE_F_STR } store_field_kind;

typedef struct {
  const char *name;
  size_t offset; /* in the C record */
  store_field_kind kind;
  size_t count; /* array length (1 = scalar), or string length for STR */
} store_field;

#define STORE_FIELD_KIND_(x) \
  _Generic((x), uint8_t: STORE_F_U8, uint8_t *: STORE_F_U8, uint32_t: STORE_F_U32,                  \
           int32_t: STORE_F_I32, uint64_t: STORE_F_U64, uint64_t *: STORE_F_U64,                    \
           double: STORE_F_F64, double *: STORE_F_F64, char *: STORE_F_STR)
#define STORE_FIELD_ELEM_BYTES_(x) \
  _Generic((x), uint8_t * : 1, uint64_t * : 8, double * : 8, char * : 1, default : sizeof(x))
#define STORE_FIELD(rec, member)                                                 \
  {                                                                              \
#member, offsetof(rec, member), STORE_FIELD_KIND_(((rec *)0)->member),       \
        sizeof(((rec *)0)->member) / STORE_FIELD_ELEM_BYTES_(((rec *)0)->member) \
  }

typedef enum {
  STORE_T_OPS = 0,
  STORE_T_PARETO,
  STORE_T_BUCKETS,
  STORE_T_BUCKET_OPS,
  STORE_T_WALK,
  STORE_T_PLANS,
  STORE_T_PLAN_STATES,
  STORE_T_VALIDATION, /* written by `enpu validate`; absent (empty) otherwise */
  STORE_T_VALIDATION_REPLAY,
  STORE_NTABLE
} store_table;

/* The HDF5 dataset name of a table ("ops", "walk", ...), or NULL out of range. */
const char *store_table_name(store_table t);

/* Register the zstd filter (id 32015) with HDF5 in this process; idempotent.
 * @return 0, or ENPU_ERR_INTERNAL when HDF5 refuses it. */
int store_zstd_register(enpu_err *err);

/* ---------------------------------------------------------------------------------
 * The writer's lock (store_lock.c): one writer per store. Whoever publishes a store
 * holds it from before reading the store it rewrites until after publishing; readers
 * never need it. */

typedef struct store_lock store_lock;

/* How long a writer waits for the lock by default: long enough for a killed farm's
 * ranks to go away, short enough that a writer refused by a running farm says so soon. */
#define STORE_LOCK_WAIT_S 30.0

/* The files beside a store, named "<store><suffix>": the writer's new file (renamed over
 * the store), a farm's journal and the writer lock. Their names are part of the failure
 * semantics (the lock refuses links planted at each). */
typedef enum { STORE_SIBLING_TMP = 0, STORE_SIBLING_JOURNAL = 1, STORE_SIBLING_LOCK = 2 } store_sibling;
/* The path of sibling `s` of the store at `store` into out.
 * @return 0, or ENPU_ERR_RANGE when it does not fit in len bytes (out is then ""). */
int store_sibling_path(const char *store, store_sibling s, char *out, size_t len);

/* The path a store at `path` lives at: symbolic links followed (also a link to a store
 * not written yet), the directory made absolute. The directory must exist.
 * @return 0, ENPU_ERR_IO (no such directory, a link loop), ENPU_ERR_RANGE, ENPU_ERR_INVALID. */
int store_resolve_path(const char *path, char *out, size_t cap, enpu_err *err);

/* Take the exclusive lock of the store at `path` (resolved as above; the lock file is
 * `<resolved>.lock`), recording this process (pid, host, time, `command`) as its holder.
 * While another process holds it, wait up to wait_s seconds (a note on `log`, if any,
 * names the holder).
 * @return 0; ENPU_ERR_ENV when the store stays locked (the message names the holder) or
 * the lock file cannot be made; as store_resolve_path. */
int store_lock_acquire(const char *path, const char *command, double wait_s, FILE *log, store_lock **out,
                       enpu_err *err);
/* As store_lock_acquire, and a wait ends early once *stop is nonzero (a caller's stop
 * signal flag; NULL: never): ENPU_ERR_STOPPED naming the signal, nothing taken. A
 * process that turns stop signals into a flag would otherwise sit out the whole wait. */
int store_lock_acquire_until(const char *path, const char *command, double wait_s,
                             const volatile sig_atomic_t *stop, FILE *log, store_lock **out, enpu_err *err);
/* The resolved store path the lock protects. */
const char *store_lock_path(const store_lock *l);
void store_lock_release(store_lock *l); /* NULL is a no-op */

typedef struct store_writer store_writer;

/* Start writing the store that `lock` protects (published at store_lock_path): the file
 * is built in memory and written to `<path>.tmp` only at commit; `path` is untouched
 * until then. zstd_level 0 = the default level; level < 0 disables compression (for size
 * checks). The lock must stay held until store_writer_free.
 * @return 0, or ENPU_ERR_INTERNAL/NOMEM with a message. */
int store_writer_create(const store_lock *lock, const store_provenance *prov, int zstd_level, store_writer **out,
                        enpu_err *err);

/* Append n records of `table` (an array of the matching store_*_rec) to the policy's
 * table, creating /policies/<policy>/ on first use. Records are written as given.
 * @return 0, or ENPU_ERR_INVALID (bad policy name/table) / ENPU_ERR_IO. */
int store_writer_append(store_writer *w, const char *policy, store_table table, const void *records, size_t n,
                        enpu_err *err);

/* Add the checksums, write the file image to `<path>.tmp`, fsync it, rename it over
 * `path` and fsync the directory. A reader that opened the previous store keeps reading
 * it. After this call (even on failure) only store_writer_free may be called.
 * @return 0, or ENPU_ERR_ENV (no space, I/O error: the message says which) / ENPU_ERR_IO
 * with a message; on failure the old store, if any, is intact and no .tmp is left. */
int store_writer_commit(store_writer *w, enpu_err *err);

/* Free the writer; an uncommitted writer removes its temporary file. NULL is a no-op. */
void store_writer_free(store_writer *w);

/* ---------------------------------------------------------------------------------
 * Whole-store reading (farm resume/incremental, `enpu store info/diff`). Same checks as
 * planstore_open: a corrupt or crafted store is ENPU_ERR_FORMAT, never a crash. */

typedef struct {
  char name[STORE_NAME_LEN];
  store_op_rec *ops;
  size_t nops;
  store_pareto_rec *pareto;
  size_t npareto;
  store_bucket_rec *buckets;
  size_t nbuckets;
  store_bucket_op_rec *bucket_ops;
  size_t nbucket_ops;
  store_walk_rec *walk;
  size_t nwalk;
  store_plan_rec *plans;
  size_t nplans;
  store_plan_state_rec *plan_states;
  size_t nplan_states;
  store_validation_rec *validation;
  size_t nvalidation; /* store_load only */
  store_validation_replay_rec *validation_replay;
  size_t nvalidation_replay; /* idem */
} store_policy_tables;

/* Table t of a loaded policy as (records of the matching store_*_rec, *rows), e.g. to
 * write it again with store_writer_append; NULL and 0 rows when t is out of range. */
const void *store_policy_table(const store_policy_tables *p, store_table t, size_t *rows);

typedef struct {
  uint32_t format_version;
  uint64_t cost_model_hash, chip_hash, model_hash, job_hash;
  char *tool_version, *created_utc;                                            /* malloc'd; "" when absent */
  char *job_json, *model_json, *chip_json, *cluster_json, *added_buckets_json; /* or NULL */
  store_policy_tables *policies;                                               /* in name order */
  size_t npolicies;
} store_contents;

/* Load and check the whole store, every table's checksum and the provenance checksum
 * included (`enpu store verify` is this call).
 * @return 0, ENPU_ERR_IO (cannot open), ENPU_ERR_FORMAT (not a plan store, another
 * format_version, damaged: the message names the policy and table), ENPU_ERR_NOMEM. */
int store_load(const char *path, store_contents **out, enpu_err *err);

/* Turn HDF5's own error printing off for the rest of the process (a program's choice,
 * never a library's: the enpu binary calls it first). Every error of the store's readers
 * and writers comes back as an enpu_err naming the file and the table; HDF5's stacks
 * repeat it, and HDF5 1.10.8 prints "infinite loop closing library" at exit after an
 * object header failed to load (a block of its free lists it leaks itself, no identifier
 * of ours: tests/unit/test_store_leaks.c). */
void store_hdf5_quiet(void);

/* Is `path` a plan store at all: an HDF5 file with a readable format_version (of any
 * value, damaged or not)? Tells a damaged or old store, which the farm recomputes, from
 * a file that is none, which it must not overwrite.
 * @return 0 with *format_version, ENPU_ERR_FORMAT (not a plan store), ENPU_ERR_IO. */
int store_probe(const char *path, uint32_t *format_version, enpu_err *err);
void store_contents_free(store_contents *c); /* NULL is a no-op */
/* The HDF5 this build was compiled against and the one loaded at run time ("1.10.8,
 * running 1.10.8") into out[len]. */
void store_hdf5_version(char *out, size_t len);

/* The names of a store's policies in name order (the order every reader numbers them),
 * without reading their tables: for a command choosing which policy to load.
 * @return 0 with *n names in names[0..cap), ENPU_ERR_RANGE when there are more than cap,
 * or as store_probe for a file that is no readable store of this format_version. */
int store_policy_names(const char *path, char (*names)[STORE_NAME_LEN], size_t cap, size_t *n, enpu_err *err);
/* A hash of the store's content as `enpu store diff` sees it: the provenance hashes and
 * input documents, the added buckets, and every table of every policy (by its checksum),
 * never the creation time or the tool version. Two stores with the same content have the
 * same hash, whatever wrote them when; a pipeline keys what it derives from a store on it.
 * @return 0, or ENPU_ERR_NOMEM. */
int store_content_hash(const store_contents *c, uint64_t *out, enpu_err *err);
/* store_load of the provenance only (no policies: npolicies 0), for a check of what a
 * store was compiled for. @return as store_load. */
int store_load_provenance(const char *path, store_contents **out, enpu_err *err);

/* One op's position on its walk: `lead_instances` of its `instances` sit on Pareto point
 * `lead`, the rest on `trail` (a point it left, never revisited). Points are any
 * increasing numbering of the op's Pareto points (the store's rows or an op's own). */
typedef struct {
  uint32_t lead, trail;
  uint64_t lead_instances, instances;
} store_walk_pos;

/* Why a walk step breaks the lead/trail rule (store_walk_step). */
typedef enum {
  STORE_WALK_OK = 0,
  STORE_WALK_BACKWARD = -1, /* to a point before the lead, or no instances */
  STORE_WALK_OVERFLOW = -2, /* more instances to the lead than remain on the trail */
  STORE_WALK_EARLY = -3,    /* to a later point before every instance reached the lead */
} store_walk_status;

/* The walk's lead/trail rule, the one definition the reader replays and the farm checks
 * before it writes: a step to the lead point adds instances there; a step to a later
 * point is allowed only once every instance is at the lead, and makes the lead the trail.
 * @return STORE_WALK_OK with *p moved, or the rule broken (*p unchanged). */
store_walk_status store_walk_step(store_walk_pos *p, uint32_t to, uint64_t moved);

/* Replay the first `prefix` walk steps of bucket `bi` (a bucket of a loaded, validated policy)
 * into st[0..ops_count): the one definition of what a walk prefix means.
 * @return 0, or ENPU_ERR_FORMAT for a walk that breaks the rules of schemas/planstore.md. */
int store_walk_replay(const store_policy_tables *p, uint32_t bi, uint64_t prefix, planstore_op_states *st,
                      enpu_err *err);

/* ---------------------------------------------------------------------------------
 * Validation rows across a rewrite (store_carry.c). A validation row names the plan it
 * re-simulated by its rows (bucket, plan); a writer that rebuilds a store from results
 * (the farm's checkpoint) may move, change or remove plans. A row stays true while its
 * plan is unchanged — its bucket's (phase, batch, seq) and input_hash, the plan's
 * position among the bucket's plans, its record and plan-state runs, all as they were —
 * and is carried into the new store with `bucket` and `plan` re-indexed; the others are
 * dropped. A replay row depends on every plan of every policy (a policy's replay serves
 * requests from all its plans, shares one horizon with the other policies' and compares
 * with nodvfs's), so replay rows are carried only when no plan table of any policy
 * changed and no policy was added or removed. */

typedef struct store_validation_set store_validation_set;

typedef struct {
  size_t kept, dropped;               /* validation rows */
  size_t replay_kept, replay_dropped; /* validation_replay rows */
} store_validation_counts;

/* What the validation tables of a loaded store (store_load) validate.
 * @return 0, or ENPU_ERR_NOMEM. */
int store_validation_set_create(const store_contents *c, store_validation_set **out, enpu_err *err);
void store_validation_set_free(store_validation_set *v); /* NULL is a no-op */

/* Append to `w` the validation rows of policy t->name whose plans `t` (the tables just
 * appended to `w` for that policy) holds unchanged, re-indexed into `t`, in their stored
 * order; add them to n->kept and the policy's other rows to n->dropped. Call it once per
 * policy written; a NULL set is a no-op.
 * @return 0, or ENPU_ERR_NOMEM / as store_writer_append. */
int store_validation_carry(const store_validation_set *v, store_writer *w, const store_policy_tables *t,
                           store_validation_counts *n, enpu_err *err);

/* After every policy's tables and store_validation_carry, before store_writer_commit:
 * append every replay row when `w` holds the plan tables of the loaded store unchanged
 * (n->replay_kept), else count them in n->replay_dropped; the validation rows of
 * policies not written count in n->dropped. A NULL set is a no-op.
 * @return 0, or ENPU_ERR_NOMEM / as store_writer_append. */
int store_validation_carry_replay(const store_validation_set *v, store_writer *w, store_validation_counts *n,
                                  enpu_err *err);

/* ---------------------------------------------------------------------------------
 * Bucket bundles (store_bundle.c): one bucket of one policy with what it owns — its ops
 * and their multiplicities, its walk, its slack plans and their plan-state runs — in
 * indices of its own, the shape a bucket has before it has rows in a store (the farm's
 * results and journal). A policy builder assigns rows when a bundle is appended;
 * store_bucket_bundle_read gives the bundle back from a loaded policy.
 *
 * Indices inside a bundle: walk and plan-state `op` index ops[] (signatures strictly
 * ascending), `pareto` is the position of the point within that op's Pareto points
 * (plan states: or STORE_NO_INDEX), plan-state `plan` indexes plans[], a plan's
 * states_first counts from states[0]. The `bucket` columns and the bucket record's row
 * ranges (*_first, *_count) are unused (0). */

typedef struct {
  uint64_t signature;    /* ops.signature */
  uint64_t multiplicity; /* instances in a pass, >= 1 */
} store_bundle_op;

typedef struct {
  store_bucket_rec bucket; /* key, status, budget, input_hash, times, message */
  uint32_t nops;
  store_bundle_op *ops;
  uint64_t nwalk;
  store_walk_rec *walk;
  uint32_t nplans;
  store_plan_rec *plans;
  uint64_t nstates;
  store_plan_state_rec *states;
} store_bucket_bundle;

/* Free the arrays and zero the bundle; NULL is a no-op. */
void store_bucket_bundle_free(store_bucket_bundle *b);

/* The rules every bundle keeps: ops ascending with >= 1 instance; every index inside the
 * bundle's arrays, and each point inside its op's npoints[op] points when npoints is
 * given; each plan's walk prefix inside the walk (or STORE_NO_PREFIX), its states inside
 * states[], its budget mode the bucket's; walk steps with instances that keep the
 * lead/trail rule (store_walk_step) from every op's fastest point.
 * @return 0, or ENPU_ERR_FORMAT naming the bucket and the first rule broken; ENPU_ERR_NOMEM. */
int store_bucket_bundle_check(const store_bucket_bundle *b, const uint32_t *npoints, enpu_err *err);

/* Bucket row bi of a loaded, validated policy (store_load: with its plan_states) as a
 * bundle owned by the caller (a pending bucket's has no ops, walk or plans).
 * @return 0, ENPU_ERR_FORMAT (no row bi, two ops of the bucket share a signature, or an
 * index is not the bucket's), ENPU_ERR_INVALID (plan_states not loaded), ENPU_ERR_NOMEM;
 * on failure *out is empty. */
int store_bucket_bundle_read(const store_policy_tables *p, uint32_t bi, store_bucket_bundle *out, enpu_err *err);

/* A policy's tables built in memory: ops first, then buckets as bundles, each given the
 * next rows of every table; then written with store_writer_append_tables. */
typedef struct store_policy_builder store_policy_builder;

/* @return 0, ENPU_ERR_INVALID (a name the writer would refuse), ENPU_ERR_NOMEM. */
int store_policy_builder_create(const char *policy, store_policy_builder **out, enpu_err *err);
void store_policy_builder_free(store_policy_builder *b); /* NULL is a no-op */

/* Append an op (its signature, kind, evaluations, name; the Pareto range is set here)
 * and its npoints >= 1 points (their `op` column set here), signatures strictly
 * ascending from call to call. The name is written zero-padded.
 * @return 0, ENPU_ERR_INVALID (no points, a signature not above the last),
 * ENPU_ERR_RANGE (more than 2^32 points), ENPU_ERR_NOMEM. */
int store_policy_builder_add_op(store_policy_builder *b, const store_op_rec *op, const store_pareto_rec *points,
                                uint32_t npoints, enpu_err *err);

/* Append a bundle as the next bucket row, with its bucket_ops, walk, plans and
 * plan_states rows after those of the buckets appended before (indices mapped to rows,
 * string columns zero-padded).
 * @return 1 when appended; 0 when one of its ops is not in the builder (nothing
 * appended); ENPU_ERR_FORMAT (store_bucket_bundle_check refuses it), ENPU_ERR_RANGE
 * (more than 2^32 rows in a u32-indexed table), ENPU_ERR_NOMEM. */
int store_bucket_bundle_append(store_policy_builder *b, const store_bucket_bundle *bundle, enpu_err *err);

/* The tables built so far (named after the builder's policy). */
const store_policy_tables *store_policy_builder_tables(const store_policy_builder *b);

/* Append every table of t that has rows to the writer's policy t->name.
 * @return as store_writer_append. */
int store_writer_append_tables(store_writer *w, const store_policy_tables *t, enpu_err *err);

/* Sizes of one table: uncompressed (rows x the file's row bytes) and as stored in the
 * file (H5Dget_storage_size, after shuffle + zstd). */
typedef struct {
  uint64_t table_bytes, stored_bytes;
} store_table_size;

/* The sizes of every table of the store at `path`, whose contents `c` were loaded from
 * it: out[i][t] for policy c->policies[i] and table t (zero for a missing table).
 * @return 0, or ENPU_ERR_IO/FORMAT when the file or a table cannot be opened. */
int store_sizes(const char *path, const store_contents *c, store_table_size (*out)[STORE_NTABLE], enpu_err *err);

/* ---------------------------------------------------------------------------------
 * Comparing two stores by content (`enpu store diff`). Rows are matched by key — a
 * policy by name, a bucket by (phase, batch, seq), an op by signature — and compared on
 * what they mean (indices into other tables are followed: an op by its signature, a
 * Pareto point by its position in its op's range); then every table is compared row by
 * row in full, so a store holding the same content in another order differs too.
 * created_utc and tool_version are not content. */

typedef enum {
  STORE_DIFF_PROVENANCE = 0, /* a root attribute: hashes, the input JSON documents */
  STORE_DIFF_POLICY,         /* a policy only in one store */
  STORE_DIFF_BUCKET,
  STORE_DIFF_OP,
  STORE_DIFF_TABLE /* row-by-row: row count, or the first row that differs */
} store_diff_what;

typedef enum { STORE_DIFF_ADDED = 0, STORE_DIFF_REMOVED, STORE_DIFF_CHANGED } store_diff_kind;

typedef struct {
  store_diff_what what;
  store_diff_kind kind; /* added = only in B, removed = only in A */
  const char *policy;   /* NULL for provenance */
  uint8_t phase;        /* STORE_DIFF_BUCKET: the key */
  int32_t batch, seq;
  uint64_t signature; /* STORE_DIFF_OP: the key, and one of its names */
  const char *name;
  store_table table;               /* STORE_DIFF_TABLE */
  uint64_t rows_a, rows_b;         /*   row counts */
  uint64_t first_row, rows_differ; /*   equal counts: first differing row, how many */
  char fields[256];                /* changed: the differing columns or parts ("walk",
                                      "pareto", "plans"), comma-separated; provenance:
                                      the attribute */
} store_diff_entry;

/* Call `fn` (may be NULL) once per difference between a and b: provenance first, then
 * policies only in one store, then per common policy its buckets, ops and tables.
 * *count receives the number of differences (0: the contents are identical).
 * @return 0, or ENPU_ERR_NOMEM. */
int store_diff(const store_contents *a, const store_contents *b, void (*fn)(const store_diff_entry *d, void *user),
               void *user, size_t *count, enpu_err *err);

#endif /* ENPU_STORE_H */
