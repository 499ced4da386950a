#include "memo.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hash.h"

#define MEMO_HOLDS 16 /* nested holds: one per operator of the walk's deepest state */

typedef struct {
  int32_t variant; /* -1 for an input */
  int32_t in[3];   /* input tensor ids; -1 past arity (input: its index) */
} memo_key_t;

struct taso_memo {
  const taso_fp_inputs_t *r;
  int keep_below;
  int64_t n, cap;
  memo_key_t *key;
  uint8_t *ports, *marks;
  taso_fingerprint_t *fp; /* 2 per expression (ports) */
  uint64_t *shash;        /* per expression */
  taso_fp_t **val;        /* 2 per expression: values on input set 0, or NULL */
  /* the expressions whose values are kept for good, with their sizes, so
   * that a saved memo carries them (taso_memo_save) */
  struct kept {
    int32_t expr;
    int32_t size[2];
  } * kept;
  int64_t nkept, kept_cap;
  int32_t *slots; /* open addressing over expression ids */
  int64_t slots_cap;
  taso_fp_t *scratch[2];
  int64_t scratch_size;
  /* the expressions held (taso_memo_apply with hold), last on top; a held
   * expression without kept values has them in its level's buffers */
  int nheld;
  int32_t held[MEMO_HOLDS];
  bool held_own[MEMO_HOLDS];
  taso_fp_t *hbuf[MEMO_HOLDS][2];
  int64_t hbuf_size[MEMO_HOLDS][2];
};

static uint64_t key_hash(const memo_key_t *k) {
  uint64_t h = taso_mix64((uint64_t)(uint32_t)k->variant);
  for (int i = 0; i < 3; i++)
    h = taso_mix64(h ^ (uint32_t)k->in[i]);
  return h;
}

/* Room for `want` expressions. */
static taso_err_t reserve_for(taso_memo_t *m, int64_t want) {
  if (want <= m->cap) return TASO_OK;
  int64_t cap = m->cap ? 2 * m->cap : 1024;
  while (cap < want)
    cap *= 2;
#define GROW(field, count)                                                                         \
  do {                                                                                             \
    void *p_ = realloc(m->field, sizeof *m->field * (size_t)(count));                              \
    if (!p_) return taso_error(TASO_ERR_NOMEM, "tensor memo (%lld expressions)", (long long)cap);  \
    m->field = p_;                                                                                 \
  } while (0)
  GROW(key, cap);
  GROW(ports, cap);
  GROW(marks, cap);
  GROW(fp, 2 * cap);
  GROW(shash, cap);
  GROW(val, 2 * cap);
#undef GROW
  m->cap = cap;
  return TASO_OK;
}

static taso_err_t reserve(taso_memo_t *m) {
  return reserve_for(m, m->n + 1);
}

static taso_err_t rehash(taso_memo_t *m) {
  if (2 * (m->n + 1) <= m->slots_cap) return TASO_OK;
  int64_t cap = m->slots_cap ? 2 * m->slots_cap : 2048;
  while (cap < 2 * (m->n + 1)) /* a loaded memo starts without an index */
    cap *= 2;
  int32_t *slots = malloc(sizeof *slots * (size_t)cap);
  if (!slots) return taso_error(TASO_ERR_NOMEM, "tensor memo index");
  for (int64_t i = 0; i < cap; i++)
    slots[i] = -1;
  for (int64_t e = 0; e < m->n; e++) {
    int64_t i = (int64_t)(key_hash(&m->key[e]) & (uint64_t)(cap - 1));
    while (slots[i] >= 0)
      i = (i + 1) & (cap - 1);
    slots[i] = (int32_t)e;
  }
  free(m->slots);
  m->slots = slots;
  m->slots_cap = cap;
  return TASO_OK;
}

static taso_err_t scratch(taso_memo_t *m, int64_t size) {
  if (size <= m->scratch_size) return TASO_OK;
  for (int p = 0; p < 2; p++) {
    taso_fp_t *s = realloc(m->scratch[p], sizeof *s * (size_t)size);
    if (!s) return taso_error(TASO_ERR_NOMEM, "tensor of %lld elements", (long long)size);
    m->scratch[p] = s;
  }
  m->scratch_size = size;
  return TASO_OK;
}

