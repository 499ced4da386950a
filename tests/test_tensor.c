/* Tensor types and split trees. */
#include "tensor.h"
#include "test.h"

static void test_tree_join_split(void) {
  taso_tree_t empty = {{0}}, a, b, l, r;
  int32_t s;
  CHECK(taso_tree_empty(&empty));
  CHECK(!taso_tree_split(&empty, &s, &l, &r));
  taso_tree_join(&a, 2, &empty, &empty);
  CHECK(!taso_tree_empty(&a));
  taso_tree_join(&b, 5, &a, &empty);
  CHECK(taso_tree_split(&b, &s, &l, &r));
  CHECK(s == 5);
  CHECK(taso_tree_equal(&l, &a));
  CHECK(taso_tree_equal(&r, &empty));
  CHECK(taso_tree_split(&l, &s, &l, &r)); /* aliasing output and input is allowed */
  CHECK(s == 2 && taso_tree_empty(&l) && taso_tree_empty(&r));
  char buf[64];
  taso_tree_format(&b, buf, sizeof buf);
  CHECK_STR(buf, "(5,(2,-,-),-)");
  /* (x,y) joined on the left differs from joined on the right: concat is not associative */
  taso_tree_t left, right;
  taso_tree_join(&left, 3, &a, &empty);
  taso_tree_join(&right, 3, &empty, &a);
  CHECK(!taso_tree_equal(&left, &right));
}

/* Past the code's size a tree is a digest: counted, compared, not split. */
static void test_tree_digest(void) {
  taso_tree_t t = {{0}}, u = {{0}}, empty = {{0}}, l, r;
  int joins = 0;
  while (!taso_tree_digest(&t)) {
    taso_tree_join(&t, 1, &t, &empty);
    taso_tree_join(&u, 1, &u, &empty);
    joins++;
  }
  CHECK(joins == (TASO_TREE_CODE - 1) / 2 + 1);
  CHECK(taso_tree_splits(&t) == joins && !taso_tree_empty(&t) && taso_tree_equal(&t, &u));
  int32_t s;
  CHECK(!taso_tree_split(&t, &s, &l, &r));
  /* the same sizes nested the other way, and another size: different */
  taso_tree_t v = {{0}}, w = {{0}};
  for (int k = 0; k < joins; k++) {
    taso_tree_join(&v, 1, &empty, &v);
    taso_tree_join(&w, k == 0 ? 2 : 1, &w, &empty);
  }
  CHECK(taso_tree_splits(&v) == joins && !taso_tree_equal(&t, &v) && !taso_tree_equal(&t, &w));
  /* a digest over a digest: made from its parts alone */
  taso_tree_t big, big2;
  taso_tree_join(&big, 3, &t, &v);
  taso_tree_join(&big2, 3, &u, &v);
  CHECK(taso_tree_splits(&big) == 2 * joins + 1 && taso_tree_equal(&big, &big2));
}

static void test_shape(void) {
  int32_t d[4] = {2, 4, 5, 5};
  taso_tensor_t t = taso_tensor_make(4, d), u = taso_tensor_make(4, d);
  CHECK(taso_tensor_size(&t) == 200);
  CHECK(taso_tensor_equal(&t, &u));
  u.dim[3] = 4;
  CHECK(!taso_tensor_equal(&t, &u));
  taso_tensor_t scalar = taso_tensor_make(0, d);
  CHECK(taso_tensor_size(&scalar) == 1);
  char buf[32];
  taso_shape_format(&t, buf, sizeof buf);
  CHECK_STR(buf, "2x4x5x5");
  taso_shape_format(&scalar, buf, sizeof buf);
  CHECK_STR(buf, "scalar");
  CHECK(taso_shape_format(&t, buf, 3) == 7); /* snprintf-like: the length it needs */
}

int main(void) {
  test_case_t cases[] = {TEST(test_tree_join_split), TEST(test_tree_digest), TEST(test_shape)};
  return test_run(cases, sizeof cases / sizeof *cases);
}
