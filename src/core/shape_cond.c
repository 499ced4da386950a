#include "shape_cond.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Building a condition: the atoms, a union-find over them, and which
 * components hold convolution channels. */
typedef struct {
  taso_shape_cond_t *c;
  const taso_graph_t *g[2];      /* lhs, rhs */
  const taso_tensor_t *types[2]; /* their types at the proved instance */
  int32_t *parent;               /* union-find */
  bool *grouped;                 /* per root: divisibility is compared */
  int next_param;                /* next parameter atom to hand out */
} builder_t;

/* Parameter atoms a node contributes: its kernel and stride per spatial
 * axis, and the literal 1 per spatial axis (guards ask "is this axis 1":
 * X9, X20-X22) and, for conv2d, on its channels (depthwise weights). */
static int param_atoms(taso_op_kind_t kind) {
  switch (kind) {
  case TASO_OP_CONV2D:
    return 5;
  case TASO_OP_POOL_AVG:
  case TASO_OP_POOL_MAX:
    return 6;
  case TASO_OP_ENLARGE:
  case TASO_OP_CONST_POOL:
  case TASO_OP_CONST_ICONV:
    return 4;
  default:
    return 0;
  }
}

static int ports(const taso_node_t *n) {
  return n->kind == TASO_OP_INPUT ? 1 : taso_ops[n->kind].outputs;
}

static int slot_of(const builder_t *b, int side, taso_ref_t ref) {
  return (side ? b->c->nlhs_slots : 0) + ref;
}

/* Atom of axis a of tensor ref on a side; -1 past its rank. */
static int atom(const builder_t *b, int side, taso_ref_t ref, int a) {
  int s = slot_of(b, side, ref);
  return a < b->c->slot_rank[s] ? b->c->slot_atom[s] + a : -1;
}

static int find(int32_t *parent, int x) {
  while (parent[x] != x)
    x = parent[x] = parent[parent[x]];
  return x;
}

static void link(builder_t *b, int x, int y) {
  if (x < 0 || y < 0) return;
  int rx = find(b->parent, x), ry = find(b->parent, y);
  if (rx == ry) return;
  b->parent[rx] = ry;
  b->grouped[ry] = b->grouped[ry] || b->grouped[rx];
}

static void link_axes(builder_t *b, int side, taso_ref_t x, taso_ref_t y) {
  for (int a = 0; a < TASO_MAX_RANK; a++)
    link(b, atom(b, side, x, a), atom(b, side, y, a));
}

static int new_param(builder_t *b, int32_t value) {
  int p = b->next_param++;
  b->c->value[p] = value;
  return p;
}

/* Spatial axis ax (0 height, 1 width) of a window operator: the output,
 * its input and weight (when given), its kernel and stride (when it has
 * them) and the literal 1 form one component. */
static void link_window(builder_t *b, int side, const taso_node_t *n, taso_ref_t o, int ax,
                        taso_ref_t x, taso_ref_t w) {
  int oa = atom(b, side, o, 2 + ax);
  if (x >= 0) link(b, oa, atom(b, side, x, 2 + ax));
  if (w >= 0) link(b, oa, atom(b, side, w, 2 + ax));
  if (taso_ops[n->kind].params & TASO_P_KERNEL) link(b, oa, new_param(b, n->p.kernel[ax]));
  if (taso_ops[n->kind].params & TASO_P_STRIDE) link(b, oa, new_param(b, n->p.stride[ax]));
  link(b, oa, new_param(b, 1));
}

/* conv2d: the output's channels come from the weight's axis 0, and the
 * group count is input channels over the weight's axis 1, which must divide
 * the output channels: all four are one grouped component. */
static void link_conv(builder_t *b, int side, const taso_node_t *n, taso_ref_t o) {
  taso_ref_t x = n->in[0], w = n->in[1];
  link(b, atom(b, side, o, 0), atom(b, side, x, 0));
  int ch = atom(b, side, x, 1);
  link(b, ch, atom(b, side, w, 1));
  link(b, ch, atom(b, side, w, 0));
  link(b, ch, atom(b, side, o, 1));
  link(b, ch, new_param(b, 1));
  b->grouped[find(b->parent, ch)] = true;
  for (int ax = 0; ax < 2; ax++)
    link_window(b, side, n, o, ax, x, w);
}

