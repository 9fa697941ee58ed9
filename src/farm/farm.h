/* farm.h — the MPI plan farm (src/README.md): compile every bucket × policy of a job into
 * one HDF5 plan store, durably (journal + atomic checkpoints), incrementally (only what is
 * missing or stale is computed) and deterministically (the store does not depend on the
 * rank count, the completion order or a resume).
 *
 * farm_run is the whole program of every rank: rank 0 is the master (grid, graphs, task
 * DAG, journal, checkpoints, progress), ranks >= 1 are workers; with one rank the master
 * computes itself. It initialises MPI when nobody did (and then finalises it), so the
 * same call works under mpirun and as a plain process. Only the master writes files and
 * prints progress; every rank returns the same outcome. */
#ifndef ENPU_FARM_H
#define ENPU_FARM_H

#include <stdint.h>
#include <stdio.h>

#include "common.h"
#include "config.h"

/* A bucket added to the job's grid with --add-buckets. */
typedef struct {
  config_phase phase;
  int batch, seq;
} farm_bucket_spec;

typedef struct {
  const char *job_path;
  const char *store_path;            /* NULL: the job's `store` */
  const farm_bucket_spec *add;       /* extra buckets (kept in the store for reruns) */
  int nadd;
  double checkpoint_s;               /* store rewrite interval (default 60) */
  double lock_wait_s;                /* wait for another writer of the store (default
                                        STORE_LOCK_WAIT_S) */
  double progress_s;                 /* progress line interval off a TTY (default 10) */
  const char *results_dir;           /* summary.md (and validation.md) go to
                                        <results_dir>/<job>/; NULL: beside the store */
  int quiet;                         /* no progress lines */
  const char *capacity_factor;       /* NULL, or the job's MoE capacity factor replaced
                                        (config_job_set_capacity_factor) on every rank */
  FILE *log;                         /* progress and notes (stderr when NULL) */
} farm_options;

void farm_options_default(farm_options *o);

typedef enum {
  FARM_DONE = 0,        /* every task done */
  FARM_FAILED = 1,      /* finished, some tasks failed (recorded in the store) */
  FARM_INTERRUPTED = 3  /* SIGTERM/SIGUSR1: checkpointed, resumable */
} farm_outcome;

typedef struct {
  farm_outcome outcome;
  int input_error;                    /* farm_run failed before anything was written */
  int rank, ranks;                    /* this process, and the world size */
  char job[CONFIG_NAME_LEN];
  char store_path[CONFIG_PATH_LEN];
  int64_t buckets_ok, buckets_infeasible, buckets_failed; /* per bucket × policy */
  int64_t unique_ops[CONFIG_NPOLICY]; /* distinct op signatures per policy */
  int policies[CONFIG_NPOLICY];       /* the job's policies (config_policy) */
  int npolicies;
  int64_t tasks_total;                /* tasks this run had to do: */
  int64_t op_tasks, bucket_tasks;     /*   Pareto searches and bucket walks */
  int64_t tasks_done, tasks_failed;
  int64_t reused_store, reused_journal; /* results taken from the store / the journal */
  int64_t recomputed;                 /* results computed by this run */
  int64_t evaluations;                /* op-level evaluations of this run */
  double core_s;                      /* compute seconds summed over ranks */
  double wall_s;
  double master_cpu_s;                /* CPU time of rank 0 (setup, scheduling, journal,
                                         checkpoints; with one rank also the compute) */
} farm_summary;

/* Run the farm (every rank calls it). Master-side input errors (bad job, bad added
 * bucket, unreadable store) are returned as ENPU_ERR_* on every rank with nothing
 * written; task failures are not errors (outcome FARM_FAILED).
 * @return 0 with *sum filled, or a negative ENPU_ERR_* (err names the problem). */
int farm_run(const farm_options *o, farm_summary *sum, enpu_err *err);

/* The summary as Markdown (what summary.md holds and the CLI prints). */
void farm_summary_print(const farm_summary *s, FILE *out);

#endif /* ENPU_FARM_H */
