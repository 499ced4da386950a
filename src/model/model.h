/*
 * Models: whole networks as graphs of the one operator registry.
 *
 * A model is a taso_graph_t (so the optimizer's matcher runs on it as on
 * any substitution pattern) plus what a network has beyond a pattern: its
 * tensors' long names, which graph inputs are weights, the weights' values
 * (or a seed that makes them), and the types of every node. Builders (the
 * text form of data/models/, ONNX import, the model .h5 artifact) fill one
 * through taso_model_input and taso_model_node; everything downstream
 * (backends, taso-run, export) reads it.
 *
 * Inputs of the graph's input table get short generated names ("x0",
 * "w12") so that the canonical text form stays readable; the model keeps
 * each tensor's own name (an ONNX initializer name, a data-file name)
 * beside it.
 */
#ifndef TASO_MODEL_H
#define TASO_MODEL_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "artifact.h"
#include "graph.h"

#define TASO_MODEL_NAME_LEN 128
#define TASO_KIND_MODEL "taso-model"

/* One step of a call plan (issue 16, src/select): which library call
 * computes which nodes, in which layout, writing where. A plan lists every
 * step of the model in run order; it refers to node indices, so any change
 * to the graph drops it. */
#define TASO_CALL_NAME_LEN 32
#define TASO_CALL_PLACED (-1)
typedef struct {
  int32_t node;       /* the node whose result the step computes (a fused chain's last) */
  int32_t first_node; /* the chain's head (== node for a step of one node) */
  int32_t fused;      /* nodes in the chain: 1 alone, 2-4 with epilogues */
  int32_t layout;     /* taso_rt_layout_t of the step's 4-d activations */
  int32_t in_place;   /* 0: its result gets a buffer of its own; k > 0: it writes
                         over operand k-1's buffer (that operand is dead after it);
                         TASO_CALL_PLACED (a concat): its operands' producers wrote
                         them into their slices of its result, and it runs nothing */
  char call[TASO_CALL_NAME_LEN]; /* the library function's name (data/library) */
} taso_call_t;

typedef struct {
  char name[TASO_MODEL_NAME_LEN];     /* the model's name: "resnet50" */
  taso_inputs_t inputs;               /* graph inputs: activations then weights, any order */
  char (*names)[TASO_MODEL_NAME_LEN]; /* per input: its own long name */
  bool *is_weight;                    /* per input: a weight (true) or a run-time input */
  float **data;                       /* per input: values, row-major; NULL until made or read */
  uint64_t seed;                      /* seeds weights without data and random run inputs */
  taso_graph_t graph;                 /* nodes in topological order; outputs */
  char (*output_names)[TASO_MODEL_NAME_LEN]; /* per graph output: its name */
  taso_tensor_t *types;                      /* 2 * nnodes node types, after taso_model_finish */
  int types_cap;                             /* allocated entries of types */
  taso_call_t *calls;                        /* a selected call plan (malloc'd), or NULL */
  int ncalls;                                /* its steps */
  char library[TASO_MODEL_NAME_LEN];         /* the library description it was selected from */
} taso_model_t;

void taso_model_init(taso_model_t *m, const char *name);
void taso_model_free(taso_model_t *m);

/* Frees m's call plan, if any (calls NULL, ncalls 0, library ""): for
 * whoever changes m's graph other than through the builder below, which
 * drops it itself. */
void taso_model_drop_plan(taso_model_t *m);

/* Puts g (over m's inputs; a search's result) in place of m's graph,
 * typed, each split spelled out as split_at with its sizes (a split takes
 * them from its input's split tree, which folding weights loses); m's
 * call plan, which does not fit g, is dropped. */
taso_err_t taso_model_adopt_graph(taso_model_t *m, const taso_graph_t *g);

/* Adds a graph input (a weight when is_weight) with its own name, shape and,
 * optionally, values (copied; NULL: made from the seed when needed). *ref
 * receives the tensor. Names must be unique. */
taso_err_t taso_model_input(taso_model_t *m, const char *name, bool is_weight, int rank,
                            const int32_t *dim, const float *values, taso_ref_t *ref);

/* Adds an operator node; its type is checked at once, so an impossible
 * shape is reported at the node that has it. */
taso_err_t taso_model_node(taso_model_t *m, taso_op_kind_t kind, const taso_params_t *p,
                           const taso_ref_t *in, taso_ref_t *ref);

/* Marks a tensor as a model output, with a name (NULL: "out0", ...). */
taso_err_t taso_model_output(taso_model_t *m, taso_ref_t ref, const char *name);

/* The type of a tensor (valid after the node that makes it was added). */
const taso_tensor_t *taso_model_type(const taso_model_t *m, taso_ref_t ref);

/* Index of an input by its own name; -1 if absent. */
int taso_model_find_input(const taso_model_t *m, const char *name);

/* Gives every weight without values its seeded random values (uniform in
 * +-sqrt(6/fan-in), fan-in = elements / first dim: He scaling, so that
 * activations neither vanish nor explode through deep ReLU networks),
 * deterministically from m->seed and the weight's name. */
taso_err_t taso_model_make_weights(taso_model_t *m);

/* Seeded random values for run-time input i (uniform in [-1, 1]); the same
 * for the same seed on every machine. out holds the input's size. */
void taso_model_random_input(const taso_model_t *m, int i, uint64_t seed, float *out);

/* Summary counts: nodes per kind (counts has TASO_OP_COUNT entries),
 * multiply-adds of conv2d/matmul/bmm and total weight bytes. */
void taso_model_stats(const taso_model_t *m, int64_t *counts, double *flops, int64_t *weight_bytes);

/* One line per node, "t12 = conv2d(s=2x2, act=relu, t11, w7)", to f. */
void taso_model_print(const taso_model_t *m, FILE *f);

/* ---- where models come from ---------------------------------------------
 * Every tool that takes a model takes a spec: a built-in name with optional
 * parameter overrides ("resnet50", "inception_v3:batch=1,size=75"), a
 * model text file in the built-ins' language with the same overrides
 * ("tests/data/branches.model:blocks=2"), an .onnx file or a model .h5
 * file (kind taso-model). */

/* Loads a model from a spec, dispatching on its form. Errors name the spec
 * and what is wrong; on error m is left empty. (load.c) */
taso_err_t taso_model_load(const char *spec, taso_model_t *m);

/* The text form of data/models/ (text.c): parses the file, with overrides
 * ("batch=1,size=64", or NULL) replacing the file's parameter defaults. */
taso_err_t taso_model_parse_file(const char *path, const char *overrides, taso_model_t *m);

/* The built-in models: the file of a built-in name, and the list of names
 * (sorted; returns the count, fills at most max). (text.c) */
taso_err_t taso_model_builtin_path(const char *name, char *path, int len);
int taso_model_builtin_list(char (*names)[64], int max);

/* The model artifact (model_h5.c): nodes, types, parameters, weights and
 * provenance in one HDF5 file of kind taso-model. Weight-only subgraphs are
 * folded into new weights before writing. */
/* Writes path on MPI_COMM_SELF (the caller writes beside the target and
 * renames); folds m's weight-only subgraphs first and gives its weights
 * their values. */
taso_err_t taso_model_write_h5(taso_model_t *m, const char *path, const taso_provenance_t *prov);
taso_err_t taso_model_read_h5(const char *path, taso_model_t *m);

/* Folds every node whose operands are all weights (transitively) into a
 * new weight holding its value, then drops what no output needs. */
taso_err_t taso_model_fold_weights(taso_model_t *m);

#endif
