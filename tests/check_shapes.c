/*
 * check_shapes FILE [SAMPLES [SEED]]: the shape-condition property test
 * (issue 12, section 1) over a substitutions artifact.
 *
 * For every proved substitution, in both directions, it draws other input
 * shapes: ones that map the proved instance's sizes through a random
 * function (equal sizes stay equal) and ones that move each axis on its
 * own. At each one where the pattern side type-checks it instantiates that
 * side as a host graph and rewrites it with the engine, once with
 * taso_rewrite_all(any_type) (what the generator's pruning uses) and once
 * with taso_rewrite_all_checked (what an optimizer must use), and compares
 * every result with the host exactly (rational evaluation on random small
 * integers: shapes, split trees and values). A failure prints the rule,
 * the direction and the shapes.
 *
 * With AXIOMS (check_shapes FILE SAMPLES SEED AXIOMS) it rewrites every
 * instance a third time with the guarded engine (src/verify/rule_guard.h:
 * outside the recorded relation it proves the rule again at the bound
 * shapes, once per relation) and checks its results the same way.
 *
 * Exits 1 if a checked or guarded rewrite changed a value, or if a shape
 * in the proved relation was refused (the check must accept what it was
 * proved at). Prints the figures: rules, instances, failures before and
 * after. Runs on one rank (the artifact layer needs MPI).
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <mpi.h>

#include "artifact.h"
#include "eval.h"
#include "match.h"
#include "rule_guard.h"
#include "shape_cond.h"
#include "verifier.h"

typedef struct {
  int64_t rules, directions, instances, satisfying, violating, overflow;
  int64_t applied_any, failed_any, applied_checked, failed_checked;
  int64_t refused_equal;        /* violating, refused, and the sides agree there */
  int64_t failed_violating;     /* violating instances where any_type gave a wrong graph */
  int64_t unapplied_satisfying; /* satisfying but the checked engine found nothing */
  int64_t rules_failing_any, rules_failing_checked;
  int64_t applied_guarded, failed_guarded; /* with AXIOMS: the guarded engine */
  int64_t guarded_outside;                 /* outside the relation, and the guard applied it */
  int64_t guarded_refused_equal;           /* outside, any_type right, the guard refused */
} figures_t;

static figures_t fig;
static const taso_inputs_t *table;
static taso_rule_guard_t *guard; /* with AXIOMS, else NULL */
static uint64_t rng_state;

static uint64_t rnd(void) {
  rng_state += 0x9e3779b97f4a7c15ull;
  uint64_t z = rng_state;
  z = (z ^ z >> 30) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ z >> 27) * 0x94d049bb133111ebull;
  return z ^ z >> 31;
}

static int uniform(int lo, int hi) {
  return lo + (int)(rnd() % (uint64_t)(hi - lo + 1));
}

/* ---- exact comparison of two graphs over one input table --------------- */

typedef struct {
  taso_tensor_t *types;
  taso_rat_t **values;
  int n;
} evald_t;

static void evald_free(evald_t *e) {
  if (e->values) taso_values_free((void **)e->values, 2 * e->n);
  free(e->values);
  free(e->types);
  memset(e, 0, sizeof *e);
}

static taso_err_t evaluate(const taso_graph_t *g, const taso_inputs_t *at,
                           taso_rat_t *const *inputs, evald_t *e) {
  e->n = g->nnodes;
  e->types = malloc(sizeof *e->types * (size_t)(2 * g->nnodes + 1));
  e->values = calloc((size_t)(2 * g->nnodes + 1), sizeof *e->values);
  if (!e->types || !e->values) return taso_error(TASO_ERR_NOMEM, "check_shapes");
  TASO_TRY(taso_graph_infer(g, at, e->types));
  taso_rat_ctx_t ctx;
  return taso_eval_graph_rational(&ctx, g, e->types, inputs, e->values);
}

