/*
 * The built-in models of data/models/ and their reader (src/model/text.c):
 * every model parses with the operator counts and output shape of
 * optimizer.md section 3 (differences from the original stated below),
 * overrides build small versions, small versions evaluate to finite
 * values, the language's features do what data/models/README.md says, and
 * malformed files fail naming file and line with the model left empty.
 */
#define _POSIX_C_SOURCE 200809L
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "eval.h"
#include "model.h"
#include "test.h"

static char tmpdir[] = "/tmp/test_models.XXXXXX";

typedef struct {
  taso_op_kind_t kind;
  int count;
} count_t;

typedef struct {
  const char *name;
  const char *output; /* shape of the first output */
  int total;          /* operators, inputs and weights not counted */
  count_t counts[8];  /* every kind present; the rest must be 0 */
} expected_t;

/* optimizer.md section 3. Where ours differs the original is in the
 * comment: the graph IR's concat is binary (an n-ary concat is a chain) and
 * equal nodes are one node. */
static const expected_t expected[] = {
    /* 52 conv (36 with ReLU), 16 add, 16 relu = 84: the same */
    {"resnet50", "1x2048x7x7", 84, {{TASO_OP_CONV2D, 52}, {TASO_OP_EWADD, 16}, {TASO_OP_RELU, 16}}},
    /* 53 conv (16 grouped), 1 maxpool, 16 add, 16 relu = 86: the same */
    {"resnext50",
     "1x2048x7x7",
     86,
     {{TASO_OP_CONV2D, 53}, {TASO_OP_POOL_MAX, 1}, {TASO_OP_EWADD, 16}, {TASO_OP_RELU, 16}}},
    /* original 217 conv, 51 avgpool, 7 maxpool, 90 add, 18 concat = 383;
     * here 18 five-way concats are 72 binary ones, and the duplicated
     * avg3(prev) (15 normal cells) and max3(cur) (3 reduction cells) are
     * shared: 419 */
    {"nasnet_a",
     "1x5120x7x7",
     419,
     {{TASO_OP_CONV2D, 217},
      {TASO_OP_POOL_AVG, 36},
      {TASO_OP_POOL_MAX, 4},
      {TASO_OP_EWADD, 90},
      {TASO_OP_CONCAT, 72}}},
    /* 80 matmul, 55 add, 20 mul, 75 activations = 230: the same */
    {"nasrnn",
     "1x512",
     230,
     {{TASO_OP_MATMUL, 80},
      {TASO_OP_EWADD, 55},
      {TASO_OP_EWMUL, 20},
      {TASO_OP_RELU, 10},
      {TASO_OP_SIGMOID, 25},
      {TASO_OP_TANH, 40}}},
    /* original 48 matmul, 32 reshape, 32 transpose, 1 relu = 113; here the
     * per-head products are bmm (matmul is rank 2), transposes permute, and
     * each layer has its softmax (8): 121 */
    {"bert",
     "64x1024",
     121,
     {{TASO_OP_MATMUL, 32},
      {TASO_OP_BMM, 16},
      {TASO_OP_RESHAPE, 32},
      {TASO_OP_PERMUTE, 32},
      {TASO_OP_SOFTMAX, 8},
      {TASO_OP_RELU, 1}}},
    /* original 94 conv, 4 maxpool, 10 avgpool, 11 concat = 119; here 35
     * binary concats: 143 */
    {"inception_v3",
     "1x2048x1x1",
     143,
     {{TASO_OP_CONV2D, 94}, {TASO_OP_POOL_MAX, 4}, {TASO_OP_POOL_AVG, 10}, {TASO_OP_CONCAT, 35}}},
    /* original 26 conv, 26 relu, 8 concat, 3 maxpool, 1 avgpool, 1 dropout,
     * 1 reshape = 66; here without the dropout: 65 */
    {"squeezenet",
     "1x1000",
     65,
     {{TASO_OP_CONV2D, 26},
      {TASO_OP_RELU, 26},
      {TASO_OP_CONCAT, 8},
      {TASO_OP_POOL_MAX, 3},
      {TASO_OP_POOL_AVG, 1},
      {TASO_OP_RESHAPE, 1}}},
    /* not in the original: 52 conv (17 depthwise), 35 ReLU6, 10 residual
     * adds, pool, reshape, matmul, bias add = 101 */
    {"mobilenet_v2",
     "1x1000",
     101,
     {{TASO_OP_CONV2D, 52},
      {TASO_OP_CLIP, 35},
      {TASO_OP_EWADD, 10},
      {TASO_OP_POOL_AVG, 1},
      {TASO_OP_RESHAPE, 1},
      {TASO_OP_MATMUL, 1},
      {TASO_OP_ADD, 1}}},
};
#define NMODELS ((int)(sizeof expected / sizeof expected[0]))

