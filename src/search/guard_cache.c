/* The rule guard's verdicts kept between runs (guard_cache.h). */
#define _GNU_SOURCE /* strnlen under -std=c11 */

#include "guard_cache.h"

#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "merge_lock.h"

#define RULE_LEN 2048 /* a rule's text and its inputs' shapes */
#define CHUNK_LEN 256 /* hex characters per row of /relations, NUL included */
#define SETTINGS_LEN 512

/* A verdict on disk: its relation's hex text is the chunks first ..
 * first + chunks - 1 of /relations, joined (relations have no size
 * bound, and the file's records are fixed-size). */
typedef struct {
  char rule[RULE_LEN]; /* "lhs => rhs @ name:AxBxC ..." */
  int64_t first;       /* its relation's first row in /relations */
  int32_t chunks;      /* and how many */
  int32_t verdict;     /* 1 proved (applied), 0 refused */
} row_t;

static const taso_field_t row_fields[] = {
    {"rule", offsetof(row_t, rule), TASO_FIELD_STRING, RULE_LEN},
    {"relation_first", offsetof(row_t, first), TASO_FIELD_INT64, 0},
    {"relation_chunks", offsetof(row_t, chunks), TASO_FIELD_INT32, 0},
    {"verdict", offsetof(row_t, verdict), TASO_FIELD_INT32, 0},
};
static const taso_table_t row_table = {"/verdicts", sizeof(row_t), row_fields, 4};

typedef struct {
  char hex[CHUNK_LEN];
} chunk_t;

static const taso_field_t chunk_fields[] = {
    {"hex", offsetof(chunk_t, hex), TASO_FIELD_STRING, CHUNK_LEN},
};
static const taso_table_t chunk_table = {"/relations", sizeof(chunk_t), chunk_fields, 1};

/* A verdict in memory. */
typedef struct {
  char rule[RULE_LEN];
  char *relation; /* the guard's relation bytes in hex (malloc'd) */
  int32_t verdict;
} verdict_t;

static void verdicts_free(verdict_t *v, int64_t n) {
  for (int64_t i = 0; v && i < n; i++)
    free(v[i].relation);
  free(v);
}

/* ---- naming rules and relations ----------------------------------------------- */

/* Rule i's stable name: its text, then the shapes of the inputs it reads
 * (a name means a shape only within one table). false when it does not
 * fit: such a rule is never stored. */
static bool rule_name(const taso_rules_t *rules, int i, char *buf) {
  int n = taso_rule_format(rules, i, buf, RULE_LEN);
  const taso_graph_t *lhs = &rules->v[i].lhs;
  for (int k = 0; k < lhs->nnodes && n < RULE_LEN; k++) {
    if (lhs->nodes[k].kind != TASO_OP_INPUT) continue;
    const taso_input_t *in = &rules->inputs.v[lhs->nodes[k].p.input];
    n += snprintf(buf + n, (size_t)(RULE_LEN - n), " %s:", in->name);
    for (int a = 0; a < in->type.rank && n < RULE_LEN; a++)
      n += snprintf(buf + n, (size_t)(RULE_LEN - n), a ? "x%d" : "%d", in->type.dim[a]);
  }
  return n < RULE_LEN;
}

/* The hex text of len bytes (malloc'd), or NULL when out of memory. */
static char *to_hex(const uint8_t *b, size_t len) {
  char *out = malloc(2 * len + 1);
  for (size_t i = 0; out && i < len; i++)
    snprintf(out + 2 * i, 3, "%02x", b[i]);
  if (out) out[2 * len] = '\0';
  return out;
}

/* The bytes of hex text s into b (strlen(s) / 2 of them); false if it is
 * not hex. */
static bool from_hex(const char *s, uint8_t *b, size_t *len) {
  size_t n = strlen(s);
  if (n % 2) return false;
  for (size_t i = 0; i < n / 2; i++) {
    unsigned v;
    if (sscanf(s + 2 * i, "%2x", &v) != 1) return false;
    b[i] = (uint8_t)v;
  }
  *len = n / 2;
  return true;
}

typedef struct {
  const char *name;
  int index;
} named_t;

static int named_order(const void *a, const void *b) {
  return strcmp(((const named_t *)a)->name, ((const named_t *)b)->name);
}

