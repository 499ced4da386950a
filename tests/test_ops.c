/*
 * Every operator of semantics.md section 2: shape rule, split-tree rule and
 * exact evaluation (rationals), plus agreement of the double and prime-field
 * instantiations with the rational oracle.
 */
#include <math.h>
#include <stdlib.h>

#include "eval.h"
#include "fingerprint.h"
#include "test.h"

static taso_inputs_t inputs;

static void add(const char *name, int rank, int32_t d0, int32_t d1, int32_t d2, int32_t d3) {
  int32_t d[4] = {d0, d1, d2, d3};
  TASO_CHECK(taso_inputs_add(&inputs, name, rank, d));
}

static void setup(void) {
  add("a", 2, 2, 3, 0, 0);  /* 1..6 */
  add("b", 2, 2, 3, 0, 0);  /* 7..12 */
  add("m", 2, 3, 2, 0, 0);  /* 1..6 */
  add("s", 0, 0, 0, 0, 0);  /* -2 */
  add("x", 4, 1, 1, 3, 3);  /* 1..9 */
  add("k", 4, 1, 1, 3, 3);  /* all ones */
  add("g", 4, 1, 4, 1, 1);  /* 1..4 */
  add("gw", 4, 2, 2, 1, 1); /* 1, 10, 100, 1000 */
  add("n", 2, 2, 3, 0, 0);  /* -3..2 */
  add("p", 4, 1, 1, 1, 1);  /* 7 */
  add("q", 4, 1, 1, 1, 3);  /* 1..3 */
  add("c6", 2, 2, 6, 0, 0); /* 1..12 */
}

/* Values of input i as exact rationals. */
static int64_t input_value(int i, int64_t e) {
  const char *name = inputs.v[i].name;
  if (!strcmp(name, "b")) return 7 + e;
  if (!strcmp(name, "s")) return -2;
  if (!strcmp(name, "k")) return 1;
  if (!strcmp(name, "gw")) return e == 0 ? 1 : e == 1 ? 10 : e == 2 ? 100 : 1000;
  if (!strcmp(name, "n")) return e - 3;
  if (!strcmp(name, "p")) return 7;
  return 1 + e;
}

/* Parses text, infers types and evaluates output `out` exactly. */
typedef struct {
  taso_tensor_t type; /* the output's type */
  taso_rat_t *v;      /* its values (malloc'd) */
  int64_t n;          /* element count */
} result_t;

static result_t run(const char *text, int out) {
  result_t r = {0};
  taso_graph_t g;
  taso_graph_init(&g);
  taso_err_t err = taso_graph_parse(text, &inputs, &g);
  if (err != TASO_OK) {
    fprintf(stderr, "%s: %s\n", text, taso_error_detail());
    CHECK(err == TASO_OK);
    return r;
  }
  taso_tensor_t *types = calloc(2 * g.nnodes, sizeof *types);
  taso_rat_t **in = calloc(inputs.n, sizeof *in);
  taso_rat_t **values = calloc(2 * g.nnodes, sizeof *values);
  taso_rat_ctx_t ctx;
  CHECK_OK(taso_graph_infer(&g, &inputs, types));
  for (int i = 0; i < inputs.n; i++) {
    int64_t size = taso_tensor_size(&inputs.v[i].type);
    in[i] = malloc(sizeof **in * size);
    for (int64_t e = 0; e < size; e++)
      in[i][e] = taso_rat(input_value(i, e), 1);
  }
  CHECK_OK(taso_eval_graph_rational(&ctx, &g, types, in, values));
  taso_ref_t ref = g.outputs[out];
  r.type = types[ref];
  r.n = taso_tensor_size(&r.type);
  r.v = malloc(sizeof *r.v * r.n);
  memcpy(r.v, values[ref], sizeof *r.v * r.n);
  taso_values_free((void **)values, 2 * g.nnodes);
  taso_values_free((void **)in, inputs.n);
  free(values);
  free(in);
  free(types);
  taso_graph_free(&g);
  return r;
}

