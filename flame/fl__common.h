/* SPDX-License-Identifier: BSD-3-Clause */
/* fl__common: what the flame library's files share, kept in one place as
 * libuv keeps its own in uv-common.h. Internal (fl__): nothing here is part
 * of the installed interface.
 *
 *   memory   the out-of-memory policy and the allocators that apply it.
 *   hashes   the hash functions the tables use.
 *   index    the one hash table: an open-addressing map from a caller's
 *            hash to the index of an item the caller keeps in its own
 *            array. Every table of the library is a thin user of it.
 *   strset   interned strings, on an index.
 *   buf      a growing string.
 *   clock    the one clock of the kernel, record/ and flame/: any clock
 *            in nanoseconds, monotonic milliseconds; and the file name
 *            of a path.
 *
 * Out of memory. Every allocation of the flame library, the kernel and
 * `cflame record` goes through fl__xmalloc, fl__xcalloc, fl__xrealloc,
 * fl__xstrdup, fl__xasprintf, fl__grow or a buffer: sizes are a count and
 * an element size, whose product is checked (a product that overflows is
 * out of memory too, never a short block). When memory runs out they call
 * fl__oom, which calls the handler the program set (fl_set_oom_handler,
 * <cflame/fl_alloc.h>) or by default prints "cflame: out of memory" with
 * the size asked for to stderr and aborts, as redis's zmalloc does. What
 * other libraries allocate for us (jansson's values, libc's strings) goes
 * the same way through fl__nonnull. So no function returns NULL or an
 * error because memory ran out, and none has a half-built result to
 * unwind: a profile that silently lost samples, or a flame graph with
 * frames missing, would mislead, and the programs that use the library
 * (the kernel, the cflame command) have nothing better to do on Linux,
 * where allocations overcommit and failures are rare, than to stop with a
 * clear message. The errors the library does return (err, fl_io_error_t)
 * are about its input: a bad filter, a line that does not parse, profiles
 * that cannot be compared, and a profile that asks for more memory than
 * its budget allows (fl_budget.h): what input decides the size of is
 * charged to the reading's or the drawing's budget before it is
 * allocated, so that only the library's own allocations reach fl__oom.
 *
 * The in-process recorders (fl_sampler.c, fl_allocs.c) allocate nothing:
 * they run in signal handlers and inside the interposed allocator, on
 * memory mapped at start. Of this header they use only what is
 * async-signal-safe and allocates nothing: the inline hashes and
 * fl__clock_ns. */
#ifndef FL__COMMON_H
#define FL__COMMON_H

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

/* ---- memory ---- */

/* Memory ran out asking for bytes (0: a size that does not fit in a
 * size_t): calls the program's handler (fl_set_oom_handler), then, or
 * without one, prints "cflame: out of memory (N bytes)" (without the size
 * when bytes is 0) and aborts. */
__attribute__((noreturn)) void fl__oom(size_t bytes);

/* n elements of size bytes each; never NULL (a zero size gives a unique
 * pointer). fl__xcalloc's memory is zeroed. */
void *fl__xmalloc(size_t n, size_t size);
void *fl__xcalloc(size_t n, size_t size);
/* Resizes p (NULL: allocates) to n elements of size bytes each. */
void *fl__xrealloc(void *p, size_t n, size_t size);
char *fl__xstrdup(const char *s);
/* The first n bytes of s and a NUL. */
char *fl__xstrndup(const char *s, size_t n);
/* A new string, printed as by asprintf. */
char *fl__xasprintf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* p, or out of memory when p is NULL: for what another library allocated
 * (json_pack, json_dumps, ...) from input the flame library made valid. */
void *fl__nonnull(void *p);

/* Makes room in array (of *cap elements of size bytes) for at least need
 * elements, doubling its capacity from 16, and returns the array, which
 * may have moved: a = fl__grow(a, &cap, n + 1, sizeof *a). */
void *fl__grow(void *array, size_t *cap, size_t need, size_t size);

/* fl__grow of an array whose size input decides, its new capacity charged
 * to budget first (fl_budget.h; defined in fl_budget.c, the flame library
 * only): the array (maybe moved), or NULL when budget refuses, and then
 * the array is as it was (the caller still frees it). */
struct fl_budget;
void *fl__grow_charged(struct fl_budget *budget, void *array, size_t *cap, size_t need,
                       size_t size);

