/*
 * taso-conformance: the ONNX backend node tests (Debian's libonnx-testdata)
 * for every operator taso imports. Each test that uses one of them is
 * imported, run on its test_data_set_0 inputs and compared with the
 * expected outputs (|a - e| <= 1e-4 + 1e-3 |e|); a test that cannot be
 * imported is counted as not runnable with its reason, never dropped.
 *
 * The evaluation is one function (eval_fn_t): the reference evaluation of
 * the operator registry now; a runtime backend slots in beside it.
 *
 *   taso-conformance [--dir DIR] [--markdown FILE [--fresh]] [--verbose]
 * Exit status 1 when a runnable test fails or an imported operator has no
 * runnable test.
 */
#define _POSIX_C_SOURCE 200809L
#include <dirent.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "eval.h"
#include "onnx.h"
#include "replace.h"
#include "runtime.h"

/* Runs m on its run-time inputs (model input order, weights excluded) and
 * gives one malloc'd array per model output. */
typedef taso_err_t (*eval_fn_t)(const taso_model_t *m, float *const *inputs, float **outputs);

/* The reference: taso_eval_graph_double over the model's graph. */
static taso_err_t eval_reference(const taso_model_t *m, float *const *inputs, float **outputs) {
  int n = m->inputs.n, nv = 2 * m->graph.nnodes, k = 0;
  double **in = calloc((size_t)n, sizeof *in), **values = calloc((size_t)nv, sizeof *values);
  taso_err_t err = in && values ? TASO_OK : taso_error(TASO_ERR_NOMEM, "evaluation");
  for (int i = 0; i < n && err == TASO_OK; i++) {
    int64_t size = taso_tensor_size(&m->inputs.v[i].type);
    const float *src = m->is_weight[i] ? m->data[i] : inputs[k++];
    in[i] = malloc(sizeof(double) * (size_t)size);
    if (!in[i] || !src) err = taso_error(TASO_ERR_NOMEM, "input %d", i);
    for (int64_t j = 0; err == TASO_OK && j < size; j++)
      in[i][j] = src[j];
  }
  if (err == TASO_OK) err = taso_eval_graph_double(NULL, &m->graph, m->types, in, values);
  for (int o = 0; o < m->graph.noutputs && err == TASO_OK; o++) {
    taso_ref_t r = m->graph.outputs[o];
    int64_t size = taso_tensor_size(&m->types[r]);
    outputs[o] = malloc(sizeof(float) * (size_t)(size ? size : 1));
    if (!outputs[o]) err = taso_error(TASO_ERR_NOMEM, "output %d", o);
    for (int64_t j = 0; err == TASO_OK && j < size; j++)
      outputs[o][j] = (float)values[r][j];
  }
  if (values) taso_values_free((void **)values, nv);
  for (int i = 0; in && i < n; i++)
    free(in[i]);
  free(in);
  free(values);
  return err;
}

/* A backend of the runtime: the model is planned on it (fusion on, as a
 * real run plans it) and run once. Steps the backend does not support fall
 * back to the reference kernel; they are counted, not hidden. */
static const taso_backend_t *backend;
static taso_rt_ctx_t *backend_ctx;
static int fallback_tests;

static taso_err_t eval_backend(const taso_model_t *m, float *const *inputs, float **outputs) {
  taso_rt_plan_t *plan = NULL;
  taso_err_t err = taso_rt_plan(backend, backend_ctx, (taso_model_t *)m, NULL, &plan);
  for (int o = 0; o < m->graph.noutputs && err == TASO_OK; o++) {
    int64_t size = taso_tensor_size(&m->types[m->graph.outputs[o]]);
    if (!(outputs[o] = malloc(sizeof(float) * (size_t)(size ? size : 1))))
      err = taso_error(TASO_ERR_NOMEM, "output %d", o);
  }
  if (err == TASO_OK) err = taso_rt_run(plan, (const float *const *)inputs, outputs);
  bool fell_back = false;
  for (int i = 0; plan && i < taso_rt_plan_steps(plan); i++) {
    taso_rt_step_info_t info;
    taso_rt_plan_step(plan, i, &info);
    fell_back = fell_back || info.fallback;
  }
  fallback_tests += fell_back;
  if (plan) taso_rt_plan_free(plan);
  return err;
}

