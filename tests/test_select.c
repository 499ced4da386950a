/*
 * Library-call selection: every call of the oneDNN and cuDNN descriptions
 * is allowed on a match that satisfies its constraints and refused on
 * matches that violate each of them; known-bad descriptions (an unsafe
 * in-place call, a call nothing satisfies, an unknown operator, bad
 * SMT-LIB) are refused with the file and the problem; a selected plan
 * fuses, writes in place only where nothing reads the operand later, runs
 * and agrees with the reference backend; and the runner refuses a plan
 * that writes over an operand a later step reads. A concat is placed (its
 * operands written into its result by their producers) only where each
 * slice is one block, and the runner refuses one that is not, or whose
 * operand's producer writes over its own operand.
 */
#define _POSIX_C_SOURCE 200809L
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "select.h"
#include "test.h"

#ifndef TASO_DATA_DIR
#error "TASO_DATA_DIR must name the data directory of the source tree"
#endif

static taso_library_t *load(const char *name) {
  char path[1024];
  snprintf(path, sizeof path, "%s/library/%s", TASO_DATA_DIR, name);
  taso_library_t *lib = NULL;
  CHECK_OK(taso_library_load(path, &lib));
  return lib;
}

/* A match every call's constraints accept, in the call's first layout. */
static taso_lib_props_t good(const taso_lib_call_t *c) {
  taso_lib_props_t p;
  memset(&p, 0, sizeof p);
  p.layout = c->layouts & 1 ? 0 : c->layouts & 2 ? 1 : 2;
  p.rank = 4, p.batch = 1, p.channels_in = 16, p.channels_out = 32, p.groups = 1;
  p.kernel_h = p.kernel_w = 3, p.stride_h = p.stride_w = 1;
  p.overwrites = c->writes == TASO_WRITES_OPERAND || c->writes == TASO_WRITES_SUMMAND;
  p.same_size = true;
  p.placed = c->writes == TASO_WRITES_PRODUCERS;
  p.outer = 1, p.slice_align = 256, p.producers_own = true;
  return p;
}

static bool allows(taso_library_t *lib, int i, taso_lib_props_t p) {
  bool ok = false;
  CHECK_OK(taso_library_allows(lib, i, &p, &ok));
  return ok;
}

static void check_calls(const char *file) {
  taso_library_t *lib = load(file);
  if (!lib) return;
  for (int i = 0; i < taso_library_ncalls(lib); i++) {
    const taso_lib_call_t *c = taso_library_call(lib, i);
    bool convs = false, matmuls = false;
    for (int j = 0; j < c->ncover; j++) {
      convs |= c->cover[j].kind == TASO_OP_CONV2D;
      matmuls |= c->cover[j].kind == TASO_OP_MATMUL;
    }
    taso_lib_props_t p = good(c);
    if (!allows(lib, i, p)) fprintf(stderr, "%s: %s refuses a good match\n", file, c->name);
    CHECK(allows(lib, i, p));
    p.dtype = 1; /* float32 only */
    CHECK(!allows(lib, i, p));
    p = good(c);
    p.overwrites = !p.overwrites; /* an in-place call only in place, the others never */
    CHECK(!allows(lib, i, p));
    p = good(c);
    p.placed = !p.placed; /* a placing call only placing, the others never */
    CHECK(!allows(lib, i, p));
    for (int l = 0; l < 3; l++) { /* the layouts it lists, and no other */
      p = good(c);
      p.layout = l;
      CHECK(allows(lib, i, p) == !!(c->layouts >> l & 1));
    }
    if (convs) { /* groups must divide both channel counts */
      p = good(c);
      p.groups = 3;
      CHECK(!allows(lib, i, p));
      p.groups = 16;
      CHECK(allows(lib, i, p));
    }
    if (matmuls) {
      p = good(c);
      p.rank = 1;
      CHECK(!allows(lib, i, p));
    }
    if (c->writes == TASO_WRITES_OWN) continue;
    if (c->writes == TASO_WRITES_PRODUCERS) {
      p = good(c);
      p.outer = 2; /* slices interleaved: a batch above 1 before the channel axis */
      CHECK(!allows(lib, i, p));
      p = good(c);
      p.producers_own = false;
      CHECK(!allows(lib, i, p));
      p = good(c);
      p.placed_overwritten = true;
      CHECK(!allows(lib, i, p));
      p = good(c);
      p.slice_align = 2; /* not even float-aligned */
      CHECK(!allows(lib, i, p));
      p.slice_align = 8; /* oneDNN takes it; cuDNN's constraint asks 16 */
      CHECK(allows(lib, i, p) == (strcmp(file, "onednn.smt2") == 0));
      p.slice_align = 16;
      CHECK(allows(lib, i, p));
      continue;
    }
    bool *flags[] = {&p.read_later, &p.is_input, &p.read_twice};
    for (int f = 0; f < 3; f++) {
      p = good(c);
      bool *flag = (bool *)((char *)&p + ((char *)flags[f] - (char *)&p));
      *flag = true;
      CHECK(!allows(lib, i, p)); /* never over an operand that is still needed */
    }
    p = good(c);
    p.same_size = false;
    CHECK(!allows(lib, i, p));
  }
  int64_t queries, cached;
  taso_library_counts(lib, &queries, &cached);
  CHECK(queries > 0);
  taso_library_free(lib);
}