/* The number of elements of array a. A pointer is a compile error (the
 * second sizeof's array would have a negative size), where sizeof p /
 * sizeof *p would quietly give 1 or 0. */
#define FL__ARRAY_SIZE(a)       \
  (sizeof(a) / sizeof((a)[0]) + \
   0 * sizeof(char[1 - 2 * __builtin_types_compatible_p(__typeof__(a), __typeof__(&(a)[0]))]))

/* ---- hashes ---- */

/* murmur3's 64-bit finalizer: every bit of h moves every bit of the
 * result. */
static inline uint64_t fl__mix64(uint64_t h) {
  h ^= h >> 33;
  h *= 0xff51afd7ed558ccdu;
  h ^= h >> 33;
  h *= 0xc4ceb9fe1a85ec53u;
  h ^= h >> 33;
  return h;
}

/* A well-mixed hash of n bytes, eight at a time: for the tables. */
static inline uint64_t fl__hash_bytes(const void *data, size_t n) {
  const char *s = data;
  uint64_t h = 0x9e3779b97f4a7c15u ^ n, w;
  for (; n >= 8; s += 8, n -= 8) {
    memcpy(&w, s, 8);
    h = (h ^ w) * 0xff51afd7ed558ccdu;
    h ^= h >> 29;
  }
  w = 0;
  if (n) memcpy(&w, s, n);
  return fl__mix64(h ^ w);
}

/* FNV-1a over a NUL-terminated string, unmixed: the frames' colours are
 * derived from it (fl__node_color), so it must never change. Tables use
 * fl__hash_bytes. */
static inline uint64_t fl__fnv1a(const char *s) {
  uint64_t h = 0xcbf29ce484222325u;
  for (; *s; s++) h = (h ^ (unsigned char)*s) * 0x100000001b3u;
  return h;
}

/* ---- index ----
 *
 * The items live in the caller's array, numbered 0, 1, 2, ...; the index
 * maps an item's hash to its number. To look a key up, the caller hashes
 * it, walks the candidates (the items whose hash agrees) and compares each
 * with its own equality; to add, it appends the item to its array and
 * gives the index its hash and number:
 *
 *   fl__probe_t pr;
 *   for (uint32_t i = fl__index_find(&ix, h, &pr); i != FL__NONE; i = fl__index_next(&ix, &pr))
 *     if (equal(&items[i], key)) return i;
 *   items[n] = *key;
 *   fl__index_add(&ix, h, n);
 *
 * Linear probing, at most half full (it doubles before), 32 bits of each
 * hash kept in its slot: they place it, so the caller's hash must be well
 * mixed in its low 32 bits (fl__mix64, fl__hash_bytes), and they let a
 * probe skip most items without reading them. The index never needs to
 * call back into the caller: growing moves slots by their kept hash.
 * A zeroed fl__index_t is an empty index. */

#define FL__NONE UINT32_MAX

typedef struct fl__index_slot {
  uint32_t hash; /* the low 32 bits of the item's hash */
  uint32_t item; /* its number + 1; 0: the slot is empty */
} fl__index_slot_t;

typedef struct fl__index {
  fl__index_slot_t *slots; /* mask + 1 of them (a power of two), or NULL */
  size_t mask;
  size_t n; /* items added */
} fl__index_t;

/* Where a lookup is: between fl__index_find and fl__index_next. */
typedef struct fl__probe {
  size_t at;
  uint32_t hash;
} fl__probe_t;

/* An empty index with room for expected items before it first grows. */
void fl__index_init(fl__index_t *ix, size_t expected);
void fl__index_free(fl__index_t *ix);
/* Forgets every item; keeps the room. */
void fl__index_clear(fl__index_t *ix);
/* Adds item with hash. The caller adds a key once (look it up first);
 * item must be below FL__NONE. */
void fl__index_add(fl__index_t *ix, uint64_t hash, uint32_t item);

/* The next candidate of the lookup pr, or FL__NONE when there are no more. */
static inline uint32_t fl__index_next(const fl__index_t *ix, fl__probe_t *pr) {
  for (;;) {
    const fl__index_slot_t *slot = &ix->slots[pr->at];
    if (!slot->item) return FL__NONE;
    pr->at = (pr->at + 1) & ix->mask;
    if (slot->hash == pr->hash) return slot->item - 1;
  }
}