/* Slot of a key: where it is, or the empty slot where it goes. */
static int64_t find(const taso_memo_t *m, const memo_key_t *k) {
  int64_t slot = (int64_t)(key_hash(k) & (uint64_t)(m->slots_cap - 1));
  while (m->slots[slot] >= 0 && memcmp(&m->key[m->slots[slot]], k, sizeof *k))
    slot = (slot + 1) & (m->slots_cap - 1);
  return slot;
}

taso_err_t taso_memo_create(const taso_fp_inputs_t *r, const taso_inputs_t *in, int keep_below,
                            taso_memo_t **out) {
  *out = NULL;
  taso_memo_t *m = calloc(1, sizeof *m);
  if (!m) return taso_error(TASO_ERR_NOMEM, "tensor memo");
  m->r = r;
  m->keep_below = keep_below;
  taso_err_t err = TASO_OK;
  for (int i = 0; i < in->n && err == TASO_OK; i++) {
    if ((err = reserve(m)) != TASO_OK || (err = rehash(m)) != TASO_OK) break;
    memo_key_t k = {.variant = -1, .in = {i, -1, -1}};
    const taso_tensor_t *t = &in->v[i].type;
    int64_t e = m->n;
    m->key[e] = k;
    m->ports[e] = 1;
    m->marks[e] = 0;
    m->shash[e] = taso_mix64(0x494e505554ULL ^ (uint64_t)i);
    m->val[2 * e] = m->val[2 * e + 1] = NULL;
    m->fp[2 * e] = taso_tensor_fingerprint(t, r->values[0] + r->offset[i]);
    m->fp[2 * e + 1] = (taso_fingerprint_t){{0, 0}};
    m->slots[find(m, &k)] = (int32_t)e;
    m->n++;
  }
  if (err != TASO_OK) {
    taso_memo_free(m);
    return err;
  }
  *out = m;
  return TASO_OK;
}

void taso_memo_free(taso_memo_t *m) {
  if (!m) return;
  for (int64_t i = 0; i < 2 * m->n; i++)
    free(m->val[i]);
  free(m->key);
  free(m->ports);
  free(m->marks);
  free(m->fp);
  free(m->shash);
  free(m->val);
  free(m->kept);
  for (int h = 0; h < MEMO_HOLDS; h++) {
    free(m->hbuf[h][0]);
    free(m->hbuf[h][1]);
  }
  free(m->slots);
  free(m->scratch[0]);
  free(m->scratch[1]);
  free(m);
}

/* Values of a tensor on input set 0 (NULL if dropped). */
static const taso_fp_t *values(const taso_memo_t *m, int32_t tid) {
  int32_t e = tid / 2;
  if (m->key[e].variant < 0) return m->r->values[0] + m->r->offset[m->key[e].in[0]];
  return m->val[tid];
}

/* Room for n elements in *buf (of *size). */
static taso_err_t room(taso_fp_t **buf, int64_t *size, int64_t n) {
  if (n <= *size) return TASO_OK;
  taso_fp_t *b = realloc(*buf, sizeof *b * (size_t)n);
  if (!b) return taso_error(TASO_ERR_NOMEM, "tensor of %lld elements", (long long)n);
  *buf = b;
  *size = n;
  return TASO_OK;
}

/* Evaluates node on in_tids into out[port] (buffers of the caller). */
static taso_err_t eval(taso_memo_t *m, const taso_node_t *node, const int32_t *in_tids,
                       const taso_tensor_t *in_types, const taso_tensor_t *out_types,
                       taso_fp_t **out) {
  const taso_op_info_t *info = &taso_ops[node->kind];
  const taso_fp_t *in[3];
  for (int a = 0; a < info->arity; a++)
    if ((in[a] = values(m, in_tids[a])) == NULL)
      return taso_error(TASO_ERR_ARG, "tensor memo: %s consumes a tensor whose values were dropped",
                        info->name);
  return taso_eval_node_field((void *)&m->r->model[0], node, in_types, in, out_types, out);
}

/* Pushes a hold of expression e; without kept values, they are evaluated
 * into the hold's buffers (out[port] receives them). */
