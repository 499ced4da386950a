/*
 * taso-optimize: rewrites a model with the proved substitutions into a
 * cheaper one that computes the same function.
 *
 * The graph's cost is the sum of the runtime's steps from the cost room
 * (src/cost/cost.h: the database, else measured on the chosen backend the
 * first time a step is seen); the search is the original TASO's or the
 * parallel one (src/search/search.h), every rewrite kept inside its proof
 * by the rule guard. The result is run against the original on seeded
 * inputs, timed end to end against it, and written as a model file
 * (taso-model) with the record of the search (src/search/record.h).
 */
#define _POSIX_C_SOURCE 200809L

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "agree.h"
#include "costdb.h"
#include "derive_guard.h"
#include "device.h"
#include "family.h"
#include "guard_cache.h"
#include "joint.h"
#include "model.h"
#include "onnx.h"
#include "record.h"
#include "replace.h"
#include "search.h"
#include "select.h"
#include "tool.h"
#include "verifier.h"

static const char *model_spec, *subst_path,
    *backend_name = "cpu", *onnx_path, *alpha_text, *budget_text, *time_limit_text, *axioms_path,
    *costs_path, *device_text, *confirm_text, *search_text, *width_text, *target_text,
    *guard_cache_path, *select_path, *rules_text = "all", *usage_path;
static bool per_node, no_check, no_measure, keep_slower, costs_record, check_incremental, chain,
    estimate, tf32;

static const taso_tool_flag_t flags[] = {
    {"cost-per-node", "cost one step per node (no epilogue fusion in the cost model)", &per_node},
    {"no-check", "skip running the result against the original on seeded inputs", &no_check},
    {"no-measure", "a configuration the cost database lacks is an error naming it, not measured",
     &no_measure},
    {"keep-slower", "write the result even when it is measured no faster than the input",
     &keep_slower},
    {"record-costs",
     "merge the configurations measured here into --costs (created if absent), "
     "so that later runs find them",
     &costs_record},
    {"chain",
     "rule chains: each expansion also follows every rule's cheapest improving "
     "rewrite by that rule alone while it keeps getting cheaper (job: [optimize] chain = on)",
     &chain},
    {"estimate-costs",
     "cost each step by a fixed estimate of its arithmetic and memory "
     "traffic (taso_cost_estimate), not measured: the same search on every machine",
     &estimate},
    {"check-incremental",
     "cost every rewrite both by the steps it changed and from scratch; "
     "any difference is an error (a check of the search's incremental costs)",
     &check_incremental},
    {"tf32",
     "let convolutions and matmuls use TF32 tensor cores (gpu), in the costs measured "
     "and in the runs that confirm the result; off by default",
     &tf32},
    {0},
};

static const taso_tool_option_t options[] = {
    {"model", "M", "the model: a spec for taso_model_load (required)", &model_spec},
    {"substitutions", "FILE[,FILE...]",
     "taso-substitutions artifacts (taso-verify's outputs; required): the proved rules of "
     "each, their rows numbered across the files in order",
     &subst_path},
    {"backend", "NAME", "where costs are measured: reference, cpu or gpu (default cpu)",
     &backend_name},
    {"onnx", "FILE", "also write the optimized model as ONNX", &onnx_path},
    {"rules", "CHOICE",
     "the rules searched: all (default); auto, the subset of the model's "
     "family (taso-rules); FAMILY, that family's subset; zoo, every rule that fired in some "
     "model of the usage; random:N, N rules at random (seeded, "
     "for comparisons); or FILE, a text file of rules, one \"lhs => rhs\" a line",
     &rules_text},
    {"rule-usage", "FILE",
     "the rule-usage file auto, FAMILY and zoo pick from (taso-rules' output; "
     "default data/rule_usage.h5)",
     &usage_path},
    {"search", "KIND",
     "backtracking (the original's, one rank), parallel (over the ranks) or eqsat "
     "(equality saturation, one rank; job: [optimize] search, eqsat_iterations, eqsat_nodes, "
     "eqsat_rounds, eqsat_measure)",
     &search_text},
    {"width", "K", "parallel: graphs expanded per round over all ranks (default 8)", &width_text},
    {"target-cost", "MS",
     "record when a graph this cheap was first found (root attribute "
     "target_seconds; for benchmarks)",
     &target_text},
    {"alpha", "A", "keep graphs cheaper than A times the best (job: [optimize] alpha)",
     &alpha_text},
    {"budget", "N", "graphs taken from the queue (job: [optimize] budget)", &budget_text},
    {"time-limit", "S", "seconds of search (job: [optimize] time_limit)", &time_limit_text},
    {"confirm-runs", "N",
     "timed runs of the input and of the result per round, in 5 rounds, alternated run by "
     "run; the result is written only when a sign test over the pairs of runs finds it "
     "faster (default 20; 0: no confirmation)",
     &confirm_text},
    {"select", "FILE",
     "the joint search: a graph costs what its best call plan from this library description "
     "(data/library/) costs, as taso-select selects it (fused calls, layouts NCHW or BLOCKED, "
     "in place), not the runtime's own steps; then run taso-select on the result",
     &select_path},
    {"costs", "FILE", "a cost database (taso-measure's costs.h5) consulted before measuring",
     &costs_path},
    {"device", "TEXT",
     "the database's device to read (as taso-show FILE.h5 lists them); default: its only device "
     "of --backend",
     &device_text},
    {"guard-cache", "FILE",
     "verdicts of re-proofs kept between runs: read before the search (rules it names that "
     "this run has), merged back after it (created if absent), so that no run proves a rule "
     "at a shape relation another run decided",
     &guard_cache_path},
    {"axioms", "PATH",
     "axioms that re-prove a rule at a match outside the shapes it was proved at (job: "
     "[verify] axioms; default $TASO_DATA_DIR/axioms, else the source tree's data/axioms)",
     &axioms_path},
    {0},
};

