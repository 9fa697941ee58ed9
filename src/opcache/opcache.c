/* opcache.c — the result cache's entries (opcache.h): where one lives, how it is written
 * (a temporary file of this writer's own, renamed over the name) and read back (every
 * check of opcache_entry_check, the damaged ones removed, a hit's time touched). */
#define _XOPEN_SOURCE 700 /* utimensat */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "opcache_internal.h"

struct opcache {
  char dir[PATH_MAX];
  unsigned long tmp_count; /* temporaries this process made, for their names */
};

int opcache_default_dir(char *out, size_t len, enpu_err *err) {
  const char *xdg = getenv("XDG_CACHE_HOME"), *home = getenv("HOME");
  int n;
  if (xdg && xdg[0] == '/') n = snprintf(out, len, "%s/enpu", xdg);
  else if (home && home[0]) n = snprintf(out, len, "%s/.cache/enpu", home);
  else return enpu_errorf(err, ENPU_ERR_ENV, "no cache directory: neither XDG_CACHE_HOME nor HOME is set");
  ENPU_RETURN_IF(n < 0 || (size_t)n >= len, err, ENPU_ERR_RANGE, "cache directory path too long");
  return 0;
}

int opcache_open(const char *dir, opcache **out, enpu_err *err) {
  *out = NULL;
  opcache *c = enpu_calloc(1, sizeof *c);
  ENPU_RETURN_IF(!c, err, ENPU_ERR_NOMEM, "out of memory (cache)");
  int rc = snprintf(c->dir, sizeof c->dir, "%s", dir) >= (int)sizeof c->dir
               ? enpu_errorf(err, ENPU_ERR_RANGE, "cache directory path too long: %s", dir)
               : enpu_mkdir_p(dir, err);
  if (rc < 0) {
    enpu_err_prefix(err, "cache: ");
    free(c);
    return rc;
  }
  *out = c;
  return 0;
}

void opcache_close(opcache *c) { free(c); }

const char *opcache_dir(const opcache *c) { return c->dir; }

int opcache_entry_check(const unsigned char *buf, size_t n, uint32_t *kind, uint64_t *key) {
  if (n < OPCACHE_HEADER_BYTES || memcmp(buf, "ENPUCAC1", 8) != 0) return -1;
  if (enpu_get_le32(buf + 8) != OPCACHE_FORMAT_VERSION || enpu_get_le64(buf + 24) != n - OPCACHE_HEADER_BYTES)
    return -1;
  *kind = enpu_get_le32(buf + 12);
  *key = enpu_get_le64(buf + 16);
  const uint64_t sum = enpu_hash64(buf + OPCACHE_HEADER_BYTES, n - OPCACHE_HEADER_BYTES, *key);
  return sum == enpu_get_le64(buf + 32) ? 0 : -1;
}

/* DIR/v1/<xx>/<key>-<kind>, and its directory into dir (may be NULL). */
static int entry_path(const opcache *c, uint32_t kind, uint64_t key, char path[PATH_MAX], char *dir,
                      enpu_err *err) {
  const int n = snprintf(path, PATH_MAX, "%s/" OPCACHE_LAYOUT "/%02x/%016llx-%u", c->dir, (unsigned)(key >> 56),
                         (unsigned long long)key, kind);
  ENPU_RETURN_IF(n < 0 || n >= PATH_MAX, err, ENPU_ERR_RANGE, "cache path too long under %s", c->dir);
  if (dir) snprintf(dir, PATH_MAX, "%.*s", (int)(strrchr(path, '/') - path), path);
  return 0;
}

