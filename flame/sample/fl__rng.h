/* SPDX-License-Identifier: BSD-3-Clause */
/* fl__rng: the small random generator of the in-process recorders (the
 * sampler's timer jitter in fl_sampler.c, the allocation recorder's
 * sampling gaps in fl_allocs.c). Internal (fl__).
 *
 * xorshift64* (Marsaglia's xorshift with Vigna's multiplier): a 64-bit
 * state, a few shifts and a multiply, no lock and no call, so it is safe in
 * a signal handler and on an allocator's path. Statistically good enough
 * for jitter and geometric gaps, not for anything cryptographic. */
#ifndef FL__RNG_H
#define FL__RNG_H

#include <stdint.h>

/* The next 64 random bits from *state, which must not be 0 (the
 * generator's one fixed point: seed it with any other value). */
static inline uint64_t fl__rng_next(uint64_t *state) {
  uint64_t x = *state;
  x ^= x >> 12;
  x ^= x << 25;
  x ^= x >> 27;
  *state = x;
  return x * 0x2545F4914F6CDD1DULL;
}

#endif
