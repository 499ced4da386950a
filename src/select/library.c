/* Library descriptions: reading, checking with Z3, and deciding calls. */
#define _POSIX_C_SOURCE 200809L
#include "library.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <z3.h>

#include "z3ctx.h"

#define MAX_CALLS 64
#define CACHE_SLOTS 4096 /* answers kept; a model needs a few hundred */

typedef struct {
  bool used, ok;
  int call;
  taso_lib_props_t p;
} answer_t;

struct taso_library {
  char name[TASO_MODEL_NAME_LEN];
  char path[1024];
  char *properties; /* the properties file's text */
  taso_lib_call_t calls[MAX_CALLS];
  int ncalls;
  Z3_context z3;
  answer_t *cache; /* open addressing, CACHE_SLOTS; full: asked again */
  int64_t queries, cached;
};

/* ---- reading ----------------------------------------------------------------- */

static char *read_text(const char *path) {
  FILE *f = fopen(path, "rb");
  if (!f) return NULL;
  size_t cap = 4096, n = 0;
  char *s = malloc(cap);
  for (size_t got; s && (got = fread(s + n, 1, cap - n - 1, f)) > 0;) {
    n += got;
    if (n + 1 == cap) {
      char *t = realloc(s, cap *= 2);
      if (!t) free(s);
      s = t;
    }
  }
  fclose(f);
  if (s) s[n] = 0;
  return s;
}

static char *trim(char *s) {
  while (isspace((unsigned char)*s))
    s++;
  char *e = s + strlen(s);
  while (e > s && isspace((unsigned char)e[-1]))
    *--e = 0;
  return s;
}

static taso_err_t bad(const taso_library_t *lib, int line, const char *what, const char *detail) {
  return taso_error(TASO_ERR_PARSE, "%s:%d: %s%s%s", lib->path, line, what, detail ? ": " : "",
                    detail ? detail : "");
}

/* "conv2d + bias + relu" (or + clip), "relu sigmoid" or "*". */
static taso_err_t parse_covers(const taso_library_t *lib, int line, char *text,
                               taso_lib_call_t *c) {
  if (strcmp(text, "*") == 0) {
    c->any = true;
    return TASO_OK;
  }
  if (!strchr(text, '+')) { /* operators alone */
    for (char *save, *w = strtok_r(text, " \t", &save); w; w = strtok_r(NULL, " \t", &save)) {
      taso_op_kind_t k = taso_op_lookup(w);
      if (k == TASO_OP_COUNT || k == TASO_OP_INPUT) return bad(lib, line, "unknown operator", w);
      c->kinds |= 1ull << k;
    }
    return TASO_OK;
  }
  if (c->ncover == TASO_LIB_MAX_COVERS)
    return bad(lib, line, "too many patterns for one call", NULL);
  taso_lib_cover_t *cv = &c->cover[c->ncover++];
  cv->fuse = 0;
  int part = 0, order = -1; /* of the epilogue named last: bias 0, sum 1, relu or clip 2 */
  for (char *save, *w = strtok_r(text, "+", &save); w; w = strtok_r(NULL, "+", &save), part++) {
    w = trim(w);
    if (part == 0) {
      cv->kind = taso_op_lookup(w);
      if (cv->kind == TASO_OP_COUNT) return bad(lib, line, "unknown operator", w);
      if (cv->kind != TASO_OP_CONV2D && cv->kind != TASO_OP_MATMUL)
        return bad(lib, line, "only conv2d and matmul take an epilogue, not", w);
      continue;
    }
    unsigned f = strcmp(w, "bias") == 0   ? TASO_FUSE_BIAS
                 : strcmp(w, "sum") == 0  ? TASO_FUSE_SUM
                 : strcmp(w, "relu") == 0 ? TASO_FUSE_RELU
                 : strcmp(w, "clip") == 0 ? TASO_FUSE_CLIP
                                          : 0;
    if (!f) return bad(lib, line, "unknown epilogue (bias, sum, relu, clip)", w);
    int at = f == TASO_FUSE_BIAS ? 0 : f == TASO_FUSE_SUM ? 1 : 2;
    if (cv->fuse & f) return bad(lib, line, "epilogue named twice", w);
    if (at == 2 && order == 2) return bad(lib, line, "relu and clip in one pattern", w);
    if (at < order) return bad(lib, line, "epilogue out of order (bias, sum, relu or clip)", w);
    order = at;
    cv->fuse |= f;
  }
  return TASO_OK;
}

