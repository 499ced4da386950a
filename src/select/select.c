/* Library-call selection: fusion, layouts, placed concats, then in-place
 * writes. */
#include "select.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#define MAX_EXTRA 3 /* epilogue nodes a chain may fuse: bias, sum, relu or clip */

/* The best call for one configuration. */
typedef struct {
  double ms; /* HUGE_VAL: no call may be made */
  int call;  /* library call index */
  int32_t layout;
  int32_t in_place; /* 0, or 1 + the operand it writes over */
} choice_t;

typedef struct {
  const taso_rt_typed_graph_t *m;
  taso_library_t *lib;
  const taso_select_options_t *opt;
  taso_select_cost_fn cost;
  void *ctx;
  int *uses; /* taso_rt_consumers: first, per tensor, operands and graph outputs reading it */
  taso_ref_t *root; /* per tensor: the concat result it is placed in, or itself */
} sel_t;

static bool has_4d(const taso_rt_config_t *cfg) {
  for (int i = 0; i < cfg->nin; i++)
    if (cfg->in[i].rank == 4) return true;
  return cfg->out[0].rank == 4 || (cfg->nout > 1 && cfg->out[1].rank == 4);
}

static bool absent(const sel_t *s, int node) {
  return s->opt->absent && s->opt->absent[node];
}

/* Operands computed by absent nodes are weights once folded: cold. */
static void mark_folded(const sel_t *s, taso_rt_config_t *cfg, const taso_ref_t *in) {
  for (int a = 0; s->opt->absent && a < cfg->nin; a++)
    if (absent(s, TASO_REF_NODE(in[a]))) cfg->cold |= 1u << a;
}

/* The operands of node i. */
static void operands(const taso_rt_typed_graph_t *m, int i, taso_ref_t *in) {
  const taso_node_t *n = &m->graph->nodes[i];
  for (int a = 0; a < taso_ops[n->kind].arity; a++)
    in[a] = n->in[a];
}

/* The operand a call covering cfg could write over: a fused sum's summand,
 * an element-wise operator's input; -1 when none. */
static int overwritable(const taso_rt_config_t *cfg) {
  if (cfg->fuse & TASO_FUSE_SUM) return cfg->nin - 1;
  bool alone = cfg->nin == 1 && cfg->nout == 1 && !cfg->fuse &&
               taso_tensor_size(&cfg->in[0]) == taso_tensor_size(&cfg->out[0]);
  return alone ? 0 : -1;
}

/* The cheapest call writing cfg's result over operand k (tensor in[k]) that
 * the library allows where that operand is read later or not (read_later):
 * *call its index, -1 when none may be made. */
static taso_err_t in_place_call(sel_t *s, const taso_rt_config_t *cfg, const taso_ref_t *in, int k,
                                bool read_later, double *ms, int *call) {
  const taso_rt_typed_graph_t *m = s->m;
  taso_rt_config_t v = *cfg;
  v.in_place = k + 1;
  taso_lib_props_t p;
  taso_library_props_of(&v, &p);
  p.overwrites = true;
  p.read_later = read_later;
  p.is_input = m->graph->nodes[TASO_REF_NODE(in[k])].kind == TASO_OP_INPUT ||
               absent(s, TASO_REF_NODE(in[k]));
  p.same_size = taso_tensor_size(&v.in[k]) == taso_tensor_size(&v.out[0]);
  for (int a = 0; a < v.nin; a++)
    p.read_twice |= a != k && in[a] == in[k];
  int writes = cfg->fuse & TASO_FUSE_SUM ? TASO_WRITES_SUMMAND : TASO_WRITES_OPERAND;
  *call = -1;
  for (int c = 0; c < taso_library_ncalls(s->lib); c++) {
    if (taso_library_call(s->lib, c)->writes != writes || !taso_library_covers(s->lib, c, &v))
      continue;
    bool ok;
    TASO_TRY(taso_library_allows(s->lib, c, &p, &ok));
    if (!ok) continue;
    TASO_TRY(s->cost(s->ctx, &v, ms));
    *call = c;
    return TASO_OK;
  }
  return TASO_OK;
}

