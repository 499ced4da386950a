/*
 * Where each rank works (measure.h): its device on the node, held through
 * the advisory locks that every job on the node sees (device.h).
 */
#define _GNU_SOURCE /* sched_getaffinity, CPU_* */

#include "measure.h"

#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int compare_int(const void *a, const void *b) {
  return (*(const int *)a > *(const int *)b) - (*(const int *)a < *(const int *)b);
}

/* The gpu backend: one rank per GPU measures, the node's local rank i on
 * GPU i (i < the device count: local rank % count, without a repeat);
 * the other ranks only collect configurations, on no device. The GPU is
 * held through a lock named after its UUID, which every job on the node
 * sees whatever its CUDA_VISIBLE_DEVICES numbering. */
static taso_err_t place_gpu(const taso_measure_opts_t *s, int lrank, taso_place_t *p) {
  char uuid[64] = "";
  int count = 0;
  if (!s->be->device_uuid)
    return taso_error(TASO_ERR_UNSUPPORTED, "the %s backend names no devices", s->be->name);
  TASO_TRY(s->be->device_uuid(0, &count, uuid, sizeof uuid));
  p->ndevices = count;
  p->owns = lrank < count;
  p->index = p->owns ? lrank % count : -1;
  if (!p->owns) return taso_device_open_gpu(&p->dev, s->lock_dir, -1, "");
  TASO_TRY(s->be->device_uuid(p->index, &count, uuid, sizeof uuid));
  char ordinal[16];
  snprintf(ordinal, sizeof ordinal, "%d", p->index);
  setenv("TASO_GPU_DEVICE", ordinal, 1); /* the backend opens this one */
  return taso_device_open_gpu(&p->dev, s->lock_dir, p->index, uuid);
}

/* Collective. The node's cores this job may use (the union of its ranks'
 * affinities), cut into devices of cores_per_device; local rank i < the
 * device count owns device i. A rank without a device keeps its own
 * affinity, which it holds while it collects (planning is CPU load too). */
taso_err_t taso_place_rank(MPI_Comm comm, const taso_measure_opts_t *s, taso_place_t *p) {
  int rank;
  MPI_Comm_rank(comm, &rank);
  cpu_set_t mine, all;
  MPI_Comm node;
  int lrank, cores[CPU_SETSIZE], ncores = 0, own[CPU_SETSIZE], nown = 0;
  memset(p, 0, sizeof *p);
  sched_getaffinity(0, sizeof mine, &mine);
  MPI_Comm_split_type(comm, MPI_COMM_TYPE_SHARED, rank, MPI_INFO_NULL, &node);
  MPI_Comm_rank(node, &lrank);
  MPI_Allreduce(&mine, &all, sizeof all, MPI_BYTE, MPI_BOR, node);
  MPI_Comm_free(&node);
  for (int c = 0; c < CPU_SETSIZE; c++) {
    if (CPU_ISSET(c, &all)) cores[ncores++] = c;
    if (CPU_ISSET(c, &mine)) own[nown++] = c;
  }
  bool gpu = strcmp(s->be->name, "gpu") == 0;
  if (gpu) return place_gpu(s, lrank, p);
  int per = s->cores_per_device ? s->cores_per_device : ncores;
  if (per > ncores)
    return taso_error(TASO_ERR_ARG,
                      "[measure] cores_per_device is %d, but this job has %d core%s "
                      "on %s",
                      per, ncores, ncores == 1 ? "" : "s", "this node");
  p->ndevices = ncores / per;
  p->owns = lrank < p->ndevices;
  p->index = p->owns ? lrank : -1;
  if (!p->owns) {
    qsort(own, (size_t)nown, sizeof *own, compare_int);
    return taso_device_open(&p->dev, s->lock_dir, false, own, nown);
  }
  TASO_TRY(taso_device_open(&p->dev, s->lock_dir, false, cores + lrank * per, per));
  if (p->ndevices > 1 && !(p->others = calloc((size_t)p->ndevices - 1, sizeof *p->others)))
    return taso_error(TASO_ERR_NOMEM, "no memory for devices");
  for (int j = 0; j < p->ndevices; j++)
    if (j != lrank)
      TASO_TRY(
          taso_device_open(&p->others[p->nothers++], s->lock_dir, false, cores + j * per, per));
  return TASO_OK;
}

/* Binds to the device's cores and opens the backend there (on the gpu
 * backend, only a rank with a GPU opens it). The node's other devices are
 * of the same kind and size: they share the identity. */
taso_err_t taso_place_open(const taso_measure_opts_t *s, taso_place_t *p) {
  if (p->dev.gpu && !p->owns) return TASO_OK;
  TASO_TRY(taso_device_bind(&p->dev));
  p->bound = &p->dev;
  TASO_TRY(s->be->open(p->dev.gpu ? 0 : p->dev.nunits, &p->ctx));
  TASO_TRY(taso_device_identify(&p->dev, s->be));
  for (int j = 0; j < p->nothers; j++)
    memcpy(p->others[j].identity, p->dev.identity, sizeof p->dev.identity);
  return TASO_OK;
}

/* --no-device-lock: the lock files closed, so holding a device takes
 * nothing (device.c goes on unprotected without a lock file). */
void taso_place_unlock(taso_place_t *p) {
  taso_device_unlock(&p->dev);
  for (int j = 0; j < p->nothers; j++)
    taso_device_unlock(&p->others[j]);
  p->nothers = 0; /* no device is ever held by another job, as far as it can see */
}

void taso_place_close(const taso_measure_opts_t *s, taso_place_t *p) {
  if (p->ctx) s->be->close(p->ctx);
  if (p->ref) taso_backend_find("reference")->close(p->ref);
  taso_device_close(&p->dev);
  for (int j = 0; j < p->nothers; j++)
    taso_device_close(&p->others[j]);
  free(p->others);
}

/* Holds this rank's own device, or while another job holds that, another
 * of the node's (working elsewhere), its threads moved onto that device's
 * cores; *held: the one held. */
taso_err_t taso_place_hold(taso_place_t *p, taso_device_t **held) {
  taso_device_t *devs[1 + CPU_SETSIZE];
  int n = 0, which = 0;
  devs[n++] = &p->dev;
  for (int j = 0; j < p->nothers; j++)
    devs[n++] = &p->others[j];
  TASO_TRY(taso_device_hold_any(devs, n, &which));
  *held = devs[which];
  if (p->bound == *held || (*held)->gpu) return TASO_OK;
  p->bound = *held;
  taso_err_t err = taso_device_bind(*held);
  if (err != TASO_OK) {
    double from, to;
    taso_device_let_go(*held, &from, &to);
  }
  return err;
}
