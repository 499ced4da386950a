/* Graphs: canonical text form, parser, hash-consing, canonical order, hash. */
#include <stdlib.h>

#include "graph.h"
#include "test.h"

static taso_inputs_t inputs;

static void setup(void) {
  int32_t x[2] = {2, 4}, w[2] = {4, 4}, i[4] = {2, 4, 5, 5}, w4[4] = {4, 4, 3, 3};
  const char *xs[] = {"x1", "x2", "x3"}, *ws[] = {"w1", "w2", "w3"};
  for (int k = 0; k < 3; k++)
    TASO_CHECK(taso_inputs_add(&inputs, xs[k], 2, x));
  for (int k = 0; k < 3; k++)
    TASO_CHECK(taso_inputs_add(&inputs, ws[k], 2, w));
  TASO_CHECK(taso_inputs_add(&inputs, "i1", 4, i));
  TASO_CHECK(taso_inputs_add(&inputs, "w4", 4, w4));
  TASO_CHECK(taso_inputs_add(&inputs, "w5", 4, w4));
  TASO_CHECK(taso_inputs_add(&inputs, "s0", 0, x));
}

/* Parses text and checks it prints back as `canonical`. */
static void round_trip(const char *text, const char *canonical) {
  taso_graph_t g, h;
  char buf[512], buf2[512];
  taso_graph_init(&g);
  taso_graph_init(&h);
  CHECK_OK(taso_graph_parse(text, &inputs, &g));
  int n = taso_graph_format(&g, &inputs, buf, sizeof buf);
  CHECK(n == (int)strlen(buf));
  CHECK_STR(buf, canonical);
  CHECK_OK(taso_graph_parse(buf, &inputs, &h));
  CHECK(taso_graph_compare(&g, &h) == 0);
  CHECK(taso_graph_hash(&g) == taso_graph_hash(&h));
  taso_graph_format(&h, &inputs, buf2, sizeof buf2);
  CHECK_STR(buf2, buf);
  taso_graph_free(&g);
  taso_graph_free(&h);
}

static void test_round_trip(void) {
  round_trip("ewadd(conv2d(i1, w4), conv2d(i1, w5))", "ewadd(conv2d(i1, w4), conv2d(i1, w5))");
  round_trip("  ewadd( conv2d(i1,w4) ,conv2d(i1 , w5))", "ewadd(conv2d(i1, w4), conv2d(i1, w5))");
  round_trip("conv2d(s=1x1, pad=same, act=none, i1, w4)", "conv2d(i1, w4)");
  round_trip("conv2d(act=relu, pad=valid, s=2x1, i1, w4)",
             "conv2d(s=2x1, pad=valid, act=relu, i1, w4)");
  round_trip("concat(axis=1, x1, x2)", "concat(1, x1, x2)");
  round_trip("split0(1, concat(1, x1, x2)), split1(1, concat(1, x1, x2))",
             "split0(1, concat(1, x1, x2)), split1(1, concat(1, x1, x2))");
  round_trip("transpose(layout=view, x1)", "transpose(layout=view, x1)");
  round_trip("transpose(layout=materialized, x1)", "transpose(x1)");
  round_trip("pool_max(pad=valid, k=3x3, i1)", "pool_max(k=3x3, pad=valid, i1)");
  round_trip("conv2d(i1, const_pool(k=3x3, shape=4x1x3x3))",
             "conv2d(i1, const_pool(k=3x3, shape=4x1x3x3))");
  round_trip("smul(matmul(x1, w1), s0)", "smul(matmul(x1, w1), s0)");
  round_trip("matmul(act=relu, x1, ewadd(w1, const_imm(shape=4x4)))",
             "matmul(act=relu, x1, ewadd(w1, const_imm(shape=4x4)))");
  round_trip("enlarge(k=3x3, w4)", "enlarge(k=3x3, w4)");
}

