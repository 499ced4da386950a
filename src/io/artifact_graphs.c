/*
 * The input table (/inputs) and the graph set (/graphs: index, nodes,
 * outputs, fingerprints) of an artifact (see artifact.h).
 */
#define _POSIX_C_SOURCE 200809L

#include "artifact_impl.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* One row of /inputs. */
typedef struct {
  char name[TASO_NAME_LEN];    /* NUL-terminated, NUL-padded */
  int32_t rank;                /* tensor rank, 0 to 4 */
  int32_t dims[TASO_MAX_RANK]; /* sizes; 0 past rank */
} input_rec_t;

/* One row of /graphs/index: where one graph's records lie in the flat sets.
 * The 64-bit fields come first so that the struct has no padding. */
typedef struct {
  int64_t node_begin;   /* first row in /graphs/nodes */
  int64_t output_begin; /* first row in /graphs/outputs */
  int32_t node_count;   /* its rows in /graphs/nodes */
  int32_t output_count; /* its rows in /graphs/outputs */
} index_rec_t;

/* Padding would reach the file as whatever bytes memory held, and the same
 * set must give the same bytes. (taso_subst_t does have padding; its rows
 * are copied into zeroed memory instead, in artifact_substs.c.) */
_Static_assert(sizeof(taso_node_t) == 30 * sizeof(int32_t), "taso_node_t has padding");
_Static_assert(sizeof(index_rec_t) == 2 * sizeof(int64_t) + 2 * sizeof(int32_t),
               "index_rec_t has padding");
_Static_assert(sizeof(input_rec_t) == TASO_NAME_LEN + (1 + TASO_MAX_RANK) * sizeof(int32_t),
               "input_rec_t has padding");

/* The records of /inputs, /graphs/index, /graphs/nodes and
 * /graphs/fingerprint. */
static const taso_field_t input_fields[] = {
    {"name", offsetof(input_rec_t, name), TASO_FIELD_STRING, TASO_NAME_LEN},
    {"rank", offsetof(input_rec_t, rank), TASO_FIELD_INT32, 0},
    {"dims", offsetof(input_rec_t, dims), TASO_FIELD_INT32, TASO_MAX_RANK},
};
static const taso_table_t input_table = {"/inputs", sizeof(input_rec_t), input_fields,
                                         COUNT(input_fields)};

/* Listed in reading order; the offsets keep the struct unpadded. */
static const taso_field_t index_fields[] = {
    {"node_begin", offsetof(index_rec_t, node_begin), TASO_FIELD_INT64, 0},
    {"node_count", offsetof(index_rec_t, node_count), TASO_FIELD_INT32, 0},
    {"output_begin", offsetof(index_rec_t, output_begin), TASO_FIELD_INT64, 0},
    {"output_count", offsetof(index_rec_t, output_count), TASO_FIELD_INT32, 0},
};
static const taso_table_t index_table = {"/graphs/index", sizeof(index_rec_t), index_fields,
                                         COUNT(index_fields)};

static const taso_field_t node_fields[] = {
    {"kind", offsetof(taso_node_t, kind), TASO_FIELD_INT32, 0},
    {"axis", offsetof(taso_node_t, p.axis), TASO_FIELD_INT32, 0},
    {"stride", offsetof(taso_node_t, p.stride), TASO_FIELD_INT32, 2},
    {"pad", offsetof(taso_node_t, p.pad), TASO_FIELD_INT32, 0},
    {"act", offsetof(taso_node_t, p.act), TASO_FIELD_INT32, 0},
    {"kernel", offsetof(taso_node_t, p.kernel), TASO_FIELD_INT32, 2},
    {"layout", offsetof(taso_node_t, p.layout), TASO_FIELD_INT32, 0},
    {"rank", offsetof(taso_node_t, p.rank), TASO_FIELD_INT32, 0},
    {"shape", offsetof(taso_node_t, p.shape), TASO_FIELD_INT32, 4},
    {"input", offsetof(taso_node_t, p.input), TASO_FIELD_INT32, 0},
    {"pads", offsetof(taso_node_t, p.pads), TASO_FIELD_INT32, 4},
    {"perm", offsetof(taso_node_t, p.perm), TASO_FIELD_INT32, 4},
    {"bound", offsetof(taso_node_t, p.bound), TASO_FIELD_FLOAT, 2},
    {"at", offsetof(taso_node_t, p.at), TASO_FIELD_INT32, 0},
    {"exclude_pad", offsetof(taso_node_t, p.exclude_pad), TASO_FIELD_INT32, 0},
    {"in", offsetof(taso_node_t, in), TASO_FIELD_INT32, 3},
};
static const taso_table_t node_table = {"/graphs/nodes", sizeof(taso_node_t), node_fields,
                                        COUNT(node_fields)};

