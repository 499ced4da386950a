/* Where a model comes from: a built-in name, a model text file (.model,
 * the built-ins' language), an .onnx file or a model .h5 file, told apart
 * by the spec's ending, so that every tool takes all four. */
#include <stdio.h>
#include <string.h>

#include "model.h"
#include "onnx.h"

static bool ends_with(const char *s, const char *end) {
  size_t n = strlen(s), k = strlen(end);
  return n >= k && strcmp(s + n - k, end) == 0;
}

taso_err_t taso_model_load(const char *spec, taso_model_t *m) {
  taso_model_init(m, NULL);
  if (ends_with(spec, ".onnx")) return taso_onnx_import(spec, m);
  if (ends_with(spec, ".h5")) return taso_model_read_h5(spec, m);
  /* "name" or "name:key=value,key=value"; "file.model" with the same overrides */
  char name[64], path[4096];
  const char *base = strrchr(spec, '/'), *colon = strchr(base ? base : spec, ':');
  size_t len = colon ? (size_t)(colon - spec) : strlen(spec);
  if (len >= 6 && strncmp(spec + len - 6, ".model", 6) == 0) {
    if (len >= sizeof path) return taso_error(TASO_ERR_ARG, "model path too long: '%s'", spec);
    snprintf(path, sizeof path, "%.*s", (int)len, spec);
    return taso_model_parse_file(path, colon ? colon + 1 : NULL, m);
  }
  if (len == 0 || len >= sizeof name)
    return taso_error(TASO_ERR_ARG,
                      "'%s' is not a model: give a built-in name, a .model, an .onnx or a "
                      ".h5 file",
                      spec);
  memcpy(name, spec, len);
  name[len] = 0;
  TASO_TRY(taso_model_builtin_path(name, path, sizeof path));
  return taso_model_parse_file(path, colon ? colon + 1 : NULL, m);
}
