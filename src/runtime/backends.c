/* The registry of backends: the only place that knows which were built. */
#include <string.h>

#include "runtime.h"

extern const taso_backend_t taso_backend_reference;
extern const taso_backend_t taso_backend_cpu;
#ifdef TASO_HAVE_CUDA
extern const taso_backend_t taso_backend_gpu;
#endif

const taso_backend_t *const taso_backends[] = {
    &taso_backend_reference,
    &taso_backend_cpu,
#ifdef TASO_HAVE_CUDA
    &taso_backend_gpu,
#endif
    NULL,
};

const taso_backend_t *taso_backend_find(const char *name) {
  for (int i = 0; taso_backends[i]; i++)
    if (strcmp(taso_backends[i]->name, name) == 0) return taso_backends[i];
  return NULL;
}
