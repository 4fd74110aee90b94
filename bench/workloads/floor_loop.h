/* SPDX-License-Identifier: BSD-3-Clause */
/* The loop, the event and the on/off measurement shared by signal_floor.c and
 * stack_user_floor.c: a 3-deep call chain around a floating-point loop,
 * run RUNS times with a perf event off and RUNS times with it on,
 * alternately, keeping the best CPU time of each (the calling thread's). */
#ifndef FLOOR_LOOP_H
#define FLOOR_LOOP_H

#include <linux/perf_event.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#define FLOOR_RUNS 30

static volatile long floor_iterations = 20000000;

static double floor_cpu_now(void) {
  struct timespec t;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
  return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

__attribute__((noinline)) static double floor_work(long n) {
  double z = 0;
  for (long k = 0; k < n; k++) {
    z += (double)k * 0.5;
    __asm__ volatile("" : "+x"(z));
  }
  return z;
}
__attribute__((noinline)) static double floor_deeper(long n) {
  return floor_work(n) + 1;
}
__attribute__((noinline)) static double floor_deepest(long n) {
  return floor_deeper(n) + 1;
}

/* A disabled task-clock event's attributes for the calling thread, user
 * mode only, overflowing every period ns of its CPU time; the caller adds
 * what it samples. */
static void floor_task_clock_attr(struct perf_event_attr *a, unsigned long period) {
  memset(a, 0, sizeof *a);
  a->size = sizeof *a;
  a->type = PERF_TYPE_SOFTWARE;
  a->config = PERF_COUNT_SW_TASK_CLOCK;
  a->sample_period = period;
  a->disabled = 1;
  a->exclude_hv = 1;
  a->exclude_kernel = 1;
}

/* Opens the event for the calling thread; -1 (said on stderr) if it cannot. */
static int floor_open(struct perf_event_attr *a) {
  int fd = (int)syscall(SYS_perf_event_open, a, 0, -1, -1, 0);
  if (fd < 0) perror("perf_event_open");
  return fd;
}

/* Best CPU seconds of the loop with the perf event fd off and on; returns
 * the loops' sum (print it, so the loops are not optimized away). */
static double floor_measure(int fd, double *best_off, double *best_on) {
  double sink = 0;
  *best_off = *best_on = 1e9;
  for (int r = 0; r < FLOOR_RUNS; r++) {
    double t0 = floor_cpu_now();
    sink += floor_deepest(floor_iterations + r);
    double t1 = floor_cpu_now();
    if (t1 - t0 < *best_off) *best_off = t1 - t0;
    ioctl(fd, PERF_EVENT_IOC_ENABLE, 0);
    t0 = floor_cpu_now();
    sink += floor_deepest(floor_iterations + 2 * r);
    t1 = floor_cpu_now();
    ioctl(fd, PERF_EVENT_IOC_DISABLE, 0);
    if (t1 - t0 < *best_on) *best_on = t1 - t0;
  }
  return sink;
}

#endif
