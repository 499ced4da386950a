/*
 * The rule guard (rule_guard.h) as the tools that apply or re-derive
 * substitutions open it: taso-optimize applies rules through it, and
 * taso-generate and taso-derive judge derivations with it (the derivation
 * hook below, derive.h), so that a pair pruned because kept rules
 * re-derive it is one the optimizer can re-derive.
 *
 * Limits are the job's [verify] timeout, rlimit and memory_mb (the tools
 * pass them; without a job: 5 s, the default rlimit and memory). Verdicts
 * then do not depend on the rank count or the load where the rlimit ends a
 * proof before the timeout does: the workstation job's proofs end far
 * below either.
 */
#ifndef TASO_VERIFY_GUARD_OPEN_H
#define TASO_VERIFY_GUARD_OPEN_H

#include <stddef.h>

#include "derive.h"
#include "rule_guard.h"

/* Loads the axioms at path, proves their lemmas within lim (those not
 * proved are left out of re-proofs and listed in unproved, "" when all
 * are) and opens a guard over the input table in. Free with
 * taso_guard_close. */
taso_err_t taso_guard_open(const char *path, const taso_inputs_t *in, const taso_limits_t *lim,
                           char *unproved, size_t len, taso_axioms_t **ax,
                           taso_rule_guard_t **guard);

/* The guard and its axioms (either may be NULL). */
void taso_guard_close(taso_axioms_t *ax, taso_rule_guard_t *guard);

/* Sets o's derivation hooks (rewrite, rewrite_ctx, optimistic) to the
 * guard's: every derivation step is a rewrite the guard accepts. */
void taso_guard_derive_hooks(taso_rule_guard_t *guard, taso_derive_opts_t *o);

#endif