static taso_err_t parse_layouts(const taso_library_t *lib, int line, char *text, unsigned *out) {
  static const char *const names[] = {"nchw", "nhwc", "blocked"};
  for (char *save, *w = strtok_r(text, " \t", &save); w; w = strtok_r(NULL, " \t", &save)) {
    int l = 0;
    while (l < 3 && strcmp(w, names[l]) != 0)
      l++;
    if (l == 3) return bad(lib, line, "unknown layout (nchw, nhwc, blocked)", w);
    *out |= 1u << l;
  }
  return *out ? TASO_OK : bad(lib, line, "no layout", NULL);
}

/* One ";; key: value" header line of the call c (NULL before the first). */
static taso_err_t header(taso_library_t *lib, const char *dir, int line, char *key, char *value,
                         taso_lib_call_t *c) {
  if (!c && strcmp(key, "properties") == 0) {
    char path[1200];
    snprintf(path, sizeof path, "%s/%s", dir, value);
    free(lib->properties);
    if (!(lib->properties = read_text(path))) return bad(lib, line, "cannot read", path);
    return TASO_OK;
  }
  if (!c) return bad(lib, line, "unknown header before the first @call", key);
  if (strcmp(key, "covers") == 0) return parse_covers(lib, line, value, c);
  if (strcmp(key, "layouts") == 0) return parse_layouts(lib, line, value, &c->layouts);
  if (strcmp(key, "writes") == 0) {
    c->writes = strcmp(value, "operand") == 0     ? TASO_WRITES_OPERAND
                : strcmp(value, "summand") == 0   ? TASO_WRITES_SUMMAND
                : strcmp(value, "producers") == 0 ? TASO_WRITES_PRODUCERS
                                                  : -1;
    return c->writes < 0
               ? bad(lib, line, "writes: expected operand, summand or producers, got", value)
               : TASO_OK;
  }
  return bad(lib, line, "unknown header (covers, layouts, writes)", key);
}

static taso_err_t append(char **text, const char *line) {
  size_t n = *text ? strlen(*text) : 0, add = strlen(line);
  char *t = realloc(*text, n + add + 2);
  if (!t) return taso_error(TASO_ERR_NOMEM, "library text");
  memcpy(t + n, line, add);
  t[n + add] = '\n';
  t[n + add + 1] = 0;
  *text = t;
  return TASO_OK;
}

static taso_err_t parse(taso_library_t *lib, char *text, const char *dir) {
  taso_lib_call_t *c = NULL;
  int lineno = 0;
  for (char *l = text, *next; l; l = next) {
    if ((next = strchr(l, '\n'))) *next++ = 0;
    lineno++;
    char *s = trim(l);
    if (strncmp(s, ";;", 2) != 0) {
      if (*s && *s != ';' && !c)
        return bad(lib, lineno, "constraints before the first @call", NULL);
      if (c && *s && *s != ';') TASO_TRY(append(&c->constraints, s));
      continue;
    }
    s = trim(s + 2);
    if (strncmp(s, "@library", 8) == 0) {
      snprintf(lib->name, sizeof lib->name, "%s", trim(s + 8));
    } else if (strncmp(s, "@call", 5) == 0) {
      if (lib->ncalls == MAX_CALLS) return bad(lib, lineno, "more than 64 calls", NULL);
      c = &lib->calls[lib->ncalls++];
      memset(c, 0, sizeof *c);
      char *name = trim(s + 5);
      if (!*name || strlen(name) >= TASO_CALL_NAME_LEN)
        return bad(lib, lineno, "bad call name", name);
      for (int i = 0; i < lib->ncalls - 1; i++)
        if (strcmp(lib->calls[i].name, name) == 0)
          return bad(lib, lineno, "call named twice", name);
      snprintf(c->name, sizeof c->name, "%s", name);
      c->line = lineno;
    } else if (*s && strchr(s, ':') && s[0] != '@' && isalpha((unsigned char)s[0]) &&
               strcspn(s, ":") == strspn(s, "abcdefghijklmnopqrstuvwxyz_")) {
      char *colon = strchr(s, ':');
      *colon = 0;
      TASO_TRY(header(lib, dir, lineno, trim(s), trim(colon + 1), c));
    }
  }
  if (!lib->properties) return bad(lib, 1, "no \";; properties: FILE\" line", NULL);
  if (!lib->ncalls) return bad(lib, 1, "no call", NULL);
  if (!lib->name[0]) return bad(lib, 1, "no \";; @library NAME\" line", NULL);
  for (int i = 0; i < lib->ncalls; i++) {
    const taso_lib_call_t *k = &lib->calls[i];
    if (!k->ncover && !k->kinds && !k->any)
      return bad(lib, k->line, "call covers nothing", k->name);
    if (!k->layouts) return bad(lib, k->line, "call has no layouts line", k->name);
    if (k->writes == TASO_WRITES_SUMMAND)
      for (int j = 0; j < k->ncover; j++)
        if (!(k->cover[j].fuse & TASO_FUSE_SUM))
          return bad(lib, k->line, "writes: summand, but a pattern has no sum", k->name);
    if (k->writes == TASO_WRITES_OPERAND && k->ncover)
      return bad(lib, k->line, "writes: operand is for operators alone", k->name);
    if (k->writes == TASO_WRITES_PRODUCERS &&
        (k->ncover || k->any || k->kinds != 1ull << TASO_OP_CONCAT))
      return bad(lib, k->line, "writes: producers is for \"covers: concat\" alone", k->name);
  }
  return TASO_OK;
}