static taso_err_t load(const char *name, const char *overrides, taso_model_t *m) {
  char path[1024];
  taso_err_t err = taso_model_builtin_path(name, path, sizeof path);
  if (err) {
    taso_model_init(m, name);
    return err;
  }
  return taso_model_parse_file(path, overrides, m);
}

static const char *output_shape(const taso_model_t *m, int i, char *buf, int len) {
  taso_shape_format(taso_model_type(m, m->graph.outputs[i]), buf, len);
  return buf;
}

static void test_builtin_list(void) {
  char names[32][64];
  int n = taso_model_builtin_list(names, 32);
  CHECK(n == NMODELS);
  for (int i = 1; i < n && i < 32; i++)
    CHECK(strcmp(names[i - 1], names[i]) < 0);
  for (int i = 0; i < NMODELS; i++) {
    int found = 0;
    for (int j = 0; j < n && j < 32; j++)
      found |= !strcmp(names[j], expected[i].name);
    CHECK(found);
  }
}

static void check_counts(const expected_t *e, const taso_model_t *m) {
  int64_t counts[TASO_OP_COUNT], weight_bytes, total = 0;
  double flops;
  taso_model_stats(m, counts, &flops, &weight_bytes);
  for (int k = TASO_OP_INPUT + 1; k < TASO_OP_COUNT; k++) {
    int want = 0;
    for (int j = 0; j < 8 && e->counts[j].count; j++)
      if (e->counts[j].kind == (taso_op_kind_t)k) want = e->counts[j].count;
    if (counts[k] != want)
      fprintf(stderr, "%s: %lld %s, expected %d\n", e->name, (long long)counts[k], taso_ops[k].name,
              want);
    CHECK(counts[k] == want);
    total += counts[k];
  }
  CHECK(total == e->total);
  CHECK(flops > 0 && weight_bytes > 0);
}

static void test_counts_and_shapes(void) {
  for (int i = 0; i < NMODELS; i++) {
    taso_model_t m;
    char shape[64];
    CHECK_OK(load(expected[i].name, NULL, &m));
    CHECK_STR(m.name, expected[i].name);
    if (m.graph.noutputs != 1) {
      CHECK(m.graph.noutputs == 1);
      taso_model_free(&m);
      continue;
    }
    CHECK_STR(output_shape(&m, 0, shape, sizeof shape), expected[i].output);
    check_counts(&expected[i], &m);
    taso_model_free(&m);
  }
}

/* Shapes the papers give inside the networks, not only at the end. */
static void test_inner_shapes(void) {
  taso_model_t m;
  char shape[64];
  CHECK_OK(load("inception_v3", NULL, &m));
  const char *want[] = {"1x192x35x35", "1x768x17x17", "1x1280x8x8", "1x2048x8x8"};
  int seen = 0;
  for (int i = 0; i < m.graph.nnodes; i++) {
    taso_shape_format(&m.types[2 * i], shape, sizeof shape);
    for (int j = 0; j < 4; j++)
      seen |= !strcmp(shape, want[j]) << j;
  }
  CHECK(seen == 15);
  taso_model_free(&m);
  CHECK_OK(load("resnext50", NULL, &m));
  int grouped = 0;
  for (int i = 0; i < m.graph.nnodes; i++) {
    const taso_node_t *n = &m.graph.nodes[i];
    if (n->kind == TASO_OP_CONV2D)
      grouped += m.types[n->in[0]].dim[1] / m.types[n->in[1]].dim[1] == 32;
  }
  CHECK(grouped == 16);
  taso_model_free(&m);
}

