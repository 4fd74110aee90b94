/* SPDX-License-Identifier: BSD-3-Clause */
/* A program built against an installed cflame sampler: samples its own
 * CPU work into a buffer and reads the records back, printing
 * "samples: N" (N > 0 when sampling works). */
#define _POSIX_C_SOURCE 200809L /* clock_gettime under -std=c11 */
#include <cflame/fl_sampler.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static volatile uint64_t sink;

/* About 100 ms of CPU time. */
static void burn(void *arg) {
  (void)arg;
  struct timespec t0, t;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t0);
  do {
    for (int i = 0; i < 100000; i++) sink = sink * 6364136223846793005u + 1;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
  } while ((t.tv_sec - t0.tv_sec) * 1000000000L + (t.tv_nsec - t0.tv_nsec) < 100000000L);
}

int main(void) {
  size_t bytes = fl_sampler_buffer_bytes(1 << 16);
  void *buf = aligned_alloc(64, bytes);
  char err[256];
  if (!buf || fl_sampler_init(buf, bytes, err, sizeof err) < 0 ||
      fl_sampler_start(1000000, 1, err, sizeof err) < 0) {
    fprintf(stderr, "sampler: %s\n", buf ? err : "out of memory");
    return 1;
  }
  fl_sampler_call(burn, NULL);
  fl_sampler_stop();
  size_t pos = 0, n = 0;
  fl_sampler_record_t rec;
  int rc;
  while ((rc = fl_sampler_next(buf, bytes, &pos, &rec)) == 1) n++;
  if (rc < 0) {
    fprintf(stderr, "sampler: the buffer does not read back\n");
    return 1;
  }
  printf("samples: %zu\n", n);
  return n > 0 ? 0 : 1;
}
