/* bench_farm_sim.c — a discrete-event model of the farm at N ranks: one master and N − 1
 * workers running the tasks of measured task logs (`enpu farm --task-log`: one task per
 * line, its CPU seconds), to predict the wall time and the master's load from 64 to
 * thousands of ranks and find where the master saturates.
 *
 * What it models, as farm.c does it:
 *  - The master first spends setup_s alone (grid, graphs, keys, the previous store).
 *  - Tasks go out longest first in batches: a batch holds ready tasks until it has
 *    target seconds of work (at most 256 tasks), target = clamp(left / (4 workers), lo,
 *    hi) with left the work not yet handed out; each worker holds two batches (one
 *    running, one waiting). Rule "fixed": lo = 5 ms, hi = 50 ms (before this model);
 *    "scaled": lo = max(5 ms, min(workers × msg_us / 0.25, left / workers)), hi =
 *    max(50 ms, lo) — messages then take at most a quarter of the master, and no batch
 *    holds more than a worker's share of what is left (what farm.c does now, with
 *    msg_us = FARM_MSG_CPU_S).
 *  - The master is one server: a returned batch costs it msg_us plus task_us per task
 *    (taking the results: decode, state, journal) and the next batch for that worker is
 *    ready when it is done; a journal sync costs sync_us a second, a checkpoint
 *    ckpt_us per result held, every checkpoint_s or 10 × the last checkpoint's time
 *    when that is longer (farm.c: at most a tenth of the master).
 *  - Dependencies, conservatively: a job's bucket tasks become ready only when all of its
 *    op tasks (and parts) are done (the farm releases each bucket when its own ops are).
 * Output per N: the predicted wall time, the master's busy share of the wall time, the
 * workers' mean utilisation, and the speedup over 64 ranks; saturation shows as a
 * master share near 100 % with a wall time that stops falling.
 * --repeat K runs the logs' tasks K times over (a grid K times as large with the same task
 * durations: the steady state the real logs, seconds long at thousands of ranks, hide).
 * Usage: bench_farm_sim TASKS.csv... [--setup-s S] [--task-us U] [--msg-us M]
 *        [--sync-us S] [--ckpt-us U] [--checkpoint-s C] [--repeat K] [--ranks N,N,...]
 *        [--json]
 * Figures only; never fails on them. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { MAX_BATCH = 256 };

typedef struct {
  double s;   /* CPU seconds */
  int job;    /* index into jobs */
  int bucket; /* 1: a bucket task */
} task;

typedef struct {
  double setup_s, task_us, msg_us, sync_us, ckpt_us, checkpoint_s;
} params;

typedef struct {
  task *t;
  int n, cap;
  char jobs[16][64];
  int njobs;
} tasks;

static int cmp_desc(const void *a, const void *b) {
  const double x = ((const task *)a)->s, y = ((const task *)b)->s;
  return (x < y) - (x > y);
}

/* job,kind,policy,compute_s,cpu_s,... : one task per line after the header. */
static int load(const char *path, tasks *ts) {
  FILE *f = fopen(path, "r");
  if (!f) return -1;
  char line[512];
  if (!fgets(line, sizeof line, f)) return fclose(f), -1;
  while (fgets(line, sizeof line, f)) {
    char job[64], kind[16];
    double wall, cpu;
    if (sscanf(line, "%63[^,],%15[^,],%*[^,],%lf,%lf", job, kind, &wall, &cpu) != 4) continue;
    int j = 0;
    while (j < ts->njobs && strcmp(ts->jobs[j], job)) j++;
    if (j == ts->njobs && ts->njobs < 16) strcpy(ts->jobs[ts->njobs++], job);
    if (ts->n == ts->cap) {
      ts->cap = ts->cap ? 2 * ts->cap : 4096;
      ts->t = realloc(ts->t, (size_t)ts->cap * sizeof *ts->t);
      if (!ts->t) return fclose(f), -1;
    }
    ts->t[ts->n++] = (task){cpu, j, !strcmp(kind, "bucket")};
  }
  return fclose(f);
}

/* The ready queue: ops and parts longest first, then each job's buckets once its ops are
 * done (`left_ops`), longest first. */
typedef struct {
  task *ops, *bkt;
  int nops, nbkt, iop, ibkt;
  int *left_ops; /* per job */
  double left_s; /* work not handed out */
} queue;

static int ready_next(queue *q, task *out) {
  if (q->iop < q->nops) return *out = q->ops[q->iop++], 1;
  for (int i = q->ibkt; i < q->nbkt; i++)
    if (q->left_ops[q->bkt[i].job] == 0) {
      *out = q->bkt[i];
      q->bkt[i] = q->bkt[q->ibkt];
      q->ibkt++;
      return 1;
    }
  return 0;
}

