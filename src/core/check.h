/*
 * Error handling shared by every module.
 *
 * Library functions return a taso_err_t and leave a human-readable detail in
 * a thread-local buffer (taso_error_detail()); only tools print and exit.
 * The *_CHECK macros are for failures of external libraries that leave no
 * sane way to continue: they evaluate their argument once, print file:line,
 * the MPI rank and the library's own message, then call a settable fatal
 * hook (MPI_Abort in tools, abort() in unit tests).
 */
#ifndef TASO_CHECK_H
#define TASO_CHECK_H

#include <stdarg.h>

typedef enum {
  TASO_OK = 0,
  TASO_ERR_NOMEM,       /* allocation failed */
  TASO_ERR_IO,          /* a file could not be opened, read or written */
  TASO_ERR_FORMAT,      /* a file is not what it should be (foreign, truncated) */
  TASO_ERR_PARSE,       /* malformed text: graph, job file, axiom file */
  TASO_ERR_UNKNOWN,     /* an unknown operator, input, key or value */
  TASO_ERR_SHAPE,       /* shapes or split trees not valid for an operator */
  TASO_ERR_LIMIT,       /* a fixed capacity exceeded (split tree depth, name length) */
  TASO_ERR_ARG,         /* a bad argument from the caller */
  TASO_ERR_OVERFLOW,    /* exact arithmetic out of range */
  TASO_ERR_LIB,         /* an external library (MPI, HDF5, Z3, CUDA) failed */
  TASO_ERR_UNSUPPORTED, /* valid, but not something this backend or importer does */
  TASO_ERR_COUNT
} taso_err_t;

/* The short text of a code, from the one message table. */
const char *taso_strerror(taso_err_t err);

/* Records a detail message for the calling thread and returns err. */
taso_err_t taso_error(taso_err_t err, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* TASO_ERR_NOMEM saying what and how much: "no memory for input 'data':
 * 111.8 GiB asked for". */
taso_err_t taso_error_nomem(double bytes, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/* Prefixes the current detail with more context ("job.ini:3: ..."). */
taso_err_t taso_error_prefix(taso_err_t err, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/* The detail of the calling thread's last error ("" if none). */
const char *taso_error_detail(void);

/* Called after a *_CHECK failure has been printed; must not return. */
typedef void (*taso_fatal_hook_t)(void);
void taso_set_fatal_hook(taso_fatal_hook_t hook);
void taso_fatal(const char *file, int line, const char *lib, const char *msg)
    __attribute__((noreturn));

/* Propagates a taso_err_t from a call inside a function returning one. */
#define TASO_TRY(call)                                                                             \
  do {                                                                                             \
    taso_err_t taso_try_err_ = (call);                                                             \
    if (taso_try_err_ != TASO_OK) return taso_try_err_;                                            \
  } while (0)

/* For library calls that return a taso_err_t but cannot fail in context. */
#define TASO_CHECK(call)                                                                           \
  do {                                                                                             \
    taso_err_t taso_chk_ = (call);                                                                 \
    if (taso_chk_ != TASO_OK) taso_fatal(__FILE__, __LINE__, "taso", taso_error_detail());         \
  } while (0)

#endif