/* The cheapest call that covers cfg and may be made, over the layouts the
 * options allow: cfg's layout is set to the one chosen. With its operands
 * (in), also a call writing in place over one whose only reader, in the
 * whole graph, is this step (then nothing reads it after, whatever the
 * plan's order), so that fusion is weighed with what in place saves. */
static taso_err_t best_call(sel_t *s, taso_rt_config_t *cfg, const taso_ref_t *in, choice_t *best) {
  unsigned layouts = s->opt->plain  ? 1u << TASO_RT_NCHW
                     : s->opt->nhwc ? 1u << TASO_RT_NHWC
                                    : 1u << TASO_RT_NCHW | 1u << TASO_RT_BLOCKED;
  if (!has_4d(cfg)) layouts = 1u << TASO_RT_NCHW; /* the same bytes in any layout */
  if (s->opt->warm_weights) cfg->cold = 0;
  best->ms = HUGE_VAL;
  best->call = -1;
  best->layout = TASO_RT_NCHW;
  for (int32_t l = 0; l < 3; l++) {
    if (!(layouts >> l & 1)) continue;
    cfg->layout = l;
    taso_lib_props_t p;
    taso_library_props_of(cfg, &p);
    double ms = -1;
    for (int c = 0; c < taso_library_ncalls(s->lib); c++) {
      if (!taso_library_covers(s->lib, c, cfg)) continue;
      bool ok;
      TASO_TRY(taso_library_allows(s->lib, c, &p, &ok));
      if (!ok) continue;
      if (ms < 0) TASO_TRY(s->cost(s->ctx, cfg, &ms));
      if (ms < best->ms) *best = (choice_t){.ms = ms, .call = c, .layout = l};
      break; /* the first call that may be made, in file order: the same configuration */
    }
    int k = in && !s->opt->plain ? overwritable(cfg) : -1;
    if (k < 0) continue;
    int c;
    TASO_TRY(in_place_call(s, cfg, in, k, s->uses[in[k]] > 1, &ms, &c));
    if (c >= 0 && ms <= best->ms)
      *best = (choice_t){.ms = ms, .call = c, .layout = l, .in_place = k + 1};
  }
  cfg->layout = best->layout;
  return TASO_OK;
}

static taso_err_t no_call(sel_t *s, const taso_rt_config_t *cfg, int node) {
  char text[256];
  taso_rt_config_format(cfg, text, sizeof text);
  return taso_error(TASO_ERR_UNSUPPORTED,
                    "library %s has no call that may be made for node t%d (%s)",
                    taso_library_name(s->lib), node, text);
}

/* A head's options: fused with k = 0..len epilogue nodes. */
typedef struct {
  int len;                     /* epilogue nodes in its longest chain */
  int node[MAX_EXTRA + 1];     /* node[k]: the chain's node k (node[0]: the head) */
  choice_t opt[MAX_EXTRA + 1]; /* the best call fused with k nodes */
  int k;                       /* chosen; -1 undecided */
} head_t;

/* Cost of head h fused with k nodes, plus its chain's other nodes alone
 * unless covered (by another head) or counted already (seen). */
static double chain_cost(const head_t *h, int k, const choice_t *single, const int *covered,
                         const int *stop, int h_index) {
  double ms = h->opt[k].ms;
  for (int j = k + 1; j <= h->len; j++) {
    int v = h->node[j];
    if (stop && stop[v]) break;
    if (covered[v] >= 0 && covered[v] != h_index) break;
    ms += single[v].ms;
  }
  return ms;
}

static void cover(head_t *heads, int h, int *covered) {
  for (int j = 1; j <= heads[h].k; j++)
    covered[heads[h].node[j]] = h;
}

