#include "graph.h"

#include <ctype.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hash.h"

/* ---- input tables ------------------------------------------------------- */

void taso_inputs_free(taso_inputs_t *in) {
  free(in->v);
  in->v = NULL;
  in->n = 0;
}

int taso_inputs_find(const taso_inputs_t *in, const char *name) {
  for (int i = 0; i < in->n; i++)
    if (strcmp(in->v[i].name, name) == 0) return i;
  return -1;
}

taso_err_t taso_inputs_add(taso_inputs_t *in, const char *name, int rank, const int32_t *dim) {
  if (strlen(name) == 0 || strlen(name) >= TASO_NAME_LEN)
    return taso_error(TASO_ERR_ARG, "input name '%s' must have 1 to %d characters", name,
                      TASO_NAME_LEN - 1);
  if (taso_inputs_find(in, name) >= 0)
    return taso_error(TASO_ERR_ARG, "input '%s' defined twice", name);
  if (taso_op_lookup(name) != TASO_OP_COUNT || !strcmp(name, "split0") || !strcmp(name, "split1"))
    return taso_error(TASO_ERR_ARG, "input name '%s' is an operator name", name);
  if (rank < 0 || rank > TASO_MAX_RANK)
    return taso_error(TASO_ERR_SHAPE, "input '%s': rank %d out of range 0..%d", name, rank,
                      TASO_MAX_RANK);
  for (int i = 0; i < rank; i++)
    if (dim[i] < 1)
      return taso_error(TASO_ERR_SHAPE, "input '%s': size %d on axis %d", name, dim[i], i);
  taso_input_t *v = realloc(in->v, sizeof *v * (in->n + 1));
  if (!v) return taso_error(TASO_ERR_NOMEM, "input table");
  in->v = v;
  memset(&v[in->n], 0, sizeof v[in->n]);
  strcpy(v[in->n].name, name);
  v[in->n].type = taso_tensor_make(rank, dim);
  in->n++;
  return TASO_OK;
}

/* ---- graphs ------------------------------------------------------------- */

void taso_graph_init(taso_graph_t *g) {
  memset(g, 0, sizeof *g);
}

void taso_graph_free(taso_graph_t *g) {
  free(g->nodes);
  free(g->outputs);
  taso_graph_init(g);
}

void taso_graph_clear(taso_graph_t *g) {
  g->nnodes = 0;
  g->noutputs = 0;
}

static taso_err_t grow(void **v, int *cap, int need, size_t elem) {
  if (need <= *cap) return TASO_OK;
  int cap2 = *cap ? *cap * 2 : 8;
  while (cap2 < need)
    cap2 *= 2;
  void *p = realloc(*v, elem * cap2);
  if (!p) return taso_error(TASO_ERR_NOMEM, "graph of %d nodes", need);
  *v = p;
  *cap = cap2;
  return TASO_OK;
}

taso_err_t taso_graph_copy(taso_graph_t *dst, const taso_graph_t *src) {
  taso_graph_clear(dst);
  TASO_TRY(grow((void **)&dst->nodes, &dst->node_cap, src->nnodes, sizeof *dst->nodes));
  TASO_TRY(grow((void **)&dst->outputs, &dst->out_cap, src->noutputs, sizeof *dst->outputs));
  if (src->nnodes) memcpy(dst->nodes, src->nodes, sizeof *src->nodes * src->nnodes);
  if (src->noutputs) memcpy(dst->outputs, src->outputs, sizeof *src->outputs * src->noutputs);
  dst->nnodes = src->nnodes;
  dst->noutputs = src->noutputs;
  return TASO_OK;
}

_Static_assert(sizeof(taso_node_t) % 4 == 0, "a node is 4-byte words");

uint64_t taso_node_params_hash(const taso_node_t *n) {
  return taso_hash_words(n, offsetof(taso_node_t, in) / 4);
}

/* A node's index hash: its params hash with its operands mixed in. */
static uint64_t index_hash(uint64_t params, const taso_node_t *n) {
  uint64_t h = taso_mix64(params ^ ((uint64_t)(uint32_t)n->in[0] << 32 | (uint32_t)n->in[1]));
  return taso_mix64(h ^ (uint32_t)n->in[2]);
}

/* The index slot holding a node equal to n (index hash h), or the empty
 * slot for it; a slot's tag (the hash's high half) spares comparing
 * nodes that differ only in their operands. */
static int index_slot(const taso_graph_t *g, const taso_graph_index_t *ix, const taso_node_t *n,
                      uint64_t h) {
  int mask = ix->nslots - 1, at = (int)(h & (uint64_t)mask);
  uint32_t tag = (uint32_t)(h >> 32);
  while (ix->slots[at] &&
         (ix->tags[at] != tag || memcmp(&g->nodes[ix->slots[at] - 1], n, sizeof *n) != 0))
    at = (at + 1) & mask;
  return at;
}

