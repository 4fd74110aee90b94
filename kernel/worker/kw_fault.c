/* SPDX-License-Identifier: BSD-3-Clause */
/* Crashes and interrupts in the worker (see kw.h).
 *
 * A fatal signal (SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT, SIGTRAP, SIGSYS)
 * runs crash_handler on an alternate stack, so stack overflows are caught
 * too: the main thread and every thread a cell starts (kw_threads.c) has
 * one of its own. It unwinds the faulting thread with libunwind from the
 * signal context, copies /proc/self/maps, sends both to the kernel as one
 * 'C' frame on the event channel (by the channel's rule, kw_io.c, so that
 * no other thread's output lands inside it), and then lets the signal kill
 * the process: the kernel symbolizes the report, tells the user, and starts
 * a fresh worker. Everything in the handler is async-signal-safe or was
 * warmed up before (the unwinder's first use resolves symbols through the
 * dynamic loader).
 *
 * Only the first fault is reported, whole: the first thread to enter the
 * handler takes reporter_tid and owns the one report buffer. A thread that
 * faults meanwhile (eight threads writing through NULL at once) sleeps in
 * the handler until the process ends; it must not end the process itself,
 * nor return (its fault would only come again). The handler stays
 * installed for that reason (no SA_RESETHAND). A fault inside the handler
 * on the reporting thread ends the process at once, with no report.
 *
 * SIGINT (sent by the kernel on interrupt_request) unwinds to the command
 * loop with siglongjmp when the main thread is executing cell code or is
 * blocked in a system call: the cell's state stays as it was. When the main thread is inside a
 * library (which may hold a lock) the handler only notes the request; the kernel then sends SIGUSR2
 * a little later, which unwinds wherever the thread is, and kills and restarts the worker if even
 * that does not end the cell within a second. Neither unwinds a thread writing to the event
 * channel: kw_io.c raises the signal again once the frame is written whole. One that arrives
 * after a run command was read but before the cell's entry is called is noted, and the run
 * ends before the entry (kw_main.c's run_once). */
#define _GNU_SOURCE
#define UNW_LOCAL_ONLY
#include <errno.h>
#include <fcntl.h>
#include <libunwind.h>
#include <signal.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <ucontext.h>
#include <unistd.h>

#include "fl__platform.h"
#include "kw.h"
#include "fl__common.h"

sigjmp_buf kw_cell_jmp;
volatile sig_atomic_t kw_cell_running;
volatile sig_atomic_t kw_interrupt_requested;
volatile sig_atomic_t kw_run_active;

#define MAX_CODE_RANGES 16384
#define MAX_PCS 128
#define ALT_STACK_SIZE (256 * 1024)

static struct { uintptr_t lo, hi; } code_ranges[MAX_CODE_RANGES];
static volatile sig_atomic_t n_code_ranges;
static pid_t main_tid;
/* The calling thread's alternate signal stack: the mapping, a guard page
 * and then ALT_STACK_SIZE bytes. */
static __thread void *alt_stack_map;

/* Static so the handler needs no stack for it: maps text can be long.
 * Written only by the thread in reporter_tid. */
static char report[1 << 20];
/* The thread reporting a fault, 0 while none is. */
static pid_t reporter_tid;

void kw_fault_add_code_range(uintptr_t lo, uintptr_t hi) {
  if (n_code_ranges >= MAX_CODE_RANGES) return;
  code_ranges[n_code_ranges].lo = lo;
  code_ranges[n_code_ranges].hi = hi;
  n_code_ranges = n_code_ranges + 1;
}

static bool in_cell_code(uintptr_t pc) {
  for (int i = 0; i < n_code_ranges; i++)
    if (pc >= code_ranges[i].lo && pc < code_ranges[i].hi) return true;
  return false;
}

/* ---- async-signal-safe formatting ---- */

static size_t put_str(size_t at, const char *s) {
  while (*s && at < sizeof report - 1) report[at++] = *s++;
  return at;
}

