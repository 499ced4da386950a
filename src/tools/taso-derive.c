/*
 * taso-derive: the completeness check of the generator's pruning. Every
 * pair taso-generate dropped (a common subgraph, independent parts, or
 * implied by kept ones; the /pruned rows of candidates.h5) must be one the
 * optimizer's rewrite engine re-derives from the kept substitutions: the
 * bounded search of derive.h, with each kept rule applied in both
 * directions as the optimizer applies it: inside the shape relation it was
 * proved under, or where the rule guard proves it at the match's own
 * relation (guard_open.h; --no-guard: the recorded relation only). The
 * job (--job, else the one the candidates were generated from) gives the
 * axioms, the [verify] limits and the [generate] derive_* bounds.
 *
 * Each pair is derived from the kept substitutions the generator derived
 * it from (the first rows of the file: /pruned's rules), with the same
 * search, so the same step count is expected; the check is that the
 * rewrites exist and are ones the optimizer performs.
 *
 * Prints the histogram of derivation steps per reason and every pair not
 * derived; exits TASO_EXIT_FINDINGS when there is one. Ranks share the
 * pairs by blocks; the result does not depend on the rank count.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "derive_guard.h"
#include "tool.h"

static const char *steps_opt, *extra_opt, *nodes_opt, *against_opt;
static bool proved_opt;
static bool no_guard;
static const taso_tool_option_t options[] = {
    {"steps", "N",
     "rewrites a derivation may take, both sides together (default: the job's "
     "derive_steps)",
     &steps_opt},
    {"extra-ops", "N",
     "operators past the larger side in intermediate graphs (default: the job's "
     "derive_extra_ops)",
     &extra_opt},
    {"nodes", "N", "graphs per side of one search (default: the job's derive_nodes)", &nodes_opt},
    {"against", "FILE",
     "instead of the pruned pairs, check every substitution kept in FILE (candidates "
     "of the same inputs, e.g. an exhaustive run): in the input's kept set, or derived from it",
     &against_opt},
    {0},
};
static const taso_tool_flag_t flags[] = {
    {"proved",
     "with --against: IN and FILE are taso-verify outputs, and only their proved "
     "substitutions count (the rules the optimizer applies)",
     &proved_opt},
    {"no-guard", "rules only inside their recorded shape relations (no re-proofs)", &no_guard},
    {0},
};

static const taso_tool_spec_t spec = {
    .name = "taso-derive",
    .about = "Checks that every pair taso-generate pruned (common subgraph, independent\n"
             "parts, implied) is re-derived from the kept substitutions by the optimizer's\n"
             "rewrite engine (both directions; inside each rule's proved shape relation,\n"
             "or where the optimizer's rule guard re-proves it), by a bounded bidirectional\n"
             "search. Prints the histogram of steps and the pairs not derived (exit 3 when\n"
             "there are any).\n"
             "With --against FULL.h5: every substitution kept in FULL.h5 instead (another\n"
             "generator run over the same inputs, e.g. method = exhaustive) must be in the\n"
             "input's kept set or derived from all of it: whether a smaller set loses one.\n",
    .job_help = "job file: axioms, [verify] limits, [generate] derive_* (default: the one "
                "the candidates were generated from)",
    .in_help = "candidates artifact of taso-generate (with its /pruned rows)",
    .default_in = "candidates.h5",
    .in_positional = true,
    .options = options,
    .flags = flags,
};

#define MAX_STEPS TASO_MAX_DERIVE_STEPS

/* The job given, else the one the candidates were generated from (its
 * recorded text). */
static taso_err_t load_job(taso_tool_t *t, taso_artifact_t *a) {
  if (t->job_path) return taso_tool_load_job(t, t->job_path);
  char *recorded = NULL, *text = NULL;
  taso_err_t err = taso_artifact_get_string(a, "job_path", &recorded);
  if (err == TASO_OK) err = taso_artifact_get_string(a, "job_text", &text);
  if (err == TASO_OK && !recorded[0])
    err = taso_error(TASO_ERR_FORMAT, "%s records no job file; pass --job FILE", t->in_path);
  /* the job as it was then, not as edited since */
  if (err == TASO_OK && (err = taso_tool_load_recorded_job(t, recorded, text)) != TASO_OK)
    err = taso_error_prefix(
        err, "no --job given, and the job %s was generated from cannot be read: ", t->in_path);
  free(recorded);
  free(text);
  return err;
}

