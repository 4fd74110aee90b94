/* SPDX-License-Identifier: BSD-3-Clause */
/* fl_attach: samples a process that is already running, from outside it:
 * no restart, nothing preloaded (`cflame record --pid`).
 *
 * Every thread of the process is seized with ptrace (PTRACE_SEIZE, which
 * stops nothing), and threads it starts afterwards are followed
 * (PTRACE_O_TRACECLONE). Each tick (an interval of wall time), a thread
 * that is running and has used half an interval of CPU since its last
 * sample (its schedstat) is stopped (PTRACE_INTERRUPT), its
 * stack unwound by elfutils libdwfl (dwfl_getthread_frames over its
 * call-frame information, reading its memory), its exact CPU time read,
 * and it is resumed: the sample weighs that CPU time in intervals,
 * rounded, the remainder carried to its next sample, as the in-process
 * sampler's records do (fl_sampler.h). So totals follow each thread's CPU
 * time, and a thread that sleeps is never stopped.
 *
 * What the target sees: nothing but time. A thread is only stopped while
 * it is running (never in a blocking call, which an interrupt would cut
 * short on some calls, epoll_wait among them, with EINTR); a signal it
 * receives meanwhile is passed on to it (a signal-delivery stop is
 * resumed with the signal), a stop signal stops it as before (group stops
 * are kept with PTRACE_LISTEN), and it is detached on every way the
 * attach ends. Should the attaching process die (SIGKILL), the kernel
 * detaches it and resumes its threads.
 *
 * Children. A child the target forks after the attach is not followed
 * unless follow_forks asks for it: its pid and name are reported (looked
 * for every 100 ms in /proc/PID/task/TID/children; one that lives less is
 * not seen). With follow_forks, every fork, vfork and exec is traced
 * (PTRACE_O_TRACEFORK, TRACEVFORK, TRACEEXEC): the kernel attaches a child
 * at its birth, before it runs, and the children it forks in turn, and
 * each is sampled as the target's threads are, but as a process of its
 * own: its own unwinder (a Dwfl of its pid), maps snapshots, program name,
 * ppid and sample buffer (fl_attach_process_t). A child's exec ends that
 * image and starts the next (image 1, 2, ...: the new program's name,
 * maps and symbols); the target's own exec only reads its maps again, as
 * without follow_forks. A child that exits ends its part; the attach ends
 * as without follow_forks (stop_fd, duration_s, the target's exit), and
 * followed processes still running then are detached as the target's
 * threads are. A vfork child shares its parent's memory until it execs or
 * exits, and is sampled with its parent's maps meanwhile; its parent,
 * waiting for it then in a wait no stop ends, is not sampled until that
 * wait's end (PTRACE_O_TRACEVFORKDONE). A process that lives less than an
 * interval of CPU leaves no sample.
 *
 * The records are those of fl_sampler.h's buffer (source
 * FL_SAMPLER_SOURCE_PTRACE, each thread's name record at the end), with
 * the snapshots of /proc/PID/maps that symbolize them: one at the attach,
 * one at each change (looked for every 100 ms, and when a sample's leaf is
 * in no module known); a buffer and snapshots for each process image. */
#ifndef FL_ATTACH_H
#define FL_ATTACH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "cflame/fl_api.h"

CFLAME_BEGIN_DECLS

typedef struct fl_attach_result fl_attach_result_t;

/* The interval an attach samples at unless asked otherwise, 10 ms (100 Hz,
 * as perf's and py-spy's attaches), and the shortest it takes, 1 ms: each
 * sample stops the thread, which costs the target more than a sample in
 * its own process does. */
#define FL_ATTACH_INTERVAL_NS 10000000ull
#define FL_ATTACH_INTERVAL_MIN_NS 1000000ull