/* Rehashes every node of g into an index of at least twice its size. */
static taso_err_t index_fit(const taso_graph_t *g, taso_graph_index_t *ix, int need) {
  if (ix->nslots >= 2 * need && ix->indexed == g->nnodes) return TASO_OK;
  if (ix->nslots < 2 * need) {
    int n = ix->nslots ? ix->nslots : 256;
    while (n < 2 * need)
      n *= 2;
    int32_t *slots = realloc(ix->slots, sizeof *slots * (size_t)n);
    if (slots) ix->slots = slots;
    uint32_t *tags = slots ? realloc(ix->tags, sizeof *tags * (size_t)n) : NULL;
    if (!tags) return taso_error(TASO_ERR_NOMEM, "node index of %d nodes", need);
    ix->tags = tags;
    ix->nslots = n;
  }
  memset(ix->slots, 0, sizeof *ix->slots * (size_t)ix->nslots);
  for (int i = 0; i < g->nnodes; i++) {
    const taso_node_t *n = &g->nodes[i];
    uint64_t h = index_hash(taso_node_params_hash(n), n);
    int at = index_slot(g, ix, n, h);
    ix->slots[at] = i + 1;
    ix->tags[at] = (uint32_t)(h >> 32);
  }
  ix->indexed = g->nnodes;
  return TASO_OK;
}

void taso_graph_index_free(taso_graph_index_t *ix) {
  free(ix->slots);
  free(ix->tags);
  memset(ix, 0, sizeof *ix);
}

/* Adds n unless g has it; with an index (and n's params hash), found in
 * constant time. */
static taso_err_t add_node(taso_graph_t *g, taso_graph_index_t *ix, const taso_node_t *n,
                           uint64_t params, taso_ref_t *ref) {
  int slot = -1;
  uint64_t h = 0;
  if (ix) {
    TASO_TRY(index_fit(g, ix, g->nnodes + 1));
    h = index_hash(params, n);
    slot = index_slot(g, ix, n, h);
    if (ix->slots[slot]) {
      *ref = TASO_REF(ix->slots[slot] - 1, 0);
      return TASO_OK;
    }
  } else {
    for (int i = 0; i < g->nnodes; i++)
      if (memcmp(&g->nodes[i], n, sizeof *n) == 0) {
        *ref = TASO_REF(i, 0);
        return TASO_OK;
      }
  }
  TASO_TRY(grow((void **)&g->nodes, &g->node_cap, g->nnodes + 1, sizeof *g->nodes));
  g->nodes[g->nnodes] = *n;
  *ref = TASO_REF(g->nnodes, 0);
  g->nnodes++;
  if (ix) {
    ix->slots[slot] = g->nnodes;
    ix->tags[slot] = (uint32_t)(h >> 32);
    ix->indexed = g->nnodes;
  }
  return TASO_OK;
}

taso_err_t taso_graph_add_node_indexed(taso_graph_t *g, taso_graph_index_t *ix,
                                       const taso_node_t *n, uint64_t params_hash,
                                       taso_ref_t *ref) {
  return add_node(g, ix, n, params_hash, ref);
}

taso_err_t taso_graph_add_indexed(taso_graph_t *g, taso_graph_index_t *ix, taso_op_kind_t kind,
                                  const taso_params_t *p, const taso_ref_t *in, taso_ref_t *ref) {
  if (kind <= TASO_OP_INPUT || kind >= TASO_OP_COUNT)
    return taso_error(TASO_ERR_UNKNOWN, "operator kind %d", (int)kind);
  const taso_op_info_t *op = &taso_ops[kind];
  taso_node_t n;
  memset(&n, 0, sizeof n);
  n.kind = kind;
  /* Keep only the parameters the operator takes, so equal nodes compare equal. */
  if (op->params & TASO_P_AXIS) n.p.axis = p->axis;
  if (op->params & TASO_P_STRIDE) memcpy(n.p.stride, p->stride, sizeof n.p.stride);
  if (op->params & TASO_P_PAD) {
    n.p.pad = p->pad;
    if (p->pad == TASO_PAD_EXPLICIT) memcpy(n.p.pads, p->pads, sizeof n.p.pads);
  }
  if (op->params & TASO_P_PERM) memcpy(n.p.perm, p->perm, sizeof n.p.perm);
  if (op->params & TASO_P_BOUND) memcpy(n.p.bound, p->bound, sizeof n.p.bound);
  if (op->params & TASO_P_AT) n.p.at = p->at;
  if (op->params & TASO_P_COUNT_PAD) n.p.exclude_pad = p->exclude_pad;
  if (op->params & TASO_P_ACT) n.p.act = p->act;
  if (op->params & TASO_P_KERNEL) memcpy(n.p.kernel, p->kernel, sizeof n.p.kernel);
  if (op->params & TASO_P_LAYOUT) n.p.layout = p->layout;
  if (op->params & TASO_P_SHAPE) {
    n.p.rank = p->rank;
    memcpy(n.p.shape, p->shape, sizeof n.p.shape);
  }
  for (int i = 0; i < 3; i++)
    n.in[i] = -1;
  for (int i = 0; i < op->arity; i++) {
    int node = TASO_REF_NODE(in[i]), port = TASO_REF_PORT(in[i]);
    if (in[i] < 0 || node >= g->nnodes || port >= taso_ops[g->nodes[node].kind].outputs)
      return taso_error(TASO_ERR_ARG, "%s: operand %d refers to no tensor", op->name, i);
    n.in[i] = in[i];
  }
  return add_node(g, ix, &n, ix ? taso_node_params_hash(&n) : 0, ref);
}

