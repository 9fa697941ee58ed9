/* test_farm_sweep.c — the keys of a sweep job's chip variants: a point whose values the
 * op level does not read (the V/f transition step, power gating) keys its ops as the job
 * chip does, under the job chip's policy code (its op results are reused exactly); a
 * point whose values it reads (the state count) keys them apart; every point's bucket
 * input hash differs from the job chip's and from every other point's. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "farm_task_internal.h"
#include "test_farm.h"

static config_job *load_sweep_job(char *path, size_t cap) {
  test_write_llama_job(path, cap, "fs", "\"enpu-all\", \"pg+enpu-all\"",
                       ",\n  \"sweep\": { \"points\": [ { \"ivr.step_ns\": 40 }, { \"clock.states\": 17 },\n"
                       "                            { \"gating.hbm.wake_ns\": 70 } ] }");
  config_job *job = NULL;
  enpu_err err = {0};
  if (config_job_load(path, &job, &err) < 0) fail_msg("%s", err.msg);
  return job;
}

void test_sweep_keys(void **state) {
  (void)state;
  char path[256];
  config_job *job = load_sweep_job(path, sizeof path);
  assert_int_equal(job->policy_count, 2 * 4);
  graph *g = NULL;
  enpu_err err = {0};
  if (graph_build(job, CONFIG_DECODE, 8, 2048, &g, &err) < 0) fail_msg("%s", err.msg);
  const graph_op *op = graph_op_at(g, 0);
  /* policies: enpu-all, pg+enpu-all, then the same per point (1 step, 2 states, 3 gating) */
  uint64_t op_key[8], bucket[8];
  for (int k = 0; k < job->policy_count; k++) {
    search_options opt;
    search_options_for_job(&opt, job, &job->policies[k]);
    op_key[k] = search_op_key(job, &job->policies[k], &opt, op);
    bucket[k] = farm_bucket_input_hash(job, &job->policies[k], &opt, g);
  }
  const uint32_t base = config_policy_spec_code(&job->policies[0]);
  assert_int_equal(op_key[2], op_key[0]); /* the transition step: the job chip's op keys */
  assert_int_equal(search_op_policy(job, &job->policies[2]), base);
  assert_true(op_key[4] != op_key[0]); /* the state count: its own */
  assert_int_equal(search_op_policy(job, &job->policies[4]), config_policy_spec_code(&job->policies[4]));
  assert_int_equal(op_key[6], op_key[0]); /* gating: the job chip's, for pg+ too */
  assert_int_equal(op_key[7], op_key[0]);
  assert_int_equal(search_op_policy(job, &job->policies[7]), base);
  for (int k = 0; k < job->policy_count; k++)
    for (int j = 0; j < k; j++) assert_true(bucket[k] != bucket[j]);
  graph_free(g);
  config_job_free(job);
  unlink(path);
}
