/* SPDX-License-Identifier: BSD-3-Clause */
/* fl_allocs: the allocation recorder (see include/cflame/fl_allocs.h for
 * the contract and the buffer layout).
 *
 * The interposer runs inside every allocation call of the process, so the
 * common cases are inline in it (fl_allocs.h) and touch only the calling
 * thread's state, with no atomic read-modify-write and no shared cache
 * line written:
 *  - not recording: one load of fl__allocs.recording, then a tail call;
 *  - recording, call not sampled: the thread's count of calls goes up by
 *    one, below sample_at, the count at which its next sample falls, in a
 *    counter block only that thread writes; nothing else;
 *  - a free while recording: one load from the filter (16-bit counts of
 *    the table's live entries by hash bucket, 8 KiB, small enough to stay
 *    in cache): zero means the block was not sampled, and that is all.
 * Everything else comes here through the hooks: a thread's first call (it
 * takes a counter block), the sampled call, the first call of a run
 * (start zeroes sample_at, so that the gap is drawn at the new rate), the
 * free of a block whose filter bucket is not zero, realloc, and threads
 * beyond MAX_THREADS.
 *
 * Sampling. After a sample a thread draws the gap to its next one from the
 * geometric distribution of parameter sample_rate (see "sampling gaps"
 * below) and sets sample_at to its count plus the gap: every call is
 * sampled independently with probability sample_rate, as a coin per call
 * would be, at the cost of an increment, and the count is the exact number
 * of calls. It counts up, not down, so that start, which must reset every
 * thread's countdown, writes only sample_at, which the inline path only
 * reads: an owner's update in flight cannot undo the reset.
 *
 * A sampled call unwinds from the allocation function's caller on (by the
 * frame-pointer walk below, or else unw_backtrace: the same return
 * addresses either way), claims a slot of the table for the block's address
 * (a compare-and-swap of an empty or freed slot within FL_ALLOCS_MAX_PROBE
 * of its home slot) and counts it in the filter, then reserves the record
 * with a compare-and-swap on used_words (so that used_words never passes
 * capacity_words), writes it, and publishes it by storing word 0 with the
 * tid last (release). A full table or buffer counts the record as dropped.
 * A release whose filter bucket is not zero probes the table; on a match
 * it turns the slot into a tombstone, decrements the bucket, and marks the
 * record FL_ALLOCS_FREED.
 *
 * Why a block's entry is always found: its slot is claimed inside the
 * allocation call, before the program has the address, and released after
 * the program gave it back; realloc releases the old block before glibc's
 * realloc can hand that address to another thread. Entries only ever turn
 * into tombstones, never back into never-used slots, so a probe never stops
 * short of a live entry. Start empties the table by clearing the slots the
 * last run's records name (word 3), not the whole table, unless a slot may
 * have been claimed without a complete record (a full buffer, a record cut
 * off by siglongjmp).
 *
 * The frame-pointer walk (x86-64; the rules it checks are in fl_allocs.h)
 * is there because libunwind costs 150-250 ns a stack and the walk a few
 * ns a frame. At the address in rbp lie the caller's rbp and, 8 bytes
 * above, the return address. The walk starts from its own frame, goes
 * through the recorder's and the interposer's (both built with frame
 * pointers) to the *_recorded function's, whose saved rbp is the caller's,
 * and from there records return addresses while they are in registered
 * ranges, up to the first in the base range; anything else hands the whole
 * stack to unw_backtrace. It only goes up from the current frame within
 * the thread's stack bounds, so it reads only the live stack and cannot
 * fault. The ranges are a sorted array, searched by
 * bisection after a check of the previous frame's range; they change only
 * while not recording, when no thread is on a slow path (see Stopping), so
 * the walk reads them without a lock.
 *
 * Re-entry. libunwind allocates on a thread's first unwind, and so could a
 * signal handler that interrupts a hook. T.guard is set on the slow paths:
 * calls that find it set pass through, unrecorded and uncounted.
 *
 * Stopping. fl_allocs_stop clears fl__allocs.recording, then waits until no
 * thread is on a slow path, after which nothing writes to the buffer. This
 * is a Dekker-style pair: a slow path stores its `busy` flag, then loads
 * recording; stop stores recording, then loads every busy. Each side needs
 * a full fence between its store and its load. So that the sampled call
 * pays no fence, the process registers for
 * membarrier(MEMBARRIER_CMD_PRIVATE_EXPEDITED) at its first init: the slow
 * path has only a compiler barrier, and stop calls membarrier after
 * clearing recording, which runs a full fence on every CPU running a
 * thread of the process (a thread not running has passed a context switch,
 * which is one), as folly's asymmetric fences do. Without membarrier (an
 * old kernel, a seccomp filter) each slow path fences. The calling thread's
 * own busy flag and guard are reset instead of waited for: a cell
 * interrupted with siglongjmp may have left them set, and a thread that
 * calls stop is on no slow path.
 *
 * Counters. Each thread owns one of MAX_THREADS counter blocks (taken on
 * its first counted call or at fl_allocs_thread_enter, given back at
 * fl_allocs_thread_exit; a later owner goes on from the same values and
 * the same countdown, which is memoryless): calls, sampled blocks released,
 * records written and walked, so that a sampled call adds to no shared
 * counter. Written on slow paths, which stop waits for, they are exact. The
 * counts only grow: start notes their sum, stop writes the difference to
 * the header. sample_at is written by start (zero) and by its owner inside
 * a busy window only, so the two never race. Threads beyond MAX_THREADS,
 * and threads past their exit, share one block of atomic counters, their
 * countdowns in TLS, checked against fl__allocs.epoch. */