static const taso_tool_spec_t spec = {
    .name = "taso-optimize",
    .about = "Rewrites a model with the proved substitutions of taso-substitutions files\n"
             "into a cheaper model that computes the same function. Costs are the\n"
             "runtime's steps measured on --backend as they are first met. The search is\n"
             "the original TASO's: a queue of graphs by cost, every rule at every match,\n"
             "graphs kept while cheaper than alpha times the best, until the queue is\n"
             "empty, the budget is spent or the time limit hits. Settings come from the\n"
             "job's [optimize] section (defaults: backtracking, alpha 1.05, budget 1000,\n"
             "time_limit 600) and the options.\n"
             "\n"
             "The parallel search (--search parallel, under mpirun) expands, round by round,\n"
             "the --width cheapest graphs of the whole queue, spread evenly over the ranks,\n"
             "and sends each result to the rank owning its hash, which drops duplicates. With\n"
             "costs from --costs (every configuration in it) or --no-measure, its result\n"
             "does not depend on the rank count unless the time limit ended it (root\n"
             "attribute search_complete). A configuration the database lacks is measured\n"
             "once, on rank 0, between a round's expansions and its exchange, and shared:\n"
             "the ranks agree on every cost, but measurements differ from run to run, so\n"
             "fill the database first (--record-costs) for a result that does not depend\n"
             "on the rank count.\n"
             "\n"
             "Equality saturation (--search eqsat) puts the graph into an e-graph, applies\n"
             "every rule at every match for at most [optimize] eqsat_iterations iterations\n"
             "(15) while it has under eqsat_nodes nodes (50,000), and extracts the graph of\n"
             "least cost, each node costed alone, no cycle (also by an integer program,\n"
             "GLPK, for at most eqsat_exact_seconds: 0, none, by default); it is kept\n"
             "when its whole cost is below the input's, and the next of eqsat_rounds (3)\n"
             "saturations starts from it. alpha, budget and --width do not apply to it.\n"
             "Its proofs (below) go to the relations that an unproved first pass's result\n"
             "used, when it gains; the second pass applies no other (eqsat_proofs = used;\n"
             "all: every relation met, one pass): it replays the first's proved\n"
             "applications, and saturates again only when their graphs lack the first's\n"
             "result (or the exact extraction is on). A configuration the cache lacks is\n"
             "guessed from its estimate, and the result's steps measured, then the other\n"
             "guesses for a quarter of the time left (eqsat_measure = chosen; all: each\n"
             "measured when met).\n"
             "\n"
             "A rule applies only where it is proved: at a match whose shapes stand in the\n"
             "relation its proof had (shape_cond.h), or where the axioms prove it again at\n"
             "the match's relation (each relation once, within the job's [verify] limits);\n"
             "everywhere else it is refused.\n"
             "\n"
             "Unless --no-check, the result is run against the original on seeded inputs\n"
             "(on --backend, as taso-run --compare does); where they differ by more than\n"
             "1e-4 relative, the first rewrite on the search's path that made them differ\n"
             "is named with its rule and shapes, the model is still written, and the exit\n"
             "status is 3.\n"
             "\n"
             "Then both are timed end to end on --backend (--confirm-runs), alternated run\n"
             "by run in 5 rounds: a result is written only when its median is below the\n"
             "input's and it won enough pairs of runs that a result no faster would do so\n"
             "by chance once in 32 or less (a one-sided sign test: 60 of 100 pairs at the\n"
             "default 20 runs). Otherwise the input graph is, and the root attribute\n"
             "kept_input says so (unless --keep-slower).\n",
    .job_help = "job file: the [optimize] settings",
    .out_help = "the optimized model (.h5, kind taso-model; required)",
    .out_kind = TASO_KIND_MODEL,
    .fresh_help = "replace an existing OUT (only a file of the kind written)",
    .replace_needs_fresh = true,
    .threads = true,
    .single_rank = false, /* the parallel search; the baseline refuses more ranks */
    .flags = flags,
    .options = options,
};

