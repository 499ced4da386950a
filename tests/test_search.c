/*
 * The optimizer's library without measuring (src/search): costs from a
 * plugged-in lookup (a stand-in for the cost database), fused steps,
 * weight-only nodes at no cost, a miss with measuring off as an error that
 * names the configuration, guesses (measured on the reference backend
 * once asked for with guessing off), and the search applying a rule where
 * it pays.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "match.h"
#include "search.h"
#include "test.h"

/* Every configuration costs 1 ms, except those whose key starts with
 * `expensive` (10 ms); keys seen are counted, and ones starting with
 * `missing` are not found. */
typedef struct {
  int calls;
  int concats;
  const char *expensive;
  const char *missing;
} table_t;

static taso_err_t lookup(void *ctx, const char *key, const taso_rt_config_t *cfg, double *ms,
                         bool *found) {
  (void)cfg;
  table_t *t = ctx;
  t->calls++;
  t->concats += strncmp(key, "concat", 6) == 0;
  *found = !(t->missing && strncmp(key, t->missing, strlen(t->missing)) == 0);
  *ms = t->expensive && strncmp(key, t->expensive, strlen(t->expensive)) == 0 ? 10 : 1;
  return TASO_OK;
}

static taso_cost_cache_t *cache_of(table_t *t) {
  taso_cost_options_t opt = taso_cost_options_default();
  opt.measure = false;
  opt.lookup = lookup;
  opt.lookup_ctx = t;
  taso_cost_cache_t *c = NULL;
  CHECK_OK(taso_cost_cache_new(taso_backend_find("reference"), NULL, &opt, &c));
  return c;
}

static const int32_t act[4] = {1, 4, 8, 8}, kernel[4] = {4, 4, 3, 3};

/* relu(conv2d(x, concat(0, w1, w2)))... with a weight-only concat. */
static void conv_model(taso_model_t *m) {
  taso_model_init(m, "conv");
  taso_ref_t x, w1, w2, wc, y, r;
  const int32_t half[4] = {2, 4, 3, 3};
  taso_params_t p = taso_params_default();
  CHECK_OK(taso_model_input(m, "x", false, 4, act, NULL, &x));
  CHECK_OK(taso_model_input(m, "w1", true, 4, half, NULL, &w1));
  CHECK_OK(taso_model_input(m, "w2", true, 4, half, NULL, &w2));
  p.axis = 0;
  CHECK_OK(taso_model_node(m, TASO_OP_CONCAT, &p, (taso_ref_t[]){w1, w2}, &wc));
  p = taso_params_default();
  CHECK_OK(taso_model_node(m, TASO_OP_CONV2D, &p, (taso_ref_t[]){x, wc}, &y));
  CHECK_OK(taso_model_node(m, TASO_OP_RELU, &p, (taso_ref_t[]){y}, &r));
  CHECK_OK(taso_model_output(m, r, NULL));
}

static void test_graph_cost(void) {
  taso_model_t m;
  conv_model(&m);
  table_t t = {0};
  taso_cost_cache_t *c = cache_of(&t);
  double ms = -1;
  /* conv2d with its relu is one step; the weight concat is folded away */
  CHECK_OK(taso_cost_of_graph(c, &m.graph, m.types, m.is_weight, &ms));
  CHECK(ms == 1.0);
  CHECK(t.calls == 1 && t.concats == 0);
  CHECK_OK(taso_cost_of_graph(c, &m.graph, m.types, m.is_weight, &ms));
  CHECK(ms == 1.0 && t.calls == 1); /* the second time from the cache */
  taso_cost_stats_t st;
  taso_cost_cache_stats(c, &st);
  CHECK(st.configs == 1 && st.looked_up == 1 && st.measured == 0 && st.hits == 1);
  const char *key;
  CHECK(taso_cost_cache_entry(c, 0, &key, &ms));
  CHECK(strstr(key, "fuse=relu") != NULL);
  taso_cost_cache_free(c);
  taso_model_free(&m);
}

static void test_missing_cost(void) {
  taso_model_t m;
  conv_model(&m);
  table_t t = {.missing = "conv2d"};
  taso_cost_cache_t *c = cache_of(&t);
  double ms;
  CHECK_ERR(taso_cost_of_graph(c, &m.graph, m.types, m.is_weight, &ms), TASO_ERR_UNKNOWN);
  CHECK(strstr(taso_error_detail(), "no cost for configuration conv2d") != NULL);
  taso_cost_cache_free(c);
  taso_model_free(&m);
}

