/*
 * ONNX import, constant folding: the small computations on constants and
 * shapes that exporters leave in a graph (PyTorch's `x.size()` becomes
 * Shape, Gather, Unsqueeze, Concat feeding a Reshape; `c // groups` a Div)
 * are computed at import, so that the operators that read them (Reshape,
 * Slice, Expand) see constants. A node folds when it is one of the
 * operators below and every input it has is a small constant, or it is
 * Shape (whose input's type is known). Values are computed in double, exact
 * for the integers shapes hold.
 */
#define _POSIX_C_SOURCE 200809L
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "onnx_import_impl.h"

#define TRY TASO_TRY
#define MAX_RANK 8
#define MAX_VALUES 65536 /* larger constants are weights, not shapes */

typedef struct {
  int32_t type; /* ONNX element type of the result: INT64, INT32, FLOAT, DOUBLE, BOOL */
  int rank;
  int64_t dim[MAX_RANK];
  int64_t n;
  double *v;
} small_t;

static int is_int(int32_t type) {
  return type == ONNX__TENSOR_PROTO__DATA_TYPE__INT64 ||
         type == ONNX__TENSOR_PROTO__DATA_TYPE__INT32 ||
         type == ONNX__TENSOR_PROTO__DATA_TYPE__BOOL;
}

static int is_float(int32_t type) {
  return type == ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT ||
         type == ONNX__TENSOR_PROTO__DATA_TYPE__DOUBLE;
}

static taso_err_t small_new(small_t *s, int32_t type, int rank, const int64_t *dim) {
  s->type = type;
  s->rank = rank;
  s->n = 1;
  for (int i = 0; i < rank; i++) {
    s->dim[i] = dim[i];
    s->n *= dim[i];
  }
  if (s->n < 0 || s->n > MAX_VALUES)
    return im_unsupported("a constant of %lld values", (long long)s->n);
  s->v = calloc((size_t)(s->n ? s->n : 1), sizeof *s->v);
  return s->v ? TASO_OK : taso_error(TASO_ERR_NOMEM, "a folded constant");
}

/* A constant's values; UNSUPPORTED when it is large, seeded or of a type
 * folding does not do. */
static taso_err_t small_read(const Onnx__TensorProto *t, small_t *s) {
  s->v = NULL;
  if (t->n_dims > MAX_RANK) return im_unsupported("a constant of rank %zu", t->n_dims);
  if (taso_onnx_seeded(t)) return im_unsupported("'%s' is seeded", t->name ? t->name : "");
  int32_t type = t->data_type;
  if (!is_int(type) && !is_float(type))
    return im_unsupported("a %s constant", taso_onnx_type_name(type));
  TRY(small_new(s, type, (int)t->n_dims, t->dims));
  taso_err_t err = TASO_OK;
  if (is_int(type)) {
    int64_t *iv = malloc(sizeof *iv * (size_t)(s->n ? s->n : 1));
    err = iv ? taso_onnx_values_int(t, iv, s->n) : taso_error(TASO_ERR_NOMEM, "a constant");
    for (int64_t i = 0; err == TASO_OK && i < s->n; i++)
      s->v[i] = (double)iv[i];
    free(iv);
  } else {
    float *fv = malloc(sizeof *fv * (size_t)(s->n ? s->n : 1));
    err = fv ? taso_onnx_values_float(t, fv, s->n) : taso_error(TASO_ERR_NOMEM, "a constant");
    for (int64_t i = 0; err == TASO_OK && i < s->n; i++)
      s->v[i] = fv[i];
    free(fv);
  }
  if (err == TASO_ERR_FORMAT) err = im_unsupported("%s", taso_error_detail());
  if (err != TASO_OK) {
    free(s->v);
    s->v = NULL;
  }
  return err;
}

/* s as output k of n: a TensorProto of our own (one block: the struct, its
 * dims and its data), freed with the importer. s->v is freed. */
