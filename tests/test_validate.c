/*
 * The validator's library: canonical polynomials, the plan's domains, the
 * symbolic check of single combinations (the polynomial path against Z3
 * alone), the known-bad fixtures and the redundancy check.
 */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "poly.h"
#include "test.h"
#include "validate.h"
#include "verifier.h"

static const char *source_dir(void) {
  const char *s = getenv("TASO_SOURCE_DIR");
  return s ? s : ".";
}

static taso_axioms_t *load(const char *extra) {
  char path[1024];
  taso_axioms_t *ax = NULL;
  snprintf(path, sizeof path, "%s/data/axioms", source_dir());
  CHECK_OK(taso_axioms_load(path, &ax));
  if (extra && ax) {
    snprintf(path, sizeof path, "%s/data/axioms/bad/%s", source_dir(), extra);
    CHECK_OK(taso_axioms_add_file(ax, path));
  }
  return ax;
}

static void test_poly(void) {
  taso_poly_ctx_t *c;
  CHECK_OK(taso_poly_ctx_new(&c));
  taso_poly_t x = taso_poly_var(c, 0), y = taso_poly_var(c, 1), w = taso_poly_var(c, 2);
  /* w*(x*y + y*x) == 2*x*y*w; (x + y) - y == x */
  taso_poly_t a =
      taso_poly_mul(c, w, taso_poly_add(c, taso_poly_mul(c, x, y), taso_poly_mul(c, y, x)));
  taso_poly_t b =
      taso_poly_mul(c, taso_poly_const(c, 2, 1), taso_poly_mul(c, taso_poly_mul(c, x, y), w));
  CHECK(taso_poly_equal(a, b));
  taso_poly_t d =
      taso_poly_add(c, taso_poly_add(c, x, y), taso_poly_mul(c, taso_poly_const(c, -1, 1), y));
  CHECK(taso_poly_equal(d, x));
  CHECK(!taso_poly_equal(taso_poly_add(c, x, y), taso_poly_add(c, x, w)));
  /* 1/3 + 1/6 == 1/2; relu of constants is exact; relu(0) == 0. */
  CHECK(taso_poly_equal(taso_poly_add(c, taso_poly_const(c, 1, 3), taso_poly_const(c, 1, 6)),
                        taso_poly_const(c, 1, 2)));
  CHECK(taso_poly_equal(taso_poly_relu(c, taso_poly_const(c, -3, 2)), taso_poly_const(c, 0, 1)));
  CHECK(taso_poly_relu(c, taso_poly_const(c, 0, 1)).n == 0);
  /* Atoms: equal arguments, the same atom; max is commutative. */
  taso_poly_t r1 = taso_poly_relu(c, taso_poly_add(c, x, y)),
              r2 = taso_poly_relu(c, taso_poly_add(c, y, x));
  CHECK(taso_poly_equal(r1, r2) && taso_poly_has_atom(r1));
  CHECK(!taso_poly_equal(r1, taso_poly_relu(c, x)));
  CHECK(taso_poly_equal(taso_poly_max(c, x, y), taso_poly_max(c, y, x)));
  CHECK(taso_poly_equal(taso_poly_max(c, x, x), x));
  CHECK(!taso_poly_overflowed(c));
  /* Degree past the slots is reported, never wrapped. */
  taso_poly_t big = x;
  for (int i = 0; i < TASO_POLY_DEGREE; i++)
    big = taso_poly_mul(c, big, y);
  CHECK(taso_poly_overflowed(c));
  taso_poly_reset(c);
  CHECK(!taso_poly_overflowed(c) && taso_poly_natoms(c) == 0);
  char buf[64];
  taso_poly_format(taso_poly_add(c, taso_poly_var(c, 3), taso_poly_const(c, 1, 2)), buf,
                   sizeof buf);
  CHECK(!strcmp(buf, "u3 + 1/2"));
  taso_poly_ctx_free(c);
}

/* Runs every combination of the named axioms; counts outcomes. */
static void run_all(const taso_axioms_t *ax, const int32_t *sizes, int n, const char *only,
                    bool z3_only, int64_t counts[5], int64_t *trees, taso_check_t *first_cex) {
  taso_plan_t *p = NULL;
  taso_checker_t *ch = NULL;
  memset(counts, 0, 5 * sizeof *counts);
  *trees = 0;
  CHECK_OK(taso_plan_new(ax, sizes, n, only, &p));
  if (!p) return;
  CHECK_OK(taso_checker_new(p, 10, z3_only, &ch));
  for (int64_t i = 0; ch && i < taso_plan_total(p); i++) {
    taso_check_t r;
    CHECK_OK(taso_checker_run(ch, i, &r));
    counts[r.outcome]++;
    *trees += r.trees_differ;
    /* With first_cex, the first counterexample ends the run. */
    if (r.outcome == TASO_CHECK_COUNTEREXAMPLE && first_cex) {
      *first_cex = r;
      break;
    }
  }
  taso_checker_free(ch);
  taso_plan_free(p);
}

