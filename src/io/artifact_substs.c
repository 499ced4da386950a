/*
 * The substitution set (/substitutions) and the verifier's streamed
 * decisions (/decisions) of an artifact (see artifact.h).
 */
#define _POSIX_C_SOURCE 200809L

#include "artifact_impl.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

_Static_assert(sizeof(taso_decision_t) ==
                   2 * sizeof(int64_t) + 2 * sizeof(int32_t) + TASO_REASON_LEN,
               "taso_decision_t has padding");

/* The pad_ member stays out of the file; rows are copied into zeroed
 * memory before writing, so its bytes are always 0 there. */
static const taso_field_t decision_fields[] = {
    {"row", offsetof(taso_decision_t, row), TASO_FIELD_INT64, 0},
    {"seconds", offsetof(taso_decision_t, seconds), TASO_FIELD_DOUBLE, 0},
    {"verdict", offsetof(taso_decision_t, verdict), TASO_FIELD_INT32, 0},
    {"reason", offsetof(taso_decision_t, reason), TASO_FIELD_STRING, TASO_REASON_LEN},
};
const taso_table_t taso_decision_table = {"/decisions", sizeof(taso_decision_t), decision_fields,
                                          COUNT(decision_fields)};

static const taso_field_t subst_fields[] = {
    {"src", offsetof(taso_subst_t, src), TASO_FIELD_INT64, 0},
    {"dst", offsetof(taso_subst_t, dst), TASO_FIELD_INT64, 0},
    {"verdict", offsetof(taso_subst_t, verdict), TASO_FIELD_INT32, 0},
    {"seconds", offsetof(taso_subst_t, seconds), TASO_FIELD_DOUBLE, 0},
};
static const taso_table_t subst_table = {"/substitutions", sizeof(taso_subst_t), subst_fields,
                                         COUNT(subst_fields)};

/* ------------------------------------------------------------------------ */
/* Substitutions                                                            */
/* ------------------------------------------------------------------------ */
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
  if (err == TASO_OK) err = artifact_record_type(a, &subst_table, &type);
  if (err == TASO_OK) err = artifact_path_exists(a, subst_table.path, &exists);
  if (err == TASO_OK && exists)
    err = taso_error(TASO_ERR_ARG, "%s: already holds a substitution set", a->path);
  if ((err = artifact_settle(a, err)) != TASO_OK) goto done;
  artifact_place(a, &n, &offset, &total, 1);
  err = artifact_write_rows(a, subst_table.path, type, sizeof *rows, rows, n, offset, total);
done:
  free(rows);
  return artifact_release(a, type, H5Tclose, err);
}

taso_err_t taso_artifact_write_substs(taso_artifact_t *a, const taso_subst_t *local, int64_t n) {
  if (!a) return artifact_no_handle();
  artifact_quiet_t q = artifact_quiet_begin();
  taso_err_t err;
  if (!a->writable)
    err = taso_error(TASO_ERR_ARG, "%s: opened read-only; cannot write substitutions", a->path);
  else
    err = artifact_settle(a, write_substs(a, local, n));
  artifact_quiet_end(&q);
  return err;
}

static taso_err_t read_substs(taso_artifact_t *a, taso_subst_t **rows, int64_t *n) {
  hid_t type = H5I_INVALID_HID;
  taso_err_t err = artifact_settle(a, artifact_record_type(a, &subst_table, &type));
  *rows = NULL;
  *n = 0;
  if (err == TASO_OK)
    err = artifact_read_rows(a, subst_table.path, type, sizeof **rows, true, (void **)rows, n);
  for (int64_t i = 0; i < *n && err == TASO_OK; i++)
    if ((*rows)[i].verdict < TASO_VERDICT_CANDIDATE || (*rows)[i].verdict > TASO_VERDICT_REFUTED)
      err = taso_error(TASO_ERR_FORMAT, "%s: /substitutions row %lld has an unknown verdict %d",
                       a->path, (long long)i, (int)(*rows)[i].verdict);
  if (err != TASO_OK) {
    free(*rows);
    *rows = NULL;
    *n = 0;
  }
  return artifact_release(a, type, H5Tclose, err);
}