/* The kept candidates of an opened artifact, in their order (graphs over
 * in, its input table); with --proved, its proved substitutions only. */
static taso_err_t read_kept(taso_tool_t *t, taso_artifact_t *a, const char *path,
                            const taso_inputs_t *in, taso_cand_t **cands, int64_t *ncands) {
  taso_graph_t *graphs = NULL;
  taso_subst_t *rows = NULL;
  int64_t ngraphs = 0, nrows = 0;
  taso_err_t err = TASO_OK;
  TASO_TOOL_STEP(t, err, taso_artifact_read_graphs(a, &graphs, &ngraphs));
  TASO_TOOL_STEP(t, err, taso_artifact_read_substs(a, &rows, &nrows));
  *cands = err == TASO_OK ? calloc((size_t)nrows + 1, sizeof **cands) : NULL;
  if (err == TASO_OK && !*cands) err = taso_error(TASO_ERR_NOMEM, "candidates");
  *ncands = 0;
  for (int64_t i = 0; i < nrows && err == TASO_OK; i++) {
    char *key = NULL;
    if (proved_opt && rows[i].verdict != TASO_VERDICT_PROVED) continue;
    if (rows[i].src < 0 || rows[i].src >= ngraphs || rows[i].dst < 0 || rows[i].dst >= ngraphs)
      err =
          taso_error(TASO_ERR_PARSE, "%s: row %lld names graphs out of range", path, (long long)i);
    if (err == TASO_OK)
      err = taso_cand_key(in, &graphs[rows[i].src], &graphs[rows[i].dst], false, &key);
    if (err == TASO_OK) err = taso_cand_parse(in, key, &(*cands)[(*ncands)++]);
  }
  free(rows);
  taso_graphs_free(graphs, ngraphs);
  return err;
}

/* The kind of artifact both inputs are: verified ones with --proved. */
static const char *kind(void) {
  return proved_opt ? TASO_KIND_SUBSTITUTIONS : TASO_KIND_CANDIDATES;
}

/* Reads the kept candidates, in their order, and (unless against) every
 * pruned row. */
static taso_err_t load(taso_tool_t *t, taso_inputs_t *in, taso_cand_t **cands, int64_t *ncands,
                       taso_pruned_t **pruned, int64_t *npruned, bool against) {
  taso_artifact_t *a = NULL;
  taso_err_t err = TASO_OK;
  TASO_TOOL_STEP(t, err, taso_artifact_open(t->comm, t->in_path, kind(), &a));
  TASO_TOOL_STEP(t, err, load_job(t, a));
  TASO_TOOL_STEP(t, err, taso_artifact_read_inputs(a, in));
  if (!against) {
    TASO_TOOL_STEP(t, err, taso_artifact_table_length(a, &taso_pruned_table, npruned));
    if (err == TASO_OK && *npruned == 0)
      err = taso_error(TASO_ERR_PARSE,
                       "%s: no /pruned rows: written by an older taso-generate, "
                       "or nothing was pruned; generate it again",
                       t->in_path);
    TASO_TOOL_STEP(t, err,
                   taso_artifact_read_table(a, &taso_pruned_table, 0, *npruned, (void **)pruned));
  }
  TASO_TOOL_STEP(t, err, read_kept(t, a, t->in_path, in, cands, ncands));
  err = taso_tool_close(t, &a, err);
  return taso_tool_agree(t, err);
}

/* Whether two input tables are the same: names and shapes in order. */
static bool same_inputs(const taso_inputs_t *a, const taso_inputs_t *b) {
  if (a->n != b->n) return false;
  for (int i = 0; i < a->n; i++)
    if (strcmp(a->v[i].name, b->v[i].name) || !taso_tensor_equal(&a->v[i].type, &b->v[i].type))
      return false;
  return true;
}

