/* SPDX-License-Identifier: BSD-3-Clause */
/* A child made by a raw clone system call, which runs no atfork handler,
 * so that cflame record's library never starts in it: it burns CPU_S
 * seconds of its own CPU time (argv[1], default 1) while the parent waits.
 * Prints "child PID CPU" with the CPU time the child measured, and the
 * parent's status. */
#define _GNU_SOURCE
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static double cpu_seconds(void) {
  struct timespec ts;
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

int main(int argc, char **argv) {
  double want = argc > 1 ? atof(argv[1]) : 1.0;
  int fds[2];
  if (pipe(fds) < 0) return 1;
  /* As fork, without glibc's fork: a new process, a copy of this one. */
  long pid = syscall(SYS_clone, SIGCHLD, NULL, NULL, NULL, NULL);
  if (pid < 0) return 1;
  if (pid == 0) {
    volatile double x = 0;
    double used;
    while ((used = cpu_seconds()) < want)
      for (int i = 0; i < 100000; i++) x += i * 1e-9;
    ssize_t w = write(fds[1], &used, sizeof used);
    (void)w;
    _exit(0); /* no atexit handlers: they are the parent's */
  }
  double used = 0;
  ssize_t r = read(fds[0], &used, sizeof used);
  (void)r;
  int status = 0;
  waitpid((pid_t)pid, &status, 0);
  printf("child %ld %.3f\n", pid, used);
  return WIFEXITED(status) ? WEXITSTATUS(status) : 1;
}
