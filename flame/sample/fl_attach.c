/* SPDX-License-Identifier: BSD-3-Clause */
/* fl_attach: sampling a running process from outside it, by ptrace (see
 * fl_attach.h). */
#define _GNU_SOURCE
#include "cflame/fl_attach.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <pwd.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ptrace.h>
#include <sys/user.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "cflame/fl_sampler.h"
#include "fl__attach.h"
#include "fl__common.h"

/* How often the maps and the children are looked at, in ticks' time. */
#define LOOK_NS 100000000ll

typedef struct thread {
  pid_t tid;
  pid_t pid;          /* its process's */
  size_t proc;        /* its process image, in attach_t.procs */
  int sched_fd;       /* /proc/PID/task/TID/schedstat, or -1 */
  uint64_t cpu_ns;    /* its CPU time at its last sample (at the attach: then) */
  uint64_t cpu_first; /* ... at the attach, when it was first seen, or its image began */
  int64_t carry_ns;   /* CPU time not yet weighed (may be negative: rounded up) */
  bool listening;     /* in a group stop, kept with PTRACE_LISTEN */
  bool vforking;      /* from its vfork to its child's exec or exit, it waits for the
                         child (and may be 'R' on its way there), in a wait no
                         interrupt ends: it is not stopped for samples meanwhile */
  bool gone;          /* exited (reaped) or no longer ours */
  char name[17];
} thread_t;

typedef struct attach {
  pid_t pid;
  const fl_attach_opts_t *opts;
  fl_attach_result_t *r;
  thread_t *threads;
  size_t n, cap;
  /* The process images: the target's first, then each followed one's in
   * the order it started (the ended ones kept, for the result). */
  fl__attach_proc_t *procs;
  size_t n_procs, cap_procs;
  int *before; /* the children the target had at the attach */
  size_t n_before;
} attach_t;

/* ---- /proc ---- */

/* The first number of a thread's schedstat: its CPU time in ns, exact
 * when it is stopped (switched out); up to a scheduler tick behind while
 * it runs. Returns -1 when it cannot be read. */
static int64_t thread_cpu_ns(const thread_t *t) {
  char text[96];
  if (t->sched_fd < 0) return -1;
  ssize_t got = pread(t->sched_fd, text, sizeof text - 1, 0);
  if (got <= 0) return -1;
  text[got] = '\0';
  return strtoll(text, NULL, 10);
}

/* Whether thread tid of pid is running or runnable ('R' in its stat):
 * not in a blocking call, which an interrupt could cut short. */
static bool thread_running(pid_t pid, pid_t tid) {
  char path[64], text[512];
  snprintf(path, sizeof path, "/proc/%d/task/%d/stat", pid, tid);
  if (fl__read_small(path, text, sizeof text) <= 0) return false;
  const char *paren = strrchr(text, ')'); /* the name may hold spaces and parentheses */
  return paren && paren[1] == ' ' && paren[2] == 'R';
}

static void read_comm(pid_t pid, pid_t tid, char name[17]) {
  char path[64], text[64];
  snprintf(path, sizeof path, "/proc/%d/task/%d/comm", pid, tid);
  if (fl__read_small(path, text, sizeof text) < 0) return;
  text[strcspn(text, "\n")] = '\0';
  snprintf(name, 17, "%.16s", text);
}

/* ---- the threads ---- */

static thread_t *find_thread(attach_t *a, pid_t tid) {
  for (size_t i = 0; i < a->n; i++)
    if (a->threads[i].tid == tid && !a->threads[i].gone) return &a->threads[i];
  return NULL;
}

/* Adds thread tid of process pid, image proc (seized, or attached as a
 * clone or fork of one) unless known. */
static void add_thread(attach_t *a, pid_t pid, pid_t tid, size_t proc) {
  if (find_thread(a, tid)) return;
  a->threads = fl__grow(a->threads, &a->cap, a->n + 1, sizeof *a->threads);
  thread_t *t = &a->threads[a->n++];
  *t = (thread_t){.tid = tid, .pid = pid, .proc = proc, .sched_fd = -1};
  char path[64];
  snprintf(path, sizeof path, "/proc/%d/task/%d/schedstat", pid, tid);
  t->sched_fd = open(path, O_RDONLY | O_CLOEXEC);
  int64_t cpu = thread_cpu_ns(t);
  t->cpu_ns = t->cpu_first = cpu > 0 ? (uint64_t)cpu : 0;
  read_comm(pid, tid, t->name);
}

