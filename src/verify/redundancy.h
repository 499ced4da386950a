/*
 * The axioms' redundancy check (semantics.md section 5), the half of
 * taso-validate that asks Z3 about the axiom set as a whole: for every
 * enabled axiom, whether the others entail it (taso_axioms_entailed), and
 * for every family of axioms, whether it makes all tensors equal
 * (taso_axioms_collapse). Queries are handed out over an MPI communicator
 * and each rank's OpenMP threads; each runs in a query process of its own
 * (core/worker.h), so that one that crashes Z3 (out of memory) or hangs
 * comes back undecided, saying why, and the run goes on.
 *
 * Test hooks: TASO_VALIDATE_CRASH_TASK=N crashes the process deciding task
 * N (families first, then goals); TASO_VALIDATE_STOP_IN_REDUNDANCY kills
 * the rank after its first round of queries.
 */
#ifndef TASO_REDUNDANCY_H
#define TASO_REDUNDANCY_H

#include <stddef.h>
#include <stdint.h>

#include <mpi.h>

#include "verifier.h"

/* One verdict: an axiom's entailment query, or a family's collapse query
 * (goal -1 - family, name "(all)" or the family's function). A table row
 * of taso-validate's artifact: no padding. */
typedef struct {
  double seconds;  /* wall time of the query and its minimization */
  int32_t verdict; /* 1 entailed (collapses), 0 undecided, -1 independent (a model) */
  int32_t goal;    /* index of the axiom in the loaded set */
  char name[TASO_AXIOM_NAME_LEN]; /* the axiom */
  char core[208];                 /* a minimal entailing set: "A4 A7 A41" */
  char why[128];                  /* why undecided, naming the limit */
  char model[128];                /* independent: the countermodel, in short */
} taso_red_t;

/* Collective over comm. The axioms asked are the enabled ones (kind
 * axiom) named in only (comma-separated; NULL: all). Every rank gets
 * *rows, one per axiom asked, in load order, and *fams, one per family;
 * *collapse, the smallest collapsing core ("" if none), which also
 * entails every axiom outside it (such rows say so). Free both. */
taso_err_t taso_redundancy(MPI_Comm comm, const taso_axioms_t *ax, const taso_limits_t *lim,
                           const char *only, taso_red_t **rows, int *nrows, taso_red_t **fams,
                           int *nfams, char *collapse, size_t clen);

#endif
