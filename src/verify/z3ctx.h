/*
 * Z3 contexts for the verifier and the validator: one per thread, limits on
 * every query, and an error handler that records the error instead of
 * calling exit() (Z3's default, which would kill an MPI rank).
 *
 * A query has three limits (taso_limits_t). The resource limit (rlimit,
 * Z3's count of its own basic steps) is the budget: it ends a query at the
 * same point on any machine and under any load, so verdicts bounded by it
 * are reproducible. The wall-clock timeout is a safety net for the steps
 * the resource count misses. The memory cap (Z3's memory_max_size, one per
 * process) bounds what a query that grows terms without end can take.
 */
#ifndef TASO_Z3CTX_H
#define TASO_Z3CTX_H

#include <stdbool.h>

#include <z3.h>

#include "check.h"

typedef struct {
  double timeout_s;   /* wall clock per query, seconds; 0: none */
  unsigned rlimit;    /* Z3 resource units per query; 0: none */
  unsigned memory_mb; /* Z3's memory per process, MiB; 0: unbounded */
} taso_limits_t;

/* A new context whose queries time out after timeout_ms (0: no timeout). */
taso_err_t taso_z3_open(unsigned timeout_ms, Z3_context *out);
void taso_z3_close(Z3_context ctx);

/* Whether a Z3 error happened on this thread since the last call; clears it
 * and copies its message into buf. */
bool taso_z3_take_error(char *buf, int len);

/* Like taso_z3_take_error, but only for an out-of-memory error (the
 * memory cap ended a query): the caller turns it into a verdict. */
bool taso_z3_peek_memout(char *buf, int len);

/* The timeout of lim in milliseconds, clamped to what Z3 takes (>= 1). */
unsigned taso_limits_timeout_ms(const taso_limits_t *lim);

/* Puts lim's timeout and rlimit into a solver's parameters; sets the
 * process's memory cap (memory_max_size) the first time one is given. */
void taso_limits_apply(Z3_context c, Z3_params params, const taso_limits_t *lim);

/* A solver of Z3's plain SMT kernel (no preprocessing tactics, which
 * ignore patterns and can overrun the timeout) under lim, with
 * model-based quantifier instantiation (smt.mbqi, Z3's default: on) as
 * given; the caller holds its one reference. NULL when Z3 ran out of
 * memory making it (taso_limits_check takes a NULL). */
Z3_solver taso_limited_solver(Z3_context c, const taso_limits_t *lim, bool mbqi);

/* Z3's memory cap for the whole process, MiB (0: leave it). */
void taso_z3_memory_cap(unsigned mb);

/* Names the limit that ended a query from Z3's reason_unknown and the
 * seconds it ran: "resource limit (rlimit)", "timeout", "memory limit",
 * or the reason itself. */
const char *taso_limits_reason(const char *reason_unknown, double seconds,
                               const taso_limits_t *lim);

/* Z3_solver_check under lim: on undef, why names the limit that ended
 * it; an out-of-memory error (the cap) is taken and becomes undef.
 * The cap is the process's: while one thread's query holds it, any Z3
 * call of another thread may fail and return NULL. s may be such a NULL
 * (a solver that could not be made): undef, "memory limit". */
Z3_lbool taso_limits_check(Z3_context c, Z3_solver s, const taso_limits_t *lim, char *why, int len);

#endif
