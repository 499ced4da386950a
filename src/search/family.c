/* Model families from graph features, rule usage, and rule subsets. */
#define _POSIX_C_SOURCE 200809L
#include "family.h"

#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "artifact.h"

/* ---- features and families ------------------------------------------------ */

const char *taso_feature_name(int i) {
  if (i == TASO_FEAT_DEPTHWISE) return "depthwise";
  if (i == TASO_FEAT_GROUPED) return "grouped";
  if (i == TASO_FEAT_RESIDUAL) return "residual";
  return i >= 0 && i < TASO_OP_COUNT ? taso_ops[i].name : "?";
}

void taso_model_features(const taso_model_t *m, taso_features_t *f) {
  const taso_graph_t *g = &m->graph;
  memset(f, 0, sizeof *f);
  /* act[i]: node i depends on a run-time input (not on weights alone) */
  bool *act = calloc((size_t)g->nnodes + 1, sizeof *act);
  if (!act) return;
  int ops = 0, convs = 0;
  for (int i = 0; i < g->nnodes; i++) {
    const taso_node_t *n = &g->nodes[i];
    if (n->kind == TASO_OP_INPUT) {
      act[i] = !m->is_weight[n->p.input];
      continue;
    }
    for (int a = 0; a < taso_ops[n->kind].arity; a++)
      act[i] |= act[TASO_REF_NODE(n->in[a])];
    ops++;
    f->v[n->kind] += 1;
    if (n->kind == TASO_OP_CONV2D) {
      const taso_tensor_t *x = &m->types[n->in[0]], *w = &m->types[n->in[1]];
      int groups = w->dim[1] ? x->dim[1] / w->dim[1] : 1;
      convs++;
      if (groups > 1 && w->dim[1] == 1)
        f->v[TASO_FEAT_DEPTHWISE] += 1;
      else if (groups > 1)
        f->v[TASO_FEAT_GROUPED] += 1;
    }
    bool sum = n->kind == TASO_OP_EWADD || n->kind == TASO_OP_ADD;
    if (sum && act[TASO_REF_NODE(n->in[0])] && act[TASO_REF_NODE(n->in[1])])
      f->v[TASO_FEAT_RESIDUAL] += 1;
  }
  free(act);
  for (int k = 0; k < TASO_OP_COUNT && ops; k++)
    f->v[k] /= ops;
  if (convs) f->v[TASO_FEAT_DEPTHWISE] /= convs, f->v[TASO_FEAT_GROUPED] /= convs;
  if (ops) f->v[TASO_FEAT_RESIDUAL] /= ops;
}

static const char *const families[] = {"transformer", "rnn",      "mlp", "nas",  "mobile",
                                       "multibranch", "residual", "cnn", "other"};

const char *taso_family_of(const taso_features_t *f) {
  const double *v = f->v;
  if (v[TASO_OP_CONV2D] == 0) {
    if (v[TASO_OP_BMM] > 0 && v[TASO_OP_SOFTMAX] > 0) return "transformer";
    if (v[TASO_OP_MATMUL] > 0 && (v[TASO_OP_TANH] > 0 || v[TASO_OP_SIGMOID] > 0)) return "rnn";
    return v[TASO_OP_MATMUL] > 0 || v[TASO_OP_BMM] > 0 ? "mlp" : "other";
  }
  if (v[TASO_FEAT_DEPTHWISE] > 0) return v[TASO_OP_CONCAT] > 0 ? "nas" : "mobile";
  if (v[TASO_OP_CONCAT] > 0) return "multibranch";
  return v[TASO_FEAT_RESIDUAL] > 0 ? "residual" : "cnn";
}

bool taso_family_known(const char *name) {
  for (size_t i = 0; i < sizeof families / sizeof *families; i++)
    if (strcmp(name, families[i]) == 0) return true;
  return false;
}

/* Models with convolutions and models without are apart by at least 1:
 * an RNN borrows from a transformer before any CNN. */
double taso_features_distance(const taso_features_t *a, const taso_features_t *b) {
  double d = (a->v[TASO_OP_CONV2D] > 0) != (b->v[TASO_OP_CONV2D] > 0);
  for (int i = 0; i < TASO_FEATURES; i++)
    d += a->v[i] > b->v[i] ? a->v[i] - b->v[i] : b->v[i] - a->v[i];
  return d;
}

