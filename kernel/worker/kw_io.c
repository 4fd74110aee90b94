/* SPDX-License-Identifier: BSD-3-Clause */
/* Standard streams of the cells (see kw.h).
 *
 * stdout and stderr become cookie FILEs whose writes are 'O'/'E' frames on
 * the event pipe, so the kernel sees printf output and the worker's events
 * in one ordered stream. Writes to descriptors 1 and 2 (write(2), child
 * processes) go to the raw pipes the kernel also reads.
 *
 * stdin becomes a cookie FILE that, when the execute request allowed it,
 * sends an input_request event and blocks for the kernel's input_reply; when
 * it did not, reads see end of file. read(2) on descriptor 0 is interposed
 * (the worker exports `read`, and cells bind to the executable's symbol
 * first) so that the same rule holds for raw reads.
 *
 * The event channel is one pipe that every thread of a cell writes to, and
 * the crash handler too (kw_fault.c), from a signal handler that may have
 * interrupted any of them. The kernel reads it as a stream of frames
 * (kn_chan.h), so the rule is:
 *
 *   Bytes go into the event pipe only from the thread whose id is in
 *   evt_owner, and only whole frames.
 *
 * Threads that send events and output take evt_lock (a mutex: they sleep
 * while another writes) and then evt_owner, which only the crash handler
 * can hold at the same time. An interrupt never unwinds a thread that holds
 * the channel: from before it takes evt_lock until after it gives it back,
 * the interrupt handler (kw_fault.c) defers to kw_io_defer_interrupt, and
 * the signal is raised again when the channel is given back, between
 * frames. Unwound inside a frame of several write(2)s, the thread would
 * leave it half written, which the kernel takes for a corrupt stream; and
 * unwound between the lock and its bookkeeping, it would keep the lock.
 * (Blocking the signals instead would cost two system calls a frame.)
 *
 * The crash handler cannot take a mutex (it is not async-signal-safe, and
 * the thread it interrupted may hold it): it sets evt_closing, so that no
 * writer takes the channel any more, and waits a bounded time for
 * evt_owner to be free (the writer that has it finishes its frame). It
 * never gives the channel back: the process ends.
 * When the thread that faulted is the one that holds evt_owner, it was
 * interrupted inside a frame: a frame of at most KN_CHAN_ATOMIC bytes is
 * one write(2), which a pipe takes whole or not at all, so the stream is
 * still between frames and the report can follow; a longer frame
 * (evt_split) may be half written, and then no report is sent (the kernel
 * still sees which signal ended the worker). */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdio_ext.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "fl__waits.h"
#include "kn_chan.h"
#include "kw.h"

/* How long the crash handler waits for the writer that holds the channel
 * to finish its frame; it waits only while the pipe is full and the kernel
 * drains it. */
#define CRASH_WAIT_MS 2000

/* The event channel (see the top of the file). evt_lock is recursive: a
 * signal handler of a cell's that prints may interrupt its thread inside a
 * write. */
static pthread_mutex_t evt_lock = PTHREAD_RECURSIVE_MUTEX_INITIALIZER_NP;
static pid_t evt_owner;   /* atomic: the thread writing frames, 0 when none */
static pid_t evt_closing; /* atomic: the thread sending a crash report */
static int evt_split;     /* atomic: the frame being written takes several write(2)s */
static int evt_depth;     /* evt_take calls the holder of evt_lock is inside */

/* The calling thread's evt_take calls not yet given back, counted from
 * before the lock is taken to after it is given back; and the interrupt
 * that came meanwhile, to raise again (0: none). Read by the interrupt
 * handler on the main thread. */
static __thread volatile sig_atomic_t tls_in_channel;
static volatile sig_atomic_t deferred_interrupt;

static bool cell_allow_stdin;

/* One line of input handed out by pieces: what the frontend answered, plus
 * the newline a terminal would have delivered. */
static pthread_mutex_t input_lock = PTHREAD_RECURSIVE_MUTEX_INITIALIZER_NP;
static pid_t input_owner; /* atomic: the thread holding input_lock, 0 when none */
static int input_depth;   /* times the holder took it */
static char *input_buf;
static size_t input_len, input_pos;
static bool input_eof;

