/* The rule guard: re-proving a substitution at a new shape relation, with
 * a cache of the verdicts (see rule_guard.h). */
#define _POSIX_C_SOURCE 200809L

#include "rule_guard.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "shape_cond.h"
#include "verifier.h"

/* ---- a byte-keyed hash map ----------------------------------------------- */

/* One entry: a verdict (per rule, direction and relation key). */
typedef struct entry {
  struct entry *next;
  uint64_t hash;
  size_t len;
  uint8_t *key;
  bool verdict;
} entry_t;

typedef struct {
  entry_t **bucket;
  size_t nbuckets, n;
} map_t;

static uint64_t bytes_hash(const uint8_t *k, size_t len) {
  uint64_t h = 1469598103934665603ull; /* FNV-1a */
  for (size_t i = 0; i < len; i++)
    h = (h ^ k[i]) * 1099511628211ull;
  return h;
}

static entry_t *map_find(const map_t *m, const uint8_t *k, size_t len) {
  if (!m->nbuckets) return NULL;
  uint64_t h = bytes_hash(k, len);
  for (entry_t *e = m->bucket[h % m->nbuckets]; e; e = e->next)
    if (e->hash == h && e->len == len && !memcmp(e->key, k, len)) return e;
  return NULL;
}

/* Doubles the buckets when the map is as full as it is wide. */
static taso_err_t map_grow(map_t *m) {
  if (m->n < m->nbuckets) return TASO_OK;
  size_t nb = m->nbuckets ? 2 * m->nbuckets : 64;
  entry_t **b = calloc(nb, sizeof *b);
  if (!b) return taso_error(TASO_ERR_NOMEM, "rule guard");
  for (size_t i = 0; i < m->nbuckets; i++)
    for (entry_t *e = m->bucket[i], *next; e; e = next) {
      next = e->next;
      e->next = b[e->hash % nb];
      b[e->hash % nb] = e;
    }
  free(m->bucket);
  m->bucket = b;
  m->nbuckets = nb;
  return TASO_OK;
}

/* A new entry for a key that is not in the map. */
static taso_err_t map_add(map_t *m, const uint8_t *k, size_t len, entry_t **out) {
  TASO_TRY(map_grow(m));
  entry_t *e = calloc(1, sizeof *e);
  if (e) e->key = malloc(len + 1);
  if (!e || !e->key) {
    free(e);
    return taso_error(TASO_ERR_NOMEM, "rule guard");
  }
  memcpy(e->key, k, len);
  e->len = len;
  e->hash = bytes_hash(k, len);
  e->next = m->bucket[e->hash % m->nbuckets];
  m->bucket[e->hash % m->nbuckets] = e;
  m->n++;
  *out = e;
  return TASO_OK;
}

static void map_free(map_t *m) {
  for (size_t i = 0; i < m->nbuckets; i++)
    for (entry_t *e = m->bucket[i], *next; e; e = next) {
      next = e->next;
      free(e->key);
      free(e);
    }
  free(m->bucket);
  memset(m, 0, sizeof *m);
}

/* ---- keys ----------------------------------------------------------------- */

typedef struct {
  uint8_t *b;
  size_t n, cap;
} buf_t;

static taso_err_t put(buf_t *k, const void *p, size_t len) {
  if (k->n + len > k->cap) {
    size_t cap = 2 * (k->n + len) + 64;
    uint8_t *b = realloc(k->b, cap);
    if (!b) return taso_error(TASO_ERR_NOMEM, "rule guard");
    k->b = b;
    k->cap = cap;
  }
  memcpy(k->b + k->n, p, len);
  k->n += len;
  return TASO_OK;
}

/* What every key starts with: the rule, the direction and the kind of
 * entry ('V': a verdict). */
static taso_err_t key_head(buf_t *k, int64_t rule, int dir, char kind) {
  k->n = 0;
  uint8_t d = (uint8_t)dir;
  TASO_TRY(put(k, &rule, sizeof rule));
  TASO_TRY(put(k, &d, 1));
  return put(k, &kind, 1);
}

