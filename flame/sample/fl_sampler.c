/* SPDX-License-Identifier: BSD-3-Clause */
/* fl_sampler: an in-process sampling profiler of CPU time (see
 * include/cflame/fl_sampler.h for the contract and the buffer layout).
 *
 * Timers. Each registered thread gets a timer of its own CPU time that
 * signals that very thread, the first of these that the system allows:
 *  - a perf event counting the thread's task clock (PERF_COUNT_SW_TASK_CLOCK)
 *    with attr.sigtrap (Linux 6.1 and later): on overflow the kernel queues
 *    a SIGTRAP (si_code TRAP_PERF, si_perf_data our cookie) as task work,
 *    delivered when the thread next returns to user mode. It has hrtimer
 *    resolution, counts kernel time too where perf_event_paranoid allows
 *    it, and can never interrupt a sleep: a timer that expires inside a
 *    system call signals after the call returns. It is also the cheapest
 *    kind: its signal costs about what a whole sample of `perf record`
 *    does;
 *  - the same perf event with O_ASYNC and F_SETSIG (SIGPROF) where sigtrap
 *    is missing. Its signal goes through an interrupt of its own, which
 *    costs more, and it counts user mode only (exclude_kernel): a signal
 *    queued while the thread runs kernel code would be pending as the
 *    thread goes to sleep in that call, and the sleep would end early with
 *    EINTR, hundreds of times a second at 0.1 ms;
 *  - timer_create on the thread's CPU clock (SIGEV_THREAD_ID, SIGPROF),
 *    when perf events are not allowed at all. Linux fires these on the
 *    scheduler tick (often 250 per CPU-second, whatever the interval),
 *    after the system call, so they cause no EINTR either.
 * Intervals are drawn uniformly from [0.75, 1.25] x interval (a per-thread
 * xorshift generator), so a workload whose period is a multiple of the
 * interval is not aliased: a perf event gets a new period at one sample in
 * PERIOD_EVERY at random (PERF_EVENT_IOC_PERIOD; see sample_handler), a one-shot
 * CPU timer a new expiry at every sample. CFLAME_SAMPLER_SOURCE=perf-async
 * or =timer in the environment forces the second or third kind (for tests).
 *
 * SIGTRAP is shared with breakpoints and the worker's crash handler: a
 * SIGTRAP that is not ours goes to the handler installed before
 * fl_sampler_init (or to the default action, which ends the process).
 *
 * Weights. The handler reads its thread's CPU clock (CLOCK_THREAD_CPUTIME_ID,
 * which leaves out time the host steals from a virtual CPU, unlike the
 * perf timer): at every record on the CPU timer, at one record in
 * CLOCK_EVERY on a perf event (whose signals come one per period of the
 * thread's task clock; the others weigh 1). A measuring record's weight is
 * the thread's CPU time since the previous measuring record plus a carried
 * remainder (less an interval for each record in between), in intervals,
 * rounded to the nearest but at least 1; the remainder is carried on. A
 * sample with nothing to weigh (the carry ate it) records nothing and
 * leaves its time to the next one; when sampling stops, the time since a
 * thread's last record goes to that record (unless the buffer filled up).
 * So weights x interval add up to the CPU time of the sampled threads,
 * whatever the timer's real rate, to within an interval per thread.
 *
 * Unwinding. unw_backtrace from the handler, through the signal
 * trampoline: libunwind's fast trace (a per-thread cache of frame layouts
 * keyed by address) is some 40 times faster than an unw_step loop from the
 * signal context. The trampoline's address (sa_restorer) marks where the
 * interrupted frames begin. The unwind is nearly all of what a sample costs
 * beyond the signal (fl_sampler_set_mode's measuring modes let bench/ take
 * it apart), and it grows with the frames: stacks taken inside
 * fl_sampler_call end at its frame, so that the worker's own frames below
 * a cell are not unwound. The handler does not walk frame pointers instead,
 * even in code compiled with them: a signal can land in a prologue, a
 * frameless leaf or a tail call, where the caller would have to be guessed,
 * and a cheaper profile that puts samples in the wrong place is worse.
 *
 * The handler takes no lock, allocates nothing and never enters the
 * dynamic loader:
 *  - its per-thread state is a preallocated slot, found through a static
 *    TLS index (initial-exec);
 *  - libunwind's caches are per thread (UNW_CACHE_PER_THREAD) and warmed up
 *    on each thread when it registers, by a signal to itself that runs the
 *    handler's whole unwinding path once (libunwind creates its per-thread
 *    trace cache under a lock on first use; every function the handler
 *    calls gets its PLT slot bound there too);
 *  - libunwind (1.6) looks up unwind tables with dl_iterate_phdr, which
 *    takes the loader's lock. This file defines dl_iterate_phdr: executables
 *    come first in symbol lookup, so libunwind's calls land here. Outside
 *    the handler it forwards to the C library's; inside, it describes the
 *    one object that holds the address being looked up with glibc's
 *    lock-free, async-signal-safe _dl_find_object (libunwind's callback
 *    data begins with that address). An address in no loaded object gets
 *    no unwind information, which ends the stack there;
 *  - records are reserved in the buffer with an atomic compare-and-swap on
 *    used_words, so that used_words never passes capacity_words.
 * A full buffer stops sampling: each thread's handler then turns its timer
 * off and counts the sample as dropped.
 *
 * A sample that lands inside libunwind itself (a cell calling backtrace(),
 * or the crash handler) records only the interrupted instruction: unwinding
 * again would reuse libunwind's per-thread caches while they change.
 *
 * Stopping. fl_sampler_stop (and fl_sampler_thread_exit) clear a slot's
 * `armed` flag, turn its timer off, and wait until the thread is out of the
 * handler (`busy`, a Dekker-style pair of sequentially consistent flags)
 * before closing the timer: afterwards nothing writes to the buffer. */
