/* farm_journal.c — the append-only journal beside the store (`<store>.journal`): every
 * result the master receives is appended here and synced at least every few seconds, so
 * a crash loses at most the work since the last sync.
 *
 * Format (little-endian):
 *   header  "ENPUJRNL", u32 version (4), u32 0                               16 bytes
 *   record  u32 kind, u32 compressed bytes, u64 checksum, one zstd frame     16 + n bytes
 * The first record is the identity of the job whose work the journal holds
 * (FARM_REC_JOB, the caller's bytes), written whenever the journal holds no record (new,
 * moved aside, reset), so every record of its work follows it.
 * The checksum is enpu_hash64 (XXH3) of the compressed bytes seeded with (kind << 32 |
 * length), so a flipped bit in the kind or the length fails it too. The frame declares
 * its decompressed size, at most FARM_JOURNAL_MAX_RECORD bytes.
 *
 * Invariants:
 *  - A record is intact when its kind is 1..FARM_JOURNAL_MAX_KIND, its bytes are all
 *    present, its checksum matches and it decompresses to exactly the size its frame
 *    declares; replay and open use the same scan (journal_scan), so open truncates
 *    exactly what replay would drop.
 *  - The file on disk is the header followed by intact records, except for a torn last
 *    record after a crash or a failed write (a failed write truncates back to the last
 *    intact end when it can, so later records never follow a torn one) and bytes damaged
 *    in place. A damaged record does not hide the ones after it: the scan resynchronises
 *    on the next offset where an intact record starts, and counts the bytes it skipped.
 *  - A file whose header is not a journal's holds nothing the farm can trust: replay
 *    reports it and replays nothing, open moves it aside (to the first free
 *    `<path>.unreadable-<n>`) and starts a new journal. The store holds everything
 *    checkpointed, so that loses at most the results since the last checkpoint, which the
 *    farm recomputes.
 *  - The journal is written in place, so open refuses a file of several names (the
 *    others' content would change) and never follows a symbolic link; a new journal is
 *    made whole beside its name and renamed over it (enpu_file_write).
 *  - Records are buffered in memory until sync (or until the buffer exceeds
 *    JOURNAL_FLUSH_BYTES); only sync makes them durable.
 *  - A record's frame is made by whoever makes the record (farm_zframe_pack: a worker
 *    for the results it computes); the journal checks its size and checksums it. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zstd.h>

#include "farm_internal.h"

#define JOURNAL_MAGIC "ENPUJRNL"
/* 2: bucket records carry the budget mode, plans their critical path and overhead.
 * 3: policies are variant codes; plans carry regulator loss and gating; an epoch
 * policy's bucket records carry its epochs' op results; part records (FARM_REC_PART)
 * hold the parts of split op searches. */
#define JOURNAL_VERSION 4u
#define JOURNAL_VERSION_NO_JOB 3u /* 4: the first record is the job's identity; a 3 is read as a 4 without */
#define JOURNAL_ZSTD_LEVEL 1      /* fsync dominates; a fast level keeps the master light */
enum { HEADER_BYTES = 16, RECORD_HEAD_BYTES = 16 };
/* Largest decompressed record: far above any bucket's walk, low enough that a crafted
 * frame cannot make replay allocate much. */
#define FARM_JOURNAL_MAX_RECORD ((size_t)64 << 20)
#define JOURNAL_FLUSH_BYTES ((size_t)4 << 20)
#define RESYNC_WINDOW_BYTES ((size_t)1 << 20) /* read at once while looking for a record */

struct farm_journal {
  int fd;
  char *path;
  off_t end;        /* end of the last record written to the file */
  farm_buf pending; /* encoded records not yet written */
  farm_zframe *z;
  farm_buf frame;    /* the record being appended, packed */
  farm_buf identity; /* the FARM_REC_JOB payload (len 0: none) */
  char *aside;       /* where open moved an unreadable file, or NULL */
};