static int row_order(const void *a, const void *b) {
  const verdict_t *x = a, *y = b;
  int c = strcmp(x->rule, y->rule);
  return c ? c : strcmp(x->relation, y->relation);
}

/* ---- reading ------------------------------------------------------------------- */

/* The verdicts of path (none when it is missing) and its settings. */
static taso_err_t read_rows(const char *path, verdict_t **out, int64_t *n, char *settings) {
  struct stat st;
  *out = NULL;
  *n = 0;
  settings[0] = '\0';
  if (stat(path, &st) != 0 && errno == ENOENT) return TASO_OK;
  taso_artifact_t *a = NULL;
  TASO_TRY(taso_artifact_open(MPI_COMM_SELF, path, TASO_KIND_GUARD_VERDICTS, &a));
  char *s = NULL;
  row_t *rows = NULL;
  chunk_t *chunks = NULL;
  int64_t nchunks = 0;
  taso_err_t err = taso_artifact_get_string(a, "guard_settings", &s);
  if (err == TASO_OK) snprintf(settings, SETTINGS_LEN, "%s", s);
  free(s);
  if (err == TASO_OK) err = taso_artifact_table_length(a, &row_table, n);
  if (err == TASO_OK && *n > 0)
    err = taso_artifact_read_table(a, &row_table, 0, *n, (void **)&rows);
  if (err == TASO_OK) err = taso_artifact_table_length(a, &chunk_table, &nchunks);
  if (err == TASO_OK && nchunks > 0)
    err = taso_artifact_read_table(a, &chunk_table, 0, nchunks, (void **)&chunks);
  taso_err_t cerr = taso_artifact_close(a);
  if (err == TASO_OK) err = cerr;
  verdict_t *v = err == TASO_OK ? calloc((size_t)*n + 1, sizeof *v) : NULL;
  if (err == TASO_OK && !v) err = taso_error(TASO_ERR_NOMEM, "%lld verdicts", (long long)*n);
  for (int64_t k = 0; err == TASO_OK && k < *n; k++) {
    const row_t *r = &rows[k];
    if (r->first < 0 || r->chunks < 0 || r->first > nchunks - r->chunks) {
      err = taso_error(TASO_ERR_FORMAT, "%s: row %lld: its relation's rows are out of range", path,
                       (long long)k);
      break;
    }
    memcpy(v[k].rule, r->rule, RULE_LEN);
    v[k].rule[RULE_LEN - 1] = '\0';
    v[k].verdict = r->verdict;
    v[k].relation = malloc((size_t)r->chunks * CHUNK_LEN + 1);
    if (!v[k].relation) err = taso_error(TASO_ERR_NOMEM, "a relation");
    size_t at = 0;
    for (int32_t c = 0; err == TASO_OK && c < r->chunks; c++) {
      size_t len = strnlen(chunks[r->first + c].hex, CHUNK_LEN - 1);
      memcpy(v[k].relation + at, chunks[r->first + c].hex, len);
      at += len;
    }
    if (v[k].relation) v[k].relation[at] = '\0';
  }
  free(rows);
  free(chunks);
  if (err != TASO_OK) {
    verdicts_free(v, *n);
    v = NULL;
    *n = 0;
  }
  *out = v;
  return err;
}

