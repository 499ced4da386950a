/*
 * Tables of fixed-size records in an artifact (see artifact.h): the HDF5
 * type of every record, built from its taso_table_t (the artifact's own
 * records in artifact_graphs.c and artifact_substs.c, a stage's own in its
 * module: one way of describing a record), the chunked datasets that rows
 * are written to collectively in rank order and read back whole, a stage's
 * own tables, and slot tables, the streams that a kill cannot corrupt.
 */
#define _POSIX_C_SOURCE 200809L

#include "artifact_impl.h"

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define DEFLATE_LEVEL 6
#define CHUNK_BYTES 65536 /* per chunk: deflate does well, an append rewrites little */

/* ------------------------------------------------------------------------ */
/* Record types                                                             */
/* ------------------------------------------------------------------------ */

/* The element type of field f: a native number, or for a string a type of
 * its own in *own (the caller closes it). */
static taso_err_t element_type(const taso_artifact_t *a, const taso_table_t *t,
                               const taso_field_t *f, hid_t *base, hid_t *own) {
  *own = H5I_INVALID_HID;
  switch (f->kind) {
  case TASO_FIELD_INT32:
    *base = H5T_NATIVE_INT32;
    return TASO_OK;
  case TASO_FIELD_INT64:
    *base = H5T_NATIVE_INT64;
    return TASO_OK;
  case TASO_FIELD_UINT64:
    *base = H5T_NATIVE_UINT64;
    return TASO_OK;
  case TASO_FIELD_DOUBLE:
    *base = H5T_NATIVE_DOUBLE;
    return TASO_OK;
  case TASO_FIELD_FLOAT:
    *base = H5T_NATIVE_FLOAT;
    return TASO_OK;
  case TASO_FIELD_STRING:
    if ((*own = H5Tcopy(H5T_C_S1)) < 0 || H5Tset_size(*own, f->size) < 0 ||
        H5Tset_strpad(*own, H5T_STR_NULLTERM) < 0)
      return artifact_h5_fail(a, "create the string type of field '%s' of %s",
                              f->name ? f->name : "(element)", t->path);
    *base = *own;
    return TASO_OK;
  }
  return taso_error(TASO_ERR_ARG, "%s: %s: field of unknown kind %d", a->path, t->path,
                    (int)f->kind);
}

taso_err_t artifact_record_type(const taso_artifact_t *a, const taso_table_t *t, hid_t *out) {
  taso_err_t err = TASO_OK;
  hid_t base = H5I_INVALID_HID, own = H5I_INVALID_HID;
  if (t->nfields == 1 && !t->fields[0].name) {
    err = element_type(a, t, &t->fields[0], &base, &own);
    if (err == TASO_OK && (*out = H5Tcopy(base)) < 0)
      err = artifact_h5_fail(a, "create the element type of %s", t->path);
    return artifact_release(a, own, H5Tclose, err);
  }
  hid_t type = H5Tcreate(H5T_COMPOUND, t->size);
  if (type < 0) return artifact_h5_fail(a, "create the record type of %s", t->path);
  for (int i = 0; i < t->nfields && err == TASO_OK; i++) {
    const taso_field_t *f = &t->fields[i];
    /* A number field of size n > 1 is an array of n; 0 and 1 a scalar. */
    hsize_t n = f->kind == TASO_FIELD_STRING ? 1 : (hsize_t)f->size;
    hid_t array = H5I_INVALID_HID;
    err = element_type(a, t, f, &base, &own);
    if (err == TASO_OK && n > 1 && (array = H5Tarray_create2(base, 1, &n)) < 0)
      err = artifact_h5_fail(a, "create the array type of field '%s' of %s", f->name, t->path);
    if (err == TASO_OK && H5Tinsert(type, f->name, f->offset, n > 1 ? array : base) < 0)
      err = artifact_h5_fail(a, "add field '%s' to the record type of %s", f->name, t->path);
    err = artifact_release(a, array, H5Tclose, err);
    err = artifact_release(a, own, H5Tclose, err);
  }
  if (err != TASO_OK) return artifact_release(a, type, H5Tclose, err);
  *out = type;
  return TASO_OK;
}

/* ------------------------------------------------------------------------ */
/* Datasets                                                                 */
/* ------------------------------------------------------------------------ */

/* Whether every link of an absolute path exists: H5Lexists fails, rather
 * than answering no, when a group on the way is missing. */