/* Scratch reused across records while scanning. */
typedef struct {
  farm_buf comp, plain, window;
  ZSTD_DCtx *dctx;
} scan_scratch;

static void scratch_free(scan_scratch *sc) {
  farm_buf_free(&sc->comp);
  farm_buf_free(&sc->plain);
  farm_buf_free(&sc->window);
  ZSTD_freeDCtx(sc->dctx);
}

static void make_header(unsigned char h[HEADER_BYTES]) {
  memcpy(h, JOURNAL_MAGIC, 8);
  enpu_put_le32(h + 8, JOURNAL_VERSION);
  enpu_put_le32(h + 12, 0);
}

static uint64_t record_checksum(uint32_t kind, const void *comp, uint32_t comp_bytes) {
  return enpu_hash64(comp, comp_bytes, ((uint64_t)kind << 32) | comp_bytes);
}

/* Read exactly n bytes at off. @return 0, 1 at end of file, or -1 (errno set). */
static int pread_full(int fd, void *buf, size_t n, off_t off) {
  unsigned char *p = buf;
  while (n > 0) {
    ssize_t got = pread(fd, p, n, off);
    if (got < 0 && errno == EINTR) continue;
    if (got < 0) return -1;
    if (got == 0) return 1;
    p += got;
    n -= (size_t)got;
    off += got;
  }
  return 0;
}

static int pwrite_full(int fd, const void *buf, size_t n, off_t off) {
  const unsigned char *p = buf;
  while (n > 0) {
    ssize_t put = pwrite(fd, p, n, off);
    if (put < 0 && errno == EINTR) continue;
    if (put < 0) return -1;
    p += put;
    n -= (size_t)put;
    off += put;
  }
  return 0;
}

static int grow_buf(farm_buf *b, size_t need, const char *path, enpu_err *err) {
  ENPU_RETURN_IF(enpu_grow((void **)&b->data, &b->cap, need, 1) < 0, err, ENPU_ERR_NOMEM,
                 "%s: no memory for a %zu-byte journal record", path, need);
  return ENPU_OK;
}

enum { HEADER_INTACT = 0, HEADER_TORN = 1, HEADER_BAD = 2 };

/* Check the header of a file of `size` bytes. @return HEADER_INTACT, HEADER_TORN (the
 * file is shorter than a header and holds a prefix of one), HEADER_BAD (not a journal's
 * header), or ENPU_ERR_IO. */
static int check_header(int fd, off_t size, const char *path, enpu_err *err) {
  unsigned char want[HEADER_BYTES], got[HEADER_BYTES];
  make_header(want);
  size_t n = size < HEADER_BYTES ? (size_t)size : HEADER_BYTES;
  ENPU_RETURN_IF(pread_full(fd, got, n, 0) != 0, err, enpu_errno_code(errno), "%s: cannot read: %s", path,
                 strerror(errno));
  if (n == HEADER_BYTES && enpu_get_le32(got + 8) == JOURNAL_VERSION_NO_JOB)
    enpu_put_le32(got + 8, JOURNAL_VERSION);
  if (memcmp(got, want, n) != 0) return HEADER_BAD;
  return n < HEADER_BYTES ? HEADER_TORN : HEADER_INTACT;
}

/* Could a record of this kind and length start `room` bytes before the end of the file?
 * The cheap test that keeps resynchronising from hashing most offsets. */
static int head_plausible(uint32_t kind, uint32_t comp_bytes, off_t room) {
  return kind >= 1 && kind <= FARM_JOURNAL_MAX_KIND && room >= RECORD_HEAD_BYTES &&
         (uint64_t)comp_bytes <= (uint64_t)(room - RECORD_HEAD_BYTES) &&
         comp_bytes <= ZSTD_compressBound(FARM_JOURNAL_MAX_RECORD);
}

/* Is the record at `off` intact? Fills sc->plain with its payload. @return 1 intact,
 * 0 torn or corrupt, or a negative error (I/O, memory). */
