/* farm_internal.h — the farm's private contracts: the results that workers send to the
 * master and the master journals (op results and bucket results), their byte encoding
 * (one codec for MPI messages and journal records), the append-only journal, and the
 * master's result state that becomes the HDF5 store at each checkpoint.
 *
 * Invariants:
 *  - Policies are their codes (config_policy_spec_code). An op result is keyed by
 *    (policy, key): the policy without power gating (search_op_policy), key = the op's
 *    store signature: a hash of the graph signature (an epoch's: its members'), the chip
 *    tables, the cost-model version and the policy's search options. Equal keys mean
 *    identical results, whatever rank computed them.
 *  - A bucket result is keyed by (policy, phase, batch, seq) and carries input_hash
 *    (its ops' keys and multiplicities, the slacks, the policy options): a result whose
 *    input_hash differs from the current one is stale and is recomputed.
 *  - A bucket result is a store bucket bundle (indices of its own, store.h): store rows
 *    are assigned only at checkpoint, by the store's policy builder.
 *  - Decoding never trusts its input: lengths and indices are bounds-checked, a bad
 *    record is ENPU_ERR_FORMAT, never a crash. */
#ifndef ENPU_FARM_INTERNAL_H
#define ENPU_FARM_INTERNAL_H

#include <stddef.h>
#include <stdint.h>

#include "common.h"
#include "config.h"
#include "store.h"

/* ---------------------------------------------------------------------------------
 * Results */

typedef struct {
  uint32_t policy; /* policy code, without gating (search_op_policy) */
  uint64_t key;    /* store ops.signature */
  uint32_t kind;   /* graph_op_kind, or STORE_OP_KIND_EPOCH */
  char name[STORE_NAME_LEN];
  uint64_t evaluations;
  uint32_t npoints;         /* >= 1 */
  store_pareto_rec *points; /* time ascending; `op` field unused (0) */
} farm_op_result;

typedef struct {
  uint32_t policy;
  store_bucket_bundle bundle; /* the bucket in its own indices (store.h) */
  uint32_t nunits;            /* epoch policies: the op result of every bundle op, in
                                 bundle op order (the bucket task searched them); 0
                                 otherwise */
  farm_op_result *units;
} farm_bucket_result;

void farm_op_result_free(farm_op_result *r);         /* frees members; NULL no-op */
void farm_bucket_result_free(farm_bucket_result *r); /* frees members; NULL no-op */

/* ---------------------------------------------------------------------------------
 * Codec: little-endian, fixed-width fields; one record = one result. */

enum { FARM_REC_OP = 1, FARM_REC_BUCKET = 2, FARM_REC_PART = 3, FARM_REC_JOB = 4 /* the journal's first */ };

/* A part record: one part of an op's exact search (an `ideal` sub-task), u32 part then an
 * op result holding that part's set (search_op_compile_part) with each point's per-slot
 * energies. The master merges an op's parts into its op result. */
#define FARM_MAX_PARTS 64u

typedef struct {
  unsigned char *data;
  size_t len, cap;
} farm_buf;

void farm_buf_free(farm_buf *b); /* frees data; NULL no-op */

/* Append the encoding of a result to b. @return 0 or ENPU_ERR_NOMEM. */
int farm_op_result_encode(const farm_op_result *r, farm_buf *b, enpu_err *err);
int farm_bucket_result_encode(const farm_bucket_result *r, farm_buf *b, enpu_err *err);
int farm_part_result_encode(uint32_t part, const farm_op_result *r, farm_buf *b, enpu_err *err);
/* Decode exactly `bytes` bytes into *r (owned by the caller afterwards).
 * @return 0, or ENPU_ERR_FORMAT (truncated, trailing bytes, out-of-range index or
 * count), ENPU_ERR_NOMEM; on failure *r is empty. */
int farm_op_result_decode(const void *data, size_t bytes, farm_op_result *r, enpu_err *err);
int farm_bucket_result_decode(const void *data, size_t bytes, farm_bucket_result *r, enpu_err *err);
/* A part record: *part < FARM_MAX_PARTS (the caller checks it against its part count). */
int farm_part_result_decode(const void *data, size_t bytes, uint32_t *part, farm_op_result *r, enpu_err *err);

/* ---------------------------------------------------------------------------------
 * Journal: `<store>.journal`, a header then records of (kind, length, checksum,
 * zstd-compressed payload). A crash can leave a torn last record; a damaged record is
 * skipped and the records after it still count. */

typedef struct farm_journal farm_journal;

#define FARM_JOURNAL_MAX_KIND 255u /* record kinds are 1..this */

typedef int (*farm_journal_fn)(void *user, uint32_t kind, const void *payload, size_t bytes, enpu_err *err);

typedef struct {
  int64_t records;       /* intact records replayed */
  int64_t skipped_bytes; /* damaged bytes between intact records, skipped */
  int64_t dropped_bytes; /* after the last intact record: a torn tail */
  int unreadable;        /* the header is not a journal's: nothing was replayed */
} farm_journal_stats;

/* Call fn for every intact record of `path` in order (a missing file has none),
 * resynchronising on the next intact record after a damaged one. A file whose header is
 * not a journal's replays nothing and sets st->unreadable (farm_journal_open moves it
 * aside). fn's error stops the replay and is returned. */
