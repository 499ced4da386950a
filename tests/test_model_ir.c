/*
 * Models on the one IR: the model-only operators' shape rules, text form and
 * double evaluation; the builder; folding of weight-only subgraphs; the
 * taso-model artifact written and read back, with and without a call plan.
 */
#define _DEFAULT_SOURCE
#include <math.h>
#include <stdlib.h>
#include <unistd.h>

#include <mpi.h>

#include "eval.h"
#include "model.h"
#include "test.h"

/* Parses text over inputs a [2,3,4,4] and b [3] etc. and evaluates it on
 * the given values; returns the output's values (malloc'd). */
static double *eval_text(const char *text, taso_inputs_t *in, double *const *vals,
                         taso_tensor_t *out_type) {
  taso_graph_t g;
  taso_graph_init(&g);
  taso_err_t err = taso_graph_parse(text, in, &g);
  CHECK_OK(err);
  if (err != TASO_OK) return NULL;
  taso_tensor_t *types = calloc((size_t)2 * g.nnodes, sizeof *types);
  double **v = calloc((size_t)2 * g.nnodes, sizeof *v);
  CHECK_OK(taso_graph_infer(&g, in, types));
  CHECK_OK(taso_eval_graph_double(NULL, &g, types, vals, v));
  int o = g.outputs[0];
  *out_type = types[o];
  double *res = v[o];
  v[o] = NULL;
  taso_values_free((void **)v, 2 * g.nnodes);
  free(v);
  free(types);
  taso_graph_free(&g);
  return res;
}

static void test_text_round_trip(void) {
  taso_inputs_t in = {0};
  int32_t x[4] = {2, 3, 4, 4}, w[4] = {5, 3, 3, 3}, c[1] = {3}, q[3] = {2, 4, 6};
  CHECK_OK(taso_inputs_add(&in, "x", 4, x));
  CHECK_OK(taso_inputs_add(&in, "w", 4, w));
  CHECK_OK(taso_inputs_add(&in, "c", 1, c));
  CHECK_OK(taso_inputs_add(&in, "q", 3, q));
  int32_t k[3] = {3, 1, 1};
  CHECK_OK(taso_inputs_add(&in, "k", 3, k));
  const char *texts[] = {
      "conv2d(s=2x2, pad=1x0x1x2, x, w)",
      "pool_avg(k=3x3, pad=1x1x1x1, exclude_pad=1, x)",
      "permute(perm=0x2x1x3, x)",
      "clip(min=0, max=6, x)",
      "clip(min=-0.5, max=2.25, x)",
      "split_at1(1, at=2, x)",
      "add(x, k)",
      "batchnorm(x, c, c)",
      "softmax(3, x)",
      "reshape(shape=6x16, x)",
      "bmm(act=relu, q, reshape(shape=2x6x4, q))",
      "sigmoid(tanh(mul(x, k)))",
  };
  for (size_t i = 0; i < sizeof texts / sizeof *texts; i++) {
    taso_graph_t g;
    char buf[256];
    taso_graph_init(&g);
    taso_err_t err = taso_graph_parse(texts[i], &in, &g);
    CHECK_OK(err);
    if (err == TASO_OK) {
      taso_graph_format(&g, &in, buf, sizeof buf);
      CHECK_STR(buf, texts[i]);
      taso_tensor_t *types = calloc((size_t)2 * g.nnodes, sizeof *types);
      CHECK_OK(taso_graph_infer(&g, &in, types));
      free(types);
    }
    taso_graph_free(&g);
  }
  /* Impossible shapes and bad parameters are refused with the operator. */
  const char *bad[] = {
      "permute(perm=0x1x1x3, x)", "split_at0(1, at=3, x)", "reshape(shape=7x16, x)",   "add(x, q)",
      "batchnorm(x, x, c)",       "clip(min=1, x)",        "conv2d(pad=3x0x0x0, x, w)"};
  for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
    taso_graph_t g;
    taso_graph_init(&g);
    taso_err_t err = taso_graph_parse(bad[i], &in, &g);
    if (err == TASO_OK) {
      taso_tensor_t *types = calloc((size_t)2 * g.nnodes, sizeof *types);
      err = taso_graph_infer(&g, &in, types);
      free(types);
    }
    CHECK(err != TASO_OK);
    taso_graph_free(&g);
  }
  taso_inputs_free(&in);
}

