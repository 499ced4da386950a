/*
 * taso-measure: times every operator configuration of the given models on
 * a device and keeps the figures in the shared cost database (costdb.h),
 * which the optimizer reads.
 *
 * The configurations are those of the models' nodes alone and those the
 * runtime's plans really run (fused convolution epilogues), deduplicated
 * by key; the ones the database already holds for this device are reused.
 * The ranks of a node share its devices (device.h): on the CPU backend a
 * device is a set of cores, and the first ranks of a node own one each;
 * every rank collects the configurations of its share of the models, rank
 * 0 merges and orders them (longest first, by a FLOP estimate), and the
 * device ranks take them one at a time from a counter on rank 0, so no
 * device idles while work is left. Each measurement holds its device
 * through per-core advisory locks that every job on the node sees, so no
 * two measurements ever share a core, within a job or between jobs; the
 * holding interval goes into the row.
 *
 * Rows are merged into --db in batches (every [measure] batch_seconds, and
 * at the end) under the database's own lock, so concurrent jobs lose no
 * row, and a killed run keeps every batch it merged: started again, it
 * measures only the rest. One more row per device, measured and reused as
 * a configuration is, holds the runner's own cost per step
 * (TASO_COST_DISPATCH_KEY), which the database's lookups add to each step.
 *
 * --calibrate checks the result: each model's cost as taso-optimize sums it
 * from the database, against its end-to-end median on the same device.
 */
#define _GNU_SOURCE /* sched_getaffinity, CPU_* */

#include <errno.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <omp.h>

#include "collective.h"
#include "cost.h"
#include "costdb.h"
#include "derive_guard.h"
#include "device.h"
#include "hash.h"
#include "rule_guard.h"
#include "rules.h"
#include "runtime.h"
#include "select.h"
#include "tool.h"

#define MAX_MODELS 64
#define ALONG_RUNS 10 /* --calibrate: runs of each step timed alongside */

static const char *model_last, *db_path = "costs.h5", *backend_name = "cpu", *subst_path,
                               *depth_text = "1", *library_path, *calibrate_runs_text = "20";
static bool estimate, expand, no_device_lock, calibrate, calibrate_steps;

static const taso_tool_flag_t flags[] = {
    {"estimate",
     "then print each model's cost as taso-optimize sums it: its planned steps'\n"
     "                  medians in --db",
     &estimate},
    {"calibrate",
     "then print, for each model (default: every built-in one), that cost against\n"
     "                  its end-to-end median (taso_rt_time_model, as taso-run times it)\n"
     "                  and their ratio, then the steps' fastest runs against the fastest\n"
     "                  end-to-end run, as a table (bench/calibrate.sh keeps it)",
     &calibrate},
    {"calibrate-steps",
     "with --calibrate: also each step's cost against its time inside whole runs",
     &calibrate_steps},
    {"expand",
     "also the configurations of the graphs that the proved rules of\n"
     "                  --substitutions make from each model (every rule, both\n"
     "                  directions, at every match where its proof holds)",
     &expand},
    {"no-device-lock",
     "FOR BENCHMARKS ONLY: take no device lock, so that jobs measure on\n"
     "                  shared cores at once (bench/measure_schedule.sh shows how\n"
     "                  wrong their timings get); never use its figures",
     &no_device_lock},
    {0},
};

static const taso_tool_option_t options[] = {
    {"model", "M",
     "a model (built-in name with overrides, .onnx or model .h5); repeat for more;\n"
     "                  default: the job's [measure] models",
     &model_last},
    {"db", "FILE", "the cost database to fill and reuse (default costs.h5)", &db_path},
    {"backend", "NAME", "cpu (default), gpu, or reference", &backend_name},
    {"substitutions", "FILE", "taso-verify's output: the rules of --expand", &subst_path},
    {"library", "FILE",
     "a library description (data/library/): also every call taso-select weighs for\n"
     "                  each model (fused variants, layouts, in place), as it selects",
     &library_path},
    {"calibrate-runs", "N",
     "with --calibrate: timed end-to-end runs per model, in rounds over the\n"
     "                  models (default 20)",
     &calibrate_runs_text},
    {"depth", "N",
     "rewrites deep for --expand: 1 (default) or 2 (every rewrite of every\n"
     "                  rewrite: far more graphs)",
     &depth_text},
    {0},
};

static const taso_tool_spec_t spec = {
    .name = "taso-measure",
    .about = "Times every operator configuration of the models (each node alone, and the\n"
             "fused steps the runtime runs) on this node's devices and merges the figures\n"
             "into the cost database (--db): median, minimum and spread of repeated runs.\n"
             "One the backend has no call for is timed on the reference kernel, where the\n"
             "runtime runs it; one neither can run is recorded unavailable with the\n"
             "library's message (and tried again next time). Configurations the database\n"
             "holds for this device already are reused, not measured again. One more row holds\n"
             "the runner's own cost per step on the device, which lookups add to each step.\n"
             "\n"
             "A measurement owns its device: on the cpu backend a set of cores ([measure]\n"
             "cores_per_device; default all the job's cores on the node), held through\n"
             "advisory locks in [measure] lock_dir that every job on the node respects.\n"
             "Under mpirun the first ranks of a node own a device each; the others only\n"
             "collect configurations. Several jobs may fill one database at once: rows are\n"
             "merged under COSTS.lock into COSTS.tmp, renamed over the database, in batches,\n"
             "so that a killed run keeps what it merged and resumes from it.\n",
    .job_help = "job file: [measure] models, timing settings, devices",
    .fresh_help = "measure every configuration again (replacing this device's rows), and\n"
                  "                  replace a --db cut short (never another kind of file)",
    .job_required = true,
    .flags = flags,
    .options = options,
};

/* ---- settings ---------------------------------------------------------------- */

typedef struct {
  const char *models[MAX_MODELS];
  int nmodels;
  const taso_backend_t *be;
  char lock_dir[4096];
  int warmup, min_runs, max_runs, cores_per_device;
  double spread, batch_seconds;
  int depth;                /* --expand: rewrite steps; 0 without --expand */
  taso_rules_t rules;       /* --expand: the proved rules */
  taso_axioms_t *ax;        /* --expand: the rule guard, as taso-optimize's: */
  taso_rule_guard_t *guard; /* a rule applies where proved or proved again */
  taso_library_t *lib;      /* --library, or NULL */
  int calibrate_runs;       /* --calibrate: timed end-to-end runs */
} settings_t;

/* The harness keeps one value per option; --model may repeat, so argv is
 * read for every one before the harness parses it. */
static void scan_models(int argc, char **argv, settings_t *s) {
  for (int i = 1; i < argc && s->nmodels < MAX_MODELS; i++) {
    if (strcmp(argv[i], "--model") == 0 && i + 1 < argc)
      s->models[s->nmodels++] = argv[++i];
    else if (strncmp(argv[i], "--model=", 8) == 0)
      s->models[s->nmodels++] = argv[i] + 8;
  }
}

/* The job's blank-separated list, when no --model was given. The strings
 * live in the job, which outlives the run. */
static void job_models(taso_job_t *job, settings_t *s) {
  for (char *save = NULL, *m = strtok_r(job->measure_models, " \t", &save);
       m && s->nmodels < MAX_MODELS; m = strtok_r(NULL, " \t", &save))
    s->models[s->nmodels++] = m;
}

static void settings_of_job(taso_tool_t *t, settings_t *s) {
  taso_job_t *job = &t->job;
  if (s->nmodels == 0) job_models(job, s);
  if (s->nmodels == 0 && calibrate) { /* the table covers every built-in model */
    static char builtin[MAX_MODELS][64];
    int n = taso_model_builtin_list(builtin, MAX_MODELS);
    for (int i = 0; i < n && i < MAX_MODELS; i++)
      s->models[s->nmodels++] = builtin[i];
  }
  if (s->nmodels == 0)
    taso_tool_usage_error(t, "no model: give --model M, or [measure] models in %s", job->path);
  char *end;
  s->calibrate_runs = (int)strtol(calibrate_runs_text, &end, 10);
  if (*end || s->calibrate_runs < 1 || s->calibrate_runs > 100000)
    taso_tool_usage_error(t, "--calibrate-runs: '%s' is not a count from 1 to 100000",
                          calibrate_runs_text);
  s->warmup = job->measure_warmup;
  s->min_runs = job->measure_min_runs;
  s->max_runs = job->measure_max_runs;
  s->spread = job->measure_spread;
  s->cores_per_device = job->measure_cores_per_device;
  s->batch_seconds = job->measure_batch_seconds;
  const char *env = getenv("TASO_MEASURE_BATCH_SECONDS"); /* test hook */
  if (env && *env) s->batch_seconds = atof(env);
  if (s->max_runs < s->min_runs)
    taso_tool_usage_error(t, "%s: [measure] max_runs %d is below min_runs %d", job->path,
                          s->max_runs, s->min_runs);
  taso_device_lock_dir(job->measure_lock_dir, s->lock_dir, sizeof s->lock_dir);
  if (expand && !subst_path) taso_tool_usage_error(t, "--expand needs --substitutions FILE");
  if (!expand && subst_path) taso_tool_usage_error(t, "--substitutions is for --expand");
  if (strcmp(depth_text, "1") != 0 && strcmp(depth_text, "2") != 0)
    taso_tool_usage_error(t, "--depth: '%s' is not 1 or 2", depth_text);
  s->depth = expand ? atoi(depth_text) : 0;
}

