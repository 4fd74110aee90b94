/* fl__strset: interned strings for the flame library's modules, and the
 * hash helpers they share. Equal strings intern to equal pointers, so
 * frames can be compared and hashed by pointer. Internal (fl__). */
#ifndef FL__STRSET_H
#define FL__STRSET_H

#include <stddef.h>
#include <stdint.h>

typedef struct fl__strset {
  char **slots; /* open addressing; capacity mask + 1 (a power of two) */
  size_t mask;
  size_t len;
} fl__strset_t;

/* Prepares an empty set with room for capacity (a power of two) slots.
 * Returns 0, or -1 when out of memory. */
int fl__strset_init(fl__strset_t *set, size_t capacity);

/* The interned copy of s: NULL for NULL, and NULL when out of memory. */
const char *fl__strset_intern(fl__strset_t *set, const char *s);

void fl__strset_free(fl__strset_t *set);

/* murmur3's 64-bit finalizer. */
static inline uint64_t fl__mix64(uint64_t h) {
  h ^= h >> 33;
  h *= 0xff51afd7ed558ccdu;
  h ^= h >> 33;
  h *= 0xc4ceb9fe1a85ec53u;
  h ^= h >> 33;
  return h;
}

/* FNV-1a over a NUL-terminated string. */
static inline uint64_t fl__hash_string(const char *s) {
  uint64_t h = 0xcbf29ce484222325u;
  for (; *s; s++) {
    h ^= (unsigned char)*s;
    h *= 0x100000001b3u;
  }
  return h;
}

#endif
