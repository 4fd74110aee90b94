/* SPDX-License-Identifier: BSD-3-Clause */
/* kn_spawn: a program with its output on a pipe (see kn_spawn.h). */
#define _GNU_SOURCE
#include "kn_spawn.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

extern char **environ;

int kn_spawn_piped(char *const argv[], const kn_spawn_t *how, pid_t *pid, int *out_fd) {
  int p[2];
  if (pipe2(p, O_CLOEXEC) < 0) return -1;
  posix_spawn_file_actions_t fa;
  posix_spawnattr_t attr;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_adddup2(&fa, p[1], 1);
  if (how->with_stderr)
    posix_spawn_file_actions_adddup2(&fa, p[1], 2);
  else
    posix_spawn_file_actions_addopen(&fa, 2, "/dev/null", O_WRONLY, 0);
  posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
  if (how->dir) posix_spawn_file_actions_addchdir_np(&fa, how->dir);
  posix_spawnattr_init(&attr);
  posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETPGROUP);
  posix_spawnattr_setpgroup(&attr, 0);
  char *const *env = how->env ? how->env : environ;
  int rc = how->search_path ? posix_spawnp(pid, argv[0], &fa, &attr, argv, env)
                            : posix_spawn(pid, argv[0], &fa, &attr, argv, env);
  posix_spawn_file_actions_destroy(&fa);
  posix_spawnattr_destroy(&attr);
  close(p[1]);
  if (rc != 0) {
    close(p[0]);
    return rc;
  }
  *out_fd = p[0];
  return 0;
}

int kn_spawn_run(char *const argv[], const char *dir, char **output) {
  *output = NULL;
  pid_t pid;
  int fd, rc = kn_spawn_piped(
              argv, &(kn_spawn_t){.dir = dir, .search_path = true, .with_stderr = true}, &pid, &fd);
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

bool kn_spawn_drain(int *fd, fl__buf_t *out) {
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

void kn_spawn_kill(pid_t pid) {
  kill(-pid, SIGKILL);
  while (waitpid(pid, NULL, 0) < 0 && errno == EINTR) {
  }
}