static int read_record(int fd, off_t off, off_t size, scan_scratch *sc, uint32_t *kind, uint32_t *comp_len,
                       const char *path, enpu_err *err) {
  unsigned char head[RECORD_HEAD_BYTES];
  if (size - off < RECORD_HEAD_BYTES) return 0;
  ENPU_RETURN_IF(pread_full(fd, head, sizeof head, off) < 0, err, enpu_errno_code(errno),
                 "%s: cannot read at %lld: %s", path, (long long)off, strerror(errno));
  *kind = enpu_get_le32(head);
  uint32_t comp_bytes = *comp_len = enpu_get_le32(head + 4);
  uint64_t sum = enpu_get_le64(head + 8);
  if (!head_plausible(*kind, comp_bytes, size - off)) return 0;
  ENPU_FORWARD(grow_buf(&sc->comp, comp_bytes ? comp_bytes : 1, path, err));
  ENPU_RETURN_IF(pread_full(fd, sc->comp.data, comp_bytes, off + RECORD_HEAD_BYTES) < 0, err,
                 enpu_errno_code(errno), "%s: cannot read at %lld: %s", path, (long long)off, strerror(errno));
  if (record_checksum(*kind, sc->comp.data, comp_bytes) != sum) return 0;
  unsigned long long plain = ZSTD_getFrameContentSize(sc->comp.data, comp_bytes);
  size_t frame = ZSTD_findFrameCompressedSize(sc->comp.data, comp_bytes);
  if (plain == ZSTD_CONTENTSIZE_ERROR || plain == ZSTD_CONTENTSIZE_UNKNOWN || plain > FARM_JOURNAL_MAX_RECORD ||
      ZSTD_isError(frame) || frame != comp_bytes)
    return 0;
  ENPU_FORWARD(grow_buf(&sc->plain, plain ? (size_t)plain : 1, path, err));
  size_t got = ZSTD_decompressDCtx(sc->dctx, sc->plain.data, (size_t)plain, sc->comp.data, comp_bytes);
  if (ZSTD_isError(got) || got != plain) return 0;
  sc->plain.len = got;
  return 1;
}

/* The first offset >= from where an intact record starts, or `size` when none does:
 * windows of the file are read at once and only offsets whose head is plausible are
 * read and checked in full. */
static int find_record(int fd, off_t from, off_t size, scan_scratch *sc, off_t *at, const char *path,
                       enpu_err *err) {
  *at = size;
  ENPU_FORWARD(grow_buf(&sc->window, RESYNC_WINDOW_BYTES + RECORD_HEAD_BYTES, path, err));
  for (off_t base = from; base < size; base += (off_t)RESYNC_WINDOW_BYTES) {
    size_t got = (size_t)(size - base) < RESYNC_WINDOW_BYTES + RECORD_HEAD_BYTES
                     ? (size_t)(size - base)
                     : RESYNC_WINDOW_BYTES + RECORD_HEAD_BYTES;
    ENPU_RETURN_IF(pread_full(fd, sc->window.data, got, base) != 0, err, enpu_errno_code(errno),
                   "%s: cannot read at %lld: %s", path, (long long)base, strerror(errno));
    for (size_t i = 0; i < RESYNC_WINDOW_BYTES && i + RECORD_HEAD_BYTES <= got; i++) {
      const unsigned char *h = sc->window.data + i;
      if (!head_plausible(enpu_get_le32(h), enpu_get_le32(h + 4), size - base - (off_t)i)) continue;
      uint32_t kind, comp_len;
      int intact = read_record(fd, base + (off_t)i, size, sc, &kind, &comp_len, path, err);
      if (intact < 0) return intact;
      if (intact) {
        *at = base + (off_t)i;
        return ENPU_OK;
      }
    }
  }
  return ENPU_OK;
}

/* Walk the records of an open journal of `size` bytes (header already checked), calling
 * fn (if any) for each intact one and resynchronising after a damaged one; *good_end
 * receives the end of the last intact record. */
