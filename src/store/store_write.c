/* store_write.c — the store writer: chunked, extensible compound tables with shuffle +
 * zstd, provenance as root attributes, and atomic publication.
 *
 * Invariants: everything is written to `<path>.tmp`; `path` changes only by the rename
 * in store_writer_commit, after the temporary file is closed and fsync'd, so `path` is
 * always either the previous complete store or the new complete one, and a reader that
 * has the old file open keeps its (unlinked) inode. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "store_internal.h"

#define STORE_CHUNK_BYTES 65536 /* target uncompressed chunk size */

struct store_writer {
  char path[PATH_MAX];
  char tmp[PATH_MAX];
  hid_t file;
  int zstd_level; /* < 0: no compression */
};

static int write_attr(hid_t loc, const char *name, hid_t file_type, const void *value,
                          hid_t mem_type, enpu_err *err) {
  hid_t space = H5Screate(H5S_SCALAR);
  hid_t attr = space < 0 ? -1 : H5Acreate2(loc, name, file_type, space, H5P_DEFAULT, H5P_DEFAULT);
  herr_t rc = attr < 0 ? -1 : H5Awrite(attr, mem_type, value);
  if (attr >= 0) H5Aclose(attr);
  if (space >= 0) H5Sclose(space);
  ENPU_RETURN_IF(rc < 0, err, ENPU_ERR_IO, "store: cannot write attribute %s", name);
  return ENPU_OK;
}

static int write_attr_str(hid_t loc, const char *name, const char *text, enpu_err *err) {
  if (!text) text = "";
  hid_t type = H5Tcopy(H5T_C_S1);
  herr_t rc = type < 0 ? -1 : H5Tset_size(type, strlen(text) + 1);
  if (rc >= 0) rc = H5Tset_strpad(type, H5T_STR_NULLTERM);
  if (rc >= 0) rc = write_attr(loc, name, type, text, type, err);
  if (type >= 0) H5Tclose(type);
  ENPU_RETURN_IF(rc < 0, err, ENPU_ERR_IO, "store: cannot write attribute %s", name);
  return ENPU_OK;
}

static int write_provenance(hid_t file, const store_provenance *prov, enpu_err *err) {
  const unsigned version = STORE_FORMAT_VERSION;
  ENPU_FORWARD(write_attr(file, STORE_ATTR_FORMAT_VERSION, H5T_STD_U32LE, &version,
                              H5T_NATIVE_UINT, err));
  const struct {
    const char *name;
    uint64_t value;
  } hashes[] = {{"cost_model_hash", prov->cost_model_hash},
                {"chip_hash", prov->chip_hash},
                {"model_hash", prov->model_hash},
                {"job_hash", prov->job_hash}};
  for (size_t i = 0; i < sizeof hashes / sizeof hashes[0]; i++)
    ENPU_FORWARD(write_attr(file, hashes[i].name, H5T_STD_U64LE, &hashes[i].value,
                                H5T_NATIVE_UINT64, err));
  char created[32];
  time_t now = time(NULL);
  struct tm utc;
  ENPU_RETURN_IF(!gmtime_r(&now, &utc) || !strftime(created, sizeof created, "%Y-%m-%dT%H:%M:%SZ", &utc),
                 err, ENPU_ERR_INTERNAL, "store: cannot format the creation time");
  ENPU_FORWARD(write_attr_str(file, "created_utc", created, err));
  ENPU_FORWARD(write_attr_str(file, "tool_version", prov->tool_version, err));
  ENPU_FORWARD(write_attr_str(file, "job_json", prov->job_json, err));
  ENPU_FORWARD(write_attr_str(file, "model_json", prov->model_json, err));
  ENPU_FORWARD(write_attr_str(file, "chip_json", prov->chip_json, err));
  ENPU_FORWARD(write_attr_str(file, "cluster_json", prov->cluster_json, err));
  if (!prov->added_buckets_json) return ENPU_OK; /* optional: only stores that were extended */
  return write_attr_str(file, STORE_ATTR_ADDED_BUCKETS, prov->added_buckets_json, err);
}

