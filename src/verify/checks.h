/*
 * The symbolic checks of taso-validate over ranks: every combination of an
 * axiom plan (validate.h) decided by the ranks' threads in resumable
 * rounds (rounds.h), each round's rows appended to the /stream slots of
 * OUT.resume, then copied in index order into /checks of the result, with
 * a row of counts per axiom (/axioms).
 */
#ifndef TASO_CHECKS_H
#define TASO_CHECKS_H

#include <stdint.h>

#include <mpi.h>

#include "artifact.h"
#include "validate.h"

#define TASO_CHECKS_SHOWN 20 /* counterexamples and unknowns gathered to print, per rank */

/* /stream (OUT.resume: a slot per combination) and /checks (the result),
 * rows of taso_check_t. */
extern const taso_table_t taso_check_stream_table, taso_check_table;

/* Per-axiom counts, /axioms. */
typedef struct {
  char name[TASO_AXIOM_NAME_LEN];
  int64_t combinations, proved, counterexamples, skipped, unknown, trees_differ, by_poly, by_z3;
  double seconds; /* time spent on its combinations, summed */
} taso_tally_t;
extern const taso_table_t taso_tally_table;

/* Collective. Decides every combination of [0, total) not marked done
 * with this rank's checkers (one per thread), appending rounds of rows to
 * out's /stream (taso_rounds_run; name for its progress lines). Adds this
 * rank's rows and thread CPU seconds to *mine_rows and *mine_cpu; *last_end
 * is when its last check ended. Test hooks: TASO_VALIDATE_ROUND_SECONDS,
 * TASO_VALIDATE_STOP_AFTER. */
taso_err_t taso_checks_run(MPI_Comm comm, const char *name, taso_checker_t **checkers,
                           int64_t total, const unsigned char *done, int64_t already,
                           taso_artifact_t *out, int64_t *mine_rows, double *mine_cpu,
                           double *last_end);

/* Collective. Marks in done[] (total entries, on every rank) each index
 * whose /stream slot of out holds a row of plan p; this rank reads the
 * block [lo, hi). *ndone: how many. */
taso_err_t taso_checks_read_done(MPI_Comm comm, taso_artifact_t *out, const taso_plan_t *p,
                                 int64_t lo, int64_t hi, unsigned char *done, int64_t total,
                                 int64_t *ndone);

/* Collective. /stream of out (at path, named in errors) to /checks of dst,
 * this rank copying the block [lo, hi); every combination must have its
 * row. tally (one per axiom of p) gets the counts on every rank; rank 0
 * gets in *shown (malloc'd) the first TASO_CHECKS_SHOWN counterexamples
 * and unknowns of each rank, in index order. */
taso_err_t taso_checks_finish(MPI_Comm comm, const char *path, taso_artifact_t *out,
                              taso_artifact_t *dst, const taso_plan_t *p, int64_t lo, int64_t hi,
                              taso_tally_t *tally, taso_check_t **shown, int *nshown);

#endif
