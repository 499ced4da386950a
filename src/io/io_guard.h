/*
 * Write failures of MPI-IO files, kept away from HDF5 (private to src/io).
 *
 * Parallel HDF5 cannot survive a failed write: a rank whose write fails
 * (a full disk, a quota) leaves the metadata cache's collective steps early
 * while the others wait in them, and every later call on the file, its
 * close and the library's own clean-up at MPI_Finalize included, hangs or
 * crashes. So io_guard.c stands between HDF5 and MPI-IO (the MPI profiling
 * interface): a failed write, resize, sync or close is recorded against its
 * file handle with the system's reason, and HDF5 is told it succeeded. Every
 * rank then takes the same road through HDF5 to a clean close, and
 * artifact.c asks here after each collective step whether the step's
 * writes really reached the file.
 *
 * The file itself is then known to be incomplete; artifact.c reports the
 * failure and seals the file, and the tools never rename such a file into
 * place.
 */
#ifndef TASO_IO_GUARD_H
#define TASO_IO_GUARD_H

#include <stdbool.h>
#include <stddef.h>

#include <mpi.h>

/* The reason of a write cut short when the system gave none. */
#define TASO_IO_GUARD_SHORT "a write was cut short"

/* Whether a write to fh failed on this rank since it was opened; if so the
 * first failure's reason ("No space left on device") goes to reason. */
bool taso_io_guard_failed(MPI_File fh, char *reason, size_t len);

/* Collective in spirit: called by every rank at the same point, once the
 * ranks agree that writes to fh failed. From then on nothing more is
 * written to fh (its close included), so the file on disk stays as it was
 * at its last successful flush: a file that rows stream into keeps every
 * row flushed before the failure, readable. */
void taso_io_guard_seal(MPI_File fh);

/* Drops what was recorded for fh (after its file is closed: MPI may hand
 * the same handle value to the next file). */
void taso_io_guard_forget(MPI_File fh);

#endif
