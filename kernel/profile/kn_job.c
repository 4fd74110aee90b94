/* SPDX-License-Identifier: BSD-3-Clause */
/* Work on profiles on a thread of its own (see kn_job.h). */
#define _GNU_SOURCE
#include "kn_job.h"

#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "fl__common.h"

/* Who decides what becomes of the profiling state: the loop, cancelling
 * (the job then changes nothing), or the handler, claiming it to change it
 * (an interrupt then comes too late for the magic). The first to move the
 * state from RUNNING wins. */
enum { JOB_RUNNING, JOB_CANCELLED, JOB_CLAIMED };

struct kn_job {
  pthread_t thread;
  int done_fd; /* eventfd: written once, when the handler has returned */
  atomic_int state;
  fl_cancel_flag_t cancel; /* set once cancelled: the library's budgets stop */
  fl_cancel_flag_t interrupt; /* set by an interrupt after the claim (kn_job_interrupt) */
  /* What the thread is given, then what it gives back: written by the
   * thread before it writes done_fd, read by the loop after pthread_join. */
  kn_prof_t *kp;
  kn_job_fn fn;
  void *ctx;
  kn_prof_line_fn line_fn; /* a line magic's handler, run by run_line */
  char *args;
  int rc;
  kn_magic_result_t res;
  char err[1024];
};

/* kn_prof's claim (kn_prof_set_owner): on the job's thread, before the
 * handler changes the profiling state. */
static bool claim(void *ctx) {
  kn_job_t *j = ctx;
  int expected = JOB_RUNNING;
  return atomic_compare_exchange_strong(&j->state, &expected, JOB_CLAIMED) ||
         expected == JOB_CLAIMED;
}

/* A line magic as a job's work: its handler with the job's own copy of
 * its args. */
static int run_line(kn_prof_t *kp, void *ctx, kn_magic_result_t *res, char *err, size_t err_size) {
  kn_job_t *j = ctx;
  return j->line_fn(kp, j->args, res, err, err_size);
}

static void *job_main(void *arg) {
  kn_job_t *j = arg;
  j->rc = j->fn(j->kp, j->ctx, &j->res, j->err, sizeof j->err);
  uint64_t one = 1;
  /* An eventfd's counter cannot overflow from one write: this write does
   * not fail, and the loop sees the descriptor readable. */
  (void)!write(j->done_fd, &one, sizeof one);
  return NULL;
}

/* Starts j (its work set): NULL with err, j freed, when it cannot. */
static kn_job_t *start(kn_job_t *j, kn_prof_t *kp, char *err, size_t err_size) {
  j->kp = kp;
  atomic_init(&j->state, JOB_RUNNING);
  atomic_init(&j->cancel, false);
  atomic_init(&j->interrupt, false);
  j->done_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  if (j->done_fd < 0) {
    snprintf(err, err_size, "cannot start the work off the main loop: eventfd: %s",
             strerror(errno));
    goto fail;
  }
  /* The kernel's signals (SIGINT, SIGTERM: kn_kernel.c) are the main
   * thread's to take: the thread starts with them blocked. */
  sigset_t all, old;
  sigfillset(&all);
  pthread_sigmask(SIG_BLOCK, &all, &old);
  kn_prof_set_owner(kp, &j->cancel, claim, j);
  kn_prof_set_interrupt(kp, &j->interrupt);
  int rc = pthread_create(&j->thread, NULL, job_main, j);
  pthread_sigmask(SIG_SETMASK, &old, NULL);
  if (rc != 0) {
    kn_prof_set_owner(kp, NULL, NULL, NULL);
    kn_prof_set_interrupt(kp, NULL);
    snprintf(err, err_size, "cannot start the work off the main loop: pthread_create: %s",
             strerror(rc));
    goto fail;
  }
  return j;
fail:
  if (j->done_fd >= 0) close(j->done_fd);
  free(j->args);
  free(j);
  return NULL;
}

kn_job_t *kn_job_start(kn_prof_t *kp, kn_prof_line_fn fn, const char *args, char *err,
                       size_t err_size) {
  kn_job_t *j = fl__xcalloc(1, sizeof *j);
  j->fn = run_line;
  j->ctx = j;
  j->line_fn = fn;
  j->args = fl__xstrdup(args);
  return start(j, kp, err, err_size);
}

kn_job_t *kn_job_start_fn(kn_prof_t *kp, kn_job_fn fn, void *ctx, char *err, size_t err_size) {
  kn_job_t *j = fl__xcalloc(1, sizeof *j);
  j->fn = fn;
  j->ctx = ctx;
  return start(j, kp, err, err_size);
}

int kn_job_fd(const kn_job_t *j) { return j->done_fd; }

bool kn_job_done(const kn_job_t *j) {
  struct pollfd p = {.fd = j->done_fd, .events = POLLIN};
  return poll(&p, 1, 0) == 1;
}

bool kn_job_cancel(kn_job_t *j) {
  int expected = JOB_RUNNING;
  if (!atomic_compare_exchange_strong(&j->state, &expected, JOB_CANCELLED) &&
      expected != JOB_CANCELLED)
    return false;
  atomic_store(&j->cancel, true);
  return true;
}

void kn_job_interrupt(kn_job_t *j) { atomic_store(&j->interrupt, true); }

void kn_job_stop(kn_job_t *j) {
  atomic_store(&j->cancel, true);
}

bool kn_job_cancelled(const kn_job_t *j) { return atomic_load(&j->state) == JOB_CANCELLED; }

int kn_job_finish(kn_job_t **jp, kn_magic_result_t *res, char *err, size_t err_size) {
  kn_job_t *j = *jp;
  pthread_join(j->thread, NULL);
  kn_prof_set_owner(j->kp, NULL, NULL, NULL);
  kn_prof_set_interrupt(j->kp, NULL);
  int rc = j->rc;
  *res = j->res;
  if (rc < 0) snprintf(err, err_size, "%s", j->err);
  close(j->done_fd);
  free(j->args);
  free(j);
  *jp = NULL;
  return rc;
}

void kn_job_discard(kn_job_t **j) {
  if (!*j) return;
  /* Its result is dropped: whatever it claimed, its reading or drawing
   * may stop too. */
  kn_job_cancel(*j);
  kn_job_stop(*j);
  kn_magic_result_t res;
  char err[16];
  if (kn_job_finish(j, &res, err, sizeof err) == 0) {
    free(res.output);
    json_decref(res.display);
  }
}