static taso_err_t hold(taso_memo_t *m, int32_t e, bool kept, const taso_node_t *node,
                       const int32_t *in_tids, const taso_tensor_t *in_types,
                       const taso_tensor_t *out_types, taso_fp_t **out) {
  if (m->nheld == MEMO_HOLDS)
    return taso_error(TASO_ERR_LIMIT, "tensor memo: over %d holds", MEMO_HOLDS);
  int h = m->nheld, ports = taso_ops[node->kind].outputs;
  if (!kept) {
    for (int p = 0; p < ports; p++)
      TASO_TRY(room(&m->hbuf[h][p], &m->hbuf_size[h][p], taso_tensor_size(&out_types[p])));
    taso_fp_t *buf[2] = {m->hbuf[h][0], ports > 1 ? m->hbuf[h][1] : NULL};
    TASO_TRY(eval(m, node, in_tids, in_types, out_types, buf));
    if (out) {
      out[0] = buf[0];
      out[1] = buf[1];
    }
  }
  m->held[h] = e;
  m->held_own[h] = !kept;
  m->nheld++;
  return TASO_OK;
}

void taso_memo_release(taso_memo_t *m, int32_t expr) {
  if (m->nheld == 0 || m->held[m->nheld - 1] != expr) return; /* not held: nothing to end */
  m->nheld--;
  if (m->held_own[m->nheld]) m->val[2 * expr] = m->val[2 * expr + 1] = NULL;
}

/* Records that expression e keeps its values (size0 and size1 elements;
 * 0 past its ports). */
static taso_err_t note_kept(taso_memo_t *m, int32_t e, int32_t size0, int32_t size1) {
  if (m->nkept == m->kept_cap) {
    int64_t cap = m->kept_cap ? 2 * m->kept_cap : 256;
    struct kept *k = realloc(m->kept, sizeof *k * (size_t)cap);
    if (!k) return taso_error(TASO_ERR_NOMEM, "tensor memo (%lld kept values)", (long long)cap);
    m->kept = k;
    m->kept_cap = cap;
  }
  m->kept[m->nkept++] = (struct kept){e, {size0, size1}};
  return TASO_OK;
}

taso_err_t taso_memo_apply(taso_memo_t *m, int32_t variant, const taso_node_t *node,
                           const int32_t *in_tids, const taso_tensor_t *in_types,
                           const taso_tensor_t *out_types, int cone, bool held, int32_t *expr) {
  const taso_op_info_t *info = &taso_ops[node->kind];
  memo_key_t k = {.variant = variant, .in = {-1, -1, -1}};
  for (int a = 0; a < info->arity; a++)
    k.in[a] = in_tids[a];
  TASO_TRY(rehash(m));
  int64_t slot = find(m, &k);
  if (m->slots[slot] >= 0) {
    int32_t e = m->slots[slot];
    if (held) {
      taso_fp_t *out[2] = {NULL, NULL};
      TASO_TRY(hold(m, e, m->val[2 * e] != NULL, node, in_tids, in_types, out_types, out));
      if (m->held_own[m->nheld - 1]) {
        m->val[2 * e] = out[0];
        m->val[2 * e + 1] = out[1];
      }
    }
    *expr = e;
    return TASO_OK;
  }
  TASO_TRY(reserve(m));
  int64_t e = m->n;
  bool keep = cone < m->keep_below;
  int ports = info->outputs;
  taso_fp_t *out[2] = {NULL, NULL};
  m->val[2 * e] = m->val[2 * e + 1] = NULL;
  taso_err_t err = TASO_OK;
  if (keep) {
    for (int p = 0; p < ports && err == TASO_OK; p++) {
      int64_t size = taso_tensor_size(&out_types[p]);
      if ((out[p] = m->val[2 * e + p] = malloc(sizeof(taso_fp_t) * (size_t)size)) == NULL)
        err = taso_error(TASO_ERR_NOMEM, "tensor of %lld elements", (long long)size);
    }
    if (err == TASO_OK) err = eval(m, node, in_tids, in_types, out_types, out);
    if (err == TASO_OK)
      err = note_kept(m, (int32_t)e, (int32_t)taso_tensor_size(&out_types[0]),
                      ports > 1 ? (int32_t)taso_tensor_size(&out_types[1]) : 0);
    if (err == TASO_OK && held)
      err = hold(m, (int32_t)e, true, node, in_tids, in_types, out_types, NULL);
    if (err != TASO_OK) {
      for (int p = 0; p < 2; p++) {
        free(m->val[2 * e + p]);
        m->val[2 * e + p] = NULL;
      }
      return err;
    }
  } else if (held) {
    TASO_TRY(hold(m, (int32_t)e, false, node, in_tids, in_types, out_types, out));
    m->val[2 * e] = out[0];
    m->val[2 * e + 1] = out[1];
  } else {
    for (int p = 0; p < ports; p++)
      TASO_TRY(scratch(m, taso_tensor_size(&out_types[p])));
    out[0] = m->scratch[0];
    out[1] = ports > 1 ? m->scratch[1] : NULL;
    TASO_TRY(eval(m, node, in_tids, in_types, out_types, out));
  }
  uint64_t sh = taso_mix64((uint64_t)(uint32_t)variant + 0x4f50ULL);
  for (int a = 0; a < info->arity; a++)
    sh = taso_mix64(sh ^ taso_memo_shash(m, in_tids[a]));
  for (int p = 0; p < 2; p++)
    m->fp[2 * e + p] =
        p < ports ? taso_tensor_fingerprint(&out_types[p], out[p]) : (taso_fingerprint_t){{0, 0}};
  m->key[e] = k;
  m->ports[e] = (uint8_t)ports;
  m->marks[e] = 0;
  m->shash[e] = sh;
  m->slots[slot] = (int32_t)e;
  m->n++;
  *expr = (int32_t)e;
  return TASO_OK;
}

