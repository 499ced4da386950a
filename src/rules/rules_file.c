/*
 * Rules from substitutions files (rules.h): shared by taso-optimize, which
 * searches over them, taso-measure --expand, which measures what they can
 * make, and taso-rules and taso-show.
 */
#define _POSIX_C_SOURCE 200809L

#include <stdlib.h>
#include <string.h>

#include "rules.h"

/* Refuses anything but a verified substitution set, saying what it is. */
static taso_err_t check_substitutions(const char *path) {
  char *kind = NULL;
  taso_err_t err = taso_artifact_identify(path, &kind);
  if (err != TASO_OK) return taso_error_prefix(err, "--substitutions: ");
  if (strcmp(kind, TASO_KIND_SUBSTITUTIONS) != 0)
    err = taso_error(TASO_ERR_FORMAT, "--substitutions %s holds a %s artifact, not a %s one%s",
                     path, kind, TASO_KIND_SUBSTITUTIONS,
                     strcmp(kind, TASO_KIND_CANDIDATES) == 0
                         ? " (unverified candidates: run taso-verify on it first)"
                         : "");
  free(kind);
  return err;
}

/* Adds the proved rules of one substitutions file, its rows numbered from
 * *row_base on (which then moves past them). */
static taso_err_t load_file(MPI_Comm comm, const char *path, taso_rules_t *rules, int64_t *row_base,
                            int64_t *proved) {
  taso_artifact_t *a = NULL;
  taso_inputs_t inputs = {0};
  taso_graph_t *graphs = NULL;
  taso_subst_t *rows = NULL;
  int64_t ngraphs = 0, nrows = 0, file_proved = 0;
  taso_err_t err = check_substitutions(path);
  if (err == TASO_OK) err = taso_artifact_open(comm, path, TASO_KIND_SUBSTITUTIONS, &a);
  if (err == TASO_OK) err = taso_artifact_read_inputs(a, &inputs);
  if (err == TASO_OK) err = taso_artifact_read_graphs(a, &graphs, &ngraphs);
  if (err == TASO_OK) err = taso_artifact_read_substs(a, &rows, &nrows);
  if (a) {
    taso_err_t closed = taso_artifact_close(a);
    if (err == TASO_OK) err = closed;
  }
  for (int64_t i = 0; err == TASO_OK && i < nrows; i++)
    file_proved += rows[i].verdict == TASO_VERDICT_PROVED;
  if (err == TASO_OK && file_proved == 0)
    err = taso_error(TASO_ERR_FORMAT, "--substitutions %s: none of its %lld rows is proved", path,
                     (long long)nrows);
  if (err == TASO_OK &&
      (err = taso_rules_add(rules, &inputs, graphs, ngraphs, rows, nrows, *row_base)) != TASO_OK)
    err = taso_error_prefix(err, "--substitutions %s: ", path);
  *row_base += nrows;
  *proved += file_proved;
  free(rows);
  taso_graphs_free(graphs, ngraphs);
  taso_inputs_free(&inputs);
  return err;
}

taso_err_t taso_rules_load(MPI_Comm comm, const char *paths, taso_rules_t *rules, int64_t *proved) {
  char *list = strdup(paths), *save = NULL;
  if (!list) return taso_error(TASO_ERR_NOMEM, "--substitutions");
  int64_t row_base = 0;
  *proved = 0;
  memset(rules, 0, sizeof *rules);
  taso_err_t err = TASO_OK;
  int files = 0;
  for (char *path = strtok_r(list, ",", &save); path && err == TASO_OK;
       path = strtok_r(NULL, ",", &save), files++)
    err = load_file(comm, path, rules, &row_base, proved);
  free(list);
  if (err == TASO_OK && files == 0)
    err = taso_error(TASO_ERR_ARG, "--substitutions '%s' names no file", paths);
  return err;
}
