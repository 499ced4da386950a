/* The CPU backend: oneDNN on this machine's cores (OpenMP threads). The
 * probe opens a oneDNN CPU engine, as every measurement will. */
#include <omp.h>
#include <stdio.h>

#include <dnnl.h>

#include "backend.h"

static taso_err_t cpu_probe(char *info, int len) {
  dnnl_engine_t engine;
  dnnl_status_t st = dnnl_engine_create(&engine, dnnl_cpu, 0);
  if (st != dnnl_success)
    return taso_error(TASO_ERR_LIB, "oneDNN: cannot create a CPU engine (status %d)", (int)st);
  dnnl_engine_destroy(engine);
  const dnnl_version_t *v = dnnl_version();
  snprintf(info, len, "cpu: oneDNN %d.%d.%d, %d OpenMP threads", v->major, v->minor, v->patch,
           omp_get_max_threads());
  return TASO_OK;
}

const taso_backend_t taso_backend_cpu = {.name = "cpu", .probe = cpu_probe};
