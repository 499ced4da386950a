/*
 * Query processes (src/core/worker.h): answers come back; a child that
 * crashes, hangs or retires ends only itself, is reported, and the next
 * request gets a fresh child from the parent's state.
 */
#include <signal.h>
#include <stdint.h>
#include <string.h>
#include <unistd.h>

#include "test.h"
#include "worker.h"

static int counter; /* the parent's; a child's increments stay in the child */

/* Request: what to do. Reply: the request doubled, and the child's counter. */
static bool answer(void *ctx, const void *req, void *reply) {
  (void)ctx;
  int32_t r;
  memcpy(&r, req, sizeof r);
  if (r == -1) raise(SIGSEGV);
  if (r == -2) pause();
  if (r == -3) _exit(5);
  counter++;
  int32_t out[2] = {2 * r, counter};
  memcpy(reply, out, sizeof out);
  return r == 7; /* 7 retires the child after answering */
}

static taso_worker_t worker(double timeout_s) {
  taso_worker_t w;
  taso_worker_init(&w, answer, NULL, sizeof(int32_t), 2 * sizeof(int32_t), timeout_s);
  return w;
}

static void test_answers(void) {
  taso_worker_t w = worker(10);
  char why[128];
  int32_t out[2];
  for (int32_t r = 1; r <= 3; r++) {
    CHECK_OK(taso_worker_ask(&w, &r, out, why, sizeof why));
    CHECK(out[0] == 2 * r && out[1] == r); /* one child answered all three */
  }
  CHECK(w.started == 1 && counter == 0);
  taso_worker_stop(&w);
  CHECK(w.pid == 0);
}

static void test_crash(void) {
  taso_worker_t w = worker(10);
  char why[128] = "";
  int32_t out[2], r = 5, crash = -1;
  CHECK_OK(taso_worker_ask(&w, &r, out, why, sizeof why));
  CHECK_ERR(taso_worker_ask(&w, &crash, out, why, sizeof why), TASO_ERR_LIB);
  CHECK(strstr(why, "killed by signal 11") != NULL);
  CHECK(w.pid == 0 && w.exit_status == -1);
  /* one that exits on its own says its status */
  int32_t quit = -3;
  CHECK_ERR(taso_worker_ask(&w, &quit, out, why, sizeof why), TASO_ERR_IO);
  CHECK(strstr(why, "ended with status 5") != NULL && w.exit_status == 5);
  /* a fresh child, from the parent's state: its counter starts again */
  CHECK_OK(taso_worker_ask(&w, &r, out, why, sizeof why));
  CHECK(out[0] == 10 && out[1] == 1 && w.started == 3);
  taso_worker_stop(&w);
}

static void test_hang(void) {
  taso_worker_t w = worker(0.5);
  char why[128] = "";
  int32_t out[2], hang = -2, r = 4;
  CHECK_ERR(taso_worker_ask(&w, &hang, out, why, sizeof why), TASO_ERR_LIB);
  CHECK(strstr(why, "gave no answer") != NULL);
  CHECK_OK(taso_worker_ask(&w, &r, out, why, sizeof why));
  CHECK(out[0] == 8 && w.started == 2);
  taso_worker_stop(&w);
}

static void test_retire(void) {
  taso_worker_t w = worker(10);
  char why[128];
  int32_t out[2], seven = 7, r = 2;
  CHECK_OK(taso_worker_ask(&w, &seven, out, why, sizeof why));
  CHECK(out[0] == 14 && w.pid == 0); /* answered, then gone */
  CHECK_OK(taso_worker_ask(&w, &r, out, why, sizeof why));
  CHECK(out[0] == 4 && out[1] == 1 && w.started == 2);
  taso_worker_stop(&w);
}

int main(void) {
  static const test_case_t cases[] = {TEST(test_answers), TEST(test_crash), TEST(test_hang),
                                      TEST(test_retire)};
  return test_run(cases, sizeof cases / sizeof *cases);
}
