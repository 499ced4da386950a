/*
 * Dynamic work over MPI ranks: a shared counter, and rounds of work
 * written as they end (the resumable stages: taso-verify, taso-validate).
 */
#ifndef TASO_ROUNDS_H
#define TASO_ROUNDS_H

#include <mpi.h>
#include <stdint.h>

#include "check.h"

/* Dynamic work: a counter on rank 0 that ranks advance by a chunk at a
 * time (MPI_Fetch_and_op). Open and close are collective. */
typedef struct {
  MPI_Win win;
  int64_t *value;
} taso_counter_t;

void taso_counter_open(MPI_Comm comm, taso_counter_t *c);
/* The counter before adding n: the start of this rank's next chunk. */
int64_t taso_counter_take(taso_counter_t *c, int64_t n);
void taso_counter_close(taso_counter_t *c);

/* Work on [0, total) handed out dynamically and written in rounds, for
 * stages whose results stream into their output so that a killed run
 * resumes (taso-verify, taso-validate). Ranks take chunks from a
 * taso_counter_t and call take on each; after round_seconds
 * of work (or the environment variable round_env's value), and when every
 * rank has run out of work, they meet and call flush, which appends the
 * round's results (collective). An error from take stops the taking: the
 * round ends and every rank stops with it. Test hook: stop_env=N kills the
 * run (SIGKILL, as a crash would) once N results of this run are written. */
typedef struct {
  void *ctx;
  /* Works on items [start, end); *results: how many results it kept. */
  taso_err_t (*take)(void *ctx, int64_t start, int64_t end, int64_t *results);
  /* Collective: writes this rank's results of the round and forgets them. */
  taso_err_t (*flush)(void *ctx);
  int64_t total, chunk;
  double round_seconds;
  const char *round_env, *stop_env;
  const char *what;       /* the progress line's: "candidate rows" */
  int64_t progress_total; /* results expected in the file at the end */
  int64_t already;        /* results already in the file */
} taso_rounds_t;

/* Collective over comm; name prefixes the progress lines (the tool's). */
taso_err_t taso_rounds_run(MPI_Comm comm, const char *name, const taso_rounds_t *r);

#endif