static void test_domains(void) {
  taso_axioms_t *ax = load(NULL);
  taso_plan_t *p = NULL;
  const int32_t n12[] = {1, 2};
  CHECK_OK(taso_plan_new(ax, n12, 2, "A0,A10,A22,A43", &p));
  if (p) {
    CHECK(taso_plan_naxioms(p) == 4);
    /* A0: ranks 2-4 over {1,2}: 4 + 8 + 16. A10: sum over R of R axes
     * times 2^(R+1). A22: 2^6 sizes x 4 kernels x 4 strides x 2 pads x 2 acts. */
    CHECK(taso_plan_count(p, 0) == 28);
    CHECK(taso_plan_count(p, 1) == 2 * 8 + 3 * 16 + 4 * 32);
    CHECK(taso_plan_count(p, 2) == 4096);
    CHECK(taso_plan_count(p, 3) == 4096);
    CHECK(taso_plan_total(p) == 28 + 192 + 4096 + 4096);
    CHECK(taso_plan_first(p, 2) == 28 + 192);
    taso_plan_free(p);
  }
  /* A combination with a VALID window that does not fit is skipped. */
  int64_t c[5], trees;
  run_all(ax, n12, 2, "A22", false, c, &trees, NULL);
  CHECK(c[TASO_CHECK_PROVED] == 2560 && c[TASO_CHECK_SKIPPED] == 1536 && c[2] == 0 && c[4] == 0);
  taso_axioms_free(ax);
}

/* The polynomial path and Z3 alone agree on every combination: all axioms
 * with size 1, and the nonlinear A12 (a scalar times a convolution) and
 * the relu and max ones A13, A36 with size 2. */
static void test_cross_check(void) {
  taso_axioms_t *ax = load(NULL);
  const int32_t n1[] = {1}, n2[] = {2};
  int64_t poly[5], z3[5], t1, t2;
  run_all(ax, n1, 1, NULL, false, poly, &t1, NULL);
  run_all(ax, n1, 1, NULL, true, z3, &t2, NULL);
  CHECK(memcmp(poly, z3, sizeof poly) == 0 && t1 == t2);
  CHECK(poly[TASO_CHECK_PROVED] > 200 && poly[TASO_CHECK_COUNTEREXAMPLE] == 0 && poly[4] == 0);
  run_all(ax, n2, 1, "A12,A13,A36", false, poly, &t1, NULL);
  run_all(ax, n2, 1, "A12,A13,A36", true, z3, &t2, NULL);
  CHECK(memcmp(poly, z3, sizeof poly) == 0);
  CHECK(poly[TASO_CHECK_PROVED] == 60 && poly[TASO_CHECK_SKIPPED] == 36);
  taso_axioms_free(ax);
}

static void test_fixtures(void) {
  /* Grouped convolution: true for sizes {1,2}; a counterexample with {1,3}. */
  taso_axioms_t *ax = load("grouped_conv.smt2");
  const int32_t n12[] = {1, 2}, n13[] = {1, 3};
  int64_t c[5], trees;
  taso_check_t cex;
  memset(&cex, 0, sizeof cex);
  run_all(ax, n12, 2, "BAD2", false, c, &trees, NULL);
  CHECK(c[TASO_CHECK_COUNTEREXAMPLE] == 0 && c[TASO_CHECK_PROVED] > 0);
  run_all(ax, n13, 2, "BAD2", false, c, &trees, &cex);
  CHECK(c[TASO_CHECK_COUNTEREXAMPLE] > 0 && c[TASO_CHECK_UNKNOWN] == 0);
  CHECK(cex.path == TASO_PATH_Z3 && strstr(cex.detail, "out[") && strstr(cex.detail, " vs "));
  printf("grouped convolution, sizes {1,3}: a counterexample: %s [%s]: %s\n", cex.params,
         cex.shapes, cex.detail);
  taso_axioms_free(ax);
  /* Concat associativity: equal values, different split trees, always. */
  ax = load("concat_assoc.smt2");
  run_all(ax, n12, 2, "BAD1", false, c, &trees, NULL);
  CHECK(c[TASO_CHECK_PROVED] > 0 && trees == c[TASO_CHECK_PROVED]);
  taso_axioms_free(ax);
}

/* The redundancy queries' budget: Z3's resource count, so that every
 * verdict below is the same on a slow or loaded machine; the timeout is
 * only a safety net, far above what the budget takes. */
static const taso_limits_t budget = {.timeout_s = 300, .rlimit = 3000000};
static const taso_limits_t big_budget = {.timeout_s = 300, .rlimit = 6000000};

static int count(const bool *core, int n) {
  int size = 0;
  for (int i = 0; i < n; i++)
    size += core[i];
  return size;
}

