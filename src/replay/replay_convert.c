/* replay_convert.c — public request-trace formats converted to the replay's CSV
 * (`enpu trace convert`; the formats are listed in replay.h), and a trace written back as
 * that CSV (`enpu trace burst`: replay_trace_csv).
 *
 * Each format's row parser yields (time, context, generated) or an error naming
 * name:line:column; the row written is then read back by replay_trace_row, so the output
 * is a trace replay_trace_parse accepts. Times of the relative formats (BurstGPT seconds,
 * Mooncake milliseconds, a mapped CSV's numbers) are added to the start time and written
 * with 7 fractional digits, the Azure files' precision (100 ns). Each row written is
 * remembered (time, place in the output) so that rows out of time order can be counted
 * and written sorted, or refused under --strict.
 *
 * BurstGPT's two published layouts (HPMLL/BurstGPT README, "Schema"): release v1.1's
 * BurstGPT_1.csv and _2.csv have the header
 *   Timestamp,Model,Request tokens,Response tokens,Total tokens,Log Type
 * and release v2.0's BurstGPT_3.csv adds a conversation id and the response time:
 *   Timestamp,Session ID,Elapsed time,Model,Request tokens,Response tokens,Total tokens,Log Type
 * (its Timestamps are seconds with a fraction, "19440110.0"). The header says which. */
#include <errno.h>
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "replay.h"

#define CONVERT_HEADER "TIMESTAMP,ContextTokens,GeneratedTokens"
#define CONVERT_MAX_COLS 64

const char *const replay_format_names[REPLAY_NFORMAT + 1] = {"azure2023", "azure2024", "burstgpt",
                                                             "mooncake",  "csv",       NULL};

typedef struct {
  char *buf;
  size_t len, cap;
} out_text;

static int out_append(out_text *o, const char *s, size_t n, enpu_err *err) {
  if (enpu_grow((void **)&o->buf, &o->cap, o->len + n + 1, 1) < 0)
    return enpu_errorf(err, ENPU_ERR_NOMEM, "out of memory (converted trace of %zu bytes)", o->len);
  memcpy(o->buf + o->len, s, n);
  o->len += n;
  o->buf[o->len] = '\0';
  return ENPU_OK;
}

/* A CSV row split at commas, in place (a field may be double-quoted; no embedded quotes
 * or commas); col[i] is the field's offset in the row for column numbers in messages. */
typedef struct {
  char *f[CONVERT_MAX_COLS];
  size_t col[CONVERT_MAX_COLS];
  int n;
} fields;

static void split(char *row, fields *fs) {
  fs->n = 0;
  for (char *p = row; fs->n < CONVERT_MAX_COLS;) {
    char *end = strchr(p, ',');
    if (end) *end = '\0';
    size_t l = strlen(p);
    fs->col[fs->n] = (size_t)(p - row) + 1;
    while (l && (p[l - 1] == ' ' || p[l - 1] == '\r')) p[--l] = '\0';
    while (*p == ' ') p++, l--, fs->col[fs->n]++;
    if (l >= 2 && p[0] == '"' && p[l - 1] == '"') p[l - 1] = '\0', p++;
    fs->f[fs->n++] = p;
    if (!end) break;
    p = end + 1;
  }
}

/* How the columns of a CSV format map onto a row. */
typedef enum { UNIT_S, UNIT_MS, UNIT_US, UNIT_DATETIME } time_unit;
typedef struct {
  int time, context, generated; /* 0-based columns */
  time_unit unit;
  int ncols;
} column_map;

/* A row written: its time, where its text sits in the output, and its input line. */
typedef struct {
  int64_t whole_s;
  double frac_s;
  size_t off, len, line;
} written_row;

typedef struct {
  const char *name;
  size_t line;
  written_row *rows;
  size_t nrows, rows_cap;
  int64_t start_s;
  double start_frac_s;
  const replay_convert_options *o;
  column_map map;
  out_text out;
} conv;

