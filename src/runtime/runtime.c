/*
 * The model runner: plans a model onto a backend (fusing epilogues into
 * convolutions and matmuls, falling back to the reference kernel node by
 * node), runs and times it.
 *
 * Every tensor a step reads or writes keeps its buffer for the life of the
 * plan: a ResNet-50 at batch 1 holds about 100 MB of activations, and a
 * plan whose buffers all stay valid lets the profile time any step alone.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "runtime.h"

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h> /* _mm_clflush, _mm_mfence (SSE2: every x86-64) */
#define HOST_FLUSH 1
#endif

extern const taso_backend_t taso_backend_reference;

typedef struct {
  taso_rt_step_info_t info;
  char reason[256];               /* info.reason points here */
  taso_rt_kernel_t *k;            /* on the plan's backend, or the reference one */
  taso_ref_t in[TASO_RT_MAX_IN];  /* tensors read, in configuration order */
  taso_ref_t out[2];              /* tensors written */
  void *host[TASO_RT_MAX_IN + 2]; /* fallback only: host copies of in, then out */
} plan_step_t;

struct taso_rt_plan {
  const taso_backend_t *be;
  taso_rt_ctx_t *ctx;
  taso_model_t *m;
  taso_rt_ctx_t *ref_ctx; /* the reference backend, for fallback steps */
  void **buf;             /* per tensor (2 * nnodes): its buffer on be, or NULL */
  bool *owned;            /* per tensor: buf was allocated for it (not shared in place) */
  taso_ref_t *root;       /* per tensor: the one whose buffer holds it (itself, an operand
                             it was written over, or a concat it was placed in) */
  bool *nhwc;             /* per tensor: its buffer holds it channels last */
  plan_step_t *steps;
  int nsteps;
  bool called; /* the steps follow a call plan (its in-place writes only) */
  /* Replay (the backend's capture): every upload, step and download of a
   * run recorded into one graph; the run-time inputs, then the graph
   * outputs, go through pinned host copies at fixed addresses. */
  taso_rt_graph_t *graph; /* NULL: runs go step by step */
  taso_ref_t *staged;     /* the tensors copied through pinned memory */
  int *input_of;          /* per staged input: its place among the run-time inputs */
  float **pinned;         /* per staged tensor: its values as its buffer holds them */
  int nstaged_in, nstaged;
  char why[320]; /* why runs do not replay; "" when they do, or cannot on this backend */
};

/* ---- configurations -------------------------------------------------------- */

static bool has_epilogue(int32_t kind) {
  return kind == TASO_OP_CONV2D || kind == TASO_OP_MATMUL || kind == TASO_OP_BMM;
}

/* Whether tensor ref of the graph is a weight: an input node marked so, or one
 * with a negative index (a constant the optimizer folded). */
static bool is_weight_ref(const taso_rt_typed_graph_t *pg, taso_ref_t ref) {
  const taso_node_t *n = &pg->graph->nodes[TASO_REF_NODE(ref)];
  if (n->kind != TASO_OP_INPUT) return false;
  return n->p.input < 0 || (pg->is_weight && pg->is_weight[n->p.input]);
}

taso_err_t taso_rt_config_of_node(const taso_rt_typed_graph_t *pg, int node,
                                  taso_rt_config_t *cfg) {
  const taso_node_t *n = &pg->graph->nodes[node];
  if (n->kind <= TASO_OP_INPUT || n->kind >= TASO_OP_COUNT)
    return taso_error(TASO_ERR_ARG, "node %d is not an operator", node);
  const taso_op_info_t *op = &taso_ops[n->kind];
  memset(cfg, 0, sizeof *cfg);
  cfg->kind = n->kind;
  cfg->p = n->p;
  cfg->nin = op->arity;
  cfg->nout = op->outputs;
  for (int a = 0; a < op->arity; a++) {
    cfg->in[a] = taso_tensor_make(pg->types[n->in[a]].rank, pg->types[n->in[a]].dim);
    if (is_weight_ref(pg, n->in[a])) cfg->cold |= 1u << a;
  }
  for (int o = 0; o < op->outputs; o++)
    cfg->out[o] = taso_tensor_make(pg->types[2 * node + o].rank, pg->types[2 * node + o].dim);
  if (has_epilogue(n->kind) && n->p.act == TASO_ACT_RELU) {
    cfg->fuse |= TASO_FUSE_RELU;
    cfg->p.act = TASO_ACT_NONE;
  }
  return TASO_OK;
}

taso_err_t taso_rt_output_difference(const taso_model_t *m, float *const *a, float *const *b,
                                     double *abs_diff, double *rel_diff) {
  *abs_diff = *rel_diff = 0;
  int64_t bad = 0, all = 0;
  for (int o = 0; o < m->graph.noutputs; o++) {
    int64_t n = taso_tensor_size(&m->types[m->graph.outputs[o]]);
    double d = 0, scale = 0;
    for (int64_t i = 0; i < n; i++) {
      bad += !isfinite(a[o][i]) || !isfinite(b[o][i]);
      d = fmax(d, fabs((double)a[o][i] - b[o][i]));
      scale = fmax(scale, fabs((double)b[o][i]));
    }
    all += n;
    *abs_diff = fmax(*abs_diff, d);
    *rel_diff = fmax(*rel_diff, scale > 0 ? d / scale : d);
  }
  if (!bad) return TASO_OK;
  return taso_error(TASO_ERR_ARG,
                    "%lld of %lld output values are NaN or infinite: no comparison can tell "
                    "whether the outputs agree",
                    (long long)bad, (long long)all);
}

int taso_rt_config_key(const taso_rt_config_t *cfg, char *buf, int len) {
  /* The operator's text with operands named a, b, c: the registry's own
   * spelling of its parameters, defaults omitted. */
  taso_inputs_t in = {0};
  taso_graph_t g;
  taso_graph_init(&g);
  taso_ref_t args[3] = {-1, -1, -1}, ref;
  const taso_op_info_t *op = &taso_ops[cfg->kind];
  char text[256] = "?", shapes[2][192] = {"", ""};
  bool ok = true;
  for (int a = 0; a < op->arity && ok; a++) {
    const char name[2] = {(char)('a' + a), 0};
    ok = taso_inputs_add(&in, name, cfg->in[a].rank, cfg->in[a].dim) == TASO_OK &&
         taso_graph_add_input(&g, a, &args[a]) == TASO_OK;
  }
  if (ok && taso_graph_add(&g, (taso_op_kind_t)cfg->kind, &cfg->p, args, &ref) == TASO_OK &&
      taso_graph_add_output(&g, ref) == TASO_OK)
    taso_graph_format(&g, &in, text, sizeof text);
  taso_graph_free(&g);
  taso_inputs_free(&in);
  for (int side = 0; side < 2; side++) {
    const taso_tensor_t *t = side ? cfg->out : cfg->in;
    int n = side ? cfg->nout : cfg->nin, used = 0;
    for (int i = 0; i < n && used < (int)sizeof shapes[side]; i++) {
      if (i) shapes[side][used++] = ',';
      used += taso_shape_format(&t[i], shapes[side] + used, (int)sizeof shapes[side] - used);
    }
  }
  static const char *const layouts[] = {"nchw", "nhwc", "blocked"};
  char cold[8 + TASO_RT_MAX_IN] = "";
  for (int a = 0, used = 0; a < cfg->nin; a++)
    if (cfg->cold & (1u << a))
      used +=
          snprintf(cold + used, sizeof cold - (size_t)used, "%s%c", used ? "" : " cold=", 'a' + a);
  char alias[16] = "";
  if (cfg->in_place > 0 && cfg->in_place <= cfg->nin)
    snprintf(alias, sizeof alias, " inplace=%c", 'a' + cfg->in_place - 1);
  char clip[48] = ""; /* the bounds as the registry prints clip's */
  if (cfg->fuse & TASO_FUSE_CLIP)
    snprintf(clip, sizeof clip, "%sclip(%g,%g)", cfg->fuse & ~TASO_FUSE_CLIP ? "+" : "",
             (double)cfg->p.bound[0], (double)cfg->p.bound[1]);
  return snprintf(
      buf, (size_t)len, "%s in=%s out=%s%s fuse=%s%s%s%s%s layout=%s%s%s", text, shapes[0],
      cfg->cold_out ? "cold:" : "", shapes[1], cfg->fuse ? "" : "none",
      cfg->fuse & TASO_FUSE_BIAS ? "bias" : "",
      cfg->fuse & TASO_FUSE_SUM ? (cfg->fuse & TASO_FUSE_BIAS ? "+sum" : "sum") : "",
      cfg->fuse & TASO_FUSE_RELU ? (cfg->fuse & ~TASO_FUSE_RELU ? "+relu" : "relu") : "", clip,
      cfg->layout >= 0 && cfg->layout <= 2 ? layouts[cfg->layout] : "?", cold, alias);
}

int taso_rt_call_key(const char *key, char *buf, int len) {
  /* the marks as taso_rt_config_key writes them: " cold=ab" and
   * " inplace=a" after the layout, "cold:" after "out=" */
  int n = 0;
  for (const char *s = key; *s;) {
    if (strncmp(s, " cold=", 6) == 0 || strncmp(s, " inplace=", 9) == 0) {
      do
        s++;
      while (*s && *s != ' ');
    } else if (s - key >= 4 && strncmp(s - 4, "out=", 4) == 0 && strncmp(s, "cold:", 5) == 0) {
      s += 5;
    } else {
      if (n + 1 < len) buf[n] = *s;
      n++, s++;
    }
  }
  if (len > 0) buf[n < len ? n : len - 1] = '\0';
  return n;
}

int taso_rt_config_format(const taso_rt_config_t *cfg, char *buf, int len) {
  char shape[64];
  int n = snprintf(buf, (size_t)len, "%s", taso_ops[cfg->kind].name);
  for (int a = 0; a < cfg->nin && n < len; a++) {
    taso_shape_format(&cfg->in[a], shape, sizeof shape);
    n += snprintf(buf + n, (size_t)(len - n), "%s%s", a ? "," : " ", shape);
  }
  const taso_params_t *p = &cfg->p;
  if ((cfg->kind == TASO_OP_CONV2D || cfg->kind == TASO_OP_POOL_AVG ||
       cfg->kind == TASO_OP_POOL_MAX) &&
      n < len)
    n += snprintf(buf + n, (size_t)(len - n), " s%dx%d", p->stride[0], p->stride[1]);
  if ((cfg->kind == TASO_OP_POOL_AVG || cfg->kind == TASO_OP_POOL_MAX) && n < len)
    n += snprintf(buf + n, (size_t)(len - n), " k%dx%d", p->kernel[0], p->kernel[1]);
  if (cfg->layout == TASO_RT_BLOCKED && n < len)
    n += snprintf(buf + n, (size_t)(len - n), " blocked");
  else if (cfg->layout == TASO_RT_NHWC && n < len)
    n += snprintf(buf + n, (size_t)(len - n), " nhwc");
  const char *names[] = {"+bias", "+relu", "+sum", "+clip"};
  for (int f = 0; f < 4 && n < len; f++)
    if (cfg->fuse & (1u << f)) n += snprintf(buf + n, (size_t)(len - n), "%s", names[f]);
  return n;
}

/* ---- timing ---------------------------------------------------------------- */

static double now_ms(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec * 1e3 + (double)t.tv_nsec * 1e-6;
}

static int compare_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

