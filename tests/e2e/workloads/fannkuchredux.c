/* SPDX-License-Identifier: BSD-3-Clause */
/* The Computer Language Benchmarks Game: fannkuch-redux, after the C
 * program (Ledrug Katz), single-threaded. Integer work on small arrays:
 * flips of every permutation. Argument: n, the length. */
#include <stdio.h>
#include <stdlib.h>

int fannkuchredux(int n, int *checksum) {
  int *perm = malloc(n * sizeof *perm), *perm1 = malloc(n * sizeof *perm1);
  int *count = malloc(n * sizeof *count);
  int maxFlipsCount = 0, permCount = 0, r = n;
  *checksum = 0;
  for (int i = 0; i < n; i++) perm1[i] = i;
  for (;;) {
    for (; r != 1; r--) count[r - 1] = r;
    for (int i = 0; i < n; i++) perm[i] = perm1[i];
    int flipsCount = 0, k;
    while ((k = perm[0]) != 0) {
      int k2 = (k + 1) >> 1;
      for (int i = 0; i < k2; i++) {
        int temp = perm[i];
        perm[i] = perm[k - i];
        perm[k - i] = temp;
      }
      flipsCount++;
    }
    if (flipsCount > maxFlipsCount) maxFlipsCount = flipsCount;
    *checksum += permCount % 2 == 0 ? flipsCount : -flipsCount;
    /* The next permutation, by incremental change. */
    for (;;) {
      if (r == n) {
        free(perm);
        free(perm1);
        free(count);
        return maxFlipsCount;
      }
      int perm0 = perm1[0];
      for (int i = 0; i < r; i++) perm1[i] = perm1[i + 1];
      perm1[r] = perm0;
      if (--count[r] > 0) break;
      r++;
    }
    permCount++;
  }
}

int main(int argc, char *argv[]) {
  int n = argc > 1 ? atoi(argv[1]) : 7, checksum;
  int flips = fannkuchredux(n, &checksum);
  printf("%d\nPfannkuchen(%d) = %d\n", checksum, n, flips);
  return 0;
}
