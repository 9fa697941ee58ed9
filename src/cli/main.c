/* main.c — `enpu`: a thin dispatcher over the subcommand table. All work happens in
 * the modules; a subcommand parses its arguments, calls them, and prints. */
#include <stdio.h>
#include <string.h>

#include "cli_internal.h"

static const cli_command commands[] = {
    {"buckets", cli_cmd_buckets, "expand a job's bucket grid (batch x seq x slack per phase)"},
    {"graph", cli_cmd_graph, "print the per-chip operator graph of one bucket"},
    {"op", cli_cmd_op, "time and energy of one operator under one DVFS plan"},
    {"compile", cli_cmd_compile, "compile one bucket's DVFS plans at the job's slacks"},
    {"farm", cli_cmd_farm, "compile a job's whole grid into its HDF5 plan store (MPI)"},
    {"store", cli_cmd_store, "plan store contents (info) and differences between two stores (diff)"},
    {"query", cli_cmd_query, "look up the plan for a batch and a target time in a plan store"},
    {"replay", cli_cmd_replay, "replay an LLM trace on the cluster with the store's plans per policy"},
    {"report", cli_cmd_report, "markdown report with gnuplot plots of a plan store (and a replay)"},
    {"validate", cli_cmd_validate, "re-simulate a sample of a store's plans, replay every policy, record it"},
};

static void usage(FILE *out) {
  fprintf(out, "usage: enpu <command> [options]\n\ncommands:\n");
  for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++)
    fprintf(out, "  %-10s %s\n", commands[i].name, commands[i].summary);
  fprintf(out, "\n`enpu <command> --help` shows a command's options.\n");
}

int main(int argc, char **argv) {
  if (argc < 2 || !strcmp(argv[1], "--help") || !strcmp(argv[1], "-h")) {
    usage(argc < 2 ? stderr : stdout);
    return argc < 2 ? 2 : 0;
  }
  for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++)
    if (!strcmp(argv[1], commands[i].name)) return commands[i].run(argc - 1, argv + 1);
  fprintf(stderr, "enpu: unknown command '%s'\n", argv[1]);
  usage(stderr);
  return 2;
}
