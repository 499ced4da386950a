/*
 * The level checkpoints of level-by-level generation ([generate] method =
 * representatives): after each level below the last, every rank writes its
 * state (the tensor memo, the class tables, the counters so far) to
 * DIR/level-K.rank-R, and rank 0 then marks the level complete with
 * DIR/level-K.done, which names the job (a digest of its text), the rank
 * count and the format. A killed run resumes from the last complete level
 * on the same rank count; the result is the same file as an uninterrupted
 * run's. Only the last complete level is kept.
 *
 * The files are this process's own binary layout (one machine's byte
 * order), written as .tmp and renamed when complete; a header and a
 * trailer catch a file of another job, rank or level and one cut short.
 */
#ifndef TASO_CHECKPOINT_H
#define TASO_CHECKPOINT_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "check.h"

/* Raise when what a level file holds changes, so that no run resumes
 * from files of an older layout or an older enumeration. 2: split trees
 * past 7 concats are digests (a level-4 memo's types and fingerprints of
 * version 1 had them dropped). */
#define TASO_CHECKPOINT_VERSION 2

typedef struct {
  const char *dir; /* the folder; NULL: no checkpoints */
  uint64_t job;    /* digest of the job file's text */
  int rank, size;
} taso_checkpoint_t;

/* Rank 0: the last level in k->dir that every rank completed, 0 when
 * none (or no folder). A folder of another job, rank count or version is
 * refused (TASO_ERR_ARG, saying what it holds and what to do). */
taso_err_t taso_checkpoint_last(const taso_checkpoint_t *k, int max_level, int *level);

/* This rank's file of `level`: created (as .tmp, the folder made if
 * needed) and its header written; taso_checkpoint_close ends it. */
taso_err_t taso_checkpoint_create(const taso_checkpoint_t *k, int level, FILE **f);
/* Opened, its header checked. */
taso_err_t taso_checkpoint_open(const taso_checkpoint_t *k, int level, FILE **f);
/* Ends a file created or opened at `level`: a written one gets its trailer,
 * is flushed to disk and renamed into place (removed when err is not
 * TASO_OK); a read one has its trailer checked. Returns err, or its own. */
taso_err_t taso_checkpoint_close(const taso_checkpoint_t *k, int level, FILE *f, bool written,
                                 taso_err_t err);

/* Rank 0, once every rank's file of `level` is in place: the level's mark,
 * then the files of the levels before it removed. */
taso_err_t taso_checkpoint_done(const taso_checkpoint_t *k, int level);

/* Rank 0: every checkpoint file in dir (level-*) removed, then the folder
 * when that left it empty. */
void taso_checkpoint_remove(const char *dir);

/* Reading and writing arrays: false on a short read or write. */
bool taso_checkpoint_put(FILE *f, const void *p, size_t size, size_t n);
bool taso_checkpoint_get(FILE *f, void *p, size_t size, size_t n);

#endif
