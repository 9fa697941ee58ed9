/* store_diff.c — content comparison of two loaded stores (store.h, `enpu store diff`).
 *
 * Two passes per common policy. By key: buckets by (phase, batch, seq) and ops by
 * signature, compared on their content columns, with every index into another table
 * followed to what it means (an op row becomes its signature, a Pareto row its position
 * inside its op's range; ownership columns and *_first offsets are positions, not
 * content). Then row by row: every table in full, indices included, so the same content
 * written in another order (a determinism bug) is reported too.
 *
 * Invariant: both stores passed store_read's validation, so every index followed here
 * is inside its table. */
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "store_internal.h"

typedef struct {
  void (*fn)(const store_diff_entry *d, void *user);
  void *user;
  size_t count;
} differ;

static void emit(differ *d, const store_diff_entry *e) {
  d->count++;
  if (d->fn) d->fn(e, d->user);
}

/* Append a name to a comma-separated list (truncated at the end of the buffer). */
static void add_name(char *list, size_t cap, const char *name) {
  size_t len = strlen(list);
  if (len + 1 < cap) snprintf(list + len, cap - len, "%s%s", len ? ", " : "", name);
}

/* Columns that hold a position in this or another table rather than content. */
static int is_index_column(const char *name) {
  size_t len = strlen(name);
  return !strcmp(name, "op") || !strcmp(name, "pareto") || !strcmp(name, "bucket") || !strcmp(name, "plan") ||
         (len > 6 && !strcmp(name + len - 6, "_first"));
}

static size_t column_bytes(const store_field *f) {
  switch (f->kind) {
  case STORE_F_U8:
  case STORE_F_STR: return f->count;
  case STORE_F_U32:
  case STORE_F_I32: return 4 * f->count;
  case STORE_F_U64:
  case STORE_F_F64: return 8 * f->count;
  }
  return 0;
}

/* Compare two records of table t column by column (index columns skipped when
 * content_only); the names of differing columns are appended to `list`.
 * @return how many columns differ. */
static int diff_record(store_table t, const void *a, const void *b, int content_only, char *list, size_t cap) {
  const store_table_desc *d = &store_tables[t];
  int n = 0;
  for (size_t i = 0; i < d->nfields; i++) {
    const store_field *f = &d->fields[i];
    if (content_only && is_index_column(f->name)) continue;
    const char *x = (const char *)a + f->offset, *y = (const char *)b + f->offset;
    int same = f->kind == STORE_F_STR ? strncmp(x, y, f->count) == 0 : memcmp(x, y, column_bytes(f)) == 0;
    if (!same) {
      n++;
      if (list) add_name(list, cap, f->name);
    }
  }
  return n;
}

/* ---- by key -------------------------------------------------------------------- */

/* Position of a Pareto row inside its op's range (STORE_NO_INDEX stays itself). */
static uint32_t point_pos(const store_policy_tables *p, uint32_t op, uint32_t pareto) {
  return pareto == STORE_NO_INDEX ? STORE_NO_INDEX : pareto - p->ops[op].pareto_first;
}

/* Do (op, Pareto row) of a and of b mean the same op signature and point? */
static int same_point(const store_policy_tables *a, uint32_t op_a, uint32_t pareto_a, const store_policy_tables *b,
                      uint32_t op_b, uint32_t pareto_b) {
  return a->ops[op_a].signature == b->ops[op_b].signature &&
         point_pos(a, op_a, pareto_a) == point_pos(b, op_b, pareto_b);
}