typedef struct fl_attach_opts {
  uint64_t interval_ns;  /* of each thread's CPU time, at least FL_ATTACH_INTERVAL_MIN_NS */
  uint64_t buffer_words; /* the most record words kept (then samples are dropped) */
  double duration_s;     /* the attach ends after this long; <= 0: no limit */
  int stop_fd;           /* -1, or a descriptor whose being readable ends the attach
                            (a signalfd of SIGINT and SIGTERM, an eventfd) */
  bool follow_forks;     /* follow the processes the target forks after the attach,
                            and theirs (fl_attach_result_t.followed) */
  /* Called once every thread is seized (the host says it is attached), or
   * NULL. */
  void (*attached)(void *ctx, int pid, size_t threads);
  /* Called between ticks (every 2 ms at most) with what is recorded so
   * far, or NULL: buf, bytes long, the sample buffer r->buf will be (the
   * threads' names not yet in it), and sofar's name, maps and followed
   * images (each buffer so far) as known by then; all borrowed for the
   * call. The attach waits for it: it must be
   * quick, or do its work seldom (`cflame record --top` redraws once a
   * second). */
  void (*progress)(void *ctx, const void *buf, size_t bytes, const fl_attach_result_t *sofar);
  void *ctx;
} fl_attach_opts_t;

typedef enum fl_attach_end {
  FL_ATTACH_STOPPED,  /* stop_fd became readable */
  FL_ATTACH_DURATION, /* duration_s passed */
  FL_ATTACH_EXITED,   /* the target ended (its wait status in status) */
} fl_attach_end_t;

typedef struct fl_attach_child {
  int pid;
  char comm[17];
} fl_attach_child_t;

/* One image of a process followed with follow_forks: a child as it was
 * forked (image 0), or the program it exec'd (image 1, 2, ...). */
typedef struct fl_attach_process {
  int pid, ppid;
  int image;      /* 0 as forked, then one more at each exec followed */
  char name[256]; /* its program's file name (of /proc/PID/exe) */
  void *buf;      /* its sample buffer (fl_sampler.h), bytes long; owned */
  size_t bytes;
  char **maps; /* its /proc/PID/maps texts, oldest first; owned */
  size_t n_maps;
  double cpu_seconds; /* its CPU time while followed */
  bool exited;        /* it ended while attached (an exec ends an image, not this) */
  int status;         /* ... its wait status */
} fl_attach_process_t;

/* What the attach took. buf, maps, name, ppid and cpu_seconds are the
 * target's own; followed, the other processes' (with follow_forks). */
struct fl_attach_result {
  void *buf; /* the sample buffer (fl_sampler.h), bytes long; owned */
  size_t bytes;
  char **maps; /* the /proc/PID/maps texts, oldest first; owned */
  size_t n_maps;
  char name[256]; /* the program's file name (of /proc/PID/exe), as the system names it */
  int ppid;
  fl_attach_end_t end;
  int status;                  /* with FL_ATTACH_EXITED: the target's wait status */
  double wall_seconds;         /* from the attach to its end */
  double cpu_seconds;          /* the target's CPU time meanwhile (its threads' schedstat) */
  size_t threads;              /* threads seen, those started after the attach and the followed
                                  processes' included */
  fl_attach_child_t *children; /* processes it forked meanwhile, not followed; owned */
  size_t n_children;
  /* With follow_forks: each image of each process followed, in the order
   * they started; owned. Without, none. */
  fl_attach_process_t *followed;
  size_t n_followed;
};

/* Attaches to process pid, samples it until the attach ends (opts), and
 * detaches from it. Returns 0 with *r, or -1 with err when it cannot
 * attach: no such process, this process itself, one traced already, or
 * attaching is not permitted, err then naming what forbids it (Yama's
 * kernel.yama.ptrace_scope, another user's process, no CAP_SYS_PTRACE, a
 * process that is not dumpable) and the command that allows it. The
 * calling thread waits for the target's threads (waitpid with __WALL, on
 * each of their ids; never on -1, so the caller's own children are not
 * reaped). */
int fl_attach_run(int pid, const fl_attach_opts_t *opts, fl_attach_result_t *r, char *err,
                  size_t err_size);

void fl_attach_result_free(fl_attach_result_t *r);

CFLAME_END_DECLS

#endif
