/* kn_util: small helpers every part of the kernel uses. */
#ifndef KN_UTIL_H
#define KN_UTIL_H

#include <stdint.h>
#include <time.h>

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

#endif