#define _GNU_SOURCE
#define UNW_LOCAL_ONLY
#include "cflame/fl_allocs.h"

#include <errno.h>
#include <libunwind.h>
#include <math.h>
#include <pthread.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "fl__allocs.h"
#include "fl__common.h"
#include "fl__rng.h"

/* Frames of the recorder and the interposer above the caller, at most. */
#define OWN_FRAMES 16
#define FL_ALLOCS_MAX_PROBE 64
#define MAX_FP_RANGES 16384
#define SLOT_EMPTY 0
#define SLOT_FREED 1

#define likely(x) __builtin_expect(!!(x), 1)
#define unlikely(x) __builtin_expect(!!(x), 0)

/* The hooks' fast paths may run before a sanitizer runtime is set up (the
 * loader allocates through the program's malloc early on): no
 * instrumentation there. */
#define NO_SANITIZE __attribute__((no_sanitize("address", "undefined")))

typedef fl__allocs_thread_t thread_state_t;
_Static_assert(sizeof(((thread_state_t *)0)->pcs) / sizeof(void *) ==
                   FL_ALLOCS_MAX_DEPTH + OWN_FRAMES,
               "the unwinding buffer");

counters_t fl__allocs_counter_blocks[MAX_THREADS];
counters_t fl__allocs_shared_counters = {.shared = true, .owned = 1};
fl__allocs_state_t fl__allocs_state;
fl__allocs_written_t fl__allocs_written = {.space.fd = -1};

__thread thread_state_t fl__allocs_thread __attribute__((tls_model("initial-exec")));

/* Read on every call (see fl_allocs.h). */
fl__allocs_global_t fl__allocs;

/* ---- small helpers ---- */

static void seed(thread_state_t *t) {
  static uint64_t threads_seeded;
  uint64_t n = __atomic_fetch_add(&threads_seeded, 1, __ATOMIC_RELAXED);
  t->rng = ((uint64_t)fl__clock_ns(CLOCK_MONOTONIC) * 0x9E3779B97F4A7C15ULL) ^ (n << 32);
  if (!t->rng) t->rng = 1;
}

/* ---- sampling gaps ----
 *
 * The gap G (calls up to and including the next sampled one) is geometric
 * with parameter p = sample_rate: P(G = g) = p (1 - p)^(g - 1), g >= 1.
 * Written G - 1 = M Q + R for a power of two M, Q = floor((G - 1) / M)
 * and R = (G - 1) mod M are independent: Q is geometric on 0, 1, ... with
 * P(Q >= 1) = (1 - p)^M, and R is the geometric truncated to [0, M),
 * P(R = r) = p (1 - p)^r / (1 - (1 - p)^M). So a gap is drawn exactly
 * without a log: R from an alias table of M entries (Walker's method: one
 * random word, one load, one compare) and Q by counting draws below
 * (1 - p)^M, which start makes at most 1/2 by its choice of M (the
 * smallest power of two that does), so Q takes 2 draws or fewer on
 * average. The table is built by start in doubles (each probability within
 * a few ulps) and compares 56-bit fractions: every probability is within
 * 2^-50 of the exact one, as with the log it replaces (53-bit uniforms).
 * Rates for which M would pass GAP_TABLE_MAX (below 1 - 2^(-1/256), about
 * 0.0027) keep the log: 1 + floor(log(U) / log(1 - p)), U uniform in
 * (0, 1]. At sample_rate 1 the gap is always 1. */
#define GAP_TABLE_MAX 256
#define FRACTION_BITS 56
#define FRACTION_MASK ((1ull << FRACTION_BITS) - 1)

typedef struct gap_sampler {
  bool every;          /* sample_rate == 1: every gap is 1 */
  bool by_log;         /* the rate is below the table's: floor(log(U) / log_keep) */
  double log_keep;     /* log(1 - sample_rate) */
  uint64_t m;          /* M: a power of two, at most GAP_TABLE_MAX */
  uint64_t q_continue; /* (1 - p)^M in 64-bit fixed point: a draw below it adds M */
  /* Entry i: its own probability's share in 56-bit fixed point (bits
   * 8-63), then its alias (bits 0-7). */
  uint64_t alias[GAP_TABLE_MAX];
} gap_sampler_t;