/* One 128-bit fingerprint per graph, beside /graphs/index. */
static const taso_field_t fingerprint_fields[] = {{"h", 0, TASO_FIELD_UINT64, 2}};
static const taso_table_t fingerprint_table = {"/graphs/fingerprint", 2 * sizeof(uint64_t),
                                               fingerprint_fields, COUNT(fingerprint_fields)};

/* ------------------------------------------------------------------------ */
/* Inputs                                                                   */
/* ------------------------------------------------------------------------ */

/* The table is the same on every rank, so rank 0 alone supplies the rows. */
static taso_err_t write_inputs(taso_artifact_t *a, const taso_inputs_t *in) {
  taso_err_t err = TASO_OK;
  input_rec_t *rows = NULL;
  hid_t type = H5I_INVALID_HID;
  int64_t n = 0, offset = 0, total = 0;
  if (!in || in->n < 0 || (in->n > 0 && !in->v)) {
    err = taso_error(TASO_ERR_ARG, "%s: no input table to write", a->path);
  } else if (a->rank == 0 && in->n > 0) {
    n = in->n;
    if (!(rows = calloc((size_t)n, sizeof *rows)))
      err = taso_error(TASO_ERR_NOMEM, "%s: no memory for the input table", a->path);
    for (int64_t i = 0; i < n && err == TASO_OK; i++) {
      const taso_input_t *v = &in->v[i];
      if (strlen(v->name) >= TASO_NAME_LEN || v->type.rank < 0 || v->type.rank > TASO_MAX_RANK)
        err = taso_error(TASO_ERR_ARG, "%s: input %lld has a bad name or rank", a->path,
                         (long long)i);
      memcpy(rows[i].name, v->name, strnlen(v->name, TASO_NAME_LEN - 1));
      rows[i].rank = v->type.rank;
      for (int d = 0; d < TASO_MAX_RANK; d++)
        rows[i].dims[d] = d < v->type.rank ? v->type.dim[d] : 0;
    }
  }
  if (err == TASO_OK) err = artifact_record_type(a, &input_table, &type);
  if ((err = artifact_settle(a, err)) != TASO_OK) goto done;
  artifact_place(a, &n, &offset, &total, 1);
  err = artifact_write_rows(a, input_table.path, type, sizeof *rows, rows, n, offset, total);
done:
  free(rows);
  return artifact_release(a, type, H5Tclose, err);
}

taso_err_t taso_artifact_write_inputs(taso_artifact_t *a, const taso_inputs_t *in) {
  if (!a) return artifact_no_handle();
  artifact_quiet_t q = artifact_quiet_begin();
  taso_err_t err;
  if (!a->writable)
    err = taso_error(TASO_ERR_ARG, "%s: opened read-only; cannot write inputs", a->path);
  else
    err = artifact_settle(a, write_inputs(a, in));
  artifact_quiet_end(&q);
  return err;
}

static taso_err_t read_inputs(taso_artifact_t *a, taso_inputs_t *in) {
  taso_err_t err;
  hid_t type = H5I_INVALID_HID;
  input_rec_t *rows = NULL;
  int64_t n = 0;
  in->v = NULL;
  in->n = 0;
  err = artifact_settle(a, artifact_record_type(a, &input_table, &type));
  if (err == TASO_OK)
    err = artifact_read_rows(a, input_table.path, type, sizeof *rows, false, (void **)&rows, &n);
  for (int64_t i = 0; i < n && err == TASO_OK; i++) {
    input_rec_t *r = &rows[i];
    bool ok =
        memchr(r->name, '\0', TASO_NAME_LEN) != NULL && r->rank >= 0 && r->rank <= TASO_MAX_RANK;
    for (int d = 0; ok && d < r->rank; d++)
      ok = r->dims[d] >= 1;
    if (!ok)
      err = taso_error(TASO_ERR_FORMAT, "%s: /inputs row %lld: bad name or shape", a->path,
                       (long long)i);
    else if ((err = taso_inputs_add(in, r->name, r->rank, r->dims)) != TASO_OK &&
             err != TASO_ERR_NOMEM)
      err = taso_error_prefix(TASO_ERR_FORMAT, "%s: /inputs row %lld: ", a->path, (long long)i);
  }
  if (err != TASO_OK) taso_inputs_free(in);
  free(rows);
  return artifact_release(a, type, H5Tclose, err);
}

