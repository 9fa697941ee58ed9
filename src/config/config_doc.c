/* config_doc.c — JSON documents, JSON paths and the typed getters of every loader.
 *
 * jansson reports line/column only for syntax errors. For a semantic error we find the
 * value again in the original text with a small scanner that walks the path: the text is
 * valid JSON (jansson accepted it, duplicate keys rejected), so the scanner only needs to
 * skip values and compare keys (escapes decoded). This runs on the error path only.
 * Columns count UTF-8 characters from 1, as jansson's do. */
#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "config_internal.h"

int config_doc_open(config_doc *doc, config_files *files, const char *path, const char *kind, enpu_err *err) {
  memset(doc, 0, sizeof *doc);
  doc->kind = kind;
  doc->files = files;
  if (snprintf(doc->file, sizeof doc->file, "%s", path) >= (int)sizeof doc->file)
    return enpu_errorf(err, ENPU_ERR_RANGE, "%s: path too long", path);
  ENPU_FORWARD(config_files_read(files, path, &doc->text, &doc->len, err));
  json_error_t jerr;
  doc->root = json_loadb(doc->text, doc->len, JSON_REJECT_DUPLICATES, &jerr);
  if (!doc->root) {
    /* an editor's UTF-8 byte-order mark: JSON has none, and jansson's message would show
     * its three bytes as an unreadable character */
    const bool bom = doc->len >= 3 && !memcmp(doc->text, "\xEF\xBB\xBF", 3);
    enpu_errorf(err, ENPU_ERR_PARSE, "%s:%d:%d: syntax error: %s", path, jerr.line, jerr.column,
                bom ? "the file opens with a UTF-8 byte-order mark (EF BB BF), which JSON does not allow: save it "
                      "without one"
                    : jerr.text);
    config_doc_close(doc);
    return ENPU_ERR_PARSE;
  }
  return ENPU_OK;
}

void config_doc_close(config_doc *doc) {
  json_decref(doc->root);
  free(doc->text);
  doc->root = NULL;
  doc->text = NULL;
}

char *config_doc_take_text(config_doc *doc) {
  char *t = doc->text;
  doc->text = NULL;
  return t;
}

/* ---------------------------------------------------------------------------------
 * Paths and positions */

