/*
 * Devices that a measurement owns (device.h).
 */
#define _GNU_SOURCE

#include "device.h"

#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <omp.h>

double taso_wall_seconds(void) {
  struct timespec t;
  clock_gettime(CLOCK_REALTIME, &t);
  return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

void taso_device_lock_dir(const char *lock_dir, char *dir, int len) {
  const char *tmp = getenv("TMPDIR");
  if (lock_dir && lock_dir[0])
    snprintf(dir, (size_t)len, "%s", lock_dir);
  else
    snprintf(dir, (size_t)len, "%s/taso-devices", tmp && tmp[0] ? tmp : "/tmp");
}

void taso_format_units(const int *units, int n, char *buf, int len) {
  int at = 0;
  buf[0] = '\0';
  for (int i = 0; i < n && at < len; i++) {
    int j = i;
    while (j + 1 < n && units[j + 1] == units[j] + 1)
      j++;
    at += snprintf(buf + at, (size_t)(len - at), i ? ",%d" : "%d", units[i]);
    if (j > i && at < len) at += snprintf(buf + at, (size_t)(len - at), "-%d", units[j]);
    i = j;
  }
}

/* The folder is shared by every job and user of the node: sticky and
 * writable by all, like /tmp. Another job may create it at the same time. */
static taso_err_t make_dir(const char *dir) {
  struct stat st;
  if (mkdir(dir, 01777) == 0) {
    chmod(dir, 01777); /* mkdir's mode passes through the umask */
    return TASO_OK;
  }
  if (errno == EEXIST && stat(dir, &st) == 0 && S_ISDIR(st.st_mode)) return TASO_OK;
  return taso_error(TASO_ERR_IO, "%s: cannot create the device lock folder: %s", dir,
                    errno == EEXIST ? "not a folder" : strerror(errno));
}

static void short_host(char host[64]) {
  snprintf(host, 64, "localhost");
  gethostname(host, 63);
  host[strcspn(host, ".")] = '\0';
}

/* The lock file dir/HOST-NAME.lock of one unit ("cpu3", a GPU's UUID). */
static taso_err_t open_unit(const char *dir, const char *name, int *fd) {
  char host[64], path[4200];
  short_host(host);
  snprintf(path, sizeof path, "%s/%s-%s.lock", dir, host, name);
  *fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0666);
  if (*fd < 0)
    return taso_error(TASO_ERR_IO, "%s: cannot open the device lock: %s", path, strerror(errno));
  fchmod(*fd, 0666); /* other users' jobs must be able to lock it too */
  return TASO_OK;
}

taso_err_t taso_device_open(taso_device_t *d, const char *dir, bool gpu, const int *units, int n) {
  memset(d, 0, sizeof *d);
  for (int i = 0; i < TASO_DEVICE_MAX_UNITS; i++)
    d->fds[i] = -1;
  if (n < 1 || n > TASO_DEVICE_MAX_UNITS)
    return taso_error(TASO_ERR_LIMIT, "a device of %d units (1 to %d)", n, TASO_DEVICE_MAX_UNITS);
  d->gpu = gpu;
  d->nunits = n;
  memcpy(d->units, units, sizeof *units * (size_t)n);
  char host[64], list[64], name[32];
  short_host(host);
  taso_format_units(units, n, list, sizeof list);
  snprintf(d->unit, sizeof d->unit, "%.40s:%s%.48s", host, gpu ? "gpu" : "cpu", list);
  TASO_TRY(make_dir(dir));
  for (int i = 0; i < n; i++) {
    snprintf(name, sizeof name, "%s%d", gpu ? "gpu" : "cpu", units[i]);
    TASO_TRY(open_unit(dir, name, &d->fds[i]));
  }
  return TASO_OK;
}

taso_err_t taso_device_open_gpu(taso_device_t *d, const char *dir, int ordinal, const char *uuid) {
  char host[64];
  memset(d, 0, sizeof *d);
  for (int i = 0; i < TASO_DEVICE_MAX_UNITS; i++)
    d->fds[i] = -1;
  d->gpu = true;
  short_host(host);
  if (ordinal < 0) {
    snprintf(d->unit, sizeof d->unit, "%.40s:no device", host);
    return TASO_OK;
  }
  d->nunits = 1;
  d->units[0] = ordinal;
  snprintf(d->uuid, sizeof d->uuid, "%s", uuid);
  snprintf(d->unit, sizeof d->unit, "%.32s:gpu%d %.47s", host, ordinal, uuid);
  TASO_TRY(make_dir(dir));
  return open_unit(dir, uuid, &d->fds[0]);
}

void taso_device_close(taso_device_t *d) {
  for (int i = 0; i < d->nunits; i++)
    if (d->fds[i] >= 0) close(d->fds[i]); /* closing drops a lock still held */
  d->nunits = 0;
}

void taso_device_unlock(taso_device_t *d) {
  for (int i = 0; i < d->nunits; i++)
    if (d->fds[i] >= 0) {
      close(d->fds[i]);
      d->fds[i] = -1;
    }
}