static void test_overrides(void) {
  taso_model_t m;
  char shape[64];
  CHECK_OK(load("resnet50", "size=14", &m));
  CHECK_STR(m.graph.noutputs ? output_shape(&m, 0, shape, sizeof shape) : "", "1x2048x2x2");
  taso_model_free(&m);
  /* bn=1: a chmul and a chadd after each of the body's 52 convolutions,
   * a ReLU after each normalized one that had it fused, the same output;
   * its scales are seeded near 1 and its shifts near 0 */
  const expected_t bn = {"resnet50",
                         "1x2048x2x2",
                         224,
                         {{TASO_OP_CONV2D, 52},
                          {TASO_OP_CHMUL, 52},
                          {TASO_OP_CHADD, 52},
                          {TASO_OP_EWADD, 16},
                          {TASO_OP_RELU, 52}}};
  CHECK_OK(load("resnet50", "size=14,bn=1", &m));
  check_counts(&bn, &m);
  CHECK_STR(m.graph.noutputs ? output_shape(&m, 0, shape, sizeof shape) : "", "1x2048x2x2");
  CHECK_OK(taso_model_make_weights(&m));
  for (int i = 0; i < m.inputs.n; i++) {
    if (!m.is_weight[i] || m.inputs.v[i].type.rank != 1) continue;
    bool scale = strstr(m.names[i], "scale") != NULL;
    for (int64_t k = 0; k < m.inputs.v[i].type.dim[0]; k++)
      CHECK(scale ? m.data[i][k] >= 0.5f && m.data[i][k] <= 1.5f
                  : m.data[i][k] >= -0.1f && m.data[i][k] <= 0.1f);
  }
  taso_model_free(&m);
  CHECK_OK(load("inception_v3", "batch=2,size=75", &m));
  CHECK_STR(m.graph.noutputs ? output_shape(&m, 0, shape, sizeof shape) : "", "2x2048x1x1");
  taso_model_free(&m);
  CHECK_OK(load("bert", "seq=8,hidden=32,heads=4,layers=2", &m));
  CHECK_STR(m.graph.noutputs ? output_shape(&m, 0, shape, sizeof shape) : "", "8x32");
  taso_model_free(&m);

  CHECK_ERR(load("resnet50", "batch=1,sise=14", &m), TASO_ERR_UNKNOWN);
  CHECK(strstr(taso_error_detail(), "resnet50.model") && strstr(taso_error_detail(), "'sise'") &&
        strstr(taso_error_detail(), "size"));
  CHECK(m.graph.nnodes == 0 && m.inputs.n == 0);
  taso_model_free(&m);
  CHECK_ERR(load("resnet50", "size", &m), TASO_ERR_PARSE);
  taso_model_free(&m);
  CHECK_ERR(load("resnet50", "size=1x", &m), TASO_ERR_PARSE);
  taso_model_free(&m);
  /* An override that makes an impossible network fails where it breaks. */
  CHECK_ERR(load("squeezenet", "size=8", &m), TASO_ERR_SHAPE);
  CHECK(strstr(taso_error_detail(), "squeezenet.model:"));
  CHECK(m.graph.nnodes == 0);
  taso_model_free(&m);
}

