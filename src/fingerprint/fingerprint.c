#include "fingerprint.h"

#include <stdlib.h>
#include <string.h>

#include "hash.h"

taso_err_t taso_fp_inputs_init(taso_fp_inputs_t *r, const taso_inputs_t *in, uint64_t seed) {
  memset(r, 0, sizeof *r);
  r->ninputs = in->n;
  r->offset = malloc(sizeof *r->offset * (in->n + 1));
  if (!r->offset) return taso_error(TASO_ERR_NOMEM, "fingerprint inputs");
  int64_t total = 0;
  for (int i = 0; i < in->n; i++) {
    r->offset[i] = total;
    total += taso_tensor_size(&in->v[i].type);
  }
  r->offset[in->n] = total;
  for (int s = 0; s < TASO_FP_SETS; s++) { /* nonzero coefficients: keys past any element */
    uint64_t key = taso_mix64(taso_mix64(seed) ^ (0x4d4f44454cULL + (uint64_t)s));
    taso_fp_t c[5];
    for (int k = 0; k < 5; k++) {
      key = taso_mix64(key);
      c[k] = taso_fp_reduce(key >> 3);
      if (c[k] == 0) c[k] = 1;
    }
    r->model[s] = (taso_fp_model_t){c[0], c[1], c[2], c[3], c[4]};
  }
  for (int s = 0; s < TASO_FP_SETS; s++) {
    r->values[s] = malloc(sizeof(taso_fp_t) * (total ? total : 1));
    if (!r->values[s]) {
      taso_fp_inputs_free(r);
      return taso_error(TASO_ERR_NOMEM, "fingerprint inputs");
    }
    for (int i = 0; i < in->n; i++)
      for (int64_t e = r->offset[i]; e < r->offset[i + 1]; e++) {
        uint64_t key =
            taso_mix64(taso_mix64(taso_mix64(seed) ^ (uint64_t)s) ^ (uint64_t)i) ^ (uint64_t)e;
        r->values[s][e] = taso_fp_reduce(taso_mix64(key) >> 3); /* 61 bits, uniform enough */
      }
  }
  return TASO_OK;
}

void taso_fp_inputs_free(taso_fp_inputs_t *r) {
  for (int s = 0; s < TASO_FP_SETS; s++)
    free(r->values[s]);
  free(r->offset);
  memset(r, 0, sizeof *r);
}

/* Evaluates g on input set s; values as in taso_eval_graph_field. */
static taso_err_t eval_set(const taso_fp_inputs_t *r, int s, const taso_graph_t *g,
                           const taso_tensor_t *types, taso_fp_t **values) {
  taso_fp_t **in = malloc(sizeof *in * (r->ninputs + 1));
  if (!in) return taso_error(TASO_ERR_NOMEM, "fingerprint evaluation");
  for (int i = 0; i < r->ninputs; i++)
    in[i] = r->values[s] + r->offset[i];
  taso_err_t err = taso_eval_graph_field((void *)&r->model[s], g, types, in, values);
  free(in);
  return err;
}

taso_fingerprint_t taso_tensor_fingerprint(const taso_tensor_t *t, const taso_fp_t *v) {
  uint64_t a = taso_mix64(0x54454e534f52ULL), b = taso_mix64(0x46494e474552ULL);
  const int32_t *w = (const int32_t *)t;
  for (size_t i = 0; i < sizeof *t / sizeof *w; i++) {
    a = taso_mix64(a ^ (uint32_t)w[i]);
    b = taso_mix64(b + (uint32_t)w[i]);
  }
  int64_t size = taso_tensor_size(t);
  for (int64_t i = 0; i < size; i++) { /* a multiply-rotate round per element and lane */
    a += v[i] * 0xc2b2ae3d27d4eb4fULL;
    a = ((a << 31) | (a >> 33)) * 0x9e3779b185ebca87ULL;
    b ^= v[i] * 0x165667b19e3779f9ULL;
    b = ((b << 27) | (b >> 37)) * 0x85ebca77c2b2ae63ULL + 0x27d4eb2f165667c5ULL;
  }
  return (taso_fingerprint_t){{taso_mix64(a ^ (uint64_t)size), taso_mix64(b + (uint64_t)size)}};
}