taso_err_t taso_artifact_read_substs(taso_artifact_t *a, taso_subst_t **rows, int64_t *n) {
  if (!a) return artifact_no_handle();
  artifact_quiet_t q = artifact_quiet_begin();
  taso_err_t err = artifact_settle(a, read_substs(a, rows, n));
  artifact_quiet_end(&q);
  return err;
}

/* ------------------------------------------------------------------------ */
/* Decisions: the verifier's streamed results                               */
/* ------------------------------------------------------------------------ */

/* Appends (or, with rewrite, overwrites from row 0) each rank's rows in
 * rank order, then flushes so that a killed run keeps them. */
static taso_err_t put_decisions(taso_artifact_t *a, const taso_decision_t *local, int64_t n,
                                bool rewrite) {
  const char *name = taso_decision_table.path;
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
  if (err == TASO_OK) err = artifact_record_type(a, &taso_decision_table, &type);
  if (err == TASO_OK) err = artifact_path_exists(a, name, &exists);
  if ((err = artifact_settle(a, err)) != TASO_OK) goto done;
  artifact_place(a, &n, &offset, &total, 1);
  if (!exists)
    err = artifact_create_dataset(a, name, type, sizeof *rows, 0, &dset);
  else if ((dset = H5Dopen2(a->file, name, H5P_DEFAULT)) < 0)
    err = artifact_h5_fail(a, "open %s", name);
  if (err == TASO_OK &&
      ((space = H5Dget_space(dset)) < 0 || H5Sget_simple_extent_dims(space, &cur, NULL) != 1))
    err = artifact_h5_fail(a, "get the size of %s", name);
  if (err == TASO_OK && rewrite && (int64_t)cur != total)
    err = taso_error(TASO_ERR_ARG, "%s: rewriting %lld decisions over %lld", a->path,
                     (long long)total, (long long)cur);
  if ((err = artifact_settle(a, err)) != TASO_OK) goto done;
  if (!rewrite && total > 0) {
    hsize_t size = cur + (hsize_t)total;
    if (H5Dset_extent(dset, &size) < 0) err = artifact_h5_fail(a, "extend %s", name);
    if ((err = artifact_settle(a, err)) != TASO_OK) goto done;
  }
  if (total > 0) {
    int64_t start = (rewrite ? 0 : (int64_t)cur) + offset;
    err = artifact_settle(a, artifact_write_slab(a, dset, name, type, rows, start, n));
  }
  if (err == TASO_OK && H5Fflush(a->file, H5F_SCOPE_GLOBAL) < 0)
    err = artifact_h5_fail(a, "flush the file");
  err = artifact_settle(a, err);
done:
  free(rows);
  err = artifact_release(a, space, H5Sclose, err);
  err = artifact_release(a, dset, H5Dclose, err);
  return artifact_release(a, type, H5Tclose, err);
}

static taso_err_t decisions_call(taso_artifact_t *a, const taso_decision_t *local, int64_t n,
                                 bool rewrite) {
  if (!a) return artifact_no_handle();
  artifact_quiet_t q = artifact_quiet_begin();
  taso_err_t err;
  if (!a->writable)
    err = taso_error(TASO_ERR_ARG, "%s: opened read-only; cannot write decisions", a->path);
  else
    err = artifact_settle(a, put_decisions(a, local, n, rewrite));
  artifact_quiet_end(&q);
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
  taso_err_t err = artifact_settle(a, artifact_record_type(a, &taso_decision_table, &type));
  *rows = NULL;
  *n = 0;
  if (err == TASO_OK)
    err = artifact_read_rows(a, taso_decision_table.path, type, sizeof **rows, true, (void **)rows,
                             n);
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
  return artifact_release(a, type, H5Tclose, err);
}

taso_err_t taso_artifact_read_decisions(taso_artifact_t *a, taso_decision_t **rows, int64_t *n) {
  if (!a) return artifact_no_handle();
  artifact_quiet_t q = artifact_quiet_begin();
  taso_err_t err = artifact_settle(a, read_decisions(a, rows, n));
  artifact_quiet_end(&q);
  return err;
}
