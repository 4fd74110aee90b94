/* SPDX-License-Identifier: BSD-3-Clause */
/* The wall-clock profiler's workload (bench/bench_wall.py): threads that
 * wait, and threads that compute, timed by the program itself.
 *
 *   waits blocked THREADS ROUNDS  each thread, ROUNDS times: computes about
 *                                 0.05 ms of CPU, then sleeps 0.95 ms
 *                                 (nanosleep): threads mostly blocked
 *   waits cpu THREADS ROUNDS      each thread computes ROUNDS x 1 ms of CPU
 *   waits pingpong 2 ROUNDS       two threads pass a byte back and forth
 *                                 through two pipes, ROUNDS times: every
 *                                 read blocks until the other writes
 *
 * It prints one line: "wall S cpu S" (seconds, from the first thread's
 * start to the last one's end, and the process's CPU time over the
 * same span). */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static long rounds;
static int mode; /* 0 blocked, 1 cpu, 2 pingpong */
static int pipes[2][2];
static volatile double sink;

static double now(clockid_t c) {
  struct timespec t;
  clock_gettime(c, &t);
  return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

/* About `seconds` of the thread's CPU time. */
__attribute__((noinline)) static void compute(double seconds) {
  double t0 = now(CLOCK_THREAD_CPUTIME_ID), acc = 1;
  while (now(CLOCK_THREAD_CPUTIME_ID) - t0 < seconds)
    for (int i = 0; i < 200; i++) acc = acc * 1.0000001 + 0.5;
  sink += acc;
}

__attribute__((noinline)) static void wait_a_little(void) {
  struct timespec t = {0, 950000};
  nanosleep(&t, NULL);
}

static void *worker(void *arg) {
  long id = (long)arg;
  char byte = 0;
  for (long r = 0; r < rounds; r++) {
    if (mode == 0) {
      compute(0.00005);
      wait_a_little();
    } else if (mode == 1) {
      compute(0.001);
    } else if (id == 0) { /* pingpong: 0 serves, 1 answers */
      if (write(pipes[0][1], &byte, 1) != 1 || read(pipes[1][0], &byte, 1) != 1) break;
    } else {
      if (read(pipes[0][0], &byte, 1) != 1 || write(pipes[1][1], &byte, 1) != 1) break;
    }
  }
  return NULL;
}

int main(int argc, char **argv) {
  if (argc != 4) {
    fprintf(stderr, "usage: waits blocked|cpu|pingpong THREADS ROUNDS\n");
    return 2;
  }
  mode = !strcmp(argv[1], "blocked") ? 0 : !strcmp(argv[1], "cpu") ? 1 : 2;
  int n = atoi(argv[2]);
  rounds = atol(argv[3]);
  if (mode == 2 && (n != 2 || pipe(pipes[0]) || pipe(pipes[1]))) return 2;
  pthread_t *th = calloc((size_t)n, sizeof *th);
  double w0 = now(CLOCK_MONOTONIC), c0 = now(CLOCK_PROCESS_CPUTIME_ID);
  for (long i = 0; i < n; i++) pthread_create(&th[i], NULL, worker, (void *)i);
  for (int i = 0; i < n; i++) pthread_join(th[i], NULL);
  printf("wall %.6f cpu %.6f\n", now(CLOCK_MONOTONIC) - w0, now(CLOCK_PROCESS_CPUTIME_ID) - c0);
  free(th);
  return 0;
}
