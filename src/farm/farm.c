/* farm.c — the farm's ranks and their MPI transport (src/README.md): rank 0 runs one or
 * more jobs (farm_job.c: files and checkpoints; farm_plan.c: task graphs; farm_sched.c:
 * results and readiness) and schedules their tasks in one queue, longest first, in
 * batches; the other ranks run task batches; progress and SIGTERM/SIGINT/SIGUSR1 are
 * handled here. The only file of the project that talks MPI.
 *
 * Invariants:
 *  - The master decides nothing from timing except which rank gets which batch, so no
 *    store depends on -np, arrival order or resume (farm_job_internal.h).
 *  - A bucket task is dispatched only when every op it needs is known; the master sends
 *    those Pareto sets with it, so workers hold no state between batches but the jobs
 *    and a graph cache.
 *  - With N >= 2 ranks the master does not compute and never busy-waits: it polls with
 *    MPI_Iprobe and sleeps with a back-off of at most 10 ms (workers at most 2 ms),
 *    also while it waits for silent ranks.
 *  - A worker that holds a batch longer than its timeout (--worker-timeout) is silent:
 *    said once on the log, sent nothing more, its batches' tasks back in the queue for
 *    the others. Each task counts once: whichever of its results comes first is taken,
 *    a later one is dropped before the journal (farm_job_take), and a silent rank that
 *    answers gets work again. One still silent at the end could never finalize MPI:
 *    after the last checkpoint and the summaries, farm_run aborts the ranks with the
 *    status the caller gives the run's outcome (farm_options.abort_status).
 *  - Every result is in its job's journal before it counts as done; journals are synced
 *    at least every second while results arrive, at once when a stop signal is seen, and
 *    reset only after a checkpoint.
 *  - Each job's store writer lock is held from before its previous store is read until
 *    the run ends. */
#define _XOPEN_SOURCE 700 /* realpath */
#include <libgen.h>
#include <limits.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <mpi.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include "farm.h"
#include "farm_job_internal.h"

enum { TAG_WORK = 1, TAG_RESULT = 2, TAG_STOP = 3 };

/* Every MPI call is checked (as IOR's MPI_CHECK): the farm's communicator returns
 * errors instead of aborting, and a failure becomes ENPU_ERR_ENV with MPI's own message.
 * Only farm_run, the top of the farm, decides to abort the ranks (mpi_abort). */