/* The calling thread's id, kept: evt_take needs it for every frame. A
 * forked child's only thread has a new one (child_after_fork). */
static __thread pid_t tls_tid;

/* Async-signal-safe. */
static pid_t current_tid(void) {
  if (!tls_tid) tls_tid = (pid_t)syscall(SYS_gettid);
  return tls_tid;
}

/* Async-signal-safe. */
static void sleep_1ms(void) {
  struct timespec ts = {0, 1000000};
  nanosleep(&ts, NULL);
}

/* Takes the channel for the calling thread (see the top of the file); a
 * thread that already has it (a signal handler that interrupted its own
 * write) goes on holding it. */
static void evt_take(void) {
  pid_t self = current_tid();
  tls_in_channel++;
  __atomic_signal_fence(__ATOMIC_SEQ_CST);
  pthread_mutex_lock(&evt_lock);
  evt_depth++;
  if (__atomic_load_n(&evt_owner, __ATOMIC_SEQ_CST) == self) return;
  for (;;) {
    pid_t none = 0;
    if (!__atomic_load_n(&evt_closing, __ATOMIC_SEQ_CST) &&
        __atomic_compare_exchange_n(&evt_owner, &none, self, false, __ATOMIC_SEQ_CST,
                                    __ATOMIC_SEQ_CST))
      return;
    /* A crash report has the channel, or is about to: the process is
     * ending. */
    sleep_1ms();
  }
}

/* Gives the channel back; then an interrupt deferred meanwhile is raised
 * again, and unwinds the thread from here, between frames. */
static void evt_give(void) {
  if (--evt_depth == 0) __atomic_store_n(&evt_owner, 0, __ATOMIC_SEQ_CST);
  pthread_mutex_unlock(&evt_lock);
  __atomic_signal_fence(__ATOMIC_SEQ_CST);
  if (--tls_in_channel > 0) return;
  int sig = deferred_interrupt;
  if (!sig) return;
  deferred_interrupt = 0;
  syscall(SYS_tgkill, getpid(), current_tid(), sig);
}

bool kw_io_defer_interrupt(int sig) {
  if (!tls_in_channel) return false;
  deferred_interrupt = sig;
  return true;
}

/* Writes one frame; the caller holds the channel. */
static int evt_write(char kind, const void *data, size_t len) {
  if (len <= KN_CHAN_ATOMIC) return kn_chan_write(KN_CHAN_EVT_FD, kind, data, len);
  __atomic_store_n(&evt_split, 1, __ATOMIC_SEQ_CST);
  int rc = kn_chan_write(KN_CHAN_EVT_FD, kind, data, len);
  __atomic_store_n(&evt_split, 0, __ATOMIC_SEQ_CST);
  return rc;
}

int kw_io_send_crash_report(const char *report, size_t len) {
  if (kw_io_in_forked_child()) return -1; /* its descriptor 4 is not the channel */
  pid_t self = current_tid(), none = 0;
  /* Only the first thread to crash closes the channel; another that
   * crashes meanwhile waits below, and the process ends first. */
  __atomic_compare_exchange_n(&evt_closing, &none, self, false, __ATOMIC_SEQ_CST,
                              __ATOMIC_SEQ_CST);
  for (int waited_ms = 0;; waited_ms++) {
    pid_t owner = 0;
    if (__atomic_compare_exchange_n(&evt_owner, &owner, self, false, __ATOMIC_SEQ_CST,
                                    __ATOMIC_SEQ_CST))
      break;
    if (owner == self) {
      /* This thread faulted while writing: between frames unless it was
       * inside one of several write(2)s. */
      if (__atomic_load_n(&evt_split, __ATOMIC_SEQ_CST)) return -1;
      break;
    }
    if (waited_ms >= CRASH_WAIT_MS) return -1;
    sleep_1ms();
  }
  return kn_chan_write(KN_CHAN_EVT_FD, 'C', report, len);
}

static void new_stdin(void);

