/* report_plots.c — the figures of one report call, queued while the report is written and
 * drawn together at its end in one gnuplot: a gnuplot's start (exec, dynamic linking,
 * cairo and font setup) costs more than drawing a small figure (docs/history/bench-history.md: the
 * quick paper pipeline's report stage, 165 figures, 13.2 s of CPU with one gnuplot per
 * figure, 6.5 s with one per call).
 *
 * The batch runs each figure as its own script would run alone: from its directory (`cd`),
 * its script loaded unchanged (a .gp on disk still redraws by hand), then the state it
 * may leave (a multiplot, an open output) closed and the session reset. gnuplot's output
 * goes to a temporary file with a mark before each figure, and each figure's lines are
 * appended to its directory's gnuplot.log, so a log holds what one gnuplot per figure
 * would have written there. When the batch fails (gnuplot exits non-zero, or a PNG is
 * missing or empty) its output is dropped and every figure is drawn again one gnuplot
 * each (report_run_gnuplot), which names the script gnuplot fails on. Files queued to
 * publish (a report.md written to a temporary name) are renamed only once every figure
 * is drawn, so a report that exists refers to plots that exist. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "report_internal.h"

/* gnuplot prints it (to its stderr) before each figure of a batch: "<MARK> <index>". */
#define MARK "ENPU_REPORT_FIGURE"

typedef struct {
  char *absdir, *script, *png; /* one allocation, owned by absdir */
} plot_fig;

typedef struct {
  char *from, *to; /* one allocation, owned by from */
} plot_move;

struct report_plots {
  plot_fig *fig;
  size_t n, cap;
  plot_move *move;
  size_t nmove, capmove;
  char program[]; /* the gnuplot to run */
};

int report_plots_create(const char *program, report_plots **out, enpu_err *err) {
  if (!program) program = "gnuplot";
  *out = enpu_calloc(1, sizeof **out + strlen(program) + 1);
  ENPU_RETURN_IF(!*out, err, ENPU_ERR_NOMEM, "out of memory (figure queue)");
  strcpy((*out)->program, program);
  return ENPU_OK;
}

void report_plots_free(report_plots *q) {
  if (!q) return;
  for (size_t i = 0; i < q->n; i++) free(q->fig[i].absdir);
  for (size_t i = 0; i < q->nmove; i++) {
    remove(q->move[i].from); /* a report whose figures were not drawn is not published */
    free(q->move[i].from);
  }
  free(q->fig);
  free(q->move);
  free(q);
}

/* a, b and c copied into one allocation: *pa, *pb, *pc point into it. */
static int copy3(const char *a, const char *b, const char *c, char **pa, char **pb, char **pc) {
  const size_t la = strlen(a) + 1, lb = strlen(b) + 1, lc = c ? strlen(c) + 1 : 0;
  char *s = malloc(la + lb + lc);
  if (!s) return ENPU_ERR_NOMEM;
  *pa = memcpy(s, a, la);
  *pb = memcpy(s + la, b, lb);
  if (c) *pc = memcpy(s + la + lb, c, lc);
  return ENPU_OK;
}

int report_plots_add(report_plots *q, const char *absdir, const char *script, const char *png, enpu_err *err) {
  ENPU_RETURN_IF(enpu_grow((void **)&q->fig, &q->cap, q->n + 1, sizeof *q->fig) < 0, err, ENPU_ERR_NOMEM,
                 "out of memory (figure queue)");
  plot_fig *f = &q->fig[q->n];
  ENPU_RETURN_IF(copy3(absdir, script, png, &f->absdir, &f->script, &f->png) < 0, err, ENPU_ERR_NOMEM,
                 "out of memory (figure queue)");
  q->n++;
  return ENPU_OK;
}

int report_plots_publish(report_plots *q, const char *from, const char *to, enpu_err *err) {
  ENPU_RETURN_IF(enpu_grow((void **)&q->move, &q->capmove, q->nmove + 1, sizeof *q->move) < 0, err, ENPU_ERR_NOMEM,
                 "out of memory (figure queue)");
  plot_move *m = &q->move[q->nmove];
  ENPU_RETURN_IF(copy3(from, to, NULL, &m->from, &m->to, NULL) < 0, err, ENPU_ERR_NOMEM,
                 "out of memory (figure queue)");
  q->nmove++;
  return ENPU_OK;
}

/* ---- the batch ------------------------------------------------------------------- */

/* s in gnuplot's single quotes ('' is a quote inside '...'). */
static void put_quoted(FILE *f, const char *s) {
  fputc('\'', f);
  for (; *s; s++) {
    if (*s == '\'') fputc('\'', f);
    fputc(*s, f);
  }
  fputc('\'', f);
}

/* The batch's arguments: program, then per figure -e "<its commands>". *args (free it)
 * holds the strings argv points into. */
static int batch_argv(const report_plots *q, char ***argv, char **args) {
  size_t len = 0;
  *argv = NULL;
  FILE *f = open_memstream(args, &len);
  if (!f) return ENPU_ERR_NOMEM;
  size_t *at = enpu_calloc(q->n, sizeof *at);
  for (size_t i = 0; at && i < q->n; i++) {
    fflush(f);
    at[i] = len;
    fprintf(f, "print '%s %zu'; cd ", MARK, i);
    put_quoted(f, q->fig[i].absdir);
    fprintf(f, "; load ");
    put_quoted(f, q->fig[i].script);
    fprintf(f, "; unset multiplot; unset output; reset session");
    fputc('\0', f);
  }
  const int bad = ferror(f);
  if (fclose(f) != 0 || bad || !at || !(*argv = enpu_calloc(2 * q->n + 2, sizeof **argv))) {
    free(at);
    free(*args);
    *args = NULL;
    return ENPU_ERR_NOMEM;
  }
  (*argv)[0] = (char *)q->program;
  for (size_t i = 0; i < q->n; i++) (*argv)[1 + 2 * i] = "-e", (*argv)[2 + 2 * i] = *args + at[i];
  free(at);
  return ENPU_OK;
}

