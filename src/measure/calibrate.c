/*
 * The cost model against the run (calibrate.h).
 */
#include "calibrate.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cost.h"

#define ALONG_RUNS 10 /* runs of each step timed alongside */

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
 * steps, keys and warm or cold weights: src/cost/cost.c), never measured
 * here; *missing: configurations without a row. */
static taso_err_t model_cost(const taso_measure_opts_t *s, const taso_place_t *p,
                             const taso_costdb_t *db, const taso_model_t *m, bool fastest,
                             double *ms, int *nsteps, int *missing) {
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
static taso_err_t print_steps(const taso_measure_opts_t *s, const taso_place_t *p,
                              const taso_costdb_t *db, taso_rt_plan_t *plan,
                              const float *const *in) {
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
static taso_err_t calibrate_load(const char *model, const taso_measure_opts_t *s,
                                 const taso_place_t *p, const taso_costdb_t *db, bool table,
                                 calibrated_t *c) {
  memset(c, 0, sizeof *c);
  taso_err_t err = taso_model_load(model, &c->m);
  /* as a written model runs: taso-optimize costs weight-only nodes as folded */
  if (err == TASO_OK && table) err = taso_model_fold_weights(&c->m);
  if (err == TASO_OK) err = model_cost(s, p, db, &c->m, false, &c->cost, &c->nsteps, &c->missing);
  if (err == TASO_OK && !table)
    printf("%s: estimate %s: %.3f ms, the sum of %d steps' medians (%d without a "
           "figure)\n",
           s->name, model, c->cost, c->nsteps, c->missing);
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
static taso_err_t time_alongside(const taso_measure_opts_t *s, const taso_place_t *p,
                                 const taso_costdb_t *db, calibrated_t *c, int runs) {
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
static void sum_alongside(const taso_place_t *p, const taso_costdb_t *db, calibrated_t *c) {
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
static taso_err_t time_rounds(const taso_measure_opts_t *s, const taso_place_t *p,
                              const taso_costdb_t *db, calibrated_t *c, int n) {
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

taso_err_t taso_calibrate(const taso_measure_opts_t *s, taso_place_t *p, bool table) {
  taso_costdb_t db;
  TASO_TRY(taso_costdb_read(s->db_path, false, &db));
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
    printf("%s: calibration on %s (%s): the cost model (the sum of the planned steps'\n"
           "  medians in %s, as taso-optimize costs a graph) against end to end (median of %d\n"
           "  runs after 3 warm-up, as taso-run times them, in rounds over the models); then\n"
           "  the steps' fastest runs against the fastest end-to-end run, which load on a\n"
           "  shared machine inflates less; then the steps timed alone as taso-measure does,\n"
           "  between the end-to-end runs (medians of %d runs each), against the same median:\n"
           "  the method's error without the machine's drift since the database was filled\n",
           s->name, p->dev.identity, info, s->db_path, s->calibrate_runs, ALONG_RUNS);
    printf("  per step, the runner's own cost: %.4f ms (the dispatch row; included)\n",
           taso_costdb_dispatch(&db, p->dev.identity));
    if (taken) printf("  library calls taken from the database: %d\n", taken);
  }
  /* end-to-end runs are measurements: they hold a device as those do */
  taso_device_t *held = NULL;
  if (table && err == TASO_OK && p->owns) err = taso_place_hold(p, &held);
  if (table && err == TASO_OK) err = time_rounds(s, p, &db, c, n);
  if (table && err == TASO_OK) {
    printf("%-24s %5s %9s %9s %7s %9s %9s %7s %9s %7s\n", "model", "steps", "cost ms", "e2e ms",
           "ratio", "fast ms", "e2e min", "ratio", "along ms", "ratio");
    for (int i = 0; i < n; i++)
      print_row(s->models[i], &c[i]);
    fflush(stdout);
  }
  for (int i = 0; i < n && err == TASO_OK && table && s->calibrate_steps; i++) {
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
