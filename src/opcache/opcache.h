/* opcache.h — a result cache that outlives one store, one model version and one job, like a
 * compiler cache: a directory of entries, each a byte string under a 64-bit key and a
 * kind, shared by every farm on one machine or file system (src/README.md, "The farm").
 * The cache knows keys and bytes only; the farm decides what a key covers (an op
 * result's: its op signature, which hashes the cost model version, the chip and the
 * op; a bucket result's: everything its plans depend on).
 *
 * Invariants:
 *  - An entry is immutable: equal keys mean equal bytes, so two writers of one entry
 *    write the same thing. Each writes a temporary file of its own (pid and a counter in
 *    the name, created O_EXCL) and renames it over the entry's name: a reader sees no
 *    entry or a whole one, never a mix, and no lock is needed.
 *  - Every entry carries its key, kind, length and an XXH3 checksum of its payload; a
 *    read checks all of them, and an entry that fails (a torn write after a crash, a
 *    damaged disk, a hand edit) is removed and reported as damaged: the caller
 *    recomputes it, never trusts it.
 *  - A hit touches the entry's modification time, which is the LRU order opcache_prune
 *    removes oldest first. */
#ifndef ENPU_OPCACHE_H
#define ENPU_OPCACHE_H

#include <stddef.h>
#include <stdint.h>

#include "common.h"

/* The default directory: $XDG_CACHE_HOME/enpu, else $HOME/.cache/enpu.
 * @return 0, or ENPU_ERR_ENV when neither is set, ENPU_ERR_RANGE when too long. */
int opcache_default_dir(char *out, size_t len, enpu_err *err);

typedef struct opcache opcache;

/* Open (creating it and its parents) the cache at dir. */
int opcache_open(const char *dir, opcache **out, enpu_err *err);
void opcache_close(opcache *c); /* NULL no-op */
const char *opcache_dir(const opcache *c);

enum { OPCACHE_MISS = 0, OPCACHE_HIT = 1, OPCACHE_DAMAGED = 2 };

/* The payload of (kind, key) into *data (malloc'd, free() it) and *bytes on a hit.
 * @return OPCACHE_HIT, OPCACHE_MISS, OPCACHE_DAMAGED (the entry failed its checks and was
 * removed: a miss), or an error of the system (ENPU_ERR_IO/_ENV, ENPU_ERR_NOMEM). */
int opcache_get(opcache *c, uint32_t kind, uint64_t key, void **data, size_t *bytes, enpu_err *err);

/* Store the payload of (kind, key) (temporary file, then rename).
 * @return 0 or an error of the system (nothing is left behind). */
int opcache_put(opcache *c, uint32_t kind, uint64_t key, const void *data, size_t bytes, enpu_err *err);

/* What a walk over the cache found, and did. */
typedef struct {
  int64_t entries, entry_bytes;   /* intact entries (verify) or entries (stats, prune) */
  int64_t by_kind[4];             /* entries of kind 1, 2, 3, others */
  int64_t damaged;                /* verify: entries that failed their checks (removed) */
  int64_t removed, removed_bytes; /* prune: entries removed, oldest first */
  int64_t temporaries;            /* writers' temporaries (verify, prune: those older than an hour removed) */
} opcache_scan;

/* Count entries and bytes. */
int opcache_stats(const char *dir, opcache_scan *s, enpu_err *err);
/* Read and check every entry; remove the damaged ones. */
int opcache_verify(const char *dir, opcache_scan *s, enpu_err *err);
/* Remove entries, least recently used first, until at most max_bytes remain. */
int opcache_prune(const char *dir, int64_t max_bytes, opcache_scan *s, enpu_err *err);

#endif /* ENPU_OPCACHE_H */
