/*
 * Devices that a measurement owns.
 *
 * A timing taken while anything else runs on the same device is wrong, so
 * a measurement holds its device for its whole duration, and every job on
 * the node sees that: an advisory flock() on one file per physical unit
 * (a CPU core, a GPU) in a lock folder shared by the node's jobs. A CPU
 * device is a set of cores and holds the file of each (in ascending order,
 * so that two jobs whose core sets overlap wait for each other and never
 * deadlock); a GPU device holds its GPU's file. The kernel drops the locks
 * of a process that dies, so a crash blocks nobody.
 *
 * A device also has an identity, the key of its rows in the cost
 * database: the backend's probe line (library version, threads), the
 * hardware model and the cores, so that rows measured on one node are
 * reused on any node of the same kind.
 */
#ifndef TASO_DEVICE_H
#define TASO_DEVICE_H

#include <stdbool.h>

#include "costdb.h"
#include "runtime.h"

#define TASO_DEVICE_MAX_UNITS 256

typedef struct {
  char identity[TASO_COST_DEVICE_LEN]; /* the cost database's device column */
  char unit[TASO_COST_UNIT_LEN];       /* this instance: "host:cpu0-7", "host:gpu0" */
  bool gpu;                            /* units are GPUs, not CPU cores */
  char uuid[48];                       /* the GPU's UUID ("GPU-..."); "" for cores */
  int nunits;                          /* cores (or 1 GPU) */
  int units[TASO_DEVICE_MAX_UNITS];    /* core (or GPU) numbers, ascending */
  int fds[TASO_DEVICE_MAX_UNITS];      /* open lock file per unit; -1 without flock */
  double held_since;                   /* wall seconds; 0 when not held */
  double busy, waited;                 /* seconds held; seconds waiting for the locks */
  int holds;                           /* measurements made */
} taso_device_t;

/* Wall-clock seconds since the epoch, the time base of every holding
 * interval (comparable between processes of a node). */
double taso_wall_seconds(void);

/* The lock folder: lock_dir if not empty, else $TMPDIR/taso-devices, else
 * /tmp/taso-devices. */
void taso_device_lock_dir(const char *lock_dir, char *dir, int len);

/* Opens the device made of units[0..n) (CPU cores, or one GPU when gpu),
 * creating the lock folder (shared by every user: sticky, writable by
 * all) and one lock file per unit. The identity is filled by
 * taso_device_identify. */
taso_err_t taso_device_open(taso_device_t *d, const char *dir, bool gpu, const int *units, int n);
/* Opens GPU `ordinal` (in this process's CUDA numbering) of the given
 * UUID, whose lock file is named after the UUID, so that jobs numbering
 * the node's GPUs differently still exclude each other. ordinal -1: no
 * device (a rank that only collects); holding it holds nothing. */
taso_err_t taso_device_open_gpu(taso_device_t *d, const char *dir, int ordinal, const char *uuid);
void taso_device_close(taso_device_t *d);

/* For benchmarks only: closes d's lock files, so that holding it waits for
 * nobody and excludes nobody (the scheduler switched off). */
void taso_device_unlock(taso_device_t *d);

/* Runs this process's OpenMP threads on the device's cores, one thread
 * per core, so that a measurement uses what it holds and nothing else.
 * A no-op for a GPU device. */
taso_err_t taso_device_bind(const taso_device_t *d);

/* The identity of the device on backend be (after taso_device_bind, so
 * that the probe sees the thread count): "cpu: oneDNN 3.5.3, 4 OpenMP
 * threads | AMD EPYC 7B13 | 4 cores"; a GPU's ends with its UUID. */
taso_err_t taso_device_identify(taso_device_t *d, const taso_backend_t *be);

/* Waits until this process holds every unit of the device. */
taso_err_t taso_device_hold(taso_device_t *d);
/* Working elsewhere: holds the first of devs[0..n) whose units are all
 * free, trying each without waiting (devs[0], a rank's own, first); while
 * every one is held by others, waits with a growing pause (1 to 50 ms) and
 * tries again. *which: the index of the device held. The wait counts in
 * that device's waited. */
taso_err_t taso_device_hold_any(taso_device_t *const *devs, int n, int *which);

/* Lets go; *from and *to receive the holding interval. */
void taso_device_let_go(taso_device_t *d, double *from, double *to);

/* "0-3,8" of sorted core numbers. */
void taso_format_units(const int *units, int n, char *buf, int len);

#endif
