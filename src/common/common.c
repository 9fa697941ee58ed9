/* common.c — error messages, allocation, file and path helpers, hashing.
 * No global mutable state: every function works only on what it is given. */
#include "common.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include <xxhash.h>

const char *enpu_strerror(int code) {
  switch (code) {
  case ENPU_OK: return "ok";
  case ENPU_ERR_INVALID: return "invalid input";
  case ENPU_ERR_NOMEM: return "out of memory";
  case ENPU_ERR_IO: return "I/O error";
  case ENPU_ERR_PARSE: return "parse error";
  case ENPU_ERR_RANGE: return "value out of range";
  case ENPU_ERR_NOT_FOUND: return "not found";
  case ENPU_ERR_FORMAT: return "bad file format";
  case ENPU_ERR_INFEASIBLE: return "infeasible";
  case ENPU_ERR_INTERNAL: return "internal error";
  case ENPU_ERR_ENV: return "environment error";
  case ENPU_ERR_STOPPED: return "stopped by a signal";
  default: return "unknown error";
  }
}

int enpu_errno_code(int errnum) {
  switch (errnum) {
  case ENOSPC:
  case EDQUOT:
  case EIO:
  case EROFS:
  case EMFILE:
  case ENFILE:
  case ENOMEM: return ENPU_ERR_ENV;
  default: return ENPU_ERR_IO;
  }
}

int enpu_errorf(enpu_err *err, int code, const char *fmt, ...) {
  if (err) {
    va_list ap;
    va_start(ap, fmt);
    err->code = code;
    vsnprintf(err->msg, sizeof err->msg, fmt, ap);
    va_end(ap);
  }
  return code;
}

void enpu_err_prefix(enpu_err *err, const char *fmt, ...) {
  if (!err) return;
  char prefix[256];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(prefix, sizeof prefix, fmt, ap);
  va_end(ap);
  /* Keep the prefix whole and truncate the tail of the old message if needed. */
  size_t plen = strlen(prefix), mlen = strlen(err->msg);
  if (plen >= sizeof err->msg) plen = sizeof err->msg - 1;
  if (plen + mlen >= sizeof err->msg) mlen = sizeof err->msg - 1 - plen;
  memmove(err->msg + plen, err->msg, mlen);
  memcpy(err->msg, prefix, plen);
  err->msg[plen + mlen] = '\0';
}

void *enpu_calloc(size_t n, size_t size) {
  if (size && n > SIZE_MAX / size) return NULL;
  return calloc(n ? n : 1, size ? size : 1);
}

int enpu_calloc_parts(const enpu_part *parts, size_t nparts) {
  const size_t align = _Alignof(max_align_t);
  size_t offset[16], total = 0;
  if (nparts == 0 || nparts > sizeof offset / sizeof *offset) return ENPU_ERR_NOMEM;
  for (size_t i = 0; i < nparts; i++) {
    const size_t n = parts[i].count ? parts[i].count : 1, size = parts[i].size ? parts[i].size : 1;
    if (total > SIZE_MAX - align || n > (SIZE_MAX - total - align) / size) return ENPU_ERR_NOMEM;
    offset[i] = total;
    total += (n * size + align - 1) / align * align;
  }
  char *block = calloc(1, total);
  if (!block) return ENPU_ERR_NOMEM;
  for (size_t i = 0; i < nparts; i++) {
    void *p = block + offset[i];
    memcpy(parts[i].slot, &p, sizeof p); /* T * and void * share one representation */
  }
  return ENPU_OK;
}

int enpu_grow(void **ptr, size_t *cap, size_t need, size_t elem_size) {
  if (need <= *cap) return ENPU_OK;
  size_t ncap = *cap ? *cap : 8;
  while (ncap < need) {
    if (ncap > SIZE_MAX / 2) return ENPU_ERR_NOMEM;
    ncap *= 2;
  }
  if (elem_size && ncap > SIZE_MAX / elem_size) return ENPU_ERR_NOMEM;
  void *p = realloc(*ptr, ncap * elem_size);
  if (!p) return ENPU_ERR_NOMEM;
  *ptr = p;
  *cap = ncap;
  return ENPU_OK;
}

/* "64 MiB", "16 GiB" or "N bytes". */
static void size_text(size_t bytes, char *out, size_t len) {
  if (bytes && bytes % ((size_t)1 << 30) == 0) snprintf(out, len, "%zu GiB", bytes >> 30);
  else if (bytes && bytes % ((size_t)1 << 20) == 0) snprintf(out, len, "%zu MiB", bytes >> 20);
  else snprintf(out, len, "%zu bytes", bytes);
}