/* ---- configurations -------------------------------------------------------------- */

typedef struct {
  char key[TASO_COST_KEY_LEN];
  taso_rt_config_t cfg;
  double flops; /* the order of measuring: longest first */
  int expanded; /* only in rewritten graphs (--expand), in no model itself */
} item_t;

typedef struct {
  item_t *v;
  int64_t n, cap;
  int64_t *slots; /* open addressing by key: index + 1, 0 empty (this rank's items) */
  int64_t nslots;
} items_t;

/* Multiply-adds of a convolution or product, else elements touched: only
 * the order of measuring depends on it. */
static double flops_of(const taso_rt_config_t *c) {
  double out = (double)taso_tensor_size(&c->out[0]);
  if (c->kind == TASO_OP_CONV2D)
    return out * (double)taso_tensor_size(&c->in[1]) / (double)c->in[1].dim[0];
  if (c->kind == TASO_OP_MATMUL || c->kind == TASO_OP_BMM)
    return out * (double)c->in[0].dim[c->in[0].rank - 1];
  double moved = out;
  for (int i = 0; i < c->nin; i++)
    moved += (double)taso_tensor_size(&c->in[i]);
  return moved;
}

static uint64_t key_hash(const char *key) {
  return taso_mix64(taso_fnv64(TASO_FNV_START, key, strlen(key)));
}

/* The slot of key: its item's, or the empty one where it would go. */
static int64_t key_slot(const items_t *it, const char *key) {
  int64_t mask = it->nslots - 1, i = (int64_t)(key_hash(key) & (uint64_t)mask);
  while (it->slots[i] && strcmp(it->v[it->slots[i] - 1].key, key) != 0)
    i = (i + 1) & mask;
  return i;
}

static taso_err_t grow_slots(items_t *it) {
  int64_t n = it->nslots ? 2 * it->nslots : 1024;
  free(it->slots);
  if (!(it->slots = calloc((size_t)n, sizeof *it->slots)))
    return taso_error(TASO_ERR_NOMEM, "no memory for configurations");
  it->nslots = n;
  for (int64_t j = 0; j < it->n; j++)
    it->slots[key_slot(it, it->v[j].key)] = j + 1;
  return TASO_OK;
}

/* Room for one more item in it->v. */
static taso_err_t reserve_item(items_t *it) {
  if (it->n == it->cap) {
    int64_t cap = it->cap ? 2 * it->cap : 64;
    item_t *grown = realloc(it->v, sizeof *grown * (size_t)cap);
    if (!grown) return taso_error(TASO_ERR_NOMEM, "no memory for configurations");
    it->v = grown;
    it->cap = cap;
  }
  return TASO_OK;
}

/* Adds cfg unless its key is there already (expansion gives the same
 * configurations again and again), or it is a view, which runs nothing
 * and costs 0 (taso_rt_config_is_view); a model's own configuration is
 * not one that expansion added. */
static taso_err_t add_item(items_t *it, const taso_rt_config_t *cfg, bool expanded) {
  if (taso_rt_config_is_view(cfg)) return TASO_OK;
  TASO_TRY(reserve_item(it));
  if (2 * (it->n + 1) > it->nslots) TASO_TRY(grow_slots(it));
  item_t *x = &it->v[it->n];
  memset(x, 0, sizeof *x);
  if (taso_rt_config_key(cfg, x->key, sizeof x->key) >= (int)sizeof x->key)
    return taso_error(TASO_ERR_LIMIT, "a configuration key longer than %d characters: %.80s...",
                      TASO_COST_KEY_LEN - 1, x->key);
  int64_t slot = key_slot(it, x->key);
  if (it->slots[slot]) {
    it->v[it->slots[slot] - 1].expanded &= expanded;
    return TASO_OK;
  }
  x->cfg = *cfg;
  x->flops = flops_of(cfg);
  x->expanded = expanded;
  it->slots[slot] = ++it->n;
  return TASO_OK;
}

/* The device's dispatch row (costdb.h), measured like a configuration:
 * last (no FLOPs), reused like one. */
static taso_err_t add_dispatch(items_t *it) {
  TASO_TRY(reserve_item(it));
  item_t *x = &it->v[it->n++];
  memset(x, 0, sizeof *x);
  snprintf(x->key, sizeof x->key, "%s", TASO_COST_DISPATCH_KEY);
  return TASO_OK;
}

static void items_free(items_t *it) {
  free(it->v);
  free(it->slots);
  memset(it, 0, sizeof *it);
}

/* ---- expansion: what the rules make of a model -------------------------------------- */

typedef struct {
  taso_model_t *m; /* the model: its inputs type the results */
  items_t *it;
  taso_tensor_t *types; /* scratch: a result's types */
  int types_cap;
  bool *folded;       /* scratch: per node, folded into a weight (taso_cost_mark_folded) */
  taso_graph_t *keep; /* distinct results, kept for another step (depth 2) */
  int64_t nkeep, cap;
  bool keeping;
  bool warm;       /* the model stays in cache: no operand cold */
  int64_t graphs;  /* results seen (with repeats) */
  int64_t invalid; /* results a consumer's typing refused */
} expansion_t;

static taso_err_t fit_types(expansion_t *x, int nnodes) {
  if (2 * nnodes <= x->types_cap) return TASO_OK;
  taso_tensor_t *t = realloc(x->types, sizeof *t * 2 * (size_t)nnodes);
  if (t) x->types = t;
  bool *f = realloc(x->folded, sizeof *f * (size_t)nnodes);
  if (f) x->folded = f;
  if (!t || !f) return taso_error(TASO_ERR_NOMEM, "types of %d nodes", nnodes);
  x->types_cap = 2 * nnodes;
  return TASO_OK;
}

static taso_err_t collect_step(void *ctx, const taso_rt_step_info_t *info) {
  return add_item(ctx, &info->cfg, true);
}

static taso_err_t collect_own_step(void *ctx, const taso_rt_step_info_t *info) {
  return add_item(ctx, &info->cfg, false);
}

static taso_err_t keep_graph(expansion_t *x, const taso_graph_t *g) {
  if (x->nkeep == x->cap) {
    int64_t cap = x->cap ? 2 * x->cap : 64;
    taso_graph_t *grown = realloc(x->keep, sizeof *grown * (size_t)cap);
    if (!grown) return taso_error(TASO_ERR_NOMEM, "no memory for rewritten graphs");
    x->keep = grown;
    x->cap = cap;
  }
  taso_graph_init(&x->keep[x->nkeep]);
  TASO_TRY(taso_graph_copy(&x->keep[x->nkeep], g));
  x->nkeep++;
  return TASO_OK;
}

/* One rewritten graph: the steps a plan of it would run (taso_rt_steps,
 * what the optimizer's cost sums). */
static taso_err_t on_result(void *ctx, const taso_graph_t *g) {
  expansion_t *x = ctx;
  x->graphs++;
  TASO_TRY(fit_types(x, g->nnodes + 1));
  taso_err_t err = taso_graph_infer(g, &x->m->inputs, x->types);
  if (err == TASO_ERR_SHAPE) { /* as the search: a consumer refused the rhs's types */
    x->invalid++;
    return TASO_OK;
  }
  TASO_TRY(err);
  taso_model_t view = *x->m;
  view.graph = *g;
  view.calls = NULL; /* a plan of the model's graph, not g's */
  view.ncalls = 0;
  view.types = x->types;
  view.types_cap = x->types_cap;
  taso_cost_mark_folded(g, x->m->is_weight, x->folded); /* as the optimizer costs g */
  taso_rt_options_t opt = {.layout = TASO_RT_NCHW, .warm_weights = x->warm};
  err = taso_rt_steps_partial(&view, &opt, x->folded, NULL, collect_step, x->it);
  if (err == TASO_OK && x->keeping) err = keep_graph(x, g);
  return err;
}

static int by_hash_then_graph(const void *a, const void *b) {
  const taso_graph_t *x = a, *y = b;
  uint64_t hx = taso_graph_hash(x), hy = taso_graph_hash(y);
  return hx != hy ? (hx < hy ? -1 : 1) : taso_graph_compare(x, y);
}

