/* SPDX-License-Identifier: BSD-3-Clause */
/* The wait wrappers (flame/sample/fl__waits.c) in a wall-clock run, where a
 * program's signal handler itself waits while a wait is being recorded,
 * as libuv's self-pipe handler writes: the inner wait must not re-enter
 * libunwind, whose per-thread cache the outer one is walking, and the
 * outer record must still be whole. The sampler's calls of unw_backtrace
 * come here first (the link's --wrap), which raises the signal from inside
 * the outer one's walk. */
#define _GNU_SOURCE
#include <signal.h>
#include <stdint.h>
#include <sys/mman.h>
#include <unistd.h>

#include "cflame/fl_sampler.h"
#include "test.h"

static int walking, reentered, walks;
static volatile sig_atomic_t armed, raised; /* armed: the walk of the outer wait comes next */

int __real_unw_backtrace(void **buf, int size);
int __wrap_unw_backtrace(void **buf, int size) {
  if (walking) reentered++;
  walking++;
  walks++;
  if (armed && !raised) {
    raised = 1;
    raise(SIGUSR1); /* its handler waits, inside this walk */
  }
  int n = __real_unw_backtrace(buf, size);
  walking--;
  return n;
}

static void waiting_handler(int sig) {
  (void)sig;
  usleep(20000);
}

int main(void) {
  char err[256];
  size_t bytes = fl_sampler_buffer_bytes(1 << 20);
  void *buf = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  CHECK(buf != MAP_FAILED);
  CHECK(fl_sampler_init(buf, bytes, err, sizeof err) == 0);
  struct sigaction sa = {.sa_handler = waiting_handler};
  sigemptyset(&sa.sa_mask);
  CHECK(sigaction(SIGUSR1, &sa, NULL) == 0);
  fl_sampler_set_clock(FL_SAMPLER_CLOCK_WALL);
  fl_sampler_thread_enter();
  CHECK(fl_sampler_start(1000000, 1, err, sizeof err) == 0);
  CHECK(fl_sampler_waits_on());
  armed = 1;
  usleep(20000); /* the outer wait: recorded, its walk interrupted */
  fl_sampler_stop();
  CHECK_INT(raised, 1);
  CHECK_INT(reentered, 0);
  CHECK(walks >= 1);
  /* The outer wait's record: a usleep with its stack. */
  size_t pos = 0, usleeps = 0;
  fl_sampler_record_t r;
  while (fl_sampler_next(buf, bytes, &pos, &r) == 1)
    if (r.wait == FL_SAMPLER_WAIT_usleep && r.n_pcs > 0) usleeps++;
  CHECK(usleeps >= 1);
  fl_sampler_thread_exit();
  return TEST_DONE();
}
