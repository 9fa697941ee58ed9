/* cli_args.c — the one option parser of `enpu`: each subcommand describes its options in a
 * table (cli_spec) and this file reads argv by it, checks every value against the row's
 * type and range, and prints the subcommand's --help from the same rows, so what is
 * accepted and what is documented cannot drift apart.
 *
 * Invariants: a value is stored only after it passed its row's checks; a usage error
 * leaves the arguments struct partly filled but the caller then only exits (2); the
 * defaults shown by --help are the values the spec's init function gives, so there is
 * one place for each default. */
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "cli_internal.h"
#include "config.h"

#define HELP_WIDTH 88  /* columns of the synopsis and of the option help */
#define HELP_COLUMN 22 /* where an option's help text starts */

int cli_reject(char *msg, size_t len, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, len, fmt, ap);
  va_end(ap);
  return -1;
}

static bool is_help(const char *a) { return !strcmp(a, "--help") || !strcmp(a, "-h"); }

static const cli_opt *find_opt(const cli_spec *s, const char *a) {
  for (int k = 0; k < s->nopts; k++) {
    const cli_opt *o = &s->opts[k];
    if ((a[1] == '-' && !strcmp(a + 2, o->name)) || (o->alias && a[1] == o->alias && !a[2])) return o;
  }
  return NULL;
}

/* ---- ranges ------------------------------------------------------------------- */

static bool has_range(const cli_opt *o) { return o->range.doc || o->range.min < o->range.max; }

static bool opt_in_range(const cli_opt *o, double x) {
  const cli_range *r = &o->range;
  if (r->doc) return config_range_check(r->doc, r->path, x, NULL) == 0;
  if (!has_range(o)) return true;
  return (r->min_open ? x > r->min : x >= r->min) && x <= r->max;
}

/* " in [1, 65536]", " > 0", " >= 0" or "" (no range). */
static void opt_range_text(const cli_opt *o, char *out, size_t len) {
  const cli_range *r = &o->range;
  char interval[80] = "";
  if (r->doc && config_range_interval(r->doc, r->path, interval, sizeof interval, NULL) == 0)
    snprintf(out, len, " in %s", interval);
  else if (!has_range(o)) snprintf(out, len, "%s", "");
  else if (isinf(r->max)) snprintf(out, len, " %s %.15g", r->min_open ? ">" : ">=", r->min);
  else snprintf(out, len, " in %c%.15g, %.15g]", r->min_open ? '(' : '[', r->min, r->max);
}

static int nchoices(const cli_opt *o) {
  int n = 0;
  while (o->choices[n]) n++;
  return n;
}

/* What a value of o must be: "an integer in [1, 65536]", "prefill or decode", ... */
static void expected_text(const cli_opt *o, char *out, size_t len) {
  char range[96];
  opt_range_text(o, range, sizeof range);
  const bool whole = o->type == CLI_INT || o->type == CLI_U64 || (o->flags & CLI_WHOLE);
  if (o->type == CLI_ENUM) {
    size_t at = 0;
    const int n = nchoices(o);
    for (int k = 0; k < n && at < len; k++)
      at += (size_t)snprintf(out + at, len - at, "%s%s", k == 0 ? "" : k == n - 1 ? " or " : ", ", o->choices[k]);
  } else if (o->type == CLI_LIST) {
    snprintf(out, len, "a comma-separated list of %d to %d %s%s", o->min_count ? o->min_count : 1,
             o->max_count ? o->max_count : CLI_LIST_MAX, whole ? "integers" : "numbers", range);
  } else {
    snprintf(out, len, "%s%s", whole ? "an integer" : "a number", range);
  }
}

static int bad_value(const cli_opt *o, const char *v, char *msg, size_t len) {
  char what[256];
  expected_text(o, what, sizeof what);
  return cli_reject(msg, len, "--%s: expected %s, got '%s'", o->name, what, v);
}

/* ---- values ------------------------------------------------------------------- */

/* One number of o (the value, or an element of a list) within its range; 0 or -1. */
static int opt_number(const cli_opt *o, const char *v, double *x) {
  int i;
  uint64_t u;
  if (o->type == CLI_INT || (o->flags & CLI_WHOLE)) {
    if (cli_parse_int(v, &i) < 0) return -1;
    *x = i;
  } else if (o->type == CLI_U64) {
    if (cli_parse_u64(v, &u) < 0) return -1;
    *x = (double)u;
  } else if (cli_parse_double(v, x) < 0) {
    return -1;
  }
  return opt_in_range(o, *x) ? 0 : -1;
}

