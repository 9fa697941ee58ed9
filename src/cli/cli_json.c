/* cli_json.c — under --json every outcome is one JSON document on stdout, errors too:
 * `{"error": {"code": N, "message": "..."}}` with N the exit status (unchanged), the
 * message the one the command printed on stderr (where it still goes). A script parsing
 * stdout then never meets an empty stdout on a failure.
 *
 * The commands print their errors where they meet them (cli_fail, and farm's rank 0
 * through its print_error), so instead of threading a sink through every one of them,
 * cli_json_run runs the command with its stdout and stderr through two pipes that a
 * thread copies on to the real ones as the bytes come (a farm's progress keeps its pace,
 * and its document leaves the rank before MPI_Finalize, as without --json: mpirun may drop
 * what a rank writes after a non-zero exit of another), noting whether stdout began with a
 * '{' and keeping stderr's last lines (a struct of the call's, not a global). After the
 * command, when it failed without printing a document, the error document follows. A
 * rank of a farm that printed no error prints no document, so mpirun's stdout holds one. */
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

/* One stream of the command: the pipe's read end and where its bytes go on. */
typedef struct {
  int from, to;
  int first; /* its first non-blank byte, -1 until one came */
} json_channel;

typedef struct {
  json_channel ch[2];        /* stdout, stderr */
  char tail[TAIL_BYTES + 1]; /* stderr's last bytes */
  size_t used;
  atomic_int stop; /* the command is done: drain and end */
} json_tee;

static void tee_write(int fd, const char *buf, size_t n) {
  for (size_t off = 0; off < n;) {
    const ssize_t w = write(fd, buf + off, n - off);
    if (w <= 0) return;
    off += (size_t)w;
  }
}

/* Pass buf on, note stdout's first non-blank byte, keep stderr's end in the tail. */
static void tee_keep(json_tee *t, int c, const char *buf, size_t n) {
  json_channel *ch = &t->ch[c];
  tee_write(ch->to, buf, n);
  for (size_t i = 0; i < n && ch->first < 0; i++)
    if (!strchr(" \t\r\n", buf[i])) ch->first = (unsigned char)buf[i];
  if (c == 0) return;
  const size_t k = n > TAIL_BYTES ? TAIL_BYTES : n;
  if (t->used + k > TAIL_BYTES) {
    const size_t drop = t->used + k - TAIL_BYTES;
    memmove(t->tail, t->tail + drop, t->used - drop);
    t->used -= drop;
  }
  memcpy(t->tail + t->used, buf + n - k, k);
  t->used += k;
}

/* Copies the pipes on until told to stop and they are empty: not until their end, which
 * a child holding a write end (the MPI daemon a farm started alone spawns) would delay
 * forever. Everything the command wrote is in the pipes before `stop` is set. */
static void *tee_main(void *arg) {
  json_tee *t = arg;
  char buf[4096];
  bool open[2] = {true, true};
  while (open[0] || open[1]) {
    const int stopping = atomic_load(&t->stop);
    struct pollfd p[2] = {{.fd = open[0] ? t->ch[0].from : -1, .events = POLLIN},
                          {.fd = open[1] ? t->ch[1].from : -1, .events = POLLIN}};
    const int r = poll(p, 2, stopping ? 0 : 100);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) {
      if (stopping || r < 0) break;
      continue;
    }
    for (int c = 0; c < 2; c++) {
      if (!open[c] || !(p[c].revents & (POLLIN | POLLHUP | POLLERR))) continue;
      const ssize_t n = read(t->ch[c].from, buf, sizeof buf);
      if (n <= 0) open[c] = false;
      else tee_keep(t, c, buf, (size_t)n);
    }
  }
  t->tail[t->used] = '\0';
  return NULL;
}

/* The message of the last line of text that is a command's error, "enpu <command>: ..."
 * (cli_fail's form), without that prefix; "" when there is none (a farm's worker rank,
 * which prints no error, prints no error document either). */
static void last_message(const char *text, const char *cmd, char *out, size_t len) {
  char prefix[64];
  snprintf(prefix, sizeof prefix, "enpu %.*s", (int)strcspn(cmd, " "), cmd); /* "store diff": "enpu store" */
  const char *best = "";
  for (const char *line = text; *line;) {
    const char *end = strchr(line, '\n');
    const size_t n = end ? (size_t)(end - line) : strlen(line);
    const char *colon = memchr(line, ':', n);
    if (!strncmp(line, prefix, strlen(prefix)) && colon && colon + 1 < line + n && colon[1] == ' ')
      best = colon + 2;
    line += n + (end ? 1 : 0);
  }
  snprintf(out, len, "%.*s", (int)strcspn(best, "\n"), best);
}

void cli_json_error(int status, const char *message) {
  json_t *doc = json_pack("{s:{s:i, s:s}}", "error", "code", status, "message", message ? message : "");
  if (doc) cli_print_json(doc);
  json_decref(doc);
  fflush(stdout);
}

/* Both streams into pipes read by a thread that takes no signal (a farm's SIGTERM or
 * SIGUSR1 must reach the thread that runs the command and interrupt its waits, as without
 * --json). @return 0, or -1 with nothing changed. */
static int tee_start(json_tee *t, pthread_t *thread, int saved[2], int wr[2]) {
  int fds[2][2] = {{-1, -1}, {-1, -1}};
  bool ok = true;
  for (int c = 0; c < 2; c++) {
    saved[c] = dup(c + 1);
    ok = ok && saved[c] >= 0 && pipe(fds[c]) == 0;
    t->ch[c] = (json_channel){.from = fds[c][0], .to = saved[c], .first = -1};
    wr[c] = fds[c][1];
  }
  sigset_t all, old;
  sigfillset(&all);
  pthread_sigmask(SIG_SETMASK, &all, &old);
  ok = ok && pthread_create(thread, NULL, tee_main, t) == 0;
  pthread_sigmask(SIG_SETMASK, &old, NULL);
  if (ok) return 0;
  for (int c = 0; c < 2; c++) {
    if (saved[c] >= 0) close(saved[c]);
    if (fds[c][0] >= 0) close(fds[c][0]), close(fds[c][1]);
  }
  return -1;
}

int cli_json_run(const char *cmd, int (*run)(void *), void *args) {
  fflush(stdout), fflush(stderr);
  json_tee tee = {.used = 0};
  pthread_t thread;
  int saved[2], wr[2];
  if (tee_start(&tee, &thread, saved, wr) < 0) return run(args); /* run it plainly */
  for (int c = 0; c < 2; c++) dup2(wr[c], c + 1), close(wr[c]);
  const int status = run(args);
  fflush(stdout), fflush(stderr);
  for (int c = 0; c < 2; c++) dup2(saved[c], c + 1);
  atomic_store(&tee.stop, 1);
  pthread_join(thread, NULL);
  for (int c = 0; c < 2; c++) close(tee.ch[c].from), close(saved[c]);
  if (status != 0 && tee.ch[0].first != '{') {
    char msg[ENPU_ERR_MSG_LEN + 64];
    last_message(tee.tail, cmd, msg, sizeof msg);
    if (msg[0]) cli_json_error(status, msg);
  }
  return status;
}
