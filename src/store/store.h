/* store.h — the HDF5 plan store, writer side: one plain record struct per table of
 * schemas/planstore.md, provenance, and a writer that publishes the store atomically.
 * The reader API is planstore.h (installed as <enpu/planstore.h>).
 *
 * Invariants of a store (checked by the reader, see planstore.c):
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

#include <stddef.h>
#include <stdint.h>

#include "common.h"

#define STORE_FORMAT_VERSION 1u
#define STORE_NSTATE 5     /* frequency states per plan: SA, VU, SRAM, HBM, ICI */
#define STORE_NENERGY 7    /* energy slots: SA, VU, SRAM, HBM, ICI, FE, other */
#define STORE_NAME_LEN 64  /* fixed string columns (op and policy names) */
#define STORE_MSG_LEN 160  /* bucket status message */
#define STORE_ZSTD_FILTER_ID 32015 /* the registered Zstandard HDF5 filter */
#define STORE_NO_INDEX UINT32_MAX  /* plan_states row that is not a Pareto point */

/* Phases and bucket status, as stored (u8 columns). Phase numbers equal config_phase. */
enum { STORE_PHASE_PREFILL = 0, STORE_PHASE_DECODE = 1 };
enum { STORE_BUCKET_OK = 0, STORE_BUCKET_INFEASIBLE_CAPACITY = 1, STORE_BUCKET_FAILED = 2 };

/* ops: one row per unique operator signature of the policy. */
typedef struct {
  uint64_t signature;
  uint32_t kind;              /* graph_op_kind */
  uint32_t pareto_first;      /* this op's Pareto points: [first, first+count) */
  uint32_t pareto_count;      /* >= 1 */
  uint64_t evaluations;       /* (op, plan) evaluations the search spent on it */
  char name[STORE_NAME_LEN];  /* e.g. "attn.qkv_proj" (one of the names it had) */
} store_op_rec;

/* pareto: one Pareto point of one op (time and energy of one instance). */
typedef struct {
  uint32_t op;                /* index into ops */
  uint8_t states[STORE_NSTATE];
  double time_ns;
  double energy_nj;
  double energy_by_slot_nj[STORE_NENERGY];
} store_pareto_rec;

/* buckets: one compiled (or not) bucket of the grid. */
typedef struct {
  uint8_t phase;              /* STORE_PHASE_* */
  uint8_t status;             /* STORE_BUCKET_* */
  uint64_t input_hash;        /* hash of everything the bucket's plans depend on (its
                                 ops' signatures and multiplicities, slacks, options):
                                 a rerun re-walks the bucket only when it changes */
  int32_t batch;
  int32_t seq;
  double t_nodvfs_ns;         /* NoDVFS time of one forward pass */
  double t_peak_ns;           /* eNPU pipeline at all-peak */
  double e_nodvfs_nj;         /* NoDVFS energy of one forward pass */
  double walk_start_time_ns;  /* every op at its fastest point: the walk's prefix 0 */
  double walk_start_energy_nj;
  uint32_t ops_first, ops_count;   /* bucket_ops range */
  uint64_t walk_first, walk_count; /* walk range */
  uint32_t plan_first, plan_count; /* plans range (one per stored slack) */
  char message[STORE_MSG_LEN];     /* why a bucket is infeasible/failed; "" when ok */
} store_bucket_rec;

/* bucket_ops: the ops of one bucket and how many instances of each run in a pass. */
typedef struct {
  uint32_t bucket;
  uint32_t op;                /* index into ops; strictly increasing within a bucket */
  uint64_t multiplicity;      /* >= 1 */
} store_bucket_op_rec;

/* walk: one step of a bucket's request-level walk: `instances` instances of `op` move
 * to Pareto point `pareto`; the cumulative columns hold the totals after the step. */
typedef struct {
  uint32_t bucket;
  uint32_t op;                /* index into ops (an op of this bucket) */
  uint32_t pareto;            /* new Pareto point, inside the op's range */
  uint64_t instances;         /* >= 1 */
  double time_ns;             /* cumulative after this step */
  double energy_nj;
} store_walk_rec;

/* plans: the finalised plan of one bucket at one stored slack (a walk prefix,
 * re-timed on the real operator order with transition costs). */
