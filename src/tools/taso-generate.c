/*
 * taso-generate: the first stage. Enumerates every graph of up to max_ops
 * operators over the job's inputs and operators, fingerprints them, pairs
 * graphs that compute the same outputs into candidate substitutions, prunes
 * the redundant ones and writes candidates.h5. The work is the driver's
 * (src/enum/generate.h); this tool checks the job and --out before it,
 * opens the rule guard the implication stage derives through, and writes
 * the result collectively.
 */
#define _POSIX_C_SOURCE 200809L /* access */

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "checkpoint.h"
#include "derive_guard.h"
#include "generate.h"
#include "tool.h"

static const char *until_level;
static const taso_tool_option_t options[] = {
    {"until-level", "K",
     "method = representatives: stop once level K is checkpointed (OUT.levels); a later run "
     "resumes there",
     &until_level},
    {0}};

static const taso_tool_spec_t spec = {
    .name = "taso-generate",
    .about = "Enumerates every graph of up to max_ops operators over the job's inputs and\n"
             "operators, fingerprints them exactly in GF(2^61-1), pairs graphs with equal\n"
             "fingerprints into candidate substitutions, prunes common subgraphs,\n"
             "independent parts, duplicates under input renaming (at any input shapes)\n"
             "and candidates implied by kept ones, re-checks the kept ones exactly, and\n"
             "writes them with per-stage counts.\n"
             "Ranks share the enumeration by weighted shards; the result does not depend\n"
             "on the rank count.\n",
    .job_help = "job file: inputs, operators and max_ops of the enumeration",
    .out_help = "candidates artifact to write",
    .default_out = "candidates.h5",
    .out_kind = TASO_KIND_CANDIDATES,
    .fresh_help =
        "replace --out even if it holds another job's candidates (never another kind of file)",
    .job_required = true,
    .threads = true,
    .options = options,
};

/* Writes the kept candidates: graphs 2k and 2k + 1 are candidate k's source
 * and target; each rank writes a block. */
static taso_err_t write_output(taso_tool_t *t, const taso_generate_result_t *r) {
  const taso_fp_inputs_t *rnd = &r->rnd;
  const taso_cand_t *cands = r->cands;
  int64_t n = r->kept;
  int64_t lo, hi, first = 0;
  taso_tool_block(t, n, &lo, &hi);
  int64_t mine = hi - lo;
  taso_graph_t *graphs = calloc((size_t)(2 * mine + 1), sizeof *graphs);
  uint64_t(*fps)[2] = calloc((size_t)(2 * mine + 1), sizeof *fps);
  taso_subst_t *rows = calloc((size_t)(mine + 1), sizeof *rows);
  taso_err_t err = (graphs && fps && rows) ? TASO_OK : taso_error(TASO_ERR_NOMEM, "output");
  for (int64_t i = 0; i < mine && err == TASO_OK; i++)
    for (int side = 0; side < 2 && err == TASO_OK; side++) {
      const taso_cand_t *k = &cands[lo + i];
      graphs[2 * i + side] = side ? k->dst : k->src; /* shallow: not freed here */
      taso_fingerprint_t fp;
      err = taso_fingerprint_graph(rnd, side ? &k->dst : &k->src, side ? k->tdst : k->tsrc, &fp,
                                   NULL);
      fps[2 * i + side][0] = fp.h[0];
      fps[2 * i + side][1] = fp.h[1];
    }
  taso_artifact_t *a = NULL;
  taso_provenance_t prov;
  taso_tool_provenance(t, &prov);
  err = taso_tool_agree(t, err);
  /* Beside --out until complete: a failure leaves the previous file. */
  TASO_TOOL_STEP(t, err,
                 taso_artifact_create(t->comm, t->tmp_path, TASO_KIND_CANDIDATES, &prov, &a));
  TASO_TOOL_STEP(t, err, taso_artifact_write_inputs(a, &t->job.inputs));
  TASO_TOOL_STEP(t, err, taso_artifact_write_graphs(a, graphs, 2 * mine, &first));
  TASO_TOOL_STEP(t, err, taso_artifact_write_fingerprints(a, (const uint64_t(*)[2])fps, 2 * mine));
  for (int64_t i = 0; i < mine; i++)
    rows[i] = (taso_subst_t){.src = first + 2 * i,
                             .dst = first + 2 * i + 1,
                             .verdict = TASO_VERDICT_CANDIDATE,
                             .seconds = 0};
  TASO_TOOL_STEP(t, err, taso_artifact_write_substs(a, rows, mine));
  /* the pruned pairs, for the completeness check: every rank holds them all */
  int64_t plo, phi;
  taso_tool_block(t, r->npruned, &plo, &phi);
  TASO_TOOL_STEP(t, err,
                 taso_artifact_write_table(a, &taso_pruned_table, r->pruned + plo, phi - plo, plo,
                                           r->npruned));
  for (int i = 0; i < TASO_GENERATE_COUNTS; i++)
    TASO_TOOL_STEP(t, err, taso_artifact_set_count(a, taso_generate_count_names[i], r->counts[i]));
  err = taso_tool_close(t, &a, err);
  TASO_TOOL_STEP(t, err, taso_tool_commit_output(t));
  free(graphs);
  free(fps);
  free(rows);
  return err;
}

/* Collective. Candidates of the same job text may be replaced (they come
 * out the same); those of another job are another plan's results. */