static const char *file_kind(mode_t mode) {
  if (S_ISDIR(mode)) return "a directory";
  if (S_ISFIFO(mode)) return "a FIFO";
  if (S_ISCHR(mode)) return "a character device";
  if (S_ISBLK(mode)) return "a block device";
  if (S_ISSOCK(mode)) return "a socket";
  return "not a regular file";
}

int enpu_open_input(const char *path, size_t max_bytes, int *fd, size_t *size_bytes, enpu_err *err) {
  *fd = -1;
  /* O_NONBLOCK: opening a FIFO without a writer would wait for one */
  const int f = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  if (f < 0) return enpu_errorf(err, enpu_errno_code(errno), "%s: cannot open: %s", path, strerror(errno));
  struct stat st;
  int rc = ENPU_OK;
  char limit[32];
  size_text(max_bytes, limit, sizeof limit);
  if (fstat(f, &st) < 0)
    rc = enpu_errorf(err, enpu_errno_code(errno), "%s: cannot stat: %s", path, strerror(errno));
  else if (!S_ISREG(st.st_mode))
    rc = enpu_errorf(err, ENPU_ERR_INVALID, "%s: expected a regular file, got %s", path, file_kind(st.st_mode));
  else if ((uint64_t)st.st_size > (uint64_t)max_bytes)
    rc = enpu_errorf(err, ENPU_ERR_INVALID, "%s: %lld bytes, more than this input may hold (%s)", path,
                     (long long)st.st_size, limit);
  const int flags = rc == ENPU_OK ? fcntl(f, F_GETFL) : 0;
  if (rc == ENPU_OK && (flags < 0 || fcntl(f, F_SETFL, flags & ~O_NONBLOCK) < 0))
    rc = enpu_errorf(err, enpu_errno_code(errno), "%s: cannot open: %s", path, strerror(errno));
  if (rc < 0) {
    close(f);
    return rc;
  }
  *fd = f;
  if (size_bytes) *size_bytes = (size_t)st.st_size;
  return ENPU_OK;
}

int enpu_read_file(const char *path, char **data, size_t *len, enpu_err *err) {
  return enpu_read_file_max(path, ENPU_READ_MAX_BYTES, data, len, err);
}

int enpu_read_file_max(const char *path, size_t max_bytes, char **data, size_t *len, enpu_err *err) {
  *data = NULL;
  if (len) *len = 0;
  int fd;
  size_t size = 0, cap, used = 0;
  ENPU_FORWARD(enpu_open_input(path, max_bytes, &fd, &size, err));
  /* the size opened and one byte to see the end; more only if the file grows, never
   * much past the limit */
  cap = size + 2;
  char *buf = malloc(cap);
  int rc = buf ? ENPU_OK : enpu_errorf(err, ENPU_ERR_NOMEM, "%s: out of memory while reading", path);
  while (rc == ENPU_OK) {
    if (used > max_bytes) {
      char limit[32];
      size_text(max_bytes, limit, sizeof limit);
      rc = enpu_errorf(err, ENPU_ERR_INVALID, "%s: more than this input may hold (%s)", path, limit);
      break;
    }
    if (cap - used < 2 && enpu_grow((void **)&buf, &cap, used + 65536 + 1, 1) < 0) {
      rc = enpu_errorf(err, ENPU_ERR_NOMEM, "%s: out of memory while reading", path);
      break;
    }
    const ssize_t got = read(fd, buf + used, cap - used - 1);
    if (got < 0 && errno == EINTR) continue;
    if (got < 0) rc = enpu_errorf(err, enpu_errno_code(errno), "%s: read error: %s", path, strerror(errno));
    if (got <= 0) break;
    used += (size_t)got;
  }
  close(fd);
  if (rc < 0) {
    free(buf);
    return rc;
  }
  buf[used] = '\0';
  *data = buf;
  if (len) *len = used;
  return ENPU_OK;
}

int enpu_kv_split(char *text, enpu_kv *out, int max, enpu_err *err) {
  int n = 0;
  for (char *item = text;; n++) {
    char *comma = strchr(item, ',');
    if (comma) *comma = '\0';
    char *eq = strchr(item, '=');
    ENPU_RETURN_IF(!*item, err, ENPU_ERR_INVALID, "expected key=value, got an empty item");
    ENPU_RETURN_IF(!eq || eq == item, err, ENPU_ERR_INVALID, "expected key=value, got '%s'", item);
    *eq = '\0';
    for (int k = 0; k < n; k++)
      ENPU_RETURN_IF(!strcmp(out[k].key, item), err, ENPU_ERR_INVALID, "key '%s' given twice: it takes one value",
                     item);
    ENPU_RETURN_IF(n == max, err, ENPU_ERR_INVALID, "expected at most %d key=value pairs", max);
    out[n] = (enpu_kv){item, eq + 1};
    if (!comma) return n + 1;
    item = comma + 1;
  }
}

