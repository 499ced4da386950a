/*
 * Equality saturation (search.h: taso_search_eqsat): the model graph put
 * into an e-graph (egraph.h), every rule applied at every match for a few
 * iterations, and the cheapest graph the e-graph holds extracted.
 *
 * An iteration matches every rule against the e-graph as the last rebuild
 * left it, then applies the accepted matches: each rule's right side
 * added over the bound classes, its outputs merged with the matched ones.
 * A match is accepted as the other searches accept a rewrite: the right
 * side typed on the bound classes' types must be valid and give every
 * matched tensor its type, and the match must stand in the rule's proved
 * shape relation or be proved again there by the rule guard.
 *
 * Extraction is extract.c's.
 */
#include "eqsat_impl.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hash.h"

bool taso_eqsat_time_up(taso_eqsat_t *s) {
  if (!s->out_of_time && s->opt->time_limit > 0)
    s->out_of_time = taso_search_now() - s->start >= s->opt->time_limit;
  return s->out_of_time;
}

bool taso_eqsat_time_up_often(taso_eqsat_t *s) {
  return s->unclocked++ % 64 == 0 ? taso_eqsat_time_up(s) : s->out_of_time;
}

/* ---- verdicts of matches met before -------------------------------------------------- */

/* A match is fixed by its rule and the classes its variables are bound
 * to (its lhs nodes over them are one class each, by congruence), and
 * its verdict by their types, which a class never changes: so a verdict
 * is kept by rule and classes (memo), and a match met again (every
 * iteration meets the last one's) is neither typed nor judged again, nor
 * applied again once applied (a no-op: its nodes exist, its classes are
 * one). A new match takes the verdict of one met before at the same
 * types (by_types: the rule and its classes' type numbers), judged only
 * when none was: most classes share their types with many (SqueezeNet's
 * guard calls, both passes, from 66,145 to 5,282). */
enum { UNSEEN /* 0: a new entry's */, UNFIT, REFUSED, ACCEPTED, APPLIED, APART };

/* A slot holds the key's hash's high half beside the entry's offset: a
 * probe reads the entry only when they agree, and a rehash reads no entry
 * (the position is taken from the same half). The tables of matches met
 * are large, and each entry read outside the cache is a miss. */
taso_err_t taso_verdicts_find(taso_verdicts_t *m, const int32_t *key, int n, int64_t *entry,
                              bool *fresh) {
  if (2 * (m->entries + 1) > m->nslots) {
    int64_t ns = m->nslots ? 2 * m->nslots : 64;
    int64_t *v = calloc((size_t)ns, sizeof *v);
    if (!v) return taso_error(TASO_ERR_NOMEM, "eqsat: %lld verdicts", (long long)ns);
    for (int64_t k = 0; k < m->nslots; k++) {
      if (!m->slots[k]) continue;
      uint64_t h = ((uint64_t)m->slots[k] >> 32) & (uint64_t)(ns - 1);
      while (v[h])
        h = (h + 1) & (uint64_t)(ns - 1);
      v[h] = m->slots[k];
    }
    free(m->slots);
    m->slots = v;
    m->nslots = ns;
  }
  uint64_t tag = taso_hash_words(key, (size_t)n) >> 32;
  uint64_t mask = (uint64_t)m->nslots - 1, h = tag & mask;
  for (; m->slots[h]; h = (h + 1) & mask) {
    if ((uint64_t)m->slots[h] >> 32 != tag) continue;
    int64_t at = (m->slots[h] & 0xffffffff) - 1;
    const int32_t *e = &m->v[at];
    if (e[0] == n && !memcmp(e + 1, key, sizeof *key * (size_t)n)) {
      *entry = at;
      *fresh = false;
      return TASO_OK;
    }
  }
  if (m->len + n + 2 > m->cap) {
    int64_t cap = m->cap ? 2 * m->cap : 256;
    if (cap > INT32_MAX) return taso_error(TASO_ERR_LIMIT, "eqsat: over 2^31 ints of verdicts");
    int32_t *v = realloc(m->v, sizeof *v * (size_t)cap);
    if (!v) return taso_error(TASO_ERR_NOMEM, "eqsat: verdicts of %lld ints", (long long)cap);
    m->v = v;
    m->cap = cap;
  }
  int32_t *e = &m->v[m->len];
  e[0] = n;
  memcpy(e + 1, key, sizeof *key * (size_t)n);
  e[1 + n] = 0;
  m->slots[h] = (int64_t)(tag << 32 | (uint64_t)(m->len + 1));
  *entry = m->len;
  m->len += n + 2;
  m->entries++;
  *fresh = true;
  return TASO_OK;
}

void taso_verdicts_clear(taso_verdicts_t *m) {
  m->len = m->entries = 0;
  if (m->slots) memset(m->slots, 0, sizeof *m->slots * (size_t)m->nslots);
}

void taso_verdicts_free(taso_verdicts_t *m) {
  free(m->v);
  free(m->slots);
}

/* ---- matching ------------------------------------------------------------------------ */

typedef struct {
  taso_eqsat_t *s;
  int rule;
  const taso_graph_t *lhs;
  int32_t pid[64];       /* per lhs node: its parameters' number in the e-graph, or -1 */
  int32_t *cls;          /* per lhs ref: the class it is bound to, or -1 */
  bool *is_output;       /* per lhs ref: an output of lhs */
  int64_t found;         /* complete matches */
  int64_t limit;         /* past this many, matching stops (the rule is banned) */
  taso_ref_t out0, out1; /* a two-output lhs's outputs, else -1 */
  bool swaps;            /* its outputs swap (two_output_swaps) */
} matcher_t;

static taso_err_t match_from(matcher_t *m, int i);

/* The verdict of a new match: whether the right side fits it and the
 * rule is proved at its shapes. */
static taso_err_t judge(matcher_t *m, int32_t *verdict) {
  taso_eqsat_t *s = m->s;
  const taso_rule_t *rule = &s->rules->v[m->rule];
  for (int i = 0; i < m->lhs->nnodes; i++) {
    const taso_node_t *n = &m->lhs->nodes[i];
    if (n->kind == TASO_OP_INPUT) s->at.v[n->p.input].type = s->eg.type[m->cls[2 * i]];
  }
  bool fits = taso_graph_infer(&rule->rhs, &s->at, s->rhs_types) == TASO_OK;
  for (int o = 0; o < rule->rhs.noutputs && fits; o++)
    fits = taso_tensor_equal(&s->rhs_types[rule->rhs.outputs[o]],
                             &s->eg.type[m->cls[m->lhs->outputs[o]]]);
  *verdict = UNFIT;
  if (!fits) return TASO_OK;
  bool ok = false;
  if (s->opt->guard) {
    TASO_TRY(taso_rule_guard_accepts(s->opt->guard, m->rule, 0, &rule->lhs, &rule->rhs, &rule->cond,
                                     &s->at, &ok));
  } else if (taso_graph_infer(&rule->lhs, &s->at, s->lhs_types) == TASO_OK) {
    ok = taso_shape_cond_holds(&rule->cond, s->lhs_types, s->rhs_types);
  }
  *verdict = ok ? ACCEPTED : REFUSED;
  return TASO_OK;
}

/* Whether class b has a node that reads class a (a's readers walked, unless
 * a's reader bits rule b out). */
