/*
 * HDF5 artifact files (see artifact.h): create, open, identify, close, the
 * root attributes, and the error handling that every step of every
 * artifact file ends in (artifact_impl.h says why it is shaped so).
 */
#define _POSIX_C_SOURCE 200809L

#include "artifact_impl.h"

#include <errno.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <time.h>
#include <unistd.h>

#include "collective.h"
#include "io_guard.h"
#include "version.h"

void taso_now_iso8601(char buf[32]) {
  time_t now = time(NULL);
  struct tm tm;
  /* A clock that cannot be read should not fail a run that is otherwise done. */
  if (now == (time_t)-1 || gmtime_r(&now, &tm) == NULL ||
      strftime(buf, 32, "%Y-%m-%dT%H:%M:%SZ", &tm) == 0)
    snprintf(buf, 32, "%s", "1970-01-01T00:00:00Z");
}

/* ------------------------------------------------------------------------ */
/* Errors                                                                   */
/* ------------------------------------------------------------------------ */

/* Whether HDF5's error stacks are printed: --debug or TASO_DEBUG. Off by
 * default, because a stack of a few hundred lines buries the one line that
 * says what went wrong. */
static int debug_stacks = -1; /* -1: not decided yet */

void taso_artifact_set_debug(bool on) {
  debug_stacks = on;
}

static bool debugging(void) {
  if (debug_stacks < 0) {
    const char *v = getenv("TASO_DEBUG");
    debug_stacks = v && *v && strcmp(v, "0") != 0;
  }
  return debug_stacks;
}

/* Reports an HDF5 call that has just failed: the stack first (when asked
 * for), because the next HDF5 call clears it. */
taso_err_t artifact_h5_fail(const taso_artifact_t *a, const char *fmt, ...) {
  char what[256];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(what, sizeof what, fmt, ap);
  va_end(ap);
  if (debugging()) {
    fprintf(stderr, "rank %d: %s: HDF5 failed to %s\n", a->rank, a->path, what);
    if (H5Eprint2(H5E_DEFAULT, stderr) < 0)
      fprintf(stderr, "rank %d: (the HDF5 error stack could not be printed)\n", a->rank);
  }
  return taso_error(TASO_ERR_LIB, "%s: HDF5 failed to %s", a->path, what);
}

/* Closes an identifier; a failure is reported only when nothing failed
 * before it, since the first failure is the one worth reading. */
taso_err_t artifact_release(const taso_artifact_t *a, hid_t id, herr_t (*close_fn)(hid_t),
                            taso_err_t err) {
  if (id < 0) return err;
  if (close_fn(id) < 0 && err == TASO_OK) return artifact_h5_fail(a, "close an object");
  return err;
}

/* Whether the file system holding path has no block left for us: the
 * likely reason of a write cut short without one. */
static bool disk_full(const char *path) {
  char dir[4096];
  struct statvfs fs;
  taso_path_folder(path, dir, sizeof dir);
  return statvfs(dir, &fs) == 0 && fs.f_bavail == 0;
}

void taso_path_folder(const char *path, char *dir, size_t len) {
  const char *slash = strrchr(path, '/');
  if (!slash)
    snprintf(dir, len, ".");
  else
    snprintf(dir, len, "%.*s", (int)(slash - path) + (slash == path), path);
}

/* A step's writes that failed on this rank (io_guard.h) make it fail with
 * the system's reason, whatever HDF5 made of it: HDF5 was told the writes
 * succeeded. */
static taso_err_t io_status(const taso_artifact_t *a, taso_err_t err) {
  char reason[160];
  if (!taso_io_guard_failed(a->fh, reason, sizeof reason)) return err;
  if (strcmp(reason, TASO_IO_GUARD_SHORT) == 0 && disk_full(a->path))
    snprintf(reason, sizeof reason, "%s", strerror(ENOSPC));
  if (err != TASO_OK && err != TASO_ERR_LIB) return err;
  return taso_error(TASO_ERR_IO, "%s: cannot write: %s", a->path, reason);
}

/* Every agreement among the ranks on a file includes the guard's verdict,
 * so that the ranks stop after the first collective step whose writes
 * failed anywhere: HDF5 reads back what it believes it wrote (a chunk to
 * modify, say), and a rank reading what never reached the disk would fail
 * alone inside HDF5, where the others wait for it. */
