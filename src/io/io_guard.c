/*
 * The MPI-IO calls through which HDF5 writes (see io_guard.h). They are
 * defined here under their MPI names, so the linker binds HDF5's calls to
 * them, and each one calls the MPI library's own PMPI_ version.
 *
 * A collective call is always passed on, even after a failure, so that the
 * ranks stay in step inside MPI. Only the main thread does I/O in taso, so
 * the table needs no lock.
 */
#include "io_guard.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

#define MAX_FILES 32 /* files open at once: a tool holds two or three */
#define REASON_LEN 160

typedef struct {
  MPI_File fh;             /* the file; MPI_FILE_NULL when the slot is free */
  bool failed;             /* a write failed on this rank */
  char reason[REASON_LEN]; /* the first failure's reason */
  bool vague;              /* reason is TASO_IO_GUARD_SHORT: a later one may say more */
  bool sealed;             /* the ranks agreed to write nothing more to it */
} failure_t;

static failure_t failures[MAX_FILES];
static bool table_ready;

static failure_t *slot_of(MPI_File fh, bool create) {
  if (!table_ready) {
    for (int i = 0; i < MAX_FILES; i++)
      failures[i].fh = MPI_FILE_NULL;
    table_ready = true;
  }
  for (int i = 0; i < MAX_FILES; i++)
    if (failures[i].fh == fh) return &failures[i];
  if (!create) return NULL;
  for (int i = 0; i < MAX_FILES; i++)
    if (failures[i].fh == MPI_FILE_NULL) return &failures[i];
  /* A full table would need 32 failed files still open; the last slot is
   * reused, so that a failure is never forgotten for want of room. */
  return &failures[MAX_FILES - 1];
}

/* The system's words for a failure: errno where the MPI library left it
 * (Open MPI's OMPIO returns a generic code after a failed pwritev), else
 * the MPI error class, else MPI's own text. */
static void describe(int rc, int saved_errno, char *out, size_t len) {
  int cls = MPI_ERR_OTHER, n = 0;
  char text[MPI_MAX_ERROR_STRING];
  switch (saved_errno) {
  case ENOSPC:
  case EDQUOT:
  case EFBIG:
  case EIO:
  case EROFS:
  case EACCES:
  case ESTALE:
    snprintf(out, len, "%s", strerror(saved_errno));
    return;
  default:
    break;
  }
  MPI_Error_class(rc, &cls);
  if (cls == MPI_ERR_NO_SPACE) {
    snprintf(out, len, "%s", strerror(ENOSPC));
  } else if (cls == MPI_ERR_QUOTA) {
    snprintf(out, len, "%s", strerror(EDQUOT));
  } else if (cls == MPI_ERR_READ_ONLY) {
    snprintf(out, len, "%s", strerror(EROFS));
  } else if (cls == MPI_ERR_ACCESS) {
    snprintf(out, len, "%s", strerror(EACCES));
  } else if (MPI_Error_string(rc, text, &n) == MPI_SUCCESS && n > 0) {
    snprintf(out, len, "%.*s", n, text);
  } else {
    snprintf(out, len, "MPI-IO error %d", rc);
  }
}

/* Records a failure on fh. The first one's reason is kept, unless it was
 * a write cut short without a reason: a disk that fills up first takes
 * part of a write, and only the next write is refused with ENOSPC. */
static void record(MPI_File fh, int rc, int saved_errno) {
  failure_t *f = slot_of(fh, true);
  if (f->fh == fh && f->failed && !f->vague) return;
  if (f->fh == fh && f->failed && rc == MPI_SUCCESS && !saved_errno) return;
  if (f->fh != fh) f->sealed = false;
  f->fh = fh;
  f->failed = true;
  f->vague = false;
  if (rc != MPI_SUCCESS) {
    describe(rc, saved_errno, f->reason, sizeof f->reason);
  } else if (saved_errno) {
    snprintf(f->reason, sizeof f->reason, "%s", strerror(saved_errno));
  } else {
    snprintf(f->reason, sizeof f->reason, "%s", TASO_IO_GUARD_SHORT);
    f->vague = true;
  }
}

/* Turns a failed call on fh into a success for HDF5, after recording it. */
static int swallow(MPI_File fh, int rc, int saved_errno) {
  if (rc != MPI_SUCCESS) record(fh, rc, saved_errno);
  return MPI_SUCCESS;
}

