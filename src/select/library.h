/*
 * Library descriptions (data/library, one .smt2 file per backend): the calls a backend can
 * make, what operator pattern each covers, and the conditions under which
 * it may be made, as SMT-LIB constraints over the properties of a match
 * (data/library/properties.smt2). Z3 decides every condition.
 *
 * A pattern is an operator with the epilogue the runtime fuses into it
 * ("conv2d + bias + sum + relu"), or a list of operators covered alone
 * ("relu sigmoid"), or "*", any operator alone. A call that writes over an
 * operand (in place) must, by its constraints, exclude every case where
 * that is wrong: loading proves it with Z3 and refuses a file whose call
 * allows it; so must a concat whose operands are written into its result
 * (placed) exclude every case where that is wrong.
 */
#ifndef TASO_LIBRARY_H
#define TASO_LIBRARY_H

#include <stdbool.h>
#include <stdint.h>

#include "model.h"
#include "runtime.h"

#define TASO_LIB_MAX_COVERS 12

/* Where a call's result goes: a buffer of its own, over an operand (the
 * input of an operator alone, or a fused sum's summand), or, for a concat,
 * nowhere: its operands' producers write them into their slices of it. */
enum {
  TASO_WRITES_OWN = 0,
  TASO_WRITES_OPERAND = 1,
  TASO_WRITES_SUMMAND = 2,
  TASO_WRITES_PRODUCERS = 3,
};

typedef struct {
  int32_t kind;  /* taso_op_kind_t; -1 with kinds: a list of single operators */
  unsigned fuse; /* TASO_FUSE_* epilogue */
} taso_lib_cover_t;

typedef struct {
  char name[TASO_CALL_NAME_LEN];
  taso_lib_cover_t cover[TASO_LIB_MAX_COVERS]; /* the patterns it covers */
  int ncover;
  uint64_t kinds;    /* bit k: operator k alone (a "covers: relu sigmoid" line) */
  bool any;          /* "covers: *": any operator alone */
  unsigned layouts;  /* bit per taso_rt_layout_t */
  int writes;        /* TASO_WRITES_* */
  int line;          /* of its "@call" line */
  char *constraints; /* its SMT-LIB text */
} taso_lib_call_t;

/* What the selection knows of one candidate (see properties.smt2). */
typedef struct {
  int32_t layout, dtype, rank, batch, channels_in, channels_out, groups;
  int32_t kernel_h, kernel_w, stride_h, stride_w;
  bool overwrites, read_later, is_input, read_twice, same_size;
  int32_t outer, slice_align; /* concat: before the axis; offsets' alignment in bytes */
  bool placed, producers_own, placed_overwritten;
} taso_lib_props_t;

typedef struct taso_library taso_library_t;

/* Reads and checks a library description: every header line known, every
 * operator in the registry, the constraints SMT-LIB that Z3 parses over
 * the properties, each call satisfiable by some match, and each in-place
 * call's constraints excluding a later reader, a model input, a second
 * read of the overwritten operand and a size mismatch (proved by Z3). An
 * error names the file, the line and the problem. */
taso_err_t taso_library_load(const char *path, taso_library_t **out);
void taso_library_free(taso_library_t *lib);

const char *taso_library_name(const taso_library_t *lib);
int taso_library_ncalls(const taso_library_t *lib);
const taso_lib_call_t *taso_library_call(const taso_library_t *lib, int i);

/* Whether call i covers the configuration's pattern (kind and fuse). */
bool taso_library_covers(const taso_library_t *lib, int i, const taso_rt_config_t *cfg);

/* The properties of a configuration (layout, shapes, convolution
 * parameters, a concat's slices); the in-place and placing ones false. */
void taso_library_props_of(const taso_rt_config_t *cfg, taso_lib_props_t *p);

/* Whether call i may be made on a match with properties p: Z3 on the
 * call's constraints and p (answers cached by call and properties). */
taso_err_t taso_library_allows(taso_library_t *lib, int i, const taso_lib_props_t *p, bool *ok);

/* Z3 queries made and answers taken from the cache, for reports. */
void taso_library_counts(const taso_library_t *lib, int64_t *queries, int64_t *cached);

#endif