typedef struct {
  uint32_t bucket;
  double slack;               /* fraction of T_nodvfs, e.g. 0.05 */
  double budget_ns;
  double time_ns;
  double energy_nj;
  double lower_bound_nj;
  double savings_vs_nodvfs;   /* 1 - energy_nj / e_nodvfs_nj */
  uint64_t walk_prefix;       /* steps of the bucket's walk applied */
  uint64_t states_first, states_count; /* plan_states range, real operator order */
} store_plan_rec;

/* plan_states: per operator of a plan in real execution order. */
typedef struct {
  uint32_t plan;              /* index into plans */
  uint32_t op;                /* index into ops */
  uint32_t pareto;            /* Pareto point used, or STORE_NO_INDEX */
  uint8_t states[STORE_NSTATE];
} store_plan_state_rec;

/* Provenance, stored as root attributes. Hashes are enpu_hash64 of the inputs. */
typedef struct {
  uint64_t cost_model_hash, chip_hash, model_hash, job_hash;
  const char *tool_version;   /* e.g. "0.1.0" */
  const char *job_json, *model_json, *chip_json, *cluster_json; /* may be NULL */
  const char *added_buckets_json; /* buckets added with `enpu farm --add-buckets`: a JSON
                                     array of {"phase","batch","seq"}; may be NULL */
} store_provenance;

typedef enum {
  STORE_T_OPS = 0,
  STORE_T_PARETO,
  STORE_T_BUCKETS,
  STORE_T_BUCKET_OPS,
  STORE_T_WALK,
  STORE_T_PLANS,
  STORE_T_PLAN_STATES,
  STORE_NTABLE
} store_table;

/* Register the zstd filter (id 32015) with HDF5 in this process; idempotent.
 * @return 0, or ENPU_ERR_INTERNAL when HDF5 refuses it. */
int store_zstd_register(enpu_err *err);

typedef struct store_writer store_writer;

/* Start writing the store that will be published at `path`: the data goes to
 * `<path>.tmp` (truncated if it exists); `path` is untouched until store_writer_commit.
 * zstd_level 0 = the default level; level < 0 disables compression (for size checks).
 * @return 0, or ENPU_ERR_IO/INTERNAL with a message. */
int store_writer_create(const char *path, const store_provenance *prov, int zstd_level,
                        store_writer **out, enpu_err *err);

/* Append n records of `table` (an array of the matching store_*_rec) to the policy's
 * table, creating /policies/<policy>/ on first use. Records are written as given.
 * @return 0, or ENPU_ERR_INVALID (bad policy name/table) / ENPU_ERR_IO. */
int store_writer_append(store_writer *w, const char *policy, store_table table,
                        const void *records, size_t n, enpu_err *err);

/* Close the temporary file, fsync it, rename it over `path` and fsync the directory.
 * A reader that opened the previous store keeps reading it. After this call (even on
 * failure) only store_writer_free may be called.
 * @return 0, or ENPU_ERR_IO with a message (the old store, if any, is intact). */
int store_writer_commit(store_writer *w, enpu_err *err);

/* Free the writer; an uncommitted writer removes its temporary file. NULL is a no-op. */
void store_writer_free(store_writer *w);

/* ---------------------------------------------------------------------------------
 * Whole-store reading (farm resume/incremental, `enpu store info/diff`). Same checks as
 * planstore_open: a corrupt or crafted store is ENPU_ERR_FORMAT, never a crash. */

typedef struct {
  char name[STORE_NAME_LEN];
  store_op_rec *ops;                 size_t nops;
  store_pareto_rec *pareto;          size_t npareto;
  store_bucket_rec *buckets;         size_t nbuckets;
  store_bucket_op_rec *bucket_ops;   size_t nbucket_ops;
  store_walk_rec *walk;              size_t nwalk;
  store_plan_rec *plans;             size_t nplans;
  store_plan_state_rec *plan_states; size_t nplan_states;
} store_policy_tables;

typedef struct {
  uint32_t format_version;
  uint64_t cost_model_hash, chip_hash, model_hash, job_hash;
  char *tool_version, *created_utc;  /* malloc'd; "" when absent */
  char *job_json, *model_json, *chip_json, *cluster_json, *added_buckets_json; /* or NULL */
  store_policy_tables *policies;     /* in name order */
  size_t npolicies;
} store_contents;

/* @return 0, ENPU_ERR_IO (cannot open), ENPU_ERR_FORMAT, ENPU_ERR_NOMEM. */
int store_load(const char *path, store_contents **out, enpu_err *err);
void store_contents_free(store_contents *c); /* NULL is a no-op */

#endif /* ENPU_STORE_H */
