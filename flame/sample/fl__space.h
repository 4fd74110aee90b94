/* SPDX-License-Identifier: BSD-3-Clause */
/* fl__space: a recorder's buffer that is a shared file mapping, written
 * only where the file system has given it blocks. A write to a page of a
 * sparse file that the file system cannot back raises SIGBUS, which would
 * end the recorded program; so the writers (the sampler's signal handler,
 * the allocation recorder) reserve a record only below `allocated`, and
 * grow it with fallocate (a plain system call: async-signal-safe) in
 * chunks ahead of use. Threads may race to grow the same chunk: fallocate
 * of blocks already allocated does nothing, and `allocated` only rises (a
 * compare-and-swap to the larger value). A growth that fails marks the
 * buffer full for good; its errno is kept for the report. */
#ifndef FL__SPACE_H
#define FL__SPACE_H

#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/syscall.h>
#include <unistd.h>

/* Bytes the file grows by at a time. */
#define FL__SPACE_CHUNK ((uint64_t)1 << 20)

typedef struct {
  int fd;             /* the mapped file, or -1: the buffer is memory, all usable */
  uint64_t allocated; /* atomic: bytes from the start of the file that have blocks */
  uint64_t bytes;     /* the mapping's length */
  int failed;         /* atomic: the errno of the growth that failed, or 0 */
} fl__space_t;

/* Makes the file's first `end` bytes writable, growing it by whole chunks
 * past end. Returns true, or false when the file system refused (the
 * buffer is full from then on). Saves and restores errno. */
static inline __attribute__((always_inline)) bool fl__space_ensure(fl__space_t *s, uint64_t end) {
  uint64_t have = __atomic_load_n(&s->allocated, __ATOMIC_ACQUIRE);
  if (__builtin_expect(end <= have || s->fd < 0, 1)) return true;
  if (__atomic_load_n(&s->failed, __ATOMIC_RELAXED)) return false;
  uint64_t to = (end + FL__SPACE_CHUNK) & ~(FL__SPACE_CHUNK - 1);
  if (to > s->bytes) to = s->bytes;
  if (end > to) return false;
  int saved = errno;
  bool ok = syscall(SYS_fallocate, s->fd, 0, (off_t)have, (off_t)(to - have)) == 0;
  if (!ok) {
    int e = errno ? errno : EIO;
    int zero = 0;
    __atomic_compare_exchange_n(&s->failed, &zero, e, false, __ATOMIC_RELAXED, __ATOMIC_RELAXED);
  } else {
    while (have < to && !__atomic_compare_exchange_n(&s->allocated, &have, to, true,
                                                     __ATOMIC_RELEASE, __ATOMIC_ACQUIRE)) {
    }
  }
  errno = saved;
  return ok;
}

#endif
