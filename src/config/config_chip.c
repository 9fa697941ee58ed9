/* config_chip.c — chip files (jobs/chips/<name>.json) and their CSV power tables.
 *
 * The tables are read once, checked (every cell within its column's documented range,
 * config_ranges.c; levels non-decreasing, voltages inside the IVR's output band and
 * non-decreasing with level, the top level covering the chip's peak) and kept as arrays
 * in file order. CSV errors name
 * file:line:column like JSON errors, with the column's header name in place of a path. */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "config_internal.h"

#define NKEYS(a) (sizeof(a) / sizeof((a)[0]))
#define CSV_NCOL 4

/* The shipped tables were sampled from NeuSim and top out just below the nominal peaks
 * (HBM 2755 of 2765 GB/s, ICI 599.57 of 600 GB/s); a top level within this fraction of
 * the peak covers it, and the power model extrapolates the top band. */
#define PEAK_COVER_TOLERANCE 0.01

static const char *const chip_keys[] = {"name",           "tflops_bf16", "sa",     "vu",
                                        "sram",           "hbm",         "ici",    "dcn",
                                        "host",           "clock",       "ivr",    "fifo_sync_cycles",
                                        "other_static_w", "tdp_w",       "tables", "gating",
                                        "power_states"};
#define CHIP_INT(key, member) CONFIG_INT_FIELD(config_chip, key, member)
#define CHIP_NUMBER(key, member) CONFIG_NUMBER_FIELD(config_chip, key, member)
static const config_field sa_fields[] = {CHIP_INT("count", sa_count), CHIP_INT("dim", sa_dim)};
static const config_field vu_fields[] = {
    CHIP_INT("count", vu_count), CHIP_INT("sublanes", vu_sublanes),      CHIP_INT("lanes", vu_lanes),
    CHIP_INT("vregs", vregs),    CHIP_INT("shadow_vregs", shadow_vregs), CHIP_INT("vreg_bytes", vreg_bytes)};
static const config_field sram_fields[] = {CHIP_NUMBER("bytes", sram_bytes), CHIP_INT("ports", sram_ports),
                                           CHIP_INT("port_bytes_per_cycle", sram_port_bytes_per_cycle)};
static const config_field hbm_fields[] = {CHIP_NUMBER("bytes", hbm_bytes), CHIP_NUMBER("gbps", hbm_gbps),
                                          CHIP_NUMBER("latency_ns", hbm_latency_ns),
                                          CHIP_NUMBER("controller_share", hbm_controller_share)};
static const config_field ici_fields[] = {CONFIG_STRING_FIELD(config_chip, "topology", ici_topology),
                                          CHIP_INT("links", ici_links), CHIP_NUMBER("link_gbps", ici_link_gbps),
                                          CHIP_NUMBER("latency_ns", ici_latency_ns),
                                          CHIP_NUMBER("controller_share", ici_controller_share)};
static const config_field dcn_fields[] = {CHIP_NUMBER("gbps", dcn_gbps)};
static const config_field host_fields[] = {CHIP_NUMBER("gbps", host_gbps),
                                           CHIP_NUMBER("latency_ns", host_latency_ns),
                                           CHIP_NUMBER("pj_per_byte", host_pj_per_byte)};
static const config_field clock_fields[] = {CHIP_NUMBER("step_mhz", freq_step_mhz),
                                            CHIP_INT("states", freq_states)};
/* The regulator's output band (checked against its input before the rest is read), then
 * its steps and transition time. */
static const config_field ivr_fields[] = {
    CHIP_NUMBER("vin_v", ivr_vin_v),           CHIP_NUMBER("vout_min_v", ivr_vout_min_v),
    CHIP_NUMBER("vout_max_v", ivr_vout_max_v), CHIP_NUMBER("step_mv", ivr_step_mv),
    CHIP_NUMBER("step_ns", ivr_step_ns),       CHIP_NUMBER("scaling_time_ns", ivr_scaling_time_ns)};
enum { IVR_BAND_FIELDS = 3 };
static const config_field head_fields[] = {CONFIG_STRING_FIELD(config_chip, "name", name),
                                           CHIP_NUMBER("tflops_bf16", tflops_bf16)};
static const config_field tail_fields[] = {CHIP_INT("fifo_sync_cycles", fifo_sync_cycles),
                                           CHIP_NUMBER("other_static_w", other_static_w),
                                           CHIP_NUMBER("tdp_w", tdp_w)};