static bool reads(const taso_egraph_t *eg, int32_t a, int32_t b) {
  if (!(eg->reader_bits[a] & taso_egraph_class_bit(b))) return false;
  for (int32_t k = eg->user_at[a]; k < eg->user_at[a + 1]; k++)
    if (eg->nodes[eg->users[k]].cls == b) return true;
  return false;
}

/* Whether some class reads a and b in the same place: two of its nodes
 * alike but for that operand (the readers of a walked, each looked up
 * with b in a's place unless b's reader bits rule its class out). */
static bool read_alike(taso_egraph_t *eg, int32_t a, int32_t b) {
  for (int32_t k = eg->user_at[a]; k < eg->user_at[a + 1]; k++) {
    const taso_enode_t *u = &eg->nodes[eg->users[k]];
    if (!(eg->reader_bits[b] & taso_egraph_class_bit(u->cls))) continue; /* no reader of b there */
    for (int pos = 0; pos < taso_ops[u->kind].arity; pos++) {
      if (u->in[pos] != a) continue;
      int32_t in[3] = {u->in[0], u->in[1], u->in[2]};
      in[pos] = b;
      int32_t other = taso_egraph_lookup_pid(eg, u->kind, u->port, u->pid, in);
      if (other >= 0 && eg->nodes[other].cls == u->cls) return true;
    }
  }
  return false;
}

/* Whether classes a and b, a two-output match's, overlap: one reads the
 * other (a convolution and a merge that holds it: merged again, it is
 * computed twice), or a class reads both in the same place (split0 of two
 * merges that both hold one convolution: merged, it is computed twice).
 * Such matches are not made: each added nodes at a new shape, and a proof
 * for it, to no gain. Each check walks the readers of the class with
 * fewer. */
static bool overlapping(taso_egraph_t *eg, int32_t a, int32_t b) {
  int32_t na = eg->user_at[a + 1] - eg->user_at[a], nb = eg->user_at[b + 1] - eg->user_at[b];
  if (reads(eg, a, b) || reads(eg, b, a)) return true;
  return na <= nb ? read_alike(eg, a, b) : read_alike(eg, b, a);
}

/* Whether a two-output match's classes (both bound) may be matched: never
 * one class, and a swapping rule's at one order (see two_output_swaps);
 * checked as soon as both are bound. */
static bool ordered(const matcher_t *m) {
  int32_t a = m->cls[m->out0], b = m->cls[m->out1];
  return a != b && !(a > b && m->swaps);
}

/* A complete match, judged (or its verdict found), and kept for this
 * iteration's application when accepted and not applied before. A
 * two-output match whose classes overlap is set APART when first met and
 * skipped from then on: classes only merge and gain readers, so it would
 * stay apart (the check walks a class's readers, and most matches are met
 * again every iteration). */
static taso_err_t emit(matcher_t *m) {
  taso_eqsat_t *s = m->s;
  if (m->out0 >= 0 && !ordered(m)) return TASO_OK;
  int32_t key[1 + 64], n = 0;
  key[n++] = m->rule;
  for (int i = 0; i < m->lhs->nnodes; i++)
    if (m->lhs->nodes[i].kind == TASO_OP_INPUT) key[n++] = m->cls[2 * i];
  int64_t entry = 0;
  bool fresh = false;
  taso_verdicts_t *memo = &s->memo[m->rule];
  TASO_TRY(taso_verdicts_find(memo, key, n, &entry, &fresh));
  int32_t *verdict = &memo->v[entry + 1 + n];
  if (fresh && m->out0 >= 0 && overlapping(&s->eg, m->cls[m->out0], m->cls[m->out1]))
    *verdict = APART;
  if (*verdict == APART) return TASO_OK;
  s->res->generated++;
  if (++m->found > m->limit) return TASO_ERR_LIMIT; /* caught in match_all */
  if (*verdict == UNSEEN) {
    for (int k = 1; k < n; k++)
      key[k] = s->eg.type_id[key[k]];
    int64_t typed = 0;
    TASO_TRY(taso_verdicts_find(&s->by_types, key, n, &typed, &fresh));
    int32_t *known = &s->by_types.v[typed + 1 + n];
    if (*known == UNSEEN) {
      if (taso_eqsat_time_up(s)) return TASO_OK; /* left unjudged: the search ends */
      TASO_TRY(judge(m, known));
    }
    *verdict = *known;
  }
  s->res->invalid += *verdict == UNFIT;
  s->res->refused += *verdict == REFUSED;
  if (*verdict != ACCEPTED) return TASO_OK;
  if (s->nmatches == s->matches_cap) {
    int64_t cap = s->matches_cap ? 2 * s->matches_cap : 1024;
    int32_t *v = realloc(s->matches, sizeof *v * (size_t)(cap * s->record));
    if (!v) return taso_error(TASO_ERR_NOMEM, "%lld matches", (long long)cap);
    s->matches = v;
    s->matches_cap = cap;
  }
  int32_t *rec = &s->matches[s->nmatches++ * s->record];
  for (int k = 0; k < s->record; k++)
    rec[k] = -1;
  rec[0] = m->rule;
  rec[1] = (int32_t)entry; /* below 2^31 (taso_verdicts_find) */
  for (int o = 0; o < m->lhs->noutputs; o++)
    rec[2 + o] = m->cls[m->lhs->outputs[o]];
  for (int i = 0; i < m->lhs->nnodes; i++)
    if (m->lhs->nodes[i].kind == TASO_OP_INPUT)
      rec[2 + s->max_outputs + m->lhs->nodes[i].p.input] = m->cls[2 * i];
  return TASO_OK;
}

/* Binds lhs ref to class c, unless bound to another. */
static bool bind(matcher_t *m, taso_ref_t ref, int32_t c, taso_ref_t *undo, int *nundo) {
  if (m->cls[ref] >= 0) return m->cls[ref] == c;
  m->cls[ref] = c;
  undo[(*nundo)++] = ref;
  return true;
}

/* Lhs node i (operands bound) at e-node e, then the nodes below it. The
 * refs it binds are unbound again on the way out (undo). */
static taso_err_t try_node(matcher_t *m, int i, int port, int32_t e) {
  const taso_node_t *ln = &m->lhs->nodes[i];
  const taso_enode_t *en = &m->s->eg.nodes[e];
  if (en->dead || en->kind != ln->kind || en->port != port || en->pid != m->pid[i]) return TASO_OK;
  taso_ref_t undo[5];
  int nundo = 0;
  bool ok = bind(m, TASO_REF(i, port), en->cls, undo, &nundo);
  for (int a = 0; a < taso_ops[ln->kind].arity && ok; a++)
    ok = bind(m, ln->in[a], en->in[a], undo, &nundo);
  if (ok && m->out0 >= 0 && m->cls[m->out0] >= 0 && m->cls[m->out1] >= 0) ok = ordered(m);
  /* the operator's other output, where lhs reads it: the same operator
   * over the same operands */
  int other = 1 - port;
  if (ok && other < taso_ops[ln->kind].outputs &&
      (m->cls[TASO_REF(i, other)] >= 0 || m->is_output[TASO_REF(i, other)])) {
    int32_t c = m->s->eg.sibling[e];
    ok = c >= 0 && bind(m, TASO_REF(i, other), c, undo, &nundo);
  }
  taso_err_t err = ok ? match_from(m, i - 1) : TASO_OK;
  while (nundo > 0)
    m->cls[undo[--nundo]] = -1;
  return err;
}

