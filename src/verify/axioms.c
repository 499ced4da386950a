/* Axiom files: reading, splitting into blocks, checking (see axioms.h). */
#define _POSIX_C_SOURCE 200809L

#include "axioms.h"
#include "hash.h"

#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "z3ctx.h"

#define MAX_FILE_BYTES (16 << 20) /* an axiom file is text of a few kB */

/* ------------------------------------------------------------------------ */
/* Small helpers                                                            */
/* ------------------------------------------------------------------------ */

static taso_err_t read_text(const char *path, char **out) {
  FILE *f = fopen(path, "rb");
  if (!f) return taso_error(TASO_ERR_IO, "%s: %s", path, strerror(errno));
  char *buf = malloc(MAX_FILE_BYTES + 1);
  if (!buf) {
    fclose(f);
    return taso_error(TASO_ERR_NOMEM, "%s: no memory to read it", path);
  }
  size_t n = fread(buf, 1, MAX_FILE_BYTES + 1, f);
  bool bad = ferror(f) != 0;
  fclose(f);
  if (bad) {
    free(buf);
    return taso_error(TASO_ERR_IO, "%s: read failed", path);
  }
  if (n > MAX_FILE_BYTES) {
    free(buf);
    return taso_error(TASO_ERR_LIMIT, "%s: larger than %d bytes", path, MAX_FILE_BYTES);
  }
  buf[n] = '\0';
  if (strlen(buf) != n) {
    free(buf);
    return taso_error(TASO_ERR_PARSE, "%s: holds a NUL byte: not a text file", path);
  }
  *out = buf;
  return TASO_OK;
}

static char *trim(char *s) {
  while (isspace((unsigned char)*s))
    s++;
  char *e = s + strlen(s);
  while (e > s && isspace((unsigned char)e[-1]))
    *--e = '\0';
  return s;
}

/* A copy of a + b, or NULL. */
static char *concat2(const char *a, const char *b) {
  size_t la = strlen(a), lb = strlen(b);
  char *s = malloc(la + lb + 1);
  if (!s) return NULL;
  memcpy(s, a, la);
  memcpy(s + la, b, lb + 1);
  return s;
}

static bool valid_name(const char *s) {
  size_t n = strlen(s);
  if (n == 0 || n >= TASO_AXIOM_NAME_LEN) return false;
  for (size_t i = 0; i < n; i++)
    if (!isalnum((unsigned char)s[i]) && s[i] != '_' && s[i] != '-') return false;
  return true;
}

/* ------------------------------------------------------------------------ */
/* decls.smt2                                                               */
/* ------------------------------------------------------------------------ */

/* Splits one line of s-expression text into tokens: "(", ")" and atoms. */
static int tokenize(char *line, char **tok, int max) {
  int n = 0;
  char *p = line;
  while (*p && n < max) {
    if (isspace((unsigned char)*p)) {
      p++;
    } else if (*p == '(' || *p == ')') {
      tok[n++] = *p == '(' ? "(" : ")";
      p++;
    } else {
      tok[n++] = p;
      while (*p && !isspace((unsigned char)*p) && *p != '(' && *p != ')')
        p++;
      if (*p == '(' || *p == ')') {
        /* An atom ends here; keep the bracket for the next token. */
        char c = *p;
        *p = '\0';
        if (n < max) tok[n++] = c == '(' ? "(" : ")";
        p++;
      } else if (*p) {
        *p++ = '\0';
      }
    }
  }
  return n;
}

