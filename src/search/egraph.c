/* The e-graph (egraph.h). */
#include "egraph.h"

#include <stdlib.h>
#include <string.h>

#include "hash.h"

void taso_egraph_free(taso_egraph_t *eg) {
  free(eg->nodes);
  free(eg->parent);
  free(eg->type);
  free(eg->folded);
  free(eg->grew);
  free(eg->type_id);
  free(eg->types.items);
  free(eg->types.slots);
  free(eg->params.items);
  free(eg->params.slots);
  free(eg->slots);
  free(eg->member_at);
  free(eg->members);
  free(eg->user_at);
  free(eg->users);
  free(eg->by_kind);
  free(eg->class_kinds);
  free(eg->reader_bits);
  free(eg->sibling);
  free(eg->kid_at);
  free(eg->kids);
  memset(eg, 0, sizeof *eg);
}

void taso_egraph_clear(taso_egraph_t *eg) {
  eg->nnodes = eg->nclasses = eg->live = eg->live_classes = eg->rebuilt_nodes = 0;
  eg->fresh_kinds = 0;
  if (eg->slots) memset(eg->slots, 0, sizeof *eg->slots * (size_t)eg->nslots);
  memset(eg->kind_at, 0, sizeof eg->kind_at);
}

int32_t taso_egraph_find(const taso_egraph_t *eg, int32_t c) {
  while (eg->parent[c] != c) {
    eg->parent[c] =
        eg->parent[eg->parent[c]]; /* path halving: the array is not the graph's shape */
    c = eg->parent[c];
  }
  return c;
}

/* A node's key words: kind, port, parameters (their number), canonical
 * operands. */
static uint64_t node_hash(const taso_egraph_t *eg, const taso_enode_t *n) {
  uint32_t w[6] = {(uint32_t)n->kind, (uint32_t)n->port, (uint32_t)n->pid};
  for (int a = 0; a < 3; a++)
    w[3 + a] = n->in[a] >= 0 ? (uint32_t)taso_egraph_find(eg, n->in[a]) : 0xffffffffu;
  return taso_hash_words(w, 6);
}

static bool node_equal(const taso_egraph_t *eg, const taso_enode_t *a, const taso_enode_t *b) {
  if (a->kind != b->kind || a->port != b->port || a->pid != b->pid) return false;
  for (int k = 0; k < 3; k++) {
    if ((a->in[k] < 0) != (b->in[k] < 0)) return false;
    if (a->in[k] >= 0 && taso_egraph_find(eg, a->in[k]) != taso_egraph_find(eg, b->in[k]))
      return false;
  }
  return true;
}

/* The slot of a node equal to n, or the empty slot where it would go. */
static int32_t slot_of(const taso_egraph_t *eg, const taso_enode_t *n) {
  uint32_t mask = (uint32_t)eg->nslots - 1, s = (uint32_t)node_hash(eg, n) & mask;
  while (eg->slots[s] && !node_equal(eg, &eg->nodes[eg->slots[s] - 1], n))
    s = (s + 1) & mask;
  return (int32_t)s;
}

/* Empties the hash-consing table, sized for need nodes. */
static taso_err_t clear_slots(taso_egraph_t *eg, int32_t need) {
  int32_t n = 1024;
  while (n < 2 * need)
    n *= 2;
  if (n != eg->nslots) {
    int32_t *s = realloc(eg->slots, sizeof *s * (size_t)n);
    if (!s) return taso_error(TASO_ERR_NOMEM, "e-graph table of %d slots", n);
    eg->slots = s;
    eg->nslots = n;
  }
  memset(eg->slots, 0, sizeof *eg->slots * (size_t)eg->nslots);
  return TASO_OK;
}

/* Keeps the table at most half full, re-inserting the live nodes. */
static taso_err_t grow_slots(taso_egraph_t *eg, int32_t need) {
  if (eg->nslots >= 2 * need) return TASO_OK;
  TASO_TRY(clear_slots(eg, need));
  for (int32_t i = 0; i < eg->nnodes; i++)
    if (!eg->nodes[i].dead) {
      int32_t s = slot_of(eg, &eg->nodes[i]);
      if (!eg->slots[s]) eg->slots[s] = i + 1;
    }
  return TASO_OK;
}

/* The number of item, a record of size bytes (a multiple of 4), in t:
 * added when new if add, else -1 when absent. */