static bool is_identifier(const char *s) {
  if (!((*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z') || *s == '_')) return false;
  for (; *s; s++)
    if (!((*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z') || (*s >= '0' && *s <= '9') || *s == '_'))
      return false;
  return true;
}

/* Appends at buf[used]; once truncated, `used` may pass cap and nothing more is written.
 * any_index: indices as `[]` (the form of config_ranges.c). */
static size_t path_append(const config_path *p, bool any_index, char *buf, size_t cap, size_t used) {
  if (p->parent) used = path_append(p->parent, any_index, buf, cap, used);
  char *at = buf + (used < cap ? used : cap);
  size_t room = used < cap ? cap - used : 0;
  if (!p->parent) used += (size_t)snprintf(at, room, "$");
  else if (!p->key && any_index) used += (size_t)snprintf(at, room, "[]");
  else if (!p->key) used += (size_t)snprintf(at, room, "[%zu]", p->index);
  else if (is_identifier(p->key)) used += (size_t)snprintf(at, room, ".%s", p->key);
  else used += (size_t)snprintf(at, room, "[\"%s\"]", p->key);
  return used;
}

/* Render a JSON path ("$.phases.prefill.batch[3]", or "...batch[]" with any_index),
 * truncated to cap. */
static void path_str(const config_path *p, bool any_index, char *buf, size_t cap) {
  if (cap == 0) return;
  buf[0] = '\0';
  path_append(p, any_index, buf, cap, 0);
}

typedef struct {
  const char *s;
  size_t n;
  size_t i;
} scanner;

static void scan_ws(scanner *sc) {
  while (sc->i < sc->n && strchr(" \t\r\n", sc->s[sc->i]) && sc->s[sc->i]) sc->i++;
}

static int hex4(const char *s) {
  int v = 0;
  for (int k = 0; k < 4; k++) {
    char c = s[k];
    v <<= 4;
    if (c >= '0' && c <= '9') v |= c - '0';
    else if (c >= 'a' && c <= 'f') v |= c - 'a' + 10;
    else if (c >= 'A' && c <= 'F') v |= c - 'A' + 10;
    else return -1;
  }
  return v;
}

/* Decode one character of a string body at sc->i into UTF-8 bytes; advance past it. */
static int scan_char(scanner *sc, unsigned char out[4]) {
  char c = sc->s[sc->i];
  if (c != '\\') {
    out[0] = (unsigned char)c;
    sc->i++;
    return 1;
  }
  char e = sc->i + 1 < sc->n ? sc->s[sc->i + 1] : '\0';
  sc->i += 2;
  switch (e) {
  case 'b': out[0] = '\b'; return 1;
  case 'f': out[0] = '\f'; return 1;
  case 'n': out[0] = '\n'; return 1;
  case 'r': out[0] = '\r'; return 1;
  case 't': out[0] = '\t'; return 1;
  case 'u': break;
  default: out[0] = (unsigned char)e; return 1; /* \" \\ \/ */
  }
  if (sc->i + 4 > sc->n) return 0;
  long cp = hex4(sc->s + sc->i);
  sc->i += 4;
  if (cp >= 0xD800 && cp < 0xDC00 && sc->i + 6 <= sc->n && sc->s[sc->i] == '\\' && sc->s[sc->i + 1] == 'u') {
    long lo = hex4(sc->s + sc->i + 2);
    if (lo >= 0xDC00 && lo < 0xE000) {
      cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
      sc->i += 6;
    }
  }
  if (cp < 0) return 0;
  if (cp < 0x80) {
    out[0] = (unsigned char)cp;
    return 1;
  }
  if (cp < 0x800) {
    out[0] = (unsigned char)(0xC0 | (cp >> 6));
    out[1] = (unsigned char)(0x80 | (cp & 0x3F));
    return 2;
  }
  if (cp < 0x10000) {
    out[0] = (unsigned char)(0xE0 | (cp >> 12));
    out[1] = (unsigned char)(0x80 | ((cp >> 6) & 0x3F));
    out[2] = (unsigned char)(0x80 | (cp & 0x3F));
    return 3;
  }
  out[0] = (unsigned char)(0xF0 | (cp >> 18));
  out[1] = (unsigned char)(0x80 | ((cp >> 12) & 0x3F));
  out[2] = (unsigned char)(0x80 | ((cp >> 6) & 0x3F));
  out[3] = (unsigned char)(0x80 | (cp & 0x3F));
  return 4;
}

/* At an opening quote: consume the string; report whether its decoded text is `key`. */
static bool scan_string_equals(scanner *sc, const char *key) {
  size_t klen = key ? strlen(key) : 0, k = 0;
  bool equal = key != NULL;
  sc->i++;
  while (sc->i < sc->n && sc->s[sc->i] != '"') {
    unsigned char ch[4];
    int got = scan_char(sc, ch);
    for (int j = 0; j < got; j++, k++)
      if (k >= klen || (unsigned char)key[k] != ch[j]) equal = false;
  }
  sc->i++; /* closing quote */
  return equal && k == klen;
}

static void scan_skip_value(scanner *sc) {
  int depth = 0;
  do {
    if (sc->i >= sc->n) return;
    char c = sc->s[sc->i];
    if (c == '"') {
      scan_string_equals(sc, NULL);
    } else if (c == '{' || c == '[') {
      depth++;
      sc->i++;
    } else if (c == '}' || c == ']') {
      depth--;
      sc->i++;
    } else if (depth > 0) {
      sc->i++; /* ',', ':', whitespace or scalar characters inside a container */
    } else {
      while (sc->i < sc->n && !strchr(",}] \t\r\n", sc->s[sc->i])) sc->i++;
    }
  } while (depth > 0);
}

/* Offset of the value at p (key_only: of its key, for unknown-key errors).
 * @return false when the path is not in the text (only on an internal mismatch). */
static bool scan_find(scanner *sc, const config_path *p, bool key_only) {
  if (!p->parent) {
    sc->i = 0;
    scan_ws(sc);
    return true;
  }
  if (!scan_find(sc, p->parent, false)) return false;
  char open = p->key ? '{' : '[', close = p->key ? '}' : ']';
  if (sc->i >= sc->n || sc->s[sc->i] != open) return false;
  sc->i++;
  for (size_t idx = 0;; idx++) {
    scan_ws(sc);
    if (sc->i >= sc->n || sc->s[sc->i] == close) return false;
    bool match = p->key ? false : idx == p->index;
    if (p->key) {
      size_t key_at = sc->i;
      match = scan_string_equals(sc, p->key);
      scan_ws(sc);
      sc->i++; /* ':' */
      scan_ws(sc);
      if (match && key_only) sc->i = key_at;
    }
    if (match) return true;
    scan_skip_value(sc);
    scan_ws(sc);
    if (sc->i < sc->n && sc->s[sc->i] == ',') sc->i++;
  }
}

static void line_column(const char *text, size_t off, int *line, int *column) {
  int l = 1, c = 0;
  for (size_t i = 0; i <= off && text[i]; i++) {
    if (text[i] == '\n') {
      if (i == off) break;
      l++;
      c = 0;
    } else if (((unsigned char)text[i] & 0xC0) != 0x80) {
      c++;
    }
  }
  *line = l;
  *column = c;
}

/* Missing members are reported at the object that lacks them. */
static void where_impl(const config_doc *doc, const config_path *p, bool key_only, char *buf, size_t cap) {
  scanner sc = {doc->text, doc->len, 0};
  int line = 0, column = 0;
  if (doc->text && scan_find(&sc, p, key_only)) line_column(doc->text, sc.i, &line, &column);
  char path[512];
  path_str(p, false, path, sizeof path);
  snprintf(buf, cap, "%s:%d:%d: %s", doc->file, line, column, path);
}

void config_where(const config_doc *doc, const config_path *p, char *buf, size_t cap) {
  where_impl(doc, p, false, buf, cap);
}

static int fail_v(const config_doc *doc, const config_path *p, bool key_only, enpu_err *err, int code,
                  const char *fmt, va_list ap) {
  if (!err) return code;
  char where[768], what[ENPU_ERR_MSG_LEN];
  where_impl(doc, p, key_only, where, sizeof where);
  vsnprintf(what, sizeof what, fmt, ap);
  return enpu_errorf(err, code, "%s: %s", where, what);
}

int config_fail(const config_doc *doc, const config_path *p, enpu_err *err, int code, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  fail_v(doc, p, false, err, code, fmt, ap);
  va_end(ap);
  return code;
}

/* An unknown key: at the key itself, where the typo is. */
static int fail_key(const config_doc *doc, const config_path *p, enpu_err *err, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static int fail_key(const config_doc *doc, const config_path *p, enpu_err *err, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  fail_v(doc, p, true, err, ENPU_ERR_INVALID, fmt, ap);
  va_end(ap);
  return ENPU_ERR_INVALID;
}

/* A missing member: at the object, naming the key and what it should hold. */
static int fail_missing(const config_doc *doc, const config_path *p, enpu_err *err, const char *expected) {
  return config_fail(doc, p->parent, err, ENPU_ERR_INVALID, "missing required key '%s' (expected %s)", p->key,
                     expected);
}

void config_describe(const json_t *v, char *buf, size_t cap) {
  if (json_is_object(v)) {
    snprintf(buf, cap, "an object");
  } else if (json_is_array(v)) {
    snprintf(buf, cap, "an array");
  } else if (json_is_real(v)) {
    snprintf(buf, cap, "%.15g", json_real_value(v)); /* 0.05, not 0.050000000000000003 */
  } else {
    char tmp[80];
    size_t n = json_dumpb(v, tmp, sizeof tmp, JSON_ENCODE_ANY | JSON_COMPACT);
    if (n > sizeof tmp) snprintf(buf, cap, "%.60s...", tmp);
    else snprintf(buf, cap, "%.*s", (int)n, tmp);
  }
}

static int fail_expected(const config_doc *doc, const config_path *p, const json_t *v, enpu_err *err, int code,
                         const char *expected) {
  char got[96];
  config_describe(v, got, sizeof got);
  return config_fail(doc, p, err, code, "expected %s, got %s", expected, got);
}

/* ---------------------------------------------------------------------------------
 * Typed getters */

int config_object(const config_doc *doc, const config_path *p, const json_t *v, const char *const *keys,
                  size_t nkeys, enpu_err *err) {
  if (!v) return fail_missing(doc, p, err, "an object");
  if (!json_is_object(v)) return fail_expected(doc, p, v, err, ENPU_ERR_INVALID, "an object");
  const char *key;
  json_t *member;
  json_object_foreach((json_t *)v, key, member) {
    size_t k = 0;
    while (k < nkeys && strcmp(keys[k], key) != 0) k++;
    if (k < nkeys) continue;
    char list[512];
    size_t used = 0;
    list[0] = '\0';
    for (size_t j = 0; j < nkeys && used < sizeof list; j++)
      used += (size_t)snprintf(list + used, sizeof list - used, "%s%s", j ? ", " : "", keys[j]);
    config_path kp = CONFIG_KEY(p, key);
    return fail_key(doc, &kp, err, "unknown key '%s'; expected one of: %s", key, list);
  }
  return ENPU_OK;
}

int config_range_of(const config_doc *doc, const config_path *p, const config_range **out, enpu_err *err) {
  char path[512];
  path_str(p, true, path, sizeof path);
  *out = config_range_find(doc->kind ? doc->kind : "", path);
  if (*out) return ENPU_OK;
  return config_fail(doc, p, err, ENPU_ERR_INTERNAL,
                     "no documented range for %s %s: add a row to src/config/config_ranges.c and the bounds to "
                     "the schema",
                     doc->kind ? doc->kind : "(unknown document)", path);
}

/* "an integer in [1, 4096]" / "a number in (0, 1e+06]". */
static void range_text(const config_range *r, bool integer, char *buf, size_t cap) {
  snprintf(buf, cap, "%s in %c%.15g, %.15g]", integer ? "an integer" : "a number", r->min_open ? '(' : '[', r->min,
           r->max);
}

static int fail_range(const config_doc *doc, const config_path *p, const json_t *v, const config_range *r,
                      bool integer, int code, enpu_err *err) {
  char expected[160], got[96];
  range_text(r, integer, expected, sizeof expected);
  config_describe(v, got, sizeof got);
  return config_fail(doc, p, err, code, "expected %s (%s), got %s", expected, r->why, got);
}

static bool in_range(const config_range *r, double x) {
  return (r->min_open ? x > r->min : x >= r->min) && x <= r->max;
}

/* The range of the value at p, present and of the right type (an integer, or any number). */
static int ranged(const config_doc *doc, const config_path *p, const json_t *v, bool integer,
                  const config_range **r, enpu_err *err) {
  ENPU_FORWARD(config_range_of(doc, p, r, err));
  char expected[160];
  range_text(*r, integer, expected, sizeof expected);
  if (!v) return fail_missing(doc, p, err, expected);
  if (integer ? !json_is_integer(v) : !json_is_number(v))
    return fail_range(doc, p, v, *r, integer, ENPU_ERR_INVALID, err);
  return ENPU_OK;
}

int config_int(const config_doc *doc, const config_path *p, const json_t *v, int *out, enpu_err *err) {
  const config_range *r = NULL;
  ENPU_FORWARD(ranged(doc, p, v, true, &r, err));
  json_int_t x = json_integer_value(v);
  /* The table's bounds are within int (checked by the unit test); compare as integers so
   * a huge value is not rounded into the range. */
  if (x < (json_int_t)r->min || x > (json_int_t)r->max || (r->min_open && x == (json_int_t)r->min))
    return fail_range(doc, p, v, r, true, ENPU_ERR_RANGE, err);
  *out = (int)x;
  return ENPU_OK;
}

int config_number(const config_doc *doc, const config_path *p, const json_t *v, double *out, enpu_err *err) {
  const config_range *r = NULL;
  ENPU_FORWARD(ranged(doc, p, v, false, &r, err));
  double x = json_number_value(v);
  if (!in_range(r, x)) return fail_range(doc, p, v, r, false, ENPU_ERR_RANGE, err);
  *out = x;
  return ENPU_OK;
}

int config_string(const config_doc *doc, const config_path *p, const json_t *v, char *buf, size_t cap,
                  enpu_err *err) {
  char expected[64];
  snprintf(expected, sizeof expected, "a non-empty string of at most %zu bytes", cap - 1);
  if (!v) return fail_missing(doc, p, err, expected);
  if (!json_is_string(v)) return fail_expected(doc, p, v, err, ENPU_ERR_INVALID, expected);
  size_t n = json_string_length(v);
  if (n == 0 || n >= cap || strlen(json_string_value(v)) != n)
    return fail_expected(doc, p, v, err, ENPU_ERR_RANGE, expected);
  memcpy(buf, json_string_value(v), n + 1);
  return ENPU_OK;
}

int config_enum(const config_doc *doc, const config_path *p, const json_t *v, const char *const *names, int count,
                int *out, enpu_err *err) {
  char expected[256];
  size_t used = (size_t)snprintf(expected, sizeof expected, "one of: ");
  for (int j = 0; j < count && used < sizeof expected; j++)
    used += (size_t)snprintf(expected + used, sizeof expected - used, "%s%s", j ? ", " : "", names[j]);
  if (!v) return fail_missing(doc, p, err, expected);
  if (json_is_string(v))
    for (int j = 0; j < count; j++)
      if (strcmp(json_string_value(v), names[j]) == 0) {
        *out = j;
        return ENPU_OK;
      }
  return fail_expected(doc, p, v, err, ENPU_ERR_INVALID, expected);
}

int config_array(const config_doc *doc, const config_path *p, const json_t *v, size_t *count, enpu_err *err) {
  if (!v) return fail_missing(doc, p, err, "a non-empty array");
  if (!json_is_array(v) || json_array_size(v) == 0)
    return fail_expected(doc, p, v, err, json_is_array(v) ? ENPU_ERR_RANGE : ENPU_ERR_INVALID, "a non-empty array");
  *count = json_array_size(v);
  return ENPU_OK;
}

int config_array_max(const config_doc *doc, const config_path *p, const json_t *v, int max, const char *what,
                     size_t *count, enpu_err *err) {
  ENPU_FORWARD(config_array(doc, p, v, count, err));
  if (*count > (size_t)max)
    return config_fail(doc, p, err, ENPU_ERR_RANGE, "expected at most %d %s, got %zu", max, what, *count);
  return ENPU_OK;
}

int config_get_int(const config_doc *doc, const config_path *obj_path, const json_t *obj, const char *key, int *out,
                   enpu_err *err) {
  config_path p = CONFIG_KEY(obj_path, key);
  return config_int(doc, &p, json_object_get(obj, key), out, err);
}

int config_get_number(const config_doc *doc, const config_path *obj_path, const json_t *obj, const char *key,
                      double *out, enpu_err *err) {
  config_path p = CONFIG_KEY(obj_path, key);
  return config_number(doc, &p, json_object_get(obj, key), out, err);
}

int config_bool(const config_doc *doc, const config_path *p, const json_t *v, bool *out, enpu_err *err) {
  if (!v) return fail_missing(doc, p, err, "true or false");
  if (!json_is_boolean(v)) return fail_expected(doc, p, v, err, ENPU_ERR_INVALID, "true or false");
  *out = json_is_true(v);
  return ENPU_OK;
}

int config_get_string(const config_doc *doc, const config_path *obj_path, const json_t *obj, const char *key,
                      char *buf, size_t cap, enpu_err *err) {
  config_path p = CONFIG_KEY(obj_path, key);
  return config_string(doc, &p, json_object_get(obj, key), buf, cap, err);
}

int config_opt_int(const config_doc *doc, const config_path *obj_path, const json_t *obj, const char *key, int *out,
                   enpu_err *err) {
  return json_object_get(obj, key) ? config_get_int(doc, obj_path, obj, key, out, err) : ENPU_OK;
}

int config_opt_number(const config_doc *doc, const config_path *obj_path, const json_t *obj, const char *key,
                      double *out, enpu_err *err) {
  return json_object_get(obj, key) ? config_get_number(doc, obj_path, obj, key, out, err) : ENPU_OK;
}

int config_opt_string(const config_doc *doc, const config_path *obj_path, const json_t *obj, const char *key,
                      char *buf, size_t cap, enpu_err *err) {
  return json_object_get(obj, key) ? config_get_string(doc, obj_path, obj, key, buf, cap, err) : ENPU_OK;
}

int config_opt_enum(const config_doc *doc, const config_path *obj_path, const json_t *obj, const char *key,
                    const char *const *names, int count, int *out, enpu_err *err) {
  const json_t *v = json_object_get(obj, key);
  if (!v) return ENPU_OK;
  config_path p = CONFIG_KEY(obj_path, key);
  return config_enum(doc, &p, v, names, count, out, err);
}

int config_get_fields(const config_doc *doc, const config_path *obj_path, const json_t *obj,
                      const config_field *fields, size_t nfields, void *base, enpu_err *err) {
  for (size_t i = 0; i < nfields; i++) {
    const config_field *f = &fields[i];
    char *at = (char *)base + f->offset;
    config_path p = CONFIG_KEY(obj_path, f->key);
    const json_t *v = json_object_get(obj, f->key);
    if (f->type == CONFIG_FIELD_STRING) {
      ENPU_FORWARD(config_string(doc, &p, v, at, f->size, err));
    } else if (f->type == CONFIG_FIELD_INT && f->size == sizeof(int)) {
      ENPU_FORWARD(config_int(doc, &p, v, (int *)(void *)at, err));
    } else if (f->type == CONFIG_FIELD_NUMBER && f->size == sizeof(double)) {
      ENPU_FORWARD(config_number(doc, &p, v, (double *)(void *)at, err));
    } else {
      return config_fail(doc, &p, err, ENPU_ERR_INTERNAL, "field table: member of %zu bytes", f->size);
    }
  }
  return ENPU_OK;
}

int config_fields_object(const config_doc *doc, const config_path *p, const json_t *v, const config_field *fields,
                         size_t nfields, enpu_err *err) {
  const char *keys[16];
  if (nfields > sizeof keys / sizeof *keys)
    return config_fail(doc, p, err, ENPU_ERR_INTERNAL, "field table of %zu keys", nfields);
  for (size_t i = 0; i < nfields; i++) keys[i] = fields[i].key;
  return config_object(doc, p, v, keys, nfields, err);
}

int config_fields(const config_doc *doc, const config_path *p, const json_t *v, const config_field *fields,
                  size_t nfields, void *base, enpu_err *err) {
  ENPU_FORWARD(config_fields_object(doc, p, v, fields, nfields, err));
  return config_get_fields(doc, p, v, fields, nfields, base, err);
}

int config_load_file(const char *path, const char *kind, size_t size,
                     int (*parse)(const config_doc *doc, void *out, enpu_err *err), void (*clear)(void *obj),
                     void **out, enpu_err *err) {
  *out = NULL;
  void *obj = enpu_calloc(1, size);
  if (!obj) return enpu_errorf(err, ENPU_ERR_NOMEM, "%s: out of memory", path);
  config_doc doc;
  int rc = config_doc_open(&doc, NULL, path, kind, err);
  if (rc == ENPU_OK) rc = parse(&doc, obj, err);
  config_doc_close(&doc);
  if (rc < 0) {
    if (clear) clear(obj);
    free(obj);
    return rc;
  }
  *out = obj;
  return ENPU_OK;
}