/* The sections read before "ivr", in file-format order; "host" is optional (only
 * offloading jobs need it). */
static const struct {
  const char *key;
  const config_field *fields;
  size_t nfields;
} sections[] = {{"sa", sa_fields, NKEYS(sa_fields)},       {"vu", vu_fields, NKEYS(vu_fields)},
                {"sram", sram_fields, NKEYS(sram_fields)}, {"hbm", hbm_fields, NKEYS(hbm_fields)},
                {"ici", ici_fields, NKEYS(ici_fields)},    {"dcn", dcn_fields, NKEYS(dcn_fields)},
                {"host", host_fields, NKEYS(host_fields)}, {"clock", clock_fields, NKEYS(clock_fields)}};
static const config_field gating_fields[] = {CONFIG_NUMBER_FIELD(config_gating, "gated_fraction", gated_fraction),
                                             CONFIG_NUMBER_FIELD(config_gating, "wake_ns", wake_ns),
                                             CONFIG_NUMBER_FIELD(config_gating, "wake_energy_nj", wake_energy_nj),
                                             CONFIG_NUMBER_FIELD(config_gating, "min_idle_ns", min_idle_ns)};
static const config_field deep_sleep_fields[] = {
    CONFIG_NUMBER_FIELD(config_deep_sleep, "w", w), CONFIG_NUMBER_FIELD(config_deep_sleep, "wake_ms", wake_ms),
    CONFIG_NUMBER_FIELD(config_deep_sleep, "wake_energy_j", wake_energy_j)};
static const char *const power_state_keys[] = {"deep_sleep"};
static const char *const gating_keys[] = {"sa", "vu", "sram", "hbm", "ici"};
/* The five components' tables (config_component order), the two regulators, then the
 * HBM PHY's parts. */
static const char *const table_keys[] = {"sa",       "vu",        "sram",   "hbm",     "ici",
                                         "ivr_dvfs", "ivr_fixed", "hbm_io", "hbm_dram"};
enum { TABLE_IVR_DVFS = CONFIG_NCOMP, TABLE_IVR_FIXED, TABLE_HBM_IO, TABLE_HBM_DRAM, NTABLE };
static const char *const vf_freq_cols[CSV_NCOL] = {"voltage_V", "frequency_GHz", "static_W", "dynamic_W"};
static const char *const vf_bw_cols[CSV_NCOL] = {"voltage_V", "bandwidth_GBps", "static_W", "dynamic_W"};
static const char *const ivr_cols[CSV_NCOL] = {"scaling_time_ns", "activity_factor", "voltage_V", "efficiency_pct"};

/* ---------------------------------------------------------------------------------
 * CSV: a header line naming the columns, then rows of CSV_NCOL numbers. */

typedef struct {
  double v[CSV_NCOL];
  int line;
  int col[CSV_NCOL]; /* 1-based column of each field, for messages */
} csv_row;

typedef struct {
  char file[CONFIG_PATH_LEN];
  const char *const *names;
  csv_row *rows;
  int count;
} csv_table;

static int csv_fail(const csv_table *t, int line, int col, enpu_err *err, int code, const char *fmt, ...)
    __attribute__((format(printf, 6, 7)));
static int csv_fail(const csv_table *t, int line, int col, enpu_err *err, int code, const char *fmt, ...) {
  char what[ENPU_ERR_MSG_LEN];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(what, sizeof what, fmt, ap);
  va_end(ap);
  return enpu_errorf(err, code, "%s:%d:%d: %s", t->file, line, col, what);
}

static int csv_fail_cell(const csv_table *t, const csv_row *r, int c, enpu_err *err, const char *fmt, ...)
    __attribute__((format(printf, 5, 6)));
static int csv_fail_cell(const csv_table *t, const csv_row *r, int c, enpu_err *err, const char *fmt, ...) {
  char what[ENPU_ERR_MSG_LEN];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(what, sizeof what, fmt, ap);
  va_end(ap);
  return csv_fail(t, r->line, r->col[c], err, ENPU_ERR_RANGE, "%s: %s", t->names[c], what);
}

/* A cell within its column's documented range (config_ranges.c, "power table"). */
static int csv_check_range(const csv_table *t, int line, int col, const char *name, double v, enpu_err *err) {
  enpu_err why = {0};
  int rc = config_range_check("power table", name, v, &why);
  return rc == ENPU_OK ? rc : csv_fail(t, line, col, err, rc, "%s: %s", name, why.msg);
}