/* ---- the usage artifact ------------------------------------------------------ */

typedef struct {
  int32_t model, pad_;
  double value;
  char name[24];
} feature_row_t;

#define F(type, field, kind, size)                                                                 \
  { #field, offsetof(type, field), kind, size }
static const taso_field_t model_fields[] = {
    F(taso_usage_model_t, name, TASO_FIELD_STRING, TASO_MODEL_NAME_LEN),
    F(taso_usage_model_t, spec, TASO_FIELD_STRING, TASO_SPEC_LEN),
    F(taso_usage_model_t, family, TASO_FIELD_STRING, TASO_FAMILY_LEN),
};
/* /models holds the three strings; the features go to /features, long. */
typedef struct {
  char name[TASO_MODEL_NAME_LEN];
  char spec[TASO_SPEC_LEN];
  char family[TASO_FAMILY_LEN];
} model_row_t;
static const taso_table_t models_table = {"/models", sizeof(model_row_t), model_fields, 3};
static const taso_field_t feature_fields[] = {
    F(feature_row_t, model, TASO_FIELD_INT32, 0),
    F(feature_row_t, value, TASO_FIELD_DOUBLE, 0),
    F(feature_row_t, name, TASO_FIELD_STRING, 24),
};
static const taso_table_t features_table = {"/features", sizeof(feature_row_t), feature_fields, 3};
static const taso_field_t rule_fields[] = {
    F(taso_usage_rule_t, model, TASO_FIELD_INT32, 0),
    F(taso_usage_rule_t, count, TASO_FIELD_INT64, 0),
    F(taso_usage_rule_t, text, TASO_FIELD_STRING, TASO_RULE_TEXT),
};
static const taso_table_t rules_table = {"/fired", sizeof(taso_usage_rule_t), rule_fields, 3};
#undef F

_Static_assert(offsetof(taso_usage_model_t, spec) == offsetof(model_row_t, spec) &&
                   offsetof(taso_usage_model_t, family) == offsetof(model_row_t, family),
               "model rows mirror the head of taso_usage_model_t");

static taso_err_t grow(void **v, int64_t n, size_t size) {
  void *p = realloc(*v, size * (size_t)(n + 1));
  if (!p) return taso_error(TASO_ERR_NOMEM, "rule usage");
  *v = p;
  return TASO_OK;
}

void taso_features_format(const taso_features_t *f, char *buf, size_t len) {
  size_t at = 0;
  buf[0] = 0;
  for (int k = 0; k < TASO_FEATURES && at < len; k++) {
    int n = snprintf(buf + at, len - at, "%s%.17g", k ? "," : "", f->v[k]);
    if (n < 0) break;
    at += (size_t)n;
  }
}

taso_err_t taso_features_parse(const char *text, taso_features_t *f) {
  const char *p = text;
  for (int k = 0; k < TASO_FEATURES; k++) {
    char *end = NULL;
    f->v[k] = strtod(p, &end);
    if (end == p || (*end != (k + 1 < TASO_FEATURES ? ',' : '\0')))
      return taso_error(TASO_ERR_FORMAT, "not %d comma-separated features: '%.40s'", TASO_FEATURES,
                        text);
    p = end + 1;
  }
  return TASO_OK;
}

taso_err_t taso_usage_add(taso_usage_t *u, const char *opt_path) {
  taso_artifact_t *a = NULL;
  char *spec = NULL, *subst = NULL, *name = NULL, *feats = NULL;
  taso_fired_rule_t *fired = NULL;
  int64_t n = 0;
  taso_features_t features;
  taso_err_t err = taso_artifact_open(MPI_COMM_SELF, opt_path, TASO_KIND_MODEL, &a);
  if (err == TASO_OK && taso_artifact_get_string(a, "optimize_model", &spec) != TASO_OK)
    err = taso_error(TASO_ERR_FORMAT,
                     "%s: no optimize_model attribute (not written by taso-optimize, or by an "
                     "older one)",
                     opt_path);
  if (err == TASO_OK && taso_artifact_get_string(a, "optimize_substitutions", &subst) != TASO_OK)
    err = taso_error(TASO_ERR_FORMAT, "%s: no optimize_substitutions attribute", opt_path);
  /* The input's features as taso-optimize saw them: reloading its spec
   * here could read another file of that name. */
  if (err == TASO_OK && (taso_artifact_get_string(a, TASO_INPUT_NAME_ATTR, &name) != TASO_OK ||
                         taso_artifact_get_string(a, TASO_INPUT_FEATURES_ATTR, &feats) != TASO_OK))
    err = taso_error(TASO_ERR_FORMAT,
                     "%s: no recorded features of its input model (written by an older "
                     "taso-optimize: optimize it again)",
                     opt_path);
  if (err == TASO_OK && (err = taso_features_parse(feats, &features)) != TASO_OK)
    err = taso_error_prefix(err, "%s: %s: ", opt_path, TASO_INPUT_FEATURES_ATTR);
  if (err == TASO_OK) err = taso_artifact_table_length(a, &taso_fired_rules_table, &n);
  if (err == TASO_OK && n > 0)
    err = taso_artifact_read_table(a, &taso_fired_rules_table, 0, n, (void **)&fired);
  if (a) taso_artifact_close(a);
  if (err == TASO_OK) err = grow((void **)&u->models, u->nmodels, sizeof *u->models);
  if (err == TASO_OK) err = grow((void **)&u->rules, u->nrules + n, sizeof *u->rules);
  if (err == TASO_OK) {
    taso_usage_model_t *um = &u->models[u->nmodels];
    memset(um, 0, sizeof *um);
    snprintf(um->name, sizeof um->name, "%s", name);
    snprintf(um->spec, sizeof um->spec, "%s", spec);
    um->features = features;
    snprintf(um->family, sizeof um->family, "%s", taso_family_of(&um->features));
    for (int64_t i = 0; i < n; i++) {
      taso_usage_rule_t *r = &u->rules[u->nrules++];
      memset(r, 0, sizeof *r);
      r->model = u->nmodels;
      r->count = fired[i].count;
      snprintf(r->text, sizeof r->text, "%s", fired[i].text);
    }
    u->nmodels++;
    if (!u->substitutions[0]) snprintf(u->substitutions, sizeof u->substitutions, "%s", subst);
  }
  free(spec);
  free(subst);
  free(name);
  free(feats);
  free(fired);
  return err;
}

taso_err_t taso_usage_write(const taso_usage_t *u, const char *path,
                            const taso_provenance_t *prov) {
  taso_artifact_t *a = NULL;
  model_row_t *models = calloc((size_t)u->nmodels + 1, sizeof *models);
  feature_row_t *feats = calloc((size_t)u->nmodels * TASO_FEATURES + 1, sizeof *feats);
  int64_t nf = 0;
  taso_err_t err = models && feats ? TASO_OK : taso_error(TASO_ERR_NOMEM, "rule usage");
  for (int i = 0; err == TASO_OK && i < u->nmodels; i++) {
    memcpy(&models[i], &u->models[i], sizeof models[i]);
    for (int k = 0; k < TASO_FEATURES; k++) {
      if (u->models[i].features.v[k] == 0) continue;
      feature_row_t *r = &feats[nf++];
      r->model = i;
      r->value = u->models[i].features.v[k];
      snprintf(r->name, sizeof r->name, "%s", taso_feature_name(k));
    }
  }
  if (err == TASO_OK)
    err = taso_artifact_create(MPI_COMM_SELF, path, TASO_KIND_RULE_USAGE, prov, &a);
  if (err == TASO_OK) err = taso_artifact_set_string(a, "substitutions", u->substitutions);
  if (err == TASO_OK) err = taso_artifact_set_count(a, "models", u->nmodels);
  if (err == TASO_OK)
    err = taso_artifact_write_table(a, &models_table, models, u->nmodels, 0, u->nmodels);
  if (err == TASO_OK) err = taso_artifact_write_table(a, &features_table, feats, nf, 0, nf);
  if (err == TASO_OK)
    err = taso_artifact_write_table(a, &rules_table, u->rules, u->nrules, 0, u->nrules);
  if (a) {
    taso_err_t c = taso_artifact_close(a);
    if (err == TASO_OK) err = c;
  }
  free(models);
  free(feats);
  return err;
}

static int feature_index(const char *name) {
  for (int k = 0; k < TASO_FEATURES; k++)
    if (strcmp(name, taso_feature_name(k)) == 0) return k;
  return -1;
}

taso_err_t taso_usage_read(const char *path, taso_usage_t *u) {
  memset(u, 0, sizeof *u);
  taso_artifact_t *a = NULL;
  char *subst = NULL;
  model_row_t *models = NULL;
  feature_row_t *feats = NULL;
  int64_t nm = 0, nf = 0, nr = 0;
  taso_err_t err = taso_artifact_open(MPI_COMM_SELF, path, TASO_KIND_RULE_USAGE, &a);
  if (err == TASO_OK && taso_artifact_get_string(a, "substitutions", &subst) == TASO_OK)
    snprintf(u->substitutions, sizeof u->substitutions, "%s", subst);
  if (err == TASO_OK) err = taso_artifact_table_length(a, &models_table, &nm);
  if (err == TASO_OK) err = taso_artifact_table_length(a, &features_table, &nf);
  if (err == TASO_OK) err = taso_artifact_table_length(a, &rules_table, &nr);
  if (err == TASO_OK && nm > 0)
    err = taso_artifact_read_table(a, &models_table, 0, nm, (void **)&models);
  if (err == TASO_OK && nf > 0)
    err = taso_artifact_read_table(a, &features_table, 0, nf, (void **)&feats);
  if (err == TASO_OK && nr > 0)
    err = taso_artifact_read_table(a, &rules_table, 0, nr, (void **)&u->rules);
  if (a) taso_artifact_close(a);
  if (err == TASO_OK && nm == 0) err = taso_error(TASO_ERR_FORMAT, "%s: no model in /models", path);
  if (err == TASO_OK && !(u->models = calloc((size_t)nm, sizeof *u->models)))
    err = taso_error(TASO_ERR_NOMEM, "%s: rule usage", path);
  for (int64_t i = 0; err == TASO_OK && i < nm; i++) {
    memcpy(&u->models[i], &models[i], sizeof models[i]);
    u->models[i].name[TASO_MODEL_NAME_LEN - 1] = u->models[i].spec[TASO_SPEC_LEN - 1] = 0;
    u->models[i].family[TASO_FAMILY_LEN - 1] = 0;
    if (!taso_family_known(u->models[i].family))
      err = taso_error(TASO_ERR_FORMAT, "%s: /models row %lld: unknown family '%s'", path,
                       (long long)i, u->models[i].family);
  }
  for (int64_t i = 0; err == TASO_OK && i < nf; i++) {
    feats[i].name[sizeof feats[i].name - 1] = 0;
    int k = feature_index(feats[i].name);
    if (feats[i].model < 0 || feats[i].model >= nm || k < 0)
      err = taso_error(TASO_ERR_FORMAT, "%s: /features row %lld: model %d, feature '%s'", path,
                       (long long)i, (int)feats[i].model, feats[i].name);
    else
      u->models[feats[i].model].features.v[k] = feats[i].value;
  }
  for (int64_t i = 0; err == TASO_OK && i < nr; i++) {
    u->rules[i].text[TASO_RULE_TEXT - 1] = 0;
    if (u->rules[i].model < 0 || u->rules[i].model >= nm)
      err = taso_error(TASO_ERR_FORMAT, "%s: /fired row %lld: model %d of %lld", path, (long long)i,
                       (int)u->rules[i].model, (long long)nm);
  }
  u->nmodels = (int)nm;
  u->nrules = nr;
  free(subst);
  free(models);
  free(feats);
  if (err != TASO_OK) taso_usage_free(u);
  return err;
}

void taso_usage_free(taso_usage_t *u) {
  free(u->models);
  free(u->rules);
  memset(u, 0, sizeof *u);
}

/* ---- subsets ------------------------------------------------------------------ */

static int compare_text(const void *a, const void *b) {
  return strcmp(a, b);
}

/* The distinct texts of the rules that fired in the models of family (of
 * every model when NULL), sorted. */
static taso_err_t distinct(const taso_usage_t *u, const char *family,
                           char (**texts)[TASO_RULE_TEXT], int *n) {
  char(*v)[TASO_RULE_TEXT] = malloc(sizeof *v * (size_t)(u->nrules + 1));
  if (!v) return taso_error(TASO_ERR_NOMEM, "rule subset");
  int k = 0;
  for (int64_t i = 0; i < u->nrules; i++)
    if (!family || strcmp(u->models[u->rules[i].model].family, family) == 0)
      memcpy(v[k++], u->rules[i].text, TASO_RULE_TEXT);
  qsort(v, (size_t)k, sizeof *v, compare_text);
  int m = 0;
  for (int i = 0; i < k; i++)
    if (m == 0 || strcmp(v[m - 1], v[i]) != 0) memmove(v[m++], v[i], TASO_RULE_TEXT);
  *texts = v;
  *n = m;
  return TASO_OK;
}

taso_err_t taso_usage_subset(const taso_usage_t *u, const char *family,
                             const taso_features_t *features, char (**texts)[TASO_RULE_TEXT],
                             int *n, const char **from) {
  *texts = NULL;
  *n = 0;
  *from = family;
  bool any = false;
  for (int i = 0; i < u->nmodels; i++)
    any |= strcmp(u->models[i].family, family) == 0;
  if (!any) { /* borrow from the nearest model's family */
    double best = -1;
    *from = NULL;
    for (int i = 0; features && i < u->nmodels; i++) {
      double d = taso_features_distance(features, &u->models[i].features);
      if (best < 0 || d < best) best = d, *from = u->models[i].family;
    }
    if (!*from) return TASO_OK;
  }
  return distinct(u, *from, texts, n);
}

taso_err_t taso_usage_all(const taso_usage_t *u, char (**texts)[TASO_RULE_TEXT], int *n) {
  return distinct(u, NULL, texts, n);
}

/* Keeps the rules with keep[i], in order; frees the others. */
static void keep_marked(taso_rules_t *rules, const bool *keep) {
  int m = 0;
  for (int i = 0; i < rules->n; i++) {
    if (keep[i]) {
      rules->v[m++] = rules->v[i];
      continue;
    }
    taso_graph_free(&rules->v[i].lhs);
    taso_graph_free(&rules->v[i].rhs);
    taso_shape_cond_free(&rules->v[i].cond);
  }
  rules->n = m;
}

taso_err_t taso_rules_keep(taso_rules_t *rules, const char (*texts)[TASO_RULE_TEXT], int n,
                           int *matched) {
  bool *keep = calloc((size_t)rules->n + 1, sizeof *keep),
       *hit = calloc((size_t)n + 1, sizeof *hit);
  char *sorted = malloc((size_t)TASO_RULE_TEXT * (size_t)(n + 1));
  if (!keep || !hit || !sorted) {
    free(keep), free(hit), free(sorted);
    return taso_error(TASO_ERR_NOMEM, "rule subset");
  }
  if (n > 0) { /* texts may be NULL when empty */
    memcpy(sorted, texts, (size_t)TASO_RULE_TEXT * (size_t)n);
    qsort(sorted, (size_t)n, TASO_RULE_TEXT, compare_text);
  }
  char text[TASO_RULE_TEXT];
  for (int i = 0; i < rules->n; i++) {
    taso_rule_format(rules, i, text, sizeof text);
    char *at = bsearch(text, sorted, (size_t)n, TASO_RULE_TEXT, compare_text);
    if (!at) continue;
    keep[i] = true;
    hit[(at - sorted) / TASO_RULE_TEXT] = true;
  }
  *matched = 0;
  for (int i = 0; i < n; i++)
    *matched += hit[i];
  keep_marked(rules, keep);
  free(keep);
  free(hit);
  free(sorted);
  return TASO_OK;
}

taso_err_t taso_rules_keep_random(taso_rules_t *rules, int n, uint64_t seed) {
  int *order = malloc(sizeof *order * (size_t)(rules->n + 1));
  bool *keep = calloc((size_t)rules->n + 1, sizeof *keep);
  if (!order || !keep) {
    free(order), free(keep);
    return taso_error(TASO_ERR_NOMEM, "rule subset");
  }
  for (int i = 0; i < rules->n; i++)
    order[i] = i;
  uint64_t x = seed ^ 0x9e3779b97f4a7c15ull;
  for (int i = 0; i < n && i < rules->n; i++) { /* a partial Fisher-Yates shuffle */
    x += 0x9e3779b97f4a7c15ull;
    uint64_t z = x;
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    z ^= z >> 31;
    int j = i + (int)(z % (uint64_t)(rules->n - i));
    int t = order[i];
    order[i] = order[j];
    order[j] = t;
    keep[order[i]] = true;
  }
  keep_marked(rules, keep);
  free(order);
  free(keep);
  return TASO_OK;
}

/* A text file of rules, one "lhs => rhs" a line; # starts a comment. */
static taso_err_t read_rule_file(const char *path, char (**texts)[TASO_RULE_TEXT], int *n) {
  FILE *f = fopen(path, "r");
  if (!f) return taso_error(TASO_ERR_IO, "--rules %s: cannot read it (%s)", path, strerror(errno));
  char line[TASO_RULE_TEXT + 2];
  int cap = 0, lineno = 0;
  taso_err_t err = TASO_OK;
  *texts = NULL;
  *n = 0;
  while (err == TASO_OK && fgets(line, sizeof line, f)) {
    lineno++;
    size_t len = strlen(line);
    if (len == sizeof line - 1 && line[len - 1] != '\n') {
      err = taso_error(TASO_ERR_PARSE, "%s:%d: a rule longer than %d characters", path, lineno,
                       TASO_RULE_TEXT - 1);
      break;
    }
    while (len && (line[len - 1] == '\n' || line[len - 1] == ' '))
      line[--len] = 0;
    char *p = line;
    while (*p == ' ')
      p++;
    if (!*p || *p == '#') continue;
    if (!strstr(p, " => ")) {
      err = taso_error(TASO_ERR_PARSE, "%s:%d: expected \"lhs => rhs\", got '%s'", path, lineno, p);
      break;
    }
    if (*n == cap) {
      cap = cap ? 2 * cap : 64;
      char(*v)[TASO_RULE_TEXT] = realloc(*texts, sizeof *v * (size_t)cap);
      if (!v) {
        err = taso_error(TASO_ERR_NOMEM, "--rules %s", path);
        break;
      }
      *texts = v;
    }
    snprintf((*texts)[(*n)++], TASO_RULE_TEXT, "%s", p);
  }
  fclose(f);
  return err;
}

taso_err_t taso_rules_choose(taso_rules_t *rules, const char *choice, const char *usage,
                             const taso_model_t *m, uint64_t seed, char *what, size_t len,
                             int *listed, int *matched) {
  what[0] = 0;
  *listed = *matched = 0;
  if (strcmp(choice, "all") == 0) return TASO_OK;
  int before = rules->n;
  if (strncmp(choice, "random:", 7) == 0) {
    char *end;
    long k = strtol(choice + 7, &end, 10);
    if (end == choice + 7 || *end || k < 0)
      return taso_error(TASO_ERR_ARG, "--rules %s: expected random:N, N a count", choice);
    TASO_TRY(taso_rules_keep_random(rules, (int)k, seed));
    snprintf(what, len, "%d of %d at random", rules->n, before);
    return TASO_OK;
  }
  char(*texts)[TASO_RULE_TEXT] = NULL;
  int n = 0;
  char from_what[1300];
  taso_err_t err = TASO_OK;
  bool zoo = strcmp(choice, "zoo") == 0;
  if (zoo || strcmp(choice, "auto") == 0 || taso_family_known(choice)) {
    taso_features_t f;
    taso_model_features(m, &f);
    const char *family = strcmp(choice, "auto") == 0 ? taso_family_of(&f) : choice;
    const char *from = NULL;
    taso_usage_t u;
    TASO_TRY(taso_usage_read(usage, &u));
    if (zoo)
      err = taso_usage_all(&u, &texts, &n);
    else
      err = taso_usage_subset(&u, family, &f, &texts, &n, &from);
    if (err == TASO_OK && zoo)
      snprintf(from_what, sizeof from_what, "every model's (from %s)", usage);
    else if (err == TASO_OK && from && strcmp(from, family) != 0)
      snprintf(from_what, sizeof from_what, "family %s (none in %s: the nearest model's, %s, lent)",
               family, usage, from);
    else
      snprintf(from_what, sizeof from_what, "family %s (from %s)", family, usage);
    taso_usage_free(&u);
  } else {
    err = read_rule_file(choice, &texts, &n);
    snprintf(from_what, sizeof from_what, "%s", choice);
  }
  if (err == TASO_OK)
    err = taso_rules_keep(rules, (const char(*)[TASO_RULE_TEXT])texts, n, matched);
  free(texts);
  TASO_TRY(err);
  *listed = n;
  snprintf(what, len, "%s: %d of %d (%d of its %d rules found in the substitutions)", from_what,
           rules->n, before, *matched, n);
  return TASO_OK;
}
