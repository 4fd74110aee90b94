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
#include "cflame/fl_sampler.h"

#include <dlfcn.h>
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <libunwind.h>
#include <link.h>
#include <linux/perf_event.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <time.h>
#include <ucontext.h>
#include <unistd.h>

#include "fl__common.h"
#include "fl__platform.h"
#include "fl__rng.h"

#define PROF_SIGNAL SIGPROF           /* perf O_ASYNC and CPU timers */
#define TRAP_COOKIE 0x63666c616d65ull /* si_perf_data of our SIGTRAPs: "cflame" */
#define MAX_THREADS 1024
/* Frames of the handler itself (and libunwind) above the signal frame. */
#define HANDLER_FRAMES 16
/* On a perf event, one record in CLOCK_EVERY reads the thread's CPU clock. */
#define CLOCK_EVERY 8
/* A late trap (delivered once SIGTRAP was unblocked) that finds more than
 * this many intervals of CPU time unsampled marks its thread as blocked. */
#define LATE_INTERVALS 4
/* On a perf event, one record in PERIOD_EVERY (a power of 2) draws a new
 * period. */
#define PERIOD_EVERY 32
#define MIN_INTERVAL_NS 10000 /* the kernel's floor for task-clock periods */
/* trap_works reads this much of /dev/zero at a time, until its event,
 * which expires every PROBE_PERIOD_NS, has counted PROBE_PERIODS periods
 * (about 0.3 ms of CPU in all). */
#define PROBE_READ_BYTES (128 * 1024)
#define PROBE_PERIOD_NS 20000
#define PROBE_PERIODS 5
/* The sampler's descriptors (each thread's perf event) are moved to this
 * number or above, out of the way of a program that closes or dup2s over
 * the usual ones (0 to 1023), where the limit of open files leaves room. */
#define HIGH_FD 1024
/* Each thread's alternate signal stack for the handler, above a guard
 * page: the handler's own frames and libunwind's need some 10 KiB. */
#define ALT_STACK_BYTES (64 * 1024)

/* Timer kinds, best first (see the top of the file). */
enum { KIND_PERF_TRAP, KIND_PERF_ASYNC, KIND_CPU_TIMER, KIND_NONE };

/* One registered thread. Only that thread's handler reads and writes the
 * sampling fields while it is armed; registration and arming happen under
 * reg_lock. */
typedef struct slot {
  int used;    /* registered (reg_lock) */
  int armed;   /* atomic: the timer runs; the handler may record */
  int busy;    /* atomic: the handler runs on the thread */
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
  uint64_t *last_rec;  /* this run's last record of the thread, or NULL */
  int sampled;         /* a record of the thread since its name was last recorded */
  uint64_t rng;        /* xorshift64* state for the jitter */
  void *pcs[FL_SAMPLER_MAX_DEPTH + HANDLER_FRAMES];
} slot_t;

static slot_t slots[MAX_THREADS];
/* Slots below this one have been used (under reg_lock): the loops over
 * slots stop here, so that starting and stopping touch the pages of the
 * threads the process had, not all of the 4 MiB array. */
static int slots_used_below;
static pthread_mutex_t reg_lock = PTHREAD_MUTEX_INITIALIZER;
/* Index + 1 of the calling thread's slot; 0 when not registered. */
static __thread int tls_slot __attribute__((tls_model("initial-exec")));
/* Set while the handler unwinds: dl_iterate_phdr takes the lock-free path. */
static __thread int tls_unwinding __attribute__((tls_model("initial-exec")));

static struct {
  bool initialized;
  fl_sampler_header_t *hdr; /* NULL until a buffer is given */
  uint64_t *words;          /* the records, after the header */
  uint64_t capacity;        /* words */
  int running;              /* atomic */
  int full;                 /* atomic: the buffer filled up during this run */
  uint64_t interval_ns;
  uint64_t tag;
  int kind;            /* the kind this run uses (the first thread's) */
  int mode;            /* fl_sampler_mode_t of this run */
  int next_mode;       /* ... of the next run (fl_sampler_set_mode) */
  bool trap_allowed;   /* sigtrap as task work (probed: trap_works) */
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
  const ElfW(Phdr) *main_phdr;
  size_t main_phnum;
  uintptr_t unwind_lo, unwind_hi; /* libunwind's mapping */
} S;

