/* The generator's parallel driver (generate.h). */
#define _POSIX_C_SOURCE 200809L

#include "generate.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

#include "checkpoint.h"
#include "collective.h"
#include "enumerate.h"
#include "hash.h"
#include "memo.h"
#include "progress.h"
#include "rule_guard.h"

/* A set of fingerprints (open addressing; a zero fingerprint marks an
 * empty slot: 2^-128 odds that a real one is zero), with a bitmap of 16 bits
 * per member in front that answers most misses from cache. */
typedef struct {
  taso_fingerprint_t *slot;
  uint64_t mask;
  uint64_t *bits, bits_mask;
  int64_t n;
} fpset_t;

static bool fpset_has(const fpset_t *s, const taso_fingerprint_t *fp) {
  uint64_t b = fp->h[1] & s->bits_mask;
  if (!(s->bits[b / 64] >> (b % 64) & 1)) return false;
  for (uint64_t h = fp->h[0] & s->mask;; h = (h + 1) & s->mask) {
    const taso_fingerprint_t *x = &s->slot[h];
    if (!x->h[0] && !x->h[1]) return false;
    if (!taso_fingerprint_cmp(x, fp)) return true;
  }
}

/* The memo's marks: tensors whose class holds two different expressions;
 * tensors that are an output of a connected multi-output graph. */
enum { SHARED, TWIN_OUTPUT };

/* The last level's tape (level by level): the output fingerprints of every
 * leaf of max_ops operators that depends on all of them, in walk order.
 * Such an expression occurs in that one graph alone, so the memo would keep
 * it for nothing (it was most of a k=4 run's memory): the level's first
 * walk evaluates it and writes its fingerprints here, and walk 2, which
 * visits the same leaves in the same order, reads them back. */
enum { TAPE_OFF, TAPE_WRITE, TAPE_READ };

/* A connected multi-output graph's fingerprint and its sorted output
 * fingerprints: the twin of the graphs of op-disjoint outputs that have
 * them. */
typedef struct {
  taso_fingerprint_t fp;
  int64_t n;
  taso_fingerprint_t out[2 * TASO_ENUM_MAX_OPS];
} twin_t;

/* One tensor expression as a part of a graph: its operators in dependency
 * order (refs numbered as in taso_grec_t), its output ref and each
 * operator's structural hash, so parts can be tested for shared operators. */
typedef struct {
  taso_fingerprint_t fp; /* the tensor's */
  uint64_t shash;        /* the tensor's structural hash */
  int16_t nops, out;
  int16_t variant[TASO_ENUM_MAX_OPS];
  int16_t in[TASO_ENUM_MAX_OPS][2];
  uint64_t op[TASO_ENUM_MAX_OPS];
} part_t;

/* A fingerprint class and its representative's graph_hash: open
 * addressing, a zero fingerprint marks an empty slot. */
typedef struct {
  taso_fingerprint_t fp;
  uint64_t rep;
  int32_t ops;  /* the representative's operators */
  int32_t told; /* owner's table: every rank knows this class */
} class_t;

typedef struct {
  class_t *slot;
  uint64_t mask;
  int64_t n;
} classes_t;

enum { SPILL_BUCKETS = 16 };

/* The bucket of a graph's fingerprint: bits that owner() does not use. */
static int spill_bucket(const taso_fingerprint_t *fp) {
  return (int)((fp->h[1] >> 17) % SPILL_BUCKETS);
}

typedef struct {
  MPI_Comm comm;
  int rank, size;
  const taso_job_t *job;
  const char *name; /* progress lines' prefix */
  taso_enum_t *e;
  taso_memo_t *m;
  const taso_variant_t *vars;
  int ninputs;
  int32_t *tid; /* tensor id of every ref of the walk */
  int64_t visited;
  taso_grec_t *recs;
  int64_t nrecs, recs_cap;
  int64_t dup_outputs; /* graphs with two equal outputs, never exchanged */
  /* Walk 2 records the graphs whose outputs are connected (one output, or
   * outputs sharing operators). A graph whose outputs share no operator
   * pairs non-independently only with a connected multi-output graph (its
   * twin), so those are built from their parts at the twin's owner. */
  twin_t *twins; /* connected multi-output graphs of walk 2 */
  int64_t ntwins, twins_cap;
  taso_fingerprint_t *outputs; /* their outputs' fingerprints */
  int64_t noutputs, outputs_cap;
  taso_progress_t progress;
  /* method = representatives: the classes whose representative every rank
   * knows; the classes this rank owns, of every level so far */
  classes_t reps, owned;
  classes_t smallest; /* tensor classes with expressions of different sizes: the fewest operators */
  bool levels;        /* progress counts the level's units */
  int64_t level_graphs[TASO_ENUM_MAX_OPS + 1]; /* graphs of each level, all ranks */
  taso_derive_opts_t derive;       /* the derivation search: job bounds, the rule guard */
  int walk_level;                  /* level by level: the level being walked */
  int32_t held[TASO_ENUM_MAX_OPS]; /* the memo expression operator j holds, or -1 */
  int tape_mode;
  taso_fingerprint_t *tape;
  int64_t ntape, tape_cap, tape_at;
  /* the leaf's outputs when it is on the tape (tensor ids -2 - port) */
  taso_fingerprint_t leaf_fp[2];
  bool leaf_shared[2];
  uint8_t *tape_shared; /* a bit per tape fingerprint: its class is shared */
  /* the last level: every class of memo tensors (all ranks) with the
   * fewest operators of its memo expressions. A twin pairs only with graphs
   * built from memo expressions of its outputs' classes, within max_ops in
   * all, so one whose outputs need more builds nothing and is not kept
   * (most of a k=4 run's twins, which took gigabytes) */
  classes_t memo_min;
  bool twin_filter;
  /* level by level, walk 2's records wait in temporary files, a bucket of
   * fingerprints each, so that pairing holds one bucket at a time: a k=4
   * run records tens of millions of graphs */
  bool spill;
  FILE *bucket[SPILL_BUCKETS];
  int64_t nbucket[SPILL_BUCKETS], spilled;
  /* level checkpoints: where (dir NULL: none), where to stop, where it
   * stopped and the operators refused on constants before the resumed level */
  taso_checkpoint_t ckpt;
  int until_level, stopped;
  int64_t refused_before;
} gen_t;

/* A line of the run on rank 0's stdout, shown as it happens in a batch log. */
static void say(const gen_t *c, const char *fmt, ...) {
  if (c->rank != 0) return;
  va_list ap;
  va_start(ap, fmt);
  vprintf(fmt, ap);
  va_end(ap);
  fflush(stdout);
}

static void progress_begin(const gen_t *c, taso_progress_t *p, const char *what, int64_t total) {
  taso_progress_start(p, c->name, c->rank, what, total);
}

/* A tensor's fingerprint and whether its class holds another expression
 * (tid < 0: a port of the leaf on the tape). */
static taso_fingerprint_t tensor_fp(const gen_t *c, int32_t tid) {
  return tid >= 0 ? taso_memo_fp(c->m, tid) : c->leaf_fp[-2 - tid];
}

static bool tensor_shared(const gen_t *c, int32_t tid) {
  return tid >= 0 ? taso_memo_marked(c->m, tid, SHARED) : c->leaf_shared[-2 - tid];
}

static taso_err_t classes_put(classes_t *m, const taso_fingerprint_t *fp, class_t **at);
static taso_err_t spill_open(gen_t *c);
static void spill_close(gen_t *c);
static taso_err_t read_bucket(gen_t *c, int b, taso_grec_t **recs, int64_t *n);
static const class_t *classes_get(const classes_t *m, const taso_fingerprint_t *fp);

/* ---- the walks --------------------------------------------------------- */

/* Makes room for one more item in a growing array. */
static taso_err_t grow(void **items, int64_t n, int64_t *cap, size_t size, const char *what) {
  if (n < *cap) return TASO_OK;
  int64_t c = *cap ? 2 * *cap : 4096;
  void *p = realloc(*items, size * (size_t)c);
  if (!p) return taso_error(TASO_ERR_NOMEM, "%lld %s", (long long)c, what);
  *items = p;
  *cap = c;
  return TASO_OK;
}

static taso_err_t push(void *ctx, const taso_enum_graph_t *g) {
  gen_t *c = ctx;
  int j = g->nops - 1, base = c->ninputs + j;
  const taso_variant_t *v = &c->vars[g->variant[j]];
  taso_node_t node = {.kind = v->kind, .p = v->p, .in = {-1, -1, -1}};
  int32_t in[3];
  taso_tensor_t it[3], ot[2];
  for (int a = 0; a < taso_ops[v->kind].arity; a++) {
    in[a] = c->tid[g->in[j][a]];
    it[a] = *taso_enum_type(c->e, g->type[g->in[j][a]]);
  }
  for (int p = 0; p < taso_ops[v->kind].outputs; p++)
    ot[p] = *taso_enum_type(c->e, g->type[TASO_REF(base, p)]);
  int32_t expr, cone = __builtin_popcount(g->cone[j]), ports = taso_ops[v->kind].outputs;
  c->held[j] = -1;
  if (c->tape_mode != TAPE_OFF && cone == c->job->max_ops) { /* on the tape */
    if (c->tape_mode == TAPE_WRITE) {
      TASO_TRY(taso_memo_eval(c->m, &node, in, it, ot, c->leaf_fp));
      for (int p = 0; p < ports; p++) {
        TASO_TRY(
            grow((void **)&c->tape, c->ntape, &c->tape_cap, sizeof *c->tape, "tape fingerprints"));
        c->tape[c->ntape++] = c->leaf_fp[p];
      }
    } else {
      if (c->tape_at + ports > c->ntape)
        return taso_error(TASO_ERR_ARG, "walk 2 of the last level meets more leaves than walk 1");
      for (int p = 0; p < ports; p++) {
        c->leaf_shared[p] = c->tape_shared[c->tape_at / 8] >> (c->tape_at % 8) & 1;
        c->leaf_fp[p] = c->tape[c->tape_at++];
      }
    }
    c->tid[TASO_REF(base, 0)] = -2;
    c->tid[TASO_REF(base, 1)] = -3;
    return TASO_OK;
  }
  /* a state the walk goes below holds its values (level by level, larger
   * expressions keep none of their own) */
  bool hold = c->levels && g->nops < c->walk_level;
  TASO_TRY(taso_memo_apply(c->m, g->variant[j], &node, in, it, ot, cone, hold, &expr));
  if (hold) c->held[j] = expr;
  c->tid[TASO_REF(base, 0)] = 2 * expr;
  c->tid[TASO_REF(base, 1)] = 2 * expr + 1;
  return TASO_OK;
}

static void pop(void *ctx, const taso_enum_graph_t *g) {
  gen_t *c = ctx;
  int j = g->nops - 1;
  if (c->held[j] >= 0) taso_memo_release(c->m, c->held[j]);
  c->held[j] = -1;
}

static double cpu_seconds(void) {
  return (double)clock() / CLOCKS_PER_SEC;
}

static void tick(gen_t *c) {
  if ((++c->visited & 0xfff) == 0)
    taso_progress_update(&c->progress, c->levels ? taso_enum_level_units(c->e) : c->visited);
}

static taso_err_t visit_count(void *ctx, const taso_enum_graph_t *g) {
  (void)g;
  tick(ctx);
  return TASO_OK;
}

/* Walk 2 skips the leaves that would keep a sink no other expression
 * equals, and those whose outputs would share no operator (the leaf's own
 * output is one of them). */
static bool want(void *ctx, const taso_enum_graph_t *g, int32_t variant, const taso_ref_t *in) {
  gen_t *c = ctx;
  const taso_op_info_t *op = &taso_ops[c->vars[variant].kind];
  unsigned seen = 1u << g->nops; /* the leaf's cone */
  for (int a = 0; a < op->arity; a++)
    if (TASO_REF_NODE(in[a]) >= c->ninputs) seen |= g->cone[TASO_REF_NODE(in[a]) - c->ninputs];
  bool disjoint = op->outputs == 1, kept = false;
  for (int s = 0; s < g->nsinks; s++) {
    if (in[0] == g->sinks[s] || in[1] == g->sinks[s]) continue;
    if (!tensor_shared(c, c->tid[g->sinks[s]])) return false;
    unsigned cone = g->cone[TASO_REF_NODE(g->sinks[s]) - c->ninputs];
    disjoint = disjoint && !(seen & cone);
    seen |= cone;
    kept = true;
  }
  return !(disjoint && kept);
}

typedef struct {
  taso_fingerprint_t fp;
  taso_ref_t ref;
} sink_t;

static int sink_cmp(const void *a, const void *b) {
  const sink_t *x = a, *y = b;
  int c = taso_fingerprint_cmp(&x->fp, &y->fp);
  return c ? c : (x->ref > y->ref) - (x->ref < y->ref);
}

/* Whether no two outputs share an operator (cones[i]: output i's operators). */
static bool outputs_disjoint(int n, const unsigned *cones) {
  unsigned seen = 0;
  for (int i = 0; i < n; i++) {
    if (seen & cones[i]) return false;
    seen |= cones[i];
  }
  return n > 1;
}

/* Whether the outputs form one group under "share an operator". */
static bool outputs_connected(int n, const unsigned *cones) {
  unsigned group = cones[0];
  bool added = true;
  int in = 1;
  uint32_t taken = 1;
  while (added) {
    added = false;
    for (int i = 1; i < n; i++)
      if (!(taken >> i & 1) && (group & cones[i])) {
        group |= cones[i];
        taken |= 1u << i;
        added = true;
        in++;
      }
  }
  return in == n;
}

/* Whether every output's tensor has an equal tensor elsewhere; cones[i]
 * receives output i's operators (cone: the enumerator's cone masks, NULL
 * without operators). */
static bool outputs_shared(const gen_t *c, const unsigned *cone, int nsinks,
                           const taso_ref_t *sinks, unsigned *cones) {
  for (int i = 0; i < nsinks; i++) {
    if (!tensor_shared(c, c->tid[sinks[i]])) return false;
    int j = TASO_REF_NODE(sinks[i]) - c->ninputs;
    cones[i] = j >= 0 ? cone[j] : 0;
  }
  return true;
}

/* The record of a graph, outputs sorted by fingerprint (fps receives
 * them in that order); false when two outputs are equal. */
