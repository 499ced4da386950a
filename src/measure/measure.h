/*
 * Measurement: every operator configuration of some models timed on the
 * node's devices into the shared cost database (costdb.h). taso-measure
 * is the tool around it: options and job in, these steps, its summary.
 *
 * 1. taso_place_rank / taso_place_open: the ranks of a node share its
 *    devices (device.h). On the cpu backend a device is a set of cores
 *    and the first ranks of a node own one each; on the gpu backend one
 *    rank per GPU. The other ranks only collect.
 * 2. taso_measure_collect: every rank collects the configurations of its
 *    share of the models (each node alone, the fused steps a plan runs,
 *    with rules the rewritten graphs' steps, with a library the calls a
 *    selection weighs), deduplicated by key on rank 0.
 * 3. taso_measure_todo: rank 0 leaves out what the database holds for
 *    the device already and orders the rest longest first.
 * 4. taso_measure_run: the device ranks take configurations one at a time
 *    from a counter on rank 0, so no device idles while work is left, each
 *    measurement holding its device through per-core advisory locks that
 *    every job on the node sees; rows merge into the database in batches
 *    under its own lock, so a killed run keeps every batch it merged.
 * 5. taso_calibrate (calibrate.h): the cost model against the run.
 */
#ifndef TASO_MEASURE_H
#define TASO_MEASURE_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include <mpi.h>

#include "costdb.h"
#include "device.h"
#include "library.h"
#include "rule_guard.h"
#include "rules.h"
#include "runtime.h"

#define TASO_MEASURE_MAX_MODELS 64

/* What to measure and how: the tool fills it from its job and options. */
typedef struct {
  const char *name; /* the tool's, for the lines printed */
  const char *models[TASO_MEASURE_MAX_MODELS];
  int nmodels;
  const taso_backend_t *be;
  const char *db_path; /* the cost database */
  char lock_dir[4096];
  int warmup, min_runs, max_runs, cores_per_device;
  double spread, batch_seconds;
  bool fresh;               /* measure every configuration again, replacing the device's rows */
  int depth;                /* rewrite steps of the rules (0: none) */
  taso_rules_t rules;       /* with depth: the proved rules */
  taso_axioms_t *ax;        /* with depth: the rule guard, as taso-optimize's: */
  taso_rule_guard_t *guard; /* a rule applies where proved or proved again */
  taso_library_t *lib;      /* also the calls a selection weighs; or NULL */
  int calibrate_runs;       /* taso_calibrate: timed end-to-end runs per model */
  bool calibrate_steps;     /* taso_calibrate: also each step against its time inside runs */
  int64_t stop_after;       /* test hook: SIGKILL once this many rows are merged; -1 never */
  taso_provenance_t prov;   /* of the rows merged */
} taso_measure_opts_t;

/* One configuration to measure. */
typedef struct {
  char key[TASO_COST_KEY_LEN];
  taso_rt_config_t cfg;
  double flops; /* the order of measuring: longest first */
  int expanded; /* only in rewritten graphs (the rules), in no model itself */
} taso_measure_item_t;

typedef struct {
  taso_measure_item_t *v;
  int64_t n, cap;
  int64_t *slots; /* open addressing by key: index + 1, 0 empty (this rank's items) */
  int64_t nslots;
} taso_measure_items_t;

void taso_measure_items_free(taso_measure_items_t *it);

/* Where a rank works. */
typedef struct {
  taso_device_t dev;     /* the cores this rank works on (its device, or its affinity) */
  bool owns;             /* measures: one of the node's devices is this rank's */
  int index;             /* the device's number on the node */
  int ndevices;          /* devices on this node */
  taso_rt_ctx_t *ctx;    /* the backend, on dev's cores; NULL on a gpu rank without a GPU */
  taso_rt_ctx_t *ref;    /* the reference backend, opened for the first configuration the
                            backend has no call for (the runtime runs those on it) */
  taso_device_t *others; /* cpu: the node's other devices, where this rank measures
                            while another job holds its own (working elsewhere) */
  int nothers;
  const taso_device_t *bound; /* the device whose cores the threads run on */
} taso_place_t;

/* Collective. This rank's device (or none), from the node's cores this
 * job may use (the union of its ranks' affinities) cut into devices of
 * cores_per_device, or its GPU. */
taso_err_t taso_place_rank(MPI_Comm comm, const taso_measure_opts_t *o, taso_place_t *p);
/* Binds to the device's cores and opens the backend there. */
taso_err_t taso_place_open(const taso_measure_opts_t *o, taso_place_t *p);
/* FOR BENCHMARKS ONLY (--no-device-lock): no lock is ever taken. */
void taso_place_unlock(taso_place_t *p);
void taso_place_close(const taso_measure_opts_t *o, taso_place_t *p);
/* Holds this rank's own device, or while another job holds that, another
 * of the node's, its threads moved onto that device's cores; *held: the
 * one held (taso_device_let_go it). */
taso_err_t taso_place_hold(taso_place_t *p, taso_device_t **held);

/* Collective. The configurations of this rank's share of the models,
 * collected while it holds its cores, then all of them on rank 0, sorted
 * by key; *graphs: the rewritten graphs of the rules, over all ranks. */
taso_err_t taso_measure_collect(MPI_Comm comm, const taso_measure_opts_t *o, taso_place_t *p,
                                taso_measure_items_t *all, int64_t *graphs);

/* Rank 0: adds the device's dispatch row (the runner's own cost per step,
 * TASO_COST_DISPATCH_KEY), reads the database into *known, and leaves in
 * all only what it lacks for identity (every configuration with fresh),
 * longest first; *distinct: the configurations before that. */
taso_err_t taso_measure_todo(const taso_measure_opts_t *o, const char *identity,
                             taso_measure_items_t *all, taso_costdb_t *known, int64_t *distinct);

/* Collective: rank 0's items on every rank. */
void taso_measure_items_share(MPI_Comm comm, taso_measure_items_t *it);

/* Collective. The device ranks measure todo (known: the database as rank
 * 0 read it; kept current), merging rows into the database in batches;
 * one that another job merged meanwhile is reused (unless fresh). Then
 * rank 0 prints a line per device and adds to totals what was measured,
 * unavailable and reused. */
taso_err_t taso_measure_run(MPI_Comm comm, const taso_measure_opts_t *o, taso_place_t *p,
                            const taso_measure_items_t *todo, taso_costdb_t *known,
                            int64_t totals[3]);

#endif
