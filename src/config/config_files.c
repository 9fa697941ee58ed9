/* config_files.c — the input files one load reads, kept by the path it names them with.
 *
 * A farm's workers may run on nodes that cannot see the job's directory (node-local
 * /tmp, a directory that is not exported), or that see other files under the same
 * names. So rank 0 loads every job through a set that records the bytes it reads,
 * seals it, and sends it; the workers load from that set alone and never open a file.
 * Both sides then parse the same bytes, and a path the set lacks is an error rather
 * than a quiet read of whatever a worker's file system holds there.
 *
 * Invariants: a path is stored once (its first read wins; a sealed set never grows);
 * the packed form is only read by the same binary (it carries no version), but every
 * length in it is checked against the buffer before use. */
#include <stdlib.h>
#include <string.h>

#include "config.h"

typedef struct {
  char *path, *data; /* data is NUL-terminated, as enpu_read_file returns it */
  size_t len;
} input_file;

struct config_files {
  input_file *files;
  size_t count, cap;
  int sealed;
};

int config_files_create(config_files **out, enpu_err *err) {
  *out = enpu_calloc(1, sizeof **out);
  return *out ? ENPU_OK : enpu_errorf(err, ENPU_ERR_NOMEM, "out of memory (input files)");
}

void config_files_free(config_files *fs) {
  if (!fs) return;
  for (size_t i = 0; i < fs->count; i++) {
    free(fs->files[i].path);
    free(fs->files[i].data);
  }
  free(fs->files);
  free(fs);
}

void config_files_seal(config_files *fs) { fs->sealed = 1; }

size_t config_files_count(const config_files *fs) { return fs->count; }

static const input_file *find(const config_files *fs, const char *path) {
  for (size_t i = 0; i < fs->count; i++)
    if (!strcmp(fs->files[i].path, path)) return &fs->files[i];
  return NULL;
}

/* Takes `data` (heap, NUL-terminated after len bytes) on success. */
static int files_add(config_files *fs, const char *path, char *data, size_t len, enpu_err *err) {
  char *p = strdup(path);
  if (!p || enpu_grow((void **)&fs->files, &fs->cap, fs->count + 1, sizeof *fs->files) < 0) {
    free(p);
    return enpu_errorf(err, ENPU_ERR_NOMEM, "out of memory (input files)");
  }
  fs->files[fs->count++] = (input_file){p, data, len};
  return ENPU_OK;
}

int config_files_read(config_files *fs, const char *path, char **data, size_t *len, enpu_err *err) {
  if (!fs) return enpu_read_file(path, data, len, err);
  const input_file *f = find(fs, path);
  if (!f && fs->sealed)
    return enpu_errorf(err, ENPU_ERR_IO, "%s: not among the input files this load was given", path);
  if (!f) {
    char *text = NULL;
    size_t n = 0;
    ENPU_FORWARD(enpu_read_file(path, &text, &n, err));
    if (files_add(fs, path, text, n, err) < 0) {
      free(text);
      return ENPU_ERR_NOMEM;
    }
    f = &fs->files[fs->count - 1];
  }
  *data = malloc(f->len + 1);
  ENPU_RETURN_IF(!*data, err, ENPU_ERR_NOMEM, "%s: out of memory", path);
  memcpy(*data, f->data, f->len + 1);
  if (len) *len = f->len;
  return ENPU_OK;
}

/* Packed: u64 count, then per file u64 path length, the path, u64 data length, the
 * data (lengths in the host's byte order: both ends are one binary on one architecture). */
static void files_put_u64(char **at, uint64_t v) {
  memcpy(*at, &v, sizeof v);
  *at += sizeof v;
}

int config_files_pack(const config_files *fs, char **buf, size_t *len, enpu_err *err) {
  size_t n = sizeof(uint64_t);
  for (size_t i = 0; i < fs->count; i++) n += 2 * sizeof(uint64_t) + strlen(fs->files[i].path) + fs->files[i].len;
  char *b = malloc(n), *at = b;
  ENPU_RETURN_IF(!b, err, ENPU_ERR_NOMEM, "out of memory (packing %zu input files)", fs->count);
  files_put_u64(&at, fs->count);
  for (size_t i = 0; i < fs->count; i++) {
    const size_t pl = strlen(fs->files[i].path);
    files_put_u64(&at, pl);
    memcpy(at, fs->files[i].path, pl);
    at += pl;
    files_put_u64(&at, fs->files[i].len);
    memcpy(at, fs->files[i].data, fs->files[i].len);
    at += fs->files[i].len;
  }
  *buf = b;
  *len = n;
  return ENPU_OK;
}

/* The next `n` bytes of the packed buffer as a new NUL-terminated string. */
static int take_bytes(const char **at, const char *end, size_t n, char **out, enpu_err *err) {
  ENPU_RETURN_IF(n > (size_t)(end - *at), err, ENPU_ERR_FORMAT, "packed input files: truncated");
  *out = malloc(n + 1);
  ENPU_RETURN_IF(!*out, err, ENPU_ERR_NOMEM, "out of memory (input files)");
  memcpy(*out, *at, n);
  (*out)[n] = '\0';
  *at += n;
  return ENPU_OK;
}

static int take_u64(const char **at, const char *end, uint64_t *v, enpu_err *err) {
  ENPU_RETURN_IF(sizeof *v > (size_t)(end - *at), err, ENPU_ERR_FORMAT, "packed input files: truncated");
  memcpy(v, *at, sizeof *v);
  *at += sizeof *v;
  return ENPU_OK;
}

static int unpack_into(config_files *fs, const char *buf, size_t len, enpu_err *err) {
  const char *at = buf, *end = buf + len;
  uint64_t count = 0;
  ENPU_FORWARD(take_u64(&at, end, &count, err));
  for (uint64_t i = 0; i < count; i++) {
    uint64_t pl = 0, dl = 0;
    char *path = NULL, *data = NULL;
    ENPU_FORWARD(take_u64(&at, end, &pl, err));
    ENPU_FORWARD(take_bytes(&at, end, (size_t)pl, &path, err));
    int rc = take_u64(&at, end, &dl, err);
    if (rc == 0) rc = take_bytes(&at, end, (size_t)dl, &data, err);
    if (rc == 0) rc = files_add(fs, path, data, (size_t)dl, err);
    free(path);
    if (rc < 0) {
      free(data);
      return rc;
    }
  }
  ENPU_RETURN_IF(at != end, err, ENPU_ERR_FORMAT, "packed input files: %zu bytes after the last file",
                 (size_t)(end - at));
  return ENPU_OK;
}

int config_files_unpack(const char *buf, size_t len, config_files **out, enpu_err *err) {
  ENPU_FORWARD(config_files_create(out, err));
  const int rc = unpack_into(*out, buf, len, err);
  if (rc < 0) {
    config_files_free(*out);
    *out = NULL;
    return rc;
  }
  config_files_seal(*out);
  return ENPU_OK;
}
