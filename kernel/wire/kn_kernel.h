/* SPDX-License-Identifier: BSD-3-Clause */
/* kn_kernel: the Jupyter kernel process.
 *
 * Data flow: a ZeroMQ frame list arrives on shell or control (kn_kernel.c),
 * is decoded and verified (kn_wire.c) and dispatched by msg_type: simple
 * requests are answered at once (kn_requests.c); complete and inspect when
 * libclang's process (cflame-clang) has read the cell (kn_complete.c); execute_request
 * starts an execution (kn_exec.h and the files it lists), which splits off
 * magics (kn_magic.c, the table in kn_magics.c), compiles the cell
 * (kn_session.c, kn_cell.c) and asks the worker process (kn_worker.c,
 * kernel/worker/) to run it. While it runs, the poll loop keeps serving
 * control, stdin and the worker's output, which becomes iopub stream
 * messages; the worker's "done" event (or its death) finishes the execution
 * with an execute_reply.
 *
 * kn_kernel_t is opaque: its sockets, its state between cells and the
 * objects it owns (session, profiler state, worker, history, completion)
 * are reached through the functions below. */
#ifndef KN_KERNEL_H
#define KN_KERNEL_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

#include "kn_history.h"
#include "kn_prof.h"
#include "kn_session.h"
#include "kn_text.h"
#include "kn_wire.h"
#include "kn_worker.h"

#define KN_PROTOCOL_VERSION "5.3"

typedef struct kn_kernel kn_kernel_t;
typedef struct kn_exec kn_exec_t;
typedef struct kn_complete kn_complete_t;
typedef struct kn_job kn_job_t;

/* The sockets messages come in and go out on. */
typedef enum kn_channel { KN_SHELL, KN_CONTROL, KN_STDIN, KN_IOPUB } kn_channel_t;

/* ---- kn_kernel.c: the process, its sockets and messages ---- */

/* Reads the connection file, binds the sockets, starts the heartbeat
 * thread, the session and the worker. Returns the kernel, or NULL with
 * err. */
kn_kernel_t *kn_kernel_new(const char *connection_file, char *err, size_t err_size);
/* Serves requests until shutdown. Returns 0, or -1 on a fatal error. */
int kn_kernel_run(kn_kernel_t *k);
/* Stops the worker, removes the session directory, closes the sockets. */
void kn_kernel_destroy(kn_kernel_t **k);

/* Builds a reply to parent and sends it on channel (routed by parent's
 * idents; on iopub by a topic from msg_type); content is stolen. Logs
 * failures. Returns 0/-1. */
int kn_reply(kn_kernel_t *k, kn_channel_t channel, const kn_msg_t *parent, const char *msg_type,
             json_t *content);
/* Builds a broadcast under parent and publishes it on iopub; content is
 * stolen. */
int kn_publish(kn_kernel_t *k, const kn_msg_t *parent, const char *msg_type, json_t *content);
void kn_publish_status(kn_kernel_t *k, const kn_msg_t *parent, const char *state);
/* Receives one message from channel without waiting; NULL when none is
 * there, or when it was malformed or wrongly signed (then it is logged and
 * dropped). New. */
kn_msg_t *kn_receive(kn_kernel_t *k, kn_channel_t channel);
/* Answers a request other than execute, with busy and idle around it. */
void kn_serve(kn_kernel_t *k, kn_channel_t channel, kn_msg_t *msg);
/* What a line of the kernel's log is. Its stderr is the frontend's log,
 * which `jupyter console` and nbconvert print with the user's own output:
 * warnings are what an operator must know (a forged message dropped, a
 * worker that cannot start); debug lines (the requests served, what a
 * profile cost) are written only under CFLAME_LOG=debug (docs/USAGE.md). */
typedef enum { KN_LOG_WARN, KN_LOG_DEBUG } kn_log_level_t;
/* Logs a line "[cflame] ..." at level to the kernel's stderr, if the
 * kernel's level (CFLAME_LOG) lets it through. The one way the kernel logs. */
void kn_log(kn_kernel_t *k, kn_log_level_t level, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* Starts (or restarts) the worker and has it load every committed cell, a
 * job the main loop carries on (kn_worker_start): kn_worker_starting is
 * true until its end, which kn_restart.c turns into what the user sees;
 * meanwhile shell requests wait, and control is served. Returns 0, or -1
 * with err when no process could be started. */
int kn_kernel_start_worker(kn_kernel_t *k, char *err, size_t err_size);

/* What ended the worker while no cell ran, kept while a new one starts
 * (kn_restart.c says it, with how the start went, at the start of the next
 * cell's output). what is stolen; take returns it (new) or NULL. */
void kn_kernel_set_restart_cause(kn_kernel_t *k, char *what);
char *kn_kernel_take_restart_cause(kn_kernel_t *k);

/* What the kernel owns. Borrowed. */
kn_session_t *kn_kernel_session(kn_kernel_t *k);
kn_prof_t *kn_kernel_prof(kn_kernel_t *k);
kn_worker_t *kn_kernel_worker(kn_kernel_t *k);
kn_history_t *kn_kernel_history(kn_kernel_t *k);
/* Whether the client that started the kernel is `jupyter console`. */
bool kn_kernel_console(const kn_kernel_t *k);
kn_complete_t *kn_kernel_complete(kn_kernel_t *k);

/* The execution under way (one at a time), or NULL; while there is one,
 * the shell socket is not read. */
kn_exec_t *kn_kernel_exec(const kn_kernel_t *k);
void kn_kernel_set_exec(kn_kernel_t *k, kn_exec_t *e);

/* A line magic's job whose cell was answered already (cancelled by an
 * interrupt: it changes nothing, kn_job.h), taken over: the kernel joins
 * its thread once it has stopped, and reads no shell request until then,
 * since the job still holds the profiling state. */
void kn_kernel_leave_job(kn_kernel_t *k, kn_job_t *job);

/* The execution count so far. */
int kn_kernel_execution_count(const kn_kernel_t *k);
/* Counts an execution of code: with store_history it takes the next
 * execution count, enters the history and compiles as cell[count];
 * without, it keeps the count and gets a cell number from a range of its
 * own (*cell), so its symbols never clash with a numbered cell's. Returns
 * the execution count for its reply. */
int kn_kernel_count_execution(kn_kernel_t *k, const char *code, bool store_history, int *cell);

/* The last finished execute_request, under which output from threads a
 * cell left running is shown; keep takes ownership. */
const kn_msg_t *kn_kernel_last_request(const kn_kernel_t *k);
void kn_kernel_keep_request(kn_kernel_t *k, kn_msg_t *msg);

/* What happened to the worker while no cell ran, said at the start of the
 * next cell's output. note is stolen; take returns it (new) or NULL. */
void kn_kernel_note_between_cells(kn_kernel_t *k, char *note);
char *kn_kernel_take_note(kn_kernel_t *k);

/* shutdown_request: the loop ends after this pass. */
void kn_kernel_shutdown(kn_kernel_t *k, bool restart);

/* ---- kn_requests.c: requests answered at once ----
 * (complete_request and inspect_request: kn_complete.h) */

/* Handles msg from channel (shell or control). Returns true if it handled
 * the type; execute_request is not handled here. */
bool kn_requests_dispatch(kn_kernel_t *k, kn_channel_t channel, kn_msg_t *msg);

#endif
