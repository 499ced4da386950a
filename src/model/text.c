/*
 * The text form of data/models/: a small language that builds a
 * taso_model_t through taso_model_input and taso_model_node.
 *
 * A file is read once into tokens and then interpreted straight from the
 * token array: a block call or a loop jumps to the body's tokens and runs
 * them again, so there is no syntax tree. Values are integers or tensors.
 * Operator calls are handed to the registry as template text
 * ("conv2d(s=2x2, act=relu)") once their {expressions} are replaced by
 * numbers, so this file knows no operator by name and a new registry entry
 * is usable here at once. data/models/README.md describes the language.
 */
#define _POSIX_C_SOURCE 200809L
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "model.h"

#ifndef TASO_MODELS_DIR
#define TASO_MODELS_DIR "data/models"
#endif

#define NAME_MAX_LEN 64
#define MAX_DEPTH 64    /* nested block calls: deeper is a runaway recursion */
#define MAX_OPERANDS 64 /* operands of one call (n-ary concat) */
#define MAX_BLOCK_ARGS 16
#define MAX_LOOP 1000000 /* iterations of one loop */

typedef enum { T_WORD, T_PUNCT, T_NL, T_END } tok_kind_t;

typedef struct {
  tok_kind_t kind;
  int start, len; /* the token's text in the source */
  int line;       /* 1-based */
} tok_t;

typedef struct {
  bool tensor; /* a tensor (ref) or an integer (num) */
  int outputs; /* tensors: results of the node (2 for split_at) */
  int64_t num;
  taso_ref_t ref;
} value_t;

typedef struct {
  char name[NAME_MAX_LEN];
  value_t v;
  bool is_param; /* params cannot be assigned to */
} var_t;

/* The variables of one block call (or of the top level). */
typedef struct {
  var_t *vars;
  int nvars, cap;
  char prefix[TASO_MODEL_NAME_LEN]; /* prefix of weight names: "stage2.bottleneck1." */
  int *calls;                       /* per block: calls from this frame, to number them */
  int ncalls;
  bool returned; /* a return ran: the rest of the body is skipped */
  value_t result;
} frame_t;

typedef struct {
  char name[NAME_MAX_LEN];
  int args[MAX_BLOCK_ARGS]; /* tokens of the argument names */
  int nargs;
  int body; /* token of its '{' */
} block_t;

typedef struct {
  char name[NAME_MAX_LEN];
  int64_t value;
} override_t;

typedef struct {
  const char *path; /* for messages */
  char *src;
  tok_t *toks;
  int ntoks, cap;
  int *match; /* per token: the matching brace of a '{' or '}' */
  int pos;    /* the current token */
  taso_model_t *m;
  block_t *blocks;
  int nblocks;
  frame_t *global, *frame;
  override_t *ov;
  int nov;
  int depth;
} reader_t;

/* ---- messages ------------------------------------------------------------ */

static int line_of(const reader_t *r, int tok) {
  if (tok >= r->ntoks) tok = r->ntoks - 1;
  return tok >= 0 ? r->toks[tok].line : 1;
}

/* The token as a message shows it. */
static const char *show(const reader_t *r, int tok, char *buf, int len) {
  const tok_t *t = &r->toks[tok];
  if (t->kind == T_NL) return "end of line";
  if (t->kind == T_END) return "end of file";
  snprintf(buf, (size_t)len, "%.*s", t->len, r->src + t->start);
  return buf;
}

