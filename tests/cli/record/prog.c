/* SPDX-License-Identifier: BSD-3-Clause */
/* The program tests/cli/test_record.py records: known work in functions of
 * its own, run in the way each test asks (argv[1]), measuring its own CPU
 * time, which it prints as JSON on stdout for the test to compare with the
 * profile's shares.
 *
 *   prog split ITERS           one() and three() (three times one()'s work),
 *                              alternating over rounds, on the main thread
 *   prog threads ITERS         thread_a runs one(), thread_b three()
 *   prog many ITERS N          N threads at once, each running one() once;
 *                              prints how many ran
 *   prog block ITERS MS        prints "ready", then waits in epoll_wait for
 *                              MS milliseconds on nothing; prints what it
 *                              returned and its errno
 *   prog wall ITERS            main and wall_thread each run one() over
 *                              rounds; each prints the wall time, run
 *                              delay (schedstat) and CPU time it measured
 *                              around its work (main's around the
 *                              thread's too), and the time it waited in
 *                              a call (main's join, less its CPU time and
 *                              run delay)
 *   prog naps ITERS            the main thread runs one() and then naps
 *                              (nanosleep, 30 ms), over rounds; prints the
 *                              CPU time it measured around the rounds and
 *                              the time it measured around its naps
 *                              (sleep) and the run delay that grew
 *                              meanwhile (woken: waiting for a CPU)
 *   prog fork ITERS            a child runs child_work (three), the parent
 *                              parent_work (one); the parent waits
 *   prog exec ITERS OTHER      a child execs OTHER (other.c) and the parent
 *                              runs one(); the parent waits
 *   prog shexec ITERS OTHER    the same, the child running sh -c 'OTHER ITERS'
 *                              (fork, exec and the child's CPU time, from
 *                              wait4, printed as child_cpu)
 *   prog spawn N OTHER ARG FDS posix_spawn (a vfork) of `OTHER ARG` N times in
 *                              a row, each waited for, with FDS descriptors
 *                              open (close-on-exec: each vfork copies their
 *                              table, so the parent spends its CPU time inside
 *                              the vfork); prints how many failed
 *   prog io STATUS             echoes a line of stdin to stdout and stderr,
 *                              exits with STATUS
 *   prog kill ITERS SIGNAL     works, then kills itself with SIGNAL
 *   prog spin ITERS [handle|alone]  works, prints "ready", then spins until
 *                              SIGINT: dies of it, or handles it and exits
 *                              0 ("handle"); or ("alone") leaves the
 *                              terminal's foreground group, prints "ready",
 *                              works, and counts the SIGINTs that came
 *   prog chain ITERS N         one(), then execs itself, N times in all
 *   prog keepfd ITERS FILE     a child closes its descriptors, has FILE on
 *                              descriptors 3 to 19 and execs prog writefd,
 *                              which writes a line through each
 *   prog allocs                1000 mallocs of 48 bytes in leaky(), one in
 *                              four kept, and 300 callocs of 80 in zeroed()
 *   prog splitallocs ITERS     split, then 1000 mallocs of 100 bytes in
 *                              small_allocs() and 1000 of 300 in
 *                              big_allocs(), each freed
 *   prog threadallocs ITERS    a thread named "burner" runs three(), then
 *                              one named "allocator" runs one() and
 *                              small_allocs(); the burner allocates nothing
 *   prog await MODE ARGS...    waits for a line on stdin, then runs as
 *                              `prog MODE ARGS...` (cflame record --pid
 *                              attaches in between) */
#define _GNU_SOURCE
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <errno.h>
#include <sys/epoll.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "../../lib/run_delay.h"
#include "work.h"

#define ROUNDS 10
static void *volatile keep_sink;

__attribute__((noinline)) void child_work(long n) {
  burn(3 * n);
  sink = sink + 1;
}
__attribute__((noinline)) void parent_work(long n) {
  burn(n);
  sink = sink + 1;
}

