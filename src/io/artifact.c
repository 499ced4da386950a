/*
 * HDF5 artifact I/O (see artifact.h).
 *
 * The theme of this file is that every rank takes the same road. Each
 * collective step ends in taso_agree(), which gives every rank the code and the
 * message of the lowest failing rank, so no rank gives up while another goes
 * on into the next collective call and waits there for ever. Steps are split
 * so that nothing that can fail on one rank alone (an allocation, a local
 * property list) sits between two collective HDF5 calls without a taso_agree()
 * in between.
 *
 * HDF5's automatic error printing is off inside the public functions: an
 * expected failure (a missing, truncated or foreign file) becomes one clear
 * message, and an unexpected one prints the library's error stack at the
 * point of failure, before any later HDF5 call clears it.
 *
 * Records are written with the file type equal to the memory type. Parallel
 * HDF5 cannot write a filtered dataset independently, and a type conversion
 * would make it fall back to independent I/O, so the record structs are laid
 * out without padding (or zeroed before filling) and stored as they are.
 */
#define _POSIX_C_SOURCE 200809L

#include "artifact.h"

#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <time.h>
#include <unistd.h>

#include <hdf5.h>

#include "collective.h"
#include "io_guard.h"
#include "version.h"

#define DEFLATE_LEVEL 6
#define CHUNK_BYTES 65536 /* per chunk: deflate does well, an append rewrites little */

struct taso_artifact {
  MPI_Comm comm; /* a duplicate, so our collectives never match the caller's */
  int rank;      /* this rank in comm */
  int size;      /* ranks in comm */
  char *path;    /* the file, as given; every message names it */
  hid_t file;    /* the open file */
  hid_t xfer;    /* collective transfer property list for all dataset I/O */
  MPI_File fh;   /* HDF5's MPI-IO handle of the file, for io_guard's records */
  bool writable; /* created here: may be written, and end_time is due at close */
};

/* One row of /inputs. */
typedef struct {
  char name[TASO_NAME_LEN];    /* NUL-terminated, NUL-padded */
  int32_t rank;                /* tensor rank, 0 to 4 */
  int32_t dims[TASO_MAX_RANK]; /* sizes; 0 past rank */
} input_rec_t;

/* One row of /graphs/index: where one graph's records lie in the flat sets.
 * The 64-bit fields come first so that the struct has no padding. */
typedef struct {
  int64_t node_begin;   /* first row in /graphs/nodes */
  int64_t output_begin; /* first row in /graphs/outputs */
  int32_t node_count;   /* its rows in /graphs/nodes */
  int32_t output_count; /* its rows in /graphs/outputs */
} index_rec_t;

/* Padding would reach the file as whatever bytes memory held, and the same
 * set must give the same bytes. taso_subst_t does have padding; its rows are
 * copied into zeroed memory instead. */
_Static_assert(sizeof(taso_node_t) == 30 * sizeof(int32_t), "taso_node_t has padding");
_Static_assert(sizeof(index_rec_t) == 2 * sizeof(int64_t) + 2 * sizeof(int32_t),
               "index_rec_t has padding");
