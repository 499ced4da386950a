/* The level checkpoints of level-by-level generation (checkpoint.h). */
#define _POSIX_C_SOURCE 200809L

#include "checkpoint.h"

#include <dirent.h>
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static const char magic[16] = "taso-gen-level\n";
static const char trailer[8] = "end.ok\n";

typedef struct {
  char magic[16];
  int32_t version, level, rank, size;
  uint64_t job;
} header_t;

static void level_path(const taso_checkpoint_t *k, int level, int rank, const char *suffix,
                       char *path, size_t len) {
  snprintf(path, len, "%s/level-%d.rank-%d%s", k->dir, level, rank, suffix);
}

static void done_path(const char *dir, int level, char *path, size_t len) {
  snprintf(path, len, "%s/level-%d.done", dir, level);
}

/* Ends a file written at tmp: on disk (flushed, fsync'd), closed, renamed
 * to path; with an earlier err or a failure here, removed. */
static taso_err_t commit_file(FILE *f, const char *tmp, const char *path, taso_err_t err) {
  if (err == TASO_OK && (fflush(f) != 0 || fsync(fileno(f)) != 0))
    err = taso_error(TASO_ERR_IO, "%s: %s", tmp, strerror(errno));
  if (fclose(f) != 0 && err == TASO_OK)
    err = taso_error(TASO_ERR_IO, "%s: %s", tmp, strerror(errno));
  if (err == TASO_OK && rename(tmp, path) != 0)
    err = taso_error(TASO_ERR_IO, "%s: %s", path, strerror(errno));
  if (err != TASO_OK) remove(tmp);
  return err;
}

bool taso_checkpoint_put(FILE *f, const void *p, size_t size, size_t n) {
  return n == 0 || fwrite(p, size, n, f) == n;
}

bool taso_checkpoint_get(FILE *f, void *p, size_t size, size_t n) {
  return n == 0 || fread(p, size, n, f) == n;
}

taso_err_t taso_checkpoint_last(const taso_checkpoint_t *k, int max_level, int *level) {
  *level = 0;
  for (int l = max_level; l >= 1; l--) {
    char path[4096], line[256];
    done_path(k->dir, l, path, sizeof path);
    FILE *f = fopen(path, "r");
    if (!f) continue;
    int version = -1, size = -1, got = -1;
    uint64_t job = 0;
    while (fgets(line, sizeof line, f)) {
      if (sscanf(line, "version %d", &version) == 1 || sscanf(line, "ranks %d", &size) == 1 ||
          sscanf(line, "level %d", &got) == 1)
        continue;
      sscanf(line, "job %" SCNx64, &job);
    }
    fclose(f);
    if (version != TASO_CHECKPOINT_VERSION || got != l)
      return taso_error(TASO_ERR_ARG,
                        "%s: a level checkpoint of another version of taso-generate: "
                        "--fresh starts over",
                        path);
    if (job != k->job)
      return taso_error(TASO_ERR_ARG,
                        "%s: the levels of another job (its text differs): --fresh starts over",
                        path);
    if (size != k->size)
      return taso_error(TASO_ERR_ARG,
                        "%s: levels 1 to %d were generated on %d ranks, this run has %d: run on "
                        "%d ranks to resume them, or --fresh to start over",
                        path, l, size, k->size, size);
    *level = l;
    return TASO_OK;
  }
  return TASO_OK;
}

taso_err_t taso_checkpoint_create(const taso_checkpoint_t *k, int level, FILE **f) {
  char path[4096];
  if (mkdir(k->dir, 0777) != 0 && errno != EEXIST)
    return taso_error(TASO_ERR_IO, "%s: cannot make the checkpoint folder: %s", k->dir,
                      strerror(errno));
  level_path(k, level, k->rank, ".tmp", path, sizeof path);
  if (!(*f = fopen(path, "wb"))) return taso_error(TASO_ERR_IO, "%s: %s", path, strerror(errno));
  header_t h = {.version = TASO_CHECKPOINT_VERSION,
                .level = level,
                .rank = k->rank,
                .size = k->size,
                .job = k->job};
  memcpy(h.magic, magic, sizeof magic);
  if (!taso_checkpoint_put(*f, &h, sizeof h, 1))
    return taso_error(TASO_ERR_IO, "%s: %s", path, strerror(errno));
  return TASO_OK;
}