void taso_rt_stats_of(double *ms, int n, taso_rt_stats_t *stats) {
  memset(stats, 0, sizeof *stats);
  if (n <= 0) return;
  qsort(ms, (size_t)n, sizeof *ms, compare_double);
  stats->runs = n;
  stats->median = n % 2 ? ms[n / 2] : 0.5 * (ms[n / 2 - 1] + ms[n / 2]);
  stats->min = ms[0];
  stats->max = ms[n - 1];
  stats->spread = stats->median > 0 ? (stats->max - stats->min) / stats->median : 0;
}

/* A timing loop over any run: warm-up, then runs each closed by sync. */
typedef taso_err_t (*run_fn_t)(void *arg);

/* How a run is timed: by the host's clock around the run and a sync; by
 * the device's marks around it (a GPU's own time, without the host's
 * launch and wake-up costs); or by marks that the run records itself (a
 * replayed graph captured between them). */
typedef enum { TIME_HOST, TIME_DEVICE, TIME_MARKED } timing_t;

bool taso_rt_device_clock(const taso_backend_t *be) {
  return be->mark_start && be->mark_stop && be->elapsed;
}

static taso_err_t time_run(const taso_backend_t *be, taso_rt_ctx_t *ctx, run_fn_t fn, void *arg,
                           timing_t how, double *ms) {
  if (how == TIME_HOST) {
    double t0 = now_ms();
    taso_err_t err = fn(arg);
    if (err == TASO_OK) err = be->sync(ctx);
    *ms = now_ms() - t0;
    return err;
  }
  *ms = 0;
  if (how == TIME_DEVICE) TASO_TRY(be->mark_start(ctx));
  TASO_TRY(fn(arg));
  if (how == TIME_DEVICE) TASO_TRY(be->mark_stop(ctx));
  return be->elapsed(ctx, ms);
}

/* before (NULL: none) runs untimed ahead of every run. */
static taso_err_t time_loop(const taso_backend_t *be, taso_rt_ctx_t *ctx, run_fn_t fn,
                            run_fn_t before, void *arg, int warmup, int runs, timing_t how,
                            taso_rt_stats_t *stats) {
  if (runs < 1) return taso_error(TASO_ERR_ARG, "timing needs at least one run");
  double *ms = malloc(sizeof *ms * (size_t)runs);
  if (!ms) return taso_error(TASO_ERR_NOMEM, "timings");
  taso_err_t err = TASO_OK;
  for (int i = 0; i < warmup && err == TASO_OK; i++) {
    if (before) err = before(arg);
    if (err == TASO_OK) err = fn(arg);
    if (err == TASO_OK) err = be->sync(ctx);
  }
  for (int i = 0; i < runs && err == TASO_OK; i++) {
    if (before && (err = before(arg)) != TASO_OK) break;
    err = time_run(be, ctx, fn, arg, how, &ms[i]);
  }
  if (err == TASO_OK) taso_rt_stats_of(ms, runs, stats);
  free(ms);
  return err;
}

/* Deterministic values in [-1, 1]: timings must not depend on the data
 * path (denormals), and any run must be repeatable. */
static void fill_random(float *x, int64_t n, uint64_t seed) {
  for (int64_t i = 0; i < n; i++) {
    seed = seed * 6364136223846793005ULL + 1442695040888963407ULL;
    x[i] = (float)((double)(seed >> 11) * (2.0 / 9007199254740992.0) - 1.0);
  }
}

typedef struct {
  const taso_backend_t *be;
  taso_rt_ctx_t *ctx;
  const taso_rt_config_t *cfg;
  taso_rt_kernel_t *k;
  void *in[TASO_RT_MAX_IN], *out[2];
  void *at[TASO_RT_MAX_IN]; /* the operands of the next run: in, or a cold one's place in swept */
  void *sweep;              /* with cold operands on a device: a buffer larger than its cache */
  int64_t sweep_count;
  float *host;             /* a device's sweep: what it uploads; room for the warm operands */
  struct sweep_buf *swept; /* a host's: its sweep, or where cold operands take turns (x86) */
  volatile float sink;     /* keeps a host sweep's reads */
  bool scratch;            /* in and out are the context's scratch (not released here) */
  taso_rt_graph_t *graph;  /* one run captured between the device's marks, or NULL */
  timing_t how;
} config_run_t;

static taso_err_t run_config(void *arg) {
  config_run_t *r = arg;
  return r->be->run(r->ctx, r->k, r->at, r->out);
}

static taso_err_t replay_config(void *arg) {
  config_run_t *r = arg;
  return r->be->replay(r->ctx, r->graph);
}

/* How the configuration's runs are timed. A device with capture records
 * one run between its marks and replays that: the step then runs as it
 * does in a replayed model, right after the step before, not after a
 * host's launch; a capture that fails leaves marks around each run. */
static void capture_config(config_run_t *r) {
  const taso_backend_t *be = r->be;
  r->how = taso_rt_device_clock(be) ? TIME_DEVICE : TIME_HOST;
  if (r->how != TIME_DEVICE || !be->begin_capture) return;
  /* one run first: the libraries load their kernels then, not while capturing */
  if (run_config(r) != TASO_OK || be->sync(r->ctx) != TASO_OK) return;
  if (be->begin_capture(r->ctx) != TASO_OK) return;
  taso_err_t err = be->mark_start(r->ctx);
  if (err == TASO_OK) err = run_config(r);
  if (err == TASO_OK) err = be->mark_stop(r->ctx);
  taso_rt_graph_t *graph = NULL;
  taso_err_t end = be->end_capture(r->ctx, &graph);
  double ms = 0;
  /* a replay whose marks cannot be read is not used */
  if (err == TASO_OK && end == TASO_OK && be->replay(r->ctx, graph) == TASO_OK &&
      be->elapsed(r->ctx, &ms) == TASO_OK) {
    r->graph = graph;
    r->how = TIME_MARKED;
    return;
  }
  be->sync(r->ctx);
  if (graph) be->graph_free(r->ctx, graph);
}

/* The last-level cache that cpu0 sees, in bytes: TASO_LLC_MIB when set
 * (for a machine whose sysfs misreports it), else sysfs (a chiplet CPU has
 * one per chiplet, and only its own is shared with this core: 32 MiB
 * here); 0 when neither says. */
int64_t taso_rt_llc_bytes(void) {
  const char *env = getenv("TASO_LLC_MIB");
  if (env && *env) {
    char *end;
    long long mib = strtoll(env, &end, 10);
    if (*end == '\0' && mib > 0 && mib <= (1 << 20)) return (int64_t)mib << 20;
  }
  int64_t l3 = 0;
  FILE *f = fopen("/sys/devices/system/cpu/cpu0/cache/index3/size", "r");
  if (f) {
    long long v = 0;
    char unit = 0;
    if (fscanf(f, "%lld%c", &v, &unit) >= 1)
      l3 = v * (unit == 'K' ? 1024 : unit == 'M' ? 1024 * 1024 : 1);
    fclose(f);
  }
  return l3;
}

int64_t taso_rt_graph_bytes(const taso_rt_typed_graph_t *g) {
  int64_t bytes = 0;
  for (int i = 0; i < g->graph->nnodes; i++)
    for (int o = 0; o < taso_ops[g->graph->nodes[i].kind].outputs; o++)
      bytes += (int64_t)sizeof(float) * taso_tensor_size(&g->types[2 * i + o]);
  return bytes;
}

int64_t taso_rt_model_bytes(const taso_model_t *m) {
  const taso_rt_typed_graph_t g = taso_rt_typed_of(m);
  return taso_rt_graph_bytes(&g);
}

/* The part of the last-level cache this machine's CPUs can count on: at
 * most 16 MiB per online CPU. Server CPUs give a core 2 to 12 MiB of L3;
 * a virtual machine reports its host's whole cache (300 MiB to 2 CPUs on
 * one of ours, where NasRNN's 80 MiB, timed warm, cost 1.8 ms and ran in
 * 5.6), shared with every other guest. */
static int64_t llc_share_bytes(void) {
  long cpus = sysconf(_SC_NPROCESSORS_ONLN);
  int64_t l3 = taso_rt_llc_bytes(), cap = (int64_t)(cpus > 0 ? cpus : 1) * (16 << 20);
  return l3 < cap ? l3 : cap;
}

/* The floats a sweep passes to empty the last-level cache: twice the
 * share of it these CPUs can count on (a VM that reports its host's 300
 * MiB L3 swept 512 MiB before every run, most of the time measuring took),
 * at least 64 MiB, at most 512; at least 256 MiB on an accelerator (an
 * H100's L2 is 50). */
static int64_t sweep_floats(const taso_backend_t *be) {
  int64_t least = (int64_t)(be->device_uuid ? 256 : 64) << 20;
  int64_t bytes = 2 * (be->device_uuid ? taso_rt_llc_bytes() : llc_share_bytes());
  bytes = bytes < least ? least : bytes > ((int64_t)512 << 20) ? (int64_t)512 << 20 : bytes;
  return bytes / (int64_t)sizeof(float);
}

/* The host's sweep buffer (where lines cannot be flushed one by one), or
 * on x86 the places where cold operands take turns (host_chill),
 * allocated and filled once per process, not per configuration (filling
 * 64 MiB of fresh pages cost more than timing most configurations): a
 * configuration takes it and gives it back, so that two threads timing
 * at once never share one. */
typedef struct sweep_buf {
  int64_t n;    /* floats in v */
  int64_t next; /* x86: the float where the next cold operand goes */
  float v[];
} sweep_buf_t;

static sweep_buf_t *host_sweep;

static taso_err_t host_sweep_take(int64_t n, sweep_buf_t **out) {
  sweep_buf_t *b = __atomic_exchange_n(&host_sweep, NULL, __ATOMIC_ACQ_REL);
  if (b && b->n >= n) {
    *out = b;
    return TASO_OK;
  }
  free(b);
  if (!(b = malloc(sizeof *b + sizeof(float) * (size_t)n)))
    return taso_error(TASO_ERR_NOMEM, "cache sweep of %lld floats", (long long)n);
  b->n = n;
  b->next = 0;
  for (int64_t i = 0; i < n; i++)
    b->v[i] = 0; /* its own pages, not the zero page */
  *out = b;
  return TASO_OK;
}

static void host_sweep_give_back(sweep_buf_t *b) {
  free(__atomic_exchange_n(&host_sweep, b, __ATOMIC_ACQ_REL)); /* one is kept */
}

bool taso_rt_weights_stay_warm(const taso_model_t *m, const taso_backend_t *be) {
  return !be->device_uuid && 2 * taso_rt_model_bytes(m) <= llc_share_bytes();
}

/* Before each run of a configuration with cold operands or results: the
 * caches as a model's run leaves them for this step. A run of a model larger than the
 * cache has streamed everything else through it since this step last ran:
 * its weights (the cold operands) come from memory, and so does the buffer
 * of its result, last written an inference ago (unless it overwrites an
 * operand). The other operands were just written by the steps before:
 * they are in cache, dirty.
 * On a device, flush_cache does it there (nothing crosses the bus). On an
 * x86 host the cold lines are flushed one by one (from every core's
 * caches), at a cost of what they weigh: the sweep of twice the
 * last-level cache that it replaces cost as much for a 20 us step as for
 * a 20 ms one and was most of what measuring took. The warm operands are
 * then written over with their own values, on the threads that run the
 * step: they end dirty in cache as their producer left them, and the
 * threads end awake, as one step finds them after another. */
