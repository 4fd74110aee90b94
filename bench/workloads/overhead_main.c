/* SPDX-License-Identifier: BSD-3-Clause */
/* overhead_main: runs the deepstack workload, plain or under cflame's
 * sampler, and prints what it cost as one JSON line on stdout.
 *
 *   overhead_main ITERS                 plain run (also the run perf records)
 *   overhead_main ITERS INTERVAL_NS     under fl_sampler, as cflame's worker
 *                                       runs a %%profview cell
 *
 *   overhead_main --chunks N ITERS [--cflame INTERVAL_NS] [--perf CTL ACK]
 *                 [--parts]
 *                                       N rounds of chunks of ITERS each:
 *                                       one with no profiler, one under
 *                                       cflame's sampler, one under perf
 *                                       (run inside perf record --control
 *                                       fifo:CTL,ACK), in an order drawn
 *                                       at random for each round;
 *                                       with --parts, also one under the
 *                                       sampler recording the interrupted
 *                                       instruction alone (no unwinding)
 *                                       and one taking its signals and
 *                                       recording nothing
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
 * With --chunks, the profilers are switched on and off around chunks of
 * the work inside one process, so that the chunks of a round run a
 * fraction of a second apart and a shared machine's slow swings of speed
 * fall on all alike. cflame's chunks are timed with fl_sampler_reset/
 * start/stop inside (a cell's run). perf's (perf record -D -1 --control
 * fifo:CTL,ACK) are timed after perf acknowledged "enable" and before
 * "disable" is sent. Printed per variant and round: CPU and wall time; and
 * cflame's samples. */
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
#include "fl__rng.h" /* flame/sample/: the sampler's own generator */

uint64_t deepstack_run(long iters);

/* The work, called as the worker calls a cell: through fl_sampler_call,
 * the root of the sampled stacks (plain or profiled alike). */
typedef struct work {
  long iters;
  uint64_t result;
} work_t;

static void work_call(void *arg) {
  work_t *w = arg;
  w->result = deepstack_run(w->iters);
}

static uint64_t work(long iters) {
  work_t w = {iters, 0};
  fl_sampler_call(work_call, &w);
  return w.result;
}

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

/* The variants a switching process runs, each round: the work
 * with no profiler, under cflame's sampler, under perf, and (--parts) under
 * the sampler in its two measuring modes. */
enum { OFF, CFLAME, PERF, LEAF, SIGNAL, N_VARIANTS };
static const char *const variant_names[N_VARIANTS] = {"off", "cflame", "perf", "cflame_leaf",
                                                      "cflame_signal"};
/* The sampler's mode for each variant that runs it. */
static const fl_sampler_mode_t variant_modes[N_VARIANTS] = {
    [CFLAME] = FL_SAMPLER_STACKS, [LEAF] = FL_SAMPLER_LEAF_ONLY, [SIGNAL] = FL_SAMPLER_SIGNAL_ONLY};