static taso_err_t small_set(importer_t *im, const Onnx__NodeProto *n, size_t k, small_t *s) {
  int ints = is_int(s->type);
  size_t bytes = sizeof(Onnx__TensorProto) + sizeof(int64_t) * MAX_RANK +
                 (ints ? sizeof(int64_t) : sizeof(float)) * (size_t)(s->n ? s->n : 1);
  Onnx__TensorProto *t = calloc(1, bytes);
  void *grown = realloc(im->owned, sizeof *im->owned * (size_t)(im->nowned + 1));
  if (!t || !grown) {
    free(t);
    free(s->v);
    if (grown) im->owned = grown;
    return taso_error(TASO_ERR_NOMEM, "a folded constant");
  }
  im->owned = grown;
  im->owned[im->nowned++] = t;
  onnx__tensor_proto__init(t);
  int64_t *dims = (int64_t *)(t + 1);
  t->name = n->output[k];
  t->has_data_type = 1;
  t->n_dims = (size_t)s->rank;
  t->dims = dims;
  memcpy(dims, s->dim, sizeof(int64_t) * (size_t)s->rank);
  if (ints) {
    t->data_type = ONNX__TENSOR_PROTO__DATA_TYPE__INT64;
    t->n_int64_data = (size_t)s->n;
    t->int64_data = dims + MAX_RANK;
    for (int64_t i = 0; i < s->n; i++)
      t->int64_data[i] = (int64_t)s->v[i];
  } else {
    t->data_type = ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT;
    t->n_float_data = (size_t)s->n;
    t->float_data = (float *)(dims + MAX_RANK);
    for (int64_t i = 0; i < s->n; i++)
      t->float_data[i] = (float)s->v[i];
  }
  free(s->v);
  s->v = NULL;
  return im_set_const(im, n, k, t);
}

/* The end of a fold: out as output 0, or err with out freed. */
static taso_err_t small_done(importer_t *im, const Onnx__NodeProto *n, taso_err_t err,
                             small_t *out) {
  if (err == TASO_OK) return small_set(im, n, 0, out);
  free(out->v);
  return err;
}

static taso_err_t input_small(importer_t *im, const Onnx__NodeProto *n, size_t i, small_t *s) {
  const Onnx__TensorProto *t = im_const(im, n, i);
  if (!t) return im_unsupported("input %zu not a constant", i);
  return small_read(t, s);
}

/* Row-major index of `at` (rank r) in a tensor of dims d broadcast to r. */
static int64_t broadcast_index(const small_t *s, int r, const int64_t *at) {
  int64_t idx = 0;
  for (int i = 0; i < s->rank; i++) {
    int64_t c = at[r - s->rank + i];
    idx = idx * s->dim[i] + (s->dim[i] == 1 ? 0 : c);
  }
  return idx;
}

/* The broadcast shape of a and b into out's rank and dims. */
static taso_err_t broadcast_shape(const small_t *const *in, int nin, int *rank, int64_t *dim) {
  *rank = 0;
  for (int k = 0; k < nin; k++)
    if (in[k]->rank > *rank) *rank = in[k]->rank;
  for (int i = 0; i < *rank; i++) {
    dim[i] = 1;
    for (int k = 0; k < nin; k++) {
      int j = i - (*rank - in[k]->rank);
      if (j < 0 || in[k]->dim[j] == 1) continue;
      if (dim[i] != 1 && dim[i] != in[k]->dim[j]) return im_unsupported("shapes do not broadcast");
      dim[i] = in[k]->dim[j];
    }
  }
  return TASO_OK;
}

static void next_index(int r, const int64_t *dim, int64_t *at) {
  for (int i = r - 1; i >= 0; i--) {
    if (++at[i] < dim[i]) return;
    at[i] = 0;
  }
}

enum { F_ADD, F_SUB, F_MUL, F_DIV, F_POW, F_MOD, F_EQUAL, F_WHERE };

static double apply(int f, int ints, const double *x) {
  switch (f) {
  case F_ADD:
    return x[0] + x[1];
  case F_SUB:
    return x[0] - x[1];
  case F_MUL:
    return x[0] * x[1];
  case F_DIV: /* integer division truncates, as ONNX's Div on integers */
    return ints ? (x[1] != 0 ? trunc(x[0] / x[1]) : 0) : x[0] / x[1];
  case F_POW:
    return pow(x[0], x[1]);
  case F_MOD: /* the sign of the divisor, as ONNX's integer Mod (fmod = 0) */
    return x[1] != 0 ? x[0] - x[1] * floor(x[0] / x[1]) : 0;
  case F_EQUAL:
    return x[0] == x[1];
  default:
    return x[0] != 0 ? x[1] : x[2];
  }
}

static taso_err_t fold_elementwise(importer_t *im, const Onnx__NodeProto *n, int f) {
  int nin = f == F_WHERE ? 3 : 2, rank;
  small_t in[3] = {{0}}, out = {0};
  const small_t *ptr[3] = {&in[0], &in[1], &in[2]};
  int64_t dim[MAX_RANK], at[MAX_RANK] = {0};
  taso_err_t err = TASO_OK;
  for (int k = 0; k < nin && err == TASO_OK; k++)
    err = input_small(im, n, (size_t)k, &in[k]);
  if (err == TASO_OK) err = broadcast_shape(ptr, nin, &rank, dim);
  int32_t type = f == F_EQUAL ? ONNX__TENSOR_PROTO__DATA_TYPE__BOOL : in[f == F_WHERE].type;
  if (err == TASO_OK) err = small_new(&out, type, rank, dim);
  for (int64_t i = 0; err == TASO_OK && i < out.n; i++) {
    double x[3];
    for (int k = 0; k < nin; k++)
      x[k] = in[k].v[broadcast_index(&in[k], rank, at)];
    out.v[i] = apply(f, is_int(in[f == F_WHERE].type), x);
    next_index(rank, dim, at);
  }
  for (int k = 0; k < nin; k++)
    free(in[k].v);
  return small_done(im, n, err, &out);
}

