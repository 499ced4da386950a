/*
 * The cost cache and graph costs (cost.h).
 *
 * The search asks for the cost of thousands of graphs that share almost
 * all their configurations, so the cache is keyed twice: by a packed form
 * of the configuration (its words without the split trees, which are empty
 * in configurations and make up most of their bytes; a fast hash, exact
 * comparison), and, only on a miss, by its canonical text key, which is
 * what a database and a measurement record. taso_rt_config_of_node and the
 * planner zero every configuration before filling it, and every field is
 * 4 bytes wide, so equal configurations pack equally.
 */
#define _POSIX_C_SOURCE 199309L /* clock_gettime */

#include "cost.h"

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "hash.h"

#define KEY_LEN 512

/* A configuration packed: kind, counts, fuse, layout, cold operands and
 * results, parameters, then the rank and sizes of each operand and result. */
#define PACKED_WORDS                                                                               \
  (7 + (int)(sizeof(taso_params_t) / 4) + (TASO_RT_MAX_IN + 2) * (1 + TASO_MAX_RANK))
struct packed {
  int32_t w[PACKED_WORDS];
};

_Static_assert(sizeof(taso_params_t) % 4 == 0, "parameters are 4-byte words");

static void pack(const taso_rt_config_t *cfg, packed_t *k) {
  int n = 0;
  memset(k, 0, sizeof *k);
  k->w[n++] = cfg->kind;
  k->w[n++] = cfg->nin;
  k->w[n++] = cfg->nout;
  k->w[n++] = (int32_t)cfg->fuse;
  k->w[n++] = cfg->layout;
  k->w[n++] = (int32_t)cfg->cold;
  k->w[n++] = cfg->cold_out;
  memcpy(&k->w[n], &cfg->p, sizeof cfg->p);
  n += (int)(sizeof cfg->p / 4);
  for (int i = 0; i < cfg->nin + cfg->nout && i < TASO_RT_MAX_IN + 2; i++) {
    const taso_tensor_t *t = i < cfg->nin ? &cfg->in[i] : &cfg->out[i - cfg->nin];
    k->w[n++] = t->rank;
    memcpy(&k->w[n], t->dim, sizeof t->dim);
    n += TASO_MAX_RANK;
  }
}

typedef struct {
  packed_t packed;      /* the configuration, packed */
  taso_rt_config_t cfg; /* the configuration */
  char *key;            /* taso_rt_config_key */
  double ms;            /* its cost */
  bool guessed;         /* ms is a guess (taso_cost_cache_set_guess), measured when next asked */
} entry_t;

/* What the cache's figures of one operator kind run against
 * taso_cost_estimate: the count, sum and sum of squares of log(ms / est). */
typedef struct {
  double n, sum, sum2;
} ratios_t;

struct taso_cost_cache {
  const taso_backend_t *be;
  taso_rt_ctx_t *ctx;
  taso_rt_ctx_t *ref_ctx; /* the reference backend, opened on the first fallback */
  taso_cost_options_t opt;
  entry_t *entries;
  int64_t n, cap;
  int64_t *slots; /* open addressing: entry index + 1, 0 empty */
  int64_t nslots; /* a power of two, at least twice n */
  taso_cost_stats_t stats;
  taso_rt_config_t *pending; /* deferred misses, distinct */
  packed_t *pending_keys;    /* theirs, packed */
  int64_t npending, pending_cap;
  int64_t deferrals;                  /* queries answered "pending" */
  bool guess;                         /* a miss is guessed, not measured */
  ratios_t ratios[TASO_OP_COUNT + 1]; /* per operator kind; the last: every kind */
  /* scratch of taso_cost_of_graph, kept between calls */
  bool *constant;
  int scratch_cap;
};

double taso_search_now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

double taso_search_cpu_now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

