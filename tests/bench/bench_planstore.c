/* bench_planstore.c — the plan store reader's speed: planstore_open time, the median
 * planstore_lookup time once opened (targets: <= 1 us), and the wall time of a whole
 * `enpu query` process (target: <= 50 ms), spawned 50 times. Open and query also report
 * CPU time (this process's, and the child's from getrusage), which a loaded machine does not
 * inflate the way it inflates wall time.
 * Usage: bench_planstore STORE [--enpu PATH] [--json]. Queries are drawn from the
 * store's own ok buckets (padded requests, targets inside each walk). Prints figures;
 * never fails on speed. */
#include <fcntl.h>
#include <math.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>

#include "common.h"
#include "planstore.h"
#include "store.h"

#define OPENS 21
#define ROUNDS 201
#define PER_ROUND 1000
#define SPAWNS 50

extern char **environ;

typedef struct {
  const char *policy;
  int phase, batch, seq;
  double target_ns;
} query;

static double median(double *v, size_t n) {
  qsort(v, n, sizeof *v, enpu_cmp_double);
  return v[n / 2];
}

static uint64_t rng_next(uint64_t *s) {
  *s ^= *s << 13;
  *s ^= *s >> 7;
  *s ^= *s << 17;
  return *s;
}

/* PER_ROUND queries over the ok buckets of every policy: a request at or below the
 * bucket (so it pads to it or a smaller one) and a target inside the bucket's walk. */
static size_t make_queries(const store_contents *c, query *q, size_t cap) {
  uint64_t seed = 0x9e3779b97f4a7c15u;
  size_t n = 0, ok = 0;
  for (size_t p = 0; p < c->npolicies; p++)
    for (size_t i = 0; i < c->policies[p].nbuckets; i++) ok += c->policies[p].buckets[i].status == STORE_BUCKET_OK;
  for (size_t k = 0; ok && n < cap; k++) {
    const store_policy_tables *p = &c->policies[k % c->npolicies];
    if (!p->nbuckets) continue;
    const store_bucket_rec *b = &p->buckets[rng_next(&seed) % p->nbuckets];
    if (b->status != STORE_BUCKET_OK) continue;
    double span = b->walk_count ? p->walk[b->walk_first + b->walk_count - 1].time_ns - b->walk_start_time_ns : 0;
    q[n++] = (query){p->name, b->phase, 1 + (int)(rng_next(&seed) % (uint64_t)b->batch),
                     1 + (int)(rng_next(&seed) % (uint64_t)b->seq),
                     b->walk_start_time_ns + span * (double)(rng_next(&seed) % 1000) / 999.0};
  }
  return n;
}

static double cpu_ms(void) {
  struct timespec t;
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
  return (double)t.tv_sec * 1e3 + (double)t.tv_nsec / 1e6;
}

/* Wall milliseconds of one `enpu query` process (stdout to /dev/null), and its CPU
 * milliseconds in *cpu; < 0 on failure. */
static double time_query(const char *enpu, const char *store, const query *q, double *cpu) {
  char batch[16], seq[16], target[32];
  snprintf(batch, sizeof batch, "%d", q->batch);
  snprintf(seq, sizeof seq, "%d", q->seq);
  snprintf(target, sizeof target, "%.17g", q->target_ns / 1e6);
  char *argv[] = {(char *)enpu, "query",    (char *)store,     "--phase", q->phase ? "decode" : "prefill",
                  "--batch",    batch,      "--seq",           seq,       "--target-ms",
                  target,       "--policy", (char *)q->policy, "--json",  NULL};
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_addopen(&fa, 1, "/dev/null", O_WRONLY, 0);
  double t0 = enpu_now_s();
  pid_t pid;
  int rc = posix_spawn(&pid, enpu, &fa, NULL, argv, environ);
  posix_spawn_file_actions_destroy(&fa);
  int status = 0;
  struct rusage before, after;
  getrusage(RUSAGE_CHILDREN, &before);
  if (rc != 0 || waitpid(pid, &status, 0) != pid) return -1;
  double ms = (enpu_now_s() - t0) * 1e3;
  getrusage(RUSAGE_CHILDREN, &after); /* children's times grow when they are waited for */
  *cpu = (double)(after.ru_utime.tv_sec + after.ru_stime.tv_sec - before.ru_utime.tv_sec - before.ru_stime.tv_sec) *
             1e3 +
         (double)(after.ru_utime.tv_usec + after.ru_stime.tv_usec - before.ru_utime.tv_usec -
                  before.ru_stime.tv_usec) /
             1e3;
  /* exit 1 is a lookup answer too (a target below the fastest plan of a smaller bucket) */
  return WIFEXITED(status) && WEXITSTATUS(status) <= 1 ? ms : -1;
}