static taso_err_t fold_add(importer_t *im, const Onnx__NodeProto *n) {
  return fold_elementwise(im, n, F_ADD);
}
static taso_err_t fold_sub(importer_t *im, const Onnx__NodeProto *n) {
  return fold_elementwise(im, n, F_SUB);
}
static taso_err_t fold_mul(importer_t *im, const Onnx__NodeProto *n) {
  return fold_elementwise(im, n, F_MUL);
}
static taso_err_t fold_div(importer_t *im, const Onnx__NodeProto *n) {
  return fold_elementwise(im, n, F_DIV);
}
static taso_err_t fold_pow(importer_t *im, const Onnx__NodeProto *n) {
  return fold_elementwise(im, n, F_POW);
}
static taso_err_t fold_mod(importer_t *im, const Onnx__NodeProto *n) {
  if (taso_onnx_attr_int(n, "fmod", 0)) return im_unsupported("fmod");
  return fold_elementwise(im, n, F_MOD);
}
static taso_err_t fold_equal(importer_t *im, const Onnx__NodeProto *n) {
  return fold_elementwise(im, n, F_EQUAL);
}
static taso_err_t fold_where(importer_t *im, const Onnx__NodeProto *n) {
  return fold_elementwise(im, n, F_WHERE);
}

/* Shape: the input's type, which import knows (with the unit axes a rank-5
 * value carries in front). */
static taso_err_t fold_shape(importer_t *im, const Onnx__NodeProto *n) {
  value_t *v = im_has_input(n, 0) ? im_find(im, n->input[0]) : NULL;
  int64_t full[MAX_RANK];
  int rank = 0;
  if (v && v->kind == V_TENSOR) {
    const taso_tensor_t *t = im_type(im, v->ref);
    for (int i = 0; i < v->lead; i++)
      full[rank++] = 1;
    for (int i = 0; i < t->rank; i++)
      full[rank++] = t->dim[i];
  } else if (v && v->kind == V_CONST && v->t->n_dims <= MAX_RANK) {
    for (size_t i = 0; i < v->t->n_dims; i++)
      full[rank++] = v->t->dims[i];
  } else {
    return im_unsupported("input of no known shape");
  }
  int64_t start = taso_onnx_attr_int(n, "start", 0), end = taso_onnx_attr_int(n, "end", rank);
  if (start < 0) start += rank;
  if (end < 0) end += rank;
  start = start < 0 ? 0 : start > rank ? rank : start;
  end = end < start ? start : end > rank ? rank : end;
  small_t out = {0};
  int64_t len = end - start;
  TRY(small_new(&out, ONNX__TENSOR_PROTO__DATA_TYPE__INT64, 1, &len));
  for (int64_t i = 0; i < len; i++)
    out.v[i] = (double)full[start + i];
  return small_set(im, n, 0, &out);
}

/* The axes of Unsqueeze/Squeeze/ReduceX: the input (opset 13 on) or the
 * attribute; the count, or -1 when there are none. */
static taso_err_t axes_of(importer_t *im, const Onnx__NodeProto *n, int64_t *axes, int *count) {
  *count = taso_onnx_attr_ints(n, "axes", axes, MAX_RANK);
  if (*count >= 0 || !im_has_input(n, 1)) return TASO_OK;
  const Onnx__TensorProto *t = im_const(im, n, 1);
  if (!t) return im_unsupported("axes not a constant");
  return im_const_ints(t, axes, MAX_RANK, count);
}

/* The dims of Unsqueeze's result. */
taso_err_t im_unsqueeze_dims(importer_t *im, const Onnx__NodeProto *n, int rank, const int64_t *dim,
                             int *out_rank, int64_t *out) {
  int64_t axes[MAX_RANK];
  int na;
  TRY(axes_of(im, n, axes, &na));
  int r = rank + (na > 0 ? na : 0);
  if (na < 1 || r > MAX_RANK) return im_unsupported("axes missing or too many");
  char is_new[MAX_RANK] = {0};
  for (int i = 0; i < na; i++) {
    int64_t a = axes[i] < 0 ? axes[i] + r : axes[i];
    if (a < 0 || a >= r || is_new[a]) return im_unsupported("axis %lld", (long long)axes[i]);
    is_new[a] = 1;
  }
  for (int i = 0, j = 0; i < r; i++)
    out[i] = is_new[i] ? 1 : dim[j++];
  *out_rank = r;
  return TASO_OK;
}