/* Sets g up for sample_rate (0 < sample_rate <= 1). */
static void gap_sampler_init(gap_sampler_t *g, double sample_rate) {
  memset(g, 0, sizeof *g);
  g->every = sample_rate >= 1;
  if (g->every) return;
  double keep = 1 - sample_rate;
  g->log_keep = log1p(-sample_rate);
  uint64_t m = 1;
  while (m < GAP_TABLE_MAX && pow(keep, (double)m) > 0.5) m *= 2;
  double keep_m = pow(keep, (double)m);
  if (keep_m > 0.5) {
    g->by_log = true;
    return;
  }
  g->m = m;
  g->q_continue = (uint64_t)ldexp(keep_m, 64);
  /* Vose's construction of the alias table for R's probabilities, each
   * scaled by m (so that the mean is 1). */
  double scaled[GAP_TABLE_MAX];
  uint32_t small[GAP_TABLE_MAX], large[GAP_TABLE_MAX];
  size_t n_small = 0, n_large = 0;
  for (uint64_t r = 0; r < m; r++) {
    scaled[r] = (double)m * sample_rate * pow(keep, (double)r) / (1 - keep_m);
    if (scaled[r] < 1)
      small[n_small++] = (uint32_t)r;
    else
      large[n_large++] = (uint32_t)r;
  }
  while (n_small && n_large) {
    uint32_t s = small[--n_small], l = large[n_large - 1];
    g->alias[s] = (uint64_t)ldexp(scaled[s], FRACTION_BITS) << 8 | l;
    scaled[l] -= 1 - scaled[s];
    if (scaled[l] < 1) {
      n_large--;
      small[n_small++] = l;
    }
  }
  /* What is left has probability 1 up to rounding: always itself (its
   * own alias, whichever way the compare goes). */
  for (size_t k = 0; k < n_large; k++) g->alias[large[k]] = large[k];
  for (size_t k = 0; k < n_small; k++) g->alias[small[k]] = small[k];
}

/* A gap drawn from g with the generator at *rng (not 0). */
static uint64_t gap_draw(const gap_sampler_t *g, uint64_t *rng) {
  if (g->every) return 1;
  if (unlikely(g->by_log)) {
    /* U uniform in (0, 1], with 53 bits. */
    double u = (double)((fl__rng_next(rng) >> 11) + 1) * 0x1.0p-53;
    double gap = floor(log(u) / g->log_keep);
    return gap >= 0x1.0p62 ? (1ull << 62) : 1 + (uint64_t)gap;
  }
  uint64_t x = fl__rng_next(rng);
  /* R: the entry from the top bits, its own or its alias by the rest. */
  uint64_t i = (x >> FRACTION_BITS) & (g->m - 1), e = g->alias[i];
  uint64_t gap = 1 + ((x & FRACTION_MASK) < (e >> 8) ? i : (e & 0xff));
  while (fl__rng_next(rng) < g->q_continue) gap += g->m;
  return gap;
}

static gap_sampler_t gaps;

/* Calls up to and including the next sampled one. */
static uint64_t draw_skip(thread_state_t *t) {
  if (gaps.every) return 1;
  if (unlikely(!t->rng)) seed(t);
  return gap_draw(&gaps, &t->rng);
}

void fl__allocs_draw_gaps(double sample_rate, uint64_t seed_, uint64_t *out, size_t n) {
  gap_sampler_t g;
  gap_sampler_init(&g, sample_rate);
  uint64_t rng = seed_ ? seed_ : 1;
  for (size_t i = 0; i < n; i++) out[i] = gap_draw(&g, &rng);
}

void fl__allocs_set_rate(double sample_rate) {
  gap_sampler_init(&gaps, sample_rate);
}

#define hash_addr fl__allocs_hash
#define filter_bucket(h) FL__ALLOCS_BUCKET(h)
_Static_assert(FL_ALLOCS_FILTER_BUCKETS == 1 << 12, "a bucket is 12 bits of the hash");

/* ---- counters ---- */

/* Takes a free counter block for t (the shared one when none is left). */
static counters_t *own_counters(thread_state_t *t) {
  for (int i = 0; i < MAX_THREADS; i++) {
    counters_t *c = &fl__allocs_counter_blocks[i];
    int free_ = 0;
    if (!__atomic_load_n(&c->owned, __ATOMIC_RELAXED) &&
        __atomic_compare_exchange_n(&c->owned, &free_, 1, false, __ATOMIC_ACQUIRE,
                                    __ATOMIC_RELAXED)) {
      t->c = c;
      return c;
    }
  }
  t->c = &fl__allocs_shared_counters;
  return t->c;
}

/* Adds v to the count at field, one of c's. */
NO_SANITIZE static inline void count(counters_t *c, uint64_t *field, uint64_t v) {
  if (unlikely(c->shared))
    __atomic_fetch_add(field, v, __ATOMIC_RELAXED);
  else
    __atomic_store_n(field, __atomic_load_n(field, __ATOMIC_RELAXED) + v, __ATOMIC_RELAXED);
}

