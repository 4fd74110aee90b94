/* SPDX-License-Identifier: BSD-3-Clause */
/* fl_sampler_api: the sampler's set-up of the process (the handlers,
 * what the lock-free dl_iterate_phdr needs) and its public API: init,
 * start, stop (see include/cflame/fl_sampler.h and fl__sampler.h). */
#define _GNU_SOURCE
#define UNW_LOCAL_ONLY
#include <errno.h>
#include <libunwind.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>
#include <sys/resource.h>

#include "fl__common.h"
#include "fl__sampler.h"

#define MIN_INTERVAL_NS 10000 /* the kernel's floor for task-clock periods */
/* The sampler's descriptors (each thread's perf event) are moved to this
 * number or above, out of the way of a program that closes or dup2s over
 * the usual ones (0 to 1023), where the limit of open files leaves room. */
#define HIGH_FD 1024

/* Finds what the lock-free dl_iterate_phdr needs: the main program's
 * program headers and libunwind's mapping. */
static void find_objects(void) {
  struct dl_find_object fo;
  if (_dl_find_object((void *)getauxval(AT_ENTRY), &fo) == 0 &&
      getauxval(AT_PHENT) == sizeof(ElfW(Phdr))) {
    fl__sampler.main_map = fo.dlfo_link_map;
    fl__sampler.main_phdr = (const ElfW(Phdr) *)getauxval(AT_PHDR);
    fl__sampler.main_phnum = getauxval(AT_PHNUM);
  }
  /* Any function of libunwind's own; unw_backtrace is the one a program
   * or a test is likeliest to wrap, so another. */
  union {
    int (*fn)(unw_cursor_t *, unw_context_t *);
    void *p;
  } lib = {unw_init_local};
  if (_dl_find_object(lib.p, &fo) == 0) {
    fl__sampler.unwind_lo = (uintptr_t)fo.dlfo_map_start;
    fl__sampler.unwind_hi = (uintptr_t)fo.dlfo_map_end;
  }
}
/* Installs the handlers and finds what the handler needs: once per
 * process. Returns 0 or -1 with err. */
static int prepare_process(char *err, size_t err_size) {
  find_objects();
  if (!fl__sampler.unwind_hi) {
    snprintf(err, err_size, "cannot locate libunwind in the process");
    return -1;
  }
  unw_set_caching_policy(unw_local_addr_space, UNW_CACHE_PER_THREAD);
  fl__sampler.page_bytes = (size_t)sysconf(_SC_PAGESIZE);
  struct rlimit files;
  fl__sampler.high_fd = HIGH_FD;
  if (getrlimit(RLIMIT_NOFILE, &files) == 0 && files.rlim_cur != RLIM_INFINITY &&
      files.rlim_cur < 2 * HIGH_FD)
    fl__sampler.high_fd = (int)(files.rlim_cur / 2);

  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_sigaction = fl__sampler_handler;
  /* On the thread's alternate stack (fl_sampler_thread_enter gives each
   * one): a sample that lands near the end of the thread's own stack (deep
   * recursion) must not overflow it. */
  sa.sa_flags = SA_SIGINFO | SA_RESTART | SA_ONSTACK;
  /* Nothing else (an interrupt's siglongjmp above all) may run inside the
   * handler; faults are left unblocked so that they still report. */
  sigfillset(&sa.sa_mask);
  int faults[] = {SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGTRAP, SIGSYS, SIGABRT};
  for (size_t i = 0; i < FL__ARRAY_SIZE(faults); i++) sigdelset(&sa.sa_mask, faults[i]);
  struct sigaction now;
  fl__sampler.ours = sa;
  if (sigaction(PROF_SIGNAL, &sa, NULL) < 0 || sigaction(PROF_SIGNAL, NULL, &now) < 0 ||
      sigaction(SIGTRAP, &sa, &fl__sampler.prev_trap) < 0) {
    snprintf(err, err_size, "cannot install the sampling signal handler: %s", strerror(errno));
    return -1;
  }
  fl__sampler.restorer = (uintptr_t)now.sa_restorer;
  fl__sampler_watch_forks();
  fl__sampler.trap_allowed = fl__sampler_trap_works();
  fl__sampler_keep_perf_on();

  /* Bind the PLT slots of what the handler calls outside unwinding. */
  perf_set_period(-1, 0);
  ioctl(-1, PERF_EVENT_IOC_DISABLE, 0);
  timer_t t;
  if (fl__sampler_open_timer(current_tid(), CLOCK_THREAD_CPUTIME_ID, &t) == 0) {
    timer_set_once(t, 0);
    timer_delete(t);
  }
  fl__clock_ns(CLOCK_THREAD_CPUTIME_ID);
  fl__sampler.initialized = true;
  return 0;
}

