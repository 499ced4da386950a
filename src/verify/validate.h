/*
 * The validator: checks the axioms themselves (semantics.md section 5).
 *
 * A plan reads each axiom's validation domain from its "@" keys (ranks,
 * shapes, kernels, parameters, constants, constraints; data/axioms/README.md)
 * and its two sides from its SMT-LIB2 formula, and numbers every
 * combination of the domain's values: combination i of the plan is the
 * same on every rank, so work can be handed out by index and rows sorted
 * by it. A checker (one per thread: it owns a Z3 context) decides one
 * combination: both sides are built as graphs with the operator registry
 * (invalid shapes: skipped), evaluated by the reference evaluator over
 * canonical polynomials whose unknowns are the input elements (poly.h):
 * equal forms prove the case outright. What remains (forms that differ,
 * or a coefficient overflow) is decided by Z3 over the reals, on terms
 * from the same evaluator, with relu uninterpreted (relu(0) = 0) and max
 * as if-then-else: unsat is proved, a model a counterexample with its
 * values, anything else unknown. Every row says which path decided it.
 *
 * The redundancy check (taso_axioms_entailed, verifier.h) is the other half.
 *
 * Pure C: no MPI, no output.
 */
#ifndef TASO_VALIDATE_H
#define TASO_VALIDATE_H

#include <stdbool.h>
#include <stdint.h>

#include "axioms.h"

#define TASO_CHECK_TEXT 80    /* params and shapes text of a row */
#define TASO_CHECK_DETAIL 176 /* detail text of a row */

typedef enum {
  TASO_CHECK_PROVED = 1,
  TASO_CHECK_COUNTEREXAMPLE = 2,
  TASO_CHECK_SKIPPED = 3, /* shapes not valid for the operators, or outside @where */
  TASO_CHECK_UNKNOWN = 4,
} taso_check_outcome_t;

typedef enum {
  TASO_PATH_SHAPE = 0, /* decided by the shape rules (skipped, or sides of different shapes) */
  TASO_PATH_POLY = 1,  /* equal canonical polynomials */
  TASO_PATH_Z3 = 2,    /* Z3 over the reals */
} taso_check_path_t;

/* One decided combination: a row of validation.h5's /checks. */
typedef struct {
  int64_t index;                  /* global combination index in the plan */
  double seconds;                 /* time spent deciding it */
  int32_t axiom;                  /* index of the axiom in the plan */
  int32_t outcome;                /* taso_check_outcome_t */
  int32_t path;                   /* taso_check_path_t */
  int32_t trees_differ;           /* 1: equal values but different split trees */
  char name[TASO_AXIOM_NAME_LEN]; /* the axiom's name */
  char params[TASO_CHECK_TEXT];   /* "R=2 d0=1 d1=2 a=0 e=1" */
  char shapes[TASO_CHECK_TEXT];   /* "x=1x2 y=1x1 w=scalar" */
  char detail[TASO_CHECK_DETAIL]; /* counterexample values, or why skipped or unknown */
} taso_check_t;

typedef struct taso_plan taso_plan_t;

/* A plan over the enabled axioms and lemmas of ax that have a domain (not
 * "@check none"), in load order; only, if not NULL, is a comma-separated
 * list of names to keep. Dimension variables range over sizes, kernels
 * over {1, 3}. Errors name the file, line and axiom. ax must outlive the
 * plan. */
taso_err_t taso_plan_new(const taso_axioms_t *ax, const int32_t *sizes, int nsizes,
                         const char *only, taso_plan_t **out);
void taso_plan_free(taso_plan_t *p);

int64_t taso_plan_total(const taso_plan_t *p);
int taso_plan_naxioms(const taso_plan_t *p);
const char *taso_plan_name(const taso_plan_t *p, int axiom);
int64_t taso_plan_count(const taso_plan_t *p, int axiom); /* its combinations */
int64_t taso_plan_first(const taso_plan_t *p, int axiom); /* its first index */

typedef struct taso_checker taso_checker_t;

/* z3_only: skip the polynomial path (to cross-check it). */
taso_err_t taso_checker_new(const taso_plan_t *p, double timeout_s, bool z3_only,
                            taso_checker_t **out);
void taso_checker_free(taso_checker_t *ch);

/* Decides combination index (0 <= index < total) into row. Fails only
 * when a library does; every property of the combination is an outcome. */
taso_err_t taso_checker_run(taso_checker_t *ch, int64_t index, taso_check_t *row);

const char *taso_check_outcome_name(int outcome);
const char *taso_check_path_name(int path);

#endif