static bool fill_record(const gen_t *c, int nops, const int32_t *variant, const taso_ref_t (*in)[3],
                        int nsinks, const taso_ref_t *sinks, taso_grec_t *r,
                        taso_fingerprint_t *fps) {
  sink_t s[2 * TASO_ENUM_MAX_OPS + 2];
  for (int i = 0; i < nsinks; i++) {
    s[i].fp = tensor_fp(c, c->tid[sinks[i]]);
    s[i].ref = sinks[i];
  }
  for (int i = 1; i < nsinks; i++) /* a handful: insertion sort */
    for (int j = i; j > 0 && sink_cmp(&s[j - 1], &s[j]) > 0; j--) {
      sink_t x = s[j];
      s[j] = s[j - 1];
      s[j - 1] = x;
    }
  memset(r, 0, sizeof *r);
  for (int i = 0; i < nsinks; i++)
    fps[i] = s[i].fp;
  bool distinct;
  r->fp = taso_fingerprint_combine(fps, nsinks, &distinct);
  r->nops = (int16_t)nops;
  r->nout = (int16_t)nsinks;
  for (int j = 0; j < nops; j++) {
    r->variant[j] = (int16_t)variant[j];
    r->in[j][0] = (int16_t)in[j][0];
    r->in[j][1] = (int16_t)in[j][1];
  }
  for (int i = 0; i < nsinks; i++)
    r->out[i] = (int16_t)s[i].ref;
  return distinct;
}

static taso_err_t add_record(gen_t *c, const taso_grec_t *r) {
  if (c->spill) {
    int b = spill_bucket(&r->fp);
    if (fwrite(r, sizeof *r, 1, c->bucket[b]) != 1)
      return taso_error(TASO_ERR_IO, "a temporary file of graph records (in $TMPDIR or /tmp): %s",
                        strerror(errno));
    c->nbucket[b]++;
    c->spilled++;
    return TASO_OK;
  }
  TASO_TRY(grow((void **)&c->recs, c->nrecs, &c->recs_cap, sizeof *c->recs, "graph records"));
  c->recs[c->nrecs++] = *r;
  return TASO_OK;
}

/* The groups of outputs under "share an operator" (cones[i]: output i's
 * operators). */
static int output_groups(int n, const unsigned *cones) {
  unsigned group[2 * TASO_ENUM_MAX_OPS + 2];
  int ng = 0;
  for (int i = 0; i < n; i++) {
    unsigned merged = cones[i];
    int keep = 0;
    for (int k = 0; k < ng; k++) { /* fold every group it touches into it */
      if (group[k] & merged)
        merged |= group[k];
      else
        group[keep++] = group[k];
    }
    group[keep] = merged;
    ng = keep + 1;
  }
  return ng;
}

/* Whether a graph of nops operators whose outputs form `groups` groups can
 * still become one group within max_ops: each operator joins at most two.
 * Graphs of several groups pair only as built from their parts
 * (disjoint_graphs), so level by level they matter only as prefixes. */
static bool joinable(const gen_t *c, int nops, int groups) {
  return groups - 1 <= c->job->max_ops - nops;
}

/* Level by level, a leaf is visited only if joinable. */
static bool want_joinable(void *ctx, const taso_enum_graph_t *g, int32_t variant,
                          const taso_ref_t *in) {
  gen_t *c = ctx;
  const taso_op_info_t *op = &taso_ops[c->vars[variant].kind];
  unsigned cones[2 * TASO_ENUM_MAX_OPS + 2], leaf = 1u << g->nops;
  int n = 0;
  for (int a = 0; a < op->arity; a++)
    if (TASO_REF_NODE(in[a]) >= c->ninputs) leaf |= g->cone[TASO_REF_NODE(in[a]) - c->ninputs];
  cones[n++] = leaf;
  for (int s = 0; s < g->nsinks; s++)
    if (in[0] != g->sinks[s] && in[1] != g->sinks[s])
      cones[n++] = g->cone[TASO_REF_NODE(g->sinks[s]) - c->ninputs];
  return joinable(c, g->nops + 1, output_groups(n, cones));
}

/* Walk 2 level by level: both. */
static bool want_level(void *ctx, const taso_enum_graph_t *g, int32_t variant,
                       const taso_ref_t *in) {
  return want_joinable(ctx, g, variant, in) && want(ctx, g, variant, in);
}

/* A record of a graph whose outputs all have equal tensors elsewhere and
 * share operators (cone: the enumerator's cone masks, NULL without
 * operators). */
static taso_err_t record(gen_t *c, int nops, const int32_t *variant, const taso_ref_t (*in)[3],
                         const unsigned *cone, int nsinks, const taso_ref_t *sinks) {
  taso_fingerprint_t fps[2 * TASO_ENUM_MAX_OPS + 2];
  unsigned cones[2 * TASO_ENUM_MAX_OPS + 2] = {0};
  if (!outputs_shared(c, cone, nsinks, sinks, cones) || outputs_disjoint(nsinks, cones))
    return TASO_OK;
  taso_grec_t r;
  if (!fill_record(c, nops, variant, in, nsinks, sinks, &r, fps)) {
    c->dup_outputs++;
    return TASO_OK;
  }
  bool parts = true; /* the outputs have memo expressions to build from, within max_ops */
  for (int i = 0, ops = 0; c->twin_filter && i < nsinks && parts; i++) {
    const class_t *k = classes_get(&c->memo_min, &fps[i]);
    ops += k ? k->ops : 0;
    parts = k && ops <= c->job->max_ops;
  }
  if (nsinks > 1 && parts && outputs_connected(nsinks, cones)) {
    TASO_TRY(grow((void **)&c->twins, c->ntwins, &c->twins_cap, sizeof *c->twins, "twins"));
    twin_t *tw = &c->twins[c->ntwins++];
    memset(tw, 0, sizeof *tw);
    tw->fp = r.fp;
    tw->n = nsinks;
    memcpy(tw->out, fps, sizeof *fps * (size_t)nsinks);
    for (int i = 0; i < nsinks; i++) {
      TASO_TRY(grow((void **)&c->outputs, c->noutputs, &c->outputs_cap, sizeof *c->outputs,
                    "connected output fingerprints"));
      c->outputs[c->noutputs++] = fps[i];
    }
  }
  return add_record(c, &r);
}

static taso_err_t visit_record(void *ctx, const taso_enum_graph_t *g) {
  tick(ctx);
  return record(ctx, g->nops, g->variant, g->in, g->cone, g->nsinks, g->sinks);
}

/* Graphs without operators: one or two inputs as outputs (rank 0 adds them). */
static taso_err_t input_graphs(gen_t *c, int64_t *count) {
  *count = 0;
  for (int i = 0; i < c->ninputs; i++)
    for (int j = i; j < c->ninputs; j++) {
      taso_ref_t sinks[2] = {TASO_REF(i, 0), TASO_REF(j, 0)};
      int n = i == j ? 1 : 2;
      ++*count;
      if (c->rank == 0) TASO_TRY(record(c, 0, NULL, NULL, NULL, n, sinks));
    }
  return TASO_OK;
}

/* ---- exchanges --------------------------------------------------------- */

/* The rank that groups the items with this fingerprint. */
static int owner(const taso_fingerprint_t *fp, int size) {
  return (int)(fp->h[0] % (uint64_t)size);
}

/* Sends n items of size bytes (sorted by destination, count[d] for rank d)
 * with one MPI_Alltoallv; *recv is malloc'd with *nrecv items, in the order
 * of their source ranks (from[d] from rank d, if from is not NULL). */
static taso_err_t alltoall(gen_t *c, const void *send, const int64_t *count, size_t size,
                           void **recv, int64_t *nrecv, int64_t *bytes_sent, int64_t *from) {
  int n = c->size;
  int *sc = calloc((size_t)n, sizeof *sc), *rc = calloc((size_t)n, sizeof *rc);
  int *sd = calloc((size_t)n, sizeof *sd), *rd = calloc((size_t)n, sizeof *rd);
  int64_t *rc64 = calloc((size_t)n, sizeof *rc64);
  taso_err_t err =
      (sc && rc && sd && rd && rc64) ? TASO_OK : taso_error(TASO_ERR_NOMEM, "exchange");
  *recv = NULL;
  *nrecv = 0;
  if (err == TASO_OK) MPI_Alltoall(count, 1, MPI_INT64_T, rc64, 1, MPI_INT64_T, c->comm);
  if (err == TASO_OK && from) memcpy(from, rc64, sizeof *from * (size_t)n);
  int64_t stotal = 0, rtotal = 0;
  for (int d = 0; d < n && err == TASO_OK; d++) {
    if ((stotal + count[d]) * (int64_t)size > INT32_MAX ||
        (rtotal + rc64[d]) * (int64_t)size > INT32_MAX)
      err = taso_error(TASO_ERR_LIMIT, "exchange of more than 2 GiB per rank");
    sd[d] = (int)(stotal * (int64_t)size);
    sc[d] = (int)(count[d] * (int64_t)size);
    rd[d] = (int)(rtotal * (int64_t)size);
    rc[d] = (int)(rc64[d] * (int64_t)size);
    stotal += count[d];
    rtotal += rc64[d];
  }
  err = taso_agree(c->comm, err);
  if (err == TASO_OK && (*recv = malloc(size * (size_t)(rtotal + 1))) == NULL)
    err = taso_error(TASO_ERR_NOMEM, "exchange of %lld items", (long long)rtotal);
  err = taso_agree(c->comm, err);
  if (err == TASO_OK) {
    MPI_Alltoallv(send, sc, sd, MPI_BYTE, *recv, rc, rd, MPI_BYTE, c->comm);
    *nrecv = rtotal;
    *bytes_sent = stotal * (int64_t)size;
  }
  free(sc);
  free(rc);
  free(sd);
  free(rd);
  free(rc64);
  return err;
}

/* Collective. Sends every item (size bytes, starting with a
 * taso_fingerprint_t) to the owner of its fingerprint. */
static taso_err_t exchange_by_owner(gen_t *c, const void *items, int64_t n, size_t size,
                                    void **recv, int64_t *nrecv, int64_t *bytes_sent) {
  int ranks = c->size;
  int64_t *count = calloc((size_t)ranks, sizeof *count),
          *pos = calloc((size_t)ranks + 1, sizeof *pos);
  char *sorted = malloc(size * (size_t)(n + 1));
  const char *item = items;
  taso_err_t err = (count && pos && sorted) ? TASO_OK : taso_error(TASO_ERR_NOMEM, "exchange");
  for (int64_t i = 0; err == TASO_OK && i < n; i++)
    count[owner((const taso_fingerprint_t *)(item + (size_t)i * size), ranks)]++;
  for (int d = 0; err == TASO_OK && d < ranks; d++)
    pos[d + 1] = pos[d] + count[d];
  for (int64_t i = 0; err == TASO_OK && i < n; i++) {
    int d = owner((const taso_fingerprint_t *)(item + (size_t)i * size), ranks);
    memcpy(sorted + (size_t)pos[d]++ * size, item + (size_t)i * size, size);
  }
  *recv = NULL;
  *nrecv = 0;
  err = taso_agree(c->comm, err);
  if (err == TASO_OK) err = alltoall(c, sorted, count, size, recv, nrecv, bytes_sent, NULL);
  free(count);
  free(pos);
  free(sorted);
  return err;
}

typedef struct {
  taso_fingerprint_t fp;
  uint64_t shash;
  int64_t ops; /* level by level: the expression's operators */
} tensor_rec_t;

/* The operators of expression e (seen: the n met so far, up to
 * TASO_ENUM_MAX_OPS); returns the new n. */
static int expr_ops(const taso_memo_t *m, int32_t e, int32_t *seen, int n) {
  int32_t in[3];
  if (taso_memo_expr(m, e, in) < 0) return n; /* an input */
  for (int i = 0; i < n; i++)
    if (seen[i] == e) return n;
  if (n == TASO_ENUM_MAX_OPS) return n + 1; /* not from an enumeration; never smaller */
  seen[n++] = e;
  for (int a = 0; a < 3 && n <= TASO_ENUM_MAX_OPS; a++)
    if (in[a] >= 0) n = expr_ops(m, in[a] / 2, seen, n);
  return n;
}

static int64_t tensor_ops(const gen_t *c, int32_t tid) {
  int32_t seen[TASO_ENUM_MAX_OPS];
  return c->levels ? expr_ops(c->m, tid / 2, seen, 0) : 0;
}

static int tensor_rec_cmp(const void *a, const void *b) {
  const tensor_rec_t *x = a, *y = b;
  int c = taso_fingerprint_cmp(&x->fp, &y->fp);
  return c ? c : (x->shash > y->shash) - (x->shash < y->shash);
}

/* Fingerprints, or records that start with one (twin_t), by fingerprint. */
static int fp_cmp(const void *a, const void *b) {
  return taso_fingerprint_cmp(a, b);
}

/* Sorts and drops repeats (equal under cmp); returns the new count. */
static int64_t dedup(void *items, int64_t n, size_t size, int (*cmp)(const void *, const void *)) {
  char *v = items;
  int64_t k = 0;
  if (n > 1) qsort(v, (size_t)n, size, cmp);
  for (int64_t i = 0; i < n; i++)
    if (!k || cmp(v + (size_t)(k - 1) * size, v + (size_t)i * size))
      memmove(v + (size_t)k++ * size, v + (size_t)i * size, size);
  return k;
}

/* Collective: every rank's n items of size bytes, concatenated in rank
 * order on every rank (*all malloc'd, *total items). */
static taso_err_t allgather(gen_t *c, const void *mine, int64_t n, size_t size, void **all,
                            int64_t *total) {
  int ranks = c->size;
  int *counts = calloc((size_t)ranks, sizeof *counts),
      *displs = calloc((size_t)ranks, sizeof *displs);
  taso_err_t err = counts && displs ? TASO_OK : taso_error(TASO_ERR_NOMEM, "allgather");
  if (n * (int64_t)size > INT32_MAX)
    err = taso_error(TASO_ERR_LIMIT, "allgather of more than 2 GiB");
  err = taso_agree(c->comm, err);
  int64_t bytes = 0;
  *all = NULL;
  *total = 0;
  if (err == TASO_OK) {
    int mybytes = (int)(n * (int64_t)size);
    MPI_Allgather(&mybytes, 1, MPI_INT, counts, 1, MPI_INT, c->comm);
    for (int d = 0; d < ranks; d++) {
      if (bytes > INT32_MAX - counts[d])
        err = taso_error(TASO_ERR_LIMIT, "allgather of more than 2 GiB");
      displs[d] = (int)bytes;
      bytes += counts[d];
    }
    if (err == TASO_OK && !(*all = malloc((size_t)bytes + 1)))
      err = taso_error(TASO_ERR_NOMEM, "allgather");
    err = taso_agree(c->comm, err);
  }
  if (err == TASO_OK) {
    MPI_Allgatherv(mine, counts[c->rank], MPI_BYTE, *all, counts, displs, MPI_BYTE, c->comm);
    *total = bytes / (int64_t)size;
  }
  free(counts);
  free(displs);
  return err;
}

