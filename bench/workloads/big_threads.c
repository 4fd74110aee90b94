/* SPDX-License-Identifier: BSD-3-Clause */
/* big_threads SECONDS [THREADS]: THREADS threads (8) computing for SECONDS
 * of wall time through a few levels of functions of their own, so that a
 * recording of it holds many samples over a few hundred distinct stacks.
 * The workload of bench_symbolize.py's big recording. */
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static double seconds;
static volatile double sink;

static double now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

__attribute__((noinline)) static double leaf(int k, double x) {
  for (int i = 0; i < 2000; i++) x = x * 1.0000001 + sin(x + k);
  return x;
}

__attribute__((noinline)) static double level(int depth, int k, double x) {
  if (depth == 0) return leaf(k, x);
  /* two callees per level: 2^depth distinct paths */
  return (k >> depth) & 1 ? level(depth - 1, k, x + 1) : level(depth - 1, k, x - 1) + 1;
}

static void *worker(void *arg) {
  long id = (long)arg;
  double end = now() + seconds, x = (double)id;
  for (int k = 0; now() < end; k++) x = level(6, k + (int)id, x) * 1e-9;
  sink = x;
  return NULL;
}

int main(int argc, char **argv) {
  seconds = argc > 1 ? atof(argv[1]) : 10;
  int n = argc > 2 ? atoi(argv[2]) : 8;
  pthread_t t[64];
  if (n < 1 || n > 64) return 2;
  for (long i = 0; i < n; i++) pthread_create(&t[i], NULL, worker, (void *)i);
  for (int i = 0; i < n; i++) pthread_join(t[i], NULL);
  printf("%g\n", sink);
  return 0;
}
