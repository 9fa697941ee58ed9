/* common_file.c — how every file beside a store or under a results directory is written
 * (the store itself, a new journal, summary.md, validation.md, reports, replay outputs):
 * a new temporary file `<path>.tmp` made by this code, written, then renamed over `path`;
 * how a log kept across runs is appended to; and how a file is moved aside to the first
 * free numbered name.
 *
 * Invariants: the temporary is created O_CREAT | O_EXCL | O_NOFOLLOW after whatever had
 * its name (a stale temporary, a planted symbolic or hard link) is removed as a name, and
 * the rename replaces the name at `path` itself: no file outside these two names is ever
 * opened for writing, so a link planted at either leaves its target as it was. A reader
 * of `path` sees the old file or the new one whole. A log is appended to only when it is
 * a plain file of one name (opened O_NOFOLLOW). Nothing is ever moved aside over an
 * existing name. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common.h"

/* `<path>.tmp`, or ENPU_ERR_RANGE. */
static int tmp_name(const char *path, char tmp[PATH_MAX], enpu_err *err) {
  ENPU_RETURN_IF(snprintf(tmp, PATH_MAX, "%s.tmp", path) >= PATH_MAX, err, ENPU_ERR_RANGE, "path too long: %s",
                 path);
  return ENPU_OK;
}

/* The new temporary file of `path`, open for writing. @return its descriptor or an error. */
static int create_tmp(const char *path, enpu_err *err) {
  char tmp[PATH_MAX];
  ENPU_FORWARD(tmp_name(path, tmp, err));
  ENPU_RETURN_IF(unlink(tmp) != 0 && errno != ENOENT, err, enpu_errno_code(errno), "cannot remove %s: %s", tmp,
                 strerror(errno));
  const int fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
  ENPU_RETURN_IF(fd < 0, err, errno == EEXIST ? ENPU_ERR_ENV : enpu_errno_code(errno), "cannot create %s: %s%s",
                 tmp, strerror(errno), errno == EEXIST ? " (another writer is writing the same file)" : "");
  return fd;
}

int enpu_file_create(const char *path, FILE **f, enpu_err *err) {
  *f = NULL;
  const int fd = create_tmp(path, err);
  if (fd < 0) return fd;
  *f = fdopen(fd, "w");
  if (*f) return ENPU_OK;
  close(fd);
  enpu_file_discard(NULL, path);
  return enpu_errorf(err, ENPU_ERR_NOMEM, "%s: out of memory", path);
}

void enpu_file_discard(FILE *f, const char *path) {
  char tmp[PATH_MAX];
  if (f) fclose(f);
  if (tmp_name(path, tmp, NULL) == ENPU_OK) unlink(tmp);
}

/* fsync the directory of `path`, so its new name survives a crash. */
static int sync_dir(const char *path, enpu_err *err) {
  char dir[PATH_MAX];
  const char *slash = strrchr(path, '/');
  snprintf(dir, sizeof dir, "%.*s", slash ? (int)(slash - path) + (slash == path) : 1, slash ? path : ".");
  const int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  const int rc = fd < 0 ? -1 : fsync(fd);
  const int saved = errno;
  if (fd >= 0) close(fd);
  ENPU_RETURN_IF(rc != 0, err, enpu_errno_code(saved), "cannot fsync %s: %s", dir, strerror(saved));
  return ENPU_OK;
}

int enpu_file_publish(FILE *f, const char *path, unsigned flags, enpu_err *err) {
  char tmp[PATH_MAX];
  ENPU_FORWARD(tmp_name(path, tmp, err));
  int saved = fflush(f) != 0 ? errno : ferror(f) ? EIO : 0;
  if (!saved && (flags & ENPU_FILE_DURABLE) && fsync(fileno(f)) != 0) saved = errno;
  if (fclose(f) != 0 && !saved) saved = errno;
  if (!saved && rename(tmp, path) != 0) saved = errno;
  if (saved) {
    unlink(tmp);
    return enpu_errorf(err, enpu_errno_code(saved), "cannot write %s: %s", path, strerror(saved));
  }
  return flags & ENPU_FILE_DURABLE ? sync_dir(path, err) : ENPU_OK;
}

int enpu_file_write(const char *path, const void *data, size_t bytes, unsigned flags, enpu_err *err) {
  FILE *f = NULL;
  ENPU_FORWARD(enpu_file_create(path, &f, err));
  if (bytes && fwrite(data, 1, bytes, f) != bytes) {
    const int saved = errno ? errno : EIO;
    enpu_file_discard(f, path);
    return enpu_errorf(err, enpu_errno_code(saved), "cannot write %s (%zu bytes): %s", path, bytes,
                       strerror(saved));
  }
  return enpu_file_publish(f, path, flags, err);
}

int enpu_file_append(const char *path, enpu_err *err) {
  const int fd = open(path, O_WRONLY | O_CREAT | O_APPEND | O_NOFOLLOW | O_CLOEXEC, 0644);
  ENPU_RETURN_IF(fd < 0 && errno == ELOOP, err, ENPU_ERR_INVALID,
                 "refusing %s: it is a symbolic link, and a log is never written through one; remove it", path);
  ENPU_RETURN_IF(fd < 0, err, enpu_errno_code(errno), "cannot write %s: %s", path, strerror(errno));
  struct stat st;
  if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && st.st_nlink == 1) return fd;
  close(fd);
  return enpu_errorf(
      err, ENPU_ERR_INVALID,
      "refusing %s: it is not a plain file of one name, and a log is appended to in place; remove it", path);
}

int enpu_file_move_aside(const char *path, const char *suffix, char *aside, size_t cap, enpu_err *err) {
  for (int n = 1; n <= 999; n++) {
    ENPU_RETURN_IF(snprintf(aside, cap, "%s%s-%d", path, suffix, n) >= (int)cap, err, ENPU_ERR_RANGE,
                   "%s: path too long to move it aside", path);
    /* link + unlink never replaces a name; without hard links, rename to a name that
     * does not exist (the caller's lock keeps it so) */
    int moved = link(path, aside) == 0 ? unlink(path) : -1;
    if (moved != 0 && (errno == EPERM || errno == ENOTSUP || errno == EOPNOTSUPP)) {
      struct stat st;
      if (lstat(aside, &st) == 0) continue;
      moved = errno == ENOENT ? rename(path, aside) : -1;
    }
    if (moved == 0) return ENPU_OK;
    ENPU_RETURN_IF(errno != EEXIST, err, enpu_errno_code(errno), "%s: cannot move it aside to %s: %s", path, aside,
                   strerror(errno));
  }
  return enpu_errorf(err, ENPU_ERR_ENV, "%s: %s%s-1 to -999 all exist; remove some", path, path, suffix);
}
