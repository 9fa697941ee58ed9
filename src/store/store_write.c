/* store_write.c — the store writer: chunked, extensible compound tables with shuffle +
 * zstd, provenance as root attributes, checksums, and atomic publication.
 *
 * Invariants: the HDF5 file is built in memory (HDF5's core driver, no backing file) and
 * reaches the disk only at commit, as one image written to `<path>.tmp`, fsync'd and
 * renamed over `path` (enpu_file_write: never through a link planted at either name); so `path` is always either
 * the previous complete store or the new complete one, a reader that has the old file open keeps its (unlinked)
 * inode, and a full disk is one failed write() with errno — HDF5 never sees a failing file system (with a file on
 * disk, a failed close left HDF5 in a state that crashed at exit). Every table gets the checksum of the rows
 * appended to it, the root the checksum of its attributes (store_hash.c). */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "store_internal.h"

#define STORE_CHUNK_BYTES 65536                /* target uncompressed chunk size */
#define STORE_CORE_INCREMENT ((size_t)1 << 20) /* the in-memory file grows by this */

/* The running checksums of one policy's tables. */
typedef struct {
  char name[STORE_NAME_LEN];
  store_hash *hash[STORE_NTABLE]; /* NULL until the table gets rows */
} policy_hashes;

struct store_writer {
  char path[PATH_MAX];
  char tmp[PATH_MAX];
  hid_t file;
  int zstd_level; /* < 0: no compression */
  policy_hashes *policies;
  size_t npolicies, cap;
  store_root_attrs root;
  char created[32];
};

static int write_attr(hid_t loc, const char *name, hid_t file_type, const void *value, hid_t mem_type,
                      enpu_err *err) {
  hid_t space = H5Screate(H5S_SCALAR);
  hid_t attr = space < 0 ? -1 : H5Acreate2(loc, name, file_type, space, H5P_DEFAULT, H5P_DEFAULT);
  herr_t rc = attr < 0 ? -1 : H5Awrite(attr, mem_type, value);
  if (attr >= 0) H5Aclose(attr);
  if (space >= 0) H5Sclose(space);
  ENPU_RETURN_IF(rc < 0, err, ENPU_ERR_INTERNAL, "store: cannot write attribute %s", name);
  return ENPU_OK;
}

static int write_attr_u64(hid_t loc, const char *name, uint64_t value, enpu_err *err) {
  return write_attr(loc, name, H5T_STD_U64LE, &value, H5T_NATIVE_UINT64, err);
}

static int write_attr_str(hid_t loc, const char *name, const char *text, enpu_err *err) {
  hid_t type = H5Tcopy(H5T_C_S1);
  herr_t rc = type < 0 ? -1 : H5Tset_size(type, strlen(text) + 1);
  if (rc >= 0) rc = H5Tset_strpad(type, H5T_STR_NULLTERM);
  if (rc >= 0) rc = write_attr(loc, name, type, text, type, err);
  if (type >= 0) H5Tclose(type);
  ENPU_RETURN_IF(rc < 0, err, ENPU_ERR_INTERNAL, "store: cannot write attribute %s", name);
  return ENPU_OK;
}

/* The root attributes as written: absent documents are empty strings, added_buckets is
 * left out when there is none. */
static int root_attrs(store_writer *w, const store_provenance *prov, enpu_err *err) {
  time_t now = time(NULL);
  struct tm utc;
  ENPU_RETURN_IF(!gmtime_r(&now, &utc) || !strftime(w->created, sizeof w->created, "%Y-%m-%dT%H:%M:%SZ", &utc), err,
                 ENPU_ERR_INTERNAL, "store: cannot format the creation time");
  const char *strings[STORE_NROOT_STRINGS] = {prov->tool_version,      w->created,      prov->job_json,
                                              prov->model_json,        prov->chip_json, prov->cluster_json,
                                              prov->added_buckets_json};
  w->root = (store_root_attrs){
      .format_version = STORE_FORMAT_VERSION,
      .hashes = {prov->cost_model_hash, prov->chip_hash, prov->model_hash, prov->job_hash}};
  for (int i = 0; i < STORE_NROOT_STRINGS; i++)
    w->root.strings[i] = strings[i] ? strings[i] : i == STORE_NROOT_STRINGS - 1 ? NULL : "";
  return ENPU_OK;
}

