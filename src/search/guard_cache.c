/* The rule guard's verdicts kept between runs (guard_cache.h). */
#define _GNU_SOURCE /* flock, O_CLOEXEC */

#include "guard_cache.h"

#include <errno.h>
#include <fcntl.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#define RULE_LEN 2048     /* a rule's text and its inputs' shapes */
#define RELATION_LEN 2048 /* the relation's bytes in hex */
#define SETTINGS_LEN 512

typedef struct {
  char rule[RULE_LEN];         /* "lhs => rhs @ name:AxBxC ..." */
  char relation[RELATION_LEN]; /* the guard's relation bytes, hex */
  int32_t verdict;             /* 1 proved (applied), 0 refused */
  int32_t pad_;                /* zero */
} row_t;

static const taso_field_t row_fields[] = {
    {"rule", offsetof(row_t, rule), TASO_FIELD_STRING, RULE_LEN},
    {"relation", offsetof(row_t, relation), TASO_FIELD_STRING, RELATION_LEN},
    {"verdict", offsetof(row_t, verdict), TASO_FIELD_INT32, 0},
    {"pad", offsetof(row_t, pad_), TASO_FIELD_INT32, 0},
};
static const taso_table_t row_table = {"/verdicts", sizeof(row_t), row_fields, 4};

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

static bool to_hex(const uint8_t *b, size_t len, char *out) {
  if (2 * len + 1 > RELATION_LEN) return false;
  for (size_t i = 0; i < len; i++) snprintf(out + 2 * i, 3, "%02x", b[i]);
  out[2 * len] = '\0';
  return true;
}

static bool from_hex(const char *s, uint8_t *b, size_t *len) {
  size_t n = strnlen(s, RELATION_LEN);
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
  const row_t *x = a, *y = b;
  int c = strcmp(x->rule, y->rule);
  return c ? c : strcmp(x->relation, y->relation);
}

/* ---- reading ------------------------------------------------------------------- */

/* The rows of path (none when it is missing) and its settings. */
static taso_err_t read_rows(const char *path, row_t **rows, int64_t *n, char *settings) {
  struct stat st;
  *rows = NULL;
  *n = 0;
  settings[0] = '\0';
  if (stat(path, &st) != 0 && errno == ENOENT) return TASO_OK;
  taso_artifact_t *a = NULL;
  TASO_TRY(taso_artifact_open(MPI_COMM_SELF, path, TASO_KIND_GUARD_VERDICTS, &a));
  char *s = NULL;
  taso_err_t err = taso_artifact_get_string(a, "guard_settings", &s);
  if (err == TASO_OK) snprintf(settings, SETTINGS_LEN, "%s", s);
  free(s);
  if (err == TASO_OK) err = taso_artifact_table_length(a, &row_table, n);
  if (err == TASO_OK && *n > 0) err = taso_artifact_read_table(a, &row_table, 0, *n, (void **)rows);
  taso_err_t cerr = taso_artifact_close(a);
  if (err == TASO_OK) err = cerr;
  if (err != TASO_OK) {
    free(*rows);
    *rows = NULL;
    *n = 0;
  }
  return err;
}

taso_err_t taso_guard_cache_load(const char *path, const taso_rules_t *rules,
                                  taso_rule_guard_t *guard, int64_t *loaded, bool *stale) {
  char settings[SETTINGS_LEN], mine[SETTINGS_LEN];
  row_t *rows = NULL;
  int64_t n = 0;
  *loaded = 0;
  *stale = false;
  TASO_TRY(read_rows(path, &rows, &n, settings));
  taso_rule_guard_settings(guard, mine, sizeof mine);
  if (n > 0 && strcmp(settings, mine) != 0) {
    *stale = true;
    free(rows);
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
    rows[k].rule[RULE_LEN - 1] = rows[k].relation[RELATION_LEN - 1] = '\0';
    named_t want = {rows[k].rule, 0};
    const named_t *at = bsearch(&want, names, (size_t)nnames, sizeof *names, named_order);
    uint8_t rel[RELATION_LEN / 2];
    size_t len;
    if (!at) continue; /* a rule this run does not have */
    if (!from_hex(rows[k].relation, rel, &len)) {
      err = taso_error(TASO_ERR_FORMAT, "%s: row %lld: a relation that is not hex", path,
                       (long long)k);
      break;
    }
    /* a name may be shared by rules of several files: each gets it */
    while (at > names && strcmp(at[-1].name, want.name) == 0) at--;
    for (; err == TASO_OK && at < names + nnames && strcmp(at->name, want.name) == 0; at++)
      err = taso_rule_guard_put_relation(guard, at->index, 0, rel, len, rows[k].verdict != 0);
    (*loaded)++;
  }
  free(names);
  free(text);
  free(rows);
  return err;
}

/* ---- writing ------------------------------------------------------------------- */

