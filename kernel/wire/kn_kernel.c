/* SPDX-License-Identifier: BSD-3-Clause */
/* Sockets, the message loop, its table of handlers and rooms, and the
 * heartbeat (see kn_kernel.h). */
#define _GNU_SOURCE
#include "kn_kernel.h"

#include <assert.h>
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/pidfd.h>
#include <unistd.h>
#include <uuid/uuid.h>
#include <zmq.h>

#include "kn_conn.h"

/* Enough for every request type of protocol 5.3, and for the rooms of
 * kn_main.c; registering more is a programmer's error (an assert). */
#define KN_MAX_HANDLERS 24
#define KN_MAX_ROOMS 8

struct kn_kernel {
  kn_conn_t conn;
  kn_key_t key;
  char session_id[37];
  void *zctx;
  void *sockets[4]; /* by kn_channel_t */
  void *hb;
  int sigint_pipe[2];  /* SIGINT to the kernel writes here */
  pid_t client_pid;    /* the process the kernel leaves with (watch_client), or 0 */
  int client_fd;       /* its pidfd, readable once it has ended; -1: none watched */
  bool console;        /* that process is `jupyter console` (client_is_console) */
  kn_replay_t *replay; /* signatures seen: replayed messages are dropped */

  int execution_count;
  int unnumbered_cells; /* cell numbers of executions without history */
  kn_history_t *history;
  kn_kernel_parts_t parts;

  /* What the rooms registered: handlers by msg_type, and rooms in order. */
  struct {
    const char *msg_type;
    unsigned channels;
    kn_handling_t how;
    kn_handler_fn fn;
  } handlers[KN_MAX_HANDLERS];
  size_t n_handlers;
  const kn_room_t *rooms[KN_MAX_ROOMS];
  size_t n_rooms;

  kn_msg_t *last_request;
  char *between_cells_note;
  char *restart_cause; /* what ended the worker while no cell ran, during its restart */
  bool shutting_down;
  bool restart_requested;
  kn_log_level_t log_level; /* the most detailed level logged */
};

static const char *const channel_names[] = {"shell", "control", "stdin", "iopub"};

kn_kernel_parts_t *kn_kernel_parts(kn_kernel_t *k) { return &k->parts; }
kn_session_t *kn_kernel_session(kn_kernel_t *k) { return k->parts.session; }
kn_prof_t *kn_kernel_prof(kn_kernel_t *k) { return k->parts.prof; }
kn_worker_t *kn_kernel_worker(kn_kernel_t *k) { return k->parts.worker; }
kn_complete_t *kn_kernel_complete(kn_kernel_t *k) { return k->parts.complete; }
kn_exec_t *kn_kernel_exec(const kn_kernel_t *k) { return k->parts.exec; }
kn_history_t *kn_kernel_history(kn_kernel_t *k) { return k->history; }
bool kn_kernel_console(const kn_kernel_t *k) { return k->console; }

void kn_kernel_handle(kn_kernel_t *k, const char *msg_type, unsigned channels,
                      kn_handling_t how, kn_handler_fn fn) {
  assert(k->n_handlers < KN_MAX_HANDLERS);
  for (size_t i = 0; i < k->n_handlers; i++) assert(strcmp(k->handlers[i].msg_type, msg_type));
  k->handlers[k->n_handlers].msg_type = msg_type;
  k->handlers[k->n_handlers].channels = channels;
  k->handlers[k->n_handlers].how = how;
  k->handlers[k->n_handlers].fn = fn;
  k->n_handlers++;
}

void kn_kernel_add_room(kn_kernel_t *k, const kn_room_t *room) {
  assert(k->n_rooms < KN_MAX_ROOMS);
  k->rooms[k->n_rooms++] = room;
}

/* The handler of msg's type on channel, or -1. */
static int handler_of(const kn_kernel_t *k, kn_channel_t channel, const kn_msg_t *msg) {
  const char *type = kn_msg_type(msg);
  for (size_t i = 0; i < k->n_handlers; i++)
    if ((k->handlers[i].channels & KN_ON(channel)) && !strcmp(k->handlers[i].msg_type, type))
      return (int)i;
  return -1;
}
int kn_kernel_execution_count(const kn_kernel_t *k) { return k->execution_count; }

