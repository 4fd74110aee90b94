/* kn_kernel: the Jupyter kernel process.
 *
 * Data flow: a ZeroMQ frame list arrives on shell or control (kn_kernel.c),
 * is decoded and verified (kn_wire.c) and dispatched by msg_type: simple
 * requests are answered at once (kn_requests.c); execute_request starts an
 * execution (kn_execute.c), which splits off magics (kn_magic.c), compiles
 * the cell (kn_session.c, kn_cell.c) and asks the worker process
 * (kn_worker.c, kernel/worker/) to run it. While it runs, the poll loop keeps
 * serving control, stdin and the worker's output, which becomes iopub stream
 * messages; the worker's "done" event (or its death) finishes the execution
 * with an execute_reply. */
#ifndef KN_KERNEL_H
#define KN_KERNEL_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

#include "kn_conn.h"
#include "kn_prof.h"
#include "kn_session.h"
#include "kn_strbuf.h"
#include "kn_wire.h"
#include "kn_worker.h"

/* CMake gives the version (project() in CMakeLists.txt, its one source). */
#define KN_IMPLEMENTATION_VERSION CFLAME_VERSION
#define KN_PROTOCOL_VERSION "5.3"

typedef struct kn_exec kn_exec_t;

typedef struct kn_history_entry {
  int session;
  int line;
  char *input;
} kn_history_entry_t;

typedef struct kn_kernel {
  kn_conn_t conn;
  kn_key_t key;
  char session_id[37];
  void *zctx;
  void *shell, *control, *iopub, *stdin_sock, *hb;
  int sigint_pipe[2]; /* SIGINT to the kernel writes here */
  kn_replay_t *replay; /* signatures seen: replayed messages are dropped */

  int execution_count;
  kn_history_entry_t *history;
  size_t n_history, cap_history;

  kn_session_t *session;
  kn_prof_t *prof;
  kn_worker_t *worker;
  char *worker_path;

  kn_exec_t *exec; /* the running execution, or NULL */
  char *between_cells_note; /* what happened to the worker while no cell ran,
                               for the next cell's output; or NULL */
  bool shutting_down;
  bool restart_requested;
  bool log_debug;
} kn_kernel_t;

/* ---- kn_kernel.c: sockets and messages ---- */

/* Reads the connection file, binds the sockets, starts the heartbeat
 * thread, the session and the worker. Returns 0, or -1 with err. */
int kn_kernel_init(kn_kernel_t *k, const char *connection_file, char *err, size_t err_size);
/* Serves requests until shutdown. Returns 0, or -1 on a fatal error. */
int kn_kernel_run(kn_kernel_t *k);
/* Stops the worker, removes the session directory, closes the sockets. */
void kn_kernel_fini(kn_kernel_t *k);

/* Sends msg on socket (a shell/control/stdin ROUTER: routed by msg's
 * idents; iopub: topic from the msg_type). Logs failures. Returns 0/-1. */
int kn_send(kn_kernel_t *k, void *socket, const kn_msg_t *msg);
/* Builds a reply/broadcast to parent and sends it; content is stolen. */
int kn_reply(kn_kernel_t *k, void *socket, const kn_msg_t *parent, const char *msg_type,
             json_t *content);
int kn_publish(kn_kernel_t *k, const kn_msg_t *parent, const char *msg_type, json_t *content);
void kn_publish_status(kn_kernel_t *k, const kn_msg_t *parent, const char *state);
/* Receives one message from socket without waiting; NULL when none is
 * there, or when it was malformed or wrongly signed (then it is logged and
 * dropped). New. */
kn_msg_t *kn_receive(kn_kernel_t *k, void *socket, const char *name);
/* Answers a request other than execute, with busy and idle around it. */
void kn_serve(kn_kernel_t *k, void *socket, kn_msg_t *msg);
/* Logs to the kernel's stderr (the frontend's log). */
void kn_log(kn_kernel_t *k, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Starts (or restarts) the worker and loads every committed cell. Returns
 * 0, or -1 with err. */
int kn_kernel_start_worker(kn_kernel_t *k, char *err, size_t err_size);

/* ---- kn_requests.c: requests answered at once ---- */

/* Handles msg from socket (shell or control). Returns true if it handled
 * the type; execute_request is not handled here. */
bool kn_requests_dispatch(kn_kernel_t *k, void *socket, kn_msg_t *msg);
void kn_history_add(kn_kernel_t *k, const char *code);
void kn_history_free(kn_kernel_t *k);

/* ---- kn_execute.c: execute_request ---- */

/* Starts executing msg (an execute_request from shell). Either finishes at
 * once (errors, magics that need no worker) or leaves k->exec set until the
 * worker reports. Takes ownership of msg. */
void kn_execute_start(kn_kernel_t *k, kn_msg_t *msg);
/* Feeds the worker's output and events to the running execution. */
void kn_execute_on_worker(kn_kernel_t *k);
/* The running execution's compiler descriptors to poll (-1 when none), and
 * what to do when one is ready: the main loop never waits for a compiler. */
void kn_execute_compiler_fds(const kn_kernel_t *k, int fds[2]);
void kn_execute_on_compiler(kn_kernel_t *k);
/* At shutdown: ends a compiler under way. */
void kn_execute_stop(kn_kernel_t *k);
/* Handles an input_reply from the stdin socket. */
void kn_execute_on_input_reply(kn_kernel_t *k, kn_msg_t *msg);
/* Interrupt request: stop the running cell. */
void kn_execute_interrupt(kn_kernel_t *k);
/* Called by the poll loop on every pass: flushes batched output, escalates
 * interrupts. Returns the poll timeout it wants in ms (-1: none). */
int kn_execute_tick(kn_kernel_t *k);
/* Replies "aborted" to execute requests queued behind a failed one
 * (stop_on_error). */
void kn_execute_abort_queued(kn_kernel_t *k);

#endif
