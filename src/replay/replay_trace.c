/* replay_trace.c — loading and shaping of request traces (Azure LLM inference CSV).
 *
 * Invariants of a replay_trace: requests sorted by arrival_ns (stable for equal times),
 * the earliest at 0, all within REPLAY_SPAN_MAX_S; every token count in
 * [1, REPLAY_TOKENS_MAX]; at most REPLAY_REQUESTS_MAX requests after shaping. These
 * bounds keep every derived size (windows, per-request arrays) small before anything is
 * allocated from them. Shaping draws from a local xorshift generator seeded by the
 * caller: no rand(), no global state. */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "replay.h"

#define TRACE_HEADER "TIMESTAMP,ContextTokens,GeneratedTokens"
#define DAY_S 86400.0

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

/* A timestamp: whole seconds since the epoch and the fraction, apart, so that a
 * difference of two keeps the file's precision (a double of ~1.7e9 s has 240 ns steps). */
typedef struct {
  int64_t whole_s;
  double frac_s;
} stamp;

/* `YYYY-MM-DD HH:MM:SS[.f…][+HH:MM|-HH:MM]` → seconds since the epoch (UTC when an
 * offset is given, else as written). Advances *p past the timestamp. */
static int parse_timestamp(const row_ctx *rc, const char **p, stamp *t, enpu_err *err) {
  static const char what[] = "a timestamp YYYY-MM-DD HH:MM:SS[.fraction][+HH:MM]";
  static const int mdays[] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
  const char *s = *p;
  long y, mo, d, h, mi, sec;
  if (digits(&s, 4, &y) || *s++ != '-' || digits(&s, 2, &mo) || *s++ != '-' || digits(&s, 2, &d) ||
      (*s != ' ' && *s != 'T') || (s++, digits(&s, 2, &h)) || *s++ != ':' || digits(&s, 2, &mi) || *s++ != ':' ||
      digits(&s, 2, &sec))
    return row_fail(rc, *p, ENPU_ERR_PARSE, err, what);
  if (y < REPLAY_YEAR_MIN || y > REPLAY_YEAR_MAX) {
    char years[64];
    snprintf(years, sizeof years, "a year from %d to %d", REPLAY_YEAR_MIN, REPLAY_YEAR_MAX);
    return row_fail(rc, *p, ENPU_ERR_RANGE, err, years);
  }
  if (mo < 1 || mo > 12 || d < 1 || d > mdays[mo - 1] + (mo == 2 && is_leap(y)) || h > 23 || mi > 59 || sec > 60)
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
    const char *at = s - 1;
    if (digits(&s, 2, &oh) || *s++ != ':' || digits(&s, 2, &om)) return row_fail(rc, *p, ENPU_ERR_PARSE, err, what);
    /* RFC 3339 §5.6: time-numoffset = ("+" / "-") time-hour ":" time-minute, hours
     * 00-23 and minutes 00-59. */
    if (oh > 23 || om > 59) return row_fail(rc, at, ENPU_ERR_RANGE, err, "a UTC offset from -23:59 to +23:59");
    offset_s = sign * (oh * 3600 + om * 60);
  }
  t->whole_s = (int64_t)days_from_civil(y, mo, d) * 86400 + h * 3600 + mi * 60 + sec - offset_s;
  t->frac_s = frac;
  *p = s;
  return ENPU_OK;
}

static int parse_count(const row_ctx *rc, const char **p, int32_t *out, enpu_err *err) {
  const char *s = *p;
  if (*s < '0' || *s > '9') return row_fail(rc, s, ENPU_ERR_PARSE, err, "a token count (integer)");
  errno = 0;
  char *end = NULL;
  long v = strtol(s, &end, 10);
  if (errno || v < 1 || v > REPLAY_TOKENS_MAX) {
    char what[64];
    snprintf(what, sizeof what, "a token count from 1 to %d", REPLAY_TOKENS_MAX);
    return row_fail(rc, s, ENPU_ERR_RANGE, err, what);
  }
  *out = (int32_t)v;
  *p = end;
  return ENPU_OK;
}

