/* test_search.h — the search module's tests in other files than test_search.c (which
 * holds main, the synthetic evaluators, the request level against brute force, the
 * invariants, vf.set and the real op): test_search_gap.c, exact vs approximate Pareto
 * sets, trim and the GA; test_search_budget.c, budget modes and the baselines' domains;
 * test_search_design.c, epochs, gating and the design-space properties;
 * test_search_exact.c, the exact Pareto search against the exhaustive one (and under
 * the policy variants); test_search_domains.c, the domain counts against each other. */
#ifndef TEST_SEARCH_H
#define TEST_SEARCH_H

#include <math.h>

#include "search.h"
#include "search_internal.h"
#include "test_util.h"

#define JOB_PATH ENPU_SOURCE_DIR "/jobs/llama3-70b.json"

/* a and b within a relative tolerance. */
#define assert_near_rel(a, b, rel)                                     \
  do {                                                                 \
    const double a_ = (a), b_ = (b);                                   \
    if (!(fabs(a_ - b_) <= fmax(fabs(a_), fabs(b_)) * (rel)))          \
      fail_msg("%.17g != %.17g (relative %g)", a_, b_, (double)(rel)); \
  } while (0)

/* The layers a heavy case builds its graph with (graph_build_depth): the model's all, or
 * `small` of them at ENPU_TEST_SIZE=small (test_size.h), the same ops with fewer
 * instances; the request-level walks re-price the whole request at each step. */
/* The layers a heavy case builds its graph with (graph_build_depth): `small` of them (the
 * same ops with fewer instances), or the model's all at ENPU_TEST_SIZE=full (test_size.h). */
int case_layers(const config_job *job, int small);

/* A synthetic roofline evaluator (test_search.c): time max over components of a / state,
 * energy p · time + delta · (sum of the states); calls counts the evaluations. */
typedef struct {
  double a, p, delta;
  int64_t calls;
} roofline;
int roofline_eval(void *user, const int s[CONFIG_NCOMP], double *t, double *e, enpu_err *err);

/* A real bucket (the job's decode, batch 1, KV 1024) with its cost and search contexts
 * (test_search_gap.c). */
typedef struct {
  config_job *job;
  graph *g;
  cost_ctx *cost;
  search_ctx *sx;
} real_bucket;
void real_bucket_open(real_bucket *b);
void real_bucket_close(real_bucket *b);

extern const struct CMUnitTest search_gap_tests[], search_budget_tests[], search_design_tests[];
extern const size_t search_gap_ntests, search_budget_ntests, search_design_ntests;

void test_exact_equals_exhaustive(void **state);
void test_exact_variants(void **state);
void test_finer_mimics_coarser(void **state);

#endif /* TEST_SEARCH_H */
