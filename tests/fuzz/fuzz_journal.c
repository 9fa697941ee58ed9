/* fuzz_journal.c — libFuzzer target over the farm's untrusted-input readers: the input
 * bytes are decoded as an op result, a bucket result and a part record (a result that
 * decodes must re-encode to the same bytes: the encoding is canonical), then written to a file that
 * farm_journal_replay walks, decoding every intact record by its kind and skipping
 * damaged ones. A journal that replays is then opened for appending (which truncates
 * what replay dropped, or moves an unreadable file aside) and must replay to the same
 * records and skipped bytes with nothing dropped (none at all after a move). Seed it
 * with real encodings and a real journal (`test_farm --write DIR`). */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "farm_internal.h"

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static char journal_path[64], aside_path[96]; /* one scratch file per fuzzing process */

int LLVMFuzzerInitialize(int *argc, char ***argv) {
  /* tmpfs when there is one: open fsyncs, and the disk would make that the bottleneck */
  const char *dir = access("/dev/shm", W_OK) == 0 ? "/dev/shm" : "/tmp";
  snprintf(journal_path, sizeof journal_path, "%s/fuzz_journal.%ld", dir, (long)getpid());
  snprintf(aside_path, sizeof aside_path, "%s.unreadable-1", journal_path); /* farm_journal_open's */
  return 0;
}

/* Decode as every record kind; whatever decodes must re-encode to the same bytes. */
static void check_decoders(const void *data, size_t size) {
  enpu_err err;
  farm_buf again = {0};
  farm_op_result op;
  if (farm_op_result_decode(data, size, &op, &err) == 0) {
    if (farm_op_result_encode(&op, &again, &err) != 0 || again.len != size || memcmp(again.data, data, size) != 0)
      abort();
    farm_op_result_free(&op);
  } else if (op.points || !err.msg[0]) {
    abort(); /* a failure must leave the result empty and say why */
  }
  again.len = 0;
  farm_bucket_result bucket;
  if (farm_bucket_result_decode(data, size, &bucket, &err) == 0) {
    if (farm_bucket_result_encode(&bucket, &again, &err) != 0 || again.len != size ||
        memcmp(again.data, data, size) != 0)
      abort();
    farm_bucket_result_free(&bucket);
  } else if (bucket.bundle.ops || bucket.bundle.walk || bucket.bundle.plans || bucket.bundle.states ||
             !err.msg[0]) {
    abort();
  }
  again.len = 0;
  uint32_t part;
  if (farm_part_result_decode(data, size, &part, &op, &err) == 0) {
    if (part >= FARM_MAX_PARTS || farm_part_result_encode(part, &op, &again, &err) != 0 || again.len != size ||
        memcmp(again.data, data, size) != 0)
      abort();
    farm_op_result_free(&op);
  } else if (op.points || !err.msg[0]) {
    abort();
  }
  farm_buf_free(&again);
}

static int decode_record(void *user, uint32_t kind, const void *payload, size_t bytes, enpu_err *err) {
  check_decoders(payload, bytes);
  (*(int64_t *)user)++;
  return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  check_decoders(data, size);
  FILE *fp = fopen(journal_path, "wb");
  if (!fp) return 0;
  size_t wrote = fwrite(data, 1, size, fp);
  if (fclose(fp) != 0 || wrote != size) return 0;
  int64_t seen = 0;
  farm_journal_stats st, again;
  enpu_err err = {0};
  if (farm_journal_replay(journal_path, decode_record, &seen, &st, &err) != 0) {
    if (!err.msg[0]) abort();
    return 0;
  }
  if (seen != st.records || st.dropped_bytes < 0 || st.skipped_bytes < 0 ||
      (uint64_t)(st.dropped_bytes + st.skipped_bytes) > size || (st.unreadable && st.records))
    abort();
  farm_journal *j = NULL;
  if (farm_journal_open(journal_path, NULL, 0, &j, &err) != 0) abort(); /* replay accepted it */
  farm_journal_free(j);
  if (st.unreadable) unlink(aside_path);
  if (farm_journal_replay(journal_path, NULL, NULL, &again, &err) != 0 || again.records != st.records ||
      again.skipped_bytes != st.skipped_bytes || again.dropped_bytes != 0 || again.unreadable)
    abort();
  return 0;
}
