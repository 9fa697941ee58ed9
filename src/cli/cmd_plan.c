/* cmd_plan.c — `enpu plan CONFIG.json --trace TRACE [--chip CHIP] [--np N]`: the whole
 * path from a published model config and a trace to validated plans, in RUNS/<name>/:
 * job init (in this process), the farm (mpirun of this binary, which validates the store
 * by the job's validation section), a replay of every policy on the trace and the report
 * (this binary again). Each step resumes or is skipped when nothing it reads changed:
 * the farm keeps its store, job init rewrites no file whose bytes are the same, and the
 * replay and the report are kept while the stamp of their inputs (inputs_hash, in their
 * directory's .inputs) is the same. */
#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "cli_internal.h"

typedef struct {
  cli_job_init_args init;
  const char *runs;
  int np, no_replay, json;
} plan_args;

static int plan_run(void *args);

static void plan_defaults(void *args) {
  plan_args *a = args;
  jobinit_options_default(&a->init.o);
  a->init.chip = CLI_DEFAULT_CHIP;
  a->init.from = -1;
  a->runs = "runs";
  const long cores = sysconf(_SC_NPROCESSORS_ONLN);
  a->np = cores > 1 ? (int)cores : 2;
}

/* clang-format off */
static const cli_opt plan_opts[] = {
    {.name = "trace", .type = CLI_STRING, .at = offsetof(plan_args, init.trace), .meta = "TRACE.csv", .flags = CLI_REQUIRED,
     .help = "the request trace: the replay's CSV, or a published layout with --from"},
    CLI_JOB_INIT_OPTS_AT(plan_args, init.),
    {.name = "np", .type = CLI_INT, .at = offsetof(plan_args, np), .meta = "N", .range = CLI_RANGE(1, 4096),
     .help = "the farm's MPI ranks (the default: this machine's cores, at least 2)"},
    {.name = "runs", .type = CLI_STRING, .at = offsetof(plan_args, runs), .meta = "DIR",
     .help = "everything goes to DIR/<name>/ (runs/ is ignored by git)"},
    {.name = "no-replay", .type = CLI_FLAG, .at = offsetof(plan_args, no_replay),
     .help = "stop after the farm's validation (no replay of every policy, no report)"},
    CLI_JSON_OPT(plan_args, "where each file is (the steps' own output goes to stderr)"),
};
static const cli_spec plan_spec = {.command = "plan", .run = plan_run, .init = plan_defaults,
                                   .pos = {"CONFIG.json", "model (Hugging Face config.json or model file)", 1, 1,
                                           offsetof(plan_args, init.model)},
                                   CLI_OPTS(plan_opts, plan_args)};
/* clang-format on */
const cli_spec *const cli_plan_specs[] = {&plan_spec, NULL};

typedef struct {
  char exe[4096], dir[CONFIG_PATH_LEN], store[CONFIG_PATH_LEN + 16], replay[CONFIG_PATH_LEN + 16];
  char report[CONFIG_PATH_LEN + 16], nodes[CONFIG_PATH_LEN + 16], np[16];
  double t0;
  /* A Ctrl-C reaches the whole foreground group. This process holds the stop signal
   * (SIGINT, unless it started ignored, as in a script's `enpu plan ... &`) blocked from
   * start to end, so it lives on to say how to resume, and it tells an interruption by the
   * signal it holds, not by a step's exit status (mpirun exits 1 when its ranks stop). A
   * child step gets the signal with the mask this process started with; a step of this
   * process (job init, the --from conversion, the node sizing) asks plan_stop_asked
   * between its units of work and returns ENPU_ERR_STOPPED. SIGQUIT (Ctrl-\) is not held:
   * it still kills at once. */
  sigset_t stop, mask;
  int sizing_asks; /* plan_sizing_stop's calls, for the nodes-round test hold */
} plan_paths;