#define _GNU_SOURCE
#define UNW_LOCAL_ONLY
#include <dlfcn.h>
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <libunwind.h>
#include <link.h>
#include <signal.h>
#include <stddef.h>
#include <string.h>
#include <ucontext.h>

#include "fl__common.h"
#include "fl__platform.h"
#include "fl__sampler.h"

/* On a perf event, one record in CLOCK_EVERY reads the thread's CPU clock. */
#define CLOCK_EVERY 8
/* A late trap (delivered once SIGTRAP was unblocked) that finds more than
 * this many intervals of CPU time unsampled marks its thread as blocked. */
#define LATE_INTERVALS 4

fl__sampler_state_t fl__sampler = {.space.fd = -1};
slot_t fl__sampler_slots[MAX_THREADS];
int fl__sampler_slots_used_below;
pthread_mutex_t fl__sampler_lock = PTHREAD_MUTEX_INITIALIZER;
__thread int fl__sampler_tls_slot __attribute__((tls_model("initial-exec")));
/* Set while the handler unwinds: dl_iterate_phdr takes the lock-free path. */
static __thread int tls_unwinding __attribute__((tls_model("initial-exec")));
/* Set while fl_sampler_wait_done unwinds (outside the handler): a sample
 * that comes then records only the interrupted instruction, as one inside
 * libunwind does, since libunwind's per-thread caches may be changing. */
static __thread int tls_wait_unwinding __attribute__((tls_model("initial-exec")));

typedef int (*iterate_phdr_fn)(int (*)(struct dl_phdr_info *, size_t, void *), void *);
static iterate_phdr_fn real_dl_iterate_phdr;

/* ---- dl_iterate_phdr without the loader's lock ---- */

/* The interposed dl_iterate_phdr runs before sanitizer runtimes are set
 * up (AddressSanitizer calls it from its initializer): no instrumentation
 * there. */
#define NO_SANITIZE __attribute__((no_sanitize("address", "undefined")))

/* Describes the object holding ip the way dl_iterate_phdr would, using
 * _dl_find_object (no lock). Returns 1, or 0 when no object holds ip. */
NO_SANITIZE static int object_phdr_info(uintptr_t ip, struct dl_phdr_info *info) {
  struct dl_find_object fo;
  if (_dl_find_object((void *)ip, &fo) != 0) return 0;
  const ElfW(Phdr) * phdr;
  size_t phnum;
  uintptr_t bias = fo.dlfo_link_map->l_addr;
  if (fo.dlfo_link_map == fl__sampler.main_map && fl__sampler.main_phdr) {
    phdr = fl__sampler.main_phdr;
    phnum = fl__sampler.main_phnum;
  } else {
    /* The first mapping of a shared object starts with its ELF header. */
    uintptr_t start = (uintptr_t)fo.dlfo_map_start, size = (uintptr_t)fo.dlfo_map_end - start;
    const ElfW(Ehdr) *eh = (const ElfW(Ehdr) *)start;
    if (size < sizeof *eh || eh->e_ident[EI_MAG0] != ELFMAG0 || eh->e_ident[EI_MAG1] != ELFMAG1 ||
        eh->e_ident[EI_MAG2] != ELFMAG2 || eh->e_ident[EI_MAG3] != ELFMAG3 ||
        eh->e_phentsize != sizeof(ElfW(Phdr)) || eh->e_phoff > size ||
        eh->e_phnum > (size - eh->e_phoff) / sizeof(ElfW(Phdr)))
      return 0;
    phdr = (const ElfW(Phdr) *)(start + eh->e_phoff);
    phnum = eh->e_phnum;
    size_t i;
    for (i = 0; i < phnum; i++)
      if (phdr[i].p_type == PT_LOAD && phdr[i].p_offset == 0) break;
    if (i == phnum || bias + phdr[i].p_vaddr != start) return 0;
  }
  memset(info, 0, sizeof *info);
  info->dlpi_addr = bias;
  info->dlpi_name = fo.dlfo_link_map->l_name;
  info->dlpi_phdr = phdr;
  info->dlpi_phnum = (ElfW(Half))phnum;
  return 1;
}

/* Interposes the C library's dl_iterate_phdr (see the top of the file). */
NO_SANITIZE int dl_iterate_phdr(int (*callback)(struct dl_phdr_info *, size_t, void *),
                                void *data) {
  if (tls_unwinding) {
    /* Only libunwind's own callback is expected here: its data begins with
     * the address it looks for. Anything else gets nothing. */
    if ((uintptr_t)callback < fl__sampler.unwind_lo || (uintptr_t)callback >= fl__sampler.unwind_hi)
      return 0;
    struct dl_phdr_info info;
    if (!object_phdr_info(*(const uintptr_t *)data, &info)) return 0;
    return callback(&info, sizeof info, data);
  }
  iterate_phdr_fn real = __atomic_load_n(&real_dl_iterate_phdr, __ATOMIC_ACQUIRE);
  if (!real) {
    *(void **)&real = dlsym(RTLD_NEXT, "dl_iterate_phdr");
    if (!real) return 0;
    __atomic_store_n(&real_dl_iterate_phdr, real, __ATOMIC_RELEASE);
  }
  return real(callback, data);
}

