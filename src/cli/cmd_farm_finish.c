/* cmd_farm_finish.c — what `enpu farm` does with each job at the end of its run
 * (farm_options.finish_job, called by rank 0 before the ranks leave farm_run): its
 * summary.md, and unless the run was interrupted the job's `validation` section, both
 * beside the store or under --results DIR/<job>/. */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "cli_internal.h"
#include "farm.h"
#include "validate.h"

/* Where a result file of this run goes: DIR/<job>/NAME with --results DIR, else NAME
 * beside the store (the job name is a plain name: config_job_load checks it). The
 * directory is created. */
static int result_path(const farm_options *o, const farm_finished_job *f, const char *name, char *out, size_t cap,
                       enpu_err *err) {
  char dir[CONFIG_PATH_LEN + CONFIG_NAME_LEN + 8];
  if (o->results_dir) snprintf(dir, sizeof dir, "%s/%s", o->results_dir, f->job->name);
  else snprintf(dir, sizeof dir, "%.*s", (int)(strrchr(f->store_path, '/') - f->store_path), f->store_path);
  ENPU_FORWARD(enpu_mkdir_p(dir[0] ? dir : "/", err));
  ENPU_RETURN_IF(snprintf(out, cap, "%s/%s", dir, name) >= (int)cap, err, ENPU_ERR_RANGE, "path too long: %s/%s",
                 dir, name);
  return 0;
}

static int write_summary_md(const farm_options *o, const farm_finished_job *f, enpu_err *err) {
  char path[CONFIG_PATH_LEN + CONFIG_NAME_LEN + 32];
  ENPU_FORWARD(result_path(o, f, "summary.md", path, sizeof path, err));
  FILE *out = NULL;
  ENPU_FORWARD(enpu_file_create(path, &out, err));
  farm_summary_print(f->sum, out);
  return enpu_file_publish(out, path, 0, err);
}

/* The job's `validation` section: `enpu validate` on the final store with the job's
 * cluster, under the farm's lock. A failing plan or a validation that cannot run is an
 * error of the farm; the store then stays the final checkpoint (validate_run rewrites it
 * only after everything succeeded). */
static int run_validation(const farm_options *o, const farm_finished_job *f, enpu_err *err) {
  const config_validation *val = &f->job->validation;
  if (!val->enabled || f->sum->outcome == FARM_INTERRUPTED) return 0;
  char report[CONFIG_PATH_LEN + CONFIG_NAME_LEN + 32];
  ENPU_FORWARD(result_path(o, f, "validation.md", report, sizeof report, err));
  FILE *log = o->log ? o->log : stderr;
  validate_args a;
  validate_args_default(&a);
  a.store_path = f->store_path, a.lock = f->lock, a.trace_path = val->trace_path, a.job = f->job;
  a.job_source = f->job_path, a.cluster = &f->job->cluster, a.report_path = report;
  a.sample = val->sample, a.seed = val->seed, a.log = o->quiet ? NULL : log;
  a.reuse_kept = true; /* rows this run kept describe unchanged plans: no need to redo them */
  validate_outcome out;
  int rc = validate_run(&a, &out, err);
  if (rc < 0) {
    enpu_err_prefix(err, "validation: ");
    return rc;
  }
  if (!o->quiet)
    fprintf(
        log,
        "farm: validation: %zu of %zu sampled plans passed (%.2f s; taken from the store: %zu of %zu buckets%s%s), "
        "%s\n",
        out.passed, out.plans, out.total_s, out.reused_buckets, out.buckets,
        out.reused_replay ? ", the replay" : "", out.unchanged ? "; store unchanged" : "", report);
  ENPU_RETURN_IF(out.failed, err, ENPU_ERR_INTERNAL,
                 "validation: %zu of %zu sampled plans failed (see %s); first: %s", out.failed, out.plans, report,
                 out.first_failure);
  return 0;
}

int cli_farm_finish_job(const farm_finished_job *f, void *options, enpu_err *err) {
  const farm_options *o = options;
  ENPU_FORWARD(write_summary_md(o, f, err));
  return run_validation(o, f, err);
}
