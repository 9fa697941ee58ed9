/* cmd_graph.c — `enpu graph JOB --phase prefill|decode --batch B --seq S [--time]
 * [--json]`: the per-chip operator graph of one bucket (ops with shapes, FLOPs, HBM/ICI
 * bytes, multiplicity and signature; segments; totals), and with --time each op's NoDVFS
 * time and energy from the cost model and their forward-pass totals. The graph and cost
 * modules do the work; this file parses arguments and prints. JSON field names are a
 * contract for scripts; a shape lists only the fields
 * meaningful for its op kind. */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "cli_internal.h"
#include "config.h"
#include "cost.h"
#include "graph.h"
#include "power.h"

static int run(void *args);

typedef struct {
  const char *path;
  cli_bucket b;
  int time, json;
} graph_args;

/* clang-format off */
static const cli_opt opts[] = {
    CLI_BUCKET_OPTS(graph_args),
    {.name = "time", .type = CLI_FLAG, .at = offsetof(graph_args, time),
     .help = "add each op's " ENPU_POLICY_DISPLAY_NODVFS " time_ns and energy_nj (one execution: all\n"
             "components at peak, fixed regulator, ctrl-only HBM) and their\n"
             "totals over the forward pass (x multiplicity)"},
    CLI_JSON_OPT(graph_args, "the graph"),
};

static const cli_spec spec = {.command = "graph", .run = run,
                              CLI_JOB_ARG(graph_args, path), CLI_OPTS(opts, graph_args)};
/* clang-format on */
const cli_spec *const cli_graph_specs[] = {&spec, NULL};

/* ---------------------------------------------------------------------------------
 * Shape fields: the one list of what is meaningful per op kind, shared by the table
 * and the JSON output. */

typedef struct {
  const char *key;
  double value;
  int is_int;
} shape_field;

#define SHAPE_MAX_FIELDS 10

