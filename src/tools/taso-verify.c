/*
 * taso-verify: the second stage. Proves every candidate substitution from
 * the axioms with Z3 (src/verify) and records proved, unknown or refuted,
 * with the time and, for every verdict but proved, the reason.
 *
 * Work is handed out dynamically: a counter on rank 0 (an MPI window that
 * every rank advances with MPI_Fetch_and_op) gives each rank its next
 * chunk of undecided rows (src/core/rounds.h), and OpenMP threads share
 * the chunk, each with its own Z3 context in its own query process
 * (src/verify/decide.h). Decisions stream into the output's /decisions in
 * rounds: a rank that has worked for a few seconds enters a non-blocking
 * barrier and keeps working until every rank has entered it, then all
 * write what they decided to OUT.resume and flush. OUT.resume's
 * /decisions is a slot table (artifact.h): row i's decision at slot i,
 * counted once marked, so that a kill at any moment leaves it readable. A
 * killed run started again with the same --out finds the decisions
 * already made there and decides only the rest. At the end the whole result is written to OUT.tmp
 * and renamed over --out (tool.h): /decisions in row order and
 * /substitutions with every candidate row, in the candidates' order, with
 * its verdict, so the result does not depend on the rank or thread count.
 */
#define _POSIX_C_SOURCE 200809L

#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <omp.h>

#include "decide.h"
#include "hash.h"
#include "row_stream.h"
#include "tool.h"
#include "verifier.h"

#define ROUND_SECONDS 5.0 /* work between two writes to OUT.resume */

/* OUT.resume's /decisions, a slot table of the final file's records (which
 * taso_artifact_append_decisions writes in row order). */
static const taso_table_t *const slots_table = &taso_decision_table;

static const taso_tool_spec_t spec = {
    .name = "taso-verify",
    .about = "Proves every candidate substitution from the axioms with Z3 and records\n"
             "each verdict: proved, unknown (not provable within the timeout) or refuted\n"
             "(the two graphs differ on random inputs). Every unknown and refuted row\n"
             "carries its reason in /decisions (taso-show prints it).\n"
             "\n"
             "Decisions stream into OUT.resume while the run goes on; a run that was\n"
             "stopped resumes from it when started again with the same files (see\n"
             "--fresh). --out is written beside (OUT.tmp) and renamed into place when\n"
             "complete, and is never replaced if it holds other candidates' verdicts,\n"
             "another kind of file or an input of the run, unless --fresh is given.\n"
             "\n"
             "Without --job, the job the candidates were generated from is used, as\n"
             "recorded in the candidates file (its text then, not the file now).\n",
    .job_help = "job file: axioms and the timeout per query",
    .in_help = "candidates artifact to verify",
    .out_help = "substitutions artifact to write",
    .default_in = "candidates.h5",
    .default_out = "substitutions.h5",
    .out_kind = TASO_KIND_SUBSTITUTIONS,
    .fresh_help =
        "decide every row again, replacing another plan's --out (never another kind of file)",
    .threads = true,
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
    /* the job as it was when the candidates were made, not as edited since */
    else if ((err = taso_tool_load_recorded_job(t, recorded_path, recorded_text)) != TASO_OK)
      err = taso_error_prefix(err,
                              "no --job given, and the job %s was generated from "
                              "cannot be read: ",
                              t->in_path);
  }
  if (err == TASO_OK && t->job_path && strcmp(t->job.text, recorded_text) != 0)
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

static taso_err_t load_axioms(const taso_tool_t *t, taso_axioms_t **ax) {
  char path[1024];
  taso_tool_job_relative(t, t->job.axioms, path, sizeof path);
  taso_err_t err = taso_axioms_load(path, ax);
  if (err != TASO_OK) return taso_error_prefix(err, "axioms of %s: ", t->job.path);
  return TASO_OK;
}

/* What a verdict depends on. Each part is a root attribute of OUT.resume
 * and of --out, so that a run resumes only decisions made the same way
 * and, when a part differs, says which one. */
