/* opcache_scan.c — walks over a whole cache (opcache.h): `enpu cache stats` counts its
 * entries (and changes nothing), `verify` reads and checks each one (removing the
 * damaged), `prune` removes the least recently used until the cache fits its size. Those
 * two also remove the temporary files of writers that died, once they are an hour old
 * (a live writer renames its own within moments). */
#define _XOPEN_SOURCE 700
#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "opcache_internal.h"

enum { TMP_STALE_S = 3600 };

typedef struct {
  char path[PATH_MAX];
  int64_t bytes;
  struct timespec mtime;
  uint32_t kind;
} entry_info;

typedef struct {
  entry_info *v;
  size_t n, cap;
} entry_list;

/* The kind in an entry's name (<16 hex>-<kind>), or 0 for a name that is no entry's. */
static uint32_t name_kind(const char *name) {
  if (strlen(name) < 18 || name[16] != '-' || strchr(name, '.')) return 0;
  return (uint32_t)strtoul(name + 17, NULL, 10);
}

/* One file of a shard directory: an entry appended to the list, or a temporary. */
static int visit_file(const char *dir, const char *name, int tidy, entry_list *l, opcache_scan *s, enpu_err *err) {
  char path[PATH_MAX];
  ENPU_RETURN_IF(snprintf(path, sizeof path, "%s/%s", dir, name) >= (int)sizeof path, err, ENPU_ERR_RANGE,
                 "cache path too long under %s", dir);
  struct stat st;
  if (lstat(path, &st) != 0 || !S_ISREG(st.st_mode)) return 0;
  if (strstr(name, ".tmp.")) {
    s->temporaries++;
    if (tidy && time(NULL) - st.st_mtime > TMP_STALE_S) unlink(path);
    return 0;
  }
  const uint32_t kind = name_kind(name);
  if (!kind) return 0;
  ENPU_RETURN_IF(enpu_grow((void **)&l->v, &l->cap, l->n + 1, sizeof *l->v) < 0, err, ENPU_ERR_NOMEM,
                 "out of memory (cache entries)");
  entry_info *e = &l->v[l->n++];
  snprintf(e->path, sizeof e->path, "%s", path);
  e->bytes = (int64_t)st.st_size, e->mtime = st.st_mtim, e->kind = kind;
  return 0;
}

/* Every entry under dir (a missing cache has none); with tidy, stale temporaries go. */
static int list_entries(const char *dir, int tidy, entry_list *l, opcache_scan *s, enpu_err *err) {
  char top[PATH_MAX];
  ENPU_RETURN_IF(snprintf(top, sizeof top, "%s/" OPCACHE_LAYOUT, dir) >= (int)sizeof top, err, ENPU_ERR_RANGE,
                 "cache path too long: %s", dir);
  DIR *d = opendir(top);
  if (!d && errno == ENOENT) return 0;
  ENPU_RETURN_IF(!d, err, enpu_errno_code(errno), "cannot read the cache %s: %s", top, strerror(errno));
  int rc = 0;
  for (struct dirent *de; rc == 0 && (de = readdir(d));) {
    if (strlen(de->d_name) != 2) continue;
    char shard[PATH_MAX + 8];
    snprintf(shard, sizeof shard, "%s/%.2s", top, de->d_name);
    DIR *sd = opendir(shard);
    for (struct dirent *fe; sd && rc == 0 && (fe = readdir(sd));)
      if (fe->d_name[0] != '.') rc = visit_file(shard, fe->d_name, tidy, l, s, err);
    if (sd) closedir(sd);
  }
  closedir(d);
  return rc;
}

static void count(opcache_scan *s, const entry_info *e) {
  s->entries++;
  s->entry_bytes += e->bytes;
  s->by_kind[e->kind < 4 ? e->kind : 0]++;
}

int opcache_stats(const char *dir, opcache_scan *s, enpu_err *err) {
  *s = (opcache_scan){0};
  entry_list l = {0};
  const int rc = list_entries(dir, 0, &l, s, err);
  for (size_t i = 0; rc == 0 && i < l.n; i++) count(s, &l.v[i]);
  free(l.v);
  return rc;
}

int opcache_verify(const char *dir, opcache_scan *s, enpu_err *err) {
  *s = (opcache_scan){0};
  entry_list l = {0};
  int rc = list_entries(dir, 1, &l, s, err);
  for (size_t i = 0; rc == 0 && i < l.n; i++) {
    unsigned char *buf;
    size_t n;
    const int r = opcache_read_whole(l.v[i].path, OPCACHE_MAX_ENTRY_BYTES, &buf, &n, err);
    if (r == 1) continue; /* pruned meanwhile */
    if (r < 0) rc = r;
    uint32_t kind;
    uint64_t key;
    const char *name = strrchr(l.v[i].path, '/') + 1;
    char want[32];
    if (r == 0 && opcache_entry_check(buf, n, &kind, &key) == 0 &&
        snprintf(want, sizeof want, "%016llx-%u", (unsigned long long)key, kind) > 0 && !strcmp(want, name))
      count(s, &l.v[i]);
    else if (r == 0) s->damaged++, unlink(l.v[i].path);
    free(buf);
  }
  free(l.v);
  return rc;
}

static int older_first(const void *pa, const void *pb) {
  const entry_info *a = pa, *b = pb;
  const int sec = ENPU_ORDER(a->mtime.tv_sec, b->mtime.tv_sec);
  return sec ? sec : ENPU_ORDER(a->mtime.tv_nsec, b->mtime.tv_nsec);
}

int opcache_prune(const char *dir, int64_t max_bytes, opcache_scan *s, enpu_err *err) {
  *s = (opcache_scan){0};
  entry_list l = {0};
  const int rc = list_entries(dir, 1, &l, s, err);
  int64_t total = 0;
  for (size_t i = 0; i < l.n; i++) total += l.v[i].bytes;
  qsort(l.v, l.n, sizeof *l.v, older_first);
  for (size_t i = 0; rc == 0 && i < l.n; i++) {
    if (total > max_bytes && unlink(l.v[i].path) == 0) {
      total -= l.v[i].bytes;
      s->removed++, s->removed_bytes += l.v[i].bytes;
    } else count(s, &l.v[i]);
  }
  free(l.v);
  return rc;
}
