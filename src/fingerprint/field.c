#include "field.h"

taso_fp_t taso_fp_inverse(taso_fp_t a) {
  /* Fermat: a^(p-2). */
  taso_fp_t result = 1, base = a;
  for (uint64_t e = TASO_P61 - 2; e; e >>= 1) {
    if (e & 1) result = taso_fp_mul(result, base);
    base = taso_fp_mul(base, base);
  }
  return result;
}

taso_fp_t taso_fp_frac(int64_t p, int64_t q) {
  return taso_fp_mul(taso_fp_from_int(p), taso_fp_inverse(taso_fp_from_int(q)));
}

/* Degree-2 models keep fingerprint polynomials low-degree (few collisions)
 * while no linear combination of inputs can equal them. relu(0) = 0 holds. */
taso_fp_t taso_fp_relu(taso_fp_t a) {
  return taso_fp_add(taso_fp_mul(a, a), taso_fp_mul(a, 3));
}

taso_fp_t taso_fp_max(taso_fp_t a, taso_fp_t b) {
  return taso_fp_add(taso_fp_mul(a, b), taso_fp_mul(taso_fp_add(a, b), 5));
}
