/*
 * taso-measure: times every operator configuration of the given models on
 * a device and keeps the figures in the shared cost database (costdb.h),
 * which the optimizer reads. The work is src/measure's (measure.h: the
 * devices, the configurations, the scheduling over ranks and the batched
 * merges; calibrate.h: --estimate and --calibrate); this is its options,
 * its job's [measure] settings, the rules of --expand and its summary.
 */
#define _POSIX_C_SOURCE 200809L /* strtok_r */

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "calibrate.h"
#include "derive_guard.h"
#include "measure.h"
#include "tool.h"

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

/* The harness keeps one value per option; --model may repeat, so argv is
 * read for every one before the harness parses it. */
static void scan_models(int argc, char **argv, taso_measure_opts_t *s) {
  for (int i = 1; i < argc && s->nmodels < TASO_MEASURE_MAX_MODELS; i++) {
    if (strcmp(argv[i], "--model") == 0 && i + 1 < argc)
      s->models[s->nmodels++] = argv[++i];
    else if (strncmp(argv[i], "--model=", 8) == 0)
      s->models[s->nmodels++] = argv[i] + 8;
  }
}

/* The job's blank-separated list, when no --model was given. The strings
 * live in the job, which outlives the run. */
static void job_models(taso_job_t *job, taso_measure_opts_t *s) {
  for (char *save = NULL, *m = strtok_r(job->measure_models, " \t", &save);
       m && s->nmodels < TASO_MEASURE_MAX_MODELS; m = strtok_r(NULL, " \t", &save))
    s->models[s->nmodels++] = m;
}

static void settings_of_job(taso_tool_t *t, taso_measure_opts_t *s) {
  taso_job_t *job = &t->job;
  if (s->nmodels == 0) job_models(job, s);
  if (s->nmodels == 0 && calibrate) { /* the table covers every built-in model */
    static char builtin[TASO_MEASURE_MAX_MODELS][64];
    int n = taso_model_builtin_list(builtin, TASO_MEASURE_MAX_MODELS);
    for (int i = 0; i < n && i < TASO_MEASURE_MAX_MODELS; i++)
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

/* The summary's note on --expand (rank 0's figures). */
static const char *expansion_note(int64_t added, int64_t graphs) {
  static char note[128];
  snprintf(note, sizeof note, "; --expand added %lld configurations from %lld rewritten graphs",
           (long long)added, (long long)graphs);
  return note;
}

int main(int argc, char **argv) {
  taso_measure_opts_t s = {.name = "taso-measure", .stop_after = -1};
  scan_models(argc, argv, &s);
  taso_tool_t t;
  taso_tool_init(&t, &spec, &argc, &argv);
  if (!(s.be = taso_backend_find(backend_name)))
    taso_tool_usage_error(&t, "--backend: no backend '%s' in this build (reference, cpu%s)",
                          backend_name, taso_backend_built("gpu") ? ", gpu" : "");
  s.db_path = db_path;
  s.fresh = t.fresh;
  s.calibrate_steps = calibrate_steps;
  taso_place_t p = {.dev.nunits = 0};
  taso_measure_items_t all = {0};
  taso_costdb_t known = {0};
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
    taso_tool_file_t files[TASO_MEASURE_MAX_MODELS + 4] = {
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
  TASO_TOOL_STEP(&t, err, taso_place_rank(t.comm, &s, &p));
  if (err == TASO_OK && no_device_lock) taso_place_unlock(&p);
  TASO_TOOL_STEP(&t, err, taso_place_open(&s, &p));
  char identity[TASO_COST_DEVICE_LEN];
  snprintf(identity, sizeof identity, "%s", p.dev.identity);
  MPI_Bcast(identity, sizeof identity, MPI_CHAR, 0, t.comm);
  if (err == TASO_OK)
    taso_tool_print(&t, "taso-measure: device %s; %d device%s of %d core%s on rank 0's node\n",
                    identity, p.ndevices, p.ndevices == 1 ? "" : "s", p.dev.nunits,
                    p.dev.nunits == 1 ? "" : "s");
  TASO_TOOL_STEP(&t, err, taso_measure_collect(t.comm, &s, &p, &all, &graphs));
  for (int64_t i = 0; t.rank == 0 && i < all.n; i++)
    added += all.v[i].expanded;
  if (err == TASO_OK && s.depth > 0)
    taso_tool_print(&t,
                    "taso-measure: --expand: %lld rewritten graphs added %lld of the %lld "
                    "configurations\n",
                    (long long)graphs, (long long)added, (long long)all.n + 1);
  /* What the database holds measured for this device already is reused. */
  int64_t distinct = 0;
  if (err == TASO_OK && t.rank == 0) err = taso_measure_todo(&s, identity, &all, &known, &distinct);
  err = taso_tool_agree(&t, err);
  MPI_Bcast(&distinct, 1, MPI_INT64_T, 0, t.comm);
  if (err == TASO_OK) taso_measure_items_share(t.comm, &all);
  if (err == TASO_OK && all.n == 0)
    taso_tool_print(&t,
                    "taso-measure: all %lld configurations are in %s for this device already; "
                    "nothing to measure\n",
                    (long long)distinct, db_path);
  if (err == TASO_OK && all.n > 0)
    taso_tool_print(&t, "taso-measure: %lld configurations, %lld to measure (longest first)\n",
                    (long long)distinct, (long long)all.n);
  const char *stop = getenv("TASO_MEASURE_STOP_AFTER"); /* test hook: a crash */
  if (stop && *stop) s.stop_after = atoll(stop);
  taso_tool_provenance(&t, &s.prov);
  int64_t totals[3] = {0};
  if (err == TASO_OK && all.n > 0) err = taso_measure_run(t.comm, &s, &p, &all, &known, totals);
  if (err == TASO_OK)
    taso_tool_summary(
        &t, "%lld configurations: %lld measured, %lld reused, %lld unavailable -> %s%s",
        (long long)distinct, (long long)totals[0], (long long)(distinct - totals[0] - totals[1]),
        (long long)totals[1], db_path, s.depth ? expansion_note(added, graphs) : "");
  if (err == TASO_OK && (estimate || calibrate))
    err = taso_tool_agree(&t, t.rank == 0 ? taso_calibrate(&s, &p, calibrate) : TASO_OK);
  taso_place_close(&s, &p);
  taso_costdb_free(&known);
  taso_measure_items_free(&all);
  if (s.depth > 0) taso_rules_free(&s.rules);
  taso_guard_close(s.ax, s.guard);
  taso_library_free(s.lib);
  return taso_tool_finish(&t, err);
}