static taso_err_t parse_decl_line(taso_axioms_t *ax, const char *path, int lineno, char *line,
                                  bool *have_sort) {
  char *tok[32];
  int n = tokenize(line, tok, 32);
  if (n == 5 && !strcmp(tok[0], "(") && !strcmp(tok[1], "declare-sort") && !strcmp(tok[2], "T") &&
      !strcmp(tok[3], "0") && !strcmp(tok[4], ")")) {
    *have_sort = true;
    return TASO_OK;
  }
  /* ( declare-fun NAME ( ARGS... ) T|Int ) */
  if (n < 7 || strcmp(tok[0], "(") || strcmp(tok[1], "declare-fun") || strcmp(tok[3], "(") ||
      strcmp(tok[n - 1], ")") || (strcmp(tok[n - 2], "T") && strcmp(tok[n - 2], "Int")) ||
      strcmp(tok[n - 3], ")"))
    return taso_error(TASO_ERR_PARSE,
                      "%s:%d: expected (declare-sort T 0) or (declare-fun NAME (Int... T...) T) "
                      "or (declare-fun NAME (Int... T...) Int)",
                      path, lineno);
  if (!*have_sort)
    return taso_error(TASO_ERR_PARSE, "%s:%d: (declare-sort T 0) must come first", path, lineno);
  taso_decl_t d;
  memset(&d, 0, sizeof d);
  if (strlen(tok[2]) >= sizeof d.name || !valid_name(tok[2]))
    return taso_error(TASO_ERR_PARSE, "%s:%d: bad function name '%s'", path, lineno, tok[2]);
  snprintf(d.name, sizeof d.name, "%s", tok[2]);
  d.ret_int = strcmp(tok[n - 2], "Int") == 0;
  for (int i = 4; i < n - 3; i++) {
    if (d.nargs == TASO_DECL_MAX_ARGS)
      return taso_error(TASO_ERR_LIMIT, "%s:%d: %s has more than %d arguments", path, lineno,
                        d.name, TASO_DECL_MAX_ARGS);
    if (strcmp(tok[i], "Int") && strcmp(tok[i], "T"))
      return taso_error(TASO_ERR_PARSE, "%s:%d: argument sort '%s' is neither Int nor T", path,
                        lineno, tok[i]);
    d.arg_int[d.nargs++] = strcmp(tok[i], "Int") == 0;
  }
  if (taso_axioms_decl(ax, d.name))
    return taso_error(TASO_ERR_PARSE, "%s:%d: %s declared twice", path, lineno, d.name);
  taso_decl_t *grown = realloc(ax->decls, (size_t)(ax->ndecls + 1) * sizeof *grown);
  if (!grown) return taso_error(TASO_ERR_NOMEM, "%s: no memory for declarations", path);
  ax->decls = grown;
  ax->decls[ax->ndecls++] = d;
  return TASO_OK;
}

static taso_err_t load_decls(taso_axioms_t *ax, const char *path) {
  char *text = NULL;
  TASO_TRY(read_text(path, &text));
  taso_err_t err = TASO_OK;
  bool have_sort = false;
  int lineno = 0;
  char *save = NULL;
  /* strtok_r would merge empty lines and lose the numbering. */
  for (char *line = text; line && err == TASO_OK; line = save) {
    char *nl = strchr(line, '\n');
    save = nl ? nl + 1 : NULL;
    if (nl) *nl = '\0';
    lineno++;
    char *t = trim(line);
    if (*t == '\0' || *t == ';') continue;
    err = parse_decl_line(ax, path, lineno, t, &have_sort);
  }
  free(text);
  if (err == TASO_OK && (!have_sort || ax->ndecls == 0))
    err = taso_error(TASO_ERR_PARSE, "%s: declares no sort T or no function", path);
  if (err == TASO_OK && !(ax->decls_path = strdup(path)))
    err = taso_error(TASO_ERR_NOMEM, "%s: no memory", path);
  return err;
}

const taso_decl_t *taso_axioms_decl(const taso_axioms_t *ax, const char *name) {
  for (int i = 0; i < ax->ndecls; i++)
    if (strcmp(ax->decls[i].name, name) == 0) return &ax->decls[i];
  return NULL;
}

void taso_axioms_declare(const taso_axioms_t *ax, Z3_context c, Z3_sort *tsort, Z3_func_decl *fns) {
  Z3_sort t = Z3_mk_uninterpreted_sort(c, Z3_mk_string_symbol(c, "T"));
  Z3_sort i = Z3_mk_int_sort(c);
  for (int k = 0; k < ax->ndecls; k++) {
    const taso_decl_t *d = &ax->decls[k];
    Z3_sort dom[TASO_DECL_MAX_ARGS];
    for (int a = 0; a < d->nargs; a++)
      dom[a] = d->arg_int[a] ? i : t;
    fns[k] = Z3_mk_func_decl(c, Z3_mk_string_symbol(c, d->name), (unsigned)d->nargs, dom,
                             d->ret_int ? i : t);
  }
  *tsort = t;
}