/* ---- Z3 ---------------------------------------------------------------------- */

/* Whether the properties, call i's constraints and `extra` are satisfiable;
 * model (may be NULL) receives a satisfying assignment's text. */
static taso_err_t satisfiable(taso_library_t *lib, int i, const char *extra, bool *sat, char *model,
                              int len) {
  const taso_lib_call_t *c = &lib->calls[i];
  size_t n =
      strlen(lib->properties) + (c->constraints ? strlen(c->constraints) : 0) + strlen(extra) + 4;
  char *text = malloc(n);
  if (!text) return taso_error(TASO_ERR_NOMEM, "query text");
  snprintf(text, n, "%s\n%s\n%s", lib->properties, c->constraints ? c->constraints : "", extra);
  Z3_ast_vector v = Z3_parse_smtlib2_string(lib->z3, text, 0, NULL, NULL, 0, NULL, NULL);
  free(text);
  char msg[512];
  if (taso_z3_take_error(msg, sizeof msg) || !v)
    return bad(lib, c->line, "Z3 cannot parse the constraints of", c->name);
  Z3_ast_vector_inc_ref(lib->z3, v);
  Z3_solver s = Z3_mk_simple_solver(lib->z3);
  Z3_solver_inc_ref(lib->z3, s);
  for (unsigned k = 0; k < Z3_ast_vector_size(lib->z3, v); k++)
    Z3_solver_assert(lib->z3, s, Z3_ast_vector_get(lib->z3, v, k));
  Z3_lbool r = Z3_solver_check(lib->z3, s);
  if (r == Z3_L_TRUE && model) {
    Z3_model m = Z3_solver_get_model(lib->z3, s);
    Z3_model_inc_ref(lib->z3, m);
    snprintf(model, (size_t)len, "%s", Z3_model_to_string(lib->z3, m));
    Z3_model_dec_ref(lib->z3, m);
  }
  Z3_solver_dec_ref(lib->z3, s);
  Z3_ast_vector_dec_ref(lib->z3, v);
  lib->queries++;
  if (taso_z3_take_error(msg, sizeof msg) || r == Z3_L_UNDEF)
    return taso_error(TASO_ERR_LIB, "%s: call %s: Z3 could not decide (%s)", lib->path, c->name,
                      r == Z3_L_UNDEF ? "unknown" : msg);
  *sat = r == Z3_L_TRUE;
  return TASO_OK;
}

/* The model text on one line, shortened, for a message. */
static void one_line(char *s) {
  for (char *p = s; *p; p++)
    if (*p == '\n') *p = ' ';
}

/* How a call is made, as properties: writing over an operand, placing
 * its operands, or neither. */
static const char *made(const taso_lib_call_t *c) {
  if (c->writes == TASO_WRITES_PRODUCERS) return "(assert (not overwrites))(assert placed)";
  if (c->writes) return "(assert overwrites)(assert (not placed))";
  return "(assert (not overwrites))(assert (not placed))";
}

/* What loading proves of each call: some match satisfies it, and one that
 * writes over an operand or places its operands excludes every case where
 * that is wrong. */