int kn_kernel_count_execution(kn_kernel_t *k, const char *code, bool store_history, int *cell) {
  if (store_history) {
    k->execution_count++;
    kn_history_add(k->history, k->execution_count, code);
    *cell = k->execution_count;
  } else {
    *cell = ++k->unnumbered_cells;
  }
  return k->execution_count;
}

const kn_msg_t *kn_kernel_last_request(const kn_kernel_t *k) { return k->last_request; }

void kn_kernel_keep_request(kn_kernel_t *k, kn_msg_t *msg) {
  kn_msg_destroy(&k->last_request);
  k->last_request = msg;
}

/* Puts value (stolen) in *slot; returns what was there (new, or NULL). */
static char *swap_text(char **slot, char *value) {
  char *old = *slot;
  *slot = value;
  return old;
}

void kn_kernel_note_between_cells(kn_kernel_t *k, char *note) {
  free(swap_text(&k->between_cells_note, note));
}

char *kn_kernel_take_note(kn_kernel_t *k) {
  return swap_text(&k->between_cells_note, NULL);
}

void kn_kernel_shutdown(kn_kernel_t *k, bool restart) {
  k->shutting_down = true;
  k->restart_requested = restart;
}

void kn_log(kn_kernel_t *k, kn_log_level_t level, const char *fmt, ...) {
  if (level > k->log_level) return;
  va_list ap;
  va_start(ap, fmt);
  fputs("[cflame] ", stderr);
  vfprintf(stderr, fmt, ap);
  fputc('\n', stderr);
  va_end(ap);
}

static int send_msg(kn_kernel_t *k, kn_channel_t channel, const kn_msg_t *msg) {
  void *socket = k->sockets[channel];
  kn_blob_t *frames;
  size_t n;
  char err[256];
  kn_msg_t *tmp = NULL;
  const kn_msg_t *out = msg;
  if (channel == KN_IOPUB) {
    /* iopub routes by topic: "kernel.<session>.<msg_type>". */
    tmp = fl__xcalloc(1, sizeof *tmp);
    *tmp = *msg;
    kn_blob_t topic;
    char buf[128];
    int len = snprintf(buf, sizeof buf, "kernel.%s.%s", k->session_id, kn_msg_type(msg));
    topic.data = (unsigned char *)buf;
    topic.size = (size_t)len;
    tmp->idents = &topic;
    tmp->n_idents = 1;
    out = tmp;
    int rc = kn_wire_encode(out, &k->key, &frames, &n, err, sizeof err);
    free(tmp);
    if (rc < 0) {
      kn_log(k, KN_LOG_WARN, "cannot encode %s: %s", kn_msg_type(msg), err);
      return -1;
    }
  } else if (kn_wire_encode(out, &k->key, &frames, &n, err, sizeof err) < 0) {
    kn_log(k, KN_LOG_WARN, "cannot encode %s: %s", kn_msg_type(msg), err);
    return -1;
  }
  int rc = 0;
  for (size_t i = 0; i < n; i++) {
    if (zmq_send(socket, frames[i].data, frames[i].size, i + 1 < n ? ZMQ_SNDMORE : 0) < 0) {
      kn_log(k, KN_LOG_WARN, "cannot send %s: %s", kn_msg_type(msg), zmq_strerror(errno));
      rc = -1;
      break;
    }
  }
  kn_frames_free(frames, n);
  return rc;
}

int kn_reply(kn_kernel_t *k, kn_channel_t channel, const kn_msg_t *parent, const char *msg_type,
             json_t *content) {
  kn_msg_t *m = kn_msg_new(msg_type, parent, k->session_id, content);
  int rc = send_msg(k, channel, m);
  kn_msg_destroy(&m);
  return rc;
}

int kn_publish(kn_kernel_t *k, const kn_msg_t *parent, const char *msg_type, json_t *content) {
  return kn_reply(k, KN_IOPUB, parent, msg_type, content);
}

