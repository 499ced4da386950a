/*
 * Job files: the three shipped jobs load with the settings they promise, and
 * every kind of malformed file is refused with the right code and a message
 * that points at the file and line of the problem.
 */
#define _XOPEN_SOURCE 700 /* mkdtemp */

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "job.h"
#include "test.h"

static char tmpdir[64];
static int nwritten;
static char written[64][128];

/* Path of a file in the source tree's jobs/ folder. */
static const char *job_path(const char *name) {
  static char buf[1024];
  const char *src = getenv("TASO_SOURCE_DIR");
  snprintf(buf, sizeof buf, "%s/jobs/%s", src ? src : ".", name);
  return buf;
}

/* Writes text to a fresh file in the temporary folder; returns its path. */
static const char *write_file(const char *name, const char *text) {
  if (nwritten == (int)(sizeof written / sizeof written[0])) abort(); /* grow written[] */
  char *path = written[nwritten++];
  snprintf(path, sizeof written[0], "%s/%s", tmpdir, name);
  FILE *f = fopen(path, "w");
  if (!f) {
    perror(path);
    abort();
  }
  fputs(text, f);
  fclose(f);
  return path;
}

static const taso_input_t *input(const taso_job_t *job, const char *name) {
  int i = taso_inputs_find(&job->inputs, name);
  return i >= 0 ? &job->inputs.v[i] : NULL;
}

static bool has_shape(const taso_job_t *job, const char *name, int rank, int32_t d0, int32_t d1,
                      int32_t d2, int32_t d3) {
  const taso_input_t *in = input(job, name);
  int32_t d[4] = {d0, d1, d2, d3};
  if (!in || in->type.rank != rank) return false;
  for (int i = 0; i < rank; i++)
    if (in->type.dim[i] != d[i]) return false;
  return true;
}

static int count_kind(const taso_job_t *job, taso_op_kind_t kind) {
  int n = 0;
  for (int i = 0; i < job->nops; i++)
    n += job->ops[i].kind == kind;
  return n;
}

/* Loading text must fail with code, and the message must name the file and
 * the line ("FILE:LINE:"); line 0 means the message has no line. */
static void expect_error(const char *name, const char *text, taso_err_t code, int line,
                         const char *fragment) {
  const char *path = write_file(name, text);
  taso_job_t job;
  taso_err_t err = taso_job_load(path, &job);
  test_checks++;
  if (err != code) {
    test_failures++;
    fprintf(stderr, "%s: returned %s, expected %s (%s)\n", name, taso_strerror(err),
            taso_strerror(code), taso_error_detail());
    return;
  }
  char where[256];
  if (line > 0)
    snprintf(where, sizeof where, "%s:%d: ", path, line);
  else
    snprintf(where, sizeof where, "%s: ", path);
  const char *detail = taso_error_detail();
  CHECK(strstr(detail, where) == detail);
  CHECK(fragment == NULL || strstr(detail, fragment) != NULL);
  if (strstr(detail, where) != detail || (fragment && !strstr(detail, fragment)))
    fprintf(stderr, "  %s: message '%s', wanted '%s' and '%s'\n", name, detail, where,
            fragment ? fragment : "");
  /* A failed load leaves nothing to free, and freeing it again is harmless. */
  CHECK(job.text == NULL && job.path == NULL && job.inputs.n == 0 && job.nops == 0);
  taso_job_free(&job);
}

static void test_smoke(void) {
  taso_job_t job;
  CHECK_OK(taso_job_load(job_path("smoke.ini"), &job));
  CHECK_STR(job.name, "smoke");
  CHECK(job.seed == 1);
  CHECK(job.inputs.n == 6);
  CHECK(has_shape(&job, "x1", 2, 2, 4, 0, 0));
  CHECK(has_shape(&job, "x2", 2, 2, 4, 0, 0));
  CHECK(has_shape(&job, "w2", 2, 4, 4, 0, 0));
  CHECK(has_shape(&job, "i1", 4, 1, 2, 3, 3));
  CHECK(has_shape(&job, "w4", 4, 2, 2, 3, 3));
  CHECK(job.max_ops == 2);
  CHECK(job.nops == 7);
  CHECK(count_kind(&job, TASO_OP_CONCAT) == 2);
  CHECK(count_kind(&job, TASO_OP_CONV2D) == 1);
  CHECK(job.nsizes == 2 && job.sizes[0] == 1 && job.sizes[1] == 2);
  CHECK_STR(job.axioms, "data/axioms");
  CHECK(job.text != NULL && strstr(job.text, "[generate]") != NULL);
  CHECK(job.path != NULL && strstr(job.path, "smoke.ini") != NULL);
  taso_job_free(&job);
  CHECK(job.text == NULL && job.inputs.v == NULL);
}

