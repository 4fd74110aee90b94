/* SPDX-License-Identifier: BSD-3-Clause */
/* The test programs' own measure of the time a thread was runnable but
 * waited for a CPU, to hold a wall-clock profile's runnable time to: the
 * second field of /proc/thread-self/schedstat, read as a user would. */
#ifndef TESTS_RUN_DELAY_H
#define TESTS_RUN_DELAY_H

#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <unistd.h>

/* The calling thread's run delay so far, in ns; -1 where it cannot be read. */
static inline int64_t test_run_delay_ns(void) {
  char text[128] = {0};
  int fd = open("/proc/thread-self/schedstat", O_RDONLY);
  ssize_t got = fd >= 0 ? read(fd, text, sizeof text - 1) : -1;
  if (fd >= 0) close(fd);
  unsigned long long ran, delay;
  return got > 0 && sscanf(text, "%llu %llu", &ran, &delay) == 2 ? (int64_t)delay : -1;
}

#endif
