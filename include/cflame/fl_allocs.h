/* SPDX-License-Identifier: BSD-3-Clause */
/* fl_allocs: an in-process recorder of memory allocations.
 *
 * Runs inside the profiled process (cflame's worker), which interposes the
 * allocator's entry points (malloc, calloc, realloc, reallocarray, free,
 * posix_memalign, aligned_alloc, memalign, valloc, pvalloc: see
 * flame/sample/fl_allocs_entry.c) and calls the hooks below around glibc's own.
 * While recording, each allocation call is sampled with probability
 * sample_rate (1: every one, exactly); a sampled one is unwound and
 * appended to a preallocated buffer the caller provides (cflame maps a
 * file, so the records survive a crash and the kernel can read them).
 *
 * Unwinding. A sampled allocation is unwound with libunwind
 * (unw_backtrace), 150-250 ns a stack, unless it was called from code the
 * caller registered as compiled with frame pointers
 * (fl_allocs_add_fp_range: cflame registers the cells compiled with
 * -fno-omit-frame-pointer, the default, or -O0). Then, on x86-64, the
 * recorder walks the chain of saved frame pointers instead, a few ns a
 * frame, as long as every return address on the way is in a registered
 * range, until one is in the base range (fl_allocs_set_base_range: the
 * code below which the stack is the profiler's own machinery, cflame's
 * worker, which readers cut anyway); that return address is the last one
 * recorded. Each step checks that the frame pointer is 16-byte aligned
 * and lies within the thread's stack (taken by fl_allocs_thread_enter),
 * above the previous one, so the walk reads only the live stack and
 * cannot fault. Any other return address (a libc function such as qsort
 * calling back into a cell, a library without frame pointers), an invalid
 * frame pointer, a thread that did not call fl_allocs_thread_enter, or a
 * stack other than the thread's own (a signal's alternate stack, a
 * coroutine's) makes the whole stack come from libunwind. Either way the
 * record holds the same return addresses, up to the first one in the base
 * range. The header's fp_records counts the records the walk made.
 *
 * When a sampled block is freed (or realloc'd away) while
 * recording, its record is marked freed, so a reader can tell what was
 * still allocated when recording stopped (live=true).
 *
 * The recording path allocates nothing and takes no lock of its own:
 * records are reserved with an atomic compare-and-swap; the sampled blocks
 * are found again on free through a lock-free open-addressing table
 * preallocated with the buffer (behind a small filter of counters, so that
 * the free of an unsampled block costs one load of an 8 KiB array);
 * per-thread state (the sampling countdown and its random generator, the
 * counters, the recursion guard, the unwinding buffer) is in initial-exec
 * TLS; libunwind is warmed up by fl_allocs_thread_enter on every thread.
 * Calls made while the recorder itself runs on a thread (libunwind's own
 * allocations, on a thread that was not warmed up) pass through
 * unrecorded. One exception, shared
 * with every user of libunwind outside a signal handler: the first unwind
 * through code libunwind has not cached yet looks its unwind tables up with
 * dl_iterate_phdr, which takes the loader's (recursive) list lock for the
 * lookup; no other lock is taken under it, so it cannot deadlock.
 *
 * Sampling is per call, as Julia's Profile.Allocs does: each thread
 * counts its allocation calls up to the next sample, a geometrically
 * distributed number of calls away, which is the same as an independent
 * draw per call. That count is the only thing an unsampled call changes,
 * and it is exact: the header's calls says how many allocation calls were
 * made while recording, whatever the sample rate. A call is counted when
 * it succeeds. A failed one (NULL) is counted when the interposer passed
 * it inline, counted before the C library ran it and its result never
 * seen: below sample_rate 1 that is every failed malloc, calloc or aligned
 * allocation except one at a sample point (whose sample goes to the
 * thread's next successful call) or a thread's first call of a run;
 * realloc and reallocarray always take the hook, and at sample_rate 1
 * every call does, so their failures are never counted.
 * Neither the bytes of unsampled calls nor their releases are counted: it
 * would cost every call more than the count. The header has no total of
 * bytes requested (the records' bytes are that total at sample_rate 1, and
 * divided by sample_rate its estimate below), and its frees counts the
 * sampled blocks released while recording: the records marked freed.
 *
 * realloc is a release of the old block and an allocation of the new size
 * (kind FL_ALLOC_REALLOC), whether the block moved or not: the old block is
 * unregistered before glibc's realloc runs (another thread may get its
 * address as soon as realloc released it) and registered again if realloc
 * fails. realloc(NULL, n) is an allocation of kind FL_ALLOC_REALLOC;
 * realloc(p, 0) a release.
 *
 * Buffer layout (64-bit words, native endianness):
 *   header (FL_ALLOCS_HEADER_WORDS words, fl_allocs_header_t);
 *   the table of sampled blocks: table_slots slots of 2 words (the block's
 *     address, 0 for a slot never used, 1 for a slot whose block was
 *     freed; the position of its record, in words from the first record);
 *   the filter: FL_ALLOCS_FILTER_BUCKETS 16-bit counters of the table's
 *     live entries by hash bucket (FL_ALLOCS_FILTER_WORDS words);
 *   records (capacity_words words):
 *     word 0 = n_pcs << 32 | tid (written last, with release; a record
 *              reserved but never completed, after a crash, reads n_pcs << 32
 *              with tid 0 and is skipped; 0 ends the buffer early),
 *     word 1 = bytes requested,
 *     word 2 = the block's address,
 *     word 3 = kind (FL_ALLOC_*, the low 8 bits) | FL_ALLOCS_FREED when
 *              freed while recording (set atomically by the release); bits
 *              32-62 are the recorder's (the block's table slot),
 *     word 4 = tag (what the profiled code was: cflame's cell number),
 *     then n_pcs >= 1 return addresses, the leaf first: pcs[0] is the
 *     return address into the function that called the allocation function
 *     (for strdup, fopen and the like that is the C library's strdup, whose
 *     caller is pcs[1]); the recorder's and the interposer's own frames are
 *     not recorded. Every address, the first included, is a return address
 *     (symbolize address - 1 for the line of the call). */