taso_err_t taso_artifact_read_inputs(taso_artifact_t *a, taso_inputs_t *in) {
  if (!a) return artifact_no_handle();
  artifact_quiet_t q = artifact_quiet_begin();
  taso_err_t err = artifact_settle(a, read_inputs(a, in));
  artifact_quiet_end(&q);
  return err;
}

/* ------------------------------------------------------------------------ */
/* Graphs                                                                   */
/* ------------------------------------------------------------------------ */

/* Flattens the local graphs into the three record sets, with each graph's
 * offsets relative to this rank's first node and output. */
static taso_err_t flatten(const taso_artifact_t *a, const taso_graph_t *local, int64_t n,
                          index_rec_t **index, taso_node_t **nodes, int32_t **outs,
                          int64_t counts[3]) {
  int64_t nn = 0, no = 0;
  if (n < 0 || (n > 0 && !local))
    return taso_error(TASO_ERR_ARG, "%s: bad local graph list", a->path);
  for (int64_t i = 0; i < n; i++) {
    if (local[i].nnodes < 0 || local[i].noutputs < 0)
      return taso_error(TASO_ERR_ARG, "%s: local graph %lld is malformed", a->path, (long long)i);
    nn += local[i].nnodes;
    no += local[i].noutputs;
  }
  *index = calloc(n > 0 ? (size_t)n : 1, sizeof **index);
  *nodes = calloc(nn > 0 ? (size_t)nn : 1, sizeof **nodes);
  *outs = calloc(no > 0 ? (size_t)no : 1, sizeof **outs);
  if (!*index || !*nodes || !*outs)
    return taso_error(TASO_ERR_NOMEM, "%s: no memory for %lld graphs", a->path, (long long)n);
  nn = no = 0;
  for (int64_t i = 0; i < n; i++) {
    const taso_graph_t *g = &local[i];
    (*index)[i] = (index_rec_t){
        .node_begin = nn, .output_begin = no, .node_count = g->nnodes, .output_count = g->noutputs};
    if (g->nnodes > 0) memcpy(*nodes + nn, g->nodes, (size_t)g->nnodes * sizeof **nodes);
    if (g->noutputs > 0) memcpy(*outs + no, g->outputs, (size_t)g->noutputs * sizeof **outs);
    nn += g->nnodes;
    no += g->noutputs;
  }
  counts[0] = n;
  counts[1] = nn;
  counts[2] = no;
  return TASO_OK;
}