static int row_error(const conv *c, size_t col, enpu_err *err, const char *what, const char *got) {
  return enpu_errorf(err, ENPU_ERR_PARSE, "%s:%zu:%zu: expected %s, got '%.40s'", c->name, c->line, col, what, got);
}

/* A whole non-negative number (the relative time) in field f. */
static int parse_time(const conv *c, const char *f, size_t col, double *out, enpu_err *err) {
  char *end = NULL;
  errno = 0;
  const double v = strtod(f, &end);
  if (errno || end == f || *end || !isfinite(v) || v < 0)
    return row_error(c, col, err, "a time (a non-negative number)", f);
  *out = v;
  return ENPU_OK;
}

static int parse_tokens(const conv *c, const char *f, size_t col, long *out, enpu_err *err) {
  char *end = NULL;
  errno = 0;
  const long v = strtol(f, &end, 10);
  if (errno || end == f || *end || v < 1 || v > REPLAY_TOKENS_MAX) {
    char what[64];
    snprintf(what, sizeof what, "a token count from 1 to %d", REPLAY_TOKENS_MAX);
    return row_error(c, col, err, what, f);
  }
  *out = v;
  return ENPU_OK;
}

/* "YYYY-MM-DD HH:MM:SS.fffffff" of start + rel_s. */
static void format_time(int64_t start_s, double rel_s, char *buf, int cap) {
  const double whole = floor(rel_s);
  int64_t t = start_s + (int64_t)whole;
  long frac = lround((rel_s - whole) * 1e7);
  if (frac >= 10000000) t++, frac -= 10000000;
  const int64_t days = t >= 0 ? t / 86400 : (t - 86399) / 86400, sod = t - days * 86400;
  /* civil_from_days (H. Hinnant), the inverse of the reader's days_from_civil */
  const int64_t z = days + 719468, era = (z >= 0 ? z : z - 146096) / 146097;
  const int64_t doe = z - era * 146097, yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
  const int64_t doy = doe - (365 * yoe + yoe / 4 - yoe / 100), mp = (5 * doy + 2) / 153;
  const int64_t d = doy - (153 * mp + 2) / 5 + 1, m = mp < 10 ? mp + 3 : mp - 9, y = yoe + era * 400 + (m <= 2);
  snprintf(buf, (size_t)cap, "%04lld-%02lld-%02lld %02lld:%02lld:%02lld.%07ld", (long long)y, (long long)m,
           (long long)d, (long long)(sod / 3600), (long long)(sod / 60 % 60), (long long)(sod % 60), frac);
}

/* Check row[0, n) as the replay reads it, append it and a newline, and remember it. */
static int write_row(conv *c, const char *row, size_t n, enpu_err *err) {
  int64_t whole = 0;
  double frac = 0;
  replay_request rq;
  ENPU_FORWARD(replay_trace_row(row, n, c->name, c->line, &whole, &frac, &rq, err));
  if (enpu_grow((void **)&c->rows, &c->rows_cap, c->nrows + 1, sizeof *c->rows) < 0)
    return enpu_errorf(err, ENPU_ERR_NOMEM, "out of memory (row %zu)", c->line);
  c->rows[c->nrows] = (written_row){.whole_s = whole, .frac_s = frac, .off = c->out.len, .len = n, .line = c->line};
  ENPU_FORWARD(out_append(&c->out, row, n, err));
  ENPU_FORWARD(out_append(&c->out, "\n", 1, err));
  c->nrows++;
  return ENPU_OK;
}

/* Write one row (its timestamp text as given). */
static int emit_row(conv *c, const char *stamp, long context, long generated, enpu_err *err) {
  char row[160];
  const int n = snprintf(row, sizeof row, "%s,%ld,%ld", stamp, context, generated);
  ENPU_RETURN_IF(n < 0 || n >= (int)sizeof row, err, ENPU_ERR_PARSE, "%s:%zu:1: expected a shorter timestamp",
                 c->name, c->line);
  return write_row(c, row, (size_t)n, err);
}

