/*
 * The second pass as a replay of the first (eqsat_impl.h:
 * taso_eqsat_replay).
 *
 * The unproved first pass (eqsat.c first_pass) accepted every typed match
 * and extracted a result; the relations of the applications under that
 * result were then decided. The second pass used to saturate again from
 * the input with proved relations alone and extract again: as long as the
 * first, and on the eight models it found the first's result each time
 * (NasRNN: 0.15 s a round of its 0.9 s). The replay gets there without
 * matching: the e-graph starts again from the input, and the first pass's
 * applications are made again in their order, iteration by iteration
 * (rebuilt between, as saturation does), each only where
 *   - its bound classes have counterparts here (the classes a replayed
 *     application, or the input, gave the same terms),
 *   - its left side is present over them (looked up node by node), so it
 *     is a match here, and its right side gives the matched tensors their
 *     types,
 *   - the rule guard accepts its relation from its verdicts alone (proved;
 *     the guard is cached-only: nothing is proved here).
 * Every merge here is then a proved rule at a match, so when the first
 * pass's result is present (its nodes looked up over the model's inputs)
 * in the model's output classes, it is proved equal to the input, and it
 * is the round's result, with no second saturation or extraction.
 *
 * The proofs go first to the applications that added the result's own
 * nodes (taso_eqsat_graph_apps; ResNeXt-50: 1 proof where every
 * application under the result made 154, 1 s); when the replay falls
 * short, the rest under the result are decided and it is made once more;
 * when it still does (an application the result needs was refused, or
 * rests on one that was), the caller restarts and saturates as before
 * (eqsat.c saturate_from).
 */
#include <stdlib.h>
#include <string.h>

#include "eqsat_impl.h"
#include "rule_guard.h"

/* Sweeps over the applications not made, after the iterations. */
enum { SWEEPS = 2 };

/* The classes of graph g's refs in the e-graph (-1: not present) into
 * cls (2 per node), its input nodes bound to vars (per input number its
 * class), or with vars NULL to the model's input nodes; apps (NULL, or a
 * flag per application) marks the applications that added its nodes. */
static void walk(taso_eqsat_t *s, const taso_graph_t *g, const int32_t *vars, int32_t *cls,
                 bool *apps) {
  int32_t *model = NULL; /* the model's input classes, by number, found in one sweep */
  if (!vars) {
    int n = s->prob->inputs->n;
    model = malloc(sizeof *model * ((size_t)n + 1));
    for (int k = 0; model && k < n; k++)
      model[k] = -1;
    for (int32_t e = 0; model && e < s->eg.nnodes; e++) {
      const taso_enode_t *en = &s->eg.nodes[e];
      if (en->kind == TASO_OP_INPUT && en->p.input >= 0 && en->p.input < n)
        model[en->p.input] = taso_egraph_find(&s->eg, en->cls);
    }
  }
  for (int i = 0; i < g->nnodes; i++) {
    const taso_node_t *n = &g->nodes[i];
    cls[2 * i] = cls[2 * i + 1] = -1;
    if (n->kind == TASO_OP_INPUT) { /* no memory for model: every graph absent */
      cls[2 * i] = vars ? vars[n->p.input] : model ? model[n->p.input] : -1;
      continue;
    }
    for (int port = 0; port < taso_ops[n->kind].outputs; port++) {
      int32_t in[3] = {-1, -1, -1};
      bool bound = true;
      for (int a = 0; a < taso_ops[n->kind].arity; a++)
        bound = bound && (in[a] = cls[n->in[a]]) >= 0;
      int32_t e = bound ? taso_egraph_lookup_node(&s->eg, n->kind, port, &n->p, in) : -1;
      if (e < 0) continue;
      cls[2 * i + port] = taso_egraph_find(&s->eg, s->eg.nodes[e].cls);
      if (apps && s->eg.nodes[e].app >= 0) apps[s->eg.nodes[e].app] = true;
    }
  }
  free(model);
}

/* Application a of the first pass as a match here, into rec (record
 * ints): false when a bound class has no counterpart (map), its left side
 * is absent or its right side does not fit. */