static size_t put_hex(size_t at, uint64_t v) {
  char tmp[19];
  int n = 0;
  do {
    tmp[n++] = "0123456789abcdef"[v & 15];
    v >>= 4;
  } while (v);
  at = put_str(at, "0x");
  while (n > 0 && at < sizeof report - 1) report[at++] = tmp[--n];
  return at;
}

static size_t put_dec(size_t at, long v) {
  char tmp[24];
  int n = 0;
  if (v < 0) {
    at = put_str(at, "-");
    v = -v;
  }
  do {
    tmp[n++] = (char)('0' + v % 10);
    v /= 10;
  } while (v);
  while (n > 0 && at < sizeof report - 1) report[at++] = tmp[--n];
  return at;
}

/* Ends the process by sig itself, so the kernel sees how the worker
 * ended. */
static void die_of(int sig) {
  signal(sig, SIG_DFL);
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, sig);
  sigprocmask(SIG_UNBLOCK, &set, NULL);
  syscall(SYS_tgkill, getpid(), syscall(SYS_gettid), sig);
  _exit(128 + sig); /* not reached: each of the fatal signals ends the process */
}

static void crash_handler(int sig, siginfo_t *si, void *ucv) {
  pid_t self = (pid_t)syscall(SYS_gettid), none = 0;
  if (!__atomic_compare_exchange_n(&reporter_tid, &none, self, false, __ATOMIC_SEQ_CST,
                                   __ATOMIC_SEQ_CST)) {
    if (none == self) die_of(sig); /* the report itself faulted */
    /* Another thread is reporting; the process ends when it is done. */
    for (;;) pause();
  }
  ucontext_t *uc = ucv;
  size_t at = 0;
  at = put_str(at, "signal ");
  at = put_dec(at, sig);
  at = put_str(at, "\ncode ");
  at = put_dec(at, si->si_code);
  at = put_str(at, "\naddr ");
  at = put_hex(at, (uint64_t)(uintptr_t)si->si_addr);
  at = put_str(at, "\nsp ");
  at = put_hex(at, (uint64_t)fl__context_sp(uc));
  at = put_str(at, "\ntid ");
  at = put_dec(at, (long)syscall(SYS_gettid));
  at = put_str(at, "\nmain_tid ");
  at = put_dec(at, (long)main_tid);
  at = put_str(at, "\n");

  /* The faulting instruction first, then return addresses. */
  unw_cursor_t cursor;
  if (unw_init_local2(&cursor, (unw_context_t *)uc, UNW_INIT_SIGNAL_FRAME) == 0) {
    for (int i = 0; i < MAX_PCS; i++) {
      unw_word_t pc;
      if (unw_get_reg(&cursor, UNW_REG_IP, &pc) < 0 || pc == 0) break;
      at = put_str(at, "pc ");
      at = put_hex(at, pc);
      at = put_str(at, "\n");
      if (unw_step(&cursor) <= 0) break;
    }
  }
  at = put_str(at, "maps\n");
  int fd = open("/proc/self/maps", O_RDONLY | O_CLOEXEC);
  if (fd >= 0) {
    ssize_t n;
    while (at < sizeof report - 1 &&
           (n = syscall(SYS_read, fd, report + at, sizeof report - 1 - at)) > 0)
      at += (size_t)n;
    close(fd);
  }
  kw_io_send_crash_report(report, at);
  die_of(sig);
}

