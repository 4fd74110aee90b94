/* SPDX-License-Identifier: BSD-3-Clause */
#define _GNU_SOURCE
#include "kn_worker.h"

#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/pidfd.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "fl__spawn.h"
#include "kn_chan.h"
#include "kn_crash.h"
#include "kn_names.h"
#include "kn_text.h"

/* How long the event pipe may be at end of file while the worker lives:
 * a dying process closes its descriptors a moment before it can be
 * reaped; past this, a cell closed or replaced descriptor 4. */
#define CHANNEL_GRACE_MS 250

/* Where a start (kn_worker_start) is. */
typedef enum start_phase {
  START_NONE,   /* none under way: the worker runs, or there is none */
  START_READY,  /* the process is waited for: its "ready" */
  START_LOADED, /* objects[next] is loading: its "loaded" */
} start_phase_t;

struct kn_worker {
  char *path;
  pid_t pid;
  int pid_fd; /* readable once the process has ended (pidfd_open) */
  int cmd_fd; /* we write */
  int evt_fd; /* we read: frames */
  int out_fd; /* we read: raw stdout */
  int err_fd; /* we read: raw stderr */
  kn_chan_reader_t evt;
  long long evt_eof_ms; /* when the event pipe reached end of file; 0: not */
  char stop_reason[256]; /* why the kernel ended the worker, or "" */

  /* The start under way. A process that ends meanwhile is reaped into
   * ended/exit_status; the event the phase waits for is kept in answer. */
  start_phase_t phase;
  char *cwd;
  kn_worker_object_t *objects; /* paths owned */
  size_t n_objects, next;
  long long deadline_ms;
  json_t *answer;
  bool skip; /* kn_worker_skip_load */
  bool ended;
  int exit_status;
};

kn_worker_t *kn_worker_new(const char *worker_path) {
  kn_worker_t *w = fl__xcalloc(1, sizeof *w);
  w->path = fl__xstrdup(worker_path);
  w->pid = -1;
  w->pid_fd = w->cmd_fd = w->evt_fd = w->out_fd = w->err_fd = -1;
  return w;
}

char *kn_self_dir(void) {
  char buf[PATH_MAX];
  ssize_t n = readlink("/proc/self/exe", buf, sizeof buf - 1);
  if (n <= 0) return fl__xstrdup(".");
  buf[n] = '\0';
  return fl__xstrdup(dirname(buf));
}

static void close_fd(int *fd) {
  if (*fd >= 0) close(*fd);
  *fd = -1;
}

static void close_all(kn_worker_t *w) {
  close_fd(&w->pid_fd);
  close_fd(&w->cmd_fd);
  close_fd(&w->evt_fd);
  close_fd(&w->out_fd);
  close_fd(&w->err_fd);
  w->evt.start = w->evt.len = 0;
  w->evt_eof_ms = 0;
}

bool kn_worker_alive(const kn_worker_t *w) { return w->pid > 0; }
pid_t kn_worker_pid(const kn_worker_t *w) { return w->pid; }

void kn_worker_fds(const kn_worker_t *w, int fds[KN_WORKER_FDS]) {
  fds[0] = w->evt_fd;
  fds[1] = w->out_fd;
  fds[2] = w->err_fd;
  fds[3] = w->pid_fd;
}

static void end_process(kn_worker_t *w, int grace_ms);

/* Starts a process for the start under way (w->cwd), with the pipes of
 * kn_chan.h, and waits for its "ready" from now on. Returns 0, or -1 with
 * err. */
