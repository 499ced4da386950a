/* Candidate rows decided in contained query processes (decide.h). */
#define _POSIX_C_SOURCE 200809L

#include "decide.h"

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <omp.h>

#include "worker.h"

/* A thread's worker decides with the thread's prover. */
typedef struct {
  const taso_decide_set_t *set;
  taso_prover_t *prover;
} thread_t;

struct taso_decider {
  taso_decide_set_t set;
  int nthreads;
  taso_prover_t **provers;
  taso_worker_t *workers; /* one per thread: its query process */
  thread_t *threads;      /* what each worker's child decides with */
};

/* A query process's answer: the decision, or the error that stopped it. */
typedef struct {
  taso_decision_t d;
  int32_t err;
  char detail[480];
} answer_t;

/* Decides one row into *d. */
static taso_err_t decide_row(const taso_decide_set_t *w, taso_prover_t *p, int64_t row,
                             taso_decision_t *d) {
  const taso_subst_t *r = &w->rows[row];
  taso_verify_result_t res;
  memset(d, 0, sizeof *d);
  d->row = row;
  if (r->src < 0 || r->src >= w->ngraphs || r->dst < 0 || r->dst >= w->ngraphs)
    return taso_error(TASO_ERR_FORMAT, "candidate row %lld names a graph outside the set",
                      (long long)row);
  /* The seed depends on the row alone, not on who decides it. */
  TASO_TRY(taso_prover_decide(p, w->inputs, &w->graphs[r->src], &w->graphs[r->dst],
                              w->seed * 1000003ull + (uint64_t)row, &res));
  d->verdict = res.verdict;
  d->seconds = res.seconds;
  memcpy(d->reason, res.reason, sizeof d->reason);
  d->reason[TASO_REASON_LEN - 1] = '\0';
  return TASO_OK;
}

/* In a query process: one row. After a query that hit Z3's memory cap the
 * process retires: Z3's state after running out of memory is not trusted. */
static bool answer_row(void *ctx, const void *req, void *reply) {
  const thread_t *th = ctx;
  int64_t row;
  memcpy(&row, req, sizeof row);
  const char *crash = getenv("TASO_VERIFY_CRASH_ROW");
  if (crash && *crash && strtoll(crash, NULL, 10) == row) raise(SIGSEGV);
  answer_t *a = reply;
  memset(a, 0, sizeof *a);
  a->err = decide_row(th->set, th->prover, row, &a->d);
  if (a->err != TASO_OK) snprintf(a->detail, sizeof a->detail, "%s", taso_error_detail());
  return a->err != TASO_OK || strstr(a->d.reason, "memory limit") != NULL;
}

taso_err_t taso_decider_open(const taso_decide_set_t *set, taso_decider_t **out) {
  *out = NULL;
  taso_decider_t *d = calloc(1, sizeof *d);
  if (!d) return taso_error(TASO_ERR_NOMEM, "no memory for the decider");
  d->set = *set;
  d->nthreads = omp_get_max_threads();
  d->provers = calloc((size_t)d->nthreads, sizeof *d->provers);
  d->workers = calloc((size_t)d->nthreads, sizeof *d->workers);
  d->threads = calloc((size_t)d->nthreads, sizeof *d->threads);
  taso_err_t err = d->provers && d->workers && d->threads
                       ? TASO_OK
                       : taso_error(TASO_ERR_NOMEM, "no memory for workers");
  /* A row is a few queries, each ended by its limits; a process that has
   * not answered long after them is stuck. */
  double patience = 60 + 20 * set->lim->timeout_s;
  for (int i = 0; i < d->nthreads && err == TASO_OK; i++) {
    err = taso_prover_new_limited(set->ax, set->lim, &d->provers[i]);
    d->threads[i] = (thread_t){.set = &d->set, .prover = d->provers[i]};
    if (err == TASO_OK)
      taso_worker_init(&d->workers[i], answer_row, &d->threads[i], sizeof(int64_t),
                       sizeof(answer_t), patience);
  }
  if (err != TASO_OK) {
    taso_decider_close(d, NULL);
    return err;
  }
  *out = d;
  return TASO_OK;
}

/* A row whose process crashed or stopped answering is unknown, saying
 * so; any other error ends the run. */
taso_err_t taso_decider_run(taso_decider_t *d, const int64_t *rows, int64_t n,
                            taso_decision_t *dec) {
  taso_err_t err = TASO_OK;
#pragma omp parallel for schedule(dynamic, 1)
  for (int64_t k = 0; k < n; k++) {
    int64_t row = rows[k];
    taso_decision_t *r = &dec[k];
    answer_t a;
    char why[120];
    double start = omp_get_wtime();
    taso_err_t e = taso_worker_ask(&d->workers[omp_get_thread_num()], &row, &a, why, sizeof why);
    if (e == TASO_OK && a.err == TASO_OK) {
      *r = a.d;
    } else if (e == TASO_ERR_LIB) { /* crashed or hung: this row's answer */
      memset(r, 0, sizeof *r);
      r->row = row;
      r->verdict = TASO_VERDICT_UNKNOWN;
      r->seconds = omp_get_wtime() - start;
      snprintf(r->reason, sizeof r->reason, "Z3 failed: %s", why);
    } else {
      if (e == TASO_OK) e = taso_error((taso_err_t)a.err, "%s", a.detail);
#pragma omp critical(taso_decide_error)
      if (err == TASO_OK) err = taso_error(e, "row %lld: %s", (long long)row, taso_error_detail());
    }
  }
  return err;
}

void taso_decider_close(taso_decider_t *d, int *restarts) {
  if (restarts) *restarts = 0;
  if (!d) return;
  for (int i = 0; d->workers && d->provers && i < d->nthreads; i++) {
    if (!d->provers[i]) continue; /* never started: its prover failed */
    taso_worker_stop(&d->workers[i]);
    if (restarts && d->workers[i].started > 1) *restarts += d->workers[i].started - 1;
  }
  for (int i = 0; d->provers && i < d->nthreads; i++)
    taso_prover_free(d->provers[i]);
  free(d->provers);
  free(d->workers);
  free(d->threads);
  free(d);
}
