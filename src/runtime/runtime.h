/*
 * The runtime: backends that run operator configurations and whole models.
 *
 * A backend is a struct of function pointers (one file each: reference,
 * cpu with oneDNN, gpu with cuDNN and cuBLAS). It prepares one operator
 * configuration into a kernel (choosing its library call and, on the GPU,
 * its algorithm by timing), runs it on buffers it allocated, and says
 * TASO_ERR_UNSUPPORTED for a configuration it has no call for. The
 * reference backend (the registry's double evaluation) runs everything and
 * is always built; tests compare every backend against it.
 *
 * Fused library calls and memory layouts are part of the configuration, not
 * of a backend's private choices: a convolution with its bias and ReLU (and
 * a residual sum) in one call is a configuration with fuse flags, and the
 * layout of its activations is a field, so that choosing calls and layouts
 * by measured cost is a search over configurations.
 *
 * Buffers hold float32. Upload and download copy bytes as they are: in
 * a row-major (NCHW, NCHW-BLOCKED) configuration a buffer holds the
 * tensor row-major in its logical shape; in an NHWC one its 4-d
 * activations are channels last (see taso_rt_layout_t). A backend that
 * keeps another layout inside reorders in its kernels.
 *
 * The runner (taso_rt_plan and after) is backend-neutral: a fused residual
 * may get its summand's buffer as its output, and an unsupported step runs
 * the reference kernel on host copies of its buffers. Where a backend
 * offers the optional hooks (the gpu's), a plan's runs are captured once
 * and replayed as one launch, and timings use the device's own clock:
 * launching a kernel costs a GPU more than many of its kernels run.
 */
#ifndef TASO_RUNTIME_H
#define TASO_RUNTIME_H

#include <stdbool.h>
#include <stdint.h>

#include "graph.h"
#include "model.h"

/* Layouts of 4-d activations. Rank < 4 tensors are always row-major.
 * NHWC is a layout of the buffers themselves: every 4-d operand and result
 * of the configuration except a conv2d's weight (in[1]) is stored
 * channels last, so that a chain of NHWC steps never reorders; the runner
 * converts at the model's inputs and outputs (taso_rt_channels_last says
 * which slots). BLOCKED keeps the buffers row-major and lets the backend
 * reorder into its own format inside the kernel (oneDNN nChw16c, nhwc);
 * a BLOCKED or NHWC kernel may reorder a weight once per weight buffer and
 * keep it, since weights do not change between runs. */
typedef enum {
  TASO_RT_NCHW = 0,    /* row-major in the logical shape */
  TASO_RT_NHWC = 1,    /* channels last, in the buffers */
  TASO_RT_BLOCKED = 2, /* row-major buffers; the backend's own format inside */
} taso_rt_layout_t;

/* Epilogues fused into one library call (conv2d, matmul, bmm). */
enum {
  TASO_FUSE_BIAS = 1 << 0, /* + bias: one value per output channel (column for matmul) */
  TASO_FUSE_RELU = 1 << 1, /* then max(0, .), after bias and sum */
  TASO_FUSE_SUM = 1 << 2,  /* + a tensor of the output's shape (a residual); the
                              runtime may pass the summand's buffer as out[0] */
  TASO_FUSE_CLIP = 1 << 3, /* then min(max(., p.bound[0]), p.bound[1]), after bias
                              and sum (ReLU6); never with RELU */
};

/* Whether a configuration ends with an activation (fused ReLU or clip). */
#define TASO_RT_ACTIVATION (TASO_FUSE_RELU | TASO_FUSE_CLIP)

#define TASO_RT_MAX_IN 5 /* operands, then bias, then summand */

/* One operator configuration: the unit a backend prepares, runs and times,
 * and the key of the cost database. */