/* The distinct graphs of x->keep, in a canonical order. */
static void unique_kept(expansion_t *x) {
  if (x->nkeep) qsort(x->keep, (size_t)x->nkeep, sizeof *x->keep, by_hash_then_graph);
  int64_t m = 0;
  for (int64_t i = 0; i < x->nkeep; i++)
    if (m > 0 && taso_graph_compare(&x->keep[m - 1], &x->keep[i]) == 0)
      taso_graph_free(&x->keep[i]);
    else
      x->keep[m++] = x->keep[i];
  x->nkeep = m;
}

/* Every rewrite of host by every rule, where the guard lets it apply
 * (at a proved shape relation, or one the axioms prove again): the
 * rewrites taso-optimize makes. */
static taso_err_t rewrite_all(const settings_t *s, const taso_graph_t *host,
                              const taso_tensor_t *types, expansion_t *x) {
  uint32_t kinds = taso_graph_kinds(host);
  taso_err_t err = TASO_OK;
  for (int r = 0; r < s->rules.n && err == TASO_OK; r++) {
    const taso_rule_t *rule = &s->rules.v[r];
    if (rule->kinds & ~kinds) continue; /* an lhs operator the host lacks */
    err = taso_rewrite_all_guarded(s->guard, r, 0, host, types, &rule->lhs, &rule->rhs, &rule->cond,
                                   on_result, x);
  }
  return err;
}

/* Every rewrite of m's graph by the rules, depth steps deep; their
 * configurations go into it. */
static taso_err_t expand_model(const settings_t *s, taso_model_t *m, items_t *it, int64_t *graphs) {
  expansion_t x = {
      .m = m, .it = it, .keeping = s->depth > 1, .warm = taso_rt_weights_stay_warm(m, s->be)};
  taso_err_t err = rewrite_all(s, &m->graph, m->types, &x);
  if (err == TASO_OK && s->depth > 1) {
    unique_kept(&x);
    int64_t level = x.nkeep;
    x.keeping = false;
    for (int64_t i = 0; err == TASO_OK && i < level; i++) {
      err = fit_types(&x, x.keep[i].nnodes + 1);
      taso_tensor_t *types = NULL;
      if (err == TASO_OK && !(types = malloc(sizeof *types * 2 * (size_t)(x.keep[i].nnodes + 1))))
        err = taso_error(TASO_ERR_NOMEM, "types of %d nodes", x.keep[i].nnodes);
      if (err == TASO_OK) err = taso_graph_infer(&x.keep[i], &m->inputs, types);
      if (err == TASO_OK) err = rewrite_all(s, &x.keep[i], types, &x);
      free(types);
    }
  }
  for (int64_t i = 0; i < x.nkeep; i++)
    taso_graph_free(&x.keep[i]);
  free(x.keep);
  free(x.types);
  free(x.folded);
  *graphs += x.graphs - x.invalid;
  return err;
}

/* --library: each configuration the selection asks the cost of is one to
 * measure, and so is its in-place variant wherever the library has an
 * in-place call for it: which steps may write in place depends on the
 * plan the measured costs make, so every candidate is measured. The
 * selection is told estimates. */
typedef struct {
  items_t *it;
  const taso_library_t *lib;
} calls_t;

static taso_err_t collect_call(void *ctx, const taso_rt_config_t *cfg, double *ms) {
  calls_t *c = ctx;
  *ms = taso_cost_estimate(cfg);
  TASO_TRY(add_item(c->it, cfg, false));
  for (int i = 0; !cfg->in_place && i < taso_library_ncalls(c->lib); i++) {
    int writes = taso_library_call(c->lib, i)->writes;
    if (writes == TASO_WRITES_OWN || writes == TASO_WRITES_PRODUCERS ||
        !taso_library_covers(c->lib, i, cfg))
      continue; /* a placed concat runs nothing: no cost to measure */
    taso_rt_config_t v = *cfg;
    v.in_place = writes == TASO_WRITES_SUMMAND ? cfg->nin : 1;
    if (taso_tensor_size(&v.in[v.in_place - 1]) == taso_tensor_size(&v.out[0]))
      TASO_TRY(add_item(c->it, &v, false));
  }
  return TASO_OK;
}

static taso_err_t collect_calls(const settings_t *s, taso_model_t *m, bool warm, items_t *it) {
  TASO_TRY(taso_model_fold_weights(m)); /* as taso-select selects */
  calls_t c = {.it = it, .lib = s->lib};
  for (int pass = 0; pass < 3; pass++) { /* the plain plan, row-major, channels last */
    taso_select_options_t o = {.plain = pass == 0, .nhwc = pass == 2, .warm_weights = warm};
    taso_call_t *calls = NULL;
    int n = 0;
    taso_select_stats_t st;
    taso_err_t err = taso_select_plan(m, s->lib, &o, collect_call, &c, &calls, &n, &st);
    free(calls);
    if (err != TASO_OK && !(err == TASO_ERR_UNSUPPORTED && pass == 2)) return err;
  }
  return TASO_OK;
}

/* Every node's configuration, then every step's (fused) as a plan would
 * run it (taso_rt_steps: no backend, so that ranks without a device
 * collect too), then with --expand those of the rewritten graphs. */
static taso_err_t collect_model(const char *model, const settings_t *s, items_t *it,
                                int64_t *graphs) {
  taso_model_t m;
  taso_rt_config_t cfg;
  taso_rt_step_info_t *steps = NULL;
  int nsteps = 0;
  taso_err_t err = taso_model_load(model, &m);
  /* timed as taso-optimize costs them: cold unless the model stays in cache */
  taso_rt_options_t opt = {.layout = TASO_RT_NCHW,
                           .warm_weights = err == TASO_OK && taso_rt_weights_stay_warm(&m, s->be)};
  for (int i = 0; err == TASO_OK && i < m.graph.nnodes; i++)
    if (m.graph.nodes[i].kind != TASO_OP_INPUT) {
      err = taso_rt_config_of_node(&m, i, &cfg);
      if (opt.warm_weights) cfg.cold = 0;
      cfg.cold_out = !opt.warm_weights; /* as the planner marks a step (no fusion) */
      if (err == TASO_OK) err = add_item(it, &cfg, false);
    }
  if (err == TASO_OK) err = taso_rt_steps(&m, &opt, &steps, &nsteps);
  for (int k = 0; err == TASO_OK && k < nsteps; k++)
    err = add_item(it, &steps[k].cfg, false);
  /* and as taso-optimize costs the model: its weight-only nodes folded
   * (NasRNN's first cell reads its initial state, a weight) */
  bool *folded = err == TASO_OK ? malloc(sizeof *folded * (size_t)(m.graph.nnodes + 1)) : NULL;
  if (err == TASO_OK && !folded) err = taso_error(TASO_ERR_NOMEM, "nodes of %s", model);
  if (err == TASO_OK && taso_cost_mark_folded(&m.graph, m.is_weight, folded))
    err = taso_rt_steps_partial(&m, &opt, folded, NULL, collect_own_step, it);
  free(folded);
  if (err == TASO_OK && s->depth > 0) err = expand_model(s, &m, it, graphs);
  if (err == TASO_OK && s->lib) err = collect_calls(s, &m, opt.warm_weights, it);
  free(steps);
  taso_model_free(&m);
  return err;
}

static int by_key(const void *a, const void *b) {
  return strcmp(((const item_t *)a)->key, ((const item_t *)b)->key);
}

static int longest_first(const void *a, const void *b) {
  const item_t *x = a, *y = b;
  if (x->flops != y->flops) return x->flops < y->flops ? 1 : -1;
  return strcmp(x->key, y->key);
}

/* Sorted by key, unique; a configuration that some model has itself is
 * not one expansion added. */
static void dedup(items_t *it) {
  int64_t m = 0;
  if (it->n) qsort(it->v, (size_t)it->n, sizeof *it->v, by_key);
  for (int64_t i = 0; i < it->n; i++)
    if (m == 0 || strcmp(it->v[m - 1].key, it->v[i].key) != 0)
      it->v[m++] = it->v[i];
    else
      it->v[m - 1].expanded &= it->v[i].expanded;
  it->n = m;
}

/* Collective: every rank's items, deduplicated, on rank 0. */
static taso_err_t gather_items(const taso_tool_t *t, items_t *mine, items_t *all) {
  int bytes = (int)(sizeof(item_t) * (size_t)mine->n), *counts = NULL, *displs = NULL;
  if (t->rank == 0) {
    counts = calloc((size_t)t->size, sizeof *counts);
    displs = calloc((size_t)t->size, sizeof *displs);
    if (!counts || !displs) taso_fatal(__FILE__, __LINE__, "taso", "no memory");
  }
  MPI_Gather(&bytes, 1, MPI_INT, counts, 1, MPI_INT, 0, t->comm);
  int64_t total = 0;
  for (int r = 0; t->rank == 0 && r < t->size; r++) {
    displs[r] = (int)total;
    total += counts[r];
  }
  if (t->rank == 0) {
    all->n = all->cap = total / (int64_t)sizeof(item_t);
    all->v = malloc((size_t)total + 1);
    if (!all->v) taso_fatal(__FILE__, __LINE__, "taso", "no memory");
  }
  MPI_Gatherv(mine->v, bytes, MPI_BYTE, all->v, counts, displs, MPI_BYTE, 0, t->comm);
  if (t->rank == 0) dedup(all);
  free(counts);
  free(displs);
  return TASO_OK;
}

