/* SPDX-License-Identifier: BSD-3-Clause */
/* A small assertion kit for the unit test executables, after jansson's
 * test/suites/api and libuv's test/task.h: each failed check prints
 * file:line and what was expected, and the executable exits non-zero. */
#ifndef CFLAME_TEST_H
#define CFLAME_TEST_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int test_failures;
static int test_checks;

#define CHECK(cond)                                                          \
  do {                                                                       \
    test_checks++;                                                           \
    if (!(cond)) {                                                           \
      test_failures++;                                                       \
      fprintf(stderr, "%s:%d: check failed: %s\n", __FILE__, __LINE__, #cond); \
    }                                                                        \
  } while (0)

#define CHECK_INT(got, want)                                                 \
  do {                                                                       \
    long long g_ = (long long)(got), w_ = (long long)(want);                 \
    test_checks++;                                                           \
    if (g_ != w_) {                                                          \
      test_failures++;                                                       \
      fprintf(stderr, "%s:%d: %s is %lld, expected %lld\n", __FILE__, __LINE__, #got, g_, w_); \
    }                                                                        \
  } while (0)

#define CHECK_STR(got, want)                                                 \
  do {                                                                       \
    const char *g_ = (got), *w_ = (want);                                    \
    test_checks++;                                                           \
    if ((g_ == NULL) != (w_ == NULL) || (g_ && strcmp(g_, w_) != 0)) {       \
      test_failures++;                                                       \
      fprintf(stderr, "%s:%d: %s is \"%s\", expected \"%s\"\n", __FILE__, __LINE__, #got, \
              g_ ? g_ : "(null)", w_ ? w_ : "(null)");                       \
    }                                                                        \
  } while (0)

/* Ends main: prints a summary line and returns the exit status. */
#define TEST_DONE()                                                          \
  (fprintf(stderr, "%d checks, %d failed\n", test_checks, test_failures),    \
   test_failures ? 1 : 0)

#endif