taso_err_t taso_guard_cache_load(const char *path, const taso_rules_t *rules,
                                 taso_rule_guard_t *guard, int64_t *loaded, bool *stale) {
  char settings[SETTINGS_LEN], mine[SETTINGS_LEN];
  verdict_t *rows = NULL;
  int64_t n = 0;
  *loaded = 0;
  *stale = false;
  TASO_TRY(read_rows(path, &rows, &n, settings));
  taso_rule_guard_settings(guard, mine, sizeof mine);
  if (n > 0 && strcmp(settings, mine) != 0) {
    *stale = true;
    verdicts_free(rows, n);
    return TASO_OK;
  }
  named_t *names = malloc(sizeof *names * (size_t)(rules->n + 1));
  char *text = malloc((size_t)RULE_LEN * (size_t)(rules->n + 1));
  taso_err_t err = names && text ? TASO_OK : taso_error(TASO_ERR_NOMEM, "rule names");
  int nnames = 0;
  for (int i = 0; err == TASO_OK && i < rules->n; i++)
    if (rule_name(rules, i, text + (size_t)RULE_LEN * (size_t)i))
      names[nnames++] = (named_t){text + (size_t)RULE_LEN * (size_t)i, i};
  if (err == TASO_OK) qsort(names, (size_t)nnames, sizeof *names, named_order);
  for (int64_t k = 0; err == TASO_OK && k < n; k++) {
    named_t want = {rows[k].rule, 0};
    const named_t *at = bsearch(&want, names, (size_t)nnames, sizeof *names, named_order);
    size_t len;
    if (!at) continue; /* a rule this run does not have */
    uint8_t *rel = malloc(strlen(rows[k].relation) / 2 + 1);
    if (!rel) {
      err = taso_error(TASO_ERR_NOMEM, "a relation");
      break;
    }
    if (!from_hex(rows[k].relation, rel, &len)) {
      free(rel);
      err = taso_error(TASO_ERR_FORMAT, "%s: row %lld: a relation that is not hex", path,
                       (long long)k);
      break;
    }
    /* a name may be shared by rules of several files: each gets it */
    while (at > names && strcmp(at[-1].name, want.name) == 0)
      at--;
    for (; err == TASO_OK && at < names + nnames && strcmp(at->name, want.name) == 0; at++)
      err = taso_rule_guard_put_relation(guard, at->index, 0, rel, len, rows[k].verdict != 0);
    free(rel);
    (*loaded)++;
  }
  free(names);
  free(text);
  verdicts_free(rows, n);
  return err;
}

/* ---- writing ------------------------------------------------------------------- */

typedef struct {
  const taso_rules_t *rules;
  verdict_t *rows;
  int64_t n, cap;
} collect_t;

static taso_err_t collect(void *ctx, int64_t rule, int dir, const uint8_t *rel, size_t len,
                          bool verdict) {
  collect_t *c = ctx;
  if (dir != 0 || rule < 0 || rule >= c->rules->n) return TASO_OK; /* not the search's */
  if (c->n == c->cap) {
    int64_t cap = 2 * c->cap + 64;
    verdict_t *r = realloc(c->rows, sizeof *r * (size_t)cap);
    if (!r) return taso_error(TASO_ERR_NOMEM, "%lld verdicts", (long long)cap);
    c->rows = r;
    c->cap = cap;
  }
  verdict_t *r = &c->rows[c->n];
  memset(r, 0, sizeof *r);
  r->verdict = verdict;
  /* a rule whose text does not fit RULE_LEN is not kept (none of up to
   * four operators comes near it) */
  if (!rule_name(c->rules, (int)rule, r->rule)) return TASO_OK;
  if (!(r->relation = to_hex(rel, len))) return taso_error(TASO_ERR_NOMEM, "a relation");
  c->n++;
  return TASO_OK;
}

/* The verdicts as the file's records: rows, and their relations' hex
 * text cut into chunks. */
static taso_err_t write_tables(taso_artifact_t *a, const verdict_t *v, int64_t n) {
  int64_t nchunks = 0;
  for (int64_t i = 0; i < n; i++)
    nchunks += ((int64_t)strlen(v[i].relation) + CHUNK_LEN - 2) / (CHUNK_LEN - 1);
  row_t *rows = calloc((size_t)n + 1, sizeof *rows);
  chunk_t *chunks = calloc((size_t)nchunks + 1, sizeof *chunks);
  taso_err_t err =
      rows && chunks ? TASO_OK : taso_error(TASO_ERR_NOMEM, "%lld verdicts", (long long)n);
  for (int64_t i = 0, c = 0; err == TASO_OK && i < n; i++) {
    memcpy(rows[i].rule, v[i].rule, RULE_LEN);
    rows[i].verdict = v[i].verdict;
    rows[i].first = c;
    for (const char *h = v[i].relation; *h; c++, rows[i].chunks++) {
      size_t len = strnlen(h, CHUNK_LEN - 1);
      memcpy(chunks[c].hex, h, len);
      h += len;
    }
  }
  if (err == TASO_OK) err = taso_artifact_write_table(a, &row_table, rows, n, 0, n);
  if (err == TASO_OK) err = taso_artifact_write_table(a, &chunk_table, chunks, nchunks, 0, nchunks);
  free(rows);
  free(chunks);
  return err;
}