enum { KEY_CANDIDATES, KEY_AXIOMS, KEY_SETTINGS, KEY_VERIFIER, KEY_PARTS };
static const struct {
  const char *attr; /* root attribute */
  const char *what; /* what differs when it does, for the message */
} key_parts[KEY_PARTS] = {
    [KEY_CANDIDATES] = {"candidates_digest", "other candidates or input shapes"},
    [KEY_AXIOMS] = {"axioms_digest", "other axioms"},
    [KEY_SETTINGS] = {"settings_digest", "other limits (timeout, rlimit, memory) or another seed"},
    [KEY_VERIFIER] = {"verifier_version", "another version of the verifier"},
};
typedef int64_t resume_key_t[KEY_PARTS];

/* The candidate rows, the graphs and the input table (names and shapes). */
static uint64_t candidates_digest(const taso_inputs_t *inputs, const taso_subst_t *rows,
                                  int64_t nrows, const taso_graph_t *graphs, int64_t ngraphs) {
  uint64_t h = TASO_FNV_START;
  h = taso_fnv64(h, &nrows, sizeof nrows);
  h = taso_fnv64(h, &ngraphs, sizeof ngraphs);
  for (int64_t i = 0; i < nrows; i++) {
    h = taso_fnv64(h, &rows[i].src, sizeof rows[i].src);
    h = taso_fnv64(h, &rows[i].dst, sizeof rows[i].dst);
  }
  for (int64_t i = 0; i < ngraphs; i++) {
    uint64_t g = taso_graph_hash(&graphs[i]);
    h = taso_fnv64(h, &g, sizeof g);
  }
  for (int i = 0; i < inputs->n; i++) {
    const taso_input_t *in = &inputs->v[i];
    h = taso_fnv64(h, in->name, strlen(in->name) + 1);
    h = taso_fnv64(h, &in->type.rank, sizeof in->type.rank);
    h = taso_fnv64(h, in->type.dim, sizeof in->type.dim);
  }
  return h;
}

/* The key of this run. The axioms are taken as loaded: which lemmas are
 * proved at start-up can depend on the machine's speed, and is not part
 * of what was asked. */
static void make_key(const taso_tool_t *t, const taso_axioms_t *ax, const taso_inputs_t *inputs,
                     const taso_subst_t *rows, int64_t nrows, const taso_graph_t *graphs,
                     int64_t ngraphs, resume_key_t key) {
  uint64_t settings = TASO_FNV_START;
  settings = taso_fnv64(settings, &t->job.verify_timeout, sizeof t->job.verify_timeout);
  settings = taso_fnv64(settings, &t->job.seed, sizeof t->job.seed);
  settings = taso_fnv64(settings, &t->job.verify_rlimit, sizeof t->job.verify_rlimit);
  settings = taso_fnv64(settings, &t->job.verify_memory_mb, sizeof t->job.verify_memory_mb);
  /* Attributes are signed: the top bit goes. */
  const uint64_t low63 = 0x7fffffffffffffffULL;
  key[KEY_CANDIDATES] = (int64_t)(candidates_digest(inputs, rows, nrows, graphs, ngraphs) & low63);
  key[KEY_AXIOMS] = (int64_t)(taso_axioms_digest(ax) & low63);
  key[KEY_SETTINGS] = (int64_t)(settings & low63);
  key[KEY_VERIFIER] = TASO_VERIFIER_VERSION;
}

/* Collective. What of the key a verify artifact's decisions were not made
 * with, or NULL when all of it matches. */
static const char *key_mismatch(taso_tool_t *t, taso_artifact_t *a, int64_t nrows,
                                const resume_key_t key) {
  int differs = -1;
  int64_t rows = -1, v = 0;
  if (taso_artifact_get_count(a, "candidates_rows", &rows) != TASO_OK || rows != nrows)
    differs = KEY_CANDIDATES;
  for (int k = 0; k < KEY_PARTS && differs < 0; k++)
    if (taso_artifact_get_count(a, key_parts[k].attr, &v) != TASO_OK || v != key[k]) differs = k;
  MPI_Bcast(&differs, 1, MPI_INT, 0, t->comm);
  return differs < 0 ? NULL : key_parts[differs].what;
}