void kn_publish_status(kn_kernel_t *k, const kn_msg_t *parent, const char *state) {
  kn_publish(k, parent, "status", json_pack("{s:s}", "execution_state", state));
}

/* Answers a well-signed message that could not be read (err says why)
 * with the reply its header asks for, status error, so that the client
 * does not wait for ever. A message whose header names no request (it did
 * not parse, or its msg_type does not end in _request) has no reply to
 * give: it is dropped and logged. */
static void answer_unreadable(kn_kernel_t *k, kn_channel_t channel, const kn_msg_t *msg,
                              const char *err) {
  static const char suffix[] = "_request";
  const size_t suffix_len = sizeof suffix - 1;
  const char *type = kn_msg_type(msg);
  size_t len = strlen(type);
  if (len <= suffix_len || strcmp(type + len - suffix_len, suffix) != 0) {
    kn_log(k, KN_LOG_WARN, "dropped a message on %s: %s (its header names no request to answer)",
           channel_names[channel], err);
    return;
  }
  kn_log(k, KN_LOG_WARN, "answered an unreadable %s on %s with an error: %s", type,
         channel_names[channel], err);
  fl__buf_t reply_type = FL__BUF_INIT, evalue = FL__BUF_INIT;
  fl__buf_printf(&reply_type, "%.*s_reply", (int)(len - suffix_len), type);
  fl__buf_printf(&evalue,
                   "the %s could not be read: %s. A message's header, parent_header, "
                   "metadata and content are each one JSON object, and it has at most %d "
                   "frames",
                   type, err, KN_WIRE_MAX_FRAMES);
  json_t *content = json_pack("{s:s, s:s, s:o, s:[o]}", "status", "error", "ename", "RequestError",
                              "evalue", kn_wire_text(evalue.data), "traceback",
                              kn_wire_textf("RequestError: %s", evalue.data));
  if (!strcmp(type, "execute_request"))
    json_object_set_new(content, "execution_count", json_integer(k->execution_count));
  kn_publish_status(k, msg, "busy");
  kn_reply(k, channel, msg, reply_type.data, content);
  kn_publish_status(k, msg, "idle");
  fl__buf_free(&reply_type);
  fl__buf_free(&evalue);
}

/* Receives one multipart message; returns it decoded and verified, or NULL.
 * A message that is not its key holder's (forged, malformed before its
 * signature could be checked) or a replay is dropped and logged; a
 * well-signed one that cannot be read is answered with an error
 * (answer_unreadable). Of a message's frames, KN_WIRE_MAX_FRAMES are kept
 * and the rest counted: a message with more is answered the same way. */
kn_msg_t *kn_receive(kn_kernel_t *k, kn_channel_t channel) {
  void *socket = k->sockets[channel];
  const char *name = channel_names[channel];
  kn_blob_t *frames = NULL;
  size_t n = 0, n_received = 0, cap = 0;
  int more = 1;
  while (more) {
    zmq_msg_t part;
    zmq_msg_init(&part);
    if (zmq_msg_recv(&part, socket, ZMQ_DONTWAIT) < 0) {
      zmq_msg_close(&part);
      break;
    }
    n_received++;
    more = zmq_msg_more(&part);
    if (n == KN_WIRE_MAX_FRAMES) {
      zmq_msg_close(&part);
      continue;
    }
    if (n == cap) {
      cap = cap ? cap * 2 : 8;
      frames = fl__xrealloc(frames, cap, sizeof *frames);
    }
    frames[n].size = zmq_msg_size(&part);
    frames[n].data = fl__xmalloc(frames[n].size + 1, 1);
    memcpy(frames[n].data, zmq_msg_data(&part), frames[n].size);
    n++;
    zmq_msg_close(&part);
  }
  kn_msg_t *msg = NULL;
  char err[256];
  int rc = n > 0 ? kn_wire_decode(frames, n, &k->key, &msg, err, sizeof err) : 0;
  kn_frames_free(frames, n);
  if (!msg) {
    if (rc < 0)
      kn_log(k, KN_LOG_WARN, "dropped a message on %s: %s%s", name, err,
             n < n_received ? " (among the first frames of a message with too many)" : "");
    return NULL;
  }
  if (kn_replay_seen(k->replay, msg->signature)) {
    /* A message sent again as it was: a replay, never run twice. */
    kn_log(k, KN_LOG_WARN, "dropped a replayed %s on %s (its signature was seen before)",
           kn_msg_type(msg), name);
    kn_msg_destroy(&msg);
    return NULL;
  }
  if (rc == 0 && n < n_received) {
    snprintf(err, sizeof err, "the message has %zu frames, routing identities included",
             n_received);
    rc = -1;
  }
  if (rc < 0) {
    answer_unreadable(k, channel, msg, err);
    kn_msg_destroy(&msg);
  }
  return msg;
}

