/* replay_trace.c — loading and shaping of request traces (Azure LLM inference CSV).
 *
 * Invariants of a replay_trace: requests sorted by arrival_ns (stable for equal times),
 * the earliest at 0; every token count >= 1. Shaping draws from a local xorshift
 * generator seeded by the caller: no rand(), no global state. */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "replay.h"

#define TRACE_HEADER "TIMESTAMP,ContextTokens,GeneratedTokens"
#define TOKENS_MAX 10000000 /* far above any model's context: catches garbage numbers */

/* ---- parsing --------------------------------------------------------------------- */

typedef struct {
  const char *name;
  size_t line;
  const char *row; /* start of the current row */
} row_ctx;

static int row_fail(const row_ctx *rc, const char *at, int code, enpu_err *err, const char *what) {
  const char *end = at;
  while (*end && *end != ',' && *end != '\n' && *end != '\r' && end - at < 40) end++;
  return enpu_errorf(err, code, "%s:%zu:%zu: expected %s, got '%.*s'", rc->name, rc->line,
                     (size_t)(at - rc->row) + 1, what, (int)(end - at), at);
}

/* Exactly n decimal digits at *p. */
static int digits(const char **p, int n, long *out) {
  long v = 0;
  for (int i = 0; i < n; i++) {
    if ((*p)[i] < '0' || (*p)[i] > '9') return -1;
    v = v * 10 + ((*p)[i] - '0');
  }
  *p += n;
  *out = v;
  return 0;
}

/* Days since 1970-01-01 of a proleptic Gregorian date (H. Hinnant's days_from_civil). */
static long days_from_civil(long y, long m, long d) {
  y -= m <= 2;
  const long era = (y >= 0 ? y : y - 399) / 400;
  const long yoe = y - era * 400;
  const long doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
  const long doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
  return era * 146097 + doe - 719468;
}

static int is_leap(long y) { return (y % 4 == 0 && y % 100 != 0) || y % 400 == 0; }

/* `YYYY-MM-DD HH:MM:SS[.f…][+HH:MM|-HH:MM]` → seconds since the epoch (UTC when an
 * offset is given, else as written). Advances *p past the timestamp. */
static int parse_timestamp(const row_ctx *rc, const char **p, double *seconds, enpu_err *err) {
  static const char what[] = "a timestamp YYYY-MM-DD HH:MM:SS[.fraction][+HH:MM]";
  static const int mdays[] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
  const char *s = *p;
  long y, mo, d, h, mi, sec;
  if (digits(&s, 4, &y) || *s++ != '-' || digits(&s, 2, &mo) || *s++ != '-' || digits(&s, 2, &d) ||
      (*s != ' ' && *s != 'T') || (s++, digits(&s, 2, &h)) || *s++ != ':' || digits(&s, 2, &mi) ||
      *s++ != ':' || digits(&s, 2, &sec))
    return row_fail(rc, *p, ENPU_ERR_PARSE, err, what);
  if (mo < 1 || mo > 12 || d < 1 || d > mdays[mo - 1] + (mo == 2 && is_leap(y)) || h > 23 || mi > 59 ||
      sec > 60)
    return row_fail(rc, *p, ENPU_ERR_RANGE, err, "a valid date and time");
  double frac = 0, scale = 0.1;
  if (*s == '.') {
    s++;
    if (*s < '0' || *s > '9') return row_fail(rc, *p, ENPU_ERR_PARSE, err, what);
    for (; *s >= '0' && *s <= '9'; s++, scale *= 0.1) frac += (*s - '0') * scale;
  }
  long offset_s = 0;
  if (*s == '+' || *s == '-') {
    const int sign = *s == '-' ? -1 : 1;
    long oh, om;
    s++;
    if (digits(&s, 2, &oh) || *s++ != ':' || digits(&s, 2, &om))
      return row_fail(rc, *p, ENPU_ERR_PARSE, err, what);
    offset_s = sign * (oh * 3600 + om * 60);
  }
  *seconds = (double)(days_from_civil(y, mo, d) * 86400 + h * 3600 + mi * 60 + sec - offset_s) + frac;
  *p = s;
  return ENPU_OK;
}

static int parse_count(const row_ctx *rc, const char **p, int32_t *out, enpu_err *err) {
  const char *s = *p;
  if (*s < '0' || *s > '9') return row_fail(rc, s, ENPU_ERR_PARSE, err, "a token count (integer)");
  errno = 0;
  char *end = NULL;
  long v = strtol(s, &end, 10);
  if (errno || v < 1 || v > TOKENS_MAX) {
    char what[64];
    snprintf(what, sizeof what, "a token count from 1 to %d", TOKENS_MAX);
    return row_fail(rc, s, ENPU_ERR_RANGE, err, what);
  }
  *out = (int32_t)v;
  *p = end;
  return ENPU_OK;
}