/* Relative times beyond 130 years would overflow the seconds before the reader's year
 * range could reject them. */
#define CONVERT_MAX_REL_S 4.1e9

static int emit_relative(conv *c, double rel_s, long context, long generated, enpu_err *err) {
  ENPU_RETURN_IF(!(rel_s >= 0 && rel_s < CONVERT_MAX_REL_S), err, ENPU_ERR_RANGE,
                 "%s:%zu:1: expected a time within 130 years of the start, got %g s", c->name, c->line, rel_s);
  char stamp[96];
  format_time(c->start_s, c->start_frac_s + rel_s, stamp, sizeof stamp);
  return emit_row(c, stamp, context, generated, err);
}

/* A row of a CSV format by the column map. */
static int csv_row(conv *c, char *row, enpu_err *err) {
  fields fs;
  split(row, &fs);
  if (fs.n != c->map.ncols) {
    char got[32];
    snprintf(got, sizeof got, "%d", fs.n);
    char what[48];
    snprintf(what, sizeof what, "%d columns (as the header)", c->map.ncols);
    return row_error(c, 1, err, what, got);
  }
  long context, generated;
  ENPU_FORWARD(parse_tokens(c, fs.f[c->map.context], fs.col[c->map.context], &context, err));
  ENPU_FORWARD(parse_tokens(c, fs.f[c->map.generated], fs.col[c->map.generated], &generated, err));
  if (c->map.unit == UNIT_DATETIME) return emit_row(c, fs.f[c->map.time], context, generated, err);
  double t = 0;
  ENPU_FORWARD(parse_time(c, fs.f[c->map.time], fs.col[c->map.time], &t, err));
  static const double to_s[] = {[UNIT_S] = 1, [UNIT_MS] = 1e-3, [UNIT_US] = 1e-6};
  return emit_relative(c, t * to_s[c->map.unit], context, generated, err);
}

/* A Mooncake JSON line: {"timestamp": ms, "input_length", "output_length", "hash_ids"}. */
static int mooncake_row(conv *c, const char *row, size_t len, enpu_err *err) {
  json_error_t je;
  json_t *o = json_loadb(row, len, 0, &je);
  if (!o)
    return enpu_errorf(err, ENPU_ERR_PARSE, "%s:%zu:%d: expected a JSON object, %s", c->name, c->line, je.column,
                       je.text);
  static const char *const keys[] = {"timestamp", "input_length", "output_length"};
  double v[3];
  int rc = json_is_object(o) ? ENPU_OK : row_error(c, 1, err, "a JSON object", row);
  for (int i = 0; i < 3 && rc == ENPU_OK; i++) {
    const json_t *x = json_object_get(o, keys[i]);
    v[i] = json_number_value(x);
    if (!json_is_number(x) || !isfinite(v[i]) || v[i] < (i ? 1 : 0) || (i && v[i] > REPLAY_TOKENS_MAX) ||
        (i && v[i] != floor(v[i]))) {
      char what[96];
      snprintf(what, sizeof what, "\"%s\": %s", keys[i],
               i ? "a whole token count from 1 to 2097152" : "a non-negative time in ms");
      rc = row_error(c, 1, err, what, row);
    }
  }
  if (rc == ENPU_OK) rc = emit_relative(c, v[0] * 1e-3, (long)v[1], (long)v[2], err);
  json_decref(o);
  return rc;
}

/* One non-blank data line [p, p + len). */
static int convert_row(conv *c, const char *p, size_t len, enpu_err *err) {
  if (len && p[len - 1] == '\r') len--;
  switch (c->o->format) {
  case REPLAY_FORMAT_AZURE2023:
  case REPLAY_FORMAT_AZURE2024: return write_row(c, p, len, err);
  case REPLAY_FORMAT_MOONCAKE: return mooncake_row(c, p, len, err);
  default: {
    char row[1024];
    ENPU_RETURN_IF(len >= sizeof row, err, ENPU_ERR_PARSE, "%s:%zu:1: expected a row of at most %zu characters",
                   c->name, c->line, sizeof row - 1);
    memcpy(row, p, len);
    row[len] = '\0';
    return csv_row(c, row, err);
  }
  }
}

