/* cmd_graph.c — `enpu graph JOB --phase prefill|decode --batch B --seq S [--json]`: the
 * per-chip operator graph of one bucket (ops with shapes, FLOPs, HBM/ICI bytes,
 * multiplicity and signature; segments; totals). The graph module does the work; this
 * file parses arguments and prints. JSON field names are a contract for scripts
 * (issue 2, item 7); a shape lists only the fields meaningful for its op kind. */
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "cli_internal.h"
#include "config.h"
#include "graph.h"

static void usage(FILE *out) {
  fprintf(out,
          "usage: enpu graph JOB --phase prefill|decode --batch B --seq S [--json]\n"
          "\n"
          "Print the per-chip operator graph of one forward pass of job file JOB for the\n"
          "bucket (phase, batch B, sequence length S): prefill covers B prompts of S\n"
          "tokens, decode one iteration of B requests with KV length S. Figures are per\n"
          "chip after TP/EP sharding; totals multiply each op by its multiplicity\n"
          "(repeated layers); flops_per_token divides the chip's FLOPs by the bucket's\n"
          "tokens (B*S prefill, B decode).\n"
          "\n"
          "  --phase P   prefill or decode\n"
          "  --batch B   requests in the batch (>= 1)\n"
          "  --seq S     prompt length (prefill) or KV length (decode) (>= 1)\n"
          "  --json      print one JSON document on stdout instead of a table\n"
          "  -h, --help  show this help\n");
}

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
#define INT_FIELD(name) f[n++] = (shape_field){#name, (double)s->name, 1}
#define REAL_FIELD(name) f[n++] = (shape_field){#name, s->name, 0}
  switch (op->kind) {
  case GRAPH_MATMUL:
    INT_FIELD(b), INT_FIELD(m), INT_FIELD(k), INT_FIELD(n), INT_FIELD(rhs_is_weight);
    break;
  case GRAPH_ATTENTION:
    INT_FIELD(b), INT_FIELD(kv_group), INT_FIELD(m), INT_FIELD(n), INT_FIELD(k), INT_FIELD(v);
    INT_FIELD(causal), INT_FIELD(kv_shared);
    break;
  case GRAPH_NORM:
    INT_FIELD(m), INT_FIELD(n), REAL_FIELD(vector_ops_per_elem);
    break;
  case GRAPH_ROPE:
  case GRAPH_ROUTER:
    INT_FIELD(m), INT_FIELD(n), INT_FIELD(k), REAL_FIELD(vector_ops_per_elem);
    break;
  case GRAPH_ELEMENTWISE:
    INT_FIELD(m), INT_FIELD(n), INT_FIELD(in_tensors), INT_FIELD(out_tensors);
    REAL_FIELD(vector_ops_per_elem);
    break;
  case GRAPH_EMBED:
    INT_FIELD(m), INT_FIELD(n);
    break;
  default: /* collectives: n = payload bytes per chip */
    INT_FIELD(n), INT_FIELD(ranks);
    break;
  }
  INT_FIELD(dtype_bytes);
#undef INT_FIELD
#undef REAL_FIELD
  return n;
}

/* ---------------------------------------------------------------------------------
 * Human output */

