/* cmd_farm.c — `[mpirun -np N] enpu farm JOB [JOB...] [--store PATH] [--add-buckets
 * phase=P,batch=B,seq=S]... [--checkpoint-s SEC] [--lock-wait SEC] [--progress-s SEC]
 * [--results DIR] [--batch-s SEC] [--task-log PATH] [--quiet] [--capacity-factor F]`:
 * compile each job's whole grid into its HDF5 plan store with the farm module, all jobs
 * sharing the ranks. Every rank runs this command; only rank 0 prints. With several
 * jobs the exit status is the worst of theirs.
 *
 * Exit status: 0 all done; 1 finished but some tasks failed (recorded in the store), or
 * the farm broke while running; 2 usage or input error (nothing written); 3 interrupted
 * by SIGTERM/SIGINT/SIGUSR1 after a checkpoint — running the same command again resumes;
 * 4 the environment refused (disk full, I/O error, the store locked by another writer):
 * the published store is intact and the same command resumes once that is fixed.
 * Under mpirun only SIGUSR1 gives 3: mpirun turns SIGTERM/SIGINT into its own exit 1
 * (the farm still syncs its journal and checkpoints in the second it is given). */
#include <stdlib.h>
#include <string.h>

#include "cli_internal.h"
#include "farm.h"

static void usage(FILE *out) {
  fprintf(out,
          "usage: [mpirun -np N] enpu farm JOB [JOB...] [--store PATH] [--add-buckets phase=P,batch=B,seq=S]...\n"
          "                    [--checkpoint-s SEC] [--lock-wait SEC] [--progress-s SEC] [--results DIR]\n"
          "                    [--batch-s SEC] [--task-log PATH] [--quiet] [--capacity-factor worst|F]\n"
          "\n"
          "Compile every bucket x policy of JOB into one HDF5 plan store. Rank 0 schedules,\n"
          "journals and checkpoints; the other ranks compute (one rank: it does both).\n"
          "Only what the store and its journal do not already hold is computed. Several\n"
          "jobs share the ranks (one queue, longest task first), each into its own store.\n"
          "\n"
          "  --store PATH        the store (default: the job's \"store\"); journal: PATH.journal\n"
          "                      (one job only)\n"
          "  --add-buckets SPEC  extra bucket, e.g. phase=decode,batch=24,seq=3000 (repeatable;\n"
          "                      kept in the store, so later runs keep compiling it; one job)\n"
          "  --checkpoint-s SEC  rewrite the store every SEC seconds (default 60; longer when\n"
          "                      a rewrite takes more than a tenth of that)\n"
          "  --lock-wait SEC     wait up to SEC seconds for another writer of the store (a farm,\n"
          "                      enpu validate) to finish (default 30); then exit 4 naming it\n"
          "  --progress-s SEC    progress line interval when stderr is not a terminal (default 10)\n"
          "  --results DIR       summary.md goes to DIR/<job>/ (default: beside the store)\n"
          "  --batch-s SEC       seconds of work in a task batch (0: one task; default: 5 to\n"
          "                      50 ms, at least 100 us a worker beyond 50 workers)\n"
          "  --task-log PATH     a CSV line per task computed: job, kind (op, part, bucket),\n"
          "                      policy, wall and CPU seconds, evaluations, result bytes\n"
          "                      (plain, packed)\n"
          "  --quiet             no progress lines\n"
          "  --capacity-factor F the job's MoE capacity factor replaced (\"worst\" or 1..E/k):\n"
          "                      one store per factor sweeps it (give each its own --store);\n"
          "                      the store records the factor compiled\n"
          "  -h, --help          show this help\n"
          "\n"
          "Exit status: 0 done, 1 some tasks failed, 2 usage or input error, 3 interrupted by\n"
          "SIGTERM/SIGINT/SIGUSR1 (checkpointed; run the same command again to resume), 4 the\n"
          "environment refused (disk full, I/O error, store locked by another writer; the\n"
          "store is intact). Under mpirun send SIGUSR1 to mpirun: it forwards it to the ranks\n"
          "(mpirun answers SIGTERM/SIGINT with its own exit 1; the work is kept all the same).\n");
}

/* "phase=P,batch=B,seq=S" in any order; 0 or -1. */
static int parse_bucket(const char *spec, farm_bucket_spec *b) {
  char buf[256];
  if (strlen(spec) >= sizeof buf) return -1;
  strcpy(buf, spec);
  int have = 0;
  for (char *save = NULL, *kv = strtok_r(buf, ",", &save); kv; kv = strtok_r(NULL, ",", &save)) {
    char *eq = strchr(kv, '=');
    if (!eq) return -1;
    *eq = '\0';
    const char *v = eq + 1;
    if (!strcmp(kv, "phase") && config_phase_parse(v, &b->phase) == 0) have |= 1;
    else if (!strcmp(kv, "batch") && cli_parse_int(v, &b->batch) == 0 && b->batch > 0) have |= 2;
    else if (!strcmp(kv, "seq") && cli_parse_int(v, &b->seq) == 0 && b->seq > 0) have |= 4;
    else return -1;
  }
  return have == 7 ? 0 : -1;
}

