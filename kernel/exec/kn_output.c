/* SPDX-License-Identifier: BSD-3-Clause */
/* Batching a cell's output into stream messages (see kn_output.h). */
#define _GNU_SOURCE /* memrchr */
#include "kn_output.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void kn_output_init(kn_output_t *o, size_t limit, kn_output_fn publish, void *ctx) {
  memset(o, 0, sizeof *o);
  o->limit = limit;
  o->publish = publish;
  o->ctx = ctx;
}

/* Length of the longest prefix of s[0..n) that does not end inside a UTF-8
 * sequence (an incomplete sequence at the end waits for more bytes). */
static size_t utf8_complete_prefix(const unsigned char *s, size_t n) {
  size_t i = n, back = 0;
  while (i > 0 && back < 4 && (s[i - 1] & 0xC0) == 0x80) {
    i--;
    back++;
  }
  if (i == 0) return n;
  unsigned char c = s[i - 1];
  size_t need = c >= 0xF0 ? 4 : c >= 0xE0 ? 3 : c >= 0xC0 ? 2 : 1;
  return (need > back + 1 && need <= 4 && c >= 0xC0) ? i - 1 : n;
}

void kn_output_flush(kn_output_t *o, bool all) {
  if (!o->pending.len) return;
  size_t n = all ? o->pending.len
                 : utf8_complete_prefix((unsigned char *)o->pending.data, o->pending.len);
  if (n == 0) return;
  char *text = kn_utf8_clean((unsigned char *)o->pending.data, n);
  if (*text) o->publish(o->ctx, o->kind, text);
  free(text);
  memmove(o->pending.data, o->pending.data + n, o->pending.len - n);
  o->pending.len -= n;
  o->pending.data[o->pending.len] = '\0';
}

char *kn_output_take_partial_line(kn_output_t *o) {
  if (o->kind != 'O' || !o->pending.len || o->pending.data[o->pending.len - 1] == '\n')
    return NULL;
  const char *nl = memrchr(o->pending.data, '\n', o->pending.len);
  size_t start = nl ? (size_t)(nl - o->pending.data) + 1 : 0;
  if (o->pending.len - start > KN_OUTPUT_PROMPT_BYTES) return NULL;
  char *line = kn_utf8_clean((unsigned char *)o->pending.data + start, o->pending.len - start);
  o->pending.len = start;
  o->pending.data[start] = '\0';
  return line;
}

void kn_output_add(kn_output_t *o, char kind, const char *data, size_t len, long long now_ms) {
  if (o->total >= o->limit) {
    o->dropped += len;
    return;
  }
  if (o->total + len > o->limit) {
    o->dropped += o->total + len - o->limit;
    len = o->limit - o->total;
  }
  o->total += len;
  if (o->kind != kind) {
    kn_output_flush(o, true);
    o->kind = kind;
  }
  if (!o->pending.len) o->since_ms = now_ms;
  fl__buf_add(&o->pending, data, len);
  if (o->pending.len >= KN_OUTPUT_BATCH_BYTES) kn_output_flush(o, false);
}

int kn_output_tick(kn_output_t *o, long long now_ms) {
  if (!o->pending.len) return -1;
  long long due = o->since_ms + KN_OUTPUT_BATCH_MS;
  if (now_ms < due) return (int)(due - now_ms);
  kn_output_flush(o, false);
  if (!o->pending.len) return -1;
  /* An incomplete sequence waits for its last bytes, one batch more. */
  o->since_ms = now_ms;
  return KN_OUTPUT_BATCH_MS;
}

void kn_output_end(kn_output_t *o) {
  kn_output_flush(o, true);
  if (!o->dropped) return;
  char note[256];
  snprintf(note, sizeof note,
           "\n[cflame: this cell's output passed the limit of %zu bytes; %zu more bytes were "
           "not shown]\n",
           o->limit, o->dropped);
  o->publish(o->ctx, 'E', note);
}

void kn_output_free(kn_output_t *o) { fl__buf_free(&o->pending); }