/* Collective: rank 0's items on every rank. */
static void broadcast_items(const taso_tool_t *t, items_t *it) {
  MPI_Bcast(&it->n, 1, MPI_INT64_T, 0, t->comm);
  if (t->rank != 0) {
    it->v = malloc(sizeof *it->v * (size_t)(it->n + 1));
    if (!it->v) taso_fatal(__FILE__, __LINE__, "taso", "no memory");
  }
  MPI_Bcast(it->v, (int)(sizeof *it->v * (size_t)it->n), MPI_BYTE, 0, t->comm);
}

/* ---- devices ------------------------------------------------------------------ */

typedef struct {
  taso_device_t dev;     /* the cores this rank works on (its device, or its affinity) */
  bool owns;             /* measures: one of the node's devices is this rank's */
  int index;             /* the device's number on the node */
  int ndevices;          /* devices on this node */
  taso_rt_ctx_t *ctx;    /* the backend, on dev's cores; NULL on a gpu rank without a GPU */
  taso_rt_ctx_t *ref;    /* the reference backend, opened for the first configuration the
                            backend has no call for (the runtime runs those on it) */
  taso_device_t *others; /* cpu: the node's other devices, where this rank measures
                            while another job holds its own (working elsewhere) */
  int nothers;
  const taso_device_t *bound; /* the device whose cores the threads run on */
} place_t;

static int compare_int(const void *a, const void *b) {
  return (*(const int *)a > *(const int *)b) - (*(const int *)a < *(const int *)b);
}

/* The gpu backend: one rank per GPU measures, the node's local rank i on
 * GPU i (i < the device count: local rank % count, without a repeat);
 * the other ranks only collect configurations, on no device. The GPU is
 * held through a lock named after its UUID, which every job on the node
 * sees whatever its CUDA_VISIBLE_DEVICES numbering. */
static taso_err_t place_gpu(const settings_t *s, int lrank, place_t *p) {
  char uuid[64] = "";
  int count = 0;
  if (!s->be->device_uuid)
    return taso_error(TASO_ERR_UNSUPPORTED, "the %s backend names no devices", s->be->name);
  TASO_TRY(s->be->device_uuid(0, &count, uuid, sizeof uuid));
  p->ndevices = count;
  p->owns = lrank < count;
  p->index = p->owns ? lrank % count : -1;
  if (!p->owns) return taso_device_open_gpu(&p->dev, s->lock_dir, -1, "");
  TASO_TRY(s->be->device_uuid(p->index, &count, uuid, sizeof uuid));
  char ordinal[16];
  snprintf(ordinal, sizeof ordinal, "%d", p->index);
  setenv("TASO_GPU_DEVICE", ordinal, 1); /* the backend opens this one */
  return taso_device_open_gpu(&p->dev, s->lock_dir, p->index, uuid);
}

/* Collective. The node's cores this job may use (the union of its ranks'
 * affinities), cut into devices of cores_per_device; local rank i < the
 * device count owns device i. A rank without a device keeps its own
 * affinity, which it holds while it collects (planning is CPU load too). */
static taso_err_t place_rank(const taso_tool_t *t, const settings_t *s, place_t *p) {
  cpu_set_t mine, all;
  MPI_Comm node;
  int lrank, cores[CPU_SETSIZE], ncores = 0, own[CPU_SETSIZE], nown = 0;
  memset(p, 0, sizeof *p);
  sched_getaffinity(0, sizeof mine, &mine);
  MPI_Comm_split_type(t->comm, MPI_COMM_TYPE_SHARED, t->rank, MPI_INFO_NULL, &node);
  MPI_Comm_rank(node, &lrank);
  MPI_Allreduce(&mine, &all, sizeof all, MPI_BYTE, MPI_BOR, node);
  MPI_Comm_free(&node);
  for (int c = 0; c < CPU_SETSIZE; c++) {
    if (CPU_ISSET(c, &all)) cores[ncores++] = c;
    if (CPU_ISSET(c, &mine)) own[nown++] = c;
  }
  bool gpu = strcmp(s->be->name, "gpu") == 0;
  if (gpu) return place_gpu(s, lrank, p);
  int per = s->cores_per_device ? s->cores_per_device : ncores;
  if (per > ncores)
    return taso_error(TASO_ERR_ARG,
                      "[measure] cores_per_device is %d, but this job has %d core%s "
                      "on %s",
                      per, ncores, ncores == 1 ? "" : "s", "this node");
  p->ndevices = ncores / per;
  p->owns = lrank < p->ndevices;
  p->index = p->owns ? lrank : -1;
  if (!p->owns) {
    qsort(own, (size_t)nown, sizeof *own, compare_int);
    return taso_device_open(&p->dev, s->lock_dir, false, own, nown);
  }
  TASO_TRY(taso_device_open(&p->dev, s->lock_dir, false, cores + lrank * per, per));
  if (p->ndevices > 1 && !(p->others = calloc((size_t)p->ndevices - 1, sizeof *p->others)))
    return taso_error(TASO_ERR_NOMEM, "no memory for devices");
  for (int j = 0; j < p->ndevices; j++)
    if (j != lrank)
      TASO_TRY(
          taso_device_open(&p->others[p->nothers++], s->lock_dir, false, cores + j * per, per));
  return TASO_OK;
}

/* Binds to the device's cores and opens the backend there (on the gpu
 * backend, only a rank with a GPU opens it). The node's other devices are
 * of the same kind and size: they share the identity. */
static taso_err_t open_place(const settings_t *s, place_t *p) {
  if (p->dev.gpu && !p->owns) return TASO_OK;
  TASO_TRY(taso_device_bind(&p->dev));
  p->bound = &p->dev;
  TASO_TRY(s->be->open(p->dev.gpu ? 0 : p->dev.nunits, &p->ctx));
  TASO_TRY(taso_device_identify(&p->dev, s->be));
  for (int j = 0; j < p->nothers; j++)
    memcpy(p->others[j].identity, p->dev.identity, sizeof p->dev.identity);
  return TASO_OK;
}

/* --no-device-lock: the lock files closed, so holding a device takes
 * nothing (device.c goes on unprotected without a lock file). */
static void unlock_place(place_t *p) {
  taso_device_unlock(&p->dev);
  for (int j = 0; j < p->nothers; j++)
    taso_device_unlock(&p->others[j]);
  p->nothers = 0; /* no device is ever held by another job, as far as it can see */
}

static void close_place(const settings_t *s, place_t *p) {
  if (p->ctx) s->be->close(p->ctx);
  if (p->ref) taso_backend_find("reference")->close(p->ref);
  taso_device_close(&p->dev);
  for (int j = 0; j < p->nothers; j++)
    taso_device_close(&p->others[j]);
  free(p->others);
}

/* Holds this rank's own device, or while another job holds that, another
 * of the node's (working elsewhere), its threads moved onto that device's
 * cores; *held: the one held. */
static taso_err_t hold_device(place_t *p, taso_device_t **held) {
  taso_device_t *devs[1 + CPU_SETSIZE];
  int n = 0, which = 0;
  devs[n++] = &p->dev;
  for (int j = 0; j < p->nothers; j++)
    devs[n++] = &p->others[j];
  TASO_TRY(taso_device_hold_any(devs, n, &which));
  *held = devs[which];
  if (p->bound == *held || (*held)->gpu) return TASO_OK;
  p->bound = *held;
  taso_err_t err = taso_device_bind(*held);
  if (err != TASO_OK) {
    double from, to;
    taso_device_let_go(*held, &from, &to);
  }
  return err;
}

/* Collective. This rank's share of the models, collected while it holds
 * its cores; then all of them on rank 0. *graphs: the rewritten graphs
 * of --expand, over all ranks. */
