/* SPDX-License-Identifier: BSD-3-Clause */
/* Tests how fl_sampler picks its timer on kernels that lack what the best
 * one needs (trap_works in fl_sampler.c): a perf event that raises SIGTRAP
 * as task work. This kernel has it; the test plays older ones by
 * interposing the two system calls the probe makes, syscall(2) (for
 * perf_event_open) and read(2): the sampler's static library binds to the
 * executable's own definitions. The sampler probes once per process, so
 * each kernel is played in a child of its own:
 *  - this kernel: the probe passes, and threads get the SIGTRAP event;
 *  - a kernel before 5.13, which refuses attr.sigtrap with EINVAL (a flag
 *    it does not know) or with E2BIG (an attr longer than its own);
 *  - a kernel from 5.13 to 6.0, which signals from the timer's interrupt
 *    and so cuts the probe's reads of /dev/zero short;
 * the last three fall back to the perf event with SIGPROF. And one that
 * lets perf events count user time only (perf_event_paranoid 2): the
 * SIGTRAP event, counting user time. In each, a CPU-bound loop is sampled
 * and its weights must add up to its CPU time. */
#define _GNU_SOURCE
#include "cflame/fl_sampler.h"

#include <dlfcn.h>
#include <errno.h>
#include <linux/perf_event.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "test.h"

#define MS 1000000ull

typedef enum kernel {
  KERNEL_THIS,
  KERNEL_NO_SIGTRAP_EINVAL,
  KERNEL_NO_SIGTRAP_E2BIG,
  KERNEL_TRAP_FROM_INTERRUPT,
  KERNEL_USER_TIME_ONLY,
} kernel_t;

static kernel_t kernel = KERNEL_THIS;

/* The perf events opened, by kind. */
static struct {
  int trap, trap_user_only, other;
} opened;

typedef long (*syscall_fn)(long, ...);

static long real_syscall(long number, long a, long b, long c, long d, long e, long f) {
  static syscall_fn real;
  if (!real) *(void **)&real = dlsym(RTLD_NEXT, "syscall");
  return real(number, a, b, c, d, e, f);
}

/* What the kernel being played says to perf_event_open(attr); 0 when it
 * would open the event as this one does. */
static int refusal(const struct perf_event_attr *attr) {
  switch (kernel) {
  case KERNEL_NO_SIGTRAP_EINVAL:
    return attr->sigtrap ? EINVAL : 0;
  case KERNEL_NO_SIGTRAP_E2BIG:
    return attr->sigtrap ? E2BIG : 0;
  case KERNEL_USER_TIME_ONLY:
    return attr->exclude_kernel ? 0 : EACCES;
  default:
    return 0;
  }
}

long syscall(long number, ...) {
  long a[6];
  va_list ap;
  va_start(ap, number);
  for (int i = 0; i < 6; i++) a[i] = va_arg(ap, long);
  va_end(ap);
  const struct perf_event_attr *attr = (const struct perf_event_attr *)a[0];
  if (number == SYS_perf_event_open && refusal(attr)) {
    errno = refusal(attr);
    return -1;
  }
  long rc = real_syscall(number, a[0], a[1], a[2], a[3], a[4], a[5]);
  if (number == SYS_perf_event_open && rc >= 0) {
    if (!attr->sigtrap)
      opened.other++;
    else if (attr->exclude_kernel)
      opened.trap_user_only++;
    else
      opened.trap++;
  }
  return rc;
}

static bool is_dev_zero(int fd) {
  struct stat st;
  return fstat(fd, &st) == 0 && S_ISCHR(st.st_mode) && st.st_rdev == makedev(1, 5);
}

/* A kernel that signals from the timer's interrupt ends a read of
 * /dev/zero early when the timer expires inside it. */
ssize_t read(int fd, void *buf, size_t count) {
  if (kernel == KERNEL_TRAP_FROM_INTERRUPT && count > 1 && is_dev_zero(fd)) count /= 2;
  return real_syscall(SYS_read, fd, (long)buf, (long)count, 0, 0, 0);
}