#ifndef FL_ALLOCS_H
#define FL_ALLOCS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "cflame/fl_api.h"

CFLAME_BEGIN_DECLS

#define FL_ALLOCS_MAGIC 0x32636f6c6c61666cULL /* "flalloc2" */
#define FL_ALLOCS_HEADER_WORDS 32
#define FL_ALLOCS_RECORD_WORDS 5 /* before the addresses */
#define FL_ALLOCS_MAX_DEPTH 256
#define FL_ALLOCS_FREED (1ull << 63)
#define FL_ALLOCS_FILTER_BUCKETS 4096
#define FL_ALLOCS_FILTER_WORDS (FL_ALLOCS_FILTER_BUCKETS * 2 / 8)
#define FL_ALLOCS_MIN_TABLE_SLOTS 16
#define FL_ALLOCS_MAX_TABLE_SLOTS (1u << 27)

enum {
  FL_ALLOC_MALLOC = 1,
  FL_ALLOC_CALLOC = 2,
  FL_ALLOC_REALLOC = 3,  /* realloc, reallocarray */
  FL_ALLOC_MEMALIGN = 4, /* posix_memalign, aligned_alloc, memalign, valloc, pvalloc */
};

typedef struct fl_allocs_header {
  uint64_t magic;
  uint64_t capacity_words;   /* words of records (after the table and filter) */
  uint64_t used_words;       /* reserved so far (atomic; never above capacity_words) */
  uint64_t table_slots;      /* slots of the table of sampled blocks */
  uint64_t records;          /* records written (at stop) */
  uint64_t dropped;          /* sampled allocations that did not fit (buffer or table full) */
  uint64_t sample_rate_bits; /* the double sample_rate, as its bits */
  uint64_t calls;            /* allocation calls while recording, sampled or not (see
                                Sampling above: exact; failed ones below rate 1; at stop) */
  uint64_t frees;            /* sampled blocks released while recording (free, realloc,
                                realloc(p, 0)): the records marked freed (at stop) */
  uint64_t tag;              /* the tag of the last fl_allocs_start */
  uint64_t fp_records;       /* records whose stack the frame-pointer walk took (see
                                Unwinding above; at stop); the others are libunwind's */
  uint64_t space_errno;      /* the errno with which the buffer's file could not grow
                                (fl_allocs_use_file; ENOSPC: its file system is full), or 0 */
  uint64_t reserved[FL_ALLOCS_HEADER_WORDS - 12];
} fl_allocs_header_t;

/* Bytes of buffer for n_words of records and a table of table_slots
 * slots. */
