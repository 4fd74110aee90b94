/* SPDX-License-Identifier: BSD-3-Clause */
/* The known work of the programs tests/cli/test_record.py records: one()
 * and three(), three times one()'s work, each a frame of its own, and the
 * calling thread's CPU clock to measure them by. */
#ifndef WORK_H
#define WORK_H

#include <time.h>

static volatile double sink;

static double thread_cpu(void) {
  struct timespec ts;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* A dependent chain: the same cost per iteration wherever it runs. */
__attribute__((noinline)) static void burn(long n) {
  double x = sink;
  for (long i = 0; i < n; i++) x = x * 0.999999 + 1.0;
  sink = x;
}

/* Each does its work and then something of its own: no tail call hides
 * its frame. */
__attribute__((noinline)) void one(long n) {
  burn(n);
  sink = sink + 1;
}
__attribute__((noinline)) void three(long n) {
  burn(3 * n);
  sink = sink + 1;
}

/* rounds of one(n) and three(n), alternating, so that the machine's
 * swings of speed fall on both alike; *t1 and *t3 get the CPU time of
 * each. */
static void one_and_three(long n, int rounds, double *t1, double *t3) {
  *t1 = *t3 = 0;
  for (int r = 0; r < rounds; r++) {
    double a = thread_cpu();
    one(n);
    double b = thread_cpu();
    three(n);
    *t1 += b - a;
    *t3 += thread_cpu() - b;
  }
}

#endif
