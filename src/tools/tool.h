/*
 * The harness every taso executable shares, so that the tools agree on how
 * they are started, how they fail and what they print.
 *
 * A tool's main() describes itself in a taso_tool_spec_t, calls
 * taso_tool_init (MPI start, option parsing, --help and --version), does its
 * work through library calls, passes every taso_err_t through
 * taso_tool_agree, and returns taso_tool_finish. Agreeing matters under MPI:
 * a failure seen by one rank must become the same failure on every rank,
 * or the others would wait forever in the next collective call. Usage
 * errors exit with status 2 and runtime errors with 1, each with one line
 * "NAME: error: MESSAGE" on stderr from rank 0 only. A run that completed
 * but found the work wrong (taso-validate: an axiom with a counterexample)
 * exits with TASO_EXIT_FINDINGS, so that a job chain stops there too.
 */
#ifndef TASO_TOOL_H
#define TASO_TOOL_H

#include <stdbool.h>
#include <stdint.h>

#include <mpi.h>

#include "artifact.h"
#include "job.h"
#include "progress.h"
#include "rounds.h"

/* A tool-specific on/off switch, "--NAME". */
typedef struct {
  const char *name; /* without the dashes: "graphs" */
  const char *help; /* one line for --help */
  bool *value;      /* set to true when the switch is given */
} taso_tool_flag_t;

/* A tool-specific option with a value, "--NAME VALUE". */
typedef struct {
  const char *name;    /* without the dashes: "sizes" */
  const char *metavar; /* the value in --help: "LIST" */
  const char *help;    /* one line for --help */
  const char **value;  /* receives the value as given (argv memory) */
} taso_tool_option_t;

/* What a tool is and which common options it takes. A NULL help text
 * means the tool does not take that option. */
typedef struct {
  const char *name;                  /* "taso-generate" */
  const char *about;                 /* what it does, for --help; lines end in \n */
  const char *job_help;              /* --job FILE */
  const char *in_help;               /* --in FILE */
  const char *out_help;              /* --out FILE */
  const char *default_in;            /* --in when not given; NULL for none */
  const char *default_out;           /* --out when not given; NULL for none */
  const char *out_kind;              /* the artifact kind --out holds (TASO_KIND_...) */
  const char *fresh_help;            /* --fresh: what starting over means here */
  bool job_required;                 /* --job must be given */
  bool in_positional;                /* a lone FILE argument stands for --in FILE */
  bool out_positional;               /* a second FILE argument stands for --out FILE */
  bool in_optional;                  /* the tool may run without an input (taso-convert --list) */
  bool threads;                      /* takes --threads N */
  bool single_rank;                  /* refuses to run on more than one rank */
  bool replace_needs_fresh;          /* an existing --out of its kind is replaced only with
                                        --fresh (a stage that resumes judges its own) */
  const taso_tool_flag_t *flags;     /* tool-specific switches, ended by {0}; may be NULL */
  const taso_tool_option_t *options; /* options with a value, ended by {0}; may be NULL */
} taso_tool_spec_t;

/* main()'s exit statuses, the same for every tool. */
enum {
  TASO_EXIT_OK = 0,       /* done, and nothing wrong found */
  TASO_EXIT_FAILED = 1,   /* the run failed: bad input, a failed write, ... */
  TASO_EXIT_USAGE = 2,    /* the command line is wrong */
  TASO_EXIT_FINDINGS = 3, /* done, and what it checked is wrong (see findings) */
};

