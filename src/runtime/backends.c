/* The registry of backends: the only place that knows which were built.
 *
 * The gpu backend is a module of its own (taso-gpu.so, beside the
 * programs), loaded the first time it is asked for: cuBLAS's libraries
 * take about half a second of set-up when a process starts, which every
 * rank of every tool paid before, GPU or not. Its few calls into this
 * program (errors, tensors, operators) are the taso_* symbols every
 * program that links the runtime exports (src/runtime/CMakeLists.txt).
 * A module that does not load makes a gpu backend whose probe and open
 * say why. */
#define _POSIX_C_SOURCE 200809L
#include <string.h>

#include "runtime.h"

extern const taso_backend_t taso_backend_reference;
extern const taso_backend_t taso_backend_cpu;

#ifdef TASO_HAVE_CUDA
#include <dlfcn.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <unistd.h>

static pthread_once_t gpu_once = PTHREAD_ONCE_INIT;
static const taso_backend_t *gpu_loaded;
static char gpu_why[PATH_MAX + 512];

static taso_err_t gpu_unloaded_probe(char *info, int len) {
  (void)info, (void)len;
  return taso_error(TASO_ERR_LIB, "%s", gpu_why);
}

static taso_err_t gpu_unloaded_open(int threads, taso_rt_ctx_t **ctx) {
  (void)threads;
  *ctx = NULL;
  return taso_error(TASO_ERR_LIB, "%s", gpu_why);
}

static taso_err_t gpu_unloaded_uuid(int device, int *count, char *uuid, int len) {
  (void)device, (void)uuid, (void)len;
  *count = 0;
  return taso_error(TASO_ERR_LIB, "%s", gpu_why);
}

static const taso_backend_t gpu_unloaded = {
    .name = "gpu",
    .probe = gpu_unloaded_probe,
    .open = gpu_unloaded_open,
    .device_uuid = gpu_unloaded_uuid,
};

/* The module beside this program, else in ../bin (the test programs'
 * folder is a sibling of bin/, in a build and in a GPU bundle); NULL with
 * gpu_why said when there is none or it does not load. */
static void *gpu_dlopen(void) {
  char exe[PATH_MAX], path[PATH_MAX + 32];
  ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
  char *slash = NULL;
  if (n > 0) {
    exe[n] = '\0';
    slash = strrchr(exe, '/');
  }
  if (!slash) {
    snprintf(gpu_why, sizeof gpu_why, "the gpu backend's module: this program's folder is unknown");
    return NULL;
  }
  *slash = '\0';
  const char *where[] = {"", "/../bin"};
  for (int i = 0; i < 2; i++) {
    snprintf(path, sizeof path, "%s%s/taso-gpu.so", exe, where[i]);
    if (access(path, F_OK) != 0) continue;
    void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (!h)
      snprintf(gpu_why, sizeof gpu_why, "the gpu backend's module did not load: %s", dlerror());
    return h;
  }
  snprintf(gpu_why, sizeof gpu_why,
           "the gpu backend's module is missing (taso-gpu.so, looked for beside %s and in its "
           "../bin)",
           exe);
  return NULL;
}

static void gpu_load(void) {
  gpu_loaded = &gpu_unloaded;
  void *h = gpu_dlopen();
  if (!h) return;
  const taso_backend_t *be = dlsym(h, "taso_backend_gpu");
  if (be)
    gpu_loaded = be;
  else
    snprintf(gpu_why, sizeof gpu_why, "the gpu backend's module has no backend: %s", dlerror());
}

static const taso_backend_t *gpu_backend(void) {
  pthread_once(&gpu_once, gpu_load);
  return gpu_loaded;
}
#endif

bool taso_backend_built(const char *name) {
#ifdef TASO_HAVE_CUDA
  if (strcmp(name, "gpu") == 0) return true;
#endif
  return strcmp(name, "reference") == 0 || strcmp(name, "cpu") == 0;
}

const taso_backend_t *taso_backend_find(const char *name) {
  const taso_backend_t *host[] = {&taso_backend_reference, &taso_backend_cpu};
  for (size_t i = 0; i < sizeof host / sizeof host[0]; i++)
    if (strcmp(host[i]->name, name) == 0) return host[i];
#ifdef TASO_HAVE_CUDA
  if (strcmp(name, "gpu") == 0) return gpu_backend();
#endif
  return NULL;
}
