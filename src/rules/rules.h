/*
 * Rules: the proved substitutions of taso-substitutions files as directed
 * rewrites, each carrying the shape relation it was proved at.
 *
 * Each proved row gives two rules, one per direction (a proof of equality
 * holds both ways; the generator's direction is only its canonical
 * order). A rule's shape condition (shape_cond.h) is computed here, once,
 * when the rule is made (taso_rule_init), and carried with it: the search
 * matches with it, the rule guard (rule_guard.h) is handed it, and the
 * derivation of pruned pairs (derive.h) makes its rules here too.
 */
#ifndef TASO_RULES_H
#define TASO_RULES_H

#include <stdbool.h>
#include <stdint.h>

#include <mpi.h>

#include "artifact.h"
#include "graph.h"
#include "shape_cond.h"

/* One directed rule: lhs => rhs over an input table (the substitution
 * file's, or a generator's). */
typedef struct {
  taso_graph_t lhs, rhs;
  int64_t row;            /* the substitution's row in the file */
  bool reversed;          /* rhs => lhs of that row */
  uint32_t kinds;         /* bit k: lhs has an operator of kind k (a quick pre-filter) */
  taso_shape_cond_t cond; /* the shape relation it was proved at (shape_cond.h) */
} taso_rule_t;

/* rule made from copies of lhs and rhs, with its kinds and its shape
 * condition at the input table in (both sides must type-check there). On
 * an error the rule is still safe to free. Free with taso_rule_free. */
taso_err_t taso_rule_init(taso_rule_t *rule, const taso_graph_t *lhs, const taso_graph_t *rhs,
                          const taso_inputs_t *in, int64_t row, bool reversed);
void taso_rule_free(taso_rule_t *rule);

typedef struct {
  taso_inputs_t inputs; /* the file's /inputs: the rules' pattern variables */
  taso_rule_t *v;
  int n;
} taso_rules_t;

/* The rules of the proved rows (both directions; a direction whose lhs has
 * no operator, or whose rhs reads an input its lhs lacks, is left out).
 * graphs/rows as taso_artifact_read_graphs/_substs give them; inputs is
 * copied. */
taso_err_t taso_rules_make(const taso_inputs_t *inputs, const taso_graph_t *graphs, int64_t ngraphs,
                           const taso_subst_t *rows, int64_t nrows, taso_rules_t *rules);
/* Appends the rules of one more substitutions file: its inputs join
 * rules->inputs (one entry per name and shape; a name another file gave
 * another shape becomes NAME_2, NAME_3...), its rows are numbered from
 * row_base on (the files' rows in order, one numbering). */
taso_err_t taso_rules_add(taso_rules_t *rules, const taso_inputs_t *inputs,
                          const taso_graph_t *graphs, int64_t ngraphs, const taso_subst_t *rows,
                          int64_t nrows, int64_t row_base);
void taso_rules_free(taso_rules_t *rules);

/* The rules of taso-substitutions files (taso-verify's output), paths a
 * comma-separated list ("A.h5,B.h5": taso_rules_add in that order), read
 * on every rank of comm (collective); *proved counts their proved rows.
 * Any other file, or one with no proved row, is an error naming it. */
taso_err_t taso_rules_load(MPI_Comm comm, const char *paths, taso_rules_t *rules, int64_t *proved);

/* Bit k set: g has an operator of kind k (a rule's quick pre-filter). */
uint32_t taso_graph_kinds(const taso_graph_t *g);

/* "lhs => rhs" in the registry's text form; returns the length it needs. */
int taso_rule_format(const taso_rules_t *rules, int i, char *buf, int len);

#endif
