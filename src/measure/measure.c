/*
 * Measuring (measure.h): the device ranks take configurations from a
 * counter, longest first, each timed while its device is held, the rows
 * merged into the database in batches.
 */
#define _GNU_SOURCE /* SIGKILL with raise */

#include "measure.h"

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "collective.h"
#include "progress.h"
#include "rounds.h"

typedef struct {
  MPI_Comm comm;
  const taso_measure_opts_t *s;
  taso_place_t *p;
  taso_device_t *held;              /* the device of the measurement under way */
  const taso_measure_items_t *todo; /* the configurations to measure, longest first */
  taso_costdb_t *known;             /* the database as last merged (or read) */
  taso_cost_row_t *batch;           /* rows measured since the last merge */
  int64_t nbatch, cap;
  int64_t measured, unavailable, reused; /* reused: merged by another job meanwhile */
  int64_t merged;                        /* rows of this rank merged into the database */
  double last_merge;
  ino_t db_ino; /* the database file as last read, to see another job's merge */
  time_t db_mtime;
} run_t;

/* Runs beyond median + 3 IQR: reported, but kept in the figures, which
 * are order statistics and shrug them off. */
static int count_outliers(double *ms, int n, const taso_rt_stats_t *st, double iqr_spread) {
  int k = 0;
  for (int i = 0; i < n; i++)
    k += ms[i] > st->median * (1 + 3 * iqr_spread) && iqr_spread > 0;
  return k;
}

static void fill_row(const run_t *r, const taso_measure_item_t *it, double *ms, int n,
                     taso_err_t err, taso_cost_row_t *row) {
  memset(row, 0, sizeof *row);
  snprintf(row->device, sizeof row->device, "%s", r->held->identity);
  snprintf(row->key, sizeof row->key, "%s", it->key);
  snprintf(row->unit, sizeof row->unit, "%s", r->held->unit);
  taso_now_iso8601(row->when);
  row->flops = it->flops;
  if (err != TASO_OK || n == 0) {
    row->status = TASO_COST_UNAVAILABLE;
    snprintf(row->message, sizeof row->message, "%s",
             err != TASO_OK ? taso_error_detail() : "no timed run");
    return;
  }
  taso_rt_stats_t st;
  double iqr = taso_rt_iqr_spread(ms, n); /* sorts ms: order is not needed past here */
  taso_rt_stats_of(ms, n, &st);
  row->median = st.median;
  row->min = st.min;
  row->max = st.max;
  row->spread = st.spread;
  row->iqr_spread = iqr;
  row->runs = st.runs;
  row->outliers = count_outliers(ms, n, &st, iqr);
}

/* The steps of the chain that times the runner's per-step term: enough
 * that a run's own start and end (inputs in, outputs out) weigh little. */
#define DISPATCH_STEPS 64

/* A configuration the backend has no call for: a plan runs it on the
 * reference kernel (the runtime's fallback), so that kernel's time is its
 * cost, recorded as measured with the backend's reason in its algorithm.
 * Only where the reference backend refuses it too is it unavailable. */
static taso_err_t measure_fallback(run_t *r, const taso_measure_item_t *it, double *ms, int *n,
                                   char algorithm[TASO_COST_ALGORITHM_LEN]) {
  const taso_measure_opts_t *s = r->s;
  const taso_backend_t *ref = taso_backend_find("reference");
  char why[TASO_COST_ALGORITHM_LEN - 24]; /* room for "reference kernel (...)" */
  snprintf(why, sizeof why, "%s", taso_error_detail());
  if (!r->p->ref) TASO_TRY(ref->open(0, &r->p->ref));
  TASO_TRY(taso_rt_time_config_samples(ref, r->p->ref, &it->cfg, s->warmup, s->min_runs,
                                       s->max_runs, s->spread, ms, n, NULL, 0));
  snprintf(algorithm, TASO_COST_ALGORITHM_LEN, "reference kernel (%s)", why);
  return TASO_OK;
}

/* One configuration, timed while this rank holds its device. A failure of
 * the backend is the configuration's (recorded as unavailable); one of the
 * lock is the run's. The dispatch row's samples are the runner's per-step
 * term (taso_rt_time_dispatch), min_runs of them. */