/* ---- heartbeat: its own thread, so it answers while cells run ---- */

/* Echoes every ping whole, whatever its size. */
static void *heartbeat_main(void *arg) {
  void *hb = arg;
  for (;;) {
    zmq_msg_t ping;
    zmq_msg_init(&ping);
    if (zmq_msg_recv(&ping, hb, 0) < 0) {
      zmq_msg_close(&ping);
      if (errno == EINTR) continue;
      break; /* ETERM: the context is shutting down */
    }
    int rc = zmq_msg_send(&ping, hb, 0); /* takes the message on success */
    if (rc < 0) zmq_msg_close(&ping);
    if (rc < 0 && errno == ETERM) break;
  }
  int linger = 0;
  zmq_setsockopt(hb, ZMQ_LINGER, &linger, sizeof linger);
  zmq_close(hb);
  return NULL;
}

/* ---- signals: SIGINT interrupts the cell, SIGTERM ends the kernel ---- */

static int signal_fd = -1;

static void on_signal(int sig) {
  int saved = errno;
  char c = sig == SIGINT ? 'i' : 't';
  if (signal_fd >= 0) (void)!write(signal_fd, &c, 1);
  errno = saved;
}

static int bind_socket(kn_kernel_t *k, void **sock, int type, int port, char *err,
                       size_t err_size) {
  char ep[512];
  kn_conn_endpoint(&k->conn, port, ep, sizeof ep);
  *sock = zmq_socket(k->zctx, type);
  if (!*sock || zmq_bind(*sock, ep) < 0) {
    snprintf(err, err_size, "cannot bind %s: %s", ep, zmq_strerror(errno));
    return -1;
  }
  int linger = 1000;
  zmq_setsockopt(*sock, ZMQ_LINGER, &linger, sizeof linger);
  if (type == ZMQ_ROUTER) {
    /* Clients of one session share their routing identity (jupyter_client
     * names its sockets after the session id, and km.client() twice gives
     * two clients of one session): the newest connection takes the
     * identity over, as ipykernel lets it, instead of being ignored. */
    int handover = 1;
    zmq_setsockopt(*sock, ZMQ_ROUTER_HANDOVER, &handover, sizeof handover);
  }
  return 0;
}

/* The kernel leaves with the process that started it, as ipykernel does:
 * a client killed without a shutdown_request (a script's SIGKILL, a
 * crashed frontend) leaves no kernel, worker or libclang process behind.
 * That process is JPY_PARENT_PID where the client set it (jupyter_client
 * does: the kernel may run under a wrapper that outlives the client), else
 * the kernel's parent at start. Its pidfd joins the poll set, so the loop
 * learns of its end at once and never waits to check. Not
 * PR_SET_PDEATHSIG: it follows the parent thread that forked the kernel,
 * not the process, and only the direct parent. Process 1 is never
 * watched: it does not end, and a kernel whose parent is already 1 was
 * orphaned at birth or started by a container's init, which also does not
 * end. Returns 0, or -1 with err when the process has already ended. */
/* Whether process pid is `jupyter console` (run as jupyter-console, or as
 * python -m jupyter_console): a terminal, which prints display_data and
 * ignores update_display_data, so that a live graph there is a line that
 * refreshes (kn_live.h). A console attached to a kernel started by
 * another client (--existing) is not known for one. */
