/* The rule guard (issue 12, section 1): a rule applied outside its
 * recorded shape relation only where it is proved again, once per
 * relation; its probing, cached-only and hopeful modes. */
#include <stdio.h>
#include <stdlib.h>

#include "match.h"
#include "rule_guard.h"
#include "test.h"
#include "verifier.h"

static taso_axioms_t *ax;

static void load_axioms(void) {
  const char *src = getenv("TASO_SOURCE_DIR");
  char path[1024];
  snprintf(path, sizeof path, "%s/data/axioms", src ? src : ".");
  TASO_CHECK(taso_axioms_load(path, &ax));
  taso_limits_t lim = {.timeout_s = 5, .rlimit = 50000000};
  char report[256];
  int failed = 0;
  TASO_CHECK(taso_axioms_prove_lemmas_limited(ax, &lim, report, sizeof report, &failed));
}

typedef struct {
  taso_inputs_t table; /* where the rule was proved */
  taso_graph_t lhs, rhs;
  taso_rule_guard_t *g;
} rule_t;

static void rule(rule_t *r, const char *text) {
  taso_graph_init(&r->lhs);
  taso_graph_init(&r->rhs);
  TASO_CHECK(taso_subst_parse(text, &r->table, &r->lhs, &r->rhs));
  taso_rule_guard_opts_t opt = {.limits = {.timeout_s = 5, .rlimit = 50000000}, .seed = 1};
  TASO_CHECK(taso_rule_guard_open(&r->table, ax, &opt, &r->g));
}

static void rule_free(rule_t *r) {
  taso_rule_guard_close(r->g);
  taso_graph_free(&r->lhs);
  taso_graph_free(&r->rhs);
  taso_inputs_free(&r->table);
}

/* The table with other 4-d shapes for some inputs. */
static taso_inputs_t at(const rule_t *r, int n, const char *const *names,
                        const int32_t (*dims)[4]) {
  taso_inputs_t t = {.n = r->table.n, .v = malloc(sizeof *t.v * (size_t)r->table.n)};
  memcpy(t.v, r->table.v, sizeof *t.v * (size_t)r->table.n);
  for (int k = 0; k < n; k++)
    t.v[taso_inputs_find(&r->table, names[k])].type = taso_tensor_make(4, dims[k]);
  return t;
}

static taso_err_t count(void *ctx, const taso_graph_t *g) {
  (void)g;
  ++*(int *)ctx;
  return TASO_OK;
}

/* Rewrites lhs itself, typed at t, with the checked and the guarded engine. */
static void rewrites(rule_t *r, const taso_inputs_t *t, int *checked, int *guarded) {
  taso_tensor_t *types = malloc(sizeof *types * (size_t)(2 * r->lhs.nnodes));
  taso_shape_cond_t cond;
  *checked = *guarded = 0;
  CHECK_OK(taso_graph_infer(&r->lhs, t, types));
  CHECK_OK(taso_shape_cond_of(&r->lhs, &r->rhs, &r->table, &cond));
  CHECK_OK(
      taso_rewrite_all_checked(&r->lhs, types, &r->lhs, &r->rhs, &r->table, &cond, count, checked));
  CHECK_OK(taso_rewrite_all_guarded(r->g, 7, 0, &r->lhs, types, &r->lhs, &r->rhs, &cond, count,
                                    guarded));
  taso_shape_cond_free(&cond);
  free(types);
}

/* relu fusion, proved with 2 input and 2 output channels (the smoke
 * job's i1 and w4), applies through the guard to a conv2d from 3 to 64
 * channels at 1x3x32x32: one proof, then the cache for the same relation. */