typedef struct {
  int32_t kind;                     /* taso_op_kind_t */
  taso_params_t p;                  /* parameters; act folded into fuse for conv/matmul;
                                       a fused clip's bounds in p.bound */
  int nin;                          /* buffers in: arity, + 1 with BIAS, + 1 with SUM */
  int nout;                         /* results: 1, 2 for split/split_at */
  taso_tensor_t in[TASO_RT_MAX_IN]; /* operand types (trees ignored) */
  taso_tensor_t out[2];             /* result types */
  unsigned fuse;                    /* TASO_FUSE_* */
  int32_t layout;                   /* taso_rt_layout_t of 4-d activations; weights
                                       (conv2d operand 1) stay row-major [O, C/g, KH, KW] */
  unsigned cold;                    /* bit i: operand i is a model weight, which a run
                                       reads once from memory, not from cache (timed so) */
  int32_t in_place;                 /* 0: out[0] has a buffer of its own; k > 0: out[0]
                                       is operand k-1's buffer (timed so, keyed "inplace=");
                                       TASO_CALL_PLACED: a concat whose operands were
                                       written into its result (never timed: runs nothing) */
  int32_t cold_out;                 /* 1: the results' buffers come from memory, as in a
                                       run of a model larger than the cache, where a step
                                       writes a buffer last touched an inference ago
                                       (timed so, keyed "out=cold:"); 0: from cache */
} taso_rt_config_t;

typedef struct taso_rt_ctx taso_rt_ctx_t;       /* a backend's open device */
typedef struct taso_rt_kernel taso_rt_kernel_t; /* a prepared configuration */
typedef struct taso_rt_graph taso_rt_graph_t;   /* recorded runs, replayed as one launch */

