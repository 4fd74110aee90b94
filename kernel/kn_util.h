/* kn_util: small helpers every part of the kernel uses. */
#ifndef KN_UTIL_H
#define KN_UTIL_H

#include <fcntl.h>
#include <stdint.h>
#include <time.h>
#include <unistd.h>

/* Clock id (CLOCK_MONOTONIC, CLOCK_PROCESS_CPUTIME_ID, ...) in
 * nanoseconds; 0 when it cannot be read. */
static inline int64_t kn_clock_ns(clockid_t id) {
  struct timespec ts;
  if (clock_gettime(id, &ts) < 0) return 0;
  return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* Milliseconds on the monotonic clock: for timeouts and batching, never
 * for what a user reads as a time of day. */
static inline long long kn_now_ms(void) { return kn_clock_ns(CLOCK_MONOTONIC) / 1000000; }

/* fd, moved (close-on-exec) to a number above `above` when it is not, so
 * that placing a child's fixed descriptors never overwrites one still to
 * be placed. Returns the descriptor, or -1 (errno) with fd closed. */
static inline int kn_fd_above(int fd, int above) {
  if (fd < 0 || fd > above) return fd;
  int moved = fcntl(fd, F_DUPFD_CLOEXEC, above + 1);
  close(fd);
  return moved;
}

#endif