static void test_hash_consing(void) {
  taso_graph_t g;
  taso_graph_init(&g);
  /* relu(x1) is computed once although it is written twice */
  CHECK_OK(taso_graph_parse("ewadd(relu(x1), relu(x1))", &inputs, &g));
  CHECK(g.nnodes == 3);
  /* both outputs of one split node */
  CHECK_OK(
      taso_graph_parse("split0(0, concat(0, x1, x2)), split1(0, concat(0, x1, x2))", &inputs, &g));
  CHECK(g.nnodes == 4 && g.noutputs == 2);
  CHECK(TASO_REF_NODE(g.outputs[0]) == TASO_REF_NODE(g.outputs[1]));
  CHECK(TASO_REF_PORT(g.outputs[0]) == 0 && TASO_REF_PORT(g.outputs[1]) == 1);
  /* parameters an operator does not take do not distinguish nodes */
  taso_graph_clear(&g);
  taso_params_t p = taso_params_default(), q = taso_params_default();
  q.axis = 3;
  q.kernel[0] = 9;
  taso_ref_t in[2], r1, r2;
  CHECK_OK(taso_graph_add_input(&g, 0, &in[0]));
  CHECK_OK(taso_graph_add_input(&g, 1, &in[1]));
  CHECK_OK(taso_graph_add(&g, TASO_OP_EWADD, &p, in, &r1));
  CHECK_OK(taso_graph_add(&g, TASO_OP_EWADD, &q, in, &r2));
  CHECK(r1 == r2 && g.nnodes == 3);
  taso_graph_free(&g);
}

/* The indexed adds find the nodes the plain ones find: a random graph of
 * a few hundred nodes with many repeats, built both ways, node for node;
 * and after a clear the index follows the graph again. */
static void test_index(void) {
  taso_graph_t a, b;
  taso_graph_init(&a);
  taso_graph_init(&b);
  taso_graph_index_t ix = {0};
  for (int round = 0; round < 2; round++) {
    taso_graph_clear(&a);
    taso_graph_clear(&b);
    unsigned seed = 7u + (unsigned)round;
    for (int k = 0; k < 600; k++) {
      seed = seed * 1103515245u + 12345u;
      taso_ref_t ra, rb, in[2];
      if (a.nnodes < 4 || (seed >> 16) % 5 == 0) {
        int input = (int)((seed >> 8) % 3);
        CHECK_OK(taso_graph_add_input(&a, input, &ra));
        CHECK_OK(taso_graph_add_input_indexed(&b, &ix, input, &rb));
      } else {
        in[0] = TASO_REF((int)((seed >> 4) % (unsigned)a.nnodes), 0);
        in[1] = TASO_REF((int)((seed >> 12) % (unsigned)a.nnodes), 0);
        taso_params_t p = taso_params_default();
        CHECK_OK(taso_graph_add(&a, TASO_OP_EWADD, &p, in, &ra));
        if (k % 3) {
          CHECK_OK(taso_graph_add_indexed(&b, &ix, TASO_OP_EWADD, &p, in, &rb));
        } else { /* a node copied as it stands, with its params hash */
          taso_node_t n = a.nodes[TASO_REF_NODE(ra)];
          CHECK_OK(taso_graph_add_node_indexed(&b, &ix, &n, taso_node_params_hash(&n), &rb));
        }
      }
      CHECK(ra == rb && a.nnodes == b.nnodes);
    }
    CHECK(a.nnodes < 600); /* repeats were found */
  }
  taso_graph_index_free(&ix);
  taso_graph_free(&a);
  taso_graph_free(&b);
}

static void test_canonical_order(void) {
  /* the same graph built in two node orders, with a dead node in one */
  taso_graph_t a, b;
  taso_graph_init(&a);
  taso_graph_init(&b);
  taso_params_t p = taso_params_default();
  taso_ref_t x1, x2, w1, m, r, dead, in[2];
  CHECK_OK(taso_graph_add_input(&a, 0, &x1));
  CHECK_OK(taso_graph_add_input(&a, 3, &w1));
  CHECK_OK(taso_graph_add_input(&a, 1, &x2));
  in[0] = x1, in[1] = w1;
  CHECK_OK(taso_graph_add(&a, TASO_OP_MATMUL, &p, in, &m));
  CHECK_OK(taso_graph_add(&a, TASO_OP_RELU, &p, &x2, &dead));
  in[0] = m, in[1] = x2;
  CHECK_OK(taso_graph_add(&a, TASO_OP_EWADD, &p, in, &r));
  CHECK_OK(taso_graph_add_output(&a, r));
  CHECK_OK(taso_graph_canonicalize(&a));
  CHECK(a.nnodes == 5); /* the dead relu is gone */
  CHECK_OK(taso_graph_parse("ewadd(matmul(x1, w1), x2)", &inputs, &b));
  CHECK(taso_graph_compare(&a, &b) == 0);
  CHECK(taso_graph_hash(&a) == taso_graph_hash(&b));
  /* commutativity is a substitution, not a canonicalization */
  CHECK_OK(taso_graph_parse("ewadd(x2, matmul(x1, w1))", &inputs, &b));
  CHECK(taso_graph_compare(&a, &b) != 0);
  CHECK(taso_graph_compare(&a, &b) == -taso_graph_compare(&b, &a));
  CHECK(taso_graph_hash(&a) != taso_graph_hash(&b));
  /* the hash is part of the artifact format: pinned so a change is noticed */
  CHECK_OK(taso_graph_parse("ewadd(x1, x2)", &inputs, &b));
  uint64_t h = taso_graph_hash(&b);
  CHECK_OK(taso_graph_parse("ewadd(x1,x2)", &inputs, &b));
  CHECK(taso_graph_hash(&b) == h);
  CHECK(h == UINT64_C(0x1d496204a450caba));
  taso_graph_free(&a);
  taso_graph_free(&b);
}

