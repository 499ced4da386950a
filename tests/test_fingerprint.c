/* Fingerprints pair equal graphs and tell apart unequal ones. */
#include "fingerprint.h"
#include "memo.h"
#include "test.h"
#include <stdlib.h>

static taso_inputs_t inputs;
static taso_fp_inputs_t rnd;

static void setup(void) {
  int32_t x[2] = {2, 4}, w[2] = {4, 4}, i[4] = {2, 4, 5, 5}, w4[4] = {4, 4, 3, 3};
  const char *names2[] = {"x1", "x2", "x3"}, *wn[] = {"w1", "w2"}, *cw[] = {"w4", "w5"};
  for (int k = 0; k < 3; k++)
    TASO_CHECK(taso_inputs_add(&inputs, names2[k], 2, x));
  for (int k = 0; k < 2; k++)
    TASO_CHECK(taso_inputs_add(&inputs, wn[k], 2, w));
  TASO_CHECK(taso_inputs_add(&inputs, "i1", 4, i));
  for (int k = 0; k < 2; k++)
    TASO_CHECK(taso_inputs_add(&inputs, cw[k], 4, w4));
  TASO_CHECK(taso_fp_inputs_init(&rnd, &inputs, 42));
}

/* Fingerprints of two graph texts and the exact re-check. */
static void compare(const char *a, const char *b, bool *fp_equal, bool *exact_equal) {
  taso_graph_t ga, gb;
  taso_graph_init(&ga);
  taso_graph_init(&gb);
  TASO_CHECK(taso_graph_parse(a, &inputs, &ga));
  TASO_CHECK(taso_graph_parse(b, &inputs, &gb));
  taso_tensor_t *ta = calloc(2 * ga.nnodes, sizeof *ta), *tb = calloc(2 * gb.nnodes, sizeof *tb);
  CHECK_OK(taso_graph_infer(&ga, &inputs, ta));
  CHECK_OK(taso_graph_infer(&gb, &inputs, tb));
  taso_fingerprint_t fa, fb;
  CHECK_OK(taso_fingerprint_graph(&rnd, &ga, ta, &fa, NULL));
  CHECK_OK(taso_fingerprint_graph(&rnd, &gb, tb, &fb, NULL));
  *fp_equal = fa.h[0] == fb.h[0] && fa.h[1] == fb.h[1];
  CHECK(fa.h[0] != fa.h[1]); /* two independent hashes */
  CHECK_OK(taso_fingerprint_recheck(&rnd, &ga, ta, &gb, tb, exact_equal));
  free(ta);
  free(tb);
  taso_graph_free(&ga);
  taso_graph_free(&gb);
}

static void must_pair(const char *a, const char *b) {
  bool fp, exact;
  compare(a, b, &fp, &exact);
  if (!fp || !exact) fprintf(stderr, "not paired: %s => %s\n", a, b);
  CHECK(fp && exact);
}

static void must_not_pair(const char *a, const char *b) {
  bool fp, exact;
  compare(a, b, &fp, &exact);
  if (fp || exact) fprintf(stderr, "paired: %s => %s\n", a, b);
  CHECK(!fp && !exact);
}

static void test_known_substitutions(void) {
  must_pair("ewadd(x1, x2)", "ewadd(x2, x1)");
  must_pair("ewadd(matmul(x1, w1), matmul(x1, w2))", "matmul(x1, ewadd(w1, w2))");
  must_pair("concat(1, conv2d(i1, w4), conv2d(i1, w5))", "conv2d(i1, concat(0, w4, w5))");
  must_pair("conv2d(i1, const_pool(k=3x3, shape=4x1x3x3))", "pool_avg(k=3x3, i1)");
  must_pair("relu(conv2d(i1, w4))", "conv2d(act=relu, i1, w4)");
  must_pair("split0(0, concat(0, x1, x2))", "x1");
  must_pair("transpose(transpose(x1))", "x1");
  must_pair("ewmul(x1, const_one(shape=2x4))", "x1");
}

static void test_distinct(void) {
  /* relu over constants: a fixed relu model gives relu(1) = 4 on every set */
  must_not_pair("conv2d(act=relu, const_one(shape=4x1x3x3), relu(const_one(shape=4x1x3x3)))",
                "conv2d(act=relu, const_one(shape=4x4x3x3), const_one(shape=4x4x3x3))");
  must_not_pair("relu(x1)", "x1");
  must_not_pair("concat(0, x1, concat(0, x2, x3))", "concat(0, concat(0, x1, x2), x3)");
  must_not_pair("ewadd(x1, x2)", "ewmul(x1, x2)");
  must_not_pair("pool_max(k=3x3, i1)", "pool_avg(k=3x3, i1)");
  must_not_pair("transpose(layout=view, w1)", "w1");
  /* equal values, different split trees: not equal graphs */
  must_not_pair("concat(1, x1, x2)", "ewmul(concat(1, x1, x2), const_one(shape=2x8))");
}