static void test_unknown_builtin(void) {
  char path[1024];
  CHECK_ERR(taso_model_builtin_path("resnet51", path, sizeof path), TASO_ERR_UNKNOWN);
  CHECK(strstr(taso_error_detail(), "resnet51") && strstr(taso_error_detail(), "resnet50") &&
        strstr(taso_error_detail(), "squeezenet"));
  CHECK_ERR(taso_model_builtin_path("../models/resnet50", path, sizeof path), TASO_ERR_UNKNOWN);
  /* TASO_DATA_DIR moves the whole folder. */
  setenv("TASO_DATA_DIR", tmpdir, 1);
  CHECK_ERR(taso_model_builtin_path("resnet50", path, sizeof path), TASO_ERR_UNKNOWN);
  char names[4][64];
  CHECK(taso_model_builtin_list(names, 4) == 0);
  unsetenv("TASO_DATA_DIR");
  CHECK_OK(taso_model_builtin_path("resnet50", path, sizeof path));
}

/* ---- small files written here ------------------------------------------- */

static const char *write_model(const char *name, const char *text) {
  static char path[512];
  snprintf(path, sizeof path, "%s/%s.model", tmpdir, name);
  FILE *f = fopen(path, "w");
  CHECK(f != NULL);
  if (f) {
    fputs(text, f);
    fclose(f);
  }
  return path;
}

/* The language: else, loops naming weights, n-ary concat, two results,
 * precedence, min/max, line continuation inside parentheses. */
static void test_language(void) {
  const char *path =
      write_model("features", "param n = 3  # loop count\n"
                              "param c = 2 + 3 * 2 - (4 - 2) * 2 / 2  # 6\n"
                              "input x [1, c, 4, 4]\n"
                              "block pick(a, flag) {\n"
                              "  if flag == 1 {\n"
                              "    return relu(a)\n"
                              "  } else if flag == 2 {\n"
                              "    return sigmoid(a)\n"
                              "  } else {\n"
                              "    return tanh(a)\n"
                              "  }\n"
                              "}\n"
                              "y = x\n"
                              "for i in range(1, n + 1) {\n"
                              "  weight w [c, c, 1, 1]\n"
                              "  y = pick(conv2d(y, w), i)\n"
                              "}\n"
                              "z = concat(1, y,\n"
                              "           x, y)\n"
                              "a, b = split_at(axis=1, at={min(c, 100) * 2}, z)\n"
                              "output a, b\n"
                              "output pool_avg(k={max(1, dim(b, 2) / 2)}x2, s=2x2, b)\n");
  taso_model_t m;
  char shape[64];
  CHECK_OK(taso_model_parse_file(path, NULL, &m));
  CHECK(m.graph.noutputs == 3);
  if (m.graph.noutputs == 3) {
    CHECK_STR(output_shape(&m, 0, shape, sizeof shape), "1x12x4x4");
    CHECK_STR(output_shape(&m, 1, shape, sizeof shape), "1x6x4x4");
    CHECK_STR(output_shape(&m, 2, shape, sizeof shape), "1x6x2x2");
    CHECK_STR(m.output_names[0], "a");
    CHECK_STR(m.output_names[2], "out2");
  }
  int64_t counts[TASO_OP_COUNT], wb;
  double flops;
  taso_model_stats(&m, counts, &flops, &wb);
  CHECK(counts[TASO_OP_RELU] == 1 && counts[TASO_OP_SIGMOID] == 1 && counts[TASO_OP_TANH] == 1);
  CHECK(counts[TASO_OP_CONCAT] == 2 && counts[TASO_OP_SPLIT_AT] == 1);
  CHECK(taso_model_find_input(&m, "w") >= 0 && taso_model_find_input(&m, "w_3") >= 0);
  taso_model_free(&m);
  /* overrides reach loops and shapes */
  CHECK_OK(taso_model_parse_file(path, "n=5,c=4", &m));
  CHECK(taso_model_find_input(&m, "w_5") >= 0);
  taso_model_free(&m);
}

/* Each bad file fails with its code, and the message starts with
 * path:line and names the problem. */