static int write_root(hid_t file, const store_root_attrs *a, enpu_err *err) {
  ENPU_FORWARD(
      write_attr(file, STORE_ATTR_FORMAT_VERSION, H5T_STD_U32LE, &a->format_version, H5T_NATIVE_UINT32, err));
  for (int i = 0; i < STORE_NROOT_HASHES; i++)
    ENPU_FORWARD(write_attr_u64(file, store_root_hash_names[i], a->hashes[i], err));
  for (int i = 0; i < STORE_NROOT_STRINGS; i++)
    if (a->strings[i]) ENPU_FORWARD(write_attr_str(file, store_root_string_names[i], a->strings[i], err));
  return write_attr_u64(file, STORE_ATTR_PROVENANCE_CHECKSUM, store_provenance_checksum(a), err);
}

/* The in-memory HDF5 file. */
static hid_t create_core_file(const char *name) {
  hid_t fapl = H5Pcreate(H5P_FILE_ACCESS), file = H5I_INVALID_HID;
  /* v1.8+ object headers allow attributes over 64 KiB (the chip JSON may be). */
  if (fapl >= 0 && H5Pset_fapl_core(fapl, STORE_CORE_INCREMENT, 0) >= 0 &&
      H5Pset_libver_bounds(fapl, H5F_LIBVER_V18, H5F_LIBVER_V110) >= 0)
    file = H5Fcreate(name, H5F_ACC_TRUNC, H5P_DEFAULT, fapl);
  if (fapl >= 0) H5Pclose(fapl);
  return file;
}

