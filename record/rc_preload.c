/* SPDX-License-Identifier: BSD-3-Clause */
/* rc_preload: the library `cflame record` preloads into the program it
 * runs (libcflame_preload.so; rc_files.h says what it writes where).
 *
 * It is the kernel's worker's recorder in another program: the same
 * in-process sampler (fl_sampler) and allocation recorder (fl_allocs), the
 * same thread wrappers (flame/sample/fl__threads.c), linked from the same
 * libraries. The dynamic loader puts a preloaded library right after the
 * executable in symbol lookup, so its pthread_create, thrd_create, dlopen,
 * dlclose, sigaction, signal, the exec functions and dl_iterate_phdr (the
 * sampler's lock-free one) are the ones the program and its libraries
 * call, as the worker's exported symbols are for cells.
 *
 * Each process image records on its own:
 *  - a constructor (it runs before the program's own, after those of the
 *    libraries the preloaded one needs) claims the image's files in the
 *    recording directory, maps its sample buffer (and with --allocs its
 *    allocation buffer), notes the image (pid, parent, name, MPI rank) and
 *    its maps, and starts sampling every thread: the main thread at once,
 *    the others as the thread wrappers register them;
 *  - a forked child gets a buffer and files of its own (the parent's
 *    mapping is shared, so the child leaves it): an atfork handler,
 *    registered after the recorders' own, does what the constructor did.
 *    posix_spawn and vfork children run no handlers and exec at once;
 *  - exec replaces the image (sampling stops just before, see "exec"
 *    below); the environment keeps LD_PRELOAD and the recording's
 *    variables, so the new program's constructor starts again under the
 *    same pid, with the next generation of files;
 *  - at exit a destructor (the last to run, the library having been the
 *    first initialized) stops the recorders, which adds each thread's time
 *    since its last sample, and notes the maps and the exit.
 * A process killed, or ended by _exit, still leaves its samples: the
 * buffers are shared file mappings, and a record is complete once its
 * first word is written. The maps are saved at start, before each dlopen
 * and dlclose that follows a load, and at exit (after a load): the reader
 * keeps every snapshot's modules, so a library closed before the end
 * still has its symbols; a process killed after a dlopen misses the
 * modules of that last dlopen alone.
 *
 * dlopen and dlclose take a snapshot and then jump to the C library's
 * function with the caller's return address in place: glibc finds the
 * calling object from it, for its RUNPATH and $ORIGIN, which a call from
 * here would change.
 *
 * Nothing here allocates from the program's heap: with --allocs, the
 * interposed allocator would count it as the program's. Buffers are
 * mapped, text is formatted on the stack. Errors go to the image's info
 * file, for `cflame record` to report once the program has ended (the
 * program's standard error is its own); only when the directory itself
 * cannot be written is a line printed on standard error. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <link.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>
#include <sys/mman.h>
#include <unistd.h>

#include "cflame/fl_events.h"
#include "cflame/fl_allocs.h"
#include "cflame/fl_sampler.h"
#include "fl__threads.h"
#include "fl__waits.h"
#include "rc_files.h"
#include "fl__common.h"

#define HIDDEN __attribute__((visibility("hidden")))
#define MAX_GENERATIONS 10000

static struct {
  bool active;        /* this image records */
  bool allocs;        /* ... allocations */
  bool sampling;      /* ... CPU samples (until the program takes the sampler's signals) */
  bool signals_taken; /* the program set a handler of the sampler's signals */
  char dir[PATH_MAX]; /* the recording directory */
  uint64_t interval_ns, words;
  double alloc_rate;
  int pid, gen;
  void *samples, *alloc_buf;
  size_t samples_bytes, alloc_bytes;
  unsigned long long loads; /* dlpi_adds at the last maps snapshot */
} R;

static pthread_mutex_t maps_lock = PTHREAD_MUTEX_INITIALIZER;

static void resolve_signal_functions(void);

/* The C library's, for the trampolines below. */
HIDDEN void *rc_real_dlopen, *rc_real_dlclose;
static int (*real_sigaction)(int, const struct sigaction *, struct sigaction *);
static sighandler_t (*real_signal)(int, sighandler_t);
/* This library's code: calls from it are the recorders' own. */
static uintptr_t own_lo, own_hi;