static taso_err_t fail(const reader_t *r, int tok, taso_err_t err, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static taso_err_t fail(const reader_t *r, int tok, taso_err_t err, const char *fmt, ...) {
  char msg[768];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  return taso_error(err, "%s:%d: %s", r->path, line_of(r, tok), msg);
}

/* Puts file:line in front of an error that a library call reported. */
static taso_err_t at_line(const reader_t *r, int tok, taso_err_t err) {
  return taso_error_prefix(err, "%s:%d: ", r->path, line_of(r, tok));
}

#define TRY_AT(r, tok, call)                                                                       \
  do {                                                                                             \
    taso_err_t try_at_err_ = (call);                                                               \
    if (try_at_err_ != TASO_OK) return at_line((r), (tok), try_at_err_);                           \
  } while (0)

/* ---- tokens ------------------------------------------------------------- */

static taso_err_t push(reader_t *r, tok_kind_t kind, int start, int len, int line) {
  if (r->ntoks == r->cap) {
    int cap = r->cap ? 2 * r->cap : 256;
    tok_t *t = realloc(r->toks, sizeof *t * (size_t)cap);
    if (!t) return taso_error(TASO_ERR_NOMEM, "%s: tokens", r->path);
    r->toks = t;
    r->cap = cap;
  }
  r->toks[r->ntoks++] = (tok_t){kind, start, len, line};
  return TASO_OK;
}

static bool word_char(char c) {
  return isalnum((unsigned char)c) || c == '_' || c == '.';
}

/* Punctuation of one or two characters at s; 0 if none. */
static int punct_len(const char *s) {
  static const char *const two[] = {"==", "!=", "<=", ">=", "&&", "||"};
  for (size_t i = 0; i < sizeof two / sizeof two[0]; i++)
    if (s[0] == two[i][0] && s[1] == two[i][1]) return 2;
  return s[0] && strchr("()[]{},=+-*/%<>!", s[0]) ? 1 : 0;
}

/* Newlines end statements, except inside ( ) and [ ], so a long call may
 * span lines without a continuation mark. */
static taso_err_t lex(reader_t *r) {
  const char *s = r->src;
  int line = 1, depth = 0;
  for (int i = 0; s[i];) {
    if (s[i] == '#') {
      while (s[i] && s[i] != '\n')
        i++;
    } else if (s[i] == '\n') {
      bool blank = r->ntoks == 0 || r->toks[r->ntoks - 1].kind == T_NL;
      if (depth == 0 && !blank) TASO_TRY(push(r, T_NL, i, 1, line));
      line++;
      i++;
    } else if (isspace((unsigned char)s[i])) {
      i++;
    } else if (word_char(s[i])) {
      int start = i;
      while (word_char(s[i]))
        i++;
      TASO_TRY(push(r, T_WORD, start, i - start, line));
    } else if (punct_len(s + i)) {
      int n = punct_len(s + i);
      if (s[i] == '(' || s[i] == '[') depth++;
      if ((s[i] == ')' || s[i] == ']') && depth > 0) depth--;
      TASO_TRY(push(r, T_PUNCT, i, n, line));
      i += n;
    } else {
      return taso_error(TASO_ERR_PARSE, "%s:%d: unexpected character '%c'", r->path, line, s[i]);
    }
  }
  TASO_TRY(push(r, T_NL, (int)strlen(s), 0, line));
  return push(r, T_END, (int)strlen(s), 0, line);
}

static bool is_punct(const reader_t *r, int tok, const char *p) {
  const tok_t *t = &r->toks[tok];
  return t->kind == T_PUNCT && t->len == (int)strlen(p) && !strncmp(r->src + t->start, p, t->len);
}

static bool is_word(const reader_t *r, int tok, const char *w) {
  const tok_t *t = &r->toks[tok];
  return t->kind == T_WORD && t->len == (int)strlen(w) && !strncmp(r->src + t->start, w, t->len);
}

/* Pairs every '{' with its '}' once, so that skipping a body is a jump. */
static taso_err_t match_braces(reader_t *r) {
  r->match = malloc(sizeof *r->match * (size_t)r->ntoks);
  int *stack = malloc(sizeof *stack * (size_t)r->ntoks), n = 0;
  if (!r->match || !stack) {
    free(stack);
    return taso_error(TASO_ERR_NOMEM, "%s: braces", r->path);
  }
  taso_err_t err = TASO_OK;
  for (int i = 0; i < r->ntoks && !err; i++) {
    r->match[i] = -1;
    if (is_punct(r, i, "{")) stack[n++] = i;
    if (is_punct(r, i, "}")) {
      if (n == 0)
        err = fail(r, i, TASO_ERR_PARSE, "'}' without a '{'");
      else {
        r->match[i] = stack[--n];
        r->match[stack[n]] = i;
      }
    }
  }
  if (!err && n > 0) err = fail(r, stack[n - 1], TASO_ERR_PARSE, "'{' is never closed");
  free(stack);
  return err;
}

static bool accept(reader_t *r, const char *p) {
  if (!is_punct(r, r->pos, p)) return false;
  r->pos++;
  return true;
}

static taso_err_t expect(reader_t *r, const char *p) {
  char buf[64];
  if (accept(r, p)) return TASO_OK;
  return fail(r, r->pos, TASO_ERR_PARSE, "expected '%s', found '%s'", p,
              show(r, r->pos, buf, sizeof buf));
}

/* A name: a word that starts with a letter or '_'. */
static taso_err_t take_name(reader_t *r, char *name) {
  const tok_t *t = &r->toks[r->pos];
  char buf[64];
  if (t->kind != T_WORD || isdigit((unsigned char)r->src[t->start]) || t->len >= NAME_MAX_LEN ||
      memchr(r->src + t->start, '.', (size_t)t->len))
    return fail(r, r->pos, TASO_ERR_PARSE, "expected a name, found '%s'",
                show(r, r->pos, buf, sizeof buf));
  snprintf(name, NAME_MAX_LEN, "%.*s", t->len, r->src + t->start);
  r->pos++;
  return TASO_OK;
}

/* ---- variables ---------------------------------------------------------- */

static var_t *find_in(frame_t *f, const char *name) {
  for (int i = 0; i < f->nvars; i++)
    if (!strcmp(f->vars[i].name, name)) return &f->vars[i];
  return NULL;
}

/* Block bodies see their own variables, then the top level's. */
static var_t *lookup(reader_t *r, const char *name) {
  var_t *v = find_in(r->frame, name);
  return v ? v : find_in(r->global, name);
}

static taso_err_t set_var(reader_t *r, frame_t *f, const char *name, value_t v, bool is_param) {
  var_t *old = find_in(f, name);
  if (!old) {
    if (f->nvars == f->cap) {
      int cap = f->cap ? 2 * f->cap : 16;
      var_t *vars = realloc(f->vars, sizeof *vars * (size_t)cap);
      if (!vars) return taso_error(TASO_ERR_NOMEM, "%s: variables", r->path);
      f->vars = vars;
      f->cap = cap;
    }
    old = &f->vars[f->nvars++];
    snprintf(old->name, sizeof old->name, "%s", name);
  }
  old->v = v;
  old->is_param = is_param;
  return TASO_OK;
}

static void frame_free(frame_t *f) {
  free(f->vars);
  free(f->calls);
}

static value_t int_value(int64_t n) {
  return (value_t){.tensor = false, .num = n};
}

static value_t tensor_value(taso_ref_t ref, int outputs) {
  return (value_t){.tensor = true, .outputs = outputs, .ref = ref};
}

static int find_block(const reader_t *r, const char *name) {
  for (int i = 0; i < r->nblocks; i++)
    if (!strcmp(r->blocks[i].name, name)) return i;
  return -1;
}

/* Words with a meaning of their own, which no variable or block may take. */
static bool reserved(const char *name) {
  static const char *const words[] = {"param", "input", "weight", "output", "block", "for", "in",
                                      "range", "if",    "else",   "return", "dim",   "min", "max"};
  for (size_t i = 0; i < sizeof words / sizeof words[0]; i++)
    if (!strcmp(name, words[i])) return true;
  return false;
}

/* ---- expressions -------------------------------------------------------- */

static taso_err_t eval_expr(reader_t *r, value_t *v);
static taso_err_t exec_body(reader_t *r);

static taso_err_t eval_int(reader_t *r, int64_t *n) {
  int at = r->pos;
  value_t v = {.num = 0};
  *n = 0;
  TASO_TRY(eval_expr(r, &v));
  if (v.tensor) return fail(r, at, TASO_ERR_PARSE, "expected an integer, found a tensor");
  *n = v.num;
  return TASO_OK;
}

static taso_err_t eval_tensor(reader_t *r, value_t *v) {
  int at = r->pos;
  TASO_TRY(eval_expr(r, v));
  if (!v->tensor) return fail(r, at, TASO_ERR_PARSE, "expected a tensor, found an integer");
  return TASO_OK;
}

static taso_err_t parse_number(reader_t *r, value_t *v) {
  const tok_t *t = &r->toks[r->pos];
  int64_t n = 0;
  for (int i = 0; i < t->len; i++) {
    char c = r->src[t->start + i];
    if (!isdigit((unsigned char)c) || __builtin_mul_overflow(n, 10, &n) ||
        __builtin_add_overflow(n, c - '0', &n))
      return fail(r, r->pos, TASO_ERR_PARSE, "bad integer '%.*s'", t->len, r->src + t->start);
  }
  *v = int_value(n);
  r->pos++;
  return TASO_OK;
}

/* dim(t, axis), min(a, b), max(a, b). */
static taso_err_t eval_builtin(reader_t *r, const char *name, int at, value_t *v) {
  value_t a;
  int64_t b;
  TASO_TRY(expect(r, "("));
  TASO_TRY(eval_expr(r, &a));
  TASO_TRY(expect(r, ","));
  TASO_TRY(eval_int(r, &b));
  TASO_TRY(expect(r, ")"));
  if (!strcmp(name, "dim")) {
    if (!a.tensor) return fail(r, at, TASO_ERR_PARSE, "dim() takes a tensor first");
    const taso_tensor_t *t = taso_model_type(r->m, a.ref);
    if (b < 0 || b >= t->rank)
      return fail(r, at, TASO_ERR_SHAPE, "dim(): axis %lld of a rank-%d tensor", (long long)b,
                  t->rank);
    *v = int_value(t->dim[b]);
    return TASO_OK;
  }
  if (a.tensor) return fail(r, at, TASO_ERR_PARSE, "%s() takes integers", name);
  *v = int_value(!strcmp(name, "min") ? (a.num < b ? a.num : b) : (a.num > b ? a.num : b));
  return TASO_OK;
}

static taso_err_t call_block(reader_t *r, int b, int at, value_t *v);
static taso_err_t call_op(reader_t *r, const char *name, int at, value_t *v);

static taso_err_t eval_primary(reader_t *r, value_t *v) {
  int at = r->pos;
  char buf[64], name[NAME_MAX_LEN];
  if (accept(r, "(")) {
    TASO_TRY(eval_expr(r, v));
    return expect(r, ")");
  }
  if (r->toks[at].kind == T_WORD && isdigit((unsigned char)r->src[r->toks[at].start]))
    return parse_number(r, v);
  if (r->toks[at].kind != T_WORD)
    return fail(r, at, TASO_ERR_PARSE, "expected a value, found '%s'",
                show(r, at, buf, sizeof buf));
  TASO_TRY(take_name(r, name));
  if (is_punct(r, r->pos, "(")) {
    if (!strcmp(name, "dim") || !strcmp(name, "min") || !strcmp(name, "max"))
      return eval_builtin(r, name, at, v);
    int b = find_block(r, name);
    return b >= 0 ? call_block(r, b, at, v) : call_op(r, name, at, v);
  }
  var_t *var = lookup(r, name);
  if (!var) return fail(r, at, TASO_ERR_UNKNOWN, "unknown name '%s'", name);
  *v = var->v;
  return TASO_OK;
}

static taso_err_t eval_unary(reader_t *r, value_t *v) {
  int at = r->pos;
  bool neg = is_punct(r, at, "-"), not = is_punct(r, at, "!");
  if (!neg && !not ) return eval_primary(r, v);
  r->pos++;
  TASO_TRY(eval_unary(r, v));
  if (v->tensor) return fail(r, at, TASO_ERR_PARSE, "'%s' takes an integer", neg ? "-" : "!");
  if (neg && v->num == INT64_MIN) return fail(r, at, TASO_ERR_OVERFLOW, "integer overflow");
  v->num = neg ? -v->num : !v->num;
  return TASO_OK;
}

/* Binding strength of a binary operator token; 0 if it is none. */
static int precedence(const reader_t *r, int tok) {
  static const struct {
    const char *op;
    int prec;
  } table[] = {{"||", 1}, {"&&", 2}, {"==", 3}, {"!=", 3}, {"<", 3}, {"<=", 3}, {">", 3},
               {">=", 3}, {"+", 4},  {"-", 4},  {"*", 5},  {"/", 5}, {"%", 5}};
  for (size_t i = 0; i < sizeof table / sizeof table[0]; i++)
    if (is_punct(r, tok, table[i].op)) return table[i].prec;
  return 0;
}

static taso_err_t apply(const reader_t *r, int tok, int64_t a, int64_t b, int64_t *out) {
  const char *op = r->src + r->toks[tok].start;
  bool two = r->toks[tok].len == 2, over = false;
  if ((op[0] == '/' || op[0] == '%') && b == 0)
    return fail(r, tok, TASO_ERR_OVERFLOW, "division by zero");
  switch (op[0]) {
  case '+':
    over = __builtin_add_overflow(a, b, out);
    break;
  case '-':
    over = __builtin_sub_overflow(a, b, out);
    break;
  case '*':
    over = __builtin_mul_overflow(a, b, out);
    break;
  case '/':
    over = a == INT64_MIN && b == -1;
    *out = over ? 0 : a / b;
    break;
  case '%':
    over = a == INT64_MIN && b == -1;
    *out = over ? 0 : a % b;
    break;
  case '|':
    *out = a || b;
    break;
  case '&':
    *out = a && b;
    break;
  case '=':
    *out = a == b;
    break;
  case '!':
    *out = a != b;
    break;
  case '<':
    *out = two ? a <= b : a < b;
    break;
  case '>':
    *out = two ? a >= b : a > b;
    break;
  }
  if (over) return fail(r, tok, TASO_ERR_OVERFLOW, "integer overflow");
  return TASO_OK;
}

/* Precedence climbing over the binary operators, all left-associative. */
static taso_err_t eval_binary(reader_t *r, int min_prec, value_t *v) {
  TASO_TRY(eval_unary(r, v));
  for (;;) {
    int op = r->pos, prec = precedence(r, op);
    if (prec == 0 || prec < min_prec) return TASO_OK;
    r->pos++;
    value_t rhs;
    TASO_TRY(eval_binary(r, prec + 1, &rhs));
    if (v->tensor || rhs.tensor)
      return fail(r, op, TASO_ERR_PARSE,
                  "'%.*s' takes integers (tensors are added with ewadd or add)", r->toks[op].len,
                  r->src + r->toks[op].start);
    TASO_TRY(apply(r, op, v->num, rhs.num, &v->num));
  }
}

static taso_err_t eval_expr(reader_t *r, value_t *v) {
  return eval_binary(r, 1, v);
}

/* ---- operator calls ------------------------------------------------------ */

typedef struct {
  char text[512]; /* "conv2d(s=2x2, act=relu" as it grows */
  int nparams;
  bool has_shape; /* a shape= was given */
  taso_ref_t operands[MAX_OPERANDS];
  int noperands;
} call_t;

static taso_err_t append(reader_t *r, int at, call_t *c, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static taso_err_t append(reader_t *r, int at, call_t *c, const char *fmt, ...) {
  size_t n = strlen(c->text);
  va_list ap;
  va_start(ap, fmt);
  int k = vsnprintf(c->text + n, sizeof c->text - n, fmt, ap);
  va_end(ap);
  if (k < 0 || (size_t)k >= sizeof c->text - n)
    return fail(r, at, TASO_ERR_LIMIT, "operator parameters too long");
  return TASO_OK;
}

/* key=value: the value's text up to the next ',' or ')', each {expr} in it
 * replaced by its number, so "s={st}x{st}" becomes "s=2x2". */
static taso_err_t param_text(reader_t *r, call_t *c) {
  int key = r->pos;
  char buf[64];
  c->has_shape |= is_word(r, key, "shape");
  TASO_TRY(append(r, key, c, "%s%.*s=", c->nparams++ ? ", " : "(", r->toks[key].len,
                  r->src + r->toks[key].start));
  r->pos += 2; /* the key and '=' */
  if (is_punct(r, r->pos, ",") || is_punct(r, r->pos, ")"))
    return fail(r, r->pos, TASO_ERR_PARSE, "parameter '%s' has no value",
                show(r, key, buf, sizeof buf));
  while (!is_punct(r, r->pos, ",") && !is_punct(r, r->pos, ")")) {
    int t = r->pos;
    if (r->toks[t].kind == T_END || r->toks[t].kind == T_NL) return expect(r, ")");
    if (accept(r, "{")) {
      int64_t n;
      TASO_TRY(eval_int(r, &n));
      TASO_TRY(expect(r, "}"));
      TASO_TRY(append(r, t, c, "%lld", (long long)n));
    } else {
      TASO_TRY(append(r, t, c, "%.*s", r->toks[t].len, r->src + r->toks[t].start));
      r->pos++;
    }
  }
  return TASO_OK;
}

/* One argument: key=value, an integer (a bare parameter such as concat's
 * axis) or a tensor operand. */
static taso_err_t call_arg(reader_t *r, call_t *c) {
  int at = r->pos;
  if (r->toks[at].kind == T_WORD && is_punct(r, at + 1, "=")) {
    if (c->noperands) return fail(r, at, TASO_ERR_PARSE, "parameter after operands");
    return param_text(r, c);
  }
  value_t v;
  TASO_TRY(eval_expr(r, &v));
  if (!v.tensor) {
    if (c->noperands) return fail(r, at, TASO_ERR_PARSE, "parameter after operands");
    return append(r, at, c, "%s%lld", c->nparams++ ? ", " : "(", (long long)v.num);
  }
  if (v.outputs > 1)
    return fail(r, at, TASO_ERR_PARSE, "an operand has two results: write 'a, b = ...' first");
  if (c->noperands == MAX_OPERANDS)
    return fail(r, at, TASO_ERR_LIMIT, "more than %d operands", MAX_OPERANDS);
  c->operands[c->noperands++] = v.ref;
  return TASO_OK;
}

/* n-ary concat as a left-deep chain of the registry's binary concat. */
static taso_err_t add_nodes(reader_t *r, int at, taso_op_kind_t kind, const taso_params_t *p,
                            const call_t *c, taso_ref_t *ref) {
  const taso_op_info_t *op = &taso_ops[kind];
  bool chain = kind == TASO_OP_CONCAT && c->noperands >= 2;
  if (!chain && c->noperands != op->arity)
    return fail(r, at, TASO_ERR_PARSE, "'%s' takes %d operand%s, got %d", op->name, op->arity,
                op->arity == 1 ? "" : "s", c->noperands);
  if (!chain) {
    TRY_AT(r, at, taso_model_node(r->m, kind, p, c->operands, ref));
    return TASO_OK;
  }
  *ref = c->operands[0];
  for (int i = 1; i < c->noperands; i++) {
    taso_ref_t pair[2] = {*ref, c->operands[i]};
    TRY_AT(r, at, taso_model_node(r->m, kind, p, pair, ref));
  }
  return TASO_OK;
}

static taso_err_t call_op(reader_t *r, const char *name, int at, value_t *v) {
  taso_op_kind_t kind = taso_op_lookup(name);
  if (kind == TASO_OP_COUNT || kind == TASO_OP_INPUT)
    return fail(r, at, TASO_ERR_UNKNOWN, "unknown operator or block '%s'", name);
  call_t c = {.nparams = 0};
  snprintf(c.text, sizeof c.text, "%s", name);
  TASO_TRY(expect(r, "("));
  if (!accept(r, ")")) {
    do
      TASO_TRY(call_arg(r, &c));
    while (accept(r, ","));
    TASO_TRY(expect(r, ")"));
  }
  if (c.nparams) TASO_TRY(append(r, at, &c, ")"));
  if ((taso_ops[kind].params & TASO_P_SHAPE) && !c.has_shape)
    return fail(r, at, TASO_ERR_PARSE, "'%s' needs a shape= parameter", name);
  taso_params_t p;
  taso_op_kind_t parsed;
  taso_err_t err = taso_op_template_parse(c.text, &parsed, &p);
  if (err) return taso_error_prefix(err, "%s:%d: in '%s': ", r->path, line_of(r, at), c.text);
  taso_ref_t ref;
  TASO_TRY(add_nodes(r, at, parsed, &p, &c, &ref));
  *v = tensor_value(ref, taso_ops[parsed].outputs);
  return TASO_OK;
}

/* ---- blocks -------------------------------------------------------------- */

/* "stage2.bottleneck1.": weights of a call are named after the call path. */
static taso_err_t name_call(reader_t *r, int b, int at, frame_t *callee) {
  frame_t *f = r->frame;
  if (b >= f->ncalls) {
    int *calls = realloc(f->calls, sizeof *calls * (size_t)r->nblocks);
    if (!calls) return taso_error(TASO_ERR_NOMEM, "%s: calls", r->path);
    memset(calls + f->ncalls, 0, sizeof *calls * (size_t)(r->nblocks - f->ncalls));
    f->calls = calls;
    f->ncalls = r->nblocks;
  }
  int n = snprintf(callee->prefix, sizeof callee->prefix, "%s%s%d.", f->prefix, r->blocks[b].name,
                   ++f->calls[b]);
  if (n >= (int)sizeof callee->prefix)
    return fail(r, at, TASO_ERR_LIMIT, "weight names nested too deep");
  return TASO_OK;
}

static taso_err_t bind_args(reader_t *r, const block_t *blk, int at, frame_t *callee) {
  int n = 0;
  TASO_TRY(expect(r, "("));
  if (!accept(r, ")")) {
    do {
      value_t v;
      TASO_TRY(eval_expr(r, &v));
      if (n < blk->nargs) {
        char name[NAME_MAX_LEN];
        const tok_t *t = &r->toks[blk->args[n]];
        snprintf(name, sizeof name, "%.*s", t->len, r->src + t->start);
        TASO_TRY(set_var(r, callee, name, v, false));
      }
      n++;
    } while (accept(r, ","));
    TASO_TRY(expect(r, ")"));
  }
  if (n != blk->nargs)
    return fail(r, at, TASO_ERR_PARSE, "block '%s' takes %d argument%s, got %d", blk->name,
                blk->nargs, blk->nargs == 1 ? "" : "s", n);
  return TASO_OK;
}

/* Runs the block's body in a frame of its own, then comes back. */
static taso_err_t run_call(reader_t *r, int b, int at, frame_t *callee, value_t *v) {
  TASO_TRY(bind_args(r, &r->blocks[b], at, callee));
  TASO_TRY(name_call(r, b, at, callee));
  if (r->depth == MAX_DEPTH)
    return fail(r, at, TASO_ERR_LIMIT, "blocks nested more than %d deep", MAX_DEPTH);
  frame_t *caller = r->frame;
  int back = r->pos;
  r->frame = callee;
  r->depth++;
  r->pos = r->blocks[b].body;
  taso_err_t err = exec_body(r);
  r->depth--;
  r->frame = caller;
  r->pos = back;
  if (err) return err;
  if (!callee->returned)
    return fail(r, at, TASO_ERR_PARSE, "block '%s' returned no value", r->blocks[b].name);
  *v = callee->result;
  return TASO_OK;
}

static taso_err_t call_block(reader_t *r, int b, int at, value_t *v) {
  frame_t callee = {.nvars = 0};
  taso_err_t err = run_call(r, b, at, &callee, v);
  frame_free(&callee);
  return err;
}

/* ---- statements ----------------------------------------------------------- */

static taso_err_t top_level_only(reader_t *r, int at, const char *what) {
  if (r->frame == r->global) return TASO_OK;
  return fail(r, at, TASO_ERR_PARSE, "'%s' only at the top level, not in a block", what);
}

static taso_err_t end_statement(reader_t *r) {
  char buf[64];
  if (r->toks[r->pos].kind == T_NL) {
    r->pos++;
    return TASO_OK;
  }
  if (is_punct(r, r->pos, "}") || r->toks[r->pos].kind == T_END) return TASO_OK;
  return fail(r, r->pos, TASO_ERR_PARSE, "unexpected '%s' after the statement",
              show(r, r->pos, buf, sizeof buf));
}

/* param NAME = EXPR; an override given by the caller wins. */
static taso_err_t stmt_param(reader_t *r) {
  int at = r->pos++;
  char name[NAME_MAX_LEN];
  int64_t n;
  TASO_TRY(top_level_only(r, at, "param"));
  TASO_TRY(take_name(r, name));
  TASO_TRY(expect(r, "="));
  TASO_TRY(eval_int(r, &n));
  if (lookup(r, name)) return fail(r, at, TASO_ERR_PARSE, "'%s' defined twice", name);
  for (int i = 0; i < r->nov; i++)
    if (!strcmp(r->ov[i].name, name)) n = r->ov[i].value;
  return set_var(r, r->global, name, int_value(n), true);
}

/* [e, e, ...] as a tensor shape. */
static taso_err_t parse_shape(reader_t *r, int *rank, int32_t *dim) {
  int at = r->pos;
  *rank = 0;
  TASO_TRY(expect(r, "["));
  if (accept(r, "]")) return TASO_OK;
  do {
    int64_t n;
    int t = r->pos;
    TASO_TRY(eval_int(r, &n));
    if (*rank == TASO_MAX_RANK)
      return fail(r, at, TASO_ERR_SHAPE, "impossible shape: more than %d axes", TASO_MAX_RANK);
    if (n < 1 || n > INT32_MAX)
      return fail(r, t, TASO_ERR_SHAPE, "impossible shape: size %lld on axis %d", (long long)n,
                  *rank);
    dim[(*rank)++] = (int32_t)n;
  } while (accept(r, ","));
  return expect(r, "]");
}

/* A tensor's name is its block path plus its own; one declared again (in
 * a loop) gets _2, _3, ... so that every name stays unique. */
static taso_err_t tensor_name(reader_t *r, int at, const char *local, char *out) {
  int n = snprintf(out, TASO_MODEL_NAME_LEN, "%s%s", r->frame->prefix, local);
  for (int k = 2; n < TASO_MODEL_NAME_LEN && taso_model_find_input(r->m, out) >= 0; k++)
    n = snprintf(out, TASO_MODEL_NAME_LEN, "%s%s_%d", r->frame->prefix, local, k);
  if (n >= TASO_MODEL_NAME_LEN) return fail(r, at, TASO_ERR_LIMIT, "tensor name too long");
  return TASO_OK;
}

/* input NAME [shape] and weight NAME [shape]. */
static taso_err_t stmt_tensor(reader_t *r, bool is_weight) {
  int at = r->pos++, rank;
  char name[NAME_MAX_LEN], full[TASO_MODEL_NAME_LEN];
  int32_t dim[TASO_MAX_RANK];
  taso_ref_t ref;
  if (!is_weight) TASO_TRY(top_level_only(r, at, "input"));
  TASO_TRY(take_name(r, name));
  if (reserved(name)) return fail(r, at, TASO_ERR_PARSE, "'%s' is a reserved word", name);
  TASO_TRY(parse_shape(r, &rank, dim));
  TASO_TRY(tensor_name(r, at, name, full));
  TRY_AT(r, at, taso_model_input(r->m, full, is_weight, rank, dim, NULL, &ref));
  return set_var(r, r->frame, name, tensor_value(ref, 1), false);
}

/* output EXPR, ...: a bare name names the output after itself. */
static taso_err_t stmt_output(reader_t *r) {
  TASO_TRY(top_level_only(r, r->pos, "output"));
  r->pos++;
  do {
    int at = r->pos;
    value_t v;
    char name[NAME_MAX_LEN];
    TASO_TRY(eval_tensor(r, &v));
    bool named = r->pos == at + 1;
    if (named) snprintf(name, sizeof name, "%.*s", r->toks[at].len, r->src + r->toks[at].start);
    if (v.outputs > 1) return fail(r, at, TASO_ERR_PARSE, "an output has two results");
    TRY_AT(r, at, taso_model_output(r->m, v.ref, named ? name : NULL));
  } while (accept(r, ","));
  return TASO_OK;
}

/* block NAME(a, b, ...) { body }: recorded here, run at each call. */
static taso_err_t stmt_block(reader_t *r) {
  int at = r->pos++;
  block_t blk = {.nargs = 0};
  TASO_TRY(top_level_only(r, at, "block"));
  TASO_TRY(take_name(r, blk.name));
  if (reserved(blk.name) || taso_op_lookup(blk.name) != TASO_OP_COUNT ||
      find_block(r, blk.name) >= 0)
    return fail(r, at, TASO_ERR_PARSE, "block name '%s' is taken (an operator, a word or a block)",
                blk.name);
  TASO_TRY(expect(r, "("));
  if (!accept(r, ")")) {
    do {
      char arg[NAME_MAX_LEN];
      if (blk.nargs == MAX_BLOCK_ARGS)
        return fail(r, at, TASO_ERR_LIMIT, "more than %d block arguments", MAX_BLOCK_ARGS);
      blk.args[blk.nargs++] = r->pos;
      TASO_TRY(take_name(r, arg));
    } while (accept(r, ","));
    TASO_TRY(expect(r, ")"));
  }
  if (!is_punct(r, r->pos, "{")) return expect(r, "{");
  blk.body = r->pos;
  r->pos = r->match[blk.body] + 1;
  block_t *blocks = realloc(r->blocks, sizeof *blocks * (size_t)(r->nblocks + 1));
  if (!blocks) return taso_error(TASO_ERR_NOMEM, "%s: blocks", r->path);
  r->blocks = blocks;
  r->blocks[r->nblocks++] = blk;
  return TASO_OK;
}

/* for NAME in range(A) or range(A, B) { body }: NAME runs from 0 (or A) to
 * B - 1. */
static taso_err_t stmt_for(reader_t *r) {
  int at = r->pos++;
  char name[NAME_MAX_LEN];
  int64_t lo = 0, hi;
  TASO_TRY(take_name(r, name));
  if (!is_word(r, r->pos, "in") || !is_word(r, r->pos + 1, "range"))
    return fail(r, r->pos, TASO_ERR_PARSE, "expected 'in range(...)'");
  r->pos += 2;
  TASO_TRY(expect(r, "("));
  TASO_TRY(eval_int(r, &hi));
  if (accept(r, ",")) {
    lo = hi;
    TASO_TRY(eval_int(r, &hi));
  }
  TASO_TRY(expect(r, ")"));
  if (!is_punct(r, r->pos, "{")) return expect(r, "{");
  if (hi - lo > MAX_LOOP) return fail(r, at, TASO_ERR_LIMIT, "more than %d iterations", MAX_LOOP);
  int body = r->pos;
  for (int64_t i = lo; i < hi && !r->frame->returned; i++) {
    TASO_TRY(set_var(r, r->frame, name, int_value(i), false));
    r->pos = body;
    TASO_TRY(exec_body(r));
  }
  r->pos = r->match[body] + 1;
  return TASO_OK;
}

/* Past the '{ }' that starts at or after the cursor on this line. */
static taso_err_t skip_braced(reader_t *r) {
  while (!is_punct(r, r->pos, "{")) {
    if (r->toks[r->pos].kind == T_END || r->toks[r->pos].kind == T_NL) return expect(r, "{");
    r->pos++;
  }
  r->pos = r->match[r->pos] + 1;
  return TASO_OK;
}

/* if C { } else if C { } else { }: 'else' on the line of the '}'. Once a
 * branch has run, the rest of the chain is skipped unevaluated. */
static taso_err_t stmt_if(reader_t *r) {
  r->pos++;
  int64_t cond;
  TASO_TRY(eval_int(r, &cond));
  if (!is_punct(r, r->pos, "{")) return expect(r, "{");
  int body = r->pos;
  if (cond) TASO_TRY(exec_body(r));
  r->pos = r->match[body] + 1;
  while (cond && is_word(r, r->pos, "else")) {
    r->pos++;
    TASO_TRY(skip_braced(r));
  }
  if (cond || !is_word(r, r->pos, "else")) return TASO_OK;
  r->pos++;
  if (is_word(r, r->pos, "if")) return stmt_if(r);
  if (!is_punct(r, r->pos, "{")) return expect(r, "{");
  return exec_body(r);
}

static taso_err_t stmt_return(reader_t *r) {
  int at = r->pos++;
  if (r->frame == r->global) return fail(r, at, TASO_ERR_PARSE, "'return' outside a block");
  TASO_TRY(eval_expr(r, &r->frame->result));
  r->frame->returned = true;
  return TASO_OK;
}

/* NAME = EXPR, or NAME, NAME = EXPR for an operator with two results. */
static taso_err_t stmt_assign(reader_t *r) {
  int at = r->pos, n = 0;
  char names[2][NAME_MAX_LEN];
  do {
    if (n == 2) return fail(r, at, TASO_ERR_PARSE, "at most two names on the left");
    TASO_TRY(take_name(r, names[n]));
    var_t *old = lookup(r, names[n]);
    if (reserved(names[n]) || (old && old->is_param))
      return fail(r, at, TASO_ERR_PARSE, "cannot assign to '%s'", names[n]);
    n++;
  } while (accept(r, ","));
  TASO_TRY(expect(r, "="));
  value_t v;
  TASO_TRY(eval_expr(r, &v));
  if (n == 2 && (!v.tensor || v.outputs != 2))
    return fail(r, at, TASO_ERR_PARSE, "two names need an operator with two results");
  if (n == 1 && v.tensor && v.outputs == 2)
    return fail(r, at, TASO_ERR_PARSE, "the operator has two results: name both ('a, b = ...')");
  for (int i = 0; i < n; i++) {
    value_t one = v;
    if (v.tensor) one = tensor_value(v.ref + i, 1);
    TASO_TRY(set_var(r, r->frame, names[i], one, false));
  }
  return TASO_OK;
}

static taso_err_t exec_stmt(reader_t *r) {
  int at = r->pos;
  char buf[64];
  if (is_word(r, at, "param")) return stmt_param(r);
  if (is_word(r, at, "input")) return stmt_tensor(r, false);
  if (is_word(r, at, "weight")) return stmt_tensor(r, true);
  if (is_word(r, at, "output")) return stmt_output(r);
  if (is_word(r, at, "block")) return stmt_block(r);
  if (is_word(r, at, "for")) return stmt_for(r);
  if (is_word(r, at, "if")) return stmt_if(r);
  if (is_word(r, at, "return")) return stmt_return(r);
  if (r->toks[at].kind == T_WORD && (is_punct(r, at + 1, "=") || is_punct(r, at + 1, ",")))
    return stmt_assign(r);
  return fail(r, at, TASO_ERR_PARSE, "expected a statement, found '%s'",
              show(r, at, buf, sizeof buf));
}

/* Statements up to the '}' (or the end of the file at the top level); a
 * return skips the rest. */
static taso_err_t exec_stmts(reader_t *r, int close) {
  for (;;) {
    while (r->toks[r->pos].kind == T_NL)
      r->pos++;
    if (r->pos == close || r->toks[r->pos].kind == T_END) return TASO_OK;
    if (r->frame->returned) {
      r->pos = close;
      return TASO_OK;
    }
    bool compound =
        is_word(r, r->pos, "block") || is_word(r, r->pos, "for") || is_word(r, r->pos, "if");
    TASO_TRY(exec_stmt(r));
    if (!compound) TASO_TRY(end_statement(r));
  }
}

/* At a '{': runs the statements in it and moves past its '}'. */
static taso_err_t exec_body(reader_t *r) {
  int close = r->match[r->pos];
  r->pos++;
  TASO_TRY(exec_stmts(r, close));
  r->pos = close + 1;
  return TASO_OK;
}

/* ---- files, overrides, built-in models ------------------------------------ */

static taso_err_t read_text(const char *path, char **out) {
  FILE *f = fopen(path, "rb");
  if (!f) return taso_error(TASO_ERR_IO, "%s: %s", path, strerror(errno));
  size_t cap = 4096, n = 0;
  char *buf = malloc(cap);
  while (buf) {
    n += fread(buf + n, 1, cap - 1 - n, f);
    if (n < cap - 1) break;
    char *bigger = realloc(buf, cap * 2);
    if (!bigger) free(buf);
    buf = bigger;
    cap *= 2;
  }
  bool bad = ferror(f);
  fclose(f);
  if (!buf) return taso_error(TASO_ERR_NOMEM, "%s", path);
  buf[n] = 0;
  if (bad || strlen(buf) != n) {
    free(buf);
    return taso_error(bad ? TASO_ERR_IO : TASO_ERR_FORMAT, "%s: %s", path,
                      bad ? "read error" : "not a text file (NUL byte)");
  }
  *out = buf;
  return TASO_OK;
}

/* "batch=1,size=64" into (name, value) pairs. */
static taso_err_t parse_overrides(reader_t *r, const char *text) {
  for (const char *s = text; s && *s;) {
    size_t len = strcspn(s, ",");
    char item[NAME_MAX_LEN + 32], *eq, *end;
    snprintf(item, sizeof item, "%.*s", (int)len, s);
    eq = strchr(item, '=');
    long long v = eq ? strtoll(eq + 1, &end, 10) : 0;
    if (!eq || eq == item || eq - item >= NAME_MAX_LEN || !eq[1] || *end || len >= sizeof item)
      return taso_error(TASO_ERR_PARSE, "%s: override '%.*s' is not NAME=INTEGER", r->path,
                        (int)len, s);
    override_t *ov = realloc(r->ov, sizeof *ov * (size_t)(r->nov + 1));
    if (!ov) return taso_error(TASO_ERR_NOMEM, "overrides");
    r->ov = ov;
    snprintf(ov[r->nov].name, NAME_MAX_LEN, "%.*s", (int)(eq - item), item);
    ov[r->nov++].value = v;
    s += len + (s[len] == ',');
  }
  return TASO_OK;
}

/* The names after a top-level 'param', found before running anything so
 * that a misspelt override fails before a large model is built. */
static int declared_params(const reader_t *r, char *list, size_t len, const char *want) {
  int found = 0, depth = 0;
  list[0] = 0;
  for (int i = 0; i + 1 < r->ntoks; i++) {
    depth += is_punct(r, i, "{") - is_punct(r, i, "}");
    if (depth || !is_word(r, i, "param") || r->toks[i + 1].kind != T_WORD) continue;
    const tok_t *t = &r->toks[i + 1];
    size_t n = strlen(list);
    snprintf(list + n, len - n, "%s%.*s", n ? ", " : "", t->len, r->src + t->start);
    found |= (int)strlen(want) == t->len && !strncmp(want, r->src + t->start, (size_t)t->len);
  }
  return found;
}

static taso_err_t check_overrides(const reader_t *r) {
  char list[512];
  for (int i = 0; i < r->nov; i++)
    if (!declared_params(r, list, sizeof list, r->ov[i].name))
      return taso_error(TASO_ERR_UNKNOWN,
                        "%s: unknown parameter '%s' in overrides (parameters: %s)", r->path,
                        r->ov[i].name, list[0] ? list : "none");
  return TASO_OK;
}

static taso_err_t run(reader_t *r, const char *overrides) {
  TASO_TRY(read_text(r->path, &r->src));
  TASO_TRY(lex(r));
  TASO_TRY(match_braces(r));
  TASO_TRY(parse_overrides(r, overrides));
  TASO_TRY(check_overrides(r));
  TASO_TRY(exec_stmts(r, -1));
  if (r->m->graph.noutputs == 0)
    return taso_error(TASO_ERR_PARSE, "%s: the model has no output statement", r->path);
  return TASO_OK;
}

/* The model's name: the file's, without folder and ".model". */
static void model_name(const char *path, char *name, size_t len) {
  const char *base = strrchr(path, '/');
  base = base ? base + 1 : path;
  size_t n = strlen(base);
  if (n > 6 && !strcmp(base + n - 6, ".model")) n -= 6;
  snprintf(name, len, "%.*s", (int)n, base);
}

taso_err_t taso_model_parse_file(const char *path, const char *overrides, taso_model_t *m) {
  char name[TASO_MODEL_NAME_LEN];
  model_name(path, name, sizeof name);
  taso_model_init(m, name);
  frame_t global = {.nvars = 0};
  reader_t r = {.path = path, .m = m, .global = &global, .frame = &global};
  taso_err_t err = run(&r, overrides);
  frame_free(&global);
  free(r.src);
  free(r.toks);
  free(r.match);
  free(r.blocks);
  free(r.ov);
  if (err) { /* the model is left empty, not half-built */
    taso_model_free(m);
    taso_model_init(m, name);
  }
  return err;
}

/* $TASO_DATA_DIR/models when set (an installed or moved data folder), else
 * the source tree's data/models compiled in. */
static void models_dir(char *dir, size_t len) {
  const char *env = getenv("TASO_DATA_DIR");
  if (env && env[0])
    snprintf(dir, len, "%s/models", env);
  else
    snprintf(dir, len, "%s", TASO_MODELS_DIR);
}

static int compare_names(const void *a, const void *b) {
  return strcmp((const char *)a, (const char *)b);
}

int taso_model_builtin_list(char (*names)[64], int max) {
  char dir[1024];
  models_dir(dir, sizeof dir);
  DIR *d = opendir(dir);
  if (!d) return 0;
  int n = 0;
  for (struct dirent *e; (e = readdir(d));) {
    size_t len = strlen(e->d_name);
    if (len <= 6 || len - 6 >= 64 || strcmp(e->d_name + len - 6, ".model") || e->d_name[0] == '.')
      continue;
    if (n < max) snprintf(names[n], 64, "%.*s", (int)(len - 6), e->d_name);
    n++;
  }
  closedir(d);
  qsort(names, (size_t)(n < max ? n : max), sizeof *names, compare_names);
  return n;
}

/* "resnet50, squeezenet, ..." for an error message. */
static void known_models(char *list, size_t len) {
  char names[64][64];
  int n = taso_model_builtin_list(names, 64);
  list[0] = 0;
  for (int i = 0; i < n && i < 64; i++) {
    size_t used = strlen(list);
    snprintf(list + used, len - used, "%s%.63s", i ? ", " : "", names[i]);
  }
}

taso_err_t taso_model_builtin_path(const char *name, char *path, int len) {
  char dir[1024], list[768];
  models_dir(dir, sizeof dir);
  bool plain = name[0] && strspn(name, "abcdefghijklmnopqrstuvwxyz0123456789_-") == strlen(name);
  if (plain) {
    int n = snprintf(path, (size_t)len, "%s/%s.model", dir, name);
    if (n >= len) return taso_error(TASO_ERR_LIMIT, "path of model '%s' too long", name);
    FILE *f = fopen(path, "r");
    if (f) {
      fclose(f);
      return TASO_OK;
    }
  }
  known_models(list, sizeof list);
  return taso_error(TASO_ERR_UNKNOWN, "unknown model '%s' (built-in models in %s: %s)", name, dir,
                    list[0] ? list : "none");
}