#ifdef HOST_FLUSH
static void flush_lines(const void *buf, int64_t floats) {
  const char *c = buf;
  int64_t bytes = (int64_t)sizeof(float) * floats;
#pragma omp parallel for schedule(static)
  for (int64_t i = 0; i < bytes; i += 64)
    _mm_clflush(c + i);
  if (bytes > 0) _mm_clflush(c + bytes - 1); /* a buffer that ends inside a line */
}
#endif

/* Pages dealt round the threads, not halves: the step that wrote an
 * operand split it among its threads its own way, seldom as this step
 * splits its reads, so some of what a thread reads sits in another core's
 * cache. */
static void dirty_lines(void *buf, int64_t floats) {
  volatile float *x = buf;
  int64_t lines = (floats + 15) / 16;
#pragma omp parallel for schedule(static, 64)
  for (int64_t l = 0; l < lines; l++)
    x[16 * l] = x[16 * l];
}

#ifdef HOST_FLUSH
/* Where a cold operand of n floats is read from in the next run: the next
 * place in b (page aligned; from its start again past its end), or NULL
 * when it would take over half of b. Every other place in b was read
 * between two turns of one (the other runs' cold operands), so a turn
 * finds its operand in memory and its pages out of the TLB, after a
 * stream of other reads: as a model's run finds a weight, having read
 * all the others since. Its lines flushed alone, it kept its pages in the
 * TLB and an empty cache: NasRNN's matmuls of a 1 MiB weight timed 64 us
 * so, 73 to 75 us in turns over 72 MiB, and 75 us inside its runs. */
static void *next_place(sweep_buf_t *b, int64_t n) {
  const int64_t page = 4096 / (int64_t)sizeof(float);
  float *base = (float *)(((uintptr_t)b->v + 4095) & ~(uintptr_t)4095);
  int64_t room = b->n - (base - b->v), len = (n + page - 1) / page * page;
  if (2 * len > room) return NULL;
  if (b->next + len > room) b->next = 0;
  float *at = base + b->next;
  b->next += len;
  return at;
}
#endif

/* Elsewhere on a host, a sweep that reads, on every thread (each core's
 * own caches too): a sweep that wrote would leave the cache full of dirty
 * lines, and the timed run would pay for writing them back (ResNet-50 at
 * 28x28: its steps summed 17.2 ms so, 14.3 ms with a reading sweep,
 * against 14.5 end to end); then the warm operands as above. */
static void host_chill(config_run_t *r) {
  const taso_rt_config_t *cfg = r->cfg;
#ifdef HOST_FLUSH
  for (int i = 0; i < cfg->nin; i++) {
    r->at[i] = r->in[i];
    if (!(cfg->cold & (1u << i))) continue;
    int64_t n = taso_tensor_size(&cfg->in[i]);
    void *place = cfg->in_place == i + 1 ? NULL : next_place(r->swept, n);
    if (place)
      r->at[i] = place;
    else
      flush_lines(r->in[i], n);
  }
  for (int o = 0; o < cfg->nout && cfg->cold_out; o++)
    if (!(o == 0 && cfg->in_place)) flush_lines(r->out[o], taso_tensor_size(&cfg->out[o]));
  _mm_mfence(); /* the flushes are done before the run reads */
#else
  const float *h = r->swept->v;
  float sum = 0;
#pragma omp parallel for reduction(+ : sum)
  for (int64_t i = 0; i < r->swept->n; i += 16)
    sum += h[i]; /* a float of each 64-byte line */
  r->sink = sum;
#endif
  for (int i = 0; i < cfg->nin; i++)
    if (!(cfg->cold & (1u << i))) dirty_lines(r->in[i], taso_tensor_size(&cfg->in[i]));
}

/* Whether a run of cfg starts from the caches as a model's run leaves them
 * (chill), not from the run before. */
static bool chilled(const taso_rt_config_t *cfg) {
  return cfg->cold || cfg->cold_out;
}

static taso_err_t chill(void *arg) {
  config_run_t *r = arg;
  if (r->be->flush_cache) { /* on the device: nothing crosses the bus */
    void *keep[TASO_RT_MAX_IN];
    int64_t counts[TASO_RT_MAX_IN];
    int n = 0;
    for (int i = 0; i < r->cfg->nin; i++)
      if (!(r->cfg->cold & (1u << i))) {
        keep[n] = r->in[i];
        counts[n++] = taso_tensor_size(&r->cfg->in[i]);
      }
    return r->be->flush_cache(r->ctx, keep, counts, n);
  }
  if (!r->be->device_uuid) { /* host memory: the buffers are the host's */
    host_chill(r);
    return r->be->sync(r->ctx);
  }
  TASO_TRY(r->be->upload(r->ctx, r->sweep, r->host, r->sweep_count));
  for (int i = 0; i < r->cfg->nin; i++)
    if (!(r->cfg->cold & (1u << i)))
      TASO_TRY(r->be->download(r->ctx, r->host, r->in[i], taso_tensor_size(&r->cfg->in[i])));
  return r->be->sync(r->ctx);
}

static taso_err_t config_buffers(config_run_t *r, const taso_rt_config_t *cfg) {
  r->cfg = cfg;
  r->scratch = r->be->scratch != NULL;
  if (chilled(cfg) && !r->be->flush_cache && r->be->device_uuid) {
    /* an accelerator without its own flush: a host buffer uploaded over its cache */
    r->sweep_count = sweep_floats(r->be);
    int64_t room = r->sweep_count;
    for (int i = 0; i < cfg->nin; i++)
      if (taso_tensor_size(&cfg->in[i]) > room) room = taso_tensor_size(&cfg->in[i]);
    r->host = malloc(sizeof(float) * (size_t)room);
    if (!r->host) return taso_error(TASO_ERR_NOMEM, "cache sweep of %lld floats", (long long)room);
    for (int64_t i = 0; i < room; i++)
      r->host[i] = 0; /* its own pages, not the zero page */
    TASO_TRY(r->be->alloc(r->ctx, r->sweep_count, &r->sweep));
  }
  if (chilled(cfg) && !r->be->device_uuid)
    TASO_TRY(host_sweep_take(sweep_floats(r->be), &r->swept));
  if (cfg->in_place < 0 || cfg->in_place > cfg->nin ||
      (cfg->in_place &&
       taso_tensor_size(&cfg->in[cfg->in_place - 1]) != taso_tensor_size(&cfg->out[0])))
    return taso_error(TASO_ERR_ARG, "in place over operand %d: not an operand of the output's size",
                      cfg->in_place - 1);
  for (int i = 0; i < cfg->nin + cfg->nout; i++) {
    const taso_tensor_t *t = i < cfg->nin ? &cfg->in[i] : &cfg->out[i - cfg->nin];
    int64_t n = taso_tensor_size(t);
    void **slot = i < cfg->nin ? &r->in[i] : &r->out[i - cfg->nin];
    if (i == cfg->nin && cfg->in_place) { /* the result overwrites its operand, run after run */
      *slot = r->in[cfg->in_place - 1];
      continue;
    }
    if (r->scratch) {
      TASO_TRY(r->be->scratch(r->ctx, i, n, slot));
      continue;
    }
    TASO_TRY(r->be->alloc(r->ctx, n, slot));
    float *host = malloc(sizeof(float) * (size_t)(n > 0 ? n : 1));
    if (!host) return taso_error(TASO_ERR_NOMEM, "timing data");
    fill_random(host, n, 0x7a50u + (uint64_t)i);
    taso_err_t err = r->be->upload(r->ctx, *slot, host, n);
    free(host);
    TASO_TRY(err);
  }
  memcpy(r->at, r->in, sizeof r->at);
  return TASO_OK;
}

static void release_config(config_run_t *r) {
  if (r->graph) r->be->graph_free(r->ctx, r->graph);
  if (r->k) r->be->destroy(r->ctx, r->k);
  for (int i = 0; i < TASO_RT_MAX_IN && !r->scratch; i++)
    if (r->in[i]) r->be->release(r->ctx, r->in[i]);
  for (int i = 0; i < 2 && !r->scratch; i++)
    if (r->out[i] && !(i == 0 && r->cfg && r->cfg->in_place)) r->be->release(r->ctx, r->out[i]);
  if (r->sweep) r->be->release(r->ctx, r->sweep);
  if (r->swept) host_sweep_give_back(r->swept);
  free(r->host);
}

taso_err_t taso_rt_time_config(const taso_backend_t *be, taso_rt_ctx_t *ctx,
                               const taso_rt_config_t *cfg, int warmup, int runs,
                               taso_rt_stats_t *stats) {
  config_run_t r = {.be = be, .ctx = ctx};
  taso_err_t err = config_buffers(&r, cfg);
  if (err == TASO_OK) err = be->prepare(ctx, cfg, &r.k);
  if (err == TASO_OK) capture_config(&r);
  if (err == TASO_OK)
    err = time_loop(be, ctx, r.graph ? replay_config : run_config, chilled(cfg) ? chill : NULL, &r,
                    warmup, runs, r.how, stats);
  release_config(&r);
  return err;
}

/* A chain of small steps: relu after relu of x, 1 x 1024. */
static taso_err_t chain_model(taso_model_t *m, int steps) {
  taso_model_init(m, "dispatch");
  int32_t dim[2] = {1, 1024};
  taso_ref_t t;
  taso_params_t p = taso_params_default();
  TASO_TRY(taso_model_input(m, "x", false, 2, dim, NULL, &t));
  for (int i = 0; i < steps; i++) {
    taso_ref_t in[3] = {t, -1, -1};
    TASO_TRY(taso_model_node(m, TASO_OP_RELU, &p, in, &t));
  }
  return taso_model_output(m, t, "y");
}

taso_err_t taso_rt_time_dispatch(const taso_backend_t *be, taso_rt_ctx_t *ctx, int steps,
                                 int warmup, int runs, double *samples) {
  if (steps < 1 || runs < 1) return taso_error(TASO_ERR_ARG, "dispatch: no steps or no runs");
  taso_model_t m;
  taso_rt_plan_t *plan = NULL;
  taso_rt_config_t cfg;
  float x[1024];
  const float *in[1] = {x};
  taso_rt_stats_t alone, whole;
  taso_rt_options_t opt = {.layout = TASO_RT_NCHW, .warm_weights = true};
  taso_err_t err = chain_model(&m, steps);
  for (int i = 0; i < 1024; i++)
    x[i] = (float)(i % 7) - 3.0f;
  if (err == TASO_OK) err = taso_rt_plan(be, ctx, &m, &opt, &plan);
  /* the chain's step alone, timed as every configuration is */
  const taso_rt_typed_graph_t typed = taso_rt_typed_of(&m);
  if (err == TASO_OK) err = taso_rt_config_of_node(&typed, m.graph.nnodes - 1, &cfg);
  if (err == TASO_OK) err = taso_rt_time_config(be, ctx, &cfg, warmup, runs, &alone);
  /* then each whole run, less the steps as timed alone */
  if (err == TASO_OK) err = taso_rt_time_model(plan, in, warmup, 1, &whole);
  for (int r = 0; r < runs && err == TASO_OK; r++) {
    err = taso_rt_time_model(plan, in, 0, 1, &whole);
    samples[r] = whole.median / steps - alone.median;
  }
  taso_rt_plan_free(plan);
  taso_model_free(&m);
  return err;
}

double taso_rt_iqr_spread(double *ms, int n) {
  if (n < 4) return 0;
  qsort(ms, (size_t)n, sizeof *ms, compare_double);
  double median = n % 2 ? ms[n / 2] : 0.5 * (ms[n / 2 - 1] + ms[n / 2]);
  return median > 0 ? (ms[(3 * n) / 4] - ms[n / 4]) / median : 0;
}

