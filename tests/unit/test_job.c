/* SPDX-License-Identifier: BSD-3-Clause */
/* kn_job: a profiling line magic on a thread of its own. Its handler runs
 * off the calling thread with the kernel's signals blocked; the descriptor
 * says when it has returned; a cancel reaches the handler through the
 * profiling state it owns, and settles the job against the handler's
 * first change: a job cancelled changes nothing (a %profload keeps
 * nothing), one that changed the state first cannot be cancelled. */
#define _GNU_SOURCE
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "kn_job.h"
#include "test.h"

static pthread_t main_thread;

/* Returns once the job is cancelled, saying where it ran. */
static int wait_for_cancel(kn_prof_t *kp, const char *args, kn_magic_result_t *res, char *err,
                           size_t err_size) {
  sigset_t mask;
  pthread_sigmask(SIG_SETMASK, NULL, &mask);
  bool off_main = !pthread_equal(pthread_self(), main_thread);
  while (!kn_prof_cancelled(kp)) nanosleep(&(struct timespec){0, 1000000}, NULL);
  snprintf(err, err_size, "%s stopped: %s, SIGINT %s", args, off_main ? "off main" : "on main",
           sigismember(&mask, SIGINT) ? "blocked" : "open");
  return -1;
}

static int say_hello(kn_prof_t *kp, const char *args, kn_magic_result_t *res, char *err,
                     size_t err_size) {
  res->output = strdup(args);
  return 0;
}

/* Changes the settings once cancelled: too late, nothing changes. */
static int resize_after_cancel(kn_prof_t *kp, const char *args, kn_magic_result_t *res,
                               char *err, size_t err_size) {
  while (!kn_prof_cancelled(kp)) nanosleep(&(struct timespec){0, 1000000}, NULL);
  kn_prof_set_size(kp, 999, 0);
  return 0;
}

/* Changes the settings, then waits to be let go: an interrupt meanwhile
 * comes too late to cancel it. */
static atomic_bool resized, let_go;
static int resize_then_wait(kn_prof_t *kp, const char *args, kn_magic_result_t *res, char *err,
                            size_t err_size) {
  kn_prof_set_size(kp, 321, 0);
  atomic_store(&resized, true);
  while (!atomic_load(&let_go)) nanosleep(&(struct timespec){0, 1000000}, NULL);
  return 0;
}

/* A %profload that the interrupt reaches before it reads. */
static int load_after_cancel(kn_prof_t *kp, const char *args, kn_magic_result_t *res, char *err,
                             size_t err_size) {
  while (!kn_prof_cancelled(kp)) nanosleep(&(struct timespec){0, 1000000}, NULL);
  return kn_profmagic_load(kp, args, res, err, err_size);
}

static bool readable_within(int fd, int ms) {
  struct pollfd p = {.fd = fd, .events = POLLIN};
  return poll(&p, 1, ms) == 1;
}

int main(void) {
  main_thread = pthread_self();
  char dir[] = "/tmp/test_job_XXXXXX";
  CHECK(mkdtemp(dir) != NULL);
  kn_prof_t *kp = kn_prof_new(dir);
  char err[256];
  kn_magic_result_t res;

  /* Cancelled: the handler sees it, on its own thread, signals blocked. */
  kn_job_t *j = kn_job_start(kp, wait_for_cancel, "%x", err, sizeof err);
  CHECK(j != NULL);
  CHECK(kn_prof_cancel_flag(kp) != NULL);
  CHECK(!kn_job_done(j));
  CHECK(!readable_within(kn_job_fd(j), 50));
  CHECK(kn_job_cancel(j));
  CHECK(kn_job_cancelled(j));
  CHECK(readable_within(kn_job_fd(j), 10000));
  CHECK(kn_job_done(j));
  CHECK_INT(kn_job_finish(&j, &res, err, sizeof err), -1);
  CHECK(j == NULL);
  CHECK_STR(err, "%x stopped: off main, SIGINT blocked");
  CHECK(kn_prof_cancel_flag(kp) == NULL);

  /* Done: its result comes back whole. */
  j = kn_job_start(kp, say_hello, "hello", err, sizeof err);
  CHECK(readable_within(kn_job_fd(j), 10000));
  CHECK(!kn_job_cancelled(j));
  CHECK_INT(kn_job_finish(&j, &res, err, sizeof err), 0);
  CHECK_STR(res.output, "hello");
  CHECK(res.display == NULL);
  free(res.output);

  /* Cancelled first, the job changes nothing; claimed first (it changed
   * the settings), the cancel is refused and the change stands. */
  j = kn_job_start(kp, resize_after_cancel, "", err, sizeof err);
  CHECK(kn_job_cancel(j));
  CHECK_INT(kn_job_finish(&j, &res, err, sizeof err), 0);
  CHECK_INT(kn_prof_settings(kp).width, 800);
  j = kn_job_start(kp, resize_then_wait, "", err, sizeof err);
  while (!atomic_load(&resized)) nanosleep(&(struct timespec){0, 1000000}, NULL);
  CHECK(!kn_job_cancel(j));
  CHECK(!kn_job_cancelled(j));
  atomic_store(&let_go, true);
  CHECK_INT(kn_job_finish(&j, &res, err, sizeof err), 0);
  CHECK_INT(kn_prof_settings(kp).width, 321);
  /* Without a job, changes are made. */
  kn_prof_set_size(kp, 800, 0);
  CHECK_INT(kn_prof_settings(kp).width, 800);

  /* A load cancelled keeps nothing: the session profile and the baselines
   * are as they were. */
  char path[64];
  snprintf(path, sizeof path, "%s/p.folded", dir);
  FILE *f = fopen(path, "w");
  fputs("main;work 5\n", f);
  fclose(f);
  char args[128];
  for (int as_baseline = 0; as_baseline < 2; as_baseline++) {
    snprintf(args, sizeof args, "%s%s", path, as_baseline ? " as=b" : "");
    j = kn_job_start(kp, load_after_cancel, args, err, sizeof err);
    CHECK(kn_job_cancel(j));
    CHECK_INT(kn_job_finish(&j, &res, err, sizeof err), -1);
    CHECK(strstr(err, "cancelled") || strstr(err, "interrupted"));
    CHECK_INT(fl_profile_n_samples(kn_prof_session(kp)), 0);
    CHECK(kn_prof_baseline(kp, "b") == NULL);
  }
  /* Not cancelled, the same load is kept. */
  CHECK_INT(kn_profmagic_load(kp, path, &res, err, sizeof err), 0);
  free(res.output);
  CHECK_INT(fl_profile_n_samples(kn_prof_session(kp)), 1);

  kn_prof_destroy(&kp);
  unlink(path);
  rmdir(dir);
  return TEST_DONE();
}