static void test_redundancy(void) {
  taso_axioms_t *ax = load("entailed.smt2");
  int k = taso_axioms_find(ax, "R1"), verdict = 0;
  bool *core = calloc((size_t)ax->n, sizeof *core);
  char why[128], model[128];
  CHECK_OK(
      taso_axioms_entailed(ax, k, &budget, &verdict, core, model, sizeof model, why, sizeof why));
  /* x + (y + z) = z + (y + x): commutativity (A1) and associativity (A0),
   * and neither alone. */
  CHECK(verdict == 1);
  CHECK(core[taso_axioms_find(ax, "A0")] && core[taso_axioms_find(ax, "A1")]);
  CHECK(count(core, ax->n) == 2);
  /* An axiom nothing else implies is not reported entailed; with A25 and
   * A26 (split undoes concat) every model is infinite, so no finite
   * countermodel can exist, and the verdict says so. */
  CHECK_OK(taso_axioms_entailed(ax, taso_axioms_find(ax, "A29"), &budget, &verdict, core, model,
                                sizeof model, why, sizeof why));
  CHECK(verdict == 0 && strstr(why, "every model is infinite (A25 and A26 make concat injective)"));
  /* No family of the default set makes two tensors equal; with concat
   * associativity, the concat family does: A25, A26 and it. */
  int fam = 1 + (int)(taso_axioms_decl(ax, "concat") - ax->decls);
  CHECK_OK(
      taso_axioms_collapse(ax, fam, &budget, &verdict, core, model, sizeof model, why, sizeof why));
  CHECK(verdict != 1);
  /* The relu family has a finite model with two different tensors. */
  int relu = 1 + (int)(taso_axioms_decl(ax, "relu") - ax->decls);
  CHECK_OK(taso_axioms_collapse(ax, relu, &budget, &verdict, core, model, sizeof model, why,
                                sizeof why));
  CHECK(verdict == -1 && strstr(model, "tensors: every axiom holds"));
  free(core);
  taso_axioms_free(ax);
  ax = load("concat_assoc.smt2");
  core = calloc((size_t)ax->n, sizeof *core);
  CHECK_OK(taso_axioms_collapse(ax, fam, &big_budget, &verdict, core, model, sizeof model, why,
                                sizeof why));
  CHECK(verdict == 1 && core[taso_axioms_find(ax, "A25")] && core[taso_axioms_find(ax, "A26")] &&
        core[taso_axioms_find(ax, "BAD1")]);
  CHECK(count(core, ax->n) == 3);
  free(core);
  taso_axioms_free(ax);
}

/* A countermodel really violates its goal: ewadd's commutativity (A1)
 * does not follow from the other elementwise axioms (A0, A2-A7), and the
 * model found makes the two sides of A1 differ. */
static void test_independent(void) {
  taso_axioms_t *ax = load(NULL);
  bool *use = calloc((size_t)ax->n, sizeof *use), found = false;
  static const char *const others[] = {"A0", "A2", "A3", "A4", "A5", "A6", "A7"};
  for (size_t i = 0; i < sizeof others / sizeof *others; i++)
    use[taso_axioms_find(ax, others[i])] = true;
  char why[128], model[128];
  CHECK_OK(taso_axioms_countermodel(ax, use, taso_axioms_find(ax, "A1"), &budget, &found, model,
                                    sizeof model, why, sizeof why));
  unsigned l = 0, r = 0;
  const char *sides = strstr(model, "sides ");
  CHECK(found && sides && sscanf(sides, "sides %u vs %u", &l, &r) == 2 && l != r);
  /* A goal among the axioms it is checked against has no countermodel,
   * and none is reported. */
  memset(use, 0, sizeof *use * (size_t)ax->n);
  use[taso_axioms_find(ax, "A0")] = true;
  CHECK_OK(taso_axioms_countermodel(ax, use, taso_axioms_find(ax, "A0"), &budget, &found, model,
                                    sizeof model, why, sizeof why));
  CHECK(!found);
  free(use);
  taso_axioms_free(ax);
}

static void test_bad_domain(void) {
  char dir[] = "/tmp/taso_validate_XXXXXX", path[1100], cmd[2300];
  if (!mkdtemp(dir)) return;
  snprintf(cmd, sizeof cmd, "cp %s/data/axioms/decls.smt2 %s/", source_dir(), dir);
  CHECK(system(cmd) == 0);
  snprintf(path, sizeof path, "%s/z.smt2", dir);
  FILE *f = fopen(path, "w");
  fprintf(f, ";; @axiom Z1\n;; @about x\n;; @shape x = m n q r s\n"
             "(assert (forall ((x T)) (= (relu x) (relu x))))\n");
  fclose(f);
  taso_axioms_t *ax = NULL;
  taso_plan_t *p = NULL;
  const int32_t n12[] = {1, 2};
  CHECK_OK(taso_axioms_load(dir, &ax));
  CHECK_ERR(taso_plan_new(ax, n12, 2, NULL, &p), TASO_ERR_PARSE);
  CHECK(strstr(taso_error_detail(), "z.smt2:3:") && strstr(taso_error_detail(), "(in axiom Z1)"));
  taso_axioms_free(ax);
  snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
  CHECK(system(cmd) == 0);
}

int main(void) {
  taso_set_fatal_hook(abort);
  static const test_case_t cases[] = {
      TEST(test_poly),       TEST(test_domains),     TEST(test_cross_check), TEST(test_fixtures),
      TEST(test_redundancy), TEST(test_independent), TEST(test_bad_domain)};
  return test_run(cases, sizeof cases / sizeof *cases);
}