/* The original's space (semantics.md section 3), shared by two jobs. */
static void check_original_space(const taso_job_t *job) {
  CHECK(job->inputs.n == 20);
  CHECK(has_shape(job, "x3", 2, 2, 4, 0, 0));
  CHECK(has_shape(job, "w3", 2, 4, 4, 0, 0));
  CHECK(has_shape(job, "i3", 4, 2, 4, 5, 5));
  CHECK(has_shape(job, "w6", 4, 4, 4, 3, 3));
  CHECK(has_shape(job, "w9", 4, 4, 4, 1, 3));
  CHECK(has_shape(job, "w12", 4, 4, 4, 3, 1));
  CHECK(has_shape(job, "w13", 4, 4, 1, 3, 3));
  CHECK(has_shape(job, "s0", 0, 0, 0, 0, 0));
  CHECK(job->nops == 20);
  CHECK(count_kind(job, TASO_OP_CONV2D) == 2);
  CHECK(count_kind(job, TASO_OP_TRANSPOSE) == 2);
  CHECK(count_kind(job, TASO_OP_CONCAT) == 2);
  CHECK(count_kind(job, TASO_OP_SPLIT) == 2);
  int relu_conv = 0, views = 0, axes = 0;
  for (int i = 0; i < job->nops; i++) {
    const taso_op_template_t *t = &job->ops[i];
    if (t->kind == TASO_OP_CONV2D) {
      relu_conv += t->p.act == TASO_ACT_RELU;
      CHECK(t->p.stride[0] == 1 && t->p.stride[1] == 1 && t->p.pad == TASO_PAD_SAME);
    }
    if (t->kind == TASO_OP_TRANSPOSE) views += t->p.layout == TASO_LAYOUT_VIEW;
    if (t->kind == TASO_OP_CONCAT || t->kind == TASO_OP_SPLIT) axes |= 1 << t->p.axis;
    if (t->kind == TASO_OP_POOL_AVG || t->kind == TASO_OP_POOL_MAX ||
        t->kind == TASO_OP_CONST_POOL || t->kind == TASO_OP_CONST_ICONV ||
        t->kind == TASO_OP_ENLARGE)
      CHECK(t->p.kernel[0] == 3 && t->p.kernel[1] == 3);
  }
  CHECK(relu_conv == 1);
  CHECK(views == 1);
  CHECK(axes == 3);
  CHECK(count_kind(job, TASO_OP_CONST_IMM) == 1 && count_kind(job, TASO_OP_CONST_ONE) == 1);
}

static void test_workstation(void) {
  taso_job_t job;
  CHECK_OK(taso_job_load(job_path("workstation.ini"), &job));
  CHECK_STR(job.name, "workstation");
  check_original_space(&job);
  CHECK(job.max_ops == 3);
  CHECK(job.nsizes == 2 && job.sizes[0] == 1 && job.sizes[1] == 2);
  CHECK_STR(job.method,
            "representatives"); /* the exhaustive set derives from it (bench/derive.sh) */
  taso_job_free(&job);
}

static void test_paper(void) {
  taso_job_t paper, ws;
  CHECK_OK(taso_job_load(job_path("paper.ini"), &paper));
  CHECK_OK(taso_job_load(job_path("workstation.ini"), &ws));
  CHECK_STR(paper.name, "paper");
  check_original_space(&paper);
  CHECK(paper.max_ops == 4);
  CHECK(paper.nsizes == 4);
  for (int i = 0; i < 4 && i < paper.nsizes; i++)
    CHECK(paper.sizes[i] == i + 1);
  /* The same space as workstation.ini, in the same order. */
  CHECK(paper.nops == ws.nops && memcmp(paper.ops, ws.ops, sizeof ws.ops[0] * ws.nops) == 0);
  CHECK(paper.inputs.n == ws.inputs.n);
  for (int i = 0; i < ws.inputs.n && i < paper.inputs.n; i++) {
    CHECK_STR(paper.inputs.v[i].name, ws.inputs.v[i].name);
    CHECK(taso_tensor_equal(&paper.inputs.v[i].type, &ws.inputs.v[i].type));
  }
  CHECK_STR(paper.method, "representatives");
  CHECK_STR(paper.weights, ws.weights);
  CHECK(ws.weights[0] != '\0');
  /* paper5.ini: the same space, one operator more */
  taso_job_t p5;
  CHECK_OK(taso_job_load(job_path("paper5.ini"), &p5));
  CHECK(p5.max_ops == 5);
  CHECK(p5.nops == ws.nops && memcmp(p5.ops, ws.ops, sizeof ws.ops[0] * ws.nops) == 0);
  CHECK(p5.inputs.n == ws.inputs.n);
  CHECK_STR(p5.weights, ws.weights);
  taso_job_free(&p5);
  taso_job_free(&paper);
  taso_job_free(&ws);
}