static int spawn(kn_worker_t *w, char *err, size_t err_size) {
  int cmd[2] = {-1, -1}, evt[2] = {-1, -1}, out[2] = {-1, -1}, errp[2] = {-1, -1};
  if (pipe2(cmd, O_CLOEXEC) < 0 || pipe2(evt, O_CLOEXEC) < 0 || pipe2(out, O_CLOEXEC) < 0 ||
      pipe2(errp, O_CLOEXEC) < 0) {
    snprintf(err, err_size, "cannot create pipes for the worker: %s", strerror(errno));
    goto fail;
  }
  /* The worker is told the kernel's pid: it dies with the kernel
   * (PR_SET_PDEATHSIG, which it sets first thing) and exits at once if
   * the kernel died before that. Its own process group, so that a SIGINT
   * typed at the kernel's terminal reaches the kernel alone, which
   * forwards it; SIGPIPE at its default, which the kernel ignores. */
  char kernel[32];
  snprintf(kernel, sizeof kernel, "%ld", (long)getpid());
  char *argv[] = {KN_WORKER_NAME, kernel, NULL};
  sigset_t pipe_signal;
  sigemptyset(&pipe_signal);
  sigaddset(&pipe_signal, SIGPIPE);
  fl__spawn_t how = {.path = w->path,
                     .argv = argv,
                     .dir = w->cwd,
                     .own_group = true,
                     .empty_sigmask = true,
                     .close_others = true,
                     .sigdefault = &pipe_signal,
                     .fds = {{0, -1},
                             {1, out[1]},
                             {2, errp[1]},
                             {KN_CHAN_CMD_FD, cmd[0]},
                             {KN_CHAN_EVT_FD, evt[1]}},
                     .n_fds = 5};
  pid_t pid;
  int rc = fl__spawn(&how, &pid);
  if (rc != 0) {
    if (w->cwd && access(w->cwd, X_OK) < 0)
      snprintf(err, err_size, "cannot start the worker in %s: %s", w->cwd, strerror(rc));
    else
      snprintf(err, err_size, "cannot start the worker %s: %s", w->path, strerror(rc));
    goto fail;
  }
  close(cmd[0]);
  close(evt[1]);
  close(out[1]);
  close(errp[1]);
  w->pid = pid;
  w->stop_reason[0] = '\0';
  w->ended = false;
  w->phase = START_READY;
  w->deadline_ms = fl__now_ms() + KN_WORKER_READY_MS;
  /* The kernel learns of the worker's end from the process itself, never
   * from its pipes, which a cell can close or hand to a child. */
  w->pid_fd = pidfd_open(pid, 0);
  w->cmd_fd = cmd[1];
  w->evt_fd = evt[0];
  w->out_fd = out[0];
  w->err_fd = errp[0];
  if (w->pid_fd < 0) {
    snprintf(err, err_size, "cannot watch the worker (pidfd_open: %s); cflame needs Linux 5.3 or later",
             strerror(errno));
    end_process(w, 0);
    return -1;
  }
  fcntl(w->pid_fd, F_SETFD, FD_CLOEXEC);
  fcntl(w->evt_fd, F_SETFL, O_NONBLOCK);
  fcntl(w->out_fd, F_SETFL, O_NONBLOCK);
  fcntl(w->err_fd, F_SETFL, O_NONBLOCK);
  return 0;

fail:
  for (int i = 0; i < 2; i++) {
    if (cmd[i] >= 0) close(cmd[i]);
    if (evt[i] >= 0) close(evt[i]);
    if (out[i] >= 0) close(out[i]);
    if (errp[i] >= 0) close(errp[i]);
  }
  return -1;
}

/* Forgets the start under way (its process is left as it is). */
static void start_forget(kn_worker_t *w) {
  for (size_t i = 0; i < w->n_objects; i++) free((char *)w->objects[i].path);
  free(w->objects);
  w->objects = NULL;
  w->n_objects = w->next = 0;
  free(w->cwd);
  w->cwd = NULL;
  json_decref(w->answer);
  w->answer = NULL;
  w->skip = w->ended = false;
  w->phase = START_NONE;
}

int kn_worker_start(kn_worker_t *w, const char *cwd, const kn_worker_object_t *objects, size_t n,
                    char *err, size_t err_size) {
  kn_worker_stop(w, 0);
  w->cwd = cwd ? fl__xstrdup(cwd) : NULL;
  w->objects = fl__xcalloc(n ? n : 1, sizeof *w->objects);
  for (size_t i = 0; i < n; i++)
    w->objects[i] = (kn_worker_object_t){fl__xstrdup(objects[i].path), objects[i].frame_pointers};
  w->n_objects = n;
  if (spawn(w, err, err_size) < 0) {
    start_forget(w);
    return -1;
  }
  return 0;
}

bool kn_worker_starting(const kn_worker_t *w) {
  return w->phase != START_NONE;
}

bool kn_worker_skip_load(kn_worker_t *w) {
  if (w->phase != START_LOADED) return false;
  w->skip = true;
  return true;
}

