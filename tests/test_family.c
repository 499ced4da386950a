/*
 * Model families (issue 17): small graphs of each shape get their family
 * from the graph alone, every built-in model the family its architecture
 * has, and features are fractions; a rule-usage file round-trips, a
 * family's subset is the distinct rules its models fired, a family with
 * no model borrows the nearest model's, and a file naming an unknown
 * family is refused with its name. Random subsets are seeded.
 */
#define _POSIX_C_SOURCE 200809L
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <mpi.h>

#include "artifact.h"
#include "family.h"
#include "test.h"

static taso_ref_t input(taso_model_t *m, const char *name, bool weight, int rank, int32_t a,
                        int32_t b, int32_t c, int32_t d) {
  int32_t dim[4] = {a, b, c, d};
  taso_ref_t r = -1;
  CHECK_OK(taso_model_input(m, name, weight, rank, dim, NULL, &r));
  return r;
}

static taso_ref_t op(taso_model_t *m, taso_op_kind_t kind, taso_ref_t a, taso_ref_t b, int axis) {
  taso_params_t p = taso_params_default();
  p.axis = axis;
  taso_ref_t in[3] = {a, b, -1}, r = -1;
  CHECK_OK(taso_model_node(m, kind, &p, in, &r));
  return r;
}

/* A small graph of one shape; its family by the graph alone. */
static const char *family_of(const char *shape) {
  taso_model_t m;
  taso_model_init(&m, shape);
  taso_ref_t y = -1;
  if (!strcmp(shape, "attention") || !strcmp(shape, "gates") || !strcmp(shape, "dense")) {
    taso_ref_t x = input(&m, "x", false, 2, 8, 16, 0, 0), w = input(&m, "w", true, 2, 16, 16, 0, 0);
    y = op(&m, TASO_OP_MATMUL, x, w, 0);
    if (!strcmp(shape, "attention")) {
      taso_ref_t q = input(&m, "q", false, 3, 2, 8, 8, 0), k = input(&m, "k", false, 3, 2, 8, 8, 0);
      CHECK_OK(
          taso_model_output(&m, op(&m, TASO_OP_SOFTMAX, op(&m, TASO_OP_BMM, q, k, 0), -1, 2), "a"));
    } else if (!strcmp(shape, "gates")) {
      y = op(&m, TASO_OP_TANH, y, -1, 0);
    }
  } else {
    taso_ref_t x = input(&m, "x", false, 4, 1, 8, 6, 6);
    taso_ref_t w = input(&m, "w", true, 4, 8, 8, 3, 3), dw = input(&m, "dw", true, 4, 8, 1, 3, 3);
    y = op(&m, TASO_OP_CONV2D, x, !strcmp(shape, "depthwise") || !strcmp(shape, "cells") ? dw : w,
           0);
    if (!strcmp(shape, "residual") || !strcmp(shape, "depthwise"))
      y = op(&m, TASO_OP_EWADD, y, x, 0);
    if (!strcmp(shape, "branches") || !strcmp(shape, "cells"))
      y = op(&m, TASO_OP_CONCAT, y, op(&m, TASO_OP_CONV2D, x, w, 0), 1);
    y = op(&m, TASO_OP_RELU, y, -1, 0);
  }
  CHECK_OK(taso_model_output(&m, y, "y"));
  taso_features_t f;
  taso_model_features(&m, &f);
  double ops = 0;
  for (int k = 0; k < TASO_OP_COUNT; k++)
    ops += f.v[k];
  CHECK(fabs(ops - 1) < 1e-9); /* operator kinds are fractions of the operators */
  const char *family = taso_family_of(&f);
  taso_model_free(&m);
  return family;
}

static void test_shapes(void) {
  static const char *const want[][2] = {
      {"attention", "transformer"},
      {"gates", "rnn"},
      {"dense", "mlp"},
      {"cells", "nas"},
      {"depthwise", "mobile"},
      {"branches", "multibranch"},
      {"residual", "residual"},
      {"plain", "cnn"},
  };
  for (size_t i = 0; i < sizeof want / sizeof *want; i++) {
    const char *got = family_of(want[i][0]);
    if (strcmp(got, want[i][1])) fprintf(stderr, "%s: %s, not %s\n", want[i][0], got, want[i][1]);
    CHECK(strcmp(got, want[i][1]) == 0);
    CHECK(taso_family_known(got));
  }
  CHECK(!taso_family_known("resnet"));
}

static void test_builtins(void) {
  static const char *const want[][2] = {
      {"resnet50:size=28", "residual"},
      {"resnet50:bn=1,size=28", "residual"},
      {"resnext50:size=32", "residual"},
      {"nasnet_a:size=32", "nas"},
      {"nasrnn", "rnn"},
      {"bert:layers=1", "transformer"},
      {"inception_v3", "multibranch"},
      {"squeezenet:size=32", "multibranch"},
      {"mobilenet_v2:size=32", "mobile"},
  };
  for (size_t i = 0; i < sizeof want / sizeof *want; i++) {
    taso_model_t m;
    CHECK_OK(taso_model_load(want[i][0], &m));
    taso_features_t f;
    taso_model_features(&m, &f);
    const char *got = taso_family_of(&f);
    if (strcmp(got, want[i][1])) fprintf(stderr, "%s: %s, not %s\n", want[i][0], got, want[i][1]);
    CHECK(strcmp(got, want[i][1]) == 0);
    taso_model_free(&m);
  }
}

