/* fuzz_store.c — libFuzzer target over the plan store readers: the input bytes become a
 * file that planstore_open must either refuse with an error or accept as a store whose
 * lookups and per-op states stay inside their tables; store_load (same reading code,
 * plus plan_states and attributes) must refuse whatever planstore_open refuses. Seed it
 * with real stores (`test_store --write seed.h5`) so mutations reach the tables, not
 * just the superblock.
 *
 * HDF5 itself is not instrumented; its internal leak after an object header fails its
 * checksum (HDF5 1.10.8) is suppressed below, so LeakSanitizer still checks our code. */
#include <hdf5.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "planstore.h"
#include "store.h"

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
const char *__lsan_default_suppressions(void);

const char *__lsan_default_suppressions(void) { return "leak:libhdf5_serial.so\nleak:libhdf5.so\n"; }

static char store_path[64]; /* one scratch file per fuzzing process, removed at exit */

/* libFuzzer leaves through exit() when its runs or time are done (atexit handlers run);
 * after a crash it writes the input to crash-<sha1> itself. */
static void remove_store(void) { unlink(store_path); }

int LLVMFuzzerInitialize(int *argc, char ***argv) {
  H5Eset_auto2(H5E_DEFAULT, NULL, NULL); /* corrupt input is the norm here */
  snprintf(store_path, sizeof store_path, "/tmp/fuzz_store.%ld.h5", (long)getpid());
  atexit(remove_store);
  return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  FILE *fp = fopen(store_path, "wb");
  if (!fp) return 0;
  size_t wrote = fwrite(data, 1, size, fp);
  if (fclose(fp) != 0 || wrote != size) return 0;
  planstore *ps = NULL;
  enpu_err err = {0};
  int open_rc = planstore_open(store_path, &ps, &err);
  /* store_load shares planstore_open's reading code and adds plan_states and the
   * provenance attributes: it may refuse more, never less. */
  store_contents *c = NULL;
  enpu_err lerr = {0};
  int load_rc = store_load(store_path, &c, &lerr);
  if ((load_rc != 0) != (c == NULL) || (load_rc != 0 && !lerr.msg[0]) || (open_rc != 0 && load_rc == 0)) abort();
  store_contents_free(c);
  if (open_rc != 0) {
    if (ps || !err.msg[0]) abort(); /* a failure must leave no handle and say why */
    return 0;
  }
  static const int batches[] = {1, 3, 8, 300}, seqs[] = {1, 129, 1024, 1 << 20};
  for (size_t p = 0; p <= planstore_policy_count(ps); p++)
    for (int phase = 0; phase < 2; phase++)
      for (size_t i = 0; i < 4; i++) {
        planstore_plan plan;
        int rc = planstore_lookup(ps, planstore_policy_name(ps, p), phase, batches[i], seqs[i],
                                  1e3 * (double)(i * i * i), &plan, &err);
        if (rc != 0 && rc != ENPU_ERR_INFEASIBLE) continue;
        size_t n = planstore_plan_op_count(ps, &plan);
        planstore_op_states *st = calloc(n ? n : 1, sizeof *st);
        if (st && planstore_plan_states(ps, &plan, st, n, &n, &err) == 0)
          for (size_t k = 0; k < n; k++)
            if (st[k].lead_instances == 0 || st[k].lead_instances > st[k].instances || !st[k].name) abort();
        free(st);
      }
  planstore_close(ps);
  return 0;
}