typedef struct taso_backend {
  const char *name; /* "reference", "cpu", "gpu" */
  /* A one-line description of the device and library versions; an error
   * with the reason when the backend cannot run here (no GPU). */
  taso_err_t (*probe)(char *info, int len);
  taso_err_t (*open)(int threads, taso_rt_ctx_t **ctx); /* threads 0: the default */
  void (*close)(taso_rt_ctx_t *ctx);
  taso_err_t (*alloc)(taso_rt_ctx_t *ctx, int64_t count, void **buf); /* count floats */
  void (*release)(taso_rt_ctx_t *ctx, void *buf);
  taso_err_t (*upload)(taso_rt_ctx_t *ctx, void *dst, const float *src, int64_t count);
  taso_err_t (*download)(taso_rt_ctx_t *ctx, float *dst, const void *src, int64_t count);
  /* TASO_ERR_UNSUPPORTED (the reason in the message) when there is no call
   * for cfg; the runtime then runs the reference kernel for that node. */
  taso_err_t (*prepare)(taso_rt_ctx_t *ctx, const taso_rt_config_t *cfg, taso_rt_kernel_t **k);
  taso_err_t (*run)(taso_rt_ctx_t *ctx, taso_rt_kernel_t *k, void *const *in, void *const *out);
  taso_err_t (*sync)(taso_rt_ctx_t *ctx); /* waits for every run issued */
  void (*destroy)(taso_rt_ctx_t *ctx, taso_rt_kernel_t *k);
  /* The library's own name for what a prepared kernel runs (oneDNN's
   * implementation, cuDNN's algorithm), for the cost database's rows. */
  void (*describe)(const taso_rt_kernel_t *k, char *buf, int len);
  /* Devices of an accelerator backend (NULL for host ones): *count, the
   * devices this process sees; device's UUID ("GPU-...") when device <
   * *count. Which one open() takes is the backend's own setting. */
  taso_err_t (*device_uuid)(int device, int *count, char *uuid, int len);

  /* ---- optional hooks of an accelerator; NULL on host backends --------- */
  /* Lets convolutions and matmuls use TF32 tensor cores (FP32 exactness
   * traded for speed, as PyTorch does by default); off after open. Kernels
   * prepared afterwards follow the setting; prepared ones keep theirs. */
  taso_err_t (*set_tf32)(taso_rt_ctx_t *ctx, bool on);
  /* Capture: the runs, uploads and downloads issued between begin_capture
   * and end_capture are recorded into *graph, not done; replay enqueues
   * all of them again as one launch, on the same buffers (sync waits for
   * it). While capturing, upload and download return at once, so their
   * host side must be pinned_alloc memory that outlives the graph; sync
   * and anything that waits is an error. end_capture after a failure
   * inside the capture ends it, frees what it recorded and returns the
   * error. */
  taso_err_t (*begin_capture)(taso_rt_ctx_t *ctx);
  taso_err_t (*end_capture)(taso_rt_ctx_t *ctx, taso_rt_graph_t **graph);
  taso_err_t (*replay)(taso_rt_ctx_t *ctx, taso_rt_graph_t *graph);
  void (*graph_free)(taso_rt_ctx_t *ctx, taso_rt_graph_t *graph);
  /* Host memory the device copies from and to directly (page-locked). */
  taso_err_t (*pinned_alloc)(taso_rt_ctx_t *ctx, int64_t count, float **buf);
  void (*pinned_release)(taso_rt_ctx_t *ctx, float *buf);
  /* The device's own clock: mark_start and mark_stop record points in its
   * queue of work (inside a capture, into the graph, so that a replay
   * records them again); elapsed waits for the last mark_stop and gives
   * the device time since the mark_start before it, in milliseconds. */
  taso_err_t (*mark_start)(taso_rt_ctx_t *ctx);
  taso_err_t (*mark_stop)(taso_rt_ctx_t *ctx);
  taso_err_t (*elapsed)(taso_rt_ctx_t *ctx, double *ms);
  /* Queues, without waiting, what leaves the device's cache as a model's
   * run leaves it for a step with cold operands: everything evicted, then
   * the n buffers keep[i] (counts[i] floats: the operands just computed)
   * read back in. */
  taso_err_t (*flush_cache)(taso_rt_ctx_t *ctx, void *const *keep, const int64_t *counts, int n);
  /* A timing buffer of the context: slot's (0 .. TASO_RT_MAX_IN + 1) buffer
   * of at least count floats, filled with fixed values in [-1, 1] (queued).
   * The context owns it and hands it out again for the next configuration,
   * so that measuring allocates once per device, not per configuration. */
  taso_err_t (*scratch)(taso_rt_ctx_t *ctx, int slot, int64_t count, void **buf);
  /* A call chosen before: algorithm, the describe of a kernel of the
   * configuration whose key (taso_rt_config_key) is key, as a cost
   * database row keeps it. A later prepare of a configuration of the same
   * call (taso_rt_call_key) in FP32 math takes that call instead of
   * choosing one by timing, where it still runs here; so a run makes the
   * calls its costs were measured with, and its latency does not change
   * with a process's choice among close algorithms. false: not a call the
   * backend chooses (or cannot read), nothing kept. */
  bool (*reuse)(taso_rt_ctx_t *ctx, const char *key, const char *algorithm);
} taso_backend_t;

/* A backend by name: "reference", "cpu", and "gpu" where the CUDA toolkit
 * was found (its module is loaded on this first call; one that cannot load
 * gives a backend whose probe and open say why). NULL if absent. */
const taso_backend_t *taso_backend_find(const char *name);
/* Whether this build has backend name, without loading it (for messages). */
bool taso_backend_built(const char *name);

/* Timing statistics of repeated runs, in milliseconds. */
typedef struct {
  int runs;      /* timed runs */
  double median; /* the median run */
  double min, max;
  double spread; /* (max - min) / median */
} taso_rt_stats_t;

/* What the planner reads of a model: its graph, the graph's node types
 * (2 per node, taso_graph_infer) and which inputs are weights (may be
 * NULL: none). The optimizer costs the graphs of its search this way,
 * without a model around them. */
typedef struct {
  const taso_graph_t *graph;
  const taso_tensor_t *types;
  const bool *is_weight;
} taso_rt_typed_graph_t;

static inline taso_rt_typed_graph_t taso_rt_typed_of(const taso_model_t *m) {
  return (taso_rt_typed_graph_t){&m->graph, m->types, m->is_weight};
}

