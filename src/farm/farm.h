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
#include "store.h"

/* A bucket added to the job's grid with --add-buckets. */
typedef struct {
  config_phase phase;
  int batch, seq;
} farm_bucket_spec;

struct farm_summary; /* below */

/* A job at the end of its run, as farm_options.finish_job sees it: rank 0, after the
 * last checkpoint, with the store's writer lock still held by the farm. */
typedef struct {
  const config_job *job;
  const char *job_path;           /* as given */
  const char *store_path;         /* resolved */
  store_lock *lock;               /* the store's writer lock (validate_args.lock) */
  const struct farm_summary *sum; /* outcome and counts filled */
} farm_finished_job;

typedef struct {
  const char *const *job_paths; /* the jobs of the run, each into its own store */
  int njobs;                    /* >= 1 */
  const char *store_path;       /* NULL: the job's `store` (one job only) */
  const farm_bucket_spec *add;  /* extra buckets (kept in the store for reruns; one
                                   job only) */
  int nadd;
  double checkpoint_s;      /* store rewrite interval (default 60) */
  double lock_wait_s;       /* wait for another writer of the store (default
                               STORE_LOCK_WAIT_S) */
  double progress_s;        /* progress line interval off a TTY (default 10) */
  const char *results_dir;  /* two jobs of one run must not share a name when
                               it is set (their results would mix); finish_job
                               puts them there */
  double batch_s;           /* seconds of work per task batch (0: one task);
                               < 0 (the default): adaptive, at least 5 ms and more
                               beyond 50 workers so that messages take at most a
                               quarter of rank 0 */
  int quiet;                /* no progress lines (warnings are always printed) */
  int replace;              /* a store of another job (name, model, chip or cluster)
                               is replaced instead of refused */
  const char *task_log;     /* CSV of every task this run computes (job, kind,
                               policy, wall and CPU seconds, evaluations, result
                               bytes plain and packed), written by rank 0; NULL:
                               none */
  int point;                /* -1 (default): every policy of the job; k >= 0: only its
                               policies on sweep point k (0: the job's chip), e.g. one
                               Slurm array task per point (one job only) */
  const char *const *reuse; /* stores whose results are taken as known before any task
                               (the per-point stores of such tasks; one job only) */
  int nreuse;
  const char *capacity_factor; /* NULL, or every job's MoE capacity factor replaced
                                  (config_job_set_capacity_factor) on every rank */
  const char *cache_dir;       /* the operator-result cache shared by farms (cache.h;
                                  rank 0 only): consulted before a task is queued,
                                  filled as results arrive; NULL: none */
  int64_t cache_max_bytes;     /* pruned to this size (least recently used first) at
                                  the end of a run that stored entries; 0: no limit */
  double worker_timeout_s;     /* a worker that holds a batch longer than this (or 10 x
                                  the longest batch so far, or its estimate, when
                                  longer) is silent: said on the log, its tasks go to
                                  the others, its late results are ignored; still
                                  silent at the end, the ranks are aborted (status:
                                  abort_status) once the stores are checkpointed.
                                  0: never (default FARM_WORKER_TIMEOUT_S) */
  FILE *log;                   /* progress and notes (stderr when NULL) */
  /* Rank 0 calls it with every job's summary (NULL: none printed) before the ranks leave
   * farm_run: printed after it, a worker exiting first with a non-zero status can make
   * mpirun kill rank 0 mid-print. print_user is its last argument. */
  void (*print_summaries)(const struct farm_summary *sums, int njobs, void *print_user);
  /* Rank 0 calls it with the run's error (NULL: none printed), for the same reason:
   * the workers leave farm_run with the error's status right after, and mpirun kills a
   * rank 0 that has not printed yet (a disk-full message lost). print_user is its
   * last argument. */
  void (*print_error)(const enpu_err *err, void *print_user);
  void *print_user;
  /* Rank 0 calls it for every job at the end of the run (NULL: nothing), before the
   * ranks leave farm_run so that no worker exits first: the CLI writes summary.md and
   * runs the job's validation there. A negative return is the run's error.
   * finish_user is its second argument. */
  int (*finish_job)(const farm_finished_job *f, void *finish_user, enpu_err *err);
  void *finish_user;
  /* The exit status of every rank when rank 0 aborts them because a worker is still
   * silent at the end (farm_run does not return then): rc is the run's error (0 or a
   * negative ENPU_ERR_*), interrupted is set when a stop signal ended the work before
   * every task was done. The caller maps them as it maps farm_run's return, so the abort
   * keeps what the run would have said (interrupted, the environment refused). NULL:
   * status 1. print_user is its last argument. */
  int (*abort_status)(int rc, int interrupted, void *print_user);
} farm_options;