/* ---- followed processes ---- */

/* Starts image `image` of process pid as a.procs' next. Returns its
 * index. A process libdwfl cannot unwind is still followed (and detached
 * at the end), without samples. */
static size_t start_proc(attach_t *a, pid_t pid, int image) {
  a->procs = fl__grow(a->procs, &a->cap_procs, a->n_procs + 1, sizeof *a->procs);
  char err[256];
  fl__attach_proc_start(&a->procs[a->n_procs], pid, image, a->opts, err, sizeof err);
  return a->n_procs++;
}

/* Writes thread t's name record into its image's buffer (unless the
 * image has no samples: a child that exec'd at once is no process of the
 * graph's), and adds the CPU time it used in that image to the image's. */
static void end_thread_in_image(attach_t *a, thread_t *t) {
  int64_t now = thread_cpu_ns(t);
  if (now >= 0 && (uint64_t)now > t->cpu_ns) t->cpu_ns = (uint64_t)now;
  fl__attach_proc_t *p = &a->procs[t->proc];
  p->part.cpu_seconds += (double)(t->cpu_ns - t->cpu_first) / 1e9;
  t->cpu_first = t->cpu_ns;
  fl_sampler_record_t rec = {.tid = t->tid, .time_ns = (uint64_t)fl__clock_ns(CLOCK_MONOTONIC)};
  memcpy(rec.thread_name, t->name, sizeof rec.thread_name);
  if (rec.thread_name[0] && p->words && ((fl_sampler_header_t *)p->words)->used_words)
    fl__attach_proc_put(p, &rec);
}

/* A child forked (PTRACE_EVENT_FORK or VFORK, which only follow_forks
 * asks for): attached by the kernel at its birth, in its first stop or on
 * its way there, which drain() sees. */
static void follow_child(attach_t *a, pid_t child) {
  add_thread(a, child, child, start_proc(a, child, 0));
}

/* Thread t's process exec'd (PTRACE_EVENT_EXEC: t is its leader, whose
 * tid the exec'ing thread took; former, that thread's tid before). The
 * target reads its maps again; a followed child ends its image and
 * starts the next: the new program's name, maps and unwinder. */
static void on_exec(attach_t *a, pid_t leader, pid_t former) {
  thread_t *t = find_thread(a, leader);
  if (former != leader) {
    thread_t *gone = find_thread(a, former);
    if (gone) gone->gone = true;
  }
  if (!t) return;
  if (t->proc == 0) {
    fl__attach_proc_look_at_maps(&a->procs[0]);
    return;
  }
  end_thread_in_image(a, t);
  size_t old = t->proc;
  fl__attach_proc_end(&a->procs[old]);
  int image = a->procs[old].part.image + 1;
  size_t proc = start_proc(a, leader, image);
  t = find_thread(a, leader);
  t->proc = proc;
  read_comm(t->pid, t->tid, t->name);
}

/* A thread that is stopped goes on, with sig delivered to it (0: none).
 * A thread killed meanwhile fails with ESRCH; it stays among the threads
 * until waitpid reports its end. */
static void resume(thread_t *t, int sig) {
  ptrace(PTRACE_CONT, t->tid, NULL, (void *)(intptr_t)sig);
}

typedef enum stop {
  STOP_HANDLED, /* an event dealt with; the thread goes on */
  STOP_VFORKED, /* a vfork dealt with: the thread goes on, to wait for its child */
  STOP_OURS,    /* a PTRACE_EVENT_STOP other than a group stop: it stays stopped */
  STOP_GROUP,   /* a group stop (SIGSTOP and kin), kept */
  STOP_GONE,    /* the thread ended */
} stop_t;

/* Deals with what waitpid said of thread t (status). Leaves it stopped
 * only for STOP_OURS. A signal the thread was to receive is passed on to
 * it; a clone it made joins the threads. */
