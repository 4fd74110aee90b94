/* SPDX-License-Identifier: BSD-3-Clause */
/* The room that runs executions (see kn_execute.h). */
#include "kn_execute.h"

#include <stdlib.h>

#include "fl__common.h"
#include "kn_exec.h"
#include "kn_job.h"
#include "kn_names.h"
#include "kn_requests.h"
#include "kn_worker.h"

static void worker_fds(kn_kernel_t *k, int fds[KN_ROOM_FDS]) {
  kn_worker_fds(kn_kernel_worker(k), fds);
}

static void left_job_fds(kn_kernel_t *k, int fds[KN_ROOM_FDS]) {
  kn_job_t *job = kn_kernel_parts(k)->left_job;
  if (job) fds[0] = kn_job_fd(job);
}

static void left_job_ended(kn_kernel_t *k) {
  kn_job_discard(&kn_kernel_parts(k)->left_job);
}

/* One execution at a time, and none while the worker starts or a cancelled
 * job still holds the profiling state. */
static bool holds_shell(kn_kernel_t *k) {
  kn_kernel_parts_t *p = kn_kernel_parts(k);
  return p->exec || p->left_job || kn_worker_starting(p->worker);
}

static void close_room(kn_kernel_t *k) {
  kn_kernel_parts_t *p = kn_kernel_parts(k);
  kn_execute_stop(k);
  kn_exec_destroy(&p->exec);
  /* A job still running is stopped and waited for: it owns the profiling
   * state, freed next. */
  kn_job_discard(&p->left_job);
  if (p->worker) kn_worker_destroy(&p->worker);
  kn_prof_destroy(&p->prof);
  kn_session_destroy(&p->session);
}

static void execute_request(kn_kernel_t *k, kn_channel_t channel, kn_msg_t *msg) {
  (void)channel;
  kn_execute_start(k, msg);
}

static void input_reply(kn_kernel_t *k, kn_channel_t channel, kn_msg_t *msg) {
  (void)channel;
  kn_execute_on_input_reply(k, msg);
  kn_msg_destroy(&msg);
}

_Static_assert(KN_WORKER_FDS <= KN_ROOM_FDS && KN_EXEC_FDS <= KN_ROOM_FDS,
               "the loop polls at most KN_ROOM_FDS descriptors of a room");

/* In the loop's order: the worker's pipes, then the execution's own
 * descriptors (its tick first of all), then a job left behind. */
static const kn_room_t worker_room = {.fds = worker_fds, .on_ready = kn_execute_on_worker};
static const kn_room_t exec_room = {.tick = kn_execute_tick,
                                    .fds = kn_execute_fds,
                                    .on_ready = kn_execute_on_fds,
                                    .holds_shell = holds_shell,
                                    .interrupt = kn_execute_interrupt,
                                    .close = close_room};
static const kn_room_t left_job_room = {.fds = left_job_fds, .on_ready = left_job_ended};

int kn_execute_open(kn_kernel_t *k, char *err, size_t err_size) {
  kn_kernel_add_room(k, &worker_room);
  kn_kernel_add_room(k, &exec_room);
  kn_kernel_add_room(k, &left_job_room);
  kn_kernel_handle(k, "execute_request", KN_ON(KN_SHELL), KN_TAKE, execute_request);
  kn_kernel_handle(k, "input_reply", KN_ON(KN_STDIN), KN_TAKE, input_reply);
  kn_requests_register(k);

  kn_kernel_parts_t *p = kn_kernel_parts(k);
  p->session = kn_session_new(err, err_size);
  if (!p->session) return -1;
  p->prof = kn_prof_new(kn_session_dir(p->session));
  kn_prof_set_cells(p->prof, kn_kernel_history(k));
  char *dir = kn_self_dir();
  fl__buf_t path = FL__BUF_INIT;
  fl__buf_printf(&path, "%s/" KN_WORKER_NAME, dir);
  free(dir);
  p->worker = kn_worker_new(path.data);
  fl__buf_free(&path);
  return kn_restart_worker(k, err, err_size);
}
