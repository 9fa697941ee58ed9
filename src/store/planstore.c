/* planstore.c — the plan store reader for serving runtimes: store_read (store_read.c)
 * loads and validates every table except plan_states once at open; lookups then work on
 * memory only.
 *
 * Invariants after planstore_open succeeds: those of store_read (every index and range
 * inside its table, walks replayable, `order` sorts the buckets without duplicates), so
 * lookups need no further checks. */
#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "enpu_policy.h" /* the policies' names: the default policy's rule below */
#include "planstore.h"
#include "store_internal.h"

struct planstore {
  store_policy *policies; /* in name order */
  size_t npolicies;
};

/* ---- open / close -------------------------------------------------------------- */

/* HDF5 prints what it could not free at exit ("infinite loop closing library", with every
 * interface it could not close) when the default error stack's automatic printing is on
 * then, and HDF5 1.10 leaks such a block when it fails to load a damaged object header.
 * Saving and restoring the printing around our calls (H5E_BEGIN_TRY) cannot reach that
 * exit, so the printing goes off for good, but only while it is HDF5's untouched default
 * (its own printer to stderr): a host that installed its own handler keeps it, and the host's
 * own HDF5 calls still fail with their return codes. */
static void quiet_hdf5_default_printing(void) {
  H5E_auto2_t func = NULL, fresh_func = NULL;
  void *data = NULL, *fresh_data = NULL;
  /* HDF5's default printer is internal; a new stack starts with it, so compare to one. */
  const hid_t fresh = H5Ecreate_stack();
  if (fresh < 0) return;
  const herr_t got = H5Eget_auto2(fresh, &fresh_func, &fresh_data);
  H5Eclose_stack(fresh);
  if (got >= 0 && H5Eget_auto2(H5E_DEFAULT, &func, &data) >= 0 && func && func == fresh_func && data == fresh_data)
    H5Eset_auto2(H5E_DEFAULT, NULL, NULL);
}

/* ---- the default policy ----------------------------------------------------------- */

/* The rule names policies through common's policy table (enpu_policy.h): the reader
 * ships without config, and the table lives in common so both read the same names. */
long planstore_default_policy_index(const char *const *names, size_t n) {
  enum { RULES = 5 };
  for (int rule = 0; names && rule < RULES; rule++) {
    long pick = -1;
    for (size_t i = 0; i < n; i++) {
      const char *nm = names[i];
      if (!nm || (rule < RULES - 1 && strchr(nm, PLANSTORE_VARIANT_SEP))) continue;
      const bool reference = !strcmp(nm, ENPU_POLICY_NAME_NODVFS) || !strcmp(nm, ENPU_POLICY_NAME_UNIFORM);
      const bool hit[RULES] = {!strcmp(nm, ENPU_POLICY_NAME_ENPU_ALL), !strcmp(nm, ENPU_POLICY_NAME_ENPU_C),
                               !strncmp(nm, ENPU_POLICY_ENPU_PREFIX, strlen(ENPU_POLICY_ENPU_PREFIX)), !reference,
                               true};
      if (hit[rule] && (pick < 0 || strcmp(nm, names[pick]) < 0)) pick = (long)i;
    }
    if (pick >= 0) return pick;
  }
  return -1;
}

const char *planstore_default_policy(const planstore *ps) {
  enum { MAX_NAMES = 256 };
  const char *names[MAX_NAMES];
  const size_t n = ps ? (ps->npolicies < MAX_NAMES ? ps->npolicies : MAX_NAMES) : 0;
  for (size_t i = 0; i < n; i++) names[i] = ps->policies[i].t.name;
  const long pick = planstore_default_policy_index(names, n);
  return pick < 0 ? NULL : names[pick];
}