static void test_eval(void) {
  taso_inputs_t in = {0};
  int32_t x[2] = {2, 3}, b[1] = {3}, y[4] = {1, 2, 2, 3};
  CHECK_OK(taso_inputs_add(&in, "x", 2, x));
  CHECK_OK(taso_inputs_add(&in, "b", 1, b));
  CHECK_OK(taso_inputs_add(&in, "y", 4, y));
  double xv[6] = {1, -2, 3, -4, 5, -6}, bv[3] = {10, 20, 30}, yv[12];
  for (int i = 0; i < 12; i++)
    yv[i] = i;
  double *vals[3] = {xv, bv, yv};
  taso_tensor_t t;

  double *r = eval_text("add(x, b)", &in, vals, &t); /* broadcast over rows */
  double want_add[6] = {11, 18, 33, 6, 25, 24};
  for (int i = 0; r && i < 6; i++)
    CHECK(r[i] == want_add[i]);
  free(r);

  r = eval_text("permute(perm=1x0, x)", &in, vals, &t);
  double want_perm[6] = {1, -4, -2, 5, 3, -6};
  CHECK(t.dim[0] == 3 && t.dim[1] == 2);
  for (int i = 0; r && i < 6; i++)
    CHECK(r[i] == want_perm[i]);
  free(r);

  r = eval_text("permute(perm=0x2x3x1, y)", &in, vals, &t); /* NCHW -> NHWC */
  CHECK(t.dim[1] == 2 && t.dim[2] == 3 && t.dim[3] == 2);
  /* out[0,h,w,c] = y[0,c,h,w] = c*6 + h*3 + w */
  for (int h = 0; r && h < 2; h++)
    for (int w = 0; w < 3; w++)
      for (int c = 0; c < 2; c++)
        CHECK(r[(h * 3 + w) * 2 + c] == c * 6 + h * 3 + w);
  free(r);

  r = eval_text("softmax(1, x)", &in, vals, &t);
  for (int row = 0; r && row < 2; row++) {
    double s = r[row * 3] + r[row * 3 + 1] + r[row * 3 + 2];
    CHECK(fabs(s - 1) < 1e-12);
    CHECK(r[row * 3 + (row ? 1 : 2)] > 0.85); /* the largest logit dominates */
  }
  free(r);

  r = eval_text("split_at1(3, at=1, y)", &in, vals, &t); /* the last two columns */
  CHECK(t.dim[3] == 2);
  for (int i = 0; r && i < 4; i++)
    CHECK(r[2 * i] == 3 * i + 1 && r[2 * i + 1] == 3 * i + 2);
  free(r);

  r = eval_text("clip(min=-1, max=4, sigmoid(x))", &in, vals, &t);
  for (int i = 0; r && i < 6; i++)
    CHECK(fabs(r[i] - 1 / (1 + exp(-xv[i]))) < 1e-12);
  free(r);

  r = eval_text("clip(min=-3, max=4, x)", &in, vals, &t);
  double want_clip[6] = {1, -2, 3, -3, 4, -3};
  for (int i = 0; r && i < 6; i++)
    CHECK(r[i] == want_clip[i]);
  free(r);

  /* exclude_pad: a 3x3 average at a corner of a 3x3 image divides by the 4
   * values inside, not by 9. */
  taso_inputs_t in2 = {0};
  int32_t img[4] = {1, 1, 3, 3};
  CHECK_OK(taso_inputs_add(&in2, "i", 4, img));
  double iv[9] = {1, 1, 1, 1, 1, 1, 1, 1, 1};
  double *v2[1] = {iv};
  r = eval_text("pool_avg(k=3x3, pad=1x1x1x1, exclude_pad=1, i)", &in2, v2, &t);
  for (int k = 0; r && k < 9; k++)
    CHECK(fabs(r[k] - 1) < 1e-12);
  free(r);
  r = eval_text("pool_avg(k=3x3, pad=1x1x1x1, i)", &in2, v2, &t);
  CHECK(r && fabs(r[0] - 4.0 / 9) < 1e-12 && fabs(r[4] - 1) < 1e-12);
  free(r);
  taso_inputs_free(&in2);
  taso_inputs_free(&in);
}