/* Z3 reports (error "line 3 column 33: unknown constant foo (T) "):
 * rewritten as FILE:3:33: unknown constant foo (T). */
static taso_err_t z3_parse_error(const char *file, const char *msg) {
  const char *p = strstr(msg, "line ");
  int line = 0, col = 0, used = 0;
  char text[512];
  snprintf(text, sizeof text, "%s", msg);
  if (p && sscanf(p, "line %d column %d: %n", &line, &col, &used) == 2 && used > 0) {
    snprintf(text, sizeof text, "%s", p + used);
  } else if (!strncmp(text, "(error \"", 8)) {
    memmove(text, text + 8, strlen(text + 8) + 1);
  }
  /* Drop the closing quote, bracket and blanks Z3 leaves. */
  size_t n = strlen(text);
  while (n > 0 && (isspace((unsigned char)text[n - 1]) || text[n - 1] == ')' || text[n - 1] == '"'))
    text[--n] = '\0';
  if (line > 0) return taso_error(TASO_ERR_PARSE, "%s:%d:%d: %s", file, line, col, text);
  return taso_error(TASO_ERR_PARSE, "%s: %s", file, text);
}

taso_err_t taso_axioms_parse(const taso_axioms_t *ax, Z3_context c, Z3_sort tsort,
                             const Z3_func_decl *fns, const char *file, const char *text,
                             int nextra, const Z3_symbol *extra_names, const Z3_func_decl *extra,
                             Z3_ast_vector *out) {
  int n = ax->ndecls + nextra;
  Z3_symbol *names = malloc(sizeof *names * (size_t)(n > 0 ? n : 1));
  Z3_func_decl *decls = malloc(sizeof *decls * (size_t)(n > 0 ? n : 1));
  if (!names || !decls) {
    free(names);
    free(decls);
    return taso_error(TASO_ERR_NOMEM, "%s: no memory to parse", file);
  }
  for (int k = 0; k < ax->ndecls; k++) {
    names[k] = Z3_mk_string_symbol(c, ax->decls[k].name);
    decls[k] = fns[k];
  }
  for (int k = 0; k < nextra; k++) {
    names[ax->ndecls + k] = extra_names[k];
    decls[ax->ndecls + k] = extra[k];
  }
  Z3_symbol tname = Z3_mk_string_symbol(c, "T");
  char msg[512];
  taso_z3_take_error(NULL, 0);
  Z3_ast_vector v = Z3_parse_smtlib2_string(c, text, 1, &tname, &tsort, (unsigned)n, names, decls);
  free(names);
  free(decls);
  if (taso_z3_take_error(msg, sizeof msg)) return z3_parse_error(file, msg);
  if (!v) return taso_error(TASO_ERR_PARSE, "%s: Z3 could not parse it", file);
  *out = v;
  return TASO_OK;
}

/* ------------------------------------------------------------------------ */
/* Axiom files                                                              */
/* ------------------------------------------------------------------------ */

static void axiom_free(taso_axiom_t *a) {
  free(a->file);
  free(a->text);
  for (int i = 0; i < a->nmeta; i++) {
    free(a->meta[i].key);
    free(a->meta[i].value);
  }
  free(a->meta);
}

static taso_err_t add_meta(taso_axiom_t *a, const char *key, const char *value, int line) {
  taso_axiom_meta_t *grown = realloc(a->meta, (size_t)(a->nmeta + 1) * sizeof *grown);
  if (!grown) return taso_error(TASO_ERR_NOMEM, "no memory for axiom %s", a->name);
  a->meta = grown;
  taso_axiom_meta_t *m = &a->meta[a->nmeta];
  m->key = strdup(key);
  m->value = strdup(value);
  m->line = line;
  if (!m->key || !m->value) {
    free(m->key);
    free(m->value);
    return taso_error(TASO_ERR_NOMEM, "no memory for axiom %s", a->name);
  }
  a->nmeta++;
  return TASO_OK;
}

