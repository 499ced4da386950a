/*
 * The enumeration visits every graph exactly once: compared with a brute
 * force that applies operators in every order and keeps the distinct
 * canonical graphs; and shards of any count partition the enumeration.
 */
#include <stdlib.h>
#include <string.h>

#include "candidates.h"
#include "enumerate.h"
#include "test.h"

static taso_inputs_t inputs;
static taso_op_template_t ops[8];
static int nops;
static const char *tag = "E";

static void setup(void) {
  int32_t x[2] = {2, 4}, w[2] = {4, 4}, i[4] = {1, 2, 3, 3}, k[4] = {2, 2, 3, 3};
  TASO_CHECK(taso_inputs_add(&inputs, "x1", 2, x));
  TASO_CHECK(taso_inputs_add(&inputs, "w1", 2, w));
  TASO_CHECK(taso_inputs_add(&inputs, "w2", 2, w));
  TASO_CHECK(taso_inputs_add(&inputs, "i1", 4, i));
  TASO_CHECK(taso_inputs_add(&inputs, "w4", 4, k));
  const char *names[] = {"matmul",         "ewadd",         "relu",     "conv2d",
                         "concat(axis=0)", "split(axis=0)", "const_imm"};
  for (nops = 0; nops < 7; nops++)
    TASO_CHECK(taso_op_template_parse(names[nops], &ops[nops].kind, &ops[nops].p));
}

static int u64_cmp(const void *a, const void *b) {
  uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
  return (x > y) - (x < y);
}

/* A set of 64-bit graph hashes. */
typedef struct {
  uint64_t *v;
  int64_t n, cap;
} set_t;

static void set_add(set_t *s, uint64_t h) {
  if (s->n == s->cap) {
    s->cap = s->cap ? 2 * s->cap : 1024;
    s->v = realloc(s->v, sizeof *s->v * (size_t)s->cap);
  }
  s->v[s->n++] = h;
}

/* Sorts and reports whether all distinct. */
static bool set_distinct(set_t *s) {
  if (s->n > 1) qsort(s->v, (size_t)s->n, sizeof *s->v, u64_cmp);
  for (int64_t i = 1; i < s->n; i++)
    if (s->v[i] == s->v[i - 1]) return false;
  return true;
}

typedef struct {
  const taso_enum_t *e;
  set_t seen;
  bool dead_op;
} visit_ctx_t;

/* The canonical graph of a visited state, outputs in sink order. */
static uint64_t hash_of(const taso_enum_t *e, const taso_enum_graph_t *g) {
  int nv;
  const taso_variant_t *vars = taso_enum_variants(e, &nv);
  taso_graph_t out;
  taso_graph_init(&out);
  taso_ref_t map[TASO_ENUM_MAX_OPS];
  for (int j = 0; j < g->nops; j++) {
    const taso_variant_t *v = &vars[g->variant[j]];
    taso_ref_t in[3] = {-1, -1, -1};
    for (int a = 0; a < taso_ops[v->kind].arity; a++) {
      int node = TASO_REF_NODE(g->in[j][a]);
      if (node < inputs.n)
        TASO_CHECK(taso_graph_add_input(&out, node, &in[a]));
      else
        in[a] = map[node - inputs.n] + TASO_REF_PORT(g->in[j][a]);
    }
    TASO_CHECK(taso_graph_add(&out, v->kind, &v->p, in, &map[j]));
  }
  for (int s = 0; s < g->nsinks; s++)
    TASO_CHECK(taso_graph_add_output(&out, map[TASO_REF_NODE(g->sinks[s]) - inputs.n] +
                                               TASO_REF_PORT(g->sinks[s])));
  /* A graph is the union of its outputs' cones, whatever their order: its
   * identity is the sorted list of the cones' canonical hashes. */
  uint64_t cone[2 * TASO_ENUM_MAX_OPS], h = 0x51;
  taso_graph_t one;
  taso_graph_init(&one);
  for (int s = 0; s < out.noutputs; s++) {
    TASO_CHECK(taso_graph_copy(&one, &out));
    one.outputs[0] = out.outputs[s];
    one.noutputs = 1;
    TASO_CHECK(taso_graph_canonicalize(&one));
    cone[s] = taso_graph_hash(&one);
  }
  taso_graph_free(&one);
  qsort(cone, (size_t)out.noutputs, sizeof *cone, u64_cmp);
  for (int s = 0; s < out.noutputs; s++)
    h = (h ^ cone[s]) * 0x100000001b3ULL + (h >> 29);
  if (getenv("TEST_ENUM_DUMP")) {
    char buf[512];
    TASO_CHECK(taso_graph_canonicalize(&out));
    taso_graph_format(&out, &inputs, buf, sizeof buf);
    fprintf(stderr, "%s %016llx %s\n", tag, (unsigned long long)h, buf);
  }
  taso_graph_free(&out);
  return h;
}