static taso_err_t check_plan(taso_tool_t *t) {
  int have = t->rank == 0 && !t->fresh && access(t->out_path, F_OK) == 0;
  MPI_Bcast(&have, 1, MPI_INT, 0, t->comm);
  if (!have) return TASO_OK;
  taso_artifact_t *a = NULL;
  char *text = NULL, *path = NULL;
  taso_err_t err = TASO_OK;
  TASO_TOOL_STEP(t, err, taso_artifact_open(t->comm, t->out_path, TASO_KIND_CANDIDATES, &a));
  TASO_TOOL_STEP(t, err, taso_artifact_get_string(a, "job_text", &text));
  TASO_TOOL_STEP(t, err, taso_artifact_get_string(a, "job_path", &path));
  if (err == TASO_OK && strcmp(text, t->job.text) != 0)
    err = taso_tool_refuse(t, t->out_path, "the candidates of another job (%s)", path);
  err = taso_tool_close(t, &a, err);
  free(text);
  free(path);
  return taso_tool_agree(t, err);
}

int main(int argc, char **argv) {
  taso_tool_t t;
  taso_tool_init(&t, &spec, &argc, &argv);
  taso_err_t err = taso_tool_load_job(&t, t.job_path);
  int stop = 0;
  if (until_level) {
    char *end = NULL;
    long k = strtol(until_level, &end, 10);
    if (!*until_level || *end || k < 1 || k > 64)
      taso_tool_usage_error(&t, "--until-level %s: expected a level from 1 on", until_level);
    stop = (int)k;
  }
  if (err == TASO_OK && stop &&
      (strcmp(t.job.method, "representatives") != 0 || stop >= t.job.max_ops))
    err = taso_error(TASO_ERR_ARG,
                     "%s: --until-level %d: only levels below the last (max_ops %d) of method = "
                     "representatives are checkpointed",
                     t.job.path, stop, t.job.max_ops);
  /* What to enumerate has no sensible default: an empty job file is a
   * mistake, not a request for nothing. */
  if (err == TASO_OK && t.job.inputs.n == 0)
    err = taso_error(TASO_ERR_PARSE,
                     "%s: no [inputs]: name the tensors to enumerate over "
                     "(see jobs/smoke.ini)",
                     t.job.path);
  if (err == TASO_OK && !taso_job_given(&t.job, "generate", "operators"))
    err = taso_error(TASO_ERR_PARSE,
                     "%s: no [generate] operators: name the operators to "
                     "enumerate (see jobs/smoke.ini)",
                     t.job.path);
  if (err == TASO_OK) {
    taso_tool_note_defaults(&t, "job", NULL);
    taso_tool_note_defaults(&t, "generate", NULL);
  }
  /* Every check of --out before the enumeration, which can take hours. */
  TASO_TOOL_STEP(&t, err, taso_tool_claim_output(&t));
  TASO_TOOL_STEP(&t, err, check_plan(&t));
  /* the implication stage derives as the optimizer rewrites: through the
   * rule guard (rule ids: places in the candidates, the same in both
   * stages) */
  taso_axioms_t *ax = NULL;
  taso_rule_guard_t *guard = NULL;
  if (err == TASO_OK) {
    char path[1024];
    taso_tool_axioms_path(&t, NULL, path, sizeof path);
    err = taso_tool_agree(&t, taso_tool_guard_open(&t, path, &t.job.inputs, &ax, &guard));
  }
  /* level checkpoints beside --out: OUT.levels, resumed unless --fresh */
  char levels[4200];
  snprintf(levels, sizeof levels, "%s.levels", t.out_path);
  if (err == TASO_OK && t.fresh && t.rank == 0) taso_checkpoint_remove(levels);
  taso_generate_opts_t o = {
      .comm = t.comm, .job = &t.job, .name = spec.name, .checkpoint = levels, .until_level = stop};
  taso_tool_derive_opts(&t, guard, &o.derive);
  taso_generate_result_t r;
  memset(&r, 0, sizeof r);
  TASO_TOOL_STEP(&t, err, taso_generate(&o, &r));
  taso_rule_guard_stats_t gst = {0};
  if (guard) taso_rule_guard_stats(guard, &gst);
  taso_guard_close(ax, guard);
  if (err == TASO_OK && r.stopped_level) {
    taso_tool_summary(&t,
                      "levels 1 to %d checkpointed in %s; run again (without --until-level, "
                      "or with a later level) to go on from there",
                      r.stopped_level, levels);
    taso_generate_result_free(&r);
    return taso_tool_finish(&t, err);
  }
  if (err == TASO_OK) err = write_output(&t, &r);
  if (err == TASO_OK && t.rank == 0) taso_checkpoint_remove(levels); /* --out holds it all */
  if (err == TASO_OK) {
    for (int i = 0; i < TASO_GENERATE_COUNTS; i++)
      taso_tool_print(&t, "  %-26s %lld\n", taso_generate_count_names[i], (long long)r.counts[i]);
    taso_tool_print(&t, "%s\n", r.timing);
    taso_tool_guard_print(&t, "  rule guard (rank 0)", &gst);
    taso_tool_summary(&t, "%lld graphs, %lld candidate pairs, %lld substitutions -> %s",
                      (long long)r.counts[TASO_GENERATE_GRAPHS],
                      (long long)r.counts[TASO_GENERATE_PAIRS], (long long)r.kept, t.out_path);
  }
  taso_generate_result_free(&r);
  return taso_tool_finish(&t, err);
}