int main(int argc, char **argv) {
  const char *store = NULL, *enpu = NULL;
  int json = 0;
  for (int i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "--json")) json = 1;
    else if (!strcmp(argv[i], "--enpu") && i + 1 < argc) enpu = argv[++i];
    else store = argv[i];
  }
  if (!store) {
    fprintf(stderr, "usage: bench_planstore STORE [--enpu PATH] [--json]\n");
    return 2;
  }
  enpu_err err = {0};
  store_contents *c = NULL;
  query *q = calloc(PER_ROUND, sizeof *q);
  if (!q || store_load(store, &c, &err) < 0) {
    fprintf(stderr, "bench_planstore: %s\n", q ? err.msg : "out of memory");
    return 1;
  }
  size_t nq = make_queries(c, q, PER_ROUND);
  double open_ms[OPENS], open_cpu[OPENS], lookup_ns[ROUNDS], spawn_ms[SPAWNS], spawn_cpu[SPAWNS];
  planstore *ps = NULL;
  for (int i = 0; i < OPENS; i++) {
    planstore_close(ps);
    double t0 = enpu_now_s(), c0 = cpu_ms();
    if (planstore_open(store, &ps, &err) < 0) {
      fprintf(stderr, "bench_planstore: %s\n", err.msg);
      return 1;
    }
    open_ms[i] = (enpu_now_s() - t0) * 1e3;
    open_cpu[i] = cpu_ms() - c0;
  }
  volatile double sink = 0; /* keeps the lookups from being optimised away */
  for (int r = 0; r < ROUNDS && nq; r++) {
    double t0 = enpu_now_s();
    for (size_t i = 0; i < nq; i++) {
      planstore_plan plan;
      if (planstore_lookup(ps, q[i].policy, q[i].phase, q[i].batch, q[i].seq, q[i].target_ns, &plan, NULL) == 0)
        sink += plan.energy_nj;
    }
    lookup_ns[r] = (enpu_now_s() - t0) * 1e9 / (double)nq;
  }
  /* planstore_lookup_suffix: each query's bucket, from its middle op instance, for half
   * the query's target (what a runtime asks when it re-targets a running batch). */
  double suffix_ns[ROUNDS];
  planstore_plan *bases = calloc(nq ? nq : 1, sizeof *bases);
  uint64_t *mid = calloc(nq ? nq : 1, sizeof *mid);
  size_t nb = 0;
  for (size_t i = 0; bases && mid && i < nq; i++) {
    int rc = planstore_lookup(ps, q[i].policy, q[i].phase, q[i].batch, q[i].seq, q[i].target_ns, &bases[nb], NULL);
    if (rc == 0 || rc == ENPU_ERR_INFEASIBLE) mid[nb] = planstore_plan_instance_count(ps, &bases[nb]) / 2, nb++;
  }
  for (int r = 0; r < ROUNDS && nb; r++) {
    double t0 = enpu_now_s();
    for (size_t i = 0; i < nb; i++) {
      planstore_plan plan;
      if (planstore_lookup_suffix(ps, &bases[i], mid[i], bases[i].target_ns / 2, &plan, NULL) >=
          ENPU_ERR_INFEASIBLE)
        sink += plan.energy_nj;
    }
    suffix_ns[r] = (enpu_now_s() - t0) * 1e9 / (double)nb;
  }
  const double suffix_med = nb ? median(suffix_ns, ROUNDS) : NAN;
  free(bases), free(mid);
  int spawned = 0;
  for (int i = 0; enpu && nq && i < SPAWNS; i++) {
    double ms = time_query(enpu, store, &q[(size_t)i * 7 % nq], &spawn_cpu[spawned]);
    if (ms < 0) {
      fprintf(stderr, "bench_planstore: `%s query` failed on %s\n", enpu, store);
      break;
    }
    spawn_ms[spawned++] = ms;
  }
  long bytes = 0;
  FILE *fp = fopen(store, "rb");
  if (fp && fseek(fp, 0, SEEK_END) == 0) bytes = ftell(fp);
  if (fp) fclose(fp);
  double open_med = median(open_ms, OPENS), open_cpu_med = median(open_cpu, OPENS);
  double lookup_med = nq ? median(lookup_ns, ROUNDS) : NAN;
  double query_cpu_med = spawned ? median(spawn_cpu, (size_t)spawned) : NAN;
  double query_med = spawned ? median(spawn_ms, (size_t)spawned) : NAN;
  double query_max = spawned ? spawn_ms[spawned - 1] : NAN; /* sorted by median() */
  if (json) {
    printf(
        "{\"store\": \"%s\", \"file_bytes\": %ld, \"open_ms\": %.3f, \"open_cpu_ms\": %.3f, "
        "\"lookup_median_ns\": %.1f, \"suffix_median_ns\": %.1f, \"query_median_ms\": %.2f, \"query_max_ms\": %.2f, "
        "\"query_cpu_median_ms\": %.2f, \"queries\": %d}\n",
        store, bytes, open_med, open_cpu_med, lookup_med, suffix_med, query_med, query_max, query_cpu_med, spawned);
  } else {
    printf("plan store %s: %ld bytes, %zu policies\n", store, bytes, c->npolicies);
    printf("planstore_open: median %.3f ms wall, %.3f ms CPU over %d opens\n", open_med, open_cpu_med, OPENS);
    printf("planstore_lookup: median %.1f ns per lookup (%d rounds of %zu; target <= 1000 ns)\n", lookup_med,
           ROUNDS, nq);
    printf("planstore_lookup_suffix: median %.1f ns per lookup (%d rounds of %zu; target <= 1000 ns)\n", suffix_med,
           ROUNDS, nb);
    if (spawned)
      printf("enpu query: median %.2f ms wall (max %.2f), %.2f ms CPU over %d processes (target <= 50 ms)\n",
             query_med, query_max, query_cpu_med, spawned);
    else printf("enpu query: not measured (give --enpu PATH)\n");
  }
  planstore_close(ps);
  store_contents_free(c);
  free(q);
  return 0;
}
