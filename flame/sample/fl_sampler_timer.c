/* SPDX-License-Identifier: BSD-3-Clause */
/* fl_sampler_timer: each registered thread's timer, armed and disarmed
 * under fl__sampler_lock, and the probe of whether the best kind works
 * here (see fl_sampler.c for the kinds, fl__sampler.h for the files). */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "fl__common.h"
#include "fl__sampler.h"

/* trap_works reads this much of /dev/zero at a time, until its event,
 * which expires every PROBE_PERIOD_NS, has counted PROBE_PERIODS periods
 * (about 0.3 ms of CPU in all). */
#define PROBE_READ_BYTES (128 * 1024)
#define PROBE_PERIOD_NS 20000
#define PROBE_PERIODS 5

/* The attributes of a disabled task-clock event that expires every period
 * ns of its thread's CPU time (in a run that counts an event,
 * fl_sampler_set_event: that event, every event_period occurrences), with
 * SIGTRAP for KIND_PERF_TRAP (other kinds signal through the descriptor,
 * which open_perf sets up). */
static void task_clock_attr(struct perf_event_attr *a, uint64_t period, int kind) {
  memset(a, 0, sizeof *a);
  a->size = sizeof *a;
  a->type = PERF_TYPE_SOFTWARE;
  a->config = PERF_COUNT_SW_TASK_CLOCK;
  a->sample_period = period;
  if (fl__sampler.event_period) { /* a run that counts an event instead */
    a->type = fl__sampler.event_type;
    a->config = fl__sampler.event_config;
    a->sample_period = fl__sampler.event_period;
  }
  a->disabled = 1;
  a->exclude_hv = 1;
  if (kind == KIND_PERF_TRAP) {
    a->sigtrap = 1;
    a->remove_on_exec = 1; /* required with sigtrap */
    a->sig_data = TRAP_COOKIE;
  }
}

/* Opens a disabled task-clock event for tid that signals it every period
 * ns of its CPU time: SIGTRAP (kind KIND_PERF_TRAP) or SIGPROF
 * (KIND_PERF_ASYNC). Returns the descriptor or -1 with errno. */
static int open_perf(pid_t tid, uint64_t period, int kind) {
  struct perf_event_attr a;
  task_clock_attr(&a, period, kind);
  int fd;
  if (kind == KIND_PERF_TRAP) {
    a.exclude_kernel = fl__sampler.trap_user_only;
    fd = (int)syscall(SYS_perf_event_open, &a, tid, -1, -1, PERF_FLAG_FD_CLOEXEC);
    if (fd < 0 && (errno == EACCES || errno == EPERM) && !a.exclude_kernel) {
      /* perf_event_paranoid >= 2 without CAP_PERFMON: user mode only. */
      a.exclude_kernel = 1;
      fd = (int)syscall(SYS_perf_event_open, &a, tid, -1, -1, PERF_FLAG_FD_CLOEXEC);
      if (fd >= 0) fl__sampler.trap_user_only = true;
    }
    return fd;
  }
  a.exclude_kernel = 1; /* see fl_sampler.c: no EINTR */
  fd = (int)syscall(SYS_perf_event_open, &a, tid, -1, -1, PERF_FLAG_FD_CLOEXEC);
  if (fd < 0) return -1;
  struct f_owner_ex owner = {F_OWNER_TID, tid};
  int fl = fcntl(fd, F_GETFL);
  if (fcntl(fd, F_SETOWN_EX, &owner) < 0 || fcntl(fd, F_SETSIG, PROF_SIGNAL) < 0 || fl < 0 ||
      fcntl(fd, F_SETFL, fl | O_ASYNC) < 0) {
    int e = errno;
    close(fd);
    errno = e;
    return -1;
  }
  return fd;
}

/* See fl__sampler.h. */
int fl__sampler_move_high(int fd) {
  if (fd < 0 || fd >= fl__sampler.high_fd) return fd;
  int high = fcntl(fd, F_DUPFD_CLOEXEC, fl__sampler.high_fd);
  if (high < 0) return fd;
  close(fd);
  return high;
}

