/* SPDX-License-Identifier: BSD-3-Clause */
/* deepstack: the CPU-bound workload of the profiler benchmarks
 * (bench/bench_profiler.py).
 *
 * A call stack about 20 frames deep, as real programs have: a driver, a
 * chain of 16 distinct layers that each do a little work of their own
 * before and after calling the next, a recursive walk 4 levels deep, and
 * three kinds of leaf (floating point through libm, hashing, sorting). Time
 * is spread over many frames and stacks, not all spent in one loop.
 *
 * The same source is the body of the benchmark's cells (it is valid as a
 * cflame cell: definitions only) and, compiled once with the cell flags
 * (-O2 -g -fno-omit-frame-pointer), the workload of overhead_main.c. */
#include <math.h>
#include <stdint.h>
#include <string.h>

static uint64_t ds_mix(uint64_t x) {
  x ^= x >> 33;
  x *= 0xff51afd7ed558ccdULL;
  x ^= x >> 33;
  x *= 0xc4ceb9fe1a85ec53ULL;
  x ^= x >> 33;
  return x;
}

/* Leaves. */
__attribute__((noinline)) double ds_leaf_math(uint64_t s, int n) {
  double x = (double)(s & 0xffff) / 65536.0, acc = 0;
  for (int i = 0; i < n; i++) {
    acc += sin(x) * sqrt(x + i);
    x = x * 1.0001 + 0.001;
  }
  return acc;
}

__attribute__((noinline)) uint64_t ds_leaf_hash(uint64_t s, int n) {
  uint8_t buf[64];
  for (int i = 0; i < 64; i++) buf[i] = (uint8_t)(s >> (i % 8 * 8));
  uint64_t h = 0xcbf29ce484222325ULL;
  for (int r = 0; r < n; r++)
    for (int i = 0; i < 64; i++) {
      h ^= buf[i];
      h *= 0x100000001b3ULL;
    }
  return h;
}

__attribute__((noinline)) uint64_t ds_leaf_sort(uint64_t s, int n) {
  int a[48];
  for (int i = 0; i < 48; i++) a[i] = (int)(ds_mix(s + (uint64_t)i) & 0xffff);
  for (int r = 0; r < n; r++) {
    for (int i = 1; i < 48; i++) {
      int v = a[i], j = i - 1;
      while (j >= 0 && a[j] > v) {
        a[j + 1] = a[j];
        j--;
      }
      a[j + 1] = v;
    }
    a[r % 48] ^= (int)(s >> 7) & 0xff;
  }
  return (uint64_t)a[0] + (uint64_t)a[47];
}

/* A recursive walk: four more frames of the same function. */
__attribute__((noinline)) uint64_t ds_walk(uint64_t s, int depth, int w) {
  if (depth == 0) {
    switch (s % 3) {
    case 0: return (uint64_t)ds_leaf_math(s, 6 * w);
    case 1: return ds_leaf_hash(s, w);
    default: return ds_leaf_sort(s, 1 + w / 8);
    }
  }
  uint64_t r = ds_walk(ds_mix(s), depth - 1, w);
  if (s & 1) r += ds_walk(ds_mix(s + 1), depth - 1, w / 2 + 1);
  return r ^ s;
}

/* Layers 16 .. 1: each mixes its seed (a little self time), calls the
 * next, and combines the result (so the call is not a tail call). Written
 * out, not made by a macro: a cell must show its definitions to cflame. */
static inline uint64_t ds_pre(uint64_t s, int k) {
  for (int i = 0; i < k % 4; i++) s = ds_mix(s + (uint64_t)k);
  return s;
}

static inline uint64_t ds_post(uint64_t r, uint64_t s, int k) {
  return r * (uint64_t)(2 * k + 1) + (s >> k);
}

__attribute__((noinline)) uint64_t ds_bottom(uint64_t s, int w) { return ds_walk(s, 4, w) + 1; }
__attribute__((noinline)) uint64_t ds_layer16(uint64_t s, int w) {
  s = ds_pre(s, 16);
  return ds_post(ds_bottom(s, w), s, 16);
}
__attribute__((noinline)) uint64_t ds_layer15(uint64_t s, int w) {
  s = ds_pre(s, 15);
  return ds_post(ds_layer16(s, w), s, 15);
}
__attribute__((noinline)) uint64_t ds_layer14(uint64_t s, int w) {
  s = ds_pre(s, 14);
  return ds_post(ds_layer15(s, w), s, 14);
}
__attribute__((noinline)) uint64_t ds_layer13(uint64_t s, int w) {
  s = ds_pre(s, 13);
  return ds_post(ds_layer14(s, w), s, 13);
}
__attribute__((noinline)) uint64_t ds_layer12(uint64_t s, int w) {
  s = ds_pre(s, 12);
  return ds_post(ds_layer13(s, w), s, 12);
}
__attribute__((noinline)) uint64_t ds_layer11(uint64_t s, int w) {
  s = ds_pre(s, 11);
  return ds_post(ds_layer12(s, w), s, 11);
}
__attribute__((noinline)) uint64_t ds_layer10(uint64_t s, int w) {
  s = ds_pre(s, 10);
  return ds_post(ds_layer11(s, w), s, 10);
}
__attribute__((noinline)) uint64_t ds_layer9(uint64_t s, int w) {
  s = ds_pre(s, 9);
  return ds_post(ds_layer10(s, w), s, 9);
}
__attribute__((noinline)) uint64_t ds_layer8(uint64_t s, int w) {
  s = ds_pre(s, 8);
  return ds_post(ds_layer9(s, w), s, 8);
}
__attribute__((noinline)) uint64_t ds_layer7(uint64_t s, int w) {
  s = ds_pre(s, 7);
  return ds_post(ds_layer8(s, w), s, 7);
}
__attribute__((noinline)) uint64_t ds_layer6(uint64_t s, int w) {
  s = ds_pre(s, 6);
  return ds_post(ds_layer7(s, w), s, 6);
}
__attribute__((noinline)) uint64_t ds_layer5(uint64_t s, int w) {
  s = ds_pre(s, 5);
  return ds_post(ds_layer6(s, w), s, 5);
}
__attribute__((noinline)) uint64_t ds_layer4(uint64_t s, int w) {
  s = ds_pre(s, 4);
  return ds_post(ds_layer5(s, w), s, 4);
}
__attribute__((noinline)) uint64_t ds_layer3(uint64_t s, int w) {
  s = ds_pre(s, 3);
  return ds_post(ds_layer4(s, w), s, 3);
}
__attribute__((noinline)) uint64_t ds_layer2(uint64_t s, int w) {
  s = ds_pre(s, 2);
  return ds_post(ds_layer3(s, w), s, 2);
}
__attribute__((noinline)) uint64_t ds_layer1(uint64_t s, int w) {
  s = ds_pre(s, 1);
  return ds_post(ds_layer2(s, w), s, 1);
}

/* The work: iters trips down the stack (about 3 us each on the benchmark
 * machine; the benchmark calibrates iters to the CPU time it wants). */
__attribute__((noinline)) uint64_t deepstack_run(long iters) {
  uint64_t acc = 0;
  for (long i = 0; i < iters; i++) acc += ds_layer1(ds_mix((uint64_t)i), 8 + (int)(i % 9));
  return acc;
}