size_t fl_allocs_buffer_bytes(size_t n_words, size_t table_slots);

/* The table slots for runs at sample_rate (0 < sample_rate <= 1) of code
 * that may have live_blocks allocations alive at once: twice the sampled
 * blocks expected alive among them (live_blocks * sample_rate), rounded up
 * to a power of two, at least FL_ALLOCS_RUN_MIN_TABLE_SLOTS (room for the
 * binomial spread of a few) and at most FL_ALLOCS_MAX_TABLE_SLOTS. A
 * smaller table is fewer cache and TLB misses for each sampled call and
 * its free: at sample_rate 0.01 the table for 2^19 blocks is 256 KiB
 * instead of 16 MiB. */
#define FL_ALLOCS_RUN_MIN_TABLE_SLOTS 1024
size_t fl_allocs_table_slots(uint64_t live_blocks, double sample_rate);

/* Takes buf (bytes long, 8-byte aligned) as the buffer, with a table of
 * table_slots slots (a power of two from FL_ALLOCS_MIN_TABLE_SLOTS to
 * FL_ALLOCS_MAX_TABLE_SLOTS; at least twice as many as sampled blocks may
 * be live at once), clears it and writes its header. Call while not
 * recording, before the first start and again to switch buffers. Prepares
 * the process on first use (as fl_allocs_thread_enter does). Returns 0 or
 * -1 with err. */
int fl_allocs_init(void *buf, size_t bytes, size_t table_slots, char *err, size_t err_size);
/* The same for a buffer that is all zeros already (a new file, mapped):
 * it is not cleared, so that only the pages the table and the records use
 * are ever touched, however large the buffer. */
int fl_allocs_init_zeroed(void *buf, size_t bytes, size_t table_slots, char *err, size_t err_size);

/* Says that the buffer just given is a shared mapping of the file fd, of
 * which the first allocated bytes have blocks (posix_fallocate), as
 * fl_sampler_use_file does for samples: records are written only into
 * allocated space, grown a chunk ahead of use, and a growth the file
 * system refuses counts the buffer as full (header.space_errno). allocated
 * is the end of the allocated part (at least fl_allocs_buffer_bytes(0,
 * table_slots)): the header, the filter and the records below it have
 * blocks. The table is the caller's to allocate or not: written at random
 * slots, it cannot grow in order (cflame record leaves it sparse). Returns
 * 0, or -1 with err. */
int fl_allocs_use_file(int fd, size_t allocated, char *err, size_t err_size);

/* Gives blocks (posix_fallocate) to what a buffer file of bytes, with a
 * table of table_slots, needs before fl_allocs_init_zeroed writes to it:
 * the header, the filter and the first start_words of records, not the
 * table. Sets *end to the allocated end, for fl_allocs_use_file. Returns 0
 * or an errno (ENOSPC: the file system is full). */
int fl_allocs_allocate_start(int fd, size_t bytes, size_t table_slots, size_t start_words,
                             size_t *end);

/* Starts recording on every thread (0 < sample_rate <= 1), records
 * carrying tag. Each start begins afresh: the previous run's records,
 * table and counters are cleared. Returns 0 or -1 with err (no buffer,
 * already recording, bad rate). */
int fl_allocs_start(double sample_rate, uint64_t tag, char *err, size_t err_size);

/* Stops recording; returns when no thread writes to the buffer any more,
 * after summing the threads' counters into the header (calls, frees,
 * records, fp_records). Returns the number of records written since
 * start. Counting calls is per thread and unsynchronized: a call that
 * another thread is making at the very moment of stop may be left out of
 * calls (never out of the records). */
uint64_t fl_allocs_stop(void);

bool fl_allocs_recording(void);

/* Registers [lo, hi) as code compiled with frame pointers, whose frames
 * the recorder may unwind by walking the frame-pointer chain (see
 * Unwinding above): the executable segments of an object whose every
 * function keeps its frame pointer in rbp (gcc and clang with
 * -fno-omit-frame-pointer, or -O0). A range registered by mistake (code
 * without frame pointers) can make records lose frames. Ranges are kept
 * until the process ends; registering a range again does nothing. Call
 * while not recording. Returns 0, or -1 when recording, when [lo, hi) is
 * empty or overlaps another range, or when 16,384 ranges are registered
 * (then stacks through it come from libunwind). */
