/*
 * taso-validate: the third stage. It will check the axioms themselves:
 * which ones follow from the others (redundancy), and whether each one
 * holds on every small tensor of the job's sizes (a symbolic check).
 *
 * The checks arrive with their own issue. Until then this writes a valid
 * validation artifact with all counts zero, so that the pipeline, its
 * scripts and its tests run end to end.
 */
#include "tool.h"

static const taso_tool_spec_t spec = {
    .name = "taso-validate",
    .about = "Checks the axioms themselves: redundancy among them, and a symbolic check\n"
             "of each one on small tensors of the job's sizes.\n"
             "\n"
             "Stage logic: not yet implemented; the checks arrive in a later issue. It\n"
             "writes a valid validation file with every count zero.\n",
    .job_help = "job file: axioms, tensor sizes and the timeout per case",
    .out_help = "validation artifact to write",
    .default_out = "validation.h5",
    .job_required = true,
    .threads = true,
};

int main(int argc, char **argv) {
  taso_tool_t t;
  taso_tool_init(&t, &spec, &argc, &argv);

  taso_artifact_t *a = NULL;
  taso_provenance_t prov;
  const int64_t combinations = 0, proved = 0, counterexamples = 0, skipped = 0, unknown = 0,
                redundant = 0;
  taso_err_t err = taso_tool_load_job(&t, t.job_path);
  taso_tool_provenance(&t, &prov);
  TASO_TOOL_STEP(&t, err,
                 taso_artifact_create(t.comm, t.out_path, TASO_KIND_VALIDATION, &prov, &a));
  TASO_TOOL_STEP(&t, err, taso_artifact_set_count(a, "combinations", combinations));
  TASO_TOOL_STEP(&t, err, taso_artifact_set_count(a, "proved", proved));
  TASO_TOOL_STEP(&t, err, taso_artifact_set_count(a, "counterexamples", counterexamples));
  TASO_TOOL_STEP(&t, err, taso_artifact_set_count(a, "skipped", skipped));
  TASO_TOOL_STEP(&t, err, taso_artifact_set_count(a, "unknown", unknown));
  TASO_TOOL_STEP(&t, err, taso_artifact_set_count(a, "redundant_axioms", redundant));
  err = taso_tool_close(&t, &a, err);
  if (err == TASO_OK)
    taso_tool_summary(&t,
                      "%lld combinations: %lld proved, %lld counterexamples, %lld skipped, "
                      "%lld unknown, %lld redundant axioms -> %s",
                      (long long)combinations, (long long)proved, (long long)counterexamples,
                      (long long)skipped, (long long)unknown, (long long)redundant, t.out_path);
  return taso_tool_finish(&t, err);
}
