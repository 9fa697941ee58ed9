/* store_internal.h — what the store writer and the readers share: the column layout of
 * every table (one descriptor drives both the HDF5 types and the documentation in
 * schemas/planstore.md), the HDF5 names, the zstd filter class, and the one code path
 * that reads and validates a store (used by planstore_open and store_load).
 * Not installed; planstore.h is the public header. */
#ifndef ENPU_STORE_INTERNAL_H
#define ENPU_STORE_INTERNAL_H

#include <hdf5.h>

#include "planstore.h"
#include "store.h"

#define STORE_POLICIES_GROUP "policies"
#define STORE_ATTR_FORMAT_VERSION "format_version"
#define STORE_ATTR_ADDED_BUCKETS "added_buckets" /* optional */
#define STORE_ATTR_TABLE_CHECKSUM "xxh3_64"      /* on every table dataset */
#define STORE_ATTR_PROVENANCE_CHECKSUM "provenance_xxh3_64"
#define STORE_MAX_POLICIES 64       /* a store's policies group, at most */
#define STORE_MAX_RECORD_BYTES 4096 /* a file row; the store's rows are < 300 bytes */

/* The root attributes (provenance) as one record: what the writer writes, store_load
 * reads back, and the provenance checksum covers. */
enum { STORE_NROOT_HASHES = 4, STORE_NROOT_STRINGS = 7 };
typedef struct {
  uint32_t format_version;
  uint64_t hashes[STORE_NROOT_HASHES];      /* named by store_root_hash_names */
  const char *strings[STORE_NROOT_STRINGS]; /* named by store_root_string_names;
                                               NULL = absent (only added_buckets) */
} store_root_attrs;
extern const char *const store_root_hash_names[STORE_NROOT_HASHES];
extern const char *const store_root_string_names[STORE_NROOT_STRINGS];

typedef struct {
  const char *name;    /* dataset name inside the policy group */
  size_t record_bytes; /* sizeof the C record */
  const store_field *fields;
  size_t nfields;
} store_table_desc;

extern const store_table_desc store_tables[STORE_NTABLE];

/* HDF5 compound types of a table: `mem` matches the C record (native types, struct
 * offsets), `file` is packed little-endian. Either pointer may be NULL.
 * @return 0, or ENPU_ERR_INTERNAL; on failure nothing is left open. */
int store_table_types(store_table t, hid_t *mem, hid_t *file, enpu_err *err);

/* The zstd filter (id 32015): cd_values[0] = level, cd_values[1] (set by the filter's
 * set_local) = uncompressed chunk bytes, the bound a decompressed chunk may not exceed. */
extern const H5Z_class2_t store_zstd_class;

/* ---- checksums (store_hash.c) --------------------------------------------------- */

/* A table's checksum built over appended rows (the writer), or all at once. */
typedef struct store_hash store_hash;
int store_hash_create(store_table t, store_hash **out, enpu_err *err);
void store_hash_rows(store_hash *h, const void *rows, size_t n); /* records of table t */
uint64_t store_hash_digest(const store_hash *h);
void store_hash_free(store_hash *h); /* NULL is a no-op */
/* @return 0, or ENPU_ERR_NOMEM. */
int store_table_checksum(store_table t, const void *rows, size_t n, uint64_t *out, enpu_err *err);
uint64_t store_provenance_checksum(const store_root_attrs *a);

/* ---- what a writer has written (store_write.c) ------------------------------------ */

/* Policies that have rows so far. */
size_t store_writer_policy_count(const store_writer *w);
/* The checksum of the rows of `policy`'s table t appended so far (that of no rows when
 * the policy has rows in other tables only). @return 1; 0 when the policy has no rows at
 * all; ENPU_ERR_INVALID, ENPU_ERR_NOMEM. */
int store_writer_checksum(const store_writer *w, const char *policy, store_table t, uint64_t *out, enpu_err *err);

/* ---- reading (store_read.c) ------------------------------------------------------- */

/* Open a plan store read-only after checking it is one of this format version (the
 * zstd filter registered). @return 0 and *file; ENPU_ERR_IO, ENPU_ERR_FORMAT. */
/* H5Fopen read-only with HDF5's file lock best effort (skipped where the file system has
 * none); H5I_INVALID_HID on failure. Call inside H5E_BEGIN_TRY. */
hid_t store_h5_open_readonly(const char *path);
int store_file_open(const char *path, hid_t *file, enpu_err *err);

/* A policy read from a store: its tables, and the bucket index built while validating. */
typedef struct {
  store_policy_tables t;
  uint32_t *order;                  /* bucket rows sorted by (phase, batch, seq), unique */
  int32_t max_batch[2], max_seq[2]; /* per phase, over all its buckets */
  size_t pending;                   /* buckets not compiled yet (a checkpoint) */
} store_policy;

/* Open `path` read-only, check format_version, then load and validate every policy
 * (name order) with the checks listed in store_read.c. plan_states rows are loaded and
 * checked only when `with_plan_states` (otherwise t.plan_states is NULL and
 * t.nplan_states only counts them). On success *file is the open file, for the caller's
 * attributes (the caller closes it). Call it inside H5E_BEGIN_TRY.
 * @return 0, ENPU_ERR_IO (cannot open), ENPU_ERR_FORMAT, ENPU_ERR_NOMEM; on failure
 * nothing is left open or allocated. */
int store_read(const char *path, int with_plan_states, hid_t *file, store_policy **out, size_t *n, enpu_err *err);
/* store_read of one policy only, `policy` (NULL: the first in name order); the others
 * are not loaded (a runtime that serves one policy opens faster).
 * @return as store_read, or ENPU_ERR_NOT_FOUND when the store has no such policy. */
int store_read_policy(const char *path, const char *policy, store_policy **out, size_t *n, enpu_err *err);
void store_policies_free(store_policy *p, size_t n); /* NULL is a no-op */
/* Free the row arrays of one policy's tables and zero their counts (not the struct). */
void store_policy_tables_free(store_policy_tables *p);

/* A u64 (any integer type) attribute of `loc`. @return 0, or ENPU_ERR_FORMAT. */
int store_read_attr_u64(hid_t loc, const char *name, uint64_t *out, enpu_err *err);

/* (phase, batch, seq) order of buckets: <0, 0, >0. */
int store_bucket_cmp(const store_bucket_rec *a, const store_bucket_rec *b);

/* Rows 0..n-1 of a table of p sorted by key(p, row), ties by row, into a new array
 * (free() it). @return 0, or ENPU_ERR_NOMEM. */
int store_order_rows(const store_policy_tables *p, size_t n, uint64_t (*key)(const store_policy_tables *, size_t),
                     uint32_t **order, enpu_err *err);

/* (phase, batch, seq) of bucket row `row` as one number in the same order, for a bucket
 * store_read accepted (phase <= 1, 1 <= batch, seq < 2^31): an order key of
 * store_order_rows. */
uint64_t store_bucket_key(const store_policy_tables *p, size_t row);

/* Position of op row `op` among bucket b's bucket_ops rows (they ascend by op: binary
 * search), or -1. */
long store_bucket_op_pos(const store_policy_tables *p, const store_bucket_rec *b, uint32_t op);

/* Table t of a policy: its row array (records of store_tables[t]) and row count. */
void **store_table_slot(store_policy_tables *p, store_table t, size_t **rows);

#endif /* ENPU_STORE_INTERNAL_H */
