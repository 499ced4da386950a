/*
 * The redundancy check of taso-validate (semantics.md section 5): every
 * enabled axiom's entailment query and every family's collapse query
 * (verifier.h), fanned out over ranks and threads, each in a contained
 * query process (core/worker.h).
 */
#include "redundancy.h"

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <omp.h>

#include "collective.h"
#include "rounds.h"
#include "worker.h"

/* One task: a family's collapse query (task < nfam) or a goal's entailment
 * query. */
static taso_err_t taso_red_task(const taso_axioms_t *ax, int nfam, const int *goals, int task,
                                const taso_limits_t *lim, taso_red_t *r) {
  bool *core = calloc((size_t)ax->n + 1, sizeof *core);
  int verdict = 0;
  double t0 = omp_get_wtime();
  memset(r, 0, sizeof *r);
  if (!core) return taso_error(TASO_ERR_NOMEM, "no memory");
  taso_err_t err;
  if (task < nfam) {
    r->goal = -1 - task;
    snprintf(r->name, sizeof r->name, "%.15s", task == 0 ? "(all)" : ax->decls[task - 1].name);
    err = taso_axioms_collapse(ax, task, lim, &verdict, core, r->model, sizeof r->model, r->why,
                               sizeof r->why);
  } else {
    r->goal = goals[task - nfam];
    snprintf(r->name, sizeof r->name, "%s", ax->v[r->goal].name);
    err = taso_axioms_entailed(ax, r->goal, lim, &verdict, core, r->model, sizeof r->model, r->why,
                               sizeof r->why);
  }
  r->verdict = verdict;
  r->seconds = omp_get_wtime() - t0;
  int used = 0;
  for (int i = 0; err == TASO_OK && verdict == 1 && i < ax->n; i++)
    if (core[i] && used < (int)sizeof r->core)
      used += snprintf(r->core + used, sizeof r->core - (size_t)used, "%s%s", used ? " " : "",
                       ax->v[i].name);
  free(core);
  return err;
}

/* What a redundancy query process decides with, and its answer. */
typedef struct {
  const taso_axioms_t *ax;
  int nfam;
  const int *goals;
  const taso_limits_t *lim;
} red_ctx_t;
typedef struct {
  taso_red_t r;
  int32_t err;
  char detail[480];
} red_answer_t;

/* In a query process: one task. Test hook: TASO_VALIDATE_CRASH_TASK=N
 * crashes the process deciding task N, as Z3 out of memory can. */
static bool answer_task(void *ctx, const void *req, void *reply) {
  const red_ctx_t *c = ctx;
  int32_t task;
  memcpy(&task, req, sizeof task);
  const char *crash = getenv("TASO_VALIDATE_CRASH_TASK");
  if (crash && *crash && atoi(crash) == task) raise(SIGSEGV);
  red_answer_t *a = reply;
  memset(a, 0, sizeof *a);
  a->err = taso_red_task(c->ax, c->nfam, c->goals, task, c->lim, &a->r);
  if (a->err != TASO_OK) snprintf(a->detail, sizeof a->detail, "%s", taso_error_detail());
  return a->err != TASO_OK || strstr(a->r.why, "memory") != NULL;
}

/* Task k in thread's query process (worker.h): a process that crashes
 * (Z3 out of memory, or worse) or hangs makes the task undecided, saying
 * why, and the run goes on; one that exits on its own fails the run. */
static taso_err_t taso_red_task_contained(taso_worker_t *wk, const red_ctx_t *c, int task,
                                          taso_red_t *r) {
  red_answer_t a;
  char why[100];
  int32_t req = task;
  double t0 = omp_get_wtime();
  taso_err_t e = taso_worker_ask(wk, &req, &a, why, sizeof why);
  if (e == TASO_ERR_LIB) {
    memset(r, 0, sizeof *r);
    r->goal = task < c->nfam ? -1 - task : c->goals[task - c->nfam];
    snprintf(r->name, sizeof r->name, "%.15s",
             task < c->nfam ? (task == 0 ? "(all)" : c->ax->decls[task - 1].name)
                            : c->ax->v[r->goal].name);
    snprintf(r->why, sizeof r->why, "Z3 failed: %s", why);
    r->seconds = omp_get_wtime() - t0;
    return TASO_OK;
  }
  if (e != TASO_OK) return e;
  if (a.err != TASO_OK) return taso_error((taso_err_t)a.err, "%s", a.detail);
  *r = a.r;
  return TASO_OK;
}

