/* kn_util: small helpers every part of the kernel uses. */
#ifndef KN_UTIL_H
#define KN_UTIL_H

#include <time.h>

/* Milliseconds on the monotonic clock: for timeouts and batching, never
 * for what a user reads as a time of day. */
static inline long long kn_now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

#endif