/* Checks integer values (den 1) against an expected list. */
static void expect_ints(const char *text, const int64_t *want, int64_t n) {
  result_t r = run(text, 0);
  CHECK(r.n == n);
  for (int64_t i = 0; i < n && i < r.n; i++) {
    if (r.v[i].num != want[i] || r.v[i].den != 1) {
      fprintf(stderr, "%s: element %lld is %lld/%lld, expected %lld\n", text, (long long)i,
              (long long)r.v[i].num, (long long)r.v[i].den, (long long)want[i]);
      CHECK(0);
    }
  }
  free(r.v);
}

static void expect_shape(const char *text, const char *shape) {
  result_t r = run(text, 0);
  char buf[64];
  taso_shape_format(&r.type, buf, sizeof buf);
  CHECK_STR(buf, shape);
  free(r.v);
}

static void expect_trees(const char *text, int out, const char *trees) {
  result_t r = run(text, out);
  char buf[256] = "", t[64];
  for (int i = 0; i < r.type.rank; i++) {
    taso_tree_format(&r.type.tree[i], t, sizeof t);
    strcat(buf, i ? " " : "");
    strcat(buf, t);
  }
  if (strcmp(buf, trees)) fprintf(stderr, "%s: trees %s, expected %s\n", text, buf, trees);
  CHECK_STR(buf, trees);
  free(r.v);
}

/* Parsing must fail with an invalid shape. */
static void expect_bad_shape(const char *text) {
  taso_graph_t g;
  taso_graph_init(&g);
  CHECK_ERR(taso_graph_parse(text, &inputs, &g), TASO_ERR_SHAPE);
  taso_graph_free(&g);
}

static void test_elementwise(void) {
  int64_t add[] = {8, 10, 12, 14, 16, 18}, mul[] = {7, 16, 27, 40, 55, 72};
  expect_ints("ewadd(a, b)", add, 6);
  expect_ints("ewmul(a, b)", mul, 6);
  expect_shape("ewadd(a, b)", "2x3");
  expect_bad_shape("ewadd(a, m)"); /* 2x3 vs 3x2 */
  expect_bad_shape("ewadd(s, s)"); /* rank 0 */
  int64_t sm[] = {-2, -4, -6, -8, -10, -12};
  expect_ints("smul(a, s)", sm, 6);
  expect_bad_shape("smul(a, b)"); /* second operand not a scalar */
  int64_t re[] = {0, 0, 0, 0, 1, 2};
  expect_ints("relu(n)", re, 6);
  expect_shape("relu(x)", "1x1x3x3");
}

static void test_transpose_matmul(void) {
  int64_t tr[] = {1, 4, 2, 5, 3, 6};
  expect_ints("transpose(a)", tr, 6);
  expect_ints("transpose(layout=view, a)", tr, 6);
  expect_shape("transpose(a)", "3x2");
  expect_bad_shape("transpose(x)");
  int64_t mm[] = {22, 28, 49, 64};
  expect_ints("matmul(a, m)", mm, 4);
  expect_shape("matmul(m, a)", "3x3");
  expect_bad_shape("matmul(a, b)"); /* inner sizes 3 and 2 */
  /* a . transpose(n): rows of a dotted with rows of n = [-3..-1],[0..2] */
  int64_t an[] = {-10, 8, -28, 17};
  expect_ints("matmul(a, transpose(n))", an, 4);
  int64_t anr[] = {0, 8, 0, 17};
  expect_ints("matmul(act=relu, a, transpose(n))", anr, 4);
}

static void test_window_formula(void) {
  int32_t before;
  CHECK(taso_window_out(5, 3, 1, TASO_PAD_SAME, &before) == 5 && before == 1);
  CHECK(taso_window_out(5, 3, 2, TASO_PAD_SAME, &before) == 3 && before == 1);
  CHECK(taso_window_out(4, 3, 2, TASO_PAD_SAME, &before) == 2 &&
        before == 0); /* p = 1: 0 before, 1 after */
  CHECK(taso_window_out(6, 4, 1, TASO_PAD_SAME, &before) == 6 &&
        before == 1); /* p = 3: 1 before, 2 after */
  CHECK(taso_window_out(5, 1, 2, TASO_PAD_SAME, &before) == 3 && before == 0);
  CHECK(taso_window_out(1, 3, 2, TASO_PAD_SAME, &before) == 1 && before == 1);
  CHECK(taso_window_out(5, 3, 2, TASO_PAD_VALID, &before) == 2 && before == 0);
  CHECK(taso_window_out(4, 1, 3, TASO_PAD_VALID, &before) == 2);
  CHECK(taso_window_out(2, 3, 1, TASO_PAD_VALID, &before) == 0); /* does not fit */
}