/* Did a stop signal come? It waits, blocked: take it, so it is not delivered later. */
static bool plan_took_stop(const plan_paths *p) {
  const struct timespec now = {0, 0};
  bool took = false;
  while (sigtimedwait(&p->stop, NULL, &now) > 0) took = true;
  return took;
}

/* Is a stop signal pending (left pending: plan_took_stop takes it at the step's end)? */
static bool plan_stop_asked(void *ctx) {
  const plan_paths *p = ctx;
  sigset_t pending;
  return sigpending(&pending) == 0 && sigismember(&p->stop, SIGINT) && sigismember(&pending, SIGINT);
}

/* A test's hook (ENPU_PLAN_TEST_HOLD=STEP; STEP init or nodes: the ends of the steps of
 * this process; nodes-round: inside the node sizing, after its first replay): say so and
 * wait until a stop signal is pending, or SIGUSR2 comes (taken: the release of a test
 * whose stop signal is ignored), so that a test signals the plan in a step of its own
 * without racing it (as ENPU_FARM_TEST_HOLD does the farm). Unset, it does nothing. */
static void plan_test_hold(const plan_paths *p, const char *step_name) {
  const char *v = getenv("ENPU_PLAN_TEST_HOLD");
  if (!v || strcmp(v, step_name)) return;
  fprintf(stderr, "enpu plan: test hold at %s: waiting for a stop signal\n", step_name);
  fflush(stderr);
  sigset_t release, old;
  sigemptyset(&release), sigaddset(&release, SIGUSR2);
  sigprocmask(SIG_BLOCK, &release, &old);
  const struct timespec pause = {0, 10000000};
  while (!plan_stop_asked((void *)p) && sigtimedwait(&release, NULL, &pause) != SIGUSR2) continue;
  sigprocmask(SIG_SETMASK, &old, NULL);
}

/* The node sizing's question: plan_stop_asked, after the nodes-round hold on its first. */
static bool plan_sizing_stop(void *ctx) {
  plan_paths *p = ctx;
  if (p->sizing_asks++ == 0) plan_test_hold(p, "nodes-round");
  return plan_stop_asked(p);
}

/* rc, or CLI_EXIT_INTERRUPTED (and a line saying so) when a stop signal came during what. */
static int plan_stopped(const plan_paths *p, int rc, const char *what) {
  if (!plan_took_stop(p)) return rc;
  fprintf(stderr, "enpu plan: interrupted (a stop signal came during %s, which exited %d)\n", what, rc);
  return CLI_EXIT_INTERRUPTED;
}

/* Run argv as a child with stdout and stderr shared; @return its exit status (a signal's
 * death, or a stop signal received meanwhile: CLI_EXIT_INTERRUPTED), or CLI_EXIT_ENV when
 * it could not start. */
static int run_child(const plan_paths *p, char *const argv[], bool stdout_to_stderr) {
  fflush(stdout), fflush(stderr);
  const pid_t pid = fork();
  if (pid == 0) {
    sigprocmask(SIG_SETMASK, &p->mask, NULL);
    if (stdout_to_stderr) dup2(STDERR_FILENO, STDOUT_FILENO); /* --json: one document on stdout, ours */
    if (geteuid() == 0) /* Open MPI refuses root without its two confirmations (as make farm) */
      setenv("OMPI_ALLOW_RUN_AS_ROOT", "1", 0), setenv("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1", 0);
    execvp(argv[0], argv);
    fprintf(stderr, "enpu plan: cannot run %s: %s\n", argv[0], strerror(errno));
    _exit(CLI_EXIT_ENV);
  }
  int status = 0, rc = CLI_EXIT_INTERRUPTED;
  if (pid < 0) cli_fail("plan", "cannot start a process"), rc = CLI_EXIT_ENV;
  while (pid > 0 && waitpid(pid, &status, 0) < 0)
    if (errno != EINTR) {
      cli_fail("plan", "lost a child process");
      status = -1, rc = CLI_EXIT_ENV;
      break;
    }
  if (pid > 0 && status != -1 && WIFEXITED(status)) rc = WEXITSTATUS(status);
  return plan_stopped(p, rc, argv[0]);
}

