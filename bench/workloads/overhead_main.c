/* overhead_main: runs the deepstack workload, plain or under cflame's
 * sampler, and prints what it cost as one JSON line on stdout.
 *
 *   overhead_main ITERS                 plain run (also the run perf records)
 *   overhead_main ITERS INTERVAL_NS     under fl_sampler, as cflame's worker
 *                                       runs a %%profview cell
 *
 *   overhead_main --chunks N ITERS INTERVAL_NS
 *   overhead_main --chunks N ITERS --perf CTL_FIFO ACK_FIFO
 *                                       N pairs of chunks of ITERS each, one
 *                                       with the profiler on and one with it
 *                                       off, the order swapped every pair
 *
 * The sampled run does what the worker does (kernel/worker/kw_main.c): the
 * sample buffer is a file mapped shared (created here, in $TMPDIR),
 * fl_sampler_init is given the mapping, fl_sampler_reset and
 * fl_sampler_start come just before the work and fl_sampler_stop just
 * after. Linked with build/lib/libcflame_sampler.a and -Wl,-z,now, as the
 * worker is.
 *
 * Printed: the process's own CPU time at exit (getrusage RUSAGE_SELF: user
 * and system, so a profiler's work in this process, in its signal handler
 * or in the kernel's interrupt on its behalf, counts, and a separate
 * process such as perf's does not), the CPU and wall time of the work
 * itself (from just before start to just after stop), and the sampler's
 * samples, dropped samples and timer source.
 *
 * With --chunks, the profiler is switched on and off around chunks of the
 * work inside one process, so that on and off run a fraction of a second
 * apart and a shared machine's slow swings of speed fall on both alike.
 * cflame's chunks are timed with fl_sampler_reset/start/stop inside (a
 * cell's run). perf's (perf record -D -1 --control fifo:CTL,ACK) are timed
 * after perf acknowledged "enable" and before "disable" is sent. Printed
 * per chunk: CPU and wall time, on and off, and cflame's samples. */
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include "cflame/fl_sampler.h"

uint64_t deepstack_run(long iters);

