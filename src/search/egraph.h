/*
 * An e-graph over the registry's IR (internal to src/search): the
 * structure of equality saturation (eqsat.c).
 *
 * An e-class is a set of tensors proved equal, all of one type (shape and
 * split trees: a rule is applied only where its right side gives each
 * matched tensor exactly its type). An e-node is an operator with its
 * parameters over e-classes; it stands for one output of the operator
 * (port: split has two), so a class holds tensors, as a graph's refs do.
 * Nodes are hash-consed: adding one equal to an existing one returns the
 * existing one's class. Classes are merged with a union-find; merging
 * breaks the hash-consing until taso_egraph_rebuild restores congruence
 * (nodes equal over merged classes merged too) and the indexes the
 * matcher walks: each class's nodes, each class's users, each kind's
 * nodes.
 */
#ifndef TASO_SEARCH_EGRAPH_H
#define TASO_SEARCH_EGRAPH_H

#include <stdbool.h>
#include <stdint.h>

#include "graph.h"

typedef struct {
  int32_t kind;    /* taso_op_kind_t */
  int32_t port;    /* which output of the operator it stands for */
  int32_t pid;     /* p's number (taso_egraph_params_id): equal numbers, equal p */
  taso_params_t p; /* as a graph node's (unused ones 0) */
  int32_t in[3];   /* operand classes (canonical after a rebuild); -1 past arity */
  int32_t cls;     /* its class (canonical after a rebuild) */
  int32_t app;     /* the rule application that added it; -1: the model's graph */
  bool dead;       /* a duplicate a rebuild found (another node stands for it) */
} taso_enode_t;

/* Distinct records of one size, numbered in the order first met. */
typedef struct {
  char *items;    /* by number, size bytes each */
  int32_t n, cap; /* records, room */
  int32_t *slots; /* open addressing: number + 1, 0 empty */
  int32_t nslots; /* a power of two, at least twice the records */
} taso_intern_t;

typedef struct {
  taso_enode_t *nodes;
  int32_t nnodes, node_cap;
  int32_t *parent;     /* per class: union-find parent (itself at a root) */
  taso_tensor_t *type; /* per class: its type (a root's is current) */
  bool *folded;        /* per class, after a rebuild: computable from weights alone */
  bool *grew;          /* per class root: took in another class since the last rebuild */
  int32_t *type_id;    /* per class: its type's number (classes of one type share it) */
  int32_t nclasses, class_cap;
  taso_intern_t types;  /* the distinct types (taso_tensor_t) */
  taso_intern_t params; /* the distinct parameters (taso_params_t) of nodes */
  int32_t *slots;       /* hash-consing: node + 1, 0 empty (open addressing) */
  int32_t nslots;       /* a power of two, at least twice the nodes */
  /* indexes, after a rebuild, over live nodes (compressed rows) */
  int32_t *member_at, *members; /* per class root c: members[member_at[c] .. member_at[c+1]) */
  int32_t *user_at, *users;     /* per class root: the nodes that read it */
  int32_t kind_at[TASO_OP_COUNT + 1], *by_kind; /* per kind: its nodes */
  int32_t live;                                 /* live nodes */
  int32_t live_classes;                         /* class roots */
  uint32_t *class_kinds;                        /* per class root: bit k, it has a node of kind k */
  uint64_t *reader_bits;                        /* per class root: its readers' class bits */
  int32_t *sibling; /* per live node of a two-output operator: the other output's class, or -1 */
  /* per (kind, operand position, kind): the live nodes of the first kind
   * whose operand's class has a node of the second (TASO_EGRAPH_KID) */
  int32_t *kid_at, *kids;
  /* bit k: a live node of kind k is fresh since the rebuild before the
   * last (new, or it or an operand in a class that grew): a match with
   * no fresh node was a match then too */
  uint32_t fresh_kinds;
  int32_t rebuilt_nodes; /* nodes at the last rebuild */
} taso_egraph_t;

#define TASO_EGRAPH_KID(kind, pos, child) (((kind)*3 + (pos)) * TASO_OP_COUNT + (child))

/* A class's bit of 64 (a hash of its number) in reader_bits: a class
 * whose bit is clear in c's reads no class c. */
static inline uint64_t taso_egraph_class_bit(int32_t c) {
  return (uint64_t)1 << ((uint32_t)c * 0x9e3779b1u >> 26);
}

void taso_egraph_free(taso_egraph_t *eg);

/* Empties the e-graph, keeping its memory (and its tables of types and
 * parameters, whose numbers stay valid) for the next one. */
void taso_egraph_clear(taso_egraph_t *eg);

int32_t taso_egraph_find(const taso_egraph_t *eg, int32_t c);

/* The class of the node (kind, port, p) over operand classes in, added
 * (with a new class of type type) unless an equal node exists; app as in
 * taso_enode_t. *added tells which (may be NULL). */
taso_err_t taso_egraph_add(taso_egraph_t *eg, int32_t kind, int32_t port, const taso_params_t *p,
                           const int32_t *in, const taso_tensor_t *type, int32_t app, int32_t *cls,
                           bool *added);

/* taso_egraph_add with p's number kept in *pid (-1: not yet numbered; it
 * stays valid while the e-graph is only cleared): a rule's right side
 * adds the same parameters many times. */
taso_err_t taso_egraph_add_pid(taso_egraph_t *eg, int32_t kind, int32_t port,
                               const taso_params_t *p, int32_t *pid, const int32_t *in,
                               const taso_tensor_t *type, int32_t app, int32_t *cls, bool *added);

/* The number of parameters p among the nodes', or -1 (no node has them). */
int32_t taso_egraph_params_id(const taso_egraph_t *eg, const taso_params_t *p);

/* taso_egraph_lookup_node by the parameters' number (pid, as a node's). */
int32_t taso_egraph_lookup_pid(taso_egraph_t *eg, int32_t kind, int32_t port, int32_t pid,
                               const int32_t *in);

/* The class of an existing node equal to (kind, port, p, in), or -1. */
int32_t taso_egraph_lookup(taso_egraph_t *eg, int32_t kind, int32_t port, const taso_params_t *p,
                           const int32_t *in);

/* The live node equal to (kind, port, p, in), or -1 (after a rebuild). */
int32_t taso_egraph_lookup_node(taso_egraph_t *eg, int32_t kind, int32_t port,
                                const taso_params_t *p, const int32_t *in);

/* Merges two classes (of one type: else an error); *merged false when
 * they were one already. */
taso_err_t taso_egraph_union(taso_egraph_t *eg, int32_t a, int32_t b, bool *merged);

/* Restores congruence and builds the indexes; is_weight per entry of the
 * graph's input table (for folded). */
taso_err_t taso_egraph_rebuild(taso_egraph_t *eg, const bool *is_weight);

/* The e-graph of g (types: taso_graph_infer's); roots[o] receives the
 * class of output o (room for g->noutputs). Rebuilt. */
taso_err_t taso_egraph_of_graph(taso_egraph_t *eg, const taso_graph_t *g,
                                const taso_tensor_t *types, const bool *is_weight, int32_t *roots);

#endif
