/* SPDX-License-Identifier: BSD-3-Clause */
/* fl_allocs_entry: the allocator's entry points, for allocation profiling
 * (see include/cflame/fl_allocs.h), linked into the worker and built into
 * `cflame record`'s libcflame_preload_allocs.so.
 *
 * The worker executable defines malloc, free, calloc, realloc,
 * reallocarray, posix_memalign, aligned_alloc, memalign, valloc and
 * pvalloc. It is linked with exported symbols (-rdynamic), and an
 * executable comes first in symbol lookup, so every call binds here: the
 * worker's own, the cells' shared objects', and the C library's internal
 * ones (strdup, fopen and the like call malloc through the PLT, as glibc
 * allows interposing it). Each one forwards to glibc's own entry points,
 * __libc_malloc and friends, which need no dlsym(RTLD_NEXT) bootstrap (no
 * allocation before the real allocator is known) and no LD_PRELOAD that
 * would leak into the processes cells start. Around the real call they
 * call fl_allocs' hooks, which do nothing but load a flag when not
 * recording.
 *
 * posix_memalign and aligned_alloc are implemented over memalign with
 * their own argument checks: posix_memalign returns EINVAL for an
 * alignment that is not a power of two multiple of sizeof(void *) (and
 * ENOMEM, without touching *memptr, on failure), aligned_alloc fails with
 * errno EINVAL for one that is not a power of two (C11's valid alignments;
 * glibc 2.38 does the same), and neither changes errno on success.
 *
 * Sanitizer builds (CFLAME_SANITIZE, __SANITIZE_ADDRESS__): AddressSanitizer
 * replaces the allocator and intercepts strdup and friends, which then
 * allocate from it directly; a block of glibc's freed by ASan, or the
 * reverse, would be fatal. There the entry points forward to the
 * sanitizer's own (__interceptor_malloc and friends, exported by libasan),
 * and the alignment checks run before them, since ASan reports a bad
 * alignment as an error instead of returning it. Allocations that ASan's
 * interceptors make (strdup) do not pass through here and are not
 * recorded. */
#define _GNU_SOURCE
#include <errno.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include "cflame/fl_allocs.h"

#if defined(__SANITIZE_ADDRESS__)
#define REAL(name) __interceptor_##name
#else
#define REAL(name) __libc_##name
#endif

void *REAL(malloc)(size_t size);
void *REAL(calloc)(size_t n, size_t size);
void *REAL(realloc)(void *ptr, size_t size);
void REAL(free)(void *ptr);
void *REAL(memalign)(size_t alignment, size_t size);
void *REAL(valloc)(size_t size);
void *REAL(pvalloc)(size_t size);

/* Runs before sanitizer runtimes are set up (the loader allocates through
 * the program's malloc): no instrumentation. */
#define ENTRY __attribute__((no_sanitize("address", "undefined"), visibility("default")))
#define SLOW __attribute__((noinline, no_sanitize("address", "undefined")))
#define CALLER __builtin_return_address(0)
#define unlikely(x) __builtin_expect(!!(x), 0)

/* While not recording, each entry point is a flag test and a tail call to
 * the real one, so that it has no frame of its own; while recording, an
 * allocation that is not sampled only counts itself towards the thread's
 * next sample, and a free only checks the filter, inline before the same
 * tail call (see fl_allocs.h); the others are a tail call to the entry
 * point's *_recorded twin, with the caller's return address. */

static bool power_of_two(size_t x) {
  return x && !(x & (x - 1));
}

SLOW static void *malloc_recorded(size_t size, const void *caller) {
  void *p = REAL(malloc)(size);
  fl_allocs_on_alloc(p, size, FL_ALLOC_MALLOC, caller);
  return p;
}

ENTRY void *malloc(size_t size) {
  if (unlikely(fl_allocs_active()) && !fl__allocs_pass_alloc())
    return malloc_recorded(size, CALLER);
  return REAL(malloc)(size);
}

SLOW static void free_recorded(void *ptr) {
  fl_allocs_on_free(ptr);
  REAL(free)(ptr);
}