/* Split one line (no newline) into fields; parse them as the header or as numbers. */
static int csv_line(csv_table *t, char *line, int lineno, bool header, csv_row *row, enpu_err *err) {
  int n = 0;
  char *p = line;
  for (;;) {
    char *end = p + strcspn(p, ",");
    bool last = *end == '\0';
    *end = '\0';
    int col = (int)(p - line) + 1;
    if (n == CSV_NCOL)
      return csv_fail(t, lineno, col, err, ENPU_ERR_PARSE, "expected %d columns, got more", CSV_NCOL);
    while (*p == ' ') p++;
    if (header) {
      if (strcmp(p, t->names[n]) != 0)
        return csv_fail(t, lineno, col, err, ENPU_ERR_PARSE, "expected header column '%s', got '%s'", t->names[n],
                        p);
    } else {
      char *stop;
      errno = 0;
      double v = strtod(p, &stop);
      while (*stop == ' ') stop++;
      if (stop == p || *stop != '\0' || errno == ERANGE || !isfinite(v))
        return csv_fail(t, lineno, col, err, ENPU_ERR_PARSE, "%s: expected a finite number, got '%s'", t->names[n],
                        p);
      ENPU_FORWARD(csv_check_range(t, lineno, col, t->names[n], v, err));
      row->v[n] = v;
      row->col[n] = col;
    }
    n++;
    if (last) {
      if (n < CSV_NCOL)
        return csv_fail(t, lineno, (int)(end - line) + 1, err, ENPU_ERR_PARSE, "expected %d columns, got %d",
                        CSV_NCOL, n);
      return ENPU_OK;
    }
    p = end + 1;
  }
}

static int csv_parse(csv_table *t, char *text, enpu_err *err) {
  size_t cap = 0;
  int lineno = 0;
  for (char *line = text; line && *line;) {
    char *nl = strchr(line, '\n');
    if (nl) *nl = '\0';
    size_t len = strlen(line);
    if (len && line[len - 1] == '\r') line[len - 1] = '\0';
    lineno++;
    if (lineno == 1) {
      ENPU_FORWARD(csv_line(t, line, lineno, true, NULL, err));
    } else if (line[strspn(line, " \t")] != '\0') { /* blank lines carry no row */
      if (enpu_grow((void **)&t->rows, &cap, (size_t)t->count + 1, sizeof *t->rows) < 0)
        return enpu_errorf(err, ENPU_ERR_NOMEM, "%s: out of memory", t->file);
      csv_row *r = &t->rows[t->count];
      r->line = lineno;
      ENPU_FORWARD(csv_line(t, line, lineno, false, r, err));
      t->count++;
    }
    line = nl ? nl + 1 : NULL;
  }
  if (t->count == 0) return csv_fail(t, lineno + 1, 1, err, ENPU_ERR_PARSE, "expected at least one data row");
  return ENPU_OK;
}

/* Read the table that chip member $.tables.<key> names (relative to the chip file) and
 * feed its bytes to the chip hash. IO errors are reported at that member. */
static int csv_read(const config_doc *doc, const config_path *tables_path, const json_t *tables, const char *key,
                    const char *const *names, csv_table *t, enpu_hasher *hs, enpu_err *err) {
  char rel[CONFIG_PATH_LEN];
  config_path kp = CONFIG_KEY(tables_path, key);
  ENPU_FORWARD(config_get_string(doc, tables_path, tables, key, rel, sizeof rel, err));
  if (enpu_path_relative(doc->file, rel, t->file, sizeof t->file, NULL) < 0)
    return config_fail(doc, &kp, err, ENPU_ERR_RANGE, "path too long");
  t->names = names;
  char *text = NULL;
  size_t len = 0;
  int rc = config_files_read(doc->files, t->file, &text, &len, err);
  if (rc < 0) {
    char where[768];
    config_where(doc, &kp, where, sizeof where);
    enpu_err_prefix(err, "%s: ", where);
    return rc;
  }
  enpu_hasher_bytes(hs, text, len);
  rc = csv_parse(t, text, err);
  free(text);
  return rc;
}

/* ---------------------------------------------------------------------------------
 * Table checks */

static int check_voltage(const config_chip *c, const csv_table *t, const csv_row *r, int col, enpu_err *err) {
  double v = r->v[col];
  if (v < c->ivr_vout_min_v || v > c->ivr_vout_max_v)
    return csv_fail_cell(t, r, col, err,
                         "expected a voltage in [%g, %g] (the chip's ivr.vout_min_v, "
                         "vout_max_v), got %g",
                         c->ivr_vout_min_v, c->ivr_vout_max_v, v);
  return ENPU_OK;
}

