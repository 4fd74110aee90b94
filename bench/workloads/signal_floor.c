/* SPDX-License-Identifier: BSD-3-Clause */
/* The floor under any sampler built on signals: what one perf task-clock
 * signal (SIGTRAP by attr.sigtrap, as flame/sample/fl_sampler.c uses) costs the
 * sampled thread when its handler does nothing, does what cflame's handler
 * does (unw_backtrace), or also reads the thread's CPU clock.
 *
 *   cc -O2 -fno-omit-frame-pointer -o signal_floor bench/workloads/signal_floor.c \
 *      -lunwind -lunwind-x86_64
 *   ./signal_floor MODE PERIOD_NS     MODE 1: empty handler, 2: + unw_backtrace,
 *                                    3: + clock_gettime(CLOCK_THREAD_CPUTIME_ID)
 *
 * It runs the same 20-million-iteration loop 30 times with the event off
 * and 30 times with it on, alternately, and prints the best of each, the
 * overhead and the CPU per sample. Not part of scripts/bench: it is the
 * experiment behind the "signal floor" of docs/PERFORMANCE.md. */
#define _GNU_SOURCE
#include <libunwind.h>
#include <linux/perf_event.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "floor_loop.h"

static volatile long hits;
static int mode;

static void on_trap(int sig, siginfo_t *si, void *uc) {
  (void)sig, (void)si, (void)uc;
  hits++;
  if (mode >= 2) {
    void *pcs[128];
    unw_backtrace(pcs, 128);
  }
  if (mode >= 3) {
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  }
}

int main(int argc, char **argv) {
  if (argc != 3) {
    fprintf(stderr, "usage: %s MODE(1-3) PERIOD_NS\n", argv[0]);
    return 2;
  }
  mode = atoi(argv[1]);
  long period = atol(argv[2]);
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_sigaction = on_trap;
  sa.sa_flags = SA_SIGINFO | SA_RESTART;
  sigaction(SIGTRAP, &sa, NULL);
  void *pcs[128];
  unw_set_caching_policy(unw_local_addr_space, UNW_CACHE_PER_THREAD);
  unw_backtrace(pcs, 128); /* warm up, as the sampler does */

  struct perf_event_attr a;
  floor_task_clock_attr(&a, (unsigned long)period);
  a.sigtrap = 1;
  a.remove_on_exec = 1;
  int fd = floor_open(&a);
  if (fd < 0) return 1;
  double best_on, best_off;
  double sink = floor_measure(fd, &best_off, &best_on);
  printf(
      "mode %d, period %ld ns: off %.4f s, on %.4f s, overhead %+.1f%%, %ld samples, "
      "%.1f us per sample (%g)\n",
      mode, period, best_off, best_on, 100 * (best_on / best_off - 1), hits,
      (best_on - best_off) / ((double)hits / FLOOR_RUNS) * 1e6, sink);
  return 0;
}