/* --map "time=COL,context=COL,generated=COL[,unit=U]" split (enpu_kv_split: a key given
 * twice is refused), every key one of those. */
typedef struct {
  char text[512];
  enpu_kv kv[4];
  int n;
} map_spec;

static int map_parse(const char *map, map_spec *m, enpu_err *err) {
  static const char *const keys[] = {"time", "context", "generated", "unit"};
  ENPU_RETURN_IF(strlen(map) >= sizeof m->text, err, ENPU_ERR_INVALID, "--map: expected at most %zu characters",
                 sizeof m->text - 1);
  memcpy(m->text, map, strlen(map) + 1);
  m->n = enpu_kv_split(m->text, m->kv, 4, err);
  if (m->n < 0) {
    enpu_err_prefix(err, "--map: ");
    return m->n;
  }
  for (int k = 0; k < m->n; k++) {
    int known = 0;
    for (int i = 0; i < 4; i++) known |= !strcmp(m->kv[k].key, keys[i]);
    ENPU_RETURN_IF(!known, err, ENPU_ERR_INVALID, "--map: expected time, context, generated or unit, got '%s'",
                   m->kv[k].key);
  }
  return ENPU_OK;
}

static const char *map_value(const map_spec *m, const char *key) {
  for (int k = 0; k < m->n; k++)
    if (!strcmp(m->kv[k].key, key)) return m->kv[k].value;
  return NULL;
}

/* The column of `key` in a --map: a header name or a 1-based index. */
static int map_column(const conv *c, const fields *header, const map_spec *m, const char *key, int *out,
                      enpu_err *err) {
  const char *want = map_value(m, key);
  ENPU_RETURN_IF(!want, err, ENPU_ERR_INVALID,
                 "--map: expected %s=COLUMN (a header name or a 1-based index), in '%s'", key, c->o->map);
  for (int i = 0; i < header->n; i++)
    if (!strcmp(header->f[i], want)) return *out = i, ENPU_OK;
  char *end = NULL;
  const long k = strtol(want, &end, 10);
  if (end != want && !*end && k >= 1 && k <= header->n) return *out = (int)k - 1, ENPU_OK;
  return enpu_errorf(err, ENPU_ERR_INVALID, "%s:1: --map %s=%s: no such column in the header (%d columns)", c->name,
                     key, want, header->n);
}