static void check_bad(const char *name, const char *text, taso_err_t code, int line,
                      const char *what) {
  const char *path = write_model(name, text);
  char prefix[600];
  if (line > 0)
    snprintf(prefix, sizeof prefix, "%s:%d: ", path, line);
  else /* a problem of the whole file */
    snprintf(prefix, sizeof prefix, "%s: ", path);
  taso_model_t m;
  CHECK_ERR(taso_model_parse_file(path, NULL, &m), code);
  const char *detail = taso_error_detail();
  if (strncmp(detail, prefix, strlen(prefix)) || !strstr(detail, what))
    fprintf(stderr, "%s: got \"%s\", expected \"%s...%s\"\n", name, detail, prefix, what);
  CHECK(strncmp(detail, prefix, strlen(prefix)) == 0 && strstr(detail, what));
  CHECK(m.graph.nnodes == 0 && m.inputs.n == 0 && m.graph.noutputs == 0);
  taso_model_free(&m);
}

static void test_errors(void) {
  const char *head = "input x [1, 4, 8, 8]\nweight w [4, 4, 3, 3]\n";
  char text[512];
#define BAD(name, body, code, line, what)                                                          \
  do {                                                                                             \
    snprintf(text, sizeof text, "%s%s", head, body);                                               \
    check_bad(name, text, code, line, what);                                                       \
  } while (0)
  BAD("unknown_op", "y = conv3d(x, w)\noutput y\n", TASO_ERR_UNKNOWN, 3, "'conv3d'");
  BAD("unknown_name", "y = conv2d(x, v)\noutput y\n", TASO_ERR_UNKNOWN, 3, "'v'");
  BAD("bad_shape", "weight v [4, 3, 3, 3]\n\ny = conv2d(x, v)\noutput y\n", TASO_ERR_SHAPE, 5,
      "channels");
  BAD("zero_size", "weight v [4, 4 - 4, 3]\n", TASO_ERR_SHAPE, 3, "size 0 on axis 1");
  BAD("bad_param", "y = conv2d(s=2x2, act=gelu, x, w)\noutput y\n", TASO_ERR_PARSE, 3, "gelu");
  BAD("unknown_param", "y = conv2d(dilation=2x2, x, w)\noutput y\n", TASO_ERR_UNKNOWN, 3,
      "dilation");
  BAD("arity", "y = relu(x, w)\noutput y\n", TASO_ERR_PARSE, 3, "'relu' takes 1 operand, got 2");
  BAD("no_shape", "y = reshape(x)\noutput y\n", TASO_ERR_PARSE, 3, "shape=");
  BAD("tensor_math", "y = x + 1\n", TASO_ERR_PARSE, 3, "integers");
  BAD("div_zero", "param k = 4 / (2 - 2)\n", TASO_ERR_OVERFLOW, 3, "division by zero");
  BAD("unclosed", "block b(a) {\n  return a\n", TASO_ERR_PARSE, 3, "never closed");
  BAD("no_return", "block b(a) {\n  c = a\n}\ny = b(x)\noutput y\n", TASO_ERR_PARSE, 6,
      "returned no value");
  BAD("block_args", "block b(a) {\n  return a\n}\ny = b(x, w)\n", TASO_ERR_PARSE, 6,
      "takes 1 argument, got 2");
  BAD("in_block", "block b(a) {\n  input z [1]\n  return a\n}\ny = b(x)\n", TASO_ERR_PARSE, 4,
      "top level");
  BAD("recursion", "block b(a) {\n  return b(a)\n}\ny = b(x)\n", TASO_ERR_LIMIT, 4, "deep");
  BAD("twice", "param p = 1\nparam p = 2\n", TASO_ERR_PARSE, 4, "defined twice");
  BAD("assign_param", "param p = 1\np = 2\n", TASO_ERR_PARSE, 4, "cannot assign");
  BAD("stray", "y = relu(x) relu\n", TASO_ERR_PARSE, 3, "after the statement");
  BAD("character", "y = relu(x) @\n", TASO_ERR_PARSE, 3, "'@'");
  BAD("no_output", "y = relu(x)\n", TASO_ERR_PARSE, 0, "no output");
#undef BAD
  taso_model_t m;
  CHECK_ERR(taso_model_parse_file("/nonexistent/x.model", NULL, &m), TASO_ERR_IO);
  CHECK(strstr(taso_error_detail(), "/nonexistent/x.model"));
  taso_model_free(&m);
  const char *path = write_model("override", "param size = 8\ninput x [size]\noutput relu(x)\n");
  CHECK_ERR(taso_model_parse_file(path, "batch=2", &m), TASO_ERR_UNKNOWN);
  CHECK(strstr(taso_error_detail(), "override.model") && strstr(taso_error_detail(), "'batch'") &&
        strstr(taso_error_detail(), "parameters: size"));
  taso_model_free(&m);
}