/* The relation of an instance, from the condition computed there: the
 * rank of every slot and the order and divisibility of every compared
 * pair. The pairs' atoms depend only on the graphs and the ranks, so two
 * instances of one rule have equal keys exactly when each holds the
 * other's condition (taso_shape_cond_holds). */
static taso_err_t key_relation(buf_t *k, const taso_shape_cond_t *c) {
  for (int s = 0; s < c->nslots; s++) {
    int8_t r = (int8_t)(c->slot_atom[s] < 0 ? -1 : c->slot_rank[s]);
    TASO_TRY(put(k, &r, 1));
  }
  for (int p = 0; p < c->npairs; p++) {
    int8_t od[2] = {c->pair[p].order, c->pair[p].divides};
    TASO_TRY(put(k, od, 2));
  }
  return TASO_OK;
}

/* ---- the guard ---------------------------------------------------------- */

struct taso_rule_guard {
  taso_inputs_t in; /* the substitutions' table (a copy) */
  const taso_axioms_t *ax;
  taso_rule_guard_opts_t opt;
  taso_prover_t *prover; /* made at the first proof */
  map_t verdicts;
  buf_t key;
  double *seconds; /* per decision */
  int64_t nseconds, capseconds;
  taso_rule_guard_stats_t st;
  bool optimistic; /* taso_rule_guard_optimistic */
  entry_t **log;   /* the verdicts this guard decided, in order (for export) */
  int64_t nlog, caplog;
  uint64_t rng; /* the realization search's; reset per decision */
  char refusal[TASO_REASON_LEN + 64];
  bool probe;       /* note undecided relations as questions, decide nothing */
  bool cached_only; /* taso_rule_guard_cached_only */
  bool hopeful;     /* taso_rule_guard_hopeful */
  map_t asked;      /* the questions' keys, since the last clear */
  taso_rule_guard_question_t *questions;
  int64_t nquestions, capquestions;
};