static void split(long n) {
  double t1, t3;
  one_and_three(n, ROUNDS, &t1, &t3);
  printf("{\"one\": %.6f, \"three\": %.6f}\n", t1, t3);
}

static long iters;
static double cpu_a, cpu_b;

static void *thread_a(void *arg) {
  for (int r = 0; r < ROUNDS; r++) one(iters);
  cpu_a = thread_cpu();
  return arg;
}
static void *thread_one(void *arg) {
  one(iters);
  return arg;
}
static void *thread_b(void *arg) {
  for (int r = 0; r < ROUNDS; r++) three(iters);
  cpu_b = thread_cpu();
  return arg;
}

/* The calling thread's time runnable but waiting for a CPU, in s. */
static double run_delay(void) {
  return (double)test_run_delay_ns() / 1e9;
}
static double mono(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}
static double wall_a, delay_a, cpu_wall_a;
static void *wall_thread(void *arg) {
  double w = mono(), d = run_delay(), c = thread_cpu();
  for (int r = 0; r < 2 * ROUNDS; r++) one(iters);
  wall_a = mono() - w;
  delay_a = run_delay() - d;
  cpu_wall_a = thread_cpu() - c;
  return arg;
}

__attribute__((noinline)) static void nap(void) {
  struct timespec t = {0, 30000000};
  nanosleep(&t, NULL);
}

static volatile sig_atomic_t interrupts;
static void on_sigint(int sig) {
  (void)sig;
  interrupts++;
}

__attribute__((noinline)) static void spin(long n) {
  while (!interrupts) burn(n / 100 + 1);
}

__attribute__((noinline)) static void leaky(void **keep) {
  for (int i = 0; i < 1000; i++) {
    void *p = malloc(48);
    keep_sink = p;
    if (i % 4 == 0)
      keep[i / 4] = p;
    else
      free(keep_sink);
  }
}
__attribute__((noinline)) static void zeroed(void) {
  for (int i = 0; i < 300; i++) {
    keep_sink = calloc(10, 8);
    free(keep_sink);
  }
}

/* Each its own loop: a shared one would be a tail call, its caller gone
 * from the stack. */
__attribute__((noinline)) static void small_allocs(void) {
  for (int i = 0; i < 1000; i++) {
    keep_sink = malloc(100);
    free(keep_sink);
  }
}
__attribute__((noinline)) static void big_allocs(void) {
  for (int i = 0; i < 1000; i++) {
    keep_sink = malloc(300);
    free(keep_sink);
  }
}

static void *burner(void *arg) {
  pthread_setname_np(pthread_self(), "burner");
  three(iters);
  return arg;
}
static void *allocator(void *arg) {
  pthread_setname_np(pthread_self(), "allocator");
  one(iters);
  small_allocs();
  return arg;
}