/* ---- one test ---------------------------------------------------------------- */

enum { PASSED, FAILED, NOT_RUNNABLE };

typedef struct {
  int result;    /* PASSED, FAILED, NOT_RUNNABLE */
  int bound;     /* ran with its inputs after the first (or all) bound as initializers */
  char why[160]; /* NOT_RUNNABLE: the reason; FAILED: what differed */
} outcome_t;

/* Test data: input_K.pb / output_K.pb of test_data_set_0. */
typedef struct {
  Onnx__TensorProto *t[16]; /* the tensors read */
  int n;                    /* how many */
} tensors_t;

static void tensors_free(tensors_t *ts) {
  for (int i = 0; i < ts->n; i++)
    onnx__tensor_proto__free_unpacked(ts->t[i], NULL);
  ts->n = 0;
}

static taso_err_t read_tensors(const char *dir, const char *kind, tensors_t *ts) {
  ts->n = 0;
  for (int i = 0; i < 16; i++) {
    char path[1024];
    if (snprintf(path, sizeof path, "%s/test_data_set_0/%s_%d.pb", dir, kind, i) >=
        (int)sizeof path)
      return taso_error(TASO_ERR_LIMIT, "%s: path too long", dir);
    FILE *f = fopen(path, "rb");
    if (!f) break;
    fclose(f);
    TASO_TRY(taso_onnx_load_tensor(path, &ts->t[ts->n]));
    ts->n++;
  }
  return TASO_OK;
}

/* The short reason of an import refusal: "Op: reason" of the first listed
 * node, or the input's reason. */
static void short_reason(const char *detail, char *buf, size_t len) {
  const char *s = strstr(detail, "not supported: ");
  if (!s) {
    const char *colon = strstr(detail, ": ");
    snprintf(buf, len, "%s", colon ? colon + 2 : detail);
    return;
  }
  s += strlen("not supported: ");
  if (!strncmp(s, "input ", 6) || !strncmp(s, "output ", 7)) {
    const char *r = strstr(s, ": ");
    snprintf(buf, len, "%.*s", (int)strcspn(r ? r + 2 : s, ","), r ? r + 2 : s);
    return;
  }
  const char *op = strchr(s, '('), *opset = strstr(s, ", opset ");
  const char *r = opset ? strstr(opset, ": ") : NULL;
  if (!op || !opset || !r) {
    snprintf(buf, len, "%s", s);
    return;
  }
  snprintf(buf, len, "%.*s: %.*s", (int)(opset - op - 1), op + 1, (int)strcspn(r + 2, ")"), r + 2);
}

/* Graph inputs from `from` on (1: all but the data; 0: all, for the
 * operators import computes on constants) bound to the test's values. */
static int bind_inputs(const Onnx__ModelProto *mp, const tensors_t *in, size_t from,
                       taso_onnx_binding_t *b) {
  int n = 0;
  for (size_t i = from; i < mp->graph->n_input && (int)i < in->n && n < 16; i++)
    b[n++] = (taso_onnx_binding_t){.name = mp->graph->input[i]->name, .value = in->t[i]};
  return n;
}

/* The test tensor for model input/output `name` at position pos: by name,
 * else by position. */
static const Onnx__TensorProto *match(const tensors_t *ts, const char *name, int pos) {
  for (int i = 0; i < ts->n; i++)
    if (ts->t[i]->name && !strcmp(ts->t[i]->name, name)) return ts->t[i];
  return pos < ts->n ? ts->t[pos] : NULL;
}

