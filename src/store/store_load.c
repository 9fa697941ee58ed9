/* store_load.c — the whole store in memory (farm resume and incremental runs, `enpu
 * store info/diff`): every table of every policy through store_read (the same loading
 * and checks as planstore_open, plus the plan_states rows), and the root attributes;
 * and store_sizes, the tables' uncompressed and stored bytes for `enpu store info`.
 *
 * Invariants: a string attribute is read only when it is a fixed-length string no
 * longer than the file; what is returned owns all its memory (store_contents_free). */
#include <stdlib.h>
#include <string.h>

#include "store_internal.h"

/* A root string attribute into *out (malloc'd), or *out = NULL when it is absent. */
static int read_attr_str(hid_t file, const char *name, hsize_t file_bytes, char **out, enpu_err *err) {
  *out = NULL;
  htri_t exists = H5Aexists(file, name);
  ENPU_RETURN_IF(exists < 0, err, ENPU_ERR_FORMAT, "cannot look up attribute %s", name);
  if (!exists) return ENPU_OK;
  hid_t attr = H5Aopen(file, name, H5P_DEFAULT);
  hid_t type = attr < 0 ? -1 : H5Aget_type(attr), space = attr < 0 ? -1 : H5Aget_space(attr);
  size_t size = type < 0 ? 0 : H5Tget_size(type);
  int ok = type >= 0 && space >= 0 && H5Tget_class(type) == H5T_STRING && H5Tis_variable_str(type) == 0 &&
           H5Sget_simple_extent_npoints(space) == 1 && size > 0 && size <= file_bytes;
  char *text = ok ? enpu_calloc(size + 1, 1) : NULL;
  herr_t rc = text ? H5Aread(attr, type, text) : -1;
  if (space >= 0) H5Sclose(space);
  if (type >= 0) H5Tclose(type);
  if (attr >= 0) H5Aclose(attr);
  if (rc < 0) {
    free(text);
    return enpu_errorf(err, ok && !text ? ENPU_ERR_NOMEM : ENPU_ERR_FORMAT,
                       "attribute %s is not a readable fixed-length string", name);
  }
  *out = text;
  return ENPU_OK;
}

/* The root attributes, checked against their checksum. */
static int read_provenance(hid_t file, store_contents *c, enpu_err *err) {
  hsize_t file_bytes = 0;
  ENPU_RETURN_IF(H5Fget_filesize(file, &file_bytes) < 0, err, ENPU_ERR_FORMAT, "cannot tell the file size");
  c->format_version = STORE_FORMAT_VERSION; /* store_read accepted no other */
  uint64_t *hashes[STORE_NROOT_HASHES] = {&c->cost_model_hash, &c->chip_hash, &c->model_hash, &c->job_hash};
  char **strings[STORE_NROOT_STRINGS] = {&c->tool_version, &c->created_utc,  &c->job_json,          &c->model_json,
                                         &c->chip_json,    &c->cluster_json, &c->added_buckets_json};
  store_root_attrs root = {.format_version = c->format_version};
  for (int i = 0; i < STORE_NROOT_HASHES; i++) {
    ENPU_FORWARD(store_read_attr_u64(file, store_root_hash_names[i], hashes[i], err));
    root.hashes[i] = *hashes[i];
  }
  for (int i = 0; i < STORE_NROOT_STRINGS; i++) {
    ENPU_FORWARD(read_attr_str(file, store_root_string_names[i], file_bytes, strings[i], err));
    root.strings[i] = *strings[i];
  }
  uint64_t stored = 0, computed = store_provenance_checksum(&root);
  ENPU_FORWARD(store_read_attr_u64(file, STORE_ATTR_PROVENANCE_CHECKSUM, &stored, err));
#ifdef FUZZING_BUILD_MODE_UNSAFE_FOR_PRODUCTION
  stored = computed; /* as in store_read.c: let the fuzzer past the checksum */
#endif
  ENPU_RETURN_IF(stored != computed, err, ENPU_ERR_FORMAT,
                 "root attributes: damaged: checksum mismatch (stored %016llx, read %016llx)",
                 (unsigned long long)stored, (unsigned long long)computed);
  /* The two descriptive strings are "" rather than NULL when absent. */
  char **always[] = {&c->tool_version, &c->created_utc};
  for (size_t i = 0; i < 2; i++)
    if (!*always[i]) {
      *always[i] = enpu_calloc(1, 1);
      ENPU_RETURN_IF(!*always[i], err, ENPU_ERR_NOMEM, "out of memory");
    }
  return ENPU_OK;
}