/* The default worker timeout: far beyond any batch's own time (5 to 50 ms, 0.3 s at
 * 3,000 ranks; an `ideal` task's seconds are covered by the 10 x rule), and short
 * against a Slurm time limit, so a frozen node costs minutes, not the allocation. */
#define FARM_WORKER_TIMEOUT_S 600.0

void farm_options_default(farm_options *o);

typedef enum {
  FARM_DONE = 0,       /* every task done */
  FARM_FAILED = 1,     /* finished, some tasks failed (recorded in the store) */
  FARM_INTERRUPTED = 3 /* SIGTERM/SIGUSR1: checkpointed, resumable */
} farm_outcome;

enum { FARM_WARNINGS_MAX = 8, FARM_WARNING_LEN = 512 };
enum { FARM_CHANGES_MAX = 16, FARM_CHANGE_PATH_LEN = 96, FARM_CHANGE_VALUE_LEN = 64 };

/* One input field that differs from the previous store's provenance: its JSON path
 * ("model.layers", "job.slacks"; an array of numbers or strings is one field) and its
 * values before and now as compact JSON ("(none)": absent; long values are cut with
 * "..."). Chip tables outside the chip file and the cost model are named by their hash. */
typedef struct {
  char path[FARM_CHANGE_PATH_LEN];
  char before[FARM_CHANGE_VALUE_LEN], now[FARM_CHANGE_VALUE_LEN];
} farm_change;

typedef struct farm_summary {
  farm_outcome outcome;
  int input_error; /* farm_run failed before anything was written */
  int rank, ranks; /* this process, and the world size */
  char job[CONFIG_NAME_LEN];
  char store_path[CONFIG_PATH_LEN];
  int64_t buckets_ok, buckets_infeasible, buckets_failed;  /* per bucket × policy */
  int64_t unique_ops[CONFIG_MAX_POLICIES];                 /* distinct op signatures per job policy
                                                              (epoch policies: 0, their buckets search) */
  uint32_t policies[CONFIG_MAX_POLICIES];                  /* the job's policies (config_policy_spec_code) */
  char policy_names[CONFIG_MAX_POLICIES][CONFIG_NAME_LEN]; /* their store names (config_job_policy_name) */
  int npolicies;
  int variants;                   /* the job's sweep points (0: no sweep) */
  int64_t variant_ops;            /* op searches the points' policies need, */
  int64_t variant_reuse;          /*   of which the job's chip's op results serve (the point's values
                                     change nothing the op level reads) */
  int64_t tasks_total;            /* tasks this run had to do: */
  int64_t op_tasks, bucket_tasks; /*   Pareto searches and bucket walks, */
  int64_t part_tasks;             /*   parts of split Pareto searches (`ideal`) */
  int64_t tasks_done, tasks_failed;
  int64_t reused_store, reused_journal;        /* results taken from the store / the journal */
  int64_t resumed_ops;                         /* split op searches the journal held part of */
  int64_t validation_kept, validation_dropped; /* the previous store's validation rows the
                                                  last checkpoint carried over / dropped
                                                  (their plans changed or are gone) */
  int64_t replay_kept, replay_dropped;         /* the same for its validation_replay rows */
  int64_t recomputed;                          /* results computed by this run */
  int cache_used;                              /* a cache was given (farm_options.cache_dir) */
  int64_t cache_hits_op, cache_hits_bucket;    /* results the cache held (not computed) */
  int64_t cache_misses;                        /* tasks looked up and not found */
  int64_t cache_damaged;                       /* entries that failed their checks:
                                                  removed, recomputed */
  int64_t cache_stored;                        /* results this run added to it */
  int had_store;                               /* a previous store of this job was read */
  int nchanges;                                /* input fields changed since it was
                                                  farmed (the first FARM_CHANGES_MAX kept) */
  farm_change changes[FARM_CHANGES_MAX];
  int64_t evaluations;                      /* op-level evaluations of this run */
  double core_s;                            /* compute seconds summed over ranks */
  double cpu_s;                             /* CPU seconds of the tasks, summed over ranks */
  double policy_cpu_s[CONFIG_MAX_POLICIES]; /* the same per job policy (op tasks count
                                               for the first policy with that op level) */
  double wall_s;
  double master_cpu_s;  /* CPU time of rank 0 (setup, scheduling, journal,
                           checkpoints; with one rank also the compute) */
  double master_rss_mb; /* rank 0's peak resident memory */
  int64_t batches;      /* task batches rank 0 handed out (whole run) */
  int64_t duplicates;   /* results dropped because another rank's came first (a rank
                           called silent that answered late) */
  int jobs;             /* jobs of the run (the figures above are this one's,
                           the times and rank 0's use the whole run's) */
  /* What the run had to distrust and recompute (a damaged journal or store): printed on
   * the log whatever farm_options.quiet says, and kept here for the summary. The first
   * FARM_WARNINGS_MAX; nwarnings counts them all. */
  int nwarnings;
  char warnings[FARM_WARNINGS_MAX][FARM_WARNING_LEN];
} farm_summary;

