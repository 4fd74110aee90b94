/* SPDX-License-Identifier: BSD-3-Clause */
/* kn_output: a cell's stdout and stderr on their way to iopub.
 *
 * The worker's output arrives in pieces of any size, cut anywhere, even
 * inside a UTF-8 sequence. It is batched into stream messages: one stream
 * (stdout or stderr) at a time and in order, published when the other
 * stream starts, when KN_OUTPUT_BATCH_BYTES wait, or KN_OUTPUT_BATCH_MS
 * after the first byte waiting. A message never ends inside a UTF-8
 * sequence; bytes that are not UTF-8 become U+FFFD, and NUL bytes are left
 * out (Jupyter's JSON strings cannot hold them). Past the limit, output is
 * counted but not published, and the end of the cell says how much was
 * left out. */
#ifndef KN_OUTPUT_H
#define KN_OUTPUT_H

#include <stdbool.h>
#include <stddef.h>

#include "kn_text.h"

#define KN_OUTPUT_BATCH_MS 30
#define KN_OUTPUT_BATCH_BYTES (64 * 1024)
#define KN_OUTPUT_DEFAULT_LIMIT (4u << 20)
#define KN_OUTPUT_PROMPT_BYTES 1024

/* Publishes text (valid UTF-8, NUL-free, not empty) on stream kind: 'O'
 * stdout or 'E' stderr. */
typedef void (*kn_output_fn)(void *ctx, char kind, const char *text);

typedef struct kn_output {
  kn_output_fn publish;
  void *ctx;
  char kind; /* the stream of what waits: 'O', 'E' or 0 */
  fl__buf_t pending;
  long long since_ms; /* when the first byte waiting came */
  size_t total, dropped, limit;
} kn_output_t;

void kn_output_init(kn_output_t *o, size_t limit, kn_output_fn publish, void *ctx);
/* Adds len bytes of stream kind, arrived at now_ms. */
void kn_output_add(kn_output_t *o, char kind, const char *data, size_t len, long long now_ms);
/* Publishes what waits: with all, everything; otherwise all but an
 * incomplete UTF-8 sequence at the end. */
void kn_output_flush(kn_output_t *o, bool all);
/* The last line of stdout while it waits unfinished (no '\n' yet, at most
 * KN_OUTPUT_PROMPT_BYTES): taken out of what waits and returned, cleaned as
 * a published text would be, for the caller to show otherwise (a prompt).
 * New; NULL when there is none. */
char *kn_output_take_partial_line(kn_output_t *o);
/* Publishes what is due at now_ms. Returns the ms until the next batch is
 * due, or -1 when nothing waits. */
int kn_output_tick(kn_output_t *o, long long now_ms);
/* Flushes everything, then says on stderr how much passed the limit. */
void kn_output_end(kn_output_t *o);
void kn_output_free(kn_output_t *o);

#endif
