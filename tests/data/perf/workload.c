/* SPDX-License-Identifier: BSD-3-Clause */ /* The program recorded in this directory's captures (see README), and
 * compiled and recorded by tests/cli/test_perf_live.py: known functions in
 * a known caller order (main -> outer -> middle -> leaf), a qsort whose
 * comparator runs under libc, and page faults that reach the kernel.
 *
 *   cc -O2 -g -fno-omit-frame-pointer \
 *     -o workload workload.c
 *   ./workload [MILLISECONDS]     (default 100 ms of CPU in leaf) */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static volatile double sink;

static double cpu_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

__attribute__((noinline)) void consume(double s) {
  sink += s;
}

/* Not a leaf function in the compiler's sense (it calls consume), so that
 * it sets up its frame pointer and middle shows in its stacks. */
__attribute__((noinline)) double leaf(int n) {
  double s = 0;
  for (int i = 0; i < n; i++) s += (double)(i ^ (i >> 3)) * 0.5;
  consume(s);
  return s;
}

__attribute__((noinline)) double middle(int n) {
  double s = leaf(n);
  sink += s;
  return s;
}

__attribute__((noinline)) void outer(double ms) {
  double start = cpu_ms();
  while (cpu_ms() - start < ms) sink += middle(20000);
}

static int compare(const void *a, const void *b) {
  int x = *(const int *)a, y = *(const int *)b;
  return (x > y) - (x < y);
}

__attribute__((noinline)) void sort_numbers(size_t n) {
  int *v = malloc(n * sizeof *v);
  if (!v) return;
  for (size_t i = 0; i < n; i++) v[i] = rand();
  qsort(v, n, sizeof *v, compare);
  sink += v[n / 2];
  free(v);
}

__attribute__((noinline)) void touch_memory(size_t bytes) {
  char *p = malloc(bytes);
  if (!p) return;
  memset(p, 1, bytes); /* page faults: kernel frames */
  sink += p[bytes / 2];
  free(p);
}

int main(int argc, char **argv) {
  double ms = argc > 1 ? atof(argv[1]) : 100;
  outer(ms);
  sort_numbers(200000);
  touch_memory(16u << 20);
  printf("%g\n", sink);
  return 0;
}