static stop_t on_status(attach_t *a, thread_t *t, int status) {
  if (WIFEXITED(status) || WIFSIGNALED(status)) {
    t->gone = true;
    if (t->tid == a->pid) {
      a->r->end = FL_ATTACH_EXITED;
      a->r->status = status;
    } else if (t->tid == t->pid && t->proc) {
      a->procs[t->proc].part.exited = true;
      a->procs[t->proc].part.status = status;
    }
    return STOP_GONE;
  }
  if (!WIFSTOPPED(status)) return STOP_HANDLED;
  int sig = WSTOPSIG(status), event = status >> 16;
  if (event == PTRACE_EVENT_CLONE || event == PTRACE_EVENT_FORK || event == PTRACE_EVENT_VFORK ||
      event == PTRACE_EVENT_EXEC) {
    unsigned long msg;
    pid_t tid = t->tid;
    if (ptrace(PTRACE_GETEVENTMSG, tid, NULL, &msg) == 0) {
      if (event == PTRACE_EVENT_CLONE)
        add_thread(a, t->pid, (pid_t)msg, t->proc);
      else if (event == PTRACE_EVENT_EXEC)
        on_exec(a, tid, (pid_t)msg);
      else
        follow_child(a, (pid_t)msg);
    }
    /* The threads may have moved: t is found again. */
    t = find_thread(a, tid);
    if (!t) return STOP_HANDLED;
    t->vforking = event == PTRACE_EVENT_VFORK;
    resume(t, 0);
    return t->vforking ? STOP_VFORKED : STOP_HANDLED;
  }
  if (event == PTRACE_EVENT_STOP) {
    if (sig == SIGSTOP || sig == SIGTSTP || sig == SIGTTIN || sig == SIGTTOU) {
      /* Stopped as the whole process is: it stays so, and a SIGCONT is
       * still seen. */
      t->listening = true;
      ptrace(PTRACE_LISTEN, t->tid, NULL, NULL);
      return STOP_GROUP;
    }
    t->listening = false;
    return STOP_OURS;
  }
  if (event == PTRACE_EVENT_VFORK_DONE) t->vforking = false;
  /* A signal on its way to the thread: delivered as it would have been. */
  resume(t, event ? 0 : sig);
  return STOP_HANDLED;
}

/* The kernel's "restart the call unless a handler runs" (ERESTARTNOHAND,
 * include/linux/errno.h): not in the user-space headers. */
#define RESTART_NO_HANDLER 514

/* Undoes what cflame's own stop did to a call thread tid was blocked in.
 * A sample interrupts only a running thread, but it may block between the
 * look and the interrupt; the interrupt then wakes it as a signal would,
 * and calls that are not restarted after a stop (epoll_wait, semop, ...)
 * fail with EINTR. At cflame's stop, on the way back from such a call,
 * its result is set to ERESTARTNOHAND: the kernel restarts the call when
 * the thread goes on, unless a signal's handler runs first, which then
 * sees EINTR as it would have without cflame. x86-64's registers. */
static void restart_interrupted_call(pid_t tid) {
  struct user_regs_struct regs;
  if (ptrace(PTRACE_GETREGS, tid, NULL, &regs) < 0) return;
  if ((long long)regs.orig_rax < 0 || (long long)regs.rax != -EINTR) return;
  regs.rax = (unsigned long long)-RESTART_NO_HANDLER;
  ptrace(PTRACE_SETREGS, tid, NULL, &regs);
}

/* Waits for thread t's next stop or end (blocking) and deals with it. */
static stop_t wait_thread(attach_t *a, thread_t *t) {
  int status;
  pid_t tid = t->tid;
  for (;;) {
    pid_t got = waitpid(tid, &status, __WALL);
    if (got == tid) return on_status(a, t, status);
    if (got < 0 && errno != EINTR) {
      t->gone = true; /* not ours any more */
      return STOP_GONE;
    }
  }
}

/* Deals with every event waiting for the threads, without blocking:
 * group stops, signals to pass on, clones, exits, the first stop of a
 * thread just started. */
