/* SPDX-License-Identifier: BSD-3-Clause */
/* fl__spawn: the one way cflame starts another program: the kernel's
 * compiler, man, worker and libclang process, and the program `cflame
 * record` runs. An internal header that kernel/ and record/ may use
 * (docs/ARCHITECTURE.md, "Internal headers").
 *
 * Programs start with posix_spawn, never fork: the kernel holds threads
 * and may hold gigabytes of profile, and posix_spawn neither copies its
 * page tables nor runs anything in the child but what the file actions
 * say. A program that could not be started is an error number from
 * fl__spawn (ENOENT: no such program; a directory that could not be
 * entered: its chdir error), never a child that exits 127.
 *
 * Descriptors: the child gets stdin, stdout and stderr and the
 * descriptors the caller places (fl__spawn_fd_t); with close_others,
 * nothing else, however high (close_range in the child); without it,
 * every descriptor the caller has without close-on-exec, as a shell's
 * child does. */
#ifndef FL__SPAWN_H
#define FL__SPAWN_H

#include <signal.h>
#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#include "fl__common.h"

/* Descriptor `child` of the child is the caller's `parent`, or /dev/null
 * when parent is -1 (read-only for 0, write-only otherwise). */
typedef struct fl__spawn_fd {
  int child;
  int parent;
} fl__spawn_fd_t;

enum { FL__SPAWN_MAX_FDS = 8 };

/* How to start the program. A zeroed fl__spawn_t, with argv and path (or
 * search_path): in the caller's directory, environment, process group and
 * signal mask, with its descriptors. */
typedef struct fl__spawn {
  const char *path;         /* the program; NULL: argv[0] */
  char *const *argv;        /* NULL-terminated */
  char *const *env;         /* NULL: the caller's environ */
  const char *dir;          /* working directory, or NULL: the caller's */
  bool search_path;         /* path is looked up in PATH, as execvp does */
  bool own_group;           /* leads a process group of its own */
  bool empty_sigmask;       /* starts with no signal blocked */
  bool close_others;        /* no descriptor but 0..2 and fds */
  const sigset_t *sigdefault; /* these signals start at their default action */
  fl__spawn_fd_t fds[FL__SPAWN_MAX_FDS];
  size_t n_fds;
} fl__spawn_t;

/* Starts the program as how says: *pid. Returns 0, or an error number
 * (from posix_spawn, or from moving the descriptors). The caller's
 * descriptors are left as they were. */
int fl__spawn(const fl__spawn_t *how, pid_t *pid);

/* fl__spawn with stdin from /dev/null (unless how places 0), stdout on a
 * new pipe, and stderr on it too (with_stderr) or to /dev/null (unless how
 * places 2): the pipe's reading end *out_fd (close-on-exec, blocking).
 * Returns as fl__spawn does, or -1 (errno) when no pipe could be made. */
int fl__spawn_piped(const fl__spawn_t *how, bool with_stderr, pid_t *pid, int *out_fd);

/* Runs argv (looked up in PATH) in dir (NULL: here) to its end in a
 * process group of its own, its output (stdout and stderr) into *output
 * (new). Returns the exit status (0..255, 128 + a signal), 127 when it
 * could not start (*output: why), or -1. */
int fl__spawn_run(char *const argv[], const char *dir, char **output);

/* Appends what *fd (non-blocking) has to out. At end of file (or an
 * error) closes *fd and sets it to -1, and returns true; returns false
 * when the pipe is empty for now. */
bool fl__spawn_drain(int *fd, fl__buf_t *out);

/* Kills pid's process group (a program started with own_group, and what
 * it started) and reaps pid. */
void fl__spawn_kill(pid_t pid);

#endif