static taso_err_t intern(taso_intern_t *t, const void *item, int32_t size, bool add, int32_t *id) {
  *id = -1;
  if (!add && !t->nslots) return TASO_OK;
  if (add && 2 * (t->n + 1) > t->nslots) {
    int32_t ns = t->nslots ? 2 * t->nslots : 256;
    int32_t *v = calloc((size_t)ns, sizeof *v);
    if (!v) return taso_error(TASO_ERR_NOMEM, "e-graph table of %d slots", ns);
    for (int32_t k = 0; k < t->n; k++) {
      uint32_t h = (uint32_t)taso_hash_words(t->items + (size_t)k * (size_t)size, (size_t)size / 4);
      for (h &= (uint32_t)(ns - 1); v[h]; h = (h + 1) & (uint32_t)(ns - 1)) {
      }
      v[h] = k + 1;
    }
    free(t->slots);
    t->slots = v;
    t->nslots = ns;
  }
  uint32_t mask = (uint32_t)t->nslots - 1;
  uint32_t h = (uint32_t)taso_hash_words(item, (size_t)size / 4) & mask;
  for (; t->slots[h]; h = (h + 1) & mask)
    if (!memcmp(t->items + (size_t)(t->slots[h] - 1) * (size_t)size, item, (size_t)size)) {
      *id = t->slots[h] - 1;
      return TASO_OK;
    }
  if (!add) return TASO_OK;
  if (t->n == t->cap) {
    int32_t cap = t->cap ? 2 * t->cap : 256;
    char *v = realloc(t->items, (size_t)size * (size_t)cap);
    if (!v) return taso_error(TASO_ERR_NOMEM, "e-graph table of %d records", cap);
    t->items = v;
    t->cap = cap;
  }
  memcpy(t->items + (size_t)t->n * (size_t)size, item, (size_t)size);
  t->slots[h] = t->n + 1;
  *id = t->n++;
  return TASO_OK;
}

int32_t taso_egraph_params_id(const taso_egraph_t *eg, const taso_params_t *p) {
  int32_t id = -1;
  intern((taso_intern_t *)&eg->params, p, sizeof *p, false, &id); /* a lookup: changes nothing */
  return id;
}

static taso_err_t new_class(taso_egraph_t *eg, const taso_tensor_t *type, int32_t *cls) {
  if (eg->nclasses == eg->class_cap) {
    int32_t cap = eg->class_cap ? 2 * eg->class_cap : 1024;
    int32_t *p = realloc(eg->parent, sizeof *p * (size_t)cap);
    if (p) eg->parent = p;
    taso_tensor_t *t = p ? realloc(eg->type, sizeof *t * (size_t)cap) : NULL;
    if (t) eg->type = t;
    bool *f = t ? realloc(eg->folded, sizeof *f * (size_t)cap) : NULL;
    if (f) eg->folded = f;
    bool *g = f ? realloc(eg->grew, sizeof *g * (size_t)cap) : NULL;
    if (g) eg->grew = g;
    int32_t *id = g ? realloc(eg->type_id, sizeof *id * (size_t)cap) : NULL;
    if (!id) return taso_error(TASO_ERR_NOMEM, "e-graph of %d classes", cap);
    eg->type_id = id;
    eg->class_cap = cap;
  }
  TASO_TRY(intern(&eg->types, type, sizeof *type, true, &eg->type_id[eg->nclasses]));
  *cls = eg->nclasses++;
  eg->parent[*cls] = *cls;
  eg->type[*cls] = *type;
  eg->folded[*cls] = false;
  eg->grew[*cls] = false;
  return TASO_OK;
}

taso_err_t taso_egraph_add(taso_egraph_t *eg, int32_t kind, int32_t port, const taso_params_t *p,
                           const int32_t *in, const taso_tensor_t *type, int32_t app, int32_t *cls,
                           bool *added) {
  int32_t pid = -1;
  return taso_egraph_add_pid(eg, kind, port, p, &pid, in, type, app, cls, added);
}

taso_err_t taso_egraph_add_pid(taso_egraph_t *eg, int32_t kind, int32_t port,
                               const taso_params_t *p, int32_t *pid, const int32_t *in,
                               const taso_tensor_t *type, int32_t app, int32_t *cls, bool *added) {
  if (*pid < 0) TASO_TRY(intern(&eg->params, p, sizeof *p, true, pid));
  taso_enode_t n = {
      .kind = kind, .port = port, .pid = *pid, .p = *p, .in = {-1, -1, -1}, .app = app};
  for (int a = 0; a < taso_ops[kind].arity; a++)
    n.in[a] = taso_egraph_find(eg, in[a]);
  TASO_TRY(grow_slots(eg, eg->nnodes + 1));
  int32_t s = slot_of(eg, &n);
  if (added) *added = !eg->slots[s];
  if (eg->slots[s]) {
    *cls = taso_egraph_find(eg, eg->nodes[eg->slots[s] - 1].cls);
    return TASO_OK;
  }
  if (eg->nnodes == eg->node_cap) {
    int32_t cap = eg->node_cap ? 2 * eg->node_cap : 1024;
    taso_enode_t *v = realloc(eg->nodes, sizeof *v * (size_t)cap);
    if (!v) return taso_error(TASO_ERR_NOMEM, "e-graph of %d nodes", cap);
    eg->nodes = v;
    eg->node_cap = cap;
  }
  TASO_TRY(new_class(eg, type, &n.cls));
  eg->nodes[eg->nnodes++] = n;
  eg->slots[s] = eg->nnodes;
  *cls = n.cls;
  return TASO_OK;
}