typedef struct {
  double done_at[2]; /* its two batches' ends (0: none) */
  double work_s;     /* busy time */
  int nres[2];       /* tasks in each */
  int ops[2][16];    /* op tasks per job in each (released when the batch returns) */
} worker;

static double batch_target(double left_s, int workers, const params *p, int scaled) {
  const double share = left_s / workers; /* each worker's share of what is left */
  const double lo = scaled ? fmax(0.005, fmin(workers * p->msg_us * 1e-6 / 0.25, share)) : 0.005;
  const double hi = scaled ? fmax(0.05, lo) : 0.05;
  return fmax(lo, fmin(hi, share / 4.0));
}

/* Fill slot k of worker w starting at time t; 0 when nothing is ready. */
static int dispatch(queue *q, worker *w, int k, double t, int workers, const params *p, int scaled) {
  const double target = batch_target(q->left_s, workers, p, scaled);
  double s = 0;
  int n = 0;
  memset(w->ops[k], 0, sizeof w->ops[k]);
  task x;
  while (n < MAX_BATCH && (n == 0 || s < target) && ready_next(q, &x)) {
    s += x.s, n++;
    if (!x.bucket) w->ops[k][x.job]++;
  }
  if (!n) return 0;
  q->left_s -= s;
  const double start = fmax(t, w->done_at[!k]);
  w->done_at[k] = start + s;
  w->work_s += s;
  w->nres[k] = n;
  return 1;
}

typedef struct {
  double wall_s, master_busy_s, worker_util;
} outcome;

/* One run of the model at `ranks` ranks (ranks − 1 workers). */
static outcome simulate(const tasks *ts, int ranks, const params *p, int scaled) {
  const int workers = ranks - 1;
  queue q = {0};
  q.ops = malloc((size_t)ts->n * sizeof *q.ops);
  q.bkt = malloc((size_t)ts->n * sizeof *q.bkt);
  q.left_ops = calloc(16, sizeof *q.left_ops);
  worker *w = calloc((size_t)workers, sizeof *w);
  for (int i = 0; i < ts->n; i++) {
    q.left_s += ts->t[i].s;
    if (ts->t[i].bucket) q.bkt[q.nbkt++] = ts->t[i];
    else q.ops[q.nops++] = ts->t[i], q.left_ops[ts->t[i].job]++;
  }
  qsort(q.ops, (size_t)q.nops, sizeof *q.ops, cmp_desc);
  qsort(q.bkt, (size_t)q.nbkt, sizeof *q.bkt, cmp_desc);
  double master = p->setup_s, busy = p->setup_s, next_sync = master + 1, next_ckpt = master + p->checkpoint_s;
  long held = 0;
  int *idle = malloc(2 * (size_t)workers * sizeof *idle), nidle = 0; /* empty slots, 2w + k */
  for (int k = 0; k < 2; k++) /* every worker gets two batches, one message each */
    for (int i = 0; i < workers; i++) {
      master += p->msg_us * 1e-6, busy += p->msg_us * 1e-6;
      if (!dispatch(&q, &w[i], k, master, workers, p, scaled)) idle[nidle++] = 2 * i + k;
    }
  for (;;) { /* the earliest batch to come back */
    int wi = -1, ki = 0;
    double at = INFINITY;
    for (int i = 0; i < workers; i++)
      for (int k = 0; k < 2; k++)
        if (w[i].nres[k] && w[i].done_at[k] < at) at = w[i].done_at[k], wi = i, ki = k;
    if (wi < 0) break;
    const double start = fmax(master, at);
    double cost = (p->msg_us + p->task_us * w[wi].nres[ki]) * 1e-6;
    held += w[wi].nres[ki];
    w[wi].nres[ki] = 0;
    for (int j = 0; j < 16; j++) q.left_ops[j] -= w[wi].ops[ki][j];
    if (start >= next_sync) cost += p->sync_us * 1e-6, next_sync = start + 1;
    if (start >= next_ckpt) {
      const double ckpt = p->ckpt_us * 1e-6 * (double)held;
      cost += ckpt;
      next_ckpt = start + ckpt + fmax(p->checkpoint_s, 10 * ckpt);
    }
    master = start + cost;
    busy += cost;
    dispatch(&q, &w[wi], ki, master, workers, p, scaled);
    /* Slots left empty when nothing was ready, filled as soon as something is. */
    while (nidle > 0 && w[idle[nidle - 1] / 2].nres[idle[nidle - 1] % 2] == 0) {
      const int x = idle[nidle - 1];
      if (!dispatch(&q, &w[x / 2], x % 2, master + p->msg_us * 1e-6, workers, p, scaled)) break;
      master += p->msg_us * 1e-6, busy += p->msg_us * 1e-6;
      nidle--;
    }
    if (!w[wi].nres[ki]) idle[nidle++] = 2 * wi + ki;
  }
  double end = master, work = 0;
  for (int i = 0; i < workers; i++) work += w[i].work_s;
  outcome o = {end, busy, work / (end * workers)};
  free(q.ops), free(q.bkt), free(q.left_ops), free(w), free(idle);
  return o;
}

