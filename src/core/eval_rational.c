/* Exact rationals: the reference oracle. Overflow is recorded, never wrapped. */
#include "eval.h"

#include <stddef.h>

__int128 taso_gcd128(__int128 a, __int128 b) {
  if (a < 0) a = -a;
  if (b < 0) b = -b;
  while (b) {
    __int128 t = a % b;
    a = b;
    b = t;
  }
  return a;
}

/* Reduces num/den and checks the result fits 64 bits. */
static taso_rat_t reduce(taso_rat_ctx_t *c, __int128 num, __int128 den) {
  if (den < 0) {
    num = -num;
    den = -den;
  }
  __int128 g = num == 0 ? den : taso_gcd128(num, den);
  num /= g;
  den /= g;
  if (num > INT64_MAX || num < -INT64_MAX || den > INT64_MAX) {
    if (c) c->overflow = true;
    return (taso_rat_t){0, 1};
  }
  return (taso_rat_t){(int64_t)num, (int64_t)den};
}

taso_rat_t taso_rat(int64_t num, int64_t den) {
  return reduce(NULL, num, den);
}

taso_rat_t taso_rat_add(taso_rat_ctx_t *c, taso_rat_t a, taso_rat_t b) {
  return reduce(c, (__int128)a.num * b.den + (__int128)b.num * a.den, (__int128)a.den * b.den);
}

taso_rat_t taso_rat_mul(taso_rat_ctx_t *c, taso_rat_t a, taso_rat_t b) {
  return reduce(c, (__int128)a.num * b.num, (__int128)a.den * b.den);
}

int taso_rat_cmp(taso_rat_t a, taso_rat_t b) {
  __int128 l = (__int128)a.num * b.den, r = (__int128)b.num * a.den;
  return (l > r) - (l < r);
}

static taso_rat_t rat_max(taso_rat_t a, taso_rat_t b) {
  return taso_rat_cmp(a, b) >= 0 ? a : b;
}

#define NUM_T taso_rat_t
#define NUM_CTX_T taso_rat_ctx_t *
#define NUM_SUFFIX rational_impl
#define NUM_ZERO(c) ((taso_rat_t){0, 1})
#define NUM_ONE(c) ((taso_rat_t){1, 1})
#define NUM_FRAC(c, p, q) taso_rat((p), (q))
#define NUM_ADD(c, a, b) taso_rat_add((c), (a), (b))
#define NUM_MUL(c, a, b) taso_rat_mul((c), (a), (b))
#define NUM_RELU(c, a) rat_max((a), NUM_ZERO(c))
#define NUM_MAX(c, a, b) rat_max((a), (b))
#include "eval_impl.h"

taso_err_t taso_eval_graph_rational(taso_rat_ctx_t *ctx, const taso_graph_t *g,
                                    const taso_tensor_t *types, taso_rat_t *const *inputs,
                                    taso_rat_t **values) {
  ctx->overflow = false;
  TASO_TRY(taso_eval_graph_rational_impl(ctx, g, types, inputs, values));
  if (ctx->overflow) return taso_error(TASO_ERR_OVERFLOW, "a rational value left the 64-bit range");
  return TASO_OK;
}
