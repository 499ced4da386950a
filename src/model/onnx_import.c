/*
 * ONNX import: an ONNX graph onto the operator registry.
 *
 * Initializers and Constant outputs stay values (TensorProtos) until a node
 * uses them as data: then they become weights under their own names. That
 * way int64 shapes, split sizes and clip bounds are read at import and
 * never become weights, and a weight that import folds (a transposed Gemm
 * B, a batch norm's statistics) is made once, already folded. Operators map
 * onto the substitution language where they can (ewadd for same-shape Add,
 * SAME or VALID for padding that equals it) so that substitutions match
 * imported models. Every node that cannot be imported is collected with its
 * reason and the model is refused with the whole list.
 */
#define _POSIX_C_SOURCE 200809L
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "onnx.h"
#include "onnx_import_impl.h"
#include "onnx_internal.h"

/* ---- graph inputs, initializers, outputs ----------------------------------- */

/* A run-time graph input: float, concrete shape, rank <= 4; else listed. */
static taso_err_t add_graph_input(importer_t *im, const Onnx__ValueInfoProto *vi) {
  value_t *v;
  TASO_TRY(im_define(im, vi->name, &v));
  if (v->kind != V_NONE) return TASO_OK; /* an initializer or a bound value */
  v->kind = V_BAD;
  char what[TASO_MODEL_NAME_LEN + 16], why[128] = "";
  snprintf(what, sizeof what, "input %s", vi->name);
  const Onnx__TypeProto *tp = vi->type;
  if (!tp || tp->value_case != ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE || !tp->tensor_type)
    snprintf(why, sizeof why, "not a tensor");
  else if (tp->tensor_type->elem_type != ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT)
    snprintf(why, sizeof why, "%s input", taso_onnx_type_name(tp->tensor_type->elem_type));
  else if (!tp->tensor_type->shape)
    snprintf(why, sizeof why, "no shape");
  else if (tp->tensor_type->shape->n_dim > TASO_MAX_RANK)
    snprintf(why, sizeof why, "rank %zu", tp->tensor_type->shape->n_dim);
  int32_t dim[TASO_MAX_RANK];
  const Onnx__TensorShapeProto *s = why[0] ? NULL : tp->tensor_type->shape;
  for (size_t i = 0; s && i < s->n_dim && !why[0]; i++) {
    const Onnx__TensorShapeProto__Dimension *d = s->dim[i];
    if (d->value_case != ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_VALUE)
      snprintf(why, sizeof why, "symbolic size on axis %zu", i);
    else if (d->dim_value < 1 || d->dim_value > INT32_MAX)
      snprintf(why, sizeof why, "size %lld on axis %zu", (long long)d->dim_value, i);
    else
      dim[i] = (int32_t)d->dim_value;
  }
  if (why[0]) {
    taso_onnx_issue_text(&im->issues, what, why);
    return TASO_OK;
  }
  TASO_TRY(taso_model_input(im->m, vi->name, false, (int)s->n_dim, dim, NULL, &v->ref));
  v->kind = V_TENSOR;
  return TASO_OK;
}

static taso_err_t add_const(importer_t *im, const char *name, const Onnx__TensorProto *t) {
  value_t *v;
  if (!name || !name[0])
    return taso_error(TASO_ERR_FORMAT, "%s: an initializer without a name", im->path);
  TASO_TRY(im_define(im, name, &v));
  if (v->kind != V_NONE) return TASO_OK; /* bound values win over initializers */
  v->kind = V_CONST;
  v->t = t;
  return TASO_OK;
}

static taso_err_t add_outputs(importer_t *im) {
  const Onnx__GraphProto *g = im->mp->graph;
  for (size_t i = 0; i < g->n_output; i++) {
    const char *name = g->output[i]->name;
    value_t *v = im_find(im, name);
    if (!v || v->kind == V_NONE)
      return taso_error(TASO_ERR_FORMAT, "%s: output '%s' is defined nowhere", im->path, name);
    if (v->kind == V_BAD) continue;
    taso_ref_t ref = v->ref;
    if (v->kind == V_CONST) {
      taso_err_t err = im_const_output(im, v, &ref);
      if (err == TASO_ERR_UNSUPPORTED) {
        char what[TASO_MODEL_NAME_LEN + 16];
        snprintf(what, sizeof what, "output %s", name);
        taso_onnx_issue_text(&im->issues, what, taso_error_detail());
        continue;
      }
      TASO_TRY(err);
    }
    TASO_TRY(taso_model_output(im->m, ref, name));
  }
  return TASO_OK;
}

