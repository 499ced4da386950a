/*
 * The rule guard: applies a substitution outside the shape relation it was
 * proved under (shape_cond.h) only after proving it again there, and
 * remembers each verdict, so that an optimizer proves each new relation of
 * a rule once.
 *
 * A match whose bound tensors stand in the recorded relation is accepted
 * as taso_rewrite_all_checked accepts it. Any other match is decided by
 * its own relation: the condition computed at the bound instance
 * (taso_shape_cond_of on the bound input types), whose ranks, orders and
 * divisibilities form the cache key together with the rule and its
 * direction. A key not in the cache is decided once:
 *
 *  1. The numeric check (verifier.h) at the bound shapes when they are
 *     cheap (a quarter million multiply-adds), else at small sizes found
 *     to stand in the same relation (a few deterministic tries, seeded
 *     by the seed and the key alone, so that a verdict does not depend on
 *     the decisions before it; key equality is checked exactly), else at
 *     the bound shapes up to numeric_max_macs. No such sizes, or a
 *     difference: refused.
 *  2. The proof, at the bound shapes themselves. Shapes enter the proof
 *     only as ground facts, (dim a t) = n, (splits a t) = k and (rank t) = r for every
 *     subterm, that the axioms' guards compare with each other and with
 *     parameters by =, and, for const_one, add (extra.smt2): ground
 *     integer arithmetic on constants, whose cost does not depend on how
 *     large they are. So the proof is made at exactly the instance that
 *     is applied; nothing about the relation is assumed for it. Not
 *     PROVED within the limits (timeout, rlimit, memory): refused.
 *
 * A cached verdict is reused for another instance with the same key: that
 * rests on the claim of shape_cond.h (every shape-dependent branch of both
 * sides and every axiom guard goes the same way for instances of one
 * relation), the same claim taso_rewrite_all_checked rests on.
 *
 * A guard owns a Z3 context: one thread at a time.
 */
#ifndef TASO_RULE_GUARD_H
#define TASO_RULE_GUARD_H

#include <stdbool.h>
#include <stdint.h>

#include "axioms.h"
#include "graph.h"
#include "match.h"
#include "z3ctx.h"

typedef struct {
  taso_limits_t limits;     /* of every proof query: [verify] timeout, rlimit, memory_mb */
  int64_t numeric_max_macs; /* numeric check at the bound shapes up to this cost; 0: 1 << 24 */
  int shrink_tries;         /* small realizations tried past it; 0: 64 */
  uint64_t seed;            /* the numeric check's inputs and the realization search */
} taso_rule_guard_opts_t;

typedef struct {
  int64_t matches;        /* matches asked about (rhs type-checks on them) */
  int64_t by_condition;   /* accepted: the recorded relation holds */
  int64_t by_reproof;     /* accepted: another relation, proved (now or cached) */
  int64_t refused;        /* refused: another relation, not proved */
  int64_t proofs;         /* relations decided (each ran the numeric check, most a proof) */
  int64_t cache_hits;     /* outside-condition matches decided by the cache */
  int64_t proved;         /* relations proved */
  int64_t numeric_small;  /* relations whose numeric check ran at small sizes */
  int64_t no_realization; /* refused: too costly at the bound shapes, no small sizes found */
  int64_t numeric_false;  /* refused: the numeric check found the sides different */
  int64_t optimistic;     /* matches judged in optimistic mode (in no other counter) */
  int64_t unproved;       /* matches refused in cached-only mode for want of a verdict */
  double proof_seconds;   /* total wall time of the decisions */
  double median_seconds;  /* median wall time of one decision */
} taso_rule_guard_stats_t;

typedef struct taso_rule_guard taso_rule_guard_t;

/* A guard over the substitutions' input table in (copied) and the axioms
 * ax (kept by pointer, with its lemmas as enabled now: prove them first,
 * as taso-verify does, with taso_axioms_prove_lemmas_limited). */