static int parse_seconds(const char *s, double *out) {
  char *end;
  const double v = strtod(s, &end);
  if (end == s || *end != '\0' || !(v > 0) || v > 1e9) return -1;
  *out = v;
  return 0;
}

/* @return -1 to go on, or the exit status (0 after --help, 2 on a usage error). */
static int parse_args(int argc, char **argv, farm_options *o, farm_bucket_spec *add,
                      const char **jobs) {
  for (int i = 1; i < argc; i++) {
    const char *s = argv[i];
    if (!strcmp(s, "--help") || !strcmp(s, "-h")) {
      usage(stdout);
      return 0;
    }
    if (!strcmp(s, "--quiet")) {
      o->quiet = 1;
      continue;
    }
    const int takes = !strcmp(s, "--store") || !strcmp(s, "--add-buckets") ||
                      !strcmp(s, "--checkpoint-s") || !strcmp(s, "--progress-s") ||
                      !strcmp(s, "--results") || !strcmp(s, "--lock-wait") || !strcmp(s, "--task-log") ||
                      !strcmp(s, "--batch-s") || !strcmp(s, "--capacity-factor");
    if (takes) {
      if (i + 1 >= argc) return cli_usage_error("farm", usage, "option '%s' needs a value", s);
      const char *v = argv[++i];
      if (!strcmp(s, "--store")) {
        o->store_path = v;
      } else if (!strcmp(s, "--capacity-factor")) {
        o->capacity_factor = v; /* checked against the model when the job loads */
      } else if (!strcmp(s, "--results")) {
        o->results_dir = v;
      } else if (!strcmp(s, "--task-log")) {
        o->task_log = v;
      } else if (!strcmp(s, "--add-buckets")) {
        if (parse_bucket(v, &add[o->nadd]) < 0)
          return cli_usage_error("farm", usage,
                                 "--add-buckets expects phase=prefill|decode,batch=B,seq=S with "
                                 "positive B and S, got '%s'", v);
        o->nadd++;
      } else if (!strcmp(s, "--lock-wait") && (cli_parse_double(v, &o->lock_wait_s) < 0 || o->lock_wait_s < 0 ||
                                               o->lock_wait_s > 1e9)) {
        return cli_usage_error("farm", usage, "--lock-wait expects seconds >= 0, got '%s'", v);
      } else if (!strcmp(s, "--batch-s") && (cli_parse_double(v, &o->batch_s) < 0 || o->batch_s < 0 ||
                                             o->batch_s > 3600)) {
        return cli_usage_error("farm", usage, "--batch-s expects seconds in [0, 3600], got '%s'", v);
      } else if (strcmp(s, "--lock-wait") && strcmp(s, "--batch-s") &&
                 parse_seconds(v, !strcmp(s, "--checkpoint-s") ? &o->checkpoint_s : &o->progress_s) < 0) {
        return cli_usage_error("farm", usage, "%s expects a positive number of seconds, got '%s'",
                               s, v);
      }
    } else if (s[0] == '-' && s[1] != '\0') {
      return cli_usage_error("farm", usage, "unknown option '%s'", s);
    } else {
      jobs[o->njobs++] = s;
    }
  }
  if (!o->njobs) return cli_usage_error("farm", usage, "missing job file");
  if (o->njobs > 1 && (o->store_path || o->nadd))
    return cli_usage_error("farm", usage, "--store and --add-buckets take a single job");
  return -1;
}

int cli_cmd_farm(int argc, char **argv) {
  farm_options o;
  farm_options_default(&o);
  /* Each --add-buckets takes two argv slots, so argc bounds their number, and that of
   * the jobs. */
  farm_bucket_spec *add = calloc((size_t)argc, sizeof *add);
  const char **jobs = calloc((size_t)argc, sizeof *jobs);
  farm_summary *sums = calloc((size_t)argc, sizeof *sums);
  if (!add || !jobs || !sums) {
    free(add), free(jobs), free(sums);
    return cli_fail("farm", "out of memory");
  }
  o.add = add;
  o.job_paths = jobs;
  o.summary_out = stdout;
  o.finish_job = cli_farm_finish_job, o.finish_user = &o;
  int st = parse_args(argc, argv, &o, add, jobs);
  enpu_err err = {0};
  const int rc = st >= 0 ? 0 : farm_run(&o, sums, &err);
  if (st < 0 && rc < 0) {
    if (sums[0].rank == 0) cli_fail("farm", err.msg);
    st = cli_exit_status(err.code, sums[0].input_error ? CLI_EXIT_USAGE : CLI_EXIT_FAILED);
  } else if (st < 0) {
    st = 0; /* rank 0 printed the summaries (farm_options.summary_out) */
    for (int j = 0; j < o.njobs; j++)
      if ((int)sums[j].outcome > st) st = (int)sums[j].outcome;
  }
  free(add);
  free(jobs);
  free(sums);
  return st;
}