/* The dims of Squeeze's result (no axes: every unit axis goes). */
taso_err_t im_squeeze_dims(importer_t *im, const Onnx__NodeProto *n, int rank, const int64_t *dim,
                           int *out_rank, int64_t *out) {
  int64_t axes[MAX_RANK];
  int na;
  TRY(axes_of(im, n, axes, &na));
  char gone[MAX_RANK] = {0};
  for (int i = 0; i < na; i++) {
    int64_t a = axes[i] < 0 ? axes[i] + rank : axes[i];
    if (a < 0 || a >= rank || dim[a] != 1) return im_unsupported("axis %lld", (long long)axes[i]);
    gone[a] = 1;
  }
  *out_rank = 0;
  for (int i = 0; i < rank; i++)
    if (!(na < 0 ? dim[i] == 1 : gone[i])) out[(*out_rank)++] = dim[i];
  return TASO_OK;
}

static taso_err_t fold_reshaped(importer_t *im, const Onnx__NodeProto *n, int squeeze) {
  small_t s = {0};
  TRY(input_small(im, n, 0, &s));
  int rank;
  int64_t dim[MAX_RANK];
  taso_err_t err = squeeze ? im_squeeze_dims(im, n, s.rank, s.dim, &rank, dim)
                           : im_unsqueeze_dims(im, n, s.rank, s.dim, &rank, dim);
  if (err != TASO_OK) {
    free(s.v);
    return err;
  }
  s.rank = rank;
  memcpy(s.dim, dim, sizeof dim);
  return small_set(im, n, 0, &s);
}

static taso_err_t fold_unsqueeze(importer_t *im, const Onnx__NodeProto *n) {
  return fold_reshaped(im, n, 0);
}
static taso_err_t fold_squeeze(importer_t *im, const Onnx__NodeProto *n) {
  return fold_reshaped(im, n, 1);
}

/* Copies the block of `in` where axis a runs over [from, from + len) into
 * out (whose axis a has len entries). */
static void copy_along(const small_t *in, int a, const int64_t *pick, int64_t len, small_t *out) {
  int64_t outer = 1, inner = 1;
  for (int i = 0; i < a; i++)
    outer *= in->dim[i];
  for (int i = a + 1; i < in->rank; i++)
    inner *= in->dim[i];
  for (int64_t o = 0; o < outer; o++)
    for (int64_t k = 0; k < len; k++)
      memcpy(out->v + (o * len + k) * inner, in->v + (o * in->dim[a] + pick[k]) * inner,
             sizeof(double) * (size_t)inner);
}

static taso_err_t fold_gather(importer_t *im, const Onnx__NodeProto *n) {
  small_t d = {0}, idx = {0}, out = {0};
  TRY(input_small(im, n, 0, &d));
  taso_err_t err = input_small(im, n, 1, &idx);
  int a = 0;
  if (err == TASO_OK && !im_axis(taso_onnx_attr_int(n, "axis", 0), d.rank, &a))
    err = im_unsupported("axis out of range");
  if (err == TASO_OK && d.rank + idx.rank - 1 > MAX_RANK) err = im_unsupported("rank too high");
  int64_t *pick = NULL, dim[MAX_RANK];
  int rank = 0;
  if (err == TASO_OK) {
    for (int i = 0; i < a; i++)
      dim[rank++] = d.dim[i];
    for (int i = 0; i < idx.rank; i++)
      dim[rank++] = idx.dim[i];
    for (int i = a + 1; i < d.rank; i++)
      dim[rank++] = d.dim[i];
    pick = malloc(sizeof *pick * (size_t)(idx.n ? idx.n : 1));
    if (!pick) err = taso_error(TASO_ERR_NOMEM, "Gather");
  }
  for (int64_t i = 0; err == TASO_OK && i < idx.n; i++) {
    int64_t k = (int64_t)idx.v[i];
    if (k < 0) k += d.dim[a];
    if (k < 0 || k >= d.dim[a])
      err = im_unsupported("index %lld out of range", (long long)k);
    else
      pick[i] = k;
  }
  if (err == TASO_OK) err = small_new(&out, d.type, rank, dim);
  if (err == TASO_OK) copy_along(&d, a, pick, idx.n, &out);
  free(pick);
  free(d.v);
  free(idx.v);
  return small_done(im, n, err, &out);
}

