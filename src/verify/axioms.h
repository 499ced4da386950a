/*
 * Axioms as data: the operator properties the verifier proves candidates
 * from and the validator checks, read at run time from data/axioms/.
 *
 * A folder holds decls.smt2 (the sort T and one function per operator,
 * one declaration per line) and any number of other *.smt2 files, read in
 * name order. Each of those is a list of blocks, each opened by a line
 * ";; @axiom NAME" or ";; @lemma NAME", followed by ";; @KEY VALUE" lines
 * (about, note, hint and the validation domain keys), other comments, and
 * one SMT-LIB2 (assert ...). data/axioms/README.md describes the format.
 *
 * Loading only reads and checks the text (each block is parsed once in a
 * scratch Z3 context, so a malformed block is reported as "FILE:LINE:COL:
 * problem (in NAME)" at load time, never halfway through a run). Z3 terms
 * are built per context by the prover (verifier.h), since a Z3 context
 * belongs to one thread.
 */
#ifndef TASO_AXIOMS_H
#define TASO_AXIOMS_H

#include <stdbool.h>

#include <z3.h>

#include "check.h"

#define TASO_AXIOM_NAME_LEN 16
#define TASO_DECL_MAX_ARGS 8

typedef enum {
  TASO_AXIOM_AXIOM = 0, /* assumed */
  TASO_AXIOM_LEMMA = 1, /* proved from the axioms first, then assumed */
} taso_axiom_kind_t;

/* One "@KEY VALUE" line of a block, in file order. */
typedef struct {
  char *key;   /* "shape", "param", "about", "hint", ... */
  char *value; /* the rest of the line, trimmed */
  int line;    /* its line in the file */
} taso_axiom_meta_t;

typedef struct {
  char name[TASO_AXIOM_NAME_LEN]; /* "A0", "L1", "X1" */
  taso_axiom_kind_t kind;         /* axiom or lemma */
  char *file;                     /* the file it came from */
  int line;                       /* line of its "@axiom"/"@lemma" header */
  char *text;                     /* SMT-LIB2, padded with newlines so that
                                     Z3's line numbers are the file's */
  taso_axiom_meta_t *meta;        /* its "@KEY VALUE" lines */
  int nmeta;
  bool enabled; /* false: left out of every proof */
} taso_axiom_t;

/* One function of decls.smt2: name (Int... T...) T, or a type function
 * such as dim (Int T) Int. */
typedef struct {
  char name[32];                    /* operator or type function name */
  int nargs;                        /* arguments */
  bool arg_int[TASO_DECL_MAX_ARGS]; /* true: Int, false: T */
  bool ret_int;                     /* returns Int (a type function), else T */
} taso_decl_t;

typedef struct {
  char *decls_path;   /* the decls.smt2 read */
  taso_decl_t *decls; /* its functions */
  int ndecls;
  taso_axiom_t *v; /* axioms and lemmas, in load order */
  int n, cap;
} taso_axioms_t;

/* Loads a folder (decls.smt2 + every other *.smt2, in name order) or one
 * file (with the decls.smt2 of its folder, else of the folder above). */
taso_err_t taso_axioms_load(const char *path, taso_axioms_t **out);

/* Adds the blocks of one more file (a known-bad fixture, for example). */
taso_err_t taso_axioms_add_file(taso_axioms_t *ax, const char *path);

void taso_axioms_free(taso_axioms_t *ax);

/* Index of the axiom or lemma called name, or -1. */
int taso_axioms_find(const taso_axioms_t *ax, const char *name);

/* Whether name is an item of list, items separated by sep ("A0,A13" for
 * --only, "A4 A7" for a core; runs of sep count as one); a NULL list
 * holds every name. */
bool taso_axioms_listed(const char *list, char sep, const char *name);

/* Leaves one axiom out of (or puts it back into) every later proof. */
taso_err_t taso_axioms_enable(taso_axioms_t *ax, const char *name, bool on);

/* A digest of everything a proof can depend on: the declarations and
 * every enabled axiom and lemma (name, kind, text and "@" lines), in load
 * order. Equal digests mean the same axiom set; it is part of the resume
 * keys of taso-verify and taso-validate. */
uint64_t taso_axioms_digest(const taso_axioms_t *ax);

/* The value of the nth "@key" line of an axiom, or NULL. */
const char *taso_axiom_meta(const taso_axiom_t *a, const char *key, int nth);

/* The declaration of function name, or NULL. */
const taso_decl_t *taso_axioms_decl(const taso_axioms_t *ax, const char *name);

/* Declares sort T and every function of decls.smt2 in context c: fns[i]
 * is ax->decls[i]. */
void taso_axioms_declare(const taso_axioms_t *ax, Z3_context c, Z3_sort *tsort, Z3_func_decl *fns);

/* Parses SMT-LIB2 commands over the declarations (and nextra more
 * constants or functions) into their assertions. On a Z3 error returns
 * TASO_ERR_PARSE with "FILE:LINE:COL: problem", where Z3 gave a position,
 * taking file for FILE. */
taso_err_t taso_axioms_parse(const taso_axioms_t *ax, Z3_context c, Z3_sort tsort,
                             const Z3_func_decl *fns, const char *file, const char *text,
                             int nextra, const Z3_symbol *extra_names, const Z3_func_decl *extra,
                             Z3_ast_vector *out);

#endif