/* Maps the first page of the perf event fd: the mapping holds the event
 * as a descriptor does, so that it goes on signalling its thread when the
 * program closes the descriptor or dup2s over it (a daemon's clean-up,
 * closefrom). Returns the mapping, or NULL where it is refused (the
 * user's perf_event_mlock_kb is used up): the event then lives as long as
 * its descriptor. */
static void *map_event(int fd) {
  void *map = mmap(NULL, fl__sampler.page_bytes, PROT_READ, MAP_SHARED, fd, 0);
  return map == MAP_FAILED ? NULL : map;
}

/* Linux turns the scheduler's perf hooks (a static key) off a second after
 * the last task-bound event in the system closes, and the next
 * perf_event_open turns them on again by patching code on every CPU: 7 to
 * 23 ms on a VM, which a profiled run that starts after a pause would pay
 * at each start, the first after a worker restarts as much as any. One
 * disabled event, open as long as the process lives, keeps them on: it
 * never counts or signals, and costs the system a test per context
 * switch. Mapped as the sampling events are, so that a program that closes
 * its descriptors does not close it. Where perf events are refused there is
 * nothing to keep. */
void fl__sampler_keep_perf_on(void) {
  struct perf_event_attr a;
  task_clock_attr(&a, 0, KIND_PERF_ASYNC);
  a.exclude_kernel = 1;
  int fd =
      fl__sampler_move_high((int)syscall(SYS_perf_event_open, &a, 0, -1, -1, PERF_FLAG_FD_CLOEXEC));
  if (fd >= 0) map_event(fd);
}

/* A timer on clock (a thread's CPU clock) that signals thread tid. */
int fl__sampler_open_timer(pid_t tid, clockid_t clock, timer_t *t) {
  struct sigevent ev;
  memset(&ev, 0, sizeof ev);
  ev.sigev_notify = SIGEV_THREAD_ID;
  ev.sigev_signo = PROF_SIGNAL;
  ev._sigev_un._tid = tid;
  return timer_create(clock, &ev, t);
}

/* Starts sl's timer with the first kind from fl__sampler.kind on that works for it.
 * Returns 0 or -1 with errno. */
static int arm_timer(slot_t *sl) {
  uint64_t first = fl__sampler.event_period ? fl__sampler.event_period : next_period(sl);
  sl->cpu_last_ns = fl__clock_ns(sl->cpu_clock);
  sl->last_rec = NULL;
  sl->carry_ns = 0;
  sl->unmeasured = 0;
  /* Threads (and runs) change periods out of step with one another. */
  sl->until_period = 1 + (int)(fl__rng_next(&sl->rng) % PERIOD_EVERY);
  sl->perf_fd = -1;
  sl->perf_map = NULL;
  sl->fd_lost = 0;
  sl->was_blocked = 0;
  sl->has_timer = false;
  for (int kind = fl__sampler.kind; kind < KIND_NONE; kind++) {
    if (kind == KIND_PERF_TRAP && !fl__sampler.trap_allowed) continue;
    if (kind == KIND_CPU_TIMER && fl__sampler.event_period) break; /* only perf counts events */
    sl->kind = kind;
    if (kind != KIND_CPU_TIMER) {
      sl->perf_fd = fl__sampler_move_high(open_perf(sl->tid, first, kind));
      if (sl->perf_fd < 0) continue;
      if (ioctl(sl->perf_fd, PERF_EVENT_IOC_ID, &sl->perf_id) < 0) sl->perf_id = 0;
      sl->perf_map = map_event(sl->perf_fd);
      __atomic_store_n(&sl->armed, 1, __ATOMIC_SEQ_CST);
      if (ioctl(sl->perf_fd, PERF_EVENT_IOC_ENABLE, 0) == 0) return 0;
      __atomic_store_n(&sl->armed, 0, __ATOMIC_SEQ_CST);
      if (sl->perf_map) munmap(sl->perf_map, fl__sampler.page_bytes);
      sl->perf_map = NULL;
      close(sl->perf_fd);
      sl->perf_fd = -1;
    } else {
      if (fl__sampler_open_timer(sl->tid, sl->cpu_clock, &sl->timer) < 0) return -1;
      sl->has_timer = true;
      __atomic_store_n(&sl->armed, 1, __ATOMIC_SEQ_CST);
      if (timer_set_once(sl->timer, first) == 0) return 0;
      int e = errno;
      __atomic_store_n(&sl->armed, 0, __ATOMIC_SEQ_CST);
      timer_delete(sl->timer);
      sl->has_timer = false;
      errno = e;
      return -1;
    }
  }
  return -1;
}