/* Collective. Writes the key into a verify artifact. */
static taso_err_t write_key(taso_tool_t *t, taso_artifact_t *a, int64_t nrows,
                            const resume_key_t key) {
  taso_err_t err = TASO_OK;
  TASO_TOOL_STEP(t, err, taso_artifact_set_count(a, "candidates_rows", nrows));
  for (int k = 0; k < KEY_PARTS; k++)
    TASO_TOOL_STEP(t, err, taso_artifact_set_count(a, key_parts[k].attr, key[k]));
  return err;
}

/* Whether a decision read back at slot row is one: of that row, with a
 * verdict. */
static bool usable(const taso_decision_t *d, int64_t row) {
  return d->row == row && d->verdict >= TASO_VERDICT_PROVED && d->verdict <= TASO_VERDICT_REFUTED;
}

/* Collective. Every rank reads OUT.resume's decisions (*dec, malloc'd) and
 * marks in done[] the rows that have one. */
static taso_err_t read_slots(taso_tool_t *t, taso_artifact_t *a, int64_t nrows,
                             taso_decision_t **dec, bool *done, int64_t *ndone) {
  unsigned char *marks = NULL;
  taso_err_t err = TASO_OK;
  *dec = NULL;
  TASO_TOOL_STEP(t, err, taso_artifact_read_marks(a, slots_table, 0, nrows, &marks));
  TASO_TOOL_STEP(t, err, taso_artifact_read_table(a, slots_table, 0, nrows, (void **)dec));
  *ndone = 0;
  for (int64_t i = 0; err == TASO_OK && i < nrows; i++)
    *ndone += done[i] = marks[i] && usable(&(*dec)[i], i);
  free(marks);
  if (err != TASO_OK) {
    free(*dec);
    *dec = NULL;
  }
  return err;
}

/* Collective. A --out that already holds the verdicts of these candidates
 * is complete: there is nothing to do, and *final is it, open to read its
 * counts. One of other candidates is another plan's results. */
static taso_err_t check_output(taso_tool_t *t, int64_t nrows, const resume_key_t key,
                               taso_artifact_t **final) {
  int have = t->rank == 0 && !t->fresh && exists(t->out_path);
  MPI_Bcast(&have, 1, MPI_INT, 0, t->comm);
  if (!have) return TASO_OK;
  taso_artifact_t *a = NULL;
  int64_t n = 0;
  taso_err_t err =
      taso_tool_agree(t, taso_artifact_open(t->comm, t->out_path, TASO_KIND_SUBSTITUTIONS, &a));
  if (err != TASO_OK) return err;
  const char *other = key_mismatch(t, a, nrows, key);
  if (other) {
    err = taso_tool_refuse(t, t->out_path, "verdicts made with %s", other);
    return taso_tool_close(t, &a, taso_tool_agree(t, err));
  }
  /* A file of an older taso that streamed into --out itself may have
   * stopped before its /substitutions: not complete, and replaced. */
  int64_t proved = -1;
  int complete = taso_artifact_get_count(a, "proved", &proved) == TASO_OK;
  MPI_Bcast(&complete, 1, MPI_INT, 0, t->comm);
  if (complete) {
    /* One that cannot be read back is this plan's too: replaced at the end. */
    taso_subst_t *rows = NULL;
    err = taso_tool_agree(t, taso_artifact_read_substs(a, &rows, &n));
    free(rows);
    complete = err == TASO_OK && n == nrows;
  }
  if (complete) {
    *final = a;
    return TASO_OK;
  }
  return taso_tool_close(t, &a, TASO_OK);
}

/* Collective. A fresh OUT.resume: the identity of the candidate set, for
 * a later resume, and an empty /decisions. */
static taso_err_t create_resume(taso_tool_t *t, int64_t nrows, const resume_key_t key,
                                taso_artifact_t **out) {
  taso_provenance_t prov;
  taso_err_t err = TASO_OK;
  taso_tool_provenance(t, &prov);
  TASO_TOOL_STEP(
      t, err, taso_artifact_create(t->comm, t->resume_path, TASO_KIND_SUBSTITUTIONS, &prov, out));
  if (err == TASO_OK) err = write_key(t, *out, nrows, key);
  TASO_TOOL_STEP(t, err, taso_artifact_create_slots(*out, slots_table, nrows));
  return err;
}

