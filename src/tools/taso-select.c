/*
 * taso-select: chooses how a model is run: which library call computes
 * which operators (a convolution or matmul with its bias, residual sum and
 * ReLU in one call, or an operator alone), in which memory layout, and
 * which results are written over an operand nothing reads afterwards. The
 * calls and their conditions come from a library description
 * (data/library/onednn.smt2 for the cpu backend, cudnn.smt2 for the gpu),
 * each condition decided by Z3; the plan is the cheapest cover under the
 * measured (or estimated) costs of its calls (src/select/select.h).
 *
 * The output is the model with its plan (dataset /plan), which taso-run
 * and taso-show follow; root attributes record the plain plan (one call
 * per operator, NCHW) and the selected one: costs, buffer bytes and, with
 * --runs, both measured end to end.
 */
#define _POSIX_C_SOURCE 200809L

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agree.h"
#include "cost.h"
#include "costdb.h"
#include "model.h"
#include "select.h"
#include "tool.h"

static const char *model_spec, *library_path, *backend_name = "cpu", *costs_path, *device_text,
                                              *runs_text = "20", *layouts_text = "both";
static bool estimate, no_check, no_measure;

static const taso_tool_flag_t flags[] = {
    {"estimate-costs",
     "cost each call by a fixed estimate of its arithmetic and memory traffic "
     "(taso_cost_estimate), not measured: the same plan on every machine",
     &estimate},
    {"no-measure", "a configuration the cost database lacks is an error naming it, not measured",
     &no_measure},
    {"no-check", "skip running the selected plan against the reference backend", &no_check},
    {0},
};

static const taso_tool_option_t options[] = {
    {"model", "M", "the model: a spec for taso_model_load (required)", &model_spec},
    {"library", "FILE",
     "the library description (default: $TASO_DATA_DIR/library, else the "
     "source tree's data/library: onednn.smt2 for cpu, cudnn.smt2 for gpu)",
     &library_path},
    {"backend", "NAME", "where the plan runs and costs are measured: cpu or gpu (default cpu)",
     &backend_name},
    {"costs", "FILE", "a cost database (taso-measure's costs.h5) consulted before measuring",
     &costs_path},
    {"device", "TEXT", "the database's device to read (default: its only device of --backend)",
     &device_text},
    {"layouts", "L",
     "rowmajor (NCHW or BLOCKED per call), nhwc (every call channels last) or "
     "both, the cheaper kept (default both)",
     &layouts_text},
    {"runs", "N",
     "timed runs of the plain and the selected plan per round, in 5 rounds, "
     "alternated run by run (default 20; 0: not timed)",
     &runs_text},
    {0},
};

static const taso_tool_spec_t spec = {
    .name = "taso-select",
    .about = "Selects the library calls that run a model: fused convolutions and matmuls\n"
             "(bias, residual sum, ReLU or clip), memory layouts, and results written in place\n"
             "over operands nothing reads afterwards, from a library description whose\n"
             "conditions Z3 decides, at the least measured cost (--costs, then measured\n"
             "on --backend). Writes the model with its call plan, which taso-run and\n"
             "taso-show follow. Unless --no-check, the plan is run against the reference\n"
             "backend on seeded inputs (exit status 3 when they differ beyond 1e-4);\n"
             "with --runs, the plain plan (one call per operator, NCHW) and the selected\n"
             "one are timed end to end, alternated run by run.\n",
    .out_help = "the model with its call plan (.h5, kind taso-model; required)",
    .out_kind = TASO_KIND_MODEL,
    .fresh_help = "replace an existing OUT (only a file of the kind written)",
    .replace_needs_fresh = true,
    .threads = true,
    .single_rank = true,
    .flags = flags,
    .options = options,
};

#define CHECK_TOLERANCE 1e-4

typedef struct {
  const taso_backend_t *be;
  taso_rt_ctx_t *ctx;
  taso_model_t m;
  taso_library_t *lib;
  taso_cost_cache_t *costs;
  taso_costdb_t db;
  char device[TASO_COST_DEVICE_LEN];
  taso_costdb_source_t source; /* db's rows of device */
  int runs;
  taso_select_stats_t plain, chosen;
  double seconds;         /* selection, both layouts */
  double measure_seconds; /* of it, measuring configurations on the spot */
  double relative;        /* against the reference backend; NaN: not checked */
  double latency_plain, latency_chosen, latency_runtime; /* the runtime's own plan */
  int pairs_faster, pairs_faster_runtime;
} run_t;

