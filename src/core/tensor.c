#include "tensor.h"

#include <stdio.h>
#include <string.h>

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

taso_err_t taso_tree_join(taso_tree_t *out, int32_t s, const taso_tree_t *l, const taso_tree_t *r) {
  int ll = code_len(l->code, 0), rl = code_len(r->code, 0);
  if (1 + ll + rl > TASO_TREE_CODE)
    return taso_error(TASO_ERR_LIMIT, "split tree deeper than %d concats on one axis",
                      (TASO_TREE_CODE - 1) / 2);
  taso_tree_t t;
  memset(&t, 0, sizeof t);
  t.code[0] = s;
  memcpy(&t.code[1], l->code, sizeof(int32_t) * ll);
  memcpy(&t.code[1 + ll], r->code, sizeof(int32_t) * rl);
  *out = t; /* via a copy: out may alias l or r */
  return TASO_OK;
}

bool taso_tree_split(const taso_tree_t *t, int32_t *s, taso_tree_t *l, taso_tree_t *r) {
  if (t->code[0] == 0) return false;
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
  return tree_format_at(t->code, 0, buf, len, &used);
}