static void test_onednn(void) {
  check_calls("onednn.smt2");
}
static void test_cudnn(void) {
  check_calls("cudnn.smt2");
}

static void refused(const char *file, const char *problem) {
  taso_library_t *lib = NULL;
  char path[1024];
  snprintf(path, sizeof path, "%s/library/bad/%s", TASO_DATA_DIR, file);
  CHECK_ERR(taso_library_load(path, &lib), TASO_ERR_PARSE);
  CHECK(lib == NULL);
  CHECK(strstr(taso_error_detail(), file) != NULL);
  if (!strstr(taso_error_detail(), problem))
    fprintf(stderr, "%s: expected \"%s\" in: %s\n", file, problem, taso_error_detail());
  CHECK(strstr(taso_error_detail(), problem) != NULL);
}

static void test_bad_libraries(void) {
  refused("unsafe_in_place.smt2", "unsafe in-place call");
  refused("unsafe_placed.smt2", "unsafe placing call");
  refused("never.smt2", "no match can satisfy");
  refused("unknown_op.smt2", "unknown operator");
  refused("relu_and_clip.smt2", "relu and clip in one pattern");
  refused("bad_smt.smt2", "Z3 cannot parse");
  taso_library_t *lib = NULL;
  CHECK_ERR(taso_library_load("/nonexistent/lib.smt2", &lib), TASO_ERR_IO);
}

/* ---- selection on a small model ------------------------------------------------ */

/* What the selection reads of a model, as it is now. */
#define TYPED(m) (&(taso_rt_typed_graph_t){&(m).graph, (m).types, (m).is_weight})

static taso_ref_t weight(taso_model_t *m, const char *name, int rank, int32_t a, int32_t b,
                         int32_t c, int32_t d) {
  int32_t dim[4] = {a, b, c, d};
  taso_ref_t r = -1;
  CHECK_OK(taso_model_input(m, name, true, rank, dim, NULL, &r));
  return r;
}

static taso_ref_t node(taso_model_t *m, taso_op_kind_t kind, taso_ref_t a, taso_ref_t b) {
  taso_params_t p = taso_params_default();
  taso_ref_t in[3] = {a, b, -1}, r = -1;
  CHECK_OK(taso_model_node(m, kind, &p, in, &r));
  return r;
}

/* conv + bias + relu; a residual conv whose summand is read again later
 * (no in-place sum) and one whose summand is dead (in place); a sigmoid
 * whose operand is read later (no in place) and one whose operand is
 * dead (in place). Returns the nodes of the two sigmoids. */
static void build(taso_model_t *m, int *live_sigmoid, int *dead_sigmoid) {
  taso_model_init(m, "select");
  int32_t xd[4] = {1, 8, 12, 12};
  taso_ref_t x;
  CHECK_OK(taso_model_input(m, "image", false, 4, xd, NULL, &x));
  taso_ref_t a = node(m, TASO_OP_CONV2D, x, weight(m, "c1", 4, 8, 8, 3, 3));
  a = node(m, TASO_OP_ADD, a, weight(m, "b1", 4, 1, 8, 1, 1));
  a = node(m, TASO_OP_RELU, a, -1);
  taso_ref_t r1 =
      node(m, TASO_OP_EWADD, node(m, TASO_OP_CONV2D, a, weight(m, "c2", 4, 8, 8, 3, 3)), a);
  taso_ref_t again = node(m, TASO_OP_EWMUL, a, r1); /* a is read after the residual */
  taso_ref_t s1 = node(m, TASO_OP_SIGMOID, again, -1);
  *live_sigmoid = TASO_REF_NODE(s1);
  taso_ref_t both = node(m, TASO_OP_EWADD, s1, again); /* `again` is read after the sigmoid */
  taso_ref_t r2 = node(m, TASO_OP_CONV2D, both, weight(m, "c3", 4, 8, 8, 1, 1));
  r2 = node(m, TASO_OP_EWADD, r2, s1); /* s1 dead after it: in place (not `both`, which the
                                          conv reads: a second read of the summand) */
  taso_ref_t s2 = node(m, TASO_OP_SIGMOID, r2, -1);
  *dead_sigmoid = TASO_REF_NODE(s2);
  CHECK_OK(taso_model_output(m, s2, "out"));
}

