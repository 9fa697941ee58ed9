/* store_schema.c — the columns of every store table and their HDF5 compound types.
 * This table is the single source of the layout: the writer and the reader build their
 * types from it, and schemas/planstore.md documents it column by column (keep them in
 * step; format_version changes when a column changes meaning or type). */
#include <stddef.h>

#include "store_internal.h"

#define FIELD(rec, member, kind, count) {#member, offsetof(rec, member), kind, count}

static const store_field ops_fields[] = {
    FIELD(store_op_rec, signature, STORE_F_U64, 1),
    FIELD(store_op_rec, kind, STORE_F_U32, 1),
    FIELD(store_op_rec, pareto_first, STORE_F_U32, 1),
    FIELD(store_op_rec, pareto_count, STORE_F_U32, 1),
    FIELD(store_op_rec, evaluations, STORE_F_U64, 1),
    FIELD(store_op_rec, name, STORE_F_STR, STORE_NAME_LEN),
};
static const store_field pareto_fields[] = {
    FIELD(store_pareto_rec, op, STORE_F_U32, 1),
    FIELD(store_pareto_rec, states, STORE_F_U8, STORE_NSTATE),
    FIELD(store_pareto_rec, time_ns, STORE_F_F64, 1),
    FIELD(store_pareto_rec, energy_nj, STORE_F_F64, 1),
    FIELD(store_pareto_rec, energy_by_slot_nj, STORE_F_F64, STORE_NENERGY),
};
static const store_field bucket_fields[] = {
    FIELD(store_bucket_rec, phase, STORE_F_U8, 1),
    FIELD(store_bucket_rec, status, STORE_F_U8, 1),
    FIELD(store_bucket_rec, budget, STORE_F_U8, 1),
    FIELD(store_bucket_rec, batch, STORE_F_I32, 1),
    FIELD(store_bucket_rec, seq, STORE_F_I32, 1),
    FIELD(store_bucket_rec, t_nodvfs_ns, STORE_F_F64, 1),
    FIELD(store_bucket_rec, t_peak_ns, STORE_F_F64, 1),
    FIELD(store_bucket_rec, e_nodvfs_nj, STORE_F_F64, 1),
    FIELD(store_bucket_rec, walk_start_time_ns, STORE_F_F64, 1),
    FIELD(store_bucket_rec, walk_start_energy_nj, STORE_F_F64, 1),
    FIELD(store_bucket_rec, ops_first, STORE_F_U32, 1),
    FIELD(store_bucket_rec, ops_count, STORE_F_U32, 1),
    FIELD(store_bucket_rec, walk_first, STORE_F_U64, 1),
    FIELD(store_bucket_rec, walk_count, STORE_F_U64, 1),
    FIELD(store_bucket_rec, plan_first, STORE_F_U32, 1),
    FIELD(store_bucket_rec, plan_count, STORE_F_U32, 1),
    FIELD(store_bucket_rec, input_hash, STORE_F_U64, 1),
    FIELD(store_bucket_rec, message, STORE_F_STR, STORE_MSG_LEN),
};
static const store_field bucket_op_fields[] = {
    FIELD(store_bucket_op_rec, bucket, STORE_F_U32, 1),
    FIELD(store_bucket_op_rec, op, STORE_F_U32, 1),
    FIELD(store_bucket_op_rec, multiplicity, STORE_F_U64, 1),
};
static const store_field walk_fields[] = {
    FIELD(store_walk_rec, bucket, STORE_F_U32, 1),
    FIELD(store_walk_rec, op, STORE_F_U32, 1),
    FIELD(store_walk_rec, pareto, STORE_F_U32, 1),
    FIELD(store_walk_rec, instances, STORE_F_U64, 1),
    FIELD(store_walk_rec, time_ns, STORE_F_F64, 1),
    FIELD(store_walk_rec, energy_nj, STORE_F_F64, 1),
};
static const store_field plan_fields[] = {
    FIELD(store_plan_rec, bucket, STORE_F_U32, 1),
    FIELD(store_plan_rec, budget, STORE_F_U8, 1),
    FIELD(store_plan_rec, slack, STORE_F_F64, 1),
    FIELD(store_plan_rec, budget_ns, STORE_F_F64, 1),
    FIELD(store_plan_rec, time_ns, STORE_F_F64, 1),
    FIELD(store_plan_rec, energy_nj, STORE_F_F64, 1),
    FIELD(store_plan_rec, cp_time_ns, STORE_F_F64, 1),
    FIELD(store_plan_rec, overhead_pct, STORE_F_F64, 1),
    FIELD(store_plan_rec, lower_bound_nj, STORE_F_F64, 1),
    FIELD(store_plan_rec, savings_vs_nodvfs, STORE_F_F64, 1),
    FIELD(store_plan_rec, walk_prefix, STORE_F_U64, 1),
    FIELD(store_plan_rec, states_first, STORE_F_U64, 1),
    FIELD(store_plan_rec, states_count, STORE_F_U64, 1),
    FIELD(store_plan_rec, regulator_loss_nj, STORE_F_F64, STORE_NSTATE),
    FIELD(store_plan_rec, gated, STORE_F_U8, 1),
    FIELD(store_plan_rec, gates, STORE_F_F64, 1),
};
static const store_field plan_state_fields[] = {
    FIELD(store_plan_state_rec, plan, STORE_F_U32, 1),
    FIELD(store_plan_state_rec, op, STORE_F_U32, 1),
    FIELD(store_plan_state_rec, pareto, STORE_F_U32, 1),
    FIELD(store_plan_state_rec, states, STORE_F_U8, STORE_NSTATE),
    FIELD(store_plan_state_rec, instances, STORE_F_U64, 1),
};