/* Do the sets of (signature, multiplicity) of bucket ba in a and bb in b differ? */
static int bucket_ops_differ(const store_policy_tables *a, const store_bucket_rec *ba, const store_policy_tables *b,
                             const store_bucket_rec *bb) {
  if (ba->ops_count != bb->ops_count) return 1;
  for (uint32_t i = 0; i < ba->ops_count; i++) {
    const store_bucket_op_rec *x = &a->bucket_ops[ba->ops_first + i];
    int found = 0;
    for (uint32_t j = 0; j < bb->ops_count && !found; j++) {
      const store_bucket_op_rec *y = &b->bucket_ops[bb->ops_first + j];
      found = a->ops[x->op].signature == b->ops[y->op].signature && x->multiplicity == y->multiplicity;
    }
    if (!found) return 1;
  }
  return 0;
}

/* The u32 column at `offset` of a record. */
static uint32_t u32_at(const char *record, size_t offset) {
  uint32_t v;
  memcpy(&v, record + offset, sizeof v);
  return v;
}

/* Do rows [first_a, +n) of a and [first_b, +n) of b of table t (walk or plan_states:
 * each names an op and a Pareto row) differ in content, or in the op signature and point
 * they name? */
static int rows_differ(store_table t, const store_policy_tables *a, uint64_t first_a, const store_policy_tables *b,
                       uint64_t first_b, uint64_t n) {
  const int walk = t == STORE_T_WALK;
  const size_t bytes = store_tables[t].record_bytes;
  const size_t op = walk ? offsetof(store_walk_rec, op) : offsetof(store_plan_state_rec, op);
  const size_t pareto = walk ? offsetof(store_walk_rec, pareto) : offsetof(store_plan_state_rec, pareto);
  size_t na = 0, nb = 0;
  const char *ra = store_policy_table(a, t, &na), *rb = store_policy_table(b, t, &nb);
  for (uint64_t k = 0; k < n; k++) {
    const char *x = ra + (first_a + k) * bytes, *y = rb + (first_b + k) * bytes;
    if (diff_record(t, x, y, 1, NULL, 0) ||
        !same_point(a, u32_at(x, op), u32_at(x, pareto), b, u32_at(y, op), u32_at(y, pareto)))
      return 1;
  }
  return 0;
}

static int walks_differ(const store_policy_tables *a, const store_bucket_rec *ba, const store_policy_tables *b,
                        const store_bucket_rec *bb) {
  return ba->walk_count != bb->walk_count ||
         rows_differ(STORE_T_WALK, a, ba->walk_first, b, bb->walk_first, ba->walk_count);
}

static int plans_differ(const store_policy_tables *a, const store_bucket_rec *ba, const store_policy_tables *b,
                        const store_bucket_rec *bb) {
  if (ba->plan_count != bb->plan_count) return 1;
  for (uint32_t k = 0; k < ba->plan_count; k++) {
    const store_plan_rec *x = &a->plans[ba->plan_first + k], *y = &b->plans[bb->plan_first + k];
    /* states_count is a content column: equal when the records are. */
    if (diff_record(STORE_T_PLANS, x, y, 1, NULL, 0) ||
        rows_differ(STORE_T_PLAN_STATES, a, x->states_first, b, y->states_first, x->states_count))
      return 1;
  }
  return 0;
}

/* A bucket's key columns into a diff entry, and what differs between two buckets with
 * one key. */
static void bucket_entry(store_diff_entry *e, const store_policy_tables *p, uint32_t row) {
  const store_bucket_rec *k = &p->buckets[row];
  e->phase = k->phase, e->batch = k->batch, e->seq = k->seq;
}

static void bucket_changes(store_diff_entry *e, const store_policy_tables *a, uint32_t ra,
                           const store_policy_tables *b, uint32_t rb) {
  const store_bucket_rec *x = &a->buckets[ra], *y = &b->buckets[rb];
  diff_record(STORE_T_BUCKETS, x, y, 1, e->fields, sizeof e->fields);
  if (bucket_ops_differ(a, x, b, y)) add_name(e->fields, sizeof e->fields, "bucket_ops");
  if (walks_differ(a, x, b, y)) add_name(e->fields, sizeof e->fields, "walk");
  if (plans_differ(a, x, b, y)) add_name(e->fields, sizeof e->fields, "plans");
}