/* ---- settings ------------------------------------------------------------------ */

typedef struct {
  taso_search_options_t search;
  const char *kind; /* "backtracking", "parallel" or "eqsat" */
  const taso_backend_t *be;
  int confirm_runs; /* end-to-end runs of input and result per round; 0: none */
} settings_t;

static bool parse_real(const char *text, double lo, double hi, double *v) {
  char *end;
  errno = 0;
  *v = strtod(text, &end);
  return end != text && !*end && errno == 0 && isfinite(*v) && *v >= lo && *v <= hi;
}

/* The job's [optimize] settings (its defaults without a job), then the
 * options over them. */
static void parse_settings(taso_tool_t *t, settings_t *s) {
  if (!model_spec) taso_tool_usage_error(t, "--model M is required");
  if (!subst_path) taso_tool_usage_error(t, "--substitutions FILE is required");
  if (!t->out_path) taso_tool_usage_error(t, "--out FILE is required");
  if (costs_record && !costs_path) taso_tool_usage_error(t, "--record-costs needs --costs FILE");
  if (select_path && per_node)
    taso_tool_usage_error(t, "--select and --cost-per-node are two costs");
  if (estimate && (costs_path || costs_record))
    taso_tool_usage_error(t, "--estimate-costs measures nothing: it takes no --costs");
  if (tf32 && costs_path)
    taso_tool_usage_error(t, "--tf32: a cost database holds FP32 figures; it takes no --costs");
  /* No output names another file argument (issue 32): --guard-cache or a
   * recorded --costs naming --out made the run wait on its own lock. */
  enum { MAX_SUBST = 16, FIXED = 9 };
  char subst[MAX_SUBST][1024];
  taso_tool_file_t files[FIXED + MAX_SUBST] = {
      taso_tool_output("--out", t->out_path, TASO_KIND_MODEL),
      taso_tool_output("--onnx", onnx_path, TASO_FILE_ONNX),
      taso_tool_updated("--guard-cache", guard_cache_path, TASO_KIND_GUARD_VERDICTS),
      taso_tool_updated("--costs", costs_record ? costs_path : NULL, TASO_KIND_COSTS),
      taso_tool_input("--model", model_spec),
      taso_tool_input("--job", t->job_path),
      taso_tool_input("--rule-usage", usage_path),
      taso_tool_input("--select", select_path),
      taso_tool_input("--costs", costs_record ? NULL : costs_path)};
  int n = FIXED;
  for (const char *p = subst_path; p && *p && n < FIXED + MAX_SUBST; n++) {
    size_t len = strcspn(p, ",");
    char *one = subst[n - FIXED];
    snprintf(one, sizeof subst[0], "%.*s", (int)len, p);
    files[n] = taso_tool_input("--substitutions", one);
    p += len + (p[len] == ',');
  }
  taso_tool_check_files(t, files, n);
  s->search.alpha = t->have_job ? t->job.alpha : 1.05;
  s->search.budget = t->have_job ? t->job.budget : 1000;
  s->search.time_limit = t->have_job ? t->job.optimize_time_limit : 600;
  s->kind = t->have_job ? t->job.search : "backtracking";
  s->search.chain = chain || (t->have_job && t->job.chain);
  if (search_text) s->kind = search_text;
  s->search.eqsat_iterations = t->have_job ? t->job.eqsat_iterations : 15;
  s->search.eqsat_nodes = t->have_job ? t->job.eqsat_nodes : 50000;
  s->search.eqsat_exact_seconds = t->have_job ? t->job.eqsat_exact_seconds : 0;
  s->search.eqsat_prove_all = t->have_job && t->job.eqsat_prove_all;
  s->search.eqsat_measure_all = t->have_job && t->job.eqsat_measure_all;
  s->search.eqsat_rounds = t->have_job ? t->job.eqsat_rounds : 3;
  if (strcmp(s->kind, "backtracking") && strcmp(s->kind, "parallel") && strcmp(s->kind, "eqsat"))
    taso_tool_usage_error(t, "--search: expected backtracking, parallel or eqsat, got '%s'",
                          s->kind);
  if (strcmp(s->kind, "parallel") != 0 && t->size > 1)
    taso_tool_usage_error(t, "the %s search runs on one rank (%d given); use --search parallel",
                          s->kind, t->size);
  double v;
  s->search.width = 8;
  if (width_text && !(parse_real(width_text, 1, 1e6, &v) && v == floor(v)))
    taso_tool_usage_error(t, "--width: expected a whole number from 1, got '%s'", width_text);
  if (width_text) s->search.width = (int)v;
  if (target_text && !parse_real(target_text, 1e-12, 1e12, &s->search.target))
    taso_tool_usage_error(t, "--target-cost: expected milliseconds > 0, got '%s'", target_text);
  if (alpha_text && !parse_real(alpha_text, 1, 100, &s->search.alpha))
    taso_tool_usage_error(t, "--alpha: expected a number from 1 to 100, got '%s'", alpha_text);
  if (budget_text && !(parse_real(budget_text, 0, 1e9, &v) && v == floor(v)))
    taso_tool_usage_error(t, "--budget: expected a whole number from 0, got '%s'", budget_text);
  if (budget_text) s->search.budget = (int64_t)v;
  if (time_limit_text && !parse_real(time_limit_text, 1e-3, 1e9, &s->search.time_limit))
    taso_tool_usage_error(t, "--time-limit: expected seconds > 0, got '%s'", time_limit_text);
  s->confirm_runs = 20;
  if (confirm_text && !(parse_real(confirm_text, 0, 1e6, &v) && v == floor(v)))
    taso_tool_usage_error(t, "--confirm-runs: expected a whole number from 0, got '%s'",
                          confirm_text);
  if (confirm_text) s->confirm_runs = (int)v;
  if (!(s->be = taso_backend_find(backend_name)))
    taso_tool_usage_error(t, "--backend: no backend '%s' in this build (reference, cpu%s)",
                          backend_name, taso_backend_built("gpu") ? ", gpu" : "");
}