static bool match_here(taso_eqsat_t *s, const taso_eqsat_first_t *f, int32_t a, const int32_t *map,
                       int32_t *rec) {
  const int32_t *old = &f->match[(size_t)a * (size_t)s->record];
  const taso_rule_t *rule = &s->rules->v[old[0]];
  const taso_graph_t *lhs = &rule->lhs;
  for (int k = 0; k < s->record; k++)
    rec[k] = -1;
  rec[0] = old[0];
  const int32_t *vars = old + 2 + s->max_outputs;
  int32_t *nvars = rec + 2 + s->max_outputs;
  for (int v = 0; v < s->at.n; v++) {
    if (vars[v] < 0) continue;
    if (vars[v] >= f->nclasses || map[vars[v]] < 0) return false;
    nvars[v] = taso_egraph_find(&s->eg, map[vars[v]]);
  }
  int32_t cls[2 * 64];
  walk(s, lhs, nvars, cls, NULL);
  for (int o = 0; o < lhs->noutputs; o++) {
    rec[2 + o] = cls[lhs->outputs[o]];
    if (rec[2 + o] < 0) return false;
  }
  for (int v = 0; v < s->at.n; v++)
    if (nvars[v] >= 0) s->at.v[v].type = s->eg.type[nvars[v]];
  if (taso_graph_infer(&rule->rhs, &s->at, s->rhs_types) != TASO_OK) return false;
  for (int o = 0; o < rule->rhs.noutputs; o++)
    if (!taso_tensor_equal(&s->rhs_types[rule->rhs.outputs[o]], &s->eg.type[rec[2 + o]]))
      return false;
  return true;
}

void taso_eqsat_graph_apps(taso_eqsat_t *s, const taso_graph_t *g, bool *apps) {
  int32_t *cls = malloc(sizeof *cls * 2 * (size_t)(g->nnodes + 1));
  if (cls) walk(s, g, NULL, cls, apps); /* else nothing marked: the caller decides them all later */
  free(cls);
}

/* Whether graph g is present in the e-graph with its outputs in the
 * model's classes (s->roots). */
static taso_err_t holds_graph(taso_eqsat_t *s, const taso_graph_t *g, bool *holds) {
  *holds = false;
  int32_t *cls = malloc(sizeof *cls * 2 * (size_t)(g->nnodes + 1));
  if (!cls) return taso_error(TASO_ERR_NOMEM, "eqsat: %d nodes", g->nnodes);
  walk(s, g, NULL, cls, NULL);
  bool present = true;
  for (int o = 0; o < g->noutputs && present; o++)
    present =
        cls[g->outputs[o]] >= 0 && cls[g->outputs[o]] == taso_egraph_find(&s->eg, s->roots[o]);
  free(cls);
  *holds = present;
  return TASO_OK;
}

/* One iteration's applications [from, to) replayed: matched first (on
 * the e-graph as the last rebuild left it), then applied, then rebuilt. */
static taso_err_t replay_iteration(taso_eqsat_t *s, const taso_eqsat_first_t *f, int32_t from,
                                   int32_t to, int32_t *map, int32_t *recs, int32_t *which,
                                   bool *done, int64_t *made) {
  taso_rule_guard_t *g = s->opt->guard;
  int32_t n = 0;
  for (int32_t a = from; a < to; a++) {
    int32_t *rec = &recs[(size_t)n * (size_t)s->record];
    if (done[a] || !match_here(s, f, a, map, rec)) continue;
    /* the guard's verdict depends on the bound types alone: asked once */
    int32_t key[1 + 64], nkey = 0;
    key[nkey++] = rec[0];
    for (int v = 0; v < s->at.n; v++)
      if (rec[2 + s->max_outputs + v] >= 0)
        key[nkey++] = s->eg.type_id[rec[2 + s->max_outputs + v]];
    int64_t entry;
    bool fresh;
    TASO_TRY(taso_verdicts_find(&s->by_types, key, nkey, &entry, &fresh));
    int32_t *verdict = &s->by_types.v[entry + 1 + nkey];
    if (fresh) {
      const taso_rule_t *rule = &s->rules->v[rec[0]];
      bool ok;
      TASO_TRY(
          taso_rule_guard_accepts(g, rec[0], 0, &rule->lhs, &rule->rhs, &rule->cond, &s->at, &ok));
      *verdict = ok ? 1 : 2;
    }
    if (*verdict == 1) which[n++] = a;
  }
  for (int32_t k = 0; k < n; k++) {
    const int32_t *rec = &recs[(size_t)k * (size_t)s->record];
    const int32_t *old = &f->match[(size_t)which[k] * (size_t)s->record];
    const taso_graph_t *rhs = &s->rules->v[rec[0]].rhs;
    int32_t cls[2 * 64];
    bool changed;
    TASO_TRY(taso_eqsat_apply(s, rec, cls, &changed));
    done[which[k]] = true;
    *made += 1;
    /* counterparts: the first pass's classes of these terms are these */
    const int32_t *was = &f->rhs_cls[f->rhs_at[which[k]]];
    for (int r = 0; r < 2 * rhs->nnodes; r++)
      if (was[r] >= 0 && was[r] < f->nclasses && map[was[r]] < 0 && cls[r] >= 0)
        map[was[r]] = cls[r];
    for (int o = 0; o < rhs->noutputs; o++)
      if (old[2 + o] >= 0 && old[2 + o] < f->nclasses && map[old[2 + o]] < 0)
        map[old[2 + o]] = rec[2 + o];
  }
  return taso_egraph_rebuild(&s->eg, s->prob->is_weight);
}

