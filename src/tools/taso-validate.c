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
/* The run                                                                  */
/* ------------------------------------------------------------------------ */

/* Everything one run holds, phase to phase. */
typedef struct {
  char path[1024]; /* the axioms */
  int32_t sizes[TASO_MAX_SIZES];
  int nsizes;
  double timeout;
  taso_limits_t red_lim;
  taso_axioms_t *ax;
  taso_plan_t *plan;
  int nthreads;
  taso_checker_t **checkers; /* one per thread */
  int64_t total, ndone;
  unsigned char *done; /* rows already in OUT.resume */
  uint64_t dig;
  taso_artifact_t *out;   /* the complete --out, or OUT.resume */
  taso_artifact_t *final; /* OUT.tmp */
  bool complete, have_red, reopened, ran_red;
  taso_red_t *reds, *fams;
  int nreds, nfams;
  int64_t red_count[3]; /* entailed, independent, undecided */
  taso_tally_t *tally;  /* per axiom */
  int64_t sum[8];       /* the tally's totals, in the order of total_names */
  taso_check_t *shown;
  int nshown;
} run_t;

static const char *total_names[8] = {"combinations",    "proved",       "counterexamples",
                                     "skipped",         "unknown",      "trees_differ",
                                     "decided_by_poly", "decided_by_z3"};

/* Options, then the job file for what they leave. A bad value is a usage
 * error, before any file is read. */
static taso_err_t read_settings(taso_tool_t *t, run_t *r) {
  if (opt_sizes && taso_parse_sizes(opt_sizes, r->sizes, &r->nsizes) != TASO_OK)
    taso_tool_usage_error(t, "--sizes: %s", taso_error_detail());
  if (opt_timeout && parse_seconds("timeout", opt_timeout, &r->timeout) != TASO_OK)
    taso_tool_usage_error(t, "%s", taso_error_detail());
  if (opt_red_timeout &&
      parse_seconds("redundancy-timeout", opt_red_timeout, &r->red_lim.timeout_s) != TASO_OK)
    taso_tool_usage_error(t, "%s", taso_error_detail());
  if (opt_red_rlimit &&
      parse_count("redundancy-rlimit", opt_red_rlimit, &r->red_lim.rlimit) != TASO_OK)
    taso_tool_usage_error(t, "%s", taso_error_detail());
  if (!t->job_path) return TASO_OK;
  taso_err_t err = taso_tool_load_job(t, t->job_path);
  if (err != TASO_OK) return err;
  if (!opt_sizes) {
    r->nsizes = t->job.nsizes;
    memcpy(r->sizes, t->job.sizes, sizeof *r->sizes * (size_t)r->nsizes);
  }
  if (!opt_timeout) r->timeout = t->job.validate_timeout;
  if (!opt_red_timeout) r->red_lim.timeout_s = t->job.redundancy_timeout;
  if (!opt_red_rlimit) r->red_lim.rlimit = (unsigned)t->job.redundancy_rlimit;
  r->red_lim.memory_mb = (unsigned)t->job.validate_memory_mb;
  if (!t->job.redundancy) no_redundancy = true; /* redundancy = off */
  /* What the job file leaves to defaults, unless an option set it. The
   * verifier's own settings do not apply here. */
  const char *validate_opts[] = {opt_sizes ? "sizes" : "", opt_timeout ? "timeout" : "",
                                 opt_red_timeout ? "redundancy_timeout" : "",
                                 opt_red_rlimit ? "redundancy_rlimit" : "", NULL};
  const char *verify_opts[] = {"timeout", "rlimit", "memory_mb", opt_axioms ? "axioms" : "", NULL};
  taso_tool_note_defaults(t, "validate", validate_opts);
  taso_tool_note_defaults(t, "verify", verify_opts);
  return TASO_OK;
}

/* Collective. The axioms, the plan of combinations and one checker per
 * thread. */