/* Whether the samples so far have settled (on a sorted copy: the caller
 * keeps them in run order). */
static bool settled(const double *samples, int n, double target, double *scratch) {
  memcpy(scratch, samples, sizeof *scratch * (size_t)n);
  return taso_rt_iqr_spread(scratch, n) <= target;
}

taso_err_t taso_rt_time_config_samples(const taso_backend_t *be, taso_rt_ctx_t *ctx,
                                       const taso_rt_config_t *cfg, int warmup, int min_runs,
                                       int max_runs, double target_spread, double *samples, int *n,
                                       char *algorithm, int algorithm_len) {
  *n = 0;
  if (algorithm && algorithm_len > 0) algorithm[0] = '\0';
  if (min_runs < 1 || max_runs < min_runs)
    return taso_error(TASO_ERR_ARG, "timing needs 1 <= min_runs <= max_runs");
  double *scratch = malloc(sizeof *scratch * (size_t)max_runs);
  if (!scratch) return taso_error(TASO_ERR_NOMEM, "timings");
  config_run_t r = {.be = be, .ctx = ctx};
  taso_err_t err = config_buffers(&r, cfg);
  if (err == TASO_OK) err = be->prepare(ctx, cfg, &r.k);
  if (err == TASO_OK && algorithm && algorithm_len > 0) be->describe(r.k, algorithm, algorithm_len);
  if (err == TASO_OK) capture_config(&r);
  run_fn_t fn = r.graph ? replay_config : run_config;
  for (int i = 0; i < warmup && err == TASO_OK; i++) {
    if (chilled(cfg)) err = chill(&r);
    if (err == TASO_OK) err = fn(&r);
    if (err == TASO_OK) err = be->sync(ctx);
  }
  while (err == TASO_OK && *n < max_runs &&
         (*n < min_runs || !settled(samples, *n, target_spread, scratch))) {
    if (chilled(cfg) && (err = chill(&r)) != TASO_OK) break;
    err = time_run(be, ctx, fn, &r, r.how, &samples[(*n)++]);
  }
  release_config(&r);
  free(scratch);
  return err;
}

/* ---- planning: fusion ------------------------------------------------------ */

/* How many operands and graph outputs read each tensor (uses[ref]), then
 * a node reading it (uses[2 * nnodes + ref], -1 if none). */
static int *count_consumers(const taso_rt_typed_graph_t *pg) {
  const taso_graph_t *g = pg->graph;
  size_t refs = (size_t)(2 * g->nnodes);
  int *uses = calloc(2 * refs + 1, sizeof *uses);
  if (!uses) return NULL;
  int *reader = uses + refs;
  for (size_t r = 0; r < refs; r++)
    reader[r] = -1;
  for (int i = 0; i < g->nnodes; i++) {
    const taso_node_t *n = &g->nodes[i];
    if (n->kind == TASO_OP_INPUT) continue;
    for (int a = 0; a < taso_ops[n->kind].arity; a++)
      uses[n->in[a]]++, reader[n->in[a]] = i;
  }
  for (int o = 0; o < g->noutputs; o++)
    uses[g->outputs[o]]++;
  return uses;
}

/* The one node reading ref, or -1 when it has other readers or is an output. */
static int sole_consumer(const taso_rt_typed_graph_t *pg, const int *uses, taso_ref_t ref) {
  return uses[ref] == 1 ? uses[2 * pg->graph->nnodes + ref] : -1;
}

/* A bias for a result of type out: one value per channel of a
 * convolution ([1,C,1,1] or [C,1,1]) or per column of a matmul ([n] or
 * [1,n]), as ONNX broadcasting would apply it. */
static bool is_bias_shape(int32_t kind, const taso_tensor_t *out, const taso_tensor_t *b) {
  int64_t channels = kind == TASO_OP_CONV2D ? out->dim[1] : out->dim[out->rank - 1];
  if (taso_tensor_size(b) != channels || b->rank > out->rank || b->rank == 0) return false;
  int axis = kind == TASO_OP_CONV2D ? 1 : out->rank - 1;
  /* the bias's non-1 axis, aligned to the trailing axes, must be the channel axis */
  int aligned = axis - (out->rank - b->rank);
  return aligned >= 0 && b->dim[aligned] == channels;
}

/* Shapes only: a model's types carry split trees (a concat's result has
 * one), which say nothing about the values' layout. */
static bool same_shape(const taso_tensor_t *a, const taso_tensor_t *b) {
  return a->rank == b->rank && memcmp(a->dim, b->dim, sizeof a->dim) == 0;
}

/* The other operand of a two-operand add reading ref, or -1. */
static taso_ref_t other_operand(const taso_node_t *n, taso_ref_t ref) {
  if (n->kind != TASO_OP_ADD && n->kind != TASO_OP_EWADD) return -1;
  if (n->in[0] == ref && n->in[1] != ref) return n->in[1];
  if (n->in[1] == ref && n->in[0] != ref) return n->in[0];
  return -1;
}

/* The per-channel operand of node n when it adds a bias to ref, a result
 * of type out of a head of this kind: chadd's vector on the head's channel
 * axis, or the other operand of an add that broadcasts like one; -1 if
 * neither. */
static taso_ref_t bias_operand(const taso_rt_typed_graph_t *pg, const taso_node_t *n,
                               taso_ref_t ref, int32_t kind, const taso_tensor_t *out) {
  if (n->kind == TASO_OP_CHADD) {
    int axis = kind == TASO_OP_CONV2D ? 1 : out->rank - 1;
    return n->in[0] == ref && n->in[1] != ref && n->p.axis == axis ? n->in[1] : -1;
  }
  taso_ref_t other = other_operand(n, ref);
  return other >= 0 && is_bias_shape(kind, out, &pg->types[other]) ? other : -1;
}

/* Extends the step of node head (a conv2d or matmul) over the nodes that
 * apply its epilogue: add(bias), add(residual), relu or clip, in that order, each
 * the sole reader of the one before and not in another chain, by limit
 * nodes at most. Returns the last node of the chain. claimed NULL: the
 * chain is known to reach limit nodes on (its configuration made again). */
static int fuse_chain(const taso_rt_typed_graph_t *pg, const int *uses, const int *claimed,
                      int head, plan_step_t *s, int limit) {
  taso_rt_config_t *cfg = &s->info.cfg;
  int last = head;
  for (int k = 0; k < limit && !(cfg->fuse & TASO_RT_ACTIVATION); k++) {
    int next = sole_consumer(pg, uses, TASO_REF(last, 0));
    if (next < 0 || (claimed && claimed[next] != -1)) break; /* another chain's */
    const taso_node_t *n = &pg->graph->nodes[next];
    taso_ref_t other = other_operand(n, TASO_REF(last, 0));
    const taso_tensor_t *ot = &pg->types[TASO_REF(last, 0)];
    taso_ref_t bias = cfg->kind == TASO_OP_BMM || (cfg->fuse & (TASO_FUSE_BIAS | TASO_FUSE_SUM))
                          ? -1
                          : bias_operand(pg, n, TASO_REF(last, 0), cfg->kind, ot);
    if (n->kind == TASO_OP_RELU) {
      cfg->fuse |= TASO_FUSE_RELU;
    } else if (n->kind == TASO_OP_CLIP) {
      cfg->fuse |= TASO_FUSE_CLIP;
      memcpy(cfg->p.bound, n->p.bound, sizeof cfg->p.bound);
    } else if (bias >= 0) {
      cfg->fuse |= TASO_FUSE_BIAS;
      int32_t c = (int32_t)taso_tensor_size(&pg->types[bias]);
      cfg->in[cfg->nin] = taso_tensor_make(1, &c);
      if (is_weight_ref(pg, bias)) cfg->cold |= 1u << cfg->nin;
      s->in[cfg->nin++] = bias;
    } else if (other >= 0 && !(cfg->fuse & TASO_FUSE_SUM) && same_shape(&pg->types[other], ot)) {
      cfg->fuse |= TASO_FUSE_SUM;
      cfg->in[cfg->nin] = taso_tensor_make(ot->rank, ot->dim);
      s->in[cfg->nin++] = other;
    } else {
      break;
    }
    last = next;
  }
  return last;
}

/* ---- planning: steps and buffers ------------------------------------------- */

/* What taso_rt_steps_partial adds to planning (all NULL for a plan). */
typedef struct {
  const bool *absent;     /* nodes taken as inputs (weights folded ahead) */
  taso_rt_known_fn known; /* steps whose configuration is not needed */
  taso_rt_step_fn each;   /* given every step, in order, instead of the plan keeping it */
  void *ctx;
} partial_t;

/* Only what a plan's step starts with is cleared: zeroing the whole
 * (kilobytes, with its reason text) for every node was most of what
 * planning a graph for a cost model cost. */
static void clear_step(plan_step_t *s) {
  memset(&s->info, 0, sizeof s->info);
  s->reason[0] = 0;
  s->k = NULL;
  memset(s->in, 0, sizeof s->in);
  memset(s->out, 0, sizeof s->out);
  memset(s->host, 0, sizeof s->host);
}

static taso_err_t step_of_node(const taso_rt_typed_graph_t *pg, int node, plan_step_t *s) {
  clear_step(s);
  TASO_TRY(taso_rt_config_of_node(pg, node, &s->info.cfg));
  const taso_node_t *n = &pg->graph->nodes[node];
  for (int a = 0; a < taso_ops[n->kind].arity; a++)
    s->in[a] = n->in[a];
  s->info.node = s->info.first_node = node;
  s->info.fused = 1;
  s->info.reason = s->reason;
  return TASO_OK;
}

/* What fuse_chain reads of a head's step, and nothing else: the chains of
 * a partial plan are configured only where asked (full_chain). */
static void head_of_node(const taso_rt_typed_graph_t *pg, int node, plan_step_t *s) {
  const taso_node_t *n = &pg->graph->nodes[node];
  s->info.cfg.kind = n->kind;
  s->info.cfg.p = n->p;
  s->info.cfg.fuse = 0;
  s->info.cfg.cold = 0; /* fuse_chain marks a bias; the caller knows the operands */
  if (has_epilogue(n->kind) && n->p.act == TASO_ACT_RELU) { /* as taso_rt_config_of_node */
    s->info.cfg.fuse = TASO_FUSE_RELU;
    s->info.cfg.p.act = TASO_ACT_NONE;
  }
  s->info.cfg.nin = taso_ops[n->kind].arity;
  for (int a = 0; a < taso_ops[n->kind].arity; a++)
    s->in[a] = n->in[a];
  s->info.node = s->info.first_node = node;
  s->info.fused = 1;
}

/* A chain's step configured in full: its head's, extended over the nodes
 * find_chains gave it (the same decisions, on the same nodes). */
static taso_err_t full_chain(const taso_rt_typed_graph_t *pg, const int *uses,
                             const plan_step_t *chain, plan_step_t *s) {
  TASO_TRY(step_of_node(pg, chain->info.first_node, s));
  fuse_chain(pg, uses, NULL, chain->info.first_node, s, chain->info.fused - 1);
  s->info.node = chain->info.node;
  s->info.fused = chain->info.fused;
  return TASO_OK;
}

/* Finds the fused chains: chain[head_at[head]] gets the step of each
 * chain, claimed[] the head of a chain at its last node and -2 at its
 * other nodes. Absent nodes head no chain (and read no operand that a
 * chain could extend over: they compute from weights alone). */