taso_err_t taso_redundancy(MPI_Comm comm, const taso_axioms_t *ax, const taso_limits_t *lim,
                           const char *only, taso_red_t **rows, int *nrows, taso_red_t **fams,
                           int *nfams, char *collapse, size_t clen) {
  int size;
  MPI_Comm_size(comm, &size);
  *rows = *fams = NULL;
  *nrows = *nfams = 0;
  int nfam = taso_axioms_families(ax);
  int *goals = malloc(sizeof *goals * (size_t)(ax->n + 1)), ngoals = 0;
  taso_red_t *mine = calloc((size_t)(ax->n + nfam) + 1, sizeof *mine);
  int nmine = 0, nthreads = omp_get_max_threads();
  collapse[0] = '\0';
  taso_err_t err = goals && mine ? TASO_OK : taso_error(TASO_ERR_NOMEM, "no memory");
  for (int i = 0; err == TASO_OK && i < ax->n; i++)
    if (ax->v[i].enabled && ax->v[i].kind == TASO_AXIOM_AXIOM &&
        taso_axioms_listed(only, ',', ax->v[i].name))
      goals[ngoals++] = i;
  int ntasks = nfam + ngoals;
  red_ctx_t rc = {.ax = ax, .nfam = nfam, .goals = goals, .lim = lim};
  taso_worker_t *workers = calloc((size_t)nthreads, sizeof *workers);
  if (err == TASO_OK && !workers) err = taso_error(TASO_ERR_NOMEM, "no memory for workers");
  /* a query is ended by its limits; a process silent long after is stuck */
  for (int i = 0; workers && i < nthreads; i++)
    taso_worker_init(&workers[i], answer_task, &rc, sizeof(int32_t), sizeof(red_answer_t),
                     60 + 20 * lim->timeout_s);
  if ((err = taso_agree(comm, err)) != TASO_OK) {
    free(workers);
    goto done;
  }
  taso_counter_t q;
  taso_counter_open(comm, &q);
  for (;;) {
    int64_t start = taso_counter_take(&q, nthreads);
    if (start >= ntasks) break;
    int64_t end = start + nthreads < ntasks ? start + nthreads : ntasks;
    taso_err_t e = TASO_OK;
#pragma omp parallel for schedule(dynamic, 1)
    for (int64_t k = start; k < end; k++) {
      taso_err_t ek = taso_red_task_contained(&workers[omp_get_thread_num()], &rc, (int)k,
                                              &mine[nmine + (k - start)]);
      if (ek != TASO_OK) {
#pragma omp critical(taso_validate_error)
        if (e == TASO_OK) e = taso_error(ek, "%s", taso_error_detail());
      }
    }
    nmine += (int)(end - start);
    if (e != TASO_OK) {
      err = e;
      break;
    }
    /* test hook: killed (as a crash would) during the redundancy phase */
    if (getenv("TASO_VALIDATE_STOP_IN_REDUNDANCY")) raise(SIGKILL);
  }
  taso_counter_close(&q);
  for (int i = 0; i < nthreads; i++)
    taso_worker_stop(&workers[i]);
  free(workers);
  if ((err = taso_agree(comm, err)) != TASO_OK) goto done;
  /* Everyone gets every verdict. */
  int *counts = malloc(sizeof *counts * (size_t)size),
      *displs = malloc(sizeof *displs * (size_t)size);
  int bytes = nmine * (int)sizeof(taso_red_t);
  taso_red_t *all = calloc((size_t)ntasks + 1, sizeof *all);
  if (!counts || !displs || !all) taso_fatal(__FILE__, __LINE__, "taso", "no memory");
  MPI_Allgather(&bytes, 1, MPI_INT, counts, 1, MPI_INT, comm);
  for (int r = 0, off = 0; r < size; r++) {
    displs[r] = off;
    off += counts[r];
  }
  MPI_Allgatherv(mine, bytes, MPI_BYTE, all, counts, displs, MPI_BYTE, comm);
  free(counts);
  free(displs);
  /* Families first (goal < 0, in family order), then axioms in load order. */
  for (int i = 1; i < ntasks; i++)
    for (int j = i;
         j > 0 && (all[j - 1].goal < 0 ? -1 - all[j - 1].goal - 1000000 : all[j - 1].goal) >
                      (all[j].goal < 0 ? -1 - all[j].goal - 1000000 : all[j].goal);
         j--) {
      taso_red_t x = all[j];
      all[j] = all[j - 1];
      all[j - 1] = x;
    }
  /* The smallest collapsing core (the first of equal size). */
  int best = -1, best_size = 0;
  for (int i = 0; i < nfam; i++) {
    if (all[i].verdict != 1) continue;
    int size = 1;
    for (const char *c = all[i].core; *c; c++)
      size += *c == ' ';
    if (best < 0 || size < best_size) best = i, best_size = size;
  }
  if (best >= 0) {
    snprintf(collapse, clen, "%s", all[best].core);
    for (int i = nfam; i < ntasks; i++)
      if (all[i].verdict != 1 && !taso_axioms_listed(collapse, ' ', all[i].name)) {
        all[i].verdict = 1;
        snprintf(all[i].core, sizeof all[i].core, "%s", collapse);
        snprintf(all[i].why, sizeof all[i].why, "these make any two tensors equal");
      }
  }
  *fams = malloc(sizeof **fams * (size_t)(nfam + 1));
  if (!*fams) taso_fatal(__FILE__, __LINE__, "taso", "no memory");
  memcpy(*fams, all, sizeof *all * (size_t)nfam);
  *nfams = nfam;
  memmove(all, all + nfam, sizeof *all * (size_t)ngoals);
  *rows = all;
  *nrows = ngoals;
done:
  free(goals);
  free(mine);
  return err;
}
