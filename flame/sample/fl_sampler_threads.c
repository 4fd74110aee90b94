/* SPDX-License-Identifier: BSD-3-Clause */
/* fl_sampler_threads: the sampler's registry of threads (each one's
 * slot, alternate signal stack and name records) and what fork does to it
 * (see fl__sampler.h). */
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>

#include "fl__common.h"
#include "fl__sampler.h"

/* Each thread's alternate signal stack for the handler, above a guard
 * page: the handler's own frames and libunwind's need some 10 KiB. */
#define ALT_STACK_BYTES (64 * 1024)

/* Runs the handler's unwinding once on the calling thread (see
 * fl_sampler.c). */
static void warm_up(slot_t *sl) {
  sigset_t set, old;
  sigemptyset(&set);
  sigaddset(&set, PROF_SIGNAL);
  pthread_sigmask(SIG_UNBLOCK, &set, &old);
  sl->warming = 1;
  syscall(SYS_tgkill, getpid(), sl->tid, PROF_SIGNAL); /* handled before it returns */
  sl->warming = 0;
  pthread_sigmask(SIG_SETMASK, &old, NULL);
}

/* Gives the calling thread an alternate signal stack for the handler
 * (SA_ONSTACK), unless it has one already: the program's own, or the
 * worker's crash handler's, which the handler then shares. Returns the
 * mapping (a guard page, then ALT_STACK_BYTES), or NULL when the thread
 * had one or none could be mapped (the handler then runs on the thread's
 * own stack). */
static void *give_altstack(void) {
  stack_t cur;
  if (sigaltstack(NULL, &cur) < 0 || !(cur.ss_flags & SS_DISABLE)) return NULL;
  size_t bytes = fl__sampler.page_bytes + ALT_STACK_BYTES;
  void *map =
      mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_STACK, -1, 0);
  if (map == MAP_FAILED) return NULL;
  /* The guard page: a handler that outgrew the stack faults instead of
   * writing over what lies below. */
  stack_t ss = {
      .ss_sp = (char *)map + fl__sampler.page_bytes, .ss_size = ALT_STACK_BYTES, .ss_flags = 0};
  if (mprotect(map, fl__sampler.page_bytes, PROT_NONE) < 0 || sigaltstack(&ss, NULL) < 0) {
    munmap(map, bytes);
    return NULL;
  }
  return map;
}

/* Frees the alternate stack sl's thread was given. on_thread: called by
 * that thread, which stops using it first where it is still its own (the
 * program may have set another since); otherwise the thread is gone (or
 * not in this process: a forked child's copy). */
void fl__sampler_free_altstack(slot_t *sl, bool on_thread) {
  if (!sl->altstack) return;
  stack_t cur;
  if (on_thread && sigaltstack(NULL, &cur) == 0 &&
      cur.ss_sp == (char *)sl->altstack + fl__sampler.page_bytes && !(cur.ss_flags & SS_DISABLE)) {
    if (cur.ss_flags & SS_ONSTACK) return; /* running on it: keep it */
    stack_t off = {.ss_flags = SS_DISABLE};
    sigaltstack(&off, NULL);
  }
  munmap(sl->altstack, fl__sampler.page_bytes + ALT_STACK_BYTES);
  sl->altstack = NULL;
}

/* Appends a record of thread sl's name, when the buffer has room for it:
 * read with prctl on the thread itself (own), else from
 * /proc/self/task/TID/comm, for a thread sampled since its name was last
 * recorded. Never from the signal handler: a thread names itself
 * (pthread_setname_np) after it registers, so the name is read when
 * sampling ends for it. */
void fl__sampler_record_name(slot_t *sl, bool own) {
  if (!fl__sampler.hdr || !sl->sampled) return; /* a thread without samples needs no name */
  sl->sampled = 0;
  char name[17] = {0};
  if (own) {
    if (prctl(PR_GET_NAME, name) != 0) return;
  } else {
    char path[64];
    snprintf(path, sizeof path, "/proc/self/task/%d/comm", (int)sl->tid);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return;
    ssize_t got = read(fd, name, 16);
    close(fd);
    if (got <= 0) return;
    name[got] = '\0';
    name[strcspn(name, "\n")] = '\0';
  }
  if (!name[0]) return;
  uint64_t need = FL_SAMPLER_RECORD_WORDS;
  uint64_t pos = __atomic_load_n(&fl__sampler.hdr->used_words, __ATOMIC_RELAXED);
  do {
    if (pos + need > fl__sampler.capacity) return;
  } while (!__atomic_compare_exchange_n(&fl__sampler.hdr->used_words, &pos, pos + need, true,
                                        __ATOMIC_RELAXED, __ATOMIC_RELAXED));
  uint64_t *rec = fl__sampler.words + pos;
  memcpy(&rec[1], name, 16);
  rec[3] = fl__sampler.tag;
  rec[4] = (uint64_t)fl__clock_ns(CLOCK_MONOTONIC);
  __atomic_store_n(&rec[0], (uint64_t)FL_SAMPLER_NAME_RECORD << 32 | (uint32_t)sl->tid,
                   __ATOMIC_RELEASE);
}