/* Decides head h alone: its best length, not reaching a covered node. */
static void decide_alone(head_t *heads, int h, const choice_t *single, int *covered) {
  head_t *x = &heads[h];
  int limit = 0;
  while (limit < x->len && covered[x->node[limit + 1]] < 0)
    limit++;
  double best = HUGE_VAL;
  x->k = 0;
  for (int k = 0; k <= limit; k++) {
    double ms = chain_cost(x, k, single, covered, NULL, h);
    if (ms < best) best = ms, x->k = k;
  }
  cover(heads, h, covered);
}

/* Decides heads a and b, whose chains meet, together: every pair of
 * lengths where they do not both take a node, each node of either chain
 * counted once. */
static void decide_pair(head_t *heads, int a, int b, const choice_t *single, int *covered) {
  head_t *x = &heads[a], *y = &heads[b];
  int nodes[2 * MAX_EXTRA], at[2][2 * MAX_EXTRA], n = 0; /* the union; position in x, y (0: none) */
  for (int side = 0; side < 2; side++) {
    const head_t *h = side ? y : x;
    for (int j = 1; j <= h->len; j++) {
      int u = 0;
      while (u < n && nodes[u] != h->node[j])
        u++;
      if (u == n) nodes[n] = h->node[j], at[0][n] = at[1][n] = 0, n++;
      at[side][u] = j;
    }
  }
  double best = HUGE_VAL;
  int bk[2] = {0, 0};
  for (int kx = 0; kx <= x->len; kx++)
    for (int ky = 0; ky <= y->len; ky++) {
      if (x->opt[kx].ms == HUGE_VAL || y->opt[ky].ms == HUGE_VAL) continue;
      double ms = x->opt[kx].ms + y->opt[ky].ms;
      bool clash = false;
      for (int u = 0; u < n; u++) {
        bool in_x = at[0][u] && at[0][u] <= kx, in_y = at[1][u] && at[1][u] <= ky;
        clash |= in_x && in_y;
        if (!in_x && !in_y) ms += single[nodes[u]].ms;
      }
      if (!clash && ms < best) best = ms, bk[0] = kx, bk[1] = ky;
    }
  x->k = bk[0];
  y->k = bk[1];
  cover(heads, a, covered);
  cover(heads, b, covered);
}

/* ---- in place ------------------------------------------------------------ */

typedef struct {
  taso_rt_config_t cfg;
  taso_ref_t in[TASO_RT_MAX_IN];
  double ms;
} step_t;

/* The last step reading each tensor (n: a graph output, read by the
 * caller), and then, at root, the last reading any tensor of its buffer. */
static int *liveness(const sel_t *s, const step_t *steps, int n) {
  const taso_graph_t *g = s->m->graph;
  int refs = 2 * g->nnodes;
  int *last = malloc(sizeof *last * (size_t)(2 * refs + 1));
  if (!last) return NULL;
  for (int i = 0; i < refs; i++)
    last[i] = -1;
  for (int i = 0; i < n; i++)
    for (int a = 0; a < steps[i].cfg.nin; a++)
      last[steps[i].in[a]] = i;
  for (int o = 0; o < g->noutputs; o++)
    last[g->outputs[o]] = n;
  int *group = last + refs;
  for (int i = 0; i < refs; i++)
    group[i] = -1;
  for (int i = 0; i < refs; i++)
    if (last[i] > group[s->root[i]]) group[s->root[i]] = last[i];
  return last;
}

/* Whether overwriting tensor ref at step i leaves every tensor of its
 * buffer unread after i. */
static bool dead_after(const sel_t *s, const int *last, taso_ref_t ref, int i) {
  int refs = 2 * s->m->graph->nnodes;
  return last[ref] <= i && last[refs + s->root[ref]] <= i;
}

/* Step i writes over operand k when a call that does so covers it, may be
 * made there on the plan's liveness, and costs no more. */
