#define _POSIX_C_SOURCE 200809L
#include "onnx.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The ONNX operators taso imports (issue 13): their model-graph operators
 * are the registry's, or become them (Clip as ReLU6, Dropout and Identity
 * as nothing at inference, Constant as a weight: exported models give
 * Reshape its shape and Clip its bounds that way). */
static const char *const supported[] = {
    "Conv",        "MatMul",  "Gemm",    "Add",     "Mul",      "Relu",
    "Sigmoid",     "Tanh",    "Softmax", "MaxPool", "AveragePool",
    "GlobalAveragePool",      "BatchNormalization", "Concat",   "Split",
    "Reshape",     "Flatten", "Transpose", "Identity", "Dropout", "Clip",
    "Constant",    NULL,
};

/* Larger files are not models this tool can hold in memory anyway. */
#define MAX_FILE_BYTES ((size_t)1 << 31)

static taso_err_t read_file(const char *path, uint8_t **out, size_t *len) {
  FILE *f = fopen(path, "rb");
  if (!f) return taso_error(TASO_ERR_IO, "%s: cannot open: %s", path, strerror(errno));
  size_t cap = 1 << 16, n = 0;
  uint8_t *buf = malloc(cap);
  taso_err_t err = TASO_OK;
  while (buf) {
    if (n == cap) {
      uint8_t *bigger = cap < MAX_FILE_BYTES ? realloc(buf, cap * 2) : NULL;
      if (!bigger) {
        err = cap < MAX_FILE_BYTES
                  ? taso_error(TASO_ERR_NOMEM, "%s: no memory to read it", path)
                  : taso_error(TASO_ERR_LIMIT, "%s: larger than %zu bytes", path, MAX_FILE_BYTES);
        break;
      }
      buf = bigger;
      cap *= 2;
    }
    size_t got = fread(buf + n, 1, cap - n, f);
    n += got;
    if (got == 0) break;
  }
  if (!buf) err = taso_error(TASO_ERR_NOMEM, "%s: no memory to read it", path);
  if (err == TASO_OK && ferror(f))
    err = taso_error(TASO_ERR_IO, "%s: cannot read: %s", path, strerror(errno));
  fclose(f);
  if (err != TASO_OK) {
    free(buf);
    return err;
  }
  *out = buf;
  *len = n;
  return TASO_OK;
}

taso_err_t taso_onnx_load(const char *path, Onnx__ModelProto **out) {
  uint8_t *bytes;
  size_t len;
  *out = NULL;
  TASO_TRY(read_file(path, &bytes, &len));
  Onnx__ModelProto *m = len ? onnx__model_proto__unpack(NULL, len, bytes) : NULL;
  free(bytes);
  if (!m)
    return taso_error(TASO_ERR_FORMAT,
                      "%s: not an ONNX model (%s)", path,
                      len ? "not a protobuf ModelProto: truncated, or another kind of file"
                          : "the file is empty");
  if (!m->graph) {
    onnx__model_proto__free_unpacked(m, NULL);
    return taso_error(TASO_ERR_FORMAT, "%s: an ONNX model without a graph", path);
  }
  *out = m;
  return TASO_OK;
}

void taso_onnx_free(Onnx__ModelProto *m) {
  if (m) onnx__model_proto__free_unpacked(m, NULL);
}

static int default_domain(const char *domain) {
  return !domain || !domain[0] || !strcmp(domain, "ai.onnx");
}

int64_t taso_onnx_opset(const Onnx__ModelProto *m) {
  for (size_t i = 0; i < m->n_opset_import; i++)
    if (default_domain(m->opset_import[i]->domain) && m->opset_import[i]->has_version)
      return m->opset_import[i]->version;
  return 0;
}

int taso_onnx_supported(const char *op_type) {
  for (int i = 0; supported[i]; i++)
    if (!strcmp(supported[i], op_type)) return 1;
  return 0;
}