static int mpi_error(int code, const char *call, enpu_err *err) {
  char msg[MPI_MAX_ERROR_STRING];
  int len = 0;
  if (MPI_Error_string(code, msg, &len) != MPI_SUCCESS) snprintf(msg, sizeof msg, "MPI error %d", code);
  return enpu_errorf(err, ENPU_ERR_ENV, "%s failed: %s", call, msg);
}
#define MPI_CHECK(call, err)                                             \
  do {                                                                   \
    const int mpi_rc_ = (call);                                          \
    if (mpi_rc_ != MPI_SUCCESS) return mpi_error(mpi_rc_, #call, (err)); \
  } while (0)

/* The one global of the farm: a signal handler can only reach static storage, and the
 * flag must be set asynchronously; everything else travels in the master/worker
 * structs. sig_atomic_t + volatile is what C guarantees for that. */
static volatile sig_atomic_t farm_signal_seen;

static void on_signal(int sig) { farm_signal_seen = sig; }

/* SIGUSR1 is what Slurm's warning and mpirun forward; SIGTERM and SIGINT come from a
 * scheduler, a user or srun. mpirun does not forward SIGTERM/SIGINT: it sends the
 * ranks SIGTERM itself and SIGKILL a second later (Open MPI 4.1's
 * odls_base_sigkill_timeout), so the master syncs its journals as soon as it sees a
 * signal and checkpoints right after. */
static const int stop_signals[] = {SIGTERM, SIGINT, SIGUSR1};
enum { NSTOP = sizeof stop_signals / sizeof stop_signals[0] };

/* SA_RESTART: the handler stays for the rest of the process (validation, summaries),
 * whose file I/O and lock waits must not fail with EINTR; the loops that wait poll the
 * flag with sleeps of at most 10 ms. */
static void catch_signals(struct sigaction *old) {
  struct sigaction sa = {.sa_handler = on_signal, .sa_flags = SA_RESTART};
  sigemptyset(&sa.sa_mask);
  for (int i = 0; i < NSTOP; i++) sigaction(stop_signals[i], &sa, old ? &old[i] : NULL);
}

static int signals_caught(void) {
  struct sigaction cur;
  for (int i = 0; i < NSTOP; i++)
    if (sigaction(stop_signals[i], NULL, &cur) != 0 || cur.sa_handler != on_signal) return 0;
  return 1;
}

void farm_signals_catch(void) { catch_signals(NULL); }

const volatile sig_atomic_t *farm_stop_flag(void) { return &farm_signal_seen; }

void farm_options_default(farm_options *o) {
  *o = (farm_options){.checkpoint_s = 60,
                      .progress_s = 10,
                      .lock_wait_s = STORE_LOCK_WAIT_S,
                      .batch_s = -1,
                      .point = -1,
                      .worker_timeout_s = FARM_WORKER_TIMEOUT_S};
}

static void sleep_s(double s) {
  struct timespec ts = {(time_t)s, (long)((s - floor(s)) * 1e9)};
  nanosleep(&ts, NULL);
}

/* A test's hook (ENPU_FARM_TEST_HOLD=PHASE[:FILE], docs/store.md "Failure semantics"): at the
 * boundary PHASE (start, setup, tasks, silent: a rank was just called silent, validation,
 * summary) wait until a stop signal
 * comes, having said so on the log, so that a test signals a farm in a known phase
 * without racing it. With FILE, only when FILE does not exist yet (it is created): a
 * resumed run goes through. Unset, it does nothing. */
static void test_hold(FILE *log, const char *phase) {
  const char *v = getenv("ENPU_FARM_TEST_HOLD");
  const size_t n = v ? strcspn(v, ":") : 0;
  if (!v || n != strlen(phase) || strncmp(v, phase, n)) return;
  if (v[n] == ':') {
    const int fd = open(v + n + 1, O_WRONLY | O_CREAT | O_EXCL, 0644);
    if (fd < 0) return;
    close(fd);
  }
  fprintf(log, "farm: test hold at %s: waiting for a stop signal\n", phase);
  fflush(log);
  while (!farm_signal_seen) sleep_s(0.01);
}

/* A test's hook (ENPU_FARM_TEST_STOP_RANK=R[:SEC], docs/store.md "Failure semantics"):
 * worker rank R stops answering when its first batch comes, as a frozen node looks to
 * the master: SIGSTOP (it never answers; mpirun's abort kills it), or with SEC a sleep
 * of SEC seconds (it answers late). Unset, it does nothing. */
static void test_stop(MPI_Comm comm) {
  const char *v = getenv("ENPU_FARM_TEST_STOP_RANK");
  int rank = -1;
  char *end = NULL;
  if (!v || MPI_Comm_rank(comm, &rank) != MPI_SUCCESS || strtol(v, &end, 10) != rank || end == v) return;
  if (*end == ':') sleep_s(strtod(end + 1, NULL));
  else raise(SIGSTOP);
}

/* A test's hook (ENPU_FARM_TEST_STALL=SEC, docs/store.md "Failure semantics"): rank 0
 * stalls SEC seconds after taking its first result batch, as a long checkpoint or a slow
 * fsync would, while the workers' answers queue up. Unset, it does nothing. */
static void test_stall(void) {
  const char *v = getenv("ENPU_FARM_TEST_STALL");
  if (v) sleep_s(fmax(0, strtod(v, NULL)));
}

/* Wait for a message without spinning: MPI_Iprobe, then sleep with a doubling back-off,
 * until deadline_s (enpu_now_s; 0: no limit). @return 1 a message, 0 none by the
 * deadline, or an error. */
static int wait_message(MPI_Comm comm, int source, double max_sleep_s, double deadline_s, MPI_Status *st,
                        enpu_err *err) {
  double pause = 50e-6;
  for (;;) {
    int flag = 0;
    MPI_CHECK(MPI_Iprobe(source, MPI_ANY_TAG, comm, &flag, st), err);
    if (flag) return 1;
    if (deadline_s > 0 && enpu_now_s() > deadline_s) return 0;
    sleep_s(pause);
    pause = fmin(2 * pause, max_sleep_s);
  }
}

static int recv_bytes(MPI_Comm comm, const MPI_Status *st, farm_buf *b, enpu_err *err) {
  int n = 0;
  MPI_CHECK(MPI_Get_count(st, MPI_BYTE, &n), err);
  ENPU_RETURN_IF(enpu_grow((void **)&b->data, &b->cap, (size_t)n + 1, 1) < 0, err, ENPU_ERR_NOMEM,
                 "out of memory (message of %d bytes)", n);
  MPI_CHECK(MPI_Recv(b->data, n, MPI_BYTE, st->MPI_SOURCE, st->MPI_TAG, comm, MPI_STATUS_IGNORE), err);
  b->len = (size_t)n;
  return 0;
}

/* ---------------------------------------------------------------------------------
 * The master: every job of the run */

typedef struct {
  farm_options o;
  MPI_Comm comm;
  int rank, size;
  farm_job **jobs;
  int njobs;
  farm_cursor *cursor; /* per job, while a batch is filled */
  farm_summary *sums;
  farm_exec *exec;      /* single rank: the master computes */
  config_files *inputs; /* every file the jobs' loads read, as rank 0 read it */
  FILE *task_log;       /* farm_options.task_log, open */
  int64_t batches;      /* task batches handed out */
  int results_seen;     /* a result batch was taken (ENPU_FARM_TEST_HOLD=tasks) */
  opcache *cache;       /* farm_options.cache_dir, open; NULL: none */
  int *silent;          /* per rank: overdue with a batch (farm_options.worker_timeout_s)
                           and not heard from since; still set at the end: farm_run aborts */
  double longest_s;     /* the most compute seconds a result batch took so far */
  int wait_said;        /* the wait for silent ranks at the end was announced */
  int final_ckpt;       /* every job checkpointed with every task settled (wait_silent):
                           nothing can change the stores any more */
} master;

typedef struct {
  double start, last_sync, last_ckpt, last_progress;
  double ckpt_every; /* --checkpoint-s, or 10 × the last checkpoint's time when longer */
  int live;
} clocks;

static int is_silent(const master *m, int rank) { return m->silent && m->silent[rank]; }

static int silent_count(const master *m) {
  int n = 0;
  for (int w = 1; m->silent && w < m->size; w++) n += m->silent[w] != 0;
  return n;
}

static int all_settled(const master *m) {
  for (int j = 0; j < m->njobs; j++)
    if (!farm_job_settled(m->jobs[j])) return 0;
  return 1;
}

enum { BATCH_MAX_TASKS = 256 };

/* A batch out at a worker: its tasks (put back in the queue if the worker goes silent),
 * when it was sent and how long it should take. */
typedef struct {
  uint32_t job[BATCH_MAX_TASKS], task[BATCH_MAX_TASKS];
  int n;
  double sent_s, est_s;
  int requeued; /* its tasks went back to the queue */
} held_batch;

/* Fill a batch with ready tasks of any job, longest first, until it holds target_s of
 * work (or BATCH_MAX_TASKS tasks), noting them in *held (NULL: not noted).
 * @return tasks in the batch (0: nothing ready). */
static int make_batch(master *m, double target_s, farm_buf *out, held_batch *held, enpu_err *err) {
  out->len = 0;
  for (int j = 0; j < m->njobs; j++) farm_job_cursor(m->jobs[j], &m->cursor[j]);
  int n = 0;
  double s = 0;
  for (; (n == 0 || s < target_s) && n < BATCH_MAX_TASKS; n++) {
    int best = -1;
    double best_s = -1;
    for (int j = 0; j < m->njobs; j++) {
      const double t = farm_job_peek(m->jobs[j], &m->cursor[j]);
      if (t > best_s) best = j, best_s = t;
    }
    if (best < 0) break;
    ENPU_FORWARD(farm_job_put(m->jobs[best], &m->cursor[best], out, err));
    if (held) held->job[n] = (uint32_t)best, held->task[n] = m->cursor[best].task;
    s += best_s;
  }
  if (held) held->n = n, held->sent_s = enpu_now_s(), held->est_s = s, held->requeued = 0;
  return n;
}

/* Take a result batch; *dups counts the results ignored as duplicates (a requeued
 * task's second result), *compute_s and *cpu_s add up the batch's task times (wall, and
 * the tasks' threads' CPU). */
static int take_results(master *m, const farm_buf *b, int *dups, double *compute_s, double *cpu_s, enpu_err *err) {
  size_t off = 0;
  farm_task_result tr;
  int rc;
  *dups = 0, *compute_s = 0, *cpu_s = 0;
  while ((rc = farm_result_next(b->data, b->len, &off, &tr, err)) == 1) {
    ENPU_RETURN_IF(tr.job >= (uint32_t)m->njobs, err, ENPU_ERR_FORMAT, "a result for job %u of %d", tr.job,
                   m->njobs);
    int dup = 0;
    ENPU_FORWARD(farm_job_take(m->jobs[tr.job], &tr, &dup, err));
    *dups += dup;
    m->sums[tr.job].duplicates += dup;
    *compute_s += tr.compute_s;
    *cpu_s += tr.cpu_s;
  }
  if (rc == 0 && !m->results_seen++) test_hold(m->o.log, "tasks"), test_stall();
  return rc;
}

static double left_s(const master *m) {
  double s = 0;
  for (int j = 0; j < m->njobs; j++) s += farm_job_left_s(m->jobs[j]);
  return s;
}

static void fmt_hms(double s, char *out, size_t n) {
  const long t = s > 0 && s < 1e9 ? (long)(s + 0.5) : 0;
  snprintf(out, n, "%ld:%02ld:%02ld", t / 3600, t / 60 % 60, t % 60);
}

static void progress(const master *m, double elapsed, int live, int final) {
  if (m->o.quiet) return;
  int64_t total = 0, done = 0, evals = 0;
  double est_done = 0, est_total = 0;
  for (int j = 0; j < m->njobs; j++) {
    const farm_summary *s = &m->sums[j];
    total += s->tasks_total, done += s->tasks_done + s->tasks_failed, evals += s->evaluations;
    double d, t;
    farm_job_estimates(m->jobs[j], &d, &t);
    est_done += d, est_total += t;
  }
  const double frac = est_total > 0 ? est_done / est_total : 1;
  char eta[32];
  fmt_hms(frac > 0 ? elapsed * (1 - frac) / frac : 0, eta, sizeof eta);
  const double rate = elapsed > 0 ? (double)evals / elapsed : 0;
  fprintf(m->o.log, "%sfarm: %lld/%lld tasks (%.1f%%), %.1fk evals/s, ETA %s%s", live ? "\r" : "", (long long)done,
          (long long)total, total ? 100.0 * (double)done / (double)total : 100.0, rate / 1e3, eta,
          live ? (final ? "\033[K\n" : "\033[K") : "\n");
  fflush(m->o.log);
}

/* Periodic duties of the master's loop: journal syncs, checkpoints, progress. */
static int duties(master *m, clocks *c, enpu_err *err) {
  const double now = enpu_now_s();
  int synced = 0;
  for (int j = 0; j < m->njobs; j++)
    if (farm_job_unsynced(m->jobs[j]) && (now - c->last_sync >= 1.0 || farm_signal_seen)) {
      ENPU_FORWARD(farm_job_sync(m->jobs[j], err));
      synced = 1;
    }
  if (synced) c->last_sync = now;
  /* A checkpoint rewrites whole stores, so its cost grows with them: at most a tenth of
   * rank 0's time goes to checkpoints, whatever --checkpoint-s asks. */
  if (now - c->last_ckpt >= fmax(m->o.checkpoint_s, c->ckpt_every)) {
    for (int j = 0; j < m->njobs; j++) ENPU_FORWARD(farm_job_checkpoint(m->jobs[j], err));
    c->last_ckpt = enpu_now_s();
    c->ckpt_every = 10 * (c->last_ckpt - now);
  }
  if (now - c->last_progress >= (c->live ? 0.5 : m->o.progress_s)) {
    progress(m, now - c->start, c->live, 0);
    c->last_progress = now;
  }
  return 0;
}

/* The master's CPU for one message (a batch sent and its results received: MPI, the
 * loop), measured on this machine (results/bench.md, "Dispatch"), and the share of the
 * master that messages may take. */
#define FARM_MSG_CPU_S 25e-6
#define FARM_MSG_SHARE 0.25

/* Work per message (--batch-s, or): a quarter of each worker's share of what is left,
 * between 5 ms and 50 ms — and, while there is that much work per worker, never so
 * little that the workers' messages alone would keep the master more than
 * FARM_MSG_SHARE busy (nworkers × FARM_MSG_CPU_S / FARM_MSG_SHARE: the floor rises past
 * 50 workers, to 0.3 s at 3,000; tests/bench/bench_farm_sim models it). */
static double batch_target_s(const master *m, int nworkers) {
  if (m->o.batch_s >= 0) return m->o.batch_s;
  const double share = left_s(m) / nworkers;
  const double lo = fmax(0.005, fmin(nworkers * FARM_MSG_CPU_S / FARM_MSG_SHARE, share));
  return fmax(lo, fmin(fmax(0.05, lo), share / 4.0));
}

/* The master's side of the workers' links. Batches queued at each worker: two, so a
 * worker finds its next batch waiting while the master sleeps between polls. Sends are
 * non-blocking: a worker may be sending its result (a rendezvous for large messages)
 * while the master sends it more work. Batch k of worker w uses buffer 2w + k % 2; when
 * it is refilled, the batch that used it before has been answered, so waiting on its
 * send returns at once. A worker answers its batches in order (MPI does not overtake
 * between two ranks), so its oldest batch out is the one the next answer is for. */
typedef struct {
  int *busy, *sent;  /* per rank: batches out, batches sent so far */
  double *since;     /* per rank: when its oldest batch out became the one it works on */
  double idle_s;     /* when the work ended (only silent ranks hold batches); 0: it runs */
  double checked_s;  /* when find_silent last looked */
  double polled_s;   /* when find_silent was last called (once per turn of the loop) */
  farm_buf *out, in; /* 2 per rank; the last result received */
  held_batch *held;  /* 2 per rank, as out */
  MPI_Request *req;  /* 2 per rank */
} links;

static int links_open(links *l, master *m, enpu_err *err) {
  const size_t size = (size_t)m->size;
  /* One block, owned by busy (links_close frees it). */
  const int parts = ENPU_CALLOC_PARTS(ENPU_PART(l->busy, size), ENPU_PART(l->sent, size), ENPU_PART(l->since, size),
                                      ENPU_PART(l->out, 2 * size), ENPU_PART(l->held, 2 * size),
                                      ENPU_PART(l->req, 2 * size));
  m->silent = enpu_calloc(size, sizeof *m->silent);
  ENPU_RETURN_IF(parts < 0 || !m->silent, err, ENPU_ERR_NOMEM, "out of memory");
  for (size_t k = 0; k < 2 * size; k++) l->req[k] = MPI_REQUEST_NULL;
  return 0;
}

/* A note's start: on a terminal, off the progress line it would end otherwise. */
static const char *fresh_line(const master *m) { return !m->o.quiet && isatty(fileno(m->o.log)) ? "\n" : ""; }

static double timeout_s(const master *m, const held_batch *b);

/* After an error, take rank w's batches still running so that it reaches TAG_STOP, each
 * within the rank's timeout: one past it is silent (said on the log), as in the run,
 * and farm_run aborts the ranks. @return 0, or an error. */
static int drain_rank(links *l, master *m, int w, enpu_err *err) {
  for (; l->busy[w] > 0; l->busy[w]--) {
    const held_batch *oldest = &l->held[2 * w + (l->sent[w] - l->busy[w]) % 2];
    const double until = m->o.worker_timeout_s > 0 ? l->since[w] + timeout_s(m, oldest) : 0;
    MPI_Status st;
    const int got = wait_message(m->comm, w, 0.010, until, &st, err);
    ENPU_FORWARD(got);
    if (!got) {
      fprintf(m->o.log, "%sfarm: rank %d has not answered for %.0f s; the run stops without it\n", fresh_line(m), w,
              enpu_now_s() - l->since[w]);
      fflush(m->o.log);
      m->silent[w] = 1;
      return 0;
    }
    ENPU_FORWARD(recv_bytes(m->comm, &st, &l->in, err));
    l->since[w] = enpu_now_s();
  }
  return 0;
}

/* After an error, take the batches still running so every worker reaches TAG_STOP (a
 * broken link ends the wait: farm_run aborts the ranks then). A silent rank is not
 * waited for: farm_run aborts the ranks, so its sends stay as they are (their buffers
 * too, which MPI may still read). */
static int links_close(links *l, master *m, int rc, enpu_err *err) {
  enpu_err ignored;
  enpu_err *e = rc < 0 ? &ignored : err;
  for (int w = 1; l->busy && w < m->size; w++) {
    const int drc = is_silent(m, w) ? 0 : drain_rank(l, m, w, e);
    if (drc < 0 && rc == 0) rc = drc;
  }
  for (int k = 0; l->req && k < 2 * m->size; k++) {
    if (is_silent(m, k / 2)) continue;
    const int mrc = MPI_Wait(&l->req[k], MPI_STATUS_IGNORE);
    if (mrc != MPI_SUCCESS && rc == 0) rc = mpi_error(mrc, "MPI_Wait", err);
    if (l->out) farm_buf_free(&l->out[k]);
  }
  free(l->busy); /* the block of every array (links_open); a silent rank's buffers stay */
  farm_buf_free(&l->in);
  return rc;
}

/* Hand every worker with a free slot a batch, first slots first so the longest tasks
 * spread over the workers; a silent rank gets nothing. @return 0, or an error. */
static int feed_workers(master *m, links *l, enpu_err *err) {
  for (int slot = 0, n = 1; n > 0 && slot < 2; slot++) {
    for (int w = 1; w < m->size; w++) {
      if (l->busy[w] > slot || m->silent[w]) continue;
      const double target = batch_target_s(m, m->size - 1);
      const int k = 2 * w + l->sent[w] % 2;
      MPI_CHECK(MPI_Wait(&l->req[k], MPI_STATUS_IGNORE), err);
      n = make_batch(m, target, &l->out[k], &l->held[k], err);
      ENPU_FORWARD(n);
      if (n == 0) break;
      m->batches++;
      MPI_CHECK(MPI_Isend(l->out[k].data, (int)l->out[k].len, MPI_BYTE, w, TAG_WORK, m->comm, &l->req[k]), err);
      if (l->busy[w]++ == 0) l->since[w] = l->held[k].sent_s;
      l->sent[w]++;
    }
  }
  return 0;
}

/* Take one result batch if one has come; a silent rank that answers is one again.
 * @return 1 taken, 0 none, or an error. */
static int take_one(master *m, links *l, enpu_err *err) {
  int flag = 0;
  MPI_Status st;
  MPI_CHECK(MPI_Iprobe(MPI_ANY_SOURCE, TAG_RESULT, m->comm, &flag, &st), err);
  if (!flag) return 0;
  const int w = st.MPI_SOURCE;
  int rc = recv_bytes(m->comm, &st, &l->in, err), dups = 0;
  double compute_s = 0, cpu_s = 0;
  if (rc == 0) rc = take_results(m, &l->in, &dups, &compute_s, &cpu_s, err);
  l->busy[w]--;
  l->since[w] = enpu_now_s();
  /* A late batch's wall time may count a stop (a rank stopped mid-task), its tasks'
   * thread CPU time does not: that much of it was work. Ignoring late batches would keep
   * the timeout under tasks longer than it (`ideal`), which would go from rank to rank
   * for ever. */
  m->longest_s = fmax(m->longest_s, m->silent[w] ? fmin(compute_s, cpu_s) : compute_s);
  if (m->silent[w]) {
    fprintf(
        m->o.log,
        "%sfarm: rank %d answered after all (results the other ranks had sent first, ignored: %d); it gets work again\n",
        fresh_line(m), w, dups);
    fflush(m->o.log);
    m->silent[w] = 0;
    m->wait_said = 0;
  }
  return rc < 0 ? rc : 1;
}

/* How long a worker may hold a batch before the master calls it silent: --worker-timeout,
 * or 10 times the longest batch seen so far or this one's estimate when that is longer
 * (an `ideal` task can take seconds and is alone in its batch). */
static double timeout_s(const master *m, const held_batch *b) {
  return fmax(m->o.worker_timeout_s, 10 * fmax(m->longest_s, b->est_s));
}

/* Rank w is overdue: said once, its batches' tasks back in the queue for the others. */
static int call_silent(master *m, links *l, int w, double now, enpu_err *err) {
  const held_batch *oldest = &l->held[2 * w + (l->sent[w] - l->busy[w]) % 2];
  char sent[32] = "?";
  const time_t at = time(NULL) - (time_t)(now - oldest->sent_s + 0.5);
  struct tm tm;
  if (localtime_r(&at, &tm)) strftime(sent, sizeof sent, "%H:%M:%S", &tm);
  fprintf(m->o.log,
          "%sfarm: rank %d has not answered for %.0f s (batch of %d tasks sent at %s); its tasks go to the other "
          "workers\n",
          fresh_line(m), w, now - l->since[w], oldest->n, sent);
  fflush(m->o.log);
  m->silent[w] = 1;
  for (int i = l->sent[w] - l->busy[w]; i < l->sent[w]; i++) {
    held_batch *b = &l->held[2 * w + i % 2];
    for (int t = 0; !b->requeued && t < b->n; t++)
      ENPU_FORWARD(farm_job_requeue(m->jobs[b->job[t]], b->task[t], err));
    b->requeued = 1;
  }
  test_hold(m->o.log, "silent");
  return 0;
}

/* Every worker that holds a batch longer than its timeout is called silent. Timeouts are
 * seconds: a look every 0.1 s keeps the walk over the ranks off the per-message cost.
 * Time rank 0 spends away from its loop (a long checkpoint, a slow fsync) is nobody's
 * silence: a batch too large to go out at once and the answers wait for it, so the
 * batches' clocks stop meanwhile; and since[] moves only when rank 0 takes an answer,
 * so a rank whose answer is already waiting is not silent either (only overdue ranks
 * are probed). */
static int find_silent(master *m, links *l, enpu_err *err) {
  const double now = enpu_now_s(), away_s = l->polled_s > 0 ? now - l->polled_s : 0;
  l->polled_s = now;
  for (int w = 1; away_s > 0.1 && w < m->size; w++) l->since[w] += away_s;
  if (m->o.worker_timeout_s <= 0 || now - l->checked_s < 0.1) return 0;
  l->checked_s = now;
  for (int w = 1; w < m->size; w++) {
    if (m->silent[w] || l->busy[w] == 0) continue;
    if (now - l->since[w] <= timeout_s(m, &l->held[2 * w + (l->sent[w] - l->busy[w]) % 2])) continue;
    int waiting = 0;
    MPI_CHECK(MPI_Iprobe(w, TAG_RESULT, m->comm, &waiting, MPI_STATUS_IGNORE), err);
    if (!waiting) ENPU_FORWARD(call_silent(m, l, w, now, err));
  }
  return 0;
}

/* With nothing else to do, the master waits for silent ranks, one more timeout from the
 * end of the work (a rank that answers then ends the run normally); the first time,
 * with every task done, it checkpoints (the stores are complete from then on) and says
 * so. @return 1 waiting, 0 not (any more), or an error. */
static int wait_silent(master *m, links *l, enpu_err *err) {
  const int settled = all_settled(m);
  if (!silent_count(m) || (!settled && silent_count(m) < m->size - 1)) return 0;
  const double now = enpu_now_s();
  if (l->idle_s == 0) l->idle_s = now;
  double until = 0;
  for (int w = 1; w < m->size; w++)
    if (m->silent[w])
      until = fmax(until, l->idle_s + timeout_s(m, &l->held[2 * w + (l->sent[w] - l->busy[w]) % 2]));
  if (now >= until) return 0;
  if (m->wait_said) return 1;
  m->wait_said = 1;
  for (int j = 0; settled && j < m->njobs; j++) {
    ENPU_FORWARD(farm_job_sync(m->jobs[j], err));
    ENPU_FORWARD(farm_job_checkpoint(m->jobs[j], err));
  }
  m->final_ckpt = settled;
  fprintf(m->o.log, "%sfarm: %s; waiting up to %.0f s for the silent rank(s) to answer\n", fresh_line(m),
          settled ? "every task is done and checkpointed" : "every worker is silent: no task can run", until - now);
  fflush(m->o.log);
  return 1;
}

static int live_busy(const master *m, const links *l) {
  for (int w = 1; w < m->size; w++)
    if (l->busy[w] && !m->silent[w]) return 1;
  return 0;
}

/* The master's loop with workers: keep every idle worker fed, take results, call
 * workers that hold a batch too long silent (farm_options.worker_timeout_s). */
static int master_loop_mpi(master *m, clocks *c, enpu_err *err) {
  links l = {0};
  int rc = links_open(&l, m, err);
  double pause = 50e-6;
  while (rc == 0) {
    const int stopping = farm_signal_seen != 0;
    if (!stopping) rc = feed_workers(m, &l, err);
    if (rc < 0) break;
    if (live_busy(m, &l)) l.idle_s = 0;
    else {
      /* Nothing runs: done, stopping, or only silent ranks left to wait for. */
      const int waiting = stopping ? 0 : wait_silent(m, &l, err);
      if (waiting < 0) rc = waiting;
      if (waiting < 0 || (!waiting && (stopping || all_settled(m) || silent_count(m) == m->size - 1))) break;
      if (!waiting) rc = enpu_errorf(err, ENPU_ERR_INTERNAL, "no task is ready and none is running");
      if (rc < 0) break;
    }
    rc = take_one(m, &l, err);
    if (rc == 0) {
      sleep_s(pause);
      pause = fmin(2 * pause, 0.010);
    } else if (rc == 1) {
      pause = 50e-6;
      rc = 0;
    }
    if (rc == 0) rc = find_silent(m, &l, err);
    if (rc == 0) rc = duties(m, c, err);
  }
  return links_close(&l, m, rc, err);
}

/* One rank: the master runs each task itself, checking the stop flag in between. */
static int master_loop_inline(master *m, clocks *c, enpu_err *err) {
  farm_buf out = {0}, in = {0};
  int rc = 0;
  while (rc == 0 && !farm_signal_seen && !all_settled(m)) {
    const int n = make_batch(m, 0, &out, NULL, err);
    if (n <= 0) {
      rc = n < 0 ? n : enpu_errorf(err, ENPU_ERR_INTERNAL, "no task is ready");
      break;
    }
    m->batches++;
    in.len = 0;
    rc = farm_exec_batch(m->exec, out.data, out.len, &in, err);
    int dups;
    double compute_s, cpu_s;
    if (rc == 0) rc = take_results(m, &in, &dups, &compute_s, &cpu_s, err);
    if (rc == 0) rc = duties(m, c, err);
  }
  farm_buf_free(&out);
  farm_buf_free(&in);
  return rc;
}

/* CPU seconds (user + system) this process has used: the master's own cost. */
static double process_cpu_s(void) {
  struct rusage ru;
  if (getrusage(RUSAGE_SELF, &ru) != 0) return 0;
  return (double)ru.ru_utime.tv_sec + 1e-6 * (double)ru.ru_utime.tv_usec + (double)ru.ru_stime.tv_sec +
         1e-6 * (double)ru.ru_stime.tv_usec;
}

/* The job files rank 0 read, to every worker: a worker's node need not see them (nor
 * see the same bytes under their names). The length goes first, -1 when rank 0 could
 * not pack them (its error is then the run's). */
static int send_inputs(MPI_Comm comm, const config_files *inputs, enpu_err *err) {
  char *buf = NULL;
  size_t len = 0;
  int rc = config_files_pack(inputs, &buf, &len, err);
  if (rc == 0 && len > INT_MAX) rc = enpu_errorf(err, ENPU_ERR_RANGE, "the jobs' input files: %zu bytes", len);
  int64_t n = rc == 0 ? (int64_t)len : -1;
  int mrc = MPI_Bcast(&n, 1, MPI_INT64_T, 0, comm);
  if (mrc == MPI_SUCCESS && rc == 0) mrc = MPI_Bcast(buf, (int)len, MPI_BYTE, 0, comm);
  free(buf);
  if (rc < 0) return rc;
  return mrc == MPI_SUCCESS ? 0 : mpi_error(mrc, "MPI_Bcast", err);
}

static int recv_inputs(MPI_Comm comm, config_files **inputs, enpu_err *err) {
  int64_t n = -1;
  MPI_CHECK(MPI_Bcast(&n, 1, MPI_INT64_T, 0, comm), err);
  ENPU_RETURN_IF(n < 0 || n > INT_MAX, err, ENPU_ERR_IO, "rank 0 could not send the jobs' input files");
  char *buf = malloc((size_t)n + 1);
  ENPU_RETURN_IF(!buf, err, ENPU_ERR_NOMEM, "out of memory (%lld bytes of input files)", (long long)n);
  const int mrc = MPI_Bcast(buf, (int)n, MPI_BYTE, 0, comm);
  const int rc = mrc != MPI_SUCCESS ? mpi_error(mrc, "MPI_Bcast", err)
                                    : config_files_unpack(buf, (size_t)n, inputs, err);
  free(buf);
  return rc;
}

/* Every rank that computes has loaded the job (workers from the files rank 0 sent): all
 * go on, or all stop with the first failure. */
static int executors_ready(MPI_Comm comm, int rc, enpu_err *err) {
  int worst = rc;
  MPI_CHECK(MPI_Allreduce(&rc, &worst, 1, MPI_INT, MPI_MIN, comm), err);
  if (worst < 0 && rc == 0) return enpu_errorf(err, worst, "a rank could not load the job (see its message)");
  return worst;
}

/* A silent rank is sent nothing: it may never receive (farm_run aborts the ranks). */
static int stop_workers(const master *m, int outcome, enpu_err *err) {
  for (int w = 1; w < m->size; w++)
    if (!m->silent || !m->silent[w]) MPI_CHECK(MPI_Send(&outcome, 1, MPI_INT, w, TAG_STOP, m->comm), err);
  return 0;
}

/* Two jobs writing one store would wait for each other's lock: refused at once. Paths
 * compare by their directory's real path and their name (the store may not exist yet). */
static int same_store(const char *a, const char *b) {
  char da[PATH_MAX], db[PATH_MAX], ra[PATH_MAX], rb[PATH_MAX];
  snprintf(da, sizeof da, "%s", a);
  snprintf(db, sizeof db, "%s", b);
  const char *na = strrchr(a, '/') ? strrchr(a, '/') + 1 : a, *nb = strrchr(b, '/') ? strrchr(b, '/') + 1 : b;
  if (strcmp(na, nb)) return 0;
  if (!realpath(dirname(da), ra) || !realpath(dirname(db), rb)) return !strcmp(a, b);
  return !strcmp(ra, rb);
}

static int check_jobs(const farm_options *o, config_files *inputs, enpu_err *err) {
  ENPU_RETURN_IF(o->njobs < 1, err, ENPU_ERR_INVALID, "no job to farm");
  ENPU_RETURN_IF(o->njobs > 1 && (o->store_path || o->nadd || o->point >= 0 || o->nreuse), err, ENPU_ERR_INVALID,
                 "--store, --add-buckets, --point and --reuse name one job's store: give a single job");
  config_job **jobs = enpu_calloc((size_t)o->njobs, sizeof *jobs);
  ENPU_RETURN_IF(!jobs, err, ENPU_ERR_NOMEM, "out of memory (jobs)");
  int rc = 0;
  for (int j = 0; rc == 0 && j < o->njobs && o->njobs > 1; j++) {
    rc = config_job_load_from(inputs, o->job_paths[j], &jobs[j], err);
    for (int k = 0; rc == 0 && k < j; k++) {
      if (same_store(jobs[k]->store_path, jobs[j]->store_path))
        rc = enpu_errorf(err, ENPU_ERR_INVALID, "jobs %s and %s write the same store %s", o->job_paths[k],
                         o->job_paths[j], jobs[j]->store_path);
      else if (o->results_dir && !strcmp(jobs[k]->name, jobs[j]->name))
        rc = enpu_errorf(err, ENPU_ERR_INVALID,
                         "jobs %s and %s are both named %s: --results "
                         "would put their summaries in one place",
                         o->job_paths[k], o->job_paths[j], jobs[j]->name);
    }
  }
  for (int j = 0; j < o->njobs; j++) config_job_free(jobs[j]);
  free(jobs);
  return rc;
}

static int master_setup(master *m, enpu_err *err) {
  ENPU_FORWARD(config_files_create(&m->inputs, err));
  ENPU_FORWARD(check_jobs(&m->o, m->inputs, err));
  if (m->o.cache_dir) ENPU_FORWARD(opcache_open(m->o.cache_dir, &m->cache, err));
  m->jobs = enpu_calloc((size_t)m->o.njobs, sizeof *m->jobs);
  m->cursor = enpu_calloc((size_t)m->o.njobs, sizeof *m->cursor);
  ENPU_RETURN_IF(!m->jobs || !m->cursor, err, ENPU_ERR_NOMEM, "out of memory (jobs)");
  for (; m->njobs < m->o.njobs; m->njobs++)
    ENPU_FORWARD(farm_job_setup(&m->o, m->inputs, m->o.job_paths[m->njobs], m->o.store_path, m->njobs,
                                &farm_signal_seen, m->cache, &m->sums[m->njobs], &m->jobs[m->njobs], err));
  config_files_seal(m->inputs);
  if (!m->o.task_log) return 0;
  ENPU_FORWARD(enpu_file_create(m->o.task_log, &m->task_log, err));
  fprintf(m->task_log, "job,kind,policy,compute_s,cpu_s,evaluations,result_bytes,packed_bytes\n");
  for (int j = 0; j < m->njobs; j++) farm_job_log_to(m->jobs[j], m->task_log);
  return 0;
}

static void master_free(master *m) {
  for (int j = 0; m->jobs && j < m->njobs; j++) farm_job_free(m->jobs[j]);
  free(m->jobs);
  free(m->cursor);
  free(m->silent);
  farm_exec_free(m->exec);
  opcache_close(m->cache);
  config_files_free(m->inputs);
  /* The task log lists what this run computed, also when it stopped early: published on
   * every outcome, through the same helper as every file the farm writes. */
  enpu_err e;
  if (m->task_log && enpu_file_publish(m->task_log, m->o.task_log, 0, &e) < 0)
    fprintf(m->o.log, "farm: %s\n", e.msg);
}

/* Peak resident memory of this process, MB. */
static double process_rss_mb(void) {
  struct rusage ru;
  return getrusage(RUSAGE_SELF, &ru) == 0 ? (double)ru.ru_maxrss / 1024.0 : 0;
}

/* A run that added to the cache keeps it within its size (opcache_prune: least recently
 * used first); a failure is a note, the cache is not the run's result. */
static void prune_cache(const master *m) {
  int64_t stored = 0;
  for (int j = 0; j < m->njobs; j++) stored += m->sums[j].cache_stored;
  if (!m->cache || !stored || m->o.cache_max_bytes <= 0) return;
  opcache_scan s;
  enpu_err err;
  if (opcache_prune(opcache_dir(m->cache), m->o.cache_max_bytes, &s, &err) < 0)
    fprintf(m->o.log, "farm: warning: cache %s: cannot prune: %s\n", opcache_dir(m->cache), err.msg);
  else if (s.removed && !m->o.quiet)
    fprintf(m->o.log, "farm: cache %s: removed %lld least recently used entries (%lld bytes) to stay within %lld\n",
            opcache_dir(m->cache), (long long)s.removed, (long long)s.removed_bytes,
            (long long)m->o.cache_max_bytes);
}

/* The end of the run: every job's outcome, summary and validation. */
static int finish_jobs(master *m, clocks *c, int finished, enpu_err *err) {
  progress(m, enpu_now_s() - c->start, c->live, 1);
  test_hold(m->o.log, "validation");
  int rc = 0;
  for (int j = 0; j < m->njobs; j++) {
    farm_summary *s = &m->sums[j];
    s->outcome = !finished ? FARM_INTERRUPTED : s->tasks_failed ? FARM_FAILED : FARM_DONE;
    s->wall_s = enpu_now_s() - c->start;
    s->master_cpu_s = process_cpu_s();
    s->master_rss_mb = process_rss_mb();
    s->batches = m->batches;
    s->jobs = m->njobs;
    const int jr = farm_job_finish(m->jobs[j], err);
    if (jr < 0 && rc == 0) rc = jr;
    if (jr < 0 && j + 1 < m->njobs) enpu_err_prefix(err, "%s: ", s->job);
  }
  prune_cache(m);
  test_hold(m->o.log, "summary");
  if (rc == 0 && m->o.print_summaries) m->o.print_summaries(m->sums, m->njobs, m->o.print_user);
  return rc;
}

/* The worst outcome over jobs, what every rank exits with. */
static int run_outcome(const farm_summary *sums, int n) {
  int worst = FARM_DONE;
  for (int j = 0; j < n; j++) worst = (int)sums[j].outcome > worst ? (int)sums[j].outcome : worst;
  return worst;
}

static int run_master(master *m, enpu_err *err) {
  clocks c = {.start = enpu_now_s(), .live = isatty(fileno(m->o.log))};
  int rc = master_setup(m, err);
  enpu_err sent = {rc, ""};
  if (rc < 0) sent = *err;
  /* Workers wait for the setup's outcome; on failure they stop with the same error. */
  MPI_CHECK(MPI_Bcast(&sent, (int)sizeof sent, MPI_BYTE, 0, m->comm), err);
  if (rc < 0) {
    m->sums[0].input_error = 1;
    return rc;
  }
  if (m->size == 1)
    rc = farm_exec_create(m->inputs, m->o.job_paths, m->o.njobs, m->o.capacity_factor, &m->exec, err);
  else rc = send_inputs(m->comm, m->inputs, err);
  ENPU_FORWARD(executors_ready(m->comm, rc, err));
  c.last_sync = c.last_ckpt = c.last_progress = enpu_now_s();
  test_hold(m->o.log, "setup");
  rc = m->size > 1 ? master_loop_mpi(m, &c, err) : master_loop_inline(m, &c, err);
  /* After wait_silent's checkpoint only duplicates can come, which change nothing. */
  for (int j = 0; rc == 0 && !m->final_ckpt && j < m->njobs; j++) rc = farm_job_sync(m->jobs[j], err);
  for (int j = 0; rc == 0 && !m->final_ckpt && j < m->njobs; j++) rc = farm_job_checkpoint(m->jobs[j], err);
  const int finished = rc == 0 && all_settled(m);
  for (int j = 0; j < m->njobs; j++)
    m->sums[j].outcome = !finished ? FARM_INTERRUPTED : m->sums[j].tasks_failed ? FARM_FAILED : FARM_DONE;
  enpu_err ignored; /* after an error, the first one is what the run reports */
  const int src = stop_workers(m, rc < 0 ? rc : run_outcome(m->sums, m->njobs), rc < 0 ? &ignored : err);
  if (rc < 0 || src < 0) return rc < 0 ? rc : src;
  return finish_jobs(m, &c, finished, err);
}

/* ---------------------------------------------------------------------------------
 * Worker */

/* One message from the master: a batch run and answered, or the stop (*stop set;
 * @return the run's outcome >= 0, or the master's error). */
static int worker_step(MPI_Comm comm, farm_exec *x, farm_buf *in, farm_buf *out, int *stop, int64_t *batches,
                       enpu_err *err) {
  MPI_Status st;
  ENPU_FORWARD(wait_message(comm, 0, 0.002, 0, &st, err));
  if (st.MPI_TAG == TAG_STOP) {
    int outcome;
    MPI_CHECK(MPI_Recv(&outcome, 1, MPI_INT, 0, TAG_STOP, comm, MPI_STATUS_IGNORE), err);
    *stop = 1;
    return outcome < 0 ? enpu_errorf(err, outcome, "the master stopped on an error") : outcome;
  }
  ENPU_FORWARD(recv_bytes(comm, &st, in, err));
  if ((*batches)++ == 0) test_stop(comm);
  out->len = 0;
  ENPU_FORWARD(farm_exec_batch(x, in->data, in->len, out, err));
  MPI_CHECK(MPI_Send(out->data, (int)out->len, MPI_BYTE, 0, TAG_RESULT, comm), err);
  return 0;
}

static int run_worker(const farm_options *o, MPI_Comm comm, farm_summary *sums, int njobs, enpu_err *err) {
  enpu_err setup;
  MPI_CHECK(MPI_Bcast(&setup, (int)sizeof setup, MPI_BYTE, 0, comm), err);
  if (setup.code < 0) {
    *err = setup;
    sums[0].input_error = 1;
    return setup.code;
  }
  farm_exec *x = NULL;
  config_files *inputs = NULL;
  int rc = recv_inputs(comm, &inputs, err);
  if (rc == 0) rc = farm_exec_create(inputs, o->job_paths, o->njobs, o->capacity_factor, &x, err);
  config_files_free(inputs);
  rc = executors_ready(comm, rc, err);
  if (rc < 0) return rc;
  farm_buf in = {0}, out = {0};
  int64_t batches = 0;
  for (int stop = 0; !stop;) {
    rc = worker_step(comm, x, &in, &out, &stop, &batches, err);
    if (rc < 0 && !stop) {
      /* A batch this binary cannot read is a bug, a link that fails a broken run; either
       * way the master would wait for this rank forever. */
      fprintf(o->log ? o->log : stderr, "farm: rank %d: %s\n", sums[0].rank, err->msg);
      MPI_Abort(comm, 1);
    }
    if (stop && rc >= 0)
      for (int j = 0; j < njobs; j++) sums[j].outcome = (farm_outcome)rc;
  }
  rc = rc > 0 ? 0 : rc;
  farm_exec_free(x);
  farm_buf_free(&in);
  farm_buf_free(&out);
  return rc;
}

/* ---------------------------------------------------------------------------------
 * Entry */

/* The farm's own communicator, returning errors to MPI_CHECK. */
static int open_comm(master *m, int *own_mpi, enpu_err *err) {
  int inited = 0;
  MPI_CHECK(MPI_Initialized(&inited), err);
  if (!inited) {
    MPI_CHECK(MPI_Init(NULL, NULL), err);
    *own_mpi = 1;
  }
  MPI_CHECK(MPI_Comm_dup(MPI_COMM_WORLD, &m->comm), err);
  MPI_CHECK(MPI_Comm_set_errhandler(m->comm, MPI_ERRORS_RETURN), err);
  MPI_CHECK(MPI_Comm_rank(m->comm, &m->rank), err);
  MPI_CHECK(MPI_Comm_size(m->comm, &m->size), err);
  return 0;
}

/* The status the ranks are aborted with when a worker is still silent at the end: what
 * the caller maps the run's error or its stop signal to (farm_options.abort_status). */
static int silent_status(const master *m, int rc) {
  const int interrupted = rc == 0 && farm_signal_seen && run_outcome(m->sums, m->njobs) == FARM_INTERRUPTED;
  return m->o.abort_status ? m->o.abort_status(rc, interrupted, m->o.print_user) : 1;
}

/* Rank 0 at the end: the ranks still silent named, with what became of their work.
 * @return how many there are. */
static int say_silent(const master *m, int rc, int status) {
  const int n = silent_count(m);
  if (!n) return 0;
  char names[256] = "";
  size_t len = 0;
  for (int w = 1; w < m->size && len + 16 < sizeof names; w++)
    if (m->silent[w]) len += (size_t)snprintf(names + len, sizeof names - len, "%s%d", len ? ", " : "", w);
  const int complete = rc == 0 && run_outcome(m->sums, m->njobs) != FARM_INTERRUPTED;
  fprintf(
      m->o.log,
      "farm: rank%s %s%s%s still silent: %s; MPI cannot end with a silent rank, so the job ends with exit status "
      "%d\n",
      n > 1 ? "s" : "", names, len + 16 >= sizeof names ? "..." : "", n > 1 ? " are" : " is",
      complete ? "the other ranks computed its tasks and the stores are complete"
      : rc < 0 ? "the run stopped on the error above"
               : "the stores are checkpointed and the same command computes the rest",
      status);
  fflush(m->o.log);
  return n;
}

/* Workers leave only when rank 0 is done with its summaries and validations: a worker
 * exiting with status 3 first would make mpirun kill rank 0 mid-way. A rank that cannot
 * reach the others any more stops them all, and so does rank 0 when a worker is still
 * silent (it would never reach the barrier, nor MPI_Finalize): the top of the farm is
 * where that is decided. */
static int close_comm(master *m, int own_mpi, int silent, int status, int rc, enpu_err *err) {
  if (silent) {
    fflush(stdout);
    MPI_Abort(MPI_COMM_WORLD, status);
  }
  const int brc = MPI_Barrier(m->comm);
  if (brc != MPI_SUCCESS) {
    enpu_err e;
    mpi_error(brc, "MPI_Barrier", &e);
    fprintf(m->o.log, "farm: rank %d: %s\n", m->rank, e.msg);
    MPI_Abort(MPI_COMM_WORLD, 1);
  }
  const int frc = MPI_Comm_free(&m->comm);
  const int zrc = own_mpi ? MPI_Finalize() : MPI_SUCCESS;
  if (rc < 0) return rc;
  if (frc != MPI_SUCCESS) return mpi_error(frc, "MPI_Comm_free", err);
  return zrc != MPI_SUCCESS ? mpi_error(zrc, "MPI_Finalize", err) : 0;
}

static int run_ranks(const farm_options *opt, farm_summary *sums, enpu_err *err) {
  const int njobs = opt->njobs > 0 ? opt->njobs : 1;
  memset(sums, 0, (size_t)njobs * sizeof *sums);
  master m = {.o = *opt, .sums = sums, .comm = MPI_COMM_NULL};
  if (!m.o.log) m.o.log = stderr;
  int own_mpi = 0;
  ENPU_FORWARD(open_comm(&m, &own_mpi, err));
  for (int j = 0; j < njobs; j++) sums[j].rank = m.rank, sums[j].ranks = m.size;
  const int rc = m.rank == 0 ? run_master(&m, err) : run_worker(&m.o, m.comm, sums, njobs, err);
  /* The error first: the silent ranks' note refers to it. */
  if (m.rank == 0 && rc < 0 && m.o.print_error) m.o.print_error(err, m.o.print_user);
  if (m.rank == 0 && rc == 0 && farm_signal_seen && run_outcome(sums, njobs) != FARM_INTERRUPTED)
    fprintf(m.o.log,
            "farm: signal %d came after every task was done: the run finished, nothing is left to resume\n",
            (int)farm_signal_seen);
  const int status = m.rank == 0 ? silent_status(&m, rc) : 0;
  const int silent = m.rank == 0 ? say_silent(&m, rc, status) : 0;
  if (m.rank == 0) master_free(&m);
  return close_comm(&m, own_mpi, silent, status, rc, err);
}

int farm_run(const farm_options *opt, farm_summary *sums, enpu_err *err) {
  /* A caller that caught the signals (enpu farm, from its start) keeps them and any
   * signal already seen; otherwise they are caught for this run only. */
  const int mine = !signals_caught();
  struct sigaction old[NSTOP];
  if (mine) farm_signal_seen = 0, catch_signals(old);
  test_hold(opt->log ? opt->log : stderr, "start");
  const int rc = run_ranks(opt, sums, err);
  for (int i = 0; mine && i < NSTOP; i++) sigaction(stop_signals[i], &old[i], NULL);
  return rc;
}

void farm_mpi_version(char *out, size_t len) {
#ifdef OMPI_MAJOR_VERSION
  snprintf(out, len, "Open MPI %d.%d.%d, MPI %d.%d", OMPI_MAJOR_VERSION, OMPI_MINOR_VERSION, OMPI_RELEASE_VERSION,
           MPI_VERSION, MPI_SUBVERSION);
#else
  snprintf(out, len, "MPI %d.%d", MPI_VERSION, MPI_SUBVERSION);
#endif
}
