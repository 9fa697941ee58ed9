/* report_io.c — the report's files: an output directory made absolute, files opened
 * and closed with errors that name them, the gnuplot preamble every plot shares, and
 * gnuplot run as a child process (posix_spawnp, stdout and stderr to a log). One
 * figure's gnuplot (report_run_gnuplot) appends to its directory's gnuplot.log; a
 * missing program or a failing script is an error naming the script, and a PNG that
 * gnuplot did not write is an error too. A report's figures are normally drawn together
 * in one gnuplot (report_plots.c, which starts it here too); one gnuplot per figure is
 * how a failed batch finds the script that fails. Every report section writes through
 * these; nothing here calls back into a section. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <spawn.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "report_internal.h"

extern char **environ; /* passed to gnuplot unchanged (POSIX declares it nowhere) */

/* `dir` made absolute against the working directory (gnuplot runs elsewhere). */
int report_absolute_dir(const char *dir, char *out, size_t len, enpu_err *err) {
  char cwd[PATH_MAX];
  ENPU_RETURN_IF(dir[0] != '/' && !getcwd(cwd, sizeof cwd), err, ENPU_ERR_IO,
                 "cannot get the working directory: %s", strerror(errno));
  const int n = dir[0] == '/' ? snprintf(out, len, "%s", dir) : snprintf(out, len, "%s/%s", cwd, dir);
  ENPU_RETURN_IF(n < 0 || (size_t)n >= len, err, ENPU_ERR_RANGE, "output directory name too long: %s", dir);
  return ENPU_OK;
}

/* dir/name, or ENPU_ERR_RANGE. */
static int file_path(const char *dir, const char *name, char path[PATH_MAX], enpu_err *err) {
  ENPU_RETURN_IF(snprintf(path, PATH_MAX, "%s/%s", dir, name) >= PATH_MAX, err, ENPU_ERR_RANGE,
                 "path too long: %s/%s", dir, name);
  return ENPU_OK;
}

int report_file_open(const char *dir, const char *name, FILE **f, enpu_err *err) {
  char path[PATH_MAX];
  ENPU_FORWARD(file_path(dir, name, path, err));
  return enpu_file_create(path, f, err);
}

int report_file_close(FILE *f, const char *dir, const char *name, enpu_err *err) {
  char path[PATH_MAX];
  const int rc = file_path(dir, name, path, err);
  if (rc < 0) fclose(f);
  return rc < 0 ? rc : enpu_file_publish(f, path, 0, err);
}

void report_file_discard(FILE *f, const char *dir, const char *name) {
  char path[PATH_MAX];
  if (file_path(dir, name, path, NULL) == ENPU_OK) enpu_file_discard(f, path);
  else fclose(f);
}

/* The gnuplot preamble shared by every script: PNG terminal and output file. */
void report_gp_preamble(FILE *gp, const char *png, int height, const char *title) {
  fprintf(gp,
          "# Drawn by enpu; run from this directory: gnuplot %.*s.gp\n"
          "set terminal pngcairo size 960,%d noenhanced font 'sans,10'\n"
          "set output '%s'\n"
          "set datafile missing 'NaN'\n"
          "set grid\n"
          "set title '%s'\n",
          (int)(strlen(png) - 4), png, height, png, title);
}

/* ---- gnuplot -------------------------------------------------------------------- */

/* First line of gnuplot.log, for an error message. */
static void log_first_line(const char *log, off_t from, char *out, size_t len) {
  out[0] = '\0';
  FILE *f = fopen(log, "r");
  if (!f) return;
  if (fseeko(f, from, SEEK_SET) != 0) rewind(f);
  while (fgets(out, (int)len, f) && strspn(out, " \t\r\n") == strlen(out)) {
  }
  fclose(f);
  out[strcspn(out, "\r\n")] = '\0';
}