/* ---- nodes ------------------------------------------------------------------ */

/* Whether every input of n is known (or absent). */
static int node_ready(importer_t *im, const Onnx__NodeProto *n) {
  for (size_t i = 0; i < n->n_input; i++) {
    if (!im_has_input(n, i)) continue;
    value_t *v = im_find(im, n->input[i]);
    if (!v || v->kind == V_NONE) return 0;
  }
  return 1;
}

static void poison_outputs(importer_t *im, const Onnx__NodeProto *n) {
  for (size_t k = 0; k < n->n_output; k++) {
    value_t *v;
    if (im_has_output(n, k) && im_define(im, n->output[k], &v) == TASO_OK && v->kind == V_NONE)
      v->kind = V_BAD;
  }
}

static taso_err_t import_node(importer_t *im, const Onnx__NodeProto *n) {
  const char *reason;
  const char *domain = n->domain;
  int dflt = !domain || !domain[0] || !strcmp(domain, "ai.onnx");
  if (!dflt || !taso_onnx_opset_ok(n->op_type ? n->op_type : "", im->opset, &reason)) {
    taso_onnx_issue(&im->issues, n, im->opset, dflt ? reason : "not an operator taso imports");
    poison_outputs(im, n);
    return TASO_OK;
  }
  /* Consumers of a node already listed are not listed again: their fault is
   * upstream. */
  for (size_t i = 0; i < n->n_input; i++) {
    value_t *v = im_has_input(n, i) ? im_find(im, n->input[i]) : NULL;
    if (v && v->kind == V_BAD) {
      poison_outputs(im, n);
      return TASO_OK;
    }
  }
  taso_err_t err = taso_onnx_foldable(im, n) ? taso_onnx_fold(im, n) : taso_onnx_import_op(im, n);
  if (err == TASO_OK) return TASO_OK;
  if (err == TASO_ERR_NOMEM || err == TASO_ERR_IO) return err;
  taso_onnx_issue(&im->issues, n, im->opset, taso_error_detail());
  poison_outputs(im, n);
  return TASO_OK;
}

/* Nodes in any order: each sweep imports the nodes whose inputs are known. */
static taso_err_t import_nodes(importer_t *im) {
  const Onnx__GraphProto *g = im->mp->graph;
  char *done = calloc(g->n_node ? g->n_node : 1, 1);
  if (!done) return taso_error(TASO_ERR_NOMEM, "%s: node table", im->path);
  size_t left = g->n_node;
  taso_err_t err = TASO_OK;
  for (int progress = 1; left && progress && err == TASO_OK;) {
    progress = 0;
    for (size_t i = 0; i < g->n_node && err == TASO_OK; i++) {
      if (done[i] || !node_ready(im, g->node[i])) continue;
      err = import_node(im, g->node[i]);
      done[i] = 1;
      left--;
      progress = 1;
    }
  }
  for (size_t i = 0; i < g->n_node && err == TASO_OK && left; i++) {
    if (done[i]) continue;
    const Onnx__NodeProto *n = g->node[i];
    for (size_t k = 0; k < n->n_input; k++) {
      value_t *v = im_has_input(n, k) ? im_find(im, n->input[k]) : NULL;
      if (im_has_input(n, k) && (!v || v->kind == V_NONE)) {
        err = taso_error(TASO_ERR_FORMAT,
                         "%s: input '%s' of node %s is defined nowhere (or in a cycle)", im->path,
                         n->input[k], im_label(n));
        break;
      }
    }
  }
  free(done);
  return err;
}

/* ---- the whole import ------------------------------------------------------- */