/* The configuration of one model node alone (no fusion): operand and result
 * types from the model's type table; a conv2d/matmul/bmm with act = RELU
 * becomes fuse RELU with act NONE, so that one configuration has one
 * spelling. An operand that is a weight (m->is_weight, or an input node
 * with a negative index: the optimizer's folded constants) is marked cold. */
taso_err_t taso_rt_config_of_node(const taso_rt_typed_graph_t *g, int node, taso_rt_config_t *cfg);

/* Whether buffer slot `slot` (inputs 0..nin-1, then outputs) of cfg holds
 * its values channels last (layout NHWC, 4-d, not a conv2d weight). This
 * and the two conversions below live in layout.c. */
bool taso_rt_channels_last(const taso_rt_config_t *cfg, int slot);

/* Host conversions of a 4-d tensor of logical shape t between row-major
 * (NCHW) and channels last (NHWC); dst and src must not overlap. */
void taso_rt_to_nhwc(const taso_tensor_t *t, const float *nchw, float *nhwc);
void taso_rt_to_nchw(const taso_tensor_t *t, const float *nhwc, float *nchw);

/* A short text of a configuration for listings: "conv2d 1x64x56x56 k3x3 s1x1 +bias+relu". */
int taso_rt_config_format(const taso_rt_config_t *cfg, char *buf, int len);

/* The bytes of every tensor of m (inputs, weights, each result in a
 * buffer of its own, as a plan keeps them): what one inference touches. */
int64_t taso_rt_model_bytes(const taso_model_t *m);
int64_t taso_rt_graph_bytes(const taso_rt_typed_graph_t *g); /* the same of a typed graph */

/* Whether m's weights stay in cache from one inference to the next on
 * backend be: a host backend, and every tensor of m fits in half of the
 * last-level cache that its CPUs can count on (at most 16 MiB per online
 * CPU: a virtual machine reports its host's whole cache). Then no operand
 * is timed cold (warm_weights):
 * SqueezeNet at 64x64 touches 6 MiB, and its steps timed alone and warm
 * sum to its end-to-end time, while cold they sum to half as much again.
 * Accelerators: always cold (their cache is not looked up). */
bool taso_rt_weights_stay_warm(const taso_model_t *m, const taso_backend_t *be);

/* The last-level cache cpu0 sees, in bytes (sysfs), or TASO_LLC_MIB MiB
 * when that is set: for a machine whose sysfs misreports it, and for
 * tests, whose cold timings then sweep 64 MiB, not 512; 0 when neither
 * says. */
int64_t taso_rt_llc_bytes(void);

/* The configuration's complete, canonical key: the operator in the
 * registry's text form with every parameter, operand and result shapes,
 * fused epilogue and layout, e.g.
 * "conv2d(s=2x2, a, b) in=1x64x56x56,64x64x3x3 out=1x64x28x28 fuse=bias+relu layout=nchw cold=bc"
 * (" cold=..." names the cold operands, and is left out when none is;
 * "out=cold:..." marks results timed cold, cold_out).
 * Equal configurations have equal keys on every machine: the cost
 * database and the optimizer's cost cache are keyed by it. Returns the
 * length it needs, like snprintf. */
int taso_rt_config_key(const taso_rt_config_t *cfg, char *buf, int len);

/* The key of the library call a configuration's key names, whatever its
 * buffers' state: key without its cache marks (" cold=", "out=cold:") and
 * its aliasing (" inplace="), which decide how a call is timed, not which
 * call it is. Returns what snprintf would (a longer key is cut). */
int taso_rt_call_key(const char *key, char *buf, int len);

/* Whether the backend times runs on its own clock (mark_start, mark_stop,
 * elapsed: a device's events), not the host's. */
bool taso_rt_device_clock(const taso_backend_t *be);

