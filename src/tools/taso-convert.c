/*
 * taso-convert: a model from any of its forms to another, so that a model
 * built in (data/models/), imported from ONNX or written by the optimizer
 * can be read by every other tool, and by ONNX runtimes.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "model.h"
#include "onnx.h"
#include "replace.h"
#include "tool.h"

static bool list;

static const taso_tool_flag_t flags[] = {
    {"list", "print the built-in model names, one a line", &list},
    {0},
};

static taso_tool_spec_t spec = {
    /* out_kind follows OUT's ending */
    .name = "taso-convert",
    .about = "Converts a model between its forms: a built-in name (resnet50, or with\n"
             "parameters: inception_v3:batch=1), an .onnx file and a model .h5 file\n"
             "(kind taso-model). OUT's ending picks the form written. Weight-only\n"
             "subgraphs are folded into weights, and weights without values get their\n"
             "seeded ones, so the file holds everything needed to run the model.\n",
    .in_help = "the model: built-in name, .onnx or .h5",
    .out_help = "the file to write: .onnx or .h5",
    .out_kind = TASO_KIND_MODEL,
    .fresh_help = "replace an existing OUT (only a file of the kind written)",
    .replace_needs_fresh = true,
    .in_positional = true,
    .out_positional = true,
    .in_optional = true,
    .single_rank = true,
    .flags = flags,
};

static bool ends_with(const char *s, const char *tail) {
  size_t n = strlen(s), k = strlen(tail);
  return n >= k && strcmp(s + n - k, tail) == 0;
}

static taso_err_t print_list(void) {
  char names[64][64];
  int n = taso_model_builtin_list(names, 64);
  for (int i = 0; i < n && i < 64; i++)
    printf("%s\n", names[i]);
  return TASO_OK;
}

static taso_err_t convert(taso_tool_t *t) {
  const char *out = t->out_path;
  taso_model_t m;
  taso_err_t err = taso_model_load(t->in_path, &m);
  if (err != TASO_OK) return err;
  taso_provenance_t prov;
  taso_tool_provenance(t, &prov);
  if (ends_with(out, ".h5")) {
    err = taso_model_write_h5(&m, t->tmp_path, &prov);
  } else {
    err = taso_model_fold_weights(&m);
    if (err == TASO_OK) err = taso_onnx_export(&m, t->tmp_path);
  }
  if (err == TASO_OK) err = taso_tool_commit_output(t);
  if (err == TASO_OK) {
    int64_t counts[TASO_OP_COUNT], bytes, ops = 0;
    double flops;
    taso_model_stats(&m, counts, &flops, &bytes);
    for (int k = TASO_OP_INPUT + 1; k < TASO_OP_COUNT; k++)
      ops += counts[k];
    taso_tool_summary(t, "%s -> %s: model %s, %lld operators, %.1f MiB of weights", t->in_path, out,
                      m.name, (long long)ops, (double)bytes / (1 << 20));
  }
  taso_model_free(&m);
  return err;
}

int main(int argc, char **argv) {
  taso_tool_t t;
  taso_tool_init(&t, &spec, &argc, &argv);
  if (list) return taso_tool_finish(&t, print_list());
  if (!t.in_path || !t.out_path)
    taso_tool_usage_error(&t, "give IN and OUT, or --list (see taso-convert --help)");
  if (!ends_with(t.out_path, ".onnx") && !ends_with(t.out_path, ".h5"))
    taso_tool_usage_error(&t, "%s: the output must end in .onnx or .h5", t.out_path);
  if (ends_with(t.out_path, ".onnx")) spec.out_kind = TASO_FILE_ONNX;
  taso_err_t err = TASO_OK;
  TASO_TOOL_STEP(&t, err, taso_tool_claim_output(&t));
  if (err == TASO_OK) err = convert(&t);
  return taso_tool_finish(&t, err);
}