/* What the replay and the report are made from: the bytes of the job, cluster, model
 * and chip files, and the trace's and this program's size and time (the plans are a
 * deterministic function of these, whatever the farm did to the store's file). */
static uint64_t inputs_hash(const plan_args *a, const jobinit_result *r, const char *exe) {
  enpu_hasher hs;
  enpu_hasher_init(&hs, 0x706c616e);
  const char *files[] = {r->job_path, r->cluster_path, r->model_path, a->init.chip};
  for (size_t i = 0; i < sizeof files / sizeof *files; i++) {
    char *text = NULL;
    size_t len = 0;
    enpu_err ignored = {0};
    if (enpu_read_file(files[i], &text, &len, &ignored) == 0) enpu_hasher_bytes(&hs, text, len);
    enpu_hasher_i64(&hs, (int64_t)len);
    free(text);
  }
  const char *stamped[] = {a->init.trace, exe};
  for (size_t i = 0; i < 2; i++) {
    struct stat st;
    if (stat(stamped[i], &st) == 0)
      enpu_hasher_i64(&hs, st.st_size), enpu_hasher_i64(&hs, st.st_mtim.tv_sec),
          enpu_hasher_i64(&hs, st.st_mtim.tv_nsec);
  }
  return enpu_hasher_digest(&hs);
}

/* Was the step whose outputs are in dir made from these inputs (its stamp, dir/.inputs)? */
static bool up_to_date(const char *dir, const char *output, uint64_t inputs) {
  char path[CONFIG_PATH_LEN + 32], want[32];
  snprintf(path, sizeof path, "%s/%s", dir, output);
  if (access(path, R_OK) != 0) return false;
  snprintf(path, sizeof path, "%s/.inputs", dir);
  snprintf(want, sizeof want, "%016llx\n", (unsigned long long)inputs);
  char *text = NULL;
  size_t len = 0;
  enpu_err ignored = {0};
  const bool same = enpu_read_file(path, &text, &len, &ignored) == 0 && strcmp(text, want) == 0;
  free(text);
  return same;
}

static int stamp(const char *dir, uint64_t inputs) {
  char path[CONFIG_PATH_LEN + 32], text[32];
  snprintf(path, sizeof path, "%s/.inputs", dir);
  snprintf(text, sizeof text, "%016llx\n", (unsigned long long)inputs);
  enpu_err err = {0};
  if (enpu_file_write(path, text, strlen(text), 0, &err) == 0) return 0;
  cli_fail("plan", err.msg);
  return cli_exit_status(err.code, CLI_EXIT_FAILED);
}

static void step(const plan_paths *p, int k, int n, const char *what) {
  fprintf(stderr, "enpu plan: [%d/%d] %s (%.1f s so far)\n", k, n, what, enpu_now_s() - p->t0);
}

static int step_farm(const plan_args *a, const jobinit_result *r, plan_paths *p) {
  step(p, 2, 5, "farm: compile every bucket x policy into the store, then validate it");
  char *argv[] = {"mpirun",    "-np",           p->np, "--oversubscribe", p->exe, "farm", (char *)r->job_path,
                  "--results", (char *)a->runs, NULL};
  return run_child(p, argv, a->json);
}