counts_t fl__allocs_sum_counters(void) {
  counts_t sum = {0};
  for (int i = 0; i <= MAX_THREADS; i++) {
    counters_t *c = i < MAX_THREADS ? &fl__allocs_counter_blocks[i] : &fl__allocs_shared_counters;
    sum.calls += __atomic_load_n(&c->calls, __ATOMIC_RELAXED);
    sum.frees += __atomic_load_n(&c->frees, __ATOMIC_RELAXED);
    sum.records += __atomic_load_n(&c->records, __ATOMIC_RELAXED);
    sum.fp_records += __atomic_load_n(&c->fp_records, __ATOMIC_RELAXED);
  }
  return sum;
}

bool fl__allocs_use_membarrier;

/* The slow path's half of the Dekker pair of enter_busy and stop: a full
 * fence, or only the compiler's when stop runs membarrier, which makes
 * every running thread of the process execute one for it. */
static inline void busy_fence(void) {
  if (likely(fl__allocs_use_membarrier))
    __asm__ __volatile__("" ::: "memory");
  else
    __atomic_thread_fence(__ATOMIC_SEQ_CST);
}

void fl__allocs_no_membarrier(void) {
  fl__allocs_use_membarrier = false;
}

/* Enters a slow path: returns false (and leaves) when recording stopped
 * meanwhile. */
static bool enter_busy(counters_t *c) {
  if (c->shared)
    __atomic_fetch_add(&c->busy, 1, __ATOMIC_RELAXED);
  else
    __atomic_store_n(&c->busy, 1, __ATOMIC_RELAXED);
  busy_fence();
  if (__atomic_load_n(&fl__allocs.recording, __ATOMIC_RELAXED)) return true;
  if (c->shared)
    __atomic_fetch_sub(&c->busy, 1, __ATOMIC_RELEASE);
  else
    __atomic_store_n(&c->busy, 0, __ATOMIC_RELEASE);
  return false;
}

static void leave_busy(counters_t *c) {
  if (c->shared)
    __atomic_fetch_sub(&c->busy, 1, __ATOMIC_RELEASE);
  else
    __atomic_store_n(&c->busy, 0, __ATOMIC_RELEASE);
}

/* ---- code ranges for the frame-pointer walk ---- */

typedef struct code_range {
  uintptr_t lo, hi;
} code_range_t;

/* Sorted by lo, disjoint; written only while not recording. */
static code_range_t fp_ranges[MAX_FP_RANGES];
static size_t n_fp_ranges;
static code_range_t base_range;

static inline bool in_range(const code_range_t *r, uintptr_t pc) {
  return pc - r->lo < r->hi - r->lo;
}

/* Whether pc is in a registered range; *hint is the index of the range
 * found last (checked first), updated on a hit. */
static inline bool in_fp_range(uintptr_t pc, size_t *hint) {
  size_t n = n_fp_ranges;
  if (*hint < n && in_range(&fp_ranges[*hint], pc)) return true;
  size_t lo = 0, hi = n;
  while (lo < hi) {
    size_t mid = lo + (hi - lo) / 2;
    if (pc < fp_ranges[mid].lo)
      hi = mid;
    else if (pc >= fp_ranges[mid].hi)
      lo = mid + 1;
    else {
      *hint = mid;
      return true;
    }
  }
  return false;
}

int fl_allocs_add_fp_range(uintptr_t lo, uintptr_t hi) {
  if (lo >= hi || __atomic_load_n(&fl__allocs.recording, __ATOMIC_SEQ_CST)) return -1;
  size_t at = 0;
  while (at < n_fp_ranges && fp_ranges[at].hi <= lo) at++;
  if (at < n_fp_ranges && fp_ranges[at].lo < hi)
    return fp_ranges[at].lo == lo && fp_ranges[at].hi == hi ? 0 : -1;
  if (n_fp_ranges == MAX_FP_RANGES) return -1;
  memmove(&fp_ranges[at + 1], &fp_ranges[at], (n_fp_ranges - at) * sizeof fp_ranges[0]);
  fp_ranges[at] = (code_range_t){lo, hi};
  n_fp_ranges++;
  return 0;
}

void fl_allocs_set_base_range(uintptr_t lo, uintptr_t hi) {
  base_range = lo < hi ? (code_range_t){lo, hi} : (code_range_t){0, 0};
}

/* ---- unwinding ---- */

#if defined(__x86_64__)
/* Walks the frame-pointer chain of the calling thread into t->pcs from
 * the frame that called the allocation function (caller: its return
 * address) up to the base range (see the top of the file). Returns how
 * many return addresses (caller first, the base range's last), or 0 when
 * the stack is not one the walk can take: then nothing in t->pcs counts.
 * Reads only within the thread's stack bounds; never instrumented, as it
 * reads other functions' frame records. */
