/*
 * Candidate rows decided in contained query processes: one prover and one
 * query process (core/worker.h) per OpenMP thread, so that a query that
 * crashes Z3 (out of memory, or worse) or hangs costs its row alone, which
 * comes back unknown, saying why, and the run goes on. taso-verify hands
 * each rank's chunks of rows to taso_decider_run.
 */
#ifndef TASO_DECIDE_H
#define TASO_DECIDE_H

#include <stdint.h>

#include "artifact.h"
#include "verifier.h"

typedef struct taso_decider taso_decider_t;

/* What the rows are decided from; referenced, not copied: it must outlive
 * the decider. A row's query seed is seed and the row alone, so a verdict
 * does not depend on who decides it. */
typedef struct {
  const taso_axioms_t *ax;
  const taso_limits_t *lim; /* every query's limits */
  const taso_inputs_t *inputs;
  const taso_graph_t *graphs;
  int64_t ngraphs;
  const taso_subst_t *rows;
  uint64_t seed;
} taso_decide_set_t;

/* One prover per thread of omp_get_max_threads(), then one query process
 * each (started at the first row). */
taso_err_t taso_decider_open(const taso_decide_set_t *set, taso_decider_t **d);
/* Decides rows[0, n) into dec[0, n) with the threads. Test hook:
 * TASO_VERIFY_CRASH_ROW=N crashes the process deciding row N. */
taso_err_t taso_decider_run(taso_decider_t *d, const int64_t *rows, int64_t n,
                            taso_decision_t *dec);
/* Stops the processes; *restarts (may be NULL): how many were started
 * again after one died, hung or ran out of memory. */
void taso_decider_close(taso_decider_t *d, int *restarts);

#endif
