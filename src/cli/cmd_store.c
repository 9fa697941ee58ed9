/* cmd_store.c — `enpu store info STORE [--json]`, `enpu store verify STORE [--json]` and
 * `enpu store diff A B [--json]`: what a plan store holds (provenance, per policy its
 * counts and on-disk sizes with the factor shuffle + zstd saves), whether it is intact
 * (every check and checksum of store_load), and what changed between two stores, per
 * policy, bucket and op (store_diff does the comparing; this file parses and prints).
 * created_utc and tool_version are not content: two stores that differ only there are
 * identical.
 *
 * Exit status: info 0 ok, 1 the store cannot be read, 4 an I/O error of the system;
 * verify 0 intact, 1 damaged or not a plan store, 2 usage or a file that cannot be
 * opened, 4 an I/O error of the system; diff like diff(1): 0 identical, 1 different,
 * 2 error (usage, or a file that is no plan store or cannot be opened), but a damaged
 * store (a checksum that does not match, a table that cannot be read) is 1, as every
 * other command that reads it says. */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "cli_internal.h"
#include "report.h"
#include "store.h"

static int info_run(void *args);
static int verify_run(void *args);
static int diff_run(void *args);

typedef struct {
  const char *path;
  int json;
} one_store_args;

typedef struct {
  cli_strings paths;
  int json;
} diff_args;

static const cli_opt one_opts[] = {CLI_JSON_OPT(one_store_args, "the outcome")};
static const cli_opt diff_opts[] = {CLI_JSON_OPT(diff_args, "the differences")};

/* clang-format off */
static const cli_spec info_spec = {.command = "store info", .run = info_run,
                                   CLI_STORE_ARG(one_store_args, path), CLI_OPTS(one_opts, one_store_args)};

static const cli_spec verify_spec = {.command = "store verify", .run = verify_run,
                                     CLI_STORE_ARG(one_store_args, path), CLI_OPTS(one_opts, one_store_args)};

static const cli_spec diff_spec = {.command = "store diff", .run = diff_run, CLI_OPTS(diff_opts, diff_args),
                                   .pos = {"A B", "store file", 2, 2, offsetof(diff_args, paths)}};
/* clang-format on */
const cli_spec *const cli_store_specs[] = {&info_spec, &verify_spec, &diff_spec, NULL};

static void hex64(char out[20], uint64_t v) { snprintf(out, 20, "0x%016" PRIx64, v); }

/* ---- info ---------------------------------------------------------------------- */

static const char *const status_names[STORE_NBUCKET_STATUS] = {"ok", "infeasible_capacity", "failed", "pending"};

typedef struct {
  size_t by_status[STORE_NBUCKET_STATUS];
  uint64_t table_bytes, stored_bytes;
} policy_summary;

static policy_summary sum_policy(const store_policy_tables *p, const store_table_size sizes[STORE_NTABLE]) {
  policy_summary s = {{0}, 0, 0};
  for (size_t i = 0; i < p->nbuckets; i++) s.by_status[p->buckets[i].status]++; /* validated */
  for (int t = 0; t < STORE_NTABLE; t++) {
    s.table_bytes += sizes[t].table_bytes;
    s.stored_bytes += sizes[t].stored_bytes;
  }
  return s;
}

/* The sweep points the store's policies were compiled on (config_variant_of), each once,
 * in the order of their first policy; *n of them. */
static size_t info_variants(const store_contents *c, const char **out) {
  size_t n = 0;
  for (size_t i = 0; i < c->npolicies; i++) {
    const char *v = config_variant_of(c->policies[i].name);
    size_t k = 0;
    while (v && k < n && strcmp(out[k], v)) k++;
    if (v && k == n) out[n++] = v;
  }
  return n;
}

static json_t *variants_json(const store_contents *c) {
  const char **v = calloc(c->npolicies + 1, sizeof *v);
  json_t *a = v ? json_array() : NULL;
  const size_t n = v ? info_variants(c, v) : 0;
  for (size_t k = 0; a && k < n; k++)
    if (json_array_append_new(a, json_string(v[k])) < 0) json_decref(a), a = NULL;
  free(v);
  return a;
}

