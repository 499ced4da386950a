#define _GNU_SOURCE
#include "worker.h"

#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static bool in_child;

bool taso_worker_is_child(void) {
  return in_child;
}

void taso_worker_init(taso_worker_t *w, taso_worker_fn_t fn, void *ctx, size_t req_size,
                      size_t reply_size, double timeout_s) {
  memset(w, 0, sizeof *w);
  w->fn = fn;
  w->ctx = ctx;
  w->req_size = req_size;
  w->reply_size = reply_size;
  w->timeout_s = timeout_s;
  w->to = w->from = -1;
}

/* Whole transfers over the socket; false on its end or an error. */
static bool send_all(int fd, const void *buf, size_t n) {
  const char *p = buf;
  while (n > 0) {
    ssize_t k = send(fd, p, n, MSG_NOSIGNAL); /* a dead peer is an error, not SIGPIPE */
    if (k < 0 && errno == EINTR) continue;
    if (k <= 0) return false;
    p += k;
    n -= (size_t)k;
  }
  return true;
}

static bool recv_all(int fd, void *buf, size_t n) {
  char *p = buf;
  while (n > 0) {
    ssize_t k = read(fd, p, n);
    if (k < 0 && errno == EINTR) continue;
    if (k <= 0) return false;
    p += k;
    n -= (size_t)k;
  }
  return true;
}

static void child_fatal(void) {
  _exit(70);
}

/* The child: answers requests until the socket closes or fn retires it.
 * It never returns, and leaves through _exit, so that no handler of the
 * parent's (MPI_Finalize at exit) runs in it. */
static void child_loop(taso_worker_t *w, int sock) {
  in_child = true;
  taso_set_fatal_hook(child_fatal);
  /* A crash is a plain death the parent reports, not the MPI library's
   * backtrace. */
  static const int sigs[] = {SIGSEGV, SIGBUS, SIGABRT, SIGFPE, SIGILL, SIGTERM, SIGINT};
  for (size_t i = 0; i < sizeof sigs / sizeof *sigs; i++)
    signal(sigs[i], SIG_DFL);
  /* Only its own socket stays open: a copy of another worker's socket, or
   * of the parent's files, would keep them open after the parent died. */
  if (sock != 3 && dup2(sock, 3) < 0) _exit(71);
  if (close_range(4, ~0U, 0) != 0)
    for (int fd = 4; fd < 65536; fd++)
      close(fd);
  /* malloc's alignment for both, whatever the caller's structs need */
  void *req = malloc(w->req_size + 1), *reply = malloc(w->reply_size + 1);
  if (!req || !reply) _exit(72);
  for (;;) {
    if (!recv_all(3, req, w->req_size)) _exit(0); /* the parent is done, or gone */
    char retire = (char)w->fn(w->ctx, req, reply);
    if (!send_all(3, &retire, 1) || !send_all(3, reply, w->reply_size)) _exit(0);
    if (retire) _exit(0);
  }
}

static taso_err_t start(taso_worker_t *w) {
  int sv[2];
  if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) != 0)
    return taso_error(TASO_ERR_IO, "cannot make a socket for a query process: %s", strerror(errno));
  pid_t pid = fork();
  if (pid < 0) {
    int e = errno;
    close(sv[0]);
    close(sv[1]);
    return taso_error(TASO_ERR_NOMEM, "cannot start a query process: %s", strerror(e));
  }
  if (pid == 0) {
    close(sv[0]);
    child_loop(w, sv[1]);
  }
  close(sv[1]);
  w->pid = pid;
  w->to = w->from = sv[0];
  w->started++;
  return TASO_OK;
}

/* Waits for the child, closes the socket and says how it ended. */
static void reap(taso_worker_t *w, bool kill_it, char *why, size_t len) {
  int status = 0;
  if (kill_it) kill(w->pid, SIGKILL);
  close(w->to); /* a child still reading sees the end of its requests */
  while (waitpid(w->pid, &status, 0) < 0 && errno == EINTR) {
  }
  w->exit_status = !kill_it && WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  if (why && !kill_it) {
    if (WIFSIGNALED(status))
      snprintf(why, len, "its query process was killed by signal %d (%s)", WTERMSIG(status),
               strsignal(WTERMSIG(status)));
    else
      snprintf(why, len, "its query process ended with status %d", WEXITSTATUS(status));
  }
  w->pid = 0;
  w->to = w->from = -1;
}

/* The child ended by itself: reaped, and the error that says how. A signal
 * is the library's crash (TASO_ERR_LIB); an exit status is a fault of
 * the caller's program, not of the library (TASO_ERR_IO). */
static taso_err_t died(taso_worker_t *w, char *why, size_t len) {
  reap(w, false, why, len);
  return taso_error(w->exit_status >= 0 ? TASO_ERR_IO : TASO_ERR_LIB, "%s", why);
}

static double now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

taso_err_t taso_worker_ask(taso_worker_t *w, const void *req, void *reply, char *why, size_t len) {
  if (!w->pid) TASO_TRY(start(w));
  if (!send_all(w->to, req, w->req_size)) {
    return died(w, why, len);
  }
  /* The flag byte (the child retires), then the reply. */
  char flag = 0;
  char *p = &flag;
  size_t got = 0, want = 1;
  double deadline = now() + w->timeout_s;
  while (got < want) {
    double left = deadline - now();
    int ready = 0;
    if (left > 0) {
      struct pollfd pfd = {.fd = w->from, .events = POLLIN};
      ready = poll(&pfd, 1, (int)(left * 1000) + 1);
      if (ready < 0 && errno == EINTR) continue;
    }
    if (ready == 0 && deadline - now() <= 0) {
      reap(w, true, NULL, 0);
      snprintf(why, len, "its query process gave no answer in %.0f s and was killed", w->timeout_s);
      return taso_error(TASO_ERR_LIB, "%s", why);
    }
    if (ready < 0) break;
    if (ready == 0) continue;
    ssize_t k = read(w->from, p + got, want - got);
    if (k < 0 && errno == EINTR) continue;
    if (k <= 0) break;
    got += (size_t)k;
    if (got == want && p == &flag) {
      p = reply;
      got = 0;
      want = w->reply_size;
    }
  }
  if (got < want || p == &flag) {
    return died(w, why, len);
  }
  if (flag) reap(w, false, NULL, 0); /* it retired after this answer */
  return TASO_OK;
}

void taso_worker_stop(taso_worker_t *w) {
  if (w->pid) reap(w, false, NULL, 0); /* closing is its signal to end */
}
