/*
 * check_candidates FILE [+SUBST | -SUBST]...: checks a candidates artifact.
 *
 *   +SRC => DST   must be in FILE up to input renaming, at these or other
 *                 input shapes, or implied by the substitutions in it (the
 *                 generator's own criterion);
 *   -SRC => DST   must not be in FILE, even up to input renaming or at
 *                 other input shapes.
 *
 * Prints one line per check and "N passed, N failed"; exits non-zero on a
 * failure. Runs on one rank (the artifact layer needs MPI).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <mpi.h>

#include "artifact.h"
#include "candidates.h"
#include "derive.h"
#include "test.h"

static taso_inputs_t inputs;
static int failures;
static taso_cand_t *cands;
static char **patterns; /* per candidate: its key at any shapes */
static int64_t ncands;

static bool present(const char *pattern) {
  for (int64_t i = 0; i < ncands; i++)
    if (!strcmp(patterns[i], pattern)) return true;
  return false;
}

static void check(const char *spec) {
  bool must = spec[0] == '+';
  taso_graph_t src, dst;
  taso_graph_init(&src);
  taso_graph_init(&dst);
  CHECK_OK(taso_subst_parse(spec + 1, &inputs, &src, &dst));
  char *key = NULL, *pattern = NULL;
  CHECK_OK(taso_cand_key(&inputs, &src, &dst, false, &key));
  CHECK_OK(taso_cand_key(&inputs, &src, &dst, true, &pattern));
  bool found = pattern && present(pattern), implied = false;
  if (must && key && !found) {
    char *copy = malloc(strlen(key) + 1);
    strcpy(copy, key);
    taso_cand_t c;
    CHECK_OK(taso_cand_parse(&inputs, copy, &c));
    taso_deriver_t *d = NULL;
    int steps = -1;
    CHECK_OK(taso_deriver_create(&inputs, NULL, &d));
    if (d) CHECK_OK(taso_derive(d, cands, ncands, &c.src, &c.dst, &steps));
    taso_deriver_free(d);
    implied = steps > 0;
    taso_cand_free(&c);
  }
  bool ok = must ? (found || implied) : !found;
  printf("%s: %s %s%s\n", ok ? "ok" : "FAIL", must ? "expected" : "excluded", spec + 1,
         found     ? " (present)"
         : implied ? " (implied)"
                   : "");
  failures += !ok;
  free(key);
  free(pattern);
  taso_graph_free(&src);
  taso_graph_free(&dst);
}

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  if (argc < 2) {
    fprintf(stderr, "usage: check_candidates FILE [+SUBST | -SUBST]...\n");
    return 2;
  }
  taso_artifact_t *a;
  taso_graph_t *graphs = NULL;
  taso_subst_t *rows = NULL;
  int64_t ngraphs = 0, nrows = 0;
  TASO_CHECK(taso_artifact_open(MPI_COMM_SELF, argv[1], TASO_KIND_CANDIDATES, &a));
  TASO_CHECK(taso_artifact_read_inputs(a, &inputs));
  TASO_CHECK(taso_artifact_read_graphs(a, &graphs, &ngraphs));
  TASO_CHECK(taso_artifact_read_substs(a, &rows, &nrows));
  TASO_CHECK(taso_artifact_close(a));
  cands = calloc((size_t)nrows + 1, sizeof *cands);
  patterns = calloc((size_t)nrows + 1, sizeof *patterns);
  for (int64_t i = 0; i < nrows; i++) {
    char *key;
    TASO_CHECK(
        taso_cand_key(&inputs, &graphs[rows[i].src], &graphs[rows[i].dst], true, &patterns[i]));
    TASO_CHECK(taso_cand_key(&inputs, &graphs[rows[i].src], &graphs[rows[i].dst], false, &key));
    TASO_CHECK(taso_cand_parse(&inputs, key, &cands[ncands++]));
  }
  for (int i = 2; i < argc; i++)
    check(argv[i]);
  int failed = failures + (test_failures > 0);
  printf("%d passed, %d failed\n", argc - 2 - failed, failed);
  for (int64_t i = 0; i < ncands; i++) {
    taso_cand_free(&cands[i]);
    free(patterns[i]);
  }
  free(cands);
  free(patterns);
  free(rows);
  taso_graphs_free(graphs, ngraphs);
  taso_inputs_free(&inputs);
  MPI_Finalize();
  return failed ? 1 : 0;
}