static const store_field validation_fields[] = {
    FIELD(store_validation_rec, bucket, STORE_F_U32, 1),
    FIELD(store_validation_rec, plan, STORE_F_U32, 1),
    FIELD(store_validation_rec, stratum, STORE_F_U32, 1),
    FIELD(store_validation_rec, phase, STORE_F_U8, 1),
    FIELD(store_validation_rec, pass, STORE_F_U8, 1),
    FIELD(store_validation_rec, batch, STORE_F_I32, 1),
    FIELD(store_validation_rec, seq, STORE_F_I32, 1),
    FIELD(store_validation_rec, slack, STORE_F_F64, 1),
    FIELD(store_validation_rec, budget_ns, STORE_F_F64, 1),
    FIELD(store_validation_rec, stored_time_ns, STORE_F_F64, 1),
    FIELD(store_validation_rec, stored_energy_nj, STORE_F_F64, 1),
    FIELD(store_validation_rec, sim_time_ns, STORE_F_F64, 1),
    FIELD(store_validation_rec, sim_energy_nj, STORE_F_F64, 1),
    FIELD(store_validation_rec, message, STORE_F_STR, STORE_MSG_LEN),
};
static const store_field validation_replay_fields[] = {
    FIELD(store_validation_replay_rec, requests, STORE_F_U64, 1),
    FIELD(store_validation_replay_rec, served, STORE_F_U64, 1),
    FIELD(store_validation_replay_rec, slo_met, STORE_F_U64, 1),
    FIELD(store_validation_replay_rec, slo_attainment, STORE_F_F64, 1),
    FIELD(store_validation_replay_rec, energy_nj, STORE_F_F64, 1),
    FIELD(store_validation_replay_rec, prefill_energy_nj, STORE_F_F64, 1),
    FIELD(store_validation_replay_rec, decode_energy_nj, STORE_F_F64, 1),
    FIELD(store_validation_replay_rec, savings_vs_nodvfs, STORE_F_F64, 1),
    FIELD(store_validation_replay_rec, ttft_p50_ns, STORE_F_F64, 1),
    FIELD(store_validation_replay_rec, ttft_p99_ns, STORE_F_F64, 1),
    FIELD(store_validation_replay_rec, tpot_p50_ns, STORE_F_F64, 1),
    FIELD(store_validation_replay_rec, tpot_p99_ns, STORE_F_F64, 1),
    FIELD(store_validation_replay_rec, batches, STORE_F_U64, 1),
    FIELD(store_validation_replay_rec, slowed, STORE_F_U64, 1),
    FIELD(store_validation_replay_rec, locked, STORE_F_U64, 1),
    FIELD(store_validation_replay_rec, seed, STORE_F_U64, 1),
    FIELD(store_validation_replay_rec, sample, STORE_F_U32, 1),
    FIELD(store_validation_replay_rec, tolerance, STORE_F_F64, 1),
    FIELD(store_validation_replay_rec, trace, STORE_F_STR, STORE_MSG_LEN),
};

#define TABLE(name, rec, fields) {name, sizeof(rec), fields, sizeof fields / sizeof fields[0]}
const store_table_desc store_tables[STORE_NTABLE] = {
    [STORE_T_OPS] = TABLE("ops", store_op_rec, ops_fields),
    [STORE_T_PARETO] = TABLE("pareto", store_pareto_rec, pareto_fields),
    [STORE_T_BUCKETS] = TABLE("buckets", store_bucket_rec, bucket_fields),
    [STORE_T_BUCKET_OPS] = TABLE("bucket_ops", store_bucket_op_rec, bucket_op_fields),
    [STORE_T_WALK] = TABLE("walk", store_walk_rec, walk_fields),
    [STORE_T_PLANS] = TABLE("plans", store_plan_rec, plan_fields),
    [STORE_T_PLAN_STATES] = TABLE("plan_states", store_plan_state_rec, plan_state_fields),
    [STORE_T_VALIDATION] = TABLE("validation", store_validation_rec, validation_fields),
    [STORE_T_VALIDATION_REPLAY] = TABLE("validation_replay", store_validation_replay_rec,
                                        validation_replay_fields),
};

const char *const store_root_hash_names[STORE_NROOT_HASHES] = {"cost_model_hash", "chip_hash", "model_hash",
                                                               "job_hash"};
const char *const store_root_string_names[STORE_NROOT_STRINGS] = {
    "tool_version", "created_utc", "job_json", "model_json", "chip_json", "cluster_json", STORE_ATTR_ADDED_BUCKETS};

const char *store_table_name(store_table t) {
  return (unsigned)t < STORE_NTABLE ? store_tables[t].name : NULL;
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
  return f->count == 1 ? H5Tcopy(scalar_type(f->kind, file))
                       : H5Tarray_create2(scalar_type(f->kind, file), 1, &n);
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