/* Every queued PNG is there and not empty. */
static bool all_drawn(const report_plots *q) {
  char path[PATH_MAX];
  struct stat st;
  for (size_t i = 0; i < q->n; i++) {
    snprintf(path, sizeof path, "%s/%s", q->fig[i].absdir, q->fig[i].png);
    if (stat(path, &st) < 0 || st.st_size == 0) return false;
  }
  return true;
}

/* Close an appended gnuplot.log, checking every write. */
static int close_log(FILE *out, const char *path, int rc, enpu_err *err) {
  const int bad = ferror(out);
  if ((fclose(out) != 0 || bad) && rc == 0) rc = enpu_errorf(err, ENPU_ERR_IO, "writing %s failed", path);
  return rc;
}

/* The batch's output (log, after its last write) split at the marks: each figure's lines
 * appended to its directory's gnuplot.log (what came before the first mark: the first's). */
static int split_log(const report_plots *q, FILE *log, enpu_err *err) {
  char line[1024], path[PATH_MAX];
  size_t cur = 0;
  const char *dir = NULL; /* the directory whose gnuplot.log `out` is */
  FILE *out = NULL;
  int rc = ENPU_OK;
  rewind(log);
  while (rc == 0 && fgets(line, sizeof line, log)) {
    char *end = NULL;
    if (!strncmp(line, MARK " ", sizeof MARK)) {
      const unsigned long i = strtoul(line + sizeof MARK, &end, 10);
      if (*end == '\n' && i < q->n) {
        cur = i;
        continue;
      }
    }
    if (dir && !strcmp(dir, q->fig[cur].absdir)) {
      fputs(line, out);
      continue;
    }
    if (out) rc = close_log(out, path, rc, err);
    dir = q->fig[cur].absdir;
    snprintf(path, sizeof path, "%s/gnuplot.log", dir);
    const int fd = rc == 0 ? enpu_file_append(path, err) : -1;
    out = fd >= 0 ? fdopen(fd, "a") : NULL;
    if (out) fputs(line, out);
    else if (rc == 0) rc = fd < 0 ? fd : enpu_errorf(err, ENPU_ERR_NOMEM, "cannot write %s: out of memory", path);
    if (fd >= 0 && !out) close(fd);
  }
  return out ? close_log(out, path, rc, err) : rc;
}

/* Draw every figure in one gnuplot. @return 0 drawn (logs written); 1 the batch failed or
 * cannot run (too many arguments, no temporary file): draw them one by one; or an error
 * (gnuplot not found, no memory, a log that cannot be written). */
static int draw_batch(const report_plots *q, enpu_err *err) {
  char **argv = NULL, *args = NULL;
  ENPU_RETURN_IF(batch_argv(q, &argv, &args) < 0, err, ENPU_ERR_NOMEM, "out of memory (figure batch)");
  FILE *log = tmpfile(); /* already unlinked: nothing is left behind */
  int rc = log ? ENPU_OK : 1, status = 0;
  if (log) fcntl(fileno(log), F_SETFD, FD_CLOEXEC); /* gnuplot gets it as its stderr only */
  char path[PATH_MAX];
  for (size_t i = 0; rc == 0 && i < q->n; i++) { /* a PNG left from before proves nothing */
    snprintf(path, sizeof path, "%s/%s", q->fig[i].absdir, q->fig[i].png);
    remove(path);
  }
  enpu_err why = {0};
  if (rc == 0) rc = report_spawn_gnuplot(q->program, argv, fileno(log), &status, &why);
  if (rc == ENPU_ERR_RANGE) rc = 1; /* E2BIG: the arguments are too long for one gnuplot */
  else if (rc < 0 && err) *err = why;
  if (rc == 0 && (!WIFEXITED(status) || WEXITSTATUS(status) != 0 || !all_drawn(q))) rc = 1;
  if (rc == 0) rc = split_log(q, log, err);
  if (log) fclose(log);
  free(argv);
  free(args);
  return rc;
}

int report_plots_draw(report_plots *q, enpu_err *err) {
  int rc = q->n > 1 ? draw_batch(q, err) : 1;    /* a lone figure is its own batch */
  for (size_t i = 0; rc == 1 && i < q->n; i++) { /* one gnuplot each: which figure fails, and why */
    const int one = report_run_gnuplot(q->program, q->fig[i].absdir, q->fig[i].script, q->fig[i].png, err);
    if (one < 0) rc = one;
  }
  if (rc == 1) rc = ENPU_OK;
  for (size_t i = 0; i < q->n; i++) free(q->fig[i].absdir);
  q->n = 0;
  size_t moved = 0;
  while (rc == 0 && moved < q->nmove) {
    const plot_move *m = &q->move[moved];
    if (rename(m->from, m->to) < 0)
      rc = enpu_errorf(err, ENPU_ERR_IO, "cannot rename %s to %s: %s", m->from, m->to, strerror(errno));
    else free(q->move[moved++].from);
  }
  if (moved) memmove(q->move, q->move + moved, (q->nmove - moved) * sizeof *q->move);
  q->nmove -= moved;
  return rc;
}