static taso_err_t measure_one(run_t *r, const taso_measure_item_t *it, double *ms,
                              taso_cost_row_t *row) {
  const taso_measure_opts_t *s = r->s;
  int n = 0;
  char algorithm[TASO_COST_ALGORITHM_LEN] = "";
  taso_err_t err;
  if (strcmp(it->key, TASO_COST_DISPATCH_KEY) == 0) {
    n = s->min_runs;
    bool device_clock = taso_rt_device_clock(s->be);
    snprintf(algorithm, sizeof algorithm, "runner:chain of %d relu steps%s%s", DISPATCH_STEPS,
             device_clock ? ", " : "", device_clock ? TASO_COST_DISPATCH_DEVICE_CLOCK : "");
    err = taso_rt_time_dispatch(s->be, r->p->ctx, DISPATCH_STEPS, s->warmup, n, ms);
  } else {
    err = taso_rt_time_config_samples(s->be, r->p->ctx, &it->cfg, s->warmup, s->min_runs,
                                      s->max_runs, s->spread, ms, &n, algorithm, sizeof algorithm);
    if (err == TASO_ERR_UNSUPPORTED && strcmp(s->be->name, "reference") != 0)
      err = measure_fallback(r, it, ms, &n, algorithm);
  }
  fill_row(r, it, ms, n, err, row);
  memcpy(row->algorithm, algorithm, sizeof algorithm);
  row->held_from = r->held->held_since;
  row->held_to = taso_wall_seconds();
  return TASO_OK;
}

/* Whether the database file changed since it was last read (another job
 * merged): a rename gives it a new inode. */
static bool db_changed(run_t *r) {
  struct stat st;
  if (stat(r->s->db_path, &st) != 0) return false;
  bool changed = st.st_ino != r->db_ino || st.st_mtime != r->db_mtime;
  r->db_ino = st.st_ino;
  r->db_mtime = st.st_mtime;
  return changed;
}

/* Whether another job measured it meanwhile, reading the database again
 * only when it changed. */
static taso_err_t known_elsewhere(run_t *r, const taso_measure_item_t *it, bool *known) {
  *known = false;
  if (r->s->fresh) return TASO_OK;
  if (db_changed(r)) {
    taso_costdb_free(r->known);
    TASO_TRY(taso_costdb_read(r->s->db_path, true, r->known));
  }
  *known = taso_costdb_has_cost(r->known, r->held->identity, it->key);
  return TASO_OK;
}

static taso_err_t merge_batch(run_t *r) {
  taso_costdb_t after = {0};
  TASO_TRY(taso_costdb_merge(r->s->db_path, r->batch, r->nbatch, &r->s->prov, r->s->fresh, &after));
  taso_costdb_free(r->known);
  *r->known = after;
  r->merged += r->nbatch;
  r->nbatch = 0;
  r->last_merge = taso_wall_seconds();
  db_changed(r); /* what this merge wrote is known */
  if (r->s->stop_after >= 0 && r->merged >= r->s->stop_after) raise(SIGKILL);
  return TASO_OK;
}

static taso_err_t keep_row(run_t *r, const taso_cost_row_t *row) {
  if (r->nbatch == r->cap) {
    int64_t cap = r->cap ? 2 * r->cap : 32;
    taso_cost_row_t *grown = realloc(r->batch, sizeof *grown * (size_t)cap);
    if (!grown) return taso_error(TASO_ERR_NOMEM, "no memory for cost rows");
    r->batch = grown;
    r->cap = cap;
  }
  r->batch[r->nbatch++] = *row;
  *(row->status == TASO_COST_MEASURED ? &r->measured : &r->unavailable) += 1;
  if (taso_wall_seconds() - r->last_merge >= r->s->batch_seconds) return merge_batch(r);
  return TASO_OK;
}

/* Collective. Device ranks take configurations from the counter, longest
 * first, until none is left; one that another job merged meanwhile is
 * reused (unless --fresh). */
