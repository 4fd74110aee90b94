/* SPDX-License-Identifier: BSD-3-Clause */
/* A program that gets in the recorder's way (tests/cli/test_record.py):
 *
 *   hostile MODE BEFORE_S AFTER_S REPORT
 *
 * burns BEFORE_S seconds of CPU in before_work(), then interferes as MODE
 * says, then burns AFTER_S seconds in after_work(), writes the CPU time
 * each took as JSON to the file REPORT, and exits 0. MODE:
 *
 *   closefds   closes descriptors 0 to 1023
 *   devnull    dup2s /dev/null over descriptors 0 to 63
 *   blockall   blocks every signal (sigprocmask SIG_BLOCK)
 *   handlers   handles SIGPROF and SIGTRAP itself and starts an
 *              ITIMER_PROF timer of its own; the report adds the SIGPROFs
 *              its handler counted */
#define _GNU_SOURCE
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>
#include <unistd.h>

#include "work.h"

/* Burns the calling thread's CPU for seconds (in chunks of burn()).
 * Returns the CPU time it took. */
static double burn_for(double seconds) {
  double start = thread_cpu(), now;
  while ((now = thread_cpu()) - start < seconds) burn(200000);
  return now - start;
}

__attribute__((noinline)) double before_work(double seconds) {
  double t = burn_for(seconds);
  sink = sink + 1;
  return t;
}

__attribute__((noinline)) double after_work(double seconds) {
  double t = burn_for(seconds);
  sink = sink + 1;
  return t;
}

static volatile sig_atomic_t profs, traps;
static void on_prof(int sig) {
  (void)sig;
  profs++;
}
static void on_trap(int sig) {
  (void)sig;
  traps++;
}

int main(int argc, char **argv) {
  if (argc != 5) {
    fprintf(stderr, "usage: hostile closefds|devnull|blockall|handlers BEFORE_S AFTER_S REPORT\n");
    return 2;
  }
  const char *mode = argv[1];
  double before_s = atof(argv[2]), after_s = atof(argv[3]);
  double before = before_work(before_s);
  if (!strcmp(mode, "closefds")) {
    for (int fd = 0; fd < 1024; fd++) close(fd);
  } else if (!strcmp(mode, "devnull")) {
    int null = open("/dev/null", O_RDWR);
    for (int fd = 0; fd < 64; fd++)
      if (fd != null) dup2(null, fd);
  } else if (!strcmp(mode, "blockall")) {
    sigset_t all;
    sigfillset(&all);
    sigprocmask(SIG_BLOCK, &all, NULL);
  } else if (!strcmp(mode, "handlers")) {
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_prof;
    sigaction(SIGPROF, &sa, NULL);
    sa.sa_handler = on_trap;
    sigaction(SIGTRAP, &sa, NULL);
    struct itimerval every_ms = {{0, 1000}, {0, 1000}};
    setitimer(ITIMER_PROF, &every_ms, NULL);
  } else {
    return 2;
  }
  double after = after_work(after_s);
  FILE *report = fopen(argv[4], "w");
  if (!report) return 2;
  fprintf(report, "{\"before\": %.6f, \"after\": %.6f, \"profs\": %d}\n", before, after,
          (int)profs);
  return fclose(report) == 0 ? 0 : 2;
}