/* Candidates for lhs node i at port: its bound class's nodes; else the
 * fewest of: the users of a bound operand's class, the nodes whose
 * operand's class has the kind of an unbound operator operand (the kid
 * index), every node of its kind. Each is a subsequence of the last, in
 * the same order, so the matches come in the same order. */
static taso_err_t match_op(matcher_t *m, int i, int port) {
  const taso_egraph_t *eg = &m->s->eg;
  const taso_node_t *ln = &m->lhs->nodes[i];
  const int32_t *v = eg->by_kind + eg->kind_at[ln->kind];
  int32_t n = eg->kind_at[ln->kind + 1] - eg->kind_at[ln->kind];
  int32_t c = m->cls[TASO_REF(i, port)];
  if (c >= 0) {
    if (!(eg->class_kinds[c] & (1u << ln->kind))) return TASO_OK;
    v = eg->members + eg->member_at[c];
    n = eg->member_at[c + 1] - eg->member_at[c];
  } else {
    for (int a = 0; a < taso_ops[ln->kind].arity; a++) {
      int32_t o = m->cls[ln->in[a]], k = TASO_EGRAPH_KID(ln->kind, a, 0);
      int child = m->lhs->nodes[TASO_REF_NODE(ln->in[a])].kind;
      if (o < 0 && child != TASO_OP_INPUT) { /* nodes whose operand has the child's kind */
        k += child;
        if (eg->kid_at[k + 1] - eg->kid_at[k] < n) {
          v = eg->kids + eg->kid_at[k];
          n = eg->kid_at[k + 1] - eg->kid_at[k];
        }
      } else if (o >= 0 && eg->user_at[o + 1] - eg->user_at[o] < n) {
        v = eg->users + eg->user_at[o];
        n = eg->user_at[o + 1] - eg->user_at[o];
      }
    }
  }
  for (int32_t k = 0; k < n; k++)
    TASO_TRY(try_node(m, i, port, v[k]));
  return TASO_OK;
}

/* Lhs nodes i, i-1, ..., 0 (consumers come after their operands, so a
 * node's classes are bound by its consumers before it is reached, unless
 * it is an output that nothing else reads). */
static taso_err_t match_from(matcher_t *m, int i) {
  if (i < 0) return emit(m);
  const taso_node_t *ln = &m->lhs->nodes[i];
  if (ln->kind == TASO_OP_INPUT) {
    if (m->cls[TASO_REF(i, 0)] >= 0) return match_from(m, i - 1);
    const taso_egraph_t *eg = &m->s->eg; /* an output of lhs read by nothing: any class */
    for (int32_t c = 0; c < eg->nclasses; c++) {
      if (eg->parent[c] != c) continue;
      m->cls[TASO_REF(i, 0)] = c;
      TASO_TRY(match_from(m, i - 1));
    }
    m->cls[TASO_REF(i, 0)] = -1;
    return TASO_OK;
  }
  for (int port = 0; port < taso_ops[ln->kind].outputs; port++)
    if (m->cls[TASO_REF(i, port)] >= 0) return match_op(m, i, port);
  for (int port = 0; port < taso_ops[ln->kind].outputs; port++)
    if (m->is_output[TASO_REF(i, port)]) return match_op(m, i, port);
  return TASO_OK; /* read by nothing: not in a canonical lhs */
}

static taso_err_t match_rule(taso_eqsat_t *s, int r, int64_t limit, bool *over) {
  const taso_graph_t *lhs = &s->rules->v[r].lhs;
  if (lhs->nnodes > 64)
    return taso_error(TASO_ERR_LIMIT, "eqsat: rule %d has %d nodes (at most 64)", r, lhs->nnodes);
  int32_t cls[2 * 64];
  bool is_output[2 * 64] = {false};
  for (int k = 0; k < 2 * lhs->nnodes; k++)
    cls[k] = -1;
  for (int o = 0; o < lhs->noutputs; o++)
    is_output[lhs->outputs[o]] = true;
  matcher_t m = {.s = s,
                 .rule = r,
                 .lhs = lhs,
                 .cls = cls,
                 .is_output = is_output,
                 .limit = limit,
                 .out0 = lhs->noutputs == 2 ? lhs->outputs[0] : -1,
                 .out1 = lhs->noutputs == 2 ? lhs->outputs[1] : -1,
                 .swaps = s->swaps[r]};
  for (int i = 0; i < lhs->nnodes; i++) {
    m.pid[i] = taso_egraph_params_id(&s->eg, &lhs->nodes[i].p);
    if (m.pid[i] < 0 && lhs->nodes[i].kind != TASO_OP_INPUT) { /* no node has its parameters */
      *over = false;
      return TASO_OK;
    }
  }
  taso_err_t err = match_from(&m, lhs->nnodes - 1);
  *over = m.found > limit;
  return *over ? TASO_OK : err;
}

/* ---- applying ------------------------------------------------------------------------ */

/* The rules' input table given a match's bound classes' types (vars:
 * per rules' input its class, or -1). */
static void bind_types(taso_eqsat_t *s, const int32_t *vars) {
  for (int v = 0; v < s->at.n; v++)
    if (vars[v] >= 0) s->at.v[v].type = s->eg.type[taso_egraph_find(&s->eg, vars[v])];
}

/* Room for one more application in s->app_rule and s->app_match (and,
 * in the first pass, s->rhs_cls_at). */
static taso_err_t app_room(taso_eqsat_t *s) {
  if (s->napps < s->apps_cap) return TASO_OK;
  int32_t cap = s->apps_cap ? 2 * s->apps_cap : 1024;
  int32_t *v = realloc(s->app_rule, sizeof *v * (size_t)cap);
  if (v) s->app_rule = v;
  int32_t *w = v ? realloc(s->app_match, sizeof *w * (size_t)cap * (size_t)s->record) : NULL;
  if (w) s->app_match = w;
  int64_t *at = w ? realloc(s->rhs_cls_at, sizeof *at * (size_t)cap) : NULL;
  if (!at) return taso_error(TASO_ERR_NOMEM, "%d rule applications", cap);
  s->rhs_cls_at = at;
  s->apps_cap = cap;
  return TASO_OK;
}

/* Keeps a first-pass application's rhs classes (cls, 2 per rhs node) for
 * a replay (replay.c). */
static taso_err_t keep_rhs_classes(taso_eqsat_t *s, const int32_t *cls, int n) {
  if (s->rhs_cls_len + n > s->rhs_cls_cap) {
    int64_t cap = s->rhs_cls_cap ? 2 * s->rhs_cls_cap : 16384;
    while (cap < s->rhs_cls_len + n)
      cap *= 2;
    int32_t *v = realloc(s->rhs_cls, sizeof *v * (size_t)cap);
    if (!v)
      return taso_error(TASO_ERR_NOMEM, "eqsat: %lld classes of applications", (long long)cap);
    s->rhs_cls = v;
    s->rhs_cls_cap = cap;
  }
  s->rhs_cls_at[s->napps] = s->rhs_cls_len;
  memcpy(&s->rhs_cls[s->rhs_cls_len], cls, sizeof *cls * (size_t)n);
  s->rhs_cls_len += n;
  return TASO_OK;
}