/* ---- costs --------------------------------------------------------------------- */

static taso_err_t cost_of(void *ctx, const taso_rt_config_t *cfg, double *ms) {
  return taso_cost_of_config(((run_t *)ctx)->costs, cfg, ms);
}

static taso_err_t open_costs(run_t *r) {
  taso_cost_options_t copt = taso_cost_options_default();
  copt.measure = !no_measure;
  copt.warm_weights = taso_rt_weights_stay_warm(&r->m, r->be);
  if (costs_path) {
    TASO_TRY(taso_costdb_read(costs_path, false, &r->db));
    TASO_TRY(taso_costdb_pick_device(&r->db, costs_path, r->be->name, device_text, r->device,
                                     sizeof r->device));
    r->source = (taso_costdb_source_t){&r->db, r->device};
    copt.lookup = taso_costdb_lookup;
    copt.lookup_ctx = &r->source;
  }
  if (estimate) copt.lookup = taso_cost_estimate_lookup;
  return taso_cost_cache_new(r->be, r->ctx, &copt, &r->costs);
}

/* ---- checks and timing ---------------------------------------------------------- */

static taso_err_t outputs_of(const taso_backend_t *be, taso_rt_ctx_t *ctx, taso_model_t *m,
                             const taso_rt_options_t *opt, float ***out) {
  const taso_graph_t *g = &m->graph;
  int nin = 0;
  for (int i = 0; i < m->inputs.n; i++)
    nin += !m->is_weight[i];
  float **in = calloc((size_t)nin + 1, sizeof *in);
  *out = calloc((size_t)g->noutputs + 1, sizeof **out);
  taso_err_t err = in && *out ? TASO_OK : taso_error(TASO_ERR_NOMEM, "inputs");
  for (int i = 0, k = 0; i < m->inputs.n && err == TASO_OK; i++) {
    if (m->is_weight[i]) continue;
    int64_t n = taso_tensor_size(&m->inputs.v[i].type);
    if (!(in[k] = malloc(sizeof(float) * (size_t)(n ? n : 1))))
      err = taso_error_nomem(4.0 * (double)n, "input '%s'", m->names[i]);
    else
      taso_model_random_input(m, i, m->seed, in[k++]);
  }
  for (int o = 0; o < g->noutputs && err == TASO_OK; o++)
    if (!((*out)[o] = malloc(sizeof(float) * (size_t)taso_tensor_size(&m->types[g->outputs[o]]))))
      err = taso_error_nomem(4.0 * (double)taso_tensor_size(&m->types[g->outputs[o]]), "output %d",
                             o);
  taso_rt_plan_t *plan = NULL;
  if (err == TASO_OK) err = taso_rt_plan(be, ctx, m, opt, &plan);
  if (err == TASO_OK) err = taso_rt_run(plan, (const float *const *)in, *out);
  taso_rt_plan_free(plan);
  for (int k = 0; in && k < nin; k++)
    free(in[k]);
  free(in);
  return err;
}

static void free_outputs(float **out, int n) {
  for (int o = 0; out && o < n; o++)
    free(out[o]);
  free(out);
}

/* The plan on its backend against the reference backend's run. */
static taso_err_t check(taso_tool_t *t, run_t *r) {
  const taso_backend_t *ref = taso_backend_find("reference");
  taso_rt_ctx_t *rctx = NULL;
  float **a = NULL, **b = NULL;
  taso_rt_options_t opt = {.calls = r->m.calls, .ncalls = r->m.ncalls};
  taso_rt_options_t plain = {.no_fusion = true};
  taso_err_t err = outputs_of(r->be, r->ctx, &r->m, &opt, &a);
  if (err == TASO_OK) err = ref->open(0, &rctx);
  if (err == TASO_OK) err = outputs_of(ref, rctx, &r->m, &plain, &b);
  double abs_diff = 0;
  if (err == TASO_OK) err = taso_rt_output_difference(&r->m, a, b, &abs_diff, &r->relative);
  if (rctx) ref->close(rctx);
  free_outputs(a, r->m.graph.noutputs);
  free_outputs(b, r->m.graph.noutputs);
  TASO_TRY(err);
  bool agree = r->relative <= CHECK_TOLERANCE;
  taso_tool_print(t,
                  "taso-select: the selected plan %s the reference backend (largest relative "
                  "difference %.3g on seeded inputs)\n",
                  agree ? "agrees with" : "DIFFERS from", r->relative);
  if (!agree)
    snprintf(t->findings, sizeof t->findings,
             "the selected plan differs from the reference "
             "backend by %.3g relative",
             r->relative);
  return TASO_OK;
}

