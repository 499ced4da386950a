/*
 * The cpu backend: oneDNN 2.6 on this machine's cores (OpenMP threads).
 *
 * A kernel is a short list of oneDNN primitives ("steps") over memory
 * objects. Memory objects that stand for the caller's buffers are bound to
 * a buffer slot (inputs 0..nin-1, then outputs) and get their data handle
 * at each run; several may view one buffer (split reads two sub-memories
 * of its input). Internal memories (a blocked copy of a convolution's
 * activations) are the library's own allocations.
 *
 * Buffers are plain host memory: row-major, or channels last for the 4-d
 * activations of an NHWC configuration (every kernel takes NHWC, through
 * memory descriptors with those strides). A convolution configuration
 * with layout BLOCKED lets oneDNN choose its formats (format any) and
 * reorders around the call. BLOCKED and NHWC convolutions reorder their
 * weights into the library's format once per weight buffer and keep them,
 * since weights do not change between inferences (the runtime uploads
 * them once) and a reorder per run would cost as much as a small
 * convolution.
 */
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <dnnl.h>

#include "runtime.h"

#define MAX_BOUND 8 /* memories bound to caller buffers */
#define MAX_TMP 4   /* internal memories */
#define MAX_STEPS 6
#define MAX_ARGS 8

struct taso_rt_ctx {
  dnnl_engine_t engine; /* the CPU engine */
  dnnl_stream_t stream; /* in-order stream every kernel runs on */
};

/* When a step may be skipped at run time. */
enum { RUN_ALWAYS, RUN_UNLESS_SAME, RUN_ONCE_PER_BUFFER };

typedef struct {
  dnnl_primitive_t prim;
  int nargs;
  dnnl_exec_arg_t args[MAX_ARGS];
  int when;   /* RUN_* */
  int slot_a; /* RUN_UNLESS_SAME: skipped when slots a and b are one buffer;
                 RUN_ONCE_PER_BUFFER: skipped while slot a is the buffer it last ran on */
  int slot_b;
  void *last; /* RUN_ONCE_PER_BUFFER: the buffer of the last run */
} step_t;

struct taso_rt_kernel {
  taso_rt_config_t cfg;
  int nbound;
  dnnl_memory_t bound[MAX_BOUND]; /* views of caller buffers */
  int bound_slot[MAX_BOUND];      /* their slot: input i, or nin + output j */
  int ntmp;
  dnnl_memory_t tmp[MAX_TMP];
  int nsteps;
  step_t steps[MAX_STEPS];
  char impl[160]; /* the steps' oneDNN implementations, "+" between */
  bool small;     /* every operand and result at most SMALL_STEP_FLOATS (cpu_run) */
};

/* oneDNN's "unimplemented" means no implementation for this configuration
 * here: the runtime falls back; anything else is a failure. */
static taso_err_t dn_error(dnnl_status_t st, const char *what) {
  if (st == dnnl_unimplemented)
    return taso_error(TASO_ERR_UNSUPPORTED, "cpu: oneDNN has no implementation (%s)", what);
  return taso_error(TASO_ERR_LIB, "cpu: oneDNN status %d in %s", (int)st, what);
}