typedef int (*iterate_phdr_fn)(int (*)(struct dl_phdr_info *, size_t, void *), void *);
static iterate_phdr_fn real_dl_iterate_phdr;

/* ---- small helpers (async-signal-safe) ---- */

static pid_t current_tid(void) {
  return (pid_t)syscall(SYS_gettid);
}

/* The next interval: uniform in [0.75, 1.25] x interval_ns. */
static uint64_t next_period(slot_t *sl) {
  uint64_t iv = S.interval_ns, span = iv / 2;
  return iv - iv / 4 + fl__rng_next(&sl->rng) % (span + 1);
}

static int perf_set_period(int fd, uint64_t period) {
  return ioctl(fd, PERF_EVENT_IOC_PERIOD, &period);
}

/* Whether fd is still sl's perf event: the profiled code may have closed
 * the descriptor and its number been reused (a child that closes every
 * descriptor and opens others before it execs), and another file must not
 * be closed, or changed, in its place. */
static bool own_event(const slot_t *sl, int fd) {
  uint64_t id;
  return fd >= 0 && ioctl(fd, PERF_EVENT_IOC_ID, &id) == 0 && id == sl->perf_id;
}

static int timer_set_once(timer_t t, uint64_t ns) {
  struct itimerspec its = {.it_interval = {0, 0},
                           .it_value = {(time_t)(ns / 1000000000), (long)(ns % 1000000000)}};
  return timer_settime(t, 0, &its, NULL);
}

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
  const ElfW(Phdr) *phdr;
  size_t phnum;
  uintptr_t bias = fo.dlfo_link_map->l_addr;
  if (fo.dlfo_link_map == S.main_map && S.main_phdr) {
    phdr = S.main_phdr;
    phnum = S.main_phnum;
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
    if ((uintptr_t)callback < S.unwind_lo || (uintptr_t)callback >= S.unwind_hi) return 0;
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
__asm__(".text\n"
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
  if (rip >= S.unwind_lo && rip < S.unwind_hi) {
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
    if ((uintptr_t)pcs[i + 1] == rip && (p == S.restorer - 1 || p == S.restorer)) {
      start = (size_t)i + 1;
      adjust = p == S.restorer - 1;
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
  const struct sigaction *prev = &S.prev_trap;
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

static void sample_handler(int sig, siginfo_t *si, void *ucv) {
  if (sig == SIGTRAP && !(si->si_code == TRAP_PERF && fl__siginfo_perf_data(si) == TRAP_COOKIE)) {
    forward_trap(sig, si, ucv);
    return;
  }
  int saved_errno = errno;
  int s = tls_slot - 1;
  if (s < 0) goto out;
  slot_t *sl = &slots[s];
  __atomic_store_n(&sl->busy, 1, __ATOMIC_SEQ_CST);
  if (sl->warming) {
    unwind(sl, ucv);
    goto done;
  }
  if (!__atomic_load_n(&sl->armed, __ATOMIC_SEQ_CST)) goto done;
  if (S.mode == FL_SAMPLER_SIGNAL_ONLY) goto done;
  if (__atomic_load_n(&S.full, __ATOMIC_RELAXED)) {
    stop_own_timer(sl);
    __atomic_fetch_add(&S.hdr->dropped, 1, __ATOMIC_RELAXED);
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
  int64_t iv = (int64_t)S.interval_ns;
  /* A trap that waited while the thread blocked SIGTRAP (see below). */
  bool late = sig == SIGTRAP && (fl__siginfo_perf_flags(si) & TRAP_PERF_FLAG_ASYNC);
  bool measure = late || sl->perf_fd < 0 || ++sl->unmeasured >= CLOCK_EVERY;
  int64_t now = measure ? fl__clock_ns(CLOCK_THREAD_CPUTIME_ID) : 0;
  /* A perf event keeps its period (its hrtimer is forwarded from its last
   * expiry, so the handler's own time does not stretch it); a new one is
   * drawn for one sample in PERIOD_EVERY at random, as PERF_EVENT_IOC_PERIOD
   * restarts the hrtimer, which costs about 20 us on a virtual machine,
   * more than a signal. Within a run of equal periods the workload's phase
   * walks by the period modulo the workload's, so runs de-alias about as
   * well as a new period every sample; but a run whose period is nearly a
   * multiple of the workload's puts all its samples at one phase, and the
   * longer the runs, the larger (if rarer) that error. bench/alias_sim.py
   * --tail: over 13,600 samples of a loop of one interval, profiles off by
   * more than 2 points are about 0.07% at 32 and 0.6% at 256 (up to 5
   * points, which a unit test met). Hence 32.
   * The one-shot CPU timer is re-armed every time. */
  if (sl->perf_fd >= 0) {
    if ((fl__rng_next(&sl->rng) & (PERIOD_EVERY - 1)) == 0) change_period(sl);
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
  int64_t acc, weight = 1;
  if (measure) {
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
  if (S.mode == FL_SAMPLER_LEAF_ONLY) {
    sl->pcs[0] = (void *)fl__context_pc(ucv);
    n = 1;
  } else {
    n = unwind(sl, ucv);
  }
  uint64_t need = FL_SAMPLER_RECORD_WORDS + n;
  int64_t taken_ns = fl__clock_ns(CLOCK_MONOTONIC); /* the vDSO's: no system call */
  uint64_t pos = __atomic_load_n(&S.hdr->used_words, __ATOMIC_RELAXED);
  do {
    if (pos + need > S.capacity) {
      __atomic_store_n(&S.full, 1, __ATOMIC_RELAXED);
      __atomic_fetch_add(&S.hdr->dropped, 1, __ATOMIC_RELAXED);
      stop_own_timer(sl);
      goto done;
    }
  } while (!__atomic_compare_exchange_n(&S.hdr->used_words, &pos, pos + need, true,
                                        __ATOMIC_RELAXED, __ATOMIC_RELAXED));
  uint64_t *rec = S.words + pos;
  sl->last_rec = rec;
  sl->sampled = 1;
  rec[1] = (uint64_t)weight;
  rec[2] = measure ? (uint64_t)(now - sl->cpu_last_ns) : 0;
  rec[3] = S.tag;
  rec[4] = (uint64_t)taken_ns;
  for (size_t i = 0; i < n; i++) rec[FL_SAMPLER_RECORD_WORDS + i] = (uint64_t)(uintptr_t)sl->pcs[i];
  /* Word 0 last: a reader that sees it sees the whole record. */
  __atomic_store_n(&rec[0], ((uint64_t)n << 32) | (uint32_t)sl->tid, __ATOMIC_RELEASE);
  __atomic_fetch_add(&S.hdr->samples, 1, __ATOMIC_RELAXED);
  sl->carry_ns = acc - weight * iv;
  if (measure) {
    sl->cpu_last_ns = now;
    sl->unmeasured = 0;
  }
done:
  __atomic_store_n(&sl->busy, 0, __ATOMIC_SEQ_CST);
out:
  errno = saved_errno;
}

/* ---- timers (under reg_lock) ---- */

/* The attributes of a disabled task-clock event that expires every period
 * ns of its thread's CPU time, with SIGTRAP for KIND_PERF_TRAP (other
 * kinds signal through the descriptor, which open_perf sets up). */
static void task_clock_attr(struct perf_event_attr *a, uint64_t period, int kind) {
  memset(a, 0, sizeof *a);
  a->size = sizeof *a;
  a->type = PERF_TYPE_SOFTWARE;
  a->config = PERF_COUNT_SW_TASK_CLOCK;
  a->sample_period = period;
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
    a.exclude_kernel = S.trap_user_only;
    fd = (int)syscall(SYS_perf_event_open, &a, tid, -1, -1, PERF_FLAG_FD_CLOEXEC);
    if (fd < 0 && (errno == EACCES || errno == EPERM) && !a.exclude_kernel) {
      /* perf_event_paranoid >= 2 without CAP_PERFMON: user mode only. */
      a.exclude_kernel = 1;
      fd = (int)syscall(SYS_perf_event_open, &a, tid, -1, -1, PERF_FLAG_FD_CLOEXEC);
      if (fd >= 0) S.trap_user_only = true;
    }
    return fd;
  }
  a.exclude_kernel = 1; /* see the top of the file: no EINTR */
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

/* fd moved to S.high_fd or above (the same fd where there is no room). */
static int move_high(int fd) {
  if (fd < 0 || fd >= S.high_fd) return fd;
  int high = fcntl(fd, F_DUPFD_CLOEXEC, S.high_fd);
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
  void *map = mmap(NULL, S.page_bytes, PROT_READ, MAP_SHARED, fd, 0);
  return map == MAP_FAILED ? NULL : map;
}

/* A timer on clock (a thread's CPU clock) that signals thread tid. */
static int open_timer(pid_t tid, clockid_t clock, timer_t *t) {
  struct sigevent ev;
  memset(&ev, 0, sizeof ev);
  ev.sigev_notify = SIGEV_THREAD_ID;
  ev.sigev_signo = PROF_SIGNAL;
  ev._sigev_un._tid = tid;
  return timer_create(clock, &ev, t);
}

/* Starts sl's timer with the first kind from S.kind on that works for it.
 * Returns 0 or -1 with errno. */
static int arm(slot_t *sl) {
  uint64_t first = next_period(sl);
  sl->cpu_last_ns = fl__clock_ns(sl->cpu_clock);
  sl->last_rec = NULL;
  sl->carry_ns = 0;
  sl->unmeasured = 0;
  sl->perf_fd = -1;
  sl->perf_map = NULL;
  sl->fd_lost = 0;
  sl->was_blocked = 0;
  sl->has_timer = false;
  for (int kind = S.kind; kind < KIND_NONE; kind++) {
    if (kind == KIND_PERF_TRAP && !S.trap_allowed) continue;
    sl->kind = kind;
    if (kind != KIND_CPU_TIMER) {
      sl->perf_fd = move_high(open_perf(sl->tid, first, kind));
      if (sl->perf_fd < 0) continue;
      if (ioctl(sl->perf_fd, PERF_EVENT_IOC_ID, &sl->perf_id) < 0) sl->perf_id = 0;
      sl->perf_map = map_event(sl->perf_fd);
      __atomic_store_n(&sl->armed, 1, __ATOMIC_SEQ_CST);
      if (ioctl(sl->perf_fd, PERF_EVENT_IOC_ENABLE, 0) == 0) return 0;
      __atomic_store_n(&sl->armed, 0, __ATOMIC_SEQ_CST);
      if (sl->perf_map) munmap(sl->perf_map, S.page_bytes);
      sl->perf_map = NULL;
      close(sl->perf_fd);
      sl->perf_fd = -1;
    } else {
      if (open_timer(sl->tid, sl->cpu_clock, &sl->timer) < 0) return -1;
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
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return false;
  ssize_t n = read(fd, text, sizeof text - 1);
  close(fd);
  if (n <= 0) return false;
  text[n] = '\0';
  const char *line = strstr(text, "\nSigBlk:");
  return line && (strtoull(line + 8, NULL, 16) >> (sig - 1) & 1);
}

/* Stops sl's timer and waits until its thread is out of the handler.
 * Notes what the profiled code did to it during the run: the thread
 * blocked its sampling signal (now, or for a while: a late trap), or the
 * event ended with its descriptor, which the code closed. */
static void disarm(slot_t *sl) {
  bool was_armed = __atomic_exchange_n(&sl->armed, 0, __ATOMIC_SEQ_CST);
  bool ours = own_event(sl, sl->perf_fd);
  if (ours) ioctl(sl->perf_fd, PERF_EVENT_IOC_DISABLE, 0);
  if (sl->has_timer) timer_set_once(sl->timer, 0);
  while (__atomic_load_n(&sl->busy, __ATOMIC_SEQ_CST)) sched_yield();
  bool closed = was_armed && sl->perf_fd >= 0 && !ours && !sl->perf_map;
  bool blocked =
      was_armed && (sl->was_blocked || thread_blocks(sl->tid, sampling_signal(sl->kind)));
  if (blocked) {
    S.blocked_sig = sampling_signal(sl->kind);
    S.blocked_threads++;
  }
  if (closed) S.closed_threads++;
  /* The thread's CPU time since its last record (a tick-driven CPU timer
   * can leave several intervals of it, more so on a busy machine) goes to
   * that record, so that weights add up to the thread's CPU time; not
   * when the buffer filled up, whose dropped samples the header counts,
   * nor when the code stopped the thread's samples, whose time since is
   * none of that record's. */
  if (sl->last_rec && !__atomic_load_n(&S.full, __ATOMIC_RELAXED) && !blocked && !closed) {
    int64_t iv = (int64_t)S.interval_ns;
    int64_t tail = fl__clock_ns(sl->cpu_clock) - sl->cpu_last_ns + sl->carry_ns;
    if (tail >= iv / 2) sl->last_rec[1] += (uint64_t)((tail + iv / 2) / iv);
  }
  sl->last_rec = NULL;
  /* Without its descriptor, the mapping held the event: unmapping it
   * ends the event. */
  if (sl->perf_map) munmap(sl->perf_map, S.page_bytes);
  sl->perf_map = NULL;
  if (ours) close(sl->perf_fd);
  if (sl->has_timer) timer_delete(sl->timer);
  sl->perf_fd = -1;
  sl->has_timer = false;
}

/* ---- registration ---- */

/* Runs the handler's unwinding once on the calling thread (see the top of
 * the file). */
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
  size_t bytes = S.page_bytes + ALT_STACK_BYTES;
  void *map =
      mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_STACK, -1, 0);
  if (map == MAP_FAILED) return NULL;
  /* The guard page: a handler that outgrew the stack faults instead of
   * writing over what lies below. */
  stack_t ss = {.ss_sp = (char *)map + S.page_bytes, .ss_size = ALT_STACK_BYTES, .ss_flags = 0};
  if (mprotect(map, S.page_bytes, PROT_NONE) < 0 || sigaltstack(&ss, NULL) < 0) {
    munmap(map, bytes);
    return NULL;
  }
  return map;
}

/* Frees the alternate stack sl's thread was given. on_thread: called by
 * that thread, which stops using it first where it is still its own (the
 * program may have set another since); otherwise the thread is gone (or
 * not in this process: a forked child's copy). */
static void free_altstack(slot_t *sl, bool on_thread) {
  if (!sl->altstack) return;
  stack_t cur;
  if (on_thread && sigaltstack(NULL, &cur) == 0 &&
      cur.ss_sp == (char *)sl->altstack + S.page_bytes && !(cur.ss_flags & SS_DISABLE)) {
    if (cur.ss_flags & SS_ONSTACK) return; /* running on it: keep it */
    stack_t off = {.ss_flags = SS_DISABLE};
    sigaltstack(&off, NULL);
  }
  munmap(sl->altstack, S.page_bytes + ALT_STACK_BYTES);
  sl->altstack = NULL;
}

/* Appends a record of thread sl's name, when the buffer has room for it:
 * read with prctl on the thread itself (own), else from
 * /proc/self/task/TID/comm, for a thread sampled since its name was last
 * recorded. Never from the signal handler: a thread names itself
 * (pthread_setname_np) after it registers, so the name is read when
 * sampling ends for it. */
static void record_name(slot_t *sl, bool own) {
  if (!S.hdr || !sl->sampled) return; /* a thread without samples needs no name */
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
  uint64_t pos = __atomic_load_n(&S.hdr->used_words, __ATOMIC_RELAXED);
  do {
    if (pos + need > S.capacity) return;
  } while (!__atomic_compare_exchange_n(&S.hdr->used_words, &pos, pos + need, true,
                                        __ATOMIC_RELAXED, __ATOMIC_RELAXED));
  uint64_t *rec = S.words + pos;
  memcpy(&rec[1], name, 16);
  rec[3] = S.tag;
  rec[4] = (uint64_t)fl__clock_ns(CLOCK_MONOTONIC);
  __atomic_store_n(&rec[0], (uint64_t)FL_SAMPLER_NAME_RECORD << 32 | (uint32_t)sl->tid,
                   __ATOMIC_RELEASE);
}

void fl_sampler_thread_enter(void) {
  clockid_t cpu_clock;
  if (!S.initialized || tls_slot || pthread_getcpuclockid(pthread_self(), &cpu_clock) != 0) return;
  pthread_mutex_lock(&reg_lock);
  int s = 0;
  while (s < MAX_THREADS && slots[s].used) s++;
  if (s < MAX_THREADS) { /* else: not sampled */
    if (s >= slots_used_below) slots_used_below = s + 1;
    slot_t *sl = &slots[s];
    sl->used = 1;
    sl->sampled = 0;
    sl->armed = 0;
    sl->busy = 0;
    sl->tid = current_tid();
    sl->cpu_clock = cpu_clock;
    sl->perf_fd = -1;
    sl->perf_map = NULL;
    sl->has_timer = false;
    sl->altstack = give_altstack();
    sl->rng = ((uint64_t)sl->tid * 0x9E3779B97F4A7C15ULL) ^ (uint64_t)fl__clock_ns(CLOCK_MONOTONIC);
    if (!sl->rng) sl->rng = 1;
    tls_slot = s + 1;
    warm_up(sl);
    if (__atomic_load_n(&S.running, __ATOMIC_SEQ_CST)) arm(sl); /* failure: not sampled */
  }
  pthread_mutex_unlock(&reg_lock);
}

void fl_sampler_thread_exit(void) {
  int s = tls_slot - 1;
  if (s < 0) return;
  pthread_mutex_lock(&reg_lock);
  disarm(&slots[s]);
  if (__atomic_load_n(&S.running, __ATOMIC_SEQ_CST)) record_name(&slots[s], true);
  free_altstack(&slots[s], true);
  slots[s].used = 0;
  tls_slot = 0;
  pthread_mutex_unlock(&reg_lock);
}

/* fork: the child has only the forking thread, no timers, copies of the
 * parent's perf descriptors (which still watch the parent's threads; the
 * program may have reused the number of one), none of the events'
 * mappings (the kernel does not copy them), and copies of the other
 * threads' alternate stacks. */
static void before_fork(void) {
  pthread_mutex_lock(&reg_lock);
}
static void after_fork_parent(void) {
  pthread_mutex_unlock(&reg_lock);
}
static void after_fork_child(void) {
  int own = tls_slot - 1;
  for (int s = 0; s < slots_used_below; s++) {
    slot_t *sl = &slots[s];
    if (!sl->used) continue;
    if (own_event(sl, sl->perf_fd)) close(sl->perf_fd);
    sl->perf_fd = -1;
    sl->perf_map = NULL;
    sl->has_timer = false;
    sl->armed = 0;
    sl->busy = 0;
    sl->sampled = 0; /* the parent's samples, not the child's */
    if (s == own) {
      sl->tid = current_tid();
      pthread_getcpuclockid(pthread_self(), &sl->cpu_clock); /* never fails on itself */
    } else {
      free_altstack(sl, false);
      sl->used = 0;
    }
  }
  S.running = 0;
  pthread_mutex_init(&reg_lock, NULL);
}

/* ---- the process ---- */

/* Finds what the lock-free dl_iterate_phdr needs: the main program's
 * program headers and libunwind's mapping. */
static void find_objects(void) {
  struct dl_find_object fo;
  if (_dl_find_object((void *)getauxval(AT_ENTRY), &fo) == 0 &&
      getauxval(AT_PHENT) == sizeof(ElfW(Phdr))) {
    S.main_map = fo.dlfo_link_map;
    S.main_phdr = (const ElfW(Phdr) *)getauxval(AT_PHDR);
    S.main_phnum = getauxval(AT_PHNUM);
  }
  union {
    int (*fn)(void **, int);
    void *p;
  } bt = {unw_backtrace};
  if (_dl_find_object(bt.p, &fo) == 0) {
    S.unwind_lo = (uintptr_t)fo.dlfo_map_start;
    S.unwind_hi = (uintptr_t)fo.dlfo_map_end;
  }
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
 * S.trap_user_only), the timer never expires inside a system call, and the
 * second test is moot. One thing is not tried: whether a thread that
 * blocks SIGTRAP is spared the trap (5.19; earlier kernels force it on the
 * thread, which kills the process). Called with sample_handler installed
 * and the calling thread unregistered, where the probe's traps do nothing. */
static bool trap_works(void) {
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
  S.trap_user_only = true;
  return true;
}

/* Installs the handlers and finds what the handler needs: once per
 * process. Returns 0 or -1 with err. */
static int prepare_process(char *err, size_t err_size) {
  find_objects();
  if (!S.unwind_hi) {
    snprintf(err, err_size, "cannot locate libunwind in the process");
    return -1;
  }
  unw_set_caching_policy(unw_local_addr_space, UNW_CACHE_PER_THREAD);
  S.page_bytes = (size_t)sysconf(_SC_PAGESIZE);
  struct rlimit files;
  S.high_fd = HIGH_FD;
  if (getrlimit(RLIMIT_NOFILE, &files) == 0 && files.rlim_cur != RLIM_INFINITY &&
      files.rlim_cur < 2 * HIGH_FD)
    S.high_fd = (int)(files.rlim_cur / 2);

  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_sigaction = sample_handler;
  /* On the thread's alternate stack (fl_sampler_thread_enter gives each
   * one): a sample that lands near the end of the thread's own stack (deep
   * recursion) must not overflow it. */
  sa.sa_flags = SA_SIGINFO | SA_RESTART | SA_ONSTACK;
  /* Nothing else (an interrupt's siglongjmp above all) may run inside the
   * handler; faults are left unblocked so that they still report. */
  sigfillset(&sa.sa_mask);
  int faults[] = {SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGTRAP, SIGSYS, SIGABRT};
  for (size_t i = 0; i < sizeof faults / sizeof faults[0]; i++) sigdelset(&sa.sa_mask, faults[i]);
  struct sigaction now;
  S.ours = sa;
  if (sigaction(PROF_SIGNAL, &sa, NULL) < 0 || sigaction(PROF_SIGNAL, NULL, &now) < 0 ||
      sigaction(SIGTRAP, &sa, &S.prev_trap) < 0) {
    snprintf(err, err_size, "cannot install the sampling signal handler: %s", strerror(errno));
    return -1;
  }
  S.restorer = (uintptr_t)now.sa_restorer;
  pthread_atfork(before_fork, after_fork_parent, after_fork_child);
  S.trap_allowed = trap_works();

  /* Bind the PLT slots of what the handler calls outside unwinding. */
  perf_set_period(-1, 0);
  ioctl(-1, PERF_EVENT_IOC_DISABLE, 0);
  timer_t t;
  if (open_timer(current_tid(), CLOCK_THREAD_CPUTIME_ID, &t) == 0) {
    timer_set_once(t, 0);
    timer_delete(t);
  }
  fl__clock_ns(CLOCK_THREAD_CPUTIME_ID);
  S.initialized = true;
  return 0;
}

/* fl_sampler_init and fl_sampler_init_zeroed: clear says whether buf must
 * be cleared. */
static int init(void *buf, size_t bytes, bool clear, char *err, size_t err_size) {
  if (__atomic_load_n(&S.running, __ATOMIC_SEQ_CST)) {
    snprintf(err, err_size, "the sampler is running");
    return -1;
  }
  if (buf && (((uintptr_t)buf & 7) || bytes < fl_sampler_buffer_bytes(64))) {
    snprintf(err, err_size, "the sample buffer is too small or misaligned (%zu bytes)", bytes);
    return -1;
  }
  if (!S.initialized && prepare_process(err, err_size) < 0) return -1;
  if (buf) {
    if (clear) memset(buf, 0, bytes);
    S.hdr = buf;
    S.words = (uint64_t *)buf + FL_SAMPLER_HEADER_WORDS;
    S.capacity = bytes / sizeof(uint64_t) - FL_SAMPLER_HEADER_WORDS;
    S.hdr->capacity_words = S.capacity;
    __atomic_store_n(&S.hdr->magic, FL_SAMPLER_MAGIC, __ATOMIC_RELEASE);
  } else {
    S.hdr = NULL;
    S.words = NULL;
    S.capacity = 0;
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

void fl_sampler_reset(void) {
  if (!S.hdr || __atomic_load_n(&S.running, __ATOMIC_SEQ_CST)) return;
  uint64_t used = S.hdr->used_words;
  if (used > S.capacity) used = S.capacity;
  /* Zero what the last run wrote, so that a reservation never filled reads
   * as the end of the records. */
  memset(S.words, 0, used * sizeof(uint64_t));
  S.hdr->used_words = 0;
  S.hdr->dropped = 0;
  S.hdr->samples = 0;
  S.hdr->source = FL_SAMPLER_SOURCE_NONE;
  S.full = 0;
}

int fl_sampler_start(uint64_t interval_ns, uint64_t tag, char *err, size_t err_size) {
  if (!S.initialized || !S.hdr) {
    snprintf(err, err_size, "the sampler has no buffer (fl_sampler_init)");
    return -1;
  }
  if (__atomic_load_n(&S.running, __ATOMIC_SEQ_CST)) {
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
  if (sigaction(SIGTRAP, NULL, &cur) == 0 && cur.sa_sigaction != sample_handler) {
    S.prev_trap = cur;
    sigaction(SIGTRAP, &S.ours, NULL);
  }
  if (sigaction(PROF_SIGNAL, NULL, &cur) == 0 && cur.sa_sigaction != sample_handler)
    sigaction(PROF_SIGNAL, &S.ours, NULL);
  S.replaced = 0;
  pthread_mutex_lock(&reg_lock);
  S.blocked_sig = 0;
  S.blocked_threads = S.closed_threads = 0;
  S.interval_ns = interval_ns;
  S.tag = tag;
  S.mode = S.next_mode;
  S.full = 0;
  S.samples_at_start = S.hdr->samples;
  S.hdr->interval_ns = interval_ns;
  const char *want = getenv("CFLAME_SAMPLER_SOURCE");
  S.kind = !want                         ? KIND_PERF_TRAP
           : !strcmp(want, "timer")      ? KIND_CPU_TIMER
           : !strcmp(want, "perf-async") ? KIND_PERF_ASYNC
                                         : KIND_PERF_TRAP;
  __atomic_store_n(&S.running, 1, __ATOMIC_SEQ_CST);
  int armed = 0, first_err = 0;
  pid_t pid = getpid();
  for (int s = 0; s < slots_used_below; s++) {
    slot_t *sl = &slots[s];
    if (!sl->used) continue;
    /* A thread that ended without fl_sampler_thread_exit. */
    if (syscall(SYS_tgkill, pid, sl->tid, 0) < 0 && errno == ESRCH) {
      free_altstack(sl, false);
      sl->used = 0;
      continue;
    }
    if (arm(sl) == 0) {
      /* The first thread tells which kind works here. */
      if (++armed == 1) S.kind = sl->kind;
    } else if (!first_err) {
      first_err = errno;
    }
  }
  S.hdr->source =
      S.kind == KIND_CPU_TIMER ? FL_SAMPLER_SOURCE_CPU_TIMER : FL_SAMPLER_SOURCE_PERF_TASK_CLOCK;
  pthread_mutex_unlock(&reg_lock);
  if (!armed) {
    fl_sampler_stop();
    snprintf(err, err_size, "cannot start a CPU timer for sampling: %s",
             first_err ? strerror(first_err) : "no thread is registered");
    return -1;
  }
  return 0;
}

void fl_sampler_set_mode(fl_sampler_mode_t mode) {
  pthread_mutex_lock(&reg_lock);
  S.next_mode = mode;
  pthread_mutex_unlock(&reg_lock);
}

uint64_t fl_sampler_stop(void) {
  /* Did the run itself replace a handler the sampler needs? Then the
   * samples after that were lost. */
  struct sigaction cur;
  if (sigaction(SIGTRAP, NULL, &cur) == 0 && cur.sa_sigaction != sample_handler)
    S.replaced |= 1u << 0;
  if (sigaction(PROF_SIGNAL, NULL, &cur) == 0 && cur.sa_sigaction != sample_handler)
    S.replaced |= 1u << 1;
  pthread_mutex_lock(&reg_lock);
  bool was_running = __atomic_load_n(&S.running, __ATOMIC_SEQ_CST);
  for (int s = 0; s < slots_used_below; s++)
    if (slots[s].used) disarm(&slots[s]);
  __atomic_store_n(&S.running, 0, __ATOMIC_SEQ_CST);
  for (int s = 0; s < slots_used_below && was_running; s++)
    if (slots[s].used) record_name(&slots[s], s == tls_slot - 1);
  pthread_mutex_unlock(&reg_lock);
  return S.hdr ? __atomic_load_n(&S.hdr->samples, __ATOMIC_RELAXED) - S.samples_at_start : 0;
}

const char *fl_sampler_replaced_handler(void) {
  return S.replaced & 1u ? "SIGTRAP" : S.replaced & 2u ? "SIGPROF" : NULL;
}

void fl_sampler_interference(fl_sampler_interference_t *out) {
  pthread_mutex_lock(&reg_lock);
  out->replaced = fl_sampler_replaced_handler();
  out->blocked = S.blocked_sig == SIGTRAP ? "SIGTRAP" : S.blocked_sig ? "SIGPROF" : NULL;
  out->blocked_threads = S.blocked_threads;
  out->closed_threads = S.closed_threads;
  pthread_mutex_unlock(&reg_lock);
}

bool fl_sampler_running(void) {
  return __atomic_load_n(&S.running, __ATOMIC_SEQ_CST) != 0;
}