static taso_err_t fold_concat(importer_t *im, const Onnx__NodeProto *n) {
  small_t part = {0}, out = {0};
  int a = -1, rank = 0;
  int64_t dim[MAX_RANK], total = 0;
  /* the shape from the parts' dims (taso_onnx_foldable saw every one is a
   * small constant), then each part's values once */
  for (size_t k = 0; k < n->n_input; k++) {
    const Onnx__TensorProto *t = im_const(im, n, k);
    if (!t || t->n_dims > MAX_RANK) return im_unsupported("input %zu", k);
    if (a < 0) {
      rank = (int)t->n_dims;
      memcpy(dim, t->dims, sizeof(int64_t) * (size_t)rank);
      if (!im_axis(taso_onnx_attr_int(n, "axis", 0), rank, &a)) return im_unsupported("axis");
    } else if ((int)t->n_dims != rank) {
      return im_unsupported("parts of different ranks");
    }
    for (int i = 0; i < rank; i++)
      if (i != a && t->dims[i] != dim[i]) return im_unsupported("parts of different shapes");
    total += t->dims[a];
  }
  if (a < 0) return im_unsupported("no inputs");
  dim[a] = total;
  TRY(small_new(&out, im_const(im, n, 0)->data_type, rank, dim));
  int64_t outer = 1, inner = 1, at = 0;
  for (int i = 0; i < a; i++)
    outer *= dim[i];
  for (int i = a + 1; i < rank; i++)
    inner *= dim[i];
  for (size_t k = 0; k < n->n_input; k++) {
    taso_err_t err = input_small(im, n, k, &part);
    if (err != TASO_OK) return small_done(im, n, err, &out);
    for (int64_t o = 0; o < outer; o++)
      memcpy(out.v + (o * total + at) * inner, part.v + o * part.dim[a] * inner,
             sizeof(double) * (size_t)(part.dim[a] * inner));
    at += part.dim[a];
    free(part.v);
  }
  return small_set(im, n, 0, &out);
}

static taso_err_t fold_cast(importer_t *im, const Onnx__NodeProto *n) {
  small_t s = {0};
  int64_t to = taso_onnx_attr_int(n, "to", 0);
  if (!is_int((int32_t)to) && !is_float((int32_t)to))
    return im_unsupported("Cast to %s", taso_onnx_type_name((int32_t)to));
  TRY(input_small(im, n, 0, &s));
  for (int64_t i = 0; i < s.n; i++) {
    if (to == ONNX__TENSOR_PROTO__DATA_TYPE__BOOL)
      s.v[i] = s.v[i] != 0;
    else if (is_int((int32_t)to))
      s.v[i] = trunc(s.v[i]);
  }
  s.type = (int32_t)to;
  return small_set(im, n, 0, &s);
}

/* ONNX's Slice ranges on a tensor of the given dims: per axis, start and
 * end clamped as the operator defines them, and the step (axes not named:
 * the whole axis, step 1). */
taso_err_t im_slice_ranges(importer_t *im, const Onnx__NodeProto *n, int rank, const int64_t *dim,
                           int64_t *start, int64_t *end, int64_t *step) {
  int64_t st[MAX_RANK], en[MAX_RANK], ax[MAX_RANK], sp[MAX_RANK];
  int ns, ne, na = -1, np = -1;
  if (im->opset < 10) {
    ns = taso_onnx_attr_ints(n, "starts", st, MAX_RANK);
    ne = taso_onnx_attr_ints(n, "ends", en, MAX_RANK);
    na = taso_onnx_attr_ints(n, "axes", ax, MAX_RANK);
  } else {
    for (size_t i = 1; i < 5; i++)
      if (im_has_input(n, i) && !im_const(im, n, i))
        return im_unsupported("input %zu not a constant", i);
    TRY(im_const_ints(im_const(im, n, 1), st, MAX_RANK, &ns));
    TRY(im_const_ints(im_const(im, n, 2), en, MAX_RANK, &ne));
    if (im_has_input(n, 3)) TRY(im_const_ints(im_const(im, n, 3), ax, MAX_RANK, &na));
    if (im_has_input(n, 4)) TRY(im_const_ints(im_const(im, n, 4), sp, MAX_RANK, &np));
  }
  if (ns < 0 || ns != ne || (na >= 0 && na != ns) || (np >= 0 && np != ns))
    return im_unsupported("starts, ends, axes and steps of different lengths");
  for (int i = 0; i < rank; i++)
    start[i] = 0, end[i] = dim[i], step[i] = 1;
  for (int k = 0; k < ns; k++) {
    int a;
    if (!im_axis(na >= 0 ? ax[k] : k, rank, &a)) return im_unsupported("axis out of range");
    int64_t s = st[k], e = en[k], d = dim[a], p = np >= 0 ? sp[k] : 1;
    if (p == 0) return im_unsupported("step 0");
    if (s < 0) s += d;
    if (e < 0 && e > INT64_MIN / 2) e += d;
    if (p > 0) {
      s = s < 0 ? 0 : s > d ? d : s;
      e = e < 0 ? 0 : e > d ? d : e;
    } else {
      s = s < 0 ? 0 : s > d - 1 ? d - 1 : s;
      e = e < -1 ? -1 : e > d - 1 ? d - 1 : e;
    }
    start[a] = s, end[a] = e, step[a] = p;
  }
  return TASO_OK;
}