/* The atoms node i's semantics compares or combines. */
static void link_node(builder_t *b, int side, int i) {
  const taso_node_t *n = &b->g[side]->nodes[i];
  taso_ref_t o = TASO_REF(i, 0), x = n->in[0], y = n->in[1];
  switch ((taso_op_kind_t)n->kind) {
  case TASO_OP_EWADD:
  case TASO_OP_EWMUL:
  case TASO_OP_CONCAT: /* the concat axis too: its size is the sum, its tree the two sizes */
    link_axes(b, side, o, x);
    link_axes(b, side, o, y);
    break;
  case TASO_OP_RELU:
  case TASO_OP_SMUL:
    link_axes(b, side, o, x);
    break;
  case TASO_OP_SPLIT:
    link_axes(b, side, o, x);
    link_axes(b, side, o + 1, x);
    break;
  case TASO_OP_TRANSPOSE:
    link(b, atom(b, side, o, 0), atom(b, side, x, 1));
    link(b, atom(b, side, o, 1), atom(b, side, x, 0));
    break;
  case TASO_OP_MATMUL:
    link(b, atom(b, side, o, 0), atom(b, side, x, 0));
    link(b, atom(b, side, o, 1), atom(b, side, y, 1));
    link(b, atom(b, side, x, 1), atom(b, side, y, 0));
    break;
  case TASO_OP_CONV2D:
    link_conv(b, side, n, o);
    break;
  case TASO_OP_POOL_AVG:
  case TASO_OP_POOL_MAX:
  case TASO_OP_ENLARGE:
    link(b, atom(b, side, o, 0), atom(b, side, x, 0));
    link(b, atom(b, side, o, 1), atom(b, side, x, 1));
    for (int ax = 0; ax < 2; ax++)
      link_window(b, side, n, o, ax, x, -1);
    break;
  case TASO_OP_CONST_ICONV: /* the identity: as many outputs as inputs */
    link(b, atom(b, side, o, 0), atom(b, side, o, 1));
    /* fall through */
  case TASO_OP_CONST_POOL:
    for (int ax = 0; ax < 2; ax++)
      link_window(b, side, n, o, ax, -1, -1);
    break;
  case TASO_OP_CONST_IMM:
    link(b, atom(b, side, o, 0), atom(b, side, o, 1));
    break;
  default:
    break; /* inputs, const_one (a fixed shape): nothing compared */
  }
}

/* The same input on both sides is one tensor. */
static void link_inputs(builder_t *b) {
  for (int i = 0; i < b->g[0]->nnodes; i++) {
    const taso_node_t *l = &b->g[0]->nodes[i];
    if (l->kind != TASO_OP_INPUT) continue;
    for (int j = 0; j < b->g[1]->nnodes; j++) {
      const taso_node_t *r = &b->g[1]->nodes[j];
      if (r->kind == TASO_OP_INPUT && r->p.input == l->p.input)
        for (int a = 0; a < TASO_MAX_RANK; a++)
          link(b, atom(b, 0, TASO_REF(i, 0), a), atom(b, 1, TASO_REF(j, 0), a));
    }
  }
}

/* Slots and atoms of both sides at the proved instance. */
static taso_err_t lay_out(builder_t *b) {
  taso_shape_cond_t *c = b->c;
  c->nlhs_slots = 2 * b->g[0]->nnodes;
  c->nslots = c->nlhs_slots + 2 * b->g[1]->nnodes;
  c->slot_atom = malloc(sizeof *c->slot_atom * (size_t)(c->nslots + 1));
  c->slot_rank = malloc(sizeof *c->slot_rank * (size_t)(c->nslots + 1));
  if (!c->slot_atom || !c->slot_rank) return taso_error(TASO_ERR_NOMEM, "shape condition");
  int n = 0;
  c->nparams = 0;
  for (int side = 0; side < 2; side++)
    for (int i = 0; i < b->g[side]->nnodes; i++) {
      const taso_node_t *node = &b->g[side]->nodes[i];
      c->nparams += param_atoms(node->kind);
      for (int p = 0; p < 2; p++) {
        int s = slot_of(b, side, TASO_REF(i, p));
        bool exists = p < ports(node);
        c->slot_atom[s] = exists ? n : -1;
        c->slot_rank[s] = exists ? b->types[side][TASO_REF(i, p)].rank : 0;
        n += c->slot_rank[s];
      }
    }
  c->natoms = n + c->nparams;
  b->next_param = n;
  return TASO_OK;
}

/* Values of the tensor atoms; parents and flags initialised. */
static taso_err_t fill_atoms(builder_t *b) {
  taso_shape_cond_t *c = b->c;
  size_t na = (size_t)c->natoms + 1;
  c->value = malloc(sizeof *c->value * na);
  c->comp = malloc(sizeof *c->comp * na);
  b->parent = malloc(sizeof *b->parent * na);
  b->grouped = calloc(na, sizeof *b->grouped);
  if (!c->value || !c->comp || !b->parent || !b->grouped)
    return taso_error(TASO_ERR_NOMEM, "shape condition");
  for (int a = 0; a < c->natoms; a++)
    b->parent[a] = a;
  for (int s = 0; s < c->nslots; s++)
    for (int a = 0; a < c->slot_rank[s]; a++) {
      const taso_tensor_t *t =
          s < c->nlhs_slots ? &b->types[0][s] : &b->types[1][s - c->nlhs_slots];
      c->value[c->slot_atom[s] + a] = t->dim[a];
    }
  return TASO_OK;
}