static taso_err_t append_line(taso_axiom_t *a, const char *line) {
  char *with_nl = concat2(line, "\n");
  char *joined = with_nl ? concat2(a->text, with_nl) : NULL;
  free(with_nl);
  if (!joined) return taso_error(TASO_ERR_NOMEM, "no memory for axiom %s", a->name);
  free(a->text);
  a->text = joined;
  return TASO_OK;
}

/* Starts a block at lineno: the text is lineno - 1 empty lines, so that
 * the header line is line lineno of the text as of the file. */
static taso_err_t start_block(taso_axioms_t *ax, const char *path, int lineno,
                              taso_axiom_kind_t kind, const char *name) {
  if (!valid_name(name))
    return taso_error(TASO_ERR_PARSE,
                      "%s:%d: bad %s name '%s' (letters, digits, _ or -, at most %d)", path, lineno,
                      kind == TASO_AXIOM_LEMMA ? "lemma" : "axiom", name, TASO_AXIOM_NAME_LEN - 1);
  int dup = taso_axioms_find(ax, name);
  if (dup >= 0)
    return taso_error(TASO_ERR_PARSE, "%s:%d: %s is already defined at %s:%d", path, lineno, name,
                      ax->v[dup].file, ax->v[dup].line);
  if (ax->n == ax->cap) {
    int cap = ax->cap ? 2 * ax->cap : 64;
    taso_axiom_t *grown = realloc(ax->v, (size_t)cap * sizeof *grown);
    if (!grown) return taso_error(TASO_ERR_NOMEM, "%s: no memory for axioms", path);
    ax->v = grown;
    ax->cap = cap;
  }
  taso_axiom_t *a = &ax->v[ax->n];
  memset(a, 0, sizeof *a);
  snprintf(a->name, sizeof a->name, "%s", name);
  a->kind = kind;
  a->line = lineno;
  a->enabled = true;
  a->file = strdup(path);
  a->text = malloc((size_t)lineno);
  if (!a->file || !a->text) {
    axiom_free(a);
    return taso_error(TASO_ERR_NOMEM, "%s: no memory for axioms", path);
  }
  memset(a->text, '\n', (size_t)lineno - 1);
  a->text[lineno - 1] = '\0';
  ax->n++;
  return TASO_OK;
}

/* Each hint of a lemma must parse over the lemma's variables. */
static taso_err_t check_hints(const taso_axioms_t *ax, Z3_context c, Z3_sort t,
                              const Z3_func_decl *fns, const taso_axiom_t *a, Z3_ast f) {
  taso_err_t err = TASO_OK;
  if (!f) return TASO_OK;
  bool quantified = Z3_get_ast_kind(c, f) == Z3_QUANTIFIER_AST && Z3_is_quantifier_forall(c, f);
  for (int i = 0; i < a->nmeta; i++) {
    const taso_axiom_meta_t *m = &a->meta[i];
    if (strcmp(m->key, "hint") != 0) continue;
    if (a->kind != TASO_AXIOM_LEMMA)
      return taso_error(TASO_ERR_PARSE, "%s:%d: only lemmas take hints", a->file, m->line);
    if (!quantified)
      return taso_error(TASO_ERR_PARSE, "%s:%d: a hint needs a lemma of the form (forall ...)",
                        a->file, m->line);
    unsigned nb = Z3_get_quantifier_num_bound(c, f);
    Z3_symbol names[65];
    Z3_func_decl consts[65];
    if (nb > 64) return taso_error(TASO_ERR_LIMIT, "%s:%d: too many variables", a->file, a->line);
    for (unsigned b = 0; b < nb; b++) {
      names[b] = Z3_get_quantifier_bound_name(c, f, b);
      consts[b] = Z3_mk_func_decl(c, names[b], 0, NULL, Z3_get_quantifier_bound_sort(c, f, b));
    }
    char *cmd = malloc(strlen(m->value) * 2 + 32);
    if (!cmd) return taso_error(TASO_ERR_NOMEM, "no memory for a hint");
    sprintf(cmd, "(assert (= taso_hint %s))", m->value);
    names[nb] = Z3_mk_string_symbol(c, "taso_hint");
    consts[nb] = Z3_mk_fresh_func_decl(c, "taso_hint", 0, NULL, t);
    Z3_ast_vector hv;
    char where[1024];
    snprintf(where, sizeof where, "%s:%d: hint", a->file, m->line);
    err = taso_axioms_parse(ax, c, t, fns, where, cmd, (int)nb + 1, names, consts, &hv);
    free(cmd);
    if (err != TASO_OK) return err;
    Z3_ast_vector_inc_ref(c, hv);
    Z3_ast_vector_dec_ref(c, hv);
  }
  return TASO_OK;
}

