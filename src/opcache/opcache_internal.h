/* opcache_internal.h — what opcache.c and opcache_scan.c share: the entry's layout and its
 * check, and where entries live.
 *
 * An entry file is a 40-byte header then the payload: magic "ENPUCAC1", u32 format
 * version, u32 kind, u64 key, u64 payload bytes, u64 XXH3 of the payload seeded with the
 * key, all little-endian. It lives at DIR/v1/<first two hex digits of the key>/
 * <key as 16 hex digits>-<kind>; a writer's temporary file adds ".tmp.<pid>.<n>". */
#ifndef ENPU_OPCACHE_INTERNAL_H
#define ENPU_OPCACHE_INTERNAL_H

#include "opcache.h"

enum { OPCACHE_HEADER_BYTES = 40, OPCACHE_FORMAT_VERSION = 1 };
#define OPCACHE_LAYOUT "v1"

/* The payload of an entry read whole (buf, n bytes): its offset is OPCACHE_HEADER_BYTES.
 * @return 0 when every check passes (kind and key filled), -1 otherwise. */
int opcache_entry_check(const unsigned char *buf, size_t n, uint32_t *kind, uint64_t *key);

/* Read a whole file (at most max_bytes) into *buf (malloc'd). @return 0, 1 when it does
 * not exist, or an error. */
int opcache_read_whole(const char *path, size_t max_bytes, unsigned char **buf, size_t *n, enpu_err *err);

#define OPCACHE_MAX_ENTRY_BYTES ((size_t)1 << 30)

#endif /* ENPU_OPCACHE_INTERNAL_H */