static int graph_input_pos(const Onnx__ModelProto *mp, const char *name) {
  for (size_t i = 0; i < mp->graph->n_input; i++)
    if (!strcmp(mp->graph->input[i]->name, name)) return (int)i;
  return -1;
}

/* Float values of a test tensor for a model tensor of `size` elements. */
static taso_err_t test_values(const Onnx__TensorProto *t, int64_t size, float **out) {
  if (!t) return taso_error(TASO_ERR_FORMAT, "no test data");
  if (taso_onnx_numel(t) != size)
    return taso_error(TASO_ERR_FORMAT, "test data of %lld elements for %lld",
                      (long long)taso_onnx_numel(t), (long long)size);
  *out = malloc(sizeof(float) * (size_t)(size ? size : 1));
  if (!*out) return taso_error(TASO_ERR_NOMEM, "test data");
  taso_err_t err = TASO_OK;
  if (t->data_type == ONNX__TENSOR_PROTO__DATA_TYPE__INT64 ||
      t->data_type == ONNX__TENSOR_PROTO__DATA_TYPE__INT32 ||
      t->data_type == ONNX__TENSOR_PROTO__DATA_TYPE__BOOL) {
    int64_t *v = malloc(sizeof *v * (size_t)(size ? size : 1));
    err = v ? taso_onnx_values_int(t, v, size) : taso_error(TASO_ERR_NOMEM, "test data");
    for (int64_t i = 0; err == TASO_OK && i < size; i++)
      (*out)[i] = (float)v[i];
    free(v);
  } else {
    err = taso_onnx_values_float(t, *out, size);
  }
  if (err != TASO_OK) {
    free(*out);
    *out = NULL;
  }
  return err;
}

/* Compares output o with its expected values; fills why on a difference. */
static int compare(const taso_model_t *m, int o, const float *got, const Onnx__TensorProto *want,
                   char *why, size_t len) {
  int64_t size = taso_tensor_size(&m->types[m->graph.outputs[o]]);
  float *e;
  if (test_values(want, size, &e) != TASO_OK) {
    snprintf(why, len, "output %s: %s", m->output_names[o], taso_error_detail());
    return 0;
  }
  int64_t bad = -1;
  for (int64_t i = 0; i < size && bad < 0; i++)
    if (!(fabsf(got[i] - e[i]) <= 1e-4f + 1e-3f * fabsf(e[i]))) bad = i;
  if (bad >= 0)
    snprintf(why, len, "output %s[%lld] = %g, expected %g", m->output_names[o], (long long)bad,
             (double)got[bad], (double)e[bad]);
  free(e);
  return bad < 0;
}

/* Runs an imported model on the test data and compares. */
static void run_model(const taso_model_t *m, const Onnx__ModelProto *mp, const tensors_t *in,
                      const tensors_t *out, eval_fn_t eval, outcome_t *oc) {
  float *inputs[32] = {0}, *outputs[32] = {0};
  int k = 0;
  taso_err_t err =
      m->graph.noutputs <= 32 ? TASO_OK : taso_error(TASO_ERR_LIMIT, "over 32 outputs");
  for (int i = 0; i < m->inputs.n && err == TASO_OK; i++) {
    if (m->is_weight[i]) continue;
    if (k == 32)
      err = taso_error(TASO_ERR_LIMIT, "over 32 inputs");
    else
      err = test_values(match(in, m->names[i], graph_input_pos(mp, m->names[i])),
                        taso_tensor_size(&m->inputs.v[i].type), &inputs[k++]);
  }
  if (err == TASO_OK) err = eval(m, inputs, outputs);
  if (err != TASO_OK) {
    oc->result = FAILED;
    snprintf(oc->why, sizeof oc->why, "%s", taso_error_detail());
  }
  for (int o = 0; err == TASO_OK && o < m->graph.noutputs && oc->result == PASSED; o++)
    if (!compare(m, o, outputs[o], match(out, m->output_names[o], o), oc->why, sizeof oc->why))
      oc->result = FAILED;
  for (int i = 0; i < 32; i++)
    free(inputs[i]), free(outputs[i]);
}

