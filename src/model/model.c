#include "model.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "hash.h"

void taso_model_init(taso_model_t *m, const char *name) {
  memset(m, 0, sizeof *m);
  snprintf(m->name, sizeof m->name, "%s", name ? name : "model");
  m->seed = 1;
  taso_graph_init(&m->graph);
}

void taso_model_free(taso_model_t *m) {
  for (int i = 0; i < m->inputs.n; i++)
    free(m->data[i]);
  free(m->data);
  free(m->names);
  free(m->is_weight);
  free(m->output_names);
  free(m->types);
  free(m->calls);
  taso_inputs_free(&m->inputs);
  taso_graph_free(&m->graph);
  memset(m, 0, sizeof *m);
}

void taso_model_drop_plan(taso_model_t *m) {
  free(m->calls);
  m->calls = NULL;
  m->ncalls = 0;
  m->library[0] = '\0';
}

/* Grows the per-node type table to hold node `node`. */
static taso_err_t types_fit(taso_model_t *m, int nodes) {
  if (2 * nodes <= m->types_cap) return TASO_OK;
  int cap = m->types_cap ? m->types_cap : 64;
  while (cap < 2 * nodes)
    cap *= 2;
  taso_tensor_t *t = realloc(m->types, sizeof *t * (size_t)cap);
  if (!t) return taso_error(TASO_ERR_NOMEM, "types of %d nodes", nodes);
  m->types = t;
  m->types_cap = cap;
  return TASO_OK;
}

int taso_model_find_input(const taso_model_t *m, const char *name) {
  for (int i = 0; i < m->inputs.n; i++)
    if (strcmp(m->names[i], name) == 0) return i;
  return -1;
}

taso_err_t taso_model_input(taso_model_t *m, const char *name, bool is_weight, int rank,
                            const int32_t *dim, const float *values, taso_ref_t *ref) {
  taso_model_drop_plan(m); /* it lists every step of the graph as it was */
  if (!name[0] || strlen(name) >= TASO_MODEL_NAME_LEN)
    return taso_error(TASO_ERR_ARG, "tensor name '%.40s' must have 1 to %d characters", name,
                      TASO_MODEL_NAME_LEN - 1);
  if (taso_model_find_input(m, name) >= 0)
    return taso_error(TASO_ERR_ARG, "tensor '%s' defined twice", name);
  int n = m->inputs.n;
  char short_name[TASO_NAME_LEN];
  snprintf(short_name, sizeof short_name, "%c%d", is_weight ? 'w' : 'x', n);
  taso_err_t err = taso_inputs_add(&m->inputs, short_name, rank, dim);
  if (err != TASO_OK) return taso_error_prefix(err, "'%s': ", name);
  void *names = realloc(m->names, sizeof *m->names * (size_t)(n + 1));
  if (names) m->names = names;
  void *w = realloc(m->is_weight, sizeof *m->is_weight * (size_t)(n + 1));
  if (w) m->is_weight = w;
  void *d = realloc(m->data, sizeof *m->data * (size_t)(n + 1));
  if (d) m->data = d;
  if (!names || !w || !d) return taso_error(TASO_ERR_NOMEM, "tensor '%s'", name);
  snprintf(m->names[n], TASO_MODEL_NAME_LEN, "%s", name);
  m->is_weight[n] = is_weight;
  m->data[n] = NULL;
  if (values) {
    int64_t size = taso_tensor_size(&m->inputs.v[n].type);
    m->data[n] = malloc(sizeof(float) * (size_t)size);
    if (!m->data[n]) return taso_error(TASO_ERR_NOMEM, "values of '%s'", name);
    memcpy(m->data[n], values, sizeof(float) * (size_t)size);
  }
  TASO_TRY(taso_graph_add_input(&m->graph, n, ref));
  TASO_TRY(types_fit(m, m->graph.nnodes));
  m->types[*ref] = m->inputs.v[n].type;
  m->types[*ref + 1] = taso_tensor_make(0, NULL);
  return TASO_OK;
}

taso_err_t taso_model_node(taso_model_t *m, taso_op_kind_t kind, const taso_params_t *p,
                           const taso_ref_t *in, taso_ref_t *ref) {
  taso_model_drop_plan(m);
  if (kind <= TASO_OP_INPUT || kind >= TASO_OP_COUNT)
    return taso_error(TASO_ERR_UNKNOWN, "operator kind %d", (int)kind);
  const taso_op_info_t *op = &taso_ops[kind];
  taso_tensor_t args[3], out[2];
  for (int a = 0; a < op->arity; a++) {
    if (in[a] < 0 || TASO_REF_NODE(in[a]) >= m->graph.nnodes)
      return taso_error(TASO_ERR_ARG, "%s: operand %d refers to no tensor", op->name, a);
    args[a] = m->types[in[a]];
  }
  memset(out, 0, sizeof out);
  TASO_TRY(taso_op_infer(kind, p, args, out));
  TASO_TRY(taso_graph_add(&m->graph, kind, p, in, ref));
  TASO_TRY(types_fit(m, m->graph.nnodes));
  int node = TASO_REF_NODE(*ref);
  m->types[2 * node] = out[0];
  m->types[2 * node + 1] = op->outputs > 1 ? out[1] : taso_tensor_make(0, NULL);
  return TASO_OK;
}

