/* allocs_main: a malloc-heavy loop, plain or under cflame's allocation
 * recorder, that prints what it cost as one JSON line on stdout.
 *
 * The loop keeps 8 blocks alive: each iteration frees the oldest and
 * mallocs a new one of a size drawn from 16 to 1,024 bytes (a fixed
 * generator, so every run does the same calls), and touches its first
 * byte. That is one malloc and one free per iteration, most of them served
 * by glibc's thread cache: about the cheapest allocation there is, so the
 * recorder's cost per call shows at its largest. With --fill first, each
 * new block is also written whole (memset) and its last byte read: an
 * allocation that is used, as a cell's would be.
 *
 * Built twice by bench/bench_allocs.py with the cell flags (-O2 -g
 * -fno-omit-frame-pointer) and -Wl,-z,now:
 *   plain       this file alone: glibc's malloc, no interposition;
 *   interposed  with -DCFLAME_ALLOCS, kernel/worker/kw_alloc.c and
 *               build/lib/libcflame_sampler.a, exporting its symbols
 *               (-rdynamic), as the worker is.
 *
 *   allocs_main [--fill] ITERS        not recording (both binaries)
 *   allocs_main ITERS RATE            (interposed) recording at RATE, as the
 *                                     worker records a %%profallocs cell:
 *                                     a shared mapping of a file, init,
 *                                     start just before the loop and stop
 *                                     just after
 *   allocs_main --chunks N ITERS RATE (interposed) N pairs of chunks of
 *                                     ITERS, one recording and one not, the
 *                                     order swapped every pair
 *
 * Printed: the loop's CPU and wall time in ns per iteration (from just
 * before start to just after stop for a recorded loop), the recorder's
 * records, dropped and calls, and a checksum of the sizes. */
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#if defined(CFLAME_ALLOCS)
#include "cflame/fl_allocs.h"
#endif

/* The kernel's table (kernel/kn_prof.h); the records are sized for the
 * run (about 11 words a record here), so that none is dropped. */
#define TABLE_SLOTS (1ull << 20)

static int fill; /* --fill: write each new block whole */

static int64_t now_ns(clockid_t id) {
  struct timespec ts;
  clock_gettime(id, &ts);
  return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static volatile uint64_t sink;

__attribute__((noinline)) static uint64_t alloc_loop(long iters) {
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

typedef struct timing {
  int64_t cpu_ns, wall_ns;
  uint64_t records, dropped, calls;
} timing_t;

#if defined(CFLAME_ALLOCS)
static const fl_allocs_header_t *header;

/* Maps a buffer file shared, as the worker does, and gives it to the
 * recorder. */
static void setup_recorder(long iters, double rate) {
  char path[] = "/tmp/cflame-bench-allocs-XXXXXX";
  size_t words = (size_t)((double)iters * rate * 16) + (1u << 16);
  size_t bytes = fl_allocs_buffer_bytes(words, TABLE_SLOTS);
  int fd = mkstemp(path);
  char err[256];
  if (fd < 0 || ftruncate(fd, (off_t)bytes) < 0) {
    perror("allocation buffer");
    exit(2);
  }
  void *map = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  close(fd);
  unlink(path);
  if (map == MAP_FAILED || fl_allocs_init(map, bytes, TABLE_SLOTS, err, sizeof err) < 0) {
    fprintf(stderr, "allocs_main: %s\n", map == MAP_FAILED ? "mmap failed" : err);
    exit(2);
  }
  header = map;
  fl_allocs_thread_enter();
}

static void start(double rate) {
  char err[256];
  if (fl_allocs_start(rate, 1, err, sizeof err) < 0) {
    fprintf(stderr, "allocs_main: %s\n", err);
    exit(2);
  }
}
#endif

/* One loop of iters, recording at rate (0: not). */
static timing_t run(long iters, double rate) {
  timing_t t = {0};
  (void)rate;
  int64_t c0 = now_ns(CLOCK_PROCESS_CPUTIME_ID), w0 = now_ns(CLOCK_MONOTONIC);
#if defined(CFLAME_ALLOCS)
  if (rate > 0) start(rate);
#endif
  sink += alloc_loop(iters);
#if defined(CFLAME_ALLOCS)
  if (rate > 0) {
    t.records = fl_allocs_stop();
    t.dropped = header->dropped;
    t.calls = header->calls;
  }
#endif
  t.cpu_ns = now_ns(CLOCK_PROCESS_CPUTIME_ID) - c0;
  t.wall_ns = now_ns(CLOCK_MONOTONIC) - w0;
  return t;
}

int main(int argc, char **argv) {
  if (argc >= 2 && !strcmp(argv[1], "--fill")) {
    fill = 1;
    argv++;
    argc--;
  }
  if (argc >= 2 && !strcmp(argv[1], "--chunks")) {
#if defined(CFLAME_ALLOCS)
    if (argc != 5) goto usage;
    long pairs = atol(argv[2]), iters = atol(argv[3]);
    double rate = atof(argv[4]);
    setup_recorder(iters, rate);
    run(iters, 0); /* warm up: the loop, glibc's caches, the page faults */
    run(iters, rate);
    printf("{\"chunks\": [");
    for (long i = 0; i < pairs; i++) {
      timing_t on, off;
      if (i % 2 == 0) {
        on = run(iters, rate);
        off = run(iters, 0);
      } else {
        off = run(iters, 0);
        on = run(iters, rate);
      }
      printf(
          "%s{\"on_cpu_ns\": %lld, \"off_cpu_ns\": %lld, \"on_wall_ns\": %lld, "
          "\"off_wall_ns\": %lld, \"records\": %llu}",
          i ? ", " : "", (long long)on.cpu_ns, (long long)off.cpu_ns, (long long)on.wall_ns,
          (long long)off.wall_ns, (unsigned long long)on.records);
    }
    printf("], \"iters\": %ld, \"rate\": %g}\n", iters, rate);
    return 0;
#else
    goto usage;
#endif
  }
  if (argc < 2 || argc > 3) goto usage;
  long iters = atol(argv[1]);
  double rate = argc == 3 ? atof(argv[2]) : 0;
#if defined(CFLAME_ALLOCS)
  setup_recorder(iters, rate);
#else
  if (rate > 0) goto usage;
#endif
  timing_t t = run(iters, rate);
  printf(
      "{\"iters\": %ld, \"rate\": %g, \"cpu_ns\": %lld, \"wall_ns\": %lld, "
      "\"records\": %llu, \"dropped\": %llu, \"calls\": %llu, \"checksum\": %llu}\n",
      iters, rate, (long long)t.cpu_ns, (long long)t.wall_ns, (unsigned long long)t.records,
      (unsigned long long)t.dropped, (unsigned long long)t.calls, (unsigned long long)sink);
  return 0;
usage:
  fprintf(stderr,
          "usage: allocs_main [--fill] ITERS [RATE] | allocs_main [--fill] --chunks PAIRS ITERS "
          "RATE "
          "(RATE and --chunks: the interposed build only)\n");
  return 2;
}
