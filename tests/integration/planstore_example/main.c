/* main.c — the smallest serving-runtime client of <enpu/planstore.h>: open a store, pad
 * a batch to its bucket, take the plan for a target time, list its op states and
 * re-target the rest of the pass from its middle op instance.
 * Usage: planstore_example STORE PHASE(prefill|decode) BATCH SEQ TARGET_NS */
#include <enpu/planstore.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int main(int argc, char **argv) {
  if (argc != 6) {
    fprintf(stderr, "usage: %s STORE prefill|decode BATCH SEQ TARGET_NS\n", argv[0]);
    return 2;
  }
  planstore *ps = NULL;
  enpu_err err = {0};
  if (planstore_open(argv[1], &ps, &err) != 0) {
    fprintf(stderr, "%s\n", err.msg);
    return 1;
  }
  int phase = strcmp(argv[2], "decode") == 0 ? PLANSTORE_DECODE : PLANSTORE_PREFILL;
  planstore_plan plan;
  int rc = planstore_lookup(ps, NULL, phase, atoi(argv[3]), atoi(argv[4]), strtod(argv[5], NULL), &plan, &err);
  if (rc == 0) {
    printf("policy=%s batch=%d seq=%d prefix=%llu time_ns=%.17g energy_nj=%.17g\n",
           planstore_policy_name(ps, plan.policy), plan.batch, plan.seq, (unsigned long long)plan.walk_prefix,
           plan.time_ns, plan.energy_nj);
    size_t n = planstore_plan_op_count(ps, &plan);
    planstore_op_states *st = calloc(n ? n : 1, sizeof *st);
    rc = st ? planstore_plan_states(ps, &plan, st, n, &n, &err) : ENPU_ERR_NOMEM;
    for (size_t i = 0; rc == 0 && i < n; i++)
      printf("op %s x%llu: %llu at states %u/%u/%u/%u/%u\n", st[i].name, (unsigned long long)st[i].instances,
             (unsigned long long)st[i].lead_instances, st[i].lead_states[0], st[i].lead_states[1],
             st[i].lead_states[2], st[i].lead_states[3], st[i].lead_states[4]);
    free(st);
    /* Re-target the batch half-way: the rest of the pass within half its time. */
    const unsigned long long total = planstore_plan_instance_count(ps, &plan);
    planstore_plan rest;
    const int src = planstore_lookup_suffix(ps, &plan, total / 2, plan.time_ns / 2, &rest, NULL);
    if (rc == 0 && (src == 0 || src == ENPU_ERR_INFEASIBLE))
      printf("suffix from=%llu of %llu prefix=%llu time_ns=%.17g fits=%d\n", total / 2, total,
             (unsigned long long)rest.walk_prefix, rest.time_ns, src == 0);
  }
  if (rc != 0) fprintf(stderr, "%s\n", err.msg);
  planstore_close(ps);
  return rc == 0 ? 0 : 1;
}