/* Collective: every rank's fingerprints (mine: n of them, sorted and
 * deduplicated here) as one set on every rank. */
static taso_err_t fpset_gather(gen_t *c, taso_fingerprint_t *mine, int64_t n, fpset_t *set) {
  int64_t k = dedup(mine, n, sizeof *mine, fp_cmp), total = 0;
  taso_fingerprint_t *all = NULL;
  memset(set, 0, sizeof *set);
  taso_err_t err = allgather(c, mine, k, sizeof *mine, (void **)&all, &total);
  if (err == TASO_OK) {
    uint64_t size = 2;
    while (size < 2 * (uint64_t)total + 2)
      size *= 2;
    set->slot = calloc(size, sizeof *set->slot);
    set->mask = size - 1;
    set->bits = calloc(size / 8 + 1, sizeof *set->bits); /* 8 * size bits */
    set->bits_mask = 8 * size - 1;
    if (!set->slot || !set->bits)
      err = taso_error(TASO_ERR_NOMEM, "a set of %lld fingerprints", (long long)total);
    for (int64_t i = 0; err == TASO_OK && i < total; i++) {
      uint64_t b = all[i].h[1] & set->bits_mask;
      set->bits[b / 64] |= 1ull << (b % 64);
      uint64_t h = all[i].h[0] & set->mask;
      while ((set->slot[h].h[0] || set->slot[h].h[1]) &&
             taso_fingerprint_cmp(&set->slot[h], &all[i]))
        h = (h + 1) & set->mask;
      set->n += !set->slot[h].h[0] && !set->slot[h].h[1];
      set->slot[h] = all[i];
    }
  }
  free(all);
  return taso_agree(c->comm, err);
}

/* Sets a mark on every tensor of the memo whose fingerprint is in the set. */
static void mark_tensors(gen_t *c, const fpset_t *set, int mark) {
  int64_t nexpr = taso_memo_count(c->m);
  for (int64_t e = 0; e < nexpr; e++)
    for (int p = 0; p < taso_memo_ports(c->m, (int32_t)e); p++) {
      int32_t tid = (int32_t)(2 * e + p);
      taso_fingerprint_t fp = taso_memo_fp(c->m, tid);
      taso_memo_mark(c->m, tid, mark, fpset_has(set, &fp));
    }
}

/* Collective, level by level: every rank learns the tensor classes whose
 * expressions differ in size (the owners' n of them), with their fewest
 * operators (not_smallest asks). */
static taso_err_t learn_smallest(gen_t *c, const class_t *mine, int64_t n) {
  class_t *all = NULL;
  int64_t total = 0;
  free(c->smallest.slot);
  memset(&c->smallest, 0, sizeof c->smallest);
  taso_err_t err = allgather(c, mine, n, sizeof *mine, (void **)&all, &total);
  for (int64_t i = 0; i < total && err == TASO_OK; i++) {
    class_t *k;
    err = classes_put(&c->smallest, &all[i].fp, &k);
    if (err == TASO_OK) k->ops = all[i].ops;
  }
  free(all);
  return taso_agree(c->comm, err);
}

/* Collective: the tape's fingerprints, each to its owner, in rounds of a
 * bounded size (the exchange copies a round, not the tape). *recv: this
 * rank's, sorted, allocated once at their exact count. */
static taso_err_t exchange_tape(gen_t *c, taso_fingerprint_t **recv, int64_t *nrecv,
                                int64_t *volume) {
  enum { ROUND = 1 << 22 }; /* fingerprints per rank and round: 64 MiB */
  int ranks = c->size;
  int64_t *count = calloc((size_t)ranks + 1, sizeof *count),
          rounds = (c->ntape + ROUND - 1) / ROUND;
  taso_err_t err = count ? TASO_OK : taso_error(TASO_ERR_NOMEM, "tape exchange");
  *recv = NULL;
  *nrecv = 0;
  for (int64_t i = 0; err == TASO_OK && i < c->ntape; i++)
    count[owner(&c->tape[i], ranks)]++;
  count[ranks] = rounds;
  err = taso_agree(c->comm, err);
  if (err == TASO_OK) {
    MPI_Allreduce(MPI_IN_PLACE, count, ranks, MPI_INT64_T, MPI_SUM, c->comm);
    MPI_Allreduce(MPI_IN_PLACE, count + ranks, 1, MPI_INT64_T, MPI_MAX, c->comm);
    rounds = count[ranks];
    if (!(*recv = malloc(sizeof **recv * (size_t)(count[c->rank] + 1))))
      err = taso_error(TASO_ERR_NOMEM, "%lld tape fingerprints", (long long)count[c->rank]);
  }
  err = taso_agree(c->comm, err);
  for (int64_t r = 0; err == TASO_OK && r < rounds; r++) {
    int64_t lo = r * ROUND < c->ntape ? r * ROUND : c->ntape,
            hi = lo + ROUND < c->ntape ? lo + ROUND : c->ntape;
    int64_t n = 0, vol = 0;
    taso_fingerprint_t *got = NULL;
    err = exchange_by_owner(c, c->tape + lo, hi - lo, sizeof *c->tape, (void **)&got, &n, &vol);
    if (err == TASO_OK && *nrecv + n > count[c->rank])
      err = taso_error(TASO_ERR_ARG, "tape exchange: more fingerprints than counted");
    if (err == TASO_OK) memcpy(*recv + *nrecv, got, sizeof *got * (size_t)n);
    *nrecv += err == TASO_OK ? n : 0;
    *volume += vol;
    free(got);
    err = taso_agree(c->comm, err);
  }
  if (err == TASO_OK && *nrecv > 1) qsort(*recv, (size_t)*nrecv, sizeof **recv, fp_cmp);
  free(count);
  return err;
}

/* Collective: every rank's n classes (fingerprint, representative and
 * operators) put into table on every rank. */
static taso_err_t gather_classes(gen_t *c, const class_t *mine, int64_t n, classes_t *table) {
  class_t *all = NULL;
  int64_t total = 0;
  taso_err_t err = allgather(c, mine, n, sizeof *mine, (void **)&all, &total);
  for (int64_t i = 0; i < total && err == TASO_OK; i++) {
    class_t *k;
    err = classes_put(table, &all[i].fp, &k);
    if (err == TASO_OK) {
      k->rep = all[i].rep;
      k->ops = all[i].ops;
    }
  }
  free(all);
  return taso_agree(c->comm, err);
}

/* Collective: the classes of memo tensors that the owners found (n of
 * them, with their fewest operators), on every rank, for the twin filter. */
static taso_err_t learn_memo_min(gen_t *c, const class_t *mine, int64_t n) {
  taso_err_t err = gather_classes(c, mine, n, &c->memo_min);
  c->twin_filter = err == TASO_OK;
  return err;
}

/* Collective: whether each tape fingerprint's class is shared, asked of its
 * owner (sorted: the owner's shared classes), into c->tape_shared, in
 * rounds like exchange_tape. */
static taso_err_t answer_tape(gen_t *c, const taso_fingerprint_t *sorted, int64_t nsorted,
                              int64_t *volume) {
  enum { ROUND = 1 << 22 };
  int ranks = c->size;
  int64_t rounds = (c->ntape + ROUND - 1) / ROUND;
  int64_t *count = calloc((size_t)ranks + 1, sizeof *count),
          *from = calloc((size_t)ranks + 1, sizeof *from);
  int64_t *pos = calloc((size_t)ranks + 1, sizeof *pos);
  int64_t *perm = malloc(sizeof *perm * (size_t)(ROUND + 1));
  taso_fingerprint_t *send = malloc(sizeof *send * (size_t)(ROUND + 1));
  free(c->tape_shared);
  c->tape_shared = calloc((size_t)(c->ntape / 8 + 1), 1);
  taso_err_t err = count && from && pos && perm && send && c->tape_shared
                       ? TASO_OK
                       : taso_error(TASO_ERR_NOMEM, "tape answers");
  err = taso_agree(c->comm, err);
  if (err == TASO_OK) MPI_Allreduce(MPI_IN_PLACE, &rounds, 1, MPI_INT64_T, MPI_MAX, c->comm);
  for (int64_t r = 0; err == TASO_OK && r < rounds; r++) {
    int64_t lo = r * ROUND < c->ntape ? r * ROUND : c->ntape,
            hi = lo + ROUND < c->ntape ? lo + ROUND : c->ntape;
    memset(count, 0, sizeof *count * (size_t)ranks);
    for (int64_t i = lo; i < hi; i++)
      count[owner(&c->tape[i], ranks)]++;
    pos[0] = 0;
    for (int d = 0; d < ranks; d++)
      pos[d + 1] = pos[d] + count[d];
    for (int64_t i = lo; i < hi; i++) {
      int64_t at = pos[owner(&c->tape[i], ranks)]++;
      send[at] = c->tape[i];
      perm[at] = i;
    }
    taso_fingerprint_t *asked = NULL;
    uint8_t *answer = NULL, *got = NULL;
    int64_t nasked = 0, ngot = 0, vol = 0;
    err = alltoall(c, send, count, sizeof *send, (void **)&asked, &nasked, &vol, from);
    *volume += vol;
    if (err == TASO_OK && !(answer = malloc((size_t)nasked + 1)))
      err = taso_error(TASO_ERR_NOMEM, "tape answers");
    for (int64_t i = 0; err == TASO_OK && i < nasked; i++)
      answer[i] = nsorted > 0 && /* a rank may own no shared class (64 ranks, a small job) */
                  bsearch(&asked[i], sorted, (size_t)nsorted, sizeof *sorted, fp_cmp) != NULL;
    err = taso_agree(c->comm, err);
    if (err == TASO_OK) err = alltoall(c, answer, from, 1, (void **)&got, &ngot, &vol, NULL);
    if (err == TASO_OK && ngot != hi - lo)
      err = taso_error(TASO_ERR_ARG, "tape answers: %lld for %lld", (long long)ngot,
                       (long long)(hi - lo));
    for (int64_t i = 0; err == TASO_OK && i < ngot; i++)
      if (got[i]) c->tape_shared[perm[i] / 8] |= (uint8_t)(1u << (perm[i] % 8));
    free(asked);
    free(answer);
    free(got);
    err = taso_agree(c->comm, err);
  }
  free(count);
  free(from);
  free(pos);
  free(perm);
  free(send);
  return err;
}

/* Marks every tensor of the memo whose class holds two or more different
 * expressions, across all ranks. Level by level, every rank also learns
 * the classes whose expressions differ in size (below the last level), and
 * the last level's tape joins: each of its expressions is a different one
 * (it occurs in one graph), and whether each one's class is shared goes
 * to c->tape_shared. */
static taso_err_t shared_tensors(gen_t *c, bool last, int64_t *nshared, int64_t *volume) {
  int64_t nexpr = taso_memo_count(c->m), nsend = 0;
  tensor_rec_t *send = malloc(sizeof *send * (size_t)(2 * nexpr + 1));
  taso_err_t err = send ? TASO_OK : taso_error(TASO_ERR_NOMEM, "tensor classes");
  for (int64_t e = 0; err == TASO_OK && e < nexpr; e++)
    for (int p = 0; p < taso_memo_ports(c->m, (int32_t)e); p++) {
      int32_t tid = (int32_t)(2 * e + p);
      send[nsend++] =
          (tensor_rec_t){taso_memo_fp(c->m, tid), taso_memo_shash(c->m, tid), tensor_ops(c, tid)};
    }
  tensor_rec_t *recv = NULL;
  taso_fingerprint_t *tape = NULL;
  int64_t nrecv = 0, ntape = 0;
  err = taso_agree(c->comm, err);
  if (err == TASO_OK)
    err = exchange_by_owner(c, send, nsend, sizeof *send, (void **)&recv, &nrecv, volume);
  free(send);
  send = NULL;
  if (err == TASO_OK && last) err = exchange_tape(c, &tape, &ntape, volume); /* kept for walk 2 */
  /* classes with two different expressions; of different sizes */
  taso_fingerprint_t *mine = NULL, *mine_m = NULL; /* shared classes; those with memo tensors */
  class_t *sizes = NULL;
  int64_t nmine = 0, nsizes = 0, mine_cap = 0, sizes_cap = 0, nmine_m = 0, mine_m_cap = 0;
  class_t *mins = NULL; /* the last level: classes of memo tensors, their fewest operators */
  int64_t nmins = 0, mins_cap = 0;
  if (err == TASO_OK) {
    qsort(recv, (size_t)nrecv, sizeof *recv, tensor_rec_cmp);
    for (int64_t i = 0, f = 0; err == TASO_OK && (i < nrecv || f < ntape);) {
      const taso_fingerprint_t *fp =
          f == ntape || (i < nrecv && taso_fingerprint_cmp(&recv[i].fp, &tape[f]) <= 0)
              ? &recv[i].fp
              : &tape[f];
      taso_fingerprint_t at = *fp;
      int64_t distinct = 0, lo = INT64_MAX, hi = -1;
      for (int64_t j = i; i < nrecv && !taso_fingerprint_cmp(&recv[i].fp, &at); i++) {
        distinct += i == j || recv[i].shash != recv[i - 1].shash;
        lo = recv[i].ops < lo ? recv[i].ops : lo;
        hi = recv[i].ops > hi ? recv[i].ops : hi;
      }
      for (; f < ntape && !taso_fingerprint_cmp(&tape[f], &at); f++)
        distinct++;
      if (distinct > 1) {
        err = grow((void **)&mine, nmine, &mine_cap, sizeof *mine, "shared tensor classes");
        if (err == TASO_OK) mine[nmine++] = at;
        if (err == TASO_OK && hi >= 0)
          err =
              grow((void **)&mine_m, nmine_m, &mine_m_cap, sizeof *mine_m, "shared tensor classes");
        if (err == TASO_OK && hi >= 0) mine_m[nmine_m++] = at;
      }
      if (err == TASO_OK && last && hi >= 0) {
        err = grow((void **)&mins, nmins, &mins_cap, sizeof *mins, "classes of memo tensors");
        if (err == TASO_OK) mins[nmins++] = (class_t){.fp = at, .ops = (int32_t)lo};
      }
      if (err == TASO_OK && !last && c->levels && hi > lo) {
        err = grow((void **)&sizes, nsizes, &sizes_cap, sizeof *sizes,
                   "tensor classes of several sizes");
        if (err == TASO_OK) sizes[nsizes++] = (class_t){.fp = at, .ops = (int32_t)lo};
      }
    }
  }
  free(recv);
  free(tape);
  err = taso_agree(c->comm, err);
  /* the last level keeps the earlier levels' table: both of its walks must
   * cut the same states */
  if (err == TASO_OK && c->levels && !last) err = learn_smallest(c, sizes, nsizes);
  free(sizes);
  /* everyone learns every shared class of memo tensors; the tape asks */
  fpset_t shared = {0};
  int64_t total = nmine;
  err = taso_agree(c->comm, err);
  if (err == TASO_OK) MPI_Allreduce(MPI_IN_PLACE, &total, 1, MPI_INT64_T, MPI_SUM, c->comm);
  if (err == TASO_OK && last) err = answer_tape(c, mine, nmine, volume);
  free(mine);
  if (err == TASO_OK) err = fpset_gather(c, mine_m, nmine_m, &shared);
  if (err == TASO_OK) mark_tensors(c, &shared, SHARED);
  if (err == TASO_OK && last) err = learn_memo_min(c, mins, nmins);
  *nshared = total;
  free(shared.slot);
  free(shared.bits);
  free(mine_m);
  free(mins);
  return err;
}

