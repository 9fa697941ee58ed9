/* farm_summary.c — a farm job's summary as Markdown (farm_summary_print): what the CLI
 * prints and summary.md holds. Every figure comes from the farm_summary as filled by
 * farm_run; nothing is computed here. */
#include <string.h>

#include "farm.h"

void farm_summary_print(const farm_summary *s, FILE *out) {
  static const char *outcome[] = {"done", "finished with failures", "", "interrupted (resumable)"};
  fprintf(out, "# Farm summary: %s\n\n", s->job);
  fprintf(out, "| | |\n|---|---|\n");
  fprintf(out, "| outcome | %s |\n", outcome[s->outcome]);
  fprintf(out, "| store | %s |\n", s->store_path);
  fprintf(out, "| ranks | %d |\n", s->ranks);
  fprintf(out, "| buckets (x policies) | %lld ok, %lld infeasible (capacity), %lld failed |\n",
          (long long)s->buckets_ok, (long long)s->buckets_infeasible, (long long)s->buckets_failed);
  for (int k = 0; k < 2; k++) {
    fprintf(out, k ? "| CPU seconds per policy |" : "| unique op signatures |");
    for (int p = 0; p < s->npolicies; p++) {
      const char *name = s->policy_names[p];
      if (k) fprintf(out, "%s %s %.2f", p ? "," : "", name, s->policy_cpu_s[p]);
      else fprintf(out, "%s %s %lld", p ? "," : "", name, (long long)s->unique_ops[p]);
    }
    fprintf(out, " |\n");
  }
  if (s->variants > 0)
    fprintf(
        out,
        "| sweep | %d chip variants; their policies' op searches: %lld, %lld of them (%.1f %%) the job chip's |\n",
        s->variants, (long long)s->variant_ops, (long long)s->variant_reuse,
        s->variant_ops ? 100.0 * (double)s->variant_reuse / (double)s->variant_ops : 0.0);
  fprintf(out, "| tasks | %lld to do (%lld op, %lld bucket, %lld op part), %lld done, %lld failed |\n",
          (long long)s->tasks_total, (long long)s->op_tasks, (long long)s->bucket_tasks, (long long)s->part_tasks,
          (long long)s->tasks_done, (long long)s->tasks_failed);
  fprintf(out, "| reused | %lld from the store, %lld from the journal (%lld op searches resumed part-way) |\n",
          (long long)s->reused_store, (long long)s->reused_journal, (long long)s->resumed_ops);
  if (s->cache_used)
    fprintf(out,
            "| cache | %lld op + %lld bucket results from the cache, %lld looked up and missing, %lld damaged "
            "(removed, recomputed), %lld stored |\n",
            (long long)s->cache_hits_op, (long long)s->cache_hits_bucket, (long long)s->cache_misses,
            (long long)s->cache_damaged, (long long)s->cache_stored);
  fprintf(out, "| recomputed | %lld |\n", (long long)s->recomputed);
  if (s->validation_kept + s->validation_dropped + s->replay_kept + s->replay_dropped > 0)
    fprintf(out,
            "| validation rows | %lld kept, %lld dropped (their plans changed or are gone); replay rows %lld "
            "kept, %lld dropped |\n",
            (long long)s->validation_kept, (long long)s->validation_dropped, (long long)s->replay_kept,
            (long long)s->replay_dropped);
  fprintf(out, "| evaluations | %lld |\n", (long long)s->evaluations);
  fprintf(out, "| core-seconds | %.2f (CPU %.2f) |\n", s->core_s, s->cpu_s);
  fprintf(out, "| wall time | %.2f s |\n", s->wall_s);
  fprintf(out, "| master CPU | %.2f s (%.1f %% of one core)%s |\n", s->master_cpu_s,
          s->wall_s > 0 ? 100.0 * s->master_cpu_s / s->wall_s : 0.0, s->jobs > 1 ? ", the whole run's" : "");
  fprintf(out, "| master memory | %.1f MB peak resident |\n", s->master_rss_mb);
  fprintf(out, "| task batches | %lld%s |\n", (long long)s->batches, s->jobs > 1 ? ", the whole run's" : "");
  if (s->duplicates)
    fprintf(out, "| duplicates | %lld results dropped (another rank's came first: a silent rank answered late) |\n",
            (long long)s->duplicates);
  for (int k = 0; k < s->nwarnings && k < FARM_WARNINGS_MAX; k++)
    fprintf(out, "| warning | %s |\n", s->warnings[k]);
  farm_changes_print(s, out);
}

/* "151 op + 2930 bucket tasks recomputed" (op parts, cache hits when there are some). */
static void recomputed_text(const farm_summary *s, char *out, size_t len) {
  const int n = snprintf(out, len, "%lld op + %lld bucket tasks recomputed", (long long)s->op_tasks,
                         (long long)s->bucket_tasks);
  if (s->part_tasks && n > 0 && (size_t)n < len)
    snprintf(out + n, len - (size_t)n, " (and %lld op parts)", (long long)s->part_tasks);
  const size_t m = strlen(out);
  if (s->cache_hits_op + s->cache_hits_bucket && m < len)
    snprintf(out + m, len - m, "; %lld op + %lld bucket results from the cache", (long long)s->cache_hits_op,
             (long long)s->cache_hits_bucket);
}

void farm_changes_print(const farm_summary *s, FILE *out) {
  if (!s->had_store) return;
  char done[256];
  recomputed_text(s, done, sizeof done);
  fprintf(out, "\n## What changed since the store was farmed\n\n");
  if (s->nchanges == 0) {
    fprintf(out, "No input changed: %s.\n", done);
    return;
  }
  fprintf(out, "| input | before -> now | recomputed |\n|---|---|---|\n");
  for (int k = 0; k < s->nchanges && k < FARM_CHANGES_MAX; k++)
    fprintf(out, "| %s | %s -> %s | %s |\n", s->changes[k].path, s->changes[k].before, s->changes[k].now,
            s->nchanges == 1 ? done : "");
  if (s->nchanges > FARM_CHANGES_MAX) fprintf(out, "| %d more fields | | |\n", s->nchanges - FARM_CHANGES_MAX);
  if (s->nchanges > 1)
    fprintf(out, "| all %d together | | %s (a task may depend on several fields: not split per field) |\n",
            s->nchanges, done);
}