static void print_human(const config_job *job, const graph *g) {
  const graph_info *in = graph_get_info(g);
  const config_parallel *p = &in->parallel;
  printf("job %s: model %s, %s, batch %d, seq %d, dp %d tp %d pp %d ep %d\n", job->name,
         job->model.name, config_phase_name(in->phase), in->batch, in->seq, p->dp, p->tp, p->pp,
         p->ep);
  printf("per chip: %" PRId64 " requests, %" PRId64 " tokens through non-expert ops",
         in->chip_requests, in->chip_tokens);
  if (job->model.moe)
    printf("; %" PRId64 " routed experts x %" PRId64 " tokens (capacity factor %s%g)",
           in->experts_active, in->expert_tokens,
           job->moe_capacity_factor > 0 ? "" : "worst case, ", job->moe_capacity_factor);
  printf("\n\n%4s  %-22s %-14s %10s %10s %9s %5s  %-16s  %s\n", "id", "name", "kind", "GFLOP",
         "HBM MB", "ICI MB", "mult", "signature", "shape");
  for (int i = 0; i < graph_op_count(g); i++) {
    const graph_op *op = graph_op_at(g, i);
    printf("%4d  %-22s %-14s %10.3f %10.3f %9.3f %5" PRId64 "  %016" PRIx64 " ", op->id,
           op->name, graph_kind_name(op->kind), op->flops / 1e9,
           (op->hbm_read_bytes + op->hbm_write_bytes) / 1e6, op->ici_bytes / 1e6,
           op->multiplicity, op->signature);
    shape_field f[SHAPE_MAX_FIELDS];
    const int n = shape_fields(op, f);
    for (int j = 0; j < n; j++)
      printf(f[j].is_int ? " %s=%.0f" : " %s=%g", f[j].key, f[j].value);
    printf("\n");
  }
  printf("\nsegments:");
  for (int i = 0; i < graph_segment_count(g); i++) {
    const graph_segment *s = graph_segment_at(g, i);
    printf(" %s (ops %d-%d) x %" PRId64 ";", s->name, s->first_op, s->first_op + s->op_count - 1,
           s->repeat);
  }
  const graph_totals *t = graph_get_totals(g);
  printf("\ntotals per chip: %.3f TFLOP (%.3f GFLOP per bucket token), %.3f G vector ops,\n"
         "  HBM %.3f GB read + %.3f GB written (weights %.3f GB), ICI %.3f GB sent,\n"
         "  KV cache %.3f GB resident, activations %.3f GB (estimate)\n",
         t->flops / 1e12, t->flops / 1e9 / (double)in->tokens, t->vector_ops / 1e9,
         t->hbm_read_bytes / 1e9, t->hbm_write_bytes / 1e9, t->weight_bytes / 1e9,
         t->ici_bytes / 1e9, t->kv_cache_bytes / 1e9, t->activation_bytes / 1e9);
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

static json_t *op_json(const graph_op *op) {
  char sig[17];
  snprintf(sig, sizeof sig, "%016" PRIx64, op->signature);
  return json_pack("{s:i, s:s, s:s, s:o, s:f, s:f, s:f, s:f, s:f, s:f, s:f, s:I, s:s}", "id",
                   op->id, "name", op->name, "kind", graph_kind_name(op->kind), "shape",
                   shape_json(op), "flops", op->flops, "vector_ops", op->vector_ops,
                   "hbm_bytes", op->hbm_read_bytes + op->hbm_write_bytes, "hbm_read_bytes",
                   op->hbm_read_bytes, "hbm_write_bytes", op->hbm_write_bytes, "weight_bytes",
                   op->weight_bytes, "ici_bytes", op->ici_bytes, "multiplicity",
                   (json_int_t)op->multiplicity, "signature", sig);
}

static json_t *graph_json(const config_job *job, const graph *g) {
  json_t *ops = json_array();
  for (int i = 0; ops && i < graph_op_count(g); i++) {
    if (json_array_append_new(ops, op_json(graph_op_at(g, i))) < 0) {
      json_decref(ops);
      ops = NULL;
    }
  }
  json_t *segments = json_array();
  for (int i = 0; segments && i < graph_segment_count(g); i++) {
    const graph_segment *s = graph_segment_at(g, i);
    json_t *o = json_pack("{s:s, s:i, s:i, s:I}", "name", s->name, "first_op", s->first_op,
                          "op_count", s->op_count, "repeat", (json_int_t)s->repeat);
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
      "job", job->name, "model", job->model.name, "phase", config_phase_name(in->phase),
      "batch", in->batch, "seq", in->seq, "parallel", "dp", p->dp, "tp", p->tp, "pp", p->pp,
      "ep", p->ep, "tokens", (json_int_t)in->tokens, "chip_requests",
      (json_int_t)in->chip_requests, "chip_tokens", (json_int_t)in->chip_tokens, "ops", ops,
      "segments", segments, "totals", "flops", t->flops, "vector_ops", t->vector_ops,
      "hbm_bytes", t->hbm_read_bytes + t->hbm_write_bytes, "hbm_read_bytes", t->hbm_read_bytes,
      "hbm_write_bytes", t->hbm_write_bytes, "weight_bytes", t->weight_bytes, "ici_bytes",
      t->ici_bytes, "kv_cache_bytes", t->kv_cache_bytes, "activation_bytes",
      t->activation_bytes, "flops_per_token", t->flops / (double)in->tokens);
  if (doc && job->model.moe) {
    json_t *moe = json_pack("{s:f, s:I, s:I}", "capacity_factor", job->moe_capacity_factor,
                            "experts_active", (json_int_t)in->experts_active, "expert_tokens",
                            (json_int_t)in->expert_tokens);
    if (json_object_set_new(doc, "moe", moe) < 0) {
      json_decref(doc);
      doc = NULL;
    }
  }
  return doc;
}

/* ---------------------------------------------------------------------------------
 * Entry point */

/* Parse a whole decimal int; 0 or -1. */
static int parse_int(const char *s, int *out) {
  char *end = NULL;
  errno = 0;
  const long v = strtol(s, &end, 10);
  if (errno || end == s || *end || v < INT_MIN || v > INT_MAX) return -1;
  *out = (int)v;
  return 0;
}

/* Print "enpu graph: <message>" and the usage on stderr; @return 2 (usage error). */
static int usage_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static int usage_error(const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  fprintf(stderr, "enpu graph: ");
  vfprintf(stderr, fmt, ap);
  fprintf(stderr, "\n");
  va_end(ap);
  usage(stderr);
  return 2;
}

int cli_cmd_graph(int argc, char **argv) {
  const char *path = NULL, *phase_name = NULL;
  int batch = 0, seq = 0, have_batch = 0, have_seq = 0, as_json = 0;
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i];
    if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
      usage(stdout);
      return 0;
    }
    if (!strcmp(a, "--json")) {
      as_json = 1;
    } else if (!strcmp(a, "--phase") || !strcmp(a, "--batch") || !strcmp(a, "--seq")) {
      if (i + 1 >= argc) return usage_error("option '%s' needs a value", a);
      const char *v = argv[++i];
      if (!strcmp(a, "--phase")) {
        phase_name = v;
      } else if (parse_int(v, !strcmp(a, "--batch") ? &batch : &seq) < 0) {
        return usage_error("%s expects an integer, got '%s'", a, v);
      } else {
        *(!strcmp(a, "--batch") ? &have_batch : &have_seq) = 1;
      }
    } else if (a[0] == '-' && a[1] != '\0') {
      return usage_error("unknown option '%s'", a);
    } else if (path) {
      return usage_error("more than one job file ('%s')", a);
    } else {
      path = a;
    }
  }
  if (!path) return usage_error("missing job file");
  if (!phase_name) return usage_error("missing --phase");
  if (!have_batch) return usage_error("missing --batch");
  if (!have_seq) return usage_error("missing --seq");
  config_phase phase;
  if (config_phase_parse(phase_name, &phase) < 0)
    return usage_error("--phase expects prefill or decode, got '%s'", phase_name);

  enpu_err err = {0};
  config_job *job = NULL;
  if (config_job_load(path, &job, &err) < 0) return cli_fail("graph", err.msg);
  graph *g = NULL;
  if (graph_build(job, phase, batch, seq, &g, &err) < 0) {
    config_job_free(job);
    return cli_fail("graph", err.msg);
  }
  int rc = 0;
  if (as_json) {
    json_t *doc = graph_json(job, g);
    rc = doc ? cli_print_json(doc) : cli_fail("graph", "out of memory building the JSON");
    json_decref(doc);
  } else {
    print_human(job, g);
  }
  graph_free(g);
  config_job_free(job);
  return rc;
}
