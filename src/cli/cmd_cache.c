/* cmd_cache.c — `enpu cache stats|verify|prune [--cache DIR] [--json]`: the operator-
 * result cache farms share (opcache.h): its entries and bytes, every entry read and
 * checked (the damaged removed), the least recently used removed until it fits
 * --max-bytes. Also where a farm's cache is (cli_cache_dir), which `enpu farm` asks.
 *
 * Exit status: 0 ok (verify: every entry intact), 1 verify found damaged entries (they
 * are removed), 2 usage, 4 the cache cannot be read or written. */
#include <stdlib.h>
#include <string.h>

#include "opcache.h"
#include "cli_internal.h"

typedef struct {
  const char *dir;
  uint64_t max_bytes;
  int json;
} cache_args;

static int stats_run(void *args);
static int verify_run(void *args);
static int prune_run(void *args);

#define CACHE_DIR_OPT                                                                    \
  {                                                                                      \
    .name = "cache", .type = CLI_STRING, .at = offsetof(cache_args, dir), .meta = "DIR", \
    .help = "the cache (default: $ENPU_CACHE when it names a directory, else\n"          \
            "$XDG_CACHE_HOME/enpu or ~/.cache/enpu)"                                     \
  }

/* clang-format off */
static const cli_opt plain_opts[] = {CACHE_DIR_OPT, CLI_JSON_OPT(cache_args, "the counts")};
static const cli_opt prune_opts[] = {
    CACHE_DIR_OPT,
    {.name = "max-bytes", .type = CLI_U64, .at = offsetof(cache_args, max_bytes), .meta = "N",
     .flags = CLI_REQUIRED, .range = {.min = 0, .max = 1e18},
     .help = "remove the least recently used entries until at most N bytes remain"},
    CLI_JSON_OPT(cache_args, "the counts")};

static const cli_spec stats_spec = {.command = "cache stats", .run = stats_run, CLI_OPTS(plain_opts, cache_args)};
static const cli_spec verify_spec = {.command = "cache verify", .run = verify_run, CLI_OPTS(plain_opts, cache_args)};
static const cli_spec prune_spec = {.command = "cache prune", .run = prune_run, CLI_OPTS(prune_opts, cache_args)};
/* clang-format on */
const cli_spec *const cli_cache_specs[] = {&stats_spec, &verify_spec, &prune_spec, NULL};

/* ENPU_CACHE: unset, "", "0" or "off" none; "1", "on" or "default" the default dir. */
static int env_cache(const char **value) {
  const char *v = getenv("ENPU_CACHE");
  *value = v;
  if (!v || !*v || !strcmp(v, "0") || !strcmp(v, "off")) return 0;
  return !strcmp(v, "1") || !strcmp(v, "on") || !strcmp(v, "default") ? 1 : 2;
}

int cli_cache_dir(const char *given, int off, int fallback_default, char *out, size_t len, enpu_err *err) {
  const char *v;
  if (off) return 0;
  const int env = given ? 2 : env_cache(&v);
  if (given) v = given;
  if (env == 0 && !fallback_default) return 0;
  if (env == 2) {
    ENPU_RETURN_IF(strlen(v) >= len, err, ENPU_ERR_RANGE, "cache directory path too long: %s", v);
    snprintf(out, len, "%s", v);
    return 1;
  }
  ENPU_FORWARD(opcache_default_dir(out, len, err));
  return 1;
}

/* The cache these commands look at (there is always one). */
static int resolve(const cache_args *a, const char *cmd, char *dir, size_t len) {
  enpu_err err = {0};
  if (cli_cache_dir(a->dir, 0, 1, dir, len, &err) >= 0) return 0;
  cli_fail(cmd, err.msg);
  return -1;
}

static int print(const cache_args *a, const char *cmd, const char *dir, const opcache_scan *s) {
  if (a->json) {
    json_t *doc = json_pack("{s:s, s:I, s:I, s:{s:I, s:I, s:I}, s:I, s:I, s:I, s:I}", "cache", dir, "entries",
                            (json_int_t)s->entries, "bytes", (json_int_t)s->entry_bytes, "by_kind", "op",
                            (json_int_t)s->by_kind[1], "bucket", (json_int_t)s->by_kind[2], "other",
                            (json_int_t)(s->by_kind[0] + s->by_kind[3]), "damaged", (json_int_t)s->damaged,
                            "removed", (json_int_t)s->removed, "removed_bytes", (json_int_t)s->removed_bytes,
                            "temporaries", (json_int_t)s->temporaries);
    const int rc = doc ? cli_print_json(doc) : cli_fail(cmd, "out of memory (JSON output)");
    json_decref(doc);
    return rc;
  }
  printf("cache %s: %lld entries (%lld op, %lld bucket results), %lld bytes\n", dir, (long long)s->entries,
         (long long)s->by_kind[1], (long long)s->by_kind[2], (long long)s->entry_bytes);
  if (s->damaged) printf("damaged entries removed: %lld\n", (long long)s->damaged);
  if (s->removed)
    printf("removed (least recently used): %lld entries, %lld bytes\n", (long long)s->removed,
           (long long)s->removed_bytes);
  return 0;
}

typedef int (*walk_fn)(const char *dir, int64_t max_bytes, opcache_scan *s, enpu_err *err);
static int do_stats(const char *d, int64_t m, opcache_scan *s, enpu_err *e) {
  return (void)m, opcache_stats(d, s, e);
}
static int do_verify(const char *d, int64_t m, opcache_scan *s, enpu_err *e) {
  return (void)m, opcache_verify(d, s, e);
}

static int walk(const cache_args *a, const char *cmd, walk_fn fn) {
  char dir[4096];
  if (resolve(a, cmd, dir, sizeof dir) < 0) return CLI_EXIT_USAGE;
  opcache_scan s;
  enpu_err err = {0};
  if (fn(dir, (int64_t)a->max_bytes, &s, &err) < 0) {
    cli_fail(cmd, err.msg);
    return CLI_EXIT_ENV;
  }
  if (print(a, cmd, dir, &s) != 0) return CLI_EXIT_FAILED;
  return s.damaged ? CLI_EXIT_FAILED : CLI_EXIT_OK;
}

static int stats_run(void *args) { return walk(args, "cache stats", do_stats); }
static int verify_run(void *args) { return walk(args, "cache verify", do_verify); }
static int prune_run(void *args) { return walk(args, "cache prune", opcache_prune); }