static int8_t divides(int32_t x, int32_t y) {
  return (int8_t)((x % y == 0) | (y % x == 0) << 1);
}

/* Every pair of atoms of one component, except two parameters (fixed). */
static taso_err_t record_pairs(builder_t *b) {
  taso_shape_cond_t *c = b->c;
  int tensors = c->natoms - c->nparams;
  int64_t cap = 0;
  for (int a = 0; a < c->natoms; a++)
    c->comp[a] = find(b->parent, a);
  for (int a = 0; a < tensors; a++)
    for (int x = a + 1; x < c->natoms; x++)
      cap += c->comp[a] == c->comp[x];
  c->pair = malloc(sizeof *c->pair * (size_t)(cap + 1));
  if (!c->pair) return taso_error(TASO_ERR_NOMEM, "shape condition");
  c->npairs = 0;
  for (int a = 0; a < tensors; a++)
    for (int x = a + 1; x < c->natoms; x++) {
      if (c->comp[a] != c->comp[x]) continue;
      int32_t va = c->value[a], vx = c->value[x];
      c->pair[c->npairs++] =
          (taso_shape_pair_t){.a = a,
                              .b = x,
                              .order = (int8_t)((va > vx) - (va < vx)),
                              .divides = b->grouped[c->comp[a]] ? divides(va, vx) : -1};
    }
  return TASO_OK;
}

static taso_err_t build(builder_t *b) {
  TASO_TRY(lay_out(b));
  TASO_TRY(fill_atoms(b));
  for (int side = 0; side < 2; side++)
    for (int i = 0; i < b->g[side]->nnodes; i++)
      link_node(b, side, i);
  link_inputs(b);
  return record_pairs(b);
}

static taso_err_t infer_both(const taso_graph_t *lhs, const taso_graph_t *rhs,
                             const taso_inputs_t *in, taso_tensor_t **tl, taso_tensor_t **tr) {
  *tl = malloc(sizeof **tl * (size_t)(2 * lhs->nnodes + 1));
  *tr = malloc(sizeof **tr * (size_t)(2 * rhs->nnodes + 1));
  if (!*tl || !*tr) return taso_error(TASO_ERR_NOMEM, "shape condition");
  TASO_TRY(taso_graph_infer(lhs, in, *tl));
  return taso_graph_infer(rhs, in, *tr);
}

taso_err_t taso_shape_cond_of(const taso_graph_t *lhs, const taso_graph_t *rhs,
                              const taso_inputs_t *in, taso_shape_cond_t *cond) {
  memset(cond, 0, sizeof *cond);
  builder_t b = {.c = cond, .g = {lhs, rhs}};
  taso_tensor_t *tl = NULL, *tr = NULL;
  taso_err_t err = infer_both(lhs, rhs, in, &tl, &tr);
  b.types[0] = tl;
  b.types[1] = tr;
  if (err == TASO_OK) err = build(&b);
  free(tl);
  free(tr);
  free(b.parent);
  free(b.grouped);
  if (err != TASO_OK) taso_shape_cond_free(cond);
  return err;
}

void taso_shape_cond_free(taso_shape_cond_t *cond) {
  free(cond->value);
  free(cond->comp);
  free(cond->slot_atom);
  free(cond->slot_rank);
  free(cond->pair);
  memset(cond, 0, sizeof *cond);
}

/* Value of an atom at the match: a tensor axis from the types, a parameter
 * as proved (parameters are part of the pattern). */
static int32_t value_at(const taso_shape_cond_t *c, const taso_tensor_t *tl,
                        const taso_tensor_t *tr, const int32_t *slot_of_atom, int a) {
  int s = slot_of_atom[a];
  if (s < 0) return c->value[a];
  const taso_tensor_t *t = s < c->nlhs_slots ? &tl[s] : &tr[s - c->nlhs_slots];
  return t->dim[a - c->slot_atom[s]];
}

/* Per atom, its slot (-1 for parameters), recomputed from the slot table. */
static void atom_slots(const taso_shape_cond_t *c, int32_t *out) {
  for (int a = 0; a < c->natoms; a++)
    out[a] = -1;
  for (int s = 0; s < c->nslots; s++)
    for (int a = 0; a < c->slot_rank[s]; a++)
      out[c->slot_atom[s] + a] = s;
}

