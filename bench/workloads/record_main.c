/* SPDX-License-Identifier: BSD-3-Clause */
/* record_main: the deepstack workload as a whole program of its own, for
 * bench/bench_record.py: the program `cflame record` and `perf record -g`
 * each record in turn, dynamically linked, without any profiler of its own.
 *
 *   record_main ITERS [await]
 *
 * With await, it reads a line on stdin before the work (bench_attach.py
 * attaches cflame record --pid in between).
 *
 * Prints one JSON line on stdout as the last thing main does: the work's
 * CPU time (around deepstack_run) and wall time, the process's own CPU
 * time so far (getrusage RUSAGE_SELF, user and system: a profiler's work in
 * the process counts, in its signal handler or in the kernel's interrupt
 * on its behalf, and so does cflame's preloaded library starting up), and
 * the work's result (the same in every run), and the time the work waited
 * for a CPU (its run delay, schedstat: a busy machine's share of its wall
 * time, which bench_attach.py takes out). */
#define _GNU_SOURCE
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <time.h>

#include "../../tests/lib/run_delay.h"

uint64_t deepstack_run(long iters);

static double clock_s(clockid_t id) {
  struct timespec ts;
  clock_gettime(id, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static double tv(struct timeval t) { return (double)t.tv_sec + (double)t.tv_usec / 1e6; }

int main(int argc, char **argv) {
  long iters = argc > 1 ? atol(argv[1]) : 100000;
  char line[64];
  if (argc > 2 && !fgets(line, sizeof line, stdin)) return 2;
  double c0 = clock_s(CLOCK_PROCESS_CPUTIME_ID), w0 = clock_s(CLOCK_MONOTONIC);
  int64_t d0 = test_run_delay_ns();
  uint64_t result = deepstack_run(iters);
  double work_delay = (double)(test_run_delay_ns() - d0) / 1e9;
  double work_cpu = clock_s(CLOCK_PROCESS_CPUTIME_ID) - c0;
  double work_wall = clock_s(CLOCK_MONOTONIC) - w0;
  struct rusage ru;
  getrusage(RUSAGE_SELF, &ru);
  printf("{\"work_cpu\": %.6f, \"work_wall\": %.6f, \"work_delay\": %.6f, \"utime\": %.6f, "
         "\"stime\": %.6f, \"result\": %" PRIu64 "}\n",
         work_cpu, work_wall, work_delay, tv(ru.ru_utime), tv(ru.ru_stime), result);
  return 0;
}