static taso_err_t find_chains(const taso_rt_typed_graph_t *pg, const int *uses,
                              const partial_t *part, int *claimed, const int *head_at,
                              plan_step_t *chain) {
  for (int i = 0; i < pg->graph->nnodes; i++) {
    int32_t kind = pg->graph->nodes[i].kind;
    if (kind != TASO_OP_CONV2D && kind != TASO_OP_MATMUL) continue;
    if (part->absent && part->absent[i]) continue;
    plan_step_t *s = &chain[head_at[i]];
    if (part->each)
      head_of_node(pg, i, s);
    else
      TASO_TRY(step_of_node(pg, i, s));
    int last = fuse_chain(pg, uses, claimed, i, s, pg->graph->nnodes);
    if (last == i) continue;
    for (int j = i; j != last; j = sole_consumer(pg, uses, TASO_REF(j, 0))) {
      claimed[j] = -2;
      s->info.fused++;
    }
    claimed[last] = i;
    s->info.node = last;
  }
  return TASO_OK;
}

/* The chains a call plan lists, found as find_chains finds its own (the
 * same configurations), each checked to be one the runtime fuses;
 * call_at[node] gets the plan's step covering each node (-1: none). */
static taso_err_t chains_from_calls(const taso_rt_typed_graph_t *pg, const int *uses,
                                    const taso_rt_options_t *opt, int *claimed, const int *head_at,
                                    plan_step_t *chain, int *call_at) {
  int nn = pg->graph->nnodes;
  for (int i = 0; i < nn; i++)
    call_at[i] = -1;
  for (int j = 0; j < opt->ncalls; j++) {
    const taso_call_t *c = &opt->calls[j];
    int head = c->first_node;
    if (c->node < 0 || c->node >= nn || head < 0 || head > c->node || c->fused < 1 ||
        pg->graph->nodes[c->node].kind == TASO_OP_INPUT)
      return taso_error(TASO_ERR_ARG, "call plan step %d (%s): no operator t%d..t%d of %d nodes", j,
                        c->call, head, c->node, nn);
    int last = head, fused = 1;
    if (c->fused > 1) {
      if (head_at[head] < 0)
        return taso_error(TASO_ERR_ARG, "call plan step %d (%s): t%d (%s) heads no fused chain", j,
                          c->call, head, taso_ops[pg->graph->nodes[head].kind].name);
      plan_step_t *s = &chain[head_at[head]];
      TASO_TRY(step_of_node(pg, head, s));
      last = fuse_chain(pg, uses, NULL, head, s, c->fused - 1);
      for (int k = head; k != last; k = sole_consumer(pg, uses, TASO_REF(k, 0)))
        fused++;
      s->info.node = last;
      s->info.fused = fused;
    }
    if (last != c->node || fused != c->fused)
      return taso_error(TASO_ERR_ARG,
                        "call plan step %d (%s): t%d..t%d (%d nodes) is not a chain the runtime "
                        "fuses in this graph",
                        j, c->call, head, c->node, c->fused);
    for (int k = head;; k = sole_consumer(pg, uses, TASO_REF(k, 0))) {
      if (call_at[k] >= 0)
        return taso_error(TASO_ERR_ARG, "call plan: node t%d is in steps %d and %d", k, call_at[k],
                          j);
      call_at[k] = j;
      if (k == last) break;
      claimed[k] = -2;
    }
    if (c->fused > 1) claimed[last] = head;
  }
  for (int i = 0; i < nn; i++)
    if (call_at[i] < 0 && pg->graph->nodes[i].kind != TASO_OP_INPUT)
      return taso_error(TASO_ERR_ARG,
                        "call plan: node t%d (%s) is in no step (a plan made "
                        "for another graph?)",
                        i, taso_ops[pg->graph->nodes[i].kind].name);
  return TASO_OK;
}

/* The layout and in-place write a step gets: its call's, or the options'. */
static void apply_call(const taso_rt_options_t *opt, const int *call_at, int node, plan_step_t *s) {
  const taso_call_t *c = opt->calls ? &opt->calls[call_at[node]] : NULL;
  s->info.cfg.layout = c ? c->layout : opt->layout;
  s->info.cfg.in_place = c ? c->in_place : 0;
  memcpy(s->info.in, s->in, sizeof s->info.in);
}

/* An operand computed by an absent node is a weight once the model is
 * written (folded), so it is cold like the model's own weights; with
 * warm_weights none is. */
static void mark_cold(const partial_t *part, const taso_rt_options_t *opt, plan_step_t *s) {
  taso_rt_config_t *cfg = &s->info.cfg;
  for (int a = 0; part->absent && a < cfg->nin; a++)
    if (part->absent[TASO_REF_NODE(s->in[a])]) cfg->cold |= 1u << a;
  if (opt->warm_weights) cfg->cold = 0;
  /* each result has a buffer of its own, last written an inference ago,
   * unless it is written over an operand (or runs nothing: placed) */
  cfg->cold_out = !opt->warm_weights && cfg->in_place == 0;
}

/* One step of a partial plan, handed over: a known one without its
 * configuration (cfg.kind 0). What known is shown of a step is what
 * fuse_chain works on (head_of_node's fields, and the operands it added). */
static taso_err_t hand_over(const taso_rt_typed_graph_t *pg, const int *uses, const partial_t *part,
                            const plan_step_t *chain, int node, const taso_rt_options_t *opt,
                            const int *call_at, plan_step_t *s) {
  if (part->known) {
    if (!chain) head_of_node(pg, node, s);
    if (part->known(part->ctx, pg, chain ? &chain->info : &s->info)) {
      taso_rt_step_info_t info;
      info.node = node;
      info.first_node = chain ? chain->info.first_node : node;
      info.fused = chain ? chain->info.fused : 1;
      info.cfg.kind = 0;
      return part->each(part->ctx, &info);
    }
  }
  if (chain)
    TASO_TRY(full_chain(pg, uses, chain, s));
  else
    TASO_TRY(step_of_node(pg, node, s));
  apply_call(opt, call_at, node, s);
  s->info.reason = "";
  mark_cold(part, opt, s);
  return part->each(part->ctx, &s->info);
}

/* Steps in an order that respects dependencies: a fused chain runs where
 * its last node stood (its operands all come earlier). */
static taso_err_t make_steps(taso_rt_plan_t *plan, const taso_rt_typed_graph_t *pg,
                             const taso_rt_options_t *opt, const partial_t *part) {
  int nn = pg->graph->nnodes, heads = 0;
  size_t cap = (size_t)(nn ? nn : 1);
  int *uses = count_consumers(pg);
  int *claimed = malloc(sizeof *claimed * cap);
  int *head_at = malloc(sizeof *head_at * cap);
  int *call_at = malloc(sizeof *call_at * cap);
  for (int i = 0; head_at && i < nn; i++) {
    int32_t kind = pg->graph->nodes[i].kind;
    head_at[i] = kind == TASO_OP_CONV2D || kind == TASO_OP_MATMUL ? heads++ : -1;
  }
  plan_step_t *chain = malloc(sizeof *chain * (size_t)(heads ? heads : 1));
  /* every step taken is written whole (clear_step or a chain's copy); a
   * partial plan hands its steps over one by one through one scratch step */
  plan->steps = malloc(sizeof *plan->steps * (part->each ? 1 : cap));
  taso_err_t err = TASO_OK;
  if (!uses || !claimed || !head_at || !call_at || !chain || !plan->steps)
    err = taso_error(TASO_ERR_NOMEM, "plan of %d nodes", nn);
  for (int i = 0; i < nn && err == TASO_OK; i++)
    claimed[i] = -1;
  if (err == TASO_OK && opt->calls)
    err = chains_from_calls(pg, uses, opt, claimed, head_at, chain, call_at);
  else if (err == TASO_OK && !opt->no_fusion)
    err = find_chains(pg, uses, part, claimed, head_at, chain);
  for (int i = 0; i < nn && err == TASO_OK; i++) {
    if (pg->graph->nodes[i].kind == TASO_OP_INPUT || claimed[i] == -2) continue;
    if (part->absent && part->absent[i]) continue;
    const plan_step_t *c = claimed[i] >= 0 ? &chain[head_at[claimed[i]]] : NULL;
    if (part->each) {
      err = hand_over(pg, uses, part, c, i, opt, call_at, &plan->steps[0]);
      continue;
    }
    plan_step_t *s = &plan->steps[plan->nsteps];
    if (c)
      *s = *c;
    else
      err = step_of_node(pg, i, s);
    apply_call(opt, call_at, i, s);
    s->info.reason = s->reason;
    mark_cold(part, opt, s);
    for (int o = 0; o < s->info.cfg.nout; o++)
      s->out[o] = TASO_REF(s->info.node, o);
    plan->nsteps++;
  }
  free(uses);
  free(claimed);
  free(head_at);
  free(call_at);
  free(chain);
  return err;
}

/* Which tensors are stored channels last: what the steps touching them
 * say, which must agree (a 4-d weight read both by a convolution and by
 * another operator cannot be both). */
static taso_err_t tensor_layouts(taso_rt_plan_t *plan) {
  int n = 2 * plan->m->graph.nnodes;
  signed char *seen = calloc((size_t)n + 1, 1); /* 0 unseen, 1 row-major, 2 channels last */
  if (!seen) return taso_error(TASO_ERR_NOMEM, "layouts");
  taso_err_t err = TASO_OK;
  for (int s = 0; s < plan->nsteps && err == TASO_OK; s++) {
    const plan_step_t *st = &plan->steps[s];
    const taso_rt_config_t *cfg = &st->info.cfg;
    for (int slot = 0; slot < cfg->nin + cfg->nout && err == TASO_OK; slot++) {
      taso_ref_t r = slot < cfg->nin ? st->in[slot] : st->out[slot - cfg->nin];
      const taso_tensor_t *t = &plan->m->types[r];
      /* [1,C,1,1] biases, [N,1,H,W] masks: the same bytes in either layout */
      if (t->rank == 4 && (t->dim[1] == 1 || (int64_t)t->dim[2] * t->dim[3] == 1)) continue;
      signed char want = taso_rt_channels_last(cfg, slot) ? 2 : 1;
      if (seen[r] && seen[r] != want)
        err = taso_error(TASO_ERR_UNSUPPORTED,
                         "layout NHWC: tensor of node t%d is read both as a convolution "
                         "weight and as an activation",
                         TASO_REF_NODE(r));
      seen[r] = want;
      plan->nhwc[r] = want == 2;
    }
  }
  free(seen);
  return err;
}

/* Host values of tensor ref (row-major) into its buffer, in its layout. */
static taso_err_t put_tensor(taso_rt_plan_t *plan, taso_ref_t ref, const float *values) {
  const taso_tensor_t *t = &plan->m->types[ref];
  int64_t n = taso_tensor_size(t);
  if (!plan->nhwc[ref]) return plan->be->upload(plan->ctx, plan->buf[ref], values, n);
  float *tmp = malloc(sizeof(float) * (size_t)n);
  if (!tmp) return taso_error(TASO_ERR_NOMEM, "layout conversion");
  taso_rt_to_nhwc(t, values, tmp);
  taso_err_t err = plan->be->upload(plan->ctx, plan->buf[ref], tmp, n);
  free(tmp);
  return err;
}

