/* SPDX-License-Identifier: BSD-3-Clause */
/* kn_exec: one execute_request, from the request to its reply.
 *
 * An execution is split over files that each own one step, and call only
 * the files listed after them:
 *   kn_run.c      starting it: the request's fields, the cell's magics (the
 *                 profiling line magics off the loop, kn_job.h), the
 *                 compiler (polled, never waited for), the run command to
 *                 the worker;
 *   kn_events.c   the worker's events while it runs: output, input
 *                 requests, "done"; interrupts and their escalation;
 *   kn_restart.c  a worker that died: the error, and a new worker; the end
 *                 of its start (cells whose code did not load again);
 *   kn_profrun.c  what a profiled run leaves: its profile, baseline, and
 *                 graph (drawn off the loop, kn_job.h, as a line magic);
 *   kn_exec.c     (this header's own) output to iopub, and the reply.
 * kn_execute.c, above them all, is the room the kernel's loop polls
 * (kn_execute.h).
 * At most one execution runs at a time (kn_kernel_exec); the shell socket
 * is not read while it does, nor while the worker starts. */
#ifndef KN_EXEC_H
#define KN_EXEC_H

#include <jansson.h>
#include <stdbool.h>

#include "kn_kernel.h"
#include "kn_live.h"
#include "kn_output.h"
#include "kn_profmagic.h"
#include "kn_session.h"

typedef void (*kn_exec_then_fn)(kn_exec_t *e);
typedef struct kn_profrun kn_profrun_t;

/* ---- what the kernel's main loop calls through the room (kn_execute.c) ---- */

/* Who answers a cell that is only `name?` (detail 0) or `name??` (detail
 * 1), as IPython answers them (kn_complete_open sets it in k's parts). */
struct kn_exec_inspector {
  /* The inspection an inspect_request would get for name is shown as e's
   * output, and e finishes (with NameError when nothing is known of name).
   * e waits meanwhile (its inspecting flag); the loop goes on serving. */
  void (*inspect)(kn_kernel_t *k, kn_exec_t *e, const char *name, int detail);
  /* e ends otherwise (an interrupt, the worker's end): its inspection is
   * answered to no one. */
  void (*forget)(kn_kernel_t *k, const kn_exec_t *e);
};

/* Starts executing msg (an execute_request from shell). Either finishes at
 * once (errors, magics that need no worker) or becomes the running
 * execution until the worker reports. Takes ownership of msg. */
void kn_execute_start(kn_kernel_t *k, kn_msg_t *msg);
/* Feeds the worker's output and events to the running execution. */
void kn_execute_on_worker(kn_kernel_t *k);
/* The running execution's own descriptors to poll (-1 where none): its
 * compiler's output and end (kn_compile.c), the end of its line magic
 * off the loop (kn_job.c), and of its live graph's drawing (kn_live.c);
 * and what to do when one is ready. */
#define KN_EXEC_FDS 4
void kn_execute_fds(kn_kernel_t *k, int fds[KN_EXEC_FDS]);
void kn_execute_on_fds(kn_kernel_t *k);
/* At shutdown: ends a compiler under way. */
void kn_execute_stop(kn_kernel_t *k);
/* Handles an input_reply from the stdin socket (msg borrowed). */
void kn_execute_on_input_reply(kn_kernel_t *k, kn_msg_t *msg);
/* Interrupt request: stop the running cell (or cancel its line magic off
 * the loop, whose end then answers it). */
void kn_execute_interrupt(kn_kernel_t *k);
/* Called by the poll loop on every pass: reads what the worker reported,
 * flushes batched output, escalates interrupts. Returns the poll timeout
 * it wants in ms (-1: none). */
int kn_execute_tick(kn_kernel_t *k);
/* Frees the running execution (at shutdown). */
void kn_exec_destroy(kn_exec_t **e);

/* ---- shared by the execution's files ---- */