taso_err_t taso_graph_add(taso_graph_t *g, taso_op_kind_t kind, const taso_params_t *p,
                          const taso_ref_t *in, taso_ref_t *ref) {
  return taso_graph_add_indexed(g, NULL, kind, p, in, ref);
}

taso_err_t taso_graph_add_input_indexed(taso_graph_t *g, taso_graph_index_t *ix, int input,
                                        taso_ref_t *ref) {
  taso_node_t n;
  memset(&n, 0, sizeof n);
  n.kind = TASO_OP_INPUT;
  n.p.input = input;
  n.in[0] = n.in[1] = n.in[2] = -1;
  return add_node(g, ix, &n, ix ? taso_node_params_hash(&n) : 0, ref);
}

taso_err_t taso_graph_add_input(taso_graph_t *g, int input, taso_ref_t *ref) {
  return taso_graph_add_input_indexed(g, NULL, input, ref);
}

taso_err_t taso_graph_add_output(taso_graph_t *g, taso_ref_t ref) {
  TASO_TRY(grow((void **)&g->outputs, &g->out_cap, g->noutputs + 1, sizeof *g->outputs));
  g->outputs[g->noutputs++] = ref;
  return TASO_OK;
}

taso_err_t taso_graph_infer(const taso_graph_t *g, const taso_inputs_t *in, taso_tensor_t *types) {
  for (int i = 0; i < g->nnodes; i++) {
    const taso_node_t *n = &g->nodes[i];
    taso_tensor_t args[3];
    memset(&types[2 * i], 0, 2 * sizeof *types);
    if (n->kind == TASO_OP_INPUT) {
      if (n->p.input < 0 || n->p.input >= in->n)
        return taso_error(TASO_ERR_UNKNOWN, "input index %d not in the input table", n->p.input);
      types[2 * i] = in->v[n->p.input].type;
      continue;
    }
    for (int a = 0; a < taso_ops[n->kind].arity; a++)
      args[a] = types[n->in[a]];
    TASO_TRY(taso_op_infer(n->kind, &n->p, args, &types[2 * i]));
  }
  return TASO_OK;
}

/* Depth-first post-order from the outputs: the canonical node order. */
static void visit(const taso_graph_t *g, int node, int *map, taso_node_t *out, int *count) {
  if (map[node] >= 0) return;
  const taso_node_t *n = &g->nodes[node];
  for (int a = 0; a < 3 && n->in[a] >= 0; a++)
    visit(g, TASO_REF_NODE(n->in[a]), map, out, count);
  taso_node_t m = *n;
  for (int a = 0; a < 3 && m.in[a] >= 0; a++)
    m.in[a] = TASO_REF(map[TASO_REF_NODE(m.in[a])], TASO_REF_PORT(m.in[a]));
  map[node] = *count;
  out[(*count)++] = m;
}

taso_err_t taso_graph_canonicalize_map(taso_graph_t *g, int *where) {
  int *map = where ? where : malloc(sizeof *map * (g->nnodes + 1));
  taso_node_t *out = malloc(sizeof *out * (g->nnodes + 1));
  if (!map || !out) {
    if (!where) free(map);
    free(out);
    return taso_error(TASO_ERR_NOMEM, "canonicalizing a graph of %d nodes", g->nnodes);
  }
  for (int i = 0; i < g->nnodes; i++)
    map[i] = -1;
  int count = 0;
  for (int o = 0; o < g->noutputs; o++)
    visit(g, TASO_REF_NODE(g->outputs[o]), map, out, &count);
  for (int o = 0; o < g->noutputs; o++)
    g->outputs[o] = TASO_REF(map[TASO_REF_NODE(g->outputs[o])], TASO_REF_PORT(g->outputs[o]));
  if (count) memcpy(g->nodes, out, sizeof *out * count);
  g->nnodes = count;
  if (!where) free(map);
  free(out);
  return TASO_OK;
}