/* Slice of a constant: each sliced axis runs from start to end by step. */
static taso_err_t fold_slice(importer_t *im, const Onnx__NodeProto *n) {
  small_t d = {0}, out = {0};
  TRY(input_small(im, n, 0, &d));
  int64_t start[MAX_RANK], end[MAX_RANK], step[MAX_RANK];
  taso_err_t err = im_slice_ranges(im, n, d.rank, d.dim, start, end, step);
  int64_t dim[MAX_RANK];
  for (int i = 0; err == TASO_OK && i < d.rank; i++) {
    int64_t len = step[i] > 0 ? (end[i] - start[i] + step[i] - 1) / step[i]
                              : (start[i] - end[i] - step[i] - 1) / -step[i];
    dim[i] = len > 0 ? len : 0;
  }
  if (err == TASO_OK) err = small_new(&out, d.type, d.rank, dim);
  int64_t at[MAX_RANK] = {0};
  for (int64_t i = 0; err == TASO_OK && i < out.n; i++) {
    int64_t src = 0;
    for (int k = 0; k < d.rank; k++)
      src = src * d.dim[k] + start[k] + at[k] * step[k];
    out.v[i] = d.v[src];
    next_index(d.rank, dim, at);
  }
  free(d.v);
  return small_done(im, n, err, &out);
}

static taso_err_t fold_constant_of_shape(importer_t *im, const Onnx__NodeProto *n) {
  small_t shape = {0}, out = {0}, value = {0};
  TRY(input_small(im, n, 0, &shape));
  int64_t dim[MAX_RANK];
  taso_err_t err = shape.rank == 1 && shape.n <= MAX_RANK ? TASO_OK : im_unsupported("shape");
  for (int64_t i = 0; err == TASO_OK && i < shape.n; i++)
    dim[i] = (int64_t)shape.v[i];
  const Onnx__AttributeProto *a = taso_onnx_attr(n, "value");
  int32_t type = ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT;
  double fill = 0;
  if (err == TASO_OK && a && a->t) {
    err = small_read(a->t, &value);
    if (err == TASO_OK && value.n != 1) err = im_unsupported("value not one number");
    if (err == TASO_OK) type = value.type, fill = value.v[0];
  }
  if (err == TASO_OK) err = small_new(&out, type, (int)shape.n, dim);
  for (int64_t i = 0; err == TASO_OK && i < out.n; i++)
    out.v[i] = fill;
  free(shape.v);
  free(value.v);
  return small_done(im, n, err, &out);
}

static taso_err_t fold_range(importer_t *im, const Onnx__NodeProto *n) {
  small_t s[3] = {{0}}, out = {0};
  taso_err_t err = TASO_OK;
  for (int k = 0; k < 3 && err == TASO_OK; k++) {
    err = input_small(im, n, (size_t)k, &s[k]);
    if (err == TASO_OK && s[k].n != 1) err = im_unsupported("input %d not a scalar", k);
  }
  int64_t len = 0;
  if (err == TASO_OK) {
    double d = s[2].v[0];
    len = d == 0 ? -1 : (int64_t)ceil((s[1].v[0] - s[0].v[0]) / d);
    if (len < 0) len = d == 0 ? -1 : 0;
    if (len < 0) err = im_unsupported("delta 0");
  }
  if (err == TASO_OK) err = small_new(&out, s[0].type, 1, &len);
  for (int64_t i = 0; err == TASO_OK && i < len; i++)
    out.v[i] = s[0].v[0] + (double)i * s[2].v[0];
  for (int k = 0; k < 3; k++)
    free(s[k].v);
  return small_done(im, n, err, &out);
}

static taso_err_t fold_reshape(importer_t *im, const Onnx__NodeProto *n) {
  small_t d = {0}, shape = {0};
  TRY(input_small(im, n, 0, &d));
  taso_err_t err = input_small(im, n, 1, &shape);
  int64_t known = 1, infer = -1;
  if (err == TASO_OK && (shape.rank != 1 || shape.n > MAX_RANK)) err = im_unsupported("shape");
  for (int64_t i = 0; err == TASO_OK && i < shape.n; i++) {
    int64_t v = (int64_t)shape.v[i];
    if (v == 0 && i < d.rank) v = d.dim[i];
    if (v == -1)
      infer = i;
    else
      known *= v;
    d.dim[i] = v;
  }
  if (err == TASO_OK && infer >= 0) d.dim[infer] = known ? d.n / known : 0;
  if (err == TASO_OK) {
    d.rank = (int)shape.n;
    int64_t count = 1;
    for (int i = 0; i < d.rank; i++)
      count *= d.dim[i];
    if (count != d.n) err = im_unsupported("shape of another size");
  }
  free(shape.v);
  if (err != TASO_OK) {
    free(d.v);
    return err;
  }
  return small_set(im, n, 0, &d);
}

