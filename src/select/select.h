/*
 * Library-call selection: how each part of a model graph is run. The
 * graph is covered with calls of a library description (library.h): a
 * convolution or matmul with the epilogue nodes it fuses, or one operator
 * alone; each call in a layout, writing into a buffer of its own or over
 * an operand that nothing reads afterwards. Every call's constraints hold
 * (Z3, through taso_library_allows) and the sum of the calls' costs is
 * least, under these approximations:
 *
 * - Fusion is exact: each head's chain (at most 3 epilogue nodes) is tried
 *   at every length, and two heads whose chains meet at a residual sum are
 *   decided together (every pair of lengths); were three to meet, the
 *   earlier head would choose first.
 * - Layouts: per step among the layouts that keep buffers row-major (NCHW,
 *   BLOCKED: the library reorders inside its call, and the measured cost
 *   includes that), or every step channels last (NHWC); no reorder step
 *   between an NHWC and a row-major part (the runtime has none).
 * - In place is decided after fusion and layouts, on the plan's order: a
 *   step writes over its operand when the library's constraints allow it
 *   there and it is measured no slower.
 */
#ifndef TASO_SELECT_H
#define TASO_SELECT_H

#include <stdbool.h>
#include <stdint.h>

#include "library.h"
#include "model.h"
#include "runtime.h"

/* The cost of one configuration, in milliseconds. */
typedef taso_err_t (*taso_select_cost_fn)(void *ctx, const taso_rt_config_t *cfg, double *ms);

typedef struct {
  bool plain;         /* one call per operator, NCHW, none in place: the baseline */
  bool nhwc;          /* every step channels last; false: NCHW or BLOCKED per step */
  bool warm_weights;  /* no operand timed cold (taso_rt_weights_stay_warm) */
  const bool *absent; /* nodes computed from weights alone, taken as weights (what
                         writing the model folds; the optimizer's cost); NULL: none */
} taso_select_options_t;

typedef struct {
  double ms;                           /* the plan's cost: the sum of its calls' */
  int steps, fused, in_place, blocked; /* steps; of them fused, in place, blocked */
  int placed;                          /* concats whose operands are written into their result */
  int64_t bytes;           /* buffers of the plan: every tensor, less those written in place
                              or placed in a concat */
  int64_t queries, cached; /* Z3 queries; answers from the cache */
} taso_select_stats_t;

/* Selects a call plan for m (its types inferred) from lib; *calls
 * (malloc'd, in run order) and *ncalls receive it, ready for
 * taso_rt_options_t.calls or a model's plan. An error when lib has no call
 * for some operator. */
taso_err_t taso_select_plan(const taso_rt_typed_graph_t *m, taso_library_t *lib,
                            const taso_select_options_t *opt, taso_select_cost_fn cost, void *ctx,
                            taso_call_t **calls, int *ncalls, taso_select_stats_t *stats);

#endif
