/* farm_cache.c — a job's side of the operator-result cache (opcache.h): before the queue
 * is built the master looks up every op and bucket task the store and the journal did
 * not hold, and takes what the cache has as known; as results arrive it stores them.
 * Only rank 0 runs this (workers open no file).
 *
 * What is cached, and under which key (the keys cover everything a result depends on,
 * so an entry is reused by any job, model, chip or sweep point that asks for it):
 *  - op results (kind FARM_CACHE_OP): the policy code their ops are kept under and the
 *    op key (graph signature, chip tables, cost-model version, search options);
 *  - compiled bucket results (kind FARM_CACHE_BUCKET): the policy code, phase, batch,
 *    seq and the bucket's input hash (its ops' keys and multiplicities, segments,
 *    slacks, chip, options). Failed buckets are not cached (their failure may pass).
 * An entry that passes its checksum but does not decode to the result asked for (its
 * fields are compared with the ones asked: another result under the key, or one written
 * by a build with another codec) counts as damaged and is recomputed.
 * A cache that cannot be written (disk full, permissions) is said once and then only
 * read: it is an optimisation, never a reason for a farm to fail. */
#include <stdlib.h>
#include <string.h>

#include "farm_job_internal.h"

static uint64_t op_cache_key(uint32_t policy, uint64_t key) {
  enpu_hasher h;
  enpu_hasher_init(&h, 0);
  enpu_hasher_str(&h, "enpu-cache-op");
  enpu_hasher_i64(&h, policy);
  enpu_hasher_i64(&h, (int64_t)key);
  return enpu_hasher_digest(&h);
}

static uint64_t bucket_cache_key(uint32_t policy, int phase, int batch, int seq, uint64_t input_hash) {
  enpu_hasher h;
  enpu_hasher_init(&h, 0);
  enpu_hasher_str(&h, "enpu-cache-bucket");
  enpu_hasher_i64(&h, policy);
  enpu_hasher_i64(&h, phase);
  enpu_hasher_i64(&h, batch);
  enpu_hasher_i64(&h, seq);
  enpu_hasher_i64(&h, (int64_t)input_hash);
  return enpu_hasher_digest(&h);
}

static int decode_op(const void *data, size_t bytes, const farm_cache_want *w, farm_op_result *r) {
  enpu_err ignored;
  if (farm_op_result_decode(data, bytes, r, &ignored) < 0) return -1;
  if (r->policy == w->policy && r->key == w->op_key) return 0;
  farm_op_result_free(r);
  return -1;
}

/* Failed buckets are never stored: one that says it failed is not the result asked for. */
static int decode_bucket(const void *data, size_t bytes, const farm_cache_want *w, farm_bucket_result *r) {
  enpu_err ignored;
  if (farm_bucket_result_decode(data, bytes, r, &ignored) < 0) return -1;
  const store_bucket_rec *k = &r->bundle.bucket;
  if (k->status == STORE_BUCKET_OK && r->policy == w->policy && k->phase == (uint8_t)w->phase &&
      k->batch == w->batch && k->seq == w->seq && k->input_hash == w->input_hash)
    return 0;
  farm_bucket_result_free(r);
  return -1;
}

/* The fields decoded are compared with the ones asked, not their digest (the key): two
 * requests whose keys collide still never take each other's result. */
int farm_cache_decode(const void *data, size_t bytes, const farm_cache_want *want, farm_cache_entry *out) {
  if (want->kind == FARM_CACHE_OP) return decode_op(data, bytes, want, &out->op);
  return want->kind == FARM_CACHE_BUCKET ? decode_bucket(data, bytes, want, &out->bucket) : -1;
}

/* One lookup, counted. @return 1 with the entry decoded into *r (free its result), 0 not there
 * or not the result asked for (damaged: another result under the key, or one written by
 * a build with another codec), or an error. */
