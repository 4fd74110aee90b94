/* SPDX-License-Identifier: BSD-3-Clause */
/* allocs_cell: the malloc-heavy loop of bench/bench_allocs.py, built as
 * a cell is (the cell flags, -fPIC -shared) and loaded by allocs_main.c
 * with dlopen, as the worker loads a cell, so that its calls to malloc and
 * free bind to the driver's, and its frames are a cell's: allocs_cell is
 * the cell's entry, alloc_loop a function the cell calls.
 *
 * The loop keeps 8 blocks alive: each iteration frees the oldest and
 * mallocs a new one of a size drawn from 16 to 1,024 bytes (a fixed
 * generator, so every run does the same calls), and touches its first
 * byte. That is one malloc and one free per iteration, most of them served
 * by glibc's thread cache: about the cheapest allocation there is, so the
 * recorder's cost per call shows at its largest. With fill, each new block
 * is also written whole (memset) and its last byte read: an allocation
 * that is used, as a cell's would be. Returns a checksum of the sizes. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

__attribute__((noinline)) static uint64_t alloc_loop(long iters, int fill) {
  void *live[8] = {0};
  uint64_t x = 0x9E3779B97F4A7C15ull, sum = 0;
  for (long i = 0; i < iters; i++) {
    x = x * 6364136223846793005ull + 1442695040888963407ull;
    size_t size = 16 + (size_t)((x >> 33) % 1009);
    free(live[i & 7]);
    char *p = malloc(size);
    p[0] = (char)i;
    if (fill) {
      memset(p, (int)i, size);
      sum += (unsigned char)((volatile char *)p)[size - 1];
    }
    live[i & 7] = p;
    sum += size;
  }
  for (int i = 0; i < 8; i++) free(live[i]);
  return sum;
}

uint64_t allocs_cell(long iters, int fill) {
  uint64_t sum = alloc_loop(iters, fill);
  __asm__ volatile("" ::: "memory"); /* a frame of its own, as a cell's entry */
  return sum;
}
