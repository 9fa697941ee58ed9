/* config_internal.h — private to src/config: a loaded JSON document, JSON paths, and the
 * typed, self-reporting getters every loader uses.
 *
 * Invariants: a config_doc owns its text and its jansson tree; the text is the exact file
 * content, so an error position can be recovered from it. Positions are computed only on
 * the error path (config_locate scans the text again), never while loading valid input.
 * A config_path is a chain of stack frames from a value up to the root "$"; it is never
 * stored beyond the call that built it. */
#ifndef ENPU_CONFIG_INTERNAL_H
#define ENPU_CONFIG_INTERNAL_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

#include "config.h"

typedef struct {
  char file[CONFIG_PATH_LEN]; /* as opened; every message starts with it */
  const char *kind;           /* "job", "model", "chip", "cluster": its numbers' ranges */
  char *text;                 /* the whole document, NUL-terminated */
  size_t len;
  json_t *root;
  config_files *files; /* what it and the files it names are read through (NULL: disk) */
} config_doc;

/* One step of a JSON path: an object member (key != NULL) or an array element. */
typedef struct config_path {
  const struct config_path *parent; /* NULL for the root "$" */
  const char *key;
  size_t index;
} config_path;

#define CONFIG_ROOT ((config_path){NULL, NULL, 0})
#define CONFIG_KEY(parent_, key_) ((config_path){(parent_), (key_), 0})
#define CONFIG_INDEX(parent_, i_) ((config_path){(parent_), NULL, (i_)})

/* Read and parse `path`, a document of `kind` (duplicate keys are syntax errors, so
 * every path names one value). @return 0, ENPU_ERR_IO (cannot read) or ENPU_ERR_PARSE
 * (file:line:column of jansson's syntax error); on failure the doc holds nothing. */
int config_doc_open(config_doc *doc, config_files *files, const char *path, const char *kind, enpu_err *err);
void config_doc_close(config_doc *doc);
/* Hand the text over to the caller (provenance); the doc no longer frees it. */
char *config_doc_take_text(config_doc *doc);

/* "file:line:column: $.a.b[3]" for the value at p. */
void config_where(const config_doc *doc, const config_path *p, char *buf, size_t cap);
/* Fill err with "file:line:column: $.path: " + message. @return code. */
int config_fail(const config_doc *doc, const config_path *p, enpu_err *err, int code, const char *fmt, ...)
    __attribute__((format(printf, 5, 6)));
/* A short rendering of a value for "got ..." ("-4", "\"abc\"", "an object"). */
void config_describe(const json_t *v, char *buf, size_t cap);

/* The documented range of a number (config_ranges.c): every number read from a file has
 * one, found by its document kind and JSON path (array indices written `[]`). */
typedef struct {
  const char *doc, *path; /* path may hold `*` for any one object key */
  double min, max;
  bool min_open;   /* min itself excluded */
  const char *why; /* what the number is and where the bound comes from */
} config_range;
/* @return the row, or NULL when the table has none. */
const config_range *config_range_find(const char *doc, const char *path);
/* The range of the value at p in doc; a value without one is ENPU_ERR_INTERNAL (a
 * loader reads a number nobody gave a range). */
int config_range_of(const config_doc *doc, const config_path *p, const config_range **out, enpu_err *err);

/* Typed getters. v == NULL means the member p->key is missing: reported at p->parent.
 * Each reports "expected <what>, got <value>" at p and returns a negative code. */
int config_object(const config_doc *doc, const config_path *p, const json_t *v, const char *const *keys,
                  size_t nkeys, enpu_err *err);
/* An integer within its documented range. */
int config_int(const config_doc *doc, const config_path *p, const json_t *v, int *out, enpu_err *err);
/* A number within its documented range. */
int config_number(const config_doc *doc, const config_path *p, const json_t *v, double *out, enpu_err *err);
/* Non-empty string of at most cap-1 bytes. */
int config_string(const config_doc *doc, const config_path *p, const json_t *v, char *buf, size_t cap,
                  enpu_err *err);
/* A string among names[0..count): *out is its index. */
int config_enum(const config_doc *doc, const config_path *p, const json_t *v, const char *const *names, int count,
                int *out, enpu_err *err);
/* true or false. */
int config_bool(const config_doc *doc, const config_path *p, const json_t *v, bool *out, enpu_err *err);
/* Non-empty array; *out borrows it. */
int config_array(const config_doc *doc, const config_path *p, const json_t *v, size_t *count, enpu_err *err);

/* config_array of at most max elements (`what` names them in the message). */
int config_array_max(const config_doc *doc, const config_path *p, const json_t *v, int max, const char *what,
                     size_t *count, enpu_err *err);

/* Member-level shorthands: look `key` up in obj (already checked to be an object). */
int config_get_int(const config_doc *doc, const config_path *obj_path, const json_t *obj, const char *key, int *out,
                   enpu_err *err);
int config_get_number(const config_doc *doc, const config_path *obj_path, const json_t *obj, const char *key,
                      double *out, enpu_err *err);
int config_get_string(const config_doc *doc, const config_path *obj_path, const json_t *obj, const char *key,
                      char *buf, size_t cap, enpu_err *err);

/* Optional members: absent, *out keeps its value (the default); present, as the getters. */
int config_opt_int(const config_doc *doc, const config_path *obj_path, const json_t *obj, const char *key, int *out,
                   enpu_err *err);