static void run_test(const char *dir, eval_fn_t eval, outcome_t *oc) {
  char path[1024];
  memset(oc, 0, sizeof *oc);
  if (snprintf(path, sizeof path, "%s/model.onnx", dir) >= (int)sizeof path) {
    oc->result = NOT_RUNNABLE;
    snprintf(oc->why, sizeof oc->why, "path too long");
    return;
  }
  tensors_t in = {.n = 0}, out = {.n = 0};
  Onnx__ModelProto *mp = NULL;
  taso_model_t m;
  taso_err_t err = taso_onnx_load(path, &mp);
  if (err == TASO_OK) err = read_tensors(dir, "input", &in);
  if (err == TASO_OK) err = read_tensors(dir, "output", &out);
  if (err == TASO_OK) err = taso_onnx_import(path, &m);
  if (err == TASO_ERR_UNSUPPORTED) {
    /* What real models keep in initializers the tests pass as inputs. */
    char first[160];
    short_reason(taso_error_detail(), first, sizeof first);
    taso_onnx_binding_t b[16];
    int nb = bind_inputs(mp, &in, 1, b);
    err = nb ? taso_onnx_import_bound(path, b, nb, &m) : TASO_ERR_UNSUPPORTED;
    if (err == TASO_ERR_UNSUPPORTED) { /* every input: what import folds */
      nb = bind_inputs(mp, &in, 0, b);
      err = nb ? taso_onnx_import_bound(path, b, nb, &m) : TASO_ERR_UNSUPPORTED;
    }
    oc->bound = err == TASO_OK;
    if (err != TASO_OK) snprintf(oc->why, sizeof oc->why, "%s", first);
  } else if (err != TASO_OK) {
    short_reason(taso_error_detail(), oc->why, sizeof oc->why);
  }
  if (err == TASO_OK) {
    run_model(&m, mp, &in, &out, eval, oc);
    taso_model_free(&m);
  } else {
    oc->result = NOT_RUNNABLE;
  }
  tensors_free(&in);
  tensors_free(&out);
  taso_onnx_free(mp);
}

/* ---- the table ----------------------------------------------------------------- */

#define MAX_REASONS 16

typedef struct {
  const char *op;                            /* ONNX op type */
  int tests, passed, failed, skipped, bound; /* counts; bound: of passed + failed */
  char reason[MAX_REASONS][160];             /* distinct not-runnable reasons */
  int reason_count[MAX_REASONS];             /* tests per reason */
  int nreasons;
} row_t;

static void row_add(row_t *r, const outcome_t *oc) {
  r->tests++;
  r->passed += oc->result == PASSED;
  r->failed += oc->result == FAILED;
  r->bound += oc->result != NOT_RUNNABLE && oc->bound;
  if (oc->result != NOT_RUNNABLE) return;
  r->skipped++;
  for (int i = 0; i < r->nreasons; i++)
    if (!strcmp(r->reason[i], oc->why)) {
      r->reason_count[i]++;
      return;
    }
  int at = r->nreasons < MAX_REASONS ? r->nreasons++ : MAX_REASONS - 1;
  snprintf(r->reason[at], sizeof r->reason[at], "%s",
           at == MAX_REASONS - 1 && r->reason_count[at] ? "other" : oc->why);
  r->reason_count[at]++;
}

static void print_reasons(FILE *f, const row_t *r) {
  for (int i = 0; i < r->nreasons; i++)
    fprintf(f, "%s%s (%d)", i ? "; " : "", r->reason[i], r->reason_count[i]);
}