double taso_cost_estimate(const taso_rt_config_t *cfg) {
  double out = 0;
  for (int i = 0; i < cfg->nout; i++)
    out += (double)taso_tensor_size(&cfg->out[i]);
  double moved = out;
  for (int i = 0; i < cfg->nin; i++)
    moved += (double)taso_tensor_size(&cfg->in[i]);
  double flops = out;
  const taso_tensor_t *a = &cfg->in[0], *w = &cfg->in[1];
  if (cfg->kind == TASO_OP_CONV2D) /* per output: C/g x KH x KW multiply-adds */
    flops = 2 * out * (double)taso_tensor_size(w) / (double)w->dim[0];
  else if (cfg->kind == TASO_OP_MATMUL || cfg->kind == TASO_OP_BMM)
    flops = 2 * out * (double)a->dim[a->rank - 1];
  double compute = flops / (TASO_EST_GFLOPS * 1e6), traffic = 4 * moved / (TASO_EST_GBS * 1e6);
  return TASO_EST_OVERHEAD_MS + (compute > traffic ? compute : traffic);
}

taso_err_t taso_cost_estimate_lookup(void *ctx, const char *key, const taso_rt_config_t *cfg,
                                     double *ms, bool *found) {
  (void)ctx, (void)key;
  *ms = taso_cost_estimate(cfg);
  *found = true;
  return TASO_OK;
}

taso_cost_options_t taso_cost_options_default(void) {
  return (taso_cost_options_t){.measure = true, .fusion = true, .warmup = 2, .runs = 10};
}

taso_err_t taso_cost_cache_new(const taso_backend_t *be, taso_rt_ctx_t *ctx,
                               const taso_cost_options_t *opt, taso_cost_cache_t **out) {
  taso_cost_cache_t *c = calloc(1, sizeof *c);
  if (!c) return taso_error(TASO_ERR_NOMEM, "cost cache");
  c->be = be;
  c->ctx = ctx;
  c->opt = opt ? *opt : taso_cost_options_default();
  c->nslots = 1024;
  c->slots = calloc((size_t)c->nslots, sizeof *c->slots);
  if (!c->slots) {
    free(c);
    return taso_error(TASO_ERR_NOMEM, "cost cache");
  }
  *out = c;
  return TASO_OK;
}

void taso_cost_cache_free(taso_cost_cache_t *c) {
  if (!c) return;
  for (int64_t i = 0; i < c->n; i++)
    free(c->entries[i].key);
  if (c->ref_ctx) taso_backend_find("reference")->close(c->ref_ctx);
  free(c->entries);
  free(c->pending);
  free(c->pending_keys);
  free(c->slots);
  free(c->constant);
  free(c);
}

void taso_cost_cache_stats(const taso_cost_cache_t *c, taso_cost_stats_t *s) {
  *s = c->stats;
  s->configs = c->n;
}

bool taso_cost_cache_entry(const taso_cost_cache_t *c, int64_t i, const char **key, double *ms) {
  *key = c->entries[i].key;
  *ms = c->entries[i].ms;
  return !c->entries[i].guessed;
}

/* ---- the table ------------------------------------------------------------ */

static uint64_t packed_hash(const packed_t *k) {
  return taso_hash_words(k->w, PACKED_WORDS);
}

/* The slot holding configuration k, or the empty slot where it belongs. */
static int64_t find_slot(const taso_cost_cache_t *c, const packed_t *k) {
  int64_t mask = c->nslots - 1, s = (int64_t)(packed_hash(k) & (uint64_t)mask);
  while (c->slots[s] && memcmp(&c->entries[c->slots[s] - 1].packed, k, sizeof *k) != 0)
    s = (s + 1) & mask;
  return s;
}

