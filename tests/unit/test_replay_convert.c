/* test_replay_convert.c — replay_trace_convert: each format's rows against values worked
 * out by hand (times from the start across a leap day and a year end, token columns),
 * the column map by name and index, bad rows failing with file:line:column or counted,
 * and every output parsed by replay_trace_parse into the same requests. */
#include "test_replay.h"

static char *convert_ok(replay_format f, const char *text, const char *map, const char *start, bool skip,
                        replay_convert_counts *n) {
  const replay_convert_options o = {.format = f, .map = map, .start = start, .skip_bad_rows = skip};
  char *csv = NULL;
  enpu_err err = {0};
  if (replay_trace_convert(text, strlen(text), "in", &o, &csv, n, &err) != 0) fail_msg("convert: %s", err.msg);
  return csv;
}

static int convert_fails(replay_format f, const char *text, const char *map, char *msg) {
  const replay_convert_options o = {.format = f, .map = map};
  char *csv = NULL;
  replay_convert_counts n;
  enpu_err err = {0};
  const int rc = replay_trace_convert(text, strlen(text), "in", &o, &csv, &n, &err);
  assert_null(csv);
  strcpy(msg, err.msg);
  return rc;
}

void test_convert_formats(void **state) {
  (void)state;
  replay_convert_counts n;
  /* BurstGPT seconds from a start on 2024-02-28 23:59:59: +1 s is the leap day, +86401 s
   * the first of March; the failed request (0 response tokens) is counted. */
  char *csv = convert_ok(REPLAY_FORMAT_BURSTGPT,
                         "Timestamp,Model,Request tokens,Response tokens,Total tokens,Log Type\n"
                         "0,ChatGPT,10,2,12,Conversation log\n"
                         "1.5,GPT-4,20,0,20,API log\n"
                         "1,GPT-4,30,3,33,API log\n"
                         "86401.25,ChatGPT,40,4,44,Conversation log\n",
                         NULL, "2024-02-28 23:59:59", true, &n);
  assert_string_equal(csv, "TIMESTAMP,ContextTokens,GeneratedTokens\n"
                           "2024-02-28 23:59:59.0000000,10,2\n"
                           "2024-02-29 00:00:00.0000000,30,3\n"
                           "2024-03-01 00:00:00.2500000,40,4\n");
  assert_true(n.rows == 3 && n.skipped == 1);
  assert_non_null(strstr(n.first_skipped, "in:3:"));
  /* The output is a trace the reader takes: requests in order, times relative. */
  replay_trace *t = parse_ok(csv);
  assert_int_equal(t->count, 3);
  assert_true(fabs(t->requests[2].arrival_ns - 86401.25e9) < 1e3);
  assert_int_equal(t->requests[1].context_tokens, 30);
  replay_trace_free(t);
  free(csv);
  /* Mooncake milliseconds across a year end; hash_ids ignored. */
  csv = convert_ok(REPLAY_FORMAT_MOONCAKE,
                   "{\"timestamp\": 0, \"input_length\": 7, \"output_length\": 5, \"hash_ids\": [1, 2]}\n\n"
                   "{\"timestamp\": 1500, \"input_length\": 9, \"output_length\": 1, \"hash_ids\": []}\n",
                   NULL, "2023-12-31 23:59:59", false, &n);
  assert_string_equal(csv, "TIMESTAMP,ContextTokens,GeneratedTokens\n"
                           "2023-12-31 23:59:59.0000000,7,5\n"
                           "2024-01-01 00:00:00.5000000,9,1\n");
  free(csv);
  /* A mapped CSV: columns by name and by index, quoted fields, microseconds. */
  csv = convert_ok(REPLAY_FORMAT_CSV, "id,\"t\",in,out\nr1,\"250\",3,4\nr2,1000001,5,6\n",
                   "time=t,context=3,generated=out,unit=us", NULL, false, &n);
  assert_string_equal(csv, "TIMESTAMP,ContextTokens,GeneratedTokens\n"
                           "1970-01-01 00:00:00.0002500,3,4\n"
                           "1970-01-01 00:00:01.0000010,5,6\n");
  free(csv);
  /* Azure rows pass through unchanged. */
  static const char az[] = "TIMESTAMP,ContextTokens,GeneratedTokens\n2024-05-10 00:00:00.009930+00:00,2162,17\n";
  csv = convert_ok(REPLAY_FORMAT_AZURE2024, az, NULL, NULL, false, &n);
  assert_string_equal(csv, az);
  free(csv);
}

