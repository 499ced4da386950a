#include "guard_open.h"

#include <stdio.h>

#include "verifier.h"

taso_err_t taso_guard_open(const char *path, const taso_inputs_t *in, const taso_limits_t *lim,
                           char *unproved, size_t len, taso_axioms_t **ax,
                           taso_rule_guard_t **guard) {
  *ax = NULL;
  *guard = NULL;
  unproved[0] = '\0';
  taso_err_t err = taso_axioms_load(path, ax);
  if (err != TASO_OK) return taso_error_prefix(err, "axioms: ");
  taso_rule_guard_opts_t opt = {0};
  opt.limits = *lim;
  opt.seed = 1;
  char report[512];
  int failed = 0;
  TASO_TRY(taso_axioms_prove_lemmas_limited(*ax, &opt.limits, report, sizeof report, &failed));
  if (failed) snprintf(unproved, len, "%s", report);
  return taso_rule_guard_open(in, *ax, &opt, guard);
}

void taso_guard_close(taso_axioms_t *ax, taso_rule_guard_t *guard) {
  taso_rule_guard_close(guard);
  if (ax) taso_axioms_free(ax);
}

/* The derivation's hooks, with the guard as their context. */
static taso_err_t guard_rewrite(void *guard, int64_t rule, int dir, const taso_graph_t *host,
                                const taso_tensor_t *host_types, const taso_graph_t *lhs,
                                const taso_graph_t *rhs, const taso_shape_cond_t *cond,
                                taso_rewrite_fn fn, void *fn_ctx) {
  return taso_rewrite_all_guarded(guard, rule, dir, host, host_types, lhs, rhs, cond, fn, fn_ctx);
}

static void guard_optimistic(void *guard, bool on) {
  taso_rule_guard_optimistic(guard, on);
}

void taso_guard_derive_hooks(taso_rule_guard_t *guard, taso_derive_opts_t *o) {
  o->rewrite = guard_rewrite;
  o->rewrite_ctx = guard;
  o->optimistic = guard_optimistic;
}
