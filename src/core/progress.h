/*
 * A progress line for long work, on rank 0's stderr, at most every
 * TASO_PROGRESS_INTERVAL seconds: done/total, rate and time left; past an
 * estimated total, the count and "more than the N expected". Libraries
 * that run for long (the generator's driver) print through it as the
 * tools do.
 */
#ifndef TASO_PROGRESS_H
#define TASO_PROGRESS_H

#include <stdint.h>

#define TASO_PROGRESS_INTERVAL 2.0

typedef struct {
  const char *name; /* the line's prefix: the tool's name */
  int rank;         /* only rank 0 prints */
  const char *what; /* what is counted, plural: "candidate rows" */
  int64_t total;    /* expected count; <= 0 when not known */
  double start;     /* MPI_Wtime() when counting began */
  double last;      /* MPI_Wtime() of the last line printed */
  double interval;  /* seconds between lines (TASO_PROGRESS_SECONDS, a test hook) */
} taso_progress_t;

void taso_progress_start(taso_progress_t *p, const char *name, int rank, const char *what,
                         int64_t total);
/* Cheap enough to call per item: it only reads the clock until a line is due. */
void taso_progress_update(taso_progress_t *p, int64_t done);

#endif