void test_convert_bad_input(void **state) {
  (void)state;
  char msg[ENPU_ERR_MSG_LEN];
  assert_int_equal(convert_fails(REPLAY_FORMAT_AZURE2023,
                                 "TIMESTAMP,ContextTokens,GeneratedTokens\n2023-11-16 18:15:46.1,374,44\n"
                                 "2023-11-16 18:15:4x.1,374,44\n",
                                 NULL, msg),
                   ENPU_ERR_PARSE);
  assert_non_null(strstr(msg, "in:3:1:"));
  assert_int_equal(convert_fails(REPLAY_FORMAT_BURSTGPT, "TIMESTAMP,ContextTokens,GeneratedTokens\n", NULL, msg),
                   ENPU_ERR_PARSE);
  assert_non_null(strstr(msg, "in:1:1: expected the header 'Timestamp,Model"));
  assert_int_equal(convert_fails(REPLAY_FORMAT_MOONCAKE,
                                 "{\"timestamp\": -1, \"input_length\": 7, \"output_length\": 5}\n", NULL, msg),
                   ENPU_ERR_PARSE);
  assert_non_null(strstr(msg, "in:1:"));
  assert_non_null(strstr(msg, "timestamp"));
  assert_int_equal(convert_fails(REPLAY_FORMAT_CSV, "a,b,c\n1,2,3\n", "time=a,context=b,generated=z", msg),
                   ENPU_ERR_INVALID);
  assert_non_null(strstr(msg, "generated=z"));
  assert_int_equal(convert_fails(REPLAY_FORMAT_CSV, "a,b,c\n1,2\n", "time=a,context=b,generated=c", msg),
                   ENPU_ERR_PARSE);
  assert_non_null(strstr(msg, "in:2:"));
  assert_int_equal(convert_fails(REPLAY_FORMAT_CSV, "a,b,c\n1,2,3\n", "time=a,context=b,generated=c,unit=h", msg),
                   ENPU_ERR_INVALID);
  assert_int_equal(convert_fails(REPLAY_FORMAT_CSV, "a,b,c\n1e300,2,3\n", "time=a,context=b,generated=c", msg),
                   ENPU_ERR_RANGE);
  assert_non_null(strstr(msg, "in:2:1: expected a time within 130 years"));
  /* Every row bad: no trace, even when skipping. */
  const replay_convert_options o = {
      .format = REPLAY_FORMAT_CSV, .map = "time=1,context=2,generated=3", .skip_bad_rows = true};
  char *csv = NULL;
  replay_convert_counts n;
  enpu_err err = {0};
  static const char none[] = "a,b,c\n1,0,3\n";
  assert_int_equal(replay_trace_convert(none, strlen(none), "in", &o, &csv, &n, &err), ENPU_ERR_INVALID);
  assert_non_null(strstr(err.msg, "no data rows (1 bad rows skipped)"));
}

/* BurstGPT_3's 8-column layout (Session ID, Elapsed time) read by its header; rows out of
 * time order written sorted and counted, or refused with strict; the replay's own reader
 * sorts them too and counts them for its warning. */
void test_convert_order(void **state) {
  (void)state;
  static const char burst8[] =
      "Timestamp,Session ID,Elapsed time,Model,Request tokens,Response tokens,Total tokens,Log Type\r\n"
      "19440110.0,1722ac82-0a46-4bf0-aa08-89794e7a2b3f,43,GPT-4,906,446,1352,Conversation log\r\n"
      "19440192.0,a5c69b35-4fbc-45e9-955e-18715e376d74,8,GPT-4,1779,123,1902,Conversation log\r\n"
      "19440161.0,d5983bf9-4b48-497b-892b-a58995247443,2,ChatGPT,36,29,65,Conversation log\r\n"
      "19440161.0,d5983bf9-4b48-497b-892b-a58995247443,2,ChatGPT,37,29,66,Conversation log\r\n";
  replay_convert_counts n;
  char *csv = convert_ok(REPLAY_FORMAT_BURSTGPT, burst8, NULL, NULL, false, &n);
  assert_string_equal(csv, "TIMESTAMP,ContextTokens,GeneratedTokens\n"
                           "1970-08-14 00:01:50.0000000,906,446\n"
                           "1970-08-14 00:02:41.0000000,36,29\n"
                           "1970-08-14 00:02:41.0000000,37,29\n"
                           "1970-08-14 00:03:12.0000000,1779,123\n");
  assert_true(n.rows == 4 && n.unsorted == 1 && n.first_unsorted_line == 4);
  free(csv);
  const replay_convert_options strict = {.format = REPLAY_FORMAT_BURSTGPT, .strict = true};
  enpu_err err = {0};
  csv = NULL;
  assert_int_equal(replay_trace_convert(burst8, strlen(burst8), "in", &strict, &csv, &n, &err), ENPU_ERR_PARSE);
  assert_null(csv);
  assert_non_null(strstr(err.msg, "in:4:1: expected rows in time order"));
  replay_trace *t = parse_ok("TIMESTAMP,ContextTokens,GeneratedTokens\n"
                             "2024-05-10 00:00:02.0+00:00,5,1\n"
                             "2024-05-10 00:00:01.0+00:00,6,1\n"
                             "2024-05-10 00:00:03.0+00:00,7,1\n"
                             "2024-05-10 00:00:00.5+00:00,8,1\n");
  assert_true(t->unsorted == 2 && t->first_unsorted_line == 3);
  assert_int_equal(t->requests[0].context_tokens, 8);
  assert_int_equal(t->requests[3].context_tokens, 7);
  replay_trace_free(t);
  t = parse_ok("TIMESTAMP,ContextTokens,GeneratedTokens\n2024-05-10 00:00:01.0,5,1\n2024-05-10 00:00:01.0,6,1\n");
  assert_true(t->unsorted == 0 && t->first_unsorted_line == 0);
  replay_trace_free(t);
}