static taso_err_t measure_all(run_t *r) {
  taso_counter_t counter;
  taso_progress_t progress;
  taso_err_t err = TASO_OK;
  double *ms = malloc(sizeof *ms * (size_t)r->s->max_runs);
  if (!ms) taso_fatal(__FILE__, __LINE__, "taso", "no memory");
  taso_counter_open(r->comm, &counter);
  int rank;
  MPI_Comm_rank(r->comm, &rank);
  taso_progress_start(&progress, r->s->name, rank, "configurations", r->todo->n);
  r->last_merge = taso_wall_seconds();
  while (r->p->owns && err == TASO_OK) {
    int64_t i = taso_counter_take(&counter, 1);
    if (i >= r->todo->n) break;
    const taso_measure_item_t *it = &r->todo->v[i];
    taso_cost_row_t row;
    bool known = false;
    double from, to;
    /* Held from the check to the merge: a job that waited for this device
     * sees what was measured on it before it measures the same thing. */
    if ((err = taso_place_hold(r->p, &r->held)) != TASO_OK) break;
    err = known_elsewhere(r, it, &known);
    if (err == TASO_OK && !known) err = measure_one(r, it, ms, &row);
    if (err == TASO_OK && !known) err = keep_row(r, &row);
    taso_device_let_go(r->held, &from, &to);
    if (known) r->held->holds--, r->reused++;
    taso_progress_update(&progress, i + 1);
  }
  if (err == TASO_OK && r->nbatch > 0) err = merge_batch(r);
  free(ms);
  err = taso_agree(r->comm, err);
  taso_counter_close(&counter);
  return err;
}

/* ---- reporting -------------------------------------------------------------------- */

enum {
  F_OWNS,
  F_INDEX,
  F_HOLDS,
  F_ELSEWHERE,
  F_BUSY,
  F_WAITED,
  F_SPAN,
  F_MEASURED,
  F_UNAVAIL,
  F_REUSED,
  NF
};

/* Collective. Each device rank's measurements (those on another of the
 * node's devices among them), busy time (held), time waiting for another
 * job's hold, and idle time (neither) over the phase. */
static void report_devices(const run_t *r, double span, int64_t totals[3]) {
  const taso_place_t *p = r->p;
  int rank, size;
  MPI_Comm_rank(r->comm, &rank);
  MPI_Comm_size(r->comm, &size);
  double mine[NF] = {p->owns,
                     p->index,
                     p->dev.holds,
                     0,
                     p->dev.busy,
                     p->dev.waited,
                     span,
                     (double)r->measured,
                     (double)r->unavailable,
                     (double)r->reused};
  for (int j = 0; j < p->nothers; j++) {
    mine[F_HOLDS] += p->others[j].holds;
    mine[F_ELSEWHERE] += p->others[j].holds;
    mine[F_BUSY] += p->others[j].busy;
    mine[F_WAITED] += p->others[j].waited;
  }
  double *all = rank == 0 ? malloc(sizeof *all * NF * (size_t)size) : NULL;
  if (rank == 0 && !all) taso_fatal(__FILE__, __LINE__, "taso", "no memory");
  MPI_Gather(mine, NF, MPI_DOUBLE, all, NF, MPI_DOUBLE, 0, r->comm);
  char units[TASO_COST_UNIT_LEN];
  for (int q = 0; rank == 0 && q < size; q++) {
    const double *v = all + NF * q;
    for (int k = 0; k < 3; k++)
      totals[k] += (int64_t)v[F_MEASURED + k];
    if (!v[F_OWNS]) continue;
    snprintf(units, sizeof units, "%s", q == 0 ? r->p->dev.unit : "");
    printf("%s: device %d (rank %d%s%s): %d measurements (%d on another device while "
           "this one was held), busy %.1f s, waited %.1f s for other jobs, idle %.1f s\n",
           r->s->name, (int)v[F_INDEX], q, units[0] ? ", " : "", units, (int)v[F_HOLDS],
           (int)v[F_ELSEWHERE], v[F_BUSY], v[F_WAITED], v[F_SPAN] - v[F_BUSY] - v[F_WAITED]);
  }
  free(all);
}

taso_err_t taso_measure_run(MPI_Comm comm, const taso_measure_opts_t *o, taso_place_t *p,
                            const taso_measure_items_t *todo, taso_costdb_t *known,
                            int64_t totals[3]) {
  run_t r = {.comm = comm, .s = o, .p = p, .todo = todo, .known = known};
  double start = taso_wall_seconds();
  taso_err_t err = measure_all(&r);
  if (err == TASO_OK) report_devices(&r, taso_wall_seconds() - start, totals);
  free(r.batch);
  return err;
}
