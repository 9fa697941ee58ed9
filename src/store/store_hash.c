/* store_hash.c — the store's integrity checksums (since format_version 3): one per table,
 * stored as the dataset's `xxh3_64` attribute, and one over the root attributes
 * (`provenance_xxh3_64`). The writer computes them from the records it appends, the
 * readers from the records HDF5 hands back, so any change of content between the two —
 * a flipped bit in a chunk, an index, a length, an attribute — is a mismatch, whatever
 * layer of the file it hit.
 *
 * Invariants: a table's checksum is XXH3-64, seeded with the table number, of its rows
 * in the file's packed little-endian column layout (schemas/planstore.md), fixed strings
 * NUL-padded after their first NUL — the bytes h5py reads as the dataset's raw rows. It
 * depends on the rows only, never on chunking, compression or how the rows were
 * appended. Records are native structs; on the little-endian hosts this code supports
 * a column's bytes are copied as they are. */
#include <stdlib.h>
#include <string.h>
#include <xxhash.h>

#include "store_internal.h"

_Static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__,
               "the store checksums pack native records as little-endian columns");

#define PACK_BUFFER_BYTES 65536 /* rows are packed in blocks of about this size */

/* A run of a record's bytes that is packed as it is: adjacent numeric columns with no
 * padding between them in the C struct, or one fixed string. */
typedef struct {
  size_t offset, bytes;
  int string;
} pack_run;

struct store_hash {
  XXH3_state_t *state;
  store_table table;
  pack_run runs[32]; /* tables have at most 19 columns */
  size_t nruns;
  unsigned char *buffer;
};

static size_t scalar_bytes(store_field_kind kind) {
  switch (kind) {
  case STORE_F_U8:
  case STORE_F_STR: return 1;
  case STORE_F_U32:
  case STORE_F_I32: return 4;
  case STORE_F_U64:
  case STORE_F_F64: return 8;
  }
  return 0;
}

/* The runs of table t's records (see pack_run). */
static void plan_runs(store_hash *h) {
  const store_table_desc *d = &store_tables[h->table];
  for (size_t f = 0; f < d->nfields; f++) {
    const store_field *fd = &d->fields[f];
    const size_t bytes = fd->count * scalar_bytes(fd->kind);
    const int string = fd->kind == STORE_F_STR;
    pack_run *last = h->nruns ? &h->runs[h->nruns - 1] : NULL;
    if (last && !string && !last->string && last->offset + last->bytes == fd->offset) last->bytes += bytes;
    else h->runs[h->nruns++] = (pack_run){fd->offset, bytes, string};
  }
}

static size_t pack_row(const store_hash *h, const unsigned char *rec, unsigned char *out) {
  size_t at = 0;
  for (size_t r = 0; r < h->nruns; r++) {
    const pack_run *run = &h->runs[r];
    const unsigned char *src = rec + run->offset;
    if (run->string) {
      size_t len = strnlen((const char *)src, run->bytes - 1);
      memcpy(out + at, src, len);
      memset(out + at + len, 0, run->bytes - len);
    } else {
      memcpy(out + at, src, run->bytes);
    }
    at += run->bytes;
  }
  return at;
}

int store_hash_create(store_table t, store_hash **out, enpu_err *err) {
  *out = NULL;
  ENPU_RETURN_IF((unsigned)t >= STORE_NTABLE, err, ENPU_ERR_INVALID, "store: bad table %d", (int)t);
  store_hash *h = enpu_calloc(1, sizeof *h);
  if (h) h->state = XXH3_createState();
  if (h) h->buffer = malloc(PACK_BUFFER_BYTES + STORE_MAX_RECORD_BYTES);
  if (!h || !h->state || !h->buffer) {
    store_hash_free(h);
    return enpu_errorf(err, ENPU_ERR_NOMEM, "store: out of memory (checksum)");
  }
  h->table = t;
  plan_runs(h);
  XXH3_64bits_reset_withSeed(h->state, (XXH64_hash_t)t);
  *out = h;
  return ENPU_OK;
}

void store_hash_rows(store_hash *h, const void *rows, size_t n) {
  const store_table_desc *d = &store_tables[h->table];
  const unsigned char *rec = rows;
  size_t used = 0;
  for (size_t i = 0; i < n; i++, rec += d->record_bytes) {
    used += pack_row(h, rec, h->buffer + used);
    if (used >= PACK_BUFFER_BYTES) {
      XXH3_64bits_update(h->state, h->buffer, used);
      used = 0;
    }
  }
  if (used) XXH3_64bits_update(h->state, h->buffer, used);
}

uint64_t store_hash_digest(const store_hash *h) { return XXH3_64bits_digest(h->state); }

void store_hash_free(store_hash *h) {
  if (!h) return;
  XXH3_freeState(h->state);
  free(h->buffer);
  free(h);
}

int store_table_checksum(store_table t, const void *rows, size_t n, uint64_t *out, enpu_err *err) {
  store_hash *h = NULL;
  ENPU_FORWARD(store_hash_create(t, &h, err));
  store_hash_rows(h, rows, n);
  *out = store_hash_digest(h);
  store_hash_free(h);
  return ENPU_OK;
}

uint64_t store_provenance_checksum(const store_root_attrs *a) {
  enpu_hasher hs;
  enpu_hasher_init(&hs, 0);
  enpu_hasher_i64(&hs, a->format_version);
  for (int i = 0; i < 4; i++) enpu_hasher_i64(&hs, (int64_t)a->hashes[i]);
  for (int i = 0; i < STORE_NROOT_STRINGS; i++) {
    enpu_hasher_i64(&hs, a->strings[i] != NULL); /* absent differs from empty */
    if (a->strings[i]) enpu_hasher_str(&hs, a->strings[i]);
  }
  return enpu_hasher_digest(&hs);
}

int store_content_hash(const store_contents *c, uint64_t *out, enpu_err *err) {
  enpu_hasher hs;
  enpu_hasher_init(&hs, 0);
  enpu_hasher_i64(&hs, c->format_version);
  const uint64_t hashes[4] = {c->cost_model_hash, c->chip_hash, c->model_hash, c->job_hash};
  for (int i = 0; i < 4; i++) enpu_hasher_i64(&hs, (int64_t)hashes[i]);
  const char *docs[] = {c->job_json, c->model_json, c->chip_json, c->cluster_json, c->added_buckets_json};
  for (size_t i = 0; i < sizeof docs / sizeof *docs; i++) {
    enpu_hasher_i64(&hs, docs[i] != NULL);
    if (docs[i]) enpu_hasher_str(&hs, docs[i]);
  }
  for (size_t i = 0; i < c->npolicies; i++) {
    enpu_hasher_str(&hs, c->policies[i].name);
    for (int t = 0; t < STORE_NTABLE; t++) {
      size_t n = 0;
      const void *rows = store_policy_table(&c->policies[i], (store_table)t, &n);
      uint64_t sum = 0;
      ENPU_FORWARD(store_table_checksum((store_table)t, rows, n, &sum, err));
      enpu_hasher_i64(&hs, (int64_t)sum);
    }
  }
  *out = enpu_hasher_digest(&hs);
  return ENPU_OK;
}
