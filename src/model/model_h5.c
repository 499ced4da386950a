/*
 * The model artifact: a model as an HDF5 file of kind taso-model.
 *
 * It reuses the layout every artifact has (/inputs: the input table with
 * the short names; /graphs: one graph, the model) and adds /model: a
 * tensors table (each input's own name, whether it is a weight, where its
 * values start in /weights), the outputs' names, and the weights'
 * values as one float32 array, so that h5py reads them as arrays. A model
 * with a call plan adds /plan: one row per step (taso_call_t's fields),
 * with the library it was selected from as the attribute "library".
 */
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "eval.h"
#include "model.h"

typedef struct {
  char name[TASO_MODEL_NAME_LEN]; /* the tensor's own name */
  int64_t offset;                 /* first value in /weights; -1: none stored */
  int32_t weight;                 /* 1: a weight */
  int32_t pad_;                   /* zero */
} tensor_rec_t;

typedef struct {
  char name[TASO_MODEL_NAME_LEN]; /* the output's name */
} name_rec_t;

typedef struct {
  char name[TASO_MODEL_NAME_LEN]; /* the model's name */
  int64_t seed;                   /* seed of random weights and inputs */
} info_rec_t;

static const taso_field_t tensor_fields[] = {
    {"name", offsetof(tensor_rec_t, name), TASO_FIELD_STRING, TASO_MODEL_NAME_LEN},
    {"offset", offsetof(tensor_rec_t, offset), TASO_FIELD_INT64, 0},
    {"weight", offsetof(tensor_rec_t, weight), TASO_FIELD_INT32, 0},
};
static const taso_field_t name_fields[] = {
    {"name", offsetof(name_rec_t, name), TASO_FIELD_STRING, TASO_MODEL_NAME_LEN},
};
static const taso_field_t info_fields[] = {
    {"name", offsetof(info_rec_t, name), TASO_FIELD_STRING, TASO_MODEL_NAME_LEN},
    {"seed", offsetof(info_rec_t, seed), TASO_FIELD_INT64, 0},
};
static const taso_field_t value_field[] = {{NULL, 0, TASO_FIELD_FLOAT, 0}};
static const taso_field_t call_fields[] = {
    {"node", offsetof(taso_call_t, node), TASO_FIELD_INT32, 0},
    {"first_node", offsetof(taso_call_t, first_node), TASO_FIELD_INT32, 0},
    {"fused", offsetof(taso_call_t, fused), TASO_FIELD_INT32, 0},
    {"layout", offsetof(taso_call_t, layout), TASO_FIELD_INT32, 0},
    {"in_place", offsetof(taso_call_t, in_place), TASO_FIELD_INT32, 0},
    {"call", offsetof(taso_call_t, call), TASO_FIELD_STRING, TASO_CALL_NAME_LEN},
};
_Static_assert(sizeof(taso_call_t) == 5 * sizeof(int32_t) + TASO_CALL_NAME_LEN,
               "taso_call_t has padding");

static const taso_table_t tensors_table = {"/tensors", sizeof(tensor_rec_t), tensor_fields, 3};
static const taso_table_t outputs_table = {"/outputs", sizeof(name_rec_t), name_fields, 1};
static const taso_table_t info_table = {"/model", sizeof(info_rec_t), info_fields, 2};
static const taso_table_t weights_table = {"/weights", sizeof(float), value_field, 1};
static const taso_table_t plan_table = {"/plan", sizeof(taso_call_t), call_fields, 6};

/* ---- folding weight-only subgraphs -------------------------------------- */

/* Whether node i computes from weights alone (constants included). */
static bool *constant_nodes(const taso_model_t *m) {
  bool *c = calloc((size_t)m->graph.nnodes + 1, sizeof *c);
  if (!c) return NULL;
  for (int i = 0; i < m->graph.nnodes; i++) {
    const taso_node_t *n = &m->graph.nodes[i];
    if (n->kind == TASO_OP_INPUT) {
      c[i] = m->is_weight[n->p.input];
      continue;
    }
    c[i] = true;
    for (int a = 0; a < taso_ops[n->kind].arity; a++)
      c[i] = c[i] && c[TASO_REF_NODE(n->in[a])];
  }
  return c;
}