/* ---- evaluation ----------------------------------------------------------- */

/* Runs a model on seeded weights and inputs in double precision; every
 * output value must be finite and not all of them zero. */
static void check_eval(const char *name, const char *overrides) {
  taso_model_t m;
  CHECK_OK(load(name, overrides, &m));
  if (m.graph.noutputs == 0) return;
  CHECK_OK(taso_model_make_weights(&m));
  double **inputs = calloc((size_t)m.inputs.n, sizeof *inputs);
  double **values = calloc((size_t)(2 * m.graph.nnodes), sizeof *values);
  for (int i = 0; i < m.inputs.n; i++) {
    int64_t size = taso_tensor_size(&m.inputs.v[i].type);
    float *f = m.is_weight[i] ? m.data[i] : malloc(sizeof *f * (size_t)size);
    if (!m.is_weight[i]) taso_model_random_input(&m, i, 7, f);
    inputs[i] = malloc(sizeof **inputs * (size_t)size);
    for (int64_t k = 0; k < size; k++)
      inputs[i][k] = f[k];
    if (!m.is_weight[i]) free(f);
  }
  CHECK_OK(taso_eval_graph_double(NULL, &m.graph, m.types, inputs, values));
  for (int o = 0; o < m.graph.noutputs; o++) {
    taso_ref_t ref = m.graph.outputs[o];
    int64_t size = taso_tensor_size(taso_model_type(&m, ref)), finite = 0, nonzero = 0;
    for (int64_t k = 0; values[ref] && k < size; k++) {
      finite += isfinite(values[ref][k]);
      nonzero += values[ref][k] != 0;
    }
    if (finite != size || nonzero == 0)
      fprintf(stderr, "%s: %lld of %lld finite, %lld nonzero\n", name, (long long)finite,
              (long long)size, (long long)nonzero);
    CHECK(finite == size && nonzero > 0);
  }
  taso_values_free((void **)values, 2 * m.graph.nnodes);
  taso_values_free((void **)inputs, m.inputs.n);
  free(values);
  free(inputs);
  taso_model_free(&m);
}

static void test_eval_small(void) {
  check_eval("nasrnn", "hidden=16,steps=3");
  check_eval("bert", "seq=8,hidden=32,heads=4,layers=2");
  check_eval("squeezenet", "size=32");
  check_eval("mobilenet_v2", "size=32");
}

static void cleanup(void) {
  char cmd[600];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", tmpdir);
  if (system(cmd) != 0) fprintf(stderr, "could not remove %s\n", tmpdir);
}

int main(void) {
  if (!mkdtemp(tmpdir)) {
    perror("mkdtemp");
    return 1;
  }
  unsetenv("TASO_DATA_DIR");
  test_case_t cases[] = {
      TEST(test_builtin_list), TEST(test_counts_and_shapes), TEST(test_inner_shapes),
      TEST(test_overrides),    TEST(test_unknown_builtin),   TEST(test_language),
      TEST(test_errors),       TEST(test_eval_small),
  };
  int rc = test_run(cases, (int)(sizeof cases / sizeof cases[0]));
  cleanup();
  return rc;
}