/* ---- the search ---------------------------------------------------------------------- */

static void on_progress(void *ctx, int64_t explored, int64_t queued, double best_ms,
                        double seconds) {
  const settings_t *s = ctx;
  if (!strcmp(s->kind, "eqsat"))
    fprintf(stderr, "taso-optimize: eqsat iteration %lld/%d: %lld e-nodes (%.1f s)\n",
            (long long)explored, s->search.eqsat_iterations, (long long)queued, seconds);
  else
    fprintf(stderr,
            "taso-optimize: %lld/%lld graphs explored, %lld queued, best %.4g ms (%.1f s)\n",
            (long long)explored, (long long)s->search.budget, (long long)queued, best_ms, seconds);
  fflush(stderr);
}

/* ---- main ---------------------------------------------------------------------------------- */

typedef struct {
  taso_model_t m;
  taso_rules_t rules;
  taso_rt_ctx_t *ctx;
  taso_cost_cache_t *costs;
  taso_search_result_t result;
  int64_t proved;
  taso_costdb_t db;                  /* --costs, or empty */
  char device[TASO_COST_DEVICE_LEN]; /* the database's device whose rows are read */
  taso_costdb_source_t source;       /* db's rows of device, the cache's source */
  taso_axioms_t *ax;                 /* for the rule guard */
  taso_rule_guard_t *guard;          /* re-proves rules at new shape relations */
  bool kept_input;                   /* the result was measured no faster: the input was written */
  int width;                         /* the parallel search's round width */
  bool chain;                        /* rule chains on */
  taso_joint_t joint;                /* --select: its library, and how calls are costed */
  char input_name[TASO_MODEL_NAME_LEN]; /* the input model's name and features, recorded */
  taso_features_t input_features;
} run_t;

/* The model into OUT.tmp, then the search's record into the same file. */
static taso_err_t write_output(taso_tool_t *t, taso_model_t *m, const taso_optimize_record_t *rec,
                               const run_t *r) {
  taso_provenance_t prov;
  taso_tool_provenance(t, &prov);
  TASO_TRY(taso_model_write_h5(m, t->tmp_path, &prov));
  taso_artifact_t *a = NULL;
  TASO_TRY(taso_artifact_open_rw(MPI_COMM_SELF, t->tmp_path, TASO_KIND_MODEL, &a));
  taso_err_t err = taso_optimize_record_write(a, rec, &r->rules, &r->result);
  taso_err_t closed = taso_artifact_close(a);
  return err != TASO_OK ? err : closed;
}

/* --record-costs: what this rank's cache has that the database lacks,
 * merged into the database. */
static taso_err_t record_costs(taso_tool_t *t, run_t *r) {
  taso_provenance_t prov;
  taso_tool_provenance(t, &prov);
  int64_t n = 0;
  TASO_TRY(taso_costdb_record_cache(costs_path, &r->db, r->device, r->costs, "taso-optimize", &prov,
                                    &n));
  taso_tool_print(t, "taso-optimize: %lld measured configurations recorded in %s\n", (long long)n,
                  costs_path);
  return TASO_OK;
}

/* The device whose rows are read and recorded: the database's (--device,
 * or its only one of --backend), else, when recording into a database
 * without one, this machine's identity as taso-measure writes it. */