static int journal_scan(int fd, off_t size, const char *path, farm_journal_fn fn, void *user,
                        farm_journal_stats *st, off_t *good_end, enpu_err *err) {
  scan_scratch sc = {.dctx = ZSTD_createDCtx()};
  ENPU_RETURN_IF(!sc.dctx, err, ENPU_ERR_NOMEM, "%s: no memory for zstd", path);
  off_t off = HEADER_BYTES;
  *good_end = off;
  int rc = ENPU_OK;
  for (;;) {
    uint32_t kind = 0, comp_len = 0;
    int intact = read_record(fd, off, size, &sc, &kind, &comp_len, path, err);
    if (intact < 0) {
      rc = intact;
      break;
    }
    if (!intact) {
      off_t next = size;
      rc = off + 1 < size ? find_record(fd, off + 1, size, &sc, &next, path, err) : ENPU_OK;
      if (rc < 0 || next >= size) break;
      st->skipped_bytes += next - off;
      off = next;
      continue;
    }
    if (fn && (rc = fn(user, kind, sc.plain.data, sc.plain.len, err)) < 0) {
      enpu_err_prefix(err, "%s: record %lld at offset %lld: ", path, (long long)st->records, (long long)off);
      break;
    }
    st->records++;
    off += RECORD_HEAD_BYTES + (off_t)comp_len;
    *good_end = off;
  }
  scratch_free(&sc);
  return rc;
}

/* Open `path` read-only for replay: a regular file (O_NONBLOCK: a FIFO planted there is
 * refused, not waited on). @return 0, 1 when it does not exist, or an error. */
static int open_existing(const char *path, int *fd, off_t *size, enpu_err *err) {
  *fd = open(path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC); /* store_lock refuses a link here */
  if (*fd < 0 && errno == ENOENT) return 1;
  ENPU_RETURN_IF(*fd < 0, err, enpu_errno_code(errno), "%s: cannot open: %s", path, strerror(errno));
  struct stat st;
  int rc = ENPU_OK;
  if (fstat(*fd, &st) != 0)
    rc = enpu_errorf(err, enpu_errno_code(errno), "%s: cannot stat: %s", path, strerror(errno));
  else if (!S_ISREG(st.st_mode))
    rc = enpu_errorf(err, ENPU_ERR_INVALID,
                     "%s: expected a regular file (a farm's journal), got something else; remove it", path);
  if (rc < 0) {
    close(*fd);
    *fd = -1;
    return rc;
  }
  *size = st.st_size;
  return ENPU_OK;
}

int farm_journal_replay(const char *path, farm_journal_fn fn, void *user, farm_journal_stats *st, enpu_err *err) {
  *st = (farm_journal_stats){0};
  int fd;
  off_t size = 0, good_end = 0;
  int rc = open_existing(path, &fd, &size, err);
  if (rc != ENPU_OK) return rc > 0 ? ENPU_OK : rc;
  rc = check_header(fd, size, path, err);
  st->unreadable = rc == HEADER_BAD;
  if (rc == HEADER_INTACT) rc = journal_scan(fd, size, path, fn, user, st, &good_end, err);
  else if (rc > 0) rc = ENPU_OK; /* torn (a crash right after creation) or unreadable: no records */
  close(fd);
  st->dropped_bytes = rc == ENPU_OK && !st->unreadable ? (int64_t)(size - good_end) : 0;
  return rc;
}

/* Make the file exactly `bytes` long and durable. */
static int truncate_sync(int fd, off_t bytes, const char *path, enpu_err *err) {
  ENPU_RETURN_IF(ftruncate(fd, bytes) != 0 || fsync(fd) != 0, err, enpu_errno_code(errno),
                 "%s: cannot truncate to %lld bytes: %s", path, (long long)bytes, strerror(errno));
  return ENPU_OK;
}

/* Open the file at j->path to append: a plain file of one name, never through a link.
 * @return 0, 1 when there is none, or an error. */