/* ---- files ---- */

/* The image's file suffix, into out; false when it does not fit. */
static bool path_of(char *out, size_t size, const char *suffix) {
  int n = snprintf(out, size, RC_FILE_FMT, R.dir, R.pid, R.gen, suffix);
  return n >= 0 && (size_t)n < size;
}

/* Appends text to the image's info file. */
static void info_add(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void info_add(const char *fmt, ...) {
  char path[PATH_MAX], line[512];
  va_list ap;
  va_start(ap, fmt);
  int n = vsnprintf(line, sizeof line, fmt, ap);
  va_end(ap);
  if (n < 0) return;
  if ((size_t)n >= sizeof line) n = sizeof line - 1;
  if (!path_of(path, sizeof path, RC_SUFFIX_INFO)) return;
  int fd = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
  if (fd < 0) return;
  ssize_t w = write(fd, line, (size_t)n);
  (void)w;
  close(fd);
}

/* Gives blocks to the part of buffer file f (bytes long) that is allocated
 * at start (rc_files.h); *end is set to its end. Returns 0 or an errno. */
static int allocate_start(int f, size_t bytes, bool allocs, size_t *end) {
  if (allocs)
    return fl_allocs_allocate_start(
        f, bytes, fl_allocs_table_slots(RC_ALLOCS_LIVE_BLOCKS, R.alloc_rate), RC_START_WORDS, end);
  *end = fl_sampler_buffer_bytes(RC_START_WORDS);
  if (*end > bytes) *end = bytes;
  return posix_fallocate(f, 0, (off_t)*end);
}

/* Creates and maps the image's file suffix of bytes (all zeros, sparse),
 * the part allocated at start given blocks (allocate_start: *first is the
 * end of that part). Returns the mapping and its descriptor in *fd (for the
 * recorder, which grows the file), or NULL with errno. */
static void *map_file(const char *suffix, size_t bytes, bool allocs, size_t *first, int *fd) {
  char path[PATH_MAX];
  *fd = -1;
  if (!path_of(path, sizeof path, suffix)) {
    errno = ENAMETOOLONG;
    return NULL;
  }
  int f = open(path, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
  if (f < 0) return NULL;
  void *map = MAP_FAILED;
  int e = 0;
  if (ftruncate(f, (off_t)bytes) < 0)
    e = errno;
  else if ((e = allocate_start(f, bytes, allocs, first)) == 0 &&
           (map = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, f, 0)) == MAP_FAILED)
    e = errno;
  /* No read-ahead: a first write would otherwise have the file system
   * fill a large run of pages of the (sparse) file up front. */
  if (map != MAP_FAILED) {
    madvise(map, bytes, MADV_RANDOM);
    *fd = f;
    return map;
  }
  close(f);
  unlink(path);
  errno = e;
  return NULL;
}

/* The program's file name, as the system names the process. */
static const char *program_name(void) {
  const char *path = (const char *)getauxval(AT_EXECFN);
  if (!path) return "?";
  const char *slash = strrchr(path, '/');
  return slash ? slash + 1 : path;
}

/* Says that a buffer file could not be made, on standard error too when
 * the file system is full (the info file may then hold nothing). */
static void no_buffer(const char *what, bool allocs) {
  int e = errno;
  size_t end, hole, hole_bytes;
  size_t first = rc_start_bytes(allocs, R.alloc_rate, &end, &hole, &hole_bytes);
  if (e == ENOSPC)
    fprintf(stderr,
            "cflame record: %s (pid %d) is not recorded: TMPDIR's file system (%s) is full: its "
            "%s buffer needs %zu bytes to start\n",
            program_name(), R.pid, R.dir, what, first);
  info_add(RC_INFO_ERROR " cannot map the %s buffer (%zu bytes to start) in %s: %s\n", what, first,
           R.dir, strerror(e));
}

/* Claims the first free generation of this pid: creates its info file.
 * Returns 0 or -1 with errno. */
static int claim_generation(void) {
  char path[PATH_MAX];
  for (R.gen = 0; R.gen < MAX_GENERATIONS; R.gen++) {
    if (!path_of(path, sizeof path, RC_SUFFIX_INFO)) {
      errno = ENAMETOOLONG;
      return -1;
    }
    int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
    if (fd >= 0) return close(fd);
    if (errno != EEXIST) return -1;
  }
  return -1;
}

static int count_loads(struct dl_phdr_info *info, size_t size, void *data) {
  *(unsigned long long *)data = info->dlpi_adds;
  return 1;
}

/* Appends a snapshot of /proc/self/maps to the image's maps file, when
 * objects were loaded since the last one (or always): unloading adds no
 * module to symbolize. */
static void save_maps(bool always) {
  if (!R.active) return;
  pthread_mutex_lock(&maps_lock);
  unsigned long long loads = 0;
  dl_iterate_phdr(count_loads, &loads);
  if (always || loads != R.loads) {
    char path[PATH_MAX], buf[8192];
    bool named = path_of(path, sizeof path, RC_SUFFIX_MAPS);
    int in = open("/proc/self/maps", O_RDONLY | O_CLOEXEC);
    int out = named ? open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600) : -1;
    bool whole = in >= 0 && out >= 0;
    for (ssize_t n; whole && (n = read(in, buf, sizeof buf)) != 0;)
      whole = n > 0 && write(out, buf, (size_t)n) == n;
    /* The end marker says the snapshot is whole. */
    if (whole && write(out, RC_MAPS_END, strlen(RC_MAPS_END)) == (ssize_t)strlen(RC_MAPS_END))
      R.loads = loads;
    if (in >= 0) close(in);
    if (out >= 0) close(out);
  }
  pthread_mutex_unlock(&maps_lock);
}