static taso_err_t grow_table(taso_cost_cache_t *c) {
  int64_t *old = c->slots, nold = c->nslots;
  c->nslots *= 2;
  c->slots = calloc((size_t)c->nslots, sizeof *c->slots);
  if (!c->slots) {
    c->slots = old;
    c->nslots = nold;
    return taso_error(TASO_ERR_NOMEM, "cost cache of %lld entries", (long long)c->n);
  }
  for (int64_t i = 0; i < c->n; i++)
    c->slots[find_slot(c, &c->entries[i].packed)] = i + 1;
  free(old);
  return TASO_OK;
}

static taso_err_t insert(taso_cost_cache_t *c, const packed_t *k, const taso_rt_config_t *cfg,
                         const char *key, double ms) {
  if (2 * (c->n + 1) > c->nslots) TASO_TRY(grow_table(c));
  if (c->n == c->cap) {
    int64_t cap = c->cap ? 2 * c->cap : 256;
    entry_t *e = realloc(c->entries, sizeof *e * (size_t)cap);
    if (!e) return taso_error(TASO_ERR_NOMEM, "cost cache of %lld entries", (long long)c->n);
    c->entries = e;
    c->cap = cap;
  }
  entry_t *e = &c->entries[c->n];
  e->packed = *k;
  e->cfg = *cfg;
  e->ms = ms;
  e->guessed = false;
  if (!(e->key = malloc(strlen(key) + 1))) return taso_error(TASO_ERR_NOMEM, "cost key");
  strcpy(e->key, key);
  c->slots[find_slot(c, k)] = ++c->n;
  return TASO_OK;
}

/* ---- measuring ------------------------------------------------------------ */

/* Times cfg on the backend, or on the reference backend when the backend
 * has no call for it (the runtime runs that one then). */
static taso_err_t measure(taso_cost_cache_t *c, const taso_rt_config_t *cfg, const char *key,
                          double *ms) {
  taso_rt_stats_t st;
  double t0 = taso_search_now();
  taso_err_t err = taso_rt_time_config(c->be, c->ctx, cfg, c->opt.warmup, c->opt.runs, &st);
  if (err == TASO_ERR_UNSUPPORTED) {
    const taso_backend_t *ref = taso_backend_find("reference");
    err = c->ref_ctx ? TASO_OK : ref->open(0, &c->ref_ctx);
    if (err == TASO_OK) err = taso_rt_time_config(ref, c->ref_ctx, cfg, 1, 3, &st);
    c->stats.fallbacks++;
  }
  c->stats.measure_s += taso_search_now() - t0;
  if (err != TASO_OK) return taso_error_prefix(err, "measuring %s: ", key);
  c->stats.measured++;
  /* The fastest run: on a shared machine the load only ever adds time
   * (a descheduled OpenMP thread makes a 20 us matmul take 10 ms), and a
   * median of ten is still inflated when most runs meet it. */
  *ms = st.min;
  return TASO_OK;
}

/* ---- guessing ------------------------------------------------------------ */

/* A figure of the cache (measured or looked up) added to what its kind's
 * figures run against the estimate. */
static void learn(taso_cost_cache_t *c, const taso_rt_config_t *cfg, double ms) {
  double est = taso_cost_estimate(cfg);
  if (!(ms > 0) || !(est > 0) || cfg->kind < 0 || cfg->kind >= TASO_OP_COUNT) return;
  double r = log(ms / est);
  ratios_t *k[2] = {&c->ratios[cfg->kind], &c->ratios[TASO_OP_COUNT]};
  for (int i = 0; i < 2; i++) {
    k[i]->n++;
    k[i]->sum += r;
    k[i]->sum2 += r * r;
  }
}

/* A guess at cfg's cost: the estimate times what the figures of its kind
 * (with fewer than GUESS_MIN of them, of every kind; with none, 1) run
 * against it, on the low side: the ratios' geometric mean over e^(0.67
 * their log's deviation), a quarter of them below it were they log-normal.
 * Low, so that a search that measures what it keeps tries what a guess
 * does not rule out, rather than never measures it. */
enum { GUESS_MIN = 3 };