/* One accepted match: rhs added over its bound classes and merged with
 * the matched classes. *changed: the e-graph gained a node or a merge. */
static taso_err_t apply(taso_eqsat_t *s, const int32_t *rec, bool *changed) {
  taso_verdicts_t *memo = &s->memo[rec[0]];
  memo->v[rec[1] + 1 + memo->v[rec[1]]] = APPLIED;
  return taso_eqsat_apply(s, rec, NULL, changed);
}

taso_err_t taso_eqsat_apply(taso_eqsat_t *s, const int32_t *rec, int32_t *classes, bool *changed) {
  const taso_rule_t *rule = &s->rules->v[rec[0]];
  const taso_graph_t *rhs = &rule->rhs;
  const int32_t *vars = rec + 2 + s->max_outputs;
  bind_types(s, vars);
  TASO_TRY(taso_graph_infer(rhs, &s->at, s->rhs_types)); /* it did at the match */
  int32_t buf[2 * 64];
  int32_t *cls = classes ? classes : buf;
  int32_t app = s->napps;
  *changed = false;
  for (int i = 0; i < rhs->nnodes; i++) {
    const taso_node_t *n = &rhs->nodes[i];
    cls[2 * i] = cls[2 * i + 1] = -1;
    if (n->kind == TASO_OP_INPUT) {
      cls[2 * i] = vars[n->p.input];
      continue;
    }
    int32_t in[3] = {-1, -1, -1};
    for (int a = 0; a < taso_ops[n->kind].arity; a++)
      in[a] = cls[n->in[a]];
    for (int port = 0; port < taso_ops[n->kind].outputs; port++) {
      bool added;
      TASO_TRY(taso_egraph_add_pid(&s->eg, n->kind, port, &n->p, &s->rhs_pid[s->pid_at[rec[0]] + i],
                                   in, &s->rhs_types[2 * i + port], app, &cls[2 * i + port],
                                   &added));
      *changed |= added;
    }
  }
  for (int o = 0; o < rhs->noutputs; o++) {
    bool merged;
    TASO_TRY(taso_egraph_union(&s->eg, rec[2 + o], cls[rhs->outputs[o]], &merged));
    *changed |= merged;
  }
  if (!*changed) return TASO_OK;
  TASO_TRY(app_room(s));
  if (s->first_pass) TASO_TRY(keep_rhs_classes(s, cls, 2 * rhs->nnodes));
  memcpy(&s->app_match[(size_t)s->napps * (size_t)s->record], rec, sizeof *rec * (size_t)s->record);
  s->app_rule[s->napps++] = rec[0];
  return TASO_OK;
}

/* A rule's matches in an iteration (complete e-matches, before the type
 * and proof checks), kept when at most MATCH_LIMIT times 2^bans; past
 * that matching stops, its matches are dropped and it sits out BAN_LENGTH
 * times 2^bans iterations (egg's backoff scheduler, Tensat's setting):
 * a rule that matches everywhere (a commutation, an identity that adds a
 * node) would otherwise fill the e-graph before the others apply.
 * A two-output rule past its limit keeps the matches found first and sits
 * out as well: matching walks the nodes oldest first (the model's own,
 * then the earliest rewrites'), and those are the merges that pay (of the
 * model's convolutions, then of a merged one with a third). Dropped, the
 * merge of two convolutions had its second iteration only after the
 * fifteenth on Inception-v3. */
enum { MATCH_LIMIT = 1000, BAN_LENGTH = 5 };

/* Rules are matched again only where they can match anew: a match whose
 * e-nodes are all as they were at the rebuild before the last (none new,
 * none in a class that grew or reading one: egraph.h's fresh_kinds) was
 * met then, and judged, so a rule whose last matching was complete and
 * none of whose operator kinds has a fresh node is not matched (NasRNN's
 * iterations 3 to 6 added 46 nodes to 12,836). A rule with an lhs output
 * that is an input (any class) is matched every time. */

static taso_err_t match_all(taso_eqsat_t *s, int it, bool *banned_any) {
  uint32_t kinds = 0;
  for (int32_t k = 0; k < TASO_OP_COUNT; k++)
    if (s->eg.kind_at[k + 1] > s->eg.kind_at[k]) kinds |= 1u << k;
  s->nmatches = 0;
  *banned_any = false;
  for (int r = 0; r < s->rules->n && !taso_eqsat_time_up_often(s); r++) {
    if (s->rules->v[r].kinds & ~kinds) continue;
    if (it < s->banned_until[r]) {
      *banned_any = true;
      continue;
    }
    if (s->complete[r] && !(s->rules->v[r].kinds & s->eg.fresh_kinds)) continue; /* met them all */
    int64_t before = s->nmatches;
    int shift = s->bans[r] < 20 ? s->bans[r] : 20;
    bool over;
    TASO_TRY(match_rule(s, r, (int64_t)MATCH_LIMIT << shift, &over));
    s->complete[r] = !over && !s->any_class[r];
    if (!over) continue;
    if (s->rules->v[r].lhs.noutputs < 2) s->nmatches = before;
    s->banned_until[r] = it + (BAN_LENGTH << shift);
    s->bans[r]++;
    s->res->eqsat_bans++;
    *banned_any = true;
  }
  return TASO_OK;
}

/* Marks the end of a first-pass iteration's applications (replay.c). */
static taso_err_t keep_iteration(taso_eqsat_t *s) {
  if (s->niters == s->iters_cap) {
    int cap = s->iters_cap ? 2 * s->iters_cap : 32;
    int32_t *v = realloc(s->iter_apps, sizeof *v * (size_t)cap);
    if (!v) return taso_error(TASO_ERR_NOMEM, "eqsat: %d iterations", cap);
    s->iter_apps = v;
    s->iters_cap = cap;
  }
  s->iter_apps[s->niters++] = s->napps;
  return TASO_OK;
}

/* Saturation: iterations until nothing changes (no rule banned) or a
 * bound is reached. */
static taso_err_t saturate(taso_eqsat_t *s) {
  taso_search_result_t *res = s->res;
  for (int it = 0; it < s->opt->eqsat_iterations; it++) {
    bool banned_any;
    TASO_TRY(match_all(s, it, &banned_any));
    bool changed = false;
    for (int64_t k = 0; k < s->nmatches && !taso_eqsat_time_up_often(s); k++) {
      if (s->eg.nnodes >= s->opt->eqsat_nodes) {
        res->eqsat_stop = "node limit";
        break;
      }
      bool c;
      TASO_TRY(apply(s, &s->matches[k * s->record], &c));
      changed |= c;
      res->queued += c;
    }
    TASO_TRY(taso_egraph_rebuild(&s->eg, s->prob->is_weight));
    if (s->first_pass) TASO_TRY(keep_iteration(s));
    res->explored = res->eqsat_iterations = it + 1;
    res->enodes = s->eg.live;
    res->eclasses = s->eg.live_classes;
    if (s->opt->progress && !s->first_pass)
      s->opt->progress(s->opt->progress_ctx, it + 1, s->eg.live, res->cost_before,
                       taso_search_now() - s->start);
    if (taso_eqsat_time_up(s)) res->eqsat_stop = "time limit";
    if (res->eqsat_stop) return TASO_OK;
    if (!changed && !banned_any) {
      res->eqsat_stop = "saturated";
      return TASO_OK;
    }
    for (int r = 0; r < s->rules->n && !changed; r++) /* nothing to do but banned rules */
      s->banned_until[r] = 0;
  }
  res->eqsat_stop = "iterations";
  return TASO_OK;
}

