#define _POSIX_C_SOURCE 200809L
#include "onnx.h"
#include "onnx_internal.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The ONNX operators taso imports (issue 13): their model-graph operators
 * are the registry's, or become them (Clip as ReLU6, Dropout and Identity
 * as nothing at inference, Constant as a weight: exported models give
 * Reshape its shape and Clip its bounds that way). `since` lists the opsets
 * that changed each one's definition up to opset 17, so that a model of an
 * older opset imports where the operator then meant what it means at
 * TASO_ONNX_OPSET_MIN (the backend tests keep GlobalAveragePool at opset 1). */
static const struct {
  const char *op; /* op_type of the default domain */
  int since[8];   /* opsets that (re)defined it, ascending, 0-terminated */
} supported[] = {
    {"Conv", {1, 11}},
    {"MatMul", {1, 9, 13}},
    {"Gemm", {1, 6, 7, 9, 11, 13}},
    {"Add", {1, 6, 7, 13, 14}},
    {"Mul", {1, 6, 7, 13, 14}},
    {"Relu", {1, 6, 13, 14}},
    {"Sigmoid", {1, 6, 13}},
    {"Tanh", {1, 6, 13}},
    {"Softmax", {1, 11, 13}},
    {"MaxPool", {1, 8, 10, 11, 12}},
    {"AveragePool", {1, 7, 10, 11}},
    {"GlobalAveragePool", {1}},
    {"BatchNormalization", {1, 6, 7, 9, 14, 15}},
    {"Concat", {1, 4, 11, 13}},
    {"Split", {1, 2, 11, 13}},
    {"Reshape", {1, 5, 13, 14}},
    {"Flatten", {1, 9, 11, 13}},
    {"Transpose", {1, 13}},
    {"Identity", {1, 13, 14, 16}},
    {"Dropout", {1, 6, 7, 10, 12, 13}},
    {"Clip", {1, 6, 11, 12, 13}},
    {"Constant", {1, 9, 11, 12, 13}},
    /* issue 33: what real exports hold; shape computations fold at import
     * (onnx_import_fold.c), the rest become the operators above */
    {"Sub", {1, 6, 7, 13, 14}},
    {"Div", {1, 6, 7, 13, 14}},
    {"HardSigmoid", {1, 6}},
    {"HardSwish", {14}},
    {"ReduceMean", {1, 11, 13}},
    {"Pad", {1, 2, 11, 13}},
    {"Slice", {1, 10, 11, 13}},
    {"Gather", {1, 11, 13}},
    {"Unsqueeze", {1, 11, 13}},
    {"Squeeze", {1, 11, 13}},
    {"Expand", {8, 13}},
    {"Cast", {1, 6, 9, 13}},
    {"Shape", {1, 13, 15}},
    {"Equal", {1, 7, 11, 13}},
    {"Where", {9, 16}},
    {"ConstantOfShape", {9}},
    {"Range", {11}},
    {"Erf", {9, 13}},
    {"Pow", {1, 7, 12, 13, 15}},
    {"Mod", {10, 13}},
    {"LayerNormalization", {17}},
    {"ScatterND", {11, 13, 16}},
    {NULL, {0}},
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
    return taso_error(TASO_ERR_FORMAT, "%s: not an ONNX model (%s)", path,
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

static int find_supported(const char *op_type) {
  for (int i = 0; supported[i].op; i++)
    if (!strcmp(supported[i].op, op_type)) return i;
  return -1;
}

int taso_onnx_supported(const char *op_type) {
  return find_supported(op_type) >= 0;
}

const char *taso_onnx_supported_op(int i) {
  return i >= 0 && i < (int)(sizeof supported / sizeof *supported) ? supported[i].op : NULL;
}

int taso_onnx_opset_ok(const char *op_type, int64_t opset, const char **reason) {
  int i = find_supported(op_type);
  *reason = NULL;
  if (i < 0) {
    *reason = "not an operator taso imports";
    return 0;
  }
  if (opset >= TASO_ONNX_OPSET_MIN) return 1;
  /* Below the range: fine only if no definition came between this opset
   * and the first one import knows. */
  for (int k = 0; k < 8 && supported[i].since[k]; k++)
    if (supported[i].since[k] > opset && supported[i].since[k] <= TASO_ONNX_OPSET_MIN) {
      *reason = "an older definition than opset 7";
      return 0;
    }
  if (supported[i].since[0] > opset) {
    *reason = "not defined at this opset";
    return 0;
  }
  return 1;
}

void taso_onnx_issue_text(taso_onnx_issues_t *l, const char *what, const char *reason) {
  l->count++;
  if (l->at >= sizeof l->text) return;
  int w = snprintf(l->text + l->at, sizeof l->text - l->at, "%s%s%s%s", l->count > 1 ? ", " : "",
                   what, reason ? ": " : "", reason ? reason : "");
  l->at = w > 0 && (size_t)w < sizeof l->text - l->at ? l->at + (size_t)w : sizeof l->text;
}

void taso_onnx_issue(taso_onnx_issues_t *l, const Onnx__NodeProto *n, int64_t opset,
                     const char *reason) {
  char what[256];
  const char *op = n->op_type ? n->op_type : "";
  int dflt = default_domain(n->domain);
  snprintf(what, sizeof what, "%s (%s%s%s, opset %lld%s%s)",
           n->name && n->name[0] ? n->name
                                 : (n->n_output && n->output[0][0] ? n->output[0] : "unnamed"),
           dflt ? "" : n->domain, dflt ? "" : ".", op, (long long)opset, reason ? ": " : "",
           reason ? reason : "");
  taso_onnx_issue_text(l, what, NULL);
}

taso_err_t taso_onnx_issues_error(const taso_onnx_issues_t *l, const char *path, size_t nodes) {
  char list[sizeof l->text];
  memcpy(list, l->text, sizeof list);
  if (l->at >= sizeof list) strcpy(list + sizeof list - 5, "...");
  return taso_error(TASO_ERR_UNSUPPORTED, "%s: %d of %zu nodes not supported: %s", path, l->count,
                    nodes, list);
}

taso_err_t taso_onnx_check(const Onnx__ModelProto *m, const char *path) {
  int64_t opset = taso_onnx_opset(m);
  if (opset < 1 || opset > TASO_ONNX_OPSET_MAX)
    return taso_error(TASO_ERR_FORMAT,
                      "%s: opset %lld of the default domain; taso imports %d to %d", path,
                      (long long)opset, TASO_ONNX_OPSET_MIN, TASO_ONNX_OPSET_MAX);
  /* Every unsupported node in one message: a user converting a model wants
   * the whole list at once, not one per attempt. */
  taso_onnx_issues_t issues = {.at = 0};
  const Onnx__GraphProto *g = m->graph;
  for (size_t i = 0; i < g->n_node; i++) {
    const Onnx__NodeProto *n = g->node[i];
    const char *reason = "not an operator taso imports";
    if (default_domain(n->domain) &&
        taso_onnx_opset_ok(n->op_type ? n->op_type : "", opset, &reason))
      continue;
    taso_onnx_issue(&issues, n, opset, reason);
  }
  return issues.count ? taso_onnx_issues_error(&issues, path, g->n_node) : TASO_OK;
}

/* ---- attributes and tensor values ---------------------------------------- */

const Onnx__AttributeProto *taso_onnx_attr(const Onnx__NodeProto *n, const char *name) {
  for (size_t i = 0; i < n->n_attribute; i++)
    if (n->attribute[i]->name && !strcmp(n->attribute[i]->name, name)) return n->attribute[i];
  return NULL;
}

int64_t taso_onnx_attr_int(const Onnx__NodeProto *n, const char *name, int64_t def) {
  const Onnx__AttributeProto *a = taso_onnx_attr(n, name);
  return a ? a->i : def;
}

float taso_onnx_attr_float(const Onnx__NodeProto *n, const char *name, float def) {
  const Onnx__AttributeProto *a = taso_onnx_attr(n, name);
  return a ? a->f : def;
}

int taso_onnx_attr_ints(const Onnx__NodeProto *n, const char *name, int64_t *out, int max) {
  const Onnx__AttributeProto *a = taso_onnx_attr(n, name);
  if (!a) return -1;
  for (size_t i = 0; i < a->n_ints && (int)i < max; i++)
    out[i] = a->ints[i];
  return (int)a->n_ints;
}

const char *taso_onnx_attr_string(const Onnx__NodeProto *n, const char *name, const char *def,
                                  char *buf, size_t len) {
  const Onnx__AttributeProto *a = taso_onnx_attr(n, name);
  if (!a) return def;
  size_t k = a->s.len < len - 1 ? a->s.len : len - 1;
  memcpy(buf, a->s.data, k);
  buf[k] = 0;
  return buf;
}

int64_t taso_onnx_numel(const Onnx__TensorProto *t) {
  int64_t n = 1;
  for (size_t i = 0; i < t->n_dims; i++) {
    if (t->dims[i] < 0) return -1;
    n *= t->dims[i];
  }
  return n;
}

const char *taso_onnx_type_name(int32_t data_type) {
  static const char *const names[] = {"undefined",  "float",   "uint8",  "int8",   "uint16",
                                      "int16",      "int32",   "int64",  "string", "bool",
                                      "float16",    "double",  "uint32", "uint64", "complex64",
                                      "complex128", "bfloat16"};
  return data_type >= 0 && data_type < (int32_t)(sizeof names / sizeof *names) ? names[data_type]
                                                                               : "unknown";
}

/* The i-th element of raw_data (little-endian, as this machine is) of
 * elements of `size` bytes. */
static void raw_at(const Onnx__TensorProto *t, int64_t i, size_t size, void *out) {
  memcpy(out, t->raw_data.data + (size_t)i * size, size);
}

static taso_err_t count_error(const Onnx__TensorProto *t, size_t have, int64_t n) {
  return taso_error(TASO_ERR_FORMAT, "tensor '%s': %zu values for %lld elements",
                    t->name ? t->name : "", have, (long long)n);
}

int taso_onnx_seeded(const Onnx__TensorProto *t) {
  if (!t->has_data_location || t->data_location != ONNX__TENSOR_PROTO__DATA_LOCATION__EXTERNAL)
    return 0;
  for (size_t i = 0; i < t->n_external_data; i++) {
    const Onnx__StringStringEntryProto *e = t->external_data[i];
    if (e->key && !strcmp(e->key, "location") && e->value && !strcmp(e->value, TASO_ONNX_SEEDED))
      return 1;
  }
  return 0;
}

static taso_err_t no_values(const Onnx__TensorProto *t) {
  if (taso_onnx_seeded(t))
    return taso_error(TASO_ERR_FORMAT,
                      "tensor '%s' is seeded (a graph-only file): its values are not in the file",
                      t->name ? t->name : "");
  return taso_error(TASO_ERR_FORMAT,
                    "tensor '%s' keeps its data in an external file, which taso "
                    "does not read",
                    t->name ? t->name : "");
}

taso_err_t taso_onnx_values_float(const Onnx__TensorProto *t, float *out, int64_t n) {
  if (t->has_data_location && t->data_location == ONNX__TENSOR_PROTO__DATA_LOCATION__EXTERNAL)
    return no_values(t);
  int raw = t->has_raw_data && t->raw_data.len > 0;
  if (t->data_type == ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT) {
    size_t have = raw ? t->raw_data.len / 4 : t->n_float_data;
    if ((int64_t)have != n) return count_error(t, have, n);
    for (int64_t i = 0; i < n; i++) {
      if (raw)
        raw_at(t, i, 4, &out[i]);
      else
        out[i] = t->float_data[i];
    }
    return TASO_OK;
  }
  if (t->data_type == ONNX__TENSOR_PROTO__DATA_TYPE__DOUBLE) {
    size_t have = raw ? t->raw_data.len / 8 : t->n_double_data;
    if ((int64_t)have != n) return count_error(t, have, n);
    for (int64_t i = 0; i < n; i++) {
      double d;
      if (raw)
        raw_at(t, i, 8, &d);
      else
        d = t->double_data[i];
      out[i] = (float)d;
    }
    return TASO_OK;
  }
  return taso_error(TASO_ERR_FORMAT, "tensor '%s' of %s; float expected", t->name ? t->name : "",
                    taso_onnx_type_name(t->data_type));
}

taso_err_t taso_onnx_values_int(const Onnx__TensorProto *t, int64_t *out, int64_t n) {
  if (t->has_data_location && t->data_location == ONNX__TENSOR_PROTO__DATA_LOCATION__EXTERNAL)
    return no_values(t);
  int raw = t->has_raw_data && t->raw_data.len > 0;
  if (t->data_type == ONNX__TENSOR_PROTO__DATA_TYPE__INT64) {
    size_t have = raw ? t->raw_data.len / 8 : t->n_int64_data;
    if ((int64_t)have != n) return count_error(t, have, n);
    for (int64_t i = 0; i < n; i++) {
      if (raw)
        raw_at(t, i, 8, &out[i]);
      else
        out[i] = t->int64_data[i];
    }
    return TASO_OK;
  }
  if (t->data_type == ONNX__TENSOR_PROTO__DATA_TYPE__INT32) {
    size_t have = raw ? t->raw_data.len / 4 : t->n_int32_data;
    if ((int64_t)have != n) return count_error(t, have, n);
    for (int64_t i = 0; i < n; i++) {
      int32_t v;
      if (raw)
        raw_at(t, i, 4, &v);
      else
        v = t->int32_data[i];
      out[i] = v;
    }
    return TASO_OK;
  }
  if (t->data_type == ONNX__TENSOR_PROTO__DATA_TYPE__BOOL) { /* a byte each, or int32_data */
    size_t have = raw ? t->raw_data.len : t->n_int32_data;
    if ((int64_t)have != n) return count_error(t, have, n);
    for (int64_t i = 0; i < n; i++)
      out[i] = raw ? t->raw_data.data[i] != 0 : t->int32_data[i] != 0;
    return TASO_OK;
  }
  return taso_error(TASO_ERR_FORMAT, "tensor '%s' of %s; int64 expected", t->name ? t->name : "",
                    taso_onnx_type_name(t->data_type));
}

taso_err_t taso_onnx_load_tensor(const char *path, Onnx__TensorProto **out) {
  uint8_t *bytes;
  size_t len;
  *out = NULL;
  TASO_TRY(read_file(path, &bytes, &len));
  *out = len ? onnx__tensor_proto__unpack(NULL, len, bytes) : NULL;
  free(bytes);
  if (!*out) return taso_error(TASO_ERR_FORMAT, "%s: not an ONNX TensorProto", path);
  return TASO_OK;
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
    err =
        taso_error(TASO_ERR_LIMIT, "%s: rank %zu; at most %d", path, t->n_dims, TASO_ONNX_MAX_RANK);
  for (size_t i = 0; err == TASO_OK && i < t->n_dims; i++) {
    if (t->dims[i] < 0 || (t->dims[i] > 0 && n > INT64_MAX / t->dims[i]))
      err =
          taso_error(TASO_ERR_FORMAT, "%s: dimension %zu is %lld", path, i, (long long)t->dims[i]);
    else
      n *= t->dims[i];
  }
  size_t have = t->has_raw_data ? t->raw_data.len / sizeof(float) : t->n_float_data;
  if (err == TASO_OK &&
      ((t->has_raw_data && t->raw_data.len % sizeof(float)) || (int64_t)have != n))
    err = taso_error(TASO_ERR_FORMAT, "%s: %zu values for %lld elements", path, have, (long long)n);
  if (err == TASO_OK && !(out->data = malloc(sizeof(float) * (size_t)(n ? n : 1))))
    err = taso_error(TASO_ERR_NOMEM, "%s: no memory for %lld values", path, (long long)n);
  if (err == TASO_OK) {
    /* raw_data is little-endian float32, as this machine's floats are. */
    memcpy(out->data, t->has_raw_data ? (const void *)t->raw_data.data : t->float_data,
           sizeof(float) * (size_t)n);
    out->rank = (int)t->n_dims;
    for (int i = 0; i < out->rank; i++)
      out->dims[i] = t->dims[i];
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