static void test_conv2d(void) {
  /* x = 1..9 in a 3x3 plane, k = ones: sums of the neighbourhoods */
  int64_t same[] = {12, 21, 16, 27, 45, 33, 24, 39, 28};
  expect_ints("conv2d(x, k)", same, 9);
  int64_t valid[] = {45};
  expect_ints("conv2d(pad=valid, x, k)", valid, 1);
  expect_shape("conv2d(pad=valid, x, k)", "1x1x1x1");
  int64_t s2[] = {12, 16, 24, 28};
  expect_ints("conv2d(s=2x2, x, k)", s2, 4);
  expect_shape("conv2d(s=2x2, x, k)", "1x1x2x2");
  int64_t relu[] = {0};
  expect_ints("conv2d(pad=valid, act=relu, x, smul(k, s))", relu, 1);
  int64_t norelu[] = {-90};
  expect_ints("conv2d(pad=valid, x, smul(k, s))", norelu, 1);
  /* grouped: g has 4 channels, gw 2 in-channels per group: 2 groups */
  int64_t grouped[] = {1 * 1 + 2 * 10, 3 * 100 + 4 * 1000};
  expect_ints("conv2d(g, gw)", grouped, 2);
  expect_shape("conv2d(g, gw)", "1x2x1x1");
  expect_bad_shape("conv2d(x, gw)");           /* 1 channel, weight wants 2 */
  expect_bad_shape("conv2d(pad=valid, p, k)"); /* 3x3 kernel on 1x1 VALID */
  expect_bad_shape("conv2d(a, b)");
  /* output channels not a multiple of groups: 4 channels, weight [3,2,1,1] */
  taso_tensor_t in[2], out[1];
  int32_t dx[4] = {1, 4, 1, 1}, dw[4] = {3, 2, 1, 1};
  in[0] = taso_tensor_make(4, dx);
  in[1] = taso_tensor_make(4, dw);
  taso_params_t p = taso_params_default();
  CHECK_ERR(taso_op_infer(TASO_OP_CONV2D, &p, in, out), TASO_ERR_SHAPE);
  CHECK(strstr(taso_error_detail(), "conv2d") != NULL);
}

static void test_pool(void) {
  result_t r = run("pool_avg(k=3x3, x)", 0);
  CHECK(r.n == 9);
  if (r.n == 9) {
    /* padded positions are skipped but the divisor stays 9 */
    CHECK(r.v[0].num == 4 && r.v[0].den == 3); /* 12 / 9 */
    CHECK(r.v[4].num == 5 && r.v[4].den == 1); /* 45 / 9 */
  }
  free(r.v);
  int64_t mx[] = {5, 6, 6, 8, 9, 9, 8, 9, 9};
  expect_ints("pool_max(k=3x3, x)", mx, 9);
  int64_t mxv[] = {5, 6, 8, 9};
  expect_ints("pool_max(k=2x2, pad=valid, x)", mxv, 4);
  int64_t mxs[] = {5, 6, 8, 9};
  expect_ints("pool_max(k=3x3, s=2x2, x)", mxs, 4);
  expect_shape("pool_avg(k=1x3, s=2x1, pad=valid, x)", "1x1x2x1");
  expect_bad_shape("pool_avg(k=3x3, a)");
  expect_bad_shape("pool_max(k=3x3, pad=valid, p)");
}

static void test_concat_split(void) {
  int64_t c0[] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12};
  int64_t c1[] = {1, 2, 3, 7, 8, 9, 4, 5, 6, 10, 11, 12};
  expect_ints("concat(0, a, b)", c0, 12);
  expect_ints("concat(1, a, b)", c1, 12);
  expect_shape("concat(0, a, b)", "4x3");
  expect_shape("concat(1, a, b)", "2x6");
  expect_bad_shape("concat(0, a, m)");
  expect_bad_shape("concat(2, a, b)");
  int64_t av[] = {1, 2, 3, 4, 5, 6}, bv[] = {7, 8, 9, 10, 11, 12};
  expect_ints("split0(1, concat(1, a, b))", av, 6);
  expect_ints("split1(1, concat(1, a, b))", bv, 6);
  expect_ints("split1(0, concat(0, a, b))", bv, 6);
  expect_bad_shape("split0(1, a)");               /* empty split tree */
  expect_bad_shape("split0(0, concat(1, a, b))"); /* tree on the other axis */
  /* rank 4 concat on axis 1 */
  expect_shape("concat(1, x, k)", "1x2x3x3");
  expect_bad_shape("concat(1, x, g)"); /* sizes differ on axes 2 and 3 */
}