taso_err_t artifact_settle(const taso_artifact_t *a, taso_err_t err) {
  err = taso_agree(a->comm, io_status(a, err));
  /* Nothing more reaches the file: what it held at its last flush stays
   * readable (a stage's streamed rows). */
  if (err == TASO_ERR_IO) taso_io_guard_seal(a->fh);
  return err;
}

artifact_quiet_t artifact_quiet_begin(void) {
  artifact_quiet_t q = {.fn = NULL, .data = NULL, .active = false};
  /* If this fails the stack is merely printed twice; no reason to stop. */
  if (H5Eget_auto2(H5E_DEFAULT, &q.fn, &q.data) >= 0 && H5Eset_auto2(H5E_DEFAULT, NULL, NULL) >= 0)
    q.active = true;
  return q;
}

void artifact_quiet_end(const artifact_quiet_t *q) {
  if (q->active && H5Eset_auto2(H5E_DEFAULT, q->fn, q->data) < 0)
    fprintf(stderr, "warning: HDF5's automatic error printing could not be restored\n");
}

/* ------------------------------------------------------------------------ */
/* Attributes                                                               */
/* ------------------------------------------------------------------------ */

/* Writes a scalar attribute of loc (the file, or one of its datasets),
 * replacing one of the same name. Collective: every rank passes the same
 * value. */
static taso_err_t put_attr_at(const taso_artifact_t *a, hid_t loc, const char *name, hid_t type,
                              const void *value) {
  taso_err_t err = TASO_OK;
  hid_t space = H5I_INVALID_HID, attr = H5I_INVALID_HID;
  htri_t exists = H5Aexists(loc, name);
  if (exists < 0) return artifact_h5_fail(a, "look up attribute '%s'", name);
  if (exists > 0 && H5Adelete(loc, name) < 0)
    return artifact_h5_fail(a, "replace attribute '%s'", name);
  if ((space = H5Screate(H5S_SCALAR)) < 0) {
    err = artifact_h5_fail(a, "create a scalar dataspace");
    goto done;
  }
  if ((attr = H5Acreate2(loc, name, type, space, H5P_DEFAULT, H5P_DEFAULT)) < 0) {
    err = artifact_h5_fail(a, "create attribute '%s'", name);
    goto done;
  }
  if (H5Awrite(attr, type, value) < 0) err = artifact_h5_fail(a, "write attribute '%s'", name);
done:
  err = artifact_release(a, attr, H5Aclose, err);
  return artifact_release(a, space, H5Sclose, err);
}

/* A scalar root attribute. */
static taso_err_t put_attr(const taso_artifact_t *a, const char *name, hid_t type,
                           const void *value) {
  return put_attr_at(a, a->file, name, type, value);
}

/* A fixed-length string, so that h5dump and h5py show it as plain text. */
taso_err_t artifact_put_string_at(const taso_artifact_t *a, hid_t loc, const char *name,
                                  const char *value) {
  taso_err_t err = TASO_OK;
  const char *text = value ? value : "";
  hid_t type = H5Tcopy(H5T_C_S1);
  if (type < 0 || H5Tset_size(type, strlen(text) + 1) < 0 ||
      H5Tset_strpad(type, H5T_STR_NULLTERM) < 0 || H5Tset_cset(type, H5T_CSET_UTF8) < 0)
    err = artifact_h5_fail(a, "create the string type of attribute '%s'", name);
  else
    err = put_attr_at(a, loc, name, type, text);
  return artifact_release(a, type, H5Tclose, err);
}

static taso_err_t put_string(const taso_artifact_t *a, const char *name, const char *value) {
  return artifact_put_string_at(a, a->file, name, value);
}

/* Opens a root attribute of loc, or gives TASO_ERR_FORMAT naming it. */
static taso_err_t open_attr(const taso_artifact_t *a, hid_t loc, const char *name, hid_t *attr) {
  htri_t exists = H5Aexists(loc, name);
  if (exists < 0) return artifact_h5_fail(a, "look up attribute '%s'", name);
  if (exists == 0) return taso_error(TASO_ERR_FORMAT, "%s: no attribute '%s'", a->path, name);
  if ((*attr = H5Aopen(loc, name, H5P_DEFAULT)) < 0)
    return artifact_h5_fail(a, "open attribute '%s'", name);
  return TASO_OK;
}

/* Reads a string attribute of loc (the open file, or the probe's serial
 * handle). Variable-length strings are read too, so a file whose attributes
 * were rewritten with h5py still opens. */