static void test_defaults(void) {
  taso_job_t job;
  const char *path = write_file("plain.ini", "[inputs]\nx = 3\n");
  CHECK_OK(taso_job_load(path, &job));
  CHECK_STR(job.name, "plain");
  CHECK(job.seed == 1 && job.max_ops == 3);
  CHECK(job.verify_timeout == 5.0 && job.validate_timeout == 10.0);
  CHECK(job.nsizes == 4 && job.sizes[3] == 4);
  CHECK_STR(job.axioms, "data/axioms");
  CHECK(has_shape(&job, "x", 1, 3, 0, 0, 0));
  CHECK(job.nops == 0);
  taso_job_free(&job);
}

/* [optimize]: the paper's defaults, values, and values the search cannot
 * use. */
static void test_optimize(void) {
  taso_job_t job;
  const char *path = write_file("opt_plain.ini", "[inputs]\nx = 3\n");
  CHECK_OK(taso_job_load(path, &job));
  CHECK_STR(job.search, "backtracking");
  CHECK(job.alpha == 1.05 && job.budget == 1000 && job.optimize_time_limit == 600);
  CHECK(!job.chain);
  CHECK(!taso_job_given(&job, "optimize", "alpha"));
  taso_job_free(&job);
  path = write_file("opt_set.ini", "[optimize]\nsearch = backtracking\nalpha = 1.0\n"
                                   "budget = 0\ntime_limit = 2.5\nchain = on\n");
  CHECK_OK(taso_job_load(path, &job));
  CHECK(job.alpha == 1.0 && job.budget == 0 && job.optimize_time_limit == 2.5 && job.chain);
  CHECK(taso_job_given(&job, "optimize", "budget"));
  taso_job_free(&job);
  expect_error("opt_alpha.ini", "[optimize]\nalpha = 0.9\n", TASO_ERR_PARSE, 2, "alpha");
  expect_error("opt_budget.ini", "[optimize]\nbudget = -1\n", TASO_ERR_PARSE, 2, "budget");
  expect_error("opt_search.ini", "[optimize]\nsearch = greedy\n", TASO_ERR_UNKNOWN, 2,
               "unknown search 'greedy'");
  expect_error("opt_key.ini", "[optimize]\nbeam = 3\n", TASO_ERR_UNKNOWN, 2, "beam");
  expect_error("opt_chain.ini", "[optimize]\nchain = yes\n", TASO_ERR_PARSE, 2,
               "chain must be on or off, not 'yes'");
}

static void test_values(void) {
  taso_job_t job;
  const char *path =
      write_file("values.ini", "; a comment\n"
                               "[job]\n"
                               "name = v-1.b\n"
                               "seed = 18446744073709551615\n"
                               "[generate]\n"
                               "max_ops = 8\n"
                               "operators =\n"
                               "    conv2d( s = 2x2 , act = relu )  pool_max(k=3x3,pad=valid)\n"
                               "\n"
                               "# comments and blank lines do not end a value\n"
                               "    concat(axis=3)\n"
                               "[verify]\n"
                               "timeout = 0.25\n"
                               "axioms = /tmp/ax\n"
                               "[validate]\n"
                               "sizes = 16, 3 ,1\n"
                               "timeout = 1e3\n");
  CHECK_OK(taso_job_load(path, &job));
  CHECK_STR(job.name, "v-1.b");
  CHECK(job.seed == UINT64_MAX);
  CHECK(job.max_ops == 8);
  CHECK(job.nops == 3);
  CHECK(job.ops[0].kind == TASO_OP_CONV2D && job.ops[0].p.stride[0] == 2 &&
        job.ops[0].p.act == TASO_ACT_RELU);
  CHECK(job.ops[1].kind == TASO_OP_POOL_MAX && job.ops[1].p.pad == TASO_PAD_VALID);
  CHECK(job.ops[2].kind == TASO_OP_CONCAT && job.ops[2].p.axis == 3);
  CHECK(job.verify_timeout == 0.25 && job.validate_timeout == 1000.0);
  CHECK_STR(job.axioms, "/tmp/ax");
  CHECK(job.nsizes == 3 && job.sizes[0] == 16 && job.sizes[1] == 3 && job.sizes[2] == 1);
  taso_job_free(&job);
}

