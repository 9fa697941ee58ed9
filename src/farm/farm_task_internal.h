/* farm_task_internal.h — the farm's tasks: the hashes that key results (op key, bucket
 * input hash), the byte format of task batches (master → worker) and result batches
 * (worker → master), and the executor that runs a batch on any rank. No MPI here: the
 * executor turns bytes into bytes, so the single-rank master runs exactly what a worker
 * runs.
 *
 * Invariants:
 *  - search_op_key (search.h) and farm_bucket_input_hash depend only on the job's content (graph op
 *    signature, chip tables, cost-model version, policy, search options, slacks), never
 *    on paths, ranks or time: equal keys give bit-identical results.
 *  - Task and result batches are produced and consumed by the same binary; the reader
 *    still checks every length and count (a bad batch is ENPU_ERR_FORMAT).
 *  - A task that fails becomes a failure record with its message; only a malformed batch
 *    makes farm_exec_batch fail. */
#ifndef ENPU_FARM_TASK_INTERNAL_H
#define ENPU_FARM_TASK_INTERNAL_H

#include <stddef.h>
#include <stdint.h>

#include "farm_internal.h"
#include "graph.h"
#include "search.h"

enum { FARM_TASK_OP = 1, FARM_TASK_BUCKET = 2, FARM_TASK_PART = 3 };
enum { FARM_RES_FAILED = 0 }; /* result kind of a failed task; else FARM_REC_OP/BUCKET/PART */

/* A bucket task's result as a store bucket bundle (farm_convert.c; its ops already set):
 * `sr` over its units, the sets per bundle op and each unit's op, the task's bucket and
 * input hash. @return 0, ENPU_ERR_NOMEM, ENPU_ERR_INTERNAL or ENPU_ERR_FORMAT (a walk the
 * reader would reject). */
typedef struct {
  const search_bucket_result *sr; /* its units: graph ops or epochs */
  const search_pareto *sets;      /* per key */
  const int *key_of;              /* per unit */
  const graph *g;
  int32_t phase, batch, seq;
  uint64_t input_hash;
} farm_convert_in;
int farm_convert_bucket(const farm_convert_in *in, store_bucket_bundle *r, enpu_err *err);

/* Input hash of one bucket under one policy (with gating): its ops' keys and
 * multiplicities in execution order, its segments, the slacks, the chip, the options. */
uint64_t farm_bucket_input_hash(const config_job *job, const config_policy_spec *policy, const search_options *opt,
                                const graph *g);

/* Append to a task batch, for job `job` (its index in the run's job list): an op task
 * (part < 0), a part task (part 0..SEARCH_EXACT_PARTS − 1 of the op's exact search), or a
 * bucket task (with the Pareto sets of its distinct ops, sorted by key, each an encoded
 * op record: farm_op_result_encode, or the bytes a worker sent; none for an epoch
 * policy, whose bucket task searches its epochs). `policy` is a policy code
 * (config_policy_spec_code; an op's without gating). @return 0 or ENPU_ERR_NOMEM. */
int farm_task_put_op(farm_buf *b, uint32_t job, uint32_t id, uint32_t policy, uint64_t key, config_phase phase,
                     int batch, int seq, int op_index, int part, enpu_err *err);
int farm_task_put_bucket(farm_buf *b, uint32_t job, uint32_t id, uint32_t policy, uint64_t input_hash,
                         config_phase phase, int batch, int seq, const farm_buf *const *sets, uint32_t nsets,
                         enpu_err *err);

/* The op result of an op's parts (all SEARCH_EXACT_PARTS of them, any order): the merged
 * set (search_pareto_merge), each point with the per-slot energies its part computed,
 * evaluations summed. Independent of the parts' order. */
int farm_merge_parts(const farm_op_result *parts, int n, farm_op_result *out, enpu_err *err);

/* One result of a result batch; payload (a codec record), frame (the same record packed,
 * farm_zframe_pack: what the journal keeps) and message point into it. */
typedef struct {
  uint32_t job;
  uint32_t id;
  uint32_t kind;    /* FARM_REC_OP, FARM_REC_BUCKET, FARM_REC_PART or FARM_RES_FAILED */
  double compute_s; /* wall seconds of the task */
  double cpu_s;     /* its thread's CPU seconds */
  uint64_t evaluations;
  const void *payload;
  size_t plain_bytes; /* of the record */
  const void *frame;
  size_t bytes; /* of the frame */
  char message[STORE_MSG_LEN];
} farm_task_result;

/* Read the result at *off of a result batch and advance *off.
 * @return 1 (a result), 0 (end of batch), ENPU_ERR_FORMAT. */
int farm_result_next(const void *data, size_t len, size_t *off, farm_task_result *r, enpu_err *err);

/* The executor: every job of the run, each with its cost and search context (jobs may
 * name different chips) and a small graph cache. */
typedef struct farm_exec farm_exec;

/* The jobs are loaded from `inputs` (the files rank 0 read, sealed: a worker opens no
 * file; NULL: the disk). capacity_factor: NULL, or every job's MoE capacity factor
 * replaced. */
int farm_exec_create(config_files *inputs, const char *const *job_paths, int njobs, const char *capacity_factor,
                     farm_exec **out, enpu_err *err);
void farm_exec_free(farm_exec *x); /* NULL no-op */

/* Run every task of a task batch, appending one result per task to `out`.
 * @return 0, or ENPU_ERR_FORMAT (malformed batch) / ENPU_ERR_NOMEM. */
int farm_exec_batch(farm_exec *x, const void *tasks, size_t bytes, farm_buf *out, enpu_err *err);

#endif /* ENPU_FARM_TASK_INTERNAL_H */
