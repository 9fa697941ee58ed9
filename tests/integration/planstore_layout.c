/* planstore_layout.c — the layout of planstore.h's structs as this compiler lays them out,
 * one line per field ("STRUCT FIELD OFFSET SIZE KIND"), one per struct ("STRUCT - 0 SIZEOF")
 * and one per constant the Python binding copies ("const NAME VALUE"), for
 * test_python_package.py to compare with the ctypes mirror in python/enpu_planstore. */
#include <stddef.h>
#include <stdio.h>

#include "planstore.h"

/* A field's kind, so that a mirror of the right size and the wrong type (a double read as
 * a uint64) fails too; an array is its element's kind with "[]" (it decays here). A type
 * this does not know is "?", which no mirror matches: teach it the new type. */
#define KIND(x) \
  _Generic((x), double: "double", int: "int32", unsigned: "uint32", unsigned long: "uint64", const char *: "char*", \
           char *: "char[]", unsigned char *: "uint8[]", default: "?")
#define FIELD(T, f) printf("%s %s %zu %zu %s\n", #T, #f, offsetof(T, f), sizeof(((T *)0)->f), KIND(((T *)0)->f))
#define SIZE(T) printf("%s - 0 %zu\n", #T, sizeof(T))
#define CONST(c) printf("const %s %ld\n", #c, (long)(c))

static void plan_layout(void) {
  SIZE(planstore_plan);
  FIELD(planstore_plan, policy);
  FIELD(planstore_plan, bucket);
  FIELD(planstore_plan, phase);
  FIELD(planstore_plan, budget_mode);
  FIELD(planstore_plan, batch);
  FIELD(planstore_plan, seq);
  FIELD(planstore_plan, t_nodvfs_ns);
  FIELD(planstore_plan, t_peak_ns);
  FIELD(planstore_plan, e_nodvfs_nj);
  FIELD(planstore_plan, target_ns);
  FIELD(planstore_plan, walk_prefix);
  FIELD(planstore_plan, walk_steps);
  FIELD(planstore_plan, time_ns);
  FIELD(planstore_plan, energy_nj);
  FIELD(planstore_plan, lower_bound_nj);
  FIELD(planstore_plan, savings_vs_nodvfs);
  FIELD(planstore_plan, plan_time_ns);
  FIELD(planstore_plan, overhead_pct);
  FIELD(planstore_plan, paper_overhead_pct);
  FIELD(planstore_plan, plan_energy_nj);
  FIELD(planstore_plan, note);
}

static void op_states_layout(void) {
  SIZE(planstore_op_states);
  FIELD(planstore_op_states, op);
  FIELD(planstore_op_states, signature);
  FIELD(planstore_op_states, name);
  FIELD(planstore_op_states, instances);
  FIELD(planstore_op_states, lead_instances);
  FIELD(planstore_op_states, lead_pareto);
  FIELD(planstore_op_states, trail_pareto);
  FIELD(planstore_op_states, lead_states);
  FIELD(planstore_op_states, trail_states);
  FIELD(planstore_op_states, lead_time_ns);
  FIELD(planstore_op_states, trail_time_ns);
  FIELD(planstore_op_states, lead_energy_nj);
  FIELD(planstore_op_states, trail_energy_nj);
}

int main(void) {
  plan_layout();
  op_states_layout();
  SIZE(planstore_bucket);
  FIELD(planstore_bucket, phase);
  FIELD(planstore_bucket, batch);
  FIELD(planstore_bucket, seq);
  FIELD(planstore_bucket, status);
  SIZE(enpu_err);
  FIELD(enpu_err, code);
  FIELD(enpu_err, msg);
  CONST(PLANSTORE_NSTATE);
  CONST(ENPU_ERR_MSG_LEN);
  CONST(PLANSTORE_PREFILL);
  CONST(PLANSTORE_DECODE);
  CONST(PLANSTORE_BUDGET_PAPER);
  CONST(PLANSTORE_ARG_BATCH);
  CONST(PLANSTORE_ARG_SEQ);
  CONST(PLANSTORE_ARG_SLACK);
  CONST(PLANSTORE_ARG_TARGET_MS);
  CONST(PLANSTORE_BUCKET_OK);
  CONST(PLANSTORE_BUCKET_INFEASIBLE_CAPACITY);
  CONST(PLANSTORE_BUCKET_FAILED);
  CONST(PLANSTORE_BUCKET_PENDING);
  return 0;
}