static taso_err_t visit(void *ctx, const taso_enum_graph_t *g) {
  visit_ctx_t *c = ctx;
  set_add(&c->seen, hash_of(c->e, g));
  if (g->nsinks == 0) c->dead_op = true;
  return TASO_OK;
}

/* Brute force: every order of applying operators; a graph is its set of
 * operators, kept as the canonical graph of its sinks. It goes at most
 * BRUTE_MAX_OPS deep, which sizes its arrays (test_matches_brute_force
 * calls it with 1 to 3), and needs inputs.n + BRUTE_MAX_OPS <= 16. */
#define BRUTE_MAX_OPS 3
#define BRUTE_MAX_REFS (2 * 16)
typedef struct {
  const taso_enum_t *e;
  const taso_variant_t *vars;
  int nv;
  set_t found;
  int32_t variant[BRUTE_MAX_OPS];
  taso_ref_t in[BRUTE_MAX_OPS][3];
  bool on_input[BRUTE_MAX_OPS];   /* depends on some input of the job */
  bool activation[BRUTE_MAX_OPS]; /* depends on an input that is no weight */
  taso_tensor_t types[BRUTE_MAX_REFS];
} brute_t;

/* The two properties of a ref, for the rules on constants and weights. */
static bool brute_on_input(const brute_t *b, taso_ref_t r) {
  int node = TASO_REF_NODE(r);
  return node < inputs.n || b->on_input[node - inputs.n];
}
static bool brute_activation(const brute_t *b, taso_ref_t r) {
  int node = TASO_REF_NODE(r);
  return node < inputs.n ? !taso_enum_is_weight(&inputs, node) : b->activation[node - inputs.n];
}