static taso_err_t collect(const taso_tool_t *t, const settings_t *s, place_t *p, items_t *all,
                          int64_t *graphs) {
  items_t mine = {0};
  double from, to;
  int64_t my_graphs = 0;
  taso_device_t *held = NULL;
  taso_err_t err = hold_device(p, &held);
  for (int i = t->rank; err == TASO_OK && i < s->nmodels; i += t->size)
    err = collect_model(s->models[i], s, &mine, &my_graphs);
  if (held && held->held_since > 0) taso_device_let_go(held, &from, &to);
  /* only after letting go: another rank may wait for these cores */
  MPI_Reduce(&my_graphs, graphs, 1, MPI_INT64_T, MPI_SUM, 0, t->comm);
  /* collecting is not a measurement: the devices' figures start after it */
  p->dev.holds = 0;
  p->dev.busy = p->dev.waited = 0;
  for (int j = 0; j < p->nothers; j++) {
    p->others[j].holds = 0;
    p->others[j].busy = p->others[j].waited = 0;
  }
  if (err == TASO_OK) dedup(&mine);
  err = taso_agree(t->comm, err);
  if (err == TASO_OK) err = gather_items(t, &mine, all);
  items_free(&mine);
  return err;
}

/* ---- measuring ------------------------------------------------------------------ */

typedef struct {
  const taso_tool_t *t;
  const settings_t *s;
  place_t *p;
  const char *identity;   /* rank 0's device identity: what reuse is checked against */
  taso_device_t *held;    /* the device of the measurement under way */
  items_t *todo;          /* the configurations to measure, longest first */
  taso_costdb_t known;    /* the database as last merged (or read) */
  taso_cost_row_t *batch; /* rows measured since the last merge */
  int64_t nbatch, cap;
  int64_t measured, unavailable, reused; /* reused: merged by another job meanwhile */
  int64_t merged;                        /* rows of this rank merged into the database */
  int64_t stop_after; /* test hook: SIGKILL once this many are merged; -1 never */
  double last_merge;
  ino_t db_ino; /* the database file as last read, to see another job's merge */
  time_t db_mtime;
  taso_provenance_t prov;
} run_t;

/* Runs beyond median + 3 IQR: reported, but kept in the figures, which
 * are order statistics and shrug them off. */
static int count_outliers(double *ms, int n, const taso_rt_stats_t *st, double iqr_spread) {
  int k = 0;
  for (int i = 0; i < n; i++)
    k += ms[i] > st->median * (1 + 3 * iqr_spread) && iqr_spread > 0;
  return k;
}

static void fill_row(const run_t *r, const item_t *it, double *ms, int n, taso_err_t err,
                     taso_cost_row_t *row) {
  memset(row, 0, sizeof *row);
  snprintf(row->device, sizeof row->device, "%s", r->held->identity);
  snprintf(row->key, sizeof row->key, "%s", it->key);
  snprintf(row->unit, sizeof row->unit, "%s", r->held->unit);
  taso_now_iso8601(row->when);
  row->flops = it->flops;
  if (err != TASO_OK || n == 0) {
    row->status = TASO_COST_UNAVAILABLE;
    snprintf(row->message, sizeof row->message, "%s",
             err != TASO_OK ? taso_error_detail() : "no timed run");
    return;
  }
  taso_rt_stats_t st;
  double iqr = taso_rt_iqr_spread(ms, n); /* sorts ms: order is not needed past here */
  taso_rt_stats_of(ms, n, &st);
  row->median = st.median;
  row->min = st.min;
  row->max = st.max;
  row->spread = st.spread;
  row->iqr_spread = iqr;
  row->runs = st.runs;
  row->outliers = count_outliers(ms, n, &st, iqr);
}

/* The steps of the chain that times the runner's per-step term: enough
 * that a run's own start and end (inputs in, outputs out) weigh little. */
#define DISPATCH_STEPS 64

/* A configuration the backend has no call for: a plan runs it on the
 * reference kernel (the runtime's fallback), so that kernel's time is its
 * cost, recorded as measured with the backend's reason in its algorithm.
 * Only where the reference backend refuses it too is it unavailable. */
static taso_err_t measure_fallback(run_t *r, const item_t *it, double *ms, int *n,
                                   char algorithm[TASO_COST_ALGORITHM_LEN]) {
  const settings_t *s = r->s;
  const taso_backend_t *ref = taso_backend_find("reference");
  char why[TASO_COST_ALGORITHM_LEN - 24]; /* room for "reference kernel (...)" */
  snprintf(why, sizeof why, "%s", taso_error_detail());
  if (!r->p->ref) TASO_TRY(ref->open(0, &r->p->ref));
  TASO_TRY(taso_rt_time_config_samples(ref, r->p->ref, &it->cfg, s->warmup, s->min_runs,
                                       s->max_runs, s->spread, ms, n, NULL, 0));
  snprintf(algorithm, TASO_COST_ALGORITHM_LEN, "reference kernel (%s)", why);
  return TASO_OK;
}

/* One configuration, timed while this rank holds its device. A failure of
 * the backend is the configuration's (recorded as unavailable); one of the
 * lock is the run's. The dispatch row's samples are the runner's per-step
 * term (taso_rt_time_dispatch), min_runs of them. */
static taso_err_t measure_one(run_t *r, const item_t *it, double *ms, taso_cost_row_t *row) {
  const settings_t *s = r->s;
  int n = 0;
  char algorithm[TASO_COST_ALGORITHM_LEN] = "";
  taso_err_t err;
  if (strcmp(it->key, TASO_COST_DISPATCH_KEY) == 0) {
    n = s->min_runs;
    bool device_clock = taso_rt_device_clock(s->be);
    snprintf(algorithm, sizeof algorithm, "runner:chain of %d relu steps%s%s", DISPATCH_STEPS,
             device_clock ? ", " : "", device_clock ? TASO_COST_DISPATCH_DEVICE_CLOCK : "");
    err = taso_rt_time_dispatch(s->be, r->p->ctx, DISPATCH_STEPS, s->warmup, n, ms);
  } else {
    err = taso_rt_time_config_samples(s->be, r->p->ctx, &it->cfg, s->warmup, s->min_runs,
                                      s->max_runs, s->spread, ms, &n, algorithm, sizeof algorithm);
    if (err == TASO_ERR_UNSUPPORTED && strcmp(s->be->name, "reference") != 0)
      err = measure_fallback(r, it, ms, &n, algorithm);
  }
  fill_row(r, it, ms, n, err, row);
  memcpy(row->algorithm, algorithm, sizeof algorithm);
  row->held_from = r->held->held_since;
  row->held_to = taso_wall_seconds();
  return TASO_OK;
}

/* Whether db holds a measured cost of key on device: an unavailable row is
 * tried again (the reference kernel may time what the backend could not,
 * measure_fallback). */
static bool has_cost(const taso_costdb_t *db, const char *device, const char *key) {
  const taso_cost_row_t *row = taso_costdb_find(db, device, key);
  return row && row->status == TASO_COST_MEASURED;
}

/* Whether the database file changed since it was last read (another job
 * merged): a rename gives it a new inode. */
static bool db_changed(run_t *r) {
  struct stat st;
  if (stat(db_path, &st) != 0) return false;
  bool changed = st.st_ino != r->db_ino || st.st_mtime != r->db_mtime;
  r->db_ino = st.st_ino;
  r->db_mtime = st.st_mtime;
  return changed;
}

/* Whether another job measured it meanwhile, reading the database again
 * only when it changed. */
static taso_err_t known_elsewhere(run_t *r, const item_t *it, bool *known) {
  *known = false;
  if (r->t->fresh) return TASO_OK;
  if (db_changed(r)) {
    taso_costdb_free(&r->known);
    TASO_TRY(taso_costdb_read(db_path, true, &r->known));
  }
  *known = has_cost(&r->known, r->held->identity, it->key);
  return TASO_OK;
}

static taso_err_t merge_batch(run_t *r) {
  taso_costdb_t after = {0};
  TASO_TRY(taso_costdb_merge(db_path, r->batch, r->nbatch, &r->prov, r->t->fresh, &after));
  taso_costdb_free(&r->known);
  r->known = after;
  r->merged += r->nbatch;
  r->nbatch = 0;
  r->last_merge = taso_wall_seconds();
  db_changed(r); /* what this merge wrote is known */
  if (r->stop_after >= 0 && r->merged >= r->stop_after) raise(SIGKILL);
  return TASO_OK;
}

static taso_err_t keep_row(run_t *r, const taso_cost_row_t *row) {
  if (r->nbatch == r->cap) {
    int64_t cap = r->cap ? 2 * r->cap : 32;
    taso_cost_row_t *grown = realloc(r->batch, sizeof *grown * (size_t)cap);
    if (!grown) return taso_error(TASO_ERR_NOMEM, "no memory for cost rows");
    r->batch = grown;
    r->cap = cap;
  }
  r->batch[r->nbatch++] = *row;
  *(row->status == TASO_COST_MEASURED ? &r->measured : &r->unavailable) += 1;
  if (taso_wall_seconds() - r->last_merge >= r->s->batch_seconds) return merge_batch(r);
  return TASO_OK;
}

