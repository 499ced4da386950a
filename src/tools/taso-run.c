/*
 * taso-run: runs a model on a backend and says how fast and how right.
 *
 * It plans the model (fusing conv/matmul epilogues, falling back to the
 * reference kernel where the backend has no call), prints the end-to-end
 * latency of repeated runs and, with --profile, each step's share and the
 * runtime's overhead: end-to-end time against the sum of the steps timed
 * alone. --compare runs a second model (an optimized graph of the same
 * network) on the same seeded inputs and weights and reports how far the
 * outputs differ; --inputs/--expect check against stored values.
 * On the gpu backend a plan's runs replay one captured CUDA graph
 * (--no-graph: step by step), and --tf32 lets convolutions and matmuls use
 * TF32 tensor cores; the output says which. --costs takes the library
 * calls a cost database's rows were measured with (cuDNN's algorithm of
 * each convolution), so that a run makes the calls its costs describe and
 * does not depend on the process's own choice among close algorithms.
 */
#define _POSIX_C_SOURCE 200809L /* access */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <unistd.h>

#include "costdb.h"
#include "onnx.h"
#include "runtime.h"
#include "tool.h"

static bool profile, no_fusion, runtime_plan, tf32, no_graph;
static const char *model_spec, *backend_name = "cpu", *runs_text = "20", *warmup_text = "3",
                               *compare_spec, *tolerance_text = "1e-4", *layout_text,
                               *seed_text = "1", *inputs_dir, *expect_dir, *save_dir, *costs_path,
                               *device_text;

static const taso_tool_flag_t flags[] = {
    {"profile", "time each step alone: its share, and the runtime overhead", &profile},
    {"no-fusion", "one step per node (no conv/matmul epilogue fusion)", &no_fusion},
    {"runtime-plan",
     "ignore a call plan the model carries (taso-select's) and let the runtime "
     "plan its steps (a model with a plan follows it unless this, --no-fusion or --layout)",
     &runtime_plan},
    {"tf32",
     "let convolutions and matmuls use TF32 tensor cores (gpu; off by default: FP32 exact "
     "products)",
     &tf32},
    {"no-graph", "run step by step, not as one captured graph replayed (gpu)", &no_graph},
    {0},
};

static const taso_tool_option_t options[] = {
    {"model", "M", "the model: a spec for taso_model_load (required)", &model_spec},
    {"backend", "NAME", "reference, cpu or gpu (default cpu)", &backend_name},
    {"layout", "L",
     "nchw (default); nhwc: channels-last buffers throughout; blocked: the backend's\n"
     "                  format inside each conv; choose: per conv, the faster of nchw and blocked",
     &layout_text},
    {"runs", "N", "timed runs (default 20; 0: run once, no timing)", &runs_text},
    {"warmup", "N", "untimed runs before timing (default 3)", &warmup_text},
    {"compare", "M2", "also run M2 on the same inputs and weights; compare outputs", &compare_spec},
    {"tolerance", "T", "largest relative difference accepted (default 1e-4)", &tolerance_text},
    {"seed", "S", "seed of the weights and random inputs (default 1)", &seed_text},
    {"inputs", "DIR",
     "read input NAME from DIR/NAME.bin (raw float32), else the K-th from DIR/input_K.pb "
     "(ONNX test data)",
     &inputs_dir},
    {"expect", "DIR",
     "compare output NAME with DIR/NAME.bin (raw float32), else the K-th with "
     "DIR/output_K.pb",
     &expect_dir},
    {"save", "DIR", "write output NAME to DIR/NAME.bin (raw float32)", &save_dir},
    {"costs", "FILE",
     "make the library calls this cost database measured (cuDNN's algorithm of each "
     "convolution) instead of choosing by timing",
     &costs_path},
    {"device", "ID", "--costs: the rows of device ID (default: the only one of the backend)",
     &device_text},
    {0},
};

static const taso_tool_spec_t spec = {
    .name = "taso-run",
    .about = "Runs a model on a backend: its end-to-end latency over repeated runs\n"
             "(median, min, spread), with --profile each step's share and the overhead\n"
             "of the runtime (end to end against the sum of steps timed alone).\n"
             "Differences are relative: largest |a - b| over the largest |b|. Exits 1\n"
             "when outputs differ by more than --tolerance.\n",
    .threads = true,
    .single_rank = true,
    .flags = flags,
    .options = options,
};

