/*
 * HDF5 artifacts: the files every stage reads and writes.
 *
 * One file holds an input table (/inputs), a graph set (/graphs: flat node
 * records, output refs and one index row per graph with offsets into both)
 * and optionally a substitution set (/substitutions: rows of src/dst graph
 * indices with a verdict). Datasets are fixed-size compound types, chunked
 * and deflate-compressed, written collectively by every rank of a
 * communicator: each rank passes its local part and offsets come from
 * MPI_Exscan, so the file is the same whatever the rank count. The root group
 * carries provenance (tool, version, git commit, job text, ranks, threads,
 * seed, start and end time), the artifact kind and the stage's counts as
 * integer attributes, so `h5dump -A` tells what a file is and how it was made.
 */
#ifndef TASO_ARTIFACT_H
#define TASO_ARTIFACT_H

#include <stdbool.h>
#include <stdint.h>

#include <mpi.h>

#include "graph.h"

#define TASO_ARTIFACT_FORMAT 2 /* bumped when a record layout changes */

/* Artifact kinds, stored in the root attribute "kind". */
#define TASO_KIND_CANDIDATES "taso-candidates"
#define TASO_KIND_SUBSTITUTIONS "taso-substitutions"
#define TASO_KIND_VALIDATION "taso-validation"

typedef enum {
  TASO_VERDICT_CANDIDATE = 0, /* not yet verified */
  TASO_VERDICT_PROVED = 1,
  TASO_VERDICT_UNKNOWN = 2, /* timeout or solver gave up */
  TASO_VERDICT_REFUTED = 3,
} taso_verdict_t;

typedef struct {
  int64_t src;     /* global index of the source graph in /graphs */
  int64_t dst;     /* global index of the target graph */
  int32_t verdict; /* taso_verdict_t */
  double seconds;  /* time spent deciding it */
} taso_subst_t;

/* One decided candidate row, as taso-verify streams it into /decisions:
 * appended in batches while the run goes on (so a killed run resumes from
 * it) and rewritten in row order at the end. */
#define TASO_REASON_LEN 160
typedef struct {
  int64_t row;                  /* index of the row in the candidates' /substitutions */
  double seconds;               /* time spent deciding it */
  int32_t verdict;              /* taso_verdict_t */
  char reason[TASO_REASON_LEN]; /* why, NUL-terminated; empty when proved */
  int32_t pad_;                 /* zero; keeps the record free of padding */
} taso_decision_t;

typedef struct {
  const char *tool;     /* "taso-generate" */
  const char *job_path; /* the job file's path */
  const char *job_text; /* the job file's whole text */
  int ranks;            /* MPI ranks */
  int threads;          /* OpenMP threads per rank */
  uint64_t seed;        /* random seed of the job */
  char start_time[32];  /* ISO 8601, UTC */
  char end_time[32];    /* ISO 8601, UTC; set by taso_artifact_close */
} taso_provenance_t;

typedef struct taso_artifact taso_artifact_t;

/* Current UTC time as ISO 8601 into buf[32]. */
void taso_now_iso8601(char buf[32]);

/* Creates (truncates) path collectively over comm and writes kind and
 * provenance (end_time is written at close).
 *
 * Writes that fail (a full disk, a quota, a read-only file system) make
 * the step that made them fail on every rank, with one message naming the
 * file and the system's reason ("x.h5: cannot write: No space left on
 * device"); the file can still be closed, and must then be treated as
 * incomplete. */
taso_err_t taso_artifact_create(MPI_Comm comm, const char *path, const char *kind,
                                const taso_provenance_t *prov, taso_artifact_t **out);

/* Opens an existing artifact read-only collectively. kind, if not NULL, must
 * match. A missing, truncated or foreign file gives TASO_ERR_IO or
 * TASO_ERR_FORMAT with a message naming the file. */
taso_err_t taso_artifact_open(MPI_Comm comm, const char *path, const char *kind,
                              taso_artifact_t **out);

