/* store_internal.h — what the store writer and the reader share: the column layout of
 * every table (one descriptor drives both the HDF5 types and the documentation in
 * schemas/planstore.md), the HDF5 names, and the zstd filter class.
 * Not installed; planstore.h is the public header. */
#ifndef ENPU_STORE_INTERNAL_H
#define ENPU_STORE_INTERNAL_H

#include <hdf5.h>

#include "store.h"

#define STORE_POLICIES_GROUP "policies"
#define STORE_ATTR_FORMAT_VERSION "format_version"

typedef enum { STORE_F_U8, STORE_F_U32, STORE_F_I32, STORE_F_U64, STORE_F_F64, STORE_F_STR } store_field_kind;

typedef struct {
  const char *name;
  size_t offset;          /* in the C record */
  store_field_kind kind;
  size_t count;           /* array length (1 = scalar), or string length for STR */
} store_field;

typedef struct {
  const char *name;       /* dataset name inside the policy group */
  size_t record_bytes;    /* sizeof the C record */
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

#endif /* ENPU_STORE_INTERNAL_H */