/* ---- the search ---------------------------------------------------------------------- */

/* Measuring what the result uses first. An e-graph's nodes have many
 * more configurations than any graph it holds (Inception-v3's first run
 * spent its 60 s measuring them, and found nothing), and most are ruled
 * out by a rough figure. So, unless opt->eqsat_measure_all, the cost cache
 * guesses what it lacks (cost.h: taso_cost_cache_set_guess, on the low
 * side of the figures of the same kind of operator), the extraction runs
 * on those figures and the steps of its result are measured; when one was
 * a guess, the extraction is made again, until the result holds no guess.
 * Then the other guesses are measured, cheapest first, for at most a
 * quarter of the time left (a guess cannot see what one measurement shows: a matmul
 * eight times as wide runs on both cores where NasRNN's own ran on one),
 * but none above the result's whole cost (BERT's e-graph concatenates its
 * 50 MB weights, 11 ms a concat where the model costs 5), and the
 * extraction is made again the same way. The result's cost is its
 * measured one. With opt->eqsat_measure_all every miss is measured until
 * the time is up and guessed after it, the result's steps then measured. */
static taso_err_t extract(taso_eqsat_t *s, taso_graph_t *best, double *ms, bool *used) {
  bool guess = !s->opt->eqsat_measure_all, rest_measured = false;
  taso_tensor_t *types = NULL;
  taso_err_t err = TASO_OK;
  while (err == TASO_OK) {
    taso_cost_stats_t st;
    taso_cost_cache_stats(s->costs, &st);
    int64_t guesses = st.guesses;
    taso_cost_cache_set_guess(s->costs, guess); /* also set once the time is up (extract.c) */
    err = taso_eqsat_extract(s, best, ms, used);
    taso_cost_cache_set_guess(s->costs, false);
    taso_cost_cache_stats(s->costs, &st);
    if (err != TASO_OK || *ms == INFINITY || (!guess && st.guesses == guesses)) break;
    int64_t measured = st.measured;
    types = realloc(types, sizeof *types * 2 * (size_t)(best->nnodes + 1));
    if (!types) err = taso_error(TASO_ERR_NOMEM, "types of %d nodes", best->nnodes);
    if (err == TASO_OK) err = taso_graph_infer(best, s->prob->inputs, types);
    if (err == TASO_OK) err = taso_cost_of_graph(s->costs, best, types, s->prob->is_weight, ms);
    if (err != TASO_OK || !guess || taso_eqsat_time_up(s)) break;
    taso_cost_cache_stats(s->costs, &st);
    if (st.measured == measured) { /* the result held no guess */
      if (rest_measured || st.guessed == 0) break;
      rest_measured = true;
      double now = taso_search_now(), limit = s->opt->time_limit;
      int64_t left;
      err = taso_cost_measure_guesses(s->costs, *ms,
                                      limit > 0 ? now + (s->start + limit - now) / 4 : -1, &left);
      if (err != TASO_OK || left == st.guessed) break;
    }
    taso_eqsat_forget_guesses(s); /* the node costs of guesses are costed again */
    s->res->eqsat_remeasured++;
  }
  free(types);
  return err;
}

/* Two-output rules match in pairs: a rule whose lhs is itself with its
 * outputs swapped once its inputs are renamed (two convolutions of one
 * input merged into one: either may come first) matches at (A, B) and at
 * (B, A), and the two applications add the same computation (the weights
 * concatenated in the other order). Such a rule is matched at one order
 * of its output classes only, and no two-output rule at one class for
 * both outputs (a tensor merged with itself). Without this, every pair of
 * convolutions over one input matched twice, and the merge of merged
 * convolutions with their own parts, passed the backoff scheduler's limit
 * by the second iteration: the rule sat out the rest (Inception-v3 kept
 * the merges of pairs alone). The order kept is the classes' (older
 * first), which may stand outside the proved shape relation where the
 * other stands in it (the narrower weight first): the guard then proves
 * the rule at it, once per relation. A swap is looked for among the
 * renamings of lhs's inputs (at most 6 of them: 720 renamings). */
static taso_err_t two_output_swaps(const taso_graph_t *lhs, bool *swaps) {
  *swaps = false;
  int vars[6], nvars = 0;
  for (int i = 0; i < lhs->nnodes; i++)
    if (lhs->nodes[i].kind == TASO_OP_INPUT) {
      if (nvars == 6) return TASO_OK;
      vars[nvars++] = lhs->nodes[i].p.input;
    }
  int perm[6] = {0, 1, 2, 3, 4, 5};
  taso_graph_t g;
  taso_graph_init(&g);
  taso_err_t err = TASO_OK;
  for (bool more = true; more && !*swaps && err == TASO_OK;) {
    err = taso_graph_copy(&g, lhs);
    for (int i = 0; i < g.nnodes && err == TASO_OK; i++)
      for (int k = 0; k < nvars && g.nodes[i].kind == TASO_OP_INPUT; k++)
        if (lhs->nodes[i].p.input == vars[k]) {
          g.nodes[i].p.input = vars[perm[k]];
          break;
        }
    taso_ref_t first = g.outputs[0];
    g.outputs[0] = g.outputs[1];
    g.outputs[1] = first;
    if (err == TASO_OK) err = taso_graph_canonicalize(&g);
    if (err == TASO_OK) *swaps = taso_graph_compare(&g, lhs) == 0;
    /* the next permutation in lexicographic order */
    int i = nvars - 2;
    while (i >= 0 && perm[i] > perm[i + 1])
      i--;
    more = i >= 0;
    if (more) {
      int j = nvars - 1;
      while (perm[j] < perm[i])
        j--;
      int t = perm[i];
      perm[i] = perm[j];
      perm[j] = t;
      for (int a = i + 1, b = nvars - 1; a < b; a++, b--) {
        t = perm[a];
        perm[a] = perm[b];
        perm[b] = t;
      }
    }
  }
  taso_graph_free(&g);
  return err;
}

/* The e-graph of the input graph start alone (s->eg empty); its cost
 * into *cost_ms unless NULL. */
static taso_err_t input_egraph(taso_eqsat_t *s, const taso_graph_t *start, double *cost_ms) {
  taso_tensor_t *types = malloc(sizeof *types * 2 * (size_t)(start->nnodes + 1));
  if (!types) return taso_error(TASO_ERR_NOMEM, "types of %d nodes", start->nnodes);
  taso_err_t err = taso_graph_infer(start, s->prob->inputs, types);
  if (err == TASO_OK && cost_ms)
    err = taso_cost_of_graph(s->costs, start, types, s->prob->is_weight, cost_ms);
  if (err == TASO_OK)
    err = taso_egraph_of_graph(&s->eg, start, types, s->prob->is_weight, s->roots);
  free(types);
  return err;
}