taso_err_t taso_memo_eval(taso_memo_t *m, const taso_node_t *node, const int32_t *in_tids,
                          const taso_tensor_t *in_types, const taso_tensor_t *out_types,
                          taso_fingerprint_t *fps) {
  int ports = taso_ops[node->kind].outputs;
  for (int p = 0; p < ports; p++)
    TASO_TRY(scratch(m, taso_tensor_size(&out_types[p])));
  taso_fp_t *out[2] = {m->scratch[0], ports > 1 ? m->scratch[1] : NULL};
  TASO_TRY(eval(m, node, in_tids, in_types, out_types, out));
  for (int p = 0; p < ports; p++)
    fps[p] = taso_tensor_fingerprint(&out_types[p], out[p]);
  return TASO_OK;
}

int64_t taso_memo_count(const taso_memo_t *m) {
  return m->n;
}

int32_t taso_memo_expr(const taso_memo_t *m, int32_t expr, int32_t *in_tids) {
  memcpy(in_tids, m->key[expr].in, sizeof m->key[expr].in);
  return m->key[expr].variant;
}

int taso_memo_ports(const taso_memo_t *m, int32_t expr) {
  return m->ports[expr];
}

taso_fingerprint_t taso_memo_fp(const taso_memo_t *m, int32_t tid) {
  return m->fp[tid];
}

uint64_t taso_memo_shash(const taso_memo_t *m, int32_t tid) {
  return taso_mix64(m->shash[tid / 2] ^ (uint64_t)(tid % 2));
}

void taso_memo_mark(taso_memo_t *m, int32_t tid, int mark, bool on) {
  uint8_t bit = (uint8_t)(1u << (2 * mark + tid % 2));
  m->marks[tid / 2] = on ? (uint8_t)(m->marks[tid / 2] | bit) : (uint8_t)(m->marks[tid / 2] & ~bit);
}

bool taso_memo_marked(const taso_memo_t *m, int32_t tid, int mark) {
  return m->marks[tid / 2] >> (2 * mark + tid % 2) & 1;
}

/* ---- saving and loading (taso-generate's level checkpoints) ------------- */

static bool put(FILE *f, const void *p, size_t size, size_t n) {
  return n == 0 || fwrite(p, size, n, f) == n;
}

static bool get(FILE *f, void *p, size_t size, size_t n) {
  return n == 0 || fread(p, size, n, f) == n;
}