/* Collective. Device ranks take configurations from the counter, longest
 * first, until none is left; one that another job merged meanwhile is
 * reused (unless --fresh). */
static taso_err_t measure_all(run_t *r) {
  taso_counter_t counter;
  taso_progress_t progress;
  taso_err_t err = TASO_OK;
  double *ms = malloc(sizeof *ms * (size_t)r->s->max_runs);
  if (!ms) taso_fatal(__FILE__, __LINE__, "taso", "no memory");
  taso_counter_open(r->t->comm, &counter);
  taso_progress_begin(&progress, r->t, "configurations", r->todo->n);
  r->last_merge = taso_wall_seconds();
  while (r->p->owns && err == TASO_OK) {
    int64_t i = taso_counter_take(&counter, 1);
    if (i >= r->todo->n) break;
    const item_t *it = &r->todo->v[i];
    taso_cost_row_t row;
    bool known = false;
    double from, to;
    /* Held from the check to the merge: a job that waited for this device
     * sees what was measured on it before it measures the same thing. */
    if ((err = hold_device(r->p, &r->held)) != TASO_OK) break;
    err = known_elsewhere(r, it, &known);
    if (err == TASO_OK && !known) err = measure_one(r, it, ms, &row);
    if (err == TASO_OK && !known) err = keep_row(r, &row);
    taso_device_let_go(r->held, &from, &to);
    if (known) r->held->holds--, r->reused++;
    taso_progress_update(&progress, i + 1);
  }
  if (err == TASO_OK && r->nbatch > 0) err = merge_batch(r);
  free(ms);
  err = taso_agree(r->t->comm, err);
  taso_counter_close(&counter);
  return err;
}

/* ---- reporting -------------------------------------------------------------------- */

enum {
  F_OWNS,
  F_INDEX,
  F_HOLDS,
  F_ELSEWHERE,
  F_BUSY,
  F_WAITED,
  F_SPAN,
  F_MEASURED,
  F_UNAVAIL,
  F_REUSED,
  NF
};

/* Collective. Each device rank's measurements (those on another of the
 * node's devices among them), busy time (held), time waiting for another
 * job's hold, and idle time (neither) over the phase. */
static void report_devices(const run_t *r, double span, int64_t totals[3]) {
  const taso_tool_t *t = r->t;
  const place_t *p = r->p;
  double mine[NF] = {p->owns,
                     p->index,
                     p->dev.holds,
                     0,
                     p->dev.busy,
                     p->dev.waited,
                     span,
                     (double)r->measured,
                     (double)r->unavailable,
                     (double)r->reused};
  for (int j = 0; j < p->nothers; j++) {
    mine[F_HOLDS] += p->others[j].holds;
    mine[F_ELSEWHERE] += p->others[j].holds;
    mine[F_BUSY] += p->others[j].busy;
    mine[F_WAITED] += p->others[j].waited;
  }
  double *all = t->rank == 0 ? malloc(sizeof *all * NF * (size_t)t->size) : NULL;
  if (t->rank == 0 && !all) taso_fatal(__FILE__, __LINE__, "taso", "no memory");
  MPI_Gather(mine, NF, MPI_DOUBLE, all, NF, MPI_DOUBLE, 0, t->comm);
  char units[TASO_COST_UNIT_LEN];
  for (int q = 0; t->rank == 0 && q < t->size; q++) {
    const double *v = all + NF * q;
    for (int k = 0; k < 3; k++)
      totals[k] += (int64_t)v[F_MEASURED + k];
    if (!v[F_OWNS]) continue;
    snprintf(units, sizeof units, "%s", q == 0 ? r->p->dev.unit : "");
    printf("taso-measure: device %d (rank %d%s%s): %d measurements (%d on another device while "
           "this one was held), busy %.1f s, waited %.1f s for other jobs, idle %.1f s\n",
           (int)v[F_INDEX], q, units[0] ? ", " : "", units, (int)v[F_HOLDS], (int)v[F_ELSEWHERE],
           v[F_BUSY], v[F_WAITED], v[F_SPAN] - v[F_BUSY] - v[F_WAITED]);
  }
  free(all);
}

/* ---- the cost model against the run ------------------------------------------------ */

/* The database as the cost cache's source, counting the configurations
 * it has no figure for (costed 0, so that the report still adds up what
 * it has, and says how much is missing). */
typedef struct {
  taso_costdb_source_t src;
  bool fastest; /* each row's fastest run, not its median (what load cannot inflate) */
  int missing;
} counting_source_t;

static taso_err_t counting_lookup(void *ctx, const char *key, const taso_rt_config_t *cfg,
                                  double *ms, bool *found) {
  counting_source_t *c = ctx;
  TASO_TRY(taso_costdb_lookup(&c->src, key, cfg, ms, found));
  const taso_cost_row_t *row = c->fastest ? taso_costdb_find(c->src.db, c->src.device, key) : NULL;
  if (row && row->status == TASO_COST_MEASURED)
    *ms = taso_costdb_step_ms(row->min, taso_costdb_dispatch(c->src.db, c->src.device));
  if (!*found) {
    c->missing++;
    *ms = 0;
    *found = true;
  }
  return TASO_OK;
}

/* m's cost as taso-optimize computes it from the database (the same
 * steps, keys and warm or cold weights: src/search/cost.c), never measured
 * here; *missing: configurations without a row. */
static taso_err_t model_cost(const settings_t *s, const place_t *p, const taso_costdb_t *db,
                             const taso_model_t *m, bool fastest, double *ms, int *nsteps,
                             int *missing) {
  counting_source_t src = {.src = {db, p->dev.identity}, .fastest = fastest};
  taso_cost_options_t o = taso_cost_options_default();
  o.measure = false;
  o.warm_weights = taso_rt_weights_stay_warm(m, s->be);
  o.lookup = counting_lookup;
  o.lookup_ctx = &src;
  taso_cost_cache_t *c = NULL;
  taso_rt_step_info_t *steps = NULL;
  taso_rt_options_t opt = {.layout = TASO_RT_NCHW, .warm_weights = o.warm_weights};
  taso_err_t err = taso_cost_cache_new(s->be, p->ctx, &o, &c);
  if (err == TASO_OK) err = taso_cost_of_graph(c, &m->graph, m->types, m->is_weight, ms);
  if (err == TASO_OK) err = taso_rt_steps(m, &opt, &steps, nsteps);
  *missing = src.missing;
  free(steps);
  taso_cost_cache_free(c);
  return err;
}

/* The run-time inputs of m as taso-run makes them (seed 1). */
static taso_err_t make_inputs(taso_model_t *m, float ***inputs) {
  m->seed = 1;
  *inputs = calloc((size_t)m->inputs.n + 1, sizeof **inputs);
  if (!*inputs) return taso_error(TASO_ERR_NOMEM, "inputs");
  for (int i = 0, k = 0; i < m->inputs.n; i++) {
    if (m->is_weight[i]) continue;
    int64_t n = taso_tensor_size(&m->inputs.v[i].type);
    float *x = (*inputs)[k++] = malloc(sizeof(float) * (size_t)(n ? n : 1));
    if (!x) return taso_error_nomem(4.0 * (double)n, "input '%s'", m->names[i]);
    taso_model_random_input(m, i, 1, x);
  }
  return TASO_OK;
}

static void free_inputs(const taso_model_t *m, float **inputs) {
  for (int i = 0; inputs && i < m->inputs.n; i++)
    free(inputs[i]);
  free(inputs);
}

/* A placed concat or a view (taso_rt_config_is_view): no kernel, and
 * cost 0 as the cost model counts it (by its configuration). */
static bool runs_nothing(const taso_rt_step_info_t *info) {
  return info->placed || taso_rt_config_is_view(&info->cfg);
}

/* --calibrate-steps: each step's figure in the database against its time
 * inside whole runs (taso_rt_profile_in_run: caches as a run leaves them),
 * to find the steps the figures get wrong. */
static taso_err_t print_steps(const settings_t *s, const place_t *p, const taso_costdb_t *db,
                              taso_rt_plan_t *plan, const float *const *in) {
  int n = taso_rt_plan_steps(plan);
  taso_rt_stats_t *st = calloc((size_t)n + 1, sizeof *st);
  if (!st) return taso_error(TASO_ERR_NOMEM, "step timings");
  taso_err_t err = taso_rt_profile_in_run(plan, in, 3, s->calibrate_runs, st);
  double sum_db = 0, sum_run = 0;
  for (int i = 0; i < n && err == TASO_OK; i++) {
    taso_rt_step_info_t info;
    char text[256];
    double ms = 0;
    taso_rt_plan_step(plan, i, &info);
    taso_rt_config_format(&info.cfg, text, sizeof text);
    bool none = runs_nothing(&info);
    bool known = none || taso_costdb_cost(db, p->dev.identity, &info.cfg, &ms) == TASO_OK;
    if (known && !none) ms = taso_costdb_step_ms(ms, taso_costdb_dispatch(db, p->dev.identity));
    sum_db += ms;
    sum_run += st[i].median;
    printf("  step %4d %10.4f %10.4f %7.2f  %s%s\n", i, ms, st[i].median,
           st[i].median > 0 ? ms / st[i].median : 0, text, known ? "" : " (no figure)");
  }
  if (err == TASO_OK)
    printf("  steps: cost %.3f ms, inside runs %.3f ms (step, cost ms, in-run median ms, ratio)\n",
           sum_db, sum_run);
  free(st);
  return err;
}