/* The header line of a CSV format into c->map. */
static int read_header(conv *c, char *line, enpu_err *err) {
  static const char burst6[] = "Timestamp,Model,Request tokens,Response tokens,Total tokens,Log Type";
  static const char burst8[] =
      "Timestamp,Session ID,Elapsed time,Model,Request tokens,Response tokens,Total tokens,Log Type";
  const replay_format f = c->o->format;
  size_t l = strlen(line);
  while (l && line[l - 1] == '\r') line[--l] = '\0';
  if (l >= 3 && !memcmp(line, "\xef\xbb\xbf", 3)) memmove(line, line + 3, (l -= 3) + 1); /* a UTF-8 BOM */
  if (f == REPLAY_FORMAT_BURSTGPT && !strcmp(line, burst8)) {
    c->map = (column_map){.time = 0, .context = 4, .generated = 5, .unit = UNIT_S, .ncols = 8};
    return ENPU_OK;
  }
  if (f == REPLAY_FORMAT_AZURE2023 || f == REPLAY_FORMAT_AZURE2024 || f == REPLAY_FORMAT_BURSTGPT) {
    const bool burst = f == REPLAY_FORMAT_BURSTGPT;
    ENPU_RETURN_IF(strcmp(line, burst ? burst6 : CONVERT_HEADER), err, ENPU_ERR_PARSE,
                   "%s:1:1: expected the header '%s'%s%s%s, got '%.100s'", c->name, burst ? burst6 : CONVERT_HEADER,
                   burst ? " or '" : "", burst ? burst8 : "", burst ? "'" : "", line);
    c->map = (column_map){.time = 0, .context = 2, .generated = 3, .unit = UNIT_S, .ncols = 6};
    return ENPU_OK;
  }
  ENPU_RETURN_IF(!c->o->map, err, ENPU_ERR_INVALID, "--from csv needs --map time=COL,context=COL,generated=COL");
  map_spec m;
  ENPU_FORWARD(map_parse(c->o->map, &m, err));
  fields header;
  split(line, &header);
  c->map.ncols = header.n;
  ENPU_FORWARD(map_column(c, &header, &m, "time", &c->map.time, err));
  ENPU_FORWARD(map_column(c, &header, &m, "context", &c->map.context, err));
  ENPU_FORWARD(map_column(c, &header, &m, "generated", &c->map.generated, err));
  const char *u = map_value(&m, "unit");
  static const char *const units[] = {"s", "ms", "us", "datetime"};
  c->map.unit = UNIT_S;
  if (!u) return ENPU_OK;
  for (int i = 0; i < 4; i++)
    if (!strcmp(u, units[i])) return c->map.unit = (time_unit)i, ENPU_OK;
  return enpu_errorf(err, ENPU_ERR_INVALID, "--map: expected unit=s, ms, us or datetime, got '%s'", u);
}

static int parse_start(conv *c, enpu_err *err) {
  const char *start = c->o->start ? c->o->start : "1970-01-01 00:00:00";
  char row[96];
  const int n = snprintf(row, sizeof row, "%s,1,1", start);
  replay_request rq;
  enpu_err e = {0};
  if (n < 0 || n >= (int)sizeof row ||
      replay_trace_row(row, (size_t)n, "--start", 1, &c->start_s, &c->start_frac_s, &rq, &e) < 0)
    return enpu_errorf(err, ENPU_ERR_INVALID, "--start: expected YYYY-MM-DD HH:MM:SS[.fraction], got '%s'", start);
  return ENPU_OK;
}

/* Every line after the header through convert_row; bad rows fail or are counted. */
static int convert_lines(conv *c, const char *p, const char *end, replay_convert_counts *counts, enpu_err *err) {
  for (const char *eol; p < end; p = eol + 1) {
    eol = memchr(p, '\n', (size_t)(end - p));
    if (!eol) eol = end;
    c->line++;
    ENPU_RETURN_IF(c->line % REPLAY_CONVERT_STOP_ROWS == 0 && enpu_stop_asked(&c->o->stop), err, ENPU_ERR_STOPPED,
                   "%s: conversion stopped at line %zu (a stop signal)", c->name, (size_t)c->line);
    if (eol == p || (eol == p + 1 && *p == '\r')) continue;
    enpu_err row_err = {0};
    const int rc = convert_row(c, p, (size_t)(eol - p), &row_err);
    if (rc == ENPU_OK) counts->rows++;
    else if (rc == ENPU_ERR_NOMEM || !c->o->skip_bad_rows) {
      if (err) *err = row_err;
      return rc;
    } else if (counts->skipped++ == 0)
      snprintf(counts->first_skipped, sizeof counts->first_skipped, "%s", row_err.msg);
  }
  return ENPU_OK;
}

static int written_cmp(const void *a, const void *b) {
  const written_row *x = a, *y = b;
  const int t = x->whole_s != y->whole_s ? ENPU_ORDER(x->whole_s, y->whole_s) : ENPU_ORDER(x->frac_s, y->frac_s);
  return t ? t : ENPU_ORDER(x->off, y->off);
}