taso_err_t artifact_get_string(const taso_artifact_t *a, hid_t loc, const char *name,
                               char **value) {
  taso_err_t err;
  hid_t attr = H5I_INVALID_HID, ftype = H5I_INVALID_HID, mtype = H5I_INVALID_HID;
  H5T_class_t cls;
  H5T_cset_t cset;
  htri_t varlen;
  size_t size;
  char *text = NULL;
  *value = NULL;
  if ((err = open_attr(a, loc, name, &attr)) != TASO_OK) return err;
  if ((ftype = H5Aget_type(attr)) < 0 || (cls = H5Tget_class(ftype)) == H5T_NO_CLASS) {
    err = artifact_h5_fail(a, "get the type of attribute '%s'", name);
    goto done;
  }
  if (cls != H5T_STRING) {
    err = taso_error(TASO_ERR_FORMAT, "%s: attribute '%s' is not a string", a->path, name);
    goto done;
  }
  if ((varlen = H5Tis_variable_str(ftype)) < 0 || (cset = H5Tget_cset(ftype)) < 0 ||
      (size = H5Tget_size(ftype)) == 0) {
    err = artifact_h5_fail(a, "inspect the string type of attribute '%s'", name);
    goto done;
  }
  /* The memory type takes the file's character set: HDF5 converts strings
   * only between equal ones. */
  if ((mtype = H5Tcopy(H5T_C_S1)) < 0 || H5Tset_cset(mtype, cset) < 0 ||
      H5Tset_size(mtype, varlen ? H5T_VARIABLE : size + 1) < 0 ||
      (!varlen && H5Tset_strpad(mtype, H5T_STR_NULLTERM) < 0)) {
    err = artifact_h5_fail(a, "create a string type for attribute '%s'", name);
    goto done;
  }
  if (varlen) {
    char *heap = NULL;
    if (H5Aread(attr, mtype, &heap) < 0) {
      err = artifact_h5_fail(a, "read attribute '%s'", name);
      goto done;
    }
    text = strdup(heap ? heap : "");
    if (heap && H5free_memory(heap) < 0) {
      err = artifact_h5_fail(a, "free the string of attribute '%s'", name);
      goto done;
    }
  } else {
    if ((text = malloc(size + 1)) != NULL) {
      if (H5Aread(attr, mtype, text) < 0) {
        err = artifact_h5_fail(a, "read attribute '%s'", name);
        goto done;
      }
      text[size] = '\0';
    }
  }
  if (!text) {
    err = taso_error(TASO_ERR_NOMEM, "%s: no memory for attribute '%s'", a->path, name);
    goto done;
  }
  *value = text;
  text = NULL;
done:
  free(text);
  err = artifact_release(a, mtype, H5Tclose, err);
  err = artifact_release(a, ftype, H5Tclose, err);
  return artifact_release(a, attr, H5Aclose, err);
}

/* Reads an integer attribute of loc as int64. */
static taso_err_t get_int(const taso_artifact_t *a, hid_t loc, const char *name, int64_t *value) {
  taso_err_t err;
  hid_t attr = H5I_INVALID_HID, ftype = H5I_INVALID_HID, space = H5I_INVALID_HID;
  H5T_class_t cls;
  hssize_t points;
  if ((err = open_attr(a, loc, name, &attr)) != TASO_OK) return err;
  if ((ftype = H5Aget_type(attr)) < 0 || (cls = H5Tget_class(ftype)) == H5T_NO_CLASS ||
      (space = H5Aget_space(attr)) < 0 || (points = H5Sget_simple_extent_npoints(space)) < 0) {
    err = artifact_h5_fail(a, "inspect attribute '%s'", name);
    goto done;
  }
  if (cls != H5T_INTEGER || points != 1) {
    err = taso_error(TASO_ERR_FORMAT, "%s: attribute '%s' is not one integer", a->path, name);
    goto done;
  }
  if (H5Aread(attr, H5T_NATIVE_INT64, value) < 0)
    err = artifact_h5_fail(a, "read attribute '%s'", name);
done:
  err = artifact_release(a, space, H5Sclose, err);
  err = artifact_release(a, ftype, H5Tclose, err);
  return artifact_release(a, attr, H5Aclose, err);
}

/* ------------------------------------------------------------------------ */
/* Open, create, close                                                      */
/* ------------------------------------------------------------------------ */

