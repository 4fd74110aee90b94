/* SPDX-License-Identifier: BSD-3-Clause */
/* libclang's process, seen from the kernel (see kn_clang.h). */
#define _GNU_SOURCE
#include "kn_clang.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/pidfd.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "fl__spawn.h"
#include "kn_chan.h"
#include "kn_text.h"

/* How long kn_clang_take waits for a process whose pipe has closed to be
 * reapable (it is exiting), to say how it ended; and how long destroy
 * waits for a killed one. */
#define ENDED_WAIT_MS 20
#define DESTROY_WAIT_MS 2000

struct kn_clang {
  char *helper;        /* cflame-clang's path */
  size_t memory_bytes; /* its memory limit */
  pid_t pid;           /* the process, or -1 */
  int pid_fd;          /* readable once it has ended (pidfd_open) */
  int cmd_fd;          /* we write: a frame per job */
  int result_fd;       /* we read: the results */
  int job_fd;          /* the memory file the job goes in */
  kn_chan_reader_t reader;
  bool busy;
  kn_clang_op_t op; /* the job under way */
  void *tag;
  struct ended {
    pid_t pid;
    int pid_fd;
  } * ended; /* killed, not yet reaped */
  size_t n_ended;
};

/* ---- processes ---- */

static void close_fd(int *fd) {
  if (*fd >= 0) close(*fd);
  *fd = -1;
}

/* How the process ended, for a message: " (killed by SIGABRT)", or ""
 * while it cannot be reaped yet. Reaps it when it can. */
static void ended_how(kn_clang_t *c, char *how, size_t how_size) {
  int status;
  how[0] = '\0';
  pid_t got = 0;
  for (int i = 0; i < ENDED_WAIT_MS && (got = waitpid(c->pid, &status, WNOHANG)) == 0; i++)
    nanosleep(&(struct timespec){0, 1000000}, NULL);
  if (got != c->pid) return;
  c->pid = -1;
  if (WIFEXITED(status) && WEXITSTATUS(status) == KN_CLANGMSG_EXIT_MEMORY)
    snprintf(how, how_size, " (past its memory limit of %zu MB)", c->memory_bytes >> 20);
  else if (WIFEXITED(status))
    snprintf(how, how_size, " (exit status %d)", WEXITSTATUS(status));
  else if (WIFSIGNALED(status))
    snprintf(how, how_size, " (killed by SIG%s; its memory is limited to %zu MB)",
             sigabbrev_np(WTERMSIG(status)) ? sigabbrev_np(WTERMSIG(status)) : "?",
             c->memory_bytes >> 20);
}

/* Kills the process, if any, and forgets it; it is reaped once it has
 * ended (never waited for here: freeing gigabytes takes the system a
 * while). */
static void end_process(kn_clang_t *c) {
  if (c->pid > 0) {
    kill(c->pid, SIGKILL);
    if (waitpid(c->pid, NULL, WNOHANG) == 0) {
      c->ended = fl__xrealloc(c->ended, c->n_ended + 1, sizeof *c->ended);
      c->ended[c->n_ended++] = (struct ended){c->pid, c->pid_fd};
      c->pid_fd = -1;
    }
  }
  c->pid = -1;
  close_fd(&c->pid_fd);
  close_fd(&c->cmd_fd);
  close_fd(&c->result_fd);
  close_fd(&c->job_fd);
  c->reader.start = c->reader.len = 0;
  c->busy = false;
}

/* Reaps the killed processes that have ended, and forgets the running
 * one if it ended between jobs (the system's OOM killer, its memory
 * watchdog): the next job starts another. */
static void reap(kn_clang_t *c) {
  size_t n = 0;
  for (size_t i = 0; i < c->n_ended; i++) {
    if (waitpid(c->ended[i].pid, NULL, WNOHANG) == 0)
      c->ended[n++] = c->ended[i];
    else
      close(c->ended[i].pid_fd);
  }
  c->n_ended = n;
  if (!c->busy && c->pid > 0 && waitpid(c->pid, NULL, WNOHANG) == c->pid) {
    c->pid = -1;
    end_process(c);
  }
}

