/* test_store_damaged.c — corrupt and crafted stores: indices, storage layouts, truncated
 * and bit-flipped files, the walk-step rule (the store module's unit tests, one program:
 * test_store.c runs these with its own; test_store.h has what the files share). */
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
 * Corrupt and crafted stores */

/* Both readers (planstore_open and store_load share one code path) refuse the file. */
static void expect_open_fails(const char *path, int code, const char *needle) {
  planstore *ps = NULL;
  enpu_err err = {0};
  int rc = planstore_open(path, &ps, &err);
  if (rc != code || (needle && !strstr(err.msg, needle)))
    fail_msg("open %s: rc %d (want %d), message '%s' (want '%s')", path, rc, code, err.msg, needle ? needle : "");
  assert_null(ps);
  assert_true(strlen(err.msg) > 0);
  store_contents *s = NULL;
  enpu_err lerr = {0};
  rc = store_load(path, &s, &lerr);
  if (rc != code || (needle && !strstr(lerr.msg, needle)))
    fail_msg("store_load %s: rc %d (want %d), message '%s' (want '%s')", path, rc, code, lerr.msg,
             needle ? needle : "");
  assert_null(s);
}

/* Write the fixture, after `mutate` broke one index, to <dir>/crafted.h5. */
static void write_crafted(const ctx *c, void (*mutate)(fixture *), char path[160]) {
  fixture *f = calloc(1, sizeof *f);
  assert_non_null(f);
  make_fixture(f);
  mutate(f);
  snprintf(path, 160, "%s/crafted.h5", c->dir);
  enpu_err err = {0};
  assert_int_equal(write_fixture(path, f, 3, &err), 0);
  free(f);
}

/* Both readers must refuse the crafted store. */
static void crafted(ctx *c, void (*mutate)(fixture *), const char *needle) {
  char path[160];
  write_crafted(c, mutate, path);
  expect_open_fails(path, ENPU_ERR_FORMAT, needle);
}

static void m_pareto_range(fixture *f) { f->ops[2].pareto_first = 8; }
static void m_pareto_owner(fixture *f) { f->pareto[4].op = 2; }
static void m_pareto_op(fixture *f) { f->pareto[0].op = 1000000; }
static void m_walk_range(fixture *f) { f->buckets[1].walk_first = f->nwalk - 2; }
static void m_walk_count(fixture *f) { f->buckets[0].walk_count = UINT64_MAX; }
static void m_ops_count(fixture *f) { f->buckets[0].ops_count = UINT32_MAX; }
static void m_walk_op(fixture *f) { f->walk[0].op = 7; }
static void m_walk_pareto(fixture *f) { f->walk[0].pareto = 5; } /* a point of op 1 */
static void m_walk_backwards(fixture *f) { f->walk[3].pareto = 0; }
static void m_walk_too_many(fixture *f) { f->walk[2].instances = 3; }
static void m_walk_time(fixture *f) { f->walk[2].time_ns = f->walk[1].time_ns - 1; }
static void m_walk_bucket(fixture *f) { f->walk[0].bucket = 1; }
static void m_bops_order(fixture *f) { f->bops[1].op = 0; }
static void m_bops_op(fixture *f) { f->bops[2].op = 3; }
static void m_plan_prefix(fixture *f) { f->plans[0].walk_prefix = walk_move_count() + 1; }
static void m_plan_states(fixture *f) { f->plans[1].states_first = f->npstates; }
static void m_phase(fixture *f) { f->buckets[0].phase = 2; }
static void m_duplicate(fixture *f) { f->buckets[1].batch = 1, f->buckets[1].seq = 128; }
static void m_nan(fixture *f) { f->buckets[0].t_nodvfs_ns = NAN; }
static void m_pstate_plan(fixture *f) { f->pstates[4].plan = 0; }
static void m_pstate_op(fixture *f) { f->pstates[0].op = NOPS; }
static void m_pstate_pareto(fixture *f) { f->pstates[1].pareto = 0; } /* a point of op 0, row of op 1 */

/* plan_states rows are loaded (and checked) by store_load only: planstore_open, which
 * never reads them, still opens such a store. */