/* Clears buf for a new sampler. A buffer a sampler of this layout wrote
 * (another process's: a worker that restarted) holds records only in its
 * used words: reservations never pass used_words, and fl_sampler_reset
 * zeroes what a run used, so the words past it are still zero. Only those
 * and the header are cleared then, not every page of a large buffer. */
static void clear_buffer(void *buf, size_t bytes) {
  fl_sampler_header_t *old = buf;
  uint64_t capacity = bytes / sizeof(uint64_t) - FL_SAMPLER_HEADER_WORDS;
  uint64_t used = __atomic_load_n(&old->used_words, __ATOMIC_ACQUIRE);
  if (old->magic != FL_SAMPLER_MAGIC || old->capacity_words != capacity) {
    memset(buf, 0, bytes);
    return;
  }
  memset((uint64_t *)buf + FL_SAMPLER_HEADER_WORDS, 0,
         (used < capacity ? used : capacity) * sizeof(uint64_t));
  memset(buf, 0, sizeof *old);
}

/* fl_sampler_init and fl_sampler_init_zeroed: clear says whether buf must
 * be cleared. */
static int init(void *buf, size_t bytes, bool clear, char *err, size_t err_size) {
  if (__atomic_load_n(&fl__sampler.running, __ATOMIC_SEQ_CST)) {
    snprintf(err, err_size, "the sampler is running");
    return -1;
  }
  if (buf && (((uintptr_t)buf & 7) || bytes < fl_sampler_buffer_bytes(64))) {
    snprintf(err, err_size, "the sample buffer is too small or misaligned (%zu bytes)", bytes);
    return -1;
  }
  if (!fl__sampler.initialized && prepare_process(err, err_size) < 0) return -1;
  if (fl__sampler.space.fd >= 0) close(fl__sampler.space.fd);
  fl__sampler.space = (fl__space_t){.fd = -1};
  if (buf) {
    if (clear) clear_buffer(buf, bytes);
    fl__sampler.hdr = buf;
    fl__sampler.words = (uint64_t *)buf + FL_SAMPLER_HEADER_WORDS;
    fl__sampler.capacity = bytes / sizeof(uint64_t) - FL_SAMPLER_HEADER_WORDS;
    fl__sampler.hdr->capacity_words = fl__sampler.capacity;
    __atomic_store_n(&fl__sampler.hdr->magic, FL_SAMPLER_MAGIC, __ATOMIC_RELEASE);
  } else {
    fl__sampler.hdr = NULL;
    fl__sampler.words = NULL;
    fl__sampler.capacity = 0;
  }
  fl_sampler_thread_enter();
  return 0;
}

int fl_sampler_init(void *buf, size_t bytes, char *err, size_t err_size) {
  return init(buf, bytes, true, err, err_size);
}

int fl_sampler_init_zeroed(void *buf, size_t bytes, char *err, size_t err_size) {
  return init(buf, bytes, false, err, err_size);
}

int fl_sampler_use_file(int fd, size_t allocated, char *err, size_t err_size) {
  if (!fl__sampler.hdr || __atomic_load_n(&fl__sampler.running, __ATOMIC_SEQ_CST) ||
      allocated < sizeof(fl_sampler_header_t)) {
    snprintf(err, err_size, "fl_sampler_use_file: %s",
             fl__sampler.hdr ? "call it between runs, with the header allocated"
                             : "no buffer (fl_sampler_init_zeroed first)");
    return -1;
  }
  if (fl__sampler.space.fd >= 0) close(fl__sampler.space.fd);
  size_t bytes = fl_sampler_buffer_bytes((size_t)fl__sampler.capacity);
  fl__sampler.space =
      (fl__space_t){.fd = fl__sampler_move_high(fd), .allocated = allocated, .bytes = bytes};
  return 0;
}