/* One data row [row, eol). */
static int parse_row(const row_ctx *rc, const char *eol, stamp *t, replay_request *rq, enpu_err *err) {
  const char *p = rc->row;
  ENPU_FORWARD(parse_timestamp(rc, &p, t, err));
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

int replay_trace_row(const char *row, size_t len, const char *name, size_t line, int64_t *whole_s, double *frac_s,
                     replay_request *rq, enpu_err *err) {
  char buf[512];
  ENPU_RETURN_IF(len >= sizeof buf, err, ENPU_ERR_PARSE,
                 "%s:%zu:1: expected a row of at most %zu characters, got %zu", name, line, sizeof buf - 1, len);
  memcpy(buf, row, len);
  buf[len] = '\0';
  const row_ctx rc = {.name = name, .line = line, .row = buf};
  stamp t = {0};
  ENPU_FORWARD(parse_row(&rc, buf + len, &t, rq, err));
  *whole_s = t.whole_s;
  *frac_s = t.frac_s;
  return ENPU_OK;
}

typedef struct {
  double t; /* seconds from the first row's whole second (parsed) or ns (shaped) */
  size_t index;
  size_t line; /* of the file (parsed rows) */
  replay_request rq;
} timed_row;

static int timed_cmp(const void *a, const void *b) {
  const timed_row *x = a, *y = b;
  const int t = ENPU_ORDER(x->t, y->t);
  return t ? t : ENPU_ORDER(x->index, y->index);
}

void replay_trace_free(replay_trace *t) {
  if (!t) return;
  free(t->requests);
  free(t);
}

/* A trace of n requests from sorted rows; arrival_ns = (t - origin) * to_ns, origin the
 * earliest row's t when relative, else 0. */
static int trace_from_rows(const timed_row *rows, size_t n, bool relative, double to_ns, replay_trace **out,
                           enpu_err *err) {
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

/* Rows (sorted) spanning more than REPLAY_SPAN_MAX_S: the row farthest from the median
 * is the odd one out. */
static int check_span(const timed_row *rows, size_t n, const char *name, enpu_err *err) {
  if (rows[n - 1].t - rows[0].t <= REPLAY_SPAN_MAX_S) return ENPU_OK;
  const double median = rows[n / 2].t;
  const timed_row *odd = median - rows[0].t > rows[n - 1].t - median ? &rows[0] : &rows[n - 1];
  return enpu_errorf(
      err, ENPU_ERR_RANGE,
      "%s:%zu:1: expected a timestamp within %.0f days of the trace's median row, got one %.1f days %s "
      "it",
      name, odd->line, REPLAY_SPAN_MAX_S / DAY_S, fabs(odd->t - median) / DAY_S,
      odd->t < median ? "before" : "after");
}

/* Rows parsed so far, times relative to base_s (the first good row's whole second). */
typedef struct {
  timed_row *rows;
  size_t n, cap, skipped;
  int64_t base_s;
  char first_skipped[ENPU_ERR_MSG_LEN];
} row_set;

/* One non-blank line [p, eol): a row appended to set, or the row's error in row_err. */
static int parse_line(row_ctx *rc, const char *p, const char *eol, row_set *set, enpu_err *row_err) {
  /* The parsers stop at ',' or a non-digit, so a row may be parsed in place as long as
   * it cannot run past its own end: copy it into a NUL-terminated buffer. */
  char line[512];
  const size_t ll = (size_t)(eol - p);
  if (ll >= sizeof line)
    return enpu_errorf(row_err, ENPU_ERR_PARSE, "%s:%zu:1: expected a row of at most %zu characters, got %zu",
                       rc->name, rc->line, sizeof line - 1, ll);
  memcpy(line, p, ll);
  line[ll] = '\0';
  rc->row = line;
  timed_row tr = {.index = set->n, .line = rc->line};
  stamp t = {0};
  ENPU_FORWARD(parse_row(rc, line + ll, &t, &tr.rq, row_err));
  if (set->n == 0) set->base_s = t.whole_s;
  tr.t = (double)(t.whole_s - set->base_s) + t.frac_s; /* |whole − base| < 131 years: exact */
  if (enpu_grow((void **)&set->rows, &set->cap, set->n + 1, sizeof *set->rows) < 0)
    return enpu_errorf(row_err, ENPU_ERR_NOMEM, "out of memory (trace row %zu)", rc->line);
  set->rows[set->n++] = tr;
  return ENPU_OK;
}

/* The trace of the parsed rows: sorted, spanning at most REPLAY_SPAN_MAX_S. */
static int finish_parse(row_set *set, const char *name, replay_trace **out, enpu_err *err) {
  ENPU_RETURN_IF(set->n == 0, err, ENPU_ERR_INVALID, "%s: no data rows (%zu bad rows skipped)", name, set->skipped);
  size_t unsorted = 0, first_unsorted_line = 0;
  for (size_t i = 1; i < set->n; i++)
    if (set->rows[i].t < set->rows[i - 1].t && unsorted++ == 0) first_unsorted_line = set->rows[i].line;
  qsort(set->rows, set->n, sizeof *set->rows, timed_cmp);
  ENPU_FORWARD(check_span(set->rows, set->n, name, err));
  ENPU_FORWARD(trace_from_rows(set->rows, set->n, true, 1e9, out, err));
  (*out)->skipped = set->skipped;
  (*out)->unsorted = unsorted;
  (*out)->first_unsorted_line = first_unsorted_line;
  const double first_whole = floor(set->rows[0].t);
  (*out)->origin_s = set->base_s + (int64_t)first_whole;
  (*out)->origin_frac_s = set->rows[0].t - first_whole;
  const double tod = fmod((double)(set->base_s % 86400) + set->rows[0].t, DAY_S);
  (*out)->origin_tod_s = tod < 0 ? tod + DAY_S : tod;
  memcpy((*out)->first_skipped, set->first_skipped, sizeof set->first_skipped);
  return ENPU_OK;
}

int replay_trace_parse(const char *text, size_t len, const char *name, bool skip_bad_rows, replay_trace **out,
                       enpu_err *err) {
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
  row_set set = {0};
  row_ctx rc = {.name = name, .line = 1};
  int rc_code = ENPU_OK;
  for (p = eol < end ? eol + 1 : end; p < end && rc_code == ENPU_OK; p = eol < end ? eol + 1 : end) {
    rc.line++;
    eol = memchr(p, '\n', (size_t)(end - p));
    if (!eol) eol = end;
    if (eol == p || (eol == p + 1 && *p == '\r')) continue;
    enpu_err row_err = {0};
    rc_code = parse_line(&rc, p, eol, &set, &row_err);
    if (rc_code == ENPU_OK || rc_code == ENPU_ERR_NOMEM || !skip_bad_rows) {
      if (rc_code != ENPU_OK && err) *err = row_err;
      continue;
    }
    if (set.skipped++ == 0) snprintf(set.first_skipped, sizeof set.first_skipped, "%s", row_err.msg);
    rc_code = ENPU_OK;
  }
  if (rc_code == ENPU_OK) rc_code = finish_parse(&set, name, out, err);
  free(set.rows);
  return rc_code;
}

int replay_trace_load(const char *path, bool skip_bad_rows, replay_trace **out, enpu_err *err) {
  *out = NULL;
  char *text = NULL;
  size_t len = 0;
  ENPU_FORWARD(enpu_read_file_max(path, ENPU_TRACE_MAX_BYTES, &text, &len, err));
  int rc = replay_trace_parse(text, len, path, skip_bad_rows, out, err);
  free(text);
  return rc;
}

/* ---- shaping --------------------------------------------------------------------- */

/* xorshift64* (Vigna): small, fast, and good enough for thinning and jitter. */
static uint64_t xorshift_next(uint64_t *s) {
  *s ^= *s >> 12;
  *s ^= *s << 25;
  *s ^= *s >> 27;
  return *s * 0x2545F4914F6CDD1DULL;
}

static double rng_uniform(uint64_t *s) { return (double)(xorshift_next(s) >> 11) * 0x1.0p-53; }

bool replay_is_peak(double time_of_day_s) {
  const double tod = fmod(fmod(time_of_day_s, DAY_S) + DAY_S, DAY_S);
  return tod >= 14 * 3600.0 && tod < 20 * 3600.0;
}

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

/* The burst's rate factor at t_s seconds after arrival 0 (1 outside it). */
static double burst_factor(const replay_burst *b, double t_s) {
  if (b->k == 0) return 1.0;
  const double at = b->period_s > 0 ? fmod(t_s, b->period_s) : t_s - b->start_s;
  return at >= 0 && at < b->length_s ? b->k : 1.0;
}

static int check_burst(const replay_burst *b, enpu_err *err) {
  if (b->k == 0) return ENPU_OK;
  ENPU_RETURN_IF(!(b->k >= 1) || !isfinite(b->k), err, ENPU_ERR_INVALID,
                 "burst: the rate factor must be a finite number >= 1, got %g", b->k);
  ENPU_RETURN_IF(!(b->length_s > 0) || !isfinite(b->length_s), err, ENPU_ERR_INVALID,
                 "burst: the length must be a finite number of seconds > 0, got %g", b->length_s);
  ENPU_RETURN_IF(!(b->start_s >= 0) || !isfinite(b->start_s), err, ENPU_ERR_INVALID,
                 "burst: the start must be a finite number of seconds >= 0, got %g", b->start_s);
  ENPU_RETURN_IF(b->period_s != 0 && (!(b->period_s > b->length_s) || !isfinite(b->period_s)), err,
                 ENPU_ERR_INVALID, "burst: the period (%g s) must be longer than the burst (%g s)", b->period_s,
                 b->length_s);
  return ENPU_OK;
}

int replay_trace_shape(const replay_trace *in, const replay_shape *shape, replay_trace **out, enpu_err *err) {
  *out = NULL;
  ENPU_FORWARD(check_burst(&shape->burst, err));
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
  const double day_ns = DAY_S * 1e9;
  const double tiles_d = shape->day ? ceil(day_ns / period_ns) : 1;
  const double most = shape->rate * (shape->burst.k > 1 ? shape->burst.k : 1); /* a bound: all in a burst */
  ENPU_RETURN_IF(most * (double)n * tiles_d > REPLAY_REQUESTS_MAX, err, ENPU_ERR_RANGE,
                 "rate %g%s would give up to %.3g requests, more than the %d a replay takes", most,
                 shape->day ? " over a day" : "", most * (double)n * tiles_d, REPLAY_REQUESTS_MAX);
  const long tiles = (long)tiles_d;
  timed_row *rows = NULL;
  size_t nrows = 0, cap = 0;
  int rc = ENPU_OK;
  for (long tile = 0; tile < tiles && rc == ENPU_OK; tile++) {
    for (size_t i = 0; i < n && rc == ENPU_OK; i++) {
      double t = (double)tile * period_ns + in->requests[i].arrival_ns;
      if (shape->day && t >= day_ns) break;
      double next = i + 1 < n ? in->requests[i + 1].arrival_ns : period_ns;
      double expected = shape->rate * (shape->day ? replay_diurnal_factor(t / 3600e9) : 1.0) *
                        burst_factor(&shape->burst, t / 1e9);
      rc = emit_copies(&rows, &nrows, &cap, &in->requests[i], t, next - in->requests[i].arrival_ns, expected, &rng,
                       err);
    }
  }
  if (rc == ENPU_OK && nrows == 0)
    rc = enpu_errorf(err, ENPU_ERR_INVALID, "shape: rate %g leaves no request", shape->rate);
  /* Absolute times: a day starts at midnight, not at its first kept request. */
  if (rc == ENPU_OK) {
    qsort(rows, nrows, sizeof *rows, timed_cmp);
    rc = trace_from_rows(rows, nrows, false, shape->warp, out, err);
  }
  if (rc == ENPU_OK) {
    (*out)->origin_tod_s = shape->day ? 0 : in->origin_tod_s;
    const double midnight = floor((double)in->origin_s + in->origin_frac_s - in->origin_tod_s + 0.5);
    (*out)->origin_s = shape->day ? (int64_t)midnight : in->origin_s;
    (*out)->origin_frac_s = shape->day ? 0 : in->origin_frac_s;
  }
  free(rows);
  return rc;
}

double replay_trace_peak_per_s(const replay_trace *t) {
  /* Arrivals are sorted: count each one-second bucket as the scan passes it. */
  uint64_t best = 0, run = 0;
  double bucket = -1;
  for (size_t i = 0; t && i < t->count; i++) {
    const double b = floor(t->requests[i].arrival_ns / 1e9);
    run = b == bucket ? run + 1 : 1;
    bucket = b;
    if (run > best) best = run;
  }
  return (double)best;
}