static bool ranks_match(const taso_shape_cond_t *c, const taso_tensor_t *tl,
                        const taso_tensor_t *tr) {
  for (int s = 0; s < c->nslots; s++) {
    if (c->slot_atom[s] < 0) continue;
    const taso_tensor_t *t = s < c->nlhs_slots ? &tl[s] : &tr[s - c->nlhs_slots];
    if (t->rank != c->slot_rank[s]) return false;
  }
  return true;
}

bool taso_shape_cond_holds(const taso_shape_cond_t *cond, const taso_tensor_t *lhs_types,
                           const taso_tensor_t *rhs_types) {
  if (!ranks_match(cond, lhs_types, rhs_types)) return false;
  int32_t stack[256],
      *slots = cond->natoms <= 256 ? stack : malloc(sizeof *slots * (size_t)cond->natoms);
  if (!slots) return false; /* out of memory: refuse, never apply unchecked */
  atom_slots(cond, slots);
  bool ok = true;
  for (int p = 0; p < cond->npairs && ok; p++) {
    const taso_shape_pair_t *q = &cond->pair[p];
    int32_t va = value_at(cond, lhs_types, rhs_types, slots, q->a);
    int32_t vb = value_at(cond, lhs_types, rhs_types, slots, q->b);
    ok = q->order == (va > vb) - (va < vb) && (q->divides < 0 || q->divides == divides(va, vb));
  }
  if (slots != stack) free(slots);
  return ok;
}

taso_err_t taso_shape_cond_holds_at(const taso_shape_cond_t *cond, const taso_graph_t *lhs,
                                    const taso_graph_t *rhs, const taso_inputs_t *at, bool *holds) {
  taso_tensor_t *tl = NULL, *tr = NULL;
  taso_err_t err = infer_both(lhs, rhs, at, &tl, &tr);
  *holds = err == TASO_OK && taso_shape_cond_holds(cond, tl, tr);
  free(tl);
  free(tr);
  /* a side that does not type-check there is no error: the rule does not apply */
  return err == TASO_ERR_NOMEM ? err : TASO_OK;
}

/* "i1.2" for an axis of an lhs input, the value for a parameter; NULL
 * (not printed) for anything else. */
static const char *atom_name(const taso_shape_cond_t *c, const taso_graph_t *lhs,
                             const taso_inputs_t *in, const int32_t *slots, int a, char *buf,
                             int len) {
  int s = slots[a];
  if (s < 0) {
    snprintf(buf, (size_t)len, "%d", c->value[a]);
    return buf;
  }
  if (s >= c->nlhs_slots || lhs->nodes[s / 2].kind != TASO_OP_INPUT) return NULL;
  snprintf(buf, (size_t)len, "%s.%d", in->v[lhs->nodes[s / 2].p.input].name, a - c->slot_atom[s]);
  return buf;
}

/* Whether item is already one entry of the comma-separated list. */
static bool listed(const char *list, const char *item) {
  size_t k = strlen(item);
  for (const char *p = strstr(list, item); p; p = strstr(p + 1, item))
    if ((p == list || p[-1] == ' ') && (p[k] == ',' || p[k] == 0)) return true;
  return false;
}

int taso_shape_cond_format(const taso_shape_cond_t *cond, const taso_graph_t *lhs,
                           const taso_graph_t *rhs, const taso_inputs_t *in, char *buf, int len) {
  (void)rhs;
  int32_t *slots = malloc(sizeof *slots * (size_t)(cond->natoms + 1));
  if (!slots) return 0;
  atom_slots(cond, slots);
  int n = 0;
  if (len > 0) buf[0] = 0;
  for (int p = 0; p < cond->npairs; p++) {
    const taso_shape_pair_t *q = &cond->pair[p];
    char na[40], nb[40];
    const char *x = atom_name(cond, lhs, in, slots, q->a, na, sizeof na);
    const char *y = atom_name(cond, lhs, in, slots, q->b, nb, sizeof nb);
    if (!x || !y) continue;
    const char *op = q->order < 0 ? "<" : q->order > 0 ? ">" : "=";
    /* divisibility by a parameter (the literal 1) says nothing */
    bool dv = q->divides >= 0 && q->order != 0 && slots[q->a] >= 0 && slots[q->b] >= 0;
    char item[128];
    snprintf(item, sizeof item, "%s %s %s%s", x, op, y,
             !dv              ? ""
             : q->divides & 1 ? " (divisible)"
             : q->divides & 2 ? " (divides)"
                              : " (neither divides)");
    if (n < len && listed(buf, item)) continue; /* several parameters of one value */
    n += snprintf(buf + (n < len ? n : len), (size_t)(n < len ? len - n : 0), "%s%s", n ? ", " : "",
                  item);
  }
  free(slots);
  return n;
}