/* Starts cflame-clang. Returns 0, or -1 with err. */
static int start_process(kn_clang_t *c, char *err, size_t err_size) {
  end_process(c);
  reap(c);
  int cmd[2] = {-1, -1}, res[2] = {-1, -1};
  if (pipe2(cmd, O_CLOEXEC) < 0 || pipe2(res, O_CLOEXEC) < 0 ||
      (c->job_fd = memfd_create("cflame-clang-job", MFD_CLOEXEC)) < 0) {
    snprintf(err, err_size, "cannot make the pipes of libclang's process: %s", strerror(errno));
    goto fail;
  }
  char parent[32], memory[32];
  snprintf(parent, sizeof parent, "%d", (int)getpid());
  snprintf(memory, sizeof memory, "%zu", c->memory_bytes);
  char *argv[] = {"cflame-clang", parent, memory, NULL};
  /* A process group of its own: a Ctrl-C typed at the kernel's terminal
   * is the kernel's to handle. stderr stays the kernel's. */
  fl__spawn_t how = {.path = c->helper,
                     .argv = argv,
                     .own_group = true,
                     .empty_sigmask = true,
                     .close_others = true,
                     .fds = {{0, -1},
                             {1, -1},
                             {KN_CLANGMSG_CMD_FD, cmd[0]},
                             {KN_CLANGMSG_RESULT_FD, res[1]},
                             {KN_CLANGMSG_JOB_FD, c->job_fd}},
                     .n_fds = 5};
  int rc = fl__spawn(&how, &c->pid);
  if (rc != 0) {
    c->pid = -1;
    snprintf(err, err_size, "cannot run %s: %s", c->helper, strerror(rc));
    goto fail;
  }
  close(cmd[0]);
  close(res[1]);
  c->cmd_fd = cmd[1];
  c->result_fd = res[0];
  fcntl(c->cmd_fd, F_SETFL, O_NONBLOCK);
  fcntl(c->result_fd, F_SETFL, O_NONBLOCK);
  c->pid_fd = pidfd_open(c->pid, 0);
  if (c->pid_fd < 0) {
    snprintf(err, err_size, "cannot watch libclang's process (pidfd_open: %s)", strerror(errno));
    end_process(c);
    return -1;
  }
  fcntl(c->pid_fd, F_SETFD, FD_CLOEXEC);
  return 0;

fail:
  for (int i = 0; i < 2; i++) {
    if (cmd[i] >= 0) close(cmd[i]);
    if (res[i] >= 0) close(res[i]);
  }
  close_fd(&c->job_fd);
  return -1;
}

/* Puts text in the memory file, whole. Returns 0, or -1 (errno). */
static int write_job(int fd, const char *text) {
  size_t len = strlen(text), done = 0;
  if (ftruncate(fd, 0) < 0) return -1;
  while (done < len) {
    ssize_t n = pwrite(fd, text + done, len - done, (off_t)done);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return -1;
    done += (size_t)n;
  }
  return 0;
}

/* Hands the job's text to the running process. Returns 0, or -1 (errno;
 * EPIPE when the process has ended). */
static int send_job(kn_clang_t *c, const char *text) {
  if (write_job(c->job_fd, text) < 0) return -1;
  /* An empty frame into an empty pipe: never blocks. */
  return kn_chan_write(c->cmd_fd, 'J', NULL, 0);
}

/* ---- the interface ---- */

kn_clang_t *kn_clang_new(const char *helper, size_t memory_bytes) {
  kn_clang_t *c = fl__xcalloc(1, sizeof *c);
  c->helper = fl__xstrdup(helper);
  c->memory_bytes = memory_bytes;
  c->pid = -1;
  c->pid_fd = c->cmd_fd = c->result_fd = c->job_fd = -1;
  return c;
}