static taso_err_t fold_expand(importer_t *im, const Onnx__NodeProto *n) {
  small_t d = {0}, shape = {0}, out = {0};
  TRY(input_small(im, n, 0, &d));
  taso_err_t err = input_small(im, n, 1, &shape);
  small_t target = {.rank = (int)shape.n};
  for (int64_t i = 0; err == TASO_OK && i < shape.n && i < MAX_RANK; i++)
    target.dim[i] = (int64_t)shape.v[i];
  if (err == TASO_OK && (shape.rank != 1 || shape.n > MAX_RANK)) err = im_unsupported("shape");
  const small_t *ptr[2] = {&d, &target};
  int rank;
  int64_t dim[MAX_RANK], at[MAX_RANK] = {0};
  if (err == TASO_OK) err = broadcast_shape(ptr, 2, &rank, dim);
  if (err == TASO_OK) err = small_new(&out, d.type, rank, dim);
  for (int64_t i = 0; err == TASO_OK && i < out.n; i++) {
    out.v[i] = d.v[broadcast_index(&d, rank, at)];
    next_index(rank, dim, at);
  }
  free(d.v);
  free(shape.v);
  return small_done(im, n, err, &out);
}

/* Pad of a constant (constant mode): what import folds, for completeness
 * of the shape computations; real Pads meet tensors (op_pad). */
static taso_err_t fold_pad(importer_t *im, const Onnx__NodeProto *n) {
  small_t d = {0}, out = {0}, value = {0};
  char buf[16];
  if (strcmp(taso_onnx_attr_string(n, "mode", "constant", buf, sizeof buf), "constant"))
    return im_unsupported("mode %s", buf);
  TRY(input_small(im, n, 0, &d));
  int64_t pads[2 * MAX_RANK];
  int np = -1;
  taso_err_t err = TASO_OK;
  double fill = 0;
  if (im->opset < 11) {
    np = taso_onnx_attr_ints(n, "pads", pads, 2 * MAX_RANK);
    fill = taso_onnx_attr_float(n, "value", 0.0f);
  } else {
    err = im_const(im, n, 1) ? im_const_ints(im_const(im, n, 1), pads, 2 * MAX_RANK, &np)
                             : im_unsupported("pads missing");
    if (err == TASO_OK && im_has_input(n, 2)) err = input_small(im, n, 2, &value);
    if (err == TASO_OK && value.v) fill = value.n == 1 ? value.v[0] : 0;
  }
  if (err == TASO_OK && np != 2 * d.rank) err = im_unsupported("pads for another rank");
  int64_t dim[MAX_RANK], at[MAX_RANK] = {0};
  for (int i = 0; err == TASO_OK && i < d.rank; i++) {
    if (pads[i] < 0 || pads[i + d.rank] < 0) err = im_unsupported("negative padding");
    dim[i] = d.dim[i] + pads[i] + pads[i + d.rank];
  }
  if (err == TASO_OK) err = small_new(&out, d.type, d.rank, dim);
  for (int64_t i = 0; err == TASO_OK && i < out.n; i++) {
    int64_t src = 0, inside = 1;
    for (int k = 0; k < d.rank; k++) {
      int64_t c = at[k] - pads[k];
      inside &= c >= 0 && c < d.dim[k];
      src = src * d.dim[k] + (inside ? c : 0);
    }
    out.v[i] = inside ? d.v[src] : fill;
    next_index(d.rank, dim, at);
  }
  free(d.v);
  free(value.v);
  return small_done(im, n, err, &out);
}

static taso_err_t fold_transpose(importer_t *im, const Onnx__NodeProto *n) {
  small_t d = {0}, out = {0};
  TRY(input_small(im, n, 0, &d));
  int64_t perm[MAX_RANK], dim[MAX_RANK], at[MAX_RANK] = {0};
  int k = taso_onnx_attr_ints(n, "perm", perm, MAX_RANK);
  taso_err_t err = k < 0 || k == d.rank ? TASO_OK : im_unsupported("perm of another rank");
  for (int i = 0; err == TASO_OK && i < d.rank; i++) {
    if (k < 0) perm[i] = d.rank - 1 - i;
    if (perm[i] < 0 || perm[i] >= d.rank)
      err = im_unsupported("perm entry");
    else
      dim[i] = d.dim[perm[i]];
  }
  if (err == TASO_OK) err = small_new(&out, d.type, d.rank, dim);
  for (int64_t i = 0; err == TASO_OK && i < out.n; i++) {
    int64_t src = 0, c[MAX_RANK];
    for (int a = 0; a < d.rank; a++)
      c[perm[a]] = at[a];
    for (int a = 0; a < d.rank; a++)
      src = src * d.dim[a] + c[a];
    out.v[i] = d.v[src];
    next_index(d.rank, dim, at);
  }
  free(d.v);
  return small_done(im, n, err, &out);
}