static void drain(attach_t *a) {
  for (size_t i = 0; i < a->n; i++) {
    int status;
    while (!a->threads[i].gone) {
      pid_t tid = a->threads[i].tid;
      pid_t got = waitpid(tid, &status, __WALL | WNOHANG);
      if (got == 0) break;
      if (got < 0) {
        if (errno == EINTR) continue;
        a->threads[i].gone = true;
        break;
      }
      if (on_status(a, &a->threads[i], status) == STOP_OURS) {
        restart_interrupted_call(a->threads[i].tid);
        resume(&a->threads[i], 0);
      }
    }
  }
}

/* ---- the stacks ---- */

/* Samples thread i if it is running and has used half an interval of CPU
 * since its last sample. (An event on the way, a clone, may move the
 * threads: each is found by its index.) */
static void sample(attach_t *a, size_t i) {
  int64_t iv = (int64_t)a->opts->interval_ns;
  thread_t *t = &a->threads[i];
  int64_t cpu = thread_cpu_ns(t);
  if (t->listening || t->vforking || (cpu >= 0 && cpu - (int64_t)t->cpu_ns < iv / 2) ||
      !thread_running(t->pid, t->tid))
    return;
  if (ptrace(PTRACE_INTERRUPT, t->tid, NULL, NULL) < 0) return; /* its exit is to be reaped */
  stop_t s;
  /* Any stop of the thread (a signal's, a clone's) drops an interrupt
   * still pending: it is asked again of a thread still running, or the
   * wait would last until the thread's next signal; one that blocked
   * meanwhile is left alone until the next tick. Not after a vfork: the
   * thread goes on to wait for its child to exec or exit, a wait no
   * interrupt ends, and the child, followed, may be in its first stop,
   * which only this loop's caller would end. */
  while ((s = wait_thread(a, &a->threads[i])) == STOP_HANDLED)
    if (!thread_running(a->threads[i].pid, a->threads[i].tid) ||
        ptrace(PTRACE_INTERRUPT, a->threads[i].tid, NULL, NULL) < 0)
      return;
  if (s != STOP_OURS) return;
  t = &a->threads[i];
  restart_interrupted_call(t->tid);
  /* Stopped, so switched out: its CPU time is exact now. */
  cpu = thread_cpu_ns(t);
  int64_t used = cpu >= 0 ? cpu - (int64_t)t->cpu_ns : iv;
  if (cpu >= 0) t->cpu_ns = (uint64_t)cpu;
  int64_t total = used + t->carry_ns, weight = (total + iv / 2) / iv;
  t->carry_ns = total - weight * iv;
  fl__attach_proc_t *p = &a->procs[t->proc];
  if (weight > 0 && p->words) {
    fl__attach_proc_unwind(p, t->tid);
    if (p->n_pcs) {
      fl_sampler_record_t rec = {.tid = t->tid,
                                 .weight = (uint64_t)weight,
                                 .cpu_ns = (uint64_t)used,
                                 .time_ns = (uint64_t)fl__clock_ns(CLOCK_MONOTONIC),
                                 .pcs = p->pcs,
                                 .n_pcs = p->n_pcs};
      fl__attach_proc_put(p, &rec);
    }
  }
  resume(t, 0);
}

/* ---- children ---- */

/* The children of the target's threads now, as pids (new), *n of them. */
static int *children_now(attach_t *a, size_t *n) {
  int *pids = NULL;
  size_t cap = 0;
  *n = 0;
  for (size_t i = 0; i < a->n; i++) {
    if (a->threads[i].gone || a->threads[i].pid != a->pid) continue;
    char path[96];
    snprintf(path, sizeof path, "/proc/%d/task/%d/children", a->pid, a->threads[i].tid);
    char *text = fl__attach_read_proc(path);
    for (char *p = text, *end; p && *p; p = end) {
      long pid = strtol(p, &end, 10);
      if (end == p) break;
      pids = fl__grow(pids, &cap, *n + 1, sizeof *pids);
      pids[(*n)++] = (int)pid;
    }
    free(text);
  }
  return pids;
}