static double factor(uint64_t table_bytes, uint64_t stored_bytes) {
  return stored_bytes ? (double)table_bytes / (double)stored_bytes : 0.0;
}

/* The job's "name" from the stored job file, or NULL (a store written without one). The
 * Slurm scripts place a validation's log by it, before anything runs. */
static json_t *stored_job_name(const store_contents *c) {
  json_t *job = c->job_json ? json_loads(c->job_json, 0, NULL) : NULL;
  json_t *name = json_incref(json_object_get(job, "name"));
  json_decref(job);
  if (json_is_string(name)) return name;
  json_decref(name);
  return NULL;
}

static json_t *info_json(const char *path, const store_contents *c, store_table_size (*sizes)[STORE_NTABLE],
                         long long file_bytes) {
  json_t *pols = json_array();
  uint64_t table_bytes = 0, stored_bytes = 0;
  for (size_t i = 0; pols && i < c->npolicies; i++) {
    const store_policy_tables *p = &c->policies[i];
    policy_summary s = sum_policy(p, sizes[i]);
    table_bytes += s.table_bytes;
    stored_bytes += s.stored_bytes;
    json_t *buckets = json_pack("{s:I}", "total", (json_int_t)p->nbuckets);
    for (int k = 0; buckets && k < STORE_NBUCKET_STATUS; k++)
      if (json_object_set_new(buckets, status_names[k], json_integer((json_int_t)s.by_status[k])) < 0)
        json_decref(buckets), buckets = NULL;
    json_t *pj = json_pack("{s:s, s:I, s:I, s:o, s:I, s:I, s:I, s:I, s:I, s:f}", "name", p->name, "ops",
                           (json_int_t)p->nops, "pareto_points", (json_int_t)p->npareto, "buckets", buckets,
                           "bucket_ops", (json_int_t)p->nbucket_ops, "walk_steps", (json_int_t)p->nwalk, "plans",
                           (json_int_t)p->nplans, "plan_states", (json_int_t)p->nplan_states, "table_bytes",
                           (json_int_t)s.table_bytes, "zstd_factor", factor(s.table_bytes, s.stored_bytes));
    if (!pj || json_object_set_new(pj, "stored_bytes", json_integer((json_int_t)s.stored_bytes)) < 0 ||
        json_array_append_new(pols, pj) < 0)
      json_decref(pols), pols = NULL;
  }
  char h[4][20];
  hex64(h[0], c->cost_model_hash), hex64(h[1], c->chip_hash), hex64(h[2], c->model_hash), hex64(h[3], c->job_hash);
  json_t *added = c->added_buckets_json ? json_loads(c->added_buckets_json, 0, NULL) : json_null();
  if (!added) added = json_string(c->added_buckets_json); /* not JSON: shown verbatim */
  report_capacity_info ci;
  report_capacity(c, &ci);
  uint64_t content = 0;
  enpu_err err = {0};
  if (store_content_hash(c, &content, &err) < 0) return json_decref(pols), json_decref(added), NULL;
  char content_hex[20];
  hex64(content_hex, content);
  json_t *doc = json_pack(
      "{s:s, s:I, s:I, s:s, s:s, s:s, s:{s:s, s:s, s:s, s:s}, s:o, s:{s:s, s:I}, s:{s:s, s:s}, "
      "s:o, s:I, s:I, s:f}",
      "store", path, "format_version", (json_int_t)c->format_version, "file_bytes", (json_int_t)file_bytes,
      "tool_version", c->tool_version, "created_utc", c->created_utc, "content_hash", content_hex, "hashes",
      "cost_model", h[0], "chip", h[1], "model", h[2], "job", h[3], "added_buckets", added, "capacity", "policy",
      ci.capacity, "buckets_over_hbm", (json_int_t)ci.over_hbm, "moe", "experts", ci.experts, "capacity_factor",
      ci.factor, "policies", pols, "table_bytes", (json_int_t)table_bytes, "stored_bytes", (json_int_t)stored_bytes,
      "zstd_factor", factor(table_bytes, stored_bytes));
  if (doc && json_object_set_new(doc, "variants", variants_json(c)) < 0) json_decref(doc), doc = NULL;
  json_t *name = stored_job_name(c);
  if (doc && json_object_set_new(doc, "job_name", name ? name : json_null()) < 0) json_decref(doc), doc = NULL;
  return doc;
}

