/* The double instantiation: numeric checks on random float inputs. */
#include <math.h>

#include "eval.h"

#define NUM_T double
#define NUM_CTX_T void *
#define NUM_SUFFIX double
#define NUM_ZERO(c) 0.0
#define NUM_ONE(c) 1.0
#define NUM_FRAC(c, p, q) ((double)(p) / (double)(q))
#define NUM_ADD(c, a, b) ((a) + (b))
#define NUM_MUL(c, a, b) ((a) * (b))
#define NUM_RELU(c, a) ((a) > 0.0 ? (a) : 0.0)
#define NUM_MAX(c, a, b) ((a) > (b) ? (a) : (b))
#define NUM_EXP(c, a) exp(a)
#define NUM_TANH(c, a) tanh(a)
#define NUM_ERF(c, a) erf(a)
#define NUM_RSQRT(c, a) (1.0 / sqrt(a))
#define NUM_DIV(c, a, b) ((a) / (b))
#define NUM_CLIP(c, a, lo, hi) ((a) < (lo) ? (double)(lo) : (a) > (hi) ? (double)(hi) : (a))
#include "eval_impl.h"

void taso_values_free(void **values, int n) {
  for (int i = 0; i < n; i++) {
    free(values[i]);
    values[i] = NULL;
  }
}
