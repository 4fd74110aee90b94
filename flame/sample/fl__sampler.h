/* SPDX-License-Identifier: BSD-3-Clause */
/* fl__sampler: what the sampler's files share. fl_sampler.c holds the
 * signal handler and everything it calls (one translation unit, so that
 * the compiler inlines into it what it can), and its top comment tells how
 * the sampler works; fl_sampler_timer.c each thread's timer (arming,
 * disarming, the probe of the best kind); fl_sampler_threads.c the thread
 * registry, alternate stacks, names and fork; fl_sampler_api.c the process
 * set-up and the public API. The state and the functions here are hidden:
 * the handler reaches the state as a file's own statics, without the GOT. */
#ifndef FL__SAMPLER_H
#define FL__SAMPLER_H

#include <link.h>
#include <linux/perf_event.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/ioctl.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "cflame/fl_sampler.h"
#include "fl__rng.h"
#include "fl__platform.h"
#include "fl__space.h"

#define PROF_SIGNAL SIGPROF           /* perf O_ASYNC and CPU timers */
#define TRAP_COOKIE 0x63666c616d65ull /* si_perf_data of our SIGTRAPs: "cflame" */
#define MAX_THREADS 1024
/* Frames of the handler itself (and libunwind) above the signal frame. */
#define HANDLER_FRAMES 16
/* On a perf event, a new period every PERIOD_EVERY signals (fl_sampler.c). */
#define PERIOD_EVERY 32

/* Timer kinds, best first (see fl_sampler.c). */
enum { KIND_PERF_TRAP, KIND_PERF_ASYNC, KIND_CPU_TIMER, KIND_NONE };

/* One registered thread. Only that thread's handler reads and writes the
 * sampling fields while it is armed; registration and arming happen under
 * fl__sampler_lock. */
typedef struct slot {
  int used;    /* registered (fl__sampler_lock) */
  int armed;   /* atomic: the timer runs; the handler may record */
  int busy;    /* atomic: the handler runs on the thread */
  int in_wait; /* atomic: fl_sampler_wait_done writes a record */
  int warming; /* the handler unwinds but records nothing */
  pid_t tid;
  clockid_t cpu_clock; /* the thread's CPU clock (pthread_getcpuclockid) */
  int kind;            /* KIND_* of this thread's timer */
  int perf_fd;         /* -1 when none */
  uint64_t perf_id;    /* its event's id (PERF_EVENT_IOC_ID) */
  /* The event's first page, mapped: it holds the event, and so the
   * thread's samples, even once the program has closed the descriptor
   * (NULL when the mapping was refused). */
  void *perf_map;
  int fd_lost;     /* the handler found perf_fd no longer the event's */
  int was_blocked; /* a trap came late: the thread had blocked SIGTRAP */
  void *altstack;  /* the alternate signal stack given to the thread, or
                      NULL (it had its own, or none could be mapped) */
  bool has_timer;
  timer_t timer;
  int64_t cpu_last_ns; /* the thread's CPU clock at its previous record */
  int64_t carry_ns;    /* remainder carried to the next record */
  int unmeasured;      /* records since the last one that read the clock */
  int until_period;    /* perf event: signals left before a new period */
  uint64_t *last_rec;  /* this run's last record of the thread, or NULL */
  int sampled;         /* a record of the thread since its name was last recorded */
  uint64_t rng;        /* xorshift64* state for the jitter */
  /* Off-CPU time carried to the thread's next wait record: only the thread
   * itself, in fl_sampler_wait_done, never the handler. */
  int64_t wait_carry_ns;
  /* Clock wall: the thread's run delay (its time runnable, waiting for a
   * CPU: schedstat's second field) at its last reading, -1 when it cannot
   * be read; and the delay not yet in a record, in ns. The handler reads
   * the delay and records it; fl_sampler_wait_done takes off the carry
   * (atomically: the handler may interrupt it) the delay inside the waits
   * it records, whose wall time holds it already. */
  int64_t delay_last_ns;
  int64_t delay_carry_ns;
  /* Clock wall: the thread's wall, CPU and run-delay clocks when its time
   * was last accounted for (arming, then each measuring record); the
   * off-CPU time its waits have taken since, less the run delay inside
   * them (fl_sampler_wait_done adds it, atomically: the handler may
   * interrupt); and the time none of them accounts for not yet in a record
   * (FL_SAMPLER_WAIT_OTHER), in ns. */
  int64_t seen_wall_ns, seen_cpu_ns, seen_delay_ns;
  int64_t seen_waits_ns;
  int64_t other_carry_ns;
  /* /proc/self/task/TID/schedstat, open while armed on clock wall (moved
   * high, as perf_fd); -1 none; DELAY_FD_LOST once a read of it failed
   * (the program closed it): each reading then opens the file itself. */
  int delay_fd;
  void *pcs[FL_SAMPLER_MAX_DEPTH + HANDLER_FRAMES];
} slot_t;