int store_writer_create(const char *path, const store_provenance *prov, int zstd_level,
                        store_writer **out, enpu_err *err) {
  *out = NULL;
  ENPU_RETURN_IF(!path || !prov, err, ENPU_ERR_INVALID, "store: no path or provenance");
  store_writer *w = enpu_calloc(1, sizeof *w);
  ENPU_RETURN_IF(!w, err, ENPU_ERR_NOMEM, "store: out of memory");
  w->file = H5I_INVALID_HID;
  w->zstd_level = zstd_level;
  int n = snprintf(w->path, sizeof w->path, "%s", path);
  int m = snprintf(w->tmp, sizeof w->tmp, "%s.tmp", path);
  int rc = ENPU_OK;
  if (n < 0 || (size_t)n >= sizeof w->path || m < 0 || (size_t)m >= sizeof w->tmp)
    rc = enpu_errorf(err, ENPU_ERR_RANGE, "store: path too long: %s", path);
  if (rc == ENPU_OK && zstd_level >= 0) rc = store_zstd_register(err);
  if (rc == ENPU_OK) {
    /* v1.8+ object headers allow attributes over 64 KiB (the chip JSON may be). */
    hid_t fapl = H5Pcreate(H5P_FILE_ACCESS);
    if (fapl >= 0 && H5Pset_libver_bounds(fapl, H5F_LIBVER_V18, H5F_LIBVER_V110) >= 0)
      w->file = H5Fcreate(w->tmp, H5F_ACC_TRUNC, H5P_DEFAULT, fapl);
    if (fapl >= 0) H5Pclose(fapl);
    if (w->file < 0) rc = enpu_errorf(err, ENPU_ERR_IO, "store: cannot create %s", w->tmp);
  }
  if (rc == ENPU_OK) {
    hid_t g = H5Gcreate2(w->file, STORE_POLICIES_GROUP, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
    if (g < 0) rc = enpu_errorf(err, ENPU_ERR_IO, "store: cannot create /%s", STORE_POLICIES_GROUP);
    else H5Gclose(g);
  }
  if (rc == ENPU_OK) rc = write_provenance(w->file, prov, err);
  if (rc < 0) {
    enpu_err_prefix(err, "writing %s: ", path);
    store_writer_free(w);
    return rc;
  }
  *out = w;
  return ENPU_OK;
}

/* A policy name becomes one path component. */
static int check_policy_name(const char *policy, enpu_err *err) {
  size_t len = policy ? strlen(policy) : 0;
  ENPU_RETURN_IF(len == 0 || len >= STORE_NAME_LEN || strchr(policy, '/') || strcmp(policy, ".") == 0 ||
                     strcmp(policy, "..") == 0,
                 err, ENPU_ERR_INVALID, "store: bad policy name '%s'", policy ? policy : "");
  return ENPU_OK;
}

static hid_t open_or_create_group(hid_t parent, const char *name) {
  htri_t exists = H5Lexists(parent, name, H5P_DEFAULT);
  if (exists < 0) return H5I_INVALID_HID;
  return exists ? H5Gopen2(parent, name, H5P_DEFAULT)
                : H5Gcreate2(parent, name, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
}

static hid_t create_table(const store_writer *w, hid_t group, store_table t, hid_t file_type) {
  hsize_t zero = 0, unlimited = H5S_UNLIMITED;
  size_t row_bytes = H5Tget_size(file_type);
  hsize_t chunk = row_bytes ? STORE_CHUNK_BYTES / row_bytes : 1;
  if (chunk < 64) chunk = 64;
  hid_t space = H5Screate_simple(1, &zero, &unlimited);
  hid_t dcpl = H5Pcreate(H5P_DATASET_CREATE);
  herr_t rc = (space < 0 || dcpl < 0) ? -1 : H5Pset_chunk(dcpl, 1, &chunk);
  if (rc >= 0 && w->zstd_level >= 0) {
    unsigned level = (unsigned)w->zstd_level;
    rc = H5Pset_shuffle(dcpl);
    if (rc >= 0) rc = H5Pset_filter(dcpl, STORE_ZSTD_FILTER_ID, H5Z_FLAG_MANDATORY, 1, &level);
  }
  hid_t ds = rc < 0 ? H5I_INVALID_HID
                    : H5Dcreate2(group, store_tables[t].name, file_type, space, H5P_DEFAULT, dcpl,
                                 H5P_DEFAULT);
  if (dcpl >= 0) H5Pclose(dcpl);
  if (space >= 0) H5Sclose(space);
  return ds;
}

/* Extend `ds` by n rows and write `records` (memory type `mem`) into them. */
static herr_t append_rows(hid_t ds, hid_t mem, const void *records, size_t n) {
  hid_t space = H5Dget_space(ds);
  hsize_t old = 0;
  herr_t rc = space < 0 ? -1 : (H5Sget_simple_extent_dims(space, &old, NULL) == 1 ? 0 : -1);
  if (space >= 0) H5Sclose(space);
  hsize_t total = old + n, count = n;
  if (rc >= 0) rc = H5Dset_extent(ds, &total);
  hid_t fspace = rc < 0 ? H5I_INVALID_HID : H5Dget_space(ds);
  hid_t mspace = rc < 0 ? H5I_INVALID_HID : H5Screate_simple(1, &count, NULL);
  if (fspace < 0 || mspace < 0) rc = -1;
  if (rc >= 0) rc = H5Sselect_hyperslab(fspace, H5S_SELECT_SET, &old, NULL, &count, NULL);
  if (rc >= 0) rc = H5Dwrite(ds, mem, mspace, fspace, H5P_DEFAULT, records);
  if (mspace >= 0) H5Sclose(mspace);
  if (fspace >= 0) H5Sclose(fspace);
  return rc;
}

int store_writer_append(store_writer *w, const char *policy, store_table table,
                        const void *records, size_t n, enpu_err *err) {
  ENPU_RETURN_IF(!w || w->file < 0, err, ENPU_ERR_INVALID, "store: writer is closed");
  ENPU_FORWARD(check_policy_name(policy, err));
  ENPU_RETURN_IF((unsigned)table >= STORE_NTABLE || (n && !records), err, ENPU_ERR_INVALID,
                 "store: bad table or records");
  if (n == 0) return ENPU_OK;
  hid_t mem, file_type;
  ENPU_FORWARD(store_table_types(table, &mem, &file_type, err));
  hid_t policies = H5Gopen2(w->file, STORE_POLICIES_GROUP, H5P_DEFAULT);
  hid_t group = policies < 0 ? H5I_INVALID_HID : open_or_create_group(policies, policy);
  htri_t exists = group < 0 ? -1 : H5Lexists(group, store_tables[table].name, H5P_DEFAULT);
  hid_t ds = exists < 0 ? H5I_INVALID_HID
             : exists   ? H5Dopen2(group, store_tables[table].name, H5P_DEFAULT)
                        : create_table(w, group, table, file_type);
  herr_t rc = ds < 0 ? -1 : append_rows(ds, mem, records, n);
  if (ds >= 0) H5Dclose(ds);
  if (group >= 0) H5Gclose(group);
  if (policies >= 0) H5Gclose(policies);
  H5Tclose(mem);
  H5Tclose(file_type);
  ENPU_RETURN_IF(rc < 0, err, ENPU_ERR_IO, "store: cannot append %zu rows to /%s/%s/%s of %s", n,
                 STORE_POLICIES_GROUP, policy, store_tables[table].name, w->tmp);
  return ENPU_OK;
}

/* fsync a file or directory by path. */
static int fsync_path(const char *path, int flags, enpu_err *err) {
  int fd = open(path, flags);
  ENPU_RETURN_IF(fd < 0, err, ENPU_ERR_IO, "store: cannot open %s: %s", path, strerror(errno));
  int rc = fsync(fd);
  int saved = errno;
  close(fd);
  ENPU_RETURN_IF(rc != 0, err, ENPU_ERR_IO, "store: fsync %s: %s", path, strerror(saved));
  return ENPU_OK;
}

int store_writer_commit(store_writer *w, enpu_err *err) {
  ENPU_RETURN_IF(!w || w->file < 0, err, ENPU_ERR_INVALID, "store: writer is closed");
  herr_t rc = H5Fclose(w->file);
  w->file = H5I_INVALID_HID;
  ENPU_RETURN_IF(rc < 0, err, ENPU_ERR_IO, "store: cannot close %s", w->tmp);
  ENPU_FORWARD(fsync_path(w->tmp, O_RDONLY, err));
  ENPU_RETURN_IF(rename(w->tmp, w->path) != 0, err, ENPU_ERR_IO, "store: rename %s -> %s: %s",
                 w->tmp, w->path, strerror(errno));
  w->tmp[0] = '\0'; /* published: nothing left to clean up */
  char dir[PATH_MAX];
  snprintf(dir, sizeof dir, "%s", w->path);
  char *slash = strrchr(dir, '/');
  if (!slash) snprintf(dir, sizeof dir, ".");
  else if (slash == dir) dir[1] = '\0';
  else *slash = '\0';
  return fsync_path(dir, O_RDONLY | O_DIRECTORY, err);
}

void store_writer_free(store_writer *w) {
  if (!w) return;
  if (w->file >= 0) H5Fclose(w->file);
  if (w->tmp[0]) unlink(w->tmp);
  free(w);
}