static int open_file(farm_journal *j, enpu_err *err) {
  j->fd = open(j->path, O_RDWR | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
  if (j->fd < 0 && errno == ENOENT) return 1;
  ENPU_RETURN_IF(j->fd < 0, err, errno == ELOOP ? ENPU_ERR_INVALID : enpu_errno_code(errno), "%s: cannot open: %s",
                 j->path, strerror(errno));
  struct stat st;
  ENPU_RETURN_IF(fstat(j->fd, &st) != 0, err, enpu_errno_code(errno), "%s: cannot stat: %s", j->path,
                 strerror(errno));
  ENPU_RETURN_IF(!S_ISREG(st.st_mode) || st.st_nlink != 1, err, ENPU_ERR_INVALID,
                 "refusing %s: it is not a plain file of one name (%ju hard links), and a journal is written in "
                 "place; remove it",
                 j->path, (uintmax_t)st.st_nlink);
  return ENPU_OK;
}

/* A new journal, its header alone, in place of whatever had its name. */
static int create_file(farm_journal *j, enpu_err *err) {
  if (j->fd >= 0) close(j->fd);
  j->fd = -1;
  unsigned char h[HEADER_BYTES];
  make_header(h);
  ENPU_FORWARD(enpu_file_write(j->path, h, sizeof h, ENPU_FILE_DURABLE, err));
  const int rc = open_file(j, err);
  ENPU_RETURN_IF(rc > 0, err, ENPU_ERR_IO, "%s: removed right after it was made", j->path);
  j->end = HEADER_BYTES;
  return rc;
}

/* A file that is no journal goes to the first free `<path>.unreadable-<n>` (for a
 * post-mortem) and a new journal takes its place. */
static int move_aside(farm_journal *j, enpu_err *err) {
  char aside[PATH_MAX];
  ENPU_FORWARD(enpu_file_move_aside(j->path, ".unreadable", aside, sizeof aside, err));
  j->aside = strdup(aside);
  ENPU_RETURN_IF(!j->aside, err, ENPU_ERR_NOMEM, "%s: out of memory", j->path);
  return create_file(j, err);
}

/* Bring an open journal file to "header + intact records" and find its end. */
static int prepare_file(farm_journal *j, enpu_err *err) {
  struct stat st;
  ENPU_RETURN_IF(fstat(j->fd, &st) != 0, err, enpu_errno_code(errno), "%s: cannot stat: %s", j->path,
                 strerror(errno));
  int rc = check_header(j->fd, st.st_size, j->path, err);
  if (rc < 0) return rc;
  if (rc == HEADER_BAD) return move_aside(j, err);
  if (rc == HEADER_TORN) return create_file(j, err); /* a crash before its header was complete */
  unsigned char h[HEADER_BYTES];                     /* an older version's header becomes this one's */
  make_header(h);
  ENPU_RETURN_IF(pwrite_full(j->fd, h, sizeof h, 0) != 0, err, enpu_errno_code(errno),
                 "%s: cannot write the header: %s", j->path, strerror(errno));
  off_t good_end;
  farm_journal_stats scanned = {0};
  ENPU_FORWARD(journal_scan(j->fd, st.st_size, j->path, NULL, NULL, &scanned, &good_end, err));
  if (good_end < st.st_size) ENPU_FORWARD(truncate_sync(j->fd, good_end, j->path, err));
  j->end = good_end;
  return ENPU_OK;
}

/* The job's identity first, whenever the journal holds no record. */
static int begin(farm_journal *j, enpu_err *err) {
  if (j->end != HEADER_BYTES || !j->identity.len) return ENPU_OK;
  return farm_journal_append(j, FARM_REC_JOB, j->identity.data, j->identity.len, err);
}

int farm_journal_open(const char *path, const void *identity, size_t identity_bytes, farm_journal **out,
                      enpu_err *err) {
  *out = NULL;
  farm_journal *j = calloc(1, sizeof *j);
  ENPU_RETURN_IF(!j, err, ENPU_ERR_NOMEM, "%s: out of memory", path);
  j->path = strdup(path);
  j->fd = -1;
  int rc = j->path ? ENPU_OK : enpu_errorf(err, ENPU_ERR_NOMEM, "%s: out of memory", path);
  if (rc == ENPU_OK) rc = farm_zframe_create(&j->z, err);
  if (rc == ENPU_OK && identity_bytes) rc = grow_buf(&j->identity, identity_bytes, path, err);
  if (rc == ENPU_OK && identity_bytes) memcpy(j->identity.data, identity, j->identity.len = identity_bytes);
  if (rc == ENPU_OK) rc = open_file(j, err);
  if (rc > 0) rc = create_file(j, err);
  else if (rc == ENPU_OK) rc = prepare_file(j, err);
  if (rc == ENPU_OK) rc = begin(j, err);
  if (rc != ENPU_OK) {
    farm_journal_free(j);
    return rc;
  }
  *out = j;
  return ENPU_OK;
}

const char *farm_journal_aside(const farm_journal *j) { return j->aside; }

int farm_journal_identity(const char *path, farm_buf *out, int64_t *after, enpu_err *err) {
  out->len = 0;
  *after = 0;
  int fd;
  off_t size = 0;
  int rc = open_existing(path, &fd, &size, err);
  if (rc != ENPU_OK) return rc > 0 ? ENPU_OK : rc;
  scan_scratch sc = {.dctx = ZSTD_createDCtx()};
  uint32_t kind = 0, comp_len = 0;
  rc = check_header(fd, size, path, err);
  if (rc == HEADER_INTACT)
    rc = sc.dctx ? read_record(fd, HEADER_BYTES, size, &sc, &kind, &comp_len, path, err)
                 : enpu_errorf(err, ENPU_ERR_NOMEM, "%s: no memory for zstd", path);
  else if (rc > 0) rc = 0; /* torn or unreadable: no identity */
  if (rc == 1 && kind == FARM_REC_JOB && (rc = grow_buf(out, sc.plain.len + 1, path, err)) == ENPU_OK) {
    memcpy(out->data, sc.plain.data, out->len = sc.plain.len);
    *after = size - HEADER_BYTES - RECORD_HEAD_BYTES - comp_len;
  }
  scratch_free(&sc);
  close(fd);
  return rc < 0 ? rc : ENPU_OK;
}

/* Write the pending records after the last intact one. On failure the file is cut back
 * to that end (so no record ever follows a torn one) and the records stay pending. */
static int write_pending(farm_journal *j, enpu_err *err) {
  if (j->pending.len == 0) return ENPU_OK;
  if (pwrite_full(j->fd, j->pending.data, j->pending.len, j->end) != 0) {
    int saved = errno;
    int cut = ftruncate(j->fd, j->end); /* if this fails too, replay stops at the torn record */
    return enpu_errorf(err, enpu_errno_code(saved), "%s: cannot append %zu bytes: %s (torn tail %s)", j->path,
                       j->pending.len, strerror(saved), cut == 0 ? "removed" : "left in place");
  }
  j->end += (off_t)j->pending.len;
  j->pending.len = 0;
  return ENPU_OK;
}

int farm_journal_append(farm_journal *j, uint32_t kind, const void *payload, size_t bytes, enpu_err *err) {
  ENPU_FORWARD(farm_zframe_pack(j->z, payload, bytes, &j->frame, err));
  return farm_journal_append_frame(j, kind, j->frame.data, j->frame.len, err);
}

int farm_journal_append_frame(farm_journal *j, uint32_t kind, const void *frame, size_t len, enpu_err *err) {
  ENPU_RETURN_IF(len > ZSTD_compressBound(FARM_JOURNAL_MAX_RECORD), err, ENPU_ERR_RANGE,
                 "%s: a %zu-byte frame exceeds the journal's limit", j->path, len);
  size_t at = j->pending.len;
  ENPU_FORWARD(grow_buf(&j->pending, at + RECORD_HEAD_BYTES + len, j->path, err));
  unsigned char *rec = j->pending.data + at;
  memcpy(rec + RECORD_HEAD_BYTES, frame, len);
  enpu_put_le32(rec, kind);
  enpu_put_le32(rec + 4, (uint32_t)len); /* len <= the bound of 64 MiB: fits */
  enpu_put_le64(rec + 8, record_checksum(kind, rec + RECORD_HEAD_BYTES, (uint32_t)len));
  j->pending.len = at + RECORD_HEAD_BYTES + len;
  return j->pending.len >= JOURNAL_FLUSH_BYTES ? write_pending(j, err) : ENPU_OK;
}

/* ---------------------------------------------------------------------------------
 * Frames: one zstd frame per record, made where the record is made (a worker packs the
 * results it sends beside them, so the master appends them as they came). */

struct farm_zframe {
  ZSTD_CCtx *cctx;
};

int farm_zframe_create(farm_zframe **out, enpu_err *err) {
  farm_zframe *z = calloc(1, sizeof *z);
  if (z) z->cctx = ZSTD_createCCtx();
  size_t set = z && z->cctx ? ZSTD_CCtx_setParameter(z->cctx, ZSTD_c_compressionLevel, JOURNAL_ZSTD_LEVEL) : 0;
  if (z && z->cctx && !ZSTD_isError(set)) set = ZSTD_CCtx_setParameter(z->cctx, ZSTD_c_contentSizeFlag, 1);
  if (!z || !z->cctx || ZSTD_isError(set)) {
    farm_zframe_free(z);
    return enpu_errorf(err, ENPU_ERR_NOMEM, "zstd contexts: %s",
                       ZSTD_isError(set) ? ZSTD_getErrorName(set) : "out of memory");
  }
  *out = z;
  return ENPU_OK;
}

void farm_zframe_free(farm_zframe *z) {
  if (!z) return;
  ZSTD_freeCCtx(z->cctx);
  free(z);
}

int farm_zframe_pack(farm_zframe *z, const void *payload, size_t bytes, farm_buf *out, enpu_err *err) {
  ENPU_RETURN_IF(bytes > FARM_JOURNAL_MAX_RECORD, err, ENPU_ERR_RANGE,
                 "a %zu-byte record exceeds the journal's limit of %zu bytes", bytes, FARM_JOURNAL_MAX_RECORD);
  const size_t bound = ZSTD_compressBound(bytes);
  ENPU_FORWARD(grow_buf(out, bound, "zstd frame", err));
  const size_t comp = ZSTD_compress2(z->cctx, out->data, bound, bytes ? payload : "", bytes);
  ENPU_RETURN_IF(ZSTD_isError(comp), err, ENPU_ERR_INTERNAL, "zstd: %s", ZSTD_getErrorName(comp));
  out->len = comp;
  return ENPU_OK;
}

int farm_journal_sync(farm_journal *j, enpu_err *err) {
  ENPU_FORWARD(write_pending(j, err));
  ENPU_RETURN_IF(fdatasync(j->fd) != 0, err, enpu_errno_code(errno), "%s: cannot sync: %s", j->path,
                 strerror(errno));
  return ENPU_OK;
}

int farm_journal_reset(farm_journal *j, enpu_err *err) {
  j->pending.len = 0; /* buffered records are covered by the checkpoint as well */
  ENPU_FORWARD(truncate_sync(j->fd, HEADER_BYTES, j->path, err));
  j->end = HEADER_BYTES;
  return begin(j, err);
}

void farm_journal_free(farm_journal *j) {
  if (!j) return;
  if (j->fd >= 0) close(j->fd);
  farm_zframe_free(j->z);
  farm_buf_free(&j->frame);
  farm_buf_free(&j->pending);
  farm_buf_free(&j->identity);
  free(j->aside);
  free(j->path);
  free(j);
}