static taso_err_t try_in_place(sel_t *s, step_t *st, int i, const int *last, int k,
                               taso_call_t *call) {
  double ms;
  int c;
  TASO_TRY(in_place_call(s, &st->cfg, st->in, k, !dead_after(s, last, st->in[k], i), &ms, &c));
  if (c < 0 || ms > st->ms) return TASO_OK;
  st->ms = ms;
  st->cfg.in_place = k + 1;
  call->in_place = k + 1;
  snprintf(call->call, sizeof call->call, "%s", taso_library_call(s->lib, c)->name);
  return TASO_OK;
}

/* In-place writes on the plan's liveness, where none was chosen already;
 * a step whose result is placed in a concat keeps writing there. */
static taso_err_t in_place(sel_t *s, step_t *steps, taso_call_t *calls, int n) {
  int *last = liveness(s, steps, n);
  if (!last) return taso_error(TASO_ERR_NOMEM, "liveness");
  taso_err_t err = TASO_OK;
  for (int i = 0; i < n && err == TASO_OK; i++) {
    int k = overwritable(&steps[i].cfg);
    taso_ref_t out = TASO_REF(calls[i].node, 0);
    if (k >= 0 && !calls[i].in_place && s->root[out] == out)
      err = try_in_place(s, &steps[i], i, last, k, &calls[i]);
  }
  free(last);
  return err;
}

/* ---- placed concats -------------------------------------------------------- */

/* Whether some step writes over a tensor of the buffer that concat step c
 * would share (its operands and result) while another of them is read;
 * last: each tensor's last reader (liveness's first half, which placing
 * does not change). */
static bool overwritten(const step_t *steps, const taso_call_t *calls, int n, int c,
                        const int *last) {
  const step_t *cs = &steps[c];
  taso_ref_t result = TASO_REF(calls[c].node, 0);
  int end = last[result];
  for (int a = 0; a < cs->cfg.nin; a++)
    if (last[cs->in[a]] > end) end = last[cs->in[a]];
  for (int j = 0; j < n; j++) {
    if (calls[j].in_place <= 0) continue;
    taso_ref_t t = steps[j].in[calls[j].in_place - 1];
    bool member = t == result;
    for (int a = 0; a < cs->cfg.nin; a++)
      member |= t == cs->in[a];
    if (member && end > j) return true;
  }
  return false;
}

/* Concat step c places its operands in its result when a call that does so
 * may be made and saves more than the producers lose: a producer writing
 * over its own operand is made to write a buffer of its own (the cheapest
 * such call), since its result is now a slice of the concat's. */
static taso_err_t try_place(sel_t *s, step_t *steps, taso_call_t *calls, int n, int c,
                            const int *step_at, const int *last) {
  step_t *cs = &steps[c];
  const taso_rt_typed_graph_t *m = s->m;
  taso_rt_config_t v = cs->cfg;
  v.in_place = TASO_CALL_PLACED;
  taso_lib_props_t p;
  taso_library_props_of(&v, &p);
  p.placed = true;
  p.producers_own = true;
  int prod[TASO_RT_MAX_IN];
  choice_t alt[TASO_RT_MAX_IN];
  double lose = 0;
  for (int a = 0; a < v.nin && p.producers_own; a++) {
    int node = TASO_REF_NODE(cs->in[a]);
    prod[a] = m->graph->nodes[node].kind == TASO_OP_INPUT || absent(s, node) ? -1 : step_at[node];
    p.producers_own = prod[a] >= 0 && s->root[cs->in[a]] == cs->in[a];
    for (int b = 0; b < a && p.producers_own; b++)
      p.producers_own = cs->in[b] != cs->in[a];
    alt[a].ms = -1;
    if (p.producers_own && calls[prod[a]].in_place > 0) {
      taso_rt_config_t own = steps[prod[a]].cfg;
      own.in_place = 0;
      TASO_TRY(best_call(s, &own, NULL, &alt[a]));
      if (alt[a].ms == HUGE_VAL) return TASO_OK;
      lose += alt[a].ms - steps[prod[a]].ms;
    }
  }
  if (lose >= cs->ms) return TASO_OK;
  p.placed_overwritten = overwritten(steps, calls, n, c, last);
  for (int k = 0; k < taso_library_ncalls(s->lib); k++) {
    const taso_lib_call_t *call = taso_library_call(s->lib, k);
    bool ok;
    if (call->writes != TASO_WRITES_PRODUCERS || !taso_library_covers(s->lib, k, &v)) continue;
    TASO_TRY(taso_library_allows(s->lib, k, &p, &ok));
    if (!ok) continue;
    for (int a = 0; a < v.nin; a++) {
      s->root[cs->in[a]] = s->root[TASO_REF(calls[c].node, 0)];
      if (alt[a].ms < 0) continue;
      step_t *ps = &steps[prod[a]];
      ps->cfg.in_place = 0;
      ps->cfg.layout = alt[a].layout;
      ps->ms = alt[a].ms;
      calls[prod[a]].in_place = 0;
      calls[prod[a]].layout = alt[a].layout;
      snprintf(calls[prod[a]].call, sizeof calls[prod[a]].call, "%s",
               taso_library_call(s->lib, alt[a].call)->name);
    }
    cs->cfg = v;
    cs->ms = 0;
    calls[c].in_place = TASO_CALL_PLACED;
    snprintf(calls[c].call, sizeof calls[c].call, "%s", call->name);
    return TASO_OK;
  }
  return TASO_OK;
}

