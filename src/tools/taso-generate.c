/*
 * taso-generate: the first stage. It will enumerate every graph over the
 * job's inputs and operators, fingerprint them, and pair graphs that compute
 * the same function into candidate substitutions.
 *
 * The enumeration arrives with its own issue. Until then this writes a
 * valid candidates artifact with the job's input table and empty graph and
 * substitution sets, so that the later stages, the scripts and the tests
 * have a real file to run on.
 */
#include "tool.h"

static const taso_tool_spec_t spec = {
    .name = "taso-generate",
    .about = "Enumerates graphs over the job's inputs and operators and pairs the ones\n"
             "with equal fingerprints into candidate substitutions.\n"
             "\n"
             "Stage logic: not yet implemented. It writes a valid candidates file with\n"
             "the job's input table and no graphs or substitutions.\n",
    .job_help = "job file: inputs, operators and limits of the enumeration",
    .out_help = "candidates artifact to write",
    .default_out = "candidates.h5",
    .job_required = true,
    .threads = true,
};

int main(int argc, char **argv) {
  taso_tool_t t;
  taso_tool_init(&t, &spec, &argc, &argv);

  taso_artifact_t *a = NULL;
  taso_provenance_t prov;
  int64_t first = 0;
  const int64_t graphs = 0, pairs = 0, substs = 0;
  taso_err_t err = taso_tool_load_job(&t, t.job_path);
  taso_tool_provenance(&t, &prov);
  TASO_TOOL_STEP(&t, err,
                 taso_artifact_create(t.comm, t.out_path, TASO_KIND_CANDIDATES, &prov, &a));
  TASO_TOOL_STEP(&t, err, taso_artifact_write_inputs(a, &t.job.inputs));
  /* Empty sets are still written, so that readers find every dataset. */
  TASO_TOOL_STEP(&t, err, taso_artifact_write_graphs(a, NULL, 0, &first));
  TASO_TOOL_STEP(&t, err, taso_artifact_write_substs(a, NULL, 0));
  TASO_TOOL_STEP(&t, err, taso_artifact_set_count(a, "graphs_enumerated", graphs));
  TASO_TOOL_STEP(&t, err, taso_artifact_set_count(a, "candidate_pairs", pairs));
  TASO_TOOL_STEP(&t, err, taso_artifact_set_count(a, "substitutions", substs));
  err = taso_tool_close(&t, &a, err);
  if (err == TASO_OK)
    taso_tool_summary(&t, "%lld graphs, %lld candidate pairs, %lld substitutions -> %s",
                      (long long)graphs, (long long)pairs, (long long)substs, t.out_path);
  return taso_tool_finish(&t, err);
}