void fl_sampler_reset(void) {
  if (!fl__sampler.hdr || __atomic_load_n(&fl__sampler.running, __ATOMIC_SEQ_CST)) return;
  uint64_t used = fl__sampler.hdr->used_words;
  if (used > fl__sampler.capacity) used = fl__sampler.capacity;
  /* Zero what the last run wrote, so that a reservation never filled reads
   * as the end of the records. */
  memset(fl__sampler.words, 0, used * sizeof(uint64_t));
  fl__sampler.hdr->used_words = 0;
  fl__sampler.hdr->dropped = 0;
  fl__sampler.hdr->samples = 0;
  fl__sampler.hdr->source = FL_SAMPLER_SOURCE_NONE;
  fl__sampler.hdr->space_errno = 0;
  fl__sampler.full = 0;
}

int fl_sampler_start(uint64_t interval_ns, uint64_t tag, char *err, size_t err_size) {
  if (!fl__sampler.initialized || !fl__sampler.hdr) {
    snprintf(err, err_size, "the sampler has no buffer (fl_sampler_init)");
    return -1;
  }
  if (__atomic_load_n(&fl__sampler.running, __ATOMIC_SEQ_CST)) {
    snprintf(err, err_size, "the sampler is already running");
    return -1;
  }
  if (interval_ns < MIN_INTERVAL_NS) {
    snprintf(err, err_size, "the sampling interval must be at least %d ns", MIN_INTERVAL_NS);
    return -1;
  }
  /* A cell may have replaced the handlers the sampler needs (signal(SIGTRAP,
   * h), SIG_IGN): each run takes them back. A SIGTRAP handler the cell set
   * becomes the one that traps not ours go to. */
  struct sigaction cur;
  if (sigaction(SIGTRAP, NULL, &cur) == 0 && cur.sa_sigaction != fl__sampler_handler) {
    fl__sampler.prev_trap = cur;
    sigaction(SIGTRAP, &fl__sampler.ours, NULL);
  }
  if (sigaction(PROF_SIGNAL, NULL, &cur) == 0 && cur.sa_sigaction != fl__sampler_handler)
    sigaction(PROF_SIGNAL, &fl__sampler.ours, NULL);
  fl__sampler.replaced = 0;
  pthread_mutex_lock(&fl__sampler_lock);
  fl__sampler.blocked_sig = 0;
  fl__sampler.blocked_threads = fl__sampler.closed_threads = 0;
  fl__sampler.interval_ns = interval_ns;
  fl__sampler.tag = tag;
  fl__sampler.mode = fl__sampler.next_mode;
  fl__sampler.event_type = fl__sampler.next_event_type;
  fl__sampler.event_config = fl__sampler.next_event_config;
  fl__sampler.event_period = fl__sampler.next_event_period;
  fl__sampler.hdr->clock =
      fl__sampler.event_period ? FL_SAMPLER_CLOCK_EVENT : (uint64_t)fl__sampler.next_clock;
  fl__sampler.hdr->event_type = fl__sampler.event_type;
  fl__sampler.hdr->event_config = fl__sampler.event_config;
  fl__sampler.hdr->event_period = fl__sampler.event_period;
  for (int s = 0; s < fl__sampler_slots_used_below; s++) fl__sampler_slots[s].wait_carry_ns = 0;
  fl__sampler.full = 0;
  fl__sampler.space.failed = 0; /* room may have been made since */
  fl__sampler.samples_at_start = fl__sampler.hdr->samples;
  fl__sampler.hdr->interval_ns = interval_ns;
  const char *want = getenv("CFLAME_SAMPLER_SOURCE");
  fl__sampler.kind = !want                         ? KIND_PERF_TRAP
                     : !strcmp(want, "timer")      ? KIND_CPU_TIMER
                     : !strcmp(want, "perf-async") ? KIND_PERF_ASYNC
                                                   : KIND_PERF_TRAP;
  __atomic_store_n(&fl__sampler.running, 1, __ATOMIC_SEQ_CST);
  __atomic_store_n(&fl__sampler.waits,
                   fl__sampler.next_clock == FL_SAMPLER_CLOCK_WALL && !fl__sampler.event_period,
                   __ATOMIC_SEQ_CST);
  int armed = 0, first_err = 0;
  pid_t pid = getpid();
  for (int s = 0; s < fl__sampler_slots_used_below; s++) {
    slot_t *sl = &fl__sampler_slots[s];
    if (!sl->used) continue;
    /* A thread that ended without fl_sampler_thread_exit. */
    if (syscall(SYS_tgkill, pid, sl->tid, 0) < 0 && errno == ESRCH) {
      fl__sampler_free_altstack(sl, false);
      sl->used = 0;
      continue;
    }
    if (fl__sampler_arm(sl) == 0) {
      /* The first thread tells which kind works here. */
      if (++armed == 1) fl__sampler.kind = sl->kind;
    } else if (!first_err) {
      first_err = errno;
    }
  }
  fl__sampler.hdr->source = fl__sampler.kind == KIND_CPU_TIMER ? FL_SAMPLER_SOURCE_CPU_TIMER
                                                               : FL_SAMPLER_SOURCE_PERF_TASK_CLOCK;
  pthread_mutex_unlock(&fl__sampler_lock);
  if (!armed) {
    fl_sampler_stop();
    snprintf(err, err_size, "cannot start %s for sampling: %s",
             fl__sampler.event_period ? "a perf event" : "a CPU timer",
             first_err ? strerror(first_err) : "no thread is registered");
    return -1;
  }
  return 0;
}

