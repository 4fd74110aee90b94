/* SPDX-License-Identifier: BSD-3-Clause */
/* rc_run: running the program with its signals forwarded (see rc_run.h). */
#define _GNU_SOURCE
#include "rc_run.h"

#include <errno.h>
#include <dirent.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/pidfd.h>
#include <limits.h>
#include <stdint.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "fl__common.h"
#include "fl__spawn.h"
#include "rc_program.h"

static const int forwarded[] = {SIGINT, SIGQUIT, SIGTERM, SIGHUP, SIGUSR1, SIGUSR2};
#define N_FORWARDED (FL__ARRAY_SIZE(forwarded))
/* With the signal's number in the byte the handler writes: send it on. */
#define FORWARD 0x80

static int signal_pipe = -1;

/* Saves errno, writes the signal (and whether to forward it) to the
 * pipe, restores errno (the self-pipe pattern). */
static void on_signal(int sig, siginfo_t *si, void *uc) {
  (void)uc;
  int saved = errno;
  unsigned char byte = (unsigned char)(sig | (si->si_code == SI_KERNEL ? 0 : FORWARD));
  ssize_t w = write(signal_pipe, &byte, 1);
  (void)w;
  errno = saved;
}

/* Removes the recording directory dir and the files in it (it holds no
 * directories). Async-signal-safe: system calls only. */
static void remove_recording(const char *dir) {
  /* getdents64, not readdir (which allocates): a signal handler calls
   * this. Unlinking while reading may skip names, so it reads again
   * until a pass finds none (a few passes at most). */
  int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  for (int pass = 0; fd >= 0 && pass < 16; pass++) {
    bool found = false;
    lseek(fd, 0, SEEK_SET);
    char buf[4096] __attribute__((aligned(8)));
    for (long n; (n = syscall(SYS_getdents64, fd, buf, sizeof buf)) > 0;) {
      for (long at = 0; at < n;) {
        struct dirent64 *e = (struct dirent64 *)(buf + at);
        at += e->d_reclen;
        if (e->d_name[0] == '.' && (!e->d_name[1] || (e->d_name[1] == '.' && !e->d_name[2])))
          continue;
        unlinkat(fd, e->d_name, 0);
        found = true;
      }
    }
    if (!found) break;
  }
  if (fd >= 0) close(fd);
  rmdir(dir);
}

/* ---- the guard while converting ---- */

static char guard_dir[PATH_MAX];
static struct sigaction guard_old[N_FORWARDED];
static bool guarded;

static size_t append(char *out, size_t at, size_t size, const char *s) {
  while (*s && at + 1 < size) out[at++] = *s++;
  return at;
}

static void on_guarded_signal(int sig) {
  int saved = errno;
  remove_recording(guard_dir);
  /* sigabbrev_np reads a constant table: safe here. */
  const char *name = sigabbrev_np(sig);
  char msg[PATH_MAX + 256];
  size_t n = append(msg, 0, sizeof msg, "cflame record: ended by SIG");
  n = append(msg, n, sizeof msg, name ? name : "?");
  n = append(msg, n, sizeof msg,
             " while turning the recording into a profile: no profile written; the "
             "recording (");
  n = append(msg, n, sizeof msg, guard_dir);
  n = append(msg, n, sizeof msg, ") is removed\n");
  ssize_t w = write(2, msg, n);
  (void)w;
  /* Ended by the signal itself, as without the guard (128 + N). */
  signal(sig, SIG_DFL);
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, sig);
  raise(sig);
  sigprocmask(SIG_UNBLOCK, &set, NULL);
  errno = saved;
}

void rc_run_guard(const char *dir) {
  size_t len = strlen(dir);
  if (len >= sizeof guard_dir) len = sizeof guard_dir - 1;
  memcpy(guard_dir, dir, len);
  guard_dir[len] = '\0';
  struct sigaction sa = {.sa_handler = on_guarded_signal};
  sigfillset(&sa.sa_mask); /* one at a time: the first ends cflame */
  /* A signal ignored when cflame started (nohup's SIGHUP) stays ignored:
   * it would not have ended cflame, nor does it end the program. */
  for (size_t i = 0; i < N_FORWARDED; i++) {
    sigaction(forwarded[i], NULL, &guard_old[i]);
    if (guard_old[i].sa_handler != SIG_IGN) sigaction(forwarded[i], &sa, NULL);
  }
  guarded = true;
}

