/* main.c — `enpu`: a thin dispatcher over the subcommand table. All work happens in
 * the modules; a subcommand parses its arguments, calls them, and prints. */
#include <stdio.h>
#include <string.h>

#include "cli_internal.h"
#include "store.h"

static void usage(FILE *out) {
  fprintf(out, "usage: enpu <command> [options]\n\ncommands:\n");
  for (int i = 0; i < cli_ncommands; i++)
    fprintf(out, "  %-10s %s\n", cli_commands[i].name, cli_commands[i].summary);
  fprintf(out, "\n`enpu <command> --help` shows a command's options; `enpu --help --markdown` the\n"
               "command table of docs/commands.md; `enpu --version` the version, the plan store format\n"
               "and the HDF5 and MPI it was built with.\n");
}

int main(int argc, char **argv) {
  store_hdf5_quiet(); /* every store error comes back as our own message */
  if (argc == 3 && !strcmp(argv[1], "--help") && !strcmp(argv[2], "--markdown")) {
    cli_commands_markdown(stdout);
    return 0;
  }
  if (argc < 2 || !strcmp(argv[1], "--help") || !strcmp(argv[1], "-h")) {
    usage(argc < 2 ? stderr : stdout);
    return argc < 2 ? 2 : 0;
  }
  if (!strcmp(argv[1], "--version")) return cli_version(stdout);
  for (int i = 0; i < cli_ncommands; i++)
    if (!strcmp(argv[1], cli_commands[i].name)) return cli_run(&cli_commands[i], argc - 1, argv + 1);
  fprintf(stderr, "enpu: unknown command '%s'\n", argv[1]);
  usage(stderr);
  return 2;
}