/* A V/f table; `on_ivr`: its voltages come from the chip's regulators, so they must lie
 * in the IVR's output band (the HBM I/O and DRAM rails are the memory's own). */
static int vf_table(const config_chip *c, const csv_table *t, double peak, const char *peak_what, bool on_ivr,
                    config_vf_table *out, enpu_err *err) {
  for (int i = 0; i < t->count; i++) {
    const csv_row *r = &t->rows[i], *prev = i ? &t->rows[i - 1] : NULL;
    if (on_ivr) ENPU_FORWARD(check_voltage(c, t, r, 0, err));
    if (prev && r->v[1] < prev->v[1])
      return csv_fail_cell(t, r, 1, err, "expected levels non-decreasing: at least %g (line %d), got %g",
                           prev->v[1], prev->line, r->v[1]);
    if (prev && r->v[0] < prev->v[0])
      return csv_fail_cell(t, r, 0, err,
                           "expected voltages non-decreasing with level: at least %g (line %d), "
                           "got %g",
                           prev->v[0], prev->line, r->v[0]);
  }
  const csv_row *top = &t->rows[t->count - 1];
  if (top->v[1] < peak * (1.0 - PEAK_COVER_TOLERANCE))
    return csv_fail_cell(t, top, 1, err,
                         "expected the top level to cover the chip's peak %g (%s), "
                         "got %g",
                         peak, peak_what, top->v[1]);
  out->points = enpu_calloc((size_t)t->count, sizeof *out->points);
  if (!out->points) return enpu_errorf(err, ENPU_ERR_NOMEM, "%s: out of memory", t->file);
  out->count = t->count;
  for (int i = 0; i < t->count; i++)
    out->points[i] = (config_vf_point){t->rows[i].v[0], t->rows[i].v[1], t->rows[i].v[2], t->rows[i].v[3]};
  return ENPU_OK;
}

static int ivr_table(const config_chip *c, const csv_table *t, config_ivr_table *out, enpu_err *err) {
  for (int i = 0; i < t->count; i++) {
    ENPU_FORWARD(check_voltage(c, t, &t->rows[i], 2, err));
  }
  out->points = enpu_calloc((size_t)t->count, sizeof *out->points);
  if (!out->points) return enpu_errorf(err, ENPU_ERR_NOMEM, "%s: out of memory", t->file);
  out->count = t->count;
  for (int i = 0; i < t->count; i++)
    out->points[i] = (config_ivr_point){t->rows[i].v[0], t->rows[i].v[1], t->rows[i].v[2], t->rows[i].v[3] / 100.0};
  return ENPU_OK;
}

/* The DVFS regulator table must have rows for the chip's chosen transition time. */
static int check_scaling_time(const config_doc *doc, const config_path *root, const config_chip *c,
                              const csv_table *t, enpu_err *err) {
  char have[256];
  size_t used = 0;
  have[0] = '\0';
  for (int i = 0; i < t->count; i++) {
    if (t->rows[i].v[0] == c->ivr_scaling_time_ns) return ENPU_OK;
    if ((i == 0 || t->rows[i].v[0] != t->rows[i - 1].v[0]) && used < sizeof have)
      used += (size_t)snprintf(have + used, sizeof have - used, "%s%g", used ? ", " : "", t->rows[i].v[0]);
  }
  config_path ip = CONFIG_KEY(root, "ivr");
  config_path sp = CONFIG_KEY(&ip, "scaling_time_ns");
  return config_fail(doc, &sp, err, ENPU_ERR_RANGE, "expected a scaling time present in %s (%s), got %g", t->file,
                     have, c->ivr_scaling_time_ns);
}

/* ---------------------------------------------------------------------------------
 * The chip document */