static void crafted_plan_states(ctx *c, void (*mutate)(fixture *), const char *needle) {
  char path[160];
  write_crafted(c, mutate, path);
  enpu_err err = {0};
  store_contents *s = NULL;
  assert_int_equal(store_load(path, &s, &err), ENPU_ERR_FORMAT);
  assert_non_null(strstr(err.msg, needle));
  assert_null(s);
  planstore *ps = NULL;
  assert_int_equal(planstore_open(path, &ps, &err), 0);
  planstore_close(ps);
}

static void test_crafted_indices(void **state) {
  ctx *c = *state;
  crafted(c, m_pareto_range, "pareto range");
  crafted(c, m_pareto_owner, "belongs to op");
  crafted(c, m_pareto_op, "op 1000000 out of range");
  crafted(c, m_walk_range, "range outside");
  crafted(c, m_walk_count, "range outside");
  crafted(c, m_ops_count, "range outside");
  crafted(c, m_walk_op, "is not an op of bucket");
  crafted(c, m_walk_pareto, "outside op 0");
  crafted(c, m_walk_backwards, "outside op 0");
  crafted(c, m_walk_too_many, "more instances");
  crafted(c, m_walk_time, "non-decreasing");
  crafted(c, m_walk_bucket, "wrong bucket");
  crafted(c, m_bops_order, "order");
  crafted(c, m_bops_op, "out of range");
  crafted(c, m_plan_prefix, "walk prefix");
  crafted(c, m_plan_states, "plan_states range");
  crafted(c, m_phase, "bad phase");
  crafted(c, m_duplicate, "appears twice");
  crafted(c, m_nan, "non-finite");
  crafted_plan_states(c, m_pstate_plan, "plan_states row 4: wrong plan");
  crafted_plan_states(c, m_pstate_op, "plan_states row 0");
  crafted_plan_states(c, m_pstate_pareto, "pareto 0 not its point");
}

/* ---------------------------------------------------------------------------------
 * Crafted layouts: checked before anything is read, so no size in the file makes the
 * reader (or HDF5 for it) allocate more than the file justifies. */

typedef enum {
  L_HUGE_CHUNK,
  L_DEFLATE,
  L_UNBACKED_ROWS,
  L_ZSTD_BOUND,
  L_EXTERNAL,
  L_SKIPPED_FILTER, /* a chunk whose index says zstd was skipped (HDF5 would overrun it) */
  L_SHORT_FRAME     /* a zstd frame of fewer bytes than the chunk */
} layout_case;

/* Replace /policies/enpu-all/walk of a fresh fixture store by an empty dataset of the
 * same type whose storage is crafted as `lc` says (the checks come before any read). */
static void craft_walk_layout(const ctx *c, const char *path, layout_case lc) {
  enpu_err err = {0};
  assert_int_equal(write_fixture(path, &c->f, 3, &err), 0);
  hid_t file = H5Fopen(path, H5F_ACC_RDWR, H5P_DEFAULT);
  hid_t g = H5Gopen2(file, "/policies/" POLICY, H5P_DEFAULT);
  hid_t old = H5Dopen2(g, "walk", H5P_DEFAULT);
  hid_t type = H5Dget_type(old);
  H5Dclose(old);
  assert_true(H5Ldelete(g, "walk", H5P_DEFAULT) >= 0);
  hsize_t rows = c->f.nwalk, chunk = 16, unlimited = H5S_UNLIMITED;
  hid_t dcpl = H5Pcreate(H5P_DATASET_CREATE);
  if (lc == L_HUGE_CHUNK) chunk = 1u << 20;
  if (lc != L_EXTERNAL) assert_true(H5Pset_chunk(dcpl, 1, &chunk) >= 0);
  if (lc == L_DEFLATE) assert_true(H5Pset_deflate(dcpl, 1) >= 0);
  if (lc == L_SKIPPED_FILTER || lc == L_SHORT_FRAME) {
    const unsigned level = 3;
    assert_true(H5Pset_shuffle(dcpl) >= 0);
    assert_true(H5Pset_filter(dcpl, 32015, H5Z_FLAG_MANDATORY, 1, &level) >= 0);
  }
  if (lc == L_ZSTD_BOUND) {
    /* With the filter unregistered its set_local cannot correct the bound: the file
     * claims 2 GiB chunks (optional filter, so HDF5 writes the chunks unfiltered). */
    assert_true(H5Zunregister(32015) >= 0);
    const unsigned values[2] = {3, 1u << 31};
    assert_true(H5Pset_filter(dcpl, 32015, H5Z_FLAG_OPTIONAL, 2, values) >= 0);
  }
  if (lc == L_EXTERNAL) {
    char ext[180];
    snprintf(ext, sizeof ext, "%s.ext", path);
    assert_true(H5Pset_external(dcpl, ext, 0, rows * H5Tget_size(type)) >= 0);
  }
  hid_t space = H5Screate_simple(1, &rows, lc == L_EXTERNAL ? NULL : &unlimited);
  hid_t ds = H5Dcreate2(g, "walk", type, space, H5P_DEFAULT, dcpl, H5P_DEFAULT);
  assert_true(ds >= 0);
  if (lc == L_UNBACKED_ROWS) { /* 100 million rows, none of them written */
    hsize_t many = 100000000;
    assert_true(H5Dset_extent(ds, &many) >= 0);
  }
  if (lc == L_SKIPPED_FILTER || lc == L_SHORT_FRAME) { /* both chunks written raw */
    unsigned char frame[64] = {0}, zeros[24] = {0};
    size_t bytes = ZSTD_compress(frame, sizeof frame, zeros, sizeof zeros, 3);
    assert_false(ZSTD_isError(bytes));
    for (hsize_t at = 0; at < rows; at += chunk)
      assert_true(H5Dwrite_chunk(ds, H5P_DEFAULT, lc == L_SKIPPED_FILTER ? 2u : 0u, &at, bytes, frame) >= 0);
  }
  H5Dclose(ds);
  H5Sclose(space);
  H5Pclose(dcpl);
  H5Tclose(type);
  H5Gclose(g);
  H5Fclose(file);
}