/* Collective. Decisions stream into OUT.resume, never into --out: a run
 * started again resumes from the decisions in it (*ndone rows, marked in
 * done[]), and one of other candidates is not thrown away without --fresh.
 * An OUT.resume that cannot be opened at all is started afresh. */
static taso_err_t open_resume(taso_tool_t *t, int64_t nrows, const resume_key_t key, bool *done,
                              int64_t *ndone, taso_artifact_t **out) {
  int have = t->rank == 0 && !t->fresh && exists(t->resume_path);
  MPI_Bcast(&have, 1, MPI_INT, 0, t->comm);
  *ndone = 0;
  if (!have) return create_resume(t, nrows, key, out);
  taso_err_t err = taso_tool_agree(
      t, taso_artifact_open_rw(t->comm, t->resume_path, TASO_KIND_SUBSTITUTIONS, out));
  const char *other = err == TASO_OK ? key_mismatch(t, *out, nrows, key) : NULL;
  if (other) {
    err = taso_tool_agree(t, taso_tool_refuse(t, t->resume_path, "decisions made with %s", other));
    return taso_tool_close(t, out, err);
  }
  if (err == TASO_OK) {
    taso_decision_t *dec = NULL;
    err = read_slots(t, *out, nrows, &dec, done, ndone);
    free(dec);
  }
  if (err == TASO_OK) return TASO_OK;
  taso_tool_warn(t, "%s cannot be resumed (%s): starting afresh", t->resume_path,
                 taso_error_detail());
  err = taso_tool_close(t, out, TASO_OK);
  memset(done, 0, (size_t)nrows * sizeof *done);
  *ndone = 0;
  if (err == TASO_OK) err = create_resume(t, nrows, key, out);
  return err;
}

/* A run's state between rounds: the decisions of this rank's round. */
typedef struct {
  taso_decider_t *d;
  const int64_t *todo;
  taso_artifact_t *out;
  taso_row_stream_t rows; /* the round's decisions */
} round_t;

/* Decides rows todo[start..end) into the round's decisions. */
static taso_err_t take(void *ctx, int64_t start, int64_t end, int64_t *results) {
  round_t *r = ctx;
  taso_decision_t *at;
  TASO_TRY(taso_row_stream_room(&r->rows, end - start, (void **)&at));
  TASO_TRY(taso_decider_run(r->d, r->todo + start, end - start, at));
  for (int64_t i = 0; i < end - start; i++) {
    size_t used = strnlen(at[i].reason, TASO_REASON_LEN - 1);
    memset(at[i].reason + used, 0, TASO_REASON_LEN - used); /* no stray bytes in the file */
    at[i].pad_ = 0;
  }
  taso_row_stream_added(&r->rows, end - start);
  *results = end - start;
  return TASO_OK;
}

static taso_err_t flush(void *ctx) {
  round_t *r = ctx;
  return taso_row_stream_flush(&r->rows, r->out);
}

/* Collective. Decides every row of todo, appending rounds of decisions to
 * out (taso_rounds_run). Test hooks: TASO_VERIFY_ROUND_SECONDS,
 * TASO_VERIFY_STOP_AFTER. */
static taso_err_t run(taso_tool_t *t, taso_decider_t *d, const int64_t *todo, int64_t ntodo,
                      taso_artifact_t *out, int64_t already, int64_t nrows) {
  round_t state = {.d = d,
                   .todo = todo,
                   .out = out,
                   .rows = {.table = slots_table, .slot_offset = offsetof(taso_decision_t, row)}};
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
  taso_err_t err = taso_rounds_run(t->comm, spec.name, &r);
  taso_row_stream_free(&state.rows);
  return err;
}

