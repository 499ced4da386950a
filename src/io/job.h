/*
 * Job files: every setting of a run, in one INI file under jobs/.
 *
 * Parsed with inih; this module only checks keys and values. Sections:
 *   [job]       name, seed
 *   [inputs]    one line per graph input: NAME = 2x4 (or "scalar")
 *   [generate]  max_ops, operators (operator templates in graph-text syntax,
 *               separated by spaces, e.g. "conv2d conv2d(act=relu) pool_avg(k=3x3)"),
 *               method (representatives or exhaustive), weights (the inputs a
 *               conv2d weight may depend on; default all), identities (skip
 *               or keep operators where they are the identity)
 *               derive_steps, derive_extra_ops, derive_nodes (the bounds of the
 *               derivation search that prunes and checks pruning: derive.h)
 *   [verify]    axioms (path), timeout (seconds per query), rlimit (Z3 resource
 *               units per query), memory_mb (Z3's memory cap per query process)
 *   [validate]  sizes (e.g. "1,2"), timeout (seconds per case), redundancy
 *               (on|off), redundancy_timeout, redundancy_rlimit, memory_mb
 *   [measure]   models (specs separated by blanks), warmup, min_runs, max_runs,
 *               spread (target IQR over median), cores_per_device (0: all the
 *               job's cores on a node), lock_dir, batch_seconds
 *   [optimize]  search (backtracking|parallel|eqsat), alpha (keep graphs cheaper than alpha
 *               times the best), budget (graphs expanded), time_limit (seconds)
 * A malformed file gives TASO_ERR_PARSE with "FILE:LINE: problem".
 */
#ifndef TASO_JOB_H
#define TASO_JOB_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "graph.h"

#define TASO_MAX_SIZES 8

/* Defaults of the Z3 limits (README.md, "Job files"). The resource
 * limits are the budgets that make verdicts reproducible; the timeouts
 * stay as safety nets. */
#define TASO_DEFAULT_VERIFY_RLIMIT 50000000
#define TASO_DEFAULT_REDUNDANCY_RLIMIT 3000000
#define TASO_DEFAULT_MEMORY_MB 1024
#define TASO_MAX_TEMPLATES 64
/* Defaults of the derivation search's bounds (derive.h): what the
 * workstation job needs to re-derive every pair it prunes (README). */
#define TASO_DEFAULT_DERIVE_STEPS 4
#define TASO_DEFAULT_DERIVE_EXTRA_OPS 1
#define TASO_DEFAULT_DERIVE_NODES 20000
#define TASO_MAX_DERIVE_STEPS 16

typedef struct {
  taso_op_kind_t kind; /* operator */
  taso_params_t p;     /* its fixed parameters (defaults where omitted) */
} taso_op_template_t;

typedef struct {
  char *path;                                 /* as given */
  char *text;                                 /* the file's whole text, for provenance */
  char name[64];                              /* [job] name */
  uint64_t seed;                              /* [job] seed */
  taso_inputs_t inputs;                       /* [inputs] */
  int max_ops;                                /* [generate] max_ops */
  taso_op_template_t ops[TASO_MAX_TEMPLATES]; /* [generate] operators */
  int nops;
  char method[16];               /* [generate] method: "representatives" or "exhaustive" */
  char weights[1024];            /* [generate] weights: input names; "" every input */
  bool keep_identities;          /* [generate] identities = keep: enumerate operators where
                                    they are the identity (skip: not, the default) */
  int derive_steps;              /* [generate] derive_steps: rewrites per derivation */
  int derive_extra_ops;          /* [generate] derive_extra_ops: operators past the larger side */
  int derive_nodes;              /* [generate] derive_nodes: graphs per side of a search */
  char axioms[256];              /* [verify] axioms: path of the axiom file or folder */
  double verify_timeout;         /* [verify] timeout, seconds */
  int32_t sizes[TASO_MAX_SIZES]; /* [validate] sizes */
  int nsizes;
  double validate_timeout;      /* [validate] timeout, seconds */
  double redundancy_timeout;    /* [validate] redundancy_timeout, seconds: a safety net */
  int verify_rlimit;            /* [verify] rlimit, Z3 resource units per query; 0 none */
  int verify_memory_mb;         /* [verify] memory_mb, Z3's memory cap per rank; 0 none */
  int redundancy_rlimit;        /* [validate] redundancy_rlimit, per redundancy query */
  bool redundancy;              /* [validate] redundancy: on (default) or off, as --no-redundancy */
  int validate_memory_mb;       /* [validate] memory_mb, Z3's memory cap per rank; 0 none */
  char measure_models[1024];    /* [measure] models: specs separated by blanks; "" none */
  int measure_warmup;           /* [measure] warmup: untimed runs per configuration */
  int measure_min_runs;         /* [measure] min_runs: timed runs at least */
  int measure_max_runs;         /* [measure] max_runs: timed runs at most */
  double measure_spread;        /* [measure] spread: stop once IQR / median is at most this */
  int measure_cores_per_device; /* [measure] cores_per_device: CPU cores one measurement
                                   owns; 0: all the job's cores on the node */
  char measure_lock_dir[256];   /* [measure] lock_dir; "": $TMPDIR/taso-devices, else
                                   /tmp/taso-devices */
  double measure_batch_seconds; /* [measure] batch_seconds: measuring between merges */
  char search[32];              /* [optimize] search: "backtracking" or "parallel" */
  double alpha;                 /* [optimize] alpha, >= 1 */
  int budget;                   /* [optimize] budget: graphs taken from the queue */
  double optimize_time_limit;   /* [optimize] time_limit, seconds */
  bool chain;                   /* [optimize] chain: on (rule chains, search.h) or off */
  int eqsat_iterations;         /* [optimize] eqsat_iterations: equality saturation's rounds */
  int eqsat_nodes;              /* [optimize] eqsat_nodes: its e-graph's node limit */
  int eqsat_exact_seconds;      /* [optimize] eqsat_exact_seconds: the exact extraction's time */
  bool eqsat_prove_all;         /* [optimize] eqsat_proofs = all (default used) */
  bool eqsat_measure_all;       /* [optimize] eqsat_measure = all (default chosen) */
  int eqsat_rounds; /* [optimize] eqsat_rounds: saturations, each from the last's result */
  uint64_t given;   /* keys the file sets, one bit each (taso_job_given) */
} taso_job_t;

taso_err_t taso_job_load(const char *path, taso_job_t *job);
/* The same from text recorded as path's (an artifact's job_text): path
 * names it in messages and places the job's relative paths. */
taso_err_t taso_job_parse(const char *path, const char *text, taso_job_t *job);
void taso_job_free(taso_job_t *job);

/* Whether the file sets [section] key, rather than leaving its default.
 * A tool says which defaults it ran with, so that an empty or misspelt job
 * file cannot pass for one that asked for them. */
bool taso_job_given(const taso_job_t *job, const char *section, const char *key);

/* Appends "[section] key = default" (", "-separated) to the string in buf
 * for each key of section that the file leaves at its default, except
 * those listed in skip (NULL-terminated; NULL for none: keys a command-line
 * option set). Returns how many it appended. */
int taso_job_defaults(const taso_job_t *job, const char *section, const char *const *skip,
                      char *buf, size_t len);

/* Parses a comma-separated size list ("1,2,3") into sizes[TASO_MAX_SIZES]. */
taso_err_t taso_parse_sizes(const char *text, int32_t *sizes, int *n);

#endif
