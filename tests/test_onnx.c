/*
 * ONNX reading: models and tensors of the ONNX backend tests that Debian's
 * libonnx-testdata ships, a model made here with unsupported nodes (every
 * one named), and files that are not models (truncated, empty, text).
 * Without libonnx-testdata the cases that need it say so and are skipped.
 */
#define _POSIX_C_SOURCE 200809L
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "onnx.h"
#include "test.h"

#define NODE_TESTS "/usr/share/libonnx-testdata/data/node"
#define CONV NODE_TESTS "/test_conv_with_strides_padding"

static char tmpdir[] = "/tmp/test_onnx.XXXXXX";
static int skipped;

static int have_testdata(void) {
  if (access(CONV "/model.onnx", R_OK) == 0) return 1;
  printf("SKIP (part): %s not found (Debian package libonnx-testdata)\n", CONV);
  skipped++;
  return 0;
}

static void write_bytes(const char *path, const void *p, size_t n) {
  FILE *f = fopen(path, "wb");
  CHECK(f != NULL);
  if (!f) return;
  CHECK(fwrite(p, 1, n, f) == n);
  fclose(f);
}

static void test_conformance_model(void) {
  if (!have_testdata()) return;
  Onnx__ModelProto *m;
  CHECK_OK(taso_onnx_load(CONV "/model.onnx", &m));
  if (!m) return;
  CHECK(taso_onnx_opset(m) >= TASO_ONNX_OPSET_MIN);
  CHECK(m->graph->n_node == 1 && !strcmp(m->graph->node[0]->op_type, "Conv"));
  CHECK_OK(taso_onnx_check(m, CONV "/model.onnx"));
  taso_onnx_free(m);
  /* x is 1x1x7x5 (0..34), w 1x1x3x3 of ones; y at stride 2, padding 1 is 1x1x4x3. */
  taso_onnx_tensor_t x, y;
  CHECK_OK(taso_onnx_read_tensor(CONV "/test_data_set_0/input_0.pb", &x));
  CHECK(x.rank == 4 && x.dims[2] == 7 && x.dims[3] == 5 && x.n == 35);
  CHECK(x.data && x.data[0] == 0.0f && x.data[34] == 34.0f);
  CHECK_OK(taso_onnx_read_tensor(CONV "/test_data_set_0/output_0.pb", &y));
  CHECK(y.rank == 4 && y.dims[2] == 4 && y.dims[3] == 3 && y.n == 12);
  /* The top-left output: the 2x2 window 0, 1, 5, 6 inside the padding. */
  CHECK(y.data && y.data[0] == 12.0f);
  taso_onnx_tensor_free(&x);
  taso_onnx_tensor_free(&y);
}

/* A model with one supported node and two that are not: the check names
 * both, with their op types and the opset. */