/* An op's key (its signature), its signature and name into a diff entry, and what
 * differs between two ops with one signature (their columns, their Pareto points). */
static uint64_t signature_key(const store_policy_tables *p, size_t row) { return p->ops[row].signature; }

static void op_entry(store_diff_entry *e, const store_policy_tables *p, uint32_t row) {
  e->signature = p->ops[row].signature;
  e->name = p->ops[row].name;
}

static void op_changes(store_diff_entry *e, const store_policy_tables *a, uint32_t ra, const store_policy_tables *b,
                       uint32_t rb) {
  const store_op_rec *x = &a->ops[ra], *y = &b->ops[rb];
  diff_record(STORE_T_OPS, x, y, 1, e->fields, sizeof e->fields);
  int points = x->pareto_count != y->pareto_count;
  for (uint32_t k = 0; !points && k < x->pareto_count; k++)
    points = diff_record(STORE_T_PARETO, &a->pareto[x->pareto_first + k], &b->pareto[y->pareto_first + k], 1, NULL,
                         0) != 0;
  if (points) add_name(e->fields, sizeof e->fields, "pareto");
}

/* Rows matched by a key: buckets by (phase, batch, seq), ops by signature. */
typedef struct {
  store_diff_what what;
  store_table table;
  uint64_t (*key)(const store_policy_tables *p, size_t row);
  void (*entry)(store_diff_entry *e, const store_policy_tables *p, uint32_t row);
  void (*changes)(store_diff_entry *e, const store_policy_tables *a, uint32_t ra, const store_policy_tables *b,
                  uint32_t rb);
} keyed_rows;

static const keyed_rows keyed_buckets = {STORE_DIFF_BUCKET, STORE_T_BUCKETS, store_bucket_key, bucket_entry,
                                         bucket_changes};
static const keyed_rows keyed_ops = {STORE_DIFF_OP, STORE_T_OPS, signature_key, op_entry, op_changes};

/* Merge the rows of a and b in key order: a row only in one store is removed or added, a
 * key in both is reported when its rows differ. */
static int diff_keyed(differ *d, const store_policy_tables *a, const store_policy_tables *b, const keyed_rows *k,
                      enpu_err *err) {
  size_t na = 0, nb = 0;
  store_policy_table(a, k->table, &na);
  store_policy_table(b, k->table, &nb);
  uint32_t *oa = NULL, *ob = NULL;
  int rc = store_order_rows(a, na, k->key, &oa, err);
  if (rc == ENPU_OK) rc = store_order_rows(b, nb, k->key, &ob, err);
  for (size_t i = 0, j = 0; rc == ENPU_OK && (i < na || j < nb);) {
    const uint64_t ka = i < na ? k->key(a, oa[i]) : 0, kb = j < nb ? k->key(b, ob[j]) : 0;
    const int c = i >= na ? 1 : j >= nb ? -1 : (ka > kb) - (ka < kb);
    store_diff_entry e = {.what = k->what,
                          .policy = a->name,
                          .kind = c < 0   ? STORE_DIFF_REMOVED
                                  : c > 0 ? STORE_DIFF_ADDED
                                          : STORE_DIFF_CHANGED};
    if (c <= 0) k->entry(&e, a, oa[i]);
    else k->entry(&e, b, ob[j]);
    if (c == 0) k->changes(&e, a, oa[i], b, ob[j]);
    if (c != 0 || e.fields[0]) emit(d, &e);
    i += c <= 0;
    j += c >= 0;
  }
  free(oa);
  free(ob);
  return rc;
}

/* ---- row by row ---------------------------------------------------------------- */

