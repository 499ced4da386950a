/*
 * taso-validate: the third stage. Checks the axioms themselves
 * (semantics.md section 5): which ones the others entail (redundancy, Z3
 * with an unsat core minimized by deletion), and whether each one holds on
 * every small tensor of its domain (the symbolic check of src/verify/
 * validate.h: canonical polynomials first, Z3 over the reals for the rest).
 *
 * Both phases hand out work dynamically: a counter on rank 0 (an MPI window
 * advanced with MPI_Fetch_and_op) gives each rank its next chunk, and the
 * rank's OpenMP threads share it, one Z3 context per thread. Check rows
 * stream into /stream of OUT.resume in rounds (a rank that has worked a few
 * seconds enters a non-blocking barrier and works on until all have
 * entered, then all write and flush), so a killed run started again with
 * the same --out decides only what is missing. /stream is a slot table
 * (artifact.h): row i at slot i, counted once marked, so a kill at any
 * moment leaves it readable. At the end each rank copies its block of
 * slots to /checks of OUT.tmp, which is then renamed over --out (tool.h),
 * so the file does not depend on the rank count.
 */
#define _POSIX_C_SOURCE 200809L

#include <limits.h>
#include <signal.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <omp.h>

#include "checks.h"
#include "hash.h"
#include "redundancy.h"
#include "tool.h"
#include "validate.h"
#include "verifier.h"

static bool z3_only, no_redundancy;
static const char *opt_sizes, *opt_timeout, *opt_axioms, *opt_add, *opt_only, *opt_goals,
    *opt_red_timeout, *opt_red_rlimit;

static const taso_tool_flag_t flags[] = {
    {"z3-only", "decide every combination with Z3 alone (cross-checks the polynomial path)",
     &z3_only},
    {"no-redundancy", "skip the redundancy check", &no_redundancy},
    {0},
};

static const taso_tool_option_t options[] = {
    {"sizes", "LIST", "tensor sizes N, e.g. 1,2 (default: the job's, else 1,2,3,4)", &opt_sizes},
    {"timeout", "S", "Z3 timeout per combination, seconds (default: the job's, else 10)",
     &opt_timeout},
    {"redundancy-timeout", "S",
     "wall-clock safety net per redundancy query, seconds (default: the job's, else 10)",
     &opt_red_timeout},
    {"redundancy-rlimit", "N",
     "Z3 resource limit per redundancy query, the budget (default: the job's, else "
     "3000000)",
     &opt_red_rlimit},
    {"axioms", "PATH", "axiom folder or file (default: the job's, else data/axioms)", &opt_axioms},
    {"add", "FILES", "more axiom files, comma-separated (known-bad fixtures)", &opt_add},
    {"only", "NAMES", "check only these axioms, comma-separated", &opt_only},
    {"redundancy", "NAMES", "redundancy check only for these axioms, comma-separated", &opt_goals},
    {0},
};

static const taso_tool_spec_t spec = {
    .name = "taso-validate",
    .about = "Checks the axioms themselves. Redundancy: for each axiom, whether the other\n"
             "axioms entail it (Z3, a minimal entailing set from the unsat core). Symbolic\n"
             "check: every combination of sizes and parameters of each axiom's domain\n"
             "(the @ keys of data/axioms) is built with the operator registry and decided\n"
             "for all real values of the tensor elements: proved, counterexample (with\n"
             "values), skipped (shapes invalid for the operators, or outside the domain's\n"
             "constraints) or unknown. Canonical polynomials decide most cases exactly;\n"
             "Z3 over the reals decides the rest; every row names its path.\n"
             "\n"
             "Rows stream into OUT.resume while the run goes on; a run that was stopped\n"
             "resumes from it when started again with the same plan (see --fresh). At the\n"
             "end --out is written beside (OUT.tmp) and renamed into place: /checks in\n"
             "index order, per-axiom counts in /axioms, redundancy in /redundancy, totals\n"
             "in root attributes. --out is never replaced if it holds another plan's\n"
             "results, another kind of file or the job file, unless --fresh is given.\n",
    .job_help = "job file: axioms, tensor sizes and the timeout per case (optional)",
    .out_help = "validation artifact to write",
    .default_out = "validation.h5",
    .out_kind = TASO_KIND_VALIDATION,
    .fresh_help =
        "check everything again, replacing another plan's --out (never another kind of file)",
    .threads = true,
    .flags = flags,
    .options = options,
};