static void test_seed_determinism(void) {
  taso_fp_inputs_t again, other;
  CHECK_OK(taso_fp_inputs_init(&again, &inputs, 42));
  CHECK_OK(taso_fp_inputs_init(&other, &inputs, 43));
  int64_t n = rnd.offset[inputs.n];
  for (int s = 0; s < TASO_FP_SETS; s++) {
    CHECK(memcmp(again.values[s], rnd.values[s], sizeof(taso_fp_t) * n) == 0);
    CHECK(memcmp(other.values[s], rnd.values[s], sizeof(taso_fp_t) * n) != 0);
    for (int64_t e = 0; e < n; e++)
      CHECK(rnd.values[s][e] < TASO_P61);
  }
  CHECK(memcmp(rnd.values[0], rnd.values[1], sizeof(taso_fp_t) * n) != 0);
  taso_fp_inputs_free(&again);
  taso_fp_inputs_free(&other);
}

static void test_field(void) {
  CHECK(taso_fp_mul(TASO_P61 - 1, TASO_P61 - 1) == 1); /* (-1)^2 */
  CHECK(taso_fp_add(TASO_P61 - 1, 1) == 0);
  CHECK(taso_fp_mul(taso_fp_inverse(9), 9) == 1);
  CHECK(taso_fp_frac(-3, 9) == taso_fp_mul(taso_fp_from_int(-1), taso_fp_inverse(3)));
  CHECK(taso_fp_relu(0) == 0);
  CHECK(taso_fp_max(3, 7) == taso_fp_max(7, 3));
}

/* The random max model is symmetric, and max(0, x) is not linear in x: a
 * linear one made pool_max over a constant with one nonzero per window
 * commute with smul by any scalar (negative ones too) on every input set. */
static void test_max_model(void) {
  for (int s = 0; s < TASO_FP_SETS; s++) {
    const taso_fp_model_t *m = &rnd.model[s];
    taso_fp_t a = 12345, b = 678910, k = TASO_P61 - 3; /* k = -3 */
    CHECK(taso_fp_max_m(m, a, b) == taso_fp_max_m(m, b, a));
    CHECK(taso_fp_max_m(m, 0, taso_fp_mul(k, a)) != taso_fp_mul(k, taso_fp_max_m(m, 0, a)));
    CHECK(taso_fp_relu_m(m, 0) == 0);
  }
}

/* The tensor memo keeps the values of small expressions; a larger one has
 * values only while held, and an expression evaluated without interning
 * has the fingerprint the memo gives it. */
static void test_memo_holds(void) {
  taso_memo_t *m = NULL;
  CHECK_OK(taso_memo_create(&rnd, &inputs, 1, &m)); /* no expression keeps values */
  taso_node_t relu = {.kind = TASO_OP_RELU, .in = {-1, -1, -1}};
  taso_tensor_t t = inputs.v[0].type;
  int32_t x1 = 0, a = -1, b = -1, c = -1;
  /* relu(x1), held: relu(relu(x1)) can be evaluated */
  CHECK_OK(taso_memo_apply(m, 0, &relu, &x1, &t, &t, 1, true, &a));
  int32_t ta = 2 * a;
  CHECK_OK(taso_memo_apply(m, 0, &relu, &ta, &t, &t, 2, false, &b));
  taso_fingerprint_t fps[2];
  CHECK_OK(taso_memo_eval(m, &relu, &ta, &t, &t, fps));
  taso_fingerprint_t fb = taso_memo_fp(m, 2 * b);
  CHECK(taso_fingerprint_cmp(&fps[0], &fb) == 0);
  taso_memo_release(m, a);
  /* released: its values are gone, a new consumer is refused */
  taso_node_t add = {.kind = TASO_OP_EWADD, .in = {-1, -1, -1}};
  int32_t in2[2] = {ta, x1};
  taso_tensor_t t2[2] = {t, t};
  CHECK_ERR(taso_memo_apply(m, 1, &add, in2, t2, &t, 2, false, &c), TASO_ERR_ARG);
  /* held again: evaluated again, the same fingerprint, no new expression */
  int64_t n = taso_memo_count(m);
  int32_t again = -1;
  CHECK_OK(taso_memo_apply(m, 0, &relu, &x1, &t, &t, 1, true, &again));
  CHECK(again == a && taso_memo_count(m) == n);
  CHECK_OK(taso_memo_apply(m, 1, &add, in2, t2, &t, 2, false, &c));
  taso_memo_release(m, a);
  taso_memo_free(m);
}

int main(void) {
  setup();
  test_case_t cases[] = {TEST(test_known_substitutions), TEST(test_distinct),
                         TEST(test_seed_determinism),    TEST(test_field),
                         TEST(test_max_model),           TEST(test_memo_holds)};
  int rc = test_run(cases, sizeof cases / sizeof *cases);
  taso_fp_inputs_free(&rnd);
  taso_inputs_free(&inputs);
  return rc;
}
