/*
 * Rules from substitution rows (rules.h): both directions of each proved
 * row, over one merged input table, each with its shape condition.
 */
#include "rules.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

_Static_assert(TASO_OP_COUNT <= 32, "taso_rule_t.kinds holds one bit per operator kind");

uint32_t taso_graph_kinds(const taso_graph_t *g) {
  uint32_t k = 0;
  for (int i = 0; i < g->nnodes; i++)
    if (g->nodes[i].kind != TASO_OP_INPUT) k |= 1u << g->nodes[i].kind;
  return k;
}

/* Whether every input rhs reads is one lhs binds: a rewrite must know
 * what to put there. */
static bool inputs_bound(const taso_graph_t *lhs, const taso_graph_t *rhs) {
  for (int i = 0; i < rhs->nnodes; i++) {
    if (rhs->nodes[i].kind != TASO_OP_INPUT) continue;
    bool found = false;
    for (int j = 0; j < lhs->nnodes && !found; j++)
      found = lhs->nodes[j].kind == TASO_OP_INPUT && lhs->nodes[j].p.input == rhs->nodes[i].p.input;
    if (!found) return false;
  }
  return true;
}

taso_err_t taso_rule_init(taso_rule_t *rule, const taso_graph_t *lhs, const taso_graph_t *rhs,
                          const taso_inputs_t *in, int64_t row, bool reversed) {
  memset(rule, 0, sizeof *rule);
  taso_graph_init(&rule->lhs);
  taso_graph_init(&rule->rhs);
  rule->row = row;
  rule->reversed = reversed;
  rule->kinds = taso_graph_kinds(lhs);
  TASO_TRY(taso_graph_copy(&rule->lhs, lhs));
  TASO_TRY(taso_graph_copy(&rule->rhs, rhs));
  return taso_shape_cond_of(&rule->lhs, &rule->rhs, in, &rule->cond);
}

void taso_rule_free(taso_rule_t *rule) {
  taso_graph_free(&rule->lhs);
  taso_graph_free(&rule->rhs);
  taso_shape_cond_free(&rule->cond);
}

static taso_err_t add_rule(taso_rules_t *r, const taso_graph_t *lhs, const taso_graph_t *rhs,
                           int64_t row, bool reversed) {
  if (!taso_graph_kinds(lhs) || !inputs_bound(lhs, rhs) || lhs->noutputs != rhs->noutputs)
    return TASO_OK;
  return taso_rule_init(&r->v[r->n++], lhs, rhs, &r->inputs, row, reversed);
}

/* The index in rules->inputs of a file's input: an entry of the same name
 * and shape, else a new one, named NAME_2, NAME_3... when another file
 * gave the name another shape (re-proofs name their constants so). */
static taso_err_t merged_input(taso_rules_t *rules, const taso_input_t *in, int *index) {
  char name[TASO_NAME_LEN];
  snprintf(name, sizeof name, "%s", in->name);
  for (int k = 2;; k++) {
    int at = taso_inputs_find(&rules->inputs, name);
    if (at < 0) break;
    const taso_tensor_t *t = &rules->inputs.v[at].type;
    if (t->rank == in->type.rank && !memcmp(t->dim, in->type.dim, sizeof t->dim)) {
      *index = at;
      return TASO_OK;
    }
    if (snprintf(name, sizeof name, "%.*s_%d", TASO_NAME_LEN - 5, in->name, k) >= TASO_NAME_LEN)
      return taso_error(TASO_ERR_LIMIT, "input '%s' in too many shapes", in->name);
  }
  *index = rules->inputs.n;
  return taso_inputs_add(&rules->inputs, name, in->type.rank, in->type.dim);
}

/* g with its inputs renumbered by map, into out (initialized). */
static taso_err_t remap_inputs(const taso_graph_t *g, const int *map, taso_graph_t *out) {
  TASO_TRY(taso_graph_copy(out, g));
  for (int i = 0; i < out->nnodes; i++)
    if (out->nodes[i].kind == TASO_OP_INPUT) out->nodes[i].p.input = map[out->nodes[i].p.input];
  return TASO_OK;
}

taso_err_t taso_rules_add(taso_rules_t *rules, const taso_inputs_t *inputs,
                          const taso_graph_t *graphs, int64_t ngraphs, const taso_subst_t *rows,
                          int64_t nrows, int64_t row_base) {
  taso_rule_t *v = realloc(rules->v, sizeof *v * (size_t)(rules->n + 2 * nrows + 1));
  if (!v) return taso_error(TASO_ERR_NOMEM, "%lld rules", (long long)(rules->n + 2 * nrows));
  rules->v = v;
  int *map = malloc(sizeof *map * (size_t)(inputs->n + 1));
  if (!map) return taso_error(TASO_ERR_NOMEM, "input map");
  taso_err_t err = TASO_OK;
  for (int i = 0; i < inputs->n && err == TASO_OK; i++)
    err = merged_input(rules, &inputs->v[i], &map[i]);
  taso_graph_t src, dst;
  taso_graph_init(&src);
  taso_graph_init(&dst);
  for (int64_t i = 0; i < nrows && err == TASO_OK; i++) {
    if (rows[i].verdict != TASO_VERDICT_PROVED) continue;
    if (rows[i].src < 0 || rows[i].src >= ngraphs || rows[i].dst < 0 || rows[i].dst >= ngraphs) {
      err = taso_error(TASO_ERR_FORMAT, "substitution row %lld names a graph outside the set",
                       (long long)i);
      break;
    }
    err = remap_inputs(&graphs[rows[i].src], map, &src);
    if (err == TASO_OK) err = remap_inputs(&graphs[rows[i].dst], map, &dst);
    if (err == TASO_OK) err = add_rule(rules, &src, &dst, row_base + i, false);
    if (err == TASO_OK) err = add_rule(rules, &dst, &src, row_base + i, true);
  }
  taso_graph_free(&src);
  taso_graph_free(&dst);
  free(map);
  return err;
}

taso_err_t taso_rules_make(const taso_inputs_t *inputs, const taso_graph_t *graphs, int64_t ngraphs,
                           const taso_subst_t *rows, int64_t nrows, taso_rules_t *rules) {
  memset(rules, 0, sizeof *rules);
  return taso_rules_add(rules, inputs, graphs, ngraphs, rows, nrows, 0);
}

void taso_rules_free(taso_rules_t *rules) {
  for (int i = 0; i < rules->n; i++)
    taso_rule_free(&rules->v[i]);
  free(rules->v);
  taso_inputs_free(&rules->inputs);
  memset(rules, 0, sizeof *rules);
}

int taso_rule_format(const taso_rules_t *rules, int i, char *buf, int len) {
  const taso_rule_t *r = &rules->v[i];
  int n = taso_graph_format(&r->lhs, &rules->inputs, buf, len);
  int at = n < len ? n : (len > 0 ? len - 1 : 0);
  n += snprintf(buf + at, (size_t)(len - at > 0 ? len - at : 0), " => ");
  at = n < len ? n : (len > 0 ? len - 1 : 0);
  return n + taso_graph_format(&r->rhs, &rules->inputs, buf + at, len - at > 0 ? len - at : 0);
}
