#include "check.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <mpi.h>

static const char *const messages[TASO_ERR_COUNT] = {
    [TASO_OK] = "success",
    [TASO_ERR_NOMEM] = "out of memory",
    [TASO_ERR_IO] = "input/output error",
    [TASO_ERR_FORMAT] = "bad file format",
    [TASO_ERR_PARSE] = "parse error",
    [TASO_ERR_UNKNOWN] = "unknown name",
    [TASO_ERR_SHAPE] = "invalid shape",
    [TASO_ERR_LIMIT] = "capacity exceeded",
    [TASO_ERR_ARG] = "invalid argument",
    [TASO_ERR_OVERFLOW] = "arithmetic overflow",
    [TASO_ERR_LIB] = "library failure",
    [TASO_ERR_UNSUPPORTED] = "not supported",
};

static _Thread_local char detail[1024];

const char *taso_strerror(taso_err_t err) {
  return (err >= 0 && err < TASO_ERR_COUNT) ? messages[err] : "unknown error";
}

taso_err_t taso_error(taso_err_t err, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(detail, sizeof detail, fmt, ap);
  va_end(ap);
  return err;
}

taso_err_t taso_error_nomem(double bytes, const char *fmt, ...) {
  char what[512];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(what, sizeof what, fmt, ap);
  va_end(ap);
  static const char *const units[] = {"bytes", "KiB", "MiB", "GiB", "TiB", "PiB"};
  int u = 0;
  double v = bytes;
  while (v >= 1024 && u < 5) {
    v /= 1024;
    u++;
  }
  return taso_error(TASO_ERR_NOMEM, "no memory for %s: %.*f %s asked for", what, u ? 1 : 0, v,
                    units[u]);
}

taso_err_t taso_error_prefix(taso_err_t err, const char *fmt, ...) {
  char old[sizeof detail];
  char prefix[512];
  va_list ap;
  memcpy(old, detail, sizeof old);
  va_start(ap, fmt);
  vsnprintf(prefix, sizeof prefix, fmt, ap);
  va_end(ap);
  /* A message too long for the buffer keeps its start: the prefix names the
   * file, which matters most. */
  if (snprintf(detail, sizeof detail, "%s%s", prefix, old[0] ? old : taso_strerror(err)) >=
      (int)sizeof detail)
    detail[sizeof detail - 1] = '\0';
  return err;
}

const char *taso_error_detail(void) {
  return detail;
}

static void default_hook(void) {
  abort();
}

static taso_fatal_hook_t fatal_hook = default_hook;

void taso_set_fatal_hook(taso_fatal_hook_t hook) {
  fatal_hook = hook ? hook : default_hook;
}

void taso_fatal(const char *file, int line, const char *lib, const char *msg) {
  int initialized = 0, finalized = 0, rank = -1;
  MPI_Initialized(&initialized);
  MPI_Finalized(&finalized);
  if (initialized && !finalized) MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  fprintf(stderr, "%s:%d: rank %d: %s: %s\n", file, line, rank, lib, msg);
  fflush(stderr);
  fatal_hook();
  abort(); /* a hook that returns is a bug; never continue */
}