/* Whether the configuration is a view: a reshape of a tensor stored row
 * major (not channels last on either side) changes no value's place, and
 * a split where every axis before the split one has size 1 gives parts
 * that are consecutive blocks of its operand; a plan gives the results
 * their places in the operand's buffer and runs nothing for them
 * (taso_rt_step_info_t.view), and a graph's cost counts it as 0. */
bool taso_rt_config_is_view(const taso_rt_config_t *cfg);

/* Times one configuration on scratch buffers of seeded random values:
 * `warmup` untimed runs, then `runs` timed runs, each followed by sync.
 * On a backend with a device clock (mark_start) each run is timed by it,
 * and with capture it runs as it would in a replayed model: recorded once
 * into a graph between the two marks, then replayed; the cache of a
 * device is emptied by flush_cache and the buffers are its scratch, so
 * that nothing is uploaded per run or allocated per configuration.
 * With cold operands or results (cold, cold_out), every run starts with
 * the caches as a model's run leaves them (untimed): the cold operands,
 * and the results' buffers with cold_out, out of every cache (on an x86
 * host, each run's cold operands read from places of their own in turn
 * over twice the last-level cache share, as a model's weights come after
 * the others', and the results' lines flushed; on a device, flush_cache;
 * on another host, a sweep of twice the last-level cache share), then
 * the other operands written over with their own values, dirty in cache
 * as the steps before left them, by the threads that run the step. A
 * model's weights (80 MB
 * in NasRNN) stream from memory once per inference, while a configuration
 * repeated alone would find its 1 MB weight in cache: timed warm, NasRNN's
 * matmuls cost a third of what they cost in the model, and the cost model
 * prefers small matmuls that are slower end to end. */
taso_err_t taso_rt_time_config(const taso_backend_t *be, taso_rt_ctx_t *ctx,
                               const taso_rt_config_t *cfg, int warmup, int runs,
                               taso_rt_stats_t *stats);

/* Times one configuration until its timings settle: `warmup` untimed runs,
 * then timed runs (each followed by sync) until at least min_runs were
 * taken and the interquartile range of all of them is at most
 * target_spread times their median, or max_runs were taken. The IQR, not
 * max - min, decides, so that one preempted run does not keep a
 * configuration running to the cap; the caller still sees every sample.
 * samples (max_runs entries) receives each run's milliseconds in order;
 * *n the number taken; algorithm (if not NULL, algorithm_len bytes) what
 * the backend chose for it (its describe). */
taso_err_t taso_rt_time_config_samples(const taso_backend_t *be, taso_rt_ctx_t *ctx,
                                       const taso_rt_config_t *cfg, int warmup, int min_runs,
                                       int max_runs, double target_spread, double *samples, int *n,
                                       char *algorithm, int algorithm_len);

/* The runner's own cost per step, which timing configurations alone does
 * not see: dispatching a step on the host, the gap between kernels on a
 * device. A model of `steps` small steps in a chain (relu on 1 x 1024) is
 * planned; its step is timed alone (taso_rt_time_config: warmup, then
 * runs), then the whole model `runs` times after `warmup` runs
 * (taso_rt_time_model); samples[r] (runs entries) receives run r over
 * steps, less the step's median alone, in milliseconds. A cost model adds
 * it once per step (the cost database keeps it per device). */
taso_err_t taso_rt_time_dispatch(const taso_backend_t *be, taso_rt_ctx_t *ctx, int steps,
                                 int warmup, int runs, double *samples);

/* The interquartile range of n samples over their median (0 when n < 4);
 * ms is sorted in place. */
double taso_rt_iqr_spread(double *ms, int n);

/* ---- the model runner ----------------------------------------------------
 * A plan is a model compiled for one backend: one prepared kernel per step
 * (a node, or a chain of nodes fused into one configuration), a buffer per
 * tensor, the weights uploaded once. A step whose configuration the backend
 * does not support runs the reference kernel on host copies. */

typedef struct taso_rt_plan taso_rt_plan_t;