__attribute__((constructor)) static void resolve_dl_iterate_phdr(void) {
  iterate_phdr_fn real;
  *(void **)&real = dlsym(RTLD_NEXT, "dl_iterate_phdr");
  if (real) __atomic_store_n(&real_dl_iterate_phdr, real, __ATOMIC_RELEASE);
}

/* ---- the root of sampled stacks ---- */

/* fl_sampler_call(fn, arg): calls fn(arg) from a frame that saves %rbp (so
 * frame-pointer walks go on through it) and whose return address is
 * undefined in its CFI (so DWARF unwinders, libunwind's fast trace among
 * them, end the stack at it). */
__asm__(
    ".text\n"
    ".globl fl_sampler_call\n"
    ".type fl_sampler_call, @function\n"
    "fl_sampler_call:\n"
    ".cfi_startproc\n"
    ".cfi_undefined rip\n"
    "  endbr64\n"
    "  pushq %rbp\n"
    ".cfi_adjust_cfa_offset 8\n"
    ".cfi_offset rbp, -16\n"
    "  movq %rsp, %rbp\n"
    "  movq %rdi, %rax\n"
    "  movq %rsi, %rdi\n"
    "  call *%rax\n"
    "  popq %rbp\n"
    ".cfi_adjust_cfa_offset -8\n"
    "  ret\n"
    ".cfi_endproc\n"
    ".size fl_sampler_call, .-fl_sampler_call\n");

/* ---- the signal handler ---- */

/* Unwinds the interrupted context into sl->pcs: the interrupted
 * instruction first, then return addresses. Returns the count. Inlined: a
 * frame of its own would be one more for every sample to unwind. */
static inline __attribute__((always_inline)) size_t unwind(slot_t *sl, ucontext_t *uc) {
  uintptr_t rip = fl__context_pc(uc);
  void **pcs = sl->pcs;
  if ((rip >= fl__sampler.unwind_lo && rip < fl__sampler.unwind_hi) || tls_wait_unwinding) {
    pcs[0] = (void *)rip;
    return 1;
  }
  tls_unwinding = 1;
  /* libunwind's fast trace (a per-thread cache of frame layouts keyed by
   * address) from here: the handler's own frames, the signal trampoline,
   * then the interrupted frame. It stores return addresses minus 1 except
   * after a signal frame; when the fast trace gives up, unw_backtrace
   * walks again with unw_step and stores plain addresses. The trampoline's
   * entry tells which. */
  int n = unw_backtrace(pcs, FL_SAMPLER_MAX_DEPTH + HANDLER_FRAMES);
  size_t start = 0;
  uintptr_t adjust = 0;
  for (int i = 0; i + 1 < n && i < HANDLER_FRAMES; i++) {
    uintptr_t p = (uintptr_t)pcs[i];
    if ((uintptr_t)pcs[i + 1] == rip &&
        (p == fl__sampler.restorer - 1 || p == fl__sampler.restorer)) {
      start = (size_t)i + 1;
      adjust = p == fl__sampler.restorer - 1;
      break;
    }
  }
  size_t out = 0;
  if (start) {
    size_t avail = (size_t)n - start;
    if (avail > FL_SAMPLER_MAX_DEPTH) avail = FL_SAMPLER_MAX_DEPTH;
    pcs[0] = (void *)rip;
    for (size_t k = 1; k < avail; k++) pcs[k] = (void *)((uintptr_t)pcs[start + k] + adjust);
    out = avail;
  } else {
    /* Not found (an unusual frame above the trampoline): walk from the
     * interrupted context itself. */
    unw_cursor_t cursor;
    if (unw_init_local2(&cursor, (unw_context_t *)uc, UNW_INIT_SIGNAL_FRAME) == 0) {
      do {
        unw_word_t ip;
        if (unw_get_reg(&cursor, UNW_REG_IP, &ip) < 0 || ip == 0) break;
        pcs[out++] = (void *)ip;
      } while (out < FL_SAMPLER_MAX_DEPTH && unw_step(&cursor) > 0);
    }
    if (out == 0) pcs[out++] = (void *)rip;
  }
  tls_unwinding = 0;
  return out;
}

/* Reserves need words of the buffer for a record (a compare-and-swap, so
 * that used_words never passes the capacity). NULL when they do not fit:
 * the buffer is full, and the record counts as dropped. */