static void print_table(FILE *f, const row_t *rows, int nrows, int md, const char *dir,
                        int ntests) {
  if (md) {
    fprintf(
        f,
        "# ONNX conformance: the backend node tests\n\n"
        "Generated by `taso-conformance --markdown` from %s (Debian's libonnx-testdata):\n"
        "%d node tests use an operator taso imports; a test counts under every such operator it "
        "uses.\n"
        "Runnable tests are imported, run on the %s backend\n"
        "and compared with the expected outputs, |a - e| <= 1e-4 + 1e-3 |e|. \"bound\": of the "
        "runnable,\n"
        "how many ran with their inputs after the first given as initializers (a Reshape's shape,\n"
        "a BatchNormalization's statistics, Clip's bounds: what real models keep in "
        "initializers),\n"
        "or all of them (the shape arithmetic that import computes on constants).\n\n"
        "| operator | tests | passed | failed | not runnable | bound | why not runnable (tests) |\n"
        "|---|---:|---:|---:|---:|---:|---|\n",
        dir, ntests, backend ? backend->name : "reference (taso_eval_graph_double)");
  } else {
    fprintf(f, "%-20s %5s %6s %6s %8s %5s  %s\n", "operator", "tests", "passed", "failed",
            "not-run", "bound", "why not runnable (tests)");
  }
  for (int i = 0; i < nrows; i++) {
    const row_t *r = &rows[i];
    if (md)
      fprintf(f, "| %s | %d | %d | %d | %d | %d | ", r->op, r->tests, r->passed, r->failed,
              r->skipped, r->bound);
    else
      fprintf(f, "%-20s %5d %6d %6d %8d %5d  ", r->op, r->tests, r->passed, r->failed, r->skipped,
              r->bound);
    print_reasons(f, r);
    fprintf(f, md ? " |\n" : "\n");
  }
}

/* ---- main ------------------------------------------------------------------------ */

static int by_name(const void *a, const void *b) {
  return strcmp(*(char *const *)a, *(char *const *)b);
}

/* The test directories of dir, sorted. */
static int list_tests(const char *dir, char ***out) {
  DIR *d = opendir(dir);
  if (!d) return -1;
  int n = 0, cap = 0;
  char **names = NULL;
  for (struct dirent *e; (e = readdir(d));) {
    if (strncmp(e->d_name, "test_", 5)) continue;
    if (n == cap) {
      cap = cap ? 2 * cap : 256;
      char **grown = realloc(names, sizeof *names * (size_t)cap);
      if (!grown) break;
      names = grown;
    }
    names[n++] = strdup(e->d_name);
  }
  closedir(d);
  qsort(names, (size_t)n, sizeof *names, by_name);
  *out = names;
  return n;
}

/* Which rows (operators) the test's model uses: used[i] for row i. */
static int uses(const char *path, const row_t *rows, int nrows, int *used) {
  Onnx__ModelProto *mp;
  int any = 0;
  memset(used, 0, sizeof *used * (size_t)nrows);
  if (taso_onnx_load(path, &mp) != TASO_OK) return 0;
  for (size_t k = 0; k < mp->graph->n_node; k++)
    for (int i = 0; i < nrows; i++)
      if (!strcmp(mp->graph->node[k]->op_type, rows[i].op)) used[i] = any = 1;
  taso_onnx_free(mp);
  return any;
}

