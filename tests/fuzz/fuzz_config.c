/* fuzz_config.c — libFuzzer target for the config loaders (JSON and CSV).
 *
 * Each input is written to a scratch directory and loaded as a job, model, chip and
 * cluster file, and as a chip's SA power table. The scratch directory links the shipped
 * models/, chips/ and clusters/ of jobs/ so that inputs derived from the shipped files
 * (the seed corpus: jobs/) resolve their references and reach the deep checks.
 * Invariant checked: a load either succeeds or fails with a negative code and a
 * non-empty message; sanitizers catch the rest. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "config.h"

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static char scratch[256]; /* harness state: the loaders themselves keep none */

static void put(const char *name, const void *data, size_t size) {
  char path[512];
  snprintf(path, sizeof path, "%s/%s", scratch, name);
  FILE *f = fopen(path, "wb");
  if (!f || fwrite(data, 1, size, f) != size || fclose(f) != 0) abort();
}

static void link_shipped(const char *name, const char *target) {
  char path[512];
  snprintf(path, sizeof path, "%s/%s", scratch, name);
  if (symlink(target, path) != 0) abort();
}

static void remove_scratch(void) {
  static const char *const names[] = {"models",       "chips",      "clusters", "tpuv5p",
                                      "csvchip.json", "input.json", "input.csv"};
  char path[512];
  for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
    snprintf(path, sizeof path, "%s/%s", scratch, names[i]);
    unlink(path);
  }
  rmdir(scratch);
}

int LLVMFuzzerInitialize(int *argc, char ***argv) {
  (void)argc;
  (void)argv;
  snprintf(scratch, sizeof scratch, "/tmp/fuzz_config.XXXXXX");
  if (!mkdtemp(scratch)) abort();
  atexit(remove_scratch);
  link_shipped("models", ENPU_SOURCE_DIR "/jobs/models");
  link_shipped("chips", ENPU_SOURCE_DIR "/jobs/chips");
  link_shipped("clusters", ENPU_SOURCE_DIR "/jobs/clusters");
  link_shipped("tpuv5p", ENPU_SOURCE_DIR "/jobs/chips/tpuv5p");
  /* A copy of the shipped chip whose SA table is the fuzz input. */
  char *chip = NULL;
  size_t len = 0;
  if (enpu_read_file(ENPU_SOURCE_DIR "/jobs/chips/tpuv5p.json", &chip, &len, NULL) < 0) abort();
  const char *from = "tpuv5p/sa_vf_power.csv";
  char *at = strstr(chip, from);
  if (!at) abort();
  char path[512];
  snprintf(path, sizeof path, "%s/csvchip.json", scratch);
  FILE *f = fopen(path, "wb");
  if (!f) abort();
  fprintf(f, "%.*sinput.csv%s", (int)(at - chip), chip, at + strlen(from));
  fclose(f);
  free(chip);
  return 0;
}

static void check(int rc, const enpu_err *err) {
  if (rc > 0 || (rc < 0 && err->msg[0] == '\0')) abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  char path[512];
  put("input.json", data, size);
  put("input.csv", data, size);
  snprintf(path, sizeof path, "%s/input.json", scratch);
  enpu_err err = {0};
  config_job *job = NULL;
  check(config_job_load(path, &job, &err), &err);
  config_job_free(job);
  err.msg[0] = '\0';
  config_model *model = NULL;
  check(config_model_load(path, &model, &err), &err);
  config_model_free(model);
  err.msg[0] = '\0';
  config_chip *chip = NULL;
  check(config_chip_load(path, &chip, &err), &err);
  config_chip_free(chip);
  err.msg[0] = '\0';
  config_cluster *cluster = NULL;
  check(config_cluster_load(path, &cluster, &err), &err);
  config_cluster_free(cluster);
  err.msg[0] = '\0';
  snprintf(path, sizeof path, "%s/csvchip.json", scratch);
  chip = NULL;
  check(config_chip_load(path, &chip, &err), &err);
  config_chip_free(chip);
  return 0;
}