/* Structural hashes: equal graphs alike, wherever their nodes stand; a
 * node's params hash leaves its operands out, its structural hash not. */
static void test_struct_hash(void) {
  taso_graph_t a, b;
  taso_graph_init(&a);
  taso_graph_init(&b);
  uint64_t ha[16], hb[16];
  CHECK_OK(taso_graph_parse("ewadd(matmul(x1, w1), relu(x2)), relu(x1)", &inputs, &a));
  CHECK_OK(taso_graph_parse("ewadd(matmul(x1,w1),relu(x2)),relu(x1)", &inputs, &b));
  CHECK(a.nnodes < 16 && b.nnodes < 16);
  CHECK(taso_graph_struct_hash_all(&a, ha) == taso_graph_struct_hash_all(&b, hb));
  /* the two relus: the same params hash, different structural hashes */
  int relu[2], nrelu = 0;
  for (int i = 0; i < a.nnodes && nrelu < 2; i++)
    if (a.nodes[i].kind == TASO_OP_RELU) relu[nrelu++] = i;
  CHECK(nrelu == 2);
  CHECK(taso_node_params_hash(&a.nodes[relu[0]]) == taso_node_params_hash(&a.nodes[relu[1]]));
  CHECK(ha[relu[0]] != ha[relu[1]]);
  /* the same nodes in another order of outputs, operands swapped: different */
  CHECK_OK(taso_graph_parse("relu(x1), ewadd(matmul(x1, w1), relu(x2))", &inputs, &b));
  CHECK(taso_graph_struct_hash_all(&a, ha) != taso_graph_struct_hash_all(&b, hb));
  CHECK_OK(taso_graph_parse("ewadd(relu(x2), matmul(x1, w1)), relu(x1)", &inputs, &b));
  CHECK(taso_graph_struct_hash_all(&a, ha) != taso_graph_struct_hash_all(&b, hb));
  /* a node's hash is what it computes: the subterm matmul(x1, w1) alike in both */
  CHECK_OK(taso_graph_parse("relu(matmul(x1, w1))", &inputs, &b));
  taso_graph_struct_hash_all(&a, ha);
  taso_graph_struct_hash_all(&b, hb);
  int ma = -1, mb = -1;
  for (int i = 0; i < a.nnodes; i++)
    ma = a.nodes[i].kind == TASO_OP_MATMUL ? i : ma;
  for (int i = 0; i < b.nnodes; i++)
    mb = b.nodes[i].kind == TASO_OP_MATMUL ? i : mb;
  CHECK(ma >= 0 && mb >= 0 && ha[ma] == hb[mb]);
  CHECK(taso_node_struct_hash(taso_node_params_hash(&a.nodes[ma]), &a.nodes[ma], ha) == ha[ma]);
  taso_graph_free(&a);
  taso_graph_free(&b);
}

/* Parsing must fail with code and a message containing `what`. */
static void bad(const char *text, taso_err_t code, const char *what) {
  taso_graph_t g;
  taso_graph_init(&g);
  CHECK_ERR(taso_graph_parse(text, &inputs, &g), code);
  if (!strstr(taso_error_detail(), what))
    fprintf(stderr, "'%s': message '%s' lacks '%s'\n", text, taso_error_detail(), what);
  CHECK(strstr(taso_error_detail(), what) != NULL);
  taso_graph_free(&g);
}

