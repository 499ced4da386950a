#include "backend.h"

#include <string.h>

extern const taso_backend_t taso_backend_cpu;

const taso_backend_t *const taso_backends[] = {
    &taso_backend_cpu,
    NULL,
};

const taso_backend_t *taso_backend_find(const char *name) {
  for (int i = 0; taso_backends[i]; i++)
    if (strcmp(taso_backends[i]->name, name) == 0) return taso_backends[i];
  return NULL;
}