/* The product of two folded weights (the optimizer's reassociations make
 * them: W1 * W2 of two 1024x1024 weights is a billion multiply-adds), in
 * the row-streaming order i, t, j that keeps both operands in cache; the
 * registry's evaluation walks the second operand by column, several times
 * slower at that size. Same sums in double, in another order. */
static void fold_matmul(const taso_node_t *n, const taso_tensor_t *at, const taso_tensor_t *bt,
                        const double *a, const double *b, double *out) {
  int rank = at->rank;
  int64_t batch = rank == 3 ? at->dim[0] : 1, M = at->dim[rank - 2], K = at->dim[rank - 1];
  int64_t N = bt->dim[rank - 1];
  for (int64_t q = 0; q < batch; q++) {
    const double *x = a + q * M * K, *y = b + q * K * N;
    double *o = out + q * M * N;
    for (int64_t i = 0; i < M * N; i++)
      o[i] = 0;
    for (int64_t i = 0; i < M; i++)
      for (int64_t t = 0; t < K; t++) {
        double s = x[i * K + t];
        for (int64_t j = 0; j < N; j++)
          o[i * N + j] += s * y[t * N + j];
      }
    if (n->p.act == TASO_ACT_RELU)
      for (int64_t i = 0; i < M * N; i++)
        o[i] = o[i] > 0 ? o[i] : 0;
  }
}

/* Rebuilds m with every constant node that a non-constant node or an output
 * reads replaced by a weight holding its value. */