/* ---- recording ---- */

/* Stops sampling (it was on), and notes in the info file what the
 * program did to the sampler meanwhile. */
static void stop_sampling(void) {
  fl_sampler_stop();
  fl_sampler_interference_t what;
  fl_sampler_interference(&what);
  if (what.replaced) info_add(RC_INFO_REPLACED " %s\n", what.replaced);
  if (what.blocked) info_add(RC_INFO_BLOCKED " %s %u\n", what.blocked, what.blocked_threads);
  if (what.closed_threads) info_add(RC_INFO_CLOSED " %u\n", what.closed_threads);
}

static void enter_thread(void) {
  if (__atomic_load_n(&R.sampling, __ATOMIC_ACQUIRE)) fl_sampler_thread_enter();
  if (R.allocs) fl_allocs_thread_enter();
}

static void leave_thread(void) {
  fl_sampler_thread_exit();
  if (R.allocs) fl_allocs_thread_exit();
}

static void note_image(void) {
  info_add(RC_INFO_PID " %d\n" RC_INFO_PPID " %d\n" RC_INFO_NAME " %s\n", R.pid, (int)getppid(),
           program_name());
  const char *rank = rc_mpi_rank();
  if (rank) info_add(RC_INFO_RANK " %s\n", rank);
}

/* Starts recording this image (the process, or a forked child): its
 * files, its buffers, the recorders. The buffers of the image before (a
 * forked child's parent's) are replaced, then unmapped. */
static void start_image(void) {
  void *old_samples = R.samples, *old_allocs = R.alloc_buf;
  size_t old_samples_bytes = R.samples_bytes, old_alloc_bytes = R.alloc_bytes;
  R.active = false;
  R.pid = getpid();
  R.loads = 0;
  R.samples = R.alloc_buf = NULL;
  if (claim_generation() < 0) {
    /* Nowhere to say it but standard error. */
    fprintf(stderr,
            "cflame record: %s (pid %d) is not recorded: cannot create its files in %s: %s\n",
            program_name(), R.pid, R.dir, strerror(errno));
    goto out;
  }
  R.active = true;
  note_image();
  save_maps(true);
  char err[256];
  if (R.allocs) {
    size_t slots = fl_allocs_table_slots(RC_ALLOCS_LIVE_BLOCKS, R.alloc_rate);
    R.alloc_bytes = fl_allocs_buffer_bytes((size_t)R.words, slots);
    size_t first;
    int fd;
    if (!(R.alloc_buf = map_file(RC_SUFFIX_ALLOCS, R.alloc_bytes, true, &first, &fd))) {
      no_buffer("allocation", true);
    } else if (fl_allocs_init_zeroed(R.alloc_buf, R.alloc_bytes, slots, err, sizeof err) < 0 ||
               fl_allocs_use_file(fd, first, err, sizeof err) < 0) {
      info_add(RC_INFO_ERROR " %s\n", err);
      munmap(R.alloc_buf, R.alloc_bytes);
      R.alloc_buf = NULL;
      if (fd >= 0) close(fd);
    } else {
      fl_allocs_thread_enter();
    }
  }
  if (R.interval_ns) {
    R.samples_bytes = fl_sampler_buffer_bytes((size_t)R.words);
    size_t first;
    int fd;
    if (!(R.samples = map_file(RC_SUFFIX_SAMPLES, R.samples_bytes, false, &first, &fd))) {
      no_buffer("sample", false);
    } else if (fl_sampler_init_zeroed(R.samples, R.samples_bytes, err, sizeof err) < 0 ||
               fl_sampler_use_file(fd, first, err, sizeof err) < 0) {
      info_add(RC_INFO_ERROR " %s\n", err);
      munmap(R.samples, R.samples_bytes);
      R.samples = NULL;
      if (fd >= 0) close(fd);
    }
  }
out:
  if (old_samples) munmap(old_samples, old_samples_bytes);
  if (old_allocs) munmap(old_allocs, old_alloc_bytes);
}