struct kn_exec {
  kn_kernel_t *k;
  kn_msg_t *request;
  bool silent, allow_stdin, stop_on_error;
  int count; /* execution count for the reply */
  int cell;  /* number the cell is compiled under */
  kn_compiled_t *compiled;
  kn_compile_t *compiling; /* the compiler under way, or NULL */
  /* The cell's magic lines, run one at a time from next_line (kn_run.c):
   * the line magic that is a statement form (in magics, or NULL) and its
   * statement, and %%timeit's run options, kept until the code compiles. */
  kn_cell_magics_t magics;
  size_t next_line;
  const kn_magic_t *stmt_magic;
  char *statement;
  json_t *timeit_spec;
  /* Work running off the loop (kn_job.h): a profiling line magic (which of
   * magics it is in job_magic), or the profile of the cell's run
   * (job_magic NULL, kn_profrun.c); while there is one, the job owns the
   * profiling state. */
  kn_job_t *job;
  const kn_magic_t *job_magic;
  bool job_interrupted; /* an interrupt came once the job had claimed them */
  /* The profile of the cell's run, read, kept and drawn by job
   * (kn_profrun_done), and whether an interrupt stopped its drawing
   * (kn_profrun_not_drawn_note says so). */
  kn_profrun_t *profrun;
  void (*profrun_free)(kn_profrun_t **pr); /* kn_profrun.c's (above kn_exec.c), set with it */
  bool graph_interrupted;
  /* What the rest of the cell needs once its profile is shown: the
   * worker's "done" event and whether the cell defined main (whose return
   * is checked); after a crash, the worker's exit status and why the
   * kernel ended it ("" when it did not). */
  json_t *done_ev;
  bool has_main;
  int died_status;
  char *died_reason;
  kn_profreq_t profreq;    /* mode KN_PROF_NONE unless profiling */
  /* every=: the graph of the run so far, drawn off the loop (kn_live.h),
   * from the worker's "running" on; NULL without every=. The worker's
   * "done" that comes while a drawing is under way waits in live_done
   * until it ends, so that the final graph replaces the last live one. */
  kn_live_t *live;
  json_t *live_done;
  char *cell_key;          /* the cell's key in the runs kept (kn_profhist_key) */
  kn_output_t out;
  bool input_pending;
  bool inspecting; /* the cell is `name?`: kn_complete answers it */
  bool loaded;     /* the worker loaded the cell's object ("running"): a crash
                      after that keeps the cell, one before it does not */
  json_t *run_cmd; /* the run command, held while the worker starts */
  json_t *payload; /* execute_reply's payload when it ends well (an array), or NULL */
  char *crash_report;
  int interrupt_stage; /* 0; 1 SIGINT sent; 2 SIGUSR2 sent; 3 killed */
  long long interrupt_at_ms;
  /* The worker died under the cell: its error, finished by kn_restart.c
   * once a new worker has started (ename NULL: it did not). */
  char *died_ename, *died_value;
  json_t *died_traceback;
  char *died_profile_note; /* what became of its profile (" The flame graph ..."), or "" */
};

