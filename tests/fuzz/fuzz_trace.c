/* fuzz_trace.c — libFuzzer target over the replay's trace reader: the input bytes are a
 * trace CSV, parsed strictly and with bad rows skipped. A parse must either fail with a
 * message and no trace, or give a trace that keeps the reader's invariants (sorted, the
 * first arrival at 0, within REPLAY_SPAN_MAX_S, every token count in
 * [1, REPLAY_TOKENS_MAX], a time of day in [0, 86400)); the strict parse's trace is the
 * lenient one's with nothing skipped. A trace that parses is then shaped at a small rate
 * and as a day, whose results keep the same invariants. The same bytes go through
 * `enpu trace convert` in every format: a conversion either fails with a message and no
 * output, or writes a trace the strict reader takes, with as many requests as rows
 * written. Seed it with the head of the shipped trace (`make fuzz` does). */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "replay.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check_trace(const replay_trace *t, bool shaped) {
  if (!t || t->count == 0 || !(t->origin_tod_s >= 0 && t->origin_tod_s < 86400)) abort();
  if (!shaped && t->requests[0].arrival_ns != 0) abort();
  for (size_t i = 0; i < t->count; i++) {
    const replay_request *q = &t->requests[i];
    if (q->context_tokens < 1 || q->context_tokens > REPLAY_TOKENS_MAX || q->generated_tokens < 1 ||
        q->generated_tokens > REPLAY_TOKENS_MAX || !(q->arrival_ns >= 0) || !isfinite(q->arrival_ns))
      abort();
    if (i > 0 && q->arrival_ns < t->requests[i - 1].arrival_ns) abort();
  }
  if (!shaped && t->requests[t->count - 1].arrival_ns > REPLAY_SPAN_MAX_S * 1e9) abort();
}

/* On failure: no trace, a message. */
static void check_failure(int rc, const replay_trace *t, const enpu_err *err) {
  if (rc >= 0 || t || !err->msg[0]) abort();
}

/* Shaped at half the rate, and as a day when that stays small (a day tiles the trace's
 * span: about count × 86400 s / span requests). */
static void shape(const replay_trace *t) {
  static const replay_shape shapes[] = {{.rate = 0.5, .warp = 1, .seed = 1},
                                        {.rate = 1, .warp = 1, .day = true, .seed = 2}};
  const bool day_ok = t->requests[t->count - 1].arrival_ns >= (double)t->count * 1e9;
  for (size_t k = 0; k < (day_ok ? 2u : 1u); k++) {
    replay_trace *s = NULL;
    enpu_err err = {0};
    const int rc = replay_trace_shape(t, &shapes[k], &s, &err);
    if (rc == 0) check_trace(s, true);
    else check_failure(rc, s, &err);
    replay_trace_free(s);
  }
}

/* Every format, strict and skipping bad rows. */
static void convert(const uint8_t *data, size_t size) {
  for (int f = 0; f < REPLAY_NFORMAT; f++)
    for (int skip = 0; skip < 2; skip++) {
      const replay_convert_options o = {
          .format = (replay_format)f, .map = "time=1,context=2,generated=3,unit=ms", .skip_bad_rows = skip};
      char *csv = NULL;
      replay_convert_counts n;
      enpu_err err = {0};
      if (replay_trace_convert((const char *)data, size, "fuzz.in", &o, &csv, &n, &err) != 0) {
        if (csv || !err.msg[0]) abort();
        continue;
      }
      replay_trace *t = NULL;
      if (replay_trace_parse(csv, strlen(csv), "converted.csv", false, &t, &err) != 0) {
        /* Rows more than REPLAY_SPAN_MAX_S apart are each fine but not one trace. */
        if (!strstr(err.msg, "days of the trace's median row")) abort();
      } else if (t->count != n.rows) abort();
      replay_trace_free(t);
      free(csv);
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  convert(data, size);
  replay_trace *strict = NULL, *lenient = NULL;
  enpu_err err = {0}, err2 = {0};
  const int rc = replay_trace_parse((const char *)data, size, "fuzz.csv", false, &strict, &err);
  const int rc2 = replay_trace_parse((const char *)data, size, "fuzz.csv", true, &lenient, &err2);
  if (rc == 0) {
    check_trace(strict, false);
    /* Nothing was bad, so skipping bad rows changes nothing. */
    if (rc2 != 0 || lenient->count != strict->count || lenient->skipped != 0 ||
        memcmp(lenient->requests, strict->requests, strict->count * sizeof *strict->requests) != 0)
      abort();
    shape(strict);
  } else {
    check_failure(rc, strict, &err);
  }
  if (rc2 == 0) check_trace(lenient, false);
  else check_failure(rc2, lenient, &err2);
  replay_trace_free(strict);
  replay_trace_free(lenient);
  return 0;
}