int config_opt_number(const config_doc *doc, const config_path *obj_path, const json_t *obj, const char *key,
                      double *out, enpu_err *err);
int config_opt_string(const config_doc *doc, const config_path *obj_path, const json_t *obj, const char *key,
                      char *buf, size_t cap, enpu_err *err);
int config_opt_enum(const config_doc *doc, const config_path *obj_path, const json_t *obj, const char *key,
                    const char *const *names, int count, int *out, enpu_err *err);

/* Table-driven members: one row per key, read into the struct at `base` by offset, each
 * with config_int / config_number / config_string (its range or buffer size applies). */
typedef enum { CONFIG_FIELD_INT, CONFIG_FIELD_NUMBER, CONFIG_FIELD_STRING } config_field_type;
typedef struct {
  const char *key;
  config_field_type type;
  size_t offset, size; /* of the member in its struct */
} config_field;
#define CONFIG_FIELD_OF(type_, T, key_, member) \
  { (key_), (type_), offsetof(T, member), sizeof(((T *)0)->member) }
#define CONFIG_INT_FIELD(T, key, member) CONFIG_FIELD_OF(CONFIG_FIELD_INT, T, key, member)
#define CONFIG_NUMBER_FIELD(T, key, member) CONFIG_FIELD_OF(CONFIG_FIELD_NUMBER, T, key, member)
#define CONFIG_STRING_FIELD(T, key, member) CONFIG_FIELD_OF(CONFIG_FIELD_STRING, T, key, member)

/* Read every field (all required) of obj, at obj_path and already checked to be an
 * object, in table order; the first error stops. */
int config_get_fields(const config_doc *doc, const config_path *obj_path, const json_t *obj,
                      const config_field *fields, size_t nfields, void *base, enpu_err *err);
/* config_object with the fields' keys as the allowed ones (at most 16). */
int config_fields_object(const config_doc *doc, const config_path *p, const json_t *v, const config_field *fields,
                         size_t nfields, enpu_err *err);
/* An object whose keys are exactly the fields', read into base. */
int config_fields(const config_doc *doc, const config_path *p, const json_t *v, const config_field *fields,
                  size_t nfields, void *base, enpu_err *err);

/* The vocabularies as the files spell them, indexed by the enums. */
extern const char *const config_phase_names[CONFIG_NPHASE];
extern const char *const config_policy_names[CONFIG_NPOLICY];
/* The names of the policies that take variants (or of those that do not), in code order,
 * `sep` between them, into out (for messages).
 * @return the length written, len when it was cut. */
size_t config_policy_names_join(char *out, size_t len, const char *sep, bool variants);
extern const char *const config_moe_experts_names[CONFIG_NEXPERTS];
extern const char *const config_capacity_names[CONFIG_NCAPACITY];
extern const char *const config_attn_impl_names[CONFIG_NATTN_IMPL];
extern const char *const config_ici_model_names[CONFIG_NICI_MODEL];
extern const char *const config_budget_names[CONFIG_NBUDGET];
extern const char *const config_idle_mode_names[CONFIG_NIDLE_MODE];
extern const char *const config_safeguard2_names[CONFIG_NSG2];
extern const char *const config_safeguards_names[CONFIG_NSAFEGUARDS];

/* The public *_load functions: allocate a zeroed struct of `size` bytes, parse `path` (a
 * document of `kind`) into it; on failure call clear (may be NULL) on it, free it, and
 * leave *out NULL. */
int config_load_file(const char *path, const char *kind, size_t size,
                     int (*parse)(const config_doc *doc, void *out, enpu_err *err), void (*clear)(void *obj),
                     void **out, enpu_err *err);
/* Defines the public loader `load_fn` of documents of `kind` into a T: config_load_file
 * with the typed parse function adapted to it (clear_fn: a void * one, or NULL). */
#define CONFIG_LOADER(load_fn, T, kind, parse_fn, clear_fn)                                                       \
  static int load_fn##_parse(const config_doc *doc, void *obj, enpu_err *err) { return parse_fn(doc, obj, err); } \
  int load_fn(const char *path, T **out, enpu_err *err) {                                                         \
    void *obj = NULL;                                                                                             \
    const int rc = config_load_file(path, kind, sizeof(T), load_fn##_parse, clear_fn, &obj, err);                 \
    *out = obj;                                                                                                   \
    return rc;                                                                                                    \
  }

/* Loaders of already-opened documents, shared by the public *_load and the job. They
 * fill a zeroed struct; on failure the caller frees it with the *_clear function. */
int config_model_parse(const config_doc *doc, config_model *m, enpu_err *err);
int config_chip_parse(const config_doc *doc, config_chip *c, enpu_err *err);
/* The job's "sweep" section (config_sweep.c): its variants, and its policies once more
 * per variant. After the policies and the chip are read. */
int config_sweep_parse(const config_doc *doc, const config_path *root, config_job *job, enpu_err *err);
void config_chip_clear(config_chip *c);
int config_cluster_parse(const config_doc *doc, config_cluster *c, enpu_err *err);
/* A {dp, tp, pp, ep} object (cluster nodes and job overrides), and the check that it
 * multiplies to a node's chip count (reported at p). */
int config_parallel_parse(const config_doc *doc, const config_path *p, const json_t *v, config_parallel *out,
                          enpu_err *err);
int config_parallel_check_chips(const config_doc *doc, const config_path *p, const config_parallel *par, int chips,
                                enpu_err *err);

#endif /* ENPU_CONFIG_INTERNAL_H */
