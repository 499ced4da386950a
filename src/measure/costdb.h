/*
 * The cost database (costs.h5, kind taso-costs): measured run times of
 * operator configurations, one row per (device, configuration), shared by
 * every job that measures on or optimizes for that device.
 *
 * A configuration is named by its canonical key (taso_rt_config_key), a
 * device by its identity (taso_device_identity: backend, hardware, library
 * version, cores), so that a row measured by one job is found by any other
 * job on the same kind of device, on any node. Rows are flat fixed-size
 * records in one table, /costs, sorted by device then key.
 *
 * Writers never rewrite the file in place: taso_costdb_merge takes an
 * exclusive flock on PATH.lock (waiting for it), reads the file as it is
 * now, adds or replaces its rows, writes PATH.tmp and renames it over
 * PATH. So several jobs that finish at once lose no row and duplicate
 * none, and a reader (taso_costdb_read, the optimizer) always sees a whole
 * file. Everything here runs on one process (MPI_COMM_SELF), whatever the
 * rank count of the caller.
 */
#ifndef TASO_COSTDB_H
#define TASO_COSTDB_H

#include <stdbool.h>
#include <stdint.h>

#include "artifact.h"
#include "cost.h"
#include "runtime.h"

#define TASO_KIND_COSTS "taso-costs"

#define TASO_COST_DEVICE_LEN 160    /* device identity */
#define TASO_COST_KEY_LEN 512       /* taso_rt_config_key */
#define TASO_COST_MESSAGE_LEN 160   /* why a configuration is unavailable */
#define TASO_COST_UNIT_LEN 96       /* the physical device held: "host:cpu0-15" */
#define TASO_COST_ALGORITHM_LEN 128 /* the library's implementation: "brg:avx2" */

/* The /costs layout version, the file's "costs_format" count. Format 1 (no such
 * count) had no algorithm column; it is still read, with "" there. */
#define TASO_COSTS_FORMAT 2

typedef enum {
  TASO_COST_MEASURED = 0,    /* the figures are timings */
  TASO_COST_UNAVAILABLE = 1, /* the backend cannot run it; message says why */
} taso_cost_status_t;

/* One row. Times in milliseconds; wall-clock times in seconds since the
 * epoch. The record has no padding (HDF5 compound, taso_table_t). */
typedef struct {
  char device[TASO_COST_DEVICE_LEN];       /* device identity */
  char key[TASO_COST_KEY_LEN];             /* configuration key */
  char message[TASO_COST_MESSAGE_LEN];     /* unavailable: the library's message */
  char unit[TASO_COST_UNIT_LEN];           /* the device instance that was held */
  char algorithm[TASO_COST_ALGORITHM_LEN]; /* the library's choice (taso_rt_describe) */
  char when[32];                           /* ISO 8601 UTC, end of the measurement */
  double median, min, max;                 /* of the timed runs */
  double spread;                           /* (max - min) / median */
  double iqr_spread;                       /* interquartile range / median */
  double held_from, held_to;               /* the device lock was held in between */
  double flops;                            /* multiply-adds (conv, matmul) or elements moved */
  int32_t runs;                            /* timed runs */
  int32_t outliers;                        /* runs beyond median + 3 IQR (kept in the figures) */
  int32_t status;                          /* taso_cost_status_t */
  int32_t pad_;                            /* zero */
} taso_cost_row_t;

/* A database in memory: rows sorted by (device, key), unique. */
typedef struct {
  taso_cost_row_t *rows;
  int64_t n;
} taso_costdb_t;

/* Reads path (kind taso-costs). A missing file is an empty database when
 * missing_ok; anything else that is not a costs artifact is an error that
 * names the file. */
taso_err_t taso_costdb_read(const char *path, bool missing_ok, taso_costdb_t *db);
void taso_costdb_free(taso_costdb_t *db);

/* The row of (device, key); NULL when the database has none. */
const taso_cost_row_t *taso_costdb_find(const taso_costdb_t *db, const char *device,
                                        const char *key);
/* Whether db holds a measured cost of key on device (an unavailable row
 * is tried again: the reference kernel may time what the backend could
 * not). */
bool taso_costdb_has_cost(const taso_costdb_t *db, const char *device, const char *key);