int kn_worker_send(kn_worker_t *w, const json_t *cmd, char *err, size_t err_size) {
  if (w->cmd_fd < 0 || kn_chan_write_json(w->cmd_fd, cmd) < 0) {
    snprintf(err, err_size, "cannot reach the worker: %s",
             w->cmd_fd < 0 ? "it is not running" : strerror(errno));
    return -1;
  }
  return 0;
}

/* Reads everything available from a raw pipe and reports it. Returns false
 * at end of file. */
static bool drain_raw(kn_worker_t *w, int *fd, kn_wev_type_t type, kn_wev_fn fn, void *ctx) {
  char buf[65536];
  while (*fd >= 0) {
    ssize_t n = read(*fd, buf, sizeof buf);
    if (n > 0) {
      if (fn) {
        kn_wev_t ev = {.type = type, .data = buf, .len = (size_t)n};
        fn(ctx, &ev);
      }
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && errno == EAGAIN) return true;
    close_fd(fd);
    return false;
  }
  return false;
}

/* Ends the worker for reason (said with its exit): the whole process
 * group, so that what its cells started goes too. */
static void stop_for(kn_worker_t *w, const char *reason) {
  if (w->pid <= 0) return;
  if (!w->stop_reason[0]) snprintf(w->stop_reason, sizeof w->stop_reason, "%s", reason);
  kill(-w->pid, SIGKILL);
  kill(w->pid, SIGKILL);
}

/* Reports the worker's end if it has ended: what it wrote last is still in
 * the pipes, read as far as it goes without waiting (a child of a cell may
 * hold the raw pipes open). Never blocks. */
static void reap_if_ended(kn_worker_t *w, kn_wev_fn fn, void *ctx);

static void drain_events(kn_worker_t *w, kn_wev_fn fn, void *ctx);

static void reap_if_ended(kn_worker_t *w, kn_wev_fn fn, void *ctx) {
  if (w->pid <= 0) return;
  int status = 0;
  pid_t r = waitpid(w->pid, &status, WNOHANG);
  if (r == 0 || (r < 0 && errno == EINTR)) return;
  drain_events(w, fn, ctx);
  drain_raw(w, &w->out_fd, KN_WEV_STDOUT, fn, ctx);
  drain_raw(w, &w->err_fd, KN_WEV_STDERR, fn, ctx);
  /* Its whole group, on any end: processes its cells started in the
   * background do not outlive it. */
  kill(-w->pid, SIGKILL);
  w->pid = -1;
  close_all(w);
  if (w->phase != START_NONE) {
    /* Part of the start, which says what it means (start_advance). */
    w->ended = true;
    w->exit_status = status;
    return;
  }
  if (fn) {
    kn_wev_t ev = {.type = KN_WEV_EXITED, .status = status,
                   .data = w->stop_reason[0] ? w->stop_reason : NULL};
    fn(ctx, &ev);
  }
}

/* Pops the frames buffered in the event reader; keeps the event a start
 * waits for in w->answer. */
static void pop_events(kn_worker_t *w, kn_wev_fn fn, void *ctx) {
  char kind;
  const unsigned char *data;
  size_t len;
  int r;
  while ((r = kn_chan_pop(&w->evt, &kind, &data, &len)) == 1) {
    kn_wev_t ev = {.data = (const char *)data, .len = len};
    if (kind == 'O' || kind == 'E') {
      ev.type = kind == 'O' ? KN_WEV_STDOUT : KN_WEV_STDERR;
      if (fn) fn(ctx, &ev);
    } else if (kind == 'C') {
      ev.type = KN_WEV_CRASH;
      if (fn) fn(ctx, &ev);
    } else if (kind == 'J') {
      json_t *obj = json_loadb((const char *)data, len, 0, NULL);
      if (!obj) continue;
      const char *name = json_string_value(json_object_get(obj, "ev"));
      const char *awaited = w->phase == START_READY    ? "ready"
                            : w->phase == START_LOADED ? "loaded"
                                                       : NULL;
      if (awaited && name && !strcmp(name, awaited) && !w->answer) {
        w->answer = obj;
        continue;
      }
      if (name && !strcmp(name, "channel_lost")) {
        /* The worker saw a cell close or replace its command channel. */
        snprintf(w->stop_reason, sizeof w->stop_reason,
                 "the cell closed the kernel's channel (fd %d)",
                 (int)json_integer_value(json_object_get(obj, "fd")));
        json_decref(obj);
        continue;
      }
      ev.type = KN_WEV_JSON;
      ev.json = obj;
      if (fn) fn(ctx, &ev);
      json_decref(obj);
    }
  }
  if (r < 0) {
    /* A corrupt stream cannot be resynchronised: the worker is beyond
     * trust; stop it and let the caller see it exit. */
    stop_for(w, "the kernel stopped the worker: its channel (fd 4) carried bytes that are not "
                "the kernel's frames, as when a cell writes into descriptor 4");
  }
}

