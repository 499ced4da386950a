/* The CPU backend: times the reference evaluator; always available. */
#include <omp.h>
#include <stdio.h>

#include "backend.h"

static taso_err_t cpu_probe(char *info, int len) {
  snprintf(info, len, "cpu: %d OpenMP threads", omp_get_max_threads());
  return TASO_OK;
}

const taso_backend_t taso_backend_cpu = {.name = "cpu", .probe = cpu_probe};