static int parse_scalars(const config_doc *doc, const config_path *root, config_chip *c, enpu_err *err) {
  const json_t *o = doc->root;
  ENPU_FORWARD(config_get_fields(doc, root, o, head_fields, NKEYS(head_fields), c, err));
  for (size_t k = 0; k < NKEYS(sections); k++) {
    config_path p = CONFIG_KEY(root, sections[k].key);
    const json_t *s = json_object_get(o, sections[k].key);
    if (!s && !strcmp(sections[k].key, "host")) continue;
    ENPU_FORWARD(config_fields(doc, &p, s, sections[k].fields, sections[k].nfields, c, err));
  }
  /* The n shadow registers map to the first n architectural ones (§3.1, "the n shadow
   * registers map to the first n architectural registers"): never more than there are. */
  if (c->shadow_vregs > c->vregs) {
    config_path vp = CONFIG_KEY(root, "vu"), kp = CONFIG_KEY(&vp, "shadow_vregs");
    return config_fail(doc, &kp, err, ENPU_ERR_RANGE,
                       "expected at most the chip's %d vector registers (vregs), got %d", c->vregs,
                       c->shadow_vregs);
  }
  config_path p = CONFIG_KEY(root, "ivr");
  const json_t *ivr = json_object_get(o, "ivr");
  ENPU_FORWARD(config_fields_object(doc, &p, ivr, ivr_fields, NKEYS(ivr_fields), err));
  ENPU_FORWARD(config_get_fields(doc, &p, ivr, ivr_fields, IVR_BAND_FIELDS, c, err));
  /* A buck regulator cannot output more than its input, nor a band below its minimum. */
  if (!(c->ivr_vout_max_v > c->ivr_vout_min_v && c->ivr_vout_max_v <= c->ivr_vin_v)) {
    config_path kp = CONFIG_KEY(&p, "vout_max_v");
    return config_fail(doc, &kp, err, ENPU_ERR_RANGE,
                       "expected a number in (%g, %g] (above vout_min_v, at most vin_v), got %g", c->ivr_vout_min_v,
                       c->ivr_vin_v, c->ivr_vout_max_v);
  }
  ENPU_FORWARD(
      config_get_fields(doc, &p, ivr, ivr_fields + IVR_BAND_FIELDS, NKEYS(ivr_fields) - IVR_BAND_FIELDS, c, err));
  ENPU_FORWARD(config_get_fields(doc, root, o, tail_fields, NKEYS(tail_fields), c, err));
  c->max_freq_ghz = c->freq_states * c->freq_step_mhz / 1000.0;
  return ENPU_OK;
}

/* "gating": per component, its power-gating parameters (optional; config.h). */
static int parse_gating(const config_doc *doc, const config_path *root, config_chip *c, enpu_err *err) {
  const json_t *g = json_object_get(doc->root, "gating");
  if (!g) return ENPU_OK;
  config_path gp = CONFIG_KEY(root, "gating");
  ENPU_FORWARD(config_object(doc, &gp, g, gating_keys, NKEYS(gating_keys), err));
  for (int k = 0; k < CONFIG_NCOMP; k++) {
    config_path p = CONFIG_KEY(&gp, gating_keys[k]);
    ENPU_FORWARD(config_fields(doc, &p, json_object_get(g, gating_keys[k]), gating_fields, NKEYS(gating_fields),
                               &c->gating[k], err));
  }
  c->has_gating = true;
  return ENPU_OK;
}

/* "power_states": deep sleep (optional; config.h). */
static int parse_power_states(const config_doc *doc, const config_path *root, config_chip *c, enpu_err *err) {
  const json_t *v = json_object_get(doc->root, "power_states");
  if (!v) return ENPU_OK;
  config_path pp = CONFIG_KEY(root, "power_states");
  ENPU_FORWARD(config_object(doc, &pp, v, power_state_keys, NKEYS(power_state_keys), err));
  config_path dp = CONFIG_KEY(&pp, "deep_sleep");
  ENPU_FORWARD(config_fields(doc, &dp, json_object_get(v, "deep_sleep"), deep_sleep_fields,
                             NKEYS(deep_sleep_fields), &c->deep_sleep, err));
  c->has_deep_sleep = true;
  return ENPU_OK;
}

