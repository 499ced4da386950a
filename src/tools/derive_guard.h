/*
 * The optimizer's rule guard (src/verify/rule_guard.h) opened from a job,
 * for the tools that apply or re-derive substitutions: taso-optimize
 * applies rules through it, and taso-generate and taso-derive judge
 * derivations with it (derive.h), so that a pair pruned because kept rules
 * re-derive it is one the optimizer can re-derive.
 *
 * Limits are the job's [verify] timeout, rlimit and memory_mb (without a
 * job: 5 s, the default rlimit and memory). Verdicts then do not depend on
 * the rank count or the load where the rlimit ends a proof before the
 * timeout does: the workstation job's proofs end far below either.
 */
#ifndef TASO_DERIVE_GUARD_H
#define TASO_DERIVE_GUARD_H

#include "derive.h"
#include "rule_guard.h"
#include "tool.h"

/* The axioms to open: option (a tool's --axioms) when given, else the
 * job's [verify] axioms (relative to the job file, taso_tool_job_relative)
 * where they exist, else (with a warning when the job names others) the
 * installation's: $TASO_DATA_DIR/axioms, else the source tree's
 * data/axioms. A job file copied elsewhere still generates. */
void taso_tool_axioms_path(const taso_tool_t *t, const char *option, char *path, size_t len);

/* Loads the axioms at path (resolved by the caller), proves their lemmas
 * (warning about those not proved, which are left out) and opens a guard
 * over the input table in. Free with taso_tool_guard_close. */
taso_err_t taso_tool_guard_open(const taso_tool_t *t, const char *path, const taso_inputs_t *in,
                                taso_axioms_t **ax, taso_rule_guard_t **guard);

/* The guard and its axioms (either may be NULL). */
void taso_tool_guard_close(taso_axioms_t *ax, taso_rule_guard_t *guard);

/* The derivation hook (taso_derive_rewrite_fn) with the guard as ctx. */
taso_err_t taso_tool_guard_rewrite(void *guard, int64_t rule, int dir, const taso_graph_t *host,
                                   const taso_tensor_t *host_types, const taso_graph_t *lhs,
                                   const taso_graph_t *rhs, const taso_shape_cond_t *cond,
                                   taso_rewrite_fn fn, void *fn_ctx);

/* The derivation's optimistic switch (derive.h) with the guard as ctx. */
void taso_tool_guard_optimistic(void *guard, bool on);

/* Rank 0 prints the guard's counters: "PREFIX: N matches, ..." */
void taso_tool_guard_print(const taso_tool_t *t, const char *prefix,
                           const taso_rule_guard_stats_t *g);

/* Derivation options from the job's [generate] derive_* keys, with the
 * guard (NULL: the checked engine alone). */
void taso_tool_derive_opts(const taso_tool_t *t, taso_rule_guard_t *guard, taso_derive_opts_t *o);

#endif