static int step_size(const plan_args *a, jobinit_result *r, plan_paths *p) {
  step(p, 3, 5,
       "nodes: replay the trace on the store's " ENPU_POLICY_DISPLAY_NODVFS " plans, grow a pool that misses");
  const uint64_t inputs = inputs_hash(a, r, p->exe);
  snprintf(r->sized_cluster_path, sizeof r->sized_cluster_path, "%s/cluster.json", p->nodes);
  if (up_to_date(p->nodes, "cluster.json", inputs)) {
    fprintf(stderr, "enpu plan: nodes: up to date, kept (%s/sizing.md)\n", p->nodes);
    return 0;
  }
  enpu_err err = {0};
  jobinit_options o = a->init.o;
  o.stop = (enpu_stop){plan_sizing_stop, p};
  if (jobinit_size_nodes(&o, r, p->store, JOBINIT_SIZE_TARGET, p->nodes, &err) < 0) {
    cli_fail("plan", err.msg);
    return cli_input_status(err.code);
  }
  fprintf(
      stderr,
      "enpu plan: nodes: prefill %d -> %d (TTFT met %.2f -> %.2f %%), decode %d -> %d (TPOT met %.2f -> %.2f %%)%s\n",
      r->rule_nodes[0], r->nodes[0], 100 * r->attainment_rule[0], 100 * r->attainment_sized[0], r->rule_nodes[1],
      r->nodes[1], 100 * r->attainment_rule[1], 100 * r->attainment_sized[1],
      r->attainment_sized[0] < r->size_target || r->attainment_sized[1] < r->size_target
          ? " (short of the target: sizing.md says why)"
          : "");
  return stamp(p->nodes, inputs);
}

static int step_replay_report(const plan_args *a, const jobinit_result *r, plan_paths *p) {
  const uint64_t inputs = inputs_hash(a, r, p->exe);
  step(p, 4, 5, "replay every policy on the trace");
  int rc = 0;
  if (up_to_date(p->replay, "summary.json", inputs)) fprintf(stderr, "enpu plan: replay: up to date, kept\n");
  else {
    char *argv[] = {p->exe,      "replay",
                    "--store",   p->store,
                    "--trace",   (char *)a->init.trace,
                    "--cluster", (char *)r->sized_cluster_path,
                    "--model",   (char *)r->model_path,
                    "--chip",    (char *)a->init.chip,
                    "--policy",  "all",
                    "--out",     p->replay,
                    NULL};
    rc = run_child(p, argv, a->json);
    if (!rc) rc = stamp(p->replay, inputs);
    if (rc) return rc;
  }
  step(p, 5, 5, "report");
  if (up_to_date(p->report, "report.md", inputs)) {
    fprintf(stderr, "enpu plan: report: up to date, kept\n");
    return 0;
  }
  char *argv[] = {
      p->exe, "report", p->store, "--out", p->report, "--replay", p->replay, "--job", (char *)r->job_path, NULL};
  rc = run_child(p, argv, a->json);
  return rc ? rc : stamp(p->report, inputs);
}

static int print_where(const plan_args *a, const jobinit_result *r, const plan_paths *p) {
  char summary[CONFIG_PATH_LEN + CONFIG_NAME_LEN + 16], validation[sizeof summary],
      report_md[sizeof p->report + 16];
  snprintf(summary, sizeof summary, "%s/%s/summary.md", a->runs, r->name);
  snprintf(validation, sizeof validation, "%s/%s/validation.md", a->runs, r->name);
  snprintf(report_md, sizeof report_md, "%s/report.md", p->report);
  const double took_s = enpu_now_s() - p->t0;
  if (a->json) {
    json_t *doc = json_pack("{s:s, s:f, s:s, s:s, s:s, s:s, s:s, s:s, s:s, s:s?, s:s?, s:s?}", "name", r->name,
                            "seconds", took_s, "job", r->job_path, "cluster", r->cluster_path, "model",
                            r->model_path, "init", r->summary_path, "store", p->store, "summary", summary,
                            "validation", validation, "nodes", a->no_replay ? NULL : r->sized_cluster_path,
                            "replay", a->no_replay ? NULL : p->replay, "report", a->no_replay ? NULL : report_md);
    const int rc = doc ? cli_print_json(doc) : cli_fail("plan", "out of memory (JSON output)");
    json_decref(doc);
    return rc;
  }
  printf("enpu plan: %s done in %.1f s\n", r->name, took_s);
  printf("  job, cluster, model:  %s, %s, %s\n", r->job_path, r->cluster_path, r->model_path);
  printf("  job init summary:     %s\n", r->summary_path);
  printf("  plan store:           %s\n", p->store);
  printf("  farm summary:         %s\n", summary);
  printf("  validation:           %s\n", validation);
  if (!a->no_replay) printf("  measured cluster:     %s (%s/sizing.md)\n", r->sized_cluster_path, p->nodes);
  if (!a->no_replay) printf("  replay, report:       %s/, %s\n", p->replay, report_md);
  return 0;
}

