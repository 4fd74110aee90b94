/* kn_spawn: a child process whose output the kernel reads from a pipe.
 *
 * The compiler (kn_session.c, polled while it runs, or run to the end for
 * %cc's check) and man (kn_manpage.c) are started the one way: in a
 * process group of their own (so that the kernel can kill them with what
 * they started), standard input from /dev/null, standard output (and
 * standard error, or /dev/null) on a pipe whose reading end the kernel
 * keeps, close-on-exec. */
#ifndef KN_SPAWN_H
#define KN_SPAWN_H

#include <stdbool.h>
#include <sys/types.h>

typedef struct kn_spawn_opts {
  const char *dir;  /* working directory; NULL: the kernel's */
  char *const *env; /* NULL: the kernel's environment */
  bool search_path; /* argv[0] is looked up in PATH (posix_spawnp) */
  bool stderr_too;  /* standard error on the pipe too; else /dev/null */
} kn_spawn_opts_t;

/* Spawns argv as o says: *pid, and the pipe's reading end *out_fd.
 * Returns 0, or the posix_spawn error (ENOENT: no such program), or -1
 * with errno when no pipe could be made. */
int kn_spawn_piped(char *const argv[], const kn_spawn_opts_t *o, pid_t *pid, int *out_fd);

/* Runs argv as o says to its end, collecting what it writes into *output
 * (new). Returns the exit status (0..255; 128 + N for signal N), 127 when
 * it could not start (*output: why), or -1. */
int kn_spawn_run(char *const argv[], const kn_spawn_opts_t *o, char **output);

#endif