typedef struct {
  const taso_tool_spec_t *spec; /* the tool */
  MPI_Comm comm;                /* every collective call of the tool runs on it */
  int rank, size;               /* in comm */
  const char *job_path;         /* --job, or NULL */
  const char *in_path;          /* --in or its default, or NULL */
  const char *out_path;         /* --out or its default, or NULL */
  int threads;                  /* OpenMP threads of rank 0, for provenance */
  bool fresh;                   /* --fresh: start over, replacing what --out holds */
  char *lock_path;              /* OUT.lock, held by rank 0 from the claim to the end */
  char *tmp_path;               /* OUT.tmp: the output until it is complete */
  char *resume_path;            /* OUT.resume: rows streamed by a resumable stage */
  int lock_fd;                  /* rank 0: the open lock file; -1 when none */
  bool claimed;                 /* taso_tool_claim_output succeeded: OUT.tmp is ours */
  taso_job_t job;               /* valid once taso_tool_load_job succeeded */
  bool have_job;                /* job holds a loaded job to free */
  char job_abs[4096];           /* the job file's absolute path, recorded in outputs */
  double start;                 /* MPI_Wtime() at start, for the summary */
  char start_time[32];          /* ISO 8601 start, for provenance */
  char findings[256];           /* non-empty: what the run found wrong (exit 3) */
  char defaults[512];           /* job settings left at their defaults, for the summary
                                   (taso_job_defaults); empty: none */
} taso_tool_t;

/* Starts MPI, installs a fatal hook that calls MPI_Abort, and parses the
 * options. --help, --version and usage errors end the process here, on
 * every rank alike (the ranks parse the same argv). */
void taso_tool_init(taso_tool_t *t, const taso_tool_spec_t *spec, int *argc, char ***argv);

/* Collective. Returns TASO_OK on every rank if err is TASO_OK on every
 * rank; otherwise the error of the lowest failing rank, with its detail
 * (prefixed "rank R: " when R is not 0), on every rank. */
taso_err_t taso_tool_agree(taso_tool_t *t, taso_err_t err);

/* Runs call only while err is TASO_OK, then agrees on the outcome: a main()
 * is a list of these steps and one cleanup path. */
#define TASO_TOOL_STEP(t, err, call)                                                               \
  do {                                                                                             \
    if ((err) == TASO_OK) (err) = taso_tool_agree((t), (call));                                    \
  } while (0)

/* Collective. Loads the job file on every rank (each reads it; no rank
 * proceeds unless all could). */
taso_err_t taso_tool_load_job(taso_tool_t *t, const char *path);
/* The same from the text an artifact recorded of the job file at path
 * (its job_text), whatever the file holds now. */
taso_err_t taso_tool_load_recorded_job(taso_tool_t *t, const char *path, const char *text);

/* Collective. Closes *a if it is open, even after an error (what was
 * written stays readable), and sets *a to NULL. Returns err, or the close's
 * error when err is TASO_OK. */
taso_err_t taso_tool_close(taso_tool_t *t, taso_artifact_t **a, taso_err_t err);

/* Outputs. A stage never writes --out in place: it writes OUT.tmp beside
 * it and renames it over OUT only when it is complete, so a run that fails
 * or is killed leaves the previous OUT as it was. Stages that stream rows
 * while they run (verify, validate) keep them in OUT.resume, which a later
 * run with the same plan resumes from, and which is removed once OUT is in
 * place. OUT.lock, beside them, keeps a second run off the same OUT. */

/* Collective; to be called before any work. Checks that --out can be
 * written and may be replaced, and locks it for this run: its folder
 * exists and is writable; OUT is not a folder, not one of this run's
 * inputs (--in, --job; never, even with --fresh); an existing OUT follows
 * replace.h's rule (replaced only with --fresh and only if of the tool's
 * kind; without --fresh a stage judges a file of its kind itself: another
 * plan's results are refused, taso_tool_refuse); no other run holds
 * OUT.lock (an advisory flock(): a lock whose process has died is free).
 * The lock is released by taso_tool_finish. */
taso_err_t taso_tool_claim_output(taso_tool_t *t);

/* The error of a stage that will not replace path because of what it
 * holds: "PATH holds WHAT: not replacing it (--fresh replaces it)". */