/* Checks a block in a scratch context: one assertion, Z3 accepts it, and a
 * lemma's hints parse over its variables. */
static taso_err_t check_block(const taso_axioms_t *ax, Z3_context c, Z3_sort t,
                              const Z3_func_decl *fns, const taso_axiom_t *a) {
  Z3_ast_vector v = NULL;
  taso_err_t err = taso_axioms_parse(ax, c, t, fns, a->file, a->text, 0, NULL, NULL, &v);
  if (err != TASO_OK) return err;
  /* The vector keeps f alive: it is released on the way out. */
  Z3_ast_vector_inc_ref(c, v);
  unsigned n = Z3_ast_vector_size(c, v);
  Z3_ast f = n == 1 ? Z3_ast_vector_get(c, v, 0) : NULL;
  err = check_hints(ax, c, t, fns, a, f);
  Z3_ast_vector_dec_ref(c, v);
  if (n != 1)
    return taso_error(TASO_ERR_PARSE, "%s:%d: %s %s must hold exactly one (assert ...), not %u",
                      a->file, a->line, a->kind == TASO_AXIOM_LEMMA ? "lemma" : "axiom", a->name,
                      n);
  return err;
}

taso_err_t taso_axioms_add_file(taso_axioms_t *ax, const char *path) {
  char *text = NULL;
  TASO_TRY(read_text(path, &text));
  taso_err_t err = TASO_OK;
  int first = ax->n, lineno = 0;
  taso_axiom_t *cur = NULL;
  char *next = NULL;
  for (char *line = text; line && err == TASO_OK; line = next) {
    char *nl = strchr(line, '\n');
    next = nl ? nl + 1 : NULL;
    if (nl) *nl = '\0';
    lineno++;
    char copy[1024];
    if (strlen(line) >= sizeof copy) {
      err = taso_error(TASO_ERR_LIMIT, "%s:%d: line longer than %d characters", path, lineno,
                       (int)sizeof copy - 1);
      break;
    }
    snprintf(copy, sizeof copy, "%s", line);
    char *t = trim(copy);
    if (!strncmp(t, ";; @", 4)) {
      char *key = t + 4, *value = key;
      while (*value && !isspace((unsigned char)*value))
        value++;
      if (*value) *value++ = '\0';
      value = trim(value);
      if (!strcmp(key, "axiom") || !strcmp(key, "lemma")) {
        err = start_block(ax, path, lineno,
                          !strcmp(key, "axiom") ? TASO_AXIOM_AXIOM : TASO_AXIOM_LEMMA, value);
        cur = err == TASO_OK ? &ax->v[ax->n - 1] : NULL;
        if (cur) err = append_line(cur, "");
        continue;
      }
      if (!cur) {
        err = taso_error(TASO_ERR_PARSE, "%s:%d: '@%s' before the first ';; @axiom NAME' line",
                         path, lineno, key);
        break;
      }
      if (*key == '\0' || *value == '\0') {
        err = taso_error(TASO_ERR_PARSE, "%s:%d: expected ';; @KEY VALUE'", path, lineno);
        break;
      }
      err = add_meta(cur, key, value, lineno);
      if (err == TASO_OK) err = append_line(cur, "");
      continue;
    }
    if (!cur) {
      if (*t != '\0' && *t != ';')
        err = taso_error(TASO_ERR_PARSE,
                         "%s:%d: text outside a block (a block starts with ';; @axiom NAME' or "
                         "';; @lemma NAME')",
                         path, lineno);
      continue;
    }
    err = append_line(cur, line);
  }
  free(text);
  if (err == TASO_OK && ax->n == first)
    err =
        taso_error(TASO_ERR_PARSE, "%s: holds no ';; @axiom NAME' or ';; @lemma NAME' block", path);

  /* Check every new block now, so that a bad file fails at load time. */
  Z3_context c = NULL;
  if (err == TASO_OK) err = taso_z3_open(0, &c);
  if (err == TASO_OK) {
    Z3_func_decl *fns = malloc(sizeof *fns * (size_t)ax->ndecls);
    Z3_sort t;
    if (!fns) {
      err = taso_error(TASO_ERR_NOMEM, "no memory");
    } else {
      taso_axioms_declare(ax, c, &t, fns);
      for (int i = first; i < ax->n && err == TASO_OK; i++) {
        err = check_block(ax, c, t, fns, &ax->v[i]);
        if (err != TASO_OK) {
          char detail[768];
          snprintf(detail, sizeof detail, "%s", taso_error_detail());
          err = taso_error(err, "%s (in %s %s)", detail,
                           ax->v[i].kind == TASO_AXIOM_LEMMA ? "lemma" : "axiom", ax->v[i].name);
        }
      }
      free(fns);
    }
    taso_z3_close(c);
  }
  if (err != TASO_OK) {
    for (int i = first; i < ax->n; i++)
      axiom_free(&ax->v[i]);
    ax->n = first;
  }
  return err;
}