/* ---- graphs of op-disjoint outputs, from their parts -------------------- */

/* Adds tensor tid's expression to a part (operators once each, inputs
 * first); returns its ref. exprs[j]: the memo expression of operator j. */
static int16_t part_add(const gen_t *c, part_t *p, int32_t *exprs, int32_t tid) {
  int32_t e = tid / 2, in[3];
  int32_t v = taso_memo_expr(c->m, e, in);
  if (v < 0) return (int16_t)TASO_REF(in[0], 0);
  for (int j = 0; j < p->nops; j++)
    if (exprs[j] == e) return (int16_t)TASO_REF(c->ninputs + j, tid % 2);
  int16_t refs[2] = {-1, -1};
  for (int a = 0; a < taso_ops[c->vars[v].kind].arity; a++)
    refs[a] = part_add(c, p, exprs, in[a]);
  int j = p->nops++;
  exprs[j] = e;
  p->variant[j] = (int16_t)v;
  p->in[j][0] = refs[0];
  p->in[j][1] = refs[1];
  p->op[j] = taso_memo_shash(c->m, 2 * e);
  return (int16_t)TASO_REF(c->ninputs + j, tid % 2);
}

/* Whether the part has one sink, its output: a split port nothing in it
 * consumes would be a second output of its graph. */
static bool part_single(const gen_t *c, const part_t *p) {
  for (int j = 0; j < p->nops; j++) {
    if (taso_ops[c->vars[p->variant[j]].kind].outputs < 2) continue;
    for (int port = 0; port < 2; port++) {
      int16_t ref = (int16_t)TASO_REF(c->ninputs + j, port);
      bool used = p->out == ref;
      for (int k = 0; k < p->nops && !used; k++)
        used = p->in[k][0] == ref || p->in[k][1] == ref;
      if (!used) return false;
    }
  }
  return true;
}

static int part_cmp(const void *a, const void *b) {
  const part_t *x = a, *y = b;
  int c = taso_fingerprint_cmp(&x->fp, &y->fp);
  return c ? c : (x->shash > y->shash) - (x->shash < y->shash);
}

/* Collective: every expression of every twin output on every rank, sorted
 * by fingerprint. */
static taso_err_t gather_parts(gen_t *c, part_t **all, int64_t *nall) {
  int64_t nexpr = taso_memo_count(c->m), n = 0, cap = 0;
  part_t *mine = NULL;
  taso_err_t err = TASO_OK;
  for (int64_t e = 0; e < nexpr && err == TASO_OK; e++)
    for (int p = 0; p < taso_memo_ports(c->m, (int32_t)e) && err == TASO_OK; p++) {
      int32_t tid = (int32_t)(2 * e + p), exprs[TASO_ENUM_MAX_OPS];
      if (!taso_memo_marked(c->m, tid, TWIN_OUTPUT)) continue;
      err = grow((void **)&mine, n, &cap, sizeof *mine, "twin output expressions");
      if (err != TASO_OK) break;
      part_t *q = &mine[n++];
      memset(q, 0, sizeof *q);
      q->fp = taso_memo_fp(c->m, tid);
      q->shash = taso_memo_shash(c->m, tid);
      q->out = part_add(c, q, exprs, tid);
      n -= !part_single(c, q);
    }
  err = taso_agree(c->comm, err);
  if (err == TASO_OK) n = dedup(mine, n, sizeof *mine, part_cmp);
  if (err == TASO_OK) err = allgather(c, mine, n, sizeof *mine, (void **)all, nall);
  if (err == TASO_OK) *nall = dedup(*all, *nall, sizeof **all, part_cmp);
  free(mine);
  return err;
}

typedef struct {
  gen_t *c;
  const twin_t *tw;
  const part_t *parts;
  int64_t lo[2 * TASO_ENUM_MAX_OPS], hi[2 * TASO_ENUM_MAX_OPS]; /* each output's parts */
  const part_t *pick[2 * TASO_ENUM_MAX_OPS];
  int64_t built;
} builder_t;

/* The record of the picked parts: their operators side by side. */
static taso_err_t emit_disjoint(builder_t *b) {
  gen_t *c = b->c;
  taso_grec_t r;
  memset(&r, 0, sizeof r);
  r.fp = b->tw->fp;
  r.nout = (int16_t)b->tw->n;
  for (int o = 0; o < b->tw->n; o++) {
    const part_t *q = b->pick[o];
    int off = 2 * r.nops; /* shifts an operator ref by r.nops operators */
#define SHIFT(ref) ((int16_t)((ref) < 0 || TASO_REF_NODE(ref) < c->ninputs ? (ref) : (ref) + off))
    for (int j = 0; j < q->nops; j++) {
      r.variant[r.nops + j] = q->variant[j];
      r.in[r.nops + j][0] = SHIFT(q->in[j][0]);
      r.in[r.nops + j][1] = SHIFT(q->in[j][1]);
    }
    r.out[o] = SHIFT(q->out);
#undef SHIFT
    r.nops = (int16_t)(r.nops + q->nops);
  }
  TASO_TRY(add_record(c, &r));
  b->built++;
  return TASO_OK;
}

/* Picks a part for output o and the rest: no operator twice, at most
 * max_ops in all, inputs only all together (a graph with operators has no
 * input among its outputs) and at most two of them. */
static taso_err_t pick(builder_t *b, int o, int ops) {
  if (o == b->tw->n) return emit_disjoint(b);
  for (int64_t i = b->lo[o]; i < b->hi[o]; i++) {
    const part_t *q = &b->parts[i];
    bool inputs = o > 0 ? b->pick[0]->nops == 0 : q->nops == 0;
    if ((q->nops == 0) != inputs || (inputs && b->tw->n > 2) || ops + q->nops > b->c->job->max_ops)
      continue;
    bool clash = false;
    for (int k = 0; k < o && !clash; k++) {
      clash = b->pick[k]->shash == q->shash;
      for (int x = 0; x < q->nops && !clash; x++)
        for (int y = 0; y < b->pick[k]->nops && !clash; y++)
          clash = q->op[x] == b->pick[k]->op[y];
    }
    if (clash) continue;
    b->pick[o] = q;
    TASO_TRY(pick(b, o + 1, ops + q->nops));
  }
  return TASO_OK;
}

/* After walk 2, collective: the twins go to their owners, every rank learns
 * every twin output's expressions, and each owner builds the graphs of
 * op-disjoint outputs of its twins (into c->recs). */
static taso_err_t disjoint_graphs(gen_t *c, int64_t *built, int64_t *volume) {
  fpset_t outputs = {0};
  twin_t *tw = NULL;
  part_t *parts = NULL;
  int64_t ntw = 0, nparts = 0;
  c->ntwins = dedup(c->twins, c->ntwins, sizeof *c->twins, fp_cmp);
  taso_err_t err =
      exchange_by_owner(c, c->twins, c->ntwins, sizeof *c->twins, (void **)&tw, &ntw, volume);
  free(c->twins);
  c->twins = NULL;
  if (err == TASO_OK) err = fpset_gather(c, c->outputs, c->noutputs, &outputs);
  if (err == TASO_OK) mark_tensors(c, &outputs, TWIN_OUTPUT);
  free(outputs.slot);
  free(outputs.bits);
  free(c->outputs);
  c->outputs = NULL;
  if (err == TASO_OK) err = gather_parts(c, &parts, &nparts);
  builder_t b = {.c = c, .parts = parts};
  if (err == TASO_OK) ntw = dedup(tw, ntw, sizeof *tw, fp_cmp);
  for (int64_t i = 0; i < ntw && err == TASO_OK; i++) {
    b.tw = &tw[i];
    for (int o = 0; o < tw[i].n; o++) { /* the parts with this output's fingerprint */
      int64_t lo = 0, hi = nparts;
      while (lo < hi) {
        int64_t mid = (lo + hi) / 2;
        if (taso_fingerprint_cmp(&parts[mid].fp, &tw[i].out[o]) < 0)
          lo = mid + 1;
        else
          hi = mid;
      }
      b.lo[o] = lo;
      for (hi = lo; hi < nparts && !taso_fingerprint_cmp(&parts[hi].fp, &tw[i].out[o]);)
        hi++;
      b.hi[o] = hi;
    }
    err = pick(&b, 0, 0);
  }
  *built = b.built;
  free(tw);
  free(parts);
  return taso_agree(c->comm, err);
}

/* ---- pairing on the owner ---------------------------------------------- */

/* Lines of text, owned. */
typedef struct {
  char **v;
  int64_t n, cap;
} lines_t;

typedef struct {
  int64_t classes, pairs, common, independent;
  lines_t keys;   /* "PATTERN\tSRC => DST" of the surviving candidates */
  lines_t pruned; /* "PATTERN\tREASON\tSRC => DST" of the pruned ones */
} pairing_t;

static taso_err_t add_key(lines_t *p, char *key) {
  if (p->n == p->cap) {
    int64_t cap = p->cap ? 2 * p->cap : 256;
    char **k = realloc(p->v, sizeof *k * (size_t)cap);
    if (!k) {
      free(key);
      return taso_error(TASO_ERR_NOMEM, "candidate texts");
    }
    p->v = k;
    p->cap = cap;
  }
  p->v[p->n++] = key;
  return TASO_OK;
}

static void lines_free(lines_t *p) {
  for (int64_t i = 0; i < p->n; i++)
    free(p->v[i]);
  free(p->v);
  memset(p, 0, sizeof *p);
}

typedef struct {
  taso_graph_t g;
  taso_tensor_t *t; /* g's types */
  int ops;
} member_t;

/* The graphs of one class of records (m: n of them, taso_graph_init'd)
 * and the representative: the smallest graph by operators, then in the
 * graphs' canonical order, so any rank count picks the same. */
static taso_err_t class_members(const gen_t *c, const taso_grec_t *r, int64_t n, member_t *m,
                                int64_t *rep) {
  taso_err_t err = TASO_OK;
  *rep = 0;
  for (int64_t i = 0; i < n; i++)
    taso_graph_init(&m[i].g);
  for (int64_t i = 0; i < n && err == TASO_OK; i++) {
    err = taso_grec_graph(&r[i], c->vars, c->ninputs, &m[i].g);
    m[i].ops = taso_graph_ops(&m[i].g);
    if (err == TASO_OK && i > 0 &&
        (m[i].ops < m[*rep].ops ||
         (m[i].ops == m[*rep].ops && taso_graph_compare(&m[i].g, &m[*rep].g) < 0)))
      *rep = i;
  }
  return err;
}

/* "PATTERN\t[REASON\t]SRC => DST": the canonical form at any shapes, then
 * the pair as found (outputs aligned by fingerprint); reason < 0: none. */
static taso_err_t pair_line(const taso_inputs_t *in, const taso_graph_t *src,
                            const taso_graph_t *dst, int reason, lines_t *out) {
  char *pattern = NULL, *key = NULL;
  int ls = taso_graph_format(src, in, NULL, 0), ld = taso_graph_format(dst, in, NULL, 0);
  taso_err_t err = taso_cand_key(in, src, dst, true, &pattern);
  if (err == TASO_OK && !(key = malloc(strlen(pattern) + (size_t)(ls + ld) + 16)))
    err = taso_error(TASO_ERR_NOMEM, "candidate text");
  if (err == TASO_OK) {
    char *at = key + sprintf(key, "%s\t", pattern);
    if (reason >= 0) at += sprintf(at, "%d\t", reason);
    at += taso_graph_format(src, in, at, ls + 1);
    at += sprintf(at, " => ");
    taso_graph_format(dst, in, at, ld + 1);
    err = add_key(out, key);
  }
  free(pattern);
  return err;
}

/* Pairs one class of records with equal fingerprints. */
static taso_err_t pair_class(gen_t *c, const taso_grec_t *r, int64_t n, pairing_t *out) {
  const taso_inputs_t *in = &c->job->inputs;
  member_t *m = calloc((size_t)n, sizeof *m);
  if (!m) return taso_error(TASO_ERR_NOMEM, "a class of %lld graphs", (long long)n);
  int64_t rep;
  taso_err_t err = class_members(c, r, n, m, &rep);
  /* the types, for the common-subgraph test at the inputs' shapes */
  for (int64_t i = 0; i < n && err == TASO_OK; i++) {
    if (!(m[i].t = malloc(sizeof *m[i].t * (size_t)(2 * m[i].g.nnodes + 1))))
      err = taso_error(TASO_ERR_NOMEM, "graph types");
    else
      err = taso_graph_infer(&m[i].g, in, m[i].t);
  }
  out->classes++;
  for (int64_t i = 0; i < n && err == TASO_OK; i++) {
    if (i == rep) continue;
    bool common = taso_cand_common(&m[i].g, m[i].t, &m[rep].g, m[rep].t);
    bool independent = !common && taso_cand_independent(&m[i].g, &m[rep].g);
    out->pairs++;
    out->common += common;
    out->independent += independent;
    /* pruned pairs are recorded too, for the completeness check (taso-derive) */
    if (common || independent)
      err = pair_line(in, &m[i].g, &m[rep].g, common ? TASO_PRUNED_COMMON : TASO_PRUNED_INDEPENDENT,
                      &out->pruned);
    else
      err = pair_line(in, &m[i].g, &m[rep].g, -1, &out->keys);
  }
  for (int64_t i = 0; i < n; i++) {
    taso_graph_free(&m[i].g);
    free(m[i].t);
  }
  free(m);
  return err;
}

