/*
 * taso-rules: rule usage by model family (issue 17). From models that
 * taso-optimize wrote, the rules that fired on each search's path, with
 * each input model's family and features, into a taso-rule-usage file;
 * and, for a model, its family and the rule subset `taso-optimize --rules
 * auto` would search with (src/search/family.h).
 */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "family.h"
#include "tool.h"

static const char *usage_path, *model_spec;

static const taso_tool_option_t options[] = {
    {"usage", "FILE", "a rule-usage file (taso-rules' output) to pick a subset from", &usage_path},
    {"model", "M",
     "a model (built-in, .onnx or .h5): print its family and features, and, "
     "with --usage, the subset --rules auto would use",
     &model_spec},
    {0},
};

static const taso_tool_spec_t spec = {
    .name = "taso-rules",
    .about = "Rule usage by model family. With --in OPT.h5[,OPT.h5...] (models written by\n"
             "taso-optimize) and --out FILE: the rules that fired on each search's path\n"
             "to its result, with the family and features of each input model, as a\n"
             "taso-rule-usage file (h5py reads /models, /features and /fired). With\n"
             "--model M: M's family and features; with --usage FILE too, the subset\n"
             "of rules taso-optimize --rules auto would search M with. Families come from\n"
             "the graph alone (transformer, rnn, mlp, nas, mobile, multibranch,\n"
             "residual, cnn, other), so an imported model gets one too.\n",
    .in_help = "models written by taso-optimize, comma-separated",
    .out_help = "the rule-usage file to write",
    .out_kind = TASO_KIND_RULE_USAGE,
    .fresh_help = "replace an existing OUT (only a file of the kind written)",
    .replace_needs_fresh = true,
    .in_optional = true,
    .single_rank = true,
    .options = options,
};

static taso_err_t build(taso_tool_t *t) {
  taso_usage_t u;
  memset(&u, 0, sizeof u);
  char *list = strdup(t->in_path);
  if (!list) return taso_error(TASO_ERR_NOMEM, "--in");
  taso_err_t err = TASO_OK;
  for (char *save = NULL, *p = strtok_r(list, ",", &save); p && err == TASO_OK;
       p = strtok_r(NULL, ",", &save))
    err = taso_usage_add(&u, p);
  free(list);
  taso_provenance_t prov;
  taso_tool_provenance(t, &prov);
  if (err == TASO_OK) err = taso_usage_write(&u, t->tmp_path, &prov);
  if (err == TASO_OK) err = taso_tool_commit_output(t);
  for (int i = 0; err == TASO_OK && i < u.nmodels; i++) {
    int fired = 0;
    for (int64_t r = 0; r < u.nrules; r++)
      fired += u.rules[r].model == i;
    taso_tool_print(t, "taso-rules: %-14s %-12s %3d rules fired  (%s)\n", u.models[i].name,
                    u.models[i].family, fired, u.models[i].spec);
  }
  if (err == TASO_OK)
    taso_tool_summary(t, "%d models, %lld rules fired -> %s", u.nmodels, (long long)u.nrules,
                      t->out_path);
  taso_usage_free(&u);
  return err;
}

static taso_err_t show_model(taso_tool_t *t) {
  taso_model_t m;
  TASO_TRY(taso_model_load(model_spec, &m));
  taso_features_t f;
  taso_model_features(&m, &f);
  const char *family = taso_family_of(&f);
  printf("model %s: family %s\nfeatures:", m.name, family);
  for (int k = 0; k < TASO_FEATURES; k++)
    if (f.v[k] > 0) printf(" %s=%.3f", taso_feature_name(k), f.v[k]);
  printf("\n");
  taso_model_free(&m);
  if (!usage_path) return TASO_OK;
  taso_usage_t u;
  TASO_TRY(taso_usage_read(usage_path, &u));
  char(*texts)[TASO_RULE_TEXT] = NULL;
  int n = 0;
  const char *from = NULL;
  taso_err_t err = taso_usage_subset(&u, family, &f, &texts, &n, &from);
  if (err == TASO_OK) {
    if (from && strcmp(from, family) != 0)
      printf("no model of family %s in %s: the nearest model's family, %s, lends its subset\n",
             family, usage_path, from);
    printf("subset: %d rules (of the %lld fired in %d models of %s)\n", n, (long long)u.nrules,
           u.nmodels, usage_path);
    for (int i = 0; i < n; i++)
      printf("  %s\n", texts[i]);
  }
  (void)t;
  free(texts);
  taso_usage_free(&u);
  return err;
}

int main(int argc, char **argv) {
  taso_tool_t t;
  taso_tool_init(&t, &spec, &argc, &argv);
  taso_err_t err = TASO_OK;
  if (t.in_path) {
    if (!t.out_path) taso_tool_usage_error(&t, "--in needs --out (see taso-rules --help)");
    /* --in is a list: --out may name none of its files */
    enum { MAX_IN = 256 };
    static char names[MAX_IN][1024];
    taso_tool_file_t files[MAX_IN + 1] = {taso_tool_output("--out", t.out_path, spec.out_kind)};
    int n = 1;
    for (const char *p = t.in_path; *p && n <= MAX_IN; n++) {
      size_t len = strcspn(p, ",");
      snprintf(names[n - 1], sizeof names[0], "%.*s", (int)len, p);
      files[n] = taso_tool_input("--in", names[n - 1]);
      p += len + (p[len] == ',');
    }
    taso_tool_check_files(&t, files, n);
    TASO_TOOL_STEP(&t, err, taso_tool_claim_output(&t));
    if (err == TASO_OK) err = build(&t);
  } else if (model_spec) {
    err = show_model(&t);
  } else {
    taso_tool_usage_error(&t, "give --in and --out, or --model (see taso-rules --help)");
  }
  return taso_tool_finish(&t, err);
}
