/*
 * Running rewritten graphs of a model against the model (agree.h).
 *
 * A rewritten graph is run through a shallow view of the model: the same
 * input table, names, weights and seed, another graph and its types. The
 * runtime reads only those, so no model is copied.
 */
#include "agree.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
  float **in, **out;
  int nin, nout;
} buffers_t;

static void buffers_free(buffers_t *b) {
  for (int i = 0; b->in && i < b->nin; i++)
    free(b->in[i]);
  for (int o = 0; b->out && o < b->nout; o++)
    free(b->out[o]);
  free(b->in);
  free(b->out);
  memset(b, 0, sizeof *b);
}

/* view's seeded run-time inputs and room for its outputs. */
static taso_err_t make_buffers(taso_model_t *view, buffers_t *b) {
  memset(b, 0, sizeof *b);
  b->in = calloc((size_t)view->inputs.n + 1, sizeof *b->in);
  b->out = calloc((size_t)view->graph.noutputs + 1, sizeof *b->out);
  if (!b->in || !b->out) return taso_error(TASO_ERR_NOMEM, "run buffers");
  for (int i = 0; i < view->inputs.n; i++) {
    if (view->is_weight[i]) continue;
    int64_t n = taso_tensor_size(&view->inputs.v[i].type);
    if (!(b->in[b->nin] = malloc(sizeof(float) * (size_t)(n ? n : 1))))
      return taso_error_nomem(4.0 * (double)n, "input '%s'", view->names[i]);
    taso_model_random_input(view, i, view->seed, b->in[b->nin++]);
  }
  for (int o = 0; o < view->graph.noutputs; o++, b->nout++) {
    int64_t n = taso_tensor_size(&view->types[view->graph.outputs[o]]);
    if (!(b->out[o] = malloc(sizeof(float) * (size_t)(n ? n : 1))))
      return taso_error(TASO_ERR_NOMEM, "output %d", o);
  }
  return TASO_OK;
}

/* Runs view (m's inputs and weights, its own graph and types) once. */
static taso_err_t run_view(const taso_backend_t *be, taso_rt_ctx_t *ctx, taso_model_t *view,
                           buffers_t *b) {
  TASO_TRY(make_buffers(view, b));
  taso_rt_plan_t *plan = NULL;
  TASO_TRY(taso_rt_plan(be, ctx, view, NULL, &plan));
  taso_err_t err = taso_rt_run(plan, (const float *const *)b->in, b->out);
  taso_rt_plan_free(plan);
  return err;
}

/* m with graph g and g's types (malloc'd into *types), without m's call
 * plan (one of m's graph, not g's). */
static taso_err_t view_of(taso_model_t *m, const taso_graph_t *g, taso_model_t *view,
                          taso_tensor_t **types) {
  *view = *m;
  view->graph = *g;
  view->calls = NULL;
  view->ncalls = 0;
  *types = malloc(sizeof **types * 2 * (size_t)(g->nnodes + 1));
  if (!*types) return taso_error(TASO_ERR_NOMEM, "types of %d nodes", g->nnodes);
  view->types = *types;
  view->types_cap = 2 * g->nnodes;
  return taso_graph_infer(g, &m->inputs, *types);
}

/* g's difference against the outputs ref of m's own graph. */
static taso_err_t difference_to(const taso_backend_t *be, taso_rt_ctx_t *ctx, taso_model_t *m,
                                const taso_graph_t *g, const buffers_t *ref, double *relative) {
  taso_model_t view;
  taso_tensor_t *types = NULL;
  buffers_t got = {0};
  taso_err_t err = view_of(m, g, &view, &types);
  if (err == TASO_OK) err = run_view(be, ctx, &view, &got);
  double abs_diff;
  if (err == TASO_OK &&
      (err = taso_rt_output_difference(&view, got.out, ref->out, &abs_diff, relative)) != TASO_OK)
    err = taso_error_prefix(err, "%s, rewritten against the original: ", m->name);
  buffers_free(&got);
  free(types);
  return err;
}

taso_err_t taso_path_first_difference(const taso_backend_t *be, taso_rt_ctx_t *ctx, taso_model_t *m,
                                      const taso_graph_t *path, int steps, double tolerance,
                                      int *step, double *relative) {
  TASO_TRY(taso_model_make_weights(m));
  buffers_t ref = {0};
  *step = 0;
  taso_err_t err = run_view(be, ctx, m, &ref);
  if (err == TASO_OK) err = difference_to(be, ctx, m, &path[steps], &ref, relative);
  /* the result differs: which rewrite made it so? */
  bool differs = err == TASO_OK && !(*relative <= tolerance);
  for (int k = 1; differs && err == TASO_OK && k <= steps && !*step; k++) {
    err = difference_to(be, ctx, m, &path[k], &ref, relative);
    if (err == TASO_OK && !(*relative <= tolerance)) *step = k;
  }
  buffers_free(&ref);
  return err;
}