int store_load(const char *path, store_contents **out, enpu_err *err) {
  ENPU_RETURN_IF(!out || !path, err, ENPU_ERR_INVALID, "store_load: no path or output");
  *out = NULL;
  store_contents *c = enpu_calloc(1, sizeof *c);
  ENPU_RETURN_IF(!c, err, ENPU_ERR_NOMEM, "out of memory loading %s", path);
  store_policy *pol = NULL;
  size_t n = 0;
  hid_t file = H5I_INVALID_HID;
  int rc = ENPU_OK;
  H5E_BEGIN_TRY {
    rc = store_read(path, 1, &file, &pol, &n, err);
    if (rc == ENPU_OK) {
      rc = read_provenance(file, c, err);
      H5Fclose(file);
    }
  }
  H5E_END_TRY;
  if (rc == ENPU_OK && n > 0) {
    c->policies = enpu_calloc(n, sizeof *c->policies);
    if (!c->policies) rc = enpu_errorf(err, ENPU_ERR_NOMEM, "out of memory loading %s", path);
  }
  if (rc < 0) {
    store_policies_free(pol, n);
    store_contents_free(c);
    enpu_err_prefix(err, "plan store %s: ", path);
    return rc;
  }
  /* The tables move into the contents; the bucket index is not part of them. */
  for (size_t i = 0; i < n; i++) {
    c->policies[i] = pol[i].t;
    free(pol[i].order);
  }
  free(pol);
  c->npolicies = n;
  *out = c;
  return ENPU_OK;
}

int store_load_provenance(const char *path, store_contents **out, enpu_err *err) {
  ENPU_RETURN_IF(!out || !path, err, ENPU_ERR_INVALID, "store_load_provenance: no path or output");
  *out = NULL;
  store_contents *c = enpu_calloc(1, sizeof *c);
  ENPU_RETURN_IF(!c, err, ENPU_ERR_NOMEM, "out of memory loading %s", path);
  hid_t file = H5I_INVALID_HID;
  int rc = ENPU_OK;
  H5E_BEGIN_TRY {
    rc = store_file_open(path, &file, err);
    if (rc == ENPU_OK) {
      rc = read_provenance(file, c, err);
      H5Fclose(file);
    }
  }
  H5E_END_TRY;
  if (rc < 0) {
    store_contents_free(c);
    enpu_err_prefix(err, "plan store %s: ", path);
    return rc;
  }
  *out = c;
  return ENPU_OK;
}

void store_contents_free(store_contents *c) {
  if (!c) return;
  for (size_t i = 0; i < c->npolicies; i++) store_policy_tables_free(&c->policies[i]);
  free(c->policies);
  char *strings[] = {c->tool_version, c->created_utc,  c->job_json,          c->model_json,
                     c->chip_json,    c->cluster_json, c->added_buckets_json};
  for (size_t i = 0; i < sizeof strings / sizeof strings[0]; i++) free(strings[i]);
  free(c);
}

/* Uncompressed and stored bytes of every table of one policy group. */
static int policy_sizes(hid_t policies, const char *name, store_table_size sizes[STORE_NTABLE], enpu_err *err) {
  hid_t g = H5Gopen2(policies, name, H5P_DEFAULT);
  ENPU_RETURN_IF(g < 0, err, ENPU_ERR_FORMAT, "policy %s is not a group", name);
  int rc = ENPU_OK;
  for (int t = 0; t < STORE_NTABLE && rc == ENPU_OK; t++) {
    sizes[t] = (store_table_size){0, 0};
    htri_t exists = H5Lexists(g, store_tables[t].name, H5P_DEFAULT);
    hid_t ds = exists > 0 ? H5Dopen2(g, store_tables[t].name, H5P_DEFAULT) : H5I_INVALID_HID;
    hid_t space = ds < 0 ? -1 : H5Dget_space(ds), type = ds < 0 ? -1 : H5Dget_type(ds);
    hssize_t rows = space < 0 ? -1 : H5Sget_simple_extent_npoints(space);
    if (exists < 0 || (exists > 0 && (rows < 0 || type < 0)))
      rc = enpu_errorf(err, ENPU_ERR_FORMAT, "policy %s: cannot read the size of table %s", name,
                       store_tables[t].name);
    else if (exists > 0) sizes[t] = (store_table_size){(uint64_t)rows * H5Tget_size(type), H5Dget_storage_size(ds)};
    if (type >= 0) H5Tclose(type);
    if (space >= 0) H5Sclose(space);
    if (ds >= 0) H5Dclose(ds);
  }
  H5Gclose(g);
  return rc;
}

int store_sizes(const char *path, const store_contents *c, store_table_size (*out)[STORE_NTABLE], enpu_err *err) {
  int rc = ENPU_OK;
  H5E_BEGIN_TRY {
    hid_t file = store_h5_open_readonly(path);
    hid_t policies = file < 0 ? H5I_INVALID_HID : H5Gopen2(file, STORE_POLICIES_GROUP, H5P_DEFAULT);
    if (policies < 0) rc = enpu_errorf(err, ENPU_ERR_IO, "cannot open /%s", STORE_POLICIES_GROUP);
    for (size_t i = 0; rc == ENPU_OK && i < c->npolicies; i++)
      rc = policy_sizes(policies, c->policies[i].name, out[i], err);
    if (policies >= 0) H5Gclose(policies);
    if (file >= 0) H5Fclose(file);
  }
  H5E_END_TRY;
  if (rc < 0) enpu_err_prefix(err, "plan store %s: ", path);
  return rc;
}