int main(int argc, char **argv) {
  params p = {
      .setup_s = 2.0, .task_us = 2.0, .msg_us = 10.0, .sync_us = 50.0, .ckpt_us = 30.0, .checkpoint_s = 60.0};
  int ranks[32] = {64, 128, 256, 512, 1000, 2000, 3000, 5000}, nr = 8, json = 0, repeat = 1;
  tasks ts = {0};
  for (int i = 1; i < argc; i++) {
    double *v = !strcmp(argv[i], "--setup-s")        ? &p.setup_s
                : !strcmp(argv[i], "--task-us")      ? &p.task_us
                : !strcmp(argv[i], "--msg-us")       ? &p.msg_us
                : !strcmp(argv[i], "--sync-us")      ? &p.sync_us
                : !strcmp(argv[i], "--ckpt-us")      ? &p.ckpt_us
                : !strcmp(argv[i], "--checkpoint-s") ? &p.checkpoint_s
                                                     : NULL;
    if (v && i + 1 < argc) *v = atof(argv[++i]);
    else if (!strcmp(argv[i], "--json")) json = 1;
    else if (!strcmp(argv[i], "--repeat") && i + 1 < argc) repeat = atoi(argv[++i]);
    else if (!strcmp(argv[i], "--ranks") && i + 1 < argc) {
      char *s = argv[++i];
      for (nr = 0; *s && nr < 32; s += *s == ',') ranks[nr++] = (int)strtol(s, &s, 10);
    } else if (load(argv[i], &ts) < 0) {
      fprintf(stderr, "bench_farm_sim: cannot read the task log %s\n", argv[i]);
      return 2;
    }
  }
  if (!ts.n) {
    fprintf(stderr, "usage: bench_farm_sim TASKS.csv... [--setup-s S] [--task-us U] [--msg-us M] "
                    "[--sync-us S] [--ckpt-us U] [--checkpoint-s C] [--repeat K] [--ranks N,...] "
                    "[--json]\n");
    return 2;
  }
  const int n1 = ts.n;
  for (int k = 1; k < repeat; k++) { /* copies keep their job: each job K times as large */
    ts.t = realloc(ts.t, (size_t)n1 * (size_t)(k + 1) * sizeof *ts.t);
    if (!ts.t) return 1;
    memcpy(ts.t + (size_t)k * n1, ts.t, (size_t)n1 * sizeof *ts.t);
    ts.n += n1;
  }
  double total = 0;
  for (int i = 0; i < ts.n; i++) total += ts.t[i].s;
  if (json) printf("{\"tasks\": %d, \"cpu_s\": %.3f, \"runs\": [", ts.n, total);
  else
    printf("%d tasks, %.1f CPU s; master: setup %.2f s, %.2f us a task, %.1f us a message\n"
           "%6s | %10s %8s %8s | %10s %8s %8s %8s\n",
           ts.n, total, p.setup_s, p.task_us, p.msg_us, "ranks", "fixed: s", "master%", "workers%", "scaled: s",
           "master%", "workers%", "speedup");
  double base = 0;
  for (int r = 0; r < nr; r++) {
    if (ranks[r] < 2) continue;
    const outcome f = simulate(&ts, ranks[r], &p, 0), s = simulate(&ts, ranks[r], &p, 1);
    if (r == 0) base = s.wall_s;
    if (json)
      printf("%s{\"ranks\": %d, \"fixed\": {\"wall_s\": %.4f, \"master_busy\": %.4f, \"worker_util\": %.4f}, "
             "\"scaled\": {\"wall_s\": %.4f, \"master_busy\": %.4f, \"worker_util\": %.4f}}",
             r ? ", " : "", ranks[r], f.wall_s, f.master_busy_s / f.wall_s, f.worker_util, s.wall_s,
             s.master_busy_s / s.wall_s, s.worker_util);
    else
      printf("%6d | %10.3f %7.1f%% %7.1f%% | %10.3f %7.1f%% %7.1f%% %7.2fx\n", ranks[r], f.wall_s,
             100 * f.master_busy_s / f.wall_s, 100 * f.worker_util, s.wall_s, 100 * s.master_busy_s / s.wall_s,
             100 * s.worker_util, base / s.wall_s);
  }
  if (json) printf("]}\n");
  free(ts.t);
  return 0;
}