static void diff_tables(differ *d, store_policy_tables *a, store_policy_tables *b) {
  for (int t = 0; t < STORE_NTABLE; t++) {
    size_t *na = NULL, *nb = NULL;
    const char *ra = *store_table_slot(a, (store_table)t, &na), *rb = *store_table_slot(b, (store_table)t, &nb);
    store_diff_entry e = {.what = STORE_DIFF_TABLE,
                          .kind = STORE_DIFF_CHANGED,
                          .policy = a->name,
                          .table = (store_table)t,
                          .rows_a = *na,
                          .rows_b = *nb};
    if (*na == *nb) {
      size_t bytes = store_tables[t].record_bytes;
      for (size_t i = 0; i < *na; i++) {
        int n = diff_record((store_table)t, ra + i * bytes, rb + i * bytes, 0, e.rows_differ ? NULL : e.fields,
                            sizeof e.fields);
        if (n && !e.rows_differ) e.first_row = i;
        e.rows_differ += n != 0;
      }
      if (!e.rows_differ) continue;
    }
    emit(d, &e);
  }
}

/* ---- provenance and policies ----------------------------------------------------- */

static void diff_provenance(differ *d, const store_contents *a, const store_contents *b) {
  const struct {
    const char *name;
    uint64_t x, y;
  } hashes[] = {{"cost_model_hash", a->cost_model_hash, b->cost_model_hash},
                {"chip_hash", a->chip_hash, b->chip_hash},
                {"model_hash", a->model_hash, b->model_hash},
                {"job_hash", a->job_hash, b->job_hash}};
  const struct {
    const char *name, *x, *y;
  } texts[] = {{"job_json", a->job_json, b->job_json},
               {"model_json", a->model_json, b->model_json},
               {"chip_json", a->chip_json, b->chip_json},
               {"cluster_json", a->cluster_json, b->cluster_json},
               {STORE_ATTR_ADDED_BUCKETS, a->added_buckets_json, b->added_buckets_json}};
  store_diff_entry e = {.what = STORE_DIFF_PROVENANCE, .kind = STORE_DIFF_CHANGED};
  for (size_t i = 0; i < sizeof hashes / sizeof hashes[0]; i++)
    if (hashes[i].x != hashes[i].y) {
      snprintf(e.fields, sizeof e.fields, "%s", hashes[i].name);
      emit(d, &e);
    }
  for (size_t i = 0; i < sizeof texts / sizeof texts[0]; i++)
    if (strcmp(texts[i].x ? texts[i].x : "", texts[i].y ? texts[i].y : "")) { /* absent = empty */
      snprintf(e.fields, sizeof e.fields, "%s", texts[i].name);
      emit(d, &e);
    }
}

int store_diff(const store_contents *a, const store_contents *b, void (*fn)(const store_diff_entry *d, void *user),
               void *user, size_t *count, enpu_err *err) {
  differ d = {fn, user, 0};
  *count = 0;
  diff_provenance(&d, a, b);
  int rc = ENPU_OK;
  /* Policies are in name order in both: merge. */
  for (size_t i = 0, j = 0; rc == ENPU_OK && (i < a->npolicies || j < b->npolicies);) {
    int c = i >= a->npolicies ? 1 : j >= b->npolicies ? -1 : strcmp(a->policies[i].name, b->policies[j].name);
    if (c != 0) {
      store_diff_entry e = {.what = STORE_DIFF_POLICY,
                            .kind = c < 0 ? STORE_DIFF_REMOVED : STORE_DIFF_ADDED,
                            .policy = c < 0 ? a->policies[i].name : b->policies[j].name};
      emit(&d, &e);
    } else {
      rc = diff_keyed(&d, &a->policies[i], &b->policies[j], &keyed_buckets, err);
      if (rc == ENPU_OK) rc = diff_keyed(&d, &a->policies[i], &b->policies[j], &keyed_ops, err);
      if (rc == ENPU_OK) diff_tables(&d, &a->policies[i], &b->policies[j]);
    }
    i += c <= 0;
    j += c >= 0;
  }
  *count = d.count;
  return rc;
}