taso_err_t taso_rule_guard_open(const taso_inputs_t *in, const taso_axioms_t *ax,
                                const taso_rule_guard_opts_t *opts, taso_rule_guard_t **g);
void taso_rule_guard_close(taso_rule_guard_t *g);

/* Every one-step rewrite of host by lhs => rhs that the guard accepts (the
 * matches of taso_rewrite_all_accepting). rule and dir name the
 * substitution and its direction (e.g. its row in the artifact, and 0 for
 * src => dst, 1 for dst => src): every call with the same rule and dir
 * must pass the same lhs and rhs. cond is the rule's recorded condition,
 * computed at the guard's input table (taso_rule_init, rules.h, computes
 * and carries it). */
taso_err_t taso_rewrite_all_guarded(taso_rule_guard_t *g, int64_t rule, int dir,
                                    const taso_graph_t *host, const taso_tensor_t *host_types,
                                    const taso_graph_t *lhs, const taso_graph_t *rhs,
                                    const taso_shape_cond_t *cond, taso_rewrite_fn fn, void *ctx);
/* The same, with each result's provenance (taso_rewrite_all_traced). */
taso_err_t taso_rewrite_all_guarded_traced(taso_rule_guard_t *g, int64_t rule, int dir,
                                           const taso_graph_t *host,
                                           const taso_tensor_t *host_types,
                                           const uint64_t *host_params, const taso_graph_t *lhs,
                                           const taso_graph_t *rhs, const taso_shape_cond_t *cond,
                                           taso_traced_fn fn, void *ctx);

/* The decision alone for one instance: lhs => rhs (recorded condition
 * cond) at the input table at (the guard's table with the bound inputs'
 * types). */
taso_err_t taso_rule_guard_accepts(taso_rule_guard_t *g, int64_t rule, int dir,
                                   const taso_graph_t *lhs, const taso_graph_t *rhs,
                                   const taso_shape_cond_t *cond, const taso_inputs_t *at,
                                   bool *accept);

/* Sharing verdicts between guards over the same substitutions (the same
 * rule ids), input table, axioms and options, e.g. the ranks of one run:
 * a verdict depends only on its key (rule, direction, relation; the
 * decision is seeded by the key alone), so a guard that imports another's
 * verdicts accepts exactly what it would have decided itself, without the
 * proofs. taso_rule_guard_decided: how many verdicts this guard decided
 * (not imported); export: those from the from'th on, as bytes (*buf
 * malloc'd); import: adds the verdicts of such bytes it lacks. */
int64_t taso_rule_guard_decided(const taso_rule_guard_t *g);
taso_err_t taso_rule_guard_export(const taso_rule_guard_t *g, int64_t from, uint8_t **buf,
                                  size_t *len);
taso_err_t taso_rule_guard_import(taso_rule_guard_t *g, const uint8_t *buf, size_t len);

/* Optimistic mode (on): every match is accepted, inside its recorded
 * relation or not, verdict or none (nothing is proved, nothing cached;
 * its matches are counted in optimistic alone). It accepts a superset of
 * what the guard accepts, whatever the guard decided before, so a bounded
 * search run with it first (derive.h) is the same on every rank, and one
 * that fails there needs no proofs. */
void taso_rule_guard_optimistic(taso_rule_guard_t *g, bool on);

/* Cached-only mode (on): a match outside its recorded relation whose
 * relation has no verdict yet is refused without a proof, and nothing is
 * kept for it (counted in unproved, not refused): a later call out of
 * this mode decides it. Verdicts already held apply as always. For a
 * search that decides first which relations are worth a proof (eqsat.c:
 * those an optimistic run's result used). */
void taso_rule_guard_cached_only(taso_rule_guard_t *g, bool on);

/* Hopeful mode (on): as optimistic, except that a relation with a verdict
 * gets it (a relation refused before stays refused); nothing is proved or
 * kept, and matches are counted in optimistic alone. For a search's
 * unproved first pass (eqsat.c) that should not lean on rewrites already
 * known not to hold. */
