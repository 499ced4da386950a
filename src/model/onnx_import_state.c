/*
 * ONNX import, the importer's state: the table of what each ONNX tensor name
 * stands for (a model tensor, a constant, nothing yet) and the helpers that
 * read and write it, which the graph walk (onnx_import.c), the operator
 * handlers (onnx_import_ops.c) and constant folding (onnx_import_fold.c) all
 * use. Kept apart from the graph walk so that the handlers call down into it
 * and nothing here calls back up.
 */
#define _POSIX_C_SOURCE 200809L
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "hash.h"
#include "onnx.h"
#include "onnx_import_impl.h"
#include "onnx_internal.h"

/* ---- the value table ------------------------------------------------------ */

static uint32_t name_hash(const char *s) {
  return (uint32_t)taso_fnv64(TASO_FNV_START, s, strlen(s));
}

value_t *im_find(importer_t *im, const char *name) {
  for (uint32_t h = name_hash(name) & (uint32_t)(im->nslots - 1);;
       h = (h + 1) & (uint32_t)(im->nslots - 1)) {
    int at = im->slots[h];
    if (at == 0) return NULL;
    if (!strcmp(im->v[at - 1].name, name)) return &im->v[at - 1];
  }
}

/* The entry of name, made (V_NONE) when new. */
taso_err_t im_define(importer_t *im, const char *name, value_t **out) {
  value_t *v = im_find(im, name);
  if (v) {
    *out = v;
    return TASO_OK;
  }
  if (im->nv + 1 > im->nslots / 2)
    return taso_error(TASO_ERR_LIMIT, "%s: more tensors than the table was sized for", im->path);
  im->v[im->nv] = (value_t){.name = name, .kind = V_NONE, .weight = -1};
  uint32_t h = name_hash(name) & (uint32_t)(im->nslots - 1);
  while (im->slots[h])
    h = (h + 1) & (uint32_t)(im->nslots - 1);
  im->slots[h] = ++im->nv;
  *out = &im->v[im->nv - 1];
  return TASO_OK;
}

/* ---- helpers for the operator handlers ------------------------------------ */

taso_err_t im_unsupported(const char *fmt, ...) {
  char buf[512];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(buf, sizeof buf, fmt, ap);
  va_end(ap);
  return taso_error(TASO_ERR_UNSUPPORTED, "%s", buf);
}

int im_has_input(const Onnx__NodeProto *n, size_t i) {
  return i < n->n_input && n->input[i] && n->input[i][0];
}

int im_has_output(const Onnx__NodeProto *n, size_t i) {
  return i < n->n_output && n->output[i] && n->output[i][0];
}

const char *im_label(const Onnx__NodeProto *n) {
  return n->name && n->name[0] ? n->name : im_has_output(n, 0) ? n->output[0] : "node";
}

const Onnx__TensorProto *im_const(importer_t *im, const Onnx__NodeProto *n, size_t i) {
  if (!im_has_input(n, i)) return NULL;
  value_t *v = im_find(im, n->input[i]);
  return v && v->kind == V_CONST ? v->t : NULL;
}

/* Dims of a TensorProto as a registry shape; UNSUPPORTED past rank 4 or for
 * an empty or huge dim. */
static taso_err_t proto_dims(const Onnx__TensorProto *t, int *rank, int32_t *dim) {
  if (t->n_dims > TASO_MAX_RANK)
    return im_unsupported("rank %zu tensor %s, at most 4", t->n_dims, t->name ? t->name : "");
  for (size_t i = 0; i < t->n_dims; i++) {
    if (t->dims[i] < 1 || t->dims[i] > INT32_MAX)
      return im_unsupported("tensor '%s' has size %lld on axis %zu", t->name ? t->name : "",
                            (long long)t->dims[i], i);
    dim[i] = (int32_t)t->dims[i];
  }
  *rank = (int)t->n_dims;
  return TASO_OK;
}

taso_err_t im_weight(importer_t *im, const char *name, int rank, const int32_t *dim,
                     const float *values, taso_ref_t *ref) {
  char unique[TASO_MODEL_NAME_LEN];
  snprintf(unique, sizeof unique, "%s", name);
  /* A folded or reshaped weight takes its source's name when that is free,
   * else the name with a number: names stay readable and unique. */
  for (int k = 2; taso_model_find_input(im->m, unique) >= 0; k++)
    snprintf(unique, sizeof unique, "%.100s_%d", name, k);
  return taso_model_input(im->m, unique, true, rank, dim, values, ref);
}