/* Starts the recorders (after start_image and the atfork handler). */
static void start_recorders(void) {
  if (!R.active) return;
  char err[256];
  if (R.alloc_buf && fl_allocs_start(R.alloc_rate, 0, err, sizeof err) < 0)
    info_add(RC_INFO_ERROR " %s\n", err);
  if (R.samples && fl_sampler_start(R.interval_ns, 0, err, sizeof err) < 0)
    info_add(RC_INFO_ERROR " %s\n", err);
  else if (R.samples)
    __atomic_store_n(&R.sampling, true, __ATOMIC_RELEASE);
}

static void after_fork_child(void) {
  R.sampling = false; /* the child's sampler is not running (fl_sampler's own handler) */
  if (!R.active) return;
  if (R.signals_taken) {
    /* The child has the program's handlers: it is not sampled (a
     * program it execs is). */
    R.active = false;
    return;
  }
  pthread_mutex_init(&maps_lock, NULL);
  start_image();
  start_recorders();
}

static uint64_t env_u64(const char *name, uint64_t fallback) {
  const char *s = getenv(name);
  char *end;
  unsigned long long v = s ? strtoull(s, &end, 10) : 0;
  return s && *s && !*end && v ? v : fallback;
}

__attribute__((constructor)) static void rc_preload_start(void) {
  const char *dir = getenv(RC_ENV_DIR);
  if (!dir || !*dir || strlen(dir) >= sizeof R.dir) return;
  strcpy(R.dir, dir);
  R.interval_ns = env_u64(RC_ENV_INTERVAL, 0);
  const char *clock = getenv(RC_ENV_CLOCK);
  fl_sampler_set_clock(clock && !strcmp(clock, "wall") ? FL_SAMPLER_CLOCK_WALL
                                                       : FL_SAMPLER_CLOCK_CPU);
  const char *name = getenv(RC_ENV_EVENT);
  const fl_event_t *event = name ? fl_event_find(name) : NULL;
  if (event) fl_sampler_set_event(event->type, event->config, event->period);
  R.words = env_u64(RC_ENV_WORDS, 1u << 20);
  const char *rate = getenv(RC_ENV_ALLOCS);
  if (rate && *rate) {
    R.alloc_rate = strtod(rate, NULL);
    R.allocs = R.alloc_rate > 0 && R.alloc_rate <= 1;
  }
  *(void **)&rc_real_dlopen = dlsym(RTLD_NEXT, "dlopen");
  *(void **)&rc_real_dlclose = dlsym(RTLD_NEXT, "dlclose");
  resolve_signal_functions();
  struct dl_find_object own;
  if (_dl_find_object((void *)(uintptr_t)rc_preload_start, &own) == 0) {
    own_lo = (uintptr_t)own.dlfo_map_start;
    own_hi = (uintptr_t)own.dlfo_map_end;
  }
  fl__threads_init(enter_thread, leave_thread);
  fl__waits_init();
  start_image();
  /* After the recorders' own atfork handlers (their init registers
   * them), so that a child's recorders are reset before this one starts
   * them again. */
  pthread_atfork(NULL, NULL, after_fork_child);
  start_recorders();
}

