/*
 * Arithmetic in the prime field GF(2^61 - 1), the fingerprints' number type.
 *
 * Exact: a sum or product never wraps a machine integer, so two graphs with
 * different polynomial outputs collide only with probability ~ degree / p on
 * random inputs. relu and max are not polynomials; they are modelled by fixed
 * nonlinear polynomials so that linear and nonlinear graphs are told apart.
 */
#ifndef TASO_FIELD_H
#define TASO_FIELD_H

#include <stdint.h>

#define TASO_P61 ((UINT64_C(1) << 61) - 1)

typedef uint64_t taso_fp_t; /* an element of GF(p), always < p */

static inline taso_fp_t taso_fp_reduce(uint64_t v) {
  v = (v & TASO_P61) + (v >> 61);
  return v >= TASO_P61 ? v - TASO_P61 : v;
}

static inline taso_fp_t taso_fp_add(taso_fp_t a, taso_fp_t b) {
  return taso_fp_reduce(a + b); /* a + b < 2^62: no wrap */
}

static inline taso_fp_t taso_fp_mul(taso_fp_t a, taso_fp_t b) {
  unsigned __int128 m = (unsigned __int128)a * b;
  uint64_t lo = (uint64_t)m & TASO_P61, hi = (uint64_t)(m >> 61);
  return taso_fp_reduce(lo + hi);
}

static inline taso_fp_t taso_fp_from_int(int64_t v) {
  return v >= 0 ? taso_fp_reduce((uint64_t)v) : TASO_P61 - taso_fp_reduce((uint64_t)(-v));
}

/* A 128-bit sum of products, for dot products that reduce once. */
static inline unsigned __int128 taso_fp_acc_fold(unsigned __int128 acc) {
  /* 2^61 = 1 (mod p): fold the high bits onto the low 61 */
  return (acc & TASO_P61) + (acc >> 61);
}

static inline unsigned __int128 taso_fp_acc_mac(unsigned __int128 acc, taso_fp_t a, taso_fp_t b) {
  acc += (unsigned __int128)a * b;
  return (acc >> 126) ? taso_fp_acc_fold(acc) : acc;
}

static inline taso_fp_t taso_fp_acc_get(unsigned __int128 acc) {
  acc = taso_fp_acc_fold(taso_fp_acc_fold(acc)); /* < 2^62 */
  return taso_fp_reduce((uint64_t)acc);
}

taso_fp_t taso_fp_inverse(taso_fp_t a); /* a != 0 */

/* p / q in the field. */
taso_fp_t taso_fp_frac(int64_t p, int64_t q);

/* The fixed nonlinear models of relu and max (max is symmetric). */
taso_fp_t taso_fp_relu(taso_fp_t a);
taso_fp_t taso_fp_max(taso_fp_t a, taso_fp_t b);

/* Models with random coefficients, one per input set:
 * relu(a) = r2 a^2 + r1 a, max(a, b) = m2 ab + m1 (a + b) + m3 (a - b)^2.
 * Constants take the same values in every input set, so a fixed model
 * could make two graphs over constants agree on every set (relu(1) = 4 =
 * 4 * 1); with its own coefficients, the re-check set tells them apart.
 * relu(0) = 0 holds. The m3 term keeps max(0, x) from being linear in x:
 * without it, pool_max over a constant with one nonzero per window (the
 * identity kernel const_iconv) commuted with smul by any scalar in every
 * set, and smul(pool_max(const_iconv), s0) => pool_max(smul(const_iconv,
 * s0)), false for s0 < 0, passed the exact re-check. A field has no sign,
 * so the true positive case goes too (ewadd(pool_max(const_iconv),
 * pool_max(const_iconv)) => pool_max(ewadd(const_iconv, const_iconv)),
 * which the axioms do not prove: taso-verify left it unknown). */
typedef struct {
  taso_fp_t r2, r1, m2, m1, m3;
} taso_fp_model_t;

static inline taso_fp_t taso_fp_relu_m(const taso_fp_model_t *m, taso_fp_t a) {
  return taso_fp_add(taso_fp_mul(m->r2, taso_fp_mul(a, a)), taso_fp_mul(m->r1, a));
}

static inline taso_fp_t taso_fp_max_m(const taso_fp_model_t *m, taso_fp_t a, taso_fp_t b) {
  taso_fp_t d = taso_fp_add(a, TASO_P61 - b); /* a - b */
  return taso_fp_add(
      taso_fp_add(taso_fp_mul(m->m2, taso_fp_mul(a, b)), taso_fp_mul(m->m1, taso_fp_add(a, b))),
      taso_fp_mul(m->m3, taso_fp_mul(d, d)));
}

#endif