static void brute(brute_t *b, int depth, int max) {
  if (depth > 0) {
    int consumers[BRUTE_MAX_REFS] = {0};
    taso_ref_t sinks[2 * BRUTE_MAX_OPS];
    int ns = 0;
    for (int j = 0; j < depth; j++)
      for (int a = 0; a < 3; a++)
        if (b->in[j][a] >= 0) consumers[b->in[j][a]]++;
    for (int j = 0; j < depth; j++)
      for (int p = 0; p < taso_ops[b->vars[b->variant[j]].kind].outputs; p++)
        if (!consumers[TASO_REF(inputs.n + j, p)]) sinks[ns++] = TASO_REF(inputs.n + j, p);
    int32_t type_ids[BRUTE_MAX_REFS] = {0};
    taso_enum_graph_t g = {.nops = depth,
                           .variant = b->variant,
                           .in = (const taso_ref_t(*)[3])b->in,
                           .type = type_ids,
                           .nsinks = ns,
                           .sinks = sinks};
    set_add(&b->found, hash_of(b->e, &g));
  }
  /* The second bound is the arrays' (max never exceeds it): it lets the
   * compiler see that no index passes them. */
  if (depth == max || depth >= BRUTE_MAX_OPS) return;
  int avail = 2 * (inputs.n + depth);
  for (int v = 0; v < b->nv; v++) {
    const taso_variant_t *var = &b->vars[v];
    int arity = taso_ops[var->kind].arity;
    for (int r0 = 0; r0 < (arity > 0 ? avail : 1); r0++)
      for (int r1 = 0; r1 < (arity > 1 ? avail : 1); r1++) {
        taso_ref_t in[3] = {arity > 0 ? r0 : -1, arity > 1 ? r1 : -1, -1};
        taso_tensor_t args[2], out[2];
        bool ok = true;
        for (int a = 0; a < arity; a++) {
          ok = ok && b->types[in[a]].rank >= 0;
          if (ok) args[a] = b->types[in[a]];
        }
        if (!ok) continue;
        /* no operator over constants alone; conv2d's data reads an activation */
        bool on_in = false, act = false;
        for (int a = 0; a < arity; a++)
          on_in = on_in || brute_on_input(b, in[a]), act = act || brute_activation(b, in[a]);
        if (arity > 0 && !on_in) continue;
        if (var->kind == TASO_OP_CONV2D && !brute_activation(b, in[0])) continue;
        bool dup = false; /* no operator twice */
        for (int j = 0; j < depth; j++)
          dup = dup || (b->variant[j] == v && !memcmp(b->in[j], in, sizeof in));
        if (dup || taso_op_infer(var->kind, &var->p, args, out) != TASO_OK) continue;
        b->variant[depth] = v;
        b->on_input[depth] = on_in;
        b->activation[depth] = act;
        memcpy(b->in[depth], in, sizeof in);
        int base = inputs.n + depth;
        b->types[TASO_REF(base, 0)] = out[0];
        if (taso_ops[var->kind].outputs > 1) b->types[TASO_REF(base, 1)] = out[1];
        brute(b, depth + 1, max);
        b->types[TASO_REF(base, 0)].rank = b->types[TASO_REF(base, 1)].rank = -1;
      }
  }
}

static void test_matches_brute_force(void) {
  CHECK(2 * (inputs.n + BRUTE_MAX_OPS) <= BRUTE_MAX_REFS);
  for (int max = 1; max <= BRUTE_MAX_OPS; max++) {
    taso_enum_t *e;
    CHECK_OK(taso_enum_create(&inputs, ops, nops, max, 0, 1, &e));
    visit_ctx_t c = {.e = e};
    taso_enum_visitor_t v = {.ctx = &c, .visit = visit};
    CHECK_OK(taso_enum_run(e, 0, taso_enum_total(e), &v));
    CHECK(c.seen.n == taso_enum_graphs(e));
    CHECK(set_distinct(&c.seen));
    CHECK(!c.dead_op);
    brute_t b = {.e = e};
    b.vars = taso_enum_variants(e, &b.nv);
    for (int r = 0; r < BRUTE_MAX_REFS; r++)
      b.types[r].rank = -1;
    for (int i = 0; i < inputs.n; i++)
      b.types[TASO_REF(i, 0)] = inputs.v[i].type;
    tag = "B";
    brute(&b, 0, max);
    tag = "E";
    qsort(b.found.v, (size_t)b.found.n, sizeof *b.found.v, u64_cmp);
    int64_t uniq = 0;
    for (int64_t i = 0; i < b.found.n; i++)
      if (i == 0 || b.found.v[i] != b.found.v[i - 1]) b.found.v[uniq++] = b.found.v[i];
    if (uniq != c.seen.n)
      fprintf(stderr, "max_ops %d: enumeration %lld graphs, brute force %lld\n", max,
              (long long)c.seen.n, (long long)uniq);
    CHECK(uniq == c.seen.n);
    CHECK(uniq == c.seen.n && !memcmp(b.found.v, c.seen.v, sizeof *b.found.v * (size_t)uniq));
    free(c.seen.v);
    free(b.found.v);
    taso_enum_free(e);
  }
}

