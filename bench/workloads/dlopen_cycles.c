/* SPDX-License-Identifier: BSD-3-Clause */
/* dlopen_cycles PLUGIN N: opens the shared object PLUGIN, calls its
 * function "work", and closes it, N times; for the cost of module
 * tracking in `cflame record` (bench/bench_symbolize.py) and its tests. */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>

int main(int argc, char **argv) {
  if (argc != 3) {
    fprintf(stderr, "usage: %s PLUGIN N\n", argv[0]);
    return 2;
  }
  long n = atol(argv[2]);
  double sum = 0;
  for (long i = 0; i < n; i++) {
    void *h = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
    if (!h) {
      fprintf(stderr, "%s\n", dlerror());
      return 1;
    }
    double (*work)(long) = (double (*)(long))dlsym(h, "work");
    if (work) sum += work(i);
    dlclose(h);
  }
  printf("%ld cycles, %g\n", n, sum);
  return 0;
}
