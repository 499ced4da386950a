/*
 * A minimal unit-test harness: CHECK records a failure with file:line and
 * goes on; TEST_MAIN runs the listed tests and prints "N passed, N failed".
 */
#ifndef TASO_TEST_H
#define TASO_TEST_H

#include <stdio.h>
#include <string.h>

static int test_failures;
static int test_checks;

#define CHECK(cond)                                                                                \
  do {                                                                                             \
    test_checks++;                                                                                 \
    if (!(cond)) {                                                                                 \
      test_failures++;                                                                             \
      fprintf(stderr, "%s:%d: check failed: %s\n", __FILE__, __LINE__, #cond);                     \
    }                                                                                              \
  } while (0)

#define CHECK_OK(call)                                                                             \
  do {                                                                                             \
    taso_err_t check_err_ = (call);                                                                \
    test_checks++;                                                                                 \
    if (check_err_ != TASO_OK) {                                                                   \
      test_failures++;                                                                             \
      fprintf(stderr, "%s:%d: %s failed: %s: %s\n", __FILE__, __LINE__, #call,                     \
              taso_strerror(check_err_), taso_error_detail());                                     \
    }                                                                                              \
  } while (0)

#define CHECK_ERR(call, code)                                                                      \
  do {                                                                                             \
    taso_err_t check_err_ = (call);                                                                \
    test_checks++;                                                                                 \
    if (check_err_ != (code)) {                                                                    \
      test_failures++;                                                                             \
      fprintf(stderr, "%s:%d: %s returned %s, expected %s (%s)\n", __FILE__, __LINE__, #call,      \
              taso_strerror(check_err_), taso_strerror(code), taso_error_detail());                \
    }                                                                                              \
  } while (0)

#define CHECK_STR(a, b)                                                                            \
  do {                                                                                             \
    const char *check_a_ = (a), *check_b_ = (b);                                                   \
    test_checks++;                                                                                 \
    if (strcmp(check_a_, check_b_) != 0) {                                                         \
      test_failures++;                                                                             \
      fprintf(stderr, "%s:%d: \"%s\" != \"%s\"\n", __FILE__, __LINE__, check_a_, check_b_);        \
    }                                                                                              \
  } while (0)

typedef struct {
  const char *name;
  void (*fn)(void);
} test_case_t;

/* Runs cases; returns the process exit status. */
static inline int test_run(const test_case_t *cases, int n) {
  int passed = 0, failed = 0;
  for (int i = 0; i < n; i++) {
    int before = test_failures;
    cases[i].fn();
    if (test_failures == before) {
      passed++;
    } else {
      failed++;
      fprintf(stderr, "FAILED: %s\n", cases[i].name);
    }
  }
  printf("%d checks; %d passed, %d failed\n", test_checks, passed, failed);
  return failed ? 1 : 0;
}

#define TEST(fn)                                                                                   \
  { #fn, fn }

#endif
