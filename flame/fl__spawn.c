/* SPDX-License-Identifier: BSD-3-Clause */
/* fl__spawn: starting programs (see fl__spawn.h). */
#define _GNU_SOURCE
#include "fl__spawn.h"

#include <errno.h>
#include <fcntl.h>
#include <spawn.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

extern char **environ;

static bool places(const fl__spawn_t *how, int child) {
  for (size_t i = 0; i < how->n_fds; i++)
    if (how->fds[i].child == child) return true;
  return false;
}

int fl__spawn(const fl__spawn_t *how, pid_t *pid) {
  if (how->n_fds > FL__SPAWN_MAX_FDS) return EINVAL;
  int top = 2;
  for (size_t i = 0; i < how->n_fds; i++)
    if (how->fds[i].child > top) top = how->fds[i].child;
  /* A descriptor to place that is itself a target number (at most top) is
   * first copied above top: the file actions run in order, and one dup2
   * must not overwrite a descriptor still to be placed. */
  int moved[FL__SPAWN_MAX_FDS];
  int rc = 0;
  size_t n_moved = 0;
  posix_spawn_file_actions_t fa;
  posix_spawnattr_t attr;
  posix_spawn_file_actions_init(&fa);
  posix_spawnattr_init(&attr);
  for (size_t i = 0; i < how->n_fds; i++) {
    int child = how->fds[i].child, src = how->fds[i].parent;
    if (src < 0) {
      posix_spawn_file_actions_addopen(&fa, child, "/dev/null", child == 0 ? O_RDONLY : O_WRONLY, 0);
      continue;
    }
    if (src <= top) {
      if ((src = fcntl(src, F_DUPFD_CLOEXEC, top + 1)) < 0) {
        rc = errno;
        goto done;
      }
      moved[n_moved++] = src;
    }
    posix_spawn_file_actions_adddup2(&fa, src, child);
  }
  if (how->close_others) {
    /* The numbers between 3 and top that nothing is placed at are closed
     * too (a descriptor that is not open there is no error). */
    for (int fd = 3; fd <= top; fd++)
      if (!places(how, fd)) posix_spawn_file_actions_addclose(&fa, fd);
    posix_spawn_file_actions_addclosefrom_np(&fa, top + 1);
  }
  if (how->dir) posix_spawn_file_actions_addchdir_np(&fa, how->dir);
  short flags = 0;
  if (how->own_group) {
    flags |= POSIX_SPAWN_SETPGROUP;
    posix_spawnattr_setpgroup(&attr, 0);
  }
  if (how->empty_sigmask) {
    sigset_t none;
    sigemptyset(&none);
    flags |= POSIX_SPAWN_SETSIGMASK;
    posix_spawnattr_setsigmask(&attr, &none);
  }
  if (how->sigdefault) {
    flags |= POSIX_SPAWN_SETSIGDEF;
    posix_spawnattr_setsigdefault(&attr, how->sigdefault);
  }
  posix_spawnattr_setflags(&attr, flags);
  const char *path = how->path ? how->path : how->argv[0];
  char *const *env = how->env ? how->env : environ;
  rc = how->search_path ? posix_spawnp(pid, path, &fa, &attr, how->argv, env)
                        : posix_spawn(pid, path, &fa, &attr, how->argv, env);
done:
  posix_spawn_file_actions_destroy(&fa);
  posix_spawnattr_destroy(&attr);
  for (size_t i = 0; i < n_moved; i++) close(moved[i]);
  return rc;
}

int fl__spawn_piped(const fl__spawn_t *how, bool with_stderr, pid_t *pid, int *out_fd) {
  fl__spawn_t piped = *how;
  if (piped.n_fds + 3 > FL__SPAWN_MAX_FDS) return EINVAL;
  int p[2];
  if (pipe2(p, O_CLOEXEC) < 0) return -1;
  if (!places(how, 0)) piped.fds[piped.n_fds++] = (fl__spawn_fd_t){0, -1};
  piped.fds[piped.n_fds++] = (fl__spawn_fd_t){1, p[1]};
  if (with_stderr)
    piped.fds[piped.n_fds++] = (fl__spawn_fd_t){2, p[1]};
  else if (!places(how, 2))
    piped.fds[piped.n_fds++] = (fl__spawn_fd_t){2, -1};
  int rc = fl__spawn(&piped, pid);
  close(p[1]);
  if (rc != 0) {
    close(p[0]);
    return rc;
  }
  *out_fd = p[0];
  return 0;
}

int fl__spawn_run(char *const argv[], const char *dir, char **output) {
  *output = NULL;
  pid_t pid;
  int fd;
  fl__spawn_t how = {.argv = argv, .dir = dir, .search_path = true, .own_group = true};
  int rc = fl__spawn_piped(&how, true, &pid, &fd);
  if (rc == -1) return -1;
  if (rc != 0) {
    *output = fl__xstrdup(strerror(rc));
    return 127;
  }
  fl__buf_t out = FL__BUF_INIT;
  char buf[8192];
  ssize_t n;
  while ((n = read(fd, buf, sizeof buf)) != 0) {
    if (n < 0) {
      if (errno == EINTR) continue;
      break;
    }
    fl__buf_add(&out, buf, (size_t)n);
  }
  close(fd);
  int status;
  while (waitpid(pid, &status, 0) < 0)
    if (errno != EINTR) {
      status = -1;
      break;
    }
  *output = fl__buf_take(&out);
  if (status == -1) return -1;
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

bool fl__spawn_drain(int *fd, fl__buf_t *out) {
  char buf[16384];
  while (*fd >= 0) {
    ssize_t n = read(*fd, buf, sizeof buf);
    if (n > 0) {
      fl__buf_add(out, buf, (size_t)n);
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && errno == EAGAIN) return false;
    close(*fd);
    *fd = -1;
  }
  return true;
}

void fl__spawn_kill(pid_t pid) {
  kill(-pid, SIGKILL);
  while (waitpid(pid, NULL, 0) < 0 && errno == EINTR) {
  }
}