static taso_err_t get_tensor(taso_rt_plan_t *plan, taso_ref_t ref, float *values) {
  const taso_tensor_t *t = &plan->m->types[ref];
  int64_t n = taso_tensor_size(t);
  if (!plan->nhwc[ref]) return plan->be->download(plan->ctx, values, plan->buf[ref], n);
  float *tmp = malloc(sizeof(float) * (size_t)n);
  if (!tmp) return taso_error(TASO_ERR_NOMEM, "layout conversion");
  taso_err_t err = plan->be->download(plan->ctx, tmp, plan->buf[ref], n);
  if (err == TASO_OK) taso_rt_to_nchw(t, tmp, values);
  free(tmp);
  return err;
}

static taso_err_t alloc_tensor(taso_rt_plan_t *plan, taso_ref_t ref) {
  if (plan->buf[ref]) return TASO_OK;
  plan->owned[ref] = true;
  return plan->be->alloc(plan->ctx, taso_tensor_size(&plan->m->types[ref]), &plan->buf[ref]);
}

/* The last step reading each tensor; nsteps for graph outputs, which the
 * caller reads after the run. */
static int *last_readers(const taso_rt_plan_t *plan) {
  const taso_graph_t *g = &plan->m->graph;
  int *last = malloc(sizeof *last * (size_t)(2 * g->nnodes + 1));
  for (int i = 0; last && i < 2 * g->nnodes; i++)
    last[i] = -1;
  for (int s = 0; last && s < plan->nsteps; s++)
    for (int a = 0; a < plan->steps[s].info.cfg.nin; a++)
      last[plan->steps[s].in[a]] = s;
  for (int o = 0; last && o < g->noutputs; o++)
    last[g->outputs[o]] = plan->nsteps;
  return last;
}

/* The last step reading any tensor that shares ref's buffer (placed in
 * the same concat result, written over it, or a view of it). */
static int last_of_buffer(const taso_rt_plan_t *plan, const int *last, taso_ref_t ref) {
  int at = last[ref];
  for (int t = 0; t < 2 * plan->m->graph.nnodes; t++)
    if (plan->root[t] == plan->root[ref] && last[t] > at) at = last[t];
  return at;
}

/* Whether ref's buffer is a model input's or weight's (its own, or as a
 * view of one: an input is its own root), which the next run reads again. */
static bool input_buffer(const taso_rt_plan_t *plan, taso_ref_t ref) {
  return plan->m->graph.nodes[TASO_REF_NODE(plan->root[ref])].kind == TASO_OP_INPUT;
}

/* A residual step that is the last reader of its summand's buffer writes
 * its result over the summand: the backend then skips copying the summand
 * into the result (4 ms of a 45 ms ResNet-50 on 2 cores). Model inputs
 * keep their values, since a later run reads them again. */
static bool in_place(const taso_rt_plan_t *plan, const int *last, int s) {
  const plan_step_t *st = &plan->steps[s];
  if (!(st->info.cfg.fuse & TASO_FUSE_SUM)) return false;
  taso_ref_t summand = st->in[st->info.cfg.nin - 1];
  for (int a = 0; a < st->info.cfg.nin - 1; a++)
    if (plan->root[st->in[a]] == plan->root[summand])
      return false; /* the operator reads it while writing */
  return last_of_buffer(plan, last, summand) == s && !input_buffer(plan, summand);
}

bool taso_rt_config_is_view(const taso_rt_config_t *cfg) {
  if (cfg->nin != 1 ||
      (cfg->layout == TASO_RT_NHWC && (cfg->in[0].rank == 4 || cfg->out[0].rank == 4)))
    return false;
  if (cfg->kind == TASO_OP_RESHAPE) return cfg->nout == 1;
  if ((cfg->kind != TASO_OP_SPLIT && cfg->kind != TASO_OP_SPLIT_AT) || cfg->nout != 2) return false;
  for (int d = 0; d < cfg->p.axis && d < cfg->in[0].rank; d++) /* each part one block */
    if (cfg->in[0].dim[d] != 1) return false;
  return true;
}

/* Step st, a view, gets places in its operand's buffer for its results,
 * unless a result has one already (a slice of a placed concat), the
 * operand shares one (placed, or written over), any is stored channels
 * last, or a call plan's step writes over any (its readers would see
 * that). */
static void make_view(taso_rt_plan_t *plan, plan_step_t *st) {
  const taso_rt_config_t *cfg = &st->info.cfg;
  taso_ref_t a = st->in[0];
  if (!taso_rt_config_is_view(cfg) || plan->root[a] != a || plan->nhwc[a]) return;
  for (int o = 0; o < cfg->nout; o++)
    if (plan->buf[st->out[o]] || plan->nhwc[st->out[o]]) return;
  for (int s = 0; s < plan->nsteps; s++) {
    const plan_step_t *w = &plan->steps[s];
    int k = w->info.cfg.in_place - 1;
    if (k < 0 || k >= w->info.cfg.nin) continue;
    if (w->in[k] == a) return;
    for (int o = 0; o < cfg->nout; o++)
      if (w->in[k] == st->out[o]) return;
  }
  /* a reshape's result is its operand; a split's parts follow each other */
  int64_t offset = 0;
  for (int o = 0; o < cfg->nout; o++) {
    plan->buf[st->out[o]] = (float *)plan->buf[a] + offset;
    plan->root[st->out[o]] = a;
    offset += taso_tensor_size(&cfg->out[o]);
  }
  st->info.view = true;
}

/* Whether a call plan's in-place step s may write over its operand:
 * nothing reads the operand after it, nor any tensor in the same buffer
 * (liveness of the plan's own order), it is no model input or weight,
 * not read through another operand of s, of the result's size, and the
 * result is not placed in a concat already. The selection proved the
 * same from the library's constraints; the runner checks it again, and
 * refuses. */
static taso_err_t check_in_place(const taso_rt_plan_t *plan, const int *last, int s) {
  const plan_step_t *st = &plan->steps[s];
  const taso_rt_config_t *cfg = &st->info.cfg;
  int k = cfg->in_place - 1;
  const char *why = NULL;
  char later[64];
  if (k < 0 || k >= cfg->nin) {
    why = "is not one of its operands";
  } else if (plan->buf[st->out[0]]) {
    why = "cannot be its result's buffer: the result is placed in a concat";
  } else {
    taso_ref_t r = st->in[k];
    int at = last_of_buffer(plan, last, r);
    if (at == plan->nsteps) {
      why = "is (or shares its buffer with) a graph output";
    } else if (at > s) {
      snprintf(later, sizeof later, "step %d reads %s later", at,
               last[r] > s ? "it" : "a tensor in its buffer");
      why = later;
    } else if (input_buffer(plan, r)) {
      why = "is (or is a view of) a model input or weight (the next run reads it again)";
    } else if (taso_tensor_size(&cfg->in[k]) != taso_tensor_size(&cfg->out[0])) {
      why = "has another size than the result";
    }
    for (int a = 0; a < cfg->nin && !why; a++)
      if (a != k && st->in[a] == r) why = "the step also reads through another operand";
  }
  if (!why) return TASO_OK;
  return taso_error(TASO_ERR_ARG,
                    "call plan step %d (%s of t%d) may not write over operand %d, "
                    "which %s: refused",
                    s, taso_ops[cfg->kind].name, st->info.node, k, why);
}

/* A placed concat (step s): its result gets a buffer, and each operand
 * the slice of it where the concat would have copied it, which its
 * producer then writes. Refused unless each slice is one block of the
 * buffer (nothing before the axis but 1s, row-major), and each operand a
 * distinct result of another step with no buffer yet. */
static taso_err_t place_concat(taso_rt_plan_t *plan, int s) {
  plan_step_t *st = &plan->steps[s];
  const taso_rt_config_t *cfg = &st->info.cfg;
  const taso_tensor_t *o = &cfg->out[0];
  const char *why = NULL;
  char what[96] = "";
  int64_t outer = 1, inner = 1;
  for (int d = 0; d < cfg->p.axis; d++)
    outer *= o->dim[d];
  for (int d = cfg->p.axis + 1; d < o->rank; d++)
    inner *= o->dim[d];
  if (cfg->kind != TASO_OP_CONCAT)
    why = "is no concat";
  else if (outer != 1)
    why = "has slices that are not one block each (dimensions before the axis above 1)";
  else if (plan->nhwc[st->out[0]])
    why = "is stored channels last (its slices are not blocks)";
  for (int a = 0; a < cfg->nin && !why; a++) {
    taso_ref_t r = st->in[a];
    snprintf(what, sizeof what, "operand %d (t%d) ", a, TASO_REF_NODE(r));
    if (plan->m->graph.nodes[TASO_REF_NODE(r)].kind == TASO_OP_INPUT)
      why = "is a model input or weight";
    else if (plan->buf[r])
      why = "already has a buffer (placed elsewhere, or read before)";
    else if (plan->nhwc[r])
      why = "is stored channels last";
    for (int b = 0; b < a && !why; b++)
      if (st->in[b] == r) why = "is also another operand";
  }
  if (why)
    return taso_error(TASO_ERR_ARG, "call plan step %d (concat t%d) cannot be placed: %s%s", s,
                      st->info.node, what, why);
  TASO_TRY(alloc_tensor(plan, st->out[0]));
  int64_t offset = 0;
  for (int a = 0; a < cfg->nin; a++) {
    taso_ref_t r = st->in[a];
    plan->buf[r] = (float *)plan->buf[st->out[0]] + offset;
    plan->root[r] = plan->root[st->out[0]];
    offset += cfg->in[a].dim[cfg->p.axis] * inner;
  }
  st->info.placed = true;
  return TASO_OK;
}

/* A buffer for every tensor a step touches; weights uploaded now. Placed
 * concats first, the last first, so that one placed in another gets its
 * slice before its own operands get theirs. */
static taso_err_t make_buffers(taso_rt_plan_t *plan) {
  taso_model_t *m = plan->m;
  TASO_TRY(taso_model_make_weights(m));
  int *last = last_readers(plan);
  if (!last) return taso_error(TASO_ERR_NOMEM, "buffer plan");
  taso_err_t err = TASO_OK;
  for (int t = 0; t < 2 * m->graph.nnodes; t++)
    plan->root[t] = t;
  for (int s = plan->nsteps - 1; s >= 0 && err == TASO_OK; s--)
    if (plan->steps[s].info.cfg.in_place == TASO_CALL_PLACED) err = place_concat(plan, s);
  for (int s = 0; s < plan->nsteps && err == TASO_OK; s++) {
    plan_step_t *st = &plan->steps[s];
    for (int a = 0; a < st->info.cfg.nin && err == TASO_OK; a++)
      err = alloc_tensor(plan, st->in[a]);
    if (err == TASO_OK) make_view(plan, st);
    if (err == TASO_OK && st->info.cfg.in_place > 0) {
      err = check_in_place(plan, last, s);
      taso_ref_t r = st->in[st->info.cfg.in_place - 1];
      if (err == TASO_OK)
        plan->buf[st->out[0]] = plan->buf[r], plan->root[st->out[0]] = plan->root[r];
      st->info.in_place = err == TASO_OK;
    } else if (err == TASO_OK && !plan->called && in_place(plan, last, s)) {
      taso_ref_t r = st->in[st->info.cfg.nin - 1];
      plan->buf[st->out[0]] = plan->buf[r], plan->root[st->out[0]] = plan->root[r];
      st->info.in_place = true;
    }
    for (int o = 0; o < st->info.cfg.nout && err == TASO_OK; o++)
      err = alloc_tensor(plan, st->out[o]);
  }
  free(last);
  TASO_TRY(err);
  for (int o = 0; o < m->graph.noutputs; o++)
    TASO_TRY(alloc_tensor(plan, m->graph.outputs[o]));
  for (int i = 0; i < m->graph.nnodes; i++) {
    const taso_node_t *n = &m->graph.nodes[i];
    if (n->kind != TASO_OP_INPUT) continue;
    TASO_TRY(alloc_tensor(plan, TASO_REF(i, 0)));
    if (m->is_weight[n->p.input]) TASO_TRY(put_tensor(plan, TASO_REF(i, 0), m->data[n->p.input]));
  }
  return TASO_OK;
}