void rc_run_finish(const char *dir) {
  sigset_t set, old;
  sigemptyset(&set);
  for (size_t i = 0; i < N_FORWARDED; i++) sigaddset(&set, forwarded[i]);
  sigprocmask(SIG_BLOCK, &set, &old);
  if (dir && *dir) remove_recording(dir);
  if (guarded)
    for (size_t i = 0; i < N_FORWARDED; i++) sigaction(forwarded[i], &guard_old[i], NULL);
  guarded = false;
  sigprocmask(SIG_SETMASK, &old, NULL);
}

int rc_exit_status(int status) {
  if (WIFSIGNALED(status)) return 128 + WTERMSIG(status);
  return WIFEXITED(status) ? WEXITSTATUS(status) : 1;
}

void rc_run_free(rc_run_t *run) {
  free(run->tasks);
  run->tasks = NULL;
  run->n_tasks = 0;
}

/* ---- the program's descendants ---- */

/* Reads the start of a /proc file (read at once: /proc writes a file's
 * text as one read asks) into buf, NUL-terminated. Returns 0, or -1 when
 * it is gone or empty. */
static int read_proc(const char *path, char *buf, size_t size) {
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return -1;
  ssize_t n = read(fd, buf, size - 1);
  close(fd);
  if (n <= 0) return -1;
  buf[n] = '\0';
  return 0;
}

/* Notes pid's name and CPU time in run->tasks (found, or added). */
static void note_task(rc_run_t *run, pid_t pid, size_t *cap) {
  char path[64], stat[1024];
  snprintf(path, sizeof path, "/proc/%d/stat", (int)pid);
  if (read_proc(path, stat, sizeof stat) < 0) return;
  /* "pid (comm) state ppid ... utime stime": comm may hold spaces and
   * parentheses, so the fields are counted from its last ')'. */
  char *open_paren = strchr(stat, '('), *close_paren = strrchr(stat, ')');
  unsigned long long utime, stime;
  if (!open_paren || !close_paren || close_paren < open_paren ||
      sscanf(close_paren + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %llu %llu", &utime,
             &stime) != 2)
    return;
  size_t i = 0;
  while (i < run->n_tasks && run->tasks[i].pid != pid) i++;
  if (i == run->n_tasks) {
    run->tasks = fl__grow(run->tasks, cap, i + 1, sizeof *run->tasks);
    memset(&run->tasks[i], 0, sizeof run->tasks[i]);
    run->tasks[i].pid = pid;
    run->n_tasks++;
  }
  rc_task_t *t = &run->tasks[i];
  size_t len = (size_t)(close_paren - open_paren - 1);
  if (len >= sizeof t->comm) len = sizeof t->comm - 1;
  memcpy(t->comm, open_paren + 1, len);
  t->comm[len] = '\0';
  t->cpu_seconds = (double)(utime + stime) / (double)sysconf(_SC_CLK_TCK);
}

/* Notes the descendants of pid, every thread's children, depth first. */
static void note_descendants(rc_run_t *run, pid_t pid, size_t *cap, int depth) {
  char path[64];
  snprintf(path, sizeof path, "/proc/%d/task", (int)pid);
  DIR *d = opendir(path);
  if (!d || depth > 64) {
    if (d) closedir(d);
    return;
  }
  for (struct dirent *e; (e = readdir(d));) {
    if (e->d_name[0] == '.') continue;
    char children_path[64 + sizeof e->d_name], text[4096];
    snprintf(children_path, sizeof children_path, "/proc/%d/task/%s/children", (int)pid, e->d_name);
    if (read_proc(children_path, text, sizeof text) < 0) continue;
    for (char *p = text, *end; *p; p = end) {
      long child = strtol(p, &end, 10);
      if (end == p) break;
      note_task(run, (pid_t)child, cap);
      note_descendants(run, (pid_t)child, cap, depth + 1);
    }
  }
  closedir(d);
}