static taso_err_t write_graphs(taso_artifact_t *a, const taso_graph_t *local, int64_t n,
                               int64_t *first) {
  taso_err_t err;
  index_rec_t *index = NULL;
  taso_node_t *nodes = NULL;
  int32_t *outs = NULL;
  int64_t counts[3] = {0, 0, 0}, offset[3], total[3];
  hid_t itype = H5I_INVALID_HID, ntype = H5I_INVALID_HID, group = H5I_INVALID_HID;
  bool exists = false;
  err = flatten(a, local, n, &index, &nodes, &outs, counts);
  if (err == TASO_OK) err = artifact_record_type(a, &index_table, &itype);
  if (err == TASO_OK) err = artifact_record_type(a, &node_table, &ntype);
  if (err == TASO_OK) err = artifact_path_exists(a, "/graphs", &exists);
  if (err == TASO_OK && exists)
    err = taso_error(TASO_ERR_ARG, "%s: already holds a graph set", a->path);
  if ((err = artifact_settle(a, err)) != TASO_OK) goto done;
  artifact_place(a, counts, offset, total, 3);
  for (int64_t i = 0; i < n; i++) {
    index[i].node_begin += offset[1];
    index[i].output_begin += offset[2];
  }
  if ((group = H5Gcreate2(a->file, "/graphs", H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT)) < 0)
    err = artifact_h5_fail(a, "create group /graphs");
  if ((err = artifact_settle(a, err)) != TASO_OK) goto done;
  if ((err = artifact_write_rows(a, index_table.path, itype, sizeof *index, index, counts[0],
                                 offset[0], total[0])) != TASO_OK ||
      (err = artifact_write_rows(a, node_table.path, ntype, sizeof *nodes, nodes, counts[1],
                                 offset[1], total[1])) != TASO_OK ||
      (err = artifact_write_rows(a, "/graphs/outputs", H5T_NATIVE_INT32, sizeof *outs, outs,
                                 counts[2], offset[2], total[2])) != TASO_OK)
    goto done;
  if (first) *first = offset[0];
done:
  free(index);
  free(nodes);
  free(outs);
  err = artifact_release(a, group, H5Gclose, err);
  err = artifact_release(a, ntype, H5Tclose, err);
  return artifact_release(a, itype, H5Tclose, err);
}

taso_err_t taso_artifact_write_graphs(taso_artifact_t *a, const taso_graph_t *local, int64_t n,
                                      int64_t *first) {
  if (!a) return artifact_no_handle();
  artifact_quiet_t q = artifact_quiet_begin();
  taso_err_t err;
  if (!a->writable)
    err = taso_error(TASO_ERR_ARG, "%s: opened read-only; cannot write graphs", a->path);
  else
    err = artifact_settle(a, write_graphs(a, local, n, first));
  artifact_quiet_end(&q);
  return err;
}

/* Whether ref names an output of a node before limit: later code indexes
 * arrays with refs read from the file, so they are checked once here. */
static bool ref_ok(const taso_graph_t *g, taso_ref_t ref, int limit) {
  if (ref < 0 || TASO_REF_NODE(ref) >= limit) return false;
  int32_t kind = g->nodes[TASO_REF_NODE(ref)].kind;
  return TASO_REF_PORT(ref) < taso_ops[kind].outputs;
}

/* Fills g from its rows of the flat sets and checks it is well formed. */
static taso_err_t unflatten(const taso_artifact_t *a, int64_t gi, const index_rec_t *r,
                            const taso_node_t *nodes, int64_t nnodes, const int32_t *outs,
                            int64_t nouts, taso_graph_t *g) {
  if (r->node_begin < 0 || r->node_count < 0 || r->node_begin > nnodes - r->node_count ||
      r->output_begin < 0 || r->output_count < 0 || r->output_begin > nouts - r->output_count)
    return taso_error(TASO_ERR_FORMAT, "%s: /graphs/index row %lld points outside the graph set",
                      a->path, (long long)gi);
  if (r->node_count > 0) {
    if (!(g->nodes = malloc((size_t)r->node_count * sizeof *g->nodes)))
      return taso_error(TASO_ERR_NOMEM, "%s: no memory for graph %lld", a->path, (long long)gi);
    memcpy(g->nodes, nodes + r->node_begin, (size_t)r->node_count * sizeof *g->nodes);
    g->nnodes = g->node_cap = r->node_count;
  }
  if (r->output_count > 0) {
    if (!(g->outputs = malloc((size_t)r->output_count * sizeof *g->outputs)))
      return taso_error(TASO_ERR_NOMEM, "%s: no memory for graph %lld", a->path, (long long)gi);
    memcpy(g->outputs, outs + r->output_begin, (size_t)r->output_count * sizeof *g->outputs);
    g->noutputs = g->out_cap = r->output_count;
  }
  for (int j = 0; j < g->nnodes; j++) {
    const taso_node_t *v = &g->nodes[j];
    bool ok = v->kind >= 0 && v->kind < TASO_OP_COUNT;
    /* Inputs come before their users, and slots past the arity are -1. */
    for (int k = 0; ok && k < 3; k++)
      ok = k < taso_ops[v->kind].arity ? ref_ok(g, v->in[k], j) : v->in[k] == -1;
    if (!ok)
      return taso_error(TASO_ERR_FORMAT, "%s: graph %lld, node %d is malformed", a->path,
                        (long long)gi, j);
  }
  for (int j = 0; j < g->noutputs; j++)
    if (!ref_ok(g, g->outputs[j], g->nnodes))
      return taso_error(TASO_ERR_FORMAT, "%s: graph %lld, output %d is malformed", a->path,
                        (long long)gi, j);
  return TASO_OK;
}