static void test_shards_partition(void) {
  taso_enum_t *e;
  CHECK_OK(taso_enum_create(&inputs, ops, nops, 3, 0, 1, &e));
  int64_t total = taso_enum_total(e);
  visit_ctx_t whole = {.e = e};
  taso_enum_visitor_t v = {.ctx = &whole, .visit = visit};
  CHECK_OK(taso_enum_run(e, 0, total, &v));
  CHECK(set_distinct(&whole.seen));
  for (int shards = 2; shards <= 37; shards += 7) {
    visit_ctx_t parts = {.e = e};
    v.ctx = &parts;
    for (int s = 0; s < shards; s++)
      CHECK_OK(taso_enum_run(e, total * s / shards, total * (s + 1) / shards, &v));
    CHECK(parts.seen.n == whole.seen.n);
    CHECK(set_distinct(&parts.seen));
    CHECK(!memcmp(parts.seen.v, whole.seen.v, sizeof *parts.seen.v * (size_t)whole.seen.n));
    free(parts.seen.v);
  }
  free(whole.seen.v);
  taso_enum_free(e);
}

/* A count pass shared by parts sums to the whole one, for every max_ops
 * (1 has the root as its only unit) and part counts above the unit count. */
static void test_shared_count_pass(void) {
  CHECK(2 * (inputs.n + BRUTE_MAX_OPS) <= BRUTE_MAX_REFS);
  for (int max = 1; max <= BRUTE_MAX_OPS; max++) {
    taso_enum_t *whole;
    CHECK_OK(taso_enum_create(&inputs, ops, nops, max, 0, 1, &whole));
    int64_t n, *want = taso_enum_partial_weights(whole, &n);
    for (int parts = 2; parts <= 40; parts += 19) {
      int64_t *sum = calloc((size_t)n, sizeof *sum), m;
      taso_enum_t *e[41];
      for (int p = 0; p < parts; p++) {
        CHECK_OK(taso_enum_create(&inputs, ops, nops, max, p, parts, &e[p]));
        const int64_t *w = taso_enum_partial_weights(e[p], &m);
        CHECK(m == n);
        for (int64_t i = 0; i < n && m == n; i++)
          sum[i] += w[i];
      }
      CHECK(!memcmp(sum, want, sizeof *sum * (size_t)n));
      /* summed in place, a part enumerates the same shards as the whole */
      memcpy(taso_enum_partial_weights(e[parts - 1], &m), sum, sizeof *sum * (size_t)n);
      CHECK(taso_enum_total(e[parts - 1]) == taso_enum_total(whole));
      CHECK(taso_enum_graphs(e[parts - 1]) == taso_enum_graphs(whole));
      for (int p = 0; p < parts; p++)
        taso_enum_free(e[p]);
      free(sum);
    }
    taso_enum_free(whole);
  }
}

/* A candidate's key at its shapes and at any shapes. */
static char *key_of(const taso_inputs_t *in, const char *text, bool any_type) {
  taso_graph_t src, dst;
  taso_graph_init(&src);
  taso_graph_init(&dst);
  char *key = NULL;
  CHECK_OK(taso_subst_parse(text, in, &src, &dst));
  CHECK_OK(taso_cand_key(in, &src, &dst, any_type, &key));
  taso_graph_free(&src);
  taso_graph_free(&dst);
  return key;
}

/* One pattern at other shapes and with inputs renamed has one any-type key
 * (and two typed ones); merging two inputs makes another pattern. */
static void test_pattern_keys(void) {
  taso_inputs_t in = {0};
  int32_t a2[2] = {2, 4}, b2[2] = {4, 4};
  TASO_CHECK(taso_inputs_add(&in, "a1", 2, a2));
  TASO_CHECK(taso_inputs_add(&in, "b1", 2, b2));
  TASO_CHECK(taso_inputs_add(&in, "b2", 2, b2));
  TASO_CHECK(taso_inputs_add(&in, "b3", 2, b2));
  const char *a = "ewadd(matmul(a1, b1), matmul(a1, b2)) => matmul(a1, ewadd(b1, b2))";
  const char *b = "matmul(b3, ewadd(b2, b1)) => ewadd(matmul(b3, b2), matmul(b3, b1))";
  const char *c = "ewadd(matmul(b1, b1), matmul(b1, b2)) => matmul(b1, ewadd(b1, b2))";
  char *ta = key_of(&in, a, false), *tb = key_of(&in, b, false), *pa = key_of(&in, a, true);
  char *pb = key_of(&in, b, true), *pc = key_of(&in, c, true);
  CHECK(ta && tb && strcmp(ta, tb) != 0);
  CHECK_STR(pa, pb);
  CHECK(pa && pc && strcmp(pa, pc) != 0);
  free(ta);
  free(tb);
  free(pa);
  free(pb);
  free(pc);
  taso_inputs_free(&in);
}