static void test_relu_fusion(void) {
  rule_t r = {0};
  const int32_t i1[4] = {1, 2, 3, 3}, w4[4] = {2, 2, 3, 3};
  TASO_CHECK(taso_inputs_add(&r.table, "i1", 4, i1));
  TASO_CHECK(taso_inputs_add(&r.table, "w4", 4, w4));
  rule(&r, "relu(conv2d(i1, w4)) => conv2d(act=relu, i1, w4)");
  const char *n[] = {"i1", "w4"};
  const int32_t rgb[2][4] = {{1, 3, 32, 32}, {64, 3, 3, 3}};
  taso_inputs_t t = at(&r, 2, n, rgb);
  int checked, guarded;
  rewrites(&r, &t, &checked, &guarded);
  CHECK(checked == 0 && guarded == 1);
  rewrites(&r, &t, &checked, &guarded);
  CHECK(guarded == 1);
  free(t.v);
  /* the same relation at other sizes: from the cache */
  const int32_t smaller[2][4] = {{4, 3, 16, 16}, {32, 3, 3, 3}};
  t = at(&r, 2, n, smaller);
  rewrites(&r, &t, &checked, &guarded);
  CHECK(checked == 0 && guarded == 1);
  free(t.v);
  taso_rule_guard_stats_t s;
  taso_rule_guard_stats(r.g, &s);
  /* 3.5 million multiply-adds at its own sizes: checked at small ones */
  CHECK(s.proofs == 1 && s.proved == 1 && s.cache_hits == 2 && s.by_reproof == 3);
  CHECK(s.refused == 0 && s.numeric_small == 1);
  /* too costly for the numeric check at its own sizes: small ones */
  const int32_t big[2][4] = {{1, 256, 56, 56}, {512, 256, 3, 3}};
  t = at(&r, 2, n, big);
  rewrites(&r, &t, &checked, &guarded);
  CHECK(checked == 0 && guarded == 1);
  free(t.v);
  taso_rule_guard_stats(r.g, &s);
  CHECK(s.proofs == 2 && s.numeric_small == 2 && s.by_reproof == 4);
  rule_free(&r);
}

/* The grouped convolution stays refused at output channels 2 and
 * 6, and is accepted by its condition at a model's equal channels. */
static void test_grouped_conv(void) {
  rule_t r = {0};
  const int32_t i[4] = {2, 4, 5, 5}, w[4] = {4, 4, 3, 1};
  TASO_CHECK(taso_inputs_add(&r.table, "i1", 4, i));
  TASO_CHECK(taso_inputs_add(&r.table, "i2", 4, i));
  TASO_CHECK(taso_inputs_add(&r.table, "w10", 4, w));
  TASO_CHECK(taso_inputs_add(&r.table, "w11", 4, w));
  rule(&r, "concat(1, conv2d(act=relu, i1, w10), conv2d(act=relu, i2, w11)) => "
           "conv2d(act=relu, concat(1, i1, i2), concat(0, w10, w11))");
  const char *wn[] = {"w10", "w11"};
  const int32_t unequal[2][4] = {{2, 4, 3, 1}, {6, 4, 3, 1}};
  taso_inputs_t t = at(&r, 2, wn, unequal);
  int checked, guarded;
  rewrites(&r, &t, &checked, &guarded);
  CHECK(checked == 0 && guarded == 0);
  CHECK(taso_rule_guard_last_refusal(r.g)[0] != 0);
  free(t.v);
  const char *mn[] = {"i1", "i2", "w10", "w11"};
  const int32_t model[4][4] = {{1, 64, 56, 56}, {1, 64, 56, 56}, {64, 64, 3, 1}, {64, 64, 3, 1}};
  t = at(&r, 4, mn, model);
  rewrites(&r, &t, &checked, &guarded);
  CHECK(checked == 1 && guarded == 1);
  free(t.v);
  taso_rule_guard_stats_t s;
  taso_rule_guard_stats(r.g, &s);
  CHECK(s.refused == 1 && s.by_condition == 1 && s.proofs == 1 && s.proved == 0);
  /* hopeful: the relation refused above stays refused; another one with
   * no verdict (w10 the wider) is accepted unproved, nothing kept */
  taso_rule_guard_hopeful(r.g, true);
  t = at(&r, 2, wn, unequal);
  rewrites(&r, &t, &checked, &guarded);
  CHECK(guarded == 0);
  free(t.v);
  const int32_t other[2][4] = {{6, 4, 3, 1}, {2, 4, 3, 1}};
  t = at(&r, 2, wn, other);
  rewrites(&r, &t, &checked, &guarded);
  CHECK(guarded == 1);
  free(t.v);
  taso_rule_guard_hopeful(r.g, false);
  taso_rule_guard_stats(r.g, &s);
  CHECK(s.proofs == 1 && s.optimistic == 2 && taso_rule_guard_decided(r.g) == 1);
  rule_free(&r);
}

/* Sharing decisions: a probing guard decides nothing and rewrites
 * nothing, notes the relation once; a second guard decides it at the
 * question's instance, the first takes the verdict and then rewrites as
 * a guard that decided itself would, without a proof of its own. */