taso_err_t taso_memo_save(const taso_memo_t *m, FILE *f) {
  if (m->nheld)
    return taso_error(TASO_ERR_ARG, "tensor memo: saved while %d expressions are held", m->nheld);
  int64_t head[2] = {m->n, m->nkept};
  bool ok = put(f, head, sizeof *head, 2) && put(f, m->key, sizeof *m->key, (size_t)m->n) &&
            put(f, m->ports, 1, (size_t)m->n) && put(f, m->marks, 1, (size_t)m->n) &&
            put(f, m->fp, sizeof *m->fp, 2 * (size_t)m->n) &&
            put(f, m->shash, sizeof *m->shash, (size_t)m->n) &&
            put(f, m->kept, sizeof *m->kept, (size_t)m->nkept);
  for (int64_t i = 0; ok && i < m->nkept; i++)
    for (int p = 0; p < 2 && ok; p++)
      ok = put(f, m->val[2 * m->kept[i].expr + p], sizeof(taso_fp_t), (size_t)m->kept[i].size[p]);
  return ok ? TASO_OK : taso_error(TASO_ERR_IO, "writing the tensor memo");
}

taso_err_t taso_memo_load(taso_memo_t *m, FILE *f) {
  int64_t head[2], ninputs = m->n;
  if (!get(f, head, sizeof *head, 2) || head[0] < ninputs || head[1] < 0 || head[1] > head[0])
    return taso_error(TASO_ERR_FORMAT, "a tensor memo's counts");
  /* the inputs' entries are rebuilt by taso_memo_create: the saved ones
   * must be the same */
  TASO_TRY(reserve_for(m, head[0]));
  memo_key_t *in_key = malloc(sizeof *in_key * (size_t)(ninputs + 1));
  taso_fingerprint_t *in_fp = malloc(sizeof *in_fp * (size_t)(2 * ninputs + 1));
  if (!in_key || !in_fp) {
    free(in_key);
    free(in_fp);
    return taso_error(TASO_ERR_NOMEM, "tensor memo");
  }
  memcpy(in_key, m->key, sizeof *in_key * (size_t)ninputs);
  memcpy(in_fp, m->fp, sizeof *in_fp * (size_t)(2 * ninputs));
  size_t n = (size_t)head[0];
  bool ok = get(f, m->key, sizeof *m->key, n) && get(f, m->ports, 1, n) && get(f, m->marks, 1, n) &&
            get(f, m->fp, sizeof *m->fp, 2 * n) && get(f, m->shash, sizeof *m->shash, n);
  ok = ok && !memcmp(in_key, m->key, sizeof *in_key * (size_t)ninputs) &&
       !memcmp(in_fp, m->fp, sizeof *in_fp * (size_t)(2 * ninputs));
  free(in_key);
  free(in_fp);
  if (!ok) return taso_error(TASO_ERR_FORMAT, "a tensor memo of other inputs, or cut short");
  for (int64_t e = ninputs; e < head[0]; e++)
    m->val[2 * e] = m->val[2 * e + 1] = NULL;
  m->n = head[0];
  struct kept *kept = realloc(m->kept, sizeof *kept * (size_t)(head[1] + 1));
  if (!kept)
    return taso_error(TASO_ERR_NOMEM, "tensor memo (%lld kept values)", (long long)head[1]);
  m->kept = kept;
  m->kept_cap = head[1] + 1;
  m->nkept = 0;
  if (!get(f, kept, sizeof *kept, (size_t)head[1]))
    return taso_error(TASO_ERR_FORMAT, "a tensor memo's kept values");
  for (int64_t i = 0; i < head[1]; i++)
    if (kept[i].expr < ninputs || kept[i].expr >= m->n || kept[i].size[0] < 0 ||
        kept[i].size[1] < 0)
      return taso_error(TASO_ERR_FORMAT, "a tensor memo's kept values");
  m->nkept = head[1];
  for (int64_t i = 0; i < m->nkept; i++)
    for (int p = 0; p < 2; p++) {
      size_t size = (size_t)m->kept[i].size[p];
      taso_fp_t **v = &m->val[2 * m->kept[i].expr + p];
      if (!size) continue;
      if (!(*v = malloc(sizeof **v * size)))
        return taso_error(TASO_ERR_NOMEM, "tensor of %zu elements", size);
      if (!get(f, *v, sizeof **v, size))
        return taso_error(TASO_ERR_FORMAT, "a tensor memo cut short in its values");
    }
  free(m->slots);
  m->slots = NULL;
  m->slots_cap = 0;
  return rehash(m);
}