taso_err_t taso_model_output(taso_model_t *m, taso_ref_t ref, const char *name) {
  taso_model_drop_plan(m); /* an output's result must stay: not one to write over */
  int n = m->graph.noutputs;
  void *names = realloc(m->output_names, sizeof *m->output_names * (size_t)(n + 1));
  if (!names) return taso_error(TASO_ERR_NOMEM, "output names");
  m->output_names = names;
  if (name)
    snprintf(m->output_names[n], TASO_MODEL_NAME_LEN, "%s", name);
  else
    snprintf(m->output_names[n], TASO_MODEL_NAME_LEN, "out%d", n);
  return taso_graph_add_output(&m->graph, ref);
}

const taso_tensor_t *taso_model_type(const taso_model_t *m, taso_ref_t ref) {
  return &m->types[ref];
}

/* splitmix64: a small, fast, well-mixed generator, the same everywhere. */
static uint64_t next(uint64_t *s) {
  uint64_t z = (*s += 0x9e3779b97f4a7c15ULL);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

static float uniform(uint64_t *s, float scale) {
  return scale * (float)((double)(next(s) >> 11) * (2.0 / 9007199254740992.0) - 1.0);
}

static uint64_t name_seed(uint64_t seed, const char *name) {
  return taso_fnv64(seed ^ TASO_FNV_START, name, strlen(name));
}

/* What a weight is to its first reader: a normalization's per-channel
 * scale or shift (chmul's or batchnorm's scale; chadd's or batchnorm's
 * bias), or a plain weight. */
typedef enum { ROLE_WEIGHT, ROLE_SCALE, ROLE_SHIFT } weight_role_t;

static weight_role_t role_of(const taso_model_t *m, int input) {
  const taso_graph_t *g = &m->graph;
  for (int i = 0; i < g->nnodes; i++) {
    const taso_node_t *n = &g->nodes[i];
    if (n->kind == TASO_OP_INPUT) continue;
    for (int a = 0; a < taso_ops[n->kind].arity; a++) {
      const taso_node_t *in = &g->nodes[TASO_REF_NODE(n->in[a])];
      if (in->kind != TASO_OP_INPUT || in->p.input != input) continue;
      if ((n->kind == TASO_OP_CHMUL && a == 1) || (n->kind == TASO_OP_BATCHNORM && a == 1))
        return ROLE_SCALE;
      if ((n->kind == TASO_OP_CHADD && a == 1) || (n->kind == TASO_OP_BATCHNORM && a == 2))
        return ROLE_SHIFT;
      return ROLE_WEIGHT;
    }
  }
  return ROLE_WEIGHT;
}

taso_err_t taso_model_make_weights(taso_model_t *m) {
  for (int i = 0; i < m->inputs.n; i++) {
    if (!m->is_weight[i] || m->data[i]) continue;
    const taso_tensor_t *t = &m->inputs.v[i].type;
    int64_t size = taso_tensor_size(t);
    int64_t fan_in = t->rank > 1 ? size / t->dim[0] : size;
    m->data[i] = malloc(sizeof(float) * (size_t)(size ? size : 1));
    if (!m->data[i]) return taso_error(TASO_ERR_NOMEM, "weight '%s'", m->names[i]);
    uint64_t s = name_seed(m->seed, m->names[i]);
    /* variance 2 / fan-in (He): activations keep their scale through
     * ReLUs; a normalization's scale near 1 and shift near 0, as trained
     * ones are, so that deep models neither vanish nor blow up */
    weight_role_t role = role_of(m, i);
    float scale = role == ROLE_SCALE   ? 0.5f
                  : role == ROLE_SHIFT ? 0.1f
                                       : (float)sqrt(6.0 / (double)(fan_in > 0 ? fan_in : 1));
    float offset = role == ROLE_SCALE ? 1.0f : 0.0f;
    for (int64_t k = 0; k < size; k++)
      m->data[i][k] = offset + uniform(&s, scale);
  }
  return TASO_OK;
}

void taso_model_random_input(const taso_model_t *m, int i, uint64_t seed, float *out) {
  uint64_t s = name_seed(seed, m->names[i]);
  int64_t size = taso_tensor_size(&m->inputs.v[i].type);
  for (int64_t k = 0; k < size; k++)
    out[k] = uniform(&s, 1.0f);
}

void taso_model_stats(const taso_model_t *m, int64_t *counts, double *flops,
                      int64_t *weight_bytes) {
  memset(counts, 0, sizeof *counts * TASO_OP_COUNT);
  *flops = 0;
  *weight_bytes = 0;
  for (int i = 0; i < m->graph.nnodes; i++) {
    const taso_node_t *n = &m->graph.nodes[i];
    counts[n->kind]++;
    const taso_tensor_t *out = &m->types[2 * i];
    if (n->kind == TASO_OP_CONV2D) {
      const taso_tensor_t *w = &m->types[n->in[1]];
      *flops += 2.0 * (double)taso_tensor_size(out) * w->dim[1] * w->dim[2] * w->dim[3];
    } else if (n->kind == TASO_OP_MATMUL || n->kind == TASO_OP_BMM) {
      const taso_tensor_t *a = &m->types[n->in[0]];
      *flops += 2.0 * (double)taso_tensor_size(out) * a->dim[a->rank - 1];
    }
  }
  for (int i = 0; i < m->inputs.n; i++)
    if (m->is_weight[i]) *weight_bytes += 4 * taso_tensor_size(&m->inputs.v[i].type);
}

/* "t12" for node results, the input's short name for inputs; port 1 of a
 * two-result node is "t12.1". */
static void ref_name(const taso_model_t *m, taso_ref_t ref, char *buf, int len) {
  const taso_node_t *n = &m->graph.nodes[TASO_REF_NODE(ref)];
  if (n->kind == TASO_OP_INPUT)
    snprintf(buf, (size_t)len, "%s", m->inputs.v[n->p.input].name);
  else if (TASO_REF_PORT(ref))
    snprintf(buf, (size_t)len, "t%d.1", TASO_REF_NODE(ref));
  else
    snprintf(buf, (size_t)len, "t%d", TASO_REF_NODE(ref));
}

void taso_model_print(const taso_model_t *m, FILE *f) {
  char shape[64], text[512];
  for (int i = 0; i < m->inputs.n; i++) {
    taso_shape_format(&m->inputs.v[i].type, shape, sizeof shape);
    fprintf(f, "%-6s %s %s %s\n", m->inputs.v[i].name, m->is_weight[i] ? "weight" : "input ", shape,
            m->names[i]);
  }
  for (int i = 0; i < m->graph.nnodes; i++) {
    const taso_node_t *n = &m->graph.nodes[i];
    if (n->kind == TASO_OP_INPUT) continue;
    /* The node alone, operands as inputs named after their tensors: format
     * a one-node graph whose inputs carry those names. */
    taso_inputs_t names = {0};
    taso_graph_t one;
    taso_graph_init(&one);
    taso_ref_t args[3] = {-1, -1, -1}, ref;
    const taso_op_info_t *op = &taso_ops[n->kind];
    bool ok = true;
    for (int a = 0; a < op->arity && ok; a++) {
      char arg[TASO_NAME_LEN];
      ref_name(m, n->in[a], arg, sizeof arg);
      int at = taso_inputs_find(&names, arg);
      if (at < 0) {
        ok = taso_inputs_add(&names, arg, m->types[n->in[a]].rank, m->types[n->in[a]].dim) ==
             TASO_OK;
        at = names.n - 1;
      }
      ok = ok && taso_graph_add_input(&one, at, &args[a]) == TASO_OK;
    }
    ok = ok && taso_graph_add(&one, n->kind, &n->p, args, &ref) == TASO_OK &&
         taso_graph_add_output(&one, ref) == TASO_OK;
    if (ok) taso_graph_format(&one, &names, text, sizeof text);
    taso_shape_format(&m->types[2 * i], shape, sizeof shape);
    if (op->outputs == 2) {
      char second[64];
      taso_shape_format(&m->types[2 * i + 1], second, sizeof second);
      fprintf(f, "t%d, t%d.1 = %s  # %s, %s\n", i, i, ok ? text : "?", shape, second);
    } else {
      fprintf(f, "t%d = %s  # %s\n", i, ok ? text : "?", shape);
    }
    taso_graph_free(&one);
    taso_inputs_free(&names);
  }
  for (int i = 0; i < m->graph.noutputs; i++) {
    char r[32];
    ref_name(m, m->graph.outputs[i], r, sizeof r);
    fprintf(f, "output %s %s\n", r, m->output_names[i]);
  }
}

/* A split takes its sizes from the split tree of its input, which a
 * concat of weights loses when writing the model folds it into one new
 * weight. So each split becomes split_at with its sizes spelled out: the
 * same values, without the tree. */
static void spell_out_splits(taso_model_t *m) {
  for (int i = 0; i < m->graph.nnodes; i++) {
    taso_node_t *n = &m->graph.nodes[i];
    if (n->kind != TASO_OP_SPLIT) continue;
    n->kind = TASO_OP_SPLIT_AT;
    n->p.at = m->types[2 * i].dim[n->p.axis];
  }
}

taso_err_t taso_model_adopt_graph(taso_model_t *m, const taso_graph_t *g) {
  taso_model_drop_plan(m);
  TASO_TRY(taso_graph_copy(&m->graph, g));
  if (2 * m->graph.nnodes > m->types_cap) {
    taso_tensor_t *types = realloc(m->types, sizeof *types * 2 * (size_t)m->graph.nnodes);
    if (!types) return taso_error(TASO_ERR_NOMEM, "types of %d nodes", m->graph.nnodes);
    m->types = types;
    m->types_cap = 2 * m->graph.nnodes;
  }
  TASO_TRY(taso_graph_infer(&m->graph, &m->inputs, m->types));
  spell_out_splits(m);
  return taso_graph_infer(&m->graph, &m->inputs, m->types);
}