static taso_err_t check_calls(taso_library_t *lib) {
  static const char *const hazard[] = {
      [TASO_WRITES_OPERAND] = "(assert (or overwritten_read_later overwritten_is_input "
                              "overwritten_read_twice (not overwritten_same_size)))",
      [TASO_WRITES_SUMMAND] = "(assert (or overwritten_read_later overwritten_is_input "
                              "overwritten_read_twice (not overwritten_same_size)))",
      [TASO_WRITES_PRODUCERS] = "(assert (or (not (= outer 1)) (= layout NHWC) "
                                "(not producers_own) placed_overwritten))",
  };
  for (int i = 0; i < lib->ncalls; i++) {
    const taso_lib_call_t *c = &lib->calls[i];
    bool sat;
    TASO_TRY(satisfiable(lib, i, made(c), &sat, NULL, 0));
    if (!sat) return bad(lib, c->line, "no match can satisfy the constraints of call", c->name);
    if (!c->writes) continue;
    char model[2048], query[640], among[96] = "(assert (or";
    for (int l = 0; l < 3; l++) /* its layouts line is a condition too */
      if (c->layouts >> l & 1)
        snprintf(among + strlen(among), sizeof among - strlen(among), " (= layout %d)", l);
    snprintf(query, sizeof query, "%s\n%s))\n%s", made(c), among, hazard[c->writes]);
    TASO_TRY(satisfiable(lib, i, query, &sat, model, sizeof model));
    if (sat) {
      one_line(model);
      char why[2300];
      if (c->writes == TASO_WRITES_PRODUCERS)
        snprintf(why, sizeof why,
                 "%s places its operands in its result, and its constraints "
                 "allow it where a slice is not one block, or an operand is no result of its "
                 "own, or is overwritten while another is read (Z3's example: %.1500s)",
                 c->name, model);
      else
        snprintf(why, sizeof why,
                 "%s writes over an operand, and its constraints allow it where "
                 "a later step still reads it, or a model input, or another size (Z3's example: "
                 "%.1500s)",
                 c->name, model);
      return bad(
          lib, c->line,
          c->writes == TASO_WRITES_PRODUCERS ? "unsafe placing call" : "unsafe in-place call", why);
    }
  }
  return TASO_OK;
}

/* ---- the interface ------------------------------------------------------------- */

taso_err_t taso_library_load(const char *path, taso_library_t **out) {
  *out = NULL;
  taso_library_t *lib = calloc(1, sizeof *lib);
  if (!lib) return taso_error(TASO_ERR_NOMEM, "library");
  snprintf(lib->path, sizeof lib->path, "%s", path);
  char *text = read_text(path);
  char dir[1024];
  snprintf(dir, sizeof dir, "%s", path);
  char *slash = strrchr(dir, '/');
  if (slash)
    *slash = 0;
  else
    snprintf(dir, sizeof dir, ".");
  taso_err_t err = text ? TASO_OK : taso_error(TASO_ERR_IO, "%s: cannot read it", path);
  if (err == TASO_OK) err = parse(lib, text, dir);
  free(text);
  if (err == TASO_OK) err = taso_z3_open(10000, &lib->z3);
  if (err == TASO_OK && !(lib->cache = calloc(CACHE_SLOTS, sizeof *lib->cache)))
    err = taso_error(TASO_ERR_NOMEM, "library cache");
  if (err == TASO_OK) err = check_calls(lib);
  if (err != TASO_OK) {
    taso_library_free(lib);
    return err;
  }
  *out = lib;
  return TASO_OK;
}

void taso_library_free(taso_library_t *lib) {
  if (!lib) return;
  for (int i = 0; i < lib->ncalls; i++)
    free(lib->calls[i].constraints);
  free(lib->properties);
  free(lib->cache);
  taso_z3_close(lib->z3);
  free(lib);
}

const char *taso_library_name(const taso_library_t *lib) {
  return lib->name;
}
int taso_library_ncalls(const taso_library_t *lib) {
  return lib->ncalls;
}
const taso_lib_call_t *taso_library_call(const taso_library_t *lib, int i) {
  return &lib->calls[i];
}

bool taso_library_covers(const taso_library_t *lib, int i, const taso_rt_config_t *cfg) {
  const taso_lib_call_t *c = &lib->calls[i];
  for (int j = 0; j < c->ncover; j++)
    if (c->cover[j].kind == cfg->kind && c->cover[j].fuse == cfg->fuse) return true;
  if (cfg->fuse) return false;
  return c->any || (c->kinds >> cfg->kind & 1);
}

