/* validate_job.c — the job a store was compiled from, rebuilt from the store's own
 * attributes (validate.h): the job, model, chip and cluster documents are written into a
 * private temporary directory at the job's relative paths, with the chip's power tables
 * (which the store does not carry) copied beside them from the job's input directory,
 * loaded with config_job_load, and accepted only when the job hash equals the store's.
 *
 * Invariants: nothing is written outside the temporary directory, which is removed
 * before returning; references that leave their directory ("..", absolute) are refused
 * rather than followed. */
#define _XOPEN_SOURCE 700
#include <errno.h>
#include <ftw.h>
#include <jansson.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "validate.h"

static int safe_rel(const char *rel) { return rel && rel[0] && rel[0] != '/' && !strstr(rel, ".."); }

/* Create the parent directories of dir/rel (inside dir). */
static int make_parents(const char *path, size_t keep, enpu_err *err) {
  char buf[CONFIG_PATH_LEN];
  snprintf(buf, sizeof buf, "%s", path);
  for (char *p = buf + keep + 1; *p; p++) {
    if (*p != '/') continue;
    *p = 0;
    if (mkdir(buf, 0700) < 0 && errno != EEXIST)
      return enpu_errorf(err, ENPU_ERR_IO, "%s: %s", buf, strerror(errno));
    *p = '/';
  }
  return 0;
}

static int write_whole_file(const char *dir, const char *rel, const char *data, size_t len, enpu_err *err) {
  char path[CONFIG_PATH_LEN];
  ENPU_RETURN_IF(!safe_rel(rel), err, ENPU_ERR_INVALID,
                 "store attribute names '%s', a path outside the job's directory", rel ? rel : "");
  ENPU_RETURN_IF((size_t)snprintf(path, sizeof path, "%s/%s", dir, rel) >= sizeof path, err, ENPU_ERR_RANGE,
                 "path too long: %s/%s", dir, rel);
  ENPU_FORWARD(make_parents(path, strlen(dir), err));
  return enpu_file_write(path, data, len, 0, err);
}

static const char *member(const json_t *doc, const char *key) {
  return json_string_value(json_object_get(doc, key));
}

static int remove_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw) {
  (void)st, (void)flag, (void)ftw;
  return remove(path);
}

/* The chip file's directory part of its reference ("chips/" of "chips/tpuv5p.json"). */
static void dir_part(const char *rel, char *out, size_t cap) {
  const char *slash = strrchr(rel, '/');
  const size_t n = slash ? (size_t)(slash - rel + 1) : 0;
  snprintf(out, cap, "%.*s", (int)n, rel);
}

/* Write the documents and copy the chip tables into dir. */
static int materialise(const store_contents *c, const json_t *job, const char *inputs_dir, const char *dir,
                       enpu_err *err) {
  ENPU_FORWARD(write_whole_file(dir, "job.json", c->job_json, strlen(c->job_json), err));
  ENPU_FORWARD(write_whole_file(dir, member(job, "model"), c->model_json, strlen(c->model_json), err));
  ENPU_FORWARD(write_whole_file(dir, member(job, "chip"), c->chip_json, strlen(c->chip_json), err));
  ENPU_FORWARD(write_whole_file(dir, member(job, "cluster"), c->cluster_json, strlen(c->cluster_json), err));
  json_error_t je;
  json_t *chip = json_loads(c->chip_json, 0, &je);
  ENPU_RETURN_IF(!chip, err, ENPU_ERR_FORMAT, "store attribute chip_json: %s (line %d)", je.text, je.line);
  char chip_dir[CONFIG_PATH_LEN];
  dir_part(member(job, "chip"), chip_dir, sizeof chip_dir);
  const char *key;
  json_t *v;
  int rc = 0;
  json_object_foreach(json_object_get(chip, "tables"), key, v) {
    char rel[CONFIG_PATH_LEN], src[CONFIG_PATH_LEN];
    const char *tab = json_string_value(v);
    if (!safe_rel(tab)) {
      rc = enpu_errorf(err, ENPU_ERR_INVALID, "chip table '%s' is a path outside the chip's directory", key);
      break;
    }
    if ((size_t)snprintf(rel, sizeof rel, "%s%s", chip_dir, tab) >= sizeof rel ||
        (size_t)snprintf(src, sizeof src, "%s/%s", inputs_dir, rel) >= sizeof src) {
      rc = enpu_errorf(err, ENPU_ERR_RANGE, "chip table '%s': path too long", key);
      break;
    }
    char *data = NULL;
    size_t len = 0;
    rc = enpu_read_file(src, &data, &len, err);
    if (rc == 0) rc = write_whole_file(dir, rel, data, len, err);
    free(data);
    if (rc < 0) break;
  }
  json_decref(chip);
  return rc;
}

int validate_job_from_store(const store_contents *c, const char *cluster_path, config_job **out, enpu_err *err) {
  *out = NULL;
  ENPU_RETURN_IF(!c->job_json || !c->model_json || !c->chip_json || !c->cluster_json, err, ENPU_ERR_FORMAT,
                 "the store lacks its job/model/chip/cluster documents: pass --job");
  json_error_t je;
  json_t *job = json_loads(c->job_json, 0, &je);
  ENPU_RETURN_IF(!job, err, ENPU_ERR_FORMAT, "store attribute job_json: %s (line %d)", je.text, je.line);
  /* The job's input directory: cluster_path with the job's cluster reference cut off. */
  const char *ref = member(job, "cluster");
  const size_t lp = strlen(cluster_path), lr = ref ? strlen(ref) : 0;
  char inputs_dir[CONFIG_PATH_LEN] = ".";
  int rc = ref && lp >= lr && !strcmp(cluster_path + lp - lr, ref) && (lp == lr || cluster_path[lp - lr - 1] == '/')
               ? 0
               : enpu_errorf(err, ENPU_ERR_INVALID,
                             "cannot find the job's inputs (chip power tables): the cluster file "
                             "%s is not at the job's reference '%s'; pass --job",
                             cluster_path, ref ? ref : "?");
  if (rc == 0 && lp > lr) snprintf(inputs_dir, sizeof inputs_dir, "%.*s", (int)(lp - lr - 1), cluster_path);
  const char *tmp = getenv("TMPDIR");
  char dir[CONFIG_PATH_LEN];
  snprintf(dir, sizeof dir, "%s/enpu-validate-XXXXXX", tmp && tmp[0] ? tmp : "/tmp");
  if (rc == 0 && !mkdtemp(dir)) rc = enpu_errorf(err, ENPU_ERR_IO, "%s: %s", dir, strerror(errno));
  const int made = rc == 0;
  if (rc == 0) rc = materialise(c, job, inputs_dir, dir, err);
  char path[CONFIG_PATH_LEN + 16];
  snprintf(path, sizeof path, "%s/job.json", dir);
  config_job *j = NULL;
  if (rc == 0) rc = config_job_load(path, &j, err);
  if (rc == 0 && j->hash != c->job_hash)
    rc = enpu_errorf(err, ENPU_ERR_INVALID,
                     "the job rebuilt from the store (with the chip tables of %s) hashes to "
                     "%016llx, the store was compiled from %016llx: pass --job",
                     inputs_dir, (unsigned long long)j->hash, (unsigned long long)c->job_hash);
  if (made) nftw(dir, remove_entry, 16, FTW_DEPTH | FTW_PHYS);
  json_decref(job);
  if (rc < 0) {
    config_job_free(j);
    return rc;
  }
  *out = j;
  return 0;
}