/* ---- numbers on the command line ------------------------------------------ */

static bool parse_count(const char *text, long lo, long hi, long *v) {
  char *end;
  errno = 0;
  *v = strtol(text, &end, 10);
  return end != text && !*end && errno == 0 && *v >= lo && *v <= hi;
}

typedef struct {
  int32_t layout;     /* taso_rt_layout_t */
  bool choose_layout; /* --layout choose */
  long runs, warmup;
  double tolerance;
  uint64_t seed;
} settings_t;

static void parse_settings(taso_tool_t *t, settings_t *s) {
  long seed;
  char *end;
  if (!model_spec) taso_tool_usage_error(t, "--model M is required");
  if (!parse_count(runs_text, 0, 1000000, &s->runs))
    taso_tool_usage_error(t, "--runs: expected a whole number from 0, got '%s'", runs_text);
  if (!parse_count(warmup_text, 0, 1000000, &s->warmup))
    taso_tool_usage_error(t, "--warmup: expected a whole number from 0, got '%s'", warmup_text);
  if (!parse_count(seed_text, 0, 2147483647L, &seed))
    taso_tool_usage_error(t, "--seed: expected a whole number from 0, got '%s'", seed_text);
  s->seed = (uint64_t)seed;
  s->tolerance = strtod(tolerance_text, &end);
  if (end == tolerance_text || *end || !(s->tolerance >= 0))
    taso_tool_usage_error(t, "--tolerance: expected a number >= 0, got '%s'", tolerance_text);
  const char *layout = layout_text ? layout_text : "nchw";
  const char *layouts[] = {"nchw", "nhwc", "blocked", "choose"};
  s->layout = -1;
  for (int i = 0; i < 4; i++)
    if (strcmp(layout, layouts[i]) == 0) s->layout = i == 3 ? TASO_RT_NCHW : i;
  s->choose_layout = strcmp(layout, "choose") == 0;
  if (s->layout < 0)
    taso_tool_usage_error(t, "--layout: expected nchw, nhwc, blocked or choose, got '%s'", layout);
  if (!taso_backend_find(backend_name))
    taso_tool_usage_error(t, "--backend: no backend '%s' in this build (reference, cpu%s)",
                          backend_name, taso_backend_built("gpu") ? ", gpu" : "");
}

/* ---- a loaded model with its plan and data --------------------------------- */

typedef struct {
  taso_model_t m;
  taso_rt_plan_t *plan;
  int nin;         /* run-time inputs */
  float **inputs;  /* per run-time input */
  float **outputs; /* per graph output */
} loaded_t;

static int64_t out_size(const taso_model_t *m, int o) {
  return taso_tensor_size(taso_model_type(m, m->graph.outputs[o]));
}

/* The file of tensor name in dir: names may hold '/' (ONNX), files not. */
static void tensor_path(const char *dir, const char *name, char *path, size_t len) {
  int n = snprintf(path, len, "%s/", dir);
  for (const char *c = name; *c && (size_t)n + 1 < len; c++)
    path[n++] = *c == '/' ? '_' : *c;
  snprintf(path + n, len - (size_t)n, ".bin");
}

static taso_err_t read_raw(const char *path, float *x, int64_t count) {
  FILE *f = fopen(path, "rb");
  if (!f) return taso_error(TASO_ERR_IO, "%s: %s", path, strerror(errno));
  size_t got = fread(x, sizeof(float), (size_t)count, f);
  bool longer = fgetc(f) != EOF;
  fclose(f);
  if (got != (size_t)count || longer)
    return taso_error(TASO_ERR_FORMAT, "%s: expected exactly %lld float32 values", path,
                      (long long)count);
  return TASO_OK;
}

/* Tensor `name`, the index-th input or output ("input"/"output" in role),
 * from dir: DIR/NAME.bin (raw float32), else the ONNX test-data form
 * DIR/input_K.pb or DIR/output_K.pb (a TensorProto, as Debian's
 * libonnx-testdata ships them). */