static bool client_is_console(pid_t pid) {
  char path[64], args[4096];
  snprintf(path, sizeof path, "/proc/%d/cmdline", (int)pid);
  ssize_t got = fl__read_small(path, args, sizeof args);
  if (got <= 0) return false;
  for (const char *arg = args; arg < args + got; arg += strlen(arg) + 1) {
    const char *slash = strrchr(arg, '/');
    const char *base = slash ? slash + 1 : arg;
    if (!strcmp(base, "jupyter-console") || !strcmp(arg, "jupyter_console")) return true;
  }
  return false;
}

static int watch_client(kn_kernel_t *k, char *err, size_t err_size) {
  const char *given = getenv("JPY_PARENT_PID");
  pid_t pid = 0;
  if (given && given[0]) {
    char *end;
    long v = strtol(given, &end, 10);
    if (*end || v <= 0 || v > INT32_MAX)
      kn_log(k, KN_LOG_WARN, "JPY_PARENT_PID=%s is not a process id; watching the parent", given);
    else
      pid = (pid_t)v;
  }
  bool parent = pid == 0;
  if (parent) pid = getppid();
  if (pid <= 1) return 0;
  k->client_fd = pidfd_open(pid, 0);
  /* A parent gone before pidfd_open made the kernel init's (or a
   * subreaper's) child: getppid says so after the pidfd is taken. */
  if ((k->client_fd < 0 && errno == ESRCH) || (parent && getppid() != pid)) {
    snprintf(err, err_size, "the process that started the kernel (%d) has already ended", (int)pid);
    return -1;
  }
  if (k->client_fd < 0) {
    kn_log(k, KN_LOG_WARN, "cannot watch process %d, which started the kernel (pidfd_open: %s)",
           (int)pid, strerror(errno));
    return 0;
  }
  fcntl(k->client_fd, F_SETFD, FD_CLOEXEC);
  k->client_pid = pid;
  k->console = client_is_console(pid);
  return 0;
}

void kn_kernel_set_restart_cause(kn_kernel_t *k, char *what) {
  free(swap_text(&k->restart_cause, what));
}

char *kn_kernel_take_restart_cause(kn_kernel_t *k) {
  return swap_text(&k->restart_cause, NULL);
}

static int init(kn_kernel_t *k, const char *connection_file, char *err, size_t err_size) {
  if (kn_conn_load(connection_file, &k->conn, err, err_size) < 0) return -1;
  k->key.data = (const unsigned char *)k->conn.key;
  k->key.len = k->conn.key_len;
  uuid_t u;
  uuid_generate_random(u);
  uuid_unparse_lower(u, k->session_id);
  const char *log = getenv("CFLAME_LOG");
  k->log_level = log && !strcmp(log, "debug") ? KN_LOG_DEBUG : KN_LOG_WARN;
  if (log && log[0] && strcmp(log, "debug") && strcmp(log, "warn"))
    kn_log(k, KN_LOG_WARN, "CFLAME_LOG=%s is not a log level: warn (the default) or debug", log);
  k->replay = kn_replay_new();

  k->zctx = zmq_ctx_new();
  if (bind_socket(k, &k->sockets[KN_SHELL], ZMQ_ROUTER, k->conn.shell_port, err, err_size) < 0 ||
      bind_socket(k, &k->sockets[KN_CONTROL], ZMQ_ROUTER, k->conn.control_port, err, err_size) < 0 ||
      bind_socket(k, &k->sockets[KN_STDIN], ZMQ_ROUTER, k->conn.stdin_port, err, err_size) < 0 ||
      bind_socket(k, &k->sockets[KN_IOPUB], ZMQ_PUB, k->conn.iopub_port, err, err_size) < 0 ||
      bind_socket(k, &k->hb, ZMQ_REP, k->conn.hb_port, err, err_size) < 0)
    return -1;

  pthread_t hb_thread;
  if (pthread_create(&hb_thread, NULL, heartbeat_main, k->hb) != 0) {
    snprintf(err, err_size, "cannot start the heartbeat thread");
    return -1;
  }
  pthread_detach(hb_thread);

  if (pipe2(k->sigint_pipe, O_CLOEXEC | O_NONBLOCK) < 0) {
    snprintf(err, err_size, "cannot create the signal pipe: %s", strerror(errno));
    return -1;
  }
  signal_fd = k->sigint_pipe[1];
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_handler = on_signal;
  sa.sa_flags = SA_RESTART;
  sigaction(SIGINT, &sa, NULL);
  sigaction(SIGTERM, &sa, NULL);
  signal(SIGPIPE, SIG_IGN);
  return watch_client(k, err, err_size);
}

