/* Where a model comes from: a built-in name, an .onnx file or a model .h5
 * file, told apart by the spec's ending, so that every tool takes all three. */
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
  /* "name" or "name:key=value,key=value" */
  char name[64], path[4096];
  const char *colon = strchr(spec, ':');
  size_t len = colon ? (size_t)(colon - spec) : strlen(spec);
  if (len == 0 || len >= sizeof name)
    return taso_error(TASO_ERR_ARG, "'%s' is not a model: give a built-in name, an .onnx or a .h5 file",
                      spec);
  memcpy(name, spec, len);
  name[len] = 0;
  TASO_TRY(taso_model_builtin_path(name, path, sizeof path));
  return taso_model_parse_file(path, colon ? colon + 1 : NULL, m);
}
