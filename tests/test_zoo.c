/*
 * The model zoo (issue 33): every graph-only network of data/zoo/manifest.csv
 * imports, in one process (bench/zoo.sh quick checks their values), with
 * its weights seeded and not yet made, and the operator count the manifest
 * gives for each exported graph's Conv nodes among its model's conv2d.
 */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "model.h"
#include "onnx.h"
#include "test.h"

static void test_every_network_imports(void) {
  FILE *f = fopen(TASO_DATA_DIR "/zoo/manifest.csv", "r");
  CHECK(f != NULL);
  if (!f) return;
  char line[4096];
  int networks = 0;
  CHECK(fgets(line, sizeof line, f) != NULL); /* the header */
  while (fgets(line, sizeof line, f)) {
    char name[128], path[512];
    if (sscanf(line, "%127[^,]", name) != 1) continue;
    snprintf(path, sizeof path, "%s/zoo/%s.onnx", TASO_DATA_DIR, name);
    taso_model_t m;
    taso_err_t err = taso_onnx_import(path, &m);
    if (err != TASO_OK) fprintf(stderr, "%s: %s\n", path, taso_error_detail());
    CHECK_OK(err);
    if (err != TASO_OK) continue;
    /* the exported graph's Conv count, from the manifest: each is one conv2d */
    const char *conv = strstr(line, " Conv:")   ? strstr(line, " Conv:") + 6
                       : strstr(line, ",Conv:") ? strstr(line, ",Conv:") + 6
                                                : NULL;
    int64_t counts[TASO_OP_COUNT], bytes;
    double flops;
    taso_model_stats(&m, counts, &flops, &bytes);
    if (conv) CHECK(counts[TASO_OP_CONV2D] == atoi(conv));
    int seeded = 0;
    for (int i = 0; i < m.inputs.n; i++)
      seeded += m.is_weight[i] && !m.data[i];
    CHECK(seeded > 0); /* graph-only: the weights come from the seed, when needed */
    taso_model_free(&m);
    networks++;
  }
  fclose(f);
  printf("%d networks imported\n", networks);
  CHECK(networks >= 40);
}

int main(void) {
  test_case_t cases[] = {TEST(test_every_network_imports)};
  return test_run(cases, sizeof cases / sizeof *cases);
}
