/* SPDX-License-Identifier: BSD-3-Clause */
/* libFuzzer target for kn_wire_decode.
 *
 * Input format: a sequence of frames, each a 2-byte little-endian length
 * followed by that many bytes; a length running past the end of the input
 * takes what is left, and a trailing single byte is ignored. At most
 * FUZZ_MAX_FRAMES frames are taken. Each frame is copied to its own heap
 * block of exactly its size, so AddressSanitizer catches any read past a
 * frame's end. tests/fuzz/make_wire_seeds.py writes seeds in this format.
 *
 * Every input is decoded three ways: with the fixed key FUZZ_KEY, with the
 * empty key, and with FUZZ_KEY after the signature frame has been replaced by
 * the correct one (so that mutated JSON gets past the signature check and
 * reaches the parser under a key too). Whenever decoding succeeds, the
 * message is re-encoded and decoded again; the two messages must be equal,
 * and encoding the second must give the same bytes as encoding the first.
 * A decode that fails may hand back only the idents and header of a
 * well-signed message. Every frame also goes through kn_wire_textn, which
 * must give a JSON string whatever the bytes. Any mismatch aborts. */
#include "kn_wire.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define FUZZ_KEY "cflame-fuzz-key"
#define FUZZ_MAX_FRAMES 64

static const kn_key_t fuzz_key = {(const unsigned char *)FUZZ_KEY, sizeof FUZZ_KEY - 1};
static const kn_key_t empty_key = {NULL, 0};

static void fuzz_fail(const char *what, const char *err) {
  fprintf(stderr, "fuzz_wire: %s%s%s\n", what, err ? ": " : "", err ? err : "");
  abort();
}

static int blob_equal(const kn_blob_t *a, const kn_blob_t *b) {
  return a->size == b->size && (a->size == 0 || memcmp(a->data, b->data, a->size) == 0);
}

static void check_same_message(const kn_msg_t *a, const kn_msg_t *b) {
  if (a->n_idents != b->n_idents) fuzz_fail("ident count changed in round trip", NULL);
  for (size_t i = 0; i < a->n_idents; i++)
    if (!blob_equal(&a->idents[i], &b->idents[i])) fuzz_fail("ident changed", NULL);
  if (a->n_buffers != b->n_buffers) fuzz_fail("buffer count changed in round trip", NULL);
  for (size_t i = 0; i < a->n_buffers; i++)
    if (!blob_equal(&a->buffers[i], &b->buffers[i])) fuzz_fail("buffer changed", NULL);
  if (!json_equal(a->header, b->header)) fuzz_fail("header changed", NULL);
  if (!json_equal(a->parent_header, b->parent_header)) fuzz_fail("parent_header changed", NULL);
  if (!json_equal(a->metadata, b->metadata)) fuzz_fail("metadata changed", NULL);
  if (!json_equal(a->content, b->content)) fuzz_fail("content changed", NULL);
}

/* decode → encode → decode → encode, checking each step. */
static void decode_and_round_trip(const kn_blob_t *frames, size_t n, const kn_key_t *key) {
  kn_msg_t *msg = NULL, *again = NULL;
  kn_blob_t *enc = NULL, *enc2 = NULL;
  size_t n_enc = 0, n_enc2 = 0;
  char err[256];

  if (kn_wire_decode(frames, n, key, &msg, err, sizeof err) < 0) {
    if (memchr(err, '\0', sizeof err) == NULL) fuzz_fail("error not NUL-terminated", NULL);
    /* A well-signed message that could not be read: idents and at most
     * its header, to answer it with. */
    if (msg && (msg->parent_header || msg->metadata || msg->content || msg->n_buffers ||
                (msg->header && !json_is_object(msg->header))))
      fuzz_fail("a partial message holds more than its header", err);
    (void)kn_msg_type(msg);
    kn_msg_destroy(&msg);
    return;
  }
  (void)kn_msg_type(msg);
  if (kn_wire_encode(msg, key, &enc, &n_enc, err, sizeof err) < 0)
    fuzz_fail("encode of a decoded message failed", err);
  if (kn_wire_decode(enc, n_enc, key, &again, err, sizeof err) < 0)
    fuzz_fail("decode of an encoded message failed", err);
  check_same_message(msg, again);
  if (kn_wire_encode(again, key, &enc2, &n_enc2, err, sizeof err) < 0)
    fuzz_fail("second encode failed", err);
  if (n_enc != n_enc2) fuzz_fail("frame count differs between encodings", NULL);
  for (size_t i = 0; i < n_enc; i++)
    if (!blob_equal(&enc[i], &enc2[i])) fuzz_fail("encodings differ", NULL);

  kn_frames_free(enc, n_enc);
  kn_frames_free(enc2, n_enc2);
  kn_msg_destroy(&again);
  kn_msg_destroy(&msg);
}

/* Every frame as wire text: always a JSON string, which serializes. */
static void check_text(const kn_blob_t *frame) {
  json_t *text = kn_wire_textn((const char *)frame->data, frame->size);
  char *dumped = json_dumps(text, JSON_ENCODE_ANY);
  if (!json_is_string(text) || !dumped) fuzz_fail("kn_wire_textn gave no JSON string", NULL);
  free(dumped);
  json_decref(text);
}

/* Replaces the frame after the first delimiter with the right signature of
 * the four frames after it, when there are enough frames. */
static void fix_signature(kn_blob_t *frames, size_t n) {
  size_t d = 0;
  char hex[65];

  while (d < n && !(frames[d].size == 9 && memcmp(frames[d].data, KN_WIRE_DELIM, 9) == 0)) d++;
  if (d + 6 > n) return; /* no delimiter, or fewer than 5 frames after it */
  if (kn_wire_sign(&fuzz_key, &frames[d + 2], hex) < 0) fuzz_fail("kn_wire_sign failed", NULL);
  free(frames[d + 1].data);
  frames[d + 1].size = 64;
  frames[d + 1].data = malloc(64);
  if (!frames[d + 1].data) abort();
  memcpy(frames[d + 1].data, hex, 64);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  kn_blob_t frames[FUZZ_MAX_FRAMES];
  size_t n = 0, at = 0;

  while (n < FUZZ_MAX_FRAMES && size - at >= 2) {
    size_t len = (size_t)data[at] | (size_t)data[at + 1] << 8;
    at += 2;
    if (len > size - at) len = size - at;
    /* malloc(0) may return NULL; a 1-byte block keeps data non-NULL while
     * size 0 still forbids reading it. */
    frames[n].data = malloc(len ? len : 1);
    if (!frames[n].data) abort();
    if (len) memcpy(frames[n].data, data + at, len);
    frames[n].size = len;
    at += len;
    n++;
  }

  for (size_t i = 0; i < n; i++) check_text(&frames[i]);
  decode_and_round_trip(frames, n, &fuzz_key);
  decode_and_round_trip(frames, n, &empty_key);
  fix_signature(frames, n);
  decode_and_round_trip(frames, n, &fuzz_key);

  for (size_t i = 0; i < n; i++) free(frames[i].data);
  return 0;
}