static taso_err_t importer_init(importer_t *im, const char *path, const Onnx__ModelProto *mp,
                                taso_model_t *m, int nbound) {
  memset(im, 0, sizeof *im);
  im->path = path;
  im->mp = mp;
  im->m = m;
  im->opset = taso_onnx_opset(mp);
  const Onnx__GraphProto *g = mp->graph;
  size_t names = g->n_input + g->n_initializer + (size_t)nbound + 16;
  for (size_t i = 0; i < g->n_node; i++)
    names += g->node[i]->n_output;
  im->nslots = 16;
  while ((size_t)im->nslots < 2 * names + 2)
    im->nslots *= 2;
  im->slots = calloc((size_t)im->nslots, sizeof *im->slots);
  im->v = calloc((size_t)im->nslots / 2, sizeof *im->v);
  if (!im->slots || !im->v) return taso_error(TASO_ERR_NOMEM, "%s: tensor table", path);
  return TASO_OK;
}

static void importer_free(importer_t *im) {
  for (int i = 0; i < im->nowned; i++)
    free(im->owned[i]);
  free(im->owned);
  free(im->slots);
  free(im->v);
}

static taso_err_t import_graph(importer_t *im, const taso_onnx_binding_t *bound, int nbound) {
  const Onnx__GraphProto *g = im->mp->graph;
  for (int i = 0; i < nbound; i++)
    TASO_TRY(add_const(im, bound[i].name, bound[i].value));
  for (size_t i = 0; i < g->n_initializer; i++)
    TASO_TRY(add_const(im, g->initializer[i]->name, g->initializer[i]));
  for (size_t i = 0; i < g->n_input; i++)
    TASO_TRY(add_graph_input(im, g->input[i]));
  TASO_TRY(import_nodes(im));
  TASO_TRY(add_outputs(im));
  if (im->issues.count) return taso_onnx_issues_error(&im->issues, im->path, g->n_node);
  if (!im->m->graph.noutputs)
    return taso_error(TASO_ERR_FORMAT, "%s: a graph without outputs", im->path);
  return TASO_OK;
}

/* The model's name: the graph's, else the file's base name. */
static void model_name(const char *path, const Onnx__ModelProto *mp, char *buf, size_t len) {
  if (mp->graph->name && mp->graph->name[0]) {
    snprintf(buf, len, "%s", mp->graph->name);
    return;
  }
  const char *base = strrchr(path, '/');
  snprintf(buf, len, "%s", base ? base + 1 : path);
  char *dot = strrchr(buf, '.');
  if (dot && dot != buf) *dot = 0;
}

taso_err_t taso_onnx_import_bound(const char *path, const taso_onnx_binding_t *bound, int nbound,
                                  taso_model_t *m) {
  Onnx__ModelProto *mp;
  taso_model_init(m, NULL);
  TASO_TRY(taso_onnx_load(path, &mp));
  taso_err_t err = TASO_OK;
  int64_t opset = taso_onnx_opset(mp);
  if (opset < 1 || opset > TASO_ONNX_OPSET_MAX)
    err = taso_error(TASO_ERR_FORMAT, "%s: opset %lld of the default domain; taso imports %d to %d",
                     path, (long long)opset, TASO_ONNX_OPSET_MIN, TASO_ONNX_OPSET_MAX);
  char name[TASO_MODEL_NAME_LEN];
  model_name(path, mp, name, sizeof name);
  taso_model_init(m, name);
  importer_t im = {0};
  if (err == TASO_OK) err = importer_init(&im, path, mp, m, nbound);
  if (err == TASO_OK) err = import_graph(&im, bound, nbound);
  /* Seeded weights (a graph-only file's) stay without values until a
   * reader needs them (taso_model_make_weights): showing or converting a
   * VGG does not make its 138 M numbers. */
  importer_free(&im);
  taso_onnx_free(mp);
  if (err != TASO_OK) {
    taso_model_free(m);
    taso_model_init(m, name);
  }
  return err;
}

taso_err_t taso_onnx_import(const char *path, taso_model_t *m) {
  return taso_onnx_import_bound(path, NULL, 0, m);
}
