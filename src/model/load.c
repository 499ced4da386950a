/*
 * TEMPORARY (branch `runtime` only): taso_model_load for two models built
 * in C, until the real load.c (built-in text models of data/models/, ONNX,
 * model .h5) arrives from main. Replace this whole file on merge; only the
 * runtime's tests, taso-run and bench/resnet50_cpu.sh use it.
 *
 *   tiny                  a small CNN: conv, pool, concat, residual add,
 *                         relu, matmul, softmax
 *   resnet50[:batch=B,size=S]  ResNet-50 v1: stem 7x7/2 conv, 3x3/2 max
 *                         pool, bottlenecks 3/4/6/3 (the stride on the
 *                         3x3 conv, as TASO's example), global average
 *                         pool, fc 1000. Batch norm is folded: each conv
 *                         has a per-channel bias add, as inference graphs
 *                         exported with folding have.
 */
#include <stdlib.h>
#include <string.h>

#include "model.h"

typedef struct {
  taso_model_t *m;
  taso_err_t err; /* the first error; later calls do nothing */
  int count;      /* weights made, for unique names */
} builder_t;

static taso_ref_t b_weight(builder_t *b, const char *what, int rank, const int32_t *dim) {
  taso_ref_t r = -1;
  if (b->err != TASO_OK) return r;
  char name[64];
  snprintf(name, sizeof name, "%s%d", what, b->count++);
  b->err = taso_model_input(b->m, name, true, rank, dim, NULL, &r);
  return r;
}

static taso_ref_t b_node(builder_t *b, taso_op_kind_t kind, const taso_params_t *p, taso_ref_t x,
                         taso_ref_t y) {
  taso_ref_t in[3] = {x, y, -1}, r = -1;
  taso_params_t d = taso_params_default();
  if (b->err == TASO_OK) b->err = taso_model_node(b->m, kind, p ? p : &d, in, &r);
  return r;
}

/* conv (k x k, stride s, SAME) with a per-channel bias, then ReLU if relu. */
static taso_ref_t b_conv(builder_t *b, taso_ref_t x, int32_t out, int32_t k, int32_t s,
                         bool relu) {
  if (b->err != TASO_OK) return -1;
  const taso_tensor_t *t = taso_model_type(b->m, x);
  int32_t wd[4] = {out, t->dim[1], k, k}, bd[4] = {1, out, 1, 1};
  taso_params_t p = taso_params_default();
  p.stride[0] = p.stride[1] = s;
  taso_ref_t y = b_node(b, TASO_OP_CONV2D, &p, x, b_weight(b, "conv", 4, wd));
  y = b_node(b, TASO_OP_ADD, NULL, y, b_weight(b, "bias", 4, bd));
  return relu ? b_node(b, TASO_OP_RELU, NULL, y, -1) : y;
}

static taso_ref_t b_pool(builder_t *b, taso_op_kind_t kind, taso_ref_t x, int32_t k, int32_t s,
                         int32_t pad) {
  taso_params_t p = taso_params_default();
  p.kernel[0] = p.kernel[1] = k;
  p.stride[0] = p.stride[1] = s;
  p.pad = pad;
  return b_node(b, kind, &p, x, -1);
}

/* Global average pool, flatten, fc with bias. */
static taso_ref_t b_head(builder_t *b, taso_ref_t x, int32_t classes) {
  if (b->err != TASO_OK) return -1;
  const taso_tensor_t *t = taso_model_type(b->m, x);
  int32_t n = t->dim[0], c = t->dim[1];
  x = b_pool(b, TASO_OP_POOL_AVG, x, t->dim[2], 1, TASO_PAD_VALID);
  taso_params_t p = taso_params_default();
  p.rank = 2, p.shape[0] = n, p.shape[1] = c;
  x = b_node(b, TASO_OP_RESHAPE, &p, x, -1);
  int32_t wd[2] = {c, classes}, bd[1] = {classes};
  x = b_node(b, TASO_OP_MATMUL, NULL, x, b_weight(b, "fc", 2, wd));
  return b_node(b, TASO_OP_ADD, NULL, x, b_weight(b, "fcbias", 1, bd));
}

