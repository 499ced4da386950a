/* Canonical polynomials (see poly.h). */
#include "poly.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "eval.h"

#define BLOCK_BYTES (1 << 20)

typedef struct block {
  struct block *next;
  size_t used, size;
  _Alignas(16) unsigned char data[];
} block_t;

/* A growable term buffer: products are collected here, then normalized. */
typedef struct {
  taso_term_t *t;
  int32_t n, cap;
} buf_t;

struct taso_poly_ctx {
  block_t *first, *cur; /* arena: blocks are kept across resets */
  bool overflow;        /* a coefficient or degree left range */
  buf_t acc, mul;       /* scratch for the accumulator and for products */
  taso_atom_t *atoms;   /* atom k, in creation order */
  int32_t natoms, atom_cap;
  int32_t *slots; /* hash table of atom indices + 1; 0 is free */
  int32_t nslots; /* a power of two */
};

/* ---- arena ------------------------------------------------------------- */

static void *arena_alloc(taso_poly_ctx_t *c, size_t bytes) {
  bytes = (bytes + 15) & ~(size_t)15;
  for (;;) {
    block_t *b = c->cur;
    if (b && b->used + bytes <= b->size) {
      void *p = b->data + b->used;
      b->used += bytes;
      return p;
    }
    if (b && b->next) {
      c->cur = b->next;
      c->cur->used = 0;
      continue;
    }
    size_t size = bytes > BLOCK_BYTES ? bytes : BLOCK_BYTES;
    block_t *nb = malloc(sizeof *nb + size);
    if (!nb) taso_fatal(__FILE__, __LINE__, "taso", "no memory for polynomials");
    nb->next = NULL;
    nb->used = 0;
    nb->size = size;
    if (b)
      b->next = nb;
    else
      c->first = nb;
    c->cur = nb;
  }
}

taso_err_t taso_poly_ctx_new(taso_poly_ctx_t **out) {
  taso_poly_ctx_t *c = calloc(1, sizeof *c);
  if (!c) return taso_error(TASO_ERR_NOMEM, "no memory for a polynomial context");
  c->nslots = 1024;
  if (!(c->slots = calloc((size_t)c->nslots, sizeof *c->slots))) {
    free(c);
    return taso_error(TASO_ERR_NOMEM, "no memory for a polynomial context");
  }
  *out = c;
  return TASO_OK;
}

void taso_poly_ctx_free(taso_poly_ctx_t *c) {
  if (!c) return;
  for (block_t *b = c->first, *n; b; b = n) {
    n = b->next;
    free(b);
  }
  free(c->acc.t);
  free(c->mul.t);
  free(c->atoms);
  free(c->slots);
  free(c);
}

void taso_poly_reset(taso_poly_ctx_t *c) {
  c->cur = c->first;
  if (c->cur) c->cur->used = 0;
  c->overflow = false;
  if (c->natoms) memset(c->slots, 0, sizeof *c->slots * (size_t)c->nslots);
  c->natoms = 0;
}

bool taso_poly_overflowed(const taso_poly_ctx_t *c) {
  return c->overflow;
}

/* ---- rationals ----------------------------------------------------------- */

/* Reduces num/den into t; records overflow. */
static void set_coef(taso_poly_ctx_t *c, taso_term_t *t, __int128 num, __int128 den) {
  if (den < 0) {
    num = -num;
    den = -den;
  }
  if (den != 1 && num != 0) {
    __int128 g = taso_gcd128(num, den);
    num /= g;
    den /= g;
  }
  if (num == 0) den = 1;
  if (num > INT64_MAX || num < -INT64_MAX || den > INT64_MAX) {
    c->overflow = true;
    num = 0;
    den = 1;
  }
  t->num = (int64_t)num;
  t->den = (int64_t)den;
}

/* ---- terms --------------------------------------------------------------- */

static int mono_cmp(const taso_term_t *a, const taso_term_t *b) {
  for (int i = 0; i < TASO_POLY_DEGREE; i++)
    if (a->v[i] != b->v[i]) return a->v[i] < b->v[i] ? -1 : 1;
  return 0;
}

static int term_cmp(const void *x, const void *y) {
  return mono_cmp(x, y);
}

static void buf_push(buf_t *b, const taso_term_t *t) {
  if (b->n == b->cap) {
    int32_t cap = b->cap ? 2 * b->cap : 256;
    taso_term_t *grown = realloc(b->t, sizeof *grown * (size_t)cap);
    if (!grown) taso_fatal(__FILE__, __LINE__, "taso", "no memory for polynomials");
    b->t = grown;
    b->cap = cap;
  }
  b->t[b->n++] = *t;
}