/* glibc's lock of a FILE (_IO_lock_t in its libio/libio.h, the same since
 * glibc 2.0; FILE's _lock points to it): the holder, and how many times it
 * took it. */
typedef struct glibc_file_lock {
  int lock;
  int cnt;
  void *owner; /* the holder's pthread_self() */
} glibc_file_lock_t;

/* Gives back f's lock if the calling thread holds it: unwound out of a
 * printf, it would keep it for ever, and every other thread that writes
 * to f would wait for ever. What f buffered stays, to be flushed. */
static void give_back_stream(FILE *f) {
  glibc_file_lock_t *l = f->_lock;
  if (!l || l->owner != (void *)pthread_self()) return;
  for (int n = l->cnt; n > 0; n--) funlockfile(f);
}

void kw_io_after_unwind(void) {
  give_back_stream(stdout);
  give_back_stream(stderr);
  if (__atomic_load_n(&input_owner, __ATOMIC_SEQ_CST) == current_tid()) {
    /* Unwound out of a read of stdin, waiting for the frontend: input_lock
     * is given back, and stdin itself, whose FILE lock the thread may hold
     * too (fgets, scanf), is left behind for a new one. */
    int depth = input_depth;
    input_depth = 0;
    __atomic_store_n(&input_owner, 0, __ATOMIC_SEQ_CST);
    while (depth-- > 0) pthread_mutex_unlock(&input_lock);
    new_stdin();
  }
  /* The event channel was not held (no interrupt unwinds a thread that
   * holds it); an interrupt deferred and then overtaken by this one is
   * spent. */
  deferred_interrupt = 0;
}

int kw_send(const json_t *event) {
  char *text = json_dumps(event, JSON_COMPACT);
  if (!text) return -1;
  evt_take();
  int rc = evt_write('J', text, strlen(text));
  evt_give();
  free(text);
  return rc;
}

int kw_send_new(json_t *event) {
  int rc = event ? kw_send(event) : -1;
  json_decref(event);
  return rc;
}

static ssize_t stream_write(char kind, const char *buf, size_t size) {
  size_t done = 0;
  evt_take();
  while (done < size) {
    size_t n = size - done;
    if (n > KN_CHAN_ATOMIC) n = KN_CHAN_ATOMIC;
    if (evt_write(kind, buf + done, n) < 0) break;
    done += n;
  }
  evt_give();
  return done ? (ssize_t)done : -1;
}

static ssize_t stdout_write(void *cookie, const char *buf, size_t size) {
  return stream_write('O', buf, size);
}

static ssize_t stderr_write(void *cookie, const char *buf, size_t size) {
  return stream_write('E', buf, size);
}

/* Asks the kernel for one line. Returns 0 with the line in input_buf, or -1
 * when there is none (stdin not allowed, the frontend gave none, or the
 * kernel went away). Called with input_lock held. */
static int request_line(void) {
  if (!cell_allow_stdin || input_eof) return -1;
  /* What the cell printed before it reads ("give a: ", line-buffered, so
   * still in stdout's buffer) reaches the kernel before the request, which
   * shows an unfinished line as the prompt. */
  fflush(stdout);
  if (kw_send_new(json_pack("{s:s, s:s, s:b}", "ev", "input_request", "prompt", "", "password",
                            0)) < 0)
    return -1;
  char kind, *data;
  size_t len;
  if (kn_chan_read_blocking(KN_CHAN_CMD_FD, &kind, &data, &len) <= 0) return -1;
  json_t *reply = kind == 'J' ? json_loadb(data, len, 0, NULL) : NULL;
  free(data);
  const char *value = json_string_value(json_object_get(reply, "value"));
  if (!value) {
    /* {"op": "input_eof"}: the frontend cannot answer; later reads of this
     * cell see end of file without asking again. */
    input_eof = true;
    json_decref(reply);
    return -1;
  }
  free(input_buf);
  input_len = strlen(value) + 1;
  input_buf = malloc(input_len + 1);
  if (input_buf) {
    memcpy(input_buf, value, input_len - 1);
    input_buf[input_len - 1] = '\n';
    input_buf[input_len] = '\0';
  }
  input_pos = 0;
  json_decref(reply);
  return input_buf ? 0 : -1;
}