static void test_errors(void) {
  bad("ewadd(x1, frobnicate(x2))", TASO_ERR_UNKNOWN, "column 11: unknown operator 'frobnicate'");
  bad("ewadd(x1, x9)", TASO_ERR_UNKNOWN, "unknown input 'x9'");
  bad("ewadd(x1, x2", TASO_ERR_PARSE, "expected ')'");
  bad("ewadd(x1)", TASO_ERR_PARSE, "wrong number of operands");
  bad("relu(x1, x2)", TASO_ERR_PARSE, "too many operands");
  bad("ewadd(x1, w1)", TASO_ERR_SHAPE, "ewadd: operand shapes differ");
  bad("matmul(w1, x1)", TASO_ERR_SHAPE, "matmul: inner sizes differ");
  bad("conv2d(colour=red, i1, w4)", TASO_ERR_UNKNOWN, "column 8: unknown parameter 'colour'");
  bad("conv2d(pad=diagonal, i1, w4)", TASO_ERR_PARSE, "bad parameter value 'diagonal'");
  bad("concat(x1, x2)", TASO_ERR_PARSE, "missing axis");
  bad("relu(axis=1, x1)", TASO_ERR_PARSE, "takes no parameter");
  bad("relu(x1) junk", TASO_ERR_PARSE, "column 10: unexpected text 'junk'");
  bad("", TASO_ERR_PARSE, "expected an operator or input");
  bad("split(0, x1)", TASO_ERR_UNKNOWN, "unknown operator 'split'");
  bad("const_one(x1)", TASO_ERR_PARSE, "too many operands");
}

static void test_subst_and_templates(void) {
  taso_graph_t s, d;
  taso_graph_init(&s);
  taso_graph_init(&d);
  CHECK_OK(taso_subst_parse("ewadd(matmul(x1, w1), matmul(x1, w2)) => matmul(x1, ewadd(w1, w2))",
                            &inputs, &s, &d));
  CHECK(s.nnodes == 6 && d.nnodes == 5);
  CHECK_ERR(taso_subst_parse("ewadd(x1, x2) matmul(x1, w1)", &inputs, &s, &d), TASO_ERR_PARSE);
  CHECK_ERR(taso_subst_parse("ewadd(x1, x2), x1 => x1", &inputs, &s, &d), TASO_ERR_SHAPE);
  taso_graph_free(&s);
  taso_graph_free(&d);

  taso_op_kind_t kind;
  taso_params_t p;
  CHECK_OK(taso_op_template_parse("conv2d(act=relu)", &kind, &p));
  CHECK(kind == TASO_OP_CONV2D && p.act == TASO_ACT_RELU && p.stride[0] == 1 &&
        p.pad == TASO_PAD_SAME);
  CHECK_OK(taso_op_template_parse("matmul", &kind, &p));
  CHECK(kind == TASO_OP_MATMUL);
  CHECK_OK(taso_op_template_parse("const_pool(k=3x3)", &kind, &p)); /* shape comes later */
  CHECK(kind == TASO_OP_CONST_POOL && p.kernel[0] == 3 && p.kernel[1] == 3);
  CHECK_OK(taso_op_template_parse("concat(axis=1)", &kind, &p));
  CHECK(kind == TASO_OP_CONCAT && p.axis == 1);
  CHECK_OK(taso_op_template_parse("split(axis=0)", &kind, &p));
  CHECK(kind == TASO_OP_SPLIT);
  CHECK_ERR(taso_op_template_parse("pool_avg", &kind, &p), TASO_ERR_PARSE); /* needs k */
  CHECK_ERR(taso_op_template_parse("conv2d(x1)", &kind, &p), TASO_ERR_PARSE);
  CHECK_ERR(taso_op_template_parse("warp", &kind, &p), TASO_ERR_UNKNOWN);
}

static void test_inputs(void) {
  taso_inputs_t t = {0};
  int32_t d[2] = {2, 0};
  CHECK_ERR(taso_inputs_add(&t, "x", 2, d), TASO_ERR_SHAPE);
  d[1] = 3;
  CHECK_OK(taso_inputs_add(&t, "x", 2, d));
  CHECK_ERR(taso_inputs_add(&t, "x", 2, d), TASO_ERR_ARG);
  CHECK_ERR(taso_inputs_add(&t, "relu", 2, d), TASO_ERR_ARG);
  CHECK_ERR(taso_inputs_add(&t, "a_name_far_too_long", 2, d), TASO_ERR_ARG);
  CHECK_ERR(taso_inputs_add(&t, "y", 5, d), TASO_ERR_SHAPE);
  CHECK(taso_inputs_find(&t, "x") == 0 && taso_inputs_find(&t, "y") == -1);
  taso_inputs_free(&t);
}

int main(void) {
  setup();
  test_case_t cases[] = {TEST(test_round_trip),          TEST(test_hash_consing), TEST(test_index),
                         TEST(test_canonical_order),     TEST(test_struct_hash),  TEST(test_errors),
                         TEST(test_subst_and_templates), TEST(test_inputs)};
  int rc = test_run(cases, sizeof cases / sizeof *cases);
  taso_inputs_free(&inputs);
  return rc;
}