static inline __attribute__((always_inline)) uint64_t *reserve(uint64_t need) {
  uint64_t pos = __atomic_load_n(&fl__sampler.hdr->used_words, __ATOMIC_RELAXED);
  do {
    uint64_t end = (FL_SAMPLER_HEADER_WORDS + pos + need) * sizeof(uint64_t);
    if (pos + need > fl__sampler.capacity || !fl__space_ensure(&fl__sampler.space, end)) {
      int e = __atomic_load_n(&fl__sampler.space.failed, __ATOMIC_RELAXED);
      if (e) __atomic_store_n(&fl__sampler.hdr->space_errno, (uint64_t)e, __ATOMIC_RELAXED);
      __atomic_store_n(&fl__sampler.full, 1, __ATOMIC_RELAXED);
      __atomic_fetch_add(&fl__sampler.hdr->dropped, 1, __ATOMIC_RELAXED);
      return NULL;
    }
  } while (!__atomic_compare_exchange_n(&fl__sampler.hdr->used_words, &pos, pos + need, true,
                                        __ATOMIC_RELAXED, __ATOMIC_RELAXED));
  return fl__sampler.words + pos;
}

/* Turns the calling thread's timer off from its handler (buffer full). A
 * one-shot CPU timer stays off by not being re-armed. */
static void stop_own_timer(slot_t *sl) {
  if (sl->perf_fd >= 0 && !sl->fd_lost && own_event(sl, sl->perf_fd))
    ioctl(sl->perf_fd, PERF_EVENT_IOC_DISABLE, 0);
}

/* Gives sl's event a new period, through its descriptor while that is
 * still the event's. Once the program has closed it (the event lives on in
 * sl->perf_map), the period stays as it is. */
static void change_period(slot_t *sl) {
  if (sl->fd_lost) return;
  if (own_event(sl, sl->perf_fd))
    perf_set_period(sl->perf_fd, next_period(sl));
  else
    sl->fd_lost = 1;
}

/* A SIGTRAP that no perf event of ours sent: a breakpoint, a trap
 * instruction. It goes where it would have gone without us. */
static void forward_trap(int sig, siginfo_t *si, void *uc) {
  const struct sigaction *prev = &fl__sampler.prev_trap;
  if ((prev->sa_flags & SA_SIGINFO) && prev->sa_sigaction) {
    prev->sa_sigaction(sig, si, uc);
  } else if (prev->sa_handler == SIG_IGN) {
  } else if (prev->sa_handler != SIG_DFL && prev->sa_handler) {
    prev->sa_handler(sig);
  } else {
    /* Default action: end the process with the same signal. */
    struct sigaction dfl;
    memset(&dfl, 0, sizeof dfl);
    dfl.sa_handler = SIG_DFL;
    sigaction(SIGTRAP, &dfl, NULL);
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGTRAP);
    sigprocmask(SIG_UNBLOCK, &set, NULL);
    syscall(SYS_tgkill, getpid(), current_tid(), SIGTRAP);
  }
}

/* ---- run delay (clock wall) ---- */

/* Time a thread spends runnable but not running, waiting for a CPU, is
 * wall time that neither its CPU clock nor its waits see: on a machine
 * with more runnable threads than cores, most of it. Linux counts it per
 * thread, without privileges, as the second field of
 * /proc/self/task/TID/schedstat (sched_info.run_delay, ns; "0 0 0" where
 * the kernel keeps no such counts, and then nothing is recorded). On a
 * clock wall run the handler reads it after each CPU record and records
 * the delay since the last reading as a runnable record of the same
 * stack: the thread was preempted somewhere in the interval before the
 * sample, where it ran the sampled code as likely as any, as CPU samples
 * are. Read at every record, not one in CLOCK_EVERY, so that delay is
 * placed within an interval of CPU time of when it happened: a batch of
 * eight would move up to eight intervals' delay (on a loaded machine,
 * several times that in wall time) across the start or end of whatever
 * the user measures. The file stays open while the thread is armed (a
 * pread costs 0.5 us, of the 20 us a sample does, where opening it costs
 * 3 us); raw system calls, since the profiled program may define open
 * and read, and fl__waits.c's read is a wrapper. */

/* The second number of a schedstat line ("1234 5678 9\n"), or -1. */
static int64_t parse_run_delay(const char *text, ssize_t n) {
  ssize_t i = 0;
  while (i < n && text[i] >= '0' && text[i] <= '9') i++;
  if (i == 0 || i >= n || text[i] != ' ') return -1;
  ssize_t start = ++i;
  int64_t v = 0;
  for (; i < n && text[i] >= '0' && text[i] <= '9'; i++) v = v * 10 + (text[i] - '0');
  return i > start && i < n && text[i] == ' ' ? v : -1;
}

/* "/proc/self/task/TID/schedstat" into path (at least 48 bytes), without
 * snprintf (the handler's). */
static void schedstat_path(pid_t tid, char *path) {
  static const char head[] = "/proc/self/task/", tail[] = "/schedstat";
  char digits[12];
  int nd = 0;
  unsigned v = (unsigned)tid;
  do digits[nd++] = (char)('0' + v % 10);
  while ((v /= 10) != 0);
  size_t k = sizeof head - 1;
  memcpy(path, head, k);
  while (nd) path[k++] = digits[--nd];
  memcpy(path + k, tail, sizeof tail);
}

/* sl's thread's run delay now, in ns, or -1. Async-signal-safe; callable
 * from any thread. */