static void info_human(const char *path, const store_contents *c, store_table_size (*sizes)[STORE_NTABLE],
                       long long file_bytes) {
  printf("store %s: format_version %u, %lld bytes on disk\n", path, c->format_version, file_bytes);
  json_t *name = stored_job_name(c);
  printf("job: %s\n", name ? json_string_value(name) : "(not recorded)");
  json_decref(name);
  printf("written by enpu %s at %s\n", c->tool_version[0] ? c->tool_version : "(unknown)",
         c->created_utc[0] ? c->created_utc : "(unknown time)");
  printf("hashes: cost model 0x%016" PRIx64 ", chip 0x%016" PRIx64 ", model 0x%016" PRIx64 ", job 0x%016" PRIx64
         "\n",
         c->cost_model_hash, c->chip_hash, c->model_hash, c->job_hash);
  printf("added buckets: %s\n", c->added_buckets_json ? c->added_buckets_json : "none");
  report_capacity_info ci;
  report_capacity(c, &ci);
  printf("capacity: %s", ci.capacity);
  if (!strcmp(ci.capacity, "ignore"))
    printf(" (every plan compiled as if the model fitted HBM; %zu buckets do not)", ci.over_hbm);
  else if (!strcmp(ci.capacity, "offload"))
    printf(" (%zu buckets stream weights from the host every pass)", ci.over_hbm);
  printf("; MoE experts %s, capacity factor %s\n", ci.experts, ci.factor);
  const char **v = calloc(c->npolicies + 1, sizeof *v);
  const size_t nv = v ? info_variants(c, v) : 0;
  printf("chip variants (sweep points; policy NAME:POINT, enpu query --variant POINT): %s", nv ? "" : "none");
  for (size_t k = 0; k < nv; k++) printf("%s%s", k ? ", " : "", v[k]);
  printf("\n");
  free(v);
  uint64_t table_bytes = 0, stored_bytes = 0;
  int w = 10; /* the policy column fits the longest name (policy variants are long) */
  for (size_t i = 0; i < c->npolicies; i++)
    if ((int)strlen(c->policies[i].name) > w) w = (int)strlen(c->policies[i].name);
  printf("\n%-*s %7s %9s %8s %6s %11s %7s %8s %10s %10s %12s %12s %7s\n", w, "policy", "ops", "pareto", "buckets",
         "ok", "infeasible", "failed", "pending", "walk", "plans", "table bytes", "stored", "zstd");
  for (size_t i = 0; i < c->npolicies; i++) {
    const store_policy_tables *p = &c->policies[i];
    policy_summary s = sum_policy(p, sizes[i]);
    table_bytes += s.table_bytes;
    stored_bytes += s.stored_bytes;
    printf("%-*s %7zu %9zu %8zu %6zu %11zu %7zu %8zu %10zu %10zu %12" PRIu64 " %12" PRIu64 " %6.1fx\n", w, p->name,
           p->nops, p->npareto, p->nbuckets, s.by_status[STORE_BUCKET_OK],
           s.by_status[STORE_BUCKET_INFEASIBLE_CAPACITY], s.by_status[STORE_BUCKET_FAILED],
           s.by_status[STORE_BUCKET_PENDING], p->nwalk, p->nplans, s.table_bytes, s.stored_bytes,
           factor(s.table_bytes, s.stored_bytes));
  }
  printf("total: %" PRIu64 " table bytes stored in %" PRIu64 " (zstd factor %.1fx)\n", table_bytes, stored_bytes,
         factor(table_bytes, stored_bytes));
}

/* info and verify: the store loaded (rc its outcome). */
typedef struct {
  const char *path;
  int json, rc;
  store_contents *c;
  enpu_err err;
} one_store;

