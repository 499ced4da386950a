/* Z3 contexts: a proof by unsat, a timeout bound, errors that do not exit, a
 * query whose solver could not be made. */
#include <string.h>

#include "test.h"
#include "z3ctx.h"

static void test_unsat(void) {
  Z3_context c;
  CHECK_OK(taso_z3_open(5000, &c));
  Z3_solver s = Z3_mk_solver(c);
  Z3_solver_inc_ref(c, s);
  Z3_sort real = Z3_mk_real_sort(c);
  Z3_ast x = Z3_mk_const(c, Z3_mk_string_symbol(c, "x"), real);
  Z3_ast y = Z3_mk_const(c, Z3_mk_string_symbol(c, "y"), real);
  /* (x + y) * (x + y) = x*x + 2*x*y + y*y for all reals: its negation is unsat */
  Z3_ast sum = Z3_mk_add(c, 2, (Z3_ast[]){x, y});
  Z3_ast lhs = Z3_mk_mul(c, 2, (Z3_ast[]){sum, sum});
  Z3_ast two = Z3_mk_real(c, 2, 1);
  Z3_ast rhs = Z3_mk_add(c, 3,
                         (Z3_ast[]){Z3_mk_mul(c, 2, (Z3_ast[]){x, x}),
                                    Z3_mk_mul(c, 3, (Z3_ast[]){two, x, y}),
                                    Z3_mk_mul(c, 2, (Z3_ast[]){y, y})});
  Z3_solver_push(c, s);
  Z3_solver_assert(c, s, Z3_mk_not(c, Z3_mk_eq(c, lhs, rhs)));
  CHECK(Z3_solver_check(c, s) == Z3_L_FALSE);
  Z3_solver_pop(c, s, 1);
  /* a false identity is sat */
  Z3_solver_assert(c, s, Z3_mk_not(c, Z3_mk_eq(c, lhs, Z3_mk_mul(c, 2, (Z3_ast[]){x, x}))));
  CHECK(Z3_solver_check(c, s) == Z3_L_TRUE);
  Z3_solver_dec_ref(c, s);
  taso_z3_close(c);
}

static void test_error_does_not_exit(void) {
  Z3_context c;
  char msg[256];
  CHECK_OK(taso_z3_open(1000, &c));
  CHECK(!taso_z3_take_error(msg, sizeof msg));
  /* a numeral that is not a number: Z3's default handler would exit here */
  Z3_mk_numeral(c, "not-a-number", Z3_mk_int_sort(c));
  CHECK(taso_z3_take_error(msg, sizeof msg));
  CHECK(msg[0] != 0);
  CHECK(!taso_z3_take_error(msg, sizeof msg)); /* taken once */
  taso_z3_close(c);
}

/* Under the process's memory cap a Z3 call of one thread can fail while
 * another thread's query holds the memory, and return NULL: a query with
 * no solver is undef for the memory limit, and takes the pending error,
 * so that the next query starts clean (a NULL once reached Z3's
 * reference counts and killed a k=4 verify with a segmentation fault). */
static void test_no_solver(void) {
  Z3_context c;
  char why[64] = "", msg[256];
  CHECK_OK(taso_z3_open(1000, &c));
  Z3_mk_numeral(c, "not-a-number", Z3_mk_int_sort(c)); /* an error left pending */
  taso_limits_t lim = {.timeout_s = 1, .rlimit = 1000, .memory_mb = 0};
  CHECK(taso_limits_check(c, NULL, &lim, why, sizeof why) == Z3_L_UNDEF);
  CHECK(strstr(why, "memory limit") != NULL);
  CHECK(!taso_z3_take_error(msg, sizeof msg));
  /* and a real query after it still runs */
  Z3_solver s = Z3_mk_simple_solver(c);
  Z3_solver_inc_ref(c, s);
  Z3_solver_assert(c, s, Z3_mk_false(c));
  CHECK(taso_limits_check(c, s, &lim, why, sizeof why) == Z3_L_FALSE);
  Z3_solver_dec_ref(c, s);
  taso_z3_close(c);
}

int main(void) {
  test_case_t cases[] = {TEST(test_unsat), TEST(test_error_does_not_exit), TEST(test_no_solver)};
  return test_run(cases, sizeof cases / sizeof *cases);
}