static int plan_run(void *args) {
  plan_args *a = args;
  plan_paths *p = calloc(1, sizeof *p);
  jobinit_result *r = calloc(1, sizeof *r);
  if (!p || !r) return free(p), free(r), cli_fail("plan", "out of memory"), CLI_EXIT_ENV;
  p->t0 = enpu_now_s();
  struct sigaction started;
  sigemptyset(&p->stop);
  if (sigaction(SIGINT, NULL, &started) == 0 && started.sa_handler != SIG_IGN) sigaddset(&p->stop, SIGINT);
  sigprocmask(SIG_BLOCK, &p->stop, &p->mask);
  a->init.o.stop = (enpu_stop){plan_stop_asked, p};
  char stem[CONFIG_PATH_LEN];
  int rc = cli_job_init_options(&a->init, a->runs, p->dir, sizeof p->dir);
  /* the job's name is its directory's: the farm writes its results to RUNS/<job name>/ */
  snprintf(stem, sizeof stem, "%s", strrchr(p->dir, '/') ? strrchr(p->dir, '/') + 1 : p->dir);
  a->init.o.name = stem;
  if (!rc) rc = cli_job_init_trace(&a->init, "plan");
  const ssize_t n = readlink("/proc/self/exe", p->exe, sizeof p->exe - 1);
  if (!rc && n <= 0) {
    cli_fail("plan", "cannot find this program's path (/proc/self/exe)");
    rc = CLI_EXIT_ENV;
  }
  enpu_err err = {0};
  if (!rc) {
    step(p, 1, 5, "job init: parallelism, SLO classes and bucket grid from the model, chip and trace");
    if (jobinit_run(&a->init.o, r, &err) < 0) {
      cli_fail("plan", err.msg);
      rc = err.code == ENPU_ERR_INFEASIBLE ? CLI_EXIT_FAILED : cli_input_status(err.code);
    } else {
      jobinit_write_summary(&a->init.o, r, stderr);
    }
    plan_test_hold(p, "init");
    rc = plan_stopped(p, rc, "job init");
  }
  snprintf(p->np, sizeof p->np, "%d", a->np);
  snprintf(p->store, sizeof p->store, "%s/plans.h5", p->dir);
  snprintf(p->replay, sizeof p->replay, "%s/replay", p->dir);
  snprintf(p->report, sizeof p->report, "%s/report", p->dir);
  snprintf(p->nodes, sizeof p->nodes, "%s/nodes", p->dir);
  if (!rc) rc = step_farm(a, r, p);
  if (!rc && !a->no_replay) {
    rc = step_size(a, r, p);
    plan_test_hold(p, "nodes");
    rc = plan_stopped(p, rc, "the node sizing");
  }
  if (!rc && !a->no_replay) rc = step_replay_report(a, r, p);
  if (!rc) rc = print_where(a, r, p);
  else fprintf(stderr, "enpu plan: stopped (exit %d); rerun the same command to resume\n", rc);
  if (plan_took_stop(p)) /* as the farm: a signal after the work does not undo it */
    fprintf(stderr, "enpu plan: a stop signal came after the work (exit %d)\n", rc);
  sigprocmask(SIG_SETMASK, &p->mask, NULL);
  free(p), free(r);
  return rc;
}