int fl__sampler_arm(slot_t *sl) {
  /* Before the timer: its first signal may read the run delay. */
  if (__atomic_load_n(&fl__sampler.waits, __ATOMIC_SEQ_CST)) fl__sampler_delay_open(sl);
  if (arm_timer(sl) == 0) return 0;
  int e = errno;
  fl__sampler_delay_close(sl);
  errno = e;
  return -1;
}

/* The signal that samples a thread with a timer of kind. */
static int sampling_signal(int kind) {
  return kind == KIND_PERF_TRAP ? SIGTRAP : PROF_SIGNAL;
}

/* Whether thread tid (of this process) blocks sig now: the calling
 * thread's mask, another's from /proc (no allocation). */
static bool thread_blocks(pid_t tid, int sig) {
  if (tid == current_tid()) {
    sigset_t mask;
    return pthread_sigmask(SIG_BLOCK, NULL, &mask) == 0 && sigismember(&mask, sig) == 1;
  }
  char path[64], text[4096];
  snprintf(path, sizeof path, "/proc/self/task/%d/status", (int)tid);
  if (fl__read_small(path, text, sizeof text) <= 0) return false;
  const char *line = strstr(text, "\nSigBlk:");
  return line && (strtoull(line + 8, NULL, 16) >> (sig - 1) & 1);
}

/* Stops sl's timer and waits until its thread is out of the handler.
 * Notes what the profiled code did to it during the run: the thread
 * blocked its sampling signal (now, or for a while: a late trap), or the
 * event ended with its descriptor, which the code closed. */
void fl__sampler_disarm(slot_t *sl) {
  bool was_armed = __atomic_exchange_n(&sl->armed, 0, __ATOMIC_SEQ_CST);
  bool ours = own_event(sl, sl->perf_fd);
  if (ours) ioctl(sl->perf_fd, PERF_EVENT_IOC_DISABLE, 0);
  if (sl->has_timer) timer_set_once(sl->timer, 0);
  while (__atomic_load_n(&sl->busy, __ATOMIC_SEQ_CST) ||
         __atomic_load_n(&sl->in_wait, __ATOMIC_SEQ_CST))
    sched_yield();
  bool closed = was_armed && sl->perf_fd >= 0 && !ours && !sl->perf_map;
  bool blocked =
      was_armed && (sl->was_blocked || thread_blocks(sl->tid, sampling_signal(sl->kind)));
  if (blocked) {
    fl__sampler.blocked_sig = sampling_signal(sl->kind);
    fl__sampler.blocked_threads++;
  }
  if (closed) fl__sampler.closed_threads++;
  /* The thread's CPU time since its last record (a tick-driven CPU timer
   * can leave several intervals of it, more so on a busy machine) goes to
   * that record, so that weights add up to the thread's CPU time; not
   * when the buffer filled up, whose dropped samples the header counts,
   * nor when the code stopped the thread's samples, whose time since is
   * none of that record's. */
  if (sl->last_rec && !__atomic_load_n(&fl__sampler.full, __ATOMIC_RELAXED) && !blocked &&
      !closed && !fl__sampler.event_period) {
    int64_t iv = (int64_t)fl__sampler.interval_ns;
    int64_t cpu = fl__clock_ns(sl->cpu_clock), tail = cpu - sl->cpu_last_ns + sl->carry_ns;
    if (tail >= iv / 2) sl->last_rec[1] += (uint64_t)((tail + iv / 2) / iv);
    fl__sampler_delay_tail(sl, cpu); /* the same for its run delay, and the rest */
  }
  fl__sampler_delay_close(sl);
  sl->last_rec = NULL;
  /* Without its descriptor, the mapping held the event: unmapping it
   * ends the event. */
  if (sl->perf_map) munmap(sl->perf_map, fl__sampler.page_bytes);
  sl->perf_map = NULL;
  if (ours) close(sl->perf_fd);
  if (sl->has_timer) timer_delete(sl->timer);
  sl->perf_fd = -1;
  sl->has_timer = false;
}

