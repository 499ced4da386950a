/*
 * The generator's parallel driver (the first stage, taso-generate's work):
 * enumerates every graph of up to max_ops operators over the job's inputs
 * and operators, fingerprints them, pairs graphs that compute the same
 * outputs into candidate substitutions and prunes the redundant ones,
 * collectively over an MPI communicator. The tool around it parses the
 * options, opens the rule guard and writes candidates.h5.
 *
 *   1. every rank walks its shard of the enumeration tree (a range of
 *      cumulative weight, enumerate.h) and evaluates each new tensor
 *      expression once (src/fingerprint/memo.h);
 *   2. tensor classes: one all-to-all sends each tensor's fingerprint and
 *      structural hash to an owner rank; tensors whose class holds two or
 *      more different expressions are "shared", and only graphs whose
 *      outputs are all shared can pair with a graph that has no operator in
 *      common with them;
 *   3. walk 2 records the graphs whose outputs are connected (one output,
 *      or outputs that share operators) and sends the records to the owner
 *      of their fingerprint (one all-to-all). The connected multi-output
 *      ones are "twins": a graph whose outputs share no operator can pair
 *      with nothing else without splitting into independent parts, so the
 *      twin's owner builds those graphs from their parts (every expression
 *      of the twin's output classes, gathered from all ranks) instead of a
 *      walk over billions of them;
 *   4. owners group the records by fingerprint and pair every member with
 *      the smallest, pruning common subgraphs and independent parts; every
 *      rank gathers the survivors' pattern keys (canonical under renaming of
 *      inputs of any shape), keeps one pair per pattern, re-checks those
 *      exactly on another input set, and drops the ones that one or two
 *      rewrites by kept ones imply (each rank a share).
 * The result does not depend on the rank count: shards only change who
 * finds a graph, and every later choice is made on sorted, global data.
 *
 * With [generate] method = representatives (the default is exhaustive),
 * steps 1 to 3 go level by level instead: the graphs of k operators are
 * the class representatives of k - 1 operators extended by one operator,
 * each level's tensor and graph classes formed by one exchange each; walk
 * 2 then runs over the tree so kept, and steps 4 on are the same. Each
 * level below the last is checkpointed (opts.checkpoint), so a killed run
 * resumes at the level it was in.
 */
#ifndef TASO_GENERATE_H
#define TASO_GENERATE_H

#include <mpi.h>

#include "candidates.h"
#include "derive.h"
#include "fingerprint.h"
#include "job.h"

typedef struct {
  MPI_Comm comm;
  const taso_job_t *job;     /* inputs, operators, max_ops, method, bounds */
  const char *name;          /* the prefix of progress lines: the tool's name */
  taso_derive_opts_t derive; /* the implication stage's search (the rule guard) */
  /* method = representatives: the level checkpoints' folder (NULL: none),
   * resumed from when it holds complete levels of this job (checkpoint.h) */
  const char *checkpoint;
  int until_level; /* > 0: stop once this level is checkpointed */
} taso_generate_opts_t;

/* The per-stage counts, in the order of taso_generate_count_names (the
 * root attributes of candidates.h5). */
enum {
  TASO_GENERATE_GRAPHS = 0,         /* "graphs_enumerated" */
  TASO_GENERATE_PAIRS = 8,          /* "candidate_pairs" */
  TASO_GENERATE_SUBSTITUTIONS = 15, /* "substitutions": the kept candidates */
  TASO_GENERATE_COUNTS = 16
};
extern const char *const taso_generate_count_names[TASO_GENERATE_COUNTS];

typedef struct {
  taso_fp_inputs_t rnd; /* the inputs the fingerprints are taken on */
  taso_cand_t *cands;   /* the kept candidates first (kept of them), sorted */
  int64_t ncands, kept;
  taso_pruned_t *pruned; /* every pruned pair, on every rank */
  int64_t npruned;
  int64_t counts[TASO_GENERATE_COUNTS];
  char timing[640];  /* the walk's and stages' seconds, for the report */
  int stopped_level; /* > 0: the run stopped there (until_level); no candidates */
} taso_generate_result_t;

/* Collective over o->comm; every rank gets the whole result (errors
 * agreed, taso_agree). Prints the stages' lines on rank 0's stdout and
 * progress on its stderr. */
taso_err_t taso_generate(const taso_generate_opts_t *o, taso_generate_result_t *r);
void taso_generate_result_free(taso_generate_result_t *r);

#endif
