/* cli_version.c — `enpu --version`: what a bug report needs to say which enpu it is. The
 * version (the project's, and `git describe` of the tree it was built from, taken at build
 * time by version.cmake), the plan store format this build reads and writes, and the
 * HDF5 and MPI it was built with. */
#include <stdio.h>

#include "cli_internal.h"
#include "farm.h"
#include "store.h"

/* Generated at build time (src/cli/CMakeLists.txt, version.cmake). */
extern const char cli_version_git[];

int cli_version(FILE *out) {
  char hdf5[96], mpi[96];
  store_hdf5_version(hdf5, sizeof hdf5);
  farm_mpi_version(mpi, sizeof mpi);
  fprintf(out, "enpu %s (git %s)\n", ENPU_PROJECT_VERSION, cli_version_git);
  fprintf(out, "plan store format_version %u\n", STORE_FORMAT_VERSION);
  fprintf(out, "HDF5 %s\n", hdf5);
  fprintf(out, "%s\n", mpi);
  return 0;
}