taso_err_t taso_checkpoint_open(const taso_checkpoint_t *k, int level, FILE **f) {
  char path[4096];
  level_path(k, level, k->rank, "", path, sizeof path);
  if (!(*f = fopen(path, "rb")))
    return taso_error(TASO_ERR_IO, "%s: %s (the level is marked complete: --fresh starts over)",
                      path, strerror(errno));
  header_t h;
  if (!taso_checkpoint_get(*f, &h, sizeof h, 1) || memcmp(h.magic, magic, sizeof magic) ||
      h.version != TASO_CHECKPOINT_VERSION || h.level != level || h.rank != k->rank ||
      h.size != k->size || h.job != k->job) {
    fclose(*f);
    *f = NULL;
    return taso_error(TASO_ERR_FORMAT,
                      "%s: not this run's level %d checkpoint of rank %d (--fresh starts over)",
                      path, level, k->rank);
  }
  return TASO_OK;
}

taso_err_t taso_checkpoint_close(const taso_checkpoint_t *k, int level, FILE *f, bool written,
                                 taso_err_t err) {
  char path[4096], tmp[4096];
  level_path(k, level, k->rank, "", path, sizeof path);
  level_path(k, level, k->rank, ".tmp", tmp, sizeof tmp);
  if (!f) return err;
  if (!written) {
    char end[sizeof trailer];
    if (err == TASO_OK && (!taso_checkpoint_get(f, end, 1, sizeof end) ||
                           memcmp(end, trailer, sizeof end) || fgetc(f) != EOF))
      err = taso_error(TASO_ERR_FORMAT, "%s: cut short or too long (--fresh starts over)", path);
    else if (err != TASO_OK)
      err = taso_error_prefix(err, "%s: ", path);
    fclose(f);
    return err;
  }
  if (err == TASO_OK && !taso_checkpoint_put(f, trailer, 1, sizeof trailer))
    err = taso_error(TASO_ERR_IO, "%s: %s", tmp, strerror(errno));
  else if (err != TASO_OK)
    err = taso_error_prefix(err, "%s: ", tmp);
  return commit_file(f, tmp, path, err);
}

taso_err_t taso_checkpoint_done(const taso_checkpoint_t *k, int level) {
  char path[4096], tmp[4200];
  done_path(k->dir, level, path, sizeof path);
  snprintf(tmp, sizeof tmp, "%s.tmp", path);
  FILE *f = fopen(tmp, "w");
  if (!f) return taso_error(TASO_ERR_IO, "%s: %s", tmp, strerror(errno));
  fprintf(f,
          "taso-generate: levels 1 to %d of a job are complete\n"
          "version %d\nlevel %d\nranks %d\njob %016" PRIx64 "\n",
          level, TASO_CHECKPOINT_VERSION, level, k->size, k->job);
  taso_err_t err = commit_file(f, tmp, path, TASO_OK);
  if (err != TASO_OK) return err;
  for (int l = 1; l < level; l++) {
    done_path(k->dir, l, path, sizeof path);
    remove(path);
    for (int r = 0; r < k->size; r++) {
      level_path(k, l, r, "", path, sizeof path);
      remove(path);
    }
  }
  return TASO_OK;
}

void taso_checkpoint_remove(const char *dir) {
  DIR *d = opendir(dir);
  if (!d) return;
  char path[4096];
  for (struct dirent *e; (e = readdir(d));)
    if (!strncmp(e->d_name, "level-", 6)) {
      snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
      remove(path);
    }
  closedir(d);
  rmdir(dir); /* only when empty: nothing of the user's goes */
}