static int parse_tables(const config_doc *doc, const config_path *root, config_chip *c, enpu_hasher *hs,
                        enpu_err *err) {
  config_path tp = CONFIG_KEY(root, "tables");
  const json_t *tables = json_object_get(doc->root, "tables");
  ENPU_FORWARD(config_object(doc, &tp, tables, table_keys, NKEYS(table_keys), err));
  const double ghz = c->max_freq_ghz, links = c->ici_links * c->ici_link_gbps;
  const double peak[NTABLE] = {ghz, ghz, ghz, c->hbm_gbps, links, 0, 0, c->hbm_gbps, c->hbm_gbps};
  const char *const clk = "GHz, clock.states x step_mhz", *const hbm = "GB/s, hbm.gbps";
  const char *const peak_what[NTABLE] = {clk, clk, clk, hbm, "GB/s, ici.links x link_gbps", NULL, NULL, hbm, hbm};
  config_vf_table *const vf_out[NTABLE] = {&c->vf[0], &c->vf[1], &c->vf[2],  &c->vf[3],   &c->vf[4],
                                           NULL,      NULL,      &c->hbm_io, &c->hbm_dram};
  int rc = ENPU_OK;
  for (int k = 0; k < NTABLE && rc == ENPU_OK; k++) {
    bool vf = vf_out[k] != NULL;
    bool bw = k == CONFIG_HBM || k == CONFIG_ICI || k >= TABLE_HBM_IO;
    csv_table t = {0};
    rc = csv_read(doc, &tp, tables, table_keys[k], vf ? (bw ? vf_bw_cols : vf_freq_cols) : ivr_cols, &t, hs, err);
    if (rc == ENPU_OK && vf) rc = vf_table(c, &t, peak[k], peak_what[k], k < TABLE_HBM_IO, vf_out[k], err);
    if (rc == ENPU_OK && k == TABLE_IVR_DVFS) rc = check_scaling_time(doc, root, c, &t, err);
    if (rc == ENPU_OK && !vf) rc = ivr_table(c, &t, k == TABLE_IVR_DVFS ? &c->ivr_dvfs : &c->ivr_fixed, err);
    free(t.rows);
  }
  return rc;
}

/* The chip hash keys a store's provenance and the farm's change table, and no plan
 * reads "power_states" (the replay's fleet does): the hash is of the file's text with
 * that member cut out (from its key through its object and the comma and blanks after
 * it), so a chip file that gains power states keeps the hash its stores carry. */
static int hash_text(enpu_hasher *hs, const char *text, size_t len, enpu_err *err) {
  const char *key = strstr(text, "\"power_states\"");
  const char *open = key ? strchr(key, '{') : NULL;
  size_t end = 0;
  for (size_t i = open ? (size_t)(open - text) : len, depth = 0; i < len; i++) {
    depth += text[i] == '{';
    depth -= text[i] == '}';
    if (text[i] == '}' && depth == 0) {
      end = i + 1;
      break;
    }
  }
  if (!end) {
    enpu_hasher_bytes(hs, text, len);
    return ENPU_OK;
  }
  while (end < len &&
         (text[end] == ',' || text[end] == ' ' || text[end] == '\n' || text[end] == '\r' || text[end] == '\t'))
    end++;
  const size_t head = (size_t)(key - text);
  char *cut = malloc(len - (end - head) + 1);
  ENPU_RETURN_IF(!cut, err, ENPU_ERR_NOMEM, "out of memory (chip hash)");
  memcpy(cut, text, head);
  memcpy(cut + head, text + end, len - end);
  enpu_hasher_bytes(hs, cut, len - (end - head));
  free(cut);
  return ENPU_OK;
}

int config_chip_parse(const config_doc *doc, config_chip *c, enpu_err *err) {
  config_path root = CONFIG_ROOT;
  ENPU_FORWARD(config_object(doc, &root, doc->root, chip_keys, NKEYS(chip_keys), err));
  snprintf(c->path, sizeof c->path, "%s", doc->file);
  ENPU_FORWARD(parse_scalars(doc, &root, c, err));
  ENPU_FORWARD(parse_gating(doc, &root, c, err));
  ENPU_FORWARD(parse_power_states(doc, &root, c, err));
  enpu_hasher hs;
  enpu_hasher_init(&hs, 0);
  ENPU_FORWARD(hash_text(&hs, doc->text, doc->len, err));
  ENPU_FORWARD(parse_tables(doc, &root, c, &hs, err));
  c->hash = enpu_hasher_digest(&hs);
  return ENPU_OK;
}

void config_chip_clear(config_chip *c) {
  for (int k = 0; k < CONFIG_NCOMP; k++) free(c->vf[k].points);
  free(c->hbm_io.points);
  free(c->hbm_dram.points);
  free(c->ivr_dvfs.points);
  free(c->ivr_fixed.points);
  memset(c, 0, sizeof *c);
}

static void clear_chip(void *c) { config_chip_clear(c); }

CONFIG_LOADER(config_chip_load, config_chip, "chip", config_chip_parse, clear_chip)

void config_chip_free(config_chip *chip) {
  if (!chip) return;
  config_chip_clear(chip);
  free(chip);
}

double config_state_ghz(const config_chip *chip, int state) {
  if (state < 0 || state > chip->freq_states) return NAN; /* a caller bug: make it visible */
  return state * chip->freq_step_mhz / 1000.0;
}