int report_spawn_gnuplot(const char *program, char *const argv[], int log_fd, int *status, enpu_err *err) {
  posix_spawn_file_actions_t fa;
  ENPU_RETURN_IF(posix_spawn_file_actions_init(&fa) != 0, err, ENPU_ERR_NOMEM, "cannot prepare gnuplot");
  int rc = posix_spawn_file_actions_addopen(&fa, STDIN_FILENO, "/dev/null", O_RDONLY, 0);
  if (rc == 0) rc = posix_spawn_file_actions_adddup2(&fa, log_fd, STDERR_FILENO);
  if (rc == 0) rc = posix_spawn_file_actions_adddup2(&fa, STDERR_FILENO, STDOUT_FILENO);
  pid_t pid = 0;
  if (rc == 0) rc = posix_spawnp(&pid, program, &fa, NULL, argv, environ);
  posix_spawn_file_actions_destroy(&fa);
  ENPU_RETURN_IF(rc == ENOENT, err, ENPU_ERR_NOT_FOUND,
                 "cannot run '%s': not found on PATH (the plots need gnuplot; Debian: apt-get install gnuplot-nox)",
                 program);
  ENPU_RETURN_IF(rc == E2BIG, err, ENPU_ERR_RANGE, "cannot run '%s': %s", program, strerror(rc));
  ENPU_RETURN_IF(rc != 0, err, ENPU_ERR_IO, "cannot run '%s': %s", program, strerror(rc));
  while (waitpid(pid, status, 0) < 0)
    ENPU_RETURN_IF(errno != EINTR, err, ENPU_ERR_IO, "waiting for gnuplot: %s", strerror(errno));
  return ENPU_OK;
}

int report_run_gnuplot(const char *program, const char *absdir, const char *script, const char *png,
                       enpu_err *err) {
  char cd[PATH_MAX + 16], log[PATH_MAX], gp[PATH_MAX], out[PATH_MAX];
  size_t k = (size_t)snprintf(cd, sizeof cd, "cd '");
  for (const char *s = absdir; *s && k + 4 < sizeof cd; s++) /* '' is a quote inside '...' */
    k += (size_t)snprintf(cd + k, sizeof cd - k, *s == '\'' ? "''" : "%c", *s);
  ENPU_RETURN_IF(k + 2 >= sizeof cd, err, ENPU_ERR_RANGE, "output directory name too long");
  snprintf(cd + k, sizeof cd - k, "'");
  snprintf(log, sizeof log, "%s/gnuplot.log", absdir);
  snprintf(gp, sizeof gp, "%s/%s", absdir, script);
  snprintf(out, sizeof out, "%s/%s", absdir, png);
  remove(out);

  /* opened here, not by the child: a log that cannot be written is named as such, where
   * the child's ENOENT would read as gnuplot missing */
  const int fd = enpu_file_append(log, err);
  if (fd < 0) return fd;
  /* the log keeps every earlier run's lines: an error quotes this run's first */
  const off_t before = lseek(fd, 0, SEEK_END);
  char *argv[] = {(char *)program, "-e", cd, gp, NULL};
  int status = 0;
  const int rc = report_spawn_gnuplot(program, argv, fd, &status, err);
  close(fd);
  ENPU_FORWARD(rc);
  char first[256];
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    log_first_line(log, before < 0 ? 0 : before, first, sizeof first);
    return enpu_errorf(err, ENPU_ERR_INTERNAL, "gnuplot failed on %s (status %d): %s (see %s)", gp,
                       WIFEXITED(status) ? WEXITSTATUS(status) : -1, first, log);
  }
  struct stat st;
  ENPU_RETURN_IF(stat(out, &st) < 0 || st.st_size == 0, err, ENPU_ERR_INTERNAL,
                 "gnuplot ran %s but wrote no %s (see %s)", gp, out, log);
  return ENPU_OK;
}

void report_overlay_context(const report_overlay *o, FILE *gp, const report_figure *f) {
  if (o && o->context) o->context(o->ctx, gp, f);
}

void report_overlay_slack(const report_overlay *o, FILE *gp, const report_figure *f, const char *dat) {
  if (o && o->slack) o->slack(o->ctx, gp, f, dat);
}

void report_overlay_marks(const report_overlay *o, FILE *gp, const report_figure *f, const char *dat,
                          report_mark kind, const double *xs) {
  if (o && o->marks) o->marks(o->ctx, gp, f, dat, kind, xs);
}
