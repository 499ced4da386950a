#include "row_stream.h"

#include <stdlib.h>
#include <string.h>

static taso_err_t grow(void **p, int64_t n, size_t size) {
  void *q = realloc(*p, size * (size_t)(n + 1));
  if (!q) return taso_error(TASO_ERR_NOMEM, "no memory for %lld rows", (long long)n);
  *p = q;
  return TASO_OK;
}

taso_err_t taso_row_stream_room(taso_row_stream_t *s, int64_t more, void **at) {
  if (s->n + more > s->cap) {
    int64_t cap = s->cap ? 2 * s->cap : 256;
    while (cap < s->n + more)
      cap *= 2;
    TASO_TRY(grow((void **)&s->rows, cap, s->table->size));
    s->cap = cap;
  }
  *at = s->rows + (size_t)s->n * s->table->size;
  return TASO_OK;
}

void taso_row_stream_added(taso_row_stream_t *s, int64_t added) {
  s->n += added;
}

/* (slot, row) pairs by slot. */
static int compare_pairs(const void *a, const void *b) {
  int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
  return (x > y) - (x < y);
}

/* The round's rows into s->sorted and their slots into s->slots, in slot
 * order. */
static taso_err_t sort_rows(taso_row_stream_t *s) {
  size_t size = s->table->size;
  TASO_TRY(grow((void **)&s->order, 2 * s->n, sizeof *s->order));
  TASO_TRY(grow((void **)&s->slots, s->n, sizeof *s->slots));
  TASO_TRY(grow((void **)&s->sorted, s->n, size));
  for (int64_t i = 0; i < s->n; i++) {
    memcpy(&s->order[2 * i], s->rows + (size_t)i * size + s->slot_offset, sizeof(int64_t));
    s->order[2 * i + 1] = i;
  }
  qsort(s->order, (size_t)s->n, 2 * sizeof *s->order, compare_pairs);
  for (int64_t i = 0; i < s->n; i++) {
    s->slots[i] = s->order[2 * i];
    memcpy(s->sorted + (size_t)i * size, s->rows + (size_t)s->order[2 * i + 1] * size, size);
  }
  return TASO_OK;
}

taso_err_t taso_row_stream_flush(taso_row_stream_t *s, taso_artifact_t *out) {
  taso_err_t err = sort_rows(s);
  int64_t n = err == TASO_OK ? s->n : 0;
  taso_err_t put = taso_artifact_put_slots(out, s->table, s->sorted, s->slots, n);
  if (err == TASO_OK) err = put;
  s->written += n;
  s->n = 0;
  return err;
}

void taso_row_stream_free(taso_row_stream_t *s) {
  free(s->rows);
  free(s->sorted);
  free(s->order);
  free(s->slots);
  memset(s, 0, sizeof *s);
}