static void test_crafted_layouts(void **state) {
  ctx *c = *state;
  char path[160];
  snprintf(path, sizeof path, "%s/layout.h5", c->dir);
  const struct {
    layout_case lc;
    const char *needle;
  } cases[] = {
      {L_HUGE_CHUNK, "table walk: chunks of 1048576 rows"},
      {L_DEFLATE, "table walk: filter 1 is not shuffle"},
      {L_UNBACKED_ROWS, "table walk: 100000000 rows"},
      {L_ZSTD_BOUND, "table walk: zstd chunk bound 2147483648 is not the chunk size"},
      {L_EXTERNAL, "table walk: data stored outside the file"},
      {L_SKIPPED_FILTER, "table walk: the chunk at row 0"},
      {L_SHORT_FRAME, "table walk: cannot read it"},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    craft_walk_layout(c, path, cases[i].lc);
    expect_open_fails(path, ENPU_ERR_FORMAT, cases[i].needle);
  }
}

static void test_not_a_store(void **state) {
  ctx *c = *state;
  char path[160];
  snprintf(path, sizeof path, "%s/text.h5", c->dir);
  FILE *fp = fopen(path, "w");
  assert_non_null(fp);
  fputs("not hdf5 at all\n", fp);
  fclose(fp);
  expect_open_fails(path, ENPU_ERR_FORMAT, "not an HDF5 file");
  expect_open_fails("/nonexistent/plans.h5", ENPU_ERR_IO, "cannot open");
  /* A valid HDF5 file without the store's attribute. */
  snprintf(path, sizeof path, "%s/plain.h5", c->dir);
  hid_t f = H5Fcreate(path, H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT);
  assert_true(f >= 0);
  H5Fclose(f);
  expect_open_fails(path, ENPU_ERR_FORMAT, "not a plan store");
  /* The right attribute with a future version. */
  f = H5Fopen(path, H5F_ACC_RDWR, H5P_DEFAULT);
  hid_t sp = H5Screate(H5S_SCALAR);
  hid_t a = H5Acreate2(f, "format_version", H5T_STD_U32LE, sp, H5P_DEFAULT, H5P_DEFAULT);
  unsigned v = STORE_FORMAT_VERSION + 1;
  H5Awrite(a, H5T_NATIVE_UINT, &v);
  H5Aclose(a);
  H5Sclose(sp);
  H5Fclose(f);
  expect_open_fails(path, ENPU_ERR_FORMAT, "format_version");
  /* An older version (format 1, before budget modes): refused, naming both versions and
   * what to do. */
  f = H5Fopen(path, H5F_ACC_RDWR, H5P_DEFAULT);
  a = H5Aopen(f, "format_version", H5P_DEFAULT);
  v = STORE_FORMAT_VERSION - 1;
  H5Awrite(a, H5T_NATIVE_UINT, &v);
  H5Aclose(a);
  H5Fclose(f);
  char want[96];
  snprintf(want, sizeof want, "format_version %u, written before this reader's format %u", v, STORE_FORMAT_VERSION);
  expect_open_fails(path, ENPU_ERR_FORMAT, want);
  expect_open_fails(path, ENPU_ERR_FORMAT, "recompile it");
}