static int set_list(const cli_opt *o, const char *v, cli_numbers *list) {
  const int most = o->max_count ? o->max_count : CLI_LIST_MAX;
  char item[64];
  list->n = 0;
  for (const char *p = v;; p++) {
    const size_t n = strcspn(p, ",");
    if (n == 0 || n >= sizeof item || list->n == most) return -1;
    memcpy(item, p, n);
    item[n] = '\0';
    if (opt_number(o, item, &list->v[list->n++]) < 0) return -1;
    p += n;
    if (!*p) break;
  }
  return list->n >= (o->min_count ? o->min_count : 1) ? 0 : -1;
}

static int set_choice(const cli_opt *o, const char *v, int *at) {
  for (int k = 0; o->choices[k]; k++)
    if (!strcmp(v, o->choices[k])) return *at = k, 0;
  return -1;
}

/* Store v (NULL for a flag) into the field of o; 0, or -1 with msg filled. */
static int set_value(const cli_opt *o, const char *v, void *args, char *msg, size_t len) {
  char *at = (char *)args + o->at;
  double x = 0;
  int rc = 0;
  switch (o->type) {
  case CLI_FLAG: *(int *)at = 1; return 0;
  case CLI_STRING: *(const char **)at = v; break;
  case CLI_CUSTOM: break;
  case CLI_ENUM: rc = set_choice(o, v, (int *)at); break;
  case CLI_LIST: rc = set_list(o, v, (cli_numbers *)at); break;
  case CLI_INT:
    rc = opt_number(o, v, &x);
    if (!rc) *(int *)at = (int)x;
    break;
  case CLI_U64:
    rc = opt_number(o, v, &x);
    if (!rc) cli_parse_u64(v, (uint64_t *)at);
    break;
  case CLI_DOUBLE:
    rc = opt_number(o, v, &x);
    if (!rc) *(double *)at = x;
    break;
  }
  if (rc < 0) return bad_value(o, v, msg, len);
  char what[256] = "";
  if (o->accept && o->accept(v, args, what, sizeof what) < 0)
    return cli_reject(msg, len, "--%s: expected %s, got '%s'", o->name, what, v);
  return 0;
}

/* The next positional argument a: a const char * (max 1) or one more of a cli_strings. */
static int set_positional(const cli_spec *s, const char *a, void *args, int *npos, char *msg, size_t len) {
  const cli_positional *p = &s->pos;
  char *at = (char *)args + p->at;
  if (*npos == p->max && p->max < 2)
    return p->max ? cli_reject(msg, len, "more than one %s ('%s')", p->what, a)
                  : cli_reject(msg, len, "unexpected argument '%s'", a);
  if (*npos == p->max) return cli_reject(msg, len, "more than %d %ss ('%s')", p->max, p->what, a);
  if (p->max == 1) *(const char **)at = a;
  else ((cli_strings *)at)->v[((cli_strings *)at)->n++] = a;
  ++*npos;
  return 0;
}

/* ---- parsing ------------------------------------------------------------------ */

/* Zero args, every enum "not given" (-1), then the spec's defaults. */
static void init_args(const cli_spec *s, void *args) {
  memset(args, 0, s->args_size);
  for (int k = 0; k < s->nopts; k++)
    if (s->opts[k].type == CLI_ENUM) *(int *)((char *)args + s->opts[k].at) = -1;
  if (s->init) s->init(args);
}

static int missing_argument(const cli_spec *s, int npos, const cli_parsed *p, char *msg, size_t len) {
  if (npos < s->pos.min) return cli_reject(msg, len, "missing %s", s->pos.what);
  for (int k = 0; k < s->nopts; k++)
    if ((s->opts[k].flags & CLI_REQUIRED) && !(p->given >> k & 1))
      return cli_reject(msg, len, "missing --%s", s->opts[k].name);
  return 0;
}

