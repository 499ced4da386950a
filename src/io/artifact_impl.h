/*
 * Private to the artifact files of src/io: the handle and the helpers they
 * share. artifact.c is the file itself (create, open, identify, close, root
 * attributes) and the error handling; artifact_table.c describes records
 * and writes and reads tables of them (record tables, a stage's own tables,
 * slot tables); artifact_graphs.c (inputs, graphs) and artifact_substs.c
 * (substitutions, decisions) are the pipeline's own records on top. Calls
 * go one way: graphs, substs -> table -> artifact.c.
 *
 * The theme of these files is that every rank takes the same road. Each
 * collective step ends in taso_agree() (through artifact_settle), which
 * gives every rank the code and the message of the lowest failing rank, so
 * no rank gives up while another goes on into the next collective call and
 * waits there for ever. Steps are split so that nothing that can fail on
 * one rank alone (an allocation, a local property list) sits between two
 * collective HDF5 calls without a taso_agree() in between.
 *
 * HDF5's automatic error printing is off inside the public functions
 * (artifact_quiet_begin/end): an expected failure (a missing, truncated or
 * foreign file) becomes one clear message, and an unexpected one prints the
 * library's error stack at the point of failure, before any later HDF5 call
 * clears it.
 *
 * Records are written with the file type equal to the memory type. Parallel
 * HDF5 cannot write a filtered dataset independently, and a type conversion
 * would make it fall back to independent I/O, so the record structs are laid
 * out without padding (or zeroed before filling) and stored as they are.
 */
#ifndef TASO_ARTIFACT_IMPL_H
#define TASO_ARTIFACT_IMPL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <hdf5.h>
#include <mpi.h>

#include "artifact.h"

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

/* Errors and the ranks' agreement (artifact.c) */

/* Reports an HDF5 call that has just failed ("%s: HDF5 failed to WHAT"),
 * with HDF5's error stack first when debugging. */
taso_err_t artifact_h5_fail(const taso_artifact_t *a, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
/* Closes id with close_fn (nothing for an invalid id); a failure is
 * reported only when err is TASO_OK. Returns the first failure. */
taso_err_t artifact_release(const taso_artifact_t *a, hid_t id, herr_t (*close_fn)(hid_t),
                            taso_err_t err);
/* Ends a collective step: every rank gets the first failure of any rank,
 * the MPI-IO write guard's verdict included. */
taso_err_t artifact_settle(const taso_artifact_t *a, taso_err_t err);

/* HDF5's automatic error printing, saved on entry to a public function and
 * restored on the way out. */
typedef struct {
  H5E_auto2_t fn; /* the caller's printer */
  void *data;     /* its argument */
  bool active;    /* printing was turned off and must be restored */
} artifact_quiet_t;
artifact_quiet_t artifact_quiet_begin(void);
void artifact_quiet_end(const artifact_quiet_t *q);

/* The error of a public function called with a NULL handle. */
taso_err_t artifact_no_handle(void);

/* Attributes of loc, the file or one of its datasets (artifact.c) */

/* Writes a fixed-length string attribute, replacing one of the same name.
 * Collective: every rank passes the same value. */
taso_err_t artifact_put_string_at(const taso_artifact_t *a, hid_t loc, const char *name,
                                  const char *value);
/* Reads a string attribute (fixed or variable length); *value malloc'd. */
taso_err_t artifact_get_string(const taso_artifact_t *a, hid_t loc, const char *name, char **value);

/* Record types and datasets (artifact_table.c) */

/* The number of fields of a field array, for a taso_table_t. */
#define COUNT(f) (int)(sizeof f / sizeof *f)

/* The HDF5 type of table t's records: a compound of its fields (a number
 * field of size n > 1 an array of n), or for one unnamed field a plain
 * element type. The file type is the memory type. */
taso_err_t artifact_record_type(const taso_artifact_t *a, const taso_table_t *t, hid_t *out);
/* Whether every link of the absolute path name exists. */
taso_err_t artifact_path_exists(const taso_artifact_t *a, const char *name, bool *found);
/* Collective: each rank's first row (offset) and the total over ranks of k
 * counts at once, in rank order. */
void artifact_place(const taso_artifact_t *a, const int64_t *local, int64_t *offset, int64_t *total,
                    int k);
/* Collective: creates a chunked, compressed, growable dataset of total rows. */
taso_err_t artifact_create_dataset(const taso_artifact_t *a, const char *name, hid_t type,
                                   size_t rec_size, int64_t total, hid_t *dset);
/* Collective: writes this rank's n rows at offset (n may be 0). */
taso_err_t artifact_write_slab(const taso_artifact_t *a, hid_t dset, const char *name, hid_t type,
                               const void *rows, int64_t offset, int64_t n);
/* Collective: creates dataset name and writes every rank's rows into it. */
taso_err_t artifact_write_rows(const taso_artifact_t *a, const char *name, hid_t type,
                               size_t rec_size, const void *rows, int64_t n, int64_t offset,
                               int64_t total);
/* Collective: every rank reads the whole of dataset name into *rows
 * (malloc'd); a missing dataset is 0 rows when optional, else an error. */
taso_err_t artifact_read_rows(const taso_artifact_t *a, const char *name, hid_t type,
                              size_t rec_size, bool optional, void **rows, int64_t *n);

#endif