/* Level by level without cuts, the levels' parts partition the whole
 * enumeration for any part count; with a cut, the set still does not
 * depend on the part count and holds no graph below a cut state. */
static bool cut_relu(void *ctx, const taso_enum_graph_t *g) {
  const visit_ctx_t *c = ctx;
  int nv;
  const taso_variant_t *vars = taso_enum_variants(c->e, &nv);
  return vars[g->variant[g->nops - 1]].kind != TASO_OP_RELU;
}

static void levels(taso_enum_t *e, int max, int parts, bool cut, visit_ctx_t *c) {
  taso_enum_visitor_t v = {.ctx = c, .visit = visit, .expand = cut ? cut_relu : NULL};
  for (int level = 1; level <= max; level++)
    for (int p = 0; p < parts; p++)
      CHECK_OK(taso_enum_level(e, level, p, parts, &v));
}

/* A visit that also records whether a relu has a consumer placed after it
 * in canonical order, which a cut at every relu state forbids. */
static taso_err_t visit_cut(void *ctx, const taso_enum_graph_t *g) {
  visit_ctx_t *c = ctx;
  int nv;
  const taso_variant_t *vars = taso_enum_variants(c->e, &nv);
  for (int j = 0; j + 1 < g->nops; j++)
    if (vars[g->variant[j]].kind == TASO_OP_RELU) c->dead_op = true; /* a relu with a successor */
  return visit(ctx, g);
}

static void test_levels_partition(void) {
  taso_enum_t *e;
  CHECK_OK(taso_enum_create(&inputs, ops, nops, 3, 0, 1, &e));
  visit_ctx_t whole = {.e = e};
  taso_enum_visitor_t v = {.ctx = &whole, .visit = visit};
  CHECK_OK(taso_enum_run(e, 0, taso_enum_total(e), &v));
  CHECK(set_distinct(&whole.seen));
  for (int parts = 1; parts <= 13; parts += 4) {
    visit_ctx_t lv = {.e = e};
    levels(e, 3, parts, false, &lv);
    CHECK(lv.seen.n == whole.seen.n);
    CHECK(set_distinct(&lv.seen));
    CHECK(lv.seen.n == whole.seen.n &&
          !memcmp(lv.seen.v, whole.seen.v, sizeof *lv.seen.v * (size_t)lv.seen.n));
    free(lv.seen.v);
  }
  visit_ctx_t one = {.e = e}, many = {.e = e};
  levels(e, 3, 1, true, &one);
  levels(e, 3, 7, true, &many);
  CHECK(one.seen.n > 0 && one.seen.n < whole.seen.n);
  CHECK(set_distinct(&one.seen) && set_distinct(&many.seen));
  CHECK(one.seen.n == many.seen.n &&
        !memcmp(one.seen.v, many.seen.v, sizeof *one.seen.v * (size_t)one.seen.n));
  visit_ctx_t check = {.e = e};
  taso_enum_visitor_t cv = {.ctx = &check, .visit = visit_cut, .expand = cut_relu};
  for (int level = 1; level <= 3; level++)
    CHECK_OK(taso_enum_level(e, level, 0, 1, &cv));
  CHECK(!check.dead_op);
  free(check.seen.v);
  free(one.seen.v);
  free(many.seen.v);
  free(whole.seen.v);
  taso_enum_free(e);
}

/* The options: conv2d weights read only the inputs the job allows, and no
 * enlarge where it is the identity. */
typedef struct {
  const taso_enum_t *e;
  uint64_t not_weights; /* inputs that may not be read by a weight */
  int ninputs;
  int64_t graphs, image_weights, identities, enlarges;
} opts_ctx_t;

