/* SPDX-License-Identifier: BSD-3-Clause */
/* allocs_main: the driver of a malloc-heavy loop (allocs_cell.c, a
 * shared object built as a cell is, next to this executable), plain or
 * under cflame's allocation recorder, that prints what it cost as one JSON
 * line on stdout.
 *
 * Built twice by bench/bench_allocs.py with the cell flags (-O2 -g
 * -fno-omit-frame-pointer) and -Wl,-z,now:
 *   plain       this file alone: glibc's malloc, no interposition;
 *   interposed  with -DCFLAME_ALLOCS, flame/sample/fl_allocs_entry.c and
 *               build/lib/libcflame_sampler.a, exporting its symbols
 *               (-rdynamic), as the worker is.
 * Each dlopens allocs_cell.so as the worker dlopens a cell. The interposed
 * one, as the worker does, registers the cell's code with the recorder as
 * compiled with frame pointers (fl_allocs_add_fp_range) and its own code
 * as the base range (fl_allocs_set_base_range), so that sampled
 * allocations are unwound by the frame-pointer walk; with --no-fp it
 * registers nothing and libunwind unwinds them all.
 *
 *   allocs_main [--fill] ITERS        not recording (both binaries)
 *   allocs_main [--fill] [--no-fp] ITERS RATE
 *                                     (interposed) recording at RATE, as the
 *                                     worker records a %%profallocs cell:
 *                                     a shared mapping of a file, init,
 *                                     start just before the loop and stop
 *                                     just after
 *   allocs_main [--fill] [--no-fp] --chunks N ITERS RATE
 *                                     (interposed) N pairs of chunks of
 *                                     ITERS, one recording and one not, the
 *                                     order swapped every pair
 *
 * Printed: the loop's CPU and wall time in ns per iteration (from just
 * before start to just after stop for a recorded loop), the recorder's
 * records, dropped, calls and fp_records (records the frame-pointer walk
 * unwound), and a checksum of the sizes. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <fcntl.h>
#include <libgen.h>
#include <limits.h>
#include <link.h>
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

/* The kernel's table for the run's rate (KN_ALLOCS_RUN_TABLE_SLOTS in
 * kernel/profile/kn_prof.h: room for 2^19 live allocations); the records are sized
 * for the run (about 11 words a record here), so that none is dropped. */
#define KERNEL_LIVE_BLOCKS (1ull << 19)

static int fill;  /* --fill: write each new block whole */
static int no_fp; /* --no-fp: libunwind unwinds every sampled allocation */

typedef uint64_t (*cell_fn)(long iters, int fill);
static cell_fn allocs_cell;

static int64_t now_ns(clockid_t id) {
  struct timespec ts;
  clock_gettime(id, &ts);
  return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static volatile uint64_t sink;

typedef struct timing {
  int64_t cpu_ns, wall_ns;
  uint64_t records, dropped, calls, fp_records;
} timing_t;

/* dlopens allocs_cell.so from this executable's directory. */
static void *load_cell(void) {
  char exe[PATH_MAX], path[PATH_MAX + 32];
  ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
  if (n < 0) {
    perror("allocs_main: /proc/self/exe");
    exit(2);
  }
  exe[n] = '\0';
  snprintf(path, sizeof path, "%s/allocs_cell.so", dirname(exe));
  void *h = dlopen(path, RTLD_NOW | RTLD_GLOBAL);
  if (!h || !(*(void **)&allocs_cell = dlsym(h, "allocs_cell"))) {
    fprintf(stderr, "allocs_main: %s\n", dlerror());
    exit(2);
  }
  return h;
}

#if defined(CFLAME_ALLOCS)
static const fl_allocs_header_t *header;

/* As the worker's note_code_range and note_base_range: the cell's
 * executable segments as frame-pointer ranges, this executable's (the
 * first object) as the base range. */
static int register_ranges(struct dl_phdr_info *info, size_t size, void *data) {
  (void)size;
  bool is_exe = *(int *)data == 0;
  *(int *)data += 1;
  const char *name = info->dlpi_name ? info->dlpi_name : "";
  size_t n = strlen(name);
  bool is_cell = n >= 14 && !strcmp(name + n - 14, "allocs_cell.so");
  for (int i = 0; i < info->dlpi_phnum; i++) {
    const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
    if (ph->p_type != PT_LOAD || !(ph->p_flags & PF_X)) continue;
    uintptr_t lo = info->dlpi_addr + ph->p_vaddr;
    if (is_exe) fl_allocs_set_base_range(lo, lo + ph->p_memsz);
    if (is_cell) fl_allocs_add_fp_range(lo, lo + ph->p_memsz);
  }
  return 0;
}

/* Maps a buffer file shared, as the worker does, and gives it to the
 * recorder. */
static void setup_recorder(long iters, double rate) {
  char path[] = "/tmp/cflame-bench-allocs-XXXXXX";
  size_t words = (size_t)((double)iters * rate * 16) + (1u << 16);
  size_t slots = fl_allocs_table_slots(KERNEL_LIVE_BLOCKS, rate);
  size_t bytes = fl_allocs_buffer_bytes(words, slots);
  int fd = mkstemp(path);
  char err[256];
  if (fd < 0 || ftruncate(fd, (off_t)bytes) < 0) {
    perror("allocation buffer");
    exit(2);
  }
  void *map = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  close(fd);
  unlink(path);
  if (map == MAP_FAILED || fl_allocs_init(map, bytes, slots, err, sizeof err) < 0) {
    fprintf(stderr, "allocs_main: %s\n", map == MAP_FAILED ? "mmap failed" : err);
    exit(2);
  }
  header = map;
  fl_allocs_thread_enter();
  int seen = 0;
  if (!no_fp) dl_iterate_phdr(register_ranges, &seen);
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
  sink += allocs_cell(iters, fill);
#if defined(CFLAME_ALLOCS)
  if (rate > 0) {
    t.records = fl_allocs_stop();
    t.dropped = header->dropped;
    t.calls = header->calls;
    t.fp_records = header->fp_records;
  }
#endif
  t.cpu_ns = now_ns(CLOCK_PROCESS_CPUTIME_ID) - c0;
  t.wall_ns = now_ns(CLOCK_MONOTONIC) - w0;
  return t;
}

int main(int argc, char **argv) {
  for (;;) {
    if (argc >= 2 && !strcmp(argv[1], "--fill"))
      fill = 1;
    else if (argc >= 2 && !strcmp(argv[1], "--no-fp"))
      no_fp = 1;
    else
      break;
    argv++;
    argc--;
  }
  load_cell();
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
          "\"off_wall_ns\": %lld, \"records\": %llu, \"fp_records\": %llu}",
          i ? ", " : "", (long long)on.cpu_ns, (long long)off.cpu_ns, (long long)on.wall_ns,
          (long long)off.wall_ns, (unsigned long long)on.records,
          (unsigned long long)on.fp_records);
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
      "\"records\": %llu, \"dropped\": %llu, \"calls\": %llu, \"fp_records\": %llu, "
      "\"checksum\": %llu}\n",
      iters, rate, (long long)t.cpu_ns, (long long)t.wall_ns, (unsigned long long)t.records,
      (unsigned long long)t.dropped, (unsigned long long)t.calls,
      (unsigned long long)t.fp_records, (unsigned long long)sink);
  return 0;
usage:
  fprintf(stderr,
          "usage: allocs_main [--fill] [--no-fp] ITERS [RATE] | allocs_main [--fill] [--no-fp] "
          "--chunks PAIRS ITERS RATE (RATE, --no-fp and --chunks: the interposed build only)\n");
  return 2;
}