/* Whether output o of a and b agree in type and every value. */
static bool same_output(const taso_graph_t *ga, const evald_t *a, const taso_graph_t *gb,
                        const evald_t *b, int o) {
  const taso_tensor_t *ta = &a->types[ga->outputs[o]], *tb = &b->types[gb->outputs[o]];
  if (!taso_tensor_equal(ta, tb)) return false;
  const taso_rat_t *va = a->values[ga->outputs[o]], *vb = b->values[gb->outputs[o]];
  for (int64_t k = 0; k < taso_tensor_size(ta); k++)
    if (taso_rat_cmp(va[k], vb[k])) return false;
  return true;
}

/* ---- one instance ------------------------------------------------------- */

typedef struct {
  const taso_graph_t *host; /* the pattern side, at the instance's shapes */
  const taso_inputs_t *at;  /* the instance's input table */
  taso_rat_t **inputs;      /* random values per table entry */
  evald_t host_val;
  int results, wrong, overflow;
} instance_t;

static taso_err_t compare_result(void *ctx, const taso_graph_t *result) {
  instance_t *x = ctx;
  evald_t r = {0};
  taso_err_t err = evaluate(result, x->at, x->inputs, &r);
  x->results++;
  if (err == TASO_ERR_OVERFLOW)
    x->overflow++;
  else if (err != TASO_OK)
    x->wrong++; /* the result does not even type-check */
  else
    for (int o = 0; o < x->host->noutputs; o++)
      if (!same_output(x->host, &x->host_val, result, &r, o)) {
        x->wrong++;
        break;
      }
  evald_free(&r);
  return err == TASO_ERR_NOMEM ? err : TASO_OK;
}

static taso_err_t random_inputs(const taso_inputs_t *at, taso_rat_t **inputs) {
  for (int i = 0; i < at->n; i++) {
    int64_t n = taso_tensor_size(&at->v[i].type);
    inputs[i] = malloc(sizeof *inputs[i] * (size_t)(n ? n : 1));
    if (!inputs[i]) return taso_error(TASO_ERR_NOMEM, "check_shapes");
    for (int64_t k = 0; k < n; k++)
      inputs[i][k] = taso_rat(uniform(-3, 3), 1);
  }
  return TASO_OK;
}

static void free_inputs(const taso_inputs_t *at, taso_rat_t **inputs) {
  for (int i = 0; i < at->n; i++)
    free(inputs[i]);
}

static void shapes_text(const taso_graph_t *g, const taso_inputs_t *at, char *buf, int len) {
  int n = 0;
  buf[0] = 0;
  for (int i = 0; i < g->nnodes && n < len; i++) {
    if (g->nodes[i].kind != TASO_OP_INPUT) continue;
    char s[64];
    taso_shape_format(&at->v[g->nodes[i].p.input].type, s, sizeof s);
    n += snprintf(buf + n, (size_t)(len - n), "%s%s=%s", n ? " " : "",
                  at->v[g->nodes[i].p.input].name, s);
  }
}

typedef struct {
  const taso_graph_t *lhs, *rhs;
  const taso_shape_cond_t *cond;
  int64_t rule; /* the artifact row, for the guard */
  int dir;
  bool failed_any, failed_checked;
} direction_t;

static void report(const direction_t *d, const taso_inputs_t *at, const char *what) {
  char l[512], r[512], s[256];
  taso_graph_format(d->lhs, table, l, sizeof l);
  taso_graph_format(d->rhs, table, r, sizeof r);
  shapes_text(d->lhs, at, s, sizeof s);
  printf("%s: %s => %s at %s\n", what, l, r, s);
}

/* The guarded engine's figures for one instance. */
static void count_guarded(const direction_t *d, const taso_inputs_t *at, bool holds,
                          const instance_t *any, const instance_t *grd) {
  if (!guard) return;
  fig.applied_guarded += grd->results > 0;
  fig.failed_guarded += grd->wrong > 0;
  fig.guarded_outside += !holds && grd->results > 0;
  fig.guarded_refused_equal += !holds && any->results > 0 && any->wrong == 0 && grd->results == 0;
  if (grd->wrong) report(d, at, "FAIL (guarded rewrite changed the value)");
  if (!holds && any->results > 0 && any->wrong == 0 && grd->results == 0 &&
      fig.guarded_refused_equal <= 5) {
    report(d, at, "guard refused (any_type is right here)");
    printf("  because: %s\n", taso_rule_guard_last_refusal(guard));
  }
}

