/*
 * The generator's driver as a library (src/enum/generate.h), under mpirun:
 * its result holds what the tool writes (every kept pair equal on the
 * fingerprint inputs, the counts adding up), it does not depend on the
 * rank count (the world's result against rank 0's alone on MPI_COMM_SELF,
 * with either method), and a bad job fails on every rank with one message
 * before any work.
 */
#include <mpi.h>
#include <stdlib.h>
#include <string.h>

#include "generate.h"
#include "test.h"

static int rank, size;

static const char *job_text(const char *method, const char *weights) {
  static char text[1024];
  snprintf(text, sizeof text,
           "[job]\nname = driver\nseed = 3\n"
           "[inputs]\nx1 = 2x4\nx2 = 2x4\nw1 = 4x4\nw2 = 4x4\n"
           "[generate]\nmax_ops = 2\noperators = matmul ewadd ewmul relu\n"
           "method = %s\n%s%s\n",
           method, weights ? "weights = " : "", weights ? weights : "");
  return text;
}

static taso_err_t run(MPI_Comm comm, const char *method, const char *weights,
                      taso_generate_result_t *r) {
  taso_job_t job;
  taso_err_t err = taso_job_parse("driver.ini", job_text(method, weights), &job);
  if (err != TASO_OK) return err;
  taso_generate_opts_t o = {.comm = comm, .job = &job, .name = "test_generate_lib"};
  err = taso_generate(&o, r);
  taso_job_free(&job);
  return err;
}

/* The kept pairs' texts, one per line (malloc'd). */
static char *kept_text(const taso_generate_result_t *r) {
  size_t len = 1;
  for (int64_t i = 0; i < r->kept; i++)
    len += strlen(r->cands[i].key) + 1;
  char *s = calloc(len, 1);
  for (int64_t i = 0; s && i < r->kept; i++)
    strcat(strcat(s, r->cands[i].key), "\n");
  return s;
}

static void test_result(void) {
  taso_generate_result_t r;
  CHECK_OK(run(MPI_COMM_WORLD, "exhaustive", NULL, &r));
  CHECK(r.kept > 0 && r.kept <= r.ncands);
  CHECK(r.counts[TASO_GENERATE_SUBSTITUTIONS] == r.kept);
  CHECK(!strcmp(taso_generate_count_names[TASO_GENERATE_SUBSTITUTIONS], "substitutions"));
  CHECK(!strcmp(taso_generate_count_names[TASO_GENERATE_GRAPHS], "graphs_enumerated"));
  CHECK(!strcmp(taso_generate_count_names[TASO_GENERATE_PAIRS], "candidate_pairs"));
  CHECK(r.counts[TASO_GENERATE_GRAPHS] > 0 && r.counts[TASO_GENERATE_PAIRS] >= r.kept);
  CHECK(r.npruned > 0);
  for (int i = 0; i < TASO_GENERATE_COUNTS; i++)
    CHECK(r.counts[i] >= 0);
  /* each kept pair: both sides take the same values on the inputs */
  for (int64_t i = 0; i < r.kept; i++) {
    const taso_cand_t *k = &r.cands[i];
    taso_fingerprint_t a, b;
    CHECK_OK(taso_fingerprint_graph(&r.rnd, &k->src, k->tsrc, &a, NULL));
    CHECK_OK(taso_fingerprint_graph(&r.rnd, &k->dst, k->tdst, &b, NULL));
    CHECK(taso_fingerprint_cmp(&a, &b) == 0);
  }
  taso_generate_result_free(&r);
}

/* Every rank's result equals rank 0's alone, with either method. */
static void check_independent(const char *method) {
  taso_generate_result_t world, alone;
  CHECK_OK(run(MPI_COMM_WORLD, method, NULL, &world));
  char *w = kept_text(&world), *a = NULL;
  int same = 1;
  if (rank == 0) {
    CHECK_OK(run(MPI_COMM_SELF, method, NULL, &alone));
    a = kept_text(&alone);
    same = w && a && !strcmp(w, a) && alone.npruned == world.npruned &&
           !memcmp(alone.counts, world.counts, sizeof alone.counts);
    taso_generate_result_free(&alone);
  }
  MPI_Bcast(&same, 1, MPI_INT, 0, MPI_COMM_WORLD);
  CHECK(same);
  /* every rank holds the whole result */
  int64_t n = world.kept, lo = n, hi = n;
  MPI_Allreduce(&n, &lo, 1, MPI_INT64_T, MPI_MIN, MPI_COMM_WORLD);
  MPI_Allreduce(&n, &hi, 1, MPI_INT64_T, MPI_MAX, MPI_COMM_WORLD);
  CHECK(lo == hi && n > 0);
  free(w);
  free(a);
  taso_generate_result_free(&world);
}

static void test_independent(void) {
  check_independent("exhaustive");
  check_independent("representatives");
}

static void test_bad_job(void) {
  taso_generate_result_t r;
  CHECK_ERR(run(MPI_COMM_WORLD, "exhaustive", "x1 nosuch", &r), TASO_ERR_PARSE);
  CHECK(strstr(taso_error_detail(), "nosuch") != NULL);
  CHECK(r.kept == 0 && r.cands == NULL);
  taso_generate_result_free(&r);
}

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  static const test_case_t cases[] = {TEST(test_result), TEST(test_independent),
                                      TEST(test_bad_job)};
  int status = test_run(cases, (int)(sizeof cases / sizeof *cases));
  int worst = status;
  MPI_Allreduce(&status, &worst, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
  MPI_Finalize();
  return worst;
}
