/* store_schema.c — the columns of every store table, their HDF5 compound types, and
 * where a policy's rows of each table live in memory (store_table_slot).
 * The column lists are the single source of the layout: the writer and the reader build their
 * types from it, and schemas/planstore.md documents it column by column (keep them in
 * step; format_version changes when a column changes meaning or type). */
#include <stddef.h>

#include "store_internal.h"

/* Each table's columns in file order (one macro per record type, the kind and length of
 * every column derived from its C member by STORE_FIELD). */
#define OP(m) STORE_FIELD(store_op_rec, m)
#define POINT(m) STORE_FIELD(store_pareto_rec, m)
#define BUCKET(m) STORE_FIELD(store_bucket_rec, m)
#define BUCKET_OP(m) STORE_FIELD(store_bucket_op_rec, m)
#define WALK(m) STORE_FIELD(store_walk_rec, m)
#define PLAN(m) STORE_FIELD(store_plan_rec, m)
#define PLAN_STATE(m) STORE_FIELD(store_plan_state_rec, m)
#define CHECK(m) STORE_FIELD(store_validation_rec, m)
#define REPLAY(m) STORE_FIELD(store_validation_replay_rec, m)

/* clang-format off */
static const store_field ops_fields[] = {OP(signature), OP(kind), OP(pareto_first), OP(pareto_count),
                                         OP(evaluations), OP(name)};
static const store_field pareto_fields[] = {POINT(op), POINT(states), POINT(time_ns), POINT(energy_nj),
                                            POINT(energy_by_slot_nj)};
static const store_field bucket_fields[] = {
    BUCKET(phase), BUCKET(status), BUCKET(budget), BUCKET(batch), BUCKET(seq), BUCKET(t_nodvfs_ns),
    BUCKET(t_peak_ns), BUCKET(e_nodvfs_nj), BUCKET(walk_start_time_ns), BUCKET(walk_start_energy_nj),
    BUCKET(ops_first), BUCKET(ops_count), BUCKET(walk_first), BUCKET(walk_count), BUCKET(plan_first),
    BUCKET(plan_count), BUCKET(input_hash), BUCKET(message)};
static const store_field bucket_op_fields[] = {BUCKET_OP(bucket), BUCKET_OP(op), BUCKET_OP(multiplicity)};
static const store_field walk_fields[] = {WALK(bucket), WALK(op), WALK(pareto), WALK(instances), WALK(time_ns),
                                          WALK(energy_nj)};
static const store_field plan_fields[] = {
    PLAN(bucket), PLAN(budget), PLAN(slack), PLAN(budget_ns), PLAN(time_ns), PLAN(energy_nj), PLAN(cp_time_ns),
    PLAN(overhead_pct), PLAN(paper_overhead_pct), PLAN(lower_bound_nj), PLAN(savings_vs_nodvfs),
    PLAN(walk_prefix), PLAN(states_first), PLAN(states_count), PLAN(regulator_loss_nj), PLAN(gated), PLAN(gates)};
static const store_field plan_state_fields[] = {PLAN_STATE(plan), PLAN_STATE(op), PLAN_STATE(pareto),
                                                PLAN_STATE(states), PLAN_STATE(instances)};
static const store_field validation_fields[] = {
    CHECK(bucket), CHECK(plan), CHECK(stratum), CHECK(phase), CHECK(pass), CHECK(batch), CHECK(seq), CHECK(slack),
    CHECK(budget_ns), CHECK(stored_time_ns), CHECK(stored_energy_nj), CHECK(sim_time_ns), CHECK(sim_energy_nj),
    CHECK(message)};
static const store_field validation_replay_fields[] = {
    REPLAY(requests), REPLAY(served), REPLAY(slo_met), REPLAY(slo_attainment), REPLAY(energy_nj),
    REPLAY(prefill_energy_nj), REPLAY(decode_energy_nj), REPLAY(savings_vs_nodvfs), REPLAY(ttft_p50_ns),
    REPLAY(ttft_p99_ns), REPLAY(tpot_p50_ns), REPLAY(tpot_p99_ns), REPLAY(batches), REPLAY(slowed),
    REPLAY(locked), REPLAY(seed), REPLAY(sample), REPLAY(tolerance), REPLAY(trace)};

#define TABLE(name, rec, fields) {name, sizeof(rec), fields, sizeof fields / sizeof fields[0]}
/* clang-format on */
const store_table_desc store_tables[STORE_NTABLE] = {
    [STORE_T_OPS] = TABLE("ops", store_op_rec, ops_fields),
    [STORE_T_PARETO] = TABLE("pareto", store_pareto_rec, pareto_fields),
    [STORE_T_BUCKETS] = TABLE("buckets", store_bucket_rec, bucket_fields),
    [STORE_T_BUCKET_OPS] = TABLE("bucket_ops", store_bucket_op_rec, bucket_op_fields),
    [STORE_T_WALK] = TABLE("walk", store_walk_rec, walk_fields),
    [STORE_T_PLANS] = TABLE("plans", store_plan_rec, plan_fields),
    [STORE_T_PLAN_STATES] = TABLE("plan_states", store_plan_state_rec, plan_state_fields),
    [STORE_T_VALIDATION] = TABLE("validation", store_validation_rec, validation_fields),
    [STORE_T_VALIDATION_REPLAY] = TABLE("validation_replay", store_validation_replay_rec, validation_replay_fields),
};

const char *const store_root_hash_names[STORE_NROOT_HASHES] = {"cost_model_hash", "chip_hash", "model_hash",
                                                               "job_hash"};