static void test_parse_sizes(void) {
  int32_t s[TASO_MAX_SIZES];
  int n = -1;
  CHECK_OK(taso_parse_sizes("1,2,3", s, &n));
  CHECK(n == 3 && s[0] == 1 && s[2] == 3);
  CHECK_OK(taso_parse_sizes(" 4 , 1", s, &n));
  CHECK(n == 2 && s[0] == 4 && s[1] == 1);
  CHECK_OK(taso_parse_sizes("1,2,3,4,5,6,7,8", s, &n));
  CHECK(n == 8);
  n = -1;
  CHECK_ERR(taso_parse_sizes("", s, &n), TASO_ERR_PARSE);
  CHECK(n == -1); /* untouched on failure */
  CHECK_ERR(taso_parse_sizes("1,,2", s, &n), TASO_ERR_PARSE);
  CHECK_ERR(taso_parse_sizes("1,2,", s, &n), TASO_ERR_PARSE);
  CHECK_ERR(taso_parse_sizes("3x", s, &n), TASO_ERR_PARSE);
  CHECK_ERR(taso_parse_sizes("-1", s, &n), TASO_ERR_PARSE);
  CHECK_ERR(taso_parse_sizes("0", s, &n), TASO_ERR_PARSE);
  CHECK_ERR(taso_parse_sizes("17", s, &n), TASO_ERR_PARSE);
  CHECK_ERR(taso_parse_sizes("99999999999999999999", s, &n), TASO_ERR_PARSE);
  CHECK_ERR(taso_parse_sizes("1,1", s, &n), TASO_ERR_PARSE);
  CHECK_ERR(taso_parse_sizes("1 2", s, &n), TASO_ERR_PARSE);
  CHECK_ERR(taso_parse_sizes("1,2,3,4,5,6,7,8,9", s, &n), TASO_ERR_LIMIT);
}

static void test_syntax_errors(void) {
  expect_error("noeq.ini", "[job]\nname = t\nthis line has no equals sign\n", TASO_ERR_PARSE, 3,
               "expected 'key = value'");
  expect_error("unclosed.ini", "# a job\n[job\nname = t\n", TASO_ERR_PARSE, 2, "no closing ']'");
  expect_error("nosection.ini", "seed = 3\n[job]\n", TASO_ERR_PARSE, 1, "before any [section]");
  /* A syntax error is reported even when a bad key comes first... */
  expect_error("order1.ini", "[job]\nfoo = 1\nbroken line\n", TASO_ERR_UNKNOWN, 2,
               "unknown key 'foo'");
  /* ...and the earlier of the two wins either way. */
  expect_error("order2.ini", "[job]\nbroken line\nfoo = 1\n", TASO_ERR_PARSE, 2, NULL);
  char longline[400];
  snprintf(longline, sizeof longline, "[generate]\nmax_ops = 2\noperators = %0250d\n", 0);
  expect_error("long.ini", longline, TASO_ERR_PARSE, 3, "characters");
}

static void test_unknown_names(void) {
  expect_error("key.ini", "[job]\nseed = 2\n\n[generate]\nmax_ops = 2\nfoo = 1\n", TASO_ERR_UNKNOWN,
               6, "unknown key 'foo' in section [generate]");
  expect_error("section.ini", "[job]\nseed = 2\n[bogus]\nx = 1\n", TASO_ERR_UNKNOWN, 4,
               "unknown section [bogus]");
  expect_error("operator.ini",
               "[generate]\nmax_ops = 2\noperators = matmul relu\n    ewadd frobnicate ewmul\n",
               TASO_ERR_UNKNOWN, 4, "frobnicate");
  expect_error("param.ini", "[generate]\noperators = conv2d(colour=red)\n", TASO_ERR_UNKNOWN, 2,
               "colour");
}