int main(int argc, char **argv) {
  if (argc > 2 && !strcmp(argv[1], "await")) {
    char line[64];
    if (!fgets(line, sizeof line, stdin)) return 3;
    argv[1] = argv[0];
    argv++;
    argc--;
  }
  const char *mode = argc > 1 ? argv[1] : "";
  long n = argc > 2 ? atol(argv[2]) : 0;
  if (!strcmp(mode, "split")) {
    split(n);
  } else if (!strcmp(mode, "threads")) {
    iters = n;
    pthread_t a, b;
    pthread_create(&a, NULL, thread_a, NULL);
    pthread_create(&b, NULL, thread_b, NULL);
    pthread_join(a, NULL);
    pthread_join(b, NULL);
    printf("{\"a\": %.6f, \"b\": %.6f}\n", cpu_a, cpu_b);
  } else if (!strcmp(mode, "many")) {
    iters = n;
    int want = argc > 3 ? atoi(argv[3]) : 0, ran = 0;
    pthread_t *t = calloc((size_t)(want > 0 ? want : 1), sizeof *t);
    for (int k = 0; k < want; k++) ran += pthread_create(&t[k], NULL, thread_one, NULL) == 0;
    for (int k = 0; k < ran; k++) pthread_join(t[k], NULL);
    free(t);
    printf("{\"threads\": %d}\n", ran);
  } else if (!strcmp(mode, "block")) {
    int ep = epoll_create1(0);
    struct epoll_event ev;
    printf("ready\n");
    fflush(stdout);
    int rc = epoll_wait(ep, &ev, 1, argc > 3 ? atoi(argv[3]) : 1000);
    int e = rc < 0 ? errno : 0;
    printf("{\"epoll_wait\": %d, \"errno\": %d, \"eintr\": %s}\n", rc, e,
           e == EINTR ? "true" : "false");
  } else if (!strcmp(mode, "wall")) {
    iters = n;
    double w = mono(), d = run_delay(), c = thread_cpu();
    pthread_t a;
    pthread_create(&a, NULL, wall_thread, NULL);
    for (int r = 0; r < 2 * ROUNDS; r++) one(iters);
    double jw = mono(), jd = run_delay(), jc = thread_cpu();
    pthread_join(a, NULL);
    double waited = (mono() - jw) - (run_delay() - jd) - (thread_cpu() - jc);
    double wall = mono() - w, delay = run_delay() - d, cpu = thread_cpu() - c;
    printf("{\"main\": [%.6f, %.6f, %.6f, %.6f], \"thread\": [%.6f, %.6f, %.6f, 0]}\n", wall,
           delay, cpu, waited, wall_a, delay_a, cpu_wall_a);
  } else if (!strcmp(mode, "naps")) {
    double cpu = thread_cpu(), slept = 0, woken = 0;
    for (int r = 0; r < ROUNDS; r++) {
      one(n);
      double t = mono(), d = run_delay();
      nap();
      slept += mono() - t;
      woken += run_delay() - d;
    }
    printf("{\"cpu\": %.6f, \"sleep\": %.6f, \"woken\": %.6f}\n", thread_cpu() - cpu, slept,
           woken);
  } else if (!strcmp(mode, "fork") || !strcmp(mode, "exec") || !strcmp(mode, "shexec")) {
    fflush(stdout);
    pid_t child = fork();
    if (child == 0) {
      if (!strcmp(mode, "exec")) {
        execl(argv[3], argv[3], argv[2], (char *)NULL);
        _exit(127);
      }
      if (!strcmp(mode, "shexec")) {
        execl("/bin/sh", "sh", "-c", "\"$0\" \"$1\"", argv[3], argv[2], (char *)NULL);
        _exit(127);
      }
      for (int r = 0; r < ROUNDS; r++) child_work(n);
      _exit(0);
    }
    for (int r = 0; r < ROUNDS; r++) parent_work(n);
    double parent = thread_cpu();
    int status;
    struct rusage ru;
    wait4(child, &status, 0, &ru);
    double child_cpu = (double)ru.ru_utime.tv_sec + (double)ru.ru_utime.tv_usec / 1e6 +
                       (double)ru.ru_stime.tv_sec + (double)ru.ru_stime.tv_usec / 1e6;
    printf(
        "{\"parent\": %d, \"child\": %d, \"parent_cpu\": %.6f, \"child_cpu\": %.6f, "
        "\"status\": %d}\n",
        (int)getpid(), (int)child, parent, child_cpu, status);
  } else if (!strcmp(mode, "spawn")) {
    extern char **environ;
    int failed = 0, fds = argc > 5 ? atoi(argv[5]) : 0;
    struct rlimit lim;
    getrlimit(RLIMIT_NOFILE, &lim);
    if (lim.rlim_cur < (rlim_t)fds + 64 && lim.rlim_max >= (rlim_t)fds + 64) {
      lim.rlim_cur = (rlim_t)fds + 64;
      setrlimit(RLIMIT_NOFILE, &lim);
    }
    int null = open("/dev/null", O_RDONLY | O_CLOEXEC);
    for (int k = 0; k < fds; k++) fcntl(null, F_DUPFD_CLOEXEC, 3);
    for (long k = 0; k < n; k++) {
      pid_t child;
      char *args[] = {argv[3], argv[4], NULL};
      int status = -1;
      if (posix_spawn(&child, argv[3], NULL, NULL, args, environ) != 0 ||
          waitpid(child, &status, 0) != child || status != 0)
        failed++;
    }
    printf("{\"spawned\": %ld, \"failed\": %d}\n", n, failed);
  } else if (!strcmp(mode, "io")) {
    char line[256] = "";
    if (!fgets(line, sizeof line, stdin)) strcpy(line, "(eof)\n");
    printf("out: %s", line);
    fprintf(stderr, "err: %s", line);
    return atoi(argv[2]);
  } else if (!strcmp(mode, "kill")) {
    one(n);
    printf("pid %d\n", (int)getpid());
    fflush(stdout);
    kill(getpid(), atoi(argv[3]));
    pause();
  } else if (!strcmp(mode, "spin") && argc > 3 && !strcmp(argv[3], "alone")) {
    /* Out of the terminal's foreground group, with SIGINT blocked: a
     * SIGINT that comes while it works stays pending, to be counted. */
    setpgid(0, 0);
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGINT);
    sigprocmask(SIG_BLOCK, &set, NULL);
    printf("ready\n");
    fflush(stdout);
    one(n);
    one(n);
    siginfo_t si;
    struct timespec now = {0, 0};
    int count = 0;
    while (sigtimedwait(&set, &si, &now) == SIGINT) count++;
    printf("interrupts %d\n", count);
  } else if (!strcmp(mode, "spin")) {
    if (argc > 3) {
      struct sigaction sa = {.sa_handler = on_sigint};
      sigaction(SIGINT, &sa, NULL);
    } else {
      signal(SIGINT, SIG_DFL);
    }
    one(n);
    printf("ready\n");
    fflush(stdout);
    spin(n);
    printf("interrupts %d\n", (int)interrupts);
  } else if (!strcmp(mode, "chain")) {
    /* Works a little, then execs itself, argv[3] times in all. */
    int left = atoi(argv[3]);
    one(n);
    if (left > 0) {
      char next[16];
      snprintf(next, sizeof next, "%d", left - 1);
      execl("/proc/self/exe", argv[0], "chain", argv[2], next, (char *)NULL);
      perror("execl");
      return 1;
    }
    printf("chain done\n");
  } else if (!strcmp(mode, "keepfd")) {
    /* A child that closes every descriptor but the standard ones, has a
     * file on descriptors 3 to 19 (the numbers the recorders' had among
     * them) and execs a program that writes through each. */
    one(n);
    fflush(stdout);
    pid_t child = fork();
    if (child == 0) {
      one(n);
      close_range(3, ~0u, 0);
      int fd = open(argv[3], O_WRONLY | O_CREAT | O_TRUNC | O_APPEND, 0644);
      for (int k = fd + 1; k < 20; k++) dup2(fd, k);
      execl("/proc/self/exe", argv[0], "writefd", (char *)NULL);
      _exit(127);
    }
    int status;
    waitpid(child, &status, 0);
    printf("child status %d\n", status);
  } else if (!strcmp(mode, "writefd")) {
    for (int fd = 3; fd < 20; fd++) dprintf(fd, "%d\n", fd);
  } else if (!strcmp(mode, "threadallocs")) {
    iters = n;
    pthread_t b, a;
    pthread_create(&b, NULL, burner, NULL); /* first: the lower thread id */
    pthread_join(b, NULL);
    pthread_create(&a, NULL, allocator, NULL);
    pthread_join(a, NULL);
  } else if (!strcmp(mode, "splitallocs")) {
    split(n);
    small_allocs();
    big_allocs();
  } else if (!strcmp(mode, "allocs")) {
    static void *keep[250];
    leaky(keep);
    zeroed();
    printf("%s\n", keep[0] ? "kept" : "none");
  } else {
    fprintf(stderr, "usage: prog [await] split|threads|many|fork|exec|io|kill|spin|allocs ...\n");
    return 2;
  }
  return 0;
}
