/* test_store_writer.c — the writer: zstd, sizes, atomic publication, bad input, planted
 * links (the store module's unit tests, one program: test_store.c runs these with its
 * own; test_store.h has what the files share). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <hdf5.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <zstd.h>
#include "planstore.h"
#include "store.h"
#include "store_fixture.h"
#include "test_store.h"

/* ---------------------------------------------------------------------------------
 * zstd, sizes, publication */

static void test_zstd_filter_in_pipeline(void **state) {
  ctx *c = *state;
  hid_t file = H5Fopen(c->path, H5F_ACC_RDONLY, H5P_DEFAULT);
  assert_true(file >= 0);
  hid_t ds = H5Dopen2(file, "/policies/" POLICY "/pareto", H5P_DEFAULT);
  assert_true(ds >= 0);
  hid_t dcpl = H5Dget_create_plist(ds);
  unsigned flags = 0, values[4] = {0};
  size_t nvalues = 4;
  assert_true(H5Pget_filter_by_id2(dcpl, STORE_ZSTD_FILTER_ID, &flags, &nvalues, values, 0, NULL, NULL) >= 0);
  assert_int_equal(values[0], 3); /* the level the fixture asked for */
  assert_int_equal(nvalues, 2);
  hsize_t chunk = 0;
  assert_int_equal(H5Pget_chunk(dcpl, 1, &chunk), 1);
  hid_t type = H5Dget_type(ds);
  assert_int_equal(values[1], chunk * H5Tget_size(type)); /* the decompression bound */
  assert_true(H5Pget_filter_by_id2(dcpl, H5Z_FILTER_SHUFFLE, &flags, &nvalues, values, 0, NULL, NULL) >= 0);
  unsigned attr = 0;
  hid_t a = H5Aopen(file, "format_version", H5P_DEFAULT);
  assert_true(H5Aread(a, H5T_NATIVE_UINT, &attr) >= 0);
  assert_int_equal(attr, STORE_FORMAT_VERSION);
  H5Aclose(a);
  H5Tclose(type);
  H5Pclose(dcpl);
  H5Dclose(ds);
  H5Fclose(file);
}

long file_bytes(const char *path) {
  struct stat st;
  return stat(path, &st) == 0 ? (long)st.st_size : -1;
}

/* A big, regular walk table (what real stores are made of) compresses well. */
static void test_compression_shrinks(void **state) {
  ctx *c = *state;
  enum { ROWS = 20000 };
  store_walk_rec *rows = calloc(ROWS, sizeof *rows);
  assert_non_null(rows);
  for (size_t i = 0; i < ROWS; i++)
    rows[i] = (store_walk_rec){(uint32_t)(i / 200),    (uint32_t)(i % 37),    (uint32_t)(i % 37) * 3 + 1, 1,
                               1e6 + 10.0 * (double)i, 5e6 - 20.0 * (double)i};
  long bytes[2];
  for (int k = 0; k < 2; k++) {
    char path[160];
    snprintf(path, sizeof path, "%s/size%d.h5", c->dir, k);
    store_writer *w = NULL;
    store_lock *lock = NULL;
    enpu_err err = {0};
    assert_int_equal(store_fixture_writer(path, &test_prov, k == 0 ? -1 : 3, &lock, &w, &err), 0);
    assert_int_equal(store_writer_append(w, POLICY, STORE_T_WALK, rows, ROWS, &err), 0);
    assert_int_equal(store_writer_commit(w, &err), 0);
    store_writer_free(w);
    store_lock_release(lock);
    bytes[k] = file_bytes(path);
  }
  free(rows);
  print_message("walk table of %d rows: %ld bytes uncompressed, %ld with shuffle+zstd (%.1fx)\n", ROWS, bytes[0],
                bytes[1], (double)bytes[0] / (double)bytes[1]);
  assert_true(bytes[0] > (long)(ROWS * sizeof(store_walk_rec)) / 2);
  assert_true(bytes[1] * 3 < bytes[0]);
}

/* Nothing appears on disk before commit (the file is built in memory); a reader holding
 * the old file keeps it. */
static void test_atomic_publication(void **state) {
  ctx *c = *state;
  char path[160], tmp[170];
  snprintf(path, sizeof path, "%s/atomic.h5", c->dir);
  snprintf(tmp, sizeof tmp, "%s.tmp", path);
  enpu_err err = {0};
  fixture *old = calloc(1, sizeof *old);
  assert_non_null(old);
  make_fixture(old);
  assert_int_equal(write_fixture(path, old, 3, &err), 0);
  hid_t held = H5Fopen(path, H5F_ACC_RDONLY, H5P_DEFAULT);
  assert_true(held >= 0);

  store_writer *w = NULL;
  store_lock *lock = NULL;
  store_provenance prov = test_prov;
  prov.job_hash = 99;
  assert_int_equal(store_fixture_writer(path, &prov, 3, &lock, &w, &err), 0);
  assert_int_equal(file_bytes(tmp), -1);
  assert_int_equal(store_writer_append(w, POLICY, STORE_T_OPS, old->ops, 1, &err), 0);
  assert_int_equal(file_bytes(tmp), -1);
  assert_int_equal(store_writer_commit(w, &err), 0);
  store_writer_free(w);
  assert_int_equal(file_bytes(tmp), -1);

  uint64_t hash = 0;
  hid_t a = H5Aopen(held, "job_hash", H5P_DEFAULT);
  assert_true(H5Aread(a, H5T_NATIVE_UINT64, &hash) >= 0);
  H5Aclose(a);
  assert_int_equal(hash, 44); /* the old file, still readable through the old handle */
  hid_t ds = H5Dopen2(held, "/policies/" POLICY "/walk", H5P_DEFAULT);
  assert_true(ds >= 0);
  H5Dclose(ds);
  H5Fclose(held);
  hid_t now = H5Fopen(path, H5F_ACC_RDONLY, H5P_DEFAULT);
  a = H5Aopen(now, "job_hash", H5P_DEFAULT);
  assert_true(H5Aread(a, H5T_NATIVE_UINT64, &hash) >= 0);
  H5Aclose(a);
  H5Fclose(now);
  assert_int_equal(hash, 99);

  /* An abandoned writer leaves no temporary file and does not touch the store. */
  assert_int_equal(store_writer_create(lock, &prov, 3, &w, &err), 0);
  store_writer_free(w);
  store_lock_release(lock);
  assert_int_equal(file_bytes(tmp), -1);
  assert_true(file_bytes(path) > 0);
  free(old);
}