static void artifact_free(taso_artifact_t *a) {
  if (!a) return;
  /* Only reached on paths that already failed or closed cleanly. */
  artifact_release(a, a->xfer, H5Pclose, TASO_ERR_LIB);
  artifact_release(a, a->file, H5Fclose, TASO_ERR_LIB);
  taso_io_guard_forget(a->fh);
  if (a->comm != MPI_COMM_NULL) MPI_Comm_free(&a->comm);
  free(a->path);
  free(a);
}

/* Allocates the handle and its own communicator. Collective over comm. */
static taso_err_t artifact_new(MPI_Comm comm, const char *path, taso_artifact_t **out) {
  taso_err_t err = TASO_OK;
  taso_artifact_t *a = NULL;
  if (!path || !*path || !out)
    err = taso_error(TASO_ERR_ARG, "artifact: no file path or no handle to fill");
  else if (!(a = calloc(1, sizeof *a)) || !(a->path = strdup(path)))
    err = taso_error(TASO_ERR_NOMEM, "%s: no memory for the artifact handle", path);
  if ((err = taso_agree(comm, err)) != TASO_OK) {
    if (a) free(a->path);
    free(a);
    return err;
  }
  MPI_Comm_dup(comm, &a->comm);
  MPI_Comm_rank(a->comm, &a->rank);
  MPI_Comm_size(a->comm, &a->size);
  a->file = H5I_INVALID_HID;
  a->xfer = H5I_INVALID_HID;
  a->fh = MPI_FILE_NULL;
  *out = a;
  return TASO_OK;
}

/* The MPI-IO handle under the open file, under which io_guard records a
 * failed write. */
static void find_handle(taso_artifact_t *a) {
  void *h = NULL;
  a->fh = MPI_FILE_NULL;
  if (H5Fget_vfd_handle(a->file, H5P_DEFAULT, &h) >= 0 && h) a->fh = *(MPI_File *)h;
}

/* The collective transfer list; local, so it is made before the file is
 * opened and a failure cannot leave some ranks holding the file. */
static taso_err_t make_xfer(taso_artifact_t *a) {
  if ((a->xfer = H5Pcreate(H5P_DATASET_XFER)) < 0 ||
      H5Pset_dxpl_mpio(a->xfer, H5FD_MPIO_COLLECTIVE) < 0)
    return artifact_h5_fail(a, "create a collective transfer property list");
  return TASO_OK;
}

static taso_err_t make_fapl(const taso_artifact_t *a, hid_t *fapl) {
  /* The 1.8 format at both ends: attributes too large for an object header
   * (a long job file) go to dense storage, and any HDF5 since 1.8 reads it. */
  if ((*fapl = H5Pcreate(H5P_FILE_ACCESS)) < 0 ||
      H5Pset_fapl_mpio(*fapl, a->comm, MPI_INFO_NULL) < 0 ||
      H5Pset_libver_bounds(*fapl, H5F_LIBVER_V18, H5F_LIBVER_V18) < 0)
    return artifact_h5_fail(a, "create an MPI-IO file access property list");
  return TASO_OK;
}

/* Writes the kind and the provenance. Collective. */
static taso_err_t write_header(taso_artifact_t *a, const char *kind,
                               const taso_provenance_t *prov) {
  taso_err_t err = TASO_OK;
  char start[32];
  int32_t format = TASO_ARTIFACT_FORMAT, ranks = prov->ranks, threads = prov->threads;
  uint64_t seed = prov->seed;
  /* Attribute values must be equal on every rank, and clocks read on
   * different ranks are not: rank 0's time is the file's. */
  if (a->rank == 0) {
    if (prov->start_time[0])
      snprintf(start, sizeof start, "%s", prov->start_time);
    else
      taso_now_iso8601(start);
  }
  MPI_Bcast(start, (int)sizeof start, MPI_CHAR, 0, a->comm);
  if ((err = put_string(a, "kind", kind)) != TASO_OK ||
      (err = put_attr(a, "format_version", H5T_NATIVE_INT32, &format)) != TASO_OK ||
      (err = put_string(a, "tool", prov->tool)) != TASO_OK ||
      (err = put_string(a, "version", taso_version())) != TASO_OK ||
      (err = put_string(a, "git_commit", taso_git_commit())) != TASO_OK ||
      (err = put_string(a, "job_path", prov->job_path)) != TASO_OK ||
      (err = put_string(a, "job_text", prov->job_text)) != TASO_OK ||
      (err = put_attr(a, "ranks", H5T_NATIVE_INT32, &ranks)) != TASO_OK ||
      (err = put_attr(a, "threads", H5T_NATIVE_INT32, &threads)) != TASO_OK ||
      (err = put_attr(a, "seed", H5T_NATIVE_UINT64, &seed)) != TASO_OK ||
      (err = put_string(a, "start_time", start)) != TASO_OK)
    return err;
  return TASO_OK;
}