static taso_err_t pair_all(gen_t *c, taso_grec_t *recs, int64_t n, pairing_t *out) {
  if (n > 1) qsort(recs, (size_t)n, sizeof *recs, taso_grec_cmp);
  for (int64_t i = 0; i < n;) {
    int64_t j = i + 1;
    while (j < n && !taso_fingerprint_cmp(&recs[j].fp, &recs[i].fp))
      j++;
    if (j - i > 1) TASO_TRY(pair_class(c, recs + i, j - i, out));
    i = j;
  }
  return TASO_OK;
}

/* ---- global pruning ------------------------------------------------------ */

/* Every rank's candidate texts on every rank. */
static taso_err_t gather_keys(gen_t *c, const lines_t *pr, char ***keys, int64_t *nkeys) {
  int n = c->size;
  size_t len = 0;
  for (int64_t i = 0; i < pr->n; i++)
    len += strlen(pr->v[i]) + 1;
  char *mine = malloc(len + 1), *all = NULL;
  int *counts = calloc((size_t)n, sizeof *counts), *displs = calloc((size_t)n, sizeof *displs);
  taso_err_t err =
      (mine && counts && displs) ? TASO_OK : taso_error(TASO_ERR_NOMEM, "candidate texts");
  if (err == TASO_OK && len > INT32_MAX)
    err = taso_error(TASO_ERR_LIMIT, "candidate texts over 2 GiB");
  size_t at = 0;
  for (int64_t i = 0; err == TASO_OK && i < pr->n; i++) {
    size_t l = strlen(pr->v[i]);
    memcpy(mine + at, pr->v[i], l);
    mine[at + l] = '\n';
    at += l + 1;
  }
  err = taso_agree(c->comm, err);
  int64_t total = 0;
  if (err == TASO_OK) {
    int mylen = (int)len;
    MPI_Allgather(&mylen, 1, MPI_INT, counts, 1, MPI_INT, c->comm);
    for (int d = 0; d < n; d++) {
      displs[d] = (int)total;
      total += counts[d];
    }
    if (total > INT32_MAX)
      err = taso_error(TASO_ERR_LIMIT, "candidate texts over 2 GiB");
    else if (!(all = malloc((size_t)total + 1)))
      err = taso_error(TASO_ERR_NOMEM, "candidate texts");
    err = taso_agree(c->comm, err);
  }
  *keys = NULL;
  *nkeys = 0;
  if (err == TASO_OK) {
    MPI_Allgatherv(mine, (int)len, MPI_CHAR, all, counts, displs, MPI_CHAR, c->comm);
    int64_t lines = 0;
    for (int64_t i = 0; i < total; i++)
      lines += all[i] == '\n';
    *keys = calloc((size_t)lines + 1, sizeof **keys);
    if (!*keys) err = taso_error(TASO_ERR_NOMEM, "candidate texts");
    for (int64_t i = 0, from = 0; err == TASO_OK && i < total; i++) {
      if (all[i] != '\n') continue;
      char *k = malloc((size_t)(i - from) + 1);
      if (!k) {
        err = taso_error(TASO_ERR_NOMEM, "candidate texts");
        break;
      }
      memcpy(k, all + from, (size_t)(i - from));
      k[i - from] = '\0';
      (*keys)[(*nkeys)++] = k;
      from = i + 1;
    }
  }
  free(mine);
  free(all);
  free(counts);
  free(displs);
  return err;
}