/* input_lock, with its holder known, so that an interrupt that unwinds
 * the holder can give it back (kw_io_after_unwind). */
static void input_take(void) {
  pthread_mutex_lock(&input_lock);
  input_depth++;
  __atomic_store_n(&input_owner, current_tid(), __ATOMIC_SEQ_CST);
}

static void input_give(void) {
  if (--input_depth == 0) __atomic_store_n(&input_owner, 0, __ATOMIC_SEQ_CST);
  pthread_mutex_unlock(&input_lock);
}

/* Copies up to size bytes of pending input into buf; asks for a line when
 * none is pending. Returns bytes copied, 0 at end of file. */
static ssize_t input_read(char *buf, size_t size) {
  input_take();
  ssize_t n = 0;
  if (input_pos >= input_len && request_line() < 0) goto done;
  n = (ssize_t)(input_len - input_pos);
  if ((size_t)n > size) n = (ssize_t)size;
  memcpy(buf, input_buf + input_pos, (size_t)n);
  input_pos += (size_t)n;
done:
  input_give();
  return n;
}

static ssize_t stdin_read(void *cookie, char *buf, size_t size) { return input_read(buf, size); }

/* stdin as a stream that asks the frontend for lines. */
static FILE *open_stdin(void) {
  cookie_io_functions_t in_io = {.read = stdin_read};
  return fopencookie(NULL, "r", in_io);
}

static void new_stdin(void) {
  FILE *in = open_stdin();
  if (in) stdin = in;
}

/* read(2) as the cells see it (the read that fl__waits.c's wrapper calls,
 * kw_io_init): descriptor 0 reads the frontend's input; every other
 * descriptor is the plain system call. */
static ssize_t cell_read(int fd, void *buf, size_t count) {
  if (fd == 0) return input_read(buf, count);
  return syscall(SYS_read, fd, buf, count);
}

/* In a child a cell forked: the kernel's channels are the worker's alone.
 * The child gets neither (it must never read the worker's commands or
 * hold the event pipe open past the worker's death), and its stdout and
 * stderr write to descriptors 1 and 2, whose raw pipes the kernel reads. */
static void child_after_fork(void) {
  tls_tid = 0;
  close(KN_CHAN_CMD_FD);
  close(KN_CHAN_EVT_FD);
  FILE *out = fdopen(1, "w"), *err = fdopen(2, "w");
  if (out) {
    setvbuf(out, NULL, _IOLBF, BUFSIZ);
    stdout = out;
  }
  if (err) {
    setvbuf(err, NULL, _IONBF, 0);
    stderr = err;
  }
}

static pid_t worker_pid;

bool kw_io_in_forked_child(void) { return getpid() != worker_pid; }

int kw_io_init(void) {
  worker_pid = getpid();
  fl__waits_set_read(cell_read);
  if (pthread_atfork(NULL, NULL, child_after_fork) != 0) return -1;
  cookie_io_functions_t out_io = {.write = stdout_write};
  cookie_io_functions_t err_io = {.write = stderr_write};
  FILE *out = fopencookie(NULL, "w", out_io);
  FILE *err = fopencookie(NULL, "w", err_io);
  FILE *in = open_stdin();
  if (!out || !err || !in) return -1;
  /* Line-buffered stdout, as on a terminal; unbuffered stderr. */
  setvbuf(out, NULL, _IOLBF, BUFSIZ);
  setvbuf(err, NULL, _IONBF, 0);
  stdout = out;
  stderr = err;
  stdin = in;
  return 0;
}

void kw_io_begin_cell(bool allow_stdin) {
  input_take();
  cell_allow_stdin = allow_stdin;
  input_eof = false;
  input_len = input_pos = 0;
  input_give();
  /* Input a previous cell left unread is not this cell's. */
  __fpurge(stdin);
  clearerr(stdin);
}

void kw_io_end_cell(void) {
  fflush(stdout);
  fflush(stderr);
}
