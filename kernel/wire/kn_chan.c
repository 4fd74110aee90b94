/* SPDX-License-Identifier: BSD-3-Clause */
#include "kn_chan.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "kn_text.h"

static int write_all(int fd, const unsigned char *p, size_t n) {
  while (n > 0) {
    ssize_t w = write(fd, p, n);
    if (w < 0) {
      if (errno == EINTR) continue;
      return -1;
    }
    p += w;
    n -= (size_t)w;
  }
  return 0;
}

static void put_header(unsigned char *h, char kind, size_t len) {
  h[0] = (unsigned char)kind;
  h[1] = h[2] = h[3] = 0;
  h[4] = (unsigned char)(len & 0xff);
  h[5] = (unsigned char)((len >> 8) & 0xff);
  h[6] = (unsigned char)((len >> 16) & 0xff);
  h[7] = (unsigned char)((len >> 24) & 0xff);
}

static size_t get_len(const unsigned char *h) {
  return (size_t)h[4] | (size_t)h[5] << 8 | (size_t)h[6] << 16 | (size_t)h[7] << 24;
}

int kn_chan_write(int fd, char kind, const void *data, size_t len) {
  unsigned char small[4096];
  if (len > KN_CHAN_MAX_FRAME) {
    errno = EMSGSIZE;
    return -1;
  }
  if (len <= KN_CHAN_ATOMIC) {
    /* One write(2) of at most PIPE_BUF bytes: frames from several threads
     * never interleave. */
    put_header(small, kind, len);
    if (len) memcpy(small + KN_CHAN_HDR, data, len);
    return write_all(fd, small, KN_CHAN_HDR + len);
  }
  put_header(small, kind, len);
  if (write_all(fd, small, KN_CHAN_HDR) < 0) return -1;
  return write_all(fd, data, len);
}

int kn_chan_write_json(int fd, const json_t *obj) {
  char *text = json_dumps(obj, JSON_COMPACT);
  if (!text) {
    errno = EINVAL;
    return -1;
  }
  int rc = kn_chan_write(fd, 'J', text, strlen(text));
  free(text);
  return rc;
}

ssize_t kn_chan_fill(kn_chan_reader_t *r, int fd) {
  /* Drop what was popped, then make room for at least 64 KiB more. */
  if (r->start > 0) {
    memmove(r->buf, r->buf + r->start, r->len - r->start);
    r->len -= r->start;
    r->start = 0;
  }
  if (r->cap - r->len < 65536) {
    size_t cap = r->cap ? r->cap * 2 : 131072;
    while (cap - r->len < 65536) cap *= 2;
    r->buf = fl__xrealloc(r->buf, cap, 1);
    r->cap = cap;
  }
  ssize_t n;
  do {
    n = read(fd, r->buf + r->len, r->cap - r->len);
  } while (n < 0 && errno == EINTR);
  if (n > 0) r->len += (size_t)n;
  return n;
}

int kn_chan_pop(kn_chan_reader_t *r, char *kind, const unsigned char **data, size_t *len) {
  size_t avail = r->len - r->start;
  if (avail < KN_CHAN_HDR) return 0;
  const unsigned char *h = r->buf + r->start;
  size_t n = get_len(h);
  if (n > KN_CHAN_MAX_FRAME) return -1;
  if (avail < KN_CHAN_HDR + n) return 0;
  *kind = (char)h[0];
  *data = h + KN_CHAN_HDR;
  *len = n;
  r->start += KN_CHAN_HDR + n;
  return 1;
}

void kn_chan_reader_free(kn_chan_reader_t *r) {
  free(r->buf);
  r->buf = NULL;
  r->start = r->len = r->cap = 0;
}

static int read_all(int fd, unsigned char *p, size_t n) {
  size_t got = 0;
  while (got < n) {
    ssize_t k = read(fd, p + got, n - got);
    if (k < 0) {
      if (errno == EINTR) continue;
      return -1;
    }
    if (k == 0) return got == 0 ? 0 : -1;
    got += (size_t)k;
  }
  return 1;
}

int kn_chan_read_blocking(int fd, char *kind, char **data, size_t *len) {
  unsigned char h[KN_CHAN_HDR];
  int rc = read_all(fd, h, sizeof h);
  if (rc <= 0) return rc;
  size_t n = get_len(h);
  if (n > KN_CHAN_MAX_FRAME) return -1;
  char *d = fl__xmalloc(n + 1, 1);
  if (n && read_all(fd, (unsigned char *)d, n) != 1) {
    free(d);
    return -1;
  }
  d[n] = '\0';
  *kind = (char)h[0];
  *data = d;
  *len = n;
  return 1;
}
