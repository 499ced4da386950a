/*
 * Private to the ONNX module (onnx.c, onnx_import.c, onnx_export.c):
 * reading attributes and tensor values of the protobuf-c structs, and the
 * list of unsupported nodes that the check and the import both build, so
 * that a refused model is refused with one message naming every node.
 */
#ifndef TASO_ONNX_INTERNAL_H
#define TASO_ONNX_INTERNAL_H

#include <stddef.h>
#include <stdint.h>

#include "onnx.h"

/* Unsupported nodes, as "NAME (OP, opset N: reason)", comma-separated. The
 * text stops (with "...") where the error detail would cut it anyway. */
typedef struct {
  char text[900]; /* the list so far */
  size_t at;      /* characters used */
  int count;      /* nodes listed (or cut) */
} taso_onnx_issues_t;

/* Adds a node to the list; reason may be NULL. */
void taso_onnx_issue(taso_onnx_issues_t *l, const Onnx__NodeProto *n, int64_t opset,
                     const char *reason);

/* Adds something that is not a node (a graph input of another element
 * type): "WHAT: reason". */
void taso_onnx_issue_text(taso_onnx_issues_t *l, const char *what, const char *reason);

/* TASO_ERR_UNSUPPORTED naming path and every listed node of nodes. */
taso_err_t taso_onnx_issues_error(const taso_onnx_issues_t *l, const char *path, size_t nodes);

/* Whether the default domain's op_type at opset is defined as it is at some
 * opset in TASO_ONNX_OPSET_MIN..MAX (operators unchanged since an older
 * opset import models of that opset too); reason says why not. */
int taso_onnx_opset_ok(const char *op_type, int64_t opset, const char **reason);

/* Attributes: NULL / the default when absent. */
const Onnx__AttributeProto *taso_onnx_attr(const Onnx__NodeProto *n, const char *name);
int64_t taso_onnx_attr_int(const Onnx__NodeProto *n, const char *name, int64_t def);
float taso_onnx_attr_float(const Onnx__NodeProto *n, const char *name, float def);
/* The ints of an INTS attribute: their count (at most max are copied), or
 * -1 when absent. */
int taso_onnx_attr_ints(const Onnx__NodeProto *n, const char *name, int64_t *out, int max);
/* A STRING attribute into buf (cut to len - 1), or def when absent. */
const char *taso_onnx_attr_string(const Onnx__NodeProto *n, const char *name, const char *def,
                                  char *buf, size_t len);

/* The short name of an element type ("float", "int64") for messages. */
const char *taso_onnx_type_name(int32_t data_type);

#endif