static taso_err_t load_plan(taso_tool_t *t, run_t *r) {
  taso_err_t err = TASO_OK;
  axiom_path(t, r->path, sizeof r->path);
  TASO_TOOL_STEP(t, err, taso_axioms_load(r->path, &r->ax));
  if (opt_add) {
    char *list = strdup(opt_add);
    if (!list) taso_fatal(__FILE__, __LINE__, "taso", "no memory");
    for (char *s = NULL, *f = strtok_r(list, ",", &s); f && err == TASO_OK;
         f = strtok_r(NULL, ",", &s))
      TASO_TOOL_STEP(t, err, taso_axioms_add_file(r->ax, f));
    free(list);
  }
  TASO_TOOL_STEP(t, err, taso_plan_new(r->ax, r->sizes, r->nsizes, opt_only, &r->plan));
  if (err == TASO_OK && taso_plan_naxioms(r->plan) == 0)
    err = taso_tool_agree(t, taso_error(TASO_ERR_ARG, "no axiom to check (see --only)"));
  if (err != TASO_OK) return err;
  r->total = taso_plan_total(r->plan);
  if (!(r->checkers = calloc((size_t)r->nthreads, sizeof *r->checkers)) ||
      !(r->done = calloc((size_t)r->total + 1, 1)) ||
      !(r->tally = calloc((size_t)taso_plan_naxioms(r->plan) + 1, sizeof *r->tally)))
    err = taso_error(TASO_ERR_NOMEM, "no memory for %lld combinations", (long long)r->total);
  for (int i = 0; i < r->nthreads && err == TASO_OK; i++)
    err = taso_checker_new(r->plan, r->timeout, z3_only, &r->checkers[i]);
  err = taso_tool_agree(t, err);
  if (err != TASO_OK) return err;
  char list[64];
  int used = 0;
  for (int i = 0; i < r->nsizes; i++)
    used += snprintf(list + used, sizeof list - (size_t)used, "%s%d", i ? "," : "", r->sizes[i]);
  taso_tool_print(t, "taso-validate: %d axioms from %s, sizes {%s}: %lld combinations\n",
                  taso_plan_naxioms(r->plan), r->path, list, (long long)r->total);
  return TASO_OK;
}

/* Collective. A complete --out of this plan: nothing to do. Else rows
 * stream into OUT.resume, resumed when it holds rows of this very plan. */
static taso_err_t open_files(taso_tool_t *t, run_t *r) {
  r->dig = plan_digest(r->ax, r->plan, r->sizes, r->nsizes, r->timeout, &r->red_lim);
  taso_err_t err = check_output(t, r->dig, &r->out);
  r->complete = r->out != NULL;
  if (err == TASO_OK && !r->complete)
    err = open_stream(t, r->plan, r->dig, r->done, r->total, &r->ndone, &r->have_red, &r->reopened,
                      &r->out);
  if (err == TASO_OK && (r->complete || r->ndone > 0))
    taso_tool_print(t, "taso-validate: resuming %s: %lld of %lld combinations already checked%s\n",
                    r->complete ? t->out_path : t->resume_path,
                    (long long)(r->complete ? r->total : r->ndone), (long long)r->total,
                    r->complete ? " (the file is complete; nothing to do)" : "");
  return err;
}

/* Collective. Redundancy: kept in OUT.resume once the phase is over, not
 * query by query, so a run stopped during it does it again, and says so.
 * A resumed or complete file's verdicts are read back. */
