/* search_key.c — the identity of a compiled unit: the key a store's ops.signature holds
 * and farm results and the result cache are filed under (a graph op's or an epoch's: its
 * signature, the chip tables, the cost-model version, the policy without gating and every
 * search option that changes a Pareto set). The farm keys its tasks by it and the report
 * finds a stored op's graph op by it. The strings hashed ("enpu-farm-op", ...) are part of
 * every stored key: never change them. */
#include "cost.h"
#include "search.h"

/* Every option that changes a Pareto set or a plan (threads only change speed); gating
 * changes plans only, so op keys leave it out and pg+X shares X's op tasks. */
void search_hash_options(enpu_hasher *h, const config_job *job, int variant, const search_options *opt) {
  enpu_hasher_i64(h, (int64_t)config_job_chip(job, variant)->hash);
  enpu_hasher_str(h, COST_MODEL_VERSION);
  enpu_hasher_i64(h, opt->request);
  enpu_hasher_i64(h, opt->enpu_domains);
  enpu_hasher_f64(h, opt->walk_cap_slack);
  enpu_hasher_i64(h, opt->ga.population);
  enpu_hasher_i64(h, opt->ga.generations);
  enpu_hasher_i64(h, (int64_t)opt->ga.rng_seed);
  enpu_hasher_i64(h, opt->ga_groups);
  enpu_hasher_i64(h, opt->ideal_method);
  enpu_hasher_i64(h, opt->op_trim);
  enpu_hasher_i64(h, opt->transition_aware);
  enpu_hasher_i64(h, opt->budget);
  enpu_hasher_i64(h, opt->transitions);
  enpu_hasher_i64(h, opt->shadow_vregs);
  enpu_hasher_f64(h, opt->epoch_ns);
}

/* A sweep point whose values the op level does not read shares the job chip's op
 * results (config_variant.ops_differ): its op key is the job chip's, exactly. */
static config_policy_spec search_op_spec(const config_job *job, const config_policy_spec *policy) {
  config_policy_spec op = config_policy_spec_ungated(policy);
  if (job && op.variant > 0 && op.variant <= job->variant_count && !job->variants[op.variant - 1].ops_differ)
    op.variant = 0;
  return op;
}

uint32_t search_op_policy(const config_job *job, const config_policy_spec *policy) {
  const config_policy_spec op = search_op_spec(job, policy);
  return config_policy_spec_code(&op);
}

/* A unit's key: a graph op's, or an epoch's (the hash of its members' signatures); with
 * its segment when segment >= 0. */
uint64_t search_unit_key(const config_job *job, const config_policy_spec *policy, const search_options *opt,
                         const char *what, uint64_t signature, int segment) {
  enpu_hasher h;
  enpu_hasher_init(&h, 0);
  enpu_hasher_str(&h, what);
  enpu_hasher_i64(&h, (int64_t)signature);
  const config_policy_spec op = search_op_spec(job, policy);
  enpu_hasher_i64(&h, config_policy_spec_code(&op));
  if (segment >= 0) enpu_hasher_i64(&h, segment);
  search_hash_options(&h, job, op.variant, opt);
  return enpu_hasher_digest(&h);
}

uint64_t search_op_key(const config_job *job, const config_policy_spec *policy, const search_options *opt,
                       const graph_op *op) {
  /* uniform keeps an op's instances apart per segment (embedding, layer kinds, head), so
   * a reader can rebuild a pass of fewer layers from its ops (planstore.md). */
  return search_unit_key(job, policy, opt, "enpu-farm-op", op->signature,
                         power_policy_of(policy->base)->ops_per_segment ? op->segment : -1);
}