void kn_clang_destroy(kn_clang_t **cp) {
  kn_clang_t *c = *cp;
  if (!c) return;
  end_process(c);
  /* A killed process ends at once, unless the system holds it (a read
   * of a disk that does not answer): then it is left to init. */
  for (int i = 0; c->n_ended && i < DESTROY_WAIT_MS; i++) {
    reap(c);
    if (c->n_ended) nanosleep(&(struct timespec){0, 1000000}, NULL);
  }
  kn_chan_reader_free(&c->reader);
  for (size_t i = 0; i < c->n_ended; i++) close(c->ended[i].pid_fd);
  free(c->ended);
  free(c->helper);
  free(c);
  *cp = NULL;
}

int kn_clang_fd(const kn_clang_t *c) {
  if (c->busy) return c->result_fd;
  return c->n_ended ? c->ended[0].pid_fd : c->pid_fd;
}

bool kn_clang_busy(const kn_clang_t *c) {
  return c->busy;
}

int kn_clang_pid(const kn_clang_t *c) {
  return c->pid;
}

int kn_clang_submit(kn_clang_t *c, kn_clang_job_t *job, char *err, size_t err_size) {
  if (c->busy) {
    snprintf(err, err_size, "libclang is busy with another job");
    return -1;
  }
  reap(c);
  json_t *j = kn_clangmsg_job_to_json(job);
  char *text = j ? json_dumps(j, JSON_COMPACT) : NULL;
  json_decref(j);
  if (!text) {
    snprintf(err, err_size, "the job cannot be written as JSON");
    return -1;
  }
  int rc = -1;
  for (int attempt = 0; attempt < 2 && rc < 0; attempt++) {
    if (c->pid < 0 && start_process(c, err, err_size) < 0) break;
    rc = send_job(c, text);
    if (rc < 0) {
      snprintf(err, err_size, "cannot hand the job to libclang's process: %s", strerror(errno));
      end_process(c); /* it ended before it read: once more, with a new one */
    }
  }
  free(text);
  if (rc < 0) return -1;
  c->busy = true;
  c->op = job->op;
  c->tag = job->tag;
  kn_clangmsg_job_free(job);
  return 0;
}

/* The result for a job whose process ended (its pipe's end of file) or
 * answered garbage (new); the process goes either way. */
static kn_clang_result_t *lost_result(kn_clang_t *c, bool ended, const char *what) {
  char how[160] = "";
  if (ended) ended_how(c, how, sizeof how);
  end_process(c);
  kn_clang_result_t *r = fl__xcalloc(1, sizeof *r);
  fl__buf_t sb = FL__BUF_INIT;
  fl__buf_printf(&sb, "libclang's process %s%s", what, how);
  r->error = fl__buf_take(&sb);
  r->lost = true;
  return r;
}

kn_clang_result_t *kn_clang_take(kn_clang_t *c) {
  reap(c);
  if (!c->busy) return NULL;
  kn_clang_op_t op = c->op;
  void *tag = c->tag;
  kn_clang_result_t *r = NULL;
  while (!r) {
    char kind;
    const unsigned char *data;
    size_t len;
    int popped = kn_chan_pop(&c->reader, &kind, &data, &len);
    if (popped > 0) {
      json_error_t e;
      json_t *j = json_loadb((const char *)data, len, 0, &e);
      char err[256];
      if (!j || kn_clangmsg_result_from_json(j, &r, err, sizeof err) < 0)
        r = lost_result(c, false, "answered with something that is not a result");
      json_decref(j);
      c->busy = false;
      break;
    }
    if (popped < 0) {
      r = lost_result(c, false, "answered with something that is not a frame");
      break;
    }
    ssize_t n = kn_chan_fill(&c->reader, c->result_fd);
    if (n < 0 && errno == EAGAIN) return NULL;
    if (n <= 0) r = lost_result(c, true, "ended while it read the unit");
  }
  r->op = op;
  r->tag = tag;
  return r;
}

void kn_clang_cancel(kn_clang_t *c) {
  if (c->busy) end_process(c);
}
