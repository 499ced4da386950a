/*
 * The axioms' redundancy check as a library (src/verify/redundancy.h),
 * under mpirun: the verdicts (R1 of the entailed fixture follows from A0
 * and A1; A29 cannot be decided, every model being infinite; no family of
 * the set collapses) reach every rank, do not depend on the rank count
 * (the world's rows against rank 0's alone on MPI_COMM_SELF), and a query
 * process that crashes makes its row undecided, saying so, while the run
 * goes on. Under the sanitizers (TASO_TEST_SANITIZED) only the first
 * run: every query is slower there, and the release build checks the rest.
 */
#define _POSIX_C_SOURCE 200809L /* setenv */
#include <mpi.h>
#include <stdlib.h>
#include <string.h>

#include "redundancy.h"
#include "test.h"

static int rank, size;
static const taso_limits_t budget = {.timeout_s = 300, .rlimit = 200000};

static taso_axioms_t *load(void) {
  const char *s = getenv("TASO_SOURCE_DIR");
  char path[1024];
  taso_axioms_t *ax = NULL;
  snprintf(path, sizeof path, "%s/data/axioms", s ? s : ".");
  CHECK_OK(taso_axioms_load(path, &ax));
  snprintf(path, sizeof path, "%s/data/axioms/bad/entailed.smt2", s ? s : ".");
  if (ax) CHECK_OK(taso_axioms_add_file(ax, path));
  return ax;
}

typedef struct {
  taso_red_t *rows, *fams;
  int nrows, nfams;
  char collapse[256];
} result_t;

static taso_err_t run(MPI_Comm comm, const taso_axioms_t *ax, result_t *r) {
  memset(r, 0, sizeof *r);
  return taso_redundancy(comm, ax, &budget, "R1,A29", &r->rows, &r->nrows, &r->fams, &r->nfams,
                         r->collapse, sizeof r->collapse);
}

static void result_free(result_t *r) {
  free(r->rows);
  free(r->fams);
}

/* Rows without their timing, which differs from run to run. */
static bool same_rows(const taso_red_t *a, const taso_red_t *b, int n) {
  for (int i = 0; i < n; i++) {
    taso_red_t x = a[i], y = b[i];
    x.seconds = y.seconds = 0;
    if (memcmp(&x, &y, sizeof x) != 0) return false;
  }
  return true;
}

static void test_verdicts(void) {
  taso_axioms_t *ax = load();
  if (!ax) return;
  result_t world, alone;
  CHECK_OK(run(MPI_COMM_WORLD, ax, &world));
  CHECK(world.nrows == 2 && world.nfams == taso_axioms_families(ax));
  CHECK(world.collapse[0] == 0);
  /* load order: A29 (the default set) before R1 (the fixture added) */
  CHECK(world.nrows == 2 && strcmp(world.rows[0].name, "A29") == 0 &&
        strcmp(world.rows[1].name, "R1") == 0);
  if (world.nrows == 2) {
    CHECK(world.rows[1].verdict == 1 && strcmp(world.rows[1].core, "A0 A1") == 0);
    CHECK(world.rows[0].verdict == 0 && strstr(world.rows[0].why, "every model is infinite"));
  }
  for (int i = 0; i < world.nfams; i++) {
    CHECK(world.fams[i].verdict != 1 && world.fams[i].goal == -1 - i);
    if (i == 0) CHECK_STR(world.fams[i].name, "(all)");
  }
  if (getenv("TASO_TEST_SANITIZED")) {
    result_free(&world);
    taso_axioms_free(ax);
    return;
  }
  /* every rank holds the same rows, the same as one rank alone */
  CHECK_OK(run(MPI_COMM_SELF, ax, &alone));
  CHECK(alone.nrows == world.nrows && alone.nfams == world.nfams);
  CHECK(alone.nrows == world.nrows && same_rows(alone.rows, world.rows, world.nrows));
  CHECK(alone.nfams == world.nfams && same_rows(alone.fams, world.fams, world.nfams));
  result_free(&world);
  result_free(&alone);
  taso_axioms_free(ax);
}

/* Task numbers: the families first, then the goals in load order. */
static void test_crash_contained(void) {
  if (getenv("TASO_TEST_SANITIZED")) return;
  taso_axioms_t *ax = load();
  if (!ax) return;
  char task[16];
  snprintf(task, sizeof task, "%d", taso_axioms_families(ax) + 1); /* R1's */
  setenv("TASO_VALIDATE_CRASH_TASK", task, 1);
  result_t r;
  CHECK_OK(run(MPI_COMM_WORLD, ax, &r));
  unsetenv("TASO_VALIDATE_CRASH_TASK");
  CHECK(r.nrows == 2);
  if (r.nrows == 2) {
    CHECK(strcmp(r.rows[1].name, "R1") == 0 && r.rows[1].verdict == 0);
    CHECK(strstr(r.rows[1].why, "Z3 failed") != NULL);
    CHECK(strstr(r.rows[0].why, "every model is infinite") != NULL); /* A29 decided as before */
  }
  result_free(&r);
  taso_axioms_free(ax);
}

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  static const test_case_t cases[] = {TEST(test_verdicts), TEST(test_crash_contained)};
  int status = test_run(cases, (int)(sizeof cases / sizeof *cases));
  int worst = status;
  MPI_Allreduce(&status, &worst, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
  MPI_Finalize();
  return worst;
}