/* A new execution of request (owned from now on). */
kn_exec_t *kn_exec_new(kn_kernel_t *k, kn_msg_t *request);
/* Output of the cell (or of the kernel about it), on stream 'O' or 'E'. */
void kn_exec_output(kn_exec_t *e, char kind, const char *data, size_t len);
void kn_exec_print(kn_exec_t *e, char kind, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* Publishes display_data content (stolen), after the output before it. */
void kn_exec_display(kn_exec_t *e, json_t *content);
/* The same under display_id, NULL: none; as update_display_data when
 * update (it replaces what was shown under that id). */
void kn_exec_display_id(kn_exec_t *e, json_t *content, const char *display_id, bool update);
/* Publishes a live line's stream content (stolen, kn_live_take), after the
 * output before it. */
void kn_exec_live_line(kn_exec_t *e, json_t *content);
/* Publishes text as the execution's result (Out[n]), unless silent. */
void kn_exec_result(kn_exec_t *e, const char *text);
/* Ends e: publishes the error (if ename), replies, goes idle, frees e.
 * traceback (stolen) may be NULL: then it is [ename: evalue]. */
void kn_exec_finish(kn_exec_t *e, const char *ename, const char *evalue, json_t *traceback);
void kn_exec_finish_ok(kn_exec_t *e);
void kn_exec_fail(kn_exec_t *e, const char *ename, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* Publishes a stream message under parent, outside any execution. */
void kn_exec_publish_stream(kn_kernel_t *k, const kn_msg_t *parent, char kind, const char *text);
/* Sends e's run command (e->run_cmd) to the worker, or keeps it while the
 * worker starts; fails e when the worker cannot be reached. */
void kn_exec_send_run(kn_exec_t *e);
/* Replies "aborted" to execute requests queued behind a failed one
 * (stop_on_error), and serves the other requests waiting. */
void kn_exec_abort_queued(kn_kernel_t *k);

/* kn_events.c: e's live graph's drawing has ended (kn_live_ended): it is
 * shown, and a "done" that waited for it is handled. */
void kn_execute_on_live(kn_kernel_t *k, kn_exec_t *e);

/* kn_profrun.c: the profiled run of e ended (ev is the worker's "done"
 * event; or NULL after a crash, when maps_text, in e->crash_report, and
 * pid come from the crash report): its samples or allocations are read,
 * shown, kept or added as e's magic says, on a job off the loop (e->job,
 * kn_job.h, with e->profrun), after which the loop calls
 * kn_profrun_drawn, and that then(e). e waits meanwhile. */
void kn_profrun_done(kn_exec_t *e, json_t *ev, const char *maps_text, pid_t pid,
                     kn_exec_then_fn then);
/* An interrupt while e's profile is read or drawn: the graph is not drawn
 * (its drawing stops soon after), the profile is kept all the same. */
void kn_profrun_interrupt(kn_exec_t *e);
/* e's profile job has ended (kn_job_done): what it said, its graph (or
 * error), then the then of kn_profrun_done, which may finish e. */
void kn_profrun_drawn(kn_exec_t *e);
/* What an interrupt of the graph's drawing left, for the cell's error:
 * " The flame graph was not drawn ...: %profshow draws it." New string. */
char *kn_profrun_not_drawn_note(const kn_exec_t *e);
/* The run command's member that starts the collector of e's kind of
 * samples (kn_profreq_t.kind: the CPU sampler, the allocation recorder),
 * under *key ("profile", "allocs"), with the file it records into
 * prepared. NULL with err. */
json_t *kn_profrun_request(kn_exec_t *e, const char **key, char *err, size_t err_size);
/* What the worker pid has recorded so far of a run that r asked for and
 * that still runs (cell: its number): the profile of the live graph
 * (kn_live.c). Safe off the loop while the loop leaves kp alone. NULL with
 * err. */
fl_profile_t *kn_profrun_so_far(kn_prof_t *kp, const kn_profreq_t *r, int cell, pid_t pid,
                               char *err, size_t err_size);
/* Whether e's samples can still be read once its worker crashed. */
bool kn_profrun_after_crash(const kn_exec_t *e);
/* What became of the profile of a run cut short (a crash, an interrupt),
 * for the error message: " The flame graph shows ..." or "". */
const char *kn_profrun_cut_short_note(kn_profmode_t mode);


/* kn_restart.c: starts (or restarts) the worker and has it load every
 * committed cell, a job the main loop carries on (kn_worker_start):
 * kn_worker_starting is true until its end, which kn_restart_on_started
 * turns into what the user sees; meanwhile shell requests wait, and control
 * is served. Returns 0, or -1 with err when no process could be started. */
int kn_restart_worker(kn_kernel_t *k, char *err, size_t err_size);
/* The worker ended (status from wait, reason when the kernel
 * ended it) while e ran, or while no cell ran (e NULL): say why, start a
 * new worker, reload the session's code. */
void kn_restart_after_exit(kn_kernel_t *k, kn_exec_t *e, int status, const char *reason);
/* A worker's start dropped the committed cell whose object is path (why
 * says what its load did): it leaves the session, and the output says so. */
void kn_restart_on_dropped(kn_kernel_t *k, const char *path, const char *why);
/* A worker's start ended (failure: why there is no worker, or NULL): the
 * cell whose crash restarted it is finished, a cell waiting to run is sent,
 * and what happened is said. */
void kn_restart_on_started(kn_kernel_t *k, const char *failure);

#endif