/* Reads /dev/zero PROBE_READ_BYTES at a time until the event fd has
 * counted PROBE_PERIODS more periods. Returns whether it did, with every
 * read whole. */
static bool reads_stay_whole(int fd) {
  const uint64_t enough = PROBE_PERIODS * PROBE_PERIOD_NS;
  int zero = open("/dev/zero", O_RDONLY | O_CLOEXEC);
  void *buf = malloc(PROBE_READ_BYTES);
  uint64_t first = 0;
  bool whole = zero >= 0 && buf && read(fd, &first, sizeof first) == sizeof first;
  uint64_t counted = first;
  for (int i = 0; whole && counted - first < enough && i < 200; i++)
    whole = read(zero, buf, PROBE_READ_BYTES) == PROBE_READ_BYTES &&
            read(fd, &counted, sizeof counted) == sizeof counted;
  free(buf);
  if (zero >= 0) close(zero);
  return whole && counted - first >= enough;
}

/* Whether KIND_PERF_TRAP can time the threads: the kernel knows
 * attr.sigtrap (Linux 5.13), and delivers the trap as task work on the
 * way back to user mode (6.1), never inside a system call, which it would
 * cut short (EINTR in the cell's sleeps and reads). Both are tried on the
 * calling thread, not read from the kernel's version:
 *  - an event with sigtrap opens: a kernel that does not know the
 *    attribute refuses it with EINVAL (a flag it does not know) or E2BIG
 *    (an attr longer than its own, with sig_data set);
 *  - where it may count kernel time, an event that expires in kernel mode
 *    only (exclude_user) expires many times inside reads of /dev/zero,
 *    which end early once a signal is pending: a kernel that signals from
 *    the timer's interrupt (5.13 to 6.0) cuts a read short.
 * Where perf_event_paranoid allows user time only (exclude_kernel, noted in
 * fl__sampler.trap_user_only), the timer never expires inside a system call, and the
 * second test is moot. One thing is not tried: whether a thread that
 * blocks SIGTRAP is spared the trap (5.19; earlier kernels force it on the
 * thread, which kills the process). Called with fl__sampler_handler installed
 * and the calling thread unregistered, where the probe's traps do nothing. */
bool fl__sampler_trap_works(void) {
  struct perf_event_attr a;
  task_clock_attr(&a, PROBE_PERIOD_NS, KIND_PERF_TRAP);
  a.disabled = 0;
  a.exclude_user = 1;
  int fd = (int)syscall(SYS_perf_event_open, &a, 0, -1, -1, PERF_FLAG_FD_CLOEXEC);
  if (fd >= 0) {
    bool whole = reads_stay_whole(fd);
    close(fd);
    return whole;
  }
  if (errno != EACCES && errno != EPERM) return false;
  a.exclude_user = 0;
  a.exclude_kernel = 1;
  fd = (int)syscall(SYS_perf_event_open, &a, 0, -1, -1, PERF_FLAG_FD_CLOEXEC);
  if (fd < 0) return false;
  close(fd);
  fl__sampler.trap_user_only = true;
  return true;
}