/* x [2,4] -> matmul(x, transpose(w [3,4])) + b: the transpose of a weight
 * is a weight-only subgraph. */
static void build_fc(taso_model_t *m) {
  int32_t xd[2] = {2, 4}, wd[2] = {3, 4}, bd[1] = {3};
  taso_ref_t x, w, b, wt, mm, out;
  taso_params_t p = taso_params_default();
  taso_model_init(m, "fc");
  m->seed = 7;
  CHECK_OK(taso_model_input(m, "data", false, 2, xd, NULL, &x));
  CHECK_OK(taso_model_input(m, "fc.weight", true, 2, wd, NULL, &w));
  CHECK_OK(taso_model_input(m, "fc.bias", true, 1, bd, NULL, &b));
  CHECK_OK(taso_model_node(m, TASO_OP_TRANSPOSE, &p, (taso_ref_t[]){w}, &wt));
  CHECK_OK(taso_model_node(m, TASO_OP_MATMUL, &p, (taso_ref_t[]){x, wt}, &mm));
  CHECK_OK(taso_model_node(m, TASO_OP_ADD, &p, (taso_ref_t[]){mm, b}, &out));
  CHECK_OK(taso_model_output(m, out, "logits"));
}

/* Runs m on its seeded inputs in double; returns output 0 (malloc'd). */
static double *run(taso_model_t *m, int64_t *n) {
  CHECK_OK(taso_model_make_weights(m));
  double **inputs = calloc((size_t)m->inputs.n, sizeof *inputs);
  for (int i = 0; i < m->inputs.n; i++) {
    int64_t size = taso_tensor_size(&m->inputs.v[i].type);
    float *f = malloc(sizeof(float) * (size_t)size);
    if (m->is_weight[i])
      memcpy(f, m->data[i], sizeof(float) * (size_t)size);
    else
      taso_model_random_input(m, i, 99, f);
    inputs[i] = malloc(sizeof(double) * (size_t)size);
    for (int64_t k = 0; k < size; k++)
      inputs[i][k] = f[k];
    free(f);
  }
  double **v = calloc((size_t)2 * m->graph.nnodes, sizeof *v);
  CHECK_OK(taso_eval_graph_double(NULL, &m->graph, m->types, inputs, v));
  int o = m->graph.outputs[0];
  *n = taso_tensor_size(&m->types[o]);
  double *res = v[o];
  v[o] = NULL;
  taso_values_free((void **)v, 2 * m->graph.nnodes);
  free(v);
  for (int i = 0; i < m->inputs.n; i++)
    free(inputs[i]);
  free(inputs);
  return res;
}

static void test_builder_errors(void) {
  taso_model_t m;
  int32_t xd[2] = {2, 4}, wd[2] = {5, 3};
  taso_ref_t x, w, r;
  taso_params_t p = taso_params_default();
  taso_model_init(&m, "bad");
  CHECK_OK(taso_model_input(&m, "x", false, 2, xd, NULL, &x));
  CHECK(taso_model_input(&m, "x", true, 2, wd, NULL, &w) == TASO_ERR_ARG);
  CHECK_OK(taso_model_input(&m, "w", true, 2, wd, NULL, &w));
  CHECK(taso_model_node(&m, TASO_OP_MATMUL, &p, (taso_ref_t[]){x, w}, &r) == TASO_ERR_SHAPE);
  CHECK(strstr(taso_error_detail(), "matmul") != NULL);
  taso_model_free(&m);
}