/* Prepares a step on the backend, or on the reference backend with host
 * copies of its buffers when the backend has no call for it. */
static taso_err_t prepare_step(taso_rt_plan_t *plan, plan_step_t *s) {
  if (s->info.placed || s->info.view) return TASO_OK;
  taso_err_t err = plan->be->prepare(plan->ctx, &s->info.cfg, &s->k);
  if (err != TASO_ERR_UNSUPPORTED) return err;
  snprintf(s->reason, sizeof s->reason, "%s", taso_error_detail());
  s->info.fallback = true;
  const taso_backend_t *ref = &taso_backend_reference;
  if (!plan->ref_ctx) TASO_TRY(ref->open(0, &plan->ref_ctx));
  const taso_rt_config_t *cfg = &s->info.cfg;
  for (int i = 0; i < cfg->nin + cfg->nout; i++) {
    const taso_tensor_t *t = i < cfg->nin ? &cfg->in[i] : &cfg->out[i - cfg->nin];
    TASO_TRY(ref->alloc(plan->ref_ctx, taso_tensor_size(t), &s->host[i]));
  }
  return ref->prepare(plan->ref_ctx, cfg, &s->k);
}

/* Layouts are configurations like any other: the faster one measured on
 * this machine wins. A layout the backend lacks is skipped. */
static taso_err_t choose_layout(taso_rt_plan_t *plan, plan_step_t *s) {
  const int32_t layouts[] = {TASO_RT_NCHW, TASO_RT_BLOCKED};
  double best = -1;
  int32_t chosen = s->info.cfg.layout;
  for (int i = 0; i < 2; i++) {
    taso_rt_config_t cfg = s->info.cfg;
    cfg.layout = layouts[i];
    taso_rt_stats_t st = {0};
    taso_err_t err = taso_rt_time_config(plan->be, plan->ctx, &cfg, 2, 7, &st);
    if (err == TASO_ERR_UNSUPPORTED) continue;
    TASO_TRY(err);
    if (best < 0 || st.median < best) best = st.median, chosen = layouts[i];
  }
  s->info.cfg.layout = chosen;
  return TASO_OK;
}

static void capture_plan(taso_rt_plan_t *plan, bool no_capture);

taso_err_t taso_rt_plan(const taso_backend_t *be, taso_rt_ctx_t *ctx, taso_model_t *m,
                        const taso_rt_options_t *opt, taso_rt_plan_t **out) {
  taso_rt_options_t defaults = {.no_fusion = false, .layout = TASO_RT_NCHW};
  taso_rt_plan_t *plan = calloc(1, sizeof *plan);
  if (!plan) return taso_error(TASO_ERR_NOMEM, "plan");
  plan->be = be;
  plan->ctx = ctx;
  plan->m = m;
  const taso_rt_typed_graph_t pg = taso_rt_typed_of(m);
  plan->called = opt ? opt->calls != NULL : m->calls != NULL;
  plan->buf = calloc((size_t)(2 * m->graph.nnodes + 2), sizeof *plan->buf);
  plan->owned = calloc((size_t)(2 * m->graph.nnodes + 2), sizeof *plan->owned);
  plan->nhwc = calloc((size_t)(2 * m->graph.nnodes + 2), sizeof *plan->nhwc);
  plan->root = calloc((size_t)(2 * m->graph.nnodes + 2), sizeof *plan->root);
  defaults.calls = m->calls; /* the model's own call plan, when it has one */
  defaults.ncalls = m->ncalls;
  const taso_rt_options_t *o = opt ? opt : &defaults;
  taso_err_t err = plan->buf && plan->owned && plan->nhwc && plan->root
                       ? make_steps(plan, &pg, o, &(partial_t){0})
                       : taso_error(TASO_ERR_NOMEM, "buffer table");
  if (err == TASO_OK) err = tensor_layouts(plan);
  /* NHWC is a whole-plan choice: its steps share channels-last buffers */
  bool choose = o->choose_layout && o->layout != TASO_RT_NHWC && !o->calls;
  for (int s = 0; s < plan->nsteps && err == TASO_OK && choose; s++)
    if (plan->steps[s].info.cfg.kind == TASO_OP_CONV2D) err = choose_layout(plan, &plan->steps[s]);
  if (err == TASO_OK) err = make_buffers(plan);
  for (int s = 0; s < plan->nsteps && err == TASO_OK; s++)
    err = prepare_step(plan, &plan->steps[s]);
  if (err == TASO_OK) capture_plan(plan, o->no_capture);
  if (err != TASO_OK) {
    taso_rt_plan_free(plan);
    return err;
  }
  *out = plan;
  return TASO_OK;
}

void taso_rt_plan_free(taso_rt_plan_t *plan) {
  if (!plan) return;
  const taso_backend_t *ref = &taso_backend_reference;
  if (plan->graph) plan->be->graph_free(plan->ctx, plan->graph);
  for (int j = 0; plan->pinned && j < plan->nstaged; j++)
    if (plan->pinned[j]) plan->be->pinned_release(plan->ctx, plan->pinned[j]);
  free(plan->pinned);
  free(plan->staged);
  free(plan->input_of);
  for (int s = 0; s < plan->nsteps; s++) {
    plan_step_t *st = &plan->steps[s];
    if (st->k)
      (st->info.fallback ? ref : plan->be)
          ->destroy(st->info.fallback ? plan->ref_ctx : plan->ctx, st->k);
    for (int i = 0; i < TASO_RT_MAX_IN + 2; i++)
      if (st->host[i]) ref->release(plan->ref_ctx, st->host[i]);
  }
  for (int i = 0; plan->buf && i < 2 * plan->m->graph.nnodes; i++)
    if (plan->buf[i] && plan->owned[i]) plan->be->release(plan->ctx, plan->buf[i]);
  if (plan->ref_ctx) ref->close(plan->ref_ctx);
  free(plan->buf);
  free(plan->owned);
  free(plan->nhwc);
  free(plan->root);
  free(plan->steps);
  free(plan);
}

taso_err_t taso_rt_steps_partial(const taso_rt_typed_graph_t *pg, const taso_rt_options_t *opt,
                                 const bool *absent, taso_rt_known_fn known, taso_rt_step_fn each,
                                 void *ctx) {
  taso_rt_options_t defaults = {.no_fusion = false, .layout = TASO_RT_NCHW};
  partial_t part = {.absent = absent, .known = known, .each = each, .ctx = ctx};
  taso_rt_plan_t plan = {0}; /* its steps only: a plan without buffers */
  taso_err_t err = make_steps(&plan, pg, opt ? opt : &defaults, &part);
  free(plan.steps);
  return err;
}

/* taso_rt_steps keeps every step handed over. */
typedef struct {
  taso_rt_step_info_t *v;
  int n;
} kept_t;

static taso_err_t keep_step(void *ctx, const taso_rt_step_info_t *info) {
  kept_t *k = ctx;
  k->v[k->n++] = *info;
  return TASO_OK;
}

taso_err_t taso_rt_steps(const taso_model_t *m, const taso_rt_options_t *opt,
                         taso_rt_step_info_t **steps, int *nsteps) {
  const taso_rt_typed_graph_t pg = taso_rt_typed_of(m);
  kept_t k = {.v = malloc(sizeof *k.v * (size_t)(m->graph.nnodes + 1))};
  *steps = NULL;
  *nsteps = 0;
  if (!k.v) return taso_error(TASO_ERR_NOMEM, "steps of %d nodes", m->graph.nnodes);
  taso_err_t err = taso_rt_steps_partial(&pg, opt, NULL, NULL, keep_step, &k);
  if (err != TASO_OK || k.n == 0) {
    free(k.v);
    return err;
  }
  *steps = k.v;
  *nsteps = k.n;
  return TASO_OK;
}

int *taso_rt_consumers(const taso_rt_typed_graph_t *pg) {
  return count_consumers(pg);
}

bool taso_rt_chain_config(const taso_rt_typed_graph_t *pg, const int *uses, int head, int extra,
                          taso_rt_config_t *cfg, int *last, taso_ref_t *in) {
  int32_t kind = pg->graph->nodes[head].kind;
  if (kind != TASO_OP_CONV2D && kind != TASO_OP_MATMUL) return false;
  plan_step_t s;
  if (step_of_node(pg, head, &s) != TASO_OK) return false;
  int end = fuse_chain(pg, uses, NULL, head, &s, extra), fused = 0;
  for (int k = head; k != end; k = sole_consumer(pg, uses, TASO_REF(k, 0)))
    fused++;
  if (fused != extra) return false;
  *cfg = s.info.cfg;
  *last = end;
  if (in) memcpy(in, s.in, sizeof s.in);
  return true;
}

int taso_rt_plan_steps(const taso_rt_plan_t *plan) {
  return plan->nsteps;
}

bool taso_rt_plan_replays(const taso_rt_plan_t *plan, const char **why) {
  if (why) *why = plan->why;
  return plan->graph != NULL;
}

void taso_rt_plan_step(const taso_rt_plan_t *plan, int i, taso_rt_step_info_t *info) {
  *info = plan->steps[i].info;
}

void taso_rt_plan_step_call(const taso_rt_plan_t *plan, int i, char *buf, int len) {
  const plan_step_t *st = &plan->steps[i];
  if (len > 0) buf[0] = '\0';
  if (st->k && !st->info.fallback && !st->info.view && !st->info.placed && plan->be->describe)
    plan->be->describe(st->k, buf, len);
}

/* ---- running ------------------------------------------------------------- */

/* A fallback step: its operands come to the host, the reference kernel
 * runs, its results go back. */
static taso_err_t run_fallback(taso_rt_plan_t *plan, plan_step_t *s) {
  const taso_rt_config_t *cfg = &s->info.cfg;
  TASO_TRY(plan->be->sync(plan->ctx));
  for (int a = 0; a < cfg->nin; a++)
    TASO_TRY(plan->be->download(plan->ctx, s->host[a], plan->buf[s->in[a]],
                                taso_tensor_size(&cfg->in[a])));
  TASO_TRY(taso_backend_reference.run(plan->ref_ctx, s->k, s->host, s->host + cfg->nin));
  for (int o = 0; o < cfg->nout; o++)
    TASO_TRY(plan->be->upload(plan->ctx, plan->buf[s->out[o]], s->host[cfg->nin + o],
                              taso_tensor_size(&cfg->out[o])));
  return TASO_OK;
}

static taso_err_t run_step(taso_rt_plan_t *plan, plan_step_t *s) {
  if (s->info.placed || s->info.view) return TASO_OK;
  if (s->info.fallback) return run_fallback(plan, s);
  void *in[TASO_RT_MAX_IN], *out[2];
  for (int a = 0; a < s->info.cfg.nin; a++)
    in[a] = plan->buf[s->in[a]];
  for (int o = 0; o < s->info.cfg.nout; o++)
    out[o] = plan->buf[s->out[o]];
  return plan->be->run(plan->ctx, s->k, in, out);
}