taso_err_t taso_device_bind(const taso_device_t *d) {
  if (d->gpu) return TASO_OK;
  cpu_set_t set;
  CPU_ZERO(&set);
  for (int i = 0; i < d->nunits; i++)
    CPU_SET(d->units[i], &set);
  omp_set_num_threads(d->nunits);
  int failed = 0;
  /* Each OpenMP thread sets its own affinity; the pool is reused by the
   * backend's later parallel regions. */
#pragma omp parallel reduction(+ : failed)
  failed += sched_setaffinity(0, sizeof set, &set) != 0;
  if (failed)
    return taso_error(TASO_ERR_IO, "cannot run on cores %s: %s", d->unit, strerror(errno));
  return TASO_OK;
}

/* The CPU's model name from /proc/cpuinfo; "unknown CPU" without it. */
static void cpu_model(char *buf, int len) {
  FILE *f = fopen("/proc/cpuinfo", "r");
  char line[512];
  snprintf(buf, (size_t)len, "unknown CPU");
  while (f && fgets(line, sizeof line, f)) {
    char *colon = strchr(line, ':');
    if (strncmp(line, "model name", 10) != 0 || !colon) continue;
    colon += 1 + strspn(colon + 1, " \t");
    colon[strcspn(colon, "\n")] = '\0';
    snprintf(buf, (size_t)len, "%s", colon);
    break;
  }
  if (f) fclose(f);
}

taso_err_t taso_device_identify(taso_device_t *d, const taso_backend_t *be) {
  char probe[256], model[128], text[512];
  TASO_TRY(be->probe(probe, sizeof probe));
  cpu_model(model, sizeof model);
  if (d->gpu)
    snprintf(text, sizeof text, "%s | %s", probe, d->uuid);
  else
    snprintf(text, sizeof text, "%s | %s | %d core%s", probe, model, d->nunits,
             d->nunits == 1 ? "" : "s");
  /* Cut to the column's width: the cut is the same on every machine. */
  size_t n = strlen(text);
  if (n >= sizeof d->identity) n = sizeof d->identity - 1;
  memcpy(d->identity, text, n);
  d->identity[n] = '\0';
  return TASO_OK;
}

taso_err_t taso_device_hold(taso_device_t *d) {
  double start = taso_wall_seconds();
  for (int i = 0; i < d->nunits; i++) {
    int rc;
    if (d->fds[i] < 0) continue; /* unlocked (taso_device_unlock) */
    while ((rc = flock(d->fds[i], LOCK_EX)) != 0 && errno == EINTR)
      continue;
    if (rc != 0 && errno != ENOLCK && errno != EOPNOTSUPP && errno != ENOSYS) {
      int e = errno;
      for (int j = 0; j < i; j++)
        flock(d->fds[j], LOCK_UN);
      return taso_error(TASO_ERR_IO, "cannot lock device %s: %s", d->unit, strerror(e));
    }
  }
  d->held_since = taso_wall_seconds();
  d->waited += d->held_since - start;
  return TASO_OK;
}

/* Every unit of d without waiting: *held false (and nothing held) when
 * another process holds one of them. */
static taso_err_t try_hold(taso_device_t *d, bool *held) {
  *held = true;
  for (int i = 0; i < d->nunits && *held; i++) {
    int rc;
    if (d->fds[i] < 0) continue; /* unlocked (taso_device_unlock) */
    while ((rc = flock(d->fds[i], LOCK_EX | LOCK_NB)) != 0 && errno == EINTR)
      continue;
    if (rc == 0 || errno == ENOLCK || errno == EOPNOTSUPP || errno == ENOSYS) continue;
    int e = errno;
    for (int j = 0; j < i; j++)
      flock(d->fds[j], LOCK_UN);
    if (e != EWOULDBLOCK)
      return taso_error(TASO_ERR_IO, "cannot lock device %s: %s", d->unit, strerror(e));
    *held = false;
  }
  return TASO_OK;
}

taso_err_t taso_device_hold_any(taso_device_t *const *devs, int n, int *which) {
  double start = taso_wall_seconds(), pause = 0.001;
  for (;;) {
    for (int k = 0; k < n; k++) {
      bool held;
      TASO_TRY(try_hold(devs[k], &held));
      if (!held) continue;
      devs[k]->held_since = taso_wall_seconds();
      devs[k]->waited += devs[k]->held_since - start;
      *which = k;
      return TASO_OK;
    }
    struct timespec ts = {0, (long)(pause * 1e9)};
    nanosleep(&ts, NULL);
    if (pause < 0.05) pause *= 2;
  }
}

void taso_device_let_go(taso_device_t *d, double *from, double *to) {
  /* The end is read before the first unlock, so that intervals of one
   * unit never overlap, not even by the unlock's own time. */
  *from = d->held_since;
  *to = taso_wall_seconds();
  for (int i = d->nunits - 1; i >= 0; i--)
    if (d->fds[i] >= 0) flock(d->fds[i], LOCK_UN);
  d->busy += *to - *from;
  d->holds++;
  d->held_since = 0;
}