static int copy_file(const char *from, const char *to, long keep_bytes, long flip_at) {
  FILE *in = fopen(from, "rb"), *out = fopen(to, "wb");
  if (!in || !out) return -1;
  int ch;
  for (long i = 0; (ch = fgetc(in)) != EOF && (keep_bytes < 0 || i < keep_bytes); i++)
    fputc(i == flip_at ? ch ^ 0xff : ch, out);
  fclose(in);
  return fclose(out);
}

static void test_truncated(void **state) {
  ctx *c = *state;
  char path[160];
  snprintf(path, sizeof path, "%s/truncated.h5", c->dir);
  long size = file_bytes(c->path);
  const double fractions[] = {0.0, 0.01, 0.25, 0.5, 0.9, 0.99};
  for (size_t i = 0; i < sizeof fractions / sizeof fractions[0]; i++) {
    assert_int_equal(copy_file(c->path, path, (long)(size * fractions[i]), -1), 0);
    planstore *ps = NULL;
    enpu_err err = {0};
    int rc = planstore_open(path, &ps, &err);
    assert_true(rc == ENPU_ERR_FORMAT || rc == ENPU_ERR_IO);
    assert_null(ps);
    assert_non_null(strstr(err.msg, path));
  }
}

/* Flipped bytes anywhere: the open either fails cleanly or yields a store that still
 * answers lookups (a flip in unused space); store_load likewise; neither ever crashes
 * (ASan build). The loop runs in a child process that leaves with _exit: HDF5 1.10.8
 * leaks internal memory after an object header fails its checksum, which would
 * otherwise fail LeakSanitizer for the whole program; the parent stays leak-checked. */
static int flip_loop(const char *src, const char *path, int counts[2]) {
  long size = file_bytes(src);
  for (long at = 0; at < size; at += size / 300 + 1) {
    if (copy_file(src, path, -1, at) != 0) return 1;
    planstore *ps = NULL;
    enpu_err err = {0};
    int rc = planstore_open(path, &ps, &err);
    if (rc == 0) {
      planstore_plan plan;
      rc = planstore_lookup(ps, NULL, PLANSTORE_PREFILL, 1, 1, 1e9, &plan, &err);
      planstore_close(ps);
      if (rc > 0) return 2;
      counts[1]++;
    } else {
      if ((rc != ENPU_ERR_FORMAT && rc != ENPU_ERR_IO) || ps || !err.msg[0]) return 3;
      counts[0]++;
    }
    store_contents *s = NULL;
    rc = store_load(path, &s, &err);
    store_contents_free(s);
    if (rc != 0 && rc != ENPU_ERR_FORMAT && rc != ENPU_ERR_IO) return 4;
  }
  return 0;
}

static void test_flipped_bytes(void **state) {
  ctx *c = *state;
  char path[160];
  snprintf(path, sizeof path, "%s/flipped.h5", c->dir);
  int fds[2];
  assert_int_equal(pipe(fds), 0);
  pid_t pid = fork();
  assert_true(pid >= 0);
  if (pid == 0) {
    int counts[2] = {0, 0};
    int rc = flip_loop(c->path, path, counts);
    ssize_t wrote = write(fds[1], counts, sizeof counts);
    _exit(rc != 0 || wrote != (ssize_t)sizeof counts ? 10 + rc : 0);
  }
  close(fds[1]);
  int counts[2] = {0, 0}, status = 0;
  ssize_t got = read(fds[0], counts, sizeof counts);
  close(fds[0]);
  assert_int_equal(waitpid(pid, &status, 0), pid);
  assert_true(WIFEXITED(status)); /* not killed by a signal */
  assert_int_equal(WEXITSTATUS(status), 0);
  assert_int_equal(got, sizeof counts);
  print_message("flipped bytes: %d opens failed cleanly, %d flips were harmless\n", counts[0], counts[1]);
  assert_true(counts[0] > 0);
}