static taso_err_t read_tensor(const char *dir, const char *name, const char *role, int index,
                              float *x, int64_t count) {
  char path[1024];
  tensor_path(dir, name, path, sizeof path);
  if (access(path, F_OK) == 0) return read_raw(path, x, count);
  char pb[1024];
  snprintf(pb, sizeof pb, "%s/%s_%d.pb", dir, role, index);
  if (access(pb, F_OK) != 0)
    return taso_error(TASO_ERR_IO, "%s: no %s '%s' (neither %s nor %s)", dir, role, name, path, pb);
  taso_onnx_tensor_t t;
  TASO_TRY(taso_onnx_read_tensor(pb, &t));
  taso_err_t err = TASO_OK;
  if (t.n != count)
    err = taso_error(TASO_ERR_FORMAT, "%s: %lld values, %s '%s' has %lld", pb, (long long)t.n, role,
                     name, (long long)count);
  else
    memcpy(x, t.data, sizeof(float) * (size_t)count);
  taso_onnx_tensor_free(&t);
  return err;
}

static taso_err_t write_tensor(const char *dir, const char *name, const float *x, int64_t count) {
  char path[1024];
  tensor_path(dir, name, path, sizeof path);
  FILE *f = fopen(path, "wb");
  if (!f) return taso_error(TASO_ERR_IO, "%s: %s", path, strerror(errno));
  bool ok = fwrite(x, sizeof(float), (size_t)count, f) == (size_t)count;
  ok = fclose(f) == 0 && ok;
  return ok ? TASO_OK : taso_error(TASO_ERR_IO, "%s: write failed", path);
}

static taso_err_t save_outputs(const loaded_t *l) {
  for (int o = 0; o < l->m.graph.noutputs; o++)
    TASO_TRY(write_tensor(save_dir, l->m.output_names[o], l->outputs[o], out_size(&l->m, o)));
  return TASO_OK;
}

static taso_err_t make_inputs(loaded_t *l, uint64_t seed) {
  taso_model_t *m = &l->m;
  l->inputs = calloc((size_t)m->inputs.n + 1, sizeof *l->inputs);
  if (!l->inputs) return taso_error(TASO_ERR_NOMEM, "inputs");
  for (int i = 0; i < m->inputs.n; i++) {
    if (m->is_weight[i]) continue;
    int64_t n = taso_tensor_size(&m->inputs.v[i].type);
    float *x = l->inputs[l->nin++] = malloc(sizeof(float) * (size_t)(n ? n : 1));
    if (!x) return taso_error_nomem(4.0 * (double)n, "input '%s'", m->names[i]);
    if (inputs_dir)
      TASO_TRY(read_tensor(inputs_dir, m->names[i], "input", l->nin - 1, x, n));
    else
      taso_model_random_input(m, i, seed, x);
  }
  return TASO_OK;
}

static taso_err_t load(const char *model, const taso_backend_t *be, taso_rt_ctx_t *ctx,
                       const settings_t *s, loaded_t *l) {
  uint64_t seed = s->seed;
  memset(l, 0, sizeof *l);
  TASO_TRY(taso_model_load(model, &l->m));
  l->m.seed = seed;
  TASO_TRY(make_inputs(l, seed));
  l->outputs = calloc((size_t)l->m.graph.noutputs + 1, sizeof *l->outputs);
  if (!l->outputs) return taso_error(TASO_ERR_NOMEM, "outputs");
  for (int o = 0; o < l->m.graph.noutputs; o++)
    if (!(l->outputs[o] = malloc(sizeof(float) * (size_t)out_size(&l->m, o))))
      return taso_error(TASO_ERR_NOMEM, "outputs");
  taso_rt_options_t opt = {
      .no_fusion = no_fusion, .layout = s->layout, .choose_layout = s->choose_layout};
  if (l->m.calls && !runtime_plan && !no_fusion && !layout_text)
    opt = (taso_rt_options_t){.calls = l->m.calls, .ncalls = l->m.ncalls};
  opt.no_capture = no_graph;
  TASO_TRY(taso_rt_plan(be, ctx, &l->m, &opt, &l->plan));
  return taso_rt_run(l->plan, (const float *const *)l->inputs, l->outputs);
}