kn_kernel_t *kn_kernel_new(const char *connection_file, char *err, size_t err_size) {
  kn_kernel_t *k = fl__xcalloc(1, sizeof *k);
  k->sigint_pipe[0] = k->sigint_pipe[1] = -1;
  k->client_fd = -1;
  k->history = kn_history_new();
  /* Executions that store no history are numbered from here up. */
  k->unnumbered_cells = 1000000;
  if (init(k, connection_file, err, err_size) < 0) kn_kernel_destroy(&k);
  return k;
}

void kn_kernel_destroy(kn_kernel_t **kp) {
  kn_kernel_t *k = *kp;
  if (!k) return;
  for (size_t i = k->n_rooms; i-- > 0;)
    if (k->rooms[i]->close) k->rooms[i]->close(k);
  for (size_t i = 0; i < 4; i++) {
    if (!k->sockets[i]) continue;
    int linger = 100;
    zmq_setsockopt(k->sockets[i], ZMQ_LINGER, &linger, sizeof linger);
    zmq_close(k->sockets[i]);
  }
  if (k->zctx) {
    zmq_ctx_shutdown(k->zctx);
    zmq_ctx_term(k->zctx);
  }
  signal_fd = -1;
  if (k->sigint_pipe[0] >= 0) close(k->sigint_pipe[0]);
  if (k->sigint_pipe[1] >= 0) close(k->sigint_pipe[1]);
  if (k->client_fd >= 0) close(k->client_fd);
  kn_history_destroy(&k->history);
  kn_replay_destroy(&k->replay);
  kn_msg_destroy(&k->last_request);
  free(k->between_cells_note);
  free(k->restart_cause);
  kn_conn_free(&k->conn);
  free(k);
  *kp = NULL;
}

/* Answers a request from shell or control with its KN_SERVE handler,
 * busy/idle around it. */
void kn_serve(kn_kernel_t *k, kn_channel_t channel, kn_msg_t *msg) {
  kn_publish_status(k, msg, "busy");
  int h = handler_of(k, channel, msg);
  if (h >= 0 && k->handlers[h].how == KN_SERVE)
    k->handlers[h].fn(k, channel, msg);
  else
    kn_log(k, KN_LOG_WARN, "ignored a %s request", kn_msg_type(msg));
  kn_publish_status(k, msg, "idle");
}

static void interrupt(kn_kernel_t *k) {
  for (size_t i = 0; i < k->n_rooms; i++)
    if (k->rooms[i]->interrupt) k->rooms[i]->interrupt(k);
}

/* A message from shell or control to its handler; interrupt_request is the
 * kernel's own. */
static void dispatch(kn_kernel_t *k, kn_channel_t channel) {
  kn_msg_t *msg = kn_receive(k, channel);
  if (!msg) return;
  kn_log(k, KN_LOG_DEBUG, "%s: %s", channel_names[channel], kn_msg_type(msg));
  int h = handler_of(k, channel, msg);
  if (channel == KN_CONTROL && !strcmp(kn_msg_type(msg), "interrupt_request")) {
    kn_publish_status(k, msg, "busy");
    interrupt(k);
    kn_reply(k, KN_CONTROL, msg, "interrupt_reply", json_pack("{s:s}", "status", "ok"));
    kn_publish_status(k, msg, "idle");
  } else if (h >= 0 && k->handlers[h].how == KN_TAKE) {
    k->handlers[h].fn(k, channel, msg);
    return;
  } else {
    kn_serve(k, channel, msg);
  }
  kn_msg_destroy(&msg);
}

static void on_stdin(kn_kernel_t *k) {
  kn_msg_t *msg = kn_receive(k, KN_STDIN);
  if (!msg) return;
  int h = handler_of(k, KN_STDIN, msg);
  if (h >= 0 && k->handlers[h].how == KN_TAKE) {
    k->handlers[h].fn(k, KN_STDIN, msg);
    return;
  }
  kn_msg_destroy(&msg);
}

