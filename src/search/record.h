/*
 * The record of an optimization, as taso-optimize writes it into its model
 * file: root attributes that say what the search did (settings, cost
 * before and after, graphs explored, the check against the original, the
 * end-to-end timing) and the table /optimize_rules of which rule fired how
 * many times on the way to the result (taso-rules reads them).
 */
#ifndef TASO_SEARCH_RECORD_H
#define TASO_SEARCH_RECORD_H

#include <stdbool.h>
#include <stdint.h>

#include "artifact.h"
#include "family.h"
#include "search.h"

typedef struct {
  const char *search;        /* "backtracking", "parallel" or "eqsat" */
  const char *substitutions; /* the rule files, as given */
  const char *model;         /* the input's spec, as given */
  const char *input_name;    /* the input model's name */
  taso_features_t input_features;
  const char *rules_choice;             /* --rules */
  const char *backend;                  /* the backend's name */
  const char *costs;                    /* "estimated" or "measured" */
  const char *cost_of;                  /* what a graph's cost sums */
  const taso_search_options_t *opt;     /* alpha, budget, width, target, chain */
  int64_t proved;                       /* substitutions proved in the rule files */
  int64_t measured;                     /* configurations measured during the search */
  bool checked;                         /* the result was run against the original */
  double relative;                      /* then: the largest relative output difference */
  bool timed;                           /* input and result were timed end to end */
  double latency_before, latency_after; /* then: their medians, ms */
  int rounds, pairs;                    /* then: rounds timed, pairs of runs timed in them */
  int pairs_faster;                     /* the pairs the result won */
  int pairs_needed;                     /* the sign test's threshold */
  bool kept_input;                      /* the result was not faster: the input graph was written */
} taso_optimize_record_t;

/* rec, the search's result r over rules, as root attributes of a and the
 * table /optimize_rules (taso_fired_rules_table). */
taso_err_t taso_optimize_record_write(taso_artifact_t *a, const taso_optimize_record_t *rec,
                                      const taso_rules_t *rules, const taso_search_result_t *r);

/* What a search did beyond its summary, a line each for taso-optimize's
 * output ("" when nothing): the parallel search's rounds and balance
 * (width: its round width), rule chains' links (chain on), equality
 * saturation's e-graph and matches. */
void taso_search_report(const taso_search_result_t *r, int width, bool chain, char *buf,
                        size_t len);

#endif