int fl_allocs_add_fp_range(uintptr_t lo, uintptr_t hi);

/* Sets [lo, hi) as the base range (none at first; lo == hi: none again):
 * code below whose frames the stack is of no interest (cflame's worker,
 * which calls the cells; the kernel cuts stacks at its first frame). The
 * frame-pointer walk ends at the first return address in it, which is
 * recorded, and calls the stack complete; without a base range the walk
 * never completes and every stack comes from libunwind. Call while not
 * recording. */
void fl_allocs_set_base_range(uintptr_t lo, uintptr_t hi);

/* Warms up the calling thread (libunwind's per-thread caches, this
 * module's per-thread state, the bounds of its stack for the
 * frame-pointer walk) so that its first recorded allocation neither
 * allocates nor locks. Call from each thread's start (cflame's
 * pthread_create wrapper does) and on the main thread; threads that do not
 * are still recorded, their first record paying the warm-up (libunwind
 * then allocates, unrecorded, and takes its own locks once), and are
 * always unwound by libunwind.
 * fl_allocs_thread_exit, at a thread's end, hands its counters on to later
 * threads (at most 1,024 threads have counters of their own at a time; the
 * others share atomic ones). After fork, the child records nothing. */
void fl_allocs_thread_enter(void);
void fl_allocs_thread_exit(void);

/* ---- internals the interposer inlines: the fast paths ----
 *
 * While not recording, an interposed entry point is one load
 * (fl_allocs_active) and a tail call to the C library's function, with no
 * frame of its own on the stack (so CPU profiles see the cell call the C
 * library's allocator directly). While recording, an allocation call that
 * is not sampled only counts itself towards the thread's next sample
 * (fl__allocs_pass_alloc: a load, a compare and a store to the thread's own
 * cache line, no atomic read-modify-write, no call), and a free only
 * checks that the block cannot be a sampled one (fl__allocs_pass_free: one
 * load from the filter), before the same tail call; everything else (the
 * sampled call, the free of a block whose filter bucket is not empty, a
 * thread's first call, a new run, realloc, a call inside the recorder)
 * takes the hooks below. */

/* One thread's counters, on a cache line of its own, written by the owner
 * only (atomically in the shared block): its allocation calls, which are
 * also its countdown to the next sample (the owner's calls go on inline
 * while below sample_at), the sampled blocks it released, its records and
 * those the frame-pointer walk made. sample_at is zeroed by each start, so
 * that the owner's next call takes the hook and draws a gap at the new
 * rate; the owner writes it only on a slow path that stop waits for, so a
 * start's zero is never overwritten by a gap of the run before. The
 * counts only grow: start and stop sum them over the blocks. */
typedef struct fl__allocs_counters {
  uint64_t calls;      /* allocation calls counted */
  uint64_t sample_at;  /* the calls count the next sampled call brings it to; 0: draw
                          (always 0 in the shared block, whose threads take the hook) */
  uint64_t frees;      /* sampled blocks released */
  uint64_t records;    /* records written */
  uint64_t fp_records; /* records the frame-pointer walk unwound */
  int owned;           /* atomic: a thread owns the block */
  int busy;            /* atomic: the owner is on a slow path (shared: how many are) */
  bool shared;         /* the block of threads without one of their own */
} __attribute__((aligned(64))) fl__allocs_counters_t;

/* The calling thread's state (initial-exec TLS). */
typedef struct fl__allocs_thread {
  fl__allocs_counters_t *c; /* NULL until the thread's first counted call */
  uint64_t skip;            /* the countdown of a thread in the shared block: calls up to
                               and including its next sampled one */
  uint64_t epoch;           /* the run that skip was drawn for */
  int guard;                /* on a slow path: allocations pass through */
  int tid;
  uint64_t rng;                 /* xorshift64* state; 0 until seeded */
  uintptr_t stack_lo, stack_hi; /* the thread's stack; 0, 0 until fl_allocs_thread_enter */
  void *pcs[FL_ALLOCS_MAX_DEPTH + 16];
} fl__allocs_thread_t;

/* What every call reads: written by start and stop (and a forked child). */
typedef struct fl__allocs_global {
  int recording;    /* atomic */
  uint64_t epoch;   /* bumped by each start */
  uint16_t *filter; /* live table entries by bucket (in the buffer) */
} __attribute__((aligned(64))) fl__allocs_global_t;