typedef struct {
  const taso_rules_t *rules;
  row_t *rows;
  int64_t n, cap;
} collect_t;

static taso_err_t collect(void *ctx, int64_t rule, int dir, const uint8_t *rel, size_t len,
                          bool verdict) {
  collect_t *c = ctx;
  if (dir != 0 || rule < 0 || rule >= c->rules->n) return TASO_OK; /* not the search's */
  if (c->n == c->cap) {
    int64_t cap = 2 * c->cap + 64;
    row_t *r = realloc(c->rows, sizeof *r * (size_t)cap);
    if (!r) return taso_error(TASO_ERR_NOMEM, "%lld verdicts", (long long)cap);
    c->rows = r;
    c->cap = cap;
  }
  row_t *r = &c->rows[c->n];
  memset(r, 0, sizeof *r);
  r->verdict = verdict;
  if (rule_name(c->rules, (int)rule, r->rule) && to_hex(rel, len, r->relation)) c->n++;
  return TASO_OK;
}

/* Waits for an exclusive flock on lock_path (as the cost database's merge:
 * the holder removes the file when done, so a lock on a file the path no
 * longer names is taken again). *fd -1 where flock is unsupported. */
static taso_err_t take_lock(const char *lock_path, int *fd) {
  for (int attempt = 0; attempt < 1000; attempt++) {
    struct stat held, named;
    *fd = open(lock_path, O_RDWR | O_CREAT | O_CLOEXEC, 0644);
    if (*fd < 0)
      return taso_error(TASO_ERR_IO, "%s: cannot create the lock file: %s", lock_path,
                        strerror(errno));
    int rc;
    while ((rc = flock(*fd, LOCK_EX)) != 0 && errno == EINTR) continue;
    if (rc != 0) {
      int e = errno;
      close(*fd);
      *fd = -1;
      if (e == ENOLCK || e == EOPNOTSUPP || e == ENOSYS || e == EINVAL) return TASO_OK;
      return taso_error(TASO_ERR_IO, "%s: cannot lock it: %s", lock_path, strerror(e));
    }
    if (fstat(*fd, &held) == 0 && stat(lock_path, &named) == 0 && held.st_dev == named.st_dev &&
        held.st_ino == named.st_ino)
      return TASO_OK;
    close(*fd);
  }
  return taso_error(TASO_ERR_IO, "%s: cannot take the lock: it keeps being replaced", lock_path);
}

static taso_err_t write_beside(const char *path, const char *tmp, const row_t *rows, int64_t n,
                               const char *settings, const taso_provenance_t *prov) {
  taso_artifact_t *a = NULL;
  taso_err_t err = taso_artifact_create(MPI_COMM_SELF, tmp, TASO_KIND_GUARD_VERDICTS, prov, &a);
  if (err == TASO_OK) err = taso_artifact_write_table(a, &row_table, rows, n, 0, n);
  if (err == TASO_OK) err = taso_artifact_set_string(a, "guard_settings", settings);
  if (err == TASO_OK) err = taso_artifact_set_count(a, "rows", n);
  if (a) {
    taso_err_t cerr = taso_artifact_close(a);
    if (err == TASO_OK) err = cerr;
  }
  if (err == TASO_OK && rename(tmp, path) != 0)
    err = taso_error(TASO_ERR_IO, "%s: cannot put %s in its place: %s", path, tmp,
                     strerror(errno));
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
  if (err == TASO_OK) err = take_lock(lock, &fd);
  row_t *old = NULL;
  int64_t nold = 0;
  if (err == TASO_OK) err = read_rows(path, &old, &nold, settings);
  if (err == TASO_OK && nold > 0 && strcmp(settings, mine) == 0) { /* else: replaced */
    row_t *all = realloc(c.rows, sizeof *all * (size_t)(c.n + nold + 1));
    if (!all) err = taso_error(TASO_ERR_NOMEM, "%lld verdicts", (long long)(c.n + nold));
    else {
      memcpy(all + c.n, old, sizeof *all * (size_t)nold);
      c.rows = all;
      c.n += nold;
    }
  }
  free(old);
  /* one row per (rule, relation): a verdict is the same wherever decided */
  if (err == TASO_OK && c.n > 0) {
    qsort(c.rows, (size_t)c.n, sizeof *c.rows, row_order);
    int64_t k = 0;
    for (int64_t i = 0; i < c.n; i++)
      if (k == 0 || row_order(&c.rows[i], &c.rows[k - 1]) != 0) c.rows[k++] = c.rows[i];
    c.n = k;
  }
  if (err == TASO_OK && c.n > 0) err = write_beside(path, tmp, c.rows, c.n, mine, prov);
  if (fd >= 0) {
    unlink(lock);
    close(fd);
  }
  *nrows = c.n;
  free(c.rows);
  return err;
}