static double guess(const taso_cost_cache_t *c, const taso_rt_config_t *cfg) {
  const ratios_t *k = cfg->kind >= 0 && cfg->kind < TASO_OP_COUNT ? &c->ratios[cfg->kind] : NULL;
  if (!k || k->n < GUESS_MIN) k = &c->ratios[TASO_OP_COUNT];
  double logr = 0;
  if (k->n >= GUESS_MIN) {
    double mean = k->sum / k->n, var = k->sum2 / k->n - mean * mean;
    logr = mean - 0.674 * sqrt(var > 0 ? var : 0);
  }
  return taso_cost_estimate(cfg) * exp(logr);
}

void taso_cost_cache_set_guess(taso_cost_cache_t *c, bool guess) {
  c->guess = guess;
}

/* A guess's entry given its figure (ms < 0: measured now). */
static taso_err_t settle(taso_cost_cache_t *c, entry_t *e, double ms) {
  if (ms < 0) TASO_TRY(measure(c, &e->cfg, e->key, &ms));
  e->ms = ms;
  e->guessed = false;
  c->stats.guessed--;
  learn(c, &e->cfg, ms);
  return TASO_OK;
}

static const entry_t *sorting; /* by_guess's entries (qsort has no context) */

static int by_guess(const void *a, const void *b) {
  double x = sorting[*(const int64_t *)a].ms, y = sorting[*(const int64_t *)b].ms;
  return (x > y) - (x < y);
}

taso_err_t taso_cost_measure_guesses(taso_cost_cache_t *c, double below, double deadline,
                                     int64_t *left) {
  *left = c->stats.guessed;
  if (c->stats.guessed == 0) return TASO_OK;
  int64_t *order = malloc(sizeof *order * (size_t)c->stats.guessed), n = 0;
  if (!order) return taso_error(TASO_ERR_NOMEM, "%lld guesses", (long long)c->stats.guessed);
  for (int64_t i = 0; i < c->n; i++)
    if (c->entries[i].guessed) order[n++] = i;
  sorting = c->entries;
  qsort(order, (size_t)n, sizeof *order, by_guess);
  taso_err_t err = TASO_OK;
  for (int64_t k = 0; k < n && err == TASO_OK && c->entries[order[k]].ms <= below &&
                      (deadline < 0 || taso_search_now() < deadline);
       k++)
    err = settle(c, &c->entries[order[k]], -1);
  free(order);
  *left = c->stats.guessed;
  return err;
}

/* Notes a deferred miss once. */
static taso_err_t defer(taso_cost_cache_t *c, const taso_rt_config_t *cfg, const packed_t *k,
                        const char *key) {
  c->deferrals++;
  for (int64_t i = 0; i < c->npending; i++) /* a few per round: a list will do */
    if (memcmp(&c->pending_keys[i], k, sizeof *k) == 0)
      return taso_error(TASO_ERR_UNKNOWN, "pending: %s", key);
  if (c->npending == c->pending_cap) {
    int64_t cap = c->pending_cap ? 2 * c->pending_cap : 16;
    taso_rt_config_t *v = realloc(c->pending, sizeof *v * (size_t)cap);
    if (v) c->pending = v;
    packed_t *pk = realloc(c->pending_keys, sizeof *pk * (size_t)cap);
    if (pk) c->pending_keys = pk;
    if (!v || !pk) return taso_error(TASO_ERR_NOMEM, "pending configurations");
    c->pending_cap = cap;
  }
  c->pending_keys[c->npending] = *k;
  c->pending[c->npending++] = *cfg;
  return taso_error(TASO_ERR_UNKNOWN, "pending: %s", key);
}

int64_t taso_cost_pending(const taso_cost_cache_t *c, const taso_rt_config_t **cfgs) {
  *cfgs = c->pending;
  return c->npending;
}

void taso_cost_pending_clear(taso_cost_cache_t *c) {
  c->npending = 0;
}