static taso_err_t fold(taso_model_t *m, const bool *c) {
  int nn = m->graph.nnodes;
  double **vals = calloc((size_t)2 * nn, sizeof *vals);
  taso_ref_t *map = malloc(sizeof *map * (size_t)2 * nn);
  taso_model_t out;
  taso_model_init(&out, m->name);
  out.seed = m->seed;
  taso_err_t err = vals && map ? TASO_OK : taso_error(TASO_ERR_NOMEM, "folding %d nodes", nn);
  for (int i = 0; i < nn && err == TASO_OK; i++) {
    const taso_node_t *n = &m->graph.nodes[i];
    const taso_op_info_t *op = n->kind == TASO_OP_INPUT ? NULL : &taso_ops[n->kind];
    int outs = op ? op->outputs : 1;
    if (c[i]) { /* evaluate it: its operands' values are there */
      for (int port = 0; port < outs && err == TASO_OK; port++) {
        int64_t size = taso_tensor_size(&m->types[2 * i + port]);
        if (!(vals[2 * i + port] = malloc(sizeof(double) * (size_t)(size ? size : 1))))
          err = taso_error(TASO_ERR_NOMEM, "folded tensor of %lld values", (long long)size);
      }
      if (err != TASO_OK) break;
      if (!op) {
        const float *w = m->data[n->p.input];
        for (int64_t k = 0; k < taso_tensor_size(&m->types[2 * i]); k++)
          vals[2 * i][k] = w[k];
      } else {
        const double *args[3];
        taso_tensor_t types[3];
        for (int a = 0; a < op->arity; a++) {
          args[a] = vals[n->in[a]];
          types[a] = m->types[n->in[a]];
        }
        if (n->kind == TASO_OP_MATMUL || n->kind == TASO_OP_BMM)
          fold_matmul(n, &types[0], &types[1], args[0], args[1], vals[2 * i]);
        else
          err = taso_eval_node_double(NULL, n, types, args, &m->types[2 * i], &vals[2 * i]);
      }
    }
    map[2 * i] = map[2 * i + 1] = -1;
  }
  /* Which constant results does the rest of the model read? */
  bool *read = calloc((size_t)2 * nn + 1, sizeof *read);
  if (!read && err == TASO_OK) err = taso_error(TASO_ERR_NOMEM, "folding");
  for (int i = 0; i < nn && err == TASO_OK; i++) {
    const taso_node_t *n = &m->graph.nodes[i];
    if (n->kind == TASO_OP_INPUT || c[i]) continue;
    for (int a = 0; a < taso_ops[n->kind].arity; a++)
      read[n->in[a]] = true;
  }
  for (int o = 0; o < m->graph.noutputs && err == TASO_OK; o++)
    read[m->graph.outputs[o]] = true;
  /* Run-time inputs keep their place; then each read constant becomes a
   * weight (an input weight keeps its name, a folded result is named after
   * its node); then the other nodes, in order. */
  for (int i = 0; i < nn && err == TASO_OK; i++) {
    const taso_node_t *n = &m->graph.nodes[i];
    if (n->kind == TASO_OP_INPUT && !c[i])
      err = taso_model_input(&out, m->names[n->p.input], false, m->types[2 * i].rank,
                             m->types[2 * i].dim, NULL, &map[2 * i]);
  }
  for (int r = 0; r < 2 * nn && err == TASO_OK; r++) {
    int i = TASO_REF_NODE(r);
    if (!c[i] || !read[r]) continue;
    const taso_node_t *n = &m->graph.nodes[i];
    const taso_tensor_t *t = &m->types[r];
    int64_t size = taso_tensor_size(t);
    float *f = malloc(sizeof(float) * (size_t)(size ? size : 1));
    if (!f) {
      err = taso_error(TASO_ERR_NOMEM, "folded weight");
      break;
    }
    for (int64_t k = 0; k < size; k++)
      f[k] = (float)vals[r][k];
    char name[TASO_MODEL_NAME_LEN];
    if (n->kind == TASO_OP_INPUT)
      snprintf(name, sizeof name, "%s", m->names[n->p.input]);
    else
      snprintf(name, sizeof name, "folded_t%d%s", i, TASO_REF_PORT(r) ? "_1" : "");
    err = taso_model_input(&out, name, true, t->rank, t->dim, f, &map[r]);
    free(f);
  }
  for (int i = 0; i < nn && err == TASO_OK; i++) {
    const taso_node_t *n = &m->graph.nodes[i];
    if (n->kind == TASO_OP_INPUT || c[i]) continue;
    taso_ref_t args[3] = {-1, -1, -1};
    for (int a = 0; a < taso_ops[n->kind].arity; a++)
      args[a] = map[n->in[a]];
    err = taso_model_node(&out, (taso_op_kind_t)n->kind, &n->p, args, &map[2 * i]);
    if (err == TASO_OK) map[2 * i + 1] = map[2 * i] + 1;
  }
  for (int o = 0; o < m->graph.noutputs && err == TASO_OK; o++)
    err = taso_model_output(&out, map[m->graph.outputs[o]], m->output_names[o]);
  for (int r = 0; vals && r < 2 * nn; r++)
    free(vals[r]);
  free(vals);
  free(map);
  free(read);
  if (err != TASO_OK) {
    taso_model_free(&out);
    return err;
  }
  taso_model_free(m);
  *m = out;
  return TASO_OK;
}

taso_err_t taso_model_fold_weights(taso_model_t *m) {
  bool *c = constant_nodes(m);
  if (!c) return taso_error(TASO_ERR_NOMEM, "folding");
  bool any = false;
  for (int i = 0; i < m->graph.nnodes; i++)
    any = any || (c[i] && m->graph.nodes[i].kind != TASO_OP_INPUT);
  taso_err_t err = TASO_OK;
  if (any && (err = taso_model_make_weights(m)) == TASO_OK) err = fold(m, c);
  free(c);
  return err;
}

/* ---- writing and reading ------------------------------------------------- */

