/* store_carry.c — validation rows across a rewrite of a store (store.h): what the rows of
 * a loaded store validated, and which of them a rebuilt store still holds.
 *
 * Invariants:
 *  - A validation row is carried exactly when the plan it names is unchanged: a bucket
 *    with the same (phase, batch, seq) and input_hash, and at the same position among
 *    that bucket's plans a plan whose record and plan-state runs are the same once their
 *    rows are taken out (ops as signatures, Pareto points as positions within their op).
 *    A carried row is the stored row with only `bucket` and `plan` re-indexed, in the
 *    order the validation wrote it, so a rewrite that moves nothing writes it unchanged.
 *  - Replay rows are carried only when every policy's plan tables (ops .. plan_states)
 *    have the checksums they had and no policy was added or removed: a policy's replay
 *    serves requests from all of its plans, shares one horizon with the other policies'
 *    replays and compares its energy with nodvfs's.
 *  - Every row of the loaded store is counted once, as kept or as dropped. */
#include <stdlib.h>
#include <string.h>
#include <xxhash.h>

#include "store_internal.h"

#define PLAN_TABLES STORE_T_VALIDATION /* ops .. plan_states: where plans live */

typedef struct {
  store_validation_rec row; /* as stored: bucket and plan are rows of the loaded store */
  uint32_t plan_in_bucket;  /* the plan's position among its bucket's plans */
  uint64_t plan_hash;       /* plan_hash of the plan the row validated */
} validated_plan;

typedef struct {
  char name[STORE_NAME_LEN];
  validated_plan *plans;
  size_t nplans;
  store_validation_replay_rec *replay;
  size_t nreplay;
  uint64_t checksums[PLAN_TABLES];
} validated_policy;

struct store_validation_set {
  validated_policy *policies;
  size_t npolicies;
};

/* Plan k of bucket row bi with its rows taken out: the bucket's key and input hash, the
 * plan record, its plan-state runs and their ops' signatures. */
static int plan_hash(const store_policy_tables *p, uint32_t bi, uint32_t k, uint64_t *out, enpu_err *err) {
  const store_bucket_rec *b = &p->buckets[bi];
  store_plan_rec plan = p->plans[b->plan_first + k];
  const uint64_t first = plan.states_first, n = plan.states_count;
  plan.bucket = 0, plan.states_first = 0;
  store_plan_state_rec *states = enpu_calloc(n + 1, sizeof *states);
  uint64_t *signatures = enpu_calloc(n + 1, sizeof *signatures);
  int rc = states && signatures ? ENPU_OK
                                : enpu_errorf(err, ENPU_ERR_NOMEM,
                                              "policy %s: no memory to hash plan %u of bucket %u", p->name, k, bi);
  for (uint64_t i = 0; rc == ENPU_OK && i < n; i++) {
    states[i] = p->plan_states[first + i];
    const store_op_rec *op = &p->ops[states[i].op];
    signatures[i] = op->signature;
    if (states[i].pareto != STORE_NO_INDEX) states[i].pareto -= op->pareto_first;
    states[i].plan = states[i].op = 0;
  }
  uint64_t words[7] = {b->input_hash, b->phase, (uint32_t)b->batch, (uint32_t)b->seq, 0, 0, 0};
  if (rc == ENPU_OK) rc = store_table_checksum(STORE_T_PLANS, &plan, 1, &words[4], err);
  if (rc == ENPU_OK) rc = store_table_checksum(STORE_T_PLAN_STATES, states, n, &words[5], err);
  words[6] = XXH3_64bits(signatures, n * sizeof *signatures);
  *out = XXH3_64bits(words, sizeof words);
  free(states);
  free(signatures);
  return rc;
}

static int load_policy(const store_policy_tables *t, validated_policy *v, enpu_err *err) {
  memcpy(v->name, t->name, STORE_NAME_LEN);
  for (int k = 0; k < PLAN_TABLES; k++) {
    size_t n = 0;
    const void *rows = store_policy_table(t, (store_table)k, &n);
    ENPU_FORWARD(store_table_checksum((store_table)k, rows, n, &v->checksums[k], err));
  }
  v->plans = enpu_calloc(t->nvalidation + 1, sizeof *v->plans);
  v->replay = enpu_calloc(t->nvalidation_replay + 1, sizeof *v->replay);
  ENPU_RETURN_IF(!v->plans || !v->replay, err, ENPU_ERR_NOMEM, "policy %s: no memory for its validation rows",
                 t->name);
  if (t->nvalidation_replay) memcpy(v->replay, t->validation_replay, t->nvalidation_replay * sizeof *v->replay);
  v->nreplay = t->nvalidation_replay;
  for (; v->nplans < t->nvalidation; v->nplans++) {
    validated_plan *vp = &v->plans[v->nplans];
    vp->row = t->validation[v->nplans]; /* store_load checked it names a plan of its bucket */
    vp->plan_in_bucket = vp->row.plan - t->buckets[vp->row.bucket].plan_first;
    ENPU_FORWARD(plan_hash(t, vp->row.bucket, vp->plan_in_bucket, &vp->plan_hash, err));
  }
  return ENPU_OK;
}