static void unload(loaded_t *l) {
  taso_rt_plan_free(l->plan);
  for (int i = 0; l->inputs && i < l->nin; i++)
    free(l->inputs[i]);
  for (int o = 0; l->outputs && o < l->m.graph.noutputs; o++)
    free(l->outputs[o]);
  free(l->inputs);
  free(l->outputs);
  taso_model_free(&l->m);
}

/* ---- reporting ------------------------------------------------------------- */

static void print_plan(const loaded_t *l) {
  int steps = taso_rt_plan_steps(l->plan), fused = 0, fallback = 0, nodes = 0;
  for (int i = 0; i < l->m.graph.nnodes; i++)
    nodes += l->m.graph.nodes[i].kind != TASO_OP_INPUT;
  for (int s = 0; s < steps; s++) {
    taso_rt_step_info_t info;
    taso_rt_plan_step(l->plan, s, &info);
    fused += info.fused > 1;
    if (info.fallback) {
      char text[256];
      taso_rt_config_format(&info.cfg, text, sizeof text);
      printf("  fallback: step %d (t%d) %s: %s\n", s, info.node, text, info.reason);
      fallback++;
    }
  }
  printf("model %s: %d operators in %d steps (%d fused), %d on the reference kernel\n", l->m.name,
         nodes, steps, fused, fallback);
  const char *why = "";
  if (taso_rt_plan_replays(l->plan, &why))
    printf("runs: one captured graph replayed (inputs and outputs through pinned buffers)\n");
  else if (why[0])
    printf("runs: step by step (%s)\n", why);
}

static taso_err_t check_difference(const char *what, double abs_diff, double rel_diff,
                                   double tolerance) {
  printf("%s: largest difference %.3g absolute, %.3g relative (tolerance %.3g)\n", what, abs_diff,
         rel_diff, tolerance);
  if (!(rel_diff <= tolerance))
    return taso_error(TASO_ERR_ARG, "%s: outputs differ by %.3g relative, beyond --tolerance %.3g",
                      what, rel_diff, tolerance);
  return TASO_OK;
}

static taso_err_t check_expected(const loaded_t *l, double tolerance) {
  const taso_model_t *m = &l->m;
  float **want = calloc((size_t)m->graph.noutputs + 1, sizeof *want);
  taso_err_t err = want ? TASO_OK : taso_error(TASO_ERR_NOMEM, "expected outputs");
  for (int o = 0; o < m->graph.noutputs && err == TASO_OK; o++) {
    want[o] = malloc(sizeof(float) * (size_t)out_size(m, o));
    err = want[o]
              ? read_tensor(expect_dir, m->output_names[o], "output", o, want[o], out_size(m, o))
              : taso_error(TASO_ERR_NOMEM, "expected outputs");
  }
  double a, r;
  if (err == TASO_OK) err = taso_rt_output_difference(m, l->outputs, want, &a, &r);
  if (err == TASO_OK) err = check_difference("--expect", a, r, tolerance);
  for (int o = 0; want && o < m->graph.noutputs; o++)
    free(want[o]);
  free(want);
  return err;
}

/* Each step timed alone: a line per step in plan order with its share of
 * the sum, then the sum against the end-to-end median. */