static void load_one(const one_store_args *a, one_store *o) {
  *o = (one_store){.path = a->path, .json = a->json};
  o->rc = store_load(o->path, &o->c, &o->err);
}

static int info_run(void *args) {
  one_store o;
  load_one(args, &o);
  store_table_size(*sizes)[STORE_NTABLE] = NULL;
  struct stat sb;
  int status = 0;
  if (o.rc < 0) {
    cli_fail("store info", o.err.msg);
    status = cli_store_status(o.path, o.rc);
  } else if (!(sizes = calloc(o.c->npolicies ? o.c->npolicies : 1, sizeof *sizes))) {
    status = cli_fail("store info", "out of memory");
  } else if (store_sizes(o.path, o.c, sizes, &o.err) < 0 || stat(o.path, &sb) != 0) {
    status = cli_fail("store info", o.err.code ? o.err.msg : "cannot stat the store");
  } else if (o.json) {
    json_t *doc = info_json(o.path, o.c, sizes, (long long)sb.st_size);
    status = doc ? cli_print_json(doc) : cli_fail("store info", "cannot build JSON output");
    json_decref(doc);
  } else {
    info_human(o.path, o.c, sizes, (long long)sb.st_size);
  }
  free(sizes);
  store_contents_free(o.c);
  return status;
}

/* ---- verify -------------------------------------------------------------------- */

static int verify_run(void *args) {
  one_store o;
  load_one(args, &o);
  size_t tables = 0, rows = 0;
  for (size_t i = 0; o.c && i < o.c->npolicies; i++)
    for (int t = 0; t < STORE_NTABLE; t++) {
      size_t n = 0;
      tables += store_policy_table(&o.c->policies[i], (store_table)t, &n) != NULL;
      rows += n;
    }
  const int rc = o.rc;
  const int status = rc == 0 ? 0 : cli_exit_status(rc, rc == ENPU_ERR_FORMAT ? CLI_EXIT_FAILED : CLI_EXIT_USAGE);
  if (o.json) {
    json_t *doc = json_pack("{s:s, s:b, s:s?, s:I, s:I, s:I}", "store", o.path, "intact", rc == 0, "error",
                            rc == 0 ? NULL : o.err.msg, "policies", (json_int_t)(o.c ? o.c->npolicies : 0),
                            "tables", (json_int_t)tables, "rows", (json_int_t)rows);
    if (!doc || cli_print_json(doc) != 0) cli_fail("store verify", "cannot build JSON output");
    json_decref(doc);
  } else if (rc == 0) {
    printf("%s: intact: format_version %u, %zu policies, %zu tables, %zu rows, every checksum matches\n", o.path,
           o.c->format_version, o.c->npolicies, tables, rows);
  }
  if (rc < 0)
    fprintf(stderr, "enpu store verify: %s: %s\n", rc == ENPU_ERR_FORMAT ? "not intact" : "cannot verify",
            o.err.msg);
  store_contents_free(o.c);
  return status;
}

/* ---- diff ---------------------------------------------------------------------- */

static const char *const kind_names[3] = {"added", "removed", "changed"};
static const char *const what_names[5] = {"provenance", "policy", "bucket", "op", "table"};

/* One difference as a JSON object; NULL when out of memory. */
static json_t *diff_entry_json(const store_diff_entry *d) {
  json_t *o = json_pack("{s:s, s:s}", "what", what_names[d->what], "change", kind_names[d->kind]);
  char sig[20];
  switch (d->what) {
  case STORE_DIFF_PROVENANCE:
    if (o && json_object_set_new(o, "attribute", json_string(d->fields)) < 0) json_decref(o), o = NULL;
    return o;
  case STORE_DIFF_POLICY: break;
  case STORE_DIFF_BUCKET:
    if (o && json_object_update_new(o, json_pack("{s:s, s:i, s:i}", "phase", cli_phase_names[d->phase], "batch",
                                                 d->batch, "seq", d->seq)) < 0)
      json_decref(o), o = NULL;
    break;
  case STORE_DIFF_OP:
    hex64(sig, d->signature);
    if (o && json_object_update_new(o, json_pack("{s:s, s:s}", "signature", sig, "name", d->name)) < 0)
      json_decref(o), o = NULL;
    break;
  case STORE_DIFF_TABLE:
    if (o && json_object_update_new(
                 o, json_pack("{s:s, s:I, s:I, s:I, s:I}", "table", store_table_name(d->table), "rows_a",
                              (json_int_t)d->rows_a, "rows_b", (json_int_t)d->rows_b, "first_row",
                              (json_int_t)d->first_row, "rows_differ", (json_int_t)d->rows_differ)) < 0)
      json_decref(o), o = NULL;
    break;
  }
  if (o && json_object_set_new(o, "policy", json_string(d->policy)) < 0) json_decref(o), o = NULL;
  if (o && d->fields[0] && json_object_set_new(o, "fields", json_string(d->fields)) < 0) json_decref(o), o = NULL;
  return o;
}

