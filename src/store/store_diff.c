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
static int bucket_ops_differ(const store_policy_tables *a, const store_bucket_rec *ba,
                             const store_policy_tables *b, const store_bucket_rec *bb) {
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

static int walks_differ(const store_policy_tables *a, const store_bucket_rec *ba, const store_policy_tables *b,
                        const store_bucket_rec *bb) {
  if (ba->walk_count != bb->walk_count) return 1;
  for (uint64_t k = 0; k < ba->walk_count; k++) {
    const store_walk_rec *x = &a->walk[ba->walk_first + k], *y = &b->walk[bb->walk_first + k];
    if (diff_record(STORE_T_WALK, x, y, 1, NULL, 0) || !same_point(a, x->op, x->pareto, b, y->op, y->pareto))
      return 1;
  }
  return 0;
}

static int plans_differ(const store_policy_tables *a, const store_bucket_rec *ba, const store_policy_tables *b,
                        const store_bucket_rec *bb) {
  if (ba->plan_count != bb->plan_count) return 1;
  for (uint32_t k = 0; k < ba->plan_count; k++) {
    const store_plan_rec *x = &a->plans[ba->plan_first + k], *y = &b->plans[bb->plan_first + k];
    if (diff_record(STORE_T_PLANS, x, y, 1, NULL, 0)) return 1;
    for (uint64_t i = 0; i < x->states_count; i++) { /* states_count equal: a content column */
      const store_plan_state_rec *s = &a->plan_states[x->states_first + i], *r = &b->plan_states[y->states_first + i];
      if (diff_record(STORE_T_PLAN_STATES, s, r, 1, NULL, 0) || !same_point(a, s->op, s->pareto, b, r->op, r->pareto))
        return 1;
    }
  }
  return 0;
}

static int diff_buckets(differ *d, const store_policy_tables *a, const store_policy_tables *b, enpu_err *err) {
  uint32_t *oa = NULL, *ob = NULL;
  int rc = store_bucket_order(a, &oa, err);
  if (rc == ENPU_OK) rc = store_bucket_order(b, &ob, err);
  for (size_t i = 0, j = 0; rc == ENPU_OK && (i < a->nbuckets || j < b->nbuckets);) {
    const store_bucket_rec *x = i < a->nbuckets ? &a->buckets[oa[i]] : NULL;
    const store_bucket_rec *y = j < b->nbuckets ? &b->buckets[ob[j]] : NULL;
    int c = !x ? 1 : !y ? -1 : store_bucket_cmp(x, y);
    const store_bucket_rec *key = c <= 0 ? x : y;
    store_diff_entry e = {.what = STORE_DIFF_BUCKET, .policy = a->name, .phase = key->phase, .batch = key->batch,
                          .seq = key->seq, .kind = c < 0 ? STORE_DIFF_REMOVED : STORE_DIFF_ADDED};
    if (c == 0) {
      e.kind = STORE_DIFF_CHANGED;
      diff_record(STORE_T_BUCKETS, x, y, 1, e.fields, sizeof e.fields);
      if (bucket_ops_differ(a, x, b, y)) add_name(e.fields, sizeof e.fields, "bucket_ops");
      if (walks_differ(a, x, b, y)) add_name(e.fields, sizeof e.fields, "walk");
      if (plans_differ(a, x, b, y)) add_name(e.fields, sizeof e.fields, "plans");
    }
    if (c != 0 || e.fields[0]) emit(d, &e);
    i += c <= 0;
    j += c >= 0;
  }
  free(oa);
  free(ob);
  return rc;
}

typedef struct {
  uint64_t signature;
  uint32_t row;
} sig_row;

static int sig_row_cmp(const void *x, const void *y) {
  const sig_row *a = x, *b = y;
  if (a->signature != b->signature) return a->signature < b->signature ? -1 : 1;
  return (a->row > b->row) - (a->row < b->row);
}

static sig_row *ops_by_signature(const store_policy_tables *p) {
  sig_row *s = enpu_calloc(p->nops ? p->nops : 1, sizeof *s);
  if (!s) return NULL;
  for (size_t i = 0; i < p->nops; i++) s[i] = (sig_row){p->ops[i].signature, (uint32_t)i};
  qsort(s, p->nops, sizeof *s, sig_row_cmp);
  return s;
}

static int diff_ops(differ *d, const store_policy_tables *a, const store_policy_tables *b, enpu_err *err) {
  sig_row *sa = ops_by_signature(a), *sb = ops_by_signature(b);
  int rc = sa && sb ? ENPU_OK : enpu_errorf(err, ENPU_ERR_NOMEM, "store diff: out of memory");
  for (size_t i = 0, j = 0; rc == ENPU_OK && (i < a->nops || j < b->nops);) {
    int c = i >= a->nops   ? 1
            : j >= b->nops ? -1
                           : (sa[i].signature > sb[j].signature) - (sa[i].signature < sb[j].signature);
    const store_op_rec *x = c <= 0 ? &a->ops[sa[i].row] : NULL, *y = c >= 0 ? &b->ops[sb[j].row] : NULL;
    store_diff_entry e = {.what = STORE_DIFF_OP, .policy = a->name, .signature = (x ? x : y)->signature,
                          .name = (x ? x : y)->name, .kind = c < 0 ? STORE_DIFF_REMOVED : STORE_DIFF_ADDED};
    if (c == 0) {
      e.kind = STORE_DIFF_CHANGED;
      diff_record(STORE_T_OPS, x, y, 1, e.fields, sizeof e.fields);
      int points = x->pareto_count != y->pareto_count;
      for (uint32_t k = 0; !points && k < x->pareto_count; k++)
        points = diff_record(STORE_T_PARETO, &a->pareto[x->pareto_first + k], &b->pareto[y->pareto_first + k], 1,
                             NULL, 0) != 0;
      if (points) add_name(e.fields, sizeof e.fields, "pareto");
    }
    if (c != 0 || e.fields[0]) emit(d, &e);
    i += c <= 0;
    j += c >= 0;
  }
  free(sa);
  free(sb);
  return rc;
}

/* ---- row by row ---------------------------------------------------------------- */

static void diff_tables(differ *d, store_policy_tables *a, store_policy_tables *b) {
  for (int t = 0; t < STORE_NTABLE; t++) {
    size_t *na = NULL, *nb = NULL;
    const char *ra = *store_table_slot(a, (store_table)t, &na), *rb = *store_table_slot(b, (store_table)t, &nb);
    store_diff_entry e = {.what = STORE_DIFF_TABLE, .kind = STORE_DIFF_CHANGED, .policy = a->name,
                          .table = (store_table)t, .rows_a = *na, .rows_b = *nb};
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

int store_diff(const store_contents *a, const store_contents *b,
               void (*fn)(const store_diff_entry *d, void *user), void *user, size_t *count, enpu_err *err) {
  differ d = {fn, user, 0};
  *count = 0;
  diff_provenance(&d, a, b);
  int rc = ENPU_OK;
  /* Policies are in name order in both: merge. */
  for (size_t i = 0, j = 0; rc == ENPU_OK && (i < a->npolicies || j < b->npolicies);) {
    int c = i >= a->npolicies ? 1 : j >= b->npolicies ? -1 : strcmp(a->policies[i].name, b->policies[j].name);
    if (c != 0) {
      store_diff_entry e = {.what = STORE_DIFF_POLICY, .kind = c < 0 ? STORE_DIFF_REMOVED : STORE_DIFF_ADDED,
                            .policy = c < 0 ? a->policies[i].name : b->policies[j].name};
      emit(&d, &e);
    } else {
      rc = diff_buckets(&d, &a->policies[i], &b->policies[j], err);
      if (rc == ENPU_OK) rc = diff_ops(&d, &a->policies[i], &b->policies[j], err);
      if (rc == ENPU_OK) diff_tables(&d, &a->policies[i], &b->policies[j]);
    }
    i += c <= 0;
    j += c >= 0;
  }
  *count = d.count;
  return rc;
}
