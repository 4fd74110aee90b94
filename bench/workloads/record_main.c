/* SPDX-License-Identifier: BSD-3-Clause */
/* record_main: the deepstack workload as a whole program of its own, for
 * bench/bench_record.py: the program `cflame record` and `perf record -g`
 * each record in turn, dynamically linked, without any profiler of its own.
 *
 *   record_main ITERS [await] [threads=N]
 *
 * With await, it reads a line on stdin before the work (bench_attach.py
 * attaches cflame record --pid in between). With threads=N (N > 1), N
 * threads each do ITERS of the work at once; the times printed are then
 * sums over the threads (each thread's wall time, CPU time and run delay
 * around its own work), so that wall less run delay stays each thread's
 * CPU time plus the time it was stopped.
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
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
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

typedef struct worker {
  long iters;
  uint64_t result;
  double wall, delay;
} worker_t;

static void *work(void *arg) {
  worker_t *w = arg;
  double w0 = clock_s(CLOCK_MONOTONIC);
  int64_t d0 = test_run_delay_ns();
  w->result = deepstack_run(w->iters);
  w->delay = (double)(test_run_delay_ns() - d0) / 1e9;
  w->wall = clock_s(CLOCK_MONOTONIC) - w0;
  return NULL;
}

int main(int argc, char **argv) {
  long iters = argc > 1 ? atol(argv[1]) : 100000;
  int n = 1, wait = 0;
  for (int i = 2; i < argc; i++) {
    if (!strcmp(argv[i], "await"))
      wait = 1;
    else if (!strncmp(argv[i], "threads=", 8))
      n = atoi(argv[i] + 8);
  }
  if (n < 1 || n > 64) return 2;
  char line[64];
  if (wait && !fgets(line, sizeof line, stdin)) return 2;
  worker_t w[64];
  pthread_t th[64];
  double c0 = clock_s(CLOCK_PROCESS_CPUTIME_ID);
  for (int i = 0; i < n; i++) w[i] = (worker_t){.iters = iters};
  if (n == 1) {
    work(&w[0]);
  } else {
    for (int i = 0; i < n; i++) pthread_create(&th[i], NULL, work, &w[i]);
    for (int i = 0; i < n; i++) pthread_join(th[i], NULL);
  }
  double work_cpu = clock_s(CLOCK_PROCESS_CPUTIME_ID) - c0;
  double work_wall = 0, work_delay = 0;
  uint64_t result = 0;
  for (int i = 0; i < n; i++) {
    work_wall += w[i].wall;
    work_delay += w[i].delay;
    result ^= w[i].result;
  }
  struct rusage ru;
  getrusage(RUSAGE_SELF, &ru);
  printf("{\"work_cpu\": %.6f, \"work_wall\": %.6f, \"work_delay\": %.6f, \"utime\": %.6f, "
         "\"stime\": %.6f, \"result\": %" PRIu64 "}\n",
         work_cpu, work_wall, work_delay, tv(ru.ru_utime), tv(ru.ru_stime), result);
  return 0;
}