/* A float constant's values (malloc'd); n receives the element count. */
taso_err_t im_const_floats(const Onnx__TensorProto *t, float **out, int64_t *n) {
  *n = taso_onnx_numel(t);
  *out = malloc(sizeof(float) * (size_t)(*n > 0 ? *n : 1));
  if (!*out) return taso_error(TASO_ERR_NOMEM, "values of '%s'", t->name ? t->name : "");
  taso_err_t err = taso_onnx_values_float(t, *out, *n);
  if (err != TASO_OK) {
    free(*out);
    *out = NULL;
    if (err == TASO_ERR_FORMAT) return im_unsupported("%s", taso_error_detail());
  }
  return err;
}

/* A constant as a weight of its own shape, made once. */
static taso_err_t const_weight(importer_t *im, value_t *v, taso_ref_t *ref) {
  if (v->weight >= 0) {
    *ref = v->weight;
    return TASO_OK;
  }
  int rank = 0;
  int32_t dim[TASO_MAX_RANK];
  TASO_TRY(proto_dims(v->t, &rank, dim));
  if (taso_onnx_seeded(v->t)) { /* a graph-only file's weight: the seed's values */
    TASO_TRY(im_weight(im, v->name, rank, dim, NULL, &v->weight));
    *ref = v->weight;
    return TASO_OK;
  }
  float *data;
  int64_t n;
  TASO_TRY(im_const_floats(v->t, &data, &n));
  taso_err_t err = im_weight(im, v->name, rank, dim, data, &v->weight);
  free(data);
  *ref = v->weight;
  return err;
}

taso_err_t im_tensor(importer_t *im, const Onnx__NodeProto *n, size_t i, taso_ref_t *ref) {
  if (!im_has_input(n, i)) return im_unsupported("input %zu missing", i);
  value_t *v = im_find(im, n->input[i]);
  if (!v || v->kind == V_NONE)
    return taso_error(TASO_ERR_FORMAT, "'%s' is defined nowhere", n->input[i]);
  if (v->kind == V_CONST) return const_weight(im, v, ref);
  if (v->lead)
    return im_unsupported("'%s' of rank %d", n->input[i], v->lead + im_type(im, v->ref)->rank);
  if (v->pad[0] || v->pad[1] || v->pad[2] || v->pad[3])
    return im_unsupported("'%s' padded by a Pad that only a convolution or average pool takes",
                          n->input[i]);
  *ref = v->ref;
  return TASO_OK;
}

const taso_tensor_t *im_type(importer_t *im, taso_ref_t ref) {
  return taso_model_type(im->m, ref);
}

taso_err_t im_node(importer_t *im, taso_op_kind_t kind, const taso_params_t *p, taso_ref_t a,
                   taso_ref_t b, taso_ref_t c, taso_ref_t *out) {
  taso_ref_t in[3] = {a, b, c};
  taso_err_t err = taso_model_node(im->m, kind, p, in, out);
  /* A shape the registry refuses is a model import cannot express. */
  if (err == TASO_ERR_SHAPE || err == TASO_ERR_LIMIT)
    return im_unsupported("%s", taso_error_detail());
  return err;
}

taso_err_t im_reshape(importer_t *im, taso_ref_t x, int rank, const int32_t *dim, taso_ref_t *out) {
  const taso_tensor_t *t = im_type(im, x);
  if (t->rank == rank && !memcmp(t->dim, dim, sizeof(int32_t) * (size_t)rank)) {
    *out = x;
    return TASO_OK;
  }
  taso_params_t p = taso_params_default();
  p.rank = rank;
  memcpy(p.shape, dim, sizeof(int32_t) * (size_t)rank);
  return im_node(im, TASO_OP_RESHAPE, &p, x, -1, -1, out);
}

taso_err_t im_scalar_weight(importer_t *im, const Onnx__NodeProto *n, const char *what, float value,
                            taso_ref_t *ref) {
  char name[TASO_MODEL_NAME_LEN];
  snprintf(name, sizeof name, "%.100s.%s", im_label(n), what);
  return im_weight(im, name, 0, NULL, &value, ref);
}

taso_err_t im_set_lead(importer_t *im, const Onnx__NodeProto *n, size_t k, taso_ref_t ref,
                       int lead) {
  if (!im_has_output(n, k)) return TASO_OK;
  value_t *v = NULL;
  TASO_TRY(im_define(im, n->output[k], &v));
  if (v->kind != V_NONE) return taso_error(TASO_ERR_FORMAT, "'%s' is defined twice", v->name);
  v->kind = V_TENSOR;
  v->ref = ref;
  v->lead = lead;
  return TASO_OK;
}

taso_err_t im_set(importer_t *im, const Onnx__NodeProto *n, size_t k, taso_ref_t ref) {
  return im_set_lead(im, n, k, ref, 0);
}