static taso_err_t write_tables(taso_artifact_t *a, const taso_model_t *m) {
  int n = m->inputs.n, no = m->graph.noutputs;
  tensor_rec_t *t = calloc((size_t)n + 1, sizeof *t);
  name_rec_t *o = calloc((size_t)no + 1, sizeof *o);
  info_rec_t info;
  memset(&info, 0, sizeof info);
  snprintf(info.name, sizeof info.name, "%s", m->name);
  info.seed = (int64_t)m->seed;
  int64_t total = 0;
  for (int i = 0; i < n; i++) {
    snprintf(t[i].name, sizeof t[i].name, "%s", m->names[i]);
    t[i].weight = m->is_weight[i];
    t[i].offset = m->data[i] ? total : -1;
    if (m->data[i]) total += taso_tensor_size(&m->inputs.v[i].type);
  }
  for (int i = 0; i < no; i++)
    snprintf(o[i].name, sizeof o[i].name, "%s", m->output_names[i]);
  float *w = malloc(sizeof(float) * (size_t)(total ? total : 1));
  taso_err_t err = t && o && w ? TASO_OK : taso_error(TASO_ERR_NOMEM, "model tables");
  for (int i = 0, at = 0; i < n && err == TASO_OK; i++)
    if (m->data[i]) {
      int64_t size = taso_tensor_size(&m->inputs.v[i].type);
      memcpy(w + at, m->data[i], sizeof(float) * (size_t)size);
      at += (int)size;
    }
  if (err == TASO_OK) err = taso_artifact_write_table(a, &info_table, &info, 1, 0, 1);
  if (err == TASO_OK) err = taso_artifact_write_table(a, &tensors_table, t, n, 0, n);
  if (err == TASO_OK) err = taso_artifact_write_table(a, &outputs_table, o, no, 0, no);
  if (err == TASO_OK) err = taso_artifact_write_table(a, &weights_table, w, total, 0, total);
  if (err == TASO_OK) err = taso_artifact_set_count(a, "weight_values", total);
  free(t);
  free(o);
  free(w);
  return err;
}

/* The plan, copied into zeroed memory: the bytes after each call's name
 * reach the file too. */
static taso_err_t write_plan(taso_artifact_t *a, const taso_model_t *m) {
  taso_call_t *rows = calloc((size_t)m->ncalls, sizeof *rows);
  if (!rows) return taso_error(TASO_ERR_NOMEM, "plan of %d steps", m->ncalls);
  for (int i = 0; i < m->ncalls; i++) {
    const taso_call_t *c = &m->calls[i];
    rows[i].node = c->node;
    rows[i].first_node = c->first_node;
    rows[i].fused = c->fused;
    rows[i].layout = c->layout;
    rows[i].in_place = c->in_place;
    snprintf(rows[i].call, sizeof rows[i].call, "%.*s", TASO_CALL_NAME_LEN - 1, c->call);
  }
  taso_err_t err = taso_artifact_write_table(a, &plan_table, rows, m->ncalls, 0, m->ncalls);
  if (err == TASO_OK) err = taso_artifact_set_table_string(a, &plan_table, "library", m->library);
  free(rows);
  return err;
}

taso_err_t taso_model_write_h5(taso_model_t *m, const char *path, const taso_provenance_t *prov) {
  TASO_TRY(taso_model_fold_weights(m));
  TASO_TRY(taso_model_make_weights(m));
  taso_artifact_t *a = NULL;
  int64_t first;
  taso_err_t err = taso_artifact_create(MPI_COMM_SELF, path, TASO_KIND_MODEL, prov, &a);
  if (err == TASO_OK) err = taso_artifact_write_inputs(a, &m->inputs);
  if (err == TASO_OK) err = taso_artifact_write_graphs(a, &m->graph, 1, &first);
  if (err == TASO_OK) err = write_tables(a, m);
  if (err == TASO_OK && m->ncalls > 0) err = write_plan(a, m);
  if (err == TASO_OK) err = taso_artifact_set_count(a, "nodes", m->graph.nnodes);
  if (a) {
    taso_err_t close = taso_artifact_close(a);
    if (err == TASO_OK) err = close;
  }
  return err;
}

