/*
 * taso-verify: the second stage. Proves every candidate substitution from
 * the axioms with Z3 (src/verify) and records proved, unknown or refuted,
 * with the time and, for every verdict but proved, the reason.
 *
 * Work is handed out dynamically: a counter on rank 0 (an MPI window that
 * every rank advances with MPI_Fetch_and_op) gives each rank its next
 * chunk of undecided rows, and OpenMP threads share the chunk, one Z3
 * context per thread. Decisions stream into the output's /decisions in
 * rounds: a rank that has worked for a few seconds enters a non-blocking
 * barrier and keeps working until every rank has entered it, then all
 * append what they decided and flush. A killed run started again with the
 * same --out finds the decisions already made and decides only the rest.
 * At the end /decisions is rewritten in row order and /substitutions
 * holds every candidate row, in the candidates' order, with its verdict,
 * so the result does not depend on the rank or thread count.
 */
#define _POSIX_C_SOURCE 200809L

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <omp.h>

#include "tool.h"
#include "verifier.h"

#define ROUND_SECONDS 5.0 /* work between two appends to the output */

static bool fresh;

static const taso_tool_flag_t flags[] = {
    {"fresh", "decide every row again, even if --out holds decisions of the same candidates",
     &fresh},
    {0},
};

static const taso_tool_spec_t spec = {
    .name = "taso-verify",
    .about = "Proves every candidate substitution from the axioms with Z3 and records\n"
             "each verdict: proved, unknown (not provable within the timeout) or refuted\n"
             "(the two graphs differ on random inputs). Every unknown and refuted row\n"
             "carries its reason in /decisions (taso-show prints it).\n"
             "\n"
             "Results stream into --out; a run that was stopped resumes from it when\n"
             "started again with the same files (see --fresh).\n"
             "\n"
             "Without --job, the job file recorded in the candidates file is loaded.\n",
    .job_help = "job file: axioms and the timeout per query",
    .in_help = "candidates artifact to verify",
    .out_help = "substitutions artifact to write",
    .default_in = "candidates.h5",
    .default_out = "substitutions.h5",
    .threads = true,
    .flags = flags,
};

/* The job is the one given, else the one the candidates were generated
 * from, so that a plain `taso-verify` continues the same run. */
static taso_err_t load_job(taso_tool_t *t, taso_artifact_t *in) {
  char *recorded_path = NULL, *recorded_text = NULL;
  taso_err_t err = TASO_OK;
  TASO_TOOL_STEP(t, err, taso_artifact_get_string(in, "job_path", &recorded_path));
  TASO_TOOL_STEP(t, err, taso_artifact_get_string(in, "job_text", &recorded_text));
  if (err == TASO_OK && t->job_path) {
    err = taso_tool_load_job(t, t->job_path);
  } else if (err == TASO_OK) {
    if (recorded_path[0] == '\0')
      err = taso_tool_agree(
          t, taso_error(TASO_ERR_FORMAT, "%s records no job file; pass --job FILE", t->in_path));
    else if ((err = taso_tool_load_job(t, recorded_path)) != TASO_OK)
      err = taso_error_prefix(err,
                              "no --job given, and the job %s was generated from "
                              "cannot be loaded: ",
                              t->in_path);
  }
  if (err == TASO_OK && strcmp(t->job.text, recorded_text) != 0)
    taso_tool_warn(t, "%s differs from the job file %s was generated from (%s)", t->job.path,
                   t->in_path, recorded_path);
  free(recorded_path);
  free(recorded_text);
  return err;
}

static bool exists(const char *path) {
  struct stat st;
  return stat(path, &st) == 0;
}

/* The job's axiom path as given, else relative to the job file's folder
 * or the folder above it (jobs/ sits next to data/). */