void taso_cost_cache_set_defer(taso_cost_cache_t *c, bool defer) {
  c->opt.defer = defer;
}

taso_err_t taso_cost_cache_put(taso_cost_cache_t *c, const taso_rt_config_t *cfg, double ms) {
  packed_t k;
  pack(cfg, &k);
  int64_t s = find_slot(c, &k);
  if (c->slots[s]) {
    entry_t *e = &c->entries[c->slots[s] - 1];
    if (!e->guessed) return TASO_OK;
    c->stats.measured++;
    return settle(c, e, ms);
  }
  char key[KEY_LEN];
  if (taso_rt_config_key(cfg, key, sizeof key) >= (int)sizeof key)
    return taso_error(TASO_ERR_LIMIT, "configuration key longer than %d characters: %s",
                      KEY_LEN - 1, key);
  c->stats.measured++; /* measured for this search, on another rank or this one */
  learn(c, cfg, ms);
  return insert(c, &k, cfg, key, ms);
}

taso_err_t taso_cost_of_config(taso_cost_cache_t *c, const taso_rt_config_t *cfg, double *ms) {
  if (taso_rt_config_is_view(cfg)) { /* the runner gives it its operand's buffer */
    *ms = 0;
    return TASO_OK;
  }
  packed_t k;
  pack(cfg, &k);
  int64_t s = find_slot(c, &k);
  if (c->slots[s]) {
    entry_t *e = &c->entries[c->slots[s] - 1];
    if (e->guessed && !c->guess) { /* measured now (guessing is only on when measuring is) */
      TASO_TRY(settle(c, e, -1));
    } else {
      c->stats.hits++;
      c->stats.guesses += e->guessed;
    }
    *ms = e->ms;
    return TASO_OK;
  }
  char key[KEY_LEN];
  if (taso_rt_config_key(cfg, key, sizeof key) >= (int)sizeof key)
    return taso_error(TASO_ERR_LIMIT, "configuration key longer than %d characters: %s",
                      KEY_LEN - 1, key);
  bool found = false;
  if (c->opt.lookup) TASO_TRY(c->opt.lookup(c->opt.lookup_ctx, key, cfg, ms, &found));
  if (found) {
    c->stats.looked_up++;
  } else if (!c->opt.measure) {
    return taso_error(TASO_ERR_UNKNOWN, "no cost for configuration %s (measuring is off)", key);
  } else if (c->opt.defer) {
    return defer(c, cfg, &k, key);
  } else if (c->guess) {
    *ms = guess(c, cfg);
    TASO_TRY(insert(c, &k, cfg, key, *ms));
    c->entries[c->n - 1].guessed = true;
    c->stats.guessed++;
    c->stats.guesses++;
    return TASO_OK;
  } else {
    TASO_TRY(measure(c, cfg, key, ms));
  }
  learn(c, cfg, *ms);
  return insert(c, &k, cfg, key, *ms);
}

/* ---- graph costs ------------------------------------------------------------ */

static taso_err_t fit_scratch(taso_cost_cache_t *c, int nnodes) {
  if (nnodes <= c->scratch_cap) return TASO_OK;
  int cap = c->scratch_cap ? c->scratch_cap : 256;
  while (cap < nnodes)
    cap *= 2;
  bool *k = realloc(c->constant, sizeof *c->constant * (size_t)cap);
  if (!k) return taso_error(TASO_ERR_NOMEM, "cost of %d nodes", nnodes);
  c->constant = k;
  c->scratch_cap = cap;
  return TASO_OK;
}

bool taso_cost_mark_folded(const taso_graph_t *g, const bool *is_weight, bool *constant) {
  bool any = false;
  for (int i = 0; i < g->nnodes; i++) {
    const taso_node_t *n = &g->nodes[i];
    if (n->kind == TASO_OP_INPUT) {
      constant[i] = is_weight[n->p.input];
      continue;
    }
    constant[i] = true;
    for (int a = 0; a < taso_ops[n->kind].arity; a++)
      constant[i] = constant[i] && constant[TASO_REF_NODE(n->in[a])];
    any = any || constant[i];
  }
  return any;
}

