/* Shape conditions and the checked rewrite (issue 12, section 1). */
#include <stdlib.h>

#include "match.h"
#include "shape_cond.h"
#include "test.h"

static taso_inputs_t table; /* the workstation job's inputs that the tests use */

static void setup(void) {
  const int32_t i[4] = {2, 4, 5, 5}, w4[4] = {4, 4, 3, 3}, w7[4] = {4, 4, 1, 3},
                w10[4] = {4, 4, 3, 1};
  TASO_CHECK(taso_inputs_add(&table, "i1", 4, i));
  TASO_CHECK(taso_inputs_add(&table, "i2", 4, i));
  TASO_CHECK(taso_inputs_add(&table, "w4", 4, w4));
  TASO_CHECK(taso_inputs_add(&table, "w7", 4, w7));
  TASO_CHECK(taso_inputs_add(&table, "w10", 4, w10));
  TASO_CHECK(taso_inputs_add(&table, "w11", 4, w10));
}

/* The table with other shapes for some inputs: "w10=2x4x3x1 i1=1x8x7x7". */
static taso_inputs_t at(int n, const char *const *names, const int32_t (*dims)[4]) {
  taso_inputs_t t = {.n = table.n, .v = malloc(sizeof *t.v * (size_t)table.n)};
  memcpy(t.v, table.v, sizeof *t.v * (size_t)table.n);
  for (int k = 0; k < n; k++)
    t.v[taso_inputs_find(&table, names[k])].type = taso_tensor_make(4, dims[k]);
  return t;
}

typedef struct {
  taso_graph_t lhs, rhs;
  taso_shape_cond_t cond;
} rule_t;

static void rule(rule_t *r, const char *text) {
  taso_graph_init(&r->lhs);
  taso_graph_init(&r->rhs);
  TASO_CHECK(taso_subst_parse(text, &table, &r->lhs, &r->rhs));
  TASO_CHECK(taso_shape_cond_of(&r->lhs, &r->rhs, &table, &r->cond));
}

static void rule_free(rule_t *r) {
  taso_graph_free(&r->lhs);
  taso_graph_free(&r->rhs);
  taso_shape_cond_free(&r->cond);
}

static bool holds(const rule_t *r, const taso_inputs_t *t) {
  bool h = false;
  CHECK_OK(taso_shape_cond_holds_at(&r->cond, &r->lhs, &r->rhs, t, &h));
  return h;
}

static taso_err_t count(void *ctx, const taso_graph_t *g) {
  (void)g;
  ++*(int *)ctx;
  return TASO_OK;
}

/* Rewrites lhs itself, typed at t: how many rewrites each engine makes. */
static void rewrites(const rule_t *r, const taso_inputs_t *t, int *any, int *checked) {
  taso_tensor_t *types = malloc(sizeof *types * (size_t)(2 * r->lhs.nnodes));
  *any = *checked = 0;
  CHECK_OK(taso_graph_infer(&r->lhs, t, types));
  CHECK_OK(taso_rewrite_all(&r->lhs, types, &r->lhs, &r->rhs, &table, true, count, any));
  CHECK_OK(
      taso_rewrite_all_checked(&r->lhs, types, &r->lhs, &r->rhs, &table, &r->cond, count, checked));
  free(types);
}

/* The example: a 2-group convolution only where both weights have
 * the same output channels. */
static void test_grouped_conv(void) {
  rule_t r;
  rule(&r, "concat(1, conv2d(act=relu, i1, w10), conv2d(act=relu, i2, w11)) => "
           "conv2d(act=relu, concat(1, i1, i2), concat(0, w10, w11))");
  CHECK(holds(&r, &table));
  const char *wn[] = {"w10", "w11"};
  const int32_t unequal[2][4] = {{2, 4, 3, 1}, {6, 4, 3, 1}};
  taso_inputs_t t = at(2, wn, unequal);
  int any, checked;
  CHECK(!holds(&r, &t));
  rewrites(&r, &t, &any, &checked);
  CHECK(any == 1 && checked == 0); /* any_type applies it where it is wrong */
  free(t.v);
  /* a model's shapes in the proved relation: batch 1, 64 channels, 56x56 */
  const char *mn[] = {"i1", "i2", "w10", "w11"};
  const int32_t model[4][4] = {{1, 64, 56, 56}, {1, 64, 56, 56}, {64, 64, 3, 1}, {64, 64, 3, 1}};
  t = at(4, mn, model);
  CHECK(holds(&r, &t));
  rewrites(&r, &t, &any, &checked);
  CHECK(any == 1 && checked == 1);
  free(t.v);
  char text[2048];
  taso_shape_cond_format(&r.cond, &r.lhs, &r.rhs, &table, text, sizeof text);
  CHECK(strstr(text, "w10.0 = w11.0") != NULL);
  rule_free(&r);
}

/* enlarge to 3x3 centres a 1-row kernel, which SAME padding centres too;
 * a 2-row kernel is not centred the same way. */
static void test_enlarge_offset(void) {
  rule_t r;
  rule(&r, "conv2d(i1, enlarge(k=3x3, w7)) => conv2d(i1, w7)");
  const char *n[] = {"w7"};
  const int32_t two_rows[1][4] = {{4, 4, 2, 3}};
  taso_inputs_t t = at(1, n, two_rows);
  int any, checked;
  CHECK(!holds(&r, &t));
  rewrites(&r, &t, &any, &checked);
  CHECK(any == 1 && checked == 0);
  free(t.v);
  rule_free(&r);
}

/* Components that no operator compares are free: the batch against the
 * channels, the spatial size against the channels. The channels of one
 * conv2d are one component: the proved instance has as many output
 * channels as input channels, so a conv2d that changes the channel count
 * is outside the relation (conservative: it holds there, but the proof
 * did not see it). */
static void test_components(void) {
  rule_t r;
  rule(&r, "relu(conv2d(i1, w4)) => conv2d(act=relu, i1, w4)");
  const char *n[] = {"i1", "w4"};
  const int32_t same[2][4] = {{1, 64, 56, 56}, {64, 64, 3, 3}};
  const int32_t wider[2][4] = {{1, 64, 56, 56}, {128, 64, 3, 3}};
  const int32_t spatial_1x1[2][4] = {{1, 64, 56, 56}, {64, 64, 1, 1}};
  taso_inputs_t t = at(2, n, same);
  CHECK(holds(&r, &t));
  free(t.v);
  t = at(2, n, wider);
  CHECK(!holds(&r, &t));
  free(t.v);
  t = at(2, n, spatial_1x1);
  CHECK(!holds(&r, &t)); /* a kernel of 1 is a different relation to the literal 1 */
  free(t.v);
  rule_free(&r);
}

/* A rank other than the proved one is refused. */
static void test_rank(void) {
  rule_t r;
  rule(&r, "ewadd(i1, i2) => ewadd(i2, i1)");
  taso_inputs_t t = {.n = table.n, .v = malloc(sizeof *t.v * (size_t)table.n)};
  memcpy(t.v, table.v, sizeof *t.v * (size_t)table.n);
  const int32_t d[2] = {3, 7};
  t.v[0].type = t.v[1].type = taso_tensor_make(2, d);
  CHECK(!holds(&r, &t));
  free(t.v);
  rule_free(&r);
}

int main(void) {
  setup();
  const test_case_t cases[] = {TEST(test_grouped_conv), TEST(test_enlarge_offset),
                               TEST(test_components), TEST(test_rank)};
  int rc = test_run(cases, (int)(sizeof cases / sizeof *cases));
  taso_inputs_free(&table);
  return rc;
}
