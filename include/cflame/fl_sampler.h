/* SPDX-License-Identifier: BSD-3-Clause */
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
 *  - the interval is honoured in CPU time: each record carries its weight
 *    in intervals, from the thread's CPU clock (rounded to the nearest, at
 *    least 1, the remainder carried to the thread's next record), so
 *    totals are right even where the kernel fires CPU timers only on its
 *    tick;
 *  - timers measure CPU time and signal only after a system call returns,
 *    so a thread that sleeps or blocks is never interrupted: sampling
 *    causes no EINTR in the cell's sleeps, reads and polls;
 *  - intervals are jittered against aliasing: drawn uniformly within
 *    +-25% of interval_ns (perf events keep one for a random run of
 *    samples, 32 on average, as changing it costs a timer restart);
 *  - the handler allocates nothing, takes no lock and does not enter the
 *    dynamic loader (libunwind is warmed up on each thread before its timer
 *    starts; this module interposes dl_iterate_phdr, see fl_sampler.c);
 *    records are reserved with one atomic compare-and-swap, so used_words
 *    never passes capacity_words.
 *
 * Signals: SIGTRAP (perf events with attr.sigtrap, Linux 6.1 and later; a
 * SIGTRAP that is not the sampler's goes to the handler installed before
 * fl_sampler_init, or ends the process as it would have) and SIGPROF
 * (older kernels, and the CPU-timer fallback). A program must not install
 * its own handlers for them after fl_sampler_init; a thread that blocks
 * the one it is sampled with is not sampled meanwhile
 * (fl_sampler_interference says both). The handler runs on the thread's
 * alternate signal stack (SA_ONSTACK): each registered thread that has
 * none is given one of 64 KiB, freed by fl_sampler_thread_exit.
 *
 * Descriptors: each sampled thread's perf event has one, moved to 1024 or
 * above (half the limit of open files where that is lower), and the
 * event's first page is mapped, which keeps the event running when the
 * program closes the descriptor or dup2s over it.
 *
 * Buffer layout (64-bit words, native endianness):
 *   header (FL_SAMPLER_HEADER_WORDS words, fl_sampler_header_t), then
 *   records: word 0 = n_pcs << 32 | tid, word 1 = weight (intervals),
 *            word 2 = CPU ns since the thread's previous record that
 *            measured it (0 when this one did not: see fl_sampler.c),
 *            word 3 = tag (what the profiled code was: cflame's cell number),
 *            word 4 = CLOCK_MONOTONIC ns when the signal was handled,
 *            then n_pcs instruction addresses, the leaf first; every
 *            address but the first is a return address.
 *   A wait (clock wall): word 0 = wait << 48 | n_pcs << 32 | tid, where
 *            wait (1 to FL_SAMPLER_N_WAITS - 1) names the call the thread
 *            waited in; word 1 = its off-CPU time in intervals (the wall
 *            time of the call less the CPU time the thread spent in it,
 *            rounded as CPU records' are, the remainder carried to the
 *            thread's next wait); word 2 = that time in ns, this wait's own;
 *            words 3-4 as above (word 4: when the call returned); then the
 *            return addresses of the call's caller and its callers (the
 *            call itself is the wait). A CPU sample's wait is 0.
 *   Runnable time (clock wall): a wait record whose wait is
 *            FL_SAMPLER_WAIT_RUNNABLE: the time the thread spent runnable
 *            but not running, waiting for a CPU (its run delay, from
 *            /proc/self/task/TID/schedstat), outside the waits recorded,
 *            since its previous reading; weighed and carried as waits are,
 *            in records of its own; word 2 that time in ns; word 4 where
 *            the intervals of the CPU record it follows begin, so that it
 *            ends as that record's time begins (when sampling stopped: then).
 *            Its stack is the one the thread was running when the delay
 *            was read: that CPU record's, the interrupted instruction
 *            stored plus 1, so that every address reads as a return
 *            address, as a wait's do.
 *   A thread's name: word 0 = FL_SAMPLER_NAME_RECORD << 32 | tid, words 1-2
 *            = the name (NUL-padded, as prctl(PR_GET_NAME) gives it), word 3
 *            = tag, word 4 = when it was read. The sampler writes one for
 *            every thread sampled in the run when sampling stops, or as the
 *            thread unregisters while it runs (never in the signal handler).
 *   A record with word 0 == 0 ends the buffer early (a reservation that was
 *   never filled, e.g. after a crash).
 *
 * Reading while the sampler writes (the kernel's live graphs): a record is
 * committed by one store-release of its word 0, after every other word of
 * it is written, into a buffer whose words past used_words are zero; a
 * reader that load-acquires used_words and then each record's word 0
 * (fl_sampler_next does) sees whole records only, and stops at the first
 * reservation not yet filled: what it reads is a prefix of what the run
 * will hold. It takes no lock and stops nothing. The one word changed
 * after its commit is the weight of each thread's last record, raised once
 * by fl_sampler_stop (the CPU time since that sample): a reader during
 * the run sees it before that. */
#ifndef FL_SAMPLER_H
#define FL_SAMPLER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "cflame/fl_api.h"

CFLAME_BEGIN_DECLS

#define FL_SAMPLER_MAGIC 0x32656c706d61736cULL /* "lsample2" */
#define FL_SAMPLER_HEADER_WORDS 16
#define FL_SAMPLER_RECORD_WORDS 5          /* before the addresses */
#define FL_SAMPLER_NAME_RECORD 0xffffffffu /* word 0's high half: a thread's name */
#define FL_SAMPLER_MAX_DEPTH 512

typedef struct fl_sampler_header {
  uint64_t magic;
  uint64_t capacity_words; /* words after the header */
  uint64_t used_words;     /* reserved so far (updated atomically) */
  uint64_t dropped;        /* samples that did not fit (buffer full) */
  uint64_t interval_ns;
  uint64_t samples; /* records written */
  uint64_t source;  /* FL_SAMPLER_SOURCE_* of the timers used */
  uint64_t clock;   /* FL_SAMPLER_CLOCK_* of the run */
  /* FL_SAMPLER_CLOCK_EVENT: the perf event counted (perf_event_attr's
   * type and config), and the occurrences a sample stands for. */
  uint64_t event_type, event_config, event_period;
  /* The errno (ENOSPC: its file system is full) with which the buffer's
   * file could not grow (fl_sampler_use_file): the samples in dropped
   * after it were lost for want of disk, not of buffer. 0 if none. */
  uint64_t space_errno;
  uint64_t reserved[FL_SAMPLER_HEADER_WORDS - 12];
} fl_sampler_header_t;

/* What a run measures: CPU time alone, or wall time, the waits in the
 * calls of FL_SAMPLER_WAIT_CALLS recorded as off-CPU time beside it. */
typedef enum fl_sampler_clock {
  FL_SAMPLER_CLOCK_CPU = 0,
  FL_SAMPLER_CLOCK_WALL = 1,
  FL_SAMPLER_CLOCK_EVENT = 2, /* set by fl_sampler_set_event */
} fl_sampler_clock_t;

/* The calls a thread waits in, each with what it waits for: the functions
 * the recorders interpose (flame/sample/fl__waits.c) to time, by name. A wait
 * record's wait is 1 + the call's place in this list. */
#define FL_SAMPLER_WAIT_CALLS(X)                                                                   \
  X(sleep, "sleep")                                                                                \
  X(usleep, "sleep") X(nanosleep, "sleep") X(clock_nanosleep, "sleep") X(poll, "poll")             \
      X(ppoll, "poll") X(select, "poll") X(pselect, "poll") X(epoll_wait, "poll")                  \
          X(epoll_pwait, "poll") X(read, "read") X(readv, "read") X(pread, "read") X(recv, "read") \
              X(recvfrom, "read") X(recvmsg, "read") X(write, "write") X(writev, "write")          \
                  X(send, "write") X(sendto, "write") X(sendmsg, "write") X(accept, "accept")      \
                      X(accept4, "accept") X(connect, "connect") X(wait, "waitpid")                \
                          X(waitpid, "waitpid") X(wait4, "waitpid") X(waitid, "waitpid")           \
                              X(pthread_mutex_lock, "futex") X(pthread_cond_wait, "futex")         \
                                  X(pthread_cond_timedwait, "futex") X(pthread_join, "futex")      \
                                      X(pthread_rwlock_rdlock, "futex")                            \
                                          X(pthread_rwlock_wrlock, "futex") X(sem_wait, "futex")   \
                                              X(sem_timedwait, "futex") X(pause, "signal")         \
                                                  X(sigsuspend, "signal") X(sigwaitinfo, "signal") \
                                                      X(sigtimedwait, "signal")

enum {
  FL_SAMPLER_WAIT_NONE = 0,
#define FL_SAMPLER_WAIT_ID(call, reason) FL_SAMPLER_WAIT_##call,
  FL_SAMPLER_WAIT_CALLS(FL_SAMPLER_WAIT_ID)
#undef FL_SAMPLER_WAIT_ID
  /* Not a call: the thread was runnable, waiting for a CPU. */
  FL_SAMPLER_WAIT_RUNNABLE,
  /* Not a call: the thread's wall time that neither its CPU time, its run
   * delay nor its waits in the calls above account for. It waited where
   * no call is wrapped (a wait inside the C library, a raw system call, a
   * page fault that reads the disk) or, on a virtual machine, the host
   * took its CPU, which Linux counts in neither its CPU time nor its run
   * delay. */
  FL_SAMPLER_WAIT_OTHER,
  FL_SAMPLER_N_WAITS
};

/* The function a wait record's wait names ("nanosleep") and what it waits
 * for ("sleep"); NULL for 0 or an unknown wait. FL_SAMPLER_WAIT_RUNNABLE
 * and FL_SAMPLER_WAIT_OTHER name no function (NULL) and wait for
 * "runnable" and "other". */
const char *fl_sampler_wait_call(unsigned wait);
const char *fl_sampler_wait_reason(unsigned wait);

enum {
  FL_SAMPLER_SOURCE_NONE = 0,
  FL_SAMPLER_SOURCE_PERF_TASK_CLOCK = 1, /* perf_event task-clock: high resolution */
  FL_SAMPLER_SOURCE_CPU_TIMER = 2,       /* timer_create(CLOCK_THREAD_CPUTIME_ID) */
  FL_SAMPLER_SOURCE_PTRACE = 3,          /* another process's threads stopped by ptrace
                                            (fl_attach.h) */
};

/* Bytes of buffer needed for n_words of records. */
size_t fl_sampler_buffer_bytes(size_t n_words);

/* Prepares the process: installs the signal handlers, warms up libunwind on
 * the calling thread and registers it, and takes buf (bytes long, 8-byte
 * aligned, zero-filled or not: it is cleared; a buffer that a sampler
 * wrote, as its header says, has only its used words cleared) as the
 * buffer, writing its header. buf may be NULL (bytes 0): the process is prepared and threads
 * can register, but fl_sampler_start fails until a buffer is given. Call
 * it first before any thread registers; it may be called again while not
 * running, to switch buffers (registered threads stay registered).
 * Returns 0, or -1 with err. */
int fl_sampler_init(void *buf, size_t bytes, char *err, size_t err_size);
/* The same for a buffer that is all zeros already (a new file, mapped):
 * it is not cleared, so that only the pages records are written to are
 * ever touched, however large the buffer. */
int fl_sampler_init_zeroed(void *buf, size_t bytes, char *err, size_t err_size);

/* Says that the buffer just given is a shared mapping of the file fd
 * (from its offset 0; the sampler keeps fd open until the next init),
 * whose first allocated bytes the file system has given blocks to
 * (posix_fallocate). The handler then writes only into allocated space,
 * growing it with fallocate a chunk (1 MiB) ahead of use, so that a file
 * system that fills up never raises SIGBUS: a growth that fails counts the
 * buffer as full (header.dropped, header.space_errno). allocated must
 * cover the header. Returns 0, or -1 with err. */
int fl_sampler_use_file(int fd, size_t allocated, char *err, size_t err_size);

/* Clears the buffer for a new run. */
void fl_sampler_reset(void);

/* Registers the calling thread (warming up libunwind on it: one signal to
 * itself). Threads registered while sampling is on start being sampled at
 * once. Call from each thread's start (cflame wraps pthread_create to do
 * it) and fl_sampler_thread_exit before it ends. Does nothing before
 * fl_sampler_init, or for a thread already registered; at most 1,024
 * threads are registered at a time (others are not sampled). After fork,
 * the child has only the forking thread registered, and nothing runs. */
void fl_sampler_thread_enter(void);
void fl_sampler_thread_exit(void);

/* Starts sampling every registered thread every interval_ns (at least
 * 10,000) of its CPU time; records carry tag. The header's source says
 * which timers run. Returns 0, or -1 with err (no buffer, or no timer
 * source). CFLAME_SAMPLER_SOURCE=perf-async or =timer in the environment
 * forces a fallback source (for tests). */
int fl_sampler_start(uint64_t interval_ns, uint64_t tag, char *err, size_t err_size);

/* Stops sampling (all threads) and returns when no handler runs any more:
 * afterwards nothing writes to the buffer. Returns the number of samples
 * recorded since start. A buffer that fills up stops sampling early (each
 * thread's timer stops at its next signal): header.dropped > 0. */
uint64_t fl_sampler_stop(void);

bool fl_sampler_running(void);

/* After fl_sampler_stop: the signal whose handler the run replaced, so that
 * sampling stopped where it did ("SIGTRAP", "SIGPROF"), or NULL. Each
 * fl_sampler_start takes the handlers back, so a cell that replaced one
 * only spoils its own run. */
const char *fl_sampler_replaced_handler(void);

/* After fl_sampler_stop: what the profiled code did during the run that
 * stopped samples, each a reason the profile has fewer than the CPU time
 * would give (the CPU time lost is in no record: it is not put on the
 * stack of a sample taken before or after). Threads that ended during the
 * run count as they end. */
typedef struct fl_sampler_interference {
  /* The signal whose handler the code replaced, as
   * fl_sampler_replaced_handler says; or NULL. */
  const char *replaced;
  /* The sampling signal ("SIGTRAP", "SIGPROF") that the code blocked on
   * some threads (sigprocmask, pthread_sigmask), or NULL: their samples
   * stopped while it was blocked. */
  const char *blocked;
  unsigned blocked_threads;
  /* Threads whose timer ended when the code closed its descriptor (or
   * dup2'd over it) and nothing else held it. */
  unsigned closed_threads;
} fl_sampler_interference_t;
void fl_sampler_interference(fl_sampler_interference_t *out);

/* The clock of the next fl_sampler_start (FL_SAMPLER_CLOCK_CPU until
 * set). With FL_SAMPLER_CLOCK_WALL, the waits that the interposed calls
 * report (fl_sampler_wait_done) are recorded too, and the time each
 * thread was runnable but waiting for a CPU (FL_SAMPLER_WAIT_RUNNABLE);
 * CPU samples are taken as with FL_SAMPLER_CLOCK_CPU, and the rest of a
 * thread's wall time, which none of those accounts for, is recorded too
 * (FL_SAMPLER_WAIT_OTHER). So a thread's records add up to its wall time.
 * The header says the run's clock. */
void fl_sampler_set_clock(fl_sampler_clock_t clock);

/* The event of the next fl_sampler_start instead of time (period 0: time,
 * as fl_sampler_set_clock says): a sample every period occurrences of the
 * perf event (type, config: perf_event_attr's; fl_events.h names them) on
 * each thread, weighing period. Only perf events count events: where they
 * are refused, fl_sampler_start fails. */
void fl_sampler_set_event(uint32_t type, uint64_t config, uint64_t period);

/* For the wrappers of FL_SAMPLER_WAIT_CALLS: whether the calling thread's
 * waits are recorded now (a wall-clock run samples it, and it is not in
 * the sampler's signal handler). Async-signal-safe, and cheap: a wrapper
 * asks before every call. */
bool fl_sampler_waits_on(void);
/* A call shorter than this (wall time) did not wait: it was a system
 * call's own work, which CPU samples count. */
#define FL_SAMPLER_WAIT_MIN_NS 4000
/* For the wrappers, on a clock wall run: the calling thread's run delay
 * (ns it has been runnable, waiting for a CPU, since it started), or -1
 * when it is not known (not sampled, no schedstat). Async-signal-safe. */
int64_t fl_sampler_run_delay_ns(void);
/* After the call wait returned: records the thread's off-CPU time in it,
 * the wall time since wall0_ns (CLOCK_MONOTONIC) less the thread's CPU
 * time since cpu0_ns (CLOCK_THREAD_CPUTIME_ID; a negative cpu0_ns: not
 * read, taken as none), with the stack of the wrapper's caller; nothing
 * for a call shorter than FL_SAMPLER_WAIT_MIN_NS. delay0_ns is the run
 * delay before the call (fl_sampler_run_delay_ns; negative: not read):
 * the delay inside the call (a thread woken waits for a CPU) is the
 * wait's, and is not recorded again as runnable time. Returns whether
 * the call was that long: reading the CPU clock is a system call, as
 * long as a quick call, so a wrapper reads the clocks before the call
 * only for a call that follows a long one of its kind (fl__waits.c).
 * Call it from the wrapper itself (its frame and the wrapper's are left
 * out of the stack); errno is kept. */
bool fl_sampler_wait_done(unsigned wait, int64_t wall0_ns, int64_t cpu0_ns, int64_t delay0_ns);

/* Calls fn(arg) as the root of the stacks sampled inside it: its frame's
 * call-frame information marks the return address undefined, as a
 * thread's first frame does, so an unwinder stops there and the handler
 * does not unwind the caller's frames in every sample. The worker runs
 * each cell through it; its own frames would be trimmed anyway. */
void fl_sampler_call(void (*fn)(void *), void *arg);

/* What the signal handler does with a sample, for measuring what each part
 * of a sample costs (bench/bench_profiler.py): a complete record (the
 * default, and all that cflame itself uses); a record of the interrupted
 * instruction alone, without unwinding; or nothing at all, so that the
 * timer's signal is taken and returned from. Applies from the next
 * fl_sampler_start. */
typedef enum fl_sampler_mode {
  FL_SAMPLER_STACKS = 0,
  FL_SAMPLER_LEAF_ONLY,
  FL_SAMPLER_SIGNAL_ONLY,
} fl_sampler_mode_t;
void fl_sampler_set_mode(fl_sampler_mode_t mode);

/* ---- reading a buffer (in any process) ---- */

typedef struct fl_sampler_record {
  int tid;
  unsigned wait; /* a wait record's call (FL_SAMPLER_WAIT_*); 0: a CPU sample */
  uint64_t weight;
  uint64_t cpu_ns;
  uint64_t tag;
  uint64_t time_ns;     /* CLOCK_MONOTONIC when it was taken */
  const uint64_t *pcs;  /* leaf first (a wait's: return addresses only); borrowed */
  size_t n_pcs;         /* 0: a thread's name (fl_sampler_next_any) */
  char thread_name[17]; /* a name record's name; "" in a sample */
} fl_sampler_record_t;

/* Walks the samples of a buffer (as written by fl_sampler), leaving out
 * the threads' names. *pos starts at 0. Returns 1 with *rec filled, 0 at
 * the end, -1 if the buffer is corrupt. */
int fl_sampler_next(const void *buf, size_t bytes, size_t *pos, fl_sampler_record_t *rec);
/* The same, with the threads' names too: a name record has n_pcs 0 and
 * thread_name set. */
int fl_sampler_next_any(const void *buf, size_t bytes, size_t *pos, fl_sampler_record_t *rec);

/* ---- writing a buffer from outside the sampled process ---- */

/* For a recorder that samples another process (fl_attach.h) and is the
 * buffer's one writer: writes a new buffer's header into buf (bytes long,
 * 8-byte aligned, at least fl_sampler_buffer_bytes(0)): no records yet,
 * the interval and source given. Returns 0, or -1 when buf is too small
 * or misaligned. */
int fl_sampler_buffer_start(void *buf, size_t bytes, uint64_t interval_ns, uint64_t source);
/* Appends rec to such a buffer: a CPU sample (wait 0, 1 to
 * FL_SAMPLER_MAX_DEPTH addresses, leaf first) or, with n_pcs 0, the name
 * record of thread rec->tid (thread_name). Returns 0, or -1 when it does
 * not fit in the bytes the header says (nothing written; the caller may
 * grow the buffer, fl_sampler_buffer_grown, and append again, or count it
 * dropped) or rec is not one of those. */
int fl_sampler_append(void *buf, const fl_sampler_record_t *rec);
/* Says in buf's header that it is now bytes long (a larger copy). */
void fl_sampler_buffer_grown(void *buf, size_t bytes);

CFLAME_END_DECLS

#endif
