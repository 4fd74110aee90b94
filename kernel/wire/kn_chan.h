/* SPDX-License-Identifier: BSD-3-Clause */
/* kn_chan: framed messages on the pipes between the kernel and its worker.
 *
 * The worker has five descriptors set up by the kernel:
 *   0  /dev/null (stdin: reads by cells go through kw_io instead)
 *   1  raw stdout pipe (write(1, ...), child processes)
 *   2  raw stderr pipe
 *   3  commands, kernel -> worker
 *   4  events, worker -> kernel
 *
 * On 3 and 4 every message is a frame: an 8-byte header {kind, 0, 0, 0,
 * little-endian u32 length} and then length payload bytes. Kinds:
 *   'J'  a JSON object (UTF-8 text)
 *   'O'  bytes the cell wrote to its stdout FILE
 *   'E'  bytes the cell wrote to its stderr FILE
 * Stdio output travels as frames on the event pipe, so that its order with
 * the worker's other events ("done", "input_request") is exact. */
#ifndef KN_CHAN_H
#define KN_CHAN_H

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#define KN_CHAN_CMD_FD 3
#define KN_CHAN_EVT_FD 4
#define KN_CHAN_HDR 8
/* Frames up to this size are written with one write(2), atomic on a pipe. */
#define KN_CHAN_ATOMIC (4096 - KN_CHAN_HDR)
#define KN_CHAN_MAX_FRAME (64u << 20)

/* Writes one frame, retrying on EINTR and short writes. Returns 0 or -1
 * (errno set). Not thread-safe for frames above KN_CHAN_ATOMIC bytes. */
int kn_chan_write(int fd, char kind, const void *data, size_t len);

/* Writes a JSON object as a 'J' frame (compact). Does not steal obj. */
int kn_chan_write_json(int fd, const json_t *obj);

/* Incremental reader for a non-blocking descriptor: feed it what read(2)
 * returns and pop whole frames. */
typedef struct kn_chan_reader {
  unsigned char *buf;
  size_t start; /* first byte not yet popped */
  size_t len;   /* bytes held, from buf[0] */
  size_t cap;
} kn_chan_reader_t;

/* Reads what is available from fd into r. Returns bytes read (> 0), 0 at end
 * of file, or -1 with errno (EAGAIN when nothing is available). */
ssize_t kn_chan_fill(kn_chan_reader_t *r, int fd);

/* Pops the next complete frame: *kind, and *data and *len pointing into the
 * reader's buffer, valid until the next kn_chan_fill. Returns 1 if a frame was
 * popped, 0 if none is complete yet, -1 if the stream is corrupt. */
int kn_chan_pop(kn_chan_reader_t *r, char *kind, const unsigned char **data, size_t *len);

void kn_chan_reader_free(kn_chan_reader_t *r);

/* Blocking read of one whole frame from fd (used by the worker on its
 * command pipe). *data is new (free it), NUL-terminated. Returns 1 on a
 * frame, 0 at end of file, -1 on error. */
int kn_chan_read_blocking(int fd, char *kind, char **data, size_t *len);

#endif