int rc_run(const char *path, char *const argv[], void (*tick)(void *ctx), void *ctx, rc_run_t *run,
           char *err, size_t err_size) {
  int rc = RC_CANNOT_RUN, pidfd = -1, sig_fds[2] = {-1, -1};
  struct sigaction old[N_FORWARDED], old_chld, sa;
  bool handlers = false;
  memset(run, 0, sizeof *run);
  if (pipe2(sig_fds, O_CLOEXEC | O_NONBLOCK) < 0) {
    snprintf(err, err_size, "cannot run %s: %s", argv[0], strerror(errno));
    goto done;
  }
  signal_pipe = sig_fds[1];
  memset(&sa, 0, sizeof sa);
  sa.sa_sigaction = on_signal;
  sa.sa_flags = SA_SIGINFO | SA_RESTART;
  sigemptyset(&sa.sa_mask);
  /* The program starts with the dispositions it would have had without
   * cflame: a signal caught here is at its default there (an exec resets
   * it), and a signal ignored when cflame started is left ignored, by
   * both (an exec keeps it so), with nothing to forward. */
  for (size_t i = 0; i < N_FORWARDED; i++) {
    sigaction(forwarded[i], NULL, &old[i]);
    if (old[i].sa_handler != SIG_IGN) sigaction(forwarded[i], &sa, NULL);
  }
  /* The program is waited for here, whatever cflame's parent made of
   * SIGCHLD (ignored: children would vanish unwaited); so the program
   * starts with SIGCHLD at its default even where cflame's parent had it
   * ignored. */
  struct sigaction dfl = {.sa_handler = SIG_DFL};
  sigaction(SIGCHLD, &dfl, &old_chld);
  handlers = true;

  int64_t start_ns = fl__clock_ns(CLOCK_MONOTONIC);
  pid_t pid;
  int spawn_errno = fl__spawn(&(fl__spawn_t){.path = path, .argv = argv}, &pid);
  if (spawn_errno != 0) {
    snprintf(err, err_size, "cannot run %s: %s", argv[0], strerror(spawn_errno));
    rc = spawn_errno == ENOENT ? RC_NOT_FOUND : RC_CANNOT_RUN;
    goto done;
  }
  run->pid = pid;
  pidfd = pidfd_open(pid, 0);
  size_t cap_tasks = 0;
  for (;;) {
    struct pollfd fds[2] = {{.fd = pidfd, .events = POLLIN}, {.fd = sig_fds[0], .events = POLLIN}};
    /* Without a pidfd (a kernel before 5.3), the signals' pipe alone;
     * either way a look at the child's descendants every RC_RUN_WATCH_MS. */
    int n = pidfd >= 0 ? poll(fds, 2, RC_RUN_WATCH_MS) : poll(fds + 1, 1, RC_RUN_WATCH_MS);
    note_descendants(run, pid, &cap_tasks, 0);
    if (tick) tick(ctx);
    if (n < 0 && errno != EINTR) {
      waitpid(pid, &run->status, 0);
      break; /* no CPU time to tell */
    }
    unsigned char bytes[64];
    ssize_t k;
    while ((k = read(sig_fds[0], bytes, sizeof bytes)) > 0)
      for (ssize_t i = 0; i < k; i++)
        if (bytes[i] & FORWARD) kill(pid, bytes[i] & ~FORWARD);
    struct rusage ru;
    if (wait4(pid, &run->status, WNOHANG, &ru) == pid) {
      run->cpu_seconds = (double)(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) +
                         (double)(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e6;
      break;
    }
  }
  run->wall_seconds = (double)(fl__clock_ns(CLOCK_MONOTONIC) - start_ns) / 1e9;
  rc = 0;
done:
  if (handlers) {
    for (size_t i = 0; i < N_FORWARDED; i++) sigaction(forwarded[i], &old[i], NULL);
    sigaction(SIGCHLD, &old_chld, NULL);
    /* A signal sent to cflame since the pipe was last read came as the
     * program ended, and was forwarded to nothing: it is cflame's own now,
     * raised again under the dispositions just restored (rc_run_guard's,
     * while the recording is converted). A terminal's (SI_KERNEL) reached
     * the program too, and is not. */
    unsigned char bytes[64];
    ssize_t k;
    while ((k = read(sig_fds[0], bytes, sizeof bytes)) > 0)
      for (ssize_t i = 0; i < k; i++)
        if (bytes[i] & FORWARD) raise(bytes[i] & ~FORWARD);
  }
  signal_pipe = -1;
  for (int i = 0; i < 2; i++)
    if (sig_fds[i] >= 0) close(sig_fds[i]);
  if (pidfd >= 0) close(pidfd);
  return rc;
}