static taso_err_t choose_device(const taso_tool_t *t, const settings_t *s, run_t *r) {
  taso_err_t err = taso_costdb_pick_device(&r->db, costs_path, s->be->name, device_text, r->device,
                                           sizeof r->device);
  if (err == TASO_OK || !costs_record || device_text) return err;
  taso_device_t d;
  memset(&d, 0, sizeof d);
  d.nunits = t->threads;
  TASO_TRY(taso_device_identify(&d, s->be));
  snprintf(r->device, sizeof r->device, "%s", d.identity);
  return TASO_OK;
}

/* The guard that keeps every rewrite inside what is proved: the axioms
 * with their lemmas (each proved, as taso-verify does), and the job's
 * [verify] limits for each re-proof. */
static taso_err_t open_guard(const taso_tool_t *t, run_t *r) {
  char path[1024];
  taso_tool_axioms_path(t, axioms_path, path, sizeof path);
  TASO_TRY(taso_tool_guard_open(t, path, &r->rules.inputs, &r->ax, &r->guard));
  if (!guard_cache_path) return TASO_OK;
  int64_t loaded = 0;
  bool stale = false;
  taso_err_t err = taso_guard_cache_load(guard_cache_path, &r->rules, r->guard, &loaded, &stale);
  if (err != TASO_OK) return taso_error_prefix(err, "--guard-cache: ");
  if (stale)
    taso_tool_warn(t,
                   "--guard-cache %s was made with other guard settings (limits, axioms): "
                   "its verdicts are not used, and this run's replace them",
                   guard_cache_path);
  taso_tool_print(t, "taso-optimize: %lld re-proof verdicts from %s\n", (long long)loaded,
                  guard_cache_path);
  return TASO_OK;
}

/* --guard-cache: this run's verdicts (every rank's guard has them all:
 * the parallel search shares them) merged into the file. */
static taso_err_t save_verdicts(taso_tool_t *t, run_t *r) {
  taso_provenance_t prov;
  taso_tool_provenance(t, &prov);
  int64_t rows = 0;
  TASO_TRY(taso_guard_cache_save(guard_cache_path, &r->rules, r->guard, &prov, &rows));
  taso_tool_print(t, "taso-optimize: %s holds %lld re-proof verdicts\n", guard_cache_path,
                  (long long)rows);
  return TASO_OK;
}

#define CHECK_TOLERANCE 1e-4 /* taso-run --compare's default: float32 rounding */

/* Runs the result against the original (before it replaces the model's
 * graph); where they differ, names the first rewrite that made them
 * differ in t->findings and on stdout. */
static taso_err_t check(taso_tool_t *t, const settings_t *s, run_t *r, double *relative) {
  const taso_search_result_t *res = &r->result;
  int step = 0;
  TASO_TRY(taso_path_first_difference(s->be, r->ctx, &r->m, res->path, res->steps, CHECK_TOLERANCE,
                                      &step, relative));
  if (!(*relative <= CHECK_TOLERANCE) && step == 0)
    *relative = INFINITY; /* no single rewrite differs: say so, never pass */
  if (*relative <= CHECK_TOLERANCE) {
    taso_tool_print(t,
                    "taso-optimize: the result agrees with the original (largest relative "
                    "difference %.3g on seeded inputs, %s backend)\n",
                    *relative, s->be->name);
    return TASO_OK;
  }
  char rule[TASO_RULE_TEXT], made[2048] = "";
  if (step > 0 && res->path_rules[step] < 0) { /* eqsat: one step, many rules */
    snprintf(t->findings, sizeof t->findings,
             "the extracted graph changes the outputs by %.3g relative", *relative);
    taso_tool_print(t, "taso-optimize: the result differs from the original by %.3g relative\n",
                    *relative);
  } else if (step > 0) {
    int k = res->path_rules[step];
    taso_rule_format(&r->rules, k, rule, sizeof rule);
    taso_graph_describe_change(&r->m, &res->path[step - 1], &res->path[step], made, sizeof made);
    snprintf(t->findings, sizeof t->findings,
             "rewrite %d of %d (row %lld) changes the outputs by %.3g relative", step, res->steps,
             (long long)r->rules.v[k].row, *relative);
    taso_tool_print(
        t,
        "taso-optimize: the result differs from the original: rewrite %d of %d "
        "changes the outputs by %.3g relative (tolerance %g), by rule\n  %s  [row %lld%s]\n"
        "  which made these configurations:\n%s",
        step, res->steps, *relative, CHECK_TOLERANCE, rule, (long long)r->rules.v[k].row,
        r->rules.v[k].reversed ? ", reversed" : "", made);
  } else {
    snprintf(t->findings, sizeof t->findings,
             "the result differs from the original, but no single rewrite on its path does");
  }
  return TASO_OK;
}