int cli_parse_args(const cli_spec *s, int argc, char **argv, int first, void *args, cli_parsed *p, char *msg,
                   size_t len) {
  init_args(s, args);
  *p = (cli_parsed){s, 0};
  int npos = 0;
  for (int i = first; i < argc; i++) {
    const char *a = argv[i];
    if (is_help(a)) return CLI_HELP;
    if (a[0] != '-' || !a[1]) {
      if (set_positional(s, a, args, &npos, msg, len) < 0) return CLI_USAGE;
      continue;
    }
    const cli_opt *o = find_opt(s, a);
    if (!o || (o->type != CLI_FLAG && i + 1 >= argc)) {
      cli_reject(msg, len, o ? "option '%s' needs a value" : "unknown option '%s'", a);
      return CLI_USAGE;
    }
    const uint64_t bit = UINT64_C(1) << (o - s->opts);
    if ((p->given & bit) && o->type != CLI_FLAG && !(o->flags & CLI_REPEATABLE)) {
      cli_reject(msg, len, "--%s given twice: it takes one value", o->name);
      return CLI_USAGE;
    }
    if (set_value(o, o->type == CLI_FLAG ? NULL : argv[++i], args, msg, len) < 0) return CLI_USAGE;
    p->given |= bit;
  }
  if (missing_argument(s, npos, p, msg, len) < 0) return CLI_USAGE;
  if (s->check && s->check(args, p, msg, len) < 0) return CLI_USAGE;
  return CLI_PARSED;
}

bool cli_has(const cli_parsed *p, const char *name) {
  for (int k = 0; k < p->spec->nopts; k++)
    if (!strcmp(p->spec->opts[k].name, name)) return p->given >> k & 1;
  return false;
}

/* ---- help --------------------------------------------------------------------- */

/* The value placeholder of o: its meta, or its choices joined by '|'. */
static void meta_text(const cli_opt *o, char *out, size_t len) {
  size_t at = 0;
  out[0] = '\0';
  if (o->meta) snprintf(out, len, "%s", o->meta);
  else if (o->type == CLI_ENUM)
    for (int k = 0; o->choices[k] && at < len; k++)
      at += (size_t)snprintf(out + at, len - at, "%s%s", k ? "|" : "", o->choices[k]);
}

/* One synopsis item, wrapped at width under the first; @return the column after it. */
static int synopsis_item(FILE *out, const char *item, int col, int indent, int width) {
  if (col + 1 + (int)strlen(item) > width && col > indent) col = fprintf(out, "\n%*s", indent, "") - 1;
  return col + fprintf(out, " %s", item);
}

/* "<lead> <command> POSITIONAL --required R [--optional O]...", required first, wrapped at
 * width. */
static void synopsis_wrapped(const cli_spec *s, FILE *out, const char *lead, int width) {
  char item[160], meta[96];
  const int indent = fprintf(out, "%s %s", lead, s->command);
  int col = indent;
  if (s->pos.meta) {
    snprintf(item, sizeof item, s->pos.min > 0 ? "%s" : "[%s]", s->pos.meta);
    col = synopsis_item(out, item, col, indent, width);
  }
  for (int required = 1; required >= 0; required--)
    for (int k = 0; k < s->nopts; k++) {
      const cli_opt *o = &s->opts[k];
      if (!(o->flags & CLI_REQUIRED) != !required) continue;
      meta_text(o, meta, sizeof meta);
      snprintf(item, sizeof item, required ? "--%s%s%s" : "[--%s%s%s]", o->name, meta[0] ? " " : "", meta);
      col = synopsis_item(out, item, col, indent, width);
    }
  fputc('\n', out);
}

static void synopsis(const cli_spec *s, FILE *out) { synopsis_wrapped(s, out, "usage: enpu", HELP_WIDTH); }

/* One row of the command table: the synopsis on one line, '|' escaped, and the summary. */
static void markdown_row(const cli_spec *s, const char *summary, FILE *out) {
  char *line = NULL;
  size_t len = 0;
  FILE *mem = open_memstream(&line, &len);
  if (!mem) return;
  synopsis_wrapped(s, mem, "enpu", INT32_MAX);
  fclose(mem);
  fputs("| `", out);
  for (size_t i = 0; i < len && line[i] != '\n'; i++) fprintf(out, line[i] == '|' ? "\\|" : "%c", line[i]);
  fprintf(out, "` | %s |\n", summary);
  free(line);
}

/* The first sentence of s's commands.md section on one line into out[len]; "" if none. */
static void first_sentence(const cli_spec *s, char *out, size_t len) {
  const char *about = NULL, *exit = NULL;
  int about_len = 0, exit_len = 0, n = 0;
  if (cli_help_section(s, &about, &about_len, &exit, &exit_len) < 0) about_len = 0;
  for (; n < about_len && n + 1 < (int)len; n++) {
    const bool end = n + 1 == about_len || about[n + 1] == ' ' || about[n + 1] == '\n';
    if (about[n] == '.' && end) break;
    out[n] = about[n] == '\n' ? ' ' : about[n];
  }
  out[n] = '\0';
}

