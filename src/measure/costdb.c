/*
 * The cost database (costdb.h): reading, lookup and the locked merge.
 */
#define _GNU_SOURCE /* flock, O_CLOEXEC, gethostname */

#include "costdb.h"

#include <errno.h>
#include <fcntl.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "merge_lock.h"

#define F(name, kind, size)                                                                        \
  { #name, offsetof(taso_cost_row_t, name), kind, size }
/* The algorithm column comes last, so that the fields before it are the
 * whole of format 1. */
static const taso_field_t cost_fields[] = {
    F(device, TASO_FIELD_STRING, TASO_COST_DEVICE_LEN),
    F(key, TASO_FIELD_STRING, TASO_COST_KEY_LEN),
    F(message, TASO_FIELD_STRING, TASO_COST_MESSAGE_LEN),
    F(unit, TASO_FIELD_STRING, TASO_COST_UNIT_LEN),
    F(when, TASO_FIELD_STRING, 32),
    F(median, TASO_FIELD_DOUBLE, 0),
    F(min, TASO_FIELD_DOUBLE, 0),
    F(max, TASO_FIELD_DOUBLE, 0),
    F(spread, TASO_FIELD_DOUBLE, 0),
    F(iqr_spread, TASO_FIELD_DOUBLE, 0),
    F(held_from, TASO_FIELD_DOUBLE, 0),
    F(held_to, TASO_FIELD_DOUBLE, 0),
    F(flops, TASO_FIELD_DOUBLE, 0),
    F(runs, TASO_FIELD_INT32, 0),
    F(outliers, TASO_FIELD_INT32, 0),
    F(status, TASO_FIELD_INT32, 0),
    F(pad_, TASO_FIELD_INT32, 0),
    F(algorithm, TASO_FIELD_STRING, TASO_COST_ALGORITHM_LEN),
};
#undef F

_Static_assert(sizeof(taso_cost_row_t) == 960 + TASO_COST_ALGORITHM_LEN + 8 * 8 + 4 * 4,
               "taso_cost_row_t has padding");

#define NFIELDS (int)(sizeof cost_fields / sizeof cost_fields[0])

const taso_table_t taso_cost_table = {
    .path = "/costs",
    .size = sizeof(taso_cost_row_t),
    .fields = cost_fields,
    .nfields = NFIELDS,
};

/* Format 1's rows: every field but the algorithm, read into the same
 * records (HDF5 converts by field name). */
static const taso_table_t cost_table_format1 = {
    .path = "/costs",
    .size = sizeof(taso_cost_row_t),
    .fields = cost_fields,
    .nfields = NFIELDS - 1,
};

static int compare_rows(const void *a, const void *b) {
  const taso_cost_row_t *x = a, *y = b;
  int c = strcmp(x->device, y->device);
  return c ? c : strcmp(x->key, y->key);
}

void taso_costdb_free(taso_costdb_t *db) {
  free(db->rows);
  db->rows = NULL;
  db->n = 0;
}

/* (row, position) pairs: ordering by position among equal rows makes the
 * sort stable, so the last of each run of equal rows is the one given last. */
static int compare_positions(const void *a, const void *b, void *rows) {
  int64_t i = *(const int64_t *)a, j = *(const int64_t *)b;
  const taso_cost_row_t *r = rows;
  int c = compare_rows(&r[i], &r[j]);
  return c ? c : (i > j) - (i < j);
}

void taso_costdb_normalize(taso_costdb_t *db) {
  if (db->n < 2) return;
  int64_t *order = malloc(sizeof *order * (size_t)db->n);
  taso_cost_row_t *sorted = malloc(sizeof *sorted * (size_t)db->n);
  if (!order || !sorted) taso_fatal(__FILE__, __LINE__, "taso", "no memory to sort cost rows");
  for (int64_t i = 0; i < db->n; i++)
    order[i] = i;
  qsort_r(order, (size_t)db->n, sizeof *order, compare_positions, db->rows);
  int64_t m = 0;
  for (int64_t i = 0; i < db->n; i++) {
    const taso_cost_row_t *r = &db->rows[order[i]];
    if (m > 0 && compare_rows(&sorted[m - 1], r) == 0) m--; /* a later one replaces it */
    sorted[m++] = *r;
  }
  free(order);
  free(db->rows);
  db->rows = sorted;
  db->n = m;
}

const taso_cost_row_t *taso_costdb_find(const taso_costdb_t *db, const char *device,
                                        const char *key) {
  taso_cost_row_t probe;
  if (strlen(device) >= sizeof probe.device || strlen(key) >= sizeof probe.key) return NULL;
  strcpy(probe.device, device);
  strcpy(probe.key, key);
  return db->n ? bsearch(&probe, db->rows, (size_t)db->n, sizeof probe, compare_rows) : NULL;
}

bool taso_costdb_has_cost(const taso_costdb_t *db, const char *device, const char *key) {
  const taso_cost_row_t *row = taso_costdb_find(db, device, key);
  return row && row->status == TASO_COST_MEASURED;
}

taso_err_t taso_costdb_cost(const taso_costdb_t *db, const char *device,
                            const taso_rt_config_t *cfg, double *ms) {
  char key[TASO_COST_KEY_LEN];
  if (taso_rt_config_key(cfg, key, sizeof key) >= (int)sizeof key)
    return taso_error(TASO_ERR_LIMIT, "configuration key longer than %d characters",
                      TASO_COST_KEY_LEN - 1);
  const taso_cost_row_t *r = taso_costdb_find(db, device, key);
  if (!r) return taso_error(TASO_ERR_UNKNOWN, "no cost of %s on %s", key, device);
  if (r->status != TASO_COST_MEASURED)
    return taso_error(TASO_ERR_UNSUPPORTED, "%s is unavailable on %s: %s", key, device, r->message);
  *ms = r->median;
  return TASO_OK;
}

taso_err_t taso_costdb_pick_device(const taso_costdb_t *db, const char *path, const char *backend,
                                   const char *device, char *out, size_t size) {
  int found = 0;
  char names[512] = "";
  size_t blen = strlen(backend);
  for (int64_t i = 0; i < db->n; i++) {
    const char *d = db->rows[i].device;
    if (i > 0 && strcmp(d, db->rows[i - 1].device) == 0) continue; /* rows sorted by device */
    bool wanted =
        device ? strcmp(d, device) == 0 : strncmp(d, backend, blen) == 0 && d[blen] == ':';
    size_t used = strlen(names);
    snprintf(names + used, sizeof names - used, "%s\"%s\"", used ? ", " : "", d);
    if (wanted && found++ == 0) snprintf(out, size, "%s", d);
  }
  if (found == 1) return TASO_OK;
  if (found)
    return taso_error(TASO_ERR_ARG,
                      "%s: several devices of the %s backend (devices: %s); name one "
                      "with --device",
                      path, backend, names);
  if (device)
    return taso_error(TASO_ERR_ARG, "%s: no rows of device \"%s\" (devices: %s)", path, device,
                      names[0] ? names : "none");
  return taso_error(TASO_ERR_ARG,
                    "%s: no rows of the %s backend (devices: %s); name one with "
                    "--device",
                    path, backend, names[0] ? names : "none");
}

double taso_costdb_dispatch(const taso_costdb_t *db, const char *device) {
  const taso_cost_row_t *r = taso_costdb_find(db, device, TASO_COST_DISPATCH_KEY);
  if (!r || r->status != TASO_COST_MEASURED) return 0;
  bool device_clock = strstr(r->algorithm, TASO_COST_DISPATCH_DEVICE_CLOCK) != NULL;
  return r->median > 0 || device_clock ? r->median : 0;
}

double taso_costdb_step_ms(double ms, double dispatch) {
  return ms + dispatch > 0 ? ms + dispatch : 0;
}

int taso_costdb_reuse(const taso_costdb_t *db, const char *device, const taso_backend_t *be,
                      taso_rt_ctx_t *ctx) {
  int taken = 0;
  if (!be->reuse) return 0;
  for (int64_t i = 0; i < db->n; i++) {
    const taso_cost_row_t *r = &db->rows[i];
    if (r->status == TASO_COST_MEASURED && r->algorithm[0] && strcmp(r->device, device) == 0)
      taken += be->reuse(ctx, r->key, r->algorithm);
  }
  return taken;
}

taso_err_t taso_costdb_lookup(void *ctx, const char *key, const taso_rt_config_t *cfg, double *ms,
                              bool *found) {
  (void)key;
  const taso_costdb_source_t *src = ctx;
  taso_err_t err = taso_costdb_cost(src->db, src->device, cfg, ms);
  /* a lookup per distinct configuration (the cache keeps it): one more search is cheap */
  if (err == TASO_OK) *ms = taso_costdb_step_ms(*ms, taso_costdb_dispatch(src->db, src->device));
  *found = err == TASO_OK || err == TASO_ERR_UNSUPPORTED;
  if (err == TASO_ERR_UNSUPPORTED) *ms = TASO_COST_UNAVAILABLE_MS;
  return err == TASO_ERR_UNKNOWN || err == TASO_ERR_UNSUPPORTED ? TASO_OK : err;
}

/* ---- reading ------------------------------------------------------------ */

/* The file's layout: 1 when it has no "costs_format" count (written before the
 * algorithm column); a newer one than this build knows is refused. */
static taso_err_t table_of(taso_artifact_t *a, const char *path, const taso_table_t **t) {
  int64_t format = 1;
  if (taso_artifact_get_count(a, "costs_format", &format) != TASO_OK) format = 1;
  if (format > TASO_COSTS_FORMAT)
    return taso_error(TASO_ERR_FORMAT,
                      "%s: a cost database of format %lld; this build reads up to format %d", path,
                      (long long)format, TASO_COSTS_FORMAT);
  *t = format == 1 ? &cost_table_format1 : &taso_cost_table;
  return TASO_OK;
}

static taso_err_t read_rows(taso_artifact_t *a, const char *path, taso_costdb_t *db) {
  int64_t n = 0;
  void *rows = NULL;
  const taso_table_t *t = NULL;
  TASO_TRY(table_of(a, path, &t));
  TASO_TRY(taso_artifact_table_length(a, t, &n));
  if (n > 0) TASO_TRY(taso_artifact_read_table(a, t, 0, n, &rows));
  db->rows = rows;
  db->n = n;
  /* format 1 has no algorithm: the read left those bytes as malloc gave them */
  for (int64_t i = 0; t != &taso_cost_table && i < n; i++)
    db->rows[i].algorithm[0] = '\0';
  /* Files are written sorted; normalizing again costs little and makes a
   * file from elsewhere (h5 tools, an older writer) safe to search. */
  taso_costdb_normalize(db);
  return TASO_OK;
}

taso_err_t taso_costdb_read(const char *path, bool missing_ok, taso_costdb_t *db) {
  struct stat st;
  db->rows = NULL;
  db->n = 0;
  if (missing_ok && stat(path, &st) != 0 && errno == ENOENT) return TASO_OK;
  taso_artifact_t *a = NULL;
  TASO_TRY(taso_artifact_open(MPI_COMM_SELF, path, TASO_KIND_COSTS, &a));
  taso_err_t err = read_rows(a, path, db);
  taso_err_t cerr = taso_artifact_close(a);
  if (err == TASO_OK) err = cerr;
  if (err != TASO_OK) taso_costdb_free(db);
  return err;
}

/* ---- the merge: lock, read, add, write beside, rename ------------------ */

static char *beside(const char *path, const char *suffix) {
  size_t n = strlen(path) + strlen(suffix) + 1;
  char *s = malloc(n);
  if (s) snprintf(s, n, "%s%s", path, suffix);
  return s;
}

static int sync_path(const char *path, int flags) {
  int fd = open(path, flags | O_CLOEXEC);
  if (fd < 0) return -1;
  int rc = fsync(fd);
  close(fd);
  return rc;
}

static void count_status(const taso_costdb_t *db, int64_t *measured, int64_t *unavailable) {
  *measured = *unavailable = 0;
  for (int64_t i = 0; i < db->n; i++)
    *(db->rows[i].status == TASO_COST_MEASURED ? measured : unavailable) += 1;
}

/* Writes db whole into tmp, then puts it in place of path. */
static taso_err_t write_beside(const char *path, const char *tmp, const taso_costdb_t *db,
                               const taso_provenance_t *prov) {
  taso_artifact_t *a = NULL;
  int64_t measured, unavailable;
  count_status(db, &measured, &unavailable);
  taso_err_t err = taso_artifact_create(MPI_COMM_SELF, tmp, TASO_KIND_COSTS, prov, &a);
  if (err == TASO_OK)
    err = taso_artifact_write_table(a, &taso_cost_table, db->rows, db->n, 0, db->n);
  if (err == TASO_OK) err = taso_artifact_set_count(a, "costs_format", TASO_COSTS_FORMAT);
  if (err == TASO_OK) err = taso_artifact_set_count(a, "rows", db->n);
  if (err == TASO_OK) err = taso_artifact_set_count(a, "measured", measured);
  if (err == TASO_OK) err = taso_artifact_set_count(a, "unavailable", unavailable);
  if (a) {
    taso_err_t cerr = taso_artifact_close(a);
    if (err == TASO_OK) err = cerr;
  }
  if (err == TASO_OK && sync_path(tmp, O_RDONLY) != 0)
    err = taso_error(TASO_ERR_IO, "%s: cannot write: %s", tmp, strerror(errno));
  if (err == TASO_OK && rename(tmp, path) != 0)
    err = taso_error(TASO_ERR_IO, "%s: cannot put %s in its place: %s", path, tmp, strerror(errno));
  if (err != TASO_OK) {
    unlink(tmp);
    return err;
  }
  char dir[4096];
  taso_path_folder(path, dir, sizeof dir);
  sync_path(dir, O_RDONLY | O_DIRECTORY); /* the rename is durable once the folder is */
  return TASO_OK;
}

/* The database as it is now plus rows, the new rows winning. */
static taso_err_t combine(const char *path, const taso_cost_row_t *rows, int64_t n, bool replace,
                          taso_costdb_t *db) {
  taso_err_t err = taso_costdb_read(path, true, db);
  if (err != TASO_OK && !replace) return err;
  if (err != TASO_OK) taso_costdb_free(db); /* replace: start from nothing */
  taso_cost_row_t *all = realloc(db->rows, sizeof *all * (size_t)(db->n + n + 1));
  if (!all) {
    taso_costdb_free(db);
    return taso_error(TASO_ERR_NOMEM, "no memory for %lld cost rows", (long long)(db->n + n));
  }
  if (n > 0) memcpy(all + db->n, rows, sizeof *all * (size_t)n);
  db->rows = all;
  db->n += n;
  taso_costdb_normalize(db);
  return TASO_OK;
}

taso_err_t taso_costdb_merge(const char *path, const taso_cost_row_t *rows, int64_t n,
                             const taso_provenance_t *prov, bool replace, taso_costdb_t *after) {
  char *lock = beside(path, ".lock"), *tmp = beside(path, ".tmp");
  taso_costdb_t db = {0};
  int fd = -1;
  taso_err_t err = lock && tmp ? taso_merge_lock(lock, &fd)
                               : taso_error(TASO_ERR_NOMEM, "no memory for file names");
  if (err == TASO_OK) err = combine(path, rows, n, replace, &db);
  if (err == TASO_OK) err = write_beside(path, tmp, &db, prov);
  if (lock) taso_merge_unlock(lock, fd);
  free(lock);
  free(tmp);
  if (err == TASO_OK && after)
    *after = db;
  else
    taso_costdb_free(&db);
  return err;
}

taso_err_t taso_costdb_record_cache(const char *path, const taso_costdb_t *db, const char *device,
                                    const taso_cost_cache_t *cache, const char *unit,
                                    const taso_provenance_t *prov, int64_t *n) {
  taso_cost_stats_t st;
  taso_cost_cache_stats(cache, &st);
  taso_cost_row_t *rows = calloc((size_t)st.configs + 1, sizeof *rows);
  if (!rows) return taso_error(TASO_ERR_NOMEM, "%lld cost rows", (long long)st.configs);
  *n = 0;
  for (int64_t i = 0; i < st.configs; i++) {
    const char *key;
    double ms;
    if (!taso_cost_cache_entry(cache, i, &key, &ms) || taso_costdb_find(db, device, key)) continue;
    taso_cost_row_t *row = &rows[(*n)++];
    snprintf(row->device, sizeof row->device, "%s", device);
    snprintf(row->key, sizeof row->key, "%s", key);
    snprintf(row->unit, sizeof row->unit, "%s", unit);
    taso_now_iso8601(row->when);
    row->median = row->min = row->max = ms;
    row->runs = 1;
    row->status = TASO_COST_MEASURED;
  }
  taso_err_t err = *n ? taso_costdb_merge(path, rows, *n, prov, false, NULL) : TASO_OK;
  free(rows);
  return err;
}
