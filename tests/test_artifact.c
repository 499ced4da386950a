/*
 * HDF5 artifacts, as an MPI program.
 *
 *   test_artifact               self-test on however many ranks it runs on
 *   test_artifact write FILE    writes the reference artifact from every rank
 *   test_artifact read FILE N   checks FILE as the reference artifact of N ranks
 *
 * The reference content is a function of (writer rank, item number) only, so
 * a reader on any rank count regenerates what every writer wrote and can
 * check that a file written on 4 ranks reads back identically on 1.
 */
#define _POSIX_C_SOURCE 200809L

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <hdf5.h>
#include <mpi.h>

#include "artifact.h"
#include "test.h"

static int rank, size;

/* The shared input table: two activations and a conv2d weight. */
static void make_inputs(taso_inputs_t *in) {
  const int32_t x[4] = {1, 4, 8, 8}, w[4] = {4, 4, 3, 3};
  in->v = NULL;
  in->n = 0;
  TASO_CHECK(taso_inputs_add(in, "x1", 4, x));
  TASO_CHECK(taso_inputs_add(in, "x2", 4, x));
  TASO_CHECK(taso_inputs_add(in, "w1", 4, w));
}

/* Rank 1 writes no graphs and rank 2 no substitutions, so every run on more
 * than two ranks has a rank with nothing to write. */
static int graphs_of(int r) {
  return r == 1 ? 0 : 2 + r % 3;
}
static int substs_of(int r) {
  return r == 2 ? 0 : 1 + r;
}

/* Graph k of writer rank r: one of four shapes of graph, with parameters
 * that depend on r and k so that no two ranks write the same records. */
static void make_graph(int r, int k, taso_graph_t *g) {
  taso_params_t p = taso_params_default();
  taso_ref_t x1, x2, w1, t, u, in[2];
  taso_graph_init(g);
  TASO_CHECK(taso_graph_add_input(g, 0, &x1));
  TASO_CHECK(taso_graph_add_input(g, 1, &x2));
  TASO_CHECK(taso_graph_add_input(g, 2, &w1));
  switch ((r + k) % 4) {
  case 0: /* ewadd(x1, x2) */
    in[0] = x1;
    in[1] = x2;
    TASO_CHECK(taso_graph_add(g, TASO_OP_EWADD, &p, in, &t));
    TASO_CHECK(taso_graph_add_output(g, t));
    break;
  case 1: /* relu(ewadd(x2, x1)), and the sum itself */
    in[0] = x2;
    in[1] = x1;
    TASO_CHECK(taso_graph_add(g, TASO_OP_EWADD, &p, in, &t));
    TASO_CHECK(taso_graph_add(g, TASO_OP_RELU, &p, &t, &u));
    TASO_CHECK(taso_graph_add_output(g, u));
    TASO_CHECK(taso_graph_add_output(g, t));
    break;
  case 2: /* both halves of a split */
    p.axis = 1 + k % 3;
    TASO_CHECK(taso_graph_add(g, TASO_OP_SPLIT, &p, &x1, &t));
    TASO_CHECK(taso_graph_add_output(g, t));
    TASO_CHECK(taso_graph_add_output(g, t + 1));
    break;
  default: /* conv2d with rank-dependent stride and activation */
    p.stride[0] = 1 + r % 2;
    p.stride[1] = 1 + k % 2;
    p.act = k % 2 ? TASO_ACT_RELU : TASO_ACT_NONE;
    in[0] = x1;
    in[1] = w1;
    TASO_CHECK(taso_graph_add(g, TASO_OP_CONV2D, &p, in, &t));
    TASO_CHECK(taso_graph_add_output(g, t));
    break;
  }
}

static taso_subst_t make_subst(int r, int k) {
  taso_subst_t s;
  memset(&s, 0, sizeof s);
  s.src = 1000 * r + k;
  s.dst = 1000 * r + k + 1;
  s.verdict = (r + k) % 4;
  s.seconds = r + 0.25 * k;
  return s;
}