void cli_commands_markdown(FILE *out) {
  fprintf(out, "| command | what it does |\n|---|---|\n");
  char sentence[512];
  for (int i = 0; i < cli_ncommands; i++)
    for (int k = 0; cli_commands[i].specs[k]; k++) {
      const cli_spec *s = cli_commands[i].specs[k];
      first_sentence(s, sentence, sizeof sentence);
      markdown_row(s, sentence[0] ? sentence : cli_commands[i].summary, out);
    }
}

/* "required; in [1, 65536]; default 5" for o, its default read from the initialised
 * arguments: a number outside the range is a "not given" mark, not a default. */
static void suffix_text(const cli_opt *o, const void *args, char *out, size_t len) {
  const char *at = (const char *)args + o->at;
  char range[96] = "", bounds[104] = "", def[128] = "";
  if (o->type != CLI_ENUM) opt_range_text(o, range, sizeof range); /* " in [1, 8]", " > 0" */
  const bool list = o->type == CLI_LIST;
  if (range[0]) snprintf(bounds, sizeof bounds, "%s%s", list ? "each" : "", list ? range : range + 1);
  double x = NAN;
  if (o->type == CLI_INT) x = *(const int *)at;
  else if (o->type == CLI_U64) x = (double)*(const uint64_t *)at;
  else if (o->type == CLI_DOUBLE) x = *(const double *)at;
  if (o->flags & CLI_REQUIRED) def[0] = '\0';
  else if (!isnan(x) && opt_in_range(o, x)) snprintf(def, sizeof def, "default %.15g", x);
  else if (o->type == CLI_STRING && *(const char *const *)at)
    snprintf(def, sizeof def, "default %s", *(const char *const *)at);
  else if (o->type == CLI_ENUM && *(const int *)at >= 0)
    snprintf(def, sizeof def, "default %s", o->choices[*(const int *)at]);
  const char *parts[3] = {o->flags & CLI_REQUIRED ? "required" : "", bounds, def};
  size_t n = 0;
  out[0] = '\0';
  for (int k = 0; k < 3 && n < len; k++)
    if (parts[k][0]) n += (size_t)snprintf(out + n, len - n, "%s%s", n ? "; " : "", parts[k]);
}

/* One entry: the label, then the help text's lines from HELP_COLUMN (with `wrap`, each
 * broken to HELP_WIDTH), suffix after the last. */
static void entry(FILE *out, const char *label, const char *help, const char *suffix, bool wrap) {
  int col = fprintf(out, "  %s", label);
  const char *line = help;
  for (;;) {
    size_t n = strcspn(line, "\n");
    /* a line longer than the width (one made from a table) breaks at its last space that fits */
    for (size_t k = n; wrap && HELP_COLUMN + n > HELP_WIDTH && k > 0; k--)
      if (line[k] == ' ' && HELP_COLUMN + k <= HELP_WIDTH) n = k;
    const bool last = !line[n];
    if (col >= HELP_COLUMN) col = fprintf(out, "\n") - 1;
    fprintf(out, "%*s%.*s", HELP_COLUMN - col, "", (int)n, line);
    col = HELP_COLUMN + (int)n;
    if (last) break;
    fputc('\n', out);
    col = 0;
    line += n + 1;
  }
  if (suffix[0] && col + 3 + (int)strlen(suffix) > HELP_WIDTH) fprintf(out, "\n%*s(%s)", HELP_COLUMN, "", suffix);
  else if (suffix[0]) fprintf(out, " (%s)", suffix);
  fputc('\n', out);
}

/* commands.md, compiled in by the build (src/cli/CMakeLists.txt). */
extern const char cli_commands_md[];

int cli_help_section(const cli_spec *s, const char **about, int *about_len, const char **exit, int *exit_len) {
  char head[96];
  snprintf(head, sizeof head, "\n## %s\n", s->command);
  const char *at = strstr(cli_commands_md, head);
  if (!at) return -1;
  at += strlen(head);
  const char *end = strstr(at, "\n## ");
  if (!end) end = at + strlen(at);
  while (at < end && *at == '\n') at++;
  while (end > at && end[-1] == '\n') end--;
  const char *last = end;
  while (last > at && !(last[-1] == '\n' && last - 1 > at && last[-2] == '\n')) last--;
  const bool has_exit = !strncmp(last, "Exit status", 11);
  *exit = has_exit ? last : end, *exit_len = has_exit ? (int)(end - last) : 0;
  if (has_exit) end = last - 2 > at ? last - 2 : at;
  *about = at, *about_len = (int)(end - at);
  return 0;
}