/* Times the input model and r->m (the result, adopted and folded) end to
 * end; a result that is not faster gives way to the input (unless
 * --keep-slower), which then replaces r->m: the cost model is a sum of
 * steps timed alone, and only the whole run says what a user gets. Faster
 * means a lower median and enough pairs of runs won that a result no
 * faster would win as many once in 32 or less (a one-sided sign test);
 * each pair is timed back to back, so that a load change on a shared
 * machine weighs on both. */
static taso_err_t confirm(taso_tool_t *t, const settings_t *s, run_t *r,
                          taso_optimize_record_t *rec) {
  enum { ROUNDS = 5 };
  taso_model_t input;
  taso_err_t err = taso_model_load(model_spec, &input);
  if (err == TASO_OK)
    err = taso_model_latencies(s->be, r->ctx, &input, &r->m, s->confirm_runs, ROUNDS,
                               &rec->latency_before, &rec->latency_after, &rec->pairs_faster);
  if (err != TASO_OK) {
    taso_model_free(&input);
    return err;
  }
  rec->timed = true;
  rec->rounds = ROUNDS;
  rec->pairs = ROUNDS * s->confirm_runs;
  rec->pairs_needed = taso_sign_test_needed(rec->pairs, 1.0 / 32);
  double before = rec->latency_before, after = rec->latency_after;
  bool faster = after < before && rec->pairs_faster >= rec->pairs_needed;
  rec->kept_input = !faster && !keep_slower;
  taso_tool_print(t,
                  "taso-optimize: measured end to end %.4g ms -> %.4g ms (x%.3f; medians of "
                  "%d x %d runs, %s backend; faster in %d of %d pairs of runs, %d needed)%s\n",
                  before, after, after > 0 ? before / after : 0.0, ROUNDS, s->confirm_runs,
                  s->be->name, rec->pairs_faster, rec->pairs, rec->pairs_needed,
                  rec->kept_input ? ": not measured faster, the input graph is written "
                                    "(--keep-slower writes the result)"
                                  : "");
  if (rec->kept_input) { /* the input, as it was given */
    taso_model_free(&r->m);
    r->m = input;
  } else {
    taso_model_free(&input);
  }
  return TASO_OK;
}

/* Rank 0: the check against the original, the end-to-end confirmation,
 * the model file and ONNX. */
static taso_err_t finish_rank0(taso_tool_t *t, const settings_t *s, run_t *r,
                               taso_optimize_record_t *rec) {
  if (!no_check) {
    TASO_TRY(check(t, s, r, &rec->relative));
    rec->checked = true;
  }
  TASO_TRY(taso_model_adopt_graph(&r->m, &r->result.best));
  TASO_TRY(taso_model_fold_weights(&r->m)); /* as it will be written and run */
  if (s->confirm_runs > 0 && r->result.steps > 0) TASO_TRY(confirm(t, s, r, rec));
  r->kept_input = rec->kept_input;
  TASO_TRY(write_output(t, &r->m, rec, r));
  if (onnx_path) TASO_TRY(taso_onnx_export_replace(&r->m, onnx_path));
  if (costs_record) TASO_TRY(record_costs(t, r));
  if (guard_cache_path) TASO_TRY(save_verdicts(t, r));
  return TASO_OK;
}

/* --rules: which of the loaded rules the search tries. */
static taso_err_t choose_rules(taso_tool_t *t, run_t *r) {
  char fallback[1100], what[1400];
  const char *data = getenv("TASO_DATA_DIR");
  snprintf(fallback, sizeof fallback, "%s/rule_usage.h5", data ? data : TASO_DEFAULT_DATA_DIR);
  int listed = 0, matched = 0;
  TASO_TRY(taso_rules_choose(&r->rules, rules_text, usage_path ? usage_path : fallback, &r->m,
                             t->have_job ? t->job.seed : 1, what, sizeof what, &listed, &matched));
  if (what[0]) taso_tool_print(t, "taso-optimize: rules: %s\n", what);
  if (matched < listed)
    taso_tool_warn(t, "--rules %s: %d of its rules are not in %s (another rule set?)", rules_text,
                   listed - matched, subst_path);
  return TASO_OK;
}