taso_err_t im_set_padded(importer_t *im, const Onnx__NodeProto *n, size_t k, taso_ref_t ref,
                         const int32_t *pad) {
  TASO_TRY(im_set_lead(im, n, k, ref, 0));
  value_t *v = im_has_output(n, k) ? im_find(im, n->output[k]) : NULL;
  if (v) memcpy(v->pad, pad, sizeof v->pad);
  return TASO_OK;
}

taso_err_t im_tensor_padded(importer_t *im, const Onnx__NodeProto *n, size_t i, taso_ref_t *ref,
                            int32_t *pad) {
  value_t *v = im_has_input(n, i) ? im_find(im, n->input[i]) : NULL;
  memset(pad, 0, 4 * sizeof *pad);
  if (!v || v->kind != V_TENSOR || v->lead) return im_tensor(im, n, i, ref);
  memcpy(pad, v->pad, 4 * sizeof *pad);
  *ref = v->ref;
  return TASO_OK;
}

taso_err_t im_tensor_lead(importer_t *im, const Onnx__NodeProto *n, size_t i, taso_ref_t *ref,
                          int *lead) {
  value_t *v = im_has_input(n, i) ? im_find(im, n->input[i]) : NULL;
  *lead = v && v->kind == V_TENSOR ? v->lead : 0;
  if (!*lead) return im_tensor(im, n, i, ref);
  *ref = v->ref;
  return TASO_OK;
}

taso_err_t im_alias(importer_t *im, const Onnx__NodeProto *n, size_t k, size_t input) {
  value_t *src = im_find(im, n->input[input]), *v = NULL;
  TASO_TRY(im_define(im, n->output[k], &v));
  if (v->kind != V_NONE) return taso_error(TASO_ERR_FORMAT, "'%s' is defined twice", v->name);
  src = im_find(im, n->input[input]); /* the table may not move, but stay safe */
  const char *name = v->name;
  *v = *src;
  v->name = name;
  /* An aliased constant keeps its source's weight, so it is made once. */
  if (src->kind == V_CONST) v->weight = src->weight;
  return TASO_OK;
}

taso_err_t im_set_const(importer_t *im, const Onnx__NodeProto *n, size_t k,
                        const Onnx__TensorProto *t) {
  value_t *v = NULL;
  TASO_TRY(im_define(im, n->output[k], &v));
  if (v->kind != V_NONE) return taso_error(TASO_ERR_FORMAT, "'%s' is defined twice", v->name);
  v->kind = V_CONST;
  v->t = t;
  return TASO_OK;
}

taso_err_t im_const_ints(const Onnx__TensorProto *t, int64_t *out, int max, int *n) {
  int64_t count = taso_onnx_numel(t);
  if (count < 0 || count > max)
    return im_unsupported("%lld values where at most %d fit", (long long)count, max);
  taso_err_t err = taso_onnx_values_int(t, out, count);
  if (err == TASO_ERR_FORMAT) return im_unsupported("%s", taso_error_detail());
  *n = (int)count;
  return err;
}

int im_axis(int64_t axis, int rank, int *out) {
  if (axis < -rank || axis >= (rank ? rank : 1)) return 0;
  *out = (int)(axis < 0 ? axis + rank : axis);
  return 1;
}

/* ---- constants as outputs ------------------------------------------------- */

/* A constant output (a graph that import computed whole): a weight, an
 * integer or boolean one with its values as floats. */
taso_err_t im_const_output(importer_t *im, value_t *v, taso_ref_t *ref) {
  const Onnx__TensorProto *t = v->t;
  if (t->data_type != ONNX__TENSOR_PROTO__DATA_TYPE__BOOL &&
      t->data_type != ONNX__TENSOR_PROTO__DATA_TYPE__INT64 &&
      t->data_type != ONNX__TENSOR_PROTO__DATA_TYPE__INT32)
    return const_weight(im, v, ref);
  int rank = 0;
  int32_t dim[TASO_MAX_RANK];
  TASO_TRY(proto_dims(t, &rank, dim));
  int64_t n = taso_onnx_numel(t);
  int64_t *iv = malloc(sizeof *iv * (size_t)(n ? n : 1));
  float *fv = malloc(sizeof *fv * (size_t)(n ? n : 1));
  taso_err_t err = iv && fv ? TASO_OK : taso_error(TASO_ERR_NOMEM, "output '%s'", v->name);
  if (err == TASO_OK) err = taso_onnx_values_int(t, iv, n);
  if (err == TASO_ERR_FORMAT) err = im_unsupported("%s", taso_error_detail());
  for (int64_t i = 0; err == TASO_OK && i < n; i++)
    fv[i] = (float)iv[i];
  if (err == TASO_OK) err = im_weight(im, v->name, rank, dim, fv, ref);
  free(iv);
  free(fv);
  return err;
}
