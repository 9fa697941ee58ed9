/* store_lock.c — one writer per plan store. Every process that publishes a store (the
 * farm, `enpu validate`, anything built on store_writer) holds an exclusive flock on
 * `<resolved store>.lock` from before it reads the store it will rewrite until after it
 * published; readers never take it (they see the old or the new complete file).
 *
 * Invariants:
 *  - The lock is taken on the resolved path (symbolic links followed, the directory made
 *    absolute), so `link.h5 -> real.h5` and `real.h5` are one store with one lock, and
 *    the writer publishes by renaming over the real file (a link stays a link). The
 *    store path's own links are the user's (followed on purpose); the files beside the
 *    resolved store are the writer's: `.lock`, `.tmp` and `.journal` that are symbolic
 *    links are refused (writing through one would truncate its target and, renamed
 *    over the store, turn the store into a link to it), and so are a lock file and a
 *    journal with other hard links (both are written in place: the other names' content
 *    would change).
 *  - A store with more than one hard link is refused: the writer publishes by rename,
 *    which gives the name it locked a new inode and leaves the other names on the old
 *    one, so a writer through another name would hold another lock on the same data.
 *    Refusing (rather than locking the inode) keeps one store = one name = one lock.
 *  - flock belongs to the open file description: the kernel drops it when the holder
 *    dies, however it dies; a second acquire in the same process on another descriptor
 *    conflicts, so a process passes its lock on (validate inside the farm) instead.
 *  - The holder writes "pid host since command" into the lock file after taking it, so
 *    a refused writer can say who holds the store; the file is never deleted (deleting
 *    it would let two writers lock two different inodes). The lock is advisory and
 *    needs a file system whose flock works across the writers' hosts (local disks;
 *    Linux NFS clients map flock onto NFS byte-range locks). */
#define _XOPEN_SOURCE 700 /* realpath */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "store.h"

#define STORE_LOCK_MAX_LINKS 40 /* as the kernel's limit on nested symbolic links */

struct store_lock {
  int fd;
  char store[PATH_MAX]; /* the resolved store path */
  char lock_path[PATH_MAX + 8];
};

/* Follow symbolic links at `path` itself (a link may name a store not written yet). */
static int follow_links(const char *path, char cur[PATH_MAX], enpu_err *err) {
  ENPU_RETURN_IF(snprintf(cur, PATH_MAX, "%s", path) >= PATH_MAX, err, ENPU_ERR_RANGE, "store path too long: %s",
                 path);
  for (int hops = 0;; hops++) {
    struct stat st;
    if (lstat(cur, &st) != 0 || !S_ISLNK(st.st_mode)) return ENPU_OK;
    ENPU_RETURN_IF(hops == STORE_LOCK_MAX_LINKS, err, ENPU_ERR_IO, "%s: too many levels of symbolic links", path);
    char target[PATH_MAX];
    ssize_t n = readlink(cur, target, sizeof target - 1);
    ENPU_RETURN_IF(n < 0, err, ENPU_ERR_IO, "%s: cannot read the link: %s", cur, strerror(errno));
    target[n] = '\0';
    const char *slash = strrchr(cur, '/');
    char next[PATH_MAX];
    int len = target[0] == '/' || !slash ? snprintf(next, sizeof next, "%s", target)
                                         : snprintf(next, sizeof next, "%.*s/%s", (int)(slash - cur), cur, target);
    ENPU_RETURN_IF(len >= PATH_MAX, err, ENPU_ERR_RANGE, "%s: link target too long", cur);
    memcpy(cur, next, (size_t)len + 1);
  }
}

int store_resolve_path(const char *path, char *out, size_t cap, enpu_err *err) {
  char cur[PATH_MAX];
  ENPU_FORWARD(follow_links(path, cur, err));
  const char *slash = strrchr(cur, '/');
  const char *base = slash ? slash + 1 : cur;
  char dir[PATH_MAX], real_dir[PATH_MAX];
  snprintf(dir, sizeof dir, "%.*s", slash ? (int)(slash - cur) : 1, slash ? cur : ".");
  if (slash == cur) snprintf(dir, sizeof dir, "/");
  ENPU_RETURN_IF(!base[0] || !strcmp(base, ".") || !strcmp(base, ".."), err, ENPU_ERR_INVALID,
                 "store path %s does not name a file", path);
  ENPU_RETURN_IF(!realpath(dir, real_dir), err, ENPU_ERR_IO, "store %s: directory %s: %s", path, dir,
                 strerror(errno));
  int n = snprintf(out, cap, "%s/%s", strcmp(real_dir, "/") ? real_dir : "", base);
  ENPU_RETURN_IF(n < 0 || (size_t)n >= cap, err, ENPU_ERR_RANGE, "store path too long: %s", path);
  return ENPU_OK;
}

