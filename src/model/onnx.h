/*
 * ONNX files, read through protobuf-c over the schema that Debian's
 * libonnx-dev installs (onnx/onnx.proto, compiled at build time: nothing of
 * the schema is in this repository).
 *
 * This is the reading half of ONNX import: a model file is loaded and
 * checked against the operators and opsets taso imports, with every
 * unsupported node named in one message, not only the first; test-data
 * tensors (TensorProto files, as the ONNX backend tests of Debian's
 * libonnx-testdata ship them) are read into float arrays. Turning the nodes
 * into a model graph on the operator registry builds on this.
 */
#ifndef TASO_ONNX_H
#define TASO_ONNX_H

#include <stdint.h>

#include "check.h"
#include "model.h"
#include "onnx/onnx.pb-c.h"

/* The opsets of the default domain that import accepts. */
#define TASO_ONNX_OPSET_MIN 7
#define TASO_ONNX_OPSET_MAX 17

#define TASO_ONNX_MAX_RANK 8

/* A float tensor read from a TensorProto. */
typedef struct {
  char name[64];                    /* the proto's name, cut to fit; may be empty */
  int rank;                         /* number of dims */
  int64_t dims[TASO_ONNX_MAX_RANK]; /* sizes */
  int64_t n;                        /* elements: the product of dims */
  float *data;                      /* n values, row-major; malloc'd */
} taso_onnx_tensor_t;

/* Reads an ONNX model file. Errors name the file: it cannot be read, it is
 * not a protobuf ModelProto (truncated, another kind of file), or it has
 * no graph. Free the model with taso_onnx_free. */
taso_err_t taso_onnx_load(const char *path, Onnx__ModelProto **out);
void taso_onnx_free(Onnx__ModelProto *m);

/* The opset of the default domain ("" or "ai.onnx") the model imports, or
 * 0 when it names none. */
int64_t taso_onnx_opset(const Onnx__ModelProto *m);

/* Whether taso imports every node's operator (path names it in messages):
 * TASO_OK, or TASO_ERR_UNSUPPORTED with a message that lists every
 * unsupported node as "NAME (OP_TYPE, opset N: reason)", or
 * TASO_ERR_FORMAT when the model's opset is above TASO_ONNX_OPSET_MAX or
 * missing. An opset below TASO_ONNX_OPSET_MIN is fine for operators whose
 * definition has not changed since it. */
taso_err_t taso_onnx_check(const Onnx__ModelProto *m, const char *path);

/* Whether op_type of the default domain is one taso imports. */
int taso_onnx_supported(const char *op_type);

/* The i-th op type taso imports, NULL past the last. */
const char *taso_onnx_supported_op(int i);

/* Reads a TensorProto file of float32 values (raw_data or float_data).
 * Errors name the file and what is wrong (not a tensor, another element
 * type, a size that does not match its dims). */
taso_err_t taso_onnx_read_tensor(const char *path, taso_onnx_tensor_t *out);
void taso_onnx_tensor_free(taso_onnx_tensor_t *t);

/* Elements of a TensorProto (product of dims; -1 when a dim is negative). */
int64_t taso_onnx_numel(const Onnx__TensorProto *t);
/* Its values as floats (FLOAT, DOUBLE) or as int64 (INT64, INT32, BOOL): n
 * elements into out. TASO_ERR_FORMAT (naming the tensor) on another element
 * type or a data size that does not match. */
taso_err_t taso_onnx_values_float(const Onnx__TensorProto *t, float *out, int64_t n);
taso_err_t taso_onnx_values_int(const Onnx__TensorProto *t, int64_t *out, int64_t n);

/* The location that marks a weight of a graph-only file (scripts/zoo.py's):
 * its data is external at this "file", which import reads as "seed me"
 * (the model's seeded values, as for built-in models). */
#define TASO_ONNX_SEEDED "taso-seeded"
/* Whether t's values are seeded (data_location EXTERNAL at TASO_ONNX_SEEDED). */
int taso_onnx_seeded(const Onnx__TensorProto *t);

/* Reads a TensorProto file of any element type, as it is. Errors name the
 * file. Free it with onnx__tensor_proto__free_unpacked(t, NULL). */
taso_err_t taso_onnx_load_tensor(const char *path, Onnx__TensorProto **out);

/* ---- import and export (onnx_import.c, onnx_export.c) ------------------ */
/* Imports an ONNX file into a model: graph inputs with initializers and
 * other initializers become weights (with their values), the rest inputs;
 * every node maps onto registry operators. An unsupported model is refused
 * with the message of taso_onnx_check. */
taso_err_t taso_onnx_import(const char *path, taso_model_t *m);

/* A value for a graph input that import then treats as an initializer. The
 * ONNX backend tests pass what real models keep in initializers (a
 * Reshape's shape, a BatchNormalization's statistics, Clip's bounds) as
 * graph inputs; binding their test data lets those models import. */
typedef struct {
  const char *name;               /* the graph input's name */
  const Onnx__TensorProto *value; /* its value (not copied; kept by the caller) */
} taso_onnx_binding_t;

/* taso_onnx_import with the given graph inputs bound to values. */
taso_err_t taso_onnx_import_bound(const char *path, const taso_onnx_binding_t *bound, int nbound,
                                  taso_model_t *m);

/* Writes a model as a valid ONNX file (opset 13): every input and weight
 * keeps its own name, weights become initializers, fused activations are
 * written as their own nodes. */
taso_err_t taso_onnx_export(const taso_model_t *m, const char *path);

/* taso_onnx_export into PATH.tmp, then renamed over path: a reader never
 * sees a part-written file, and a failed export leaves path as it was. */
taso_err_t taso_onnx_export_replace(const taso_model_t *m, const char *path);

#endif
