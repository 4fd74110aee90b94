/* SPDX-License-Identifier: BSD-3-Clause */
/* kn_worker: the kernel's handle on its worker process (kernel/worker/).
 *
 * Starts cflame-worker (found next to the kernel's own executable) with the
 * pipes of kn_chan.h, loads the session's code into it, sends it commands,
 * and turns what it writes into events. Nothing here waits for the worker to
 * answer (only for a killed one to be reaped, and kn_worker_stop's grace):
 * the kernel's poll loop watches kn_worker_fds(), calls kn_worker_read()
 * when one is readable and kn_worker_tick() on every pass, and a start goes
 * on from there. */
#ifndef KN_WORKER_H
#define KN_WORKER_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

typedef struct kn_worker kn_worker_t;

typedef enum kn_wev_type {
  KN_WEV_STDOUT,  /* data/len: bytes for the stdout stream */
  KN_WEV_STDERR,  /* data/len: bytes for the stderr stream */
  KN_WEV_JSON,    /* json: an event object ("done", "input_request", ...) */
  KN_WEV_CRASH,   /* data/len: the crash report text of kw_fault.c */
  KN_WEV_EXITED,  /* the worker is gone; status is its waitpid status, and
                     data, when not NULL, why the kernel ended it (a cell
                     closed or corrupted the kernel's channel) */
  KN_WEV_DROPPED, /* during a start: object is not loaded, data says why
                     ("its constructor did not return within 10 s") */
  KN_WEV_STARTED, /* a start has ended: the worker is ready (data NULL) or
                     there is none (data says why) */
} kn_wev_type_t;

typedef struct kn_wev {
  kn_wev_type_t type;
  const char *data; /* borrowed, valid during the callback */
  size_t len;
  json_t *json; /* borrowed */
  int status;
  const char *object; /* KN_WEV_DROPPED: the object's path */
} kn_wev_t;

typedef void (*kn_wev_fn)(void *ctx, const kn_wev_t *ev);

/* Creates a handle; worker_path is the cflame-worker executable. New. */
kn_worker_t *kn_worker_new(const char *worker_path);

/* What a new worker loads before it is ready: a committed cell's object. */
typedef struct kn_worker_object {
  const char *path;
  bool frame_pointers; /* compiled with frame pointers (see kw_main.c's "load") */
} kn_worker_object_t;

/* How long a new process may take to say it is ready, and one object to
 * load (its constructors run as it loads). */
#define KN_WORKER_READY_MS 10000
#define KN_WORKER_LOAD_MS 10000

/* Starts the process (with cwd as its working directory, NULL: the
 * kernel's) and has it load the n objects (copied) in order, without
 * waiting for any of it: kn_worker_read and kn_worker_tick carry the start
 * on, and its end is reported as KN_WEV_STARTED. Until then
 * kn_worker_starting is true, and a process that ends is part of the start,
 * never reported as KN_WEV_EXITED.
 * An object is dropped (KN_WEV_DROPPED) when the loader refuses it, when its
 * load does not end within KN_WORKER_LOAD_MS, when the process dies while
 * it loads, or when kn_worker_skip_load ends its load; a process that hung
 * or died is killed with its group, and a new one loads the objects after
 * it. A process that is not ready within KN_WORKER_READY_MS ends the start
 * with no worker. The worker dies with the kernel, whatever ends it.
 * Returns 0, or -1 with err when no process could be started. */
int kn_worker_start(kn_worker_t *w, const char *cwd, const kn_worker_object_t *objects, size_t n,
                    char *err, size_t err_size);

/* Whether a start is under way (its KN_WEV_STARTED not yet reported). */
bool kn_worker_starting(const kn_worker_t *w);

/* Ends the load under way of a start (an interrupt): the object is dropped
 * as one that hung. Returns false when no object is loading. */
bool kn_worker_skip_load(kn_worker_t *w);

bool kn_worker_alive(const kn_worker_t *w);
pid_t kn_worker_pid(const kn_worker_t *w);

/* Sends a command object (not stolen). Returns 0 or -1 with err. */
int kn_worker_send(kn_worker_t *w, const json_t *cmd, char *err, size_t err_size);

/* Descriptors to poll for reading: events, raw stdout, raw stderr, and the
 * process's pidfd (readable once it has ended). Entries of a dead worker
 * are -1. */
#define KN_WORKER_FDS 4
void kn_worker_fds(const kn_worker_t *w, int fds[KN_WORKER_FDS]);

/* Reads what is available on the worker's descriptors and calls fn for each
 * event, in order. Once the process has ended, reads what is left in its
 * pipes, reaps it and reports KN_WEV_EXITED (its process group is killed:
 * what its cells started in the background goes with it). Never blocks. */
void kn_worker_read(kn_worker_t *w, kn_wev_fn fn, void *ctx);

/* Between polls: reports an ended worker as kn_worker_read does, ends
 * one whose event pipe has been at end of file for a while although it
 * lives (a cell closed or replaced descriptor 4), and carries a start on
 * past its deadlines. Returns the milliseconds the poll may wait for the
 * next check, or -1 for no limit. */
int kn_worker_tick(kn_worker_t *w, kn_wev_fn fn, void *ctx);

/* Sends sig to the worker. */
void kn_worker_signal(kn_worker_t *w, int sig);
/* Sends sig to the worker's process group: the worker and the processes
 * its cells started (system("sleep 9")), as Ctrl-C in a terminal reaches
 * its foreground job. */
void kn_worker_signal_group(kn_worker_t *w, int sig);

/* Stops the process (and a start under way): asks it to exit, then
 * SIGKILL after grace_ms; reaps it. */
void kn_worker_stop(kn_worker_t *w, int grace_ms);

void kn_worker_destroy(kn_worker_t **w);

/* Path of the directory holding the running executable (for finding
 * cflame-worker). Returns a new string. */
char *kn_self_dir(void);

#endif