static void test_shared_verdicts(void) {
  rule_t r = {0}, other = {0};
  const int32_t i1[4] = {1, 2, 3, 3}, w4[4] = {2, 2, 3, 3};
  TASO_CHECK(taso_inputs_add(&r.table, "i1", 4, i1));
  TASO_CHECK(taso_inputs_add(&r.table, "w4", 4, w4));
  TASO_CHECK(taso_inputs_add(&other.table, "i1", 4, i1));
  TASO_CHECK(taso_inputs_add(&other.table, "w4", 4, w4));
  const char *text = "relu(conv2d(i1, w4)) => conv2d(act=relu, i1, w4)";
  rule(&r, text);
  rule(&other, text);
  const char *n[] = {"i1", "w4"};
  const int32_t rgb[2][4] = {{1, 3, 32, 32}, {64, 3, 3, 3}};
  taso_inputs_t t = at(&r, 2, n, rgb);
  int checked, guarded;
  taso_rule_guard_set_probe(r.g, true);
  rewrites(&r, &t, &checked, &guarded);
  rewrites(&r, &t, &checked, &guarded); /* the same relation again: one question */
  CHECK(guarded == 0);
  const taso_rule_guard_question_t *q;
  CHECK(taso_rule_guard_questions(r.g, &q) == 1);
  CHECK(q[0].rule == 7 && q[0].dir == 0 && q[0].len > 0);
  CHECK(q[0].types[taso_inputs_find(&r.table, "w4")].dim[0] == 64);
  taso_rule_guard_stats_t s;
  taso_rule_guard_stats(r.g, &s);
  CHECK(s.proofs == 0 && s.matches == 0);
  bool verdict = false;
  CHECK_OK(taso_rule_guard_decide(other.g, q[0].rule, q[0].dir, &other.lhs, &other.rhs, q[0].types,
                                  &verdict));
  CHECK(verdict);
  CHECK_OK(taso_rule_guard_put_verdict(r.g, q[0].key, q[0].len, verdict));
  taso_rule_guard_set_probe(r.g, false);
  taso_rule_guard_questions_clear(r.g);
  CHECK(taso_rule_guard_questions(r.g, &q) == 0);
  rewrites(&r, &t, &checked, &guarded);
  CHECK(checked == 0 && guarded == 1);
  taso_rule_guard_stats(r.g, &s);
  CHECK(s.proofs == 0 && s.cache_hits == 1 && s.by_reproof == 1);
  taso_rule_guard_stats(other.g, &s);
  CHECK(s.proofs == 1 && s.proved == 1);
  free(t.v);
  rule_free(&r);
  rule_free(&other);
}

/* Cached-only mode: relu fusion at a relation without a verdict is
 * refused unproved (counted apart, nothing kept), a match in its proved
 * relation still applies; out of the mode the same relation is proved,
 * and back in it the verdict applies. */
static void test_cached_only(void) {
  rule_t r = {0};
  const int32_t i1[4] = {1, 2, 3, 3}, w4[4] = {2, 2, 3, 3};
  TASO_CHECK(taso_inputs_add(&r.table, "i1", 4, i1));
  TASO_CHECK(taso_inputs_add(&r.table, "w4", 4, w4));
  rule(&r, "relu(conv2d(i1, w4)) => conv2d(act=relu, i1, w4)");
  const char *n[] = {"i1", "w4"};
  const int32_t rgb[2][4] = {{1, 3, 32, 32}, {64, 3, 3, 3}};
  taso_inputs_t t = at(&r, 2, n, rgb);
  int checked, guarded;
  taso_rule_guard_stats_t s;
  taso_rule_guard_cached_only(r.g, true);
  rewrites(&r, &t, &checked, &guarded);
  CHECK(checked == 0 && guarded == 0);
  taso_rule_guard_stats(r.g, &s);
  CHECK(s.unproved == 1 && s.refused == 0 && s.proofs == 0 && taso_rule_guard_decided(r.g) == 0);
  rewrites(&r, &r.table, &checked, &guarded); /* in the proved relation */
  CHECK(checked == 1 && guarded == 1);
  taso_rule_guard_cached_only(r.g, false);
  rewrites(&r, &t, &checked, &guarded);
  CHECK(guarded == 1);
  taso_rule_guard_stats(r.g, &s);
  CHECK(s.proofs == 1 && s.proved == 1 && s.unproved == 1);
  taso_rule_guard_cached_only(r.g, true);
  rewrites(&r, &t, &checked, &guarded);
  taso_rule_guard_stats(r.g, &s);
  CHECK(guarded == 1 && s.proofs == 1 && s.unproved == 1 && s.cache_hits == 1);
  free(t.v);
  rule_free(&r);
}

int main(void) {
  load_axioms();
  const test_case_t cases[] = {TEST(test_relu_fusion), TEST(test_grouped_conv),
                               TEST(test_shared_verdicts), TEST(test_cached_only)};
  int rc = test_run(cases, (int)(sizeof cases / sizeof *cases));
  taso_axioms_free(ax);
  return rc;
}