taso_err_t artifact_path_exists(const taso_artifact_t *a, const char *name, bool *found) {
  char prefix[64];
  size_t len = strlen(name);
  if (len >= sizeof prefix) return taso_error(TASO_ERR_ARG, "dataset name '%s' too long", name);
  *found = true;
  for (size_t i = 1; i <= len && *found; i++) {
    if (i < len && name[i] != '/') continue;
    memcpy(prefix, name, i);
    prefix[i] = '\0';
    htri_t e = H5Lexists(a->file, prefix, H5P_DEFAULT);
    if (e < 0) return artifact_h5_fail(a, "look up %s", prefix);
    *found = e > 0;
  }
  return TASO_OK;
}

/* Each rank's first row and the total over ranks, for k counts at once.
 * Offsets follow rank order, so the file does not depend on how the work
 * was divided. */
void artifact_place(const taso_artifact_t *a, const int64_t *local, int64_t *offset, int64_t *total,
                    int k) {
  MPI_Exscan(local, offset, k, MPI_INT64_T, MPI_SUM, a->comm);
  if (a->rank == 0)
    for (int i = 0; i < k; i++)
      offset[i] = 0; /* MPI_Exscan leaves rank 0's undefined */
  MPI_Allreduce(local, total, k, MPI_INT64_T, MPI_SUM, a->comm);
}

/* Creates a chunked, compressed one-dimensional dataset of total rows that
 * can grow later (so 0 rows is a valid size). Collective. */
taso_err_t artifact_create_dataset(const taso_artifact_t *a, const char *name, hid_t type,
                                   size_t rec_size, int64_t total, hid_t *dset) {
  taso_err_t err = TASO_OK;
  hsize_t dims = (hsize_t)total, maxdims = H5S_UNLIMITED;
  hsize_t chunk = CHUNK_BYTES / rec_size > 0 ? CHUNK_BYTES / rec_size : 1;
  hid_t space = H5I_INVALID_HID, dcpl = H5I_INVALID_HID;
  if ((space = H5Screate_simple(1, &dims, &maxdims)) < 0) {
    err = artifact_h5_fail(a, "create the dataspace of %s", name);
    goto done;
  }
  /* Every row is always written, so fill values would only cost a pass of
   * writes, and parallel HDF5 cannot write them to a filtered dataset. */
  if ((dcpl = H5Pcreate(H5P_DATASET_CREATE)) < 0 || H5Pset_chunk(dcpl, 1, &chunk) < 0 ||
      H5Pset_deflate(dcpl, DEFLATE_LEVEL) < 0 || H5Pset_fill_time(dcpl, H5D_FILL_TIME_NEVER) < 0) {
    err = artifact_h5_fail(a, "set up chunking and compression for %s", name);
    goto done;
  }
  if ((*dset = H5Dcreate2(a->file, name, type, space, H5P_DEFAULT, dcpl, H5P_DEFAULT)) < 0)
    err = artifact_h5_fail(a, "create dataset %s", name);
done:
  err = artifact_release(a, dcpl, H5Pclose, err);
  return artifact_release(a, space, H5Sclose, err);
}

/* Writes this rank's n rows at offset, collectively. A rank with no rows
 * still takes part, with nothing selected in either dataspace. */
taso_err_t artifact_write_slab(const taso_artifact_t *a, hid_t dset, const char *name, hid_t type,
                               const void *rows, int64_t offset, int64_t n) {
  static const int64_t nothing[4]; /* a valid buffer for an empty selection */
  taso_err_t err = TASO_OK;
  hsize_t start = (hsize_t)offset, count = (hsize_t)n, mdims = n > 0 ? (hsize_t)n : 1;
  hid_t fspace = H5I_INVALID_HID, mspace = H5I_INVALID_HID;
  if ((fspace = H5Dget_space(dset)) < 0 || (mspace = H5Screate_simple(1, &mdims, NULL)) < 0) {
    err = artifact_h5_fail(a, "get the dataspaces of %s", name);
    goto done;
  }
  if (n > 0 ? H5Sselect_hyperslab(fspace, H5S_SELECT_SET, &start, NULL, &count, NULL) < 0
            : (H5Sselect_none(fspace) < 0 || H5Sselect_none(mspace) < 0)) {
    err = artifact_h5_fail(a, "select this rank's rows of %s", name);
    goto done;
  }
  if (H5Dwrite(dset, type, mspace, fspace, a->xfer, n > 0 ? rows : (const void *)nothing) < 0)
    err = artifact_h5_fail(a, "write %s", name);
done:
  err = artifact_release(a, mspace, H5Sclose, err);
  return artifact_release(a, fspace, H5Sclose, err);
}