/* A file the writer owns beside the store must not be a symbolic link, nor, when the
 * writer writes it in place (the journal), a file of other names (their content would
 * change with it). */
static int refuse_link(const char *path, const char *what, int in_place, enpu_err *err) {
  struct stat st;
  if (lstat(path, &st) != 0) return ENPU_OK;
  ENPU_RETURN_IF(in_place && S_ISREG(st.st_mode) && st.st_nlink > 1, err, ENPU_ERR_INVALID,
                 "refusing %s: it has %ju hard links, and a store's %s is written in place (the other names "
                 "would change with it); remove the other links",
                 path, (uintmax_t)st.st_nlink, what);
  if (!S_ISLNK(st.st_mode)) return ENPU_OK;
  char target[PATH_MAX] = "?";
  ssize_t n = readlink(path, target, sizeof target - 1);
  target[n > 0 ? n : 1] = '\0';
  return enpu_errorf(err, ENPU_ERR_INVALID,
                     "refusing %s: it is a symbolic link (to %s), and a store's %s is never written through a "
                     "link (its target would be overwritten); remove the link",
                     path, target, what);
}

int store_sibling_path(const char *store, store_sibling s, char *out, size_t len) {
  static const char *const suffix[] = {
      [STORE_SIBLING_TMP] = ".tmp", [STORE_SIBLING_JOURNAL] = ".journal", [STORE_SIBLING_LOCK] = ".lock"};
  const int n = (unsigned)s < sizeof suffix / sizeof *suffix ? snprintf(out, len, "%s%s", store, suffix[s]) : -1;
  if (n >= 0 && (size_t)n < len) return ENPU_OK;
  if (len) out[0] = '\0';
  return ENPU_ERR_RANGE;
}

/* The lock file is a plain file of one name, and the store (if any) has one name. */
static int check_files(const store_lock *l, enpu_err *err) {
  struct stat st;
  ENPU_RETURN_IF(fstat(l->fd, &st) != 0, err, enpu_errno_code(errno), "%s: %s", l->lock_path, strerror(errno));
  ENPU_RETURN_IF(!S_ISREG(st.st_mode) || st.st_nlink != 1, err, ENPU_ERR_INVALID,
                 "refusing %s: it is not a plain file of one name (%ju hard links); remove it", l->lock_path,
                 (uintmax_t)st.st_nlink);
  char path[PATH_MAX + 16];
  store_sibling_path(l->store, STORE_SIBLING_TMP, path, sizeof path); /* fits: the store fits in PATH_MAX */
  ENPU_FORWARD(refuse_link(path, "temporary file", 0, err));
  store_sibling_path(l->store, STORE_SIBLING_JOURNAL, path, sizeof path);
  ENPU_FORWARD(refuse_link(path, "journal", 1, err));
  ENPU_RETURN_IF(stat(l->store, &st) == 0 && S_ISREG(st.st_mode) && st.st_nlink > 1, err, ENPU_ERR_INVALID,
                 "refusing plan store %s: it has %ju hard links. A writer publishes by renaming a new file over "
                 "this name, so the other names would keep the old store, and a writer through another name "
                 "would not see this one's lock; remove the other links (or copy the file)",
                 l->store, (uintmax_t)st.st_nlink);
  return ENPU_OK;
}

/* Record who holds the lock (best effort: a reader of it only prints it). */
static void write_holder(int fd, const char *command) {
  char host[256] = "?", since[32] = "?", line[1024];
  gethostname(host, sizeof host);
  host[sizeof host - 1] = '\0';
  time_t now = time(NULL);
  struct tm utc;
  if (gmtime_r(&now, &utc)) strftime(since, sizeof since, "%Y-%m-%dT%H:%M:%SZ", &utc);
  int n = snprintf(line, sizeof line, "pid %ld on %s since %s: %s\n", (long)getpid(), host, since,
                   command ? command : "?");
  if (ftruncate(fd, 0) == 0 && n > 0) {
    ssize_t put = pwrite(fd, line, (size_t)n < sizeof line ? (size_t)n : sizeof line - 1, 0);
    (void)put;
  }
}