/* A conv2d configuration: activation [1, c, h, h], o filters of 3x3. */
static taso_rt_config_t conv_config(int c, int h, int o) {
  taso_rt_config_t cfg;
  memset(&cfg, 0, sizeof cfg);
  cfg.kind = TASO_OP_CONV2D;
  cfg.p = taso_params_default();
  cfg.nin = 2;
  cfg.nout = 1;
  cfg.in[0] = taso_tensor_make(4, (int32_t[]){1, c, h, h});
  cfg.in[1] = taso_tensor_make(4, (int32_t[]){o, c, 3, 3});
  cfg.out[0] = taso_tensor_make(4, (int32_t[]){1, o, h, h});
  return cfg;
}

/* --estimate-costs: the same figure every time; a step costs at least the
 * overhead, so that two small convolutions merged into one of twice the
 * filters cost less than both; a large one is bound by its arithmetic. */
static void test_estimate(void) {
  taso_rt_config_t one = conv_config(4, 8, 4), two = conv_config(4, 8, 8);
  double e1 = taso_cost_estimate(&one), e2 = taso_cost_estimate(&two);
  CHECK(e1 == taso_cost_estimate(&one));
  CHECK(e1 > TASO_EST_OVERHEAD_MS && e2 > e1 && e2 < 2 * e1);
  taso_rt_config_t big = conv_config(64, 56, 64);
  double macs = 64.0 * 56 * 56 * 64 * 9, compute = 2 * macs / (TASO_EST_GFLOPS * 1e6);
  double e = taso_cost_estimate(&big);
  CHECK(e > compute && e == compute + TASO_EST_OVERHEAD_MS);
}

/* Twice the estimate for a conv2d of c channels (the figures guesses
 * learn from), none for any other. */
static taso_err_t twice_estimate(void *ctx, const char *key, const taso_rt_config_t *cfg,
                                 double *ms, bool *found) {
  (void)key;
  *found = cfg->in[0].dim[1] == *(const int *)ctx;
  *ms = 2 * taso_cost_estimate(cfg);
  return TASO_OK;
}

/* Guessing: a miss costs a guess, not a measurement, learnt from the
 * figures of its kind (with fewer than three: the estimate), cached as a
 * guess (not an entry a database records) until asked for with guessing
 * off, which measures it; taso_cost_measure_guesses measures those below
 * a bound. */
static void test_guess(void) {
  const taso_backend_t *be = taso_backend_find("reference");
  taso_rt_ctx_t *ctx = NULL;
  CHECK_OK(be->open(0, &ctx));
  int known = 4;
  taso_cost_options_t opt = taso_cost_options_default();
  opt.lookup = twice_estimate;
  opt.lookup_ctx = &known;
  opt.warmup = 0;
  opt.runs = 1;
  taso_cost_cache_t *c = NULL;
  CHECK_OK(taso_cost_cache_new(be, ctx, &opt, &c));
  taso_rt_config_t a = conv_config(4, 8, 4), b = conv_config(4, 8, 8), d = conv_config(4, 6, 4);
  taso_rt_config_t small = conv_config(2, 4, 2), big = conv_config(3, 32, 64);
  double ms, g;
  taso_cost_cache_set_guess(c, true);
  CHECK_OK(taso_cost_of_config(c, &small, &g));
  CHECK(g == taso_cost_estimate(&small)); /* nothing learnt yet */
  CHECK_OK(taso_cost_of_config(c, &a, &ms));
  CHECK_OK(taso_cost_of_config(c, &b, &ms));
  CHECK_OK(taso_cost_of_config(c, &d, &ms)); /* three looked up, at twice their estimates */
  CHECK_OK(taso_cost_of_config(c, &big, &g));
  CHECK(fabs(g / taso_cost_estimate(&big) - 2) < 1e-9);
  CHECK_OK(taso_cost_of_config(c, &big, &ms));
  CHECK(ms == g);
  taso_cost_stats_t st;
  taso_cost_cache_stats(c, &st);
  CHECK(st.configs == 5 && st.looked_up == 3 && st.measured == 0);
  CHECK(st.guessed == 2 && st.guesses == 3);
  const char *key;
  CHECK(!taso_cost_cache_entry(c, 0, &key, &ms) && taso_cost_cache_entry(c, 1, &key, &ms));
  /* guessing off: a guess asked for is measured */
  taso_cost_cache_set_guess(c, false);
  CHECK_OK(taso_cost_of_config(c, &small, &ms));
  taso_cost_cache_stats(c, &st);
  CHECK(st.measured == 1 && st.guessed == 1 && ms > 0 && taso_cost_cache_entry(c, 0, &key, &ms));
  /* the rest: none below the bound, then all */
  int64_t left = -1;
  CHECK_OK(taso_cost_measure_guesses(c, g / 2, -1, &left));
  CHECK(left == 1);
  CHECK_OK(taso_cost_measure_guesses(c, INFINITY, -1, &left));
  taso_cost_cache_stats(c, &st);
  CHECK(left == 0 && st.guessed == 0 && st.measured == 2 && taso_cost_cache_entry(c, 4, &key, &ms));
  taso_cost_cache_free(c);
  be->close(ctx);
}