static double now_seconds(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

taso_err_t taso_rule_guard_open(const taso_inputs_t *in, const taso_axioms_t *ax,
                                const taso_rule_guard_opts_t *opts, taso_rule_guard_t **out) {
  *out = NULL;
  taso_rule_guard_t *g = calloc(1, sizeof *g);
  if (!g) return taso_error(TASO_ERR_NOMEM, "rule guard");
  g->ax = ax;
  if (opts) g->opt = *opts;
  if (g->opt.numeric_max_macs <= 0) g->opt.numeric_max_macs = (int64_t)1 << 24;
  if (g->opt.shrink_tries <= 0) g->opt.shrink_tries = 64;
  g->in.n = in->n;
  g->in.v = malloc(sizeof *g->in.v * (size_t)(in->n + 1));
  if (!g->in.v) {
    free(g);
    return taso_error(TASO_ERR_NOMEM, "rule guard");
  }
  memcpy(g->in.v, in->v, sizeof *g->in.v * (size_t)in->n);
  *out = g;
  return TASO_OK;
}

void taso_rule_guard_close(taso_rule_guard_t *g) {
  if (!g) return;
  taso_prover_free(g->prover);
  map_free(&g->verdicts);
  taso_rule_guard_questions_clear(g);
  free(g->questions);
  free(g->key.b);
  free(g->seconds);
  free(g->log);
  free(g->in.v);
  free(g);
}

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

void taso_rule_guard_stats(const taso_rule_guard_t *g, taso_rule_guard_stats_t *s) {
  *s = g->st;
  s->median_seconds = 0;
  double *t = g->nseconds ? malloc(sizeof *t * (size_t)g->nseconds) : NULL;
  if (!t) return;
  memcpy(t, g->seconds, sizeof *t * (size_t)g->nseconds);
  qsort(t, (size_t)g->nseconds, sizeof *t, cmp_double);
  s->median_seconds = t[g->nseconds / 2];
  free(t);
}

const char *taso_rule_guard_last_refusal(const taso_rule_guard_t *g) {
  return g->refusal;
}

/* ---- the numeric check's instance ---------------------------------------- */

/* Multiply-accumulates of evaluating g at in (both sides' work is about
 * this); -1 where g does not type-check there. */
static double eval_cost(const taso_graph_t *g, const taso_inputs_t *in) {
  taso_tensor_t *t = malloc(sizeof *t * (size_t)(2 * g->nnodes + 1));
  double cost = -1;
  if (t && taso_graph_infer(g, in, t) == TASO_OK) {
    cost = 0;
    for (int i = 0; i < g->nnodes; i++) {
      const taso_node_t *n = &g->nodes[i];
      if (n->kind == TASO_OP_INPUT) continue;
      double out = (double)taso_tensor_size(&t[2 * i]), per = 1;
      if (n->kind == TASO_OP_CONV2D) {
        const taso_tensor_t *w = &t[n->in[1]];
        per = (double)w->dim[1] * w->dim[2] * w->dim[3];
      } else if (n->kind == TASO_OP_MATMUL) {
        const taso_tensor_t *x = &t[n->in[0]];
        per = (double)x->dim[x->rank - 1];
      } else if (n->kind == TASO_OP_POOL_AVG || n->kind == TASO_OP_POOL_MAX) {
        per = (double)n->p.kernel[0] * n->p.kernel[1];
      }
      if (taso_ops[n->kind].outputs > 1) out += (double)taso_tensor_size(&t[2 * i + 1]);
      cost += out * per;
    }
  }
  free(t);
  return cost;
}

static uint64_t next_rand(taso_rule_guard_t *g) {
  uint64_t z = (g->rng += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

static int64_t gcd64(int64_t a, int64_t b) {
  while (b) {
    int64_t r = a % b;
    a = b;
    b = r;
  }
  return a;
}

#define SMALL 8

/* One candidate size for v, try t: sizes up to keep (the largest
 * parameter: kernels, strides, the literal 1, which sizes are compared
 * with) stay as they are; even tries divide the larger ones by a random
 * divisor of their gcd (order and divisibility among them survive), odd
 * tries map them, in increasing order, to increasing values just above
 * keep with random gaps (order survives, divisibility by chance). Which
 * one worked is checked by the caller. */
static int32_t shrink(int t, int32_t v, int32_t keep, int64_t common, const int32_t *sorted,
                      int nsorted, const int32_t *gap_to) {
  if (v <= keep) return v;
  if (t % 2 == 0) return (int32_t)(v / common);
  for (int k = 0; k < nsorted; k++)
    if (sorted[k] == v) return gap_to[k];
  return v;
}

static int cmp_i32(const void *a, const void *b) {
  int32_t x = *(const int32_t *)a, y = *(const int32_t *)b;
  return (x > y) - (x < y);
}

/* The distinct sizes above keep of the inputs lhs uses, sorted (at most
 * cap); their gcd in *common. */
static int large_sizes(const taso_graph_t *lhs, const taso_inputs_t *at, int32_t keep, int32_t *out,
                       int cap, int64_t *common) {
  int n = 0;
  *common = 0;
  for (int i = 0; i < lhs->nnodes; i++) {
    if (lhs->nodes[i].kind != TASO_OP_INPUT) continue;
    const taso_tensor_t *t = &at->v[lhs->nodes[i].p.input].type;
    for (int a = 0; a < t->rank; a++) {
      int32_t v = t->dim[a];
      bool seen = v <= keep;
      for (int k = 0; k < n && !seen; k++)
        seen = out[k] == v;
      if (seen || n == cap) continue;
      out[n++] = v;
      *common = gcd64(*common, v);
    }
  }
  qsort(out, (size_t)n, sizeof *out, cmp_i32);
  return n;
}

/* A random divisor > 1 of common (1 when it has none), for try t. */
static int64_t random_divisor(taso_rule_guard_t *g, int64_t common) {
  int64_t div[64];
  int nd = 0;
  for (int64_t d = 2; d <= common && nd < 64; d++)
    if (common % d == 0) div[nd++] = d;
  return nd ? div[next_rand(g) % (uint64_t)nd] : 1;
}

/* Small sizes for the instance at that stand in its relation (key) and
 * cost at most cap multiply-adds: *found, with small the table. */
static taso_err_t realize_small(taso_rule_guard_t *g, const taso_graph_t *lhs,
                                const taso_graph_t *rhs, const taso_inputs_t *at, const buf_t *want,
                                double cap, taso_inputs_t *small, bool *found) {
  int32_t sorted[64], gap_to[64], param = 1;
  taso_shape_cond_t c;
  if (taso_shape_cond_of(lhs, rhs, at, &c) == TASO_OK) /* the parameters, at the end */
    for (int a = c.natoms - c.nparams; a < c.natoms; a++)
      param = c.value[a] > param ? c.value[a] : param;
  taso_shape_cond_free(&c);
  buf_t k = {0};
  taso_err_t err = TASO_OK;
  *found = false;
  for (int t = 0; t < g->opt.shrink_tries && !*found && err == TASO_OK; t++) {
    /* half the tries keep every size up to SMALL: more divisibility
     * survives; the others only up to the largest parameter */
    int32_t keep = t % 4 < 2 ? SMALL : param;
    int64_t common;
    int n = large_sizes(lhs, at, keep, sorted, 64, &common);
    int64_t d = t % 2 == 0 ? random_divisor(g, common) : 1;
    for (int j = 0, v = keep; j < n; j++)
      gap_to[j] = v += 1 + (int)(next_rand(g) % 4);
    memcpy(small->v, at->v, sizeof *small->v * (size_t)at->n);
    for (int i = 0; i < lhs->nnodes; i++) {
      if (lhs->nodes[i].kind != TASO_OP_INPUT) continue;
      taso_tensor_t *ty = &small->v[lhs->nodes[i].p.input].type;
      const taso_tensor_t *orig = &at->v[lhs->nodes[i].p.input].type;
      for (int a = 0; a < ty->rank; a++)
        ty->dim[a] = shrink(t, orig->dim[a], keep, d, sorted, n, gap_to);
    }
    double cost = eval_cost(lhs, small) + eval_cost(rhs, small);
    if (cost < 0 || cost > cap) continue;
    if (taso_shape_cond_of(lhs, rhs, small, &c) != TASO_OK) continue; /* no longer types */
    k.n = 0;
    err = key_relation(&k, &c);
    *found = err == TASO_OK && k.n == want->n && !memcmp(k.b, want->b, k.n);
    taso_shape_cond_free(&c);
  }
  free(k.b);
  return err;
}

/* ---- deciding a relation --------------------------------------------------- */

/* Refuses with a reason, kept for taso_rule_guard_last_refusal. */
static void refuse(taso_rule_guard_t *g, bool *ok, const char *what, const char *why) {
  *ok = false;
  snprintf(g->refusal, sizeof g->refusal, "%s%s%.200s", what, why[0] ? ": " : "", why);
}

/* Step 1: the numeric check, at small shapes of the same relation (want:
 * its key) where the bound ones cost over SMALL_FIRST_MACS and small ones
 * are found, else at the bound shapes up to numeric_max_macs. The same
 * claim that lets a verdict serve every instance of its relation lets
 * the small instance stand for the bound one; evaluated in double at
 * the bound shapes, a check of a few million multiply-adds took most of
 * a first eqsat search (Inception-v3: 344 proofs, 6.5 s; 2.3 s so). */
enum { SMALL_FIRST_MACS = 1 << 18 };

static taso_err_t numeric(taso_rule_guard_t *g, const taso_graph_t *lhs, const taso_graph_t *rhs,
                          const taso_inputs_t *at, const buf_t *want, bool *ok) {
  const taso_inputs_t *where = at;
  taso_inputs_t small = {.n = at->n, .v = malloc(sizeof *small.v * (size_t)(at->n + 1))};
  if (!small.v) return taso_error(TASO_ERR_NOMEM, "rule guard");
  taso_err_t err = TASO_OK;
  *ok = true;
  double cost = eval_cost(lhs, at) + eval_cost(rhs, at);
  if (cost > (double)SMALL_FIRST_MACS) {
    bool found, cheap = cost <= (double)g->opt.numeric_max_macs;
    err = realize_small(g, lhs, rhs, at, want,
                        cheap ? SMALL_FIRST_MACS : (double)g->opt.numeric_max_macs, &small, &found);
    if (err == TASO_OK && !found && !cheap) {
      g->st.no_realization++;
      refuse(g, ok, "no small sizes in this relation for the numeric check", "");
    }
    g->st.numeric_small += found;
    if (found || !cheap) where = &small;
  }
  if (err == TASO_OK && *ok) {
    char why[TASO_REASON_LEN] = "";
    bool equal = false;
    err = taso_verify_numeric(where, lhs, rhs, g->opt.seed, &equal, why, sizeof why);
    if (err != TASO_OK && err != TASO_ERR_NOMEM) { /* a side does not type-check there */
      snprintf(why, sizeof why, "%s", taso_error_detail());
      err = TASO_OK;
    }
    if (err == TASO_OK && !equal) {
      g->st.numeric_false++;
      refuse(g, ok, "numeric check", why);
    }
  }
  free(small.v);
  return err;
}

/* Step 2: the proof at the bound shapes (rule_guard.h says why). */
static taso_err_t prove(taso_rule_guard_t *g, const taso_graph_t *lhs, const taso_graph_t *rhs,
                        const taso_inputs_t *at, bool *ok) {
  if (!g->prover) TASO_TRY(taso_prover_new_limited(g->ax, &g->opt.limits, &g->prover));
  taso_verify_result_t r;
  TASO_TRY(taso_prover_prove(g->prover, at, lhs, rhs, &r));
  *ok = r.verdict == TASO_VERDICT_PROVED;
  if (!*ok) refuse(g, ok, "not proved", r.reason);
  g->st.proved += *ok;
  return TASO_OK;
}

static taso_err_t note_seconds(taso_rule_guard_t *g, double s) {
  if (g->nseconds == g->capseconds) {
    int64_t cap = 2 * g->capseconds + 64;
    double *p = realloc(g->seconds, sizeof *p * (size_t)cap);
    if (!p) return taso_error(TASO_ERR_NOMEM, "rule guard");
    g->seconds = p;
    g->capseconds = cap;
  }
  g->seconds[g->nseconds++] = s;
  g->st.proof_seconds += s;
  return TASO_OK;
}

/* A relation not in the cache: both steps, then the verdict is kept. */
static taso_err_t decide(taso_rule_guard_t *g, const taso_graph_t *lhs, const taso_graph_t *rhs,
                         const taso_inputs_t *at, const buf_t *rel, bool *ok) {
  double t0 = now_seconds();
  g->st.proofs++;
  /* the small sizes' randomness from the seed and the key alone: a verdict
   * does not depend on which relations this guard decided before (ranks
   * of taso-generate each decide their own share) */
  g->rng = (g->opt.seed ^ bytes_hash(g->key.b, g->key.n)) * 0x9e3779b97f4a7c15ull + 1;
  TASO_TRY(numeric(g, lhs, rhs, at, rel, ok));
  if (*ok) TASO_TRY(prove(g, lhs, rhs, at, ok));
  TASO_TRY(note_seconds(g, now_seconds() - t0));
  entry_t *e;
  TASO_TRY(map_add(&g->verdicts, g->key.b, g->key.n, &e));
  e->verdict = *ok;
  if (g->nlog == g->caplog) {
    int64_t cap = 2 * g->caplog + 256;
    entry_t **l = realloc(g->log, sizeof *l * (size_t)cap);
    if (!l) return taso_error(TASO_ERR_NOMEM, "rule guard");
    g->log = l;
    g->caplog = cap;
  }
  g->log[g->nlog++] = e;
  return TASO_OK;
}

/* Probing: notes the relation in g->key, at instance at, as a question
 * (once per key) and refuses the match. */
static taso_err_t ask(taso_rule_guard_t *g, int64_t rule, int dir, const taso_inputs_t *at,
                      bool *ok) {
  *ok = false;
  if (map_find(&g->asked, g->key.b, g->key.n)) return TASO_OK;
  if (g->nquestions == g->capquestions) {
    int64_t cap = 2 * g->capquestions + 16;
    taso_rule_guard_question_t *q = realloc(g->questions, sizeof *q * (size_t)cap);
    if (!q) return taso_error(TASO_ERR_NOMEM, "rule guard questions");
    g->questions = q;
    g->capquestions = cap;
  }
  taso_rule_guard_question_t *q = &g->questions[g->nquestions];
  *q =
      (taso_rule_guard_question_t){.rule = rule, .dir = dir, .len = g->key.n, .seq = g->nquestions};
  q->key = malloc(g->key.n + 1);
  q->types = malloc(sizeof *q->types * (size_t)(at->n + 1));
  entry_t *e = NULL;
  taso_err_t err = q->key && q->types ? map_add(&g->asked, g->key.b, g->key.n, &e)
                                      : taso_error(TASO_ERR_NOMEM, "rule guard questions");
  if (err != TASO_OK) {
    free(q->key);
    free(q->types);
    return err;
  }
  memcpy(q->key, g->key.b, g->key.n);
  for (int i = 0; i < at->n; i++)
    q->types[i] = at->v[i].type;
  g->nquestions++;
  return TASO_OK;
}

/* A match outside the recorded relation: its relation's verdict, from the
 * cache or decided now. */
static taso_err_t by_relation(taso_rule_guard_t *g, int64_t rule, int dir, const taso_graph_t *lhs,
                              const taso_graph_t *rhs, const taso_inputs_t *at, bool *ok) {
  taso_shape_cond_t c;
  taso_err_t err = taso_shape_cond_of(lhs, rhs, at, &c);
  if (err != TASO_OK) { /* a side does not type-check: nothing to apply */
    *ok = false;
    return err == TASO_ERR_NOMEM ? err : TASO_OK;
  }
  err = key_head(&g->key, rule, dir, 'V');
  if (err == TASO_OK) err = key_relation(&g->key, &c);
  taso_shape_cond_free(&c);
  TASO_TRY(err);
  entry_t *e = map_find(&g->verdicts, g->key.b, g->key.n);
  if (e) {
    g->st.cache_hits += !g->probe && !g->hopeful;
    *ok = e->verdict;
    return TASO_OK;
  }
  if (g->probe) return ask(g, rule, dir, at, ok);
  if (g->hopeful) { /* accepted unproved, nothing kept */
    *ok = true;
    return TASO_OK;
  }
  if (g->cached_only) { /* refused unproved, nothing kept */
    g->st.unproved++;
    *ok = false;
    return TASO_OK;
  }
  /* the relation part of the key, for the small-size search */
  buf_t rel = {.b = g->key.b + sizeof rule + 2, .n = g->key.n - sizeof rule - 2};
  return decide(g, lhs, rhs, at, &rel, ok);
}

/* The decision for one bound instance, counted. */
static taso_err_t judge(taso_rule_guard_t *g, int64_t rule, int dir, const taso_graph_t *lhs,
                        const taso_graph_t *rhs, const taso_shape_cond_t *cond,
                        const taso_inputs_t *at, const taso_tensor_t *lt, const taso_tensor_t *rt,
                        bool *ok) {
  if (g->optimistic) { /* counted apart: taso_rule_guard_optimistic */
    g->st.optimistic++;
    *ok = true;
    return TASO_OK;
  }
  if (g->hopeful) { /* counted apart, as optimistic */
    g->st.optimistic++;
    *ok = true;
    return taso_shape_cond_holds(cond, lt, rt) ? TASO_OK
                                               : by_relation(g, rule, dir, lhs, rhs, at, ok);
  }
  if (g->probe) { /* nothing is rewritten or counted: only questions noted */
    *ok = false;
    return taso_shape_cond_holds(cond, lt, rt) ? TASO_OK
                                               : by_relation(g, rule, dir, lhs, rhs, at, ok);
  }
  g->st.matches++;
  if (taso_shape_cond_holds(cond, lt, rt)) {
    g->st.by_condition++;
    *ok = true;
    return TASO_OK;
  }
  int64_t unproved = g->st.unproved;
  TASO_TRY(by_relation(g, rule, dir, lhs, rhs, at, ok));
  g->st.by_reproof += *ok;
  g->st.refused += !*ok && g->st.unproved == unproved;
  return TASO_OK;
}

typedef struct {
  taso_rule_guard_t *g;
  int64_t rule;
  int dir;
  const taso_graph_t *lhs, *rhs;
  const taso_shape_cond_t *cond;
} call_t;

static taso_err_t guard_accepts(void *ctx, const taso_inputs_t *at, const taso_tensor_t *lt,
                                const taso_tensor_t *rt, bool *ok) {
  call_t *c = ctx;
  return judge(c->g, c->rule, c->dir, c->lhs, c->rhs, c->cond, at, lt, rt, ok);
}

taso_err_t taso_rewrite_all_guarded(taso_rule_guard_t *g, int64_t rule, int dir,
                                    const taso_graph_t *host, const taso_tensor_t *host_types,
                                    const taso_graph_t *lhs, const taso_graph_t *rhs,
                                    const taso_shape_cond_t *cond, taso_rewrite_fn fn, void *ctx) {
  call_t c = {.g = g, .rule = rule, .dir = dir, .lhs = lhs, .rhs = rhs, .cond = cond};
  return taso_rewrite_all_accepting(host, host_types, lhs, rhs, &g->in, guard_accepts, &c, fn, ctx);
}

taso_err_t taso_rewrite_all_guarded_traced(taso_rule_guard_t *g, int64_t rule, int dir,
                                           const taso_graph_t *host,
                                           const taso_tensor_t *host_types,
                                           const uint64_t *host_params, const taso_graph_t *lhs,
                                           const taso_graph_t *rhs, const taso_shape_cond_t *cond,
                                           taso_traced_fn fn, void *ctx) {
  call_t c = {.g = g, .rule = rule, .dir = dir, .lhs = lhs, .rhs = rhs, .cond = cond};
  return taso_rewrite_all_traced(host, host_types, host_params, lhs, rhs, &g->in, guard_accepts, &c,
                                 fn, ctx);
}

taso_err_t taso_rule_guard_accepts(taso_rule_guard_t *g, int64_t rule, int dir,
                                   const taso_graph_t *lhs, const taso_graph_t *rhs,
                                   const taso_shape_cond_t *cond, const taso_inputs_t *at,
                                   bool *accept) {
  *accept = false;
  taso_tensor_t *lt = malloc(sizeof *lt * (size_t)(2 * lhs->nnodes + 1));
  taso_tensor_t *rt = malloc(sizeof *rt * (size_t)(2 * rhs->nnodes + 1));
  taso_err_t err = lt && rt ? TASO_OK : taso_error(TASO_ERR_NOMEM, "rule guard");
  if (err == TASO_OK && taso_graph_infer(lhs, at, lt) == TASO_OK &&
      taso_graph_infer(rhs, at, rt) == TASO_OK)
    err = judge(g, rule, dir, lhs, rhs, cond, at, lt, rt, accept);
  free(lt);
  free(rt);
  return err;
}

int64_t taso_rule_guard_decided(const taso_rule_guard_t *g) {
  return g->nlog;
}

/* Each verdict as: key length (uint32), verdict (uint8), key. */
taso_err_t taso_rule_guard_export(const taso_rule_guard_t *g, int64_t from, uint8_t **buf,
                                  size_t *len) {
  size_t n = 0;
  for (int64_t i = from; i < g->nlog; i++)
    n += 5 + g->log[i]->len;
  uint8_t *b = malloc(n + 1);
  if (!b) return taso_error(TASO_ERR_NOMEM, "rule guard verdicts");
  size_t at = 0;
  for (int64_t i = from; i < g->nlog; i++) {
    uint32_t l = (uint32_t)g->log[i]->len;
    memcpy(b + at, &l, 4);
    b[at + 4] = g->log[i]->verdict;
    memcpy(b + at + 5, g->log[i]->key, l);
    at += 5 + l;
  }
  *buf = b;
  *len = n;
  return TASO_OK;
}

taso_err_t taso_rule_guard_import(taso_rule_guard_t *g, const uint8_t *buf, size_t len) {
  for (size_t at = 0; at < len;) {
    uint32_t l;
    if (len - at < 5) return taso_error(TASO_ERR_FORMAT, "rule guard verdicts: truncated");
    memcpy(&l, buf + at, 4);
    if (len - at - 5 < l) return taso_error(TASO_ERR_FORMAT, "rule guard verdicts: truncated");
    TASO_TRY(taso_rule_guard_put_verdict(g, buf + at + 5, l, buf[at + 4] != 0));
    at += 5 + l;
  }
  return TASO_OK;
}

void taso_rule_guard_optimistic(taso_rule_guard_t *g, bool on) {
  g->optimistic = on;
}

void taso_rule_guard_cached_only(taso_rule_guard_t *g, bool on) {
  g->cached_only = on;
}

void taso_rule_guard_hopeful(taso_rule_guard_t *g, bool on) {
  g->hopeful = on;
}

/* ---- sharing decisions ------------------------------------------------------ */

void taso_rule_guard_set_probe(taso_rule_guard_t *g, bool on) {
  g->probe = on;
}

int64_t taso_rule_guard_questions(const taso_rule_guard_t *g,
                                  const taso_rule_guard_question_t **q) {
  *q = g->questions;
  return g->nquestions;
}

void taso_rule_guard_questions_clear(taso_rule_guard_t *g) {
  for (int64_t i = 0; i < g->nquestions; i++) {
    free(g->questions[i].key);
    free(g->questions[i].types);
  }
  g->nquestions = 0;
  map_free(&g->asked);
}

int taso_rule_guard_ninputs(const taso_rule_guard_t *g) {
  return g->in.n;
}

taso_err_t taso_rule_guard_decide(taso_rule_guard_t *g, int64_t rule, int dir,
                                  const taso_graph_t *lhs, const taso_graph_t *rhs,
                                  const taso_tensor_t *types, bool *verdict) {
  *verdict = false;
  taso_inputs_t at = {.n = g->in.n, .v = malloc(sizeof *at.v * (size_t)(g->in.n + 1))};
  if (!at.v) return taso_error(TASO_ERR_NOMEM, "rule guard");
  memcpy(at.v, g->in.v, sizeof *at.v * (size_t)g->in.n);
  for (int i = 0; i < at.n; i++)
    at.v[i].type = types[i];
  bool probe = g->probe;
  g->probe = false;
  taso_err_t err = by_relation(g, rule, dir, lhs, rhs, &at, verdict);
  g->probe = probe;
  free(at.v);
  return err;
}

taso_err_t taso_rule_guard_put_verdict(taso_rule_guard_t *g, const uint8_t *key, size_t len,
                                       bool verdict) {
  if (map_find(&g->verdicts, key, len)) return TASO_OK;
  entry_t *e;
  TASO_TRY(map_add(&g->verdicts, key, len, &e));
  e->verdict = verdict;
  return TASO_OK;
}

/* ---- keeping verdicts between runs ------------------------------------------ */

/* The head of every verdict key: the rule, the direction, 'V' (key_head). */
#define HEAD_LEN (sizeof(int64_t) + 2)

taso_err_t taso_rule_guard_each_verdict(const taso_rule_guard_t *g, taso_verdict_fn fn, void *ctx) {
  for (size_t b = 0; b < g->verdicts.nbuckets; b++)
    for (const entry_t *e = g->verdicts.bucket[b]; e; e = e->next) {
      if (e->len < HEAD_LEN) continue;
      int64_t rule;
      memcpy(&rule, e->key, sizeof rule);
      TASO_TRY(
          fn(ctx, rule, e->key[sizeof rule], e->key + HEAD_LEN, e->len - HEAD_LEN, e->verdict));
    }
  return TASO_OK;
}

taso_err_t taso_rule_guard_put_relation(taso_rule_guard_t *g, int64_t rule, int dir,
                                        const uint8_t *rel, size_t len, bool verdict) {
  TASO_TRY(key_head(&g->key, rule, dir, 'V'));
  TASO_TRY(put(&g->key, rel, len));
  return taso_rule_guard_put_verdict(g, g->key.b, g->key.n, verdict);
}

void taso_rule_guard_settings(const taso_rule_guard_t *g, char *buf, size_t len) {
  const taso_rule_guard_opts_t *o = &g->opt;
  snprintf(buf, len,
           "timeout_s=%g rlimit=%llu memory_mb=%llu numeric_max_macs=%lld shrink_tries=%d "
           "seed=%llu axioms=%016llx",
           (double)o->limits.timeout_s, (unsigned long long)o->limits.rlimit,
           (unsigned long long)o->limits.memory_mb, (long long)o->numeric_max_macs, o->shrink_tries,
           (unsigned long long)o->seed, (unsigned long long)taso_axioms_digest(g->ax));
}