#define DN(call)                                                                                   \
  do {                                                                                             \
    dnnl_status_t dn_st_ = (call);                                                                 \
    if (dn_st_ != dnnl_success) return dn_error(dn_st_, #call);                                    \
  } while (0)

static taso_err_t cpu_probe(char *info, int len) {
  dnnl_engine_t engine;
  dnnl_status_t st = dnnl_engine_create(&engine, dnnl_cpu, 0);
  if (st != dnnl_success)
    return taso_error(TASO_ERR_LIB, "oneDNN: cannot create a CPU engine (status %d)", (int)st);
  dnnl_engine_destroy(engine);
  const dnnl_version_t *v = dnnl_version();
  snprintf(info, (size_t)len, "cpu: oneDNN %d.%d.%d, %d OpenMP threads", v->major, v->minor,
           v->patch, omp_get_max_threads());
  return TASO_OK;
}

static void cpu_close(taso_rt_ctx_t *ctx) {
  if (!ctx) return;
  if (ctx->stream) dnnl_stream_destroy(ctx->stream);
  if (ctx->engine) dnnl_engine_destroy(ctx->engine);
  free(ctx);
}

static taso_err_t cpu_open(int threads, taso_rt_ctx_t **out) {
  /* oneDNN's OpenMP build runs each primitive on omp_get_max_threads()
   * threads, so this is the thread count of every later run. */
  if (threads > 0) omp_set_num_threads(threads);
  taso_rt_ctx_t *ctx = calloc(1, sizeof *ctx);
  if (!ctx) return taso_error(TASO_ERR_NOMEM, "cpu context");
  dnnl_status_t st = dnnl_engine_create(&ctx->engine, dnnl_cpu, 0);
  if (st == dnnl_success)
    st = dnnl_stream_create(&ctx->stream, ctx->engine, dnnl_stream_default_flags);
  if (st != dnnl_success) {
    cpu_close(ctx);
    return dn_error(st, "engine and stream");
  }
  *out = ctx;
  return TASO_OK;
}

static taso_err_t cpu_alloc(taso_rt_ctx_t *ctx, int64_t count, void **buf) {
  (void)ctx;
  /* 64-byte alignment: whole cache lines, as oneDNN's own buffers */
  size_t bytes = ((sizeof(float) * (size_t)(count > 0 ? count : 1)) + 63) & ~(size_t)63;
  *buf = aligned_alloc(64, bytes);
  return *buf ? TASO_OK
              : taso_error_nomem((double)bytes, "a buffer of %lld floats", (long long)count);
}

static void cpu_release(taso_rt_ctx_t *ctx, void *buf) {
  (void)ctx;
  free(buf);
}

static taso_err_t cpu_upload(taso_rt_ctx_t *ctx, void *dst, const float *src, int64_t count) {
  (void)ctx;
  memcpy(dst, src, sizeof(float) * (size_t)count);
  return TASO_OK;
}

static taso_err_t cpu_download(taso_rt_ctx_t *ctx, float *dst, const void *src, int64_t count) {
  (void)ctx;
  memcpy(dst, src, sizeof(float) * (size_t)count);
  return TASO_OK;
}

/* ---- memory descriptors -------------------------------------------------- */

/* Row-major over dims; a scalar is one element of rank 1. */
static taso_err_t md_plain(int nd, const dnnl_dims_t dims, dnnl_memory_desc_t *md) {
  dnnl_dims_t strides, one = {1};
  if (nd == 0) return md_plain(1, one, md);
  int64_t s = 1;
  for (int i = nd - 1; i >= 0; i--) {
    strides[i] = s;
    s *= dims[i];
  }
  DN(dnnl_memory_desc_init_by_strides(md, nd, dims, dnnl_f32, strides));
  return TASO_OK;
}

static void dims_of(const taso_tensor_t *t, dnnl_dims_t dims) {
  for (int i = 0; i < t->rank; i++)
    dims[i] = t->dim[i];
}

/* Where each logical axis of t steps in its buffer: row-major, or
 * channels last for a 4-d activation of an NHWC configuration. */
static bool channels_last(int32_t layout, const taso_tensor_t *t) {
  return layout == TASO_RT_NHWC && t->rank == 4;
}

static void strides_of(int32_t layout, const taso_tensor_t *t, dnnl_dims_t strides) {
  int64_t s = 1;
  for (int i = t->rank - 1; i >= 0; i--) {
    strides[i] = s;
    s *= t->dim[i];
  }
  if (channels_last(layout, t)) {
    int64_t c = t->dim[1], w = t->dim[3], h = t->dim[2];
    strides[1] = 1, strides[3] = c, strides[2] = c * w, strides[0] = c * w * h;
  }
}

/* An activation's descriptor under the configuration's layout. */
static taso_err_t md_tensor(int32_t layout, const taso_tensor_t *t, dnnl_memory_desc_t *md) {
  dnnl_dims_t dims, strides;
  if (t->rank == 0) return md_plain(0, dims, md);
  dims_of(t, dims);
  strides_of(layout, t, strides);
  DN(dnnl_memory_desc_init_by_strides(md, t->rank, dims, dnnl_f32, strides));
  return TASO_OK;
}

/* t's dims aligned to the trailing axes of rank nd (ONNX broadcasting). */
static void dims_aligned(const taso_tensor_t *t, int nd, dnnl_dims_t dims) {
  for (int i = 0; i < nd; i++) {
    int at = i - (nd - t->rank);
    dims[i] = at >= 0 ? t->dim[at] : 1;
  }
}

/* ---- building kernels ---------------------------------------------------- */

/* A memory over caller buffer slot `slot`, its handle set at each run. */
static taso_err_t bind(taso_rt_ctx_t *ctx, taso_rt_kernel_t *k, const dnnl_memory_desc_t *md,
                       int slot, dnnl_memory_t *mem) {
  if (k->nbound == MAX_BOUND) return taso_error(TASO_ERR_LIMIT, "cpu: bound memories");
  DN(dnnl_memory_create(mem, md, ctx->engine, DNNL_MEMORY_NONE));
  k->bound[k->nbound] = *mem;
  k->bound_slot[k->nbound++] = slot;
  return TASO_OK;
}

static taso_err_t bind_tensor(taso_rt_ctx_t *ctx, taso_rt_kernel_t *k, const taso_tensor_t *t,
                              int slot, dnnl_memory_t *mem) {
  dnnl_memory_desc_t md;
  TASO_TRY(md_tensor(k->cfg.layout, t, &md));
  return bind(ctx, k, &md, slot, mem);
}

/* An internal memory the library allocates. */
static taso_err_t temporary(taso_rt_ctx_t *ctx, taso_rt_kernel_t *k, const dnnl_memory_desc_t *md,
                            dnnl_memory_t *mem) {
  if (k->ntmp == MAX_TMP) return taso_error(TASO_ERR_LIMIT, "cpu: internal memories");
  DN(dnnl_memory_create(mem, md, ctx->engine, DNNL_MEMORY_ALLOCATE));
  k->tmp[k->ntmp++] = *mem;
  return TASO_OK;
}

/* Adds pd's implementation name ("brg:avx2", "jit:uni") to the kernel's:
 * what oneDNN chose is what the cost database records with the timing. */
static void note_impl(taso_rt_kernel_t *k, const_dnnl_primitive_desc_t pd) {
  const char *name = NULL;
  if (dnnl_primitive_desc_query(pd, dnnl_query_impl_info_str, 0, &name) != dnnl_success || !name)
    name = "unknown";
  size_t at = strlen(k->impl);
  snprintf(k->impl + at, sizeof k->impl - at, "%s%s", at ? "+" : "", name);
}

/* Appends a step running the primitive of pd (which it destroys). */
static taso_err_t add_step(taso_rt_kernel_t *k, dnnl_primitive_desc_t pd, int nargs,
                           const dnnl_exec_arg_t *args, step_t **out) {
  if (k->nsteps == MAX_STEPS) {
    dnnl_primitive_desc_destroy(pd);
    return taso_error(TASO_ERR_LIMIT, "cpu: steps");
  }
  step_t *s = &k->steps[k->nsteps];
  memset(s, 0, sizeof *s);
  note_impl(k, pd);
  dnnl_status_t st = dnnl_primitive_create(&s->prim, pd);
  dnnl_primitive_desc_destroy(pd);
  if (st != dnnl_success) return dn_error(st, "dnnl_primitive_create");
  k->nsteps++;
  s->nargs = nargs;
  memcpy(s->args, args, sizeof *args * (size_t)nargs);
  if (out) *out = s;
  return TASO_OK;
}

static const dnnl_memory_desc_t *md_of(dnnl_memory_t mem) {
  const dnnl_memory_desc_t *md = NULL;
  dnnl_memory_get_memory_desc(mem, &md);
  return md;
}

static taso_err_t add_reorder(taso_rt_ctx_t *ctx, taso_rt_kernel_t *k, dnnl_memory_t src,
                              dnnl_memory_t dst, step_t **out) {
  dnnl_primitive_desc_t pd;
  DN(dnnl_reorder_primitive_desc_create(&pd, md_of(src), ctx->engine, md_of(dst), ctx->engine,
                                        NULL));
  dnnl_exec_arg_t args[] = {{DNNL_ARG_FROM, src}, {DNNL_ARG_TO, dst}};
  return add_step(k, pd, 2, args, out);
}

/* Creates the primitive descriptor of an operation descriptor. */
static taso_err_t make_pd(taso_rt_ctx_t *ctx, const void *desc, const_dnnl_primitive_attr_t attr,
                          dnnl_primitive_desc_t *pd) {
  DN(dnnl_primitive_desc_create(pd, desc, attr, ctx->engine, NULL));
  return TASO_OK;
}

/* Slots of a configuration's buffers. */
static int slot_out(const taso_rt_kernel_t *k, int j) {
  return k->cfg.nin + j;
}
static int slot_bias(const taso_rt_kernel_t *k) {
  return taso_ops[k->cfg.kind].arity;
}
static int slot_sum(const taso_rt_kernel_t *k) {
  return k->cfg.nin - 1;
}

/* The summand of a fused sum goes into the destination first: oneDNN's sum
 * post-op adds what the destination holds. Skipped when the caller gave
 * the summand's buffer as the output (an in-place residual). */
static taso_err_t add_sum_copy(taso_rt_ctx_t *ctx, taso_rt_kernel_t *k, dnnl_memory_t dst,
                               bool dst_is_output) {
  dnnl_memory_t summand;
  step_t *s;
  TASO_TRY(bind_tensor(ctx, k, &k->cfg.out[0], slot_sum(k), &summand));
  TASO_TRY(add_reorder(ctx, k, summand, dst, &s));
  if (dst_is_output) {
    s->when = RUN_UNLESS_SAME;
    s->slot_a = slot_sum(k);
    s->slot_b = slot_out(k, 0);
  }
  return TASO_OK;
}

/* The activation a configuration ends with: ReLU, clip (alpha and beta
 * its bounds) or none (dnnl_alg_kind_undef). */
static dnnl_alg_kind_t activation(const taso_rt_config_t *cfg, float *alpha, float *beta) {
  *alpha = *beta = 0.0f;
  if (cfg->fuse & TASO_FUSE_CLIP) {
    *alpha = cfg->p.bound[0];
    *beta = cfg->p.bound[1];
    return dnnl_eltwise_clip;
  }
  return (cfg->fuse & TASO_FUSE_RELU) || cfg->p.act == TASO_ACT_RELU ? dnnl_eltwise_relu
                                                                     : dnnl_alg_kind_undef;
}

static bool wants_activation(const taso_rt_config_t *cfg) {
  float alpha, beta;
  return activation(cfg, &alpha, &beta) != dnnl_alg_kind_undef;
}

/* Post-ops of the fuse flags: sum, then the activation unless the caller
 * applies it as a step of its own (act false; the bias is the
 * primitive's). */
static taso_err_t epilogue_attr(const taso_rt_config_t *cfg, bool act,
                                dnnl_primitive_attr_t *attr) {
  *attr = NULL;
  if (!act && !(cfg->fuse & TASO_FUSE_SUM)) return TASO_OK;
  dnnl_post_ops_t po;
  DN(dnnl_post_ops_create(&po));
  if (cfg->fuse & TASO_FUSE_SUM) dnnl_post_ops_append_sum(po, 1.0f);
  float alpha, beta;
  dnnl_alg_kind_t alg = activation(cfg, &alpha, &beta);
  if (act) dnnl_post_ops_append_eltwise(po, 1.0f, alg, alpha, beta);
  dnnl_status_t st = dnnl_primitive_attr_create(attr);
  if (st == dnnl_success) st = dnnl_primitive_attr_set_post_ops(*attr, po);
  dnnl_post_ops_destroy(po);
  if (st != dnnl_success) return dn_error(st, "post-ops");
  return TASO_OK;
}

static taso_err_t pd_with_epilogue(taso_rt_ctx_t *ctx, const taso_rt_config_t *cfg, bool act,
                                   const void *desc, dnnl_primitive_desc_t *pd) {
  dnnl_primitive_attr_t attr;
  TASO_TRY(epilogue_attr(cfg, act, &attr));
  taso_err_t err = make_pd(ctx, desc, attr, pd);
  if (attr) dnnl_primitive_attr_destroy(attr);
  return err;
}

/* ---- convolution ----------------------------------------------------------- */

/* Padding before and after on one spatial axis. oneDNN wants the padding
 * after that makes (i - k + before + after) / s + 1 the output size; the
 * registry's SAME and explicit rules may pad less or more, which only
 * moves rows no window reads. */
static void window_pads(const taso_params_t *p, int axis, int32_t i, int32_t k, int64_t *before,
                        int64_t *after) {
  int32_t b;
  int32_t o = taso_window_axis(p, axis, i, k, &b);
  int64_t a = (int64_t)(o - 1) * p->stride[axis] + k - i - b;
  *before = b;
  *after = a > 0 ? a : 0;
}

/* An internal memory in the format pd chose for `what`, with a reorder from
 * (or to) the caller's plain memory, unless the formats agree. */
static taso_err_t conv_side(taso_rt_ctx_t *ctx, taso_rt_kernel_t *k, dnnl_primitive_desc_t pd,
                            dnnl_query_t what, dnnl_memory_t plain, bool into,
                            dnnl_memory_t *inner) {
  const dnnl_memory_desc_t *md = dnnl_primitive_desc_query_md(pd, what, 0);
  if (dnnl_memory_desc_equal(md, md_of(plain))) {
    *inner = plain;
    return TASO_OK;
  }
  TASO_TRY(temporary(ctx, k, md, inner));
  if (!into) return TASO_OK; /* the caller adds the reorder out after the call */
  step_t *s;
  TASO_TRY(add_reorder(ctx, k, plain, *inner, &s));
  if (what == dnnl_query_weights_md) {
    s->when = RUN_ONCE_PER_BUFFER;
    s->slot_a = 1;
  }
  return TASO_OK;
}

static taso_err_t add_activation_in_place(taso_rt_ctx_t *ctx, taso_rt_kernel_t *k,
                                          dnnl_memory_t y) {
  float alpha, beta;
  dnnl_alg_kind_t alg = activation(&k->cfg, &alpha, &beta);
  dnnl_eltwise_desc_t d;
  DN(dnnl_eltwise_forward_desc_init(&d, dnnl_forward_inference, alg, md_of(y), alpha, beta));
  dnnl_primitive_desc_t pd;
  TASO_TRY(make_pd(ctx, &d, NULL, &pd));
  dnnl_exec_arg_t args[] = {{DNNL_ARG_SRC, y}, {DNNL_ARG_DST, y}};
  return add_step(k, pd, 2, args, NULL);
}

/* Activations: plain for NCHW and NHWC, the library's choice for BLOCKED;
 * weights: the library's choice unless NCHW (GEMM convolution reads them
 * as they are). */
static taso_err_t conv_desc(const taso_rt_config_t *cfg, dnnl_convolution_desc_t *d) {
  bool any = cfg->layout == TASO_RT_BLOCKED, any_weights = cfg->layout != TASO_RT_NCHW;
  const taso_tensor_t *x = &cfg->in[0], *w = &cfg->in[1], *o = &cfg->out[0];
  int64_t groups = x->dim[1] / w->dim[1];
  dnnl_dims_t src = {x->dim[0], x->dim[1], x->dim[2], x->dim[3]};
  dnnl_dims_t dst = {o->dim[0], o->dim[1], o->dim[2], o->dim[3]};
  dnnl_dims_t wei = {groups, w->dim[0] / groups, w->dim[1], w->dim[2], w->dim[3]};
  dnnl_dims_t bias = {w->dim[0]}, strides = {cfg->p.stride[0], cfg->p.stride[1]}, pl, pr;
  window_pads(&cfg->p, 0, x->dim[2], w->dim[2], &pl[0], &pr[0]);
  window_pads(&cfg->p, 1, x->dim[3], w->dim[3], &pl[1], &pr[1]);
  dnnl_memory_desc_t smd, wmd, bmd, dmd;
  /* ungrouped weights [O, I, KH, KW]; grouped [G, O/G, I/G, KH, KW], the
   * same bytes */
  const int64_t *wdims = groups > 1 ? wei : wei + 1;
  int wnd = groups > 1 ? 5 : 4;
  if (any) {
    DN(dnnl_memory_desc_init_by_tag(&smd, 4, src, dnnl_f32, dnnl_format_tag_any));
    DN(dnnl_memory_desc_init_by_tag(&dmd, 4, dst, dnnl_f32, dnnl_format_tag_any));
  } else {
    TASO_TRY(md_tensor(cfg->layout, x, &smd));
    TASO_TRY(md_tensor(cfg->layout, o, &dmd));
  }
  if (any_weights)
    DN(dnnl_memory_desc_init_by_tag(&wmd, wnd, wdims, dnnl_f32, dnnl_format_tag_any));
  else
    TASO_TRY(md_plain(wnd, wdims, &wmd));
  TASO_TRY(md_plain(1, bias, &bmd));
  DN(dnnl_convolution_forward_desc_init(d, dnnl_forward_inference, dnnl_convolution_direct, &smd,
                                        &wmd, cfg->fuse & TASO_FUSE_BIAS ? &bmd : NULL, &dmd,
                                        strides, pl, pr));
  return TASO_OK;
}

static taso_err_t build_conv(taso_rt_ctx_t *ctx, taso_rt_kernel_t *k) {
  const taso_rt_config_t *cfg = &k->cfg;
  dnnl_convolution_desc_t d;
  dnnl_primitive_desc_t pd;
  /* On plain NCHW oneDNN 2.6 convolves by im2col and GEMM, whose ReLU
   * post-op runs at a third of the speed of a separate in-place eltwise
   * (measured: 7x7/2 stem 4.2 ms against 1.7 ms on 2 cores); the blocked
   * and channels-last kernels fuse it (or a clip) for free. */
  bool separate_act = wants_activation(cfg) && cfg->layout == TASO_RT_NCHW;
  TASO_TRY(conv_desc(cfg, &d));
  TASO_TRY(pd_with_epilogue(ctx, cfg, wants_activation(cfg) && !separate_act, &d, &pd));
  dnnl_memory_t x, w, b = NULL, y, xi, wi, yi;
  dnnl_memory_desc_t wmd = *dnnl_primitive_desc_query_md(pd, dnnl_query_weights_md, 0);
  taso_err_t err = bind_tensor(ctx, k, &cfg->in[0], 0, &x);
  if (err == TASO_OK) {
    /* the caller's weights are plain with the primitive's (grouped) dims */
    dnnl_memory_desc_t plain;
    err = md_plain(wmd.ndims, wmd.dims, &plain);
    if (err == TASO_OK) err = bind(ctx, k, &plain, 1, &w);
  }
  if (err == TASO_OK && (cfg->fuse & TASO_FUSE_BIAS)) {
    /* one value per output channel, whatever shape the model gave it */
    dnnl_memory_desc_t plain;
    err = md_plain(1, wmd.ndims == 5 ? (int64_t[]){wmd.dims[0] * wmd.dims[1]} : wmd.dims, &plain);
    if (err == TASO_OK) err = bind(ctx, k, &plain, slot_bias(k), &b);
  }
  if (err == TASO_OK) err = bind_tensor(ctx, k, &cfg->out[0], slot_out(k, 0), &y);
  if (err == TASO_OK) err = conv_side(ctx, k, pd, dnnl_query_src_md, x, true, &xi);
  if (err == TASO_OK) err = conv_side(ctx, k, pd, dnnl_query_weights_md, w, true, &wi);
  if (err == TASO_OK) err = conv_side(ctx, k, pd, dnnl_query_dst_md, y, false, &yi);
  if (err == TASO_OK && (cfg->fuse & TASO_FUSE_SUM)) err = add_sum_copy(ctx, k, yi, yi == y);
  if (err != TASO_OK) {
    dnnl_primitive_desc_destroy(pd);
    return err;
  }
  dnnl_exec_arg_t args[] = {
      {DNNL_ARG_SRC, xi}, {DNNL_ARG_WEIGHTS, wi}, {DNNL_ARG_DST, yi}, {DNNL_ARG_BIAS, b}};
  TASO_TRY(add_step(k, pd, b ? 4 : 3, args, NULL));
  if (yi != y) TASO_TRY(add_reorder(ctx, k, yi, y, NULL));
  return separate_act ? add_activation_in_place(ctx, k, y) : TASO_OK;
}

/* ---- matmul and bmm -------------------------------------------------------- */

static taso_err_t build_matmul(taso_rt_ctx_t *ctx, taso_rt_kernel_t *k) {
  const taso_rt_config_t *cfg = &k->cfg;
  const taso_tensor_t *o = &cfg->out[0];
  dnnl_memory_desc_t amd, bmd, cmd, biasmd;
  dnnl_dims_t bias_dims = {1, 1, 1};
  bias_dims[o->rank - 1] = o->dim[o->rank - 1];
  TASO_TRY(md_tensor(TASO_RT_NCHW, &cfg->in[0], &amd));
  TASO_TRY(md_tensor(TASO_RT_NCHW, &cfg->in[1], &bmd));
  TASO_TRY(md_tensor(TASO_RT_NCHW, o, &cmd));
  TASO_TRY(md_plain(o->rank, bias_dims, &biasmd));
  bool has_bias = cfg->fuse & TASO_FUSE_BIAS;
  dnnl_matmul_desc_t d;
  DN(dnnl_matmul_desc_init(&d, &amd, &bmd, has_bias ? &biasmd : NULL, &cmd));
  dnnl_primitive_desc_t pd;
  TASO_TRY(pd_with_epilogue(ctx, cfg, wants_activation(cfg), &d, &pd));
  dnnl_memory_t a, b, c, bias = NULL;
  taso_err_t err = bind(ctx, k, &amd, 0, &a);
  if (err == TASO_OK) err = bind(ctx, k, &bmd, 1, &b);
  if (err == TASO_OK) err = bind(ctx, k, &cmd, slot_out(k, 0), &c);
  if (err == TASO_OK && has_bias) err = bind(ctx, k, &biasmd, slot_bias(k), &bias);
  if (err == TASO_OK && (cfg->fuse & TASO_FUSE_SUM)) err = add_sum_copy(ctx, k, c, true);
  if (err != TASO_OK) {
    dnnl_primitive_desc_destroy(pd);
    return err;
  }
  dnnl_exec_arg_t args[] = {
      {DNNL_ARG_SRC, a}, {DNNL_ARG_WEIGHTS, b}, {DNNL_ARG_DST, c}, {DNNL_ARG_BIAS, bias}};
  return add_step(k, pd, has_bias ? 4 : 3, args, NULL);
}

/* ---- one-primitive operators: src -> dst ----------------------------------- */

/* Binds in[0] and out[0] with their plain descriptors and adds one step. */
static taso_err_t unary_step(taso_rt_ctx_t *ctx, taso_rt_kernel_t *k, dnnl_primitive_desc_t pd,
                             const dnnl_memory_desc_t *src, const dnnl_memory_desc_t *dst) {
  dnnl_memory_t x, y;
  taso_err_t err = bind(ctx, k, src, 0, &x);
  if (err == TASO_OK) err = bind(ctx, k, dst, slot_out(k, 0), &y);
  if (err != TASO_OK) {
    dnnl_primitive_desc_destroy(pd);
    return err;
  }
  dnnl_exec_arg_t args[] = {{DNNL_ARG_SRC, x}, {DNNL_ARG_DST, y}};
  return add_step(k, pd, 2, args, NULL);
}

static taso_err_t build_pool(taso_rt_ctx_t *ctx, taso_rt_kernel_t *k) {
  const taso_rt_config_t *cfg = &k->cfg;
  const taso_params_t *p = &cfg->p;
  const taso_tensor_t *x = &cfg->in[0];
  dnnl_memory_desc_t smd, dmd;
  TASO_TRY(md_tensor(cfg->layout, x, &smd));
  TASO_TRY(md_tensor(cfg->layout, &cfg->out[0], &dmd));
  dnnl_dims_t strides = {p->stride[0], p->stride[1]}, kernel = {p->kernel[0], p->kernel[1]};
  dnnl_dims_t dilation = {0, 0}, pl, pr;
  window_pads(p, 0, x->dim[2], p->kernel[0], &pl[0], &pr[0]);
  window_pads(p, 1, x->dim[3], p->kernel[1], &pl[1], &pr[1]);
  dnnl_alg_kind_t alg = cfg->kind == TASO_OP_POOL_MAX ? dnnl_pooling_max
                        : p->exclude_pad              ? dnnl_pooling_avg_exclude_padding
                                                      : dnnl_pooling_avg_include_padding;
  dnnl_pooling_v2_desc_t d;
  DN(dnnl_pooling_v2_forward_desc_init(&d, dnnl_forward_inference, alg, &smd, &dmd, strides, kernel,
                                       dilation, pl, pr));
  dnnl_primitive_desc_t pd;
  TASO_TRY(make_pd(ctx, &d, NULL, &pd));
  return unary_step(ctx, k, pd, &smd, &dmd);
}

static taso_err_t build_eltwise(taso_rt_ctx_t *ctx, taso_rt_kernel_t *k) {
  const taso_rt_config_t *cfg = &k->cfg;
  dnnl_alg_kind_t alg = cfg->kind == TASO_OP_RELU      ? dnnl_eltwise_relu
                        : cfg->kind == TASO_OP_SIGMOID ? dnnl_eltwise_logistic
                        : cfg->kind == TASO_OP_TANH    ? dnnl_eltwise_tanh
                        : cfg->kind == TASO_OP_RSQRT   ? dnnl_eltwise_pow
                                                       : dnnl_eltwise_clip;
  float alpha = 0.0f, beta = 0.0f;
  if (cfg->kind == TASO_OP_CLIP) alpha = cfg->p.bound[0], beta = cfg->p.bound[1];
  if (cfg->kind == TASO_OP_RSQRT) alpha = 1.0f, beta = -0.5f; /* pow: alpha x^beta */
  dnnl_memory_desc_t md;
  TASO_TRY(md_tensor(cfg->layout, &cfg->in[0], &md));
  dnnl_eltwise_desc_t d;
  DN(dnnl_eltwise_forward_desc_init(&d, dnnl_forward_inference, alg, &md, alpha, beta));
  dnnl_primitive_desc_t pd;
  TASO_TRY(make_pd(ctx, &d, NULL, &pd));
  return unary_step(ctx, k, pd, &md, &md);
}

static taso_err_t build_softmax(taso_rt_ctx_t *ctx, taso_rt_kernel_t *k) {
  dnnl_memory_desc_t md;
  TASO_TRY(md_tensor(k->cfg.layout, &k->cfg.in[0], &md));
  dnnl_softmax_desc_t d;
  DN(dnnl_softmax_forward_desc_init(&d, dnnl_forward_inference, &md, k->cfg.p.axis));
  dnnl_primitive_desc_t pd;
  TASO_TRY(make_pd(ctx, &d, NULL, &pd));
  return unary_step(ctx, k, pd, &md, &md);
}

/* ---- binary operators ------------------------------------------------------ */

static bool dims_equal(int nd, const int64_t *a, const int64_t *b) {
  for (int i = 0; i < nd; i++)
    if (a[i] != b[i]) return false;
  return true;
}

/* An operand seen with the result's rank: a 4-d activation in the
 * configuration's layout; a lower-rank one (broadcast) row-major. */
static taso_err_t md_operand(const taso_rt_config_t *cfg, const taso_tensor_t *t, int nd,
                             const int64_t *aligned, dnnl_memory_desc_t *md) {
  if (t->rank == nd && nd == 4) return md_tensor(cfg->layout, t, md);
  return md_plain(nd, aligned, md);
}

/* ewadd, ewmul, add, mul, smul. oneDNN broadcasts only its second source,
 * so the operand of the result's shape goes first (both operations
 * commute); two operands that both broadcast are unsupported. */
static taso_err_t build_binary(taso_rt_ctx_t *ctx, taso_rt_kernel_t *k) {
  const taso_rt_config_t *cfg = &k->cfg;
  const taso_tensor_t *o = &cfg->out[0];
  int nd = o->rank > 0 ? o->rank : 1;
  dnnl_dims_t od = {1}, d0 = {1}, d1 = {1};
  dims_aligned(o, nd, od);
  dims_aligned(&cfg->in[0], nd, d0);
  dims_aligned(&cfg->in[1], nd, d1);
  int first = 0;
  if (!dims_equal(nd, d0, od)) {
    if (!dims_equal(nd, d1, od))
      return taso_error(TASO_ERR_UNSUPPORTED, "cpu: %s where both operands broadcast",
                        taso_ops[cfg->kind].name);
    first = 1;
  }
  dnnl_memory_desc_t md0, md1, dmd;
  TASO_TRY(md_operand(cfg, &cfg->in[first], nd, first ? d1 : d0, &md0));
  TASO_TRY(md_operand(cfg, &cfg->in[1 - first], nd, first ? d0 : d1, &md1));
  TASO_TRY(md_operand(cfg, o, nd, od, &dmd));
  bool add = cfg->kind == TASO_OP_EWADD || cfg->kind == TASO_OP_ADD;
  dnnl_binary_desc_t d;
  DN(dnnl_binary_desc_init(&d, add ? dnnl_binary_add : dnnl_binary_mul, &md0, &md1, &dmd));
  dnnl_primitive_desc_t pd;
  TASO_TRY(make_pd(ctx, &d, NULL, &pd));
  dnnl_memory_t a, b, y;
  taso_err_t err = bind(ctx, k, &md0, first, &a);
  if (err == TASO_OK) err = bind(ctx, k, &md1, 1 - first, &b);
  if (err == TASO_OK) err = bind(ctx, k, &dmd, slot_out(k, 0), &y);
  if (err != TASO_OK) {
    dnnl_primitive_desc_destroy(pd);
    return err;
  }
  dnnl_exec_arg_t args[] = {{DNNL_ARG_SRC_0, a}, {DNNL_ARG_SRC_1, b}, {DNNL_ARG_DST, y}};
  return add_step(k, pd, 3, args, NULL);
}

/* The per-channel operators, one oneDNN binary each with the vector
 * broadcast along its axis: chmul and chadd (x * v[i] or x + v[i] on axis
 * a), and inference batch normalization x * scale[c] + bias[c] on axis 1,
 * whose bias add is the multiply's binary post-op. */
static taso_err_t build_channel(taso_rt_ctx_t *ctx, taso_rt_kernel_t *k) {
  const taso_rt_config_t *cfg = &k->cfg;
  const taso_tensor_t *x = &cfg->in[0];
  bool bn = cfg->kind == TASO_OP_BATCHNORM;
  int axis = bn ? 1 : cfg->p.axis;
  dnnl_dims_t cd;
  for (int i = 0; i < x->rank; i++)
    cd[i] = i == axis ? x->dim[i] : 1;
  dnnl_memory_desc_t xmd, cmd;
  TASO_TRY(md_tensor(cfg->layout, x, &xmd));
  TASO_TRY(md_plain(x->rank, cd, &cmd));
  dnnl_binary_desc_t d;
  DN(dnnl_binary_desc_init(&d, cfg->kind == TASO_OP_CHADD ? dnnl_binary_add : dnnl_binary_mul, &xmd,
                           &cmd, &xmd));
  dnnl_primitive_attr_t attr = NULL;
  if (bn) {
    dnnl_post_ops_t po;
    DN(dnnl_post_ops_create(&po));
    dnnl_status_t st = dnnl_post_ops_append_binary(po, dnnl_binary_add, &cmd);
    if (st == dnnl_success) st = dnnl_primitive_attr_create(&attr);
    if (st == dnnl_success) st = dnnl_primitive_attr_set_post_ops(attr, po);
    dnnl_post_ops_destroy(po);
    if (st != dnnl_success) return dn_error(st, "batchnorm post-op");
  }
  dnnl_primitive_desc_t pd;
  taso_err_t err = make_pd(ctx, &d, attr, &pd);
  if (attr) dnnl_primitive_attr_destroy(attr);
  TASO_TRY(err);
  dnnl_memory_t xm, vec, bias = NULL, y;
  err = bind(ctx, k, &xmd, 0, &xm);
  if (err == TASO_OK) err = bind(ctx, k, &cmd, 1, &vec);
  if (err == TASO_OK && bn) err = bind(ctx, k, &cmd, 2, &bias);
  if (err == TASO_OK) err = bind(ctx, k, &xmd, slot_out(k, 0), &y);
  if (err != TASO_OK) {
    dnnl_primitive_desc_destroy(pd);
    return err;
  }
  dnnl_exec_arg_t args[] = {{DNNL_ARG_SRC_0, xm},
                            {DNNL_ARG_SRC_1, vec},
                            {DNNL_ARG_DST, y},
                            {DNNL_ARG_ATTR_MULTIPLE_POST_OP(0) | DNNL_ARG_SRC_1, bias}};
  return add_step(k, pd, bn ? 4 : 3, args, NULL);
}

/* ---- data movement --------------------------------------------------------- */

static taso_err_t build_concat(taso_rt_ctx_t *ctx, taso_rt_kernel_t *k) {
  const taso_rt_config_t *cfg = &k->cfg;
  dnnl_memory_desc_t src[2], dmd;
  TASO_TRY(md_tensor(cfg->layout, &cfg->in[0], &src[0]));
  TASO_TRY(md_tensor(cfg->layout, &cfg->in[1], &src[1]));
  TASO_TRY(md_tensor(cfg->layout, &cfg->out[0], &dmd));
  dnnl_primitive_desc_t pd;
  DN(dnnl_concat_primitive_desc_create(&pd, &dmd, 2, cfg->p.axis, src, NULL, ctx->engine));
  dnnl_memory_t a, b, y;
  taso_err_t err = bind(ctx, k, &src[0], 0, &a);
  if (err == TASO_OK) err = bind(ctx, k, &src[1], 1, &b);
  if (err == TASO_OK) err = bind(ctx, k, &dmd, slot_out(k, 0), &y);
  if (err != TASO_OK) {
    dnnl_primitive_desc_destroy(pd);
    return err;
  }
  dnnl_exec_arg_t args[] = {
      {DNNL_ARG_MULTIPLE_SRC, a}, {DNNL_ARG_MULTIPLE_SRC + 1, b}, {DNNL_ARG_DST, y}};
  return add_step(k, pd, 3, args, NULL);
}

/* split, split_at: each part is a reorder of a sub-memory of the input. */
static taso_err_t build_split(taso_rt_ctx_t *ctx, taso_rt_kernel_t *k) {
  const taso_rt_config_t *cfg = &k->cfg;
  const taso_tensor_t *x = &cfg->in[0];
  dnnl_memory_desc_t xmd;
  TASO_TRY(md_tensor(cfg->layout, x, &xmd));
  dnnl_dims_t offsets = {0, 0, 0, 0};
  for (int j = 0; j < 2; j++) {
    dnnl_dims_t dims;
    dims_of(&cfg->out[j], dims);
    dnnl_memory_desc_t part;
    DN(dnnl_memory_desc_init_submemory(&part, &xmd, dims, offsets));
    dnnl_memory_t from, to;
    TASO_TRY(bind(ctx, k, &part, 0, &from));
    TASO_TRY(bind_tensor(ctx, k, &cfg->out[j], slot_out(k, j), &to));
    TASO_TRY(add_reorder(ctx, k, from, to, NULL));
    offsets[cfg->p.axis] += cfg->out[j].dim[cfg->p.axis];
  }
  return TASO_OK;
}

/* permute, transpose: a reorder from the input seen through permuted
 * strides (output axis i walks input axis perm[i]). */
static taso_err_t build_permute(taso_rt_ctx_t *ctx, taso_rt_kernel_t *k) {
  const taso_rt_config_t *cfg = &k->cfg;
  const taso_tensor_t *x = &cfg->in[0], *o = &cfg->out[0];
  int32_t perm[TASO_MAX_RANK] = {1, 0, 2, 3};
  if (cfg->kind == TASO_OP_PERMUTE) memcpy(perm, cfg->p.perm, sizeof perm);
  dnnl_dims_t in_stride, od, strides;
  strides_of(cfg->layout, x, in_stride);
  dims_of(o, od);
  for (int i = 0; i < o->rank; i++)
    strides[i] = in_stride[perm[i]];
  dnnl_memory_desc_t smd;
  DN(dnnl_memory_desc_init_by_strides(&smd, o->rank, od, dnnl_f32, strides));
  dnnl_memory_t from, to;
  TASO_TRY(bind(ctx, k, &smd, 0, &from));
  TASO_TRY(bind_tensor(ctx, k, o, slot_out(k, 0), &to));
  return add_reorder(ctx, k, from, to, NULL);
}

/* reshape keeps the row-major order of the logical values: a copy, with a
 * reorder out of (or into) channels-last on each side that has it. */
static taso_err_t build_reshape(taso_rt_ctx_t *ctx, taso_rt_kernel_t *k) {
  const taso_rt_config_t *cfg = &k->cfg;
  const taso_tensor_t *x = &cfg->in[0], *o = &cfg->out[0];
  dnnl_memory_desc_t xmd, omd, x_plain, o_plain;
  TASO_TRY(md_tensor(cfg->layout, x, &xmd));
  TASO_TRY(md_tensor(cfg->layout, o, &omd));
  TASO_TRY(md_tensor(TASO_RT_NCHW, x, &x_plain));
  TASO_TRY(md_tensor(TASO_RT_NCHW, o, &o_plain));
  bool x_last = channels_last(cfg->layout, x), o_last = channels_last(cfg->layout, o);
  dnnl_memory_t from, to, mid, mid_as_out;
  TASO_TRY(bind(ctx, k, &xmd, 0, &from));
  if (!o_last) { /* the result's buffer, seen with the input's dims */
    TASO_TRY(bind(ctx, k, &x_plain, slot_out(k, 0), &to));
    return add_reorder(ctx, k, from, to, NULL);
  }
  TASO_TRY(bind(ctx, k, &omd, slot_out(k, 0), &to));
  if (!x_last) { /* the input's buffer, seen with the result's dims */
    TASO_TRY(bind(ctx, k, &o_plain, 0, &mid_as_out));
    return add_reorder(ctx, k, mid_as_out, to, NULL);
  }
  /* both channels-last: through a row-major copy seen both ways */
  void *handle = NULL;
  TASO_TRY(temporary(ctx, k, &x_plain, &mid));
  DN(dnnl_memory_get_data_handle(mid, &handle));
  if (k->ntmp == MAX_TMP) return taso_error(TASO_ERR_LIMIT, "cpu: internal memories");
  DN(dnnl_memory_create(&mid_as_out, &o_plain, ctx->engine, handle));
  k->tmp[k->ntmp++] = mid_as_out;
  TASO_TRY(add_reorder(ctx, k, from, mid, NULL));
  return add_reorder(ctx, k, mid_as_out, to, NULL);
}

/* ---- the backend's entry points ------------------------------------------- */

static taso_err_t build(taso_rt_ctx_t *ctx, taso_rt_kernel_t *k) {
  const taso_rt_config_t *cfg = &k->cfg;
  bool epilogue_kind =
      cfg->kind == TASO_OP_CONV2D || cfg->kind == TASO_OP_MATMUL || cfg->kind == TASO_OP_BMM;
  if (cfg->fuse && !epilogue_kind)
    return taso_error(TASO_ERR_UNSUPPORTED, "cpu: fused epilogue on %s", taso_ops[cfg->kind].name);
  switch ((taso_op_kind_t)cfg->kind) {
  case TASO_OP_CONV2D:
    return build_conv(ctx, k);
  case TASO_OP_MATMUL:
  case TASO_OP_BMM:
    return build_matmul(ctx, k);
  case TASO_OP_POOL_MAX:
  case TASO_OP_POOL_AVG:
    return build_pool(ctx, k);
  case TASO_OP_RELU:
  case TASO_OP_SIGMOID:
  case TASO_OP_TANH:
  case TASO_OP_CLIP:
  case TASO_OP_RSQRT:
    return build_eltwise(ctx, k);
  case TASO_OP_SOFTMAX:
    return build_softmax(ctx, k);
  case TASO_OP_EWADD:
  case TASO_OP_EWMUL:
  case TASO_OP_ADD:
  case TASO_OP_MUL:
  case TASO_OP_SMUL:
    return build_binary(ctx, k);
  case TASO_OP_BATCHNORM:
  case TASO_OP_CHMUL:
  case TASO_OP_CHADD:
    return build_channel(ctx, k);
  case TASO_OP_CONCAT:
    return build_concat(ctx, k);
  case TASO_OP_SPLIT:
  case TASO_OP_SPLIT_AT:
    return build_split(ctx, k);
  case TASO_OP_TRANSPOSE:
  case TASO_OP_PERMUTE:
    return build_permute(ctx, k);
  case TASO_OP_RESHAPE:
    return build_reshape(ctx, k);
  default:
    return taso_error(TASO_ERR_UNSUPPORTED, "cpu: no oneDNN call for %s",
                      cfg->kind > TASO_OP_INPUT && cfg->kind < TASO_OP_COUNT
                          ? taso_ops[cfg->kind].name
                          : "an unknown operator");
  }
}

static void cpu_destroy(taso_rt_ctx_t *ctx, taso_rt_kernel_t *k) {
  (void)ctx;
  if (!k) return;
  for (int i = 0; i < k->nsteps; i++)
    dnnl_primitive_destroy(k->steps[i].prim);
  for (int i = 0; i < k->nbound; i++)
    dnnl_memory_destroy(k->bound[i]);
  for (int i = 0; i < k->ntmp; i++)
    dnnl_memory_destroy(k->tmp[i]);
  free(k);
}

/* A step whose operands and results all hold at most this many floats
 * runs on one thread: its parallel region costs more than the little
 * work it shares (a 1x512 sigmoid: 4.4 us on two threads of this VM,
 * 0.6 us on one; NasRNN end to end 4 to 8% faster on two). Measured
 * configurations run through here too, so their costs say the same. */
enum { SMALL_STEP_FLOATS = 16384 };

static taso_err_t cpu_prepare(taso_rt_ctx_t *ctx, const taso_rt_config_t *cfg,
                              taso_rt_kernel_t **out) {
  taso_rt_kernel_t *k = calloc(1, sizeof *k);
  if (!k) return taso_error(TASO_ERR_NOMEM, "cpu kernel");
  k->cfg = *cfg;
  k->small = true;
  for (int i = 0; i < cfg->nin; i++)
    k->small = k->small && taso_tensor_size(&cfg->in[i]) <= SMALL_STEP_FLOATS;
  for (int j = 0; j < cfg->nout; j++)
    k->small = k->small && taso_tensor_size(&cfg->out[j]) <= SMALL_STEP_FLOATS;
  taso_err_t err = build(ctx, k);
  if (err != TASO_OK) {
    cpu_destroy(ctx, k);
    return err;
  }
  *out = k;
  return TASO_OK;
}

static void cpu_describe(const taso_rt_kernel_t *k, char *buf, int len) {
  snprintf(buf, (size_t)len, "%s", k->nsteps ? k->impl : "none (no oneDNN call)");
}

static bool skip_step(step_t *s, void *const *slots) {
  if (s->when == RUN_UNLESS_SAME) return slots[s->slot_a] == slots[s->slot_b];
  if (s->when == RUN_ONCE_PER_BUFFER) {
    if (s->last == slots[s->slot_a]) return true;
    s->last = slots[s->slot_a];
  }
  return false;
}

static taso_err_t cpu_run(taso_rt_ctx_t *ctx, taso_rt_kernel_t *k, void *const *in,
                          void *const *out) {
  void *slots[TASO_RT_MAX_IN + 2];
  for (int i = 0; i < k->cfg.nin; i++)
    slots[i] = in[i];
  for (int j = 0; j < k->cfg.nout; j++)
    slots[k->cfg.nin + j] = out[j];
  for (int i = 0; i < k->nbound; i++)
    DN(dnnl_memory_set_data_handle_v2(k->bound[i], slots[k->bound_slot[i]], ctx->stream));
  int threads = omp_get_max_threads();
  bool alone = k->small && threads > 1;
  if (alone) omp_set_num_threads(1);
  taso_err_t err = TASO_OK;
  for (int i = 0; i < k->nsteps && err == TASO_OK; i++) {
    step_t *s = &k->steps[i];
    if (skip_step(s, slots)) continue;
    dnnl_status_t st = dnnl_primitive_execute(s->prim, ctx->stream, s->nargs, s->args);
    if (st != dnnl_success) err = dn_error(st, "dnnl_primitive_execute");
  }
  if (alone) omp_set_num_threads(threads);
  return err;
}

static taso_err_t cpu_sync(taso_rt_ctx_t *ctx) {
  DN(dnnl_stream_wait(ctx->stream));
  return TASO_OK;
}

const taso_backend_t taso_backend_cpu = {
    .name = "cpu",
    .probe = cpu_probe,
    .open = cpu_open,
    .close = cpu_close,
    .alloc = cpu_alloc,
    .release = cpu_release,
    .upload = cpu_upload,
    .download = cpu_download,
    .prepare = cpu_prepare,
    .run = cpu_run,
    .sync = cpu_sync,
    .destroy = cpu_destroy,
    .describe = cpu_describe,
};