/* Rebuilds the model through the builder, so that every type is checked
 * again: a file edited by hand cannot smuggle in an impossible shape. */
static taso_err_t rebuild(const char *path, const taso_inputs_t *in, const taso_graph_t *g,
                          const tensor_rec_t *t, const name_rec_t *o, const float *w, int64_t nw,
                          taso_model_t *m) {
  taso_ref_t *map = malloc(sizeof *map * (size_t)(2 * g->nnodes + 1));
  if (!map) return taso_error(TASO_ERR_NOMEM, "%s: model of %d nodes", path, g->nnodes);
  taso_err_t err = TASO_OK;
  for (int i = 0; i < g->nnodes && err == TASO_OK; i++) {
    const taso_node_t *n = &g->nodes[i];
    if (n->kind == TASO_OP_INPUT) {
      int k = n->p.input;
      const taso_tensor_t *ty = &in->v[k].type;
      const float *values = NULL;
      if (t[k].offset >= 0) {
        if (t[k].offset + taso_tensor_size(ty) > nw)
          err =
              taso_error(TASO_ERR_FORMAT, "%s: values of '%s' lie past /weights", path, t[k].name);
        values = w + t[k].offset;
      }
      if (err == TASO_OK)
        err = taso_model_input(m, t[k].name, t[k].weight != 0, ty->rank, ty->dim, values,
                               &map[2 * i]);
      continue;
    }
    taso_ref_t args[3] = {-1, -1, -1};
    for (int a = 0; a < taso_ops[n->kind].arity; a++)
      args[a] = map[n->in[a]];
    err = taso_model_node(m, (taso_op_kind_t)n->kind, &n->p, args, &map[2 * i]);
    if (err == TASO_OK) map[2 * i + 1] = map[2 * i] + 1;
    if (err != TASO_OK) err = taso_error_prefix(err, "%s: node %d: ", path, i);
  }
  for (int k = 0; k < g->noutputs && err == TASO_OK; k++)
    err = taso_model_output(m, map[g->outputs[k]], o[k].name);
  free(map);
  return err;
}

static taso_err_t bad_row(const char *path, int64_t row, const char *field, int value, int lo,
                          int hi) {
  return taso_error(TASO_ERR_FORMAT, "%s: /plan row %lld: %s %d is not within %d..%d", path,
                    (long long)row, field, value, lo, hi);
}

/* The plan's rows as a model of nnodes nodes can hold them: a file edited
 * by hand must not send the runtime to a node it does not have. */
static taso_err_t check_plan(const char *path, const taso_call_t *rows, int64_t n, int nnodes) {
  for (int64_t i = 0; i < n; i++) {
    const taso_call_t *c = &rows[i];
    if (c->node < 0 || c->node >= nnodes) return bad_row(path, i, "node", c->node, 0, nnodes - 1);
    if (c->first_node < 0 || c->first_node > c->node)
      return bad_row(path, i, "first_node", c->first_node, 0, c->node);
    if (c->fused < 1 || c->fused > 4) return bad_row(path, i, "fused", c->fused, 1, 4);
    if (c->layout < 0 || c->layout > 2) return bad_row(path, i, "layout", c->layout, 0, 2);
    if (c->in_place < TASO_CALL_PLACED || c->in_place > 5)
      return bad_row(path, i, "in_place", c->in_place, TASO_CALL_PLACED, 5);
    if (!memchr(c->call, '\0', TASO_CALL_NAME_LEN))
      return taso_error(TASO_ERR_FORMAT, "%s: /plan row %lld: call name is not NUL-terminated",
                        path, (long long)i);
  }
  return TASO_OK;
}