static int str_cmp(const void *a, const void *b) {
  return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Whether two "PATTERN\tPAIR" lines have the same pattern. */
static int same_pattern(const void *a, const void *b) {
  const char *x = *(char *const *)a, *y = *(char *const *)b;
  size_t lx = strcspn(x, "\t"), ly = strcspn(y, "\t");
  return lx != ly ? 1 : memcmp(x, y, lx);
}

/* Sorts the lines by order and keeps the first of each run that same finds
 * equal, freeing the others; returns the new count. */
static int64_t unique(char **keys, int64_t n, int (*order)(const void *, const void *),
                      int (*same)(const void *, const void *)) {
  int64_t k = 0;
  if (n > 1) qsort(keys, (size_t)n, sizeof *keys, order);
  for (int64_t i = 0; i < n; i++) {
    if (k > 0 && !same(&keys[k - 1], &keys[i])) {
      free(keys[i]);
      continue;
    }
    keys[k++] = keys[i];
  }
  return k;
}

/* The order of the implication check: by size, then by distinct inputs,
 * more first (an instance with inputs merged comes after the general form
 * of its size), then by text. */
static int cand_cmp(const void *a, const void *b) {
  const taso_cand_t *x = a, *y = b;
  if (x->size != y->size) return x->size < y->size ? -1 : 1;
  if (x->inputs != y->inputs) return x->inputs > y->inputs ? -1 : 1;
  return strcmp(x->key, y->key);
}

/* Re-checks every candidate exactly on an independent input set (each rank
 * a block) and keeps the equal ones, in order: a fingerprint collision
 * cannot pass. */
static taso_err_t recheck(gen_t *c, const taso_fp_inputs_t *rnd, taso_cand_t *cands, int64_t n,
                          int64_t *kept_out) {
  uint8_t *differ = calloc((size_t)n + 1, 1);
  taso_err_t err = differ ? TASO_OK : taso_error(TASO_ERR_NOMEM, "re-check flags");
  int64_t lo = n * c->rank / c->size, hi = n * (c->rank + 1) / c->size, kept = 0;
  for (int64_t i = lo; i < hi && err == TASO_OK; i++) {
    bool equal;
    err = taso_fingerprint_recheck(rnd, &cands[i].src, cands[i].tsrc, &cands[i].dst, cands[i].tdst,
                                   &equal);
    differ[i] = !equal;
  }
  err = taso_agree(c->comm, err);
  if (err == TASO_OK && n > 0)
    MPI_Allreduce(MPI_IN_PLACE, differ, (int)n, MPI_UINT8_T, MPI_MAX, c->comm);
  for (int64_t i = 0; i < n; i++) {
    if (err == TASO_OK && differ[i]) {
      taso_cand_free(&cands[i]);
      continue;
    }
    taso_cand_t keep = cands[i];
    cands[i] = (taso_cand_t){0};
    cands[kept++] = keep;
  }
  free(differ);
  *kept_out = kept;
  return err;
}

/* The pruned pairs, as written to /pruned. */
typedef struct {
  taso_pruned_t *v;
  int64_t n, cap;
} pruned_list_t;

static taso_err_t add_pruned(pruned_list_t *l, int32_t reason, int32_t steps, int64_t rules,
                             const char *text) {
  if (strlen(text) >= TASO_PRUNED_TEXT)
    return taso_error(TASO_ERR_LIMIT, "pruned pair over %d characters: %s", TASO_PRUNED_TEXT - 1,
                      text);
  if (l->n == l->cap) {
    int64_t cap = l->cap ? 2 * l->cap : 1024;
    taso_pruned_t *v = realloc(l->v, sizeof *v * (size_t)cap);
    if (!v) return taso_error(TASO_ERR_NOMEM, "pruned pairs");
    l->v = v;
    l->cap = cap;
  }
  taso_pruned_t *r = &l->v[l->n++];
  memset(r, 0, sizeof *r);
  r->reason = reason;
  r->steps = steps;
  r->rules = rules;
  strcpy(r->text, text);
  return TASO_OK;
}

/* The pruned pairs of every rank, one per pattern ("PATTERN\tREASON\tPAIR"
 * lines, the smallest of each pattern), on every rank. */
static taso_err_t gather_pruned(gen_t *c, lines_t *mine, pruned_list_t *out) {
  char **lines = NULL;
  int64_t n = 0;
  /* each rank's smallest of each pattern first: the smallest of those is
   * the smallest of all, and far fewer lines travel */
  mine->n = unique(mine->v, mine->n, str_cmp, same_pattern);
  taso_err_t err = gather_keys(c, mine, &lines, &n);
  n = err == TASO_OK ? unique(lines, n, str_cmp, same_pattern) : n;
  for (int64_t i = 0; i < n; i++) {
    char *reason = strchr(lines[i], '\t'), *pair = reason ? strchr(reason + 1, '\t') : NULL;
    if (err == TASO_OK && !pair)
      err = taso_error(TASO_ERR_PARSE, "pruned pair line '%s'", lines[i]);
    if (err == TASO_OK) err = add_pruned(out, (int32_t)atoi(reason + 1), -1, 0, pair + 1);
    free(lines[i]);
  }
  free(lines);
  return taso_agree(c->comm, err);
}

/* Collective: the rule guard's verdicts that this rank decided since the
 * last call (*shared of them before) go to every rank, so that no rank
 * proves a relation another one has decided. A verdict depends only on
 * its key (rule_guard.h): the derivations come out the same, with fewer
 * proofs. */
static taso_err_t share_verdicts(gen_t *c, int64_t *shared) {
  taso_rule_guard_t *guard = c->derive.rewrite ? c->derive.rewrite_ctx : NULL;
  int any = guard != NULL;
  MPI_Allreduce(MPI_IN_PLACE, &any, 1, MPI_INT, MPI_MAX, c->comm);
  if (!any || c->size == 1) return TASO_OK;
  uint8_t *mine = NULL, *all = NULL;
  size_t len = 0;
  int64_t total = 0;
  taso_err_t err = guard ? taso_rule_guard_export(guard, *shared, &mine, &len) : TASO_OK;
  err = taso_agree(c->comm, err);
  if (err == TASO_OK) err = allgather(c, mine, (int64_t)len, 1, (void **)&all, &total);
  if (err == TASO_OK && guard) {
    *shared = taso_rule_guard_decided(guard);
    err = taso_rule_guard_import(guard, all, (size_t)total);
  }
  free(mine);
  free(all);
  return taso_agree(c->comm, err);
}

/* Level by level, the most rewrites a derivation that prunes c may take.
 * The walk cut the graphs built on a class's other members (S), so each
 * pair of those stands behind a pair of the representative R: it is the
 * rewrite S => R, then R's pair. A pair between graphs of fewer than
 * max_ops operators is such a rewrite S => R, kept unless one rewrite
 * derives it (a longer derivation found at these shapes need not exist
 * at the shapes S has inside larger graphs, nor fit the bounds there); the
 * others leave one rewrite of the bounds for it. */
static int level_steps(const gen_t *c, const taso_cand_t *k) {
  int ops = taso_graph_ops(&k->src) > taso_graph_ops(&k->dst) ? taso_graph_ops(&k->src)
                                                              : taso_graph_ops(&k->dst);
  int bound = c->derive.max_steps > 0 ? c->derive.max_steps : TASO_DEFAULT_DERIVE_STEPS;
  return ops < c->job->max_ops ? 1 : bound - 1;
}

/* Drops the candidates that smaller kept ones imply, size by size; each rank
 * checks every size's candidates round robin and the flags are combined. The dropped
 * ones join pruned with their step counts. */
static taso_err_t prune_implied(gen_t *c, taso_cand_t *cands, int64_t n, int64_t *kept_out,
                                pruned_list_t *pruned) {
  uint8_t *implied = calloc((size_t)n + 1, 1); /* steps of the derivation; 0: none */
  taso_deriver_t *d = NULL;
  taso_err_t err = implied ? TASO_OK : taso_error(TASO_ERR_NOMEM, "implication flags");
  if (err == TASO_OK) err = taso_deriver_create(&c->job->inputs, &c->derive, &d);
  err = taso_agree(c->comm, err);
  int64_t kept = 0; /* cands[0, kept) are the kept ones so far, in order */
  taso_progress_t progress;
  progress_begin(c, &progress, "candidates checked for implication (rank 0's share)", -1);
  int64_t checked = 0, shared = 0;
  for (int64_t lo = 0; err == TASO_OK && lo < n;) {
    int64_t hi = lo;
    while (hi < n && cands[hi].size == cands[lo].size && cands[hi].inputs == cands[lo].inputs)
      hi++;
    /* round robin: the candidates needing proofs cluster (sorted by text) */
    for (int64_t i = lo + c->rank; i < hi && err == TASO_OK; i += c->size) {
      int steps;
      err = taso_derive(d, cands, kept, &cands[i].src, &cands[i].dst, &steps);
      if (c->levels && steps > level_steps(c, &cands[i])) steps = -1;
      implied[i] = (uint8_t)(steps > 0 ? steps : 0);
      taso_progress_update(&progress, ++checked);
    }
    err = taso_agree(c->comm, err);
    if (err != TASO_OK) break;
    MPI_Allreduce(MPI_IN_PLACE, implied + lo, (int)(hi - lo), MPI_UINT8_T, MPI_MAX, c->comm);
    err = share_verdicts(c, &shared);
    int64_t rules = kept; /* the ones this size's derivations used */
    for (int64_t i = lo; i < hi; i++) {
      if (implied[i]) {
        if (err == TASO_OK)
          err = add_pruned(pruned, TASO_PRUNED_IMPLIED, implied[i], rules, cands[i].key);
        taso_cand_free(&cands[i]);
        continue;
      }
      taso_cand_t keep = cands[i];
      cands[i] = (taso_cand_t){0};
      cands[kept++] = keep;
    }
    lo = hi;
  }
  free(implied);
  taso_deriver_free(d);
  *kept_out = kept;
  return err;
}

/* Collective. Derives the pruned rows not derived yet (the common
 * subgraphs and independent parts) from the kept set: steps[i], -1 where
 * the search fails, 0 for other ranks' rows. The rows needing proofs
 * cluster (they are sorted by pattern), so they are dealt round robin, in
 * chunks with the guard's verdicts shared after each. */
static taso_err_t derive_pruned(gen_t *c, const taso_cand_t *cands, int64_t kept,
                                const pruned_list_t *pruned, int32_t *steps) {
  enum { CHUNKS = 8 };
  taso_rule_guard_t *guard = c->derive.rewrite ? c->derive.rewrite_ctx : NULL;
  int64_t shared =
      guard ? taso_rule_guard_decided(guard) : 0; /* the others went at prune_implied's end */
  taso_deriver_t *d = NULL;
  taso_err_t err = taso_agree(c->comm, taso_deriver_create(&c->job->inputs, &c->derive, &d));
  taso_progress_t progress;
  progress_begin(c, &progress, "pruned pairs derived from the kept set (rank 0's share)",
                 pruned->n);
  for (int k = 0; k < CHUNKS && err == TASO_OK; k++) {
    int64_t lo = pruned->n * k / CHUNKS, hi = pruned->n * (k + 1) / CHUNKS;
    for (int64_t i = lo; i < hi && err == TASO_OK; i++) {
      if (i % c->size != c->rank) continue;
      taso_progress_update(&progress, i);
      steps[i] = pruned->v[i].steps;
      if (steps[i] >= 0) continue;
      taso_cand_t p;
      char *text = malloc(strlen(pruned->v[i].text) + 1);
      if (!text)
        err = taso_error(TASO_ERR_NOMEM, "pruned pair");
      else
        err = taso_cand_parse(&c->job->inputs, strcpy(text, pruned->v[i].text), &p);
      if (err == TASO_OK) err = taso_derive(d, cands, kept, &p.src, &p.dst, &steps[i]);
      taso_cand_free(&p);
    }
    err = taso_agree(c->comm, err);
    if (err == TASO_OK) err = share_verdicts(c, &shared);
  }
  taso_deriver_free(d);
  return err;
}

/* The pruned pairs that the kept set does not re-derive go back into it,
 * re-checked like the others: pruning is only sound where the optimizer's
 * engine can redo it. The others keep their step counts in pruned. */
static taso_err_t keep_underived(gen_t *c, const taso_fp_inputs_t *rnd, taso_cand_t **cands,
                                 int64_t *cap, int64_t *kept, pruned_list_t *pruned,
                                 int64_t *nback) {
  int64_t n = pruned->n, nnew = 0, k = 0;
  int32_t *steps = calloc((size_t)n + 1, sizeof *steps);
  taso_cand_t *back = calloc((size_t)n + 1, sizeof *back);
  taso_err_t err = steps && back ? TASO_OK : taso_error(TASO_ERR_NOMEM, "pruned pairs");
  err = taso_agree(c->comm, err);
  if (err == TASO_OK) err = taso_agree(c->comm, derive_pruned(c, *cands, *kept, pruned, steps));
  if (err == TASO_OK && n > 0)
    MPI_Allreduce(MPI_IN_PLACE, steps, (int)n, MPI_INT32_T, MPI_SUM, c->comm);
  for (int64_t i = 0; i < n && err == TASO_OK; i++) {
    if (steps[i] >= 0) {
      pruned->v[k] = pruned->v[i];
      pruned->v[k].steps = steps[i];
      if (pruned->v[k].rules == 0) pruned->v[k].rules = *kept;
      k++;
      continue;
    }
    char *text = malloc(strlen(pruned->v[i].text) + 1);
    if (!text)
      err = taso_error(TASO_ERR_NOMEM, "pruned pair");
    else
      err = taso_cand_parse(&c->job->inputs, strcpy(text, pruned->v[i].text), &back[nnew++]);
  }
  if (err == TASO_OK) pruned->n = k;
  err = taso_agree(c->comm, err);
  int64_t ok = 0;
  if (err == TASO_OK) err = recheck(c, rnd, back, nnew, &ok);
  /* cands[kept, cap) are free (moved out or freed) */
  taso_cand_t *all = *cands;
  if (err == TASO_OK && *kept + ok > *cap) {
    if (!(all = realloc(*cands, sizeof *all * (size_t)(*kept + ok + 1))))
      err = taso_error(TASO_ERR_NOMEM, "candidates");
    else
      *cap = *kept + ok;
  }
  if (err == TASO_OK) {
    *cands = all;
    memcpy(all + *kept, back, sizeof *all * (size_t)ok);
    *kept += ok;
    memset(back, 0, sizeof *back * (size_t)ok); /* moved */
  }
  for (int64_t i = 0; i < nnew; i++)
    taso_cand_free(&back[i]);
  *nback = err == TASO_OK ? nnew : 0;
  free(back);
  free(steps);
  return taso_agree(c->comm, err);
}

/* ---- representative-based generation (method = representatives) ------- */

/* Graphs of k operators are the class representatives of k - 1 operators
 * extended by one operator: the enumeration tree (each graph below its
 * canonical prefix) cut below every graph that is not the smallest of its
 * fingerprint class. A substitution whose graph contains such a prefix is
 * implied by the prefix's own substitution, so the cut loses no candidate
 * pair that pruning would keep; it loses most of the graphs. Classes form
 * after each level: the level's graphs whose outputs are all shared go to
 * the owners of their fingerprints, which pick the representative against
 * the classes of earlier levels and tell every rank the classes that have
 * one (a graph of no such class is its own representative). */

static bool class_empty(const class_t *x) {
  return !x->fp.h[0] && !x->fp.h[1];
}

/* The slot of fp: its class, or the empty slot where it goes. */
static class_t *classes_find(const classes_t *m, const taso_fingerprint_t *fp) {
  uint64_t h = fp->h[0] & m->mask;
  while (!class_empty(&m->slot[h]) && taso_fingerprint_cmp(&m->slot[h].fp, fp))
    h = (h + 1) & m->mask;
  return &m->slot[h];
}

/* The class of fp; NULL if the table lacks it. */
static const class_t *classes_get(const classes_t *m, const taso_fingerprint_t *fp) {
  if (!m->slot) return NULL;
  const class_t *k = classes_find(m, fp);
  return class_empty(k) ? NULL : k;
}

/* Adds or finds the class of fp; *at is its slot. */
static taso_err_t classes_put(classes_t *m, const taso_fingerprint_t *fp, class_t **at) {
  if (2 * (uint64_t)(m->n + 1) > m->mask + 1 || !m->slot) {
    classes_t big = {.mask = m->slot ? 2 * m->mask + 1 : 4095};
    big.slot = calloc(big.mask + 1, sizeof *big.slot);
    if (!big.slot) return taso_error(TASO_ERR_NOMEM, "a table of %lld classes", (long long)m->n);
    for (uint64_t i = 0; m->slot && i <= m->mask; i++)
      if (!class_empty(&m->slot[i])) *classes_find(&big, &m->slot[i].fp) = m->slot[i];
    big.n = m->n;
    free(m->slot);
    *m = big;
  }
  *at = classes_find(m, fp);
  if (class_empty(*at)) {
    (*at)->fp = *fp;
    m->n++;
  }
  return TASO_OK;
}

/* A graph's identity across ranks: its operators in canonical order. */
static uint64_t graph_hash(const taso_grec_t *r) {
  uint64_t h = taso_mix64((uint64_t)r->nops);
  for (int j = 0; j < r->nops; j++)
    h = taso_mix64(h ^ ((uint64_t)(uint16_t)r->variant[j] << 32 |
                        (uint64_t)(uint16_t)r->in[j][0] << 16 | (uint16_t)r->in[j][1])) +
        (uint64_t)j;
  return h;
}

/* Whether a tensor's class holds an expression of fewer operators: asked
 * of the table itself, not of marks, so that a tensor this rank meets only
 * after the exchange answers as on any other rank. */
static bool not_smallest(const gen_t *c, int32_t tid) {
  taso_fingerprint_t fp = taso_memo_fp(c->m, tid);
  const class_t *k = classes_get(&c->smallest, &fp);
  return k && tensor_ops(c, tid) > k->ops;
}

/* Whether a graph of the walk has children: it is its class's
 * representative and no two of its outputs are equal (a graph holding a
 * tensor twice extends into graphs that a smaller one implies). A graph
 * smaller than the class's known representative is one the owner never
 * saw (its outputs were not yet shared at its level): the true one. */
static bool expand(void *ctx, const taso_enum_graph_t *g) {
  gen_t *c = ctx;
  taso_fingerprint_t fps[2 * TASO_ENUM_MAX_OPS + 2];
  unsigned cones[2 * TASO_ENUM_MAX_OPS + 2];
  taso_grec_t r;
  for (int s = 0; s < g->nsinks; s++)
    cones[s] = g->cone[TASO_REF_NODE(g->sinks[s]) - c->ninputs];
  if (!joinable(c, g->nops, output_groups(g->nsinks, cones))) return false;
  /* an output that fewer operators compute, its operators its own: the
   * graph with those instead is smaller and in the same class */
  for (int s = 0; s < g->nsinks; s++) {
    unsigned others = 0;
    for (int o = 0; o < g->nsinks; o++)
      others |= o == s ? 0 : cones[o];
    if (!(cones[s] & others) && not_smallest(c, c->tid[g->sinks[s]])) return false;
  }
  if (!fill_record(c, g->nops, g->variant, g->in, g->nsinks, g->sinks, &r, fps)) return false;
  const class_t *k = classes_get(&c->reps, &r.fp);
  return !k || g->nops < k->ops || k->rep == graph_hash(&r);
}

/* Level walk 2: a record of every graph whose outputs are all shared (its
 * class may hold another graph) and distinct. */
static taso_err_t visit_level(void *ctx, const taso_enum_graph_t *g) {
  gen_t *c = ctx;
  taso_fingerprint_t fps[2 * TASO_ENUM_MAX_OPS + 2];
  unsigned cones[2 * TASO_ENUM_MAX_OPS + 2];
  taso_grec_t r;
  tick(c);
  if (!outputs_shared(c, g->cone, g->nsinks, g->sinks, cones)) return TASO_OK;
  if (!fill_record(c, g->nops, g->variant, g->in, g->nsinks, g->sinks, &r, fps)) return TASO_OK;
  return add_record(c, &r);
}

/* On the owner: the classes of this level's records (n, any order), against
 * the earlier levels' (c->owned). Classes with a member besides their
 * representative go into *tell, for every rank. */
static taso_err_t classify(gen_t *c, taso_grec_t *r, int64_t n, class_t **tell, int64_t *ntell) {
  *tell = calloc((size_t)n + 1, sizeof **tell);
  *ntell = 0;
  if (!*tell) return taso_error(TASO_ERR_NOMEM, "classes of %lld graphs", (long long)n);
  if (n > 1) qsort(r, (size_t)n, sizeof *r, taso_grec_cmp);
  taso_err_t err = TASO_OK;
  for (int64_t i = 0, j; i < n && err == TASO_OK; i = j) {
    for (j = i + 1; j < n && !taso_fingerprint_cmp(&r[j].fp, &r[i].fp);)
      j++;
    class_t *k;
    bool known = classes_get(&c->owned, &r[i].fp) != NULL;
    err = classes_put(&c->owned, &r[i].fp, &k);
    if (err != TASO_OK) break;
    if (!known) { /* a new class: its representative is of this level */
      member_t *m = calloc((size_t)(j - i), sizeof *m);
      int64_t rep = 0;
      err = m ? class_members(c, r + i, j - i, m, &rep) : taso_error(TASO_ERR_NOMEM, "a class");
      for (int64_t x = 0; m && x < j - i; x++)
        taso_graph_free(&m[x].g);
      free(m);
      k->rep = graph_hash(&r[i + rep]);
      k->ops = r[i + rep].nops;
    }
    if ((known || j - i > 1) && !k->told) {
      k->told = 1;
      (*tell)[(*ntell)++] = *k;
    }
  }
  return err;
}

/* Collective: the level's records, a bucket at a time, to the owners of
 * their fingerprints and classified there; every rank learns the classes
 * told (*told counts this rank's). */
static taso_err_t classify_buckets(gen_t *c, int64_t *told, int64_t *volume) {
  taso_err_t err = TASO_OK;
  c->spill = false;
  for (int b = 0; b < SPILL_BUCKETS && err == TASO_OK; b++) {
    taso_grec_t *recs = NULL, *mine = NULL;
    class_t *tell = NULL;
    int64_t n = 0, nmine = 0, ntell = 0, vol = 0;
    err = taso_agree(c->comm, read_bucket(c, b, &recs, &n));
    if (err == TASO_OK)
      err = exchange_by_owner(c, recs, n, sizeof *recs, (void **)&mine, &nmine, &vol);
    free(recs);
    *volume += vol;
    if (err == TASO_OK) err = taso_agree(c->comm, classify(c, mine, nmine, &tell, &ntell));
    free(mine);
    *told += ntell;
    if (err == TASO_OK) err = gather_classes(c, tell, ntell, &c->reps); /* what every rank learns */
    free(tell);
  }
  return err;
}

static double peak_mib(void) {
  struct rusage u;
  getrusage(RUSAGE_SELF, &u);
  return (double)u.ru_maxrss / 1024;
}

/* Collective. One level: its graphs, their tensors' classes (the SHARED
 * marks), then (below the last level) the graphs' classes. */
static taso_err_t one_level(gen_t *c, int k, int64_t *graphs, int64_t *nshared, int64_t *volume) {
  double t0 = MPI_Wtime();
  int64_t vol = 0, n[3] = {0, 0, 0}; /* graphs, records, told classes */
  c->visited = 0;
  /* from level 3 on, the units are the graphs of level k - 2 (uncut) */
  progress_begin(c, &c->progress, "units of the level (graphs of 2 operators fewer)",
                 k >= 3 ? c->level_graphs[k - 2] : -1);
  bool last = k == c->job->max_ops;
  taso_enum_visitor_t v = {
      .ctx = c, .push = push, .pop = pop, .visit = visit_count, .expand = expand};
  v.want = want_joinable;
  c->walk_level = k;
  c->tape_mode = last ? TAPE_WRITE : TAPE_OFF;
  taso_err_t err = taso_agree(c->comm, taso_enum_level(c->e, k, c->rank, c->size, &v));
  c->tape_mode = TAPE_OFF;
  n[0] = c->visited;
  *graphs += n[0]; /* this rank's */
  int64_t tape = c->ntape;
  if (err == TASO_OK) err = shared_tensors(c, last, nshared, &vol);
  *volume += vol;
  if (err == TASO_OK && k < c->job->max_ops) {
    /* the level's records wait in the spill buckets, so that a rank holds
     * one bucket's share of them at a time */
    v.visit = visit_level;
    err = taso_agree(c->comm, spill_open(c));
    if (err == TASO_OK) err = taso_agree(c->comm, taso_enum_level(c->e, k, c->rank, c->size, &v));
    n[1] = c->spilled;
    if (err == TASO_OK) err = classify_buckets(c, &n[2], volume);
    spill_close(c);
  }
  double mib[2] = {peak_mib(), 0}, all[2];
  if (err == TASO_OK) {
    MPI_Allreduce(MPI_IN_PLACE, n, 3, MPI_INT64_T, MPI_SUM, c->comm);
    c->level_graphs[k] = n[0];
    mib[1] = -mib[0];
    MPI_Allreduce(mib, all, 2, MPI_DOUBLE, MPI_MAX, c->comm);
    char classes[160] = "the last: its classes form with the pairs";
    if (k < c->job->max_ops)
      snprintf(classes, sizeof classes,
               "%lld with shared outputs, %lld classes with more than one graph "
               "(%lld so far)",
               (long long)n[1], (long long)n[2], (long long)c->reps.n);
    say(c,
        "level %d: %lld graphs, %s; %.2f s; peak memory per rank %.0f to %.0f MiB "
        "(rank 0: %lld expressions in the memo, %lld fingerprints on the tape)\n",
        k, (long long)n[0], classes, MPI_Wtime() - t0, -all[1], all[0],
        (long long)taso_memo_count(c->m), (long long)tape);
  }
  return err;
}

/* ---- level checkpoints (checkpoint.h) ----------------------------------- */

static bool put_classes(FILE *f, const classes_t *m) {
  int64_t head[2] = {m->slot ? (int64_t)m->mask + 1 : 0, m->n};
  return taso_checkpoint_put(f, head, sizeof *head, 2) &&
         taso_checkpoint_put(f, m->slot, sizeof *m->slot, (size_t)head[0]);
}

static taso_err_t get_classes(FILE *f, classes_t *m) {
  int64_t head[2];
  free(m->slot);
  memset(m, 0, sizeof *m);
  if (!taso_checkpoint_get(f, head, sizeof *head, 2) || head[0] < 0 || head[1] < 0 ||
      head[1] > head[0] || (head[0] & (head[0] - 1)))
    return taso_error(TASO_ERR_FORMAT, "a class table's counts");
  if (!head[0]) return TASO_OK;
  if (!(m->slot = malloc(sizeof *m->slot * (size_t)head[0])))
    return taso_error(TASO_ERR_NOMEM, "a table of %lld classes", (long long)head[1]);
  m->mask = (uint64_t)head[0] - 1;
  m->n = head[1];
  return taso_checkpoint_get(f, m->slot, sizeof *m->slot, (size_t)head[0])
             ? TASO_OK
             : taso_error(TASO_ERR_FORMAT, "a class table cut short");
}

/* What this rank holds after a level: the counters so far, the class
 * tables and the memo (nothing else lives from one level to the next). */
enum { SAVED_GRAPHS, SAVED_VOLUME, SAVED_REFUSED, SAVED_COUNTERS };

static taso_err_t save_state(gen_t *c, FILE *f, const int64_t *counters) {
  bool ok = taso_checkpoint_put(f, counters, sizeof *counters, SAVED_COUNTERS) &&
            taso_checkpoint_put(f, c->level_graphs, sizeof c->level_graphs, 1) &&
            put_classes(f, &c->reps) && put_classes(f, &c->owned) && put_classes(f, &c->smallest);
  if (!ok) return taso_error(TASO_ERR_IO, "%s", strerror(errno));
  return taso_memo_save(c->m, f);
}

static taso_err_t load_state(gen_t *c, FILE *f, int64_t *counters) {
  if (!taso_checkpoint_get(f, counters, sizeof *counters, SAVED_COUNTERS) ||
      !taso_checkpoint_get(f, c->level_graphs, sizeof c->level_graphs, 1))
    return taso_error(TASO_ERR_FORMAT, "cut short");
  TASO_TRY(get_classes(f, &c->reps));
  TASO_TRY(get_classes(f, &c->owned));
  TASO_TRY(get_classes(f, &c->smallest));
  return taso_memo_load(c->m, f);
}

/* Collective: level k's checkpoint. A failed one is only a warning (the
 * run goes on without it) unless the run is to stop there. */
static taso_err_t save_level(gen_t *c, int k, int64_t graphs, int64_t volume) {
  if (!c->ckpt.dir) return TASO_OK;
  double t0 = MPI_Wtime();
  int64_t counters[SAVED_COUNTERS] = {graphs, volume, taso_enum_constant_refused(c->e)};
  counters[SAVED_REFUSED] += c->refused_before;
  FILE *f = NULL;
  taso_err_t err = taso_checkpoint_create(&c->ckpt, k, &f);
  if (err == TASO_OK) err = save_state(c, f, counters);
  double mib = err == TASO_OK ? (double)ftell(f) / (1 << 20) : 0;
  err = taso_agree(c->comm, taso_checkpoint_close(&c->ckpt, k, f, true, err));
  if (err == TASO_OK && c->rank == 0) err = taso_checkpoint_done(&c->ckpt, k);
  err = taso_agree(c->comm, err);
  if (err == TASO_OK)
    say(c, "level %d: checkpointed in %s (%.2f s; rank 0's file %.1f MiB)\n", k, c->ckpt.dir,
        MPI_Wtime() - t0, mib);
  else if (c->until_level != k) {
    if (c->rank == 0)
      fprintf(stderr, "%s: warning: level %d not checkpointed, going on without it: %s\n", c->name,
              k, taso_error_detail());
    err = TASO_OK;
  }
  return err;
}

/* Collective: the last complete level of the checkpoint folder, read
 * back; *first: the level to walk next. */
static taso_err_t resume_levels(gen_t *c, int *first, int64_t *graphs, int64_t *volume) {
  int level = 0;
  *first = 1;
  if (!c->ckpt.dir) return TASO_OK;
  taso_err_t err = TASO_OK;
  if (c->rank == 0) err = taso_checkpoint_last(&c->ckpt, c->job->max_ops - 1, &level);
  err = taso_agree(c->comm, err);
  MPI_Bcast(&level, 1, MPI_INT, 0, c->comm);
  if (err != TASO_OK || level == 0) return err;
  double t0 = MPI_Wtime();
  FILE *f = NULL;
  int64_t counters[SAVED_COUNTERS] = {0};
  err = taso_checkpoint_open(&c->ckpt, level, &f);
  if (err == TASO_OK) err = load_state(c, f, counters);
  err = taso_agree(c->comm, taso_checkpoint_close(&c->ckpt, level, f, false, err));
  if (err != TASO_OK) return err;
  *graphs = counters[SAVED_GRAPHS];
  *volume = counters[SAVED_VOLUME];
  c->refused_before = counters[SAVED_REFUSED];
  *first = level + 1;
  say(c, "levels 1 to %d: resumed from %s (%.2f s; rank 0: %lld expressions in the memo)\n", level,
      c->ckpt.dir, MPI_Wtime() - t0, (long long)taso_memo_count(c->m));
  return TASO_OK;
}

/* Collective. Every level (from the last checkpointed one on), each below
 * the last checkpointed. *graphs: this rank's share of the levels' graphs. */
static taso_err_t generate_levels(gen_t *c, int64_t *graphs, int64_t *nshared, int64_t *volume) {
  int64_t total = 0;
  int first;
  taso_err_t err = resume_levels(c, &first, &total, volume);
  if (err == TASO_OK && c->until_level && c->until_level < first) {
    c->stopped = first - 1; /* already there */
    *graphs = total;
    return TASO_OK;
  }
  for (int k = first; k <= c->job->max_ops && err == TASO_OK; k++) {
    err = one_level(c, k, &total, nshared, volume);
    if (err == TASO_OK && k < c->job->max_ops) err = save_level(c, k, total, *volume);
    if (err == TASO_OK && k == c->until_level) {
      c->stopped = k;
      break;
    }
  }
  *graphs = total;
  return err;
}

/* Walk 2 of the representative tree (after generate_levels). The last
 * level reads the tape, so it visits the leaves of walk 1 (want_level
 * only skips leaves that record() would drop). */
static taso_err_t record_levels(gen_t *c) {
  taso_enum_visitor_t v = {
      .ctx = c, .push = push, .pop = pop, .visit = visit_record, .expand = expand};
  taso_err_t err = TASO_OK;
  for (int k = 1; k <= c->job->max_ops && err == TASO_OK; k++) {
    bool last = k == c->job->max_ops;
    v.want = last ? want_joinable : want_level;
    c->walk_level = k;
    c->tape_mode = last ? TAPE_READ : TAPE_OFF;
    c->tape_at = 0;
    err = taso_enum_level(c->e, k, c->rank, c->size, &v);
    if (err == TASO_OK && last && c->tape_at != c->ntape)
      err = taso_error(TASO_ERR_ARG,
                       "walk 2 of the last level met %lld of walk 1's %lld tape fingerprints",
                       (long long)c->tape_at, (long long)c->ntape);
  }
  c->tape_mode = TAPE_OFF;
  free(c->tape);
  c->tape = NULL;
  c->ntape = c->tape_cap = 0;
  free(c->tape_shared);
  c->tape_shared = NULL;
  c->twin_filter = false;
  free(c->memo_min.slot);
  memset(&c->memo_min, 0, sizeof c->memo_min);
  return err;
}

/* Opens the spill buckets (temporary files, gone when closed). */
static taso_err_t spill_open(gen_t *c) {
  memset(c->nbucket, 0, sizeof c->nbucket);
  c->spilled = 0;
  for (int b = 0; b < SPILL_BUCKETS; b++)
    if (!(c->bucket[b] = tmpfile()))
      return taso_error(TASO_ERR_IO, "a temporary file for graph records (in /tmp): %s",
                        strerror(errno));
  c->spill = true;
  return TASO_OK;
}

static void spill_close(gen_t *c) {
  for (int b = 0; b < SPILL_BUCKETS; b++) {
    if (c->bucket[b]) fclose(c->bucket[b]);
    c->bucket[b] = NULL;
  }
  c->spill = false;
}

/* Bucket b's records, read back (*recs malloc'd); the file is closed. */
static taso_err_t read_bucket(gen_t *c, int b, taso_grec_t **recs, int64_t *n) {
  taso_err_t err = TASO_OK;
  *n = c->nbucket[b];
  if (!(*recs = malloc(sizeof **recs * (size_t)(*n + 1))))
    err = taso_error(TASO_ERR_NOMEM, "%lld graph records", (long long)*n);
  else if (fflush(c->bucket[b]) != 0 || fseek(c->bucket[b], 0, SEEK_SET) != 0 ||
           fread(*recs, sizeof **recs, (size_t)*n, c->bucket[b]) != (size_t)*n)
    err = taso_error(TASO_ERR_IO, "reading back a temporary file of graph records: %s",
                     strerror(errno));
  fclose(c->bucket[b]);
  c->bucket[b] = NULL;
  return err;
}

/* Collective: each bucket's records to their owners, paired there; the
 * pairs' lines keep the smallest of each pattern as they go (what the
 * gathers keep in the end). */
static taso_err_t pair_buckets(gen_t *c, pairing_t *pr, int64_t *volume) {
  taso_err_t err = TASO_OK;
  c->spill = false;
  for (int b = 0; b < SPILL_BUCKETS && err == TASO_OK; b++) {
    int64_t n = 0, nmine = 0, vol = 0;
    taso_grec_t *recs = NULL, *mine = NULL;
    err = taso_agree(c->comm, read_bucket(c, b, &recs, &n));
    if (err == TASO_OK)
      err = exchange_by_owner(c, recs, n, sizeof *recs, (void **)&mine, &nmine, &vol);
    free(recs);
    *volume += vol;
    if (err == TASO_OK) err = pair_all(c, mine, nmine, pr);
    free(mine);
    pr->keys.n = unique(pr->keys.v, pr->keys.n, str_cmp, same_pattern);
    pr->pruned.n = unique(pr->pruned.v, pr->pruned.n, str_cmp, same_pattern);
    err = taso_agree(c->comm, err);
  }
  return err;
}

/* The inputs [generate] weights names, as the enumeration's mask. */
static taso_err_t weights_mask(const taso_job_t *job, uint64_t *mask) {
  char names[sizeof job->weights], *save = NULL;
  *mask = job->weights[0] ? 0 : ~0ull;
  memcpy(names, job->weights, sizeof names);
  for (char *w = strtok_r(names, " \t,", &save); w; w = strtok_r(NULL, " \t,", &save)) {
    int i = taso_inputs_find(&job->inputs, w);
    if (i < 0)
      return taso_error(TASO_ERR_PARSE, "%s: [generate] weights: no input '%s'", job->path, w);
    if (i >= 64)
      return taso_error(TASO_ERR_LIMIT, "%s: [generate] weights: input '%s' is past the first 64",
                        job->path, w);
    *mask |= 1ull << i;
  }
  return TASO_OK;
}

/* The count pass's progress, by the root's candidates. */
static void count_progress(void *ctx, int64_t done, int64_t total) {
  taso_progress_t *p = ctx;
  p->total = total;
  taso_progress_update(p, done);
}

/* ---- the driver ---------------------------------------------------------- */

const char *const taso_generate_count_names[TASO_GENERATE_COUNTS] = {
    "graphs_enumerated",      "graphs_without_operators", "operators_on_constants",
    "graphs_exchanged",       "graphs_disjoint_built",    "graphs_equal_outputs",
    "tensor_classes_shared",  "fingerprint_classes",      "candidate_pairs",
    "fingerprint_collisions", "pruned_common_subgraph",   "pruned_independent_parts",
    "pruned_input_renaming",  "pruned_implied",           "kept_not_derived",
    "substitutions"};

/* Collective: the enumeration, its count pass shared by the ranks (none
 * level by level: each level deals its own units), the fingerprint inputs
 * and the memo. */
static taso_err_t open_walk(gen_t *c, taso_fp_inputs_t *rnd, bool levels) {
  const taso_job_t *job = c->job;
  taso_progress_t counting;
  progress_begin(c, &counting, "operators at the root counted", -1);
  taso_enum_opts_t opts = {.no_count = levels,
                           .keep_identities = job->keep_identities,
                           .count_progress = count_progress,
                           .progress_ctx = &counting};
  if (!levels)
    say(c,
        "counting the graphs of up to %d operators over %d inputs (the tree above "
        "its leaves, shared by %d rank%s) ...\n",
        job->max_ops, job->inputs.n, c->size, c->size == 1 ? "" : "s");
  taso_err_t err = taso_agree(c->comm, weights_mask(job, &opts.weights));
  if (err == TASO_OK) {
    err = taso_enum_create_opts(&job->inputs, job->ops, job->nops, job->max_ops, c->rank, c->size,
                                &opts, &c->e);
    if (err != TASO_OK) err = taso_error_prefix(err, "%s: ", job->path);
    err = taso_agree(c->comm, err);
    if (err == TASO_OK) {
      int64_t n, *w = taso_enum_partial_weights(c->e, &n);
      for (int64_t at = 0; at < n; at += 1 << 28) /* MPI counts are ints */
        MPI_Allreduce(MPI_IN_PLACE, w + at, (int)(n - at < (1 << 28) ? n - at : 1 << 28),
                      MPI_INT64_T, MPI_SUM, c->comm);
    }
  }
  if (err == TASO_OK) err = taso_fp_inputs_init(rnd, &job->inputs, job->seed);
  /* Exhaustively every expression a larger graph consumes keeps its
   * values; level by level only those of at most 2 operators, which most
   * states share (a larger one is evaluated again by the state that holds
   * it: the walks nest, and the states are few next to the leaves). */
  if (err == TASO_OK)
    err = taso_memo_create(rnd, &job->inputs, levels && job->max_ops > 3 ? 3 : job->max_ops, &c->m);
  if (err == TASO_OK) {
    int nv;
    c->vars = taso_enum_variants(c->e, &nv);
    c->ninputs = job->inputs.n;
    c->tid = malloc(sizeof *c->tid * 2 * (c->ninputs + job->max_ops));
    err = c->tid ? TASO_OK : taso_error(TASO_ERR_NOMEM, "walk state");
    for (int i = 0; c->tid && i < 2 * (c->ninputs + job->max_ops); i++)
      c->tid[i] = -1;
    for (int i = 0; c->tid && i < c->ninputs; i++)
      c->tid[TASO_REF(i, 0)] = 2 * i;
  }
  return taso_agree(c->comm, err);
}

enum {
  LAP_WALK1,
  LAP_CLASSES,
  LAP_WALK2,
  LAP_EXCHANGE,
  LAP_PAIR,
  LAP_RENAMING,
  LAP_IMPLIED,
  NLAPS
};

/* The end of a stage: wall and CPU time. */
static void lap(double *laps, double *cpu, int stage) {
  laps[stage + 1] = MPI_Wtime();
  cpu[stage + 1] = cpu_seconds();
}

/* Collective: walk 2's records, the twins' disjoint graphs built on their
 * owners, paired there (steps 3 and 4 to the pairing). */
static taso_err_t pair_records(gen_t *c, bool levels, int64_t lo, int64_t hi, double *laps,
                               double *cpu, int64_t *input_graphs_n, int64_t *exchanged,
                               int64_t *built, int64_t volume[3], pairing_t *pr) {
  taso_err_t err = TASO_OK;
  if (levels) err = taso_agree(c->comm, spill_open(c));
  if (err == TASO_OK) {
    c->visited = 0;
    taso_enum_visitor_t v = {.ctx = c, .push = push, .visit = visit_record, .want = want};
    err = levels ? record_levels(c) : taso_enum_run(c->e, lo, hi, &v);
  }
  if (err == TASO_OK) err = input_graphs(c, input_graphs_n);
  err = taso_agree(c->comm, err);
  if (err == TASO_OK && levels) {
    double mib = peak_mib();
    MPI_Allreduce(MPI_IN_PLACE, &mib, 1, MPI_DOUBLE, MPI_MAX, c->comm);
    say(c, "walk 2: %lld graph records on rank 0; %.2f s; peak memory per rank %.0f MiB\n",
        (long long)c->spilled, MPI_Wtime() - laps[LAP_CLASSES + 1], mib);
  }
  lap(laps, cpu, LAP_WALK2);
  *exchanged = levels ? c->spilled : c->nrecs;
  taso_grec_t *mine = NULL;
  int64_t nmine = 0;
  if (levels) {
    /* the built graphs join the buckets; each bucket is exchanged and
     * paired in turn */
    if (err == TASO_OK) err = disjoint_graphs(c, built, &volume[2]);
    err = taso_agree(c->comm, err);
    lap(laps, cpu, LAP_EXCHANGE);
    if (err == TASO_OK) err = pair_buckets(c, pr, &volume[1]);
    spill_close(c);
    return taso_agree(c->comm, err);
  }
  if (err == TASO_OK)
    err = exchange_by_owner(c, c->recs, c->nrecs, sizeof *c->recs, (void **)&mine, &nmine,
                            &volume[1]);
  free(c->recs);
  c->recs = NULL;
  c->nrecs = c->recs_cap = 0;
  /* the graphs of op-disjoint outputs that have a twin, built on the
   * owner, join the records there */
  if (err == TASO_OK) err = disjoint_graphs(c, built, &volume[2]);
  if (err == TASO_OK && c->nrecs > 0) {
    taso_grec_t *all = realloc(mine, sizeof *all * (size_t)(nmine + c->nrecs));
    if (!all)
      err = taso_error(TASO_ERR_NOMEM, "%lld graph records", (long long)(nmine + c->nrecs));
    else {
      memcpy(all + nmine, c->recs, sizeof *all * (size_t)c->nrecs);
      mine = all;
      nmine += c->nrecs;
    }
  }
  free(c->recs);
  c->recs = NULL;
  err = taso_agree(c->comm, err);
  lap(laps, cpu, LAP_EXCHANGE);
  if (err == TASO_OK) err = pair_all(c, mine, nmine, pr);
  free(mine);
  return taso_agree(c->comm, err);
}

/* Collective: one pair per pattern (the smallest text of it), parsed and
 * sorted on every rank. */
static taso_err_t patterns(gen_t *c, pairing_t *pr, taso_cand_t **cands, int64_t *npatterns,
                           pruned_list_t *pruned) {
  char **keys = NULL;
  int64_t nkeys = 0;
  taso_err_t err = gather_keys(c, &pr->keys, &keys, &nkeys);
  lines_free(&pr->keys);
  if (err == TASO_OK) err = gather_pruned(c, &pr->pruned, pruned);
  lines_free(&pr->pruned);
  if (err == TASO_OK) {
    *npatterns = unique(keys, nkeys, str_cmp, same_pattern);
    *cands = calloc((size_t)*npatterns + 1, sizeof **cands);
    if (!*cands) err = taso_error(TASO_ERR_NOMEM, "candidates");
    for (int64_t i = 0; i < *npatterns; i++) {
      char *pair = strchr(keys[i], '\t') + 1;
      memmove(keys[i], pair, strlen(pair) + 1);
      if (err == TASO_OK) {
        err = taso_cand_parse(&c->job->inputs, keys[i], &(*cands)[i]);
        if (err != TASO_OK) err = taso_error_prefix(err, "candidate '%s': ", keys[i]);
      } else {
        free(keys[i]);
      }
    }
    if (err == TASO_OK && *npatterns > 1)
      qsort(*cands, (size_t)*npatterns, sizeof **cands, cand_cmp);
  }
  free(keys);
  return taso_agree(c->comm, err);
}

static void gen_free(gen_t *c) {
  taso_memo_free(c->m);
  taso_enum_free(c->e);
  free(c->tid);
  free(c->twins);
  free(c->outputs);
  free(c->recs);
  free(c->reps.slot);
  free(c->owned.slot);
  free(c->smallest.slot);
}

taso_err_t taso_generate(const taso_generate_opts_t *o, taso_generate_result_t *r) {
  memset(r, 0, sizeof *r);
  gen_t c;
  memset(&c, 0, sizeof c);
  c.comm = o->comm;
  c.job = o->job;
  c.name = o->name;
  c.derive = o->derive;
  MPI_Comm_rank(c.comm, &c.rank);
  MPI_Comm_size(c.comm, &c.size);
  const taso_job_t *job = o->job;
  c.ckpt = (taso_checkpoint_t){.dir = o->checkpoint,
                               .job = taso_fnv64(TASO_FNV_START, job->text, strlen(job->text)),
                               .rank = c.rank,
                               .size = c.size};
  c.until_level = o->until_level;
  double t_count = MPI_Wtime(), cpu_count = cpu_seconds();
  bool levels = !strcmp(job->method, "representatives");
  taso_err_t err = open_walk(&c, &r->rnd, levels);

  /* 1. walk the shard, evaluating every new tensor */
  int64_t total = err == TASO_OK ? taso_enum_total(c.e) : 0;
  int64_t lo = total * c.rank / c.size, hi = total * (c.rank + 1) / c.size;
  double t0 = MPI_Wtime(), cpu0 = cpu_seconds();
  int64_t nshared = 0, volume[3] = {0, 0, 0};
  if (err == TASO_OK) {
    int nv;
    taso_enum_variants(c.e, &nv);
    if (levels) {
      say(&c,
          "generating graphs of up to %d operators (%d operator variants) level by level "
          "from class representatives on %d ranks\n",
          job->max_ops, nv, c.size);
      int64_t graphs = 0;
      c.levels = true;
      err = generate_levels(&c, &graphs, &nshared, &volume[0]);
      c.visited = graphs;
      r->stopped_level = c.stopped;
      if (err == TASO_OK && c.stopped) {
        gen_free(&c);
        return TASO_OK;
      }
    } else {
      say(&c,
          "enumerating %lld graphs of up to %d operators (%d operator variants) on %d ranks; "
          "count pass %.2f s (%.2f s CPU on rank 0)\n",
          (long long)taso_enum_graphs(c.e), job->max_ops, nv, c.size, t0 - t_count,
          cpu0 - cpu_count);
      progress_begin(&c, &c.progress, "graphs (rank 0's shard)", -1);
      taso_enum_visitor_t v = {.ctx = &c, .push = push, .visit = visit_count};
      err = taso_enum_run(c.e, lo, hi, &v);
    }
  }
  /* CPU time, so that oversubscribed ranks still measure their own work */
  double t_walk = cpu_seconds() - cpu0;
  err = taso_agree(c.comm, err);
  int64_t graphs_mine = c.visited;
  /* per-rank work: graphs and walk time, max over mean */
  double work[2] = {(double)graphs_mine, t_walk}, wmax[2] = {0, 0}, wsum[2] = {0, 0};
  if (err == TASO_OK) {
    MPI_Allreduce(work, wmax, 2, MPI_DOUBLE, MPI_MAX, c.comm);
    MPI_Allreduce(work, wsum, 2, MPI_DOUBLE, MPI_SUM, c.comm);
    say(&c, "walk: %.0f graphs/s per rank; balance max/mean: graphs %.3f, CPU time %.3f\n",
        wsum[0] / (wsum[1] > 0 ? wsum[1] : 1), wmax[0] * c.size / (wsum[0] > 0 ? wsum[0] : 1),
        wmax[1] * c.size / (wsum[1] > 0 ? wsum[1] : 1));
  }
  static const char *const lap_names[NLAPS] = {
      "walk 1", "tensor classes", "walk 2", "exchange+disjoint", "pairing", "renaming", "implied"};
  double laps[NLAPS + 1] = {t0, MPI_Wtime()}, cpu[NLAPS + 1] = {cpu0, t_walk + cpu0};
  /* 2. shared tensor classes (level by level: the last level's) */
  if (err == TASO_OK && !levels) err = shared_tensors(&c, false, &nshared, &volume[0]);
  lap(laps, cpu, LAP_CLASSES);

  /* 3. walk 2: records of graphs whose outputs are all shared and
   * connected, to the owners of their fingerprints; paired there */
  int64_t input_graphs_n = 0, built = 0;
  int64_t exchanged = 0;
  pairing_t pr;
  memset(&pr, 0, sizeof pr);
  if (err == TASO_OK)
    err = pair_records(&c, levels, lo, hi, laps, cpu, &input_graphs_n, &exchanged, &built, volume,
                       &pr);
  lap(laps, cpu, LAP_PAIR);
  enum {
    GRAPHS,
    EXCHANGED,
    BUILT,
    EQUAL_OUTPUTS,
    CLASSES,
    PAIRS,
    COMMON,
    INDEPENDENT,
    CONSTANT,
    NSUMS
  };
  int64_t sums[NSUMS] = {graphs_mine,
                         exchanged,
                         built,
                         c.dup_outputs,
                         pr.classes,
                         pr.pairs,
                         pr.common,
                         pr.independent,
                         c.refused_before + (c.e ? taso_enum_constant_refused(c.e) : 0)};
  if (err == TASO_OK) MPI_Allreduce(MPI_IN_PLACE, sums, NSUMS, MPI_INT64_T, MPI_SUM, c.comm);

  /* 4. renaming duplicates and implied candidates, on global sorted data */
  int64_t npatterns = 0, nchecked = 0, kept = 0, nback = 0;
  pruned_list_t pruned = {0};
  if (err == TASO_OK) err = patterns(&c, &pr, &r->cands, &npatterns, &pruned);
  if (err == TASO_OK) err = recheck(&c, &r->rnd, r->cands, npatterns, &nchecked);
  lap(laps, cpu, LAP_RENAMING);
  if (err == TASO_OK) err = prune_implied(&c, r->cands, nchecked, &kept, &pruned);
  int64_t kept_implied = kept;
  r->ncands = npatterns;
  if (err == TASO_OK)
    err = keep_underived(&c, &r->rnd, &r->cands, &r->ncands, &kept, &pruned, &nback);
  lap(laps, cpu, LAP_IMPLIED);
  double t_total = MPI_Wtime() - t0;
  double cpu_max[NLAPS];
  for (int i = 0; i < NLAPS; i++)
    cpu_max[i] = cpu[i + 1] - cpu[i];
  if (err == TASO_OK) MPI_Allreduce(MPI_IN_PLACE, cpu_max, NLAPS, MPI_DOUBLE, MPI_MAX, c.comm);

  int64_t counts[TASO_GENERATE_COUNTS] = {sums[GRAPHS],
                                          input_graphs_n,
                                          sums[CONSTANT],
                                          sums[EXCHANGED],
                                          sums[BUILT],
                                          sums[EQUAL_OUTPUTS],
                                          nshared,
                                          sums[CLASSES],
                                          sums[PAIRS],
                                          npatterns - nchecked,
                                          sums[COMMON],
                                          sums[INDEPENDENT],
                                          sums[PAIRS] - sums[COMMON] - sums[INDEPENDENT] -
                                              npatterns,
                                          nchecked - kept_implied,
                                          nback,
                                          kept};
  memcpy(r->counts, counts, sizeof counts);
  r->kept = kept;
  r->pruned = pruned.v;
  r->npruned = pruned.n;
  int at =
      snprintf(r->timing, sizeof r->timing,
               "  walk %.2f s CPU, all %.2f s on rank 0; exchanged %lld + %lld + %lld bytes "
               "from rank 0\n  seconds (CPU rank 0/CPU max/wall): ",
               t_walk, t_total, (long long)volume[0], (long long)volume[1], (long long)volume[2]);
  for (int i = 0; i < NLAPS && at < (int)sizeof r->timing; i++)
    at += snprintf(r->timing + at, sizeof r->timing - (size_t)at, "%s%s %.2f/%.2f/%.2f",
                   i ? ", " : "", lap_names[i], cpu[i + 1] - cpu[i], cpu_max[i],
                   laps[i + 1] - laps[i]);
  gen_free(&c);
  return err;
}

void taso_generate_result_free(taso_generate_result_t *r) {
  for (int64_t i = 0; i < r->ncands; i++)
    taso_cand_free(&r->cands[i]);
  free(r->cands);
  free(r->pruned);
  taso_fp_inputs_free(&r->rnd);
  memset(r, 0, sizeof *r);
}