static taso_err_t print_profile(const taso_tool_t *t, loaded_t *l, const settings_t *s,
                                double end_to_end) {
  (void)t;
  int steps = taso_rt_plan_steps(l->plan);
  taso_rt_stats_t *st = calloc((size_t)steps + 1, sizeof *st);
  taso_rt_stats_t *in_run = calloc((size_t)steps + 1, sizeof *in_run);
  if (!st || !in_run) {
    free(st);
    free(in_run);
    return taso_error(TASO_ERR_NOMEM, "profile");
  }
  long runs = s->runs > 0 ? s->runs : 1;
  const float *const *in = (const float *const *)l->inputs;
  taso_err_t err = taso_rt_profile(l->plan, in, (int)s->warmup, (int)runs, st);
  if (err == TASO_OK) err = taso_rt_profile_in_run(l->plan, in, (int)s->warmup, (int)runs, in_run);
  double sum = 0, sum_in_run = 0, by_kind[TASO_OP_COUNT] = {0};
  for (int i = 0; i < steps && err == TASO_OK; i++) {
    sum += st[i].median;
    sum_in_run += in_run[i].median;
  }
  if (err == TASO_OK) {
    printf("profile (each step alone, median of %ld runs):\n", runs);
    printf("  %5s %6s %9s %6s  %s\n", "step", "node", "ms", "share", "configuration");
    for (int i = 0; i < steps; i++) {
      taso_rt_step_info_t info;
      char text[256], call[256];
      taso_rt_plan_step(l->plan, i, &info);
      taso_rt_config_format(&info.cfg, text, sizeof text);
      taso_rt_plan_step_call(l->plan, i, call, sizeof call);
      by_kind[info.cfg.kind] += st[i].median;
      printf("  %5d %6d %9.4f %5.1f%%  %s%s%s%s\n", i, info.node, st[i].median,
             sum > 0 ? 100 * st[i].median / sum : 0, text, info.fallback ? " (reference)" : "",
             call[0] ? "  | " : "", call);
    }
    printf("by operator:\n");
    for (int k = 0; k < TASO_OP_COUNT; k++)
      if (by_kind[k] > 0)
        printf("  %-10s %9.3f ms %5.1f%%\n", taso_ops[k].name, by_kind[k], 100 * by_kind[k] / sum);
    printf("sum of steps alone %.3f ms; end to end %.3f ms; overhead %+.1f%%\n", sum, end_to_end,
           sum > 0 ? 100 * (end_to_end - sum) / sum : 0);
    /* the gap above is partly caches: a step repeated alone finds its
     * weights in cache, one in a run does not */
    printf("sum of steps timed inside runs %.3f ms; end to end against it %+.1f%%\n", sum_in_run,
           sum_in_run > 0 ? 100 * (end_to_end - sum_in_run) / sum_in_run : 0);
  }
  free(st);
  free(in_run);
  return err;
}

/* Whole runs one at a time, so that a long timing shows progress. */
static taso_err_t time_runs(taso_tool_t *t, loaded_t *l, const settings_t *s) {
  double *ms = malloc(sizeof *ms * (size_t)s->runs);
  if (!ms) return taso_error(TASO_ERR_NOMEM, "timings");
  taso_progress_t progress;
  taso_rt_stats_t one, all;
  const float *const *in = (const float *const *)l->inputs;
  taso_err_t err =
      s->warmup ? taso_rt_time_model(l->plan, in, (int)s->warmup - 1, 1, &one) : TASO_OK;
  taso_progress_begin(&progress, t, "timed runs", s->runs);
  for (long i = 0; i < s->runs && err == TASO_OK; i++) {
    err = taso_rt_time_model(l->plan, in, 0, 1, &one);
    ms[i] = one.median;
    taso_progress_update(&progress, i + 1);
  }
  if (err == TASO_OK) {
    taso_rt_stats_of(ms, (int)s->runs, &all);
    printf("end to end: median %.3f ms, min %.3f ms, spread %.1f%% (%ld runs after %ld warm-up)\n",
           all.median, all.min, 100 * all.spread, s->runs, s->warmup);
  }
  free(ms);
  if (err == TASO_OK && profile) err = print_profile(t, l, s, all.median);
  return err;
}

/* --costs: the database's calls given to the context before any
 * preparation. */
static taso_err_t take_calls(const taso_backend_t *be, taso_rt_ctx_t *ctx) {
  taso_costdb_t db;
  char device[TASO_COST_DEVICE_LEN];
  TASO_TRY(taso_costdb_read(costs_path, false, &db));
  taso_err_t err =
      taso_costdb_pick_device(&db, costs_path, be->name, device_text, device, sizeof device);
  if (err == TASO_OK)
    printf("calls: %d taken from %s (device %s)%s\n", taso_costdb_reuse(&db, device, be, ctx),
           costs_path, device,
           be->reuse ? "" : "; this backend's library chooses the same calls every time");
  taso_costdb_free(&db);
  return err;
}

