/*
 * taso-verify: the second stage. It will prove every candidate substitution
 * from the axioms with Z3, recording proved, unknown (timeout) or refuted.
 *
 * The prover arrives with its own issue. Until then this copies the
 * candidates file's inputs, graphs and rows into a substitutions artifact
 * with every verdict unchanged, and counts the verdicts it copied, so the
 * file layout, the sharding and the counts already work as they will.
 */
#include <stdlib.h>
#include <string.h>

#include "tool.h"

static const taso_tool_spec_t spec = {
    .name = "taso-verify",
    .about = "Proves every candidate substitution from the axioms with Z3 and records\n"
             "each verdict: proved, unknown (solver timeout) or refuted.\n"
             "\n"
             "Stage logic: not yet implemented, writes candidates through unverified.\n"
             "The output holds the input's graphs and rows with their verdicts unchanged.\n"
             "\n"
             "Without --job, the job file recorded in the candidates file is loaded.\n",
    .job_help = "job file: axioms and the timeout per query",
    .in_help = "candidates artifact to verify",
    .out_help = "substitutions artifact to write",
    .default_in = "candidates.h5",
    .default_out = "substitutions.h5",
    .threads = true,
};

/* The job is the one given, else the one the candidates were generated
 * from, so that a plain `taso-verify` continues the same run. */
static taso_err_t load_job(taso_tool_t *t, taso_artifact_t *in) {
  char *recorded_path = NULL, *recorded_text = NULL;
  taso_err_t err = TASO_OK;
  TASO_TOOL_STEP(t, err, taso_artifact_get_string(in, "job_path", &recorded_path));
  TASO_TOOL_STEP(t, err, taso_artifact_get_string(in, "job_text", &recorded_text));
  if (err == TASO_OK && t->job_path) {
    err = taso_tool_load_job(t, t->job_path);
  } else if (err == TASO_OK) {
    if (recorded_path[0] == '\0')
      err = taso_tool_agree(
          t, taso_error(TASO_ERR_FORMAT, "%s records no job file; pass --job FILE", t->in_path));
    else if ((err = taso_tool_load_job(t, recorded_path)) != TASO_OK)
      err = taso_error_prefix(err,
                              "no --job given, and the job %s was generated from "
                              "cannot be loaded: ",
                              t->in_path);
  }
  if (err == TASO_OK && strcmp(t->job.text, recorded_text) != 0)
    taso_tool_warn(t, "%s differs from the job file %s was generated from (%s)", t->job.path,
                   t->in_path, recorded_path);
  free(recorded_path);
  free(recorded_text);
  return err;
}

int main(int argc, char **argv) {
  taso_tool_t t;
  taso_tool_init(&t, &spec, &argc, &argv);

  taso_artifact_t *in = NULL, *out = NULL;
  taso_inputs_t inputs = {0};
  taso_graph_t *graphs = NULL;
  taso_subst_t *rows = NULL;
  int64_t ngraphs = 0, nrows = 0, first = 0;
  int64_t verdicts[TASO_VERDICT_REFUTED + 1] = {0};
  taso_provenance_t prov;
  taso_err_t err = TASO_OK;

  TASO_TOOL_STEP(&t, err, taso_artifact_open(t.comm, t.in_path, TASO_KIND_CANDIDATES, &in));
  if (err == TASO_OK) err = load_job(&t, in);
  TASO_TOOL_STEP(&t, err, taso_artifact_read_inputs(in, &inputs));
  TASO_TOOL_STEP(&t, err, taso_artifact_read_graphs(in, &graphs, &ngraphs));
  TASO_TOOL_STEP(&t, err, taso_artifact_read_substs(in, &rows, &nrows));
  err = taso_tool_close(&t, &in, err);

  /* Every rank holds every row; each decides and writes its own block, as
   * the prover will, and the counts are summed across ranks. */
  int64_t glo, ghi, rlo, rhi;
  taso_tool_block(&t, ngraphs, &glo, &ghi);
  taso_tool_block(&t, nrows, &rlo, &rhi);
  if (err == TASO_OK) {
    taso_progress_t progress;
    taso_progress_begin(&progress, &t, "candidate rows (rank 0's share)", rhi - rlo);
    for (int64_t i = rlo; i < rhi; i++) {
      verdicts[rows[i].verdict]++;
      taso_progress_update(&progress, i - rlo + 1);
    }
    MPI_Allreduce(MPI_IN_PLACE, verdicts, TASO_VERDICT_REFUTED + 1, MPI_INT64_T, MPI_SUM, t.comm);
  }

  taso_tool_provenance(&t, &prov);
  TASO_TOOL_STEP(&t, err,
                 taso_artifact_create(t.comm, t.out_path, TASO_KIND_SUBSTITUTIONS, &prov, &out));
  TASO_TOOL_STEP(&t, err, taso_artifact_write_inputs(out, &inputs));
  /* Blocks follow rank order, so graph i keeps index i and the rows'
   * src/dst stay valid. (NULL + 0 is undefined, hence the checks.) */
  TASO_TOOL_STEP(&t, err,
                 taso_artifact_write_graphs(out, graphs ? graphs + glo : NULL, ghi - glo, &first));
  TASO_TOOL_STEP(&t, err, taso_artifact_write_substs(out, rows ? rows + rlo : NULL, rhi - rlo));
  TASO_TOOL_STEP(&t, err, taso_artifact_set_count(out, "proved", verdicts[TASO_VERDICT_PROVED]));
  TASO_TOOL_STEP(&t, err, taso_artifact_set_count(out, "unknown", verdicts[TASO_VERDICT_UNKNOWN]));
  TASO_TOOL_STEP(&t, err, taso_artifact_set_count(out, "refuted", verdicts[TASO_VERDICT_REFUTED]));
  TASO_TOOL_STEP(&t, err,
                 taso_artifact_set_count(out, "unverified", verdicts[TASO_VERDICT_CANDIDATE]));
  err = taso_tool_close(&t, &out, err);

  if (err == TASO_OK)
    taso_tool_summary(&t,
                      "%lld candidates: %lld proved, %lld unknown, %lld refuted, "
                      "%lld unverified -> %s",
                      (long long)nrows, (long long)verdicts[TASO_VERDICT_PROVED],
                      (long long)verdicts[TASO_VERDICT_UNKNOWN],
                      (long long)verdicts[TASO_VERDICT_REFUTED],
                      (long long)verdicts[TASO_VERDICT_CANDIDATE], t.out_path);
  free(rows);
  taso_graphs_free(graphs, ngraphs);
  taso_inputs_free(&inputs);
  return taso_tool_finish(&t, err);
}