/* Every concat, the last first (one placed in another gets its slice
 * first, as the runner places them). */
static taso_err_t place(sel_t *s, step_t *steps, taso_call_t *calls, int n) {
  int nn = s->m->graph->nnodes;
  int *step_at = malloc(sizeof *step_at * (size_t)(nn + 1)), *last = liveness(s, steps, n);
  if (!step_at || !last) {
    free(step_at);
    free(last);
    return taso_error(TASO_ERR_NOMEM, "placing");
  }
  for (int i = 0; i < nn; i++)
    step_at[i] = -1;
  for (int i = 0; i < n; i++)
    step_at[calls[i].node] = i;
  taso_err_t err = TASO_OK;
  for (int i = n - 1; i >= 0 && err == TASO_OK; i--)
    if (steps[i].cfg.kind == TASO_OP_CONCAT && calls[i].in_place == 0)
      err = try_place(s, steps, calls, n, i, step_at, last);
  free(step_at);
  free(last);
  return err;
}

/* ---- the plan -------------------------------------------------------------- */

static taso_err_t single_choices(sel_t *s, choice_t *single, int *head_at, int *nheads) {
  const taso_rt_typed_graph_t *m = s->m;
  for (int i = 0; i < m->graph->nnodes; i++) {
    int32_t kind = m->graph->nodes[i].kind;
    head_at[i] = -1;
    if (kind == TASO_OP_INPUT || absent(s, i)) continue;
    taso_rt_config_t cfg;
    taso_ref_t in[TASO_RT_MAX_IN];
    TASO_TRY(taso_rt_config_of_node(m, i, &cfg));
    operands(m, i, in);
    mark_folded(s, &cfg, in);
    TASO_TRY(best_call(s, &cfg, in, &single[i]));
    if (single[i].ms == HUGE_VAL) return no_call(s, &cfg, i);
    if (!s->opt->plain && (kind == TASO_OP_CONV2D || kind == TASO_OP_MATMUL))
      head_at[i] = (*nheads)++;
  }
  return TASO_OK;
}

static taso_err_t head_choices(sel_t *s, const choice_t *single, const int *head_at,
                               head_t *heads) {
  const taso_rt_typed_graph_t *m = s->m;
  for (int i = 0; i < m->graph->nnodes; i++) {
    if (head_at[i] < 0) continue;
    head_t *h = &heads[head_at[i]];
    h->k = -1;
    h->node[0] = i;
    h->opt[0] = single[i];
    h->len = 0;
    for (int k = 1; k <= MAX_EXTRA; k++) {
      taso_rt_config_t cfg;
      taso_ref_t in[TASO_RT_MAX_IN];
      int last;
      if (!taso_rt_chain_config(m, s->uses, i, k, &cfg, &last, in)) break;
      mark_folded(s, &cfg, in);
      h->len = k;
      h->node[k] = last;
      TASO_TRY(best_call(s, &cfg, in, &h->opt[k]));
    }
  }
  return TASO_OK;
}