int store_writer_create(const store_lock *lock, const store_provenance *prov, int zstd_level, store_writer **out,
                        enpu_err *err) {
  *out = NULL;
  ENPU_RETURN_IF(!lock || !prov, err, ENPU_ERR_INVALID, "store: no lock or provenance");
  const char *path = store_lock_path(lock);
  store_writer *w = enpu_calloc(1, sizeof *w);
  ENPU_RETURN_IF(!w, err, ENPU_ERR_NOMEM, "store: out of memory");
  w->file = H5I_INVALID_HID;
  w->zstd_level = zstd_level;
  int n = snprintf(w->path, sizeof w->path, "%s", path);
  const int m = store_sibling_path(path, STORE_SIBLING_TMP, w->tmp, sizeof w->tmp);
  int rc = ENPU_OK;
  if (n < 0 || (size_t)n >= sizeof w->path || m < 0)
    rc = enpu_errorf(err, ENPU_ERR_RANGE, "store: path too long: %s", path);
  if (rc == ENPU_OK && zstd_level >= 0) rc = store_zstd_register(err);
  if (rc == ENPU_OK && (w->file = create_core_file(w->tmp)) < 0)
    rc = enpu_errorf(err, ENPU_ERR_INTERNAL, "store: HDF5 cannot create an in-memory file");
  if (rc == ENPU_OK) {
    hid_t g = H5Gcreate2(w->file, STORE_POLICIES_GROUP, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
    if (g < 0) rc = enpu_errorf(err, ENPU_ERR_INTERNAL, "store: cannot create /%s", STORE_POLICIES_GROUP);
    else H5Gclose(g);
  }
  if (rc == ENPU_OK) rc = root_attrs(w, prov, err);
  if (rc == ENPU_OK) rc = write_root(w->file, &w->root, err);
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
                    : H5Dcreate2(group, store_tables[t].name, file_type, space, H5P_DEFAULT, dcpl, H5P_DEFAULT);
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

/* The running checksum of a policy's table, created on first use. */
static int table_hash(store_writer *w, const char *policy, store_table t, store_hash **out, enpu_err *err) {
  size_t i = 0;
  while (i < w->npolicies && strcmp(w->policies[i].name, policy) != 0) i++;
  if (i == w->npolicies) {
    ENPU_RETURN_IF(enpu_grow((void **)&w->policies, &w->cap, i + 1, sizeof *w->policies) < 0, err, ENPU_ERR_NOMEM,
                   "store: out of memory");
    memset(&w->policies[i], 0, sizeof w->policies[i]);
    snprintf(w->policies[i].name, sizeof w->policies[i].name, "%s", policy);
    w->npolicies++;
  }
  if (!w->policies[i].hash[t]) ENPU_FORWARD(store_hash_create(t, &w->policies[i].hash[t], err));
  *out = w->policies[i].hash[t];
  return ENPU_OK;
}

int store_writer_append(store_writer *w, const char *policy, store_table table, const void *records, size_t n,
                        enpu_err *err) {
  ENPU_RETURN_IF(!w || w->file < 0, err, ENPU_ERR_INVALID, "store: writer is closed");
  ENPU_FORWARD(check_policy_name(policy, err));
  ENPU_RETURN_IF((unsigned)table >= STORE_NTABLE || (n && !records), err, ENPU_ERR_INVALID,
                 "store: bad table or records");
  if (n == 0) return ENPU_OK;
  store_hash *hash = NULL;
  ENPU_FORWARD(table_hash(w, policy, table, &hash, err));
  store_hash_rows(hash, records, n);
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
  ENPU_RETURN_IF(rc < 0, err, ENPU_ERR_INTERNAL, "store: cannot append %zu rows to /%s/%s/%s of %s", n,
                 STORE_POLICIES_GROUP, policy, store_tables[table].name, w->path);
  return ENPU_OK;
}

size_t store_writer_policy_count(const store_writer *w) { return w->npolicies; }

int store_writer_checksum(const store_writer *w, const char *policy, store_table t, uint64_t *out, enpu_err *err) {
  ENPU_RETURN_IF((unsigned)t >= STORE_NTABLE, err, ENPU_ERR_INVALID, "store: bad table %d", (int)t);
  for (size_t i = 0; i < w->npolicies; i++) {
    if (strcmp(w->policies[i].name, policy) != 0) continue;
    if (!w->policies[i].hash[t]) ENPU_FORWARD(store_table_checksum(t, NULL, 0, out, err));
    else *out = store_hash_digest(w->policies[i].hash[t]);
    return 1;
  }
  return 0;
}

/* Each table's checksum as its dataset's attribute. */
static int write_checksums(const store_writer *w, enpu_err *err) {
  int rc = ENPU_OK;
  for (size_t i = 0; i < w->npolicies && rc == ENPU_OK; i++)
    for (int t = 0; t < STORE_NTABLE && rc == ENPU_OK; t++) {
      if (!w->policies[i].hash[t]) continue;
      char name[STORE_NAME_LEN + 64];
      snprintf(name, sizeof name, "%s/%s/%s", STORE_POLICIES_GROUP, w->policies[i].name, store_tables[t].name);
      hid_t ds = H5Dopen2(w->file, name, H5P_DEFAULT);
      rc = ds < 0 ? enpu_errorf(err, ENPU_ERR_INTERNAL, "store: cannot reopen /%s", name)
                  : write_attr_u64(ds, STORE_ATTR_TABLE_CHECKSUM, store_hash_digest(w->policies[i].hash[t]), err);
      if (ds >= 0) H5Dclose(ds);
    }
  return rc;
}

/* Bob Jenkins' lookup3 hashlittle (public domain), the checksum of HDF5's metadata. */
#define ROT32(x, k) (((x) << (k)) | ((x) >> (32 - (k))))
static uint32_t lookup3(const unsigned char *k, size_t length) {
  uint32_t a, b, c;
  a = b = c = 0xdeadbeefu + (uint32_t)length;
  for (; length > 12; length -= 12, k += 12) {
    a += k[0] + ((uint32_t)k[1] << 8) + ((uint32_t)k[2] << 16) + ((uint32_t)k[3] << 24);
    b += k[4] + ((uint32_t)k[5] << 8) + ((uint32_t)k[6] << 16) + ((uint32_t)k[7] << 24);
    c += k[8] + ((uint32_t)k[9] << 8) + ((uint32_t)k[10] << 16) + ((uint32_t)k[11] << 24);
    a -= c, a ^= ROT32(c, 4), c += b, b -= a, b ^= ROT32(a, 6), a += c, c -= b, c ^= ROT32(b, 8), b += a;
    a -= c, a ^= ROT32(c, 16), c += b, b -= a, b ^= ROT32(a, 19), a += c, c -= b, c ^= ROT32(b, 4), b += a;
  }
  if (length == 0) return c;
  uint32_t tail[3] = {0, 0, 0}; /* the last 1..12 bytes, little-endian words */
  for (size_t i = 0; i < length; i++) tail[i / 4] += (uint32_t)k[i] << (8 * (i % 4));
  a += tail[0], b += tail[1], c += tail[2];
  c ^= b, c -= ROT32(b, 14), a ^= c, a -= ROT32(c, 11), b ^= a, b -= ROT32(a, 25);
  c ^= b, c -= ROT32(b, 16), a ^= c, a -= ROT32(c, 4), b ^= a, b -= ROT32(a, 14);
  c ^= b, c -= ROT32(b, 24);
  return c;
}

/* H5Fget_file_image of HDF5 before 2.0 clears the superblock's status flags (the file is
 * open for writing) in the image without updating the superblock's checksum, so the
 * image would not open. A version 2/3 superblock (at offset 0: this writer's) ends in a
 * lookup3 checksum of the bytes before it: compute it again. */
static void fix_superblock_checksum(unsigned char *image, size_t bytes) {
  static const unsigned char signature[8] = {0x89, 'H', 'D', 'F', '\r', '\n', 0x1a, '\n'};
  if (bytes < 12 || memcmp(image, signature, 8) != 0 || (image[8] != 2 && image[8] != 3)) return;
  size_t at = 12 + 4 * (size_t)image[9]; /* flags, then base, extension, EOF, root addresses */
  if (at + 4 > bytes) return;
  uint32_t sum = lookup3(image, at);
  enpu_put_le32(image + at, sum);
}

/* The finished in-memory file as one image (malloc'd). */
static int file_image(hid_t file, void **image, size_t *bytes, enpu_err *err) {
  *image = NULL;
  ssize_t n = H5Fflush(file, H5F_SCOPE_GLOBAL) < 0 ? -1 : H5Fget_file_image(file, NULL, 0);
  ENPU_RETURN_IF(n <= 0, err, ENPU_ERR_INTERNAL, "store: HDF5 cannot produce the file image");
  *image = malloc((size_t)n);
  ENPU_RETURN_IF(!*image, err, ENPU_ERR_NOMEM, "store: no memory for a %zd-byte file image", n);
  ENPU_RETURN_IF(H5Fget_file_image(file, *image, (size_t)n) != n, err, ENPU_ERR_INTERNAL,
                 "store: HDF5 cannot copy the file image");
  fix_superblock_checksum(*image, (size_t)n);
  *bytes = (size_t)n;
  return ENPU_OK;
}

int store_writer_commit(store_writer *w, enpu_err *err) {
  ENPU_RETURN_IF(!w || w->file < 0, err, ENPU_ERR_INVALID, "store: writer is closed");
  void *image = NULL;
  size_t bytes = 0;
  int rc = write_checksums(w, err);
  if (rc == ENPU_OK) rc = file_image(w->file, &image, &bytes, err);
  H5Fclose(w->file); /* in memory: nothing can fail on disk */
  w->file = H5I_INVALID_HID;
  if (rc == ENPU_OK) rc = enpu_file_write(w->path, image, bytes, ENPU_FILE_DURABLE, err);
  free(image);
  if (rc < 0) enpu_err_prefix(err, "store: ");
  return rc;
}

void store_writer_free(store_writer *w) {
  if (!w) return;
  if (w->file >= 0) H5Fclose(w->file);
  for (size_t i = 0; i < w->npolicies; i++)
    for (int t = 0; t < STORE_NTABLE; t++) store_hash_free(w->policies[i].hash[t]);
  free(w->policies);
  free(w);
}