/* The default policy's name among a store file's policies, read without their tables. */
static int default_policy_of_file(const char *path, char out[STORE_NAME_LEN], enpu_err *err) {
  char(*names)[STORE_NAME_LEN] = enpu_calloc(STORE_MAX_POLICIES, STORE_NAME_LEN);
  const char **ptrs = enpu_calloc(STORE_MAX_POLICIES, sizeof *ptrs);
  size_t n = 0;
  int rc = names && ptrs ? store_policy_names(path, names, STORE_MAX_POLICIES, &n, err)
                         : enpu_errorf(err, ENPU_ERR_NOMEM, "out of memory opening %s", path);
  for (size_t i = 0; rc == ENPU_OK && i < n; i++) ptrs[i] = names[i];
  const long pick = rc == ENPU_OK ? planstore_default_policy_index(ptrs, n) : -1;
  if (rc == ENPU_OK && pick < 0) rc = enpu_errorf(err, ENPU_ERR_NOT_FOUND, "plan store %s holds no policy", path);
  if (rc == ENPU_OK) snprintf(out, STORE_NAME_LEN, "%s", names[pick]);
  free(ptrs);
  free(names);
  return rc;
}

/* A policy the store does not hold: the message lists those it does, so that a typo
 * needs no second command to fix. */
static void list_policies(const char *path, enpu_err *err) {
  char(*names)[STORE_NAME_LEN] = enpu_calloc(STORE_MAX_POLICIES, STORE_NAME_LEN);
  size_t n = 0;
  enpu_err ignored = {0};
  if (!err || !names || store_policy_names(path, names, STORE_MAX_POLICIES, &n, &ignored) < 0) {
    free(names);
    return;
  }
  size_t used = strlen(err->msg);
  for (size_t i = 0; i < n && used < sizeof err->msg; i++) {
    const int w = snprintf(err->msg + used, sizeof err->msg - used, "%s%s", i ? ", " : "; it holds ", names[i]);
    used += w > 0 ? (size_t)w : 0;
  }
  free(names);
}

/* all: every policy; otherwise only `policy` (NULL: the default policy). */
static int open_store(const char *path, int all, const char *policy, planstore **out, enpu_err *err) {
  ENPU_RETURN_IF(!out, err, ENPU_ERR_INVALID, "planstore_open: no output handle");
  *out = NULL;
  ENPU_RETURN_IF(!path, err, ENPU_ERR_INVALID, "planstore_open: no path");
  planstore *ps = enpu_calloc(1, sizeof *ps);
  ENPU_RETURN_IF(!ps, err, ENPU_ERR_NOMEM, "out of memory opening %s", path);
  quiet_hdf5_default_printing(); /* before the TRY block, which restores what it found */
  char chosen[STORE_NAME_LEN];
  if (!all && !policy) {
    const int rc = default_policy_of_file(path, chosen, err);
    if (rc < 0) {
      free(ps);
      return rc;
    }
    policy = chosen;
  }
  int rc = ENPU_OK;
  /* A crafted file is an expected input here: report it through err, not HDF5's stderr
   * error stack. */
  H5E_BEGIN_TRY {
    rc = all ? store_read(path, 0, NULL, &ps->policies, &ps->npolicies, err)
             : store_read_policy(path, policy, &ps->policies, &ps->npolicies, err);
  }
  H5E_END_TRY;
  if (rc == ENPU_ERR_NOT_FOUND && !all) list_policies(path, err);
  if (rc < 0) {
    enpu_err_prefix(err, "plan store %s: ", path);
    free(ps);
    return rc;
  }
  *out = ps;
  return ENPU_OK;
}

int planstore_open(const char *path, planstore **out, enpu_err *err) { return open_store(path, 1, NULL, out, err); }

int planstore_open_policy(const char *path, const char *policy, planstore **out, enpu_err *err) {
  return open_store(path, 0, policy, out, err);
}

void planstore_close(planstore *ps) {
  if (!ps) return;
  store_policies_free(ps->policies, ps->npolicies);
  free(ps);
}

size_t planstore_policy_count(const planstore *ps) { return ps ? ps->npolicies : 0; }

const char *planstore_policy_name(const planstore *ps, size_t i) {
  return ps && i < ps->npolicies ? ps->policies[i].t.name : NULL;
}

/* ---- the bucket grid ------------------------------------------------------------- */