/* The other undecided head whose chain shares a node with head h's, or -1;
 * -2 when there are several. */
static int partner(const head_t *heads, int nheads, int h, const int *owner1, const int *owner2) {
  int found = -1;
  for (int j = 1; j <= heads[h].len; j++) {
    int v = heads[h].node[j];
    int other = owner1[v] == h ? owner2[v] : owner1[v];
    if (other < 0 || other >= nheads || heads[other].k >= 0) continue;
    if (found >= 0 && found != other) return -2;
    found = other;
  }
  return found;
}

/* The bytes of every tensor a plan keeps: each node's results, but of the
 * nodes computed from weights alone (absent) only those a step reads,
 * which are the folded weights. */
static int64_t plan_bytes(const taso_rt_typed_graph_t *m, const bool *absent) {
  const taso_graph_t *g = m->graph;
  if (!absent) return taso_rt_graph_bytes(m);
  bool *read = calloc((size_t)g->nnodes + 1, sizeof *read);
  if (!read) return taso_rt_graph_bytes(m);
  for (int i = 0; i < g->nnodes; i++)
    if (!absent[i] && g->nodes[i].kind != TASO_OP_INPUT)
      for (int a = 0; a < taso_ops[g->nodes[i].kind].arity; a++)
        read[TASO_REF_NODE(g->nodes[i].in[a])] = true;
  int64_t bytes = 0;
  for (int i = 0; i < g->nnodes; i++)
    if (!absent[i] || read[i])
      for (int o = 0; o < taso_ops[g->nodes[i].kind].outputs; o++)
        bytes += (int64_t)sizeof(float) * taso_tensor_size(&m->types[2 * i + o]);
  free(read);
  return bytes;
}

/* One step's call (in run order) and what in-place needs of it. */
static taso_err_t emit(sel_t *s, int first, int node, int fused, const choice_t *c, step_t *st,
                       taso_call_t *call) {
  const taso_rt_typed_graph_t *m = s->m;
  if (fused > 1) {
    int last;
    taso_rt_chain_config(m, s->uses, first, fused - 1, &st->cfg, &last, st->in);
  } else {
    TASO_TRY(taso_rt_config_of_node(m, node, &st->cfg));
    operands(m, node, st->in);
  }
  mark_folded(s, &st->cfg, st->in);
  if (s->opt->warm_weights) st->cfg.cold = 0;
  st->cfg.layout = c->layout;
  st->cfg.in_place = c->in_place;
  st->ms = c->ms;
  *call = (taso_call_t){.node = node,
                        .first_node = first,
                        .fused = fused,
                        .layout = c->layout,
                        .in_place = c->in_place};
  snprintf(call->call, sizeof call->call, "%s", taso_library_call(s->lib, c->call)->name);
  return TASO_OK;
}

