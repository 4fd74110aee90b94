/* SPDX-License-Identifier: BSD-3-Clause */
/* rc_run: running the program `cflame record` records, as a shell would:
 * its standard input, output and error are cflame's own, it stays in
 * cflame's process group (a terminal's Ctrl-C reaches it directly, and
 * job control treats both as one job), and what ends it gives cflame's
 * exit status.
 *
 * Signals sent to cflame itself are forwarded to it: SIGINT, SIGQUIT,
 * SIGTERM, SIGHUP, SIGUSR1 and SIGUSR2, when kill() or the like sent them
 * to cflame's pid (mpirun stopping its ranks, `kill -INT`). The ones a
 * terminal sends to the whole foreground group (si_code SI_KERNEL) have
 * reached the program already and are not sent again. Either way cflame
 * itself goes on, so that it writes the profile of what ran. The handler
 * only writes the signal to a pipe, which the waiting loop reads. */
#ifndef RC_RUN_H
#define RC_RUN_H

#include <stddef.h>
#include <sys/types.h>

/* A process below the program, as last seen while it ran. */
typedef struct rc_task {
  pid_t pid;
  char comm[16];      /* its name as /proc has it */
  double cpu_seconds; /* its CPU time then (user and system) */
} rc_task_t;

typedef struct rc_run {
  pid_t pid;           /* the program's */
  int status;          /* its wait status */
  double wall_seconds; /* from start to end */
  double cpu_seconds;  /* its CPU time and that of the children it waited for */
  /* The program's descendants, looked for every RC_RUN_WATCH_MS while it
   * ran (in /proc/PID/task/TID/children): the recording can say which of
   * them it did not follow (a raw clone, a static program), with the CPU
   * they had used by then. Ones that lived less than a look are not
   * seen. */
  rc_task_t *tasks;
  size_t n_tasks;
} rc_run_t;

#define RC_RUN_WATCH_MS 50

/* Starts path with argv (argv[0] as it is given), in cflame's
 * environment, and waits for it to end, calling tick(ctx) (when not NULL)
 * every RC_RUN_WATCH_MS meanwhile. The forwarded signals sent to cflame
 * meanwhile go to the program; one that comes as the program ends is
 * raised again in cflame, under the dispositions it had before (the
 * guard's, when rc_run_guard came first). Returns 0 with *run, or
 * RC_NOT_FOUND or RC_CANNOT_RUN (rc_program.h) with err naming the
 * program when it could not be started (exec failed). */
int rc_run(const char *path, char *const argv[], void (*tick)(void *ctx), void *ctx, rc_run_t *run,
           char *err, size_t err_size);

/* While cflame turns the recording in dir into a profile: a signal
 * among the forwarded ones (each of which ends a process by default, and
 * was not ignored when cflame started) removes dir, says on standard
 * error that it did and that no profile was written, and ends cflame by
 * that signal, as it would have (128 + N). Until rc_run_finish. Set
 * before rc_run, so that no signal falls between the program's end and
 * the guard (rc_run forwards them meanwhile); dir is copied. */
void rc_run_guard(const char *dir);
/* Removes the recording dir (if not NULL or "") and ends the guard, the
 * signals held meanwhile: one that comes now ends cflame afterwards by
 * its old disposition, the profile written and nothing left behind (the
 * guard's word "no profile written" would be wrong by then). */
void rc_run_finish(const char *dir);

void rc_run_free(rc_run_t *run);

/* The exit status a shell gives for wait status: the program's own, or
 * 128 plus the signal that ended it. */
int rc_exit_status(int status);

#endif