static taso_err_t read_graphs(taso_artifact_t *a, taso_graph_t **graphs, int64_t *n) {
  taso_err_t err;
  hid_t itype = H5I_INVALID_HID, ntype = H5I_INVALID_HID;
  index_rec_t *index = NULL;
  taso_node_t *nodes = NULL;
  int32_t *outs = NULL;
  int64_t ni = 0, nn = 0, no = 0;
  taso_graph_t *g = NULL;
  *graphs = NULL;
  *n = 0;
  err = artifact_record_type(a, &index_table, &itype);
  if (err == TASO_OK) err = artifact_record_type(a, &node_table, &ntype);
  if ((err = artifact_settle(a, err)) != TASO_OK) goto done;
  if ((err = artifact_read_rows(a, index_table.path, itype, sizeof *index, false, (void **)&index,
                                &ni)) != TASO_OK ||
      (err = artifact_read_rows(a, node_table.path, ntype, sizeof *nodes, false, (void **)&nodes,
                                &nn)) != TASO_OK ||
      (err = artifact_read_rows(a, "/graphs/outputs", H5T_NATIVE_INT32, sizeof *outs, false,
                                (void **)&outs, &no)) != TASO_OK)
    goto done;
  if (ni > 0 && !(g = calloc((size_t)ni, sizeof *g))) {
    err = taso_error(TASO_ERR_NOMEM, "%s: no memory for %lld graphs", a->path, (long long)ni);
    goto done;
  }
  for (int64_t i = 0; i < ni; i++)
    taso_graph_init(&g[i]);
  for (int64_t i = 0; i < ni && err == TASO_OK; i++)
    err = unflatten(a, i, &index[i], nodes, nn, outs, no, &g[i]);
  if (err == TASO_OK) {
    *graphs = g;
    *n = ni;
    g = NULL;
  }
done:
  taso_graphs_free(g, ni);
  free(index);
  free(nodes);
  free(outs);
  err = artifact_release(a, ntype, H5Tclose, err);
  return artifact_release(a, itype, H5Tclose, err);
}

taso_err_t taso_artifact_read_graphs(taso_artifact_t *a, taso_graph_t **graphs, int64_t *n) {
  if (!a) return artifact_no_handle();
  artifact_quiet_t q = artifact_quiet_begin();
  taso_err_t err = artifact_settle(a, read_graphs(a, graphs, n));
  artifact_quiet_end(&q);
  return err;
}

void taso_graphs_free(taso_graph_t *graphs, int64_t n) {
  if (!graphs) return;
  for (int64_t i = 0; i < n; i++)
    taso_graph_free(&graphs[i]);
  free(graphs);
}

taso_err_t taso_artifact_write_fingerprints(taso_artifact_t *a, const uint64_t (*local)[2],
                                            int64_t n) {
  if (!a) return artifact_no_handle();
  artifact_quiet_t q = artifact_quiet_begin();
  hid_t type = H5I_INVALID_HID;
  int64_t offset = 0, total = 0;
  taso_err_t err = TASO_OK;
  if (!a->writable)
    err = taso_error(TASO_ERR_ARG, "%s: opened read-only; cannot write fingerprints", a->path);
  else if (n < 0 || (n > 0 && !local))
    err = taso_error(TASO_ERR_ARG, "%s: bad local fingerprint list", a->path);
  if (err == TASO_OK) err = artifact_record_type(a, &fingerprint_table, &type);
  if ((err = artifact_settle(a, err)) == TASO_OK) {
    artifact_place(a, &n, &offset, &total, 1);
    err = artifact_write_rows(a, fingerprint_table.path, type, fingerprint_table.size, local, n,
                              offset, total);
  }
  err = artifact_release(a, type, H5Tclose, err);
  artifact_quiet_end(&q);
  return artifact_settle(a, err);
}