taso_err_t taso_artifact_create(MPI_Comm comm, const char *path, const char *kind,
                                const taso_provenance_t *prov, taso_artifact_t **out) {
  artifact_quiet_t q = artifact_quiet_begin();
  taso_artifact_t *a = NULL;
  hid_t fapl = H5I_INVALID_HID;
  taso_err_t err;
  if (out) *out = NULL;
  err = artifact_new(comm, path, &a);
  if (err != TASO_OK) goto done;
  if (!kind || !prov) err = taso_error(TASO_ERR_ARG, "%s: no artifact kind or provenance", path);
  if (err == TASO_OK) err = make_xfer(a);
  if (err == TASO_OK) err = make_fapl(a, &fapl);
  if ((err = artifact_settle(a, err)) != TASO_OK) goto done;
  errno = 0;
  if ((a->file = H5Fcreate(path, H5F_ACC_TRUNC, H5P_DEFAULT, fapl)) < 0) {
    /* Usually a missing folder or a permission, which the open left in
     * errno; the tools check both before they start. */
    int why = errno;
    if (a->rank == 0 && debugging()) {
      fprintf(stderr, "%s: HDF5 could not create the file:\n", path);
      if (H5Eprint2(H5E_DEFAULT, stderr) < 0) fprintf(stderr, "(no HDF5 error stack)\n");
    }
    err = taso_error(TASO_ERR_IO, "%s: cannot create the file: %s", path,
                     why ? strerror(why) : "HDF5 gave no reason (--debug prints its error stack)");
  }
  if ((err = artifact_settle(a, err)) != TASO_OK) goto done;
  a->writable = true;
  find_handle(a);
  err = artifact_settle(a, write_header(a, kind, prov));
done:
  err = artifact_release(a, fapl, H5Pclose, err);
  if (err == TASO_OK) {
    *out = a;
  } else if (a) {
    /* The attributes may be half written; the file is closed as it is. */
    artifact_free(a);
  }
  artifact_quiet_end(&q);
  return err;
}

/* Rank 0 decides alone, with the serial driver, whether the file is a
 * readable artifact of the right kind: a decision taken on one rank and
 * broadcast cannot differ between ranks, and a collective open of a
 * truncated or foreign file is where parallel HDF5 is least predictable. */