/* Rewrites the instance with both engines and counts what they did. */
static taso_err_t run_instance(direction_t *d, const taso_inputs_t *at, bool holds) {
  taso_tensor_t *types = malloc(sizeof *types * (size_t)(2 * d->lhs->nnodes + 1));
  taso_rat_t **inputs = calloc((size_t)at->n + 1, sizeof *inputs);
  if (!types || !inputs) return taso_error(TASO_ERR_NOMEM, "check_shapes");
  instance_t any = {.host = d->lhs, .at = at, .inputs = inputs}, chk = any, grd = any;
  taso_err_t err =
      taso_graph_infer(d->lhs, at, types) == TASO_OK ? random_inputs(at, inputs) : TASO_ERR_SHAPE;
  if (err == TASO_OK) err = evaluate(d->lhs, at, inputs, &any.host_val);
  if (err == TASO_ERR_SHAPE || err == TASO_ERR_OVERFLOW) {
    fig.overflow += err == TASO_ERR_OVERFLOW;
    err = TASO_OK; /* not an instance: the pattern does not type-check there */
    goto done;
  }
  chk.host_val = any.host_val;
  if (err == TASO_OK)
    err = taso_rewrite_all(d->lhs, types, d->lhs, d->rhs, table, true, compare_result, &any);
  if (err == TASO_OK)
    err = taso_rewrite_all_checked(d->lhs, types, d->lhs, d->rhs, table, d->cond, compare_result,
                                   &chk);
  grd.host_val = any.host_val;
  if (err == TASO_OK && guard)
    err = taso_rewrite_all_guarded(guard, d->rule, d->dir, d->lhs, types, d->lhs, d->rhs, d->cond,
                                   compare_result, &grd);
  if (err != TASO_OK) goto done;
  count_guarded(d, at, holds, &any, &grd);
  fig.instances++;
  fig.satisfying += holds;
  fig.violating += !holds;
  fig.overflow += any.overflow > 0;
  fig.applied_any += any.results > 0;
  fig.applied_checked += chk.results > 0;
  fig.failed_any += any.wrong > 0;
  fig.failed_checked += chk.wrong > 0;
  fig.failed_violating += !holds && any.wrong > 0;
  fig.refused_equal += !holds && any.results > 0 && any.wrong == 0;
  fig.unapplied_satisfying += holds && chk.results == 0;
  d->failed_any |= any.wrong > 0;
  d->failed_checked |= chk.wrong > 0;
  if (chk.wrong)
    report(d, at, "FAIL (checked rewrite changed the value)");
  else if (holds && chk.results == 0)
    report(d, at, "FAIL (proved relation refused)");
  else if (any.wrong && fig.failed_violating <= 5)
    report(d, at, "refused, rightly (any_type is wrong here)");
done:
  if (any.host_val.types) evald_free(&any.host_val);
  free_inputs(at, inputs);
  free(inputs);
  free(types);
  return err;
}

/* ---- shapes ------------------------------------------------------------- */

static bool used(const direction_t *d, int v) {
  for (int side = 0; side < 2; side++) {
    const taso_graph_t *g = side ? d->rhs : d->lhs;
    for (int i = 0; i < g->nnodes; i++)
      if (g->nodes[i].kind == TASO_OP_INPUT && g->nodes[i].p.input == v) return true;
  }
  return false;
}

/* Every size s becomes f(s) for a random f: equal sizes stay equal, so
 * most such shapes keep the proved relation (order and divisibility
 * decide). */
static void map_sizes(const direction_t *d, taso_inputs_t *at) {
  int32_t to[64];
  for (int s = 0; s < 64; s++)
    to[s] = rnd() % 5 < 2 ? s : uniform(1, 9);
  for (int v = 0; v < at->n; v++)
    if (used(d, v))
      for (int a = 0; a < at->v[v].type.rank; a++)
        if (at->v[v].type.dim[a] < 64) at->v[v].type.dim[a] = to[at->v[v].type.dim[a]];
}