static taso_err_t redundancy_phase(taso_tool_t *t, run_t *r) {
  taso_err_t err = TASO_OK;
  if (r->reopened && !r->have_red && !no_redundancy)
    taso_tool_print(t,
                    "taso-validate: %s: the redundancy phase did not finish before the run "
                    "stopped: it runs again from its start (it is kept once whole)\n",
                    t->resume_path);
  r->ran_red = r->have_red || (!r->complete && !no_redundancy);
  if (!r->complete && !r->have_red && !no_redundancy) {
    char collapse[256];
    double r0 = MPI_Wtime();
    err = taso_redundancy(t->comm, r->ax, &r->red_lim, opt_goals, &r->reds, &r->nreds, &r->fams,
                          &r->nfams, collapse, sizeof collapse);
    if (err == TASO_OK && collapse[0])
      taso_tool_print(t,
                      "taso-validate: the axioms %s make any two tensors equal: the set is "
                      "wrong, and entails every other axiom\n",
                      collapse);
    if (err == TASO_OK) print_families(t, r->fams, r->nfams, MPI_Wtime() - r0);
    int nr = t->rank == 0 ? r->nreds : 0, nf = t->rank == 0 ? r->nfams : 0;
    TASO_TOOL_STEP(t, err, taso_artifact_remove(r->out, red_table.path));
    TASO_TOOL_STEP(t, err, taso_artifact_write_table(r->out, &red_table, r->reds, nr, 0, r->nreds));
    TASO_TOOL_STEP(t, err, taso_artifact_remove(r->out, collapse_table.path));
    TASO_TOOL_STEP(t, err,
                   taso_artifact_write_table(r->out, &collapse_table, r->fams, nf, 0, r->nfams));
    TASO_TOOL_STEP(t, err, taso_artifact_set_count(r->out, "redundancy_done", 1));
  } else if (r->complete || r->have_red) {
    int64_t n = 0;
    TASO_TOOL_STEP(t, err, taso_artifact_table_length(r->out, &red_table, &n));
    if (n > 0)
      TASO_TOOL_STEP(t, err, taso_artifact_read_table(r->out, &red_table, 0, n, (void **)&r->reds));
    r->nreds = (int)n;
    n = 0;
    TASO_TOOL_STEP(t, err, taso_artifact_table_length(r->out, &collapse_table, &n));
    if (n > 0)
      TASO_TOOL_STEP(t, err,
                     taso_artifact_read_table(r->out, &collapse_table, 0, n, (void **)&r->fams));
    r->nfams = (int)n;
  }
  for (int i = 0; i < r->nreds; i++) {
    const taso_red_t *d = &r->reds[i];
    r->red_count[d->verdict == 1 ? 0 : d->verdict == -1 ? 1 : 2]++;
    if (d->verdict == 1)
      taso_tool_print(t, "taso-validate: %s is entailed by %s (%.1f s)\n", d->name, d->core,
                      d->seconds);
    else if (d->verdict == 0)
      taso_tool_print(t, "taso-validate: %s is undecided: %s\n", d->name, d->why);
  }
  if (err == TASO_OK && r->nreds)
    taso_tool_print(t,
                    "taso-validate: redundancy: %lld entailed, %lld independent, %lld undecided "
                    "(of %d axioms)\n",
                    (long long)r->red_count[0], (long long)r->red_count[1],
                    (long long)r->red_count[2], r->nreds);
  return err;
}

/* Collective. Per-rank work of the checks: rows and CPU seconds, and when
 * the ranks ran out of work. */
static void print_work(taso_tool_t *t, int64_t rows, double cpu, double start, double last_end) {
  double wall = MPI_Wtime() - start;
  double cpu_max = cpu, cpu_sum = cpu, cpu_min = cpu;
  MPI_Allreduce(MPI_IN_PLACE, &cpu_max, 1, MPI_DOUBLE, MPI_MAX, t->comm);
  MPI_Allreduce(MPI_IN_PLACE, &cpu_sum, 1, MPI_DOUBLE, MPI_SUM, t->comm);
  MPI_Allreduce(MPI_IN_PLACE, &cpu_min, 1, MPI_DOUBLE, MPI_MIN, t->comm);
  int64_t rmax = rows, rmin = rows;
  MPI_Allreduce(MPI_IN_PLACE, &rmax, 1, MPI_INT64_T, MPI_MAX, t->comm);
  MPI_Allreduce(MPI_IN_PLACE, &rmin, 1, MPI_INT64_T, MPI_MIN, t->comm);
  double mean = cpu_sum / t->size, end_min = last_end - start, end_max = end_min;
  MPI_Allreduce(MPI_IN_PLACE, &end_min, 1, MPI_DOUBLE, MPI_MIN, t->comm);
  MPI_Allreduce(MPI_IN_PLACE, &end_max, 1, MPI_DOUBLE, MPI_MAX, t->comm);
  /* With dynamic scheduling the ranks should run out of work together,
   * whatever share of a core each one had (oversubscribed ranks). */
  taso_tool_print(t,
                  "taso-validate: the ranks finished their last chunk between %.2f s and %.2f s "
                  "into the checks (spread %.1f%% of the latest)\n",
                  end_min, end_max, end_max > 0 ? 100.0 * (end_max - end_min) / end_max : 0.0);
  taso_tool_print(t,
                  "taso-validate: checks: %.2f s wall, %.2f CPU s of work in all; per rank min "
                  "%.3f mean %.3f max %.3f (max/mean %.3f), rows min %lld max %lld\n",
                  wall, cpu_sum, cpu_min, mean, cpu_max, mean > 0 ? cpu_max / mean : 1.0,
                  (long long)rmin, (long long)rmax);
}