static bool among(const int *pids, size_t n, int pid) {
  for (size_t i = 0; i < n; i++)
    if (pids[i] == pid) return true;
  return false;
}

/* Notes the children forked since the attach that were not seen yet. */
static void look_at_children(attach_t *a) {
  size_t n;
  int *now = children_now(a, &n);
  fl_attach_result_t *r = a->r;
  for (size_t i = 0; i < n; i++) {
    bool seen = among(a->before, a->n_before, now[i]);
    for (size_t j = 0; j < r->n_children && !seen; j++) seen = r->children[j].pid == now[i];
    if (seen) continue;
    r->children = fl__xrealloc(r->children, r->n_children + 1, sizeof *r->children);
    fl_attach_child_t *c = &r->children[r->n_children++];
    *c = (fl_attach_child_t){.pid = now[i]};
    char path[64];
    snprintf(path, sizeof path, "/proc/%d/comm", now[i]);
    char *text = fl__attach_read_proc(path);
    snprintf(c->comm, sizeof c->comm, "%.16s", text ? text : "?");
    c->comm[strcspn(c->comm, "\n")] = '\0';
    free(text);
  }
  free(now);
}

/* ---- attaching and detaching ---- */

/* Why pid cannot be attached to (after PTRACE_SEIZE failed with e), and
 * what allows it, into err. */
static void say_not_permitted(int pid, int e, char *err, size_t err_size) {
  char path[64];
  snprintf(path, sizeof path, "/proc/%d/status", pid);
  char *status = fl__attach_read_proc(path);
  long tracer = 0;
  unsigned uid = 0, my_uid = (unsigned)geteuid();
  const char *line;
  if (status && (line = strstr(status, "\nTracerPid:"))) tracer = strtol(line + 11, NULL, 10);
  if (status && (line = strstr(status, "\nUid:"))) uid = (unsigned)strtoul(line + 5, NULL, 10);
  bool zombie = status && (line = strstr(status, "\nState:")) && strchr(line + 7, 'Z') &&
                strchr(line + 7, 'Z') < strchr(line + 1, '\n');
  free(status);
  char *scope_text = fl__attach_read_proc("/proc/sys/kernel/yama/ptrace_scope");
  int scope = scope_text ? atoi(scope_text) : -1;
  free(scope_text);
  snprintf(path, sizeof path, "/proc/%d/exe", pid);
  if (e == ESRCH) {
    snprintf(err, err_size, "--pid %d: no such process", pid);
  } else if (zombie) {
    snprintf(err, err_size,
             "--pid %d: the process has exited (a zombie, which its parent has not waited for "
             "yet): it runs no code to sample",
             pid);
  } else if (tracer) {
    snprintf(err, err_size,
             "--pid %d: the process is traced already, by pid %ld (a debugger, strace or "
             "another cflame); a process has one tracer at a time: detach that one first",
             pid, tracer);
  } else if (scope == 3) {
    snprintf(err, err_size,
             "--pid %d: attaching is not permitted: kernel.yama.ptrace_scope is 3 (no process "
             "may attach to another), which only a reboot undoes",
             pid);
  } else if (uid != my_uid && my_uid != 0) {
    struct passwd *pw = getpwuid(uid);
    snprintf(err, err_size,
             "--pid %d: attaching is not permitted: the process runs as another user (%s, uid "
             "%u); attach as that user (sudo -u %s cflame record --pid %d ...) or as root",
             pid, pw ? pw->pw_name : "?", uid, pw ? pw->pw_name : "#uid", pid);
  } else if (scope == 1 || scope == 2) {
    snprintf(err, err_size,
             "--pid %d: attaching is not permitted: kernel.yama.ptrace_scope is %d (%s); allow "
             "it with `sudo sysctl kernel.yama.ptrace_scope=0`, or run cflame with "
             "CAP_SYS_PTRACE (as root, or `sudo setcap cap_sys_ptrace+ep $(command -v cflame)`)",
             pid, scope,
             scope == 1 ? "only a process's ancestors may attach to it"
                        : "only a process with CAP_SYS_PTRACE may attach");
  } else if (access(path, R_OK) != 0 && errno == EACCES) {
    snprintf(err, err_size,
             "--pid %d: attaching is not permitted: the process is not dumpable (set-user-ID or "
             "set-capability, or it called prctl(PR_SET_DUMPABLE, 0)); %s",
             pid,
             my_uid ? "attach as root"
                    : "even root needs CAP_SYS_PTRACE over it, which cflame lacks here (a "
                      "process outside this container's user namespace, or the capability "
                      "dropped: start the container with --cap-add=SYS_PTRACE)");
  } else {
    snprintf(err, err_size,
             "--pid %d: attaching is not permitted (%s): in a container without "
             "CAP_SYS_PTRACE (start it with --cap-add=SYS_PTRACE), or under a security module "
             "(seccomp, SELinux, AppArmor) that forbids ptrace",
             pid, strerror(e));
  }
}