_Static_assert(PLANSTORE_BUCKET_OK == STORE_BUCKET_OK && PLANSTORE_BUCKET_PENDING == STORE_BUCKET_PENDING &&
                   PLANSTORE_BUCKET_FAILED == STORE_BUCKET_FAILED &&
                   PLANSTORE_BUCKET_INFEASIBLE_CAPACITY == STORE_BUCKET_INFEASIBLE_CAPACITY,
               "planstore.h's bucket statuses are the store's");

/* The policy of that name (NULL: the default policy). */
static const store_policy *policy_named(const planstore *ps, const char *policy) {
  if (!policy) policy = planstore_default_policy(ps);
  for (size_t i = 0; ps && policy && i < ps->npolicies; i++)
    if (strcmp(ps->policies[i].t.name, policy) == 0) return &ps->policies[i];
  return NULL;
}

size_t planstore_bucket_count(const planstore *ps, const char *policy) {
  const store_policy *p = policy_named(ps, policy);
  return p ? p->t.nbuckets : 0;
}

int planstore_bucket_info(const planstore *ps, const char *policy, size_t i, planstore_bucket *out, enpu_err *err) {
  ENPU_RETURN_IF(!ps || !out, err, ENPU_ERR_INVALID, "planstore_bucket_info: no store or output");
  const store_policy *p = policy_named(ps, policy);
  ENPU_RETURN_IF(!p, err, ENPU_ERR_NOT_FOUND, "no policy '%s' in the store", policy ? policy : "(any)");
  ENPU_RETURN_IF(i >= p->t.nbuckets, err, ENPU_ERR_RANGE, "bucket %zu of policy %s: it has %zu", i, p->t.name,
                 p->t.nbuckets);
  const store_bucket_rec *b = &p->t.buckets[p->order[i]];
  *out = (planstore_bucket){.phase = b->phase, .batch = b->batch, .seq = b->seq, .status = b->status};
  return ENPU_OK;
}

/* ---- lookups ------------------------------------------------------------------- */