static void test_bad_values(void) {
  expect_error("zero.ini", "[inputs]\nx1 = 2x4\nx2 = 2x0\n", TASO_ERR_SHAPE, 3, "2x0");
  expect_error("rank5.ini", "[inputs]\nx1 = 1x1x1x1x1\n", TASO_ERR_SHAPE, 2, NULL);
  expect_error("shape.ini", "[inputs]\nx1 = 3x\n", TASO_ERR_PARSE, 2, "3x");
  expect_error("shape2.ini", "[inputs]\nx1 = 2 x 4\n", TASO_ERR_PARSE, 2, NULL);
  expect_error("number.ini", "[generate]\nmax_ops = 3x\n", TASO_ERR_PARSE, 2, "'3x'");
  expect_error("maxops.ini", "[generate]\nmax_ops = 9\n", TASO_ERR_PARSE, 2, "max_ops");
  expect_error("seed.ini", "[job]\nseed = -1\n", TASO_ERR_PARSE, 2, "seed");
  expect_error("seed2.ini", "[job]\nseed = 18446744073709551616\n", TASO_ERR_PARSE, 2, NULL);
  expect_error("sizes.ini", "[validate]\ntimeout = 3\nsizes = 1,17\n", TASO_ERR_PARSE, 3, "17");
  expect_error("sizes0.ini", "[validate]\nsizes = 0,1\n", TASO_ERR_PARSE, 2, NULL);
  expect_error("sizes9.ini", "[validate]\nsizes = 1,2,3,4,5,6,7,8,9\n", TASO_ERR_LIMIT, 2, NULL);
  expect_error("timeout.ini", "[verify]\ntimeout = 0\n", TASO_ERR_PARSE, 2, "timeout");
  expect_error("timeout2.ini", "[validate]\ntimeout = nan\n", TASO_ERR_PARSE, 2, NULL);
  expect_error("timeout3.ini", "[validate]\ntimeout = 5s\n", TASO_ERR_PARSE, 2, NULL);
  expect_error("twice.ini", "[generate]\nmax_ops = 2\nmax_ops = 3\n", TASO_ERR_PARSE, 3,
               "second value");
  expect_error("cont.ini", "[generate]\nmax_ops = 2\n   3\n", TASO_ERR_PARSE, 3, NULL);
  expect_error("dupinput.ini", "[inputs]\nx1 = 2x4\nx2 = 4\nx1 = 2\n", TASO_ERR_PARSE, 4, "twice");
  expect_error("opname.ini", "[inputs]\nrelu = 2x4\n", TASO_ERR_PARSE, 2, "relu");
  expect_error("badname.ini", "[inputs]\n1x = 2x4\n", TASO_ERR_PARSE, 2, NULL);
  expect_error("jobname.ini", "[job]\nname = a b\n", TASO_ERR_PARSE, 2, NULL);
  expect_error("paren.ini", "[generate]\noperators = relu conv2d(act=relu\n", TASO_ERR_PARSE, 2,
               "parentheses");
  expect_error("paren2.ini", "[generate]\noperators = relu)\n", TASO_ERR_PARSE, 2, "parentheses");
  expect_error("duptemplate.ini", "[generate]\noperators = conv2d relu\n  conv2d(act=none)\n",
               TASO_ERR_PARSE, 3, "conv2d(act=none)");
  expect_error("nokernel.ini", "[generate]\noperators = pool_avg\n", TASO_ERR_PARSE, 2, "pool_avg");
}

static void test_missing_file(void) {
  char path[128];
  snprintf(path, sizeof path, "%s/no-such-job.ini", tmpdir);
  taso_job_t job;
  CHECK_ERR(taso_job_load(path, &job), TASO_ERR_IO);
  CHECK(strstr(taso_error_detail(), path) == taso_error_detail());
  CHECK(strstr(taso_error_detail(), "cannot open") != NULL);
  CHECK(job.text == NULL && job.path == NULL);
  CHECK_ERR(taso_job_load(tmpdir, &job), TASO_ERR_IO); /* a folder, not a file */
}

int main(void) {
  snprintf(tmpdir, sizeof tmpdir, "/tmp/test_job.XXXXXX");
  if (!mkdtemp(tmpdir)) {
    perror("mkdtemp");
    return 1;
  }
  static const test_case_t cases[] = {
      TEST(test_smoke),         TEST(test_workstation),   TEST(test_paper),
      TEST(test_defaults),      TEST(test_values),        TEST(test_parse_sizes),
      TEST(test_syntax_errors), TEST(test_unknown_names), TEST(test_bad_values),
      TEST(test_missing_file),  TEST(test_optimize),
  };
  int rc = test_run(cases, (int)(sizeof cases / sizeof cases[0]));
  for (int i = 0; i < nwritten; i++)
    remove(written[i]);
  rmdir(tmpdir);
  return rc;
}