/* Tells HDF5, which checks the count, that the whole write was done. */
static void pretend_written(int count, MPI_Datatype type, MPI_Status *status) {
  int size = 0;
  if (PMPI_Type_size(type, &size) == MPI_SUCCESS)
    PMPI_Status_set_elements_x(status, MPI_BYTE, (MPI_Count)size * count);
}

/* A write is a failure when MPI says so, and also when it wrote less than
 * asked: Open MPI's collective writes report a full disk that way. HDF5
 * checks the count, so the status then says that everything was written. */
static int swallow_write(MPI_File fh, int rc, int saved_errno, int count, MPI_Datatype type,
                         MPI_Status *status) {
  int size = 0;
  MPI_Count done = 0, want;
  if (PMPI_Type_size(type, &size) != MPI_SUCCESS) return swallow(fh, rc, saved_errno);
  want = (MPI_Count)size * count;
  if (rc == MPI_SUCCESS && PMPI_Get_elements_x(status, MPI_BYTE, &done) == MPI_SUCCESS &&
      done == want)
    return MPI_SUCCESS;
  record(fh, rc, saved_errno);
  PMPI_Status_set_elements_x(status, MPI_BYTE, want);
  return MPI_SUCCESS;
}

/* An independent write to a file that has failed for a known reason is
 * not tried again: it would fail too, and Open MPI prints a line for each.
 * Nor is one to a sealed file. */
int MPI_File_write_at(MPI_File fh, MPI_Offset offset, const void *buf, int count,
                      MPI_Datatype datatype, MPI_Status *status) {
  MPI_Status own;
  MPI_Status *st = status == MPI_STATUS_IGNORE ? &own : status;
  failure_t *f = slot_of(fh, false);
  if (f && (f->sealed || (f->failed && !f->vague))) {
    pretend_written(count, datatype, st);
    return MPI_SUCCESS;
  }
  errno = 0;
  int rc = PMPI_File_write_at(fh, offset, buf, count, datatype, st);
  return swallow_write(fh, rc, errno, count, datatype, st);
}

int MPI_File_write_at_all(MPI_File fh, MPI_Offset offset, const void *buf, int count,
                          MPI_Datatype datatype, MPI_Status *status) {
  MPI_Status own;
  MPI_Status *st = status == MPI_STATUS_IGNORE ? &own : status;
  failure_t *f = slot_of(fh, false);
  if (f && f->sealed) {
    /* Still in the collective call, as the other ranks are, with nothing. */
    PMPI_File_write_at_all(fh, offset, buf, 0, datatype, st);
    pretend_written(count, datatype, st);
    return MPI_SUCCESS;
  }
  errno = 0;
  int rc = PMPI_File_write_at_all(fh, offset, buf, count, datatype, st);
  return swallow_write(fh, rc, errno, count, datatype, st);
}

/* Sealing is agreed by every rank at once, so a collective call that a
 * sealed file skips is skipped by every rank. */
static bool sealed(MPI_File fh) {
  failure_t *f = slot_of(fh, false);
  return f && f->sealed;
}

int MPI_File_set_size(MPI_File fh, MPI_Offset size) {
  if (sealed(fh)) return MPI_SUCCESS;
  errno = 0;
  int rc = PMPI_File_set_size(fh, size);
  return swallow(fh, rc, errno);
}

/* Network file systems report a full disk at sync or close, not at the
 * write. */
int MPI_File_sync(MPI_File fh) {
  if (sealed(fh)) return MPI_SUCCESS;
  errno = 0;
  int rc = PMPI_File_sync(fh);
  return swallow(fh, rc, errno);
}

int MPI_File_close(MPI_File *fh) {
  MPI_File was = *fh;
  errno = 0;
  int rc = PMPI_File_close(fh);
  return swallow(was, rc, errno);
}

bool taso_io_guard_failed(MPI_File fh, char *reason, size_t len) {
  failure_t *f = fh == MPI_FILE_NULL ? NULL : slot_of(fh, false);
  if (!f || !f->failed) return false;
  if (reason && len) snprintf(reason, len, "%s", f->reason);
  return true;
}

void taso_io_guard_seal(MPI_File fh) {
  if (fh == MPI_FILE_NULL) return;
  failure_t *f = slot_of(fh, true);
  if (f->fh != fh) {
    f->fh = fh;
    f->failed = f->vague = false;
    f->reason[0] = '\0';
  }
  f->sealed = true;
}

void taso_io_guard_forget(MPI_File fh) {
  failure_t *f = fh == MPI_FILE_NULL ? NULL : slot_of(fh, false);
  if (f) {
    f->fh = MPI_FILE_NULL;
    f->failed = f->vague = f->sealed = false;
  }
}