/* The optimizer's lookup: the median run time of cfg on device, in ms.
 * TASO_OK with *ms; TASO_ERR_UNSUPPORTED (with the library's message) when
 * the row says unavailable; TASO_ERR_UNKNOWN when there is no row. */
taso_err_t taso_costdb_cost(const taso_costdb_t *db, const char *device,
                            const taso_rt_config_t *cfg, double *ms);

/* The device whose rows a tool reads for backend: device when given (it
 * must have rows), else the only one whose identity starts "BACKEND:".
 * The error names path and lists the devices it has. */
taso_err_t taso_costdb_pick_device(const taso_costdb_t *db, const char *path, const char *backend,
                                   const char *device, char *out, size_t size);

/* The row of a device that holds no configuration but the runner's own
 * cost per step (taso_rt_time_dispatch: what a step costs inside a run
 * beyond its time alone, or less), measured by taso-measure with the
 * configurations. */
#define TASO_COST_DISPATCH_KEY "dispatch: the runner's own cost per step"

/* Said by the algorithm of a dispatch row timed by a device's own clock:
 * its term may be negative. A step timed alone between the device's marks
 * (a one-step graph) includes the marks' own latency, which a step inside
 * a replayed run does not pay: on an H100, about 2 us per step. */
#define TASO_COST_DISPATCH_DEVICE_CLOCK "device clock"

/* The device's per-step term in ms: its dispatch row's median, 0 without
 * one; on a host clock, 0 also where the runner costs less than timing a
 * step alone does (the clock's own reads); on a device clock
 * (TASO_COST_DISPATCH_DEVICE_CLOCK) it may be negative. */
double taso_costdb_dispatch(const taso_costdb_t *db, const char *device);

/* A step's cost in a run: its time alone plus the per-step term, never
 * below 0. */
double taso_costdb_step_ms(double ms, double dispatch);

/* A database as the cost cache's source (a taso_cost_lookup_fn, ctx a
 * taso_costdb_source_t): a configuration without a row is not found; an
 * unavailable one costs TASO_COST_UNAVAILABLE_MS, so that nothing needing
 * it is ever chosen; a measured one costs its median plus the device's
 * per-step term (taso_costdb_dispatch), so that a graph's cost, the sum of
 * its steps', counts the runner's cost of each. */
#define TASO_COST_UNAVAILABLE_MS 1e12
typedef struct {
  const taso_costdb_t *db;
  const char *device;
} taso_costdb_source_t;
taso_err_t taso_costdb_lookup(void *ctx, const char *key, const taso_rt_config_t *cfg, double *ms,
                              bool *found);

/* Gives the backend's context (be->reuse) the calls that device's measured
 * rows name, so that its runs make the calls the database's costs were
 * measured with (on a GPU, cuDNN's algorithm of each convolution). Returns
 * how many the backend took; 0 where it has no such hook (the cpu's
 * oneDNN chooses the same call every time). */
int taso_costdb_reuse(const taso_costdb_t *db, const char *device, const taso_backend_t *be,
                      taso_rt_ctx_t *ctx);

/* Sorts rows by (device, key); of equal ones keeps the last given. */
void taso_costdb_normalize(taso_costdb_t *db);

/* Adds rows (replacing rows of the same device and key) to the database
 * at path, creating it, under PATH.lock as above; prov describes the
 * writer. *after, if not NULL, receives the merged database. A file at
 * path that is not a costs artifact is refused, unless replace. */
taso_err_t taso_costdb_merge(const char *path, const taso_cost_row_t *rows, int64_t n,
                             const taso_provenance_t *prov, bool replace, taso_costdb_t *after);

/* The configurations a cost cache (cost.h) measured that db lacks for
 * device, merged into the database at path (taso_costdb_merge) as rows of
 * unit, each with the cache's figure (its fastest run); *n the rows. */
taso_err_t taso_costdb_record_cache(const char *path, const taso_costdb_t *db, const char *device,
                                    const taso_cost_cache_t *cache, const char *unit,
                                    const taso_provenance_t *prov, int64_t *n);

/* The /costs table's description, for taso-show and tests. */
extern const taso_table_t taso_cost_table;

#endif