static taso_err_t setup(taso_eqsat_t *s, taso_graph_t *start) {
  int nodes = 1;
  s->max_outputs = 1;
  for (int r = 0; r < s->rules->n; r++) {
    const taso_rule_t *rule = &s->rules->v[r];
    nodes = rule->lhs.nnodes > nodes ? rule->lhs.nnodes : nodes;
    nodes = rule->rhs.nnodes > nodes ? rule->rhs.nnodes : nodes;
    s->max_outputs = rule->lhs.noutputs > s->max_outputs ? rule->lhs.noutputs : s->max_outputs;
  }
  if (nodes > 64)
    return taso_error(TASO_ERR_LIMIT, "eqsat: a rule side of %d nodes (at most 64)", nodes);
  s->record = 2 + s->max_outputs + s->rules->inputs.n;
  s->lhs_types = malloc(sizeof *s->lhs_types * 2 * (size_t)(nodes + 1));
  s->rhs_types = malloc(sizeof *s->rhs_types * 2 * (size_t)(nodes + 1));
  s->at.v = malloc(sizeof *s->at.v * (size_t)(s->rules->inputs.n + 1));
  s->roots = malloc(sizeof *s->roots * (size_t)(s->prob->graph->noutputs + 1));
  s->banned_until = calloc((size_t)s->rules->n + 1, sizeof *s->banned_until);
  s->bans = calloc((size_t)s->rules->n + 1, sizeof *s->bans);
  s->swaps = calloc((size_t)s->rules->n + 1, sizeof *s->swaps);
  s->complete = calloc((size_t)s->rules->n + 1, sizeof *s->complete);
  s->any_class = calloc((size_t)s->rules->n + 1, sizeof *s->any_class);
  s->memo = calloc((size_t)s->rules->n + 1, sizeof *s->memo);
  s->pid_at = malloc(sizeof *s->pid_at * (size_t)(s->rules->n + 1));
  if (s->pid_at) {
    s->pid_at[0] = 0;
    for (int r = 0; r < s->rules->n; r++)
      s->pid_at[r + 1] = s->pid_at[r] + s->rules->v[r].rhs.nnodes;
    s->rhs_pid = malloc(sizeof *s->rhs_pid * (size_t)(s->pid_at[s->rules->n] + 1));
    for (int32_t k = 0; s->rhs_pid && k < s->pid_at[s->rules->n]; k++)
      s->rhs_pid[k] = -1;
  }
  if (!s->lhs_types || !s->rhs_types || !s->at.v || !s->roots || !s->banned_until || !s->bans ||
      !s->swaps || !s->complete || !s->any_class || !s->pid_at || !s->rhs_pid || !s->memo)
    return taso_error(TASO_ERR_NOMEM, "eqsat");
  for (int r = 0; r < s->rules->n; r++) {
    const taso_graph_t *lhs = &s->rules->v[r].lhs;
    for (int o = 0; o < lhs->noutputs; o++)
      s->any_class[r] |= lhs->nodes[TASO_REF_NODE(lhs->outputs[o])].kind == TASO_OP_INPUT;
  }
  for (int r = 0; r < s->rules->n; r++)
    if (s->rules->v[r].lhs.noutputs == 2)
      TASO_TRY(two_output_swaps(&s->rules->v[r].lhs, &s->swaps[r]));
  memcpy(s->at.v, s->rules->inputs.v, sizeof *s->at.v * (size_t)s->rules->inputs.n);
  s->at.n = s->rules->inputs.n;
  TASO_TRY(taso_graph_copy(start, s->prob->graph));
  TASO_TRY(taso_graph_canonicalize(start));
  return input_egraph(s, start, &s->res->cost_before);
}

taso_err_t taso_eqsat_restart(taso_eqsat_t *s, const taso_graph_t *start) {
  taso_search_result_t *r = s->res;
  taso_egraph_clear(&s->eg); /* its memory kept: the second pass grows as large */
  s->napps = 0;
  s->nmatches = 0;
  for (int r = 0; r < s->rules->n; r++) /* the second pass's verdicts are not the first's */
    taso_verdicts_clear(&s->memo[r]);
  taso_verdicts_clear(&s->by_types);
  memset(s->banned_until, 0, sizeof *s->banned_until * (size_t)s->rules->n);
  memset(s->bans, 0, sizeof *s->bans * (size_t)s->rules->n);
  memset(s->complete, 0, sizeof *s->complete * (size_t)s->rules->n);
  r->generated = r->invalid = r->refused = r->queued = r->eqsat_bans = r->eqsat_moves = 0;
  r->eqsat_stop = NULL;
  return input_egraph(s, start, NULL);
}

/* Whether application record rec rewrote a class that flags marks. */
static bool into(taso_eqsat_t *s, const int32_t *rec, const bool *flags) {
  for (int o = 0; o < s->rules->v[rec[0]].lhs.noutputs; o++)
    if (flags[taso_egraph_find(&s->eg, rec[2 + o])]) return true;
  return false;
}

/* Widening: the classes that the first pass's result computes (used, a
 * flag per class) and then, until none is added, the classes that an
 * application into a marked class bound its inputs to. A match found in a
 * class the result reads may have needed a rewrite below it, in a class
 * the result does not use (the match's operands met the lhs's shape only
 * there): without that rewrite's relation decided, the second pass never
 * makes the match (SqueezeNet on measured costs: x1.025 where the first
 * pass found x1.29, and x1.30 with every relation proved). Deciding the
 * widened classes' relations always doubled the proofs (Inception-v3:
 * 1,007 against 344, for the same result), so they are kept for a third
 * pass, run only when the second falls short of the first (s->later). */
static void widen_used(taso_eqsat_t *s, bool *used) {
  for (bool more = true; more;) {
    more = false;
    for (int32_t a = 0; a < s->napps; a++) {
      const int32_t *rec = &s->app_match[(size_t)a * (size_t)s->record];
      const int32_t *vars = rec + 2 + s->max_outputs;
      bool touches = into(s, rec, used);
      for (int v = 0; v < s->at.n && touches; v++) {
        int32_t c = vars[v] >= 0 ? taso_egraph_find(&s->eg, vars[v]) : -1;
        if (c >= 0 && !used[c]) more = used[c] = true;
      }
    }
  }
}

/* Keeps application record rec's rule and bound types in rel. */
static taso_err_t keep_relation(taso_eqsat_t *s, taso_eqsat_relations_t *rel, const int32_t *rec) {
  int64_t need = rel->len + 2 + (int64_t)s->at.n * (2 + TASO_MAX_RANK);
  if (need > rel->cap) {
    int64_t cap = rel->cap ? 2 * rel->cap : 4096;
    while (cap < need)
      cap *= 2;
    int32_t *v = realloc(rel->v, sizeof *v * (size_t)cap);
    if (!v) return taso_error(TASO_ERR_NOMEM, "eqsat: %lld words of matches", (long long)cap);
    rel->v = v;
    rel->cap = cap;
  }
  int32_t *w = &rel->v[rel->len], n = 2;
  const int32_t *vars = rec + 2 + s->max_outputs;
  w[0] = rec[0];
  w[1] = 0;
  for (int v = 0; v < s->at.n; v++) {
    if (vars[v] < 0) continue;
    const taso_tensor_t *t = &s->eg.type[taso_egraph_find(&s->eg, vars[v])];
    w[n++] = v;
    w[n++] = t->rank;
    memcpy(&w[n], t->dim, sizeof t->dim);
    n += TASO_MAX_RANK;
    w[1]++;
  }
  rel->len += n;
  return TASO_OK;
}

/* Decides the relations kept in rel, and empties it; false in *any when
 * there were none. */