ENTRY void free(void *ptr) {
  if (unlikely(fl_allocs_active()) && !fl__allocs_pass_free(ptr)) return free_recorded(ptr);
  REAL(free)(ptr);
}

SLOW static void *calloc_recorded(size_t n, size_t size, const void *caller) {
  void *p = REAL(calloc)(n, size);
  /* No overflow here: calloc succeeded. */
  fl_allocs_on_alloc(p, n * size, FL_ALLOC_CALLOC, caller);
  return p;
}

ENTRY void *calloc(size_t n, size_t size) {
  if (unlikely(fl_allocs_active()) && !fl__allocs_pass_alloc())
    return calloc_recorded(n, size, CALLER);
  return REAL(calloc)(n, size);
}

/* realloc's hooks around the real call (see fl_allocs.h). */
SLOW static void *realloc_recorded(void *ptr, size_t size, const void *caller) {
  uint64_t token = fl_allocs_on_realloc_begin(ptr);
  void *p = REAL(realloc)(ptr, size);
  fl_allocs_on_realloc_end(ptr, token, p, size, caller);
  return p;
}

ENTRY void *realloc(void *ptr, size_t size) {
  if (unlikely(fl_allocs_active())) return realloc_recorded(ptr, size, CALLER);
  return REAL(realloc)(ptr, size);
}

ENTRY void *reallocarray(void *ptr, size_t n, size_t size) {
  size_t bytes;
  if (__builtin_mul_overflow(n, size, &bytes)) {
    errno = ENOMEM;
    return NULL;
  }
  if (unlikely(fl_allocs_active())) return realloc_recorded(ptr, bytes, CALLER);
  return REAL(realloc)(ptr, bytes);
}

SLOW static void *memalign_recorded(size_t alignment, size_t size, const void *caller) {
  void *p = REAL(memalign)(alignment, size);
  fl_allocs_on_alloc(p, size, FL_ALLOC_MEMALIGN, caller);
  return p;
}

/* memalign of glibc, and of ASan once the alignment is valid for it. */
static inline void *memalign_from(size_t alignment, size_t size, const void *caller) {
  if (unlikely(fl_allocs_active()) && !fl__allocs_pass_alloc())
    return memalign_recorded(alignment, size, caller);
  return REAL(memalign)(alignment, size);
}

ENTRY int posix_memalign(void **memptr, size_t alignment, size_t size) {
  if (alignment % sizeof(void *) != 0 || !power_of_two(alignment / sizeof(void *))) return EINVAL;
  int saved = errno;
  void *p = memalign_from(alignment, size, CALLER);
  errno = saved;
  if (!p) return ENOMEM;
  *memptr = p;
  return 0;
}

ENTRY void *aligned_alloc(size_t alignment, size_t size) {
  if (!power_of_two(alignment)) {
    errno = EINVAL;
    return NULL;
  }
  return memalign_from(alignment, size, CALLER);
}

ENTRY void *memalign(size_t alignment, size_t size) {
#if defined(__SANITIZE_ADDRESS__)
  /* glibc rounds an alignment up to a power of two; ASan calls it an
   * error. */
  if (alignment && !power_of_two(alignment)) {
    if (alignment > SIZE_MAX / 2 + 1) {
      errno = EINVAL;
      return NULL;
    }
    size_t a = 1;
    while (a < alignment) a <<= 1;
    alignment = a;
  }
#endif
  return memalign_from(alignment, size, CALLER);
}

SLOW static void *page_aligned_recorded(size_t size, bool whole_pages, const void *caller) {
  void *p = whole_pages ? REAL(pvalloc)(size) : REAL(valloc)(size);
  fl_allocs_on_alloc(p, size, FL_ALLOC_MEMALIGN, caller);
  return p;
}

ENTRY void *valloc(size_t size) {
  if (unlikely(fl_allocs_active()) && !fl__allocs_pass_alloc())
    return page_aligned_recorded(size, false, CALLER);
  return REAL(valloc)(size);
}

ENTRY void *pvalloc(size_t size) {
  if (unlikely(fl_allocs_active()) && !fl__allocs_pass_alloc())
    return page_aligned_recorded(size, true, CALLER);
  return REAL(pvalloc)(size);
}