static bool graphs_equal(const taso_graph_t *a, const taso_graph_t *b) {
  return a->nnodes == b->nnodes && a->noutputs == b->noutputs &&
         memcmp(a->nodes, b->nodes, sizeof *a->nodes * (size_t)a->nnodes) == 0 &&
         memcmp(a->outputs, b->outputs, sizeof *a->outputs * (size_t)a->noutputs) == 0;
}

/* A job text longer than an object header can hold (64 KiB), so the
 * attribute has to go to dense storage. */
static char *make_job_text(void) {
  size_t len = 100000;
  char *text = malloc(len + 1);
  if (!text) abort();
  for (size_t i = 0; i < len; i++)
    text[i] = i % 64 == 63 ? '\n' : (char)('a' + i % 26);
  text[len] = '\0';
  return text;
}

#define SEED UINT64_C(0xfeedfacecafebeef) /* above INT64_MAX: must stay unsigned */

/* Writes the reference artifact from every rank of MPI_COMM_WORLD. */
static void write_reference(const char *path) {
  taso_provenance_t prov;
  taso_artifact_t *a = NULL;
  taso_inputs_t in;
  taso_graph_t *g;
  taso_subst_t *s;
  int ng = graphs_of(rank), ns = substs_of(rank);
  int64_t first = -1, expect_first = 0, total_g = 0, total_s = 0;
  char *job = make_job_text();

  memset(&prov, 0, sizeof prov);
  prov.tool = "test_artifact";
  prov.job_path = "jobs/reference.ini";
  prov.job_text = job;
  prov.ranks = size;
  prov.threads = 1;
  prov.seed = SEED;
  taso_now_iso8601(prov.start_time);

  make_inputs(&in);
  g = calloc((size_t)ng + 1, sizeof *g);
  s = calloc((size_t)ns + 1, sizeof *s);
  if (!g || !s) abort();
  for (int k = 0; k < ng; k++)
    make_graph(rank, k, &g[k]);
  for (int k = 0; k < ns; k++)
    s[k] = make_subst(rank, k);
  for (int r = 0; r < size; r++) {
    if (r < rank) expect_first += graphs_of(r);
    total_g += graphs_of(r);
    total_s += substs_of(r);
  }

  CHECK_OK(taso_artifact_create(MPI_COMM_WORLD, path, TASO_KIND_CANDIDATES, &prov, &a));
  if (a) {
    CHECK_OK(taso_artifact_write_inputs(a, &in));
    CHECK_OK(taso_artifact_write_graphs(a, g, ng, &first));
    CHECK(first == expect_first);
    CHECK_OK(taso_artifact_write_substs(a, s, ns));
    CHECK_OK(taso_artifact_set_count(a, "graphs", -1)); /* replaced just below */
    CHECK_OK(taso_artifact_set_count(a, "graphs", total_g));
    CHECK_OK(taso_artifact_set_count(a, "substitutions", total_s));
    CHECK_OK(taso_artifact_close(a));
  }
  for (int k = 0; k < ng; k++)
    taso_graph_free(&g[k]);
  free(g);
  free(s);
  free(job);
  taso_inputs_free(&in);
}