/* The plain plan against the selected one, end to end, run by run. */
static taso_err_t time_both(taso_tool_t *t, run_t *r, const taso_call_t *plain, int nplain) {
  taso_model_t a;
  TASO_TRY(taso_model_load(model_spec, &a));
  taso_model_drop_plan(&a);
  taso_err_t err = taso_model_fold_weights(&a); /* the nodes the plain plan names */
  a.calls = malloc(sizeof *a.calls * (size_t)(nplain ? nplain : 1));
  if (err == TASO_OK && !a.calls) err = taso_error(TASO_ERR_NOMEM, "plain plan");
  if (err == TASO_OK) {
    memcpy(a.calls, plain, sizeof *a.calls * (size_t)nplain);
    a.ncalls = nplain;
    err = taso_model_latencies(r->be, r->ctx, &a, &r->m, r->runs, 5, &r->latency_plain,
                               &r->latency_chosen, &r->pairs_faster);
  }
  taso_model_drop_plan(&a); /* then the runtime's own plan (its fixed fusion, NCHW) */
  double chosen = 0;
  if (err == TASO_OK)
    err = taso_model_latencies(r->be, r->ctx, &a, &r->m, r->runs, 5, &r->latency_runtime, &chosen,
                               &r->pairs_faster_runtime);
  taso_model_free(&a);
  TASO_TRY(err);
  taso_tool_print(
      t,
      "taso-select: measured end to end: plain %.4g ms, selected %.4g ms (x%.3f; "
      "medians of 5 x %d runs, %s backend; the selected plan faster in %d of %d pairs)\n",
      r->latency_plain, r->latency_chosen, r->latency_plain / r->latency_chosen, r->runs,
      r->be->name, r->pairs_faster, 5 * r->runs);
  taso_tool_print(t,
                  "taso-select: measured end to end: the runtime's own plan %.4g ms, selected "
                  "%.4g ms (x%.3f; faster in %d of %d pairs)\n",
                  r->latency_runtime, chosen, r->latency_runtime / chosen, r->pairs_faster_runtime,
                  5 * r->runs);
  return TASO_OK;
}

/* ---- selection ---------------------------------------------------------------- */

static void print_stats(taso_tool_t *t, const char *what, const taso_select_stats_t *s) {
  taso_tool_print(t,
                  "taso-select: %-22s cost %.4g ms, %d calls (%d fused, %d in place, %d blocked, "
                  "%d concats placed), buffers %.1f MiB\n",
                  what, s->ms, s->steps, s->fused, s->in_place, s->blocked, s->placed,
                  (double)s->bytes / (1 << 20));
}

/* Whether the runner takes a channels-last plan: a 4-d weight that a
 * convolution reads as its weight and another operator as an activation
 * cannot be stored both ways (the selection does not see it). */
static bool plannable(taso_tool_t *t, run_t *r, const taso_call_t *calls, int n) {
  taso_rt_options_t opt = {.calls = calls, .ncalls = n};
  taso_rt_plan_t *plan = NULL;
  taso_err_t err = taso_rt_plan(r->be, r->ctx, &r->m, &opt, &plan);
  taso_rt_plan_free(plan);
  if (err != TASO_OK)
    taso_tool_print(t, "taso-select: the channels-last plan cannot run (%s): row-major kept\n",
                    taso_error_detail());
  return err == TASO_OK;
}