int opcache_read_whole(const char *path, size_t max_bytes, unsigned char **buf, size_t *n, enpu_err *err) {
  *buf = NULL, *n = 0;
  const int fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0 && errno == ENOENT) return 1;
  ENPU_RETURN_IF(fd < 0, err, enpu_errno_code(errno), "cannot read %s: %s", path, strerror(errno));
  struct stat st;
  int rc = fstat(fd, &st) != 0 ? enpu_errorf(err, enpu_errno_code(errno), "cannot stat %s", path) : 0;
  const size_t size = rc == 0 && S_ISREG(st.st_mode) && (size_t)st.st_size <= max_bytes ? (size_t)st.st_size : 0;
  *buf = rc == 0 ? malloc(size + 1) : NULL;
  if (rc == 0 && !*buf) rc = enpu_errorf(err, ENPU_ERR_NOMEM, "out of memory (%zu bytes)", size);
  size_t got = 0;
  for (ssize_t r = 1; rc == 0 && got < size && r > 0; got += r > 0 ? (size_t)r : 0) {
    r = read(fd, *buf + got, size - got);
    if (r < 0 && errno != EINTR) rc = enpu_errorf(err, enpu_errno_code(errno), "cannot read %s", path);
    if (r < 0) r = errno == EINTR ? 0 : r;
  }
  close(fd);
  if (rc < 0) free(*buf), *buf = NULL;
  else *n = got;
  return rc;
}

int opcache_get(opcache *c, uint32_t kind, uint64_t key, void **data, size_t *bytes, enpu_err *err) {
  *data = NULL, *bytes = 0;
  char path[PATH_MAX];
  ENPU_FORWARD(entry_path(c, kind, key, path, NULL, err));
  unsigned char *buf;
  size_t n;
  const int rc = opcache_read_whole(path, OPCACHE_MAX_ENTRY_BYTES, &buf, &n, err);
  if (rc != 0) return rc < 0 ? rc : OPCACHE_MISS;
  uint32_t got_kind;
  uint64_t got_key;
  if (opcache_entry_check(buf, n, &got_kind, &got_key) < 0 || got_kind != kind || got_key != key) {
    free(buf);
    unlink(path); /* recomputed and written again by the caller */
    return OPCACHE_DAMAGED;
  }
  memmove(buf, buf + OPCACHE_HEADER_BYTES, n - OPCACHE_HEADER_BYTES);
  *data = buf, *bytes = n - OPCACHE_HEADER_BYTES;
  utimensat(AT_FDCWD, path, NULL, 0); /* the LRU order; a failure only ages the entry */
  return OPCACHE_HIT;
}

/* Write header and payload to a new file at tmp. */
static int write_tmp(const char *tmp, const unsigned char *head, const void *data, size_t bytes, enpu_err *err) {
  const int fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
  ENPU_RETURN_IF(fd < 0, err, enpu_errno_code(errno), "cannot create %s: %s", tmp, strerror(errno));
  FILE *f = fdopen(fd, "w");
  if (!f) close(fd);
  const int ok = f && fwrite(head, 1, OPCACHE_HEADER_BYTES, f) == OPCACHE_HEADER_BYTES &&
                 (bytes == 0 || fwrite(data, 1, bytes, f) == bytes);
  const int saved = errno ? errno : EIO;
  const int closed = f ? fclose(f) : -1;
  if (ok && closed == 0) return 0;
  unlink(tmp);
  return enpu_errorf(err, enpu_errno_code(saved), "cannot write %s: %s", tmp, strerror(saved));
}

int opcache_put(opcache *c, uint32_t kind, uint64_t key, const void *data, size_t bytes, enpu_err *err) {
  char path[PATH_MAX], dir[PATH_MAX], tmp[PATH_MAX + 64];
  ENPU_FORWARD(entry_path(c, kind, key, path, dir, err));
  ENPU_FORWARD(enpu_mkdir_p(dir, err));
  unsigned char head[OPCACHE_HEADER_BYTES];
  memcpy(head, "ENPUCAC1", 8);
  enpu_put_le32(head + 8, OPCACHE_FORMAT_VERSION);
  enpu_put_le32(head + 12, kind);
  enpu_put_le64(head + 16, key);
  enpu_put_le64(head + 24, bytes);
  enpu_put_le64(head + 32, enpu_hash64(data, bytes, key));
  /* Not enpu_file_write: its one `<path>.tmp` would be shared by two farms writing the
   * same entry, and the second removes the first's temporary mid-write. */
  snprintf(tmp, sizeof tmp, "%s.tmp.%ld.%lu", path, (long)getpid(), c->tmp_count++);
  ENPU_FORWARD(write_tmp(tmp, head, data, bytes, err));
  if (rename(tmp, path) == 0) return 0;
  const int saved = errno;
  unlink(tmp);
  return enpu_errorf(err, enpu_errno_code(saved), "cannot write %s: %s", path, strerror(saved));
}