static taso_err_t write_beside(const char *path, const char *tmp, const verdict_t *v, int64_t n,
                               const char *settings, const taso_provenance_t *prov) {
  taso_artifact_t *a = NULL;
  taso_err_t err = taso_artifact_create(MPI_COMM_SELF, tmp, TASO_KIND_GUARD_VERDICTS, prov, &a);
  if (err == TASO_OK) err = write_tables(a, v, n);
  if (err == TASO_OK) err = taso_artifact_set_string(a, "guard_settings", settings);
  if (err == TASO_OK) err = taso_artifact_set_count(a, "rows", n);
  if (a) {
    taso_err_t cerr = taso_artifact_close(a);
    if (err == TASO_OK) err = cerr;
  }
  if (err == TASO_OK && rename(tmp, path) != 0)
    err = taso_error(TASO_ERR_IO, "%s: cannot put %s in its place: %s", path, tmp, strerror(errno));
  if (err != TASO_OK) unlink(tmp);
  return err;
}

taso_err_t taso_guard_cache_save(const char *path, const taso_rules_t *rules,
                                 const taso_rule_guard_t *guard, const taso_provenance_t *prov,
                                 int64_t *nrows) {
  char settings[SETTINGS_LEN], mine[SETTINGS_LEN], lock[4096], tmp[4096];
  if (snprintf(lock, sizeof lock, "%s.lock", path) >= (int)sizeof lock ||
      snprintf(tmp, sizeof tmp, "%s.tmp", path) >= (int)sizeof tmp)
    return taso_error(TASO_ERR_ARG, "--guard-cache: a path too long: %s", path);
  taso_rule_guard_settings(guard, mine, sizeof mine);
  collect_t c = {.rules = rules};
  taso_err_t err = taso_rule_guard_each_verdict(guard, collect, &c);
  int fd = -1;
  if (err == TASO_OK) err = taso_merge_lock(lock, &fd);
  verdict_t *old = NULL;
  int64_t nold = 0;
  if (err == TASO_OK) err = read_rows(path, &old, &nold, settings);
  if (err == TASO_OK && nold > 0 && strcmp(settings, mine) == 0) { /* else: replaced */
    verdict_t *all = realloc(c.rows, sizeof *all * (size_t)(c.n + nold + 1));
    if (!all)
      err = taso_error(TASO_ERR_NOMEM, "%lld verdicts", (long long)(c.n + nold));
    else {
      memcpy(all + c.n, old, sizeof *all * (size_t)nold); /* the relations move with them */
      c.rows = all;
      c.n += nold;
      free(old);
      old = NULL;
      nold = 0;
    }
  }
  verdicts_free(old, nold);
  /* one row per (rule, relation): a verdict is the same wherever decided */
  if (err == TASO_OK && c.n > 0) {
    qsort(c.rows, (size_t)c.n, sizeof *c.rows, row_order);
    int64_t k = 0;
    for (int64_t i = 0; i < c.n; i++) {
      if (k == 0 || row_order(&c.rows[i], &c.rows[k - 1]) != 0)
        c.rows[k++] = c.rows[i];
      else
        free(c.rows[i].relation);
    }
    c.n = k;
  }
  if (err == TASO_OK && c.n > 0) err = write_beside(path, tmp, c.rows, c.n, mine, prov);
  taso_merge_unlock(lock, fd);
  *nrows = c.n;
  verdicts_free(c.rows, c.n);
  return err;
}

taso_err_t taso_guard_cache_each(const char *path, char *settings, taso_guard_cache_fn fn,
                                 void *ctx) {
  verdict_t *v = NULL;
  int64_t n = 0;
  TASO_TRY(read_rows(path, &v, &n, settings));
  taso_err_t err = TASO_OK;
  for (int64_t i = 0; err == TASO_OK && i < n; i++)
    err = fn(ctx, v[i].rule, strlen(v[i].relation) / 2, v[i].verdict != 0);
  verdicts_free(v, n);
  return err;
}