int32_t taso_egraph_lookup_pid(taso_egraph_t *eg, int32_t kind, int32_t port, int32_t pid,
                               const int32_t *in) {
  if (pid < 0) return -1;
  taso_enode_t n = {.kind = kind, .port = port, .pid = pid, .in = {-1, -1, -1}};
  for (int a = 0; a < taso_ops[kind].arity; a++)
    n.in[a] = taso_egraph_find(eg, in[a]);
  int32_t s = slot_of(eg, &n);
  return eg->slots[s] - 1;
}

int32_t taso_egraph_lookup_node(taso_egraph_t *eg, int32_t kind, int32_t port,
                                const taso_params_t *p, const int32_t *in) {
  return taso_egraph_lookup_pid(eg, kind, port, taso_egraph_params_id(eg, p), in);
}

int32_t taso_egraph_lookup(taso_egraph_t *eg, int32_t kind, int32_t port, const taso_params_t *p,
                           const int32_t *in) {
  int32_t e = taso_egraph_lookup_node(eg, kind, port, p, in);
  return e >= 0 ? taso_egraph_find(eg, eg->nodes[e].cls) : -1;
}

taso_err_t taso_egraph_union(taso_egraph_t *eg, int32_t a, int32_t b, bool *merged) {
  a = taso_egraph_find(eg, a);
  b = taso_egraph_find(eg, b);
  *merged = a != b;
  if (a == b) return TASO_OK;
  if (!taso_tensor_equal(&eg->type[a], &eg->type[b]))
    return taso_error(TASO_ERR_ARG, "e-graph: classes %d and %d of different types merged", a, b);
  if (b < a) { /* the older class stays the root: roots then follow the model's order */
    int32_t t = a;
    a = b;
    b = t;
  }
  eg->parent[b] = a;
  eg->grew[a] = true;
  return TASO_OK;
}

/* One congruence pass: every live node re-keyed on canonical operands; a
 * node equal to one before it is dead, and their classes merged. */
static taso_err_t congruence_pass(taso_egraph_t *eg, bool *changed) {
  *changed = false;
  TASO_TRY(clear_slots(eg, eg->nnodes));
  for (int32_t i = 0; i < eg->nnodes; i++) {
    taso_enode_t *n = &eg->nodes[i];
    if (n->dead) continue;
    for (int a = 0; a < 3; a++)
      if (n->in[a] >= 0) n->in[a] = taso_egraph_find(eg, n->in[a]);
    n->cls = taso_egraph_find(eg, n->cls);
    int32_t s = slot_of(eg, n);
    if (!eg->slots[s]) {
      eg->slots[s] = i + 1;
      continue;
    }
    bool merged;
    TASO_TRY(taso_egraph_union(eg, eg->nodes[eg->slots[s] - 1].cls, n->cls, &merged));
    *changed |= merged;
    n->dead = true;
  }
  return TASO_OK;
}

/* Which classes are computable from weights alone: some node of theirs
 * is a weight input, a constant, or an operator over such classes. */
static void mark_folded(taso_egraph_t *eg, const bool *is_weight) {
  for (int32_t c = 0; c < eg->nclasses; c++)
    eg->folded[c] = false;
  for (bool changed = true; changed;) {
    changed = false;
    for (int32_t i = 0; i < eg->nnodes; i++) {
      const taso_enode_t *n = &eg->nodes[i];
      if (n->dead || eg->folded[n->cls]) continue;
      bool f = n->kind == TASO_OP_INPUT ? is_weight[n->p.input] : true;
      for (int a = 0; a < taso_ops[n->kind].arity && f; a++)
        f = eg->folded[n->in[a]];
      if (f) eg->folded[n->cls] = changed = true;
    }
  }
}