/* Fusing always pays: a fixed cost per call, then its traffic. */
static taso_err_t cost(void *ctx, const taso_rt_config_t *cfg, double *ms) {
  (void)ctx;
  double n = 0;
  for (int i = 0; i < cfg->nin; i++)
    n += (double)taso_tensor_size(&cfg->in[i]);
  *ms = 0.01 + 1e-7 * (n + (double)taso_tensor_size(&cfg->out[0])) + 1e-4 * cfg->layout;
  return TASO_OK;
}

static const taso_call_t *step_of(const taso_call_t *calls, int n, int node) {
  for (int i = 0; i < n; i++)
    if (calls[i].node == node) return &calls[i];
  return NULL;
}

static void run(taso_model_t *m, const taso_backend_t *be, taso_rt_options_t *opt, float *out,
                taso_err_t expect) {
  taso_rt_ctx_t *ctx = NULL;
  CHECK_OK(be->open(0, &ctx));
  taso_rt_plan_t *plan = NULL;
  CHECK_ERR(taso_rt_plan(be, ctx, m, opt, &plan), expect);
  if (plan) {
    float x[8 * 12 * 12];
    taso_model_random_input(m, 0, 7, x);
    const float *in[1] = {x};
    float *outs[1] = {out};
    CHECK_OK(taso_rt_run(plan, in, outs));
  }
  taso_rt_plan_free(plan);
  be->close(ctx);
}

/* Whether got equals want within float rounding (relative to want's largest). */
static bool agree(const float *want, const float *got, int n) {
  double diff = 0, scale = 0;
  for (int i = 0; i < n; i++) {
    diff = fmax(diff, fabs((double)want[i] - got[i]));
    scale = fmax(scale, fabs((double)want[i]));
  }
  return scale > 0 && diff <= 1e-4 * scale;
}

static void test_selection(void) {
  taso_library_t *lib = load("onednn.smt2");
  if (!lib) return;
  taso_model_t m;
  int live, dead;
  build(&m, &live, &dead);
  taso_call_t *calls = NULL;
  int n = 0;
  taso_select_stats_t st, plain_st;
  taso_select_options_t plain = {.plain = true}, opt = {0};
  CHECK_OK(taso_select_plan(TYPED(m), lib, &plain, cost, NULL, &calls, &n, &plain_st));
  CHECK(plain_st.fused == 0 && plain_st.in_place == 0);
  free(calls);
  CHECK_OK(taso_select_plan(TYPED(m), lib, &opt, cost, NULL, &calls, &n, &st));
  CHECK(st.ms < plain_st.ms);
  CHECK(st.steps < plain_st.steps);
  CHECK(st.bytes < plain_st.bytes);
  CHECK(st.fused == 3);    /* conv+bias+relu, and both residual convs */
  CHECK(st.in_place == 2); /* the second residual and the second sigmoid */
  for (int i = 0; i < n && getenv("TASO_TEST_VERBOSE"); i++)
    fprintf(stderr, "step %d: t%d..t%d %s in_place %d layout %d\n", i, calls[i].first_node,
            calls[i].node, calls[i].call, calls[i].in_place, calls[i].layout);
  const taso_call_t *s = step_of(calls, n, live), *d = step_of(calls, n, dead);
  CHECK(s && s->in_place == 0 && strcmp(s->call, "op") == 0);
  CHECK(d && d->in_place == 1 && strcmp(d->call, "eltwise_in_place") == 0);
  int sums = 0;
  for (int i = 0; i < n; i++)
    if (calls[i].fused > 1 && strstr(calls[i].call, "sum")) sums += 1 + 10 * !!calls[i].in_place;
  CHECK(sums == 12); /* two residuals, one of them in place */

  /* the plan runs on the cpu backend and agrees with the reference one */
  float want[8 * 12 * 12], got[8 * 12 * 12];
  taso_rt_options_t ref_opt = {.no_fusion = true}, sel = {.calls = calls, .ncalls = n};
  run(&m, taso_backend_find("reference"), &ref_opt, want, TASO_OK);
  run(&m, taso_backend_find("cpu"), &sel, got, TASO_OK);
  CHECK(agree(want, got, 8 * 12 * 12));
  run(&m, taso_backend_find("reference"), &sel, got,
      TASO_OK); /* the plan on the reference backend */

  /* writing over the live sigmoid's operand is refused by the runner */
  taso_call_t *bad = (taso_call_t *)step_of(calls, n, live);
  if (bad) {
    bad->in_place = 1;
    run(&m, taso_backend_find("cpu"), &sel, got, TASO_ERR_ARG);
    CHECK(strstr(taso_error_detail(), "reads it later") != NULL);
    bad->in_place = 0;
  }
  /* a plan for another graph is refused, not run */
  sel.ncalls = n - 1;
  run(&m, taso_backend_find("cpu"), &sel, got, TASO_ERR_ARG);
  CHECK(strstr(taso_error_detail(), "in no step") != NULL);
  free(calls);
  taso_model_free(&m);
  taso_library_free(lib);
}