static taso_err_t optimize(taso_tool_t *t, const settings_t *s, run_t *r) {
  TASO_TRY(taso_rules_load(t->comm, subst_path, &r->rules, &r->proved));
  TASO_TRY(open_guard(t, r));
  TASO_TRY(taso_model_load(model_spec, &r->m));
  snprintf(r->input_name, sizeof r->input_name, "%s", r->m.name);
  taso_model_features(&r->m, &r->input_features);
  TASO_TRY(choose_rules(t, r));
  char info[256];
  TASO_TRY(s->be->probe(info, sizeof info));
  if (tf32 && !s->be->set_tf32)
    return taso_error(TASO_ERR_ARG, "--tf32: the %s backend has no TF32 math", s->be->name);
  TASO_TRY(s->be->open(t->threads, &r->ctx));
  if (s->be->set_tf32) {
    TASO_TRY(s->be->set_tf32(r->ctx, tf32));
    taso_tool_print(t, "taso-optimize: math: %s\n",
                    tf32 ? "TF32 tensor cores allowed in convolutions and matmuls (--tf32)"
                         : "FP32 (no TF32; --tf32 allows it)");
  }
  taso_cost_options_t copt = taso_cost_options_default();
  copt.fusion = !per_node;
  copt.measure = !no_measure;
  copt.warm_weights = taso_rt_weights_stay_warm(&r->m, s->be);
  if (costs_path) {
    TASO_TRY(taso_costdb_read(costs_path, costs_record, &r->db));
    TASO_TRY(choose_device(t, s, r));
    /* the end-to-end runs make the calls the costs were measured with */
    int taken = taso_costdb_reuse(&r->db, r->device, s->be, r->ctx);
    if (taken) taso_tool_print(t, "taso-optimize: %d library calls taken from --costs\n", taken);
    r->source = (taso_costdb_source_t){&r->db, r->device};
    copt.lookup = taso_costdb_lookup;
    copt.lookup_ctx = &r->source;
  }
  if (estimate) copt.lookup = taso_cost_estimate_lookup;
  if (select_path) {
    r->joint.warm = copt.warm_weights || estimate;
    /* as defer_costs below */
    r->joint.deferring = strcmp(s->kind, "parallel") == 0 && !no_measure;
    TASO_TRY(taso_library_load(select_path, &r->joint.lib));
    copt.graph_cost = taso_joint_graph_cost;
    copt.graph_ctx = &r->joint;
    taso_tool_print(t, "taso-optimize: joint search: graphs cost their call plans from %s (%s)\n",
                    taso_library_name(r->joint.lib), select_path);
  }
  TASO_TRY(taso_cost_cache_new(s->be, r->ctx, &copt, &r->costs));
  r->joint.costs = r->costs;
  taso_tool_print(t,
                  "taso-optimize: %s (%d nodes), %d rules from %lld proved substitutions; "
                  "costs %s %s (%s)\n",
                  r->m.name, r->m.graph.nnodes, r->rules.n, (long long)r->proved,
                  estimate ? "estimated, not measured on" : "on", s->be->name, info);
  if (!estimate)
    taso_tool_print(t, "taso-optimize: weights timed %s: the model's tensors take %.1f MiB%s\n",
                    copt.warm_weights ? "warm" : "cold",
                    (double)taso_rt_model_bytes(&r->m) / (1 << 20),
                    copt.warm_weights ? ", under half the last-level cache share"
                                      : ", not under half the last-level cache share of a host "
                                        "backend");
  taso_search_problem_t prob = {
      .graph = &r->m.graph, .inputs = &r->m.inputs, .is_weight = r->m.is_weight};
  taso_search_options_t opt = s->search;
  r->width = opt.width;
  r->chain = opt.chain;
  opt.guard = r->guard;
  opt.defer_costs = !no_measure; /* the parallel search measures each miss once, on rank 0 */
  opt.check_incremental = check_incremental;
  opt.progress = on_progress;
  opt.progress_ctx = (void *)s;
  if (strcmp(s->kind, "parallel") == 0)
    TASO_TRY(taso_tool_agree(
        t, taso_search_parallel(t->comm, &prob, &r->rules, r->costs, &opt, &r->result)));
  else if (strcmp(s->kind, "eqsat") == 0)
    TASO_TRY(taso_search_eqsat(&prob, &r->rules, r->costs, &opt, &r->result));
  else
    TASO_TRY(taso_search_backtracking(&prob, &r->rules, r->costs, &opt, &r->result));
  taso_cost_stats_t cs;
  taso_cost_cache_stats(r->costs, &cs);
  taso_optimize_record_t rec = {.search = s->kind,
                                .substitutions = subst_path,
                                .model = model_spec,
                                .input_name = r->input_name,
                                .input_features = r->input_features,
                                .rules_choice = rules_text,
                                .backend = s->be->name,
                                .costs = estimate ? "estimated" : "measured",
                                .cost_of = select_path ? "selected call plans"
                                           : per_node  ? "one step per node"
                                                       : "the runtime's steps",
                                .opt = &s->search,
                                .proved = r->proved,
                                .measured = cs.measured};
  /* rank 0 checks and writes; the others wait for its verdict */
  taso_err_t err = TASO_OK;
  if (t->rank == 0) err = finish_rank0(t, s, r, &rec);
  TASO_TRY(taso_tool_agree(t, err));
  return taso_tool_commit_output(t);
}

