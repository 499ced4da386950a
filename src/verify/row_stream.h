/*
 * The rows a rank decides between two writes of a resumable run
 * (rounds.h), kept until the round's flush and then written, each at its
 * slot, to a slot table (artifact.h). taso-verify streams its decisions
 * and taso-validate its checks through it: what they share of the work
 * distribution besides the rounds themselves.
 */
#ifndef TASO_VERIFY_ROW_STREAM_H
#define TASO_VERIFY_ROW_STREAM_H

#include <stddef.h>
#include <stdint.h>

#include "artifact.h"

typedef struct {
  const taso_table_t *table; /* the slot table written; rows are table->size bytes */
  size_t slot_offset;        /* where a row holds its slot (an int64_t) */
  char *rows;                /* the round's rows so far, in the order decided */
  int64_t n, cap;
  char *sorted;    /* scratch: the rows in slot order */
  int64_t *order;  /* scratch: (slot, row) pairs */
  int64_t *slots;  /* scratch: the sorted slots */
  int64_t written; /* rows this rank has written, all rounds */
} taso_row_stream_t;

/* Room for more rows after the round's n: *at points to it, to be filled
 * and then counted with taso_row_stream_added. */
taso_err_t taso_row_stream_room(taso_row_stream_t *s, int64_t more, void **at);
void taso_row_stream_added(taso_row_stream_t *s, int64_t added);

/* Collective. Writes the round's rows, in slot order, at their slots of
 * out's table, and empties the round. A rank out of memory still takes
 * part, writing nothing. */
taso_err_t taso_row_stream_flush(taso_row_stream_t *s, taso_artifact_t *out);

void taso_row_stream_free(taso_row_stream_t *s);

#endif