static int64_t now_ns(clockid_t id) {
  struct timespec ts;
  clock_gettime(id, &ts);
  return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static double tv(struct timeval t) { return (double)t.tv_sec + (double)t.tv_usec / 1e6; }

static int ctl_fd = -1, ack_fd = -1;

/* Sends cmd to perf record's control fifo and waits for its "ack". */
static void perf_ctl(const char *cmd) {
  char buf[16];
  if (write(ctl_fd, cmd, strlen(cmd)) < 0 || read(ack_fd, buf, sizeof buf) <= 0) {
    perror("perf control fifo");
    exit(1);
  }
}

static void *map_buffer(char *path, size_t path_size, size_t *bytes) {
  /* The kernel's default buffer: 10^6 words (kn_prof.h). */
  *bytes = fl_sampler_buffer_bytes(1000000);
  const char *tmp = getenv("TMPDIR");
  snprintf(path, path_size, "%s/cflame-bench-samples-XXXXXX", tmp && *tmp ? tmp : "/tmp");
  int fd = mkstemp(path);
  if (fd < 0 || ftruncate(fd, (off_t)*bytes) < 0) {
    perror("sample file");
    exit(1);
  }
  void *map = mmap(NULL, *bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  close(fd);
  if (map == MAP_FAILED) {
    perror("mmap");
    exit(1);
  }
  char err[256];
  if (fl_sampler_init(map, *bytes, err, sizeof err) < 0) {
    fprintf(stderr, "fl_sampler_init: %s\n", err);
    exit(1);
  }
  return map;
}

static void print_array(const char *name, const double *v, int n) {
  printf(", \"%s\": [", name);
  for (int i = 0; i < n; i++) printf("%s%.9f", i ? ", " : "", v[i]);
  printf("]");
}

static int run_chunks(int argc, char **argv) {
  if (argc < 5) {
    fprintf(stderr, "usage: %s --chunks N ITERS (INTERVAL_NS | --perf CTL ACK)\n", argv[0]);
    return 2;
  }
  int n = atoi(argv[2]);
  long iters = atol(argv[3]);
  bool perf = !strcmp(argv[4], "--perf");
  uint64_t interval = perf ? 0 : strtoull(argv[4], NULL, 10);
  char path[4096] = "", err[256];
  size_t bytes = 0;
  void *map = NULL;
  if (perf) {
    if (argc < 7 || (ctl_fd = open(argv[5], O_WRONLY)) < 0 || (ack_fd = open(argv[6], O_RDONLY)) < 0) {
      perror("perf control fifos");
      return 1;
    }
  } else {
    map = map_buffer(path, sizeof path, &bytes);
  }
  double *on_cpu = calloc((size_t)n, sizeof(double)), *off_cpu = calloc((size_t)n, sizeof(double));
  double *on_wall = calloc((size_t)n, sizeof(double)), *off_wall = calloc((size_t)n, sizeof(double));
  double *on_samples = calloc((size_t)n, sizeof(double));
  uint64_t result = 0;
  for (int i = 0; i < n; i++) {
    for (int half = 0; half < 2; half++) {
      bool on = (half == 0) == (i % 2 == 0);
      if (on && perf) perf_ctl("enable\n");
      int64_t w0 = now_ns(CLOCK_MONOTONIC), c0 = now_ns(CLOCK_PROCESS_CPUTIME_ID);
      if (on && !perf) {
        fl_sampler_reset();
        if (fl_sampler_start(interval, 1, err, sizeof err) < 0) {
          fprintf(stderr, "fl_sampler_start: %s\n", err);
          return 1;
        }
      }
      result += deepstack_run(iters);
      uint64_t samples = on && !perf ? fl_sampler_stop() : 0;
      int64_t c1 = now_ns(CLOCK_PROCESS_CPUTIME_ID), w1 = now_ns(CLOCK_MONOTONIC);
      if (on && perf) perf_ctl("disable\n");
      (on ? on_cpu : off_cpu)[i] = (double)(c1 - c0) / 1e9;
      (on ? on_wall : off_wall)[i] = (double)(w1 - w0) / 1e9;
      if (on) on_samples[i] = (double)samples;
    }
  }
  const fl_sampler_header_t *h = map;
  printf("{\"chunks\": %d, \"iters\": %ld, \"interval_ns\": %llu, \"perf\": %s, "
         "\"result\": \"%016llx\", \"dropped\": %llu",
         n, iters, (unsigned long long)interval, perf ? "true" : "false",
         (unsigned long long)result, (unsigned long long)(h ? h->dropped : 0));
  print_array("on_cpu", on_cpu, n);
  print_array("off_cpu", off_cpu, n);
  print_array("on_wall", on_wall, n);
  print_array("off_wall", off_wall, n);
  print_array("on_samples", on_samples, n);
  printf("}\n");
  if (map) munmap(map, bytes);
  if (*path) unlink(path);
  return 0;
}

int main(int argc, char **argv) {
  if (argc > 1 && !strcmp(argv[1], "--chunks")) return run_chunks(argc, argv);
  if (argc < 2) {
    fprintf(stderr, "usage: %s ITERS [INTERVAL_NS]\n", argv[0]);
    return 2;
  }
  long iters = atol(argv[1]);
  uint64_t interval = argc > 2 ? strtoull(argv[2], NULL, 10) : 0;
  char err[256], path[4096] = "";
  void *map = NULL;
  size_t bytes = 0;

  if (interval) map = map_buffer(path, sizeof path, &bytes);

  uint64_t samples = 0;
  int64_t w0 = now_ns(CLOCK_MONOTONIC), c0 = now_ns(CLOCK_PROCESS_CPUTIME_ID);
  if (interval) {
    fl_sampler_reset();
    if (fl_sampler_start(interval, 1, err, sizeof err) < 0) {
      fprintf(stderr, "fl_sampler_start: %s\n", err);
      return 1;
    }
  }
  uint64_t result = deepstack_run(iters);
  if (interval) samples = fl_sampler_stop();
  int64_t c1 = now_ns(CLOCK_PROCESS_CPUTIME_ID), w1 = now_ns(CLOCK_MONOTONIC);

  const fl_sampler_header_t *h = map;
  const char *source = !interval ? "none"
                       : h->source == FL_SAMPLER_SOURCE_CPU_TIMER ? "cpu-timer"
                                                                  : "perf-task-clock";
  uint64_t dropped = interval ? h->dropped : 0, used = interval ? h->used_words : 0;
  if (map) munmap(map, bytes);
  if (*path) unlink(path);

  struct rusage ru;
  getrusage(RUSAGE_SELF, &ru);
  printf("{\"iters\": %ld, \"interval_ns\": %llu, \"result\": \"%016llx\", "
         "\"utime\": %.6f, \"stime\": %.6f, \"work_cpu\": %.9f, \"work_wall\": %.9f, "
         "\"samples\": %llu, \"dropped\": %llu, \"used_words\": %llu, \"source\": \"%s\"}\n",
         iters, (unsigned long long)interval, (unsigned long long)result, tv(ru.ru_utime),
         tv(ru.ru_stime), (double)(c1 - c0) / 1e9, (double)(w1 - w0) / 1e9,
         (unsigned long long)samples, (unsigned long long)dropped, (unsigned long long)used,
         source);
  return 0;
}