static void diff_entry_print(const store_diff_entry *d) {
  switch (d->what) {
  case STORE_DIFF_PROVENANCE: printf("provenance: %s changed\n", d->fields); return;
  case STORE_DIFF_POLICY: printf("policy %s: %s\n", d->policy, kind_names[d->kind]); return;
  case STORE_DIFF_BUCKET:
    printf("policy %s: bucket %s batch %d seq %d: %s", d->policy, cli_phase_names[d->phase], d->batch, d->seq,
           kind_names[d->kind]);
    break;
  case STORE_DIFF_OP:
    printf("policy %s: op 0x%016" PRIx64 " (%s): %s", d->policy, d->signature, d->name, kind_names[d->kind]);
    break;
  case STORE_DIFF_TABLE:
    printf("policy %s: table %s: ", d->policy, store_table_name(d->table));
    if (d->rows_a != d->rows_b) printf("%" PRIu64 " rows in A, %" PRIu64 " in B\n", d->rows_a, d->rows_b);
    else printf("%" PRIu64 " rows differ, first row %" PRIu64 " (%s)\n", d->rows_differ, d->first_row, d->fields);
    return;
  }
  printf(d->fields[0] ? " (%s)\n" : "\n", d->fields);
}

typedef struct {
  json_t *list; /* --json: the entries; NULL: print them */
  int failed;
} diff_out;

static void on_diff(const store_diff_entry *d, void *user) {
  diff_out *out = user;
  if (!out->list) {
    diff_entry_print(d);
  } else if (json_array_append_new(out->list, diff_entry_json(d)) < 0) {
    out->failed = 1;
  }
}

static int diff_run(void *args) {
  const char *const *paths = ((const diff_args *)args)->paths.v;
  const int json = ((const diff_args *)args)->json;
  enpu_err err = {0};
  store_contents *a = NULL, *b = NULL;
  diff_out out = {json ? json_array() : NULL, 0};
  size_t count = 0;
  int status = 0;
  int rc = store_load(paths[0], &a, &err);
  const char *failed = paths[0]; /* the store read last */
  if (rc == 0) rc = store_load(failed = paths[1], &b, &err);
  if (rc == 0) rc = store_diff(a, b, on_diff, &out, &count, &err);
  if (rc < 0) {
    cli_fail("store diff", err.msg);
    /* a damaged store is 1, as every other command says it; no plan store at all is 2 */
    status = cli_store_status(failed, rc);
  } else if (json && (out.failed || !out.list)) {
    cli_fail("store diff", "cannot build JSON output");
    status = 2;
  } else if (json) {
    json_t *doc = json_pack("{s:s, s:s, s:b, s:I, s:O}", "a", paths[0], "b", paths[1], "identical", count == 0,
                            "count", (json_int_t)count, "differences", out.list);
    status = doc && cli_print_json(doc) == 0 ? (count ? 1 : 0) : 2;
    json_decref(doc);
  } else {
    if (count == 0) printf("identical: %s and %s hold the same content\n", paths[0], paths[1]);
    else printf("%zu difference%s\n", count, count == 1 ? "" : "s");
    status = count ? 1 : 0;
  }
  json_decref(out.list);
  store_contents_free(a);
  store_contents_free(b);
  return status;
}