int farm_journal_replay(const char *path, farm_journal_fn fn, void *user, farm_journal_stats *st, enpu_err *err);
/* Open for appending (creating it with its header); a torn tail is truncated first so
 * new records follow the last intact one, and a file that is not a journal is moved to
 * the first free `<path>.unreadable-<n>` (farm_journal_aside names it) and replaced by
 * a new journal. A symbolic link or a file of several names is refused
 * (ENPU_ERR_INVALID). `identity` (identity_bytes, 0: none) is the job's: the FARM_REC_JOB
 * record that starts the journal whenever it holds no record. */
int farm_journal_open(const char *path, const void *identity, size_t identity_bytes, farm_journal **out,
                      enpu_err *err);
/* Where open moved an unreadable file, or NULL. */
const char *farm_journal_aside(const farm_journal *j);
/* The identity the journal at `path` starts with, into out (len 0: no journal, an
 * unreadable one, or one without an identity, as a journal of version 3), and how many
 * bytes follow it (*after 0: the journal holds no work). */
int farm_journal_identity(const char *path, farm_buf *out, int64_t *after, enpu_err *err);
/* Compress and buffer one record (written at the next sync, or when the buffer fills). */
int farm_journal_append(farm_journal *j, uint32_t kind, const void *payload, size_t bytes, enpu_err *err);
/* Buffer one record already packed (farm_zframe_pack), as it is. */
int farm_journal_append_frame(farm_journal *j, uint32_t kind, const void *frame, size_t len, enpu_err *err);

/* A record's zstd frame (content size declared, at most FARM_JOURNAL_MAX_RECORD bytes
 * decompressed): workers send each result as its record and its frame, the master reads
 * the one and journals the other unchanged, so compressing is not the master's work. */
typedef struct farm_zframe farm_zframe;
int farm_zframe_create(farm_zframe **out, enpu_err *err);
void farm_zframe_free(farm_zframe *z); /* NULL no-op */
/* out receives the frame of `bytes` bytes of payload (replacing its content). */
int farm_zframe_pack(farm_zframe *z, const void *payload, size_t bytes, farm_buf *out, enpu_err *err);
/* Write buffered records and fsync. */
int farm_journal_sync(farm_journal *j, enpu_err *err);
/* After a checkpoint made every record redundant: truncate to the header and fsync; the
 * identity record is buffered again (written at the next sync). */
int farm_journal_reset(farm_journal *j, enpu_err *err);
void farm_journal_free(farm_journal *j); /* does not sync; NULL no-op */

/* ---------------------------------------------------------------------------------
 * State: every result the master knows (from the previous store, the journal, workers). */

typedef struct farm_state farm_state;

int farm_state_create(farm_state **out, enpu_err *err);
void farm_state_free(farm_state *s); /* NULL no-op */

/* Load a previous store's results (a missing file loads nothing): each policy's ops
 * become op results, each compiled bucket (with its ops, walk, plans, plan states) a
 * bucket result; pending buckets are not results. Its validation rows are kept for the
 * checkpoints (store_validation_set). *added_json receives the store's added_buckets
 * attribute (malloc'd, or NULL). */
int farm_state_load_store(farm_state *s, const char *path, int64_t *ops, int64_t *buckets, char **added_json,
                          enpu_err *err);
/* The same for job `job` (NULL: no sweep), whose sweep points name some of its groups. */
int farm_state_load_job_store(farm_state *s, const config_job *job, const char *path, int64_t *ops,
                              int64_t *buckets, char **added_json, enpu_err *err);
/* Take ownership of a result's arrays (r is emptied). A result with a key already known
 * replaces the old one (bucket results: same policy/phase/batch/seq). A bucket result's
 * units become op results of its policy without gating. */
int farm_state_add_op(farm_state *s, farm_op_result *r, enpu_err *err);
int farm_state_add_bucket(farm_state *s, farm_bucket_result *r, enpu_err *err);
/* Lookups; NULL when unknown (a bucket also when its input_hash differs). */
const farm_op_result *farm_state_find_op(const farm_state *s, uint32_t policy, uint64_t key);
const farm_bucket_result *farm_state_find_bucket(const farm_state *s, uint32_t policy, int phase, int batch,
                                                 int seq, uint64_t input_hash);

/* What the current job wants in the store: per policy the op keys of its grid and its
 * buckets (phase, batch, seq, input_hash). Known results outside it are not written. */
typedef struct {
  uint32_t policy;            /* its code */
  char name[CONFIG_NAME_LEN]; /* its store group (config_job_policy_name); "": the code's name */
  uint32_t op_policy;         /* the code its op results are kept under */
  const uint64_t *op_keys;    /* NULL for an epoch policy: its buckets' epochs */
  size_t nops;
  const store_bucket_rec *buckets; /* only phase, batch, seq, input_hash (and budget, for a
                                      pending row) are read */
  size_t nbuckets;
} farm_wanted;

/* Write the wanted, known results as the store `lock` protects (store_writer: temp +
 * fsync + rename): policies by code, ops sorted by key, buckets by (phase, batch, seq),
 * rows assigned here, so the content depends only on the results, never on arrival order
 * or rank count. A wanted bucket without a result (or whose ops are not all known) is
 * written as STORE_BUCKET_PENDING, so readers of a checkpoint can tell "not compiled
 * yet". The loaded store's validation rows of plans written unchanged are carried over
 * (store_validation_carry); *validation (may be NULL) counts what was kept and dropped. */
int farm_state_checkpoint(const farm_state *s, const store_lock *lock, const store_provenance *prov,
                          const farm_wanted *wanted, int nwanted, store_validation_counts *validation,
                          enpu_err *err);

#endif /* ENPU_FARM_INTERNAL_H */