/* Not collective (one rank alone, any communicator): what the file at path
 * is, so that a tool can decide whether it may replace it. TASO_OK with
 * *kind (malloc'd) for an artifact of this format; otherwise a code and a
 * detail that says what the file is: TASO_ERR_IO "no such file", "is a
 * directory"; TASO_ERR_FORMAT "not a readable HDF5 file (truncated or
 * foreign)", "an HDF5 file but not a taso artifact", another format
 * version. */
taso_err_t taso_artifact_identify(const char *path, char **kind);

/* The folder that holds path ("." for a bare name, "/" for one in the
 * root), cut to fit len. */
void taso_path_folder(const char *path, char *dir, size_t len);

/* HDF5's error stack on failures: printed only when asked for (a tool's
 * --debug, or the environment variable TASO_DEBUG set and not 0). */
void taso_artifact_set_debug(bool on);

/* Writes end_time (for created files) and closes; frees a. */
taso_err_t taso_artifact_close(taso_artifact_t *a);

/* Integer root attributes (the stage's counts); same value on every rank. */
taso_err_t taso_artifact_set_count(taso_artifact_t *a, const char *name, int64_t value);
taso_err_t taso_artifact_get_count(taso_artifact_t *a, const char *name, int64_t *value);

/* Floating-point and string root attributes of a stage's own (the
 * optimizer's costs and settings); same value on every rank. */
taso_err_t taso_artifact_set_real(taso_artifact_t *a, const char *name, double value);
taso_err_t taso_artifact_get_real(taso_artifact_t *a, const char *name, double *value);
taso_err_t taso_artifact_set_string(taso_artifact_t *a, const char *name, const char *value);

/* A string root attribute ("kind", "tool", "job_text"...); *value is malloc'd. */
taso_err_t taso_artifact_get_string(taso_artifact_t *a, const char *name, char **value);

/* Collective. The input table, identical on every rank. */
taso_err_t taso_artifact_write_inputs(taso_artifact_t *a, const taso_inputs_t *in);
taso_err_t taso_artifact_read_inputs(taso_artifact_t *a, taso_inputs_t *in);

/* Collective. Each rank writes its n local graphs; rank r's graphs follow
 * those of ranks < r. *first receives the global index of local[0]. */
taso_err_t taso_artifact_write_graphs(taso_artifact_t *a, const taso_graph_t *local, int64_t n,
                                      int64_t *first);
/* Every rank reads the whole graph set; free with taso_graphs_free. */
taso_err_t taso_artifact_read_graphs(taso_artifact_t *a, taso_graph_t **graphs, int64_t *n);
void taso_graphs_free(taso_graph_t *graphs, int64_t n);

/* Collective. Each rank writes the 128-bit fingerprints of its n local
 * graphs (in the order of taso_artifact_write_graphs) to /graphs/fingerprint. */
taso_err_t taso_artifact_write_fingerprints(taso_artifact_t *a, const uint64_t (*local)[2],
                                            int64_t n);

/* Collective. Each rank writes its n local rows (src/dst already global). */
taso_err_t taso_artifact_write_substs(taso_artifact_t *a, const taso_subst_t *local, int64_t n);
/* Every rank reads all rows; *rows is malloc'd. n = 0 if the file has none. */
taso_err_t taso_artifact_read_substs(taso_artifact_t *a, taso_subst_t **rows, int64_t *n);

/* Opens an existing artifact for reading and writing, collectively (kind
 * must match): a long stage resumes into its own output. */
taso_err_t taso_artifact_open_rw(MPI_Comm comm, const char *path, const char *kind,
                                 taso_artifact_t **out);

/* Collective. Appends each rank's n decisions to /decisions (created on
 * first use), in rank order, and flushes the file, so that what was
 * appended survives a kill. */
taso_err_t taso_artifact_append_decisions(taso_artifact_t *a, const taso_decision_t *local,
                                          int64_t n);
/* Collective. Overwrites /decisions from row 0 with each rank's n rows in
 * rank order; the total must equal its current length. */
taso_err_t taso_artifact_rewrite_decisions(taso_artifact_t *a, const taso_decision_t *local,
                                           int64_t n);
/* Every rank reads all of /decisions; n = 0 if the file has none. */
taso_err_t taso_artifact_read_decisions(taso_artifact_t *a, taso_decision_t **rows, int64_t *n);