/* Compressed rows: at[k] .. at[k+1] in v for key k of each item. */
static taso_err_t rows(int32_t nkeys, int32_t nitems, const int32_t *key, int32_t **at_out,
                       int32_t **v_out) {
  int32_t *at = realloc(*at_out, sizeof *at * (size_t)(nkeys + 1));
  if (at) *at_out = at;
  int32_t *v = at ? realloc(*v_out, sizeof *v * (size_t)(nitems + 1)) : NULL;
  if (!v) return taso_error(TASO_ERR_NOMEM, "e-graph index of %d entries", nitems);
  *v_out = v;
  memset(at, 0, sizeof *at * (size_t)(nkeys + 1));
  for (int32_t i = 0; i < nitems; i++)
    if (key[2 * i] >= 0) at[key[2 * i] + 1]++;
  for (int32_t k = 0; k < nkeys; k++)
    at[k + 1] += at[k];
  int32_t *fill = malloc(sizeof *fill * (size_t)(nkeys + 1));
  if (!fill) return taso_error(TASO_ERR_NOMEM, "e-graph index");
  memcpy(fill, at, sizeof *fill * (size_t)(nkeys + 1));
  for (int32_t i = 0; i < nitems; i++)
    if (key[2 * i] >= 0) v[fill[key[2 * i]]++] = key[2 * i + 1];
  free(fill);
  return TASO_OK;
}

/* The matcher's indexes over the live nodes. */
static taso_err_t index_nodes(taso_egraph_t *eg) {
  int32_t n = eg->nnodes, *pairs = calloc(2 * (size_t)(3 * n + 1), sizeof *pairs);
  uint32_t *kinds = realloc(eg->class_kinds, sizeof *kinds * (size_t)(eg->nclasses + 1));
  if (kinds) eg->class_kinds = kinds;
  uint64_t *bits = realloc(eg->reader_bits, sizeof *bits * (size_t)(eg->nclasses + 1));
  if (bits) eg->reader_bits = bits;
  if (!pairs || !kinds || !bits) {
    free(pairs);
    return taso_error(TASO_ERR_NOMEM, "e-graph index of %d nodes", n);
  }
  memset(kinds, 0, sizeof *kinds * (size_t)(eg->nclasses + 1));
  memset(bits, 0, sizeof *bits * (size_t)(eg->nclasses + 1));
  eg->live = eg->live_classes = 0;
  for (int32_t c = 0; c < eg->nclasses; c++)
    eg->live_classes += eg->parent[c] == c;
  for (int32_t i = 0; i < n; i++) {
    const taso_enode_t *e = &eg->nodes[i];
    pairs[2 * i] = e->dead ? -1 : e->cls;
    pairs[2 * i + 1] = i;
    if (!e->dead) {
      eg->live++;
      kinds[e->cls] |= 1u << e->kind;
      for (int a = 0; a < taso_ops[e->kind].arity; a++)
        bits[e->in[a]] |= taso_egraph_class_bit(e->cls);
    }
  }
  taso_err_t err = rows(eg->nclasses, n, pairs, &eg->member_at, &eg->members);
  for (int32_t i = 0; i < n && err == TASO_OK; i++) { /* users: one entry per distinct operand */
    const taso_enode_t *e = &eg->nodes[i];
    for (int a = 0; a < 3; a++) {
      bool first = e->in[a] >= 0 && !e->dead;
      for (int b = 0; b < a && first; b++)
        first = e->in[b] != e->in[a];
      pairs[2 * (3 * i + a)] = first ? e->in[a] : -1;
      pairs[2 * (3 * i + a) + 1] = i;
    }
  }
  if (err == TASO_OK) err = rows(eg->nclasses, 3 * n, pairs, &eg->user_at, &eg->users);
  for (int32_t i = 0; i < n && err == TASO_OK; i++) {
    pairs[2 * i] = eg->nodes[i].dead ? -1 : eg->nodes[i].kind;
    pairs[2 * i + 1] = i;
  }
  int32_t *kind_at = NULL;
  if (err == TASO_OK) err = rows(TASO_OP_COUNT, n, pairs, &kind_at, &eg->by_kind);
  if (err == TASO_OK) memcpy(eg->kind_at, kind_at, sizeof eg->kind_at);
  free(kind_at);
  free(pairs);
  /* the kid index: one entry per live node, operand and kind of that
   * operand's class */
  int32_t nkid = 0;
  for (int32_t i = 0; i < n && err == TASO_OK; i++) {
    const taso_enode_t *e = &eg->nodes[i];
    for (int a = 0; a < taso_ops[e->kind].arity && !e->dead; a++)
      nkid += __builtin_popcount(kinds[e->in[a]]);
  }
  pairs = err == TASO_OK ? malloc(sizeof *pairs * 2 * (size_t)(nkid + 1)) : NULL;
  if (err == TASO_OK && !pairs) err = taso_error(TASO_ERR_NOMEM, "e-graph index of %d", nkid);
  nkid = 0;
  for (int32_t i = 0; i < n && err == TASO_OK; i++) {
    const taso_enode_t *e = &eg->nodes[i];
    for (int a = 0; a < taso_ops[e->kind].arity && !e->dead; a++)
      for (uint32_t k = kinds[e->in[a]]; k; k &= k - 1) {
        pairs[2 * nkid] = TASO_EGRAPH_KID(e->kind, a, __builtin_ctz(k));
        pairs[2 * nkid++ + 1] = i;
      }
  }
  if (err == TASO_OK)
    err = rows(TASO_EGRAPH_KID(TASO_OP_COUNT, 0, 0), nkid, pairs, &eg->kid_at, &eg->kids);
  free(pairs);
  int32_t *sib = err == TASO_OK ? realloc(eg->sibling, sizeof *sib * (size_t)(n + 1)) : NULL;
  if (err == TASO_OK && !sib) err = taso_error(TASO_ERR_NOMEM, "e-graph index of %d nodes", n);
  if (sib) eg->sibling = sib;
  for (int32_t i = 0; i < n && err == TASO_OK; i++) { /* the slots are the last pass's */
    const taso_enode_t *e = &eg->nodes[i];
    int32_t o = e->dead || taso_ops[e->kind].outputs < 2
                    ? -1
                    : taso_egraph_lookup_pid(eg, e->kind, 1 - e->port, e->pid, e->in);
    sib[i] = o >= 0 ? eg->nodes[o].cls : -1; /* canonical: rebuilt */
  }
  return err;
}

