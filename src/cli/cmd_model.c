/* cmd_model.c — `enpu model import CONFIG.json [-o MODEL.json] [--force]`: a Hugging Face
 * config.json as a model file (config_model_import_hf does the reading and checking; this
 * file parses the options, writes the file and prints the importer's notes on stderr). */
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "cli_internal.h"

typedef struct {
  const char *config, *out, *name, *ignore;
  int dtype_bytes, json, force;
} import_args;

static int import_run(void *args);

static const cli_opt import_opts[] = {
    {.name = "output",
     .alias = 'o',
     .type = CLI_STRING,
     .at = offsetof(import_args, out),
     .meta = "MODEL.json",
     .help = "write the model file here (default: stdout)"},
    {.name = "name",
     .type = CLI_STRING,
     .at = offsetof(import_args, name),
     .meta = "NAME",
     .help = "the model's name (default: the config file's stem, or its folder's\nfor config.json); a job's "
             "cluster file names the same"},
    {.name = "dtype-bytes",
     .type = CLI_INT,
     .at = offsetof(import_args, dtype_bytes),
     .meta = "N",
     .range = CLI_RANGE(1, 4),
     .help = "bytes per weight and activation (default: from torch_dtype)"},
    {.name = "ignore",
     .type = CLI_STRING,
     .at = offsetof(import_args, ignore),
     .meta = "KEY[,KEY...]",
     .help = "config keys to drop although the importer does not know them\n(or, for sliding_window, cannot "
             "express them)"},
    {.name = "force",
     .type = CLI_FLAG,
     .at = offsetof(import_args, force),
     .help = "write -o even when it is CONFIG.json itself (which it replaces)"},
    CLI_JSON_OPT(import_args, "{\"output\", \"model\", \"notes\"} (the model file still goes to -o)"),
};

/* clang-format off */
static const cli_spec import_spec = {.command = "model import", .run = import_run,
                                     .pos = {"CONFIG.json", "Hugging Face config", 1, 1, offsetof(import_args, config)},
                                     CLI_OPTS(import_opts, import_args)};
/* clang-format on */
const cli_spec *const cli_model_specs[] = {&import_spec, NULL};

/* What the model weighs: parameters (total and per token), weight bytes, KV bytes per
 * token (and the sliding window that caps it, if any) and the context limit (0: not
 * stated). */
static json_t *model_summary(const config_model *m) {
  json_t *window = m->window_layers > 0
                       ? json_pack("{s:i, s:i}", "size", m->window_size, "layers", m->window_layers)
                       : json_null();
  return json_pack("{s:f, s:f, s:f, s:f, s:o, s:i}", "params_total", m->params_total, "params_active",
                   m->params_active, "weight_bytes", m->params_total * m->dtype_bytes, "kv_bytes_per_token",
                   m->kv_bytes_per_token, "sliding_window", window, "context_limit", m->context_limit);
}

static void print_summary(FILE *f, const config_model *m) {
  char limit[32] = "not stated";
  if (m->context_limit > 0) snprintf(limit, sizeof limit, "%d tokens", m->context_limit);
  fprintf(f,
          "model %s: %.3f B parameters, %.3f B active per token, weights %.3f GB, KV cache %.0f bytes per token, "
          "context limit %s\n",
          m->name, m->params_total / 1e9, m->params_active / 1e9, m->params_total * m->dtype_bytes / 1e9,
          m->kv_bytes_per_token, limit);
  if (m->window_layers > 0)
    fprintf(f, "  %d of its %d layers keep only the last %d tokens' KV (sliding window): %.0f bytes at %d tokens\n",
            m->window_layers, m->layers, m->window_size, config_model_kv_bytes(m, 4.0 * m->window_size),
            4 * m->window_size);
}

/* The notes on stderr, or with --json one document on stdout. @return the exit status. */
static int report(const import_args *a, const char *model, char *notes, const config_model *m) {
  json_t *list = json_array();
  for (char *save = NULL, *l = notes ? strtok_r(notes, "\n", &save) : NULL; l; l = strtok_r(NULL, "\n", &save)) {
    if (!a->json) fprintf(stderr, "enpu model import: note: %s\n", l);
    else json_array_append_new(list, json_string(l));
  }
  if (!a->json) {
    /* the model's text is on stdout when there is no -o: the summary goes beside the notes */
    print_summary(a->out ? stdout : stderr, m);
    return json_decref(list), CLI_EXIT_OK;
  }
  json_t *doc = json_pack("{s:s?, s:o?, s:o, s:o?}", "output", a->out, "model", json_loads(model, 0, NULL), "notes",
                          list, "summary", model_summary(m));
  const int rc = doc ? cli_print_json(doc) : cli_fail("model import", "out of memory (JSON output)");
  json_decref(doc);
  return rc;
}

/* Is -o the config itself, however spelled (device and inode)? */
static int output_is_input(const import_args *a) {
  struct stat in, out;
  return a->out && stat(a->config, &in) == 0 && stat(a->out, &out) == 0 && in.st_dev == out.st_dev &&
         in.st_ino == out.st_ino;
}

static int import_run(void *args) {
  const import_args *a = args;
  if (!a->force && output_is_input(a)) {
    char msg[2 * CONFIG_PATH_LEN];
    snprintf(msg, sizeof msg, "-o %s is %s itself: refusing to replace the config it reads (--force to do so)",
             a->out, a->config);
    return cli_fail("model import", msg), CLI_EXIT_USAGE;
  }
  char keys[1024] = "";
  const char *ignore[64];
  const int nignore = a->ignore ? cli_split_keys(a->ignore, keys, sizeof keys, ignore, 64) : 0;
  config_model *m = calloc(1, sizeof *m);
  if (!m) return cli_fail("model import", "out of memory (model)"), CLI_EXIT_FAILED;
  const config_hf_options o = {
      .name = a->name, .dtype_bytes = a->dtype_bytes, .ignore = ignore, .nignore = nignore, .model_out = m};
  enpu_err err = {0};
  char *json = NULL, *notes = NULL;
  if (config_model_import_hf(a->config, &o, &json, &notes, &err) < 0) {
    free(m);
    cli_fail("model import", err.msg);
    return cli_exit_status(err.code, CLI_EXIT_USAGE);
  }
  const size_t n = strlen(json);
  char *text = realloc(json, n + 2); /* a trailing newline */
  if (text) memcpy(text + n, "\n", 2), json = text;
  int rc = a->out || !a->json ? cli_write_text(a->out, json, &err) : 0;
  if (rc == 0) rc = report(a, json, notes, m);
  free(m);
  free(json);
  free(notes);
  if (rc < 0) cli_fail("model import", err.msg);
  return rc < 0 ? cli_exit_status(rc, CLI_EXIT_FAILED) : rc;
}