NO_SANITIZE static size_t fp_walk(thread_state_t *t, uintptr_t caller) {
  const uintptr_t lo = t->stack_lo, hi = t->stack_hi;
  size_t hint = 0;
  if (hi - lo < 16 || !in_fp_range(caller, &hint)) return 0;
  /* The highest frame pointer whose record (2 words) is on the stack. */
  const uintptr_t top = hi - 2 * sizeof(uintptr_t);
  uintptr_t fp = (uintptr_t)__builtin_frame_address(0), floor = lo;
  /* The recorder's and interposer's own frames, up to the one that
   * returns to caller: the rbp saved there is the caller's. */
  for (int k = 0;; k++) {
    if (k == OWN_FRAMES || fp < floor || fp > top || (fp & 15)) return 0;
    const uintptr_t *rec = (const uintptr_t *)fp;
    floor = fp + 16;
    fp = rec[0];
    if (rec[1] == caller) break;
  }
  void **pcs = t->pcs;
  size_t n = 0;
  pcs[n++] = (void *)caller;
  while (n < FL_ALLOCS_MAX_DEPTH) {
    if (fp < floor || fp > top || (fp & 15)) return 0;
    const uintptr_t *rec = (const uintptr_t *)fp;
    uintptr_t ret = rec[1];
    bool base = in_range(&base_range, ret);
    if (!base && !in_fp_range(ret, &hint)) return 0;
    pcs[n++] = (void *)ret;
    if (base) break;
    floor = fp + 16;
    fp = rec[0];
  }
  return n; /* complete, or as deep as libunwind's would be */
}
#endif

/* Unwinds the calling thread into t->pcs from the frame that called the
 * allocation function (caller: its return address) on, as plain return
 * addresses: by the frame-pointer walk where it can (*by_fp set), with
 * libunwind otherwise. Returns how many (at least 1 when caller is not 0:
 * the caller alone when it is not found on the stack). Not inlined, so
 * that the warm-up (caller 0: libunwind only) runs the very same
 * frames. */
__attribute__((noinline)) static size_t unwind(thread_state_t *t, uintptr_t caller, bool *by_fp) {
  void **pcs = t->pcs;
  *by_fp = false;
#if defined(__x86_64__)
  if (caller) {
    size_t n = fp_walk(t, caller);
    if (n) {
      *by_fp = true;
      return n;
    }
  }
#endif
  int n = unw_backtrace(pcs, FL_ALLOCS_MAX_DEPTH + OWN_FRAMES);
  if (!caller) return 0;
  for (int i = 0; i < n && i < OWN_FRAMES; i++) {
    uintptr_t p = (uintptr_t)pcs[i];
    if (p != caller && p != caller - 1) continue;
    uintptr_t adjust = p == caller - 1;
    size_t avail = (size_t)(n - i);
    if (avail > FL_ALLOCS_MAX_DEPTH) avail = FL_ALLOCS_MAX_DEPTH;
    for (size_t k = 0; k < avail; k++) pcs[k] = (void *)((uintptr_t)pcs[i + k] + adjust);
    return avail;
  }
  pcs[0] = (void *)caller;
  return 1;
}

/* ---- the table of sampled blocks ---- */

/* Whether slot s may be touched: in a buffer file, its chunk of the table
 * has blocks (a page of a sparse file that the file system cannot back
 * raises SIGBUS, read or written, on tmpfs). With grow, a chunk without
 * them is given them; a file system that refuses counts the buffer as
 * full, as the records' growth does. Threads racing on a chunk both
 * fallocate it, which is harmless. */
static inline bool table_chunk_ready(uint64_t s, bool grow) {
  fl__space_t *sp = &fl__allocs_written.space;
  if (likely(sp->fd < 0)) return true;
  uint64_t off = (uint64_t)((char *)&fl__allocs_state.table[2 * s] - (char *)fl__allocs_state.hdr);
  uint64_t c = (off - FL_ALLOCS_HEADER_WORDS * sizeof(uint64_t)) / FL__ALLOCS_TABLE_CHUNK;
  uint64_t *w = &fl__allocs_written.table_chunks[c / 64], bit = 1ull << (c % 64);
  if (__atomic_load_n(w, __ATOMIC_ACQUIRE) & bit) return true;
  if (!grow || __atomic_load_n(&sp->failed, __ATOMIC_RELAXED)) return false;
  uint64_t from = FL_ALLOCS_HEADER_WORDS * sizeof(uint64_t) + c * FL__ALLOCS_TABLE_CHUNK;
  int saved = errno;
  bool ok = syscall(SYS_fallocate, sp->fd, 0, (off_t)from, (off_t)FL__ALLOCS_TABLE_CHUNK) == 0;
  if (ok) {
    __atomic_fetch_or(w, bit, __ATOMIC_RELEASE);
  } else {
    int e = errno ? errno : EIO, zero = 0;
    __atomic_compare_exchange_n(&sp->failed, &zero, e, false, __ATOMIC_RELAXED, __ATOMIC_RELAXED);
    __atomic_store_n(&fl__allocs_state.hdr->space_errno, (uint64_t)e, __ATOMIC_RELAXED);
  }
  errno = saved;
  return ok;
}