static void interrupt_handler(int sig, siginfo_t *si, void *ucv) {
  int saved = errno;
  /* Before the cell's entry (its object loading, a recorder clearing its
   * buffer, slow under a sanitizer or a busy machine) the interrupt is
   * noted, not dropped: run_once then ends the run before the entry. An
   * interrupt between runs belongs to none. */
  if (!kw_cell_running) {
    if (kw_run_active) kw_interrupt_requested = 1;
    goto out;
  }
  kw_interrupt_requested = 1;
  /* Only the main thread runs the cell's entry and owns the jump buffer. */
  pid_t tid = (pid_t)syscall(SYS_gettid);
  if (tid != main_tid) {
    syscall(SYS_tgkill, getpid(), main_tid, sig);
    goto out;
  }
  /* Inside the event channel: unwinding could cut a frame; the channel
   * raises the signal again when it is given back. */
  if (kw_io_defer_interrupt(sig)) goto out;
  ucontext_t *uc = ucv;
  uintptr_t pc = fl__context_pc(uc);
  /* Right after a system-call instruction: the thread was blocked in a
   * system call wrapper (sleep, read, poll), which holds no lock. */
  if (sig == SIGUSR2 || in_cell_code(pc) || fl__follows_syscall(pc)) {
    kw_cell_running = 0;
    siglongjmp(kw_cell_jmp, 1);
  }
out:
  errno = saved;
}

int kw_fault_thread_enter(void) {
  if (alt_stack_map) return 0;
  size_t page = (size_t)sysconf(_SC_PAGESIZE);
  void *map = mmap(NULL, page + ALT_STACK_SIZE, PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS | MAP_STACK, -1, 0);
  if (map == MAP_FAILED) return -1;
  /* The guard page: a handler that outgrew its stack faults (and the
   * process ends) instead of writing over whatever lies below. */
  stack_t ss = {.ss_sp = (char *)map + page, .ss_size = ALT_STACK_SIZE, .ss_flags = 0};
  if (mprotect(map, page, PROT_NONE) < 0 || sigaltstack(&ss, NULL) < 0) {
    munmap(map, page + ALT_STACK_SIZE);
    return -1;
  }
  alt_stack_map = map;
  return 0;
}

void kw_fault_thread_exit(void) {
  if (!alt_stack_map) return;
  stack_t ss = {.ss_flags = SS_DISABLE};
  if (sigaltstack(&ss, NULL) < 0) return; /* running on it: keep it */
  munmap(alt_stack_map, (size_t)sysconf(_SC_PAGESIZE) + ALT_STACK_SIZE);
  alt_stack_map = NULL;
}

int kw_fault_init(void) {
  main_tid = (pid_t)syscall(SYS_gettid);

  /* Warm up libunwind: its first use binds symbols lazily. */
  void *pcs[4];
  unw_backtrace(pcs, 4);
  unw_cursor_t cursor;
  unw_context_t ctx;
  unw_getcontext(&ctx);
  unw_init_local2(&cursor, &ctx, 0);
  unw_step(&cursor);

  if (kw_fault_thread_enter() < 0) return -1;

  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_sigaction = crash_handler;
  sa.sa_flags = SA_SIGINFO | SA_ONSTACK | SA_NODEFER;
  sigemptyset(&sa.sa_mask);
  /* A profiler sample must not interrupt the crash report's own unwind,
   * nor an interrupt unwind the thread out of the handler while it waits
   * for the event channel. */
  sigaddset(&sa.sa_mask, SIGPROF);
  sigaddset(&sa.sa_mask, SIGTRAP);
  sigaddset(&sa.sa_mask, SIGINT);
  sigaddset(&sa.sa_mask, SIGUSR2);
  int fatal[] = {SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT, SIGTRAP, SIGSYS};
  for (size_t i = 0; i < FL__ARRAY_SIZE(fatal); i++)
    if (sigaction(fatal[i], &sa, NULL) < 0) return -1;

  memset(&sa, 0, sizeof sa);
  sa.sa_sigaction = interrupt_handler;
  sa.sa_flags = SA_SIGINFO | SA_RESTART;
  sigemptyset(&sa.sa_mask);
  if (sigaction(SIGINT, &sa, NULL) < 0 || sigaction(SIGUSR2, &sa, NULL) < 0) return -1;
  return 0;
}