/* Every axis on its own: half keep their size, the others take 1 to 6. */
static void move_axes(const direction_t *d, taso_inputs_t *at) {
  for (int v = 0; v < at->n; v++)
    if (used(d, v))
      for (int a = 0; a < at->v[v].type.rank; a++)
        if (rnd() % 2) at->v[v].type.dim[a] = uniform(1, 6);
}

static taso_err_t check_direction(direction_t *d, int samples) {
  taso_inputs_t at = {.n = table->n, .v = malloc(sizeof *at.v * (size_t)(table->n + 1))};
  if (!at.v) return taso_error(TASO_ERR_NOMEM, "check_shapes");
  bool holds;
  taso_err_t err = taso_shape_cond_holds_at(d->cond, d->lhs, d->rhs, table, &holds);
  if (err == TASO_OK && !holds) {
    report(d, table, "FAIL (refused at the shapes it was proved at)");
    fig.unapplied_satisfying++;
  }
  int sat = 0, vio = 0;
  for (int t = 0; t < 40 * samples && err == TASO_OK && (sat < samples || vio < samples / 2); t++) {
    memcpy(at.v, table->v, sizeof *at.v * (size_t)table->n);
    if (t % 2)
      move_axes(d, &at);
    else
      map_sizes(d, &at);
    err = taso_shape_cond_holds_at(d->cond, d->lhs, d->rhs, &at, &holds);
    if (err != TASO_OK || (holds ? sat >= samples : vio >= samples / 2)) continue;
    int64_t before = fig.instances;
    err = run_instance(d, &at, holds);
    if (fig.instances > before) holds ? sat++ : vio++;
  }
  free(at.v);
  return err;
}

static int operators(const taso_graph_t *g) {
  int n = 0;
  for (int i = 0; i < g->nnodes; i++)
    n += g->nodes[i].kind != TASO_OP_INPUT;
  return n;
}

static taso_err_t check_rule(int64_t rule, const taso_graph_t *src, const taso_graph_t *dst,
                             int samples) {
  bool failed_any = false, failed_checked = false;
  for (int dir = 0; dir < 2; dir++) {
    direction_t d = {.lhs = dir ? dst : src, .rhs = dir ? src : dst, .rule = rule, .dir = dir};
    taso_shape_cond_t cond;
    if (operators(d.lhs) == 0) continue; /* a bare input matches everything: never applied */
    TASO_TRY(taso_shape_cond_of(d.lhs, d.rhs, table, &cond));
    d.cond = &cond;
    taso_err_t err = check_direction(&d, samples);
    taso_shape_cond_free(&cond);
    TASO_TRY(err);
    fig.directions++;
    failed_any |= d.failed_any;
    failed_checked |= d.failed_checked;
  }
  fig.rules++;
  fig.rules_failing_any += failed_any;
  fig.rules_failing_checked += failed_checked;
  return TASO_OK;
}