/* Collective. The symbolic checks, then the complete file written beside
 * --out (OUT.tmp) from the rows of OUT.resume; or a complete file's
 * tally read back. */
static taso_err_t checks_phase(taso_tool_t *t, run_t *r) {
  taso_err_t err = TASO_OK;
  int naxioms = taso_plan_naxioms(r->plan);
  if (r->complete) {
    int64_t n = 0;
    taso_tally_t *read = NULL;
    TASO_TOOL_STEP(t, err, taso_artifact_table_length(r->out, &taso_tally_table, &n));
    TASO_TOOL_STEP(t, err,
                   taso_artifact_read_table(r->out, &taso_tally_table, 0, n, (void **)&read));
    if (err == TASO_OK)
      memcpy(r->tally, read, sizeof *r->tally * (size_t)(n < naxioms ? n : naxioms));
    free(read);
    return err;
  }
  int64_t rows = 0;
  double cpu = 0;
  MPI_Barrier(t->comm);
  double start = MPI_Wtime(), last_end = start;
  err = taso_checks_run(t->comm, spec.name, r->checkers, r->total, r->done, r->ndone, r->out, &rows,
                        &cpu, &last_end);
  if (err != TASO_OK) return err;
  print_work(t, rows, cpu, start, last_end);
  taso_provenance_t prov;
  taso_tool_provenance(t, &prov);
  TASO_TOOL_STEP(
      t, err, taso_artifact_create(t->comm, t->tmp_path, TASO_KIND_VALIDATION, &prov, &r->final));
  int64_t lo, hi;
  taso_tool_block(t, r->total, &lo, &hi);
  if (err == TASO_OK)
    err = taso_checks_finish(t->comm, t->resume_path, r->out, r->final, r->plan, lo, hi, r->tally,
                             &r->shown, &r->nshown);
  int nr = t->rank == 0 ? r->nreds : 0, nf = t->rank == 0 ? r->nfams : 0;
  if (r->ran_red) {
    TASO_TOOL_STEP(t, err,
                   taso_artifact_write_table(r->final, &red_table, r->reds, nr, 0, r->nreds));
    TASO_TOOL_STEP(t, err,
                   taso_artifact_write_table(r->final, &collapse_table, r->fams, nf, 0, r->nfams));
  }
  TASO_TOOL_STEP(t, err,
                 taso_artifact_write_table(r->final, &taso_tally_table, r->tally,
                                           t->rank == 0 ? naxioms : 0, 0, naxioms));
  return err;
}

/* Collective. The totals into OUT.tmp's root attributes; OUT.tmp renamed
 * over --out (OUT.resume stays until the complete file is in place). */
static taso_err_t commit(taso_tool_t *t, run_t *r) {
  taso_err_t err = TASO_OK;
  for (int k = 0; k < 8 && err == TASO_OK; k++)
    err = taso_artifact_set_count(r->final, total_names[k], r->sum[k]);
  TASO_TOOL_STEP(t, err, taso_artifact_set_count(r->final, "redundant_axioms", r->red_count[0]));
  static const char *red_names[3] = {"redundancy_entailed", "redundancy_independent",
                                     "redundancy_undecided"};
  for (int k = 0; k < 3; k++)
    TASO_TOOL_STEP(t, err, taso_artifact_set_count(r->final, red_names[k], r->red_count[k]));
  TASO_TOOL_STEP(t, err, taso_artifact_set_count(r->final, "plan_digest", (int64_t)r->dig));
  TASO_TOOL_STEP(t, err, taso_artifact_set_count(r->final, "redundancy_done", r->ran_red));
  TASO_TOOL_STEP(t, err, taso_artifact_set_count(r->final, "complete", 1));
  err = taso_tool_close(t, &r->final, err);
  err = taso_tool_close(t, &r->out, err);
  TASO_TOOL_STEP(t, err, taso_tool_commit_output(t));
  return err;
}