/* What is traced: the threads the target starts, and with follow_forks
 * the processes it forks, the end of a vfork's wait for its child, and
 * the programs they exec. */
static long trace_options(const attach_t *a) {
  return PTRACE_O_TRACECLONE |
         (a->opts->follow_forks ? PTRACE_O_TRACEFORK | PTRACE_O_TRACEVFORK |
                                      PTRACE_O_TRACEVFORKDONE | PTRACE_O_TRACEEXEC
                                : 0);
}

/* Seizes every thread of the target, those it starts meanwhile too.
 * Returns 0, or -1 with err when the first cannot be seized. */
static int seize_all(attach_t *a, char *err, size_t err_size) {
  char path[64];
  snprintf(path, sizeof path, "/proc/%d/task", a->pid);
  for (bool more = true; more;) {
    more = false;
    DIR *d = opendir(path);
    if (!d) {
      if (a->n) return 0; /* it ended meanwhile: drain() reaps it */
      say_not_permitted(a->pid, errno == ENOENT ? ESRCH : errno, err, err_size);
      return -1;
    }
    for (struct dirent *e; (e = readdir(d));) {
      pid_t tid = (pid_t)atoi(e->d_name);
      if (tid <= 0 || find_thread(a, tid)) continue;
      if (ptrace(PTRACE_SEIZE, tid, NULL, (void *)trace_options(a)) < 0) {
        if (!a->n) {
          int e0 = errno;
          closedir(d);
          say_not_permitted(a->pid, e0, err, err_size);
          return -1;
        }
        /* A thread started since the first was seized: attached already,
         * as a clone (EPERM), or ended (ESRCH). */
        if (errno != EPERM) continue;
      }
      add_thread(a, a->pid, tid, 0);
      more = true;
    }
    closedir(d);
  }
  return 0;
}

/* Detaches thread i: stopped first (a thread must be, to be detached),
 * with a signal that was on its way passed on; one in a group stop stays
 * stopped. A clone or a child it made as it stopped (attached by the
 * kernel) joins the threads, to be detached in turn. */
static void detach(attach_t *a, size_t i) {
  pid_t tid = a->threads[i].tid;
  if (a->threads[i].listening && ptrace(PTRACE_DETACH, tid, NULL, NULL) == 0) goto done;
  if (ptrace(PTRACE_INTERRUPT, tid, NULL, NULL) < 0) goto done;
  for (;;) {
    int status;
    pid_t got = waitpid(tid, &status, __WALL);
    if (got < 0 && errno == EINTR) continue;
    if (got < 0 || WIFEXITED(status) || WIFSIGNALED(status)) {
      if (got == a->pid) {
        a->r->end = FL_ATTACH_EXITED;
        a->r->status = status;
      }
      break;
    }
    if (!WIFSTOPPED(status)) continue;
    int event = status >> 16;
    unsigned long child;
    if ((event == PTRACE_EVENT_CLONE || event == PTRACE_EVENT_FORK ||
         event == PTRACE_EVENT_VFORK) &&
        ptrace(PTRACE_GETEVENTMSG, tid, NULL, &child) == 0)
      add_thread(a, event == PTRACE_EVENT_CLONE ? a->threads[i].pid : (pid_t)child, (pid_t)child,
                 a->threads[i].proc);
    /* A signal's stop passes the signal on; from any other (ours, a group
     * stop, a clone's) the thread goes on as it was, the interrupt still
     * pending after a signal's stop dropped with the tracer. A call our
     * interrupt woke is restarted. */
    if (event == PTRACE_EVENT_STOP) restart_interrupted_call(tid);
    ptrace(PTRACE_DETACH, tid, NULL, (void *)(intptr_t)(event ? 0 : WSTOPSIG(status)));
    break;
  }
done:
  a->threads[i].gone = true;
}

