/*
 * Operator graphs, their canonical text form and canonical ordering.
 *
 * A graph is a list of nodes in topological order plus a list of outputs.
 * Inputs are nodes too (TASO_OP_INPUT) that name an entry of an input table
 * shared by a whole graph set. A tensor is referred to by (node, port):
 * port 1 exists only for split. Adding a node equal to an existing one returns
 * the existing one, so no graph computes a tensor twice, and the canonical
 * text form `ewadd(conv2d(i1, w4), conv2d(i1, w5))` maps to exactly one
 * canonical graph and back.
 */
#ifndef TASO_GRAPH_H
#define TASO_GRAPH_H

#include <stdbool.h>
#include <stdint.h>

#include "op.h"

#define TASO_NAME_LEN 16

typedef int32_t taso_ref_t; /* node * 2 + port */
#define TASO_REF(node, port) ((taso_ref_t)((node)*2 + (port)))
#define TASO_REF_NODE(ref) ((ref) / 2)
#define TASO_REF_PORT(ref) ((ref) % 2)

typedef struct {
  char name[TASO_NAME_LEN]; /* "x1", "w4", "s0" */
  taso_tensor_t type;       /* shape; trees empty */
} taso_input_t;

typedef struct {
  taso_input_t *v; /* entries */
  int n;           /* count */
} taso_inputs_t;

typedef struct {
  int32_t kind;     /* taso_op_kind_t */
  taso_params_t p;  /* parameters; unused ones 0 */
  taso_ref_t in[3]; /* tensor inputs; -1 past arity */
} taso_node_t;

typedef struct {
  taso_node_t *nodes; /* topological order */
  int nnodes, node_cap;
  taso_ref_t *outputs; /* the graph's results, in order */
  int noutputs, out_cap;
} taso_graph_t;

void taso_inputs_free(taso_inputs_t *in);
/* Appends an input; TASO_ERR_ARG on a duplicate or overlong name. */
taso_err_t taso_inputs_add(taso_inputs_t *in, const char *name, int rank, const int32_t *dim);
int taso_inputs_find(const taso_inputs_t *in, const char *name); /* -1 if absent */

void taso_graph_init(taso_graph_t *g);
void taso_graph_free(taso_graph_t *g);
void taso_graph_clear(taso_graph_t *g);
taso_err_t taso_graph_copy(taso_graph_t *dst, const taso_graph_t *src);

/* Adds (or finds) a node; *ref receives its port 0. Inputs must exist. */
taso_err_t taso_graph_add(taso_graph_t *g, taso_op_kind_t kind, const taso_params_t *p,
                          const taso_ref_t *in, taso_ref_t *ref);
taso_err_t taso_graph_add_input(taso_graph_t *g, int input, taso_ref_t *ref);
taso_err_t taso_graph_add_output(taso_graph_t *g, taso_ref_t ref);

/* An index over a graph's nodes that finds an equal node in constant
 * time, so that building a graph of n nodes by the _indexed adds costs
 * O(n), not O(n^2). Zero-initialize it; it follows the graph as long as
 * nodes are added only through it (else it is rebuilt on the next add). */
typedef struct {
  int32_t *slots; /* open addressing: node + 1, 0 empty */
  uint32_t *tags; /* per slot: the high half of its node's index hash */
  int nslots;     /* a power of two, at least twice the nodes */
  int indexed;    /* the graph's node count when last in step */
} taso_graph_index_t;
void taso_graph_index_free(taso_graph_index_t *ix);
taso_err_t taso_graph_add_indexed(taso_graph_t *g, taso_graph_index_t *ix, taso_op_kind_t kind,
                                  const taso_params_t *p, const taso_ref_t *in, taso_ref_t *ref);
taso_err_t taso_graph_add_input_indexed(taso_graph_t *g, taso_graph_index_t *ix, int input,
                                        taso_ref_t *ref);

/* The hash of a node's operator and parameters (its operands left out):
 * the same wherever the node stands, so a caller that adds copies of one
 * node to many graphs, or hashes many graphs sharing it, computes it once.
 * Not stable across builds: never stored. */
uint64_t taso_node_params_hash(const taso_node_t *n);

/* Adds (or finds) n as it stands: parameters as a graph holds them (those
 * its operator does not take 0), operands valid tensors of g; params_hash
 * is taso_node_params_hash(n). For copying nodes from another graph. */
taso_err_t taso_graph_add_node_indexed(taso_graph_t *g, taso_graph_index_t *ix,
                                       const taso_node_t *n, uint64_t params_hash, taso_ref_t *ref);

/* Types of every node output: types[2*node + port]. Errors name the operator. */
taso_err_t taso_graph_infer(const taso_graph_t *g, const taso_inputs_t *in, taso_tensor_t *types);

/* Rewrites g in canonical node order (depth-first from the outputs, inputs
 * in order) and drops nodes no output depends on. */
taso_err_t taso_graph_canonicalize(taso_graph_t *g);

/* taso_graph_canonicalize, telling where each node went: where[i] (room
 * for g->nnodes entries) is node i's index in the result, -1 if dropped. */
taso_err_t taso_graph_canonicalize_map(taso_graph_t *g, int *where);

/* Total order on canonical graphs; 0 iff equal. */
int taso_graph_compare(const taso_graph_t *a, const taso_graph_t *b);

/* 64-bit hash of a canonical graph, stable across machines and runs. */
uint64_t taso_graph_hash(const taso_graph_t *g);

/* Structural hashes, for hash tables (not stable: never stored). A node's
 * mixes its params hash with its operands' structural hashes (hashes[k]
 * for node k) and ports, so that it depends on what the node computes,
 * not on where it stands; a graph's mixes its outputs'. Equal canonical
 * graphs hash alike; a caller that knows which nodes a rewrite left
 * alone reuses their params hashes, and hashes a rewrite in a few mixes
 * per node. _all fills hashes for every node and returns the graph's. */
uint64_t taso_node_struct_hash(uint64_t params_hash, const taso_node_t *n, const uint64_t *hashes);
uint64_t taso_graph_struct_hash(const taso_graph_t *g, const uint64_t *hashes);
uint64_t taso_graph_struct_hash_all(const taso_graph_t *g, uint64_t *hashes);

/* Canonical text of the outputs, comma-separated. Returns the length it
 * needs (like snprintf); the text is cut to len - 1 characters. */
int taso_graph_format(const taso_graph_t *g, const taso_inputs_t *in, char *buf, int len);

/* Parses canonical text (whitespace free-form, parameters in any order,
 * defaults omitted) into a canonical graph. Errors give the column. */
taso_err_t taso_graph_parse(const char *text, const taso_inputs_t *in, taso_graph_t *g);

/* Parses an operator with its parameters and no tensor arguments, as job
 * files list them: "conv2d(s=2x2, act=relu)", "pool_avg(k=3x3)", "matmul". */
taso_err_t taso_op_template_parse(const char *text, taso_op_kind_t *kind, taso_params_t *p);

/* Parses "SRC => DST" into two graphs. */
taso_err_t taso_subst_parse(const char *text, const taso_inputs_t *in, taso_graph_t *src,
                            taso_graph_t *dst);

#endif