static int compare_ms(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

taso_err_t taso_model_latencies(const taso_backend_t *be, taso_rt_ctx_t *ctx, taso_model_t *a,
                                taso_model_t *b, int runs, int rounds, double *a_ms, double *b_ms,
                                int *b_faster) {
  enum { MAX_ROUNDS = 15 };
  if (runs < 1 || rounds < 1 || rounds > MAX_ROUNDS)
    return taso_error(TASO_ERR_ARG, "latency: 1 to %d rounds of at least one run", MAX_ROUNDS);
  TASO_TRY(taso_model_make_weights(a));
  TASO_TRY(taso_model_make_weights(b));
  buffers_t in = {0};
  taso_rt_plan_t *plan[2] = {NULL, NULL};
  double med[2][MAX_ROUNDS];
  double *ms = malloc(sizeof *ms * 2 * (size_t)runs);
  taso_err_t err = ms ? make_buffers(a, &in) : taso_error(TASO_ERR_NOMEM, "timings");
  /* b reads the same run-time inputs */
  if (err == TASO_OK) err = taso_rt_plan(be, ctx, a, NULL, &plan[0]);
  if (err == TASO_OK) err = taso_rt_plan(be, ctx, b, NULL, &plan[1]);
  taso_rt_stats_t st;
  for (int w = 0; w < 2 && err == TASO_OK; w++) /* warm-up */
    err = taso_rt_time_model(plan[w], (const float *const *)in.in, 3, 1, &st);
  /* run by run, a b b a a b ..., so that a change of load, and whatever
   * the model timed just before leaves behind, weighs on both alike,
   * within a round as well as between rounds */
  int faster = 0; /* pairs won by b */
  for (int k = 0; k < rounds && err == TASO_OK; k++) {
    for (int r = 0; r < runs && err == TASO_OK; r++) {
      for (int i = 0; i < 2 && err == TASO_OK; i++) {
        int w = i ^ (r & 1);
        err = taso_rt_time_model(plan[w], (const float *const *)in.in, 0, 1, &st);
        ms[w * runs + r] = st.median;
      }
      faster += err == TASO_OK && ms[runs + r] < ms[r];
    }
    for (int w = 0; w < 2 && err == TASO_OK; w++) {
      qsort(ms + w * runs, (size_t)runs, sizeof(double), compare_ms);
      med[w][k] = ms[w * runs + runs / 2];
    }
  }
  if (b_faster) *b_faster = faster;
  for (int w = 0; w < 2 && err == TASO_OK; w++)
    qsort(med[w], (size_t)rounds, sizeof(double), compare_ms);
  if (err == TASO_OK) *a_ms = med[0][rounds / 2], *b_ms = med[1][rounds / 2];
  taso_rt_plan_free(plan[0]);
  taso_rt_plan_free(plan[1]);
  buffers_free(&in);
  free(ms);
  return err;
}

int taso_sign_test_needed(int n, double alpha) {
  double tail = 0, log_half_n = (double)n * log(0.5);
  for (int k = n; k >= 0; k--) {
    double p = exp(lgamma(n + 1.0) - lgamma(k + 1.0) - lgamma(n - k + 1.0) + log_half_n);
    if (tail + p > alpha) return k + 1;
    tail += p;
  }
  return 0;
}

/* The configuration keys of g's operators (types from m's inputs). */
static char **keys_of(const taso_model_t *m, const taso_graph_t *g, int *n) {
  taso_tensor_t *types = malloc(sizeof *types * 2 * (size_t)(g->nnodes + 1));
  char **keys = calloc((size_t)g->nnodes + 1, sizeof *keys);
  const taso_rt_typed_graph_t typed = {g, types, m->is_weight};
  *n = 0;
  if (keys && types && taso_graph_infer(g, &m->inputs, types) == TASO_OK) {
    for (int i = 0; i < g->nnodes; i++) {
      taso_rt_config_t cfg;
      char key[512];
      if (g->nodes[i].kind == TASO_OP_INPUT || taso_rt_config_of_node(&typed, i, &cfg) != TASO_OK)
        continue;
      taso_rt_config_key(&cfg, key, sizeof key);
      if ((keys[*n] = malloc(strlen(key) + 1))) strcpy(keys[(*n)++], key);
    }
  }
  free(types);
  return keys;
}

void taso_graph_describe_change(const taso_model_t *m, const taso_graph_t *parent_graph,
                                const taso_graph_t *child_graph, char *buf, int len) {
  int nparent = 0, nchild = 0, used = 0;
  char **parent = keys_of(m, parent_graph, &nparent);
  char **child = keys_of(m, child_graph, &nchild);
  buf[0] = '\0';
  for (int i = 0; child && i < nchild && used < len; i++) {
    bool old = false;
    for (int j = 0; parent && j < nparent && !old; j++)
      if (parent[j] && strcmp(parent[j], child[i]) == 0) {
        free(parent[j]); /* matched once: a second equal one is new */
        parent[j] = NULL;
        old = true;
      }
    if (!old) used += snprintf(buf + used, (size_t)(len - used), "    %s\n", child[i]);
  }
  for (int i = 0; parent && i < nparent; i++)
    free(parent[i]);
  for (int i = 0; child && i < nchild; i++)
    free(child[i]);
  free(parent);
  free(child);
}