static taso_err_t probe(const taso_artifact_t *a, const char *kind, char **kind_found) {
  struct stat st;
  taso_err_t err = TASO_OK;
  hid_t fapl = H5I_INVALID_HID, file = H5I_INVALID_HID;
  char *found = NULL;
  int64_t version = 0;
  htri_t has_kind;
  if (stat(a->path, &st) != 0) {
    if (errno == ENOENT || errno == ENOTDIR)
      return taso_error(TASO_ERR_IO, "%s: no such file", a->path);
    return taso_error(TASO_ERR_IO, "%s: %s", a->path, strerror(errno));
  }
  if (S_ISDIR(st.st_mode)) return taso_error(TASO_ERR_IO, "%s: is a directory", a->path);
  if (access(a->path, R_OK) != 0)
    return taso_error(TASO_ERR_IO, "%s: %s", a->path, strerror(errno));
  if ((fapl = H5Pcreate(H5P_FILE_ACCESS)) < 0) {
    err = artifact_h5_fail(a, "create a file access property list");
    goto done;
  }
#if (H5_VERS_MAJOR == 1 && H5_VERS_MINOR == 10 && H5_VERS_RELEASE >= 7) || H5_VERSION_GE(1, 12, 1)
  /* A look that is over at once needs no lock, and on a parallel file system
   * mounted without flock() the lock would fail as if the file were bad. */
  if (H5Pset_file_locking(fapl, false, true) < 0) {
    err = artifact_h5_fail(a, "turn off file locking for a read-only look");
    goto done;
  }
#endif
  if ((file = H5Fopen(a->path, H5F_ACC_RDONLY, fapl)) < 0) {
    err =
        taso_error(TASO_ERR_FORMAT, "%s: not a readable HDF5 file (truncated or foreign)", a->path);
    goto done;
  }
  if ((has_kind = H5Aexists(file, "kind")) < 0) {
    err = artifact_h5_fail(a, "look up attribute 'kind'");
  } else if (has_kind == 0) {
    err = taso_error(TASO_ERR_FORMAT,
                     "%s: an HDF5 file but not a taso artifact (no 'kind' attribute%s%s%s)",
                     a->path, kind ? "; expected '" : "", kind ? kind : "", kind ? "'" : "");
  } else if ((err = artifact_get_string(a, file, "kind", &found)) == TASO_OK) {
    if (kind && strcmp(found, kind) != 0)
      err = taso_error(TASO_ERR_FORMAT, "%s: a '%s' file, expected '%s'", a->path, found, kind);
    else if ((err = get_int(a, file, "format_version", &version)) == TASO_OK &&
             version != TASO_ARTIFACT_FORMAT)
      err = taso_error(TASO_ERR_FORMAT, "%s: format version %lld, this build reads version %d",
                       a->path, (long long)version, TASO_ARTIFACT_FORMAT);
    if (err == TASO_OK && kind_found) {
      *kind_found = found;
      found = NULL;
    }
  }
done:
  free(found);
  err = artifact_release(a, file, H5Fclose, err);
  return artifact_release(a, fapl, H5Pclose, err);
}

static taso_err_t open_artifact(MPI_Comm comm, const char *path, const char *kind, bool rw,
                                taso_artifact_t **out) {
  artifact_quiet_t q = artifact_quiet_begin();
  taso_artifact_t *a = NULL;
  hid_t fapl = H5I_INVALID_HID;
  taso_err_t err;
  if (out) *out = NULL;
  err = artifact_new(comm, path, &a);
  if (err != TASO_OK) goto done;
  if ((err = artifact_settle(a, a->rank == 0 ? probe(a, kind, NULL) : TASO_OK)) != TASO_OK)
    goto done;
  err = make_xfer(a);
  if (err == TASO_OK) err = make_fapl(a, &fapl);
  if ((err = artifact_settle(a, err)) != TASO_OK) goto done;
  if ((a->file = H5Fopen(path, rw ? H5F_ACC_RDWR : H5F_ACC_RDONLY, fapl)) < 0)
    err = artifact_h5_fail(a, "open the file on every rank");
  else
    find_handle(a);
  err = artifact_settle(a, err);
  a->writable = rw && err == TASO_OK;
done:
  err = artifact_release(a, fapl, H5Pclose, err);
  if (err == TASO_OK)
    *out = a;
  else
    artifact_free(a);
  artifact_quiet_end(&q);
  return err;
}

taso_err_t taso_artifact_identify(const char *path, char **kind) {
  artifact_quiet_t q = artifact_quiet_begin();
  /* A handle of one's own, with no file and no communicator: probe needs
   * only the path and a rank for its messages. */
  taso_artifact_t a = {.comm = MPI_COMM_NULL,
                       .rank = 0,
                       .size = 1,
                       .path = (char *)path,
                       .file = H5I_INVALID_HID,
                       .xfer = H5I_INVALID_HID,
                       .fh = MPI_FILE_NULL};
  *kind = NULL;
  taso_err_t err = probe(&a, NULL, kind);
  artifact_quiet_end(&q);
  return err;
}

taso_err_t taso_artifact_open(MPI_Comm comm, const char *path, const char *kind,
                              taso_artifact_t **out) {
  return open_artifact(comm, path, kind, false, out);
}

taso_err_t taso_artifact_open_rw(MPI_Comm comm, const char *path, const char *kind,
                                 taso_artifact_t **out) {
  return open_artifact(comm, path, kind, true, out);
}