static taso_err_t upload_inputs(taso_rt_plan_t *plan, const float *const *inputs) {
  const taso_model_t *m = plan->m;
  for (int i = 0; i < m->graph.nnodes; i++) {
    const taso_node_t *n = &m->graph.nodes[i];
    if (n->kind != TASO_OP_INPUT || m->is_weight[n->p.input]) continue;
    int k = 0; /* its position among the run-time inputs */
    for (int j = 0; j < n->p.input; j++)
      k += !m->is_weight[j];
    TASO_TRY(put_tensor(plan, TASO_REF(i, 0), inputs[k]));
  }
  return TASO_OK;
}

static taso_err_t run_steps(taso_rt_plan_t *plan) {
  for (int s = 0; s < plan->nsteps; s++) {
    taso_err_t err = run_step(plan, &plan->steps[s]);
    if (err != TASO_OK)
      return taso_error_prefix(err, "step %d (node t%d, %s): ", s, plan->steps[s].info.node,
                               taso_ops[plan->steps[s].info.cfg.kind].name);
  }
  return plan->be->sync(plan->ctx);
}

/* A replayed run: the host copies into and out of the pinned buffers
 * (converting channels-last tensors) are all that is not one launch. */
static taso_err_t run_replay(taso_rt_plan_t *plan, const float *const *inputs,
                             float *const *outputs) {
  const taso_model_t *m = plan->m;
  for (int j = 0; j < plan->nstaged_in; j++) {
    taso_ref_t r = plan->staged[j];
    const float *x = inputs[plan->input_of[j]];
    if (plan->nhwc[r])
      taso_rt_to_nhwc(&m->types[r], x, plan->pinned[j]);
    else
      memcpy(plan->pinned[j], x, sizeof(float) * (size_t)taso_tensor_size(&m->types[r]));
  }
  TASO_TRY(plan->be->replay(plan->ctx, plan->graph));
  TASO_TRY(plan->be->sync(plan->ctx));
  for (int o = 0; o < m->graph.noutputs && outputs; o++) {
    int j = plan->nstaged_in + o;
    taso_ref_t r = plan->staged[j];
    if (plan->nhwc[r])
      taso_rt_to_nchw(&m->types[r], plan->pinned[j], outputs[o]);
    else
      memcpy(outputs[o], plan->pinned[j], sizeof(float) * (size_t)taso_tensor_size(&m->types[r]));
  }
  return TASO_OK;
}

/* The tensors a replayed run copies through pinned memory, and their
 * pinned buffers. */
static taso_err_t stage_tensors(taso_rt_plan_t *plan) {
  const taso_model_t *m = plan->m;
  int n = m->graph.noutputs;
  for (int i = 0; i < m->graph.nnodes; i++)
    n += m->graph.nodes[i].kind == TASO_OP_INPUT;
  plan->staged = calloc((size_t)n + 1, sizeof *plan->staged);
  plan->input_of = calloc((size_t)n + 1, sizeof *plan->input_of);
  plan->pinned = calloc((size_t)n + 1, sizeof *plan->pinned);
  if (!plan->staged || !plan->input_of || !plan->pinned)
    return taso_error(TASO_ERR_NOMEM, "staging table");
  for (int i = 0; i < m->graph.nnodes; i++) {
    const taso_node_t *node = &m->graph.nodes[i];
    if (node->kind != TASO_OP_INPUT || m->is_weight[node->p.input]) continue;
    int k = 0; /* its position among the run-time inputs, as upload_inputs counts */
    for (int j = 0; j < node->p.input; j++)
      k += !m->is_weight[j];
    plan->input_of[plan->nstaged] = k;
    plan->staged[plan->nstaged++] = TASO_REF(i, 0);
  }
  plan->nstaged_in = plan->nstaged;
  for (int o = 0; o < m->graph.noutputs; o++)
    plan->staged[plan->nstaged++] = m->graph.outputs[o];
  for (int j = 0; j < plan->nstaged; j++)
    TASO_TRY(plan->be->pinned_alloc(plan->ctx, taso_tensor_size(&m->types[plan->staged[j]]),
                                    &plan->pinned[j]));
  return TASO_OK;
}

/* Records one run (inputs from their pinned copies, every step, outputs
 * into theirs) for replay. */
static taso_err_t record_run(taso_rt_plan_t *plan) {
  const taso_backend_t *be = plan->be;
  const taso_model_t *m = plan->m;
  taso_err_t err = TASO_OK;
  for (int j = 0; j < plan->nstaged_in && err == TASO_OK; j++) {
    taso_ref_t r = plan->staged[j];
    err = be->upload(plan->ctx, plan->buf[r], plan->pinned[j], taso_tensor_size(&m->types[r]));
  }
  for (int s = 0; s < plan->nsteps && err == TASO_OK; s++)
    err = run_step(plan, &plan->steps[s]);
  for (int j = plan->nstaged_in; j < plan->nstaged && err == TASO_OK; j++) {
    taso_ref_t r = plan->staged[j];
    err = be->download(plan->ctx, plan->pinned[j], plan->buf[r], taso_tensor_size(&m->types[r]));
  }
  return err;
}

/* Captures the plan's run for replay where the backend can; a plan it
 * cannot capture runs step by step, and plan->why says why (once, for
 * the caller to report): a fallback step waits for the device and copies
 * through pageable host memory, which a graph cannot hold. */
static void capture_plan(taso_rt_plan_t *plan, bool no_capture) {
  const taso_backend_t *be = plan->be;
  if (!be->begin_capture || !be->pinned_alloc) return;
  if (no_capture) {
    snprintf(plan->why, sizeof plan->why, "not captured: asked to run step by step");
    return;
  }
  for (int s = 0; s < plan->nsteps; s++) {
    const plan_step_t *st = &plan->steps[s];
    if (!st->info.fallback) continue;
    snprintf(plan->why, sizeof plan->why,
             "not captured: step %d (t%d, %s) runs the reference kernel on host copies", s,
             st->info.node, taso_ops[st->info.cfg.kind].name);
    return;
  }
  taso_err_t err = stage_tensors(plan);
  /* one run first: the libraries load their kernels then, not while capturing */
  if (err == TASO_OK) err = run_steps(plan);
  if (err != TASO_OK) {
    snprintf(plan->why, sizeof plan->why, "not captured: %s", taso_error_detail());
    return;
  }
  if ((err = be->begin_capture(plan->ctx)) == TASO_OK) {
    err = record_run(plan);
    const char *failed = err != TASO_OK ? taso_error_detail() : NULL;
    char detail[256] = "";
    if (failed) snprintf(detail, sizeof detail, "%s", failed);
    taso_rt_graph_t *graph = NULL;
    taso_err_t end = be->end_capture(plan->ctx, &graph);
    if (err == TASO_OK && end == TASO_OK) {
      plan->graph = graph;
      return;
    }
    if (graph) be->graph_free(plan->ctx, graph);
    if (err != TASO_OK) {
      snprintf(plan->why, sizeof plan->why, "not captured: %s", detail);
      return;
    }
  }
  snprintf(plan->why, sizeof plan->why, "not captured: %s", taso_error_detail());
}

taso_err_t taso_rt_run(taso_rt_plan_t *plan, const float *const *inputs, float *const *outputs) {
  if (plan->graph) return run_replay(plan, inputs, outputs);
  TASO_TRY(upload_inputs(plan, inputs));
  TASO_TRY(run_steps(plan));
  const taso_model_t *m = plan->m;
  for (int o = 0; o < m->graph.noutputs && outputs; o++) {
    taso_ref_t r = m->graph.outputs[o];
    TASO_TRY(get_tensor(plan, r, outputs[o]));
  }
  return TASO_OK;
}

typedef struct {
  taso_rt_plan_t *plan;
  const float *const *inputs;
  float **outputs; /* host scratch for the results */
  int step;        /* the step timed alone */
} model_run_t;

static taso_err_t run_whole(void *arg) {
  model_run_t *r = arg;
  return taso_rt_run(r->plan, r->inputs, r->outputs);
}

static taso_err_t run_one_step(void *arg) {
  model_run_t *r = arg;
  return run_step(r->plan, &r->plan->steps[r->step]);
}

static void free_outputs(const taso_model_t *m, float **out) {
  for (int o = 0; out && o < m->graph.noutputs; o++)
    free(out[o]);
  free(out);
}

/* Host arrays for every graph output, so that timed runs download them as
 * a real inference does. */
static float **alloc_outputs(const taso_model_t *m) {
  float **out = calloc((size_t)(m->graph.noutputs + 1), sizeof *out);
  for (int o = 0; out && o < m->graph.noutputs; o++) {
    out[o] = malloc(sizeof(float) * (size_t)taso_tensor_size(&m->types[m->graph.outputs[o]]));
    if (!out[o]) {
      free_outputs(m, out);
      return NULL;
    }
  }
  return out;
}

taso_err_t taso_rt_time_model(taso_rt_plan_t *plan, const float *const *inputs, int warmup,
                              int runs, taso_rt_stats_t *stats) {
  model_run_t r = {.plan = plan, .inputs = inputs, .outputs = alloc_outputs(plan->m)};
  if (!r.outputs) return taso_error(TASO_ERR_NOMEM, "outputs");
  taso_err_t err =
      time_loop(plan->be, plan->ctx, run_whole, NULL, &r, warmup, runs, TIME_HOST, stats);
  free_outputs(plan->m, r.outputs);
  return err;
}

taso_err_t taso_rt_profile(taso_rt_plan_t *plan, const float *const *inputs, int warmup, int runs,
                           taso_rt_stats_t *step_stats) {
  model_run_t r = {.plan = plan, .inputs = inputs};
  TASO_TRY(upload_inputs(plan, inputs));
  TASO_TRY(run_steps(plan)); /* every buffer holds real values */
  for (int s = 0; s < plan->nsteps; s++) {
    r.step = s;
    TASO_TRY(time_loop(plan->be, plan->ctx, run_one_step, NULL, &r, warmup, runs,
                       taso_rt_device_clock(plan->be) ? TIME_DEVICE : TIME_HOST, &step_stats[s]));
  }
  return TASO_OK;
}

taso_err_t taso_rt_profile_in_run(taso_rt_plan_t *plan, const float *const *inputs, int warmup,
                                  int runs, taso_rt_stats_t *step_stats) {
  if (runs < 1) return taso_error(TASO_ERR_ARG, "timing needs at least one run");
  double *ms = malloc(sizeof *ms * (size_t)runs * (size_t)(plan->nsteps + 1));
  if (!ms) return taso_error(TASO_ERR_NOMEM, "timings");
  taso_err_t err = TASO_OK;
  for (int r = -warmup; r < runs && err == TASO_OK; r++) {
    err = upload_inputs(plan, inputs);
    for (int s = 0; s < plan->nsteps && err == TASO_OK; s++) {
      double t0 = now_ms();
      err = run_step(plan, &plan->steps[s]);
      if (err == TASO_OK) err = plan->be->sync(plan->ctx);
      if (r >= 0) ms[(size_t)s * (size_t)runs + (size_t)r] = now_ms() - t0;
    }
  }
  for (int s = 0; s < plan->nsteps && err == TASO_OK; s++)
    taso_rt_stats_of(ms + (size_t)s * (size_t)runs, runs, &step_stats[s]);
  free(ms);
  return err;
}