/* Reads and pops the event pipe as far as it goes without waiting; at end
 * of file, closes it and notes when. */
static void drain_events(kn_worker_t *w, kn_wev_fn fn, void *ctx) {
  while (w->evt_fd >= 0) {
    ssize_t n = kn_chan_fill(&w->evt, w->evt_fd);
    pop_events(w, fn, ctx);
    if (n > 0) continue;
    if (n < 0 && (errno == EAGAIN || errno == EINTR)) break;
    close_fd(&w->evt_fd);
    w->evt_eof_ms = fl__now_ms();
  }
}

static void start_advance(kn_worker_t *w, kn_wev_fn fn, void *ctx);

void kn_worker_read(kn_worker_t *w, kn_wev_fn fn, void *ctx) {
  drain_raw(w, &w->out_fd, KN_WEV_STDOUT, fn, ctx);
  drain_raw(w, &w->err_fd, KN_WEV_STDERR, fn, ctx);
  drain_events(w, fn, ctx);
  reap_if_ended(w, fn, ctx);
  start_advance(w, fn, ctx);
}

int kn_worker_tick(kn_worker_t *w, kn_wev_fn fn, void *ctx) {
  reap_if_ended(w, fn, ctx);
  start_advance(w, fn, ctx);
  int timeout = -1;
  if (w->phase != START_NONE) {
    long long left = w->deadline_ms - fl__now_ms();
    timeout = left > 0 ? (int)left : 0;
  }
  if (w->pid <= 0 || !w->evt_eof_ms || w->stop_reason[0]) return timeout;
  long long left = w->evt_eof_ms + CHANNEL_GRACE_MS - fl__now_ms();
  if (left > 0) return timeout >= 0 && timeout < left ? timeout : (int)left;
  stop_for(w, "the cell closed the kernel's channel (fd 4)");
  return timeout;
}

/* ---- a start: the process's "ready", then each object's "loaded" ---- */

static void report(kn_wev_fn fn, void *ctx, kn_wev_type_t type, const char *object,
                   const char *why) {
  if (!fn) return;
  kn_wev_t ev = {.type = type, .object = object, .data = why, .len = why ? strlen(why) : 0};
  fn(ctx, &ev);
}

/* Ends the start, with why when there is no worker. */
static void start_end(kn_worker_t *w, kn_wev_fn fn, void *ctx, const char *why) {
  start_forget(w);
  report(fn, ctx, KN_WEV_STARTED, NULL, why);
}

/* Sends the load of objects[next], or ends the start when none is left.
 * A load that cannot be sent is seen as the process's end, when it is
 * reaped. */
static void load_next(kn_worker_t *w, kn_wev_fn fn, void *ctx) {
  if (w->next == w->n_objects) {
    start_end(w, fn, ctx, NULL);
    return;
  }
  const kn_worker_object_t *o = &w->objects[w->next];
  json_t *cmd = json_pack("{s:s, s:s, s:b}", "op", "load", "path", o->path, "frame_pointers",
                          o->frame_pointers);
  if (w->cmd_fd >= 0) kn_chan_write_json(w->cmd_fd, cmd);
  json_decref(cmd);
  w->phase = START_LOADED;
  w->deadline_ms = fl__now_ms() + KN_WORKER_LOAD_MS;
}

/* Why the process waited for did not start: it ended (status) or it did
 * not say it was ready in time. */