/* The rows worth a line, and the axioms whose split trees differ. */
static void report(taso_tool_t *t, const run_t *r) {
  for (int i = 0; i < r->nshown; i++) {
    const taso_check_t *c = &r->shown[i];
    taso_tool_print(t, "taso-validate: %s %s: %s [%s] [%s]: %s\n", c->name,
                    taso_check_outcome_name(c->outcome), taso_check_path_name(c->path), c->params,
                    c->shapes, c->detail);
  }
  for (int a = 0; a < taso_plan_naxioms(r->plan); a++) {
    const taso_tally_t *y = &r->tally[a];
    if (y->trees_differ)
      taso_tool_print(t,
                      "taso-validate: %s: equal values but different split trees in %lld of %lld "
                      "checked combinations\n",
                      y->name, (long long)y->trees_differ,
                      (long long)(y->proved + y->counterexamples + y->unknown));
  }
}

/* The summary line, and the findings that fail the run (exit 3, so that a
 * job chain stops): values that differ, or a family that makes all
 * tensors equal. */
static void summarize(taso_tool_t *t, const run_t *r) {
  const int64_t *s = r->sum, *c = r->red_count;
  taso_tool_summary(t,
                    "%lld combinations: %lld proved, %lld counterexamples, %lld skipped, "
                    "%lld unknown (poly %lld, z3 %lld); redundancy: %lld entailed, %lld "
                    "independent, %lld undecided -> %s",
                    (long long)s[0], (long long)s[1], (long long)s[2], (long long)s[3],
                    (long long)s[4], (long long)s[6], (long long)s[7], (long long)c[0],
                    (long long)c[1], (long long)c[2], t->out_path);
  int collapsed = 0;
  for (int i = 0; i < r->nfams; i++)
    collapsed += r->fams[i].verdict == 1;
  if (s[2] > 0 || collapsed > 0)
    snprintf(t->findings, sizeof t->findings, "%lld counterexamples, %d collapsing families: %s",
             (long long)s[2], collapsed,
             s[2] > 0 ? "an axiom is wrong" : "the axiom set makes any two tensors equal");
}

static void run_free(run_t *r) {
  for (int i = 0; r->checkers && i < r->nthreads; i++)
    taso_checker_free(r->checkers[i]);
  free(r->checkers);
  free(r->done);
  free(r->reds);
  free(r->fams);
  free(r->tally);
  free(r->shown);
  taso_plan_free(r->plan);
  taso_axioms_free(r->ax);
}

/* ------------------------------------------------------------------------ */
/* main                                                                     */
/* ------------------------------------------------------------------------ */

int main(int argc, char **argv) {
  taso_tool_t t;
  taso_tool_init(&t, &spec, &argc, &argv);
  run_t r = {.sizes = {1, 2, 3, 4},
             .nsizes = 4,
             .timeout = 10.0,
             .red_lim = {.timeout_s = 10.0,
                         .rlimit = TASO_DEFAULT_REDUNDANCY_RLIMIT,
                         .memory_mb = TASO_DEFAULT_MEMORY_MB},
             .nthreads = omp_get_max_threads()};

  taso_err_t err = read_settings(&t, &r);
  /* Every check of --out before the work starts. */
  TASO_TOOL_STEP(&t, err, taso_tool_claim_output(&t));
  if (err == TASO_OK) err = load_plan(&t, &r);
  if (err == TASO_OK) err = open_files(&t, &r);
  if (err == TASO_OK) err = redundancy_phase(&t, &r);
  if (err == TASO_OK) err = checks_phase(&t, &r);
  for (int a = 0; err == TASO_OK && a < taso_plan_naxioms(r.plan); a++) {
    const taso_tally_t *y = &r.tally[a];
    const int64_t v[8] = {y->combinations, y->proved,       y->counterexamples, y->skipped,
                          y->unknown,      y->trees_differ, y->by_poly,         y->by_z3};
    for (int k = 0; k < 8; k++)
      r.sum[k] += v[k];
  }
  if (err == TASO_OK && !r.complete) err = commit(&t, &r);
  if (err == TASO_OK) report(&t, &r);
  err = taso_tool_close(&t, &r.final, err);
  err = taso_tool_close(&t, &r.out, err);
  if (err == TASO_OK) summarize(&t, &r);
  run_free(&r);
  return taso_tool_finish(&t, err);
}
