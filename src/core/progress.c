#include "progress.h"

#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

void taso_progress_start(taso_progress_t *p, const char *name, int rank, const char *what,
                         int64_t total) {
  p->name = name;
  p->rank = rank;
  p->what = what;
  p->total = total;
  p->start = p->last = MPI_Wtime();
  /* test hook: TASO_PROGRESS_SECONDS=0 prints a line at every update */
  const char *env = getenv("TASO_PROGRESS_SECONDS");
  p->interval = env && *env ? atof(env) : TASO_PROGRESS_INTERVAL;
}

/* Seconds as a person reads a wait: "40 s", "12 min", "3.5 h". */
static void format_duration(double s, char *buf, size_t len) {
  if (s < 0) s = 0;
  if (s < 90)
    snprintf(buf, len, "%.0f s", s);
  else if (s < 90 * 60)
    snprintf(buf, len, "%.0f min", s / 60);
  else
    snprintf(buf, len, "%.1f h", s / 3600);
}

void taso_progress_update(taso_progress_t *p, int64_t done) {
  if (p->rank != 0) return;
  double now = MPI_Wtime();
  if (now - p->last < p->interval) return;
  p->last = now;
  double rate = done / (now - p->start);
  /* a total that was an estimate, passed: say so rather than "130%" */
  if (p->total > 0 && done > p->total) {
    fprintf(stderr, "%s: %lld %s (more than the %lld expected), %.4g/s\n", p->name, (long long)done,
            p->what, (long long)p->total, rate);
  } else if (p->total > 0 && rate > 0) {
    char left[32];
    format_duration((double)(p->total - done) / rate, left, sizeof left);
    fprintf(stderr, "%s: %lld/%lld %s (%.1f%%), %.4g/s, about %s left\n", p->name, (long long)done,
            (long long)p->total, p->what, 100.0 * done / p->total, rate, left);
  } else {
    fprintf(stderr, "%s: %lld %s, %.4g/s\n", p->name, (long long)done, p->what, rate);
  }
  fflush(stderr);
}