static void add_model(taso_usage_t *u, const char *name, const char *family, double conv) {
  u->models = realloc(u->models, sizeof *u->models * (size_t)(u->nmodels + 1));
  taso_usage_model_t *m = &u->models[u->nmodels++];
  memset(m, 0, sizeof *m);
  snprintf(m->name, sizeof m->name, "%s", name);
  snprintf(m->spec, sizeof m->spec, "%s:size=8", name);
  snprintf(m->family, sizeof m->family, "%s", family);
  m->features.v[TASO_OP_CONV2D] = conv;
  m->features.v[TASO_OP_MATMUL] = 1 - conv;
}

static void fire(taso_usage_t *u, int model, const char *text) {
  u->rules = realloc(u->rules, sizeof *u->rules * (size_t)(u->nrules + 1));
  taso_usage_rule_t *r = &u->rules[u->nrules++];
  memset(r, 0, sizeof *r);
  r->model = model;
  r->count = 2;
  snprintf(r->text, sizeof r->text, "%s", text);
}

static void test_usage(void) {
  char path[] = "/tmp/test_family_XXXXXX";
  int fd = mkstemp(path);
  CHECK(fd >= 0);
  if (fd >= 0) close(fd);
  unlink(path);
  taso_usage_t u;
  memset(&u, 0, sizeof u);
  add_model(&u, "a", "residual", 0.9);
  add_model(&u, "b", "residual", 0.8);
  add_model(&u, "c", "transformer", 0.0);
  fire(&u, 0, "relu(i1) => relu(i1)");
  fire(&u, 1, "relu(i1) => relu(i1)"); /* the same rule in two models: once in the subset */
  fire(&u, 1, "ewadd(x1, x2) => ewadd(x2, x1)");
  fire(&u, 2, "matmul(x1, w1) => matmul(x1, w1)");
  snprintf(u.substitutions, sizeof u.substitutions, "s.h5");
  taso_provenance_t prov = {.tool = "test_family",
                            .job_path = "",
                            .job_text = "",
                            .ranks = 1,
                            .threads = 1,
                            .start_time = "2026-11-27T00:00:00Z"};
  CHECK_OK(taso_usage_write(&u, path, &prov));
  taso_usage_t back;
  CHECK_OK(taso_usage_read(path, &back));
  CHECK(back.nmodels == 3 && back.nrules == 4);
  CHECK(back.nmodels == 3 && !strcmp(back.models[2].family, "transformer") &&
        !strcmp(back.models[1].spec, "b:size=8"));
  CHECK(back.nmodels == 3 && back.models[0].features.v[TASO_OP_CONV2D] == 0.9);
  CHECK(!strcmp(back.substitutions, "s.h5"));

  char(*texts)[TASO_RULE_TEXT] = NULL;
  int n = 0;
  const char *from = NULL;
  CHECK_OK(taso_usage_subset(&back, "residual", NULL, &texts, &n, &from));
  CHECK(n == 2 && from && !strcmp(from, "residual"));
  free(texts);
  /* no rnn model: the nearest (all matmul) lends its family's subset */
  taso_features_t f;
  memset(&f, 0, sizeof f);
  f.v[TASO_OP_MATMUL] = 1;
  CHECK_OK(taso_usage_subset(&back, "rnn", &f, &texts, &n, &from));
  CHECK(n == 1 && from && !strcmp(from, "transformer"));
  CHECK(n == 1 && strstr(texts[0], "matmul"));
  free(texts);
  CHECK_OK(taso_usage_subset(&back, "rnn", NULL, &texts, &n, &from));
  CHECK(n == 0 && from == NULL);
  free(texts);
  taso_usage_free(&back);

  /* a file naming an unknown family is refused, naming the file */
  snprintf(u.models[0].family, sizeof u.models[0].family, "resnet");
  unlink(path);
  CHECK_OK(taso_usage_write(&u, path, &prov));
  CHECK_ERR(taso_usage_read(path, &back), TASO_ERR_FORMAT);
  CHECK(strstr(taso_error_detail(), path) && strstr(taso_error_detail(), "unknown family"));
  unlink(path);
  CHECK(taso_usage_read("/nonexistent/usage.h5", &back) != TASO_OK);
  taso_usage_free(&u);
}

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  const test_case_t cases[] = {TEST(test_shapes), TEST(test_builtins), TEST(test_usage)};
  int rc = test_run(cases, (int)(sizeof cases / sizeof cases[0]));
  MPI_Finalize();
  return rc;
}
