/*
 * Cost measurement backends: the operator timings the optimizer's cost model
 * reads. Each backend is a struct of function pointers; the registry in
 * backend.c is the only place that knows which ones were compiled in.
 */
#ifndef TASO_BACKEND_H
#define TASO_BACKEND_H

#include "check.h"

typedef struct {
  const char *name; /* "cpu", "cudnn" */
  /* Fills info with a one-line description of the device; an error when the
   * backend cannot run here (no GPU), with the reason in the detail. */
  taso_err_t (*probe)(char *info, int len);
} taso_backend_t;

/* The compiled-in backends, NULL-terminated; cpu is always first. */
extern const taso_backend_t *const taso_backends[];

const taso_backend_t *taso_backend_find(const char *name); /* NULL if absent */

#endif
