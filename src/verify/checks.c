/*
 * The symbolic checks over ranks (checks.h): rounds of combinations
 * decided by each rank's threads, appended to a resumable stream, then
 * copied in index order into the artifact's /checks with per-axiom
 * tallies.
 */
#define _POSIX_C_SOURCE 200809L /* clock_gettime */

#include "checks.h"

#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <omp.h>

#include "collective.h"
#include "rounds.h"
#include "row_stream.h"

#define ROUND_SECONDS 5.0 /* work between two appends to the output */

#define F(type, field, kind, size)                                                                 \
  { #field, offsetof(type, field), kind, size }
static const taso_field_t check_fields[] = {
    F(taso_check_t, index, TASO_FIELD_INT64, 0),
    F(taso_check_t, seconds, TASO_FIELD_DOUBLE, 0),
    F(taso_check_t, axiom, TASO_FIELD_INT32, 0),
    F(taso_check_t, outcome, TASO_FIELD_INT32, 0),
    F(taso_check_t, path, TASO_FIELD_INT32, 0),
    F(taso_check_t, trees_differ, TASO_FIELD_INT32, 0),
    F(taso_check_t, name, TASO_FIELD_STRING, TASO_AXIOM_NAME_LEN),
    F(taso_check_t, params, TASO_FIELD_STRING, TASO_CHECK_TEXT),
    F(taso_check_t, shapes, TASO_FIELD_STRING, TASO_CHECK_TEXT),
    F(taso_check_t, detail, TASO_FIELD_STRING, TASO_CHECK_DETAIL),
};
_Static_assert(sizeof(taso_check_t) ==
                   8 + 8 + 4 * 4 + TASO_AXIOM_NAME_LEN + 2 * TASO_CHECK_TEXT + TASO_CHECK_DETAIL,
               "taso_check_t has padding");
const taso_table_t taso_check_stream_table = {"/stream", sizeof(taso_check_t), check_fields, 10};
const taso_table_t taso_check_table = {"/checks", sizeof(taso_check_t), check_fields, 10};

static const taso_field_t tally_fields[] = {
    F(taso_tally_t, name, TASO_FIELD_STRING, TASO_AXIOM_NAME_LEN),
    F(taso_tally_t, combinations, TASO_FIELD_INT64, 0),
    F(taso_tally_t, proved, TASO_FIELD_INT64, 0),
    F(taso_tally_t, counterexamples, TASO_FIELD_INT64, 0),
    F(taso_tally_t, skipped, TASO_FIELD_INT64, 0),
    F(taso_tally_t, unknown, TASO_FIELD_INT64, 0),
    F(taso_tally_t, trees_differ, TASO_FIELD_INT64, 0),
    F(taso_tally_t, by_poly, TASO_FIELD_INT64, 0),
    F(taso_tally_t, by_z3, TASO_FIELD_INT64, 0),
    F(taso_tally_t, seconds, TASO_FIELD_DOUBLE, 0),
};
_Static_assert(sizeof(taso_tally_t) == TASO_AXIOM_NAME_LEN + 8 * 8 + 8, "taso_tally_t has padding");
const taso_table_t taso_tally_table = {"/axioms", sizeof(taso_tally_t), tally_fields, 10};
#undef F

static double thread_cpu(void) {
  struct timespec ts;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* A run's state between rounds: this rank's rows of the round, and the
 * work measured for the balance report. */
typedef struct {
  taso_checker_t **checkers;
  const unsigned char *done;
  taso_artifact_t *out;
  taso_row_stream_t rows; /* the round's rows */
  taso_check_t *batch;
  double *mine_cpu, *last_end;
} round_t;

/* Checks the combinations of [start, end) not done yet into the round. */
static taso_err_t take(void *ctx, int64_t start, int64_t end, int64_t *results) {
  round_t *r = ctx;
  if (!r->batch) return taso_error(TASO_ERR_NOMEM, "no memory");
  taso_err_t e = TASO_OK;
  double work = 0;
  /* Work is the threads' CPU time inside the checks: waiting for MPI or
   * for a time slice (oversubscribed ranks) is not work. */
#pragma omp parallel reduction(+ : work)
  {
    double c0 = thread_cpu();
#pragma omp for schedule(dynamic, 4) nowait
    for (int64_t i = start; i < end; i++) {
      if (r->done[i]) continue;
      taso_err_t ei = taso_checker_run(r->checkers[omp_get_thread_num()], i, &r->batch[i - start]);
      if (ei != TASO_OK) {
#pragma omp critical(taso_validate_error)
        if (e == TASO_OK)
          e = taso_error(ei, "combination %lld: %s", (long long)i, taso_error_detail());
      }
    }
    work += thread_cpu() - c0;
  }
  *r->mine_cpu += work;
  *r->last_end = MPI_Wtime();
  TASO_TRY(e);
  taso_check_t *at;
  TASO_TRY(taso_row_stream_room(&r->rows, end - start, (void **)&at));
  int64_t n = 0;
  for (int64_t i = start; i < end; i++)
    if (!r->done[i]) at[n++] = r->batch[i - start];
  taso_row_stream_added(&r->rows, n);
  *results = n;
  return TASO_OK;
}

static taso_err_t flush(void *ctx) {
  round_t *r = ctx;
  return taso_row_stream_flush(&r->rows, r->out);
}

/* Collective. Decides every combination not marked done, appending rounds
 * of rows to out (taso_rounds_run). Test hooks: TASO_VALIDATE_ROUND_SECONDS,
 * TASO_VALIDATE_STOP_AFTER. */
taso_err_t taso_checks_run(MPI_Comm comm, const char *name, taso_checker_t **checkers,
                           int64_t total, const unsigned char *done, int64_t already,
                           taso_artifact_t *out, int64_t *mine_rows, double *mine_cpu,
                           double *last_end) {
  int size;
  MPI_Comm_size(comm, &size);
  int64_t chunk = total / ((int64_t)size * omp_get_max_threads() * 64);
  chunk = chunk < 16 ? 16 : chunk > 1024 ? 1024 : chunk;
  round_t state = {
      .checkers = checkers,
      .done = done,
      .out = out,
      .rows = {.table = &taso_check_stream_table, .slot_offset = offsetof(taso_check_t, index)},
      .batch = malloc(sizeof *state.batch * (size_t)chunk),
      .mine_cpu = mine_cpu,
      .last_end = last_end};
  taso_rounds_t r = {.ctx = &state,
                     .take = take,
                     .flush = flush,
                     .total = total,
                     .chunk = chunk,
                     .round_seconds = ROUND_SECONDS,
                     .round_env = "TASO_VALIDATE_ROUND_SECONDS",
                     .stop_env = "TASO_VALIDATE_STOP_AFTER",
                     .what = "combinations",
                     .progress_total = total,
                     .already = already};
  taso_err_t err = taso_rounds_run(comm, name, &r);
  *mine_rows += state.rows.written;
  taso_row_stream_free(&state.rows);
  free(state.batch);
  return err;
}

/* Whether a row read back is one of this plan's. */
static bool row_ok(const taso_plan_t *p, const taso_check_t *r) {
  if (r->index < 0 || r->index >= taso_plan_total(p) || r->outcome < TASO_CHECK_PROVED ||
      r->outcome > TASO_CHECK_UNKNOWN || r->axiom < 0 || r->axiom >= taso_plan_naxioms(p))
    return false;
  int64_t first = taso_plan_first(p, r->axiom);
  return r->index >= first && r->index < first + taso_plan_count(p, r->axiom) &&
         memchr(r->name, '\0', sizeof r->name) && !strcmp(r->name, taso_plan_name(p, r->axiom));
}

/* Collective. Marks in done[] every index whose slot of /stream holds a
 * row of this plan (each rank checks a block). */
taso_err_t taso_checks_read_done(MPI_Comm comm, taso_artifact_t *out, const taso_plan_t *p,
                                 int64_t lo, int64_t hi, unsigned char *done, int64_t total,
                                 int64_t *ndone) {
  taso_check_t *rows = NULL;
  unsigned char *marks = NULL;
  taso_err_t err =
      taso_agree(comm, taso_artifact_read_marks(out, &taso_check_stream_table, lo, hi, &marks));
  if (err == TASO_OK)
    err = taso_agree(
        comm, taso_artifact_read_table(out, &taso_check_stream_table, lo, hi, (void **)&rows));
  for (int64_t i = 0; err == TASO_OK && i < hi - lo; i++)
    done[lo + i] = marks[i] && rows[i].index == lo + i && row_ok(p, &rows[i]);
  free(rows);
  free(marks);
  TASO_TRY(err);
  /* MPI counts are int: the flags go in slices. */
  for (int64_t off = 0; off < total; off += 1 << 28) {
    int n = (int)(total - off < (1 << 28) ? total - off : 1 << 28);
    MPI_Allreduce(MPI_IN_PLACE, done + off, n, MPI_UNSIGNED_CHAR, MPI_MAX, comm);
  }
  *ndone = 0;
  for (int64_t i = 0; i < total; i++)
    *ndone += done[i];
  return TASO_OK;
}

/* Collective. /stream of out (OUT.resume) to /checks of dst (OUT.tmp):
 * each rank copies its block of slots; tallies per axiom. */
taso_err_t taso_checks_finish(MPI_Comm comm, const char *path, taso_artifact_t *out,
                              taso_artifact_t *dst, const taso_plan_t *p, int64_t mylo,
                              int64_t myhi, taso_tally_t *tally, taso_check_t **shown,
                              int *nshown) {
  int rank, size;
  MPI_Comm_rank(comm, &rank);
  MPI_Comm_size(comm, &size);
  int64_t total = taso_plan_total(p);
  taso_check_t *mine = NULL;
  unsigned char *marks = NULL;
  int naxioms = taso_plan_naxioms(p);
  taso_err_t err = taso_agree(
      comm, taso_artifact_read_table(out, &taso_check_stream_table, mylo, myhi, (void **)&mine));
  if (err == TASO_OK)
    err = taso_agree(comm,
                     taso_artifact_read_marks(out, &taso_check_stream_table, mylo, myhi, &marks));
  if (err != TASO_OK) goto done;
  int64_t m = myhi - mylo;
  taso_err_t bad = TASO_OK;
  for (int64_t i = 0; bad == TASO_OK && i < m; i++)
    if (!marks[i] || mine[i].index != mylo + i || !row_ok(p, &mine[i]))
      bad = taso_error(TASO_ERR_FORMAT, "%s: combination %lld has no row", path,
                       (long long)(mylo + i));
  if ((err = taso_agree(comm, bad)) != TASO_OK) goto done;
  err = taso_agree(comm, taso_artifact_write_table(dst, &taso_check_table, mine, m, mylo, total));
  if (err != TASO_OK) goto done;
  /* Tallies, and the first rows worth printing. */
  int64_t *counts = calloc((size_t)naxioms * 8 + 1, sizeof *counts);
  double *secs = calloc((size_t)naxioms + 1, sizeof *secs);
  taso_check_t *few = calloc(TASO_CHECKS_SHOWN, sizeof *few);
  int nfew = 0;
  if (!counts || !secs || !few) taso_fatal(__FILE__, __LINE__, "taso", "no memory");
  for (int64_t i = 0; i < m; i++) {
    const taso_check_t *r = &mine[i];
    int64_t *c = &counts[8 * r->axiom];
    c[0]++;
    c[r->outcome]++; /* 1 proved, 2 counterexamples, 3 skipped, 4 unknown */
    c[5] += r->trees_differ;
    c[6] += r->path == TASO_PATH_POLY;
    c[7] += r->path == TASO_PATH_Z3;
    secs[r->axiom] += r->seconds;
    if ((r->outcome == TASO_CHECK_COUNTEREXAMPLE || r->outcome == TASO_CHECK_UNKNOWN) &&
        nfew < TASO_CHECKS_SHOWN)
      few[nfew++] = *r;
  }
  MPI_Allreduce(MPI_IN_PLACE, counts, naxioms * 8, MPI_INT64_T, MPI_SUM, comm);
  MPI_Allreduce(MPI_IN_PLACE, secs, naxioms, MPI_DOUBLE, MPI_SUM, comm);
  for (int a = 0; a < naxioms; a++) {
    taso_tally_t *y = &tally[a];
    memset(y, 0, sizeof *y);
    snprintf(y->name, sizeof y->name, "%s", taso_plan_name(p, a));
    int64_t *c = &counts[8 * a];
    y->combinations = c[0];
    y->proved = c[1];
    y->counterexamples = c[2];
    y->skipped = c[3];
    y->unknown = c[4];
    y->trees_differ = c[5];
    y->by_poly = c[6];
    y->by_z3 = c[7];
    y->seconds = secs[a];
  }
  /* Rank 0 collects the first few of each rank, in rank (= index) order. */
  int fbytes = nfew * (int)sizeof *few, *fc = calloc((size_t)size, sizeof(int)),
      *fd = calloc((size_t)size, sizeof(int));
  if (!fc || !fd) taso_fatal(__FILE__, __LINE__, "taso", "no memory");
  MPI_Gather(&fbytes, 1, MPI_INT, fc, 1, MPI_INT, 0, comm);
  int ftotal = 0;
  for (int r = 0; r < size; r++) {
    fd[r] = ftotal;
    ftotal += fc[r];
  }
  taso_check_t *all = rank == 0 ? malloc((size_t)ftotal + 1) : NULL;
  MPI_Gatherv(few, fbytes, MPI_BYTE, all, fc, fd, MPI_BYTE, 0, comm);
  *shown = all;
  *nshown = rank == 0 ? ftotal / (int)sizeof *few : 0;
  free(fc);
  free(fd);
  free(counts);
  free(secs);
  free(few);
done:
  free(mine);
  free(marks);
  return err;
}