/* Adds concat(1, relu(x), relu(y)) over new inputs x and y as an output. */
static void add_relu_pair(taso_model_t *m, const char *x_name, const char *y_name) {
  taso_ref_t x, y, rx, ry, cat;
  taso_params_t p = taso_params_default();
  CHECK_OK(taso_model_input(m, x_name, false, 4, act, NULL, &x));
  CHECK_OK(taso_model_input(m, y_name, false, 4, act, NULL, &y));
  CHECK_OK(taso_model_node(m, TASO_OP_RELU, &p, (taso_ref_t[]){x}, &rx));
  CHECK_OK(taso_model_node(m, TASO_OP_RELU, &p, (taso_ref_t[]){y}, &ry));
  p.axis = 1;
  CHECK_OK(taso_model_node(m, TASO_OP_CONCAT, &p, (taso_ref_t[]){rx, ry}, &cat));
  CHECK_OK(taso_model_output(m, cat, NULL));
}

/* The rule that moves a relu past a concat, as a substitution file holds
 * it (pattern inputs of another shape: rules apply at any shape), stored
 * in the other direction: graphs[0] => graphs[1] over in. */
static void relu_rule(taso_inputs_t *in, taso_graph_t graphs[2]) {
  CHECK_OK(taso_inputs_add(in, "i1", 4, kernel));
  CHECK_OK(taso_inputs_add(in, "i2", 4, kernel));
  taso_graph_init(&graphs[0]);
  taso_graph_init(&graphs[1]);
  CHECK_OK(taso_subst_parse("relu(concat(1, i1, i2)) => concat(1, relu(i1), relu(i2))", in,
                            &graphs[0], &graphs[1]));
}

/* concat(1, relu(x), relu(y)): with relu at 10 ms, the rule that pulls
 * the relu past the concat halves the relus' cost. */
static void test_search(void) {
  taso_model_t m;
  taso_model_init(&m, "two");
  add_relu_pair(&m, "x", "y");
  taso_inputs_t in = {0};
  taso_graph_t graphs[2];
  relu_rule(&in, graphs);
  taso_subst_t rows[2] = {{.src = 0, .dst = 1, .verdict = TASO_VERDICT_PROVED},
                          {.src = 1, .dst = 0, .verdict = TASO_VERDICT_UNKNOWN}};
  taso_rules_t rules;
  CHECK_OK(taso_rules_make(&in, graphs, 2, rows, 2, &rules));
  CHECK(rules.n == 2); /* the proved row, both ways; not the unknown one */

  table_t t = {.expensive = "relu"};
  taso_cost_cache_t *c = cache_of(&t);
  taso_search_problem_t prob = {.graph = &m.graph, .inputs = &m.inputs, .is_weight = m.is_weight};
  taso_search_options_t opt = {.alpha = 1.05, .budget = 10};
  taso_search_result_t res;
  CHECK_OK(taso_search_backtracking(&prob, &rules, c, &opt, &res));
  CHECK(res.cost_before == 21.0 && res.cost_after == 11.0);
  CHECK(res.steps == 1 && res.fired[1] == 1 && res.fired[0] == 0);
  CHECK(res.explored >= 1 && !res.timed_out);
  char text[256];
  taso_fired_rule_t *fired = NULL;
  int64_t n = 0;
  CHECK_OK(taso_fired_rules(&rules, &res, &fired, &n));
  CHECK(n == 1 && fired && fired[0].count == 1 && fired[0].row == 0);
  taso_rule_format(&rules, 1, text, sizeof text);
  CHECK_STR(text, "concat(1, relu(i1), relu(i2)) => relu(concat(1, i1, i2))");
  if (fired) CHECK_STR(fired[0].text, text);
  free(fired);
  taso_search_result_free(&res);
  taso_cost_cache_free(c);
  taso_rules_free(&rules);
  taso_graph_free(&graphs[0]);
  taso_graph_free(&graphs[1]);
  taso_inputs_free(&in);
  taso_model_free(&m);
}