void taso_rule_guard_hopeful(taso_rule_guard_t *g, bool on);

/* ---- sharing decisions between guards (ranks of a parallel search) ----
 * Each rank's guard would decide every relation it meets again. Instead a
 * search can run its matches twice: first with the guard probing, which
 * decides nothing, refuses every match, and notes each relation it has no
 * verdict for as a question (once per key, the first instance met); then
 * the questions of all ranks are decided once each, somewhere
 * (taso_rule_guard_decide at the question's instance), the verdicts
 * shared (taso_rule_guard_put_verdict), and the matches run for real,
 * every verdict now cached. A verdict depends on its key and the instance
 * it is decided at; deciding each key at the first instance in an order
 * that does not depend on the rank count keeps the search's result
 * independent of it. Probing counts nothing in the statistics. */

/* One relation without a verdict, at the first instance met of it. */
typedef struct {
  int64_t rule; /* as passed to taso_rewrite_all_guarded */
  int dir;
  uint8_t *key; /* the verdict's cache key (opaque bytes) */
  size_t len;
  taso_tensor_t *types; /* per entry of the guard's input table: its type there */
  int64_t seq;          /* questions noted before it since the last clear */
} taso_rule_guard_question_t;

/* Probing on or off (off when opened). */
void taso_rule_guard_set_probe(taso_rule_guard_t *g, bool on);
/* The questions noted while probing since the last clear (valid until the
 * next call into the guard); the count. */
int64_t taso_rule_guard_questions(const taso_rule_guard_t *g, const taso_rule_guard_question_t **q);
void taso_rule_guard_questions_clear(taso_rule_guard_t *g);
/* The guard's input table size: the number of types of a question. */
int taso_rule_guard_ninputs(const taso_rule_guard_t *g);
/* Decides (or answers from the cache) the relation of lhs => rhs at the
 * inputs typed `types` (one per entry of the guard's table), as a match
 * outside the recorded relation is decided; *verdict the answer. */
taso_err_t taso_rule_guard_decide(taso_rule_guard_t *g, int64_t rule, int dir,
                                  const taso_graph_t *lhs, const taso_graph_t *rhs,
                                  const taso_tensor_t *types, bool *verdict);
/* Adds a verdict decided by another guard over the same rules and table
 * (a key already cached keeps its verdict). */
taso_err_t taso_rule_guard_put_verdict(taso_rule_guard_t *g, const uint8_t *key, size_t len,
                                       bool verdict);

/* ---- keeping verdicts between runs (a verdict cache file) ----
 * A verdict's key is the rule and direction (as the caller numbers them)
 * and the relation: bytes that depend only on the rule's graphs and the
 * shapes' relation, so a caller that names its rules stably can store
 * verdicts and give them to a later guard with the same settings. */

/* Called with each cached verdict (relation: rel, len bytes). */
typedef taso_err_t (*taso_verdict_fn)(void *ctx, int64_t rule, int dir, const uint8_t *rel,
                                      size_t len, bool verdict);
taso_err_t taso_rule_guard_each_verdict(const taso_rule_guard_t *g, taso_verdict_fn fn, void *ctx);
/* Adds a verdict for (rule, dir, relation) unless the guard has one. */
taso_err_t taso_rule_guard_put_relation(taso_rule_guard_t *g, int64_t rule, int dir,
                                        const uint8_t *rel, size_t len, bool verdict);
/* What a verdict depends on besides its key: the limits, the numeric
 * check's settings and the axioms' digest (their enabled lemmas
 * included), as text; equal texts, interchangeable verdicts. */
void taso_rule_guard_settings(const taso_rule_guard_t *g, char *buf, size_t len);

/* The counters so far. */
void taso_rule_guard_stats(const taso_rule_guard_t *g, taso_rule_guard_stats_t *s);

/* Why the last refused relation was refused ("" if none yet). */
const char *taso_rule_guard_last_refusal(const taso_rule_guard_t *g);

#endif