/* Creates dataset name and writes every rank's rows into it. Collective. */
taso_err_t artifact_write_rows(const taso_artifact_t *a, const char *name, hid_t type,
                               size_t rec_size, const void *rows, int64_t n, int64_t offset,
                               int64_t total) {
  hid_t dset = H5I_INVALID_HID;
  taso_err_t err =
      artifact_settle(a, artifact_create_dataset(a, name, type, rec_size, total, &dset));
  if (err == TASO_OK && total > 0)
    err = artifact_settle(a, artifact_write_slab(a, dset, name, type, rows, offset, n));
  err = artifact_release(a, dset, H5Dclose, err);
  return artifact_settle(a, err);
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
    err = artifact_h5_fail(a, "inspect dataset %s", name);
    goto done;
  }
  if (ndims != 1 || have != want) {
    err =
        taso_error(TASO_ERR_FORMAT, "%s: %s is not a table of the expected records", a->path, name);
    goto done;
  }
  if (H5Sget_simple_extent_dims(space, &dims, NULL) < 0) {
    err = artifact_h5_fail(a, "get the size of %s", name);
    goto done;
  }
  if (want == H5T_COMPOUND) {
    if ((members = H5Tget_nmembers(type)) < 0) {
      err = artifact_h5_fail(a, "inspect a record type");
      goto done;
    }
    for (int i = 0; i < members && err == TASO_OK; i++) {
      char *field = H5Tget_member_name(type, (unsigned)i);
      if (!field) {
        err = artifact_h5_fail(a, "inspect a record type");
        break;
      }
      if (H5Tget_member_index(ftype, field) < 0)
        err = taso_error(TASO_ERR_FORMAT, "%s: %s has no field '%s'", a->path, name, field);
      if (H5free_memory(field) < 0 && err == TASO_OK)
        err = artifact_h5_fail(a, "free a field name");
    }
  }
  *n = (int64_t)dims;
done:
  err = artifact_release(a, ftype, H5Tclose, err);
  err = artifact_release(a, space, H5Sclose, err);
  if (err != TASO_OK) {
    artifact_release(a, *dset, H5Dclose, err);
    *dset = H5I_INVALID_HID;
  }
  return err;
}

/* Every rank reads the whole of dataset name into *rows (malloc'd, NULL for
 * 0 rows). A missing dataset is 0 rows when optional and a format error
 * otherwise. Collective. */