__attribute__((destructor)) static void rc_preload_stop(void) {
  if (!R.active) return;
  if (__atomic_exchange_n(&R.sampling, false, __ATOMIC_ACQ_REL)) stop_sampling();
  if (R.alloc_buf) fl_allocs_stop();
  save_maps(false);
  R.active = false;
}

/* ---- the sampler's signals ----
 *
 * The sampler owns SIGTRAP (its perf events' traps) and SIGPROF (its
 * other timers, and each new thread's warm-up). A program that sets either
 * itself would have the sampler's signals go to its handler, or end the
 * process by their default action: a child that resets every signal to
 * its default before exec (Open MPI's mpirun does) would die of the next
 * trap; mpirun handles both to forward them to its ranks, which would die
 * of the traps sent on. So when the program sets one (sigaction or
 * signal, from outside this library), sampling stops in that process
 * first, for good, and in the children it forks afterwards, which inherit
 * its handlers; the info file says so. A program exec'd starts afresh.
 * Whatever else the program did that stopped samples (the sampling signal
 * blocked, a timer's descriptor closed while nothing else held it: see
 * fl_sampler.h), the sampler tells at each stop, and stop_sampling notes
 * it in the info file too. */

static void resolve_signal_functions(void) {
  if (!real_sigaction) *(void **)&real_sigaction = dlsym(RTLD_NEXT, "sigaction");
  if (!real_signal) *(void **)&real_signal = dlsym(RTLD_NEXT, "signal");
}

/* Before the program sets the handler of sig, called from caller. */
static void before_handler_change(int sig, const void *caller) {
  if ((sig != SIGTRAP && sig != SIGPROF) ||
      ((uintptr_t)caller >= own_lo && (uintptr_t)caller < own_hi))
    return;
  if (!__atomic_exchange_n(&R.sampling, false, __ATOMIC_ACQ_REL)) return;
  R.signals_taken = true;
  stop_sampling();
  info_add(RC_INFO_REPLACED " %s\n", sig == SIGTRAP ? "SIGTRAP" : "SIGPROF");
}

int sigaction(int sig, const struct sigaction *act, struct sigaction *old) {
  resolve_signal_functions();
  if (act) before_handler_change(sig, __builtin_return_address(0));
  return real_sigaction(sig, act, old);
}

sighandler_t signal(int sig, sighandler_t handler) {
  resolve_signal_functions();
  before_handler_change(sig, __builtin_return_address(0));
  return real_signal(sig, handler);
}

/* ---- exec ----
 *
 * A perf event's trap that comes due while the thread is in execve (the
 * task clock counts kernel time where it may) is delivered on the way back
 * to user mode: in the new program, before any handler of ours is there,
 * whose default action ends it. So sampling stops before each exec (the
 * events disabled, a trap already queued taken here), and starts again if
 * the exec fails (execvp tries the directories of PATH in turn). The exec
 * functions call the system call directly inside the C library, so each
 * is wrapped. A vfork child (sharing this memory, with a pid of its own)
 * has no events of its own and must not stop its parent's. */

static int (*real_execve)(const char *, char *const[], char *const[]);
static int (*real_execvpe)(const char *, char *const[], char *const[]);
static int (*real_fexecve)(int, char *const[], char *const[]);
static int (*real_execveat)(int, const char *, char *const[], char *const[], int);

/* Stops sampling before an exec; returns whether it did. */
static bool before_exec(void) {
  if (getpid() != R.pid || !__atomic_exchange_n(&R.sampling, false, __ATOMIC_ACQ_REL)) return false;
  stop_sampling();
  return true;
}

/* After an exec that failed: sampling as before. */
static void after_failed_exec(bool stopped) {
  char err[256];
  if (stopped && fl_sampler_start(R.interval_ns, 0, err, sizeof err) == 0)
    __atomic_store_n(&R.sampling, true, __ATOMIC_RELEASE);
}