/* Checks path as the reference artifact of `writers` ranks, on every rank. */
static void check_reference(const char *path, int writers) {
  taso_artifact_t *a = NULL;
  taso_inputs_t in, want_in;
  taso_graph_t *g = NULL;
  taso_subst_t *s = NULL;
  int64_t ng = -1, ns = -1, count = -1, gi = 0, si = 0;
  char *text = NULL, *job = make_job_text();

  CHECK_OK(taso_artifact_open(MPI_COMM_WORLD, path, TASO_KIND_CANDIDATES, &a));
  if (!a) {
    free(job);
    return;
  }
  make_inputs(&want_in);
  CHECK_OK(taso_artifact_read_inputs(a, &in));
  CHECK(in.n == want_in.n);
  for (int i = 0; i < in.n && i < want_in.n; i++) {
    CHECK_STR(in.v[i].name, want_in.v[i].name);
    CHECK(taso_tensor_equal(&in.v[i].type, &want_in.v[i].type));
  }

  CHECK_OK(taso_artifact_read_graphs(a, &g, &ng));
  for (int r = 0; r < writers; r++)
    for (int k = 0; k < graphs_of(r); k++, gi++) {
      taso_graph_t want;
      make_graph(r, k, &want);
      CHECK(gi < ng && graphs_equal(&g[gi], &want));
      if (gi < ng) CHECK(g[gi].node_cap == g[gi].nnodes && g[gi].out_cap == g[gi].noutputs);
      taso_graph_free(&want);
    }
  CHECK(ng == gi);

  CHECK_OK(taso_artifact_read_substs(a, &s, &ns));
  for (int r = 0; r < writers; r++)
    for (int k = 0; k < substs_of(r); k++, si++) {
      taso_subst_t want = make_subst(r, k);
      CHECK(si < ns && s[si].src == want.src && s[si].dst == want.dst &&
            s[si].verdict == want.verdict && s[si].seconds == want.seconds);
    }
  CHECK(ns == si);

  CHECK_OK(taso_artifact_get_count(a, "graphs", &count));
  CHECK(count == gi);
  CHECK_OK(taso_artifact_get_count(a, "substitutions", &count));
  CHECK(count == si);
  CHECK_OK(taso_artifact_get_count(a, "ranks", &count));
  CHECK(count == writers);
  CHECK_OK(taso_artifact_get_count(a, "format_version", &count));
  CHECK(count == TASO_ARTIFACT_FORMAT);
  CHECK_ERR(taso_artifact_get_count(a, "no_such_count", &count), TASO_ERR_FORMAT);
  CHECK_ERR(taso_artifact_get_count(a, "kind", &count), TASO_ERR_FORMAT);

  const char *want_strings[][2] = {{"kind", TASO_KIND_CANDIDATES},
                                   {"tool", "test_artifact"},
                                   {"job_path", "jobs/reference.ini"},
                                   {"job_text", job}};
  for (size_t i = 0; i < sizeof want_strings / sizeof *want_strings; i++) {
    CHECK_OK(taso_artifact_get_string(a, want_strings[i][0], &text));
    if (text) CHECK_STR(text, want_strings[i][1]);
    free(text);
    text = NULL;
  }
  const char *times[] = {"start_time", "end_time", "version", "git_commit"};
  for (size_t i = 0; i < sizeof times / sizeof *times; i++) {
    CHECK_OK(taso_artifact_get_string(a, times[i], &text));
    CHECK(text && text[0]);
    if (text && i < 2) CHECK(strlen(text) == 20 && text[10] == 'T' && text[19] == 'Z');
    free(text);
    text = NULL;
  }
  /* A read-only handle refuses writes, on every rank alike. */
  CHECK_ERR(taso_artifact_write_graphs(a, NULL, 0, NULL), TASO_ERR_ARG);
  CHECK_ERR(taso_artifact_set_count(a, "graphs", 0), TASO_ERR_ARG);

  CHECK_OK(taso_artifact_close(a));
  taso_graphs_free(g, ng);
  free(s);
  free(job);
  taso_inputs_free(&in);
  taso_inputs_free(&want_in);
}

/* ------------------------------------------------------------------------ */
/* Self-test cases                                                          */
/* ------------------------------------------------------------------------ */

static char scratch[256];

/* A file name of this run's own, so the 1- and 4-rank tests can run at once. */
static const char *tmpname(const char *what) {
  snprintf(scratch, sizeof scratch, "test_artifact_np%d_%s.h5", size, what);
  return scratch;
}