static int compare_names(const void *a, const void *b) {
  return strcmp(*(char *const *)a, *(char *const *)b);
}

/* The *.smt2 files of a folder other than decls.smt2, sorted. */
static taso_err_t list_folder(const char *dir, char ***names, int *n) {
  DIR *d = opendir(dir);
  if (!d) return taso_error(TASO_ERR_IO, "%s: %s", dir, strerror(errno));
  taso_err_t err = TASO_OK;
  *names = NULL;
  *n = 0;
  struct dirent *e;
  while ((e = readdir(d)) != NULL && err == TASO_OK) {
    size_t len = strlen(e->d_name);
    if (len < 6 || strcmp(e->d_name + len - 5, ".smt2") || !strcmp(e->d_name, "decls.smt2"))
      continue;
    char **grown = realloc(*names, (size_t)(*n + 1) * sizeof *grown);
    if (!grown || !(grown[*n] = strdup(e->d_name))) {
      if (grown) *names = grown;
      err = taso_error(TASO_ERR_NOMEM, "%s: no memory to list it", dir);
      break;
    }
    *names = grown;
    (*n)++;
  }
  closedir(d);
  if (err == TASO_OK) qsort(*names, (size_t)*n, sizeof **names, compare_names);
  return err;
}

static char *join_path(const char *dir, const char *name) {
  char *a = concat2(dir, "/");
  char *p = a ? concat2(a, name) : NULL;
  free(a);
  return p;
}

static bool is_file(const char *path) {
  struct stat st;
  return stat(path, &st) == 0 && S_ISREG(st.st_mode);
}

