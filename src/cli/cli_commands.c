/* cli_commands.c — the subcommands of `enpu` in one table: name, entry point, one-line
 * summary for `enpu --help`, and its option tables (cli_run parses by them; the tests walk
 * them). */
#include "cli_internal.h"

/* clang-format off */
#define COMMAND(name, summary) {#name, summary, cli_##name##_specs}
/* clang-format on */

const cli_command cli_commands[] = {
    COMMAND(buckets, "expand a job's bucket grid (batch x seq x slack per phase)"),
    COMMAND(graph, "print the per-chip operator graph of one bucket"),
    COMMAND(op, "time and energy of one operator under one DVFS plan"),
    COMMAND(compile, "compile one bucket's DVFS plans at the job's slacks"),
    COMMAND(farm, "compile a job's whole grid into its HDF5 plan store (MPI)"),
    COMMAND(store, "plan store contents (info), integrity (verify), differences (diff)"),
    COMMAND(query, "look up the plan for a batch and a target time in a plan store"),
    COMMAND(replay, "replay an LLM trace on the cluster with the store's plans per policy"),
    COMMAND(report, "markdown report with gnuplot plots of a plan store (and a replay)"),
    COMMAND(validate, "re-simulate a sample of a store's plans, replay every policy, record it"),
    COMMAND(model, "import a Hugging Face config.json as a model file (model import)"),
    COMMAND(trace, "convert a public trace to the replay's CSV (trace convert), or add a burst (trace burst)"),
    COMMAND(job, "a job and a cluster from a model, a chip and a trace (job init)"),
    COMMAND(plan, "model config + trace to validated plans: job init, farm, replay, report"),
    COMMAND(cache, "the operator-result cache farms share: stats, verify, prune"),
};

const int cli_ncommands = sizeof cli_commands / sizeof cli_commands[0];