/* Detaches every thread, the newest first: a vfork's parent waits for
 * its child to exec or exit before any stop can take it, and the child,
 * followed, may be in a stop of its own until it is detached. Those the
 * detach adds (a clone or fork made meanwhile) are detached in turn. */
static void detach_all(attach_t *a) {
  for (bool more = true; more;) {
    more = false;
    for (size_t i = a->n; i-- > 0;)
      if (!a->threads[i].gone) {
        detach(a, i);
        more = true;
      }
  }
}

/* ---- the run ---- */

/* Calls opts->progress with what is recorded so far: the target's buffer,
 * name and maps, and each followed image's, as r will have them. */
static void progress(attach_t *a) {
  fl_attach_result_t *r = a->r;
  snprintf(r->name, sizeof r->name, "%s", a->procs[0].part.name);
  r->maps = a->procs[0].part.maps;
  r->n_maps = a->procs[0].part.n_maps;
  r->n_followed = a->n_procs - 1;
  r->followed = r->n_followed ? fl__xcalloc(r->n_followed, sizeof *r->followed) : NULL;
  for (size_t i = 1; i < a->n_procs; i++) {
    fl_attach_process_t *f = &r->followed[i - 1];
    *f = a->procs[i].part;
    if (a->procs[i].words) {
      f->buf = a->procs[i].words;
      f->bytes = fl__attach_proc_bytes(&a->procs[i]);
    }
  }
  a->opts->progress(a->opts->ctx, a->procs[0].words, fl__attach_proc_bytes(&a->procs[0]), r);
  free(r->followed);
  r->followed = NULL;
  r->n_followed = 0;
  r->maps = NULL;
  r->n_maps = 0;
}

static void on_attached(attach_t *a) {
  if (!a->opts->follow_forks) a->before = children_now(a, &a->n_before);
}

/* Ends every image: each thread's name record, each image's CPU time;
 * the target's into r, the followed ones' into r->followed. */
static void finish(attach_t *a) {
  fl_attach_result_t *r = a->r;
  for (size_t i = 0; i < a->n; i++) {
    thread_t *t = &a->threads[i];
    read_comm(t->pid, t->tid, t->name); /* kept when it has ended */
    end_thread_in_image(a, t);
  }
  r->threads = a->n;
  for (size_t i = 0; i < a->n_procs; i++) fl__attach_proc_end(&a->procs[i]);
  fl_attach_process_t *target = &a->procs[0].part;
  r->buf = target->buf;
  r->bytes = target->bytes;
  r->maps = target->maps;
  r->n_maps = target->n_maps;
  snprintf(r->name, sizeof r->name, "%s", target->name);
  r->ppid = target->ppid;
  r->cpu_seconds = target->cpu_seconds;
  *target = (fl_attach_process_t){0};
  if (a->n_procs > 1) {
    r->n_followed = a->n_procs - 1;
    r->followed = fl__xcalloc(r->n_followed, sizeof *r->followed);
    for (size_t i = 1; i < a->n_procs; i++) {
      r->followed[i - 1] = a->procs[i].part;
      a->procs[i].part = (fl_attach_process_t){0};
    }
  }
}

static bool all_gone(const attach_t *a) {
  for (size_t i = 0; i < a->n; i++)
    if (!a->threads[i].gone) return false;
  return true;
}