static void test_fold_and_h5(void) {
  taso_model_t m, folded, back;
  int64_t n1, n2, n3;
  build_fc(&m);
  double *before = run(&m, &n1);
  build_fc(&folded);
  CHECK_OK(taso_model_fold_weights(&folded));
  int64_t counts[TASO_OP_COUNT];
  double flops;
  int64_t bytes;
  taso_model_stats(&folded, counts, &flops, &bytes);
  CHECK(counts[TASO_OP_TRANSPOSE] == 0 && counts[TASO_OP_MATMUL] == 1 && counts[TASO_OP_ADD] == 1);
  CHECK(taso_model_find_input(&folded, "fc.weight") < 0); /* only its transpose is read */
  CHECK(taso_model_find_input(&folded, "fc.bias") >= 0);
  CHECK(flops == 2.0 * 2 * 3 * 4);
  double *after = run(&folded, &n2);
  CHECK(n1 == 6 && n2 == 6);
  for (int i = 0; before && after && i < 6; i++)
    CHECK(fabs(before[i] - after[i]) < 1e-6);

  char path[] = "/tmp/test_model_XXXXXX.h5";
  int fd = mkstemps(path, 3);
  CHECK(fd >= 0);
  close(fd);
  unlink(path);
  taso_provenance_t prov;
  memset(&prov, 0, sizeof prov);
  prov.tool = "test_model";
  prov.ranks = 1;
  prov.threads = 1;
  CHECK_OK(taso_model_write_h5(&m, path, &prov));
  CHECK_OK(taso_model_read_h5(path, &back));
  CHECK_STR(back.name, "fc");
  CHECK(back.seed == 7);
  CHECK(back.graph.nnodes == m.graph.nnodes && back.inputs.n == m.inputs.n);
  CHECK(taso_graph_compare(&back.graph, &m.graph) == 0);
  CHECK_STR(back.output_names[0], "logits");
  CHECK(back.calls == NULL && back.ncalls == 0); /* no plan written, none read */
  for (int i = 0; i < m.inputs.n && i < back.inputs.n; i++) {
    CHECK_STR(back.names[i], m.names[i]);
    CHECK(back.is_weight[i] == m.is_weight[i]);
    CHECK((back.data[i] != NULL) == m.is_weight[i]);
    if (back.data[i] && m.data[i])
      CHECK(memcmp(back.data[i], m.data[i],
                   sizeof(float) * (size_t)taso_tensor_size(&m.inputs.v[i].type)) == 0);
  }
  double *again = run(&back, &n3);
  for (int i = 0; again && after && i < 6; i++)
    CHECK(fabs(again[i] - after[i]) < 1e-6);
  /* A truncated file is refused with its name. */
  FILE *f = fopen(path, "r+");
  CHECK(f != NULL);
  if (f) {
    CHECK(ftruncate(fileno(f), 600) == 0);
    fclose(f);
  }
  taso_model_t broken;
  CHECK(taso_model_read_h5(path, &broken) != TASO_OK);
  CHECK(strstr(taso_error_detail(), path) != NULL);
  unlink(path);
  free(before);
  free(after);
  free(again);
  taso_model_free(&m);
  taso_model_free(&folded);
  taso_model_free(&back);
}

/* A fresh temporary path ending in .h5 (path: a "..XXXXXX.h5" template). */
static void temp_h5(char *path) {
  int fd = mkstemps(path, 3);
  CHECK(fd >= 0);
  close(fd);
  unlink(path);
}

static void set_plan(taso_model_t *m, const taso_call_t *calls, int n, const char *library) {
  taso_model_drop_plan(m);
  m->calls = malloc(sizeof *calls * (size_t)n);
  CHECK(m->calls != NULL);
  if (!m->calls) return;
  memcpy(m->calls, calls, sizeof *calls * (size_t)n);
  m->ncalls = n;
  snprintf(m->library, sizeof m->library, "%s", library);
}

/* m written with its plan's row 1 spoiled by the caller is refused on
 * reading, with the file, the row and what is wrong (says) named. */
