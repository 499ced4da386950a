#define _GNU_SOURCE
#include "replace.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "artifact.h"

static const unsigned char hdf5_signature[8] = {0x89, 'H', 'D', 'F', '\r', '\n', 0x1a, '\n'};

taso_err_t taso_output_folder_ok(const char *path) {
  char dir[4096];
  struct stat st;
  taso_path_folder(path, dir, sizeof dir);
  if (stat(dir, &st) != 0)
    return taso_error(TASO_ERR_IO, "%s: the output folder %s: %s", path, dir, strerror(errno));
  if (!S_ISDIR(st.st_mode))
    return taso_error(TASO_ERR_IO, "%s: the output folder %s is not a folder", path, dir);
  if (access(dir, W_OK | X_OK) != 0)
    return taso_error(TASO_ERR_IO, "%s: cannot write in the output folder %s: %s", path, dir,
                      strerror(errno));
  return TASO_OK;
}

/* The first bytes of path (up to len); -1 when it cannot be read. */
static ssize_t head(const char *path, unsigned char *buf, size_t len) {
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return -1;
  ssize_t n = read(fd, buf, len);
  close(fd);
  return n;
}

/* Text: no NUL and no control bytes but white space, in the first bytes. */
static bool is_text(const unsigned char *b, ssize_t n) {
  for (ssize_t i = 0; i < n; i++)
    if (b[i] == 0 || (b[i] < 0x20 && b[i] != '\n' && b[i] != '\r' && b[i] != '\t' && b[i] != '\f'))
      return false;
  return true;
}

taso_holds_t taso_file_holds(const char *path, const char *kind, char *what, size_t len) {
  struct stat st;
  unsigned char b[4096];
  if (stat(path, &st) != 0) {
    snprintf(what, len, "nothing");
    return TASO_HOLDS_NOTHING;
  }
  if (!S_ISREG(st.st_mode)) {
    snprintf(what, len, S_ISDIR(st.st_mode) ? "a folder" : "something other than a regular file");
    return TASO_HOLDS_OTHER;
  }
  ssize_t n = head(path, b, sizeof b);
  if (n < 0) {
    snprintf(what, len, "a file that cannot be read (%s)", strerror(errno));
    return TASO_HOLDS_OTHER;
  }
  bool hdf5 = n >= 8 && memcmp(b, hdf5_signature, 8) == 0;
  /* ModelProto's first field is ir_version (field 1, a varint: tag 0x08) */
  bool onnx = n >= 2 && b[0] == 0x08;
  bool text = !hdf5 && is_text(b, n);
  if (n == 0) {
    snprintf(what, len, "an empty file");
    return TASO_HOLDS_UNREADABLE;
  }
  if (strcmp(kind, TASO_FILE_TEXT) == 0 || strcmp(kind, TASO_FILE_ONNX) == 0) {
    bool own = strcmp(kind, TASO_FILE_TEXT) == 0 ? text : onnx;
    snprintf(what, len, "%s",
             hdf5   ? "an HDF5 file"
             : text ? "a text file"
             : onnx ? "what looks like an ONNX model"
                    : "a file of unknown kind");
    return own ? TASO_HOLDS_OWN : TASO_HOLDS_OTHER;
  }
  if (!hdf5) {
    snprintf(what, len, "%s",
             text   ? "a text file, not HDF5"
             : onnx ? "what looks like an ONNX model, not HDF5"
                    : "a file that is not HDF5");
    return TASO_HOLDS_OTHER;
  }
  char *found = NULL;
  taso_err_t err = taso_artifact_identify(path, &found);
  if (err == TASO_OK) {
    bool own = strcmp(found, kind) == 0;
    snprintf(what, len, "a %s artifact", found);
    free(found);
    return own ? TASO_HOLDS_OWN : TASO_HOLDS_OTHER;
  }
  /* The detail starts with the path: "x.h5: not a readable HDF5 file". */
  const char *d = taso_error_detail();
  size_t p = strlen(path);
  if (strncmp(d, path, p) == 0 && d[p] == ':') d += p + 2;
  snprintf(what, len, "%s", d);
  return strstr(d, "not a taso artifact") ? TASO_HOLDS_OTHER : TASO_HOLDS_UNREADABLE;
}

taso_err_t taso_may_write(const char *option, const char *path, const char *kind, bool fresh,
                          bool own_ok) {
  char what[512];
  TASO_TRY(taso_output_folder_ok(path));
  char want[128];
  if (strcmp(kind, TASO_FILE_TEXT) == 0)
    snprintf(want, sizeof want, "a text file");
  else if (strcmp(kind, TASO_FILE_ONNX) == 0)
    snprintf(want, sizeof want, "an ONNX model");
  else
    snprintf(want, sizeof want, "a %s artifact", kind);
  switch (taso_file_holds(path, kind, what, sizeof what)) {
  case TASO_HOLDS_NOTHING:
    return TASO_OK;
  case TASO_HOLDS_OWN:
    if (fresh || own_ok) return TASO_OK;
    return taso_error(TASO_ERR_IO, "%s %s exists (%s): not replacing it (--fresh replaces it)",
                      option, path, what);
  case TASO_HOLDS_UNREADABLE:
    if (fresh) return TASO_OK;
    return taso_error(TASO_ERR_IO,
                      "%s holds something other than %s (%s): not replacing it (--fresh "
                      "replaces it)",
                      path, want, what);
  case TASO_HOLDS_OTHER:
  default:
    return taso_error(TASO_ERR_IO,
                      "%s holds %s, not %s: never replaced, even with --fresh (remove it "
                      "yourself, or choose another %s)",
                      path, what, want, option);
  }
}
