/*
 * Keeping ranks in step on errors: after a step that can fail on some ranks
 * only, every rank calls taso_agree so that all of them return the same code
 * and message (those of the lowest failing rank), and none waits forever in
 * the next collective call.
 */
#ifndef TASO_COLLECTIVE_H
#define TASO_COLLECTIVE_H

#include <mpi.h>

#include "check.h"

/* Collective over comm. TASO_OK only if err is TASO_OK on every rank; else
 * the lowest failing rank's code, with its detail ("rank N: ..." elsewhere
 * than rank 0) set on every rank. */
taso_err_t taso_agree(MPI_Comm comm, taso_err_t err);

#endif
