/* SPDX-License-Identifier: BSD-3-Clause */
/* A program for `cflame record` (scripts/demo records it; docs/CLI.md):
 * two threads doing different work, one counting primes by trial division,
 * the other sorting random arrays with the C library's qsort, while the
 * main thread checksums the sorted arrays.
 *
 *   cc -O2 -g -fno-omit-frame-pointer -pthread -o record_demo record_demo.c
 *   cflame record -- ./record_demo          # writes ./record_demo.cflame.svg */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#define SORTS 40
#define SORT_N 200000

static uint64_t *arrays[SORTS];

static int is_prime(unsigned n) {
  if (n < 2) return 0;
  for (unsigned d = 2; d * d <= n; d++)
    if (n % d == 0) return 0;
  return 1;
}

static void *count_primes(void *arg) {
  unsigned limit = *(unsigned *)arg, count = 0;
  for (unsigned n = 0; n < limit; n++) count += is_prime(n);
  printf("%u primes below %u\n", count, limit);
  return NULL;
}

static int compare(const void *a, const void *b) {
  uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
  return (x > y) - (x < y);
}

static void fill(uint64_t *a, size_t n, uint64_t seed) {
  for (size_t i = 0; i < n; i++) {
    seed ^= seed << 13, seed ^= seed >> 7, seed ^= seed << 17;
    a[i] = seed;
  }
}

static void *sort_arrays(void *arg) {
  (void)arg;
  for (int k = 0; k < SORTS; k++) {
    uint64_t *a = malloc(SORT_N * sizeof *a);
    fill(a, SORT_N, 0x9e3779b97f4a7c15ull + (uint64_t)k);
    qsort(a, SORT_N, sizeof *a, compare);
    arrays[k] = a;
  }
  return NULL;
}

static uint64_t checksum(void) {
  uint64_t sum = 0;
  for (int k = 0; k < SORTS; k++)
    for (size_t i = 0; i < SORT_N; i++) sum = sum * 31 + arrays[k][i];
  return sum;
}

int main(void) {
  unsigned limit = 3000000;
  pthread_t primes, sorts;
  pthread_create(&primes, NULL, count_primes, &limit);
  pthread_create(&sorts, NULL, sort_arrays, NULL);
  pthread_join(sorts, NULL);
  pthread_join(primes, NULL);
  printf("checksum %016llx\n", (unsigned long long)checksum());
  for (int k = 0; k < SORTS; k++) free(arrays[k]);
  return 0;
}