static void test_damaged_opens_leak_nothing(void **state) {
  const ctx *c = *state;
  test_failed_opens_leak_nothing(c->path, c->dir);
}

static void test_damaged_opens_quiet_at_exit(void **state) {
  const ctx *c = *state;
  test_damaged_opens_print_nothing_at_exit(c->path, c->dir);
}

/* Not a timed test: prints the median lookup time over many lookups. */
static void test_lookup_speed_report(void **state) {
  ctx *c = *state;
  enum { ROUNDS = 201, PER_ROUND = 1000 };
  double *ns = calloc(ROUNDS, sizeof *ns);
  assert_non_null(ns);
  double sink = 0;
  for (int r = 0; r < ROUNDS; r++) {
    struct timespec a, b;
    clock_gettime(CLOCK_MONOTONIC, &a);
    for (int i = 0; i < PER_ROUND; i++) {
      planstore_plan plan;
      int rc = planstore_lookup(c->ps, POLICY, PLANSTORE_PREFILL, 1 + i % 4, 100 + i % 400, 1000.0 + i % 2000,
                                &plan, NULL);
      sink += rc == 0 ? plan.energy_nj : 0;
    }
    clock_gettime(CLOCK_MONOTONIC, &b);
    ns[r] = ((double)(b.tv_sec - a.tv_sec) * 1e9 + (double)(b.tv_nsec - a.tv_nsec)) / PER_ROUND;
  }
  qsort(ns, ROUNDS, sizeof *ns, enpu_cmp_double);
  print_message("planstore_lookup: median %.1f ns per lookup (%d rounds of %d)\n", ns[ROUNDS / 2], ROUNDS,
                PER_ROUND);
  assert_true(sink > 0);
  free(ns);
}

/* `test_store --write PATH [LEVEL]` writes the fixture store and exits: the integration
 * test reads it with h5dump, h5py and the installed library. */
int write_only(const char *path, int level) {
  fixture *f = calloc(1, sizeof *f);
  enpu_err err = {0};
  if (!f) return 1;
  make_fixture(f);
  int rc = write_fixture(path, f, level, &err);
  if (rc) fprintf(stderr, "test_store: %s\n", err.msg);
  free(f);
  return rc ? 1 : 0;
}

/* store_walk_step: instances join the lead; the walk moves on only once all reached it. */
static void test_walk_step_rule(void **state) {
  (void)state;
  store_walk_pos p = {.lead = 0, .trail = 0, .lead_instances = 4, .instances = 4};
  assert_int_equal(store_walk_step(&p, 2, 1), STORE_WALK_OK); /* 1 of 4 to point 2 */
  assert_int_equal(p.lead, 2);
  assert_int_equal(p.trail, 0);
  assert_int_equal(store_walk_step(&p, 3, 1), STORE_WALK_EARLY);
  assert_int_equal(store_walk_step(&p, 2, 4), STORE_WALK_OVERFLOW);
  assert_int_equal(store_walk_step(&p, 1, 1), STORE_WALK_BACKWARD);
  assert_int_equal(store_walk_step(&p, 2, 0), STORE_WALK_BACKWARD);
  assert_int_equal(p.lead_instances, 1); /* the rejected steps left it */
  assert_int_equal(store_walk_step(&p, 2, 3), STORE_WALK_OK);
  assert_int_equal(p.lead_instances, 4);
  assert_int_equal(store_walk_step(&p, 2, 1), STORE_WALK_OVERFLOW); /* all there already */
  assert_int_equal(store_walk_step(&p, 5, 4), STORE_WALK_OK);
  assert_int_equal(p.trail, 2);
  assert_int_equal(p.lead, 5);
}

TEST_PART(store_damaged, cmocka_unit_test(test_crafted_indices), cmocka_unit_test(test_crafted_layouts),
          cmocka_unit_test(test_not_a_store), cmocka_unit_test(test_truncated),
          cmocka_unit_test(test_flipped_bytes), cmocka_unit_test(test_damaged_opens_leak_nothing),
          cmocka_unit_test(test_damaged_opens_quiet_at_exit), cmocka_unit_test(test_lookup_speed_report),
          cmocka_unit_test(test_walk_step_rule));