typedef struct {
  bool no_fusion; /* one step per node: no conv/matmul epilogue fusion */
  /* A call plan (src/select): the steps, their fusion, layouts and
   * in-place writes as listed, instead of the runtime's own fusion; every
   * operator node must be in exactly one step. NULL: the runtime plans. */
  const taso_call_t *calls;
  int ncalls;
  int32_t layout;     /* taso_rt_layout_t asked of conv2d steps */
  bool choose_layout; /* time each conv2d step in NCHW and BLOCKED; keep the faster */
  bool warm_weights;  /* no operand or result cold: the model stays in cache
                         (taso_rt_weights_stay_warm); else every step's results are
                         cold_out, but one written over an operand */
  bool no_capture;    /* run step by step even where the backend could replay a graph */
} taso_rt_options_t;

/* What a listing or profile says about one step. */
typedef struct {
  int node;                      /* the model node whose result the step computes */
  int first_node;                /* the head of a fused chain (== node unless fused) */
  int fused;                     /* nodes in the chain: 1 alone, 2-4 with epilogues */
  bool fallback;                 /* runs the reference kernel (the backend said unsupported) */
  bool in_place;                 /* writes over an operand's buffer (cfg.in_place says which,
                                    or, without a call plan, a fused residual's summand) */
  bool placed;                   /* a concat whose operands' producers wrote them into its
                                    result (cfg.in_place TASO_CALL_PLACED): it runs nothing */
  bool view;                     /* a reshape or split whose results are places in its
                                    operand's buffer (taso_rt_config_is_view): it runs
                                    nothing */
  const char *reason;            /* why it fell back; "" otherwise */
  taso_rt_config_t cfg;          /* its configuration */
  taso_ref_t in[TASO_RT_MAX_IN]; /* the tensors it reads, in configuration order */
} taso_rt_step_info_t;

/* Plans m (its weights made with taso_model_make_weights if they have no
 * values) on an open backend context; opt NULL: m's own call plan when it
 * has one (m->calls), else the defaults (fusion on, NCHW). The plan refers to m, be and ctx, which
 * must outlive it. */
taso_err_t taso_rt_plan(const taso_backend_t *be, taso_rt_ctx_t *ctx, taso_model_t *m,
                        const taso_rt_options_t *opt, taso_rt_plan_t **plan);
void taso_rt_plan_free(taso_rt_plan_t *plan);

/* The steps a plan of m would have (fusion as taso_rt_plan decides it),
 * without a backend, buffers or weights: what a cost model sums. m needs
 * only its graph and types. *steps is malloc'd (NULL when there are none). */
taso_err_t taso_rt_steps(const taso_model_t *m, const taso_rt_options_t *opt,
                         taso_rt_step_info_t **steps, int *nsteps);

/* Whether the caller knows the cost of a step (see below): it is shown
 * the step's node, first_node and fused, and of its configuration only
 * what fusion decided: cfg.kind, cfg.p, cfg.fuse and cfg.nin (the head's
 * operator and parameters as its configuration has them; epilogues
 * fused, the head's own ReLU included; operands),
 * cfg.in[k] for the operands fusion added (k from the head's arity to
 * nin); the rest of cfg is not set. g is the graph planned. */
typedef bool (*taso_rt_known_fn)(void *ctx, const taso_rt_typed_graph_t *g,
                                 const taso_rt_step_info_t *step);
/* Given each step of a partial plan; a non-OK return stops it. */
typedef taso_err_t (*taso_rt_step_fn)(void *ctx, const taso_rt_step_info_t *info);

/* The steps of taso_rt_steps, handed to each in order, for a cost model
 * that folds weights and reuses costs: nodes with absent[i] set (absent
 * NULL: none) are planned as if each result were an input of its type
 * (what writing a model folds into a weight: they compute from weights
 * alone, so no operand of a present node depends on them but through
 * such a result); a step for which known (may be NULL) is true comes
 * without its configuration: only node, first_node and fused are set,
 * and cfg.kind is 0. The steps, their order and the other
 * configurations are those of taso_rt_steps on the graph so folded. */