int enpu_path_relative(const char *base_file, const char *rel, char *out, size_t out_len, enpu_err *err) {
  int n;
  const char *slash = strrchr(base_file, '/');
  if (rel[0] == '/' || !slash) n = snprintf(out, out_len, "%s", rel);
  else n = snprintf(out, out_len, "%.*s/%s", (int)(slash - base_file), base_file, rel);
  if (n < 0 || (size_t)n >= out_len)
    return enpu_errorf(err, ENPU_ERR_RANGE, "path too long: %s relative to %s", rel, base_file);
  return ENPU_OK;
}

int enpu_mkdir_p(const char *dir, enpu_err *err) {
  char path[PATH_MAX];
  ENPU_RETURN_IF(!dir[0], err, ENPU_ERR_INVALID, "empty directory name");
  ENPU_RETURN_IF(snprintf(path, sizeof path, "%s", dir) >= (int)sizeof path, err, ENPU_ERR_RANGE,
                 "directory name too long: %s", dir);
  /* one mkdir per component, from the root down; an existing one is fine (EEXIST) */
  for (char *s = path + 1;; s++) {
    if (*s != '/' && *s != '\0') continue;
    const char c = *s;
    *s = '\0';
    if (mkdir(path, 0777) < 0 && errno != EEXIST)
      return enpu_errorf(err, ENPU_ERR_IO, "cannot create directory %s: %s", path, strerror(errno));
    *s = c;
    if (c == '\0') break;
  }
  struct stat st;
  ENPU_RETURN_IF(stat(dir, &st) < 0 || !S_ISDIR(st.st_mode), err, ENPU_ERR_IO, "%s is not a directory", dir);
  return ENPU_OK;
}

uint64_t enpu_hash64(const void *data, size_t len, uint64_t seed) { return XXH3_64bits_withSeed(data, len, seed); }

/* The incremental hasher chains XXH3 over each field: h' = XXH3(field, seed = h).
 * It is not the same value as hashing the concatenation, and does not need to be. */
void enpu_hasher_init(enpu_hasher *hs, uint64_t seed) { hs->h = seed ^ 0x656e70752d666172ULL; }

void enpu_hasher_bytes(enpu_hasher *hs, const void *data, size_t len) {
  hs->h = XXH3_64bits_withSeed(data, len, hs->h);
}

bool enpu_stop_asked(const enpu_stop *s) { return s && s->fn && s->fn(s->ctx); }

void enpu_put_le32(unsigned char *p, uint32_t v) {
  for (int i = 0; i < 4; i++) p[i] = (unsigned char)(v >> (8 * i));
}

void enpu_put_le64(unsigned char *p, uint64_t v) {
  for (int i = 0; i < 8; i++) p[i] = (unsigned char)(v >> (8 * i));
}

uint32_t enpu_get_le32(const unsigned char *p) {
  uint32_t v = 0;
  for (int i = 0; i < 4; i++) v |= (uint32_t)p[i] << (8 * i);
  return v;
}

uint64_t enpu_get_le64(const unsigned char *p) {
  uint64_t v = 0;
  for (int i = 0; i < 8; i++) v |= (uint64_t)p[i] << (8 * i);
  return v;
}

void enpu_hasher_i64(enpu_hasher *hs, int64_t v) {
  unsigned char b[8];
  enpu_put_le64(b, (uint64_t)v);
  enpu_hasher_bytes(hs, b, sizeof b);
}

void enpu_hasher_f64(enpu_hasher *hs, double v) {
  if (v == 0.0) v = 0.0; /* -0.0 and 0.0 are the same content */
  if (isnan(v)) v = NAN;
  uint64_t u;
  memcpy(&u, &v, sizeof u);
  enpu_hasher_i64(hs, (int64_t)u);
}

void enpu_hasher_str(enpu_hasher *hs, const char *s) {
  size_t n = strlen(s);
  enpu_hasher_i64(hs, (int64_t)n);
  enpu_hasher_bytes(hs, s, n);
}

uint64_t enpu_hasher_digest(const enpu_hasher *hs) { return hs->h; }

int enpu_cmp_double(const void *a, const void *b) {
  const double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

int enpu_cmp_i32(const void *a, const void *b) {
  const int32_t x = *(const int32_t *)a, y = *(const int32_t *)b;
  return (x > y) - (x < y);
}

double enpu_budget_ns(bool paper, double t_nodvfs_ns, double t_peak_ns, double slack) {
  return paper ? (1.0 + slack) * t_nodvfs_ns : fmax(t_nodvfs_ns, t_peak_ns) + slack * t_nodvfs_ns;
}

double enpu_now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}