/* The second model on the same backend, seed and inputs. */
static taso_err_t compare_models(loaded_t *first, const taso_backend_t *be, taso_rt_ctx_t *ctx,
                                 const settings_t *s) {
  loaded_t second;
  taso_err_t err = load(compare_spec, be, ctx, s, &second);
  const taso_model_t *a = &first->m, *b = &second.m;
  if (err == TASO_OK && (a->graph.noutputs != b->graph.noutputs || first->nin != second.nin))
    err = taso_error(TASO_ERR_SHAPE, "--compare %s: %d inputs and %d outputs, %s has %d and %d",
                     compare_spec, second.nin, b->graph.noutputs, model_spec, first->nin,
                     a->graph.noutputs);
  for (int o = 0; o < a->graph.noutputs && err == TASO_OK; o++)
    if (out_size(a, o) != out_size(b, o))
      err = taso_error(TASO_ERR_SHAPE, "--compare %s: output %d has %lld values, not %lld",
                       compare_spec, o, (long long)out_size(b, o), (long long)out_size(a, o));
  double abs_diff, rel_diff;
  if (err == TASO_OK)
    err = taso_rt_output_difference(a, second.outputs, first->outputs, &abs_diff, &rel_diff);
  if (err == TASO_OK) err = check_difference("--compare", abs_diff, rel_diff, s->tolerance);
  unload(&second);
  return err;
}

int main(int argc, char **argv) {
  taso_tool_t t;
  taso_tool_init(&t, &spec, &argc, &argv);
  settings_t s;
  parse_settings(&t, &s);
  /* --save never writes into the folders it reads (issue 32) */
  if (save_dir && ((inputs_dir && taso_tool_same_file(save_dir, inputs_dir)) ||
                   (expect_dir && taso_tool_same_file(save_dir, expect_dir))))
    taso_tool_usage_error(&t, "--save %s names a folder this run reads (--inputs or --expect)",
                          save_dir);
  if (device_text && !costs_path) taso_tool_usage_error(&t, "--device needs --costs FILE");
  if (tf32 && costs_path)
    taso_tool_usage_error(&t, "--tf32: a cost database holds FP32 calls; it takes no --costs");
  const taso_backend_t *be = taso_backend_find(backend_name);
  taso_rt_ctx_t *ctx = NULL;
  loaded_t l;
  memset(&l, 0, sizeof l);
  char info[256] = "";
  taso_err_t err = be->probe(info, sizeof info);
  bool complete = be->open && be->close && be->alloc && be->release && be->upload && be->download &&
                  be->prepare && be->run && be->sync && be->destroy;
  if (err == TASO_OK && !complete)
    err = taso_error(TASO_ERR_UNSUPPORTED, "backend %s: probe only, it cannot run models yet",
                     be->name);
  if (err == TASO_OK && tf32 && !be->set_tf32)
    err = taso_error(TASO_ERR_ARG, "--tf32: the %s backend has no TF32 math", be->name);
  if (err == TASO_OK) err = be->open(t.threads, &ctx);
  if (err == TASO_OK && be->set_tf32) err = be->set_tf32(ctx, tf32);
  if (err == TASO_OK) {
    printf("%s\n", info);
    if (be->set_tf32)
      printf("math: %s\n", tf32 ? "TF32 tensor cores allowed in convolutions and matmuls (--tf32)"
                                : "FP32 (no TF32; --tf32 allows it)");
    if (costs_path) err = take_calls(be, ctx);
    if (err == TASO_OK) err = load(model_spec, be, ctx, &s, &l);
  }
  if (err == TASO_OK) print_plan(&l);
  if (err == TASO_OK && save_dir) err = save_outputs(&l);
  if (err == TASO_OK && expect_dir) err = check_expected(&l, s.tolerance);
  if (err == TASO_OK && compare_spec) err = compare_models(&l, be, ctx, &s);
  if (err == TASO_OK && s.runs > 0) err = time_runs(&t, &l, &s);
  unload(&l);
  if (ctx) be->close(ctx);
  return taso_tool_finish(&t, err);
}