static int64_t read_run_delay(slot_t *sl) {
  char text[96];
  ssize_t n = -1;
  int fd = sl->delay_fd;
  if (fd >= 0) {
    n = (ssize_t)syscall(SYS_pread64, fd, text, sizeof text, 0);
    int64_t d = parse_run_delay(text, n);
    if (d >= 0) return d;
    /* Not the file any more: the program closed the descriptor (and may
     * have reused its number), so it is neither read nor closed again. */
    sl->delay_fd = DELAY_FD_LOST;
  }
  char path[48];
  schedstat_path(sl->tid, path);
  fd = (int)syscall(SYS_openat, AT_FDCWD, path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return -1;
  n = (ssize_t)syscall(SYS_read, fd, text, sizeof text);
  syscall(SYS_close, fd);
  return parse_run_delay(text, n);
}

void fl__sampler_delay_open(slot_t *sl) {
  char path[48];
  schedstat_path(sl->tid, path);
  sl->delay_fd = fl__sampler_move_high(open(path, O_RDONLY | O_CLOEXEC));
  sl->delay_last_ns = read_run_delay(sl);
  sl->delay_carry_ns = 0;
  sl->seen_delay_ns = sl->delay_last_ns;
  sl->seen_cpu_ns = fl__clock_ns(sl->cpu_clock);
  sl->seen_wall_ns = fl__clock_ns(CLOCK_MONOTONIC);
  __atomic_store_n(&sl->seen_waits_ns, 0, __ATOMIC_RELAXED);
  sl->other_carry_ns = 0;
}

void fl__sampler_delay_close(slot_t *sl) {
  if (sl->delay_fd >= 0) close(sl->delay_fd);
  sl->delay_fd = -1;
  sl->delay_last_ns = -1;
}

/* Writes a wait record (wait: FL_SAMPLER_WAIT_*) of sl's thread, weight
 * intervals standing for ns and ending at time_ns (CLOCK_MONOTONIC; 0:
 * now), with the stack of n addresses at pcs_v (void pointers, or words of
 * an earlier record when words is set): each plus add, the first plus
 * first_add more. Returns whether it fitted. */
static bool put_wait(slot_t *sl, unsigned wait, int64_t weight, int64_t ns, int64_t time_ns,
                     const void *pcs_v, size_t n, bool words, uintptr_t add, uintptr_t first_add) {
  if (n > FL_SAMPLER_MAX_DEPTH) n = FL_SAMPLER_MAX_DEPTH;
  uint64_t *rec = reserve(FL_SAMPLER_RECORD_WORDS + n);
  if (!rec) return false;
  rec[1] = (uint64_t)weight;
  rec[2] = (uint64_t)ns;
  rec[3] = fl__sampler.tag;
  rec[4] = (uint64_t)(time_ns ? time_ns : fl__clock_ns(CLOCK_MONOTONIC));
  for (size_t k = 0; k < n; k++) {
    uint64_t pc =
        words ? ((const uint64_t *)pcs_v)[k] : (uint64_t)(uintptr_t)((void *const *)pcs_v)[k];
    rec[FL_SAMPLER_RECORD_WORDS + k] = pc + add + (k == 0 ? first_add : 0);
  }
  /* Word 0 last: a reader that sees it sees the whole record. */
  __atomic_store_n(&rec[0], (uint64_t)wait << 48 | (uint64_t)n << 32 | (uint32_t)sl->tid,
                   __ATOMIC_RELEASE);
  __atomic_fetch_add(&fl__sampler.hdr->samples, 1, __ATOMIC_RELAXED);
  sl->sampled = 1;
  return true;
}

/* The run delay since sl's last reading (now_ns, read), plus the carry:
 * its weight in intervals, rounded to the nearest; the rest carried (a
 * negative carry is delay already in waits). 0: nothing to record. */
static int64_t take_run_delay(slot_t *sl, int64_t now_ns, int64_t *ns) {
  int64_t iv = (int64_t)fl__sampler.interval_ns;
  int64_t since = now_ns - sl->delay_last_ns;
  if (since < 0) since = 0;
  sl->delay_last_ns = now_ns;
  int64_t acc = __atomic_add_fetch(&sl->delay_carry_ns, since, __ATOMIC_RELAXED);
  int64_t weight = acc > 0 ? (acc + iv / 2) / iv : 0;
  if (weight > 0) __atomic_fetch_sub(&sl->delay_carry_ns, weight * iv, __ATOMIC_RELAXED);
  *ns = since;
  return weight;
}

/* A thread's wall time is its CPU time, its run delay, its waits in the
 * wrapped calls, and the rest: where it waited with no call wrapped (a
 * wait inside the C library, a raw system call, a page fault that reads
 * the disk, a lock inside a library) and, on a virtual machine, the time
 * the host took from its CPU, which Linux counts in neither its CPU time
 * nor its run delay. The rest since sl's last accounting, from the wall
 * (wall_ns), CPU (cpu_ns) and run-delay (delay_ns) clocks read now and
 * the waits recorded since, plus the carry: its weight in intervals,
 * rounded to the nearest, the rest carried (negative too: the clocks are
 * read microseconds apart, and what one reading puts in the rest the next
 * takes out). The readings become the last accounting. 0: nothing to
 * record. */
static int64_t take_other(slot_t *sl, int64_t wall_ns, int64_t cpu_ns, int64_t delay_ns,
                          int64_t *ns) {
  int64_t iv = (int64_t)fl__sampler.interval_ns;
  int64_t waits = __atomic_exchange_n(&sl->seen_waits_ns, 0, __ATOMIC_RELAXED);
  int64_t rest = (wall_ns - sl->seen_wall_ns) - (cpu_ns - sl->seen_cpu_ns) -
                 (delay_ns - sl->seen_delay_ns) - waits;
  sl->seen_wall_ns = wall_ns;
  sl->seen_cpu_ns = cpu_ns;
  sl->seen_delay_ns = delay_ns;
  int64_t acc = sl->other_carry_ns + rest;
  int64_t weight = acc > 0 ? (acc + iv / 2) / iv : 0;
  sl->other_carry_ns = acc - weight * iv;
  *ns = weight * iv;
  return weight;
}

/* From the handler, after a CPU record: the run delay since the last
 * reading, as a runnable record of the same stack (sl->pcs, n addresses,
 * the first the interrupted instruction); then, on a record that read the
 * thread's clocks (wall_ns, cpu_ns; 0: it did not), the rest of its wall
 * time (take_other), as an other record of the stack. Each ends where the
 * next begins, the last where the CPU record's intervals begin
 * (cpu_start_ns), so that a time line draws the waits and then the run,
 * side by side, rather than one over the other. Not while the thread is
 * in fl_sampler_wait_done, which takes the carry in its turn. */
static inline __attribute__((always_inline)) void record_run_delay(slot_t *sl, size_t n,
                                                                   int64_t cpu_start_ns,
                                                                   int64_t wall_ns,
                                                                   int64_t cpu_ns) {
  if (sl->delay_last_ns < 0 || __atomic_load_n(&sl->in_wait, __ATOMIC_RELAXED)) return;
  int64_t now = read_run_delay(sl), ns, other_ns;
  if (now < 0) return;
  int64_t weight = take_run_delay(sl, now, &ns);
  if (weight > 0)
    put_wait(sl, FL_SAMPLER_WAIT_RUNNABLE, weight, ns, cpu_start_ns > 0 ? cpu_start_ns : 0, sl->pcs,
             n, false, 0, 1);
  if (!wall_ns) return;
  int64_t other = take_other(sl, wall_ns, cpu_ns, now, &other_ns);
  if (other > 0 && n > 0) {
    int64_t end = cpu_start_ns - weight * (int64_t)fl__sampler.interval_ns;
    put_wait(sl, FL_SAMPLER_WAIT_OTHER, other, other_ns, end > 0 ? end : 0, sl->pcs + n - 1, 1,
             false, 0, n == 1);
  }
}

void fl__sampler_delay_tail(slot_t *sl, int64_t cpu_ns) {
  if (sl->delay_last_ns < 0 || !sl->last_rec) return;
  int64_t now = read_run_delay(sl), ns, other_ns;
  if (now < 0) return;
  int64_t weight = take_run_delay(sl, now, &ns);
  int64_t other = take_other(sl, fl__clock_ns(CLOCK_MONOTONIC), cpu_ns, now, &other_ns);
  const uint64_t *rec = sl->last_rec;
  size_t n = (size_t)(rec[0] >> 32 & 0xffff);
  if (weight > 0)
    put_wait(sl, FL_SAMPLER_WAIT_RUNNABLE, weight, ns, 0, rec + FL_SAMPLER_RECORD_WORDS, n, true, 0,
             1);
  if (other > 0 && n > 0)
    put_wait(sl, FL_SAMPLER_WAIT_OTHER, other, other_ns, 0, rec + FL_SAMPLER_RECORD_WORDS + n - 1,
             1, true, 0, n == 1);
}

int64_t fl_sampler_run_delay_ns(void) {
  int s = fl__sampler_tls_slot - 1;
  if (s < 0 || fl__sampler_slots[s].delay_last_ns < 0) return -1;
  return read_run_delay(&fl__sampler_slots[s]);
}

static void sample_handler(int sig, siginfo_t *si, void *ucv) {
  if (sig == SIGTRAP && !(si->si_code == TRAP_PERF && fl__siginfo_perf_data(si) == TRAP_COOKIE)) {
    forward_trap(sig, si, ucv);
    return;
  }
  int saved_errno = errno;
  int s = fl__sampler_tls_slot - 1;
  if (s < 0) goto out;
  slot_t *sl = &fl__sampler_slots[s];
  __atomic_store_n(&sl->busy, 1, __ATOMIC_SEQ_CST);
  if (sl->warming) {
    unwind(sl, ucv);
    goto done;
  }
  if (!__atomic_load_n(&sl->armed, __ATOMIC_SEQ_CST)) goto done;
  if (fl__sampler.mode == FL_SAMPLER_SIGNAL_ONLY) goto done;
  if (__atomic_load_n(&fl__sampler.full, __ATOMIC_RELAXED)) {
    stop_own_timer(sl);
    __atomic_fetch_add(&fl__sampler.hdr->dropped, 1, __ATOMIC_RELAXED);
    goto done;
  }

  /* A perf event's signal stands for one period of the thread's task
   * clock, so most records need no clock of their own: on a perf event the
   * handler reads the CPU clock (a system call, about 1.2 us of the ~20 us
   * a sample costs) at one record in CLOCK_EVERY and weighs the others 1.
   * The record that reads it takes the batch's difference (the carry), so
   * totals stay exact; what moves is at most a fraction of an interval per
   * record between records of the same batch, at random. The CPU timer's
   * signals come on the scheduler tick, whatever the interval: there every
   * record reads the clock. */
  int64_t iv = (int64_t)fl__sampler.interval_ns;
  /* A run that counts an event: each signal is event_period occurrences,
   * and time is neither read nor carried. */
  bool counting = fl__sampler.event_period != 0;
  /* A trap that waited while the thread blocked SIGTRAP (see below). */
  bool late = sig == SIGTRAP && (fl__siginfo_perf_flags(si) & TRAP_PERF_FLAG_ASYNC);
  bool measure = !counting && (late || sl->perf_fd < 0 || ++sl->unmeasured >= CLOCK_EVERY);
  int64_t now = measure ? fl__clock_ns(CLOCK_THREAD_CPUTIME_ID) : 0;
  /* On a clock wall run, the wall clock at the same moment: what the
   * thread's time adds up to (take_other). */
  int64_t wall_now = measure && __atomic_load_n(&fl__sampler.waits, __ATOMIC_RELAXED)
                         ? fl__clock_ns(CLOCK_MONOTONIC)
                         : 0;
  /* A perf event keeps its period (its hrtimer is forwarded from its last
   * expiry, so the handler's own time does not stretch it); a new one is
   * drawn for one sample in PERIOD_EVERY at random, as PERF_EVENT_IOC_PERIOD
   * restarts the hrtimer, which costs about 20 us on a virtual machine,
   * more than a signal. Within a run of equal periods the workload's phase
   * walks by the period modulo the workload's, so runs de-alias about as
   * well as a new period every sample; but a run whose period is nearly a
   * multiple of the workload's puts all its samples at one phase, and the
   * longer the run, the larger (if rarer) that error. So runs have one
   * length, PERIOD_EVERY signals, rather than a random one (whose long runs
   * make the tail): bench/alias_sim.py --tail, 12,000 samples of a loop of
   * a quarter interval, profiles off by more than 4 binomial standard
   * deviations are 0.05% with runs of 32 at random and none in 4,000 with
   * runs of exactly 32. Hence 32, counted.
   * The one-shot CPU timer is re-armed every time. */
  if (counting) {
    /* The event's own period, kept. */
  } else if (sl->perf_fd >= 0) {
    if (--sl->until_period <= 0) {
      sl->until_period = PERIOD_EVERY;
      change_period(sl);
    }
  } else if (sl->has_timer) {
    timer_set_once(sl->timer, next_period(sl));
  }

  /* Weight: the CPU time since the last measuring record plus the carry,
   * in intervals, rounded to the nearest but at least 1 (1 when not
   * measuring, the interval taken from the carry). A late trap that
   * finds more than LATE_INTERVALS unaccounted for comes after the code
   * blocked SIGTRAP a while: that time was not sampled and is not this
   * stack's, so the record weighs 1 and the rest is dropped (the sampler
   * says the thread blocked it). A shorter wait (the C library blocks every
   * signal for microseconds in pthread_create, posix_spawn) weighs as
   * usual. */
  int64_t acc, weight = counting ? (int64_t)fl__sampler.event_period : 1;
  if (counting) {
    acc = 0;
  } else if (measure) {
    acc = now - sl->cpu_last_ns + sl->carry_ns;
    if (late && acc > LATE_INTERVALS * iv) {
      sl->was_blocked = 1;
      acc = iv;
    }
    if (acc <= 0) goto done; /* its time goes to the next record */
    weight = (acc + iv / 2) / iv;
    if (weight == 0) weight = 1;
  } else {
    acc = sl->carry_ns;
  }

  size_t n;
  if (fl__sampler.mode == FL_SAMPLER_LEAF_ONLY) {
    sl->pcs[0] = (void *)fl__context_pc(ucv);
    n = 1;
  } else {
    n = unwind(sl, ucv);
  }
  uint64_t need = FL_SAMPLER_RECORD_WORDS + n;
  int64_t taken_ns = fl__clock_ns(CLOCK_MONOTONIC); /* the vDSO's: no system call */
  uint64_t *rec = reserve(need);
  if (!rec) {
    stop_own_timer(sl);
    goto done;
  }
  sl->last_rec = rec;
  sl->sampled = 1;
  rec[1] = (uint64_t)weight;
  rec[2] = measure ? (uint64_t)(now - sl->cpu_last_ns) : 0;
  rec[3] = fl__sampler.tag;
  rec[4] = (uint64_t)taken_ns;
  for (size_t i = 0; i < n; i++) rec[FL_SAMPLER_RECORD_WORDS + i] = (uint64_t)(uintptr_t)sl->pcs[i];
  /* Word 0 last: a reader that sees it sees the whole record. */
  __atomic_store_n(&rec[0], ((uint64_t)n << 32) | (uint32_t)sl->tid, __ATOMIC_RELEASE);
  __atomic_fetch_add(&fl__sampler.hdr->samples, 1, __ATOMIC_RELAXED);
  if (!counting) sl->carry_ns = acc - weight * iv;
  if (measure) {
    sl->cpu_last_ns = now;
    sl->unmeasured = 0;
  }
  if (__atomic_load_n(&fl__sampler.waits, __ATOMIC_RELAXED))
    record_run_delay(sl, n, taken_ns - weight * iv, wall_now, now);
done:
  __atomic_store_n(&sl->busy, 0, __ATOMIC_SEQ_CST);
out:
  errno = saved_errno;
}

void (*const fl__sampler_handler)(int, siginfo_t *, void *) = sample_handler;

/* ---- waits (clock wall) ---- */

bool fl_sampler_waits_on(void) {
  int s = fl__sampler_tls_slot - 1;
  return s >= 0 && __atomic_load_n(&fl__sampler.waits, __ATOMIC_RELAXED) &&
         __atomic_load_n(&fl__sampler_slots[s].armed, __ATOMIC_RELAXED) &&
         !__atomic_load_n(&fl__sampler_slots[s].busy, __ATOMIC_RELAXED);
}

/* Not inlined, so that its frame and the wrapper's are the two the stack
 * leaves out. */
__attribute__((noinline)) bool fl_sampler_wait_done(unsigned wait, int64_t wall0_ns,
                                                    int64_t cpu0_ns, int64_t delay0_ns) {
  int saved_errno = errno;
  int64_t wall = fl__clock_ns(CLOCK_MONOTONIC) - wall0_ns;
  bool waited = wall >= FL_SAMPLER_WAIT_MIN_NS;
  int s = fl__sampler_tls_slot - 1;
  if (!waited || s < 0 || wait == 0 || wait >= FL_SAMPLER_WAIT_RUNNABLE) goto out;
  int64_t cpu = cpu0_ns >= 0 ? fl__clock_ns(CLOCK_THREAD_CPUTIME_ID) - cpu0_ns : 0;
  slot_t *sl = &fl__sampler_slots[s];
  /* A wait in a signal handler that interrupted this thread's walk of
   * another wait (a program's handler writing to its self-pipe): libunwind
   * is mid-walk on this thread, so this one is not unwound and records
   * nothing; the outer record is written as it would have been. */
  if (tls_wait_unwinding) goto out;
  /* Dekker-style with fl__sampler_disarm, as the handler's busy: a run
   * that stops waits for this record to be whole. Saved and restored, not
   * cleared: this may be a handler's wait inside another's record. */
  int outer_in_wait = __atomic_load_n(&sl->in_wait, __ATOMIC_RELAXED);
  __atomic_store_n(&sl->in_wait, 1, __ATOMIC_SEQ_CST);
  if (!__atomic_load_n(&sl->armed, __ATOMIC_SEQ_CST) ||
      __atomic_load_n(&fl__sampler.full, __ATOMIC_RELAXED))
    goto done;
  /* Off-CPU: the call's wall time less the CPU time the thread spent in it
   * (that time is the CPU samples'), in intervals as a CPU record's
   * weight, the remainder carried on: a short wait adds to the carry, and
   * the wait that takes it past half an interval is recorded. */
  int64_t iv = (int64_t)fl__sampler.interval_ns, off = wall - cpu;
  if (off < 0) off = 0;
  /* The run delay inside the call (a thread woken waits for a CPU) is in
   * off already: it is taken off the delay still to record as runnable.
   * Without a reading before the call (the wrapper reads the clocks only
   * for a call that follows a long one of its kind), all the delay not
   * yet recorded is taken as the call's, as much of it as off holds: the
   * delay since the handler's last reading that came before the call then
   * goes uncounted (at most what an interval of CPU time saw), rather
   * than the delay in the call counted twice. */
  if (sl->delay_last_ns >= 0) {
    int64_t delay = read_run_delay(sl), inside = -1;
    if (delay >= 0 && delay0_ns >= 0)
      inside = delay - delay0_ns;
    else if (delay >= 0)
      inside = delay - sl->delay_last_ns + __atomic_load_n(&sl->delay_carry_ns, __ATOMIC_RELAXED);
    if (inside > off) inside = off;
    if (inside > 0) __atomic_fetch_sub(&sl->delay_carry_ns, inside, __ATOMIC_RELAXED);
    /* The wait's time in the thread's wall time, but for the delay inside
     * it, which the run delay holds (take_other). */
    __atomic_fetch_add(&sl->seen_waits_ns, off - (inside > 0 ? inside : 0), __ATOMIC_RELAXED);
  }
  int64_t acc = sl->wait_carry_ns + off, weight = (acc + iv / 2) / iv;
  if (weight <= 0) {
    sl->wait_carry_ns = acc;
    goto done;
  }
  sl->wait_carry_ns = acc - weight * iv;
  void *pcs[FL_SAMPLER_MAX_DEPTH + 2];
  tls_wait_unwinding = 1; /* 0 before: see above */
  int n = unw_backtrace(pcs, FL_SAMPLER_MAX_DEPTH + 2);
  tls_wait_unwinding = 0;
  /* pcs: this function, then the wrapper (its return address here, or
   * that less 1, as libunwind's fast trace stores them), then the
   * wrapper's caller: the stack starts there. */
  uintptr_t ret = (uintptr_t)__builtin_return_address(0);
  int start = -1;
  uintptr_t adjust = 0;
  for (int i = 0; i < n && i < 4; i++) {
    if ((uintptr_t)pcs[i] == ret || (uintptr_t)pcs[i] == ret - 1) {
      start = i + 1;
      adjust = (uintptr_t)pcs[i] == ret - 1;
      break;
    }
  }
  if (start < 0 || start >= n) goto done;
  put_wait(sl, wait, weight, off, 0, pcs + start, (size_t)(n - start), false, adjust, 0);
done:
  __atomic_store_n(&sl->in_wait, outer_in_wait, __ATOMIC_SEQ_CST);
out:
  errno = saved_errno;
  return waited;
}