taso_err_t artifact_read_rows(const taso_artifact_t *a, const char *name, hid_t type,
                              size_t rec_size, bool optional, void **rows, int64_t *n) {
  taso_err_t err;
  hid_t dset = H5I_INVALID_HID;
  bool found = false;
  void *buf = NULL;
  *rows = NULL;
  *n = 0;
  err = artifact_path_exists(a, name, &found);
  if (err == TASO_OK && !found && !optional)
    err = taso_error(TASO_ERR_FORMAT, "%s: no dataset %s", a->path, name);
  if (err == TASO_OK && found) err = open_rows(a, name, type, &dset, n);
  if (err == TASO_OK && *n > 0) {
    if ((uint64_t)*n > SIZE_MAX / rec_size || !(buf = malloc((size_t)*n * rec_size)))
      err = taso_error(TASO_ERR_NOMEM, "%s: no memory for %lld rows of %s", a->path, (long long)*n,
                       name);
  }
  /* Only the read below is collective; settle the local failures first. */
  err = artifact_settle(a, err);
  if (err == TASO_OK && *n > 0) {
    if (H5Dread(dset, type, H5S_ALL, H5S_ALL, a->xfer, buf) < 0)
      err = artifact_h5_fail(a, "read %s", name);
    err = artifact_settle(a, err);
  }
  err = artifact_release(a, dset, H5Dclose, err);
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
/* Tables of a stage's own records                                          */
/* ------------------------------------------------------------------------ */

static taso_err_t append_table(taso_artifact_t *a, const taso_table_t *t, const void *local,
                               int64_t n) {
  taso_err_t err = TASO_OK;
  hid_t type = H5I_INVALID_HID, dset = H5I_INVALID_HID, space = H5I_INVALID_HID;
  int64_t offset = 0, total = 0;
  hsize_t cur = 0;
  bool exists = false;
  if (n < 0 || (n > 0 && !local)) err = taso_error(TASO_ERR_ARG, "%s: bad local rows", a->path);
  if (err == TASO_OK) err = artifact_record_type(a, t, &type);
  if (err == TASO_OK) err = artifact_path_exists(a, t->path, &exists);
  if ((err = artifact_settle(a, err)) != TASO_OK) goto done;
  artifact_place(a, &n, &offset, &total, 1);
  if (!exists)
    err = artifact_create_dataset(a, t->path, type, t->size, 0, &dset);
  else if ((dset = H5Dopen2(a->file, t->path, H5P_DEFAULT)) < 0)
    err = artifact_h5_fail(a, "open %s", t->path);
  if (err == TASO_OK &&
      ((space = H5Dget_space(dset)) < 0 || H5Sget_simple_extent_dims(space, &cur, NULL) != 1))
    err = artifact_h5_fail(a, "get the size of %s", t->path);
  if ((err = artifact_settle(a, err)) != TASO_OK) goto done;
  if (total > 0) {
    hsize_t size = cur + (hsize_t)total;
    if (H5Dset_extent(dset, &size) < 0) err = artifact_h5_fail(a, "extend %s", t->path);
    if ((err = artifact_settle(a, err)) != TASO_OK) goto done;
    err = artifact_settle(
        a, artifact_write_slab(a, dset, t->path, type, local, (int64_t)cur + offset, n));
  }
  if (err == TASO_OK && H5Fflush(a->file, H5F_SCOPE_GLOBAL) < 0)
    err = artifact_h5_fail(a, "flush the file");
  err = artifact_settle(a, err);
done:
  err = artifact_release(a, space, H5Sclose, err);
  err = artifact_release(a, dset, H5Dclose, err);
  return artifact_release(a, type, H5Tclose, err);
}

taso_err_t taso_artifact_append_table(taso_artifact_t *a, const taso_table_t *t, const void *local,
                                      int64_t n) {
  if (!a) return artifact_no_handle();
  artifact_quiet_t q = artifact_quiet_begin();
  taso_err_t err;
  if (!a->writable)
    err = taso_error(TASO_ERR_ARG, "%s: opened read-only; cannot write %s", a->path, t->path);
  else
    err = artifact_settle(a, append_table(a, t, local, n));
  artifact_quiet_end(&q);
  return err;
}

taso_err_t taso_artifact_table_length(taso_artifact_t *a, const taso_table_t *t, int64_t *n) {
  if (!a) return artifact_no_handle();
  artifact_quiet_t q = artifact_quiet_begin();
  hid_t type = H5I_INVALID_HID, dset = H5I_INVALID_HID;
  bool exists = false;
  *n = 0;
  taso_err_t err = artifact_path_exists(a, t->path, &exists);
  if (err == TASO_OK && exists && (err = artifact_record_type(a, t, &type)) == TASO_OK)
    err = open_rows(a, t->path, type, &dset, n);
  err = artifact_release(a, dset, H5Dclose, err);
  err = artifact_release(a, type, H5Tclose, err);
  artifact_quiet_end(&q);
  return artifact_settle(a, err);
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
  err = artifact_record_type(a, t, &type);
  if (err == TASO_OK) err = open_rows(a, t->path, type, &dset, &n);
  if (err == TASO_OK && (lo < 0 || hi < lo || hi > n))
    err = taso_error(TASO_ERR_FORMAT, "%s: %s has %lld rows, not the %lld expected", a->path,
                     t->path, (long long)n, (long long)hi);
  if (err == TASO_OK && count > 0 && !(buf = malloc((size_t)count * t->size)))
    err = taso_error(TASO_ERR_NOMEM, "%s: no memory for %lld rows", a->path, (long long)count);
  if (err == TASO_OK) {
    hsize_t start = (hsize_t)lo, cnt = (hsize_t)count, mdims = count > 0 ? (hsize_t)count : 1;
    if ((fspace = H5Dget_space(dset)) < 0 || (mspace = H5Screate_simple(1, &mdims, NULL)) < 0)
      err = artifact_h5_fail(a, "get the dataspaces of %s", t->path);
    else if (count > 0 ? H5Sselect_hyperslab(fspace, H5S_SELECT_SET, &start, NULL, &cnt, NULL) < 0
                       : (H5Sselect_none(fspace) < 0 || H5Sselect_none(mspace) < 0))
      err = artifact_h5_fail(a, "select rows of %s", t->path);
  }
  /* An empty table (a run with no work) may have no storage to read. */
  if ((err = artifact_settle(a, err)) == TASO_OK && n > 0) {
    if (H5Dread(dset, type, mspace, fspace, a->xfer, count > 0 ? buf : (void *)nothing) < 0)
      err = artifact_h5_fail(a, "read %s", t->path);
    err = artifact_settle(a, err);
  }
  err = artifact_release(a, mspace, H5Sclose, err);
  err = artifact_release(a, fspace, H5Sclose, err);
  err = artifact_release(a, dset, H5Dclose, err);
  err = artifact_release(a, type, H5Tclose, err);
  if (err == TASO_OK)
    *rows = buf;
  else
    free(buf);
  return err;
}

taso_err_t taso_artifact_read_table(taso_artifact_t *a, const taso_table_t *t, int64_t lo,
                                    int64_t hi, void **rows) {
  if (!a) return artifact_no_handle();
  artifact_quiet_t q = artifact_quiet_begin();
  taso_err_t err = artifact_settle(a, read_table(a, t, lo, hi, rows));
  artifact_quiet_end(&q);
  return err;
}

taso_err_t taso_artifact_write_table(taso_artifact_t *a, const taso_table_t *t, const void *local,
                                     int64_t n, int64_t offset, int64_t total) {
  if (!a) return artifact_no_handle();
  artifact_quiet_t q = artifact_quiet_begin();
  hid_t type = H5I_INVALID_HID;
  bool exists = false;
  taso_err_t err = TASO_OK;
  if (!a->writable)
    err = taso_error(TASO_ERR_ARG, "%s: opened read-only; cannot write %s", a->path, t->path);
  if (err == TASO_OK) err = artifact_record_type(a, t, &type);
  if (err == TASO_OK) err = artifact_path_exists(a, t->path, &exists);
  if (err == TASO_OK && exists)
    err = taso_error(TASO_ERR_ARG, "%s: already holds %s", a->path, t->path);
  if ((err = artifact_settle(a, err)) == TASO_OK)
    err = artifact_write_rows(a, t->path, type, t->size, local, n, offset, total);
  if (err == TASO_OK && H5Fflush(a->file, H5F_SCOPE_GLOBAL) < 0)
    err = artifact_h5_fail(a, "flush the file");
  err = artifact_release(a, type, H5Tclose, err);
  artifact_quiet_end(&q);
  return artifact_settle(a, err);
}

/* Opens table t's dataset for one of its attributes, or gives
 * TASO_ERR_FORMAT naming it. */
static taso_err_t open_table(const taso_artifact_t *a, const taso_table_t *t, hid_t *dset) {
  bool exists = false;
  TASO_TRY(artifact_path_exists(a, t->path, &exists));
  if (!exists) return taso_error(TASO_ERR_FORMAT, "%s: no dataset %s", a->path, t->path);
  if ((*dset = H5Dopen2(a->file, t->path, H5P_DEFAULT)) < 0)
    return artifact_h5_fail(a, "open %s", t->path);
  return TASO_OK;
}

taso_err_t taso_artifact_set_table_string(taso_artifact_t *a, const taso_table_t *t,
                                          const char *name, const char *value) {
  if (!a) return artifact_no_handle();
  artifact_quiet_t q = artifact_quiet_begin();
  hid_t dset = H5I_INVALID_HID;
  taso_err_t err = TASO_OK;
  if (!a->writable)
    err = taso_error(TASO_ERR_ARG, "%s: opened read-only; cannot set '%s' of %s", a->path, name,
                     t->path);
  if (err == TASO_OK) err = open_table(a, t, &dset);
  if (err == TASO_OK) err = artifact_put_string_at(a, dset, name, value);
  err = artifact_release(a, dset, H5Dclose, err);
  artifact_quiet_end(&q);
  return artifact_settle(a, err);
}

taso_err_t taso_artifact_get_table_string(taso_artifact_t *a, const taso_table_t *t,
                                          const char *name, char **value) {
  if (!a) return artifact_no_handle();
  artifact_quiet_t q = artifact_quiet_begin();
  hid_t dset = H5I_INVALID_HID;
  *value = NULL;
  taso_err_t err = open_table(a, t, &dset);
  htri_t exists = err == TASO_OK ? H5Aexists(dset, name) : 1;
  if (exists < 0) err = artifact_h5_fail(a, "look up attribute '%s' of %s", name, t->path);
  if (exists == 0)
    err = taso_error(TASO_ERR_FORMAT, "%s: %s has no attribute '%s'", a->path, t->path, name);
  if (err == TASO_OK) err = artifact_get_string(a, dset, name, value);
  err = artifact_release(a, dset, H5Dclose, err);
  if (err != TASO_OK) {
    free(*value);
    *value = NULL;
  }
  artifact_quiet_end(&q);
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
    err = artifact_h5_fail(a, "set up dataset %s", name);
  if (err == TASO_OK &&
      (dset = H5Dcreate2(a->file, name, type, space, H5P_DEFAULT, dcpl, H5P_DEFAULT)) < 0)
    err = artifact_h5_fail(a, "create dataset %s", name);
  err = artifact_release(a, dset, H5Dclose, err);
  err = artifact_release(a, dcpl, H5Pclose, err);
  return artifact_release(a, space, H5Sclose, err);
}

taso_err_t taso_artifact_create_slots(taso_artifact_t *a, const taso_table_t *t, int64_t total) {
  if (!a) return artifact_no_handle();
  artifact_quiet_t q = artifact_quiet_begin();
  char marks[256];
  hid_t type = H5I_INVALID_HID;
  bool exists = false;
  taso_err_t err = TASO_OK;
  marks_path(t, marks, sizeof marks);
  if (!a->writable)
    err = taso_error(TASO_ERR_ARG, "%s: opened read-only; cannot create %s", a->path, t->path);
  if (err == TASO_OK && total < 0) err = taso_error(TASO_ERR_ARG, "%s: bad slot count", a->path);
  if (err == TASO_OK) err = artifact_record_type(a, t, &type);
  if (err == TASO_OK) err = artifact_path_exists(a, t->path, &exists);
  if (err == TASO_OK && exists)
    err = taso_error(TASO_ERR_ARG, "%s: already holds %s", a->path, t->path);
  if ((err = artifact_settle(a, err)) == TASO_OK)
    err = artifact_settle(a, create_fixed(a, t->path, type, total, false));
  if (err == TASO_OK)
    err = artifact_settle(a, create_fixed(a, marks, H5T_NATIVE_UINT8, total, true));
  if (err == TASO_OK && H5Fflush(a->file, H5F_SCOPE_GLOBAL) < 0)
    err = artifact_h5_fail(a, "flush the file");
  err = artifact_release(a, type, H5Tclose, err);
  artifact_quiet_end(&q);
  return artifact_settle(a, err);
}

/* Writes buf (n elements of type) at slots[] of dataset name, collectively,
 * and flushes: the slots as runs of a union of hyperslabs. */
static taso_err_t write_at_slots(const taso_artifact_t *a, const char *name, hid_t type,
                                 const void *buf, const int64_t *slots, int64_t n) {
  static const int64_t nothing[4];
  taso_err_t err = TASO_OK;
  hsize_t mdims = n > 0 ? (hsize_t)n : 1;
  hid_t dset = H5I_INVALID_HID, fspace = H5I_INVALID_HID, mspace = H5I_INVALID_HID;
  if ((dset = H5Dopen2(a->file, name, H5P_DEFAULT)) < 0) err = artifact_h5_fail(a, "open %s", name);
  if (err == TASO_OK &&
      ((fspace = H5Dget_space(dset)) < 0 || (mspace = H5Screate_simple(1, &mdims, NULL)) < 0))
    err = artifact_h5_fail(a, "get the dataspaces of %s", name);
  if (err == TASO_OK && n == 0 && (H5Sselect_none(fspace) < 0 || H5Sselect_none(mspace) < 0))
    err = artifact_h5_fail(a, "select no rows of %s", name);
  /* A table of no slots (a run with no work) has no storage to write to;
   * its extent is the same on every rank, so all skip together. */
  hssize_t slots_in_file = err == TASO_OK ? H5Sget_simple_extent_npoints(fspace) : 1;
  if (err == TASO_OK && slots_in_file < 0) err = artifact_h5_fail(a, "get the extent of %s", name);
  if (err == TASO_OK && slots_in_file == 0) {
    artifact_release(a, mspace, H5Sclose, err);
    artifact_release(a, fspace, H5Sclose, err);
    return artifact_release(a, dset, H5Dclose, err);
  }
  for (int64_t i = 0; err == TASO_OK && i < n;) {
    int64_t j = i + 1;
    while (j < n && slots[j] == slots[j - 1] + 1)
      j++;
    hsize_t start = (hsize_t)slots[i], count = (hsize_t)(j - i);
    if (H5Sselect_hyperslab(fspace, i ? H5S_SELECT_OR : H5S_SELECT_SET, &start, NULL, &count,
                            NULL) < 0)
      err = artifact_h5_fail(a, "select rows of %s", name);
    i = j;
  }
  if ((err = artifact_settle(a, err)) == TASO_OK) {
    if (H5Dwrite(dset, type, mspace, fspace, a->xfer, n > 0 ? buf : (const void *)nothing) < 0)
      err = artifact_h5_fail(a, "write %s", name);
    if (err == TASO_OK && H5Fflush(a->file, H5F_SCOPE_GLOBAL) < 0)
      err = artifact_h5_fail(a, "flush the file");
    err = artifact_settle(a, err);
  }
  err = artifact_release(a, mspace, H5Sclose, err);
  err = artifact_release(a, fspace, H5Sclose, err);
  return artifact_release(a, dset, H5Dclose, err);
}

taso_err_t taso_artifact_put_slots(taso_artifact_t *a, const taso_table_t *t, const void *local,
                                   const int64_t *slots, int64_t n) {
  if (!a) return artifact_no_handle();
  artifact_quiet_t q = artifact_quiet_begin();
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
    err = artifact_record_type(a, t, &type);
  }
  /* The rows reach the file before their marks do. */
  if ((err = artifact_settle(a, err)) == TASO_OK)
    err = write_at_slots(a, t->path, type, local, slots, n);
  if (err == TASO_OK) err = write_at_slots(a, marks, H5T_NATIVE_UINT8, ones, slots, n);
  free(ones);
  err = artifact_release(a, type, H5Tclose, err);
  artifact_quiet_end(&q);
  return artifact_settle(a, err);
}

