/* cli_json.c — under --json every outcome is one JSON document on stdout, errors too:
 * `{"error": {"code": N, "message": "..."}}` with N the exit status (unchanged), the
 * message the one the command printed on stderr (where it still goes). A script parsing
 * stdout then never meets an empty stdout on a failure.
 *
 * The commands print their errors where they meet them (cli_fail, and farm's rank 0
 * through its print_error), so instead of threading a sink through every one of them,
 * cli_json_run runs the command with stdout in a temporary file and stderr through a
 * pipe that a thread copies on to the real stderr as it comes (a farm's progress lines
 * keep their pace) while keeping the last lines (a struct of the call's, not a global). After the command: its
 * stdout as it was, and when it failed without printing a document, the error document. A rank of a farm that
 * printed no error prints no document, so mpirun's stdout holds one. */
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli_internal.h"

enum { TAIL_BYTES = 8192 };

typedef struct {
  int from, to;              /* the pipe's read end; the real stderr */
  char tail[TAIL_BYTES + 1]; /* the last bytes that went through */
  size_t used;
  atomic_int stop; /* the command is done: drain and end */
} json_tee;

/* Write buf on to the real stderr and keep its end in the tail. */
static void tee_keep(json_tee *t, const char *buf, size_t n) {
  for (size_t off = 0; off < n;) {
    const ssize_t w = write(t->to, buf + off, n - off);
    if (w <= 0) break;
    off += (size_t)w;
  }
  const size_t k = n > TAIL_BYTES ? TAIL_BYTES : n;
  if (t->used + k > TAIL_BYTES) {
    const size_t drop = t->used + k - TAIL_BYTES;
    memmove(t->tail, t->tail + drop, t->used - drop);
    t->used -= drop;
  }
  memcpy(t->tail + t->used, buf + n - k, k);
  t->used += k;
}

/* Copies the pipe on until told to stop and the pipe is empty: not until its end, which a
 * child holding the write end (the MPI daemon a farm started alone spawns) would delay
 * forever. Everything the command wrote is in the pipe before `stop` is set. */
static void *tee_main(void *arg) {
  json_tee *t = arg;
  char buf[4096];
  for (;;) {
    const int stopping = atomic_load(&t->stop);
    struct pollfd p = {.fd = t->from, .events = POLLIN};
    const int r = poll(&p, 1, stopping ? 0 : 100);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) {
      if (stopping || r < 0) break;
      continue;
    }
    const ssize_t n = read(t->from, buf, sizeof buf);
    if (n <= 0) break;
    tee_keep(t, buf, (size_t)n);
  }
  t->tail[t->used] = '\0';
  return NULL;
}

/* The message of the last "enpu <cmd>: " line of text (without that prefix), else its
 * last non-empty line, into out. */
static void last_message(const char *text, const char *cmd, char *out, size_t len) {
  char prefix[64];
  snprintf(prefix, sizeof prefix, "enpu %s: ", cmd);
  const char *best = NULL, *last = NULL;
  for (const char *line = text; *line;) {
    const char *end = strchr(line, '\n');
    const size_t n = end ? (size_t)(end - line) : strlen(line);
    if (n > 0) last = line;
    if (!strncmp(line, prefix, strlen(prefix))) best = line + strlen(prefix);
    line += n + (end ? 1 : 0);
  }
  const char *m = best ? best : last ? last : "";
  snprintf(out, len, "%.*s", (int)strcspn(m, "\n"), m);
}

void cli_json_error(int status, const char *message) {
  json_t *doc = json_pack("{s:{s:i, s:s}}", "error", "code", status, "message", message ? message : "");
  if (doc) cli_print_json(doc);
  json_decref(doc);
  fflush(stdout);
}

/* Did the command print a JSON document (its first non-blank byte a '{')? */
static int printed_document(FILE *f) {
  int c;
  rewind(f);
  while ((c = fgetc(f)) != EOF && (c == ' ' || c == '\n' || c == '\t' || c == '\r')) continue;
  return c == '{';
}

/* Copy f (rewound) to stdout. */
static void copy_out(FILE *f) {
  char buf[4096];
  size_t n;
  rewind(f);
  while ((n = fread(buf, 1, sizeof buf, f)) > 0) fwrite(buf, 1, n, stdout);
  fflush(stdout);
}

int cli_json_run(const char *cmd, int (*run)(void *), void *args) {
  fflush(stdout), fflush(stderr);
  FILE *out = tmpfile();
  int fds[2] = {-1, -1};
  json_tee tee = {.to = dup(STDERR_FILENO)};
  const int saved_out = dup(STDOUT_FILENO);
  pthread_t thread;
  if (!out || saved_out < 0 || tee.to < 0 || pipe(fds) < 0) { /* run it plainly */
    if (out) fclose(out);
    if (saved_out >= 0) close(saved_out);
    if (tee.to >= 0) close(tee.to);
    return run(args);
  }
  tee.from = fds[0];
  /* The thread takes no signal: a farm's SIGTERM/SIGUSR1 must reach the thread that runs
   * the command (and interrupt its waits), as without --json. */
  sigset_t all, old;
  sigfillset(&all);
  pthread_sigmask(SIG_SETMASK, &all, &old);
  const int teeing = pthread_create(&thread, NULL, tee_main, &tee) == 0;
  pthread_sigmask(SIG_SETMASK, &old, NULL);
  dup2(fileno(out), STDOUT_FILENO);
  if (teeing) dup2(fds[1], STDERR_FILENO);
  close(fds[1]);
  const int status = run(args);
  fflush(stdout), fflush(stderr);
  dup2(saved_out, STDOUT_FILENO), close(saved_out);
  dup2(tee.to, STDERR_FILENO);
  atomic_store(&tee.stop, 1);
  if (teeing) pthread_join(thread, NULL);
  close(fds[0]), close(tee.to);
  copy_out(out);
  if (status != 0 && !printed_document(out)) {
    char msg[ENPU_ERR_MSG_LEN + 64];
    last_message(tee.tail, cmd, msg, sizeof msg);
    if (msg[0]) cli_json_error(status, msg);
  }
  fclose(out);
  return status;
}