/* Claims a slot for ptr. Returns its index, or -1 when the probe window is
 * full (or the table's file cannot grow). */
static int64_t table_claim(const void *ptr, uint64_t h) {
  uint64_t key = (uint64_t)(uintptr_t)ptr;
  uint64_t home = h >> fl__allocs_state.table_shift;
  for (uint64_t i = 0; i < FL_ALLOCS_MAX_PROBE && i <= fl__allocs_state.table_mask; i++) {
    uint64_t s = (home + i) & fl__allocs_state.table_mask;
    if (!table_chunk_ready(s, true)) return -1;
    uint64_t *k = &fl__allocs_state.table[2 * s];
    uint64_t cur = __atomic_load_n(k, __ATOMIC_RELAXED);
    while (cur == SLOT_EMPTY || cur == SLOT_FREED) {
      if (__atomic_compare_exchange_n(k, &cur, key, false, __ATOMIC_ACQ_REL, __ATOMIC_RELAXED)) {
        __atomic_fetch_add(&fl__allocs.filter[filter_bucket(h)], 1, __ATOMIC_RELAXED);
        return (int64_t)s;
      }
    }
  }
  return -1;
}

static void table_release(uint64_t s, uint64_t h) {
  __atomic_store_n(&fl__allocs_state.table[2 * s], SLOT_FREED, __ATOMIC_RELEASE);
  __atomic_fetch_sub(&fl__allocs.filter[filter_bucket(h)], 1, __ATOMIC_RELAXED);
}

/* Finds ptr's slot. Returns its index or -1. */
static int64_t table_find(const void *ptr, uint64_t h) {
  uint64_t key = (uint64_t)(uintptr_t)ptr;
  uint64_t home = h >> fl__allocs_state.table_shift;
  for (uint64_t i = 0; i < FL_ALLOCS_MAX_PROBE && i <= fl__allocs_state.table_mask; i++) {
    uint64_t s = (home + i) & fl__allocs_state.table_mask;
    if (!table_chunk_ready(s, false)) return -1; /* no blocks: no key was ever put there */
    uint64_t cur = __atomic_load_n(&fl__allocs_state.table[2 * s], __ATOMIC_ACQUIRE);
    if (cur == key) return (int64_t)s;
    if (cur == SLOT_EMPTY) return -1;
  }
  return -1;
}

/* Unregisters ptr when it is a sampled block: its record is marked freed
 * and counted in c's frees. Returns its record's position + 1, or 0.
 * Called on a slow path. */
static uint64_t unregister(counters_t *c, const void *ptr, uint64_t h) {
  int64_t s = table_find(ptr, h);
  if (s < 0) return 0;
  uint64_t pos = __atomic_load_n(&fl__allocs_state.table[2 * s + 1], __ATOMIC_RELAXED);
  table_release((uint64_t)s, h);
  __atomic_fetch_or(&fl__allocs_state.words[pos + 3], FL_ALLOCS_FREED, __ATOMIC_RELAXED);
  count(c, &c->frees, 1);
  return pos + 1;
}

/* ---- the sampled path ---- */

/* Records the allocation of bytes at ptr. Called with t->guard set and
 * the thread busy. */
