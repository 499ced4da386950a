/*
 * The one rule every tool follows before it writes a file (docs/files.md):
 * an output never names an input (the tools check that among their
 * arguments); its folder exists and is writable; an existing file is
 * replaced only with --fresh, and only if it holds what the tool writes.
 * A file of another kind (another artifact, a model, a text, an ONNX
 * file) is never replaced, not even with --fresh: it has to be removed
 * by hand, or another path chosen. An HDF5 file that cannot be read
 * (cut short) counts as the tool's own, replaced with --fresh.
 */
#ifndef TASO_REPLACE_H
#define TASO_REPLACE_H

#include <stdbool.h>
#include <stddef.h>

#include "check.h"

/* Kinds of output that are not artifacts (the artifact kinds are
 * TASO_KIND_..., artifact.h). */
#define TASO_FILE_ONNX "ONNX model"
#define TASO_FILE_TEXT "text"

typedef enum {
  TASO_HOLDS_NOTHING,    /* no such file */
  TASO_HOLDS_OWN,        /* what a tool writing kind writes */
  TASO_HOLDS_UNREADABLE, /* an HDF5 file that cannot be read as an artifact (cut short,
                            another format version): replaced with --fresh */
  TASO_HOLDS_OTHER,      /* anything else: never replaced */
} taso_holds_t;

/* What path holds, measured against kind; what (len bytes) says it in a
 * few words ("a taso-model artifact", "a text file"). */
taso_holds_t taso_file_holds(const char *path, const char *kind, char *what, size_t len);

/* TASO_OK when a tool may write kind to path (option names the argument
 * in messages: "--onnx"): its folder exists and is writable, path is no
 * folder, and an existing file holds kind (or is unreadable HDF5) and
 * fresh is set. With own_ok, an existing file of kind passes without
 * fresh too: a stage that resumes judges it itself. TASO_ERR_IO with a
 * message naming path otherwise. */
taso_err_t taso_may_write(const char *option, const char *path, const char *kind, bool fresh,
                          bool own_ok);

/* The folder of path exists and is writable: TASO_OK, else TASO_ERR_IO. */
taso_err_t taso_output_folder_ok(const char *path);

#endif