static void test_writer_rejects_bad_input(void **state) {
  ctx *c = *state;
  char path[160];
  snprintf(path, sizeof path, "%s/bad.h5", c->dir);
  store_writer *w = NULL;
  store_lock *lock = NULL;
  enpu_err err = {0};
  assert_int_equal(store_fixture_writer(path, &test_prov, 3, &lock, &w, &err), 0);
  assert_int_equal(store_writer_append(w, "a/b", STORE_T_OPS, c->f.ops, 1, &err), ENPU_ERR_INVALID);
  assert_int_equal(store_writer_append(w, "", STORE_T_OPS, c->f.ops, 1, &err), ENPU_ERR_INVALID);
  assert_int_equal(store_writer_append(w, POLICY, STORE_NTABLE, c->f.ops, 1, &err), ENPU_ERR_INVALID);
  store_writer_free(w);
  store_lock_release(lock);
  assert_int_equal(store_lock_acquire("/nonexistent-dir/x.h5", "test", 0, NULL, &lock, &err), ENPU_ERR_IO);
  assert_null(lock);
}

/* The text of a small file ("" when it cannot be read). */
static void read_small(const char *path, char *out, size_t cap) {
  FILE *f = fopen(path, "r");
  size_t n = f ? fread(out, 1, cap - 1, f) : 0;
  out[n] = '\0';
  if (f) fclose(f);
}

/* Links beside the store are never written through: a symbolic link at .lock is refused
 * when locking, one planted at .tmp after the lock was taken is refused at commit (the
 * link and its target stay as they were, nothing is published), and a store with a
 * second hard link is refused. */
static void test_writer_refuses_links(void **state) {
  ctx *c = *state;
  char path[160], side[192], victim[192], other[192], text[64];
  snprintf(path, sizeof path, "%s/links.h5", c->dir);
  snprintf(victim, sizeof victim, "%s/victim.txt", c->dir);
  FILE *f = fopen(victim, "w");
  assert_non_null(f);
  fputs("victim\n", f);
  fclose(f);
  store_lock *lock = NULL;
  store_writer *w = NULL;
  enpu_err err = {0};
  snprintf(side, sizeof side, "%s.lock", path);
  assert_int_equal(symlink(victim, side), 0);
  assert_int_equal(store_lock_acquire(path, "test", 0, NULL, &lock, &err), ENPU_ERR_INVALID);
  assert_non_null(strstr(err.msg, "symbolic link"));
  assert_null(lock);
  assert_int_equal(unlink(side), 0);

  assert_int_equal(store_fixture_writer(path, &test_prov, 3, &lock, &w, &err), 0);
  snprintf(side, sizeof side, "%s.tmp", path);
  /* a link planted at .tmp after the lock's check is removed as a name, never written
   * through (enpu_file_write); so is one at the store's own name */
  assert_int_equal(symlink(victim, side), 0);
  assert_int_equal(symlink(victim, path), 0);
  assert_int_equal(store_writer_commit(w, &err), 0);
  store_writer_free(w);
  struct stat st;
  assert_int_equal(lstat(side, &st), -1);
  assert_int_equal(lstat(path, &st), 0);
  assert_true(S_ISREG(st.st_mode));
  read_small(victim, text, sizeof text);
  assert_string_equal(text, "victim\n");
  store_lock_release(lock);

  snprintf(other, sizeof other, "%s/links-other-name.h5", c->dir);
  assert_int_equal(link(path, other), 0);
  assert_int_equal(store_lock_acquire(path, "test", 0, NULL, &lock, &err), ENPU_ERR_INVALID);
  assert_non_null(strstr(err.msg, "2 hard links"));
  assert_null(lock);
  assert_int_equal(unlink(other), 0);
  assert_int_equal(store_lock_acquire(path, "test", 0, NULL, &lock, &err), 0);
  store_lock_release(lock);
}

TEST_PART(store_writer, cmocka_unit_test(test_zstd_filter_in_pipeline), cmocka_unit_test(test_compression_shrinks),
          cmocka_unit_test(test_atomic_publication), cmocka_unit_test(test_writer_rejects_bad_input),
          cmocka_unit_test(test_writer_refuses_links));