void fl_sampler_set_event(uint32_t type, uint64_t config, uint64_t period) {
  pthread_mutex_lock(&fl__sampler_lock);
  fl__sampler.next_event_type = type;
  fl__sampler.next_event_config = config;
  fl__sampler.next_event_period = period;
  pthread_mutex_unlock(&fl__sampler_lock);
}

void fl_sampler_set_clock(fl_sampler_clock_t clock) {
  pthread_mutex_lock(&fl__sampler_lock);
  fl__sampler.next_clock = clock;
  pthread_mutex_unlock(&fl__sampler_lock);
}

void fl_sampler_set_mode(fl_sampler_mode_t mode) {
  pthread_mutex_lock(&fl__sampler_lock);
  fl__sampler.next_mode = mode;
  pthread_mutex_unlock(&fl__sampler_lock);
}

uint64_t fl_sampler_stop(void) {
  /* Did the run itself replace a handler the sampler needs? Then the
   * samples after that were lost. */
  struct sigaction cur;
  if (sigaction(SIGTRAP, NULL, &cur) == 0 && cur.sa_sigaction != fl__sampler_handler)
    fl__sampler.replaced |= 1u << 0;
  if (sigaction(PROF_SIGNAL, NULL, &cur) == 0 && cur.sa_sigaction != fl__sampler_handler)
    fl__sampler.replaced |= 1u << 1;
  pthread_mutex_lock(&fl__sampler_lock);
  __atomic_store_n(&fl__sampler.waits, 0, __ATOMIC_SEQ_CST);
  bool was_running = __atomic_load_n(&fl__sampler.running, __ATOMIC_SEQ_CST);
  for (int s = 0; s < fl__sampler_slots_used_below; s++)
    if (fl__sampler_slots[s].used) fl__sampler_disarm(&fl__sampler_slots[s]);
  __atomic_store_n(&fl__sampler.running, 0, __ATOMIC_SEQ_CST);
  for (int s = 0; s < fl__sampler_slots_used_below && was_running; s++)
    if (fl__sampler_slots[s].used)
      fl__sampler_record_name(&fl__sampler_slots[s], s == fl__sampler_tls_slot - 1);
  pthread_mutex_unlock(&fl__sampler_lock);
  return fl__sampler.hdr ? __atomic_load_n(&fl__sampler.hdr->samples, __ATOMIC_RELAXED) -
                               fl__sampler.samples_at_start
                         : 0;
}

const char *fl_sampler_replaced_handler(void) {
  return fl__sampler.replaced & 1u ? "SIGTRAP" : fl__sampler.replaced & 2u ? "SIGPROF" : NULL;
}

void fl_sampler_interference(fl_sampler_interference_t *out) {
  pthread_mutex_lock(&fl__sampler_lock);
  out->replaced = fl_sampler_replaced_handler();
  out->blocked = fl__sampler.blocked_sig == SIGTRAP ? "SIGTRAP"
                 : fl__sampler.blocked_sig          ? "SIGPROF"
                                                    : NULL;
  out->blocked_threads = fl__sampler.blocked_threads;
  out->closed_threads = fl__sampler.closed_threads;
  pthread_mutex_unlock(&fl__sampler_lock);
}

bool fl_sampler_running(void) {
  return __atomic_load_n(&fl__sampler.running, __ATOMIC_SEQ_CST) != 0;
}