#define RESOLVE(fn) \
  (real_##fn ? real_##fn : (*(void **)&real_##fn = dlsym(RTLD_NEXT, #fn), real_##fn))

/* Returns what call returns, with sampling stopped around it. */
#define WITH_SAMPLING_STOPPED(call) \
  do {                              \
    bool stopped = before_exec();   \
    int rc = call;                  \
    int saved = errno;              \
    after_failed_exec(stopped);     \
    errno = saved;                  \
    return rc;                      \
  } while (0)

int execve(const char *path, char *const argv[], char *const envp[]) {
  WITH_SAMPLING_STOPPED(RESOLVE(execve)(path, argv, envp));
}

int execvpe(const char *file, char *const argv[], char *const envp[]) {
  WITH_SAMPLING_STOPPED(RESOLVE(execvpe)(file, argv, envp));
}

int fexecve(int fd, char *const argv[], char *const envp[]) {
  WITH_SAMPLING_STOPPED(RESOLVE(fexecve)(fd, argv, envp));
}

int execveat(int dirfd, const char *path, char *const argv[], char *const envp[], int flags) {
  WITH_SAMPLING_STOPPED(RESOLVE(execveat)(dirfd, path, argv, envp, flags));
}

int execv(const char *path, char *const argv[]) {
  return execve(path, argv, environ);
}

int execvp(const char *file, char *const argv[]) {
  return execvpe(file, argv, environ);
}

/* The variadic ones: their arguments, up to the NULL (and for execle the
 * environment after it), as an array on the stack. */
#define ARGS_TO_ARRAY(first, argv, after)                       \
  va_list ap;                                                   \
  size_t n = 1;                                                 \
  va_start(ap, first);                                          \
  while (va_arg(ap, const char *)) n++;                         \
  va_end(ap);                                                   \
  char *argv[n + 1];                                            \
  argv[0] = (char *)first;                                      \
  va_start(ap, first);                                          \
  for (size_t i = 1; i <= n; i++) argv[i] = va_arg(ap, char *); \
  after;                                                        \
  va_end(ap)

int execl(const char *path, const char *arg, ...) {
  ARGS_TO_ARRAY(arg, argv, (void)0);
  return execve(path, argv, environ);
}

int execlp(const char *file, const char *arg, ...) {
  ARGS_TO_ARRAY(arg, argv, (void)0);
  return execvpe(file, argv, environ);
}

int execle(const char *path, const char *arg, ...) {
  char *const *envp;
  ARGS_TO_ARRAY(arg, argv, envp = va_arg(ap, char *const *));
  return execve(path, argv, envp);
}

/* ---- dlopen and dlclose ---- */

/* Before the C library loads or unloads objects: the maps as they are. */
HIDDEN void rc_before_load(void) {
  if (!rc_real_dlopen) *(void **)&rc_real_dlopen = dlsym(RTLD_NEXT, "dlopen");
  if (!rc_real_dlclose) *(void **)&rc_real_dlclose = dlsym(RTLD_NEXT, "dlclose");
  save_maps(false);
}

/* dlopen(file, mode) and dlclose(handle): rc_before_load with the
 * arguments kept, then a jump to the C library's function, which returns
 * to the caller itself. */
// clang-format off
#define RC_TRAMPOLINE(name, real)                  \
  ".globl " #name "\n"                             \
  ".type " #name ", @function\n" #name ":\n"       \
  ".cfi_startproc\n"                               \
  "  endbr64\n"                                    \
  "  pushq %rdi\n"                                 \
  ".cfi_adjust_cfa_offset 8\n"                     \
  "  pushq %rsi\n"                                 \
  ".cfi_adjust_cfa_offset 8\n"                     \
  "  subq $8, %rsp\n"                              \
  ".cfi_adjust_cfa_offset 8\n"                     \
  "  call rc_before_load\n"                        \
  "  addq $8, %rsp\n"                              \
  ".cfi_adjust_cfa_offset -8\n"                    \
  "  popq %rsi\n"                                  \
  ".cfi_adjust_cfa_offset -8\n"                    \
  "  popq %rdi\n"                                  \
  ".cfi_adjust_cfa_offset -8\n"                    \
  "  jmp *" #real "(%rip)\n"                       \
  ".cfi_endproc\n"                                 \
  ".size " #name ", .-" #name "\n"
// clang-format on

__asm__(".text\n" RC_TRAMPOLINE(dlopen, rc_real_dlopen) RC_TRAMPOLINE(dlclose, rc_real_dlclose));