taso_err_t taso_tool_refuse(const taso_tool_t *t, const char *path, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* Collective. Puts the complete, closed OUT.tmp in place of OUT (flushed
 * to disk first, then renamed) and removes OUT.resume. */
taso_err_t taso_tool_commit_output(taso_tool_t *t);

/* A path the job file names (data/axioms): as given where it exists or is
 * absolute, else relative to the job file's folder or the folder above it
 * (jobs/ sits next to data/), else as given. */
void taso_tool_job_relative(const taso_tool_t *t, const char *rel, char *path, size_t len);

/* Provenance of this run; the job fields are empty without a loaded job. */
void taso_tool_provenance(const taso_tool_t *t, taso_provenance_t *prov);

/* The block of n items that this rank owns: [*lo, *hi). Blocks follow rank
 * order, so items written block by block keep their global indices. */
void taso_tool_block(const taso_tool_t *t, int64_t n, int64_t *lo, int64_t *hi);

/* Rank 0 only: printf to stdout; "NAME: warning: ..." to stderr. */
void taso_tool_print(const taso_tool_t *t, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
void taso_tool_warn(const taso_tool_t *t, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/* Rank 0 only: the final line "NAME: MESSAGE (T s, N ranks)" on stdout. */
void taso_tool_summary(const taso_tool_t *t, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/* Ends a usage problem found after init ("wrong rank count"): prints
 * "NAME: error: ..." on rank 0 and exits 2 on every rank. Every rank must
 * call it. */
void taso_tool_usage_error(taso_tool_t *t, const char *fmt, ...)
    __attribute__((format(printf, 2, 3), noreturn));

/* Whether two paths name one file: the same device and inode where both
 * exist, else the same absolute path (the folder resolved, the last name
 * compared as given), so that an output about to be made is caught too. */
bool taso_tool_same_file(const char *a, const char *b);

/* A tool's file argument: its option ("--out"), its path (NULL: not
 * given) and, for an output, the kind it writes (TASO_KIND_...,
 * TASO_FILE_ONNX, TASO_FILE_TEXT of replace.h); NULL for an input. */
typedef struct {
  const char *option;
  const char *path;
  const char *kind;
  bool updates; /* an output read and updated (a cache, a cost database): an existing
                   file of its kind is kept and grown, --fresh or not */
} taso_tool_file_t;

static inline taso_tool_file_t taso_tool_input(const char *option, const char *path) {
  return (taso_tool_file_t){option, path, NULL, false};
}
static inline taso_tool_file_t taso_tool_output(const char *option, const char *path,
                                                const char *kind) {
  return (taso_tool_file_t){option, path, kind, false};
}
static inline taso_tool_file_t taso_tool_updated(const char *option, const char *path,
                                                 const char *kind) {
  return (taso_tool_file_t){option, path, kind, true};
}

/* Every rank, before any work: replace.h's rule over a tool's file
 * arguments, as rank 0 finds it. No output names another output or any
 * input (two runs of one tool on one file would take its lock twice and
 * wait on themselves, or a tool would replace what it reads), and each
 * output but --out (taso_tool_claim_output's, with its lock) may be
 * written (taso_may_write: an existing file only with --fresh, and only
 * of its kind). Otherwise the run ends at once naming the file: status 2
 * for arguments that name one file, 1 for a file that may not be written
 * (as taso_tool_claim_output's refusals). */
void taso_tool_check_files(taso_tool_t *t, const taso_tool_file_t *files, int n);

/* Notes in t->defaults the keys of job section that the job file leaves
 * at their defaults (except those in skip, set on the command line), so
 * that the summary line states them. */
void taso_tool_note_defaults(taso_tool_t *t, const char *section, const char *const *skip);

/* Collective. Agrees on err, prints it on rank 0, removes an OUT.tmp that
 * was not put in place, releases the lock, frees the job and finalizes
 * MPI. Returns main()'s exit status: TASO_EXIT_FAILED on error, else
 * TASO_EXIT_FINDINGS when t->findings is set (rank 0's counts; it is
 * printed as "NAME: findings: ..."), else TASO_EXIT_OK. */
int taso_tool_finish(taso_tool_t *t, taso_err_t err);

/* A progress line (progress.h) under the tool's name, printed by its rank 0. */
void taso_progress_begin(taso_progress_t *p, const taso_tool_t *t, const char *what, int64_t total);

#endif