static int lookup(farm_job *m, const farm_cache_want *want, uint64_t key, farm_cache_entry *r, enpu_err *err) {
  void *data;
  size_t bytes;
  const int rc = opcache_get(m->cache, want->kind, key, &data, &bytes, err);
  if (rc < 0) return rc;
  const int taken = rc == OPCACHE_HIT && farm_cache_decode(data, bytes, want, r) == 0;
  if (rc == OPCACHE_HIT) free(data);
  m->sum->cache_misses += !taken;
  m->sum->cache_damaged += rc == OPCACHE_DAMAGED || (rc == OPCACHE_HIT && !taken);
  return taken;
}

static int cached_op(farm_job *m, const mop *o, enpu_err *err) {
  const farm_cache_want want = {.kind = FARM_CACHE_OP, .policy = o->policy, .op_key = o->key};
  farm_cache_entry r;
  const int hit = lookup(m, &want, op_cache_key(o->policy, o->key), &r, err);
  if (hit <= 0) return hit;
  const int rc = farm_state_add_op(m->state, &r.op, err);
  farm_op_result_free(&r.op);
  m->sum->cache_hits_op += rc == 0;
  return rc;
}

static int cached_bucket(farm_job *m, const mtask *t, enpu_err *err) {
  const mbucket *b = &m->plan.buckets[t->bucket];
  const farm_cache_want want = {.kind = FARM_CACHE_BUCKET,
                                .policy = t->policy,
                                .phase = b->phase,
                                .batch = b->batch,
                                .seq = b->seq,
                                .input_hash = t->input_hash};
  farm_cache_entry r;
  const int hit = lookup(m, &want, bucket_cache_key(t->policy, b->phase, b->batch, b->seq, t->input_hash), &r, err);
  if (hit <= 0) return hit;
  const int rc = farm_state_add_bucket(m->state, &r.bucket, err);
  farm_bucket_result_free(&r.bucket);
  m->sum->cache_hits_bucket += rc == 0;
  return rc;
}

int farm_cache_lookup(farm_job *m, enpu_err *err) {
  if (!m->cache) return 0;
  m->sum->cache_used = 1;
  for (int i = 0; i < m->plan.nops; i++)
    if (m->plan.ops[i].status != T_KNOWN) ENPU_FORWARD(cached_op(m, &m->plan.ops[i], err));
  for (int j = 0; j < m->plan.nbt; j++)
    if (m->plan.bt[j].status != T_KNOWN) ENPU_FORWARD(cached_bucket(m, &m->plan.bt[j], err));
  return 0;
}

/* Store one entry; a failure is said once, and the cache is only read from then on. */
static void store(farm_job *m, uint32_t kind, uint64_t key, const void *data, size_t bytes) {
  if (!m->cache || m->cache_readonly) return;
  enpu_err err;
  if (opcache_put(m->cache, kind, key, data, bytes, &err) == 0) {
    m->sum->cache_stored++;
    return;
  }
  m->cache_readonly = 1;
  fprintf(m->o.log, "farm: warning: cache %s: %s; it is only read for the rest of this run\n",
          opcache_dir(m->cache), err.msg);
  fflush(m->o.log);
}

int farm_cache_put_op(farm_job *m, const farm_op_result *r, enpu_err *err) {
  if (!m->cache || m->cache_readonly) return 0;
  farm_buf b = {0};
  const int rc = farm_op_result_encode(r, &b, err);
  if (rc == 0) store(m, FARM_CACHE_OP, op_cache_key(r->policy, r->key), b.data, b.len);
  farm_buf_free(&b);
  return rc;
}

void farm_cache_put_bucket(farm_job *m, const farm_bucket_result *r, const void *record, size_t bytes) {
  const store_bucket_rec *k = &r->bundle.bucket;
  if (k->status != STORE_BUCKET_OK) return;
  store(m, FARM_CACHE_BUCKET, bucket_cache_key(r->policy, k->phase, k->batch, k->seq, k->input_hash), record,
        bytes);
}