static void print_figures(double seconds) {
  printf("rules %" PRId64 " (%" PRId64 " directions), instances %" PRId64 " (%" PRId64
         " in the proved relation, %" PRId64 " outside), %.1f s\n",
         fig.rules, fig.directions, fig.instances, fig.satisfying, fig.violating, seconds);
  printf("any_type: applied at %" PRId64 ", wrong at %" PRId64 " (%" PRId64 " rules)\n",
         fig.applied_any, fig.failed_any, fig.rules_failing_any);
  printf("checked:  applied at %" PRId64 ", wrong at %" PRId64 " (%" PRId64 " rules)\n",
         fig.applied_checked, fig.failed_checked, fig.rules_failing_checked);
  printf("outside the relation: %" PRId64 " where any_type is wrong, %" PRId64
         " refused where the sides agree there; proved relation refused: %" PRId64
         "; overflow skipped: %" PRId64 "\n",
         fig.failed_violating, fig.refused_equal, fig.unapplied_satisfying, fig.overflow);
  if (!guard) return;
  taso_rule_guard_stats_t st;
  taso_rule_guard_stats(guard, &st);
  printf("guarded:  applied at %" PRId64 ", wrong at %" PRId64
         "; outside the relation: applied at %" PRId64
         ", refused where any_type is right at %" PRId64 "\n",
         fig.applied_guarded, fig.failed_guarded, fig.guarded_outside, fig.guarded_refused_equal);
  printf("guard:    matches %" PRId64 ": accepted by condition %" PRId64 ", by re-proof %" PRId64
         ", refused %" PRId64 "; relations decided %" PRId64 " (proved %" PRId64
         ", numeric false %" PRId64 ", numeric at small sizes %" PRId64 ", no small sizes %" PRId64
         "), cache hits %" PRId64 ", decision time median %.4f s total %.1f s\n",
         st.matches, st.by_condition, st.by_reproof, st.refused, st.proofs, st.proved,
         st.numeric_false, st.numeric_small, st.no_realization, st.cache_hits, st.median_seconds,
         st.proof_seconds);
}

/* The guard over the artifact's table and the axioms at path, with the
 * jobs' [verify] limits (timeout 5 s, rlimit 50000000, 1024 MiB). */
static void open_guard(const char *path, const taso_inputs_t *in, taso_axioms_t **ax) {
  taso_limits_t lim = {.timeout_s = 5, .rlimit = 50000000, .memory_mb = 1024};
  char report[512];
  int failed = 0;
  TASO_CHECK(taso_axioms_load(path, ax));
  TASO_CHECK(taso_axioms_prove_lemmas_limited(*ax, &lim, report, sizeof report, &failed));
  if (failed) printf("lemmas not proved, left out: %s\n", report);
  taso_rule_guard_opts_t opt = {.limits = lim, .seed = 1};
  TASO_CHECK(taso_rule_guard_open(in, *ax, &opt, &guard));
}

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  if (argc < 2) {
    fprintf(stderr, "usage: check_shapes SUBSTITUTIONS.h5 [SAMPLES [SEED [AXIOMS]]]\n");
    return 2;
  }
  int samples = argc > 2 ? atoi(argv[2]) : 8;
  rng_state = argc > 3 ? strtoull(argv[3], NULL, 10) : 1;
  taso_artifact_t *a;
  taso_inputs_t in = {0};
  taso_graph_t *graphs = NULL;
  taso_subst_t *rows = NULL;
  int64_t ngraphs = 0, nrows = 0;
  TASO_CHECK(taso_artifact_open(MPI_COMM_SELF, argv[1], TASO_KIND_SUBSTITUTIONS, &a));
  TASO_CHECK(taso_artifact_read_inputs(a, &in));
  TASO_CHECK(taso_artifact_read_graphs(a, &graphs, &ngraphs));
  TASO_CHECK(taso_artifact_read_substs(a, &rows, &nrows));
  TASO_CHECK(taso_artifact_close(a));
  table = &in;
  taso_axioms_t *ax = NULL;
  if (argc > 4) open_guard(argv[4], &in, &ax);
  double t0 = MPI_Wtime();
  for (int64_t i = 0; i < nrows; i++)
    if (rows[i].verdict == TASO_VERDICT_PROVED)
      TASO_CHECK(check_rule(i, &graphs[rows[i].src], &graphs[rows[i].dst], samples));
  print_figures(MPI_Wtime() - t0);
  bool ok = fig.failed_checked == 0 && fig.failed_guarded == 0 && fig.unapplied_satisfying == 0 &&
            fig.rules > 0;
  taso_rule_guard_close(guard);
  if (ax) taso_axioms_free(ax);
  printf("%s\n", ok ? "ok" : "FAILED");
  free(rows);
  taso_graphs_free(graphs, ngraphs);
  taso_inputs_free(&in);
  MPI_Finalize();
  return ok ? 0 : 1;
}
