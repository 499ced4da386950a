/*
 * Model families and the rules each needs (issue 17). A model's family
 * comes from its graph alone, so that an imported ONNX model gets one too:
 * its mix of operators (a fraction per operator kind) and three shapes of
 * the graph, depthwise and grouped convolutions and residual sums (an
 * element-wise sum of two activations). The families:
 *
 *   transformer  no convolution; batched matmuls and a softmax (attention)
 *   rnn          no convolution; matmuls with tanh or sigmoid gates
 *   mlp          no convolution; matmuls otherwise
 *   nas          depthwise convolutions and concats (multi-branch NAS cells)
 *   mobile       depthwise convolutions, no concat (MobileNet)
 *   multibranch  concats, no depthwise convolution (Inception, SqueezeNet)
 *   residual     residual sums, none of the above (ResNet, ResNeXt)
 *   cnn          convolutions, none of the above
 *   other        none of the above
 *
 * Rule usage (kind taso-rule-usage, written by taso-rules): for each model
 * optimized over the zoo, its name, spec, family and features, and the
 * rules that fired on the search's path to its result (every rewrite of
 * that path, so a rule that only enables another is there too). A family's
 * subset is the rules that fired in its models; a family no model of the
 * usage belongs to borrows the subset of the family of the model nearest
 * in features.
 */
#ifndef TASO_FAMILY_H
#define TASO_FAMILY_H

#include <stdbool.h>
#include <stdint.h>

#include "model.h"
#include "search.h"

#define TASO_KIND_RULE_USAGE "taso-rule-usage"
#define TASO_FAMILY_LEN 16
#define TASO_SPEC_LEN 256

/* Features: one fraction per operator kind (of the operators), then these. */
enum {
  TASO_FEAT_DEPTHWISE = TASO_OP_COUNT, /* of the convolutions: depthwise */
  TASO_FEAT_GROUPED,                   /* of the convolutions: grouped, not depthwise */
  TASO_FEAT_RESIDUAL,                  /* of the operators: sums of two activations */
  TASO_FEATURES
};

typedef struct {
  double v[TASO_FEATURES];
} taso_features_t;

/* The features of m (its types inferred). */
void taso_model_features(const taso_model_t *m, taso_features_t *f);
/* A feature's name: the operator's, or "depthwise", "grouped", "residual". */
const char *taso_feature_name(int i);
/* The family of a model with features f (a name above). */
const char *taso_family_of(const taso_features_t *f);
/* Whether name is one of the families above. */
bool taso_family_known(const char *name);
/* Distance between two models' features: L1, plus 1 when one has
 * convolutions and the other none. */
double taso_features_distance(const taso_features_t *a, const taso_features_t *b);

/* One model of a usage artifact. */
typedef struct {
  char name[TASO_MODEL_NAME_LEN];
  char spec[TASO_SPEC_LEN];
  char family[TASO_FAMILY_LEN];
  taso_features_t features;
} taso_usage_model_t;

/* One rule that fired on a model's path. */
typedef struct {
  int32_t model; /* index in models */
  int32_t pad_;
  int64_t count;             /* rewrites by it on the path */
  char text[TASO_RULE_TEXT]; /* "lhs => rhs", as applied */
} taso_usage_rule_t;

typedef struct {
  taso_usage_model_t *models;
  int nmodels;
  taso_usage_rule_t *rules;
  int64_t nrules;
  char substitutions[TASO_SPEC_LEN]; /* the rule files the searches used */
} taso_usage_t;

/* The attributes taso-optimize records of its input model, so that the
 * rules' usage never reloads the input by a path that may since name
 * another file: its name and its features ("%.17g" values, comma-separated). */
#define TASO_INPUT_NAME_ATTR "optimize_model_name"
#define TASO_INPUT_FEATURES_ATTR "optimize_model_features"
void taso_features_format(const taso_features_t *f, char *buf, size_t len);
/* TASO_ERR_FORMAT unless text holds exactly TASO_FEATURES numbers. */
taso_err_t taso_features_parse(const char *text, taso_features_t *f);

/* Adds a model optimized by taso-optimize (OPT.h5: its /optimize_rules and
 * its input model's recorded name and features). */
taso_err_t taso_usage_add(taso_usage_t *u, const char *opt_path);
/* Writes u to path (one rank; tmp and rename are the caller's). */
taso_err_t taso_usage_write(const taso_usage_t *u, const char *path, const taso_provenance_t *prov);
/* Reads a usage artifact; an error names the file. */
taso_err_t taso_usage_read(const char *path, taso_usage_t *u);
void taso_usage_free(taso_usage_t *u);

/* The subset for family: the distinct texts of the rules that fired in its
 * models (*texts malloc'd, each TASO_RULE_TEXT). When no model of u is of
 * that family, *from names the family borrowed (nearest to features, which
 * may be NULL: then none is borrowed) and *texts is its subset; otherwise
 * *from is family. */
taso_err_t taso_usage_subset(const taso_usage_t *u, const char *family,
                             const taso_features_t *features, char (**texts)[TASO_RULE_TEXT],
                             int *n, const char **from);

/* Every distinct rule text of u, whatever the family (*texts malloc'd). */
taso_err_t taso_usage_all(const taso_usage_t *u, char (**texts)[TASO_RULE_TEXT], int *n);

/* Keeps in rules only those whose text is one of texts (n of them), in
 * their order; *matched receives how many of texts matched a rule. */
taso_err_t taso_rules_keep(taso_rules_t *rules, const char (*texts)[TASO_RULE_TEXT], int n,
                           int *matched);
/* Keeps n rules chosen at random (seeded), for comparisons. */
taso_err_t taso_rules_keep_random(taso_rules_t *rules, int n, uint64_t seed);

/* Which of the loaded rules a search tries (taso-optimize --rules):
 * "all"; "random:N" (seeded by seed); "auto" (the family of m's features),
 * "zoo" (every model's) or a family's name, from the rule-usage file at
 * usage; otherwise a text file of rules, one "lhs => rhs" a line, #
 * starting a comment. what receives a line that says what was chosen
 * (empty for "all"); *listed the rules the choice named and *matched
 * those found among rules (both 0 for "all" and "random:N"). */
taso_err_t taso_rules_choose(taso_rules_t *rules, const char *choice, const char *usage,
                             const taso_model_t *m, uint64_t seed, char *what, size_t len,
                             int *listed, int *matched);

#endif