/* The sampler's state: one per process. */
typedef struct {
  bool initialized;
  fl_sampler_header_t *hdr; /* NULL until a buffer is given */
  uint64_t *words;          /* the records, after the header */
  uint64_t capacity;        /* words */
  fl__space_t space;        /* the buffer's file (fl_sampler_use_file), fd -1 if none */
  int running;              /* atomic */
  int full;                 /* atomic: the buffer filled up during this run */
  uint64_t interval_ns;
  uint64_t tag;
  int kind;            /* the kind this run uses (the first thread's) */
  int mode;            /* fl_sampler_mode_t of this run */
  int next_mode;       /* ... of the next run (fl_sampler_set_mode) */
  int waits;           /* atomic: this run records waits (FL_SAMPLER_CLOCK_WALL) */
  int next_clock;      /* fl_sampler_clock_t of the next run (fl_sampler_set_clock) */
  /* This run's event (event_period 0: time), and the next run's. */
  uint32_t event_type, next_event_type;
  uint64_t event_config, next_event_config;
  uint64_t event_period, next_event_period;
  bool trap_allowed;   /* sigtrap as task work (probed: fl__sampler_trap_works) */
  bool trap_user_only; /* exclude_kernel was needed (perf_event_paranoid) */
  uint64_t samples_at_start;
  uintptr_t restorer;         /* the signal trampoline (__restore_rt) */
  struct sigaction prev_trap; /* SIGTRAP's handler before ours */
  struct sigaction ours;      /* the sampling handler, as installed */
  unsigned replaced;          /* signals (bits) whose handler a run took over */
  int blocked_sig;            /* the sampling signal a thread blocked during a run, or 0 */
  unsigned blocked_threads;   /* ... how many threads */
  unsigned closed_threads;    /* threads whose event the run's code closed (samples ended) */
  int high_fd;                /* where the sampler's descriptors go (HIGH_FD or lower) */
  size_t page_bytes;
  /* For the lock-free dl_iterate_phdr: */
  struct link_map *main_map;
  const ElfW(Phdr) * main_phdr;
  size_t main_phnum;
  uintptr_t unwind_lo, unwind_hi; /* libunwind's mapping */
} fl__sampler_state_t;

/* fd moved to fl__sampler.high_fd or above, out of the way of a program
 * that closes or dup2s over its low descriptors (the same fd where there
 * is no room). */
FL__HIDDEN int fl__sampler_move_high(int fd);
extern FL__HIDDEN fl__sampler_state_t fl__sampler;
extern FL__HIDDEN slot_t fl__sampler_slots[MAX_THREADS];
/* Slots below this one have been used (under fl__sampler_lock): the loops over
 * slots stop here, so that starting and stopping touch the pages of the
 * threads the process had, not all of the 4 MiB array. */
extern FL__HIDDEN int fl__sampler_slots_used_below;
/* Held while threads register and timers are armed or disarmed. */
extern FL__HIDDEN pthread_mutex_t fl__sampler_lock;
/* Index + 1 of the calling thread's slot; 0 when not registered. */
extern FL__HIDDEN __thread int fl__sampler_tls_slot __attribute__((tls_model("initial-exec")));
/* The signal handler (fl_sampler.c), as installed. */
extern FL__HIDDEN void (*const fl__sampler_handler)(int, siginfo_t *, void *);

/* ---- small helpers (async-signal-safe) ---- */

static inline pid_t current_tid(void) {
  return (pid_t)syscall(SYS_gettid);
}

/* The next interval: uniform in [0.75, 1.25] x interval_ns. */
static inline uint64_t next_period(slot_t *sl) {
  uint64_t iv = fl__sampler.interval_ns, span = iv / 2;
  return iv - iv / 4 + fl__rng_next(&sl->rng) % (span + 1);
}

static inline int perf_set_period(int fd, uint64_t period) {
  return ioctl(fd, PERF_EVENT_IOC_PERIOD, &period);
}

/* Whether fd is still sl's perf event: the profiled code may have closed
 * the descriptor and its number been reused (a child that closes every
 * descriptor and opens others before it execs), and another file must not
 * be closed, or changed, in its place. */
static inline bool own_event(const slot_t *sl, int fd) {
  uint64_t id;
  return fd >= 0 && ioctl(fd, PERF_EVENT_IOC_ID, &id) == 0 && id == sl->perf_id;
}

static inline int timer_set_once(timer_t t, uint64_t ns) {
  struct itimerspec its = {.it_interval = {0, 0},
                           .it_value = {(time_t)(ns / 1000000000), (long)(ns % 1000000000)}};
  return timer_settime(t, 0, &its, NULL);
}

/* slot_t.delay_fd of a descriptor that no longer reads the file. */
#define DELAY_FD_LOST (-2)

/* ---- fl_sampler.c: run delay (clock wall) ---- */

/* Opens sl's schedstat file and takes its first reading (arming, under
 * fl__sampler_lock, on a clock wall run), or closes it (disarming). */
FL__HIDDEN void fl__sampler_delay_open(slot_t *sl);
FL__HIDDEN void fl__sampler_delay_close(slot_t *sl);
/* Disarming, once sl's thread is out of the handler and its waits: the
 * delay since the last reading goes to a runnable record of the stack of
 * the thread's last CPU record (sl->last_rec), as the CPU time since goes
 * to that record, and the time since that no clock accounts for to an
 * other record of its outermost frame; cpu_ns is the thread's CPU clock
 * now. */
FL__HIDDEN void fl__sampler_delay_tail(slot_t *sl, int64_t cpu_ns);

/* ---- fl_sampler_timer.c (under fl__sampler_lock) ---- */

FL__HIDDEN int fl__sampler_arm(slot_t *sl);
FL__HIDDEN void fl__sampler_disarm(slot_t *sl);
FL__HIDDEN int fl__sampler_open_timer(pid_t tid, clockid_t clock, timer_t *t);
FL__HIDDEN bool fl__sampler_trap_works(void);
/* Keeps a disabled task-clock event open for the process's life, so that
 * starting a run never waits for Linux to turn its perf hooks back on
 * (fl_sampler_timer.c says why). */
FL__HIDDEN void fl__sampler_keep_perf_on(void);

/* ---- fl_sampler_threads.c ---- */

FL__HIDDEN void fl__sampler_free_altstack(slot_t *sl, bool on_thread);
FL__HIDDEN void fl__sampler_record_name(slot_t *sl, bool own);
/* Keeps the registry right across fork (pthread_atfork). */
FL__HIDDEN void fl__sampler_watch_forks(void);

#endif
