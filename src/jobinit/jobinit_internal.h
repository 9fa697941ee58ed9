/* jobinit_internal.h — what jobinit.c shares with the files under it: the run's context
 * (inputs, sorted lengths, the draft job its rules are measured on) and the steps of
 * jobinit_fit.c (parallelism, NoDVFS latencies) and jobinit_write.c (the files' text). */
#ifndef ENPU_JOBINIT_INTERNAL_H
#define ENPU_JOBINIT_INTERNAL_H

#include "jobinit.h"
#include "replay.h"

typedef struct {
  const jobinit_options *o;
  jobinit_result *r;
  replay_trace *trace;
  int32_t *ctx, *total; /* each request's prefill and decode length, sorted */
  char *model_json;     /* the model file's text */
  char model_name[CONFIG_NAME_LEN];
  bool moe;                                                   /* the model has routed experts */
  char chip_rel[CONFIG_PATH_LEN], trace_rel[CONFIG_PATH_LEN]; /* as the job names them */
  config_job *job;                                            /* the draft, loaded from out_dir */
  /* NoDVFS time per seq bucket: a batch-1 prefill (TTFT), a full-batch decode step */
  double bucket_ms[CONFIG_NPHASE][JOBINIT_MAX_AXIS];
} jobinit_ctx;

/* The chip count the rules choose (or the caller's tp/ep), set in c->job's phases and
 * c->r with the memory of each phase's largest bucket. @return 0, ENPU_ERR_INFEASIBLE. */
int jobinit_choose_parallel(jobinit_ctx *c, enpu_err *err);

/* NoDVFS time of one forward pass of bucket (batch, seq) of `phase` on the job's node, in ms. */
int jobinit_nodvfs_ms(const config_job *job, config_phase phase, int batch, int seq, double *ms, enpu_err *err);

/* The job's and the cluster's text (malloc'd) from c->r; the job names `cluster` (a
 * file beside it). */
int jobinit_job_text(const jobinit_ctx *c, const char *cluster, char **out, enpu_err *err);
int jobinit_cluster_text(const jobinit_ctx *c, char **out, enpu_err *err);

/* Write text to path unless the file already holds exactly it. */
int jobinit_write_if_changed(const char *path, const char *text, enpu_err *err);

/* `to` (an existing file) as a path relative to the directory `from_dir` (existing). */
int jobinit_relative(const char *from_dir, const char *to, char *out, size_t cap, enpu_err *err);

#endif /* ENPU_JOBINIT_INTERNAL_H */