static void on_signal_pipe(kn_kernel_t *k) {
  char buf[16];
  ssize_t n;
  while ((n = read(k->sigint_pipe[0], buf, sizeof buf)) > 0) {
    for (ssize_t i = 0; i < n; i++) {
      if (buf[i] == 'i')
        interrupt(k);
      else
        k->shutting_down = true;
    }
  }
}

static bool shell_held(kn_kernel_t *k) {
  for (size_t i = 0; i < k->n_rooms; i++)
    if (k->rooms[i]->holds_shell && k->rooms[i]->holds_shell(k)) return true;
  return false;
}

int kn_kernel_run(kn_kernel_t *k) {
  while (!k->shutting_down) {
    /* First: a tick may end the running execution (a worker that ended,
     * output due), which decides whether shell is polled. */
    int timeout = -1;
    for (size_t r = 0; r < k->n_rooms; r++) {
      int t = k->rooms[r]->tick ? k->rooms[r]->tick(k) : -1;
      if (t >= 0 && (timeout < 0 || t < timeout)) timeout = t;
    }
    zmq_pollitem_t items[5 + KN_MAX_ROOMS * KN_ROOM_FDS];
    int n = 0, i_control, i_stdin, i_sig, i_client = -1, i_shell = -1;
    int room_at[KN_MAX_ROOMS + 1]; /* room r's items: room_at[r] to room_at[r + 1] */
    i_control = n;
    items[n++] = (zmq_pollitem_t){k->sockets[KN_CONTROL], 0, ZMQ_POLLIN, 0};
    i_stdin = n;
    items[n++] = (zmq_pollitem_t){k->sockets[KN_STDIN], 0, ZMQ_POLLIN, 0};
    i_sig = n;
    items[n++] = (zmq_pollitem_t){NULL, k->sigint_pipe[0], ZMQ_POLLIN, 0};
    if (k->client_fd >= 0) {
      i_client = n;
      items[n++] = (zmq_pollitem_t){NULL, k->client_fd, ZMQ_POLLIN, 0};
    }
    for (size_t r = 0; r < k->n_rooms; r++) {
      room_at[r] = n;
      int fds[KN_ROOM_FDS] = {-1, -1, -1, -1};
      if (k->rooms[r]->fds) k->rooms[r]->fds(k, fds);
      for (int j = 0; j < KN_ROOM_FDS; j++)
        if (fds[j] >= 0) items[n++] = (zmq_pollitem_t){NULL, fds[j], ZMQ_POLLIN, 0};
    }
    room_at[k->n_rooms] = n;
    /* While a room holds shell (one execution at a time, the worker
     * starting, a cancelled job still holding the profiling state),
     * further shell requests wait in the socket. */
    if (!shell_held(k)) {
      i_shell = n;
      items[n++] = (zmq_pollitem_t){k->sockets[KN_SHELL], 0, ZMQ_POLLIN, 0};
    }
    int rc = zmq_poll(items, n, timeout);
    if (rc < 0) {
      if (errno == EINTR) continue;
      kn_log(k, KN_LOG_WARN, "poll failed: %s", zmq_strerror(errno));
      return -1;
    }
    if (items[i_sig].revents) on_signal_pipe(k);
    if (i_client >= 0 && items[i_client].revents) {
      kn_log(k, KN_LOG_WARN, "process %d, which started the kernel, has ended: shutting down",
             (int)k->client_pid);
      k->shutting_down = true;
      break;
    }
    if (items[i_control].revents) dispatch(k, KN_CONTROL);
    for (size_t r = 0; r < k->n_rooms; r++)
      for (int j = room_at[r]; j < room_at[r + 1]; j++)
        if (items[j].revents && k->rooms[r]->on_ready) {
          k->rooms[r]->on_ready(k);
          break;
        }
    if (items[i_stdin].revents) on_stdin(k);
    if (i_shell >= 0 && items[i_shell].revents && !shell_held(k)) dispatch(k, KN_SHELL);
  }
  return 0;
}