static int run_chunks(int argc, char **argv) {
  const char *usage =
      "usage: %s --chunks N ITERS [--cflame INTERVAL_NS] [--perf CTL ACK] [--parts]\n";
  if (argc < 4) {
    fprintf(stderr, usage, argv[0]);
    return 2;
  }
  int n = atoi(argv[2]);
  long iters = atol(argv[3]);
  uint64_t interval = 0;
  bool used[N_VARIANTS] = {true};
  for (int a = 4; a < argc; a++) {
    if (!strcmp(argv[a], "--cflame") && a + 1 < argc) {
      interval = strtoull(argv[++a], NULL, 10);
      used[CFLAME] = true;
    } else if (!strcmp(argv[a], "--perf") && a + 2 < argc) {
      if ((ctl_fd = open(argv[a + 1], O_WRONLY)) < 0 ||
          (ack_fd = open(argv[a + 2], O_RDONLY)) < 0) {
        perror("perf control fifos");
        return 1;
      }
      used[PERF] = true;
      a += 2;
    } else if (!strcmp(argv[a], "--parts")) {
      used[LEAF] = used[SIGNAL] = true;
    } else {
      fprintf(stderr, usage, argv[0]);
      return 2;
    }
  }
  if (n < 1 || iters < 1 || (!used[CFLAME] && !used[PERF]) || (used[LEAF] && !used[CFLAME])) {
    fprintf(stderr, usage, argv[0]);
    return 2;
  }
  int order[N_VARIANTS], k = 0;
  for (int v = 0; v < N_VARIANTS; v++)
    if (used[v]) order[k++] = v;
  char path[4096] = "", err[256];
  size_t bytes = 0;
  void *map = used[CFLAME] ? map_buffer(path, sizeof path, &bytes) : NULL;
  bool sampled[N_VARIANTS] = {[CFLAME] = true, [LEAF] = true, [SIGNAL] = true};
  double *cpu[N_VARIANTS], *wall[N_VARIANTS];
  for (int v = 0; v < N_VARIANTS; v++) {
    cpu[v] = calloc((size_t)n, sizeof(double));
    wall[v] = calloc((size_t)n, sizeof(double));
  }
  double *samples[N_VARIANTS];
  for (int v = 0; v < N_VARIANTS; v++) samples[v] = calloc((size_t)n, sizeof(double));
  uint64_t result = 0;
  /* Each round runs the variants in an order of its own, drawn at random
   * (Fisher-Yates, fl__rng seeded with the process id): what a chunk
   * leaves behind (perf's recorder draining its buffer, the sampler's
   * stop) then falls on every other variant alike. A rotation would not
   * do: it keeps the cyclic order, so each variant would always follow
   * the same one. */
  uint64_t rng = 0x9e3779b97f4a7c15ull ^ (uint64_t)getpid();
  for (int i = 0; i < n; i++) {
    for (int j = k - 1; j > 0; j--) {
      int r = (int)(fl__rng_next(&rng) % (uint64_t)(j + 1)), t = order[j];
      order[j] = order[r];
      order[r] = t;
    }
    for (int j = 0; j < k; j++) {
      int v = order[j];
      if (v == PERF) perf_ctl("enable\n");
      int64_t w0 = now_ns(CLOCK_MONOTONIC), c0 = now_ns(CLOCK_PROCESS_CPUTIME_ID);
      if (sampled[v]) {
        fl_sampler_set_mode(variant_modes[v]);
        fl_sampler_reset();
        if (fl_sampler_start(interval, 1, err, sizeof err) < 0) {
          fprintf(stderr, "fl_sampler_start: %s\n", err);
          return 1;
        }
      }
      result += work(iters);
      if (sampled[v]) samples[v][i] = (double)fl_sampler_stop();
      int64_t c1 = now_ns(CLOCK_PROCESS_CPUTIME_ID), w1 = now_ns(CLOCK_MONOTONIC);
      if (v == PERF) perf_ctl("disable\n");
      cpu[v][i] = (double)(c1 - c0) / 1e9;
      wall[v][i] = (double)(w1 - w0) / 1e9;
    }
  }
  const fl_sampler_header_t *h = map;
  printf("{\"chunks\": %d, \"iters\": %ld, \"interval_ns\": %llu, \"result\": \"%016llx\", "
         "\"dropped\": %llu",
         n, iters, (unsigned long long)interval, (unsigned long long)result,
         (unsigned long long)(h ? h->dropped : 0));
  for (int v = 0; v < N_VARIANTS; v++) {
    if (!used[v]) continue;
    char name[32];
    snprintf(name, sizeof name, "%s_cpu", variant_names[v]);
    print_array(name, cpu[v], n);
    snprintf(name, sizeof name, "%s_wall", variant_names[v]);
    print_array(name, wall[v], n);
  }
  for (int v = 0; v < N_VARIANTS; v++) {
    if (!used[v] || !sampled[v]) continue;
    char name[32];
    snprintf(name, sizeof name, "%s_samples", variant_names[v]);
    print_array(name, samples[v], n);
  }
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
  uint64_t result = work(iters);
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
