/* SPDX-License-Identifier: BSD-3-Clause */
/* What `cflame record --top` watches (tests/cli/test_top.py): SECONDS of
 * CPU (argument 1), in turns of one() and three(), the second doing three
 * times the first's work in a loop of its own; it prints one line a turn, so that its output
 * shares the terminal with the live table, and the turns at the end. */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static double cpu_seconds(void) {
  struct timespec t;
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
  return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

/* Each its own loop: the time is each one's self. */
__attribute__((noinline)) double one(long n) {
  volatile double x = 0;
  for (long i = 0; i < n; i++) x += (double)i * 0.5;
  return x;
}

__attribute__((noinline)) double three(long n) {
  volatile double x = 0;
  for (long i = 0; i < 3 * n; i++) x += (double)i * 0.5;
  return x;
}

int main(int argc, char **argv) {
  double seconds = argc > 1 ? atof(argv[1]) : 3.0;
  long turns = 0;
  double sink = 0;
  while (cpu_seconds() < seconds) {
    sink += one(1000000) + three(1000000);
    if (++turns % 50 == 0) printf("turn %ld\n", turns);
  }
  printf("%ld turns%s\n", turns, sink < 0 ? "" : "");
  return 0;
}