void cli_help(const cli_spec *s, FILE *out) {
  void *args = calloc(1, s->args_size ? s->args_size : 1);
  if (args) init_args(s, args);
  const char *about = "", *exit = "";
  int about_len = 0, exit_len = 0;
  cli_help_section(s, &about, &about_len, &exit, &exit_len);
  synopsis(s, out);
  if (about_len) fprintf(out, "\n%.*s\n", about_len, about);
  fputc('\n', out);
  char label[160], meta[96], suffix[256];
  if (s->pos.meta && s->pos.help) entry(out, s->pos.meta, s->pos.help, "", false);
  for (int k = 0; k < s->nopts; k++) {
    const cli_opt *o = &s->opts[k];
    meta_text(o, meta, sizeof meta);
    const int n = o->alias ? snprintf(label, sizeof label, "-%c, ", o->alias) : 0;
    snprintf(label + n, sizeof label - (size_t)n, "--%s%s%s", o->name, meta[0] ? " " : "", meta);
    if (args) suffix_text(o, args, suffix, sizeof suffix);
    entry(out, label, o->help, args ? suffix : "", o->flags & CLI_WRAP);
  }
  entry(out, "-h, --help", "show this help", "", false);
  if (exit_len) fprintf(out, "\n%.*s\n", exit_len, exit);
  free(args);
}

/* ---- dispatch ----------------------------------------------------------------- */

/* The sub-command names of c ("info|verify|diff"). */
static void sub_names(const cli_command *c, char *out, size_t len) {
  size_t n = 0;
  out[0] = '\0';
  for (int k = 0; c->specs[k] && n < len; k++) {
    const char *sub = strchr(c->specs[k]->command, ' ');
    if (sub) n += (size_t)snprintf(out + n, len - n, "%s%s", n ? "|" : "", sub + 1);
  }
}

/* A command without a spec of its own and no known sub-command: list them. */
static int no_sub(const cli_command *c, int argc, char **argv) {
  char subs[128];
  sub_names(c, subs, sizeof subs);
  const bool help = argc >= 2 && is_help(argv[1]);
  FILE *out = help ? stdout : stderr;
  if (!help && argc < 2) fprintf(out, "enpu %s: missing sub-command (%s)\n", c->name, subs);
  else if (!help) fprintf(out, "enpu %s: unknown sub-command '%s' (%s)\n", c->name, argv[1], subs);
  for (int k = 0; c->specs[k]; k++) synopsis(c->specs[k], out);
  fprintf(out, "`enpu %s <%s> --help` shows one's options.\n", c->name, subs);
  return help ? 0 : CLI_USAGE;
}

/* Was --json asked for on a command line that did not parse? Only for a command that
 * has the option (a --json given to one without is the usage error itself). */
static bool wants_json(const cli_spec *s, int argc, char **argv, int first) {
  bool has = false;
  for (int k = 0; k < s->nopts; k++) has = has || !strcmp(s->opts[k].name, "json");
  for (int i = first; has && i < argc; i++)
    if (!strcmp(argv[i], "--json")) return true;
  return false;
}

int cli_run(const cli_command *c, int argc, char **argv) {
  const cli_spec *s = NULL;
  int first = 1;
  for (int k = 0; c->specs[k]; k++) {
    const char *sub = strchr(c->specs[k]->command, ' ');
    if (sub && argc >= 2 && !strcmp(sub + 1, argv[1])) s = c->specs[k], first = 2;
    else if (!sub && !s) s = c->specs[k];
  }
  if (!s) return no_sub(c, argc, argv);
  void *args = calloc(1, s->args_size);
  if (!args) {
    cli_fail(c->name, "out of memory");
    return CLI_EXIT_ENV;
  }
  cli_parsed p;
  char msg[512] = "";
  int st = cli_parse_args(s, argc, argv, first, args, &p, msg, sizeof msg);
  if (st == CLI_HELP) {
    cli_help(s, stdout);
  } else if (st == CLI_USAGE) {
    fprintf(stderr, "enpu %s: %s\n", s->command, msg);
    synopsis(s, stderr);
    fprintf(stderr, "`enpu %s --help` shows every option.\n", s->command);
    if (wants_json(s, argc, argv, first)) cli_json_error(st, msg);
  } else if (cli_has(&p, "json")) {
    st = cli_json_run(s->command, s->run, args);
  } else {
    st = s->run(args);
  }
  free(args);
  return st;
}