static taso_err_t load_axioms(const taso_tool_t *t, taso_axioms_t **ax) {
  const char *rel = t->job.axioms;
  char path[1024];
  snprintf(path, sizeof path, "%s", rel);
  if (!exists(path) && rel[0] != '/') {
    char dir[512];
    snprintf(dir, sizeof dir, "%s", t->job.path);
    char *slash = strrchr(dir, '/');
    if (slash) *slash = '\0';
    else snprintf(dir, sizeof dir, ".");
    snprintf(path, sizeof path, "%s/%s", dir, rel);
    if (!exists(path)) snprintf(path, sizeof path, "%s/../%s", dir, rel);
    if (!exists(path)) snprintf(path, sizeof path, "%s", rel);
  }
  taso_err_t err = taso_axioms_load(path, ax);
  if (err != TASO_OK) return taso_error_prefix(err, "axioms of %s: ", t->job.path);
  return TASO_OK;
}

/* Identifies the candidate set, so that a resumed run continues only the
 * same one: FNV-1a over the rows and the graphs' hashes. */
static uint64_t digest(const taso_subst_t *rows, int64_t nrows, const taso_graph_t *graphs,
                       int64_t ngraphs) {
  uint64_t h = 0xcbf29ce484222325ull;
  uint64_t words[3];
#define MIX(v)                                                                                     \
  do {                                                                                             \
    uint64_t x_ = (uint64_t)(v);                                                                   \
    for (int b_ = 0; b_ < 8; b_++) {                                                               \
      h ^= (x_ >> (8 * b_)) & 0xff;                                                                \
      h *= 0x100000001b3ull;                                                                       \
    }                                                                                              \
  } while (0)
  MIX(nrows);
  MIX(ngraphs);
  for (int64_t i = 0; i < nrows; i++) {
    words[0] = (uint64_t)rows[i].src;
    words[1] = (uint64_t)rows[i].dst;
    MIX(words[0]);
    MIX(words[1]);
  }
  for (int64_t i = 0; i < ngraphs; i++) {
    words[2] = taso_graph_hash(&graphs[i]);
    MIX(words[2]);
  }
#undef MIX
  return h;
}

/* Collective. Opens --out to resume it if it holds decisions of these
 * candidates; *done[i] marks decided rows. Otherwise *out stays NULL. */
static taso_err_t try_resume(taso_tool_t *t, int64_t nrows, uint64_t dig, taso_artifact_t **out,
                             bool *done, int64_t *ndone, bool *complete) {
  int64_t rows = -1, d = 0;
  taso_decision_t *dec = NULL;
  taso_subst_t *final = NULL;
  int64_t ndec = 0, nfinal = 0;
  *ndone = 0;
  *complete = false;
  int have = t->rank == 0 ? exists(t->out_path) : 0;
  MPI_Bcast(&have, 1, MPI_INT, 0, t->comm);
  if (!have || fresh) return TASO_OK;
  taso_err_t err = taso_tool_agree(t, taso_artifact_open_rw(t->comm, t->out_path,
                                                           TASO_KIND_SUBSTITUTIONS, out));
  if (err != TASO_OK) {
    taso_tool_warn(t, "cannot resume from %s (%s): starting afresh", t->out_path,
                   taso_error_detail());
    *out = NULL;
    return TASO_OK;
  }
  taso_err_t e1 = taso_artifact_get_count(*out, "candidates_rows", &rows);
  taso_err_t e2 = taso_artifact_get_count(*out, "candidates_digest", &d);
  int same = e1 == TASO_OK && e2 == TASO_OK && rows == nrows && (uint64_t)d == dig;
  MPI_Bcast(&same, 1, MPI_INT, 0, t->comm);
  if (same) {
    err = taso_tool_agree(t, taso_artifact_read_decisions(*out, &dec, &ndec));
    if (err == TASO_OK) err = taso_tool_agree(t, taso_artifact_read_substs(*out, &final, &nfinal));
  }
  if (!same || err != TASO_OK) {
    taso_tool_warn(t, "%s %s: starting afresh", t->out_path,
                   same ? "cannot be read back" : "holds decisions of other candidates");
    err = taso_tool_close(t, out, TASO_OK);
    free(dec);
    free(final);
    return err;
  }
  for (int64_t i = 0; i < ndec; i++)
    if (dec[i].row < nrows && !done[dec[i].row]) {
      done[dec[i].row] = true;
      (*ndone)++;
    }
  *complete = nfinal == nrows && *ndone == nrows;
  free(dec);
  free(final);
  return TASO_OK;
}