/* One model of the table: its costs, plan and end-to-end runs. */
typedef struct {
  taso_model_t m;
  taso_rt_plan_t *plan;
  float **in;
  double cost, fastest; /* the steps' medians summed, their fastest runs summed */
  int nsteps, missing;
  double *ms; /* calibrate_runs end-to-end runs */
  int nms;
  double *along;    /* each step's runs timed alone between the rounds' end-to-end runs */
  int nalong;       /* runs per step so far */
  double alongside; /* their medians summed (and the dispatch row) */
} calibrated_t;

static void calibrated_free(calibrated_t *c) {
  taso_rt_plan_free(c->plan);
  free_inputs(&c->m, c->in);
  taso_model_free(&c->m);
  free(c->ms);
  free(c->along);
  memset(c, 0, sizeof *c);
}

/* A model's costs, and with table its plan (as taso-run plans it; the
 * cold marks only name the keys) and inputs. */
static taso_err_t calibrate_load(const char *model, const settings_t *s, const place_t *p,
                                 const taso_costdb_t *db, bool table, calibrated_t *c) {
  memset(c, 0, sizeof *c);
  taso_err_t err = taso_model_load(model, &c->m);
  /* as a written model runs: taso-optimize costs weight-only nodes as folded */
  if (err == TASO_OK && table) err = taso_model_fold_weights(&c->m);
  if (err == TASO_OK) err = model_cost(s, p, db, &c->m, false, &c->cost, &c->nsteps, &c->missing);
  if (err == TASO_OK && !table)
    printf("taso-measure: estimate %s: %.3f ms, the sum of %d steps' medians (%d without a "
           "figure)\n",
           model, c->cost, c->nsteps, c->missing);
  if (err != TASO_OK || !table) return err;
  TASO_TRY(model_cost(s, p, db, &c->m, true, &c->fastest, &c->nsteps, &c->missing));
  taso_rt_options_t opt = {.layout = TASO_RT_NCHW,
                           .warm_weights = taso_rt_weights_stay_warm(&c->m, s->be)};
  TASO_TRY(make_inputs(&c->m, &c->in));
  TASO_TRY(taso_rt_plan(s->be, p->ctx, &c->m, c->m.calls ? NULL : &opt, &c->plan));
  size_t steps = (size_t)taso_rt_plan_steps(c->plan) + 1;
  if (!(c->ms = malloc(sizeof *c->ms * (size_t)s->calibrate_runs)) ||
      !(c->along = calloc(steps * ALONG_RUNS, sizeof *c->along)))
    return taso_error(TASO_ERR_NOMEM, "timings");
  return TASO_OK;
}

/* runs more runs of each step of c's plan, timed alone as taso-measure
 * times it (its own buffers, the caches chilled as a run leaves them),
 * now: between end-to-end runs, so that both see the machine at the same
 * speed. A shared machine's speed drifts by more than the 10% the cost
 * model is held to (two threads of this 2-core VM: SqueezeNet's median
 * 6.3 ms in one process, 9.0 ms in the next), so the database's figures,
 * measured minutes before, can be off by the drift alone; this column
 * tells the method's error from the machine's. A step the backend has no
 * call for keeps its database figure. */
static taso_err_t time_alongside(const settings_t *s, const place_t *p, const taso_costdb_t *db,
                                 calibrated_t *c, int runs) {
  int n = taso_rt_plan_steps(c->plan);
  if (c->nalong + runs > ALONG_RUNS) runs = ALONG_RUNS - c->nalong;
  for (int i = 0; i < n && runs > 0; i++) {
    taso_rt_step_info_t info;
    taso_rt_plan_step(c->plan, i, &info);
    double *ms = c->along + (size_t)i * ALONG_RUNS + c->nalong;
    int got = 0;
    if (runs_nothing(&info)) continue;
    taso_err_t err = info.fallback
                         ? TASO_ERR_UNSUPPORTED
                         : taso_rt_time_config_samples(s->be, p->ctx, &info.cfg, s->warmup, runs,
                                                       runs, 0, ms, &got, NULL, 0);
    if (err == TASO_ERR_UNSUPPORTED) {
      double known = 0;
      taso_costdb_cost(db, p->dev.identity, &info.cfg, &known);
      for (int r = 0; r < runs; r++)
        ms[r] = known;
    } else if (err != TASO_OK) {
      return err;
    }
  }
  c->nalong += runs;
  return TASO_OK;
}

/* The sum of the steps' medians timed alongside, each as the database's
 * lookups give a step (the dispatch row added). */
static void sum_alongside(const place_t *p, const taso_costdb_t *db, calibrated_t *c) {
  int n = taso_rt_plan_steps(c->plan);
  double dispatch = taso_costdb_dispatch(db, p->dev.identity);
  c->alongside = 0;
  for (int i = 0; i < n && c->nalong > 0; i++) {
    taso_rt_step_info_t info;
    taso_rt_plan_step(c->plan, i, &info);
    if (runs_nothing(&info)) continue;
    taso_rt_stats_t st;
    taso_rt_stats_of(c->along + (size_t)i * ALONG_RUNS, c->nalong, &st);
    c->alongside += taso_costdb_step_ms(st.median, dispatch);
  }
}

/* The end-to-end runs of every model, in rounds (each model's runs of a
 * round one after another, 3 warm-up runs before its first): a burst of
 * other work on the machine then slows every model a little rather than
 * one model's whole series. */
static taso_err_t time_rounds(const settings_t *s, const place_t *p, const taso_costdb_t *db,
                              calibrated_t *c, int n) {
  int rounds = s->calibrate_runs < 5 ? s->calibrate_runs : 5;
  for (int r = 0; r < rounds; r++)
    for (int i = 0; i < n; i++) {
      int want = s->calibrate_runs * (r + 1) / rounds;
      const float *const *in = (const float *const *)c[i].in;
      taso_rt_stats_t one;
      if (r == 0) TASO_TRY(taso_rt_time_model(c[i].plan, in, 2, 1, &one));
      int half = (c[i].nms + want) / 2;
      while (c[i].nms < want) {
        /* half the round's end-to-end runs, the steps alone, the other half */
        if (c[i].nms == half)
          TASO_TRY(time_alongside(s, p, db, &c[i], ALONG_RUNS * (r + 1) / rounds - c[i].nalong));
        TASO_TRY(taso_rt_time_model(c[i].plan, in, 0, 1, &one));
        c[i].ms[c[i].nms++] = one.median;
      }
    }
  for (int i = 0; i < n; i++)
    sum_alongside(p, db, &c[i]);
  return TASO_OK;
}

static void print_row(const char *model, calibrated_t *c) {
  taso_rt_stats_t e2e;
  taso_rt_stats_of(c->ms, c->nms, &e2e);
  printf("%-24s %5d %9.3f %9.3f %7.3f %9.3f %9.3f %7.3f %9.3f %7.3f%s\n", model, c->nsteps, c->cost,
         e2e.median, e2e.median > 0 ? c->cost / e2e.median : 0, c->fastest, e2e.min,
         e2e.min > 0 ? c->fastest / e2e.min : 0, c->alongside,
         e2e.median > 0 ? c->alongside / e2e.median : 0, c->missing ? " (figures missing)" : "");
}

