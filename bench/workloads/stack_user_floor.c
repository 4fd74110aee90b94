/* SPDX-License-Identifier: BSD-3-Clause */
/* What the sampled thread pays when samples are taken in the kernel, as
 * `perf record --call-graph dwarf` takes them: a perf task-clock event whose
 * samples carry the user registers and a copy of the top of the user stack
 * (PERF_SAMPLE_REGS_USER | PERF_SAMPLE_STACK_USER), written into a ring
 * buffer that another thread drains. No signal reaches the sampled thread;
 * the stacks would be unwound afterwards (libdw over the copies).
 *
 *   cc -O2 -fno-omit-frame-pointer -pthread -o stack_user_floor \
 *      bench/workloads/stack_user_floor.c
 *   ./stack_user_floor PERIOD_NS STACK_BYTES
 *
 * Same loop and method as signal_floor.c: 30 off/on pairs, best of each. */
#define _GNU_SOURCE
#include <linux/perf_event.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "floor_loop.h"

static atomic_int done;
static struct perf_event_mmap_page *meta;
static size_t data_size;
static uint64_t drained_bytes, drained_samples;

/* Drains the ring buffer: reads each record's header (as a consumer that
 * copies the stack to a file would, minus the copy) and frees its space. */
static void *drain(void *arg) {
  (void)arg;
  while (!atomic_load(&done)) {
    uint64_t head = __atomic_load_n(&meta->data_head, __ATOMIC_ACQUIRE);
    uint64_t tail = meta->data_tail;
    char *base = (char *)meta + meta->data_offset;
    while (tail < head) {
      struct perf_event_header *h = (void *)(base + (tail % data_size));
      if (h->type == PERF_RECORD_SAMPLE) drained_samples++;
      drained_bytes += h->size;
      tail += h->size;
    }
    __atomic_store_n(&meta->data_tail, tail, __ATOMIC_RELEASE);
    usleep(1000);
  }
  return NULL;
}

int main(int argc, char **argv) {
  if (argc != 3) {
    fprintf(stderr, "usage: %s PERIOD_NS STACK_BYTES\n", argv[0]);
    return 2;
  }
  struct perf_event_attr a;
  floor_task_clock_attr(&a, (unsigned long)atol(argv[1]));
  a.sample_type = PERF_SAMPLE_IP | PERF_SAMPLE_TID | PERF_SAMPLE_TIME | PERF_SAMPLE_REGS_USER |
                  PERF_SAMPLE_STACK_USER;
  a.sample_regs_user = (1ull << 6) | (1ull << 7) | (1ull << 8); /* bp, sp, ip on x86-64 */
  a.sample_stack_user = (unsigned)atoi(argv[2]);
  a.exclude_callchain_kernel = 1;
  int fd = floor_open(&a);
  if (fd < 0) return 1;
  size_t page = (size_t)sysconf(_SC_PAGESIZE), pages = 1024; /* 4 MiB of data */
  data_size = pages * page;
  meta = mmap(NULL, (pages + 1) * page, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  if (meta == MAP_FAILED) {
    perror("mmap");
    return 1;
  }
  pthread_t reader;
  pthread_create(&reader, NULL, drain, NULL);
  double best_on, best_off;
  double sink = floor_measure(fd, &best_off, &best_on);
  usleep(20000);
  atomic_store(&done, 1);
  pthread_join(reader, NULL);
  printf(
      "period %s ns, stack %s bytes: off %.4f s, on %.4f s, overhead %+.1f%% of the sampled "
      "thread; %llu samples drained (%.0f bytes each) (%g)\n",
      argv[1], argv[2], best_off, best_on, 100 * (best_on / best_off - 1),
      (unsigned long long)drained_samples,
      drained_samples ? (double)drained_bytes / (double)drained_samples : 0.0, sink);
  return 0;
}
