/* flock_enosys.c — an LD_PRELOAD shim for tests: flock() fails with ENOSYS, as it does on
 * a Lustre mount without -o flock and on some NFS mounts, so the tests can take the path
 * such a file system takes without having one. Files whose name ends in
 * ENPU_TEST_FLOCK_KEEP (default ".lock": the project's own writer lock) keep the real
 * flock; ENPU_TEST_FLOCK_KEEP="" fails every file. HDF5 locks through flock too, so its
 * file locking fails under the shim as it does there. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <unistd.h>

static int kept(int fd) {
  const char *keep = getenv("ENPU_TEST_FLOCK_KEEP");
  if (!keep) keep = ".lock";
  char link[64], path[4096];
  snprintf(link, sizeof link, "/proc/self/fd/%d", fd);
  const ssize_t n = readlink(link, path, sizeof path - 1);
  const size_t k = strlen(keep);
  if (n <= 0 || !k || (size_t)n < k) return 0;
  path[n] = '\0';
  return strcmp(path + n - k, keep) == 0;
}

int flock(int fd, int operation) {
  if (kept(fd)) {
    int (*real)(int, int) = (int (*)(int, int))dlsym(RTLD_NEXT, "flock");
    return real ? real(fd, operation) : (errno = ENOSYS, -1);
  }
  errno = ENOSYS;
  return -1;
}