void taso_cost_memo_free(taso_cost_memo_t *m) {
  free(m->ms);
  free(m->packed);
  memset(m, 0, sizeof *m);
}

static taso_err_t fit_memo(taso_cost_memo_t *m, int nnodes) {
  m->n = 0;
  if (m->cap >= nnodes) return TASO_OK;
  double *ms = realloc(m->ms, sizeof *ms * (size_t)(nnodes + 1));
  if (ms) m->ms = ms;
  packed_t *packed = realloc(m->packed, sizeof *packed * (size_t)(nnodes + 1));
  if (packed) m->packed = packed;
  if (!ms || !packed) return taso_error(TASO_ERR_NOMEM, "cost memo of %d nodes", nnodes);
  m->cap = nnodes;
  return TASO_OK;
}

/* One graph's cost, step by step as the planner hands them over. */
typedef struct {
  taso_cost_cache_t *c;
  const taso_cost_memo_t *host; /* with prov: the host's steps */
  const int *prov;
  int32_t layout;           /* of every step */
  taso_cost_memo_t *record; /* may be NULL */
  double sum;
  bool deferred; /* a deferred miss: the other steps still note theirs */
} summing_t;

/* A tensor's words in a packed configuration: its shape as
 * taso_tensor_make gives it (sizes past the rank zero). */
static int pack_shape(int32_t *w, const taso_tensor_t *t) {
  w[0] = t->rank;
  for (int d = 0; d < TASO_MAX_RANK; d++)
    w[1 + d] = d < t->rank ? t->dim[d] : 0;
  return 1 + TASO_MAX_RANK;
}

/* The packed configuration a step would have, from what the planner
 * shows of it (taso_rt_known_fn): the head's operands and results typed
 * in m, the operands fusion added as shown. Word for word what pack()
 * makes of the configuration taso_rt_config_of_node and fusion build. */
static void pack_shown(const taso_rt_typed_graph_t *m, const bool *constant, bool warm,
                       const taso_rt_step_info_t *st, int32_t layout, packed_t *k) {
  const taso_rt_config_t *cfg = &st->cfg;
  const taso_node_t *head = &m->graph->nodes[st->first_node];
  int arity = taso_ops[head->kind].arity, nout = taso_ops[head->kind].outputs, n = 0;
  /* the head's operands are cold where they are weights or folded (what
   * the planner marks); an added bias as fuse_chain marked it */
  unsigned cold = cfg->cold & ~((1u << arity) - 1);
  for (int a = 0; a < arity; a++)
    if (constant[TASO_REF_NODE(head->in[a])]) cold |= 1u << a;
  if (warm) cold = 0;
  memset(k, 0, sizeof *k);
  k->w[n++] = cfg->kind;
  k->w[n++] = cfg->nin;
  k->w[n++] = nout;
  k->w[n++] = (int32_t)cfg->fuse;
  k->w[n++] = layout;
  k->w[n++] = (int32_t)cold;
  k->w[n++] = !warm; /* as the planner marks a step of its own buffer (no call plan here) */
  memcpy(&k->w[n], &cfg->p, sizeof cfg->p);
  n += (int)(sizeof cfg->p / 4);
  for (int i = 0; i < cfg->nin + nout && i < TASO_RT_MAX_IN + 2; i++) {
    const taso_tensor_t *t = i < arity      ? &m->types[head->in[i]]
                             : i < cfg->nin ? &cfg->in[i]
                                            : &m->types[2 * st->first_node + i - cfg->nin];
    n += pack_shape(&k->w[n], t);
  }
}