taso_err_t taso_artifact_read_marks(taso_artifact_t *a, const taso_table_t *t, int64_t lo,
                                    int64_t hi, unsigned char **marks) {
  if (!a) return artifact_no_handle();
  char name[256];
  marks_path(t, name, sizeof name);
  artifact_quiet_t q = artifact_quiet_begin();
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
    err = artifact_h5_fail(a, "get the dataspaces of %s", name);
  if (err == TASO_OK &&
      (count > 0 ? H5Sselect_hyperslab(fspace, H5S_SELECT_SET, &start, NULL, &cnt, NULL) < 0
                 : (H5Sselect_none(fspace) < 0 || H5Sselect_none(mspace) < 0)))
    err = artifact_h5_fail(a, "select marks of %s", name);
  /* No slots in the file (a run with no work): no storage to read. */
  if ((err = artifact_settle(a, err)) == TASO_OK && n > 0) {
    if (H5Dread(dset, H5T_NATIVE_UINT8, mspace, fspace, a->xfer, buf) < 0)
      err = artifact_h5_fail(a, "read %s", name);
    err = artifact_settle(a, err);
  }
  err = artifact_release(a, mspace, H5Sclose, err);
  err = artifact_release(a, fspace, H5Sclose, err);
  err = artifact_release(a, dset, H5Dclose, err);
  artifact_quiet_end(&q);
  if (err == TASO_OK)
    *marks = buf;
  else
    free(buf);
  return err;
}

taso_err_t taso_artifact_remove(taso_artifact_t *a, const char *path) {
  if (!a) return artifact_no_handle();
  artifact_quiet_t q = artifact_quiet_begin();
  bool exists = false;
  taso_err_t err = artifact_path_exists(a, path, &exists);
  if (err == TASO_OK && exists && H5Ldelete(a->file, path, H5P_DEFAULT) < 0)
    err = artifact_h5_fail(a, "remove %s", path);
  artifact_quiet_end(&q);
  return artifact_settle(a, err);
}
