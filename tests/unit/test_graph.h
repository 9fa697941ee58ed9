/* test_graph.h — the graph module's tests in two files: test_graph.c (dense and MoE
 * arithmetic against the published sizes, model builders, helpers, main) and
 * test_graph_structure.c (MoE expert graphs, options, signatures, segments, bad input,
 * the shipped jobs). */
#ifndef TEST_GRAPH_H
#define TEST_GRAPH_H

#include "config.h"
#include "graph.h"
#include "test_models.h"
#include "test_util.h"

/* The shipped model files (jobs/models/), loaded. */
config_model llama3_70b(void);
config_model deepseek_v2(void);
config_model deepseek_v3(void);
/* A job of one model on the shipped chip with the given parallelism (caller frees). */
config_job *make_job(config_model model, int tp, int pp, int ep, double capacity);
graph *build(const config_job *job, config_phase phase, int batch, int seq);
void assert_rel(double actual, double expected, double tolerance, const char *what);
double flops_of(const graph *g, graph_op_kind kind);
const graph_op *find_op(const graph *g, const char *segment, const char *name);
int has_op(const graph *g, const char *name);
/* DeepSeek-V3's weight bytes on one chip at (tp, ep). */
double v3_chip_weights(const config_model *m, int tp, int ep);

extern const struct CMUnitTest graph_structure_tests[];
extern const size_t graph_structure_ntests;

#endif /* TEST_GRAPH_H */