static taso_ref_t bottleneck(builder_t *b, taso_ref_t x, int32_t width, int32_t stride) {
  /* a copy: the type table moves as nodes are added */
  int32_t in_channels = b->err == TASO_OK ? taso_model_type(b->m, x)->dim[1] : 0;
  taso_ref_t y = b_conv(b, x, width, 1, 1, true);
  y = b_conv(b, y, width, 3, stride, true);
  y = b_conv(b, y, 4 * width, 1, 1, false);
  taso_ref_t shortcut = x;
  if (in_channels != 4 * width || stride != 1) shortcut = b_conv(b, x, 4 * width, 1, stride, false);
  y = b_node(b, TASO_OP_EWADD, NULL, y, shortcut);
  return b_node(b, TASO_OP_RELU, NULL, y, -1);
}

static void build_resnet50(builder_t *b, int32_t batch, int32_t size) {
  int32_t xd[4] = {batch, 3, size, size};
  taso_ref_t x = -1;
  b->err = taso_model_input(b->m, "data", false, 4, xd, NULL, &x);
  x = b_conv(b, x, 64, 7, 2, true);
  x = b_pool(b, TASO_OP_POOL_MAX, x, 3, 2, TASO_PAD_SAME);
  const int blocks[4] = {3, 4, 6, 3};
  for (int stage = 0; stage < 4; stage++)
    for (int i = 0; i < blocks[stage]; i++)
      x = bottleneck(b, x, 64 << stage, i == 0 && stage > 0 ? 2 : 1);
  x = b_head(b, x, 1000);
  if (b->err == TASO_OK) b->err = taso_model_output(b->m, x, "logits");
}

static void build_tiny(builder_t *b) {
  int32_t xd[4] = {1, 3, 32, 32};
  taso_ref_t x = -1;
  b->err = taso_model_input(b->m, "image", false, 4, xd, NULL, &x);
  x = b_conv(b, x, 16, 3, 1, true);
  x = b_pool(b, TASO_OP_POOL_MAX, x, 2, 2, TASO_PAD_SAME);
  taso_ref_t l = b_conv(b, x, 16, 1, 1, true), r = b_conv(b, x, 16, 3, 1, true);
  taso_params_t p = taso_params_default();
  p.axis = 1;
  x = b_node(b, TASO_OP_CONCAT, &p, l, r);
  taso_ref_t y = b_conv(b, x, 32, 3, 1, false);
  x = b_node(b, TASO_OP_RELU, NULL, b_node(b, TASO_OP_EWADD, NULL, y, x), -1);
  x = b_head(b, x, 10);
  p.axis = 1;
  taso_ref_t prob = b_node(b, TASO_OP_SOFTMAX, &p, x, -1);
  if (b->err == TASO_OK) b->err = taso_model_output(b->m, prob, "prob");
}

/* "batch=2,size=112" into the two values; anything else is an error. */
static taso_err_t parse_overrides(const char *spec, const char *text, int32_t *batch,
                                  int32_t *size) {
  while (text && *text) {
    int32_t *at = strncmp(text, "batch=", 6) == 0 ? batch : strncmp(text, "size=", 5) == 0 ? size : NULL;
    char *end;
    long v = at ? strtol(strchr(text, '=') + 1, &end, 10) : 0;
    if (!at || v < 1 || v > 4096 || (*end && *end != ','))
      return taso_error(TASO_ERR_PARSE, "%s: expected batch=N or size=N, got '%s'", spec, text);
    *at = (int32_t)v;
    text = *end ? end + 1 : end;
  }
  return TASO_OK;
}

taso_err_t taso_model_load(const char *spec, taso_model_t *m) {
  char name[64];
  const char *colon = strchr(spec, ':');
  size_t len = colon ? (size_t)(colon - spec) : strlen(spec);
  snprintf(name, sizeof name, "%.*s", (int)(len < sizeof name ? len : sizeof name - 1), spec);
  int32_t batch = 1, size = 224;
  taso_model_init(m, name);
  builder_t b = {.m = m};
  if (strcmp(name, "resnet50") == 0) {
    b.err = parse_overrides(spec, colon ? colon + 1 : NULL, &batch, &size);
    if (b.err == TASO_OK) build_resnet50(&b, batch, size);
  } else if (strcmp(name, "tiny") == 0 && !colon) {
    build_tiny(&b);
  } else {
    b.err = taso_error(TASO_ERR_UNKNOWN,
                       "%s: unknown model (this build knows only 'tiny' and "
                       "'resnet50[:batch=N,size=N]')",
                       spec);
  }
  if (b.err != TASO_OK) taso_model_free(m);
  return b.err;
}
