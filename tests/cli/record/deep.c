/* SPDX-License-Identifier: BSD-3-Clause */
/* A program that recurses to the edge of its stack and works there
 * (tests/cli/test_record.py): a sample that lands in bottom_work() has
 * less stack left below it than a signal frame and the sampler's handler
 * need, so the handler must run on an alternate stack.
 *
 *   deep main CPU_S     on the main thread, whose stack may grow to
 *                       RLIMIT_STACK (getrlimit, through
 *                       pthread_getattr_np, which reads it for the main
 *                       thread)
 *   deep thread CPU_S   on a thread of its own (the stack pthread_create
 *                       gave it)
 *
 * The recursion stops when less than LEAVE_BYTES (+ a frame) are left; at
 * the bottom, bottom_work() burns about CPU_S seconds of CPU (as many
 * iterations as took that long at the top). It prints the
 * depth reached and the bytes left, and exits 0. */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "work.h"

#define LEAVE_BYTES 1024
#define FRAME_BYTES 256

static uintptr_t stack_low; /* the lowest address the stack may reach */
static double cpu_s;
static long depth_reached;
static uintptr_t left_at_bottom;

static long bottom_iters; /* burn()'s iterations in cpu_s, measured at the top */

/* No call into a library at the bottom: there is no room for one (a
 * sanitizer's clock_gettime, the dynamic loader's resolver). */
__attribute__((noinline)) static void bottom_work(void) {
  burn(bottom_iters);
  sink = sink + 1;
}

__attribute__((noinline)) static void recurse(long depth) {
  volatile char frame[FRAME_BYTES];
  frame[0] = (char)depth;
  uintptr_t here = (uintptr_t)frame;
  if (here - stack_low > LEAVE_BYTES + 2 * FRAME_BYTES) {
    recurse(depth + 1);
  } else {
    depth_reached = depth;
    left_at_bottom = here - stack_low;
    bottom_work();
  }
  sink = sink + frame[0]; /* no tail call */
}

/* The calling thread's stack bounds. */
static void find_stack(void) {
  pthread_attr_t attr;
  void *addr;
  size_t size;
  if (pthread_getattr_np(pthread_self(), &attr) != 0 ||
      pthread_attr_getstack(&attr, &addr, &size) != 0) {
    perror("deep: pthread_getattr_np");
    exit(2);
  }
  pthread_attr_destroy(&attr);
  stack_low = (uintptr_t)addr;
  double start = thread_cpu();
  burn(10000000);
  bottom_iters = (long)(10000000 * cpu_s / (thread_cpu() - start));
}

static void *deep_thread(void *arg) {
  find_stack();
  recurse(0);
  return arg;
}

int main(int argc, char **argv) {
  if (argc != 3 || (strcmp(argv[1], "main") && strcmp(argv[1], "thread"))) {
    fprintf(stderr, "usage: deep main|thread CPU_S\n");
    return 2;
  }
  cpu_s = atof(argv[2]);
  if (!strcmp(argv[1], "main")) {
    find_stack();
    recurse(0);
  } else {
    pthread_t t;
    if (pthread_create(&t, NULL, deep_thread, NULL) != 0) return 2;
    pthread_join(t, NULL);
  }
  printf("{\"depth\": %ld, \"left\": %lu}\n", depth_reached, (unsigned long)left_at_bottom);
  return 0;
}
