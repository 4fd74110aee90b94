/* fl_sampler: an in-process sampling profiler of CPU time.
 *
 * Runs inside the profiled process (cflame's worker). Every thread that is
 * registered gets a timer of its own CPU time; when it fires, a signal
 * handler on that thread unwinds its stack with libunwind and appends a
 * record to a preallocated buffer. The buffer is memory the caller provides
 * (cflame maps a file, so that the samples survive a crash of the process
 * and the kernel can read them).
 *
 * What it guarantees (and tests):
 *  - the interval is honoured in CPU time: each record carries the CPU time
 *    its thread used since the previous record, and its weight in intervals
 *    (with the remainder carried to the next record), so totals are right
 *    even where the kernel fires CPU timers only on its tick;
 *  - timers measure CPU time, so a thread that sleeps or blocks is never
 *    signalled: sampling causes no EINTR in the cell's sleeps and reads;
 *  - each interval is jittered (uniform within +-25%) against aliasing;
 *  - the handler allocates nothing, takes no lock and does not enter the
 *    dynamic loader (libunwind is warmed up on each thread before its timer
 *    starts); records are reserved with one atomic add.
 *
 * Buffer layout (64-bit words, native endianness):
 *   header (FL_SAMPLER_HEADER_WORDS words, fl_sampler_header_t), then
 *   records: word 0 = n_pcs << 32 | tid, word 1 = weight (intervals),
 *            word 2 = CPU ns since the thread's previous record,
 *            word 3 = tag (what the profiled code was: cflame's cell number),
 *            then n_pcs instruction addresses, the leaf first; every
 *            address but the first is a return address.
 *   A record with word 0 == 0 ends the buffer early (a reservation that was
 *   never filled, e.g. after a crash). */
#ifndef FL_SAMPLER_H
#define FL_SAMPLER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define FL_SAMPLER_MAGIC 0x31656c706d61736cULL /* "lsampl e1" */
#define FL_SAMPLER_HEADER_WORDS 16
#define FL_SAMPLER_RECORD_WORDS 4 /* before the addresses */
#define FL_SAMPLER_MAX_DEPTH 512

typedef struct fl_sampler_header {
  uint64_t magic;
  uint64_t capacity_words; /* words after the header */
  uint64_t used_words;     /* reserved so far (updated atomically) */
  uint64_t dropped;        /* samples that did not fit (buffer full) */
  uint64_t interval_ns;
  uint64_t samples;        /* records written */
  uint64_t source;         /* FL_SAMPLER_SOURCE_* of the timers used */
  uint64_t reserved[FL_SAMPLER_HEADER_WORDS - 7];
} fl_sampler_header_t;

enum {
  FL_SAMPLER_SOURCE_NONE = 0,
  FL_SAMPLER_SOURCE_PERF_TASK_CLOCK = 1, /* perf_event task-clock: high resolution */
  FL_SAMPLER_SOURCE_CPU_TIMER = 2,       /* timer_create(CLOCK_THREAD_CPUTIME_ID) */
};

/* Bytes of buffer needed for n_words of records. */
size_t fl_sampler_buffer_bytes(size_t n_words);

/* Prepares the process: installs the signal handler, warms up libunwind on
 * the calling thread, and takes buf (bytes long, zero-filled or not) as the
 * buffer, writing its header. Call once, before any thread is registered.
 * Returns 0, or -1 with err. */
int fl_sampler_init(void *buf, size_t bytes, char *err, size_t err_size);

/* Clears the buffer for a new run. */
void fl_sampler_reset(void);

/* Registers the calling thread (warming up libunwind on it). Threads
 * registered while sampling is on start being sampled at once. Call from
 * each thread's start (cflame wraps pthread_create to do it) and
 * fl_sampler_thread_exit before it ends. */
void fl_sampler_thread_enter(void);
void fl_sampler_thread_exit(void);

/* Starts sampling every registered thread every interval_ns of its CPU
 * time; records carry tag. Returns 0, or -1 with err (no timer source). */
int fl_sampler_start(uint64_t interval_ns, uint64_t tag, char *err, size_t err_size);

/* Stops sampling (all threads). Returns the number of samples recorded
 * since start. */
uint64_t fl_sampler_stop(void);

bool fl_sampler_running(void);

/* ---- reading a buffer (in any process) ---- */

typedef struct fl_sampler_record {
  int tid;
  uint64_t weight;
  uint64_t cpu_ns;
  uint64_t tag;
  const uint64_t *pcs; /* leaf first; borrowed from the buffer */
  size_t n_pcs;
} fl_sampler_record_t;

/* Walks the records of a buffer (as written by fl_sampler). *pos starts at
 * 0. Returns 1 with *rec filled, 0 at the end, -1 if the buffer is corrupt. */
int fl_sampler_next(const void *buf, size_t bytes, size_t *pos, fl_sampler_record_t *rec);

#endif