/* Collective. A fresh output: the candidates' inputs and graphs, and the
 * identity of the candidate set for a later resume. */
static taso_err_t create_output(taso_tool_t *t, const taso_inputs_t *inputs,
                                const taso_graph_t *graphs, int64_t ngraphs, int64_t nrows,
                                uint64_t dig, taso_artifact_t **out) {
  taso_provenance_t prov;
  int64_t glo, ghi, first;
  taso_err_t err = TASO_OK;
  taso_tool_provenance(t, &prov);
  taso_tool_block(t, ngraphs, &glo, &ghi);
  TASO_TOOL_STEP(t, err,
                 taso_artifact_create(t->comm, t->out_path, TASO_KIND_SUBSTITUTIONS, &prov, out));
  TASO_TOOL_STEP(t, err, taso_artifact_write_inputs(*out, inputs));
  /* Blocks follow rank order, so graph i keeps index i. (NULL + 0 is
   * undefined, hence the check.) */
  TASO_TOOL_STEP(t, err,
                 taso_artifact_write_graphs(*out, graphs ? graphs + glo : NULL, ghi - glo, &first));
  TASO_TOOL_STEP(t, err, taso_artifact_set_count(*out, "candidates_rows", nrows));
  TASO_TOOL_STEP(t, err, taso_artifact_set_count(*out, "candidates_digest", (int64_t)dig));
  /* Decisions go to /decisions as they come; make it exist from the start. */
  TASO_TOOL_STEP(t, err, taso_artifact_append_decisions(*out, NULL, 0));
  return err;
}

/* What a run needs to decide rows. */
typedef struct {
  const taso_inputs_t *inputs;
  const taso_graph_t *graphs;
  int64_t ngraphs;
  const taso_subst_t *rows;
  uint64_t seed;
  taso_prover_t **provers; /* one per OpenMP thread */
} work_t;

/* Decides rows todo[lo, hi) with the rank's threads; appends to *dec. */
static taso_err_t decide_chunk(const work_t *w, const int64_t *todo, int64_t lo, int64_t hi,
                               taso_decision_t *dec) {
  taso_err_t err = TASO_OK;
#pragma omp parallel for schedule(dynamic, 1)
  for (int64_t k = lo; k < hi; k++) {
    int64_t row = todo[k];
    const taso_subst_t *r = &w->rows[row];
    taso_decision_t *d = &dec[k - lo];
    taso_verify_result_t res;
    taso_err_t e;
    memset(d, 0, sizeof *d);
    d->row = row;
    if (r->src < 0 || r->src >= w->ngraphs || r->dst < 0 || r->dst >= w->ngraphs) {
      e = taso_error(TASO_ERR_FORMAT, "candidate row %lld names a graph outside the set",
                     (long long)row);
    } else {
      /* The seed depends on the row alone, not on who decides it. */
      e = taso_prover_decide(w->provers[omp_get_thread_num()], w->inputs, &w->graphs[r->src],
                             &w->graphs[r->dst], w->seed * 1000003ull + (uint64_t)row, &res);
    }
    if (e == TASO_OK) {
      d->verdict = res.verdict;
      d->seconds = res.seconds;
      memcpy(d->reason, res.reason, sizeof d->reason);
      d->reason[TASO_REASON_LEN - 1] = '\0';
    } else {
#pragma omp critical(taso_verify_error)
      if (err == TASO_OK) err = taso_error(e, "row %lld: %s", (long long)row, taso_error_detail());
    }
  }
  return err;
}

