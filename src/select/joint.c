#include "joint.h"

#include <stdlib.h>

#include "select.h"

/* A configuration's cost for the selection; a deferred miss is estimated
 * and marks the graph pending. */
static taso_err_t call_cost(void *ctx, const taso_rt_config_t *cfg, double *ms) {
  taso_joint_t *j = ctx;
  taso_err_t err = taso_cost_of_config(j->costs, cfg, ms);
  if (err != TASO_ERR_UNKNOWN || !j->deferring) return err;
  j->pending = true;
  *ms = taso_cost_estimate(cfg);
  return TASO_OK;
}

taso_err_t taso_joint_graph_cost(void *joint, const taso_rt_typed_graph_t *g, const bool *absent,
                                 double *ms) {
  taso_joint_t *j = joint;
  taso_select_options_t o = {.warm_weights = j->warm, .absent = absent};
  taso_call_t *calls = NULL;
  int n = 0;
  taso_select_stats_t st;
  j->pending = false;
  taso_err_t err = taso_select_plan(g, j->lib, &o, call_cost, j, &calls, &n, &st);
  free(calls);
  *ms = st.ms;
  if (err == TASO_OK && j->pending)
    err = taso_error(TASO_ERR_UNKNOWN, "configurations of the call plan pending");
  return err;
}