static void summarize(taso_tool_t *t, const run_t *r) {
  const taso_search_result_t *res = &r->result;
  taso_cost_stats_t cs;
  taso_cost_cache_stats(r->costs, &cs);
  int distinct = 0;
  int64_t rewrites = 0; /* the steps on the path; eqsat: the applications the result uses */
  for (int i = 0; i < r->rules.n; i++) {
    distinct += res->fired[i] > 0;
    rewrites += res->fired[i];
  }
  taso_tool_print(t,
                  "taso-optimize: %lld configurations %s, %lld measured "
                  "(%.1f s, %lld on the reference backend); search ended by %s\n",
                  (long long)cs.looked_up, estimate ? "estimated" : "from the cost database",
                  (long long)cs.measured, cs.measure_s, (long long)cs.fallbacks,
                  res->eqsat_stop     ? res->eqsat_stop
                  : res->timed_out    ? "the time limit"
                  : res->budget_spent ? "the budget"
                                      : "an empty queue");
  if (r->guard) {
    taso_rule_guard_stats_t g;
    taso_rule_guard_stats(r->guard, &g);
    /* a parallel search shares its re-proofs: each rank decides a part */
    double mine[2] = {(double)g.proofs, g.proof_seconds}, sum[2], most = 0;
    MPI_Allreduce(mine, sum, 2, MPI_DOUBLE, MPI_SUM, t->comm);
    MPI_Allreduce(&g.proof_seconds, &most, 1, MPI_DOUBLE, MPI_MAX, t->comm);
    char unproved[64] = "";
    if (g.unproved)
      snprintf(unproved, sizeof unproved, ", %lld left unproved", (long long)g.unproved);
    taso_tool_print(t,
                    "taso-optimize: %lld matches: %lld at their proved shapes, %lld re-proved at "
                    "new shapes (%lld proofs, %.1f s), %lld refused%s\n",
                    (long long)g.matches, (long long)g.by_condition, (long long)g.by_reproof,
                    (long long)g.proofs, g.proof_seconds, (long long)g.refused, unproved);
    if (res->ranks > 1)
      taso_tool_print(t,
                      "taso-optimize: re-proofs over all %d ranks: %.0f proofs, %.1f s "
                      "(the busiest rank %.1f s)\n",
                      res->ranks, sum[0], sum[1], most);
  }
  char lines[2048];
  taso_search_report(res, r->width, r->chain, lines, sizeof lines);
  taso_tool_print(t, "%s", lines);
  if (check_incremental)
    taso_tool_print(t,
                    "taso-optimize: incremental check: %lld rewrites costed both ways, "
                    "all equal\n",
                    (long long)res->checked);
  taso_tool_summary(
      t,
      "%s: cost %.4g -> %.4g ms (x%.3f), %lld graphs explored, %lld generated, "
      "%.1f s search (%.1f CPU s), %lld rewrites by %d rules%s -> %s",
      r->m.name, res->cost_before, res->cost_after,
      res->cost_after > 0 ? res->cost_before / res->cost_after : 0.0, (long long)res->explored,
      (long long)res->generated, res->seconds, res->cpu_seconds, (long long)rewrites, distinct,
      r->kept_input ? " (measured no faster: the input graph written)" : "", t->out_path);
}

int main(int argc, char **argv) {
  taso_tool_t t;
  taso_tool_init(&t, &spec, &argc, &argv);
  taso_err_t err = TASO_OK;
  if (t.job_path) TASO_TOOL_STEP(&t, err, taso_tool_load_job(&t, t.job_path));
  /* keys an option set are not defaults the run took */
  const char *skip[4] = {NULL};
  int nskip = 0;
  if (alpha_text) skip[nskip++] = "alpha";
  if (budget_text) skip[nskip++] = "budget";
  if (time_limit_text) skip[nskip++] = "time_limit";
  if (err == TASO_OK && t.have_job) taso_tool_note_defaults(&t, "optimize", skip);
  settings_t s = {0};
  if (err == TASO_OK) parse_settings(&t, &s);
  TASO_TOOL_STEP(&t, err, taso_tool_claim_output(&t));
  run_t r;
  memset(&r, 0, sizeof r);
  taso_model_init(&r.m, NULL);
  if (err == TASO_OK) err = taso_tool_agree(&t, optimize(&t, &s, &r));
  if (err == TASO_OK) summarize(&t, &r);
  taso_search_result_free(&r.result);
  taso_cost_cache_free(r.costs);
  if (r.ctx) s.be->close(r.ctx);
  taso_costdb_free(&r.db);
  taso_guard_close(r.ax, r.guard);
  taso_rules_free(&r.rules);
  taso_library_free(r.joint.lib);
  taso_model_free(&r.m);
  return taso_tool_finish(&t, err);
}