taso_err_t taso_egraph_rebuild(taso_egraph_t *eg, const bool *is_weight) {
  for (bool changed = true; changed;)
    TASO_TRY(congruence_pass(eg, &changed));
  for (int32_t i = 0; i < eg->nnodes; i++) { /* the last pass's merges canonicalized */
    taso_enode_t *n = &eg->nodes[i];
    n->cls = taso_egraph_find(eg, n->cls);
    for (int a = 0; a < 3; a++)
      if (n->in[a] >= 0) n->in[a] = taso_egraph_find(eg, n->in[a]);
  }
  mark_folded(eg, is_weight);
  eg->fresh_kinds = 0;
  for (int32_t i = 0; i < eg->nnodes; i++) {
    const taso_enode_t *n = &eg->nodes[i];
    bool fresh = !n->dead && (i >= eg->rebuilt_nodes || eg->grew[n->cls]);
    for (int a = 0; a < 3 && !n->dead && !fresh; a++)
      fresh = n->in[a] >= 0 && eg->grew[n->in[a]];
    if (fresh) eg->fresh_kinds |= 1u << n->kind;
  }
  memset(eg->grew, 0, sizeof *eg->grew * (size_t)eg->nclasses);
  eg->rebuilt_nodes = eg->nnodes;
  return index_nodes(eg);
}

taso_err_t taso_egraph_of_graph(taso_egraph_t *eg, const taso_graph_t *g,
                                const taso_tensor_t *types, const bool *is_weight, int32_t *roots) {
  int32_t *cls = malloc(sizeof *cls * 2 * (size_t)(g->nnodes + 1));
  if (!cls) return taso_error(TASO_ERR_NOMEM, "e-graph of %d nodes", g->nnodes);
  taso_err_t err = TASO_OK;
  for (int i = 0; i < g->nnodes && err == TASO_OK; i++) {
    const taso_node_t *n = &g->nodes[i];
    int32_t in[3] = {-1, -1, -1};
    for (int a = 0; a < taso_ops[n->kind].arity; a++)
      in[a] = cls[n->in[a]];
    for (int port = 0; port < 2 && err == TASO_OK; port++) {
      cls[2 * i + port] = -1;
      if (port < (n->kind == TASO_OP_INPUT ? 1 : taso_ops[n->kind].outputs))
        err = taso_egraph_add(eg, n->kind, port, &n->p, in, &types[2 * i + port], -1,
                              &cls[2 * i + port], NULL);
    }
  }
  for (int o = 0; o < g->noutputs && err == TASO_OK; o++)
    roots[o] = cls[g->outputs[o]];
  free(cls);
  return err == TASO_OK ? taso_egraph_rebuild(eg, is_weight) : err;
}
