/* SPDX-License-Identifier: BSD-3-Clause */
/* What prog exec runs in its child (tests/cli/test_record.py): a program
 * of its own, under a root of its own. */
#include <stdlib.h>

static volatile double sink;

__attribute__((noinline)) void other_work(long n) {
  double x = sink;
  for (long i = 0; i < n; i++) x = x * 0.999999 + 1.0;
  sink = x + 1;
}

int main(int argc, char **argv) {
  long n = argc > 1 ? atol(argv[1]) : 1000000;
  for (int r = 0; r < 10; r++) other_work(3 * n);
  return 0;
}