int taso_fingerprint_cmp(const taso_fingerprint_t *a, const taso_fingerprint_t *b) {
  for (int i = 0; i < 2; i++)
    if (a->h[i] != b->h[i]) return a->h[i] < b->h[i] ? -1 : 1;
  return 0;
}

taso_fingerprint_t taso_fingerprint_combine(taso_fingerprint_t *outs, int n, bool *distinct) {
  for (int i = 1; i < n; i++) /* a handful: insertion sort */
    for (int j = i; j > 0 && taso_fingerprint_cmp(&outs[j - 1], &outs[j]) > 0; j--) {
      taso_fingerprint_t x = outs[j];
      outs[j] = outs[j - 1];
      outs[j - 1] = x;
    }
  taso_fingerprint_t g = {
      {taso_mix64(0x47524150ULL + (uint64_t)n), taso_mix64(0x48ULL + (uint64_t)n)}};
  *distinct = true;
  for (int i = 0; i < n; i++) {
    if (i > 0 && !taso_fingerprint_cmp(&outs[i - 1], &outs[i])) *distinct = false;
    g.h[0] = taso_mix64(g.h[0] ^ outs[i].h[0]);
    g.h[1] = taso_mix64(g.h[1] + outs[i].h[1]);
  }
  return g;
}

taso_err_t taso_fingerprint_graph(const taso_fp_inputs_t *r, const taso_graph_t *g,
                                  const taso_tensor_t *types, taso_fingerprint_t *fp,
                                  taso_fingerprint_t *outfp) {
  taso_fp_t **values = calloc(2 * g->nnodes + 1, sizeof *values);
  taso_fingerprint_t *outs = malloc(sizeof *outs * (g->noutputs + 1));
  taso_err_t err = (values && outs) ? eval_set(r, 0, g, types, values)
                                    : taso_error(TASO_ERR_NOMEM, "fingerprint evaluation");
  for (int o = 0; o < g->noutputs && err == TASO_OK; o++) {
    outs[o] = taso_tensor_fingerprint(&types[g->outputs[o]], values[g->outputs[o]]);
    if (outfp) outfp[o] = outs[o];
  }
  bool distinct;
  if (err == TASO_OK) *fp = taso_fingerprint_combine(outs, g->noutputs, &distinct);
  if (values) taso_values_free_field(values, 2 * g->nnodes);
  free(values);
  free(outs);
  return err;
}

taso_err_t taso_fingerprint_recheck(const taso_fp_inputs_t *r, const taso_graph_t *a,
                                    const taso_tensor_t *ta, const taso_graph_t *b,
                                    const taso_tensor_t *tb, bool *equal) {
  *equal = false;
  if (a->noutputs != b->noutputs) return TASO_OK;
  for (int o = 0; o < a->noutputs; o++)
    if (!taso_tensor_equal(&ta[a->outputs[o]], &tb[b->outputs[o]])) return TASO_OK;
  taso_fp_t **va = calloc(2 * a->nnodes + 1, sizeof *va),
            **vb = calloc(2 * b->nnodes + 1, sizeof *vb);
  taso_err_t err = (va && vb) ? TASO_OK : taso_error(TASO_ERR_NOMEM, "re-check");
  if (err == TASO_OK) err = eval_set(r, 2, a, ta, va);
  if (err == TASO_OK) err = eval_set(r, 2, b, tb, vb);
  if (err == TASO_OK) {
    *equal = true;
    for (int o = 0; o < a->noutputs && *equal; o++)
      *equal = memcmp(va[a->outputs[o]], vb[b->outputs[o]],
                      sizeof(taso_fp_t) * taso_tensor_size(&ta[a->outputs[o]])) == 0;
  }
  if (va) taso_values_free_field(va, 2 * a->nnodes);
  if (vb) taso_values_free_field(vb, 2 * b->nnodes);
  free(va);
  free(vb);
  return err;
}