void fl_sampler_thread_enter(void) {
  clockid_t cpu_clock;
  if (!fl__sampler.initialized || fl__sampler_tls_slot ||
      pthread_getcpuclockid(pthread_self(), &cpu_clock) != 0)
    return;
  pthread_mutex_lock(&fl__sampler_lock);
  int s = 0;
  while (s < MAX_THREADS && fl__sampler_slots[s].used) s++;
  if (s < MAX_THREADS) { /* else: not sampled */
    if (s >= fl__sampler_slots_used_below) fl__sampler_slots_used_below = s + 1;
    slot_t *sl = &fl__sampler_slots[s];
    sl->used = 1;
    sl->sampled = 0;
    sl->armed = 0;
    sl->busy = 0;
    sl->tid = current_tid();
    sl->cpu_clock = cpu_clock;
    sl->perf_fd = -1;
    sl->perf_map = NULL;
    sl->has_timer = false;
    sl->delay_fd = -1;
    sl->delay_last_ns = -1;
    sl->altstack = give_altstack();
    sl->rng = ((uint64_t)sl->tid * 0x9E3779B97F4A7C15ULL) ^ (uint64_t)fl__clock_ns(CLOCK_MONOTONIC);
    if (!sl->rng) sl->rng = 1;
    fl__sampler_tls_slot = s + 1;
    warm_up(sl);
    if (__atomic_load_n(&fl__sampler.running, __ATOMIC_SEQ_CST))
      fl__sampler_arm(sl); /* failure: not sampled */
  }
  pthread_mutex_unlock(&fl__sampler_lock);
}

void fl_sampler_thread_exit(void) {
  int s = fl__sampler_tls_slot - 1;
  if (s < 0) return;
  pthread_mutex_lock(&fl__sampler_lock);
  fl__sampler_disarm(&fl__sampler_slots[s]);
  if (__atomic_load_n(&fl__sampler.running, __ATOMIC_SEQ_CST))
    fl__sampler_record_name(&fl__sampler_slots[s], true);
  fl__sampler_free_altstack(&fl__sampler_slots[s], true);
  fl__sampler_slots[s].used = 0;
  fl__sampler_tls_slot = 0;
  pthread_mutex_unlock(&fl__sampler_lock);
}

/* fork: the child has only the forking thread, no timers, copies of the
 * parent's perf and schedstat descriptors (which still watch the parent's
 * threads; the program may have reused the number of a perf one), none of
 * the events' mappings (the kernel does not copy them), and copies of the
 * other threads' alternate stacks. */
static void before_fork(void) {
  pthread_mutex_lock(&fl__sampler_lock);
}
static void after_fork_parent(void) {
  pthread_mutex_unlock(&fl__sampler_lock);
}
static void after_fork_child(void) {
  int own = fl__sampler_tls_slot - 1;
  for (int s = 0; s < fl__sampler_slots_used_below; s++) {
    slot_t *sl = &fl__sampler_slots[s];
    if (!sl->used) continue;
    if (own_event(sl, sl->perf_fd)) close(sl->perf_fd);
    sl->perf_fd = -1;
    /* The parent's thread's schedstat: the child has not had the time to
     * reuse its number. */
    fl__sampler_delay_close(sl);
    sl->perf_map = NULL;
    sl->has_timer = false;
    sl->armed = 0;
    sl->busy = 0;
    sl->in_wait = 0;
    sl->sampled = 0; /* the parent's samples, not the child's */
    if (s == own) {
      sl->tid = current_tid();
      pthread_getcpuclockid(pthread_self(), &sl->cpu_clock); /* never fails on itself */
    } else {
      fl__sampler_free_altstack(sl, false);
      sl->used = 0;
    }
  }
  fl__sampler.running = 0;
  fl__sampler.waits = 0;
  pthread_mutex_init(&fl__sampler_lock, NULL);
}

void fl__sampler_watch_forks(void) {
  pthread_atfork(before_fork, after_fork_parent, after_fork_child);
}