int store_validation_set_create(const store_contents *c, store_validation_set **out, enpu_err *err) {
  *out = NULL;
  store_validation_set *v = enpu_calloc(1, sizeof *v);
  if (v) v->policies = enpu_calloc(c->npolicies + 1, sizeof *v->policies);
  int rc = v && v->policies ? ENPU_OK
                            : enpu_errorf(err, ENPU_ERR_NOMEM, "store: no memory for the validation rows");
  for (; rc == ENPU_OK && v->npolicies < c->npolicies; v->npolicies++)
    rc = load_policy(&c->policies[v->npolicies], &v->policies[v->npolicies], err);
  if (rc == ENPU_OK) *out = v;
  else store_validation_set_free(v);
  return rc;
}

void store_validation_set_free(store_validation_set *v) {
  if (!v) return;
  for (size_t i = 0; v->policies && i < v->npolicies; i++) {
    free(v->policies[i].plans);
    free(v->policies[i].replay);
  }
  free(v->policies);
  free(v);
}

static const validated_policy *find_policy(const store_validation_set *v, const char *name) {
  for (size_t i = 0; v && i < v->npolicies; i++)
    if (strncmp(v->policies[i].name, name, STORE_NAME_LEN) == 0) return &v->policies[i];
  return NULL;
}

/* The bucket row of t with `row`'s (phase, batch, seq), through `order` (t's bucket rows
 * in that order), or -1. */
static long find_bucket(const store_policy_tables *t, const uint32_t *order, const store_validation_rec *row) {
  const store_bucket_rec probe = {.phase = row->phase, .batch = row->batch, .seq = row->seq};
  size_t lo = 0, hi = t->nbuckets;
  while (lo < hi) {
    const size_t mid = lo + (hi - lo) / 2;
    if (store_bucket_cmp(&t->buckets[order[mid]], &probe) < 0) lo = mid + 1;
    else hi = mid;
  }
  return lo < t->nbuckets && store_bucket_cmp(&t->buckets[order[lo]], &probe) == 0 ? (long)order[lo] : -1;
}

/* Row vp re-indexed into t when t holds its plan unchanged: 1, 0 when not. */
static int carry_row(const store_policy_tables *t, const uint32_t *order, const validated_plan *vp,
                     store_validation_rec *out, enpu_err *err) {
  const long bi = find_bucket(t, order, &vp->row);
  if (bi < 0 || vp->plan_in_bucket >= t->buckets[bi].plan_count) return 0;
  uint64_t h = 0;
  ENPU_FORWARD(plan_hash(t, (uint32_t)bi, vp->plan_in_bucket, &h, err));
  if (h != vp->plan_hash) return 0;
  *out = vp->row;
  out->bucket = (uint32_t)bi, out->plan = t->buckets[bi].plan_first + vp->plan_in_bucket;
  return 1;
}

int store_validation_carry(const store_validation_set *v, store_writer *w, const store_policy_tables *t,
                           store_validation_counts *n, enpu_err *err) {
  const validated_policy *vp = find_policy(v, t->name);
  if (!vp || vp->nplans == 0) return ENPU_OK;
  uint32_t *order = NULL;
  store_validation_rec *rows = enpu_calloc(vp->nplans, sizeof *rows);
  int rc = rows ? store_order_rows(t, t->nbuckets, store_bucket_key, &order, err)
                : enpu_errorf(err, ENPU_ERR_NOMEM, "policy %s: no memory for its validation rows", t->name);
  size_t kept = 0;
  for (size_t i = 0; rc == ENPU_OK && i < vp->nplans; i++) {
    rc = carry_row(t, order, &vp->plans[i], &rows[kept], err);
    if (rc > 0) kept++, rc = ENPU_OK;
  }
  if (rc == ENPU_OK) rc = store_writer_append(w, t->name, STORE_T_VALIDATION, rows, kept, err);
  if (rc == ENPU_OK) n->kept += kept, n->dropped += vp->nplans - kept;
  free(order);
  free(rows);
  return rc;
}

/* Has every policy of the loaded store been written with the plan tables it had, and no
 * other policy? @return 1, 0, or ENPU_ERR_NOMEM. */
static int plans_unchanged(const store_validation_set *v, const store_writer *w, enpu_err *err) {
  if (store_writer_policy_count(w) != v->npolicies) return 0;
  for (size_t i = 0; i < v->npolicies; i++)
    for (int k = 0; k < PLAN_TABLES; k++) {
      uint64_t sum = 0;
      const int written = store_writer_checksum(w, v->policies[i].name, (store_table)k, &sum, err);
      if (written <= 0 || sum != v->policies[i].checksums[k]) return written < 0 ? written : 0;
    }
  return 1;
}

int store_validation_carry_replay(const store_validation_set *v, store_writer *w, store_validation_counts *n,
                                  enpu_err *err) {
  if (!v) return ENPU_OK;
  const int unchanged = plans_unchanged(v, w, err);
  ENPU_FORWARD(unchanged);
  for (size_t i = 0; i < v->npolicies; i++) {
    const validated_policy *vp = &v->policies[i];
    uint64_t sum = 0;
    const int written = store_writer_checksum(w, vp->name, STORE_T_OPS, &sum, err);
    ENPU_FORWARD(written);
    if (!written) n->dropped += vp->nplans; /* store_validation_carry never saw the policy */
    if (unchanged)
      ENPU_FORWARD(store_writer_append(w, vp->name, STORE_T_VALIDATION_REPLAY, vp->replay, vp->nreplay, err));
    if (unchanged) n->replay_kept += vp->nreplay;
    else n->replay_dropped += vp->nreplay;
  }
  return ENPU_OK;
}