/* Whether b is one rewrite of a by rule r (among the matcher's results). */
typedef struct {
  const taso_graph_t *want;
  bool found;
} find_t;

static taso_err_t find_result(void *ctx, const taso_graph_t *g) {
  find_t *f = ctx;
  if (taso_graph_compare(g, f->want) == 0) f->found = true;
  return TASO_OK;
}

static bool one_rewrite(const taso_rules_t *rules, int r, const taso_graph_t *a,
                        const taso_graph_t *b, const taso_inputs_t *model_inputs) {
  taso_tensor_t *types = malloc(sizeof *types * 2 * (size_t)(a->nnodes + 1));
  find_t f = {.want = b};
  CHECK(types != NULL);
  if (!types) return false;
  CHECK_OK(taso_graph_infer(a, model_inputs, types));
  CHECK_OK(taso_rewrite_all_checked(a, types, &rules->v[r].lhs, &rules->v[r].rhs, &rules->inputs,
                                    &rules->v[r].cond, find_result, &f));
  free(types);
  return f.found;
}

/* Six concat(1, relu(x), relu(y)), each its own output: the baseline
 * pulls one relu pair past its concat per expanded graph; with rule
 * chains one expansion reaches all six, and the path still goes one
 * rewrite at a time. */
static void test_chain(void) {
  enum { PAIRS = 6 };
  taso_model_t m;
  taso_model_init(&m, "pairs");
  for (int k = 0; k < PAIRS; k++) {
    char name[2][8];
    snprintf(name[0], sizeof name[0], "x%d", k);
    snprintf(name[1], sizeof name[1], "y%d", k);
    add_relu_pair(&m, name[0], name[1]);
  }
  taso_inputs_t in = {0};
  taso_graph_t graphs[2];
  relu_rule(&in, graphs);
  taso_subst_t rows[1] = {{.src = 0, .dst = 1, .verdict = TASO_VERDICT_PROVED}};
  taso_rules_t rules;
  CHECK_OK(taso_rules_make(&in, graphs, 2, rows, 1, &rules));
  table_t t = {.expensive = "relu"};
  taso_cost_cache_t *c = cache_of(&t);
  taso_search_problem_t prob = {.graph = &m.graph, .inputs = &m.inputs, .is_weight = m.is_weight};
  const double before = PAIRS * 21.0, after = PAIRS * 11.0;

  taso_search_options_t opt = {.alpha = 1.05, .budget = 1, .target = after};
  taso_search_result_t res;
  CHECK_OK(taso_search_backtracking(&prob, &rules, c, &opt, &res));
  CHECK(res.cost_before == before && res.cost_after == before - 10);
  /* target_seconds is -1 until a graph as cheap as the target is queued:
   * whether it was reached, not how long it took */
  CHECK(res.steps == 1 && res.chained == 0 && res.target_seconds == -1);
  taso_search_result_free(&res);

  opt.chain = true;
  CHECK_OK(taso_search_backtracking(&prob, &rules, c, &opt, &res));
  CHECK(res.cost_before == before && res.cost_after == after);
  CHECK(res.explored == 1 && res.chained == PAIRS - 1 && res.target_seconds != -1);
  CHECK(res.steps == PAIRS && res.fired[1] == PAIRS);
  for (int k = 1; k <= res.steps; k++) {
    CHECK(res.path_rules[k] == 1);
    CHECK(one_rewrite(&rules, res.path_rules[k], &res.path[k - 1], &res.path[k], &m.inputs));
  }
  CHECK(taso_graph_compare(&res.path[res.steps], &res.best) == 0);
  taso_search_result_free(&res);

  taso_cost_cache_free(c);
  taso_rules_free(&rules);
  taso_graph_free(&graphs[0]);
  taso_graph_free(&graphs[1]);
  taso_inputs_free(&in);
  taso_model_free(&m);
}

int main(void) {
  static const test_case_t cases[] = {
      TEST(test_graph_cost), TEST(test_missing_cost), TEST(test_estimate),
      TEST(test_guess),      TEST(test_search),       TEST(test_chain),
  };
  return test_run(cases, (int)(sizeof cases / sizeof cases[0]));
}