/* A run's state between rounds: the decisions of this rank's round. */
typedef struct {
  const work_t *w;
  const int64_t *todo;
  taso_artifact_t *out;
  taso_decision_t *local;
  int64_t nlocal, cap;
} round_t;

/* Decides rows todo[start..end) into the round's decisions. */
static taso_err_t take(void *ctx, int64_t start, int64_t end, int64_t *results) {
  round_t *r = ctx;
  if (r->nlocal + (end - start) > r->cap) {
    int64_t cap = r->cap ? 2 * r->cap : 256;
    while (cap < r->nlocal + (end - start)) cap *= 2;
    taso_decision_t *grown = realloc(r->local, (size_t)cap * sizeof *grown);
    if (!grown) return taso_error(TASO_ERR_NOMEM, "no memory for decisions");
    r->local = grown;
    r->cap = cap;
  }
  TASO_TRY(decide_chunk(r->w, r->todo, start, end, r->local + r->nlocal));
  r->nlocal += end - start;
  *results = end - start;
  return TASO_OK;
}

static taso_err_t flush(void *ctx) {
  round_t *r = ctx;
  taso_err_t err = taso_artifact_append_decisions(r->out, r->local, r->nlocal);
  r->nlocal = 0;
  return err;
}

/* Collective. Decides every row of todo, appending rounds of decisions to
 * out (taso_tool_rounds). Test hooks: TASO_VERIFY_ROUND_SECONDS,
 * TASO_VERIFY_STOP_AFTER. */
static taso_err_t run(taso_tool_t *t, const work_t *w, const int64_t *todo, int64_t ntodo,
                      taso_artifact_t *out, int64_t already, int64_t nrows) {
  round_t state = {.w = w, .todo = todo, .out = out};
  taso_rounds_t r = {.ctx = &state,
                     .take = take,
                     .flush = flush,
                     .total = ntodo,
                     .chunk = 2 * (int64_t)omp_get_max_threads(),
                     .round_seconds = ROUND_SECONDS,
                     .round_env = "TASO_VERIFY_ROUND_SECONDS",
                     .stop_env = "TASO_VERIFY_STOP_AFTER",
                     .what = "candidate rows",
                     .progress_total = nrows,
                     .already = already};
  taso_err_t err = taso_tool_rounds(t, &r);
  free(state.local);
  return err;
}

static int compare_rows(const void *a, const void *b) {
  int64_t x = ((const taso_decision_t *)a)->row, y = ((const taso_decision_t *)b)->row;
  return (x > y) - (x < y);
}

/* Collective. Reads every decision back, writes them in row order and the
 * final /substitutions; counts verdicts. */
