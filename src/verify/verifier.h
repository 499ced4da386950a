/*
 * The verifier: decides whether a candidate substitution (two graphs whose
 * outputs correspond by position) follows from the axioms.
 *
 * A prover owns one Z3 context, so it belongs to one thread at a time; a
 * parallel driver makes one per thread. Each decision first runs a numeric
 * check (both graphs on the same random double inputs through the
 * reference evaluator, comparing shapes, split trees and values), then,
 * for each output, asserts the enabled axioms and lemmas, the shape facts
 * of both graphs (the size and split count of every axis of every
 * subterm and its rank, through the type functions dim, splits and rank
 * of decls.smt2, for guarded axioms: data/axioms/README.md) and the
 * negated equality of the
 * two output terms: unsat for every output is PROVED, a
 * numeric difference is REFUTED, anything else is UNKNOWN with a reason
 * that says whether the pair is numerically true (then the axioms lack a
 * property) or not. A proof that the numeric check contradicts is reported
 * as REFUTED with the reason: the axiom set is then unsound for those
 * shapes and must be fixed, and no such pair may reach a model.
 *
 * Pure C: no MPI, no output; errors are taso_err_t with a detail.
 */
#ifndef TASO_VERIFIER_H
#define TASO_VERIFIER_H

#include <stdint.h>

#include <z3.h>

#include "artifact.h"
#include "axioms.h"
#include "graph.h"
#include "z3ctx.h"

/* The verifier's own version, part of taso-verify's resume key: raise it
 * whenever a change can turn a verdict (the numeric check, the encoding,
 * the solver settings), so that no file resumes decisions made before. */
#define TASO_VERIFIER_VERSION 2

typedef struct {
  int32_t verdict;              /* taso_verdict_t */
  double seconds;               /* wall time spent deciding */
  char reason[TASO_REASON_LEN]; /* empty when proved; else why */
} taso_verify_result_t;

typedef struct taso_prover taso_prover_t;

/* A prover over the axioms and lemmas enabled now (later changes to ax do
 * not reach it); every query times out after timeout_s seconds. The
 * prover keeps a pointer to ax, which must outlive it. */
taso_err_t taso_prover_new(const taso_axioms_t *ax, double timeout_s, taso_prover_t **out);
/* The same with every limit of a query: the timeout, a resource limit
 * (rlimit) and the process's Z3 memory cap (z3ctx.h). A query that a
 * limit ends is UNKNOWN with a reason naming the limit. */
taso_err_t taso_prover_new_limited(const taso_axioms_t *ax, const taso_limits_t *lim,
                                   taso_prover_t **out);
void taso_prover_free(taso_prover_t *p);

/* Decides src => dst. seed picks the numeric check's random inputs. Fails
 * only when a library fails (memory, Z3); a bad candidate is a verdict. */
taso_err_t taso_prover_decide(taso_prover_t *p, const taso_inputs_t *in, const taso_graph_t *src,
                              const taso_graph_t *dst, uint64_t seed, taso_verify_result_t *r);

/* The proof alone, without the numeric check: PROVED or UNKNOWN (the
 * reason then says numerically equal, which only decide has checked). */
taso_err_t taso_prover_prove(taso_prover_t *p, const taso_inputs_t *in, const taso_graph_t *src,
                             const taso_graph_t *dst, taso_verify_result_t *r);

/* The numeric check alone: both graphs on the same random double inputs
 * (seed) at the shapes of in; *equal when shapes, split trees and values
 * agree, else why says what differs. An error where a graph does not
 * type-check there. */
taso_err_t taso_verify_numeric(const taso_inputs_t *in, const taso_graph_t *src,
                               const taso_graph_t *dst, uint64_t seed, bool *equal, char *why,
                               int len);

/* The Z3 term of every output of g, as the prover builds them; for tests
 * and tools. terms holds g->noutputs entries. Unexpressible parameters
 * give TASO_ERR_UNKNOWN naming the operator. */
taso_err_t taso_prover_terms(taso_prover_t *p, const taso_inputs_t *in, const taso_graph_t *g,
                             Z3_ast *terms);
Z3_context taso_prover_context(taso_prover_t *p);

/* Proves every enabled lemma, in order, from the enabled axioms and the
 * lemmas proved before it; a lemma that fails is disabled and named in
 * report ("L2: unknown (timeout)"; empty when all were proved). *failed
 * receives how many failed. */
taso_err_t taso_axioms_prove_lemmas(taso_axioms_t *ax, double timeout_s, char *report, int len,
                                    int *failed);
taso_err_t taso_axioms_prove_lemmas_limited(taso_axioms_t *ax, const taso_limits_t *lim,
                                            char *report, int len, int *failed);

/* Redundancy: the verdict on axiom goal (an index into ax->v) against the
 * other enabled axioms (lemmas left out), within lim per query:
 *   1  entailed: core (ax->n flags) marks a minimal entailing set (the
 *      unsat core, minimized by deletion within the limits);
 *  -1  independent: a model of the others where goal fails; model
 *      describes it ("2 tensors; x=0 y=1: sides 0 vs 1": the size of the
 *      tensor domain, the goal's variables and the values of its two
 *      sides). taso_axioms_countermodel finds it;
 *   0  undecided: why says what each search ran into, naming the limit.
 * The limits are Z3's resource count first (the same verdict on any
 * machine and under any load), the timeout only as a safety net. */
taso_err_t taso_axioms_entailed(const taso_axioms_t *ax, int goal, const taso_limits_t *lim,
                                int *verdict, bool *core, char *model, int mlen, char *why,
                                int len);

/* Collapse: whether a family of the enabled axioms makes any two tensors
 * equal (then it entails every axiom, and the axiom set is wrong). Family
 * 0 is every axiom; family k >= 1 the axioms that apply the function of
 * decls[k - 1] (a large set can hide a short refutation from Z3, a small
 * one cannot). *verdict is 1 when it does, with core a minimal such set
 * (as for taso_axioms_entailed), -1 when there is a model with two
 * different tensors (model says which), 0 when undecided (why) or the
 * family has under two members (why says so). taso_axioms_families gives
 * the number of families. */
int taso_axioms_families(const taso_axioms_t *ax);
taso_err_t taso_axioms_collapse(const taso_axioms_t *ax, int family, const taso_limits_t *lim,
                                int *verdict, bool *core, char *model, int mlen, char *why,
                                int len);

/* A finite model (src/verify/countermodel.c) of the axioms marked in use
 * where axiom goal fails (goal < 0: any model, which has two different
 * tensors). The tensor sort gets 2, then 4 elements; the ground instances
 * over those and a few Int values are searched, and a model found is
 * checked exactly for every Int value before *found is set. model
 * describes it; why says why none was found (no model of that size, or
 * the limit that ended the search). */
taso_err_t taso_axioms_countermodel(const taso_axioms_t *ax, const bool *use, int goal,
                                    const taso_limits_t *lim, bool *found, char *model, int mlen,
                                    char *why, int wlen);

/* Bound variables of one formula the verifier takes. */
#define TASO_MAX_BOUND 64

/* The body of a universal formula with a fresh constant per bound
 * variable (vars receives them, *nv of them, when not NULL); f itself when
 * it is not universal, NULL past TASO_MAX_BOUND variables
 * (src/verify/instantiate.c). */
Z3_ast taso_instantiate(Z3_context c, Z3_ast f, Z3_ast *vars, unsigned *nv);

#endif