static int64_t thread_cpu_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static volatile uint64_t sink;

__attribute__((noinline)) static void burn(int64_t cpu_ns) {
  int64_t end = thread_cpu_ns() + cpu_ns;
  uint64_t x = sink;
  while (thread_cpu_ns() < end)
    for (int i = 0; i < 100000; i++) x = x * 6364136223846793005ull + 1442695040888963407ull;
  sink = x;
}

/* In a child that plays kernel k: samples 300 ms of CPU at 1 ms and checks
 * what opened and that the weights add up. Exits with the number of
 * failed checks (at most 100). */
static void sample_on(kernel_t k, const char *name) {
  kernel = k;
  test_failures = 0; /* the parent's, before the fork, are not this child's */
  char err[256];
  size_t bytes = fl_sampler_buffer_bytes(1u << 16);
  void *buf = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  CHECK(buf != MAP_FAILED);
  int64_t t0 = thread_cpu_ns();
  CHECK(fl_sampler_init(buf, bytes, err, sizeof err) == 0);
  int64_t probe_ns = thread_cpu_ns() - t0;
  opened.trap = opened.trap_user_only = opened.other = 0; /* the probe's */
  fl_sampler_reset();
  int rc = fl_sampler_start(MS, 1, err, sizeof err);
  if (rc != 0) fprintf(stderr, "fl_sampler_start: %s\n", err);
  CHECK(rc == 0);
  t0 = thread_cpu_ns();
  burn(300 * (int64_t)MS);
  fl_sampler_stop();
  int64_t cpu = thread_cpu_ns() - t0;

  uint64_t weight = 0;
  size_t pos = 0;
  fl_sampler_record_t r;
  while (fl_sampler_next(buf, bytes, &pos, &r) == 1) weight += r.weight;
  const fl_sampler_header_t *h = buf;
  fprintf(stderr,
          "  %s: init %.2f ms of CPU; events opened: %d SIGTRAP, %d SIGTRAP of user time, "
          "%d SIGPROF; %llu samples, weights %.3f s for %.3f s of CPU\n",
          name, (double)probe_ns / 1e6, opened.trap, opened.trap_user_only, opened.other,
          (unsigned long long)h->samples, (double)weight * 1e-3, (double)cpu / 1e9);
  CHECK(h->source == FL_SAMPLER_SOURCE_PERF_TASK_CLOCK);
  switch (k) {
  case KERNEL_THIS:
    CHECK(opened.trap == 1 && opened.trap_user_only == 0 && opened.other == 0);
    break;
  case KERNEL_USER_TIME_ONLY:
    CHECK(opened.trap == 0 && opened.trap_user_only == 1 && opened.other == 0);
    break;
  default:
    CHECK(opened.trap == 0 && opened.trap_user_only == 0 && opened.other == 1);
  }
  CHECK(h->samples > 100);
  double ratio = (double)weight * 1e6 / (double)cpu;
  CHECK(ratio > 0.95 && ratio < 1.05);
  fflush(stderr);
  _exit(test_failures > 100 ? 100 : test_failures);
}

static void play(kernel_t k, const char *name) {
  fflush(NULL);
  pid_t child = fork();
  if (child == 0) sample_on(k, name);
  int status = 0;
  CHECK(child > 0 && waitpid(child, &status, 0) == child);
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
    fprintf(stderr, "  %s: the child failed (status %#x)\n", name, status);
  CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
}

int main(void) {
  alarm(55); /* a deadlock fails the test instead of hanging it */
  fprintf(stderr, "the sampler's timer on the kernels played:\n");
  play(KERNEL_THIS, "this kernel");
  play(KERNEL_NO_SIGTRAP_EINVAL, "no attr.sigtrap (EINVAL)");
  play(KERNEL_NO_SIGTRAP_E2BIG, "no attr.sigtrap (E2BIG)");
  play(KERNEL_TRAP_FROM_INTERRUPT, "SIGTRAP from the interrupt");
  play(KERNEL_USER_TIME_ONLY, "user time only");
  return TEST_DONE();
}