/* Rows out of time order counted; then refused (strict) or the output rewritten sorted. */
static int order_rows(conv *c, replay_convert_counts *counts, enpu_err *err) {
  for (size_t i = 1; i < c->nrows; i++)
    if (written_cmp(&c->rows[i], &c->rows[i - 1]) < 0 && counts->unsorted++ == 0)
      counts->first_unsorted_line = c->rows[i].line;
  if (!counts->unsorted) return ENPU_OK;
  ENPU_RETURN_IF(c->o->strict, err, ENPU_ERR_PARSE,
                 "%s:%zu:1: expected rows in time order (--strict), got a row earlier than the one before it "
                 "(%zu such rows)",
                 c->name, counts->first_unsorted_line, counts->unsorted);
  qsort(c->rows, c->nrows, sizeof *c->rows, written_cmp);
  out_text sorted = {0};
  int rc = out_append(&sorted, CONVERT_HEADER "\n", sizeof CONVERT_HEADER, err);
  for (size_t i = 0; i < c->nrows && rc == ENPU_OK; i++)
    rc = out_append(&sorted, c->out.buf + c->rows[i].off, c->rows[i].len + 1, err);
  if (rc != ENPU_OK) {
    free(sorted.buf);
    return rc;
  }
  free(c->out.buf);
  c->out = sorted;
  return ENPU_OK;
}

int replay_trace_convert(const char *text, size_t len, const char *name, const replay_convert_options *o,
                         char **csv, replay_convert_counts *counts, enpu_err *err) {
  *csv = NULL;
  *counts = (replay_convert_counts){0};
  ENPU_RETURN_IF(!text || memchr(text, '\0', len), err, ENPU_ERR_PARSE,
                 "%s: expected a text file, found a NUL byte", name);
  ENPU_RETURN_IF((unsigned)o->format >= REPLAY_NFORMAT, err, ENPU_ERR_INVALID, "unknown trace format %d",
                 o->format);
  conv c = {.name = name, .o = o};
  ENPU_FORWARD(parse_start(&c, err));
  const char *p = text, *end = text + len;
  int rc = out_append(&c.out, CONVERT_HEADER "\n", sizeof CONVERT_HEADER, err);
  if (rc == ENPU_OK && o->format != REPLAY_FORMAT_MOONCAKE) {
    const char *eol = memchr(p, '\n', len);
    if (!eol) eol = end;
    char header[1024];
    snprintf(header, sizeof header, "%.*s", (int)(eol - p < 1023 ? eol - p : 1023), p);
    c.line = 1;
    rc = read_header(&c, header, err);
    p = eol < end ? eol + 1 : end;
  }
  if (rc == ENPU_OK) rc = convert_lines(&c, p, end, counts, err);
  if (rc == ENPU_OK && counts->rows == 0)
    rc = enpu_errorf(err, ENPU_ERR_INVALID, "%s: no data rows (%zu bad rows skipped)", name, counts->skipped);
  if (rc == ENPU_OK) rc = order_rows(&c, counts, err);
  free(c.rows);
  if (rc != ENPU_OK) {
    free(c.out.buf);
    return rc;
  }
  *csv = c.out.buf;
  return ENPU_OK;
}

int replay_trace_csv(const replay_trace *t, char **csv, size_t *len, enpu_err *err) {
  *csv = NULL, *len = 0;
  out_text o = {0};
  int rc = out_append(&o, CONVERT_HEADER "\n", strlen(CONVERT_HEADER) + 1, err);
  for (size_t i = 0; rc == ENPU_OK && i < t->count; i++) {
    const replay_request *rq = &t->requests[i];
    char stamp[48], row[128];
    format_time(t->origin_s, t->origin_frac_s + rq->arrival_ns / 1e9, stamp, sizeof stamp);
    const int n = snprintf(row, sizeof row, "%s,%d,%d\n", stamp, (int)rq->context_tokens,
                           (int)rq->generated_tokens);
    rc = out_append(&o, row, (size_t)n, err);
  }
  if (rc < 0) {
    free(o.buf);
    return rc;
  }
  *csv = o.buf, *len = o.len;
  return ENPU_OK;
}