taso_err_t taso_graph_canonicalize(taso_graph_t *g) {
  return taso_graph_canonicalize_map(g, NULL);
}

int taso_graph_compare(const taso_graph_t *a, const taso_graph_t *b) {
  if (a->nnodes != b->nnodes) return a->nnodes < b->nnodes ? -1 : 1;
  if (a->noutputs != b->noutputs) return a->noutputs < b->noutputs ? -1 : 1;
  int c = a->nnodes ? memcmp(a->nodes, b->nodes, sizeof *a->nodes * a->nnodes) : 0;
  if (c) return c;
  return a->noutputs ? memcmp(a->outputs, b->outputs, sizeof *a->outputs * a->noutputs) : 0;
}

/* splitmix64's finalizer: a strong 64-bit mix. */
static uint64_t mix64(uint64_t x) {
  x ^= x >> 30;
  x *= 0xbf58476d1ce4e5b9ULL;
  x ^= x >> 27;
  x *= 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

static uint64_t hash_ints(uint64_t h, const int32_t *v, size_t n) {
  for (size_t i = 0; i < n; i++)
    h = mix64(h ^ (uint32_t)v[i]) + 0x9e3779b97f4a7c15ULL;
  return h;
}

uint64_t taso_graph_hash(const taso_graph_t *g) {
  uint64_t h = mix64((uint64_t)g->nnodes << 32 | (uint32_t)g->noutputs);
  for (int i = 0; i < g->nnodes; i++) {
    const taso_node_t *n = &g->nodes[i];
    int32_t head[2] = {n->kind, 0};
    h = hash_ints(h, head, 2);
    /* The model-only parameters (pads on) enter the hash only when set, so
     * every substitution graph keeps the hash it had before they existed. */
    static const taso_params_t zero;
    const size_t subst_ints = offsetof(taso_params_t, pads) / sizeof(int32_t);
    const size_t model_bytes = sizeof n->p - offsetof(taso_params_t, pads);
    h = hash_ints(h, (const int32_t *)&n->p, subst_ints);
    if (memcmp(n->p.pads, zero.pads, model_bytes) != 0)
      h = hash_ints(h, (const int32_t *)n->p.pads, model_bytes / sizeof(int32_t));
    h = hash_ints(h, n->in, 3);
  }
  return hash_ints(h, g->outputs, g->noutputs);
}

uint64_t taso_node_struct_hash(uint64_t params_hash, const taso_node_t *n, const uint64_t *hashes) {
  uint64_t h = params_hash;
  for (int a = 0; a < 3 && n->in[a] >= 0; a++)
    h = taso_mix64(h ^ (hashes[TASO_REF_NODE(n->in[a])] + (uint64_t)TASO_REF_PORT(n->in[a])));
  return h;
}

uint64_t taso_graph_struct_hash(const taso_graph_t *g, const uint64_t *hashes) {
  uint64_t h = taso_mix64((uint64_t)g->noutputs);
  for (int o = 0; o < g->noutputs; o++)
    h = taso_mix64(h ^
                   (hashes[TASO_REF_NODE(g->outputs[o])] + (uint64_t)TASO_REF_PORT(g->outputs[o])));
  return h;
}

uint64_t taso_graph_struct_hash_all(const taso_graph_t *g, uint64_t *hashes) {
  for (int i = 0; i < g->nnodes; i++)
    hashes[i] = taso_node_struct_hash(taso_node_params_hash(&g->nodes[i]), &g->nodes[i], hashes);
  return taso_graph_struct_hash(g, hashes);
}

/* ---- text form ---------------------------------------------------------- */

typedef struct {
  char *buf;
  int len, n; /* capacity, characters needed so far */
} out_t;

static void emit(out_t *o, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void emit(out_t *o, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  o->n +=
      vsnprintf(o->n < o->len ? o->buf + o->n : NULL, o->n < o->len ? o->len - o->n : 0, fmt, ap);
  va_end(ap);
}

/* emit(o, "%s", str) without printf: the hot path of canonical texts. */
static void put(out_t *o, const char *str) {
  for (; *str; str++, o->n++)
    if (o->n + 1 < o->len) {
      o->buf[o->n] = *str;
      o->buf[o->n + 1] = '\0';
    }
}

/* A permutation of r axes holds r - 1 as its largest entry; the rest are 0. */
static int taso_perm_rank(const int32_t *perm) {
  int32_t top = 0;
  for (int i = 0; i < TASO_MAX_RANK; i++)
    top = perm[i] > top ? perm[i] : top;
  return top + 1;
}

static void emit_dims(out_t *o, int rank, const int32_t *d) {
  if (rank == 0) emit(o, "scalar");
  for (int i = 0; i < rank; i++)
    emit(o, i ? "x%d" : "%d", d[i]);
}

static void format_ref(const taso_graph_t *g, const taso_inputs_t *in, taso_ref_t ref, out_t *o) {
  const taso_node_t *n = &g->nodes[TASO_REF_NODE(ref)];
  if (n->kind == TASO_OP_INPUT) {
    if (n->p.input >= 0 && n->p.input < in->n)
      put(o, in->v[n->p.input].name);
    else
      emit(o, "?%d", n->p.input);
    return;
  }
  const taso_op_info_t *op = &taso_ops[n->kind];
  const char *sep = "";
#define ARG(...) (put(o, sep), emit(o, __VA_ARGS__), sep = ", ")
  if (op->outputs == 2) {
    put(o, op->name);
    put(o, TASO_REF_PORT(ref) ? "1(" : "0(");
  } else {
    put(o, op->name);
    put(o, "(");
  }
  if (op->params & TASO_P_AXIS) ARG("%d", n->p.axis);
  if (op->params & TASO_P_KERNEL) ARG("k=%dx%d", n->p.kernel[0], n->p.kernel[1]);
  if ((op->params & TASO_P_STRIDE) && (n->p.stride[0] != 1 || n->p.stride[1] != 1))
    ARG("s=%dx%d", n->p.stride[0], n->p.stride[1]);
  if ((op->params & TASO_P_PAD) && n->p.pad == TASO_PAD_VALID) ARG("pad=valid");
  if ((op->params & TASO_P_PAD) && n->p.pad == TASO_PAD_EXPLICIT)
    ARG("pad=%dx%dx%dx%d", n->p.pads[0], n->p.pads[1], n->p.pads[2], n->p.pads[3]);
  if ((op->params & TASO_P_COUNT_PAD) && n->p.exclude_pad) ARG("exclude_pad=1");
  if (op->params & TASO_P_AT) ARG("at=%d", n->p.at);
  if (op->params & TASO_P_BOUND)
    ARG("min=%g, max=%g", (double)n->p.bound[0], (double)n->p.bound[1]);
  if (op->params & TASO_P_PERM) {
    ARG("perm=");
    emit_dims(o, taso_perm_rank(n->p.perm), n->p.perm);
  }
  if ((op->params & TASO_P_ACT) && n->p.act == TASO_ACT_RELU) ARG("act=relu");
  if ((op->params & TASO_P_LAYOUT) && n->p.layout == TASO_LAYOUT_VIEW) ARG("layout=view");
  if (op->params & TASO_P_SHAPE) {
    ARG("shape=");
    emit_dims(o, n->p.rank, n->p.shape);
  }
  for (int a = 0; a < op->arity; a++) {
    put(o, sep);
    sep = ", ";
    format_ref(g, in, n->in[a], o);
  }
#undef ARG
  put(o, ")");
}

int taso_graph_format(const taso_graph_t *g, const taso_inputs_t *in, char *buf, int len) {
  out_t o = {buf, len, 0};
  if (len > 0) buf[0] = 0;
  for (int i = 0; i < g->noutputs; i++) {
    if (i) put(&o, ", ");
    format_ref(g, in, g->outputs[i], &o);
  }
  return o.n;
}

/* ---- parser ------------------------------------------------------------- */

typedef struct {
  const char *text; /* whole text, for columns */
  const char *s;    /* cursor */
  const taso_inputs_t *in;
  taso_graph_t *g;
} parser_t;

/* The column is the token's when it lies in the text, else the cursor's. */
static taso_err_t fail(parser_t *ps, taso_err_t err, const char *what, const char *tok,
                       int toklen) {
  size_t len = strlen(ps->text);
  const char *at = (tok >= ps->text && tok <= ps->text + len) ? tok : ps->s;
  return taso_error(err, "column %d: %s '%.*s'", (int)(at - ps->text) + 1, what, toklen, tok);
}

static void skip_space(parser_t *ps) {
  while (isspace((unsigned char)*ps->s))
    ps->s++;
}

/* A word: letters, digits, '_' and '-' (for negative numbers). */
static int word(parser_t *ps, const char **start) {
  skip_space(ps);
  *start = ps->s;
  while (isalnum((unsigned char)*ps->s) || (*ps->s && strchr("_-.+", *ps->s)))
    ps->s++;
  return (int)(ps->s - *start);
}

static bool accept(parser_t *ps, char c) {
  skip_space(ps);
  if (*ps->s != c) return false;
  ps->s++;
  return true;
}

static taso_err_t expect(parser_t *ps, char c) {
  if (accept(ps, c)) return TASO_OK;
  const char *t = ps->s;
  return fail(ps, TASO_ERR_PARSE,
              c == ')' ? "expected ')' or ',' at" : "expected a different character at",
              *t ? t : "end of text", *t ? 1 : 11);
}

static bool word_is(const char *w, int n, const char *lit) {
  return (int)strlen(lit) == n && strncmp(w, lit, n) == 0;
}

/* "3" "3x3" "2x4x5x5" "scalar" -> dims; returns the count or -1. */
static int parse_dims(const char *w, int n, int32_t *d, int max) {
  if (word_is(w, n, "scalar")) return 0;
  int count = 0;
  const char *end = w + n;
  while (w < end) {
    if (count == max || !isdigit((unsigned char)*w)) return -1;
    long v = 0;
    while (w < end && isdigit((unsigned char)*w)) {
      v = v * 10 + (*w++ - '0');
      if (v > 1 << 24) return -1;
    }
    d[count++] = (int32_t)v;
    if (w < end && *w++ != 'x') return -1;
    if (w == end && w[-1] == 'x') return -1;
  }
  return count;
}

/* One "key=value" or bare-integer parameter; the key word is already read. */
static taso_err_t parse_param(parser_t *ps, const taso_op_info_t *op, const char *key, int klen,
                              taso_params_t *p, unsigned *seen) {
  const char *v;
  int vlen;
  int32_t d[4];
  unsigned flag = 0;
  if (isdigit((unsigned char)key[0]) || key[0] == '-') { /* bare axis */
    flag = TASO_P_AXIS;
    v = key;
    vlen = klen;
  } else {
    if (!accept(ps, '=')) return fail(ps, TASO_ERR_PARSE, "expected '=' after", key, klen);
    vlen = word(ps, &v);
    if (word_is(key, klen, "axis"))
      flag = TASO_P_AXIS;
    else if (word_is(key, klen, "s"))
      flag = TASO_P_STRIDE;
    else if (word_is(key, klen, "pad"))
      flag = TASO_P_PAD;
    else if (word_is(key, klen, "act"))
      flag = TASO_P_ACT;
    else if (word_is(key, klen, "k"))
      flag = TASO_P_KERNEL;
    else if (word_is(key, klen, "layout"))
      flag = TASO_P_LAYOUT;
    else if (word_is(key, klen, "shape"))
      flag = TASO_P_SHAPE;
    else if (word_is(key, klen, "perm"))
      flag = TASO_P_PERM;
    else if (word_is(key, klen, "min") || word_is(key, klen, "max"))
      flag = TASO_P_BOUND;
    else if (word_is(key, klen, "at"))
      flag = TASO_P_AT;
    else if (word_is(key, klen, "exclude_pad"))
      flag = TASO_P_COUNT_PAD;
    else
      return fail(ps, TASO_ERR_UNKNOWN, "unknown parameter", key, klen);
  }
  if (!(op->params & flag))
    return fail(ps, TASO_ERR_PARSE, "operator takes no parameter", key, klen);
  /* min and max share one flag: each is given once, in either order */
  unsigned bit = flag == TASO_P_BOUND && word_is(key, klen, "max") ? 1u << 31 : flag;
  if (*seen & bit) return fail(ps, TASO_ERR_PARSE, "parameter given twice:", key, klen);
  *seen |= bit;
  bool ok = true;
  switch (flag) {
  case TASO_P_AXIS:
    ok = parse_dims(v, vlen, d, 1) == 1 && d[0] < TASO_MAX_RANK;
    p->axis = ok ? d[0] : 0;
    break;
  case TASO_P_STRIDE:
  case TASO_P_KERNEL:
    ok = parse_dims(v, vlen, d, 2) == 2 && d[0] >= 1 && d[1] >= 1;
    if (ok) memcpy(flag == TASO_P_STRIDE ? p->stride : p->kernel, d, sizeof(int32_t) * 2);
    break;
  case TASO_P_PAD:
    if (isdigit((unsigned char)v[0])) { /* explicit: top x left x bottom x right */
      ok = parse_dims(v, vlen, p->pads, 4) == 4;
      p->pad = TASO_PAD_EXPLICIT;
      break;
    }
    ok = word_is(v, vlen, "same") || word_is(v, vlen, "valid");
    p->pad = word_is(v, vlen, "valid") ? TASO_PAD_VALID : TASO_PAD_SAME;
    break;
  case TASO_P_PERM: {
    int r = parse_dims(v, vlen, d, TASO_MAX_RANK);
    ok = r >= 1;
    memset(p->perm, 0, sizeof p->perm);
    for (int i = 0; ok && i < r; i++)
      p->perm[i] = d[i];
    ok = ok && taso_perm_rank(p->perm) == r; /* the shape rule checks the rest */
    break;
  }
  case TASO_P_BOUND: {
    char num[48], *end;
    ok = vlen > 0 && vlen < (int)sizeof num;
    if (!ok) break;
    memcpy(num, v, vlen);
    num[vlen] = 0;
    double x = strtod(num, &end);
    ok = *end == 0;
    p->bound[bit == TASO_P_BOUND ? 0 : 1] = (float)x;
    break;
  }
  case TASO_P_AT:
    ok = parse_dims(v, vlen, d, 1) == 1 && d[0] >= 1;
    p->at = ok ? d[0] : 0;
    break;
  case TASO_P_COUNT_PAD:
    ok = word_is(v, vlen, "0") || word_is(v, vlen, "1");
    p->exclude_pad = word_is(v, vlen, "1");
    break;
  case TASO_P_ACT:
    ok = word_is(v, vlen, "none") || word_is(v, vlen, "relu");
    p->act = word_is(v, vlen, "relu") ? TASO_ACT_RELU : TASO_ACT_NONE;
    break;
  case TASO_P_LAYOUT:
    ok = word_is(v, vlen, "view") || word_is(v, vlen, "materialized");
    p->layout = word_is(v, vlen, "view") ? TASO_LAYOUT_VIEW : TASO_LAYOUT_MATERIALIZED;
    break;
  case TASO_P_SHAPE:
    p->rank = parse_dims(v, vlen, p->shape, TASO_MAX_RANK);
    ok = p->rank >= 0;
    for (int i = 0; ok && i < p->rank; i++)
      ok = p->shape[i] >= 1;
    break;
  }
  if (!ok) return fail(ps, TASO_ERR_PARSE, "bad parameter value", v, vlen);
  return TASO_OK;
}

/* name [ '(' params and operands ')' ]; an operator name without operands
 * parses as a template when operands is NULL. */
static taso_err_t parse_op(parser_t *ps, const char *name, int nlen, taso_op_kind_t *kind,
                           int *port, taso_params_t *p, taso_ref_t *operands, int *noperands);

static taso_err_t parse_expr(parser_t *ps, taso_ref_t *ref) {
  const char *name;
  int nlen = word(ps, &name);
  if (nlen == 0)
    return fail(ps, TASO_ERR_PARSE, "expected an operator or input at",
                *ps->s ? ps->s : "end of text", *ps->s ? 1 : 11);
  skip_space(ps);
  if (*ps->s != '(') {
    char buf[TASO_NAME_LEN];
    int idx = -1;
    if (nlen < TASO_NAME_LEN) {
      memcpy(buf, name, nlen);
      buf[nlen] = 0;
      idx = taso_inputs_find(ps->in, buf);
    }
    if (idx < 0) {
      ps->s = name;
      return fail(ps, TASO_ERR_UNKNOWN, "unknown input", name, nlen);
    }
    return taso_graph_add_input(ps->g, idx, ref);
  }
  taso_op_kind_t kind;
  taso_params_t p;
  taso_ref_t operands[3];
  int port, n;
  TASO_TRY(parse_op(ps, name, nlen, &kind, &port, &p, operands, &n));
  if (n != taso_ops[kind].arity)
    return fail(ps, TASO_ERR_PARSE, "wrong number of operands for", name, nlen);
  TASO_TRY(taso_graph_add(ps->g, kind, &p, operands, ref));
  *ref += port;
  return TASO_OK;
}

static taso_err_t parse_op(parser_t *ps, const char *name, int nlen, taso_op_kind_t *kind,
                           int *port, taso_params_t *p, taso_ref_t *operands, int *noperands) {
  char buf[32];
  const char *at = name;
  *port = 0;
  *kind = TASO_OP_COUNT;
  if (nlen < (int)sizeof buf) {
    memcpy(buf, name, nlen);
    buf[nlen] = 0;
    /* an operator with two results is named with its port: split0, split1 */
    char last = nlen > 1 ? buf[nlen - 1] : 0;
    if (operands && (last == '0' || last == '1')) {
      buf[nlen - 1] = 0;
      *kind = taso_op_lookup(buf);
      if (*kind != TASO_OP_COUNT && taso_ops[*kind].outputs == 2)
        *port = last - '0';
      else
        *kind = TASO_OP_COUNT;
    } else if (!operands || taso_op_lookup(buf) == TASO_OP_COUNT ||
               taso_ops[taso_op_lookup(buf)].outputs == 1) {
      *kind = taso_op_lookup(buf);
    }
  }
  if (*kind == TASO_OP_COUNT) {
    ps->s = at;
    return fail(ps, TASO_ERR_UNKNOWN, "unknown operator", name, nlen);
  }
  const taso_op_info_t *op = &taso_ops[*kind];
  unsigned seen = 0;
  *p = taso_params_default();
  *noperands = 0;
  if (!accept(ps, '(')) goto done; /* a bare template name */
  if (accept(ps, ')')) goto done;
  do {
    const char *save = ps->s, *w;
    int wlen = word(ps, &w);
    skip_space(ps);
    bool is_param = wlen > 0 && (*ps->s == '=' || isdigit((unsigned char)w[0]) || w[0] == '-');
    if (is_param) {
      if (*noperands > 0) return fail(ps, TASO_ERR_PARSE, "parameter after operands:", w, wlen);
      TASO_TRY(parse_param(ps, op, w, wlen, p, &seen));
      continue;
    }
    if (!operands) return fail(ps, TASO_ERR_PARSE, "expected a parameter at", w, wlen ? wlen : 1);
    ps->s = save;
    if (*noperands == op->arity)
      return fail(ps, TASO_ERR_PARSE, "too many operands for", name, nlen);
    TASO_TRY(parse_expr(ps, &operands[(*noperands)++]));
  } while (accept(ps, ','));
  TASO_TRY(expect(ps, ')'));
done:;
  unsigned required =
      op->params & (TASO_P_AXIS | TASO_P_KERNEL | TASO_P_SHAPE | TASO_P_PERM | TASO_P_AT);
  if ((op->params & TASO_P_BOUND) && !((seen & TASO_P_BOUND) && (seen & (1u << 31))))
    return fail(ps, TASO_ERR_PARSE, "missing min or max parameter of", name, nlen);
  /* Templates leave shapes to the enumerator, which knows the partner. */
  if (!operands) required &= ~(unsigned)TASO_P_SHAPE;
  if ((seen & required) != required)
    return fail(ps, TASO_ERR_PARSE, "missing axis, kernel, shape, perm or at parameter of", name,
                nlen);
  return TASO_OK;
}

taso_err_t taso_op_template_parse(const char *text, taso_op_kind_t *kind, taso_params_t *p) {
  taso_graph_t none;
  taso_inputs_t no_inputs = {0};
  taso_graph_init(&none);
  parser_t ps = {text, text, &no_inputs, &none};
  const char *name;
  int nlen = word(&ps, &name), port, n;
  if (nlen == 0)
    return fail(&ps, TASO_ERR_PARSE, "expected an operator at", text, (int)strlen(text));
  TASO_TRY(parse_op(&ps, name, nlen, kind, &port, p, NULL, &n));
  skip_space(&ps);
  if (*ps.s) return fail(&ps, TASO_ERR_PARSE, "unexpected text", ps.s, (int)strlen(ps.s));
  return TASO_OK;
}

/* Parses outputs up to `stop` (a "=>" or the end) into g. */
static taso_err_t parse_outputs(parser_t *ps, taso_graph_t *g) {
  taso_graph_clear(g);
  ps->g = g;
  do {
    taso_ref_t ref;
    TASO_TRY(parse_expr(ps, &ref));
    TASO_TRY(taso_graph_add_output(g, ref));
  } while (accept(ps, ','));
  return taso_graph_canonicalize(g);
}

/* The graph must have valid shapes: an impossible one is bad input. */
static taso_err_t check_types(const taso_graph_t *g, const taso_inputs_t *in) {
  taso_tensor_t *types = malloc(sizeof *types * 2 * (g->nnodes + 1));
  if (!types) return taso_error(TASO_ERR_NOMEM, "type inference");
  taso_err_t err = taso_graph_infer(g, in, types);
  free(types);
  return err;
}

static taso_err_t parse_end(parser_t *ps) {
  skip_space(ps);
  if (*ps->s == 0) return TASO_OK;
  return fail(ps, TASO_ERR_PARSE, "unexpected text", ps->s, (int)strcspn(ps->s, " \t\n"));
}

taso_err_t taso_graph_parse(const char *text, const taso_inputs_t *in, taso_graph_t *g) {
  parser_t ps = {text, text, in, g};
  TASO_TRY(parse_outputs(&ps, g));
  TASO_TRY(parse_end(&ps));
  return check_types(g, in);
}

taso_err_t taso_subst_parse(const char *text, const taso_inputs_t *in, taso_graph_t *src,
                            taso_graph_t *dst) {
  parser_t ps = {text, text, in, src};
  TASO_TRY(parse_outputs(&ps, src));
  skip_space(&ps);
  if (strncmp(ps.s, "=>", 2) != 0)
    return fail(&ps, TASO_ERR_PARSE, "expected '=>' at", *ps.s ? ps.s : "end of text",
                *ps.s ? 2 : 11);
  ps.s += 2;
  TASO_TRY(parse_outputs(&ps, dst));
  TASO_TRY(parse_end(&ps));
  TASO_TRY(check_types(src, in));
  TASO_TRY(check_types(dst, in));
  if (src->noutputs != dst->noutputs)
    return taso_error(TASO_ERR_SHAPE, "source has %d outputs, target %d", src->noutputs,
                      dst->noutputs);
  return TASO_OK;
}