_Static_assert(sizeof(input_rec_t) == TASO_NAME_LEN + (1 + TASO_MAX_RANK) * sizeof(int32_t),
               "input_rec_t has padding");

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
static taso_err_t h5_fail(const taso_artifact_t *a, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
static taso_err_t h5_fail(const taso_artifact_t *a, const char *fmt, ...) {
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
static taso_err_t release(const taso_artifact_t *a, hid_t id, herr_t (*close_fn)(hid_t),
                          taso_err_t err) {
  if (id < 0) return err;
  if (close_fn(id) < 0 && err == TASO_OK) return h5_fail(a, "close an object");
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
static taso_err_t settle(const taso_artifact_t *a, taso_err_t err) {
  err = taso_agree(a->comm, io_status(a, err));
  /* Nothing more reaches the file: what it held at its last flush stays
   * readable (a stage's streamed rows). */
  if (err == TASO_ERR_IO) taso_io_guard_seal(a->fh);
  return err;
}

/* HDF5's automatic error printing, saved on entry to a public function and
 * restored on the way out. */
typedef struct {
  H5E_auto2_t fn; /* the caller's printer */
  void *data;     /* its argument */
  bool active;    /* printing was turned off and must be restored */
} quiet_t;

static quiet_t quiet_begin(void) {
  quiet_t q = {.fn = NULL, .data = NULL, .active = false};
  /* If this fails the stack is merely printed twice; no reason to stop. */
  if (H5Eget_auto2(H5E_DEFAULT, &q.fn, &q.data) >= 0 && H5Eset_auto2(H5E_DEFAULT, NULL, NULL) >= 0)
    q.active = true;
  return q;
}

static void quiet_end(const quiet_t *q) {
  if (q->active && H5Eset_auto2(H5E_DEFAULT, q->fn, q->data) < 0)
    fprintf(stderr, "warning: HDF5's automatic error printing could not be restored\n");
}

/* ------------------------------------------------------------------------ */
/* Record types: each one built here and nowhere else                       */
/* ------------------------------------------------------------------------ */

/* One member of a compound record type. */
typedef struct {
  const char *name; /* field name in the file */
  size_t offset;    /* offsetof in the record struct */
  hid_t base;       /* element type */
  hsize_t n;        /* 1 for a scalar, else an array of n */
} field_t;

/* Builds a compound type of `size` bytes from its fields. */
static taso_err_t build_type(const taso_artifact_t *a, const char *what, size_t size,
                             const field_t *f, int nf, hid_t *out) {
  taso_err_t err = TASO_OK;
  hid_t t = H5Tcreate(H5T_COMPOUND, size);
  if (t < 0) return h5_fail(a, "create the %s record type", what);
  for (int i = 0; i < nf && err == TASO_OK; i++) {
    hid_t array = H5I_INVALID_HID;
    if (f[i].n > 1 && (array = H5Tarray_create2(f[i].base, 1, &f[i].n)) < 0)
      err = h5_fail(a, "create the array type of %s field '%s'", what, f[i].name);
    else if (H5Tinsert(t, f[i].name, f[i].offset, f[i].n > 1 ? array : f[i].base) < 0)
      err = h5_fail(a, "add field '%s' to the %s record type", f[i].name, what);
    err = release(a, array, H5Tclose, err);
  }
  if (err != TASO_OK) return release(a, t, H5Tclose, err);
  *out = t;
  return TASO_OK;
}

#define FIELDS(f) f, (int)(sizeof f / sizeof *f)

static taso_err_t input_type(const taso_artifact_t *a, hid_t *out) {
  taso_err_t err;
  hid_t name = H5Tcopy(H5T_C_S1);
  if (name < 0 || H5Tset_size(name, TASO_NAME_LEN) < 0 ||
      H5Tset_strpad(name, H5T_STR_NULLTERM) < 0) {
    err = h5_fail(a, "create the input-name string type");
  } else {
    const field_t f[] = {
        {"name", offsetof(input_rec_t, name), name, 1},
        {"rank", offsetof(input_rec_t, rank), H5T_NATIVE_INT32, 1},
        {"dims", offsetof(input_rec_t, dims), H5T_NATIVE_INT32, TASO_MAX_RANK},
    };
    err = build_type(a, "input", sizeof(input_rec_t), FIELDS(f), out);
  }
  return release(a, name, H5Tclose, err);
}

static taso_err_t index_type(const taso_artifact_t *a, hid_t *out) {
  /* Listed in reading order; the offsets keep the struct unpadded. */
  const field_t f[] = {
      {"node_begin", offsetof(index_rec_t, node_begin), H5T_NATIVE_INT64, 1},
      {"node_count", offsetof(index_rec_t, node_count), H5T_NATIVE_INT32, 1},
      {"output_begin", offsetof(index_rec_t, output_begin), H5T_NATIVE_INT64, 1},
      {"output_count", offsetof(index_rec_t, output_count), H5T_NATIVE_INT32, 1},
  };
  return build_type(a, "graph index", sizeof(index_rec_t), FIELDS(f), out);
}

static taso_err_t node_type(const taso_artifact_t *a, hid_t *out) {
  const hid_t i32 = H5T_NATIVE_INT32;
  const field_t f[] = {
      {"kind", offsetof(taso_node_t, kind), i32, 1},
      {"axis", offsetof(taso_node_t, p.axis), i32, 1},
      {"stride", offsetof(taso_node_t, p.stride), i32, 2},
      {"pad", offsetof(taso_node_t, p.pad), i32, 1},
      {"act", offsetof(taso_node_t, p.act), i32, 1},
      {"kernel", offsetof(taso_node_t, p.kernel), i32, 2},
      {"layout", offsetof(taso_node_t, p.layout), i32, 1},
      {"rank", offsetof(taso_node_t, p.rank), i32, 1},
      {"shape", offsetof(taso_node_t, p.shape), i32, 4},
      {"input", offsetof(taso_node_t, p.input), i32, 1},
      {"pads", offsetof(taso_node_t, p.pads), i32, 4},
      {"perm", offsetof(taso_node_t, p.perm), i32, 4},
      {"bound", offsetof(taso_node_t, p.bound), H5T_NATIVE_FLOAT, 2},
      {"at", offsetof(taso_node_t, p.at), i32, 1},
      {"exclude_pad", offsetof(taso_node_t, p.exclude_pad), i32, 1},
      {"in", offsetof(taso_node_t, in), i32, 3},
  };
  return build_type(a, "graph node", sizeof(taso_node_t), FIELDS(f), out);
}

_Static_assert(sizeof(taso_decision_t) ==
                   2 * sizeof(int64_t) + 2 * sizeof(int32_t) + TASO_REASON_LEN,
               "taso_decision_t has padding");

/* The pad_ member stays out of the file; rows are copied into zeroed
 * memory before writing, so its bytes are always 0 there. */
static taso_err_t decision_type(const taso_artifact_t *a, hid_t *out) {
  taso_err_t err;
  hid_t reason = H5Tcopy(H5T_C_S1);
  if (reason < 0 || H5Tset_size(reason, TASO_REASON_LEN) < 0 ||
      H5Tset_strpad(reason, H5T_STR_NULLTERM) < 0) {
    err = h5_fail(a, "create the reason string type");
  } else {
    const field_t f[] = {
        {"row", offsetof(taso_decision_t, row), H5T_NATIVE_INT64, 1},
        {"seconds", offsetof(taso_decision_t, seconds), H5T_NATIVE_DOUBLE, 1},
        {"verdict", offsetof(taso_decision_t, verdict), H5T_NATIVE_INT32, 1},
        {"reason", offsetof(taso_decision_t, reason), reason, 1},
    };
    err = build_type(a, "decision", sizeof(taso_decision_t), FIELDS(f), out);
  }
  return release(a, reason, H5Tclose, err);
}

static taso_err_t subst_type(const taso_artifact_t *a, hid_t *out) {
  const field_t f[] = {
      {"src", offsetof(taso_subst_t, src), H5T_NATIVE_INT64, 1},
      {"dst", offsetof(taso_subst_t, dst), H5T_NATIVE_INT64, 1},
      {"verdict", offsetof(taso_subst_t, verdict), H5T_NATIVE_INT32, 1},
      {"seconds", offsetof(taso_subst_t, seconds), H5T_NATIVE_DOUBLE, 1},
  };
  return build_type(a, "substitution", sizeof(taso_subst_t), FIELDS(f), out);
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
  if (exists < 0) return h5_fail(a, "look up attribute '%s'", name);
  if (exists > 0 && H5Adelete(loc, name) < 0) return h5_fail(a, "replace attribute '%s'", name);
  if ((space = H5Screate(H5S_SCALAR)) < 0) {
    err = h5_fail(a, "create a scalar dataspace");
    goto done;
  }
  if ((attr = H5Acreate2(loc, name, type, space, H5P_DEFAULT, H5P_DEFAULT)) < 0) {
    err = h5_fail(a, "create attribute '%s'", name);
    goto done;
  }
  if (H5Awrite(attr, type, value) < 0) err = h5_fail(a, "write attribute '%s'", name);
done:
  err = release(a, attr, H5Aclose, err);
  return release(a, space, H5Sclose, err);
}

/* A scalar root attribute. */
static taso_err_t put_attr(const taso_artifact_t *a, const char *name, hid_t type,
                           const void *value) {
  return put_attr_at(a, a->file, name, type, value);
}

/* A fixed-length string, so that h5dump and h5py show it as plain text. */
static taso_err_t put_string_at(const taso_artifact_t *a, hid_t loc, const char *name,
                                const char *value) {
  taso_err_t err = TASO_OK;
  const char *text = value ? value : "";
  hid_t type = H5Tcopy(H5T_C_S1);
  if (type < 0 || H5Tset_size(type, strlen(text) + 1) < 0 ||
      H5Tset_strpad(type, H5T_STR_NULLTERM) < 0 || H5Tset_cset(type, H5T_CSET_UTF8) < 0)
    err = h5_fail(a, "create the string type of attribute '%s'", name);
  else
    err = put_attr_at(a, loc, name, type, text);
  return release(a, type, H5Tclose, err);
}

static taso_err_t put_string(const taso_artifact_t *a, const char *name, const char *value) {
  return put_string_at(a, a->file, name, value);
}

/* Opens a root attribute of loc, or gives TASO_ERR_FORMAT naming it. */
static taso_err_t open_attr(const taso_artifact_t *a, hid_t loc, const char *name, hid_t *attr) {
  htri_t exists = H5Aexists(loc, name);
  if (exists < 0) return h5_fail(a, "look up attribute '%s'", name);
  if (exists == 0) return taso_error(TASO_ERR_FORMAT, "%s: no attribute '%s'", a->path, name);
  if ((*attr = H5Aopen(loc, name, H5P_DEFAULT)) < 0) return h5_fail(a, "open attribute '%s'", name);
  return TASO_OK;
}

/* Reads a string attribute of loc (the open file, or the probe's serial
 * handle). Variable-length strings are read too, so a file whose attributes
 * were rewritten with h5py still opens. */
static taso_err_t get_string(const taso_artifact_t *a, hid_t loc, const char *name, char **value) {
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
    err = h5_fail(a, "get the type of attribute '%s'", name);
    goto done;
  }
  if (cls != H5T_STRING) {
    err = taso_error(TASO_ERR_FORMAT, "%s: attribute '%s' is not a string", a->path, name);
    goto done;
  }
  if ((varlen = H5Tis_variable_str(ftype)) < 0 || (cset = H5Tget_cset(ftype)) < 0 ||
      (size = H5Tget_size(ftype)) == 0) {
    err = h5_fail(a, "inspect the string type of attribute '%s'", name);
    goto done;
  }
  /* The memory type takes the file's character set: HDF5 converts strings
   * only between equal ones. */
  if ((mtype = H5Tcopy(H5T_C_S1)) < 0 || H5Tset_cset(mtype, cset) < 0 ||
      H5Tset_size(mtype, varlen ? H5T_VARIABLE : size + 1) < 0 ||
      (!varlen && H5Tset_strpad(mtype, H5T_STR_NULLTERM) < 0)) {
    err = h5_fail(a, "create a string type for attribute '%s'", name);
    goto done;
  }
  if (varlen) {
    char *heap = NULL;
    if (H5Aread(attr, mtype, &heap) < 0) {
      err = h5_fail(a, "read attribute '%s'", name);
      goto done;
    }
    text = strdup(heap ? heap : "");
    if (heap && H5free_memory(heap) < 0) {
      err = h5_fail(a, "free the string of attribute '%s'", name);
      goto done;
    }
  } else {
    if ((text = malloc(size + 1)) != NULL) {
      if (H5Aread(attr, mtype, text) < 0) {
        err = h5_fail(a, "read attribute '%s'", name);
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
  err = release(a, mtype, H5Tclose, err);
  err = release(a, ftype, H5Tclose, err);
  return release(a, attr, H5Aclose, err);
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
    err = h5_fail(a, "inspect attribute '%s'", name);
    goto done;
  }
  if (cls != H5T_INTEGER || points != 1) {
    err = taso_error(TASO_ERR_FORMAT, "%s: attribute '%s' is not one integer", a->path, name);
    goto done;
  }
  if (H5Aread(attr, H5T_NATIVE_INT64, value) < 0) err = h5_fail(a, "read attribute '%s'", name);
done:
  err = release(a, space, H5Sclose, err);
  err = release(a, ftype, H5Tclose, err);
  return release(a, attr, H5Aclose, err);
}

/* ------------------------------------------------------------------------ */
/* Datasets                                                                 */
/* ------------------------------------------------------------------------ */

/* Whether every link of an absolute path exists: H5Lexists fails, rather
 * than answering no, when a group on the way is missing. */
static taso_err_t path_exists(const taso_artifact_t *a, const char *name, bool *found) {
  char prefix[64];
  size_t len = strlen(name);
  if (len >= sizeof prefix) return taso_error(TASO_ERR_ARG, "dataset name '%s' too long", name);
  *found = true;
  for (size_t i = 1; i <= len && *found; i++) {
    if (i < len && name[i] != '/') continue;
    memcpy(prefix, name, i);
    prefix[i] = '\0';
    htri_t e = H5Lexists(a->file, prefix, H5P_DEFAULT);
    if (e < 0) return h5_fail(a, "look up %s", prefix);
    *found = e > 0;
  }
  return TASO_OK;
}

/* Each rank's first row and the total over ranks, for k counts at once.
 * Offsets follow rank order, so the file does not depend on how the work
 * was divided. */
static void place(const taso_artifact_t *a, const int64_t *local, int64_t *offset, int64_t *total,
                  int k) {
  MPI_Exscan(local, offset, k, MPI_INT64_T, MPI_SUM, a->comm);
  if (a->rank == 0)
    for (int i = 0; i < k; i++)
      offset[i] = 0; /* MPI_Exscan leaves rank 0's undefined */
  MPI_Allreduce(local, total, k, MPI_INT64_T, MPI_SUM, a->comm);
}

/* Creates a chunked, compressed one-dimensional dataset of total rows that
 * can grow later (so 0 rows is a valid size). Collective. */
static taso_err_t create_dataset(const taso_artifact_t *a, const char *name, hid_t type,
                                 size_t rec_size, int64_t total, hid_t *dset) {
  taso_err_t err = TASO_OK;
  hsize_t dims = (hsize_t)total, maxdims = H5S_UNLIMITED;
  hsize_t chunk = CHUNK_BYTES / rec_size > 0 ? CHUNK_BYTES / rec_size : 1;
  hid_t space = H5I_INVALID_HID, dcpl = H5I_INVALID_HID;
  if ((space = H5Screate_simple(1, &dims, &maxdims)) < 0) {
    err = h5_fail(a, "create the dataspace of %s", name);
    goto done;
  }
  /* Every row is always written, so fill values would only cost a pass of
   * writes, and parallel HDF5 cannot write them to a filtered dataset. */
  if ((dcpl = H5Pcreate(H5P_DATASET_CREATE)) < 0 || H5Pset_chunk(dcpl, 1, &chunk) < 0 ||
      H5Pset_deflate(dcpl, DEFLATE_LEVEL) < 0 || H5Pset_fill_time(dcpl, H5D_FILL_TIME_NEVER) < 0) {
    err = h5_fail(a, "set up chunking and compression for %s", name);
    goto done;
  }
  if ((*dset = H5Dcreate2(a->file, name, type, space, H5P_DEFAULT, dcpl, H5P_DEFAULT)) < 0)
    err = h5_fail(a, "create dataset %s", name);
done:
  err = release(a, dcpl, H5Pclose, err);
  return release(a, space, H5Sclose, err);
}

/* Writes this rank's n rows at offset, collectively. A rank with no rows
 * still takes part, with nothing selected in either dataspace. */
static taso_err_t write_slab(const taso_artifact_t *a, hid_t dset, const char *name, hid_t type,
                             const void *rows, int64_t offset, int64_t n) {
  static const int64_t nothing[4]; /* a valid buffer for an empty selection */
  taso_err_t err = TASO_OK;
  hsize_t start = (hsize_t)offset, count = (hsize_t)n, mdims = n > 0 ? (hsize_t)n : 1;
  hid_t fspace = H5I_INVALID_HID, mspace = H5I_INVALID_HID;
  if ((fspace = H5Dget_space(dset)) < 0 || (mspace = H5Screate_simple(1, &mdims, NULL)) < 0) {
    err = h5_fail(a, "get the dataspaces of %s", name);
    goto done;
  }
  if (n > 0 ? H5Sselect_hyperslab(fspace, H5S_SELECT_SET, &start, NULL, &count, NULL) < 0
            : (H5Sselect_none(fspace) < 0 || H5Sselect_none(mspace) < 0)) {
    err = h5_fail(a, "select this rank's rows of %s", name);
    goto done;
  }
  if (H5Dwrite(dset, type, mspace, fspace, a->xfer, n > 0 ? rows : (const void *)nothing) < 0)
    err = h5_fail(a, "write %s", name);
done:
  err = release(a, mspace, H5Sclose, err);
  return release(a, fspace, H5Sclose, err);
}

/* Creates dataset name and writes every rank's rows into it. Collective. */
static taso_err_t write_rows(const taso_artifact_t *a, const char *name, hid_t type,
                             size_t rec_size, const void *rows, int64_t n, int64_t offset,
                             int64_t total) {
  hid_t dset = H5I_INVALID_HID;
  taso_err_t err = settle(a, create_dataset(a, name, type, rec_size, total, &dset));
  if (err == TASO_OK && total > 0)
    err = settle(a, write_slab(a, dset, name, type, rows, offset, n));
  err = release(a, dset, H5Dclose, err);
  return settle(a, err);
}

/* Opens dataset name for reading and checks it holds one-dimensional
 * records with every field of type; a file whose records lack a field would
 * otherwise fail only as an HDF5 conversion error. */
static taso_err_t open_rows(const taso_artifact_t *a, const char *name, hid_t type, hid_t *dset,
                            int64_t *n) {
  taso_err_t err = TASO_OK;
  hid_t space = H5I_INVALID_HID, ftype = H5I_INVALID_HID;
  H5T_class_t want, have;
  hsize_t dims;
  int ndims, members;
  if ((*dset = H5Dopen2(a->file, name, H5P_DEFAULT)) < 0)
    return taso_error(TASO_ERR_FORMAT, "%s: %s is not a dataset", a->path, name);
  if ((space = H5Dget_space(*dset)) < 0 || (ndims = H5Sget_simple_extent_ndims(space)) < 0 ||
      (ftype = H5Dget_type(*dset)) < 0 || (have = H5Tget_class(ftype)) == H5T_NO_CLASS ||
      (want = H5Tget_class(type)) == H5T_NO_CLASS) {
    err = h5_fail(a, "inspect dataset %s", name);
    goto done;
  }
  if (ndims != 1 || have != want) {
    err =
        taso_error(TASO_ERR_FORMAT, "%s: %s is not a table of the expected records", a->path, name);
    goto done;
  }
  if (H5Sget_simple_extent_dims(space, &dims, NULL) < 0) {
    err = h5_fail(a, "get the size of %s", name);
    goto done;
  }
  if (want == H5T_COMPOUND) {
    if ((members = H5Tget_nmembers(type)) < 0) {
      err = h5_fail(a, "inspect a record type");
      goto done;
    }
    for (int i = 0; i < members && err == TASO_OK; i++) {
      char *field = H5Tget_member_name(type, (unsigned)i);
      if (!field) {
        err = h5_fail(a, "inspect a record type");
        break;
      }
      if (H5Tget_member_index(ftype, field) < 0)
        err = taso_error(TASO_ERR_FORMAT, "%s: %s has no field '%s'", a->path, name, field);
      if (H5free_memory(field) < 0 && err == TASO_OK) err = h5_fail(a, "free a field name");
    }
  }
  *n = (int64_t)dims;
done:
  err = release(a, ftype, H5Tclose, err);
  err = release(a, space, H5Sclose, err);
  if (err != TASO_OK) {
    release(a, *dset, H5Dclose, err);
    *dset = H5I_INVALID_HID;
  }
  return err;
}

/* Every rank reads the whole of dataset name into *rows (malloc'd, NULL for
 * 0 rows). A missing dataset is 0 rows when optional and a format error
 * otherwise. Collective. */
static taso_err_t read_rows(const taso_artifact_t *a, const char *name, hid_t type, size_t rec_size,
                            bool optional, void **rows, int64_t *n) {
  taso_err_t err;
  hid_t dset = H5I_INVALID_HID;
  bool found = false;
  void *buf = NULL;
  *rows = NULL;
  *n = 0;
  err = path_exists(a, name, &found);
  if (err == TASO_OK && !found && !optional)
    err = taso_error(TASO_ERR_FORMAT, "%s: no dataset %s", a->path, name);
  if (err == TASO_OK && found) err = open_rows(a, name, type, &dset, n);
  if (err == TASO_OK && *n > 0) {
    if ((uint64_t)*n > SIZE_MAX / rec_size || !(buf = malloc((size_t)*n * rec_size)))
      err = taso_error(TASO_ERR_NOMEM, "%s: no memory for %lld rows of %s", a->path, (long long)*n,
                       name);
  }
  /* Only the read below is collective; settle the local failures first. */
  err = settle(a, err);
  if (err == TASO_OK && *n > 0) {
    if (H5Dread(dset, type, H5S_ALL, H5S_ALL, a->xfer, buf) < 0) err = h5_fail(a, "read %s", name);
    err = settle(a, err);
  }
  err = release(a, dset, H5Dclose, err);
  if (err == TASO_OK) {
    *rows = buf;
    buf = NULL;
  } else {
    *n = 0;
  }
  free(buf);
  return err;
}

/* ------------------------------------------------------------------------ */
/* Open, create, close                                                      */
/* ------------------------------------------------------------------------ */

static void artifact_free(taso_artifact_t *a) {
  if (!a) return;
  /* Only reached on paths that already failed or closed cleanly. */
  release(a, a->xfer, H5Pclose, TASO_ERR_LIB);
  release(a, a->file, H5Fclose, TASO_ERR_LIB);
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
    return h5_fail(a, "create a collective transfer property list");
  return TASO_OK;
}

static taso_err_t make_fapl(const taso_artifact_t *a, hid_t *fapl) {
  /* The 1.8 format at both ends: attributes too large for an object header
   * (a long job file) go to dense storage, and any HDF5 since 1.8 reads it. */
  if ((*fapl = H5Pcreate(H5P_FILE_ACCESS)) < 0 ||
      H5Pset_fapl_mpio(*fapl, a->comm, MPI_INFO_NULL) < 0 ||
      H5Pset_libver_bounds(*fapl, H5F_LIBVER_V18, H5F_LIBVER_V18) < 0)
    return h5_fail(a, "create an MPI-IO file access property list");
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
  quiet_t q = quiet_begin();
  taso_artifact_t *a = NULL;
  hid_t fapl = H5I_INVALID_HID;
  taso_err_t err;
  if (out) *out = NULL;
  err = artifact_new(comm, path, &a);
  if (err != TASO_OK) goto done;
  if (!kind || !prov) err = taso_error(TASO_ERR_ARG, "%s: no artifact kind or provenance", path);
  if (err == TASO_OK) err = make_xfer(a);
  if (err == TASO_OK) err = make_fapl(a, &fapl);
  if ((err = settle(a, err)) != TASO_OK) goto done;
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
  if ((err = settle(a, err)) != TASO_OK) goto done;
  a->writable = true;
  find_handle(a);
  err = settle(a, write_header(a, kind, prov));
done:
  err = release(a, fapl, H5Pclose, err);
  if (err == TASO_OK) {
    *out = a;
  } else if (a) {
    /* The attributes may be half written; the file is closed as it is. */
    artifact_free(a);
  }
  quiet_end(&q);
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
    err = h5_fail(a, "create a file access property list");
    goto done;
  }
#if (H5_VERS_MAJOR == 1 && H5_VERS_MINOR == 10 && H5_VERS_RELEASE >= 7) || H5_VERSION_GE(1, 12, 1)
  /* A look that is over at once needs no lock, and on a parallel file system
   * mounted without flock() the lock would fail as if the file were bad. */
  if (H5Pset_file_locking(fapl, false, true) < 0) {
    err = h5_fail(a, "turn off file locking for a read-only look");
    goto done;
  }
#endif
  if ((file = H5Fopen(a->path, H5F_ACC_RDONLY, fapl)) < 0) {
    err =
        taso_error(TASO_ERR_FORMAT, "%s: not a readable HDF5 file (truncated or foreign)", a->path);
    goto done;
  }
  if ((has_kind = H5Aexists(file, "kind")) < 0) {
    err = h5_fail(a, "look up attribute 'kind'");
  } else if (has_kind == 0) {
    err = taso_error(TASO_ERR_FORMAT,
                     "%s: an HDF5 file but not a taso artifact (no 'kind' attribute%s%s%s)",
                     a->path, kind ? "; expected '" : "", kind ? kind : "", kind ? "'" : "");
  } else if ((err = get_string(a, file, "kind", &found)) == TASO_OK) {
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
  err = release(a, file, H5Fclose, err);
  return release(a, fapl, H5Pclose, err);
}

static taso_err_t open_artifact(MPI_Comm comm, const char *path, const char *kind, bool rw,
                                taso_artifact_t **out) {
  quiet_t q = quiet_begin();
  taso_artifact_t *a = NULL;
  hid_t fapl = H5I_INVALID_HID;
  taso_err_t err;
  if (out) *out = NULL;
  err = artifact_new(comm, path, &a);
  if (err != TASO_OK) goto done;
  if ((err = settle(a, a->rank == 0 ? probe(a, kind, NULL) : TASO_OK)) != TASO_OK) goto done;
  err = make_xfer(a);
  if (err == TASO_OK) err = make_fapl(a, &fapl);
  if ((err = settle(a, err)) != TASO_OK) goto done;
  if ((a->file = H5Fopen(path, rw ? H5F_ACC_RDWR : H5F_ACC_RDONLY, fapl)) < 0)
    err = h5_fail(a, "open the file on every rank");
  else
    find_handle(a);
  err = settle(a, err);
  a->writable = rw && err == TASO_OK;
done:
  err = release(a, fapl, H5Pclose, err);
  if (err == TASO_OK)
    *out = a;
  else
    artifact_free(a);
  quiet_end(&q);
  return err;
}

taso_err_t taso_artifact_identify(const char *path, char **kind) {
  quiet_t q = quiet_begin();
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
  quiet_end(&q);
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
  quiet_t q;
  taso_err_t err = TASO_OK;
  if (!a) return TASO_OK;
  q = quiet_begin();
  if (a->writable) {
    char end[32];
    if (a->rank == 0) taso_now_iso8601(end);
    MPI_Bcast(end, (int)sizeof end, MPI_CHAR, 0, a->comm);
    err = settle(a, put_string(a, "end_time", end));
  }
  /* The file is closed even when end_time failed: what is written stays. */
  err = release(a, a->xfer, H5Pclose, err);
  a->xfer = H5I_INVALID_HID;
  err = release(a, a->file, H5Fclose, err);
  a->file = H5I_INVALID_HID;
  /* A delayed write fails at the close at the latest (HDF5 writes its
   * metadata cache there, network file systems report a full disk there). */
  err = settle(a, err);
  artifact_free(a);
  quiet_end(&q);
  return err;
}

/* A NULL handle is the caller's bug, but it should read as one. */
static taso_err_t no_handle(void) {
  return taso_error(TASO_ERR_ARG, "artifact: no handle (create or open one first)");
}

/* ------------------------------------------------------------------------ */
/* Counts and strings                                                       */
/* ------------------------------------------------------------------------ */

/* One numeric root attribute of type type at value. */
static taso_err_t set_number(taso_artifact_t *a, const char *name, hid_t type, const void *value) {
  if (!a) return no_handle();
  quiet_t q = quiet_begin();
  taso_err_t err;
  if (!a->writable)
    err = taso_error(TASO_ERR_ARG, "%s: opened read-only; cannot set '%s'", a->path, name);
  else
    err = settle(a, put_attr(a, name, type, value));
  quiet_end(&q);
  return err;
}

taso_err_t taso_artifact_set_count(taso_artifact_t *a, const char *name, int64_t value) {
  return set_number(a, name, H5T_NATIVE_INT64, &value);
}

taso_err_t taso_artifact_set_real(taso_artifact_t *a, const char *name, double value) {
  return set_number(a, name, H5T_NATIVE_DOUBLE, &value);
}

taso_err_t taso_artifact_set_string(taso_artifact_t *a, const char *name, const char *value) {
  if (!a) return no_handle();
  quiet_t q = quiet_begin();
  taso_err_t err;
  if (!a->writable)
    err = taso_error(TASO_ERR_ARG, "%s: opened read-only; cannot set '%s'", a->path, name);
  else
    err = settle(a, put_string(a, name, value));
  quiet_end(&q);
  return err;
}

/* Reads a floating-point attribute as a double. */
static taso_err_t get_real(const taso_artifact_t *a, const char *name, double *value) {
  taso_err_t err;
  hid_t attr = H5I_INVALID_HID, ftype = H5I_INVALID_HID;
  if ((err = open_attr(a, a->file, name, &attr)) != TASO_OK) return err;
  if ((ftype = H5Aget_type(attr)) < 0) {
    err = h5_fail(a, "inspect attribute '%s'", name);
  } else if (H5Tget_class(ftype) != H5T_FLOAT) {
    err = taso_error(TASO_ERR_FORMAT, "%s: attribute '%s' is not a number", a->path, name);
  } else if (H5Aread(attr, H5T_NATIVE_DOUBLE, value) < 0) {
    err = h5_fail(a, "read attribute '%s'", name);
  }
  err = release(a, ftype, H5Tclose, err);
  return release(a, attr, H5Aclose, err);
}

taso_err_t taso_artifact_get_real(taso_artifact_t *a, const char *name, double *value) {
  if (!a) return no_handle();
  quiet_t q = quiet_begin();
  taso_err_t err = get_real(a, name, value);
  quiet_end(&q);
  return err;
}

/* Attribute reads are not collective, so the getters do not taso_agree(): any
 * subset of ranks may call them. */
taso_err_t taso_artifact_get_count(taso_artifact_t *a, const char *name, int64_t *value) {
  if (!a) return no_handle();
  quiet_t q = quiet_begin();
  taso_err_t err = get_int(a, a->file, name, value);
  quiet_end(&q);
  return err;
}

taso_err_t taso_artifact_get_string(taso_artifact_t *a, const char *name, char **value) {
  if (!a) return no_handle();
  quiet_t q = quiet_begin();
  taso_err_t err = get_string(a, a->file, name, value);
  quiet_end(&q);
  return err;
}

/* ------------------------------------------------------------------------ */
/* Inputs                                                                   */
/* ------------------------------------------------------------------------ */

/* The table is the same on every rank, so rank 0 alone supplies the rows. */
static taso_err_t write_inputs(taso_artifact_t *a, const taso_inputs_t *in) {
  taso_err_t err = TASO_OK;
  input_rec_t *rows = NULL;
  hid_t type = H5I_INVALID_HID;
  int64_t n = 0, offset = 0, total = 0;
  if (!in || in->n < 0 || (in->n > 0 && !in->v)) {
    err = taso_error(TASO_ERR_ARG, "%s: no input table to write", a->path);
  } else if (a->rank == 0 && in->n > 0) {
    n = in->n;
    if (!(rows = calloc((size_t)n, sizeof *rows)))
      err = taso_error(TASO_ERR_NOMEM, "%s: no memory for the input table", a->path);
    for (int64_t i = 0; i < n && err == TASO_OK; i++) {
      const taso_input_t *v = &in->v[i];
      if (strlen(v->name) >= TASO_NAME_LEN || v->type.rank < 0 || v->type.rank > TASO_MAX_RANK)
        err = taso_error(TASO_ERR_ARG, "%s: input %lld has a bad name or rank", a->path,
                         (long long)i);
      memcpy(rows[i].name, v->name, strnlen(v->name, TASO_NAME_LEN - 1));
      rows[i].rank = v->type.rank;
      for (int d = 0; d < TASO_MAX_RANK; d++)
        rows[i].dims[d] = d < v->type.rank ? v->type.dim[d] : 0;
    }
  }
  if (err == TASO_OK) err = input_type(a, &type);
  if ((err = settle(a, err)) != TASO_OK) goto done;
  place(a, &n, &offset, &total, 1);
  err = write_rows(a, "/inputs", type, sizeof *rows, rows, n, offset, total);
done:
  free(rows);
  return release(a, type, H5Tclose, err);
}

taso_err_t taso_artifact_write_inputs(taso_artifact_t *a, const taso_inputs_t *in) {
  if (!a) return no_handle();
  quiet_t q = quiet_begin();
  taso_err_t err;
  if (!a->writable)
    err = taso_error(TASO_ERR_ARG, "%s: opened read-only; cannot write inputs", a->path);
  else
    err = settle(a, write_inputs(a, in));
  quiet_end(&q);
  return err;
}

static taso_err_t read_inputs(taso_artifact_t *a, taso_inputs_t *in) {
  taso_err_t err;
  hid_t type = H5I_INVALID_HID;
  input_rec_t *rows = NULL;
  int64_t n = 0;
  in->v = NULL;
  in->n = 0;
  err = settle(a, input_type(a, &type));
  if (err == TASO_OK) err = read_rows(a, "/inputs", type, sizeof *rows, false, (void **)&rows, &n);
  for (int64_t i = 0; i < n && err == TASO_OK; i++) {
    input_rec_t *r = &rows[i];
    bool ok =
        memchr(r->name, '\0', TASO_NAME_LEN) != NULL && r->rank >= 0 && r->rank <= TASO_MAX_RANK;
    for (int d = 0; ok && d < r->rank; d++)
      ok = r->dims[d] >= 1;
    if (!ok)
      err = taso_error(TASO_ERR_FORMAT, "%s: /inputs row %lld: bad name or shape", a->path,
                       (long long)i);
    else if ((err = taso_inputs_add(in, r->name, r->rank, r->dims)) != TASO_OK &&
             err != TASO_ERR_NOMEM)
      err = taso_error_prefix(TASO_ERR_FORMAT, "%s: /inputs row %lld: ", a->path, (long long)i);
  }
  if (err != TASO_OK) taso_inputs_free(in);
  free(rows);
  return release(a, type, H5Tclose, err);
}

taso_err_t taso_artifact_read_inputs(taso_artifact_t *a, taso_inputs_t *in) {
  if (!a) return no_handle();
  quiet_t q = quiet_begin();
  taso_err_t err = settle(a, read_inputs(a, in));
  quiet_end(&q);
  return err;
}

/* ------------------------------------------------------------------------ */
/* Graphs                                                                   */
/* ------------------------------------------------------------------------ */

/* Flattens the local graphs into the three record sets, with each graph's
 * offsets relative to this rank's first node and output. */
static taso_err_t flatten(const taso_artifact_t *a, const taso_graph_t *local, int64_t n,
                          index_rec_t **index, taso_node_t **nodes, int32_t **outs,
                          int64_t counts[3]) {
  int64_t nn = 0, no = 0;
  if (n < 0 || (n > 0 && !local))
    return taso_error(TASO_ERR_ARG, "%s: bad local graph list", a->path);
  for (int64_t i = 0; i < n; i++) {
    if (local[i].nnodes < 0 || local[i].noutputs < 0)
      return taso_error(TASO_ERR_ARG, "%s: local graph %lld is malformed", a->path, (long long)i);
    nn += local[i].nnodes;
    no += local[i].noutputs;
  }
  *index = calloc(n > 0 ? (size_t)n : 1, sizeof **index);
  *nodes = calloc(nn > 0 ? (size_t)nn : 1, sizeof **nodes);
  *outs = calloc(no > 0 ? (size_t)no : 1, sizeof **outs);
  if (!*index || !*nodes || !*outs)
    return taso_error(TASO_ERR_NOMEM, "%s: no memory for %lld graphs", a->path, (long long)n);
  nn = no = 0;
  for (int64_t i = 0; i < n; i++) {
    const taso_graph_t *g = &local[i];
    (*index)[i] = (index_rec_t){
        .node_begin = nn, .output_begin = no, .node_count = g->nnodes, .output_count = g->noutputs};
    if (g->nnodes > 0) memcpy(*nodes + nn, g->nodes, (size_t)g->nnodes * sizeof **nodes);
    if (g->noutputs > 0) memcpy(*outs + no, g->outputs, (size_t)g->noutputs * sizeof **outs);
    nn += g->nnodes;
    no += g->noutputs;
  }
  counts[0] = n;
  counts[1] = nn;
  counts[2] = no;
  return TASO_OK;
}

static taso_err_t write_graphs(taso_artifact_t *a, const taso_graph_t *local, int64_t n,
                               int64_t *first) {
  taso_err_t err;
  index_rec_t *index = NULL;
  taso_node_t *nodes = NULL;
  int32_t *outs = NULL;
  int64_t counts[3] = {0, 0, 0}, offset[3], total[3];
  hid_t itype = H5I_INVALID_HID, ntype = H5I_INVALID_HID, group = H5I_INVALID_HID;
  bool exists = false;
  err = flatten(a, local, n, &index, &nodes, &outs, counts);
  if (err == TASO_OK) err = index_type(a, &itype);
  if (err == TASO_OK) err = node_type(a, &ntype);
  if (err == TASO_OK) err = path_exists(a, "/graphs", &exists);
  if (err == TASO_OK && exists)
    err = taso_error(TASO_ERR_ARG, "%s: already holds a graph set", a->path);
  if ((err = settle(a, err)) != TASO_OK) goto done;
  place(a, counts, offset, total, 3);
  for (int64_t i = 0; i < n; i++) {
    index[i].node_begin += offset[1];
    index[i].output_begin += offset[2];
  }
  if ((group = H5Gcreate2(a->file, "/graphs", H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT)) < 0)
    err = h5_fail(a, "create group /graphs");
  if ((err = settle(a, err)) != TASO_OK) goto done;
  if ((err = write_rows(a, "/graphs/index", itype, sizeof *index, index, counts[0], offset[0],
                        total[0])) != TASO_OK ||
      (err = write_rows(a, "/graphs/nodes", ntype, sizeof *nodes, nodes, counts[1], offset[1],
                        total[1])) != TASO_OK ||
      (err = write_rows(a, "/graphs/outputs", H5T_NATIVE_INT32, sizeof *outs, outs, counts[2],
                        offset[2], total[2])) != TASO_OK)
    goto done;
  if (first) *first = offset[0];
done:
  free(index);
  free(nodes);
  free(outs);
  err = release(a, group, H5Gclose, err);
  err = release(a, ntype, H5Tclose, err);
  return release(a, itype, H5Tclose, err);
}

taso_err_t taso_artifact_write_graphs(taso_artifact_t *a, const taso_graph_t *local, int64_t n,
                                      int64_t *first) {
  if (!a) return no_handle();
  quiet_t q = quiet_begin();
  taso_err_t err;
  if (!a->writable)
    err = taso_error(TASO_ERR_ARG, "%s: opened read-only; cannot write graphs", a->path);
  else
    err = settle(a, write_graphs(a, local, n, first));
  quiet_end(&q);
  return err;
}

/* Whether ref names an output of a node before limit: later code indexes
 * arrays with refs read from the file, so they are checked once here. */
static bool ref_ok(const taso_graph_t *g, taso_ref_t ref, int limit) {
  if (ref < 0 || TASO_REF_NODE(ref) >= limit) return false;
  int32_t kind = g->nodes[TASO_REF_NODE(ref)].kind;
  return TASO_REF_PORT(ref) < taso_ops[kind].outputs;
}

/* Fills g from its rows of the flat sets and checks it is well formed. */
static taso_err_t unflatten(const taso_artifact_t *a, int64_t gi, const index_rec_t *r,
                            const taso_node_t *nodes, int64_t nnodes, const int32_t *outs,
                            int64_t nouts, taso_graph_t *g) {
  if (r->node_begin < 0 || r->node_count < 0 || r->node_begin > nnodes - r->node_count ||
      r->output_begin < 0 || r->output_count < 0 || r->output_begin > nouts - r->output_count)
    return taso_error(TASO_ERR_FORMAT, "%s: /graphs/index row %lld points outside the graph set",
                      a->path, (long long)gi);
  if (r->node_count > 0) {
    if (!(g->nodes = malloc((size_t)r->node_count * sizeof *g->nodes)))
      return taso_error(TASO_ERR_NOMEM, "%s: no memory for graph %lld", a->path, (long long)gi);
    memcpy(g->nodes, nodes + r->node_begin, (size_t)r->node_count * sizeof *g->nodes);
    g->nnodes = g->node_cap = r->node_count;
  }
  if (r->output_count > 0) {
    if (!(g->outputs = malloc((size_t)r->output_count * sizeof *g->outputs)))
      return taso_error(TASO_ERR_NOMEM, "%s: no memory for graph %lld", a->path, (long long)gi);
    memcpy(g->outputs, outs + r->output_begin, (size_t)r->output_count * sizeof *g->outputs);
    g->noutputs = g->out_cap = r->output_count;
  }
  for (int j = 0; j < g->nnodes; j++) {
    const taso_node_t *v = &g->nodes[j];
    bool ok = v->kind >= 0 && v->kind < TASO_OP_COUNT;
    /* Inputs come before their users, and slots past the arity are -1. */
    for (int k = 0; ok && k < 3; k++)
      ok = k < taso_ops[v->kind].arity ? ref_ok(g, v->in[k], j) : v->in[k] == -1;
    if (!ok)
      return taso_error(TASO_ERR_FORMAT, "%s: graph %lld, node %d is malformed", a->path,
                        (long long)gi, j);
  }
  for (int j = 0; j < g->noutputs; j++)
    if (!ref_ok(g, g->outputs[j], g->nnodes))
      return taso_error(TASO_ERR_FORMAT, "%s: graph %lld, output %d is malformed", a->path,
                        (long long)gi, j);
  return TASO_OK;
}

static taso_err_t read_graphs(taso_artifact_t *a, taso_graph_t **graphs, int64_t *n) {
  taso_err_t err;
  hid_t itype = H5I_INVALID_HID, ntype = H5I_INVALID_HID;
  index_rec_t *index = NULL;
  taso_node_t *nodes = NULL;
  int32_t *outs = NULL;
  int64_t ni = 0, nn = 0, no = 0;
  taso_graph_t *g = NULL;
  *graphs = NULL;
  *n = 0;
  err = index_type(a, &itype);
  if (err == TASO_OK) err = node_type(a, &ntype);
  if ((err = settle(a, err)) != TASO_OK) goto done;
  if ((err = read_rows(a, "/graphs/index", itype, sizeof *index, false, (void **)&index, &ni)) !=
          TASO_OK ||
      (err = read_rows(a, "/graphs/nodes", ntype, sizeof *nodes, false, (void **)&nodes, &nn)) !=
          TASO_OK ||
      (err = read_rows(a, "/graphs/outputs", H5T_NATIVE_INT32, sizeof *outs, false, (void **)&outs,
                       &no)) != TASO_OK)
    goto done;
  if (ni > 0 && !(g = calloc((size_t)ni, sizeof *g))) {
    err = taso_error(TASO_ERR_NOMEM, "%s: no memory for %lld graphs", a->path, (long long)ni);
    goto done;
  }
  for (int64_t i = 0; i < ni; i++)
    taso_graph_init(&g[i]);
  for (int64_t i = 0; i < ni && err == TASO_OK; i++)
    err = unflatten(a, i, &index[i], nodes, nn, outs, no, &g[i]);
  if (err == TASO_OK) {
    *graphs = g;
    *n = ni;
    g = NULL;
  }
done:
  taso_graphs_free(g, ni);
  free(index);
  free(nodes);
  free(outs);
  err = release(a, ntype, H5Tclose, err);
  return release(a, itype, H5Tclose, err);
}

taso_err_t taso_artifact_read_graphs(taso_artifact_t *a, taso_graph_t **graphs, int64_t *n) {
  if (!a) return no_handle();
  quiet_t q = quiet_begin();
  taso_err_t err = settle(a, read_graphs(a, graphs, n));
  quiet_end(&q);
  return err;
}

void taso_graphs_free(taso_graph_t *graphs, int64_t n) {
  if (!graphs) return;
  for (int64_t i = 0; i < n; i++)
    taso_graph_free(&graphs[i]);
  free(graphs);
}

/* ------------------------------------------------------------------------ */
/* Substitutions                                                            */
/* ------------------------------------------------------------------------ */

/* /graphs/fingerprint: one 128-bit fingerprint per graph, beside /graphs/index. */
taso_err_t taso_artifact_write_fingerprints(taso_artifact_t *a, const uint64_t (*local)[2],
                                            int64_t n) {
  if (!a) return no_handle();
  quiet_t q = quiet_begin();
  const field_t f[] = {{"h", 0, H5T_NATIVE_UINT64, 2}};
  hid_t type = H5I_INVALID_HID;
  int64_t offset = 0, total = 0;
  taso_err_t err = TASO_OK;
  if (!a->writable)
    err = taso_error(TASO_ERR_ARG, "%s: opened read-only; cannot write fingerprints", a->path);
  else if (n < 0 || (n > 0 && !local))
    err = taso_error(TASO_ERR_ARG, "%s: bad local fingerprint list", a->path);
  if (err == TASO_OK) err = build_type(a, "fingerprint", 2 * sizeof(uint64_t), FIELDS(f), &type);
  if ((err = settle(a, err)) == TASO_OK) {
    place(a, &n, &offset, &total, 1);
    err = write_rows(a, "/graphs/fingerprint", type, 2 * sizeof(uint64_t), local, n, offset, total);
  }
  err = release(a, type, H5Tclose, err);
  quiet_end(&q);
  return settle(a, err);
}

static taso_err_t write_substs(taso_artifact_t *a, const taso_subst_t *local, int64_t n) {
  taso_err_t err = TASO_OK;
  taso_subst_t *rows = NULL;
  hid_t type = H5I_INVALID_HID;
  int64_t offset = 0, total = 0;
  bool exists = false;
  if (n < 0 || (n > 0 && !local)) {
    err = taso_error(TASO_ERR_ARG, "%s: bad local substitution list", a->path);
  } else if (!(rows = calloc(n > 0 ? (size_t)n : 1, sizeof *rows))) {
    err = taso_error(TASO_ERR_NOMEM, "%s: no memory for %lld substitutions", a->path, (long long)n);
  } else {
    /* Field by field into zeroed memory: the caller's padding bytes are
     * whatever they were, and they would reach the file. */
    for (int64_t i = 0; i < n; i++) {
      rows[i].src = local[i].src;
      rows[i].dst = local[i].dst;
      rows[i].verdict = local[i].verdict;
      rows[i].seconds = local[i].seconds;
    }
  }
  if (err == TASO_OK) err = subst_type(a, &type);
  if (err == TASO_OK) err = path_exists(a, "/substitutions", &exists);
  if (err == TASO_OK && exists)
    err = taso_error(TASO_ERR_ARG, "%s: already holds a substitution set", a->path);
  if ((err = settle(a, err)) != TASO_OK) goto done;
  place(a, &n, &offset, &total, 1);
  err = write_rows(a, "/substitutions", type, sizeof *rows, rows, n, offset, total);
done:
  free(rows);
  return release(a, type, H5Tclose, err);
}

taso_err_t taso_artifact_write_substs(taso_artifact_t *a, const taso_subst_t *local, int64_t n) {
  if (!a) return no_handle();
  quiet_t q = quiet_begin();
  taso_err_t err;
  if (!a->writable)
    err = taso_error(TASO_ERR_ARG, "%s: opened read-only; cannot write substitutions", a->path);
  else
    err = settle(a, write_substs(a, local, n));
  quiet_end(&q);
  return err;
}

static taso_err_t read_substs(taso_artifact_t *a, taso_subst_t **rows, int64_t *n) {
  hid_t type = H5I_INVALID_HID;
  taso_err_t err = settle(a, subst_type(a, &type));
  *rows = NULL;
  *n = 0;
  if (err == TASO_OK)
    err = read_rows(a, "/substitutions", type, sizeof **rows, true, (void **)rows, n);
  for (int64_t i = 0; i < *n && err == TASO_OK; i++)
    if ((*rows)[i].verdict < TASO_VERDICT_CANDIDATE || (*rows)[i].verdict > TASO_VERDICT_REFUTED)
      err = taso_error(TASO_ERR_FORMAT, "%s: /substitutions row %lld has an unknown verdict %d",
                       a->path, (long long)i, (int)(*rows)[i].verdict);
  if (err != TASO_OK) {
    free(*rows);
    *rows = NULL;
    *n = 0;
  }
  return release(a, type, H5Tclose, err);
}

taso_err_t taso_artifact_read_substs(taso_artifact_t *a, taso_subst_t **rows, int64_t *n) {
  if (!a) return no_handle();
  quiet_t q = quiet_begin();
  taso_err_t err = settle(a, read_substs(a, rows, n));
  quiet_end(&q);
  return err;
}

/* ------------------------------------------------------------------------ */
/* Decisions: the verifier's streamed results                               */
/* ------------------------------------------------------------------------ */

/* Appends (or, with rewrite, overwrites from row 0) each rank's rows in
 * rank order, then flushes so that a killed run keeps them. */
static taso_err_t put_decisions(taso_artifact_t *a, const taso_decision_t *local, int64_t n,
                                bool rewrite) {
  static const char *name = "/decisions";
  taso_err_t err = TASO_OK;
  taso_decision_t *rows = NULL;
  hid_t type = H5I_INVALID_HID, dset = H5I_INVALID_HID, space = H5I_INVALID_HID;
  int64_t offset = 0, total = 0;
  hsize_t cur = 0;
  bool exists = false;
  if (n < 0 || (n > 0 && !local)) {
    err = taso_error(TASO_ERR_ARG, "%s: bad local decision list", a->path);
  } else if (!(rows = calloc(n > 0 ? (size_t)n : 1, sizeof *rows))) {
    err = taso_error(TASO_ERR_NOMEM, "%s: no memory for %lld decisions", a->path, (long long)n);
  } else {
    for (int64_t i = 0; i < n; i++) {
      rows[i].row = local[i].row;
      rows[i].seconds = local[i].seconds;
      rows[i].verdict = local[i].verdict;
      /* NUL-padded: the bytes after the text reach the file too. */
      memcpy(rows[i].reason, local[i].reason, strnlen(local[i].reason, TASO_REASON_LEN - 1));
    }
  }
  if (err == TASO_OK) err = decision_type(a, &type);
  if (err == TASO_OK) err = path_exists(a, name, &exists);
  if ((err = settle(a, err)) != TASO_OK) goto done;
  place(a, &n, &offset, &total, 1);
  if (!exists)
    err = create_dataset(a, name, type, sizeof *rows, 0, &dset);
  else if ((dset = H5Dopen2(a->file, name, H5P_DEFAULT)) < 0)
    err = h5_fail(a, "open %s", name);
  if (err == TASO_OK &&
      ((space = H5Dget_space(dset)) < 0 || H5Sget_simple_extent_dims(space, &cur, NULL) != 1))
    err = h5_fail(a, "get the size of %s", name);
  if (err == TASO_OK && rewrite && (int64_t)cur != total)
    err = taso_error(TASO_ERR_ARG, "%s: rewriting %lld decisions over %lld", a->path,
                     (long long)total, (long long)cur);
  if ((err = settle(a, err)) != TASO_OK) goto done;
  if (!rewrite && total > 0) {
    hsize_t size = cur + (hsize_t)total;
    if (H5Dset_extent(dset, &size) < 0) err = h5_fail(a, "extend %s", name);
    if ((err = settle(a, err)) != TASO_OK) goto done;
  }
  if (total > 0) {
    int64_t start = (rewrite ? 0 : (int64_t)cur) + offset;
    err = settle(a, write_slab(a, dset, name, type, rows, start, n));
  }
  if (err == TASO_OK && H5Fflush(a->file, H5F_SCOPE_GLOBAL) < 0) err = h5_fail(a, "flush the file");
  err = settle(a, err);
done:
  free(rows);
  err = release(a, space, H5Sclose, err);
  err = release(a, dset, H5Dclose, err);
  return release(a, type, H5Tclose, err);
}

static taso_err_t decisions_call(taso_artifact_t *a, const taso_decision_t *local, int64_t n,
                                 bool rewrite) {
  if (!a) return no_handle();
  quiet_t q = quiet_begin();
  taso_err_t err;
  if (!a->writable)
    err = taso_error(TASO_ERR_ARG, "%s: opened read-only; cannot write decisions", a->path);
  else
    err = settle(a, put_decisions(a, local, n, rewrite));
  quiet_end(&q);
  return err;
}

taso_err_t taso_artifact_append_decisions(taso_artifact_t *a, const taso_decision_t *local,
                                          int64_t n) {
  return decisions_call(a, local, n, false);
}

taso_err_t taso_artifact_rewrite_decisions(taso_artifact_t *a, const taso_decision_t *local,
                                           int64_t n) {
  return decisions_call(a, local, n, true);
}

static taso_err_t read_decisions(taso_artifact_t *a, taso_decision_t **rows, int64_t *n) {
  hid_t type = H5I_INVALID_HID;
  taso_err_t err = settle(a, decision_type(a, &type));
  *rows = NULL;
  *n = 0;
  if (err == TASO_OK) err = read_rows(a, "/decisions", type, sizeof **rows, true, (void **)rows, n);
  for (int64_t i = 0; i < *n && err == TASO_OK; i++) {
    taso_decision_t *d = &(*rows)[i];
    d->reason[TASO_REASON_LEN - 1] = '\0';
    d->pad_ = 0;
    if (d->verdict < TASO_VERDICT_CANDIDATE || d->verdict > TASO_VERDICT_REFUTED || d->row < 0)
      err = taso_error(TASO_ERR_FORMAT, "%s: /decisions row %lld is malformed", a->path,
                       (long long)i);
  }
  if (err != TASO_OK) {
    free(*rows);
    *rows = NULL;
    *n = 0;
  }
  return release(a, type, H5Tclose, err);
}

taso_err_t taso_artifact_read_decisions(taso_artifact_t *a, taso_decision_t **rows, int64_t *n) {
  if (!a) return no_handle();
  quiet_t q = quiet_begin();
  taso_err_t err = settle(a, read_decisions(a, rows, n));
  quiet_end(&q);
  return err;
}

/* ------------------------------------------------------------------------ */
/* Tables of a stage's own records                                          */
/* ------------------------------------------------------------------------ */

static taso_err_t table_type(const taso_artifact_t *a, const taso_table_t *t, hid_t *out) {
  taso_err_t err = TASO_OK;
  if (t->nfields == 1 && !t->fields[0].name) {
    hid_t base = H5I_INVALID_HID;
    switch (t->fields[0].kind) {
    case TASO_FIELD_INT32:
      base = H5T_NATIVE_INT32;
      break;
    case TASO_FIELD_INT64:
      base = H5T_NATIVE_INT64;
      break;
    case TASO_FIELD_DOUBLE:
      base = H5T_NATIVE_DOUBLE;
      break;
    case TASO_FIELD_FLOAT:
      base = H5T_NATIVE_FLOAT;
      break;
    case TASO_FIELD_STRING:
      break;
    }
    if (base < 0 || (*out = H5Tcopy(base)) < 0)
      return h5_fail(a, "create the element type of %s", t->path);
    return TASO_OK;
  }
  hid_t type = H5Tcreate(H5T_COMPOUND, t->size);
  if (type < 0) return h5_fail(a, "create the record type of %s", t->path);
  for (int i = 0; i < t->nfields && err == TASO_OK; i++) {
    const taso_field_t *f = &t->fields[i];
    hid_t base = H5I_INVALID_HID, own = H5I_INVALID_HID;
    switch (f->kind) {
    case TASO_FIELD_INT32:
      base = H5T_NATIVE_INT32;
      break;
    case TASO_FIELD_INT64:
      base = H5T_NATIVE_INT64;
      break;
    case TASO_FIELD_DOUBLE:
      base = H5T_NATIVE_DOUBLE;
      break;
    case TASO_FIELD_FLOAT:
      base = H5T_NATIVE_FLOAT;
      break;
    case TASO_FIELD_STRING:
      if ((own = H5Tcopy(H5T_C_S1)) < 0 || H5Tset_size(own, f->size) < 0 ||
          H5Tset_strpad(own, H5T_STR_NULLTERM) < 0)
        err = h5_fail(a, "create the string type of field '%s'", f->name);
      base = own;
      break;
    }
    if (err == TASO_OK && H5Tinsert(type, f->name, f->offset, base) < 0)
      err = h5_fail(a, "add field '%s' to the record type of %s", f->name, t->path);
    err = release(a, own, H5Tclose, err);
  }
  if (err != TASO_OK) return release(a, type, H5Tclose, err);
  *out = type;
  return TASO_OK;
}

static taso_err_t append_table(taso_artifact_t *a, const taso_table_t *t, const void *local,
                               int64_t n) {
  taso_err_t err = TASO_OK;
  hid_t type = H5I_INVALID_HID, dset = H5I_INVALID_HID, space = H5I_INVALID_HID;
  int64_t offset = 0, total = 0;
  hsize_t cur = 0;
  bool exists = false;
  if (n < 0 || (n > 0 && !local)) err = taso_error(TASO_ERR_ARG, "%s: bad local rows", a->path);
  if (err == TASO_OK) err = table_type(a, t, &type);
  if (err == TASO_OK) err = path_exists(a, t->path, &exists);
  if ((err = settle(a, err)) != TASO_OK) goto done;
  place(a, &n, &offset, &total, 1);
  if (!exists)
    err = create_dataset(a, t->path, type, t->size, 0, &dset);
  else if ((dset = H5Dopen2(a->file, t->path, H5P_DEFAULT)) < 0)
    err = h5_fail(a, "open %s", t->path);
  if (err == TASO_OK &&
      ((space = H5Dget_space(dset)) < 0 || H5Sget_simple_extent_dims(space, &cur, NULL) != 1))
    err = h5_fail(a, "get the size of %s", t->path);
  if ((err = settle(a, err)) != TASO_OK) goto done;
  if (total > 0) {
    hsize_t size = cur + (hsize_t)total;
    if (H5Dset_extent(dset, &size) < 0) err = h5_fail(a, "extend %s", t->path);
    if ((err = settle(a, err)) != TASO_OK) goto done;
    err = settle(a, write_slab(a, dset, t->path, type, local, (int64_t)cur + offset, n));
  }
  if (err == TASO_OK && H5Fflush(a->file, H5F_SCOPE_GLOBAL) < 0) err = h5_fail(a, "flush the file");
  err = settle(a, err);
done:
  err = release(a, space, H5Sclose, err);
  err = release(a, dset, H5Dclose, err);
  return release(a, type, H5Tclose, err);
}

taso_err_t taso_artifact_append_table(taso_artifact_t *a, const taso_table_t *t, const void *local,
                                      int64_t n) {
  if (!a) return no_handle();
  quiet_t q = quiet_begin();
  taso_err_t err;
  if (!a->writable)
    err = taso_error(TASO_ERR_ARG, "%s: opened read-only; cannot write %s", a->path, t->path);
  else
    err = settle(a, append_table(a, t, local, n));
  quiet_end(&q);
  return err;
}

taso_err_t taso_artifact_table_length(taso_artifact_t *a, const taso_table_t *t, int64_t *n) {
  if (!a) return no_handle();
  quiet_t q = quiet_begin();
  hid_t type = H5I_INVALID_HID, dset = H5I_INVALID_HID;
  bool exists = false;
  *n = 0;
  taso_err_t err = path_exists(a, t->path, &exists);
  if (err == TASO_OK && exists && (err = table_type(a, t, &type)) == TASO_OK)
    err = open_rows(a, t->path, type, &dset, n);
  err = release(a, dset, H5Dclose, err);
  err = release(a, type, H5Tclose, err);
  quiet_end(&q);
  return settle(a, err);
}

static taso_err_t read_table(taso_artifact_t *a, const taso_table_t *t, int64_t lo, int64_t hi,
                             void **rows) {
  static int64_t nothing[4];
  taso_err_t err;
  hid_t type = H5I_INVALID_HID, dset = H5I_INVALID_HID, fspace = H5I_INVALID_HID,
        mspace = H5I_INVALID_HID;
  int64_t n = 0, count = hi - lo;
  void *buf = NULL;
  *rows = NULL;
  err = table_type(a, t, &type);
  if (err == TASO_OK) err = open_rows(a, t->path, type, &dset, &n);
  if (err == TASO_OK && (lo < 0 || hi < lo || hi > n))
    err = taso_error(TASO_ERR_FORMAT, "%s: %s has %lld rows, not the %lld expected", a->path,
                     t->path, (long long)n, (long long)hi);
  if (err == TASO_OK && count > 0 && !(buf = malloc((size_t)count * t->size)))
    err = taso_error(TASO_ERR_NOMEM, "%s: no memory for %lld rows", a->path, (long long)count);
  if (err == TASO_OK) {
    hsize_t start = (hsize_t)lo, cnt = (hsize_t)count, mdims = count > 0 ? (hsize_t)count : 1;
    if ((fspace = H5Dget_space(dset)) < 0 || (mspace = H5Screate_simple(1, &mdims, NULL)) < 0)
      err = h5_fail(a, "get the dataspaces of %s", t->path);
    else if (count > 0 ? H5Sselect_hyperslab(fspace, H5S_SELECT_SET, &start, NULL, &cnt, NULL) < 0
                       : (H5Sselect_none(fspace) < 0 || H5Sselect_none(mspace) < 0))
      err = h5_fail(a, "select rows of %s", t->path);
  }
  /* An empty table (a run with no work) may have no storage to read. */
  if ((err = settle(a, err)) == TASO_OK && n > 0) {
    if (H5Dread(dset, type, mspace, fspace, a->xfer, count > 0 ? buf : (void *)nothing) < 0)
      err = h5_fail(a, "read %s", t->path);
    err = settle(a, err);
  }
  err = release(a, mspace, H5Sclose, err);
  err = release(a, fspace, H5Sclose, err);
  err = release(a, dset, H5Dclose, err);
  err = release(a, type, H5Tclose, err);
  if (err == TASO_OK)
    *rows = buf;
  else
    free(buf);
  return err;
}

taso_err_t taso_artifact_read_table(taso_artifact_t *a, const taso_table_t *t, int64_t lo,
                                    int64_t hi, void **rows) {
  if (!a) return no_handle();
  quiet_t q = quiet_begin();
  taso_err_t err = settle(a, read_table(a, t, lo, hi, rows));
  quiet_end(&q);
  return err;
}

taso_err_t taso_artifact_write_table(taso_artifact_t *a, const taso_table_t *t, const void *local,
                                     int64_t n, int64_t offset, int64_t total) {
  if (!a) return no_handle();
  quiet_t q = quiet_begin();
  hid_t type = H5I_INVALID_HID;
  bool exists = false;
  taso_err_t err = TASO_OK;
  if (!a->writable)
    err = taso_error(TASO_ERR_ARG, "%s: opened read-only; cannot write %s", a->path, t->path);
  if (err == TASO_OK) err = table_type(a, t, &type);
  if (err == TASO_OK) err = path_exists(a, t->path, &exists);
  if (err == TASO_OK && exists)
    err = taso_error(TASO_ERR_ARG, "%s: already holds %s", a->path, t->path);
  if ((err = settle(a, err)) == TASO_OK)
    err = write_rows(a, t->path, type, t->size, local, n, offset, total);
  if (err == TASO_OK && H5Fflush(a->file, H5F_SCOPE_GLOBAL) < 0) err = h5_fail(a, "flush the file");
  err = release(a, type, H5Tclose, err);
  quiet_end(&q);
  return settle(a, err);
}

/* Opens table t's dataset for one of its attributes, or gives
 * TASO_ERR_FORMAT naming it. */
static taso_err_t open_table(const taso_artifact_t *a, const taso_table_t *t, hid_t *dset) {
  bool exists = false;
  TASO_TRY(path_exists(a, t->path, &exists));
  if (!exists) return taso_error(TASO_ERR_FORMAT, "%s: no dataset %s", a->path, t->path);
  if ((*dset = H5Dopen2(a->file, t->path, H5P_DEFAULT)) < 0) return h5_fail(a, "open %s", t->path);
  return TASO_OK;
}

taso_err_t taso_artifact_set_table_string(taso_artifact_t *a, const taso_table_t *t,
                                          const char *name, const char *value) {
  if (!a) return no_handle();
  quiet_t q = quiet_begin();
  hid_t dset = H5I_INVALID_HID;
  taso_err_t err = TASO_OK;
  if (!a->writable)
    err = taso_error(TASO_ERR_ARG, "%s: opened read-only; cannot set '%s' of %s", a->path, name,
                     t->path);
  if (err == TASO_OK) err = open_table(a, t, &dset);
  if (err == TASO_OK) err = put_string_at(a, dset, name, value);
  err = release(a, dset, H5Dclose, err);
  quiet_end(&q);
  return settle(a, err);
}

taso_err_t taso_artifact_get_table_string(taso_artifact_t *a, const taso_table_t *t,
                                          const char *name, char **value) {
  if (!a) return no_handle();
  quiet_t q = quiet_begin();
  hid_t dset = H5I_INVALID_HID;
  *value = NULL;
  taso_err_t err = open_table(a, t, &dset);
  htri_t exists = err == TASO_OK ? H5Aexists(dset, name) : 1;
  if (exists < 0) err = h5_fail(a, "look up attribute '%s' of %s", name, t->path);
  if (exists == 0)
    err = taso_error(TASO_ERR_FORMAT, "%s: %s has no attribute '%s'", a->path, t->path, name);
  if (err == TASO_OK) err = get_string(a, dset, name, value);
  err = release(a, dset, H5Dclose, err);
  if (err != TASO_OK) {
    free(*value);
    *value = NULL;
  }
  quiet_end(&q);
  return err;
}

/* ------------------------------------------------------------------------ */
/* Slot tables: streams that a kill cannot corrupt                          */
/* ------------------------------------------------------------------------ */

static void marks_path(const taso_table_t *t, char *out, size_t size) {
  snprintf(out, size, "%s_marks", t->path);
}

/* A contiguous dataset of total rows, its space allocated now, so that
 * writing rows later touches no metadata; zero-filled when fill. */
static taso_err_t create_fixed(const taso_artifact_t *a, const char *name, hid_t type,
                               int64_t total, bool fill) {
  taso_err_t err = TASO_OK;
  hsize_t dims = (hsize_t)total;
  hid_t space = H5I_INVALID_HID, dcpl = H5I_INVALID_HID, dset = H5I_INVALID_HID;
  if ((space = H5Screate_simple(1, &dims, NULL)) < 0 ||
      (dcpl = H5Pcreate(H5P_DATASET_CREATE)) < 0 || H5Pset_layout(dcpl, H5D_CONTIGUOUS) < 0 ||
      H5Pset_alloc_time(dcpl, H5D_ALLOC_TIME_EARLY) < 0 ||
      H5Pset_fill_time(dcpl, fill ? H5D_FILL_TIME_ALLOC : H5D_FILL_TIME_NEVER) < 0 ||
      H5Pset_obj_track_times(dcpl, 0) < 0)
    err = h5_fail(a, "set up dataset %s", name);
  if (err == TASO_OK &&
      (dset = H5Dcreate2(a->file, name, type, space, H5P_DEFAULT, dcpl, H5P_DEFAULT)) < 0)
    err = h5_fail(a, "create dataset %s", name);
  err = release(a, dset, H5Dclose, err);
  err = release(a, dcpl, H5Pclose, err);
  return release(a, space, H5Sclose, err);
}

taso_err_t taso_artifact_create_slots(taso_artifact_t *a, const taso_table_t *t, int64_t total) {
  if (!a) return no_handle();
  quiet_t q = quiet_begin();
  char marks[256];
  hid_t type = H5I_INVALID_HID;
  bool exists = false;
  taso_err_t err = TASO_OK;
  marks_path(t, marks, sizeof marks);
  if (!a->writable)
    err = taso_error(TASO_ERR_ARG, "%s: opened read-only; cannot create %s", a->path, t->path);
  if (err == TASO_OK && total < 0) err = taso_error(TASO_ERR_ARG, "%s: bad slot count", a->path);
  if (err == TASO_OK) err = table_type(a, t, &type);
  if (err == TASO_OK) err = path_exists(a, t->path, &exists);
  if (err == TASO_OK && exists)
    err = taso_error(TASO_ERR_ARG, "%s: already holds %s", a->path, t->path);
  if ((err = settle(a, err)) == TASO_OK)
    err = settle(a, create_fixed(a, t->path, type, total, false));
  if (err == TASO_OK) err = settle(a, create_fixed(a, marks, H5T_NATIVE_UINT8, total, true));
  if (err == TASO_OK && H5Fflush(a->file, H5F_SCOPE_GLOBAL) < 0) err = h5_fail(a, "flush the file");
  err = release(a, type, H5Tclose, err);
  quiet_end(&q);
  return settle(a, err);
}

/* Writes buf (n elements of type) at slots[] of dataset name, collectively,
 * and flushes: the slots as runs of a union of hyperslabs. */
static taso_err_t write_at_slots(const taso_artifact_t *a, const char *name, hid_t type,
                                 const void *buf, const int64_t *slots, int64_t n) {
  static const int64_t nothing[4];
  taso_err_t err = TASO_OK;
  hsize_t mdims = n > 0 ? (hsize_t)n : 1;
  hid_t dset = H5I_INVALID_HID, fspace = H5I_INVALID_HID, mspace = H5I_INVALID_HID;
  if ((dset = H5Dopen2(a->file, name, H5P_DEFAULT)) < 0) err = h5_fail(a, "open %s", name);
  if (err == TASO_OK &&
      ((fspace = H5Dget_space(dset)) < 0 || (mspace = H5Screate_simple(1, &mdims, NULL)) < 0))
    err = h5_fail(a, "get the dataspaces of %s", name);
  if (err == TASO_OK && n == 0 && (H5Sselect_none(fspace) < 0 || H5Sselect_none(mspace) < 0))
    err = h5_fail(a, "select no rows of %s", name);
  /* A table of no slots (a run with no work) has no storage to write to;
   * its extent is the same on every rank, so all skip together. */
  hssize_t slots_in_file = err == TASO_OK ? H5Sget_simple_extent_npoints(fspace) : 1;
  if (err == TASO_OK && slots_in_file < 0) err = h5_fail(a, "get the extent of %s", name);
  if (err == TASO_OK && slots_in_file == 0) {
    release(a, mspace, H5Sclose, err);
    release(a, fspace, H5Sclose, err);
    return release(a, dset, H5Dclose, err);
  }
  for (int64_t i = 0; err == TASO_OK && i < n;) {
    int64_t j = i + 1;
    while (j < n && slots[j] == slots[j - 1] + 1)
      j++;
    hsize_t start = (hsize_t)slots[i], count = (hsize_t)(j - i);
    if (H5Sselect_hyperslab(fspace, i ? H5S_SELECT_OR : H5S_SELECT_SET, &start, NULL, &count,
                            NULL) < 0)
      err = h5_fail(a, "select rows of %s", name);
    i = j;
  }
  if ((err = settle(a, err)) == TASO_OK) {
    if (H5Dwrite(dset, type, mspace, fspace, a->xfer, n > 0 ? buf : (const void *)nothing) < 0)
      err = h5_fail(a, "write %s", name);
    if (err == TASO_OK && H5Fflush(a->file, H5F_SCOPE_GLOBAL) < 0)
      err = h5_fail(a, "flush the file");
    err = settle(a, err);
  }
  err = release(a, mspace, H5Sclose, err);
  err = release(a, fspace, H5Sclose, err);
  return release(a, dset, H5Dclose, err);
}

taso_err_t taso_artifact_put_slots(taso_artifact_t *a, const taso_table_t *t, const void *local,
                                   const int64_t *slots, int64_t n) {
  if (!a) return no_handle();
  quiet_t q = quiet_begin();
  char marks[256];
  hid_t type = H5I_INVALID_HID;
  unsigned char *ones = NULL;
  taso_err_t err = TASO_OK;
  marks_path(t, marks, sizeof marks);
  if (!a->writable)
    err = taso_error(TASO_ERR_ARG, "%s: opened read-only; cannot write %s", a->path, t->path);
  for (int64_t i = 0; err == TASO_OK && i < n; i++)
    if (slots[i] < 0 || (i > 0 && slots[i] <= slots[i - 1]))
      err = taso_error(TASO_ERR_ARG, "%s: %s: slots not strictly increasing", a->path, t->path);
  if (err == TASO_OK && !(ones = malloc(n > 0 ? (size_t)n : 1)))
    err = taso_error(TASO_ERR_NOMEM, "%s: no memory for %lld marks", a->path, (long long)n);
  if (err == TASO_OK) {
    memset(ones, 1, n > 0 ? (size_t)n : 1);
    err = table_type(a, t, &type);
  }
  /* The rows reach the file before their marks do. */
  if ((err = settle(a, err)) == TASO_OK) err = write_at_slots(a, t->path, type, local, slots, n);
  if (err == TASO_OK) err = write_at_slots(a, marks, H5T_NATIVE_UINT8, ones, slots, n);
  free(ones);
  err = release(a, type, H5Tclose, err);
  quiet_end(&q);
  return settle(a, err);
}

taso_err_t taso_artifact_read_marks(taso_artifact_t *a, const taso_table_t *t, int64_t lo,
                                    int64_t hi, unsigned char **marks) {
  if (!a) return no_handle();
  char name[256];
  marks_path(t, name, sizeof name);
  quiet_t q = quiet_begin();
  taso_err_t err = TASO_OK;
  int64_t n = 0, count = hi - lo;
  hid_t dset = H5I_INVALID_HID, fspace = H5I_INVALID_HID, mspace = H5I_INVALID_HID;
  hsize_t start = (hsize_t)lo, cnt = (hsize_t)count, mdims = count > 0 ? (hsize_t)count : 1;
  unsigned char *buf = NULL;
  *marks = NULL;
  err = open_rows(a, name, H5T_NATIVE_UINT8, &dset, &n);
  if (err == TASO_OK && (lo < 0 || hi < lo || hi > n))
    err = taso_error(TASO_ERR_FORMAT, "%s: %s has %lld slots, not the %lld expected", a->path, name,
                     (long long)n, (long long)hi);
  if (err == TASO_OK && !(buf = calloc(mdims, 1)))
    err = taso_error(TASO_ERR_NOMEM, "%s: no memory for %lld marks", a->path, (long long)count);
  if (err == TASO_OK &&
      ((fspace = H5Dget_space(dset)) < 0 || (mspace = H5Screate_simple(1, &mdims, NULL)) < 0))
    err = h5_fail(a, "get the dataspaces of %s", name);
  if (err == TASO_OK &&
      (count > 0 ? H5Sselect_hyperslab(fspace, H5S_SELECT_SET, &start, NULL, &cnt, NULL) < 0
                 : (H5Sselect_none(fspace) < 0 || H5Sselect_none(mspace) < 0)))
    err = h5_fail(a, "select marks of %s", name);
  /* No slots in the file (a run with no work): no storage to read. */
  if ((err = settle(a, err)) == TASO_OK && n > 0) {
    if (H5Dread(dset, H5T_NATIVE_UINT8, mspace, fspace, a->xfer, buf) < 0)
      err = h5_fail(a, "read %s", name);
    err = settle(a, err);
  }
  err = release(a, mspace, H5Sclose, err);
  err = release(a, fspace, H5Sclose, err);
  err = release(a, dset, H5Dclose, err);
  quiet_end(&q);
  if (err == TASO_OK)
    *marks = buf;
  else
    free(buf);
  return err;
}

taso_err_t taso_artifact_remove(taso_artifact_t *a, const char *path) {
  if (!a) return no_handle();
  quiet_t q = quiet_begin();
  bool exists = false;
  taso_err_t err = path_exists(a, path, &exists);
  if (err == TASO_OK && exists && H5Ldelete(a->file, path, H5P_DEFAULT) < 0)
    err = h5_fail(a, "remove %s", path);
  quiet_end(&q);
  return settle(a, err);
}