/* Starts a lookup of hash: its first candidate, or FL__NONE. */
static inline uint32_t fl__index_find(const fl__index_t *ix, uint64_t hash, fl__probe_t *pr) {
  pr->hash = (uint32_t)hash;
  pr->at = pr->hash & ix->mask;
  return ix->slots ? fl__index_next(ix, pr) : FL__NONE;
}

/* ---- strset ----
 *
 * Interned strings: equal strings intern to one pointer, so that frames
 * can be compared and hashed by their strings' pointers. A zeroed
 * fl__strset_t is an empty set. */

typedef struct fl__strset {
  char **strs; /* n, in order of interning; each owned by the set */
  size_t n, cap;
  fl__index_t index;
} fl__strset_t;

/* The interned copy of s (owned by the set); NULL for NULL. */
const char *fl__strset_intern(fl__strset_t *set, const char *s);
/* s's number in the set (strs[number] is its copy), interning it first if
 * it is new: numbers count from 0 in order of interning. s is not NULL. */
uint32_t fl__strset_add(fl__strset_t *set, const char *s);
void fl__strset_free(fl__strset_t *set);

/* ---- buf ----
 *
 * A growing string. A zeroed fl__buf_t is empty; after any add, data is
 * NUL-terminated at len. Setting len back (to 0, or to a length the
 * string had) cuts it; the next add terminates it again. */

typedef struct fl__buf {
  char *data;
  size_t len, cap;
} fl__buf_t;

#define FL__BUF_INIT \
  { NULL, 0, 0 }

void fl__buf_add(fl__buf_t *b, const char *s, size_t n);
void fl__buf_puts(fl__buf_t *b, const char *s);
void fl__buf_putc(fl__buf_t *b, char c);
void fl__buf_printf(fl__buf_t *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void fl__buf_vprintf(fl__buf_t *b, const char *fmt, va_list ap)
    __attribute__((format(printf, 2, 0)));
/* The message fmt makes into err, err_size bytes at most (the library's
 * error buffers); nothing when err is NULL or err_size 0. */
void fl__errf(char *err, size_t err_size, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* v in decimal, without printf: the data formats write millions. */
void fl__buf_u64(fl__buf_t *b, uint64_t v);
/* The string, now the caller's (free it; never NULL, "" for an empty
 * buffer). The buffer is left empty. */
char *fl__buf_take(fl__buf_t *b);
/* Empties the buffer, keeping its memory ("" once it has any). */
void fl__buf_clear(fl__buf_t *b);
/* Frees the string and leaves the buffer empty. */
void fl__buf_free(fl__buf_t *b);

/* ---- clock and paths ---- */

/* The greatest common divisor of a and b (gcd(a, 0) = a). */
static inline uint64_t fl__gcd(uint64_t a, uint64_t b) {
  while (b) {
    uint64_t r = a % b;
    a = b;
    b = r;
  }
  return a;
}

/* Clock id in nanoseconds: CLOCK_MONOTONIC for elapsed time, the CPU
 * time of the process (CLOCK_PROCESS_CPUTIME_ID) or of a thread
 * (CLOCK_THREAD_CPUTIME_ID, a thread's CPU clock); 0 when it cannot be
 * read. Async-signal-safe, as clock_gettime is. */
static inline int64_t fl__clock_ns(clockid_t id) {
  struct timespec ts;
  if (clock_gettime(id, &ts) < 0) return 0;
  return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* Milliseconds on the monotonic clock: for timeouts and deadlines, never
 * for what a user reads as a time of day. */
static inline int64_t fl__now_ms(void) {
  return fl__clock_ns(CLOCK_MONOTONIC) / 1000000;
}

/* Where the file name of path[0, n) starts: after its last '/' (0 when it
 * has none). */
static inline size_t fl__path_base(const char *path, size_t n) {
  size_t b = n;
  while (b > 0 && path[b - 1] != '/') b--;
  return b;
}

/* Reads at most size - 1 bytes of the file at path into buf (size > 0),
 * NUL-terminated: a small /proc file's text, whole when it fits, as one
 * read gives it. Returns how many bytes, or -1 with errno. Allocates
 * nothing and takes no lock, so the sampler's paths may call it. */
static inline ssize_t fl__read_small(const char *path, char *buf, size_t size) {
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return -1;
  ssize_t got = read(fd, buf, size - 1);
  int e = errno;
  close(fd);
  buf[got > 0 ? got : 0] = '\0';
  errno = e;
  return got;
}

#endif