/* The plan, when the file has one, into m (already rebuilt). */
static taso_err_t read_plan(taso_artifact_t *a, const char *path, taso_model_t *m) {
  int64_t n = 0;
  taso_call_t *rows = NULL;
  char *library = NULL;
  TASO_TRY(taso_artifact_table_length(a, &plan_table, &n));
  if (n == 0) return TASO_OK;
  taso_err_t err = TASO_OK;
  if (n > INT32_MAX)
    err = taso_error(TASO_ERR_FORMAT, "%s: /plan has %lld rows", path, (long long)n);
  if (err == TASO_OK) err = taso_artifact_read_table(a, &plan_table, 0, n, (void **)&rows);
  if (err == TASO_OK) err = check_plan(path, rows, n, m->graph.nnodes);
  if (err == TASO_OK) err = taso_artifact_get_table_string(a, &plan_table, "library", &library);
  if (err == TASO_OK && strlen(library) >= TASO_MODEL_NAME_LEN)
    err = taso_error(TASO_ERR_FORMAT, "%s: /plan's library name is longer than %d characters", path,
                     TASO_MODEL_NAME_LEN - 1);
  if (err == TASO_OK) {
    snprintf(m->library, sizeof m->library, "%s", library);
    m->calls = rows;
    m->ncalls = (int)n;
    rows = NULL;
  }
  free(rows);
  free(library);
  return err;
}

taso_err_t taso_model_read_h5(const char *path, taso_model_t *m) {
  taso_artifact_t *a = NULL;
  taso_inputs_t in = {0};
  taso_graph_t *g = NULL;
  int64_t ng = 0, nt = 0, no = 0, nw = 0, ni = 0;
  tensor_rec_t *t = NULL;
  name_rec_t *o = NULL;
  info_rec_t *info = NULL;
  float *w = NULL;
  taso_model_init(m, NULL);
  taso_err_t err = taso_artifact_open(MPI_COMM_SELF, path, TASO_KIND_MODEL, &a);
  if (err == TASO_OK) err = taso_artifact_read_inputs(a, &in);
  if (err == TASO_OK) err = taso_artifact_read_graphs(a, &g, &ng);
  if (err == TASO_OK && ng != 1)
    err =
        taso_error(TASO_ERR_FORMAT, "%s: holds %lld graphs, a model has one", path, (long long)ng);
  if (err == TASO_OK) err = taso_artifact_table_length(a, &info_table, &ni);
  if (err == TASO_OK) err = taso_artifact_table_length(a, &tensors_table, &nt);
  if (err == TASO_OK) err = taso_artifact_table_length(a, &outputs_table, &no);
  if (err == TASO_OK) err = taso_artifact_table_length(a, &weights_table, &nw);
  if (err == TASO_OK && (ni != 1 || nt != in.n || no != g->noutputs))
    err = taso_error(TASO_ERR_FORMAT,
                     "%s: /model, /tensors and /outputs tables do not match its graph", path);
  if (err == TASO_OK) err = taso_artifact_read_table(a, &info_table, 0, 1, (void **)&info);
  if (err == TASO_OK) err = taso_artifact_read_table(a, &tensors_table, 0, nt, (void **)&t);
  if (err == TASO_OK) err = taso_artifact_read_table(a, &outputs_table, 0, no, (void **)&o);
  if (err == TASO_OK && nw) err = taso_artifact_read_table(a, &weights_table, 0, nw, (void **)&w);
  if (err == TASO_OK) {
    snprintf(m->name, sizeof m->name, "%s", info->name);
    m->seed = (uint64_t)info->seed;
    err = rebuild(path, &in, g, t, o, w, nw, m);
  }
  if (err == TASO_OK) err = read_plan(a, path, m);
  if (a) {
    taso_err_t close = taso_artifact_close(a);
    if (err == TASO_OK) err = close;
  }
  if (g) taso_graphs_free(g, ng);
  taso_inputs_free(&in);
  free(t);
  free(o);
  free(info);
  free(w);
  if (err != TASO_OK) taso_model_free(m);
  return err;
}
