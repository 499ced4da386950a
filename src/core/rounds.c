#include "rounds.h"

#include <signal.h>
#include <stdbool.h>
#include <stdlib.h>

#include "collective.h"
#include "progress.h"

void taso_counter_open(MPI_Comm comm, taso_counter_t *c) {
  int rank;
  MPI_Comm_rank(comm, &rank);
  MPI_Win_allocate(rank == 0 ? (MPI_Aint)sizeof(int64_t) : 0, sizeof(int64_t), MPI_INFO_NULL, comm,
                   &c->value, &c->win);
  if (rank == 0) *c->value = 0;
  MPI_Barrier(comm);
}

int64_t taso_counter_take(taso_counter_t *c, int64_t n) {
  int64_t start = 0;
  MPI_Win_lock(MPI_LOCK_SHARED, 0, 0, c->win);
  MPI_Fetch_and_op(&n, &start, MPI_INT64_T, 0, 0, MPI_SUM, c->win);
  MPI_Win_unlock(0, c->win);
  return start;
}

void taso_counter_close(taso_counter_t *c) {
  MPI_Win_free(&c->win);
}

static double env_seconds(const char *name, double def) {
  const char *v = name ? getenv(name) : NULL;
  return v && *v ? atof(v) : def;
}

taso_err_t taso_rounds_run(MPI_Comm comm, const char *name, const taso_rounds_t *r) {
  int rank, size;
  MPI_Comm_rank(comm, &rank);
  MPI_Comm_size(comm, &size);
  double interval = env_seconds(r->round_env, r->round_seconds);
  int64_t stop_after = (int64_t)env_seconds(r->stop_env, -1), decided = 0;
  taso_counter_t counter;
  taso_counter_open(comm, &counter);
  taso_progress_t progress;
  taso_progress_start(&progress, name, rank, r->what, r->progress_total);
  taso_err_t err = TASO_OK, mine = TASO_OK;
  bool out_of_work = false;
  for (;;) {
    double round_start = MPI_Wtime();
    MPI_Request barrier;
    bool entered = false, worked = false;
    int64_t nlocal = 0;
    for (;;) {
      if (!entered && (out_of_work || (worked && MPI_Wtime() - round_start >= interval))) {
        MPI_Ibarrier(comm, &barrier);
        entered = true;
      }
      if (entered) {
        int flag = 0;
        if (out_of_work) {
          MPI_Wait(&barrier, MPI_STATUS_IGNORE);
          break;
        }
        MPI_Test(&barrier, &flag, MPI_STATUS_IGNORE);
        if (flag) break;
      }
      int64_t start = taso_counter_take(&counter, r->chunk), results = 0;
      if (start >= r->total) {
        out_of_work = true;
        continue;
      }
      int64_t end = start + r->chunk < r->total ? start + r->chunk : r->total;
      if ((mine = r->take(r->ctx, start, end, &results)) != TASO_OK) {
        out_of_work = true; /* stop taking work; the round ends and all ranks stop */
        continue;
      }
      nlocal += results;
      worked = true;
      /* an estimate until the round ends: the other ranks did about as much */
      int64_t guess = r->already + decided + nlocal * size;
      if (r->progress_total > 0 && guess > r->progress_total) guess = r->progress_total;
      if (rank == 0) taso_progress_update(&progress, guess);
    }
    if ((err = taso_agree(comm, mine)) != TASO_OK) break;
    if ((err = r->flush(r->ctx)) != TASO_OK) break;
    int64_t round_total = nlocal;
    MPI_Allreduce(MPI_IN_PLACE, &round_total, 1, MPI_INT64_T, MPI_SUM, comm);
    decided += round_total;
    taso_progress_update(&progress, r->already + decided);
    if (stop_after >= 0 && decided >= stop_after) raise(SIGKILL);
    int all_out = out_of_work;
    MPI_Allreduce(MPI_IN_PLACE, &all_out, 1, MPI_INT, MPI_LAND, comm);
    if (all_out) break;
  }
  taso_counter_close(&counter);
  return err;
}
