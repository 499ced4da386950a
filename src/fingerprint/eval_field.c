/* The prime-field instantiation of the reference evaluator. */
#include "eval.h"
#include "fingerprint.h"

#define NUM_T taso_fp_t
#define NUM_CTX_T void *
#define NUM_SUFFIX field
#define NUM_ZERO(c) ((taso_fp_t)0)
#define NUM_ONE(c) ((taso_fp_t)1)
#define NUM_FRAC(c, p, q) taso_fp_frac((p), (q))
#define NUM_ADD(c, a, b) taso_fp_add((a), (b))
#define NUM_MUL(c, a, b) taso_fp_mul((a), (b))
/* ctx: a taso_fp_model_t of random coefficients, or NULL for the fixed model */
#define NUM_RELU(c, a) ((c) ? taso_fp_relu_m((const taso_fp_model_t *)(c), (a)) : taso_fp_relu(a))
#define NUM_MAX(c, a, b)                                                                           \
  ((c) ? taso_fp_max_m((const taso_fp_model_t *)(c), (a), (b)) : taso_fp_max((a), (b)))
/* Sums of products in 128 bits: each product is below 2^122, so folding
 * once the sum reaches 2^126 keeps it from wrapping; one reduction at the end. */
#define NUM_ACC_T unsigned __int128
#define NUM_ACC_ZERO(c) ((unsigned __int128)0)
#define NUM_ACC_MAC(c, acc, a, b) ((acc) = taso_fp_acc_mac((acc), (a), (b)))
#define NUM_ACC_GET(c, acc) taso_fp_acc_get(acc)
#include "eval_impl.h"

void taso_values_free_field(taso_fp_t **values, int n) {
  taso_values_free((void **)values, n);
}