/* Whether s is the same text on every rank: errors must read alike. */
static bool same_everywhere(const char *s) {
  char mine[1024], root[1024];
  int differ = 0, any = 0;
  snprintf(mine, sizeof mine, "%s", s);
  memcpy(root, mine, sizeof root);
  MPI_Bcast(root, (int)sizeof root, MPI_CHAR, 0, MPI_COMM_WORLD);
  differ = strcmp(root, mine) != 0;
  MPI_Allreduce(&differ, &any, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
  return !any;
}

static void remove_on_root(const char *path) {
  MPI_Barrier(MPI_COMM_WORLD);
  if (rank == 0) remove(path);
  MPI_Barrier(MPI_COMM_WORLD);
}

static void test_round_trip(void) {
  char path[256];
  snprintf(path, sizeof path, "%s", tmpname("round"));
  write_reference(path);
  check_reference(path, size);
  remove_on_root(path);
}

static taso_provenance_t small_prov(void) {
  taso_provenance_t prov;
  memset(&prov, 0, sizeof prov);
  prov.tool = "test_artifact";
  prov.ranks = size;
  prov.threads = 1;
  return prov; /* start_time empty: filled in from rank 0's clock */
}

/* Nothing at all on any rank: empty datasets, which must still read back. */
static void test_empty(void) {
  char path[256];
  taso_provenance_t prov = small_prov();
  taso_artifact_t *a = NULL;
  taso_inputs_t none = {NULL, 0}, in;
  taso_graph_t *g = NULL;
  taso_subst_t *s = NULL;
  int64_t first = -1, ng = -1, ns = -1;
  snprintf(path, sizeof path, "%s", tmpname("empty"));
  CHECK_OK(taso_artifact_create(MPI_COMM_WORLD, path, TASO_KIND_SUBSTITUTIONS, &prov, &a));
  if (!a) return;
  CHECK_OK(taso_artifact_write_inputs(a, &none));
  CHECK_OK(taso_artifact_write_graphs(a, NULL, 0, &first));
  CHECK(first == 0);
  CHECK_OK(taso_artifact_write_substs(a, NULL, 0));
  /* A second set in the same file is refused rather than failing in HDF5. */
  CHECK_ERR(taso_artifact_write_graphs(a, NULL, 0, &first), TASO_ERR_ARG);
  CHECK_ERR(taso_artifact_write_substs(a, NULL, 0), TASO_ERR_ARG);
  CHECK_OK(taso_artifact_close(a));

  a = NULL;
  CHECK_OK(taso_artifact_open(MPI_COMM_WORLD, path, TASO_KIND_SUBSTITUTIONS, &a));
  if (!a) return;
  CHECK_OK(taso_artifact_read_inputs(a, &in));
  CHECK(in.n == 0);
  CHECK_OK(taso_artifact_read_graphs(a, &g, &ng));
  CHECK(ng == 0 && g == NULL);
  CHECK_OK(taso_artifact_read_substs(a, &s, &ns));
  CHECK(ns == 0 && s == NULL);
  CHECK_OK(taso_artifact_close(a));
  taso_inputs_free(&in);
  remove_on_root(path);
}

/* Graphs but no substitution set: reading substitutions gives 0 rows, and
 * only rank 0 has anything to write. */
static void test_no_substs(void) {
  char path[256];
  taso_provenance_t prov = small_prov();
  taso_artifact_t *a = NULL;
  taso_graph_t mine, *g = NULL;
  taso_subst_t *s = NULL;
  int64_t ng = -1, ns = -1, first = -1;
  snprintf(path, sizeof path, "%s", tmpname("nosubsts"));
  make_graph(0, 3, &mine);
  CHECK_OK(taso_artifact_create(MPI_COMM_WORLD, path, TASO_KIND_CANDIDATES, &prov, &a));
  if (!a) return;
  CHECK_OK(taso_artifact_write_graphs(a, &mine, rank == 0 ? 1 : 0, &first));
  CHECK(first == (rank == 0 ? 0 : 1));
  CHECK_OK(taso_artifact_close(a));
  a = NULL;
  CHECK_OK(taso_artifact_open(MPI_COMM_WORLD, path, NULL, &a));
  if (!a) return;
  CHECK_OK(taso_artifact_read_graphs(a, &g, &ng));
  CHECK(ng == 1 && graphs_equal(&g[0], &mine));
  CHECK_OK(taso_artifact_read_substs(a, &s, &ns));
  CHECK(ns == 0 && s == NULL);
  /* No input table was written, and it is not optional. */
  taso_inputs_t in;
  CHECK_ERR(taso_artifact_read_inputs(a, &in), TASO_ERR_FORMAT);
  CHECK(strstr(taso_error_detail(), "/inputs") != NULL);
  CHECK(same_everywhere(taso_error_detail()));
  CHECK_OK(taso_artifact_close(a));
  taso_graphs_free(g, ng);
  taso_graph_free(&mine);
  remove_on_root(path);
}

static void test_missing(void) {
  char path[256];
  taso_artifact_t *a = NULL;
  snprintf(path, sizeof path, "%s", tmpname("missing"));
  remove_on_root(path);
  CHECK_ERR(taso_artifact_open(MPI_COMM_WORLD, path, TASO_KIND_CANDIDATES, &a), TASO_ERR_IO);
  CHECK(a == NULL);
  CHECK(strstr(taso_error_detail(), path) && strstr(taso_error_detail(), "no such file"));
  CHECK(same_everywhere(taso_error_detail()));
}

/* Copies src to dst and cuts the copy to half its size. */
static bool copy_truncated(const char *src, const char *dst) {
  FILE *in = fopen(src, "rb"), *out = fopen(dst, "wb");
  char buf[4096];
  size_t got;
  long total = 0;
  bool ok = in && out;
  while (ok && (got = fread(buf, 1, sizeof buf, in)) > 0) {
    ok = fwrite(buf, 1, got, out) == got;
    total += (long)got;
  }
  if (in) fclose(in);
  if (out && fclose(out) != 0) ok = false;
  return ok && total > 0 && truncate(dst, total / 2) == 0;
}

static void test_truncated(void) {
  char path[256], cut[256];
  taso_artifact_t *a = NULL;
  int ok = 1;
  snprintf(path, sizeof path, "%s", tmpname("whole"));
  snprintf(cut, sizeof cut, "%s", tmpname("truncated"));
  write_reference(path);
  if (rank == 0) ok = copy_truncated(path, cut);
  MPI_Bcast(&ok, 1, MPI_INT, 0, MPI_COMM_WORLD);
  CHECK(ok);
  CHECK_ERR(taso_artifact_open(MPI_COMM_WORLD, cut, TASO_KIND_CANDIDATES, &a), TASO_ERR_FORMAT);
  CHECK(a == NULL);
  CHECK(strstr(taso_error_detail(), cut) &&
        strstr(taso_error_detail(), "not a readable HDF5 file (truncated or foreign)"));
  CHECK(same_everywhere(taso_error_detail()));
  remove_on_root(path);
  remove_on_root(cut);
}

static void test_foreign(void) {
  char h5[256], text[256], other[256];
  taso_artifact_t *a = NULL;
  taso_provenance_t prov = small_prov();
  int ok = 1;
  snprintf(h5, sizeof h5, "%s", tmpname("foreign"));
  snprintf(text, sizeof text, "%s", tmpname("text"));
  snprintf(other, sizeof other, "%s", tmpname("validation"));
  if (rank == 0) {
    /* A plain HDF5 file with a group and no kind attribute. */
    hid_t f = H5Fcreate(h5, H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT), grp = -1;
    ok = f >= 0 && (grp = H5Gcreate2(f, "data", H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT)) >= 0;
    if (grp >= 0 && H5Gclose(grp) < 0) ok = 0;
    if (f >= 0 && H5Fclose(f) < 0) ok = 0;
    FILE *t = fopen(text, "w");
    ok = ok && t && fputs("[job]\nname = not hdf5\n", t) >= 0;
    if (t && fclose(t) != 0) ok = 0;
  }
  MPI_Bcast(&ok, 1, MPI_INT, 0, MPI_COMM_WORLD);
  CHECK(ok);

  CHECK_ERR(taso_artifact_open(MPI_COMM_WORLD, h5, TASO_KIND_CANDIDATES, &a), TASO_ERR_FORMAT);
  CHECK(strstr(taso_error_detail(), h5) && strstr(taso_error_detail(), "kind") &&
        strstr(taso_error_detail(), TASO_KIND_CANDIDATES));
  CHECK(same_everywhere(taso_error_detail()));
  CHECK_ERR(taso_artifact_open(MPI_COMM_WORLD, h5, NULL, &a), TASO_ERR_FORMAT);
  CHECK_ERR(taso_artifact_open(MPI_COMM_WORLD, text, NULL, &a), TASO_ERR_FORMAT);
  CHECK(strstr(taso_error_detail(), "not a readable HDF5 file"));
  CHECK(a == NULL);

  /* A taso artifact of another kind names both kinds. */
  CHECK_OK(taso_artifact_create(MPI_COMM_WORLD, other, TASO_KIND_VALIDATION, &prov, &a));
  if (a) CHECK_OK(taso_artifact_close(a));
  a = NULL;
  CHECK_ERR(taso_artifact_open(MPI_COMM_WORLD, other, TASO_KIND_CANDIDATES, &a), TASO_ERR_FORMAT);
  CHECK(strstr(taso_error_detail(), TASO_KIND_VALIDATION) &&
        strstr(taso_error_detail(), TASO_KIND_CANDIDATES));
  CHECK(same_everywhere(taso_error_detail()));
  /* With no kind asked for, any artifact opens; it has no graph set. */
  CHECK_OK(taso_artifact_open(MPI_COMM_WORLD, other, NULL, &a));
  if (a) {
    taso_graph_t *g = NULL;
    int64_t ng = -1;
    CHECK_ERR(taso_artifact_read_graphs(a, &g, &ng), TASO_ERR_FORMAT);
    CHECK(strstr(taso_error_detail(), "/graphs/index") && g == NULL && ng == 0);
    CHECK_OK(taso_artifact_close(a));
  }
  remove_on_root(h5);
  remove_on_root(text);
  remove_on_root(other);
}

static void test_create_fails(void) {
  taso_artifact_t *a = NULL;
  taso_provenance_t prov = small_prov();
  CHECK_ERR(
      taso_artifact_create(MPI_COMM_WORLD, "no/such/dir/x.h5", TASO_KIND_CANDIDATES, &prov, &a),
      TASO_ERR_IO);
  CHECK(a == NULL && strstr(taso_error_detail(), "no/such/dir/x.h5"));
  CHECK(same_everywhere(taso_error_detail()));
}

static void test_time(void) {
  char buf[32];
  taso_now_iso8601(buf);
  CHECK(strlen(buf) == 20 && buf[4] == '-' && buf[10] == 'T' && buf[13] == ':' && buf[19] == 'Z');
}

/* Every rank's verdict: the run fails if any rank saw a failure. */
static int all_ranks(int status) {
  int worst = 0;
  MPI_Allreduce(&status, &worst, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
  return worst;
}

int main(int argc, char **argv) {
  int status;
  MPI_Init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  if (argc == 3 && strcmp(argv[1], "write") == 0) {
    write_reference(argv[2]);
    status = test_failures ? 1 : 0;
  } else if (argc == 4 && strcmp(argv[1], "read") == 0) {
    check_reference(argv[2], atoi(argv[3]));
    status = test_failures ? 1 : 0;
  } else if (argc == 1) {
    static const test_case_t cases[] = {
        TEST(test_time),    TEST(test_round_trip), TEST(test_empty),   TEST(test_no_substs),
        TEST(test_missing), TEST(test_truncated),  TEST(test_foreign), TEST(test_create_fails),
    };
    status = test_run(cases, (int)(sizeof cases / sizeof *cases));
  } else {
    if (rank == 0) fprintf(stderr, "usage: %s [write FILE | read FILE WRITER_RANKS]\n", argv[0]);
    status = 2;
  }
  if (argc > 1 && rank == 0) printf("%d checks, %d failed\n", test_checks, test_failures);
  status = all_ranks(status);
  MPI_Finalize();
  return status;
}