static taso_err_t finish(taso_tool_t *t, taso_artifact_t *out, const taso_subst_t *rows,
                         int64_t nrows, int64_t *verdicts) {
  taso_decision_t *dec = NULL;
  taso_subst_t *final = NULL;
  int64_t ndec = 0, lo, hi;
  taso_err_t err = taso_artifact_read_decisions(out, &dec, &ndec);
  if (err != TASO_OK) return err;
  qsort(dec, (size_t)ndec, sizeof *dec, compare_rows);
  /* One decision per row, each row decided. */
  taso_err_t bad = ndec == nrows ? TASO_OK
                                 : taso_error(TASO_ERR_FORMAT,
                                              "%s: %lld decisions for %lld candidate rows",
                                              t->out_path, (long long)ndec, (long long)nrows);
  for (int64_t i = 0; i < ndec && bad == TASO_OK; i++)
    if (dec[i].row != i)
      bad = taso_error(TASO_ERR_FORMAT, "%s: row %lld is decided twice or not at all", t->out_path,
                       (long long)i);
  if ((err = taso_tool_agree(t, bad)) != TASO_OK) goto done;
  for (int64_t i = 0; i < ndec; i++) verdicts[dec[i].verdict]++;
  taso_tool_block(t, nrows, &lo, &hi);
  if (!(final = calloc((size_t)(hi - lo + 1), sizeof *final)))
    bad = taso_error(TASO_ERR_NOMEM, "no memory for the substitution rows");
  for (int64_t i = lo; i < hi && final; i++) {
    final[i - lo] = rows[i];
    final[i - lo].verdict = dec[i].verdict;
    final[i - lo].seconds = dec[i].seconds;
  }
  if ((err = taso_tool_agree(t, bad)) != TASO_OK) goto done;
  TASO_TOOL_STEP(t, err, taso_artifact_rewrite_decisions(out, dec + lo, hi - lo));
  TASO_TOOL_STEP(t, err, taso_artifact_write_substs(out, final, hi - lo));
  TASO_TOOL_STEP(t, err, taso_artifact_set_count(out, "proved", verdicts[TASO_VERDICT_PROVED]));
  TASO_TOOL_STEP(t, err, taso_artifact_set_count(out, "unknown", verdicts[TASO_VERDICT_UNKNOWN]));
  TASO_TOOL_STEP(t, err, taso_artifact_set_count(out, "refuted", verdicts[TASO_VERDICT_REFUTED]));
  TASO_TOOL_STEP(t, err,
                 taso_artifact_set_count(out, "unverified", verdicts[TASO_VERDICT_CANDIDATE]));
done:
  free(dec);
  free(final);
  return err;
}