static void check_bad_plan(taso_model_t *m, const char *path, const taso_provenance_t *prov,
                           const char *says) {
  taso_model_t back;
  CHECK_OK(taso_model_write_h5(m, path, prov));
  CHECK_ERR(taso_model_read_h5(path, &back), TASO_ERR_FORMAT);
  const char *detail = taso_error_detail();
  CHECK(strstr(detail, path) != NULL);
  CHECK(strstr(detail, "/plan row 1:") != NULL);
  CHECK(strstr(detail, says) != NULL);
  CHECK(back.calls == NULL && back.ncalls == 0);
}

static void test_plan_h5(void) {
  taso_model_t m, back, unfolded, dropped;
  char path[] = "/tmp/test_model_XXXXXX.h5";
  temp_h5(path);
  taso_provenance_t prov;
  memset(&prov, 0, sizeof prov);
  prov.tool = "test_model";
  prov.ranks = 1;
  prov.threads = 1;
  /* folded fc: t0 data, t1 fc.bias, t2 the transposed weight, t3 matmul,
   * t4 add; written as it is (nothing left to fold), plan and all */
  build_fc(&m);
  CHECK_OK(taso_model_fold_weights(&m));
  CHECK(m.graph.nnodes == 5);
  /* row 1's call name is as long as one can be (31 characters) */
  const taso_call_t plan[] = {
      {.node = 3, .first_node = 3, .fused = 1, .layout = 2, .in_place = 0, .call = "sgemm"},
      {4, 3, 2, 1, 5, "add_in_place_over_first_operand"},
      {.node = 4, .first_node = 4, .fused = 1, .layout = 0, .in_place = 1, .call = "add"},
  };
  set_plan(&m, plan, 3, "data/library/cpu.lib");
  CHECK_OK(taso_model_write_h5(&m, path, &prov));
  CHECK(m.ncalls == 3);
  CHECK_OK(taso_model_read_h5(path, &back));
  CHECK(back.ncalls == 3 && back.calls != NULL);
  CHECK_STR(back.library, "data/library/cpu.lib");
  for (int i = 0; i < 3 && i < back.ncalls && back.calls; i++) {
    const taso_call_t *a = &back.calls[i], *b = &plan[i];
    CHECK(a->node == b->node && a->first_node == b->first_node && a->fused == b->fused);
    CHECK(a->layout == b->layout && a->in_place == b->in_place);
    CHECK_STR(a->call, b->call);
  }
  /* the builder drops a plan: it lists the steps of the graph as it was */
  CHECK_OK(taso_model_output(&back, back.graph.outputs[0], "again"));
  CHECK(back.calls == NULL && back.ncalls == 0 && back.library[0] == '\0');

  /* A plan of a graph that writing folds is one of a graph no longer
   * there: not written. */
  build_fc(&unfolded);
  set_plan(&unfolded, plan, 2, "data/library/cpu.lib");
  CHECK_OK(taso_model_write_h5(&unfolded, path, &prov));
  CHECK(unfolded.ncalls == 0 && unfolded.calls == NULL);
  CHECK_OK(taso_model_read_h5(path, &dropped));
  CHECK(dropped.ncalls == 0 && dropped.calls == NULL);

  /* Rows a file edited by hand may hold. */
  m.calls[1].fused = 9;
  check_bad_plan(&m, path, &prov, "fused 9 is not within 1..4");
  m.calls[1].fused = 2;
  m.calls[1].node = 5;
  check_bad_plan(&m, path, &prov, "node 5 is not within 0..4");
  m.calls[1].node = 2;
  check_bad_plan(&m, path, &prov, "first_node 3 is not within 0..2");
  m.calls[1].node = 4;
  m.calls[1].in_place = -2;
  check_bad_plan(&m, path, &prov, "in_place -2 is not within -1..5");
  unlink(path);
  taso_model_free(&m);
  taso_model_free(&back);
  taso_model_free(&unfolded);
  taso_model_free(&dropped);
}

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  const test_case_t cases[] = {TEST(test_text_round_trip), TEST(test_eval),
                               TEST(test_builder_errors), TEST(test_fold_and_h5),
                               TEST(test_plan_h5)};
  int rc = test_run(cases, (int)(sizeof cases / sizeof *cases));
  MPI_Finalize();
  return rc;
}
