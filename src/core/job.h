/*
 * Job files: every setting of a run, in one INI file under jobs/.
 *
 * Parsed with inih; this module only checks keys and values. Sections:
 *   [job]       name, seed
 *   [inputs]    one line per graph input: NAME = 2x4 (or "scalar")
 *   [generate]  max_ops, operators (operator templates in graph-text syntax,
 *               separated by spaces, e.g. "conv2d conv2d(act=relu) pool_avg(k=3x3)")
 *   [verify]    axioms (path), timeout (seconds per query)
 *   [validate]  sizes (e.g. "1,2"), timeout (seconds per case)
 * A malformed file gives TASO_ERR_PARSE with "FILE:LINE: problem".
 */
#ifndef TASO_JOB_H
#define TASO_JOB_H

#include <stdint.h>

#include "graph.h"

#define TASO_MAX_SIZES 8
#define TASO_MAX_TEMPLATES 64

typedef struct {
  taso_op_kind_t kind; /* operator */
  taso_params_t p;     /* its fixed parameters (defaults where omitted) */
} taso_op_template_t;

typedef struct {
  char *path;                 /* as given */
  char *text;                 /* the file's whole text, for provenance */
  char name[64];              /* [job] name */
  uint64_t seed;              /* [job] seed */
  taso_inputs_t inputs;       /* [inputs] */
  int max_ops;                /* [generate] max_ops */
  taso_op_template_t ops[TASO_MAX_TEMPLATES]; /* [generate] operators */
  int nops;
  char axioms[256];           /* [verify] axioms: path of the axiom file or folder */
  double verify_timeout;      /* [verify] timeout, seconds */
  int32_t sizes[TASO_MAX_SIZES]; /* [validate] sizes */
  int nsizes;
  double validate_timeout;    /* [validate] timeout, seconds */
  double redundancy_timeout;  /* [validate] redundancy_timeout, seconds */
} taso_job_t;

taso_err_t taso_job_load(const char *path, taso_job_t *job);
void taso_job_free(taso_job_t *job);

/* Parses a comma-separated size list ("1,2,3") into sizes[TASO_MAX_SIZES]. */
taso_err_t taso_parse_sizes(const char *text, int32_t *sizes, int *n);

#endif