taso_err_t taso_onnx_check(const Onnx__ModelProto *m, const char *path) {
  int64_t opset = taso_onnx_opset(m);
  if (opset < TASO_ONNX_OPSET_MIN || opset > TASO_ONNX_OPSET_MAX)
    return taso_error(TASO_ERR_FORMAT, "%s: opset %lld of the default domain; taso imports %d to %d",
                      path, (long long)opset, TASO_ONNX_OPSET_MIN, TASO_ONNX_OPSET_MAX);
  /* Every unsupported node in one message: a user converting a model wants
   * the whole list at once, not one per attempt. */
  char list[768] = "";
  size_t at = 0;
  int bad = 0;
  const Onnx__GraphProto *g = m->graph;
  for (size_t i = 0; i < g->n_node; i++) {
    const Onnx__NodeProto *n = g->node[i];
    const char *op = n->op_type ? n->op_type : "";
    if (default_domain(n->domain) && taso_onnx_supported(op)) continue;
    bad++;
    if (at < sizeof list) {
      int w = snprintf(list + at, sizeof list - at, "%s%s (%s%s%s, opset %lld)", bad > 1 ? ", " : "",
                       n->name && n->name[0] ? n->name : "unnamed", default_domain(n->domain) ? "" : n->domain,
                       default_domain(n->domain) ? "" : ".", op, (long long)opset);
      at = w > 0 ? at + (size_t)w : sizeof list;
    }
  }
  if (!bad) return TASO_OK;
  if (at >= sizeof list) strcpy(list + sizeof list - 5, "...");
  return taso_error(TASO_ERR_UNKNOWN, "%s: %d of %zu nodes not supported: %s", path, bad, g->n_node,
                    list);
}

taso_err_t taso_onnx_read_tensor(const char *path, taso_onnx_tensor_t *out) {
  uint8_t *bytes;
  size_t len;
  memset(out, 0, sizeof *out);
  TASO_TRY(read_file(path, &bytes, &len));
  Onnx__TensorProto *t = len ? onnx__tensor_proto__unpack(NULL, len, bytes) : NULL;
  free(bytes);
  if (!t) return taso_error(TASO_ERR_FORMAT, "%s: not an ONNX TensorProto", path);
  taso_err_t err = TASO_OK;
  int64_t n = 1;
  if (t->data_type != ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT)
    err = taso_error(TASO_ERR_FORMAT, "%s: element type %d; only float32 (1) is read", path,
                     (int)t->data_type);
  else if (t->n_dims > TASO_ONNX_MAX_RANK)
    err = taso_error(TASO_ERR_LIMIT, "%s: rank %zu; at most %d", path, t->n_dims,
                     TASO_ONNX_MAX_RANK);
  for (size_t i = 0; err == TASO_OK && i < t->n_dims; i++) {
    if (t->dims[i] < 0 || (t->dims[i] > 0 && n > INT64_MAX / t->dims[i]))
      err = taso_error(TASO_ERR_FORMAT, "%s: dimension %zu is %lld", path, i,
                       (long long)t->dims[i]);
    else
      n *= t->dims[i];
  }
  size_t have = t->has_raw_data ? t->raw_data.len / sizeof(float) : t->n_float_data;
  if (err == TASO_OK && ((t->has_raw_data && t->raw_data.len % sizeof(float)) || (int64_t)have != n))
    err = taso_error(TASO_ERR_FORMAT, "%s: %zu values for %lld elements", path, have, (long long)n);
  if (err == TASO_OK && !(out->data = malloc(sizeof(float) * (size_t)(n ? n : 1))))
    err = taso_error(TASO_ERR_NOMEM, "%s: no memory for %lld values", path, (long long)n);
  if (err == TASO_OK) {
    /* raw_data is little-endian float32, as this machine's floats are. */
    memcpy(out->data, t->has_raw_data ? (const void *)t->raw_data.data : t->float_data,
           sizeof(float) * (size_t)n);
    out->rank = (int)t->n_dims;
    for (int i = 0; i < out->rank; i++) out->dims[i] = t->dims[i];
    out->n = n;
    snprintf(out->name, sizeof out->name, "%s", t->name ? t->name : "");
  }
  onnx__tensor_proto__free_unpacked(t, NULL);
  return err;
}

void taso_onnx_tensor_free(taso_onnx_tensor_t *t) {
  free(t->data);
  memset(t, 0, sizeof *t);
}
