#include "tensor.h"

#include <stdio.h>
#include <string.h>

#include "hash.h"

taso_tensor_t taso_tensor_make(int rank, const int32_t *dim) {
  taso_tensor_t t;
  memset(&t, 0, sizeof t);
  t.rank = rank;
  for (int i = 0; i < rank; i++)
    t.dim[i] = dim[i];
  return t;
}

int64_t taso_tensor_size(const taso_tensor_t *t) {
  int64_t n = 1;
  for (int i = 0; i < t->rank; i++)
    n *= t->dim[i];
  return n;
}

bool taso_tree_equal(const taso_tree_t *a, const taso_tree_t *b) {
  return memcmp(a, b, sizeof *a) == 0;
}

bool taso_tree_empty(const taso_tree_t *t) {
  return t->code[0] == 0;
}

bool taso_tensor_equal(const taso_tensor_t *a, const taso_tensor_t *b) {
  return memcmp(a, b, sizeof *a) == 0;
}

/* Length of the subtree code starting at code[i]. */
static int code_len(const int32_t *code, int i) {
  if (code[i] == 0) return 1;
  int l = code_len(code, i + 1);
  return 1 + l + code_len(code, i + 1 + l);
}

/* A tree's 128-bit hash, from its size and its subtrees' hashes: the same
 * for a tree held as code and as digest. */
typedef struct {
  uint64_t a, b;
} digest_t;

static digest_t node_digest(int32_t s, digest_t l, digest_t r) {
  uint64_t in[5] = {(uint64_t)(uint32_t)s, l.a, l.b, r.a, r.b};
  digest_t d = {0x243f6a8885a308d3ull, 0x13198a2e03707344ull};
  for (int k = 0; k < 5; k++) { /* two chains, differently salted */
    d.a = taso_mix64(d.a ^ in[k]);
    d.b = taso_mix64(d.b + in[k] * 0xbf58476d1ce4e5b9ull) ^ d.a;
  }
  return d;
}

static digest_t code_digest(const int32_t *code, int *i) {
  if (code[*i] == 0) {
    (*i)++;
    return (digest_t){0x452821e638d01377ull, 0xbe5466cf34e90c6cull};
  }
  int32_t s = code[(*i)++];
  digest_t l = code_digest(code, i);
  return node_digest(s, l, code_digest(code, i));
}

static digest_t tree_digest(const taso_tree_t *t) {
  if (taso_tree_digest(t)) {
    const uint32_t *w = (const uint32_t *)&t->code[1];
    return (digest_t){(uint64_t)w[0] << 32 | w[1], (uint64_t)w[2] << 32 | w[3]};
  }
  int i = 0;
  return code_digest(t->code, &i);
}

bool taso_tree_digest(const taso_tree_t *t) {
  return t->code[0] < 0;
}

int taso_tree_splits(const taso_tree_t *t) {
  if (taso_tree_digest(t)) return -t->code[0];
  int n = 0;
  for (int k = 0; k < TASO_TREE_CODE; k++)
    n += t->code[k] != 0;
  return n;
}

void taso_tree_join(taso_tree_t *out, int32_t s, const taso_tree_t *l, const taso_tree_t *r) {
  taso_tree_t t;
  memset(&t, 0, sizeof t);
  int splits = 1 + taso_tree_splits(l) + taso_tree_splits(r);
  if (2 * splits + 1 > TASO_TREE_CODE) {
    digest_t d = node_digest(s, tree_digest(l), tree_digest(r));
    uint32_t w[4] = {(uint32_t)(d.a >> 32), (uint32_t)d.a, (uint32_t)(d.b >> 32), (uint32_t)d.b};
    t.code[0] = -splits;
    memcpy(&t.code[1], w, sizeof w);
  } else { /* neither part is a digest: each has fewer splits */
    int ll = code_len(l->code, 0), rl = code_len(r->code, 0);
    t.code[0] = s;
    memcpy(&t.code[1], l->code, sizeof(int32_t) * ll);
    memcpy(&t.code[1 + ll], r->code, sizeof(int32_t) * rl);
  }
  *out = t; /* via a copy: out may alias l or r */
}

bool taso_tree_split(const taso_tree_t *t, int32_t *s, taso_tree_t *l, taso_tree_t *r) {
  if (t->code[0] <= 0) return false;
  int ll = code_len(t->code, 1), rl = code_len(t->code, 1 + ll);
  taso_tree_t a, b;
  memset(&a, 0, sizeof a);
  memset(&b, 0, sizeof b);
  memcpy(a.code, &t->code[1], sizeof(int32_t) * ll);
  memcpy(b.code, &t->code[1 + ll], sizeof(int32_t) * rl);
  *s = t->code[0];
  *l = a;
  *r = b;
  return true;
}

int taso_shape_format(const taso_tensor_t *t, char *buf, int len) {
  if (t->rank == 0) return snprintf(buf, len, "scalar");
  int n = 0;
  for (int i = 0; i < t->rank; i++) {
    int k = snprintf(n < len ? buf + n : NULL, n < len ? len - n : 0, i ? "x%d" : "%d", t->dim[i]);
    n += k;
  }
  return n;
}

static int tree_format_at(const int32_t *code, int i, char *buf, int len, int *used) {
  int n = 0;
#define AT (n < len ? buf + n : NULL), (n < len ? len - n : 0)
#define EMIT(...) n += snprintf(AT, __VA_ARGS__)
  if (code[i] == 0) {
    EMIT("-");
    *used = 1;
    return n;
  }
  int lu, ru;
  EMIT("(%d,", code[i]);
  n += tree_format_at(code, i + 1, AT, &lu);
  EMIT(",");
  n += tree_format_at(code, i + 1 + lu, AT, &ru);
  EMIT(")");
  *used = 1 + lu + ru;
#undef EMIT
#undef AT
  return n;
}

int taso_tree_format(const taso_tree_t *t, char *buf, int len) {
  int used;
  if (len > 0) buf[0] = 0;
  if (taso_tree_digest(t))
    return snprintf(buf, len, "<%d concats #%08x>", -t->code[0], (uint32_t)t->code[1]);
  return tree_format_at(t->code, 0, buf, len, &used);
}
