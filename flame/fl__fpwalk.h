/* fl__fpwalk: the frame-pointer walk of the in-process recorders (the
 * sampler's handler in fl_sampler.c, the allocation recorder in
 * fl_allocs.c). Internal (fl__).
 *
 * Code ranges registered as compiled with frame pointers (sorted,
 * disjoint) and a base range, the code below which a stack is of no
 * interest (cflame's worker); and the walk along a chain of saved frame
 * pointers (on x86-64: [rbp] the caller's rbp, [rbp + 8] the return
 * address) that each module starts from a frame of its own. Nothing here
 * allocates, locks or calls out, so it is safe in a signal handler and on
 * an allocator's path. */
#ifndef FL__FPWALK_H
#define FL__FPWALK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#define FL__MAX_FP_RANGES 16384

typedef struct fl__code_range {
  uintptr_t lo, hi;
} fl__code_range_t;

typedef struct fl__code_ranges {
  fl__code_range_t fp[FL__MAX_FP_RANGES]; /* sorted by lo, disjoint */
  size_t n_fp;
  fl__code_range_t base; /* {0, 0}: none */
} fl__code_ranges_t;

static inline bool fl__in_range(const fl__code_range_t *r, uintptr_t pc) {
  return pc - r->lo < r->hi - r->lo;
}

/* Whether pc is in a frame-pointer range of r; *hint is the index of the
 * range found last (checked first), updated on a hit. */
static inline bool fl__in_fp_range(const fl__code_ranges_t *r, uintptr_t pc, size_t *hint) {
  size_t n = r->n_fp;
  if (*hint < n && fl__in_range(&r->fp[*hint], pc)) return true;
  size_t lo = 0, hi = n;
  while (lo < hi) {
    size_t mid = lo + (hi - lo) / 2;
    if (pc < r->fp[mid].lo)
      hi = mid;
    else if (pc >= r->fp[mid].hi)
      lo = mid + 1;
    else {
      *hint = mid;
      return true;
    }
  }
  return false;
}

/* Adds [lo, hi) to r's frame-pointer ranges. Returns 0 (also when that very
 * range is there already), or -1 when it is empty, overlaps another one or
 * r is full. */
static inline int fl__add_fp_range(fl__code_ranges_t *r, uintptr_t lo, uintptr_t hi) {
  if (lo >= hi) return -1;
  size_t at = 0;
  while (at < r->n_fp && r->fp[at].hi <= lo) at++;
  if (at < r->n_fp && r->fp[at].lo < hi) return r->fp[at].lo == lo && r->fp[at].hi == hi ? 0 : -1;
  if (r->n_fp == FL__MAX_FP_RANGES) return -1;
  memmove(&r->fp[at + 1], &r->fp[at], (r->n_fp - at) * sizeof r->fp[0]);
  r->fp[at] = (fl__code_range_t){lo, hi};
  r->n_fp++;
  return 0;
}

static inline void fl__set_base_range(fl__code_ranges_t *r, uintptr_t lo, uintptr_t hi) {
  r->base = lo < hi ? (fl__code_range_t){lo, hi} : (fl__code_range_t){0, 0};
}

/* Walks the chain of saved frame pointers from fp, appending the return
 * addresses to pcs (which holds n already, at most max in all) up to and
 * including the first one in the base range. Every frame pointer must be
 * 16-byte aligned, at least floor (above the previous frame record) and
 * have its record (2 words) within the stack [stack_lo, stack_hi); every
 * return address before the base range's must be in a frame-pointer range.
 * Returns the new count (complete, or max deep), or 0 when the chain is
 * not one the walk can take: then nothing appended counts. Reads only
 * within the stack bounds; never instrumented, as it reads other
 * functions' frame records. */
__attribute__((no_sanitize("address", "undefined"))) static inline size_t fl__fp_walk_chain(
    const fl__code_ranges_t *r, uintptr_t fp, uintptr_t floor, uintptr_t stack_lo,
    uintptr_t stack_hi, void **pcs, size_t n, size_t max, size_t *hint) {
  if (stack_hi - stack_lo < 16 || floor < stack_lo) return 0;
  /* The highest frame pointer whose record is on the stack. */
  const uintptr_t top = stack_hi - 2 * sizeof(uintptr_t);
  while (n < max) {
    if (fp < floor || fp > top || (fp & 15)) return 0;
    const uintptr_t *rec = (const uintptr_t *)fp;
    uintptr_t ret = rec[1];
    bool base = fl__in_range(&r->base, ret);
    if (!base && !fl__in_fp_range(r, ret, hint)) return 0;
    pcs[n++] = (void *)ret;
    if (base) break;
    floor = fp + 16;
    fp = rec[0];
  }
  return n;
}

#endif
