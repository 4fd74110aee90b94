/* SPDX-License-Identifier: BSD-3-Clause */
/* kn_kernel: the Jupyter kernel process's sockets, messages and poll loop.
 *
 * Data flow: a ZeroMQ frame list arrives on shell, control or stdin
 * (kn_kernel.c), is decoded and verified (kn_wire.c) and dispatched by
 * msg_type through the kernel's table of handlers. The kernel answers
 * interrupt_request itself and knows no other request: the rooms above it
 * register theirs at start-up (kn_main.c calls kn_execute_open and
 * kn_complete_open): the simple requests (kn_requests.c), execute_request
 * and input_reply (the execution, kn_exec.h), complete_request and
 * inspect_request (kn_complete.h). A room also registers what the loop
 * polls for it (kn_room_t): its descriptors, its timers, whether shell
 * waits, what an interrupt does, what shutdown frees. So this file calls
 * into no room, and the rooms call down into it: kn_reply, kn_publish,
 * kn_log, and the objects they share through kn_kernel_parts.
 *
 * kn_kernel_t is opaque: its sockets, its state between cells and the
 * objects the rooms keep here are reached through the functions below. */
#ifndef KN_KERNEL_H
#define KN_KERNEL_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

#include "kn_history.h"
#include "kn_text.h"
#include "kn_wire.h"

#define KN_PROTOCOL_VERSION "5.3"

typedef struct kn_kernel kn_kernel_t;
/* The rooms' objects the kernel keeps for them, opaque here. */
typedef struct kn_session kn_session_t;
typedef struct kn_prof kn_prof_t;
typedef struct kn_worker kn_worker_t;
typedef struct kn_exec kn_exec_t;
typedef struct kn_complete kn_complete_t;
typedef struct kn_job kn_job_t;
typedef struct kn_exec_inspector kn_exec_inspector_t;

/* The sockets messages come in and go out on. */
typedef enum kn_channel { KN_SHELL, KN_CONTROL, KN_STDIN, KN_IOPUB } kn_channel_t;

/* ---- kn_kernel.c: the process, its sockets and messages ---- */

/* Reads the connection file, binds the sockets, starts the heartbeat
 * thread; the rooms register next. Returns the kernel, or NULL with err. */
kn_kernel_t *kn_kernel_new(const char *connection_file, char *err, size_t err_size);
/* Serves requests until shutdown. Returns 0, or -1 on a fatal error. */
int kn_kernel_run(kn_kernel_t *k);
/* Closes the rooms (kn_room_t.close: the worker stopped, the session
 * directory removed), then the sockets. */
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
/* Answers a request with its KN_SERVE handler, busy and idle around it. */
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

/* What ended the worker while no cell ran, kept while a new one starts
 * (kn_restart.c says it, with how the start went, at the start of the next
 * cell's output). what is stolen; take returns it (new) or NULL. */
void kn_kernel_set_restart_cause(kn_kernel_t *k, char *what);
char *kn_kernel_take_restart_cause(kn_kernel_t *k);

/* ---- what the rooms above register ---- */

/* A request's handler. KN_SERVE: answered at once, with busy and idle
 * around it, msg freed after it (kn_serve); KN_TAKE: the handler owns msg
 * and answers when it can. */
typedef enum { KN_SERVE, KN_TAKE } kn_handling_t;
typedef void (*kn_handler_fn)(kn_kernel_t *k, kn_channel_t channel, kn_msg_t *msg);
/* The channels a handler is read on, or-ed: KN_ON(KN_SHELL) | ... */
#define KN_ON(channel) (1u << (channel))
/* Registers fn for msg_type on channels (shell, control, stdin); a type is
 * registered once. A request no handler takes is logged and answered with
 * busy and idle only; interrupt_request is the kernel's own. */
void kn_kernel_handle(kn_kernel_t *k, const char *msg_type, unsigned channels, kn_handling_t how,
                      kn_handler_fn fn);

/* What the loop does for a room between messages; any member may be NULL.
 * Every pass calls each room's tick first (it may end work and it returns
 * the poll timeout it wants, ms, or -1), then polls every room's fds (-1
 * where none) with shell unless a room holds_shell, then calls on_ready of
 * each room one of whose fds is readable, in the order registered. An
 * interrupt (interrupt_request, SIGINT) calls every interrupt; shutdown
 * calls every close, the last registered first. */
#define KN_ROOM_FDS 4
typedef struct kn_room {
  int (*tick)(kn_kernel_t *k);
  void (*fds)(kn_kernel_t *k, int fds[KN_ROOM_FDS]);
  void (*on_ready)(kn_kernel_t *k);
  bool (*holds_shell)(kn_kernel_t *k);
  void (*interrupt)(kn_kernel_t *k);
  void (*close)(kn_kernel_t *k);
} kn_room_t;
/* Registers room (borrowed: a static table). */
void kn_kernel_add_room(kn_kernel_t *k, const kn_room_t *room);

/* The objects the rooms share, made and freed by the room that owns each
 * (kn_execute_open: session, prof, worker, exec, left_job; kn_complete_open:
 * complete, inspector); the kernel only keeps them. Borrowed. */
typedef struct kn_kernel_parts {
  kn_session_t *session;
  kn_prof_t *prof;
  kn_worker_t *worker;
  kn_complete_t *complete;
  /* The execution under way (one at a time), or NULL. */
  kn_exec_t *exec;
  /* A line magic's job whose cell was answered already (cancelled by an
   * interrupt: it changes nothing, kn_job.h), joined once its thread has
   * stopped; shell waits until then, since the job still holds the
   * profiling state. */
  kn_job_t *left_job;
  /* Who answers a cell that is only `name?` (kn_exec.h). */
  const kn_exec_inspector_t *inspector;
} kn_kernel_parts_t;
kn_kernel_parts_t *kn_kernel_parts(kn_kernel_t *k);

/* The same, one by one. Borrowed. */
kn_session_t *kn_kernel_session(kn_kernel_t *k);
kn_prof_t *kn_kernel_prof(kn_kernel_t *k);
kn_worker_t *kn_kernel_worker(kn_kernel_t *k);
kn_complete_t *kn_kernel_complete(kn_kernel_t *k);
kn_exec_t *kn_kernel_exec(const kn_kernel_t *k);
/* The session's inputs, the kernel's own. Borrowed. */
kn_history_t *kn_kernel_history(kn_kernel_t *k);
/* Whether the client that started the kernel is `jupyter console`. */
bool kn_kernel_console(const kn_kernel_t *k);

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

#endif