static uint64_t reads(const opts_ctx_t *c, const taso_enum_graph_t *g, taso_ref_t r) {
  int node = TASO_REF_NODE(r);
  if (node < c->ninputs) return 1ull << node;
  uint64_t m = 0;
  for (int a = 0; a < 3; a++)
    if (g->in[node - c->ninputs][a] >= 0) m |= reads(c, g, g->in[node - c->ninputs][a]);
  return m;
}

static taso_err_t visit_opts(void *ctx, const taso_enum_graph_t *g) {
  opts_ctx_t *c = ctx;
  int nv;
  const taso_variant_t *vars = taso_enum_variants(c->e, &nv);
  c->graphs++;
  for (int j = 0; j < g->nops; j++) {
    taso_op_kind_t kind = vars[g->variant[j]].kind;
    if (kind == TASO_OP_CONV2D && (reads(c, g, g->in[j][1]) & c->not_weights)) c->image_weights++;
    if (kind != TASO_OP_ENLARGE) continue;
    c->enlarges++;
    const taso_tensor_t *in = taso_enum_type(c->e, g->type[g->in[j][0]]);
    const taso_tensor_t *out = taso_enum_type(c->e, g->type[TASO_REF(c->ninputs + j, 0)]);
    c->identities += taso_tensor_equal(in, out);
  }
  return TASO_OK;
}

static void test_weights_and_identities(void) {
  taso_inputs_t in = {0};
  int32_t i[4] = {1, 2, 3, 3}, k3[4] = {2, 2, 3, 3}, k13[4] = {2, 2, 1, 3};
  TASO_CHECK(taso_inputs_add(&in, "i1", 4, i));
  TASO_CHECK(taso_inputs_add(&in, "w4", 4, k3));
  TASO_CHECK(taso_inputs_add(&in, "w7", 4, k13));
  taso_op_template_t t[3];
  const char *names[] = {"conv2d", "enlarge(k=3x3)", "relu"};
  for (int n = 0; n < 3; n++)
    TASO_CHECK(taso_op_template_parse(names[n], &t[n].kind, &t[n].p));
  for (int restrict_weights = 0; restrict_weights < 3; restrict_weights++) {
    /* 0: defaults; 1: weights w4, w7 only; 2: identities kept */
    taso_enum_opts_t opts = {.weights = restrict_weights == 1 ? 6 : ~0ull,
                             .keep_identities = restrict_weights == 2};
    taso_enum_t *e;
    CHECK_OK(taso_enum_create_opts(&in, t, 3, 3, 0, 1, &opts, &e));
    opts_ctx_t c = {.e = e, .not_weights = 1, .ninputs = in.n};
    taso_enum_visitor_t v = {.ctx = &c, .visit = visit_opts};
    CHECK_OK(taso_enum_run(e, 0, taso_enum_total(e), &v));
    CHECK(c.graphs > 0 && c.enlarges > 0); /* enlarge(w7) and on */
    CHECK(restrict_weights == 2 ? c.identities > 0 : c.identities == 0);
    CHECK(restrict_weights == 1 ? c.image_weights == 0 : c.image_weights > 0);
    taso_enum_free(e);
  }
  taso_inputs_free(&in);
}

static void test_rejects_bad_limits(void) {
  taso_enum_t *e;
  CHECK_ERR(taso_enum_create(&inputs, ops, nops, 0, 0, 1, &e), TASO_ERR_LIMIT);
  CHECK_ERR(taso_enum_create(&inputs, ops, nops, TASO_ENUM_MAX_OPS + 1, 0, 1, &e), TASO_ERR_LIMIT);
  CHECK_ERR(taso_enum_create(&inputs, ops, nops, 3, 2, 2, &e), TASO_ERR_ARG);
}

int main(void) {
  setup();
  const test_case_t cases[] = {TEST(test_matches_brute_force),   TEST(test_shards_partition),
                               TEST(test_shared_count_pass),     TEST(test_pattern_keys),
                               TEST(test_rejects_bad_limits),    TEST(test_levels_partition),
                               TEST(test_weights_and_identities)};
  int rc = test_run(cases, (int)(sizeof cases / sizeof *cases));
  taso_inputs_free(&inputs);
  return rc;
}
