/*
 * Writes a small candidates artifact for the taso-verify tests: true
 * substitutions (axiom and lemma instances, and combinations of them) and
 * two false ones (relu dropped; concat associativity, false under split
 * trees), each as a (src, dst) row marked CANDIDATE, as taso-generate
 * writes them. Usage: test_verify_fixture OUT.h5 [JOB] (under mpiexec;
 * every rank writes its share of the graphs, like the generator).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <mpi.h>

#include "artifact.h"
#include "check.h"

static const char *const substs[] = {
    "ewadd(x1, ewadd(x2, x3)) => ewadd(ewadd(x1, x2), x3)",
    "ewadd(x1, x2) => ewadd(x2, x1)",
    "ewmul(x1, ewmul(x2, x3)) => ewmul(ewmul(x1, x2), x3)",
    "ewmul(ewadd(x1, x2), x3) => ewadd(ewmul(x1, x3), ewmul(x2, x3))",
    "smul(ewadd(x1, x2), s0) => ewadd(smul(x1, s0), smul(x2, s0))",
    "smul(matmul(x1, w1), s0) => matmul(x1, smul(w1, s0))",
    "relu(conv2d(i1, w4)) => conv2d(act=relu, i1, w4)",
    "conv2d(i1, ewadd(w4, w5)) => ewadd(conv2d(i1, w4), conv2d(i1, w5))",
    "ewadd(conv2d(i1, w4), conv2d(i1, w5)) => conv2d(i1, ewadd(w4, w5))",
    "concat(1, conv2d(i1, w4), conv2d(i1, w5)) => conv2d(i1, concat(0, w4, w5))",
    "matmul(x1, matmul(w1, w2)) => matmul(matmul(x1, w1), w2)",
    "split0(0, concat(0, x1, x2)) => x1",
    "split1(1, concat(1, x1, x2)) => x2",
    "transpose(transpose(w1)) => w1",
    "transpose(matmul(x1, w1)) => matmul(transpose(w1), transpose(x1))",
    "transpose(layout=view, w1) => transpose(w1)",
    "matmul(x1, const_imm(shape=4x4)) => x1",
    "matmul(const_imm(shape=2x2), x1) => x1",
    "transpose(const_imm(shape=4x4)) => const_imm(shape=4x4)",
    "conv2d(i1, const_pool(k=3x3, shape=4x1x3x3)) => pool_avg(k=3x3, i1)",
    "conv2d(i1, const_iconv(k=3x3, shape=4x4x3x3)) => i1",
    "ewmul(x1, const_one(shape=2x4)) => x1",
    "conv2d(i1, w7) => conv2d(i1, enlarge(k=3x3, w7))",
    "ewadd(conv2d(i1, w4), conv2d(i1, w7)) => conv2d(i1, ewadd(w4, enlarge(k=3x3, w7)))",
    "concat(0, pool_avg(k=3x3, i1), pool_avg(k=3x3, i2)) => pool_avg(k=3x3, concat(0, i1, i2))",
    "concat(0, pool_max(k=3x3, i1), pool_max(k=3x3, i2)) => pool_max(k=3x3, concat(0, i1, i2))",
    "ewadd(matmul(x1, w1), matmul(x1, w2)) => matmul(x1, ewadd(w1, w2))",
    "relu(transpose(w1)) => transpose(relu(w1))",
    "ewadd(transpose(w1), transpose(w2)) => transpose(ewadd(w1, w2))",
    "concat(0, concat(1, x1, x2), concat(1, x3, x1)) => concat(1, concat(0, x1, x3), concat(0, x2, "
    "x1))",
    "smul(smul(x1, s0), s0) => smul(x1, smul(s0, s0))",
    "relu(x1) => x1",
    "concat(1, concat(1, x1, x2), x3) => concat(1, x1, concat(1, x2, x3))",
    "split0(1, concat(1, x1, x2)), split1(1, concat(1, x1, x2)) => x1, x2",
};
#define NSUBSTS ((int)(sizeof substs / sizeof *substs))

static int fail(const char *what) {
  fprintf(stderr, "test_verify_fixture: %s: %s\n", what, taso_error_detail());
  MPI_Abort(MPI_COMM_WORLD, 1);
  return 1;
}

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  int rank, size;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  if (argc < 2) {
    if (rank == 0) fprintf(stderr, "usage: test_verify_fixture OUT.h5 [JOB]\n");
    MPI_Finalize();
    return 2;
  }
  static const struct {
    const char *name;
    int rank;
    int32_t dim[4];
  } table[] = {
      {"x1", 2, {2, 4}},       {"x2", 2, {2, 4}},       {"x3", 2, {2, 4}},
      {"w1", 2, {4, 4}},       {"w2", 2, {4, 4}},       {"i1", 4, {2, 4, 5, 5}},
      {"i2", 4, {2, 4, 5, 5}}, {"w4", 4, {4, 4, 3, 3}}, {"w5", 4, {4, 4, 3, 3}},
      {"w7", 4, {4, 4, 1, 3}}, {"s0", 0, {0}},
  };
  taso_inputs_t in = {0};
  for (size_t i = 0; i < sizeof table / sizeof *table; i++)
    if (taso_inputs_add(&in, table[i].name, table[i].rank, table[i].dim) != TASO_OK)
      return fail("input table");

  /* Graph 2i is the source of substitution i, 2i + 1 its target; rank r
   * writes a contiguous block of them. */
  int lo = (int)((int64_t)NSUBSTS * rank / size), hi = (int)((int64_t)NSUBSTS * (rank + 1) / size);
  taso_graph_t *g = calloc((size_t)(2 * (hi - lo) + 1), sizeof *g);
  taso_subst_t *rows = calloc((size_t)(hi - lo + 1), sizeof *rows);
  if (!g || !rows) return fail("memory");
  for (int i = lo; i < hi; i++) {
    taso_graph_init(&g[2 * (i - lo)]);
    taso_graph_init(&g[2 * (i - lo) + 1]);
    if (taso_subst_parse(substs[i], &in, &g[2 * (i - lo)], &g[2 * (i - lo) + 1]) != TASO_OK)
      return fail(substs[i]);
    rows[i - lo] =
        (taso_subst_t){.src = 2 * i, .dst = 2 * i + 1, .verdict = TASO_VERDICT_CANDIDATE};
  }
  const char *job = argc > 2 ? argv[2] : "";
  taso_provenance_t prov = {.tool = "test_verify_fixture",
                            .job_path = job,
                            .job_text = "",
                            .ranks = size,
                            .threads = 1,
                            .seed = 1};
  FILE *f = argc > 2 ? fopen(job, "r") : NULL;
  static char text[65536];
  if (f) {
    size_t n = fread(text, 1, sizeof text - 1, f);
    text[n] = '\0';
    fclose(f);
    prov.job_text = text;
  }
  taso_artifact_t *a = NULL;
  int64_t first = 0;
  if (taso_artifact_create(MPI_COMM_WORLD, argv[1], TASO_KIND_CANDIDATES, &prov, &a) != TASO_OK)
    return fail("create");
  if (taso_artifact_write_inputs(a, &in) != TASO_OK) return fail("inputs");
  if (taso_artifact_write_graphs(a, g, 2 * (hi - lo), &first) != TASO_OK) return fail("graphs");
  if (taso_artifact_write_substs(a, rows, hi - lo) != TASO_OK) return fail("rows");
  if (taso_artifact_set_count(a, "graphs_enumerated", 2 * NSUBSTS) != TASO_OK ||
      taso_artifact_set_count(a, "candidate_pairs", NSUBSTS) != TASO_OK ||
      taso_artifact_set_count(a, "substitutions", NSUBSTS) != TASO_OK)
    return fail("counts");
  if (taso_artifact_close(a) != TASO_OK) return fail("close");
  for (int i = 0; i < 2 * (hi - lo); i++)
    taso_graph_free(&g[i]);
  free(g);
  free(rows);
  taso_inputs_free(&in);
  if (rank == 0) printf("test_verify_fixture: %d candidates -> %s\n", NSUBSTS, argv[1]);
  MPI_Finalize();
  return 0;
}