int main(int argc, char **argv) {
  const char *dir = "/usr/share/libonnx-testdata/data/node", *md = NULL, *backend_name = "cpu";
  int verbose = 0, fresh = 0;
  for (int i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "--dir") && i + 1 < argc)
      dir = argv[++i];
    else if (!strcmp(argv[i], "--markdown") && i + 1 < argc)
      md = argv[++i];
    else if (!strcmp(argv[i], "--backend") && i + 1 < argc)
      backend_name = argv[++i];
    else if (!strcmp(argv[i], "--verbose"))
      verbose = 1;
    else if (!strcmp(argv[i], "--fresh"))
      fresh = 1;
    else {
      fprintf(stderr,
              "usage: %s [--dir DIR] [--backend reference|cpu|gpu] [--markdown FILE [--fresh]] "
              "[--verbose]\n",
              argv[0]);
      return 2;
    }
  }
  /* the tools' rule (replace.h), before any work: an existing --markdown
   * is replaced only with --fresh, and only if it is text */
  if (md && taso_may_write("--markdown", md, TASO_FILE_TEXT, fresh, false) != TASO_OK) {
    fprintf(stderr, "taso-conformance: error: %s\n", taso_error_detail());
    return 2;
  }
  row_t rows[64];
  int nrows = 0;
  memset(rows, 0, sizeof rows);
  for (const char *op; nrows < 64 && (op = taso_onnx_supported_op(nrows));)
    rows[nrows++].op = op;
  char **tests;
  int ntests = list_tests(dir, &tests), counted = 0, failed = 0, passed = 0;
  if (ntests < 0) {
    fprintf(stderr, "taso-conformance: cannot read %s (Debian package libonnx-testdata)\n", dir);
    return 2;
  }
  eval_fn_t eval = eval_reference;
  if (strcmp(backend_name, "reference") != 0) {
    char info[256];
    backend = taso_backend_find(backend_name);
    if (!backend || backend->probe(info, sizeof info) != TASO_OK ||
        backend->open(0, &backend_ctx) != TASO_OK) {
      fprintf(stderr, "taso-conformance: backend %s: %s\n", backend_name,
              backend ? taso_error_detail() : "not built");
      return 2;
    }
    printf("%s\n", info);
    eval = eval_backend;
  }
  for (int t = 0; t < ntests; t++) {
    char path[1024], model[1100];
    int used[64];
    if (snprintf(path, sizeof path, "%s/%s", dir, tests[t]) >= (int)sizeof path - 16) continue;
    snprintf(model, sizeof model, "%s/model.onnx", path);
    if (uses(model, rows, nrows, used)) {
      outcome_t oc;
      run_test(path, eval, &oc);
      counted++;
      failed += oc.result == FAILED;
      passed += oc.result == PASSED;
      for (int i = 0; i < nrows; i++)
        if (used[i]) row_add(&rows[i], &oc);
      if (verbose || oc.result == FAILED)
        printf("%-55s %s%s%s%s\n", tests[t],
               oc.result == PASSED   ? "passed"
               : oc.result == FAILED ? "FAILED"
                                     : "not runnable",
               oc.bound ? " (bound)" : "", oc.why[0] ? ": " : "", oc.why);
    }
    free(tests[t]);
  }
  free(tests);
  print_table(stdout, rows, nrows, 0, dir, counted);
  int empty = 0;
  for (int i = 0; i < nrows; i++)
    if (rows[i].passed + rows[i].failed == 0) {
      fprintf(stderr, "taso-conformance: %s has no runnable test\n", rows[i].op);
      empty++;
    }
  if (md) {
    char tmp[4096];
    snprintf(tmp, sizeof tmp, "%s.tmp", md);
    FILE *f = fopen(tmp, "w");
    if (!f) {
      perror(tmp);
      return 2;
    }
    print_table(f, rows, nrows, 1, dir, counted);
    if (backend)
      fprintf(f,
              "\nOn the %s backend, %d of the runnable tests ran a step on the reference kernel "
              "(a configuration the backend does not support).\n",
              backend->name, fallback_tests);
    fprintf(f, "\nIn all: %d tests, %d passed, %d failed, %d not runnable.\n", counted, passed,
            failed, counted - passed - failed);
    /* written beside, then renamed: a failed write leaves the old file */
    if (fclose(f) != 0 || rename(tmp, md) != 0) {
      perror(md);
      remove(tmp);
      return 2;
    }
  }
  printf("%d tests: %d passed, %d failed, %d not runnable; %d operators without a runnable test\n",
         counted, passed, failed, counted - passed - failed, empty);
  return failed || empty ? 1 : 0;
}