static void test_enlarge_constants(void) {
  int64_t en[] = {0, 0, 0, 0, 7, 0, 0, 0, 0};
  expect_ints("enlarge(k=3x3, p)", en, 9);
  int64_t eq[] = {0, 0, 0, 1, 2, 3, 0, 0, 0};
  expect_ints("enlarge(k=3x3, q)", eq, 9);
  expect_shape("enlarge(k=3x5, q)", "1x1x3x5");
  expect_bad_shape("enlarge(k=1x1, q)");
  result_t r = run("const_pool(k=3x3, shape=2x1x3x3)", 0);
  CHECK(r.n == 18);
  for (int64_t i = 0; i < r.n; i++)
    CHECK(r.v[i].num == 1 && r.v[i].den == 9);
  free(r.v);
  int64_t ic[2 * 2 * 9] = {0};
  ic[(0 * 2 + 0) * 9 + 4] = 1;
  ic[(1 * 2 + 1) * 9 + 4] = 1;
  expect_ints("const_iconv(k=3x3, shape=2x2x3x3)", ic, 36);
  int64_t im[] = {1, 0, 0, 0, 1, 0, 0, 0, 1};
  expect_ints("const_imm(shape=3x3)", im, 9);
  int64_t one[] = {1, 1, 1, 1, 1, 1};
  expect_ints("const_one(shape=2x3)", one, 6);
  expect_bad_shape("const_pool(k=3x3, shape=2x2x3x3)");
  expect_bad_shape("const_iconv(k=3x3, shape=2x1x3x3)");
  expect_bad_shape("const_imm(shape=2x3)");
  /* identities the axioms rely on, checked numerically */
  int64_t xv[] = {1, 2, 3, 4, 5, 6, 7, 8, 9};
  expect_ints("conv2d(x, const_iconv(k=3x3, shape=1x1x3x3))", xv, 9); /* A39 */
  int64_t mv[] = {1, 2, 3, 4, 5, 6};
  expect_ints("matmul(m, const_imm(shape=2x2))", mv, 6); /* A40 */
  expect_ints("ewmul(m, const_one(shape=3x2))", mv, 6);  /* A41 */
}