/* The holder line of a lock file, without its newline ("unknown" when empty). */
static void read_holder(int fd, char *out, size_t cap) {
  ssize_t n = pread(fd, out, cap - 1, 0);
  out[n > 0 ? n : 0] = '\0';
  out[strcspn(out, "\n")] = '\0';
  if (!out[0]) snprintf(out, cap, "a writer that has not said who it is");
}

int store_lock_acquire(const char *path, const char *command, double wait_s, FILE *log, store_lock **out,
                       enpu_err *err) {
  return store_lock_acquire_until(path, command, wait_s, NULL, log, out, err);
}

int store_lock_acquire_until(const char *path, const char *command, double wait_s,
                             const volatile sig_atomic_t *stop, FILE *log, store_lock **out, enpu_err *err) {
  *out = NULL;
  store_lock *l = enpu_calloc(1, sizeof *l);
  ENPU_RETURN_IF(!l, err, ENPU_ERR_NOMEM, "out of memory");
  l->fd = -1;
  int rc = store_resolve_path(path, l->store, sizeof l->store, err);
  if (rc == ENPU_OK) {
    store_sibling_path(l->store, STORE_SIBLING_LOCK, l->lock_path, sizeof l->lock_path);
    rc = refuse_link(l->lock_path, "lock", 0, err);
  }
  if (rc == ENPU_OK) { /* O_NOFOLLOW: a link planted after the check is refused too */
    l->fd = open(l->lock_path, O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0644);
    if (l->fd < 0 && errno == ELOOP)
      rc = enpu_errorf(err, ENPU_ERR_INVALID, "refusing %s: it is a symbolic link; remove it", l->lock_path);
    else if (l->fd < 0) rc = enpu_errorf(err, enpu_errno_code(errno), "%s: %s", l->lock_path, strerror(errno));
  }
  const double start = enpu_now_s();
  for (int told = 0; rc == ENPU_OK && flock(l->fd, LOCK_EX | LOCK_NB) != 0;) {
    const int why = errno; /* read_holder may change errno */
    char holder[512];
    read_holder(l->fd, holder, sizeof holder);
    if (why == ENOSYS || why == EOPNOTSUPP || why == ENOLCK)
      rc = enpu_errorf(err, ENPU_ERR_ENV,
                       "%s: flock: %s: this file system has no file locks, so a second writer of the store "
                       "could not be kept out; put the store on a file system with flock (a local disk, NFS "
                       "with its lock service, Lustre mounted with -o flock)",
                       l->lock_path, strerror(why));
    else if (why != EWOULDBLOCK && why != EINTR)
      rc = enpu_errorf(err, ENPU_ERR_ENV, "%s: flock: %s", l->lock_path, strerror(why));
    else if (stop && *stop)
      rc = enpu_errorf(err, ENPU_ERR_STOPPED,
                       "stopped by signal %d while waiting for plan store %s (being written by %s): nothing was "
                       "done; rerun the same command to resume",
                       (int)*stop, l->store, holder);
    else if (enpu_now_s() - start >= wait_s)
      rc = enpu_errorf(err, ENPU_ERR_ENV, "plan store %s is being written by %s (lock %s; waited %.0f s)", l->store,
                       holder, l->lock_path, wait_s);
    else if (!told++ && log)
      fprintf(log, "plan store %s is being written by %s: waiting up to %.0f s\n", l->store, holder, wait_s);
    if (rc == ENPU_OK) nanosleep(&(struct timespec){0, 100000000L}, NULL);
  }
  if (rc == ENPU_OK) rc = check_files(l, err);
  if (rc < 0) {
    if (l->fd >= 0) close(l->fd);
    free(l);
    return rc;
  }
  write_holder(l->fd, command);
  *out = l;
  return ENPU_OK;
}

const char *store_lock_path(const store_lock *l) { return l->store; }

void store_lock_release(store_lock *l) {
  if (!l) return;
  close(l->fd); /* the holder line stays: it is read only while someone holds the lock */
  free(l);
}