/* One data row [row, eol). */
static int parse_row(const row_ctx *rc, const char *eol, double *t_s, replay_request *rq, enpu_err *err) {
  const char *p = rc->row;
  ENPU_FORWARD(parse_timestamp(rc, &p, t_s, err));
  if (*p != ',') return row_fail(rc, p, ENPU_ERR_PARSE, err, "',' after the timestamp");
  p++;
  ENPU_FORWARD(parse_count(rc, &p, &rq->context_tokens, err));
  if (*p != ',') return row_fail(rc, p, ENPU_ERR_PARSE, err, "',' after ContextTokens");
  p++;
  ENPU_FORWARD(parse_count(rc, &p, &rq->generated_tokens, err));
  if (p < eol && *p == '\r') p++;
  if (p != eol) return row_fail(rc, p, ENPU_ERR_PARSE, err, "the end of the row (3 columns)");
  return ENPU_OK;
}

typedef struct {
  double t; /* seconds (parsed) or ns (shaped) */
  size_t index;
  replay_request rq;
} timed_row;

static int timed_cmp(const void *a, const void *b) {
  const timed_row *x = a, *y = b;
  if (x->t != y->t) return x->t < y->t ? -1 : 1;
  return x->index < y->index ? -1 : x->index > y->index;
}

void replay_trace_free(replay_trace *t) {
  if (!t) return;
  free(t->requests);
  free(t);
}

/* A trace of n requests from rows, sorted; arrival_ns = (t - origin) * to_ns, origin the
 * earliest row's t when relative, else 0. */
static int trace_from_rows(timed_row *rows, size_t n, bool relative, double to_ns, replay_trace **out,
                           enpu_err *err) {
  qsort(rows, n, sizeof *rows, timed_cmp);
  const double origin = relative ? rows[0].t : 0.0;
  replay_trace *t = calloc(1, sizeof *t);
  if (t) t->requests = enpu_calloc(n, sizeof *t->requests);
  if (!t || !t->requests) {
    replay_trace_free(t);
    return enpu_errorf(err, ENPU_ERR_NOMEM, "out of memory (trace of %zu requests)", n);
  }
  for (size_t i = 0; i < n; i++) {
    t->requests[i] = rows[i].rq;
    t->requests[i].arrival_ns = (rows[i].t - origin) * to_ns;
  }
  t->count = n;
  *out = t;
  return ENPU_OK;
}

int replay_trace_parse(const char *text, size_t len, const char *name, bool skip_bad_rows,
                       replay_trace **out, enpu_err *err) {
  *out = NULL;
  ENPU_RETURN_IF(!text, err, ENPU_ERR_INVALID, "%s: no trace text", name);
  ENPU_RETURN_IF(memchr(text, '\0', len), err, ENPU_ERR_PARSE, "%s: expected a text CSV file, found a NUL byte",
                 name);
  const char *end = text + len, *p = text;
  const char *eol = memchr(p, '\n', len);
  if (!eol) eol = end;
  size_t hl = (size_t)(eol - p);
  if (hl && p[hl - 1] == '\r') hl--;
  ENPU_RETURN_IF(hl != strlen(TRACE_HEADER) || memcmp(p, TRACE_HEADER, hl), err, ENPU_ERR_PARSE,
                 "%s:1:1: expected the header '%s', got '%.*s'", name, TRACE_HEADER, (int)(hl < 80 ? hl : 80), p);
  timed_row *rows = NULL;
  size_t nrows = 0, cap = 0, skipped = 0;
  char first_skipped[sizeof((replay_trace *)0)->first_skipped] = "";
  row_ctx rc = {.name = name, .line = 1};
  enpu_err row_err = {0};
  for (p = eol < end ? eol + 1 : end; p < end; p = eol < end ? eol + 1 : end) {
    rc.line++;
    rc.row = p;
    eol = memchr(p, '\n', (size_t)(end - p));
    if (!eol) eol = end;
    if (eol == p || (eol == p + 1 && *p == '\r')) continue;
    /* The parsers stop at ',' or a non-digit, so a row may be parsed in place as long as
     * it cannot run past its own end: copy it into a NUL-terminated buffer. */
    char line[512];
    int rc_code;
    size_t ll = (size_t)(eol - p);
    if (ll >= sizeof line) {
      rc_code = enpu_errorf(&row_err, ENPU_ERR_PARSE, "%s:%zu:1: expected a row of at most %zu characters, got %zu",
                            name, rc.line, sizeof line - 1, ll);
    } else {
      memcpy(line, p, ll);
      line[ll] = '\0';
      rc.row = line;
      timed_row tr = {.index = nrows};
      rc_code = parse_row(&rc, line + ll, &tr.t, &tr.rq, &row_err);
      if (rc_code == ENPU_OK) {
        if (enpu_grow((void **)&rows, &cap, nrows + 1, sizeof *rows) < 0) {
          free(rows);
          return enpu_errorf(err, ENPU_ERR_NOMEM, "out of memory (trace row %zu)", rc.line);
        }
        rows[nrows++] = tr;
        continue;
      }
    }
    if (!skip_bad_rows) {
      free(rows);
      if (err) *err = row_err;
      return rc_code;
    }
    if (skipped++ == 0) snprintf(first_skipped, sizeof first_skipped, "%s", row_err.msg);
  }
  if (nrows == 0) {
    free(rows);
    return enpu_errorf(err, ENPU_ERR_INVALID, "%s: no data rows (%zu bad rows skipped)", name, skipped);
  }
  int rc2 = trace_from_rows(rows, nrows, true, 1e9, out, err);
  free(rows);
  if (rc2 == ENPU_OK) {
    (*out)->skipped = skipped;
    memcpy((*out)->first_skipped, first_skipped, sizeof first_skipped);
  }
  return rc2;
}