static taso_err_t decide_relations(taso_eqsat_t *s, taso_eqsat_relations_t *rel, bool *any) {
  *any = rel->len > 0;
  taso_err_t err = TASO_OK;
  for (int64_t k = 0; k < rel->len && err == TASO_OK && !taso_eqsat_time_up(s);) {
    const int32_t *w = &rel->v[k];
    const taso_rule_t *rule = &s->rules->v[w[0]];
    int n = 2;
    for (int b = 0; b < w[1]; b++, n += 2 + TASO_MAX_RANK)
      s->at.v[w[n]].type = taso_tensor_make(w[n + 1], &w[n + 2]);
    bool ok;
    err = taso_rule_guard_accepts(s->opt->guard, w[0], 0, &rule->lhs, &rule->rhs, &rule->cond,
                                  &s->at, &ok);
    s->res->eqsat_asked++;
    k += n;
  }
  rel->len = 0;
  return err;
}

/* Proofs where they pay. With a guard, every match outside its rule's
 * proved relation waits for a proof of that relation (tens of ms each),
 * and a saturation meets hundreds of relations, most at rewrites no good
 * graph uses (Inception-v3: 1,509 proofs in its first 60 s). So a first
 * pass saturates with the guard hopeful (every typed match accepted
 * unless its relation was refused before, by this run or one whose
 * verdicts were loaded; nothing proved) and extracts; the relations of the
 * applications that rewrote a tensor its result computes are then decided
 * (proved or refused, and kept by the guard like any verdict). When that
 * result costs no less than the input, nothing is decided and there is
 * no second pass: the result is the input (squeezenet made 196 proofs,
 * 1.3 s, and a second pass, to find its input again). The second pass
 * accepts a subset of the first's matches (those of proved relations), so
 * it could beat the first only through the bounds (bans, the node limit)
 * or the greedy extraction; on the eight models it never did. The second
 * pass, the search proper, starts again from the input with the guard
 * answering from its verdicts alone: a match in its proved relation or in
 * one now proved is applied, any other refused unproved. Only the second
 * pass's result is kept, so every rewrite in it stands in a proved
 * relation as before; what the first pass found but the second cannot
 * reach is lost (opt->eqsat_prove_all proves every relation met instead).
 * Since it would find the first's result anyway, the second pass is first
 * tried as a replay (replay.c: the first's proved applications made again
 * at their matches, no matching, no extraction), which keeps that result
 * when it is among them; it saturates only when not (saturate_from).
 * (Running the first pass again without the relations its proofs refused
 * was tried: on NasNet-A three such passes took 40 s where one took 12,
 * for the same result.) */
static taso_err_t first_pass(taso_eqsat_t *s, bool replay) {
  taso_rule_guard_t *g = s->opt->guard;
  s->first_pass = true;
  s->rhs_cls_len = 0;
  s->niters = 0;
  taso_rule_guard_hopeful(g, true);
  taso_err_t err = saturate(s);
  taso_rule_guard_hopeful(g, false);
  bool *used = err == TASO_OK ? calloc((size_t)s->eg.nclasses + 1, sizeof *used) : NULL;
  if (err == TASO_OK && !used)
    err = taso_error(TASO_ERR_NOMEM, "eqsat: %d classes", s->eg.nclasses);
  taso_graph_t *best = &s->hoped;
  double ms = INFINITY;
  double extract_from = taso_search_now();
  if (err == TASO_OK) err = extract(s, best, &ms, used);
  s->res->extract_seconds = taso_search_now() - extract_from; /* the second pass's, if one */
  s->res->eqsat_optimistic_ms = ms < INFINITY ? ms : 0;
  bool gains = ms < s->from_ms; /* else nothing worth a proof */
  bool *wide = gains && err == TASO_OK ? malloc((size_t)s->eg.nclasses + 1) : NULL;
  if (wide) {
    memcpy(wide, used, (size_t)s->eg.nclasses + 1);
    widen_used(s, wide);
  } else if (gains && err == TASO_OK) {
    err = taso_error(TASO_ERR_NOMEM, "eqsat: %d classes", s->eg.nclasses);
  }
  s->later.len = s->rest.len = 0;
  bool *direct = gains && replay && err == TASO_OK ? calloc((size_t)s->napps + 1, 1) : NULL;
  if (direct) taso_eqsat_graph_apps(s, best, direct);
  for (int32_t a = 0; a < s->napps && gains && err == TASO_OK && !taso_eqsat_time_up(s); a++) {
    const int32_t *rec = &s->app_match[(size_t)a * (size_t)s->record];
    const taso_rule_t *rule = &s->rules->v[rec[0]];
    if (!into(s, rec, used)) {
      if (into(s, rec, wide)) err = keep_relation(s, &s->later, rec);
      continue;
    }
    if (direct && !direct[a]) { /* decided if the replay falls short without it */
      err = keep_relation(s, &s->rest, rec);
      continue;
    }
    bind_types(s, rec + 2 + s->max_outputs);
    bool ok;
    err = taso_rule_guard_accepts(g, rec[0], 0, &rule->lhs, &rule->rhs, &rule->cond, &s->at, &ok);
    s->res->eqsat_asked++;
  }
  free(direct);
  free(wide);
  free(used);
  s->first_pass = false;
  s->res->eqsat_one_pass = err == TASO_OK && !gains;
  if (s->res->eqsat_one_pass) s->res->eqsat_exact = TASO_EXACT_ONE_PASS; /* a second pass's */
  return err;
}

/* A round's gain that lets another round start; the shortfall of a
 * second pass's result against the first's that makes a third pass. */
#define ROUND_GAIN 0.01

/* A pass that applies proved relations alone (cached-only guard, when
 * two_passes), then its extraction into g at *ms (its time added to
 * extract_seconds). */
static taso_err_t proved_pass(taso_eqsat_t *s, bool two_passes, taso_graph_t *g, double *ms) {
  if (two_passes) taso_rule_guard_cached_only(s->opt->guard, true);
  taso_err_t err = saturate(s);
  if (two_passes) taso_rule_guard_cached_only(s->opt->guard, false);
  double extract_from = taso_search_now();
  if (err == TASO_OK) err = extract(s, g, ms, NULL);
  s->res->extract_seconds += taso_search_now() - extract_from;
  return err;
}

/* One round from graph from (s->eg its e-graph alone): the passes, then
 * the extraction into extracted at *ms (INFINITY: none). */