/* Tables of fixed-size records: the one way a record is described, for
 * the artifact's own records (/inputs, /graphs, /substitutions, /decisions)
 * as for a stage's own (the validator's rows). The caller describes its
 * record struct, which must have no padding. */
typedef enum {
  TASO_FIELD_INT32,
  TASO_FIELD_INT64,
  TASO_FIELD_DOUBLE,
  TASO_FIELD_STRING, /* NUL-terminated char[size] */
  TASO_FIELD_FLOAT,  /* float32 */
  TASO_FIELD_UINT64,
} taso_field_kind_t;

typedef struct {
  const char *name;       /* field name in the file */
  size_t offset;          /* offsetof in the record struct */
  taso_field_kind_t kind; /* element type */
  size_t size;            /* strings: bytes, NUL included; numbers: 0 for one,
                             n > 1 for an array of n (int32_t dims[4]: 4) */
} taso_field_t;

/* A table of one field with a NULL name is a plain one-dimensional array
 * of that element type (model weights: float32 values), not a compound. */
typedef struct {
  const char *path;           /* dataset path: "/checks" */
  size_t size;                /* sizeof the record struct */
  const taso_field_t *fields; /* every field of the struct */
  int nfields;
} taso_table_t;

/* The record of /decisions, for a stage that streams decisions into a slot
 * table of its own (taso-verify's OUT.resume). */
extern const taso_table_t taso_decision_table;

/* Collective. Appends each rank's n rows, in rank order, creating the
 * table on first use, then flushes the file so that the rows survive a
 * kill. */
taso_err_t taso_artifact_append_table(taso_artifact_t *a, const taso_table_t *t, const void *local,
                                      int64_t n);
/* Collective. The table's row count; 0 if it does not exist. */
taso_err_t taso_artifact_table_length(taso_artifact_t *a, const taso_table_t *t, int64_t *n);
/* Collective. Each rank reads rows [lo, hi) into *rows (malloc'd; NULL
 * when empty). */
taso_err_t taso_artifact_read_table(taso_artifact_t *a, const taso_table_t *t, int64_t lo,
                                    int64_t hi, void **rows);
/* Collective. Creates the table with total rows and writes each rank's n
 * rows at its offset (any rank may write 0). */
taso_err_t taso_artifact_write_table(taso_artifact_t *a, const taso_table_t *t, const void *local,
                                     int64_t n, int64_t offset, int64_t total);
/* A string attribute of table t's dataset (which must exist): the
 * writer's, collective, same value on every rank; the reader's, not
 * collective, *value malloc'd. A missing table or attribute is
 * TASO_ERR_FORMAT naming the file. */
taso_err_t taso_artifact_set_table_string(taso_artifact_t *a, const taso_table_t *t,
                                          const char *name, const char *value);
taso_err_t taso_artifact_get_table_string(taso_artifact_t *a, const taso_table_t *t,
                                          const char *name, char **value);
/* Slot tables: a stream of rows that a kill cannot leave unreadable. The
 * dataset (contiguous, total rows) and its marks (PATH_marks, one byte a
 * row, zeros) are made once and never change shape; each row is written at
 * its own slot, the file flushed, and only then its mark set. A row counts
 * once marked, so whenever a run is killed, every counted row is whole and
 * the file's structure is as it was made. */
/* Collective. Creates table t with total empty slots and its marks. */
taso_err_t taso_artifact_create_slots(taso_artifact_t *a, const taso_table_t *t, int64_t total);
/* Collective. Writes each rank's n rows at slots[] (strictly increasing),
 * flushes, then marks them and flushes again. */
taso_err_t taso_artifact_put_slots(taso_artifact_t *a, const taso_table_t *t, const void *local,
                                   const int64_t *slots, int64_t n);
/* Collective. Every rank reads the marks of slots [lo, hi) into *marks
 * (malloc'd; 1 for a written row, 0 for none). */
taso_err_t taso_artifact_read_marks(taso_artifact_t *a, const taso_table_t *t, int64_t lo,
                                    int64_t hi, unsigned char **marks);
/* Collective. Removes a dataset if it exists. */
taso_err_t taso_artifact_remove(taso_artifact_t *a, const char *path);

#endif