const char *const store_root_string_names[STORE_NROOT_STRINGS] = {
    "tool_version", "created_utc", "job_json", "model_json", "chip_json", "cluster_json", STORE_ATTR_ADDED_BUCKETS};

const char *store_table_name(store_table t) { return (unsigned)t < STORE_NTABLE ? store_tables[t].name : NULL; }

void **store_table_slot(store_policy_tables *p, store_table t, size_t **rows) {
  switch (t) {
  case STORE_T_OPS: *rows = &p->nops; return (void **)&p->ops;
  case STORE_T_PARETO: *rows = &p->npareto; return (void **)&p->pareto;
  case STORE_T_BUCKETS: *rows = &p->nbuckets; return (void **)&p->buckets;
  case STORE_T_BUCKET_OPS: *rows = &p->nbucket_ops; return (void **)&p->bucket_ops;
  case STORE_T_WALK: *rows = &p->nwalk; return (void **)&p->walk;
  case STORE_T_PLANS: *rows = &p->nplans; return (void **)&p->plans;
  case STORE_T_VALIDATION: *rows = &p->nvalidation; return (void **)&p->validation;
  case STORE_T_VALIDATION_REPLAY: *rows = &p->nvalidation_replay; return (void **)&p->validation_replay;
  default: *rows = &p->nplan_states; return (void **)&p->plan_states;
  }
}

const void *store_policy_table(const store_policy_tables *p, store_table t, size_t *rows) {
  *rows = 0;
  if ((unsigned)t >= STORE_NTABLE) return NULL;
  size_t *n = NULL;
  void **slot = store_table_slot((store_policy_tables *)p, t, &n); /* read only here */
  *rows = *n;
  return *slot;
}

/* The scalar type of a column in memory (native) or in the file (little-endian). */
static hid_t scalar_type(store_field_kind kind, int file) {
  switch (kind) {
  case STORE_F_U8: return file ? H5T_STD_U8LE : H5T_NATIVE_UINT8;
  case STORE_F_U32: return file ? H5T_STD_U32LE : H5T_NATIVE_UINT32;
  case STORE_F_I32: return file ? H5T_STD_I32LE : H5T_NATIVE_INT32;
  case STORE_F_U64: return file ? H5T_STD_U64LE : H5T_NATIVE_UINT64;
  case STORE_F_F64: return file ? H5T_IEEE_F64LE : H5T_NATIVE_DOUBLE;
  case STORE_F_STR: break;
  }
  return H5I_INVALID_HID;
}

/* A column's type, created fresh (the caller closes it). */
static hid_t field_type(const store_field *f, int file) {
  if (f->kind == STORE_F_STR) {
    hid_t t = H5Tcopy(H5T_C_S1);
    if (t < 0) return t;
    if (H5Tset_size(t, f->count) < 0 || H5Tset_strpad(t, H5T_STR_NULLTERM) < 0) {
      H5Tclose(t);
      return H5I_INVALID_HID;
    }
    return t;
  }
  hsize_t n = f->count;
  return f->count == 1 ? H5Tcopy(scalar_type(f->kind, file)) : H5Tarray_create2(scalar_type(f->kind, file), 1, &n);
}

/* Bytes of the packed file record: the sum of its columns' file types. */
static size_t packed_size(const store_table_desc *d) {
  size_t size = 0;
  for (size_t i = 0; i < d->nfields; i++) {
    hid_t ft = field_type(&d->fields[i], 1);
    if (ft < 0) return 0;
    size += H5Tget_size(ft);
    H5Tclose(ft);
  }
  return size;
}

static hid_t compound_type(const store_table_desc *d, int file) {
  size_t size = file ? packed_size(d) : d->record_bytes;
  hid_t t = size ? H5Tcreate(H5T_COMPOUND, size) : H5I_INVALID_HID;
  if (t < 0) return t;
  size_t packed_offset = 0;
  for (size_t i = 0; i < d->nfields; i++) {
    hid_t ft = field_type(&d->fields[i], file);
    herr_t rc = ft < 0 ? -1 : H5Tinsert(t, d->fields[i].name, file ? packed_offset : d->fields[i].offset, ft);
    if (ft >= 0) {
      packed_offset += H5Tget_size(ft);
      H5Tclose(ft);
    }
    if (rc < 0) {
      H5Tclose(t);
      return H5I_INVALID_HID;
    }
  }
  return t;
}

int store_table_types(store_table t, hid_t *mem, hid_t *file, enpu_err *err) {
  ENPU_RETURN_IF((unsigned)t >= STORE_NTABLE, err, ENPU_ERR_INVALID, "store: bad table %d", (int)t);
  hid_t m = mem ? compound_type(&store_tables[t], 0) : 0;
  hid_t f = file ? compound_type(&store_tables[t], 1) : 0;
  if (m < 0 || f < 0) {
    if (m > 0) H5Tclose(m);
    if (f > 0) H5Tclose(f);
    return enpu_errorf(err, ENPU_ERR_INTERNAL, "store: cannot build the HDF5 type of table %s",
                       store_tables[t].name);
  }
  if (mem) *mem = m;
  if (file) *file = f;
  return ENPU_OK;
}

void store_hdf5_version(char *out, size_t len) {
  unsigned major = 0, minor = 0, release = 0;
  H5get_libversion(&major, &minor, &release);
  snprintf(out, len, "%d.%d.%d, running %u.%u.%u", H5_VERS_MAJOR, H5_VERS_MINOR, H5_VERS_RELEASE, major, minor,
           release);
}
