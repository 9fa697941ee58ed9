/* common.h — what every module shares: stable error codes with a message buffer
 * (enpu_err.h), checked allocation, growable arrays, file and path helpers, content
 * hashing (xxHash XXH3-64) and a monotonic clock. Modules print through the FILE* their
 * caller gives them; there is no logger.
 *
 * Invariants: nothing here keeps global mutable state; every function that can fail
 * returns 0 or a negative ENPU_ERR_* code and, when given an enpu_err, fills it.
 * The module prefix is `enpu_` (the project namespace) because common sits below
 * every other module. */
#ifndef ENPU_COMMON_H
#define ENPU_COMMON_H

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h> /* memcpy, for the inline heap */

#include "enpu_err.h" /* the error codes and enpu_err */

/* Name of an error code ("invalid input", ...); never NULL. */
const char *enpu_strerror(int code);

/* Fill err (may be NULL) with code and a printf-style message.
 * @return code, so callers can `return enpu_errorf(err, ENPU_ERR_RANGE, ...)`. */
int enpu_errorf(enpu_err *err, int code, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

/* Prepend context ("loading jobs/x.json: ") to an already-filled message. */
void enpu_err_prefix(enpu_err *err, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* zstd-style helpers that keep the happy path readable. */
#define ENPU_RETURN_IF(cond, err, code, ...)                  \
  do {                                                        \
    if (cond) return enpu_errorf((err), (code), __VA_ARGS__); \
  } while (0)
#define ENPU_FORWARD(expr)             \
  do {                                 \
    int enpu_rc_ = (expr);             \
    if (enpu_rc_ < 0) return enpu_rc_; \
  } while (0)

/* ENPU_ERR_ENV for an errno that says the system failed or ran out of something (no
 * space, quota, I/O error, read-only file system, too many open files, no memory);
 * ENPU_ERR_IO for the others (a path that does not exist or may not be used). */
int enpu_errno_code(int errnum);

/* calloc that checks n*size for overflow; NULL on failure. */
void *enpu_calloc(size_t n, size_t size);

/* One part of a block of parallel arrays: the address of a pointer member (T **), its
 * element count and element size. ENPU_PART(s->time_ns, n) names s->time_ns. */
typedef struct {
  void *slot;
  size_t count, size;
} enpu_part;
#define ENPU_PART(ptr, n) ((enpu_part){(void *)&(ptr), (size_t)(n), sizeof *(ptr)})

/* One zeroed allocation holding every part's array (each aligned for any type, at least
 * one element, as enpu_calloc), so a struct's parallel arrays are made in one call and
 * freed with one free() of the first part's pointer, which owns the block. At most 16
 * parts.
 * @return 0, or ENPU_ERR_NOMEM (no memory or a size overflow) with no slot changed. */
int enpu_calloc_parts(const enpu_part *parts, size_t nparts);
/* enpu_calloc_parts of the parts listed: ENPU_CALLOC_PARTS(ENPU_PART(s->a, n), ...). */
#define ENPU_CALLOC_PARTS(...) \
  enpu_calloc_parts((const enpu_part[]){__VA_ARGS__}, sizeof((const enpu_part[]){__VA_ARGS__}) / sizeof(enpu_part))

/* Grow *ptr (an array of elem_size elements with capacity *cap) to hold at least
 * `need` elements, doubling. On failure *ptr and *cap are unchanged.
 * @return 0 or ENPU_ERR_NOMEM. */
int enpu_grow(void **ptr, size_t *cap, size_t need, size_t elem_size);

/* How much an input may hold. Every file a command reads is read whole into memory, so a
 * limit is what stops `enpu buckets /dev/zero` or a runaway file from eating the
 * machine: generous against what real inputs hold, small against memory.
 *   ENPU_READ_MAX_BYTES: a JSON document (job, model, chip, cluster, a Hugging Face
 *     config, paper numbers, a PELM agent, a replay's summary), a power table: 64 MiB,
 *     about 1000 times the largest shipped one;
 *   ENPU_TRACE_MAX_BYTES: a request trace (replay, validate, trace convert) and the CSV
 *     files a replay wrote (its windows and governor actions): 16 GiB, some 300 million
 *     requests.
 * A plan store is read by HDF5 as it needs, so it has no limit; it must still be a regular
 * file. */
#define ENPU_READ_MAX_BYTES ((size_t)64 << 20)
#define ENPU_TRACE_MAX_BYTES ((size_t)16 << 30)

/* Open path for reading as an input: a regular file (a FIFO, a device, a directory or a
 * socket is refused without blocking on it) of at most max_bytes (SIZE_MAX: any size). The
 * checks are on the opened descriptor (fstat), so what is read is what was checked.
 * *size_bytes (may be NULL) is its size when opened.
 * @return 0 with *fd open (close it), or ENPU_ERR_IO naming the path and the system's
 * reason when it cannot be opened (ENPU_ERR_ENV for a failing system, enpu_errno_code),
 * ENPU_ERR_INVALID naming the path and what it is when it is no regular file or is
 * larger than max_bytes. */
int enpu_open_input(const char *path, size_t max_bytes, int *fd, size_t *size_bytes, enpu_err *err);

/* Read a whole input file (enpu_open_input: a regular file of at most
 * ENPU_READ_MAX_BYTES) into a NUL-terminated heap buffer (*data, free() it).
 * @return 0, or enpu_open_input's errors, ENPU_ERR_INVALID when it grows past the limit
 * while read, ENPU_ERR_IO (ENPU_ERR_ENV for a failing system) for a read error,
 * ENPU_ERR_NOMEM; err names the path. */
int enpu_read_file(const char *path, char **data, size_t *len, enpu_err *err);

/* The same with a limit of max_bytes (ENPU_TRACE_MAX_BYTES for a trace). */
int enpu_read_file_max(const char *path, size_t max_bytes, char **data, size_t *len, enpu_err *err);

/* One pair of a "key=value,key=value" option value (enpu_kv_split), pointing into the
 * split text. */
typedef struct {
  const char *key, *value;
} enpu_kv;

/* The one parser of every "key=value[,key=value...]" option value (farm --add-buckets,
 * query --variant, trace convert --map): split text in place at ',' and '=' into at most
 * max pairs. Every item needs a non-empty key and a '='; a key given twice is an error
 * naming it, never "the last one wins". What a key may be and what its value means is
 * the caller's.
 * @return the number of pairs (>= 1), or ENPU_ERR_INVALID with err saying which item and
 * what was wrong. */
int enpu_kv_split(char *text, enpu_kv *out, int max, enpu_err *err);

/* Resolve `rel` against the directory of `base_file` (absolute `rel` is kept).
 * @return 0, or ENPU_ERR_RANGE when out_len is too small. */
int enpu_path_relative(const char *base_file, const char *rel, char *out, size_t out_len, enpu_err *err);

/* Create directory `dir` and its missing parents (mkdir -p, mode 0777 before umask).
 * @return 0; ENPU_ERR_INVALID for an empty name, ENPU_ERR_RANGE when it is too long,
 * ENPU_ERR_IO (naming the component and errno text) when a component cannot be made or
 * `dir` exists but is not a directory. */
int enpu_mkdir_p(const char *dir, enpu_err *err);

/* Files beside a store or under a results directory (common_file.c): never written
 * through a link planted at their name. enpu_file_create opens a new temporary file
 * `<path>.tmp` (whatever had that name removed as a name first, then created
 * O_CREAT | O_EXCL | O_NOFOLLOW); enpu_file_publish closes it and renames it over `path`,
 * which replaces the name itself (a symbolic or hard link there keeps its target as it
 * was), and on any failure removes the temporary (errno decides ENPU_ERR_ENV or _IO);
 * enpu_file_discard closes it (f may be NULL) and removes it. ENPU_FILE_DURABLE fsyncs
 * the file before the rename and its directory after. enpu_file_write is the three for
 * a buffer. */
#define ENPU_FILE_DURABLE 1u
int enpu_file_create(const char *path, FILE **f, enpu_err *err);
int enpu_file_publish(FILE *f, const char *path, unsigned flags, enpu_err *err);
void enpu_file_discard(FILE *f, const char *path);
int enpu_file_write(const char *path, const void *data, size_t bytes, unsigned flags, enpu_err *err);
/* A log kept across runs, opened to append (created when missing): only a plain file of
 * one name, never through a symbolic link (ENPU_ERR_INVALID otherwise).
 * @return its descriptor, or an error. */
int enpu_file_append(const char *path, enpu_err *err);

/* Move `path` to the first free `<path><suffix>-<n>` (n = 1..999; its name in aside),
 * never replacing a file: by link + unlink, or where hard links are not supported by a
 * rename the caller's lock keeps safe. @return 0, ENPU_ERR_RANGE, or an errno's code. */
int enpu_file_move_aside(const char *path, const char *suffix, char *aside, size_t cap, enpu_err *err);

/* A binary min-heap in a caller's array `v` of *n elements of `size` bytes each (at most
 * ENPU_HEAP_MAX_ELEM), ordered by `less` (nonzero: a before b). Equal elements leave in
 * no promised order, so a caller that needs one breaks ties inside less. Push copies *e
 * in (the array has room for one more); pop copies the least element out into *top and
 * returns 0, or ENPU_ERR_INVALID with nothing done when the heap is empty or size is
 * above ENPU_HEAP_MAX_ELEM (its stack copy of an element; a caller states its element
 * fits with a _Static_assert). Inline, so each caller's copy knows its element size and
 * calls its own less directly: the replay's event queue runs them millions of times a
 * replay, and out of line (a memcpy of a variable size, a call through the pointer) they
 * cost it 15 % (results/bench.md, "Replay"). */
#define ENPU_HEAP_MAX_ELEM 64
typedef int (*enpu_less)(const void *a, const void *b);

static inline void enpu_heap_push(void *v, size_t *n, size_t size, const void *e, enpu_less less) {
  unsigned char *b = v;
  size_t i = (*n)++;
  while (i > 0 && less(e, b + (i - 1) / 2 * size)) {
    memcpy(b + i * size, b + (i - 1) / 2 * size, size);
    i = (i - 1) / 2;
  }
  memcpy(b + i * size, e, size);
}

static inline int enpu_heap_pop(void *v, size_t *n, size_t size, void *top, enpu_less less) {
  unsigned char *b = v, last[ENPU_HEAP_MAX_ELEM];
  if (size > sizeof last || *n == 0) return ENPU_ERR_INVALID;
  memcpy(top, b, size);
  memcpy(last, b + --*n * size, size);
  size_t i = 0;
  for (;;) {
    size_t c = 2 * i + 1;
    if (c >= *n) break;
    if (c + 1 < *n && less(b + (c + 1) * size, b + c * size)) c++;
    if (!less(b + c * size, last)) break;
    memcpy(b + i * size, b + c * size, size);
    i = c;
  }
  if (*n) memcpy(b + i * size, last, size);
  return ENPU_OK;
}

/* A caller's "stop now?", which a long in-process step asks between units of work (a
 * replay, a block of rows, a step of job init) and then returns ENPU_ERR_STOPPED. The
 * command that holds the stop signals answers it (from its pending signals); a module
 * reads no signal and no global itself. fn NULL (or no enpu_stop): never stop. */
typedef struct {
  bool (*fn)(void *ctx);
  void *ctx;
} enpu_stop;
bool enpu_stop_asked(const enpu_stop *s);

/* Fixed-width unsigned integers in a byte buffer, least significant byte first: the one
 * byte order of every binary record the project writes (the farm's journal and messages,
 * cache entries, hashed fields), whatever the host's. */
void enpu_put_le32(unsigned char *p, uint32_t v);
void enpu_put_le64(unsigned char *p, uint64_t v);
uint32_t enpu_get_le32(const unsigned char *p);
uint64_t enpu_get_le64(const unsigned char *p);

/* 64-bit content hash (XXH3). Signatures and provenance hashes are built with it. */
uint64_t enpu_hash64(const void *data, size_t len, uint64_t seed);

/* Incremental hashing of several fields into one signature. The state is a plain
 * struct so it can live on the stack; feed fields with explicit widths so the hash
 * does not depend on padding. */
typedef struct {
  uint64_t h;
} enpu_hasher;
void enpu_hasher_init(enpu_hasher *hs, uint64_t seed);
void enpu_hasher_bytes(enpu_hasher *hs, const void *data, size_t len);
void enpu_hasher_i64(enpu_hasher *hs, int64_t v);
void enpu_hasher_f64(enpu_hasher *hs, double v);
void enpu_hasher_str(enpu_hasher *hs, const char *s);
uint64_t enpu_hasher_digest(const enpu_hasher *hs);

/* -1, 0 or 1 as a is below, equal to or above b (NaN-free): comparators chain it key by
 * key, `const int k = ENPU_ORDER(x->k, y->k); return k ? k : ENPU_ORDER(x->l, y->l);`. */
#define ENPU_ORDER(a, b) (((a) > (b)) - ((a) < (b)))

/* qsort comparators, ascending: of doubles (NaN-free arrays) and of int32_t. */
int enpu_cmp_double(const void *a, const void *b);
int enpu_cmp_i32(const void *a, const void *b);

/* The budget of a slack, the one formula both sides of a plan store use (the search that
 * writes budget_ns, planstore_lookup_slack that reads a slack back): strict
 * max(t_nodvfs, t_peak) + slack·t_nodvfs; paper (1 + slack)·t_nodvfs. The modes' codes
 * and meanings are config.h's config_budget and store.h's STORE_BUDGET_*. */
double enpu_budget_ns(bool paper, double t_nodvfs_ns, double t_peak_ns, double slack);

/* Seconds from a monotonic clock (for durations and rates only). */
double enpu_now_s(void);

#endif /* ENPU_COMMON_H */