static void record(thread_state_t *t, counters_t *c, void *ptr, size_t bytes, int kind,
                   uintptr_t caller) {
  if (__atomic_load_n(&fl__allocs_written.full, __ATOMIC_RELAXED)) goto drop;
  uint64_t h = hash_addr(ptr);
  /* The block's home slot is a cache (and TLB) miss in a table of up to
   * 2 GiB: fetched while the stack is unwound. */
  __builtin_prefetch(&fl__allocs_state.table[2 * (h >> fl__allocs_state.table_shift)], 1);
  bool by_fp;
  size_t n = unwind(t, caller, &by_fp);
  int64_t s = table_claim(ptr, h);
  if (s < 0) goto drop;
  uint64_t need = FL_ALLOCS_RECORD_WORDS + n;
  uint64_t pos = __atomic_load_n(&fl__allocs_state.hdr->used_words, __ATOMIC_RELAXED);
  do {
    uint64_t end =
        (uint64_t)((char *)(fl__allocs_state.words + pos + need) - (char *)fl__allocs_state.hdr);
    if (pos + need > fl__allocs_state.capacity ||
        !fl__space_ensure(&fl__allocs_written.space, end)) {
      int e = __atomic_load_n(&fl__allocs_written.space.failed, __ATOMIC_RELAXED);
      if (e) __atomic_store_n(&fl__allocs_state.hdr->space_errno, (uint64_t)e, __ATOMIC_RELAXED);
      table_release((uint64_t)s, h);
      __atomic_store_n(&fl__allocs_written.table_stray, 1, __ATOMIC_RELAXED);
      __atomic_store_n(&fl__allocs_written.full, 1, __ATOMIC_RELAXED);
      goto drop;
    }
  } while (!__atomic_compare_exchange_n(&fl__allocs_state.hdr->used_words, &pos, pos + need, true,
                                        __ATOMIC_RELAXED, __ATOMIC_RELAXED));
  uint64_t *rec = fl__allocs_state.words + pos;
  /* Reserved: a reader after a crash skips it whole. */
  __atomic_store_n(&rec[0], (uint64_t)n << 32, __ATOMIC_RELAXED);
  rec[1] = bytes;
  rec[2] = (uint64_t)(uintptr_t)ptr;
  __atomic_store_n(&rec[3], (uint64_t)kind | (uint64_t)s << 32, __ATOMIC_RELAXED);
  rec[4] = fl__allocs_state.tag;
  for (size_t i = 0; i < n; i++) rec[FL_ALLOCS_RECORD_WORDS + i] = (uint64_t)(uintptr_t)t->pcs[i];
  __atomic_store_n(&fl__allocs_state.table[2 * s + 1], pos, __ATOMIC_RELAXED);
  if (unlikely(!t->tid)) t->tid = (int)syscall(SYS_gettid);
  /* Word 0 last: a reader that sees it sees the whole record. */
  __atomic_store_n(&rec[0], ((uint64_t)n << 32) | (uint32_t)t->tid, __ATOMIC_RELEASE);
  /* Counted per thread, summed by stop: no read-modify-write of the
   * header's line, which every sampled call reserves from. */
  count(c, &c->records, 1);
  if (by_fp) count(c, &c->fp_records, 1);
  return;
drop:
  __atomic_fetch_add(&fl__allocs_state.hdr->dropped, 1, __ATOMIC_RELAXED);
}

/* A sampled allocation of a thread in the shared block: records. */
__attribute__((noinline)) static void sampled(thread_state_t *t, counters_t *c, void *ptr,
                                              size_t bytes, int kind, uintptr_t caller) {
  t->guard = 1;
  if (enter_busy(c)) {
    record(t, c, ptr, bytes, kind, caller);
    leave_busy(c);
  }
  t->guard = 0;
}

/* A call of a thread in the shared block (counted atomically; its
 * countdown in TLS, drawn again in a new run). */
NO_SANITIZE static void shared_alloc(thread_state_t *t, counters_t *c, void *ptr, size_t bytes,
                                     int kind, uintptr_t caller) {
  __atomic_fetch_add(&c->calls, 1, __ATOMIC_RELAXED);
  uint64_t epoch = __atomic_load_n(&fl__allocs.epoch, __ATOMIC_RELAXED);
  if (t->epoch != epoch) {
    t->epoch = epoch;
    t->skip = 0;
  }
  uint64_t left = t->skip;
  if (unlikely(left == 0)) left = draw_skip(t);
  if (likely(left > 1)) {
    t->skip = left - 1;
    return;
  }
  t->skip = draw_skip(t);
  sampled(t, c, ptr, bytes, kind, caller);
}

/* A counted call of a thread with a block of its own whose count reached
 * sample_at (calls, its count with this call): the sampled one, or the
 * run's first (sample_at zeroed by start: this call begins a gap drawn at
 * the run's rate, and is sampled when the gap is 1). sample_at is written
 * only here, inside the busy window, so that stop's wait orders it before
 * the next start's zero. */
__attribute__((noinline)) static void at_sample_point(thread_state_t *t, counters_t *c,
                                                      uint64_t calls, void *ptr, size_t bytes,
                                                      int kind, uintptr_t caller) {
  t->guard = 1;
  if (enter_busy(c)) {
    uint64_t at = __atomic_load_n(&c->sample_at, __ATOMIC_RELAXED);
    if (at == 0) at = calls - 1 + draw_skip(t);
    bool take = calls >= at;
    if (take) at = calls + draw_skip(t);
    __atomic_store_n(&c->sample_at, at, __ATOMIC_RELAXED);
    if (take) record(t, c, ptr, bytes, kind, caller);
    leave_busy(c);
  }
  t->guard = 0;
}

/* ---- the hooks ---- */

NO_SANITIZE void fl_allocs_on_alloc(void *ptr, size_t bytes, int kind, const void *caller) {
  if (likely(!__atomic_load_n(&fl__allocs.recording, __ATOMIC_ACQUIRE))) return;
  thread_state_t *t = &T;
  if (unlikely(t->guard) || unlikely(!ptr)) return;
  counters_t *c = t->c;
  if (unlikely(!c)) c = own_counters(t);
  if (unlikely(c->shared)) {
    shared_alloc(t, c, ptr, bytes, kind, (uintptr_t)caller);
    return;
  }
  /* As fl__allocs_pass_alloc counts, for a successful call only. */
  uint64_t calls = __atomic_load_n(&c->calls, __ATOMIC_RELAXED) + 1;
  __atomic_store_n(&c->calls, calls, __ATOMIC_RELAXED);
  if (likely(calls < __atomic_load_n(&c->sample_at, __ATOMIC_RELAXED))) return;
  at_sample_point(t, c, calls, ptr, bytes, kind, (uintptr_t)caller);
}