/* --against: the kept substitutions of another artifact over the same
 * inputs, as rows to derive (reason TASO_PRUNED_COMMON, unused; rules 0:
 * every kept substitution of the input). */
static taso_err_t load_against(taso_tool_t *t, const char *path, const taso_inputs_t *in,
                               taso_pruned_t **rows, int64_t *nrows) {
  taso_artifact_t *a = NULL;
  taso_inputs_t other = {0};
  taso_cand_t *cands = NULL;
  int64_t n = 0;
  taso_err_t err = TASO_OK;
  TASO_TOOL_STEP(t, err, taso_artifact_open(t->comm, path, kind(), &a));
  TASO_TOOL_STEP(t, err, taso_artifact_read_inputs(a, &other));
  if (err == TASO_OK && !same_inputs(in, &other))
    err = taso_error(TASO_ERR_FORMAT,
                     "--against %s: its input table differs from %s's: the sets are "
                     "over other tensors",
                     path, t->in_path);
  TASO_TOOL_STEP(t, err, read_kept(t, a, path, in, &cands, &n));
  err = taso_tool_close(t, &a, err);
  *rows = err == TASO_OK ? calloc((size_t)n + 1, sizeof **rows) : NULL;
  if (err == TASO_OK && !*rows) err = taso_error(TASO_ERR_NOMEM, "substitutions of %s", path);
  *nrows = 0;
  for (int64_t i = 0; i < n && err == TASO_OK; i++) {
    if (strlen(cands[i].key) >= TASO_PRUNED_TEXT)
      err = taso_error(TASO_ERR_LIMIT, "%s: substitution over %d characters: %s", path,
                       TASO_PRUNED_TEXT - 1, cands[i].key);
    else
      strcpy((*rows)[(*nrows)++].text, cands[i].key);
  }
  for (int64_t i = 0; i < n; i++)
    taso_cand_free(&cands[i]);
  free(cands);
  taso_inputs_free(&other);
  return taso_tool_agree(t, err);
}