/* What the final file is made of. */
typedef struct {
  const taso_inputs_t *inputs;
  const taso_graph_t *graphs;
  int64_t ngraphs;
  const taso_subst_t *rows;
  int64_t nrows;
  const int64_t *key; /* resume_key_t */
} final_t;

/* Collective. Writes the complete output into OUT.tmp: the candidates'
 * inputs and graphs, every decision in row order (dec: one per row), the
 * final /substitutions and the counts. */
static taso_err_t write_final(taso_tool_t *t, const final_t *f, const taso_decision_t *dec,
                              const int64_t *verdicts) {
  taso_provenance_t prov;
  taso_artifact_t *out = NULL;
  taso_subst_t *final = NULL;
  int64_t glo, ghi, first, lo, hi;
  taso_err_t err = TASO_OK;
  taso_tool_provenance(t, &prov);
  taso_tool_block(t, f->ngraphs, &glo, &ghi);
  taso_tool_block(t, f->nrows, &lo, &hi);
  if (!(final = calloc((size_t)(hi - lo + 1), sizeof *final)))
    err = taso_error(TASO_ERR_NOMEM, "no memory for the substitution rows");
  for (int64_t i = lo; i < hi && final; i++) {
    final[i - lo] = f->rows[i];
    final[i - lo].verdict = dec[i].verdict;
    final[i - lo].seconds = dec[i].seconds;
  }
  err = taso_tool_agree(t, err);
  TASO_TOOL_STEP(t, err,
                 taso_artifact_create(t->comm, t->tmp_path, TASO_KIND_SUBSTITUTIONS, &prov, &out));
  TASO_TOOL_STEP(t, err, taso_artifact_write_inputs(out, f->inputs));
  /* Blocks follow rank order, so graph i keeps index i, and decision i is
   * row i. (NULL + 0 is undefined, hence the check.) */
  TASO_TOOL_STEP(
      t, err,
      taso_artifact_write_graphs(out, f->graphs ? f->graphs + glo : NULL, ghi - glo, &first));
  if (err == TASO_OK) err = write_key(t, out, f->nrows, f->key);
  TASO_TOOL_STEP(t, err, taso_artifact_append_decisions(out, dec + lo, hi - lo));
  TASO_TOOL_STEP(t, err, taso_artifact_write_substs(out, final, hi - lo));
  static const char *const names[] = {"unverified", "proved", "unknown", "refuted"};
  for (int v = 0; v <= TASO_VERDICT_REFUTED; v++)
    TASO_TOOL_STEP(t, err, taso_artifact_set_count(out, names[v], verdicts[v]));
  err = taso_tool_close(t, &out, err);
  free(final);
  return err;
}

/* Collective. Reads every decision back from OUT.resume (*resume, closed
 * here), checks that each row has one, counts verdicts and puts the
 * complete output in place of --out. */