taso_err_t taso_select_plan(const taso_rt_typed_graph_t *m, taso_library_t *lib,
                            const taso_select_options_t *opt, taso_select_cost_fn cost, void *ctx,
                            taso_call_t **calls_out, int *ncalls, taso_select_stats_t *stats) {
  sel_t s = {.m = m, .lib = lib, .opt = opt, .cost = cost, .ctx = ctx};
  int nn = m->graph->nnodes, nheads = 0;
  size_t cap = (size_t)(nn ? nn : 1);
  choice_t *single = malloc(sizeof *single * cap);
  int *head_at = malloc(sizeof *head_at * cap), *covered = malloc(sizeof *covered * cap);
  int *owner1 = malloc(sizeof *owner1 * cap), *owner2 = malloc(sizeof *owner2 * cap);
  head_t *heads = malloc(sizeof *heads * cap);
  taso_call_t *calls = malloc(sizeof *calls * cap);
  step_t *steps = malloc(sizeof *steps * cap);
  s.uses = taso_rt_consumers(m);
  s.root = malloc(sizeof *s.root * (2 * cap + 1));
  for (int t = 0; s.root && t < 2 * nn; t++)
    s.root[t] = t;
  *calls_out = NULL;
  *ncalls = 0;
  memset(stats, 0, sizeof *stats);
  taso_err_t err = TASO_OK;
  if (!single || !head_at || !covered || !owner1 || !owner2 || !heads || !calls || !steps ||
      !s.uses || !s.root)
    err = taso_error(TASO_ERR_NOMEM, "selection for %d nodes", nn);
  if (err == TASO_OK) err = single_choices(&s, single, head_at, &nheads);
  if (err == TASO_OK) err = head_choices(&s, single, head_at, heads);
  for (int i = 0; i < nn && err == TASO_OK; i++)
    covered[i] = owner1[i] = owner2[i] = -1;
  for (int h = 0; h < nheads && err == TASO_OK; h++)
    for (int j = 1; j <= heads[h].len; j++) {
      int v = heads[h].node[j];
      if (owner1[v] < 0)
        owner1[v] = h;
      else if (owner2[v] < 0)
        owner2[v] = h;
    }
  for (int h = 0; h < nheads && err == TASO_OK; h++) {
    if (heads[h].k >= 0) continue;
    int p = partner(heads, nheads, h, owner1, owner2);
    if (p >= 0 && partner(heads, nheads, p, owner1, owner2) == h)
      decide_pair(heads, h, p, single, covered);
    else
      decide_alone(heads, h, single, covered); /* several meet: the earlier chooses first */
  }
  /* the steps, in run order: a chain where its last node stands */
  int n = 0;
  for (int i = 0; i < nn && err == TASO_OK; i++) {
    if (absent(&s, i)) continue;
    if (m->graph->nodes[i].kind == TASO_OP_INPUT || covered[i] >= 0) {
      const head_t *h = covered[i] >= 0 ? &heads[covered[i]] : NULL;
      if (h && h->node[h->k] == i)
        err = emit(&s, h->node[0], i, h->k + 1, &h->opt[h->k], &steps[n], &calls[n]), n++;
      continue;
    }
    if (head_at[i] >= 0 && heads[head_at[i]].k > 0) continue; /* its chain's step comes later */
    err = emit(&s, i, i, 1, &single[i], &steps[n], &calls[n]);
    n++;
  }
  if (err == TASO_OK && !opt->plain) err = place(&s, steps, calls, n);
  if (err == TASO_OK && !opt->plain) err = in_place(&s, steps, calls, n);
  if (err == TASO_OK) {
    stats->bytes = plan_bytes(m, opt->absent);
    for (int i = 0; i < n; i++) {
      stats->ms += steps[i].ms;
      stats->fused += calls[i].fused > 1;
      stats->blocked += calls[i].layout == TASO_RT_BLOCKED;
      if (calls[i].in_place > 0) {
        stats->in_place++;
        stats->bytes -= 4 * taso_tensor_size(&steps[i].cfg.out[0]);
      } else if (calls[i].in_place == TASO_CALL_PLACED) {
        stats->placed++;
        for (int a = 0; a < steps[i].cfg.nin; a++)
          stats->bytes -= 4 * taso_tensor_size(&steps[i].cfg.in[a]);
      }
    }
    stats->steps = n;
    taso_library_counts(lib, &stats->queries, &stats->cached);
    *calls_out = calls;
    *ncalls = n;
    calls = NULL;
  }
  free(single);
  free(head_at);
  free(covered);
  free(owner1);
  free(owner2);
  free(heads);
  free(calls);
  free(steps);
  free(s.uses);
  free(s.root);
  return err;
}