taso_err_t taso_artifact_close(taso_artifact_t *a) {
  artifact_quiet_t q;
  taso_err_t err = TASO_OK;
  if (!a) return TASO_OK;
  q = artifact_quiet_begin();
  if (a->writable) {
    char end[32];
    if (a->rank == 0) taso_now_iso8601(end);
    MPI_Bcast(end, (int)sizeof end, MPI_CHAR, 0, a->comm);
    err = artifact_settle(a, put_string(a, "end_time", end));
  }
  /* The file is closed even when end_time failed: what is written stays. */
  err = artifact_release(a, a->xfer, H5Pclose, err);
  a->xfer = H5I_INVALID_HID;
  err = artifact_release(a, a->file, H5Fclose, err);
  a->file = H5I_INVALID_HID;
  /* A delayed write fails at the close at the latest (HDF5 writes its
   * metadata cache there, network file systems report a full disk there). */
  err = artifact_settle(a, err);
  artifact_free(a);
  artifact_quiet_end(&q);
  return err;
}

/* A NULL handle is the caller's bug, but it should read as one. */
taso_err_t artifact_no_handle(void) {
  return taso_error(TASO_ERR_ARG, "artifact: no handle (create or open one first)");
}

/* ------------------------------------------------------------------------ */
/* Counts and strings                                                       */
/* ------------------------------------------------------------------------ */

/* One numeric root attribute of type type at value. */
static taso_err_t set_number(taso_artifact_t *a, const char *name, hid_t type, const void *value) {
  if (!a) return artifact_no_handle();
  artifact_quiet_t q = artifact_quiet_begin();
  taso_err_t err;
  if (!a->writable)
    err = taso_error(TASO_ERR_ARG, "%s: opened read-only; cannot set '%s'", a->path, name);
  else
    err = artifact_settle(a, put_attr(a, name, type, value));
  artifact_quiet_end(&q);
  return err;
}

taso_err_t taso_artifact_set_count(taso_artifact_t *a, const char *name, int64_t value) {
  return set_number(a, name, H5T_NATIVE_INT64, &value);
}

taso_err_t taso_artifact_set_real(taso_artifact_t *a, const char *name, double value) {
  return set_number(a, name, H5T_NATIVE_DOUBLE, &value);
}

taso_err_t taso_artifact_set_string(taso_artifact_t *a, const char *name, const char *value) {
  if (!a) return artifact_no_handle();
  artifact_quiet_t q = artifact_quiet_begin();
  taso_err_t err;
  if (!a->writable)
    err = taso_error(TASO_ERR_ARG, "%s: opened read-only; cannot set '%s'", a->path, name);
  else
    err = artifact_settle(a, put_string(a, name, value));
  artifact_quiet_end(&q);
  return err;
}

/* Reads a floating-point attribute as a double. */
static taso_err_t get_real(const taso_artifact_t *a, const char *name, double *value) {
  taso_err_t err;
  hid_t attr = H5I_INVALID_HID, ftype = H5I_INVALID_HID;
  if ((err = open_attr(a, a->file, name, &attr)) != TASO_OK) return err;
  if ((ftype = H5Aget_type(attr)) < 0) {
    err = artifact_h5_fail(a, "inspect attribute '%s'", name);
  } else if (H5Tget_class(ftype) != H5T_FLOAT) {
    err = taso_error(TASO_ERR_FORMAT, "%s: attribute '%s' is not a number", a->path, name);
  } else if (H5Aread(attr, H5T_NATIVE_DOUBLE, value) < 0) {
    err = artifact_h5_fail(a, "read attribute '%s'", name);
  }
  err = artifact_release(a, ftype, H5Tclose, err);
  return artifact_release(a, attr, H5Aclose, err);
}

taso_err_t taso_artifact_get_real(taso_artifact_t *a, const char *name, double *value) {
  if (!a) return artifact_no_handle();
  artifact_quiet_t q = artifact_quiet_begin();
  taso_err_t err = get_real(a, name, value);
  artifact_quiet_end(&q);
  return err;
}

/* Attribute reads are not collective, so the getters do not taso_agree(): any
 * subset of ranks may call them. */
taso_err_t taso_artifact_get_count(taso_artifact_t *a, const char *name, int64_t *value) {
  if (!a) return artifact_no_handle();
  artifact_quiet_t q = artifact_quiet_begin();
  taso_err_t err = get_int(a, a->file, name, value);
  artifact_quiet_end(&q);
  return err;
}

taso_err_t taso_artifact_get_string(taso_artifact_t *a, const char *name, char **value) {
  if (!a) return artifact_no_handle();
  artifact_quiet_t q = artifact_quiet_begin();
  taso_err_t err = artifact_get_string(a, a->file, name, value);
  artifact_quiet_end(&q);
  return err;
}