static taso_err_t saturate_from(taso_eqsat_t *s, const taso_graph_t *from, taso_graph_t *extracted,
                                double *ms) {
  const taso_search_options_t *opt = s->opt;
  bool two_passes = opt->guard && !opt->eqsat_prove_all;
  s->res->eqsat_third_pass = false;
  s->res->eqsat_replayed = -1;
  bool replay = two_passes && opt->eqsat_exact_seconds <= 0;
  taso_err_t err = two_passes ? first_pass(s, replay) : TASO_OK;
  bool second = !s->res->eqsat_one_pass; /* else its result is the input */
  *ms = INFINITY;
  if (err == TASO_OK && second && replay) {
    taso_search_result_t first = *s->res; /* its figures, reported if the replay holds */
    taso_eqsat_keep_first(s);
    bool holds = false, more = true;
    for (int k = 0; k < 2 && err == TASO_OK && !holds && more; k++) {
      if (k > 0) err = decide_relations(s, &s->rest, &more); /* the rest under its result */
      if (err == TASO_OK && more) err = taso_eqsat_replay(s, from, &holds);
    }
    taso_eqsat_drop_first(s);
    if (err == TASO_OK && holds) {
      int64_t made = s->res->eqsat_replayed, asked = s->res->eqsat_asked;
      *s->res = first;
      s->res->eqsat_replayed = made;
      s->res->eqsat_asked = asked;
      s->res->eqsat_exact = TASO_EXACT_OFF; /* a second pass's: none with a replay */
      *ms = s->res->eqsat_optimistic_ms;
      return taso_graph_copy(extracted, &s->hoped);
    }
    if (err == TASO_OK) err = decide_relations(s, &s->rest, &more); /* as without a replay */
    s->res->eqsat_replayed = -1;                                    /* it saturates */
  }
  if (err == TASO_OK && second && two_passes) err = taso_eqsat_restart(s, from);
  if (second) s->res->extract_seconds = 0; /* the second pass's (and the third's) */
  if (err == TASO_OK && second) err = proved_pass(s, two_passes, extracted, ms);
  double hoped = s->res->eqsat_optimistic_ms;
  if (err == TASO_OK && second && hoped > 0 && *ms > (1 + ROUND_GAIN) * hoped &&
      !taso_eqsat_time_up(s)) { /* the third pass (widen_used) */
    bool any;
    err = decide_relations(s, &s->later, &any);
    if (err == TASO_OK && any) err = taso_eqsat_restart(s, from);
    taso_graph_t g;
    taso_graph_init(&g);
    double third = INFINITY;
    if (err == TASO_OK && any) err = proved_pass(s, two_passes, &g, &third);
    if (err == TASO_OK && third < *ms) {
      *ms = third;
      err = taso_graph_copy(extracted, &g);
    }
    s->res->eqsat_third_pass = any;
    taso_graph_free(&g);
  }
  return err;
}

/* Rounds. A saturation bounded by its node limit holds few deep rewrites:
 * NasRNN's eight matmuls of one input merge into one through every subset
 * and order of them, and 50,000 nodes held merges of two or three, x1.88
 * on measured costs where the backtracking search found x2.95. A second
 * saturation from the first's result starts with those merges made: x3.08.
 * So while a round's result is cheaper than the graph it started from by
 * ROUND_GAIN or more, and the time and opt->eqsat_rounds allow, the next
 * round starts from it (a saturated e-graph holds every graph equal to its
 * start: no round after it; after a smaller gain, the next round cost as
 * much as the first to find nothing: ResNeXt-50, 0.06%). The path holds
 * the input and each round's result; the e-graph's figures are the last
 * round's that gained. */
taso_err_t taso_search_eqsat(const taso_search_problem_t *prob, const taso_rules_t *rules,
                             taso_cost_cache_t *costs, const taso_search_options_t *opt,
                             taso_search_result_t *result) {
  TASO_TRY(taso_search_result_start(result, rules->n));
  taso_eqsat_t s = {.prob = prob, .rules = rules, .costs = costs, .opt = opt, .res = result};
  taso_graph_init(&s.hoped);
  s.start = taso_search_now();
  double cpu = taso_search_cpu_now();
  taso_graph_t start, extracted;
  taso_graph_init(&start);
  taso_graph_init(&extracted);
  taso_err_t err = setup(&s, &start);
  int rounds = opt->eqsat_rounds > 1 ? opt->eqsat_rounds : 1;
  int64_t *fired = calloc((size_t)rules->n + 1, sizeof *fired);
  result->path = calloc((size_t)rounds + 1, sizeof *result->path);
  result->path_rules = malloc(sizeof *result->path_rules * ((size_t)rounds + 1));
  if (err == TASO_OK && (!fired || !result->path || !result->path_rules))
    err = taso_error(TASO_ERR_NOMEM, "eqsat path");
  if (err == TASO_OK) {
    for (int k = 0; k <= rounds; k++)
      result->path_rules[k] = -1; /* no single rule made a round's result */
    taso_graph_init(&result->path[0]);
    err = taso_graph_copy(&result->path[0], &start);
  }
  s.from_ms = result->cost_before;
  double extracting = 0;
  taso_search_result_t kept = *result; /* as the last round that gained left it */
  bool gained = false;                 /* the last round run */
  for (int round = 0; round < rounds && err == TASO_OK; round++) {
    const taso_graph_t *from = &result->path[result->steps];
    if (round > 0) err = taso_eqsat_restart(&s, from);
    double ms = INFINITY;
    if (err == TASO_OK) err = saturate_from(&s, from, &extracted, &ms);
    result->eqsat_rounds_run = round + 1;
    extracting += result->extract_seconds;
    gained = err == TASO_OK && ms < s.from_ms && taso_graph_compare(&extracted, from) != 0;
    if (!gained) break;
    for (int r = 0; r < rules->n; r++)
      fired[r] += result->fired[r];
    taso_graph_init(&result->path[result->steps + 1]);
    err = taso_graph_copy(&result->path[++result->steps], &extracted);
    bool small = ms > (1 - ROUND_GAIN) * s.from_ms;
    s.from_ms = ms;
    kept = *result;
    if (small || taso_eqsat_time_up(&s) ||
        (result->eqsat_stop && !strcmp(result->eqsat_stop, "saturated")))
      break;
  }
  if (err == TASO_OK && result->steps > 0 && !gained) { /* its figures: the round kept's */
    int run = result->eqsat_rounds_run, remeasured = result->eqsat_remeasured;
    *result = kept; /* the same arrays, path and steps */
    result->eqsat_rounds_run = run;
    result->eqsat_remeasured = remeasured;
  }
  if (err == TASO_OK) {
    memcpy(result->fired, fired, sizeof *fired * (size_t)rules->n);
    result->cost_after = s.from_ms;
    result->extract_seconds = extracting;
    err = taso_graph_copy(&result->best, &result->path[result->steps]);
  }
  free(fired);
  taso_cost_stats_t st;
  taso_cost_cache_stats(costs, &st);
  result->eqsat_guessed = st.guessed;
  result->timed_out = s.out_of_time;
  result->seconds = taso_search_now() - s.start;
  result->cpu_seconds = taso_search_cpu_now() - cpu;
  taso_graph_free(&start);
  taso_graph_free(&extracted);
  taso_egraph_free(&s.eg);
  free(s.roots);
  free(s.at.v);
  free(s.lhs_types);
  free(s.rhs_types);
  free(s.matches);
  free(s.app_rule);
  free(s.app_match);
  free(s.banned_until);
  for (int r = 0; s.memo && r < rules->n; r++)
    taso_verdicts_free(&s.memo[r]);
  free(s.memo);
  taso_verdicts_free(&s.by_types);
  taso_verdicts_free(&s.node_costs);
  free(s.costs_ms);
  free(s.guessed_at);
  free(s.later.v);
  free(s.rest.v);
  taso_eqsat_drop_first(&s);
  free(s.rhs_cls);
  free(s.rhs_cls_at);
  free(s.iter_apps);
  taso_graph_free(&s.hoped);
  free(s.bans);
  free(s.swaps);
  free(s.complete);
  free(s.any_class);
  free(s.pid_at);
  free(s.rhs_pid);
  if (err != TASO_OK) taso_search_result_free(result);
  return err;
}