/* The product of two monomials into out (coefficient untouched). */
static void mono_mul(taso_poly_ctx_t *c, const taso_term_t *a, const taso_term_t *b,
                     taso_term_t *out) {
  int i = 0, j = 0, k = 0;
  while (k < TASO_POLY_DEGREE) {
    uint32_t x = i < TASO_POLY_DEGREE ? a->v[i] : TASO_POLY_NONE;
    uint32_t y = j < TASO_POLY_DEGREE ? b->v[j] : TASO_POLY_NONE;
    if (x == TASO_POLY_NONE && y == TASO_POLY_NONE) break;
    if (x <= y) {
      out->v[k++] = x;
      i++;
    } else {
      out->v[k++] = y;
      j++;
    }
  }
  for (int r = k; r < TASO_POLY_DEGREE; r++)
    out->v[r] = TASO_POLY_NONE;
  /* Anything left over is degree beyond the slots. */
  if ((i < TASO_POLY_DEGREE && a->v[i] != TASO_POLY_NONE) ||
      (j < TASO_POLY_DEGREE && b->v[j] != TASO_POLY_NONE))
    c->overflow = true;
}

static void term_mul(taso_poly_ctx_t *c, const taso_term_t *a, const taso_term_t *b,
                     taso_term_t *out) {
  mono_mul(c, a, b, out);
  set_coef(c, out, (__int128)a->num * b->num, (__int128)a->den * b->den);
}

/* Sorts, merges equal monomials, drops zeros and copies into the arena. */
static taso_poly_t normalize(taso_poly_ctx_t *c, taso_term_t *t, int32_t n) {
  /* Insertion sort for the common short lists; qsort beyond. */
  if (n > 24) {
    qsort(t, (size_t)n, sizeof *t, term_cmp);
  } else {
    for (int32_t i = 1; i < n; i++) {
      taso_term_t x = t[i];
      int32_t j = i;
      while (j > 0 && mono_cmp(&t[j - 1], &x) > 0) {
        t[j] = t[j - 1];
        j--;
      }
      t[j] = x;
    }
  }
  int32_t m = 0;
  for (int32_t i = 0; i < n; i++) {
    if (m > 0 && mono_cmp(&t[m - 1], &t[i]) == 0) {
      taso_term_t *d = &t[m - 1];
      set_coef(c, d, (__int128)d->num * t[i].den + (__int128)t[i].num * d->den,
               (__int128)d->den * t[i].den);
    } else {
      if (m > 0 && t[m - 1].num == 0) m--;
      t[m++] = t[i];
    }
  }
  if (m > 0 && t[m - 1].num == 0) m--;
  taso_poly_t p = {NULL, m};
  if (m > 0) {
    p.t = arena_alloc(c, sizeof *p.t * (size_t)m);
    memcpy(p.t, t, sizeof *p.t * (size_t)m);
  }
  return p;
}

/* ---- polynomials ----------------------------------------------------------- */

taso_poly_t taso_poly_var(taso_poly_ctx_t *c, uint32_t v) {
  taso_poly_t p = {arena_alloc(c, sizeof(taso_term_t)), 1};
  p.t[0] = (taso_term_t){{v, TASO_POLY_NONE, TASO_POLY_NONE, TASO_POLY_NONE}, 1, 1};
  return p;
}

taso_poly_t taso_poly_const(taso_poly_ctx_t *c, int64_t num, int64_t den) {
  taso_term_t t = {{TASO_POLY_NONE, TASO_POLY_NONE, TASO_POLY_NONE, TASO_POLY_NONE}, 0, 1};
  set_coef(c, &t, num, den);
  if (t.num == 0) return (taso_poly_t){NULL, 0};
  taso_poly_t p = {arena_alloc(c, sizeof t), 1};
  p.t[0] = t;
  return p;
}

taso_poly_t taso_poly_add(taso_poly_ctx_t *c, taso_poly_t a, taso_poly_t b) {
  if (a.n == 0) return b;
  if (b.n == 0) return a;
  /* Both are sorted: a merge, exact in one pass. */
  taso_term_t *out = arena_alloc(c, sizeof *out * (size_t)(a.n + b.n));
  int32_t i = 0, j = 0, m = 0;
  while (i < a.n || j < b.n) {
    int r = i == a.n ? 1 : j == b.n ? -1 : mono_cmp(&a.t[i], &b.t[j]);
    if (r < 0) {
      out[m++] = a.t[i++];
    } else if (r > 0) {
      out[m++] = b.t[j++];
    } else {
      out[m] = a.t[i];
      set_coef(c, &out[m], (__int128)a.t[i].num * b.t[j].den + (__int128)b.t[j].num * a.t[i].den,
               (__int128)a.t[i].den * b.t[j].den);
      if (out[m].num != 0) m++;
      i++;
      j++;
    }
  }
  return (taso_poly_t){m ? out : NULL, m};
}