static void test_unsupported_listed(void) {
  Onnx__OperatorSetIdProto opset = ONNX__OPERATOR_SET_ID_PROTO__INIT;
  opset.domain = "";
  opset.has_version = 1;
  opset.version = 13;
  Onnx__OperatorSetIdProto *opsets[] = {&opset};
  Onnx__NodeProto nodes[3];
  Onnx__NodeProto *pnodes[3];
  const char *names[] = {"first", "second", "third"}, *ops[] = {"Relu", "LSTM", "Einsum"};
  for (int i = 0; i < 3; i++) {
    onnx__node_proto__init(&nodes[i]);
    nodes[i].name = (char *)names[i];
    nodes[i].op_type = (char *)ops[i];
    pnodes[i] = &nodes[i];
  }
  Onnx__GraphProto graph = ONNX__GRAPH_PROTO__INIT;
  graph.n_node = 3;
  graph.node = pnodes;
  Onnx__ModelProto model = ONNX__MODEL_PROTO__INIT;
  model.n_opset_import = 1;
  model.opset_import = opsets;
  model.graph = &graph;
  size_t n = onnx__model_proto__get_packed_size(&model);
  uint8_t *buf = malloc(n);
  CHECK(buf != NULL);
  if (!buf) return;
  onnx__model_proto__pack(&model, buf);
  char path[64];
  snprintf(path, sizeof path, "%s/mixed.onnx", tmpdir);
  write_bytes(path, buf, n);
  free(buf);
  Onnx__ModelProto *m;
  CHECK_OK(taso_onnx_load(path, &m));
  if (!m) return;
  CHECK_ERR(taso_onnx_check(m, path), TASO_ERR_UNSUPPORTED);
  const char *msg = taso_error_detail();
  CHECK(strstr(msg, "mixed.onnx: 2 of 3 nodes not supported") != NULL);
  CHECK(strstr(msg, "second (LSTM, opset 13: not an operator taso imports)") &&
        strstr(msg, "third (Einsum, opset 13: not an operator taso imports)"));
  CHECK(strstr(msg, "Relu") == NULL);
  /* An opset outside 7..17 is refused as a whole. */
  m->opset_import[0]->version = 18;
  CHECK_ERR(taso_onnx_check(m, path), TASO_ERR_FORMAT);
  CHECK(strstr(taso_error_detail(), "opset 18") != NULL);
  taso_onnx_free(m);
}

/* Truncated, empty and text files: one message naming the file. */
static void test_not_models(void) {
  char path[64];
  Onnx__ModelProto *m = NULL;
  snprintf(path, sizeof path, "%s/empty.onnx", tmpdir);
  write_bytes(path, "", 0);
  CHECK_ERR(taso_onnx_load(path, &m), TASO_ERR_FORMAT);
  CHECK(strstr(taso_error_detail(), "empty.onnx: not an ONNX model (the file is empty)"));
  snprintf(path, sizeof path, "%s/text.onnx", tmpdir);
  write_bytes(path, "[job]\nname = x\n", 15);
  CHECK_ERR(taso_onnx_load(path, &m), TASO_ERR_FORMAT);
  CHECK(strstr(taso_error_detail(), "text.onnx: not an ONNX model") != NULL);
  snprintf(path, sizeof path, "%s/missing.onnx", tmpdir);
  CHECK_ERR(taso_onnx_load(path, &m), TASO_ERR_IO);
  CHECK(strstr(taso_error_detail(), "missing.onnx: cannot open") != NULL);
  CHECK_ERR(taso_onnx_read_tensor(path, &(taso_onnx_tensor_t){0}), TASO_ERR_IO);
  if (!have_testdata()) return;
  /* The conv test model cut in half. */
  FILE *f = fopen(CONV "/model.onnx", "rb");
  char buf[4096];
  size_t n = f ? fread(buf, 1, sizeof buf, f) : 0;
  if (f) fclose(f);
  CHECK(n > 20);
  snprintf(path, sizeof path, "%s/half.onnx", tmpdir);
  write_bytes(path, buf, n / 2);
  CHECK_ERR(taso_onnx_load(path, &m), TASO_ERR_FORMAT);
  CHECK(strstr(taso_error_detail(), "half.onnx: not an ONNX model") != NULL);
  /* A model is not a tensor. */
  taso_onnx_tensor_t t;
  CHECK_ERR(taso_onnx_read_tensor(CONV "/model.onnx", &t), TASO_ERR_FORMAT);
}

int main(void) {
  if (!mkdtemp(tmpdir)) {
    perror("mkdtemp");
    return 1;
  }
  test_case_t cases[] = {TEST(test_conformance_model), TEST(test_unsupported_listed),
                         TEST(test_not_models)};
  int rc = test_run(cases, sizeof cases / sizeof *cases);
  char cmd[64];
  snprintf(cmd, sizeof cmd, "rm -rf %s", tmpdir);
  if (system(cmd) != 0) fprintf(stderr, "could not remove %s\n", tmpdir);
  return rc;
}
