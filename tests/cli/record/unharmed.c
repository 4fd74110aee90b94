/* SPDX-License-Identifier: BSD-3-Clause */
/* A program that checks its own results while cflame record --pid samples
 * it (tests/cli/test_attach.py): any error or EINTR that the stops of the
 * attach caused would show here.
 *
 *   unharmed ROUNDS
 *
 * waits for a line on stdin (the test attaches first), then for ROUNDS
 * rounds: computes a known sum (CPU work), writes it in a record of 4 KiB
 * to stdout (a pipe the test drains slowly, so that writes block on a full
 * pipe) with write() alone, checking every byte is taken in one call,
 * sleeps 100 us (nanosleep) and polls nothing for 1 ms; meanwhile a
 * second thread waits in epoll_wait for 2 ms at a time and burns CPU in
 * between. Every call's result is checked: a short write, a -1 (EINTR or
 * another), a sum that is wrong. Last it writes "end rounds=N errors=E
 * eintr=I" and exits 0 when both are 0, else 3. */
#define _GNU_SOURCE
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <time.h>
#include <unistd.h>

#define RECORD 4096

static atomic_int errors, eintrs, done;

static void failed(void) {
  if (errno == EINTR)
    eintrs++;
  else
    errors++;
}

__attribute__((noinline)) static unsigned long known_sum(unsigned long n) {
  unsigned long s = 0;
  for (unsigned long i = 1; i <= n; i++) s += i * i % 7;
  return s;
}

/* The same sum, by its closed form over whole periods of 7. */
static unsigned long expected_sum(unsigned long n) {
  static const unsigned long period[7] = {0, 1, 4, 2, 2, 4, 1}; /* i*i % 7 */
  unsigned long s = (n / 7) * 14;
  for (unsigned long i = 1; i <= n % 7; i++) s += period[i];
  return s;
}

static void *waiter(void *arg) {
  (void)arg;
  int ep = epoll_create1(0);
  struct epoll_event ev;
  while (!done) {
    int n = epoll_wait(ep, &ev, 1, 2);
    if (n != 0) failed();
    unsigned long k = 200000 + (unsigned long)(rand() % 1000);
    if (known_sum(k) != expected_sum(k)) errors++;
  }
  close(ep);
  return NULL;
}

int main(int argc, char **argv) {
  long rounds = argc > 1 ? atol(argv[1]) : 100;
  char line[64];
  if (!fgets(line, sizeof line, stdin)) return 2;
  pthread_t t;
  pthread_create(&t, NULL, waiter, NULL);
  char rec[RECORD];
  for (long r = 0; r < rounds; r++) {
    unsigned long n = 1000000 + (unsigned long)r;
    unsigned long sum = known_sum(n);
    if (sum != expected_sum(n)) errors++;
    memset(rec, '.', sizeof rec);
    int len = snprintf(rec, sizeof rec, "%ld %lu", r, sum);
    rec[len] = ' ';
    rec[RECORD - 1] = '\n';
    ssize_t put = write(1, rec, sizeof rec);
    if (put < 0)
      failed();
    else if (put != (ssize_t)sizeof rec)
      errors++; /* a pipe takes 4 KiB (PIPE_BUF) whole or blocks */
    struct timespec nap = {0, 100000};
    if (nanosleep(&nap, NULL) != 0) failed();
    if (poll(NULL, 0, 1) != 0) failed();
  }
  done = 1;
  pthread_join(t, NULL);
  int n = snprintf(rec, sizeof rec, "end rounds=%ld errors=%d eintr=%d\n", rounds, (int)errors,
                   (int)eintrs);
  if (write(1, rec, (size_t)n) != n) return 4;
  return errors || eintrs ? 3 : 0;
}