static void test_split_trees(void) {
  expect_trees("a", 0, "- -");
  expect_trees("concat(1, a, b)", 0, "- (3,-,-)");
  expect_trees("concat(0, a, b)", 0, "(2,-,-) -");
  /* other axes keep a tree only where both operands agree */
  expect_trees("concat(0, concat(1, a, b), concat(1, b, a))", 0, "(2,-,-) (3,-,-)");
  expect_trees("concat(0, concat(1, a, b), c6)", 0, "(2,-,-) -");
  /* nested concats: left and right nesting differ (no associativity) */
  expect_trees("concat(1, concat(1, a, b), c6)", 0, "- (6,(3,-,-),-)");
  expect_trees("concat(1, c6, concat(1, a, b))", 0, "- (6,-,(3,-,-))");
  /* split: inverse of concat, other axes kept */
  expect_trees("split0(1, concat(1, concat(0, a, b), concat(0, b, a)))", 0, "(2,-,-) -");
  expect_trees("split1(1, concat(1, c6, concat(1, a, b)))", 0, "- (3,-,-)");
  /* element-wise operators keep trees where both inputs agree */
  expect_trees("ewadd(concat(1, a, b), concat(1, b, a))", 0, "- (3,-,-)");
  expect_trees("ewadd(concat(1, a, b), c6)", 0, "- -");
  expect_trees("ewmul(concat(0, a, b), concat(0, a, b))", 0, "(2,-,-) -");
  expect_trees("relu(concat(1, a, b))", 0, "- (3,-,-)");
  expect_trees("smul(concat(1, a, b), s)", 0, "- (3,-,-)");
  expect_trees("transpose(concat(1, a, b))", 0, "(3,-,-) -");
  /* matmul: rows from the left operand, columns from the right */
  expect_trees("matmul(concat(0, a, b), concat(1, m, m))", 0, "(2,-,-) (2,-,-)");
  expect_trees("matmul(concat(1, a, b), concat(0, m, m))", 0, "- -");
  /* conv2d: axis 0 from the input, axis 1 from the weight's axis 0 */
  expect_trees("conv2d(concat(0, x, x), concat(0, k, k))", 0, "(1,-,-) (1,-,-) - -");
  expect_trees("conv2d(concat(1, x, x), concat(1, k, k))", 0, "- - - -");
  /* pooling keeps axis 0 and drops axis 1 */
  expect_trees("pool_avg(k=3x3, concat(0, x, x))", 0, "(1,-,-) - - -");
  expect_trees("pool_max(k=3x3, concat(1, x, x))", 0, "- - - -");
  /* enlarge keeps the channel axes */
  expect_trees("enlarge(k=3x3, concat(1, concat(0, p, p), concat(0, p, p)))", 0,
               "(1,-,-) (1,-,-) - -");
  expect_trees("const_one(shape=2x3)", 0, "- -");
  /* a tree past what the code holds: the axis keeps none (7 concats do) */
  char text[1024] = "a";
  for (int i = 0; i < 7; i++) {
    char next[sizeof text + 16];
    snprintf(next, sizeof next, "concat(0, %s, a)", text);
    strcpy(text, next);
  }
  expect_trees(text, 0, "(14,(12,(10,(8,(6,(4,(2,-,-),-),-),-),-),-),-) -");
  /* past what the code holds, a digest of the whole tree: the same tree
   * compares equal, another nesting of the same values does not, and no
   * split reads it */
  char deeper[sizeof text + 16], buf[64];
  snprintf(deeper, sizeof deeper, "concat(0, %s, a)", text);
  result_t d = run(deeper, 0), again = run(deeper, 0);
  taso_tree_format(&d.type.tree[0], buf, sizeof buf);
  CHECK(strncmp(buf, "<8 concats #", 12) == 0 && taso_tree_digest(&d.type.tree[0]));
  CHECK(taso_tree_splits(&d.type.tree[0]) == 8 && taso_tree_empty(&d.type.tree[1]));
  CHECK(taso_tensor_equal(&d.type, &again.type));
  free(d.v);
  free(again.v);
  /* four concats sharing operands: (a a a a a a a a)(a a a a) against
   * (a a a a)(a a a a a a a a), 11 concats each */
  const char *q = "concat(0, concat(0, a, a), concat(0, a, a))";
  char r8[256], left[512], right[512];
  snprintf(r8, sizeof r8, "concat(0, %s, %s)", q, q);
  snprintf(left, sizeof left, "concat(0, %s, %s)", r8, q);
  snprintf(right, sizeof right, "concat(0, %s, %s)", q, r8);
  result_t l = run(left, 0), r = run(right, 0);
  CHECK(taso_tree_splits(&l.type.tree[0]) == 11 && taso_tree_splits(&r.type.tree[0]) == 11);
  CHECK(!taso_tree_equal(&l.type.tree[0], &r.type.tree[0]));
  /* element-wise operators keep a digest where both agree */
  char both[1200];
  snprintf(both, sizeof both, "ewadd(%s, %s)", left, left);
  result_t same = run(both, 0);
  CHECK(taso_tree_equal(&same.type.tree[0], &l.type.tree[0]));
  snprintf(both, sizeof both, "ewadd(%s, %s)", left, right);
  expect_trees(both, 0, "- -");
  free(same.v);
  free(l.v);
  free(r.v);
  char split[sizeof deeper + 16];
  snprintf(split, sizeof split, "split0(0, %s)", deeper);
  expect_bad_shape(split);
}

