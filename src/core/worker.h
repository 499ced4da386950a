/*
 * A query process: work that a library may crash inside (Z3 out of
 * memory fails in ways no error handler catches) runs in a child process
 * forked from the caller, so that a crash ends that child, not the MPI
 * rank. The child inherits the caller's memory (the prover, the data) as
 * it was at the fork, answers fixed-size requests over a pipe, and never
 * calls MPI. A child that dies, or stops answering, is reported to the
 * caller, who turns the request into a result of its own ("unknown"); the
 * next request starts a fresh child from the caller's clean state.
 *
 * Each worker belongs to one thread of the caller. The caller's threads
 * must not run the crash-prone library themselves while workers fork, so
 * that no lock of it is held in a child.
 */
#ifndef TASO_WORKER_H
#define TASO_WORKER_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#include "check.h"

/* Answers req (req_size bytes) into reply (reply_size bytes) in the child.
 * Returns true when the child should end after this reply (its library's
 * state is no longer trusted: a memory limit was hit). */
typedef bool (*taso_worker_fn_t)(void *ctx, const void *req, void *reply);

typedef struct {
  taso_worker_fn_t fn;
  void *ctx;
  size_t req_size, reply_size;
  double timeout_s; /* the longest a reply may take; then the child is killed */
  pid_t pid;        /* 0: no child now (one starts with the next request) */
  int to, from;     /* the pipes to and from the child */
  int started;      /* children forked so far */
  int exit_status;  /* of the last child that ended: its status, or -1 when a signal
                       or the timeout ended it (a crash or a hang, not a choice) */
} taso_worker_t;

/* Sets up w; no child starts until the first request. */
void taso_worker_init(taso_worker_t *w, taso_worker_fn_t fn, void *ctx, size_t req_size,
                      size_t reply_size, double timeout_s);

/* Sends req to the child (starting one if there is none) and waits for
 * its reply. TASO_OK: reply is filled. TASO_ERR_LIB: the child was killed
 * by a signal (the library crashed) or did not answer within the timeout
 * (it is killed): the request's own answer, for the caller to record.
 * TASO_ERR_IO: the child exited with a status (a sanitizer's report, no
 * memory to start): a fault of the program, which should fail the run.
 * Either way why (len bytes) says how ("killed by signal 11 (Segmentation
 * fault)", "ended with status 1", "gave no answer in 160 s"), and the next
 * request starts a new child. Another code: no child could be started (no
 * process or pipe left), detail set. */
taso_err_t taso_worker_ask(taso_worker_t *w, const void *req, void *reply, char *why, size_t len);

/* Ends the child, if any, and waits for it. */
void taso_worker_stop(taso_worker_t *w);

/* Whether the calling process is a worker's child (whose fatal path must
 * _exit, never MPI_Abort). */
bool taso_worker_is_child(void);

#endif