/* Inlined into the interposer, which may run before a sanitizer's
 * runtime is set up: never instrumented. */
#define FL__ALLOCS_INLINE \
  static inline __attribute__((always_inline, no_sanitize("address", "undefined")))

extern fl__allocs_global_t fl__allocs;
extern __thread fl__allocs_thread_t fl__allocs_thread __attribute__((tls_model("initial-exec")));

FL__ALLOCS_INLINE uint64_t fl__allocs_hash(const void *p) {
  return ((uint64_t)(uintptr_t)p >> 4) * 0x9E3779B97F4A7C15ULL;
}

/* The filter bucket of hash h: its top 12 bits. */
#define FL__ALLOCS_BUCKET(h) ((unsigned)((h) >> 52))

/* Whether recording is on. */
FL__ALLOCS_INLINE bool fl_allocs_active(void) {
  return __atomic_load_n(&fl__allocs.recording, __ATOMIC_RELAXED) != 0;
}

/* While recording: counts an allocation call towards the thread's next
 * sample and returns true when it is not that sample; false when the call
 * takes fl_allocs_on_alloc instead (then nothing is counted here: the hook
 * counts it if it succeeds). Counted here before the C library runs it, a
 * call that fails stays counted, and so does an allocation libunwind makes
 * inside the recorder on a thread that was not warmed up. */
FL__ALLOCS_INLINE bool fl__allocs_pass_alloc(void) {
  fl__allocs_counters_t *c = fl__allocs_thread.c;
  if (__builtin_expect(!c, 0)) return false;
  uint64_t calls = __atomic_load_n(&c->calls, __ATOMIC_RELAXED) + 1;
  if (__builtin_expect(calls >= __atomic_load_n(&c->sample_at, __ATOMIC_RELAXED), 0)) return false;
  __atomic_store_n(&c->calls, calls, __ATOMIC_RELAXED);
  return true;
}

/* While recording: returns true when ptr cannot be a sampled block (its
 * filter bucket is empty, the free of NULL included unless bucket 0 is
 * not), false when the release takes fl_allocs_on_free instead. Nothing is
 * counted: frees counts sampled blocks only. */
FL__ALLOCS_INLINE bool fl__allocs_pass_free(const void *ptr) {
  uint64_t h = fl__allocs_hash(ptr);
  return __atomic_load_n(&fl__allocs.filter[FL__ALLOCS_BUCKET(h)], __ATOMIC_RELAXED) == 0;
}

/* The interposer's hooks. caller is the allocation function's return
 * address (__builtin_return_address(0)): the stack is recorded from there.
 * on_alloc after a successful allocation of bytes at ptr (kind FL_ALLOC_*;
 * ptr NULL: nothing happens), on_free before the release of ptr. For
 * realloc(old, n): on_realloc_begin(old) before glibc's realloc (it
 * unregisters old and returns a token), then on_realloc_end with realloc's
 * result. Each is one load when not recording. */
void fl_allocs_on_alloc(void *ptr, size_t bytes, int kind, const void *caller);
void fl_allocs_on_free(void *ptr);
uint64_t fl_allocs_on_realloc_begin(void *old);
void fl_allocs_on_realloc_end(void *old, uint64_t token, void *ptr, size_t bytes,
                              const void *caller);

/* For tests: n gaps (calls up to and including the next sampled one) drawn
 * as the recorder draws them at sample_rate, from the generator seeded
 * with seed, into out. */
void fl__allocs_draw_gaps(double sample_rate, uint64_t seed, uint64_t *out, size_t n);

/* For tests: makes every later slow path fence and stop skip membarrier
 * (the protocol of a kernel without it). Call while not recording. */
void fl__allocs_no_membarrier(void);

/* ---- reading a buffer (in any process) ---- */

typedef struct fl_allocs_record {
  int tid;
  uint64_t bytes;
  uint64_t addr;
  int kind;   /* FL_ALLOC_* */
  bool freed; /* freed while recording */
  uint64_t tag;
  const uint64_t *pcs; /* return addresses, leaf first; borrowed */
  size_t n_pcs;
} fl_allocs_record_t;

/* Walks the records. *pos starts at 0. Returns 1 with *rec, 0 at the end,
 * -1 if the buffer is corrupt. */
int fl_allocs_next(const void *buf, size_t bytes, size_t *pos, fl_allocs_record_t *rec);

CFLAME_END_DECLS

#endif