int fl_attach_run(int pid, const fl_attach_opts_t *opts, fl_attach_result_t *r, char *err,
                  size_t err_size) {
  memset(r, 0, sizeof *r);
  if (pid <= 0 || pid == getpid()) {
    snprintf(err, err_size, "--pid %d: %s", pid,
             pid <= 0 ? "not a process id" : "cflame cannot sample itself");
    return -1;
  }
  if (opts->interval_ns < FL_ATTACH_INTERVAL_MIN_NS) {
    snprintf(err, err_size, "the interval of an attach is at least %g ms",
             (double)FL_ATTACH_INTERVAL_MIN_NS / 1e6);
    return -1;
  }
  attach_t a = {.pid = pid, .opts = opts, .r = r};
  int rc = -1;
  int64_t start = fl__clock_ns(CLOCK_MONOTONIC);
  if (seize_all(&a, err, err_size) < 0) goto done;
  a.procs = fl__grow(NULL, &a.cap_procs, 1, sizeof *a.procs);
  a.n_procs = 1;
  if (fl__attach_proc_start(&a.procs[0], pid, 0, opts, err, err_size) < 0) {
    detach_all(&a);
    goto done;
  }
  on_attached(&a);
  if (opts->attached) opts->attached(opts->ctx, pid, a.n);
  int64_t iv = (int64_t)opts->interval_ns, next = start + iv, next_look = start + LOOK_NS;
  int64_t end = opts->duration_s > 0 ? start + (int64_t)(opts->duration_s * 1e9) : INT64_MAX;
  r->end = FL_ATTACH_STOPPED;
  for (;;) {
    drain(&a);
    if (r->end == FL_ATTACH_EXITED || all_gone(&a)) {
      r->end = FL_ATTACH_EXITED;
      break;
    }
    int64_t now = fl__clock_ns(CLOCK_MONOTONIC);
    if (now >= end) {
      r->end = FL_ATTACH_DURATION;
      break;
    }
    if (now >= next) {
      for (size_t i = 0; i < a.n; i++)
        if (!a.threads[i].gone) sample(&a, i);
      next += iv;
      if (next < now) next = now + iv; /* a late tick is not made up for */
    }
    if (now >= next_look) {
      for (size_t i = 0; i < a.n_procs; i++)
        if (a.procs[i].words) fl__attach_proc_look_at_maps(&a.procs[i]);
      if (!opts->follow_forks) look_at_children(&a);
      next_look = now + LOOK_NS;
    }
    if (opts->progress) progress(&a);
    /* Wait for the next tick, a stop asked for, or (at most 2 ms) the
     * threads' events: a signal to the target waits that long at most. */
    int64_t wait_ns = (next < end ? next : end) - fl__clock_ns(CLOCK_MONOTONIC);
    if (wait_ns > 2000000) wait_ns = 2000000;
    struct pollfd pfd = {.fd = opts->stop_fd, .events = POLLIN};
    int ms = wait_ns > 0 ? (int)((wait_ns + 999999) / 1000000) : 0;
    if (poll(&pfd, opts->stop_fd >= 0 ? 1 : 0, ms) > 0) {
      r->end = FL_ATTACH_STOPPED;
      break;
    }
  }
  if (r->end != FL_ATTACH_EXITED && !opts->follow_forks) look_at_children(&a);
  detach_all(&a);
  r->wall_seconds = (double)(fl__clock_ns(CLOCK_MONOTONIC) - start) / 1e9;
  finish(&a);
  rc = 0;
done:
  for (size_t i = 0; i < a.n; i++)
    if (a.threads[i].sched_fd >= 0) close(a.threads[i].sched_fd);
  free(a.threads);
  free(a.before);
  for (size_t i = 0; i < a.n_procs; i++) fl__attach_proc_free(&a.procs[i]);
  free(a.procs);
  if (rc < 0) fl_attach_result_free(r);
  return rc;
}

void fl_attach_result_free(fl_attach_result_t *r) {
  free(r->buf);
  for (size_t i = 0; i < r->n_maps; i++) free(r->maps[i]);
  free(r->maps);
  free(r->children);
  for (size_t i = 0; i < r->n_followed; i++) {
    fl_attach_process_t *f = &r->followed[i];
    free(f->buf);
    for (size_t j = 0; j < f->n_maps; j++) free(f->maps[j]);
    free(f->maps);
  }
  free(r->followed);
  memset(r, 0, sizeof *r);
}