void taso_eqsat_keep_first(taso_eqsat_t *s) {
  taso_eqsat_drop_first(s);
  s->first = (taso_eqsat_first_t){.match = s->app_match,
                                  .rule = s->app_rule,
                                  .napps = s->napps,
                                  .rhs_cls = s->rhs_cls,
                                  .rhs_at = s->rhs_cls_at,
                                  .iter_apps = s->iter_apps,
                                  .niters = s->niters,
                                  .nclasses = s->eg.nclasses};
  s->app_match = s->app_rule = NULL;
  s->rhs_cls_at = NULL;
  s->apps_cap = s->napps = 0;
  s->rhs_cls = NULL;
  s->rhs_cls_len = s->rhs_cls_cap = 0;
  s->iter_apps = NULL;
  s->niters = s->iters_cap = 0;
}

void taso_eqsat_drop_first(taso_eqsat_t *s) {
  free(s->first.match);
  free(s->first.rule);
  free(s->first.rhs_cls);
  free(s->first.rhs_at);
  free(s->first.iter_apps);
  s->first = (taso_eqsat_first_t){0};
}

taso_err_t taso_eqsat_replay(taso_eqsat_t *s, const taso_graph_t *from, bool *holds) {
  *holds = false;
  const taso_eqsat_first_t *f = &s->first;
  taso_err_t err = taso_eqsat_restart(s, from);
  int32_t n0 = s->eg.nclasses; /* the input's classes: the same numbers in both passes */
  int32_t *map = err == TASO_OK ? malloc(sizeof *map * ((size_t)f->nclasses + 1)) : NULL;
  int32_t *recs = map ? malloc(sizeof *recs * ((size_t)f->napps + 1) * (size_t)s->record) : NULL;
  int32_t *which = recs ? malloc(sizeof *which * ((size_t)f->napps + 1)) : NULL;
  bool *done = which ? calloc((size_t)f->napps + 1, sizeof *done) : NULL;
  if (err == TASO_OK && !done)
    err = taso_error(TASO_ERR_NOMEM, "eqsat: replay of %d applications", f->napps);
  for (int32_t c = 0; done && c < f->nclasses; c++)
    map[c] = c < n0 ? c : -1;
  taso_rule_guard_cached_only(s->opt->guard, true);
  int64_t made = 0;
  for (int it = 0, at = 0; it < f->niters && err == TASO_OK && !taso_eqsat_time_up(s); it++) {
    err = replay_iteration(s, f, at, f->iter_apps[it], map, recs, which, done, &made);
    at = f->iter_apps[it];
    if (err == TASO_OK && s->opt->progress)
      s->opt->progress(s->opt->progress_ctx, it + 1, s->eg.live, s->res->cost_before,
                       taso_search_now() - s->start);
  }
  /* an application whose left side came here only later (through another
   * route than the first pass's) is made in a sweep over all that are left */
  for (int sweep = 0; sweep < SWEEPS && err == TASO_OK && !taso_eqsat_time_up(s); sweep++) {
    int64_t before = made;
    err = holds_graph(s, &s->hoped, holds);
    if (err == TASO_OK && !*holds)
      err = replay_iteration(s, f, 0, f->napps, map, recs, which, done, &made);
    if (made == before) break;
  }
  taso_rule_guard_cached_only(s->opt->guard, false);
  if (err == TASO_OK) err = holds_graph(s, &s->hoped, holds); /* cheap: even past the time */
  s->res->eqsat_replayed = made;
  free(map);
  free(recs);
  free(which);
  free(done);
  return err;
}