static int shape_fields(const graph_op *op, shape_field *f) {
  const graph_shape *s = &op->shape;
  int n = 0;
#define INT_FIELD(name) \
  f[n++] = (shape_field) { #name, (double)s->name, 1 }
#define REAL_FIELD(name) \
  f[n++] = (shape_field) { #name, s->name, 0 }
  switch (op->kind) {
  case GRAPH_MATMUL: INT_FIELD(b), INT_FIELD(m), INT_FIELD(k), INT_FIELD(n), INT_FIELD(rhs_is_weight); break;
  case GRAPH_ATTENTION:
    INT_FIELD(b), INT_FIELD(kv_group), INT_FIELD(m), INT_FIELD(n), INT_FIELD(k), INT_FIELD(v);
    INT_FIELD(causal), INT_FIELD(kv_shared);
    break;
  case GRAPH_NORM: INT_FIELD(m), INT_FIELD(n), REAL_FIELD(vector_ops_per_elem); break;
  case GRAPH_ROPE:
  case GRAPH_ROUTER: INT_FIELD(m), INT_FIELD(n), INT_FIELD(k), REAL_FIELD(vector_ops_per_elem); break;
  case GRAPH_ELEMENTWISE:
    INT_FIELD(m), INT_FIELD(n), INT_FIELD(in_tensors), INT_FIELD(out_tensors);
    REAL_FIELD(vector_ops_per_elem);
    break;
  case GRAPH_EMBED: INT_FIELD(m), INT_FIELD(n); break;
  default: /* collectives: n = payload bytes per chip */ INT_FIELD(n), INT_FIELD(ranks); break;
  }
  INT_FIELD(dtype_bytes);
#undef INT_FIELD
#undef REAL_FIELD
  return n;
}

/* ---------------------------------------------------------------------------------
 * --time: the NoDVFS cost of every op */

typedef struct {
  double time_ns, energy_nj, dynamic_nj, static_nj;
  double energy_by_slot_nj[POWER_NSLOT]; /* sa, vu, sram, hbm, ici, fe, other */
} time_totals;

/* Evaluate every op of g once under NoDVFS (all-peak plan, fixed regulator, ctrl-only
 * HBM) into res[id] and sum the results x multiplicity into *tot.
 * @return 0, or a negative ENPU_ERR_* with err filled. */
static int time_ops(const config_job *job, const graph *g, cost_result *res, time_totals *tot, enpu_err *err) {
  power_model *pm = NULL;
  cost_ctx *ctx = NULL;
  cost_pipeline pl;
  cost_plan plan;
  for (int c = 0; c < CONFIG_NCOMP; c++) plan.state[c] = job->chip.freq_states;
  memset(tot, 0, sizeof *tot);
  int rc = power_model_create(&job->chip, POWER_HBM_CTRL_ONLY, POWER_REG_FIXED, &pm, err);
  if (!rc) rc = cost_ctx_create(&job->chip, &ctx, err);
  if (!rc) cost_pipeline_nodvfs(&pl, pm);
  for (int i = 0; !rc && i < graph_op_count(g); i++) {
    const graph_op *op = graph_op_at(g, i);
    rc = cost_eval(ctx, op, &plan, &pl, &res[i], err);
    if (rc) break;
    const double mult = (double)op->multiplicity;
    tot->time_ns += mult * res[i].time_ns;
    tot->energy_nj += mult * res[i].energy_total_nj;
    tot->dynamic_nj += mult * res[i].energy_dynamic_nj;
    tot->static_nj += mult * res[i].energy_static_nj;
    for (int k = 0; k < POWER_NSLOT; k++) tot->energy_by_slot_nj[k] += mult * res[i].energy_nj[k];
  }
  cost_ctx_free(ctx);
  power_model_free(pm);
  return rc;
}

static const char *slot_name(int k) {
  return k == POWER_SLOT_FE ? "fe" : k == POWER_SLOT_OTHER ? "other" : config_component_name((config_component)k);
}

/* ---------------------------------------------------------------------------------
 * Human output (res and tot NULL without --time) */

static void print_human(const config_job *job, const graph *g, const cost_result *res, const time_totals *tot) {
  const graph_info *in = graph_get_info(g);
  const config_parallel *p = &in->parallel;
  printf("job %s: model %s, %s, batch %d, seq %d, dp %d tp %d pp %d ep %d\n", job->name, job->model.name,
         config_phase_name(in->phase), in->batch, in->seq, p->dp, p->tp, p->pp, p->ep);
  printf("per chip: %" PRId64 " requests, %" PRId64 " tokens through non-expert ops", in->chip_requests,
         in->chip_tokens);
  const grid_moe_load *l = &in->moe;
  if (job->model.moe && job->moe_experts == CONFIG_EXPERTS_ACTIVE_ONLY)
    printf("; active-only: %" PRId64 " routed experts x %" PRId64 " tokens", l->active_experts, l->active_tokens);
  else if (job->model.moe)
    printf("; all-resident: 1 hot expert x %" PRId64 " tokens, %" PRId64 " x %" PRId64 " tokens", l->hot_tokens,
           l->cold_experts, l->cold_tokens);
  if (job->model.moe)
    printf(" (capacity factor %s%g)", job->moe_capacity_factor > 0 ? "" : "worst case, ",
           grid_capacity_factor(job));
  if (job->model.attention == CONFIG_ATTN_MLA)
    printf("\nMLA attention %s, ICI collectives %s", config_attn_impl_name(job->attention_impl),
           config_ici_model_name(job->ici_model));
  char note[256];
  grid_memory_note(&in->memory, note, sizeof note);
  printf("\ncapacity %s%s%s", config_capacity_name(job->capacity), note[0] ? ": " : "", note);
  printf("\n\n%4s  %-22s %-14s %10s %10s %9s %5s  ", "id", "name", "kind", "GFLOP", "HBM MB", "ICI MB", "mult");
  if (res) printf("%10s %11s  ", "time us", "energy uJ");
  printf("%-16s  %s\n", "signature", "shape");
  for (int i = 0; i < graph_op_count(g); i++) {
    const graph_op *op = graph_op_at(g, i);
    printf("%4d  %-22s %-14s %10.3f %10.3f %9.3f %5" PRId64 "  ", op->id, op->name, graph_kind_name(op->kind),
           op->flops / 1e9, (op->hbm_read_bytes + op->hbm_write_bytes) / 1e6, op->ici_bytes / 1e6,
           op->multiplicity);
    if (res) printf("%10.3f %11.3f  ", res[i].time_ns / 1e3, res[i].energy_total_nj / 1e3);
    printf("%016" PRIx64 " ", op->signature);
    shape_field f[SHAPE_MAX_FIELDS];
    const int n = shape_fields(op, f);
    for (int j = 0; j < n; j++) printf(f[j].is_int ? " %s=%.0f" : " %s=%g", f[j].key, f[j].value);
    printf("\n");
  }
  printf("\nsegments:");
  for (int i = 0; i < graph_segment_count(g); i++) {
    const graph_segment *s = graph_segment_at(g, i);
    printf(" %s (ops %d-%d) x %" PRId64 ";", s->name, s->first_op, s->first_op + s->op_count - 1, s->repeat);
  }
  const graph_totals *t = graph_get_totals(g);
  printf("\ntotals per chip: %.3f TFLOP (%.3f GFLOP per bucket token), %.3f G vector ops,\n"
         "  HBM %.3f GB read + %.3f GB written (weights %.3f GB), ICI %.3f GB sent,\n"
         "  KV cache %.3f GB resident, activations %.3f GB (estimate)\n",
         t->flops / 1e12, t->flops / 1e9 / (double)in->tokens, t->vector_ops / 1e9, t->hbm_read_bytes / 1e9,
         t->hbm_write_bytes / 1e9, t->weight_bytes / 1e9, t->ici_bytes / 1e9, t->kv_cache_bytes / 1e9,
         t->activation_bytes / 1e9);
  if (!tot) return;
  printf(ENPU_POLICY_DISPLAY_NODVFS " forward pass per chip: %.3f ms, %.3f J (dynamic %.1f%%, static %.1f%%);\n"
                                    "  energy by component:",
         tot->time_ns / 1e6, tot->energy_nj / 1e9, 100 * tot->dynamic_nj / tot->energy_nj,
         100 * tot->static_nj / tot->energy_nj);
  for (int k = 0; k < POWER_NSLOT; k++)
    printf(" %s %.1f%%", slot_name(k), 100 * tot->energy_by_slot_nj[k] / tot->energy_nj);
  printf("\n");
}

/* ---------------------------------------------------------------------------------
 * JSON output. json_pack fails on a NULL "o" argument and releases the references it
 * was given, so a failed inner builder propagates up as NULL. */

static json_t *shape_json(const graph_op *op) {
  shape_field f[SHAPE_MAX_FIELDS];
  const int n = shape_fields(op, f);
  json_t *o = json_object();
  for (int i = 0; o && i < n; i++) {
    json_t *v = f[i].is_int ? json_integer((json_int_t)f[i].value) : json_real(f[i].value);
    if (json_object_set_new(o, f[i].key, v) < 0) {
      json_decref(o);
      o = NULL;
    }
  }
  return o;
}

/* One op; with its NoDVFS time and energy when r is not NULL (--time). */
static json_t *op_json(const graph_op *op, const cost_result *r) {
  char sig[17];
  snprintf(sig, sizeof sig, "%016" PRIx64, op->signature);
  json_t *o = json_pack("{s:i, s:s, s:s, s:o, s:f, s:f, s:f, s:f, s:f, s:f, s:f, s:f, s:I, s:I, s:s}", "id", op->id,
                        "name", op->name, "kind", graph_kind_name(op->kind), "shape", shape_json(op), "flops",
                        op->flops, "vector_ops", op->vector_ops, "hbm_bytes",
                        op->hbm_read_bytes + op->hbm_write_bytes, "hbm_read_bytes", op->hbm_read_bytes,
                        "hbm_write_bytes", op->hbm_write_bytes, "weight_bytes", op->weight_bytes, "ici_bytes",
                        op->ici_bytes, "host_bytes", op->host_bytes, "count", (json_int_t)op->count, "multiplicity",
                        (json_int_t)op->multiplicity, "signature", sig);
  if (o && r &&
      (json_object_set_new(o, "time_ns", json_real(r->time_ns)) < 0 ||
       json_object_set_new(o, "energy_nj", json_real(r->energy_total_nj)) < 0)) {
    json_decref(o);
    o = NULL;
  }
  return o;
}

/* Add the forward-pass totals of --time to the "totals" object. @return 0 or -1. */
static int time_totals_json(json_t *totals, const time_totals *tot) {
  json_t *by = json_object();
  for (int k = 0; by && k < POWER_NSLOT; k++) {
    if (json_object_set_new(by, slot_name(k), json_real(tot->energy_by_slot_nj[k])) < 0) {
      json_decref(by);
      by = NULL;
    }
  }
  json_t *add = json_pack("{s:f, s:f, s:f, s:f, s:o}", "time_ns", tot->time_ns, "energy_nj", tot->energy_nj,
                          "energy_dynamic_nj", tot->dynamic_nj, "energy_static_nj", tot->static_nj,
                          "energy_nj_by_component", by);
  const int rc = add ? json_object_update(totals, add) : -1;
  json_decref(add);
  return rc;
}

/* The graph document; res and tot NULL without --time. */
static json_t *op_graph_json(const config_job *job, const graph *g, const cost_result *res,
                             const time_totals *tot) {
  json_t *ops = json_array();
  for (int i = 0; ops && i < graph_op_count(g); i++) {
    if (json_array_append_new(ops, op_json(graph_op_at(g, i), res ? &res[i] : NULL)) < 0) {
      json_decref(ops);
      ops = NULL;
    }
  }
  json_t *segments = json_array();
  for (int i = 0; segments && i < graph_segment_count(g); i++) {
    const graph_segment *s = graph_segment_at(g, i);
    json_t *o = json_pack("{s:s, s:i, s:i, s:I}", "name", s->name, "first_op", s->first_op, "op_count", s->op_count,
                          "repeat", (json_int_t)s->repeat);
    if (json_array_append_new(segments, o) < 0) {
      json_decref(segments);
      segments = NULL;
    }
  }
  const graph_info *in = graph_get_info(g);
  const config_parallel *p = &in->parallel;
  const graph_totals *t = graph_get_totals(g);
  json_t *doc = json_pack(
      "{s:s, s:s, s:s, s:i, s:i, s:{s:i, s:i, s:i, s:i}, s:I, s:I, s:I, s:o, s:o, "
      "s:{s:f, s:f, s:f, s:f, s:f, s:f, s:f, s:f, s:f, s:f}}",
      "job", job->name, "model", job->model.name, "phase", config_phase_name(in->phase), "batch", in->batch, "seq",
      in->seq, "parallel", "dp", p->dp, "tp", p->tp, "pp", p->pp, "ep", p->ep, "tokens", (json_int_t)in->tokens,
      "chip_requests", (json_int_t)in->chip_requests, "chip_tokens", (json_int_t)in->chip_tokens, "ops", ops,
      "segments", segments, "totals", "flops", t->flops, "vector_ops", t->vector_ops, "hbm_bytes",
      t->hbm_read_bytes + t->hbm_write_bytes, "hbm_read_bytes", t->hbm_read_bytes, "hbm_write_bytes",
      t->hbm_write_bytes, "weight_bytes", t->weight_bytes, "ici_bytes", t->ici_bytes, "kv_cache_bytes",
      t->kv_cache_bytes, "activation_bytes", t->activation_bytes, "flops_per_token", t->flops / (double)in->tokens);
  const grid_moe_load *l = &in->moe;
  json_t *moe = job->model.moe
                    ? json_pack("{s:f, s:s, s:I, s:I, s:I, s:I, s:I, s:I, s:I}", "capacity_factor",
                                grid_capacity_factor(job), "experts", config_moe_experts_name(job->moe_experts),
                                "tokens", (json_int_t)l->tokens, "experts_local", (json_int_t)l->experts_local,
                                "hot_tokens", (json_int_t)l->hot_tokens, "cold_experts",
                                (json_int_t)l->cold_experts, "cold_tokens", (json_int_t)l->cold_tokens,
                                "active_experts", (json_int_t)l->active_experts, "active_tokens",
                                (json_int_t)l->active_tokens)
                    : NULL;
  json_t *cap = json_pack("{s:s, s:f, s:f, s:f, s:f, s:f, s:b}", "policy", config_capacity_name(job->capacity),
                          "weights_bytes", in->memory.weights_bytes, "kv_bytes", in->memory.kv_bytes,
                          "activation_bytes", in->memory.activation_bytes, "hbm_bytes", in->memory.hbm_bytes,
                          "offload_bytes", in->memory.offload_bytes, "fits",
                          grid_memory_used_bytes(&in->memory) <= in->memory.hbm_bytes);
  if (!doc || (moe && json_object_set_new(doc, "moe", moe) < 0) || !cap ||
      json_object_set_new(doc, "capacity", cap) < 0 ||
      json_object_set_new(doc, "attention_impl", json_string(config_attn_impl_name(job->attention_impl))) < 0 ||
      json_object_set_new(doc, "ici_model", json_string(config_ici_model_name(job->ici_model))) < 0) {
    if (!doc) json_decref(moe), json_decref(cap);
    json_decref(doc);
    doc = NULL;
  }
  if (doc && tot && time_totals_json(json_object_get(doc, "totals"), tot) < 0) {
    json_decref(doc);
    doc = NULL;
  }
  return doc;
}

/* ---------------------------------------------------------------------------------
 * Entry point */

/* The bucket's operators, timed with --time, as text or JSON. */
static int show_graph(const config_job *job, const graph *g, const void *args) {
  const graph_args *a = args;
  enpu_err err = {0};
  int rc = 0;
  cost_result *res = NULL;
  time_totals tot;
  if (a->time) {
    res = calloc((size_t)graph_op_count(g), sizeof *res);
    if (!res) rc = cli_fail("graph", "out of memory");
    else if (time_ops(job, g, res, &tot, &err) < 0) rc = cli_fail("graph", err.msg);
  }
  if (!rc && a->json) {
    json_t *doc = op_graph_json(job, g, res, res ? &tot : NULL);
    rc = doc ? cli_print_json(doc) : cli_fail("graph", "out of memory building the JSON");
    json_decref(doc);
  } else if (!rc) {
    print_human(job, g, res, res ? &tot : NULL);
  }
  free(res);
  return rc;
}

static int run(void *args) {
  const graph_args *a = args;
  return cli_on_graph("graph", a->path, &a->b, show_graph, a);
}