int main(int argc, char **argv) {
  taso_tool_t t;
  taso_tool_init(&t, &spec, &argc, &argv);

  taso_artifact_t *in = NULL, *out = NULL;
  taso_inputs_t inputs = {0};
  taso_graph_t *graphs = NULL;
  taso_subst_t *rows = NULL;
  taso_axioms_t *ax = NULL;
  taso_prover_t **provers = NULL;
  bool *done = NULL;
  int64_t *todo = NULL;
  int64_t ngraphs = 0, nrows = 0, ndone = 0, ntodo = 0;
  int64_t verdicts[TASO_VERDICT_REFUTED + 1] = {0};
  bool complete = false;
  int nthreads = omp_get_max_threads();
  taso_err_t err = TASO_OK;

  TASO_TOOL_STEP(&t, err, taso_artifact_open(t.comm, t.in_path, TASO_KIND_CANDIDATES, &in));
  if (err == TASO_OK) err = load_job(&t, in);
  TASO_TOOL_STEP(&t, err, taso_artifact_read_inputs(in, &inputs));
  TASO_TOOL_STEP(&t, err, taso_artifact_read_graphs(in, &graphs, &ngraphs));
  TASO_TOOL_STEP(&t, err, taso_artifact_read_substs(in, &rows, &nrows));
  err = taso_tool_close(&t, &in, err);

  /* Every rank loads the axioms and proves the lemmas itself; a lemma
   * counts as proved only if it was proved everywhere. */
  TASO_TOOL_STEP(&t, err, load_axioms(&t, &ax));
  /* Every query's limits: the timeout, Z3's resource count and its memory
   * cap, so that no query runs on whatever the axioms (README.md). */
  taso_limits_t lim = {.timeout_s = t.job.verify_timeout,
                       .rlimit = (unsigned)t.job.verify_rlimit,
                       .memory_mb = (unsigned)t.job.verify_memory_mb};
  if (err == TASO_OK) {
    char report[512];
    int failed = 0;
    err = taso_tool_agree(
        &t, taso_axioms_prove_lemmas_limited(ax, &lim, report, sizeof report, &failed));
    if (err == TASO_OK) {
      int *on = malloc(sizeof *on * (size_t)(ax->n + 1));
      if (!on) taso_fatal(__FILE__, __LINE__, "taso", "no memory");
      for (int i = 0; i < ax->n; i++) on[i] = ax->v[i].enabled;
      MPI_Allreduce(MPI_IN_PLACE, on, ax->n, MPI_INT, MPI_LAND, t.comm);
      int nlemmas = 0;
      for (int i = 0; i < ax->n; i++) {
        ax->v[i].enabled = on[i];
        nlemmas += ax->v[i].kind == TASO_AXIOM_LEMMA;
      }
      free(on);
      if (failed)
        taso_tool_warn(&t, "%d lemma(s) not proved from the axioms, left out: %s", failed, report);
      taso_tool_print(&t, "taso-verify: %d axioms and lemmas from %s; %d of %d lemmas proved\n",
                      ax->n, t.job.axioms, nlemmas - failed, nlemmas);
    }
  }
  if (err == TASO_OK) {
    if (!(provers = calloc((size_t)nthreads, sizeof *provers)) ||
        !(done = calloc((size_t)(nrows + 1), sizeof *done)) ||
        !(todo = calloc((size_t)(nrows + 1), sizeof *todo)))
      err = taso_error(TASO_ERR_NOMEM, "no memory for %lld rows", (long long)nrows);
    for (int i = 0; i < nthreads && err == TASO_OK; i++)
      err = taso_prover_new_limited(ax, &lim, &provers[i]);
    err = taso_tool_agree(&t, err);
  }

  uint64_t dig = digest(rows, nrows, graphs, ngraphs);
  if (err == TASO_OK) err = try_resume(&t, nrows, dig, &out, done, &ndone, &complete);
  if (err == TASO_OK && out)
    taso_tool_print(&t, "taso-verify: resuming %s: %lld of %lld rows already decided%s\n",
                    t.out_path, (long long)ndone, (long long)nrows,
                    complete ? " (the file is complete; nothing to do)" : "");
  if (err == TASO_OK && !out)
    err = create_output(&t, &inputs, graphs, ngraphs, nrows, dig, &out);

  if (err == TASO_OK && !complete) {
    for (int64_t i = 0; i < nrows; i++)
      if (!done[i]) todo[ntodo++] = i;
    work_t w = {.inputs = &inputs,
                .graphs = graphs,
                .ngraphs = ngraphs,
                .rows = rows,
                .seed = t.job.seed,
                .provers = provers};
    err = run(&t, &w, todo, ntodo, out, ndone, nrows);
  }
  if (err == TASO_OK && !complete) {
    err = finish(&t, out, rows, nrows, verdicts);
  } else if (err == TASO_OK) {
    /* A finished file: nothing to decide, nothing to write. */
    static const char *const names[] = {"unverified", "proved", "unknown", "refuted"};
    for (int v = 0; v <= TASO_VERDICT_REFUTED && err == TASO_OK; v++)
      err = taso_tool_agree(&t, taso_artifact_get_count(out, names[v], &verdicts[v]));
  }
  err = taso_tool_close(&t, &out, err);

  if (err == TASO_OK)
    taso_tool_summary(&t,
                      "%lld candidates: %lld proved, %lld unknown, %lld refuted, "
                      "%lld unverified (%lld decided now) -> %s",
                      (long long)nrows, (long long)verdicts[TASO_VERDICT_PROVED],
                      (long long)verdicts[TASO_VERDICT_UNKNOWN],
                      (long long)verdicts[TASO_VERDICT_REFUTED],
                      (long long)verdicts[TASO_VERDICT_CANDIDATE], (long long)ntodo, t.out_path);
  for (int i = 0; provers && i < nthreads; i++) taso_prover_free(provers[i]);
  free(provers);
  free(done);
  free(todo);
  taso_axioms_free(ax);
  free(rows);
  taso_graphs_free(graphs, ngraphs);
  taso_inputs_free(&inputs);
  return taso_tool_finish(&t, err);
}