/* Whether the host had this step's configuration at the node this step's
 * last node was built from (prov: a hint only): then its cost is the
 * host's, the cache's figure for that configuration. The whole
 * configuration is compared (its packed words: what the cache is keyed
 * by), so the hint cannot make a cost wrong, only miss a reuse. Nodes
 * downstream of a rewrite keep their configurations: a rewrite gives each
 * replaced tensor exactly its type. */
static bool known_step(void *ctx, const taso_rt_typed_graph_t *m, const taso_rt_step_info_t *st) {
  const summing_t *r = ctx;
  int h = r->prov[st->node];
  if (h < 0 || h >= r->host->n || r->host->ms[h] < 0) return false;
  packed_t k;
  pack_shown(m, r->c->constant, r->c->opt.warm_weights, st, r->layout, &k);
  return memcmp(&k, &r->host->packed[h], sizeof k) == 0;
}

static taso_err_t add_step(void *ctx, const taso_rt_step_info_t *info) {
  summing_t *r = ctx;
  double step_ms = 0;
  if (info->cfg.kind == 0) { /* known: the host's step */
    step_ms = r->host->ms[r->prov[info->node]];
  } else {
    int64_t before = r->c->deferrals;
    taso_err_t err = taso_cost_of_config(r->c, &info->cfg, &step_ms);
    if (err == TASO_ERR_UNKNOWN && r->c->deferrals > before)
      r->deferred = true;
    else
      TASO_TRY(err);
  }
  if (r->record) { /* a known step's words are the host's (known_step compared them) */
    r->record->ms[info->node] = step_ms;
    if (info->cfg.kind == 0)
      r->record->packed[info->node] = r->host->packed[r->prov[info->node]];
    else
      pack(&info->cfg, &r->record->packed[info->node]);
  }
  r->sum += step_ms;
  return TASO_OK;
}

taso_err_t taso_cost_of_graph_reusing(taso_cost_cache_t *c, const taso_graph_t *g,
                                      const taso_tensor_t *types, const bool *is_weight,
                                      const taso_cost_memo_t *host, const int *prov,
                                      taso_cost_memo_t *record, double *ms) {
  /* Folding (cost.h) replaces every node computed from weights alone by a
   * weight: the planner takes those nodes as inputs (absent), which plans
   * the steps the folded graph would have, without copying it. */
  TASO_TRY(fit_scratch(c, g->nnodes + 1));
  bool any = taso_cost_mark_folded(g, is_weight, c->constant);
  const taso_rt_typed_graph_t typed = {g, types, is_weight};
  if (c->opt.graph_cost) {
    if (record) record->n = 0;
    return c->opt.graph_cost(c->opt.graph_ctx, &typed, any ? c->constant : NULL, ms);
  }
  summing_t r = {.c = c,
                 .host = host,
                 .prov = host && host->n ? prov : NULL,
                 .layout = TASO_RT_NCHW,
                 .record = record};
  if (record) {
    TASO_TRY(fit_memo(record, g->nnodes));
    for (int i = 0; i < g->nnodes; i++)
      record->ms[i] = -1;
  }
  taso_rt_options_t opt = {
      .no_fusion = !c->opt.fusion, .layout = r.layout, .warm_weights = c->opt.warm_weights};
  taso_err_t err = taso_rt_steps_partial(&typed, &opt, any ? c->constant : NULL,
                                         r.prov ? known_step : NULL, add_step, &r);
  if (err == TASO_OK && r.deferred)
    err = taso_error(TASO_ERR_UNKNOWN, "%lld configurations pending", (long long)c->npending);
  if (record) record->n = err == TASO_OK ? g->nnodes : 0; /* a partial memo is none */
  *ms = r.sum;
  return err;
}

taso_err_t taso_cost_of_graph(taso_cost_cache_t *c, const taso_graph_t *g,
                              const taso_tensor_t *types, const bool *is_weight, double *ms) {
  return taso_cost_of_graph_reusing(c, g, types, is_weight, NULL, NULL, NULL, ms);
}