taso_err_t taso_axioms_load(const char *path, taso_axioms_t **out) {
  struct stat st;
  *out = NULL;
  if (!path || stat(path, &st) != 0)
    return taso_error(TASO_ERR_IO, "%s: %s", path ? path : "(null)",
                      path ? strerror(errno) : "no axiom path");
  taso_axioms_t *ax = calloc(1, sizeof *ax);
  if (!ax) return taso_error(TASO_ERR_NOMEM, "%s: no memory for axioms", path);
  taso_err_t err = TASO_OK;
  if (S_ISDIR(st.st_mode)) {
    char *decls = join_path(path, "decls.smt2");
    char **names = NULL;
    int n = 0;
    if (!decls)
      err = taso_error(TASO_ERR_NOMEM, "no memory");
    else if (!is_file(decls))
      err = taso_error(TASO_ERR_IO, "%s: no decls.smt2 in this axiom folder", path);
    if (err == TASO_OK) err = load_decls(ax, decls);
    if (err == TASO_OK) err = list_folder(path, &names, &n);
    for (int i = 0; i < n && err == TASO_OK; i++) {
      char *file = join_path(path, names[i]);
      err = file ? taso_axioms_add_file(ax, file) : taso_error(TASO_ERR_NOMEM, "no memory");
      free(file);
    }
    if (err == TASO_OK && ax->n == 0)
      err = taso_error(TASO_ERR_PARSE, "%s: no axiom files (*.smt2 besides decls.smt2)", path);
    for (int i = 0; i < n; i++)
      free(names[i]);
    free(names);
    free(decls);
  } else {
    /* One file: the declarations of its folder, else of the folder above
     * (known-bad fixtures live in a subfolder of the axioms). */
    char *copy = strdup(path), *decls = NULL;
    if (!copy) err = taso_error(TASO_ERR_NOMEM, "no memory");
    if (err == TASO_OK) {
      char *slash = strrchr(copy, '/');
      const char *dir = slash ? (*slash = '\0', copy) : ".";
      if (slash == copy) dir = "/";
      decls = join_path(dir, "decls.smt2");
      if (decls && !is_file(decls)) {
        free(decls);
        char *up = join_path(dir, "..");
        decls = up ? join_path(up, "decls.smt2") : NULL;
        free(up);
        if (decls && !is_file(decls))
          err =
              taso_error(TASO_ERR_IO, "%s: no decls.smt2 next to it or in the folder above", path);
      }
      if (err == TASO_OK && !decls) err = taso_error(TASO_ERR_NOMEM, "no memory");
    }
    if (err == TASO_OK) err = load_decls(ax, decls);
    if (err == TASO_OK) err = taso_axioms_add_file(ax, path);
    free(decls);
    free(copy);
  }
  if (err != TASO_OK) {
    taso_axioms_free(ax);
    return err;
  }
  *out = ax;
  return TASO_OK;
}

void taso_axioms_free(taso_axioms_t *ax) {
  if (!ax) return;
  for (int i = 0; i < ax->n; i++)
    axiom_free(&ax->v[i]);
  free(ax->v);
  free(ax->decls);
  free(ax->decls_path);
  free(ax);
}

int taso_axioms_find(const taso_axioms_t *ax, const char *name) {
  for (int i = 0; i < ax->n; i++)
    if (strcmp(ax->v[i].name, name) == 0) return i;
  return -1;
}

bool taso_axioms_listed(const char *list, char sep, const char *name) {
  if (!list) return true;
  const char seps[2] = {sep, 0};
  size_t n = strlen(name);
  for (const char *s = list; *s;) {
    size_t len = strcspn(s, seps);
    if (len == n && !strncmp(s, name, n)) return true;
    s += len;
    while (*s == sep)
      s++;
  }
  return false;
}

taso_err_t taso_axioms_enable(taso_axioms_t *ax, const char *name, bool on) {
  int i = taso_axioms_find(ax, name);
  if (i < 0) return taso_error(TASO_ERR_UNKNOWN, "no axiom or lemma called '%s'", name);
  ax->v[i].enabled = on;
  return TASO_OK;
}

uint64_t taso_axioms_digest(const taso_axioms_t *ax) {
  uint64_t h = TASO_FNV_START;
  for (int i = 0; i < ax->ndecls; i++) {
    const taso_decl_t *d = &ax->decls[i];
    h = taso_fnv64(h, d->name, strlen(d->name) + 1);
    h = taso_fnv64(h, &d->nargs, sizeof d->nargs);
    h = taso_fnv64(h, d->arg_int, sizeof d->arg_int);
    h = taso_fnv64(h, &d->ret_int, sizeof d->ret_int);
  }
  for (int i = 0; i < ax->n; i++) {
    const taso_axiom_t *a = &ax->v[i];
    if (!a->enabled) continue;
    int kind = a->kind;
    h = taso_fnv64(h, a->name, strlen(a->name) + 1);
    h = taso_fnv64(h, &kind, sizeof kind);
    h = taso_fnv64(h, a->text, strlen(a->text) + 1);
    for (int m = 0; m < a->nmeta; m++) {
      h = taso_fnv64(h, a->meta[m].key, strlen(a->meta[m].key) + 1);
      h = taso_fnv64(h, a->meta[m].value, strlen(a->meta[m].value) + 1);
    }
  }
  return h;
}

const char *taso_axiom_meta(const taso_axiom_t *a, const char *key, int nth) {
  for (int i = 0; i < a->nmeta; i++)
    if (strcmp(a->meta[i].key, key) == 0 && nth-- == 0) return a->meta[i].value;
  return NULL;
}
