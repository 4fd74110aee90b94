/* SPDX-License-Identifier: BSD-3-Clause */
/* kn_spawn: a program the kernel runs with its output on a pipe, in a
 * process group of its own: the compiler (kn_compile.c, and `CC --version`
 * for %cc) and man (kn_manpage.c). The one way the kernel starts such a
 * program, reads what it writes and ends it. */
#ifndef KN_SPAWN_H
#define KN_SPAWN_H

#include <stdbool.h>
#include <sys/types.h>

#include "kn_text.h"

/* How to start the program. A zeroed kn_spawn_t: in the kernel's working
 * directory and environment, argv[0] a path, stderr to /dev/null. */
typedef struct kn_spawn {
  const char *dir;  /* working directory, or NULL */
  char *const *env; /* environment, or NULL: the kernel's */
  bool search_path; /* argv[0] is looked up in PATH, as execvp does */
  bool with_stderr; /* stderr goes to the pipe too */
} kn_spawn_t;

/* Starts argv as how says, with stdin from /dev/null and stdout (and
 * stderr) on a pipe, leading a process group of its own: *pid, and the
 * pipe's reading end *out_fd (close-on-exec, blocking). Returns 0, or the
 * posix_spawn error (ENOENT: no such program), or -1 with errno when no
 * pipe could be made. */
int kn_spawn_piped(char *const argv[], const kn_spawn_t *how, pid_t *pid, int *out_fd);

/* Runs argv to its end, its output (stdout and stderr) into *output (new).
 * Returns the exit status (0..255, 128 + a signal), 127 when it could not
 * start (*output: why), or -1. */
int kn_spawn_run(char *const argv[], const char *dir, char **output);

/* Appends what *fd (non-blocking) has to out. At end of file (or an
 * error) closes *fd and sets it to -1, and returns true; returns false
 * when the pipe is empty for now. */
bool kn_spawn_drain(int *fd, fl__buf_t *out);

/* Kills pid's process group (the program and what it started) and reaps
 * pid. */
void kn_spawn_kill(pid_t pid);

#endif