int replay_trace_load(const char *path, bool skip_bad_rows, replay_trace **out, enpu_err *err) {
  *out = NULL;
  char *text = NULL;
  size_t len = 0;
  ENPU_FORWARD(enpu_read_file(path, &text, &len, err));
  int rc = replay_trace_parse(text, len, path, skip_bad_rows, out, err);
  free(text);
  return rc;
}

/* ---- shaping --------------------------------------------------------------------- */

/* xorshift64* (Vigna): small, fast, and good enough for thinning and jitter. */
static uint64_t rng_next(uint64_t *s) {
  *s ^= *s >> 12;
  *s ^= *s << 25;
  *s ^= *s >> 27;
  return *s * 0x2545F4914F6CDD1DULL;
}

static double rng_uniform(uint64_t *s) { return (double)(rng_next(s) >> 11) * 0x1.0p-53; }

double replay_diurnal_factor(double hour) {
  const double trough = 0.3;
  if (hour >= 14 && hour <= 20) return 1.0;
  if (hour >= 4 && hour < 14) return trough + (1 - trough) * (hour - 4) / 10;
  const double since_peak = hour > 20 ? hour - 20 : hour + 4; /* 20:00 → 04:00 is 8 h */
  return 1 - (1 - trough) * since_peak / 8;
}

/* Append k copies of request i of `in` (base arrival t_ns, next gap gap_ns). */
static int emit_copies(timed_row **rows, size_t *n, size_t *cap, const replay_request *rq, double t_ns,
                       double gap_ns, double expected, uint64_t *rng, enpu_err *err) {
  double whole = floor(expected);
  long k = (long)whole + (rng_uniform(rng) < expected - whole);
  for (long c = 0; c < k; c++) {
    if (enpu_grow((void **)rows, cap, *n + 1, sizeof **rows) < 0)
      return enpu_errorf(err, ENPU_ERR_NOMEM, "out of memory (shaped trace of %zu requests)", *n);
    double at = t_ns + (c == 0 ? 0 : rng_uniform(rng) * gap_ns);
    (*rows)[*n] = (timed_row){.t = at, .index = *n, .rq = *rq};
    (*n)++;
  }
  return ENPU_OK;
}

int replay_trace_shape(const replay_trace *in, const replay_shape *shape, replay_trace **out,
                       enpu_err *err) {
  *out = NULL;
  ENPU_RETURN_IF(!in || !shape || in->count == 0, err, ENPU_ERR_INVALID, "shape: empty trace");
  ENPU_RETURN_IF(!(shape->rate >= 0) || !isfinite(shape->rate), err, ENPU_ERR_INVALID,
                 "rate must be a finite number >= 0, got %g", shape->rate);
  ENPU_RETURN_IF(!(shape->warp > 0) || !isfinite(shape->warp), err, ENPU_ERR_INVALID,
                 "time warp must be a finite number > 0, got %g", shape->warp);
  uint64_t rng = shape->seed * 0x9E3779B97F4A7C15ULL + 0x2545F4914F6CDD1DULL;
  if (rng == 0) rng = 1;
  const size_t n = in->count;
  const double span_ns = in->requests[n - 1].arrival_ns;
  const double period_ns = span_ns + (n > 1 ? span_ns / (double)(n - 1) : 1e9);
  const double day_ns = 86400e9;
  const long tiles = shape->day ? (long)ceil(day_ns / period_ns) : 1;
  timed_row *rows = NULL;
  size_t nrows = 0, cap = 0;
  int rc = ENPU_OK;
  for (long tile = 0; tile < tiles && rc == ENPU_OK; tile++) {
    for (size_t i = 0; i < n && rc == ENPU_OK; i++) {
      double t = (double)tile * period_ns + in->requests[i].arrival_ns;
      if (shape->day && t >= day_ns) break;
      double next = i + 1 < n ? in->requests[i + 1].arrival_ns : period_ns;
      double expected = shape->rate * (shape->day ? replay_diurnal_factor(t / 3600e9) : 1.0);
      rc = emit_copies(&rows, &nrows, &cap, &in->requests[i], t, next - in->requests[i].arrival_ns, expected,
                       &rng, err);
    }
  }
  if (rc == ENPU_OK && nrows == 0)
    rc = enpu_errorf(err, ENPU_ERR_INVALID, "shape: rate %g leaves no request", shape->rate);
  /* Absolute times: a day starts at midnight, not at its first kept request. */
  if (rc == ENPU_OK) rc = trace_from_rows(rows, nrows, false, shape->warp, out, err);
  free(rows);
  return rc;
}