/* ReLU6 after a convolution (MobileNet's): conv + bias + clip, then a
 * depthwise conv + clip, each one fused call that runs as the reference. */
static void test_clip_fused(void) {
  taso_library_t *lib = load("onednn.smt2");
  if (!lib) return;
  taso_model_t m;
  taso_model_init(&m, "relu6");
  int32_t xd[4] = {1, 8, 12, 12};
  taso_ref_t x, r = -1;
  CHECK_OK(taso_model_input(&m, "image", false, 4, xd, NULL, &x));
  taso_ref_t a = node(&m, TASO_OP_CONV2D, x, weight(&m, "c1", 4, 8, 8, 3, 3));
  a = node(&m, TASO_OP_ADD, a, weight(&m, "b1", 4, 1, 8, 1, 1));
  taso_params_t relu6 = taso_params_default();
  relu6.bound[0] = 0.0f, relu6.bound[1] = 0.5f; /* 6 would clamp nothing here */
  CHECK_OK(taso_model_node(&m, TASO_OP_CLIP, &relu6, (taso_ref_t[3]){a, -1, -1}, &a));
  r = node(&m, TASO_OP_CONV2D, a, weight(&m, "dw", 4, 8, 1, 3, 3)); /* depthwise */
  CHECK_OK(taso_model_node(&m, TASO_OP_CLIP, &relu6, (taso_ref_t[3]){r, -1, -1}, &r));
  CHECK_OK(taso_model_output(&m, r, "out"));
  taso_call_t *calls = NULL;
  int n = 0;
  taso_select_stats_t st;
  taso_select_options_t opt = {0};
  CHECK_OK(taso_select_plan(TYPED(m), lib, &opt, cost, NULL, &calls, &n, &st));
  CHECK(st.fused == 2 && n == 2);
  CHECK(n == 2 && strcmp(calls[0].call, "conv_bias_act") == 0 &&
        strcmp(calls[1].call, "conv_act") == 0);
  float want[8 * 12 * 12], got[8 * 12 * 12];
  taso_rt_options_t ref_opt = {.no_fusion = true}, sel = {.calls = calls, .ncalls = n};
  run(&m, taso_backend_find("reference"), &ref_opt, want, TASO_OK);
  run(&m, taso_backend_find("cpu"), &sel, got, TASO_OK);
  CHECK(agree(want, got, 8 * 12 * 12));
  int clamped = 0;
  for (int i = 0; i < 8 * 12 * 12; i++)
    clamped += want[i] == 0.0f || want[i] == 0.5f;
  CHECK(clamped > 0 && clamped < 8 * 12 * 12); /* the clip did something, not everything */
  free(calls);
  taso_model_free(&m);
  taso_library_free(lib);
}

/* ---- placed concats ------------------------------------------------------------- */

/* conv + relu and conv + sigmoid, concatenated on the channels, then a
 * conv over both: the sigmoid's operand is dead after it (in place, until
 * its result is placed in the concat). Returns the sigmoid's node. */