taso_poly_t taso_poly_mul(taso_poly_ctx_t *c, taso_poly_t a, taso_poly_t b) {
  if (a.n == 0 || b.n == 0) return (taso_poly_t){NULL, 0};
  c->mul.n = 0;
  for (int32_t i = 0; i < a.n; i++)
    for (int32_t j = 0; j < b.n; j++) {
      taso_term_t t;
      term_mul(c, &a.t[i], &b.t[j], &t);
      buf_push(&c->mul, &t);
    }
  return normalize(c, c->mul.t, c->mul.n);
}

/* The accumulator of eval_impl.h: sums of products collected unsorted and
 * normalized once. Reductions are never nested, so one buffer serves. */
static int taso_poly_acc_zero(taso_poly_ctx_t *c) {
  c->acc.n = 0;
  return 0;
}

static void taso_poly_acc_mac(taso_poly_ctx_t *c, taso_poly_t a, taso_poly_t b) {
  for (int32_t i = 0; i < a.n; i++)
    for (int32_t j = 0; j < b.n; j++) {
      taso_term_t t;
      term_mul(c, &a.t[i], &b.t[j], &t);
      buf_push(&c->acc, &t);
    }
}

static taso_poly_t taso_poly_acc_get(taso_poly_ctx_t *c) {
  return normalize(c, c->acc.t, c->acc.n);
}

bool taso_poly_equal(taso_poly_t a, taso_poly_t b) {
  if (a.n != b.n) return false;
  for (int32_t i = 0; i < a.n; i++)
    if (mono_cmp(&a.t[i], &b.t[i]) != 0 || a.t[i].num != b.t[i].num || a.t[i].den != b.t[i].den)
      return false;
  return true;
}

/* A total order on canonical polynomials (for max's argument order). */
static int poly_cmp(taso_poly_t a, taso_poly_t b) {
  if (a.n != b.n) return a.n < b.n ? -1 : 1;
  for (int32_t i = 0; i < a.n; i++) {
    int r = mono_cmp(&a.t[i], &b.t[i]);
    if (r) return r;
    if (a.t[i].num != b.t[i].num) return a.t[i].num < b.t[i].num ? -1 : 1;
    if (a.t[i].den != b.t[i].den) return a.t[i].den < b.t[i].den ? -1 : 1;
  }
  return 0;
}

bool taso_poly_has_atom(taso_poly_t a) {
  for (int32_t i = 0; i < a.n; i++)
    for (int k = 0; k < TASO_POLY_DEGREE; k++)
      if (a.t[i].v[k] != TASO_POLY_NONE && a.t[i].v[k] >= TASO_POLY_ATOM0) return true;
  return false;
}

/* The constant value of p, if it is one. */
static bool as_const(taso_poly_t p, int64_t *num, int64_t *den) {
  if (p.n == 0) {
    *num = 0;
    *den = 1;
    return true;
  }
  if (p.n == 1 && p.t[0].v[0] == TASO_POLY_NONE) {
    *num = p.t[0].num;
    *den = p.t[0].den;
    return true;
  }
  return false;
}

static uint64_t poly_hash(uint64_t h, taso_poly_t p) {
  for (int32_t i = 0; i < p.n; i++) {
    const taso_term_t *t = &p.t[i];
    uint64_t w[4] = {(uint64_t)t->v[0] << 32 | t->v[1], (uint64_t)t->v[2] << 32 | t->v[3],
                     (uint64_t)t->num, (uint64_t)t->den};
    for (int k = 0; k < 4; k++) {
      h ^= w[k];
      h *= 0x100000001b3ull;
      h ^= h >> 29;
    }
  }
  return h ^ (uint64_t)p.n;
}

static void grow_slots(taso_poly_ctx_t *c);

/* The unknown standing for atom (kind, a, b): the same for equal keys. */
static taso_poly_t atom(taso_poly_ctx_t *c, int32_t kind, taso_poly_t a, taso_poly_t b) {
  uint64_t h = poly_hash(poly_hash(0xcbf29ce484222325ull ^ (uint64_t)kind, a), b);
  int32_t mask = c->nslots - 1, s = (int32_t)(h & (uint64_t)mask);
  for (;; s = (s + 1) & mask) {
    int32_t k = c->slots[s] - 1;
    if (k < 0) break;
    const taso_atom_t *e = &c->atoms[k];
    if (e->kind == kind && taso_poly_equal(e->a, a) && taso_poly_equal(e->b, b))
      return taso_poly_var(c, TASO_POLY_ATOM0 + (uint32_t)k);
  }
  if (c->natoms == c->atom_cap) {
    int32_t cap = c->atom_cap ? 2 * c->atom_cap : 256;
    taso_atom_t *grown = realloc(c->atoms, sizeof *grown * (size_t)cap);
    if (!grown) taso_fatal(__FILE__, __LINE__, "taso", "no memory for atoms");
    c->atoms = grown;
    c->atom_cap = cap;
  }
  int32_t k = c->natoms++;
  c->atoms[k] = (taso_atom_t){kind, a, b};
  c->slots[s] = k + 1;
  if (2 * c->natoms > c->nslots) grow_slots(c);
  return taso_poly_var(c, TASO_POLY_ATOM0 + (uint32_t)k);
}

