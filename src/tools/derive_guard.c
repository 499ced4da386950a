#define _POSIX_C_SOURCE 200809L
#include "derive_guard.h"

#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

void taso_tool_axioms_path(const taso_tool_t *t, const char *option, char *path, size_t len) {
  if (option || t->have_job) {
    taso_tool_job_relative(t, option ? option : t->job.axioms, path, len);
    if (option || access(path, F_OK) == 0) return;
  }
  /* the installation's, as for built-in models */
  const char *data = getenv("TASO_DATA_DIR");
  char missing[1024];
  snprintf(missing, sizeof missing, "%s", path);
  snprintf(path, len, "%s/axioms", data && *data ? data : TASO_DEFAULT_DATA_DIR);
  if (t->have_job) taso_tool_warn(t, "the job's axioms %s not found; using %s", missing, path);
}

taso_err_t taso_tool_guard_open(const taso_tool_t *t, const char *path, const taso_inputs_t *in,
                                taso_axioms_t **ax, taso_rule_guard_t **guard) {
  taso_limits_t lim = {
      .timeout_s = t->have_job ? t->job.verify_timeout : 5,
      .rlimit = t->have_job ? (unsigned)t->job.verify_rlimit : TASO_DEFAULT_VERIFY_RLIMIT,
      .memory_mb = t->have_job ? (unsigned)t->job.verify_memory_mb : TASO_DEFAULT_MEMORY_MB};
  char unproved[512];
  taso_err_t err = taso_guard_open(path, in, &lim, unproved, sizeof unproved, ax, guard);
  if (unproved[0]) taso_tool_warn(t, "lemmas not proved, left out of re-proofs: %s", unproved);
  return err;
}

void taso_tool_derive_opts(const taso_tool_t *t, taso_rule_guard_t *guard, taso_derive_opts_t *o) {
  *o = (taso_derive_opts_t){0};
  if (t->have_job) {
    o->max_steps = t->job.derive_steps;
    o->extra_ops = t->job.derive_extra_ops ? t->job.derive_extra_ops : -1; /* derive.h: -1 none */
    o->max_nodes = t->job.derive_nodes;
  }
  if (guard) taso_guard_derive_hooks(guard, o);
}

void taso_tool_guard_print(const taso_tool_t *t, const char *prefix,
                           const taso_rule_guard_stats_t *g) {
  taso_tool_print(t,
                  "%s: %lld matches, %lld at their proved shapes, %lld re-proved (%lld relations "
                  "decided, %.1f s), %lld refused\n",
                  prefix, (long long)g->matches, (long long)g->by_condition,
                  (long long)g->by_reproof, (long long)g->proofs, g->proof_seconds,
                  (long long)g->refused);
}
