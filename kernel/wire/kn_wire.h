/* SPDX-License-Identifier: BSD-3-Clause */
/* kn_wire: Jupyter wire messages (messaging protocol 5.3) as frames.
 *
 * A message on a ROUTER/DEALER/PUB socket is the frame list
 *
 *   ident... | "<IDS|MSG>" | signature | header | parent_header | metadata |
 *   content | buffer...
 *
 * where signature is the lowercase hex HMAC-SHA256 of the four JSON frames
 * (header, parent_header, metadata, content) in that order, keyed with the
 * connection file's key. An empty key means messages are not signed and the
 * signature frame is empty.
 *
 * This module is pure: no ZeroMQ, no I/O. It turns frames into a kn_msg_t and
 * back, and it is what the fuzzer drives. */
#ifndef KN_WIRE_H
#define KN_WIRE_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

typedef struct kn_blob {
  unsigned char *data; /* owned unless stated otherwise */
  size_t size;
} kn_blob_t;

typedef struct kn_msg {
  kn_blob_t *idents; /* routing identities before the delimiter; owned */
  size_t n_idents;
  json_t *header;        /* owned references */
  json_t *parent_header;
  json_t *metadata;
  json_t *content;
  kn_blob_t *buffers; /* extra binary frames after content; owned */
  size_t n_buffers;
  char signature[65]; /* as received (hex HMAC), "" when unsigned */
} kn_msg_t;

/* The signing key. key may hold any bytes; len 0 disables signing. */
typedef struct kn_key {
  const unsigned char *data; /* borrowed */
  size_t len;
} kn_key_t;

#define KN_WIRE_DELIM "<IDS|MSG>"

/* Writes the hex HMAC-SHA256 of the four parts into hex (65 bytes with NUL).
 * With an empty key writes "". Returns 0, or -1 if OpenSSL fails. */
int kn_wire_sign(const kn_key_t *key, const kn_blob_t parts[4], char hex[65]);

/* Decodes a frame list. Checks the delimiter, then the signature over the raw
 * JSON frames with a constant-time compare (before parsing any JSON), then
 * parses the four JSON frames, each of which must be an object. On success
 * returns 0 and *out is a new message (kn_msg_destroy it). On failure
 * returns -1 and err says why ("bad signature", "no <IDS|MSG> delimiter",
 * "content is not a JSON object: it is an array", ...), and:
 *   - when the frames are not a message of the key's holder (no delimiter,
 *     too few frames, a bad signature), *out is NULL: drop them;
 *   - when the message is well signed but a JSON frame is unreadable, *out
 *     is a new partial message, so that the sender can be answered: its
 *     idents and signature, its header when that parsed (else NULL), and
 *     NULL for the other parts.
 * Frames are borrowed. */
int kn_wire_decode(const kn_blob_t *frames, size_t n_frames, const kn_key_t *key,
                   kn_msg_t **out, char *err, size_t err_size);

/* The most frames a message may have in all: identities, delimiter,
 * signature, the four JSON frames and buffers. The kernel keeps no more
 * than these of a message it receives; a well-signed message with more is
 * answered with an error (see kn_receive). Requests carry no buffers that
 * cflame reads; the bound only keeps a sender from making the kernel hold
 * an unbounded list. */
#define KN_WIRE_MAX_FRAMES 1024

/* Text for a JSON string on the wire, as a new JSON string. Every text
 * that may come from a user, the compiler, the worker, libclang or a manual
 * page passes here on its way into a message, since jansson refuses a
 * string that is not UTF-8 (json_string returns NULL, and json_pack fails
 * whole, leaving the message empty). Bytes that are not UTF-8 become
 * U+FFFD and NUL bytes are left out (kn_utf8_clean, the one cleaner, which
 * output streams use too). s NULL is "". Never returns NULL.
 *   kn_wire_text:  a NUL-terminated string;
 *   kn_wire_textn: s[0..n), which may hold NUL bytes;
 *   kn_wire_textf: formatted as printf does. */
json_t *kn_wire_text(const char *s);
json_t *kn_wire_textn(const char *s, size_t n);
json_t *kn_wire_textf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* Encodes msg as frames, signing with key. JSON frames are compact
 * (JSON_COMPACT), and the signature is computed over exactly the bytes
 * returned. *frames is new (kn_frames_free it). Returns 0 or -1 with err. */
int kn_wire_encode(const kn_msg_t *msg, const kn_key_t *key, kn_blob_t **frames,
                   size_t *n_frames, char *err, size_t err_size);

void kn_frames_free(kn_blob_t *frames, size_t n_frames);

/* The signatures of the last KN_REPLAY_HISTORY messages received, so that a
 * message sent again (captured and replayed) is recognised, as
 * jupyter_client's Session does with its digest history. */
#define KN_REPLAY_HISTORY 16384
typedef struct kn_replay kn_replay_t;
kn_replay_t *kn_replay_new(void);
void kn_replay_destroy(kn_replay_t **r);
/* Whether signature (hex, as received) was seen among the last
 * KN_REPLAY_HISTORY; if not, remembers it, forgetting the oldest. An empty
 * signature (unsigned sessions) is never a repeat. */
bool kn_replay_seen(kn_replay_t *r, const char *signature);

/* Creates a message of type msg_type in session session_id, with a fresh
 * msg_id (uuid4), date (ISO 8601, UTC, microseconds), username "cflame" and
 * version "5.3". If parent is non-NULL its header becomes parent_header and
 * its identities are copied (so a reply routes back to the requester).
 * content is stolen (NULL means {}). Returns a new message. */
kn_msg_t *kn_msg_new(const char *msg_type, const kn_msg_t *parent, const char *session_id,
                     json_t *content);

/* Borrowed: header.msg_type, or "" when missing. */
const char *kn_msg_type(const kn_msg_t *msg);

void kn_msg_destroy(kn_msg_t **msg);

#endif