static void grow_slots(taso_poly_ctx_t *c) {
  int32_t n = 2 * c->nslots;
  int32_t *slots = calloc((size_t)n, sizeof *slots);
  if (!slots) taso_fatal(__FILE__, __LINE__, "taso", "no memory for atoms");
  for (int32_t k = 0; k < c->natoms; k++) {
    const taso_atom_t *e = &c->atoms[k];
    uint64_t h = poly_hash(poly_hash(0xcbf29ce484222325ull ^ (uint64_t)e->kind, e->a), e->b);
    int32_t s = (int32_t)(h & (uint64_t)(n - 1));
    while (slots[s])
      s = (s + 1) & (n - 1);
    slots[s] = k + 1;
  }
  free(c->slots);
  c->slots = slots;
  c->nslots = n;
}

taso_poly_t taso_poly_relu(taso_poly_ctx_t *c, taso_poly_t a) {
  int64_t num, den;
  if (as_const(a, &num, &den)) return num > 0 ? a : (taso_poly_t){NULL, 0};
  return atom(c, TASO_ATOM_RELU, a, (taso_poly_t){NULL, 0});
}

taso_poly_t taso_poly_max(taso_poly_ctx_t *c, taso_poly_t a, taso_poly_t b) {
  int64_t an, ad, bn, bd;
  int r = poly_cmp(a, b);
  if (r == 0) return a;
  if (as_const(a, &an, &ad) && as_const(b, &bn, &bd))
    return (__int128)an * bd >= (__int128)bn * ad ? a : b;
  return r < 0 ? atom(c, TASO_ATOM_MAX, a, b) : atom(c, TASO_ATOM_MAX, b, a);
}

int taso_poly_natoms(const taso_poly_ctx_t *c) {
  return c->natoms;
}

const taso_atom_t *taso_poly_atom(const taso_poly_ctx_t *c, int k) {
  return &c->atoms[k];
}

int taso_poly_format(taso_poly_t p, char *buf, int len) {
  int used = 0;
#define PUT(...)                                                                                   \
  do {                                                                                             \
    int w_ = snprintf(buf + (used < len ? used : len), (size_t)(used < len ? len - used : 0),      \
                      __VA_ARGS__);                                                                \
    used += w_ > 0 ? w_ : 0;                                                                       \
  } while (0)
  if (len > 0) buf[0] = '\0';
  if (p.n == 0) PUT("0");
  for (int32_t i = 0; i < p.n; i++) {
    const taso_term_t *t = &p.t[i];
    bool constant = t->v[0] == TASO_POLY_NONE;
    if (i) PUT(" + ");
    if (t->den != 1)
      PUT("%lld/%lld", (long long)t->num, (long long)t->den);
    else if (constant || t->num != 1)
      PUT("%lld", (long long)t->num);
    for (int k = 0; k < TASO_POLY_DEGREE && t->v[k] != TASO_POLY_NONE; k++) {
      bool first = k == 0 && t->den == 1 && t->num == 1;
      if (t->v[k] >= TASO_POLY_ATOM0)
        PUT("%sa%u", first ? "" : "*", t->v[k] - TASO_POLY_ATOM0);
      else
        PUT("%su%u", first ? "" : "*", t->v[k]);
    }
  }
#undef PUT
  return used;
}

/* ---- the evaluator over polynomials ---------------------------------------- */

#define NUM_T taso_poly_t
#define NUM_CTX_T taso_poly_ctx_t *
#define NUM_SUFFIX poly
#define NUM_ZERO(c) ((taso_poly_t){NULL, 0})
#define NUM_ONE(c) taso_poly_const((c), 1, 1)
#define NUM_FRAC(c, p, q) taso_poly_const((c), (p), (q))
#define NUM_ADD(c, a, b) taso_poly_add((c), (a), (b))
#define NUM_MUL(c, a, b) taso_poly_mul((c), (a), (b))
#define NUM_RELU(c, a) taso_poly_relu((c), (a))
#define NUM_MAX(c, a, b) taso_poly_max((c), (a), (b))
#define NUM_ACC_T int
#define NUM_ACC_ZERO(c) taso_poly_acc_zero(c)
#define NUM_ACC_MAC(c, acc, a, b) ((void)(acc), taso_poly_acc_mac((c), (a), (b)))
#define NUM_ACC_GET(c, acc) ((void)(acc), taso_poly_acc_get(c))
#include "eval_impl.h"