/* Rank 0: --estimate's lines, or --calibrate's table. */
static taso_err_t print_estimates(const settings_t *s, place_t *p, bool table) {
  taso_costdb_t db;
  TASO_TRY(taso_costdb_read(db_path, false, &db));
  /* the plans make the calls the steps' costs were measured with */
  int taken = table && p->ctx ? taso_costdb_reuse(&db, p->dev.identity, s->be, p->ctx) : 0;
  calibrated_t *c = calloc((size_t)s->nmodels + 1, sizeof *c);
  if (!c) {
    taso_costdb_free(&db);
    return taso_error(TASO_ERR_NOMEM, "models");
  }
  int n = 0;
  taso_err_t err = TASO_OK;
  for (; n < s->nmodels && err == TASO_OK; n++)
    if ((err = calibrate_load(s->models[n], s, p, &db, table, &c[n])) != TASO_OK)
      err = taso_error_prefix(err, "%s: ", s->models[n]);
  if (table && err == TASO_OK) {
    char info[256] = "";
    s->be->probe(info, sizeof info);
    printf("taso-measure: calibration on %s (%s): the cost model (the sum of the planned steps'\n"
           "  medians in %s, as taso-optimize costs a graph) against end to end (median of %d\n"
           "  runs after 3 warm-up, as taso-run times them, in rounds over the models); then\n"
           "  the steps' fastest runs against the fastest end-to-end run, which load on a\n"
           "  shared machine inflates less; then the steps timed alone as taso-measure does,\n"
           "  between the end-to-end runs (medians of %d runs each), against the same median:\n"
           "  the method's error without the machine's drift since the database was filled\n",
           p->dev.identity, info, db_path, s->calibrate_runs, ALONG_RUNS);
    printf("  per step, the runner's own cost: %.4f ms (the dispatch row; included)\n",
           taso_costdb_dispatch(&db, p->dev.identity));
    if (taken) printf("  library calls taken from the database: %d\n", taken);
  }
  /* end-to-end runs are measurements: they hold a device as those do */
  taso_device_t *held = NULL;
  if (table && err == TASO_OK && p->owns) err = hold_device(p, &held);
  if (table && err == TASO_OK) err = time_rounds(s, p, &db, c, n);
  if (table && err == TASO_OK) {
    printf("%-24s %5s %9s %9s %7s %9s %9s %7s %9s %7s\n", "model", "steps", "cost ms", "e2e ms",
           "ratio", "fast ms", "e2e min", "ratio", "along ms", "ratio");
    for (int i = 0; i < n; i++)
      print_row(s->models[i], &c[i]);
    fflush(stdout);
  }
  for (int i = 0; i < n && err == TASO_OK && table && calibrate_steps; i++) {
    printf("%s:\n", s->models[i]);
    err = print_steps(s, p, &db, c[i].plan, (const float *const *)c[i].in);
  }
  double from, to;
  if (held) taso_device_let_go(held, &from, &to);
  for (int i = 0; i < n; i++)
    calibrated_free(&c[i]);
  free(c);
  taso_costdb_free(&db);
  return err;
}

/* The summary's note on --expand (rank 0's figures). */
static const char *expansion_note(int64_t added, int64_t graphs) {
  static char note[128];
  snprintf(note, sizeof note, "; --expand added %lld configurations from %lld rewritten graphs",
           (long long)added, (long long)graphs);
  return note;
}

int main(int argc, char **argv) {
  settings_t s = {0};
  scan_models(argc, argv, &s);
  taso_tool_t t;
  taso_tool_init(&t, &spec, &argc, &argv);
  if (!(s.be = taso_backend_find(backend_name)))
    taso_tool_usage_error(&t, "--backend: no backend '%s' in this build (reference, cpu%s)",
                          backend_name, taso_backend_find("gpu") ? ", gpu" : "");
  place_t p = {.dev.nunits = 0};
  items_t all = {0};
  run_t r = {.t = &t, .s = &s, .p = &p, .todo = &all, .stop_after = -1};
  taso_err_t err = taso_tool_load_job(&t, t.job_path);
  if (err == TASO_OK) {
    settings_of_job(&t, &s);
    taso_tool_note_defaults(&t, "measure", (const char *const[]){"models", NULL});
  }
  /* Before any work: replace.h's rule. The database is read and grown
   * (a file of another kind never replaced, not even with --fresh); it is
   * shared by concurrent jobs, so it is not claimed for the run as other
   * tools' outputs are: its lock is taken for each merge only. */
  if (err == TASO_OK) {
    taso_tool_file_t files[MAX_MODELS + 4] = {
        taso_tool_updated("--db", db_path, TASO_KIND_COSTS), taso_tool_input("--job", t.job_path),
        taso_tool_input("--substitutions", subst_path), taso_tool_input("--library", library_path)};
    int n = 4;
    for (int i = 0; i < s.nmodels; i++)
      files[n++] = taso_tool_input("--model", s.models[i]);
    taso_tool_check_files(&t, files, n);
  }
  if (library_path) TASO_TOOL_STEP(&t, err, taso_library_load(library_path, &s.lib));
  int64_t proved = 0, graphs = 0, added = 0;
  if (s.depth > 0) TASO_TOOL_STEP(&t, err, taso_rules_load(t.comm, subst_path, &s.rules, &proved));
  if (s.depth > 0 && err == TASO_OK) {
    char axioms[1024];
    taso_tool_axioms_path(&t, NULL, axioms, sizeof axioms);
    TASO_TOOL_STEP(&t, err, taso_tool_guard_open(&t, axioms, &s.rules.inputs, &s.ax, &s.guard));
  }
  if (err == TASO_OK && s.depth > 0)
    taso_tool_print(&t,
                    "taso-measure: --expand: %d rules from %lld proved substitutions, %d "
                    "rewrite%s deep\n",
                    s.rules.n, (long long)proved, s.depth, s.depth == 1 ? "" : "s");
  TASO_TOOL_STEP(&t, err, place_rank(&t, &s, &p));
  if (err == TASO_OK && no_device_lock) unlock_place(&p);
  TASO_TOOL_STEP(&t, err, open_place(&s, &p));
  char identity[TASO_COST_DEVICE_LEN];
  snprintf(identity, sizeof identity, "%s", p.dev.identity);
  MPI_Bcast(identity, sizeof identity, MPI_CHAR, 0, t.comm);
  r.identity = identity;
  if (err == TASO_OK)
    taso_tool_print(&t, "taso-measure: device %s; %d device%s of %d core%s on rank 0's node\n",
                    identity, p.ndevices, p.ndevices == 1 ? "" : "s", p.dev.nunits,
                    p.dev.nunits == 1 ? "" : "s");
  TASO_TOOL_STEP(&t, err, collect(&t, &s, &p, &all, &graphs));
  if (err == TASO_OK && t.rank == 0) err = add_dispatch(&all);
  int64_t distinct = all.n;
  for (int64_t i = 0; t.rank == 0 && i < all.n; i++)
    added += all.v[i].expanded;
  if (err == TASO_OK && s.depth > 0)
    taso_tool_print(&t,
                    "taso-measure: --expand: %lld rewritten graphs added %lld of the %lld "
                    "configurations\n",
                    (long long)graphs, (long long)added, (long long)distinct);
  /* What the database holds measured for this device already is reused. */
  if (err == TASO_OK && t.rank == 0) {
    err = taso_costdb_read(db_path, true, &r.known);
    if (err != TASO_OK && t.fresh) err = TASO_OK; /* a file cut short that --fresh replaces */
    int64_t m = 0;
    for (int64_t i = 0; err == TASO_OK && i < all.n; i++)
      if (t.fresh || !has_cost(&r.known, identity, all.v[i].key)) all.v[m++] = all.v[i];
    all.n = m;
    if (all.n) qsort(all.v, (size_t)all.n, sizeof *all.v, longest_first);
  }
  err = taso_tool_agree(&t, err);
  MPI_Bcast(&distinct, 1, MPI_INT64_T, 0, t.comm);
  if (err == TASO_OK) broadcast_items(&t, &all);
  if (err == TASO_OK && all.n == 0)
    taso_tool_print(&t,
                    "taso-measure: all %lld configurations are in %s for this device already; "
                    "nothing to measure\n",
                    (long long)distinct, db_path);
  if (err == TASO_OK && all.n > 0)
    taso_tool_print(&t, "taso-measure: %lld configurations, %lld to measure (longest first)\n",
                    (long long)distinct, (long long)all.n);
  const char *stop = getenv("TASO_MEASURE_STOP_AFTER"); /* test hook: a crash */
  if (stop && *stop) r.stop_after = atoll(stop);
  taso_tool_provenance(&t, &r.prov);
  double start = taso_wall_seconds();
  if (err == TASO_OK && all.n > 0) err = measure_all(&r);
  int64_t totals[3] = {0};
  if (err == TASO_OK && all.n > 0) report_devices(&r, taso_wall_seconds() - start, totals);
  if (err == TASO_OK)
    taso_tool_summary(
        &t, "%lld configurations: %lld measured, %lld reused, %lld unavailable -> %s%s",
        (long long)distinct, (long long)totals[0], (long long)(distinct - totals[0] - totals[1]),
        (long long)totals[1], db_path, s.depth ? expansion_note(added, graphs) : "");
  if (err == TASO_OK && (estimate || calibrate))
    err = taso_tool_agree(&t, t.rank == 0 ? print_estimates(&s, &p, calibrate) : TASO_OK);
  close_place(&s, &p);
  taso_costdb_free(&r.known);
  free(r.batch);
  items_free(&all);
  if (s.depth > 0) taso_rules_free(&s.rules);
  taso_tool_guard_close(s.ax, s.guard);
  taso_library_free(s.lib);
  return taso_tool_finish(&t, err);
}