/* ScatterND (no reduction): data with the slices at indices replaced. */
static taso_err_t fold_scatter_nd(importer_t *im, const Onnx__NodeProto *n) {
  small_t d = {0}, idx = {0}, upd = {0};
  char buf[16];
  if (strcmp(taso_onnx_attr_string(n, "reduction", "none", buf, sizeof buf), "none"))
    return im_unsupported("reduction %s", buf);
  TRY(input_small(im, n, 0, &d));
  taso_err_t err = input_small(im, n, 1, &idx);
  if (err == TASO_OK) err = input_small(im, n, 2, &upd);
  int64_t q = idx.rank ? idx.dim[idx.rank - 1] : 0, count = 1, slice = 1;
  if (err == TASO_OK && (idx.rank < 1 || q > d.rank)) err = im_unsupported("indices");
  for (int i = 0; err == TASO_OK && i + 1 < idx.rank; i++)
    count *= idx.dim[i];
  for (int i = (int)q; err == TASO_OK && i < d.rank; i++)
    slice *= d.dim[i];
  if (err == TASO_OK && upd.n != count * slice) err = im_unsupported("updates of the wrong size");
  for (int64_t u = 0; err == TASO_OK && u < count; u++) {
    int64_t at = 0;
    for (int a = 0; a < q && err == TASO_OK; a++) {
      int64_t c = (int64_t)idx.v[u * q + a];
      if (c < 0) c += d.dim[a];
      if (c < 0 || c >= d.dim[a]) err = im_unsupported("index out of range");
      at = at * d.dim[a] + c;
    }
    if (err == TASO_OK) memcpy(d.v + at * slice, upd.v + u * slice, sizeof(double) * (size_t)slice);
  }
  free(idx.v);
  free(upd.v);
  if (err != TASO_OK) {
    free(d.v);
    return err;
  }
  return small_set(im, n, 0, &d);
}

static taso_err_t fold_identity(importer_t *im, const Onnx__NodeProto *n) {
  return im_alias(im, n, 0, 0);
}

static const struct {
  const char *op;
  taso_err_t (*fn)(importer_t *im, const Onnx__NodeProto *n);
} folds[] = {
    {"Add", fold_add},
    {"Sub", fold_sub},
    {"Mul", fold_mul},
    {"Div", fold_div},
    {"Pow", fold_pow},
    {"Mod", fold_mod},
    {"Equal", fold_equal},
    {"Where", fold_where},
    {"Shape", fold_shape},
    {"Gather", fold_gather},
    {"Unsqueeze", fold_unsqueeze},
    {"Squeeze", fold_squeeze},
    {"Concat", fold_concat},
    {"Cast", fold_cast},
    {"Slice", fold_slice},
    {"ConstantOfShape", fold_constant_of_shape},
    {"Range", fold_range},
    {"Reshape", fold_reshape},
    {"Expand", fold_expand},
    {"Identity", fold_identity},
    {"Pad", fold_pad},
    {"Transpose", fold_transpose},
    {"ScatterND", fold_scatter_nd},
};

/* Whether input i is a constant folding can read. */
static int small_const(importer_t *im, const Onnx__NodeProto *n, size_t i) {
  const Onnx__TensorProto *t = im_const(im, n, i);
  return t && !taso_onnx_seeded(t) && taso_onnx_numel(t) >= 0 && taso_onnx_numel(t) <= MAX_VALUES &&
         (is_int(t->data_type) || is_float(t->data_type));
}

int taso_onnx_foldable(importer_t *im, const Onnx__NodeProto *n) {
  int k = -1;
  for (size_t i = 0; i < sizeof folds / sizeof *folds; i++)
    if (!strcmp(folds[i].op, n->op_type)) k = (int)i;
  if (k < 0) return 0;
  if (folds[k].fn == fold_shape) return 1;
  for (size_t i = 0; i < n->n_input; i++)
    if (im_has_input(n, i) && !small_const(im, n, i)) return 0;
  return n->n_input > 0;
}

taso_err_t taso_onnx_fold(importer_t *im, const Onnx__NodeProto *n) {
  for (size_t i = 0; i < sizeof folds / sizeof *folds; i++)
    if (!strcmp(folds[i].op, n->op_type)) return folds[i].fn(im, n);
  return im_unsupported("not an operator import folds");
}