/* A release while recording of a block whose filter bucket is not empty. */
__attribute__((noinline)) static uint64_t release_slow(thread_state_t *t, counters_t *c,
                                                       const void *ptr, uint64_t h) {
  uint64_t token = 0;
  t->guard = 1;
  if (enter_busy(c)) {
    token = unregister(c, ptr, h);
    leave_busy(c);
  }
  t->guard = 0;
  return token;
}

/* Unregisters ptr when it was sampled (and counts its release). Returns
 * the token of fl_allocs_on_realloc_begin: the record's position + 1 when
 * it was sampled, or 0. */
NO_SANITIZE static inline uint64_t on_release(void *ptr) {
  if (likely(!__atomic_load_n(&fl__allocs.recording, __ATOMIC_ACQUIRE))) return 0;
  thread_state_t *t = &T;
  if (unlikely(t->guard) || unlikely(!ptr)) return 0;
  uint64_t h = hash_addr(ptr);
  if (likely(__atomic_load_n(&fl__allocs.filter[filter_bucket(h)], __ATOMIC_RELAXED) == 0))
    return 0;
  counters_t *c = t->c;
  if (unlikely(!c)) c = own_counters(t);
  return release_slow(t, c, ptr, h);
}

NO_SANITIZE void fl_allocs_on_free(void *ptr) {
  on_release(ptr);
}

NO_SANITIZE uint64_t fl_allocs_on_realloc_begin(void *old) {
  return on_release(old);
}

/* Registers old again after a failed realloc, as it was: not freed, not
 * counted in frees (unless the table has no slot for it any more: then its
 * record stays freed, and counted). */
static void restore(thread_state_t *t, counters_t *c, void *old, uint64_t pos) {
  t->guard = 1;
  if (enter_busy(c)) {
    uint64_t h = hash_addr(old);
    int64_t s = table_claim(old, h);
    if (s >= 0) {
      /* Live again, in its new slot (no other thread can free it now). */
      uint64_t kind =
          __atomic_load_n(&fl__allocs_state.words[pos + 3], __ATOMIC_RELAXED) & KIND_MASK;
      __atomic_store_n(&fl__allocs_state.table[2 * s + 1], pos, __ATOMIC_RELAXED);
      __atomic_store_n(&fl__allocs_state.words[pos + 3], kind | (uint64_t)s << 32,
                       __ATOMIC_RELAXED);
      count(c, &c->frees, (uint64_t)-1);
    }
    leave_busy(c);
  }
  t->guard = 0;
}

NO_SANITIZE void fl_allocs_on_realloc_end(void *old, uint64_t token, void *ptr, size_t bytes,
                                          const void *caller) {
  if (ptr) {
    fl_allocs_on_alloc(ptr, bytes, FL_ALLOC_REALLOC, caller);
    return;
  }
  /* realloc(old, 0) released old; any other NULL is a failure that left
   * old as it was: registered again when it was a sampled block (a token
   * says so; then on_release gave the thread a counter block). */
  if (!old || bytes == 0 || !token) return;
  if (__atomic_load_n(&fl__allocs.recording, __ATOMIC_ACQUIRE)) restore(&T, T.c, old, token - 1);
}

/* ---- threads ---- */

/* Notes the calling thread's stack bounds for the frame-pointer walk
 * (pthread_getattr_np allocates and, on the main thread, reads
 * /proc/self/maps: called with t->guard set, never on a recording path). */
static void note_stack(thread_state_t *t) {
  pthread_attr_t attr;
  void *addr;
  size_t size;
  if (pthread_getattr_np(pthread_self(), &attr) != 0) return;
  if (pthread_attr_getstack(&attr, &addr, &size) == 0 && size >= 16) {
    t->stack_lo = (uintptr_t)addr;
    t->stack_hi = (uintptr_t)addr + size;
  }
  pthread_attr_destroy(&attr);
}

void fl_allocs_thread_enter(void) {
  fl__allocs_prepare_process();
  thread_state_t *t = &T;
  t->guard = 1;
  if (!t->c || t->c == &fl__allocs_shared_counters) own_counters(t);
  if (!t->tid) t->tid = (int)syscall(SYS_gettid);
  if (!t->rng) seed(t);
  if (!t->stack_hi) note_stack(t);
  bool by_fp;
  unwind(t, 0, &by_fp); /* creates libunwind's per-thread caches */
  t->guard = 0;
}

void fl_allocs_thread_exit(void) {
  thread_state_t *t = &T;
  counters_t *c = t->c;
  /* Later calls on this thread (TLS destructors) share the atomic block. */
  t->c = &fl__allocs_shared_counters;
  if (c && c != &fl__allocs_shared_counters) __atomic_store_n(&c->owned, 0, __ATOMIC_RELEASE);
}