static taso_err_t select_all(taso_tool_t *t, run_t *r) {
  bool rowmajor = strcmp(layouts_text, "nhwc") != 0, nhwc = strcmp(layouts_text, "rowmajor") != 0;
  bool warm = taso_rt_weights_stay_warm(&r->m, r->be) || estimate;
  taso_call_t *plain = NULL, *best = NULL, *other = NULL;
  int nplain = 0, nbest = 0, nother = 0;
  taso_select_stats_t st;
  taso_select_options_t o = {.plain = true, .warm_weights = warm};
  const taso_rt_typed_graph_t typed = taso_rt_typed_of(&r->m);
  taso_err_t err = taso_select_plan(&typed, r->lib, &o, cost_of, r, &plain, &nplain, &r->plain);
  if (err == TASO_OK) print_stats(t, "plain (per operator):", &r->plain);
  double t0 = taso_search_now(); /* the plain plan is the baseline, not the selection */
  taso_cost_stats_t cs;
  taso_cost_cache_stats(r->costs, &cs);
  double measured0 = cs.measure_s;
  for (int pass = 0; pass < 2 && err == TASO_OK; pass++) {
    if (!(pass ? nhwc : rowmajor)) continue;
    o = (taso_select_options_t){.nhwc = pass == 1, .warm_weights = warm};
    err = taso_select_plan(&typed, r->lib, &o, cost_of, r, &other, &nother, &st);
    if (err == TASO_ERR_UNSUPPORTED && pass == 1 && rowmajor) { /* no NHWC call for some node */
      taso_tool_print(t, "taso-select: no channels-last plan: %s\n", taso_error_detail());
      err = TASO_OK;
      continue;
    }
    if (err != TASO_OK) break;
    print_stats(t, pass ? "selected, channels last:" : "selected, row-major:", &st);
    if (pass == 1 && best && st.ms < r->chosen.ms && !plannable(t, r, other, nother)) {
      free(other);
      other = NULL;
      continue;
    }
    if (!best || st.ms < r->chosen.ms) {
      free(best);
      best = other, nbest = nother, r->chosen = st;
    } else {
      free(other);
    }
    other = NULL;
  }
  r->seconds = taso_search_now() - t0;
  taso_cost_cache_stats(r->costs, &cs);
  r->measure_seconds = cs.measure_s - measured0;
  if (err == TASO_OK) {
    r->m.calls = best, r->m.ncalls = nbest, best = NULL;
    snprintf(r->m.library, sizeof r->m.library, "%s", taso_library_name(r->lib));
    taso_tool_print(t,
                    "taso-select: %s: %d calls selected from %s in %.2f s (%.2f s of it "
                    "measuring; %lld Z3 queries, %lld answers cached); cost %.4g -> %.4g ms "
                    "(x%.3f), buffers %.1f -> %.1f MiB\n",
                    r->m.name, r->m.ncalls, taso_library_name(r->lib), r->seconds,
                    r->measure_seconds, (long long)r->chosen.queries, (long long)r->chosen.cached,
                    r->plain.ms, r->chosen.ms, r->plain.ms / r->chosen.ms,
                    (double)r->plain.bytes / (1 << 20), (double)r->chosen.bytes / (1 << 20));
  }
  if (err == TASO_OK && !no_check) err = check(t, r);
  if (err == TASO_OK && r->runs > 0) err = time_both(t, r, plain, nplain);
  free(plain);
  free(best);
  return err;
}

static taso_err_t write_output(taso_tool_t *t, run_t *r) {
  taso_provenance_t prov;
  taso_tool_provenance(t, &prov);
  TASO_TRY(taso_model_write_h5(&r->m, t->tmp_path, &prov));
  taso_artifact_t *a = NULL;
  TASO_TRY(taso_artifact_open_rw(MPI_COMM_SELF, t->tmp_path, TASO_KIND_MODEL, &a));
  taso_err_t err = taso_artifact_set_string(a, "select_library", taso_library_name(r->lib));
  if (err == TASO_OK)
    err = taso_artifact_set_string(a, "select_costs", estimate ? "estimated" : "measured");
  if (err == TASO_OK) err = taso_artifact_set_real(a, "select_cost_plain_ms", r->plain.ms);
  if (err == TASO_OK) err = taso_artifact_set_real(a, "select_cost_ms", r->chosen.ms);
  if (err == TASO_OK) err = taso_artifact_set_count(a, "select_bytes_plain", r->plain.bytes);
  if (err == TASO_OK) err = taso_artifact_set_count(a, "select_bytes", r->chosen.bytes);
  if (err == TASO_OK) err = taso_artifact_set_real(a, "select_seconds", r->seconds);
  if (err == TASO_OK) err = taso_artifact_set_real(a, "select_measure_seconds", r->measure_seconds);
  if (err == TASO_OK) err = taso_artifact_set_count(a, "select_z3_queries", r->chosen.queries);
  if (err == TASO_OK) err = taso_artifact_set_real(a, "select_check_relative", r->relative);
  if (err == TASO_OK && r->runs > 0) {
    err = taso_artifact_set_real(a, "select_latency_plain_ms", r->latency_plain);
    if (err == TASO_OK) err = taso_artifact_set_real(a, "select_latency_ms", r->latency_chosen);
    if (err == TASO_OK) err = taso_artifact_set_count(a, "select_pairs_faster", r->pairs_faster);
    if (err == TASO_OK)
      err = taso_artifact_set_real(a, "select_latency_runtime_plan_ms", r->latency_runtime);
    if (err == TASO_OK)
      err = taso_artifact_set_count(a, "select_pairs_faster_than_runtime_plan",
                                    r->pairs_faster_runtime);
  }
  taso_err_t closed = taso_artifact_close(a);
  return err != TASO_OK ? err : closed;
}