static void say_not_ready(const kn_worker_t *w, char *why, size_t why_size) {
  if (!w->ended) {
    snprintf(why, why_size, "the worker %s was not ready within %d s", w->path,
             KN_WORKER_READY_MS / 1000);
  } else if (WIFEXITED(w->exit_status) && WEXITSTATUS(w->exit_status) >= 126) {
    snprintf(why, why_size, "the worker %s could not be run (exit status %d)", w->path,
             WEXITSTATUS(w->exit_status));
  } else {
    char *what = kn_describe_exit(w->exit_status, w->stop_reason);
    snprintf(why, why_size, "the worker %s ended before it was ready: %s", w->path, what);
    free(what);
  }
}

/* Carries the start on as far as it goes without waiting: what the worker
 * answered, its end, and a deadline that passed. */
static void start_advance(kn_worker_t *w, kn_wev_fn fn, void *ctx) {
  char why[1024];
  while (w->phase != START_NONE) {
    bool late = fl__now_ms() >= w->deadline_ms;
    if (w->phase == START_READY) {
      if (w->answer) {
        json_decref(w->answer);
        w->answer = NULL;
        load_next(w, fn, ctx);
        continue;
      }
      if (!w->ended && !late) return;
      say_not_ready(w, why, sizeof why);
      end_process(w, 0);
      start_end(w, fn, ctx, why);
      return;
    }
    /* START_LOADED: an answer, else the process is of no more use. A
     * process that answered and then ended is replaced too. */
    bool replace = w->ended;
    if (w->answer) {
      if (json_is_true(json_object_get(w->answer, "ok")))
        why[0] = '\0';
      else
        snprintf(why, sizeof why, "the loader refused it: %s",
                 json_string_value(json_object_get(w->answer, "error")) ?: "no reason given");
    } else if (w->ended) {
      char *what = kn_describe_exit(w->exit_status, w->stop_reason);
      snprintf(why, sizeof why, "%s while it loaded", what);
      free(what);
    } else if (w->skip) {
      snprintf(why, sizeof why, "an interrupt ended its load (its constructor had not returned)");
      replace = true;
    } else if (late) {
      snprintf(why, sizeof why, "its constructor did not return within %d s",
               KN_WORKER_LOAD_MS / 1000);
      replace = true;
    } else {
      return;
    }
    json_decref(w->answer);
    w->answer = NULL;
    w->skip = false;
    if (why[0]) report(fn, ctx, KN_WEV_DROPPED, w->objects[w->next].path, why);
    w->next++;
    if (replace) {
      /* Its group goes too; a new process loads the objects after it. */
      end_process(w, 0);
      if (spawn(w, why, sizeof why) < 0) {
        start_end(w, fn, ctx, why);
        return;
      }
      continue;
    }
    load_next(w, fn, ctx);
  }
}

void kn_worker_signal(kn_worker_t *w, int sig) {
  if (w->pid > 0) kill(w->pid, sig);
}

void kn_worker_signal_group(kn_worker_t *w, int sig) {
  if (w->pid > 0) kill(-w->pid, sig);
}

/* Ends the process: asks it to exit, then SIGKILL after grace_ms; reaps
 * it. A start under way stays as it is. */
static void end_process(kn_worker_t *w, int grace_ms) {
  if (w->pid <= 0) {
    close_all(w);
    return;
  }
  pid_t pid = w->pid;
  bool reaped = false;
  if (grace_ms > 0 && w->cmd_fd >= 0) {
    json_t *cmd = json_pack("{s:s}", "op", "exit");
    kn_chan_write_json(w->cmd_fd, cmd);
    json_decref(cmd);
    struct pollfd p = {w->pid_fd, POLLIN, 0};
    if (poll(&p, 1, grace_ms) == 1) reaped = waitpid(pid, NULL, WNOHANG) == pid;
  }
  /* The whole process group, in any case: what the cells started in the
   * background goes too. SIGKILL ends the worker at once, so the wait is
   * short. */
  kill(-pid, SIGKILL);
  if (!reaped) {
    kill(pid, SIGKILL);
    while (waitpid(pid, NULL, 0) < 0 && errno == EINTR) {
    }
  }
  w->pid = -1;
  close_all(w);
}

void kn_worker_stop(kn_worker_t *w, int grace_ms) {
  start_forget(w);
  end_process(w, grace_ms);
}

void kn_worker_destroy(kn_worker_t **wp) {
  kn_worker_t *w = *wp;
  if (!w) return;
  kn_worker_stop(w, 200);
  kn_chan_reader_free(&w->evt);
  free(w->path);
  free(w);
  *wp = NULL;
}