static int key_cmp(const void *a, const void *b) {
  return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Derives this rank's block of the rows: steps[i] for row lo + i. keys
 * (sorted, nkeys; --against): the kept set's texts, a row among them is
 * in the set (0 steps, no search). */
static taso_err_t derive_block(taso_tool_t *t, const taso_inputs_t *in,
                               const taso_derive_opts_t *opts, const taso_cand_t *cands,
                               int64_t ncands, const taso_pruned_t *pruned, int64_t lo, int64_t hi,
                               char **keys, int64_t nkeys, int32_t *steps) {
  taso_deriver_t *d = NULL;
  taso_err_t err = taso_deriver_create(in, opts, &d);
  taso_progress_t progress;
  taso_progress_begin(&progress, t, "pruned pairs derived (rank 0's share)", hi - lo);
  for (int64_t i = lo; i < hi && err == TASO_OK; i++) {
    const char *row = pruned[i].text;
    if (keys && bsearch(&row, keys, (size_t)nkeys, sizeof *keys, key_cmp)) {
      steps[i] = 0;
      taso_progress_update(&progress, i - lo + 1);
      continue;
    }
    taso_cand_t c;
    char *text = malloc(strlen(pruned[i].text) + 1);
    if (!text) {
      err = taso_error(TASO_ERR_NOMEM, "pruned pair");
      break;
    }
    strcpy(text, pruned[i].text);
    err = taso_cand_parse(in, text, &c);
    if (err != TASO_OK)
      err = taso_error_prefix(err, "%s: pruned pair '%s': ", t->in_path, pruned[i].text);
    int s = -1;
    /* the kept substitutions the generator derived it from (derive.h) */
    int64_t nrules = pruned[i].rules > 0 && pruned[i].rules <= ncands ? pruned[i].rules : ncands;
    if (err == TASO_OK) err = taso_derive(d, cands, nrules, &c.src, &c.dst, &s);
    steps[i] = s;
    taso_cand_free(&c);
    taso_progress_update(&progress, i - lo + 1);
  }
  taso_deriver_free(d);
  return err;
}

static int option_int(taso_tool_t *t, const char *name, const char *text, int dflt, int lo,
                      int hi) {
  if (!text) return dflt;
  char *end;
  long v = strtol(text, &end, 10);
  if (*end || v < lo || v > hi)
    taso_tool_usage_error(t, "--%s %s: give a number from %d to %d", name, text, lo, hi);
  return (int)v;
}

/* Rank 0: the histogram per reason and the pairs not derived. */
static int64_t report(taso_tool_t *t, const taso_pruned_t *pruned, const int32_t *steps, int64_t n,
                      int max_steps) {
  int64_t hist[3][MAX_STEPS + 2] = {{0}}, failed = 0; /* last column: not derived */
  for (int64_t i = 0; i < n; i++) {
    int r = pruned[i].reason >= 0 && pruned[i].reason < 3 ? pruned[i].reason : 0;
    hist[r][steps[i] < 0 ? MAX_STEPS + 1 : steps[i]]++;
    failed += steps[i] < 0;
  }
  taso_tool_print(t, "derivation steps per pruned pair (one per pattern), at most %d:\n",
                  max_steps);
  taso_tool_print(t, "  %-18s", "reason");
  for (int s = 0; s <= max_steps; s++)
    taso_tool_print(t, " %7d", s);
  taso_tool_print(t, " %7s\n", "failed");
  for (int r = 0; r < 3; r++) {
    taso_tool_print(t, "  %-18s", taso_pruned_reason(r));
    for (int s = 0; s <= max_steps; s++)
      taso_tool_print(t, " %7lld", (long long)hist[r][s]);
    taso_tool_print(t, " %7lld\n", (long long)hist[r][MAX_STEPS + 1]);
  }
  int64_t other = 0; /* derived, in another count than the generator's: its verdicts differed */
  for (int64_t i = 0; i < n; i++) {
    if (steps[i] < 0)
      taso_tool_print(t, "not derived (%s): %s\n", taso_pruned_reason(pruned[i].reason),
                      pruned[i].text);
    other += steps[i] >= 0 && steps[i] != pruned[i].steps;
  }
  taso_tool_print(t, "%lld derived in another number of steps than taso-generate recorded\n",
                  (long long)other);
  return failed;
}

/* Rank 0, --against: the histogram of the other set's substitutions and
 * the ones not derived. */
static int64_t report_against(taso_tool_t *t, const taso_pruned_t *rows, const int32_t *steps,
                              int64_t n, int max_steps) {
  int64_t hist[MAX_STEPS + 2] = {0}, failed = 0; /* 0: in the set; last: not derived */
  for (int64_t i = 0; i < n; i++) {
    hist[steps[i] < 0 ? MAX_STEPS + 1 : steps[i]]++;
    failed += steps[i] < 0;
  }
  taso_tool_print(
      t, "substitutions of %s: in %s's kept set, or derived from it in N steps (at most %d):\n",
      against_opt, t->in_path, max_steps);
  taso_tool_print(t, "  %7s", "in set");
  for (int s = 1; s <= max_steps; s++)
    taso_tool_print(t, " %7d", s);
  taso_tool_print(t, " %7s\n  %7lld", "failed", (long long)hist[0]);
  for (int s = 1; s <= max_steps; s++)
    taso_tool_print(t, " %7lld", (long long)hist[s]);
  taso_tool_print(t, " %7lld\n", (long long)hist[MAX_STEPS + 1]);
  for (int64_t i = 0; i < n; i++)
    if (steps[i] < 0) taso_tool_print(t, "not derived: %s\n", rows[i].text);
  return failed;
}

int main(int argc, char **argv) {
  taso_tool_t t;
  taso_tool_init(&t, &spec, &argc, &argv);
  taso_inputs_t in = {0};
  taso_cand_t *cands = NULL;
  taso_pruned_t *pruned = NULL;
  int64_t ncands = 0, npruned = 0, lo = 0, hi = 0, failed = 0;
  taso_axioms_t *ax = NULL;
  taso_rule_guard_t *guard = NULL;
  char **keys = NULL; /* --against: the kept set's texts, sorted */
  if (proved_opt && !against_opt)
    taso_tool_usage_error(&t, "--proved needs --against (pruned pairs are checked in candidates)");
  taso_err_t err = load(&t, &in, &cands, &ncands, &pruned, &npruned, against_opt != NULL);
  if (err == TASO_OK && against_opt) {
    err = load_against(&t, against_opt, &in, &pruned, &npruned);
    if (err == TASO_OK && !(keys = calloc((size_t)ncands + 1, sizeof *keys)))
      err = taso_error(TASO_ERR_NOMEM, "substitution texts");
    for (int64_t i = 0; err == TASO_OK && i < ncands; i++)
      keys[i] = cands[i].key;
    if (keys && ncands > 1) qsort(keys, (size_t)ncands, sizeof *keys, key_cmp);
    err = taso_tool_agree(&t, err);
  }
  if (err == TASO_OK && !no_guard) {
    char path[1024];
    taso_tool_axioms_path(&t, NULL, path, sizeof path);
    err = taso_tool_agree(&t, taso_tool_guard_open(&t, path, &in, &ax, &guard));
  }
  /* the job's bounds, then the command line's */
  taso_derive_opts_t opts;
  taso_tool_derive_opts(&t, guard, &opts);
  opts.max_steps = option_int(&t, "steps", steps_opt, opts.max_steps, 1, MAX_STEPS);
  opts.extra_ops = option_int(&t, "extra-ops", extra_opt, opts.extra_ops, 0, 8);
  if (extra_opt && opts.extra_ops == 0) opts.extra_ops = -1; /* derive.h: -1 for none */
  opts.max_nodes = option_int(&t, "nodes", nodes_opt, opts.max_nodes, 1, 100000000);
  int32_t *steps = err == TASO_OK ? calloc((size_t)npruned + 1, sizeof *steps) : NULL;
  if (err == TASO_OK && !steps) err = taso_error(TASO_ERR_NOMEM, "steps");
  err = taso_tool_agree(&t, err);
  if (err == TASO_OK) {
    taso_tool_block(&t, npruned, &lo, &hi);
    err = taso_tool_agree(
        &t, derive_block(&t, &in, &opts, cands, ncands, pruned, lo, hi, keys, ncands, steps));
  }
  if (err == TASO_OK) {
    /* every rank's block into place on rank 0: the others left theirs at 0 */
    for (int64_t i = 0; i < npruned; i++)
      if (i < lo || i >= hi) steps[i] = 0;
    for (int64_t at = 0; at < npruned; at += 1 << 28)
      MPI_Allreduce(MPI_IN_PLACE, steps + at,
                    (int)(npruned - at < (1 << 28) ? npruned - at : 1 << 28), MPI_INT32_T, MPI_SUM,
                    t.comm);
    failed = against_opt ? report_against(&t, pruned, steps, npruned, opts.max_steps)
                         : report(&t, pruned, steps, npruned, opts.max_steps);
    if (guard) {
      taso_rule_guard_stats_t g;
      taso_rule_guard_stats(guard, &g);
      taso_tool_guard_print(&t, "taso-derive: rule guard (rank 0)", &g);
    }
    const char *what = against_opt ? "substitutions of the other set" : "pruned pairs";
    if (failed)
      snprintf(t.findings, sizeof t.findings, "%lld of %lld %s not derived", (long long)failed,
               (long long)npruned, what);
    taso_tool_summary(&t, "%lld %s, %lld %sderived from %lld kept substitutions",
                      (long long)npruned, what, (long long)(npruned - failed),
                      against_opt ? "in the set or " : "", (long long)ncands);
  }
  taso_guard_close(ax, guard);
  for (int64_t i = 0; i < ncands; i++)
    taso_cand_free(&cands[i]);
  free(cands);
  free(keys);
  free(pruned);
  free(steps);
  taso_inputs_free(&in);
  return taso_tool_finish(&t, err);
}