static int build_concat(taso_model_t *m, int batch) {
  taso_model_init(m, "concat");
  int32_t xd[4] = {batch, 8, 12, 12};
  taso_ref_t x;
  CHECK_OK(taso_model_input(m, "image", false, 4, xd, NULL, &x));
  taso_ref_t a =
      node(m, TASO_OP_RELU, node(m, TASO_OP_CONV2D, x, weight(m, "c1", 4, 8, 8, 3, 3)), -1);
  taso_ref_t b =
      node(m, TASO_OP_SIGMOID, node(m, TASO_OP_CONV2D, x, weight(m, "c2", 4, 8, 8, 1, 1)), -1);
  taso_params_t p = taso_params_default();
  p.axis = 1;
  taso_ref_t in[3] = {a, b, -1}, cat = -1;
  CHECK_OK(taso_model_node(m, TASO_OP_CONCAT, &p, in, &cat));
  taso_ref_t y = node(m, TASO_OP_CONV2D, cat, weight(m, "c3", 4, 8, 16, 1, 1));
  CHECK_OK(taso_model_output(m, y, "out"));
  return TASO_REF_NODE(b);
}

static const taso_call_t *concat_step(const taso_model_t *m, const taso_call_t *calls, int n) {
  for (int i = 0; i < n; i++)
    if (m->graph.nodes[calls[i].node].kind == TASO_OP_CONCAT) return &calls[i];
  return NULL;
}

static void test_placed_concat(void) {
  taso_library_t *lib = load("onednn.smt2");
  if (!lib) return;
  taso_model_t m;
  int sigmoid = build_concat(&m, 1);
  taso_call_t *calls = NULL;
  int n = 0;
  taso_select_stats_t st, plain_st;
  taso_select_options_t plain = {.plain = true}, opt = {0};
  CHECK_OK(taso_select_plan(TYPED(m), lib, &plain, cost, NULL, &calls, &n, &plain_st));
  CHECK(plain_st.placed == 0);
  free(calls);
  CHECK_OK(taso_select_plan(TYPED(m), lib, &opt, cost, NULL, &calls, &n, &st));
  CHECK(st.placed == 1);
  CHECK(st.bytes < plain_st.bytes);
  const taso_call_t *c = concat_step(&m, calls, n), *sg = step_of(calls, n, sigmoid);
  CHECK(c && c->in_place == TASO_CALL_PLACED && strcmp(c->call, "concat_placed") == 0);
  CHECK(sg && sg->in_place == 0); /* its result is a slice of the concat's now */

  float want[8 * 12 * 12], got[8 * 12 * 12];
  taso_rt_options_t ref_opt = {.no_fusion = true}, sel = {.calls = calls, .ncalls = n};
  run(&m, taso_backend_find("reference"), &ref_opt, want, TASO_OK);
  memset(got, 0, sizeof got);
  run(&m, taso_backend_find("cpu"), &sel, got, TASO_OK);
  CHECK(agree(want, got, 8 * 12 * 12));

  /* a producer writing over its own operand cannot write a slice too */
  taso_call_t *flip = (taso_call_t *)sg;
  if (flip) {
    flip->in_place = 1;
    run(&m, taso_backend_find("cpu"), &sel, got, TASO_ERR_ARG);
    CHECK(strstr(taso_error_detail(), "placed in a concat") != NULL);
    flip->in_place = 0;
  }
  free(calls);
  taso_model_free(&m);

  /* batch 2: the slices interleave; not placed, and a plan saying so is refused */
  build_concat(&m, 2);
  CHECK_OK(taso_select_plan(TYPED(m), lib, &opt, cost, NULL, &calls, &n, &st));
  CHECK(st.placed == 0);
  taso_call_t *cat = (taso_call_t *)concat_step(&m, calls, n);
  CHECK(cat && cat->in_place == 0);
  if (cat) {
    cat->in_place = TASO_CALL_PLACED;
    sel = (taso_rt_options_t){.calls = calls, .ncalls = n};
    taso_rt_ctx_t *ctx = NULL;
    const taso_backend_t *be = taso_backend_find("cpu");
    CHECK_OK(be->open(0, &ctx));
    taso_rt_plan_t *plan = NULL;
    CHECK_ERR(taso_rt_plan(be, ctx, &m, &sel, &plan), TASO_ERR_ARG);
    CHECK(strstr(taso_error_detail(), "not one block") != NULL);
    taso_rt_plan_free(plan);
    be->close(ctx);
  }
  free(calls);
  taso_model_free(&m);
  taso_library_free(lib);
}

int main(void) {
  const test_case_t cases[] = {TEST(test_onednn),        TEST(test_cudnn),
                               TEST(test_bad_libraries), TEST(test_selection),
                               TEST(test_clip_fused),    TEST(test_placed_concat)};
  return test_run(cases, (int)(sizeof cases / sizeof cases[0]));
}