void taso_library_props_of(const taso_rt_config_t *cfg, taso_lib_props_t *p) {
  memset(p, 0, sizeof *p); /* padding too: the cache compares bytes */
  const taso_tensor_t *o = &cfg->out[0];
  p->layout = cfg->layout;
  p->dtype = 0;
  p->rank = o->rank;
  p->batch = o->rank ? o->dim[0] : 1;
  p->groups = 1;
  if (cfg->kind == TASO_OP_CONV2D) {
    p->channels_in = cfg->in[0].dim[1];
    p->channels_out = o->dim[1];
    p->groups = cfg->in[1].dim[1] ? cfg->in[0].dim[1] / cfg->in[1].dim[1] : 1;
    p->kernel_h = cfg->in[1].dim[2];
    p->kernel_w = cfg->in[1].dim[3];
  } else if (cfg->kind == TASO_OP_MATMUL && cfg->in[0].rank >= 2) {
    p->channels_in = cfg->in[0].dim[cfg->in[0].rank - 1];
    p->channels_out = o->dim[o->rank - 1];
  }
  if (cfg->kind == TASO_OP_CONV2D || cfg->kind == TASO_OP_POOL_AVG ||
      cfg->kind == TASO_OP_POOL_MAX) {
    p->stride_h = cfg->p.stride[0];
    p->stride_w = cfg->p.stride[1];
  }
  p->outer = 1;
  if (cfg->kind == TASO_OP_CONCAT) {
    int64_t inner = 1, offset = 0;
    for (int d = 0; d < cfg->p.axis; d++)
      p->outer *= o->dim[d];
    for (int d = cfg->p.axis + 1; d < o->rank; d++)
      inner *= o->dim[d];
    p->slice_align = 256;
    for (int a = 0; a < cfg->nin; a++) {
      int64_t bytes = 4 * offset;
      while (bytes % p->slice_align)
        p->slice_align /= 2;
      offset += cfg->in[a].dim[cfg->p.axis] * inner;
    }
  }
}

static uint64_t answer_hash(int call, const taso_lib_props_t *p) {
  uint64_t h = 1469598103934665603ull ^ (uint64_t)call;
  const unsigned char *b = (const unsigned char *)p;
  for (size_t i = 0; i < sizeof *p; i++)
    h = (h ^ b[i]) * 1099511628211ull;
  return h;
}

taso_err_t taso_library_allows(taso_library_t *lib, int i, const taso_lib_props_t *p, bool *ok) {
  uint64_t h = answer_hash(i, p);
  answer_t *slot = NULL;
  for (int probe = 0; probe < 16; probe++) {
    answer_t *a = &lib->cache[(h + (uint64_t)probe) % CACHE_SLOTS];
    if (a->used && a->call == i && memcmp(&a->p, p, sizeof *p) == 0) {
      lib->cached++;
      *ok = a->ok;
      return TASO_OK;
    }
    if (!a->used) {
      slot = a;
      break;
    }
  }
  char facts[2048];
  snprintf(facts, sizeof facts,
           "(assert (= layout %d))(assert (= dtype %d))(assert (= rank %d))(assert (= batch %d))"
           "(assert (= channels_in %d))(assert (= channels_out %d))(assert (= groups %d))"
           "(assert (= kernel_h %d))(assert (= kernel_w %d))(assert (= stride_h %d))"
           "(assert (= stride_w %d))(assert (= overwrites %s))"
           "(assert (= overwritten_read_later %s))(assert (= overwritten_is_input %s))"
           "(assert (= overwritten_read_twice %s))(assert (= overwritten_same_size %s))"
           "(assert (= outer %d))(assert (= slice_align %d))(assert (= placed %s))"
           "(assert (= producers_own %s))(assert (= placed_overwritten %s))",
           (int)p->layout, (int)p->dtype, (int)p->rank, (int)p->batch, (int)p->channels_in,
           (int)p->channels_out, (int)p->groups, (int)p->kernel_h, (int)p->kernel_w,
           (int)p->stride_h, (int)p->stride_w, p->overwrites ? "true" : "false",
           p->read_later ? "true" : "false", p->is_input ? "true" : "false",
           p->read_twice ? "true" : "false", p->same_size ? "true" : "false", (int)p->outer,
           (int)p->slice_align, p->placed ? "true" : "false", p->producers_own ? "true" : "false",
           p->placed_overwritten ? "true" : "false");
  /* a call that writes in place (or places) is made only so, and one that does not, only not */
  int writes = lib->calls[i].writes;
  bool sat = p->overwrites == (writes == TASO_WRITES_OPERAND || writes == TASO_WRITES_SUMMAND) &&
             p->placed == (writes == TASO_WRITES_PRODUCERS) &&
             (lib->calls[i].layouts >> p->layout & 1);
  if (sat) TASO_TRY(satisfiable(lib, i, facts, &sat, NULL, 0));
  if (slot) *slot = (answer_t){.used = true, .ok = sat, .call = i, .p = *p};
  *ok = sat;
  return TASO_OK;
}

void taso_library_counts(const taso_library_t *lib, int64_t *queries, int64_t *cached) {
  *queries = lib->queries;
  *cached = lib->cached;
}