static taso_err_t run(taso_tool_t *t, run_t *r) {
  char path[1024];
  if (!library_path) {
    const char *data = getenv("TASO_DATA_DIR");
    snprintf(path, sizeof path, "%s/library/%s", data && *data ? data : TASO_DEFAULT_DATA_DIR,
             strcmp(r->be->name, "gpu") == 0 ? "cudnn.smt2" : "onednn.smt2");
    library_path = path;
  }
  TASO_TRY(taso_library_load(library_path, &r->lib));
  TASO_TRY(taso_model_load(model_spec, &r->m));
  taso_model_drop_plan(&r->m);              /* a plan it came with is selected again */
  TASO_TRY(taso_model_fold_weights(&r->m)); /* as written: a plan names the nodes of the file */
  char info[256];
  TASO_TRY(r->be->probe(info, sizeof info));
  TASO_TRY(r->be->open(t->threads, &r->ctx));
  TASO_TRY(open_costs(r));
  taso_tool_print(t, "taso-select: %s (%d nodes), library %s (%d calls, %s); costs %s %s (%s)\n",
                  r->m.name, r->m.graph.nnodes, taso_library_name(r->lib),
                  taso_library_ncalls(r->lib), library_path,
                  estimate ? "estimated, not measured on" : "on", r->be->name, info);
  TASO_TRY(select_all(t, r));
  TASO_TRY(write_output(t, r));
  return taso_tool_commit_output(t);
}

int main(int argc, char **argv) {
  taso_tool_t t;
  taso_tool_init(&t, &spec, &argc, &argv);
  taso_err_t err = TASO_OK;
  run_t r;
  memset(&r, 0, sizeof r);
  r.relative = NAN;
  taso_model_init(&r.m, NULL);
  char *end;
  long runs = strtol(runs_text, &end, 10);
  if (!model_spec) taso_tool_usage_error(&t, "--model M is required");
  if (*end || end == runs_text || runs < 0 || runs > 100000)
    taso_tool_usage_error(&t, "--runs: expected a whole number from 0, got '%s'", runs_text);
  if (strcmp(layouts_text, "rowmajor") && strcmp(layouts_text, "nhwc") &&
      strcmp(layouts_text, "both"))
    taso_tool_usage_error(&t, "--layouts: expected rowmajor, nhwc or both, got '%s'", layouts_text);
  if (estimate && costs_path) taso_tool_usage_error(&t, "--estimate-costs takes no --costs");
  r.runs = (int)runs;
  r.be = taso_backend_find(backend_name);
  if (!r.be || strcmp(backend_name, "reference") == 0)
    taso_tool_usage_error(&t, "--backend: expected cpu%s, got '%s'",
                          taso_backend_built("gpu") ? " or gpu" : "", backend_name);
  const taso_tool_file_t files[] = {
      taso_tool_output("--out", t.out_path, TASO_KIND_MODEL),
      taso_tool_input("--model", model_spec), taso_tool_input("--library", library_path),
      taso_tool_input("--costs", costs_path), taso_tool_input("--job", t.job_path)};
  taso_tool_check_files(&t, files, 5);
  TASO_TOOL_STEP(&t, err, taso_tool_claim_output(&t));
  if (err == TASO_OK) err = taso_tool_agree(&t, run(&t, &r));
  taso_cost_cache_free(r.costs);
  if (r.ctx) r.be->close(r.ctx);
  taso_costdb_free(&r.db);
  taso_library_free(r.lib);
  taso_model_free(&r.m);
  return taso_tool_finish(&t, err);
}