static taso_err_t finish(taso_tool_t *t, taso_artifact_t **resume, const final_t *f,
                         int64_t *verdicts) {
  taso_decision_t *dec = NULL;
  int64_t m = 0;
  bool *done = calloc((size_t)f->nrows + 1, sizeof *done);
  taso_err_t err = taso_tool_agree(
      t,
      done ? TASO_OK : taso_error(TASO_ERR_NOMEM, "no memory for %lld rows", (long long)f->nrows));
  if (err == TASO_OK) err = read_slots(t, *resume, f->nrows, &dec, done, &m);
  free(done);
  err = taso_tool_close(t, resume, err);
  if (err != TASO_OK) return err;
  taso_err_t bad = m == f->nrows
                       ? TASO_OK
                       : taso_error(TASO_ERR_FORMAT, "%s: %lld decisions for %lld candidate rows",
                                    t->resume_path, (long long)m, (long long)f->nrows);
  if ((err = taso_tool_agree(t, bad)) == TASO_OK) {
    for (int64_t i = 0; i < m; i++)
      verdicts[dec[i].verdict]++;
    err = write_final(t, f, dec, verdicts);
  }
  TASO_TOOL_STEP(t, err, taso_tool_commit_output(t));
  free(dec);
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
  bool *done = NULL;
  int64_t *todo = NULL;
  int64_t ngraphs = 0, nrows = 0, ndone = 0, ntodo = 0;
  int64_t verdicts[TASO_VERDICT_REFUTED + 1] = {0};
  bool complete = false;
  taso_err_t err = TASO_OK;

  /* Every check of --out before the input is read and the work starts. */
  TASO_TOOL_STEP(&t, err, taso_tool_claim_output(&t));
  TASO_TOOL_STEP(&t, err, taso_artifact_open(t.comm, t.in_path, TASO_KIND_CANDIDATES, &in));
  if (err == TASO_OK) err = load_job(&t, in);
  if (err == TASO_OK) {
    taso_tool_note_defaults(&t, "job", (const char *const[]){"name", NULL});
    taso_tool_note_defaults(&t, "verify", NULL);
  }
  TASO_TOOL_STEP(&t, err, taso_artifact_read_inputs(in, &inputs));
  TASO_TOOL_STEP(&t, err, taso_artifact_read_graphs(in, &graphs, &ngraphs));
  TASO_TOOL_STEP(&t, err, taso_artifact_read_substs(in, &rows, &nrows));
  err = taso_tool_close(&t, &in, err);

  /* Every rank loads the axioms and proves the lemmas itself; a lemma
   * counts as proved only if it was proved everywhere. */
  TASO_TOOL_STEP(&t, err, load_axioms(&t, &ax));
  resume_key_t key = {0};
  if (err == TASO_OK) make_key(&t, ax, &inputs, rows, nrows, graphs, ngraphs, key);
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
      for (int i = 0; i < ax->n; i++)
        on[i] = ax->v[i].enabled;
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
  if (err == TASO_OK && (!(done = calloc((size_t)(nrows + 1), sizeof *done)) ||
                         !(todo = calloc((size_t)(nrows + 1), sizeof *todo))))
    err = taso_error(TASO_ERR_NOMEM, "no memory for %lld rows", (long long)nrows);
  err = taso_tool_agree(&t, err);

  if (err == TASO_OK) err = check_output(&t, nrows, key, &out);
  complete = out != NULL;
  if (err == TASO_OK && !complete) err = open_resume(&t, nrows, key, done, &ndone, &out);
  if (err == TASO_OK && (complete || ndone > 0))
    taso_tool_print(&t, "taso-verify: resuming %s: %lld of %lld rows already decided%s\n",
                    complete ? t.out_path : t.resume_path, (long long)(complete ? nrows : ndone),
                    (long long)nrows, complete ? " (the file is complete; nothing to do)" : "");

  if (err == TASO_OK && !complete) {
    for (int64_t i = 0; i < nrows; i++)
      if (!done[i]) todo[ntodo++] = i;
    taso_decide_set_t set = {.ax = ax,
                             .lim = &lim,
                             .inputs = &inputs,
                             .graphs = graphs,
                             .ngraphs = ngraphs,
                             .rows = rows,
                             .seed = t.job.seed};
    taso_decider_t *d = NULL;
    err = taso_tool_agree(&t, taso_decider_open(&set, &d));
    if (err == TASO_OK) err = run(&t, d, todo, ntodo, out, ndone, nrows);
    int restarts = 0;
    taso_decider_close(d, &restarts);
    MPI_Allreduce(MPI_IN_PLACE, &restarts, 1, MPI_INT, MPI_SUM, t.comm);
    if (restarts)
      taso_tool_print(&t,
                      "taso-verify: %d query process(es) started again after one died, hung "
                      "or ran out of memory (those rows are unknown, saying why)\n",
                      restarts);
  }
  if (err == TASO_OK && !complete) {
    final_t f = {.inputs = &inputs,
                 .graphs = graphs,
                 .ngraphs = ngraphs,
                 .rows = rows,
                 .nrows = nrows,
                 .key = key};
    err = finish(&t, &out, &f, verdicts);
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
  free(done);
  free(todo);
  taso_axioms_free(ax);
  free(rows);
  taso_graphs_free(graphs, ngraphs);
  taso_inputs_free(&inputs);
  return taso_tool_finish(&t, err);
}