taso_err_t taso_rt_steps_partial(const taso_rt_typed_graph_t *g, const taso_rt_options_t *opt,
                                 const bool *absent, taso_rt_known_fn known, taso_rt_step_fn each,
                                 void *ctx);

/* The graph's consumer table (malloc'd; NULL without memory): first, for
 * each tensor (a taso_ref_t), how many operands and graph outputs read it;
 * then what taso_rt_chain_config needs. */
int *taso_rt_consumers(const taso_rt_typed_graph_t *g);

/* The configuration of node head (a conv2d or matmul) fused with the
 * next `extra` nodes of its epilogue chain (bias, residual sum, ReLU or clip, as
 * the runtime fuses them; operands taken as they are, none cold); *last,
 * the chain's last node, and in (TASO_RT_MAX_IN, may be NULL) the tensors
 * it reads. false when the chain has fewer than `extra` such nodes.
 * consumers: taso_rt_consumers of g. */
bool taso_rt_chain_config(const taso_rt_typed_graph_t *g, const int *consumers, int head, int extra,
                          taso_rt_config_t *cfg, int *last, taso_ref_t *in);

/* Whether the plan's runs replay one captured graph (the backend's
 * begin_capture): inputs copied into fixed pinned buffers, then one
 * launch of every upload, step and download. false with *why (not NULL)
 * saying why not: a step that runs the reference kernel on host copies,
 * a failed capture, options.no_capture; "" on a backend without capture. */
bool taso_rt_plan_replays(const taso_rt_plan_t *plan, const char **why);

int taso_rt_plan_steps(const taso_rt_plan_t *plan);
void taso_rt_plan_step(const taso_rt_plan_t *plan, int i, taso_rt_step_info_t *info);
/* What step i calls, as its backend describes its kernel ("cudnnConvolution-
 * Forward IMPLICIT_GEMM, fma math"); "" where the backend says nothing, for
 * a step that runs nothing and for a fallback. */
void taso_rt_plan_step_call(const taso_rt_plan_t *plan, int i, char *buf, int len);

/* One inference. inputs[i] holds the values of the model's i-th run-time
 * (non-weight) input, in input-table order; outputs[j] receives graph
 * output j (sized by its type). A plan that replays copies them through
 * its pinned buffers around one replay. */
taso_err_t taso_rt_run(taso_rt_plan_t *plan, const float *const *inputs, float *const *outputs);

/* Times whole runs (inputs as for taso_rt_run; outputs discarded), on
 * the host's clock: end to end is what the caller waits for. */
taso_err_t taso_rt_time_model(taso_rt_plan_t *plan, const float *const *inputs, int warmup,
                              int runs, taso_rt_stats_t *stats);

/* Times each step in isolation on the plan's buffers (after one full run
 * on inputs): step_ms[i] receives step i's statistics; on the device's
 * own clock where the backend has one. */
taso_err_t taso_rt_profile(taso_rt_plan_t *plan, const float *const *inputs, int warmup, int runs,
                           taso_rt_stats_t *step_stats);

/* Times each step inside whole runs (warm-up runs first): caches as a
 * real inference leaves them, so that end to end minus the sum of these is
 * the runner's own cost (uploads, downloads, dispatch). */
taso_err_t taso_rt_profile_in_run(taso_rt_plan_t *plan, const float *const *inputs, int warmup,
                                  int runs, taso_rt_stats_t *step_stats);

/* The largest absolute and relative (over the largest |b| of the output)
 * difference between two runs' outputs a and b of m. NaN or infinite
 * values make every difference vacuous (inf - inf is NaN, which a max
 * ignores), so they are an error that counts them, never agreement. */
taso_err_t taso_rt_output_difference(const taso_model_t *m, float *const *a, float *const *b,
                                     double *abs_diff, double *rel_diff);

/* Median, min, max and spread of n samples (sorted in place). */
void taso_rt_stats_of(double *ms, int n, taso_rt_stats_t *stats);

#endif