/* First position in `order` whose bucket is >= (phase, batch, seq). */
static size_t lower_bound(const store_policy *p, int phase, int32_t batch, int32_t seq) {
  store_bucket_rec key = {.phase = (uint8_t)phase, .batch = batch, .seq = seq};
  size_t lo = 0, hi = p->t.nbuckets;
  while (lo < hi) {
    size_t mid = lo + (hi - lo) / 2;
    if (store_bucket_cmp(&p->t.buckets[p->order[mid]], &key) < 0) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

/* The smallest covering bucket: the first batch >= batch that has a seq >= seq. */
static long find_bucket(const store_policy *p, int phase, int batch, int seq) {
  size_t n = p->t.nbuckets;
  size_t pos = lower_bound(p, phase, batch, 0);
  while (pos < n && p->t.buckets[p->order[pos]].phase == phase) {
    int32_t b = p->t.buckets[p->order[pos]].batch;
    size_t hit = lower_bound(p, phase, b, seq);
    if (hit < n && p->t.buckets[p->order[hit]].phase == phase && p->t.buckets[p->order[hit]].batch == b)
      return (long)p->order[hit];
    pos = b == INT32_MAX ? n : lower_bound(p, phase, b + 1, 0);
  }
  return -1;
}

static const store_policy *find_policy(const planstore *ps, const char *policy, uint32_t *index) {
  const store_policy *p = policy_named(ps, policy);
  if (p) *index = (uint32_t)(p - ps->policies);
  return p;
}

/* A bucket of a checkpoint not compiled yet: the message counts the policy's buckets by
 * what the farm has done with them, so "compiled" counts compiled plans only (a bucket
 * that does not fit the chips is settled at the start but never compiled). */
static int pending_error(const store_policy *p, const store_bucket_rec *b, const char *phase_name, enpu_err *err) {
  size_t count[4] = {0};
  for (size_t i = 0; i < p->t.nbuckets; i++)
    if (p->t.buckets[i].status < 4) count[p->t.buckets[i].status]++;
  return enpu_errorf(err, ENPU_ERR_NOT_FOUND,
                     "%s bucket batch %d seq %d: not compiled yet (store is a checkpoint of a running farm: "
                     "%zu of %zu buckets compiled, %zu failed, %zu pending, %zu do not fit the chips)",
                     phase_name, b->batch, b->seq, count[STORE_BUCKET_OK],
                     p->t.nbuckets - count[STORE_BUCKET_INFEASIBLE_CAPACITY], count[STORE_BUCKET_FAILED],
                     count[STORE_BUCKET_PENDING], count[STORE_BUCKET_INFEASIBLE_CAPACITY]);
}

static int lookup_bucket(const planstore *ps, const char *policy, int phase, int batch, int seq,
                         const store_policy **pol, planstore_plan *plan, enpu_err *err) {
  ENPU_RETURN_IF(!ps || !plan, err, ENPU_ERR_INVALID, "planstore_lookup: no store or plan");
  ENPU_RETURN_IF(phase != PLANSTORE_PREFILL && phase != PLANSTORE_DECODE, err, ENPU_ERR_INVALID, "bad phase %d",
                 phase);
  ENPU_RETURN_IF(batch < 1 || seq < 1, err, ENPU_ERR_INVALID, "batch %d and seq %d must be >= 1", batch, seq);
  uint32_t pi = 0;
  const store_policy *p = find_policy(ps, policy, &pi);
  ENPU_RETURN_IF(!p, err, ENPU_ERR_NOT_FOUND, "no policy '%s' in the store", policy ? policy : "(any)");
  const char *phase_name = phase == PLANSTORE_PREFILL ? "prefill" : "decode";
  long bi = find_bucket(p, phase, batch, seq);
  ENPU_RETURN_IF(bi < 0 && p->max_batch[phase] == 0, err, ENPU_ERR_NOT_FOUND, "policy %s has no %s buckets",
                 p->t.name, phase_name);
  ENPU_RETURN_IF(bi < 0, err, ENPU_ERR_NOT_FOUND,
                 "no %s bucket covers batch %d seq %d in policy %s: the largest batch is %d, the largest seq %d",
                 phase_name, batch, seq, p->t.name, p->max_batch[phase], p->max_seq[phase]);
  const store_bucket_rec *b = &p->t.buckets[bi];
  ENPU_RETURN_IF(b->status == STORE_BUCKET_INFEASIBLE_CAPACITY, err, ENPU_ERR_INFEASIBLE,
                 "%s bucket batch %d seq %d does not fit the chips: %s", phase_name, b->batch, b->seq, b->message);
  if (b->status == STORE_BUCKET_PENDING) return pending_error(p, b, phase_name, err);
  ENPU_RETURN_IF(b->status == STORE_BUCKET_FAILED, err, ENPU_ERR_NOT_FOUND,
                 "%s bucket batch %d seq %d failed to compile: %s", phase_name, b->batch, b->seq, b->message);
  *plan = (planstore_plan){.policy = pi,
                           .bucket = (uint32_t)bi,
                           .phase = phase,
                           .budget_mode = b->budget,
                           .batch = b->batch,
                           .seq = b->seq,
                           .t_nodvfs_ns = b->t_nodvfs_ns,
                           .t_peak_ns = b->t_peak_ns,
                           .e_nodvfs_nj = b->e_nodvfs_nj,
                           .walk_steps = b->walk_count,
                           .plan_time_ns = NAN,
                           .overhead_pct = NAN,
                           .paper_overhead_pct = NAN,
                           .plan_energy_nj = NAN,
                           .note = b->message};
  *pol = p;
  return ENPU_OK;
}

/* The walk part of a lookup: plan (its bucket filled) for the exact target. */
static int plan_at_target(const store_policy *p, double target_ns, planstore_plan *plan, enpu_err *err) {
  ENPU_RETURN_IF(isnan(target_ns), err, ENPU_ERR_INVALID, "target time is NaN");
  const store_bucket_rec *b = &p->t.buckets[plan->bucket];
  const store_walk_rec *walk = p->t.walk ? &p->t.walk[b->walk_first] : NULL;
  /* Longest prefix with time <= target: cumulative times are non-decreasing. */
  uint64_t lo = 0, hi = b->walk_count;
  while (lo < hi) {
    uint64_t mid = lo + (hi - lo) / 2;
    if (walk[mid].time_ns <= target_ns) lo = mid + 1;
    else hi = mid;
  }
  plan->target_ns = target_ns;
  plan->walk_prefix = lo;
  for (uint32_t k = 0; k < b->plan_count; k++) { /* a stored plan for this very target */
    const store_plan_rec *sp = &p->t.plans[b->plan_first + k];
    if (fabs(sp->budget_ns - target_ns) <= 1e-9 * fabs(target_ns))
      plan->plan_time_ns = sp->time_ns, plan->overhead_pct = sp->overhead_pct,
      plan->paper_overhead_pct = sp->paper_overhead_pct, plan->plan_energy_nj = sp->energy_nj;
  }
  plan->time_ns = lo ? walk[lo - 1].time_ns : b->walk_start_time_ns;
  plan->energy_nj = lo ? walk[lo - 1].energy_nj : b->walk_start_energy_nj;
  plan->savings_vs_nodvfs = b->e_nodvfs_nj > 0 ? 1.0 - plan->energy_nj / b->e_nodvfs_nj : 0.0;
  /* The walk follows lower convex hulls, so the LP relaxation at the target moves the
   * next step only partly: linear interpolation inside that step. */
  plan->lower_bound_nj = plan->energy_nj;
  if (lo < b->walk_count && target_ns > plan->time_ns) {
    double f = (target_ns - plan->time_ns) / (walk[lo].time_ns - plan->time_ns);
    plan->lower_bound_nj = plan->energy_nj + f * (walk[lo].energy_nj - plan->energy_nj);
  }
  ENPU_RETURN_IF(target_ns < b->walk_start_time_ns, err, ENPU_ERR_INFEASIBLE,
                 "target %.9g ms is below the fastest plan of bucket batch %d seq %d (%.9g ms); "
                 "the fastest plan is returned",
                 target_ns / 1e6, b->batch, b->seq, b->walk_start_time_ns / 1e6);
  return ENPU_OK;
}

int planstore_lookup(const planstore *ps, const char *policy, int phase, int batch, int seq, double target_ns,
                     planstore_plan *plan, enpu_err *err) {
  const store_policy *p = NULL;
  ENPU_FORWARD(lookup_bucket(ps, policy, phase, batch, seq, &p, plan, err));
  return plan_at_target(p, target_ns, plan, err);
}

/* The slacks a lookup takes, as a fraction: those a store can hold (NaN fails too). */
static bool slack_in_range(double slack) { return slack >= 0 && slack <= PLANSTORE_MAX_SLACK; }

int planstore_lookup_slack(const planstore *ps, const char *policy, int phase, int batch, int seq, double slack,
                           planstore_plan *plan, enpu_err *err) {
  const store_policy *p = NULL;
  ENPU_FORWARD(lookup_bucket(ps, policy, phase, batch, seq, &p, plan, err));
  ENPU_RETURN_IF(!slack_in_range(slack), err, ENPU_ERR_INVALID, "slack %g outside [0, %g] (a fraction)", slack,
                 PLANSTORE_MAX_SLACK);
  const double budget_ns = enpu_budget_ns(plan->budget_mode == PLANSTORE_BUDGET_PAPER, plan->t_nodvfs_ns,
                                          plan->t_peak_ns, slack);
  return planstore_lookup(ps, policy, phase, batch, seq, budget_ns, plan, err);
}

/* ---- a lookup's arguments from text ---------------------------------------------- */

/* A decimal integer filling all of text (no leading space), within [lo, hi]. */
static int int_from_text(const char *text, long long lo, long long hi, double *value, enpu_err *err) {
  char *end = NULL;
  errno = 0;
  const long long v = isdigit((unsigned char)text[0]) || text[0] == '-' || text[0] == '+' ? strtoll(text, &end, 10)
                                                                                          : 0;
  ENPU_RETURN_IF(!end || end == text || *end || errno || v < lo || v > hi, err, ENPU_ERR_INVALID,
                 "expected an integer in [%lld, %lld], got '%.80s'", lo, hi, text);
  *value = (double)v;
  return ENPU_OK;
}

/* A number filling text but for a '%' unit at its end (*percent), no leading space. */
static bool real_from_text(const char *text, double *x, bool *percent) {
  char *end = NULL;
  if (!text[0] || isspace((unsigned char)text[0])) return false;
  *x = strtod(text, &end); /* an underflow to a tiny or zero value is still that value */
  *percent = end != text && end[0] == '%' && end[1] == '\0';
  return end != text && (*percent || !*end) && isfinite(*x);
}

static int slack_from_text(const char *text, double *value, enpu_err *err) {
  double x = NAN;
  bool percent = false;
  const bool number = real_from_text(text, &x, &percent);
  const double fraction = percent ? x / 100 : x;
  ENPU_RETURN_IF(number && !percent && x > 1 && x <= PLANSTORE_MAX_SLACK, err, ENPU_ERR_INVALID,
                 "expected a fraction (0.05) or a percent with its unit (5%%): a bare %.80s would be %g %% "
                 "(write %g%% if that is meant), got '%.80s'",
                 text, 100 * x, 100 * x, text);
  ENPU_RETURN_IF(!number || !slack_in_range(fraction) || (!percent && x > 1), err, ENPU_ERR_INVALID,
                 "expected a fraction in [0, 1] or a percent with its unit in [0%%, %g%%] (5%% = 0.05), got "
                 "'%.80s'",
                 100 * PLANSTORE_MAX_SLACK, text);
  *value = fraction;
  return ENPU_OK;
}

int planstore_parse_arg(int which, const char *text, double *value, enpu_err *err) {
  ENPU_RETURN_IF(!text || !value, err, ENPU_ERR_INVALID, "planstore_parse_arg: no text or output");
  switch (which) {
  case PLANSTORE_ARG_BATCH: return int_from_text(text, 1, PLANSTORE_MAX_BATCH, value, err);
  case PLANSTORE_ARG_SEQ: return int_from_text(text, 1, PLANSTORE_MAX_SEQ, value, err);
  case PLANSTORE_ARG_SLACK: return slack_from_text(text, value, err);
  case PLANSTORE_ARG_TARGET_MS: {
    double x = NAN;
    bool percent = false;
    ENPU_RETURN_IF(!real_from_text(text, &x, &percent) || percent || !(x > 0) || !isfinite(x * 1e6), err,
                   ENPU_ERR_INVALID, "expected a time in ms > 0 that is finite in ns, got '%.80s'", text);
    *value = x;
    return ENPU_OK;
  }
  default: return enpu_errorf(err, ENPU_ERR_INVALID, "planstore_parse_arg: no argument %d", which);
  }
}

/* The policy and bucket of a plan, if the plan can come from this store. */
static const store_policy *plan_policy(const planstore *ps, const planstore_plan *plan) {
  if (!ps || !plan || plan->policy >= ps->npolicies) return NULL;
  const store_policy *p = &ps->policies[plan->policy];
  if (plan->bucket >= p->t.nbuckets || plan->walk_prefix > p->t.buckets[plan->bucket].walk_count) return NULL;
  return p;
}

int planstore_retarget(const planstore *ps, const planstore_plan *bucket_plan, double target_ns,
                       planstore_plan *plan, enpu_err *err) {
  const store_policy *p = plan_policy(ps, bucket_plan);
  ENPU_RETURN_IF(!p || !plan || p->t.buckets[bucket_plan->bucket].status != STORE_BUCKET_OK, err, ENPU_ERR_INVALID,
                 "planstore_retarget: not a plan of this store");
  *plan = *bucket_plan;
  return plan_at_target(p, target_ns, plan, err);
}

int planstore_at_prefix(const planstore *ps, const planstore_plan *bucket_plan, uint64_t walk_prefix,
                        planstore_plan *plan, enpu_err *err) {
  const store_policy *p = plan_policy(ps, bucket_plan);
  ENPU_RETURN_IF(!p || !plan || p->t.buckets[bucket_plan->bucket].status != STORE_BUCKET_OK, err, ENPU_ERR_INVALID,
                 "planstore_at_prefix: not a plan of this store");
  const store_bucket_rec *b = &p->t.buckets[bucket_plan->bucket];
  ENPU_RETURN_IF(walk_prefix > b->walk_count, err, ENPU_ERR_RANGE,
                 "walk prefix %llu beyond the %llu steps of bucket batch %d seq %d",
                 (unsigned long long)walk_prefix, (unsigned long long)b->walk_count, b->batch, b->seq);
  const store_walk_rec *last = walk_prefix ? &p->t.walk[b->walk_first + walk_prefix - 1] : NULL;
  *plan = *bucket_plan;
  plan->walk_prefix = walk_prefix;
  plan->time_ns = plan->target_ns = last ? last->time_ns : b->walk_start_time_ns;
  plan->energy_nj = plan->lower_bound_nj = last ? last->energy_nj : b->walk_start_energy_nj;
  plan->savings_vs_nodvfs = b->e_nodvfs_nj > 0 ? 1.0 - plan->energy_nj / b->e_nodvfs_nj : 0.0;
  return ENPU_OK;
}

uint64_t planstore_plan_instance_count(const planstore *ps, const planstore_plan *plan) {
  const store_policy *p = plan_policy(ps, plan);
  if (!p) return 0;
  const store_bucket_rec *b = &p->t.buckets[plan->bucket];
  uint64_t n = 0;
  for (uint32_t k = 0; k < b->ops_count; k++) n += p->t.bucket_ops[b->ops_first + k].multiplicity;
  return n;
}

int planstore_lookup_suffix(const planstore *ps, const planstore_plan *bucket_plan, uint64_t first_instance,
                            double target_ns, planstore_plan *plan, enpu_err *err) {
  const store_policy *p = plan_policy(ps, bucket_plan);
  ENPU_RETURN_IF(!p || !plan || p->t.buckets[bucket_plan->bucket].status != STORE_BUCKET_OK, err, ENPU_ERR_INVALID,
                 "planstore_lookup_suffix: not a plan of this store");
  ENPU_RETURN_IF(isnan(target_ns), err, ENPU_ERR_INVALID, "target time is NaN");
  const uint64_t n = planstore_plan_instance_count(ps, bucket_plan);
  ENPU_RETURN_IF(first_instance > n || n == 0, err, ENPU_ERR_RANGE,
                 "op instance %llu beyond the %llu of a pass of bucket batch %d seq %d",
                 (unsigned long long)first_instance, (unsigned long long)n, bucket_plan->batch, bucket_plan->seq);
  /* The share of the pass left; an empty suffix takes no time at any prefix. */
  const double share = (double)(n - first_instance) / (double)n;
  *plan = *bucket_plan;
  plan->plan_time_ns = plan->overhead_pct = plan->paper_overhead_pct = plan->plan_energy_nj = NAN;
  const int rc = plan_at_target(p, share > 0 ? target_ns / share : INFINITY, plan, NULL);
  plan->target_ns = target_ns;
  plan->time_ns *= share, plan->energy_nj *= share, plan->lower_bound_nj *= share;
  if (rc == ENPU_ERR_INFEASIBLE && err)
    enpu_errorf(err, rc,
                "the fastest suffix from op instance %llu of bucket batch %d seq %d takes %.0f ns, above the "
                "target %.0f ns; the fastest is returned",
                (unsigned long long)first_instance, plan->batch, plan->seq, plan->time_ns, target_ns);
  return rc;
}

size_t planstore_plan_op_count(const planstore *ps, const planstore_plan *plan) {
  const store_policy *p = plan_policy(ps, plan);
  return p ? p->t.buckets[plan->bucket].ops_count : 0;
}

int planstore_plan_states(const planstore *ps, const planstore_plan *plan, planstore_op_states *out, size_t cap,
                          size_t *n, enpu_err *err) {
  const store_policy *p = plan_policy(ps, plan);
  ENPU_RETURN_IF(!p || !n, err, ENPU_ERR_INVALID, "planstore_plan_states: plan is not from this store");
  size_t need = p->t.buckets[plan->bucket].ops_count;
  *n = need;
  ENPU_RETURN_IF(cap < need || (need && !out), err, ENPU_ERR_RANGE,
                 "planstore_plan_states: the bucket has %zu ops, room for %zu", need, cap);
  return store_walk_replay(&p->t, plan->bucket, plan->walk_prefix, out, err);
}