/* ------------------------------------------------------------------------ */
/* Records                                                                  */
/* ------------------------------------------------------------------------ */

#define F(type, field, kind, size)                                                                 \
  { #field, offsetof(type, field), kind, size }
/* One redundancy verdict per row (redundancy.h). */
static const taso_field_t red_fields[] = {
    F(taso_red_t, seconds, TASO_FIELD_DOUBLE, 0),
    F(taso_red_t, verdict, TASO_FIELD_INT32, 0),
    F(taso_red_t, goal, TASO_FIELD_INT32, 0),
    F(taso_red_t, name, TASO_FIELD_STRING, TASO_AXIOM_NAME_LEN),
    F(taso_red_t, core, TASO_FIELD_STRING, 208),
    F(taso_red_t, why, TASO_FIELD_STRING, 128),
    F(taso_red_t, model, TASO_FIELD_STRING, 128),
};
_Static_assert(sizeof(taso_red_t) == 8 + 4 + 4 + TASO_AXIOM_NAME_LEN + 208 + 128 + 128,
               "taso_red_t has padding");
static const taso_table_t red_table = {"/redundancy", sizeof(taso_red_t), red_fields, 7};
/* The collapse queries, one row per family (goal -1 - family; name
 * "(all)" or the function's): verdict 1 collapses (core), -1 a model with
 * two different tensors, 0 undecided. */
static const taso_table_t collapse_table = {"/collapse", sizeof(taso_red_t), red_fields, 7};

#undef F

/* ------------------------------------------------------------------------ */
/* Set-up                                                                   */
/* ------------------------------------------------------------------------ */

static bool exists(const char *path) {
  struct stat st;
  return stat(path, &st) == 0;
}

/* The axioms: --axioms, else the job's (relative to the job's folder or
 * the one above), else data/axioms here or next to the build. */
static void axiom_path(const taso_tool_t *t, char *path, size_t len) {
  if (opt_axioms) {
    snprintf(path, len, "%s", opt_axioms);
    return;
  }
  if (t->have_job) {
    taso_tool_job_relative(t, t->job.axioms, path, len);
    return;
  }
  snprintf(path, len, "data/axioms");
  if (exists(path)) return;
  char exe[512];
  ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
  if (n > 0) {
    exe[n] = '\0';
    char *slash = strrchr(exe, '/');
    if (slash) *slash = '\0';
    snprintf(path, len, "%.500s/../../data/axioms", exe);
    if (exists(path)) return;
  }
  snprintf(path, len, "data/axioms");
}

static taso_err_t parse_seconds(const char *opt, const char *text, double *out) {
  char *end;
  double v = strtod(text, &end);
  if (end == text || *end || !(v > 0) || v > 1e6)
    return taso_error(TASO_ERR_ARG, "--%s: expected seconds > 0, got '%s'", opt, text);
  *out = v;
  return TASO_OK;
}

static taso_err_t parse_count(const char *opt, const char *text, unsigned *out) {
  char *end;
  unsigned long v = strtoul(text, &end, 10);
  if (end == text || *end || text[0] == '-' || v > 2000000000ul)
    return taso_error(TASO_ERR_ARG, "--%s: expected a count from 0 to 2000000000, got '%s'", opt,
                      text);
  *out = (unsigned)v;
  return TASO_OK;
}

/* Identifies the plan, so that a resumed run continues only the same one:
 * everything that can change a row (as taso-verify's resume key does). */
static uint64_t plan_digest(const taso_axioms_t *ax, const taso_plan_t *p, const int32_t *sizes,
                            int nsizes, double timeout, const taso_limits_t *red) {
  int64_t total = taso_plan_total(p);
  /* The redundancy check reads every axiom loaded; the checks, the
   * planned ones (their names, texts and domains are in the digest). */
  uint64_t h = taso_axioms_digest(ax);
  h = taso_fnv64(h, &total, sizeof total);
  h = taso_fnv64(h, sizes, sizeof *sizes * (size_t)nsizes);
  h = taso_fnv64(h, &z3_only, sizeof z3_only);
  h = taso_fnv64(h, &timeout, sizeof timeout);
  h = taso_fnv64(h, &red->rlimit, sizeof red->rlimit);
  h = taso_fnv64(h, &red->memory_mb, sizeof red->memory_mb);
  for (int i = 0; i < taso_plan_naxioms(p); i++) {
    const char *name = taso_plan_name(p, i);
    h = taso_fnv64(h, name, strlen(name) + 1);
  }
  return h & 0x7fffffffffffffffull;
}

/* ------------------------------------------------------------------------ */
/* Redundancy                                                               */
/* ------------------------------------------------------------------------ */

/* One line on the collapse queries: how many families have a model with
 * two different tensors, collapse, are undecided or too small to ask. */
static void print_families(taso_tool_t *t, const taso_red_t *fams, int nfams, double seconds) {
  int n[4] = {0};
  for (int i = 0; i < nfams; i++)
    n[fams[i].verdict == 1               ? 0
      : fams[i].verdict == -1            ? 1
      : strstr(fams[i].why, "not asked") ? 3
                                         : 2]++;
  taso_tool_print(t,
                  "taso-validate: collapse: %d families: %d collapse, %d have a model with two "
                  "different tensors, %d undecided, %d too small to ask\n",
                  nfams, n[0], n[1], n[2], n[3]);
  for (int i = 0; i < nfams; i++)
    if (fams[i].verdict == 0 && !strstr(fams[i].why, "not asked"))
      taso_tool_print(t, "taso-validate: collapse of family %s undecided: %s\n", fams[i].name,
                      fams[i].why);
  taso_tool_print(t, "taso-validate: redundancy phase: %.1f s\n", seconds);
}

/* ------------------------------------------------------------------------ */
/* Symbolic checks                                                          */
/* ------------------------------------------------------------------------ */

/* ------------------------------------------------------------------------ */
/* Output and resume file                                                   */
/* ------------------------------------------------------------------------ */

/* Collective. The plan digest of a validation artifact, -1 without one. */
static int64_t digest_of(taso_tool_t *t, taso_artifact_t *a) {
  int64_t d = -1;
  if (taso_artifact_get_count(a, "plan_digest", &d) != TASO_OK) d = -1;
  MPI_Bcast(&d, 1, MPI_INT64_T, 0, t->comm);
  return d;
}

/* Collective. A complete --out of this plan is the result: *out is it,
 * open to read. One of another plan is another plan's results. One of
 * this plan that is not complete (an older taso streamed into --out) is
 * replaced at the end. */
static taso_err_t check_output(taso_tool_t *t, uint64_t dig, taso_artifact_t **out) {
  int have = t->rank == 0 && !t->fresh && exists(t->out_path);
  MPI_Bcast(&have, 1, MPI_INT, 0, t->comm);
  if (!have) return TASO_OK;
  taso_artifact_t *a = NULL;
  int64_t c = 0, n = 0;
  taso_err_t err =
      taso_tool_agree(t, taso_artifact_open(t->comm, t->out_path, TASO_KIND_VALIDATION, &a));
  if (err != TASO_OK) return err;
  if (digest_of(t, a) != (int64_t)dig) {
    if (taso_artifact_get_count(a, "combinations", &n) != TASO_OK) n = 0;
    err = taso_tool_refuse(t, t->out_path, "the validation of another plan (%lld combinations)",
                           (long long)n);
    return taso_tool_close(t, &a, taso_tool_agree(t, err));
  }
  if (taso_artifact_get_count(a, "complete", &c) != TASO_OK) c = 0;
  MPI_Bcast(&c, 1, MPI_INT64_T, 0, t->comm);
  if (c == 1) {
    *out = a;
    return TASO_OK;
  }
  return taso_tool_close(t, &a, TASO_OK);
}

/* Collective. A fresh OUT.resume for this plan. */
static taso_err_t create_stream(taso_tool_t *t, uint64_t dig, int64_t total,
                                taso_artifact_t **out) {
  taso_provenance_t prov;
  taso_err_t err = TASO_OK;
  taso_tool_provenance(t, &prov);
  TASO_TOOL_STEP(t, err,
                 taso_artifact_create(t->comm, t->resume_path, TASO_KIND_VALIDATION, &prov, out));
  TASO_TOOL_STEP(t, err, taso_artifact_set_count(*out, "plan_digest", (int64_t)dig));
  TASO_TOOL_STEP(t, err, taso_artifact_set_count(*out, "complete", 0));
  TASO_TOOL_STEP(t, err, taso_artifact_set_count(*out, "redundancy_done", 0));
  TASO_TOOL_STEP(t, err, taso_artifact_create_slots(*out, &taso_check_stream_table, total));
  return err;
}

/* Collective. Opens OUT.resume to go on with it when it holds rows of
 * this plan (marked in done[]; *have_red when its redundancy phase is
 * done), or creates it. One of another plan is not thrown away without
 * --fresh; one that cannot be read at all is started afresh. */
static taso_err_t open_stream(taso_tool_t *t, const taso_plan_t *plan, uint64_t dig,
                              unsigned char *done, int64_t total, int64_t *ndone, bool *have_red,
                              bool *reopened, taso_artifact_t **out) {
  int have = t->rank == 0 && !t->fresh && exists(t->resume_path);
  MPI_Bcast(&have, 1, MPI_INT, 0, t->comm);
  *ndone = 0;
  *have_red = false;
  *reopened = false;
  if (!have) return create_stream(t, dig, total, out);
  taso_err_t err =
      taso_tool_agree(t, taso_artifact_open_rw(t->comm, t->resume_path, TASO_KIND_VALIDATION, out));
  if (err == TASO_OK && digest_of(t, *out) != (int64_t)dig) {
    err = taso_tool_agree(t, taso_tool_refuse(t, t->resume_path, "the rows of another plan"));
    return taso_tool_close(t, out, err);
  }
  if (err == TASO_OK) {
    int64_t r = 0;
    if (taso_artifact_get_count(*out, "redundancy_done", &r) != TASO_OK) r = 0;
    MPI_Bcast(&r, 1, MPI_INT64_T, 0, t->comm);
    *have_red = r == 1;
    int64_t lo, hi;
    taso_tool_block(t, total, &lo, &hi);
    err =
        taso_tool_agree(t, taso_checks_read_done(t->comm, *out, plan, lo, hi, done, total, ndone));
  }
  *reopened = err == TASO_OK;
  if (err == TASO_OK) return TASO_OK;
  taso_tool_warn(t, "%s cannot be resumed (%s): starting afresh", t->resume_path,
                 taso_error_detail());
  err = taso_tool_close(t, out, TASO_OK);
  memset(done, 0, (size_t)total);
  *ndone = 0;
  *have_red = false;
  if (err == TASO_OK) err = create_stream(t, dig, total, out);
  return err;
}

/* ------------------------------------------------------------------------ */
/* main                                                                     */
/* ------------------------------------------------------------------------ */

int main(int argc, char **argv) {
  taso_tool_t t;
  taso_tool_init(&t, &spec, &argc, &argv);

  taso_artifact_t *out = NULL, *final = NULL;
  taso_axioms_t *ax = NULL;
  taso_plan_t *plan = NULL;
  taso_checker_t **checkers = NULL;
  unsigned char *done = NULL;
  taso_red_t *reds = NULL;
  int nreds = 0, nthreads = omp_get_max_threads();
  taso_tally_t *tally = NULL;
  taso_check_t *shown = NULL;
  int nshown = 0;
  int32_t sizes[TASO_MAX_SIZES] = {1, 2, 3, 4};
  int nsizes = 4;
  double timeout = 10.0;
  taso_limits_t red_lim = {.timeout_s = 10.0,
                           .rlimit = TASO_DEFAULT_REDUNDANCY_RLIMIT,
                           .memory_mb = TASO_DEFAULT_MEMORY_MB};
  int64_t total = 0, ndone = 0, mine_rows = 0;
  double mine_cpu = 0;
  bool complete = false, have_red = false, reopened = false;
  taso_err_t err = TASO_OK;

  /* Options first: a bad value is a usage error, before any file is read. */
  if (opt_sizes && taso_parse_sizes(opt_sizes, sizes, &nsizes) != TASO_OK)
    taso_tool_usage_error(&t, "--sizes: %s", taso_error_detail());
  if (opt_timeout && parse_seconds("timeout", opt_timeout, &timeout) != TASO_OK)
    taso_tool_usage_error(&t, "%s", taso_error_detail());
  if (opt_red_timeout &&
      parse_seconds("redundancy-timeout", opt_red_timeout, &red_lim.timeout_s) != TASO_OK)
    taso_tool_usage_error(&t, "%s", taso_error_detail());
  if (opt_red_rlimit &&
      parse_count("redundancy-rlimit", opt_red_rlimit, &red_lim.rlimit) != TASO_OK)
    taso_tool_usage_error(&t, "%s", taso_error_detail());
  if (t.job_path) {
    err = taso_tool_load_job(&t, t.job_path);
    if (err == TASO_OK && !opt_sizes) {
      nsizes = t.job.nsizes;
      memcpy(sizes, t.job.sizes, sizeof *sizes * (size_t)nsizes);
    }
    if (err == TASO_OK && !opt_timeout) timeout = t.job.validate_timeout;
    if (err == TASO_OK && !opt_red_timeout) red_lim.timeout_s = t.job.redundancy_timeout;
    if (err == TASO_OK && !opt_red_rlimit) red_lim.rlimit = (unsigned)t.job.redundancy_rlimit;
    if (err == TASO_OK) red_lim.memory_mb = (unsigned)t.job.validate_memory_mb;
    if (err == TASO_OK && !t.job.redundancy) no_redundancy = true; /* redundancy = off */
    /* What the job file leaves to defaults, unless an option set it. The
     * verifier's own settings do not apply here. */
    const char *validate_opts[] = {opt_sizes ? "sizes" : "", opt_timeout ? "timeout" : "",
                                   opt_red_timeout ? "redundancy_timeout" : "",
                                   opt_red_rlimit ? "redundancy_rlimit" : "", NULL};
    const char *verify_opts[] = {"timeout", "rlimit", "memory_mb", opt_axioms ? "axioms" : "",
                                 NULL};
    taso_tool_note_defaults(&t, "validate", validate_opts);
    taso_tool_note_defaults(&t, "verify", verify_opts);
  }

  /* Every check of --out before the work starts. */
  TASO_TOOL_STEP(&t, err, taso_tool_claim_output(&t));

  char path[1024];
  axiom_path(&t, path, sizeof path);
  TASO_TOOL_STEP(&t, err, taso_axioms_load(path, &ax));
  if (opt_add) {
    char *list = strdup(opt_add);
    if (!list) taso_fatal(__FILE__, __LINE__, "taso", "no memory");
    for (char *s = NULL, *f = strtok_r(list, ",", &s); f && err == TASO_OK;
         f = strtok_r(NULL, ",", &s))
      TASO_TOOL_STEP(&t, err, taso_axioms_add_file(ax, f));
    free(list);
  }
  TASO_TOOL_STEP(&t, err, taso_plan_new(ax, sizes, nsizes, opt_only, &plan));
  if (err == TASO_OK && taso_plan_naxioms(plan) == 0)
    err = taso_tool_agree(&t, taso_error(TASO_ERR_ARG, "no axiom to check (see --only)"));
  if (err == TASO_OK) {
    total = taso_plan_total(plan);
    if (!(checkers = calloc((size_t)nthreads, sizeof *checkers)) ||
        !(done = calloc((size_t)total + 1, 1)) ||
        !(tally = calloc((size_t)taso_plan_naxioms(plan) + 1, sizeof *tally)))
      err = taso_error(TASO_ERR_NOMEM, "no memory for %lld combinations", (long long)total);
    for (int i = 0; i < nthreads && err == TASO_OK; i++)
      err = taso_checker_new(plan, timeout, z3_only, &checkers[i]);
    err = taso_tool_agree(&t, err);
  }
  if (err == TASO_OK) {
    char list[64];
    int used = 0;
    for (int i = 0; i < nsizes; i++)
      used += snprintf(list + used, sizeof list - (size_t)used, "%s%d", i ? "," : "", sizes[i]);
    taso_tool_print(&t, "taso-validate: %d axioms from %s, sizes {%s}: %lld combinations\n",
                    taso_plan_naxioms(plan), path, list, (long long)total);
  }

  /* A complete --out of this plan: nothing to do. Else rows stream into
   * OUT.resume, resumed when it holds rows of this very plan. */
  uint64_t dig = err == TASO_OK ? plan_digest(ax, plan, sizes, nsizes, timeout, &red_lim) : 0;
  if (err == TASO_OK) err = check_output(&t, dig, &out);
  complete = out != NULL;
  if (err == TASO_OK && !complete)
    err = open_stream(&t, plan, dig, done, total, &ndone, &have_red, &reopened, &out);
  if (err == TASO_OK && (complete || ndone > 0))
    taso_tool_print(&t, "taso-validate: resuming %s: %lld of %lld combinations already checked%s\n",
                    complete ? t.out_path : t.resume_path, (long long)(complete ? total : ndone),
                    (long long)total, complete ? " (the file is complete; nothing to do)" : "");

  /* Redundancy: kept in OUT.resume once the phase is over, not query by
   * query, so a run stopped during it does it again, and says so. */
  if (err == TASO_OK && reopened && !have_red && !no_redundancy)
    taso_tool_print(&t,
                    "taso-validate: %s: the redundancy phase did not finish before the run "
                    "stopped: it runs again from its start (it is kept once whole)\n",
                    t.resume_path);
  bool ran_red = have_red || (!complete && !no_redundancy);
  int64_t red_count[3] = {0}; /* entailed, independent, undecided */
  taso_red_t *fams = NULL;
  int nfams = 0;
  if (err == TASO_OK && !complete && !have_red && !no_redundancy) {
    char collapse[256];
    double r0 = MPI_Wtime();
    err = taso_redundancy(t.comm, ax, &red_lim, opt_goals, &reds, &nreds, &fams, &nfams, collapse,
                          sizeof collapse);
    if (err == TASO_OK && collapse[0])
      taso_tool_print(&t,
                      "taso-validate: the axioms %s make any two tensors equal: the set is "
                      "wrong, and entails every other axiom\n",
                      collapse);
    if (err == TASO_OK) print_families(&t, fams, nfams, MPI_Wtime() - r0);
    TASO_TOOL_STEP(&t, err, taso_artifact_remove(out, red_table.path));
    TASO_TOOL_STEP(
        &t, err,
        taso_artifact_write_table(out, &red_table, reds, t.rank == 0 ? nreds : 0, 0, nreds));
    TASO_TOOL_STEP(&t, err, taso_artifact_remove(out, collapse_table.path));
    TASO_TOOL_STEP(
        &t, err,
        taso_artifact_write_table(out, &collapse_table, fams, t.rank == 0 ? nfams : 0, 0, nfams));
    TASO_TOOL_STEP(&t, err, taso_artifact_set_count(out, "redundancy_done", 1));
  } else if (err == TASO_OK && (complete || have_red)) {
    int64_t n = 0;
    TASO_TOOL_STEP(&t, err, taso_artifact_table_length(out, &red_table, &n));
    if (n > 0)
      TASO_TOOL_STEP(&t, err, taso_artifact_read_table(out, &red_table, 0, n, (void **)&reds));
    nreds = (int)n;
    n = 0;
    TASO_TOOL_STEP(&t, err, taso_artifact_table_length(out, &collapse_table, &n));
    if (n > 0)
      TASO_TOOL_STEP(&t, err, taso_artifact_read_table(out, &collapse_table, 0, n, (void **)&fams));
    nfams = (int)n;
  }
  for (int i = 0; i < nreds; i++) {
    red_count[reds[i].verdict == 1 ? 0 : reds[i].verdict == -1 ? 1 : 2]++;
    if (reds[i].verdict == 1)
      taso_tool_print(&t, "taso-validate: %s is entailed by %s (%.1f s)\n", reds[i].name,
                      reds[i].core, reds[i].seconds);
    else if (reds[i].verdict == 0)
      taso_tool_print(&t, "taso-validate: %s is undecided: %s\n", reds[i].name, reds[i].why);
  }
  if (err == TASO_OK && nreds)
    taso_tool_print(&t,
                    "taso-validate: redundancy: %lld entailed, %lld independent, %lld undecided "
                    "(of %d axioms)\n",
                    (long long)red_count[0], (long long)red_count[1], (long long)red_count[2],
                    nreds);

  /* Symbolic checks. */
  double work_start = MPI_Wtime(), last_end = 0;
  if (err == TASO_OK && !complete) {
    MPI_Barrier(t.comm);
    work_start = MPI_Wtime();
    last_end = work_start;
    err = taso_checks_run(t.comm, spec.name, checkers, total, done, ndone, out, &mine_rows,
                          &mine_cpu, &last_end);
  }
  double work_wall = MPI_Wtime() - work_start;
  if (err == TASO_OK && !complete) {
    /* Per-rank work: rows and CPU seconds. */
    double cpu_max = mine_cpu, cpu_sum = mine_cpu;
    MPI_Allreduce(MPI_IN_PLACE, &cpu_max, 1, MPI_DOUBLE, MPI_MAX, t.comm);
    MPI_Allreduce(MPI_IN_PLACE, &cpu_sum, 1, MPI_DOUBLE, MPI_SUM, t.comm);
    double cpu_min = mine_cpu;
    MPI_Allreduce(MPI_IN_PLACE, &cpu_min, 1, MPI_DOUBLE, MPI_MIN, t.comm);
    int64_t rmax = mine_rows, rmin = mine_rows;
    MPI_Allreduce(MPI_IN_PLACE, &rmax, 1, MPI_INT64_T, MPI_MAX, t.comm);
    MPI_Allreduce(MPI_IN_PLACE, &rmin, 1, MPI_INT64_T, MPI_MIN, t.comm);
    double mean = cpu_sum / t.size, end_min = last_end - work_start, end_max = end_min;
    MPI_Allreduce(MPI_IN_PLACE, &end_min, 1, MPI_DOUBLE, MPI_MIN, t.comm);
    MPI_Allreduce(MPI_IN_PLACE, &end_max, 1, MPI_DOUBLE, MPI_MAX, t.comm);
    /* With dynamic scheduling the ranks should run out of work together,
     * whatever share of a core each one had (oversubscribed ranks). */
    taso_tool_print(&t,
                    "taso-validate: the ranks finished their last chunk between %.2f s and %.2f s "
                    "into the checks (spread %.1f%% of the latest)\n",
                    end_min, end_max, end_max > 0 ? 100.0 * (end_max - end_min) / end_max : 0.0);
    taso_tool_print(
        &t,
        "taso-validate: checks: %.2f s wall, %.2f CPU s of work in all; per rank min %.3f "
        "mean %.3f max %.3f (max/mean %.3f), rows min %lld max %lld\n",
        work_wall, cpu_sum, cpu_min, mean, cpu_max, mean > 0 ? cpu_max / mean : 1.0,
        (long long)rmin, (long long)rmax);
    /* The complete file is written beside --out, from the rows of
     * OUT.resume, and renamed into place at the end. */
    taso_provenance_t prov;
    taso_tool_provenance(&t, &prov);
    TASO_TOOL_STEP(&t, err,
                   taso_artifact_create(t.comm, t.tmp_path, TASO_KIND_VALIDATION, &prov, &final));
    int64_t lo, hi;
    taso_tool_block(&t, total, &lo, &hi);
    if (err == TASO_OK)
      err = taso_checks_finish(t.comm, t.resume_path, out, final, plan, lo, hi, tally, &shown,
                               &nshown);
    if (ran_red) {
      TASO_TOOL_STEP(
          &t, err,
          taso_artifact_write_table(final, &red_table, reds, t.rank == 0 ? nreds : 0, 0, nreds));
      TASO_TOOL_STEP(&t, err,
                     taso_artifact_write_table(final, &collapse_table, fams,
                                               t.rank == 0 ? nfams : 0, 0, nfams));
    }
    TASO_TOOL_STEP(&t, err,
                   taso_artifact_write_table(final, &taso_tally_table, tally,
                                             t.rank == 0 ? taso_plan_naxioms(plan) : 0, 0,
                                             taso_plan_naxioms(plan)));
  } else if (err == TASO_OK) {
    int64_t n = 0;
    taso_tally_t *read = NULL;
    TASO_TOOL_STEP(&t, err, taso_artifact_table_length(out, &taso_tally_table, &n));
    TASO_TOOL_STEP(&t, err, taso_artifact_read_table(out, &taso_tally_table, 0, n, (void **)&read));
    if (err == TASO_OK)
      memcpy(tally, read,
             sizeof *tally * (size_t)(n < taso_plan_naxioms(plan) ? n : taso_plan_naxioms(plan)));
    free(read);
  }
  int64_t sum[8] = {0};
  for (int a = 0; err == TASO_OK && a < taso_plan_naxioms(plan); a++) {
    sum[0] += tally[a].combinations;
    sum[1] += tally[a].proved;
    sum[2] += tally[a].counterexamples;
    sum[3] += tally[a].skipped;
    sum[4] += tally[a].unknown;
    sum[5] += tally[a].trees_differ;
    sum[6] += tally[a].by_poly;
    sum[7] += tally[a].by_z3;
  }
  if (err == TASO_OK && !complete) {
    static const char *names[] = {"combinations",    "proved",       "counterexamples",
                                  "skipped",         "unknown",      "trees_differ",
                                  "decided_by_poly", "decided_by_z3"};
    for (int k = 0; k < 8 && err == TASO_OK; k++)
      err = taso_artifact_set_count(final, names[k], sum[k]);
    TASO_TOOL_STEP(&t, err, taso_artifact_set_count(final, "redundant_axioms", red_count[0]));
    static const char *red_names[3] = {"redundancy_entailed", "redundancy_independent",
                                       "redundancy_undecided"};
    for (int k = 0; k < 3; k++)
      TASO_TOOL_STEP(&t, err, taso_artifact_set_count(final, red_names[k], red_count[k]));
    TASO_TOOL_STEP(&t, err, taso_artifact_set_count(final, "plan_digest", (int64_t)dig));
    TASO_TOOL_STEP(&t, err, taso_artifact_set_count(final, "redundancy_done", ran_red));
    TASO_TOOL_STEP(&t, err, taso_artifact_set_count(final, "complete", 1));
    /* OUT.resume stays until the complete file is in place. */
    err = taso_tool_close(&t, &final, err);
    err = taso_tool_close(&t, &out, err);
    TASO_TOOL_STEP(&t, err, taso_tool_commit_output(&t));
  }
  for (int i = 0; err == TASO_OK && i < nshown; i++)
    taso_tool_print(&t, "taso-validate: %s %s: %s [%s] [%s]: %s\n", shown[i].name,
                    taso_check_outcome_name(shown[i].outcome), taso_check_path_name(shown[i].path),
                    shown[i].params, shown[i].shapes, shown[i].detail);
  for (int a = 0; err == TASO_OK && a < taso_plan_naxioms(plan); a++)
    if (tally[a].trees_differ)
      taso_tool_print(&t,
                      "taso-validate: %s: equal values but different split trees in %lld of %lld "
                      "checked combinations\n",
                      tally[a].name, (long long)tally[a].trees_differ,
                      (long long)(tally[a].proved + tally[a].counterexamples + tally[a].unknown));
  err = taso_tool_close(&t, &final, err);
  err = taso_tool_close(&t, &out, err);
  if (err == TASO_OK)
    taso_tool_summary(&t,
                      "%lld combinations: %lld proved, %lld counterexamples, %lld skipped, "
                      "%lld unknown (poly %lld, z3 %lld); redundancy: %lld entailed, %lld "
                      "independent, %lld undecided -> %s",
                      (long long)sum[0], (long long)sum[1], (long long)sum[2], (long long)sum[3],
                      (long long)sum[4], (long long)sum[6], (long long)sum[7],
                      (long long)red_count[0], (long long)red_count[1], (long long)red_count[2],
                      t.out_path);
  /* A wrong axiom set fails the validation (exit 3), so that a job chain
   * stops: values that differ, or a family that makes all tensors equal. */
  int collapsed = 0;
  for (int i = 0; i < nfams; i++)
    collapsed += fams[i].verdict == 1;
  if (err == TASO_OK && (sum[2] > 0 || collapsed > 0))
    snprintf(t.findings, sizeof t.findings, "%lld counterexamples, %d collapsing families: %s",
             (long long)sum[2], collapsed,
             sum[2] > 0 ? "an axiom is wrong" : "the axiom set makes any two tensors equal");
  for (int i = 0; checkers && i < nthreads; i++)
    taso_checker_free(checkers[i]);
  free(checkers);
  free(done);
  free(reds);
  free(fams);
  free(tally);
  free(shown);
  taso_plan_free(plan);
  taso_axioms_free(ax);
  return taso_tool_finish(&t, err);
}
