/*
 * The rule guard opened from a job (src/verify/guard_open.h holds the
 * opener and the derivation hooks): which axioms, with the job's [verify]
 * limits, warnings and counters on the tool's output, and derivation
 * options from the job's [generate] derive_* keys.
 */
#ifndef TASO_DERIVE_GUARD_H
#define TASO_DERIVE_GUARD_H

#include "derive.h"
#include "guard_open.h"
#include "tool.h"

/* The axioms to open: option (a tool's --axioms) when given, else the
 * job's [verify] axioms (relative to the job file, taso_tool_job_relative)
 * where they exist, else (with a warning when the job names others) the
 * installation's: $TASO_DATA_DIR/axioms, else the source tree's
 * data/axioms. A job file copied elsewhere still generates. */
void taso_tool_axioms_path(const taso_tool_t *t, const char *option, char *path, size_t len);

/* taso_guard_open with the job's [verify] limits (without a job: 5 s,
 * the default rlimit and memory), warning about the lemmas not proved.
 * Free with taso_guard_close. */
taso_err_t taso_tool_guard_open(const taso_tool_t *t, const char *path, const taso_inputs_t *in,
                                taso_axioms_t **ax, taso_rule_guard_t **guard);

/* Rank 0 prints the guard's counters: "PREFIX: N matches, ..." */
void taso_tool_guard_print(const taso_tool_t *t, const char *prefix,
                           const taso_rule_guard_stats_t *g);

/* Derivation options from the job's [generate] derive_* keys, with the
 * guard (NULL: the checked engine alone). */
void taso_tool_derive_opts(const taso_tool_t *t, taso_rule_guard_t *guard, taso_derive_opts_t *o);

#endif
