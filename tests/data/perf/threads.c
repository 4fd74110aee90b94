/* SPDX-License-Identifier: BSD-3-Clause */ /* A program with named threads, recorded in threads.txt (see README): two
 * threads whose names have a space ("hash worker", "sort worker"), so that
 * the process name of their samples is folded with underscores.
 *
 *   cc -O2 -g -fno-omit-frame-pointer \
 *     -pthread -o t threads.c && ./t */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static volatile double sink;

static double thread_cpu_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

__attribute__((noinline)) unsigned hash_block(unsigned seed) {
  unsigned h = seed;
  for (int i = 0; i < 10000; i++) h = (h ^ (unsigned)i) * 16777619u;
  return h;
}

__attribute__((noinline)) double sum_block(int n) {
  double s = 0;
  for (int i = 0; i < n; i++) s += i * 0.25;
  return s;
}

static void *hasher(void *arg) {
  pthread_setname_np(pthread_self(), "hash worker");
  double start = thread_cpu_ms();
  while (thread_cpu_ms() - start < 50) sink += hash_block((unsigned)(size_t)arg);
  return NULL;
}

static void *summer(void *arg) {
  pthread_setname_np(pthread_self(), "sort worker");
  double start = thread_cpu_ms();
  while (thread_cpu_ms() - start < 50) sink += sum_block(10000);
  return arg;
}

int main(void) {
  pthread_t a, b;
  pthread_create(&a, NULL, hasher, (void *)7);
  pthread_create(&b, NULL, summer, NULL);
  pthread_join(a, NULL);
  pthread_join(b, NULL);
  printf("%g\n", sink);
  return 0;
}
