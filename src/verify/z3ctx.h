/*
 * Z3 contexts for the verifier and the validator: one per thread, a timeout
 * on every query, and an error handler that records the error instead of
 * calling exit() (Z3's default, which would kill an MPI rank).
 */
#ifndef TASO_Z3CTX_H
#define TASO_Z3CTX_H

#include <stdbool.h>

#include <z3.h>

#include "check.h"

/* A new context whose queries time out after timeout_ms (0: no timeout). */
taso_err_t taso_z3_open(unsigned timeout_ms, Z3_context *out);
void taso_z3_close(Z3_context ctx);

/* Whether a Z3 error happened on this thread since the last call; clears it
 * and copies its message into buf. */
bool taso_z3_take_error(char *buf, int len);

#endif