/* Run the farm (every rank calls it) on o->njobs jobs at once: one task queue over all
 * of them (longest first), each job into its own store with its own lock, journal and
 * checkpoints (its summary.md and validation are o->finish_job's). Master-side input errors (bad job, bad added
 * bucket, unreadable store, two jobs on one store) are returned as ENPU_ERR_* on every
 * rank with nothing written; task failures are not errors (outcome FARM_FAILED).
 * It may not return: a worker still silent at the end (farm_options.worker_timeout_s)
 * could never finalize MPI, so once the stores are checkpointed and the summaries and
 * error printed rank 0 calls MPI_Abort on MPI_COMM_WORLD with o->abort_status's status,
 * which ends every rank, also when the caller initialised MPI itself.
 * @return 0 with sums[0..njobs-1] filled, or a negative ENPU_ERR_* (err names the
 * problem; sums[0].rank and input_error are set). */
int farm_run(const farm_options *o, farm_summary *sums, enpu_err *err);

/* Stop signals (SIGTERM, SIGINT, SIGUSR1). From farm_signals_catch on, for the rest of
 * the process, each one only sets the farm's stop flag (the process's one global), so a
 * rank is never killed by one, whatever phase it is in: a command calls it first thing.
 * farm_run acts on the flag: a signal before or during the tasks checkpoints and ends
 * the run FARM_INTERRUPTED (a signal that came before farm_run counts too); one that
 * comes after every task was done (final checkpoint, finish_job, summaries) stops
 * nothing: the run finishes with the outcome of its work, since a resume would find
 * nothing to do. Without farm_signals_catch, farm_run catches them for its own
 * duration and restores the caller's handlers. */
void farm_signals_catch(void);

/* The stop flag farm_signals_catch's handlers set (0, or the last signal's number), for
 * another command that catches the signals the same way and polls it (enpu validate
 * passes it as validate_args.stop). */
const volatile sig_atomic_t *farm_stop_flag(void);

/* The MPI this build was compiled against ("Open MPI 4.1.4, MPI 3.1": Open MPI's
 * version macros when mpi.h has them, the standard's otherwise) into out[len]. Needs no
 * MPI_Init. */
void farm_mpi_version(char *out, size_t len);

/* The summary as Markdown (what summary.md holds and the CLI prints). */
void farm_summary_print(const farm_summary *s, FILE *out);
/* Its last section alone: the input fields changed since the previous store was farmed,
 * one line each, with the tasks recomputed (nothing when there was no store). */
void farm_changes_print(const farm_summary *s, FILE *out);

#endif /* ENPU_FARM_H */