/* The double and field instantiations agree with the rational oracle. */
static void test_instantiations_agree(void) {
  const char *graphs[] = {
      "ewadd(matmul(a, m), matmul(b, m))",
      "conv2d(s=2x1, concat(1, x, k), concat(1, k, x))",
      "conv2d(pad=valid, x, enlarge(k=3x3, q))",
      "pool_avg(k=3x3, s=2x2, conv2d(x, const_pool(k=3x3, shape=1x1x3x3)))",
      "transpose(smul(concat(0, a, n), s))",
      "split1(1, concat(1, ewmul(a, n), b))",
      "conv2d(g, gw)",
      "ewmul(matmul(m, const_imm(shape=2x2)), const_one(shape=3x2))",
      "conv2d(x, const_iconv(k=3x3, shape=1x1x3x3))",
  };
  for (size_t t = 0; t < sizeof graphs / sizeof *graphs; t++) {
    taso_graph_t g;
    taso_graph_init(&g);
    CHECK_OK(taso_graph_parse(graphs[t], &inputs, &g));
    taso_tensor_t *types = calloc(2 * g.nnodes, sizeof *types);
    CHECK_OK(taso_graph_infer(&g, &inputs, types));
    taso_rat_t **rin = calloc(inputs.n, sizeof *rin), **rv = calloc(2 * g.nnodes, sizeof *rv);
    double **din = calloc(inputs.n, sizeof *din), **dv = calloc(2 * g.nnodes, sizeof *dv);
    taso_fp_t **fin = calloc(inputs.n, sizeof *fin), **fv = calloc(2 * g.nnodes, sizeof *fv);
    srand(7 + (unsigned)t);
    for (int i = 0; i < inputs.n; i++) {
      int64_t size = taso_tensor_size(&inputs.v[i].type);
      rin[i] = malloc(sizeof **rin * size);
      din[i] = malloc(sizeof **din * size);
      fin[i] = malloc(sizeof **fin * size);
      for (int64_t e = 0; e < size; e++) {
        int v = rand() % 201 - 100;
        rin[i][e] = taso_rat(v, 1);
        din[i][e] = v;
        fin[i][e] = taso_fp_from_int(v);
      }
    }
    taso_rat_ctx_t rc;
    CHECK_OK(taso_eval_graph_rational(&rc, &g, types, rin, rv));
    CHECK_OK(taso_eval_graph_double(NULL, &g, types, din, dv));
    CHECK_OK(taso_eval_graph_field(NULL, &g, types, fin, fv));
    taso_ref_t out = g.outputs[0];
    int64_t size = taso_tensor_size(&types[out]), bad = 0;
    for (int64_t e = 0; e < size; e++) {
      taso_rat_t r = rv[out][e];
      double d = (double)r.num / (double)r.den;
      if (fabs(d - dv[out][e]) > 1e-9 * (1 + fabs(d))) bad++;
      if (taso_fp_frac(r.num, r.den) != fv[out][e]) bad++;
    }
    if (bad) fprintf(stderr, "%s: %lld mismatches\n", graphs[t], (long long)bad);
    CHECK(bad == 0);
    taso_values_free((void **)rv, 2 * g.nnodes);
    taso_values_free((void **)dv, 2 * g.nnodes);
    taso_values_free((void **)fv, 2 * g.nnodes);
    taso_values_free((void **)rin, inputs.n);
    taso_values_free((void **)din, inputs.n);
    taso_values_free((void **)fin, inputs.n);
    free(rv), free(dv), free(fv), free(rin), free(din), free(fin), free(types);
    taso_graph_free(&g);
  }
}

/* Every operator of the registry is covered by this file. */
static void test_registry_complete(void) {
  for (int k = TASO_OP_INPUT + 1; k < TASO_OP_COUNT; k++) {
    CHECK(taso_ops[k].name && taso_ops[k].shape && taso_ops[k].trees);
    CHECK((int)taso_op_lookup(taso_ops[k].name) == k);
  }
  CHECK(taso_op_lookup("nosuchop") == TASO_OP_COUNT);
  CHECK(taso_op_lookup("input") == TASO_OP_COUNT);
}

int main(void) {
  setup();
  test_case_t cases[] = {TEST(test_elementwise),
                         TEST(test_transpose_matmul),
                         TEST(test_window_formula),
                         TEST(test_conv2d),
                         TEST(test_pool),
                         TEST(test_concat_split),
                         TEST(test_enlarge_constants),
                         TEST(test_split_trees),
                         TEST(test_instantiations_agree),
                         TEST(test_registry_complete)};
  int rc = test_run(cases, sizeof cases / sizeof *cases);
  taso_inputs_free(&inputs);
  return rc;
}
